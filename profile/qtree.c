// SPDX-License-Identifier: GPL-2.0-only
/*
 * A query's flame graph before pruning (profile/qtree.h): inclusive values, the max_nodes
 * heaviest kept (quickselect), written into an hc_tree.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "profile/profile_internal.h"
#include "profile/qtree.h"

#define HUGE_BYTES (2u << 20)
/* A hint asks for room for at most this many nodes at once (160 MB of address space); a
 * larger tree grows from there. */
#define QTREE_HINT_MAX (1u << 22)

static bool weights_none(const struct hc_weights *w)
{
	return !w->on_cpu_ns && !w->off_cpu_ns && !w->runqueue_ns && !w->samples;
}

/*
 * The arrays are mappings of their own, grown with mremap (no copy) and marked for huge pages:
 * a long range's tree is half a million nodes (20 MB), and a query that faulted them in 4 KiB
 * at a time spent a fifth of its time in page faults. Freed whole, back to the system.
 */
/* A new mapping of bytes; from HUGE_BYTES up, aligned to them (huge pages need it). */
static void *big_map(size_t bytes)
{
	size_t slack = bytes >= HUGE_BYTES ? HUGE_BYTES : 0, head;
	uint8_t *m = mmap(NULL, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);

	if (m == MAP_FAILED)
		return MAP_FAILED;
	if (!slack)
		return m;
	head = (HUGE_BYTES - (uintptr_t)m % HUGE_BYTES) % HUGE_BYTES;
	if (head)
		munmap(m, head);
	if (slack - head)
		munmap(m + head + bytes, slack - head);
	return m + head;
}

static void *big_grow(void *p, size_t old_bytes, size_t bytes)
{
	void *n = p ? mremap(p, old_bytes, bytes, MREMAP_MAYMOVE) : big_map(bytes);

	if (n == MAP_FAILED)
		return NULL;
	if (bytes >= HUGE_BYTES)
		(void)madvise(n, bytes, MADV_HUGEPAGE); /* advice: refused is fine */
	return n;
}

static void big_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}

/* p back to `bytes` (NULL for 0). */
static void *shrink(void *p, size_t old_bytes, size_t bytes)
{
	void *n;

	if (!bytes) {
		big_free(p, old_bytes);
		return NULL;
	}
	n = mremap(p, old_bytes, bytes, 0);
	return n == MAP_FAILED ? p : n;
}

/* The arrays grown to cap nodes (> q->cap). */
static int qtree_grow(struct hc_qtree *q, uint32_t cap)
{
	struct hc_weights *w;
	uint32_t *k, *p;

	k = big_grow(q->key, q->cap * sizeof(*k), cap * sizeof(*k));
	if (!k)
		return -ENOMEM;
	q->key = k;
	p = big_grow(q->parent, q->cap * sizeof(*p), cap * sizeof(*p));
	if (!p)
		goto undo_key;
	q->parent = p;
	w = big_grow(q->w, q->cap * sizeof(*w), (size_t)cap * sizeof(*w));
	if (!w)
		goto undo_parent;
	q->w = w;
	q->cap = cap;
	return 0;

	/* the arrays share q->cap: give the grown ones back to that (in place: cannot fail) */
undo_parent:
	q->parent = shrink(q->parent, cap * sizeof(*p), q->cap * sizeof(*p));
undo_key:
	q->key = shrink(q->key, cap * sizeof(*k), q->cap * sizeof(*k));
	return -ENOMEM;
}

int hc_qtree__init(struct hc_qtree *q, size_t hint)
{
	uint32_t cap = 4096;

	memset(q, 0, sizeof(*q));
	while (cap < hint && cap < QTREE_HINT_MAX)
		cap *= 2;
	if (qtree_grow(q, cap))
		return -ENOMEM;
	q->key[0] = 0;
	q->parent[0] = 0;
	memset(&q->w[0], 0, sizeof(q->w[0]));
	q->n = 1;
	return 0;
}

