// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#define P 10000000 /* 100 Hz */

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)len + 1);
	if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* Runs an encoder into memory. */
static int folded_all(const struct hc_profile *p, FILE *out)
{
	return hc_profile__write_folded(p, HC_W_ALL, out);
}

static char *encode(const struct hc_profile *p, int (*fn)(const struct hc_profile *, FILE *),
		    int *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*err = fn(p, f);
	fclose(f);
	return buf;
}

/* The hand-built profile behind fixtures/profile/small.{json,folded}. */
static struct hc_profile *small_profile(void)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_tree *t;
	struct hc_cpu_samples *cpu;

	assert_non_null(p);
	t = p->tree;
	p->host = strdup("web-1");
	p->kernel = strdup("6.1.0-test");
	p->started_at_ns = 1795334462345678901LL; /* 2026-11-22T08:01:02.345678901Z */
	p->duration_ns = 2000000000;
	p->sampling.frequency_hz = 100;
	p->sampling.period_ns = P;
	p->sampling.cpus = 2;
	p->sampling.expected_samples = 400;
	p->sampling.samples = 21;
	p->sampling.idle_samples = 10;
	cpu = calloc(2, sizeof(*cpu));
	assert_non_null(cpu);
	cpu[0] = (struct hc_cpu_samples){ .cpu = 0, .expected = 200, .samples = 15,
					  .idle_ns = 40000000 };
	cpu[1] = (struct hc_cpu_samples){ .cpu = 1, .expected = 200, .samples = 6,
					  .idle_ns = 60000000 };
	p->sampling.per_cpu = cpu;
	p->sampling.n_per_cpu = 2;
	assert_int_equal(hc_profile__add_lost(p, "ringbuf_full", 3), 0);
	assert_int_equal(hc_profile__add_lost(p, "kstack_error", 1), 0);
	assert_int_equal(hc_profile__add_lost(p, "ustack_error", 2), 0);
	assert_int_equal(hc_profile__add_lost(p, "exec_lost", 0), 0);
	p->totals.on_cpu_ns = 110000000;
	p->totals.off_cpu_ns = 5000;
	p->totals.runqueue_ns = 700;
	p->totals.idle_ns = 100000000;
	p->totals.cpu_unclaimed_ns = 2000000;
	p->totals.kernel_samples = 12;
	p->totals.user_samples = 9;
	assert_int_equal(hc_profile__add_symbolize(p, "processes", 3), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "process_gone", 0), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "objects", 4), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "object_open_err", 0), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "elf_err", 0), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "no_symbols", 1), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "user_unresolved", 2), 0);
	assert_int_equal(hc_profile__add_symbolize(p, "kernel_unresolved", 0), 0);

	/* A */
	ADD_PATH(t, P, 3, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"));
	/* B: an unresolved frame, and some off-CPU/runqueue time */
	ADD_PATH(t, P, 2, 5000, 700, PROC("app", 100), THR("worker", 101),
		 USR("main", "/usr/bin/app"), UNK("/usr/lib/libfoo.so", 0x1a2b));
	/* C: kernel frames under a user frame, a ';' in a name */
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("worker", 101), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"), KRN("asm_sysvec_apic_timer_interrupt"),
		 KRN("x;y"));
	/* D: both stacks empty: self time on the thread */
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100));
	/* E, F: quotes and backslashes */
	ADD_PATH(t, P, 1, 0, 0, PROC("we\"ird\\comm", 200), THR("we\"ird\\comm", 200),
		 USR("do_\"quoted\"\\path", "/opt/w"));
	ADD_PATH(t, P, 1, 0, 0, PROC("we\"ird\\comm", 200), THR("we\"ird\\comm", 200),
		 KRN("entry_SYSCALL_64"), KRN("do_syscall_64"));
	/* G: a non-UTF-8 comm, an unresolved frame without module */
	ADD_PATH(t, P, 1, 0, 0, PROC("bad\xff\xfename", 300), THR("bad\xff\xfename", 300),
		 UNK(NULL, -1));
	/* H: another process of the same name: merged with A in folded output */
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 400), THR("app", 400), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"));
	return p;
}

