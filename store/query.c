// SPDX-License-Identifier: GPL-2.0-only
/*
 * The disk store's queries: the range a tier answers, the rows that cover it, and the scratch
 * in-memory store a range is summed into (docs/store.md, "On disk", "Queries").
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "profile/qtree.h"
#include "store/disk_int.h"

int hc_disk__pick(struct hc_disk *d, int64_t from_s, int64_t to_s, struct hc_disk_range *out)
{
	struct hc_disk_stats st;
	int tier = -1;

	pthread_mutex_lock(&d->mu);
	st = d->st;
	pthread_mutex_unlock(&d->mu);
	/* Tiers 0..2 answer; the 1 h tier only serves their plans (read_range). */
	for (int i = 0; i < HC_DISK_TIERS - 1 && tier < 0; i++)
		if (st.tier[i].buckets && st.tier[i].oldest_s <= from_s)
			tier = i;
	for (int i = HC_DISK_TIERS - 1; tier < 0 && i-- > 0;)
		if (st.tier[i].buckets)
			tier = i;
	if (tier < 0)
		return -ENODATA;
	out->tier = tier;
	out->from_s = from_s - ((from_s % hc__disk_tier_step[tier]) + hc__disk_tier_step[tier]) %
				       hc__disk_tier_step[tier];
	out->to_s = to_s + (hc__disk_tier_step[tier] -
			    ((to_s % hc__disk_tier_step[tier]) + hc__disk_tier_step[tier]) %
				    hc__disk_tier_step[tier]) %
				   hc__disk_tier_step[tier];
	if (out->from_s < st.tier[tier].oldest_s)
		out->from_s = st.tier[tier].oldest_s;
	/* The newest seconds may not be in this tier's windows yet (they are built from the
	 * tier below a while later): the plan takes them from finer tiers. */
	if (out->to_s > st.newest_s + 1)
		out->to_s = st.newest_s + 1;
	if (out->to_s < out->from_s)
		out->to_s = out->from_s;
	return 0;
}

/* One piece of a range: [from_s, to_s) of one tier. */
struct piece {
	int tier;
	int64_t from_s, to_s;
};

/* Pieces a plan may need: each tier splits what it does not cover into two. */
#define PLAN_PIECES ((1u << HC_DISK_TIERS) - 1)

/*
 * Cover [lo, hi) with the fewest rows: the whole windows of the coarsest tier that holds them
 * in the middle, finer tiers at the edges. A tier holds every second of the windows from its
 * oldest to its newest (a window is built whole from the tier below, then kept whole), and the
 * 1 s tier everything since its oldest, so the pieces sum to the range exactly.
 */
static void plan(const struct hc_disk_stats *st, int j, int64_t lo, int64_t hi, struct piece *p,
		 size_t *n)
{
	int64_t step, a, b;

	if (lo >= hi || j < 0)
		return;
	step = hc__disk_tier_step[j];
	a = lo;
	b = hi;
	if (st->tier[j].buckets) {
		if (a < st->tier[j].oldest_s)
			a = st->tier[j].oldest_s;
		if (j && b > st->tier[j].newest_s + 1)
			b = st->tier[j].newest_s + 1;
	}
	a = hc__disk_floor(a + step - 1, step);
	b = hc__disk_floor(b, step);
	if (a >= b || !st->tier[j].buckets) {
		plan(st, j - 1, lo, hi, p, n);
		return;
	}
	plan(st, j - 1, lo, a, p, n);
	p[(*n)++] = (struct piece){j, a, b};
	plan(st, j - 1, b, hi, p, n);
}

/* The blobs of a range's rows, copied out of the read transaction's pages. */
struct rows {
	uint8_t *p;
	size_t len, cap;
	size_t *off; /* row i is p[off[i], off[i + 1]) */
	size_t n, cap_off;
};

static int rows_add(struct rows *rs, const void *blob, size_t len)
{
	if ((rs->n + 2 > rs->cap_off && hc_array_grow(rs->off, rs->cap_off, rs->n + 2, 64)) ||
	    (rs->len + len > rs->cap && hc_array_grow(rs->p, rs->cap, rs->len + len, 65536)))
		return -ENOMEM;
	if (len)
		memcpy(rs->p + rs->len, blob, len);
	rs->off[rs->n++] = rs->len;
	rs->len += len;
	rs->off[rs->n] = rs->len;
	return 0;
}

/* Rows [first, last) decoded into acc; a damaged one is counted in bad and skipped. */
struct decode_part {
	const struct rows *rs;
	size_t first, last;
	struct hc_blob *acc;
	bool entries, cells;
	uint64_t bad;
	int err;
};

static void *decode_part(void *arg)
{
	struct decode_part *d = arg;

	for (size_t i = d->first; !d->err && i < d->last; i++) {
		d->err = hc_blob__decode(d->acc, d->rs->p + d->rs->off[i],
					 d->rs->off[i + 1] - d->rs->off[i], d->entries, d->cells);
		if (d->err == -EBADMSG) {
			d->bad++;
			d->err = 0;
		}
	}
	return NULL;
}

size_t hc__disk_decode_split_bytes = HC_DISK_DECODE_SPLIT_BYTES;
size_t hc__disk_decode_batch_bytes = HC_DISK_DECODE_BATCH_BYTES;

/*
 * The rows decoded into acc: a long range's on two threads, the first half of the bytes on
 * this one and the second half on another, then the second's sums added to the first's. That
 * adds every entry and cell in the order one thread would (a new one after all that came
 * before it), so the answer is the same either way.
 */
