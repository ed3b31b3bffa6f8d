// SPDX-License-Identifier: GPL-2.0-only
/*
 * hotcold record end to end, as root with real BPF: known CPU shares and symbolized chains,
 * kernel frames, short-lived processes, SIGTERM mid-capture, folded output.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"

static const char *hotcold, *workload;

static json_t *hist_series(json_t *j, const char *hist, const char *key);

struct run {
	char *dir;
	char out[512];
	char err[512];
};

static void run_init(struct run *r, const char *name)
{
	r->dir = e2e_tmpdir();
	assert_non_null(r->dir);
	snprintf(r->out, sizeof(r->out), "%s/%s", r->dir, name);
	snprintf(r->err, sizeof(r->err), "%s/stderr", r->dir);
}

static void run_fini(struct run *r)
{
	e2e_remove_tmpdir(r->dir);
	free(r->dir);
}

static void dump_stderr(const struct run *r)
{
	char *s = e2e_read_file(r->err, NULL);

	if (s && *s)
		fprintf(stderr, "hotcold stderr:\n%s\n", s);
	free(s);
}

/* Start a workload; returns its pid (it has printed it, so it runs). */
/* Start a workload, under `nice -n NICE` when nice is not NULL. */
static pid_t start_workload_nice(const char *mode, const char *arg, const char *nice, pid_t *child)
{
	char *plain[] = {(char *)workload, (char *)mode, (char *)arg, NULL};
	char *niced[] = {"/usr/bin/nice", "-n",	       (char *)nice, (char *)workload,
			 (char *)mode,	  (char *)arg, NULL};
	int fd;
	pid_t pid;

	*child = e2e_spawn(nice ? niced : plain, &fd, NULL);
	assert_true(*child > 0);
	pid = e2e_read_pid(fd);
	close(fd);
	assert_int_equal(pid, *child);
	return pid;
}

static pid_t start_workload(const char *mode, const char *arg, pid_t *child)
{
	return start_workload_nice(mode, arg, NULL, child);
}

/*
 * Start a workload (niced when nice is not NULL), record it with -p for `dur` at `freq`, stop
 * the workload. Extra record arguments (e.g. "--format", "folded") end with NULL. Returns
 * hotcold's exit status; *pid is the workload's pid.
 */
static int record_workload(struct run *r, const char *nice, const char *mode, const char *work_s,
			   const char *freq, const char *dur, pid_t *pid, ...)
{
	char pidbuf[16], *argv[16];
	const char *extra;
	pid_t child;
	va_list ap;
	int n = 0, rc;

	*pid = start_workload_nice(mode, work_s, nice, &child);
	snprintf(pidbuf, sizeof(pidbuf), "%d", *pid);
	argv[n++] = (char *)hotcold;
	argv[n++] = "record";
	argv[n++] = "-F";
	argv[n++] = (char *)freq;
	argv[n++] = "-d";
	argv[n++] = (char *)dur;
	argv[n++] = "-p";
	argv[n++] = pidbuf;
	va_start(ap, pid);
	while ((extra = va_arg(ap, const char *)) && n < 12)
		argv[n++] = (char *)extra;
	va_end(ap);
	argv[n++] = "-o";
	argv[n++] = r->out;
	argv[n] = NULL;
	rc = e2e_run(argv, r->err, 30000);
	kill(child, SIGKILL);
	e2e_wait(child, 5000);
	if (rc)
		dump_stderr(r);
	return rc;
}

/*
 * Run hotcold with argv (its output goes to r->out) while the workloads kids[] run, then kill
 * them. Asserts hotcold exited 0 (its stderr is shown otherwise); returns the profile.
 */
static json_t *record_beside(struct run *r, char *argv[], const pid_t *kids, int n)
{
	int rc = e2e_run(argv, r->err, 30000);
	json_t *j;

	for (int w = 0; w < n; w++) {
		kill(kids[w], SIGKILL);
		e2e_wait(kids[w], 5000);
	}
	if (rc)
		dump_stderr(r);
	assert_int_equal(rc, 0);
	j = e2e_load_json(r->out);
	assert_non_null(j);
	return j;
}

