/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Golden fixtures for the unwind-table compiler (test_uwtable.c): one function per CFI shape,
 * linked alone (-nostdlib -shared) so that these are the object's only FDEs. The byte offsets
 * in the comments are the ones the test's expected rows name; each function starts 16-aligned.
 */
	.text
#ifdef HC_UWFIX_DEBUG_FRAME
	/* the same rules in .debug_frame alone (absolute addresses, no .eh_frame) */
	.cfi_sections .debug_frame
#endif

#define FUNC(name) .p2align 4; .globl name; .type name, @function; name:
#define END(name) .size name, .-name

/* push/pop: the CFA follows rsp; rbp saved at CFA-24 while pushed. */
FUNC(uw_pushpop)
	.cfi_startproc
	push %rbx			/* 0 */
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -16
	push %rbp			/* 1 */
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -24
	nop				/* 2 */
	nop				/* 3 */
	pop %rbp			/* 4 */
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	pop %rbx			/* 5 */
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret				/* 6 */
	.cfi_endproc
END(uw_pushpop)

/* An rbp frame with an early return: remember/restore_state, .cfi_restore. */
FUNC(uw_remember)
	.cfi_startproc
	push %rbp			/* 0 */
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	mov %rsp, %rbp			/* 1, 3 bytes */
	.cfi_def_cfa_register %rbp
	test %edi, %edi			/* 4, 2 bytes */
	je 1f				/* 6, 2 bytes */
	.cfi_remember_state
	pop %rbp			/* 8 */
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	ret				/* 9 */
	.cfi_restore_state
1:	nop				/* 10 */
	pop %rbp			/* 11 */
	.cfi_def_cfa %rsp, 8
	ret				/* 12 */
	.cfi_endproc
END(uw_remember)

/* ld's .plt CFA expression: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0). */
FUNC(uw_plt)
	.cfi_startproc
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22
	.fill 32, 1, 0x90		/* 0..31 */
	.cfi_endproc
END(uw_plt)

/* A signal trampoline ('S' in the CIE's augmentation). */
FUNC(uw_signal)
	.cfi_startproc
	.cfi_signal_frame
	nop				/* 0 */
	mov $15, %eax			/* 1 */
	syscall
	.cfi_endproc
END(uw_signal)

/* The outermost frame: the return address undefined. */
FUNC(uw_undef)
	.cfi_startproc
	.cfi_undefined %rip
	xor %ebp, %ebp			/* 0 */
	hlt
	.cfi_endproc
END(uw_undef)

/* A CFA on rdi, then the return address in a register: UNSUPP by reason. */
FUNC(uw_regcfa)
	.cfi_startproc
	nop				/* 0 */
	.cfi_def_cfa %rdi, 8
	nop				/* 1 */
	.cfi_def_cfa %rsp, 8
	.cfi_register %rip, %rsi
	nop				/* 2 */
	.cfi_restore %rip
	ret				/* 3 */
	.cfi_endproc
END(uw_regcfa)

/* A frame of 64 KiB + 8: the offset / 8 still fits the row; an odd one does not. */
FUNC(uw_bigsub)
	.cfi_startproc
	sub $0x10008, %rsp		/* 0, 7 bytes */
	.cfi_adjust_cfa_offset 0x10008
	add $0x10008, %rsp		/* 7, 7 bytes */
	.cfi_adjust_cfa_offset -0x10008
	sub $4, %rsp			/* 14, 4 bytes */
	.cfi_adjust_cfa_offset 4
	add $4, %rsp			/* 18, 4 bytes */
	.cfi_adjust_cfa_offset -4
	ret				/* 22 */
	.cfi_endproc
END(uw_bigsub)

/* gcc's stack realignment: CFA on r10, then *(rbp - 8); rbp itself an expression. */
FUNC(uw_deref)
	.cfi_startproc
	lea 8(%rsp), %r10		/* 0, 5 bytes */
	.cfi_def_cfa %r10, 0
	and $-16, %rsp			/* 5, 4 bytes */
	push -8(%r10)			/* 9, 4 bytes */
	push %rbp			/* 13 */
	mov %rsp, %rbp			/* 14, 3 bytes */
	.cfi_escape 0x10, 0x06, 0x02, 0x76, 0x00
	push %r10			/* 17, 2 bytes */
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06
	nop				/* 19 */
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	ret				/* 20 */
	.cfi_endproc
END(uw_deref)

/* Code without CFI, longer than the 15 bytes of padding folded into an FDE: a GAP. */
FUNC(uw_nocfi)
	.fill 32, 1, 0x90
END(uw_nocfi)

/* After a GAP: a leaf, then the final GAP. */
FUNC(uw_leaf)
	.cfi_startproc
	ret				/* 0 */
	.cfi_endproc
END(uw_leaf)

	.section .note.GNU-stack, "", @progbits
