// SPDX-License-Identifier: GPL-2.0-only
/*
 * Allocation failure, injected (failalloc.h): for each operation, fail its first allocation,
 * then its second, and so on, until it runs through without a failure. Every failing run must
 * end in the documented error (-ENOMEM, or NULL and ENOMEM), crash nothing, leak nothing (the
 * sanitized build checks leaks at exit) and leave nothing half done: after the failure the
 * object is used on, the failed step is done again, and the result must equal a reference
 * built without failures. One group per module, chosen by argv[1]:
 *   stacktab tree hist decode encode store wire aggregate
 * Each prints how many failure points its sweeps went through.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "failalloc.h"
#include "profile/hist.h"
#include "profile/encode.h"
#include "profile/profile.h"
#include "profile/stacktab.h"
#include "profile/tree.h"
#include "profile/store.h"
#include "serve/wire.h"

#ifdef HC_ALLOC_AGGREGATE
#include "capture/capture.h"
#include "capture/record_sink.h"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* A sweep over failure points: for (SWEEP(n)) { ...; if (!failalloc__fired()) break; } */
#define SWEEP(n)             \
	unsigned long n = 0; \
	;                    \
	n++

static void report(const char *what, unsigned long points)
{
	printf("alloc %-28s %5lu failure points\n", what, points);
	/* A sweep that never failed anything tested nothing. */
	assert_true(points > 0);
}

/* xorshift64: the same inputs on every run. */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* ---- profile/stacktab ---- */

#define TAB_KEYS 600

static size_t tab_key(size_t i, uint64_t *key)
{
	size_t n = i % 9;

	for (size_t k = 0; k < n; k++)
		key[k] = i * 1000003u + k;
	if (n == 0)
		return i == 0 ? 0 : tab_key(i + 1000000, key); /* one empty key */
	return n;
}

static void check_tab(const struct hc_stacktab *tab, size_t count)
{
	assert_int_equal(hc_stacktab__count(tab), count);
	for (size_t i = 0; i < count; i++) {
		uint64_t want[16];
		size_t wn = tab_key(i, want), n;
		const uint64_t *got = hc_stacktab__key(tab, i, &n);

		assert_int_equal(n, wn);
		assert_memory_equal(got, want, n * sizeof(*got));
	}
}

static void test_alloc_stacktab(void **state)
{
	(void)state;
	for (SWEEP(n)) {
		struct hc_stacktab *tab;

		failalloc__arm(n);
		tab = hc_stacktab__new();
		if (!tab) {
			assert_true(failalloc__fired());
			assert_int_equal(errno, ENOMEM);
			failalloc__disarm();
			continue;
		}
		for (size_t i = 0; i < TAB_KEYS; i++) {
			uint64_t key[16];
			size_t kn = tab_key(i, key);
			int64_t r = hc_stacktab__intern(tab, key, kn);

			if (r < 0) {
				assert_int_equal(r, -ENOMEM);
				failalloc__hold(true);
				check_tab(tab, i); /* nothing of the failed key */
				failalloc__hold(false);
				r = hc_stacktab__intern(tab, key, kn);
			}
			assert_int_equal(r, (int64_t)i);
			/* Known keys allocate nothing and find their index. */
			assert_int_equal(hc_stacktab__intern(tab, key, kn), (int64_t)i);
			hc_stacktab__weights(tab, i)->samples = i;
		}
		failalloc__disarm();
		check_tab(tab, TAB_KEYS);
		for (size_t i = 0; i < TAB_KEYS; i++)
			assert_int_equal(hc_stacktab__weights(tab, i)->samples, i);
		hc_stacktab__free(tab);
		if (!failalloc__fired()) {
			report("stacktab new+intern", n);
			break;
		}
	}
}

/* ---- profile/tree ---- */

#define TREE_PATHS 150

static const char *const names[] = {"main", "run", "work", "spin", "read", "write", "poll"};
static const char *const modules[] = {"app", "libc.so.6", NULL};

/* Path i of the tree tests: process, thread, user frames (some inlined), kernel frames. */
static size_t tree_path(size_t i, struct hc_path_elem *p, struct hc_weights *w)
{
	uint64_t x = 0x2545f4914f6cdd1dull + i * 0x9e3779b97f4a7c15ull;
	size_t n = 0, depth = 1 + next_rand(&x) % 6;

	p[n++] = (struct hc_path_elem){
		HC_NODE_PROCESS, i % 3 ? "app" : "db", NULL, 100 + i % 3, -1, false};
	p[n++] = (struct hc_path_elem){HC_NODE_THREAD, "worker", NULL, 1000 + i % 5, -1, false};
	for (size_t d = 0; d < depth; d++)
		p[n++] = (struct hc_path_elem){HC_NODE_USER,
					       names[next_rand(&x) % 7],
					       modules[next_rand(&x) % 3],
					       0,
					       next_rand(&x) % 5 ? -1 : 0x40,
					       next_rand(&x) % 4 == 0};
	if (i % 2)
		p[n++] = (struct hc_path_elem){HC_NODE_KERNEL, "schedule", NULL, 0, -1, false};
	*w = (struct hc_weights){.on_cpu_ns = i * 1000, .off_cpu_ns = i % 4 * 77, .samples = i};
	return n;
}

