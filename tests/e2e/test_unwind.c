// SPDX-License-Identifier: GPL-2.0-only
/*
 * User stacks without frame pointers (issue 7), as root with real BPF: record the unwinding
 * workload (unwind_workload.c, -O2 -fomit-frame-pointer) and check what it is known to do:
 *  - --unwind copy: at least 90 % of the on-CPU time of its leaf carries the
 *    whole chain main > uw_chain_1 > ... > uw_leaf, and at least 90 % reaches _start; a thread
 *    blocked in glibc's read() since before the capture, and one that blocks there every
 *    10 ms, have at least 90 % of their blocked time under the function that called read();
 *  - --unwind fp: the same blocked time is NOT under that caller (what the issue is about:
 *    and the proof the assertion above can fail);
 *  - a byte budget too small: the excess samples fall back to frame pointers, counted, and
 *    no sample is lost for it;
 *  - a copy too short to reach main: stacks end in "[truncated]", counted by reason (asked
 *    for as --unwind dwarf, copy's earlier name, still accepted);
 *  - --unwind table through the PLT (hc-unwind-wl plt): at least 99 % of the main thread's
 *    on-CPU time reaches _start through main > uw_plt_outer > uw_plt_loop, and so does at
 *    least 99 % of the time whose user leaf is in the executable's .plt (a frame "[unknown]"
 *    of the workload at a .plt offset: a stub has no symbol), of which there must be some:
 *    its CFA is the PLT's expression;
 *  - --unwind table through a signal frame (hc-unwind-wl signal): at least 99 % of the
 *    handler's uw_sig_work time has the whole chain _start ... main > uw_sig_outer >
 *    uw_sig_loop > [unknown] (libc's __restore_rt: a local symbol, stripped) >
 *    uw_sig_handler > uw_sig_work, and 99 % of the thread's time reaches _start;
 *  - --unwind table --locks (hc-unwind-wl locks): at least 90 % of the mmap_lock waits reached
 *    through glibc's mmap and munmap are under uw_lock_thread > uw_lock_caller; --unwind fp
 *    puts less there (glibc's wrappers keep no frame pointer).
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
#include <elf.h>

#include "e2e.h"

#define MAX_DEPTH 256

static const char *hotcold, *workload;
static char *dir;
static char out_path[600], err_path[600];

struct share {
	uint64_t total;	     /* `what` at every outermost node named like the chain's last frame */
	uint64_t good;	     /* of it, where the path from the thread ends with the whole chain */
	uint64_t from_start; /* of it, where the outermost user frame is start_name */
	uint64_t whole;	     /* of it, both: the whole chain, and start_name outermost */
};

struct walk {
	const char *const *chain;
	int n;
	const char *what;
	const char *start_name;
	uint64_t leaf_lo, leaf_hi; /* when leaf_hi: the last frame's file offset is in [lo, hi) */
	json_t *path[MAX_DEPTH];
	int depth;
	struct share s;
};

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

/* Whether node is the user frame spec names: "NAME", or "NAME@MODULE" for a frame of that
 * object (a file name: "[unknown]@libc.so.6"). */
static bool frame_is(json_t *node, const char *spec)
{
	const char *name = json_string_value(json_object_get(node, "name"));
	const char *kind = json_string_value(json_object_get(node, "kind"));
	const char *at = strchr(spec, '@');
	size_t len = at ? (size_t)(at - spec) : strlen(spec);
	const char *module;

	if (!name || !kind || strcmp(kind, "user") || strlen(name) != len ||
	    strncmp(name, spec, len))
		return false;
	if (!at)
		return true;
	module = base_name(json_string_value(json_object_get(node, "module")));
	return module && !strcmp(module, at + 1);
}

static bool leaf_matches(json_t *node, const struct walk *w)
{
	const char *off;

	if (!frame_is(node, w->chain[w->n - 1]))
		return false;
	if (!w->leaf_hi)
		return true;
	off = json_string_value(json_object_get(node, "offset"));
	return off && strtoull(off, NULL, 16) >= w->leaf_lo && strtoull(off, NULL, 16) < w->leaf_hi;
}

