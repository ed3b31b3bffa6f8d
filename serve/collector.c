// SPDX-License-Identifier: GPL-2.0-only
#include "serve/collector.h"

#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "privsep/broker.h"
#include "profile/store.h"
#include "base/time.h"
#include "capture/capture.h"
#include "capture/counters.h"
#include "sampler/sampler.h"
#include "serve/self.h"
#include "serve/sink.h"
#include "serve/wire.h"
#include "symbolize/symbolizer.h"

/* Seconds a second stays open for late samples before the store seals it. */
#define SEAL_LAG_S 2

struct hc_collector {
	struct hc_collector_opts o;
	struct hc_symbolizer *sym;
	struct hc_unwinder *unw; /* NULL: --unwind fp or table */
	struct hc_uwpub *pub;	 /* --unwind table */
	struct hc_sampler *sampler;
	struct hc_capture *cap;	    /* the pipeline */
	struct hc_serve_sink *sink; /* its sink: each second's wire records */
	uint64_t *idle_prev;	    /* idle-task samples per CPU at the last flush */
	int64_t now_s;		    /* CLOCK_REALTIME second of the last poll */
	int64_t started_at_ns;
	uint64_t flushes, flush_ns_last, flush_ns_max, send_errors, procs_pruned;
	const volatile sig_atomic_t *stop; /* hc_collector__run()'s */
};

/* The pipeline's clock, taken once a second: older time than the retention expires. */
static void set_clock(struct hc_collector *c)
{
	int64_t real = hc_clock_ns(CLOCK_REALTIME), mono = hc_clock_ns(CLOCK_MONOTONIC);

	hc_capture__set_clock(c->cap, real - mono, real / 1000000000ll - (int64_t)c->o.retention_s);
}

/* The collector's settings and counters for /api/status and /metrics, cumulative since
 * start, typed (profile/counters.def). */
static void send_status(struct hc_collector *c, const struct hc_sampler_counts *cnt)
{
	struct hc_serve_sink_stats sk;
	struct hc_capture_lock_stats ls;
	struct hc_symbolizer_stats ss;
	struct hc_capture_stats cs;
	struct hc_unwind_stats us = {0};
	struct hc_uwpub_stats ps = {0};
	bool copies = !c->o.unwind_fp && !c->o.unwind_table;
	struct hc_wire_status st = {
		.frequency_hz = c->o.frequency_hz,
		.period_ns = c->o.period_ns,
		.started_at_ns = c->started_at_ns,
		.cpus = cnt->n_cpus,
		.flags = (cnt->offcpu ? HC_WIRE_ST_OFFCPU : 0) |
			 (c->o.unwind_fp ? HC_WIRE_ST_UNWIND_FP : 0) |
			 (c->o.unwind_table ? HC_WIRE_ST_UNWIND_TABLE : 0) |
			 (c->o.locks ? HC_WIRE_ST_LOCKS : 0),
		.n_counters = HC_C_MAX,
	};
	struct hc_capture_figures f = {
		.cnt = cnt,
		.as = &cs,
		.ls = c->o.locks ? &ls : NULL,
		.ss = &ss,
		.us = &us,
		.ps = &ps,
		.table_mb = c->o.unwind_table ? c->o.unwind_table_mb : 0,
		.send_errors = c->send_errors,
	};
	uint64_t *v = st.c.v;

	hc_symbolizer__stats(c->sym, &ss);
	hc_capture__stats(c->cap, &cs);
	hc_capture__lock_stats(c->cap, &ls);
	hc_serve_sink__stats(c->sink, &sk);
	if (c->unw)
		hc_unwinder__stats(c->unw, &us);
	if (c->pub)
		hc_uwpub__stats(c->pub, &ps);
	f.lock_ingest_errors = sk.lock_cell_errors;
	hc_counters__fill_capture(&st.c, &f);
	v[HC_C_UNW_STACK_COPY_BYTES] = copies ? c->o.stack_copy_bytes : 0;
	v[HC_C_UNW_COPY_BUDGET] = copies ? c->o.copy_budget : 0;
	v[HC_C_COLL_RSS_BYTES] = hc_self__rss_bytes();
	v[HC_C_COLL_CPU_NS] = hc_self__cpu_ns();
	v[HC_C_COLL_FLUSHES] = c->flushes;
	v[HC_C_COLL_FLUSH_NS_LAST] = c->flush_ns_last;
	v[HC_C_COLL_FLUSH_NS_MAX] = c->flush_ns_max;
	v[HC_C_COLL_PROCESSES_PRUNED] = c->procs_pruned;
	v[HC_C_COLL_FRAME_RESETS] = sk.frame_resets;
	v[HC_C_COLL_FRAMES] = sk.frames;
	hc_wire__status(hc_serve_sink__buf(c->sink), &st);
}