static int decode_rows(const struct rows *rs, struct hc_blob *acc, bool entries, bool cells,
		       uint64_t *bad)
{
	struct decode_part a = {
		.rs = rs, .last = rs->n, .acc = acc, .entries = entries, .cells = cells};
	struct decode_part b = a;
	struct hc_blob acc2;
	pthread_t t;
	size_t half = 0;
	bool two;

	while (half < rs->n && rs->off[half] < rs->len / 2)
		half++;
	two = rs->len >= hc__disk_decode_split_bytes && half > 0 && half < rs->n;
	if (two) {
		hc_blob__init(&acc2, acc->t, acc->period_ns);
		a.last = b.first = half;
		b.acc = &acc2;
		two = !pthread_create(&t, NULL, decode_part, &b);
		if (!two) {
			hc_blob__release(&acc2);
			a.last = rs->n;
		}
	}
	decode_part(&a);
	if (two) {
		pthread_join(t, NULL);
		if (!a.err)
			a.err = b.err;
		if (!a.err)
			a.err = hc_blob__add_blob(acc, &acc2);
		a.bad += b.bad;
		hc_blob__release(&acc2);
	}
	*bad += a.bad;
	return a.err;
}

/* The rows copied so far, decoded into acc and let go. */
static int flush_rows(struct rows *rs, struct hc_blob *acc, bool entries, bool cells, uint64_t *bad)
{
	int err = rs->n ? decode_rows(rs, acc, entries, cells, bad) : 0;

	rs->n = rs->len = 0;
	return err;
}

/* The rows of range r, store s, decoded into acc. */
static int read_range(struct hc_disk *d, sqlite3 *db, enum hc_disk_store s,
		      const struct hc_disk_range *r, struct hc_blob *acc, bool entries, bool cells)
{
	struct piece pieces[PLAN_PIECES];
	struct hc_disk_stats st;
	struct rows rs = {0};
	sqlite3_stmt *stmt;
	uint64_t bad = 0;
	size_t np = 0;
	int err = 0, rc = SQLITE_DONE;

	if (sqlite3_prepare_v2(db,
			       "SELECT data FROM bucket WHERE tier=? AND t>=? AND t<? AND store=?",
			       -1, &stmt, NULL) != SQLITE_OK)
		return -hc__disk_sql_errno(sqlite3_errcode(db));
	pthread_mutex_lock(&d->mu);
	st = d->st;
	pthread_mutex_unlock(&d->mu);
	plan(&st, HC_DISK_TIERS - 1, r->from_s, r->to_s, pieces, &np);
	for (size_t i = 0; !err && i < np; i++) {
		sqlite3_bind_int(stmt, 1, pieces[i].tier);
		sqlite3_bind_int64(stmt, 2, pieces[i].from_s);
		sqlite3_bind_int64(stmt, 3, pieces[i].to_s);
		sqlite3_bind_int(stmt, 4, s);
		while (!err && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			err = rows_add(&rs, sqlite3_column_blob(stmt, 0),
				       (size_t)sqlite3_column_bytes(stmt, 0));
			if (!err && rs.len >= hc__disk_decode_batch_bytes)
				err = flush_rows(&rs, acc, entries, cells, &bad);
		}
		if (!err && rc != SQLITE_DONE)
			err = -hc__disk_sql_errno(rc);
		sqlite3_reset(stmt);
	}
	sqlite3_finalize(stmt);
	if (!err)
		err = flush_rows(&rs, acc, entries, cells, &bad);
	free(rs.p);
	free(rs.off);
	if (bad) {
		pthread_mutex_lock(&d->mu);
		d->st.corrupt_blobs += bad;
		pthread_mutex_unlock(&d->mu);
	}
	return err;
}

/* A query's map of dictionary ids (not 0) to what it made of them. */
struct idmap_slot {
	uint64_t val;
	uint32_t key;
};

struct idmap {
	struct idmap_slot *s;
	size_t cap, n; /* cap: a power of two, or 0 */
};

static const uint64_t *idmap_find(const struct idmap *m, uint32_t key)
{
	size_t mask = m->cap - 1;

	for (size_t i = m->cap ? hc_hash_splitmix(key) & mask : 0; m->cap && m->s[i].key;
	     i = (i + 1) & mask)
		if (m->s[i].key == key)
			return &m->s[i].val;
	return NULL;
}

static void idmap_place(struct idmap_slot *s, size_t cap, uint32_t key, uint64_t val)
{
	size_t i = hc_hash_splitmix(key) & (cap - 1);

	while (s[i].key)
		i = (i + 1) & (cap - 1);
	s[i] = (struct idmap_slot){.val = val, .key = key};
}

/* A key not in m yet. */
static int idmap_put(struct idmap *m, uint32_t key, uint64_t val)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct idmap_slot *s = hc_calloc_written(cap, sizeof(*s));

		if (!s)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->s[i].key)
				idmap_place(s, cap, m->s[i].key, m->s[i].val);
		free(m->s);
		m->s = s;
		m->cap = cap;
	}
	idmap_place(m->s, m->cap, key, val);
	m->n++;
	return 0;
}

/* A query's map of 64-bit keys to node indices; emptied in O(1) (a slot of another
 * generation is empty), so that one table serves group after group. */
struct nodemap_slot {
	uint64_t key;
	uint32_t val, gen;
};

struct nodemap {
	struct nodemap_slot *s;
	size_t cap, n; /* cap: a power of two, or 0 */
	uint32_t gen;  /* of the slots in use; zeroed slots are of generation 0 */
};

static void nodemap_clear(struct nodemap *m)
{
	m->n = 0;
	if (++m->gen == 0) {
		memset(m->s, 0, m->cap * sizeof(*m->s));
		m->gen = 1;
	}
}

static const uint32_t *nodemap_find(const struct nodemap *m, uint64_t key)
{
	size_t mask = m->cap - 1;

	for (size_t i = m->cap ? hc_hash_mix(key) & mask : 0; m->cap && m->s[i].gen == m->gen;
	     i = (i + 1) & mask)
		if (m->s[i].key == key)
			return &m->s[i].val;
	return NULL;
}

