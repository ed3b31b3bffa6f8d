/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * serve/collector: the sampling side of `hotcold serve`. Loads the BPF programs, drains
 * them, symbolizes, and once a second sends that second's paths, heat map, histogram
 * observations and counters to the server half (serve/wire.h) over a socket. Keeps no
 * history: the store lives on the other side.
 *
 * hc_collector__new() needs the privileges (BPF, perf events); hc_collector__start() and
 * hc_collector__run() need none when opts.io gives it its files (`hotcold serve` forks it
 * into the worker sandbox, privsep/, and the privileged parent answers opts.io's requests).
 */
#ifndef HOTCOLD_SERVE_COLLECTOR_H
#define HOTCOLD_SERVE_COLLECTOR_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "symbolize/symbolizer.h"

struct hc_collector_opts {
	uint64_t period_ns;
	double frequency_hz;
	uint64_t retention_s; /* off-CPU time older than this is not sent */
	bool no_offcpu;
	uint64_t min_block_ns;
	uint64_t stack_budget;
	bool no_stack_reuse;
	bool no_demangle;
	bool no_inline;
	/* User stacks: frame pointers only, or call frame information over copies of
	 * stack_copy_bytes at most copy_budget bytes per second (record's options). */
	bool unwind_fp;
	uint32_t stack_copy_bytes;
	uint64_t copy_budget;
	/* --unwind table: walked in BPF from unwind tables of unwind_table_mb MiB of rows */
	bool unwind_table;
	uint32_t unwind_table_mb;
	/* --locks: kernel lock contention (docs/locks.md): the waiters' paths, the kinds'
	 * counters and lock_wait_ns go to the server's lock store (serve/wire.h). */
	bool locks;
	int fd; /* the server's socket; not owned */
	/* Where the symbolizer's files come from (copied); NULL: opened directly. */
	const struct hc_symbolizer_io *io;
};

struct hc_collector;

/* BPF loaded and attached, sampling not started yet; the symbolizer made (kernel symbols are
 * loaded by start). NULL + errno; why (why_len bytes) names the step that failed. */
struct hc_collector *hc_collector__new(const struct hc_collector_opts *o, char *why,
				       size_t why_len);
/* In the parent, once the worker is forked: it alone reads the ring buffer (the parent's
 * mapping would count in the RSS of both). */
void hc_collector__unmap_reader(struct hc_collector *c);
void hc_collector__free(struct hc_collector *c);

/*
 * In the worker, before run(): kernel symbols loaded, --unwind table's tables published for
 * every running process, then sampling started (tracepoints, the task iterator, perf events
 * on). verbose: say how long publishing took. 0 or -errno (sampling did not start).
 */
int hc_collector__start(struct hc_collector *c, bool verbose);

/*
 * Sample and send until *stop is set, stop_fd is asked (privsep/broker.h: the stop line; -1:
 * none), or the server goes away. 0 on any of them (peer_gone tells the last), -errno on a
 * failure.
 */
int hc_collector__run(struct hc_collector *c, const volatile sig_atomic_t *stop, int stop_fd,
		      bool *peer_gone);

#endif
