/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What the files of hc_store share (profile/store.h is the contract, docs/store.md the design
 * and the figures). Not part of the public API: only profile/store*.c include it.
 *
 *  - store_codec.c: the string pool, the open weight and histogram-cell tables, and the sealed
 *    encodings of a bucket's three parts;
 *  - store_trie.c: the path trie, the frames, and their garbage collection;
 *  - store.c: the store object, the bucket list and retention, adds, sealing, the memory cap
 *    (coarsening, early eviction) and stats;
 *  - store_query.c: the tree (with its pruning), timeline, heat, histogram and counter queries.
 *
 * Pieces:
 *  - a string pool (frame names, modules, histogram keys), each string once, with a u32 id;
 *  - frames: internal id -> (kind, name, module, id, offset, inlined), interned by content;
 *    the caller's ids map to them through the wire map, which hc_store__reset_frames()
 *    empties; frames no trie node and no wire id refers to are collected with the trie, their
 *    ids reused;
 *  - the trie: node id -> (parent node id << 32 | frame id) in one u64 array plus an
 *    open-addressing table of node ids keyed by that u64. Node 0 is the root. A node is always
 *    created after its parent, so parent id < child id; the GC renumbers monotonically and
 *    keeps that, which lets queries propagate inclusive values in one reverse sweep;
 *  - buckets, sorted by start second, each 1 s (or 10 s once coarsened) with three parts:
 *    weights (node -> hc_weights), the heat map (row -> samples) and histogram cells
 *    ((hist, pid, key, bucket index) -> count; counters are cells of their own hist numbers,
 *    merged by sum or, for a maximum, by max). Each part is open (a hash / an array, while it
 *    receives data) or sealed (a varint byte string); an add into a sealed part decodes it back
 *    to open, and the next hc_store__seal() encodes it again.
 *
 * Encodings (all LEB128 varints, so a zero costs one byte):
 *  - weights, sorted by node id: header = (node id delta << 4) | flags, flags saying which of
 *    samples, on-CPU residue, off-CPU ns and run-queue ns follow (absent = 0). The on-CPU ns are
 *    stored exactly, as the zigzag of on_cpu_ns - samples * period_ns (mod 2^64): 0, i.e. absent,
 *    when the caller's on_cpu_ns is samples x period as usual.
 *  - heat, sorted by position (second offset x HC_STORE_HEAT_ROWS + row): gap, count.
 *  - histogram cells, sorted by (hist, pid, key, bucket): header = (bucket << 1) | same series
 *    as the previous cell; hist, pid, key follow when the series changes; then the count.
 *
 * Memory is counted as the bytes asked of malloc plus MALLOC_OVERHEAD per block (glibc's
 * header and rounding), hash tables at their full slot count.
 */
#ifndef HOTCOLD_PROFILE_STORE_INT_H
#define HOTCOLD_PROFILE_STORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/varint.h"
#include "profile/hist.h"
#include "profile/store.h"

#define MALLOC_OVERHEAD 16
#define MIN_SLOTS 64
#define VARINT_MAX HC_VARINT_MAX

/* The store's short names for base/varint.h (store_codec.c and the trie use them too). */
#define put_uv hc_varint_put
#define get_uv hc_varint_get

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline bool weights_zero(const struct hc_weights *w)
{
	return !w->on_cpu_ns && !w->off_cpu_ns && !w->runqueue_ns && !w->samples;
}

/* ---- string pool ---- */

struct strpool {
	const char **strs; /* id -> string */
	uint32_t n, cap;
	uint32_t *slots; /* id + 1, 0 = empty */
	size_t n_slots;
	struct str_chunk *chunks;
	size_t chunk_bytes;
	size_t n_chunks;
};

void hc__store_sp_free(struct strpool *sp);
/* The id of s, or -1. */
int64_t hc__store_sp_find(const struct strpool *sp, const char *s);
/* Double the slots (or make the first ones); -ENOMEM. */
int hc__store_sp_grow_slots(struct strpool *sp);
/* The id of s, adding it if needed; -ENOMEM. */
int64_t hc__store_sp_intern(struct strpool *sp, const char *s);
size_t hc__store_sp_bytes(const struct strpool *sp);

/* ---- open weights: node -> hc_weights ---- */

struct wentry {
	uint32_t node;
	struct hc_weights w;
};

struct wtab {
	struct wentry *e;
	uint32_t n, cap;
	uint32_t *slots; /* index + 1 */
	uint32_t n_slots;
};

/* An empty table with room for about hint entries; NULL when out of memory. */
struct wtab *hc__store_wtab_new(uint32_t hint);
void hc__store_wtab_free(struct wtab *t);
size_t hc__store_wtab_bytes(const struct wtab *t);
/* Add w to node's entry (created if new); -ENOMEM. */
int hc__store_wtab_add(struct wtab *t, uint32_t node, const struct hc_weights *w);
/* Rebuild the slots in place after the entries moved (no allocation). */
void hc__store_wtab_reindex(struct wtab *t);

