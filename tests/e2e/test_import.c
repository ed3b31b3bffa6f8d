// SPDX-License-Identifier: GPL-2.0-only
/*
 * hotcold import without root: real captures from fixtures/ (one of a real machine, with its
 * five histograms) into a data directory, read back through the disk store's own queries: the
 * flame graph of the capture's range is the capture's, node for node, to the ns; the
 * histograms are the capture's, bucket for bucket; the timeline is flat over the capture's
 * seconds and adds up to its totals. Bad files exit 65 and write nothing, a second import is
 * skipped, a held directory is 75, an unusable one 73. test_import_serve.c does the same
 * through serve with captures taken by record (root).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "base/hash.h"
#include "profile/encode.h"
#include "profile/hist.h"
#include "profile/profile.h"
#include "profile/store.h"
#include "store/disk.h"
#include "tests/skip.h"

static const char *hotcold;
static char fx_real[512], fx_small[512], *scratch;

/* Run `hotcold import --data-dir dir FILES...`: exit status; stdout/stderr text in *out / *err
 * (malloc'd) when asked. As root, dir is created for nobody, who then does the work. */
static int run_import(const char *dir, const char *const files[], char **out, char **err)
{
	char *argv[16] = {(char *)hotcold, "import", "--data-dir", (char *)dir};
	char outp[600], errp[600];
	int n = 4, rc;

	for (int i = 0; files[i]; i++)
		argv[n++] = (char *)files[i];
	argv[n] = NULL;
	snprintf(outp, sizeof(outp), "%s/out", scratch);
	snprintf(errp, sizeof(errp), "%s/err", scratch);
	{
		int fd, out_fd;
		pid_t pid = e2e_spawn(argv, &out_fd, errp);
		char buf[4096];
		ssize_t k;

		assert_true(pid > 0);
		fd = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		while ((k = read(out_fd, buf, sizeof(buf))) > 0)
			assert_int_equal(write(fd, buf, (size_t)k), k);
		close(fd);
		close(out_fd);
		rc = e2e_wait(pid, 60000);
	}
	if (out)
		*out = e2e_read_file(outp, NULL);
	if (err)
		*err = e2e_read_file(errp, NULL);
	return rc;
}

static struct hc_profile *load(const char *path)
{
	json_t *doc = e2e_load_json(path);
	struct hc_profile *p = NULL;
	char why[256];

	assert_non_null(doc);
	assert_int_equal(hc_profile__from_json(doc, &p, why, sizeof(why)), 0);
	json_decref(doc);
	return p;
}

/* A scratch directory the import process (nobody, when we are root) can reach. */
static char *reachable_tmpdir(void)
{
	char *t = e2e_tmpdir();

	assert_non_null(t);
	assert_int_equal(chmod(t, 0711), 0);
	return t;
}

static struct hc_disk *open_store(const char *dir)
{
	struct hc_disk_opts o = {.dir = dir, .lock_fd = -1};
	char why[512] = "";
	struct hc_disk *d = hc_disk__open(&o, why, sizeof(why));

	if (!d)
		fprintf(stderr, "open %s: %s\n", dir, why);
	assert_non_null(d);
	return d;
}

static const struct hc_node *find_child(const struct hc_node *n, const struct hc_node *like)
{
	for (size_t i = 0; i < hc_node__child_count(n); i++) {
		const struct hc_node *c = hc_node__child(n, i);
		const char *m1 = hc_node__module(c), *m2 = hc_node__module(like);

		if (hc_node__kind(c) == hc_node__kind(like) &&
		    !strcmp(hc_node__name(c), hc_node__name(like)) &&
		    hc_node__id(c) == hc_node__id(like) &&
		    hc_node__offset(c) == hc_node__offset(like) &&
		    hc_node__inlined(c) == hc_node__inlined(like) &&
		    ((!m1 && !m2) || (m1 && m2 && !strcmp(m1, m2))))
			return c;
	}
	return NULL;
}

/* The same tree: every node with the same weights, the same children. */
static void assert_same_tree(const struct hc_node *want, const struct hc_node *got)
{
	const struct hc_weights *a = hc_node__weights(want), *b = hc_node__weights(got);

	assert_int_equal(a->on_cpu_ns, b->on_cpu_ns);
	assert_int_equal(a->off_cpu_ns, b->off_cpu_ns);
	assert_int_equal(a->runqueue_ns, b->runqueue_ns);
	assert_int_equal(a->samples, b->samples);
	assert_int_equal(hc_node__child_count(want), hc_node__child_count(got));
	for (size_t i = 0; i < hc_node__child_count(want); i++) {
		const struct hc_node *c = find_child(got, hc_node__child(want, i));

		if (!c)
			fprintf(stderr, "missing node %s under %s\n",
				hc_node__name(hc_node__child(want, i)), hc_node__name(want));
		assert_non_null(c);
		assert_same_tree(hc_node__child(want, i), c);
	}
}

