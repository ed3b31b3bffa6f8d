// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_profile__from_json(): round trips (encode -> decode -> encode gives the same bytes) for the
 * golden file, for a profile with every kind of node and field, and for a profile built the way
 * serve builds /api/profile; siblings that are the same node (written by earlier versions,
 * as in fixtures/viewer/profile.json) merged; and a table of malformed documents, each
 * refused with -EINVAL and a reason naming where the problem is.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/hist.h"
#include "profile/store.h"
#include "tests.h"

#define P 10000000 /* 100 Hz */
#define NS 1000000000LL
#define WAKER(n, tid, pid)                                    \
	{                                                     \
		HC_NODE_WAKER, (n), NULL, (tid), (pid), false \
	}
#define KMOD(n, m)                                     \
	{                                              \
		HC_NODE_KERNEL, (n), (m), 0, -1, false \
	}
#define LOCK(n)                                       \
	{                                             \
		HC_NODE_LOCK, (n), NULL, 0, -1, false \
	}

static char *encode_json(const struct hc_profile *p)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(hc_profile__write_json(p, f), 0);
	fclose(f);
	return buf;
}

/* text -> decode -> encode; returns the new text and (optionally) the decoded profile. */
static char *reencode(const char *text, struct hc_profile **decoded)
{
	struct hc_profile *p = NULL;
	json_error_t jerr;
	char why[256];
	json_t *doc;
	char *out;
	int err;

	doc = json_loads(text, 0, &jerr);
	if (!doc)
		fail_msg("does not parse: %s", jerr.text);
	err = hc_profile__from_json(doc, &p, why, sizeof(why));
	if (err)
		fail_msg("refused (%d): %s", err, why);
	assert_non_null(p);
	assert_string_equal(why, "");
	json_decref(doc);
	out = encode_json(p);
	if (decoded)
		*decoded = p;
	else
		hc_profile__free(p);
	return out;
}

/* Nodes in a flamegraph JSON tree (the golden file is shallow: recursion is fine here). */
static size_t count_nodes(const json_t *n)
{
	const json_t *c;
	size_t count = 1, i;

	json_array_foreach (json_object_get(n, "children"), i, c)
		count += count_nodes(c);
	return count;
}

static void test_golden_round_trip(void **state)
{
	struct hc_profile *p;
	json_error_t jerr;
	json_t *golden;
	char *expected, *again;
	size_t len;

	(void)state;
	golden = json_load_file(HC_FIXTURES_DIR "/small.json", 0, &jerr);
	if (!golden)
		fail_msg("small.json: %s", jerr.text);
	/* the encoder's compact form, which is what the test_encode golden test checks */
	expected = json_dumps(golden, JSON_COMPACT);
	assert_non_null(expected);
	again = reencode(expected, &p);
	len = strlen(again);
	assert_true(len > 0 && again[len - 1] == '\n');
	again[len - 1] = '\0';
	assert_string_equal(again, expected);

	/* some fields, read back as numbers */
	assert_string_equal(p->host, "web-1");
	assert_int_equal(p->started_at_ns, 1795334462345000000LL); /* ms precision */
	assert_int_equal(p->sampling.n_per_cpu, 2);
	assert_int_equal(p->sampling.per_cpu[1].idle_ns, 60000000);
	assert_int_equal(p->sampling.n_lost, 4);
	assert_int_equal(hc_tree__node_count(p->tree),
			 count_nodes(json_object_get(golden, "flamegraph")));
	assert_int_equal(hc_node__weights(hc_tree__root(p->tree))->off_cpu_ns, 5000);
	hc_profile__free(p);
	free(again);
	free(expected);
	json_decref(golden);
}