static char *dump(json_t *j)
{
	char *s;

	assert_non_null(j);
	s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
	assert_non_null(s);
	json_decref(j);
	return s;
}

static char *tree_dump(const struct hc_tree *t)
{
	return dump(hc_tree__to_json(t));
}

static struct hc_tree *reference_tree(size_t paths)
{
	struct hc_tree *t = hc_tree__new();

	assert_non_null(t);
	for (size_t i = 0; i < paths; i++) {
		struct hc_path_elem p[16];
		struct hc_weights w;
		size_t n = tree_path(i, p, &w);

		assert_int_equal(hc_tree__add_path(t, p, n, &w), 0);
	}
	return t;
}

static void test_alloc_tree(void **state)
{
	struct hc_tree *ref = reference_tree(TREE_PATHS);
	char *want = tree_dump(ref);

	(void)state;
	for (SWEEP(n)) {
		struct hc_tree *t;

		failalloc__arm(n);
		t = hc_tree__new();
		if (!t) {
			assert_true(failalloc__fired());
			assert_int_equal(errno, ENOMEM);
			failalloc__disarm();
			continue;
		}
		for (size_t i = 0; i < TREE_PATHS; i++) {
			struct hc_path_elem p[16];
			struct hc_weights w;
			size_t pn = tree_path(i, p, &w), nodes = hc_tree__node_count(t);
			struct hc_weights root = *hc_node__weights(hc_tree__root(t));
			int r = hc_tree__add_path(t, p, pn, &w);

			if (r) {
				assert_int_equal(r, -ENOMEM);
				/* No node, no weight of the failed path. */
				assert_int_equal(hc_tree__node_count(t), nodes);
				assert_memory_equal(hc_node__weights(hc_tree__root(t)), &root,
						    sizeof(root));
				assert_int_equal(hc_tree__add_path(t, p, pn, &w), 0);
			}
		}
		failalloc__disarm();
		{
			char *got = tree_dump(t);

			assert_string_equal(got, want);
			free(got);
		}
		hc_tree__free(t);
		if (!failalloc__fired()) {
			report("tree new+add_path", n);
			break;
		}
	}
	/* A smaller tree for to_json: its sweep is quadratic in the allocations it makes. */
	free(want);
	hc_tree__free(ref);
	ref = reference_tree(TREE_PATHS / 6);
	want = tree_dump(ref);
	for (SWEEP(n)) {
		json_t *j;

		failalloc__arm(n);
		j = hc_tree__to_json(ref);
		failalloc__disarm();
		if (!j) {
			assert_true(failalloc__fired());
			assert_int_equal(errno, ENOMEM);
			continue;
		}
		{
			char *got = dump(j);

			assert_string_equal(got, want);
			free(got);
		}
		if (!failalloc__fired()) {
			report("tree to_json", n);
			break;
		}
	}
	free(want);
	hc_tree__free(ref);
}

/* ---- profile/hist ---- */

static int hist_fill(struct hc_hist *h, size_t series, bool retry)
{
	uint64_t x = 88172645463325252ull;

	for (size_t i = 0; i < 40 * series; i++) {
		char key[32];
		int64_t v = (int64_t)(next_rand(&x) % 100000) - 50;
		static uint64_t before[65537 + 2]; /* the most buckets a series has */
		const uint64_t *c;
		size_t series_before = hc_hist__series_count(h);
		int r;

		snprintf(key, sizeof(key), "cpu %zu", i % series);
		assert_true(hc_hist__nbuckets(h) <= ARRAY_SIZE(before));
		c = hc_hist__counts(h, key);
		if (c)
			memcpy(before, c, hc_hist__nbuckets(h) * sizeof(*c));
		r = hc_hist__add(h, key, v, 1 + i % 3);
		if (r && (!retry || r != -ENOMEM))
			return r;
		if (r) {
			/* The series as it was, or not there at all. */
			assert_int_equal(hc_hist__series_count(h), series_before);
			c = hc_hist__counts(h, key);
			if (c)
				assert_memory_equal(c, before, hc_hist__nbuckets(h) * sizeof(*c));
			assert_int_equal(hc_hist__add(h, key, v, 1 + i % 3), 0);
		}
	}
	return 0;
}

static struct hc_hist *new_hist(bool lq)
{
	return lq ? hc_hist__new_lquantize("us", -100, 200, 10) : hc_hist__new_quantize("us");
}