/* The idle task runs only when nothing waits: each of its samples is a run queue of length
 * 0 on that CPU. Counted during the second that just ended. */
static void idle_samples(struct hc_collector *c, const struct hc_sampler_counts *cnt)
{
	for (uint32_t i = 0; i < cnt->n_cpus; i++) {
		uint64_t idle = cnt->per_cpu[(size_t)i * HC_CNT_MAX + HC_CNT_IDLE];

		if (idle > c->idle_prev[i])
			hc_capture__idle_samples(c->cap, c->now_s - 1, cnt->cpus[i],
						 idle - c->idle_prev[i]);
		c->idle_prev[i] = idle;
	}
}

/* Exited processes: their maps are no longer needed once their seconds are sent (the frames
 * are resolved), every 10 s. */
static void prune(struct hc_collector *c)
{
	size_t dropped;

	if (!hc_symbolizer__prune_gone(c->sym, &dropped))
		c->procs_pruned += dropped;
	if (c->unw)
		hc_unwinder__prune(c->unw);
	/* after the symbolizer's: the slots of processes it let go, then their tables */
	if (c->pub)
		(void)hc_uwpub__prune(c->pub);
}

/* Send everything gathered since the last flush, and seal the seconds that are complete. */
static int flush(struct hc_collector *c)
{
	struct hc_wire_buf *buf = hc_serve_sink__buf(c->sink);
	struct hc_sampler_counts cnt = {0};
	int64_t t0 = hc_clock_ns(CLOCK_MONOTONIC);
	int err, cerr;

	err = hc_serve_sink__begin(c->sink);
	if (err)
		return err;
	err = hc_capture__flush(c->cap);
	set_clock(c);
	if (err)
		return err;
	cerr = hc_sampler__counts(c->sampler, &cnt);
	if (!cerr)
		idle_samples(c, &cnt);
	err = hc_serve_sink__end(c->sink, c->now_s);
	if (err) {
		hc_sampler_counts__release(&cnt);
		return err;
	}
	if (!cerr)
		send_status(c, &cnt);
	hc_sampler_counts__release(&cnt);
	hc_wire__seal(buf, c->now_s - SEAL_LAG_S);
	err = hc_wire_buf__send(buf, c->o.fd, c->stop);
	hc_wire_buf__reset(buf);
	c->flushes++;
	c->flush_ns_last = (uint64_t)(hc_clock_ns(CLOCK_MONOTONIC) - t0);
	if (c->flush_ns_last > c->flush_ns_max)
		c->flush_ns_max = c->flush_ns_last;
	if (err)
		c->send_errors++;
	/*
	 * Each second frees the pipeline's tables; every 10 s hand the free pages back instead
	 * of keeping the peak forever (measured: arena 36 MB for 13 MB in use without it).
	 * Not every second: each trim's madvise() flushes TLBs on every CPU and the next second
	 * faults the same pages in again (13 % of this process's CPU under pgbench).
	 */
	if (c->flushes % 10 == 0) {
		prune(c);
		malloc_trim(0);
	}
	return err;
}

struct hc_collector *hc_collector__new(const struct hc_collector_opts *o, char *why, size_t why_len)
{
	struct hc_symbolizer_opts sopts = {
		.no_demangle = o->no_demangle, .no_inline = o->no_inline, .io = o->io};
	struct hc_capture_opts copts = {.period_ns = o->period_ns, .per_second = true};
	struct hc_sampler_opts popts = {0};
	struct hc_sampler_callbacks cb;
	struct hc_capture_sink sink;
	struct hc_collector *c = calloc(1, sizeof(*c));
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int err;

	snprintf(why, why_len, "out of memory");
	if (!c)
		return NULL;
	c->o = *o;
	c->sym = hc_symbolizer__new(&sopts);
	c->sink = hc_serve_sink__new(o->locks);
	c->idle_prev = calloc(ncpu > 0 ? (size_t)ncpu : 1, sizeof(*c->idle_prev));
	if (!c->sym || !c->sink || !c->idle_prev)
		goto err_free;
	if (!o->unwind_fp && !o->unwind_table) {
		c->unw = hc_unwinder__new(c->sym);
		if (!c->unw)
			goto err_free;
	}
	sink = hc_serve_sink__sink(c->sink);
	c->cap = hc_capture__new(&copts, c->sym, c->unw, &sink);
	if (!c->cap)
		goto err_free;
	set_clock(c);

