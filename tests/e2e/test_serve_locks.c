// SPDX-License-Identifier: GPL-2.0-only
/*
 * hotcold serve --locks end to end, as root with real BPF and the real HTTP server on loopback,
 * against hc-workload locks (four hc-locker threads churning mmap/munmap: their process's
 * mmap_lock, and spinlocks below it):
 *  - GET /api/locks for the seconds the workload ran: kinds with counts, spin told from block
 *    (blocked rwsem:W waits on mmap_lock, spinlocks that never block), by_kind adding up to
 *    events and wait_ns, maxima, lock_wait_ns holding every wait of each kind, the waiters'
 *    flame graph with the workload's waits under hc_lock_thread ending in lock nodes, its
 *    contentions equal to the events, no drops, no kernel address;
 *  - a shorter range gives less; max_nodes prunes the waiters' tree, totals kept;
 *  - GET /api/profile keeps the main flame graph's lock nodes (kind "lock", blocked time);
 *  - /api/histograms/lock_wait_ns, /api/status's locks and /metrics agree;
 *  - without --locks: 409 saying so, no lock_wait_ns; --locks with --no-offcpu: usage error;
 *  - SIGTERM releases every BPF program, the lock programs included.
 */
#include <ctype.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "bpf_ids.h"
#include "e2e.h"

static const char *hotcold, *workload;

struct serve {
	pid_t pid;
	int out_fd;
	char dir[256];
	char err[512];
	char addr[64];
};

static struct serve srv; /* serve --locks, shared by the API tests */
static pid_t work;	 /* hc-workload locks, ended before the tests look */
static int64_t work_from_ms, work_to_ms;
static char range_q[96]; /* "from=..&to=..": the seconds around the workload */

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

/* Start serve (extra: one more option or NULL) on a free loopback port; waits for its URL. */
static bool serve_start(struct serve *s, const char *extra)
{
	char *argv[] = {(char *)hotcold, "serve",	"--data-dir",  "none", "-F",	      "99",
			"--listen",	 "127.0.0.1:0", "--retention", "5m",   (char *)extra, NULL};
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
			break;
		usleep(50000);
	}
	dump_stderr(s->err);
	return false;
}

static void serve_stop(struct serve *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		e2e_wait(s->pid, 5000);
		s->pid = 0;
	}
	close(s->out_fd);
	e2e_remove_tmpdir(s->dir);
}

static json_t *get_json_from(const struct serve *s, const char *path, int want_status)
{
	char *body = NULL;
	int st = e2e_http(s->addr, "GET", path, NULL, &body, NULL);
	json_t *j;

	if (st != want_status)
		fprintf(stderr, "GET %s: status %d, wanted %d: %.300s\n", path, st, want_status,
			body ? body : "");
	assert_int_equal(st, want_status);
	j = json_loads(body, 0, NULL);
	free(body);
	assert_non_null(j);
	return j;
}