static void test_alloc_hist(void **state)
{
	(void)state;
	for (int lq = 0; lq <= 1; lq++) {
		struct hc_hist *ref = new_hist(lq);
		json_t *ref_json;
		char *want;

		assert_non_null(ref);
		assert_int_equal(hist_fill(ref, lq ? 8 : 30, false), 0);
		ref_json = hc_hist__to_json(ref);
		want = dump(json_incref(ref_json));
		for (SWEEP(n)) {
			struct hc_hist *h;

			failalloc__arm(n);
			h = new_hist(lq);
			if (!h) {
				assert_int_equal(errno, ENOMEM);
				assert_true(failalloc__fired());
				failalloc__disarm();
				continue;
			}
			assert_int_equal(hist_fill(h, lq ? 8 : 30, true), 0);
			failalloc__disarm();
			assert_true(hc_hist__equal(h, ref));
			hc_hist__free(h);
			if (!failalloc__fired()) {
				report(lq ? "hist lquantize new+add" : "hist quantize new+add", n);
				break;
			}
		}
		/* Merge: dst may hold part of src after a failure (hist.h); nothing leaks. */
		for (SWEEP(n)) {
			struct hc_hist *h = new_hist(lq);
			int r;

			assert_non_null(h);
			failalloc__arm(n);
			r = hc_hist__merge(h, ref);
			failalloc__disarm();
			if (r) {
				assert_int_equal(r, -ENOMEM);
				assert_true(failalloc__fired());
			} else {
				assert_true(hc_hist__equal(h, ref));
			}
			hc_hist__free(h);
			if (!failalloc__fired()) {
				report(lq ? "hist lquantize merge" : "hist quantize merge", n);
				break;
			}
		}
		for (SWEEP(n)) {
			json_t *j;

			failalloc__arm(n);
			j = hc_hist__to_json(ref);
			failalloc__disarm();
			if (!j) {
				assert_int_equal(errno, ENOMEM);
				continue;
			}
			{
				char *got = dump(j);

				assert_string_equal(got, want);
				free(got);
			}
			if (!failalloc__fired()) {
				report(lq ? "hist lquantize to_json" : "hist quantize to_json", n);
				break;
			}
		}
		for (SWEEP(n)) {
			struct hc_hist *h;
			char why[128] = "";

			failalloc__arm(n);
			h = hc_hist__from_json(ref_json, why, sizeof(why));
			failalloc__disarm();
			if (!h) {
				/* Out of memory is not a malformed document. */
				assert_int_equal(errno, ENOMEM);
				assert_true(failalloc__fired());
				continue;
			}
			assert_true(hc_hist__equal(h, ref));
			hc_hist__free(h);
			if (!failalloc__fired()) {
				report(lq ? "hist lquantize from_json" : "hist quantize from_json",
				       n);
				break;
			}
		}
		json_decref(ref_json);
		free(want);
		hc_hist__free(ref);
	}
}

/* ---- profile: the JSON decoder and the encoders ---- */

static json_t *load_fixture(const char *rel)
{
	char path[4096];
	json_error_t err;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/%s", HC_FIXTURES_DIR, rel);
	doc = json_load_file(path, 0, &err);
	if (!doc)
		fail_msg("%s: %s", path, err.text);
	return doc;
}

static const char *const profiles[] = {"profile/small.json", "fuzz/profile/locks.json"};

static void test_alloc_decode(void **state)
{
	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(profiles); k++) {
		json_t *doc = load_fixture(profiles[k]);
		struct hc_profile *ref;
		char why[256], *want;

		assert_int_equal(hc_profile__from_json(doc, &ref, why, sizeof(why)), 0);
		want = dump(hc_profile__to_json(ref));
		for (SWEEP(n)) {
			struct hc_profile *p = NULL;
			int r;

			failalloc__arm(n);
			r = hc_profile__from_json(doc, &p, why, sizeof(why));
			failalloc__disarm();
			if (r) {
				assert_int_equal(r, -ENOMEM);
				assert_true(failalloc__fired());
				continue;
			}
			{
				char *got = dump(hc_profile__to_json(p));

				assert_string_equal(got, want);
				free(got);
			}
			hc_profile__free(p);
			if (!failalloc__fired()) {
				char what[64];

				snprintf(what, sizeof(what), "decode_json %s",
					 strrchr(profiles[k], '/') + 1);
				report(what, n);
				break;
			}
		}
		free(want);
		hc_profile__free(ref);
		json_decref(doc);
	}
}

enum encoder { ENC_JSON, ENC_FOLDED, ENC_PPROF, ENC_SPEEDSCOPE, ENC_DIFF, ENC_MAX };

static const char *const enc_names[ENC_MAX] = {"json", "folded", "pprof", "speedscope",
					       "diff_folded"};

static int encode(enum encoder e, const struct hc_profile *p, FILE *out)
{
	switch (e) {
	case ENC_JSON:
		return hc_profile__write_json(p, out);
	case ENC_FOLDED:
		return hc_profile__write_folded(p, HC_W_ALL, out);
	case ENC_PPROF:
		return hc_profile__write_pprof(p, HC_W_ALL, out);
	case ENC_SPEEDSCOPE:
		return hc_profile__write_speedscope(p, HC_W_ALL, out);
	default:
		return hc_profile__write_diff_folded(p, p, HC_W_ALL, true, out);
	}
}

/* The encoder's output, with the n-th allocation failing (no failure: n = ULONG_MAX). */
static int encode_with(enum encoder e, const struct hc_profile *p, unsigned long n, char **buf,
		       size_t *len)
{
	FILE *out = open_memstream(buf, len);
	int r;

	assert_non_null(out);
	failalloc__arm(n);
	r = encode(e, p, out);
	failalloc__disarm();
	assert_int_equal(fclose(out), 0);
	return r;
}