	cb = hc_capture__sampler_callbacks(&c->cap);
	popts.period_ns = o->period_ns;
	popts.no_offcpu = o->no_offcpu;
	popts.min_block_ns = o->min_block_ns;
	popts.stack_budget = o->stack_budget;
	popts.no_stack_reuse = o->no_stack_reuse;
	popts.locks = o->locks;
	/*
	 * Drained every 100 ms and woken at a quarter full: 512 KiB a CPU (at least 1 MiB) holds
	 * a second or more of samples at 999 Hz and of off-CPU records at 30k switches a second
	 * on two CPUs (record sizes its buffer for whole captures; a full buffer's drops are
	 * counted). Its pages count twice in RSS (the kernel maps the data twice in a row).
	 */
	popts.ringbuf_bytes = ncpu > 2 ? (size_t)ncpu << 19 : 1u << 20;
	/* --unwind dwarf: and an eighth of a second of stack copies at the budget (copies stop
	 * while the buffer is half full, so they never cost a sample). */
	if (!o->unwind_fp && !o->unwind_table) {
		popts.stack_copy_bytes = o->stack_copy_bytes;
		popts.stack_copy_budget = o->copy_budget;
		popts.ringbuf_bytes += o->copy_budget / 8;
	}
	/* --unwind table: the tables' maps, published into by the worker (forked after us:
	 * the mapping is shared) */
	popts.uw_tables = o->unwind_table;
	popts.uw_table_mb = o->unwind_table_mb;
	/* --locks: a contention's record carries two stacks (up to ~2 KiB): room for storms. */
	if (o->locks)
		popts.ringbuf_bytes += 1u << 20;
	c->sampler = hc_sampler__new(&popts, &cb, why, why_len);
	if (!c->sampler)
		goto err_free;
	if (o->unwind_table) {
		c->pub = hc_capture__uwpub_new(c->sym, c->sampler);
		if (!c->pub) {
			snprintf(why, why_len, "the unwind tables' publisher");
			goto err_free;
		}
		hc_capture__set_uwpub(c->cap, c->pub);
	}
	/* Loading parsed the kernel's BTF (megabytes, freed now): give the pages back, this
	 * process runs for days. */
	malloc_trim(0);
	return c;

err_free:
	err = errno;
	hc_collector__free(c);
	errno = err;
	return NULL;
}

void hc_collector__unmap_reader(struct hc_collector *c)
{
	hc_sampler__unmap_reader(c->sampler);
}

void hc_collector__free(struct hc_collector *c)
{
	if (!c)
		return;
	/* BPF first: programs, links and perf events are released here. */
	hc_sampler__free(c->sampler);
	hc_capture__free(c->cap);
	hc_uwpub__free(c->pub);
	hc_unwinder__free(c->unw);
	hc_symbolizer__free(c->sym);
	hc_serve_sink__free(c->sink);
	free(c->idle_prev);
	free(c);
}

int hc_collector__start(struct hc_collector *c, bool verbose)
{
	int err;

	/* Here, not in new(): sandboxed, the kallsyms descriptor comes from the broker, which
	 * answers only once the worker is forked. Without it kernel frames stay [unknown]. */
	hc_symbolizer__load_kernel(c->sym);
	/* --unwind table: every running process's tables before the first sample, as record
	 * does: a thread sampled or switched out before its process is published is walked
	 * with frame pointers (unwind.tables.no_process), and the start iterator walks the
	 * threads asleep now with the tables. Processes that start later are published at
	 * their exec (the exec tracepoint is attached already: its records wait in the ring
	 * buffer). */
	if (c->pub) {
		uint64_t t = hc_mono_ns();
		size_t n = 0;

		err = hc_uwpub__publish_running(c->pub, &n); /* out of memory: at first records */
		if (verbose)
			fprintf(stderr,
				"hotcold: unwind tables of %zu processes published in %.0f ms%s\n",
				n, (double)(hc_mono_ns() - t) / 1e6, err ? " (out of memory)" : "");
	}
	c->started_at_ns = hc_clock_ns(CLOCK_REALTIME);
	c->now_s = c->started_at_ns / 1000000000ll;
	hc_capture__set_now(c->cap, c->now_s);
	return hc_sampler__start(c->sampler);
}

int hc_collector__run(struct hc_collector *c, const volatile sig_atomic_t *stop, int stop_fd,
		      bool *peer_gone)
{
	int64_t last_flush_s = c->now_s;

	*peer_gone = false;
	c->stop = stop;
	while (!*stop) {
		int err = hc_sampler__poll(c->sampler, 100);

		if (err < 0 && err != -EINTR)
			return err;
		if (stop_fd >= 0 && hc_stopline__asked(stop_fd))
			break;
		c->now_s = hc_clock_ns(CLOCK_REALTIME) / 1000000000ll;
		hc_capture__set_now(c->cap, c->now_s);
		if (c->now_s == last_flush_s)
			continue;
		last_flush_s = c->now_s;
		err = flush(c);
		if (err == -EINTR)
			break; /* stopped while the server was slow to read */
		if (err == -EPIPE || err == -ECONNRESET) {
			*peer_gone = true;
			return 0;
		}
		if (err)
			return err;
	}
	return 0;
}
