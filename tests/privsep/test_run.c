// SPDX-License-Identifier: GPL-2.0-only
/*
 * privsep/run unit tests: the one fork helper. Each case starts a real sandboxed child through
 * hc_privsep__run or hc_privsep__spawn/wait and judges how it ended and what it saw. Groups,
 * chosen by argv[1]:
 *   run       exit codes and signals as wait statuses and exit codes, a broker request from the
 *             child, the stop line, the descriptors the child gets and does not keep, the kill
 *             deadline, a killed parent taking the child along, stdio flushed before the fork,
 *             the errors
 *   run-root  the child's credentials as nobody (uid, groups, capabilities, NoNewPrivs,
 *             seccomp), a user that cannot be become: needs root (77 outside CI, a failure under
 *             CI=true)
 * The children report through exit codes and pipes only: no cmocka assertion runs in a child.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include <cmocka.h>

#include "privsep/broker.h"
#include "privsep/run.h"

#include "privsep_test.h"

#define NOBODY 65534u
#define CHILD_WAIT_MS 10000

/* What a worker is to do and where it says what it saw. */
struct job {
	int code;      /* w_exit's exit code */
	int out_fd;    /* the worker (or refused) writes here; -1: nowhere */
	int hold_fd;   /* w_hold reads it until EOF */
	int closed_fd; /* w_fds: must be closed in the child */
	uint32_t tgid; /* w_broker: asks the broker about it */
};

static pid_t leftover[2]; /* processes a failed test leaves: killed by its teardown */

static int w_exit(void *ctx, const struct hc_privsep_child *child)
{
	(void)child;
	return ((struct job *)ctx)->code;
}

static int w_killed(void *ctx, const struct hc_privsep_child *child)
{
	(void)ctx;
	(void)child;
	raise(SIGKILL);
	return 99;
}

/* The broker answers: the process is alive, its status file is passed and reads as one. */
static int w_broker(void *ctx, const struct hc_privsep_child *child)
{
	struct job *j = ctx;
	struct hc_broker_client bc = {.sock = child->broker_fd};
	struct hc_symbolizer_io io;
	char buf[64] = "";
	int fd;

	if (child->broker_fd < 0 || child->stop_fd < 0)
		return 10;
	hc_broker_client__io(&bc, &io);
	if (io.alive(io.ctx, j->tgid) != 0)
		return 11;
	fd = io.open_status(io.ctx, j->tgid);
	if (fd < 0)
		return 12;
	if (read(fd, buf, sizeof(buf) - 1) <= 0 || strncmp(buf, "Name:", 5))
		return 13;
	close(fd);
	return 0;
}

/* Waits to be asked on the stop line: 5 once asked, 6 when nobody asks within 5 s. */
static int w_stop(void *ctx, const struct hc_privsep_child *child)
{
	struct pollfd p = {.fd = child->stop_fd, .events = POLLIN};

	(void)ctx;
	return poll(&p, 1, 5000) == 1 && hc_stopline__asked(child->stop_fd) ? 5 : 6;
}

/* No broker, no stop line, and the descriptor it was to close is closed. */
static int w_fds(void *ctx, const struct hc_privsep_child *child)
{
	struct job *j = ctx;

	if (child->broker_fd != -1 || child->stop_fd != -1)
		return 20;
	if (fcntl(j->closed_fd, F_GETFD) != -1 || errno != EBADF)
		return 21;
	return 0;
}

/* Says 'R' on out_fd, then holds until hold_fd reads EOF (the test closed its end: the child
 * must not keep a copy of it, close_fds). */
static int w_hold(void *ctx, const struct hc_privsep_child *child)
{
	struct job *j = ctx;
	char b;

	(void)child;
	if (write(j->out_fd, "R", 1) != 1)
		return 30;
	while (read(j->hold_fd, &b, 1) > 0)
		;
	return 0;
}

/* Flushes every stdio stream it inherited: what the parent had buffered must not be there. */
static int w_flush(void *ctx, const struct hc_privsep_child *child)
{
	(void)ctx;
	(void)child;
	return fflush(NULL) ? 40 : 0;
}

