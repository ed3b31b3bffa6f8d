/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * sampler/: loads the BPF programs, opens one cpu-clock perf_event per online CPU with a
 * fixed period, attaches, and drains the ring buffer into callbacks. Owns every fd and link
 * it makes; hc_sampler__free() releases all of them. Never prints: libbpf's own messages go
 * wherever the caller's libbpf_set_print() sends them.
 */
#ifndef HOTCOLD_SAMPLER_H
#define HOTCOLD_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/sample.h"
#include "bpf/unwind.h"

struct hc_sampler_callbacks {
	/* One sample; `size` is the bytes received (header + ustack_len + kstack_len +
	 * ucopy_size), validated. */
	int (*sample)(void *ctx, const struct hc_sample_event *e, size_t size);
	int (*exec)(void *ctx, const struct hc_exec_event *e);
	/* Off-CPU: a thread's flushed intervals, its histograms, a --wakers stack. */
	int (*offcpu)(void *ctx, const struct hc_offcpu_event *e, size_t size);
	int (*thist)(void *ctx, const struct hc_thist_event *e);
	int (*waker)(void *ctx, const struct hc_waker_event *e, size_t size);
	/* --unwind dwarf: a switch-out's user registers and stack (copy.len bytes follow). */
	int (*ustack)(void *ctx, const struct hc_ustack_event *e, size_t size);
	/* --locks: one kernel lock contention (header + its stacks, validated). */
	int (*lock)(void *ctx, const struct hc_lock_event *e, size_t size);
	void *ctx;
};

struct hc_sampler_opts {
	uint64_t period_ns;    /* cpu-clock period: 1e9 / frequency */
	const uint32_t *tgids; /* -p filter; NULL/0: every process */
	size_t n_tgids;
	size_t ringbuf_bytes; /* 0: sized from period and CPUs */
	const char *comm;     /* --comm: only processes with this name; NULL: all */
	/* Off-CPU tracking from the scheduler tracepoints (on unless no_offcpu) */
	bool no_offcpu;
	uint64_t min_block_ns; /* blocks shorter than this: counted, not attributed */
	bool wakers;	       /* take the waker's stack at each wakeup (offwaketime) */
	bool no_stack_reuse;   /* take stacks at every switch-out, not only on a new context */
	uint64_t stack_budget; /* stack captures per second per CPU; 0: the default (10000) */
	/* --unwind dwarf: bytes of user stack copied with each sample and switch-out stack (0:
	 * frame pointers only; at most HC_STACK_COPY_MAX), and the bytes per second all CPUs
	 * together may copy (0: no limit); over it, frame pointers. */
	uint32_t stack_copy_bytes;
	uint64_t stack_copy_budget;
	/* --locks: kernel lock contentions from lock:contention_begin/_end (needs off-CPU
	 * tracking: whether a waiter blocked comes from sched_switch). */
	bool locks;
	/* --unwind table: user stacks walked in BPF with the unwind tables user space publishes
	 * in the area hc_sampler__uw_area() gives (bpf/unwind.h): uw_table_mb MiB of rows (8
	 * bytes each; 1 to 2048) and uw_procs process slots (4 KiB each, rounded up to a power
	 * of two; 0: 512). */
	bool uw_tables;
	uint32_t uw_table_mb;
	uint32_t uw_procs;
};

/* The tables' memory (mapped shared: a child forked after hc_sampler__new() writes it). */
struct hc_sampler_uw_area {
	/* room for n_rows, writable only as far as hc_sampler__uw_map_rows() has mapped it; room
	 * for n_procs, each slot writable once hc_sampler__uw_map_slot() has mapped it */
	struct hc_urow *rows;
	uint32_t n_rows;
	struct hc_uw_proc *procs;
	uint32_t n_procs;
};

/* The window as the scheduler programs saw it (bpf_ktime_get_ns(), CLOCK_MONOTONIC). */
struct hc_sampler_window {
	uint64_t start_ns;
	uint64_t end_ns;
};

