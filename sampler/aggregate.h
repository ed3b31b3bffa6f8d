/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Raw sampler events -> interned stacks -> a hotcold profile.
 *
 * On the drain path (hc_agg__sample) user addresses are normalized at once to
 * {object, file offset} while the process lives (its mappings are snapshotted on its first
 * sample or exec), and the whole stack plus identity is interned in a stack table: repeated
 * stacks cost one hash lookup. Names are resolved only once per distinct frame, at
 * hc_agg__build_tree().
 */
#ifndef HOTCOLD_AGGREGATE_H
#define HOTCOLD_AGGREGATE_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "bpf/sample.h"
#include "profile/hist.h"
#include "profile/weights.h"
#include "profile/tree.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwind.h"

struct hc_agg_stats {
	uint64_t samples;	    /* samples ingested (idle never reaches user space) */
	uint64_t kernel_samples;    /* arg0 != 0 */
	uint64_t user_samples;	    /* arg1 != 0 */
	uint64_t ingest_errors;	    /* samples dropped in user space (out of memory) */
	uint64_t truncated_ustacks; /* user stacks that hit HC_MAX_STACK_DEPTH */
	uint64_t truncated_kstacks;
	uint64_t hist_errors; /* samples not counted in a histogram (out of memory, limits) */
	/* Off-CPU flushes */
	uint64_t off_ns;       /* blocked, all of it (short blocks included) */
	uint64_t runqueue_ns;  /* runnable waiting, all of it */
	uint64_t short_off_ns; /* blocked time of blocks under --min-block: not in the tree */
	uint64_t short_rq_ns;  /* their run-queue time: not in the tree */
	uint64_t blocked_intervals;
	uint64_t preempted_intervals;
	uint64_t offcpu_flushes;
	uint64_t offcpu_lost_ns;      /* off-CPU time dropped in user space (out of memory) */
	uint64_t waker_stack_missing; /* flushes naming a --wakers record that never arrived */
	uint64_t unclaimed_ns;	      /* cpuunclaimed: CPU time idle while tasks waited elsewhere */
	uint64_t expired_ns;	      /* bucketed: off-CPU time before the oldest second kept */
	/* User stacks by source (samples, and off-CPU flushes with a user stack) */
	uint64_t ustacks_dwarf;		  /* unwound from a stack copy */
	uint64_t ustacks_dwarf_truncated; /* of those, ended by "[truncated]" */
	uint64_t ustacks_fp;		  /* frame pointers: no copy taken (mode, budget, fault) */
	uint64_t ustacks_fp_fallback;	  /* frame pointers: a copy that could not be unwound */
	/* Inlined functions left out of a path that would have been deeper than HC_AGG_MAX_PATH
	 * (counted each time a path is built) */
	uint64_t inline_dropped;
};

/* --locks */
struct hc_agg_lock_stats {
	uint64_t events;	     /* contentions received */
	uint64_t wait_ns;	     /* their wait, all of it */
	uint64_t failed;	     /* of them, ended without the lock (ret != 0) */
	uint64_t no_stack;	     /* of them, without stacks (capture budget) */
	uint64_t ingest_errors;	     /* dropped in user space (out of memory) */
	uint64_t expired;	     /* serve: ended before the oldest second kept */
	uint64_t unnamed_over_limit; /* named locks beyond 65535 names: shown by kind only */
};

/*
 * Elements of a path, at most: the encoders refuse trees deeper than 1000 levels. Without
 * inlined functions a path has at most 514 (HC_MAX_STACK_DEPTH frames of each stack); they
 * fill the rest, innermost kept first.
 */
#define HC_AGG_MAX_PATH 1000

struct hc_agg;

/* sym is borrowed and must outlive the aggregator. */
struct hc_agg *hc_agg__new(struct hc_symbolizer *sym, uint64_t period_ns);
void hc_agg__free(struct hc_agg *agg);

int hc_agg__sample(struct hc_agg *agg, const struct hc_sample_event *e, size_t size);
int hc_agg__exec(struct hc_agg *agg, const struct hc_exec_event *e);
/* One off-CPU flush: run-queue time on the thread's switch-out stack, blocked time under its
 * waker (and the waker's stack, when a --wakers record of that seq arrived before). */
int hc_agg__offcpu(struct hc_agg *agg, const struct hc_offcpu_event *e, size_t size);
int hc_agg__waker(struct hc_agg *agg, const struct hc_waker_event *e, size_t size);
/* --unwind dwarf: unwind user stacks from the copies with unw (borrowed; NULL: off), and take
 * a switch-out's copy, unwound now for the flushes that name it. */
void hc_agg__set_unwinder(struct hc_agg *agg, struct hc_unwinder *unw);
/* The profile's `unwind` section (docs/unwinding.md): the mode, the BPF copy counters (t:
 * enum hc_counter totals), where user stacks came from (as), the unwinder's figures (unw NULL:
 * --unwind fp). NULL on allocation failure. */
