// SPDX-License-Identifier: GPL-2.0-only
/*
 * hotcold serve --data-dir with real store files, as root with real BPF (issue 20, "Faults"):
 * a restart answers the history before it exactly as before (from disk now); a kill -9 loses
 * at most the last 2 s and the store opens cleanly; a second serve on the same directory exits
 * 75; a directory that is not writable (or not a directory) 73; a truncated, overwritten or
 * damaged store file is moved to DIR/quarantine/ as it was and counted, a damaged bucket is
 * skipped and counted; a full disk (a small tmpfs) keeps serving from memory, counts its
 * failed writes and resumes when space returns; ranges across tier boundaries add up to the
 * ns.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <sqlite3.h>

#include "e2e.h"
#include "tests/skip.h"

#define DB "hotcold.db"

/* Under ASan (the test and hotcold are built alike) everything is several times slower, the
 * disk writer included: waits are longer, and the kill -9 loss is only printed. */
#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif
#define SLOW (SANITIZED ? 4 : 1)
#define START_TIMEOUT_MS (30000 * SLOW)
#define HANG_GUARD_MS (30000 * SLOW)

static const char *hotcold, *workload;
static char *root; /* this run's scratch directory, traversable by nobody */
static int n_starts;

struct serve {
	pid_t pid;
	int out_fd;
	char err[PATH_MAX];
	char addr[64];
};

struct work {
	pid_t child, pid;
};

/* What a test started and has not stopped yet: killed by cleanup() when an assertion ends the
 * test early, so that nothing outlives it. */
#define MAX_LIVE 8
static pid_t live[MAX_LIVE];

static void live_add(pid_t pid)
{
	for (int i = 0; i < MAX_LIVE; i++)
		if (!live[i]) {
			live[i] = pid;
			return;
		}
}

static void live_del(pid_t pid)
{
	for (int i = 0; i < MAX_LIVE; i++)
		if (live[i] == pid)
			live[i] = 0;
}

/* SIGKILL to serve's main process ends its children too (PR_SET_PDEATHSIG). */
static int cleanup(void **state)
{
	(void)state;
	for (int i = 0; i < MAX_LIVE; i++)
		if (live[i] > 0) {
			kill(live[i], SIGKILL);
			e2e_wait(live[i], 10000);
			live[i] = 0;
		}
	return 0;
}

/* ---- helpers ---- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_until_ms(int64_t t)
{
	int64_t d;

	while ((d = t - now_ms()) > 0)
		usleep((useconds_t)(d > 200 ? 200000 : d * 1000));
}

static void dump_stderr(const struct serve *s)
{
	char *text = e2e_read_file(s->err, NULL);

	fprintf(stderr, "serve stderr (%s):\n%s\n", s->err, text ? text : "(none)");
	free(text);
}

/* A fresh directory name under root (not created). */
static void path_in_root(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", root, name);
}

/*
 * Start serve on dir (and the extra arguments, NULL-ended): 0 once it prints its URL, else its
 * exit status (it ended before answering), -1 on a timeout.
 */
static int serve_start(struct serve *s, const char *dir, const char *const extra[])
{
	char *argv[24] = {(char *)hotcold, "serve",	 "--data-dir", (char *)dir, "-F", "99",
			  "--listen",	   "127.0.0.1:0"};
	int n = 8;

	for (int i = 0; extra && extra[i] && n < 23; i++)
		argv[n++] = (char *)extra[i];
	argv[n] = NULL;
	memset(s, 0, sizeof(*s));
	snprintf(s->err, sizeof(s->err), "%s/stderr.%d", root, ++n_starts);
	s->pid = e2e_spawn(argv, &s->out_fd, s->err);
	if (s->pid <= 0)
		return -1;
	live_add(s->pid);
	for (int i = 0; i < START_TIMEOUT_MS / 50; i++) {
		char *text = e2e_read_file(s->err, NULL), *u;
		int status;

		u = text ? strstr(text, "serving http://") : NULL;
		if (u && sscanf(u, "serving http://%63[^/]/", s->addr) == 1) {
			free(text);
			return 0;
		}
		free(text);
		if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
			close(s->out_fd);
			live_del(s->pid);
			s->pid = 0;
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
		usleep(50000);
	}
	dump_stderr(s);
	kill(s->pid, SIGKILL);
	e2e_wait(s->pid, 5000);
	live_del(s->pid);
	s->pid = 0;
	return -1;
}

/* Signal serve, its exit status. */
static int serve_stop(struct serve *s, int sig)
{
	int rc;

	if (s->pid <= 0)
		return -1;
	kill(s->pid, sig);
	rc = e2e_wait(s->pid, HANG_GUARD_MS);
	close(s->out_fd);
	live_del(s->pid);
	s->pid = 0;
	return rc;
}

/* Whether DIR's lock (a flock on the directory) is free: every process of the serve that held
 * it is gone. */
static bool lock_free(const char *dir)
{
	int fd;
	bool free_now;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	free_now = flock(fd, LOCK_EX | LOCK_NB) == 0;
	close(fd);
	return free_now;
}

static bool wait_lock_free(const char *dir)
{
	for (int i = 0; i < HANG_GUARD_MS / 20; i++) {
		if (lock_free(dir))
			return true;
		usleep(20000);
	}
	return false;
}

