// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_store's path trie and frames (profile/store_int.h), and their garbage collection.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/hash.h"
#include "profile/store_int.h"

#define TRIE_MAX_NODES ((size_t)UINT32_MAX - 2)

/* ---- trie ---- */

static inline size_t trie_hash(uint64_t key)
{
	return (size_t)hc_hash_mix(key * HC_HASH_GOLDEN + 1);
}

int hc__store_trie_rehash(struct trie *t, size_t n_slots)
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
int64_t hc__store_trie_child(struct trie *t, uint32_t parent, uint32_t frame)
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
		if (hc__store_trie_rehash(t, t->n_slots * 2))
			return -ENOMEM;
		mask = t->n_slots - 1;
		for (i = h & mask; t->slots[i]; i = (i + 1) & mask)
			;
	}
	t->key[t->n] = key;
	t->slots[i] = t->n;
	return t->n++;
}

size_t hc__store_trie_bytes(const struct trie *t)
{
	return (size_t)t->cap * sizeof(*t->key) + t->n_slots * sizeof(*t->slots) +
	       2 * MALLOC_OVERHEAD;
}

/* ---- frames ---- */

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
int64_t hc__store_frame_intern(struct hc_store *st, const struct frame *f)
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
	name = hc__store_sp_intern(&st->sp, e->name);
	if (name < 0)
		return (int)name;
	if (e->module) {
		module = hc__store_sp_intern(&st->sp, e->module);
		if (module < 0)
			return (int)module;
	}
	f.name = st->sp.strs[name];
	f.module = module >= 0 ? st->sp.strs[module] : NULL;
	f.id = e->id;
	f.offset = e->offset;
	f.kind = (uint8_t)e->kind;
	f.inlined = e->inlined;
	fi = hc__store_frame_intern(st, &f);
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
int hc__store_trie_gc(struct hc_store *st)
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
		hc__store_bucket_each_weight(st, st->bk[i], gc_mark_cb, &m);
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
			hc__store_wtab_reindex(b->w_open);
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
			hc__store_bucket_account(st, b);
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