/* Every kind of node and member the encoder writes. */
static struct hc_profile *full_profile(void)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_hist *lq, *q;
	struct hc_tree *t;

	assert_non_null(p);
	t = p->tree;
	p->host = NULL; /* null */
	p->kernel = strdup("6.1.0-\"odd\"\xff");
	p->started_at_ns = -1;		      /* 1969-12-31T23:59:59.999Z */
	p->duration_ns = (1ULL << 63) + 4096; /* above INT64_MAX: written as a real */
	p->sampling.frequency_hz = 99.5;
	p->sampling.period_ns = P;
	p->sampling.cpus = 4294967295u;
	p->sampling.per_cpu = calloc(1, sizeof(*p->sampling.per_cpu));
	assert_non_null(p->sampling.per_cpu);
	p->sampling.per_cpu[0] =
		(struct hc_cpu_samples){.cpu = 7, .expected = 1, .samples = 2, .idle_ns = 3};
	p->sampling.n_per_cpu = 1;
	assert_int_equal(hc_profile__add_lost(p, "ringbuf_full", 3), 0);
	assert_int_equal(hc_profile__add_lost(p, "we\"ird\xfe", 0), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "objects", 4), 0);
	p->totals.on_cpu_ns = 1;
	p->totals.cpu_unclaimed_ns = 6;
	p->totals.user_samples = UINT64_MAX; /* a real of 2^64 */
	p->scheduler = json_pack("{s:b, s:I, s:{s:I, s:[I, I]}}", "offcpu", 1, "min_block_ns",
				 (json_int_t)0, "cpu_unclaimed", "unclaimed_ns", (json_int_t)5,
				 "per_second_ns", (json_int_t)1, (json_int_t)2);
	p->range = json_pack("{s:s, s:{s:n}}", "from", "x", "filter", "pid");
	assert_non_null(p->scheduler);
	assert_non_null(p->range);

	lq = hc_hist__new_lquantize("prio", 0, 140, 10);
	q = hc_hist__new_quantize("us");
	assert_non_null(lq);
	assert_non_null(q);
	assert_int_equal(hc_hist__add(lq, "app", 120, 11), 0);
	assert_int_equal(hc_hist__add(q, "app", 1000, 2), 0);
	assert_int_equal(hc_hist__add(q, "cpu 10", -5, 1), 0);
	assert_int_equal(json_object_set_new(p->histograms, "priority", hc_hist__to_json(lq)), 0);
	assert_int_equal(json_object_set_new(p->histograms, "offcpu_us", hc_hist__to_json(q)), 0);
	hc_hist__free(lq);
	hc_hist__free(q);

	ADD_PATH(t, P, 3, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"));
	ADD_PATH(t, P, 2, 5000, 700, PROC("app", 100), THR("worker", 101),
		 USR("main", "/usr/bin/app"), UNK("/usr/lib/libfoo.so", 0x1a2b));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("worker", 101), USR("main", "/usr/bin/app"),
		 UNK("/usr/lib/libfoo.so", 0x1a2c));
	ADD_PATH(t, P, 0, 9000, 0, PROC("app", 100), THR("worker", 101),
		 USR("main", "/usr/bin/app"), KRN("schedule"), WAKER("kworker/0:1", 55, 2),
		 KMOD("try_to_wake_up", "xfs"));
	ADD_PATH(t, P, 0, 300, 0, PROC("app", 100), THR("app", 100), WAKER("[interrupt]", 0, 0));
	/* serve's coarse identities: pid and tid 0, a waker with no pid (offset -1) */
	ADD_PATH(t, P, 0, 400, 0, PROC("ls", 0), THR("ls", 0), KRN("[unknown]"),
		 WAKER("sh", 0, -1));
	ADD_PATH(t, P, 1, 0, 0, PROC("ls", 0), THR("ls", 0), UNK("/bin/ls", -1));
	/* quotes, backslashes, invalid UTF-8, thread and root self time, zero-weight leaves */
	ADD_PATH(t, P, 1, 0, 0, PROC("we\"ird\\comm", 200), THR("t\xff\xfe", 201));
	ADD_PATH(t, P, 0, 0, 0, PROC("we\"ird\\comm", 200), THR("t\xff\xfe", 201),
		 USR("zero", NULL), KRN("deeper zero"));
	ADD_PATH(t, P, 0, 0, 0, PROC("empty", 300));
	ADD_PATH(t, P, 0, 1, 0, PROC("we\"ird\\comm", 200), THR("t\xff\xfe", 201),
		 UNK(NULL, 0x7fffffffffffffffLL));
	assert_int_equal(hc_tree__add_path(t, NULL, 0, &(struct hc_weights){.runqueue_ns = 9}), 0);
	/* --locks: a lock wait in the main tree, and the section with its waiters' tree */
	ADD_PATH(t, P, 0, 700, 0, PROC("app", 100), THR("worker", 101), USR("main", "/usr/bin/app"),
		 KRN("down_write_killable"), LOCK("rwsem:W"));
	p->locks =
		json_pack("{s:I, s:I, s:[{s:s, s:b, s:I, s:I, s:I}], s:{s:I}}", "events",
			  (json_int_t)3, "wait_ns", (json_int_t)1000, "by_kind", "kind", "rwsem:W",
			  "spin", 0, "count", (json_int_t)3, "total_ns", (json_int_t)1000, "max_ns",
			  (json_int_t)900, "dropped", "ringbuf_full", (json_int_t)0);
	p->lock_tree = hc_tree__new();
	assert_non_null(p->locks);
	assert_non_null(p->lock_tree);
	assert_int_equal(
		hc_tree__add_path(p->lock_tree,
				  (struct hc_path_elem[]){PROC("app", 100), THR("worker", 101),
							  KRN("down_write_killable"),
							  LOCK("rwsem:W mmap_lock")},
				  4, &(struct hc_weights){.off_cpu_ns = 1000, .samples = 3}),
		0);
	return p;
}

static void test_full_round_trip(void **state)
{
	struct hc_profile *p = full_profile(), *d;
	char *first, *second, *third, *via_to_json;
	json_t *doc;
	char why[128];

	(void)state;
	first = encode_json(p);
	second = reencode(first, &d);
	assert_string_equal(second, first);
	/* the values behind the bytes */
	assert_null(d->host);
	assert_int_equal(d->started_at_ns, -1000000); /* ms precision, rounded down */
	assert_int_equal(d->duration_ns, (1ULL << 63) + 4096);
	assert_true(d->sampling.frequency_hz == 99.5);
	assert_int_equal(d->sampling.cpus, 4294967295u);
	assert_int_equal(d->totals.user_samples, UINT64_MAX);
	assert_int_equal(hc_tree__node_count(d->tree), hc_tree__node_count(p->tree));
	assert_true(json_equal(d->scheduler, p->scheduler));
	assert_true(d->scheduler != p->scheduler);
	assert_true(json_equal(d->range, p->range));
	assert_true(json_equal(d->histograms, p->histograms));
	assert_true(json_equal(d->locks, p->locks));
	assert_non_null(d->lock_tree);
	assert_int_equal(hc_tree__node_count(d->lock_tree), hc_tree__node_count(p->lock_tree));
	assert_non_null(strstr(first, "\"locks\":{\"events\":3,"));
	assert_non_null(strstr(first, "\"name\":\"rwsem:W mmap_lock\",\"kind\":\"lock\""));

	/* a decoded profile decodes and encodes the same again */
	third = reencode(second, NULL);
	assert_string_equal(third, first);

	/* hc_profile__to_json's document decodes too, with the doc left as it was */
	doc = hc_profile__to_json(p);
	assert_non_null(doc);
	hc_profile__free(d);
	assert_int_equal(hc_profile__from_json(doc, &d, why, sizeof(why)), 0);
	via_to_json = encode_json(d);
	assert_string_equal(via_to_json, first);
	json_decref(doc);

	free(via_to_json);
	free(third);
	free(second);
	free(first);
	hc_profile__free(d);
	hc_profile__free(p);
}

/* What serve's /api/profile answers (serve/backend.c encode_profile): a tree from the store,
 * pruned, with histograms from the store, a `range` member and no `scheduler`. */