static void common_checks(json_t *j, double hz_expected)
{
	json_t *s = json_object_get(j, "sampling"), *lost;
	double hz = json_number_value(json_object_get(s, "frequency_hz"));

	assert_string_equal(json_string_value(json_object_get(j, "schema")), "hotcold-profile/1");
	assert_true(fabs(hz - hz_expected) < 0.01 * hz_expected);
	assert_int_equal(json_array_size(json_object_get(s, "per_cpu")),
			 sysconf(_SC_NPROCESSORS_ONLN));
	lost = json_object_get(s, "lost");
	assert_non_null(json_object_get(lost, "ringbuf_full"));
	assert_non_null(json_object_get(lost, "kstack_error"));
	assert_non_null(json_object_get(lost, "ustack_error"));
	assert_int_equal(e2e_u64(j, "sampling.lost.ringbuf_full"), 0);
	assert_true(e2e_u64(j, "sampling.samples") > 0);
	/* value = on + off + runqueue at the root */
	assert_int_equal(e2e_u64(j, "flamegraph.value"),
			 e2e_u64(j, "flamegraph.on_cpu_ns") + e2e_u64(j, "flamegraph.off_cpu_ns") +
				 e2e_u64(j, "flamegraph.runqueue_ns"));
}

static void test_cpu_shares_and_chain(void **state)
{
	static const char *const chain_a[] = {"main", "hc_work_loop", "hc_burn_a"};
	static const char *const chain_b[] = {"main", "hc_work_loop", "hc_burn_b"};
	struct run r;
	pid_t pid;
	json_t *j;
	uint64_t a, b, c, total, proc_on;
	double sa, sb, sc;

	(void)state;
	run_init(&r, "cpu.json");
	assert_int_equal(record_workload(&r, NULL, "cpu", "6", "999", "3s", &pid, NULL), 0);
	j = e2e_load_json(r.out);
	assert_non_null(j);
	common_checks(j, 999);

	a = e2e_sum_frames(j, (uint32_t)pid, NULL, "hc_burn_a");
	b = e2e_sum_frames(j, (uint32_t)pid, NULL, "hc_burn_b");
	c = e2e_sum_frames(j, (uint32_t)pid, NULL, "hc_burn_c");
	total = a + b + c;
	proc_on = (uint64_t)json_integer_value(
		json_object_get(e2e_process_node(j, (uint32_t)pid), "on_cpu_ns"));
	sa = 100.0 * (double)a / (double)total;
	sb = 100.0 * (double)b / (double)total;
	sc = 100.0 * (double)c / (double)total;
	print_message("shares a=%.1f%% b=%.1f%% c=%.1f%% (of %llu ns; process %llu ns)\n", sa, sb,
		      sc, (unsigned long long)total, (unsigned long long)proc_on);
	/* ~3 s of one busy thread at 999 Hz: about 3000 samples. */
	assert_true(total > 2000ull * 1001001ull);
	assert_true(fabs(sa - 60) <= 5 && fabs(sb - 30) <= 5 && fabs(sc - 10) <= 5);
	/* Nearly all of the process's time is in the burners, i.e. symbolized. */
	assert_true((double)total >= 0.9 * (double)proc_on);
	assert_true(e2e_has_chain(j, (uint32_t)pid, chain_a, 3));
	assert_true(e2e_has_chain(j, (uint32_t)pid, chain_b, 3));
	/* The burners are user frames in our executable. */
	{
		char *text = e2e_read_file(r.out, NULL);

		assert_non_null(strstr(text, "\"module\":\"hc-workload\""));
		free(text);
	}
	json_decref(j);
	run_fini(&r);
}

