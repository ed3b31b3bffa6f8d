// SPDX-License-Identifier: GPL-2.0-only
#include "store/fold.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "profile/store.h"
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
	free(f->keys);
	free(f->vals);
	free(f->out);
	f->keys = f->vals = NULL;
	f->out = NULL;
	f->n_nodes = f->cap_nodes = f->cap_out = 0;
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

/* The nodes' table grown to hold need at under half full. */
static int nodes_grow(struct hc_fold *f, size_t need)
{
	size_t ncap = f->cap_nodes ? f->cap_nodes : 1024;
	uint64_t *nk, *nv;

	if (2 * need <= f->cap_nodes)
		return 0;
	while (2 * need > ncap)
		ncap *= 2;
	nk = calloc(ncap, sizeof(*nk));
	nv = calloc(ncap, sizeof(*nv));
	if (!nk || !nv) {
		free(nk);
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < f->cap_nodes; i++) {
		size_t j;

		if (!f->keys[i])
			continue;
		for (j = slot_of(f->keys[i], ncap); nk[j]; j = (j + 1) & (ncap - 1))
			;
		nk[j] = f->keys[i];
		nv[j] = f->vals[i];
	}
	free(f->keys);
	free(f->vals);
	f->keys = nk;
	f->vals = nv;
	f->cap_nodes = ncap;
	return 0;
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

/* The subtree weight of (task, node), created at 0 when add. NULL: out of memory. */
static uint64_t *node_at(struct hc_fold *f, uint32_t task, uint32_t node, bool add)
{
	uint64_t key = (uint64_t)task << 32 | node;
	size_t j;

	if (add && nodes_grow(f, f->n_nodes + 1))
		return NULL;
	for (j = slot_of(key, f->cap_nodes); f->keys[j]; j = (j + 1) & (f->cap_nodes - 1))
		if (f->keys[j] == key)
			return &f->vals[j];
	if (!add)
		return NULL;
	f->keys[j] = key;
	f->vals[j] = 0;
	f->n_nodes++;
	return &f->vals[j];
}

/*
 * Add w to node and the nodes above it, for task, up to the first one that held below_ns
 * before: the ones above that one hold it too (each node holds at least what its child does,
 * or below_ns), so a node lighter than below_ns always holds its whole subtree and a heavier
 * one at least below_ns, all that folding asks. 1: a parent could not be read (those above
 * it got nothing), 0, -ENOMEM.
 */
static int add_up(struct hc_fold *f, uint32_t task, uint32_t node, uint64_t w, uint64_t below_ns)
{
	for (unsigned int depth = 0; node; depth++) {
		uint64_t *v = node_at(f, task, node, true);

		if (!v)
			return -ENOMEM;
		if (*v >= below_ns)
			return 0;
		*v += w;
		if (depth > HC_STORE_MAX_DEPTH || parent_of(f, node, &node))
			return 1;
	}
	return 0;
}

static uint64_t weight_of(struct hc_fold *f, uint32_t task, uint32_t node)
{
	const uint64_t *v = f->cap_nodes ? node_at(f, task, node, false) : NULL;

	return v ? *v : 0;
}

int hc__fold_blob(struct hc_fold *f, struct hc_blob *b, uint64_t below_ns)
{
	bool moved = false;
	int err = 0;

	if (!below_ns || !b->n)
		return 0;
	if (b->n > f->cap_out) {
		uint32_t *o = realloc(f->out, b->n * sizeof(*o));

		if (!o)
			return -ENOMEM;
		f->out = o;
		f->cap_out = b->n;
	}
	if (f->cap_nodes)
		memset(f->keys, 0, f->cap_nodes * sizeof(*f->keys));
	f->n_nodes = 0;
	/* each entry's stack, with a parent that could not be read marked by 0 */
	for (size_t i = 0; i < b->n; i++) {
		const struct hc_blob_entry *e = &b->e[i];

		f->out[i] = e->stack;
		if (!e->stack)
			continue;
		err = add_up(f, e->task, e->stack, hc_weights__value(&e->w), below_ns);
		if (err < 0)
			return err;
		if (err) {
			f->out[i] = 0;
			f->unreadable++;
		}
	}
	for (size_t i = 0; i < b->n; i++) {
		const struct hc_blob_entry *e = &b->e[i];
		uint32_t a;

		if (!f->out[i]) {
			f->out[i] = e->stack;
			continue;
		}
		if (weight_of(f, e->task, e->stack) >= below_ns)
			continue;
		/* the parents were read by add_up, but may have been forgotten since */
		a = e->stack;
		do {
			if (parent_of(f, a, &a)) {
				a = UINT32_MAX;
				break;
			}
		} while (a && weight_of(f, e->task, a) < below_ns);
		if (a == UINT32_MAX) {
			f->unreadable++;
			continue;
		}
		f->out[i] = HC_FOLD_BIT | a;
		if (f->out[i] != e->stack) {
			f->entries++;
			f->ns += hc_weights__value(&e->w);
			moved = true;
		}
	}
	return moved ? hc_blob__restack(b, f->out) : 0;
}