static void test_serve_shape(void **state)
{
	const struct hc_store_opts o = {.retention_s = 600, .period_ns = P};
	struct hc_store_filter f = {.from_s = 1000,
				    .to_s = 1003,
				    .on = true,
				    .off = true,
				    .runqueue = true,
				    .max_nodes = 6};
	struct hc_path_elem frames[] = {
		PROC("app", 100),
		THR("app", 100),
		USR("main", "/usr/bin/app"),
		USR("work", "/usr/bin/app"),
		KRN("schedule"),
		WAKER("kworker", 9, 9),
		PROC("db", 200),
		THR("db io", 201),
		UNK("/usr/lib/libdb.so", 0x40),
	};
	const uint32_t a[] = {1, 2, 3, 4}, b[] = {1, 2, 3, 5, 6}, c[] = {7, 8, 9}, d[] = {7, 8};
	struct hc_store_pruned pruned = {0};
	struct hc_profile *p = hc_profile__new(), *back;
	struct hc_store *st = hc_store__new(&o);
	const struct hc_weights on = {.on_cpu_ns = P, .samples = 1}, off = {.off_cpu_ns = 77};
	char *first, *second;

	(void)state;
	assert_non_null(st);
	assert_non_null(p);
	for (uint32_t i = 0; i < ARRAY_SIZE(frames); i++)
		assert_int_equal(hc_store__define_frame(st, i + 1, &frames[i]), 0);
	for (int64_t sec = 1000; sec < 1003; sec++) {
		assert_int_equal(hc_store__add(st, sec, a, ARRAY_SIZE(a), &on), 0);
		assert_int_equal(hc_store__add(st, sec, b, ARRAY_SIZE(b), &off), 0);
		assert_int_equal(hc_store__add(st, sec, c, ARRAY_SIZE(c), &on), 0);
		assert_int_equal(hc_store__add(st, sec, d, ARRAY_SIZE(d), &on), 0);
		assert_int_equal(
			hc_store__add_hist(st, sec, HC_STORE_H_PRIORITY, 100, "app", 120, 3), 0);
		assert_int_equal(
			hc_store__add_hist(st, sec, HC_STORE_H_RUNQ_LENGTH, 0, "cpu 0", 2, 1), 0);
		assert_int_equal(hc_store__seal(st, sec), 0);
	}
	assert_int_equal(hc_store__tree(st, &f, p->tree, &pruned), 0);
	assert_true(pruned.nodes > 0); /* pruned nodes folded into their parents' self time */
	for (int h = 0; h < HC_STORE_H_MAX; h++) {
		struct hc_hist *hist = hc_store__hist(st, (enum hc_store_hist)h, &f);

		assert_non_null(hist);
		assert_int_equal(json_object_set_new(p->histograms, hc_store_hist__name(h),
						     hc_hist__to_json(hist)),
				 0);
		hc_hist__free(hist);
	}
	p->host = strdup("web-1");
	p->kernel = strdup("6.1.0");
	p->started_at_ns = f.from_s * NS;
	p->duration_ns = (uint64_t)(f.to_s - f.from_s) * NS;
	p->sampling.frequency_hz = 99;
	p->sampling.period_ns = P;
	p->sampling.samples = hc_node__weights(hc_tree__root(p->tree))->samples;
	p->totals.on_cpu_ns = hc_node__weights(hc_tree__root(p->tree))->on_cpu_ns;
	assert_int_equal(hc_profile__add_lost(p, "ringbuf_full", 0), 0);
	p->range = json_pack("{s:s, s:s, s:I, s:I, s:{s:n, s:n, s:s, s:s}, s:{s:I, s:I, s:I}}",
			     "from", "1970-01-01T00:16:40.000Z", "to", "1970-01-01T00:16:43.000Z",
			     "from_ms", (json_int_t)1000000, "to_ms", (json_int_t)1003000, "filter",
			     "pid", "tid", "comm", "app", "kind", "all", "pruned", "max_nodes",
			     (json_int_t)f.max_nodes, "nodes", (json_int_t)pruned.nodes, "value_ns",
			     (json_int_t)pruned.value_ns);
	assert_non_null(p->range);
	hc_tree__sort(p->tree);

	first = encode_json(p);
	second = reencode(first, &back);
	assert_string_equal(second, first);
	assert_null(back->scheduler);
	assert_true(json_equal(back->range, p->range));
	assert_int_equal(json_object_size(back->histograms), HC_STORE_H_MAX);
	free(second);
	free(first);
	hc_profile__free(back);
	hc_profile__free(p);
	hc_store__free(st);
}

/* ---- malformed documents ---- */

/* The document the table mutates: compact JSON of this profile, children sorted by value:
 *   flamegraph/children/0                         process app (pid 100)
 *              .../children/0                     thread app (tid 100)
 *              .../children/0/children/0          main
 *              main/children/0                    [unknown] /lib/libfoo.so 0x1a2b (3 samples)
 *              main/children/1                    schedule (kernel, 1000 ns off-CPU)
 *              main/children/1/children/0         waker kworker (pid 2, tid 55)
 *              main/children/2                    idle (zero weight)
 */
static json_t *base_doc(void)
{
	struct hc_profile *p = hc_profile__new();
	json_t *doc;

	assert_non_null(p);
	p->sampling.per_cpu = calloc(1, sizeof(*p->sampling.per_cpu));
	assert_non_null(p->sampling.per_cpu);
	p->sampling.n_per_cpu = 1;
	assert_int_equal(hc_profile__add_lost(p, "ringbuf_full", 1), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "objects", 1), 0);
	ADD_PATH(p->tree, P, 3, 0, 0, PROC("app", 100), THR("app", 100),
		 USR("main", "/usr/bin/app"), UNK("/lib/libfoo.so", 0x1a2b));
	ADD_PATH(p->tree, P, 0, 1000, 0, PROC("app", 100), THR("app", 100),
		 USR("main", "/usr/bin/app"), KRN("schedule"), WAKER("kworker", 55, 2));
	ADD_PATH(p->tree, P, 0, 0, 0, PROC("app", 100), THR("app", 100),
		 USR("main", "/usr/bin/app"), USR("idle", NULL));
	doc = hc_profile__to_json(p);
	assert_non_null(doc);
	hc_profile__free(p);
	return doc;
}

