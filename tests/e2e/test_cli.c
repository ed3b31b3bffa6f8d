// SPDX-License-Identifier: GPL-2.0-only
/*
 * Bad input to `hotcold record`: a documented exit code, exactly one line on stderr saying
 * why, and nothing written. Runs the real binary; needs no root (refused before BPF).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <setjmp.h>
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
#include "tests/skip.h"

static const char *hotcold;

static int run_capture(char *const argv[], char **out_text, char **err_text);

struct bad_case {
	const char *args[6];
	int exit_code;
	const char *why; /* substring of the one stderr line */
};

static const struct bad_case cases[] = {
	{{"-F", "6000hz"}, 64, "200 us"},
	{{"-F", "5001"}, 64, "200 us"},
	{{"-F", "199us"}, 64, "200 us"},
	{{"-F", "0"}, 64, "zero"},
	{{"-F", "-5"}, 64, "negative"},
	{{"-F", "abc"}, 64, "not a number"},
	{{"-F", "10parsecs"}, 64, "unknown unit"},
	{{"-F", "99999999999999999999999"}, 64, "too large"},
	{{"-d", "0"}, 64, "zero"},
	{{"-d", "soon"}, 64, "not a number"},
	{{"-d", "5hz"}, 64, "unknown unit"},
	{{"--format", "xml"}, 64, "folded, pprof or speedscope"},
	{{"--kind", "on"}, 64, "json always carries every kind"},
	{{"--format", "folded", "--kind", "sideways"}, 64, "use all, on or off"},
	{{"--format", "pprof", "--no-offcpu", "--kind", "off"}, 64, "empty profile"},
	{{"-p", "abc"}, 64, "not a process id"},
	{{"-p", "0"}, 64, "not a process id"},
	{{"-p", "-3"}, 64, "not a process id"},
	{{"-p", "2147483647"}, 66, "no such process"},
	{{"--bogus"}, 64, ""},
	{{"extra-arg"}, 64, "unexpected argument"},
	{{"--min-block", "soon"}, 64, "not a number"},
	{{"--min-block", "0"}, 64, "zero"},
	{{"--stack-budget", "0"}, 64, "1 to 1000000"},
	{{"--stack-budget", "lots"}, 64, "1 to 1000000"},
	{{"--comm", ""}, 64, "empty process name"},
	{{"--unwind", "sideways"}, 64, "table (call frame information walked in BPF"},
	{{"--unwind", "table", "--unwind-table-mb", "0"}, 64, "1 to 2048"},
	{{"--unwind-table-mb", "4096"}, 64, "1 to 2048"},
	{{"--unwind-table-mb", "lots"}, 64, "1 to 2048"},
	{{"--no-offcpu", "--wakers"}, 64, "cannot be combined"},
	{{"--no-offcpu", "--min-block", "1ms"}, 64, "cannot be combined"},
};

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static int run_case(const char *const args[], const char *out_dir, const char *err_path,
		    char **err_text)
{
	char out[512], *argv[16];
	int n = 0, rc;

	snprintf(out, sizeof(out), "%s/out.json", out_dir);
	argv[n++] = (char *)hotcold;
	argv[n++] = "record";
	for (int i = 0; args[i]; i++)
		argv[n++] = (char *)args[i];
	argv[n++] = "-o";
	argv[n++] = out;
	argv[n] = NULL;
	rc = e2e_run(argv, err_path, 20000);
	*err_text = e2e_read_file(err_path, NULL);
	return rc;
}

static void test_bad_input(void **state)
{
	char *dir = e2e_tmpdir(), *outdir, err_path[512];

	(void)state;
	assert_non_null(dir);
	assert_true(asprintf(&outdir, "%s/out", dir) > 0);
	assert_int_equal(mkdir(outdir, 0755), 0);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_case *c = &cases[i];
		char *text = NULL;
		int rc = run_case(c->args, outdir, err_path, &text), lines = 0;

		assert_non_null(text);
		for (char *p = text; *p; p++)
			lines += *p == '\n';
		print_message("record %s %s -> %d: %s", c->args[0], c->args[1] ? c->args[1] : "",
			      rc, text);
		assert_int_equal(rc, c->exit_code);
		assert_non_null(strstr(text, c->why));
		/* getopt's own complaint plus our usage are fine for unknown options */
		if (strcmp(c->args[0], "--bogus"))
			assert_int_equal(lines, 1);
		/* Nothing written: not the output, not a temp file. */
		assert_int_equal(count_entries(outdir), 0);
		free(text);
	}
	rmdir(outdir);
	unlink(err_path);
	rmdir(dir);
	free(outdir);
	free(dir);
}