static void test_kernel_frames(void **state)
{
	static const char *const chain[] = {"main", "hc_syscall_loop"};
	struct run r;
	pid_t pid;
	char *text;
	json_t *j, *proc;
	uint64_t ks, us;

	(void)state;
	run_init(&r, "sys.json");
	assert_int_equal(record_workload(&r, NULL, "syscall", "5", "499", "2s", &pid, NULL), 0);
	j = e2e_load_json(r.out);
	assert_non_null(j);
	common_checks(j, 499);
	ks = e2e_u64(j, "totals.kernel_samples");
	us = e2e_u64(j, "totals.user_samples");
	print_message("kernel samples %llu, user samples %llu\n", (unsigned long long)ks,
		      (unsigned long long)us);
	/* getppid+write of 4 KiB to /dev/null spend most time in the kernel. */
	assert_true(ks > us);
	proc = e2e_process_node(j, (uint32_t)pid);
	assert_non_null(proc);
	assert_true(e2e_has_chain(j, (uint32_t)pid, chain, 2));
	/* Some syscall entry frame, named: the kernel stack is symbolized. */
	assert_true(e2e_sum_frames(j, (uint32_t)pid, NULL, "entry_SYSCALL_64") > 0 ||
		    e2e_sum_frames(j, (uint32_t)pid, NULL, "do_syscall_64") > 0);
	assert_true(e2e_sum_frames(j, (uint32_t)pid, NULL, "ksys_write") > 0 ||
		    e2e_sum_frames(j, (uint32_t)pid, NULL, "vfs_write") > 0);
	/* KASLR: no raw kernel address anywhere in the output. */
	text = e2e_read_file(r.out, NULL);
	assert_null(strstr(text, "0xffff"));
	assert_null(strstr(text, "ffffffff"));
	free(text);
	json_decref(j);
	run_fini(&r);
}

/*
 * test_short_lived under AddressSanitizer: the worker unwinds DWARF about ten times slower
 * and falls seconds behind the ring buffer, so a 40 ms process has exited before its maps are
 * read (measured: none of ten named, every user frame [unknown], the loss counted in
 * symbolize.process_gone). With frame pointers the sanitized worker keeps up, but not always
 * with the first process after the window opens, and a sanitized process spends more of its
 * life in its loader (measured: 9 of 10 named, shares 0.67-0.88, on a loaded machine). So
 * the sanitized run keeps the earlier bound, 8 of 10 with half their time in hc_short_burn,
 * with frame pointers; the plain run requires all ten at 2/3 with the default, DWARF.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SHORT_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SHORT_SANITIZED 1
#endif
#endif
#ifdef SHORT_SANITIZED
#define SHORT_UNWIND "fp"
#define SHORT_MIN_NAMED 8
#define SHORT_SHARE(on) ((on) / 2)
#else
#define SHORT_UNWIND "table"
#define SHORT_MIN_NAMED 10
#define SHORT_SHARE(on) ((on) / 3 * 2)
#endif

static void test_short_lived(void **state)
{
	struct run r;
	pid_t rec, kids[10];
	json_t *j;
	uint64_t named;
	int rc;

	(void)state;
	run_init(&r, "short.json");
	{
		char *argv[] = {(char *)hotcold, "record",     "-v", "-F",  "999", "-d", "4s",
				"--unwind",	 SHORT_UNWIND, "-o", r.out, NULL};

		rec = e2e_spawn(argv, NULL, r.err);
	}
	assert_true(rec > 0);
	/* Sampling has started (rather than a fixed sleep: loading takes longer under ASan),
	 * and the ten ~40 ms lives fit well inside the 4 s window. */
	assert_true(e2e_wait_text(r.err, "the window is open", 20000));
	for (int i = 0; i < 10; i++) {
		pid_t child;

		/* Each lives ~40 ms, burning CPU in hc_short_burn. */
		start_workload("short", "40", &child);
		kids[i] = child;
		assert_int_equal(e2e_wait(child, 5000), 0);
	}
	rc = e2e_wait(rec, 30000);
	if (rc)
		dump_stderr(&r);
	assert_int_equal(rc, 0);
	j = e2e_load_json(r.out);
	assert_non_null(j);
	common_checks(j, 999);
	named = 0;
	for (int i = 0; i < 10; i++) {
		uint64_t v = e2e_sum_frames(j, (uint32_t)kids[i], NULL, "hc_short_burn");
		json_t *p = e2e_process_node(j, (uint32_t)kids[i]);
		uint64_t on = p ? (uint64_t)json_integer_value(json_object_get(p, "on_cpu_ns")) : 0;

		print_message("pid %d: %llu ns of %llu ns in hc_short_burn\n", kids[i],
			      (unsigned long long)v, (unsigned long long)on);
		if (p && v >= SHORT_SHARE(on))
			named++;
	}
	/*
	 * Every short-lived process is sampled and symbolized, after it exited: all ten, each
	 * with at least 2/3 of its on-CPU time in hc_short_burn. Measured on this 2-CPU machine
	 * with the e2e tests alone: 10 of 10 at 0.88-0.91. The rest is exec, the dynamic loader
	 * and exit, ~4-5 ms of CPU per process whatever the load, while the burn is 40 ms of
	 * wall-clock time: at a load of 15 the shares fell to 0.53-0.86 (and two of ten were
	 * not symbolized at all), so 2/3 holds for a process that gets a quarter of a CPU.
	 * Sanitized: SHORT_MIN_NAMED above.
	 */
	assert_true(named >= SHORT_MIN_NAMED);
	json_decref(j);
	run_fini(&r);
}

