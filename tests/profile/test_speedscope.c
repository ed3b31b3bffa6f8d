// SPDX-License-Identifier: GPL-2.0-only
/*
 * speedscope export: the output is parsed back with jansson and checked against the schema's
 * shape (https://www.speedscope.app/file-format-schema.json), against stacks written out by
 * hand for a small tree, and against the folded encoder for a random tree (the same paths and
 * self times, whatever the weight selection).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#define P 10000000 /* 100 Hz */
#define SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define WAKER(n, tid, pid)                                    \
	{                                                     \
		HC_NODE_WAKER, (n), NULL, (tid), (pid), false \
	}
#define KMOD(n, m)                                     \
	{                                              \
		HC_NODE_KERNEL, (n), (m), 0, -1, false \
	}

static char *encode_ss(const struct hc_profile *p, unsigned int weights, int *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*err = hc_profile__write_speedscope(p, weights, f);
	fclose(f);
	return buf;
}

static json_int_t int_member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

/*
 * Parses and checks the whole file against the schema and our own rules: frames {name, file?}
 * unique and all used, profiles "sampled" in ns from 0 to the sum of their (positive) weights,
 * heaviest first, stacks of valid frame indices. Returns the document; *total gets the sum.
 */
static json_t *parse_checked(const char *text, uint64_t *total)
{
	const json_t *frames, *profiles, *f, *prof;
	json_error_t jerr;
	json_int_t prev_end = -1;
	size_t i, j, n_frames;
	char *used;
	json_t *doc;

	doc = json_loads(text, 0, &jerr);
	if (!doc)
		fail_msg("speedscope output does not parse: %s at %d:%d", jerr.text, jerr.line,
			 jerr.column);
	assert_string_equal(json_string_value(json_object_get(doc, "$schema")), SCHEMA);
	assert_string_equal(json_string_value(json_object_get(doc, "exporter")), "hotcold");
	assert_true(json_is_string(json_object_get(doc, "name")));
	assert_int_equal(int_member(doc, "activeProfileIndex"), 0);

	frames = json_object_get(json_object_get(doc, "shared"), "frames");
	assert_true(json_is_array(frames));
	n_frames = json_array_size(frames);
	used = calloc(n_frames + 1, 1);
	assert_non_null(used);
	json_array_foreach (frames, i, f) {
		const json_t *file = json_object_get(f, "file");

		assert_true(json_is_string(json_object_get(f, "name")));
		assert_true(!file || json_is_string(file));
		assert_true(json_object_size(f) == (file ? 2u : 1u));
		for (j = 0; j < i; j++) {
			const json_t *g = json_array_get(frames, j);
			const json_t *gfile = json_object_get(g, "file");

			if (json_equal(json_object_get(f, "name"), json_object_get(g, "name")) &&
			    (file ? gfile && json_equal(file, gfile) : !gfile))
				fail_msg("frame %zu repeats frame %zu", i, j);
		}
	}

	profiles = json_object_get(doc, "profiles");
	assert_true(json_is_array(profiles));
	assert_true(json_array_size(profiles) >= 1);
	*total = 0;
	json_array_foreach (profiles, i, prof) {
		const json_t *samples = json_object_get(prof, "samples");
		const json_t *weights = json_object_get(prof, "weights"), *stack, *wv;
		json_int_t sum = 0;

		assert_string_equal(json_string_value(json_object_get(prof, "type")), "sampled");
		assert_string_equal(json_string_value(json_object_get(prof, "unit")),
				    "nanoseconds");
		assert_true(json_is_string(json_object_get(prof, "name")));
		assert_int_equal(int_member(prof, "startValue"), 0);
		assert_true(json_is_array(samples));
		assert_true(json_is_array(weights));
		assert_int_equal(json_array_size(samples), json_array_size(weights));
		json_array_foreach (weights, j, wv) {
			assert_true(json_is_integer(wv));
			assert_true(json_integer_value(wv) > 0);
			sum += json_integer_value(wv);
		}
		json_array_foreach (samples, j, stack) {
			const json_t *idx;
			size_t k;

			assert_true(json_is_array(stack));
			json_array_foreach (stack, k, idx) {
				assert_true(json_is_integer(idx));
				assert_true(json_integer_value(idx) >= 0 &&
					    (size_t)json_integer_value(idx) < n_frames);
				used[json_integer_value(idx)] = 1;
			}
		}
		assert_int_equal(int_member(prof, "endValue"), sum);
		if (prev_end >= 0)
			assert_true(sum <= prev_end);
		prev_end = sum;
		*total += (uint64_t)sum;
	}
	for (i = 0; i < n_frames; i++) {
		if (!used[i])
			fail_msg("frame %zu is in no sample", i);
	}
	free(used);
	return doc;
}