/* Rows of the 1 s tier in dir's store file (read as it is on disk, serve stopped). */
static int64_t tier0_rows(const char *dir)
{
	char uri[PATH_MAX + 64];
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	int64_t n = -1;

	snprintf(uri, sizeof(uri), "file:%s/%s?immutable=1", dir, DB);
	if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM bucket WHERE tier=0", -1, &st, NULL) ==
		    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			n = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	return n;
}

/*
 * SIGINT: serve exits 0, every process of it gone, and its store still holds the history (a
 * close once expired every tier: it sealed INT64_MAX and took it for the newest second).
 */
static bool clean_stop(struct serve *s, const char *dir)
{
	int64_t rows;

	assert_int_equal(serve_stop(s, SIGINT), 0);
	assert_true(wait_lock_free(dir));
	rows = tier0_rows(dir);
	if (rows <= 0)
		fail_msg("%s holds %lld rows of the 1 s tier after a clean stop", dir,
			 (long long)rows);
	return true;
}

static json_t *get_json(const struct serve *s, const char *path)
{
	char *body = NULL;
	int st = e2e_http(s->addr, "GET", path, NULL, &body, NULL);
	json_t *j = NULL;

	if (st == 200)
		j = json_loads(body, 0, NULL);
	if (!j)
		fprintf(stderr, "GET %s: status %d: %.300s\n", path, st, body ? body : "");
	free(body);
	return j;
}

static json_t *status(const struct serve *s)
{
	json_t *j = get_json(s, "/api/status");

	assert_non_null(j);
	return j;
}

static uint64_t status_u64(const struct serve *s, const char *path)
{
	json_t *j = status(s);
	uint64_t v = e2e_u64(j, path);

	json_decref(j);
	assert_true(v != UINT64_MAX);
	return v;
}

/* "2026-11-26T07:46:49.000Z" -> seconds since the epoch; -1 when absent. */
static int64_t rfc3339_s(json_t *v)
{
	const char *s = json_string_value(v);
	struct tm tm = {0};

	if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm))
		return -1;
	return (int64_t)timegm(&tm);
}

static int64_t tier_oldest_s(const struct serve *s, const char *tier)
{
	json_t *j = status(s);
	json_t *t = json_object_get(
		json_object_get(json_object_get(json_object_get(j, "store"), "disk"), "tiers"),
		tier);
	int64_t v = rfc3339_s(json_object_get(t, "oldest"));

	json_decref(j);
	return v;
}

/* Wait until the 1 s tier on disk holds n seconds. */
static bool wait_disk_seconds(const struct serve *s, uint64_t n)
{
	for (int i = 0; i < 300 * SLOW; i++) { /* 60 s */
		json_t *j = get_json(s, "/api/status");
		uint64_t v = j ? e2e_u64(j, "store.disk.tiers.1s.seconds") : 0;

		json_decref(j);
		if (v != UINT64_MAX && v >= n)
			return true;
		usleep(200000);
	}
	return false;
}

static void work_start(struct work *w, const char *seconds)
{
	char *argv[] = {(char *)workload, "worksleep", (char *)seconds, NULL};
	int fd;

	w->child = e2e_spawn(argv, &fd, NULL);
	assert_true(w->child > 0);
	live_add(w->child);
	w->pid = e2e_read_pid(fd);
	close(fd);
	assert_true(w->pid > 0);
}

static void work_stop(struct work *w)
{
	if (w->child > 0) {
		kill(w->child, SIGKILL);
		e2e_wait(w->child, 5000);
		live_del(w->child);
	}
	w->child = 0;
}

/* The totals of an answer: the flame graph root's weights and samples. */
struct totals {
	uint64_t on, off, rq, samples;
};

static struct totals totals_of(json_t *j)
{
	json_t *fg = json_object_get(j, "flamegraph");
	struct totals t = {
		.on = e2e_u64(fg, "on_cpu_ns"),
		.off = e2e_u64(fg, "off_cpu_ns"),
		.rq = e2e_u64(fg, "runqueue_ns"),
		.samples = e2e_u64(fg, "samples"),
	};

	/* the header's totals say the same */
	assert_int_equal(e2e_u64(j, "totals.on_cpu_ns"), t.on);
	assert_int_equal(e2e_u64(j, "totals.off_cpu_ns"), t.off);
	assert_int_equal(e2e_u64(j, "totals.runqueue_ns"), t.rq);
	return t;
}

static void assert_totals_equal(const struct totals *a, const struct totals *b)
{
	assert_int_equal(a->on, b->on);
	assert_int_equal(a->off, b->off);
	assert_int_equal(a->rq, b->rq);
	assert_int_equal(a->samples, b->samples);
}

static void totals_add(struct totals *a, const struct totals *b)
{
	a->on += b->on;
	a->off += b->off;
	a->rq += b->rq;
	a->samples += b->samples;
}

/* /api/profile of pid (0: all) over [from_ms, to_ms): the document (range checked: source,
 * tier). */
