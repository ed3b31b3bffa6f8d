/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store/disk_int: what disk.c (the file, the ingest side, the writer) and query.c (the
 * queries) share of the disk store. Internal to store/.
 */
#ifndef HOTCOLD_STORE_DISK_INT_H
#define HOTCOLD_STORE_DISK_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/blob.h"
#include "store/dict.h"
#include "store/epochrows.h"
#include "store/disk.h"
#include "store/fold.h"
#include "store/stackrows.h"

/* Sealed buckets on their way to the writer. */
struct batch {
	struct batch *next;
	uint64_t epoch; /* the dictionary epoch of its ids */
	struct hc_blob *blobs;
	uint8_t *stores;
	size_t n;
};

struct pending {
	struct hc_blob blob;
	uint8_t store;
};

struct hc_disk {
	char *dir, *path;
	int lock_fd;
	bool own_lock;
	uint64_t keep_s[HC_DISK_TIERS];
	uint64_t max_bytes;
	uint64_t period_ns;
	uint64_t compact_every_s;
	sqlite3 *db;		 /* the writer's connection */
	uint64_t dict_max_bytes; /* the floor of dict_bound */
	uint64_t dict_ceiling;
	uint64_t adopt_epochs;
	/* The dictionary: the current epoch (the ingest thread interns into it) and the retired
	 * ones still in memory, oldest first, until the writer has written them. Pointers and
	 * `refs` under mu; only the ingest thread changes them. */
	struct hc_dict *dict;
	struct hc_dict *retired;
	/* the epoch before the current one, referenced until the next begins: what the
	 * current one adopts from */
	struct hc_dict *prev;

	/* ingest thread only */
	sqlite3 *ingest_db;    /* reads rows of older epochs (ids a caller kept) */
	uint64_t dict_bound;   /* an epoch's memory stays under it (doc of dict_ceiling_bytes) */
	int64_t epoch_first_s; /* newest_data_s when the current epoch began; 0: no data yet */
	uint64_t room_epoch;   /* the epoch that had room at room_entries entries */
	size_t room_entries;
	sqlite3_stmt *ingest_get[HC_DICT_TABLES];
	sqlite3_stmt *ingest_recall[HC_DICT_TABLES]; /* by content: frames */
	struct hc_stackrows ingest_rows;	     /* stack rows: by id, by content */
	uint64_t ingest_rows_gen;		     /* rows_gen when its chunk was read */
	struct pending *pend;
	size_t n_pend, cap_pend;
	int64_t newest_data_s; /* the newest second any record was for */

	/* the queue, the writer, the figures: under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv, idle_cv;
	pthread_t writer;
	bool writer_started, stop, busy, want_maintain;
	struct batch *head, *tail;
	size_t queued_s;
	int64_t newest_sealed_s;
	int64_t first_s; /* the first second ever written (meta first_s); 0: unknown */
	/* the oldest epoch whose rows the writer keeps: what it deletes is below, and the
	 * ingest recalls nothing from there */
	int64_t recall_floor;
	uint64_t rows_gen; /* stack rows deleted: a cached chunk may be stale */
	uint64_t last_compact_ns;
	struct hc_disk_stats st;
	/* sealed epochs' dictionary rows, kept between queries (its own lock) */
	struct hc_epoch_cache epochs;

	/* the writer thread only */
	int64_t built[HC_DISK_TIERS];	   /* tier k >= 1 holds its windows ending at or before
					    * built[k], built from tier k - 1 (INT64_MIN: none) */
	int64_t cut[HC_DISK_TIERS];	   /* --max-disk took each tier's windows before it */
	void *cctx;			   /* its zstd compression context */
	struct hc_stackrows_packer packer; /* the stack keys' packing */
	uint32_t compacted_to;		   /* stack chunks merged up to this id */
	uint64_t fold_ns_per_s;		   /* coarse tiers' small stacks, per second of window */
	struct hc_fold fold;		   /* ... folded with parents read through fold_rows */
	struct hc_stackrows fold_rows;
};

/* A dictionary entry's content, strings not interned (valid while its source is). */
struct dict_row {
	struct hc_path_elem frame;
	struct hc_dict_task task;
	struct hc_dict_stack stack;
};

extern const int64_t hc__disk_tier_step[HC_DISK_TIERS];
/* A query's rows smaller than this together (compressed) are decoded by the calling thread
 * alone, larger ones on two (store/query.c:decode_rows); at most a batch of them is copied
 * out of the file at once. Tests lower both. */
#define HC_DISK_DECODE_SPLIT_BYTES ((size_t)256 << 10)
#define HC_DISK_DECODE_BATCH_BYTES ((size_t)16 << 20)
extern size_t hc__disk_decode_split_bytes, hc__disk_decode_batch_bytes;
/* A row of one of the dictionary's tables by id (bound as ?1): the columns
 * hc__disk_row_read() takes. */
extern const char *const hc__disk_row_sql[HC_DICT_TABLES];

/* The start of the window of length step holding v (rounded down, negative v too). */
static inline int64_t hc__disk_floor(int64_t v, int64_t step)
{
	return v >= 0 ? v / step * step : -((-v + step - 1) / step) * step;
}

/* SQLite's result code as an errno (0 for OK, DONE, ROW). */
int hc__disk_sql_errno(int rc);
int hc__disk_exec(sqlite3 *db, const char *sql);
/* A connection to path with serve's settings (busy timeout); 0 or -errno. */
int hc__disk_open_db(const char *path, int flags, sqlite3 **out);
/* A dictionary row of table t, its columns from col of st. */
void hc__disk_row_read(enum hc_dict_table t, sqlite3_stmt *st, int col, struct dict_row *r);
/* The same from an epoch in memory that has id. */
void hc__disk_row_from_dict(const struct hc_dict *dict, enum hc_dict_table t, uint32_t id,
			    struct dict_row *r);
/* A reference to an epoch dropped (under d->mu); the last one frees it. */
void hc__disk_dict_put(struct hc_disk *d, struct hc_dict *dict);

#endif
