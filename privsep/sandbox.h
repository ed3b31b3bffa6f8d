/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * privsep/sandbox: the seccomp allow-lists of hotcold's unprivileged processes.
 *
 *  - HC_SANDBOX_WORKER: what reads files a local user controls. `record`'s and `serve`'s
 *    collector (drains the ring buffer of programs the privileged half loaded, symbolizes with
 *    descriptors from the broker, writes the profile to a descriptor it was given) and
 *    `report` (reads a profile file, writes the output). No sockets of its own, no exec, no
 *    process creation, files opened read-only, no executable mappings; bpf() only for the
 *    map, link and iterator commands of objects it already holds; ioctl() only to turn its
 *    perf events on and off and to ask whether a descriptor is a terminal.
 *  - HC_SANDBOX_SERVER: serve's HTTP process (libmicrohttpd's threads, the push client):
 *    additionally threads (clone with CLONE_THREAD only), sockets, accept, connect.
 *
 * A call outside the list is not executed: the process gets SIGSYS, and our handler says
 * which system call it was on stderr and exits 70 (a bug, or an attack: either way loud).
 * The filter is installed after privileges are dropped (NoNewPrivs is set by then) and is
 * inherited by every thread created later.
 */
#ifndef HOTCOLD_PRIVSEP_SANDBOX_H
#define HOTCOLD_PRIVSEP_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

enum hc_sandbox {
	HC_SANDBOX_WORKER,
	HC_SANDBOX_SERVER,
	/* HC_SANDBOX_SERVER, and files written: serve --data-dir's store (SQLite creates,
	 * writes, truncates and removes its file, WAL and shared-memory index, and moves a
	 * damaged file aside). Only where --user may write: the data directory is its. */
	HC_SANDBOX_SERVER_STORE,
};

/* Install the allow-list. 0, or -errno with a reason in why. */
int hc_sandbox__install(enum hc_sandbox which, char *why, size_t why_len);

/*
 * Drop privileges (privsep/privdrop.h: become `user` when root, no capabilities,
 * NoNewPrivs), then install the allow-list. 0, or -errno with a reason in why.
 * parent > 0: a forked child of that process, which the kernel is to SIGKILL when the
 * parent dies. Set here, after the drop, because a change of credentials clears
 * PR_SET_PDEATHSIG; -ESRCH if the parent is already gone.
 */
int hc_sandbox__enter(enum hc_sandbox which, const char *user, pid_t parent, char *why,
		      size_t why_len);

#endif
