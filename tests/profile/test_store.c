// SPDX-License-Identifier: GPL-2.0-only
/*
 * profile/store: every query is checked against a reference computed from the adds themselves
 * (hc_tree__add_path over the kept adds, hc_hist__add over the kept observations), so a wrong
 * merge, filter, range, encoding or GC remap shows up as a difference.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/store.h"
#include "tests.h"

#define PERIOD 10000 /* period_ns */

/* ---- a test world: frames, adds, and a reference ---- */

struct rec {
	int64_t sec;
	uint32_t path[64];
	size_t n;
	struct hc_weights w;
};

struct world {
	struct hc_store *st;
	struct hc_path_elem *frames; /* index = frame id - 1 */
	char **names;
	size_t n_frames, cap_frames;
	struct rec *recs;
	size_t n_recs, cap_recs;
};

static uint64_t rng_state = 88172645463325252ULL;

static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static struct world *world_new(uint64_t retention_s, size_t max_bytes)
{
	struct hc_store_opts o = {
		.retention_s = retention_s, .max_bytes = max_bytes, .period_ns = PERIOD};
	struct world *wd = calloc(1, sizeof(*wd));

	assert_non_null(wd);
	wd->st = hc_store__new(&o);
	assert_non_null(wd->st);
	rng_state = 88172645463325252ULL;
	return wd;
}

static void world_free(struct world *wd)
{
	hc_store__free(wd->st);
	for (size_t i = 0; i < wd->n_frames; i++)
		free(wd->names[i]);
	free(wd->names);
	free(wd->frames);
	free(wd->recs);
	free(wd);
}

/* Define a frame (in the store and in the world) at offset, inlined or not; returns its id. */
static uint32_t frame_full(struct world *wd, enum hc_node_kind kind, const char *name,
			   const char *module, uint64_t id, int64_t offset, bool inlined)
{
	struct hc_path_elem e = {kind, name, module, id, offset, inlined};

	if (wd->n_frames == wd->cap_frames) {
		wd->cap_frames = wd->cap_frames ? wd->cap_frames * 2 : 64;
		wd->frames = realloc(wd->frames, wd->cap_frames * sizeof(*wd->frames));
		wd->names = realloc(wd->names, wd->cap_frames * sizeof(*wd->names));
		assert_non_null(wd->frames);
		assert_non_null(wd->names);
	}
	assert_int_equal(hc_store__define_frame(wd->st, (uint32_t)wd->n_frames + 1, &e), 0);
	/* the store copies: keep our own copy, then scribble over the caller's buffer */
	wd->names[wd->n_frames] = strdup(name);
	e.name = wd->names[wd->n_frames];
	e.module = module; /* string literals in these tests */
	wd->frames[wd->n_frames] = e;
	return (uint32_t)++wd->n_frames;
}

static uint32_t frame_at(struct world *wd, enum hc_node_kind kind, const char *name,
			 const char *module, uint64_t id, int64_t offset)
{
	return frame_full(wd, kind, name, module, id, offset, false);
}

static uint32_t frame(struct world *wd, enum hc_node_kind kind, const char *name,
		      const char *module, uint64_t id)
{
	return frame_at(wd, kind, name, module, id, -1);
}

static void add(struct world *wd, int64_t sec, const uint32_t *path, size_t n, uint64_t samples,
		uint64_t off_ns, uint64_t rq_ns)
{
	struct rec *r;

	assert_true(n <= 64);
	if (wd->n_recs == wd->cap_recs) {
		wd->cap_recs = wd->cap_recs ? wd->cap_recs * 2 : 256;
		wd->recs = realloc(wd->recs, wd->cap_recs * sizeof(*wd->recs));
		assert_non_null(wd->recs);
	}
	r = &wd->recs[wd->n_recs++];
	r->sec = sec;
	memcpy(r->path, path, n * sizeof(*path));
	r->n = n;
	r->w = (struct hc_weights){.on_cpu_ns = samples * PERIOD,
				   .off_cpu_ns = off_ns,
				   .runqueue_ns = rq_ns,
				   .samples = samples};
	assert_int_equal(hc_store__add(wd->st, sec, path, n, &r->w), 0);
}

static struct hc_store_filter range(int64_t from, int64_t to)
{
	return (struct hc_store_filter){
		.from_s = from, .to_s = to, .on = true, .off = true, .runqueue = true};
}

/* The reference tree of the adds that the filter keeps. */
static struct hc_tree *reference(const struct world *wd, const struct hc_store_filter *f)
{
	struct hc_tree *t = hc_tree__new();
	struct hc_path_elem p[64];

	assert_non_null(t);
	for (size_t i = 0; i < wd->n_recs; i++) {
		const struct rec *r = &wd->recs[i];
		const struct hc_path_elem *proc = &wd->frames[r->path[0] - 1];
		const struct hc_path_elem *thr = &wd->frames[r->path[1] - 1];
		struct hc_weights w = {0};

		if (r->sec < f->from_s || r->sec >= f->to_s)
			continue;
		if ((f->has_pid && proc->id != f->pid) || (f->has_tid && thr->id != f->tid) ||
		    (f->comm && strcmp(proc->name, f->comm) != 0))
			continue;
		if (f->on) {
			w.on_cpu_ns = r->w.on_cpu_ns;
			w.samples = r->w.samples;
		}
		if (f->off)
			w.off_cpu_ns = r->w.off_cpu_ns;
		if (f->runqueue)
			w.runqueue_ns = r->w.runqueue_ns;
		if (!w.on_cpu_ns && !w.off_cpu_ns && !w.runqueue_ns && !w.samples)
			continue;
		for (size_t j = 0; j < r->n; j++)
			p[j] = wd->frames[r->path[j] - 1];
		assert_int_equal(hc_tree__add_path(t, p, r->n, &w), 0);
	}
	return t;
}

static void expect_weights(const struct hc_weights *a, const struct hc_weights *b)
{
	assert_int_equal(a->on_cpu_ns, b->on_cpu_ns);
	assert_int_equal(a->off_cpu_ns, b->off_cpu_ns);
	assert_int_equal(a->runqueue_ns, b->runqueue_ns);
	assert_int_equal(a->samples, b->samples);
}

static void expect_same_node(const struct hc_node *a, const struct hc_node *b)
{
	assert_int_equal(hc_node__kind(a), hc_node__kind(b));
	assert_string_equal(hc_node__name(a), hc_node__name(b));
	if (hc_node__module(a) || hc_node__module(b)) {
		assert_non_null(hc_node__module(a));
		assert_non_null(hc_node__module(b));
		assert_string_equal(hc_node__module(a), hc_node__module(b));
	}
	assert_int_equal(hc_node__id(a), hc_node__id(b));
	assert_int_equal(hc_node__offset(a), hc_node__offset(b));
	assert_int_equal(hc_node__inlined(a), hc_node__inlined(b));
	expect_weights(hc_node__weights(a), hc_node__weights(b));
	assert_int_equal(hc_node__child_count(a), hc_node__child_count(b));
	for (size_t i = 0; i < hc_node__child_count(a); i++)
		expect_same_node(hc_node__child(a, i), hc_node__child(b, i));
}

/* Sorts both. */
static void expect_same_tree(struct hc_tree *a, struct hc_tree *b)
{
	hc_tree__sort(a);
	hc_tree__sort(b);
	assert_int_equal(hc_tree__node_count(a), hc_tree__node_count(b));
	expect_same_node(hc_tree__root(a), hc_tree__root(b));
}

static struct hc_tree *query(const struct world *wd, const struct hc_store_filter *f,
			     struct hc_store_pruned *pruned)
{
	struct hc_tree *t = hc_tree__new();

	assert_non_null(t);
	assert_int_equal(hc_store__tree(wd->st, f, t, pruned), 0);
	return t;
}

/* Query and compare with the reference; no pruning expected. */
static void expect_query(const struct world *wd, const struct hc_store_filter *f)
{
	struct hc_store_pruned pr = {99, 99};
	struct hc_tree *got = query(wd, f, &pr), *want = reference(wd, f);

	assert_int_equal(pr.nodes, 0);
	assert_int_equal(pr.value_ns, 0);
	expect_same_tree(got, want);
	hc_tree__free(got);
	hc_tree__free(want);
}