/* Bad input to `hotcold serve`: refused before it listens or loads anything. */
static const struct bad_case serve_cases[] = {
	{{"--listen", "bogus"}, 64, "--listen bogus"},
	{{"--listen", "127.0.0.1:99999"}, 64, "--listen 127.0.0.1:99999"},
	{{"--listen", "example.com:80"}, 64, "--listen example.com:80"},
	{{"--retention", "1s"}, 64, "between 10s and 30d"},
	{{"--retention", "31d"}, 64, "longer than 30 days"},
	{{"--data-dir", "none", "--retention", "8d"}, 64, "up to 7d in memory"},
	{{"--data-dir", ""}, 64, "empty path"},
	{{"--max-disk", "10"}, 64, "1M to 16T"},
	{{"--max-disk", "17T"}, 64, "1M to 16T"},
	{{"--fold-below", "1s"}, 64, "under 1s"},
	{{"--fold-below", "some"}, 64, "not a number"},
	{{"--retention", "soon"}, 64, "not a number"},
	{{"--max-store", "10"}, 64, "1M to 64G"},
	{{"--max-store", "17179869185G"}, 64, "1M to 64G"},
	{{"--max-store", "32X"}, 64, "1M to 64G"},
	{{"--user", ""}, 64, "empty user name"},
	{{"-F", "6000hz"}, 64, "200 us"},
	{{"--no-offcpu", "--min-block", "1ms"}, 64, "cannot be combined"},
	{{"extra-arg"}, 64, "unexpected argument"},
};

static void test_serve_bad_input(void **state)
{
	char *dir = e2e_tmpdir(), err_path[512];

	(void)state;
	assert_non_null(dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	for (size_t i = 0; i < sizeof(serve_cases) / sizeof(serve_cases[0]); i++) {
		const struct bad_case *c = &serve_cases[i];
		char *argv[12], *text;
		int n = 0, rc, lines = 0;

		argv[n++] = (char *)hotcold;
		argv[n++] = "serve";
		for (int k = 0; c->args[k]; k++)
			argv[n++] = (char *)c->args[k];
		argv[n] = NULL;
		rc = e2e_run(argv, err_path, 20000);
		text = e2e_read_file(err_path, NULL);
		assert_non_null(text);
		for (char *p = text; *p; p++)
			lines += *p == '\n';
		print_message("serve %s %s -> %d: %s", c->args[0], c->args[1] ? c->args[1] : "", rc,
			      text);
		assert_int_equal(rc, c->exit_code);
		assert_non_null(strstr(text, c->why));
		assert_int_equal(lines, 1);
		free(text);
	}
	unlink(err_path);
	rmdir(dir);
	free(dir);
}

/* The port is taken: 73, naming the address, before anything else happens. */
static void test_serve_port_in_use(void **state)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(sa);
	char *dir = e2e_tmpdir(), err_path[512], listen_arg[64], *text;
	int fd = socket(AF_INET, SOCK_STREAM, 0), rc;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 1), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(listen_arg, sizeof(listen_arg), "127.0.0.1:%u", ntohs(sa.sin_port));
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	{
		char *argv[] = {(char *)hotcold, "serve",    "--data-dir", "none",
				"--listen",	 listen_arg, NULL};

		rc = e2e_run(argv, err_path, 20000);
	}
	text = e2e_read_file(err_path, NULL);
	assert_non_null(text);
	print_message("serve --listen %s (taken) -> %d: %s", listen_arg, rc, text);
	assert_int_equal(rc, 73);
	assert_non_null(strstr(text, listen_arg));
	close(fd);
	free(text);
	unlink(err_path);
	rmdir(dir);
	free(dir);
}

