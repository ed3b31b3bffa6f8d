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
#include "sampler/aggregate.h"
#include "sampler/fill_counters.h"
#include "sampler/sampler.h"
#include "serve/self.h"
#include "serve/wire.h"
#include "symbolize/symbolizer.h"

/* Seconds of the heat map held before they are sent: samples arrive nearly in order. */
#define HEAT_SLOTS 8
/* Seconds a second stays open for late samples before the store seals it. */
#define SEAL_LAG_S 2
/* Frames the collector names before it starts its ids over (HC_WIRE_RESET): with processes
 * coming and going, every pid and tid is a new frame; this bounds the table on both sides. */
#define FRAMES_MAX 16384

/* Distinct lock-node names held for the frame tables (kinds x named locks): beyond it, both
 * frame tables start over with the names. */
#define LABELS_MAX 4096
/* lock_wait_ns quantize buckets: 0, then [2^k, 2^(k+1)) for k = 0..63. */
#define LOCK_QSLOTS 65

/* Frame ids of user and kernel frames by their (symbolizer-owned, stable) name pointer:
 * a direct-mapped cache in front of the frame table, which costs a hash of 5 words per
 * element of every path every second (measured: the collector's top function). */
#define FCACHE_SLOTS 8192

struct fcache_ent {
	const char *name;
	const char *module;
	int64_t offset;
	uint16_t kind;
	bool inlined;
	uint32_t fid;
};

struct heat_col {
	int64_t sec; /* 0: free */
	uint32_t rows[HC_WIRE_HEAT_ROWS];
};

/* One frame id space: the main store's, or the lock store's (--locks). */
struct ftab {
	struct hc_stacktab *frames; /* frame identity -> fid - 1 */
	struct fcache_ent *fcache;  /* FCACHE_SLOTS */
	bool lock;		    /* ids of the lock store: LOCK_FRAME records */
};

/* --locks: one second's contentions of one kind, spun or blocked, until the next flush. */
struct lock_cell {
	int64_t sec;
	uint32_t flags; /* LCB_F_* */
	bool blocked;
	uint64_t count, wait_ns, max_ns, failed, no_stack;
	uint64_t q[LOCK_QSLOTS]; /* lock_wait_ns */
};

struct hc_collector {
	struct hc_collector_opts o;
	struct hc_symbolizer *sym;
	struct hc_unwinder *unw; /* NULL: --unwind fp */
	struct hc_sampler *sampler;
	struct hc_agg *agg;	   /* this second's paths */
	struct ftab ft, lft;	   /* frame ids: the main store's, the lock store's */
	struct hc_stacktab *cells; /* [sec, hist, pid, value, name0, name1] -> count (samples) */
	/* --locks: lock-node names, stable for the frame tables (the aggregator's own last a
	 * second); the contentions' counters since the last flush */
	struct hc_stacktab *label_keys; /* name bytes -> labels[] */
	char **labels;
	size_t n_labels, cap_labels;
	struct lock_cell *lcells;
	size_t n_lcells, cap_lcells, lcell_last;
	struct hc_agg_lock_stats lsum; /* of the aggregators already flushed */
	uint64_t lcell_errors;	       /* contentions not counted (out of memory) */
	int64_t oldest_s;	       /* the aggregator's: older contentions expire */
	struct heat_col heat[HEAT_SLOTS];
	struct hc_wire_buf buf;
	uint32_t path[HC_WIRE_MAX_PATH];
	uint64_t *idle_prev;	 /* idle-task samples per CPU at the last flush */
	struct hc_agg_stats sum; /* of the aggregators already flushed */
	int64_t now_s;		 /* CLOCK_REALTIME second of the last poll */
	int64_t mono_to_real_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC, taken once a second */
	int64_t started_at_ns;
	uint64_t flushes, flush_ns_last, flush_ns_max, send_errors, procs_pruned, frame_resets;
	const volatile sig_atomic_t *stop; /* hc_collector__run()'s */
};

static int64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static struct hc_agg *new_agg(struct hc_collector *c)
{
	struct hc_agg *agg = hc_agg__new(c->sym, c->o.period_ns);
	int64_t real = clock_ns(CLOCK_REALTIME), mono = clock_ns(CLOCK_MONOTONIC);

	c->mono_to_real_ns = real - mono;
	if (agg) {
		c->oldest_s = real / 1000000000ll - (int64_t)c->o.retention_s;
		hc_agg__set_buckets(agg, c->mono_to_real_ns, c->oldest_s);
		hc_agg__set_unwinder(agg, c->unw);
	}
	return agg;
}