/* Re-add a tree's self weights with thread ids set to 0: what coarsening does to threads. */
static void add_tid0(struct hc_tree *out, const struct hc_node *n, struct hc_path_elem *path,
		     size_t depth)
{
	struct hc_weights self = *hc_node__weights(n);

	for (size_t i = 0; i < hc_node__child_count(n); i++) {
		const struct hc_node *c = hc_node__child(n, i);
		const struct hc_weights *cw = hc_node__weights(c);

		self.on_cpu_ns -= cw->on_cpu_ns;
		self.off_cpu_ns -= cw->off_cpu_ns;
		self.runqueue_ns -= cw->runqueue_ns;
		self.samples -= cw->samples;
		path[depth] = (struct hc_path_elem){
			hc_node__kind(c),   hc_node__name(c),
			hc_node__module(c), hc_node__kind(c) == HC_NODE_THREAD ? 0 : hc_node__id(c),
			hc_node__offset(c), hc_node__inlined(c)};
		add_tid0(out, c, path, depth + 1);
	}
	if (depth && (self.on_cpu_ns || self.off_cpu_ns || self.runqueue_ns || self.samples))
		assert_int_equal(hc_tree__add_path(out, path, depth, &self), 0);
}

static struct hc_tree *tid0(struct hc_tree *t)
{
	struct hc_tree *out = hc_tree__new();
	struct hc_path_elem path[128];

	assert_non_null(out);
	add_tid0(out, hc_tree__root(t), path, 0);
	hc_tree__free(t);
	return out;
}

/* As expect_query, thread ids aside: coarse seconds merge threads by name. */
static void expect_query_tid0(const struct world *wd, const struct hc_store_filter *f)
{
	struct hc_tree *got = tid0(query(wd, f, NULL)), *want = tid0(reference(wd, f));

	expect_same_tree(got, want);
	hc_tree__free(got);
	hc_tree__free(want);
}

/* A small program: 3 processes (two named "db"), 2 threads each, a few functions. */
struct prog {
	uint32_t proc[3], thr[3][2], fn[8], kfn[2];
};

static void prog_define(struct world *wd, struct prog *p)
{
	static const char *const pnames[3] = {"db", "web", "db"};
	char name[32];

	for (int i = 0; i < 3; i++) {
		p->proc[i] = frame(wd, HC_NODE_PROCESS, pnames[i], NULL, 100 + (uint64_t)i);
		for (int j = 0; j < 2; j++) {
			snprintf(name, sizeof(name), "%s-t%d", pnames[i], j);
			p->thr[i][j] =
				frame(wd, HC_NODE_THREAD, name, NULL, 1000 + (uint64_t)i * 10 + j);
		}
	}
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof(name), "fn%d", i);
		p->fn[i] = frame(wd, HC_NODE_USER, name, i < 4 ? "/bin/a" : "/lib/b.so", 0);
	}
	p->kfn[0] = frame(wd, HC_NODE_KERNEL, "schedule", NULL, 0);
	p->kfn[1] = frame(wd, HC_NODE_KERNEL, "do_syscall_64", NULL, 0);
}

/* A pseudo-random path of the program; returns its length. */
static size_t prog_path(const struct prog *p, uint32_t *path)
{
	size_t i = rnd() % 3, n = 0, depth = 1 + rnd() % 6;

	path[n++] = p->proc[i];
	path[n++] = p->thr[i][rnd() % 2];
	for (size_t d = 0; d < depth; d++)
		path[n++] = p->fn[rnd() % 8];
	if (rnd() % 2)
		path[n++] = p->kfn[rnd() % 2];
	return n;
}

static void prog_fill(struct world *wd, const struct prog *p, int64_t from, int64_t to,
		      size_t per_sec)
{
	uint32_t path[16];

	for (int64_t s = from; s < to; s++) {
		for (size_t k = 0; k < per_sec; k++) {
			size_t n = prog_path(p, path);
			uint64_t kind = rnd() % 4;

			add(wd, s, path, n, kind == 0 ? 0 : 1 + rnd() % 5,
			    kind >= 2 ? rnd() % 5000000 : 0, kind == 3 ? rnd() % 70000 : 0);
		}
	}
}

/* Adds per_sec paths per second drawn from a fixed pool of pool_n paths. */
static void prog_fill_pool(struct world *wd, const struct prog *p, int64_t sec, size_t per_sec,
			   size_t pool_n)
{
	static uint32_t pool[512][16];
	static size_t pool_len[512];
	static bool pool_made;

	assert_true(pool_n <= 512);
	if (!pool_made) {
		for (size_t i = 0; i < 512; i++)
			pool_len[i] = prog_path(p, pool[i]);
		pool_made = true;
	}
	for (size_t k = 0; k < per_sec; k++) {
		size_t i = rnd() % pool_n;

		add(wd, sec, pool[i], pool_len[i], 1 + rnd() % 3, rnd() % 4 ? 0 : 1000, 0);
	}
}

/* ---- tests ---- */

static void test_store_totals(void **state)
{
	struct world *wd = world_new(0, 0);
	struct hc_store_filter f = range(1000, 1010);
	struct hc_weights sum = {0};
	struct hc_tree *t;
	struct prog p;

	(void)state;
	prog_define(wd, &p);
	prog_fill(wd, &p, 1000, 1010, 50);
	for (size_t i = 0; i < wd->n_recs; i++)
		hc_weights__add(&sum, &wd->recs[i].w);

	/* open buckets answer as well as sealed ones */
	t = query(wd, &f, NULL);
	expect_weights(hc_node__weights(hc_tree__root(t)), &sum);
	hc_tree__free(t);
	expect_query(wd, &f);

	assert_int_equal(hc_store__seal(wd->st, 1009), 0);
	t = query(wd, &f, NULL);
	expect_weights(hc_node__weights(hc_tree__root(t)), &sum);
	hc_tree__free(t);
	expect_query(wd, &f);

	/* odd on-CPU ns (not samples x period) and big values survive the encoding */
	{
		uint32_t path[2] = {p.proc[1], p.thr[1][0]};
		struct hc_weights w = {.on_cpu_ns = 7,
				       .samples = 3,
				       .off_cpu_ns = UINT64_MAX / 4,
				       .runqueue_ns = 1};
		struct hc_weights w2 = {.on_cpu_ns = 0, .samples = 1};

		assert_int_equal(hc_store__add(wd->st, 1020, path, 2, &w), 0);
		assert_int_equal(hc_store__add(wd->st, 1020, path, 2, &w2), 0);
		assert_int_equal(hc_store__seal(wd->st, 1020), 0);
		f = range(1020, 1021);
		t = query(wd, &f, NULL);
		hc_weights__add(&w, &w2);
		expect_weights(hc_node__weights(hc_tree__root(t)), &w);
		hc_tree__free(t);
	}
	world_free(wd);
}

/* An inlined frame keeps its mark through the store, apart from its real namesake; the
 * same inlined frame defined twice is one frame. */
static void test_store_inlined(void **state)
{
	struct world *wd = world_new(0, 0);
	struct hc_store_filter f = range(1000, 1002);
	uint32_t pr = frame(wd, HC_NODE_PROCESS, "app", NULL, 7);
	uint32_t th = frame(wd, HC_NODE_THREAD, "app", NULL, 7);
	uint32_t main_ = frame(wd, HC_NODE_USER, "main", "app", 0);
	uint32_t sq = frame(wd, HC_NODE_USER, "square", "app", 0);
	uint32_t sq_inl = frame_full(wd, HC_NODE_USER, "square", "app", 0, -1, true);
	uint32_t sq_inl2 = frame_full(wd, HC_NODE_USER, "square", "app", 0, -1, true);
	const uint32_t a[] = {pr, th, main_, sq}, b[] = {pr, th, main_, sq_inl},
		       c[] = {pr, th, main_, sq_inl2};
	const struct hc_node *n;
	struct hc_store_stats st;
	struct hc_tree *t;

	(void)state;
	add(wd, 1000, a, 4, 1, 0, 0);
	add(wd, 1000, b, 4, 2, 0, 0);
	add(wd, 1001, c, 4, 3, 0, 0);
	expect_query(wd, &f);
	assert_int_equal(hc_store__seal(wd->st, 1001), 0);
	expect_query(wd, &f);
	hc_store__stats(wd->st, &st);
	assert_int_equal(st.frames, 5);
	t = query(wd, &f, NULL);
	hc_tree__sort(t);
	n = hc_node__child(hc_node__child(hc_node__child(hc_tree__root(t), 0), 0), 0);
	assert_int_equal(hc_node__child_count(n), 2);
	assert_true(hc_node__inlined(hc_node__child(n, 0)));
	assert_int_equal(hc_node__weights(hc_node__child(n, 0))->samples, 5);
	assert_false(hc_node__inlined(hc_node__child(n, 1)));
	hc_tree__free(t);
	world_free(wd);
}