static void test_json_golden(void **state)
{
	struct hc_profile *p = small_profile();
	json_t *golden, *doc;
	json_error_t jerr;
	char *expected, *actual, *direct;
	size_t len;
	int err;

	(void)state;
	golden = json_load_file(HC_FIXTURES_DIR "/small.json", 0, &jerr);
	if (!golden)
		fail_msg("small.json: %s at line %d", jerr.text, jerr.line);
	/* the golden is pretty-printed for review; compare in the encoder's compact form, which
	 * keeps key order (and so checks it) */
	expected = json_dumps(golden, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_non_null(expected);

	actual = encode(p, hc_profile__write_json, &err);
	assert_int_equal(err, 0);
	len = strlen(actual);
	assert_true(len > 0 && actual[len - 1] == '\n');
	actual[len - 1] = '\0';
	expect_golden_text(actual, expected, "small.json");

	/* to_json gives the same document, and the profile keeps its histograms reference */
	doc = hc_profile__to_json(p);
	assert_non_null(doc);
	direct = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(direct, expected);
	assert_ptr_equal(json_object_get(doc, "histograms"), p->histograms);
	assert_int_equal(p->histograms->refcount, 2);
	json_decref(doc);
	assert_int_equal(p->histograms->refcount, 1);

	/* the replacement characters really are in the output */
	assert_non_null(strstr(actual, "\"bad\xef\xbf\xbd\xef\xbf\xbdname\""));
	assert_non_null(strstr(actual, "\"we\\\"ird\\\\comm\""));

	free(direct);
	free(actual);
	free(expected);
	json_decref(golden);
	hc_profile__free(p);
}

static void test_folded_golden(void **state)
{
	struct hc_profile *p = small_profile();
	char *expected, *actual;
	int err;

	(void)state;
	expected = read_file(HC_FIXTURES_DIR "/small.folded");
	assert_non_null(expected);
	actual = encode(p, folded_all, &err);
	assert_int_equal(err, 0);
	expect_golden_text(actual, expected, "small.folded");
	/* sorting the tree first changes nothing */
	hc_tree__sort(p->tree);
	free(actual);
	actual = encode(p, folded_all, &err);
	assert_int_equal(err, 0);
	assert_string_equal(actual, expected);
	free(actual);
	free(expected);
	hc_profile__free(p);
}

static void test_folded_names(void **state)
{
	struct hc_profile *p = hc_profile__new();
	char *actual;
	int err;

	(void)state;
	assert_non_null(p);
	ADD_PATH(p->tree, 1, 5, 0, 0, PROC("a\nb\rc;d", 1), THR("t", 1), KRN("k\nk"));
	ADD_PATH(p->tree, 1, 2, 0, 0, PROC("p", 2), THR("p", 2), UNK("/lib/x;y.so", 0),
		 UNK("/lib/z.so", -1));
	ADD_PATH(p->tree, 1, 1, 0, 0, KRN("orphan"));
	/* the root's own time has no path to print */
	assert_int_equal(hc_tree__add_path(p->tree, NULL, 0,
					   &(struct hc_weights){ .on_cpu_ns = 9, .samples = 1 }),
			 0);
	actual = encode(p, folded_all, &err);
	assert_int_equal(err, 0);
	assert_string_equal(actual, "a_b_c_d;k_k_[k] 5\n"
				    "orphan_[k] 1\n"
				    "p;[unknown /lib/x_y.so+0x0];[unknown] 2\n");
	free(actual);
	hc_profile__free(p);
}

/* A string's JSON form after sanitizing, via the process name. */
static char *json_name_of(const char *name)
{
	struct hc_profile *p = hc_profile__new();
	json_t *doc, *proc;
	char *out;

	assert_non_null(p);
	ADD_PATH(p->tree, 1, 1, 0, 0, PROC(name, 1));
	doc = hc_profile__to_json(p);
	assert_non_null(doc);
	proc = json_array_get(json_object_get(json_object_get(doc, "flamegraph"), "children"), 0);
	out = strdup(json_string_value(json_object_get(proc, "name")));
	json_decref(doc);
	hc_profile__free(p);
	return out;
}

#define FFFD "\xef\xbf\xbd"

static void test_json_utf8(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "plain" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", /* valid 2, 3, 4 byte forms */
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
		{ "\xc0\xaf", FFFD FFFD },                   /* overlong '/' */
		{ "\xe0\x80\xaf", FFFD FFFD FFFD },          /* overlong, 3 bytes */
		{ "\xed\xa0\x80", FFFD FFFD FFFD },          /* surrogate */
		{ "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD }, /* > U+10FFFF */
		{ "a\xe2\x82", "a" FFFD FFFD },              /* truncated at the end */
		{ "\xe2\x82" "b", FFFD FFFD "b" },           /* truncated in the middle */
		{ "\x80x\xbf", FFFD "x" FFFD },              /* lone continuations */
		{ "\xf5\xff", FFFD FFFD },
		{ "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf" },  /* U+10FFFF itself is fine */
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = json_name_of(cases[i].in);

		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

static void test_json_numbers(void **state)
{
	struct hc_profile *p = hc_profile__new();
	json_t *doc, *s, *lost;

	(void)state;
	assert_non_null(p);
	p->sampling.frequency_hz = 99.5;
	p->started_at_ns = -1; /* one ns before the epoch */
	assert_int_equal(hc_profile__add_lost(p, "ringbuf_full", 2), 0);
	assert_int_equal(hc_profile__add_lost(p, "ringbuf_full", 3), 0); /* summed */
	assert_int_equal(hc_profile__add_lost(p, "bad\xff", 1), 0);
	json_decref(p->histograms);
	p->histograms = json_pack("{s:i}", "x", 1);
	doc = hc_profile__to_json(p);
	assert_non_null(doc);
	s = json_object_get(doc, "sampling");
	assert_true(json_is_real(json_object_get(s, "frequency_hz")));
	assert_true(json_real_value(json_object_get(s, "frequency_hz")) == 99.5);
	assert_string_equal(json_string_value(json_object_get(doc, "started_at")),
			    "1969-12-31T23:59:59.999Z");
	assert_true(json_is_null(json_object_get(doc, "host")));
	lost = json_object_get(s, "lost");
	assert_int_equal(json_object_size(lost), 2);
	assert_int_equal(json_integer_value(json_object_get(lost, "ringbuf_full")), 5);
	assert_int_equal(json_integer_value(json_object_get(lost, "bad" FFFD)), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "histograms"),
							    "x")),
			 1);
	/* an empty tree is a root with no children */
	assert_int_equal(json_array_size(json_object_get(json_object_get(doc, "flamegraph"),
							 "children")),
			 0);
	json_decref(doc);
	hc_profile__free(p);
	hc_profile__free(NULL);
	assert_string_equal(hc_node_kind__name(HC_NODE_THREAD), "thread");
	assert_string_equal(hc_node_kind__name(HC_NODE_KERNEL), "kernel");
}