static void add_cell(struct hc_collector *c, int64_t sec, enum hc_store_hist h, uint32_t pid,
		     int64_t value, const char name[16], uint64_t count)
{
	uint64_t k[6] = {(uint64_t)sec, h, pid, (uint64_t)value, 0, 0};
	int64_t idx;

	memcpy(&k[4], name, 16);
	idx = hc_stacktab__intern(c->cells, k, 6);
	if (idx >= 0)
		hc_stacktab__weights(c->cells, (size_t)idx)->samples += count;
}

static void cpu_name(uint32_t cpu, char out[16])
{
	memset(out, 0, 16);
	snprintf(out, 16, "cpu %u", cpu);
}

static void add_heat(struct hc_collector *c, int64_t sec, unsigned int row);

static int on_sample(void *ctx, const struct hc_sample_event *e, size_t size)
{
	struct hc_collector *c = ctx;
	int64_t real = (int64_t)e->time_ns + c->mono_to_real_ns;
	int64_t sec = real / 1000000000ll;
	char name[16];

	add_heat(c, sec, (unsigned int)(real % 1000000000ll / (1000000000ll / HC_WIRE_HEAT_ROWS)));
	memcpy(name, e->pcomm, 16);
	add_cell(c, sec, HC_STORE_H_PRIORITY, e->tgid, e->prio, name, 1);
	cpu_name(e->cpu, name);
	add_cell(c, sec, HC_STORE_H_RUNQ_LENGTH, 0, e->runq_len, name, 1);
	return hc_agg__sample(c->agg, e, size);
}

static int on_exec(void *ctx, const struct hc_exec_event *e)
{
	return hc_agg__exec(((struct hc_collector *)ctx)->agg, e);
}

static int on_offcpu(void *ctx, const struct hc_offcpu_event *e, size_t size)
{
	return hc_agg__offcpu(((struct hc_collector *)ctx)->agg, e, size);
}

static int on_waker(void *ctx, const struct hc_waker_event *e, size_t size)
{
	return hc_agg__waker(((struct hc_collector *)ctx)->agg, e, size);
}

static int on_ustack(void *ctx, const struct hc_ustack_event *e, size_t size)
{
	return hc_agg__ustack(((struct hc_collector *)ctx)->agg, e, size);
}

static struct lock_cell *lock_cell(struct hc_collector *c, int64_t sec, uint32_t flags,
				   bool blocked)
{
	struct lock_cell *lc;

	/* contentions come in runs of a kind: the last cell first */
	if (c->lcell_last < c->n_lcells) {
		lc = &c->lcells[c->lcell_last];
		if (lc->sec == sec && lc->flags == flags && lc->blocked == blocked)
			return lc;
	}
	for (size_t i = 0; i < c->n_lcells; i++) {
		lc = &c->lcells[i];
		if (lc->sec == sec && lc->flags == flags && lc->blocked == blocked) {
			c->lcell_last = i;
			return lc;
		}
	}
	if (c->n_lcells == c->cap_lcells) {
		size_t cap = c->cap_lcells ? c->cap_lcells * 2 : 16;

		lc = realloc(c->lcells, cap * sizeof(*lc));
		if (!lc)
			return NULL;
		c->lcells = lc;
		c->cap_lcells = cap;
	}
	lc = &c->lcells[c->n_lcells];
	memset(lc, 0, sizeof(*lc));
	lc->sec = sec;
	lc->flags = flags;
	lc->blocked = blocked;
	c->lcell_last = c->n_lcells++;
	return lc;
}

static int on_lock(void *ctx, const struct hc_lock_event *e, size_t size)
{
	struct hc_collector *c = ctx;
	/* the second the contention ended in: the aggregator files its path there too */
	int64_t real = (int64_t)(e->start_ns + e->wait_ns) + c->mono_to_real_ns;
	int64_t sec = real >= 0 ? real / 1000000000ll : 0;
	/* as record's histogram does: a wait beyond 2^63 - 1 ns is counted there */
	uint64_t qv = e->wait_ns > INT64_MAX ? INT64_MAX : e->wait_ns;
	struct lock_cell *lc;

	if (sec >= c->oldest_s) { /* older: the aggregator counts it as expired */
		lc = lock_cell(c, sec, e->flags & HC_LCB_MASK, e->blocked != 0);
		if (lc) {
			lc->count++;
			lc->wait_ns += e->wait_ns;
			if (e->wait_ns > lc->max_ns)
				lc->max_ns = e->wait_ns;
			lc->failed += e->ret != 0;
			lc->no_stack += !e->ustack_len && !e->kstack_len;
			lc->q[qv ? 64 - __builtin_clzll(qv) : 0]++;
		} else {
			c->lcell_errors++;
		}
	}
	return hc_agg__lock(c->agg, e, size);
}

