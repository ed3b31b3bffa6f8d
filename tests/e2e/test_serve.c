// SPDX-License-Identifier: GPL-2.0-only
/*
 * hotcold serve end to end, as root with real BPF and a real HTTP server on loopback: the
 * continuous store answers range queries with the same identities as record (a thread's on +
 * blocked + run-queue time fills the range), filters, pruning, the timeline and heat map,
 * histograms, status and metrics; the HTTP process is unprivileged; SIGTERM releases all BPF.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"

static const char *hotcold, *workload;

struct serve {
	pid_t pid;
	int out_fd;
	char dir[256];
	char err[512];
	char addr[64];
};

static struct serve srv;   /* shared by the API tests */
static pid_t work, work_child;

static void dump_stderr(const char *path)
{
	char *s = e2e_read_file(path, NULL);

	if (s && *s)
		fprintf(stderr, "hotcold stderr:\n%s\n", s);
	free(s);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Start serve on a free loopback port; waits for its URL line. false on failure. */
static bool serve_start(struct serve *s, const char *freq)
{
	char *argv[] = { (char *)hotcold, "serve", "-F", (char *)freq, "--listen",
			 "127.0.0.1:0", "--retention", "5m", NULL };
	char *dir = e2e_tmpdir();

	if (!dir)
		return false;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	free(dir);
	snprintf(s->err, sizeof(s->err), "%s/stderr", s->dir);
	s->pid = e2e_spawn(argv, &s->out_fd, s->err);
	if (s->pid <= 0)
		return false;
	for (int i = 0; i < 200; i++) { /* 10 s */
		char *text = e2e_read_file(s->err, NULL), *u;

		u = text ? strstr(text, "serving http://") : NULL;
		if (u && sscanf(u, "serving http://%63[^/]/", s->addr) == 1) {
			free(text);
			return true;
		}
		free(text);
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid)
			break; /* it exited: the reason is in its stderr */
		usleep(50000);
	}
	dump_stderr(s->err);
	return false;
}

/* Wait until the store holds at least `seconds` seconds (from /api/status). */
static bool serve_wait_span(struct serve *s, int seconds)
{
	for (int i = 0; i < 100; i++) { /* 20 s */
		char *body = NULL;
		int st = e2e_http(s->addr, "GET", "/api/status", NULL, &body, NULL);

		if (st == 200) {
			json_t *j = json_loads(body, 0, NULL);
			json_int_t span = json_integer_value(
				json_object_get(json_object_get(j, "retention"), "span_s"));

			json_decref(j);
			if (span >= seconds) {
				free(body);
				return true;
			}
		}
		free(body);
		usleep(200000);
	}
	return false;
}

static json_t *get_json(const char *path, int want_status)
{
	char *body = NULL;
	int st = e2e_http(srv.addr, "GET", path, NULL, &body, NULL);
	json_t *j;

	if (st != want_status)
		fprintf(stderr, "GET %s: status %d, wanted %d: %.300s\n", path, st, want_status,
			body ? body : "");
	assert_int_equal(st, want_status);
	j = json_loads(body, 0, NULL);
	if (!j)
		fprintf(stderr, "GET %s: not JSON: %.200s\n", path, body ? body : "");
	free(body);
	assert_non_null(j);
	return j;
}

static size_t count_nodes(json_t *n)
{
	json_t *c;
	size_t i, sum = 1;

	json_array_foreach(json_object_get(n, "children"), i, c)
		sum += count_nodes(c);
	return sum;
}

static int group_setup(void **state)
{
	int fd;

	(void)state;
	/* The workload first, so it runs through every second the tests query. */
	{
		char *argv[] = { (char *)workload, "worksleep", "60", NULL };

		work_child = e2e_spawn(argv, &fd, NULL);
		if (work_child <= 0)
			return -1;
		work = e2e_read_pid(fd);
		close(fd);
	}
	if (!serve_start(&srv, "999"))
		return -1;
	/* The queried seconds must be whole seconds of serving: [start + 4 s, start + 7 s) at
	 * the earliest, with the seal lag after them. */
	if (!serve_wait_span(&srv, 11)) {
		dump_stderr(srv.err);
		return -1;
	}
	return 0;
}

