// SPDX-License-Identifier: GPL-2.0-only
/*
 * Faults injected into `hotcold record`, as root with real BPF (issue 6):
 *  - the sandboxed worker SIGKILLed mid-capture: 70 and a message, nothing in the output's
 *    directory (no output, no temporary, no lock), none of its BPF programs or links left;
 *  - the privileged main process SIGKILLed: the worker follows within a second, nothing that
 *    looks complete, no BPF program or link left;
 *  - SIGTERM: 0, a complete shorter profile that `report` converts whole, no BPF left;
 *  - a profiled binary deleted, another replaced by a different file, a third process exiting
 *    mid-capture: all named; a process that ran and exited while the worker was stopped
 *    (before its maps could be read): its samples kept, counted in symbolize.process_gone;
 *  - pid reuse (clone3 with set_tid gives a second program the first one's pid, both without
 *    ASLR so their code overlaps in address): symbolize.pid_reused counts it, each process
 *    keeps its own frames;
 *  - the ring buffer overflowing at 5000 Hz while the worker is stopped: the loss counted by
 *    reason, every sample the BPF program saw accounted for, none from outside the window;
 *  - no BTF (a mount namespace hides /sys/kernel/btf): 69, one line naming BTF;
 *  - root without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN: 77 (an unprivileged user is
 *    test_cli's test_unprivileged).
 * The same faults for serve's three processes are test_serve's test_sigterm_releases_bpf; a
 * full disk is test_capture's test_disk_errors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <cmocka.h>

#include "bpf_ids.h"
#include "e2e.h"

static const char *hotcold, *workload;
static char *dir; /* per-test scratch directory */
static char out_path[600], err_path[600];

/* ---- the first program of the pid-reuse test: this binary, re-executed ---- */