static void nodemap_place(struct nodemap_slot *s, size_t cap, uint32_t gen, uint64_t key,
			  uint32_t val)
{
	size_t i = hc_hash_mix(key) & (cap - 1);

	while (s[i].gen == gen)
		i = (i + 1) & (cap - 1);
	s[i] = (struct nodemap_slot){.key = key, .val = val, .gen = gen};
}

/* A key not in m yet. */
static int nodemap_put(struct nodemap *m, uint64_t key, uint32_t val)
{
	if (!m->gen)
		m->gen = 1;
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct nodemap_slot *s = hc_calloc_written(cap, sizeof(*s));

		if (!s)
			return -ENOMEM;
		for (size_t i = 0; i < m->cap; i++)
			if (m->s[i].gen == m->gen)
				nodemap_place(s, cap, 1, m->s[i].key, m->s[i].val);
		free(m->s);
		m->s = s;
		m->cap = cap;
		m->gen = 1;
	}
	nodemap_place(m->s, m->cap, m->gen, key, val);
	m->n++;
	return 0;
}

/*
 * A range summed into one flame graph (an hc_qtree whose keys are frame ids of the query's own
 * dictionary, `ids`: an element every epoch repeats is one node, as in one epoch) and, for the
 * histograms and counters, a scratch in-memory store holding the range's cells in one second
 * (so that their rules are the in-memory store's own). Ids of the current epoch resolve from
 * memory, older ones from the file, in the read transaction that read the buckets (so their
 * rows are there); each id once per query, and each stack once per thread: an entry's node
 * is its stack's parent's node extended by one frame. Entries are taken thread by thread.
 */
struct hydrate {
	struct hc_store *st;
	struct hc_dict *cur; /* the current epoch, referenced */
	sqlite3 *db;
	sqlite3_stmt *get[HC_DICT_TABLES];
	struct hc_stackrows rows; /* stack rows by id */
	uint64_t lookups;
	struct idmap frames; /* frame id -> ids' frame id */
	struct idmap tasks;  /* task id -> ids' process id << 32 | thread id; 0: filtered out */
	struct idmap stacks; /* stack id of an older epoch -> parent << 32 | frame */
	/* the rows of older epochs read whole (prefetch), by id - lo - 1: ids' frame id (0: not
	 * interned yet, or no row), or a stack's parent << 32 | frame (0: no row) */
	struct span {
		uint32_t lo, hi;
		uint64_t *v;
		/* frames: the epoch's rows, interned as met; stacks: v is the epoch's own */
		const struct hc_epoch_rows *src;
	} * spans[HC_DICT_TABLES];
	size_t n_spans[HC_DICT_TABLES];
	struct hc_epoch_cache *cache;
	struct hc_epoch_rows **held; /* the epochs the spans are of, referenced */
	size_t n_held, cap_held;
	/* epochs whose stack ids end at or below it are whole in the file (kept when read) */
	uint32_t written_below;
	struct hc_dict *ids;
	struct hc_qtree qt;
	struct nodemap top;   /* the process and thread levels: parent << 32 | element -> node */
	struct idmap threads; /* task id -> its thread's node + 1; 1: filtered out */
	/* one thread's entries at a time (small, so they stay in the cache): */
	struct nodemap node;   /* stack id -> node */
	struct nodemap child;  /* node << 32 | ids' frame id -> node */
	struct hc_weights sel; /* the weights the tree takes: each field all ones or 0 */
	int64_t small;	       /* ids' frame id of HC_FOLD_NAME; 0: not defined yet */
	uint32_t *chain;
	size_t cap_chain;
};

#define SCRATCH_SEC 0
#define QTREE_NODES_PER_ENTRY 8
/* An older epoch is read whole when the range names at least one of its stacks per this
 * many of its stacks (an entry's path holds several). */
#define PREFETCH_STACKS_PER_ENTRY 16

static int64_t scratch_define(struct hydrate *h, const struct hc_path_elem *e)
{
	int64_t id = hc_dict__frame(h->ids, e);

	return id ? id : -EINVAL;
}

/* Row id of table t: from the current epoch, else from the file (strings valid until the
 * next lookup of t). -ENOENT: no such id. */
static int query_row(struct hydrate *h, enum hc_dict_table t, uint32_t id, struct dict_row *r)
{
	int rc;

	if (hc_dict__has(h->cur, t, id)) {
		hc__disk_row_from_dict(h->cur, t, id, r);
		return 0;
	}
	if (t == HC_DICT_STACKS) {
		h->lookups++;
		return hc__stackrows_get(&h->rows, id, &r->stack);
	}
	if (!h->get[t] &&
	    sqlite3_prepare_v2(h->db, hc__disk_row_sql[t], -1, &h->get[t], NULL) != SQLITE_OK)
		return -hc__disk_sql_errno(sqlite3_errcode(h->db));
	sqlite3_reset(h->get[t]);
	sqlite3_bind_int64(h->get[t], 1, id);
	rc = sqlite3_step(h->get[t]);
	h->lookups++;
	if (rc != SQLITE_ROW)
		return rc == SQLITE_DONE ? -ENOENT : -hc__disk_sql_errno(rc);
	hc__disk_row_read(t, h->get[t], 0, r);
	return 0;
}

/* The prefetched span of table t that holds id, NULL: none. Spans are kept in order of their
 * ids and never overlap. */
static struct span *span_of(const struct hydrate *h, enum hc_dict_table t, uint32_t id)
{
	size_t lo = 0, hi = h->n_spans[t];

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		struct span *sp = &h->spans[t][mid];

		if (id <= sp->lo)
			hi = mid;
		else if (id > sp->hi)
			lo = mid + 1;
		else
			return sp;
	}
	return NULL;
}

/* What a prefetched span holds for id of table t (0: nothing), NULL: no span has it. */
static const uint64_t *span_find(const struct hydrate *h, enum hc_dict_table t, uint32_t id)
{
	const struct span *sp = span_of(h, t, id);

	return sp ? &sp->v[id - sp->lo - 1] : NULL;
}