static int group_teardown(void **state)
{
	char cmd[300];

	(void)state;
	if (srv.pid > 0) {
		kill(srv.pid, SIGTERM);
		e2e_wait(srv.pid, 5000);
	}
	if (work_child > 0) {
		kill(work_child, SIGKILL);
		e2e_wait(work_child, 5000);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", srv.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", srv.dir);
	return 0;
}

/* Three whole seconds that are over and sealed: [to - 3 s, to). */
static void past_range(int64_t *from, int64_t *to)
{
	*to = (now_ms() / 1000 - 3) * 1000;
	*from = *to - 3000;
}

static void test_profile_range_identity(void **state)
{
	int64_t from, to;
	char path[256];
	json_t *j, *t, *range;
	double window, on, off, rq;

	(void)state;
	past_range(&from, &to);
	snprintf(path, sizeof(path), "/api/profile?from=%lld&to=%lld&pid=%d", (long long)from,
		 (long long)to, (int)work);
	j = get_json(path, 200);
	assert_string_equal(json_string_value(json_object_get(j, "schema")), "hotcold-profile/1");
	assert_int_equal(e2e_u64(j, "duration_ns"), 3000000000ull);
	range = json_object_get(j, "range");
	assert_int_equal(json_integer_value(json_object_get(range, "from_ms")), from);
	assert_int_equal(json_integer_value(json_object_get(range, "to_ms")), to);
	window = 3e9;
	t = e2e_find_node(json_object_get(j, "flamegraph"), "thread", "tid", work);
	assert_non_null(t);
	on = (double)e2e_field(t, "on_cpu_ns") / window;
	off = (double)e2e_field(t, "off_cpu_ns") / window;
	rq = (double)e2e_field(t, "runqueue_ns") / window;
	print_message("work/sleep thread over a 3 s range: on %.3f off %.3f runqueue %.3f, "
		      "sum %.3f\n", on, off, rq, on + off + rq);
	assert_true(fabs(on + off + rq - 1.0) <= 0.05);
	/* 20 ms phases: working (on a CPU, or waiting for one on a busy machine) and asleep */
	assert_true(on + rq > 0.35 && on + rq < 0.65);
	assert_true(off > 0.35 && off < 0.65);
	assert_true((double)e2e_sum_named(t, "user", "hc_sleep_phase", "off_cpu_ns") >=
		    0.95 * (double)e2e_field(t, "off_cpu_ns"));
	assert_true(e2e_sum_named(t, "user", "hc_work_phase", "on_cpu_ns") > 0);
	/* pid filter: only that process under the root */
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "flamegraph"),
							 "children")), 1);
	json_decref(j);
}

static void test_profile_filters_and_pruning(void **state)
{
	int64_t from, to;
	char path[256];
	json_t *j, *c;
	uint64_t full_value;
	size_t i;

	(void)state;
	past_range(&from, &to);
	snprintf(path, sizeof(path), "/api/profile?from=%lld&to=%lld&comm=hc-workload&kind=on",
		 (long long)from, (long long)to);
	j = get_json(path, 200);
	assert_int_equal(e2e_u64(j, "flamegraph.off_cpu_ns"), 0);
	assert_int_equal(e2e_u64(j, "flamegraph.runqueue_ns"), 0);
	assert_true(e2e_u64(j, "flamegraph.on_cpu_ns") > 0);
	json_array_foreach(json_object_get(json_object_get(j, "flamegraph"), "children"), i, c)
		assert_string_equal(json_string_value(json_object_get(c, "name")), "hc-workload");
	json_decref(j);

	/* The whole machine, then pruned to 20 nodes: same root, fewer nodes, folds counted. */
	snprintf(path, sizeof(path), "/api/profile?from=%lld&to=%lld", (long long)from,
		 (long long)to);
	j = get_json(path, 200);
	full_value = e2e_u64(j, "flamegraph.value");
	print_message("machine, 3 s: %zu nodes, value %.3f s\n",
		      count_nodes(json_object_get(j, "flamegraph")), (double)full_value / 1e9);
	assert_true(count_nodes(json_object_get(j, "flamegraph")) > 20);
	json_decref(j);
	snprintf(path, sizeof(path), "/api/profile?from=%lld&to=%lld&max_nodes=20",
		 (long long)from, (long long)to);
	j = get_json(path, 200);
	assert_true(count_nodes(json_object_get(j, "flamegraph")) <= 20);
	assert_int_equal(e2e_u64(j, "flamegraph.value"), full_value);
	assert_true(e2e_u64(j, "range.pruned.nodes") > 0);
	assert_true(e2e_u64(j, "range.pruned.value_ns") > 0);
	json_decref(j);
}