static void test_store_filters(void **state)
{
	struct world *wd = world_new(0, 0);
	struct hc_store_filter f = range(0, 100);
	struct hc_tree *t;
	struct prog p;

	(void)state;
	prog_define(wd, &p);
	prog_fill(wd, &p, 10, 20, 40);
	assert_int_equal(hc_store__seal(wd->st, 14), 0); /* half sealed, half open */

	f.has_pid = true;
	f.pid = 101;
	expect_query(wd, &f);
	f.has_tid = true;
	f.tid = 1011;
	expect_query(wd, &f);
	f.tid = 1000; /* a thread of another process: nothing */
	t = query(wd, &f, NULL);
	assert_int_equal(hc_tree__node_count(t), 1);
	assert_int_equal(hc_weights__value(hc_node__weights(hc_tree__root(t))), 0);
	hc_tree__free(t);
	expect_query(wd, &f);

	f = range(0, 100);
	f.has_tid = true;
	f.tid = 1020;
	expect_query(wd, &f);

	f = range(0, 100);
	f.comm = "db"; /* two processes */
	expect_query(wd, &f);
	t = query(wd, &f, NULL);
	assert_int_equal(hc_node__child_count(hc_tree__root(t)), 2);
	hc_tree__free(t);
	f.comm = "nosuch";
	expect_query(wd, &f);
	f.comm = "db-t0"; /* a thread's name is not a process name */
	t = query(wd, &f, NULL);
	assert_int_equal(hc_tree__node_count(t), 1);
	hc_tree__free(t);

	for (int k = 1; k < 8; k++) {
		f = range(0, 100);
		f.on = k & 1;
		f.off = k & 2;
		f.runqueue = k & 4;
		expect_query(wd, &f);
	}
	/* kind=on keeps no off-CPU-only node */
	f = range(0, 100);
	f.off = f.runqueue = false;
	t = query(wd, &f, NULL);
	assert_int_equal(hc_node__weights(hc_tree__root(t))->off_cpu_ns, 0);
	assert_true(hc_node__weights(hc_tree__root(t))->samples > 0);
	hc_tree__free(t);
	world_free(wd);
}

static void test_store_range(void **state)
{
	struct world *wd = world_new(0, 0);
	struct hc_store_filter f;
	struct hc_tree *t;
	struct prog p;
	uint32_t path[3];

	(void)state;
	prog_define(wd, &p);
	path[0] = p.proc[0];
	path[1] = p.thr[0][0];
	path[2] = p.fn[0];
	add(wd, 100, path, 3, 1, 0, 0);
	add(wd, 101, path, 3, 10, 0, 0);
	add(wd, 102, path, 3, 100, 0, 0);
	assert_int_equal(hc_store__seal(wd->st, 102), 0);

	f = range(101, 102); /* from inclusive, to exclusive */
	t = query(wd, &f, NULL);
	assert_int_equal(hc_node__weights(hc_tree__root(t))->samples, 10);
	hc_tree__free(t);
	f = range(100, 102);
	t = query(wd, &f, NULL);
	assert_int_equal(hc_node__weights(hc_tree__root(t))->samples, 11);
	hc_tree__free(t);
	f = range(101, 101); /* empty */
	t = query(wd, &f, NULL);
	assert_int_equal(hc_tree__node_count(t), 1);
	assert_int_equal(hc_node__weights(hc_tree__root(t))->samples, 0);
	hc_tree__free(t);
	f = range(0, 1000);
	expect_query(wd, &f);
	world_free(wd);
}

static void test_store_late_add(void **state)
{
	struct world *wd = world_new(0, 0);
	struct hc_store_filter f = range(0, 1000);
	struct hc_store_slot *slots;
	struct prog p;
	size_t n;
	uint32_t path[16];

	(void)state;
	prog_define(wd, &p);
	prog_fill(wd, &p, 100, 110, 20);
	assert_int_equal(hc_store__seal(wd->st, 109), 0);
	/* off-CPU time spread back over sealed seconds, new paths and known ones */
	for (int64_t s = 100; s < 110; s += 2) {
		n = prog_path(&p, path);
		add(wd, s, path, n, 0, 123456, 789);
		add(wd, s, wd->recs[0].path, wd->recs[0].n, 2, 5, 0);
	}
	expect_query(wd, &f); /* reopened, not yet sealed */
	assert_int_equal(hc_store__seal(wd->st, 110), 0);
	expect_query(wd, &f);
	f = range(104, 105);
	expect_query(wd, &f);

	assert_int_equal(hc_store__timeline(wd->st, 104, 105, 1, &slots, &n), 0);
	{
		struct hc_weights sum = {0};

		for (size_t i = 0; i < wd->n_recs; i++) {
			if (wd->recs[i].sec == 104)
				hc_weights__add(&sum, &wd->recs[i].w);
		}
		assert_int_equal(n, 1);
		assert_int_equal(slots[0].off_cpu_ns, sum.off_cpu_ns);
		assert_int_equal(slots[0].samples, sum.samples);
	}
	free(slots);
	world_free(wd);
}

static void test_store_retention(void **state)
{
	struct world *wd = world_new(10, 0);
	struct hc_store_stats s;
	struct hc_store_filter f = range(0, 1000);
	struct prog p;
	uint32_t path[3];
	struct hc_weights w = {
		.on_cpu_ns = PERIOD, .off_cpu_ns = 5, .runqueue_ns = 7, .samples = 1};
	uint64_t rows[HC_STORE_HEAT_ROWS];

	(void)state;
	prog_define(wd, &p);
	path[0] = p.proc[2];
	path[1] = p.thr[2][1];
	path[2] = p.fn[3];
	hc_store__stats(wd->st, &s);
	assert_int_equal(s.buckets, 0);
	assert_int_equal(s.oldest_s, 0);
	assert_int_equal(s.newest_s, 0);
	for (int64_t sec = 100; sec <= 110; sec++) {
		add(wd, sec, path, 3, 1, 0, 0);
		assert_int_equal(hc_store__add_heat(wd->st, sec, 0, 1), 0);
	}
	hc_store__stats(wd->st, &s);
	assert_int_equal(s.buckets, 11); /* newest - retention_s (100) is still kept */
	assert_int_equal(s.oldest_s, 100);
	assert_int_equal(s.newest_s, 110);
	assert_int_equal(s.frames, wd->n_frames);
	assert_int_equal(s.trie_nodes, 3);

	add(wd, 112, path, 3, 1, 0, 0); /* 100 and 101 fall out */
	hc_store__stats(wd->st, &s);
	assert_int_equal(s.oldest_s, 102);
	assert_int_equal(s.buckets, 10);
	hc_store__heat(wd->st, 101, rows);
	assert_int_equal(rows[0], 0);
	hc_store__heat(wd->st, 102, rows);
	assert_int_equal(rows[0], 1);

	/* the oldest second kept still takes adds */
	add(wd, 102, path, 3, 2, 0, 0);
	hc_store__stats(wd->st, &s);
	assert_int_equal(s.expired_adds, 0);
	/* a late add for a dropped second is counted, not stored */
	assert_int_equal(hc_store__add(wd->st, 101, path, 3, &w), 0);
	assert_int_equal(hc_store__add(wd->st, 50, path, 3, &w), 0);
	hc_store__stats(wd->st, &s);
	assert_int_equal(s.expired_adds, 2);
	assert_int_equal(s.expired_ns, 2 * (PERIOD + 5 + 7));
	assert_int_equal(s.oldest_s, 102);
	/* the reference keeps only what the store should */
	f = range(102, 1000);
	expect_query(wd, &f);
	f = range(0, 102);
	{
		struct hc_tree *t = query(wd, &f, NULL);

		assert_int_equal(hc_tree__node_count(t), 1);
		hc_tree__free(t);
	}
	/* seal moves the clock too */
	assert_int_equal(hc_store__seal(wd->st, 120), 0);
	hc_store__stats(wd->st, &s);
	assert_int_equal(s.oldest_s, 110);
	world_free(wd);
}