/* Counters summed over the capture: enum hc_counter values, per CPU. */
struct hc_sampler_counts {
	uint32_t n_cpus; /* online CPUs sampled */
	uint32_t *cpus;	 /* malloc'd copy of their numbers: outlives the sampler */
	uint64_t total[HC_CNT_MAX];
	uint64_t *per_cpu;	/* malloc'd: per_cpu[i * HC_CNT_MAX + counter], i indexes cpus[] */
	uint64_t decode_errors; /* records user space could not parse (dropped, counted) */
	uint64_t callback_errors;
	/* Off-CPU tracking (all 0 with no_offcpu) */
	bool offcpu;
	uint64_t *idle_ns; /* malloc'd: idle task's time per CPU (index as cpus[]) */
	uint64_t idle_total_ns;
	uint64_t iter_records; /* records read from the end-of-window task iterator */
};

struct hc_sampler;

/*
 * Open and load the BPF object and create (disabled) perf events on every online CPU.
 * NULL + errno: ENOTSUP without kernel BTF, EPERM/EACCES without privileges, others from
 * the kernel; the step that failed, in words, in why (why_len bytes, NUL-terminated).
 */
struct hc_sampler *hc_sampler__new(const struct hc_sampler_opts *opts,
				   const struct hc_sampler_callbacks *cb, char *why,
				   size_t why_len);
void hc_sampler__free(struct hc_sampler *s);
/*
 * Can this kernel walk unwind tables (--unwind table)? The walk needs bpf_loop() (Linux 5.17)
 * in perf_event programs. 1 yes; 0 no, why in words; -errno when it cannot tell (no
 * privileges to load the probe: loading the programs will say so).
 */
int hc_sampler__tables_supported(char *why, size_t why_len);

/* Open the window: scheduler programs, the start-of-window task iterator, then the perf
 * events. */
int hc_sampler__start(struct hc_sampler *s);
/*
 * The process that forked the reader calls this: its mapping of the ring buffer goes (the
 * reader's stays). Pages the kernel maps into two processes count in the RSS of both; the
 * data pages even twice in each (the kernel maps them twice in a row). Poll and stop answer
 * -EBADF from then on.
 */
void hc_sampler__unmap_reader(struct hc_sampler *s);
/* --unwind table: the tables' memory; false without uw_tables (or after unmap_reader, which
 * unmaps it too: the reader publishes). */
bool hc_sampler__uw_area(const struct hc_sampler *s, struct hc_sampler_uw_area *out);
/*
 * --unwind table: make rows [0, end) of the area writable. The rows map is mapped in chunks
 * of 256 KiB as the publisher's rows reach them (the kernel maps a chunk's pages whole, and
 * they count in RSS from then on), not all at once. 0, or -errno (-EINVAL past n_rows).
 */
int hc_sampler__uw_map_rows(struct hc_sampler *s, uint32_t end);
/* --unwind table: make slot `slot` of the area's procs writable (mapped a page at a time, as
 * slots are first used). 0, or -errno (-EINVAL past n_procs). */
int hc_sampler__uw_map_slot(struct hc_sampler *s, uint32_t slot);
/* Wait up to timeout_ms for data and drain it into the callbacks. Returns records handled,
 * or -errno (-EINTR when a signal arrived). */
int hc_sampler__poll(struct hc_sampler *s, int timeout_ms);
/* Close the window: perf events off, scheduler programs detached, the ring buffer drained,
 * then every open off-CPU interval closed and sent by the end-of-window task iterator. */
int hc_sampler__stop(struct hc_sampler *s);
void hc_sampler__window(const struct hc_sampler *s, struct hc_sampler_window *w);
/* Read the in-kernel counters. Free with hc_sampler_counts__release(). */
int hc_sampler__counts(struct hc_sampler *s, struct hc_sampler_counts *out);
size_t hc_sampler__ringbuf_bytes(const struct hc_sampler *s);
/* The name a loss counter is reported under (`sampling.lost`, /metrics), NULL for counters
 * that are not losses. */
const char *hc_sampler__lost_name(int counter);
void hc_sampler_counts__release(struct hc_sampler_counts *c);

#endif
