// SPDX-License-Identifier: GPL-2.0-only
/*
 * The pprof encoder, checked through two decoders it shares no code with: tests/pprof's reader
 * and the real `go tool pprof`. Also the reader itself, on hand-made protobuf bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>

#include "tests.h"
#include "tests/pprof/pprof_read.h"
#include "tests/skip.h"

#define P 10000000 /* 100 Hz */

#define WKR(n, tid, pid)                                      \
	{                                                     \
		HC_NODE_WAKER, (n), NULL, (tid), (pid), false \
	}
#define KMOD(n, m)                                     \
	{                                              \
		HC_NODE_KERNEL, (n), (m), 0, -1, false \
	}

/* ---- helpers ---- */

static uint8_t *encode(const struct hc_profile *p, unsigned int weights, size_t *len, int *err)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	assert_non_null(f);
	*err = hc_profile__write_pprof(p, weights, f);
	assert_int_equal(fclose(f), 0);
	*len = n;
	return (uint8_t *)buf;
}

static void encode_decode(const struct hc_profile *p, unsigned int weights, struct pp_profile *pp)
{
	char why[256];
	size_t len;
	int err;
	uint8_t *buf = encode(p, weights, &len, &err);

	assert_int_equal(err, 0);
	/* gzip's magic: pprof files are gzipped */
	assert_true(len > 18);
	assert_int_equal(buf[0], 0x1f);
	assert_int_equal(buf[1], 0x8b);
	err = pp_read(buf, len, pp, why, sizeof(why));
	if (err)
		fail_msg("pp_read: %d %s", err, why);
	free(buf);
}

/* Every hand-made case: host, kernel, on/off/run-queue weights, unresolved frames, kernel
 * frames (with and without module), wakers with and without their own frames, root self,
 * process and thread self without a stack, a non-UTF-8 comm, one function in two binaries. */
static struct hc_profile *mixed_profile(void)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_tree *t;

	assert_non_null(p);
	t = p->tree;
	p->host = strdup("web-1");
	p->kernel = strdup("6.1.0-test");
	p->started_at_ns = 1795334462345678901LL;
	p->duration_ns = 2000000000;
	p->sampling.period_ns = P;

	ADD_PATH(t, P, 3, 0, 4200, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"));
	ADD_PATH(t, P, 2, 5000, 700, PROC("app", 100), THR("worker", 101),
		 USR("main", "/usr/bin/app"), UNK("/usr/lib/libfoo.so", 0x1a2b));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("worker", 101), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"), KRN("asm_sysvec_apic_timer_interrupt"),
		 KRN("x;y"));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100));
	ADD_PATH(t, P, 0, 0, 300, PROC("lonely", 500));
	ADD_PATH(t, P, 0, 900000, 0, PROC("app", 100), THR("worker", 101),
		 USR("main", "/usr/bin/app"), KRN("schedule"), WKR("kworker/0:1", 7, 7),
		 KRN("try_to_wake_up"));
	ADD_PATH(t, P, 0, 40000, 0, PROC("db", 200), THR("db", 201), USR("wait_io", "/usr/bin/db"),
		 KRN("io_schedule"), WKR("db", 202, 200), USR("complete", "/usr/bin/db"),
		 KRN("wake_up_q"));
	ADD_PATH(t, P, 2, 0, 0, PROC("db", 200), THR("db", 201), KRN("ip_rcv"),
		 KMOD("nft_do_chain", "nf_tables"));
	ADD_PATH(t, P, 1, 0, 0, PROC("db", 200), THR("db", 201), USR("main", "/usr/bin/db"));
	ADD_PATH(t, P, 1, 0, 0,
		 PROC("bad\xff"
		      "name",
		      300),
		 THR("bad\xff"
		     "name",
		     300),
		 UNK(NULL, -1));
	assert_int_equal(
		hc_tree__add_path(
			t, NULL, 0,
			&(struct hc_weights){.on_cpu_ns = 2 * P, .samples = 2, .off_cpu_ns = 11}),
		0);
	return p;
}

/* The mixed profile's root: 13 samples, 945011 ns off-CPU, 5200 ns in run queues. */
#define MIXED_SAMPLES 13
#define MIXED_OFF 945011
#define MIXED_RQ 5200

/* "process/pid thread/tid stack | values", '-' for a missing label. */
static char *sample_line(const struct pp_profile *pp, const struct pp_sample *s)
{
	const char *proc = pp_label_str(s, "process"), *thr = pp_label_str(s, "thread");
	int64_t pid = -1, tid = -1;
	char *stack = pp_sample_folded(pp, s), *line = NULL, vals[128] = "";
	size_t at = 0;

	assert_non_null(stack);
	assert_int_equal(pp_label_num(s, "pid", &pid), proc != NULL);
	assert_int_equal(pp_label_num(s, "tid", &tid), thr != NULL);
	for (size_t i = 0; i < s->n_values; i++)
		at += (size_t)snprintf(vals + at, sizeof(vals) - at, " %" PRId64, s->values[i]);
	assert_true(asprintf(&line, "%s/%" PRId64 " %s/%" PRId64 " %s |%s", proc ? proc : "-", pid,
			     thr ? thr : "-", tid, stack, vals) > 0);
	free(stack);
	return line;
}

static int str_ptr_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The samples as sorted sample_line()s, one per line. */
static char *sample_lines(const struct pp_profile *pp)
{
	char **lines = calloc(pp->n_samples + 1, sizeof(*lines)), *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(lines);
	assert_non_null(f);
	for (size_t i = 0; i < pp->n_samples; i++)
		lines[i] = sample_line(pp, &pp->samples[i]);
	qsort(lines, pp->n_samples, sizeof(*lines), str_ptr_cmp);
	for (size_t i = 0; i < pp->n_samples; i++) {
		fprintf(f, "%s\n", lines[i]);
		free(lines[i]);
	}
	fclose(f);
	free(lines);
	return out;
}

static const struct pp_mapping *mapping_of(const struct pp_profile *pp, uint64_t id)
{
	for (size_t i = 0; i < pp->n_mappings; i++)
		if (pp->mappings[i].id == id)
			return &pp->mappings[i];
	return NULL;
}

static const struct pp_function *function_of(const struct pp_profile *pp, uint64_t id)
{
	for (size_t i = 0; i < pp->n_functions; i++)
		if (pp->functions[i].id == id)
			return &pp->functions[i];
	return NULL;
}

/* The location whose (only) function is `name` in the mapping of file `file` (NULL: none). */
static const struct pp_location *location_named(const struct pp_profile *pp, const char *name,
						const char *file)
{
	const struct pp_location *found = NULL;

	for (size_t i = 0; i < pp->n_locations; i++) {
		const struct pp_location *l = &pp->locations[i];
		const struct pp_mapping *m = mapping_of(pp, l->mapping_id);

		assert_int_equal(l->n_lines, 1);
		if (strcmp(function_of(pp, l->lines[0].function_id)->name, name) != 0)
			continue;
		if (file ? !m || strcmp(m->filename, file) != 0 : l->mapping_id != 0)
			continue;
		assert_null(found);
		found = l;
	}
	assert_non_null(found);
	return found;
}

/* ---- the encoder ---- */

