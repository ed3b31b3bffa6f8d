// SPDX-License-Identifier: GPL-2.0-only
/*
 * Scheduled captures joining serve's timeline, as root with real BPF: two `hotcold record`
 * captures imported into a fresh data directory; `hotcold serve --data-dir DIR` then answers
 * each capture's range from disk with the capture's totals to the ns, its timeline adds up to
 * them, its histograms to the capture's counts. A bad file exits 65 and changes nothing that
 * serve shows; a second import is skipped; an import while serve holds DIR exits 75.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"

static const char *hotcold, *workload;
static char *tmp;
static char dir[600], cap[2][600], errp[600], addr[64];
static pid_t serve_pid = -1;

static int import(const char *const files[], char **err)
{
	char *argv[8] = {(char *)hotcold, "import", "--data-dir", dir};
	int n = 4, rc;

	for (int i = 0; files[i]; i++)
		argv[n++] = (char *)files[i];
	argv[n] = NULL;
	rc = e2e_run(argv, errp, 60000);
	if (err)
		*err = e2e_read_file(errp, NULL);
	return rc;
}

static bool serve_start(void)
{
	char *argv[] = {(char *)hotcold, "serve",	"--data-dir", dir, "--listen",
			"127.0.0.1:0",	 "--retention", "1h",	      NULL};
	int out_fd;

	serve_pid = e2e_spawn(argv, &out_fd, errp);
	if (serve_pid <= 0)
		return false;
	for (int i = 0; i < 300; i++) { /* 15 s */
		char *text = e2e_read_file(errp, NULL), *u;

		u = text ? strstr(text, "serving http://") : NULL;
		if (u && sscanf(u, "serving http://%63[^/]/", addr) == 1) {
			free(text);
			return true;
		}
		free(text);
		if (waitpid(serve_pid, NULL, WNOHANG) == serve_pid)
			break;
		usleep(50000);
	}
	{
		char *text = e2e_read_file(errp, NULL);

		fprintf(stderr, "serve did not start: %s\n", text ? text : "");
		free(text);
	}
	return false;
}

static json_t *get_json(const char *path)
{
	char *body = NULL;
	int st = e2e_http(addr, "GET", path, NULL, &body, NULL);
	json_t *j = st == 200 ? json_loads(body, 0, NULL) : NULL;

	if (!j)
		fprintf(stderr, "GET %s: %d %.300s\n", path, st, body ? body : "");
	free(body);
	assert_non_null(j);
	return j;
}

/* Sum of every bucket's count of every series of histogram h. */
static uint64_t hist_count(json_t *h)
{
	json_t *s, *b;
	size_t i, k;
	uint64_t n = 0;

	json_array_foreach (json_object_get(h, "series"), i, s)
		json_array_foreach (json_object_get(s, "buckets"), k, b)
			n += (uint64_t)json_integer_value(json_object_get(b, "count"));
	return n;
}