/* The store over the capture's seconds answers with the capture: tree, histograms, timeline. */
static void check_capture(struct hc_disk *d, const struct hc_profile *p)
{
	int64_t from = p->started_at_ns / 1000000000;
	int64_t to = (p->started_at_ns + (int64_t)p->duration_ns + 999999999) / 1000000000;
	struct hc_store_filter f = {.on = true, .off = true, .runqueue = true};
	const struct hc_weights *w = hc_node__weights(hc_tree__root(p->tree));
	struct hc_weights sum = {0};
	struct hc_store_pruned pr = {0};
	struct hc_store_slot *slots = NULL;
	struct hc_disk_range r;
	struct hc_tree *t = hc_tree__new();
	size_t n = 0;
	const char *name;
	json_t *hj;

	assert_int_equal(hc_disk__pick(d, from, to, &r), 0);
	assert_int_equal(r.tier, 0);
	assert_int_equal(r.from_s, from);
	assert_int_equal(r.to_s, to);
	assert_int_equal(hc_disk__tree(d, HC_DISK_MAIN, &r, &f, t, &pr), 0);
	assert_same_tree(hc_tree__root(p->tree), hc_tree__root(t));
	hc_tree__free(t);

	json_object_foreach (p->histograms, name, hj) {
		char why[256];
		struct hc_hist *want = hc_hist__from_json(hj, why, sizeof(why));
		struct hc_hist *got =
			hc_disk__hist(d, HC_DISK_MAIN, &r, hc_store_hist__by_name(name), &f);

		assert_non_null(want);
		assert_non_null(got);
		if (!hc_hist__equal(want, got))
			fail_msg("histogram %s differs from the capture's", name);
		hc_hist__free(want);
		hc_hist__free(got);
	}

	/* flat: each second the same share, the remainder on the last */
	assert_int_equal(hc_disk__timeline(d, &r, 1, &slots, &n), 0);
	assert_int_equal(n, (size_t)(to - from));
	for (size_t i = 0; i < n; i++) {
		sum.on_cpu_ns += slots[i].on_cpu_ns;
		sum.off_cpu_ns += slots[i].off_cpu_ns;
		sum.runqueue_ns += slots[i].runqueue_ns;
		sum.samples += slots[i].samples;
		if (i + 1 < n)
			assert_true(slots[i].off_cpu_ns <= slots[n - 1].off_cpu_ns);
		if (i > 0 && i + 1 < n)
			assert_int_equal(slots[i].off_cpu_ns, slots[0].off_cpu_ns);
	}
	free(slots);
	assert_int_equal(sum.on_cpu_ns, w->on_cpu_ns);
	assert_int_equal(sum.off_cpu_ns, w->off_cpu_ns);
	assert_int_equal(sum.runqueue_ns, w->runqueue_ns);
	assert_int_equal(sum.samples, w->samples);
}

static uint64_t file_hash(const char *path)
{
	size_t len = 0;
	char *s = e2e_read_file(path, &len);
	uint64_t h = s ? hc_hash_fnv1a(HC_FNV1A_OFFSET, s, len) : 0;

	free(s);
	return h;
}

static void write_text(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, len, f), len);
	fclose(f);
}

static void test_import_and_read_back(void **state)
{
	char *tmp = reachable_tmpdir(), dir[600], *out = NULL;
	const char *files[] = {fx_real, fx_small, NULL};
	struct hc_profile *real = load(fx_real), *small = load(fx_small);
	struct hc_disk *d;

	(void)state;
	assert_non_null(tmp);
	snprintf(dir, sizeof(dir), "%s/data", tmp);
	assert_int_equal(run_import(dir, files, &out, NULL), 0);
	assert_non_null(strstr(out, "imported"));
	assert_non_null(strstr(out, "on-CPU 5931931926 ns (5926 samples)"));
	free(out);

	d = open_store(dir);
	check_capture(d, real);
	check_capture(d, small);
	hc_disk__close(d);
	hc_profile__free(real);
	hc_profile__free(small);
	e2e_remove_tmpdir(tmp);
	free(tmp);
}

/* A second import of the same capture (the same bytes, or the same capture re-encoded) is
 * skipped and changes nothing. */