static int on_thist(void *ctx, const struct hc_thist_event *e)
{
	static const enum hc_store_hist map[HC_TH_MAX] = {
		[HC_TH_SLICE] = HC_STORE_H_ONCPU_SLICE_US,
		[HC_TH_OFF] = HC_STORE_H_OFFCPU_US,
		[HC_TH_RUNQ] = HC_STORE_H_RUNQ_LATENCY_US,
	};
	struct hc_collector *c = ctx;
	char name[16];

	memcpy(name, e->pcomm, 16);
	for (int h = 0; h < HC_TH_MAX; h++)
		for (int k = 0; k < HC_QSLOTS; k++)
			if (e->slots[h][k])
				add_cell(c, c->now_s, map[h], e->tgid,
					 k ? (int64_t)1 << (k - 1) : 0, name, e->slots[h][k]);
	return 0;
}

static void add_heat(struct hc_collector *c, int64_t sec, unsigned int row)
{
	struct heat_col *oldest = &c->heat[0];

	if (row >= HC_WIRE_HEAT_ROWS)
		row = HC_WIRE_HEAT_ROWS - 1;
	for (int i = 0; i < HEAT_SLOTS; i++) {
		if (c->heat[i].sec == sec) {
			c->heat[i].rows[row]++;
			return;
		}
		if (c->heat[i].sec < oldest->sec)
			oldest = &c->heat[i];
	}
	/* A new second: take a free column, or send the oldest now. */
	if (oldest->sec)
		hc_wire__heat(&c->buf, oldest->sec, oldest->rows);
	memset(oldest, 0, sizeof(*oldest));
	oldest->sec = sec;
	oldest->rows[row] = 1;
}

/* A lock node's name as a pointer that lives as long as the frame tables: the aggregator's
 * own go with it every second, and a freed name's address can come back with another name. */
static const char *stable_label(struct hc_collector *c, const char *name)
{
	uint64_t k[24] = {0};
	size_t len = strnlen(name, sizeof(k) - 1);
	int64_t idx;

	memcpy(k, name, len);
	idx = hc_stacktab__intern(c->label_keys, k, (len + 8) / 8);
	if (idx < 0)
		return NULL;
	if ((size_t)idx >= c->cap_labels) {
		size_t cap = c->cap_labels ? c->cap_labels * 2 : 64;
		char **n;

		while (cap <= (size_t)idx)
			cap *= 2;
		n = realloc(c->labels, cap * sizeof(*n));
		if (!n)
			return NULL;
		memset(n + c->cap_labels, 0, (cap - c->cap_labels) * sizeof(*n));
		c->labels = n;
		c->cap_labels = cap;
	}
	if (!c->labels[idx]) /* new, or its copy failed before */
		c->labels[idx] = strndup(name, len);
	if ((size_t)idx >= c->n_labels)
		c->n_labels = (size_t)idx + 1;
	return c->labels[idx];
}

/* A frame's identity on the collector side: names from the symbolizer are stable pointers,
 * lock-node names are made so; process, thread and waker names are comm bytes. */
