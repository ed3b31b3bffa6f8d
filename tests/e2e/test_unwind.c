// SPDX-License-Identifier: GPL-2.0-only
/*
 * User stacks without frame pointers (issue 7), as root with real BPF: record the unwinding
 * workload (unwind_workload.c, -O2 -fomit-frame-pointer) and check what it is known to do:
 *  - --unwind dwarf: at least 90 % of the on-CPU time of its leaf carries the
 *    whole chain main > uw_chain_1 > ... > uw_leaf, and at least 90 % reaches _start; a thread
 *    blocked in glibc's read() since before the capture, and one that blocks there every
 *    10 ms, have at least 90 % of their blocked time under the function that called read();
 *  - --unwind fp: the same blocked time is NOT under that caller (what the issue is about:
 *    and the proof the assertion above can fail);
 *  - a byte budget too small: the excess samples fall back to frame pointers, counted, and
 *    no sample is lost for it;
 *  - a copy too short to reach main: stacks end in "[truncated]", counted by reason.
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

#define MAX_DEPTH 256

static const char *hotcold, *workload;
static char *dir;
static char out_path[600], err_path[600];

struct share {
	uint64_t total;	     /* `what` at every outermost node named like the chain's last frame */
	uint64_t good;	     /* of it, where the path from the thread ends with the whole chain */
	uint64_t from_start; /* of it, where the outermost user frame is start_name */
};

struct walk {
	const char *const *chain;
	int n;
	const char *what;
	const char *start_name;
	const char *path[MAX_DEPTH];
	int depth;
	struct share s;
};

static bool path_ends_with_chain(const struct walk *w)
{
	if (w->depth < w->n)
		return false;
	for (int i = 0; i < w->n; i++)
		if (strcmp(w->path[w->depth - w->n + i], w->chain[i]))
			return false;
	return true;
}

static void walk_frames(json_t *node, struct walk *w)
{
	const char *name = json_string_value(json_object_get(node, "name"));
	json_t *c;
	size_t i;

	if (!name || w->depth >= MAX_DEPTH)
		return;
	w->path[w->depth++] = name;
	if (!strcmp(name, w->chain[w->n - 1]) &&
	    !strcmp(json_string_value(json_object_get(node, "kind")), "user")) {
		uint64_t v = e2e_field(node, w->what);

		w->s.total += v;
		if (path_ends_with_chain(w))
			w->s.good += v;
		if (w->start_name && !strcmp(w->path[0], w->start_name))
			w->s.from_start += v;
		w->depth--;
		return; /* inclusive: nothing below counts again */
	}
	json_array_foreach (json_object_get(node, "children"), i, c)
		walk_frames(c, w);
	w->depth--;
}

/* The share of `what` at chain's last frame carrying the whole chain, over the threads of pid
 * named thread (NULL: all). */
static struct share chain_share(json_t *root, pid_t pid, const char *thread,
				const char *const chain[], int n, const char *what,
				const char *start_name)
{
	struct walk w = {.chain = chain, .n = n, .what = what, .start_name = start_name};
	json_t *p = e2e_process_node(root, (uint32_t)pid), *t, *c;
	size_t i, k;

	assert_non_null(p);
	json_array_foreach (json_object_get(p, "children"), i, t) {
		if (thread && strcmp(json_string_value(json_object_get(t, "name")), thread))
			continue;
		json_array_foreach (json_object_get(t, "children"), k, c)
			walk_frames(c, &w);
	}
	return w.s;
}

/* `what` of pid's threads named thread. */
static uint64_t thread_sum(json_t *root, pid_t pid, const char *thread, const char *what)
{
	json_t *p = e2e_process_node(root, (uint32_t)pid), *t;
	uint64_t sum = 0;
	size_t i;

	assert_non_null(p);
	json_array_foreach (json_object_get(p, "children"), i, t)
		if (!strcmp(json_string_value(json_object_get(t, "name")), thread))
			sum += e2e_field(t, what);
	return sum;
}