void hc_qtree__release(struct hc_qtree *q)
{
	big_free(q->key, q->cap * sizeof(*q->key));
	big_free(q->parent, q->cap * sizeof(*q->parent));
	big_free(q->w, q->cap * sizeof(*q->w));
	memset(q, 0, sizeof(*q));
}

int64_t hc_qtree__add(struct hc_qtree *q, uint32_t parent, uint32_t key)
{
	if (parent >= q->n)
		return -EINVAL;
	if (q->n == q->cap && (q->cap >= (1u << 31) || qtree_grow(q, q->cap * 2)))
		return -ENOMEM;
	q->key[q->n] = key;
	q->parent[q->n] = parent;
	memset(&q->w[q->n], 0, sizeof(q->w[q->n]));
	return q->n++;
}

struct rank {
	uint64_t v;
	uint32_t li; /* the tie-break, lower first: a parent before its children */
};

static inline bool rank_better(const struct rank *a, const struct rank *b)
{
	return a->v > b->v || (a->v == b->v && a->li < b->li);
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

/* A value's bit length (0 for 0): values of a lower one are all smaller. */
static unsigned int bit_length(uint64_t v)
{
	return v ? 64u - (unsigned int)__builtin_clzll(v) : 0;
}

/*
 * keep[]: the nodes to write, the root always. Past the budget, the heaviest: only nodes of
 * the bit lengths that hold the best max_nodes - 1 are ranked (a range's long tails of light
 * nodes never are), then quickselect among them.
 */
static int qtree_keep(const struct hc_qtree *q, size_t max_nodes, uint8_t *keep)
{
	size_t cand = 0, k = 0, by_len[65] = {0}, above = 0;
	unsigned int min_len = 65;
	struct rank *r;

	for (uint32_t i = 1; i < q->n; i++) {
		if (weights_none(&q->w[i]))
			continue;
		cand++;
		by_len[bit_length(hc_weights__value(&q->w[i]))]++;
	}
	keep[0] = 1;
	if (!max_nodes || cand + 1 <= max_nodes) {
		for (uint32_t i = 1; i < q->n; i++)
			keep[i] = !weights_none(&q->w[i]);
		return 0;
	}
	if (max_nodes < 2)
		return 0;
	while (min_len > 0 && above < max_nodes - 1)
		above += by_len[--min_len];
	r = malloc(above * sizeof(*r));
	if (!r)
		return -ENOMEM;
	for (uint32_t i = 1; i < q->n; i++) {
		uint64_t v = hc_weights__value(&q->w[i]);

		if (!weights_none(&q->w[i]) && bit_length(v) >= min_len)
			r[k++] = (struct rank){.v = v, .li = i};
	}
	rank_select(r, (ptrdiff_t)k, (ptrdiff_t)max_nodes - 2);
	for (k = 0; k + 1 < max_nodes; k++)
		keep[r[k].li] = 1;
	free(r);
	return 0;
}

int hc_qtree__emit(struct hc_qtree *q, size_t max_nodes, hc_qtree_elem_fn elem, const void *ctx,
		   struct hc_tree *out, struct hc_store_pruned *pruned)
{
	uint32_t *out_idx = NULL;
	uint8_t *keep = NULL;
	int err = -ENOMEM;

	/* inclusive values: children have higher indices than their parents */
	for (uint32_t i = q->n; i-- > 1;)
		hc_weights__add(&q->w[q->parent[i]], &q->w[i]);
	keep = calloc(q->n, 1);
	out_idx = malloc((size_t)q->n * sizeof(*out_idx));
	if (!keep || !out_idx || (err = qtree_keep(q, max_nodes, keep)))
		goto out;
	if (pruned) {
		pruned->nodes = 0;
		pruned->value_ns = 0;
		for (uint32_t i = 1; i < q->n; i++) {
			if (keep[i] || weights_none(&q->w[i]))
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
		struct hc_path_elem e;
		int64_t idx;

		if (!keep[i])
			continue;
		elem(ctx, i, q->key[i], &e);
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
	return err;
}