static void test_timeline_and_heatmap(void **state)
{
	int64_t from, to;
	char path[256];
	json_t *j, *slots, *heat, *col, *v;
	uint64_t slot_samples = 0, heat_samples = 0;
	size_t i, k;

	(void)state;
	past_range(&from, &to);
	snprintf(path, sizeof(path), "/api/timeline?from=%lld&to=%lld", (long long)from,
		 (long long)to);
	j = get_json(path, 200);
	slots = json_object_get(j, "slots");
	assert_int_equal(json_array_size(json_object_get(slots, "t_ms")), 3);
	assert_int_equal(json_integer_value(json_array_get(json_object_get(slots, "t_ms"), 0)),
			 from);
	json_array_foreach(json_object_get(slots, "samples"), i, v)
		slot_samples += (uint64_t)json_integer_value(v);
	heat = json_object_get(j, "heatmap");
	assert_int_equal(json_integer_value(json_object_get(heat, "columns")), 3);
	assert_int_equal(json_integer_value(json_object_get(heat, "rows")), 50);
	json_array_foreach(json_object_get(heat, "counts"), i, col) {
		assert_int_equal(json_array_size(col), 50);
		json_array_foreach(col, k, v)
			heat_samples += (uint64_t)json_integer_value(v);
	}
	print_message("3 s: %llu samples in the slots, %llu in the heat map\n",
		      (unsigned long long)slot_samples, (unsigned long long)heat_samples);
	/* Each sample counts once in the heat map and once on its path. */
	assert_true(slot_samples > 1000); /* at least the workload's half of a CPU at 999 Hz */
	assert_true(fabs((double)heat_samples - (double)slot_samples) <=
		    0.01 * (double)slot_samples);
	json_decref(j);
	/* step 2s over 3 s: two slots, the last shorter */
	snprintf(path, sizeof(path), "/api/timeline?from=%lld&to=%lld&step=2s", (long long)from,
		 (long long)to);
	j = get_json(path, 200);
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "slots"), "t_ms")), 2);
	json_decref(j);
}

static void test_histograms(void **state)
{
	int64_t from, to;
	char path[256];
	json_t *j, *s, *b;
	size_t i;
	uint64_t in = 0, all = 0;

	(void)state;
	j = get_json("/api/histograms", 200);
	assert_int_equal(json_array_size(json_object_get(j, "histograms")), 5);
	json_decref(j);
	past_range(&from, &to);
	snprintf(path, sizeof(path), "/api/histograms/offcpu_us?from=%lld&to=%lld&pid=%d",
		 (long long)from, (long long)to, (int)work);
	j = get_json(path, 200);
	assert_string_equal(json_string_value(json_object_get(j, "type")), "quantize");
	assert_int_equal(json_array_size(json_object_get(j, "series")), 1);
	s = json_array_get(json_object_get(j, "series"), 0);
	assert_string_equal(json_string_value(json_object_get(s, "key")), "hc-workload");
	json_array_foreach(json_object_get(s, "buckets"), i, b) {
		uint64_t c = e2e_field(b, "count");

		all += c;
		if (json_integer_value(json_object_get(b, "min")) == 16384)
			in += c;
	}
	print_message("offcpu_us over 3 s: %llu of %llu blocks in [16384, 32767] us\n",
		      (unsigned long long)in, (unsigned long long)all);
	/* 20 ms sleeps: ~75 in 3 s */
	assert_true(all >= 40 && (double)in >= 0.9 * (double)all);
	json_decref(j);
	j = get_json("/api/histograms/no_such_thing", 404);
	assert_non_null(json_string_value(json_object_get(j, "error")));
	json_decref(j);
}

