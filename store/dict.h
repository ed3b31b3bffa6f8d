/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store/dict: one epoch of the disk store's dictionary in memory (docs/store.md, "The
 * dictionary's epochs"): frames, tasks and stacks, each an array of entries with ids
 * base + 1 .. base + n (ids are unique across epochs: an epoch starts where the one before
 * ended) and a hash from content to id, plus aliases: ids of older epochs already translated
 * into this one (content copied under a new id), and adopted entries: entries of older epochs
 * taken in under their own ids (their rows stay in the file where they are). Entries are only
 * appended; those past `persisted` are not in the file yet. The ingest thread interns; reads from
 * other threads take `lock` for reading, appends take it for writing. Internal to store/.
 */
#ifndef HOTCOLD_STORE_DICT_H
#define HOTCOLD_STORE_DICT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/intern.h"
#include "profile/tree.h"

enum hc_dict_table {
	HC_DICT_FRAMES,
	HC_DICT_TASKS,
	HC_DICT_STACKS,
	HC_DICT_TABLES,
};

struct hc_dict_frame {
	const char *name, *module; /* interned; module may be NULL */
	uint64_t id;
	int64_t offset;
	uint8_t kind;
	bool inlined;
};

struct hc_dict_task {
	const char *process, *thread; /* interned */
	uint32_t pid, tid;
};

/* A trie node: the stack `parent` (0: none) extended by `frame` (ids of the same epoch). */
struct hc_dict_stack {
	uint32_t parent, frame;
};

/* Open addressing, linear probing, at most half full; 0: an empty slot. */
struct hc_dict_index {
	uint32_t *slots; /* local index, from 1 */
	size_t cap;	 /* a power of two, or 0 */
};

struct hc_dict_alias {
	uint64_t *slots; /* an older epoch's id << 32 | local index */
	size_t cap, n;
};

struct hc_dict_adopted {
	void *v;	  /* entries */
	uint32_t *ids;	  /* their ids */
	uint32_t *origin; /* the epoch whose rows hold each */
	size_t n, cap;
	uint64_t *map; /* id << 32 | index + 1, open addressing */
	size_t map_cap;
};

struct hc_dict_tab {
	void *v; /* entries: struct hc_dict_frame, _task or _stack */
	size_t n, cap;
	size_t persisted;	 /* entries [0, persisted) are in the file */
	uint32_t base;		 /* ids base + 1 .. base + n */
	struct hc_dict_index ix; /* keyed by content: own and adopted entries */
	struct hc_dict_alias alias;
	struct hc_dict_adopted ad;
};

struct hc_dict {
	pthread_rwlock_t lock;
	uint64_t epoch;
	/* the oldest epoch whose rows its entries are (adopted ones' included); written under
	 * lock */
	uint64_t oldest_origin;
	struct hc_interner strings;
	struct hc_dict_tab t[HC_DICT_TABLES];
	/* the disk store's bookkeeping, under its mutex: references held (the disk's own, one
	 * per query reading it) and its list of retired epochs not yet freed */
	unsigned int refs;
	bool written; /* retired and all of it in the file */
	struct hc_dict *next;
};

/* Stack ids stay below this: a coarse tier's entries mark "[small stacks]" with the top bit
 * (store/fold.h). */
#define HC_DICT_STACK_ID_MAX 0x7fffffffu

/* An empty epoch whose ids start after base[table]; NULL + errno. */
struct hc_dict *hc_dict__new(uint64_t epoch, const uint32_t base[HC_DICT_TABLES]);
void hc_dict__free(struct hc_dict *d);
/* Interned ids, or -EINVAL (bad element, ids not of this epoch), -ENOMEM, -EOVERFLOW (ids
 * exhausted). Appends take d->lock for writing. */
int64_t hc_dict__frame(struct hc_dict *d, const struct hc_path_elem *e);
int64_t hc_dict__task(struct hc_dict *d, uint32_t pid, uint32_t tid, const char *process,
		      const char *thread);
int64_t hc_dict__stack(struct hc_dict *d, uint32_t parent, uint32_t frame);
/* The id of an entry with that content, or 0; adds nothing (d may be a retired epoch only the
 * ingest thread writes). */
uint32_t hc_dict__find_frame(const struct hc_dict *d, const struct hc_path_elem *e);
uint32_t hc_dict__find_task(const struct hc_dict *d, uint32_t pid, uint32_t tid,
			    const char *process, const char *thread);
uint32_t hc_dict__find_stack(const struct hc_dict *d, uint32_t parent, uint32_t frame);
/* Entry e of an older epoch (from another dictionary: its strings are interned here), id its
 * id there and origin the epoch whose rows hold it, taken in under the same id: id (or the id
 * of an entry this epoch has with that content), -ENOMEM. A stack's parent and frame must be
 * ids this epoch has. */
int64_t hc_dict__adopt(struct hc_dict *d, enum hc_dict_table t, const void *e, uint32_t id,
		       uint64_t origin);
/* The epoch whose rows hold an id this epoch has (its own, or an adopted one's origin). */
uint64_t hc_dict__origin(const struct hc_dict *d, enum hc_dict_table t, uint32_t id);
/* Whether id is one of this epoch's. */
bool hc_dict__has(const struct hc_dict *d, enum hc_dict_table t, uint32_t id);
/* The entry of an id this epoch has (valid under the read lock, or on the ingest thread). */
const void *hc_dict__entry(const struct hc_dict *d, enum hc_dict_table t, uint32_t id);
/* The path elements of a frame id this epoch has (strings live as long as d). */
void hc_dict__elem(const struct hc_dict *d, uint32_t frame, struct hc_path_elem *out);
/* The id here of an older epoch's id already translated (noted as used), or 0; noting one;
 * the aliases used since they were noted, from *i = 0 on (false past the last). */
uint32_t hc_dict__alias(struct hc_dict *d, enum hc_dict_table t, uint32_t old);
int hc_dict__alias_add(struct hc_dict *d, enum hc_dict_table t, uint32_t old, uint32_t id);
bool hc_dict__alias_next(const struct hc_dict *d, enum hc_dict_table t, size_t *i, uint32_t *old,
			 uint32_t *id);
/* Entries of all tables, adopted ones included. */
size_t hc_dict__entries(const struct hc_dict *d);
/* Memory in use; and what it would be once `extra` more entries went into each table. */
size_t hc_dict__bytes(const struct hc_dict *d);
size_t hc_dict__bytes_after(const struct hc_dict *d, size_t extra);

#endif
