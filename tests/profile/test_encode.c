// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/store.h"
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
	cpu[0] = (struct hc_cpu_samples){
		.cpu = 0, .expected = 200, .samples = 15, .idle_ns = 40000000};
	cpu[1] = (struct hc_cpu_samples){
		.cpu = 1, .expected = 200, .samples = 6, .idle_ns = 60000000};
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
	/* no frame above a node's own time: a line named after the node, as pprof's stand-in
	 * frame is: the root's ("all"), a thread's hung right under the root */
	assert_int_equal(hc_tree__add_path(p->tree, NULL, 0,
					   &(struct hc_weights){.on_cpu_ns = 9, .samples = 1}),
			 0);
	ADD_PATH(p->tree, 1, 3, 0, 0, THR("lone;t", 7));
	actual = encode(p, folded_all, &err);
	assert_int_equal(err, 0);
	assert_string_equal(actual, "a_b_c_d;k_k_[k] 5\n"
				    "all 9\n"
				    "lone_t 3\n"
				    "orphan_[k] 1\n"
				    "p;[unknown /lib/x_y.so+0x0];[unknown] 2\n");
	free(actual);
	hc_profile__free(p);
}

/* Sum of the values of folded output (last field of each line); *lines gets the line count. */
static uint64_t folded_sum(const char *text, size_t column_from_end, size_t *lines)
{
	uint64_t sum = 0;

	*lines = 0;
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n'), *sp = nl;
		char *end;

		assert_non_null(nl);
		for (size_t c = 0; c <= column_from_end; c++) {
			while (sp > l && sp[-1] != ' ')
				sp--;
			assert_true(sp > l);
			if (c < column_from_end)
				sp--;
		}
		errno = 0;
		sum += strtoull(sp, &end, 10);
		assert_int_equal(errno, 0);
		assert_true(*end == ' ' || *end == '\n');
		(*lines)++;
		l = nl + 1;
	}
	return sum;
}

/*
 * What serve's /api/profile folds: a store tree pruned so hard that whole processes fold into
 * the root's own time. Folded (and the diff of it) still adds up to the root exactly, for
 * every selection of weights.
 */
