/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF <-> user ABI of compiled unwind tables (docs/unwinding.md, "Unwind tables"):
 * one object's call frame information as rows sorted by pc, each row the rule that holds
 * from its pc up to the next row's. Fixed-width fields, no pointers. Built by
 * symbolize/uwtable.c; read by the lookup below, which is plain C (no libc, a bounded loop)
 * so that the BPF side and the host tests run the same code.
 *
 * x86-64 only: DWARF registers 6 (rbp), 7 (rsp), 16 (the return address). The return
 * address is always at CFA-8 (the ABI); a rule that says otherwise is UNSUPP.
 */
#ifndef HOTCOLD_BPF_UNWIND_H
#define HOTCOLD_BPF_UNWIND_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

struct hc_urow {
	__u32 pc;  /* first ELF virtual address the rule holds for (objects past 4 GiB refused) */
	__u8 kind; /* enum hc_urow_kind */
	__u8 bp;   /* where the caller's rbp is: 0 same value, n in 1..15 at CFA-8n,
		    * HC_URBP_UNKNOWN: not representable (rbp unknown from here on) */
	__s16 off; /* SP/BP/DEREF_*: CFA offset / 8; PLT: the threshold literal;
		    * UNSUPP: enum hc_urow_unsupp; others 0 */
};

enum hc_urow_kind {
	HC_UR_SP = 0,	/* CFA = rsp + 8*off */
	HC_UR_BP,	/* CFA = rbp + 8*off */
	HC_UR_PLT,	/* CFA = rsp + 8 + ((pc & 15) >= off ? 8 : 0) */
	HC_UR_DEREF_SP, /* CFA = *(rsp + 8*off)   (gcc stack realignment) */
	HC_UR_DEREF_BP, /* CFA = *(rbp + 8*off) */
	HC_UR_SIGNAL,	/* a signal trampoline: the interrupted registers are in the rt_sigframe */
	HC_UR_STOP,	/* return address undefined: the outermost frame (complete) */
	HC_UR_GAP,	/* no FDE covers [pc, next row): padding, or code without CFI */
	HC_UR_UNSUPP,	/* CFI exists but no rule above expresses it (counted, stack ends) */
	HC_UR_KIND_MAX,
};

#define HC_URBP_MAX 15 /* the saved rbp is at most at CFA-8*15 */
#define HC_URBP_UNKNOWN 0xff

/* Why a row is UNSUPP (its `off`). Counted per reason by the compiler. */
enum hc_urow_unsupp {
	HC_URU_CFA_REG = 0, /* CFA on a register other than rsp/rbp */
	HC_URU_CFA_OFF,	    /* CFA offset not a multiple of 8, or beyond +-8*32767 */
	HC_URU_CFA_EXPR,    /* a CFA expression other than the PLT or deref shapes */
	HC_URU_RA,	    /* return address not at CFA-8 (a register, an expression, val_*) */
	HC_URU_MAX,
};

/* An object has at most 2^HC_UROWS_LOG2 rows, so a bisection needs that many steps. */
#define HC_UROWS_LOG2 24
#define HC_UROWS_MAX (1u << HC_UROWS_LOG2)

/*
 * How a walk ended (stage 3 carries it in each record and counts it). Part of the ABI now so
 * that both sides agree on the numbering from the start.
 */
enum hc_uw_end {
	HC_UW_COMPLETE = 0, /* reached a STOP row, or a GAP with rbp 0 */
	HC_UW_DEPTH,	    /* HC_MAX_STACK_DEPTH frames */
	HC_UW_NO_PROCESS,   /* no published process slot */
	HC_UW_NO_MAPPING,   /* pc in no published mapping */
	HC_UW_NO_TABLE,	    /* frame-pointer fallback failed */
	HC_UW_UNSUPPORTED,  /* an UNSUPP row, or rbp needed but unknown */
	HC_UW_READ_ERROR,   /* a user memory read failed */
	HC_UW_BAD_FRAME,    /* the CFA did not grow up the stack */
	HC_UW_BAD_PC,	    /* pc below 0x1000 or in the kernel */
	HC_UW_END_MAX,
	HC_UW_NONE = 0xff, /* no table walk: the stack is bpf_get_stack's frame pointers */
};

/*
 * A process as the BPF walk sees it: its executable objects' address ranges and where their
 * rows are, published by user space (symbolize/uwpub.c) into the mmap'd `uw_procs` array map.
 * A slot is found by probing HC_UW_PROBES slots from hc_uw_slot_hash(tgid); the tgid and the
 * group leader's start time (pstart_ns, as the sample records carry it) must both match.
 *
 * seq is a sequence lock: odd while user space rewrites the slot, even when stable. The walk
 * reads it before and after; a slot that was odd or changed meanwhile is not trusted (counted,
 * frame pointers instead).
 *
 * A process with no slot that was forked and has not exec'd since is walked with its
 * parent's slot (the same mappings, until it maps more): a server's new workers are walked
 * from their first sample.
 */
#define HC_UW_MAPS 127
#define HC_UW_PROBES 8

struct hc_uw_map {
	__u64 start, end; /* [start, end): the object's loadable span in the process */
	__u64 bias;	  /* process address - ELF virtual address */
	__u32 rows_at;	  /* its first row in `uw_rows` */
	__u32 n_rows;	  /* 0: no table (frame pointers) */
};

struct hc_uw_proc {
	__u32 seq;
	__u32 tgid; /* 0: a free slot */
	__u64 pstart_ns;
	/* CLOCK_MONOTONIC (bpf_ktime_get_ns) when written: a process that exec'd after it is
	 * not walked with it (its maps are the old image's) */
	__u64 published_ns;
	__u32 n_maps; /* maps[0..n_maps): sorted by start, not overlapping */
	__u32 flags;  /* HC_UW_PROC_* */
	struct hc_uw_map maps[HC_UW_MAPS];
};

/* pstart_ns is only known to the clock tick (USER_HZ, /proc/PID/stat's starttime: a process
 * published before any record of it): it matches start times in that tick. */
#define HC_UW_PROC_TICKS 1u
#define HC_UW_TICK_NS 10000000ull

/* The first slot probed for tgid among n_slots (a power of two). */
static inline __u32 hc_uw_slot_hash(__u32 tgid, __u32 n_slots)
{
	return (tgid * 2654435761u) & (n_slots - 1);
}

/*
 * The index of the row that holds for pc: the last row with row.pc <= pc, or -1 when pc lies
 * before the first row (or n is 0). rows[0..n) sorted by strictly increasing pc; n at most
 * HC_UROWS_MAX (larger n is treated as HC_UROWS_MAX). The loop runs HC_UROWS_LOG2 + 1 times
 * at most, whatever the input.
 */
static inline long hc_urow__find(const struct hc_urow *rows, __u32 n, __u32 pc)
{
	__u32 lo = 0, hi, i;

	if (n > HC_UROWS_MAX)
		n = HC_UROWS_MAX;
	hi = n; /* answer in [lo - 1, hi): rows[lo - 1].pc <= pc < rows[hi].pc */
	for (i = 0; i <= HC_UROWS_LOG2 && lo < hi; i++) {
		__u32 mid = lo + (hi - lo) / 2;

		if (rows[mid].pc <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

#endif