/* Writes err and why to out_fd, exits 33. */
static int refused(void *ctx, int err, const char *why)
{
	struct job *j = ctx;
	char buf[256] = "";

	snprintf(buf, sizeof(buf), "%s", why);
	if (j->out_fd >= 0 && (write(j->out_fd, &err, sizeof(err)) != (ssize_t)sizeof(err) ||
			       write(j->out_fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)))
		return 34;
	return 33;
}

static struct hc_privsep_opts worker_opts(void)
{
	return (struct hc_privsep_opts){
		.sandbox = HC_SANDBOX_WORKER, .user = "nobody", .refused = refused};
}

static ssize_t read_wait(int fd, void *buf, size_t len, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (poll(&p, 1, ms) != 1)
		return -1;
	return read(fd, buf, len);
}

/* Run worker under opts; the wait status, having asserted that the run itself worked. */
static int run_status(const struct hc_privsep_opts *opts, hc_privsep_worker_fn worker,
		      struct job *j, struct hc_privsep_result *res)
{
	char why[256] = "";
	int err = hc_privsep__run(opts, worker, j, res, why, sizeof(why));

	if (err)
		fail_msg("hc_privsep__run: %s (%s)", why, strerror(-err));
	assert_int_equal(res->broker_err, 0);
	return res->status;
}

/* ---- group run ---- */

static void test_exit_code(void **state)
{
	const struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	struct job j = {.code = 42, .out_fd = -1};
	char why[128] = "x";
	int status;

	(void)state;
	status = run_status(&opts, w_exit, &j, &res);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 42);
	assert_int_equal(hc_privsep__exit_code(status, why, sizeof(why)), 42);
	assert_string_equal(why, "");
	j.code = 0;
	status = run_status(&opts, w_exit, &j, &res);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* No broker: nothing was served. */
	assert_int_equal(res.broker.requests, 0);
}

static void test_killed_by_signal(void **state)
{
	const struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	struct job j = {.out_fd = -1};
	char why[128], want[128];
	int status;

	(void)state;
	status = run_status(&opts, w_killed, &j, &res);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_int_equal(hc_privsep__exit_code(status, why, sizeof(why)), EX_SOFTWARE);
	snprintf(want, sizeof(want), "ended by signal %d", SIGKILL);
	assert_string_equal(why, want);
}

/* The statuses hc_child_exit_code turns into messages: the wording is the CLI's. */
static void test_exit_code_mapping(void **state)
{
	char why[128], want[128];

	(void)state;
	assert_int_equal(hc_privsep__exit_code(SIGSYS, why, sizeof(why)), EX_SOFTWARE);
	snprintf(want, sizeof(want),
		 "ended by signal %d (a system call outside its seccomp allow-list)", SIGSYS);
	assert_string_equal(why, want);
	assert_int_equal(hc_privsep__exit_code(77 << 8, why, sizeof(why)), 77);
	assert_string_equal(why, "");
	assert_int_equal(hc_privsep__refused_exit_code(-ESRCH), EX_OSERR);
	assert_int_equal(hc_privsep__refused_exit_code(-ENOENT), EX_NOPERM);
	assert_int_equal(hc_privsep__refused_exit_code(-EPERM), EX_NOPERM);
}

static void test_broker_request(void **state)
{
	static volatile sig_atomic_t stop;
	struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	struct job j = {.out_fd = -1, .tgid = (uint32_t)getpid()};
	int status;

	(void)state;
	opts.broker = true;
	opts.stop = &stop;
	status = run_status(&opts, w_broker, &j, &res);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("the worker ended with status %#x", status);
	assert_int_equal(res.broker.requests, 2);
	assert_int_equal(res.broker.opened, 1);
	assert_int_equal(res.broker.refused, 0);
}

static void test_stop_line(void **state)
{
	static volatile sig_atomic_t stop = 1; /* as if SIGTERM had come */
	struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	struct job j = {.out_fd = -1};
	int status;

	(void)state;
	opts.broker = true;
	opts.stop = &stop;
	status = run_status(&opts, w_stop, &j, &res);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 5)
		fail_msg("the worker was not asked on the stop line (status %#x)", status);
}