static void test_folded_pruned_totals(void **state)
{
	static const unsigned int masks[] = {HC_W_ALL, HC_W_ON, HC_W_OFF, HC_W_RUNQ,
					     HC_W_ON | HC_W_OFF};
	const struct hc_store_opts o = {.retention_s = 600, .period_ns = P};
	struct hc_store_filter f = {.from_s = 1000,
				    .to_s = 1002,
				    .on = true,
				    .off = true,
				    .runqueue = true,
				    .max_nodes = 4};
	struct hc_path_elem frames[] = {
		PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		PROC("db", 200),  THR("db", 201),  KRN("io_schedule"),
		PROC("sh", 300),  THR("sh", 300),
	};
	const uint32_t a[] = {1, 2, 3}, b[] = {4, 5, 6}, c[] = {7, 8};
	const struct hc_weights on = {.on_cpu_ns = 3 * P, .samples = 3},
				off = {.off_cpu_ns = 7777, .runqueue_ns = 55},
				both = {.on_cpu_ns = P, .samples = 1, .runqueue_ns = 9};
	struct hc_store *st = hc_store__new(&o);
	struct hc_store_pruned pruned = {0};
	struct hc_profile *p = hc_profile__new(), *base = hc_profile__new();
	const struct hc_node *root;

	(void)state;
	assert_non_null(st);
	assert_non_null(p);
	assert_non_null(base);
	for (uint32_t i = 0; i < ARRAY_SIZE(frames); i++)
		assert_int_equal(hc_store__define_frame(st, i + 1, &frames[i]), 0);
	for (int64_t sec = 1000; sec < 1002; sec++) {
		assert_int_equal(hc_store__add(st, sec, a, ARRAY_SIZE(a), &on), 0);
		assert_int_equal(hc_store__add(st, sec, b, ARRAY_SIZE(b), &off), 0);
		assert_int_equal(hc_store__add(st, sec, c, ARRAY_SIZE(c), &both), 0);
		assert_int_equal(hc_store__seal(st, sec), 0);
	}
	assert_int_equal(hc_store__tree(st, &f, p->tree, &pruned), 0);
	root = hc_tree__root(p->tree);
	/* the premise: the root holds pruned processes as its own time */
	assert_true(hc_node__child_count(root) < 3);
	{
		uint64_t kids = 0;

		for (size_t i = 0; i < hc_node__child_count(root); i++)
			kids += hc_weights__value(hc_node__weights(hc_node__child(root, i)));
		assert_true(hc_weights__value(hc_node__weights(root)) > kids);
	}
	/* the base of the diff: a smaller capture with its own root time */
	ADD_PATH(base->tree, P, 1, 100, 0, PROC("app", 1), THR("app", 1),
		 USR("main", "/usr/bin/app"));
	assert_int_equal(
		hc_tree__add_path(base->tree, NULL, 0,
				  &(struct hc_weights){.off_cpu_ns = 40, .runqueue_ns = 2}),
		0);

	for (size_t m = 0; m < ARRAY_SIZE(masks); m++) {
		uint64_t want = hc_weights__select(hc_node__weights(root), masks[m]);
		uint64_t want_base =
			hc_weights__select(hc_node__weights(hc_tree__root(base->tree)), masks[m]);
		char *out = NULL;
		size_t len = 0, lines;
		FILE *mf = open_memstream(&out, &len);

		assert_non_null(mf);
		assert_int_equal(hc_profile__write_folded(p, masks[m], mf), 0);
		fclose(mf);
		assert_int_equal(folded_sum(out, 0, &lines), want);
		assert_non_null(strstr(out, "all "));
		free(out);

		out = NULL;
		mf = open_memstream(&out, &len);
		assert_non_null(mf);
		assert_int_equal(hc_profile__write_diff_folded(base, p, masks[m], false, mf), 0);
		fclose(mf);
		assert_int_equal(folded_sum(out, 0, &lines), want);
		assert_int_equal(folded_sum(out, 1, &lines), want_base);
		free(out);
	}
	hc_profile__free(base);
	hc_profile__free(p);
	hc_store__free(st);
}

/* Weights beyond a double's 53 bits, and beyond INT64_MAX: folded and its diff print them
 * exactly; a normalized diff scales without wrapping. */