static json_t *get_json(const char *fmt, ...)
{
	char path[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	return get_json_from(&srv, path, 200);
}

static int group_setup(void **state)
{
	char *argv[] = {(char *)workload, "locks", "6", NULL};
	int fd;

	(void)state;
	if (!serve_start(&srv, "--locks"))
		return -1;
	sleep(1);
	work_from_ms = now_ms();
	work = e2e_spawn(argv, &fd, NULL);
	if (work <= 0)
		return -1;
	if (e2e_read_pid(fd) != work) /* its first line (a closed pipe would kill it) */
		return -1;
	if (e2e_wait(work, 30000) != 0)
		return -1;
	close(fd);
	work_to_ms = now_ms();
	/* the seconds are sealed 2 s after they end; contentions ending then are in */
	sleep(4);
	snprintf(range_q, sizeof(range_q), "from=%lld&to=%lld", (long long)(work_from_ms - 1000),
		 (long long)(work_to_ms + 1000));
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	serve_stop(&srv);
	return 0;
}

static json_t *by_kind(json_t *locks, const char *kind, bool spin)
{
	json_t *k;
	size_t i;

	json_array_foreach (json_object_get(locks, "by_kind"), i, k)
		if (!strcmp(json_string_value(json_object_get(k, "kind")), kind) &&
		    json_is_true(json_object_get(k, "spin")) == spin)
			return k;
	return NULL;
}

/* Waits counted in one series of a lock_wait_ns histogram. */
static uint64_t hist_count(json_t *h, const char *key)
{
	json_t *s, *b;
	uint64_t sum = 0;
	size_t i, k;

	json_array_foreach (json_object_get(h, "series"), i, s) {
		if (strcmp(json_string_value(json_object_get(s, "key")), key))
			continue;
		json_array_foreach (json_object_get(s, "buckets"), k, b)
			sum += (uint64_t)json_integer_value(json_object_get(b, "count"));
	}
	return sum;
}

struct lock_sums {
	uint64_t all;	   /* value at every lock node */
	uint64_t under_fn; /* of it, below a user frame hc_lock_thread */
	uint64_t mmap_off; /* blocked ns at "rwsem:W mmap_lock" nodes */
	uint64_t spin_off; /* blocked ns at spinlock nodes: must be 0 */
	uint64_t on, off;  /* at every lock node */
	uint64_t nodes;
};

static void walk_locks(json_t *n, bool below_fn, struct lock_sums *s)
{
	const char *kind = json_string_value(json_object_get(n, "kind"));
	const char *nm = json_string_value(json_object_get(n, "name"));
	json_t *c;
	size_t i;

	if (!kind || !nm)
		return;
	if (!strcmp(kind, "user") && !strcmp(nm, "hc_lock_thread"))
		below_fn = true;
	if (!strcmp(kind, "lock")) {
		uint64_t v = e2e_field(n, "value");

		assert_null(json_object_get(n, "module"));
		s->nodes++;
		s->all += v;
		s->on += e2e_field(n, "on_cpu_ns");
		s->off += e2e_field(n, "off_cpu_ns");
		if (below_fn)
			s->under_fn += v;
		if (!strcmp(nm, "rwsem:W mmap_lock"))
			s->mmap_off += e2e_field(n, "off_cpu_ns");
		if (!strncmp(nm, "spinlock", 8))
			s->spin_off += e2e_field(n, "off_cpu_ns");
	}
	json_array_foreach (json_object_get(n, "children"), i, c)
		walk_locks(c, below_fn, s);
}

static size_t count_nodes(json_t *n)
{
	json_t *c;
	size_t i, sum = 1;

	json_array_foreach (json_object_get(n, "children"), i, c)
		sum += count_nodes(c);
	return sum;
}

/* A raw kernel address, as test_serve.c looks for one: 16 hex digits in the kernel half. */
static const char *kernel_address_in(const char *body, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t hex = 0;

		while (i + hex < len && isxdigit((unsigned char)body[i + hex]))
			hex++;
		if (hex == 16 && !strncasecmp(body + i, "ffff", 4) &&
		    strchr("89abcdefABCDEF", body[i + 4]))
			return body + i;
		i += hex ? hex : 1;
	}
	return NULL;
}

