// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_store's queries (profile/store_int.h): the tree, pruned to a node budget, the timeline,
 * the heat map, histograms and counters. Read-only over the store.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_internal.h"
#include "profile/qtree.h"
#include "profile/store_int.h"

/* ---- queries: the tree ---- */

#define LOCAL_FAIL UINT32_MAX

struct query {
	const struct hc_store *st;
	const struct hc_store_filter *f;
	const char *comm;  /* pool pointer, or NULL (no comm filter, or no such name) */
	bool comm_absent;  /* a comm filter naming a string never seen: nothing matches */
	uint32_t *map;	   /* trie node -> local + 1, LOCAL_FAIL (filtered out), 0 (unseen) */
	struct hc_qtree t; /* local nodes, keyed by trie node */
};

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
	if (q->t.parent[parent_local] == 0) /* a thread */
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
	int64_t li;

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
		li = hc_qtree__add(&q->t, anc, id);
		if (li < 0)
			return li;
		q->map[id] = (uint32_t)li + 1;
		anc = (uint32_t)li;
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
	hc_weights__add(&q->t.w[li], &x);
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

static void query_elem(const void *ctx, uint32_t li, uint32_t node, struct hc_path_elem *e)
{
	const struct hc_store *st = ctx;
	const struct frame *fr = &st->frames[trie_frame(&st->trie, node) - 1];

	(void)li;
	e->kind = (enum hc_node_kind)fr->kind;
	e->name = fr->name;
	e->module = fr->module;
	e->id = fr->id;
	e->offset = fr->offset;
	e->inlined = fr->inlined;
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
		int64_t id = hc__store_sp_find(&st->sp, f->comm);

		if (id < 0)
			q.comm_absent = true;
		else
			q.comm = st->sp.strs[id];
	}
	q.map = calloc(st->trie.n, sizeof(*q.map));
	if (!q.map)
		return -ENOMEM;
	err = hc_qtree__init(&q.t, 0);
	if (err)
		goto out;

	if (f->from_s < f->to_s) {
		for (size_t i = hc__store_bk_lower(st, f->from_s);
		     i < st->n_bk && st->bk[i]->start_s < f->to_s; i++) {
			err = query_bucket(&q, st->bk[i]);
			if (err)
				goto out;
		}
	}
	err = hc_qtree__emit(&q.t, f->max_nodes, query_elem, st, out, pruned);
out:
	free(q.map);
	hc_qtree__release(&q.t);
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
	for (size_t i = hc__store_bk_lower(st, from_s); i < st->n_bk && st->bk[i]->start_s < to_s;
	     i++) {
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
	b = hc__store_bk_containing(st, sec);
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
	return hc__store_htab_add(hq->acc, &x);
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
		hq.comm_id = hc__store_sp_find(&st->sp, f->comm);
		if (hq.comm_id < 0)
			hq.comm_id = -2;
	}
	out = hc__store_hist_new_shape(h);
	hq.acc = hc__store_htab_new();
	if (!out || !hq.acc) {
		err = -ENOMEM;
		goto err;
	}
	if (f->from_s < f->to_s && hq.comm_id != -2) {
		for (size_t i = hc__store_bk_lower(st, f->from_s);
		     i < st->n_bk && st->bk[i]->start_s < f->to_s; i++) {
			err = hc__store_bucket_each_cell(st->bk[i], hist_query_cb, &hq);
			if (err)
				goto err;
		}
	}
	/* sorted, so that series are created in a stable order */
	if (hq.acc->n > 1)
		qsort(hq.acc->c, hq.acc->n, sizeof(*hq.acc->c), hc__store_hcell_cmp);
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
	hc__store_htab_free(hq.acc);
	return out;

err:
	hc__store_htab_free(hq.acc);
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
	return hc__store_htab_add(cq->acc, c);
}

int hc_store__counter(const struct hc_store *st, enum hc_store_counter c,
		      const struct hc_store_filter *f,
		      int (*fn)(void *ctx, const char *key, uint64_t value), void *ctx)
{
	struct counter_query cq = {.hist = (uint8_t)(CELL_COUNTER + c)};
	int err = 0;

	if (!st || !f || !fn || (unsigned int)c >= HC_STORE_C_MAX)
		return -EINVAL;
	cq.acc = hc__store_htab_new();
	if (!cq.acc)
		return -ENOMEM;
	for (size_t i = f->from_s < f->to_s ? hc__store_bk_lower(st, f->from_s) : st->n_bk;
	     i < st->n_bk && st->bk[i]->start_s < f->to_s && !err; i++)
		err = hc__store_bucket_each_cell(st->bk[i], counter_query_cb, &cq);
	if (!err && cq.acc->n > 1)
		qsort(cq.acc->c, cq.acc->n, sizeof(*cq.acc->c), hc__store_hcell_cmp);
	for (uint32_t k = 0; k < cq.acc->n && !err; k++)
		err = fn(ctx, st->sp.strs[cq.acc->c[k].key], cq.acc->c[k].count);
	hc__store_htab_free(cq.acc);
	return err;
}
