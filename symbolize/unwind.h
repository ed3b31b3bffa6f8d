/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * symbolize/unwind: user stacks from call frame information (--unwind dwarf).
 *
 * BPF copies the user registers and a slice of the user stack (struct hc_ucopy); here they
 * are unwound with each mapped object's .eh_frame (or .debug_frame) through libdw's frame
 * API, as perf --call-graph dwarf does, falling back per frame to the frame pointer where an
 * object has no CFI. One libdwfl session per process, built from the symbolizer's maps
 * snapshot and rebuilt when that changes; the ELF handles are the symbolizer's.
 *
 * The stack bytes are a copy of another process's memory: they live only for the call and
 * are never stored or printed. A library: never prints; 0 or -errno.
 */
#ifndef HOTCOLD_SYMBOLIZE_UNWIND_H
#define HOTCOLD_SYMBOLIZE_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/sample.h"
#include "symbolize/symbolizer.h"

/* Why an unwind stopped short of the outermost frame. */
enum hc_unwind_end {
	HC_UNWIND_COMPLETE = 0, /* reached the outermost frame (_start, a thread's start) */
	HC_UNWIND_STACK_END,	/* the next frame lies beyond the bytes copied */
	HC_UNWIND_NO_MODULE,	/* a pc in no object known to carry CFI (JIT, anonymous) */
	HC_UNWIND_NO_CFI,	/* no CFI for a pc, and no frame pointer chain either */
	HC_UNWIND_DEPTH,	/* HC_MAX_STACK_DEPTH frames */
	HC_UNWIND_END_MAX,
};

struct hc_unwind_stats {
	uint64_t stacks;		  /* copies unwound */
	uint64_t frames;		  /* frames they gave */
	uint64_t ends[HC_UNWIND_END_MAX]; /* how each ended */
	uint64_t no_process;		  /* process or its maps unknown: frame pointers used */
	uint64_t sessions;		  /* per-process sessions built (and rebuilt) */
	uint64_t ns;			  /* time spent unwinding, sessions included */
	uint64_t stash_missing;		  /* off-CPU flushes whose copy never arrived */
};

struct hc_unwinder;

/* sym is borrowed and must outlive the unwinder. NULL + errno. */
struct hc_unwinder *hc_unwinder__new(struct hc_symbolizer *sym);
void hc_unwinder__free(struct hc_unwinder *u);

/*
 * Unwind the copy c (its len bytes follow it) of process p (hc_symbolizer__process()'s
 * handle): pcs[0] the interrupted pc, then return addresses, at most max (<=
 * HC_MAX_STACK_DEPTH). *end says how it ended. -ESRCH when p is NULL or its maps are not
 * known (the caller keeps the frame-pointer stack), -ENOMEM.
 */
int hc_unwinder__unwind(struct hc_unwinder *u, struct hc_sym_proc *p, const struct hc_ucopy *c,
			uint64_t *pcs, size_t max, size_t *n, enum hc_unwind_end *end);

/*
 * Off-CPU: a switch-out's copy arrives (hc_ustack_event) before the flushes that name it by
 * (tid, seq). Keep its unwound stack until then; a thread keeps its latest few.
 */
int hc_unwinder__stash(struct hc_unwinder *u, uint32_t tgid, uint32_t tid, uint32_t seq,
		       const uint64_t *pcs, size_t n, enum hc_unwind_end end);
/* The stash of (tid, seq): 0 with pointers valid until the next stash or prune, -ENOENT
 * (counted in stash_missing). */
int hc_unwinder__stashed(struct hc_unwinder *u, uint32_t tid, uint32_t seq, const uint64_t **pcs,
			 size_t *n, enum hc_unwind_end *end);

/* Drop the sessions and stashes of processes the symbolizer no longer keeps (serve, after
 * hc_symbolizer__prune_gone()). */
void hc_unwinder__prune(struct hc_unwinder *u);

void hc_unwinder__stats(const struct hc_unwinder *u, struct hc_unwind_stats *out);
/* The name an end is reported under ("stack_end"...). */
const char *hc_unwind_end_name(enum hc_unwind_end end);

#endif
