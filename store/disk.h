/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store/disk: serve's history on disk (docs/store.md, "On disk"). One SQLite file in WAL mode,
 * DIR/hotcold.db, holding
 *  - a dictionary shared across time: frames, tasks (pid, tid and their names) and stacks
 *    (a trie of (parent stack, frame), so a path is one id);
 *  - buckets: per tier and start second, a zstd-compressed columnar blob of (task, stack,
 *    samples, on-CPU, blocked, run-queue ns), the heat-map rows, the histogram cells and the
 *    per-second counters, with the bucket's totals beside it in plain columns.
 *
 * The dictionary lives in epochs: memory holds the current one (ids interned while it lasts),
 * the file every epoch a bucket still references; a new epoch begins once the current one's
 * memory would pass dict_max_bytes, and an epoch no bucket references is deleted from the file.
 *
 * Tiers are rollups, not moves: tier 0 keeps 1 s buckets for the newest hour, tier 1 10 s
 * buckets for 24 h, tier 2 1 min buckets up to the retention and tier 3 1 h buckets over the
 * same, each over its own horizon, so a range is answered whole from the finest tier that covers
 * it. Only tier 0 is written every second; the writer thread builds each coarser tier's windows
 * from the tier below once they are complete, merges windows holding several rows, expires
 * what is past each horizon and drops the oldest when the file would exceed max_bytes. Data
 * for a second already written (off-CPU time is reported when a block ends) is one more row of
 * its 1 s window and of each coarser window already built: totals stay exact.
 *
 * Threads: the ingest calls (dictionary, add, seal) come from one thread; the writer is a
 * thread of its own (it never blocks the ingest: a full queue drops and counts); queries may run
 * on any threads, each with a read connection of its own.
 */
#ifndef HOTCOLD_STORE_DISK_H
#define HOTCOLD_STORE_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/hist.h"
#include "profile/store.h"
#include "profile/tree.h"
#include "profile/weights.h"

#define HC_DISK_TIERS 4
#define HC_DISK_FILE "hotcold.db"
#define HC_DISK_QUARANTINE "quarantine"

/* The two stores of serve: the profile and, with --locks, the lock waiters'. */
enum hc_disk_store {
	HC_DISK_MAIN = 0,
	HC_DISK_LOCKS = 1,
};
#define HC_DISK_STORES 2

struct hc_disk_opts {
	const char *dir;
	uint64_t retention_s; /* the coarsest tier's horizon; 0: 7 days */
	uint64_t max_bytes;   /* the file's pages in use; 0: 1 GiB */
	/* Horizons of tiers 0 and 1 (tests shorten them); 0: 3600 and 86400. */
	uint64_t tier_keep_s[2];
	/* An open descriptor of DIR already locked by hc_disk__lock() (serve takes it in
	 * the privileged process, before anything else); -1: hc_disk__open() takes it. */
	int lock_fd;
	uint64_t period_ns; /* the on-CPU weight of one sample, for the encoding */
	/* Writer pacing (tests shorten it): compaction at most this often; 0: 10 s. */
	uint64_t compact_every_s;
	/* The dictionary's memory per epoch (the current one and the one before it are in
	 * memory): a new epoch begins before it would pass the bound, which starts here; 0:
	 * 2 MiB. */
	uint64_t dict_max_bytes;
	/* ... and doubles, up to this, while the working set does not fit it (epochs of under
	 * 30 s of data, most of their entries adopted from older ones); an epoch that lasts
	 * 2 minutes of data under a grown bound ends, and the next begins at half of it.
	 * 0: 8 x dict_max_bytes (16 MiB by default); dict_max_bytes or less: a fixed bound
	 * (tests). */
	uint64_t dict_ceiling_bytes;
	/* tests: epochs an entry used again is adopted for (0: the default, 256) */
	uint64_t adopt_epochs;
	/* The coarser tiers (10 s and up) fold a thread's stacks that weigh less than this many
	 * ns per second of their window (on-CPU + blocked + run-queue) into "[small stacks]"
	 * under the nearest heavier node (store/fold.h); 0: HC_DISK_FOLD_DEFAULT;
	 * HC_DISK_FOLD_OFF: never. */
	uint64_t fold_ns_per_s;
	/* Queries keep the dictionary rows of sealed epochs they read, up to this many bytes
	 * (store/epochrows.h); 0: HC_DISK_EPOCH_CACHE_DEFAULT; HC_DISK_EPOCH_CACHE_OFF: none. */
	uint64_t epoch_cache_bytes;
};
/* 100 us a second: 0.01 % of a CPU (1 ms in a 10 s window, 6 ms in a minute). */
#define HC_DISK_FOLD_DEFAULT 100000u
#define HC_DISK_FOLD_OFF UINT64_MAX
/* 4 MiB: a busy week's epochs (the 2-CPU VM's PostgreSQL load: 34 epochs, 245k stack and
 * 32k frame rows, ~3.5 MB; a capture with 12k processes: 650k and 54k, ~8 MB, keeps its
 * newest epochs), within serve's memory budget (issue 20: 48 MB for all its processes). */