/* ---- open histogram cells ---- */

struct hcell {
	uint32_t pid;
	uint32_t key; /* string id */
	uint16_t idx; /* bucket index */
	uint8_t hist; /* enum hc_store_hist, or CELL_COUNTER + enum hc_store_counter */
	uint64_t count;
};

/* Counters are cells too (bucket index 0, pid 0), numbered after the histograms: the encoding,
 * coarsening and eviction of cells then hold them without a line of their own. */
#define CELL_COUNTER HC_STORE_H_MAX
#define CELL_MAX_NS (CELL_COUNTER + HC_STORE_C_LOCK_MAX_NS)

struct htab {
	struct hcell *c;
	uint32_t n, cap;
	uint32_t *slots;
	uint32_t n_slots;
};

struct htab *hc__store_htab_new(void);
void hc__store_htab_free(struct htab *t);
size_t hc__store_htab_bytes(const struct htab *t);
/* Merge cell into the table (sum, or max for a maximum); -ENOMEM. */
int hc__store_htab_add(struct htab *t, const struct hcell *cell);
/* hc__store_htab_add() as a hc__store_bucket_each_cell() callback (ctx: the htab). */
int hc__store_htab_add_cb(void *ctx, const struct hcell *c);
/* qsort() order of cells: hist, pid, key, bucket index. */
int hc__store_hcell_cmp(const void *a, const void *b);

/* ---- buckets ---- */

struct bucket {
	int64_t start_s;
	uint32_t span_s; /* 1, or COARSE_SPAN_S */
	struct hc_weights total;
	/* weights: open (w_open) or sealed (w_enc, w_len bytes, w_n entries), or neither */
	struct wtab *w_open;
	uint8_t *w_enc;
	size_t w_len;
	uint32_t w_n;
	/* heat map: open (HC_STORE_HEAT_ROWS x span_s counts) or sealed */
	uint64_t *heat_open;
	uint8_t *heat_enc;
	size_t heat_len;
	/* histogram cells */
	struct htab *h_open;
	uint8_t *h_enc;
	size_t h_len;
	size_t bytes; /* accounted heap, what st->bucket_bytes holds for it */
};

struct frame {
	const char *name;   /* pool */
	const char *module; /* pool or NULL */
	uint64_t id;
	int64_t offset;
	uint8_t kind;
	bool inlined;
};

struct trie {
	uint64_t *key; /* node -> parent << 32 | frame; key[0] (the root) is 0 */
	uint32_t n, cap;
	uint32_t *slots; /* node ids; 0 = empty (the root is never in the table) */
	size_t n_slots;
};

struct hc_store {
	struct hc_store_opts o;
	struct strpool sp;
	struct frame *frames;	       /* internal id - 1; kind 0: free */
	uint32_t n_frames, cap_frames; /* slots used (live and free), allocated */
	uint32_t live_frames;
	uint32_t *free_frames; /* internal ids to reuse */
	uint32_t n_free, cap_free;
	uint32_t *fslots; /* content hash of live frames: internal ids, 0 = empty */
	size_t n_fslots;
	uint32_t *wmap; /* caller's frame id - 1 -> internal id */
	uint32_t n_wmap, cap_wmap;
	struct trie trie;
	uint32_t live_after_gc; /* trie nodes right after the last GC (or 1) */
	bool dropped_since_gc;	/* buckets were dropped since: the trie may hold garbage */

	struct bucket **bk; /* sorted by start_s, non-overlapping */
	size_t n_bk, cap_bk;
	size_t bucket_bytes;

	bool has_clock;
	int64_t newest_s;	  /* the retention clock: newest second added or sealed */
	int64_t evict_floor_s;	  /* seconds below were evicted early */
	int64_t sealed_through_s; /* hc_store__seal() was called up to here */

	uint8_t *scratch; /* encoder output */
	size_t scratch_cap;

	struct hc_hist *shape[HC_STORE_H_MAX]; /* empty templates: bucket index <-> value */

	uint64_t expired_adds, expired_ns, evicted_early, gc_runs;
};

/* ---- weights encoding ---- */

#define WF_SAMPLES 1u
#define WF_ON 2u
#define WF_OFF 4u
#define WF_RQ 8u