static int64_t frame_id(struct hc_collector *c, struct ftab *t, const struct hc_path_elem *e)
{
	uint64_t k[5] = {e->kind | (e->inlined ? 0x100u : 0), e->id, (uint64_t)e->offset, 0, 0};
	size_t before = hc_stacktab__count(t->frames);
	struct hc_path_elem le;
	struct fcache_ent *ce = NULL;
	int64_t idx;

	if (e->kind == HC_NODE_LOCK) {
		le = *e;
		le.name = stable_label(c, e->name);
		if (!le.name)
			return -ENOMEM;
		e = &le;
	}
	if (e->kind == HC_NODE_PROCESS || e->kind == HC_NODE_THREAD || e->kind == HC_NODE_WAKER) {
		/* names in buffers of the walk: by content */
		memcpy(&k[3], e->name, strnlen(e->name, 16));
	} else {
		uint64_t h = ((uintptr_t)e->name ^ (uint64_t)e->offset * 0x9e3779b97f4a7c15ull) *
			     0xff51afd7ed558ccdull;

		ce = &t->fcache[(h >> 40) & (FCACHE_SLOTS - 1)];
		if (ce->fid && ce->name == e->name && ce->module == e->module &&
		    ce->offset == e->offset && ce->kind == e->kind && ce->inlined == e->inlined)
			return ce->fid;
		k[3] = (uintptr_t)e->name;
		k[4] = (uintptr_t)e->module;
	}
	idx = hc_stacktab__intern(t->frames, k, 5);
	if (idx < 0)
		return idx;
	if ((size_t)idx >= before) {
		if (t->lock)
			hc_wire__lock_frame(&c->buf, (uint32_t)idx + 1, e);
		else
			hc_wire__frame(&c->buf, (uint32_t)idx + 1, e);
	}
	if (ce)
		*ce = (struct fcache_ent){.name = e->name,
					  .module = e->module,
					  .offset = e->offset,
					  .kind = e->kind,
					  .inlined = e->inlined,
					  .fid = (uint32_t)idx + 1};
	return idx + 1;
}

static int send_to(struct hc_collector *c, struct ftab *t, const struct hc_path_elem *path,
		   size_t n, const struct hc_weights *w, int64_t sec)
{
	if (n > HC_WIRE_MAX_PATH || n < 2)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int64_t fid = frame_id(c, t, &path[i]);

		if (fid < 0)
			return (int)fid;
		c->path[i] = (uint32_t)fid;
	}
	if (t->lock)
		hc_wire__lock_add(&c->buf, sec, w, c->path, (uint32_t)n);
	else
		hc_wire__add(&c->buf, sec, w, c->path, (uint32_t)n);
	return 0;
}

static int send_path(void *ctx, const struct hc_path_elem *path, size_t n,
		     const struct hc_weights *w, int64_t sec)
{
	struct hc_collector *c = ctx;

	return send_to(c, &c->ft, path, n, w, sec);
}

static int send_lock_path(void *ctx, const struct hc_path_elem *path, size_t n,
			  const struct hc_weights *w, int64_t sec)
{
	struct hc_collector *c = ctx;

	return send_to(c, &c->lft, path, n, w, sec);
}

/* --locks: the contentions' counters and lock_wait_ns since the last flush. */
static void send_lock_cells(struct hc_collector *c)
{
	static const enum hc_store_counter cn[] = {
		HC_STORE_C_LOCK_COUNT,	HC_STORE_C_LOCK_WAIT_NS,  HC_STORE_C_LOCK_MAX_NS,
		HC_STORE_C_LOCK_FAILED, HC_STORE_C_LOCK_NO_STACK,
	};

	for (size_t i = 0; i < c->n_lcells; i++) {
		const struct lock_cell *lc = &c->lcells[i];
		const uint64_t v[] = {lc->count, lc->wait_ns, lc->max_ns, lc->failed, lc->no_stack};
		char key[64];

		/* the series key of record's lock_wait_ns, "KIND spin" / "KIND block" */
		snprintf(key, sizeof(key), "%s %s", hc_lock_kind_name(lc->flags),
			 lc->blocked ? "block" : "spin");
		for (size_t k = 0; k < sizeof(cn) / sizeof(cn[0]); k++)
			if (v[k])
				hc_wire__counter(&c->buf, lc->sec, cn[k], key, v[k]);
		for (int q = 0; q < LOCK_QSLOTS; q++)
			if (lc->q[q])
				hc_wire__hist(&c->buf, lc->sec, HC_STORE_H_LOCK_WAIT_NS, 0,
					      q ? (int64_t)(1ull << (q - 1)) : 0, lc->q[q], key);
	}
	c->n_lcells = 0;
	c->lcell_last = 0;
}

/* Start a frame table over (ids from 1 again, on both sides). */
static int ftab_reset(struct hc_collector *c, struct ftab *t)
{
	struct hc_stacktab *frames = hc_stacktab__new();

	if (!frames)
		return -ENOMEM;
	hc_stacktab__free(t->frames);
	t->frames = frames;
	memset(t->fcache, 0, FCACHE_SLOTS * sizeof(*t->fcache));
	if (t->lock)
		hc_wire__lock_reset(&c->buf);
	else
		hc_wire__reset(&c->buf);
	c->frame_resets++;
	return 0;
}