static int setup(void **state)
{
	(void)state;
	dir = e2e_tmpdir();
	snprintf(out_path, sizeof(out_path), "%s/out.json", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	e2e_remove_tmpdir(dir);
	free(dir);
	return 0;
}

/* Record the workload for 3 s at 999 Hz with the extra flags (NULL-ended); its pid in *pid. */
static json_t *record(pid_t *pid, ...)
{
	char *argv[32] = {(char *)hotcold, "record", "-F", "999", "-d", "3s", "-o", out_path};
	char *wargv[] = {(char *)workload, "6", NULL};
	int n = 8;
	va_list ap;

	va_start(ap, pid);
	for (char *a; (a = va_arg(ap, char *)) && n < 31;)
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	/* The blocked thread goes to sleep before the capture: the start iterator takes it. */
	assert_int_equal(e2e_record_pid(wargv, 300, argv, err_path, pid), 0);
	return e2e_load_json(out_path);
}

static const char *const main_chain[] = {"main",       "uw_chain_1", "uw_chain_2",
					 "uw_chain_3", "uw_chain_4", "uw_leaf"};
static const char *const blocked_chain[] = {"uw_blocked_thread", "uw_blocked_outer",
					    "uw_blocked_wait"};
static const char *const pulse_chain[] = {"uw_pulse_thread", "uw_pulse_outer", "uw_pulse_wait"};

static double ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

static void test_dwarf_chains(void **state)
{
	struct share on, blk, pul;
	uint64_t blk_off, pul_off;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(&pid, "--unwind", "dwarf", NULL);
	assert_non_null(j);
	on = chain_share(j, pid, NULL, main_chain, 6, "on_cpu_ns", "_start");
	blk = chain_share(j, pid, "uw-blocked", blocked_chain, 3, "off_cpu_ns", NULL);
	pul = chain_share(j, pid, "uw-pulse", pulse_chain, 3, "off_cpu_ns", NULL);
	blk_off = thread_sum(j, pid, "uw-blocked", "off_cpu_ns");
	pul_off = thread_sum(j, pid, "uw-pulse", "off_cpu_ns");
	print_message("dwarf: uw_leaf on CPU %.0f ms, %.1f %% with the whole chain, %.1f %% from "
		      "_start\n",
		      (double)on.total / 1e6, 100 * ratio(on.good, on.total),
		      100 * ratio(on.from_start, on.total));
	print_message("  uw-blocked: %.0f ms blocked, %.1f %% under uw_blocked_outer > "
		      "uw_blocked_wait\n",
		      (double)blk_off / 1e6, 100 * ratio(blk.good, blk_off));
	print_message("  uw-pulse: %.0f ms blocked, %.1f %% under uw_pulse_outer > uw_pulse_wait\n",
		      (double)pul_off / 1e6, 100 * ratio(pul.good, pul_off));
	print_message("  copies %llu (%llu bytes), dwarf stacks %llu (%llu truncated), fp %llu, "
		      "fallback %llu, unwinder %llu stacks in %.1f ms\n",
		      (unsigned long long)e2e_u64(j, "unwind.copies.taken"),
		      (unsigned long long)e2e_u64(j, "unwind.copies.bytes"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.dwarf"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.dwarf_truncated"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.frame_pointers"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.fallback"),
		      (unsigned long long)e2e_u64(j, "unwind.unwinder.stacks"),
		      (double)e2e_u64(j, "unwind.unwinder.ns") / 1e6);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j, "unwind"), "mode")), "copy");
	/* 3 s at 999 Hz of one busy thread: well over a thousand samples in uw_leaf. */
	assert_true(on.total > 1000000000ull);
	assert_true(on.good >= on.total * 9 / 10);
	assert_true(on.from_start >= on.total * 9 / 10);
	assert_true(blk_off > 2000000000ull);
	assert_true(blk.good >= blk_off * 9 / 10);
	assert_true(pul_off > 1000000000ull);
	assert_true(pul.good >= pul_off * 9 / 10);
	assert_true(e2e_u64(j, "unwind.copies.taken") > 1000);
	assert_true(e2e_u64(j, "unwind.user_stacks.dwarf") > 1000);
	assert_true(e2e_u64(j, "unwind.unwinder.ends.complete") >
		    e2e_u64(j, "unwind.unwinder.stacks") * 9 / 10);
	json_decref(j);
}