/* Sum of (self in a) - (self in b) over a's nodes, b's matching nodes found by identity. */
static uint64_t folded_into(const struct hc_node *a, const struct hc_node *b)
{
	uint64_t self_a = hc_weights__value(hc_node__weights(a));
	uint64_t self_b = hc_weights__value(hc_node__weights(b));
	uint64_t sum = 0;

	for (size_t i = 0; i < hc_node__child_count(a); i++) {
		const struct hc_node *ca = hc_node__child(a, i), *cb = NULL;

		self_a -= hc_weights__value(hc_node__weights(ca));
		for (size_t j = 0; j < hc_node__child_count(b); j++) {
			const struct hc_node *c = hc_node__child(b, j);

			if (hc_node__kind(c) == hc_node__kind(ca) &&
			    hc_node__id(c) == hc_node__id(ca) &&
			    strcmp(hc_node__name(c), hc_node__name(ca)) == 0)
				cb = c;
		}
		assert_non_null(cb); /* every kept node exists in the full tree */
		/* children never exceed their parent */
		assert_true(hc_weights__value(hc_node__weights(ca)) <=
			    hc_weights__value(hc_node__weights(a)));
		/* a kept node keeps its inclusive value */
		expect_weights(hc_node__weights(ca), hc_node__weights(cb));
		sum += folded_into(ca, cb);
	}
	for (size_t j = 0; j < hc_node__child_count(b); j++)
		self_b -= hc_weights__value(hc_node__weights(hc_node__child(b, j)));
	assert_true(self_a >= self_b);
	return sum + (self_a - self_b);
}

static void collect_values(const struct hc_node *n, uint64_t *v, size_t *k)
{
	for (size_t i = 0; i < hc_node__child_count(n); i++) {
		const struct hc_node *c = hc_node__child(n, i);

		v[(*k)++] = hc_weights__value(hc_node__weights(c));
		collect_values(c, v, k);
	}
}

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x > y ? -1 : x < y;
}

static void test_store_prune(void **state)
{
	struct world *wd = world_new(0, 0);
	struct hc_store_filter f = range(0, 100);
	struct hc_store_pruned pr;
	struct hc_tree *full, *t, *t2;
	size_t full_n, kept_n, k;
	uint64_t *full_v, *kept_v;
	struct prog p;

	(void)state;
	prog_define(wd, &p);
	prog_fill(wd, &p, 0, 30, 60);
	assert_int_equal(hc_store__seal(wd->st, 29), 0);
	full = query(wd, &f, NULL);
	full_n = hc_tree__node_count(full);
	assert_true(full_n > 200);

	for (size_t max = 1; max < full_n + 5; max = max < 10 ? max + 1 : max * 3) {
		f.max_nodes = max;
		t = query(wd, &f, &pr);
		kept_n = hc_tree__node_count(t);
		assert_true(kept_n <= max || max == 0);
		if (max >= full_n) {
			assert_int_equal(kept_n, full_n);
			assert_int_equal(pr.nodes, 0);
			assert_int_equal(pr.value_ns, 0);
		} else {
			/* the paths of this program have no duplicate siblings: exactly max */
			assert_int_equal(kept_n, max);
			assert_int_equal(pr.nodes, full_n - kept_n);
		}
		/* totals at the root are identical */
		expect_weights(hc_node__weights(hc_tree__root(t)),
			       hc_node__weights(hc_tree__root(full)));
		/* the value folded is what the kept nodes gained as self time (ancestor
		 * closure and inclusive values are checked on the way) */
		assert_int_equal(folded_into(hc_tree__root(t), hc_tree__root(full)), pr.value_ns);
		/* the kept nodes are the largest */
		full_v = malloc(full_n * sizeof(*full_v));
		kept_v = malloc(full_n * sizeof(*kept_v));
		k = 0;
		collect_values(hc_tree__root(full), full_v, &k);
		k = 0;
		collect_values(hc_tree__root(t), kept_v, &k);
		qsort(full_v, full_n - 1, sizeof(*full_v), cmp_u64_desc);
		qsort(kept_v, k, sizeof(*kept_v), cmp_u64_desc);
		for (size_t i = 0; i < k; i++)
			assert_int_equal(kept_v[i], full_v[i]);
		free(full_v);
		free(kept_v);
		/* deterministic */
		t2 = query(wd, &f, NULL);
		expect_same_tree(t, t2);
		hc_tree__free(t);
		hc_tree__free(t2);
	}
	hc_tree__free(full);
	world_free(wd);
}