static void test_unwritable_output(void **state)
{
	char *text = NULL, *dir = e2e_tmpdir(), err_path[512];
	char *argv[] = {(char *)hotcold,	   "record", "-d", "1s", "-o",
			"/nonexistent/dir/x.json", NULL};
	int rc;

	(void)state;
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	rc = e2e_run(argv, err_path, 20000);
	text = e2e_read_file(err_path, NULL);
	assert_non_null(text);
	print_message("-o /nonexistent/dir/x.json -> %d: %s", rc, text);
	assert_int_equal(rc, 73);
	assert_non_null(strstr(text, "/nonexistent/dir/x.json"));
	free(text);
	unlink(err_path);
	rmdir(dir);
	free(dir);
}

/* -o patterns and places report and record refuse before doing anything: nothing written. */
static void test_output_errors(void **state)
{
	const char *fx = e2e_env("HC_FIXTURES");
	char prof[512], out[512], *dir = e2e_tmpdir(), *o, *e;
	int rc;

	(void)state;
	assert_non_null(dir);
	snprintf(prof, sizeof(prof), "%s/profile/small.json", fx);
	snprintf(out, sizeof(out), "%s/x-%%Q.json", dir);
	{
		char *argv[] = {(char *)hotcold, "record", "-d", "1s", "-o", out, NULL};

		rc = run_capture(argv, &o, &e);
	}
	assert_int_equal(rc, 64);
	assert_non_null(strstr(e, "%Q is not a conversion"));
	free(o);
	free(e);
	{
		char *argv[] = {
			(char *)hotcold, "report", "--format", "folded", "-o", out, prof, NULL};

		rc = run_capture(argv, &o, &e);
	}
	assert_int_equal(rc, 64);
	free(o);
	free(e);
	snprintf(out, sizeof(out), "%s/missing/x.folded", dir);
	{
		char *argv[] = {(char *)hotcold, "report", "-o", out, prof, NULL};

		rc = run_capture(argv, &o, &e);
	}
	print_message("report -o %s -> %d: %s", out, rc, e);
	assert_int_equal(rc, 73);
	assert_non_null(strstr(e, "directory"));
	free(o);
	free(e);
	/* a directory as the output */
	{
		char *argv[] = {(char *)hotcold, "report", "-o", dir, prof, NULL};

		rc = run_capture(argv, &o, &e);
	}
	assert_int_equal(rc, 73);
	assert_non_null(strstr(e, "is a directory"));
	free(o);
	free(e);
	/* success: silent, the file complete, no hidden file left */
	snprintf(out, sizeof(out), "%s/%%Y.folded", dir);
	{
		char *argv[] = {(char *)hotcold, "report", "-o", out, prof, NULL};

		rc = run_capture(argv, &o, &e);
	}
	assert_int_equal(rc, 0);
	assert_string_equal(o, "");
	assert_string_equal(e, "");
	free(o);
	free(e);
	{
		char want[600], list[64];
		time_t t = time(NULL);
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(list, sizeof(list), "%Y.folded", &tm);
		snprintf(want, sizeof(want), "%s/%s", dir, list);
		assert_int_equal(access(want, R_OK), 0);
		assert_int_equal(count_entries(dir), 1);
		unlink(want);
	}
	rmdir(dir);
	free(dir);
}

static void test_unknown_command(void **state)
{
	char *argv[] = {(char *)hotcold, "frobnicate", NULL};

	(void)state;
	assert_int_equal(e2e_run(argv, "/dev/null", 20000), 64);
}

/* Without privileges: exit 77 naming what is needed, nothing written. As root, the test
 * drops to nobody with setpriv (util-linux) to see what an unprivileged user sees. */
static void test_unprivileged(void **state)
{
	char *dir = e2e_tmpdir(), err_path[512], out[512], *text;
	int rc, lines = 0;

	(void)state;
	assert_non_null(dir);
	assert_int_equal(chmod(dir, 0777), 0);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	if (geteuid() == 0) {
		char *argv[] = {"/usr/bin/setpriv",
				"--reuid=65534",
				"--regid=65534",
				"--clear-groups",
				"--inh-caps=-all",
				(char *)hotcold,
				"record",
				"-d",
				"1s",
				"-o",
				out,
				NULL};

		rc = e2e_run(argv, err_path, 20000);
	} else {
		char *argv[] = {(char *)hotcold, "record", "-d", "1s", "-o", out, NULL};

		rc = e2e_run(argv, err_path, 20000);
	}
	text = e2e_read_file(err_path, NULL);
	assert_non_null(text);
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	print_message("unprivileged -> %d: %s", rc, text);
	assert_int_equal(rc, 77);
	assert_int_equal(lines, 1);
	assert_non_null(strstr(text, "CAP_BPF"));
	unlink(err_path);
	assert_int_equal(count_entries(dir), 0);
	rmdir(dir);
	free(text);
	free(dir);
}