static void test_locks_range(void **state)
{
	json_t *l, *k, *h, *proc, *fg;
	uint64_t events, wait, count = 0, total = 0, spun = 0;
	struct lock_sums ls = {0}, ps = {0};
	size_t i;

	(void)state;
	l = get_json("/api/locks?%s", range_q);
	events = e2e_u64(l, "events");
	wait = e2e_u64(l, "wait_ns");
	h = json_object_get(json_object_get(l, "histograms"), "lock_wait_ns");
	assert_string_equal(json_string_value(json_object_get(h, "unit")), "ns");
	json_array_foreach (json_object_get(l, "by_kind"), i, k) {
		char key[64];

		print_message("  %-10s %-5s %6llu waits, %9.3f ms, max %8.3f ms\n",
			      json_string_value(json_object_get(k, "kind")),
			      json_is_true(json_object_get(k, "spin")) ? "spin" : "block",
			      (unsigned long long)e2e_field(k, "count"),
			      (double)e2e_field(k, "total_ns") / 1e6,
			      (double)e2e_field(k, "max_ns") / 1e6);
		count += e2e_field(k, "count");
		total += e2e_field(k, "total_ns");
		if (json_is_true(json_object_get(k, "spin")))
			spun += e2e_field(k, "count");
		assert_true(e2e_field(k, "count") > 0);
		assert_true(e2e_field(k, "max_ns") <= e2e_field(k, "total_ns"));
		assert_true(e2e_field(k, "max_ns") * e2e_field(k, "count") >=
			    e2e_field(k, "total_ns"));
		/* lock_wait_ns holds every wait of the kind, spin and block apart */
		snprintf(key, sizeof(key), "%s %s", json_string_value(json_object_get(k, "kind")),
			 json_is_true(json_object_get(k, "spin")) ? "spin" : "block");
		assert_int_equal(hist_count(h, key), e2e_field(k, "count"));
	}
	print_message("%llu contentions, %.3f ms of waits in %lld..%lld ms; dropped: ringbuf_full "
		      "%llu, unmatched %llu, evicted_early_s %llu\n",
		      (unsigned long long)events, (double)wait / 1e6,
		      (long long)e2e_u64(l, "range.from_ms"), (long long)e2e_u64(l, "range.to_ms"),
		      (unsigned long long)e2e_u64(l, "dropped.ringbuf_full"),
		      (unsigned long long)e2e_u64(l, "dropped.unmatched"),
		      (unsigned long long)e2e_u64(l, "dropped.evicted_early_s"));
	assert_int_equal(count, events);
	assert_int_equal(total, wait);
	assert_true(e2e_u64(l, "range.from_ms") <= (uint64_t)work_from_ms);
	assert_true(e2e_u64(l, "range.to_ms") >= (uint64_t)work_to_ms);
	/* writers of the mmap_lock sleep while a populate reads it: hundreds a second */
	k = by_kind(l, "rwsem:W", false);
	assert_non_null(k);
	assert_true(e2e_field(k, "count") > 100);
	/* spun and blocked told apart: writers that spun before they slept, or got the lock */
	assert_true(spun > 0);
	/* A spinlock waiter never sleeps. Whether the workload's page-table spinlocks are
	 * contended at all depends on the kernel (none on 6.18's per-VMA locking, in 8k
	 * contentions; earlier kernels showed some): their absence is no failure. */
	assert_null(by_kind(l, "spinlock", false));
	assert_int_equal(e2e_u64(l, "dropped.ringbuf_full"), 0);
	assert_int_equal(e2e_u64(l, "dropped.evicted_early_s"), 0);
	assert_int_equal(e2e_u64(l, "dropped.store_error"), 0);

	/* The waiters' flame graph: every contention once, spin as on-CPU, block as off-CPU;
	 * the workload's under hc_lock_thread, ending in lock nodes. */
	fg = json_object_get(l, "flamegraph");
	assert_int_equal(e2e_field(fg, "samples"), events);
	assert_int_equal(e2e_field(fg, "value"), wait);
	walk_locks(fg, false, &ls);
	assert_int_equal(ls.all, wait);
	assert_int_equal(ls.spin_off, 0);
	proc = e2e_process_node(l, (uint32_t)work);
	assert_non_null(proc);
	walk_locks(proc, false, &ps);
	print_message("waiters: %llu lock nodes, %.3f ms; the workload's %.3f ms, %.1f %% under "
		      "hc_lock_thread, rwsem:W mmap_lock %.3f ms blocked\n",
		      (unsigned long long)ls.nodes, (double)ls.all / 1e6, (double)ps.all / 1e6,
		      100.0 * (double)ps.under_fn / (double)(ps.all + !ps.all),
		      (double)ps.mmap_off / 1e6);
	assert_int_equal(ps.all, e2e_field(proc, "value"));
	assert_true(ps.under_fn >= ps.all * 9 / 10);
	assert_true(ps.mmap_off > 0);
	{
		char *body = NULL;
		size_t len;
		const char *hit;
		char path[160];

		snprintf(path, sizeof(path), "/api/locks?%s", range_q);
		assert_int_equal(e2e_http(srv.addr, "GET", path, NULL, &body, &len), 200);
		hit = kernel_address_in(body, len);
		if (hit)
			fail_msg("GET /api/locks: a kernel address? ...%.40s", hit);
		free(body);
	}

	/* A second of it holds less, and pruning keeps the totals. */
	{
		int64_t mid = (work_from_ms + work_to_ms) / 2 / 1000 * 1000;
		json_t *one = get_json("/api/locks?from=%lld&to=%lld", (long long)mid,
				       (long long)mid + 1000);
		json_t *pr = get_json("/api/locks?%s&max_nodes=20", range_q);

		assert_true(e2e_u64(one, "events") > 0);
		assert_true(e2e_u64(one, "events") < events);
		assert_int_equal(e2e_u64(one, "range.to_ms") - e2e_u64(one, "range.from_ms"), 1000);
		assert_int_equal(count_nodes(json_object_get(pr, "flamegraph")), 20);
		assert_true(e2e_u64(pr, "range.pruned.nodes") > 0);
		assert_int_equal(e2e_u64(pr, "flamegraph.samples"), events);
		assert_int_equal(e2e_u64(pr, "events"), events);
		json_decref(one);
		json_decref(pr);
	}
	json_decref(l);
}