enum op { END = 0, SET, DEL, DUP };

struct mutation {
	enum op op;
	const char *path;  /* '/'-separated keys and array indices */
	const char *value; /* SET: JSON text */
};

struct bad_case {
	struct mutation m[3];
	const char *why; /* a substring of the reason */
};

#define F "flamegraph"
#define MAIN F "/children/0/children/0/children/0"
#define MAINP F ".children[0].children[0].children[0]"

static const struct bad_case bad_cases[] = {
	{{{SET, "locks", "[]"}}, "locks: not an object"},
	{{{SET, "locks", "{\"by_kind\":[{\"kind\":\"mutex\"}],\"flamegraph\":{}}"}},
	 "locks.by_kind: entry 0"},
	{{{SET, "locks",
	   "{\"by_kind\":[{\"kind\":\"mutex\",\"spin\":true,\"count\":-1,"
	   "\"total_ns\":0,\"max_ns\":0}],\"flamegraph\":{}}"}},
	 "count"},
	{{{SET, "locks", "{\"by_kind\":[]}"}}, "locks: member \"flamegraph\" missing"},
	{{{SET, "locks",
	   "{\"by_kind\":[],\"flamegraph\":{\"name\":\"all\","
	   "\"kind\":\"nope\",\"value\":0}}"}},
	 "locks.flamegraph"},
	{{{SET, "schema", "\"hotcold-profile/2\""}}, "schema: not \"hotcold-profile/1\""},
	{{{DEL, "schema", NULL}}, "\"schema\" missing"},
	{{{SET, "host", "5"}}, "host: not a string"},
	{{{SET, "kernel", "\"a\\u0000b\""}}, "kernel: not a string without NUL"},
	{{{SET, "started_at", "\"2026-02-29T00:00:00.000Z\""}}, "started_at: not an RFC"},
	{{{SET, "started_at", "\"2026-11-22 08:01:02Z\""}}, "started_at: not an RFC"},
	{{{SET, "started_at", "\"2300-01-01T00:00:00Z\""}}, "started_at: not an RFC"},
	{{{SET, "started_at", "12"}}, "started_at: not an RFC"},
	{{{SET, "duration_ns", "-1"}}, "duration_ns: not a non-negative integer"},
	{{{SET, "duration_ns", "1.5"}}, "duration_ns: not a non-negative integer"},
	{{{SET, "duration_ns", "1e300"}}, "duration_ns: not a non-negative integer"},
	{{{SET, "duration_ns", "\"5\""}}, "duration_ns: not a non-negative integer"},
	{{{DEL, "sampling", NULL}}, "\"sampling\" missing"},
	{{{SET, "sampling", "[]"}}, "sampling: not an object"},
	{{{SET, "sampling/cpus", "4294967296"}}, "sampling: cpus: not an integer in 0..4294967295"},
	{{{SET, "sampling/frequency_hz", "-1"}}, "frequency_hz: not a non-negative number"},
	{{{SET, "sampling/frequency_hz", "\"99\""}}, "frequency_hz"},
	{{{SET, "sampling/per_cpu", "{}"}}, "per_cpu: not an array"},
	{{{SET, "sampling/per_cpu/0", "3"}}, "sampling.per_cpu[0]: not an object"},
	{{{SET, "sampling/per_cpu/0/cpu", "\"0\""}}, "sampling.per_cpu[0]: cpu: not an integer"},
	{{{DEL, "sampling/per_cpu/0/samples", NULL}},
	 "sampling.per_cpu[0]: member \"samples\" missing"},
	{{{SET, "sampling/lost/ringbuf_full", "-3"}}, "sampling.lost: ringbuf_full: not a non"},
	{{{SET, "sampling/lost", "[1]"}}, "lost: not an object"},
	{{{DEL, "totals/on_cpu_ns", NULL}}, "totals: member \"on_cpu_ns\" missing"},
	{{{SET, "totals/idle_ns", "null"}}, "totals: idle_ns: not a non-negative integer"},
	{{{SET, "symbolize", "[]"}}, "symbolize: not an object"},
	{{{SET, "symbolize/objects", "true"}}, "symbolize: objects: not a non-negative"},
	{{{SET, "scheduler", "5"}}, "scheduler: not an object"},
	{{{SET, "range", "\"x\""}}, "range: not an object"},
	{{{DEL, "flamegraph", NULL}}, "\"flamegraph\" missing"},
	{{{SET, F "/kind", "\"process\""}}, "flamegraph.kind: \"process\" at depth 0 (root"},
	{{{SET, F "/name", "\"everything\""}}, "flamegraph.name: the root is named \"all\""},
	{{{SET, F "/children/0/kind", "\"thread\""}},
	 F ".children[0].kind: \"thread\" at depth 1 (process expected)"},
	{{{SET, F "/children/0/children/0/kind", "\"user\""}},
	 F ".children[0].children[0].kind: \"user\" at depth 2 (thread expected)"},
	{{{SET, MAIN "/kind", "\"process\""}}, MAINP ".kind: \"process\" at depth 3"},
	{{{SET, MAIN "/kind", "\"root\""}}, MAINP ".kind: \"root\" at depth 3"},
	{{{SET, MAIN "/kind", "\"bogus\""}}, MAINP ".kind: unknown kind \"bogus\""},
	{{{SET, MAIN "/kind", "3"}}, MAINP ".kind: not a string"},
	{{{DEL, MAIN "/name", NULL}}, MAINP ": member \"name\" missing"},
	{{{SET, MAIN "/name", "\"a\\u0000b\""}}, MAINP ".name: not a string without NUL"},
	{{{SET, MAIN "/module", "7"}}, MAINP ".module: not a string"},
	{{{SET, MAIN "/inlined", "1"}}, MAINP ".inlined: not a boolean"},
	{{{SET, MAIN "/inlined", "\"true\""}}, MAINP ".inlined: not a boolean"},
	{{{SET, F "/children/0/children/0/inlined", "true"}},
	 F ".children[0].children[0].inlined: only user and kernel frames are inlined"},
	{{{SET, F "/children/0/inlined", "false"}},
	 F ".children[0].inlined: only user and kernel frames are inlined"},
	{{{DEL, F "/children/0/pid", NULL}}, F ".children[0]: member \"pid\" missing"},
	{{{SET, F "/children/0/pid", "-1"}}, F ".children[0].pid: not a non-negative"},
	{{{SET, F "/children/0/children/0/tid", "\"100\""}},
	 F ".children[0].children[0].tid: not a non-negative"},
	{{{DEL, MAIN "/children/1/children/0/pid", NULL}},
	 MAINP ".children[1].children[0]: member \"pid\" missing"},
	{{{SET, MAIN "/children/0/offset", "\"0x\""}}, MAINP ".children[0].offset: not a hex"},
	{{{SET, MAIN "/children/0/offset", "\"1a2b\""}}, MAINP ".children[0].offset: not a hex"},
	{{{SET, MAIN "/children/0/offset", "\"0x1g\""}}, MAINP ".children[0].offset: not a hex"},
	{{{SET, MAIN "/children/0/offset", "\"0x8000000000000000\""}},
	 MAINP ".children[0].offset: not a hex"},
	{{{SET, MAIN "/children/0/offset", "\"0x00000000000000001\""}},
	 MAINP ".children[0].offset: not a hex"},
	{{{SET, MAIN "/children/0/offset", "6699"}}, MAINP ".children[0].offset: not a hex"},
	{{{SET, MAIN "/value", "30001001"}},
	 MAINP ".value: not on_cpu_ns + off_cpu_ns + runqueue_ns"},
	{{{DEL, MAIN "/value", NULL}}, MAINP ": member \"value\" missing"},
	{{{SET, MAIN "/samples", "-2"}}, MAINP ".samples: not a non-negative integer"},
	/* value still the sum of its parts, but the children are worth more */
	{{{SET, MAIN "/off_cpu_ns", "999"}, {SET, MAIN "/value", "30000999"}},
	 MAINP ": children worth more than the node (off_cpu_ns)"},
	{{{SET, MAIN "/samples", "2"}}, MAINP ": children worth more than the node (samples)"},
	{{{SET, F "/on_cpu_ns", "0"}, {SET, F "/value", "1000"}},
	 "flamegraph: children worth more than the node (on_cpu_ns)"},
	{{{SET, MAIN "/children", "{}"}}, MAINP ".children: not an array"},
	{{{DEL, MAIN "/children", NULL}}, MAINP ": member \"children\" missing"},
	{{{SET, MAIN "/children/2", "5"}}, MAINP ".children[2]: not an object"},
	{{{DEL, "histograms", NULL}}, "\"histograms\" missing"},
	{{{SET, "histograms", "[]"}}, "histograms: not an object"},
	{{{SET, "histograms/priority", "{\"type\":\"bogus\"}"}}, "histograms.priority: "},
};