/* --unwind table: the same chains walked in BPF from the compiled tables, no copies. */
static void test_table_chains(void **state)
{
	uint64_t walks, complete, pul_off, blk_off;
	struct share on, pul, blk;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(&pid, "--unwind", "table", NULL);
	assert_non_null(j);
	on = chain_share(j, pid, NULL, main_chain, 6, "on_cpu_ns", "_start");
	pul = chain_share(j, pid, "uw-pulse", pulse_chain, 3, "off_cpu_ns", NULL);
	pul_off = thread_sum(j, pid, "uw-pulse", "off_cpu_ns");
	blk = chain_share(j, pid, "uw-blocked", blocked_chain, 3, "off_cpu_ns", NULL);
	blk_off = thread_sum(j, pid, "uw-blocked", "off_cpu_ns");
	walks = e2e_u64(j, "unwind.tables.walks");
	complete = e2e_u64(j, "unwind.tables.ends.complete");
	print_message("table: uw_leaf on CPU %.0f ms, %.1f %% with the whole chain, %.1f %% from "
		      "_start\n",
		      (double)on.total / 1e6, 100 * ratio(on.good, on.total),
		      100 * ratio(on.from_start, on.total));
	print_message("  uw-pulse: %.0f ms blocked, %.1f %% under uw_pulse_outer > uw_pulse_wait; "
		      "uw-blocked: %.0f ms, %.1f %% under uw_blocked_outer > uw_blocked_wait\n",
		      (double)pul_off / 1e6, 100 * ratio(pul.good, pul_off), (double)blk_off / 1e6,
		      100 * ratio(blk.good, blk_off));
	print_message("  walks %llu (%llu complete, %llu fp frames), not published %llu, table "
		      "stacks %llu (%llu truncated); %llu objects, %llu rows, %.1f ms publishing\n",
		      (unsigned long long)walks, (unsigned long long)complete,
		      (unsigned long long)e2e_u64(j, "unwind.tables.fp_frames"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.no_process"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.table"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.table_truncated"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.objects"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.rows_used"),
		      (double)e2e_u64(j, "unwind.tables.ns") / 1e6);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(j, "unwind"), "mode")), "table");
	assert_true(on.total > 1000000000ull);
	assert_true(on.good >= on.total * 9 / 10);
	assert_true(on.from_start >= on.total * 9 / 10);
	assert_int_equal(e2e_u64(j, "unwind.copies.taken"), 0);
	assert_int_equal(e2e_u64(j, "unwind.unwinder.stacks"), 0);
	assert_true(walks > 1000);
	assert_true(complete >= walks * 9 / 10);
	/* each walked stack reaches user space (off-CPU ones once per flush) */
	assert_true(e2e_u64(j, "unwind.user_stacks.table") >= walks * 9 / 10);
	/* switch-outs inside the capture are walked too, and the start iterator walks the
	 * thread asleep before it (-p publishes the process before the window opens) */
	assert_true(pul_off > 1000000000ull);
	assert_true(pul.good >= pul_off * 9 / 10);
	assert_true(blk_off > 2000000000ull);
	assert_true(blk.good >= blk_off * 9 / 10);
	assert_int_equal(e2e_u64(j, "unwind.tables.no_process"), 0);
	/* the workload and libc at least, each compiled once */
	assert_true(e2e_u64(j, "unwind.tables.objects") >= 2);
	assert_true(e2e_u64(j, "unwind.tables.rows_used") > 1000);
	assert_int_equal(e2e_u64(j, "unwind.tables.full"), 0);
	json_decref(j);
}

/* --unwind table, a process started after the capture: published at its exec (the worker is
 * woken for it), its busy chain run by a fork of it (walked with the parent's tables until the
 * fork is published itself). */
static void test_table_after_attach(void **state)
{
	char *argv[] = {
		(char *)hotcold, "record", "--unwind", "table", "--comm", "hc-unwind-wl", "-F",
		"999",		 "-d",	   "3s",       "-v",	"-o",	  out_path,	  NULL};
	char *wargv[] = {(char *)workload, "2", "fork", NULL};
	struct share on;
	pid_t r, w, pid;
	json_t *j;
	int fd;

	(void)state;
	r = e2e_spawn(argv, NULL, err_path);
	assert_true(r > 0);
	assert_true(e2e_wait_text(err_path, "the window is open", 30000));
	w = e2e_spawn(wargv, &fd, NULL);
	assert_true(w > 0);
	pid = e2e_read_pid(fd);
	close(fd);
	assert_int_equal(e2e_wait(r, 60000), 0);
	if (pid > 0)
		kill(pid, SIGKILL);
	e2e_wait(w, 5000);
	assert_true(pid > 0);
	j = e2e_load_json(out_path);
	assert_non_null(j);
	on = chain_share(j, pid, NULL, main_chain, 6, "on_cpu_ns", "_start");
	print_message("table, started after attach (a fork): uw_leaf on CPU %.0f ms, %.1f %% from "
		      "_start; walks %llu (%llu with the parent's tables), not published %llu\n",
		      (double)on.total / 1e6, 100 * ratio(on.from_start, on.total),
		      (unsigned long long)e2e_u64(j, "unwind.tables.walks"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.parent"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.no_process"));
	/* 2 s of one busy thread at 999 Hz */
	assert_true(on.total > 1000000000ull);
	assert_true(on.from_start >= on.total * 9 / 10);
	json_decref(j);
}