/* The main flame graph's lock nodes, lock_wait_ns in the other routes, status and metrics. */
static void test_locks_elsewhere(void **state)
{
	json_t *p, *l, *h, *proc, *names, *st, *hs;
	struct lock_sums ms = {0};
	char *body = NULL;
	bool listed = false;
	size_t i;

	(void)state;
	l = get_json("/api/locks?%s", range_q);
	/* blocked time of the workload that was a lock wait ends in a lock node named by kind */
	p = get_json("/api/profile?%s&pid=%d", range_q, (int)work);
	proc = e2e_process_node(p, (uint32_t)work);
	assert_non_null(proc);
	walk_locks(proc, false, &ms);
	print_message("main flame graph: %llu lock nodes, %.3f ms blocked at them of %.3f ms "
		      "blocked in the workload\n",
		      (unsigned long long)ms.nodes, (double)ms.off / 1e6,
		      (double)e2e_field(proc, "off_cpu_ns") / 1e6);
	assert_true(ms.nodes > 0);
	assert_true(ms.off > 0);
	assert_int_equal(ms.on, 0);
	assert_true(ms.off <= e2e_field(proc, "off_cpu_ns"));
	assert_true(e2e_sum_named(proc, "lock", "rwsem:W", "off_cpu_ns") > 0);
	/* and lock_wait_ns among its histograms, as record writes it */
	hs = json_object_get(json_object_get(p, "histograms"), "lock_wait_ns");
	assert_non_null(hs);
	json_decref(p);

	names = get_json("/api/histograms");
	json_array_foreach (json_object_get(names, "histograms"), i, h)
		listed |= !strcmp(json_string_value(h), "lock_wait_ns");
	assert_true(listed);
	json_decref(names);
	h = get_json("/api/histograms/lock_wait_ns?%s", range_q);
	/* the route says its range and source too (docs/api.md); the histogram is the rest */
	assert_non_null(json_object_get(h, "range"));
	json_object_del(h, "range");
	assert_true(
		json_equal(h, json_object_get(json_object_get(l, "histograms"), "lock_wait_ns")));
	json_decref(h);

	st = get_json("/api/status");
	assert_true(json_is_true(json_object_get(json_object_get(st, "locks"), "enabled")));
	assert_true(e2e_u64(st, "locks.events") >= e2e_u64(l, "events"));
	assert_true(e2e_u64(st, "locks.store.bytes") > 0);
	/* an eighth of --max-store's default 10 MiB */
	assert_int_equal(e2e_u64(st, "locks.store.max_bytes"), (10u << 20) / 8);
	assert_true(e2e_u64(st, "locks.store.bytes") <= e2e_u64(st, "locks.store.max_bytes"));
	/* memory.store_bytes: both stores (one answer, one read lock) */
	assert_int_equal(e2e_u64(st, "memory.store_bytes"),
			 e2e_u64(st, "store.bytes") + e2e_u64(st, "locks.store.bytes"));
	print_message("lock store: %llu bytes for %llu s, %llu trie nodes\n",
		      (unsigned long long)e2e_u64(st, "locks.store.bytes"),
		      (unsigned long long)e2e_u64(st, "locks.store.seconds"),
		      (unsigned long long)e2e_u64(st, "locks.store.trie_nodes"));
	json_decref(st);
	assert_int_equal(e2e_http(srv.addr, "GET", "/metrics", NULL, &body, NULL), 200);
	assert_non_null(strstr(body, "\nhotcold_lock_contentions_total "));
	assert_non_null(strstr(body, "\nhotcold_lock_wait_seconds_total "));
	free(body);
	json_decref(l);
}

