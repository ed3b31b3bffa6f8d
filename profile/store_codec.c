// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_store's containers and encodings (profile/store_int.h): the string pool, the open
 * weight and histogram-cell tables, and the sealed varint encodings of a bucket's parts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "profile/store_int.h"

#define STR_CHUNK_SIZE (16 * 1024)

/* ---- string pool ---- */

struct str_chunk {
	struct str_chunk *next;
	size_t used, size;
	char data[];
};

static uint64_t hash_str(const char *s)
{
	return hc_hash_mix(hc_hash_fnv1a(HC_FNV1A_OFFSET, s, strlen(s)));
}

void hc__store_sp_free(struct strpool *sp)
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
int64_t hc__store_sp_find(const struct strpool *sp, const char *s)
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

int hc__store_sp_grow_slots(struct strpool *sp)
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
int64_t hc__store_sp_intern(struct strpool *sp, const char *s)
{
	int64_t id = hc__store_sp_find(sp, s);
	size_t len = strlen(s) + 1, i, mask;
	struct str_chunk *c;
	char *copy;

	if (id >= 0)
		return id;
	if (sp->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((sp->n + 1) * 10 > sp->n_slots * 7 && hc__store_sp_grow_slots(sp))
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

size_t hc__store_sp_bytes(const struct strpool *sp)
{
	return sp->chunk_bytes + sp->n_chunks * MALLOC_OVERHEAD + sp->cap * sizeof(*sp->strs) +
	       sp->n_slots * sizeof(*sp->slots) + 2 * MALLOC_OVERHEAD;
}

/* ---- open weights: node -> hc_weights ---- */

static inline size_t node_hash(uint32_t node)
{
	return (size_t)hc_hash_mix((uint64_t)node * HC_HASH_GOLDEN);
}

void hc__store_wtab_free(struct wtab *t)
{
	if (!t)
		return;
	free(t->e);
	free(t->slots);
	free(t);
}

size_t hc__store_wtab_bytes(const struct wtab *t)
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
void hc__store_wtab_reindex(struct wtab *t)
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

struct wtab *hc__store_wtab_new(uint32_t hint)
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

int hc__store_wtab_add(struct wtab *t, uint32_t node, const struct hc_weights *w)
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

/* What two cells of one (hist, pid, key, bucket) make: a sum, or for a maximum its max. */
static inline uint64_t cell_merge(uint8_t hist, uint64_t a, uint64_t b)
{
	if (hist == CELL_MAX_NS)
		return a > b ? a : b;
	return sat_add(a, b);
}

static inline size_t cell_hash(const struct hcell *c)
{
	uint64_t k[2] = {(uint64_t)c->pid << 32 | c->key, (uint64_t)c->hist << 16 | c->idx};

	return (size_t)hc_hash_words(k, 2, 0);
}

static inline bool cell_same(const struct hcell *a, const struct hcell *b)
{
	return a->pid == b->pid && a->key == b->key && a->idx == b->idx && a->hist == b->hist;
}

void hc__store_htab_free(struct htab *t)
{
	if (!t)
		return;
	free(t->c);
	free(t->slots);
	free(t);
}

size_t hc__store_htab_bytes(const struct htab *t)
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

struct htab *hc__store_htab_new(void)
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

int hc__store_htab_add(struct htab *t, const struct hcell *cell)
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

int hc__store_hcell_cmp(const void *a, const void *b)
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
		hc__store_wtab_reindex(t); /* the sort moved the entries */
		return -ENOMEM;
	}
	b->w_enc = enc;
	b->w_len = (size_t)(p - st->scratch);
	b->w_n = t->n;
	hc__store_wtab_free(t);
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
		err = hc__store_wtab_add(t, node, &w);
		if (err)
			return err;
	}
	return 0;
}

/* Make b's weights open (decoding them if sealed). */
int hc__store_open_weights(struct hc_store *st, struct bucket *b)
{
	struct wtab *t;

	if (b->w_open)
		return 0;
	t = hc__store_wtab_new(b->w_n);
	if (!t)
		return -ENOMEM;
	if (b->w_enc && wtab_add_encoded(t, b->w_enc, b->w_len, st->o.period_ns)) {
		hc__store_wtab_free(t);
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
int hc__store_bucket_each_weight(const struct hc_store *st, const struct bucket *b,
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

int hc__store_open_heat(struct bucket *b)
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
		qsort(t->c, t->n, sizeof(*t->c), hc__store_hcell_cmp);
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
	hc__store_htab_free(t);
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

int hc__store_bucket_each_cell(const struct bucket *b, int (*fn)(void *ctx, const struct hcell *c),
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

int hc__store_htab_add_cb(void *ctx, const struct hcell *c)
{
	return hc__store_htab_add(ctx, c);
}

int hc__store_open_hist(struct bucket *b)
{
	struct htab *t;

	if (b->h_open)
		return 0;
	t = hc__store_htab_new();
	if (!t)
		return -ENOMEM;
	if (hc__store_bucket_each_cell(b, hc__store_htab_add_cb, t)) {
		hc__store_htab_free(t);
		return -ENOMEM;
	}
	free(b->h_enc);
	b->h_enc = NULL;
	b->h_len = 0;
	b->h_open = t;
	return 0;
}

int hc__store_seal_bucket(struct hc_store *st, struct bucket *b)
{
	int err;

	err = seal_weights(st, b);
	if (!err)
		err = seal_heat(st, b);
	if (!err)
		err = seal_hist(st, b);
	hc__store_bucket_account(st, b);
	return err;
}