static bool path_ends_with_chain(const struct walk *w)
{
	if (w->depth < w->n)
		return false;
	for (int i = 0; i < w->n; i++)
		if (!frame_is(w->path[w->depth - w->n + i], w->chain[i]))
			return false;
	return true;
}

static void walk_frames(json_t *node, struct walk *w)
{
	json_t *c;
	size_t i;

	if (!json_string_value(json_object_get(node, "name")) || w->depth >= MAX_DEPTH)
		return;
	w->path[w->depth++] = node;
	if (leaf_matches(node, w)) {
		uint64_t v = e2e_field(node, w->what);
		bool good = path_ends_with_chain(w);
		bool from_start = w->start_name && frame_is(w->path[0], w->start_name);

		w->s.total += v;
		w->s.good += good ? v : 0;
		w->s.from_start += from_start ? v : 0;
		w->s.whole += good && from_start ? v : 0;
		w->depth--;
		return; /* inclusive: nothing below counts again */
	}
	json_array_foreach (json_object_get(node, "children"), i, c)
		walk_frames(c, w);
	w->depth--;
}

static void walk_threads(json_t *root, pid_t pid, const char *thread, struct walk *w)
{
	json_t *p = e2e_process_node(root, (uint32_t)pid), *t, *c;
	size_t i, k;

	assert_non_null(p);
	json_array_foreach (json_object_get(p, "children"), i, t) {
		if (thread && strcmp(json_string_value(json_object_get(t, "name")), thread))
			continue;
		json_array_foreach (json_object_get(t, "children"), k, c)
			walk_frames(c, w);
	}
}

/* The share of `what` at chain's last frame carrying the whole chain, over the threads of pid
 * named thread (NULL: all). */
static struct share chain_share(json_t *root, pid_t pid, const char *thread,
				const char *const chain[], int n, const char *what,
				const char *start_name)
{
	struct walk w = {.chain = chain, .n = n, .what = what, .start_name = start_name};

	walk_threads(root, pid, thread, &w);
	return w.s;
}