static json_t *profile(const struct serve *s, pid_t pid, int64_t from_ms, int64_t to_ms,
		       const char *source, const char *tier)
{
	char path[256];
	json_t *j, *range;

	if (pid)
		snprintf(path, sizeof(path), "/api/profile?pid=%d&from=%lld&to=%lld", (int)pid,
			 (long long)from_ms, (long long)to_ms);
	else
		snprintf(path, sizeof(path), "/api/profile?from=%lld&to=%lld&max_nodes=100",
			 (long long)from_ms, (long long)to_ms);
	j = get_json(s, path);
	assert_non_null(j);
	range = json_object_get(j, "range");
	print_message("  %s: %s %s [%lld, %lld) on %llu off %llu rq %llu samples %llu\n", path,
		      json_string_value(json_object_get(range, "source")),
		      json_string_value(json_object_get(range, "tier")),
		      (long long)json_integer_value(json_object_get(range, "from_ms")),
		      (long long)json_integer_value(json_object_get(range, "to_ms")),
		      (unsigned long long)e2e_u64(j, "flamegraph.on_cpu_ns"),
		      (unsigned long long)e2e_u64(j, "flamegraph.off_cpu_ns"),
		      (unsigned long long)e2e_u64(j, "flamegraph.runqueue_ns"),
		      (unsigned long long)e2e_u64(j, "flamegraph.samples"));
	if (source)
		assert_string_equal(json_string_value(json_object_get(range, "source")), source);
	if (tier)
		assert_string_equal(json_string_value(json_object_get(range, "tier")), tier);
	/* from disk, the coarse windows' [small stacks] threshold: serve's default */
	if (!strcmp(json_string_value(json_object_get(range, "source")), "disk"))
		assert_int_equal(e2e_u64(j, "range.small_stacks_below_ns_per_s"), 100000);
	else
		assert_null(json_object_get(range, "small_stacks_below_ns_per_s"));
	return j;
}

static struct totals profile_totals(const struct serve *s, pid_t pid, int64_t from_ms,
				    int64_t to_ms, const char *source, const char *tier)
{
	json_t *j = profile(s, pid, from_ms, to_ms, source, tier);
	struct totals t = totals_of(j);

	json_decref(j);
	return t;
}

/* /api/histograms/NAME of pid over [from_ms, to_ms), its range (source checked) taken out. */
static json_t *histogram(const struct serve *s, const char *name, pid_t pid, int64_t from_ms,
			 int64_t to_ms, const char *source)
{
	char path[256];
	json_t *j;

	snprintf(path, sizeof(path), "/api/histograms/%s?pid=%d&from=%lld&to=%lld", name, (int)pid,
		 (long long)from_ms, (long long)to_ms);
	j = get_json(s, path);
	assert_non_null(j);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j, "range"), "source")), source);
	json_object_del(j, "range");
	return j;
}

static json_t *timeline(const struct serve *s, int64_t from_ms, int64_t to_ms)
{
	char path[256];

	snprintf(path, sizeof(path), "/api/timeline?from=%lld&to=%lld&step=1s", (long long)from_ms,
		 (long long)to_ms);
	return get_json(s, path);
}

static json_t *slots(json_t *tl, const char *what)
{
	return json_object_get(json_object_get(tl, "slots"), what);
}

/* A fresh data directory under root: its path (not created: serve creates it for nobody). */
static void data_dir(char *out, size_t len, const char *name)
{
	path_in_root(out, len, name);
}

/* ---- restart ---- */

/* One try of test_restart in dir: false when the first run's history was lost at its stop. */
static bool restart_once(const char *dir)
{
	struct serve s;
	struct work w;
	int64_t a, b;
	json_t *before, *after, *tl_before, *tl_after, *h_before, *h_after;
	struct totals tb, ta;
	size_t i;
	json_t *v;

	work_start(&w, "120");
	assert_int_equal(serve_start(&s, dir, NULL), 0);
	a = (now_ms() / 1000 + 2) * 1000;
	b = a + 4000;
	sleep_until_ms(b + 3500);
	assert_true(wait_disk_seconds(&s, 6));
	before = profile(&s, w.pid, a, b, "memory", "1s");
	h_before = histogram(&s, "offcpu_us", w.pid, a, b, "memory");
	tl_before = timeline(&s, a, b);
	assert_non_null(tl_before);
	tb = totals_of(before);
	assert_true(tb.on > 0 && tb.off > 0 && tb.samples > 0);
	work_stop(&w);
	if (!clean_stop(&s, dir)) {
		json_decref(before);
		json_decref(h_before);
		json_decref(tl_before);
		return false;
	}

	assert_int_equal(serve_start(&s, dir, NULL), 0);
	/* the dictionary: its newest epoch loaded, within the default bound (4 MiB, and one
	 * retired epoch not yet written at most) */
	assert_true(status_u64(&s, "store.disk.dictionary.epochs") >= 1);
	assert_true(status_u64(&s, "store.disk.dictionary_bytes") <= 8u << 20);
	(void)status_u64(&s, "store.disk.dictionary.epoch");
	after = profile(&s, w.pid, a, b, "disk", "1s");
	ta = totals_of(after);
	assert_totals_equal(&ta, &tb);
	assert_int_equal(e2e_u64(after, "range.from_ms"), e2e_u64(before, "range.from_ms"));
	assert_int_equal(e2e_u64(after, "range.to_ms"), e2e_u64(before, "range.to_ms"));
	assert_int_equal(e2e_u64(after, "range.resolution_s"), 1);
	/* the whole flame graph, node for node */
	assert_true(json_equal(json_object_get(before, "flamegraph"),
			       json_object_get(after, "flamegraph")));
	/* a histogram, bucket for bucket */
	h_after = histogram(&s, "offcpu_us", w.pid, a, b, "disk");
	assert_true(json_equal(h_before, h_after));
	json_decref(h_before);
	json_decref(h_after);
	tl_after = timeline(&s, a, b);
	assert_non_null(tl_after);
	assert_string_equal(json_string_value(json_object_get(tl_after, "source")), "disk");
	assert_string_equal(json_string_value(json_object_get(tl_after, "tier")), "1s");
	assert_true(json_equal(slots(tl_before, "t_ms"), slots(tl_after, "t_ms")));
	assert_true(json_equal(slots(tl_before, "on_cpu_ns"), slots(tl_after, "on_cpu_ns")));
	assert_true(json_equal(slots(tl_before, "samples"), slots(tl_after, "samples")));
	json_array_foreach (slots(tl_before, "off_cpu_ns"), i, v)
		assert_true(json_integer_value(v) <=
			    json_integer_value(json_array_get(slots(tl_after, "off_cpu_ns"), i)));
	/* the heat map of the 1 s tier, too */
	assert_int_equal(e2e_u64(tl_after, "heatmap.columns"),
			 json_array_size(slots(tl_after, "t_ms")));
	json_decref(before);
	json_decref(after);
	json_decref(tl_before);
	json_decref(tl_after);
	assert_int_equal(serve_stop(&s, SIGINT), 0);
	return true;
}