/* Checks every node: value == on + off + runqueue, children sum <= value, sorted, and the
 * keys each kind must (not) have. Returns the node count. */
static size_t check_node(const json_t *n)
{
	const char *kind = json_string_value(json_object_get(n, "kind"));
	const json_t *children = json_object_get(n, "children");
	json_int_t value = json_integer_value(json_object_get(n, "value"));
	json_int_t sum = 0, prev = -1;
	size_t count = 1, i;
	const json_t *c;

	assert_non_null(kind);
	assert_true(json_is_array(children));
	assert_int_equal(value, json_integer_value(json_object_get(n, "on_cpu_ns")) +
					json_integer_value(json_object_get(n, "off_cpu_ns")) +
					json_integer_value(json_object_get(n, "runqueue_ns")));
	assert_true(json_is_integer(json_object_get(n, "samples")));
	assert_int_equal(json_object_get(n, "pid") != NULL, strcmp(kind, "process") == 0);
	assert_int_equal(json_object_get(n, "tid") != NULL, strcmp(kind, "thread") == 0);
	json_array_foreach(children, i, c) {
		json_int_t v = json_integer_value(json_object_get(c, "value"));

		if (prev >= 0)
			assert_true(v <= prev);
		prev = v;
		sum += v;
		count += check_node(c);
	}
	assert_true(sum <= value);
	return count;
}