static volatile uint64_t sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void hc_fault_burn(void)
{
	uint64_t x = sink;

	for (int i = 0; i < 200000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

__attribute__((noinline)) void hc_fault_loop(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end)
		hc_fault_burn();
}

/* ---- helpers ---- */

/*
 * How long a test waits for what must happen (a process ends, a program is freed) before
 * it gives up: a guard against a hang, far above any latency of a loaded machine, and below
 * the captures' -d (LONG_D), so that the capture's own end can never stand in for the event
 * a test waits for.
 */
#define HANG_GUARD_S 60.0
#define LONG_D "120s"

static double since_s(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

static void dump_stderr(void)
{
	char *s = e2e_read_file(err_path, NULL);

	if (s && *s)
		fprintf(stderr, "hotcold stderr:\n%s\n", s);
	free(s);
}

/* record's exit status rc -> its profile (stderr shown when it failed). */
static json_t *record_output(int rc)
{
	json_t *j;

	if (rc)
		dump_stderr();
	assert_int_equal(rc, 0);
	j = e2e_load_json(out_path);
	assert_non_null(j);
	return j;
}

static int setup(void **state)
{
	(void)state;
	dir = e2e_tmpdir();
	if (!dir)
		return -1;
	snprintf(out_path, sizeof(out_path), "%s/out.json", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	e2e_remove_tmpdir(dir);
	free(dir);
	dir = NULL;
	return 0;
}

/* Still running: gone and zombie both count as ended (init reaps orphans when it likes). */
static bool running(pid_t pid)
{
	char *st = e2e_status_value(pid, "State");
	bool r = st && st[0] != 'Z';

	free(st);
	return r;
}

/* record's sandboxed worker: its child running as uid 65534, waited for up to 10 s. */
static pid_t find_worker(pid_t rec)
{
	for (int tries = 0; tries < 500; tries++) {
		char path[64], *text, *p, *end;

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)rec, (int)rec);
		text = e2e_read_file(path, NULL);
		for (p = text; p && *p; p = end) {
			pid_t c = (pid_t)strtol(p, &end, 10);
			char *uid;

			if (end == p)
				break;
			uid = e2e_status_value(c, "Uid");
			if (uid && !strncmp(uid, "65534\t", 6)) {
				free(uid);
				free(text);
				return c;
			}
			free(uid);
		}
		free(text);
		usleep(20000);
	}
	return -1;
}

static int links_to(const struct bpf_ids *progs)
{
	return bpf_ids__links(progs, NULL);
}

/* The kernel frees a program shortly after its last reference goes (deferred, RCU): wait
 * for all of mine to go; asserts they did and that no link to them is left. HANG_GUARD_S is
 * not a latency bound: it only ends the wait for a program that is never freed. */
static void assert_released(const struct bpf_ids *mine, const struct timespec *t0)
{
	while (bpf_ids__loaded(mine) && since_s(t0) < HANG_GUARD_S)
		usleep(20000);
	print_message("  %d of the capture's %d BPF programs left %.0f ms after the fault\n",
		      bpf_ids__loaded(mine), mine->n, since_s(t0) * 1e3);
	assert_int_equal(bpf_ids__loaded(mine), 0);
	assert_int_equal(links_to(mine), 0);
}

/*
 * Start `hotcold record ARGS... -o out_path` (stderr to err_path), wait for its sandboxed
 * worker and for the capture's BPF programs to be loaded and linked, plus settle_ms. Returns
 * record's pid; *worker its worker; *mine the capture's programs.
 */
static pid_t start_record(pid_t *worker, struct bpf_ids *mine, int settle_ms, ...)
{
	char *argv[24];
	const char *a;
	va_list ap;
	int n = 0;
	pid_t rec;

	argv[n++] = (char *)hotcold;
	argv[n++] = "record";
	va_start(ap, settle_ms);
	while ((a = va_arg(ap, const char *)) && n < 20)
		argv[n++] = (char *)a;
	va_end(ap);
	argv[n++] = "-o";
	argv[n++] = out_path;
	argv[n] = NULL;
	rec = e2e_spawn(argv, NULL, err_path);
	assert_true(rec > 0);
	*worker = find_worker(rec);
	assert_true(*worker > 0);
	/* The worker attaches the scheduler programs when sampling starts (off-CPU on). The
	 * capture's programs are those its two processes hold: other captures on the machine
	 * are not counted. */
	for (int i = 0; i < 250; i++) {
		mine->n = 0;
		bpf_ids__add_pid(mine, rec);
		bpf_ids__add_pid(mine, *worker);
		if (bpf_ids__links(mine, "hc_switch") > 0)
			break;
		usleep(20000);
	}
	print_message("  capture running: %d BPF programs, %d links\n", mine->n, links_to(mine));
	if (bpf_ids__links(mine, "hc_switch") == 0)
		dump_stderr();
	assert_true(bpf_ids__links(mine, "hc_switch") > 0);
	usleep((useconds_t)settle_ms * 1000);
	return rec;
}

/* Start the workload (argv after its path); returns its pid once it has printed it. */
static pid_t start_workload(const char *path, const char *mode, const char *arg)
{
	char *argv[] = {(char *)path, (char *)mode, (char *)arg, NULL};
	int fd;
	pid_t child = e2e_spawn(argv, &fd, NULL), pid;

	assert_true(child > 0);
	pid = e2e_read_pid(fd);
	close(fd);
	assert_int_equal(pid, child);
	return pid;
}

static void stop_workload(pid_t pid)
{
	kill(pid, SIGKILL);
	e2e_wait(pid, 5000);
}

/* The process node of pid named name, or NULL. */
static json_t *process_named(json_t *root, pid_t pid, const char *name)
{
	json_t *c;
	size_t i;

	json_array_foreach (json_object_get(json_object_get(root, "flamegraph"), "children"), i, c)
		if (json_integer_value(json_object_get(c, "pid")) == pid &&
		    !strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	return NULL;
}

static uint64_t user_ns(json_t *node, const char *fn)
{
	return e2e_sum_named(node, "user", fn, "on_cpu_ns");
}

static void copy_file(const char *from, const char *to)
{
	char cmd[1400];
	int n = snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", from, to);

	assert_true(n > 0 && (size_t)n < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
}

/* ---- the sandboxed worker and the main process killed, SIGTERM ---- */

/* The worker SIGKILLed: record says so and exits 70; the main process removes the temporary
 * file and the lock and releases every BPF object. */
static void test_worker_killed(void **state)
{
	struct bpf_ids mine;
	struct timespec t0;
	char list[1024], *err;
	pid_t rec, worker;
	int rc;

	(void)state;
	rec = start_record(&worker, &mine, 1000, "-d", LONG_D, NULL);
	/* the lock and the temporary */
	assert_int_equal(e2e_list_dir(dir, "stderr", list, sizeof(list)), 2);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(worker, SIGKILL);
	rc = e2e_wait(rec, (int)(HANG_GUARD_S * 1000));
	err = e2e_read_file(err_path, NULL);
	print_message("worker SIGKILLed: record exited %d after %.0f ms: %s", rc,
		      since_s(&t0) * 1e3, err);
	assert_int_equal(rc, 70);
	assert_non_null(strstr(err, "sandboxed worker ended by signal 9"));
	free(err);
	assert_int_equal(access(out_path, F_OK), -1);
	assert_int_equal(e2e_list_dir(dir, "stderr", list, sizeof(list)), 0);
	assert_released(&mine, &t0);
}

/* The main process SIGKILLed: no handler runs, so only hidden leftovers may stay (the next
 * capture of the name removes them: test_capture); the worker dies with it (PDEATHSIG, or
 * the stop line's end) and the kernel frees every program with the last descriptor. */
static void test_main_killed(void **state)
{
	struct bpf_ids mine;
	struct timespec t0;
	char list[1024];
	pid_t rec, worker;
	double gone_s;
	int rc;

	(void)state;
	rec = start_record(&worker, &mine, 1000, "-d", LONG_D, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(rec, SIGKILL);
	rc = e2e_wait(rec, (int)(HANG_GUARD_S * 1000));
	assert_int_equal(rc, 128 + SIGKILL);
	/* Gone before its capture's end (LONG_D): main's death ended it. */
	while (running(worker) && since_s(&t0) < HANG_GUARD_S)
		usleep(5000);
	gone_s = since_s(&t0);
	print_message("main SIGKILLed: worker %d ended %.0f ms later\n", worker, gone_s * 1e3);
	if (running(worker))
		kill(worker, SIGKILL); /* not left behind by a failure */
	assert_false(running(worker));
	assert_int_equal(access(out_path, F_OK), -1);
	e2e_list_dir(dir, "stderr", list, sizeof(list));
	print_message("  left: %s\n", list);
	for (char *tok = strtok(list, " "); tok; tok = strtok(NULL, " "))
		assert_true(!strncmp(tok, ".out.json.", 10));
	assert_released(&mine, &t0);
}

/* SIGTERM: exit 0 at once, the whole shorter profile, which report converts completely (its
 * folded stacks sum to the root's value), and no BPF left. */
static void test_sigterm(void **state)
{
	char folded[700], list[1024], *text;
	char *rargv[] = {(char *)hotcold, "report", "-o", folded, out_path, NULL};
	struct bpf_ids mine;
	struct timespec t0;
	pid_t rec, worker;
	uint64_t sum = 0;
	json_t *j;
	int rc;

	(void)state;
	rec = start_record(&worker, &mine, 1500, "-d", LONG_D, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	kill(rec, SIGTERM);
	rc = e2e_wait(rec, (int)(HANG_GUARD_S * 1000));
	print_message("SIGTERM: record exited %d after %.0f ms\n", rc, since_s(&t0) * 1e3);
	if (rc)
		dump_stderr();
	/* At once means: at the signal, not at the end of -d LONG_D (the profile's duration
	 * says which ended the window). */
	assert_int_equal(rc, 0);
	assert_released(&mine, &t0);
	assert_int_equal(e2e_list_dir(dir, "stderr", list, sizeof(list)), 1);
	assert_string_equal(list, "out.json");
	j = e2e_load_json(out_path);
	assert_non_null(j);
	assert_true(e2e_u64(j, "duration_ns") > 1000000000ull);
	assert_true(e2e_u64(j, "duration_ns") < (uint64_t)(HANG_GUARD_S * 1e9));
	assert_true(e2e_u64(j, "sampling.samples") > 0);

	snprintf(folded, sizeof(folded), "%s/out.folded", dir);
	assert_int_equal(e2e_run(rargv, err_path, 30000), 0);
	text = e2e_read_file(folded, NULL);
	assert_non_null(text);
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char *sp = strrchr(line, ' ');

		assert_non_null(sp);
		sum += strtoull(sp + 1, NULL, 10);
	}
	print_message("  report: folded stacks sum to %llu ns, the root's value %llu ns\n",
		      (unsigned long long)sum, (unsigned long long)e2e_u64(j, "flamegraph.value"));
	assert_true(sum > 0);
	assert_int_equal(sum, e2e_u64(j, "flamegraph.value"));
	free(text);
	json_decref(j);
}

/* ---- what is profiled changes under the capture ---- */

/*
 * Three copies of the workload: one whose file is deleted and one whose file is replaced by a
 * different program (/bin/sleep) after they started and before the capture; a third that
 * starts in the capture and exits a second later. All are named: objects are opened through
 * /proc/PID/map_files, and the exited one's maps were read while it lived. The copies share
 * one name, which --comm keeps to them (the symbolize counters are theirs alone).
 */
static void test_binary_deleted_replaced_exited(void **state)
{
	static const char *const kind[3] = {"deleted", "replaced", "exits"};
	char path[3][700], tmp[700];
	struct bpf_ids mine;
	pid_t p[3], rec, worker;
	json_t *j;
	int rc;

	(void)state;
	for (int i = 0; i < 3; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/%s", dir, kind[i]);
		assert_int_equal(mkdir(path[i], 0755), 0);
		snprintf(path[i], sizeof(path[i]), "%s/%s/hc-wl-fault", dir, kind[i]);
		copy_file(workload, path[i]);
	}
	snprintf(tmp, sizeof(tmp), "%s/new", dir);
	p[0] = start_workload(path[0], "cpu", "8");
	p[1] = start_workload(path[1], "cpu", "8");
	assert_int_equal(unlink(path[0]), 0);
	copy_file("/bin/sleep", tmp);
	assert_int_equal(rename(tmp, path[1]), 0);
	rec = start_record(&worker, &mine, 200, "-F", "499", "-d", "2500ms", "--comm",
			   "hc-wl-fault", NULL);
	p[2] = start_workload(path[2], "cpu", "1");
	assert_int_equal(e2e_wait(p[2], 10000), 0); /* it exited by itself */
	rc = e2e_wait(rec, 30000);
	stop_workload(p[0]);
	stop_workload(p[1]);
	j = record_output(rc);
	print_message("symbolize: processes %llu, gone %llu, objects %llu, open errors %llu, "
		      "user unresolved %llu\n",
		      (unsigned long long)e2e_u64(j, "symbolize.processes"),
		      (unsigned long long)e2e_u64(j, "symbolize.process_gone"),
		      (unsigned long long)e2e_u64(j, "symbolize.objects"),
		      (unsigned long long)e2e_u64(j, "symbolize.object_open_err"),
		      (unsigned long long)e2e_u64(j, "symbolize.user_unresolved"));
	for (int i = 0; i < 3; i++) {
		const char *chain[] = {"main", "hc_work_loop", "hc_burn_a"};
		json_t *n = process_named(j, p[i], "hc-wl-fault");
		uint64_t on = n ? e2e_field(n, "on_cpu_ns") : 0;
		uint64_t a = n ? user_ns(n, "hc_burn_a") : 0;

		print_message("  %s (pid %d): %.0f ms on CPU, %.0f ms in hc_burn_a\n", kind[i],
			      p[i], (double)on / 1e6, (double)a / 1e6);
		assert_non_null(n);
		assert_true(on > 200000000ull);
		/* hc_burn_a is 60 % of the work: named, not [unknown] and not /bin/sleep's */
		assert_true(a > on * 4 / 10);
		assert_true(e2e_has_chain(j, (uint32_t)p[i], chain, 3));
	}
	assert_int_equal(e2e_u64(j, "symbolize.process_gone"), 0);
	assert_int_equal(e2e_u64(j, "symbolize.object_open_err"), 0);
	assert_int_equal(e2e_u64(j, "symbolize.elf_err"), 0);
	json_decref(j);
}

/*
 * A process that runs and exits while the worker is stopped (SIGSTOP): by the time its
 * samples are drained its /proc entry is gone. The samples stay, under its pid and name, with
 * frames [unknown], and the loss of names is counted (process_gone, user_unresolved).
 */
static void test_exited_before_drain(void **state)
{
	struct bpf_ids mine;
	pid_t rec, worker, w;
	json_t *j, *n;
	uint64_t on;
	int rc;

	(void)state;
	rec = start_record(&worker, &mine, 300, "-F", "999", "-d", "3s", NULL);
	assert_int_equal(kill(worker, SIGSTOP), 0);
	w = start_workload(workload, "short", "300");
	assert_int_equal(e2e_wait(w, 10000), 0); /* exited and reaped: no /proc/PID */
	assert_int_equal(kill(worker, SIGCONT), 0);
	rc = e2e_wait(rec, 30000);
	j = record_output(rc);
	n = process_named(j, w, "hc-workload");
	on = n ? e2e_field(n, "on_cpu_ns") : 0;
	print_message("exited before drain: %.0f ms on CPU kept; process_gone %llu, user "
		      "unresolved %llu; ringbuf_full %llu\n",
		      (double)on / 1e6, (unsigned long long)e2e_u64(j, "symbolize.process_gone"),
		      (unsigned long long)e2e_u64(j, "symbolize.user_unresolved"),
		      (unsigned long long)e2e_u64(j, "sampling.lost.ringbuf_full"));
	assert_non_null(n);
	assert_true(on >= 150000000ull); /* of 300 ms of work */
	assert_int_equal(e2e_u64(j, "sampling.lost.ringbuf_full"), 0);
	assert_true(e2e_u64(j, "symbolize.process_gone") >= 1);
	assert_true(e2e_u64(j, "symbolize.user_unresolved") >= 1);
	json_decref(j);
}

/* ---- pid reuse ---- */

/* Fork a child that runs argv without ASLR, its stdout to /dev/null. */
static pid_t spawn_noaslr(char *const argv[])
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, 1); /* the workload prints its pid */
		personality(ADDR_NO_RANDOMIZE);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/*
 * This test's own binary runs for a second and exits; then the workload forks a child that
 * gets the same pid (clone3's set_tid) and runs the workload's code with no exec, so no exec
 * event tells hotcold the process changed. Both without ASLR, so both executables load at the
 * same address and the workload's code (0x1000-0x2000 into its image) lies inside the first
 * program's first mapping of its own, larger, file: only the process start time (BPF's
 * start_boottime) tells the two apart. The counter counts the reuse and each process node
 * has its own program's frames only.
 */
static void test_pid_reuse(void **state)
{
	char self[4096], pid_arg[16];
	char *first_argv[] = {self, "--reuse-child", "1", NULL};
	char *forker_argv[] = {(char *)workload, "reuse", "1", pid_arg, NULL};
	const char *first_name;
	struct bpf_ids mine;
	pid_t rec, worker, a, forker;
	ssize_t len;
	json_t *j, *na, *nb;
	uint64_t burns;
	int rc;

	(void)state;
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(len > 0);
	self[len] = 0;
	first_name = strrchr(self, '/') + 1;
	rec = start_record(&worker, &mine, 200, "-F", "999", "-d", "3500ms", NULL);
	a = spawn_noaslr(first_argv);
	assert_true(a > 0);
	assert_int_equal(e2e_wait(a, 10000), 0);
	snprintf(pid_arg, sizeof(pid_arg), "%d", (int)a);
	forker = spawn_noaslr(forker_argv);
	assert_true(forker > 0);
	/* 0: its child had pid a and ran to its end (clone3 failing says so and exits 1) */
	assert_int_equal(e2e_wait(forker, 10000), 0);
	rc = e2e_wait(rec, 30000);
	j = record_output(rc);
	na = process_named(j, a, first_name);
	nb = process_named(j, a, "hc-workload");
	assert_non_null(na);
	assert_non_null(nb);
	burns = user_ns(nb, "hc_burn_a") + user_ns(nb, "hc_burn_b") + user_ns(nb, "hc_burn_c");
	print_message("pid %d reused: pid_reused %llu; first: %.0f ms on CPU, %.0f in "
		      "hc_fault_burn; second: %.0f ms, %.0f in hc_burn_a/b/c, %.0f in "
		      "hc_fault_burn\n",
		      a, (unsigned long long)e2e_u64(j, "symbolize.pid_reused"),
		      (double)e2e_field(na, "on_cpu_ns") / 1e6,
		      (double)user_ns(na, "hc_fault_burn") / 1e6,
		      (double)e2e_field(nb, "on_cpu_ns") / 1e6, (double)burns / 1e6,
		      (double)user_ns(nb, "hc_fault_burn") / 1e6);
	assert_true(e2e_u64(j, "symbolize.pid_reused") >= 1);
	assert_true(user_ns(na, "hc_fault_burn") > e2e_field(na, "on_cpu_ns") / 2);
	assert_int_equal(user_ns(na, "hc_burn_a") + user_ns(na, "hc_work_loop"), 0);
	/* hc_burn_a/b/c are all of the work but for the odd sample in the clock's vdso */
	assert_true(burns > e2e_field(nb, "on_cpu_ns") * 8 / 10);
	assert_int_equal(user_ns(nb, "hc_fault_burn") + user_ns(nb, "hc_fault_loop"), 0);
	json_decref(j);
}

/* ---- the ring buffer overflowing ---- */

/*
 * Every sample the BPF program saw is the idle task's, in the tree, or counted lost; and
 * none of them lies outside the window: a CPU's cpu-clock fires at most once per period
 * while enabled, so samples <= expected + 1 per CPU (+1 for rounding).
 */
static void assert_accounted(json_t *j)
{
	uint64_t seen = e2e_u64(j, "sampling.samples"), idle = e2e_u64(j, "sampling.idle_samples"),
		 tree = e2e_u64(j, "flamegraph.samples"),
		 full = e2e_u64(j, "sampling.lost.ringbuf_full"),
		 other = e2e_u64(j, "sampling.lost.decode_error") +
			 e2e_u64(j, "sampling.lost.ingest_error"),
		 expected = e2e_u64(j, "sampling.expected_samples"),
		 cpus = e2e_u64(j, "sampling.cpus");

	print_message("  samples %llu = idle %llu + in the tree %llu + ringbuf_full %llu (+ %llu "
		      "decode/ingest errors); expected %llu on %llu CPUs\n",
		      (unsigned long long)seen, (unsigned long long)idle, (unsigned long long)tree,
		      (unsigned long long)full, (unsigned long long)other,
		      (unsigned long long)expected, (unsigned long long)cpus);
	assert_true(idle + tree + full <= seen);
	assert_true(seen <= idle + tree + full + other);
	assert_true(seen <= expected + 2 * cpus);
	assert_int_equal(e2e_u64(j, "totals.on_cpu_ns"), tree * e2e_u64(j, "sampling.period_ns"));
}

/* Both CPUs busy at 5000 Hz and the worker stopped for 4 s: the 4 MiB ring buffer fills;
 * what did not fit is counted by reason, and the rest is drained after SIGCONT. Frame
 * pointers: the ring buffer of --unwind dwarf also holds a quarter of a second of stack
 * copies, 16 MiB here, which 4 s of this workload's small samples do not fill. */
static void test_ringbuf_overflow(void **state)
{
	struct bpf_ids mine;
	pid_t rec, worker, w[2];
	json_t *j;
	int rc;

	(void)state;
	w[0] = start_workload(workload, "cpu", "12");
	w[1] = start_workload(workload, "cpu", "12");
	rec = start_record(&worker, &mine, 500, "-F", "5000", "-d", "6s", "--unwind", "fp", NULL);
	assert_int_equal(kill(worker, SIGSTOP), 0);
	sleep(4);
	assert_int_equal(kill(worker, SIGCONT), 0);
	rc = e2e_wait(rec, 30000);
	stop_workload(w[0]);
	stop_workload(w[1]);
	j = record_output(rc);
	print_message("overflow: ringbuf_full %llu, offcpu_ringbuf_full %llu (lost %.0f ms), "
		      "sched_hist_lost %llu, exec_lost %llu\n",
		      (unsigned long long)e2e_u64(j, "sampling.lost.ringbuf_full"),
		      (unsigned long long)e2e_u64(j, "sampling.lost.offcpu_ringbuf_full"),
		      (double)e2e_u64(j, "scheduler.lost_ns") / 1e6,
		      (unsigned long long)e2e_u64(j, "sampling.lost.sched_hist_lost"),
		      (unsigned long long)e2e_u64(j, "sampling.lost.exec_lost"));
	assert_true(e2e_u64(j, "sampling.lost.ringbuf_full") > 1000);
	/* lost off-CPU flushes and lost off-CPU time go together */
	assert_int_equal(e2e_u64(j, "sampling.lost.offcpu_ringbuf_full") == 0,
			 e2e_u64(j, "scheduler.lost_ns") == 0);
	assert_accounted(j);
	json_decref(j);
}

/* A capture much shorter than its set-up (BPF loaded, worker forked and sandboxed, kernel
 * symbols read): samples from before the window would show at once as more samples than two
 * busy CPUs can give in it. */
static void test_no_samples_outside_window(void **state)
{
	char *argv[] = {(char *)hotcold, "record", "-F",     "5000", "-d",
			"300ms",	 "-o",	   out_path, NULL};
	pid_t w[2];
	json_t *j;
	int rc;

	(void)state;
	w[0] = start_workload(workload, "cpu", "10");
	w[1] = start_workload(workload, "cpu", "10");
	rc = e2e_run(argv, err_path, 30000);
	stop_workload(w[0]);
	stop_workload(w[1]);
	if (rc)
		dump_stderr();
	assert_int_equal(rc, 0);
	j = e2e_load_json(out_path);
	assert_non_null(j);
	print_message("300 ms at 5000 Hz, both CPUs busy: %.0f ms on CPU in %.0f ms x %llu CPUs\n",
		      (double)e2e_u64(j, "totals.on_cpu_ns") / 1e6,
		      (double)e2e_u64(j, "duration_ns") / 1e6,
		      (unsigned long long)e2e_u64(j, "sampling.cpus"));
	assert_accounted(j);
	json_decref(j);
}

/* ---- BPF unavailable ---- */

/* Run hotcold record -d 1s -o out_path in a child prepared by prep (NULL: none); returns the
 * exit status, *err what it printed. */
static int run_prepared(bool (*prep)(void), char *const pre_argv[], char **err)
{
	char *argv[16];
	int n = 0, status;
	pid_t pid;

	for (; pre_argv && pre_argv[n]; n++)
		argv[n] = pre_argv[n];
	argv[n++] = (char *)hotcold;
	argv[n++] = "record";
	argv[n++] = "-d";
	argv[n++] = "1s";
	argv[n++] = "-o";
	argv[n++] = out_path;
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0 || dup2(fd, 2) < 0)
			_exit(126);
		if (prep && !prep())
			_exit(125);
		execv(argv[0], argv);
		_exit(127);
	}
	status = e2e_wait(pid, 20000);
	*err = e2e_read_file(err_path, NULL);
	return status;
}

/* A private mount namespace with an empty tmpfs over /sys/kernel/btf. */
static bool hide_btf(void)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("hc-no-btf", "/sys/kernel/btf", "tmpfs", MS_NOSUID | MS_NODEV, "size=4k")) {
		fprintf(stderr, "hiding /sys/kernel/btf: %s\n", strerror(errno));
		return false;
	}
	return access("/sys/kernel/btf/vmlinux", F_OK) != 0;
}