/* A rate above kernel.perf_event_max_sample_rate: refused naming the sysctl and its value.
 * Needs root to lower the sysctl for the test; restored afterwards. */
static void test_kernel_max_rate(void **state)
{
	const char *path = "/proc/sys/kernel/perf_event_max_sample_rate";
	static const char *const args[] = {"-F", "2000hz", NULL};
	char *dir, *text = NULL, err_path[512], saved[64] = "";
	FILE *f;
	int rc;

	(void)state;
	if (geteuid() != 0)
		hc_skip("this case needs root to lower %s", path);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(saved, sizeof(saved), f));
	fclose(f);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("1000\n", f);
	assert_int_equal(fclose(f), 0);

	dir = e2e_tmpdir();
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	rc = run_case(args, dir, err_path, &text);

	f = fopen(path, "w");
	if (f) {
		fputs(saved, f);
		fclose(f);
	}
	print_message("-F 2000hz with max 1000 -> %d: %s", rc, text);
	assert_int_equal(rc, 64);
	assert_non_null(strstr(text, "perf_event_max_sample_rate"));
	assert_non_null(strstr(text, "1000"));
	unlink(err_path);
	assert_int_equal(count_entries(dir), 0);
	rmdir(dir);
	free(text);
	free(dir);
}

/* Run hotcold with args; capture stdout and stderr. Returns the exit status. */
static int run_capture(char *const argv[], char **out_text, char **err_text)
{
	char *dir = e2e_tmpdir(), err_path[512], buf[4096];
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd, rc;
	pid_t pid;

	assert_non_null(dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	pid = e2e_spawn(argv, &fd, err_path);
	assert_true(pid > 0);
	*out_text = NULL;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (len + (size_t)n + 1 > cap) {
			cap = (len + (size_t)n + 1) * 2;
			*out_text = realloc(*out_text, cap);
			assert_non_null(*out_text);
		}
		memcpy(*out_text + len, buf, (size_t)n);
		len += (size_t)n;
	}
	close(fd);
	if (!*out_text)
		*out_text = calloc(1, 1);
	else
		(*out_text)[len] = '\0';
	rc = e2e_wait(pid, 20000);
	*err_text = e2e_read_file(err_path, NULL);
	unlink(err_path);
	rmdir(dir);
	free(dir);
	return rc;
}

/* report --hist prints DTrace's aggregation layout: compared with a reviewed golden. */
static void test_report_hist(void **state)
{
	const char *fx = e2e_env("HC_FIXTURES");
	char prof[512], golden[512], *out, *err, *want;
	int rc;

	(void)state;
	snprintf(prof, sizeof(prof), "%s/report/prio.json", fx);
	snprintf(golden, sizeof(golden), "%s/report/prio.txt", fx);
	{
		char *argv[] = {(char *)hotcold, "report", "--hist", "priority", prof, NULL};

		rc = run_capture(argv, &out, &err);
	}
	want = e2e_read_file(golden, NULL);
	assert_non_null(want);
	assert_int_equal(rc, 0);
	assert_string_equal(err, "");
	assert_string_equal(out, want);
	free(out);
	free(err);
	/* --key selects one series */
	{
		char *argv[] = {(char *)hotcold, "report", "--hist", "priority",
				"--key",	 "make",   prof,     NULL};

		rc = run_capture(argv, &out, &err);
	}
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "make"));
	assert_null(strstr(out, "pipewire"));
	assert_non_null(strstr(out, "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@   95"));
	free(out);
	free(err);
	free(want);
}

