// SPDX-License-Identifier: GPL-2.0-only
/*
 * Scheduled capture and interchange formats end to end, as root with real BPF:
 *  - record -o with a strftime pattern: the expanded UTC name, silent on success, no hidden
 *    files left;
 *  - SIGTERM mid-capture: a complete, shorter profile; SIGKILL: nothing that looks complete,
 *    and the next capture of that name cleans up;
 *  - a second capture to the same name fails at once (75); a full disk (74) and a read-only
 *    or missing directory (73) leave nothing behind;
 *  - a real capture converted by report to folded, pprof (read back by `go tool pprof` and by
 *    tests/pprof's reader) and speedscope keeps its totals exactly; record writes pprof
 *    itself; report --diff of a capture with itself is all zeros.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "tests/pprof/pprof_read.h"
#include "tests/skip.h"

static const char *hotcold, *workload;
static char *dir;	/* per-test scratch directory */
static char saved[512]; /* one real capture, shared by the format tests */
static json_t *saved_doc;

static int run(char *const argv[], char **out, char **err)
{
	char outp[600], errp[600];
	int rc, fd;
	pid_t pid;

	snprintf(errp, sizeof(errp), "%s.stderr", dir);
	snprintf(outp, sizeof(outp), "%s.stdout", dir);
	pid = e2e_spawn(argv, &fd, errp);
	assert_true(pid > 0);
	{
		FILE *o = fopen(outp, "w");
		char buf[65536];
		ssize_t n;

		assert_non_null(o);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			fwrite(buf, 1, (size_t)n, o);
		fclose(o);
		close(fd);
	}
	rc = e2e_wait(pid, 120000);
	if (out)
		*out = e2e_read_file(outp, NULL);
	if (err)
		*err = e2e_read_file(errp, NULL);
	unlink(outp);
	unlink(errp);
	return rc;
}

static int setup(void **state)
{
	(void)state;
	dir = e2e_tmpdir();
	return dir ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	if (dir)
		e2e_remove_tmpdir(dir);
	free(dir);
	dir = NULL;
	return 0;
}

/* -o PATTERN: the name is the capture's start in UTC; nothing on stdout or stderr. */
static void test_strftime_name(void **state)
{
	char pattern[600], list[1024], name[64], *out, *err;
	char *argv[] = {(char *)hotcold, "record", "-d", "1s", "-o", pattern, NULL};
	struct tm tm;
	time_t t0, t1, t;
	int rc, n;

	(void)state;
	snprintf(pattern, sizeof(pattern), "%s/cap-%%Y%%m%%dT%%H%%M%%SZ.json", dir);
	t0 = time(NULL);
	rc = run(argv, &out, &err);
	t1 = time(NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "");
	assert_string_equal(err, "");
	n = e2e_list_dir(dir, NULL, list, sizeof(list));
	print_message("after the capture: %s", list);
	assert_int_equal(n, 1); /* no temporary or lock file left */
	assert_int_equal(sscanf(list, "cap-%16[0-9TZ].json", name), 1);
	memset(&tm, 0, sizeof(tm));
	assert_non_null(strptime(name, "%Y%m%dT%H%M%SZ", &tm));
	t = timegm(&tm);
	assert_true(t >= t0 && t <= t1);
	free(out);
	free(err);
	{
		char path[1200];
		json_t *j;

		snprintf(path, sizeof(path), "%s/%s", dir, list);
		j = e2e_load_json(path);
		assert_non_null(j);
		assert_true(e2e_u64(j, "sampling.samples") > 0);
		json_decref(j);
	}
}

/* SIGTERM: exit 0 and the whole (shorter) profile; SIGKILL: nothing under the name, and the
 * next capture of that name removes what the killed one left. */