static void test_alloc_encode(void **state)
{
	(void)state;
	for (size_t k = 0; k < ARRAY_SIZE(profiles); k++) {
		json_t *doc = load_fixture(profiles[k]);
		struct hc_profile *p;
		char why[256], *want;

		assert_int_equal(hc_profile__from_json(doc, &p, why, sizeof(why)), 0);
		want = dump(hc_profile__to_json(p));
		for (SWEEP(n)) {
			json_t *j;

			failalloc__arm(n);
			j = hc_profile__to_json(p);
			failalloc__disarm();
			if (!j) {
				assert_int_equal(errno, ENOMEM);
				assert_true(failalloc__fired());
				continue;
			}
			{
				char *got = dump(j);

				assert_string_equal(got, want);
				free(got);
			}
			if (!failalloc__fired()) {
				char what[64];

				snprintf(what, sizeof(what), "encode to_json %s",
					 strrchr(profiles[k], '/') + 1);
				report(what, n);
				break;
			}
		}
		for (int e = 0; e < ENC_MAX; e++) {
			char *ref, *got, what[64];
			size_t ref_len, got_len;

			assert_int_equal(encode_with(e, p, ULONG_MAX, &ref, &ref_len), 0);
			for (SWEEP(n)) {
				int r = encode_with(e, p, n, &got, &got_len);

				if (r) {
					/* Part of the output may be written; the error is ours. */
					assert_int_equal(r, -ENOMEM);
					assert_true(failalloc__fired());
				} else {
					assert_int_equal(got_len, ref_len);
					assert_memory_equal(got, ref, ref_len);
				}
				free(got);
				if (!failalloc__fired()) {
					snprintf(what, sizeof(what), "encode %s %s", enc_names[e],
						 strrchr(profiles[k], '/') + 1);
					report(what, n);
					break;
				}
			}
			free(ref);
		}
		free(want);
		hc_profile__free(p);
		json_decref(doc);
	}
}

/* ---- profile/store ---- */

#define STORE_SECONDS 12
#define STORE_STEPS 9

static const struct hc_path_elem store_frames[] = {
	{HC_NODE_PROCESS, "app", NULL, 100, -1, false},
	{HC_NODE_THREAD, "worker", NULL, 1000, -1, false},
	{HC_NODE_THREAD, "io", NULL, 1001, -1, false},
	{HC_NODE_USER, "main", "app", 0, -1, false},
	{HC_NODE_USER, "run", "app", 0, -1, false},
	{HC_NODE_USER, "spin", "app", 0, -1, true},
	{HC_NODE_USER, "[unknown]", "libc.so.6", 0, 0x29d90, false},
	{HC_NODE_KERNEL, "schedule", NULL, 0, -1, false},
	{HC_NODE_PROCESS, "db", NULL, 200, -1, false},
};

/* One step of the store's second sec (0 .. STORE_STEPS - 1); 0 or its error. */
static int store_step(struct hc_store *st, int64_t sec, int step)
{
	static const uint32_t paths[][6] = {
		{1, 2, 4, 5, 6, 0}, {1, 3, 4, 7, 8, 0}, {9, 2, 4, 5, 0, 0}, {1, 2, 4, 0, 0, 0}};
	struct hc_weights w = {.on_cpu_ns = 1000 * (uint64_t)(sec + 1),
			       .off_cpu_ns = 77,
			       .samples = (uint64_t)sec + 1};
	char key[16];

	switch (step) {
	case 0:
	case 1:
	case 2:
	case 3: {
		size_t n = 0;

		while (n < 6 && paths[step][n])
			n++;
		return hc_store__add(st, sec, paths[step], n, &w);
	}
	case 4:
		return hc_store__add_heat(st, sec, (unsigned)sec % HC_STORE_HEAT_ROWS, 3);
	case 5:
		snprintf(key, sizeof(key), "cpu %d", (int)(sec % 3));
		return hc_store__add_hist(st, sec, HC_STORE_H_RUNQ_LENGTH, 0, key, sec % 5, 2);
	case 6:
		return hc_store__add_hist(st, sec, HC_STORE_H_OFFCPU_US, 100, "app", 1 << sec, 1);
	case 7:
		return hc_store__add_counter(st, sec, HC_STORE_C_LOCK_WAIT_NS, "mutex block",
					     (uint64_t)sec * 10 + 1);
	default:
		return hc_store__seal(st, sec);
	}
}

static int store_define(struct hc_store *st, size_t i)
{
	return hc_store__define_frame(st, (uint32_t)i + 1, &store_frames[i]);
}

static int sum_counter(void *ctx, const char *key, uint64_t value)
{
	(void)key;
	*(uint64_t *)ctx += value;
	return 0;
}

