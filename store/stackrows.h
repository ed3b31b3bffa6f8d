/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store/stackrows: the dictionary's stack rows in the file (docs/store.md, "Stack rows").
 * A stack row is two ids (parent, frame); as SQL rows, with the content index recall needs,
 * they cost ~30 bytes each, most of a steady load's dictionary. Here:
 *
 * - rows are chunks of consecutive ids (table stack_chunk: the rows (last - n, last], as
 *   varints, zstd with a checksum): ~2-5 bytes a row;
 * - recall finds a stack by content through keys: a 31-bit hash of (parent, frame) and the
 *   id. New keys are rows of stack_key (h, id); a background step moves them into packs
 *   (stack_keypack: one blob per slot of 2^17 hashes, sorted, ~5 bytes a key), dropping the
 *   keys of deleted rows on the way. A key only says where to look: the chunk is read and
 *   compared, so a stale or colliding key costs a read, never a wrong answer.
 *
 * Internal to store/; the writer's connection writes, any connection reads.
 */
#ifndef HOTCOLD_STORE_STACKROWS_H
#define HOTCOLD_STORE_STACKROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store/dict.h"

/* Rows a chunk holds at most. */
#define HC_STACKROWS_CHUNK_MAX 1024u
/* Hash slots of one pack (the hash's low bits), and the packs there are. */
#define HC_STACKROWS_SLOT_BITS 17
#define HC_STACKROWS_SLOTS (1u << (31 - HC_STACKROWS_SLOT_BITS))

/* The tables (part of the store's schema). */
extern const char hc__stackrows_schema[];

/* A reader on one connection, with the chunk it read last decoded. */
struct hc_stackrows {
	sqlite3 *db;
	sqlite3_stmt *get, *scan, *key, *pack;
	uint32_t lo, hi; /* the cached chunk: ids (lo, hi]; lo == hi: none */
	struct hc_dict_stack *v;
	size_t cap;
	uint8_t *raw;
	size_t raw_cap;
	void *dctx; /* ZSTD_DCtx */
	uint64_t chunks_read;
};

void hc__stackrows_init(struct hc_stackrows *r, sqlite3 *db);
void hc__stackrows_release(struct hc_stackrows *r);
/* Forget the cached chunk (its rows may have been deleted since). */
void hc__stackrows_forget(struct hc_stackrows *r);
/* The row of id: 0, -ENOENT (the file has none), -EBADMSG (a chunk that does not decode),
 * -errno. */
int hc__stackrows_get(struct hc_stackrows *r, uint32_t id, struct hc_dict_stack *out);
/* The rows with ids in (lo, hi], in id order, to fn(arg, id, row); a non-zero return of fn
 * stops the scan and is returned. 0, -EBADMSG, -errno. */
int hc__stackrows_scan(struct hc_stackrows *r, uint32_t lo, uint32_t hi,
		       int (*fn)(void *arg, uint32_t id, const struct hc_dict_stack *row),
		       void *arg);
/* The newest id above `above` whose row is (parent, frame): the id, 0 for none, -errno. */
int64_t hc__stackrows_find(struct hc_stackrows *r, uint32_t parent, uint32_t frame, uint32_t above);

/* The content key of a row (persisted: never change it). */
uint32_t hc__stackrows_hash(uint32_t parent, uint32_t frame);

/* Writing, on the writer's connection inside its transaction. rows[i] is id first + 1 + i;
 * with_keys false when the keys are in the file already (chunks merged). cctx: the writer's
 * zstd context (as hc_blob__encode's). 0, -errno. */
int hc__stackrows_put(sqlite3 *db, void **cctx, uint32_t first, const struct hc_dict_stack *rows,
		      size_t n, bool with_keys);
/* Delete the chunks whose rows all have ids <= below; *rows: how many rows they held.
 * Their keys stay until packing drops them. 0, -errno. */
int hc__stackrows_drop(sqlite3 *db, uint32_t below, uint64_t *rows);

/* Packing: the writer's state between rounds. */
struct hc_stackrows_packer {
	uint64_t fresh;	 /* keys in stack_key (counted at open, then as added) */
	uint64_t packed; /* keys in the packs */
	uint64_t stale;	 /* rows deleted since the last full pass (their keys may remain) */
	uint32_t next;	 /* the next slot of the pass under way; 0: none under way */
	uint32_t floor;	 /* keys of ids <= floor are dropped */
	uint64_t passes, moved, dropped;
};

/* Count what the file holds (at open). 0, -errno. */
int hc__stackrows_pack_open(sqlite3 *db, struct hc_stackrows_packer *p);
/* One step of packing, when due (fresh keys past a fraction of the packed ones, or stale
 * ones): a range of slots merged with their fresh keys, keys of ids <= floor dropped.
 * 0 (done, or nothing due), -errno (the transaction is the caller's). */
int hc__stackrows_pack_step(sqlite3 *db, struct hc_stackrows_packer *p, uint32_t floor);
/* Merge the small chunks of ids (lo, hi] into chunks of HC_STACKROWS_CHUNK_MAX rows: the
 * writer writes each transaction's new rows as a chunk of their own. *merged: chunks
 * replaced. 0, -errno. */
int hc__stackrows_compact(sqlite3 *db, void **cctx, uint32_t lo, uint32_t hi, uint64_t *merged);

#endif