/* A new span of ids (lo, hi] of table t, in its place among the others: its values are
 * `own` (an epoch's stacks, not freed here), or zeroed when own is NULL. NULL when it would
 * overlap one (or out of memory). Valid until the next span is added. */
static struct span *span_new(struct hydrate *h, enum hc_dict_table t, uint32_t lo, uint32_t hi,
			     uint64_t *own)
{
	size_t n = h->n_spans[t], at = n;
	struct span *sp;
	uint64_t *v;

	while (at > 0 && h->spans[t][at - 1].lo >= hi)
		at--;
	if ((at > 0 && h->spans[t][at - 1].hi > lo) || (at < n && h->spans[t][at].lo < hi))
		return NULL;
	v = own ? own : calloc(hi - lo, sizeof(*v));
	sp = v ? realloc(h->spans[t], (n + 1) * sizeof(*sp)) : NULL;
	if (!sp) {
		if (!own)
			free(v);
		return NULL;
	}
	h->spans[t] = sp;
	memmove(&sp[at + 1], &sp[at], (n - at) * sizeof(*sp));
	sp[at] = (struct span){.lo = lo, .hi = hi, .v = v};
	h->n_spans[t]++;
	return &sp[at];
}

static int64_t scratch_frame(struct hydrate *h, uint32_t f)
{
	struct span *sp = span_of(h, HC_DICT_FRAMES, f);
	const uint64_t *v;
	struct dict_row r;
	int64_t id;
	int err;

	if (sp) {
		uint64_t *slot = &sp->v[f - sp->lo - 1];

		if (*slot)
			return (int64_t)*slot;
		if (sp->src && hc__epoch_rows_frame(sp->src, f, &r.frame)) {
			id = scratch_define(h, &r.frame);
			if (id > 0)
				*slot = (uint64_t)id;
			return id;
		}
	}
	v = idmap_find(&h->frames, f);
	if (v)
		return (int64_t)*v;
	err = query_row(h, HC_DICT_FRAMES, f, &r);
	if (err)
		return err;
	id = scratch_define(h, &r.frame);
	if (id > 0 && (err = idmap_put(&h->frames, f, (uint64_t)id)))
		return err;
	return id;
}

static int stack_link(struct hydrate *h, uint32_t s, struct hc_dict_stack *out)
{
	const uint64_t *v;
	struct dict_row r;
	int err;

	if (hc_dict__has(h->cur, HC_DICT_STACKS, s)) {
		*out = *(const struct hc_dict_stack *)hc_dict__entry(h->cur, HC_DICT_STACKS, s);
		return 0;
	}
	v = span_find(h, HC_DICT_STACKS, s);
	if (!v || !*v)
		v = idmap_find(&h->stacks, s);
	if (v) {
		*out = (struct hc_dict_stack){.parent = (uint32_t)(*v >> 32),
					      .frame = (uint32_t)*v};
		return 0;
	}
	err = query_row(h, HC_DICT_STACKS, s, &r);
	if (err)
		return err;
	*out = r.stack;
	/* the whole chunk read for it (its neighbours are met next, more often than not) */
	if (s > h->rows.lo && s <= h->rows.hi) {
		struct span *sp = span_new(h, HC_DICT_STACKS, h->rows.lo, h->rows.hi, NULL);

		if (sp) {
			for (uint32_t i = 0; i < sp->hi - sp->lo; i++)
				sp->v[i] = (uint64_t)h->rows.v[i].parent << 32 | h->rows.v[i].frame;
			return 0;
		}
	}
	return idmap_put(&h->stacks, s, (uint64_t)r.stack.parent << 32 | r.stack.frame);
}

static bool task_passes(const struct hc_dict_task *t, const struct hc_store_filter *f)
{
	return (!f->has_pid || t->pid == f->pid) && (!f->has_tid || t->tid == f->tid) &&
	       (!f->comm || !strcmp(f->comm, t->process ? t->process : ""));
}

/* The scratch process and thread ids of a task, 0 when the filter leaves it out. */
static int scratch_task(struct hydrate *h, uint32_t task, const struct hc_store_filter *f,
			uint64_t *out)
{
	const uint64_t *v = idmap_find(&h->tasks, task);
	struct dict_row r;
	int err;

	if (v) {
		*out = *v;
		return 0;
	}
	err = query_row(h, HC_DICT_TASKS, task, &r);
	if (err)
		return err;
	*out = 0;
	if (task_passes(&r.task, f)) {
		struct hc_path_elem p = {.kind = HC_NODE_PROCESS,
					 .name = r.task.process ? r.task.process : "",
					 .id = r.task.pid,
					 .offset = -1};
		struct hc_path_elem th = {.kind = HC_NODE_THREAD,
					  .name = r.task.thread ? r.task.thread : "",
					  .id = r.task.tid,
					  .offset = -1};
		int64_t a = scratch_define(h, &p), b = a > 0 ? scratch_define(h, &th) : a;

		if (b <= 0)
			return b ? (int)b : -EINVAL;
		*out = (uint64_t)a << 32 | (uint64_t)b;
	}
	return idmap_put(&h->tasks, task, *out);
}

/* The node under parent for ids' element id in map m, added if new. */
static int64_t child_node(struct hydrate *h, struct nodemap *m, uint32_t parent, uint32_t id)
{
	uint64_t key = (uint64_t)parent << 32 | id;
	const uint32_t *v = nodemap_find(m, key);
	int64_t li;
	int err;

	if (v)
		return *v;
	li = hc_qtree__add(&h->qt, parent, id);
	if (li < 0)
		return li;
	err = nodemap_put(m, key, (uint32_t)li);
	return err ? err : li;
}

