/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * capture/: the one pipeline from the sampler's decoded records to a profile's statistics,
 * for `record` and `serve` alike. Collection does not know its output: every statistic is
 * computed here once and handed to a sink (struct hc_capture_sink), which only stores it.
 * record's sink (capture/record_sink.h) fills a profile's tree and whole-window histograms;
 * serve's (serve/collector.c) writes wire records per second.
 *
 * On the drain path user addresses are normalized at once to {object, file offset} while the
 * process lives (its mappings are snapshotted on its first sample or exec): the record's
 * process is looked up once, into a handle (symbolize/symbolizer.h) that the unwinder and
 * every frame's normalization share. The whole stack plus identity is interned in a stack
 * table: repeated stacks cost one hash lookup. Names are resolved only once per distinct
 * frame, at hc_capture__flush().
 *
 * Time: every statistic carries the unix second its time fell in (bpf_ktime_get_ns() +
 * mono_to_real_ns, hc_capture__set_clock()); paths are keyed by it when opts.per_second
 * (otherwise all fall in second 0: one bucket for the window), and time before oldest_s is
 * counted as expired, not kept.
 *
 * Not thread-safe; a library: never prints; 0 or -errno, constructors NULL + errno.
 */
#ifndef HOTCOLD_CAPTURE_H
#define HOTCOLD_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "bpf/sample.h"
#include "profile/profile.h"
#include "profile/store.h"
#include "sampler/sampler.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwind.h"
#include "symbolize/uwpub.h"

struct hc_capture_stats {
	uint64_t samples;	    /* samples ingested (idle never reaches user space) */
	uint64_t kernel_samples;    /* arg0 != 0 */
	uint64_t user_samples;	    /* arg1 != 0 */
	uint64_t ingest_errors;	    /* samples dropped in user space (out of memory) */
	uint64_t truncated_ustacks; /* user stacks that hit HC_MAX_STACK_DEPTH */
	/* records whose user stack reached an address in no mapping: cut there, at one
	 * "[unknown]" frame (samples, off-CPU flushes, lock waits and waker stacks) */
	uint64_t ustacks_unmapped;
	uint64_t truncated_kstacks;
	uint64_t hist_errors; /* observations a sink could not store (out of memory, limits) */
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
	uint64_t expired_ns;	      /* off-CPU time before the oldest second kept */
	/* User stacks by source (samples, and off-CPU flushes with a user stack) */
	uint64_t ustacks_dwarf;		  /* unwound from a stack copy */
	uint64_t ustacks_dwarf_truncated; /* of those, ended by "[truncated]" */
	uint64_t ustacks_fp;		  /* frame pointers: no copy taken (mode, budget, fault) */
	uint64_t ustacks_fp_fallback;	  /* frame pointers: a copy that could not be unwound */
	uint64_t ustacks_table;		  /* --unwind table: walked in BPF from the tables */
	uint64_t ustacks_table_truncated; /* of those, ended short of the outermost frame */
	/* Inlined functions left out of a path that would have been deeper than
	 * HC_CAPTURE_MAX_PATH (counted each time a path is built) */
	uint64_t inline_dropped;
};

/* --locks */
struct hc_capture_lock_stats {
	uint64_t events;	     /* contentions received */
	uint64_t wait_ns;	     /* their wait, all of it */
	uint64_t failed;	     /* of them, ended without the lock (ret != 0) */
	uint64_t no_stack;	     /* of them, without stacks (capture budget) */
	uint64_t ingest_errors;	     /* dropped in user space (out of memory) */
	uint64_t expired;	     /* ended before the oldest second kept */
	uint64_t unnamed_over_limit; /* named locks beyond 65535 names: shown by kind only */
};

/*
 * Elements of a path, at most: the encoders refuse trees deeper than 1000 levels. Without
 * inlined functions a path has at most 514 (HC_MAX_STACK_DEPTH frames of each stack); they
 * fill the rest, innermost kept first.
 */
#define HC_CAPTURE_MAX_PATH 1000

/* One histogram observation: count values of `value` in series `name` of histogram `hist`. */
struct hc_capture_obs {
	int64_t sec;		     /* the unix second it fell in */
	enum hc_store_hist hist;     /* which (the store's numbering, shared with record) */
	uint32_t pid;		     /* the process (0: a per-CPU or per-kind series) */
	char name[HC_TASK_COMM_LEN]; /* the series: a comm or "cpu N", NUL-padded, not
				      * terminated at 16 bytes */
	const char *key;	     /* the series as a C string (valid for the call) */
	int64_t value;
	uint64_t count;
};

/* --locks: one contention, kept (not expired). */
struct hc_capture_lock {
	int64_t sec;	/* the unix second it ended in */
	uint32_t flags; /* its kind: LCB_F_* (a mutex that spun is a mutex) */
	bool blocked;	/* slept, rather than spun */
	bool failed;	/* ended without the lock */
	bool no_stack;	/* no stack was captured */
	uint64_t wait_ns;
	const char *series; /* "<kind> spin" / "<kind> block": the lock_wait_ns series */
};

/*
 * Where the pipeline's results go. Callbacks left NULL are not called. The int ones return 0
 * or -errno: a path's error stops hc_capture__flush() with it; an observation's is counted
 * (hist_errors; -ENOMEM from lock: the contention's ingest_errors, and it goes no further).
 */
