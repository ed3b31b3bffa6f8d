/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A known call chain for the unwinder's test: hc_chain_a -> hc_chain_b -> hc_chain_c, built
 * -O2 -fomit-frame-pointer into a shared object, so only call frame information can walk it.
 * hc_chain_c takes what BPF takes at a sample: the registers (as the moment getcontext()
 * returned into it) and a copy of the stack from the stack pointer up to stack_top, and,
 * for reference, the return addresses libgcc's unwinder finds there (backtrace()).
 */
#ifndef HOTCOLD_TESTS_UNWIND_CHAIN_H
#define HOTCOLD_TESTS_UNWIND_CHAIN_H

#include <stdint.h>

#include "bpf/sample.h"

#define HC_CHAIN_BT_MAX 128

struct hc_chain_snap {
	uintptr_t stack_top;	   /* in: the copy ends here (the thread's stack end) */
	struct hc_ucopy *copy;	   /* out: malloc'd, regs + exactly copy->len bytes */
	void *bt[HC_CHAIN_BT_MAX]; /* out: backtrace() at the same point */
	int nbt;
};

/* 0, or -1 when the copy could not be allocated. */
int hc_chain_a(struct hc_chain_snap *s);
int hc_chain_b(struct hc_chain_snap *s);
int hc_chain_c(struct hc_chain_snap *s);

#endif