static void test_sigterm_mid_capture(void **state)
{
	struct run r;
	struct timespec t0, t1;
	pid_t rec;
	json_t *j;
	double elapsed;
	int rc;

	(void)state;
	run_init(&r, "term.json");
	{
		char *argv[] = {(char *)hotcold, "record", "-v", "-d", "60s", "-o", r.out, NULL};

		rec = e2e_spawn(argv, NULL, r.err);
	}
	/* The window opens after loading and the split (over 0.5 s under ASan); then 1 s. */
	assert_true(e2e_wait_text(r.err, "the window is open", 20000));
	sleep(1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(rec, SIGTERM);
	/* 30 s: a hang guard, half of -d 60s, so that the capture's own end cannot pass for
	 * the signal's; the profile's duration says which one closed the window. */
	rc = e2e_wait(rec, 30000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	elapsed = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	print_message("exit %d, %.3f s after SIGTERM\n", rc, elapsed);
	if (rc)
		dump_stderr(&r);
	assert_int_equal(rc, 0);
	j = e2e_load_json(r.out);
	assert_non_null(j);
	assert_true(e2e_u64(j, "duration_ns") < 30000000000ull);
	assert_true(e2e_u64(j, "duration_ns") > 500000000ull);
	json_decref(j);
	run_fini(&r);
}

static void test_folded(void **state)
{
	struct run r;
	pid_t pid;
	char *text, *line;
	unsigned long long a = 0, all = 0;

	(void)state;
	run_init(&r, "cpu.folded");
	assert_int_equal(record_workload(&r, NULL, "cpu", "4", "999", "2s", &pid, "--format",
					 "folded", NULL),
			 0);
	text = e2e_read_file(r.out, NULL);
	assert_non_null(text);
	for (line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');

		assert_non_null(sp);
		assert_true(strncmp(line, "hc-workload;", 12) == 0);
		all += strtoull(sp + 1, NULL, 10);
		if (strstr(line, ";main;hc_work_loop;hc_burn_a "))
			a += strtoull(sp + 1, NULL, 10);
	}
	print_message("folded: hc_burn_a %llu of %llu ns\n", a, all);
	assert_true(all > 0);
	assert_true((double)a / (double)all > 0.5 && (double)a / (double)all < 0.7);
	free(text);
	run_fini(&r);
}

/* DTrace's profpri.d: lquantize(prio, 0, 140, 10) per process. nice 10 -> prio 130. */
static void test_priority_histogram(void **state)
{
	json_t *j, *h, *series, *s, *b;
	struct run r;
	uint64_t in130 = 0, other = 0;
	size_t i, k;
	pid_t pid;

	(void)state;
	run_init(&r, "prio.json");
	assert_int_equal(record_workload(&r, "10", "cpu", "4", "499", "2s", &pid, NULL), 0);
	j = e2e_load_json(r.out);
	assert_non_null(j);
	h = json_object_get(json_object_get(j, "histograms"), "priority");
	assert_non_null(h);
	assert_string_equal(json_string_value(json_object_get(h, "type")), "lquantize");
	assert_int_equal(json_integer_value(json_object_get(h, "lower")), 0);
	assert_int_equal(json_integer_value(json_object_get(h, "upper")), 140);
	assert_int_equal(json_integer_value(json_object_get(h, "step")), 10);
	series = json_object_get(h, "series");
	json_array_foreach (series, i, s) {
		if (strcmp(json_string_value(json_object_get(s, "key")), "hc-workload"))
			continue;
		json_array_foreach (json_object_get(s, "buckets"), k, b) {
			uint64_t c = (uint64_t)json_integer_value(json_object_get(b, "count"));
			json_t *min = json_object_get(b, "min");

			if (json_is_integer(min) && json_integer_value(min) == 130)
				in130 += c;
			else
				other += c;
		}
	}
	print_message("priority: %llu samples in [130, 139], %llu elsewhere\n",
		      (unsigned long long)in130, (unsigned long long)other);
	/* ~2 s at 499 Hz of one busy thread */
	assert_true(in130 > 700);
	assert_int_equal(other, 0);
	json_decref(j);
	run_fini(&r);
}

/* bcc runqlen: 4 busy tasks on 2 CPUs leave 1 waiting per CPU nearly all the time. */
static void test_runqueue_length(void **state)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	pid_t kids[16];
	json_t *j, *h, *s, *b;
	struct run r;
	size_t i, k;
	int n = (int)(2 * ncpu);

	(void)state;
	assert_true(n <= 16);
	run_init(&r, "runq.json");
	/* Busy past the window however long loading takes beside them (killed after it): with
	 * two busy tasks a CPU, record gets a third of the CPUs while the verifier runs. */
	for (int w = 0; w < n; w++)
		start_workload("cpu", "20", &kids[w]);
	{
		char *argv[] = {(char *)hotcold, "record", "-F", "499", "-d", "2s", "-o",
				r.out,		 NULL};

		j = record_beside(&r, argv, kids, n);
	}
	h = json_object_get(json_object_get(j, "histograms"), "runqueue_length");
	assert_non_null(h);
	assert_string_equal(json_string_value(json_object_get(h, "type")), "lquantize");
	assert_int_equal(json_integer_value(json_object_get(h, "upper")), 32);
	assert_int_equal(json_array_size(json_object_get(h, "series")), (size_t)ncpu);
	json_array_foreach (json_object_get(h, "series"), i, s) {
		uint64_t zero = 0, waiting = 0;

		json_array_foreach (json_object_get(s, "buckets"), k, b) {
			json_t *min = json_object_get(b, "min");
			uint64_t c = (uint64_t)json_integer_value(json_object_get(b, "count"));

			if (json_is_integer(min) && json_integer_value(min) == 0)
				zero += c;
			else if (json_is_integer(min) && json_integer_value(min) >= 1)
				waiting += c;
		}
		print_message("%s: %llu samples with an empty queue, %llu with tasks waiting\n",
			      json_string_value(json_object_get(s, "key")),
			      (unsigned long long)zero, (unsigned long long)waiting);
		assert_true(waiting + zero > 500);
		assert_true((double)waiting >= 0.8 * (double)(waiting + zero));
	}
	/*
	 * Off-CPU: n busy tasks on ncpu CPUs wait for a CPU (n - ncpu) / n of the time, and
	 * longer by whatever else ran meanwhile (hotcold itself, a compiler on a shared machine)
	 * and by the CPUs' idle time: they never block, so their window is on CPU or waiting,
	 * rq = n x window - their on-CPU time = (n - ncpu) x window + others' on-CPU + idle.
	 */
	{
		double window = (double)e2e_u64(j, "duration_ns"), rq = 0, on = 0, share;
		json_t *tot = json_object_get(j, "totals");
		double others = (double)json_integer_value(json_object_get(tot, "on_cpu_ns"));
		double idle = (double)json_integer_value(json_object_get(tot, "idle_ns"));

		for (int w = 0; w < n; w++) {
			json_t *p = e2e_process_node(j, (uint32_t)kids[w]);

			assert_non_null(p);
			rq += (double)json_integer_value(json_object_get(p, "runqueue_ns"));
			on += (double)json_integer_value(json_object_get(p, "on_cpu_ns"));
		}
		others -= on;
		share = rq / (window * (double)(n - ncpu) + others + idle);
		print_message("run-queue time of the %d busy tasks: %.3f of (n - CPUs) x window + "
			      "others' on-CPU time (%.3f s) + idle (%.3f s)\n",
			      n, share, others / 1e9, idle / 1e9);
		assert_true(share > 0.75 && share < 1.1);
		assert_non_null(hist_series(j, "runqueue_latency_us", "hc-workload"));
	}
	json_decref(j);
	run_fini(&r);
}

/* ---- off-CPU ---- */

/* The node of `kind` ("thread", "process") whose `key` ("tid", "pid") is id, or NULL. */
/* Sum of `what` over the outermost nodes of `kind` named `name` under n. */
static json_t *hist_series(json_t *j, const char *hist, const char *key)
{
	json_t *s;
	size_t i;

	json_array_foreach (
		json_object_get(json_object_get(json_object_get(j, "histograms"), hist), "series"),
		i, s)
		if (!strcmp(json_string_value(json_object_get(s, "key")), key))
			return s;
	return NULL;
}

/* Count in the bucket starting at `min`, and in all buckets. */
static void bucket_counts(json_t *series, json_int_t min, uint64_t *in, uint64_t *all)
{
	json_t *b;
	size_t i;

	*in = *all = 0;
	json_array_foreach (json_object_get(series, "buckets"), i, b) {
		uint64_t c = e2e_field(b, "count");

		*all += c;
		if (json_integer_value(json_object_get(b, "min")) == min &&
		    json_is_integer(json_object_get(b, "min")))
			*in += c;
	}
}

/* A thread alternating 20 ms of work and 20 ms of sleep: its on/off shares, the per-thread
 * identity on + off + run-queue = window, its blocked time under the sleeping function, and
 * offcpu_us in the [16384, 32767] us bucket. */
static void test_offcpu_work_sleep(void **state)
{
	struct run r;
	pid_t pid;
	json_t *j, *t, *s;
	double window, on, off, rq;
	uint64_t in, all;

	(void)state;
	run_init(&r, "worksleep.json");
	assert_int_equal(record_workload(&r, NULL, "worksleep", "20", "999", "3s", &pid, NULL), 0);
	j = e2e_load_json(r.out);
	assert_non_null(j);
	common_checks(j, 999);
	window = (double)e2e_u64(j, "duration_ns");
	t = e2e_find_node(json_object_get(j, "flamegraph"), "thread", "tid", pid);
	assert_non_null(t);
	on = (double)e2e_field(t, "on_cpu_ns") / window;
	off = (double)e2e_field(t, "off_cpu_ns") / window;
	rq = (double)e2e_field(t, "runqueue_ns") / window;
	print_message("work/sleep thread: on %.3f off %.3f runqueue %.3f, sum %.3f of the window\n",
		      on, off, rq, on + off + rq);
	assert_true(fabs(on + off + rq - 1.0) <= 0.05);
	assert_true(on > 0.35 && on < 0.65);
	assert_true(off > 0.35 && off < 0.65);
	/* blocked time sits under the function that slept, with the kernel's nanosleep */
	assert_true((double)e2e_sum_named(t, "user", "hc_sleep_phase", "off_cpu_ns") >=
		    0.95 * (double)e2e_field(t, "off_cpu_ns"));
	assert_true(e2e_sum_named(t, "kernel", "do_nanosleep", "off_cpu_ns") > 0);
	/* and on-CPU time under the function that worked */
	assert_true(e2e_sum_named(t, "user", "hc_work_phase", "on_cpu_ns") > 0);
	s = hist_series(j, "offcpu_us", "hc-workload");
	assert_non_null(s);
	bucket_counts(s, 16384, &in, &all);
	print_message("offcpu_us: %llu of %llu blocks in [16384, 32767] us\n",
		      (unsigned long long)in, (unsigned long long)all);
	assert_true(all >= 50 && (double)in >= 0.9 * (double)all);
	s = hist_series(j, "oncpu_slice_us", "hc-workload");
	assert_non_null(s);
	bucket_counts(s, 16384, &in, &all);
	print_message("oncpu_slice_us: %llu of %llu slices in [16384, 32767] us\n",
		      (unsigned long long)in, (unsigned long long)all);
	/* 20 ms work phases; other tasks may split a phase into several slices */
	assert_true(all >= 50 && in >= 10);
	assert_non_null(json_object_get(j, "scheduler"));
	assert_int_equal(e2e_u64(j, "sampling.lost.offcpu_ringbuf_full"), 0);
	json_decref(j);
	run_fini(&r);
}

/* A thread blocked on a pipe since before the capture and through it: all of the window is
 * off-CPU, under the reading function (stacks taken by the start-of-window iterator). */
static void test_offcpu_pipe_blocked(void **state)
{
	char pidbuf[16];
	struct run r;
	pid_t pid, child;
	json_t *j, *t;
	double window, off;

	(void)state;
	run_init(&r, "pipe.json");
	pid = start_workload("pipeblock", "0", &child);
	usleep(300000); /* asleep in read() well before the window opens */
	snprintf(pidbuf, sizeof(pidbuf), "%d", pid);
	{
		char *argv[] = {(char *)hotcold, "record", "-d",  "2s", "-p",
				pidbuf,		 "-o",	   r.out, NULL};

		j = record_beside(&r, argv, &child, 1);
	}
	window = (double)e2e_u64(j, "duration_ns");
	t = e2e_find_node(json_object_get(j, "flamegraph"), "thread", "tid", pid);
	assert_non_null(t);
	off = (double)e2e_field(t, "off_cpu_ns");
	print_message("pipe-blocked thread: off %.4f of the window, %.4f under hc_pipe_read\n",
		      off / window,
		      (double)e2e_sum_named(t, "user", "hc_pipe_read", "off_cpu_ns") / window);
	assert_true(off >= 0.99 * window && off <= 1.01 * window);
	assert_true((double)e2e_sum_named(t, "user", "hc_pipe_read", "off_cpu_ns") >= 0.99 * off);
	/* pipe_read, or anon_pipe_read on 6.16 and later */
	assert_true((double)(e2e_sum_named(t, "kernel", "pipe_read", "off_cpu_ns") +
			     e2e_sum_named(t, "kernel", "anon_pipe_read", "off_cpu_ns")) >=
		    0.99 * off);
	json_decref(j);
	run_fini(&r);
}

/* The machine: on-CPU (samples) + idle (from the idle task's switches) = CPUs x window. */
static void test_offcpu_machine_identity(void **state)
{
	struct run r;
	pid_t kid;
	json_t *j, *c;
	double window, cpus, ratio;
	size_t i;

	(void)state;
	run_init(&r, "machine.json");
	start_workload("worksleep", "20", &kid); /* some work, some idle; killed after */
	{
		char *argv[] = {(char *)hotcold, "record", "-F", "999", "-d", "3s", "-o",
				r.out,		 NULL};

		j = record_beside(&r, argv, &kid, 1);
	}
	window = (double)e2e_u64(j, "duration_ns");
	cpus = (double)e2e_u64(j, "sampling.cpus");
	ratio = ((double)e2e_u64(j, "totals.on_cpu_ns") + (double)e2e_u64(j, "totals.idle_ns")) /
		(cpus * window);
	print_message(
		"machine: (on_cpu + idle) / (CPUs x window) = %.4f (on %.3f s, idle %.3f s)\n",
		ratio, (double)e2e_u64(j, "totals.on_cpu_ns") / 1e9,
		(double)e2e_u64(j, "totals.idle_ns") / 1e9);
	assert_true(fabs(ratio - 1.0) <= 0.05);
	json_array_foreach (json_object_get(json_object_get(j, "sampling"), "per_cpu"), i, c) {
		assert_true((double)e2e_field(c, "idle_ns") <= window);
		/* A CPU cannot give more samples than periods fit in the window: libbpf enables an
		 * event when it attaches to it, long before the window opens (seen: 3309 in a
		 * 3.004 s window at 999 Hz, the worker's start under load). */
		assert_true((double)e2e_field(c, "samples") <=
			    window / (double)e2e_u64(j, "sampling.period_ns") + 2);
	}
	/* the work/sleep thread's identity holds machine-wide too */
	{
		json_t *t = e2e_find_node(json_object_get(j, "flamegraph"), "thread", "tid", kid);

		assert_non_null(t);
		assert_true(fabs((double)e2e_field(t, "value") / window - 1.0) <= 0.05);
	}
	json_decref(j);
	run_fini(&r);
}

/* Who woke a blocked thread: hc_pong is woken by hc_ping's process; with --wakers, the
 * waker's stack (hc_ping) hangs under the waker node. --comm selects both processes. */
static void test_offcpu_wakers(void **state)
{
	struct run r;
	pid_t pid, child;
	json_t *j, *root, *p, *c;
	uint64_t off = 0, under_waker = 0, with_ping = 0;
	size_t i;

	(void)state;
	run_init(&r, "wakers.json");
	pid = start_workload("pingpong", "20", &child);
	{
		char *argv[] = {(char *)hotcold, "record",   "-d", "2s",  "--comm",
				"hc-workload",	 "--wakers", "-o", r.out, NULL};

		j = record_beside(&r, argv, &child, 1);
	}
	root = json_object_get(j, "flamegraph");
	/* --comm: only our processes */
	json_array_foreach (json_object_get(root, "children"), i, c)
		assert_string_equal(json_string_value(json_object_get(c, "name")), "hc-workload");
	/* the child: the other process */
	json_array_foreach (json_object_get(root, "children"), i, c) {
		/* the pong process: not the parent, and running during the window (a stale
		 * hc-workload blocked forever would not) */
		if (json_integer_value(json_object_get(c, "pid")) == pid ||
		    !e2e_sum_named(c, "user", "hc_pong", "on_cpu_ns"))
			continue;
		p = c;
		off += e2e_field(p, "off_cpu_ns");
		under_waker += e2e_sum_named(p, "waker", "hc-workload", "off_cpu_ns");
		with_ping += e2e_sum_named(p, "user", "hc_ping", "off_cpu_ns");
	}
	print_message("pong: %.3f s blocked, %.3f s under waker hc-workload, %.3f s under the "
		      "waker's hc_ping\n",
		      (double)off / 1e9, (double)under_waker / 1e9, (double)with_ping / 1e9);
	assert_true(off > 0);
	assert_true((double)under_waker >= 0.8 * (double)off);
	/* Measured: 1.00 of the blocked time under hc_ping (plain and ASan, e2e tests alone),
	 * 0.92 with the machine's 2 CPUs at a load of 15. */
	assert_true((double)with_ping >= 0.8 * (double)off);
	assert_true(json_is_true(json_object_get(json_object_get(j, "scheduler"), "wakers")));
	json_decref(j);
	run_fini(&r);
}

/* --no-offcpu: no scheduler tracing at all. --min-block: short blocks leave the tree but
 * not the totals. */
static void test_offcpu_options(void **state)
{
	struct run r;
	pid_t pid;
	json_t *j, *t;

	(void)state;
	run_init(&r, "noff.json");
	assert_int_equal(
		record_workload(&r, NULL, "worksleep", "4", "499", "1s", &pid, "--no-offcpu", NULL),
		0);
	j = e2e_load_json(r.out);
	assert_non_null(j);
	assert_int_equal(e2e_u64(j, "totals.off_cpu_ns"), 0);
	assert_int_equal(e2e_u64(j, "flamegraph.off_cpu_ns"), 0);
	assert_null(json_object_get(j, "scheduler"));
	assert_null(json_object_get(json_object_get(j, "histograms"), "offcpu_us"));
	assert_non_null(json_object_get(json_object_get(j, "histograms"), "priority"));
	json_decref(j);
	run_fini(&r);

	run_init(&r, "minblock.json");
	assert_int_equal(record_workload(&r, NULL, "worksleep", "4", "499", "2s", &pid,
					 "--min-block", "50ms", NULL),
			 0);
	j = e2e_load_json(r.out);
	assert_non_null(j);
	t = e2e_find_node(json_object_get(j, "flamegraph"), "thread", "tid", pid);
	assert_non_null(t);
	print_message("--min-block 50ms: %llu ns blocked in the tree, %llu ns below in totals\n",
		      (unsigned long long)e2e_field(t, "off_cpu_ns"),
		      (unsigned long long)e2e_u64(j, "scheduler.below_min_block.off_cpu_ns"));
	/* 20 ms sleeps are all shorter than 50 ms */
	assert_true((double)e2e_field(t, "off_cpu_ns") < 0.05 * (double)e2e_u64(j, "duration_ns"));
	assert_true(e2e_u64(j, "scheduler.below_min_block.off_cpu_ns") >
		    e2e_u64(j, "duration_ns") / 4);
	assert_true(e2e_u64(j, "totals.off_cpu_ns") >=
		    e2e_u64(j, "scheduler.below_min_block.off_cpu_ns"));
	json_decref(j);
	run_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_shares_and_chain),
		cmocka_unit_test(test_kernel_frames),
		cmocka_unit_test(test_short_lived),
		cmocka_unit_test(test_sigterm_mid_capture),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_priority_histogram),
		cmocka_unit_test(test_runqueue_length),
		cmocka_unit_test(test_offcpu_work_sleep),
		cmocka_unit_test(test_offcpu_pipe_blocked),
		cmocka_unit_test(test_offcpu_machine_identity),
		cmocka_unit_test(test_offcpu_wakers),
		cmocka_unit_test(test_offcpu_options),
	};

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_WORKLOAD");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