static void test_pprof_samples(void **state)
{
	struct hc_profile *p = mixed_profile();
	struct pp_profile pp;
	char *lines;

	(void)state;
	encode_decode(p, HC_W_ALL, &pp);

	assert_int_equal(pp.n_sample_types, 4);
	assert_string_equal(pp.sample_types[0].type, "samples");
	assert_string_equal(pp.sample_types[0].unit, "count");
	assert_string_equal(pp.sample_types[1].type, "cpu");
	assert_string_equal(pp.sample_types[1].unit, "nanoseconds");
	assert_string_equal(pp.sample_types[2].type, "off_cpu");
	assert_string_equal(pp.sample_types[2].unit, "nanoseconds");
	assert_string_equal(pp.sample_types[3].type, "runqueue");
	assert_string_equal(pp.sample_types[3].unit, "nanoseconds");
	assert_string_equal(pp.period_type.type, "cpu");
	assert_string_equal(pp.period_type.unit, "nanoseconds");
	assert_int_equal(pp.period, P);
	assert_int_equal(pp.time_nanos, 1795334462345678901LL);
	assert_int_equal(pp.duration_nanos, 2000000000);
	assert_string_equal(pp.default_sample_type, "cpu");
	assert_int_equal(pp.n_comments, 1);
	assert_string_equal(pp.comments[0], "hotcold web-1 6.1.0-test");
	assert_string_equal(pp.strings[0], "");

	assert_int_equal(pp_total(&pp, "samples"), MIXED_SAMPLES);
	assert_int_equal(pp_total(&pp, "cpu"), MIXED_SAMPLES * P);
	assert_int_equal(pp_total(&pp, "off_cpu"), MIXED_OFF);
	assert_int_equal(pp_total(&pp, "runqueue"), MIXED_RQ);

	/* one sample per node with self weight; process and thread are labels; a stackless
	 * path is one frame named after its deepest node; wakers are "--;comm" as in folded */
	lines = sample_lines(&pp);
	expect_golden_text(
		lines,
		"-/-1 -/-1 all | 2 20000000 11 0\n"
		"app/100 app/100 app | 1 10000000 0 0\n"
		"app/100 app/100 main;compute | 3 30000000 0 4200\n"
		"app/100 worker/101 main;[unknown /usr/lib/libfoo.so+0x1a2b] | 2 20000000 "
		"5000 700\n"
		"app/100 worker/101 main;compute;asm_sysvec_apic_timer_interrupt;x_y | 1 "
		"10000000 0 0\n"
		"app/100 worker/101 main;schedule;--;kworker/0:1;try_to_wake_up | 0 0 "
		"900000 0\n"
		"bad\xef\xbf\xbdname/300 bad\xef\xbf\xbdname/300 [unknown] | 1 10000000 0 0\n"
		"db/200 db/201 ip_rcv;nft_do_chain | 2 20000000 0 0\n"
		"db/200 db/201 main | 1 10000000 0 0\n"
		"db/200 db/201 wait_io;io_schedule;--;db;complete;wake_up_q | 0 0 40000 0\n"
		"lonely/500 -/-1 lonely | 0 0 0 300\n",
		"mixed.pprof-samples");
	free(lines);
	pp_free(&pp);
	hc_profile__free(p);
}

static void test_pprof_interning(void **state)
{
	struct hc_profile *p = mixed_profile();
	const struct pp_location *l;
	struct pp_profile pp;

	(void)state;
	encode_decode(p, HC_W_ALL, &pp);

	/* ids 1..n; no two equal strings, functions, locations or mappings */
	for (size_t i = 1; i < pp.n_strings; i++)
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(pp.strings[i], pp.strings[j]);
	for (size_t i = 0; i < pp.n_functions; i++) {
		assert_int_equal(pp.functions[i].id, i + 1);
		assert_string_equal(pp.functions[i].filename, "");
		for (size_t j = 0; j < i; j++)
			assert_false(strcmp(pp.functions[i].name, pp.functions[j].name) == 0 &&
				     strcmp(pp.functions[i].filename, pp.functions[j].filename) ==
					     0);
	}
	for (size_t i = 0; i < pp.n_locations; i++) {
		const struct pp_location *a = &pp.locations[i];

		assert_int_equal(a->id, i + 1);
		assert_int_equal(a->n_lines, 1);
		for (size_t j = 0; j < i; j++) {
			const struct pp_location *b = &pp.locations[j];

			assert_false(a->lines[0].function_id == b->lines[0].function_id &&
				     a->mapping_id == b->mapping_id && a->address == b->address);
		}
	}
	for (size_t i = 0; i < pp.n_mappings; i++) {
		assert_int_equal(pp.mappings[i].id, i + 1);
		assert_true(pp.mappings[i].has_functions);
		for (size_t j = 0; j < i; j++)
			assert_string_not_equal(pp.mappings[i].filename, pp.mappings[j].filename);
	}
	/* 20 distinct names (main once for two binaries), 21 places, 5 files */
	assert_int_equal(pp.n_functions, 20);
	assert_int_equal(pp.n_locations, 21);
	assert_int_equal(pp.n_mappings, 5);

	/* where frames live */
	l = location_named(&pp, "[unknown /usr/lib/libfoo.so+0x1a2b]", "/usr/lib/libfoo.so");
	assert_int_equal(l->address, 0x1a2b);
	assert_int_equal(location_named(&pp, "main", "/usr/bin/app")->address, 0);
	assert_int_equal(location_named(&pp, "main", "/usr/bin/db")->lines[0].function_id,
			 location_named(&pp, "main", "/usr/bin/app")->lines[0].function_id);
	location_named(&pp, "compute", "/usr/bin/app");
	location_named(&pp, "complete", "/usr/bin/db");
	location_named(&pp, "ip_rcv", "[kernel.kallsyms]");
	location_named(&pp, "x_y", "[kernel.kallsyms]");
	location_named(&pp, "try_to_wake_up", "[kernel.kallsyms]");
	location_named(&pp, "nft_do_chain", "nf_tables");
	location_named(&pp, "--", NULL);
	location_named(&pp, "kworker/0:1", NULL);
	location_named(&pp, "[unknown]", NULL);
	location_named(&pp, "all", NULL);
	location_named(&pp, "lonely", NULL);

	pp_free(&pp);
	hc_profile__free(p);
}

/* Self weight of each selected type, summed over the tree (test-side walk). */
struct self_counts {
	size_t nodes; /* nodes with some selected self weight */
};

static void count_self(const struct hc_node *n, unsigned int w, struct self_counts *c)
{
	const struct hc_weights *nw = hc_node__weights(n);
	struct hc_weights kids = {0};

	for (size_t i = 0; i < hc_node__child_count(n); i++) {
		hc_weights__add(&kids, hc_node__weights(hc_node__child(n, i)));
		count_self(hc_node__child(n, i), w, c);
	}
	if (((w & HC_W_ON) && (nw->on_cpu_ns > kids.on_cpu_ns || nw->samples > kids.samples)) ||
	    ((w & HC_W_OFF) && nw->off_cpu_ns > kids.off_cpu_ns) ||
	    ((w & HC_W_RUNQ) && nw->runqueue_ns > kids.runqueue_ns))
		c->nodes++;
}

static void test_pprof_weight_selection(void **state)
{
	struct hc_profile *p = mixed_profile();
	const struct hc_weights *root = hc_node__weights(hc_tree__root(p->tree));

	(void)state;
	for (unsigned int w = 1; w <= HC_W_ALL; w++) {
		struct self_counts c = {0};
		struct pp_profile pp;
		size_t t = 0;

		encode_decode(p, w, &pp);
		if (w & HC_W_ON) {
			assert_string_equal(pp.sample_types[t++].type, "samples");
			assert_string_equal(pp.sample_types[t++].type, "cpu");
		}
		if (w & HC_W_OFF)
			assert_string_equal(pp.sample_types[t++].type, "off_cpu");
		if (w & HC_W_RUNQ)
			assert_string_equal(pp.sample_types[t++].type, "runqueue");
		assert_int_equal(pp.n_sample_types, t);
		assert_string_equal(pp.default_sample_type,
				    w & HC_W_ON ? "cpu" : pp.sample_types[0].type);

		/* totals are the root's, exactly */
		assert_int_equal(pp_total(&pp, "samples"),
				 w & HC_W_ON ? (int64_t)root->samples : -1);
		assert_int_equal(pp_total(&pp, "cpu"), w & HC_W_ON ? (int64_t)root->on_cpu_ns : -1);
		assert_int_equal(pp_total(&pp, "off_cpu"),
				 w & HC_W_OFF ? (int64_t)root->off_cpu_ns : -1);
		assert_int_equal(pp_total(&pp, "runqueue"),
				 w & HC_W_RUNQ ? (int64_t)root->runqueue_ns : -1);

		/* a sample for each node with selected self weight, none empty */
		count_self(hc_tree__root(p->tree), w, &c);
		assert_int_equal(pp.n_samples, c.nodes);
		for (size_t i = 0; i < pp.n_samples; i++) {
			bool any = false;

			for (size_t v = 0; v < pp.samples[i].n_values; v++) {
				assert_true(pp.samples[i].values[v] >= 0);
				any |= pp.samples[i].values[v] != 0;
			}
			assert_true(any);
		}
		pp_free(&pp);
	}
	hc_profile__free(p);
}

