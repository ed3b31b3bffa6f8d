/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store/epochrows: the dictionary rows of sealed epochs, decoded once and kept between queries
 * (docs/store.md, "Queries"). A range of a busy host's minutes names most of every older
 * epoch's stacks; reading them from the file (stack chunks, frame rows through SQLite) took a
 * sixth of a 1 h answer, every query again. A sealed epoch's rows never change (ids only grow;
 * an epoch is deleted whole, oldest first), so what was decoded once stays true until the epoch
 * is deleted, and then nothing names it any more.
 *
 * The cache holds whole epochs, least recently used first out past max_bytes; a query holds a
 * reference to each epoch it reads for as long as it reads it. Internal to store/; any thread.
 */
#ifndef HOTCOLD_STORE_EPOCHROWS_H
#define HOTCOLD_STORE_EPOCHROWS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "profile/tree.h"
#include "store/stackrows.h"

/* A frame row; name 0: the file has no row for the id. Strings are offsets into the epoch's
 * string pool, plus one (0: NULL). */
struct hc_epoch_frame {
	uint64_t fid;
	int64_t offset;
	uint32_t name, module;
	uint8_t kind;
	bool inlined;
};

/* One sealed epoch's stack and frame rows; read-only once made. */
struct hc_epoch_rows {
	uint32_t stack_lo, stack_hi; /* stack ids (lo, hi] */
	uint32_t frame_lo, frame_hi; /* frame ids (lo, hi] */
	uint64_t *stacks;	     /* by id - lo - 1: parent << 32 | frame; 0: no row */
	struct hc_epoch_frame *frames;
	char *pool;
	size_t pool_len;
	size_t bytes;  /* what it takes in memory */
	uint64_t rows; /* rows the file had */
	/* the cache's, under its mutex */
	unsigned int refs;
	bool cached;
	uint64_t used; /* the cache's clock when last asked for */
	struct hc_epoch_rows *next;
};

struct hc_epoch_cache {
	pthread_mutex_t mu;
	struct hc_epoch_rows *head;
	size_t bytes, max_bytes;
	uint64_t clock;
	uint64_t hits, misses; /* epochs asked for: found, read from the file */
};

/* 0, -errno. max_bytes 0: cache nothing (every query reads the file). */
int hc__epoch_cache_init(struct hc_epoch_cache *c, size_t max_bytes);
void hc__epoch_cache_release(struct hc_epoch_cache *c);

/*
 * The rows of the epoch whose stack ids are (stack_lo, stack_hi] and frame ids (frame_lo,
 * frame_hi], referenced: from the cache, else read through rows (stacks) and db (frames) and
 * kept when they fit and `keep` (the epoch is whole in the file: no row of it is to come); *read:
 * the rows read from the file (0: cached). NULL + errno (ENOMEM, EIO: the file). Drop the reference
 * with hc__epoch_cache_put().
 */
struct hc_epoch_rows *hc__epoch_cache_get(struct hc_epoch_cache *c, struct hc_stackrows *rows,
					  sqlite3 *db, uint32_t stack_lo, uint32_t stack_hi,
					  uint32_t frame_lo, uint32_t frame_hi, bool keep,
					  uint64_t *read);
void hc__epoch_cache_put(struct hc_epoch_cache *c, struct hc_epoch_rows *e);

/* Forget the epochs whose stacks are below stack_base (the file's oldest epoch starts there:
 * the older ones were deleted). */
void hc__epoch_cache_trim(struct hc_epoch_cache *c, uint32_t stack_base);

/* The frame row of id (in (frame_lo, frame_hi]) as an element (strings live as long as e);
 * false when the file had none. */
bool hc__epoch_rows_frame(const struct hc_epoch_rows *e, uint32_t id, struct hc_path_elem *out);

/* Bytes held, epochs found and read (for the store's figures). */
void hc__epoch_cache_stats(struct hc_epoch_cache *c, uint64_t *bytes, uint64_t *hits,
			   uint64_t *misses);

#endif