/* The value at a '/'-separated path; *parent and *last get its container and last step. */
static json_t *at_path(json_t *doc, const char *path, json_t **parent, char *last, size_t len)
{
	char buf[256], *save = NULL, *tok;
	json_t *cur = doc;

	snprintf(buf, sizeof(buf), "%s", path);
	*parent = NULL;
	for (tok = strtok_r(buf, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
		*parent = cur;
		snprintf(last, len, "%s", tok);
		cur = json_is_array(cur) ? json_array_get(cur, strtoul(tok, NULL, 10))
					 : json_object_get(cur, tok);
	}
	return cur;
}

static void mutate(json_t *doc, const struct mutation *m)
{
	json_t *parent, *cur, *val;
	json_error_t jerr;
	char last[64];

	cur = at_path(doc, m->path, &parent, last, sizeof(last));
	assert_non_null(parent);
	switch (m->op) {
	case SET:
		val = json_loads(m->value, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
		if (!val)
			fail_msg("bad test value %s: %s", m->value, jerr.text);
		if (json_is_array(parent))
			assert_int_equal(json_array_set_new(parent, strtoul(last, NULL, 10), val),
					 0);
		else
			assert_int_equal(json_object_set_new(parent, last, val), 0);
		break;
	case DEL:
		assert_non_null(cur);
		if (json_is_array(parent))
			assert_int_equal(json_array_remove(parent, strtoul(last, NULL, 10)), 0);
		else
			assert_int_equal(json_object_del(parent, last), 0);
		break;
	case DUP:
		assert_non_null(cur);
		assert_int_equal(json_array_append_new(parent, json_deep_copy(cur)), 0);
		break;
	case END:
		break;
	}
}

static void test_malformed(void **state)
{
	json_t *base = base_doc();
	struct hc_profile *p;
	char why[512];

	(void)state;
	/* the base document itself is fine */
	assert_int_equal(hc_profile__from_json(base, &p, why, sizeof(why)), 0);
	hc_profile__free(p);

	assert_true(ARRAY_SIZE(bad_cases) >= 20);
	for (size_t i = 0; i < ARRAY_SIZE(bad_cases); i++) {
		json_t *doc = json_deep_copy(base);
		int err;

		for (size_t j = 0; j < ARRAY_SIZE(bad_cases[i].m) && bad_cases[i].m[j].op; j++)
			mutate(doc, &bad_cases[i].m[j]);
		p = (struct hc_profile *)1;
		err = hc_profile__from_json(doc, &p, why, sizeof(why));
		if (err != -EINVAL || !strstr(why, bad_cases[i].why))
			fail_msg("case %zu: got %d \"%s\", expected -EINVAL \"%s\"", i, err, why,
				 bad_cases[i].why);
		assert_null(p);
		json_decref(doc);
	}

	/* not an object at all */
	{
		json_t *arr = json_array();

		assert_int_equal(hc_profile__from_json(arr, &p, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, "not a JSON object");
		assert_int_equal(hc_profile__from_json(NULL, &p, why, sizeof(why)), -EINVAL);
		assert_true(why[0] != '\0');
		json_decref(arr);
	}

	/* a short reason buffer still gets a terminated (truncated) reason; none at all is fine */
	{
		json_t *doc = json_deep_copy(base);

		mutate(doc, &(struct mutation){SET, MAIN "/children/0/offset", "\"zz\""});
		memset(why, 'x', sizeof(why));
		assert_int_equal(hc_profile__from_json(doc, &p, why, 12), -EINVAL);
		assert_string_equal(why, "flamegraph.");
		assert_int_equal(hc_profile__from_json(doc, &p, NULL, 0), -EINVAL);
		json_decref(doc);
	}
	json_decref(base);
}

/* ---- siblings that are the same node: merged ---- */

struct wline {
	char *key;
	struct hc_weights w;
};

struct wlines {
	struct wline *l;
	size_t n, cap;
};

static void wlines_add(struct wlines *wl, const char *key, const struct hc_weights *w)
{
	if (wl->n == wl->cap) {
		wl->cap = wl->cap ? wl->cap * 2 : 256;
		wl->l = realloc(wl->l, wl->cap * sizeof(*wl->l));
		assert_non_null(wl->l);
	}
	wl->l[wl->n].key = strdup(key);
	assert_non_null(wl->l[wl->n].key);
	wl->l[wl->n++].w = *w;
}

static int wline_cmp(const void *a, const void *b)
{
	return strcmp(((const struct wline *)a)->key, ((const struct wline *)b)->key);
}

/* "key on off rq samples" per distinct key, sorted, weights of equal keys summed. */
static char *wlines_render(struct wlines *wl)
{
	char *out = NULL;
	size_t len = 0, i, j;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	qsort(wl->l, wl->n, sizeof(*wl->l), wline_cmp);
	for (i = 0; i < wl->n; i = j) {
		struct hc_weights sum = wl->l[i].w;

		for (j = i + 1; j < wl->n && strcmp(wl->l[i].key, wl->l[j].key) == 0; j++)
			hc_weights__add(&sum, &wl->l[j].w);
		fprintf(f, "%s %llu %llu %llu %llu\n", wl->l[i].key,
			(unsigned long long)sum.on_cpu_ns, (unsigned long long)sum.off_cpu_ns,
			(unsigned long long)sum.runqueue_ns, (unsigned long long)sum.samples);
	}
	fclose(f);
	for (i = 0; i < wl->n; i++)
		free(wl->l[i].key);
	free(wl->l);
	*wl = (struct wlines){0};
	return out;
}

static uint64_t json_u64(const json_t *n, const char *key)
{
	const json_t *v = json_object_get(n, key);

	assert_true(json_is_integer(v));
	return (uint64_t)json_integer_value(v);
}

/* One key per node of the document's tree: the identity of every step from the root, the
 * way the decoder's merge sees it; weights inclusive, as the document states them. */
static void doc_wlines(const json_t *n, const char *prefix, struct wlines *wl)
{
	const char *kind = json_string_value(json_object_get(n, "kind"));
	const json_t *module = json_object_get(n, "module"), *offset = json_object_get(n, "offset");
	const struct hc_weights w = {
		.on_cpu_ns = json_u64(n, "on_cpu_ns"),
		.off_cpu_ns = json_u64(n, "off_cpu_ns"),
		.runqueue_ns = json_u64(n, "runqueue_ns"),
		.samples = json_u64(n, "samples"),
	};
	long long id = 0, off = -1;
	const json_t *c;
	char *key;
	size_t i;

	if (!strcmp(kind, "process")) {
		id = (long long)json_u64(n, "pid");
	} else if (!strcmp(kind, "thread")) {
		id = (long long)json_u64(n, "tid");
	} else if (!strcmp(kind, "waker")) {
		id = (long long)json_u64(n, "tid");
		off = (long long)json_u64(n, "pid");
	} else if (offset) {
		off = strtoll(json_string_value(offset), NULL, 16);
	}
	assert_true(asprintf(&key, "%s/%s:%s:%s:%lld:%lld", prefix, kind,
			     json_string_value(json_object_get(n, "name")),
			     module ? json_string_value(module) : "-", id, off) > 0);
	wlines_add(wl, key, &w);
	json_array_foreach (json_object_get(n, "children"), i, c)
		doc_wlines(c, key, wl);
	free(key);
}

/* The same keys for a tree; also checks that siblings are distinct nodes, that a node's
 * value is the sum of its parts and its children are never worth more. */
static void tree_wlines(const struct hc_node *n, const char *prefix, struct wlines *wl)
{
	const struct hc_weights *w = hc_node__weights(n);
	struct hc_weights kids = {0};
	char *key;

	assert_true(asprintf(&key, "%s/%s:%s:%s:%lld:%lld", prefix,
			     hc_node_kind__name(hc_node__kind(n)), hc_node__name(n),
			     hc_node__module(n) ? hc_node__module(n) : "-",
			     (long long)hc_node__id(n), (long long)hc_node__offset(n)) > 0);
	wlines_add(wl, key, w);
	for (size_t i = 0; i < hc_node__child_count(n); i++) {
		const struct hc_node *c = hc_node__child(n, i);

		hc_weights__add(&kids, hc_node__weights(c));
		tree_wlines(c, key, wl);
	}
	assert_true(kids.on_cpu_ns <= w->on_cpu_ns && kids.off_cpu_ns <= w->off_cpu_ns &&
		    kids.runqueue_ns <= w->runqueue_ns && kids.samples <= w->samples);
	free(key);
}

/* The decoded tree is the document's with equal sibling paths summed: the same text of
 * "path weights" lines, one per node in the tree (hence no duplicate siblings). */
static void expect_merged(const json_t *doc, const struct hc_profile *p)
{
	struct wlines wl = {0};
	char *from_doc, *from_tree;
	size_t n;

	doc_wlines(json_object_get(doc, "flamegraph"), "", &wl);
	from_doc = wlines_render(&wl);
	tree_wlines(hc_tree__root(p->tree), "", &wl);
	n = wl.n;
	from_tree = wlines_render(&wl);
	assert_string_equal(from_tree, from_doc);
	assert_int_equal(n, hc_tree__node_count(p->tree));
	free(from_doc);
	free(from_tree);
}

static json_t *first_child(json_t *node)
{
	json_t *c = json_array_get(json_object_get(node, "children"), 0);

	assert_non_null(c);
	return c;
}

/* The json child of `parent` (a node object) named `name`, the k-th such (0: the first). */
static json_t *child_named(json_t *parent, const char *name, int k)
{
	json_t *c;
	size_t i;

	json_array_foreach (json_object_get(parent, "children"), i, c) {
		if (!strcmp(json_string_value(json_object_get(c, "name")), name) && k-- == 0)
			return c;
	}
	fail_msg("no child %s", name);
	return NULL;
}

/*
 * Two user frames u1 and u2 under one thread, each with a child a (which has a child c): the
 * document is then edited to call u2 "u1", as earlier versions wrote two `[unknown]` frames of
 * one module. The decoder merges them, and their a and c children below, two levels down.
 */
static void paths_u1_u2(struct hc_tree *t, const char *second)
{
	ADD_PATH(t, P, 5, 0, 0, PROC("app", 100), THR("app", 100), USR("u1", "/lib/m.so"));
	ADD_PATH(t, P, 2, 0, 0, PROC("app", 100), THR("app", 100), USR("u1", "/lib/m.so"),
		 USR("a", "/lib/m.so"));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100), USR("u1", "/lib/m.so"),
		 USR("a", "/lib/m.so"), KRN("c"));
	ADD_PATH(t, P, 1, 5, 0, PROC("app", 100), THR("app", 100), USR(second, "/lib/m.so"),
		 USR("a", "/lib/m.so"));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100), USR(second, "/lib/m.so"),
		 USR("a", "/lib/m.so"), KRN("c"));
	ADD_PATH(t, P, 0, 0, 7, PROC("app", 100), THR("app", 100), USR(second, "/lib/m.so"),
		 USR("b", "/lib/m.so"));
	ADD_PATH(t, P, 0, 300, 0, PROC("app", 100), THR("app", 100), USR(second, "/lib/m.so"));
}