/*
 * The history before a restart is queryable exactly as before: the workload's profile over
 * whole past seconds gives the same totals to the ns, the same flame graph and off-CPU
 * histogram (from memory before, from the 1 s tier after); the timeline's on-CPU time and samples
 * per second are the same (blocked time can only have grown: blocks still running at the first
 * query were reported later).
 */
static void test_restart(void **state)
{
	char dir[PATH_MAX];
	bool done = false;

	(void)state;
	for (int i = 0; i < 3 && !done; i++) {
		char name[32];

		snprintf(name, sizeof(name), "restart%d", i);
		data_dir(dir, sizeof(dir), name);
		done = restart_once(dir);
	}
	assert_true(done);
}

/* ---- kill -9 ---- */

/*
 * SIGKILL to serve's main process (its children go with it): the store opens cleanly after,
 * nothing quarantined, no second missing, and every second up to 2 s before the kill there.
 *
 * Each seal hands the disk every second pending, open ones too (the collector seals 2 s
 * behind the clock; what arrives later is one more row of its window): the loss is what had
 * not reached the HTTP process yet, under 2 s.
 */
static void test_kill9(void **state)
{
	char dir[PATH_MAX];
	struct serve s;
	struct work w;
	int64_t a, kill_ms, kill_s, newest = 0;
	json_t *tl, *v;
	size_t i;

	(void)state;
	data_dir(dir, sizeof(dir), "kill9");
	work_start(&w, "120");
	assert_int_equal(serve_start(&s, dir, NULL), 0);
	a = (now_ms() / 1000 + 2) * 1000;
	assert_true(wait_disk_seconds(&s, 6));
	kill_ms = now_ms();
	kill_s = kill_ms / 1000;
	assert_int_equal(serve_stop(&s, SIGKILL), 128 + SIGKILL);
	assert_true(wait_lock_free(dir));
	assert_int_equal(e2e_http(s.addr, "GET", "/api/status", NULL, NULL, NULL), -1);
	work_stop(&w);

	assert_int_equal(serve_start(&s, dir, NULL), 0);
	assert_int_equal(status_u64(&s, "store.disk.quarantined"), 0);
	assert_int_equal(status_u64(&s, "store.disk.corrupt_buckets"), 0);
	/* from the first second held (a, unless sampling started later) to the kill: no hole,
	 * then nothing (the new serve samples from after the kill on) */
	if (tier_oldest_s(&s, "1s") * 1000 > a)
		a = tier_oldest_s(&s, "1s") * 1000;
	tl = timeline(&s, a, kill_s * 1000);
	assert_non_null(tl);
	assert_string_equal(json_string_value(json_object_get(tl, "source")), "disk");
	json_array_foreach (slots(tl, "samples"), i, v)
		if (json_integer_value(v) > 0)
			newest = json_integer_value(json_array_get(slots(tl, "t_ms"), i)) / 1000;
	json_array_foreach (slots(tl, "samples"), i, v) {
		int64_t t = json_integer_value(json_array_get(slots(tl, "t_ms"), i)) / 1000;

		if (t <= newest && json_integer_value(v) <= 0)
			fail_msg("second %lld holds nothing", (long long)t);
	}
	json_decref(tl);
	print_message("killed at %lld.%03lld: seconds %lld .. %lld held (%lld s lost)\n",
		      (long long)kill_s, (long long)kill_ms % 1000, (long long)a / 1000,
		      (long long)newest, (long long)(kill_s - newest - 1));
	if (SANITIZED) {
		print_message("(sanitized: the writer lags; the loss is not checked)\n");
	} else {
		assert_true(newest >= kill_s - 2);
	}
	assert_int_equal(serve_stop(&s, SIGINT), 0);
}

/* ---- two writers, not writable ---- */

static bool stderr_has(const struct serve *s, const char *text)
{
	char *t = e2e_read_file(s->err, NULL);
	bool has = t && strstr(t, text);

	if (!has)
		fprintf(stderr, "serve's stderr lacks \"%s\":\n%s\n", text, t ? t : "(none)");
	free(t);
	return has;
}