/* The status line `name:\t...` of pid, or "" (static buffer). */
static const char *status_line(pid_t pid, const char *name)
{
	static char line[256];
	char path[64];
	size_t len = strlen(name);
	FILE *f;

	line[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return line;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ':')
			break;
	if (feof(f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	return line;
}

/*
 * report parses in a sandboxed child (docs/security.md): caught while it reads from a FIFO
 * we hold half-written, that child runs as nobody when we are root, with no capabilities,
 * NoNewPrivs and a seccomp filter; fed the rest, it still produces the histogram.
 */
static void test_report_sandbox(void **state)
{
	const char *fx = e2e_env("HC_FIXTURES");
	char prof[512], fifo[512], err_path[512], kids[64], buf[4096], *doc, *dir = e2e_tmpdir();
	size_t len, half, got = 0;
	pid_t pid, child = 0;
	int out_fd, wfd, rc;
	FILE *f;

	(void)state;
	assert_non_null(dir);
	snprintf(prof, sizeof(prof), "%s/report/prio.json", fx);
	doc = e2e_read_file(prof, &len);
	assert_non_null(doc);
	snprintf(fifo, sizeof(fifo), "%s/in.fifo", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	{
		char *argv[] = {(char *)hotcold, "report", "--hist", "priority", fifo, NULL};

		pid = e2e_spawn(argv, &out_fd, err_path);
	}
	assert_true(pid > 0);
	wfd = open(fifo, O_WRONLY); /* returns once report has it open */
	assert_true(wfd >= 0);
	half = len / 2;
	assert_int_equal(write(wfd, doc, half), (ssize_t)half);
	/* The child is forked once the input is open; give it up to 5 s to appear. */
	for (int i = 0; i < 500 && !child; i++) {
		snprintf(buf, sizeof(buf), "/proc/%d/task/%d/children", (int)pid, (int)pid);
		f = fopen(buf, "r");
		if (f) {
			if (fgets(kids, sizeof(kids), f))
				child = (pid_t)atoi(kids);
			fclose(f);
		}
		if (!child)
			usleep(10000);
	}
	assert_true(child > 0);
	/* Sandboxed before it reads: seccomp is the last step, so wait for it. */
	for (int i = 0; i < 500 && strcmp(status_line(child, "Seccomp"), "Seccomp:\t2"); i++)
		usleep(10000);
	assert_string_equal(status_line(child, "Seccomp"), "Seccomp:\t2");
	assert_string_equal(status_line(child, "NoNewPrivs"), "NoNewPrivs:\t1");
	assert_string_equal(status_line(child, "CapEff"), "CapEff:\t0000000000000000");
	assert_string_equal(status_line(child, "CapPrm"), "CapPrm:\t0000000000000000");
	if (geteuid() == 0) {
		assert_string_equal(status_line(child, "Uid"), "Uid:\t65534\t65534\t65534\t65534");
		assert_string_equal(status_line(child, "CapBnd"), "CapBnd:\t0000000000000000");
	}
	print_message("report's parsing child %d: %s\n", (int)child, status_line(child, "Uid"));
	assert_int_equal(write(wfd, doc + half, len - half), (ssize_t)(len - half));
	close(wfd);
	while ((rc = (int)read(out_fd, buf, sizeof(buf))) > 0)
		got += (size_t)rc;
	close(out_fd);
	rc = e2e_wait(pid, 20000);
	assert_int_equal(rc, 0);
	assert_true(got > 100);
	/* As root the child must become --user: one that does not exist is exit 77, said. */
	if (geteuid() == 0) {
		char *argv[] = {(char *)hotcold, "report",	    "--hist", "priority",
				"--user",	 "no-such-user-hc", prof,     NULL},
		     *out, *err;

		rc = run_capture(argv, &out, &err);
		assert_int_equal(rc, 77);
		assert_non_null(strstr(err, "no user 'no-such-user-hc'"));
		assert_string_equal(out, "");
		free(out);
		free(err);
	}
	unlink(fifo);
	unlink(err_path);
	rmdir(dir);
	free(dir);
	free(doc);
}

struct report_bad {
	const char *content; /* written to a temp file; NULL: a path that does not exist */
	const char *args[6];
	int exit_code;
	const char *why;
};

static void test_report_bad_input(void **state)
{
	static const struct report_bad cases[] = {
		{NULL, {"--hist", "priority"}, 66, "cannot read"},
		{"{", {"--hist", "priority"}, 65, "not valid JSON"},
		{"[1,2]", {"--hist", "priority"}, 65, "not a hotcold-profile/1"},
		{"{\"schema\":\"other/1\"}", {"--hist", "priority"}, 65, "schema: other/1"},
		{"{\"schema\":\"hotcold-profile/1\"}", {"--hist", "priority"}, 65, "no histograms"},
		{"{\"schema\":\"hotcold-profile/1\",\"histograms\":{}}",
		 {"--hist", "prio"},
		 64,
		 "it has: none"},
		{"{\"schema\":\"hotcold-profile/"
		 "1\",\"histograms\":{\"priority\":{\"type\":\"x\"}}}",
		 {"--hist", "priority"},
		 65,
		 "malformed"},
		{"{\"schema\":\"hotcold-profile/1\",\"schema\":\"hotcold-profile/1\"}",
		 {"--hist", "priority"},
		 65,
		 "duplicate"},
		{"{}", {"--key", "x"}, 64, "--key needs --hist"},
		{"{}", {"--format", "xml"}, 64, "use folded, pprof, speedscope or json"},
		{"{}", {"--normalize"}, 64, "applies to --diff"},
		{"{}", {"--diff"}, 64, "two profiles"},
		{"{}", {"--kind", "on", "--format", "json"}, 64, "carries every kind"},
		{"{}", {"--hist", "priority", "--format", "pprof"}, 64, "takes no --diff"},
		{"{}", {"--diff", "--format", "pprof"}, 64, "differential folded stacks only"},
		{"{}", {"--user", ""}, 64, "--user: empty user name"},
		{"{\"schema\":\"hotcold-profile/1\"}",
		 {"--format", "folded"},
		 65,
		 "not a valid profile"},
		{NULL, {"--format", "folded"}, 66, "cannot read"},
		/* a document without the members a profile must have */
		{"{\"schema\":\"hotcold-profile/1\",\"host\":\"h\",\"kernel\":\"k\","
		 "\"started_at\":\"2026-01-01T00:00:00.000Z\",\"duration_ns\":1,"
		 "\"flamegraph\":{\"name\":\"all\",\"kind\":\"root\",\"value\":1,"
		 "\"on_cpu_ns\":1,\"off_cpu_ns\":0,\"runqueue_ns\":0,\"samples\":1,"
		 "\"children\":[{\"name\":\"p\",\"kind\":\"process\",\"pid\":1,"
		 "\"value\":5,\"on_cpu_ns\":5,\"off_cpu_ns\":0,\"runqueue_ns\":0,"
		 "\"samples\":1,\"children\":[]}]},\"histograms\":{}}",
		 {"--format", "folded"},
		 65,
		 "not a valid profile"},
	};
	char *dir = e2e_tmpdir(), path[512];

	(void)state;
	assert_non_null(dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct report_bad *c = &cases[i];
		char *argv[8], *out, *err;
		int n = 0, rc, lines = 0;

		snprintf(path, sizeof(path), "%s/%s", dir, c->content ? "p.json" : "missing.json");
		if (c->content) {
			FILE *f = fopen(path, "w");

			assert_non_null(f);
			fputs(c->content, f);
			fclose(f);
		}
		argv[n++] = (char *)hotcold;
		argv[n++] = "report";
		for (int k = 0; c->args[k]; k++)
			argv[n++] = (char *)c->args[k];
		argv[n++] = path;
		argv[n] = NULL;
		rc = run_capture(argv, &out, &err);
		for (char *p = err; *p; p++)
			lines += *p == '\n';
		print_message("report case %zu -> %d: %s", i, rc, err);
		assert_int_equal(rc, c->exit_code);
		assert_non_null(strstr(err, c->why));
		assert_int_equal(lines, 1);
		assert_string_equal(out, "");
		free(out);
		free(err);
		unlink(path);
	}
	rmdir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),	  cmocka_unit_test(test_serve_bad_input),
		cmocka_unit_test(test_serve_port_in_use), cmocka_unit_test(test_unwritable_output),
		cmocka_unit_test(test_unknown_command),	  cmocka_unit_test(test_output_errors),
		cmocka_unit_test(test_unprivileged),	  cmocka_unit_test(test_kernel_max_rate),
		cmocka_unit_test(test_report_hist),	  cmocka_unit_test(test_report_bad_input),
		cmocka_unit_test(test_report_sandbox),
	};

	hotcold = e2e_env("HOTCOLD");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
