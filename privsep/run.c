// SPDX-License-Identifier: GPL-2.0-only
#include "privsep/run.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static int fail(char *why, size_t why_len, const char *what, int err)
{
	snprintf(why, why_len, "%s: %s", what, strerror(-err));
	return err;
}

int hc_privsep__init(struct hc_privsep *ps, const struct hc_privsep_opts *opts, char *why,
		     size_t why_len)
{
	int pair[2], err;

	*ps = (struct hc_privsep){.opts = *opts,
				  .pid = -1,
				  .broker_fd = -1,
				  .child_broker_fd = -1,
				  .stop_fd = -1,
				  .child_stop_fd = -1};
	if (!opts->broker)
		return 0;
	err = hc_broker__socketpair(pair);
	if (err)
		return fail(why, why_len, "socketpair", err);
	ps->broker_fd = pair[0];
	ps->child_broker_fd = pair[1];
	err = hc_stopline__new(pair);
	if (err)
		return fail(why, why_len, "socketpair", err);
	ps->child_stop_fd = pair[0];
	ps->stop_fd = pair[1];
	return 0;
}

/* The child's side of spawn. Never returns. */
static void child_main(struct hc_privsep *ps, pid_t parent, hc_privsep_worker_fn worker, void *ctx)
{
	const struct hc_privsep_opts *opts = &ps->opts;
	struct hc_privsep_child c = {.broker_fd = ps->child_broker_fd,
				     .stop_fd = ps->child_stop_fd};
	char why[256];
	int err;

	close_fd(&ps->broker_fd);
	close_fd(&ps->stop_fd);
	/* An output's lock is the parent's to hold and release: were the child to keep a copy, a
	 * next capture could find it held for a moment after a SIGKILL and keep the killed one's
	 * leftovers. */
	for (size_t i = 0; i < opts->n_close_fds; i++)
		if (opts->close_fds[i] >= 0)
			close(opts->close_fds[i]);
	/* A killed parent takes us along (PR_SET_PDEATHSIG, armed by the sandbox after the
	 * drop): nothing outlives it holding its BPF objects. */
	err = hc_sandbox__enter(opts->sandbox, opts->user, parent, why, sizeof(why));
	if (err)
		_exit(opts->refused(ctx, err, why));
	_exit(worker(ctx, &c));
}

int hc_privsep__spawn(struct hc_privsep *ps, hc_privsep_worker_fn worker, void *ctx, char *why,
		      size_t why_len)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return fail(why, why_len, "fork", -errno);
	if (pid == 0)
		child_main(ps, parent, worker, ctx);
	ps->pid = pid;
	close_fd(&ps->child_broker_fd);
	close_fd(&ps->child_stop_fd);
	return 0;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* waitpid(pid), retried when a signal interrupts it. 0 or -errno. */
static int wait_forever(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* Wait up to kill_after_ms (10 ms steps), then SIGKILL the child and wait. 0 or -errno. */
static int wait_or_kill(pid_t pid, int kill_after_ms, int *status)
{
	for (int waited_ms = 0;; waited_ms += 10) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (waited_ms >= kill_after_ms) {
			kill(pid, SIGKILL);
			return wait_forever(pid, status);
		}
		sleep_ms(10);
	}
}

int hc_privsep__wait(struct hc_privsep *ps, int kill_after_ms, struct hc_privsep_result *res,
		     char *why, size_t why_len)
{
	int err;

	*res = (struct hc_privsep_result){.status = -1};
	if (ps->broker_fd >= 0) {
		res->broker_err = hc_broker__serve(ps->broker_fd, ps->stop_fd, ps->opts.stop, NULL,
						   &res->broker);
		/* A child still asking (the broker failed) gets an error, not a hang. */
		close_fd(&ps->broker_fd);
	}
	if (ps->pid < 0)
		return fail(why, why_len, "waitpid", -ECHILD);
	err = kill_after_ms < 0 ? wait_forever(ps->pid, &res->status)
				: wait_or_kill(ps->pid, kill_after_ms, &res->status);
	ps->pid = -1;
	if (err) {
		res->status = -1;
		return fail(why, why_len, "waitpid", err);
	}
	return 0;
}

void hc_privsep__close(struct hc_privsep *ps)
{
	close_fd(&ps->broker_fd);
	close_fd(&ps->child_broker_fd);
	close_fd(&ps->stop_fd);
	close_fd(&ps->child_stop_fd);
}

int hc_privsep__run(const struct hc_privsep_opts *opts, hc_privsep_worker_fn worker, void *ctx,
		    struct hc_privsep_result *res, char *why, size_t why_len)
{
	struct hc_privsep ps;
	int err;

	*res = (struct hc_privsep_result){.status = -1};
	err = hc_privsep__init(&ps, opts, why, why_len);
	if (!err)
		err = hc_privsep__spawn(&ps, worker, ctx, why, why_len);
	if (!err)
		err = hc_privsep__wait(&ps, -1, res, why, why_len);
	hc_privsep__close(&ps);
	return err;
}

int hc_privsep__exit_code(int status, char *why, size_t why_len)
{
	if (WIFEXITED(status)) {
		if (why_len)
			why[0] = '\0';
		return WEXITSTATUS(status);
	}
	snprintf(why, why_len, "ended by signal %d%s", WIFSIGNALED(status) ? WTERMSIG(status) : 0,
		 WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS
			 ? " (a system call outside its seccomp allow-list)"
			 : "");
	return EX_SOFTWARE;
}

int hc_privsep__refused_exit_code(int err)
{
	return err == -ESRCH ? EX_OSERR : EX_NOPERM;
}