/* What the queries say about st, as one string. */
static char *store_dump(const struct hc_store *st)
{
	struct hc_store_filter f = {
		.from_s = 0, .to_s = STORE_SECONDS, .on = true, .off = true, .runqueue = true};
	struct hc_store_slot *slots;
	struct hc_store_pruned pruned;
	struct hc_tree *t = hc_tree__new();
	struct hc_hist *h;
	json_t *doc = json_object();
	uint64_t counter = 0, rows[HC_STORE_HEAT_ROWS];
	size_t n;

	assert_non_null(t);
	assert_non_null(doc);
	assert_int_equal(hc_store__tree(st, &f, t, &pruned), 0);
	json_object_set_new(doc, "tree", hc_tree__to_json(t));
	hc_tree__free(t);
	assert_int_equal(hc_store__timeline(st, 0, STORE_SECONDS, 5, &slots, &n), 0);
	for (size_t i = 0; i < n; i++)
		json_object_set_new(doc, (char[]){(char)('a' + i), 0},
				    json_pack("[IIII]", (json_int_t)slots[i].t_s,
					      (json_int_t)slots[i].on_cpu_ns,
					      (json_int_t)slots[i].off_cpu_ns,
					      (json_int_t)slots[i].samples));
	free(slots);
	for (int k = 0; k < HC_STORE_H_MAX; k++) {
		h = hc_store__hist(st, (enum hc_store_hist)k, &f);
		assert_non_null(h);
		json_object_set_new(doc, hc_store_hist__name((enum hc_store_hist)k),
				    hc_hist__to_json(h));
		hc_hist__free(h);
	}
	assert_int_equal(hc_store__counter(st, HC_STORE_C_LOCK_WAIT_NS, &f, sum_counter, &counter),
			 0);
	json_object_set_new(doc, "counter", json_integer((json_int_t)counter));
	hc_store__heat(st, 3, rows);
	json_object_set_new(doc, "heat3", json_integer((json_int_t)rows[3]));
	return dump(doc);
}

static struct hc_store *store_build(const struct hc_store_opts *opts, bool retry)
{
	struct hc_store *st = hc_store__new(opts);

	if (!st) {
		assert_int_equal(errno, ENOMEM);
		return NULL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(store_frames); i++) {
		int r = store_define(st, i);

		if (r && retry) {
			assert_int_equal(r, -ENOMEM);
			r = store_define(st, i);
		}
		assert_int_equal(r, 0);
	}
	for (int64_t sec = 0; sec < STORE_SECONDS; sec++)
		for (int step = 0; step < STORE_STEPS; step++) {
			int r = store_step(st, sec, step);

			if (r && retry) {
				/* The step left nothing behind: done again, it counts once. */
				assert_int_equal(r, -ENOMEM);
				r = store_step(st, sec, step);
			}
			assert_int_equal(r, 0);
		}
	return st;
}

/* Per second of st: on-CPU ns, off-CPU ns, samples. */
static void store_seconds(const struct hc_store *st, uint64_t out[STORE_SECONDS][3])
{
	struct hc_store_slot *slots;
	size_t n;

	assert_int_equal(hc_store__timeline(st, 0, STORE_SECONDS, 1, &slots, &n), 0);
	assert_int_equal(n, STORE_SECONDS);
	for (size_t i = 0; i < n; i++) {
		out[i][0] = slots[i].on_cpu_ns;
		out[i][1] = slots[i].off_cpu_ns;
		out[i][2] = slots[i].samples;
	}
	free(slots);
}

/*
 * The store built under failures. With room to spare, it must answer every query as the
 * reference does. Under a memory cap that makes seals collect and evict, which seconds go
 * depends on the memory held at each seal, and a seal that failed half way holds other
 * amounts: each second must then be whole (as a store without a cap has it) or gone.
 */
static void store_sweep(const struct hc_store_opts *opts, const char *what)
{
	struct hc_store_opts uncapped = *opts;
	struct hc_store *ref = store_build(opts, false);
	uint64_t whole[STORE_SECONDS][3], got_s[STORE_SECONDS][3];
	char *want = store_dump(ref);

	uncapped.max_bytes = 0;
	{
		struct hc_store *u = store_build(&uncapped, false);

		store_seconds(u, whole);
		hc_store__free(u);
	}
	for (SWEEP(n)) {
		struct hc_store *st;

		failalloc__arm(n);
		st = store_build(opts, true);
		failalloc__disarm();
		if (st && !opts->max_bytes) {
			char *got = store_dump(st);

			assert_string_equal(got, want);
			free(got);
		} else if (st) {
			store_seconds(st, got_s);
			for (int i = 0; i < STORE_SECONDS; i++)
				assert_true(!memcmp(got_s[i], whole[i], sizeof(got_s[i])) ||
					    !(got_s[i][0] | got_s[i][1] | got_s[i][2]));
		}
		hc_store__free(st);
		if (!failalloc__fired()) {
			report(what, n);
			break;
		}
	}
	free(want);
	hc_store__free(ref);
}