/* How the table walks of profile j ended. */
static void print_walks(json_t *j)
{
	print_message("  walks %llu (%llu complete, %llu unsupported, %llu bad frame), fp frames "
		      "%llu, cache hits %llu of %llu frames\n",
		      (unsigned long long)e2e_u64(j, "unwind.tables.walks"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.ends.complete"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.ends.unsupported"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.ends.bad_frame"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.fp_frames"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.cache_hits"),
		      (unsigned long long)e2e_u64(j, "unwind.tables.frames"));
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

/* Record the workload (mode: NULL, or one of its modes) for 3 s at 999 Hz with the extra flags
 * (NULL-ended); its pid in *pid. */
static json_t *record(const char *mode, pid_t *pid, ...)
{
	char *argv[32] = {(char *)hotcold, "record", "-F", "999", "-d", "3s", "-o", out_path};
	/* 30 s: it outlives any capture, and is killed when record is done (a start slowed by
	 * other load must not find it gone) */
	char *wargv[] = {(char *)workload, "30", (char *)mode, NULL};
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

static void test_copy_chains(void **state)
{
	struct share on, blk, pul;
	uint64_t blk_off, pul_off;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(NULL, &pid, "--unwind", "copy", NULL);
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
	j = record(NULL, &pid, "--unwind", "table", NULL);
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

/* The file offset and size of the section called name in the ELF64 image buf: 0, or -1 when
 * it has none or the image is not one. */
static int elf_section(const char *buf, size_t len, const char *name, uint64_t *off, uint64_t *size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)buf;
	const Elf64_Shdr *sh, *strs;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(*sh) ||
	    eh->e_shoff > len || (len - eh->e_shoff) / sizeof(*sh) < eh->e_shnum ||
	    eh->e_shstrndx >= eh->e_shnum)
		return -1;
	sh = (const Elf64_Shdr *)(buf + eh->e_shoff);
	strs = &sh[eh->e_shstrndx];
	if (strs->sh_offset > len || strs->sh_size > len - strs->sh_offset)
		return -1;
	for (int i = 0; i < eh->e_shnum; i++) {
		const char *nm;

		if (sh[i].sh_name >= strs->sh_size)
			continue;
		nm = buf + strs->sh_offset + sh[i].sh_name;
		if (strnlen(nm, strs->sh_size - sh[i].sh_name) == strlen(name) &&
		    !memcmp(nm, name, strlen(name))) {
			*off = sh[i].sh_offset;
			*size = sh[i].sh_size;
			return 0;
		}
	}
	return -1;
}

/*
 * --unwind table, a call through the PLT: the main thread calls strlen() through
 * strlen@plt, and each round first drops the PLT's page, so the call faults in the stub
 * (unwind_workload.c says why). Samples there have their user pc in .plt, whose rows are the
 * PLT's CFA expression (ld's call frame information for it).
 */
static void test_table_plt(void **state)
{
	static const char *const chain[] = {"main", "uw_plt_outer", "uw_plt_loop"};
	static const char *const stub_chain[] = {"main", "uw_plt_outer", "uw_plt_loop",
						 "[unknown]@hc-unwind-wl"};
	struct walk w = {.chain = stub_chain, .n = 4, .what = "on_cpu_ns", .start_name = "_start"};
	uint64_t on, plt_off = 0, plt_size = 0;
	struct share s;
	size_t len;
	char *elf;
	pid_t pid;
	json_t *j;

	(void)state;
	elf = e2e_read_file(workload, &len);
	assert_non_null(elf);
	assert_int_equal(elf_section(elf, len, ".plt", &plt_off, &plt_size), 0);
	free(elf);
	j = record("plt", &pid, "--unwind", "table", NULL);
	assert_non_null(j);
	on = thread_sum(j, pid, "hc-unwind-wl", "on_cpu_ns");
	s = chain_share(j, pid, NULL, chain, 3, "on_cpu_ns", "_start");
	w.leaf_lo = plt_off;
	w.leaf_hi = plt_off + plt_size;
	walk_threads(j, pid, NULL, &w);
	print_message("table, PLT: main thread %.0f ms on CPU, %.1f %% from _start through main > "
		      "uw_plt_outer > uw_plt_loop; user leaf in .plt [%#llx, %#llx) %.0f ms "
		      "(%.1f %%), %.1f %% of it from _start through the chain\n",
		      (double)on / 1e6, 100 * ratio(s.whole, on), (unsigned long long)w.leaf_lo,
		      (unsigned long long)w.leaf_hi, (double)w.s.total / 1e6,
		      100 * ratio(w.s.total, on), 100 * ratio(w.s.whole, w.s.total));
	print_walks(j);
	/* 3 s of one busy thread */
	assert_true(on > 1000000000ull);
	assert_true(s.whole >= on * 99 / 100);
	/* the faults hold the pc there for 40-50 % of the time here */
	assert_true(w.s.total > on / 10);
	assert_true(w.s.whole >= w.s.total * 99 / 100);
	json_decref(j);
}

/*
 * --unwind table, a signal frame: SIGALRM every 10 ms runs uw_sig_handler > uw_sig_work for
 * a few ms on top of uw_sig_loop. The handler's caller is the signal trampoline, libc's
 * __restore_rt (named [unknown]: a local symbol of a stripped libc; its offset is the nop
 * before it, where libc's FDE starts for unwinders that look up a return address less one),
 * whose CFI (CIE augmentation S) reads the interrupted registers from the signal frame.
 */
static void test_table_signal(void **state)
{
	static const char *const chain[] = {"main",	      "uw_sig_outer",
					    "uw_sig_loop",    "[unknown]@libc.so.6",
					    "uw_sig_handler", "uw_sig_work"};
	static const char *const loop_chain[] = {"main", "uw_sig_outer", "uw_sig_loop"};
	struct share work, loop;
	uint64_t on;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record("signal", &pid, "--unwind", "table", NULL);
	assert_non_null(j);
	on = thread_sum(j, pid, "hc-unwind-wl", "on_cpu_ns");
	work = chain_share(j, pid, NULL, chain, 6, "on_cpu_ns", "_start");
	loop = chain_share(j, pid, NULL, loop_chain, 3, "on_cpu_ns", "_start");
	print_message("table, signal: uw_sig_work %.0f ms on CPU, %.1f %% with the whole chain "
		      "from _start through uw_sig_loop > [unknown] (libc) > uw_sig_handler; main "
		      "thread %.0f ms, %.1f %% from _start through main > uw_sig_outer > "
		      "uw_sig_loop\n",
		      (double)work.total / 1e6, 100 * ratio(work.whole, work.total),
		      (double)on / 1e6, 100 * ratio(loop.whole, on));
	print_walks(j);
	assert_true(on > 1000000000ull);
	/* a few ms in every 10: hundreds of samples in the handler however fast the CPU */
	assert_true(work.total > 300000000ull);
	assert_true(work.whole >= work.total * 99 / 100);
	assert_true(loop.whole >= on * 99 / 100);
	json_decref(j);
}

struct lock_share {
	uint64_t all;	/* wait at every lock node of the process */
	uint64_t under; /* of it, below uw_lock_thread > uw_lock_caller */
	uint64_t waits; /* contentions */
};

static void walk_lock_nodes(json_t *n, json_t *parent, bool below, struct lock_share *ls)
{
	const char *kind = json_string_value(json_object_get(n, "kind"));
	json_t *c;
	size_t i;

	if (frame_is(n, "uw_lock_caller") && parent && frame_is(parent, "uw_lock_thread"))
		below = true;
	if (kind && !strcmp(kind, "lock")) {
		ls->all += e2e_field(n, "value");
		ls->under += below ? e2e_field(n, "value") : 0;
	}
	json_array_foreach (json_object_get(n, "children"), i, c)
		walk_lock_nodes(c, n, below, ls);
}

/* Record hc-unwind-wl locks with --locks and the unwinding mode; its waiters' share. */
static struct lock_share record_locks(const char *mode)
{
	struct lock_share ls = {0};
	json_t *j, *proc;
	pid_t pid;

	j = record("locks", &pid, "--unwind", mode, "--locks", NULL);
	assert_non_null(j);
	proc = e2e_process_node(json_object_get(j, "locks"), (uint32_t)pid);
	assert_non_null(proc);
	walk_lock_nodes(proc, NULL, false, &ls);
	ls.waits = e2e_field(proc, "samples");
	print_message("--unwind %s --locks: %llu waits, %.0f ms; %.1f %% under uw_lock_thread > "
		      "uw_lock_caller; no stack %llu\n",
		      mode, (unsigned long long)ls.waits, (double)ls.all / 1e6,
		      100 * ratio(ls.under, ls.all),
		      (unsigned long long)e2e_u64(j, "locks.no_stack"));
	assert_int_equal(ls.all, e2e_field(proc, "value"));
	json_decref(j);
	return ls;
}

/*
 * Lock waits reached through glibc: four threads mmap (populated) and munmap through glibc's
 * wrappers and contend on their mmap_lock. The wait's user stack starts in the wrapper, which
 * keeps no frame pointer: the tables find its caller, frame pointers do not.
 */
static void test_table_locks(void **state)
{
	struct lock_share table, fp;

	(void)state;
	table = record_locks("table");
	fp = record_locks("fp");
	/* hundreds of rwsem waits a second: a share of many */
	assert_true(table.waits > 100);
	assert_true(table.under >= table.all * 9 / 10);
	assert_true(ratio(fp.under, fp.all) < ratio(table.under, table.all));
}

/* Frame pointers alone lose read()'s caller: glibc has none. */
static void test_fp_loses_callers(void **state)
{
	struct share blk;
	uint64_t blk_off;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(NULL, &pid, "--unwind", "fp", NULL);
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
	j = record(NULL, &pid, "--unwind", "copy", "--copy-budget", "64K", NULL);
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
	j = record(NULL, &pid, "--unwind", "dwarf", "--stack-copy", "1K", NULL);
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
		cmocka_unit_test_setup_teardown(test_copy_chains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_chains, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_after_attach, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_plt, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_signal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_table_locks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fp_loses_callers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget_fallback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
	};

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_UNWIND_WORKLOAD");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
