// SPDX-License-Identifier: GPL-2.0-only
#include "capture/record_sink.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "capture/counters.h"
#include "profile/hist.h"

struct lock_kind {
	uint64_t count, total_ns, max_ns;
};

struct hc_record_sink {
	/* priority, runqueue_length, then the scheduler's: by enum hc_store_hist */
	struct hc_hist *hist[HC_STORE_H_MAX];
	struct lock_kind lkind[HC_LCB_MASK + 1][2]; /* [flags][blocked] */
	uint64_t *unclaimed_s;			    /* ns per second of the window */
	size_t n_unclaimed_s;
	struct hc_tree *tree, *lock_tree; /* the document's, while it is made */
};

struct hc_record_sink *hc_record_sink__new(void)
{
	struct hc_record_sink *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	rs->hist[HC_STORE_H_PRIORITY] = hc_hist__new_lquantize("prio", 0, 140, 10);
	rs->hist[HC_STORE_H_RUNQ_LENGTH] = hc_hist__new_lquantize("tasks", 0, 32, 1);
	rs->hist[HC_STORE_H_ONCPU_SLICE_US] = hc_hist__new_quantize("us");
	rs->hist[HC_STORE_H_OFFCPU_US] = hc_hist__new_quantize("us");
	rs->hist[HC_STORE_H_RUNQ_LATENCY_US] = hc_hist__new_quantize("us");
	rs->hist[HC_STORE_H_LOCK_WAIT_NS] = hc_hist__new_quantize("ns");
	for (int h = 0; h < HC_STORE_H_MAX; h++)
		if (!rs->hist[h]) {
			hc_record_sink__free(rs);
			errno = ENOMEM;
			return NULL;
		}
	return rs;
}

void hc_record_sink__free(struct hc_record_sink *rs)
{
	if (!rs)
		return;
	for (int h = 0; h < HC_STORE_H_MAX; h++)
		hc_hist__free(rs->hist[h]);
	free(rs->unclaimed_s);
	free(rs);
}

static int on_path(void *ctx, const struct hc_path_elem *path, size_t n, const struct hc_weights *w,
		   int64_t sec)
{
	struct hc_record_sink *rs = ctx;

	(void)sec;
	return rs->tree ? hc_tree__add_path(rs->tree, path, n, w) : 0;
}

static int on_lock_path(void *ctx, const struct hc_path_elem *path, size_t n,
			const struct hc_weights *w, int64_t sec)
{
	struct hc_record_sink *rs = ctx;

	(void)sec;
	return rs->lock_tree ? hc_tree__add_path(rs->lock_tree, path, n, w) : 0;
}

static int on_hist(void *ctx, const struct hc_capture_obs *o)
{
	struct hc_record_sink *rs = ctx;

	if ((unsigned int)o->hist >= HC_STORE_H_MAX)
		return -EINVAL;
	return hc_hist__add(rs->hist[o->hist], o->key, o->value, o->count);
}

static int on_lock(void *ctx, const struct hc_capture_lock *l)
{
	struct hc_record_sink *rs = ctx;
	struct lock_kind *lk = &rs->lkind[l->flags & HC_LCB_MASK][l->blocked];

	lk->count++;
	lk->total_ns += l->wait_ns;
	if (l->wait_ns > lk->max_ns)
		lk->max_ns = l->wait_ns;
	return hc_hist__add(rs->hist[HC_STORE_H_LOCK_WAIT_NS], l->series,
			    l->wait_ns > INT64_MAX ? INT64_MAX : (int64_t)l->wait_ns, 1);
}

static int on_unclaimed(void *ctx, uint64_t sec, uint64_t ns)
{
	struct hc_record_sink *rs = ctx;

	if (sec >= 1u << 20)
		return -EINVAL;
	if (sec >= rs->n_unclaimed_s) {
		uint64_t *a = realloc(rs->unclaimed_s, (sec + 1) * sizeof(*a));

		if (!a)
			return -ENOMEM;
		memset(a + rs->n_unclaimed_s, 0, (sec + 1 - rs->n_unclaimed_s) * sizeof(*a));
		rs->unclaimed_s = a;
		rs->n_unclaimed_s = sec + 1;
	}
	rs->unclaimed_s[sec] += ns;
	return 0;
}