static void add_lock_stats(struct hc_agg_lock_stats *sum, const struct hc_agg_lock_stats *s)
{
	const uint64_t *src = (const uint64_t *)s;
	uint64_t *dst = (uint64_t *)sum;

	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		dst[i] += src[i];
}

static void add_stats(struct hc_agg_stats *sum, const struct hc_agg_stats *s)
{
	const uint64_t *src = (const uint64_t *)s;
	uint64_t *dst = (uint64_t *)sum;

	for (size_t i = 0; i < sizeof(*s) / sizeof(uint64_t); i++)
		dst[i] += src[i];
}

/* The collector's settings and counters for /api/status and /metrics, cumulative since
 * start, typed (profile/counters.def). */
static void send_status(struct hc_collector *c, const struct hc_sampler_counts *cnt)
{
	struct hc_symbolizer_stats ss;
	struct hc_unwind_stats us = {0};
	struct hc_wire_status st = {
		.frequency_hz = c->o.frequency_hz,
		.period_ns = c->o.period_ns,
		.started_at_ns = c->started_at_ns,
		.cpus = cnt->n_cpus,
		.flags = (cnt->offcpu ? HC_WIRE_ST_OFFCPU : 0) |
			 (c->o.unwind_fp ? HC_WIRE_ST_UNWIND_FP : 0) |
			 (c->o.locks ? HC_WIRE_ST_LOCKS : 0),
		.n_counters = HC_C_MAX,
	};
	struct hc_capture_figures f = {
		.cnt = cnt,
		.as = &c->sum,
		.ls = c->o.locks ? &c->lsum : NULL,
		.ss = &ss,
		.us = &us,
		.lock_ingest_errors = c->lcell_errors,
		.send_errors = c->send_errors,
	};
	uint64_t *v = st.c.v;

	hc_symbolizer__stats(c->sym, &ss);
	if (c->unw)
		hc_unwinder__stats(c->unw, &us);
	hc_counters__fill_capture(&st.c, &f);
	v[HC_C_UNW_STACK_COPY_BYTES] = c->o.unwind_fp ? 0 : c->o.stack_copy_bytes;
	v[HC_C_UNW_COPY_BUDGET] = c->o.unwind_fp ? 0 : c->o.copy_budget;
	v[HC_C_COLL_RSS_BYTES] = hc_self__rss_bytes();
	v[HC_C_COLL_CPU_NS] = hc_self__cpu_ns();
	v[HC_C_COLL_FLUSHES] = c->flushes;
	v[HC_C_COLL_FLUSH_NS_LAST] = c->flush_ns_last;
	v[HC_C_COLL_FLUSH_NS_MAX] = c->flush_ns_max;
	v[HC_C_COLL_PROCESSES_PRUNED] = c->procs_pruned;
	v[HC_C_COLL_FRAME_RESETS] = c->frame_resets;
	v[HC_C_COLL_FRAMES] = hc_stacktab__count(c->ft.frames);
	hc_wire__status(&c->buf, &st);
}