static void test_signals(void **state)
{
	char path[600], list[1024], err[600];
	char *argv[] = {(char *)hotcold, "record", "-v", "-d", "30s", "-o", path, NULL};
	int fd, rc;
	pid_t pid;
	json_t *j;

	(void)state;
	snprintf(path, sizeof(path), "%s/term.json", dir);
	snprintf(err, sizeof(err), "%s/term.err", dir);
	pid = e2e_spawn(argv, &fd, err);
	assert_true(pid > 0);
	/* 3 s of an open window (loading before it takes longer on a loaded machine) */
	assert_true(e2e_wait_text(err, "the window is open", 20000));
	sleep(3);
	kill(pid, SIGTERM);
	/* 60 s: a hang guard (the profile's duration, under 20 s of the -d 30s, says the
	 * signal ended the window; writing it under ASan on a loaded machine takes a while) */
	rc = e2e_wait(pid, 60000);
	close(fd);
	assert_int_equal(rc, 0);
	j = e2e_load_json(path);
	assert_non_null(j);
	assert_true(e2e_u64(j, "duration_ns") > 2000000000ull);
	assert_true(e2e_u64(j, "duration_ns") < 20000000000ull);
	json_decref(j);
	unlink(err);
	assert_int_equal(e2e_list_dir(dir, NULL, list, sizeof(list)), 1);
	unlink(path);

	snprintf(path, sizeof(path), "%s/kill.json", dir);
	pid = e2e_spawn(argv, &fd, "/dev/null");
	assert_true(pid > 0);
	sleep(3);
	kill(pid, SIGKILL);
	rc = e2e_wait(pid, 20000);
	close(fd);
	assert_int_equal(rc, 128 + SIGKILL);
	e2e_list_dir(dir, NULL, list, sizeof(list));
	print_message("after SIGKILL: %s", list);
	assert_int_equal(access(path, F_OK), -1); /* nothing looks complete */
	for (char *tok = strtok(list, " "); tok; tok = strtok(NULL, " "))
		assert_true(!strncmp(tok, ".kill.json.", 11)); /* only hidden leftovers */

	/* the next capture into the directory, under another name (strftime names never
	 * repeat), succeeds and removes what the killed one left */
	{
		char other[700];
		char *argv2[] = {(char *)hotcold, "record", "-d", "500ms", "-o", other, NULL};

		snprintf(other, sizeof(other), "%s/next.json", dir);
		assert_int_equal(run(argv2, NULL, NULL), 0);
	}
	assert_int_equal(e2e_list_dir(dir, NULL, list, sizeof(list)), 1);
	assert_string_equal(list, "next.json");
	unlink(path);

	/* SIGTERM while it is still loading BPF: the whole (empty-ish) profile, exit 0 */
	snprintf(path, sizeof(path), "%s/early.json", dir);
	pid = e2e_spawn(argv, &fd, "/dev/null");
	assert_true(pid > 0);
	usleep(100000);
	kill(pid, SIGTERM);
	rc = e2e_wait(pid, 20000);
	close(fd);
	assert_int_equal(rc, 0);
	j = e2e_load_json(path);
	assert_non_null(j);
	json_decref(j);
	/* next.json, early.json */
	assert_int_equal(e2e_list_dir(dir, NULL, list, sizeof(list)), 2);
	assert_int_equal(access(path, R_OK), 0);
}

/* Not regular files: refused (73), never replaced. %s is the real epoch second in any TZ. */
static void test_special_targets(void **state)
{
	char path[700], list[1024], *err;
	char *argv[] = {(char *)hotcold, "record", "-d", "500ms", "-o", path, NULL};
	struct stat st;
	time_t t0, t1;
	long long secs;

	(void)state;
	snprintf(path, sizeof(path), "%s/null", dir);
	assert_int_equal(mknod(path, S_IFCHR | 0666, makedev(1, 3)), 0);
	assert_int_equal(run(argv, NULL, &err), 73);
	assert_non_null(strstr(err, "not a regular file"));
	free(err);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISCHR(st.st_mode));
	unlink(path);
	snprintf(path, sizeof(path), "%s/link", dir);
	assert_int_equal(symlink("/proc/self/fd/1", path), 0);
	assert_int_equal(run(argv, NULL, &err), 73);
	free(err);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	unlink(path);
	assert_int_equal(e2e_list_dir(dir, NULL, list, sizeof(list)), 0);

	snprintf(path, sizeof(path), "%s/at-%%s.json", dir);
	setenv("TZ", "America/New_York", 1);
	t0 = time(NULL);
	assert_int_equal(run(argv, NULL, NULL), 0);
	t1 = time(NULL);
	unsetenv("TZ");
	assert_int_equal(e2e_list_dir(dir, NULL, list, sizeof(list)), 1);
	assert_int_equal(sscanf(list, "at-%lld.json", &secs), 1);
	assert_true(secs >= (long long)t0 && secs <= (long long)t1);
}

/* Without CAP_SYSLOG the kernel frames cannot be named: the capture works, warns once on
 * stderr, and counts what it could not name (the counters are read after symbolization). */