static void test_merged_siblings(void **state)
{
	struct hc_profile *p = hc_profile__new(), *merged = hc_profile__new(), *d;
	json_t *doc, *thread, *u2, *bad;
	char why[256], *expected, *again;
	const struct hc_node *proc, *thr, *u1;

	(void)state;
	assert_non_null(p);
	assert_non_null(merged);
	paths_u1_u2(p->tree, "u2");
	paths_u1_u2(merged->tree, "u1"); /* what the merge must give */
	doc = hc_profile__to_json(p);
	assert_non_null(doc);
	thread = first_child(first_child(json_object_get(doc, "flamegraph")));
	u2 = child_named(thread, "u2", 0);
	assert_int_equal(json_object_set_new(u2, "name", json_string("u1")), 0);

	assert_int_equal(hc_profile__from_json(doc, &d, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	expect_merged(doc, d);
	/* the values: u1 is 5 + 2 + 1 (its own) and 1 + 1 samples, 5 + 300 ns off, 7 ns rq */
	hc_tree__sort(merged->tree);
	proc = hc_node__child(hc_tree__root(d->tree), 0);
	thr = hc_node__child(proc, 0);
	u1 = hc_node__child(thr, 0);
	assert_string_equal(hc_node__name(u1), "u1");
	assert_int_equal(hc_node__child_count(proc), 1);
	assert_int_equal(hc_node__child_count(thr), 1);
	assert_int_equal(hc_node__weights(u1)->samples, 10);
	assert_int_equal(hc_node__weights(u1)->on_cpu_ns, 10 * P);
	assert_int_equal(hc_node__weights(u1)->off_cpu_ns, 305);
	assert_int_equal(hc_node__weights(u1)->runqueue_ns, 7);
	assert_int_equal(hc_node__child_count(u1), 2); /* a (merged) and b */
	assert_int_equal(hc_tree__node_count(d->tree), hc_tree__node_count(merged->tree));
	/* re-encoding gives the merged tree, byte for byte */
	expected = encode_json(merged);
	again = encode_json(d);
	assert_string_equal(again, expected);
	free(again);
	free(expected);
	hc_profile__free(d);

	/* the per-node rules still hold for each node as written: the second u1's children
	 * (a: 2 samples) are worth more than it (0), though not more than the merged u1 */
	bad = json_deep_copy(doc);
	assert_non_null(bad);
	thread = first_child(first_child(json_object_get(bad, "flamegraph")));
	u2 = child_named(thread, "u1", 1);
	assert_int_equal(json_object_set_new(u2, "samples", json_integer(0)), 0);
	d = (struct hc_profile *)1;
	assert_int_equal(hc_profile__from_json(bad, &d, why, sizeof(why)), -EINVAL);
	assert_null(d);
	assert_non_null(strstr(why, "children worth more than the node (samples)"));
	json_decref(bad);

	/* the case the malformed table had: a duplicated zero-weight leaf */
	bad = base_doc();
	mutate(bad, &(struct mutation){DUP, MAIN "/children/2", NULL});
	assert_int_equal(hc_profile__from_json(bad, &d, why, sizeof(why)), 0);
	expect_merged(bad, d);
	hc_profile__free(d);
	json_decref(bad);

	json_decref(doc);
	hc_profile__free(merged);
	hc_profile__free(p);
}

/* A capture by an earlier version, with duplicate `[unknown]` siblings: it decodes, the
 * root's totals are the file's, every node is the sum of the file's nodes on its path, and
 * encoding it and decoding that again changes nothing. */
static void test_viewer_fixture(void **state)
{
	const char *path = HC_VIEWER_FIXTURES_DIR "/profile.json";
	struct hc_profile *p, *again;
	const struct hc_weights *w;
	json_t *doc, *root;
	json_error_t jerr;
	char why[256], *first, *second;

	(void)state;
	doc = json_load_file(path, 0, &jerr);
	if (!doc)
		fail_msg("%s: %s at line %d", path, jerr.text, jerr.line);
	if (hc_profile__from_json(doc, &p, why, sizeof(why)))
		fail_msg("%s refused: %s", path, why);
	root = json_object_get(doc, "flamegraph");
	w = hc_node__weights(hc_tree__root(p->tree));
	assert_int_equal(w->on_cpu_ns, json_u64(root, "on_cpu_ns"));
	assert_int_equal(w->off_cpu_ns, json_u64(root, "off_cpu_ns"));
	assert_int_equal(w->runqueue_ns, json_u64(root, "runqueue_ns"));
	assert_int_equal(w->samples, json_u64(root, "samples"));
	assert_int_equal(hc_weights__value(w), json_u64(root, "value"));
	/* the premise: the file has duplicates, so the tree has fewer nodes */
	assert_true(hc_tree__node_count(p->tree) < count_nodes(root));
	expect_merged(doc, p);

	first = encode_json(p);
	second = reencode(first, &again);
	assert_string_equal(second, first);
	assert_int_equal(hc_tree__node_count(again->tree), hc_tree__node_count(p->tree));
	free(second);
	free(first);
	hc_profile__free(again);
	hc_profile__free(p);
	json_decref(doc);
}

/* Keys the decoder does not know are ignored; members added within /1 may be absent. */
static void test_lenient(void **state)
{
	json_t *doc = base_doc();
	struct hc_profile *p;
	char why[256];

	(void)state;
	mutate(doc, &(struct mutation){SET, "future", "{\"x\": [1, 2]}"});
	mutate(doc, &(struct mutation){SET, MAIN "/future", "\"y\""});
	mutate(doc, &(struct mutation){DEL, "totals/cpu_unclaimed_ns", NULL});
	mutate(doc, &(struct mutation){DEL, "sampling/per_cpu/0/idle_ns", NULL});
	/* an RFC 3339 offset and a longer fraction than the encoder writes */
	mutate(doc,
	       &(struct mutation){SET, "started_at", "\"2026-11-22T09:01:02.345678901+01:00\""});
	/* uppercase hex */
	mutate(doc, &(struct mutation){SET, MAIN "/children/0/offset", "\"0x1A2B\""});
	assert_int_equal(hc_profile__from_json(doc, &p, why, sizeof(why)), 0);
	assert_int_equal(p->totals.cpu_unclaimed_ns, 0);
	assert_int_equal(p->started_at_ns, 1795334462345678901LL);
	hc_profile__free(p);
	json_decref(doc);
}

/* A chain of user frames under one thread, `frames` deep (the root is depth 0). */
static json_t *chain_doc(size_t frames)
{
	json_t *doc = base_doc(), *node = NULL, *thread;

	for (size_t i = 0; i < frames; i++) {
		json_t *n = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:[]}", "name", "f",
				      "kind", "user", "value", 1, "on_cpu_ns", 1, "off_cpu_ns", 0,
				      "runqueue_ns", 0, "samples", 1, "children");

		assert_non_null(n);
		if (node)
			assert_int_equal(
				json_array_append_new(json_object_get(n, "children"), node), 0);
		node = n;
	}
	thread = json_array_get(
		json_object_get(
			json_array_get(
				json_object_get(json_object_get(doc, "flamegraph"), "children"), 0),
			"children"),
		0);
	assert_non_null(thread);
	/* replace the thread's children with the chain (the thread has more than enough) */
	assert_int_equal(json_object_set_new(thread, "children", json_pack("[o]", node)), 0);
	return doc;
}