/* The frame as text: `name` or `name@file`. */
static void frame_text(const json_t *doc, json_int_t idx, char *buf, size_t len)
{
	const json_t *f = json_array_get(json_object_get(json_object_get(doc, "shared"), "frames"),
					 (size_t)idx);
	const char *file = json_string_value(json_object_get(f, "file"));

	snprintf(buf, len, "%s%s%s", json_string_value(json_object_get(f, "name")), file ? "@" : "",
		 file ? file : "");
}

/* Every profile as `NAME\n` and one `  STACK WEIGHT\n` per sample, in file order. */
static char *render(const json_t *doc)
{
	const json_t *prof;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&buf, &len);

	assert_non_null(out);
	json_array_foreach (json_object_get(doc, "profiles"), i, prof) {
		const json_t *samples = json_object_get(prof, "samples"), *stack;
		size_t j;

		fprintf(out, "%s\n", json_string_value(json_object_get(prof, "name")));
		json_array_foreach (samples, j, stack) {
			const json_t *idx;
			char frame[512];
			size_t k;

			fputs(" ", out);
			json_array_foreach (stack, k, idx) {
				frame_text(doc, json_integer_value(idx), frame, sizeof(frame));
				fprintf(out, "%s%s", k ? ";" : " ", frame);
			}
			fprintf(out, " %lld\n",
				(long long)json_integer_value(
					json_array_get(json_object_get(prof, "weights"), j)));
		}
	}
	fclose(out);
	return buf;
}

/* Processes, threads, user, unresolved, kernel (vmlinux and module) and waker frames, the
 * root's, a process's and a thread's own time, frames right under a process, odd names. */
static struct hc_profile *hand_profile(void)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_tree *t;

	assert_non_null(p);
	t = p->tree;
	p->host = strdup("web-1");
	ADD_PATH(t, P, 3, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"));
	ADD_PATH(t, P, 2, 5000, 700, PROC("app", 100), THR("worker", 101),
		 USR("main", "/usr/bin/app"), UNK("/usr/lib/libfoo.so", 0x1a2b));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("worker", 101), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"), KRN("asm_sysvec_apic_timer_interrupt"),
		 KMOD("xfs_foo", "xfs"));
	ADD_PATH(t, P, 0, 9000, 0, PROC("app", 100), THR("worker", 101),
		 USR("main", "/usr/bin/app"), KRN("schedule"), WAKER("kworker/0:1", 55, 2),
		 KRN("try_to_wake_up"));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100));
	ADD_PATH(t, P, 0, 300, 0, PROC("app", 100), THR("app", 100), WAKER("[interrupt]", 0, 0));
	ADD_PATH(t, P, 1, 0, 0, PROC("p2", 200));
	ADD_PATH(t, P, 1, 0, 0, PROC("p2", 200), USR("lonely", NULL));
	ADD_PATH(t, P, 1, 0, 0, PROC("q\"x\xff", 300), THR("q\"x\xff", 300),
		 USR("we\"ird\\\xff", NULL));
	ADD_PATH(t, P, 1, 0, 0, PROC("q\"x\xff", 300), THR("q\"x\xff", 300), UNK(NULL, -1));
	/* a zero-weight leaf: no sample, no frame */
	ADD_PATH(t, P, 0, 0, 0, PROC("q\"x\xff", 300), THR("q\"x\xff", 300), USR("idle", NULL));
	assert_int_equal(hc_tree__add_path(t, NULL, 0, &(struct hc_weights){.off_cpu_ns = 77}), 0);
	return p;
}

