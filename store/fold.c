// SPDX-License-Identifier: GPL-2.0-only
#include "store/fold.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "profile/weights.h"

/* Stack parents remembered at most (then forgotten, all at once): 2 MiB. */
#define SPAN_IDS_MAX (1u << 19)

void hc__fold_init(struct hc_fold *f, hc_fold_rows_fn rows, void *arg)
{
	memset(f, 0, sizeof(*f));
	f->rows = rows;
	f->arg = arg;
}

void hc__fold_forget(struct hc_fold *f)
{
	free(f->nodes);
	free(f->out);
	free(f->order);
	f->nodes = NULL;
	f->out = f->order = NULL;
	f->n_nodes = f->cap_nodes = f->cap_out = 0;
	f->gen = 0;
}

static void spans_clear(struct hc_fold *f)
{
	for (size_t i = 0; i < f->n_spans; i++)
		free(f->spans[i].parent);
	f->n_spans = f->span_ids = 0;
}

void hc__fold_release(struct hc_fold *f)
{
	hc__fold_forget(f);
	spans_clear(f);
	free(f->spans);
	f->spans = NULL;
	f->cap_spans = 0;
}

static size_t slot_of(uint64_t key, size_t cap)
{
	return (size_t)(hc_hash_mix(key) & (cap - 1));
}

/* The nodes' table grown to hold need of the current task at under half full. */
static int nodes_grow(struct hc_fold *f, size_t need)
{
	size_t ncap = f->cap_nodes ? f->cap_nodes : 1024;
	struct hc_fold_node *n;

	if (2 * need <= f->cap_nodes)
		return 0;
	while (2 * need > ncap)
		ncap *= 2;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap_nodes; i++) {
		size_t j;

		if (f->nodes[i].gen != f->gen)
			continue;
		for (j = slot_of(f->nodes[i].key, ncap); n[j].gen; j = (j + 1) & (ncap - 1))
			;
		n[j] = f->nodes[i];
	}
	free(f->nodes);
	f->nodes = n;
	f->cap_nodes = ncap;
	return 0;
}

/* A new task: the nodes' table empty (slots of older generations are free). */
static void nodes_next(struct hc_fold *f)
{
	if (f->gen == UINT32_MAX) {
		memset(f->nodes, 0, f->cap_nodes * sizeof(*f->nodes));
		f->gen = 0;
	}
	f->gen++;
	f->n_nodes = 0;
}