/* The node of a task's thread, 0 when the filter leaves the task out. */
static int64_t thread_node(struct hydrate *h, uint32_t task, const struct hc_store_filter *f)
{
	const uint64_t *v = idmap_find(&h->threads, task);
	int64_t li = 0;
	uint64_t pt;
	int err;

	if (v)
		return (int64_t)*v - 1;
	err = scratch_task(h, task, f, &pt);
	if (err)
		return err;
	if (pt) {
		li = child_node(h, &h->top, 0, (uint32_t)(pt >> 32));
		if (li > 0)
			li = child_node(h, &h->top, (uint32_t)li, (uint32_t)pt);
		if (li < 0)
			return li;
	}
	err = idmap_put(&h->threads, task, (uint64_t)li + 1);
	return err ? err : li;
}

/*
 * The node of a stack under thread node th (the thread's entries are taken together: h->node
 * and h->child hold its nodes): the stack's links walked leaf first up to the first one met
 * before (or up to the thread), then the nodes below it found or added top down.
 */
static int64_t stack_node(struct hydrate *h, uint32_t th, uint32_t stack)
{
	struct hc_dict_stack link;
	const uint32_t *v = NULL;
	size_t depth = 0; /* links walked: (stack, frame) pairs in chain */
	int64_t li;
	int err;

	/* a coarse tier's small stacks: a child of the stack they were folded under */
	if (stack & HC_FOLD_BIT) {
		static const struct hc_path_elem small = {
			.kind = HC_NODE_USER, .name = HC_FOLD_NAME, .offset = -1};

		li = stack & ~HC_FOLD_BIT ? stack_node(h, th, stack & ~HC_FOLD_BIT) : th;
		if (li > 0 && !h->small && (h->small = scratch_define(h, &small)) < 0)
			return h->small;
		return li > 0 ? child_node(h, &h->child, (uint32_t)li, (uint32_t)h->small) : li;
	}
	for (uint32_t s = stack; s && !(v = nodemap_find(&h->node, s)); s = link.parent) {
		if (depth + 2 >= HC_STORE_MAX_DEPTH)
			return -EINVAL;
		err = stack_link(h, s, &link);
		if (err)
			return err;
		if (2 * depth + 2 > h->cap_chain &&
		    hc_array_grow(h->chain, h->cap_chain, 2 * depth + 2, 128))
			return -ENOMEM;
		h->chain[2 * depth] = s;
		h->chain[2 * depth + 1] = link.frame;
		depth++;
	}
	li = v ? *v : th;
	while (depth--) {
		int64_t id = scratch_frame(h, h->chain[2 * depth + 1]);

		if (id <= 0)
			return id ? id : -EINVAL;
		li = child_node(h, &h->child, (uint32_t)li, (uint32_t)id);
		if (li < 0)
			return li;
		err = nodemap_put(&h->node, h->chain[2 * depth], (uint32_t)li);
		if (err)
			return err;
	}
	return li;
}

static void hydrate_maps_free(struct hydrate *h)
{
	free(h->frames.s);
	free(h->tasks.s);
	free(h->stacks.s);
	free(h->threads.s);
	free(h->top.s);
	free(h->node.s);
	free(h->child.s);
	free(h->chain);
	h->frames = h->tasks = h->stacks = h->threads = (struct idmap){0};
	for (int t = 0; t < HC_DICT_TABLES; t++) {
		for (size_t i = 0; i < h->n_spans[t]; i++)
			if (t != HC_DICT_STACKS || !h->spans[t][i].src)
				free(h->spans[t][i].v);
		free(h->spans[t]);
		h->spans[t] = NULL;
		h->n_spans[t] = 0;
	}
	for (size_t i = 0; i < h->n_held; i++)
		hc__epoch_cache_put(h->cache, h->held[i]);
	free(h->held);
	h->held = NULL;
	h->n_held = h->cap_held = 0;
	h->top = h->node = h->child = (struct nodemap){0};
	h->chain = NULL;
	h->cap_chain = 0;
}

static void hydrate_free(struct hydrate *h)
{
	hc_store__free(h->st);
	hc_dict__free(h->ids);
	hc_qtree__release(&h->qt);
	hydrate_maps_free(h);
}

/* The stack and frame rows of the older epoch with ids (lo, hi] of each, from the cache (or
 * read into it): its stacks as a span, its frames as a span interned as they are met. */
static int prefetch_epoch(struct hydrate *h, const uint64_t lo[HC_DICT_TABLES],
			  const uint64_t hi[HC_DICT_TABLES])
{
	struct hc_epoch_rows *e;
	struct span *sp;
	uint64_t read;

	if (h->n_held == h->cap_held && hc_array_grow(h->held, h->cap_held, h->n_held + 1, 16))
		return -ENOMEM;
	e = hc__epoch_cache_get(h->cache, &h->rows, h->db, (uint32_t)lo[HC_DICT_STACKS],
				(uint32_t)hi[HC_DICT_STACKS], (uint32_t)lo[HC_DICT_FRAMES],
				(uint32_t)hi[HC_DICT_FRAMES],
				hi[HC_DICT_STACKS] <= h->written_below, &read);
	if (!e)
		return -errno;
	h->held[h->n_held++] = e;
	h->lookups += read;
	if (e->stack_hi > e->stack_lo) {
		sp = span_new(h, HC_DICT_STACKS, e->stack_lo, e->stack_hi, e->stacks);
		if (!sp)
			return -ENOMEM;
		sp->src = e;
	}
	if (e->frame_hi > e->frame_lo) {
		sp = span_new(h, HC_DICT_FRAMES, e->frame_lo, e->frame_hi, NULL);
		if (!sp)
			return -ENOMEM;
		sp->src = e;
	}
	return 0;
}

struct epoch_span {
	uint64_t base[HC_DICT_TABLES];
	size_t entries; /* of the range, whose stack is of this epoch */
};

