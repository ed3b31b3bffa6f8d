/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * profile/store: the continuous profile of `hotcold serve`. Pure data: no BPF, no /proc, no
 * HTTP, never prints; not thread-safe (serve wraps it in a rwlock).
 *
 * What goes in, once per second of wall-clock time (unix seconds, CLOCK_REALTIME):
 *  - weights (on-CPU, blocked, run-queue ns and samples) on a path of frames. A path is a list
 *    of frame ids, outermost first: process, thread, user frames, kernel frames, maybe a waker
 *    and its frames: exactly the path hc_tree__add_path() takes, with each element defined
 *    once beforehand by hc_store__define_frame();
 *  - on-CPU sample counts per sub-second row (the FlameScope heat map);
 *  - histogram observations (the five scheduler histograms, per process or CPU; serve --locks
 *    also keeps lock_wait_ns, per lock kind) and per-second counters (the lock kinds' counts,
 *    waits and maxima);
 * and out come, for any range of whole seconds inside retention: the merged flame graph
 * (filtered by process, thread, name and kind, pruned to a node budget), the timeline, the heat
 * map and the histograms.
 *
 * Storage: paths are interned in a trie of (parent, frame) nodes shared by all seconds; each
 * second is a bucket holding (trie node, weights) entries, open (a hash) while it receives
 * data and then sealed (sorted, varint-encoded). Data for a second that is already sealed
 * (off-CPU time is reported when a block ends, and spread back over the seconds it covered)
 * is merged into it. Buckets older than the retention span are dropped; trie nodes no bucket
 * references any more are collected, so process churn does not grow memory forever. When the
 * store would exceed max_bytes, the oldest 1 s buckets are merged into coarser ones (10 s), and
 * past that the oldest are dropped early; both are counted in hc_store_stats.
 */
#ifndef HOTCOLD_PROFILE_STORE_H
#define HOTCOLD_PROFILE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/hist.h"
#include "profile/weights.h"
#include "profile/tree.h"

#define HC_STORE_HEAT_ROWS 50 /* sub-second rows of the heat map: 20 ms each */
#define HC_STORE_MAX_DEPTH 1024

/* The histograms the store keeps, with their shapes (docs/histograms.md). */
enum hc_store_hist {
	HC_STORE_H_PRIORITY = 0,    /* lquantize(prio, 0, 140, 10), unit "prio", per process */
	HC_STORE_H_RUNQ_LENGTH,	    /* lquantize(len, 0, 32, 1), unit "tasks", per "cpu N" */
	HC_STORE_H_ONCPU_SLICE_US,  /* quantize, unit "us", per process */
	HC_STORE_H_OFFCPU_US,	    /* quantize, unit "us", per process */
	HC_STORE_H_RUNQ_LATENCY_US, /* quantize, unit "us", per process */
	HC_STORE_H_LOCK_WAIT_NS,    /* quantize, unit "ns", per "KIND spin" / "KIND block" (pid 0):
				     * serve --locks (docs/locks.md) */
	HC_STORE_H_MAX,
};
/* The scheduler histograms come first: 0 .. HC_STORE_H_SCHED_MAX - 1. */
#define HC_STORE_H_SCHED_MAX HC_STORE_H_LOCK_WAIT_NS

/* "priority", "runqueue_length", "oncpu_slice_us", "offcpu_us", "runqueue_latency_us",
 * "lock_wait_ns"; NULL out of range. */
const char *hc_store_hist__name(enum hc_store_hist h);
/* The histogram called name, or -1. */
int hc_store_hist__by_name(const char *name);
/* A new, empty histogram of h's shape (docs/histograms.md); NULL + errno. */
struct hc_hist *hc_store_hist__new(enum hc_store_hist h);

struct hc_store_opts {
	uint64_t retention_s; /* seconds kept back from the newest; 0: 3600 */
	size_t max_bytes;     /* memory cap for buckets + trie + frames; 0: 32 MiB */
	uint64_t period_ns;   /* on-CPU weight of one sample (for docs/checks; > 0) */
};

struct hc_store_stats {
	uint64_t buckets;	    /* seconds held (a 10 s coarse bucket counts 10) */
	uint64_t coarse_buckets;    /* buckets merged to 10 s because of max_bytes */
	uint64_t trie_nodes;	    /* live path nodes */
	uint64_t frames;	    /* distinct frames held */
	uint64_t bytes;		    /* heap in use, all of it (hc_store__memory_bytes) */
	uint64_t expired_adds;	    /* adds for seconds already dropped (older than retention) */
	uint64_t expired_ns;	    /* their on + off + run-queue ns */
	uint64_t evicted_early;	    /* seconds dropped before retention because of max_bytes */
	uint64_t gc_runs;	    /* trie collections */
	int64_t oldest_s, newest_s; /* seconds held; both 0 when empty */
	int64_t fine_from_s;	    /* from this second on, held at 1 s (not coarsened) */
};

struct hc_store;

/* NULL + errno (EINVAL for bad options, ENOMEM). */
struct hc_store *hc_store__new(const struct hc_store_opts *opts);
void hc_store__free(struct hc_store *st);

/*
 * Define frame `id` (ids are dense, from 1, defined in increasing order: id must be exactly
 * the number of frames defined so far (since the last reset) + 1). The element's strings are
 * copied; equal frames share one entry. -EINVAL (bad id, kind or NULL name), -ENOMEM.
 */
int hc_store__define_frame(struct hc_store *st, uint32_t id, const struct hc_path_elem *e);

