/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store/blob: one bucket of the disk store in memory (struct hc_blob: entries keyed by
 * (task, stack), heat rows, histogram cells and counters, all summed as they are added) and its
 * encoding: a columnar, varint blob compressed with zstd (docs/store.md, "On disk"). Decoding
 * adds into a blob, so merging windows and summing a query's range are the same code.
 * Internal to store/. Not thread-safe.
 */
#ifndef HOTCOLD_STORE_BLOB_H
#define HOTCOLD_STORE_BLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/intern.h"
#include "profile/store.h"
#include "profile/weights.h"

struct hc_blob_entry {
	uint32_t task, stack;
	struct hc_weights w;
};

/* A histogram cell (hist < HC_STORE_H_MAX; value: the first value seen in its bucket) or a
 * counter (hist = HC_BLOB_COUNTER + enum hc_store_counter, pid 0, value 0). */
#define HC_BLOB_COUNTER HC_STORE_H_MAX
struct hc_blob_cell {
	const char *key; /* interned in the blob */
	int64_t value;
	uint64_t count;
	uint32_t pid;
	uint16_t idx; /* the histogram's bucket index */
	uint8_t hist;
};

struct hc_blob {
	int64_t t; /* start second */
	uint64_t period_ns;
	struct hc_blob_entry *e;
	size_t n, cap;
	uint32_t *slots; /* entry index + 1, keyed by (task, stack) */
	size_t n_slots;
	struct hc_blob_cell *c;
	size_t nc, capc;
	uint32_t *cslots;
	size_t n_cslots;
	uint64_t heat[HC_STORE_HEAT_ROWS];
	struct hc_weights total;
	struct hc_interner keys;
	/* decoding's scratch, kept from one decode to the next: a range decodes many blobs */
	uint8_t *raw;
	size_t raw_cap;
	struct hc_blob_entry *tmp;
	size_t tmp_cap;
	void *dctx; /* ZSTD_DCtx */
};

void hc_blob__init(struct hc_blob *b, int64_t t, uint64_t period_ns);
void hc_blob__release(struct hc_blob *b);
bool hc_blob__empty(const struct hc_blob *b);
int hc_blob__add(struct hc_blob *b, uint32_t task, uint32_t stack, const struct hc_weights *w);
int hc_blob__add_cell(struct hc_blob *b, uint8_t hist, uint32_t pid, const char *key, int64_t value,
		      uint64_t count);
/* Entry i's stack becomes stack[i] (entries that meet add up). 0, -ENOMEM (b then holds part
 * of its entries: release it). */
int hc_blob__restack(struct hc_blob *b, const uint32_t *stack);
/* Add everything src holds into b. 0, -ENOMEM. */
int hc_blob__add_blob(struct hc_blob *b, const struct hc_blob *src);
/* Memory the blob takes. */
size_t hc_blob__bytes(const struct hc_blob *b);

/* The compressed encoding: 0 + *out (malloc'd, *len bytes), -ENOMEM. cctx: a compression
 * context kept across calls by one thread (*cctx NULL at first; freed with
 * hc_blob__cctx_free()), or NULL for one of this call only. */
int hc_blob__encode(const struct hc_blob *b, void **cctx, int level, void **out, size_t *len);
void hc_blob__cctx_free(void *cctx);
/* src compressed into dst (cap at least ZSTD_compressBound(len)) as one zstd frame with its
 * content size and a checksum (a flipped byte fails to decode), through *cctx (created at the
 * first call): its size, or a value ZSTD_isError() says is an error. */
size_t hc_blob__compress(void **cctx, void *dst, size_t cap, const void *src, size_t len,
			 int level);
/* Add what an encoded blob holds into b (entries only when with_entries; cells only when
 * with_cells; heat always). -EBADMSG for anything that does not decode, -ENOMEM. */
int hc_blob__decode(struct hc_blob *b, const void *buf, size_t len, bool with_entries,
		    bool with_cells);

#endif