/* A second serve on the same directory exits 75 naming it; the first goes on serving. */
static void test_two_writers(void **state)
{
	char dir[PATH_MAX];
	struct serve s, s2;

	(void)state;
	data_dir(dir, sizeof(dir), "two");
	assert_int_equal(serve_start(&s, dir, NULL), 0);
	assert_int_equal(serve_start(&s2, dir, NULL), 75);
	assert_true(stderr_has(&s2, dir));
	assert_true(stderr_has(&s2, "in use"));
	assert_true(wait_disk_seconds(&s, 2));
	assert_int_equal(status_u64(&s, "store.disk.write_failures"), 0);
	assert_int_equal(serve_stop(&s, SIGINT), 0);
}

/* A directory nobody may write (root's, 0755) and a regular file: 73, naming the path. */
static void test_not_writable(void **state)
{
	char dir[PATH_MAX], file[PATH_MAX], deep[PATH_MAX + 24];
	struct serve s;
	FILE *f;

	(void)state;
	path_in_root(dir, sizeof(dir), "roots");
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(serve_start(&s, dir, NULL), 73);
	assert_true(stderr_has(&s, dir));

	path_in_root(file, sizeof(file), "a-file");
	f = fopen(file, "w");
	assert_non_null(f);
	fputs("not a directory\n", f);
	fclose(f);
	assert_int_equal(serve_start(&s, file, NULL), 73);
	assert_true(stderr_has(&s, file));

	/* One missing level is made (the default's /var/lib/hotcold may not exist yet), two are
	 * not: a mistyped path is refused rather than built. */
	snprintf(deep, sizeof(deep), "%s/missing/twice/data", root);
	assert_int_equal(serve_start(&s, deep, NULL), 73);
	assert_true(stderr_has(&s, deep));
}

/* ---- corruption ---- */

static char *good_db;	  /* a store file written by a clean stop */
static size_t good_len;	  /* its size */
static int64_t good_a_ms; /* a second well inside what it holds */
static pid_t good_pid;	  /* the workload it profiled */

/* Write a store a clean run made: every corruption case starts from a copy of it. */
static void make_good_db(void)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], uri[PATH_MAX + 64];
	struct serve s;
	struct work w;
	sqlite3 *db;
	bool kept = false;

	if (good_db)
		return;
	for (int i = 0; i < 3 && !kept; i++) {
		char name[32];

		snprintf(name, sizeof(name), "good%d", i);
		data_dir(dir, sizeof(dir), name);
		work_start(&w, "120");
		assert_int_equal(serve_start(&s, dir, NULL), 0);
		good_pid = w.pid;
		assert_true(wait_disk_seconds(&s, 7));
		work_stop(&w);
		kept = clean_stop(&s, dir);
	}
	assert_true(kept);
	snprintf(path, sizeof(path), "%s/%s", dir, DB);
	good_db = e2e_read_file(path, &good_len);
	assert_non_null(good_db);
	assert_true(good_len > 8192);
	/* a second well inside what it holds */
	snprintf(uri, sizeof(uri), "file:%s?immutable=1", path);
	assert_int_equal(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL),
			 SQLITE_OK);
	{
		sqlite3_stmt *st;

		assert_int_equal(sqlite3_prepare_v2(db,
						    "SELECT min(t) FROM bucket WHERE tier=0 AND"
						    " store=0",
						    -1, &st, NULL),
				 SQLITE_OK);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		good_a_ms = (sqlite3_column_int64(st, 0) + 2) * 1000;
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
}

/* A data directory for nobody holding bytes as its store file. */
static void plant(const char *dir, const char *bytes, size_t len)
{
	struct passwd *pw = getpwnam("nobody");
	char path[PATH_MAX + 16];
	FILE *f;

	assert_non_null(pw);
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(chown(dir, pw->pw_uid, pw->pw_gid), 0);
	snprintf(path, sizeof(path), "%s/%s", dir, DB);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(bytes, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chown(path, pw->pw_uid, pw->pw_gid), 0);
}