#define HC_DISK_EPOCH_CACHE_DEFAULT ((uint64_t)4 << 20)
#define HC_DISK_EPOCH_CACHE_OFF UINT64_MAX

/* Resolution of tier t in seconds: 1, 10, 60. */
int64_t hc_disk__tier_step(int tier);
/* "1s", "10s", "1m". */
const char *hc_disk__tier_name(int tier);

/*
 * Create DIR (0700) if missing and lock it (flock on the directory, exclusive, not waiting).
 * The descriptor (close-on-exec cleared: children keep the lock) or -errno: -EWOULDBLOCK when
 * another process holds it (why names the directory), -EACCES/-EROFS/-ENOTDIR/... when DIR cannot
 * be made or written. uid/gid (not -1): DIR is created owned by them.
 */
int hc_disk__lock(const char *dir, int uid, int gid, char *why, size_t why_len);

struct hc_disk;
struct hc_disk_view;

/*
 * Open (create) DIR/hotcold.db: the dictionary is loaded, the writer thread started. A file
 * that is not a hotcold store or fails SQLite's quick check is moved to DIR/quarantine/ (never
 * deleted) and a new one started: hc_disk_stats.quarantined says so and why names it. NULL +
 * errno (EWOULDBLOCK: locked; EACCES, EROFS: not writable; ENOMEM; EIO) and why.
 */
struct hc_disk *hc_disk__open(const struct hc_disk_opts *o, char *why, size_t why_len);
/* Write what is sealed, stop the writer, close. */
void hc_disk__close(struct hc_disk *d);

/* ---- ingest (one thread) ---- */

/* Dictionary ids (from 1), interned: the same element gives the same id within an epoch.
 * Ids of older epochs stay usable everywhere an id is taken (they are translated into the
 * current one); -ESTALE for one whose epoch was deleted (no bucket referenced it any more),
 * -EINVAL, -ENOMEM. */
int64_t hc_disk__frame(struct hc_disk *d, const struct hc_path_elem *e);
int64_t hc_disk__task(struct hc_disk *d, const struct hc_path_elem *process,
		      const struct hc_path_elem *thread);
/* The element a frame id names (strings valid until the next hc_disk__seal()). -EINVAL for an
 * unknown id. */
int hc_disk__elem(struct hc_disk *d, uint32_t frame, struct hc_path_elem *out);
/* The stack extending `parent` (0: none) by frame `frame`. */
int64_t hc_disk__stack(struct hc_disk *d, uint32_t parent, uint32_t frame);

int hc_disk__add(struct hc_disk *d, enum hc_disk_store s, int64_t sec, uint32_t task,
		 uint32_t stack, const struct hc_weights *w);
int hc_disk__add_heat(struct hc_disk *d, int64_t sec, unsigned int row, uint64_t count);
int hc_disk__add_hist(struct hc_disk *d, enum hc_disk_store s, int64_t sec, enum hc_store_hist h,
		      uint32_t pid, const char *key, int64_t value, uint64_t count);
int hc_disk__add_counter(struct hc_disk *d, enum hc_disk_store s, int64_t sec,
			 enum hc_store_counter c, const char *key, uint64_t value);
/* Seconds up to sec are complete. Everything pending (open seconds too, as a first row of
 * theirs) is encoded and handed to the writer: a crash loses only what has not arrived yet. */
int hc_disk__seal(struct hc_disk *d, int64_t sec);
/* Wait until the writer has written (or failed to write) everything sealed so far. */
void hc_disk__sync(struct hc_disk *d);
/* Have the writer merge complete windows, expire and enforce max_bytes now (it does every
 * compact_every_s on its own), and wait for it: tests, and `hotcold import` before it ends. */
void hc_disk__maintain(struct hc_disk *d);

/* ---- queries (any thread) ---- */

/* A range as a tier answers it: [from_s, to_s) aligned to the tier's step. */
struct hc_disk_range {
	int tier;
	int64_t from_s, to_s;
};

/*
 * The finest tier whose held data reaches back to from_s (else the coarsest), the range aligned
 * to its step and clipped to what is held. -ENODATA when the disk holds nothing.
 */
int hc_disk__pick(struct hc_disk *d, int64_t from_s, int64_t to_s, struct hc_disk_range *out);

/* As hc_store__tree / __hist / __counter / __timeline / __heat, for range r of store s; the
 * filter's from_s / to_s are ignored (r says). Blobs that fail to decode are skipped and
 * counted (hc_disk_stats.corrupt_blobs). */