static void test_no_kernel_symbols(void **state)
{
	char path[700], *err;
	char *argv[] = {"/usr/bin/setpriv",
			"--bounding-set=-all,+bpf,+perfmon,+sys_ptrace,+setuid,+setgid,+setpcap",
			"--inh-caps=-all",
			(char *)hotcold,
			"record",
			"-d",
			"1s",
			"-o",
			path,
			NULL};
	json_t *j;

	(void)state;
	snprintf(path, sizeof(path), "%s/nosyslog.json", dir);
	assert_int_equal(run(argv, NULL, &err), 0);
	print_message("without CAP_SYSLOG: %s", err);
	assert_non_null(strstr(err, "warning: kernel symbols unavailable"));
	free(err);
	j = e2e_load_json(path);
	assert_non_null(j);
	assert_true(e2e_u64(j, "symbolize.kernel_unresolved") > 0);
	json_decref(j);
}

/* Two captures to one name: the second fails at once with 75, the first completes. */
static void test_lock(void **state)
{
	char path[600], list[1024], *err;
	char *first[] = {(char *)hotcold, "record", "-d", "10s", "-o", path, NULL};
	char *second[] = {(char *)hotcold, "record", "-d", "1s", "-o", path, NULL};
	int fd, rc, status;
	pid_t pid;

	(void)state;
	snprintf(path, sizeof(path), "%s/same.json", dir);
	pid = e2e_spawn(first, &fd, "/dev/null");
	assert_true(pid > 0);
	/* wait for the first one's lock file */
	for (int i = 0; i < 100 && e2e_list_dir(dir, NULL, list, sizeof(list)) < 2; i++)
		usleep(50000);
	rc = run(second, NULL, &err);
	print_message("second capture -> %d: %s", rc, err);
	assert_int_equal(rc, 75);
	assert_non_null(strstr(err, "another capture"));
	/* At once, not after a capture: the first (-d 10s) still runs. */
	assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
	free(err);
	assert_int_equal(e2e_wait(pid, 60000), 0);
	close(fd);
	assert_int_equal(e2e_list_dir(dir, NULL, list, sizeof(list)), 1);
	assert_string_equal(list, "same.json");
}

/* A full disk: 74, one line saying why, nothing left. A read-only directory, a missing one,
 * a path through a file: 73 before any capture. */
static void test_disk_errors(void **state)
{
	char mnt[600], path[700], list[1024], *err;
	char *argv[] = {(char *)hotcold, "record", "-d", "1s", "-o", path, NULL};
	int rc;

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s/small", dir);
	assert_int_equal(mkdir(mnt, 0755), 0);
	/* 8 KiB: the capture of a whole machine is larger */
	assert_int_equal(mount("hotcold-test", mnt, "tmpfs", 0, "size=8k"), 0);
	snprintf(path, sizeof(path), "%s/full.json", mnt);
	rc = run(argv, NULL, &err);
	print_message("full disk -> %d: %s", rc, err);
	assert_int_equal(rc, 74);
	assert_non_null(strstr(err, "No space left"));
	assert_int_equal(e2e_list_dir(mnt, NULL, list, sizeof(list)), 0);
	free(err);

	assert_int_equal(mount(NULL, mnt, NULL, MS_REMOUNT | MS_RDONLY, "size=8k"), 0);
	rc = run(argv, NULL, &err);
	print_message("read-only -> %d: %s", rc, err);
	assert_int_equal(rc, 73);
	assert_non_null(strstr(err, "Read-only"));
	free(err);
	assert_int_equal(umount(mnt), 0);

	snprintf(path, sizeof(path), "%s/missing/x.json", dir);
	rc = run(argv, NULL, &err);
	assert_int_equal(rc, 73);
	assert_non_null(strstr(err, "No such file"));
	free(err);
	snprintf(path, sizeof(path), "/etc/hostname/x.json");
	rc = run(argv, NULL, &err);
	assert_int_equal(rc, 73);
	free(err);
}

/* ---- formats: one real capture, converted ---- */

/* `go tool pprof -raw` on a file: under CI=true a missing go is a failure; otherwise skip. */
static void go_pprof_raw(const char *src, struct e2e_go_raw *r)
{
	int rc = e2e_go_pprof_raw(src, dir, r);

	if (rc == -ENOENT)
		hc_skip("go (golang-go) is not installed: go tool pprof is needed");
	if (rc)
		fail_msg("go tool pprof -raw %s failed (%d)", src, rc);
}

static int64_t go_total(const struct e2e_go_raw *r, const char *type)
{
	return e2e_go_total(r, type);
}

static uint64_t root_u64(const char *field)
{
	return e2e_field(json_object_get(saved_doc, "flamegraph"), field);
}