static void test_alloc_store(void **state)
{
	struct hc_store_opts opts = {.period_ns = 1000};
	struct hc_store *ref;
	struct hc_store_stats st;

	(void)state;
	store_sweep(&opts, "store new+define+add+seal");
	/* 57 000 bytes: the last seconds' seals collect and evict (the store grows to 58 320). */
	opts.max_bytes = 57000;
	ref = store_build(&opts, false);
	hc_store__stats(ref, &st);
	assert_true(st.evicted_early > 0 && st.gc_runs > 0);
	hc_store__free(ref);
	store_sweep(&opts, "store under a memory cap");
	opts.max_bytes = 0;
	ref = store_build(&opts, false);

	/* The queries: -ENOMEM (NULL and ENOMEM) or the reference's answer. */
	for (SWEEP(n)) {
		struct hc_store_filter f = {.from_s = 0,
					    .to_s = STORE_SECONDS,
					    .on = true,
					    .off = true,
					    .runqueue = true,
					    .max_nodes = 6};
		struct hc_store_pruned pruned;
		struct hc_tree *t = hc_tree__new(), *rt = hc_tree__new();
		int r;

		assert_non_null(t);
		assert_non_null(rt);
		assert_int_equal(hc_store__tree(ref, &f, rt, &pruned), 0);
		failalloc__arm(n);
		r = hc_store__tree(ref, &f, t, &pruned);
		failalloc__disarm();
		if (r) {
			assert_int_equal(r, -ENOMEM);
		} else {
			char *a = tree_dump(t), *b = tree_dump(rt);

			assert_string_equal(a, b);
			free(a);
			free(b);
		}
		hc_tree__free(t);
		hc_tree__free(rt);
		if (!failalloc__fired()) {
			report("store tree (pruned)", n);
			break;
		}
	}
	for (int k = 0; k < HC_STORE_H_MAX; k++) {
		struct hc_store_filter f = {.from_s = 0, .to_s = STORE_SECONDS};
		struct hc_hist *rh = hc_store__hist(ref, (enum hc_store_hist)k, &f);
		unsigned long points = 0;

		assert_non_null(rh);
		for (SWEEP(n)) {
			struct hc_hist *h;

			failalloc__arm(n);
			h = hc_store__hist(ref, (enum hc_store_hist)k, &f);
			failalloc__disarm();
			if (!h) {
				assert_int_equal(errno, ENOMEM);
			} else {
				assert_true(hc_hist__equal(h, rh));
				hc_hist__free(h);
			}
			if (!failalloc__fired()) {
				points = n;
				break;
			}
		}
		hc_hist__free(rh);
		if (k == HC_STORE_H_OFFCPU_US)
			report("store hist offcpu_us", points);
	}
	for (SWEEP(n)) {
		struct hc_store_slot *slots;
		size_t ns;
		int r;

		failalloc__arm(n);
		r = hc_store__timeline(ref, 0, STORE_SECONDS, 1, &slots, &ns);
		failalloc__disarm();
		if (r) {
			assert_int_equal(r, -ENOMEM);
		} else {
			assert_int_equal(ns, STORE_SECONDS);
			free(slots);
		}
		if (!failalloc__fired()) {
			report("store timeline", n);
			break;
		}
	}
	hc_store__free(ref);
}

/* ---- serve/wire ---- */

static void wire_records(struct hc_wire_buf *b, size_t *ends, size_t *n_ends)
{
	static const struct hc_path_elem e = {HC_NODE_USER, "main", "app", 0, -1, false};
	static const uint32_t fids[] = {1, 1, 1};
	static const uint32_t rows[HC_WIRE_HEAT_ROWS] = {1, 2, 3};
	const struct hc_wire_status status = {.n_counters = HC_C_MAX, .c.v[HC_C_SAMPLES] = 1};
	struct hc_weights w = {.on_cpu_ns = 1, .samples = 1};
	size_t len;

	*n_ends = 0;
	for (int sec = 0; sec < 400; sec++) {
		/* Each append is whole or nothing: no part of a record in the buffer. */
#define APPEND(stmt)                                   \
	do {                                           \
		len = b->len;                          \
		stmt;                                  \
		if (b->err)                            \
			assert_int_equal(b->len, len); \
		else                                   \
			ends[(*n_ends)++] = b->len;    \
	} while (0)
		APPEND(hc_wire__frame(b, 1, &e));
		APPEND(hc_wire__add(b, sec, &w, fids, 3));
		APPEND(hc_wire__heat(b, sec, rows));
		APPEND(hc_wire__hist(b, sec, 0, 1, 5, 1, "app"));
		APPEND(hc_wire__counter(b, sec, 0, "mutex", 7));
		APPEND(hc_wire__status(b, &status));
		APPEND(hc_wire__seal(b, sec));
#undef APPEND
	}
}