int hc_disk__tree(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		  const struct hc_store_filter *f, struct hc_tree *out,
		  struct hc_store_pruned *pruned);
struct hc_hist *hc_disk__hist(struct hc_disk *d, enum hc_disk_store s,
			      const struct hc_disk_range *r, enum hc_store_hist h,
			      const struct hc_store_filter *f);
/*
 * Range r of store s summed once, for several answers from it (a profile's tree and its
 * histograms): with the tree's entries (the weights f selects, its task filter applied) and/or
 * the histograms' cells. NULL + errno. The tree can be taken once (then -EALREADY).
 */
struct hc_disk_view *hc_disk__view(struct hc_disk *d, enum hc_disk_store s,
				   const struct hc_disk_range *r, const struct hc_store_filter *f,
				   bool tree, bool hists);
int hc_disk_view__tree(struct hc_disk_view *v, struct hc_tree *out, struct hc_store_pruned *pruned);
struct hc_hist *hc_disk_view__hist(struct hc_disk_view *v, enum hc_store_hist h);
void hc_disk_view__free(struct hc_disk_view *v);
int hc_disk__counter(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		     enum hc_store_counter c, int (*fn)(void *ctx, const char *key, uint64_t value),
		     void *ctx);
int hc_disk__timeline(struct hc_disk *d, const struct hc_disk_range *r, int64_t step_s,
		      struct hc_store_slot **out, size_t *n);
/* Heat columns of seconds [from_s, from_s + cols) into rows (cols x HC_STORE_HEAT_ROWS); tier 0
 * only (zeros elsewhere). */
int hc_disk__heat(struct hc_disk *d, int64_t from_s, int64_t cols, uint64_t *rows);

struct hc_disk_tier_stats {
	uint64_t buckets, seconds;
	int64_t oldest_s, newest_s; /* 0, 0: empty */
};

struct hc_disk_stats {
	uint64_t bytes;	     /* the file's pages in use (--max-disk bounds them) */
	uint64_t file_bytes; /* the file's size */
	struct hc_disk_tier_stats tier[HC_DISK_TIERS];
	uint64_t writes, write_failures; /* transactions */
	uint64_t write_ns_last, write_ns_max;
	uint64_t maintain_ns_last, maintain_ns_max; /* builds, merges, expiry */
	uint64_t dropped_queue_s;	/* seconds dropped: the writer's queue was full */
	uint64_t dropped_write_s;	/* seconds dropped: their write failed (disk full, I/O) */
	uint64_t dropped_max_disk_s;	/* seconds dropped before retention: over max_bytes */
	uint64_t expired_s;		/* seconds past a tier's horizon (normal) */
	uint64_t compactions;		/* windows merged */
	uint64_t builds;		/* windows of tiers 1.. built from the tier below */
	uint64_t corrupt_blobs;		/* buckets that did not decode (skipped) */
	uint64_t quarantined;		/* store files moved aside at open */
	uint64_t frames, tasks, stacks; /* dictionary entries in memory (the current epoch) */
	uint64_t dict_bytes;	   /* memory the dictionary takes (epochs not yet written too) */
	uint64_t sqlite_bytes;	   /* memory SQLite holds (the process's, page caches above all) */
	uint64_t dict_epoch;	   /* the current epoch */
	uint64_t dict_bound_bytes; /* the bound an epoch's memory stays under now */
	uint64_t dict_bound_changes; /* times it doubled or halved */
	uint64_t dict_epochs;	     /* epochs in the file */
	uint64_t dict_rows_deleted;  /* rows of epochs no bucket references, deleted */
	uint64_t dict_file_lookups;  /* ids of older epochs read from the file */
	uint64_t dict_recalled;	     /* entries of older epochs met again, adopted from the file */
	uint64_t dict_recall_errors; /* content lookups in the file that failed (written anew) */
	/* sealed epochs' rows kept for queries: memory, epochs found there, read from the file */
	uint64_t epoch_cache_bytes, epoch_cache_hits, epoch_cache_misses;
	/* stack rows (store/stackrows.h): content keys not packed yet, packed; passes of
	 * packing; chunks merged into larger ones */
	uint64_t stack_keys_fresh, stack_keys_packed, stack_key_passes, stack_chunks_merged;
	/* the coarser tiers' small stacks: entries folded (each time a tier folds one) and
	 * their ns; entries left unfolded because a stack row could not be read */
	uint64_t folded_entries, folded_ns, fold_unreadable;
	uint64_t fold_ns_per_s;	    /* the threshold in effect (0: folding is off) */
	int64_t oldest_s, newest_s; /* the whole disk's range; 0, 0: empty */
};

void hc_disk__stats(struct hc_disk *d, struct hc_disk_stats *out);

#endif