static void test_close_fds(void **state)
{
	struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	int p[2], fds[3], status;
	struct job j = {.out_fd = -1};

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	fds[0] = -1; /* skipped */
	fds[1] = p[1];
	fds[2] = -5;
	j.closed_fd = p[1];
	opts.close_fds = fds;
	opts.n_close_fds = 3;
	status = run_status(&opts, w_fds, &j, &res);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("the worker ended with status %#x", status);
	/* Still ours. */
	assert_int_equal(fcntl(p[1], F_GETFD), FD_CLOEXEC);
	close(p[0]);
	close(p[1]);
}

/* A child that does not end in time is killed, and that is its status. */
static void test_kill_deadline(void **state)
{
	struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	struct hc_privsep ps;
	int outp[2], hold[2];
	struct job j;
	char why[256] = "", b = 0;

	(void)state;
	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
	j = (struct job){.out_fd = outp[1], .hold_fd = hold[0]};
	opts.close_fds = &hold[1];
	opts.n_close_fds = 1;
	assert_int_equal(hc_privsep__init(&ps, &opts, why, sizeof(why)), 0);
	assert_int_equal(ps.child_broker_fd, -1);
	if (hc_privsep__spawn(&ps, w_hold, &j, why, sizeof(why)))
		fail_msg("hc_privsep__spawn: %s", why);
	leftover[0] = ps.pid;
	assert_int_equal(read_wait(outp[0], &b, 1, CHILD_WAIT_MS), 1);
	assert_int_equal(b, 'R');
	assert_int_equal(hc_privsep__wait(&ps, 100, &res, why, sizeof(why)), 0);
	leftover[0] = 0;
	assert_int_equal(ps.pid, -1);
	assert_true(WIFSIGNALED(res.status));
	assert_int_equal(WTERMSIG(res.status), SIGKILL);
	hc_privsep__close(&ps);
	close(hold[1]);
	close(hold[0]);
	close(outp[0]);
	close(outp[1]);
}

/*
 * We fork P (the privileged process's stand-in); P starts C through hc_privsep__spawn and
 * waits; P is SIGKILLed and C must die of SIGKILL (the parent-death signal, armed after the
 * drop). We are a subreaper, so C becomes ours to wait for.
 */
static void test_parent_death(void **state)
{
	int pidp[2], readyp[2], hold[2], status;
	pid_t p, c = -1;
	char r = 0;

	(void)state;
	assert_int_equal(pipe2(pidp, O_CLOEXEC), 0);
	assert_int_equal(pipe2(readyp, O_CLOEXEC), 0);
	assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
	fflush(NULL);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		struct hc_privsep_opts opts = worker_opts();
		struct job j = {.out_fd = readyp[1], .hold_fd = hold[0]};
		struct hc_privsep ps;
		char why[256], b;

		opts.close_fds = &hold[1];
		opts.n_close_fds = 1;
		if (hc_privsep__init(&ps, &opts, why, sizeof(why)) ||
		    hc_privsep__spawn(&ps, w_hold, &j, why, sizeof(why)))
			_exit(2);
		if (write(pidp[1], &ps.pid, sizeof(ps.pid)) != (ssize_t)sizeof(ps.pid))
			_exit(3);
		close(hold[1]);
		while (read(hold[0], &b, 1) > 0) /* until killed: only the test holds the end */
			;
		_exit(0);
	}
	leftover[0] = p;
	close(pidp[1]);
	close(readyp[1]);
	assert_int_equal(read_wait(pidp[0], &c, sizeof(c), CHILD_WAIT_MS), (ssize_t)sizeof(c));
	leftover[1] = c;
	/* C is in its sandbox, the parent-death signal armed. */
	assert_int_equal(read_wait(readyp[0], &r, 1, CHILD_WAIT_MS), 1);
	assert_int_equal(r, 'R');
	assert_int_equal(kill(p, SIGKILL), 0);
	assert_int_equal(waitpid(p, &status, 0), p);
	leftover[0] = 0;
	{
		int pidfd = (int)syscall(SYS_pidfd_open, c, 0);
		struct pollfd pp = {.fd = pidfd, .events = POLLIN};

		assert_true(pidfd >= 0);
		if (poll(&pp, 1, 5000) != 1)
			fail_msg("the sandboxed child outlived its parent: PR_SET_PDEATHSIG not "
				 "armed");
		close(pidfd);
	}
	assert_int_equal(waitpid(c, &status, 0), c);
	leftover[1] = 0;
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	close(hold[0]);
	close(hold[1]);
	close(pidp[0]);
	close(readyp[0]);
}