static int lines_of(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

static void test_no_btf(void **state)
{
	struct bpf_ids before, after, mine;
	char list[1024], *err;
	int rc;

	(void)state;
	assert_int_equal(access("/sys/kernel/btf/vmlinux", R_OK), 0);
	bpf_ids__load_hc(&before);
	rc = run_prepared(hide_btf, NULL, &err);
	print_message("without /sys/kernel/btf/vmlinux -> %d: %s", rc, err);
	assert_int_equal(rc, 69);
	assert_int_equal(lines_of(err), 1);
	assert_non_null(strstr(err, "BTF"));
	free(err);
	assert_int_equal(e2e_list_dir(dir, "stderr", list, sizeof(list)), 0);
	bpf_ids__load_hc(&after);
	bpf_ids__diff(&before, &after, &mine);
	assert_int_equal(mine.n, 0);
}

/* uid 0 without the capabilities: the kernel refuses the programs. (An unprivileged user is
 * test_cli's test_unprivileged.) */
static void test_root_without_caps(void **state)
{
	char *pre[] = {"/usr/bin/setpriv", "--inh-caps=-all", "--ambient-caps=-all",
		       "--bounding-set=-bpf,-perfmon,-sys_admin", NULL};
	char list[1024], *err;
	int rc;

	(void)state;
	rc = run_prepared(NULL, pre, &err);
	print_message("root without CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN -> %d: %s", rc, err);
	assert_int_equal(rc, 77);
	assert_int_equal(lines_of(err), 1);
	assert_non_null(strstr(err, "CAP_BPF"));
	free(err);
	assert_int_equal(e2e_list_dir(dir, "stderr", list, sizeof(list)), 0);
}

int main(int argc, char **argv)
{
	const char *filter = getenv("HC_TEST_FILTER"), *ci = getenv("CI");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_worker_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_main_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sigterm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_binary_deleted_replaced_exited, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exited_before_drain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pid_reuse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ringbuf_overflow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_samples_outside_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_btf, setup, teardown),
		cmocka_unit_test_setup_teardown(test_root_without_caps, setup, teardown),
	};

	/* The second program of test_pid_reuse. */
	if (argc == 3 && !strcmp(argv[1], "--reuse-child")) {
		hc_fault_loop(atof(argv[2]));
		return 0;
	}
	e2e_require_root();
	/* HC_TEST_FILTER=test_pid_reuse (a glob) runs only those while working on one. Never
	 * under CI=true: a filter left in the environment would pass the run with tests unrun. */
	if (filter && *filter) {
		if (ci && !strcmp(ci, "true")) {
			fprintf(stderr,
				"FAIL: HC_TEST_FILTER=%s would leave tests unrun, and "
				"CI=true runs every test\n",
				filter);
			return 1;
		}
		fprintf(stderr, "HC_TEST_FILTER=%s: only the matching tests run\n", filter);
		cmocka_set_test_filter(filter);
	}
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_WORKLOAD");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