/* Whether DIR/quarantine holds a file (not a WAL) whose bytes are want's. */
static bool quarantined_as(const char *dir, const char *want, size_t len)
{
	char q[PATH_MAX + 16], path[2 * PATH_MAX];
	struct dirent *e;
	bool found = false;
	DIR *dh;

	snprintf(q, sizeof(q), "%s/quarantine", dir);
	dh = opendir(q);
	if (!dh)
		return false;
	while ((e = readdir(dh)) && !found) {
		size_t n;
		char *got;

		if (strncmp(e->d_name, DB ".", strlen(DB) + 1) || strstr(e->d_name, "-wal") ||
		    strstr(e->d_name, "-shm"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", q, e->d_name);
		got = e2e_read_file(path, &n);
		found = got && n == len && !memcmp(got, want, len);
		free(got);
	}
	closedir(dh);
	return found;
}

/* serve on a directory holding bytes: it starts, moves them to quarantine/ as they were, says
 * so naming the file, counts it, and keeps a new store that works. */
static void check_quarantined(const char *name, const char *bytes, size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct serve s;

	data_dir(dir, sizeof(dir), name);
	plant(dir, bytes, len);
	snprintf(path, sizeof(path), "%s/%s", dir, DB);
	assert_int_equal(serve_start(&s, dir, NULL), 0);
	print_message("%s: ", name);
	assert_true(stderr_has(&s, path));
	assert_true(stderr_has(&s, "damaged"));
	snprintf(path, sizeof(path), "%s/quarantine/", dir);
	assert_true(stderr_has(&s, path));
	assert_int_equal(status_u64(&s, "store.disk.quarantined"), 1);
	assert_true(quarantined_as(dir, bytes, len));
	assert_true(wait_disk_seconds(&s, 2));
	assert_int_equal(status_u64(&s, "store.disk.write_failures"), 0);
	assert_int_equal(serve_stop(&s, SIGINT), 0);
	{
		char *t = e2e_read_file(s.err, NULL);

		print_message("%s", t ? t : "");
		free(t);
	}
}

static void test_truncated(void **state)
{
	(void)state;
	make_good_db();
	check_quarantined("truncated", good_db, 3 * 4096);
}

static void test_garbage(void **state)
{
	char *junk;

	(void)state;
	make_good_db();
	junk = malloc(good_len);
	assert_non_null(junk);
	for (size_t i = 0; i < good_len; i++)
		junk[i] = (char)((i * 2654435761u) >> 13);
	check_quarantined("garbage", junk, good_len);
	free(junk);
}

/* Bytes flipped in the b-tree page of the bucket table: SQLite's check finds it. */
static void test_flipped_page(void **state)
{
	char tmp[PATH_MAX + 16], *bad;
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t page = 0, psz = 4096;
	FILE *f;

	(void)state;
	make_good_db();
	/* where the bucket table's root page is */
	snprintf(tmp, sizeof(tmp), "%s/probe.db", root);
	f = fopen(tmp, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(good_db, 1, good_len, f), good_len);
	fclose(f);
	assert_int_equal(sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT rootpage, (SELECT page_size FROM"
					    " pragma_page_size) FROM sqlite_schema WHERE"
					    " name='bucket'",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	page = sqlite3_column_int64(st, 0);
	psz = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	unlink(tmp);
	assert_true(page > 1 && (size_t)(page * psz) <= good_len);
	bad = malloc(good_len);
	assert_non_null(bad);
	memcpy(bad, good_db, good_len);
	/* the page's header: its type and cell count */
	for (int i = 0; i < 8; i++)
		bad[(page - 1) * psz + i] ^= (char)0xa5;
	check_quarantined("flipped", bad, good_len);
	free(bad);
}

/* The plain totals columns of the rows of tier 0, store 0, second t (rowid: that row only). */
static struct totals row_totals(sqlite3 *db, int64_t t, int64_t rowid)
{
	struct totals r = {0};
	sqlite3_stmt *st;

	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT sum(on_cpu_ns), sum(off_cpu_ns),"
					    " sum(runqueue_ns), sum(samples) FROM bucket WHERE"
					    " tier=0 AND store=0 AND t=? AND (?=0 OR rowid=?)",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_int64(st, 1, t);
	sqlite3_bind_int64(st, 2, rowid);
	sqlite3_bind_int64(st, 3, rowid);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	r.on = (uint64_t)sqlite3_column_int64(st, 0);
	r.off = (uint64_t)sqlite3_column_int64(st, 1);
	r.rq = (uint64_t)sqlite3_column_int64(st, 2);
	r.samples = (uint64_t)sqlite3_column_int64(st, 3);
	sqlite3_finalize(st);
	return r;
}

/* Zero 8 bytes in the middle of one 1 s bucket of second t: its rowid and totals columns,
 * and (in *all) the totals columns of every row of that second. */
static int64_t damage_blob(const char *path, int64_t t, struct totals *row, struct totals *all)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	int64_t rowid;
	uint8_t *blob;
	int len;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT rowid, data FROM bucket WHERE tier=0 AND"
					    " store=0 AND t=? ORDER BY length(data) DESC LIMIT 1",
					    -1, &st, NULL),
			 SQLITE_OK);
	sqlite3_bind_int64(st, 1, t);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	rowid = sqlite3_column_int64(st, 0);
	len = sqlite3_column_bytes(st, 1);
	assert_true(len > 40);
	blob = malloc((size_t)len);
	assert_non_null(blob);
	memcpy(blob, sqlite3_column_blob(st, 1), (size_t)len);
	sqlite3_finalize(st);
	memset(blob + len / 2, 0, 8);
	assert_int_equal(
		sqlite3_prepare_v2(db, "UPDATE bucket SET data=? WHERE rowid=?", -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_blob(st, 1, blob, len, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, rowid);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	free(blob);
	*row = row_totals(db, t, rowid);
	*all = row_totals(db, t, 0);
	assert_int_equal(sqlite3_close(db), SQLITE_OK);
	return rowid;
}

/*
 * Bytes zeroed inside one bucket's blob: SQLite's check passes (the page is sound), so the store
 * is kept; a query over that second skips the bucket and counts it: the whole machine's totals
 * of that second are the other rows' (their totals columns say what they hold).
 */
static void test_damaged_blob(void **state)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	struct serve s;
	struct totals row, all, got, a, b, c, whole;
	int64_t t, rowid;

	(void)state;
	make_good_db();
	data_dir(dir, sizeof(dir), "blob");
	plant(dir, good_db, good_len);
	snprintf(path, sizeof(path), "%s/%s", dir, DB);
	t = good_a_ms / 1000 + 1;
	rowid = damage_blob(path, t, &row, &all);
	print_message("zeroed 8 bytes of the 1 s bucket of second %lld (row %lld: on %llu of "
		      "%llu ns)\n",
		      (long long)t, (long long)rowid, (unsigned long long)row.on,
		      (unsigned long long)all.on);
	assert_true(row.samples > 0);

	assert_int_equal(serve_start(&s, dir, NULL), 0);
	assert_int_equal(status_u64(&s, "store.disk.quarantined"), 0);
	got = profile_totals(&s, 0, t * 1000, (t + 1) * 1000, "disk", "1s");
	assert_true(status_u64(&s, "store.disk.corrupt_buckets") >= 1);
	assert_int_equal(got.on, all.on - row.on);
	assert_int_equal(got.off, all.off - row.off);
	assert_int_equal(got.rq, all.rq - row.rq);
	assert_int_equal(got.samples, all.samples - row.samples);
	/* the seconds around it answer whole, and the parts still add up */
	a = profile_totals(&s, good_pid, (t - 1) * 1000, t * 1000, "disk", "1s");
	b = profile_totals(&s, good_pid, t * 1000, (t + 1) * 1000, "disk", "1s");
	c = profile_totals(&s, good_pid, (t + 1) * 1000, (t + 2) * 1000, "disk", "1s");
	whole = profile_totals(&s, good_pid, (t - 1) * 1000, (t + 2) * 1000, "disk", "1s");
	assert_true(a.samples > 0 && c.samples > 0);
	totals_add(&a, &b);
	totals_add(&a, &c);
	assert_totals_equal(&a, &whole);
	assert_int_equal(serve_stop(&s, SIGINT), 0);
}

/* ---- a full disk ---- */

static char tmpfs_dir[PATH_MAX];

static int tmpfs_teardown(void **state)
{
	cleanup(state);
	if (tmpfs_dir[0]) {
		if (umount2(tmpfs_dir, MNT_DETACH))
			fprintf(stderr, "umount %s: %s\n", tmpfs_dir, strerror(errno));
		tmpfs_dir[0] = 0;
	}
	return 0;
}

/* Fill the file system of dir: a file of everything left. Its path in out. */
static void fill_fs(const char *dir, char *out, size_t len)
{
	static char chunk[65536];
	FILE *f;

	snprintf(out, len, "%s/filler", dir);
	f = fopen(out, "wb");
	assert_non_null(f);
	setvbuf(f, NULL, _IONBF, 0);
	memset(chunk, 0x5a, sizeof(chunk));
	while (fwrite(chunk, 1, sizeof(chunk), f) == sizeof(chunk))
		;
	while (fwrite(chunk, 1, 512, f) == 512)
		;
	fclose(f);
}

/*
 * A full disk: serve goes on, the newest seconds from memory; failed writes and the seconds
 * they held are counted; once space returns, writes resume and failures stop.
 */
static void test_disk_full(void **state)
{
	char dir[PATH_MAX + 8], filler[PATH_MAX + 16];
	struct serve s;
	struct work w;
	uint64_t fails = 0, dropped = 0, writes, fails_after;
	int64_t t;

	(void)state;
	path_in_root(tmpfs_dir, sizeof(tmpfs_dir), "tmpfs");
	assert_int_equal(mkdir(tmpfs_dir, 0711), 0);
	if (mount("tmpfs", tmpfs_dir, "tmpfs", 0, "size=24m,mode=0711")) {
		int err = errno;

		tmpfs_dir[0] = 0;
		hc_skip("cannot mount a tmpfs: %s", strerror(err));
	}
	snprintf(dir, sizeof(dir), "%s/data", tmpfs_dir);
	work_start(&w, "120");
	assert_int_equal(serve_start(&s, dir, NULL), 0);
	/* long enough that the range asked below (5 s to 3 s ago) starts after serve's first
	 * second: memory holds it whole */
	assert_true(wait_disk_seconds(&s, 8));
	fill_fs(tmpfs_dir, filler, sizeof(filler));
	for (int i = 0; i < 150 * SLOW && !(fails >= 2 && dropped >= 2); i++) { /* 30 s */
		json_t *j = status(&s);

		fails = e2e_u64(j, "store.disk.write_failures");
		dropped = e2e_u64(j, "store.disk.dropped_s.write_failed");
		json_decref(j);
		usleep(200000);
	}
	print_message("disk full: %llu writes failed, %llu s dropped\n", (unsigned long long)fails,
		      (unsigned long long)dropped);
	assert_true(fails >= 2);
	assert_true(dropped >= 2);
	/* the newest seconds answer from memory */
	t = (now_ms() / 1000 - 3) * 1000;
	{
		struct totals m = profile_totals(&s, w.pid, t - 2000, t, "memory", "1s");

		assert_true(m.samples > 0);
	}
	/* space again */
	assert_int_equal(unlink(filler), 0);
	writes = status_u64(&s, "store.disk.writes");
	for (int i = 0; i < 150 * SLOW; i++) { /* 30 s */
		if (status_u64(&s, "store.disk.writes") >= writes + 3)
			break;
		usleep(200000);
	}
	fails = status_u64(&s, "store.disk.write_failures");
	assert_true(status_u64(&s, "store.disk.writes") >= writes + 3);
	usleep(3000000);
	fails_after = status_u64(&s, "store.disk.write_failures");
	print_message("space back: writes %llu -> %llu, failures %llu -> %llu\n",
		      (unsigned long long)writes,
		      (unsigned long long)status_u64(&s, "store.disk.writes"),
		      (unsigned long long)fails, (unsigned long long)fails_after);
	assert_int_equal(fails_after, fails);
	work_stop(&w);
	assert_int_equal(serve_stop(&s, SIGINT), 0);
	assert_true(wait_lock_free(dir));
}

/* ---- ranges across tier boundaries ---- */

/* The tier a range starting at from_s comes from when the 1 s tier starts at first. */
static const char *tier_from(int64_t from_s, int64_t first)
{
	return from_s >= first ? "1s" : from_s >= first / 10 * 10 ? "10s" : "1m";
}

/*
 * After a restart (memory new), ranges of the first run come from disk, each from the finest
 * tier that reaches back to its start: one starting at the 1 min window before the first second
 * from the 1 min tier, one at the 10 s window before it from the 10 s tier, one from the first
 * second on from the 1 s tier. The totals of a range equal the sum of its parts' totals, to the
 * ns, whatever tier answers each part.
 */
static bool tier_identity_once(const char *dir)
{
	struct serve s;
	struct work w;
	int64_t first, w0, m0, end, split;
	struct totals whole2, whole1, whole0, p1, p0, q0a, q0b;

	work_start(&w, "120");
	assert_int_equal(serve_start(&s, dir, NULL), 0);
	assert_true(wait_disk_seconds(&s, 2));
	first = tier_oldest_s(&s, "1s");
	assert_true(first > 0);
	w0 = first / 10 * 10;
	m0 = first / 60 * 60;
	print_message("first second %lld (10 s window %lld, 1 min window %lld)\n", (long long)first,
		      (long long)w0, (long long)m0);
	/* two whole 10 s windows after the first */
	sleep_until_ms((w0 + 30) * 1000 + 2500);
	work_stop(&w);
	if (!clean_stop(&s, dir))
		return false;

	assert_int_equal(serve_start(&s, dir, NULL), 0);
	/* the coarser tiers are built from the 1 s one (30 s behind it while serve runs, and
	 * all of it when serve stops) */
	assert_int_equal(tier_oldest_s(&s, "10s"), w0);
	assert_int_equal(tier_oldest_s(&s, "1m"), m0);
	end = (now_ms() / 1000 + 3600) * 1000;
	whole2 = profile_totals(&s, w.pid, m0 * 1000, end, "disk", tier_from(m0, first));
	whole1 = profile_totals(&s, w.pid, w0 * 1000, end, "disk", tier_from(w0, first));
	whole0 = profile_totals(&s, w.pid, first * 1000, end, "disk", "1s");
	assert_true(whole0.samples > 0);
	assert_totals_equal(&whole2, &whole0);
	assert_totals_equal(&whole1, &whole0);
	/* a whole 10 s window from the 10 s tier, the rest from the 1 s tier */
	p1 = profile_totals(&s, w.pid, w0 * 1000, (w0 + 10) * 1000, "disk", tier_from(w0, first));
	p0 = profile_totals(&s, w.pid, (w0 + 10) * 1000, end, "disk", "1s");
	assert_true(p1.samples > 0 && p0.samples > 0);
	totals_add(&p1, &p0);
	assert_totals_equal(&p1, &whole0);
	/* the 1 s tier split anywhere */
	split = first + 7;
	q0a = profile_totals(&s, w.pid, first * 1000, split * 1000, "disk", "1s");
	q0b = profile_totals(&s, w.pid, split * 1000, end, "disk", "1s");
	totals_add(&q0a, &q0b);
	assert_totals_equal(&q0a, &whole0);
	/* the 10 s tier's answer says its resolution */
	{
		json_t *j = profile(&s, w.pid, w0 * 1000, (w0 + 20) * 1000, "disk",
				    tier_from(w0, first));

		assert_int_equal(e2e_u64(j, "range.resolution_s"), w0 < first ? 10 : 1);
		assert_int_equal(e2e_u64(j, "range.from_ms"), (uint64_t)w0 * 1000);
		assert_int_equal(e2e_u64(j, "range.to_ms"), (uint64_t)(w0 + 20) * 1000);
		json_decref(j);
	}
	assert_int_equal(serve_stop(&s, SIGINT), 0);
	return true;
}

static void test_tier_identity(void **state)
{
	char dir[PATH_MAX];
	bool done = false;

	(void)state;
	for (int i = 0; i < 3 && !done; i++) {
		char name[32];

		snprintf(name, sizeof(name), "tiers%d", i);
		data_dir(dir, sizeof(dir), name);
		done = tier_identity_once(dir);
	}
	assert_true(done);
}

static int group_setup(void **state)
{
	(void)state;
	root = e2e_tmpdir();
	if (!root || chmod(root, 0711))
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	tmpfs_teardown(state);
	free(good_db);
	e2e_remove_tmpdir(root);
	free(root);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_restart, cleanup),
		cmocka_unit_test_teardown(test_kill9, cleanup),
		cmocka_unit_test_teardown(test_two_writers, cleanup),
		cmocka_unit_test_teardown(test_not_writable, cleanup),
		cmocka_unit_test_teardown(test_truncated, cleanup),
		cmocka_unit_test_teardown(test_garbage, cleanup),
		cmocka_unit_test_teardown(test_flipped_page, cleanup),
		cmocka_unit_test_teardown(test_damaged_blob, cleanup),
		cmocka_unit_test_teardown(test_disk_full, tmpfs_teardown),
		cmocka_unit_test_teardown(test_tier_identity, cleanup),
	};

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_WORKLOAD");
	return cmocka_run_group_tests_name("serve-store", tests, group_setup, group_teardown) ? 1
											      : 0;
}