/* Send everything gathered since the last flush, and seal the seconds that are complete. */
static int flush(struct hc_collector *c)
{
	struct hc_sampler_counts cnt = {0};
	struct hc_agg *old = c->agg, *fresh;
	struct hc_stacktab *cells;
	struct hc_agg_stats as;
	int64_t t0 = clock_ns(CLOCK_MONOTONIC);
	int err;

	/* Lock-node names are keys of both frame tables: they go when both start over. */
	if (c->n_labels >= LABELS_MAX) {
		struct hc_stacktab *keys = hc_stacktab__new();

		if (!keys || ftab_reset(c, &c->ft) || (c->o.locks && ftab_reset(c, &c->lft))) {
			hc_stacktab__free(keys);
			return -ENOMEM;
		}
		hc_stacktab__free(c->label_keys);
		c->label_keys = keys;
		for (size_t i = 0; i < c->n_labels; i++) {
			free(c->labels[i]);
			c->labels[i] = NULL;
		}
		c->n_labels = 0;
	}
	if (hc_stacktab__count(c->ft.frames) >= FRAMES_MAX && ftab_reset(c, &c->ft))
		return -ENOMEM;
	if (c->o.locks && hc_stacktab__count(c->lft.frames) >= FRAMES_MAX && ftab_reset(c, &c->lft))
		return -ENOMEM;
	fresh = new_agg(c);
	cells = hc_stacktab__new();
	if (!fresh || !cells) {
		hc_agg__free(fresh);
		hc_stacktab__free(cells);
		return -ENOMEM;
	}
	c->agg = fresh;
	err = hc_agg__for_each_path(old, send_path, c);
	if (!err && c->o.locks) {
		struct hc_agg_lock_stats ls;

		err = hc_agg__for_each_lock_path(old, send_lock_path, c);
		hc_agg__lock_stats(old, &ls);
		add_lock_stats(&c->lsum, &ls);
		send_lock_cells(c);
	}
	hc_agg__stats(old, &as);
	add_stats(&c->sum, &as);
	hc_agg__free(old);
	if (err)
		return err;

	for (size_t i = 0, n = hc_stacktab__count(c->cells); i < n; i++) {
		size_t kn;
		const uint64_t *k = hc_stacktab__key(c->cells, i, &kn);
		char name[17] = {0};

		memcpy(name, &k[4], 16);
		hc_wire__hist(&c->buf, (int64_t)k[0], (uint32_t)k[1], (uint32_t)k[2], (int64_t)k[3],
			      hc_stacktab__weights(c->cells, i)->samples, name);
	}
	hc_stacktab__free(c->cells);
	c->cells = cells;

	/* Heat columns of seconds that are over. */
	for (int i = 0; i < HEAT_SLOTS; i++)
		if (c->heat[i].sec && c->heat[i].sec < c->now_s) {
			hc_wire__heat(&c->buf, c->heat[i].sec, c->heat[i].rows);
			memset(&c->heat[i], 0, sizeof(c->heat[i]));
		}

	err = hc_sampler__counts(c->sampler, &cnt);
	if (!err) {
		/* The idle task runs only when nothing waits: each of its samples is a run
		 * queue of length 0 on that CPU. Counted during the second that just ended. */
		for (uint32_t i = 0; i < cnt.n_cpus; i++) {
			uint64_t idle = cnt.per_cpu[(size_t)i * HC_CNT_MAX + HC_CNT_IDLE];
			char name[17] = {0};

			if (idle > c->idle_prev[i]) {
				cpu_name(cnt.cpus[i], name);
				hc_wire__hist(&c->buf, c->now_s - 1, HC_STORE_H_RUNQ_LENGTH, 0, 0,
					      idle - c->idle_prev[i], name);
			}
			c->idle_prev[i] = idle;
		}
		send_status(c, &cnt);
	}
	hc_sampler_counts__release(&cnt);
	hc_wire__seal(&c->buf, c->now_s - SEAL_LAG_S);
	err = hc_wire_buf__send(&c->buf, c->o.fd, c->stop);
	hc_wire_buf__reset(&c->buf);
	c->flushes++;
	c->flush_ns_last = (uint64_t)(clock_ns(CLOCK_MONOTONIC) - t0);
	if (c->flush_ns_last > c->flush_ns_max)
		c->flush_ns_max = c->flush_ns_last;
	if (err)
		c->send_errors++;
	/* Exited processes: their maps are no longer needed once this second is sent (its
	 * frames are resolved), every 10 s. */
	if (c->flushes % 10 == 0) {
		size_t dropped;

		if (!hc_symbolizer__prune_gone(c->sym, &dropped))
			c->procs_pruned += dropped;
		if (c->unw)
			hc_unwinder__prune(c->unw);
	}
	/* Each second frees its aggregator; hand the pages back instead of keeping the
	 * peak forever (measured: arena 36 MB for 13 MB in use without it). */
	malloc_trim(0);
	return err;
}

struct hc_collector *hc_collector__new(const struct hc_collector_opts *o, const char **why)
{
	struct hc_symbolizer_opts sopts = {
		.no_demangle = o->no_demangle, .no_inline = o->no_inline, .io = o->io};
	struct hc_sampler_opts popts = {0};
	struct hc_sampler_callbacks cb = {
		.sample = on_sample,
		.exec = on_exec,
		.offcpu = on_offcpu,
		.thist = on_thist,
		.waker = on_waker,
		.ustack = on_ustack,
		.lock = on_lock,
	};
	struct hc_collector *c = calloc(1, sizeof(*c));
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int err;

