// SPDX-License-Identifier: GPL-2.0-only
/*
 * record --locks against a workload of our own whose four threads contend on their process's
 * mmap_lock (hc-workload locks: mmap populated, munmap, over and over), with real BPF on
 * lock:contention_begin / lock:contention_end:
 *  - kinds: rwsem:W waits that blocked, named mmap_lock (recognised in BPF), and waits that
 *    stayed on the CPU; by_kind adds up to events and wait_ns; the lock_wait_ns histogram
 *    holds as many waits per kind as by_kind;
 *  - spin and block told apart: spinlock waits never count blocked time, the rwsem:W
 *    mmap_lock waits do;
 *  - waits land under the workload's function (hc_lock_thread) in the waiters' flame graph;
 *  - the main flame graph marks the blocked time that was a lock wait with lock nodes;
 *  - report --hist lock_wait_ns prints it DTrace style, folded stacks carry "[lock KIND]";
 *    without --locks there is no section.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"

static const char *hotcold, *workload;
static char *dir;
static char out_path[600], err_path[600], hist_path[600];

static int setup(void **state)
{
	(void)state;
	dir = e2e_tmpdir();
	snprintf(out_path, sizeof(out_path), "%s/out.json", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	snprintf(hist_path, sizeof(hist_path), "%s/hist.txt", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	e2e_remove_tmpdir(dir);
	free(dir);
	return 0;
}

/* Record `hc-workload locks` for 3 s (-p its pid) with the extra flags (NULL-ended). */
static json_t *record(pid_t *pid, ...)
{
	char *argv[32] = {(char *)hotcold, "record", "-d", "3s", "-o", out_path};
	char *wargv[] = {(char *)workload, "locks", "6", NULL};
	int n = 6;
	va_list ap;

	va_start(ap, pid);
	for (char *a; (a = va_arg(ap, char *)) && n < 31;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	assert_int_equal(e2e_record_pid(wargv, 0, argv, err_path, pid), 0);
	return e2e_load_json(out_path);
}

struct lock_sums {
	uint64_t value, on, off; /* of the lock nodes named `name` (prefix) */
	uint64_t spin_off;	 /* blocked ns at lock nodes of spinlocks: must be 0 */
	uint64_t under_fn;	 /* value at lock nodes below a user frame named fn */
	uint64_t all;		 /* value at every lock node */
};

static void walk_locks(json_t *n, const char *name, const char *fn, bool below_fn,
		       struct lock_sums *s)
{
	const char *kind = json_string_value(json_object_get(n, "kind"));
	const char *nm = json_string_value(json_object_get(n, "name"));
	json_t *c;
	size_t i;

	if (!kind || !nm)
		return;
	if (!strcmp(kind, "user") && !strcmp(nm, fn))
		below_fn = true;
	if (!strcmp(kind, "lock")) {
		uint64_t v = e2e_field(n, "value");

		s->all += v;
		if (below_fn)
			s->under_fn += v;
		if (!strncmp(nm, name, strlen(name))) {
			s->value += v;
			s->on += e2e_field(n, "on_cpu_ns");
			s->off += e2e_field(n, "off_cpu_ns");
		}
		if (!strncmp(nm, "spinlock", 8))
			s->spin_off += e2e_field(n, "off_cpu_ns");
	}
	json_array_foreach (json_object_get(n, "children"), i, c)
		walk_locks(c, name, fn, below_fn, s);
}

static void check_folded(void);

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

static uint64_t hist_count(json_t *j, const char *key)
{
	json_t *h = json_object_get(json_object_get(j, "histograms"), "lock_wait_ns"), *s, *b;
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

static void test_locks(void **state)
{
	struct lock_sums ls = {0}, ms = {0};
	uint64_t events, wait, count = 0, total = 0, spun = 0;
	json_t *j, *locks, *k, *wblock, *proc;
	pid_t pid;
	size_t i;

	(void)state;
	j = record(&pid, "--locks", NULL);
	assert_non_null(j);
	locks = json_object_get(j, "locks");
	assert_non_null(locks);
	events = e2e_u64(j, "locks.events");
	wait = e2e_u64(j, "locks.wait_ns");
	json_array_foreach (json_object_get(locks, "by_kind"), i, k) {
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
		assert_true(e2e_field(k, "max_ns") <= e2e_field(k, "total_ns"));
		/* the histogram holds every wait of the kind */
		{
			char key[64];

			snprintf(key, sizeof(key), "%s %s",
				 json_string_value(json_object_get(k, "kind")),
				 json_is_true(json_object_get(k, "spin")) ? "spin" : "block");
			assert_int_equal(hist_count(j, key), e2e_field(k, "count"));
		}
	}
	print_message("%llu contentions, %.3f ms of waits; ringbuf_full %llu, unmatched %llu\n",
		      (unsigned long long)events, (double)wait / 1e6,
		      (unsigned long long)e2e_u64(j, "locks.dropped.ringbuf_full"),
		      (unsigned long long)e2e_u64(j, "locks.dropped.unmatched"));
	assert_int_equal(count, events);
	assert_int_equal(total, wait);
	/* Writers of the mmap_lock sleep while a populate reads it: hundreds a second. */
	wblock = by_kind(locks, "rwsem:W", false);
	assert_non_null(wblock);
	assert_true(e2e_field(wblock, "count") > 100);
	assert_true(spun > 0);
	assert_int_equal(e2e_u64(j, "locks.dropped.ringbuf_full"), 0);

	/* The waiters' flame graph: the workload's process, its waits under hc_lock_thread. */
	proc = e2e_process_node(locks, (uint32_t)pid);
	assert_non_null(proc);
	walk_locks(proc, "rwsem:W mmap_lock", "hc_lock_thread", false, &ls);
	print_message("waiters: %.3f ms at lock nodes, %.1f %% under hc_lock_thread; rwsem:W "
		      "mmap_lock %.3f ms blocked, %.3f ms on CPU; spinlocks blocked %llu ns\n",
		      (double)ls.all / 1e6,
		      100.0 * (double)ls.under_fn / (double)(ls.all + !ls.all),
		      (double)ls.off / 1e6, (double)ls.on / 1e6, (unsigned long long)ls.spin_off);
	assert_true(ls.all > 0);
	assert_int_equal(ls.all, e2e_field(proc, "value"));
	assert_true(ls.under_fn >= ls.all * 9 / 10);
	assert_true(ls.off > 0);
	assert_int_equal(ls.spin_off, 0);
	/* samples counts contentions in this tree */
	assert_int_equal(e2e_u64(j, "locks.flamegraph.samples"), events);

	/* The main flame graph: the workload's blocked time that was a lock wait is marked. */
	proc = e2e_process_node(j, (uint32_t)pid);
	assert_non_null(proc);
	walk_locks(proc, "rwsem:W", "hc_lock_thread", false, &ms);
	print_message("main flame graph: %.3f ms blocked at rwsem:W lock nodes of %.3f ms "
		      "blocked in the process\n",
		      (double)ms.off / 1e6, (double)e2e_field(proc, "off_cpu_ns") / 1e6);
	assert_true(ms.off > 0);
	assert_true(ms.off <= e2e_field(proc, "off_cpu_ns"));
	assert_int_equal(ms.on, 0);
	json_decref(j);

	/* report --hist lock_wait_ns: DTrace's quantize layout, one block per kind. */
	{
		char *argv[] = {(char *)hotcold, "report", "--hist",
				"lock_wait_ns",	 out_path, NULL};
		int fd, rc;
		pid_t r = e2e_spawn(argv, &fd, err_path);
		FILE *f = fdopen(fd, "r");
		char line[512];
		bool header = false, dist = false;

		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			if (strstr(line, "rwsem:W block"))
				header = true;
			if (strstr(line, "value") && strstr(line, "Distribution") &&
			    strstr(line, "count"))
				dist = true;
		}
		fclose(f);
		rc = e2e_wait(r, 30000);
		assert_int_equal(rc, 0);
		assert_true(header);
		assert_true(dist);
	}
	check_folded();
}

/* report --format folded: lock waits are "[lock KIND]" pseudo-frames after the kernel frames
 * (then, where the waker is known, "--" and its name). */
static void check_folded(void)
{
	char *argv[] = {(char *)hotcold, "report", "--format", "folded", out_path, NULL};
	int fd, rc;
	pid_t r = e2e_spawn(argv, &fd, err_path);
	FILE *f = fdopen(fd, "r");
	char line[16384];
	uint64_t lines = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "hc_lock_thread;") &&
		    (strstr(line, ";[lock rwsem:W] ") || strstr(line, ";[lock rwsem:W];--;")))
			lines++;
	fclose(f);
	rc = e2e_wait(r, 30000);
	assert_int_equal(rc, 0);
	print_message("folded: %llu lines end in [lock rwsem:W]\n", (unsigned long long)lines);
	assert_true(lines > 0);
}

/* Without --locks: no section, no histogram; --locks needs the scheduler tracing. */
static void test_off_by_default(void **state)
{
	char *argv[] = {(char *)hotcold, "record", "--locks", "--no-offcpu", "-d", "1s", "-o",
			out_path,	 NULL};
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(&pid, NULL);
	assert_non_null(j);
	assert_null(json_object_get(j, "locks"));
	assert_null(json_object_get(json_object_get(j, "histograms"), "lock_wait_ns"));
	json_decref(j);
	assert_int_equal(e2e_run(argv, err_path, 30000), 64);
	assert_true(access(out_path, F_OK) == 0); /* the earlier profile: nothing replaced it */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_locks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_by_default, setup, teardown),
	};

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_WORKLOAD");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
