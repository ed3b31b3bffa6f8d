/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * privsep/run: the one way hotcold starts an unprivileged child (record's worker, serve's
 * collector worker and HTTP server, report's parsing process).
 *
 *   privileged parent                              child
 *   hc_privsep__init()   broker pair + stop line
 *   hc_privsep__spawn()  fflush, fork ───────────►  close the parent's ends and opts->close_fds,
 *                                                   hc_sandbox__enter() (drop to opts->user, no
 *                                                   capabilities, NoNewPrivs, PR_SET_PDEATHSIG
 *                                                   armed after the drop, the seccomp list),
 *                                                   then _exit(worker(ctx, &child))
 *   hc_privsep__wait()   serve the broker until the child closes it; wait for the child
 *   hc_privsep__close()  what is left of our ends
 *
 * hc_privsep__run() does the four in a row. The split is for a parent with work between the
 * steps: a broker client to build before the fork (serve's collector takes its symbolizer I/O
 * then), a line to print once the child runs, another child to wait for first.
 *
 * The child never runs the worker outside its sandbox: when entering fails, opts->refused says
 * why (on stderr: this library never prints) and its return value is the child's exit code.
 * Signals are the caller's: stop signals are caught before the fork, so the child inherits the
 * handlers; opts->stop is the flag they set.
 */
#ifndef HOTCOLD_PRIVSEP_RUN_H
#define HOTCOLD_PRIVSEP_RUN_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "privsep/broker.h"
#include "privsep/sandbox.h"

/* What the worker is given in the child; -1 for what it was not given. */
struct hc_privsep_child {
	int broker_fd; /* the client end of the broker (privsep/broker.h) */
	int stop_fd;   /* the worker's end of the stop line: hc_stopline__asked() */
};

/* Runs in the sandboxed child; returns its exit code. ctx is the caller's, as it was at fork. */
typedef int (*hc_privsep_worker_fn)(void *ctx, const struct hc_privsep_child *child);

struct hc_privsep_opts {
	enum hc_sandbox sandbox; /* the allow-list the child enters */
	const char *user;	 /* the user it becomes when we are root (privsep/privdrop.h) */
	/* Serve a descriptor broker to the child and give it a stop line, on which the broker
	 * asks it once to finish when *stop becomes set. */
	bool broker;
	const volatile sig_atomic_t *stop; /* with broker: required */
	/* Our descriptors the child must not keep (an output's lock, the other end of a
	 * socketpair); negative entries are skipped. Borrowed: read by hc_privsep__spawn only. */
	const int *close_fds;
	size_t n_close_fds;
	/* In the child, when hc_sandbox__enter failed with err (-errno) for the reason why:
	 * report it, return the exit code. Required. */
	int (*refused)(void *ctx, int err, const char *why);
};

/* A child, from hc_privsep__init to hc_privsep__close. Fields are read-only for callers. */
struct hc_privsep {
	struct hc_privsep_opts opts;
	pid_t pid; /* -1 until spawned, and once waited for */
	/* With opts.broker: the broker pair and the stop line, ours and the child's ends. */
	int broker_fd, child_broker_fd;
	int stop_fd, child_stop_fd;
};

/* What hc_privsep__wait saw. */
struct hc_privsep_result {
	int status;	/* the child's wait status; -1 when it could not be waited for */
	int broker_err; /* 0, or -errno: serving the broker failed (the child was still waited for)
			 */
	struct hc_broker_stats broker;
};

/*
 * Make ps ready to spawn: with opts->broker, the broker pair and the stop line. Before any
 * other call, even when it fails (ps can be closed then). 0, or -errno with a reason in why.
 * ps->child_broker_fd is valid from here: a broker client may be built before the fork.
 */
int hc_privsep__init(struct hc_privsep *ps, const struct hc_privsep_opts *opts, char *why,
		     size_t why_len);

/*
 * Fork the child: it closes our ends and opts->close_fds, enters the sandbox naming us its
 * parent (a killed parent takes it along), and exits with worker(ctx, ...)'s return value.
 * Here the child's ends are closed. Output buffered in stdio is flushed first, so nothing is
 * written twice. 0, or -errno with a reason in why (no child then).
 */
int hc_privsep__spawn(struct hc_privsep *ps, hc_privsep_worker_fn worker, void *ctx, char *why,
		      size_t why_len);

/*
 * With a broker: answer the child's requests until it closes its end or exits (privsep/broker.h),
 * then close our end. Then wait for the child: until it ends when kill_after_ms < 0, else at most
 * that long before SIGKILLing it. 0 with res filled, or -errno with a reason in why when it could
 * not be waited for (res->status -1).
 */
int hc_privsep__wait(struct hc_privsep *ps, int kill_after_ms, struct hc_privsep_result *res,
		     char *why, size_t why_len);

/* Close whatever descriptors ps still holds. A spawned child is not waited for here. */
void hc_privsep__close(struct hc_privsep *ps);

/*
 * init, spawn, wait (with no time limit), close. 0 when the child ran and ended, or -errno with
 * a reason in why; res is filled either way (a broker error and no status when none ran).
 */
int hc_privsep__run(const struct hc_privsep_opts *opts, hc_privsep_worker_fn worker, void *ctx,
		    struct hc_privsep_result *res, char *why, size_t why_len);

/*
 * The exit code a child's wait status stands for: its own, or 70 (EX_SOFTWARE) with why set to
 * "ended by signal N" (and, for SIGSYS, that a system call was outside its seccomp allow-list).
 * why is "" when the child exited.
 */
int hc_privsep__exit_code(int status, char *why, size_t why_len);

/* The exit code for hc_sandbox__enter's error: 71 (EX_OSERR) when the parent was already
 * gone, else 77 (EX_NOPERM). */
int hc_privsep__refused_exit_code(int err);

#endif