static void test_status_and_metrics(void **state)
{
	json_t *j;
	char *body = NULL;

	(void)state;
	j = get_json("/api/status", 200);
	assert_true(fabs(json_number_value(json_object_get(j, "frequency_hz")) - 999) < 1);
	assert_int_equal(e2e_u64(j, "cpus"), sysconf(_SC_NPROCESSORS_ONLN));
	assert_true(e2e_u64(j, "samples") > 0);
	assert_int_equal(e2e_u64(j, "retention.configured_s"), 300);
	assert_true(e2e_u64(j, "memory.store_bytes") > 0);
	assert_true(e2e_u64(j, "memory.server_rss_bytes") > 0);
	assert_true(e2e_u64(j, "memory.collector_rss_bytes") > 0);
	assert_non_null(json_object_get(json_object_get(j, "lost"), "ringbuf_full"));
	assert_int_equal(e2e_u64(j, "lost.ringbuf_full"), 0);
	print_message("status: store %.1f MB, server RSS %.1f MB, collector RSS %.1f MB\n",
		      (double)e2e_u64(j, "memory.store_bytes") / 1e6,
		      (double)e2e_u64(j, "memory.server_rss_bytes") / 1e6,
		      (double)e2e_u64(j, "memory.collector_rss_bytes") / 1e6);
	json_decref(j);
	assert_int_equal(e2e_http(srv.addr, "GET", "/metrics", NULL, &body, NULL), 200);
	assert_non_null(strstr(body, "\nhotcold_samples_total "));
	assert_non_null(strstr(body, "hotcold_lost_total{reason=\"ringbuf_full\"} 0\n"));
	assert_non_null(strstr(body, "hotcold_resident_bytes{process=\"server\"} "));
	free(body);
}

static void test_http_rules(void **state)
{
	char *body = NULL;

	(void)state;
	assert_int_equal(e2e_http(srv.addr, "POST", "/api/status", NULL, NULL, NULL), 405);
	assert_int_equal(e2e_http(srv.addr, "GET", "/api/status", "evil.example:80", NULL, NULL),
			 421);
	assert_int_equal(e2e_http(srv.addr, "GET", "/api/profile?from=yesterday", NULL, &body,
				  NULL),
			 400);
	assert_non_null(strstr(body, "\"error\""));
	free(body);
	assert_int_equal(e2e_http(srv.addr, "GET", "/../etc/passwd", NULL, NULL, NULL), 404);
	assert_int_equal(e2e_http(srv.addr, "GET", "/", NULL, &body, NULL), 200);
	assert_non_null(strstr(body, "<"));
	free(body);
}

/* /proc/PID/status line `key:` -> its text. */
static char *status_line(pid_t pid, const char *key)
{
	char path[64], *text, *p, *end;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = e2e_read_file(path, NULL);
	if (!text)
		return NULL;
	p = strstr(text, key);
	if (!p) {
		free(text);
		return NULL;
	}
	p += strlen(key);
	while (*p == ':' || *p == '\t' || *p == ' ')
		p++;
	end = strchr(p, '\n');
	if (end)
		*end = 0;
	p = strdup(p);
	free(text);
	return p;
}

static pid_t server_child(pid_t collector)
{
	char path[64], *text;
	int child = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)collector, (int)collector);
	text = e2e_read_file(path, NULL);
	if (text && sscanf(text, "%d", &child) != 1)
		child = 0;
	free(text);
	return child;
}

static void test_least_privilege(void **state)
{
	static const char *const zero_caps[] = { "CapInh", "CapPrm", "CapEff", "CapBnd",
						  "CapAmb" };
	pid_t child = server_child(srv.pid);
	char *v;

	(void)state;
	assert_true(child > 0);
	for (size_t i = 0; i < sizeof(zero_caps) / sizeof(zero_caps[0]); i++) {
		v = status_line(child, zero_caps[i]);
		assert_non_null(v);
		print_message("server %s: %s\n", zero_caps[i], v);
		assert_string_equal(v, "0000000000000000");
		free(v);
	}
	v = status_line(child, "NoNewPrivs");
	assert_non_null(v);
	assert_string_equal(v, "1");
	free(v);
	v = status_line(child, "Uid");
	assert_non_null(v);
	print_message("server Uid: %s\n", v);
	assert_true(atoi(v) != 0);
	free(v);
	/* The collector keeps root for BPF and /proc. */
	v = status_line(srv.pid, "Uid");
	assert_non_null(v);
	assert_int_equal(atoi(v), 0);
	free(v);
}