/* The epoch of stack id s among e[0..n) (ordered by base): its index, n for none. */
static size_t epoch_of(const struct epoch_span *e, size_t n, uint32_t s)
{
	size_t lo = 0, hi = n;

	if (!n || e[0].base[HC_DICT_STACKS] >= s)
		return n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (e[mid].base[HC_DICT_STACKS] < s)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The stacks and frames of the older epochs the range names many stacks of, each read in one
 * scan: a range of a busy host's minutes meets most of an epoch's stacks (and every entry
 * several of them), and a scan costs a fraction of a lookup per row. Epochs the range names
 * few stacks of are looked up id by id, as they are met.
 */
static int prefetch(struct hydrate *h, const struct hc_blob *acc)
{
	struct epoch_span *e = NULL;
	size_t n = 0, cap = 0;
	sqlite3_stmt *st;
	int err = 0;

	if (sqlite3_prepare_v2(h->db,
			       "SELECT frame_base, task_base, stack_base FROM epoch ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return -hc__disk_sql_errno(sqlite3_errcode(h->db));
	while (!err && sqlite3_step(st) == SQLITE_ROW) {
		if (n == cap && hc_array_grow(e, cap, n + 1, 16)) {
			err = -ENOMEM;
			break;
		}
		for (int t = 0; t < HC_DICT_TABLES; t++)
			e[n].base[t] = (uint64_t)sqlite3_column_int64(st, t);
		e[n++].entries = 0;
	}
	sqlite3_finalize(st);
	/* the file's oldest epoch: older ones were deleted, and nothing names them */
	if (n)
		hc__epoch_cache_trim(h->cache, (uint32_t)e[0].base[HC_DICT_STACKS]);
	for (size_t i = 0; !err && i < acc->n; i++) {
		size_t k = epoch_of(e, n, acc->e[i].stack & ~HC_FOLD_BIT);

		if (k < n)
			e[k].entries++;
	}
	for (size_t k = 0; !err && k + 1 < n; k++) {
		uint64_t rows = e[k + 1].base[HC_DICT_STACKS] - e[k].base[HC_DICT_STACKS];

		/* the current epoch is in memory; one newer than it has no next yet */
		if (e[k].base[HC_DICT_STACKS] >= h->cur->t[HC_DICT_STACKS].base ||
		    e[k].entries * PREFETCH_STACKS_PER_ENTRY < rows)
			continue;
		err = prefetch_epoch(h, e[k].base, e[k + 1].base);
	}
	free(e);
	return err;
}

/* An entry the tree takes: its thread's node and its index. */
struct pick {
	uint32_t th, i;
};

/* The part of w the tree takes (sel: each field all ones or 0). */
static struct hc_weights selected(const struct hc_weights *w, const struct hc_weights *sel)
{
	return (struct hc_weights){.on_cpu_ns = w->on_cpu_ns & sel->on_cpu_ns,
				   .off_cpu_ns = w->off_cpu_ns & sel->off_cpu_ns,
				   .runqueue_ns = w->runqueue_ns & sel->runqueue_ns,
				   .samples = w->samples & sel->samples};
}

/* The entries the tree takes (the weights and tasks the filter selects), sorted by thread
 * (counting sort: thread nodes are all below h->qt.n). */
static int pick_entries(struct hydrate *h, const struct hc_blob *acc,
			const struct hc_store_filter *f, struct pick **out, size_t *n)
{
	struct pick *p = NULL, *sorted = NULL;
	size_t k = 0, *count = NULL;
	int err = 0;

	*out = NULL;
	*n = 0;
	p = malloc((acc->n ? acc->n : 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	for (size_t i = 0; !err && i < acc->n; i++) {
		const struct hc_blob_entry *e = &acc->e[i];
		struct hc_weights x = selected(&e->w, &h->sel);
		int64_t th;

		if (!x.on_cpu_ns && !x.off_cpu_ns && !x.runqueue_ns && !x.samples)
			continue;
		pthread_rwlock_rdlock(&h->cur->lock);
		th = thread_node(h, e->task, f);
		pthread_rwlock_unlock(&h->cur->lock);
		if (th > 0)
			p[k++] = (struct pick){.th = (uint32_t)th, .i = (uint32_t)i};
		else if (th != -ENOENT)
			err = (int)th;
	}
	if (!err && k) {
		count = calloc((size_t)h->qt.n + 1, sizeof(*count));
		sorted = malloc(k * sizeof(*sorted));
		if (!count || !sorted)
			err = -ENOMEM;
	}
	if (!err && k) {
		for (size_t i = 0; i < k; i++)
			count[p[i].th + 1]++;
		for (size_t t = 1; t <= h->qt.n; t++)
			count[t] += count[t - 1];
		for (size_t i = 0; i < k; i++)
			sorted[count[p[i].th]++] = p[i];
		free(p);
		p = sorted;
		sorted = NULL;
	}
	free(count);
	free(sorted);
	if (err) {
		free(p);
		return err;
	}
	*out = p;
	*n = k;
	return 0;
}

/* The entries summed into the tree, thread by thread; entries naming ids the file does not
 * have (not this writer's) are skipped. */
static int hydrate_entries(struct hydrate *h, const struct hc_blob *acc,
			   const struct hc_store_filter *f)
{
	struct pick *p;
	size_t n;
	int err = pick_entries(h, acc, f, &p, &n);

	/* the lock per entry, not around the loop: the ingest thread appends to the current
	 * epoch meanwhile (what an entry keeps of it, strings and copies, stays valid) */
	for (size_t i = 0; !err && i < n; i++) {
		int64_t li;

		if (!i || p[i].th != p[i - 1].th) {
			nodemap_clear(&h->node);
			nodemap_clear(&h->child);
		}
		pthread_rwlock_rdlock(&h->cur->lock);
		li = stack_node(h, p[i].th, acc->e[p[i].i].stack);
		pthread_rwlock_unlock(&h->cur->lock);
		if (li > 0) {
			struct hc_weights x = selected(&acc->e[p[i].i].w, &h->sel);

			hc_weights__add(&h->qt.w[li], &x);
		} else if (li != -ENOENT)
			err = (int)li;
	}
	free(p);
	return err;
}

/* The range summed into h->st's second SCRATCH_SEC. */
static int hydrate(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		   const struct hc_store_filter *f, bool entries, bool cells, struct hydrate *h)
{
	struct hc_store_opts so = {
		.retention_s = 10,
		.max_bytes = (size_t)1 << 40,
		.period_ns = s == HC_DISK_LOCKS ? 1 : (d->period_ns ? d->period_ns : 1)};
	struct hc_blob acc;
	int err;

	memset(h, 0, sizeof(*h));
	h->cache = &d->epochs;
	hc_blob__init(&acc, 0, so.period_ns);
	/* the epoch before the snapshot: ids of a newer one are in the file, with their rows */
	pthread_mutex_lock(&d->mu);
	h->cur = d->dict;
	h->cur->refs++;
	/* an epoch still in memory (current, or retired and not written yet) may have rows to
	 * come: only those below it are kept between queries */
	h->written_below = h->cur->t[HC_DICT_STACKS].base;
	for (const struct hc_dict *x = d->retired; x; x = x->next)
		if (x->t[HC_DICT_STACKS].base < h->written_below)
			h->written_below = x->t[HC_DICT_STACKS].base;
	pthread_mutex_unlock(&d->mu);
	err = hc__disk_open_db(d->path, SQLITE_OPEN_READONLY, &h->db);
	hc__stackrows_init(&h->rows, h->db);
	if (!err)
		err = hc__disk_exec(h->db, "BEGIN");
	if (!err)
		err = read_range(d, h->db, s, r, &acc, entries, cells);
	if (!err) {
		static const uint32_t zero[HC_DICT_TABLES];

		h->st = hc_store__new(&so);
		h->ids = hc_dict__new(0, zero);
		if (!h->st || !h->ids)
			err = -ENOMEM;
		/* a long range's tree has some five nodes per entry */
		if (!err)
			err = hc_qtree__init(&h->qt, acc.n * QTREE_NODES_PER_ENTRY);
	}
	h->sel = (struct hc_weights){.on_cpu_ns = f->on ? UINT64_MAX : 0,
				     .samples = f->on ? UINT64_MAX : 0,
				     .off_cpu_ns = f->off ? UINT64_MAX : 0,
				     .runqueue_ns = f->runqueue ? UINT64_MAX : 0};
	if (!err && acc.n)
		err = prefetch(h, &acc);
	if (!err)
		err = hydrate_entries(h, &acc, f);
	hydrate_maps_free(h); /* the tree and ids stay: the nodes' elements */
	for (size_t i = 0; !err && i < acc.nc; i++) {
		const struct hc_blob_cell *c = &acc.c[i];

		if (c->hist < HC_STORE_H_MAX)
			err = hc_store__add_hist(h->st, SCRATCH_SEC, (enum hc_store_hist)c->hist,
						 c->pid, c->key, c->value, c->count);
		else
			err = hc_store__add_counter(
				h->st, SCRATCH_SEC,
				(enum hc_store_counter)(c->hist - HC_BLOB_COUNTER), c->key,
				c->count);
	}
	for (int t = 0; t < HC_DICT_TABLES; t++)
		sqlite3_finalize(h->get[t]);
	hc__stackrows_release(&h->rows);
	sqlite3_close(h->db); /* the read transaction ends with it */
	hc__disk_dict_put(d, h->cur);
	pthread_mutex_lock(&d->mu);
	d->st.dict_file_lookups += h->lookups;
	pthread_mutex_unlock(&d->mu);
	hc_blob__release(&acc);
	if (err)
		hydrate_free(h);
	return err;
}

static struct hc_store_filter scratch_filter(const struct hc_store_filter *f)
{
	struct hc_store_filter g = *f;

	g.from_s = SCRATCH_SEC;
	g.to_s = SCRATCH_SEC + 1;
	return g;
}

struct hc_disk_view {
	struct hydrate h;
	struct hc_store_filter g;
	bool tree_taken; /* the tree's weights are inclusive once written */
};

struct hc_disk_view *hc_disk__view(struct hc_disk *d, enum hc_disk_store s,
				   const struct hc_disk_range *r, const struct hc_store_filter *f,
				   bool tree, bool hists)
{
	struct hc_disk_view *v = calloc(1, sizeof(*v));
	int err;

	if (!v)
		return NULL;
	err = hydrate(d, s, r, f, tree, hists, &v->h);
	if (err) {
		free(v);
		errno = -err;
		return NULL;
	}
	v->g = scratch_filter(f);
	return v;
}

static void view_elem(const void *ctx, uint32_t li, uint32_t id, struct hc_path_elem *out)
{
	(void)li;
	hc_dict__elem(ctx, id, out);
}

int hc_disk_view__tree(struct hc_disk_view *v, struct hc_tree *out, struct hc_store_pruned *pruned)
{
	if (v->tree_taken)
		return -EALREADY;
	v->tree_taken = true;
	return hc_qtree__emit(&v->h.qt, v->g.max_nodes, view_elem, v->h.ids, out, pruned);
}

struct hc_hist *hc_disk_view__hist(struct hc_disk_view *v, enum hc_store_hist hist)
{
	return hc_store__hist(v->h.st, hist, &v->g);
}

void hc_disk_view__free(struct hc_disk_view *v)
{
	if (!v)
		return;
	hydrate_free(&v->h);
	free(v);
}

int hc_disk__tree(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		  const struct hc_store_filter *f, struct hc_tree *out,
		  struct hc_store_pruned *pruned)
{
	struct hc_disk_view *v = hc_disk__view(d, s, r, f, true, false);
	int err;

	if (!v)
		return -errno;
	err = hc_disk_view__tree(v, out, pruned);
	hc_disk_view__free(v);
	return err;
}

struct hc_hist *hc_disk__hist(struct hc_disk *d, enum hc_disk_store s,
			      const struct hc_disk_range *r, enum hc_store_hist hist,
			      const struct hc_store_filter *f)
{
	struct hc_disk_view *v = hc_disk__view(d, s, r, f, false, true);
	struct hc_hist *out;

	if (!v)
		return NULL;
	out = hc_disk_view__hist(v, hist);
	hc_disk_view__free(v);
	return out;
}

int hc_disk__counter(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		     enum hc_store_counter c, int (*fn)(void *ctx, const char *key, uint64_t value),
		     void *ctx)
{
	struct hc_store_filter g = {.from_s = SCRATCH_SEC, .to_s = SCRATCH_SEC + 1};
	struct hydrate h;
	int err = hydrate(d, s, r, &g, false, true, &h);

	if (err)
		return err;
	err = hc_store__counter(h.st, c, &g, fn, ctx);
	hydrate_free(&h);
	return err;
}

/* A read connection and sql prepared on it, its parameters tier, from_s and to_s: 0, or
 * -errno with nothing left open. */
static int select_range(struct hc_disk *d, const char *sql, int tier, int64_t from_s, int64_t to_s,
			sqlite3 **db, sqlite3_stmt **st)
{
	int err = hc__disk_open_db(d->path, SQLITE_OPEN_READONLY, db);

	if (err)
		return err;
	if (sqlite3_prepare_v2(*db, sql, -1, st, NULL) != SQLITE_OK) {
		err = -hc__disk_sql_errno(sqlite3_errcode(*db));
		sqlite3_close(*db);
		return err;
	}
	sqlite3_bind_int(*st, 1, tier);
	sqlite3_bind_int64(*st, 2, from_s);
	sqlite3_bind_int64(*st, 3, to_s);
	return 0;
}

int hc_disk__timeline(struct hc_disk *d, const struct hc_disk_range *r, int64_t step_s,
		      struct hc_store_slot **out, size_t *n)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	struct hc_store_slot *slots;
	struct piece pieces[PLAN_PIECES];
	struct hc_disk_stats dst;
	size_t np = 0;
	int64_t ns;
	int err;

	if (step_s < 1 || r->from_s >= r->to_s)
		return -EINVAL;
	ns = (r->to_s - r->from_s + step_s - 1) / step_s;
	if (ns > 100000)
		return -EINVAL;
	slots = calloc((size_t)ns, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (int64_t i = 0; i < ns; i++)
		slots[i].t_s = r->from_s + i * step_s;
	pthread_mutex_lock(&d->mu);
	dst = d->st;
	pthread_mutex_unlock(&d->mu);
	/* the newest windows may still be in finer tiers only: the tree's plan, each row in
	 * the slot of its start (step_s is at least the tier's step: whole windows) */
	plan(&dst, HC_DISK_TIERS - 1, r->from_s, r->to_s, pieces, &np);
	err = select_range(d,
			   "SELECT t, on_cpu_ns, off_cpu_ns, runqueue_ns, samples FROM bucket"
			   " WHERE tier=? AND t>=? AND t<? AND store=0",
			   r->tier, r->from_s, r->to_s, &db, &st);
	if (err)
		db = NULL; /* closed */
	else
		err = hc__disk_exec(db, "BEGIN");
	for (size_t i = 0; !err && i < np; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int(st, 1, pieces[i].tier);
		sqlite3_bind_int64(st, 2, pieces[i].from_s);
		sqlite3_bind_int64(st, 3, pieces[i].to_s);
		while (sqlite3_step(st) == SQLITE_ROW) {
			int64_t t = sqlite3_column_int64(st, 0);
			struct hc_store_slot *sl;

			if (t < r->from_s || t >= r->to_s)
				continue;
			sl = &slots[(t - r->from_s) / step_s];
			sl->on_cpu_ns += (uint64_t)sqlite3_column_int64(st, 1);
			sl->off_cpu_ns += (uint64_t)sqlite3_column_int64(st, 2);
			sl->runqueue_ns += (uint64_t)sqlite3_column_int64(st, 3);
			sl->samples += (uint64_t)sqlite3_column_int64(st, 4);
		}
	}
	if (db) {
		sqlite3_finalize(st);
		sqlite3_close(db); /* ends the read transaction */
	}
	if (err) {
		free(slots);
		return err;
	}
	*out = slots;
	*n = (size_t)ns;
	return 0;
}

int hc_disk__heat(struct hc_disk *d, int64_t from_s, int64_t cols, uint64_t *rows)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	struct hc_blob one;
	int err;

	hc_blob__init(&one, 0, d->period_ns);
	memset(rows, 0, (size_t)cols * HC_STORE_HEAT_ROWS * sizeof(*rows));
	err = select_range(d,
			   "SELECT t, data FROM bucket WHERE tier=? AND t>=? AND t<? AND store=0",
			   0, from_s, from_s + cols, &db, &st);
	if (!err) {
		while (!err && sqlite3_step(st) == SQLITE_ROW) {
			int64_t c = sqlite3_column_int64(st, 0) - from_s;

			memset(one.heat, 0, sizeof(one.heat));
			err = hc_blob__decode(&one, sqlite3_column_blob(st, 1),
					      (size_t)sqlite3_column_bytes(st, 1), false, false);
			for (int i = 0; !err && i < HC_STORE_HEAT_ROWS; i++)
				rows[c * HC_STORE_HEAT_ROWS + i] += one.heat[i];
			if (err == -EBADMSG)
				err = 0;
		}
		sqlite3_finalize(st);
		sqlite3_close(db);
	}
	hc_blob__release(&one);
	return err;
}