static int formats_setup(void **state)
{
	char *argv[] = {(char *)hotcold, "record", "-F", "499", "-d", "3s", "-o", saved, NULL};
	char *wargv[] = {(char *)workload, "worksleep", "5", NULL};
	pid_t w;
	int fd;

	(void)state;
	if (setup(NULL))
		return -1;
	snprintf(saved, sizeof(saved), "%s/saved.json", dir);
	w = e2e_spawn(wargv, &fd, NULL);
	if (w <= 0)
		return -1;
	e2e_read_pid(fd);
	close(fd);
	if (e2e_run(argv, "/dev/null", 60000) != 0)
		return -1;
	kill(w, SIGKILL);
	e2e_wait(w, 5000);
	saved_doc = e2e_load_json(saved);
	/* the tests below move the per-test dir; keep this one */
	return saved_doc ? 0 : -1;
}

static int formats_teardown(void **state)
{
	json_decref(saved_doc);
	return teardown(state);
}

/* report FILE --format F [-o OUT]: exit 0, nothing on stderr. */
static void report_to(const char *fmt, const char *kind, const char *out)
{
	char *argv[12], *err;
	int n = 0;

	argv[n++] = (char *)hotcold;
	argv[n++] = "report";
	argv[n++] = "--format";
	argv[n++] = (char *)fmt;
	if (kind) {
		argv[n++] = "--kind";
		argv[n++] = (char *)kind;
	}
	argv[n++] = "-o";
	argv[n++] = (char *)out;
	argv[n++] = saved;
	argv[n] = NULL;
	assert_int_equal(run(argv, NULL, &err), 0);
	assert_string_equal(err, "");
	free(err);
}

static void test_pprof_round_trip(void **state)
{
	char out[700], why[256];
	struct pp_profile pp;
	struct e2e_go_raw g;

	(void)state;
	snprintf(out, sizeof(out), "%s/all.pb.gz", dir);
	report_to("pprof", NULL, out);
	assert_int_equal(pp_read_file(out, &pp, why, sizeof(why)), 0);
	assert_int_equal(pp_total(&pp, "samples"), (int64_t)root_u64("samples"));
	assert_int_equal(pp_total(&pp, "cpu"), (int64_t)root_u64("on_cpu_ns"));
	assert_int_equal(pp_total(&pp, "off_cpu"), (int64_t)root_u64("off_cpu_ns"));
	assert_int_equal(pp_total(&pp, "runqueue"), (int64_t)root_u64("runqueue_ns"));
	assert_int_equal(pp.period, (int64_t)e2e_u64(saved_doc, "sampling.period_ns"));
	assert_int_equal(pp.duration_nanos, (int64_t)e2e_u64(saved_doc, "duration_ns"));
	pp_free(&pp);
	assert_true(root_u64("on_cpu_ns") > 0 && root_u64("off_cpu_ns") > 0);

	go_pprof_raw(out, &g);
	print_message("go tool pprof -raw: %d types, %zu samples; cpu %lld off_cpu %lld", g.n_types,
		      g.samples, (long long)go_total(&g, "cpu/nanoseconds"),
		      (long long)go_total(&g, "off_cpu/nanoseconds"));
	assert_int_equal(g.n_types, 4);
	assert_int_equal(go_total(&g, "samples/count"), (int64_t)root_u64("samples"));
	assert_int_equal(go_total(&g, "cpu/nanoseconds"), (int64_t)root_u64("on_cpu_ns"));
	assert_int_equal(go_total(&g, "off_cpu/nanoseconds"), (int64_t)root_u64("off_cpu_ns"));
	assert_int_equal(go_total(&g, "runqueue/nanoseconds"), (int64_t)root_u64("runqueue_ns"));

	/* --kind on: the CPU profile alone */
	snprintf(out, sizeof(out), "%s/on.pb.gz", dir);
	report_to("pprof", "on", out);
	go_pprof_raw(out, &g);
	assert_int_equal(g.n_types, 2);
	assert_int_equal(go_total(&g, "cpu/nanoseconds"), (int64_t)root_u64("on_cpu_ns"));

	/* the workload's functions are pprof's top functions of its process */
	{
		char cmd[1400], buf[65536];
		size_t n;
		FILE *p;

		snprintf(cmd, sizeof(cmd),
			 "HOME='%s' GOCACHE='%s/gocache' GOTOOLCHAIN=local GOPROXY=off go tool "
			 "pprof -top -sample_index=off_cpu -tagfocus=process=hc-workload "
			 "'%s/all.pb.gz' "
			 "2>&1",
			 dir, dir, dir);
		p = popen(cmd, "r");
		assert_non_null(p);
		n = fread(buf, 1, sizeof(buf) - 1, p);
		buf[n] = '\0';
		pclose(p);
		print_message("%.600s", buf);
		assert_non_null(strstr(buf, "hc_sleep_phase"));
	}
}