static void test_reimport_skipped(void **state)
{
	char *tmp = reachable_tmpdir(), dir[600], db[700], list[700], copy[600], *out = NULL;
	const char *one[] = {fx_small, NULL}, *again[] = {fx_small, copy, NULL};
	struct hc_profile *p = load(fx_small);
	uint64_t h_db, h_list;
	FILE *f;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/data", tmp);
	snprintf(db, sizeof(db), "%s/%s", dir, HC_DISK_FILE);
	snprintf(list, sizeof(list), "%s/imported.list", dir);
	snprintf(copy, sizeof(copy), "%s/reencoded.json", tmp);
	f = fopen(copy, "w");
	assert_non_null(f);
	assert_int_equal(hc_profile__write_json(p, f), 0); /* other bytes, the same capture */
	fclose(f);
	hc_profile__free(p);

	assert_int_equal(run_import(dir, one, NULL, NULL), 0);
	h_db = file_hash(db);
	h_list = file_hash(list);
	assert_int_equal(run_import(dir, again, &out, NULL), 0);
	assert_non_null(strstr(out, "skipped"));
	assert_null(strstr(out, "imported /"));
	free(out);
	assert_int_equal(file_hash(db), h_db);
	assert_int_equal(file_hash(list), h_list);
	e2e_remove_tmpdir(tmp);
	free(tmp);
}

/* Bad files: 65 naming the file, and nothing of any file written (the good one included). */
static void test_bad_files(void **state)
{
	char *tmp = reachable_tmpdir(), dir[600], db[700], list[700], path[4][600], *err = NULL;
	const char *one[] = {fx_small, NULL};
	char *text, *cut;
	size_t len;
	json_t *doc, *root, *proc;
	uint64_t h_db, h_list;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/data", tmp);
	snprintf(db, sizeof(db), "%s/%s", dir, HC_DISK_FILE);
	snprintf(list, sizeof(list), "%s/imported.list", dir);
	for (int i = 0; i < 4; i++)
		snprintf(path[i], sizeof(path[i]), "%s/bad%d.json", tmp, i);
	write_text(path[0], "garbage\n", 8);
	text = e2e_read_file(fx_real, &len);
	write_text(path[1], text, len / 2); /* a truncated capture */
	free(text);
	write_text(path[2], "{\"schema\": \"something-else/2\", \"x\": 1}\n", 39);
	/* frames directly under the root: a process node turned into a user frame */
	doc = e2e_load_json(fx_small);
	root = json_object_get(doc, "flamegraph");
	proc = json_array_get(json_object_get(root, "children"), 0);
	json_object_set_new(proc, "kind", json_string("user"));
	json_object_del(proc, "pid");
	assert_int_equal(json_dump_file(doc, path[3], 0), 0);
	json_decref(doc);

	assert_int_equal(run_import(dir, one, NULL, NULL), 0);
	h_db = file_hash(db);
	h_list = file_hash(list);
	for (int i = 0; i < 4; i++) {
		const char *files[] = {fx_real, path[i], NULL};

		assert_int_equal(run_import(dir, files, NULL, &err), 65);
		cut = strstr(err, path[i]);
		if (!cut)
			fprintf(stderr, "stderr: %s\n", err);
		assert_non_null(cut);
		free(err);
		assert_int_equal(file_hash(db), h_db);
		assert_int_equal(file_hash(list), h_list);
	}
	e2e_remove_tmpdir(tmp);
	free(tmp);
}

/* A held directory (serve running) is 75 with what to do; an unusable one 73; no such file
 * 66; no file 64. */
static void test_dir_and_usage(void **state)
{
	char *tmp = reachable_tmpdir(), dir[600], why[512], missing[600], *err = NULL;
	const char *one[] = {fx_small, NULL}, *none[] = {NULL}, *nofile[] = {missing, NULL};
	int fd;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/data", tmp);
	snprintf(missing, sizeof(missing), "%s/missing.json", tmp);
	assert_int_equal(run_import(dir, one, NULL, NULL), 0);
	fd = hc_disk__lock(dir, -1, -1, why, sizeof(why));
	assert_true(fd >= 0);
	assert_int_equal(run_import(dir, one, NULL, &err), 75);
	assert_non_null(strstr(err, "stop serve, import, start serve again"));
	free(err);
	close(fd);
	assert_int_equal(run_import(dir, one, NULL, NULL), 0); /* skipped */

	assert_int_equal(run_import("/etc/hostname/data", one, NULL, NULL), 73);
	assert_int_equal(run_import(dir, nofile, NULL, NULL), 66);
	assert_int_equal(run_import(dir, none, NULL, NULL), 64);
	e2e_remove_tmpdir(tmp);
	free(tmp);
}

int main(void)
{
	const char *fx = e2e_env("HC_FIXTURES");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_import_and_read_back),
		cmocka_unit_test(test_reimport_skipped),
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_dir_and_usage),
	};

	int rc;

	hotcold = e2e_env("HOTCOLD");
	scratch = e2e_tmpdir();
	if (!scratch)
		return 1;
	snprintf(fx_real, sizeof(fx_real), "%s/viewer/profile.json", fx);
	snprintf(fx_small, sizeof(fx_small), "%s/profile/small.json", fx);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	e2e_remove_tmpdir(scratch);
	free(scratch);
	return rc;
}