/* BPF programs of ours loaded anywhere (bpftool, names start with hc_). */
static int hc_programs_loaded(void)
{
	FILE *f = popen("bpftool -j prog show 2>/dev/null", "r");
	char buf[65536];
	size_t n;
	int count = 0;
	const char *p;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	pclose(f);
	for (p = buf; (p = strstr(p, "\"name\":\"hc_")); p++)
		count++;
	return count;
}

static void stop_and_check(const char *who, int sig)
{
	struct serve s = {0};
	struct timespec a, b;
	pid_t target;
	int rc;
	char cmd[300];

	assert_true(serve_start(&s, "99"));
	assert_true(serve_wait_span(&s, 1));
	assert_true(hc_programs_loaded() > 0);
	target = !strcmp(who, "server") ? server_child(s.pid) : s.pid;
	assert_true(target > 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	kill(target, sig);
	rc = e2e_wait(s.pid, 5000);
	clock_gettime(CLOCK_MONOTONIC, &b);
	print_message("signal %d to the %s: serve exited %d after %.0f ms\n", sig, who, rc,
		      (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	if (rc != 0)
		dump_stderr(s.err);
	assert_int_equal(rc, 0);
	/* The kernel frees programs shortly after their last fd closes: all of them gone
	 * within 2 s of the signal. */
	while (hc_programs_loaded() != 0) {
		clock_gettime(CLOCK_MONOTONIC, &b);
		if ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 >= 2.0)
			break;
		usleep(20000);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	print_message("  BPF programs gone %.0f ms after the signal\n",
		      (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
	assert_int_equal(hc_programs_loaded(), 0);
	assert_true((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < 2.0);
	assert_int_equal(e2e_http(s.addr, "GET", "/api/status", NULL, NULL, NULL), -1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s.dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", s.dir);
}

static void test_sigterm_releases_bpf(void **state)
{
	(void)state;
	stop_and_check("collector", SIGTERM);
	stop_and_check("collector", SIGINT);
	stop_and_check("server", SIGTERM);
}

/* The server cannot become --user: serve ends with its exit code (77) and says why. */
static void test_bad_user(void **state)
{
	char *dir = e2e_tmpdir(), err[512], *text;
	char *argv[] = { (char *)hotcold, "serve", "--listen", "127.0.0.1:0", "--user",
			 "no-such-user-hc", NULL };
	int rc;

	(void)state;
	snprintf(err, sizeof(err), "%s/stderr", dir);
	rc = e2e_run(argv, err, 10000);
	text = e2e_read_file(err, NULL);
	print_message("serve --user no-such-user-hc -> %d: %s", rc, text);
	assert_int_equal(rc, 77);
	assert_non_null(strstr(text, "no user 'no-such-user-hc'"));
	/* the kernel frees programs shortly after their last fd closes */
	for (int i = 0; i < 100 && hc_programs_loaded() != 0; i++)
		usleep(20000);
	assert_int_equal(hc_programs_loaded(), 0);
	free(text);
	unlink(err);
	rmdir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest api[] = {
		cmocka_unit_test(test_profile_range_identity),
		cmocka_unit_test(test_profile_filters_and_pruning),
		cmocka_unit_test(test_timeline_and_heatmap),
		cmocka_unit_test(test_histograms),
		cmocka_unit_test(test_status_and_metrics),
		cmocka_unit_test(test_http_rules),
		cmocka_unit_test(test_least_privilege),
	};
	const struct CMUnitTest lifecycle[] = {
		cmocka_unit_test(test_sigterm_releases_bpf),
		cmocka_unit_test(test_bad_user),
	};
	int failed;

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_WORKLOAD");
	failed = cmocka_run_group_tests_name("serve-api", api, group_setup, group_teardown);
	failed += cmocka_run_group_tests_name("serve-lifecycle", lifecycle, NULL, NULL);
	return failed ? 1 : 0;
}