static void test_alloc_wire(void **state)
{
	struct hc_wire_buf ref = {0};
	size_t ends[4000], n_ref;

	(void)state;
	wire_records(&ref, ends, &n_ref);
	assert_int_equal(ref.err, 0);
	for (SWEEP(n)) {
		struct hc_wire_buf b = {0};
		size_t n_ends;

		failalloc__arm(n);
		wire_records(&b, ends, &n_ends);
		failalloc__disarm();
		if (b.err) {
			/* The first failure sticks: what is there is whole records. */
			assert_int_equal(b.err, -ENOMEM);
			assert_true(b.len == 0 || b.len == ends[n_ends - 1]);
			assert_memory_equal(b.data, ref.data, b.len);
			assert_int_equal(hc_wire_buf__send(&b, -1, NULL), -ENOMEM);
		} else {
			assert_int_equal(b.len, ref.len);
		}
		hc_wire_buf__release(&b);
		if (!failalloc__fired()) {
			report("wire writer", n);
			break;
		}
	}
	/* The reader, fed in pieces: a failed feed leaves the reader as it was. */
	for (SWEEP(n)) {
		struct hc_wire_reader rd = {0};
		struct hc_wire_rec *rec = malloc(sizeof(*rec));
		size_t off = 0, records = 0;

		assert_non_null(rec);
		failalloc__arm(n);
		while (off < ref.len) {
			size_t piece = ref.len - off < 100000 ? ref.len - off : 100000;
			size_t len = rd.len, pos = rd.pos;
			int r = hc_wire_reader__feed(&rd, ref.data + off, piece);

			if (r) {
				assert_int_equal(r, -ENOMEM);
				assert_int_equal(rd.len - rd.pos, len - pos);
				continue; /* the same piece again */
			}
			off += piece;
			while ((r = hc_wire_reader__next(&rd, rec)) == 1)
				records++;
			assert_int_equal(r, 0);
		}
		failalloc__disarm();
		assert_int_equal(records, n_ref);
		hc_wire_reader__release(&rd);
		free(rec);
		if (!failalloc__fired()) {
			report("wire reader", n);
			break;
		}
	}
	hc_wire_buf__release(&ref);
}

/* ---- capture/: the pipeline and record's sink ---- */

#ifdef HC_ALLOC_AGGREGATE

#define PERIOD_NS 1001001ull
#define K_TRACE_CB 0xffffffff81001200ull
#define K_EXT4_SYNC_FS 0xffffffffc0a00800ull