#define rng hc_test_rng

/* Paths of random shape: processes, threads, user, kernel and waker frames. */
static void add_random_paths(struct hc_tree *t, int n_paths, unsigned int max_frames,
			     unsigned int n_names)
{
	static const char *const modules[] = {"/bin/x", "/lib/y.so", "/lib/z;z.so", NULL};
	char names[48][32], comm[16];

	for (int i = 0; i < n_paths; i++) {
		struct hc_path_elem path[2 + 48];
		struct hc_weights w = {
			.samples = rng() % 4,
			.off_cpu_ns = rng() % 3 ? 0 : rng() % 100000,
			.runqueue_ns = rng() % 4 ? 0 : rng() % 1000,
		};
		size_t n = 2 + rng() % (max_frames + 1);
		uint64_t pid = 1 + rng() % 30;
		bool kernel = false;

		w.on_cpu_ns = w.samples * P;
		snprintf(comm, sizeof(comm), "p%d", (int)(pid % 9));
		path[0] = (struct hc_path_elem)PROC(comm, pid);
		path[1] = (struct hc_path_elem)THR(comm, pid * 100 + rng() % 3);
		for (size_t d = 2; d < n; d++) {
			unsigned int r = (unsigned int)(rng() % 100);

			snprintf(names[d - 2], sizeof(names[0]), "f%u",
				 (unsigned int)(rng() % n_names));
			if (r < 3 && d > 2 && d + 1 < n) {
				path[d] = (struct hc_path_elem)WKR(comm, pid, pid);
				kernel = false;
			} else if (kernel || r < 25) {
				path[d] = (struct hc_path_elem)KRN(names[d - 2]);
				kernel = true;
			} else if (r < 30) {
				path[d] = (struct hc_path_elem)UNK(modules[rng() % 4],
								   (int64_t)(rng() % 3) - 1);
			} else {
				path[d] =
					(struct hc_path_elem)USR(names[d - 2], modules[rng() % 4]);
			}
		}
		assert_int_equal(hc_tree__add_path(t, path, n, &w), 0);
	}
}

/* The folded export's line for a pprof sample: process, then the frames, kernel ones with
 * folded's "_[k]" (they are the frames of the kernel mapping here). */
static char *folded_of_sample(const struct pp_profile *pp, const struct pp_sample *s)
{
	const char *proc = pp_label_str(s, "process"), *thr = pp_label_str(s, "thread");
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	assert_non_null(proc);
	fputs(proc, f);
	for (size_t i = s->n_locations; i-- > 0;) {
		const struct pp_location *l = NULL;
		const struct pp_mapping *m;
		const char *name;

		for (size_t j = 0; j < pp->n_locations; j++)
			if (pp->locations[j].id == s->location_ids[i])
				l = &pp->locations[j];
		assert_non_null(l);
		name = function_of(pp, l->lines[0].function_id)->name;
		m = mapping_of(pp, l->mapping_id);
		/* the stand-in frame of a stackless thread: folded has no frame there */
		if (s->n_locations == 1 && !m && thr && strcmp(name, thr) == 0)
			break;
		fprintf(f, ";%s%s", name,
			m && strcmp(m->filename, "[kernel.kallsyms]") == 0 ? "_[k]" : "");
	}
	fclose(f);
	return out;
}

struct fline {
	char *text;
	int64_t value;
};

static int fline_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->text, ((const struct fline *)b)->text);
}

/* pprof samples rendered as folded output: the same lines, summed and sorted alike. */
static char *folded_from_pprof(const struct pp_profile *pp)
{
	struct fline *l = calloc(pp->n_samples + 1, sizeof(*l));
	char *out = NULL;
	size_t len = 0, n = 0, i, j;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(l);
	assert_non_null(f);
	for (i = 0; i < pp->n_samples; i++) {
		int64_t v = 0;

		for (size_t t = 0; t < pp->n_sample_types; t++)
			if (strcmp(pp->sample_types[t].unit, "nanoseconds") == 0)
				v += pp->samples[i].values[t];
		if (!v)
			continue;
		l[n].text = folded_of_sample(pp, &pp->samples[i]);
		l[n++].value = v;
	}
	qsort(l, n, sizeof(*l), fline_cmp);
	for (i = 0; i < n; i = j) {
		int64_t sum = l[i].value;

		for (j = i + 1; j < n && strcmp(l[i].text, l[j].text) == 0; j++)
			sum += l[j].value;
		fprintf(f, "%s %" PRId64 "\n", l[i].text, sum);
	}
	for (i = 0; i < n; i++)
		free(l[i].text);
	free(l);
	fclose(f);
	return out;
}

/* On random trees, every selection: pprof's stacks are folded's, and the totals the root's. */
static void test_pprof_matches_folded(void **state)
{
	struct hc_profile *p = hc_profile__new();
	const struct hc_weights *root;

	(void)state;
	assert_non_null(p);
	add_random_paths(p->tree, 3000, 14, 12);
	root = hc_node__weights(hc_tree__root(p->tree));
	for (unsigned int w = 1; w <= HC_W_ALL; w++) {
		struct pp_profile pp;
		char *folded = NULL, *mine;
		size_t len = 0;
		FILE *f = open_memstream(&folded, &len);

		assert_non_null(f);
		assert_int_equal(hc_profile__write_folded(p, w, f), 0);
		fclose(f);
		encode_decode(p, w, &pp);
		mine = folded_from_pprof(&pp);
		assert_true(strlen(folded) > 1000);
		assert_string_equal(mine, folded);
		assert_int_equal(pp_total(&pp, "samples"),
				 w & HC_W_ON ? (int64_t)root->samples : -1);
		assert_int_equal(pp_total(&pp, "cpu"), w & HC_W_ON ? (int64_t)root->on_cpu_ns : -1);
		assert_int_equal(pp_total(&pp, "off_cpu"),
				 w & HC_W_OFF ? (int64_t)root->off_cpu_ns : -1);
		assert_int_equal(pp_total(&pp, "runqueue"),
				 w & HC_W_RUNQ ? (int64_t)root->runqueue_ns : -1);
		free(mine);
		free(folded);
		pp_free(&pp);
	}
	hc_profile__free(p);
}

/*
 * Paths down a 4-way tree of frames whose names follow from the path (so names repeat across
 * the tree only by collision, as in a real program), ending at any depth: many nodes have
 * self weight, like a real profile's leaves and inner frames that were sampled themselves.
 */
static void add_branchy_paths(struct hc_tree *t, int n_paths)
{
	char names[24][16];

	for (int i = 0; i < n_paths; i++) {
		struct hc_path_elem path[2 + 24];
		uint64_t pid = 1 + rng() % 40, name = pid;
		size_t n = 5 + rng() % 10;
		const struct hc_weights w = {
			.samples = 1 + rng() % 3,
			.on_cpu_ns = (1 + rng() % 3) * P,
			.off_cpu_ns = rng() % 2 ? 0 : rng() % 100000,
		};

		path[0] = (struct hc_path_elem)PROC("proc", pid);
		path[1] = (struct hc_path_elem)THR("thread", pid * 10 + rng() % 2);
		for (size_t d = 2; d < n; d++) {
			name = (name * 7 + rng() % 4 + d * 13) % 50000;
			snprintf(names[d - 2], sizeof(names[0]), "fn_%" PRIu64, name);
			path[d] = d < 10 ? (struct hc_path_elem)USR(names[d - 2], "/usr/bin/big")
					 : (struct hc_path_elem)KRN(names[d - 2]);
		}
		assert_int_equal(hc_tree__add_path(t, path, n, &w), 0);
	}
}

