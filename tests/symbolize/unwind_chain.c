// SPDX-License-Identifier: GPL-2.0-only
/* The chain of unwind_chain.h. Calls are followed by work, so none is a tail call. */
#include "unwind_chain.h"

#include <execinfo.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

/*
 * The stack as BPF copies it: raw words, redzones and all, so neither ASan's memcpy check nor
 * the compiler (which would make this loop a memcpy call) may see it.
 */
__attribute__((no_sanitize_address, noinline)) static void copy_words(uint64_t *dst, uintptr_t src,
								      size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = ((const volatile uint64_t *)src)[i];
}

/* x86-64 DWARF register order (bpf/sample.h) from the kernel's ucontext order. */
static void regs_from(__u64 *regs, const greg_t *g)
{
	static const int order[HC_UREGS] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
					    REG_RBP, REG_RSP, REG_R8,  REG_R9,	REG_R10, REG_R11,
					    REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};

	for (int i = 0; i < HC_UREGS; i++)
		regs[i] = (__u64)g[order[i]];
}

__attribute__((noinline)) int hc_chain_c(struct hc_chain_snap *s)
{
	ucontext_t uc;
	uintptr_t sp;
	size_t len;

	/* Registers as at getcontext()'s return into this function: pc here, sp the caller's. */
	getcontext(&uc);
	sp = (uintptr_t)uc.uc_mcontext.gregs[REG_RSP];
	len = (s->stack_top - sp) & ~(size_t)7;
	s->copy = malloc(sizeof(*s->copy) + len);
	if (!s->copy)
		return -1;
	memset(s->copy, 0, sizeof(*s->copy));
	regs_from(s->copy->regs, uc.uc_mcontext.gregs);
	s->copy->len = (uint32_t)len;
	copy_words((uint64_t *)(s->copy + 1), sp, len / 8);
	s->nbt = backtrace(s->bt, HC_CHAIN_BT_MAX);
	__asm__ volatile("" ::: "memory");
	return 0;
}

__attribute__((noinline)) int hc_chain_b(struct hc_chain_snap *s)
{
	volatile char pad[40]; /* a frame of its own size */

	pad[0] = 1;
	return hc_chain_c(s) + pad[0] - 1;
}

__attribute__((noinline)) int hc_chain_a(struct hc_chain_snap *s)
{
	int r = hc_chain_b(s);

	__asm__ volatile("" ::: "memory");
	return r;
}