__attribute__((noinline)) void hc_a_leaf(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void hc_a_mid(void)
{
	hc_a_leaf();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void hc_a_outer(void)
{
	hc_a_mid();
	__asm__ volatile("" ::: "memory");
}

#define AGG_EVENTS 60

/* Event i: samples of a few threads and stacks, every third an off-CPU flush. */
static size_t agg_event(size_t i, struct hc_offcpu_event *o, struct hc_sample_event *s)
{
	const uint64_t ustack[] = {(uintptr_t)hc_a_leaf, (uintptr_t)hc_a_mid + 5,
				   (uintptr_t)hc_a_outer + 5};
	const uint64_t kstack[] = {K_TRACE_CB, K_EXT4_SYNC_FS + 0x10};
	size_t nu = 1 + i % 3, nk = i % 2 ? 2 : 0;
	char comm[16];

	snprintf(comm, sizeof(comm), "worker-%zu", i % 4);
	if (i % 3 == 2) {
		memset(o, 0, sizeof(*o));
		o->type = HC_EVENT_OFFCPU;
		o->tgid = (uint32_t)getpid();
		o->tid = 5000 + (uint32_t)(i % 4);
		o->off_ns = 1000 * i;
		o->rq_ns = 10 * i;
		o->n_blocked = 1;
		memcpy(o->comm, comm, strlen(comm));
		memcpy(o->pcomm, "app", 3);
		memcpy(o->stacks, ustack + 3 - nu, nu * 8);
		memcpy(o->stacks + nu, kstack, nk * 8);
		o->ustack_len = (int32_t)(nu * 8);
		o->kstack_len = (int32_t)(nk * 8);
		return HC_OFFCPU_HDR_SIZE + (nu + nk) * 8;
	}
	memset(s, 0, sizeof(*s));
	s->type = HC_EVENT_SAMPLE;
	s->cpu = (uint32_t)(i % 2);
	s->kernel_ip = nk ? K_TRACE_CB : 0;
	s->tgid = (uint32_t)getpid();
	s->tid = 5000 + (uint32_t)(i % 4);
	s->prio = 120;
	s->runq_len = (uint32_t)(i % 3);
	memcpy(s->comm, comm, strlen(comm));
	memcpy(s->pcomm, "app", 3);
	memcpy(s->stacks, ustack + 3 - nu, nu * 8);
	memcpy(s->stacks + nu, kstack, nk * 8);
	s->ustack_len = (int32_t)(nu * 8);
	s->kstack_len = (int32_t)(nk * 8);
	return HC_SAMPLE_HDR_SIZE + (nu + nk) * 8;
}

/* A pipeline into record's sink: what record_worker makes. */
struct agg {
	struct hc_record_sink *rs;
	struct hc_capture *cap;
};

static void agg_free(struct agg *a)
{
	hc_capture__free(a->cap);
	hc_record_sink__free(a->rs);
	a->cap = NULL;
	a->rs = NULL;
}

/* 0, or -ENOMEM with nothing left made. */
static int agg_new(struct agg *a, struct hc_symbolizer *sym)
{
	const struct hc_capture_opts o = {.period_ns = PERIOD_NS};
	struct hc_capture_sink sink;

	a->cap = NULL;
	a->rs = hc_record_sink__new();
	if (!a->rs)
		return -ENOMEM;
	sink = hc_record_sink__sink(a->rs);
	a->cap = hc_capture__new(&o, sym, NULL, &sink);
	if (!a->cap) {
		agg_free(a);
		return -ENOMEM;
	}
	return 0;
}

static int agg_feed(struct agg *a, size_t i)
{
	static struct hc_sample_event s;
	static struct hc_offcpu_event o;
	size_t size = agg_event(i, &o, &s);

	return i % 3 == 2 ? hc_capture__offcpu(a->cap, &o, size)
			  : hc_capture__sample(a->cap, &s, size);
}

static char *agg_dump(struct agg *a)
{
	struct hc_tree *t = hc_tree__new();
	char *s;

	assert_non_null(t);
	assert_int_equal(hc_record_sink__trees(a->rs, a->cap, t, NULL), 0);
	hc_tree__sort(t);
	s = tree_dump(t);
	hc_tree__free(t);
	return s;
}

static void test_alloc_aggregate(void **state)
{
	struct hc_symbolizer_opts opts = {.kallsyms = HC_FIXTURES_DIR "/symbolize/kallsyms.txt"};
	struct hc_symbolizer *sym = hc_symbolizer__new(&opts);
	struct agg ref;
	char *want;

	(void)state;
	assert_non_null(sym);
	assert_int_equal(hc_symbolizer__load_kernel(sym), 0);
	/* The reference also reads this process's maps and ELF into the symbolizer: the sweeps
	 * fail the aggregator's allocations, not the first reading of /proc. */
	assert_int_equal(agg_new(&ref, sym), 0);
	for (size_t i = 0; i < AGG_EVENTS; i++)
		assert_int_equal(agg_feed(&ref, i), 0);
	want = agg_dump(&ref);
	for (SWEEP(n)) {
		struct agg agg;
		bool failed = false;

		failalloc__arm(n);
		if (agg_new(&agg, sym)) {
			assert_true(failalloc__fired());
			failalloc__disarm();
			continue;
		}
		for (size_t i = 0; i < AGG_EVENTS; i++) {
			int r = agg_feed(&agg, i);

			if (r) {
				assert_int_equal(r, -ENOMEM);
				failed = true;
				/* The event was lost, counted; once more, it must count once. */
				assert_int_equal(agg_feed(&agg, i), 0);
			}
		}
		failalloc__disarm();
		{
			struct hc_capture_stats st;
			char *got = agg_dump(&agg);

			hc_capture__stats(agg.cap, &st);
			assert_int_equal(st.ingest_errors, failed ? 1 : 0);
			assert_string_equal(got, want);
			free(got);
		}
		agg_free(&agg);
		if (!failalloc__fired()) {
			report("aggregate new+sample+offcpu", n);
			break;
		}
	}
	free(want);
	agg_free(&ref);
	hc_symbolizer__free(sym);
}
#endif

int main(int argc, char **argv)
{
	const struct CMUnitTest stacktab[] = {cmocka_unit_test(test_alloc_stacktab)};
	const struct CMUnitTest tree[] = {cmocka_unit_test(test_alloc_tree)};
	const struct CMUnitTest hist[] = {cmocka_unit_test(test_alloc_hist)};
	const struct CMUnitTest decode[] = {cmocka_unit_test(test_alloc_decode)};
	const struct CMUnitTest encode[] = {cmocka_unit_test(test_alloc_encode)};
	const struct CMUnitTest store[] = {cmocka_unit_test(test_alloc_store)};
	const struct CMUnitTest wire[] = {cmocka_unit_test(test_alloc_wire)};
#ifdef HC_ALLOC_AGGREGATE
	const struct CMUnitTest aggregate[] = {cmocka_unit_test(test_alloc_aggregate)};
#endif
	const char *group = argc > 1 ? argv[1] : "";

	failalloc__init();
	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(group, "stacktab"))
		return cmocka_run_group_tests_name("stacktab", stacktab, NULL, NULL);
	if (!strcmp(group, "tree"))
		return cmocka_run_group_tests_name("tree", tree, NULL, NULL);
	if (!strcmp(group, "hist"))
		return cmocka_run_group_tests_name("hist", hist, NULL, NULL);
	if (!strcmp(group, "decode"))
		return cmocka_run_group_tests_name("decode", decode, NULL, NULL);
	if (!strcmp(group, "encode"))
		return cmocka_run_group_tests_name("encode", encode, NULL, NULL);
	if (!strcmp(group, "store"))
		return cmocka_run_group_tests_name("store", store, NULL, NULL);
	if (!strcmp(group, "wire"))
		return cmocka_run_group_tests_name("wire", wire, NULL, NULL);
#ifdef HC_ALLOC_AGGREGATE
	if (!strcmp(group, "aggregate"))
		return cmocka_run_group_tests_name("aggregate", aggregate, NULL, NULL);
#endif
	/* An unknown group runs nothing: that must not pass. */
	fprintf(stderr, "test-alloc: unknown group '%s'\n", group);
	return 2;
}