static double now_ms(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ~200k nodes: encoded in one pass, every bit of weight accounted for. */
static void test_pprof_big_tree(void **state)
{
	struct hc_profile *p = hc_profile__new();
	const struct hc_weights *root;
	struct self_counts c = {0};
	struct pp_profile pp;
	double t0, t1, t2, c0, c1;
	char why[256];
	uint8_t *buf;
	size_t len;
	int err;

	(void)state;
	assert_non_null(p);
	while (hc_tree__node_count(p->tree) < 200000)
		add_branchy_paths(p->tree, 1000);
	root = hc_node__weights(hc_tree__root(p->tree));

	t0 = now_ms(CLOCK_MONOTONIC);
	c0 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
	buf = encode(p, HC_W_ALL, &len, &err);
	c1 = now_ms(CLOCK_PROCESS_CPUTIME_ID);
	t1 = now_ms(CLOCK_MONOTONIC);
	assert_int_equal(err, 0);
	err = pp_read(buf, len, &pp, why, sizeof(why));
	t2 = now_ms(CLOCK_MONOTONIC);
	if (err)
		fail_msg("pp_read: %s", why);
	count_self(hc_tree__root(p->tree), HC_W_ALL, &c);
	assert_int_equal(pp.n_samples, c.nodes);
	assert_int_equal(pp_total(&pp, "samples"), (int64_t)root->samples);
	assert_int_equal(pp_total(&pp, "cpu"), (int64_t)root->on_cpu_ns);
	assert_int_equal(pp_total(&pp, "off_cpu"), (int64_t)root->off_cpu_ns);
	assert_int_equal(pp_total(&pp, "runqueue"), (int64_t)root->runqueue_ns);
	print_message("pprof: %zu nodes, %zu samples, %zu locations: encoded in %.0f ms "
		      "(%.0f ms CPU, %zu bytes gzipped), read back in %.0f ms\n",
		      hc_tree__node_count(p->tree), pp.n_samples, pp.n_locations, t1 - t0, c1 - c0,
		      len, t2 - t1);
	pp_free(&pp);
	free(buf);
	hc_profile__free(p);
}

static void test_pprof_errors(void **state)
{
	struct hc_profile *p = mixed_profile();
	struct hc_path_elem path[1100];
	const struct hc_weights w = {.on_cpu_ns = 1, .samples = 1};
	char dir[] = "/tmp/hotcold-pprof-XXXXXX", file[64];
	size_t len;
	uint8_t *buf;
	FILE *f;
	int err;

	(void)state;
	/* no weight, or an unknown one, is a caller's mistake */
	assert_int_equal(hc_profile__write_pprof(p, 0, stdout), -EINVAL);
	assert_int_equal(hc_profile__write_pprof(p, HC_W_ALL + 1, stdout), -EINVAL);
	assert_int_equal(hc_profile__write_pprof(NULL, HC_W_ALL, stdout), -EINVAL);

	/* a stream that cannot be written: an error, not 0 */
	assert_non_null(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/ro.pb.gz", dir);
	f = fopen(file, "w");
	assert_non_null(f);
	fclose(f);
	f = fopen(file, "r");
	assert_non_null(f);
	err = hc_profile__write_pprof(p, HC_W_ALL, f);
	assert_true(err < 0);
	fclose(f);
	assert_int_equal(unlink(file), 0);
	assert_int_equal(rmdir(dir), 0);
	/* and one that fills up */
	f = fopen("/dev/full", "w");
	if (f) {
		assert_int_equal(hc_profile__write_pprof(p, HC_W_ALL, f), -ENOSPC);
		fclose(f);
	}
	hc_profile__free(p);

	/* deeper than the other encoders allow */
	p = hc_profile__new();
	assert_non_null(p);
	for (size_t i = 0; i < ARRAY_SIZE(path); i++)
		path[i] = (struct hc_path_elem)USR("f", NULL);
	assert_int_equal(hc_tree__add_path(p->tree, path, ARRAY_SIZE(path), &w), 0);
	buf = encode(p, HC_W_ALL, &len, &err);
	assert_int_equal(err, -EOVERFLOW);
	free(buf);
	hc_profile__free(p);

	/* 1000 frames under the root are fine: each is a location, leaf first */
	p = hc_profile__new();
	assert_non_null(p);
	for (size_t i = 0; i < 1000; i++) {
		static char names[1000][8];

		snprintf(names[i], sizeof(names[i]), "f%zu", i);
		path[i] = (struct hc_path_elem)USR(names[i], NULL);
	}
	assert_int_equal(hc_tree__add_path(p->tree, path, 1000, &w), 0);
	{
		struct pp_profile pp;

		encode_decode(p, HC_W_ON, &pp);
		assert_int_equal(pp.n_samples, 1);
		assert_int_equal(pp.samples[0].n_locations, 1000);
		assert_string_equal(
			function_of(&pp, location_named(&pp, "f999", NULL)->lines[0].function_id)
				->name,
			"f999");
		assert_int_equal(pp.samples[0].location_ids[0],
				 location_named(&pp, "f999", NULL)->id);
		pp_free(&pp);
	}
	hc_profile__free(p);
}

/*
 * serve's merged identities (pid and tid 0) and empty comms: pid/tid labels of 0 are kept
 * (with their key as unit: proto3 drops a num of 0), an empty name is no string label. The
 * empty comm comes first, while the encoder's name buffer is still unallocated (it once ran
 * memcpy/memcmp on that NULL buffer: UBSan).
 */
static struct hc_profile *zero_ids_profile(void)
{
	struct hc_profile *p = hc_profile__new();

	assert_non_null(p);
	p->sampling.period_ns = P;
	ADD_PATH(p->tree, P, 1, 0, 0, PROC("", 5), THR("", 6), KRN("x"));
	ADD_PATH(p->tree, P, 0, 30, 0, PROC("", 5), THR("", 6));
	ADD_PATH(p->tree, P, 0, 0, 4, PROC("", 5));
	ADD_PATH(p->tree, P, 2, 0, 0, PROC("ls", 0), THR("ls", 0), USR("main", "/bin/ls"));
	return p;
}

static void test_pprof_zero_ids(void **state)
{
	struct hc_profile *p = zero_ids_profile();
	struct pp_profile pp;
	size_t seen = 0;

	(void)state;
	encode_decode(p, HC_W_ALL, &pp);
	assert_int_equal(pp.n_samples, 4);
	for (size_t i = 0; i < pp.n_samples; i++) {
		const struct pp_sample *s = &pp.samples[i];
		char *stack = pp_sample_folded(&pp, s);
		int64_t pid = -1, tid = -1;
		bool has_tid = pp_label_num(s, "tid", &tid);

		assert_non_null(stack);
		assert_true(pp_label_num(s, "pid", &pid));
		for (size_t l = 0; l < s->n_labels; l++) {
			/* numeric labels carry their key as unit; no empty string labels */
			if (s->labels[l].str) {
				assert_string_not_equal(s->labels[l].str, "");
			} else {
				assert_non_null(s->labels[l].num_unit);
				assert_string_equal(s->labels[l].num_unit, s->labels[l].key);
			}
		}
		if (!strcmp(stack, "main")) {
			assert_int_equal(pid, 0);
			assert_true(has_tid);
			assert_int_equal(tid, 0);
			assert_string_equal(pp_label_str(s, "process"), "ls");
			assert_string_equal(pp_label_str(s, "thread"), "ls");
			seen |= 1;
		} else {
			/* comm "": no process or thread string label, the pid and tid still */
			assert_int_equal(pid, 5);
			assert_null(pp_label_str(s, "process"));
			assert_null(pp_label_str(s, "thread"));
			if (!strcmp(stack, "x")) {
				assert_int_equal(tid, 6);
				seen |= 2;
			} else {
				/* the stand-in frame of a stackless path: named "" too */
				assert_string_equal(stack, "");
				assert_int_equal(has_tid, s->values[2] == 30);
				seen |= s->values[2] == 30 ? 4 : 8;
			}
		}
		free(stack);
	}
	assert_int_equal(seen, 15);
	pp_free(&pp);
	hc_profile__free(p);
}

/* pid/tid above INT64_MAX (a decoded document may hold them) are not int64 labels. */
static void test_pprof_overflow(void **state)
{
	struct hc_profile *p = hc_profile__new();
	size_t len;
	uint8_t *buf;
	int err;

	(void)state;
	assert_non_null(p);
	ADD_PATH(p->tree, P, 1, 0, 0, PROC("big", (uint64_t)INT64_MAX + 1), THR("t", 1));
	buf = encode(p, HC_W_ALL, &len, &err);
	assert_int_equal(err, -EOVERFLOW);
	free(buf);
	hc_profile__free(p);

	p = hc_profile__new();
	assert_non_null(p);
	ADD_PATH(p->tree, P, 1, 0, 0, PROC("p", 1), THR("big", UINT64_MAX));
	buf = encode(p, HC_W_ALL, &len, &err);
	assert_int_equal(err, -EOVERFLOW);
	free(buf);
	hc_profile__free(p);

	/* a self value above INT64_MAX, in any selected type, and the sample count */
	p = hc_profile__new();
	assert_non_null(p);
	ADD_PATH(p->tree, P, 0, (uint64_t)INT64_MAX + 1, 0, PROC("p", 1), THR("t", 1));
	buf = encode(p, HC_W_OFF, &len, &err);
	assert_int_equal(err, -EOVERFLOW);
	free(buf);
	buf = encode(p, HC_W_ON, &len, &err); /* not selected: nothing to represent */
	assert_int_equal(err, 0);
	free(buf);
	hc_profile__free(p);
	p = hc_profile__new();
	assert_non_null(p);
	assert_int_equal(
		hc_tree__add_path(p->tree, NULL, 0,
				  &(struct hc_weights){.on_cpu_ns = 1, .samples = UINT64_MAX}),
		0);
	buf = encode(p, HC_W_ON, &len, &err);
	assert_int_equal(err, -EOVERFLOW);
	free(buf);
	buf = encode(p, HC_W_OFF | HC_W_RUNQ, &len, &err);
	assert_int_equal(err, 0);
	free(buf);
	hc_profile__free(p);
}

/* ---- go tool pprof ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static bool in_path(const char *prog)
{
	const char *env = getenv("PATH");
	char *paths, *save = NULL, full[4096];
	bool found = false;

	if (!env)
		return false;
	paths = strdup(env);
	assert_non_null(paths);
	for (char *d = strtok_r(paths, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
		snprintf(full, sizeof(full), "%s/%s", *d ? d : ".", prog);
		found = access(full, X_OK) == 0;
	}
	free(paths);
	return found;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, got;
	char chunk[4096];
	FILE *m = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_non_null(m);
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, got, m);
	fclose(f);
	fclose(m);
	return buf;
}

/*
 * Runs `go tool pprof ARGS FILE` in dir with a private HOME and caches and no network;
 * returns its stdout (malloc'd); fails the test on a non-zero exit or any stderr output.
 */
static char *go_pprof(const char *dir, const char *const *args, const char *file)
{
	char out_path[256], err_path[256], *argv[16], *out, *err_text;
	const char *last = args[0];
	size_t n = 0;
	int status;
	pid_t pid;

	snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	argv[n++] = "go";
	argv[n++] = "tool";
	argv[n++] = "pprof";
	for (; *args; args++) {
		argv[n++] = (char *)*args;
		last = *args;
	}
	argv[n++] = (char *)file;
	argv[n] = NULL;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char gocache[256], gopath[256];
		int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 || chdir(dir))
			_exit(126);
		snprintf(gocache, sizeof(gocache), "%s/gocache", dir);
		snprintf(gopath, sizeof(gopath), "%s/gopath", dir);
		setenv("HOME", dir, 1);
		setenv("GOCACHE", gocache, 1);
		setenv("GOPATH", gopath, 1);
		setenv("PPROF_TMPDIR", dir, 1);
		setenv("PPROF_BINARY_PATH", dir, 1);
		setenv("GOTOOLCHAIN", "local", 1);
		setenv("GOPROXY", "off", 1);
		setenv("GOFLAGS", "", 1);
		execvp("go", argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	out = slurp(out_path);
	err_text = slurp(err_path);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || *err_text)
		fail_msg("go tool pprof %s: status %d, stderr: %s", last, status, err_text);
	free(err_text);
	return out;
}

/* Column sums of `go tool pprof -raw`'s sample lines ("  v v v v: ids"). */
static void raw_totals(const char *raw, size_t n_types, int64_t *sums)
{
	const char *line = strstr(raw, "\nSamples:\n");
	size_t samples = 0;

	assert_non_null(line);
	memset(sums, 0, n_types * sizeof(*sums));
	for (line = strchr(line + 1, '\n') + 1; *line && strncmp(line, "Locations", 9);) {
		const char *end = strchr(line, '\n'), *s = line;
		int64_t v[8];
		size_t i;
		char *e;

		for (i = 0; i < n_types; i++) {
			v[i] = strtoll(s, &e, 10);
			if (e == s)
				break;
			s = e;
		}
		if (i == n_types && *s == ':') {
			for (i = 0; i < n_types; i++)
				sums[i] += v[i];
			samples++;
		}
		if (!end)
			break;
		line = end + 1;
	}
	assert_true(samples > 0);
}

/* `go tool pprof -top`'s flat value of `name` ("0" rows included); -1: not listed. */
static int64_t top_flat(const char *top, const char *name, int64_t *cum)
{
	const char *line = strstr(top, "flat%");

	assert_non_null(line);
	while ((line = strchr(line, '\n')) && *++line) {
		char flat[32], flatp[16], sump[16], cumv[32], cump[16];
		int used = 0;

		if (sscanf(line, "%31s %15s %15s %31s %15s %n", flat, flatp, sump, cumv, cump,
			   &used) < 5 ||
		    !used)
			continue;
		if (strncmp(line + used, name, strlen(name)) == 0 &&
		    line[used + strlen(name)] == '\n') {
			*cum = strtoll(cumv, NULL, 10);
			return strtoll(flat, NULL, 10);
		}
	}
	return -1;
}

static int go_dir_setup(void **state)
{
	static char dir[64];

	snprintf(dir, sizeof(dir), "/tmp/hotcold-gopprof-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	*state = dir;
	return 0;
}

/* The directory goes even when the test failed half way. */
static int go_dir_teardown(void **state)
{
	return nftw(*state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void test_pprof_go_tool(void **state)
{
	static const char *const raw_args[] = {"-raw", NULL};
	/* every node, however small, in nanoseconds */
	static const char *const top_cpu[] = {
		"-sample_index=cpu", "-unit=ns",	"-top", "-nodecount=1000",
		"-nodefraction=0",   "-edgefraction=0", NULL};
	static const char *const top_off[] = {
		"-sample_index=off_cpu", "-unit=ns",	    "-top", "-nodecount=1000",
		"-nodefraction=0",	 "-edgefraction=0", NULL};
	static const char *const proto_args[] = {"-proto", NULL};
	static const struct {
		const char *name;
		int64_t flat;
	} cpu_flat[] =
		{
			{"compute", 30000000},
			{"[unknown /usr/lib/libfoo.so+0x1a2b]", 20000000},
			{"nft_do_chain", 20000000},
			{"all", 20000000},
			{"app", 10000000},
			{"x_y", 10000000},
			{"main", 10000000},
			{"[unknown]", 10000000},
			{"asm_sysvec_apic_timer_interrupt", 0},
			{"ip_rcv", 0},
		},
	  off_flat[] = {
		  {"try_to_wake_up", 900000},
		  {"wake_up_q", 40000},
		  {"[unknown /usr/lib/libfoo.so+0x1a2b]", 5000},
		  {"all", 11},
		  {"--", 0},
		  {"kworker/0:1", 0},
		  {"db", 0},
	  };
	struct hc_profile *p;
	struct pp_profile pp, re;
	const char *dir = *state;
	char file[256], refile[256], why[256];
	char *out, *mine, *theirs;
	int64_t sums[4], cum;
	size_t len;
	uint8_t *buf;
	FILE *f;
	int err;

	if (!in_path("go"))
		hc_skip("`go` is not in PATH, so `go tool pprof` cannot check the output "
			"(apt-get install golang-go)");
	p = mixed_profile();
	snprintf(file, sizeof(file), "%s/mixed.pb.gz", dir);
	buf = encode(p, HC_W_ALL, &len, &err);
	assert_int_equal(err, 0);
	f = fopen(file, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);

	/* the totals of every type are the root's */
	out = go_pprof(dir, raw_args, file);
	assert_non_null(strstr(out, "PeriodType: cpu nanoseconds\nPeriod: 10000000\n"));
	assert_non_null(strstr(out, "Comment: hotcold web-1 6.1.0-test\n"));
	assert_non_null(strstr(out, "samples/count cpu/nanoseconds[dflt] off_cpu/nanoseconds "
				    "runqueue/nanoseconds\n"));
	assert_non_null(strstr(out, "process:[db] thread:[db]"));
	assert_non_null(strstr(out, "pid:[200 pid] tid:[201 tid]"));
	raw_totals(out, 4, sums);
	assert_int_equal(sums[0], MIXED_SAMPLES);
	assert_int_equal(sums[1], MIXED_SAMPLES * P);
	assert_int_equal(sums[2], MIXED_OFF);
	assert_int_equal(sums[3], MIXED_RQ);
	free(out);

	/* pprof's own view: flat time per function */
	out = go_pprof(dir, top_cpu, file);
	assert_non_null(strstr(out, "Showing nodes accounting for 130000000ns, 100% of "
				    "130000000ns total\n"));
	for (size_t i = 0; i < ARRAY_SIZE(cpu_flat); i++)
		if (top_flat(out, cpu_flat[i].name, &cum) != cpu_flat[i].flat)
			fail_msg("cpu flat of %s: want %" PRId64 " in\n%s", cpu_flat[i].name,
				 cpu_flat[i].flat, out);
	/* main: in app (60 ms) and in db (10 ms), one function */
	assert_int_equal(top_flat(out, "main", &cum), 10000000);
	assert_int_equal(cum, 70000000);
	free(out);
	out = go_pprof(dir, top_off, file);
	assert_non_null(strstr(out, "accounting for 945011ns, 100% of 945011ns total\n"));
	for (size_t i = 0; i < ARRAY_SIZE(off_flat); i++)
		if (top_flat(out, off_flat[i].name, &cum) != off_flat[i].flat)
			fail_msg("off_cpu flat of %s: want %" PRId64 " in\n%s", off_flat[i].name,
				 off_flat[i].flat, out);
	assert_int_equal(top_flat(out, "--", &cum), 0);
	assert_int_equal(cum, 940000);
	free(out);

	/* pprof re-encodes what it read with its own encoder: the same samples come back */
	out = go_pprof(dir, proto_args, file);
	snprintf(refile, sizeof(refile), "%s/stdout", dir);
	err = pp_read_file(refile, &re, why, sizeof(why));
	if (err)
		fail_msg("pp_read_file(pprof -proto): %s", why);
	encode_decode(p, HC_W_ALL, &pp);
	mine = sample_lines(&pp);
	theirs = sample_lines(&re);
	assert_string_equal(theirs, mine);
	assert_string_equal(re.default_sample_type, "cpu");
	assert_int_equal(re.time_nanos, pp.time_nanos);
	free(mine);
	free(theirs);
	pp_free(&re);
	pp_free(&pp);
	free(out);
	hc_profile__free(p);

	/* pid and tid 0 survive pprof's reading; an empty comm is no label, not a broken one */
	p = zero_ids_profile();
	snprintf(file, sizeof(file), "%s/zero.pb.gz", dir);
	buf = encode(p, HC_W_ALL, &len, &err);
	assert_int_equal(err, 0);
	f = fopen(file, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);
	out = go_pprof(dir, raw_args, file);
	assert_non_null(strstr(out, "process:[ls] thread:[ls]\n                pid:[0 pid] "
				    "tid:[0 tid]\n"));
	assert_non_null(strstr(out, "pid:[5 pid] tid:[6 tid]\n"));
	assert_null(strstr(out, "process:[]"));
	raw_totals(out, 4, sums);
	assert_int_equal(sums[0], 3);
	assert_int_equal(sums[2], 30);
	assert_int_equal(sums[3], 4);
	free(out);
	hc_profile__free(p);
}

/* ---- the reader, on hand-made bytes ---- */

struct tb {
	uint8_t b[2048];
	size_t n;
};

static void tb_varint(struct tb *t, uint64_t v)
{
	do {
		assert_true(t->n < sizeof(t->b));
		t->b[t->n++] = (uint8_t)((v & 0x7f) | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void tb_tag(struct tb *t, unsigned int field, unsigned int wt)
{
	tb_varint(t, field << 3 | wt);
}

static void tb_uint(struct tb *t, unsigned int field, uint64_t v)
{
	tb_tag(t, field, 0);
	tb_varint(t, v);
}

static void tb_bytes(struct tb *t, unsigned int field, const void *d, size_t n)
{
	tb_tag(t, field, 2);
	tb_varint(t, n);
	assert_true(t->n + n <= sizeof(t->b));
	memcpy(t->b + t->n, d, n);
	t->n += n;
}

static void tb_msg(struct tb *t, unsigned int field, const struct tb *m)
{
	tb_bytes(t, field, m->b, m->n);
}

enum defect {
	OK,
	BAD_VARINT,
	TRUNCATED,
	STRING_RANGE,
	UNKNOWN_LOCATION,
	UNKNOWN_FUNCTION,
	UNKNOWN_MAPPING,
	WIRE_TYPE,
	FIRST_STRING,
	VALUE_COUNT,
	DUPLICATE_ID,
	ZERO_ID,
	GROUP,
};

/*
 * A profile written field by field, in an order no encoder would pick (samples before the
 * strings they name), with unpacked and packed repeated fields, an inlined frame, labels of
 * both kinds and unknown fields of every wire type; `d` breaks one thing.
 */
static struct tb hand_profile(enum defect d)
{
	static const char *const strs[] = {"",	     "cpu",   "nanoseconds", "memcpy",
					   "printf", "main",  "span",	     "checkout",
					   "size",   "bytes", "/bin/x",	     "abc123"};
	struct tb t = {.n = 0}, m, sub;

	/* sample 1: unpacked location ids 100 (memcpy inlined into printf) and 200 (main) */
	m = (struct tb){.n = 0};
	tb_uint(&m, 1, 100);
	tb_uint(&m, 1, d == UNKNOWN_LOCATION ? 300 : 200);
	tb_uint(&m, 2, 5);
	if (d == VALUE_COUNT)
		tb_uint(&m, 2, 6);
	sub = (struct tb){.n = 0};
	tb_uint(&sub, 1, 6);
	tb_uint(&sub, 2, d == STRING_RANGE ? 12 : 7);
	tb_msg(&m, 3, &sub);
	sub = (struct tb){.n = 0};
	tb_uint(&sub, 1, 8);
	tb_uint(&sub, 3, 4096);
	tb_uint(&sub, 4, 9);
	tb_msg(&m, 3, &sub);
	tb_msg(&t, 2, &m);
	/* sample 2: packed ids and values */
	m = (struct tb){.n = 0};
	sub = (struct tb){.n = 0};
	tb_varint(&sub, 200);
	tb_msg(&m, 1, &sub);
	sub = (struct tb){.n = 0};
	tb_varint(&sub, 7);
	tb_msg(&m, 2, &sub);
	tb_msg(&t, 2, &m);

	/* unknown fields: varint, fixed64, length-delimited, fixed32 */
	tb_uint(&t, 50, 1);
	tb_tag(&t, 51, 1);
	memcpy(t.b + t.n, "12345678", 8);
	t.n += 8;
	tb_bytes(&t, 52, "zz", 2);
	tb_tag(&t, 53, 5);
	memcpy(t.b + t.n, "1234", 4);
	t.n += 4;
	if (d == GROUP)
		tb_tag(&t, 54, 3);

	/* locations before functions */
	m = (struct tb){.n = 0};
	tb_uint(&m, 1, 100);
	tb_uint(&m, 2, d == UNKNOWN_MAPPING ? 8 : 7);
	tb_uint(&m, 3, 0x401000);
	sub = (struct tb){.n = 0};
	tb_uint(&sub, 1, 10);
	tb_uint(&sub, 2, 12);
	tb_msg(&m, 4, &sub);
	sub = (struct tb){.n = 0};
	tb_uint(&sub, 1, d == UNKNOWN_FUNCTION ? 40 : 20);
	tb_uint(&sub, 2, 34);
	tb_msg(&m, 4, &sub);
	tb_msg(&t, 4, &m);
	m = (struct tb){.n = 0};
	tb_uint(&m, 1, d == DUPLICATE_ID ? 100 : d == ZERO_ID ? 0 : 200);
	sub = (struct tb){.n = 0};
	tb_uint(&sub, 1, 30);
	tb_msg(&m, 4, &sub);
	tb_msg(&t, 4, &m);
	/* functions out of id order */
	for (unsigned int i = 3; i >= 1; i--) {
		m = (struct tb){.n = 0};
		tb_uint(&m, 1, i * 10);
		tb_uint(&m, 2, 2 + i);
		tb_uint(&m, 3, 2 + i);
		tb_msg(&t, 5, &m);
	}
	m = (struct tb){.n = 0};
	tb_uint(&m, 1, 7);
	tb_uint(&m, 2, 0x400000);
	tb_uint(&m, 3, 0x500000);
	tb_uint(&m, 4, 0x1000);
	tb_uint(&m, 5, 10);
	tb_uint(&m, 6, 11);
	tb_uint(&m, 7, 1);
	tb_msg(&t, 3, &m);

	/* the strings, then the scalars */
	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		tb_bytes(&t, 6, i == 0 && d == FIRST_STRING ? "x" : strs[i],
			 strlen(i == 0 && d == FIRST_STRING ? "x" : strs[i]));
	m = (struct tb){.n = 0};
	tb_uint(&m, 1, 1);
	tb_uint(&m, 2, 2);
	tb_msg(&t, 1, &m);
	tb_msg(&t, 11, &m);
	tb_uint(&t, 9, (uint64_t)-5); /* negative int64: ten bytes */
	if (d == WIRE_TYPE)
		tb_bytes(&t, 10, "x", 1);
	else
		tb_uint(&t, 10, 1000);
	tb_uint(&t, 12, 3);
	tb_uint(&t, 13, 5);
	tb_uint(&t, 14, 1);
	if (d == BAD_VARINT) {
		tb_tag(&t, 12, 0);
		for (int i = 0; i < 11; i++)
			t.b[t.n++] = 0xff;
		t.b[t.n++] = 0x01;
	}
	if (d == TRUNCATED) {
		tb_tag(&t, 6, 2);
		tb_varint(&t, 100);
		t.b[t.n++] = 'a';
	}
	return t;
}

/* ---- inline frames ---- */

/* main -> compute with square and mul inlined into it, and the out-of-line square. */
static struct hc_profile *inline_profile(void)
{
	struct hc_profile *p = hc_profile__new();
	struct hc_tree *t;

	assert_non_null(p);
	t = p->tree;
	p->sampling.period_ns = P;
	ADD_PATH(t, P, 3, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"), INL("square", "/usr/bin/app"),
		 INL("mul", "/usr/bin/app"));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"));
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("compute", "/usr/bin/app"), INL("square", "/usr/bin/app"), KRN("page_fault"));
	ADD_PATH(t, P, 2, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 USR("square", "/usr/bin/app"));
	/* an inlined frame with nothing to be inlined into: a location of its own */
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100), INL("lone", "/usr/bin/app"));
	/* nor is a kernel frame inlined into a user one (a hand-made document): its own too */
	ADD_PATH(t, P, 1, 0, 0, PROC("app", 100), THR("app", 100), USR("main", "/usr/bin/app"),
		 {HC_NODE_KERNEL, "kinl", NULL, 0, -1, true});
	return p;
}

static const char *fn_name(const struct pp_profile *pp, uint64_t id)
{
	for (size_t i = 0; i < pp->n_functions; i++)
		if (pp->functions[i].id == id)
			return pp->functions[i].name;
	return NULL;
}

static const struct pp_location *loc_by_id(const struct pp_profile *pp, uint64_t id)
{
	for (size_t i = 0; i < pp->n_locations; i++)
		if (pp->locations[i].id == id)
			return &pp->locations[i];
	return NULL;
}

/* A function and what was inlined into it are one Location, its Lines innermost first. */
static void test_pprof_inline(void **state)
{
	struct hc_profile *p = inline_profile();
	struct pp_profile pp;
	bool seen[6] = {false};
	size_t multi = 0;

	(void)state;
	encode_decode(p, HC_W_ALL, &pp);
	assert_int_equal(pp.n_samples, 6);
	for (size_t i = 0; i < pp.n_samples; i++) {
		const struct pp_sample *sm = &pp.samples[i];
		char *folded = pp_sample_folded(&pp, sm);
		const struct pp_location *leaf = loc_by_id(&pp, sm->location_ids[0]);

		assert_non_null(folded);
		if (!strcmp(folded, "main;compute;square;mul")) {
			/* two locations: main, and compute with square and mul in it */
			assert_int_equal(sm->n_locations, 2);
			assert_int_equal(leaf->n_lines, 3);
			assert_string_equal(fn_name(&pp, leaf->lines[0].function_id), "mul");
			assert_string_equal(fn_name(&pp, leaf->lines[1].function_id), "square");
			assert_string_equal(fn_name(&pp, leaf->lines[2].function_id), "compute");
			assert_int_equal(sm->values[0], 3);
			seen[0] = true;
		} else if (!strcmp(folded, "main;compute")) {
			assert_int_equal(sm->n_locations, 2);
			assert_int_equal(leaf->n_lines, 1);
			seen[1] = true;
		} else if (!strcmp(folded, "main;compute;square;page_fault")) {
			const struct pp_location *l = loc_by_id(&pp, sm->location_ids[1]);

			assert_int_equal(sm->n_locations, 3);
			assert_int_equal(l->n_lines, 2);
			assert_string_equal(fn_name(&pp, l->lines[0].function_id), "square");
			assert_string_equal(fn_name(&pp, l->lines[1].function_id), "compute");
			seen[2] = true;
		} else if (!strcmp(folded, "main;square")) {
			assert_int_equal(sm->n_locations, 2);
			assert_int_equal(leaf->n_lines, 1);
			seen[3] = true;
		} else if (!strcmp(folded, "lone")) {
			assert_int_equal(sm->n_locations, 1);
			assert_int_equal(leaf->n_lines, 1);
			seen[4] = true;
		} else if (!strcmp(folded, "main;kinl")) {
			assert_int_equal(sm->n_locations, 2);
			assert_int_equal(leaf->n_lines, 1);
			seen[5] = true;
		} else {
			fail_msg("unexpected sample %s", folded);
		}
		free(folded);
	}
	for (size_t i = 0; i < 6; i++)
		assert_true(seen[i]);
	/* main, compute, compute+square, compute+square+mul, square, page_fault, lone, kinl */
	assert_int_equal(pp.n_locations, 8);
	for (size_t i = 0; i < pp.n_locations; i++)
		multi += pp.locations[i].n_lines > 1;
	assert_int_equal(multi, 2);
	/* one function per name: square is one function, inlined or not */
	assert_int_equal(pp.n_functions, 7);
	pp_free(&pp);
	hc_profile__free(p);
}

/* `go tool pprof` reads the inlined lines: -traces marks them "(inline)", -raw lists them. */
static void test_pprof_inline_go(void **state)
{
	static const char *const traces_args[] = {"-traces", NULL};
	static const char *const raw_args[] = {"-raw", NULL};
	static const char *const top_args[] = {"-sample_index=cpu", "-unit=ns",	       "-top",
					       "-nodecount=1000",   "-nodefraction=0", NULL};
	struct hc_profile *p = inline_profile();
	const char *dir = *state;
	char file[256];
	char *out;
	int64_t cum;
	size_t len;
	uint8_t *buf;
	FILE *f;
	int err;

	if (!in_path("go"))
		hc_skip("`go` is not in PATH (apt-get install golang-go)");
	snprintf(file, sizeof(file), "%s/inline.pb.gz", dir);
	buf = encode(p, HC_W_ALL, &len, &err);
	assert_int_equal(err, 0);
	f = fopen(file, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	free(buf);

	/* the stack of mul's samples: mul and square inlined into compute, called by main */
	out = go_pprof(dir, traces_args, file);
	assert_non_null(strstr(out, "      30ms   mul (inline)\n"
				    "             square (inline)\n"
				    "             compute\n"
				    "             main\n"));
	assert_non_null(strstr(out, "      20ms   square\n             main\n"));
	free(out);
	/* one location of three lines, innermost first */
	out = go_pprof(dir, raw_args, file);
	assert_non_null(strstr(out, " mul :0 s=0()\n             square :0 s=0()\n"
				    "             compute :0 s=0()\n"));
	free(out);
	/* mul's flat is its 3 samples; square (out of line and inlined) holds its own 2 and,
	 * inlined, mul's and page_fault's */
	out = go_pprof(dir, top_args, file);
	assert_int_equal(top_flat(out, "mul (inline)", &cum), 30000000);
	assert_int_equal(cum, 30000000);
	assert_int_equal(top_flat(out, "square (partial-inline)", &cum), 20000000);
	assert_int_equal(cum, 60000000);
	assert_int_equal(top_flat(out, "compute", &cum), 10000000);
	assert_int_equal(cum, 50000000);
	free(out);
	hc_profile__free(p);
}

static void test_reader_hand_made(void **state)
{
	struct tb t = hand_profile(OK);
	struct pp_profile pp;
	const struct pp_location *l;
	char why[256], *s;
	int64_t num;

	(void)state;
	if (pp_read(t.b, t.n, &pp, why, sizeof(why)))
		fail_msg("pp_read: %s", why);
	assert_int_equal(pp.n_strings, 12);
	assert_int_equal(pp.n_sample_types, 1);
	assert_string_equal(pp.sample_types[0].type, "cpu");
	assert_string_equal(pp.sample_types[0].unit, "nanoseconds");
	assert_string_equal(pp.period_type.type, "cpu");
	assert_int_equal(pp.period, 3);
	assert_int_equal(pp.time_nanos, -5);
	assert_int_equal(pp.duration_nanos, 1000);
	assert_string_equal(pp.default_sample_type, "cpu");
	assert_int_equal(pp.n_comments, 1);
	assert_string_equal(pp.comments[0], "main");

	/* sorted by id */
	assert_int_equal(pp.n_functions, 3);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(pp.functions[i].id, 10 * (i + 1));
	assert_string_equal(pp.functions[0].name, "memcpy");
	assert_string_equal(pp.functions[1].system_name, "printf");
	assert_string_equal(pp.functions[2].filename, "");
	assert_int_equal(pp.n_mappings, 1);
	assert_int_equal(pp.mappings[0].memory_start, 0x400000);
	assert_int_equal(pp.mappings[0].memory_limit, 0x500000);
	assert_int_equal(pp.mappings[0].file_offset, 0x1000);
	assert_string_equal(pp.mappings[0].filename, "/bin/x");
	assert_string_equal(pp.mappings[0].build_id, "abc123");
	assert_true(pp.mappings[0].has_functions);
	assert_int_equal(pp.n_locations, 2);
	l = &pp.locations[0];
	assert_int_equal(l->id, 100);
	assert_int_equal(l->mapping_id, 7);
	assert_int_equal(l->address, 0x401000);
	assert_int_equal(l->n_lines, 2);
	assert_int_equal(l->lines[0].function_id, 10);
	assert_int_equal(l->lines[1].line, 34);

	assert_int_equal(pp.n_samples, 2);
	assert_int_equal(pp.samples[0].n_locations, 2);
	assert_int_equal(pp.samples[1].n_locations, 1);
	s = pp_sample_folded(&pp, &pp.samples[0]);
	/* outermost first: the caller, then the inlined frames innermost last */
	assert_string_equal(s, "main;printf;memcpy");
	free(s);
	s = pp_sample_folded(&pp, &pp.samples[1]);
	assert_string_equal(s, "main");
	free(s);
	assert_int_equal(pp_total(&pp, "cpu"), 12);
	assert_int_equal(pp_total(&pp, "wall"), -1);
	assert_int_equal(pp_sample_type_index(&pp, "cpu"), 0);
	assert_string_equal(pp_label_str(&pp.samples[0], "span"), "checkout");
	assert_null(pp_label_str(&pp.samples[0], "size"));
	assert_true(pp_label_num(&pp.samples[0], "size", &num));
	assert_int_equal(num, 4096);
	assert_string_equal(pp.samples[0].labels[1].num_unit, "bytes");
	assert_false(pp_label_num(&pp.samples[0], "span", &num));
	assert_false(pp_label_num(&pp.samples[1], "size", &num));
	pp_free(&pp);
	pp_free(&pp); /* harmless twice */
}

static void test_reader_malformed(void **state)
{
	static const struct {
		enum defect d;
		const char *why;
	} cases[] = {
		{BAD_VARINT, "varint"},
		{TRUNCATED, "past the end"},
		{STRING_RANGE, "label.str: string index 12 out of range"},
		{UNKNOWN_LOCATION, "unknown location id 300"},
		{UNKNOWN_FUNCTION, "unknown function id 40"},
		{UNKNOWN_MAPPING, "unknown mapping id 8"},
		{WIRE_TYPE, "field 10: wire type 2"},
		{FIRST_STRING, "string_table[0]"},
		{VALUE_COUNT, "2 values for 1 sample types"},
		{DUPLICATE_ID, "two locations with id 100"},
		{ZERO_ID, "location with id 0"},
		{GROUP, "wire type 3"},
	};
	struct pp_profile pp;
	char why[256];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct tb t = hand_profile(cases[i].d);
		int err = pp_read(t.b, t.n, &pp, why, sizeof(why));

		if (err != -EINVAL || !strstr(why, cases[i].why))
			fail_msg("case %zu: %d '%s', want -EINVAL '%s'", i, err, why, cases[i].why);
		assert_null(pp.samples);
		assert_null(pp.strings);
	}
	/* an empty message has no string table */
	assert_int_equal(pp_read("", 0, &pp, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "string_table[0]"));
}

/* gzip members of raw[0..split) and raw[split..n), concatenated. */
static size_t gzip_two(const uint8_t *raw, size_t n, size_t split, uint8_t *out, size_t cap)
{
	size_t used = 0;

	for (int part = 0; part < 2; part++) {
		z_stream z = {0};

		assert_int_equal(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
				 Z_OK);
		z.next_in = (Bytef *)(part ? raw + split : raw);
		z.avail_in = (uInt)(part ? n - split : split);
		z.next_out = out + used;
		z.avail_out = (uInt)(cap - used);
		assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
		used = cap - z.avail_out;
		deflateEnd(&z);
	}
	return used;
}

static void test_reader_gzip(void **state)
{
	struct tb t = hand_profile(OK);
	uint8_t gz[4096];
	struct pp_profile pp;
	char why[256], path[] = "/tmp/hotcold-ppread-XXXXXX";
	size_t n;
	int fd;

	(void)state;
	n = gzip_two(t.b, t.n, t.n / 2, gz, sizeof(gz));
	if (pp_read(gz, n, &pp, why, sizeof(why)))
		fail_msg("pp_read: %s", why);
	assert_int_equal(pp_total(&pp, "cpu"), 12);
	pp_free(&pp);

	/* cut short, or followed by something that is not another member */
	assert_int_equal(pp_read(gz, n - 5, &pp, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "gzip"));
	memcpy(gz + n, "junk", 4);
	assert_int_equal(pp_read(gz, n + 4, &pp, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "garbage"));
	gz[n / 3] ^= 0xff;
	assert_int_equal(pp_read(gz, n, &pp, why, sizeof(why)), -EINVAL);

	/* from a file, and a missing file */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	n = gzip_two(t.b, t.n, t.n, gz, sizeof(gz));
	assert_int_equal(write(fd, gz, n), (ssize_t)n);
	close(fd);
	if (pp_read_file(path, &pp, why, sizeof(why)))
		fail_msg("pp_read_file: %s", why);
	assert_int_equal(pp.n_samples, 2);
	pp_free(&pp);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(pp_read_file(path, &pp, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, strerror(ENOENT));
}

int run_pprof_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pprof_samples),
		cmocka_unit_test(test_pprof_interning),
		cmocka_unit_test(test_pprof_weight_selection),
		cmocka_unit_test(test_pprof_matches_folded),
		cmocka_unit_test(test_pprof_big_tree),
		cmocka_unit_test(test_pprof_errors),
		cmocka_unit_test(test_pprof_zero_ids),
		cmocka_unit_test(test_pprof_overflow),
		cmocka_unit_test_setup_teardown(test_pprof_go_tool, go_dir_setup, go_dir_teardown),
		cmocka_unit_test(test_pprof_inline),
		cmocka_unit_test_setup_teardown(test_pprof_inline_go, go_dir_setup,
						go_dir_teardown),
		cmocka_unit_test(test_reader_hand_made),
		cmocka_unit_test(test_reader_malformed),
		cmocka_unit_test(test_reader_gzip),
	};

	return cmocka_run_group_tests_name("pprof", tests, NULL, NULL);
}