static void test_depth(void **state)
{
	struct hc_profile *p;
	char why[256], *out;
	json_t *doc;

	(void)state;
	/* depth 1000 (root 0, process 1, thread 2, 998 frames): the encoders' limit */
	doc = chain_doc(998);
	assert_int_equal(hc_profile__from_json(doc, &p, why, sizeof(why)), 0);
	assert_int_equal(hc_tree__node_count(p->tree), 1 + 1 + 1 + 998);
	out = encode_json(p); /* and the encoder writes it */
	free(out);
	hc_profile__free(p);
	json_decref(doc);

	/* one more: refused, as the encoder would refuse it */
	doc = chain_doc(999);
	assert_int_equal(hc_profile__from_json(doc, &p, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "flamegraph.children[0].children[0].children[0]<994 levels>"
				 ".children[0].children[0].children[0].children: nested deeper "
				 "than 1000 levels");
	json_decref(doc);

	/* far deeper, built in memory (no parser limit): refused without recursion */
	doc = chain_doc(5000);
	assert_int_equal(hc_profile__from_json(doc, &p, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "nested deeper than 1000 levels"));
	json_decref(doc);
}

int run_decode_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_round_trip), cmocka_unit_test(test_full_round_trip),
		cmocka_unit_test(test_serve_shape),	  cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_merged_siblings),	  cmocka_unit_test(test_viewer_fixture),
		cmocka_unit_test(test_lenient),		  cmocka_unit_test(test_depth),
	};

	return cmocka_run_group_tests_name("decode", tests, NULL, NULL);
}