json_t *hc_unwind_json(bool fp, uint32_t copy_bytes, uint64_t copy_budget, const uint64_t *t,
		       const struct hc_agg_stats *as, const struct hc_unwinder *unw);
int hc_agg__ustack(struct hc_agg *agg, const struct hc_ustack_event *e, size_t size);
/*
 * --locks: one contention. Its wait goes to the lock table (paths ending in a `lock` node:
 * the kind and, when known, the lock's name), by_kind and the lock_wait_ns histogram.
 */
int hc_agg__lock(struct hc_agg *agg, const struct hc_lock_event *e, size_t size);
void hc_agg__lock_stats(const struct hc_agg *agg, struct hc_agg_lock_stats *out);
/* lock_wait_ns: quantize of the waits in ns, per "<kind> spin" / "<kind> block". Borrowed. */
const struct hc_hist *hc_agg__lock_hist(const struct hc_agg *agg);
/* The locks section's by_kind array (docs/locks.md). New reference, NULL on failure. */
json_t *hc_agg__lock_kinds_json(const struct hc_agg *agg);
/* The profile's `locks` section but its flame graph (docs/locks.md); t: enum hc_counter
 * totals. New reference, NULL on failure. */
json_t *hc_locks_json(const struct hc_agg *agg, const uint64_t *t);
/* lockstat-style name of a kind, from the contention flags (LCB_F_*): "spinlock",
 * "rwsem:W", "mutex"... */
const char *hc_lock_kind_name(uint32_t flags);
/* One thread's scheduler histograms, added to the per-process series. */
int hc_agg__thist(struct hc_agg *agg, const struct hc_thist_event *e);
/* bpf_ktime_get_ns() at the window's start: second 0 of the cpu_unclaimed series. */
void hc_agg__set_window_start(struct hc_agg *agg, uint64_t start_ns);
/* quantize() of the on-CPU slices (HC_TH_SLICE), blocked intervals (HC_TH_OFF) and run-queue
 * waits (HC_TH_RUNQ) in microseconds, per process name. Borrowed. */
const struct hc_hist *hc_agg__sched_hist(const struct hc_agg *agg, enum hc_thist which);
/* cpuunclaimed ns per second of the window (index = second). Borrowed. */
const uint64_t *hc_agg__unclaimed_per_second(const struct hc_agg *agg, size_t *n);

/*
 * The `priority` histogram: lquantize(prio, 0, 140, 10) of every on-CPU sample, per process
 * name (DTrace's profpri.d). Borrowed; lives as long as agg.
 */
const struct hc_hist *hc_agg__priority(const struct hc_agg *agg);
/*
 * The `runqueue_length` histogram: lquantize(len, 0, 32, 1) per CPU ("cpu N"), read at every
 * on-CPU sample (bcc runqlen, all scheduling classes). Borrowed; lives as long as agg.
 */
const struct hc_hist *hc_agg__runqueue_length(const struct hc_agg *agg);
/* Idle-task samples of one CPU (counted in BPF, never sent): the idle task runs only when
 * nothing waits, so each is a run-queue length of 0. */
int hc_agg__idle_samples(struct hc_agg *agg, uint32_t cpu, uint64_t count);

/*
 * serve: key every path by the unix second its time fell in (samples by their time, off-CPU
 * flushes spread over the seconds they span); mono_to_real_ns converts bpf_ktime_get_ns()
 * to CLOCK_REALTIME; time before second oldest_s is counted in expired_ns, not kept.
 * Bucketed, samples feed no whole-window histogram and no cpu_unclaimed series: the caller
 * keeps those per second itself.
 */
void hc_agg__set_buckets(struct hc_agg *agg, int64_t mono_to_real_ns, int64_t oldest_s);

/* One resolved path (outermost first, the elements valid for the call) with its weights and
 * its second (0 unless bucketed). Returning non-zero stops the walk with that value. */
typedef int (*hc_agg_path_fn)(void *ctx, const struct hc_path_elem *path, size_t n,
			      const struct hc_weights *w, int64_t sec);
/* Resolve every distinct frame and call fn for every path. */
int hc_agg__for_each_path(struct hc_agg *agg, hc_agg_path_fn fn, void *ctx);
/* Resolve every distinct frame and add every stack to tree. */
int hc_agg__build_tree(struct hc_agg *agg, struct hc_tree *tree);
/* The same over the lock table: the waiters' flame graph (spin ns as on_cpu_ns, blocked ns
 * as off_cpu_ns, samples = contentions). */
int hc_agg__for_each_lock_path(struct hc_agg *agg, hc_agg_path_fn fn, void *ctx);
int hc_agg__build_lock_tree(struct hc_agg *agg, struct hc_tree *tree);
void hc_agg__stats(const struct hc_agg *agg, struct hc_agg_stats *out);
size_t hc_agg__stack_count(const struct hc_agg *agg);

#endif
