// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_store: the continuous profile of `hotcold serve` (profile/store.h is the contract,
 * docs/store.md the design and the figures).
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
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "profile/profile_internal.h"
#include "profile/store.h"

#define MALLOC_OVERHEAD 16
#define DEFAULT_RETENTION_S 3600
#define DEFAULT_MAX_BYTES ((size_t)32 << 20)
#define COARSE_SPAN_S 10
/* Coarsening never touches the newest minute: the default range of the API stays exact. */
#define KEEP_FINE_S 60
/* Trie GC: when the trie has doubled since the last one and holds at least this many nodes,
 * or, over max_bytes, when it has grown by a quarter. */
#define GC_MIN_NODES 16384
#define MIN_SLOTS 64
#define TRIE_MAX_NODES ((size_t)UINT32_MAX - 2)
#define STR_CHUNK_SIZE (16 * 1024)
#define VARINT_MAX 10
/* Estimated heap of one hc_hist template (struct, unit, empty series table). */
#define HIST_TEMPLATE_BYTES 256

/* ---- varints ---- */

static inline uint8_t *put_uv(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline const uint8_t *get_uv(const uint8_t *p, uint64_t *v)
{
	uint64_t r = 0;
	unsigned int shift = 0;

	while (*p & 0x80) {
		r |= (uint64_t)(*p++ & 0x7f) << shift;
		shift += 7;
	}
	*v = r | (uint64_t)*p++ << shift;
	return p;
}

static inline uint64_t zigzag(uint64_t v)
{
	return (v << 1) ^ (0 - (v >> 63));
}

static inline uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

static inline uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;

	return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

static inline int64_t sat_sub_s64(int64_t a, uint64_t b)
{
	int64_t r;

	if (b > (uint64_t)INT64_MAX || __builtin_sub_overflow(a, (int64_t)b, &r))
		return INT64_MIN;
	return r;
}

static inline int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static inline bool weights_zero(const struct hc_weights *w)
{
	return !w->on_cpu_ns && !w->off_cpu_ns && !w->runqueue_ns && !w->samples;
}

/* ---- string pool ---- */

struct str_chunk {
	struct str_chunk *next;
	size_t used, size;
	char data[];
};

struct strpool {
	const char **strs; /* id -> string */
	uint32_t n, cap;
	uint32_t *slots; /* id + 1, 0 = empty */
	size_t n_slots;
	struct str_chunk *chunks;
	size_t chunk_bytes;
	size_t n_chunks;
};

static uint64_t hash_str(const char *s)
{
	return hc_hash_mix(hc_hash_fnv1a(HC_FNV1A_OFFSET, s, strlen(s)));
}

static void sp_free(struct strpool *sp)
{
	struct str_chunk *c, *next;

	for (c = sp->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(sp->strs);
	free(sp->slots);
}

/* The id of s, or -1. */
static int64_t sp_find(const struct strpool *sp, const char *s)
{
	size_t mask = sp->n_slots - 1, i;

	if (!sp->n_slots)
		return -1;
	for (i = hash_str(s) & mask; sp->slots[i]; i = (i + 1) & mask) {
		if (strcmp(sp->strs[sp->slots[i] - 1], s) == 0)
			return sp->slots[i] - 1;
	}
	return -1;
}

static int sp_grow_slots(struct strpool *sp)
{
	size_t n = sp->n_slots ? sp->n_slots * 2 : MIN_SLOTS;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 0; id < sp->n; id++) {
		size_t i;

		for (i = hash_str(sp->strs[id]) & (n - 1); slots[i]; i = (i + 1) & (n - 1))
			;
		slots[i] = id + 1;
	}
	free(sp->slots);
	sp->slots = slots;
	sp->n_slots = n;
	return 0;
}

/* The id of s, adding it if needed; -ENOMEM. */
static int64_t sp_intern(struct strpool *sp, const char *s)
{
	int64_t id = sp_find(sp, s);
	size_t len = strlen(s) + 1, i, mask;
	struct str_chunk *c;
	char *copy;

	if (id >= 0)
		return id;
	if (sp->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((sp->n + 1) * 10 > sp->n_slots * 7 && sp_grow_slots(sp))
		return -ENOMEM;
	if (sp->n == sp->cap) {
		uint32_t cap = sp->cap ? sp->cap * 2 : 64;
		const char **strs = realloc(sp->strs, cap * sizeof(*strs));

		if (!strs)
			return -ENOMEM;
		sp->strs = strs;
		sp->cap = cap;
	}
	c = sp->chunks;
	if (!c || c->size - c->used < len) {
		size_t size = len > STR_CHUNK_SIZE / 4 ? len : STR_CHUNK_SIZE;

		c = malloc(sizeof(*c) + size);
		if (!c)
			return -ENOMEM;
		c->size = size;
		c->used = 0;
		if (sp->chunks && size != STR_CHUNK_SIZE) {
			/* keep the partly used chunk at the head for small strings */
			c->next = sp->chunks->next;
			sp->chunks->next = c;
		} else {
			c->next = sp->chunks;
			sp->chunks = c;
		}
		sp->chunk_bytes += sizeof(*c) + size;
		sp->n_chunks++;
	}
	copy = c->data + c->used;
	c->used += len;
	memcpy(copy, s, len);
	mask = sp->n_slots - 1;
	for (i = hash_str(s) & mask; sp->slots[i]; i = (i + 1) & mask)
		;
	sp->slots[i] = sp->n + 1;
	sp->strs[sp->n] = copy;
	return sp->n++;
}

static size_t sp_bytes(const struct strpool *sp)
{
	return sp->chunk_bytes + sp->n_chunks * MALLOC_OVERHEAD + sp->cap * sizeof(*sp->strs) +
	       sp->n_slots * sizeof(*sp->slots) + 2 * MALLOC_OVERHEAD;
}

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

static inline size_t node_hash(uint32_t node)
{
	return (size_t)hc_hash_mix((uint64_t)node * HC_HASH_GOLDEN);
}

static void wtab_free(struct wtab *t)
{
	if (!t)
		return;
	free(t->e);
	free(t->slots);
	free(t);
}

static size_t wtab_bytes(const struct wtab *t)
{
	if (!t)
		return 0;
	return sizeof(*t) + (size_t)t->cap * sizeof(*t->e) +
	       (size_t)t->n_slots * sizeof(*t->slots) + 3 * MALLOC_OVERHEAD;
}

static int wtab_rehash(struct wtab *t, uint32_t n_slots)
{
	uint32_t *slots = calloc(n_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t k = 0; k < t->n; k++) {
		size_t i;

		for (i = node_hash(t->e[k].node) & (n_slots - 1); slots[i];
		     i = (i + 1) & (n_slots - 1))
			;
		slots[i] = k + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n_slots;
	return 0;
}

/* Rebuild the slots in place after the entries moved (no allocation). */
static void wtab_reindex(struct wtab *t)
{
	memset(t->slots, 0, (size_t)t->n_slots * sizeof(*t->slots));
	for (uint32_t k = 0; k < t->n; k++) {
		size_t i;

		for (i = node_hash(t->e[k].node) & (t->n_slots - 1); t->slots[i];
		     i = (i + 1) & (t->n_slots - 1))
			;
		t->slots[i] = k + 1;
	}
}

static struct wtab *wtab_new(uint32_t hint)
{
	struct wtab *t = calloc(1, sizeof(*t));
	uint32_t n = MIN_SLOTS;

	if (!t)
		return NULL;
	while (n < hint * 2 && n < (1u << 30))
		n *= 2;
	if (wtab_rehash(t, n)) {
		free(t);
		return NULL;
	}
	return t;
}

static int wtab_add(struct wtab *t, uint32_t node, const struct hc_weights *w)
{
	uint32_t mask = t->n_slots - 1;
	size_t i;

	for (i = node_hash(node) & mask; t->slots[i]; i = (i + 1) & mask) {
		struct wentry *e = &t->e[t->slots[i] - 1];

		if (e->node == node) {
			hc_weights__add(&e->w, w);
			return 0;
		}
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct wentry *e;

		if (t->cap >= (1u << 30))
			return -ENOMEM;
		e = realloc(t->e, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		t->e = e;
		t->cap = cap;
	}
	if ((t->n + 1) * 10 > t->n_slots * 7) {
		if (wtab_rehash(t, t->n_slots * 2))
			return -ENOMEM;
		mask = t->n_slots - 1;
		for (i = node_hash(node) & mask; t->slots[i]; i = (i + 1) & mask)
			;
	}
	t->e[t->n].node = node;
	t->e[t->n].w = *w;
	t->slots[i] = ++t->n;
	return 0;
}

static int wentry_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct wentry *)a)->node, y = ((const struct wentry *)b)->node;

	return x < y ? -1 : x > y;
}

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

/* What two cells of one (hist, pid, key, bucket) make: a sum, or for a maximum its max. */
static inline uint64_t cell_merge(uint8_t hist, uint64_t a, uint64_t b)
{
	if (hist == CELL_MAX_NS)
		return a > b ? a : b;
	return sat_add(a, b);
}

struct htab {
	struct hcell *c;
	uint32_t n, cap;
	uint32_t *slots;
	uint32_t n_slots;
};

static inline size_t cell_hash(const struct hcell *c)
{
	uint64_t k[2] = {(uint64_t)c->pid << 32 | c->key, (uint64_t)c->hist << 16 | c->idx};

	return (size_t)hc_hash_words(k, 2, 0);
}

static inline bool cell_same(const struct hcell *a, const struct hcell *b)
{
	return a->pid == b->pid && a->key == b->key && a->idx == b->idx && a->hist == b->hist;
}

static void htab_free(struct htab *t)
{
	if (!t)
		return;
	free(t->c);
	free(t->slots);
	free(t);
}

static size_t htab_bytes(const struct htab *t)
{
	if (!t)
		return 0;
	return sizeof(*t) + (size_t)t->cap * sizeof(*t->c) +
	       (size_t)t->n_slots * sizeof(*t->slots) + 3 * MALLOC_OVERHEAD;
}

static int htab_rehash(struct htab *t, uint32_t n_slots)
{
	uint32_t *slots = calloc(n_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t k = 0; k < t->n; k++) {
		size_t i;

		for (i = cell_hash(&t->c[k]) & (n_slots - 1); slots[i]; i = (i + 1) & (n_slots - 1))
			;
		slots[i] = k + 1;
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n_slots;
	return 0;
}

static void htab_reindex(struct htab *t)
{
	memset(t->slots, 0, (size_t)t->n_slots * sizeof(*t->slots));
	for (uint32_t k = 0; k < t->n; k++) {
		size_t i;

		for (i = cell_hash(&t->c[k]) & (t->n_slots - 1); t->slots[i];
		     i = (i + 1) & (t->n_slots - 1))
			;
		t->slots[i] = k + 1;
	}
}

static struct htab *htab_new(void)
{
	struct htab *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (htab_rehash(t, MIN_SLOTS)) {
		free(t);
		return NULL;
	}
	return t;
}

static int htab_add(struct htab *t, const struct hcell *cell)
{
	uint32_t mask = t->n_slots - 1;
	size_t h = cell_hash(cell), i;

	for (i = h & mask; t->slots[i]; i = (i + 1) & mask) {
		struct hcell *c = &t->c[t->slots[i] - 1];

		if (cell_same(c, cell)) {
			c->count = cell_merge(c->hist, c->count, cell->count);
			return 0;
		}
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct hcell *c;

		if (t->cap >= (1u << 30))
			return -ENOMEM;
		c = realloc(t->c, cap * sizeof(*c));
		if (!c)
			return -ENOMEM;
		t->c = c;
		t->cap = cap;
	}
	if ((t->n + 1) * 10 > t->n_slots * 7) {
		if (htab_rehash(t, t->n_slots * 2))
			return -ENOMEM;
		mask = t->n_slots - 1;
		for (i = h & mask; t->slots[i]; i = (i + 1) & mask)
			;
	}
	t->c[t->n] = *cell;
	t->slots[i] = ++t->n;
	return 0;
}

static int hcell_cmp(const void *a, const void *b)
{
	const struct hcell *x = a, *y = b;

	if (x->hist != y->hist)
		return x->hist < y->hist ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

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

static const char *const hist_names[HC_STORE_H_MAX] = {
	[HC_STORE_H_PRIORITY] = "priority",
	[HC_STORE_H_RUNQ_LENGTH] = "runqueue_length",
	[HC_STORE_H_ONCPU_SLICE_US] = "oncpu_slice_us",
	[HC_STORE_H_OFFCPU_US] = "offcpu_us",
	[HC_STORE_H_RUNQ_LATENCY_US] = "runqueue_latency_us",
	[HC_STORE_H_LOCK_WAIT_NS] = "lock_wait_ns",
};

const char *hc_store_hist__name(enum hc_store_hist h)
{
	if ((unsigned int)h >= HC_STORE_H_MAX)
		return NULL;
	return hist_names[h];
}

int hc_store_hist__by_name(const char *name)
{
	if (!name)
		return -1;
	for (int h = 0; h < HC_STORE_H_MAX; h++) {
		if (strcmp(hist_names[h], name) == 0)
			return h;
	}
	return -1;
}

static struct hc_hist *hist_new_shape(enum hc_store_hist h)
{
	switch (h) {
	case HC_STORE_H_PRIORITY:
		return hc_hist__new_lquantize("prio", 0, 140, 10);
	case HC_STORE_H_RUNQ_LENGTH:
		return hc_hist__new_lquantize("tasks", 0, 32, 1);
	case HC_STORE_H_LOCK_WAIT_NS:
		return hc_hist__new_quantize("ns");
	default:
		return hc_hist__new_quantize("us");
	}
}

struct hc_hist *hc_store_hist__new(enum hc_store_hist h)
{
	if ((unsigned int)h >= HC_STORE_H_MAX) {
		errno = EINVAL;
		return NULL;
	}
	return hist_new_shape(h);
}

static size_t bucket_bytes(const struct bucket *b)
{
	size_t n = sizeof(*b) + MALLOC_OVERHEAD;

	n += wtab_bytes(b->w_open) + htab_bytes(b->h_open);
	if (b->w_enc)
		n += b->w_len + MALLOC_OVERHEAD;
	if (b->heat_open)
		n += (size_t)HC_STORE_HEAT_ROWS * b->span_s * sizeof(uint64_t) + MALLOC_OVERHEAD;
	if (b->heat_enc)
		n += b->heat_len + MALLOC_OVERHEAD;
	if (b->h_enc)
		n += b->h_len + MALLOC_OVERHEAD;
	return n;
}

static void bucket_account(struct hc_store *st, struct bucket *b)
{
	st->bucket_bytes -= b->bytes;
	b->bytes = bucket_bytes(b);
	st->bucket_bytes += b->bytes;
}

static void bucket_free(struct bucket *b)
{
	if (!b)
		return;
	wtab_free(b->w_open);
	free(b->w_enc);
	free(b->heat_open);
	free(b->heat_enc);
	htab_free(b->h_open);
	free(b->h_enc);
	free(b);
}

static inline bool bucket_is_open(const struct bucket *b)
{
	return b->w_open || b->heat_open || b->h_open;
}

/* Room for an encoding of `need` bytes in st->scratch. */
static int scratch_reserve(struct hc_store *st, size_t need)
{
	uint8_t *p;
	size_t cap;

	if (need <= st->scratch_cap)
		return 0;
	cap = st->scratch_cap ? st->scratch_cap : 4096;
	while (cap < need)
		cap *= 2;
	p = realloc(st->scratch, cap);
	if (!p)
		return -ENOMEM;
	st->scratch = p;
	st->scratch_cap = cap;
	return 0;
}

/* A malloc'd copy of scratch[0, len) (NULL for len 0: *ok says whether that is an error). */
static uint8_t *scratch_copy(const struct hc_store *st, size_t len, bool *ok)
{
	uint8_t *p;

	*ok = true;
	if (!len)
		return NULL;
	p = malloc(len);
	if (!p) {
		*ok = false;
		return NULL;
	}
	memcpy(p, st->scratch, len);
	return p;
}

/* ---- weights encoding ---- */

#define WF_SAMPLES 1u
#define WF_ON 2u
#define WF_OFF 4u
#define WF_RQ 8u

static inline uint8_t *put_wentry(uint8_t *p, uint32_t delta, const struct hc_weights *w,
				  uint64_t period_ns)
{
	uint64_t resid = zigzag(w->on_cpu_ns - w->samples * period_ns);
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
	w->on_cpu_ns = w->samples * period_ns + unzigzag(v);
	if (hdr & WF_OFF)
		p = get_uv(p, &w->off_cpu_ns);
	if (hdr & WF_RQ)
		p = get_uv(p, &w->runqueue_ns);
	return p;
}

#define WENTRY_MAX (5 * VARINT_MAX)

static int seal_weights(struct hc_store *st, struct bucket *b)
{
	struct wtab *t = b->w_open;
	uint32_t prev = 0;
	uint8_t *p, *enc;
	bool ok;
	int err;

	if (!t)
		return 0;
	err = scratch_reserve(st, (size_t)t->n * WENTRY_MAX);
	if (err)
		return err;
	if (t->n > 1)
		qsort(t->e, t->n, sizeof(*t->e), wentry_cmp);
	p = st->scratch;
	for (uint32_t k = 0; k < t->n; k++) {
		p = put_wentry(p, t->e[k].node - prev, &t->e[k].w, st->o.period_ns);
		prev = t->e[k].node;
	}
	enc = scratch_copy(st, (size_t)(p - st->scratch), &ok);
	if (!ok) {
		wtab_reindex(t); /* the sort moved the entries */
		return -ENOMEM;
	}
	b->w_enc = enc;
	b->w_len = (size_t)(p - st->scratch);
	b->w_n = t->n;
	wtab_free(t);
	b->w_open = NULL;
	return 0;
}

/* Add every sealed entry of enc to t. */
static int wtab_add_encoded(struct wtab *t, const uint8_t *enc, size_t len, uint64_t period_ns)
{
	const uint8_t *p = enc, *end = enc + len;
	uint32_t node = 0;
	struct hc_weights w;
	int err;

	while (p < end) {
		p = get_wentry(p, &node, &w, period_ns);
		err = wtab_add(t, node, &w);
		if (err)
			return err;
	}
	return 0;
}

/* Make b's weights open (decoding them if sealed). */
static int open_weights(struct hc_store *st, struct bucket *b)
{
	struct wtab *t;

	if (b->w_open)
		return 0;
	t = wtab_new(b->w_n);
	if (!t)
		return -ENOMEM;
	if (b->w_enc && wtab_add_encoded(t, b->w_enc, b->w_len, st->o.period_ns)) {
		wtab_free(t);
		return -ENOMEM;
	}
	free(b->w_enc);
	b->w_enc = NULL;
	b->w_len = 0;
	b->w_n = 0;
	b->w_open = t;
	return 0;
}

/* Call fn for every weights entry of b (open or sealed). */
static int bucket_each_weight(const struct hc_store *st, const struct bucket *b,
			      int (*fn)(void *ctx, uint32_t node, const struct hc_weights *w),
			      void *ctx)
{
	int err;

	if (b->w_open) {
		for (uint32_t k = 0; k < b->w_open->n; k++) {
			err = fn(ctx, b->w_open->e[k].node, &b->w_open->e[k].w);
			if (err)
				return err;
		}
	} else if (b->w_enc) {
		const uint8_t *p = b->w_enc, *end = b->w_enc + b->w_len;
		uint32_t node = 0;
		struct hc_weights w;

		while (p < end) {
			p = get_wentry(p, &node, &w, st->o.period_ns);
			err = fn(ctx, node, &w);
			if (err)
				return err;
		}
	}
	return 0;
}

/* ---- heat encoding ---- */

static int seal_heat(struct hc_store *st, struct bucket *b)
{
	size_t n = (size_t)HC_STORE_HEAT_ROWS * b->span_s, next = 0;
	uint8_t *p, *enc;
	bool ok;
	int err;

	if (!b->heat_open)
		return 0;
	err = scratch_reserve(st, n * 2 * VARINT_MAX);
	if (err)
		return err;
	p = st->scratch;
	for (size_t pos = 0; pos < n; pos++) {
		if (!b->heat_open[pos])
			continue;
		p = put_uv(p, pos - next);
		p = put_uv(p, b->heat_open[pos]);
		next = pos + 1;
	}
	enc = scratch_copy(st, (size_t)(p - st->scratch), &ok);
	if (!ok)
		return -ENOMEM;
	b->heat_enc = enc;
	b->heat_len = (size_t)(p - st->scratch);
	free(b->heat_open);
	b->heat_open = NULL;
	return 0;
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

static int open_heat(struct bucket *b)
{
	uint64_t *h, pos, count;

	if (b->heat_open)
		return 0;
	h = calloc((size_t)HC_STORE_HEAT_ROWS * b->span_s, sizeof(*h));
	if (!h)
		return -ENOMEM;
	if (b->heat_enc)
		HEAT_EACH(b->heat_enc, b->heat_len, pos, count, h[pos] = count);
	free(b->heat_enc);
	b->heat_enc = NULL;
	b->heat_len = 0;
	b->heat_open = h;
	return 0;
}

/* ---- histogram cell encoding ---- */

#define HCELL_MAX (5 * VARINT_MAX)

static int seal_hist(struct hc_store *st, struct bucket *b)
{
	struct htab *t = b->h_open;
	const struct hcell *prev = NULL;
	uint8_t *p, *enc;
	bool ok;
	int err;

	if (!t)
		return 0;
	err = scratch_reserve(st, (size_t)t->n * HCELL_MAX);
	if (err)
		return err;
	if (t->n > 1)
		qsort(t->c, t->n, sizeof(*t->c), hcell_cmp);
	p = st->scratch;
	for (uint32_t k = 0; k < t->n; k++) {
		const struct hcell *c = &t->c[k];
		bool same =
			prev && prev->hist == c->hist && prev->pid == c->pid && prev->key == c->key;

		p = put_uv(p, (uint64_t)c->idx << 1 | same);
		if (!same) {
			p = put_uv(p, c->hist);
			p = put_uv(p, c->pid);
			p = put_uv(p, c->key);
		}
		p = put_uv(p, c->count);
		prev = c;
	}
	enc = scratch_copy(st, (size_t)(p - st->scratch), &ok);
	if (!ok) {
		htab_reindex(t);
		return -ENOMEM;
	}
	b->h_enc = enc;
	b->h_len = (size_t)(p - st->scratch);
	htab_free(t);
	b->h_open = NULL;
	return 0;
}

static inline const uint8_t *get_hcell(const uint8_t *p, struct hcell *c)
{
	uint64_t hdr, v;

	p = get_uv(p, &hdr);
	c->idx = (uint16_t)(hdr >> 1);
	if (!(hdr & 1)) {
		p = get_uv(p, &v);
		c->hist = (uint8_t)v;
		p = get_uv(p, &v);
		c->pid = (uint32_t)v;
		p = get_uv(p, &v);
		c->key = (uint32_t)v;
	}
	return get_uv(p, &c->count);
}

static int bucket_each_cell(const struct bucket *b, int (*fn)(void *ctx, const struct hcell *c),
			    void *ctx)
{
	int err;

	if (b->h_open) {
		for (uint32_t k = 0; k < b->h_open->n; k++) {
			err = fn(ctx, &b->h_open->c[k]);
			if (err)
				return err;
		}
	} else if (b->h_enc) {
		const uint8_t *p = b->h_enc, *end = b->h_enc + b->h_len;
		struct hcell c = {0};

		while (p < end) {
			p = get_hcell(p, &c);
			err = fn(ctx, &c);
			if (err)
				return err;
		}
	}
	return 0;
}

static int htab_add_cb(void *ctx, const struct hcell *c)
{
	return htab_add(ctx, c);
}

static int open_hist(struct bucket *b)
{
	struct htab *t;

	if (b->h_open)
		return 0;
	t = htab_new();
	if (!t)
		return -ENOMEM;
	if (bucket_each_cell(b, htab_add_cb, t)) {
		htab_free(t);
		return -ENOMEM;
	}
	free(b->h_enc);
	b->h_enc = NULL;
	b->h_len = 0;
	b->h_open = t;
	return 0;
}

static int seal_bucket(struct hc_store *st, struct bucket *b)
{
	int err;

	err = seal_weights(st, b);
	if (!err)
		err = seal_heat(st, b);
	if (!err)
		err = seal_hist(st, b);
	bucket_account(st, b);
	return err;
}

/* ---- trie ---- */

static inline uint32_t trie_parent(const struct trie *t, uint32_t node)
{
	return (uint32_t)(t->key[node] >> 32);
}

static inline uint32_t trie_frame(const struct trie *t, uint32_t node)
{
	return (uint32_t)t->key[node];
}

static inline size_t trie_hash(uint64_t key)
{
	return (size_t)hc_hash_mix(key * HC_HASH_GOLDEN + 1);
}

static int trie_rehash(struct trie *t, size_t n_slots)
{
	uint32_t *slots = calloc(n_slots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 1; id < t->n; id++) {
		size_t i;

		for (i = trie_hash(t->key[id]) & (n_slots - 1); slots[i];
		     i = (i + 1) & (n_slots - 1))
			;
		slots[i] = id;
	}
	free(t->slots);
	t->slots = slots;
	t->n_slots = n_slots;
	return 0;
}

/* The child of parent for frame, created if needed: its id (> 0), or -ENOMEM. */
static int64_t trie_child(struct trie *t, uint32_t parent, uint32_t frame)
{
	uint64_t key = (uint64_t)parent << 32 | frame;
	size_t mask = t->n_slots - 1, h = trie_hash(key), i;

	for (i = h & mask; t->slots[i]; i = (i + 1) & mask) {
		if (t->key[t->slots[i]] == key)
			return t->slots[i];
	}
	if (t->n >= TRIE_MAX_NODES)
		return -ENOMEM;
	if (t->n == t->cap) {
		uint32_t cap = t->cap < (1u << 31) ? t->cap * 2 : UINT32_MAX;
		uint64_t *k = realloc(t->key, (size_t)cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		t->key = k;
		t->cap = cap;
	}
	if (((size_t)t->n + 1) * 10 > t->n_slots * 7) {
		if (trie_rehash(t, t->n_slots * 2))
			return -ENOMEM;
		mask = t->n_slots - 1;
		for (i = h & mask; t->slots[i]; i = (i + 1) & mask)
			;
	}
	t->key[t->n] = key;
	t->slots[i] = t->n;
	return t->n++;
}

static size_t trie_bytes(const struct trie *t)
{
	return (size_t)t->cap * sizeof(*t->key) + t->n_slots * sizeof(*t->slots) +
	       2 * MALLOC_OVERHEAD;
}

/* ---- construction ---- */

struct hc_store *hc_store__new(const struct hc_store_opts *opts)
{
	struct hc_store *st;

	if (!opts || !opts->period_ns || opts->retention_s > (uint64_t)INT64_MAX / 2) {
		errno = EINVAL;
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		goto err;
	st->o = *opts;
	if (!st->o.retention_s)
		st->o.retention_s = DEFAULT_RETENTION_S;
	if (!st->o.max_bytes)
		st->o.max_bytes = DEFAULT_MAX_BYTES;
	st->evict_floor_s = INT64_MIN;
	st->sealed_through_s = INT64_MIN;
	st->live_after_gc = 1;

	st->trie.cap = 1024;
	st->trie.key = malloc(st->trie.cap * sizeof(*st->trie.key));
	if (!st->trie.key || trie_rehash(&st->trie, 1024))
		goto err_free;
	st->trie.key[0] = 0;
	st->trie.n = 1;
	if (sp_grow_slots(&st->sp))
		goto err_free;
	for (int h = 0; h < HC_STORE_H_MAX; h++) {
		st->shape[h] = hist_new_shape((enum hc_store_hist)h);
		if (!st->shape[h])
			goto err_free;
	}
	return st;

err_free:
	hc_store__free(st);
err:
	errno = ENOMEM;
	return NULL;
}

void hc_store__free(struct hc_store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n_bk; i++)
		bucket_free(st->bk[i]);
	free(st->bk);
	free(st->trie.key);
	free(st->trie.slots);
	free(st->frames);
	free(st->free_frames);
	free(st->fslots);
	free(st->wmap);
	sp_free(&st->sp);
	free(st->scratch);
	for (int h = 0; h < HC_STORE_H_MAX; h++)
		hc_hist__free(st->shape[h]);
	free(st);
}

static size_t frame_hash(const struct frame *f)
{
	uint64_t h = (uint64_t)(uintptr_t)f->name * HC_HASH_GOLDEN;

	h ^= (uint64_t)(uintptr_t)f->module + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
	h ^= f->id * HC_XXH_P2 + (h << 6) + (h >> 2);
	h ^= (uint64_t)f->offset * HC_XXH_P3 + f->kind + ((uint64_t)f->inlined << 8) + (h << 6) +
	     (h >> 2);
	return (size_t)(h ^ (h >> 31));
}

/* Names and modules are pool pointers: equal content, equal pointers. */
static bool frame_eq(const struct frame *a, const struct frame *b)
{
	return a->kind == b->kind && a->name == b->name && a->module == b->module &&
	       a->id == b->id && a->offset == b->offset && a->inlined == b->inlined;
}

/* A zeroed table for `want` live frames (load at most 1/2). NULL on failure. */
static uint32_t *fslots_alloc(size_t want, size_t *n)
{
	*n = 1024;
	while (*n < want * 2)
		*n *= 2;
	return calloc(*n, sizeof(uint32_t));
}

/* Fill slots (empty, n a power of two) with the live frames and make it the table. */
static void fslots_fill(struct hc_store *st, uint32_t *slots, size_t n)
{
	for (uint32_t id = 1; id <= st->n_frames; id++) {
		size_t i;

		if (!st->frames[id - 1].kind)
			continue;
		for (i = frame_hash(&st->frames[id - 1]) & (n - 1); slots[i]; i = (i + 1) & (n - 1))
			;
		slots[i] = id;
	}
	free(st->fslots);
	st->fslots = slots;
	st->n_fslots = n;
}

static int frames_rehash(struct hc_store *st, uint32_t more)
{
	size_t n;
	uint32_t *slots = fslots_alloc((size_t)st->live_frames + more, &n);

	if (!slots)
		return -ENOMEM;
	fslots_fill(st, slots, n);
	return 0;
}

/* The internal id of frame f, created if new: > 0, or -ENOMEM. */
static int64_t frame_intern(struct hc_store *st, const struct frame *f)
{
	uint32_t id;
	size_t i;

	if ((size_t)(st->live_frames + 1) * 2 > st->n_fslots && frames_rehash(st, 1024))
		return -ENOMEM;
	for (i = frame_hash(f) & (st->n_fslots - 1); st->fslots[i];
	     i = (i + 1) & (st->n_fslots - 1))
		if (frame_eq(&st->frames[st->fslots[i] - 1], f))
			return st->fslots[i];
	if (st->n_free) {
		id = st->free_frames[--st->n_free];
	} else {
		if (st->n_frames == st->cap_frames) {
			uint32_t cap = st->cap_frames ? st->cap_frames * 2 : 256;
			struct frame *nf;

			if (cap > UINT32_MAX / 2)
				return -ENOMEM;
			nf = realloc(st->frames, (size_t)cap * sizeof(*nf));
			if (!nf)
				return -ENOMEM;
			st->frames = nf;
			st->cap_frames = cap;
		}
		id = ++st->n_frames;
	}
	st->frames[id - 1] = *f;
	st->fslots[i] = id;
	st->live_frames++;
	return id;
}

int hc_store__define_frame(struct hc_store *st, uint32_t id, const struct hc_path_elem *e)
{
	struct frame f = {0};
	int64_t name, module = -1, fi;

	if (!st || !e || !e->name || e->kind <= HC_NODE_ROOT || e->kind > HC_NODE_KIND_MAX)
		return -EINVAL;
	if (id == 0 || id != st->n_wmap + 1 || id == UINT32_MAX)
		return -EINVAL;
	if (st->n_wmap == st->cap_wmap) {
		uint32_t cap = st->cap_wmap ? st->cap_wmap * 2 : 256;
		uint32_t *w = realloc(st->wmap, (size_t)cap * sizeof(*w));

		if (!w)
			return -ENOMEM;
		st->wmap = w;
		st->cap_wmap = cap;
	}
	name = sp_intern(&st->sp, e->name);
	if (name < 0)
		return (int)name;
	if (e->module) {
		module = sp_intern(&st->sp, e->module);
		if (module < 0)
			return (int)module;
	}
	f.name = st->sp.strs[name];
	f.module = module >= 0 ? st->sp.strs[module] : NULL;
	f.id = e->id;
	f.offset = e->offset;
	f.kind = (uint8_t)e->kind;
	f.inlined = e->inlined;
	fi = frame_intern(st, &f);
	if (fi < 0)
		return (int)fi;
	st->wmap[st->n_wmap++] = (uint32_t)fi;
	return 0;
}

void hc_store__reset_frames(struct hc_store *st)
{
	if (st)
		st->n_wmap = 0;
}

/* After a trie GC: frames no live node and no caller id refers to are freed for reuse. Any
 * allocation failing leaves everything as it was (collected next time). */
static void frames_gc(struct hc_store *st)
{
	uint8_t *mark = calloc((size_t)st->n_frames + 1, 1);
	uint32_t freed = 0, *fr, *slots = NULL;
	size_t n;

	if (!mark)
		return;
	for (uint32_t node = 1; node < st->trie.n; node++)
		mark[trie_frame(&st->trie, node)] = 1;
	for (uint32_t i = 0; i < st->n_wmap; i++)
		mark[st->wmap[i]] = 1;
	for (uint32_t id = 1; id <= st->n_frames; id++)
		freed += st->frames[id - 1].kind && !mark[id];
	if (!freed)
		goto out;
	if (st->n_free + freed > st->cap_free) {
		fr = realloc(st->free_frames, (size_t)(st->n_free + freed) * sizeof(*fr));
		if (!fr)
			goto out;
		st->free_frames = fr;
		st->cap_free = st->n_free + freed;
	}
	slots = fslots_alloc((size_t)(st->live_frames - freed) + 1024, &n);
	if (!slots)
		goto out;
	/* nothing can fail from here on */
	for (uint32_t id = 1; id <= st->n_frames; id++) {
		if (!st->frames[id - 1].kind || mark[id])
			continue;
		st->frames[id - 1].kind = 0;
		st->free_frames[st->n_free++] = id;
		st->live_frames--;
	}
	fslots_fill(st, slots, n);
out:
	free(mark);
}

/* ---- the bucket list, retention, the clock ---- */

/* Index of the first bucket with start_s > sec. */
static size_t bk_upper(const struct hc_store *st, int64_t sec)
{
	size_t lo = 0, hi = st->n_bk;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->bk[mid]->start_s <= sec)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first bucket with start_s >= sec. */
static size_t bk_lower(const struct hc_store *st, int64_t sec)
{
	size_t lo = 0, hi = st->n_bk;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->bk[mid]->start_s < sec)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct bucket *bk_containing(const struct hc_store *st, int64_t sec)
{
	size_t i = bk_upper(st, sec);

	if (i && sec - st->bk[i - 1]->start_s < (int64_t)st->bk[i - 1]->span_s)
		return st->bk[i - 1];
	return NULL;
}

/* Drop buckets [0, n). */
static void bk_drop_front(struct hc_store *st, size_t n)
{
	if (!n)
		return;
	st->dropped_since_gc = true;
	for (size_t i = 0; i < n; i++) {
		st->bucket_bytes -= st->bk[i]->bytes;
		bucket_free(st->bk[i]);
	}
	memmove(st->bk, st->bk + n, (st->n_bk - n) * sizeof(*st->bk));
	st->n_bk -= n;
}

static int64_t retention_cutoff(const struct hc_store *st)
{
	return sat_sub_s64(st->newest_s, st->o.retention_s);
}

/* The oldest second that may still receive data. */
static int64_t floor_s(const struct hc_store *st)
{
	int64_t c = retention_cutoff(st);

	return c > st->evict_floor_s ? c : st->evict_floor_s;
}

/* Move the retention clock to sec if it is newer; drop what falls out. */
static void advance_clock(struct hc_store *st, int64_t sec)
{
	int64_t cutoff;

	if (st->has_clock && sec <= st->newest_s)
		return;
	st->has_clock = true;
	st->newest_s = sec;
	cutoff = retention_cutoff(st);
	bk_drop_front(st, bk_lower(st, cutoff));
}

/* The bucket receiving data for sec, created if needed; *out = NULL when sec is expired. */
static int bucket_for(struct hc_store *st, int64_t sec, struct bucket **out)
{
	struct bucket *b;
	size_t i;

	advance_clock(st, sec);
	*out = NULL;
	if (sec < floor_s(st))
		return 0;
	if (st->n_bk) {
		b = st->bk[st->n_bk - 1];
		if (sec >= b->start_s && sec - b->start_s < (int64_t)b->span_s) {
			*out = b;
			return 0;
		}
	}
	i = bk_upper(st, sec);
	if (i && sec - st->bk[i - 1]->start_s < (int64_t)st->bk[i - 1]->span_s) {
		*out = st->bk[i - 1];
		return 0;
	}
	if (st->n_bk == st->cap_bk && hc_array_grow(st->bk, st->cap_bk, st->n_bk + 1, 64))
		return -ENOMEM;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->start_s = sec;
	b->span_s = 1;
	memmove(st->bk + i + 1, st->bk + i, (st->n_bk - i) * sizeof(*st->bk));
	st->bk[i] = b;
	st->n_bk++;
	bucket_account(st, b);
	*out = b;
	return 0;
}

static void count_expired(struct hc_store *st, uint64_t ns)
{
	st->expired_adds++;
	st->expired_ns = sat_add(st->expired_ns, ns);
}

/* ---- adds ---- */

int hc_store__add(struct hc_store *st, int64_t sec, const uint32_t *path, size_t n,
		  const struct hc_weights *w)
{
	uint32_t fid[HC_STORE_MAX_DEPTH];
	struct bucket *b;
	uint32_t node = 0;
	int err;

	if (!st || !path || !w || n < 2 || n > HC_STORE_MAX_DEPTH)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (path[i] == 0 || path[i] > st->n_wmap)
			return -EINVAL;
		fid[i] = st->wmap[path[i] - 1];
	}
	if (st->frames[fid[0] - 1].kind != HC_NODE_PROCESS ||
	    st->frames[fid[1] - 1].kind != HC_NODE_THREAD)
		return -EINVAL;
	if (weights_zero(w))
		return 0;

	err = bucket_for(st, sec, &b);
	if (err)
		return err;
	if (!b) {
		count_expired(st, sat_add(sat_add(w->on_cpu_ns, w->off_cpu_ns), w->runqueue_ns));
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t child = trie_child(&st->trie, node, fid[i]);

		if (child < 0)
			return (int)child;
		node = (uint32_t)child;
	}
	err = open_weights(st, b);
	if (!err)
		err = wtab_add(b->w_open, node, w);
	if (!err)
		hc_weights__add(&b->total, w);
	bucket_account(st, b);
	return err;
}

int hc_store__add_heat(struct hc_store *st, int64_t sec, unsigned int row, uint64_t count)
{
	struct bucket *b;
	uint64_t *c;
	int err;

	if (!st || row >= HC_STORE_HEAT_ROWS)
		return -EINVAL;
	if (!count)
		return 0;
	err = bucket_for(st, sec, &b);
	if (err)
		return err;
	if (!b) {
		count_expired(st, 0);
		return 0;
	}
	err = open_heat(b);
	if (!err) {
		c = &b->heat_open[(size_t)(sec - b->start_s) * HC_STORE_HEAT_ROWS + row];
		*c = sat_add(*c, count);
	}
	bucket_account(st, b);
	return err;
}

/* One cell into second sec's bucket: the key stored as hc_hist would store it (UTF-8
 * repaired), and refused where it would refuse it. */
static int add_cell(struct hc_store *st, int64_t sec, struct hcell *cell, const char *key)
{
	struct bucket *b;
	size_t len;
	char *clean;
	int64_t key_id;
	int err;

	clean = hc__utf8_sanitize(key, &len);
	if (!clean)
		return -ENOMEM;
	if (len > HC_HIST_KEY_MAX) {
		err = -EINVAL;
		goto out_free;
	}
	err = 0;
	if (!cell->count)
		goto out_free;
	err = bucket_for(st, sec, &b);
	if (err)
		goto out_free;
	if (!b) {
		count_expired(st, 0);
		goto out_free;
	}
	key_id = sp_intern(&st->sp, clean);
	if (key_id < 0) {
		err = (int)key_id;
		goto out_free;
	}
	cell->key = (uint32_t)key_id;
	err = open_hist(b);
	if (!err)
		err = htab_add(b->h_open, cell);
	bucket_account(st, b);
out_free:
	if (clean != key)
		free(clean);
	return err;
}

int hc_store__add_hist(struct hc_store *st, int64_t sec, enum hc_store_hist h, uint32_t pid,
		       const char *key, int64_t value, uint64_t count)
{
	struct hcell cell = {0};

	if (!st || !key || (unsigned int)h >= HC_STORE_H_MAX)
		return -EINVAL;
	cell.hist = (uint8_t)h;
	cell.pid = pid;
	cell.idx = (uint16_t)hc_hist__bucket_index(st->shape[h], value);
	cell.count = count;
	return add_cell(st, sec, &cell, key);
}

int hc_store__add_counter(struct hc_store *st, int64_t sec, enum hc_store_counter c,
			  const char *key, uint64_t value)
{
	struct hcell cell = {0};

	if (!st || !key || (unsigned int)c >= HC_STORE_C_MAX)
		return -EINVAL;
	cell.hist = (uint8_t)(CELL_COUNTER + c);
	cell.count = value;
	return add_cell(st, sec, &cell, key);
}

/* ---- trie GC ---- */

struct gc_mark {
	const struct trie *t;
	uint8_t *mark;
};

static int gc_mark_cb(void *ctx, uint32_t node, const struct hc_weights *w)
{
	struct gc_mark *m = ctx;

	(void)w;
	while (!m->mark[node]) {
		m->mark[node] = 1;
		node = trie_parent(m->t, node);
	}
	return 0;
}

/* Collect the trie nodes no bucket references (nor any descendant of one). Node ids are
 * renumbered in their old order, so parents still come before children and sealed encodings
 * keep their order: they are rewritten in place (a delta never grows). */
static int trie_gc(struct hc_store *st)
{
	struct trie *t = &st->trie;
	struct gc_mark m = {.t = t};
	uint32_t *remap, *slots, live = 0, cap;
	uint64_t *key;
	size_t n_slots = MIN_SLOTS;
	int err = -ENOMEM;

	m.mark = calloc(t->n, 1);
	remap = malloc((size_t)t->n * sizeof(*remap));
	if (!m.mark || !remap)
		goto out;
	m.mark[0] = 1;
	for (size_t i = 0; i < st->n_bk; i++)
		bucket_each_weight(st, st->bk[i], gc_mark_cb, &m);
	for (uint32_t id = 0; id < t->n; id++) {
		if (m.mark[id])
			remap[id] = live++;
	}
	while (n_slots * 7 < (size_t)live * 10 * 2)
		n_slots *= 2;
	cap = live + live / 4 + 1024;
	key = malloc((size_t)cap * sizeof(*key));
	slots = calloc(n_slots, sizeof(*slots));
	if (!key || !slots) {
		free(key);
		free(slots);
		goto out;
	}
	/* nothing can fail from here on */
	for (uint32_t id = 0; id < t->n; id++) {
		if (m.mark[id])
			key[remap[id]] =
				(uint64_t)remap[trie_parent(t, id)] << 32 | trie_frame(t, id);
	}
	key[0] = 0;
	for (uint32_t id = 1; id < live; id++) {
		size_t i;

		for (i = trie_hash(key[id]) & (n_slots - 1); slots[i]; i = (i + 1) & (n_slots - 1))
			;
		slots[i] = id;
	}
	free(t->key);
	free(t->slots);
	t->key = key;
	t->cap = cap;
	t->n = live;
	t->slots = slots;
	t->n_slots = n_slots;

	for (size_t i = 0; i < st->n_bk; i++) {
		struct bucket *b = st->bk[i];

		if (b->w_open) {
			for (uint32_t k = 0; k < b->w_open->n; k++)
				b->w_open->e[k].node = remap[b->w_open->e[k].node];
			wtab_reindex(b->w_open);
		} else if (b->w_enc) {
			const uint8_t *p = b->w_enc, *end = b->w_enc + b->w_len;
			uint8_t *q = b->w_enc;
			uint32_t node = 0, prev = 0;
			struct hc_weights w;

			while (p < end) {
				p = get_wentry(p, &node, &w, st->o.period_ns);
				q = put_wentry(q, remap[node] - prev, &w, st->o.period_ns);
				prev = remap[node];
			}
			b->w_len = (size_t)(q - b->w_enc);
			bucket_account(st, b);
		}
	}
	st->live_after_gc = live;
	st->dropped_since_gc = false;
	st->gc_runs++;
	frames_gc(st);
	err = 0;
out:
	free(m.mark);
	free(remap);
	return err;
}

/* ---- memory cap: coarsening, early eviction ---- */

/*
 * Coarsening also merges identities that only grow memory: threads by name (tid 0), wakers
 * (no pid/tid), and processes not seen in the newest COARSE_SPAN_S seconds (exited, or idle)
 * by name (pid 0). Short-lived processes each had a subtree of their own; merged, a thousand
 * `ls` runs are one `ls`, and the trie GC frees the rest. Processes still running keep their
 * pid. Unresolved user frames ([unknown] in a module, named by their offset) lose the offset:
 * in a binary without symbols every sampled address was a frame of its own.
 */
struct coarse {
	struct hc_store *st;
	struct wtab *w;
	uint32_t *memo;	     /* old node -> merged node + 1 (0: not yet), old nodes only */
	uint8_t *alive;	     /* process-level node seen lately */
	uint32_t n_old;	     /* trie nodes when coarsening began */
	const char *unknown; /* the pool's "[unknown]", or NULL */
};

/* The process-level ancestor of node (the child of the root on its path). */
static uint32_t process_node(const struct trie *t, uint32_t node)
{
	while (node && trie_parent(t, node))
		node = trie_parent(t, node);
	return node;
}

static int mark_alive_cb(void *ctx, uint32_t node, const struct hc_weights *w)
{
	struct coarse *c = ctx;

	(void)w;
	c->alive[process_node(&c->st->trie, node)] = 1;
	return 0;
}

/* The node of the same path with identities merged, created if needed; < 0 -ENOMEM. */
static int64_t merged_node(struct coarse *c, uint32_t node)
{
	struct trie *t = &c->st->trie;
	uint32_t fr[HC_STORE_MAX_DEPTH + 1], x = node, proc = 0;
	size_t n = 0;
	int64_t parent = 0;

	if (c->memo[node])
		return c->memo[node] - 1;
	while (x && n < HC_STORE_MAX_DEPTH + 1) {
		fr[n++] = trie_frame(t, x);
		proc = x;
		x = trie_parent(t, x);
	}
	for (size_t i = n; i-- > 0;) {
		struct frame f = c->st->frames[fr[i] - 1];
		uint32_t fid = fr[i];

		if ((f.kind == HC_NODE_PROCESS && !c->alive[proc] && f.id) ||
		    (f.kind == HC_NODE_THREAD && f.id) ||
		    (f.kind == HC_NODE_WAKER && (f.id || f.offset != 0)) ||
		    (f.kind == HC_NODE_USER && f.name == c->unknown && f.offset != -1)) {
			int64_t id;

			f.id = 0;
			/* a waker's offset is its pid: merged wakers say pid 0 (docs/store.md),
			 * not -1, which JSON would print as 2^64 - 1 */
			if (f.kind == HC_NODE_WAKER)
				f.offset = 0;
			else if (f.kind == HC_NODE_USER)
				f.offset = -1;
			id = frame_intern(c->st, &f);
			if (id < 0)
				return id;
			fid = (uint32_t)id;
		}
		parent = trie_child(t, (uint32_t)parent, fid);
		if (parent < 0)
			return parent;
	}
	c->memo[node] = (uint32_t)parent + 1;
	return parent;
}

static int coarse_w_cb(void *ctx, uint32_t node, const struct hc_weights *w)
{
	struct coarse *c = ctx;
	int64_t m = node < c->n_old ? merged_node(c, node) : node;

	return m < 0 ? (int)m : wtab_add(c->w, (uint32_t)m, w);
}

/* Merge the 1 s buckets [i0, i1) (all with start in [k, k + COARSE_SPAN_S)) into one. */
static int coarsen(struct hc_store *st, size_t i0, size_t i1, int64_t k)
{
	struct bucket *nb = calloc(1, sizeof(*nb));
	struct coarse c = {.st = st, .n_old = st->trie.n};
	uint32_t hint = 0;
	int err = -ENOMEM;
	int64_t unk = sp_find(&st->sp, "[unknown]");

	if (!nb)
		return -ENOMEM;
	c.unknown = unk >= 0 ? st->sp.strs[unk] : NULL;
	c.memo = calloc(c.n_old, sizeof(*c.memo));
	c.alive = calloc(c.n_old, 1);
	if (!c.memo || !c.alive)
		goto err_free;
	/* Processes with data in the newest seconds keep their pid. */
	for (size_t i = st->n_bk > COARSE_SPAN_S ? st->n_bk - COARSE_SPAN_S : 0; i < st->n_bk; i++)
		if (bucket_each_weight(st, st->bk[i], mark_alive_cb, &c))
			goto err_free;
	nb->start_s = k;
	nb->span_s = COARSE_SPAN_S;
	for (size_t i = i0; i < i1; i++)
		hint = hint > st->bk[i]->w_n ? hint : st->bk[i]->w_n;
	nb->w_open = wtab_new(hint * 2);
	nb->h_open = htab_new();
	nb->heat_open = calloc((size_t)HC_STORE_HEAT_ROWS * COARSE_SPAN_S, sizeof(uint64_t));
	if (!nb->w_open || !nb->h_open || !nb->heat_open)
		goto err_free;
	c.w = nb->w_open;
	for (size_t i = i0; i < i1; i++) {
		const struct bucket *b = st->bk[i];
		size_t off = (size_t)(b->start_s - k) * HC_STORE_HEAT_ROWS;
		uint64_t pos, count;

		if (bucket_each_weight(st, b, coarse_w_cb, &c) ||
		    bucket_each_cell(b, htab_add_cb, nb->h_open))
			goto err_free;
		if (b->heat_open) {
			for (size_t r = 0; r < HC_STORE_HEAT_ROWS; r++)
				nb->heat_open[off + r] += b->heat_open[r];
		} else if (b->heat_enc) {
			HEAT_EACH(b->heat_enc, b->heat_len, pos, count,
				  nb->heat_open[off + pos] += count);
		}
		hc_weights__add(&nb->total, &b->total);
	}
	err = seal_bucket(st, nb); /* accounts nb */
	if (err)
		goto err_uncount;
	for (size_t i = i0; i < i1; i++) {
		st->bucket_bytes -= st->bk[i]->bytes;
		bucket_free(st->bk[i]);
	}
	st->bk[i0] = nb;
	memmove(st->bk + i0 + 1, st->bk + i1, (st->n_bk - i1) * sizeof(*st->bk));
	st->n_bk -= i1 - i0 - 1;
	/* The per-pid subtrees these seconds used may now be garbage. */
	st->dropped_since_gc = true;
	free(c.memo);
	free(c.alive);
	return 0;

err_uncount:
	st->bucket_bytes -= nb->bytes;
err_free:
	bucket_free(nb);
	free(c.memo);
	free(c.alive);
	return err;
}

/* Coarsen the oldest group of 1 s buckets if one is old enough: 1 done, 0 none, -ENOMEM. */
static int coarsen_oldest(struct hc_store *st)
{
	size_t i0, i1;
	int64_t k;
	int err;

	for (i0 = 0; i0 < st->n_bk && st->bk[i0]->span_s != 1; i0++)
		;
	if (i0 == st->n_bk)
		return 0;
	k = floor_div(st->bk[i0]->start_s, COARSE_SPAN_S) * COARSE_SPAN_S;
	if (k > sat_sub_s64(st->newest_s, KEEP_FINE_S + COARSE_SPAN_S) ||
	    k + COARSE_SPAN_S - 1 > st->sealed_through_s)
		return 0;
	for (i1 = i0;
	     i1 < st->n_bk && st->bk[i1]->span_s == 1 && st->bk[i1]->start_s < k + COARSE_SPAN_S;
	     i1++)
		;
	err = coarsen(st, i0, i1, k);
	return err ? err : 1;
}

static size_t fixed_bytes(const struct hc_store *st)
{
	return sizeof(*st) + MALLOC_OVERHEAD + st->cap_bk * sizeof(*st->bk) +
	       (size_t)st->cap_frames * sizeof(*st->frames) + st->n_fslots * sizeof(uint32_t) +
	       ((size_t)st->cap_wmap + st->cap_free) * sizeof(uint32_t) + st->scratch_cap +
	       3 * MALLOC_OVERHEAD + sp_bytes(&st->sp) + trie_bytes(&st->trie) +
	       HC_STORE_H_MAX * HIST_TEMPLATE_BYTES;
}

size_t hc_store__memory_bytes(const struct hc_store *st)
{
	if (!st)
		return 0;
	return fixed_bytes(st) + st->bucket_bytes;
}

/*
 * Drop the oldest buckets (never the newest) until about `need` bytes are freed, counting for
 * each bucket its share of the trie (trie bytes x its part of all bucket bytes): what a GC
 * after the eviction should give back.
 */
static void evict_batch(struct hc_store *st, size_t need)
{
	double share =
		st->bucket_bytes ? (double)trie_bytes(&st->trie) / (double)st->bucket_bytes : 0;
	double got = 0;
	size_t k = 0;

	while (k + 1 < st->n_bk && got < (double)need) {
		got += (double)st->bk[k]->bytes * (1 + share);
		st->evicted_early += st->bk[k]->span_s;
		st->evict_floor_s = st->bk[k]->start_s + st->bk[k]->span_s;
		k++;
	}
	bk_drop_front(st, k);
}

static int enforce_limits(struct hc_store *st)
{
	size_t target = st->o.max_bytes - st->o.max_bytes / 8, bytes;
	bool gc_done = false;
	int r;

	if (st->trie.n >= GC_MIN_NODES && st->trie.n / 2 >= st->live_after_gc) {
		r = trie_gc(st);
		if (r)
			return r;
		gc_done = true;
	}
	while ((bytes = hc_store__memory_bytes(st)) > st->o.max_bytes) {
		r = coarsen_oldest(st);
		if (r < 0)
			return r;
		if (r > 0) {
			/* merged identities left per-pid subtrees behind: collect before
			 * evicting anything, even if a collection ran earlier in this call */
			gc_done = false;
			continue;
		}
		/* garbage exists only once buckets were dropped: collect it before evicting */
		if (st->dropped_since_gc && !gc_done) {
			r = trie_gc(st);
			if (r)
				return r;
			gc_done = true;
			continue;
		}
		if (st->n_bk <= 1)
			break;
		/* down to 7/8 of the cap, so that the next seconds do not evict (and GC) again */
		evict_batch(st, bytes - target);
		gc_done = false;
	}
	return 0;
}

int hc_store__seal(struct hc_store *st, int64_t sec)
{
	int err = 0, r;

	if (!st)
		return -EINVAL;
	advance_clock(st, sec);
	for (size_t i = 0; i < st->n_bk; i++) {
		struct bucket *b = st->bk[i];

		if (b->start_s > sec)
			break;
		if (bucket_is_open(b) && sec - b->start_s >= (int64_t)b->span_s - 1) {
			r = seal_bucket(st, b);
			if (r)
				err = r;
		}
	}
	if (sec > st->sealed_through_s)
		st->sealed_through_s = sec;
	r = enforce_limits(st);
	return err ? err : r;
}

/* ---- queries: the tree ---- */

#define LOCAL_FAIL UINT32_MAX

struct query {
	const struct hc_store *st;
	const struct hc_store_filter *f;
	const char *comm; /* pool pointer, or NULL (no comm filter, or no such name) */
	bool comm_absent; /* a comm filter naming a string never seen: nothing matches */
	uint32_t *map;	  /* trie node -> local + 1, LOCAL_FAIL (filtered out), 0 (unseen) */
	uint32_t *node;	  /* local -> trie node */
	uint32_t *parent; /* local -> local */
	struct hc_weights *w;
	uint32_t n, cap;
};

static int query_grow(struct query *q)
{
	uint32_t cap = q->cap ? q->cap * 2 : 4096;
	uint32_t *node, *parent;
	struct hc_weights *w;

	if (q->cap >= (1u << 31))
		return -ENOMEM;
	node = realloc(q->node, cap * sizeof(*node));
	if (!node)
		return -ENOMEM;
	q->node = node;
	parent = realloc(q->parent, cap * sizeof(*parent));
	if (!parent)
		return -ENOMEM;
	q->parent = parent;
	w = realloc(q->w, cap * sizeof(*w));
	if (!w)
		return -ENOMEM;
	q->w = w;
	q->cap = cap;
	return 0;
}

static bool query_pass(const struct query *q, uint32_t parent_local, uint32_t trie_node)
{
	const struct frame *fr = &q->st->frames[trie_frame(&q->st->trie, trie_node) - 1];

	if (parent_local == 0) { /* a process */
		if (q->f->has_pid && fr->id != q->f->pid)
			return false;
		if (q->f->comm && (q->comm_absent || fr->name != q->comm))
			return false;
		return true;
	}
	if (q->parent[parent_local] == 0) /* a thread */
		return !q->f->has_tid || fr->id == q->f->tid;
	return true;
}

/* The local index of trie node `node`, adding it and its unseen ancestors (top-down, so a
 * parent's local index is below its children's); LOCAL_FAIL when the filter drops it. */
static int64_t query_resolve(struct query *q, uint32_t node)
{
	uint32_t stack[HC_STORE_MAX_DEPTH + 1];
	const struct trie *t = &q->st->trie;
	uint32_t k = 0, anc, p = node;
	int err;

	while (p && !q->map[p]) {
		stack[k++] = p;
		p = trie_parent(t, p);
	}
	anc = p ? (q->map[p] == LOCAL_FAIL ? LOCAL_FAIL : q->map[p] - 1) : 0;
	while (k--) {
		uint32_t id = stack[k];

		if (anc == LOCAL_FAIL || !query_pass(q, anc, id)) {
			q->map[id] = LOCAL_FAIL;
			anc = LOCAL_FAIL;
			continue;
		}
		if (q->n == q->cap) {
			err = query_grow(q);
			if (err)
				return err;
		}
		q->node[q->n] = id;
		q->parent[q->n] = anc;
		memset(&q->w[q->n], 0, sizeof(q->w[q->n]));
		q->map[id] = q->n + 1;
		anc = q->n++;
	}
	return anc;
}

static inline int query_add(struct query *q, uint32_t node, const struct hc_weights *w)
{
	struct hc_weights x = {0};
	uint32_t m;
	int64_t li;

	if (q->f->on) {
		x.on_cpu_ns = w->on_cpu_ns;
		x.samples = w->samples;
	}
	if (q->f->off)
		x.off_cpu_ns = w->off_cpu_ns;
	if (q->f->runqueue)
		x.runqueue_ns = w->runqueue_ns;
	if (weights_zero(&x))
		return 0;
	m = q->map[node];
	if (m == LOCAL_FAIL)
		return 0;
	if (m) {
		li = m - 1;
	} else {
		li = query_resolve(q, node);
		if (li < 0)
			return (int)li;
		if (li == LOCAL_FAIL)
			return 0;
	}
	hc_weights__add(&q->w[li], &x);
	return 0;
}

static int query_bucket(struct query *q, const struct bucket *b)
{
	int err;

	if (b->w_open) {
		for (uint32_t k = 0; k < b->w_open->n; k++) {
			err = query_add(q, b->w_open->e[k].node, &b->w_open->e[k].w);
			if (err)
				return err;
		}
	} else if (b->w_enc) {
		const uint8_t *p = b->w_enc, *end = b->w_enc + b->w_len;
		uint64_t period_ns = q->st->o.period_ns;
		uint32_t node = 0;
		struct hc_weights w;

		while (p < end) {
			p = get_wentry(p, &node, &w, period_ns);
			err = query_add(q, node, &w);
			if (err)
				return err;
		}
	}
	return 0;
}

struct rank {
	uint64_t v;
	uint32_t node; /* trie id: tie-break, lower first (a parent before its children) */
	uint32_t li;
};

static inline bool rank_better(const struct rank *a, const struct rank *b)
{
	return a->v > b->v || (a->v == b->v && a->node < b->node);
}

static inline void rank_swap(struct rank *r, ptrdiff_t i, ptrdiff_t j)
{
	struct rank t = r[i];

	r[i] = r[j];
	r[j] = t;
}

/* Reorder r[0, n) so that r[0, k] are the k + 1 best (quickselect, median of three). */
static void rank_select(struct rank *r, ptrdiff_t n, ptrdiff_t k)
{
	ptrdiff_t lo = 0, hi = n - 1;

	while (hi > lo) {
		ptrdiff_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		struct rank p;

		if (rank_better(&r[hi], &r[lo]))
			rank_swap(r, lo, hi);
		if (rank_better(&r[mid], &r[lo]))
			rank_swap(r, mid, lo);
		if (rank_better(&r[hi], &r[mid]))
			rank_swap(r, mid, hi);
		p = r[mid];
		while (i <= j) {
			while (rank_better(&r[i], &p))
				i++;
			while (rank_better(&p, &r[j]))
				j--;
			if (i <= j) {
				rank_swap(r, i, j);
				i++;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return;
	}
}

static int query_build(struct query *q, struct hc_tree *out, struct hc_store_pruned *pruned)
{
	const struct hc_store_filter *f = q->f;
	uint8_t *keep = NULL;
	uint32_t *out_idx = NULL;
	struct rank *r = NULL;
	size_t cand = 0;
	int err = -ENOMEM;

	/* inclusive values: children have higher local indices than their parents */
	for (uint32_t i = q->n; i-- > 1;)
		hc_weights__add(&q->w[q->parent[i]], &q->w[i]);

	keep = calloc(q->n, 1);
	out_idx = malloc((size_t)q->n * sizeof(*out_idx));
	if (!keep || !out_idx)
		goto out;
	for (uint32_t i = 1; i < q->n; i++)
		cand += !weights_zero(&q->w[i]);
	keep[0] = 1;
	if (!f->max_nodes || cand + 1 <= f->max_nodes) {
		for (uint32_t i = 1; i < q->n; i++)
			keep[i] = !weights_zero(&q->w[i]);
	} else if (f->max_nodes > 1) {
		size_t k = 0;

		r = malloc(cand * sizeof(*r));
		if (!r)
			goto out;
		for (uint32_t i = 1; i < q->n; i++) {
			if (weights_zero(&q->w[i]))
				continue;
			r[k].v = hc_weights__value(&q->w[i]);
			r[k].node = q->node[i];
			r[k].li = i;
			k++;
		}
		rank_select(r, (ptrdiff_t)cand, (ptrdiff_t)f->max_nodes - 2);
		for (k = 0; k + 1 < f->max_nodes; k++)
			keep[r[k].li] = 1;
	}

	if (pruned) {
		pruned->nodes = 0;
		pruned->value_ns = 0;
		for (uint32_t i = 1; i < q->n; i++) {
			if (keep[i] || weights_zero(&q->w[i]))
				continue;
			pruned->nodes++;
			if (keep[q->parent[i]])
				pruned->value_ns += hc_weights__value(&q->w[i]);
		}
	}

	/* kept nodes carry their inclusive weights: what was folded stays in them as self */
	hc__tree_add_weights(out, 0, &q->w[0]);
	out_idx[0] = 0;
	for (uint32_t i = 1; i < q->n; i++) {
		const struct frame *fr;
		struct hc_path_elem e;
		int64_t idx;

		if (!keep[i])
			continue;
		fr = &q->st->frames[trie_frame(&q->st->trie, q->node[i]) - 1];
		e.kind = (enum hc_node_kind)fr->kind;
		e.name = fr->name;
		e.module = fr->module;
		e.id = fr->id;
		e.offset = fr->offset;
		e.inlined = fr->inlined;
		idx = hc__tree_add_child(out, out_idx[q->parent[i]], &e, &q->w[i]);
		if (idx < 0) {
			err = (int)idx;
			goto out;
		}
		out_idx[i] = (uint32_t)idx;
	}
	err = 0;
out:
	free(keep);
	free(out_idx);
	free(r);
	return err;
}

int hc_store__tree(const struct hc_store *st, const struct hc_store_filter *f, struct hc_tree *out,
		   struct hc_store_pruned *pruned)
{
	struct query q = {.st = st, .f = f};
	int err;

	if (!st || !f || !out)
		return -EINVAL;
	if (pruned)
		memset(pruned, 0, sizeof(*pruned));
	if (f->comm) {
		int64_t id = sp_find(&st->sp, f->comm);

		if (id < 0)
			q.comm_absent = true;
		else
			q.comm = st->sp.strs[id];
	}
	q.map = calloc(st->trie.n, sizeof(*q.map));
	if (!q.map)
		return -ENOMEM;
	err = query_grow(&q);
	if (err)
		goto out;
	/* local 0 is the root */
	q.node[0] = 0;
	q.parent[0] = 0;
	memset(&q.w[0], 0, sizeof(q.w[0]));
	q.n = 1;

	if (f->from_s < f->to_s) {
		for (size_t i = bk_lower(st, f->from_s);
		     i < st->n_bk && st->bk[i]->start_s < f->to_s; i++) {
			err = query_bucket(&q, st->bk[i]);
			if (err)
				goto out;
		}
	}
	err = query_build(&q, out, pruned);
out:
	free(q.map);
	free(q.node);
	free(q.parent);
	free(q.w);
	return err;
}

/* ---- queries: timeline, heat, histograms ---- */

int hc_store__timeline(const struct hc_store *st, int64_t from_s, int64_t to_s, int64_t step_s,
		       struct hc_store_slot **out, size_t *n)
{
	struct hc_store_slot *s;
	uint64_t range, n_slots;

	if (!st || !out || !n || step_s <= 0 || from_s >= to_s)
		return -EINVAL;
	range = (uint64_t)to_s - (uint64_t)from_s;
	n_slots = range / (uint64_t)step_s + (range % (uint64_t)step_s != 0);
	if (n_slots > 100000)
		return -EINVAL;
	s = calloc(n_slots, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint64_t i = 0; i < n_slots; i++)
		s[i].t_s = from_s + (int64_t)i * step_s;
	for (size_t i = bk_lower(st, from_s); i < st->n_bk && st->bk[i]->start_s < to_s; i++) {
		const struct bucket *b = st->bk[i];
		struct hc_store_slot *slot =
			&s[((uint64_t)b->start_s - (uint64_t)from_s) / (uint64_t)step_s];

		slot->on_cpu_ns += b->total.on_cpu_ns;
		slot->off_cpu_ns += b->total.off_cpu_ns;
		slot->runqueue_ns += b->total.runqueue_ns;
		slot->samples += b->total.samples;
	}
	*out = s;
	*n = n_slots;
	return 0;
}

void hc_store__heat(const struct hc_store *st, int64_t sec, uint64_t rows[HC_STORE_HEAT_ROWS])
{
	const struct bucket *b;
	uint64_t first, pos, count;

	memset(rows, 0, HC_STORE_HEAT_ROWS * sizeof(*rows));
	if (!st)
		return;
	b = bk_containing(st, sec);
	if (!b)
		return;
	first = (uint64_t)(sec - b->start_s) * HC_STORE_HEAT_ROWS;
	if (b->heat_open) {
		memcpy(rows, b->heat_open + first, HC_STORE_HEAT_ROWS * sizeof(*rows));
	} else if (b->heat_enc) {
		HEAT_EACH(b->heat_enc, b->heat_len, pos, count, {
			if (pos >= first && pos < first + HC_STORE_HEAT_ROWS)
				rows[pos - first] = count;
		});
	}
}

struct hist_query {
	const struct hc_store *st;
	const struct hc_store_filter *f;
	uint8_t hist;
	int64_t comm_id;  /* -1: no comm filter; -2: comm never seen */
	struct htab *acc; /* (key, idx) -> count, pid and hist 0 */
};

static int hist_query_cb(void *ctx, const struct hcell *c)
{
	struct hist_query *hq = ctx;
	struct hcell x;

	if (c->hist != hq->hist)
		return 0;
	if (hq->f->has_pid || hq->f->comm) {
		if (c->pid == 0) /* per-CPU series */
			return 0;
		if (hq->f->has_pid && c->pid != hq->f->pid)
			return 0;
		if (hq->comm_id != -1 && (int64_t)c->key != hq->comm_id)
			return 0;
	}
	x.hist = 0;
	x.pid = 0;
	x.key = c->key;
	x.idx = c->idx;
	x.count = c->count;
	return htab_add(hq->acc, &x);
}

struct hc_hist *hc_store__hist(const struct hc_store *st, enum hc_store_hist h,
			       const struct hc_store_filter *f)
{
	struct hist_query hq = {.st = st, .f = f, .comm_id = -1};
	struct hc_hist *out = NULL;
	int err;

	if (!st || !f || (unsigned int)h >= HC_STORE_H_MAX) {
		errno = EINVAL;
		return NULL;
	}
	hq.hist = (uint8_t)h;
	if (f->comm) {
		hq.comm_id = sp_find(&st->sp, f->comm);
		if (hq.comm_id < 0)
			hq.comm_id = -2;
	}
	out = hist_new_shape(h);
	hq.acc = htab_new();
	if (!out || !hq.acc) {
		err = -ENOMEM;
		goto err;
	}
	if (f->from_s < f->to_s && hq.comm_id != -2) {
		for (size_t i = bk_lower(st, f->from_s);
		     i < st->n_bk && st->bk[i]->start_s < f->to_s; i++) {
			err = bucket_each_cell(st->bk[i], hist_query_cb, &hq);
			if (err)
				goto err;
		}
	}
	/* sorted, so that series are created in a stable order */
	if (hq.acc->n > 1)
		qsort(hq.acc->c, hq.acc->n, sizeof(*hq.acc->c), hcell_cmp);
	for (uint32_t k = 0; k < hq.acc->n; k++) {
		const struct hcell *c = &hq.acc->c[k];
		int64_t min, max, value;
		bool has_min;

		hc_hist__bucket_bounds(st->shape[h], c->idx, &min, &max, &has_min, NULL);
		value = has_min ? min : max;
		err = hc_hist__add(out, st->sp.strs[c->key], value, c->count);
		if (err)
			goto err;
	}
	htab_free(hq.acc);
	return out;

err:
	htab_free(hq.acc);
	hc_hist__free(out);
	errno = -err;
	return NULL;
}

struct counter_query {
	uint8_t hist;
	struct htab *acc; /* key -> value, merged as the counter merges */
};

static int counter_query_cb(void *ctx, const struct hcell *c)
{
	struct counter_query *cq = ctx;

	if (c->hist != cq->hist)
		return 0;
	return htab_add(cq->acc, c);
}

int hc_store__counter(const struct hc_store *st, enum hc_store_counter c,
		      const struct hc_store_filter *f,
		      int (*fn)(void *ctx, const char *key, uint64_t value), void *ctx)
{
	struct counter_query cq = {.hist = (uint8_t)(CELL_COUNTER + c)};
	int err = 0;

	if (!st || !f || !fn || (unsigned int)c >= HC_STORE_C_MAX)
		return -EINVAL;
	cq.acc = htab_new();
	if (!cq.acc)
		return -ENOMEM;
	for (size_t i = f->from_s < f->to_s ? bk_lower(st, f->from_s) : st->n_bk;
	     i < st->n_bk && st->bk[i]->start_s < f->to_s && !err; i++)
		err = bucket_each_cell(st->bk[i], counter_query_cb, &cq);
	if (!err && cq.acc->n > 1)
		qsort(cq.acc->c, cq.acc->n, sizeof(*cq.acc->c), hcell_cmp);
	for (uint32_t k = 0; k < cq.acc->n && !err; k++)
		err = fn(ctx, st->sp.strs[cq.acc->c[k].key], cq.acc->c[k].count);
	htab_free(cq.acc);
	return err;
}

void hc_store__stats(const struct hc_store *st, struct hc_store_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!st)
		return;
	for (size_t i = 0; i < st->n_bk; i++) {
		out->buckets += st->bk[i]->span_s;
		out->coarse_buckets += st->bk[i]->span_s != 1;
	}
	out->trie_nodes = st->trie.n - 1;
	out->frames = st->live_frames;
	out->bytes = hc_store__memory_bytes(st);
	out->expired_adds = st->expired_adds;
	out->expired_ns = st->expired_ns;
	out->evicted_early = st->evicted_early;
	out->gc_runs = st->gc_runs;
	if (st->n_bk) {
		const struct bucket *last = st->bk[st->n_bk - 1];

		out->oldest_s = st->bk[0]->start_s;
		out->newest_s = last->start_s + last->span_s - 1;
	}
}
