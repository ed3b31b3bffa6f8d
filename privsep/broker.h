/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * privsep/broker: how the sandboxed worker gets files only the privileged half may open.
 *
 *  privileged half (root: BPF loaded,                 worker (--user, no capabilities,
 *  perf events open)                                  NoNewPrivs, seccomp: sandbox.h)
 *    hc_broker__serve()  ◄── {op, tgid, a, b} ────     symbolizer (hc_symbolizer_io)
 *                        ──── {err} + descriptors ─►   parses maps, stat, ELF, perf maps
 *
 * A request names a file by numbers, never by a path: the broker builds the path itself, from
 * a fixed set (/proc/TGID/maps + stat, /proc/TGID/status, /proc/TGID/map_files/START-END,
 * TGID's /tmp/perf-NSPID.map, /proc/kallsyms), checks what it opened (a regular file where
 * one is expected; a perf map owned by the process's owner and reached without following a
 * symlink out of its root; a mapping that is executable) and passes the descriptor. Of all
 * those bytes it reads one thing: the kernel-written "start-end perms" head of each line of
 * /proc/TGID/maps, to check that a requested mapping is program text, never a path.
 * The worker can therefore read the code the profiled processes run and their /proc text,
 * as a profiler must, and nothing else with the broker's privileges: not a data file a
 * process maps.
 */
#ifndef HOTCOLD_PRIVSEP_BROKER_H
#define HOTCOLD_PRIVSEP_BROKER_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "symbolize/symbolizer.h"

struct hc_broker_stats {
	uint64_t requests;
	uint64_t opened;  /* descriptors passed */
	uint64_t refused; /* requests answered with an error (bad request, policy, ENOENT...) */
};

/* A connected SOCK_SEQPACKET pair: sv[0] for the broker, sv[1] for the worker. */
int hc_broker__socketpair(int sv[2]);

/*
 * The stop line: how the privileged side tells the worker to finish. Not a signal: the worker
 * runs as another user, and signalling it would take CAP_KILL, which the units do not grant.
 * A connected pair, line[0] for the worker, line[1] for us, both close-on-exec. We write a byte
 * to ask; our death closes line[1], which the worker reads the same way, so a SIGKILLed
 * privileged process never leaves a worker behind even where PR_SET_PDEATHSIG cannot help.
 */
int hc_stopline__new(int line[2]);
/* The worker's side: true once line[0] is readable (asked, or our end closed). Never blocks. */
bool hc_stopline__asked(int fd);

/*
 * The privileged side: answer the worker's requests on sock until the worker closes it or
 * exits. When *stop becomes set (SIGINT/SIGTERM to us), the worker is asked once on the stop
 * line (stop_wfd) and the broker keeps answering while it finishes. Returns 0 at end of
 * stream, or -errno. `proc` is the procfs to open under ("/proc" when NULL; tests may point
 * elsewhere).
 */
int hc_broker__serve(int sock, int stop_wfd, const volatile sig_atomic_t *stop, const char *proc,
		     struct hc_broker_stats *stats);

/* Answer one request already received (exposed for tests). */
int hc_broker__answer(int sock, const void *req, size_t len, const char *proc,
		      struct hc_broker_stats *stats);

/* The worker's side: symbolizer I/O served by the broker on sock (one thread at a time). */
struct hc_broker_client {
	int sock;
};
void hc_broker_client__io(struct hc_broker_client *c, struct hc_symbolizer_io *io);
/* 0 while tgid exists (a zombie too), -ENOENT once it is gone, or another -errno. */
int hc_broker_client__alive(struct hc_broker_client *c, uint32_t tgid);

/* The request's wire form (fixed size; exposed for tests). */
enum hc_broker_op {
	HC_BROKER_PROC = 1, /* tgid -> maps, stat */
	HC_BROKER_STATUS,   /* tgid -> status */
	HC_BROKER_MAPPED,   /* tgid, a = start, b = end -> the mapped file */
	HC_BROKER_PERFMAP,  /* tgid, a = nspid -> perf-NSPID.map in tgid's /tmp */
	HC_BROKER_KALLSYMS, /* -> /proc/kallsyms */
	HC_BROKER_ALIVE,    /* tgid -> 0 while /proc/TGID exists, -ENOENT after (no descriptor) */
};

struct hc_broker_req {
	uint32_t op;
	uint32_t tgid;
	uint64_t a;
	uint64_t b;
};

/*
 * Decode and check one request of len bytes, a datagram as received: 0 and *out, or -EINVAL
 * (not the request's size, an unknown op, a tgid out of range, an empty mapping range, an
 * nspid out of range). Touches no file: the part of a request's handling that its bytes
 * alone decide (fuzz/fuzz_broker.c feeds it).
 */
int hc_broker__decode(const void *buf, size_t len, struct hc_broker_req *out);

struct hc_broker_rep {
	int32_t err; /* 0 or -errno */
	uint32_t nfds;
};

#endif