struct hc_capture_sink {
	/* One resolved path (outermost first, elements valid for the call), its weights and its
	 * second (0 unless per_second); lock_path: the lock table's (spin ns as on_cpu_ns,
	 * blocked ns as off_cpu_ns, samples = contentions). At hc_capture__flush(). */
	int (*path)(void *ctx, const struct hc_path_elem *path, size_t n,
		    const struct hc_weights *w, int64_t sec);
	int (*lock_path)(void *ctx, const struct hc_path_elem *path, size_t n,
			 const struct hc_weights *w, int64_t sec);
	/* As records arrive. */
	int (*hist)(void *ctx, const struct hc_capture_obs *o);
	int (*lock)(void *ctx, const struct hc_capture_lock *l);
	/* cpuunclaimed ns in second window_s of the window (hc_capture__set_window_start). */
	int (*unclaimed)(void *ctx, uint64_t window_s, uint64_t ns);
	/* A sample at row (0..rows-1) of its second's heat column. */
	void (*heat)(void *ctx, int64_t sec, unsigned int row);
	void *ctx;
};

/* Rows of a second's heat column: the sub-second a sample fell in. */
#define HC_CAPTURE_HEAT_ROWS 50

struct hc_capture_opts {
	uint64_t period_ns;
	bool per_second; /* key paths by their unix second (serve); false: one bucket (record) */
};

struct hc_capture;

/* sym, unw (NULL: --unwind fp) and the sink's ctx are borrowed and must outlive the
 * pipeline. */
struct hc_capture *hc_capture__new(const struct hc_capture_opts *o, struct hc_symbolizer *sym,
				   struct hc_unwinder *unw, const struct hc_capture_sink *sink);
void hc_capture__free(struct hc_capture *cap);

/* --unwind table: each record's process gets its unwind tables published (when its maps
 * changed) before its stacks are built. pub is borrowed; NULL stops publishing. */
void hc_capture__set_uwpub(struct hc_capture *cap, struct hc_uwpub *pub);
/* A publisher over the sampler's tables (--unwind table), which maps their rows as it places
 * them: NULL and errno (EINVAL: the sampler was made without uw_tables, or its tables are
 * unmapped; ENOMEM). s must outlive it. */
struct hc_uwpub *hc_capture__uwpub_new(struct hc_symbolizer *sym, struct hc_sampler *s);

/*
 * The sampler's callbacks into the pipeline *slot (read at each record: a pipeline made
 * after the sampler, in another process, is fine; NULL: records are dropped).
 */
struct hc_sampler_callbacks hc_capture__sampler_callbacks(struct hc_capture **slot);

int hc_capture__sample(struct hc_capture *cap, const struct hc_sample_event *e, size_t size);
int hc_capture__exec(struct hc_capture *cap, const struct hc_exec_event *e);
/* One off-CPU flush: run-queue time on the thread's switch-out stack, blocked time under its
 * waker (and the waker's stack, when a --wakers record of that seq arrived before). */
int hc_capture__offcpu(struct hc_capture *cap, const struct hc_offcpu_event *e, size_t size);
int hc_capture__waker(struct hc_capture *cap, const struct hc_waker_event *e, size_t size);
/* --unwind dwarf: a switch-out's copy, unwound now for the flushes that name it. */
int hc_capture__ustack(struct hc_capture *cap, const struct hc_ustack_event *e, size_t size);
/* --locks: one contention. Its wait goes to the lock table (paths ending in a `lock` node:
 * the kind and, when known, the lock's name) and to the sink's lock(). */
int hc_capture__lock(struct hc_capture *cap, const struct hc_lock_event *e, size_t size);
/* One thread's scheduler histograms (quantize, us), filed under the current second. */
int hc_capture__thist(struct hc_capture *cap, const struct hc_thist_event *e);
/* Idle-task samples of one CPU in second sec (counted in BPF, never sent): the idle task
 * runs only when nothing waits, so each is a run-queue length of 0. */
int hc_capture__idle_samples(struct hc_capture *cap, int64_t sec, uint32_t cpu, uint64_t count);

/* CLOCK_REALTIME - CLOCK_MONOTONIC, and the oldest second kept (default 0 and every second). */
void hc_capture__set_clock(struct hc_capture *cap, int64_t mono_to_real_ns, int64_t oldest_s);
/* The current unix second: records that carry no time (thist) are filed under it. */
void hc_capture__set_now(struct hc_capture *cap, int64_t now_s);
/* bpf_ktime_get_ns() at the window's start: second 0 of the cpu_unclaimed series. */
void hc_capture__set_window_start(struct hc_capture *cap, uint64_t start_ns);

/* Resolve every distinct frame, hand every path to the sink (the stack table's, then the lock
 * table's), then start the tables over: what follows is the next flush's. */
int hc_capture__flush(struct hc_capture *cap);

/* Cumulative over every flush. */
void hc_capture__stats(const struct hc_capture *cap, struct hc_capture_stats *out);
void hc_capture__lock_stats(const struct hc_capture *cap, struct hc_capture_lock_stats *out);
/* Distinct stacks since the last flush. */
size_t hc_capture__stack_count(const struct hc_capture *cap);

/* lockstat-style name of a kind, from the contention flags (LCB_F_*): "spinlock",
 * "rwsem:W", "mutex"... */
const char *hc_lock_kind_name(uint32_t flags);

#endif