/* serve's answers over the capture's range are the capture's. */
static void check_capture(const char *path)
{
	json_t *c = e2e_load_json(path), *p, *tl, *fg = json_object_get(c, "flamegraph");
	json_t *hists, *h;
	int64_t start_ns, dur_ns, from_ms, to_ms;
	uint64_t sum[4] = {0};
	const char *name;
	char q[256];
	size_t i;
	json_t *v;

	assert_non_null(c);
	assert_non_null(fg);
	/* started_at is written with ms: the range in ms covers the capture's seconds */
	p = json_object_get(c, "started_at");
	assert_non_null(p);
	{
		struct tm tm = {0};
		int ms = 0;

		assert_int_equal(sscanf(json_string_value(p), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year,
					&tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
					&tm.tm_sec, &ms),
				 7);
		tm.tm_year -= 1900;
		tm.tm_mon -= 1;
		start_ns = (int64_t)timegm(&tm) * 1000000000 + (int64_t)ms * 1000000;
	}
	dur_ns = (int64_t)e2e_u64(c, "duration_ns");
	from_ms = start_ns / 1000000;
	to_ms = (start_ns + dur_ns + 999999) / 1000000;

	snprintf(q, sizeof(q), "/api/profile?from=%lld&to=%lld", (long long)from_ms,
		 (long long)to_ms);
	p = get_json(q);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(p, "range"), "source")), "disk");
	assert_int_equal(e2e_u64(p, "totals.on_cpu_ns"), e2e_u64(fg, "on_cpu_ns"));
	assert_int_equal(e2e_u64(p, "totals.off_cpu_ns"), e2e_u64(fg, "off_cpu_ns"));
	assert_int_equal(e2e_u64(p, "totals.runqueue_ns"), e2e_u64(fg, "runqueue_ns"));
	assert_int_equal(e2e_u64(p, "sampling.samples"), e2e_u64(fg, "samples"));
	assert_true(e2e_u64(fg, "on_cpu_ns") > 0);

	hists = json_object_get(c, "histograms");
	assert_true(json_object_size(hists) >= 5);
	json_object_foreach (hists, name, h) {
		json_t *got = json_object_get(json_object_get(p, "histograms"), name);

		assert_non_null(got);
		if (hist_count(got) != hist_count(h))
			fail_msg("histogram %s: %llu counts, the capture has %llu", name,
				 (unsigned long long)hist_count(got),
				 (unsigned long long)hist_count(h));
	}
	json_decref(p);

	snprintf(q, sizeof(q), "/api/timeline?from=%lld&to=%lld&step=1s", (long long)from_ms,
		 (long long)to_ms);
	tl = get_json(q);
	json_array_foreach (json_object_get(json_object_get(tl, "slots"), "on_cpu_ns"), i, v)
		sum[0] += (uint64_t)json_integer_value(v);
	json_array_foreach (json_object_get(json_object_get(tl, "slots"), "off_cpu_ns"), i, v)
		sum[1] += (uint64_t)json_integer_value(v);
	json_array_foreach (json_object_get(json_object_get(tl, "slots"), "runqueue_ns"), i, v)
		sum[2] += (uint64_t)json_integer_value(v);
	json_array_foreach (json_object_get(json_object_get(tl, "slots"), "samples"), i, v)
		sum[3] += (uint64_t)json_integer_value(v);
	/* flat: every second has its share of the time (of the samples only when there are at
	 * least as many as seconds: a path's samples go whole, the remainder on its last second) */
	json_array_foreach (json_object_get(json_object_get(tl, "slots"), "off_cpu_ns"), i, v)
		assert_true(json_integer_value(v) > 0);
	assert_int_equal(sum[0], e2e_u64(fg, "on_cpu_ns"));
	assert_int_equal(sum[1], e2e_u64(fg, "off_cpu_ns"));
	assert_int_equal(sum[2], e2e_u64(fg, "runqueue_ns"));
	assert_int_equal(sum[3], e2e_u64(fg, "samples"));
	json_decref(tl);
	json_decref(c);
}

static void test_captures_on_serve_timeline(void **state)
{
	const char *both[] = {cap[0], cap[1], NULL};
	char bad[700], *err = NULL;

	(void)state;
	for (int i = 0; i < 2; i++) {
		char *argv[] = {(char *)hotcold, "record", "-d", "2s", "-o", cap[i], NULL};
		/* something on CPU in every capture: an idle machine may give no sample at
		 * all (and hotcold's own worker, which no longer unwinds, hardly runs) */
		char *wargv[] = {(char *)workload, "cpu", "30", NULL};
		pid_t w = e2e_spawn(wargv, NULL, NULL);

		assert_true(w > 0);
		assert_int_equal(e2e_run(argv, errp, 60000), 0);
		kill(w, SIGKILL);
		e2e_wait(w, 5000);
		usleep(1200000); /* the captures share no second */
	}
	assert_int_equal(import(both, NULL), 0);

	/* a bad file: 65, nothing written */
	snprintf(bad, sizeof(bad), "%s/bad.json", tmp);
	{
		FILE *f = fopen(bad, "w");

		assert_non_null(f);
		fputs("{\"schema\": \"hotcold-profile/1\"", f); /* truncated */
		fclose(f);
	}
	{
		const char *files[] = {cap[0], bad, NULL};

		assert_int_equal(import(files, &err), 65);
		assert_non_null(strstr(err, bad));
		free(err);
	}
	/* imported before: skipped */
	assert_int_equal(import(both, NULL), 0);

	assert_true(serve_start());
	/* serve holds DIR: 75, saying what to do */
	assert_int_equal(import(both, &err), 75);
	assert_non_null(strstr(err, "stop serve"));
	free(err);

	check_capture(cap[0]);
	check_capture(cap[1]);

	kill(serve_pid, SIGTERM);
	assert_int_equal(e2e_wait(serve_pid, 20000), 0);
	serve_pid = -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_captures_on_serve_timeline),
	};
	int rc;

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_WORKLOAD");
	tmp = e2e_tmpdir();
	if (!tmp || chmod(tmp, 0711)) /* serve's HTTP process (nobody) reaches DIR */
		return 1;
	snprintf(dir, sizeof(dir), "%s/data", tmp);
	snprintf(cap[0], sizeof(cap[0]), "%s/cap1.json", tmp);
	snprintf(cap[1], sizeof(cap[1]), "%s/cap2.json", tmp);
	snprintf(errp, sizeof(errp), "%s/stderr", tmp);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (serve_pid > 0) {
		kill(serve_pid, SIGKILL);
		e2e_wait(serve_pid, 5000);
	}
	e2e_remove_tmpdir(tmp);
	free(tmp);
	return rc;
}