/* BPF programs of ours loaded anywhere (bpftool, names start with hc_); -1: no bpftool. */
/* The BPF programs serve (pid and its children, the server and the worker) holds, by id:
 * other captures on the machine are not counted. */
static void serve_programs(pid_t pid, struct bpf_ids *ids)
{
	char path[64], *text, *p, *end;

	ids->n = 0;
	bpf_ids__add_pid(ids, pid);
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	text = e2e_read_file(path, NULL);
	for (p = text; p && *p; p = end) {
		pid_t c = (pid_t)strtol(p, &end, 10);

		if (end == p)
			break;
		bpf_ids__add_pid(ids, c);
	}
	free(text);
}

/* How many of ids are named prefix*. */
static int named(const struct bpf_ids *ids, const char *prefix)
{
	int n = 0;

	for (int i = 0; i < ids->n; i++)
		n += !strncmp(ids->name[i], prefix, strlen(prefix));
	return n;
}

/* SIGTERM to serve --locks releases the lock programs with the rest; without --locks they
 * are not loaded and asking says tracking is off; --locks needs off-CPU tracking. */
static void test_locks_stop_and_off(void **state)
{
	struct serve s = {0};
	char *dir = e2e_tmpdir(), err[600], *text, *body = NULL;
	struct bpf_ids mine;
	json_t *j, *h;
	const char *why;
	size_t i;
	int rc;

	(void)state;
	/* the shared serve --locks: its lock programs are loaded, SIGTERM ends it all (the
	 * kernel frees programs shortly after their last reference; 30 s waits are hang
	 * guards, not latency bounds) */
	serve_programs(srv.pid, &mine);
	assert_true(named(&mine, "hc_lock_") >= 2);
	kill(srv.pid, SIGTERM);
	rc = e2e_wait(srv.pid, 30000);
	srv.pid = 0;
	assert_int_equal(rc, 0);
	for (int k = 0; k < 1500 && bpf_ids__loaded(&mine) != 0; k++)
		usleep(20000);
	assert_int_equal(bpf_ids__loaded(&mine), 0);

	assert_true(serve_start(&s, NULL));
	sleep(2);
	serve_programs(s.pid, &mine);
	assert_true(mine.n > 0);
	assert_int_equal(named(&mine, "hc_lock_"), 0);
	j = get_json_from(&s, "/api/locks", 409);
	why = json_string_value(json_object_get(j, "error"));
	assert_non_null(why);
	assert_non_null(strstr(why, "--locks"));
	json_decref(j);
	j = get_json_from(&s, "/api/histograms/lock_wait_ns", 409);
	json_decref(j);
	j = get_json_from(&s, "/api/histograms", 200);
	json_array_foreach (json_object_get(j, "histograms"), i, h)
		assert_string_not_equal(json_string_value(h), "lock_wait_ns");
	json_decref(j);
	j = get_json_from(&s, "/api/status", 200);
	assert_true(json_is_false(json_object_get(json_object_get(j, "locks"), "enabled")));
	json_decref(j);
	assert_int_equal(e2e_http(s.addr, "GET", "/metrics", NULL, &body, NULL), 200);
	assert_null(strstr(body, "hotcold_lock_"));
	free(body);
	serve_stop(&s);

	{
		char *argv[] = {(char *)hotcold, "serve",    "--data-dir",  "none", "--locks",
				"--no-offcpu",	 "--listen", "127.0.0.1:0", NULL};

		snprintf(err, sizeof(err), "%s/stderr", dir);
		rc = e2e_run(argv, err, 10000);
		text = e2e_read_file(err, NULL);
		assert_int_equal(rc, 64);
		assert_non_null(text);
		assert_non_null(strstr(text, "--locks"));
		free(text);
		unlink(err);
		rmdir(dir);
		free(dir);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_locks_range),
		cmocka_unit_test(test_locks_elsewhere),
		cmocka_unit_test(test_locks_stop_and_off),
	};

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_WORKLOAD");
	return cmocka_run_group_tests_name("serve-locks", tests, group_setup, group_teardown);
}