/* Buffered output is written before the fork, so a child that flushes does not write it again. */
static void test_flushed_before_fork(void **state)
{
	const struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	struct job j = {.out_fd = -1};
	char got[64] = "";
	int p[2], status;
	FILE *f;

	(void)state;
	assert_int_equal(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	f = fdopen(p[1], "w");
	assert_non_null(f);
	assert_int_equal(setvbuf(f, NULL, _IOFBF, 4096), 0);
	assert_true(fputs("once", f) >= 0);
	status = run_status(&opts, w_flush, &j, &res);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(fclose(f), 0);
	assert_true(read(p[0], got, sizeof(got) - 1) > 0);
	assert_string_equal(got, "once");
	close(p[0]);
}

static void test_errors(void **state)
{
	struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	struct hc_privsep ps;
	struct rlimit rl, low;
	char why[256] = "";
	int fd;

	(void)state;
	/* Waiting before any child: ECHILD, said so, no status. */
	assert_int_equal(hc_privsep__init(&ps, &opts, why, sizeof(why)), 0);
	assert_int_equal(hc_privsep__wait(&ps, -1, &res, why, sizeof(why)), -ECHILD);
	assert_int_equal(res.status, -1);
	assert_string_equal(why, "waitpid: No child processes");
	hc_privsep__close(&ps);

	/* No descriptor left for the broker pair: -EMFILE, said so, nothing left open. */
	opts.broker = true;
	fd = dup(0);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = (struct rlimit){.rlim_cur = (rlim_t)fd + 1, .rlim_max = rl.rlim_max};
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(hc_privsep__init(&ps, &opts, why, sizeof(why)), -EMFILE);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_string_equal(why, "socketpair: Too many open files");
	hc_privsep__close(&ps);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	/* The same failure through run: res is still filled. */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	assert_int_equal(hc_privsep__run(&opts, w_exit, NULL, &res, why, sizeof(why)), -EMFILE);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	assert_int_equal(res.status, -1);
	assert_int_equal(res.broker_err, 0);
}

/* ---- group run-root ---- */

static void status_field(pid_t pid, const char *name, char *val, size_t len)
{
	char path[64], buf[8192], key[64], *p, *nl;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	snprintf(key, sizeof(key), "\n%s:\t", name);
	p = strstr(buf, key);
	if (!p)
		fail_msg("no %s line in %s", name, path);
	p += strlen(key);
	nl = strchr(p, '\n');
	assert_non_null(nl);
	while (nl > p && nl[-1] == ' ') /* Groups ends with a space */
		nl--;
	snprintf(val, len, "%.*s", (int)(nl - p), p);
}

static void expect_status(pid_t pid, const char *name, const char *want)
{
	char got[256];

	status_field(pid, name, got, sizeof(got));
	if (strcmp(got, want))
		fail_msg("process %d: %s is '%s', want '%s'", (int)pid, name, got, want);
}

/* The running child, seen from outside through spawn/wait: nobody, no groups, nothing held. */
static void test_credentials(void **state)
{
	struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	struct hc_privsep ps;
	int outp[2], hold[2];
	struct job j;
	char why[256] = "", u[64], b = 0;

	(void)state;
	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
	j = (struct job){.out_fd = outp[1], .hold_fd = hold[0]};
	opts.close_fds = &hold[1];
	opts.n_close_fds = 1;
	assert_int_equal(hc_privsep__init(&ps, &opts, why, sizeof(why)), 0);
	if (hc_privsep__spawn(&ps, w_hold, &j, why, sizeof(why)))
		fail_msg("hc_privsep__spawn: %s", why);
	leftover[0] = ps.pid;
	assert_int_equal(read_wait(outp[0], &b, 1, CHILD_WAIT_MS), 1);
	assert_int_equal(b, 'R');
	snprintf(u, sizeof(u), "%u\t%u\t%u\t%u", NOBODY, NOBODY, NOBODY, NOBODY);
	expect_status(ps.pid, "Uid", u);
	expect_status(ps.pid, "Gid", u);
	expect_status(ps.pid, "Groups", "");
	expect_status(ps.pid, "CapInh", "0000000000000000");
	expect_status(ps.pid, "CapPrm", "0000000000000000");
	expect_status(ps.pid, "CapEff", "0000000000000000");
	expect_status(ps.pid, "CapBnd", "0000000000000000");
	expect_status(ps.pid, "CapAmb", "0000000000000000");
	expect_status(ps.pid, "NoNewPrivs", "1");
	expect_status(ps.pid, "Seccomp", "2");
	/* Our end of hold closed: the child reads EOF (it kept no copy) and exits 0 in time. */
	close(hold[1]);
	assert_int_equal(hc_privsep__wait(&ps, CHILD_WAIT_MS, &res, why, sizeof(why)), 0);
	leftover[0] = 0;
	if (!WIFEXITED(res.status) || WEXITSTATUS(res.status))
		fail_msg("the child ended with status %#x", res.status);
	hc_privsep__close(&ps);
	close(hold[0]);
	close(outp[0]);
	close(outp[1]);
}

/* A user that cannot be become: refused() reports the reason and its code is the exit code;
 * the worker never runs. */
static void expect_refused(const char *user, int want_err, const char *want_in_why)
{
	struct hc_privsep_opts opts = worker_opts();
	struct hc_privsep_result res;
	int outp[2], err = 0, status;
	char why[256] = "";
	struct job j = {.code = 0};

	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	j.out_fd = outp[1];
	opts.user = user;
	status = run_status(&opts, w_exit, &j, &res);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 33)
		fail_msg("--user %s: the child ended with status %#x, not refused()'s 33", user,
			 status);
	assert_int_equal(read_wait(outp[0], &err, sizeof(err), CHILD_WAIT_MS),
			 (ssize_t)sizeof(err));
	assert_int_equal(read_wait(outp[0], why, sizeof(why), CHILD_WAIT_MS), (ssize_t)sizeof(why));
	assert_int_equal(err, want_err);
	if (!strstr(why, want_in_why))
		fail_msg("--user %s: the reason is '%s'", user, why);
	close(outp[0]);
	close(outp[1]);
}