/* Frame pointers alone lose read()'s caller: glibc has none. */
static void test_fp_loses_callers(void **state)
{
	struct share blk;
	uint64_t blk_off;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(&pid, "--unwind", "fp", NULL);
	assert_non_null(j);
	blk = chain_share(j, pid, "uw-blocked", blocked_chain, 3, "off_cpu_ns", NULL);
	blk_off = thread_sum(j, pid, "uw-blocked", "off_cpu_ns");
	print_message("fp: uw-blocked %.0f ms blocked, %.1f %% under its caller; copies %llu\n",
		      (double)blk_off / 1e6, 100 * ratio(blk.good, blk_off),
		      (unsigned long long)e2e_u64(j, "unwind.copies.taken"));
	assert_true(blk_off > 2000000000ull);
	assert_true(blk.good < blk_off / 10);
	assert_int_equal(e2e_u64(j, "unwind.copies.taken"), 0);
	assert_true(e2e_u64(j, "unwind.user_stacks.frame_pointers") > 1000);
	json_decref(j);
}

/* 64 KiB/s is ~4 copies a second: the rest are frame-pointer stacks, counted, none lost. */
static void test_budget_fallback(void **state)
{
	uint64_t seen, idle, filtered, tree, full;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(&pid, "--unwind", "dwarf", "--copy-budget", "64K", NULL);
	assert_non_null(j);
	seen = e2e_u64(j, "sampling.samples");
	idle = e2e_u64(j, "sampling.idle_samples");
	filtered = e2e_u64(j, "sampling.filtered_samples");
	tree = e2e_u64(j, "flamegraph.samples");
	full = e2e_u64(j, "sampling.lost.ringbuf_full");
	print_message("budget 64K/s: copies %llu (%llu bytes), over budget %llu, dwarf stacks "
		      "%llu, frame-pointer stacks %llu; samples %llu = idle %llu + other "
		      "processes %llu + tree %llu + ringbuf_full %llu\n",
		      (unsigned long long)e2e_u64(j, "unwind.copies.taken"),
		      (unsigned long long)e2e_u64(j, "unwind.copies.bytes"),
		      (unsigned long long)e2e_u64(j, "unwind.copies.over_budget"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.dwarf"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.frame_pointers"),
		      (unsigned long long)seen, (unsigned long long)idle,
		      (unsigned long long)filtered, (unsigned long long)tree,
		      (unsigned long long)full);
	assert_true(e2e_u64(j, "unwind.copies.over_budget") > 1000);
	assert_true(e2e_u64(j, "unwind.user_stacks.frame_pointers") > 1000);
	/* 3 s of 64 KiB/s with a 64 KiB burst: at most ~256 KiB, a copy at most 16 KiB over. */
	assert_true(e2e_u64(j, "unwind.copies.bytes") < 300 * 1024);
	assert_int_equal(seen, idle + filtered + tree + full);
	json_decref(j);
}

/* 1 KiB of stack cannot hold uw_chain_2's 3 KiB buffer: the unwinder stops there, and says
 * so with a "[truncated]" frame. */
static void test_truncated(void **state)
{
	static const char *const cut[] = {"[truncated]", "uw_chain_2", "uw_chain_3", "uw_chain_4",
					  "uw_leaf"};
	struct share s;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(&pid, "--unwind", "dwarf", "--stack-copy", "1K", NULL);
	assert_non_null(j);
	s = chain_share(j, pid, NULL, cut, 5, "on_cpu_ns", NULL);
	print_message("1K copies: uw_leaf %.0f ms on CPU, %.1f %% under [truncated] > uw_chain_2; "
		      "dwarf stacks %llu, truncated %llu (stack_end %llu)\n",
		      (double)s.total / 1e6, 100 * ratio(s.good, s.total),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.dwarf"),
		      (unsigned long long)e2e_u64(j, "unwind.user_stacks.dwarf_truncated"),
		      (unsigned long long)e2e_u64(j, "unwind.unwinder.ends.stack_end"));
	assert_true(s.total > 1000000000ull);
	assert_true(s.good >= s.total * 9 / 10);
	assert_true(e2e_u64(j, "unwind.user_stacks.dwarf_truncated") > 1000);
	assert_true(e2e_u64(j, "unwind.unwinder.ends.stack_end") > 1000);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_dwarf_chains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_chains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_after_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fp_loses_callers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
	};

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_UNWIND_WORKLOAD");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