static uint64_t rng_state = 42;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void test_json_random_tree(void **state)
{
	static const char *const names[] = { "a", "b", "c", "d", "e" };
	static const char *const modules[] = { "/bin/x", "/lib/y.so", NULL };
	struct hc_profile *p = hc_profile__new();
	json_t *doc, *root;
	char comm[16];

	(void)state;
	assert_non_null(p);
	for (int i = 0; i < 3000; i++) {
		struct hc_path_elem path[2 + 12];
		struct hc_weights w = {
			.on_cpu_ns = rng() % 4 * P,
			.off_cpu_ns = rng() % 100000,
			.runqueue_ns = rng() % 1000,
		};
		size_t n = 2 + rng() % 12;
		uint64_t pid = 1 + rng() % 20;

		w.samples = w.on_cpu_ns / P;
		snprintf(comm, sizeof(comm), "p%d", (int)(pid % 7));
		path[0] = (struct hc_path_elem)PROC(comm, pid);
		path[1] = (struct hc_path_elem)THR(comm, pid * 100 + rng() % 3);
		for (size_t d = 2; d < n; d++) {
			bool kernel = d > 6 && rng() % 2;

			path[d] = kernel ? (struct hc_path_elem)KRN(names[rng() % 5])
					 : (struct hc_path_elem)USR(names[rng() % 5],
								    modules[rng() % 3]);
		}
		assert_int_equal(hc_tree__add_path(p->tree, path, n, &w), 0);
	}
	doc = hc_profile__to_json(p);
	assert_non_null(doc);
	root = json_object_get(doc, "flamegraph");
	assert_string_equal(json_string_value(json_object_get(root, "kind")), "root");
	assert_int_equal(check_node(root), hc_tree__node_count(p->tree));
	assert_int_equal(json_integer_value(json_object_get(root, "value")),
			 hc_weights__value(hc_node__weights(hc_tree__root(p->tree))));
	/* The streaming writer emits exactly the bytes of the whole-document encoder. */
	{
		char *direct = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER), *streamed;
		size_t len;
		int err;

		streamed = encode(p, hc_profile__write_json, &err);
		assert_int_equal(err, 0);
		len = strlen(streamed);
		assert_true(len > 0 && streamed[len - 1] == '\n');
		streamed[len - 1] = '\0';
		assert_string_equal(streamed, direct);
		free(direct);
		free(streamed);
	}
	json_decref(doc);
	hc_profile__free(p);
}

static void test_too_deep(void **state)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_path_elem path[1100];
	const struct hc_weights w = { .on_cpu_ns = 1, .samples = 1 };
	char *out;
	int err;

	(void)state;
	assert_non_null(p);
	for (size_t i = 0; i < ARRAY_SIZE(path); i++)
		path[i] = (struct hc_path_elem)USR("f", NULL);
	assert_int_equal(hc_tree__add_path(p->tree, path, ARRAY_SIZE(path), &w), 0);
	errno = 0;
	assert_null(hc_profile__to_json(p));
	assert_int_equal(errno, EOVERFLOW);
	out = encode(p, hc_profile__write_json, &err);
	assert_int_equal(err, -EOVERFLOW);
	free(out);
	out = encode(p, folded_all, &err);
	assert_int_equal(err, -EOVERFLOW);
	free(out);
	hc_profile__free(p);
}

int run_encode_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_golden),
		cmocka_unit_test(test_folded_golden),
		cmocka_unit_test(test_folded_names),
		cmocka_unit_test(test_json_utf8),
		cmocka_unit_test(test_json_numbers),
		cmocka_unit_test(test_json_random_tree),
		cmocka_unit_test(test_too_deep),
	};

	return cmocka_run_group_tests_name("encode", tests, NULL, NULL);
}