	*why = "out of memory";
	if (!c)
		return NULL;
	c->o = *o;
	c->sym = hc_symbolizer__new(&sopts);
	c->ft.frames = hc_stacktab__new();
	c->ft.fcache = calloc(FCACHE_SLOTS, sizeof(*c->ft.fcache));
	c->cells = hc_stacktab__new();
	c->idle_prev = calloc(ncpu > 0 ? (size_t)ncpu : 1, sizeof(*c->idle_prev));
	c->label_keys = hc_stacktab__new();
	if (!c->sym || !c->ft.frames || !c->ft.fcache || !c->cells || !c->idle_prev ||
	    !c->label_keys)
		goto err_free;
	if (o->locks) {
		c->lft.lock = true;
		c->lft.frames = hc_stacktab__new();
		c->lft.fcache = calloc(FCACHE_SLOTS, sizeof(*c->lft.fcache));
		if (!c->lft.frames || !c->lft.fcache)
			goto err_free;
	}
	if (!o->unwind_fp) {
		c->unw = hc_unwinder__new(c->sym);
		if (!c->unw)
			goto err_free;
	}
	c->agg = new_agg(c);
	if (!c->agg)
		goto err_free;

	cb.ctx = c;
	popts.period_ns = o->period_ns;
	popts.no_offcpu = o->no_offcpu;
	popts.min_block_ns = o->min_block_ns;
	popts.stack_budget = o->stack_budget;
	popts.no_stack_reuse = o->no_stack_reuse;
	popts.locks = o->locks;
	/* Drained every 100 ms: 2 MiB holds about a second at 999 Hz on two busy CPUs with
	 * off-CPU flushes (record sizes its buffer for whole captures; a full buffer's drops
	 * are counted). Its pages count twice in RSS (the kernel maps the data twice). */
	popts.ringbuf_bytes = 2u << 20;
	/* --unwind dwarf: and a quarter of a second of stack copies at the budget. */
	if (!o->unwind_fp) {
		popts.stack_copy_bytes = o->stack_copy_bytes;
		popts.stack_copy_budget = o->copy_budget;
		popts.ringbuf_bytes += o->copy_budget / 4;
	}
	c->sampler = hc_sampler__new(&popts, &cb);
	if (!c->sampler) {
		*why = hc_sampler__last_error();
		goto err_free;
	}
	/* Loading parsed the kernel's BTF (megabytes, freed now): give the pages back, this
	 * process runs for days. */
	malloc_trim(0);
	c->started_at_ns = clock_ns(CLOCK_REALTIME);
	c->now_s = c->started_at_ns / 1000000000ll;
	err = hc_sampler__start(c->sampler);
	if (err) {
		*why = "starting the scheduler tracepoints, task iterator or perf events";
		errno = -err;
		goto err_free;
	}
	return c;

err_free:
	err = errno;
	hc_collector__free(c);
	errno = err;
	return NULL;
}

void hc_collector__free(struct hc_collector *c)
{
	if (!c)
		return;
	/* BPF first: programs, links and perf events are released here. */
	hc_sampler__free(c->sampler);
	hc_agg__free(c->agg);
	hc_unwinder__free(c->unw);
	hc_symbolizer__free(c->sym);
	hc_stacktab__free(c->ft.frames);
	free(c->ft.fcache);
	hc_stacktab__free(c->lft.frames);
	free(c->lft.fcache);
	hc_stacktab__free(c->label_keys);
	for (size_t i = 0; i < c->n_labels; i++)
		free(c->labels[i]);
	free(c->labels);
	free(c->lcells);
	hc_stacktab__free(c->cells);
	free(c->idle_prev);
	hc_wire_buf__release(&c->buf);
	free(c);
}

int hc_collector__run(struct hc_collector *c, const volatile sig_atomic_t *stop, int stop_fd,
		      bool *peer_gone)
{
	int64_t last_flush_s = c->now_s;

	*peer_gone = false;
	c->stop = stop;
	/* Here, not in new(): sandboxed, the kallsyms descriptor comes from the broker, which
	 * answers only once run() is under way. Without it kernel frames stay [unknown]. */
	hc_symbolizer__load_kernel(c->sym);
	while (!*stop) {
		int err = hc_sampler__poll(c->sampler, 100);

		if (err < 0 && err != -EINTR)
			return err;
		if (stop_fd >= 0 && hc_stopline__asked(stop_fd))
			break;
		c->now_s = clock_ns(CLOCK_REALTIME) / 1000000000ll;
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