static void test_folded_big_values(void **state)
{
	struct hc_profile *a = hc_profile__new(), *b = hc_profile__new();
	const uint64_t big = (1ULL << 63) + 12345, odd = (1ULL << 53) + 1;
	char *out;
	int err;

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	ADD_PATH(a->tree, 1, 0, big, 0, PROC("p", 1), USR("f", NULL));
	ADD_PATH(a->tree, 1, 0, odd, 0, PROC("p", 1), USR("g", NULL));
	ADD_PATH(b->tree, 1, 0, odd, 0, PROC("p", 1), USR("f", NULL));
	out = encode(a, folded_all, &err);
	assert_int_equal(err, 0);
	assert_string_equal(out, "p;f 9223372036854788153\np;g 9007199254740993\n");
	free(out);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_non_null(f);
		assert_int_equal(hc_profile__write_diff_folded(a, b, HC_W_ALL, false, f), 0);
		fclose(f);
		assert_string_equal(buf, "p;f 9223372036854788153 9007199254740993\n"
					 "p;g 9007199254740993 0\n");
		free(buf);
		buf = NULL;
		f = open_memstream(&buf, &len);
		assert_non_null(f);
		/* base scaled to new's total (in doubles: to within rounding) */
		assert_int_equal(hc_profile__write_diff_folded(a, b, HC_W_ALL, true, f), 0);
		fclose(f);
		{
			size_t lines;
			uint64_t sum = folded_sum(buf, 1, &lines);

			assert_int_equal(lines, 2);
			assert_true(sum >= odd - 2 && sum <= odd + 2);
			/* g: odd / (big + odd) of new's total, about 2^43 */
			assert_non_null(strstr(buf, "\np;g 87"));
		}
		free(buf);
	}
	hc_profile__free(a);
	hc_profile__free(b);

	/* Two processes of one name whose lines add up beyond a u64 (the root itself wrapped:
	 * no real tree does this): -EOVERFLOW, and nothing written */
	a = hc_profile__new();
	assert_non_null(a);
	ADD_PATH(a->tree, 1, 0, 1ULL << 63, 0, PROC("p", 1));
	ADD_PATH(a->tree, 1, 0, 1ULL << 63, 0, PROC("p", 2));
	out = encode(a, folded_all, &err);
	assert_int_equal(err, -EOVERFLOW);
	assert_string_equal(out, "");
	free(out);
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_non_null(f);
		assert_int_equal(hc_profile__write_diff_folded(a, a, HC_W_ALL, false, f),
				 -EOVERFLOW);
		fclose(f);
		assert_string_equal(buf, "");
		free(buf);
	}
	hc_profile__free(a);
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
		{"plain", "plain"},
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", /* valid 2, 3, 4 byte forms */
		 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
		{"\xc0\xaf", FFFD FFFD},		   /* overlong '/' */
		{"\xe0\x80\xaf", FFFD FFFD FFFD},	   /* overlong, 3 bytes */
		{"\xed\xa0\x80", FFFD FFFD FFFD},	   /* surrogate */
		{"\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD}, /* > U+10FFFF */
		{"a\xe2\x82", "a" FFFD FFFD},		   /* truncated at the end */
		{"\xe2\x82"
		 "b",
		 FFFD FFFD "b"},	      /* truncated in the middle */
		{"\x80x\xbf", FFFD "x" FFFD}, /* lone continuations */
		{"\xf5\xff", FFFD FFFD},
		{"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"}, /* U+10FFFF itself is fine */
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
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(doc, "histograms"), "x")), 1);
	/* an empty tree is a root with no children */
	assert_int_equal(
		json_array_size(json_object_get(json_object_get(doc, "flamegraph"), "children")),
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
	json_array_foreach (children, i, c) {
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
	/* plain names (written directly) and names that need escaping or repair (through
	 * jansson): quote, backslash, a control character, UTF-8, invalid UTF-8 */
	static const char *const names[] = {"a",	 "say \"hi\"",	      "c:\\x",
					    "tab\there", "\xc3\xa9t\xc3\xa9", "bad\xff\xfe"};
	static const char *const modules[] = {"/bin/x", "/lib/y.so", NULL};
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

			path[d] = kernel ? (struct hc_path_elem)KRN(names[rng() % 6])
					 : (struct hc_path_elem)USR(names[rng() % 6],
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
	/* An object with a tree streamed in (serve's /api/locks): its members, then the tree as
	 * hc_tree__to_json gives it; an empty object too. */
	for (int empty = 0; empty < 2; empty++) {
		json_t *obj =
			empty ? json_object() : json_pack("{s:i, s:[s]}", "events", 3, "k", "x");
		json_t *want = json_deep_copy(obj), *back;
		char *text = NULL;
		size_t len = 0;
		FILE *mem = open_memstream(&text, &len);

		assert_non_null(mem);
		assert_int_equal(json_object_set_new(want, "flamegraph", hc_tree__to_json(p->tree)),
				 0);
		assert_int_equal(hc_json__write_with_tree(obj, "flamegraph", p->tree, mem), 0);
		assert_int_equal(fclose(mem), 0);
		assert_true(len > 0 && text[len - 1] == '\n');
		back = json_loadb(text, len, 0, NULL);
		assert_non_null(back);
		assert_true(json_equal(back, want));
		json_decref(back);
		json_decref(want);
		json_decref(obj);
		free(text);
	}
	assert_int_equal(hc_json__write_with_tree(NULL, "x", p->tree, stdout), -EINVAL);
	json_decref(doc);
	hc_profile__free(p);
}

static void test_too_deep(void **state)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_path_elem path[1100];
	const struct hc_weights w = {.on_cpu_ns = 1, .samples = 1};
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

/* Inline frames in every export: JSON (and back), folded, the diff, speedscope. */
static struct hc_profile *inline_profile(void)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_tree *t;

	assert_non_null(p);
	t = p->tree;
	p->sampling.period_ns = P;
	/* square and mul inlined into compute; a kernel frame below inlined code */
	ADD_PATH(t, P, 3, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"), INL("square", "/usr/bin/app"),
		 INL("mul", "/usr/bin/app"));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"), INL("square", "/usr/bin/app"), KRN("page_fault"));
	/* the out-of-line square, called from main */
	ADD_PATH(t, P, 2, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("square", "/usr/bin/app"));
	return p;
}

static int speedscope_all(const struct hc_profile *p, FILE *out)
{
	return hc_profile__write_speedscope(p, HC_W_ALL, out);
}

static int json_out(const struct hc_profile *p, FILE *out)
{
	return hc_profile__write_json(p, out);
}

static void test_inline_exports(void **state)
{
	struct hc_profile *p = inline_profile(), *back;
	char *text, *again, *s, why[256];
	json_t *doc, *frames;
	json_error_t jerr;
	size_t n_inl = 0, i;
	int err;

	(void)state;
	/* JSON: "inlined": true on the inlined frames only, right after the frame's fields */
	text = encode(p, json_out, &err);
	assert_int_equal(err, 0);
	for (s = text; (s = strstr(s, "\"inlined\"")); s++)
		n_inl++;
	assert_int_equal(n_inl, 2);
	assert_non_null(strstr(text, "{\"name\":\"square\",\"kind\":\"user\","
				     "\"module\":\"/usr/bin/app\",\"inlined\":true,\"value\""));
	assert_non_null(strstr(text, "{\"name\":\"square\",\"kind\":\"user\","
				     "\"module\":\"/usr/bin/app\",\"value\""));
	assert_null(strstr(text, "\"inlined\":false"));
	/* and back: the same document, the same two square nodes */
	doc = json_loads(text, 0, &jerr);
	assert_non_null(doc);
	assert_int_equal(hc_profile__from_json(doc, &back, why, sizeof(why)), 0);
	json_decref(doc);
	again = encode(back, json_out, &err);
	assert_int_equal(err, 0);
	assert_string_equal(again, text);
	free(again);
	free(text);

	/* folded: flamegraph.pl's _[i] */
	text = encode(back, folded_all, &err);
	assert_int_equal(err, 0);
	assert_string_equal(text, "app;main;compute 10000000\n"
				  "app;main;compute;square_[i];mul_[i] 30000000\n"
				  "app;main;compute;square_[i];page_fault_[k] 10000000\n"
				  "app;main;square 20000000\n");
	free(text);

	/* the diff follows folded */
	{
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_non_null(f);
		assert_int_equal(hc_profile__write_diff_folded(p, back, HC_W_ALL, false, f), 0);
		fclose(f);
		assert_non_null(
			strstr(buf, "app;main;compute;square_[i];mul_[i] 30000000 30000000\n"));
		free(buf);
	}

	/* speedscope: "NAME (inlined)", a frame apart from the real square */
	text = encode(p, speedscope_all, &err);
	assert_int_equal(err, 0);
	doc = json_loads(text, 0, &jerr);
	assert_non_null(doc);
	frames = json_object_get(json_object_get(doc, "shared"), "frames");
	n_inl = 0;
	for (i = 0; i < json_array_size(frames); i++) {
		const char *name =
			json_string_value(json_object_get(json_array_get(frames, i), "name"));

		n_inl += !strcmp(name, "square (inlined)") || !strcmp(name, "mul (inlined)") ||
					 !strcmp(name, "square")
				 ? 1
				 : 0;
	}
	assert_int_equal(n_inl, 3);
	json_decref(doc);
	free(text);
	hc_profile__free(back);
	hc_profile__free(p);
}

int run_encode_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_golden),
		cmocka_unit_test(test_folded_golden),
		cmocka_unit_test(test_folded_names),
		cmocka_unit_test(test_folded_pruned_totals),
		cmocka_unit_test(test_folded_big_values),
		cmocka_unit_test(test_json_utf8),
		cmocka_unit_test(test_json_numbers),
		cmocka_unit_test(test_json_random_tree),
		cmocka_unit_test(test_too_deep),
		cmocka_unit_test(test_inline_exports),
	};

	return cmocka_run_group_tests_name("encode", tests, NULL, NULL);
}