/*
 * Forget every frame id defined so far (the frames themselves stay while paths use them):
 * the caller starts again from id 1, with a dictionary that no longer grows with every process
 * that ever ran. Frames that neither a held path nor a new id refers to are collected with the
 * trie, so process churn does not grow the store without bound.
 */
void hc_store__reset_frames(struct hc_store *st);

/*
 * Add w at the path of frame ids (n <= HC_STORE_MAX_DEPTH, every id defined; path[0] must be
 * a process frame and path[1] a thread frame) for second sec. -EINVAL on a bad path, -ENOMEM.
 * A second older than the retention span is not stored: 0 is returned and expired_* count it.
 * Adding to a second newer than any before makes it the newest: buckets that fall out of
 * retention relative to it are dropped.
 */
int hc_store__add(struct hc_store *st, int64_t sec, const uint32_t *path, size_t n,
		  const struct hc_weights *w);
/* count on-CPU samples in heat-map row (0..HC_STORE_HEAT_ROWS-1) of second sec. */
int hc_store__add_heat(struct hc_store *st, int64_t sec, unsigned int row, uint64_t count);
/* count observations of value in histogram h, series key (a process name or "cpu N"), of
 * process pid (0 for per-CPU series), for second sec. -EINVAL, -ENOMEM. */
int hc_store__add_hist(struct hc_store *st, int64_t sec, enum hc_store_hist h, uint32_t pid,
		       const char *key, int64_t value, uint64_t count);

/*
 * Per-second counters, per key: summed over a range (the _MAX_ ones: their maximum). They are
 * kept with the histogram cells of their second, so coarsening, retention, the memory cap and
 * early eviction treat them alike. serve --locks keys them by "KIND spin" / "KIND block".
 */
enum hc_store_counter {
	HC_STORE_C_LOCK_COUNT = 0, /* contentions */
	HC_STORE_C_LOCK_WAIT_NS,   /* their waits, summed */
	HC_STORE_C_LOCK_MAX_NS,	   /* their longest wait: a maximum, not a sum */
	HC_STORE_C_LOCK_FAILED,	   /* of them, ended without the lock */
	HC_STORE_C_LOCK_NO_STACK,  /* of them, recorded without stacks */
	HC_STORE_C_MAX,
};

/* Add value to counter c of key in second sec (raise it to value, for a maximum). A value of
 * 0 stores nothing. -EINVAL (bad counter, NULL or over-long key), -ENOMEM. */
int hc_store__add_counter(struct hc_store *st, int64_t sec, enum hc_store_counter c,
			  const char *key, uint64_t value);

/* Every second up to and including sec is complete: seal (encode) their buckets. */
int hc_store__seal(struct hc_store *st, int64_t sec);

/* ---- queries (read-only; safe to run concurrently with each other, not with adds) ---- */

struct hc_store_filter {
	int64_t from_s; /* inclusive */
	int64_t to_s;	/* exclusive */
	bool has_pid;
	uint32_t pid;
	bool has_tid;
	uint32_t tid;
	const char *comm;	/* process name, exact; NULL: any */
	bool on, off, runqueue; /* which weights to keep (kind=on: on only; off: off+runqueue) */
	size_t max_nodes;	/* nodes in the answer, root included; 0: no limit */
};

struct hc_store_pruned {
	uint64_t nodes;	   /* nodes folded into their parents */
	uint64_t value_ns; /* their total (inclusive) value */
};

/*
 * The merged flame graph of the range into out (an empty tree), pruned to max_nodes: the
 * largest nodes are kept (a kept node's ancestors are always kept, children values never
 * exceed parents'), the rest fold into their parents as self time. Totals of the range (the
 * root's weights) are in hc_tree__root(out). 0, -ENOMEM.
 */
int hc_store__tree(const struct hc_store *st, const struct hc_store_filter *f, struct hc_tree *out,
		   struct hc_store_pruned *pruned);

/* One timeline slot: sums over [t_s, t_s + step_s). */
struct hc_store_slot {
	int64_t t_s;
	uint64_t on_cpu_ns, off_cpu_ns, runqueue_ns, samples;
};

/* Slots of step_s seconds from from_s to to_s (exclusive; the last slot may be shorter).
 * *out is malloc'd (*n slots). -EINVAL (step_s 0, from_s >= to_s, more than 100000 slots),
 * -ENOMEM. Unfiltered: the whole machine. */
int hc_store__timeline(const struct hc_store *st, int64_t from_s, int64_t to_s, int64_t step_s,
		       struct hc_store_slot **out, size_t *n);
/* The heat-map column of second sec (zeros if none). */
void hc_store__heat(const struct hc_store *st, int64_t sec, uint64_t rows[HC_STORE_HEAT_ROWS]);

/* Histogram h over the range, only the series of the filter's pid / comm (per-CPU series of
 * runqueue_length are kept unless pid or comm is given). New hc_hist (caller frees), NULL +
 * errno. Series of one name from several pids are summed under the name. */
struct hc_hist *hc_store__hist(const struct hc_store *st, enum hc_store_hist h,
			       const struct hc_store_filter *f);

/*
 * Counter c over the filter's range (pid, tid, comm are ignored: counters are the whole
 * machine's): fn(ctx, key, value) once per key with a non-zero value, keys in the store's order
 * (stable: the order they were first stored in). 0, fn's non-zero return, -EINVAL, -ENOMEM.
 */
int hc_store__counter(const struct hc_store *st, enum hc_store_counter c,
		      const struct hc_store_filter *f,
		      int (*fn)(void *ctx, const char *key, uint64_t value), void *ctx);

size_t hc_store__memory_bytes(const struct hc_store *st);
void hc_store__stats(const struct hc_store *st, struct hc_store_stats *out);

#endif