/* The index of the first span whose hi is at or above id (n_spans: none). */
static size_t span_at(const struct hc_fold *f, uint32_t id)
{
	size_t lo = 0, hi = f->n_spans;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->spans[mid].hi < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The rows around id read and kept as a span (spans they overlap, of chunks merged since,
 * dropped). 0, -errno. */
static int span_read(struct hc_fold *f, uint32_t id, uint32_t *parent)
{
	const struct hc_dict_stack *v;
	uint32_t lo, hi, *p;
	size_t at, end;
	int err = f->rows(f->arg, id, &lo, &hi, &v);

	if (err)
		return err;
	if (id <= lo || id > hi)
		return -EBADMSG;
	*parent = v[id - lo - 1].parent;
	if (f->span_ids + (hi - lo) > SPAN_IDS_MAX)
		spans_clear(f);
	p = malloc((hi - lo) * sizeof(*p));
	if (!p || (f->n_spans == f->cap_spans &&
		   hc_array_grow(f->spans, f->cap_spans, f->n_spans + 1, 64))) {
		free(p);
		return 0; /* not kept: read again when asked again */
	}
	for (uint32_t i = 0; i < hi - lo; i++)
		p[i] = v[i].parent;
	at = span_at(f, lo + 1);
	for (end = at; end < f->n_spans && f->spans[end].lo < hi; end++) {
		f->span_ids -= f->spans[end].hi - f->spans[end].lo;
		free(f->spans[end].parent);
	}
	memmove(&f->spans[at + 1], &f->spans[end], (f->n_spans - end) * sizeof(*f->spans));
	f->n_spans = f->n_spans + 1 - (end - at);
	f->spans[at] = (struct hc_fold_span){.lo = lo, .hi = hi, .parent = p};
	f->span_ids += hi - lo;
	return 0;
}

/* The parent of node id (a stack, or a fold's pseudo-node: its stack). 0, -errno. */
static int parent_of(struct hc_fold *f, uint32_t id, uint32_t *parent)
{
	size_t at;
	int err;

	if (id & HC_FOLD_BIT) {
		*parent = id & ~HC_FOLD_BIT;
		return 0;
	}
	at = f->last < f->n_spans && f->spans[f->last].lo < id && id <= f->spans[f->last].hi
		     ? f->last
		     : span_at(f, id);
	if (at < f->n_spans && f->spans[at].lo < id) {
		f->last = at;
		*parent = f->spans[at].parent[id - f->spans[at].lo - 1];
		err = 0;
	} else {
		err = span_read(f, id, parent);
	}
	/* a stack's parent is interned before it: a row that says otherwise is damaged (and
	 * could loop) */
	return err ? err : *parent < id ? 0 : -EBADMSG;
}

/* The subtree weight of node (of the current task), created at 0 when add. NULL: out of
 * memory. */
static uint64_t *node_at(struct hc_fold *f, uint32_t node, bool add)
{
	size_t j;

	if (add && nodes_grow(f, f->n_nodes + 1))
		return NULL;
	if (!f->cap_nodes)
		return NULL;
	for (j = slot_of(node, f->cap_nodes); f->nodes[j].gen == f->gen;
	     j = (j + 1) & (f->cap_nodes - 1))
		if (f->nodes[j].key == node)
			return &f->nodes[j].val;
	if (!add)
		return NULL;
	f->nodes[j] = (struct hc_fold_node){.key = node, .gen = f->gen};
	f->n_nodes++;
	return &f->nodes[j].val;
}

/*
 * Add w to node and the nodes above it (of the current task), up to the first one that held
 * below_ns before: the ones above that one hold it too (each node holds at least what its
 * child does, or below_ns), so a node lighter than below_ns always holds its whole subtree
 * and a heavier one at least below_ns, all that folding asks. 1: a parent could not be read
 * (those above it got nothing), 0, -ENOMEM.
 */
static int add_up(struct hc_fold *f, uint32_t node, uint64_t w, uint64_t below_ns)
{
	/* ends: parent_of only answers parents below their child */
	while (node) {
		uint64_t *v = node_at(f, node, true);

		if (!v)
			return -ENOMEM;
		if (*v >= below_ns)
			return 0;
		*v += w;
		if (parent_of(f, node, &node))
			return 1;
	}
	return 0;
}

static uint64_t weight_of(struct hc_fold *f, uint32_t node)
{
	const uint64_t *v = node_at(f, node, false);

	return v ? *v : 0;
}

/* Entry indices ordered by task. */
static int by_task(const void *x, const void *y, void *arg)
{
	const struct hc_blob_entry *e = arg;
	uint32_t a = e[*(const uint32_t *)x].task, b = e[*(const uint32_t *)y].task;

	return a < b ? -1 : a > b;
}

/* Fold the entries order[0..n) of b, all of one task, into f->out. 0, -ENOMEM. */
static int fold_task(struct hc_fold *f, const struct hc_blob *b, const uint32_t *order, size_t n,
		     uint64_t below_ns)
{
	nodes_next(f);
	/* each entry's stack, with a parent that could not be read marked by 0 */
	for (size_t k = 0; k < n; k++) {
		const struct hc_blob_entry *e = &b->e[order[k]];
		int err;

		f->out[order[k]] = e->stack;
		if (!e->stack)
			continue;
		err = add_up(f, e->stack, hc_weights__value(&e->w), below_ns);
		if (err < 0)
			return err;
		if (err) {
			f->out[order[k]] = 0;
			f->unreadable++;
		}
	}
	for (size_t k = 0; k < n; k++) {
		const struct hc_blob_entry *e = &b->e[order[k]];
		uint32_t a;

		if (!f->out[order[k]]) {
			f->out[order[k]] = e->stack;
			continue;
		}
		if (weight_of(f, e->stack) >= below_ns)
			continue;
		/* the parents were read by add_up, but may have been forgotten since */
		a = e->stack;
		do {
			if (parent_of(f, a, &a)) {
				a = UINT32_MAX;
				break;
			}
		} while (a && weight_of(f, a) < below_ns);
		if (a == UINT32_MAX) {
			f->unreadable++;
			continue;
		}
		f->out[order[k]] = HC_FOLD_BIT | a;
		if (f->out[order[k]] != e->stack) {
			f->entries++;
			f->ns += hc_weights__value(&e->w);
			f->moved = true;
		}
	}
	return 0;
}

int hc__fold_blob(struct hc_fold *f, struct hc_blob *b, uint64_t below_ns)
{
	int err = 0;

	if (!below_ns || !b->n)
		return 0;
	if (b->n > f->cap_out) {
		uint32_t *o = realloc(f->out, b->n * sizeof(*o));
		uint32_t *r = o ? realloc(f->order, b->n * sizeof(*r)) : NULL;

		if (o)
			f->out = o;
		if (r)
			f->order = r;
		if (!o || !r)
			return -ENOMEM;
		f->cap_out = b->n;
	}
	/* a task at a time: the nodes' table holds one thread's tree */
	for (size_t i = 0; i < b->n; i++)
		f->order[i] = (uint32_t)i;
	qsort_r(f->order, b->n, sizeof(*f->order), by_task, b->e);
	f->moved = false;
	for (size_t g = 0, k; !err && g < b->n; g = k) {
		for (k = g + 1; k < b->n && b->e[f->order[k]].task == b->e[f->order[g]].task; k++)
			;
		err = fold_task(f, b, f->order + g, k - g, below_ns);
	}
	if (err)
		return err;
	return f->moved ? hc_blob__restack(b, f->out) : 0;
}