struct hc_capture_sink hc_record_sink__sink(struct hc_record_sink *rs)
{
	return (struct hc_capture_sink){
		.path = on_path,
		.lock_path = on_lock_path,
		.hist = on_hist,
		.lock = on_lock,
		.unclaimed = on_unclaimed,
		.ctx = rs,
	};
}

const struct hc_hist *hc_record_sink__hist(const struct hc_record_sink *rs, enum hc_store_hist h)
{
	return (unsigned int)h < HC_STORE_H_MAX ? rs->hist[h] : NULL;
}

/* by_kind: [{kind, spin, count, total_ns, max_ns}], the most waited-for first. */
json_t *hc_record_sink__lock_kinds_json(const struct hc_record_sink *rs)
{
	struct {
		uint32_t f;
		int b;
	} order[(HC_LCB_MASK + 1) * 2];
	size_t n = 0;
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	for (uint32_t f = 0; f <= HC_LCB_MASK; f++)
		for (int b = 0; b < 2; b++)
			if (rs->lkind[f][b].count)
				order[n++] = (typeof(order[0])){f, b};
	for (size_t i = 1; i < n; i++) /* insertion sort: at most 128, usually a few */
		for (size_t j = i; j > 0; j--) {
			const struct lock_kind *x = &rs->lkind[order[j].f][order[j].b];
			const struct lock_kind *y = &rs->lkind[order[j - 1].f][order[j - 1].b];

			if (x->total_ns <= y->total_ns)
				break;
			typeof(order[0]) t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		const struct lock_kind *k = &rs->lkind[order[i].f][order[i].b];

		if (json_array_append_new(arr, json_pack("{s:s, s:b, s:I, s:I, s:I}", "kind",
							 hc_lock_kind_name(order[i].f), "spin",
							 !order[i].b, "count", (json_int_t)k->count,
							 "total_ns", (json_int_t)k->total_ns,
							 "max_ns", (json_int_t)k->max_ns))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* A section: the members doc already has, then family f's counters. Takes doc. */
static json_t *section(json_t *doc, const struct hc_counters *c, enum hc_counter_family f)
{
	if (doc && hc_counters__to_json(c, f, doc)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* The `scheduler` section: the off-CPU settings, the SCHEDULER counters, the cpuunclaimed
 * series. */
static json_t *scheduler_json(const struct hc_record_sink *rs, const struct hc_record_doc *d,
			      const struct hc_counters *c)
{
	double cpu_ns = (double)d->cnt->n_cpus * (double)d->duration_ns;
	json_t *ps = json_array(), *doc, *cu;

	for (size_t i = 0; ps && i < rs->n_unclaimed_s; i++)
		if (json_array_append_new(ps, json_integer((json_int_t)rs->unclaimed_s[i]))) {
			json_decref(ps);
			ps = NULL;
		}
	doc = section(json_pack("{s:b, s:I, s:I, s:b, s:b}", "offcpu", 1, "min_block_ns",
				(json_int_t)d->min_block_ns, "stack_budget_per_cpu_s",
				(json_int_t)(d->stack_budget ? d->stack_budget : 10000),
				"stack_reuse", !d->no_stack_reuse, "wakers", d->wakers),
		      c, HC_F_SCHEDULER);
	cu = json_object_get(doc, "cpu_unclaimed");
	if (!doc || !ps ||
	    json_object_set_new(
		    cu, "share",
		    json_real(cpu_ns > 0 ? (double)c->v[HC_C_SCHED_UNCLAIMED_NS] / cpu_ns : 0.0)) ||
	    json_object_set_new(cu, "per_second_ns", ps)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* The `sampling` section: per CPU, what was expected and what came. */
static int fill_sampling(struct hc_profile *p, const struct hc_record_doc *d)
{
	const struct hc_sampler_counts *cnt = d->cnt;
	struct utsname u;

	if (uname(&u) == 0) {
		p->host = strdup(u.nodename);
		p->kernel = strdup(u.release);
	}
	p->started_at_ns = d->started_at_ns;
	p->duration_ns = d->duration_ns;
	p->sampling.frequency_hz = d->frequency_hz;
	p->sampling.period_ns = d->period_ns;
	p->sampling.cpus = cnt->n_cpus;
	p->sampling.per_cpu = calloc(cnt->n_cpus, sizeof(*p->sampling.per_cpu));
	if (!p->sampling.per_cpu || !p->host || !p->kernel)
		return -ENOMEM;
	p->sampling.n_per_cpu = cnt->n_cpus;
	for (uint32_t i = 0; i < cnt->n_cpus; i++) {
		uint64_t expected = d->duration_ns / d->period_ns;

		p->sampling.per_cpu[i].cpu = cnt->cpus[i];
		p->sampling.per_cpu[i].expected = expected;
		p->sampling.per_cpu[i].samples = cnt->per_cpu[(size_t)i * HC_CNT_MAX + HC_CNT_SEEN];
		p->sampling.per_cpu[i].idle_ns = cnt->idle_ns ? cnt->idle_ns[i] : 0;
		p->sampling.expected_samples += expected;
	}
	p->sampling.samples = cnt->total[HC_CNT_SEEN];
	p->sampling.idle_samples = cnt->total[HC_CNT_IDLE];
	p->sampling.filtered_samples = cnt->total[HC_CNT_FILTERED];
	return 0;
}

/* `sampling.lost` and `symbolize`: their families of counters.def. */
static int fill_counts(struct hc_profile *p, const struct hc_counters *c)
{
	int err = 0;

	for (size_t i = 0; i < HC_C_MAX && !err; i++) {
		const struct hc_counter_def *def = &hc_counter_defs[i];

		if (def->family == HC_F_LOST)
			err = hc_profile__add_lost(p, def->key, c->v[i]);
		else if (def->family == HC_F_SYMBOLIZE)
			err = hc_profile__add_symbolize(p, def->key, c->v[i]);
	}
	return err;
}

/* Every counter of the families record shares with serve, from the capture's figures. */
static void gather(struct hc_capture *cap, const struct hc_record_doc *d, struct hc_counters *c,
		   struct hc_capture_stats *as)
{
	struct hc_capture_lock_stats ls;
	struct hc_symbolizer_stats ss;
	struct hc_unwind_stats us = {0};
	struct hc_uwpub_stats ps = {0};
	const struct hc_capture_figures f = {.cnt = d->cnt,
					     .as = as,
					     .ls = &ls,
					     .ss = &ss,
					     .us = &us,
					     .ps = &ps,
					     .table_mb = d->unwind_table ? d->unwind_table_mb : 0};
	bool copies = !d->unwind_fp && !d->unwind_table;

	hc_capture__stats(cap, as);
	hc_capture__lock_stats(cap, &ls);
	hc_symbolizer__stats(d->sym, &ss);
	if (d->unw)
		hc_unwinder__stats(d->unw, &us);
	if (d->pub)
		hc_uwpub__stats(d->pub, &ps);
	memset(c, 0, sizeof(*c));
	hc_counters__fill_capture(c, &f);
	c->v[HC_C_UNW_STACK_COPY_BYTES] = copies ? d->stack_copy_bytes : 0;
	c->v[HC_C_UNW_COPY_BUDGET] = copies ? d->copy_budget : 0;
}

/* Every part of the document but the trees, read after them: building the trees symbolizes,
 * and the symbolize counters (unresolved frames...) count that too. */
static int fill_sections(struct hc_record_sink *rs, struct hc_capture *cap, struct hc_profile *p,
			 const struct hc_record_doc *d)
{
	const struct hc_sampler_counts *cnt = d->cnt;
	struct hc_capture_stats as;
	struct hc_counters c;
	int err;

	gather(cap, d, &c, &as);
	err = fill_sampling(p, d);
	if (!err)
		err = fill_counts(p, &c);
	if (err)
		return err;
	if (cnt->offcpu) {
		p->totals.off_cpu_ns = as.off_ns;
		p->totals.runqueue_ns = as.runqueue_ns;
		p->totals.idle_ns = cnt->idle_total_ns;
		p->totals.cpu_unclaimed_ns = as.unclaimed_ns;
		p->scheduler = scheduler_json(rs, d, &c);
		if (!p->scheduler)
			return -ENOMEM;
	}
	if (d->locks) {
		p->locks =
			section(json_pack("{s:o}", "by_kind", hc_record_sink__lock_kinds_json(rs)),
				&c, HC_F_LOCKS);
		if (!p->locks)
			return -ENOMEM;
		hc_tree__sort(p->lock_tree);
	}
	p->unwind = section(json_pack("{s:s}", "mode",
				      d->unwind_fp	? "fp"
				      : d->unwind_table ? "table"
							: "copy"),
			    &c, HC_F_UNWIND);
	if (!p->unwind)
		return -ENOMEM;
	p->totals.on_cpu_ns = as.samples * d->period_ns;
	p->totals.kernel_samples = as.kernel_samples;
	p->totals.user_samples = as.user_samples;
	return 0;
}

/* The `histograms` section: what was observed over the whole window. */
static int fill_histograms(struct hc_record_sink *rs, struct hc_profile *p,
			   const struct hc_record_doc *d)
{
	static const struct {
		enum hc_store_hist h;
		const char *name;
	} order[] = {
		{HC_STORE_H_PRIORITY, "priority"},
		{HC_STORE_H_RUNQ_LENGTH, "runqueue_length"},
		{HC_STORE_H_ONCPU_SLICE_US, "oncpu_slice_us"},
		{HC_STORE_H_OFFCPU_US, "offcpu_us"},
		{HC_STORE_H_RUNQ_LATENCY_US, "runqueue_latency_us"},
		{HC_STORE_H_LOCK_WAIT_NS, "lock_wait_ns"},
	};

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		enum hc_store_hist h = order[i].h;
		json_t *j;

		/* the scheduler's with off-CPU tracking only, lock_wait_ns with --locks */
		if ((h >= HC_STORE_H_ONCPU_SLICE_US && h < HC_STORE_H_SCHED_MAX &&
		     !d->cnt->offcpu) ||
		    (h == HC_STORE_H_LOCK_WAIT_NS && !d->locks))
			continue;
		j = hc_hist__to_json(rs->hist[h]);
		if (!j || json_object_set_new(p->histograms, order[i].name, j))
			return -ENOMEM;
	}
	return 0;
}

int hc_record_sink__trees(struct hc_record_sink *rs, struct hc_capture *cap, struct hc_tree *tree,
			  struct hc_tree *lock_tree)
{
	int err;

	rs->tree = tree;
	rs->lock_tree = lock_tree;
	err = hc_capture__flush(cap);
	rs->tree = rs->lock_tree = NULL;
	return err;
}

int hc_record_sink__document(struct hc_record_sink *rs, struct hc_capture *cap,
			     struct hc_profile *p, const struct hc_record_doc *d)
{
	const struct hc_sampler_counts *cnt = d->cnt;
	int err;

	if (d->locks) {
		p->lock_tree = hc_tree__new();
		if (!p->lock_tree)
			return -ENOMEM;
	}
	err = hc_record_sink__trees(rs, cap, p->tree, p->lock_tree);
	if (!err)
		err = fill_sections(rs, cap, p, d);
	if (err)
		return err;
	for (uint32_t i = 0; i < cnt->n_cpus; i++)
		hc_capture__idle_samples(cap, 0, cnt->cpus[i],
					 cnt->per_cpu[(size_t)i * HC_CNT_MAX + HC_CNT_IDLE]);
	err = fill_histograms(rs, p, d);
	if (!err)
		hc_tree__sort(p->tree);
	return err;
}