static uint64_t folded_total(const char *path, size_t *lines)
{
	char *text = e2e_read_file(path, NULL), *save = NULL;
	uint64_t sum = 0;

	assert_non_null(text);
	*lines = 0;
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *sp = strrchr(l, ' ');

		assert_non_null(sp);
		sum += strtoull(sp + 1, NULL, 10);
		(*lines)++;
	}
	free(text);
	return sum;
}

static void test_folded_speedscope_json(void **state)
{
	char out[700];
	size_t lines;
	json_t *j, *prof;
	size_t i;
	uint64_t total = 0;

	(void)state;
	snprintf(out, sizeof(out), "%s/all.folded", dir);
	report_to("folded", NULL, out);
	assert_int_equal(folded_total(out, &lines), root_u64("value"));
	assert_true(lines > 0);
	report_to("folded", "off", out);
	assert_int_equal(folded_total(out, &lines),
			 root_u64("off_cpu_ns") + root_u64("runqueue_ns"));

	snprintf(out, sizeof(out), "%s/all.speedscope.json", dir);
	report_to("speedscope", NULL, out);
	j = e2e_load_json(out);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "$schema")),
			    "https://www.speedscope.app/file-format-schema.json");
	json_array_foreach (json_object_get(j, "profiles"), i, prof) {
		json_t *w;
		size_t k;

		assert_string_equal(json_string_value(json_object_get(prof, "unit")),
				    "nanoseconds");
		json_array_foreach (json_object_get(prof, "weights"), k, w)
			total += (uint64_t)json_integer_value(w);
	}
	assert_int_equal(total, root_u64("value"));
	json_decref(j);

	/* json: re-encoded after validation, the same document */
	snprintf(out, sizeof(out), "%s/again.json", dir);
	report_to("json", NULL, out);
	j = e2e_load_json(out);
	assert_non_null(j);
	assert_true(json_equal(j, saved_doc));
	json_decref(j);
}

static void test_record_formats_and_diff(void **state)
{
	char out[700], *text, *save = NULL;
	struct pp_profile pp;
	char why[256];
	size_t n = 0;

	(void)state;
	snprintf(out, sizeof(out), "%s/rec.pb.gz", dir);
	{
		char *argv[] = {(char *)hotcold, "record", "-d", "1s", "--format", "pprof",
				"--kind",	 "on",	   "-o", out,  NULL};
		/* a busy CPU: an idle one may deliver no cpu-clock samples at all */
		char *wargv[] = {(char *)workload, "cpu", "3", NULL};
		pid_t w;
		int fd;

		w = e2e_spawn(wargv, &fd, NULL);
		assert_true(w > 0);
		e2e_read_pid(fd);
		close(fd);
		assert_int_equal(run(argv, NULL, NULL), 0);
		kill(w, SIGKILL);
		e2e_wait(w, 5000);
	}
	assert_int_equal(pp_read_file(out, &pp, why, sizeof(why)), 0);
	assert_int_equal(pp.n_sample_types, 2);
	assert_true(pp_total(&pp, "cpu") > 0);
	pp_free(&pp);

	/* a capture against itself: every stack, both columns equal */
	snprintf(out, sizeof(out), "%s/diff.txt", dir);
	{
		char *argv[] = {(char *)hotcold, "report", "--diff", "-o", out, saved, saved, NULL};

		assert_int_equal(run(argv, NULL, NULL), 0);
	}
	text = e2e_read_file(out, NULL);
	assert_non_null(text);
	for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned long long a, b;
		char *sp2 = strrchr(l, ' '), *sp1;

		assert_non_null(sp2);
		*sp2 = '\0';
		sp1 = strrchr(l, ' ');
		assert_non_null(sp1);
		a = strtoull(sp1 + 1, NULL, 10);
		b = strtoull(sp2 + 1, NULL, 10);
		assert_int_equal(a, b);
		n++;
	}
	assert_true(n > 0);
	free(text);
}

int main(void)
{
	const struct CMUnitTest capture[] = {
		cmocka_unit_test_setup_teardown(test_strftime_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(test_special_targets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_kernel_symbols, setup, teardown),
		cmocka_unit_test_setup_teardown(test_disk_errors, setup, teardown),
	};
	const struct CMUnitTest formats[] = {
		cmocka_unit_test(test_pprof_round_trip),
		cmocka_unit_test(test_folded_speedscope_json),
		cmocka_unit_test(test_record_formats_and_diff),
	};
	int failed;

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_WORKLOAD");
	failed = cmocka_run_group_tests_name("capture", capture, NULL, NULL);
	failed += cmocka_run_group_tests_name("formats", formats, formats_setup, formats_teardown);
	return failed ? 1 : 0;
}