#define FFFD "\xef\xbf\xbd"
#define APP "app (pid 100) / app (tid 100)\n"
#define WORKER "app (pid 100) / worker (tid 101)\n"
#define Q "q\"x" FFFD " (pid 300) / q\"x" FFFD " (tid 300)\n"
#define MAIN "main@/usr/bin/app"
#define LIBFOO "[unknown /usr/lib/libfoo.so+0x1a2b]@/usr/lib/libfoo.so"
#define KK "@[kernel.kallsyms]"

static void test_hand_stacks(void **state)
{
	static const struct {
		unsigned int weights;
		const char *expected;
	} cases[] = {
		{HC_W_ALL,
		 APP "  10000000\n"
		     "  " MAIN ";compute@/usr/bin/app 30000000\n"
		     "  --;[interrupt] 300\n" WORKER "  " MAIN ";" LIBFOO " 20005700\n"
		     "  " MAIN ";compute@/usr/bin/app;asm_sysvec_apic_timer_interrupt" KK
		     ";xfs_foo@xfs 10000000\n"
		     "  " MAIN ";schedule" KK ";--;kworker/0:1;try_to_wake_up" KK " 9000\n"
		     "p2 (pid 200)\n"
		     "  10000000\n"
		     "  lonely 10000000\n" Q "  [unknown] 10000000\n"
		     "  we\"ird\\" FFFD " 10000000\n"
		     "[no process]\n"
		     "  77\n"},
		{HC_W_ON, APP "  10000000\n"
			      "  " MAIN ";compute@/usr/bin/app 30000000\n" WORKER "  " MAIN
			      ";" LIBFOO " 20000000\n"
			      "  " MAIN ";compute@/usr/bin/app;asm_sysvec_apic_timer_interrupt" KK
			      ";xfs_foo@xfs 10000000\n"
			      "p2 (pid 200)\n"
			      "  10000000\n"
			      "  lonely 10000000\n" Q "  [unknown] 10000000\n"
			      "  we\"ird\\" FFFD " 10000000\n"},
		{HC_W_OFF, WORKER "  " MAIN ";" LIBFOO " 5000\n"
				  "  " MAIN ";schedule" KK ";--;kworker/0:1;try_to_wake_up" KK
				  " 9000\n" APP "  --;[interrupt] 300\n"
				  "[no process]\n"
				  "  77\n"},
		{HC_W_RUNQ, WORKER "  " MAIN ";" LIBFOO " 700\n"},
		{HC_W_OFF | HC_W_RUNQ,
		 WORKER "  " MAIN ";" LIBFOO " 5700\n"
			"  " MAIN ";schedule" KK ";--;kworker/0:1;try_to_wake_up" KK " 9000\n" APP
			"  --;[interrupt] 300\n"
			"[no process]\n"
			"  77\n"},
	};
	struct hc_profile *p = hand_profile();

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t total;
		char *out, *text;
		json_t *doc;
		int err;

		out = encode_ss(p, cases[i].weights, &err);
		assert_int_equal(err, 0);
		doc = parse_checked(out, &total);
		assert_int_equal(total, hc_weights__select(hc_node__weights(hc_tree__root(p->tree)),
							   cases[i].weights));
		text = render(doc);
		assert_string_equal(text, cases[i].expected);
		free(text);
		json_decref(doc);
		free(out);
	}
	hc_profile__free(p);
}