static void test_store_timeline(void **state)
{
	struct world *wd = world_new(0, 0);
	struct hc_store_slot *slots = NULL;
	struct prog p;
	size_t n;

	(void)state;
	prog_define(wd, &p);
	prog_fill(wd, &p, 100, 110, 10);
	prog_fill(wd, &p, 112, 113, 10);
	assert_int_equal(hc_store__seal(wd->st, 105), 0);

	assert_int_equal(hc_store__timeline(wd->st, 98, 113, 4, &slots, &n), 0);
	assert_int_equal(n, 4); /* 98, 102, 106, 110 (3 s long) */
	for (size_t i = 0; i < n; i++) {
		struct hc_store_filter f =
			range(98 + 4 * (int64_t)i, i == 3 ? 113 : 102 + 4 * (int64_t)i);
		struct hc_tree *t = query(wd, &f, NULL);
		const struct hc_weights *w = hc_node__weights(hc_tree__root(t));

		assert_int_equal(slots[i].t_s, f.from_s);
		assert_int_equal(slots[i].on_cpu_ns, w->on_cpu_ns);
		assert_int_equal(slots[i].off_cpu_ns, w->off_cpu_ns);
		assert_int_equal(slots[i].runqueue_ns, w->runqueue_ns);
		assert_int_equal(slots[i].samples, w->samples);
		hc_tree__free(t);
	}
	free(slots);
	assert_int_equal(hc_store__timeline(wd->st, 200, 202, 1, &slots, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(slots[1].t_s, 201);
	assert_int_equal(slots[0].samples + slots[1].samples, 0);
	free(slots);
	assert_int_equal(hc_store__timeline(wd->st, 0, 10, 0, &slots, &n), -EINVAL);
	assert_int_equal(hc_store__timeline(wd->st, 10, 10, 1, &slots, &n), -EINVAL);
	assert_int_equal(hc_store__timeline(wd->st, 0, 100001, 1, &slots, &n), -EINVAL);
	assert_int_equal(hc_store__timeline(wd->st, 0, 100000, 1, &slots, &n), 0);
	assert_int_equal(n, 100000);
	free(slots);
	world_free(wd);
}

static void test_store_heat(void **state)
{
	struct world *wd = world_new(0, 0);
	uint64_t rows[HC_STORE_HEAT_ROWS], want[3][HC_STORE_HEAT_ROWS] = {{0}};

	(void)state;
	for (int s = 0; s < 3; s++) {
		for (int k = 0; k < 40; k++) {
			unsigned int row = (unsigned int)(rnd() % HC_STORE_HEAT_ROWS);
			uint64_t c = rnd() % 3 ? 1 : 1000;

			assert_int_equal(hc_store__add_heat(wd->st, 500 + s, row, c), 0);
			want[s][row] += c;
		}
	}
	assert_int_equal(hc_store__add_heat(wd->st, 502, HC_STORE_HEAT_ROWS - 1, 0), 0);
	assert_int_equal(hc_store__seal(wd->st, 501), 0);
	/* late into a sealed column */
	assert_int_equal(hc_store__add_heat(wd->st, 500, 7, 5), 0);
	want[0][7] += 5;
	for (int pass = 0; pass < 2; pass++) {
		for (int s = 0; s < 3; s++) {
			hc_store__heat(wd->st, 500 + s, rows);
			assert_memory_equal(rows, want[s], sizeof(rows));
		}
		hc_store__heat(wd->st, 499, rows);
		for (int r = 0; r < HC_STORE_HEAT_ROWS; r++)
			assert_int_equal(rows[r], 0);
		assert_int_equal(hc_store__seal(wd->st, 502), 0);
	}
	assert_int_equal(hc_store__add_heat(wd->st, 500, HC_STORE_HEAT_ROWS, 1), -EINVAL);
	world_free(wd);
}

static void test_store_hist(void **state)
{
	struct world *wd = world_new(0, 0);
	struct hc_hist *want[HC_STORE_H_MAX], *want_pid, *want_comm, *got;
	static const char *const comms[3] = {"db", "web", "db"};
	struct hc_store_filter f = range(0, 1000);

	(void)state;
	assert_string_equal(hc_store_hist__name(HC_STORE_H_OFFCPU_US), "offcpu_us");
	assert_null(hc_store_hist__name(HC_STORE_H_MAX));
	assert_int_equal(hc_store_hist__by_name("runqueue_length"), HC_STORE_H_RUNQ_LENGTH);
	assert_int_equal(hc_store_hist__by_name("priority"), HC_STORE_H_PRIORITY);
	assert_int_equal(hc_store_hist__by_name("nope"), -1);

	want[HC_STORE_H_PRIORITY] = hc_hist__new_lquantize("prio", 0, 140, 10);
	want[HC_STORE_H_RUNQ_LENGTH] = hc_hist__new_lquantize("tasks", 0, 32, 1);
	for (int h = HC_STORE_H_ONCPU_SLICE_US; h < HC_STORE_H_SCHED_MAX; h++)
		want[h] = hc_hist__new_quantize("us");
	want[HC_STORE_H_LOCK_WAIT_NS] = hc_hist__new_quantize("ns");
	assert_string_equal(hc_store_hist__name(HC_STORE_H_LOCK_WAIT_NS), "lock_wait_ns");
	want_pid = hc_hist__new_quantize("us");
	want_comm = hc_hist__new_quantize("us");

	for (int64_t s = 10; s < 20; s++) {
		for (int k = 0; k < 60; k++) {
			int h = (int)(rnd() % HC_STORE_H_MAX);
			int proc = (int)(rnd() % 3);
			uint32_t pid = 100 + (uint32_t)proc;
			char key[16];
			int64_t v;
			uint64_t c = 1 + rnd() % 4;

			if (h == HC_STORE_H_RUNQ_LENGTH) {
				v = (int64_t)(rnd() % 40);
				snprintf(key, sizeof(key), "cpu %d", proc);
				pid = 0;
			} else if (h == HC_STORE_H_LOCK_WAIT_NS) { /* the machine's, per kind */
				v = (int64_t)(rnd() % (1u << 30));
				snprintf(key, sizeof(key), "%s",
					 proc ? "mutex block" : "spinlock spin");
				pid = 0;
			} else if (h == HC_STORE_H_PRIORITY) {
				v = (int64_t)(rnd() % 160) - 5;
				snprintf(key, sizeof(key), "%s", comms[proc]);
			} else {
				v = (int64_t)(rnd() % 3 ? rnd() % 2000 : rnd());
				snprintf(key, sizeof(key), "%s", comms[proc]);
			}
			assert_int_equal(hc_store__add_hist(wd->st, s, (enum hc_store_hist)h, pid,
							    key, v, c),
					 0);
			assert_int_equal(hc_hist__add(want[h], key, v, c), 0);
			if (h == HC_STORE_H_OFFCPU_US && pid == 102)
				assert_int_equal(hc_hist__add(want_pid, key, v, c), 0);
			if (h == HC_STORE_H_OFFCPU_US && strcmp(key, "db") == 0)
				assert_int_equal(hc_hist__add(want_comm, key, v, c), 0);
		}
		if (s == 14)
			assert_int_equal(hc_store__seal(wd->st, 14), 0);
	}
	/* per-CPU series with a pid: it is the filter that matters, not the add */
	for (int pass = 0; pass < 2; pass++) {
		for (int h = 0; h < HC_STORE_H_MAX; h++) {
			got = hc_store__hist(wd->st, (enum hc_store_hist)h, &f);
			assert_non_null(got);
			assert_true(hc_hist__equal(got, want[h]));
			hc_hist__free(got);
		}
		f.has_pid = true;
		f.pid = 102;
		got = hc_store__hist(wd->st, HC_STORE_H_OFFCPU_US, &f);
		assert_true(hc_hist__equal(got, want_pid));
		hc_hist__free(got);
		got = hc_store__hist(wd->st, HC_STORE_H_RUNQ_LENGTH, &f); /* per-CPU: dropped */
		assert_int_equal(hc_hist__series_count(got), 0);
		hc_hist__free(got);
		got = hc_store__hist(wd->st, HC_STORE_H_LOCK_WAIT_NS, &f); /* per kind: dropped */
		assert_int_equal(hc_hist__series_count(got), 0);
		hc_hist__free(got);
		f.has_pid = false;
		f.comm = "db";
		got = hc_store__hist(wd->st, HC_STORE_H_OFFCPU_US, &f);
		assert_true(hc_hist__equal(got, want_comm));
		hc_hist__free(got);
		/* a comm filter never selects per-CPU series, even one named like it */
		f.comm = "cpu 0";
		got = hc_store__hist(wd->st, HC_STORE_H_RUNQ_LENGTH, &f);
		assert_int_equal(hc_hist__series_count(got), 0);
		hc_hist__free(got);
		f.comm = NULL;
		assert_int_equal(hc_store__seal(wd->st, 30), 0);
	}
	/* an empty range has the shape and no series */
	f = range(100, 200);
	got = hc_store__hist(wd->st, HC_STORE_H_PRIORITY, &f);
	assert_int_equal(hc_hist__type(got), HC_HIST_LQUANTIZE);
	assert_int_equal(hc_hist__series_count(got), 0);
	hc_hist__free(got);
	errno = 0;
	assert_null(hc_store__hist(wd->st, HC_STORE_H_MAX, &f));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(hc_store__add_hist(wd->st, 10, HC_STORE_H_MAX, 1, "x", 1, 1), -EINVAL);
	assert_int_equal(hc_store__add_hist(wd->st, 10, HC_STORE_H_PRIORITY, 1, NULL, 1, 1),
			 -EINVAL);
	for (int h = 0; h < HC_STORE_H_MAX; h++)
		hc_hist__free(want[h]);
	hc_hist__free(want_pid);
	hc_hist__free(want_comm);
	world_free(wd);
}

/* Counters: summed per key over a range (the maximum for _MAX_NS), also after a seal, a late
 * add into a sealed second, coarsening and retention; never mixed with histograms. */
#define NKEYS 3
static const char *const ckeys[NKEYS] = {"rwsem:W block", "spinlock spin", "mutex block"};

struct cref {
	uint64_t v[HC_STORE_C_MAX][NKEYS];
	bool seen[NKEYS];
};

static int cref_cb(void *ctx, const char *key, uint64_t value)
{
	struct cref *got = ctx;

	for (int k = 0; k < NKEYS; k++)
		if (!strcmp(key, ckeys[k])) {
			assert_false(got->seen[k]); /* each key once */
			got->seen[k] = true;
			got->v[0][k] = value;
			return 0;
		}
	fail_msg("unexpected key %s", key);
	return -EINVAL;
}

static void expect_counters(const struct hc_store *st, int64_t from, int64_t to,
			    uint64_t (*ref)[HC_STORE_C_MAX][NKEYS], int64_t ref_from)
{
	struct hc_store_filter f = range(from, to);

	for (int c = 0; c < HC_STORE_C_MAX; c++) {
		struct cref got = {0};
		uint64_t want[NKEYS] = {0};

		for (int64_t s = from; s < to; s++)
			for (int k = 0; k < NKEYS; k++) {
				uint64_t v = ref[s - ref_from][c][k];

				if (c == HC_STORE_C_LOCK_MAX_NS)
					want[k] = v > want[k] ? v : want[k];
				else
					want[k] += v;
			}
		assert_int_equal(hc_store__counter(st, (enum hc_store_counter)c, &f, cref_cb, &got),
				 0);
		for (int k = 0; k < NKEYS; k++) {
			assert_int_equal(got.seen[k], want[k] != 0);
			assert_int_equal(got.v[0][k], want[k]);
		}
	}
}

static int stop_cb(void *ctx, const char *key, uint64_t value)
{
	(void)key;
	(void)value;
	++*(int *)ctx;
	return -ECANCELED;
}

static void test_store_counters(void **state)
{
	struct world *wd = world_new(100, 0);
	static uint64_t ref[1200][HC_STORE_C_MAX][NKEYS];
	struct hc_store_filter f = range(0, 1000);
	struct hc_hist *h;
	struct prog p;
	char longkey[300];
	int calls = 0;

	(void)state;
	memset(ref, 0, sizeof(ref));
	for (int64_t s = 10; s < 40; s++) {
		for (int n = 0; n < 20; n++) {
			int c = (int)(rnd() % HC_STORE_C_MAX), k = (int)(rnd() % NKEYS);
			uint64_t v = rnd() % 3 ? rnd() % 100000 : 0;

			assert_int_equal(hc_store__add_counter(wd->st, s, (enum hc_store_counter)c,
							       ckeys[k], v),
					 0);
			if (c == HC_STORE_C_LOCK_MAX_NS)
				ref[s][c][k] = v > ref[s][c][k] ? v : ref[s][c][k];
			else
				ref[s][c][k] += v;
		}
		if (s % 7 == 0)
			assert_int_equal(hc_store__seal(wd->st, s - 1), 0);
	}
	/* late: into sealed seconds, a larger maximum and a smaller one */
	assert_int_equal(
		hc_store__add_counter(wd->st, 12, HC_STORE_C_LOCK_MAX_NS, ckeys[0], 999999), 0);
	ref[12][HC_STORE_C_LOCK_MAX_NS][0] = 999999;
	assert_int_equal(hc_store__add_counter(wd->st, 13, HC_STORE_C_LOCK_MAX_NS, ckeys[1], 1), 0);
	ref[13][HC_STORE_C_LOCK_MAX_NS][1] = ref[13][HC_STORE_C_LOCK_MAX_NS][1] ?: 1;
	assert_int_equal(hc_store__add_counter(wd->st, 14, HC_STORE_C_LOCK_COUNT, ckeys[2], 5), 0);
	ref[14][HC_STORE_C_LOCK_COUNT][2] += 5;
	for (int pass = 0; pass < 2; pass++) {
		expect_counters(wd->st, 0, 1000 - 1, ref, 0);
		expect_counters(wd->st, 12, 15, ref, 0);
		expect_counters(wd->st, 39, 40, ref, 0);
		expect_counters(wd->st, 100, 200, ref, 0); /* empty */
		assert_int_equal(hc_store__seal(wd->st, 50), 0);
	}
	/* counters are not histograms, and histograms not counters */
	h = hc_store__hist(wd->st, HC_STORE_H_LOCK_WAIT_NS, &f);
	assert_int_equal(hc_hist__series_count(h), 0);
	hc_hist__free(h);
	assert_int_equal(
		hc_store__add_hist(wd->st, 20, HC_STORE_H_LOCK_WAIT_NS, 0, ckeys[0], 4096, 3), 0);
	expect_counters(wd->st, 0, 1000 - 1, ref, 0);
	h = hc_store__hist(wd->st, HC_STORE_H_LOCK_WAIT_NS, &f);
	assert_int_equal(hc_hist__series_count(h), 1);
	hc_hist__free(h);
	/* fn's error stops the walk and is returned */
	assert_int_equal(hc_store__counter(wd->st, HC_STORE_C_LOCK_COUNT, &f, stop_cb, &calls),
			 -ECANCELED);
	assert_int_equal(calls, 1);
	/* bad input */
	memset(longkey, 'k', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = 0;
	assert_int_equal(hc_store__add_counter(wd->st, 20, HC_STORE_C_MAX, "x", 1), -EINVAL);
	assert_int_equal(hc_store__add_counter(wd->st, 20, HC_STORE_C_LOCK_COUNT, NULL, 1),
			 -EINVAL);
	assert_int_equal(hc_store__add_counter(wd->st, 20, HC_STORE_C_LOCK_COUNT, longkey, 1),
			 -EINVAL);
	assert_int_equal(hc_store__add_counter(NULL, 20, HC_STORE_C_LOCK_COUNT, "x", 1), -EINVAL);
	assert_int_equal(hc_store__counter(wd->st, HC_STORE_C_MAX, &f, cref_cb, NULL), -EINVAL);
	assert_int_equal(hc_store__counter(wd->st, HC_STORE_C_LOCK_COUNT, NULL, cref_cb, NULL),
			 -EINVAL);
	/* retention: a second older than 100 s before the newest is not stored */
	assert_int_equal(hc_store__seal(wd->st, 125), 0);
	assert_int_equal(hc_store__add_counter(wd->st, 20, HC_STORE_C_LOCK_COUNT, ckeys[0], 7), 0);
	for (int64_t s = 0; s < 25; s++)
		memset(ref[s], 0, sizeof(ref[s]));
	expect_counters(wd->st, 0, 1000 - 1, ref, 0);
	world_free(wd);

	/* coarsened seconds keep sums and maxima: the same paths every second under a cap */
	wd = world_new(0, 384 * 1024);
	memset(ref, 0, sizeof(ref));
	prog_define(wd, &p);
	for (int64_t s = 0; s < 1200; s++) {
		prog_fill_pool(wd, &p, s, 150, 300);
		for (int k = 0; k < NKEYS; k++) {
			uint64_t v = 1 + (uint64_t)((s * 7919 + k * 104729) % 100003);

			ref[s][HC_STORE_C_LOCK_COUNT][k] = 1;
			ref[s][HC_STORE_C_LOCK_WAIT_NS][k] = v;
			ref[s][HC_STORE_C_LOCK_MAX_NS][k] = v;
			assert_int_equal(hc_store__add_counter(wd->st, s, HC_STORE_C_LOCK_COUNT,
							       ckeys[k], 1),
					 0);
			assert_int_equal(hc_store__add_counter(wd->st, s, HC_STORE_C_LOCK_WAIT_NS,
							       ckeys[k], v),
					 0);
			assert_int_equal(hc_store__add_counter(wd->st, s, HC_STORE_C_LOCK_MAX_NS,
							       ckeys[k], v),
					 0);
		}
		assert_int_equal(hc_store__seal(wd->st, s), 0);
	}
	{
		struct hc_store_stats st;

		hc_store__stats(wd->st, &st);
		assert_true(st.coarse_buckets > 0);
		assert_int_equal(st.evicted_early, 0);
	}
	expect_counters(wd->st, 0, 1200, ref, 0);
	expect_counters(wd->st, 0, 10, ref, 0);	     /* one coarse bucket */
	expect_counters(wd->st, 1190, 1200, ref, 0); /* fine seconds */
	world_free(wd);
}

/* Thousands of short-lived processes: the trie must not grow without bound, and collecting it
 * must not change any answer. */
static void test_store_gc(void **state)
{
	struct world *wd = world_new(30, 0);
	struct hc_store_stats s;
	uint32_t common[4], path[32];
	size_t gcs_seen = 0, created = 0;
	uint64_t before_gc_bytes;
	char name[32];

	(void)state;
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "lib%d", i);
		common[i] = frame(wd, HC_NODE_USER, name, "/lib/libc.so", 0);
	}
	for (int64_t sec = 0; sec < 2500; sec++) {
		uint32_t pid = 5000 + (uint32_t)sec;
		struct hc_store_filter f = range(sec - 20, sec + 1);
		struct hc_tree *t1, *t2;

		snprintf(name, sizeof(name), "job%d", (int)(sec % 7));
		path[0] = frame(wd, HC_NODE_PROCESS, name, NULL, pid);
		path[1] = frame(wd, HC_NODE_THREAD, name, NULL, pid);
		/* 20 frames unique to this process, then shared library frames */
		for (int d = 0; d < 20; d++) {
			snprintf(name, sizeof(name), "f%d", d);
			path[2 + d] = frame(wd, HC_NODE_USER, name, "/tmp/job", 0);
		}
		for (int k = 0; k < 4; k++) {
			path[22] = common[k];
			add(wd, sec, path, 23, 1 + (uint64_t)k, (uint64_t)k * 1000, 0);
		}
		created += 26;
		t1 = query(wd, &f, NULL);
		before_gc_bytes = hc_store__memory_bytes(wd->st);
		assert_int_equal(hc_store__seal(wd->st, sec), 0);
		hc_store__stats(wd->st, &s);
		if (s.gc_runs > gcs_seen) {
			gcs_seen = s.gc_runs;
			/* the same answer, less memory */
			t2 = query(wd, &f, NULL);
			expect_same_tree(t1, t2);
			hc_tree__free(t2);
			assert_true(hc_store__memory_bytes(wd->st) < before_gc_bytes);
			expect_query(wd, &f);
		}
		hc_tree__free(t1);
	}
	hc_store__stats(wd->st, &s);
	assert_true(s.gc_runs >= 2);
	assert_true(created > 60000);
	/* live: 31 seconds x 26 nodes; the trie may double before a collection */
	assert_true(s.trie_nodes < 2 * 16384 + 31 * 26);
	assert_true(s.bytes < 4 << 20);
	{
		struct hc_store_filter f = range(s.oldest_s, 3000);

		expect_query(wd, &f);
		f.comm = "job3";
		expect_query(wd, &f);
	}
	world_free(wd);
}

/*
 * The caller's frame dictionary is reset every 100 s (as serve's collector does) while a new
 * process appears every second: frames of processes no held second mentions are collected,
 * the same content defined again under new ids is the same frame, and answers stay right.
 */
static void test_store_frame_reset(void **state)
{
	struct hc_store_opts o = {.retention_s = 30, .period_ns = PERIOD};
	struct hc_store *st = hc_store__new(&o);
	struct hc_store_stats s;
	struct hc_path_elem elems[2 + 20];
	char names[22][32];
	uint32_t path[22], shared[20] = {0}, next = 1;
	size_t defined = 0;

	(void)state;
	assert_non_null(st);
	for (int64_t sec = 0; sec < 2500; sec++) {
		struct hc_path_elem proc = {HC_NODE_PROCESS,	  "job", NULL,
					    7000 + (uint64_t)sec, -1,	 false};
		struct hc_path_elem thr = {HC_NODE_THREAD,	 "job", NULL,
					   7000 + (uint64_t)sec, -1,	false};
		struct hc_weights w = {.on_cpu_ns = 3 * PERIOD, .samples = 3, .off_cpu_ns = 11};

		if (sec % 100 == 0) {
			hc_store__reset_frames(st);
			next = 1;
			for (int d = 0; d < 20; d++) {
				struct hc_path_elem f = {HC_NODE_USER, names[2 + d], "/bin/job", 0,
							 -1,	       false};

				snprintf(names[2 + d], sizeof(names[2 + d]), "f%d", d);
				assert_int_equal(hc_store__define_frame(st, next, &f), 0);
				shared[d] = next++;
				defined++;
			}
		}
		assert_int_equal(hc_store__define_frame(st, next, &proc), 0);
		path[0] = next++;
		assert_int_equal(hc_store__define_frame(st, next, &thr), 0);
		path[1] = next++;
		defined += 2;
		memcpy(&path[2], shared, sizeof(shared));
		assert_int_equal(hc_store__add(st, sec, path, 22, &w), 0);
		assert_int_equal(hc_store__seal(st, sec), 0);
	}
	hc_store__stats(st, &s);
	print_message("%zu frames defined, %llu held after %llu collections\n", defined,
		      (unsigned long long)s.frames, (unsigned long long)s.gc_runs);
	assert_true(s.gc_runs >= 2);
	assert_true(defined > 5000);
	/* held: this epoch's ids (at most 100 processes x 2 + 20) and the processes of the
	 * seconds held, plus what a collection has not reached yet (the trie may double) */
	assert_true(s.frames < 2500);
	/* the answer over what is held, against a tree built from content */
	{
		struct hc_store_filter f = range(s.oldest_s, 2500);
		struct hc_tree *got = hc_tree__new(), *want = hc_tree__new();

		assert_int_equal(hc_store__tree(st, &f, got, NULL), 0);
		for (int64_t sec = s.oldest_s; sec < 2500; sec++) {
			struct hc_weights w = {
				.on_cpu_ns = 3 * PERIOD, .samples = 3, .off_cpu_ns = 11};

			elems[0] = (struct hc_path_elem){HC_NODE_PROCESS,      "job", NULL,
							 7000 + (uint64_t)sec, -1,    false};
			elems[1] = (struct hc_path_elem){HC_NODE_THREAD,       "job", NULL,
							 7000 + (uint64_t)sec, -1,    false};
			for (int d = 0; d < 20; d++)
				elems[2 + d] = (struct hc_path_elem){
					HC_NODE_USER, names[2 + d], "/bin/job", 0, -1, false};
			assert_int_equal(hc_tree__add_path(want, elems, 22, &w), 0);
		}
		expect_same_tree(got, want);
		hc_tree__free(got);
		hc_tree__free(want);
	}
	hc_store__free(st);
}

static void test_store_max_bytes(void **state)
{
	struct world *wd = world_new(0, 384 * 1024);
	struct hc_store_filter f = range(0, 100000);
	struct hc_store_stats s;
	struct hc_store_slot *slots;
	size_t n;
	struct prog p;

	(void)state;
	prog_define(wd, &p);
	/* the same paths every second: coarsening pays */
	for (int64_t sec = 0; sec < 1200; sec++) {
		prog_fill_pool(wd, &p, sec, 150, 300);
		assert_int_equal(hc_store__add_heat(wd->st, sec, (unsigned int)(sec % 50), 1), 0);
		assert_int_equal(hc_store__seal(wd->st, sec), 0);
		assert_true(hc_store__memory_bytes(wd->st) <= 384 * 1024);
	}
	hc_store__stats(wd->st, &s);
	assert_true(s.coarse_buckets > 0);
	assert_int_equal(s.evicted_early, 0);
	assert_int_equal(s.buckets, 1200);
	/* nothing lost: the whole range equals the reference (coarse seconds hold threads by
	 * name, tid 0: compared that way) */
	expect_query_tid0(wd, &f);
	{
		struct hc_tree *t = query(
			wd,
			&(struct hc_store_filter){
				.from_s = 0, .to_s = 10, .on = true, .off = true, .runqueue = true},
			NULL);
		const struct hc_node *proc = hc_node__child(hc_tree__root(t), 0);

		/* the processes ran to the end: they keep their pids; threads are by name */
		assert_true(hc_node__id(proc) >= 100);
		assert_int_equal(hc_node__id(hc_node__child(proc, 0)), 0);
		hc_tree__free(t);
		t = query(wd,
			  &(struct hc_store_filter){.from_s = 1190,
						    .to_s = 1200,
						    .on = true,
						    .off = true,
						    .runqueue = true},
			  NULL);
		proc = hc_node__child(hc_tree__root(t), 0);
		assert_true(hc_node__id(hc_node__child(proc, 0)) >= 1000); /* fine: tids */
		hc_tree__free(t);
	}
	/* a coarse bucket is in a range when its start is: [0, 10) holds seconds 0..9,
	 * [1, 10) holds none of them */
	f = range(0, 10);
	expect_query_tid0(wd, &f);
	{
		struct hc_tree *t;

		f = range(1, 10);
		t = query(wd, &f, NULL);
		assert_int_equal(hc_tree__node_count(t), 1);
		hc_tree__free(t);
	}
	assert_int_equal(hc_store__timeline(wd->st, 0, 20, 1, &slots, &n), 0);
	assert_true(slots[0].samples > 0);
	assert_int_equal(slots[1].samples, 0);
	assert_true(slots[10].samples > 0);
	free(slots);
	/* coarse buckets keep the heat map per second */
	{
		uint64_t rows[HC_STORE_HEAT_ROWS];

		hc_store__heat(wd->st, 3, rows);
		assert_int_equal(rows[3], 1);
		assert_int_equal(rows[4], 0);
	}
	/* a late add into a coarse second lands in its bucket */
	{
		uint32_t path[3] = {p.proc[0], p.thr[0][0], p.fn[0]};

		add(wd, 5, path, 3, 1, 0, 0);
		f = range(0, 10);
		expect_query_tid0(wd, &f);
	}
	world_free(wd);

	/* a different path every time: coarsening cannot keep up, the oldest go early */
	wd = world_new(0, 256 * 1024);
	{
		uint32_t base[2], fn[64];
		char name[16];
		int64_t sec;

		base[0] = frame(wd, HC_NODE_PROCESS, "p", NULL, 1);
		base[1] = frame(wd, HC_NODE_THREAD, "p", NULL, 1);
		for (int i = 0; i < 64; i++) {
			snprintf(name, sizeof(name), "g%d", i);
			fn[i] = frame(wd, HC_NODE_USER, name, NULL, 0);
		}
		for (sec = 0; sec < 600; sec++) {
			for (int k = 0; k < 100; k++) {
				uint32_t path[10] = {base[0], base[1]};

				for (int d = 2; d < 10; d++)
					path[d] = fn[rnd() % 64];
				add(wd, sec, path, 10, 1, 0, 0);
			}
			assert_int_equal(hc_store__seal(wd->st, sec), 0);
			assert_true(hc_store__memory_bytes(wd->st) <= 256 * 1024);
		}
		hc_store__stats(wd->st, &s);
		assert_true(s.evicted_early > 0);
		assert_true(s.oldest_s > 0);
		assert_int_equal(s.buckets + s.evicted_early, 600);
		/* what is left is exactly the reference over what is left */
		f = range(s.oldest_s, 100000);
		expect_query_tid0(wd, &f);
		/* an evicted second is expired now */
		{
			uint32_t path[3] = {base[0], base[1], fn[0]};
			struct hc_weights w = {.on_cpu_ns = PERIOD, .samples = 1};

			assert_int_equal(hc_store__add(wd->st, 0, path, 3, &w), 0);
			hc_store__stats(wd->st, &s);
			assert_int_equal(s.expired_adds, 1);
			assert_int_equal(s.expired_ns, PERIOD);
		}
	}
	world_free(wd);
}

/*
 * One new short-lived process a second, each with its own deep subtree, and a cap: coarse
 * seconds merge exited processes by name, the trie GC frees their subtrees, and the store
 * holds every second instead of evicting; what it answers equals the reference with exited
 * processes merged.
 */
static void test_store_churn_merge(void **state)
{
	struct world *wd = world_new(0, 4 << 20);
	struct hc_store_stats s;
	uint32_t fn[24], daemon[2];
	char name[16];

	(void)state;
	for (int i = 0; i < 24; i++) {
		snprintf(name, sizeof(name), "h%d", i);
		fn[i] = frame(wd, HC_NODE_USER, name, "/bin/job", 0);
	}
	daemon[0] = frame(wd, HC_NODE_PROCESS, "daemon", NULL, 1);
	daemon[1] = frame(wd, HC_NODE_THREAD, "daemon", NULL, 1);
	for (int64_t sec = 0; sec < 1500; sec++) {
		uint32_t path[26];

		path[0] = frame(wd, HC_NODE_PROCESS, "job", NULL, 10000 + (uint64_t)sec);
		path[1] = frame(wd, HC_NODE_THREAD, "job", NULL, 10000 + (uint64_t)sec);
		for (int k = 0; k < 20; k++) {
			for (int d = 0; d < 24; d++)
				path[2 + d] = fn[(d + (uint32_t)k * 7 + (uint32_t)sec) % 24];
			add(wd, sec, path, 26, 1, 100, 0);
		}
		/* and a leaf in a stripped binary: a frame per sampled address */
		path[2] = fn[0];
		path[3] = frame_at(wd, HC_NODE_USER, "[unknown]", "/bin/job", 0, 0x1000 + sec * 16);
		add(wd, sec, path, 4, 1, 0, 0);
		path[0] = daemon[0];
		path[1] = daemon[1];
		add(wd, sec, path, 3, 2, 0, 0);
		assert_int_equal(hc_store__seal(wd->st, sec), 0);
		assert_true(hc_store__memory_bytes(wd->st) <= 4 << 20);
	}
	hc_store__stats(wd->st, &s);
	print_message("1500 processes: %llu s held (%llu coarse buckets), %llu evicted early, "
		      "%llu trie nodes, %llu frames, %llu bytes\n",
		      (unsigned long long)s.buckets, (unsigned long long)s.coarse_buckets,
		      (unsigned long long)s.evicted_early, (unsigned long long)s.trie_nodes,
		      (unsigned long long)s.frames, (unsigned long long)s.bytes);
	assert_int_equal(s.evicted_early, 0);
	assert_int_equal(s.buckets, 1500);
	/* the oldest minute: one merged "job" (pid 0) and the daemon, which kept its pid */
	{
		struct hc_store_filter f = range(0, 60);
		struct hc_tree *t = query(wd, &f, NULL);
		const struct hc_node *root = hc_tree__root(t);
		uint64_t job_ns = 0;

		assert_int_equal(hc_node__child_count(root), 2);
		for (size_t i = 0; i < 2; i++) {
			const struct hc_node *c = hc_node__child(root, i);

			if (!strcmp(hc_node__name(c), "job")) {
				assert_int_equal(hc_node__id(c), 0);
				job_ns = hc_node__weights(c)->on_cpu_ns;
			} else {
				assert_string_equal(hc_node__name(c), "daemon");
				assert_int_equal(hc_node__id(c), 1);
			}
		}
		assert_int_equal(job_ns, 60ull * 21 * PERIOD);
		/* the 60 unresolved leaves of that minute are one [unknown] of /bin/job */
		{
			const struct hc_node *job = hc_node__child(root, 0), *thr, *h0;
			size_t unknown = 0;

			if (strcmp(hc_node__name(job), "job"))
				job = hc_node__child(root, 1);
			thr = hc_node__child(job, 0);
			for (size_t i = 0; i < hc_node__child_count(thr); i++) {
				h0 = hc_node__child(thr, i);
				if (strcmp(hc_node__name(h0), "h0"))
					continue;
				for (size_t k = 0; k < hc_node__child_count(h0); k++)
					if (!strcmp(hc_node__name(hc_node__child(h0, k)),
						    "[unknown]")) {
						unknown++;
						assert_int_equal(
							hc_node__offset(hc_node__child(h0, k)), -1);
					}
			}
			assert_int_equal(unknown, 1);
		}
		hc_tree__free(t);
	}
	world_free(wd);
}

static void test_store_bad_input(void **state)
{
	struct hc_store_opts o = {.period_ns = 0};
	struct world *wd;
	struct hc_path_elem e = {HC_NODE_USER, "f", NULL, 0, -1, false};
	struct hc_weights w = {.on_cpu_ns = PERIOD, .samples = 1};
	uint32_t path[HC_STORE_MAX_DEPTH + 1];
	uint32_t proc, thr, fn;
	struct hc_store_stats s;

	(void)state;
	errno = 0;
	assert_null(hc_store__new(&o));
	assert_int_equal(errno, EINVAL);
	assert_null(hc_store__new(NULL));
	hc_store__free(NULL);

	wd = world_new(0, 0);
	/* ids must be dense and in order */
	assert_int_equal(hc_store__define_frame(wd->st, 0, &e), -EINVAL);
	assert_int_equal(hc_store__define_frame(wd->st, 2, &e), -EINVAL);
	e.name = NULL;
	assert_int_equal(hc_store__define_frame(wd->st, 1, &e), -EINVAL);
	e.name = "f";
	e.kind = HC_NODE_ROOT;
	assert_int_equal(hc_store__define_frame(wd->st, 1, &e), -EINVAL);
	e.kind = (enum hc_node_kind)42;
	assert_int_equal(hc_store__define_frame(wd->st, 1, &e), -EINVAL);
	proc = frame(wd, HC_NODE_PROCESS, "p", NULL, 1);
	thr = frame(wd, HC_NODE_THREAD, "t", NULL, 1);
	fn = frame(wd, HC_NODE_USER, "f", "/m", 0);
	e.kind = HC_NODE_USER;
	assert_int_equal(hc_store__define_frame(wd->st, 3, &e), -EINVAL); /* already defined */
	assert_int_equal(hc_store__define_frame(wd->st, 5, &e), -EINVAL); /* gap */

	path[0] = proc;
	path[1] = thr;
	path[2] = fn;
	assert_int_equal(hc_store__add(wd->st, 1, path, 3, &w), 0);
	path[2] = 4; /* undefined */
	assert_int_equal(hc_store__add(wd->st, 1, path, 3, &w), -EINVAL);
	path[2] = 0;
	assert_int_equal(hc_store__add(wd->st, 1, path, 3, &w), -EINVAL);
	path[2] = fn;
	path[0] = thr; /* not a process */
	assert_int_equal(hc_store__add(wd->st, 1, path, 3, &w), -EINVAL);
	path[0] = proc;
	path[1] = fn; /* not a thread */
	assert_int_equal(hc_store__add(wd->st, 1, path, 3, &w), -EINVAL);
	path[1] = thr;
	assert_int_equal(hc_store__add(wd->st, 1, path, 1, &w), -EINVAL);
	assert_int_equal(hc_store__add(wd->st, 1, path, 0, &w), -EINVAL);
	assert_int_equal(hc_store__add(wd->st, 1, NULL, 3, &w), -EINVAL);
	assert_int_equal(hc_store__add(wd->st, 1, path, 3, NULL), -EINVAL);
	for (size_t i = 2; i < HC_STORE_MAX_DEPTH + 1; i++)
		path[i] = fn;
	assert_int_equal(hc_store__add(wd->st, 1, path, HC_STORE_MAX_DEPTH + 1, &w), -EINVAL);
	assert_int_equal(hc_store__add(wd->st, 1, path, HC_STORE_MAX_DEPTH, &w), 0);
	/* nothing of the refused adds went in */
	hc_store__stats(wd->st, &s);
	assert_int_equal(s.trie_nodes, 3 + HC_STORE_MAX_DEPTH - 3);
	{
		struct hc_store_filter f = range(0, 10);
		struct hc_tree *t = query(wd, &f, NULL);

		assert_int_equal(hc_node__weights(hc_tree__root(t))->samples, 2);
		assert_int_equal(hc_tree__node_count(t), 1 + HC_STORE_MAX_DEPTH);
		hc_tree__free(t);
		assert_int_equal(hc_store__tree(wd->st, NULL, NULL, NULL), -EINVAL);
	}
	assert_int_equal(hc_store__seal(NULL, 1), -EINVAL);
	world_free(wd);
}

int run_store_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_totals),	  cmocka_unit_test(test_store_filters),
		cmocka_unit_test(test_store_range),	  cmocka_unit_test(test_store_late_add),
		cmocka_unit_test(test_store_retention),	  cmocka_unit_test(test_store_prune),
		cmocka_unit_test(test_store_timeline),	  cmocka_unit_test(test_store_heat),
		cmocka_unit_test(test_store_hist),	  cmocka_unit_test(test_store_counters),
		cmocka_unit_test(test_store_gc),	  cmocka_unit_test(test_store_frame_reset),
		cmocka_unit_test(test_store_max_bytes),	  cmocka_unit_test(test_store_inlined),
		cmocka_unit_test(test_store_churn_merge), cmocka_unit_test(test_store_bad_input),
	};

	return cmocka_run_group_tests_name("store", tests, NULL, NULL);
}