static inline uint8_t *put_wentry(uint8_t *p, uint32_t delta, const struct hc_weights *w,
				  uint64_t period_ns)
{
	uint64_t resid = hc_zigzag(w->on_cpu_ns - w->samples * period_ns);
	uint64_t flags = (w->samples ? WF_SAMPLES : 0) | (resid ? WF_ON : 0) |
			 (w->off_cpu_ns ? WF_OFF : 0) | (w->runqueue_ns ? WF_RQ : 0);

	p = put_uv(p, (uint64_t)delta << 4 | flags);
	if (w->samples)
		p = put_uv(p, w->samples);
	if (resid)
		p = put_uv(p, resid);
	if (w->off_cpu_ns)
		p = put_uv(p, w->off_cpu_ns);
	if (w->runqueue_ns)
		p = put_uv(p, w->runqueue_ns);
	return p;
}

/* Decode one entry; *node holds the previous node id (0 at the start). */
static inline const uint8_t *get_wentry(const uint8_t *p, uint32_t *node, struct hc_weights *w,
					uint64_t period_ns)
{
	uint64_t hdr, v = 0;

	p = get_uv(p, &hdr);
	*node += (uint32_t)(hdr >> 4);
	w->samples = 0;
	w->off_cpu_ns = 0;
	w->runqueue_ns = 0;
	if (hdr & WF_SAMPLES)
		p = get_uv(p, &w->samples);
	if (hdr & WF_ON)
		p = get_uv(p, &v);
	w->on_cpu_ns = w->samples * period_ns + hc_unzigzag(v);
	if (hdr & WF_OFF)
		p = get_uv(p, &w->off_cpu_ns);
	if (hdr & WF_RQ)
		p = get_uv(p, &w->runqueue_ns);
	return p;
}

/* Call fn(pos, count) for every non-zero position of a sealed heat encoding. */
#define HEAT_EACH(enc, len, pos, count, ...)                      \
	do {                                                      \
		const uint8_t *p_ = (enc), *end_ = (enc) + (len); \
		uint64_t next_ = 0, gap_;                         \
		while (p_ < end_) {                               \
			p_ = get_uv(p_, &gap_);                   \
			p_ = get_uv(p_, &(count));                \
			(pos) = next_ + gap_;                     \
			next_ = (pos) + 1;                        \
			__VA_ARGS__;                              \
		}                                                 \
	} while (0)

/* ---- a bucket's parts: open, sealed (store_codec.c) ---- */

/* Seal (encode) every open part of b and account it; -ENOMEM leaves the parts not sealed
 * open. */
int hc__store_seal_bucket(struct hc_store *st, struct bucket *b);
/* Make b's weights, heat map or histogram cells open (decoding them if sealed); -ENOMEM. */
int hc__store_open_weights(struct hc_store *st, struct bucket *b);
int hc__store_open_heat(struct bucket *b);
int hc__store_open_hist(struct bucket *b);
/* Call fn for every weights entry / histogram cell of b (open or sealed); fn's non-zero
 * return stops the walk and is returned. */
int hc__store_bucket_each_weight(const struct hc_store *st, const struct bucket *b,
				 int (*fn)(void *ctx, uint32_t node, const struct hc_weights *w),
				 void *ctx);
int hc__store_bucket_each_cell(const struct bucket *b, int (*fn)(void *ctx, const struct hcell *c),
			       void *ctx);

/* ---- trie ---- */

static inline uint32_t trie_parent(const struct trie *t, uint32_t node)
{
	return (uint32_t)(t->key[node] >> 32);
}

static inline uint32_t trie_frame(const struct trie *t, uint32_t node)
{
	return (uint32_t)t->key[node];
}

/* Rebuild the slot table with n_slots (a power of two) slots; -ENOMEM. */
int hc__store_trie_rehash(struct trie *t, size_t n_slots);
/* The child of parent for frame, created if needed: its id (> 0), or -ENOMEM. */
int64_t hc__store_trie_child(struct trie *t, uint32_t parent, uint32_t frame);
size_t hc__store_trie_bytes(const struct trie *t);
/* The internal id of frame f, created if new: > 0, or -ENOMEM. */
int64_t hc__store_frame_intern(struct hc_store *st, const struct frame *f);
/* Collect the trie nodes no bucket references, then the frames no node refers to; -ENOMEM
 * (nothing collected). */
int hc__store_trie_gc(struct hc_store *st);

/* ---- the store (store.c) ---- */

/* An empty histogram of h's shape; NULL + errno. */
struct hc_hist *hc__store_hist_new_shape(enum hc_store_hist h);
/* Recount b's heap into st->bucket_bytes after its parts changed. */
void hc__store_bucket_account(struct hc_store *st, struct bucket *b);
/* Index of the first bucket with start_s >= sec. */
size_t hc__store_bk_lower(const struct hc_store *st, int64_t sec);
/* The bucket holding second sec, or NULL. */
const struct bucket *hc__store_bk_containing(const struct hc_store *st, int64_t sec);

#endif