static void test_file_header(void **state)
{
	struct hc_profile *p = hand_profile();
	const json_t *frames, *f;
	uint64_t total;
	size_t i, n_kernel = 0;
	json_t *doc;
	char *out;
	int err;

	(void)state;
	out = encode_ss(p, HC_W_ON | HC_W_OFF, &err);
	assert_int_equal(err, 0);
	/* the top-level keys in the order of the spec, one line */
	assert_true(strncmp(out, "{\"$schema\":\"" SCHEMA "\",\"shared\":{\"frames\":[",
			    strlen("{\"$schema\":\"" SCHEMA "\",\"shared\":{\"frames\":[")) == 0);
	assert_non_null(strstr(out, ",\"activeProfileIndex\":0,\"exporter\":\"hotcold\"}\n"));
	assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1); /* one line */
	doc = parse_checked(out, &total);
	assert_string_equal(json_string_value(json_object_get(doc, "name")),
			    "hotcold web-1 (on-CPU, off-CPU)");
	/* kernel frames carry no `_[k]`, and say where they come from */
	frames = json_object_get(json_object_get(doc, "shared"), "frames");
	json_array_foreach (frames, i, f) {
		const char *name = json_string_value(json_object_get(f, "name"));
		const char *file = json_string_value(json_object_get(f, "file"));

		assert_null(strstr(name, "_[k]"));
		if (strcmp(name, "schedule") == 0 || strcmp(name, "try_to_wake_up") == 0 ||
		    strcmp(name, "asm_sysvec_apic_timer_interrupt") == 0) {
			assert_string_equal(file, "[kernel.kallsyms]");
			n_kernel++;
		}
		if (strcmp(name, "--") == 0 || strcmp(name, "lonely") == 0)
			assert_null(file);
	}
	assert_int_equal(n_kernel, 3);
	json_decref(doc);
	free(out);

	/* nothing selected: one empty profile, so activeProfileIndex still names one */
	out = encode_ss(p, 0, &err);
	assert_int_equal(err, 0);
	doc = parse_checked(out, &total);
	assert_int_equal(total, 0);
	assert_int_equal(json_array_size(json_object_get(doc, "profiles")), 1);
	assert_int_equal(
		json_array_size(frames = json_object_get(json_object_get(doc, "shared"), "frames")),
		0);
	json_decref(doc);
	free(out);
	hc_profile__free(p);
}

static void test_errors(void **state)
{
	struct hc_profile *p = hand_profile();
	FILE *full;

	(void)state;
	assert_int_equal(hc_profile__write_speedscope(NULL, HC_W_ALL, stdout), -EINVAL);
	full = fopen("/dev/full", "w");
	if (full) {
		/* a full disk is reported, not lost in the stream's buffer */
		assert_true(hc_profile__write_speedscope(p, HC_W_ALL, full) < 0);
		fclose(full);
	}
	hc_profile__free(p);
}

/* ---- random trees against the folded encoder ---- */

#define rng hc_test_rng

struct line {
	char *text;
	uint64_t value;
};

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/*
 * What folded output the speedscope document implies: the process comm (from the profile
 * name), then each frame, `_[k]` after kernel frames; threads merged, equal lines summed,
 * sorted. The root's own time ("[no process]", with empty stacks in these trees) is folded's
 * line named after the root, "all".
 */