static void test_refused(void **state)
{
	(void)state;
	expect_refused("hc-no-such-user-4242", -ENOENT, "hc-no-such-user-4242");
	expect_refused("root", -EINVAL, "root");
}

/* ---- setup ---- */

static int kill_leftovers(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		if (leftover[i] > 0) {
			kill(leftover[i], SIGKILL);
			waitpid(leftover[i], NULL, 0);
		}
		leftover[i] = 0;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest run[] = {
		cmocka_unit_test(test_exit_code),
		cmocka_unit_test(test_killed_by_signal),
		cmocka_unit_test(test_exit_code_mapping),
		cmocka_unit_test(test_broker_request),
		cmocka_unit_test(test_stop_line),
		cmocka_unit_test(test_close_fds),
		cmocka_unit_test_teardown(test_kill_deadline, kill_leftovers),
		cmocka_unit_test_teardown(test_parent_death, kill_leftovers),
		cmocka_unit_test(test_flushed_before_fork),
		cmocka_unit_test(test_errors),
	};
	const struct CMUnitTest run_root[] = {
		cmocka_unit_test_teardown(test_credentials, kill_leftovers),
		cmocka_unit_test(test_refused),
	};
	const char *group = argc > 1 ? argv[1] : "run";

	/* Orphans of ours (the sandboxed grandchild whose parent we kill) come to us. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) {
		fprintf(stderr, "FAIL: PR_SET_CHILD_SUBREAPER: %s\n", strerror(errno));
		return 1;
	}
	/* A child's refused call must not take us along through a shared signal. */
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(group, "run"))
		return cmocka_run_group_tests_name("run", run, NULL, NULL);
	if (!strcmp(group, "run-root")) {
		privsep_require_root(group, "becoming nobody");
		return cmocka_run_group_tests_name("run-root", run_root, NULL, NULL);
	}
	fprintf(stderr, "unknown group %s (run, run-root)\n", group);
	return 2;
}