static char *folded_from_speedscope(const json_t *doc)
{
	struct line *lines = NULL;
	size_t n = 0, cap = 0, i, j;
	const json_t *prof;
	char *buf = NULL;
	size_t len = 0;
	FILE *out;

	json_array_foreach (json_object_get(doc, "profiles"), i, prof) {
		const char *pname = json_string_value(json_object_get(prof, "name"));
		const char *cut = strstr(pname, " (pid ");
		bool root = strcmp(pname, "[no process]") == 0;
		const json_t *stack;

		if (root)
			cut = pname;
		assert_non_null(cut);
		json_array_foreach (json_object_get(prof, "samples"), j, stack) {
			const json_t *idx;
			char *text = NULL;
			size_t tlen = 0, k;
			FILE *t = open_memstream(&text, &tlen);

			assert_non_null(t);
			fwrite(pname, 1, (size_t)(cut - pname), t);
			if (root) {
				assert_int_equal(json_array_size(stack), 0);
				fputs("all", t);
			}
			json_array_foreach (stack, k, idx) {
				const json_t *f = json_array_get(
					json_object_get(json_object_get(doc, "shared"), "frames"),
					(size_t)json_integer_value(idx));
				const char *file = json_string_value(json_object_get(f, "file"));

				fprintf(t, ";%s%s", json_string_value(json_object_get(f, "name")),
					file && strcmp(file, "[kernel.kallsyms]") == 0 ? "_[k]"
										       : "");
			}
			fclose(t);
			if (n == cap) {
				cap = cap ? cap * 2 : 256;
				lines = realloc(lines, cap * sizeof(*lines));
				assert_non_null(lines);
			}
			lines[n].text = text;
			lines[n++].value = (uint64_t)json_integer_value(
				json_array_get(json_object_get(prof, "weights"), j));
		}
	}
	if (n)
		qsort(lines, n, sizeof(*lines), line_cmp);
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	for (i = 0; i < n; i = j) {
		uint64_t sum = lines[i].value;

		for (j = i + 1; j < n && strcmp(lines[i].text, lines[j].text) == 0; j++)
			sum += lines[j].value;
		fprintf(out, "%s %llu\n", lines[i].text, (unsigned long long)sum);
	}
	fclose(out);
	for (i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	return buf;
}

/* Sum of the weights of the profile called name, or 0 when there is none. */
static uint64_t profile_total(const json_t *doc, const char *name)
{
	const json_t *prof;
	size_t i;

	json_array_foreach (json_object_get(doc, "profiles"), i, prof) {
		if (strcmp(json_string_value(json_object_get(prof, "name")), name) == 0)
			return (uint64_t)json_integer_value(json_object_get(prof, "endValue"));
	}
	return 0;
}

static void test_random_vs_folded(void **state)
{
	static const char *const names[] = {"a", "b", "c", "d", "e", "[unknown]"};
	static const char *const modules[] = {"/bin/x", "/lib/y.so", NULL};
	static const unsigned int masks[] = {HC_W_ALL, HC_W_ON, HC_W_OFF, HC_W_RUNQ,
					     HC_W_ON | HC_W_RUNQ};
	struct hc_profile *p = hc_profile__new();
	char comm[16];

	(void)state;
	assert_non_null(p);
	for (int i = 0; i < 4000; i++) {
		struct hc_path_elem path[2 + 16];
		struct hc_weights w = {
			.on_cpu_ns = rng() % 3 * P,
			.off_cpu_ns = rng() % 4 ? 0 : rng() % 100000,
			.runqueue_ns = rng() % 3 ? 0 : rng() % 1000,
		};
		size_t n = rng() % 15, d;
		uint64_t pid = 1 + rng() % 12;

		w.samples = w.on_cpu_ns / P;
		snprintf(comm, sizeof(comm), "p%d", (int)(pid % 5));
		path[0] = (struct hc_path_elem)PROC(comm, pid);
		path[1] = (struct hc_path_elem)THR(comm, pid * 100 + rng() % 3);
		for (d = 2; d < n; d++) {
			uint64_t r = rng() % 16;

			if (r == 0) {
				path[d] = (struct hc_path_elem)WAKER(names[rng() % 5], 7, 7);
			} else if (r < 6) {
				path[d] = (struct hc_path_elem)KRN(names[rng() % 6]);
			} else {
				path[d] = (struct hc_path_elem)USR(names[rng() % 6],
								   modules[rng() % 3]);
				if (path[d].module && !strcmp(path[d].name, "[unknown]"))
					path[d].offset = (int64_t)(rng() % 4) * 16;
			}
		}
		/* n < 2: the process's or the root's own time */
		assert_int_equal(hc_tree__add_path(p->tree, path, n, &w), 0);
	}

	for (size_t m = 0; m < ARRAY_SIZE(masks); m++) {
		const struct hc_node *root = hc_tree__root(p->tree);
		char *out, *folded = NULL, *implied, name[96];
		uint64_t total;
		size_t flen = 0;
		FILE *f;
		json_t *doc;
		int err;

		out = encode_ss(p, masks[m], &err);
		assert_int_equal(err, 0);
		doc = parse_checked(out, &total);
		assert_int_equal(total, hc_weights__select(hc_node__weights(root), masks[m]));

		/* per profile: a thread's total is the thread node's selected value; a
		 * process's own profile holds the rest of the process */
		for (size_t i = 0; i < hc_node__child_count(root); i++) {
			const struct hc_node *proc = hc_node__child(root, i);
			uint64_t threads = 0;

			for (size_t j = 0; j < hc_node__child_count(proc); j++) {
				const struct hc_node *thr = hc_node__child(proc, j);
				uint64_t v = hc_weights__select(hc_node__weights(thr), masks[m]);

				snprintf(name, sizeof(name), "%s (pid %llu) / %s (tid %llu)",
					 hc_node__name(proc), (unsigned long long)hc_node__id(proc),
					 hc_node__name(thr), (unsigned long long)hc_node__id(thr));
				assert_int_equal(profile_total(doc, name), v);
				threads += v;
			}
			snprintf(name, sizeof(name), "%s (pid %llu)", hc_node__name(proc),
				 (unsigned long long)hc_node__id(proc));
			assert_int_equal(profile_total(doc, name),
					 hc_weights__select(hc_node__weights(proc), masks[m]) -
						 threads);
		}

		/* the same paths and self times as the folded encoder */
		f = open_memstream(&folded, &flen);
		assert_non_null(f);
		assert_int_equal(hc_profile__write_folded(p, masks[m], f), 0);
		fclose(f);
		implied = folded_from_speedscope(doc);
		assert_string_equal(implied, folded);
		free(implied);
		free(folded);
		json_decref(doc);
		free(out);
	}
	hc_profile__free(p);
}

/* Deep paths: the walk has no recursion and no depth limit. */
static void test_deep(void **state)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_path_elem path[3000];
	const struct hc_weights w = {.on_cpu_ns = 5, .samples = 1};
	const json_t *stack;
	uint64_t total;
	json_t *doc;
	char *out;
	int err;

	(void)state;
	assert_non_null(p);
	path[0] = (struct hc_path_elem)PROC("deep", 1);
	path[1] = (struct hc_path_elem)THR("deep", 1);
	for (size_t i = 2; i < ARRAY_SIZE(path); i++)
		path[i] = (struct hc_path_elem)USR(i % 2 ? "f" : "g", NULL);
	assert_int_equal(hc_tree__add_path(p->tree, path, ARRAY_SIZE(path), &w), 0);
	out = encode_ss(p, HC_W_ALL, &err);
	assert_int_equal(err, 0);
	doc = parse_checked(out, &total);
	assert_int_equal(total, 5);
	assert_int_equal(json_array_size(json_object_get(json_object_get(doc, "shared"), "frames")),
			 2);
	stack = json_array_get(
		json_object_get(json_array_get(json_object_get(doc, "profiles"), 0), "samples"), 0);
	assert_int_equal(json_array_size(stack), ARRAY_SIZE(path) - 2);
	/* outermost first: g (i = 2) opens the stack */
	assert_int_equal(json_integer_value(json_array_get(stack, 0)), 0);
	assert_int_equal(json_integer_value(json_array_get(stack, 1)), 1);
	json_decref(doc);
	free(out);
	hc_profile__free(p);
}

int run_speedscope_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_stacks), cmocka_unit_test(test_file_header),
		cmocka_unit_test(test_errors),	    cmocka_unit_test(test_random_vs_folded),
		cmocka_unit_test(test_deep),
	};

	return cmocka_run_group_tests_name("speedscope", tests, NULL, NULL);
}
