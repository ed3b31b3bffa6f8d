// SPDX-License-Identifier: GPL-2.0-only
#include "serve/backend.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "base/time.h"
#include "serve/push.h"
#include "serve/self.h"
#include "serve/wire.h"
#include "profile/profile.h"
#include "profile/encode.h"
#include "store/disk.h"

#define NS 1000000000ll
#define MAX_HEAT_COLUMNS 86400

struct hc_backend {
	pthread_rwlock_t lock;
	struct hc_store *store;
	struct hc_store *lstore; /* --locks: the waiters' paths, kind counters, lock_wait_ns */
	struct hc_store_opts sopts;
	size_t lopts_max_bytes; /* the lock store's cap (0: none) */
	struct hc_wire_reader rd;
	struct hc_wire_status st; /* the collector's last STATUS */
	bool have_status;
	char host[65], kernel[65];
	const char *version;
	int64_t started_ns;
	uint64_t store_errors;	    /* records the store refused (out of memory, bad ids) */
	uint64_t lock_store_errors; /* of them, records for the lock store */
	uint32_t frames;	    /* frames defined */
	struct hc_push *push;	    /* borrowed; NULL without --push */
	int64_t sealed_s;	/* newest second the collector sealed (all its samples are in) */
	int64_t pushed_until_s; /* seconds before this were handed to the push client */
	uint64_t push_late_ns;	/* time added to them afterwards: never pushed (docs/fleet.md) */
	/* --data-dir: every record is written to disk too (store/disk.h); the collector's frame
	 * ids map to the disk dictionary's, one map per store */
	struct hc_disk *disk;
	uint64_t max_disk_bytes, disk_retention_s;
	uint32_t *dmap[2];
	size_t dmap_cap[2];
	uint64_t disk_errors;
};

struct hc_backend *hc_backend__new(const struct hc_backend_opts *o)
{
	struct hc_backend *b = calloc(1, sizeof(*b));
	pthread_rwlockattr_t la;
	struct utsname u;
	int err;

	if (!b)
		return NULL;
	b->sopts = o->store;
	b->store = hc_store__new(&o->store);
	if (!b->store)
		goto err_free;
	if (o->locks) {
		b->lopts_max_bytes = o->lock_store.max_bytes;
		b->lstore = hc_store__new(&o->lock_store);
		if (!b->lstore)
			goto err_free_store;
	}
	/* glibc's default prefers readers: overlapping queries could starve the ingest, and a
	 * full socket then stalls the collector. */
	pthread_rwlockattr_init(&la);
	pthread_rwlockattr_setkind_np(&la, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	err = pthread_rwlock_init(&b->lock, &la);
	pthread_rwlockattr_destroy(&la);
	if (err)
		goto err_free_store;
	if (uname(&u) == 0) {
		snprintf(b->host, sizeof(b->host), "%s", u.nodename);
		snprintf(b->kernel, sizeof(b->kernel), "%s", u.release);
	}
	b->version = o->version ? o->version : "unknown";
	b->started_ns = hc_clock_ns(CLOCK_REALTIME);
	b->disk = o->disk;
	b->max_disk_bytes = o->max_disk_bytes;
	b->disk_retention_s = o->disk_retention_s;
	return b;

err_free_store:
	hc_store__free(b->lstore);
	hc_store__free(b->store);
err_free:
	free(b);
	errno = ENOMEM;
	return NULL;
}

void hc_backend__free(struct hc_backend *b)
{
	if (!b)
		return;
	pthread_rwlock_destroy(&b->lock);
	hc_disk__close(b->disk);
	free(b->dmap[0]);
	free(b->dmap[1]);
	hc_store__free(b->store);
	hc_store__free(b->lstore);
	hc_wire_reader__release(&b->rd);
	free(b);
}

/* The lock store's records: refused (-EINVAL) when serve runs without --locks. */
static int apply_lock(struct hc_backend *b, const struct hc_wire_rec *r)
{
	if (!b->lstore)
		return -EINVAL;
	switch (r->type) {
	case HC_WIRE_LOCK_FRAME:
		return hc_store__define_frame(b->lstore, r->fid, &r->elem);
	case HC_WIRE_LOCK_ADD:
		return hc_store__add(b->lstore, r->sec, r->fids, r->n, &r->w);
	case HC_WIRE_LOCK_RESET:
		hc_store__reset_frames(b->lstore);
		return 0;
	case HC_WIRE_COUNTER:
		if (r->counter >= HC_STORE_C_MAX)
			return -EINVAL;
		return hc_store__add_counter(b->lstore, r->sec, (enum hc_store_counter)r->counter,
					     r->key, r->count);
	case HC_WIRE_HIST:
		return hc_store__add_hist(b->lstore, r->sec, HC_STORE_H_LOCK_WAIT_NS, r->pid,
					  r->key, r->value, r->count);
	default:
		return -EINVAL;
	}
}

/* ---- the disk mirror ---- */

static int disk_frame(struct hc_backend *b, int s, uint32_t fid, const struct hc_path_elem *e)
{
	int64_t id;

	if (fid >= b->dmap_cap[s]) {
		size_t cap = b->dmap_cap[s] ? b->dmap_cap[s] : 1024;
		uint32_t *m;

		while (cap <= fid)
			cap *= 2;
		m = realloc(b->dmap[s], cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		memset(m + b->dmap_cap[s], 0, (cap - b->dmap_cap[s]) * sizeof(*m));
		b->dmap[s] = m;
		b->dmap_cap[s] = cap;
	}
	id = hc_disk__frame(b->disk, e);
	if (id < 0)
		return (int)id;
	b->dmap[s][fid] = (uint32_t)id;
	return 0;
}

/* A path of collector frame ids as (task, stack) of the disk dictionary. */
static int disk_add(struct hc_backend *b, int s, const struct hc_wire_rec *r)
{
	const uint32_t *m = b->dmap[s];
	struct hc_path_elem p, t;
	int64_t task, stack = 0;

	if (r->n < 2)
		return -EINVAL;
	for (size_t i = 0; i < r->n; i++)
		if (r->fids[i] >= b->dmap_cap[s] || !m[r->fids[i]])
			return -EINVAL;
	if (hc_disk__elem(b->disk, m[r->fids[0]], &p) || hc_disk__elem(b->disk, m[r->fids[1]], &t))
		return -EINVAL;
	task = hc_disk__task(b->disk, &p, &t);
	for (size_t i = 2; task > 0 && stack >= 0 && i < r->n; i++)
		stack = hc_disk__stack(b->disk, (uint32_t)stack, m[r->fids[i]]);
	if (task < 0 || stack < 0)
		return (int)(task < 0 ? task : stack);
	return hc_disk__add(b->disk, s, r->sec, (uint32_t)task, (uint32_t)stack, &r->w);
}

static int disk_apply(struct hc_backend *b, const struct hc_wire_rec *r)
{
	int err = 0;

	switch (r->type) {
	case HC_WIRE_FRAME:
	case HC_WIRE_LOCK_FRAME:
		return disk_frame(b, r->type == HC_WIRE_LOCK_FRAME, r->fid, &r->elem);
	case HC_WIRE_ADD:
	case HC_WIRE_LOCK_ADD:
		return disk_add(b, r->type == HC_WIRE_LOCK_ADD, r);
	case HC_WIRE_RESET:
	case HC_WIRE_LOCK_RESET: {
		int s = r->type == HC_WIRE_LOCK_RESET;

		if (b->dmap[s])
			memset(b->dmap[s], 0, b->dmap_cap[s] * sizeof(*b->dmap[s]));
		return 0;
	}
	case HC_WIRE_HEAT:
		for (unsigned int i = 0; i < HC_WIRE_HEAT_ROWS && !err; i++)
			if (r->rows[i])
				err = hc_disk__add_heat(b->disk, r->sec,
							i * HC_STORE_HEAT_ROWS / HC_WIRE_HEAT_ROWS,
							r->rows[i]);
		return err;
	case HC_WIRE_HIST:
		if (r->hist >= HC_STORE_H_MAX)
			return -EINVAL;
		return hc_disk__add_hist(
			b->disk, r->hist == HC_STORE_H_LOCK_WAIT_NS ? HC_DISK_LOCKS : HC_DISK_MAIN,
			r->sec, (enum hc_store_hist)r->hist, r->pid, r->key, r->value, r->count);
	case HC_WIRE_COUNTER:
		if (r->counter >= HC_STORE_C_MAX)
			return -EINVAL;
		return hc_disk__add_counter(b->disk, HC_DISK_LOCKS, r->sec,
					    (enum hc_store_counter)r->counter, r->key, r->count);
	case HC_WIRE_SEAL:
		return hc_disk__seal(b->disk, r->sec);
	default:
		return 0;
	}
}

static int apply(struct hc_backend *b, const struct hc_wire_rec *r)
{
	int err;

	switch (r->type) {
	case HC_WIRE_FRAME:
		return hc_store__define_frame(b->store, r->fid, &r->elem);
	case HC_WIRE_ADD:
		/* Off-CPU time is spread back over the seconds a block covered when it ends:
		 * what lands in a second already pushed is counted, not silently missing. */
		if (r->sec < b->pushed_until_s)
			b->push_late_ns += hc_weights__value(&r->w);
		return hc_store__add(b->store, r->sec, r->fids, r->n, &r->w);
	case HC_WIRE_HEAT:
		for (unsigned int i = 0; i < HC_WIRE_HEAT_ROWS; i++)
			if (r->rows[i]) {
				err = hc_store__add_heat(b->store, r->sec,
							 i * HC_STORE_HEAT_ROWS / HC_WIRE_HEAT_ROWS,
							 r->rows[i]);
				if (err)
					return err;
			}
		return 0;
	case HC_WIRE_HIST:
		if (r->hist >= HC_STORE_H_MAX)
			return -EINVAL;
		if (r->hist == HC_STORE_H_LOCK_WAIT_NS)
			goto lock;
		return hc_store__add_hist(b->store, r->sec, (enum hc_store_hist)r->hist, r->pid,
					  r->key, r->value, r->count);
	case HC_WIRE_SEAL:
		if (r->sec > b->sealed_s)
			b->sealed_s = r->sec;
		if (b->lstore && hc_store__seal(b->lstore, r->sec))
			b->lock_store_errors++;
		return hc_store__seal(b->store, r->sec);
	case HC_WIRE_RESET:
		hc_store__reset_frames(b->store);
		return 0;
	case HC_WIRE_STATUS:
		b->st = r->status;
		b->have_status = true;
		return 0;
	case HC_WIRE_LOCK_FRAME:
	case HC_WIRE_LOCK_ADD:
	case HC_WIRE_LOCK_RESET:
	case HC_WIRE_COUNTER:
		goto lock;
	}
	return -EINVAL;
lock:
	err = apply_lock(b, r);
	if (err)
		b->lock_store_errors++;
	return err;
}

int hc_backend__ingest(struct hc_backend *b, int fd)
{
	struct hc_wire_rec *rec;
	ssize_t n = hc_wire_reader__fill(&b->rd, fd);
	int rc;

	if (n <= 0)
		return n == -EINTR || n == -EAGAIN ? 1 : (int)n;
	rec = malloc(sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	pthread_rwlock_wrlock(&b->lock);
	while ((rc = hc_wire_reader__next(&b->rd, rec)) == 1) {
		if (b->disk && disk_apply(b, rec))
			b->disk_errors++;
		if (apply(b, rec))
			b->store_errors++;
	}
	pthread_rwlock_unlock(&b->lock);
	free(rec);
	return rc < 0 ? rc : 1;
}

/* ---- helpers ---- */

static void fail(int *status, int code, char *why, size_t len, const char *msg)
{
	*status = code;
	snprintf(why, len, "%s", msg);
}

static json_t *rfc3339(int64_t ns)
{
	return hc_json__rfc3339_ms(ns);
}

/* Where a range is answered from: the memory store, or a tier of the disk store. */
struct src {
	bool disk;
	struct hc_disk_range r;
	uint64_t fold_ns_per_s; /* the disk's coarse windows' [small stacks] threshold */
};

/* The memory store holds [from_s, ...) at 1 s resolution. */
static bool memory_covers(const struct hc_store_stats *st, int64_t from_s)
{
	return (st->oldest_s || st->newest_s) && from_s >= st->fine_from_s;
}

/*
 * The query's seconds, clipped to the data held, and where they come from: the memory store
 * when it holds the whole range at 1 s, else the finest disk tier that covers it. false + 503
 * when there is no data at all.
 */
static bool range_of(struct hc_backend *b, const struct hc_api_query *q, struct hc_store_filter *f,
		     struct src *src, int *status, char *why, size_t wl)
{
	struct hc_store_stats st;
	struct hc_disk_stats ds = {0};
	bool mem;

	hc_store__stats(b->store, &st);
	if (b->disk)
		hc_disk__stats(b->disk, &ds);
	mem = st.oldest_s || st.newest_s;
	if (!mem && !ds.newest_s) {
		fail(status, 503, why, wl, "no data yet: the first second is still being sampled");
		return false;
	}
	memset(f, 0, sizeof(*f));
	memset(src, 0, sizeof(*src));
	if (q->last_ns) { /* Go's ?seconds=N: the newest N seconds held, complete ones */
		f->to_s = (b->sealed_s ? b->sealed_s : mem ? st.newest_s : ds.newest_s) + 1;
		f->from_s = f->to_s - (int64_t)(q->last_ns / NS);
	} else {
		f->from_s = q->from_ns >= 0 ? q->from_ns / NS : -((-q->from_ns + NS - 1) / NS);
		f->to_s = q->to_ns / NS + (q->to_ns > 0 && q->to_ns % NS != 0); /* no overflow */
	}
	/* Disk when memory does not hold the start and the disk holds something older than
	 * memory (after a restart, or past --max-store); a range reaching before everything held
	 * is clipped by memory as before. */
	if (b->disk && !memory_covers(&st, f->from_s) &&
	    (!mem || (ds.newest_s && ds.oldest_s < st.fine_from_s)) &&
	    !hc_disk__pick(b->disk, f->from_s, f->to_s, &src->r)) {
		src->disk = true;
		src->fold_ns_per_s = ds.fold_ns_per_s;
		f->from_s = src->r.from_s;
		f->to_s = src->r.to_s;
	} else if (!mem) {
		fail(status, 503, why, wl, "no data yet: the first second is still being sampled");
		return false;
	} else {
		if (f->from_s < st.oldest_s)
			f->from_s = st.oldest_s;
		if (f->to_s > st.newest_s + 1)
			f->to_s = st.newest_s + 1;
		if (f->to_s <= f->from_s) { /* outside what is held: an empty range at its edge */
			f->from_s = f->to_s =
				q->to_ns / NS < st.oldest_s ? st.oldest_s : st.newest_s + 1;
		}
	}
	f->has_pid = q->has_pid;
	f->pid = q->pid;
	f->has_tid = q->has_tid;
	f->tid = q->tid;
	f->comm = q->comm;
	f->on = q->kind != HC_API_KIND_OFF;
	f->off = f->runqueue = q->kind != HC_API_KIND_ON;
	f->max_nodes = q->max_nodes;
	return true;
}

/* The range's resolution and source, into a range object: resolution_s, source, tier (and
 * from disk, small_stacks_below_ns_per_s). */
static int range_source(json_t *range, const struct src *src)
{
	if (!range)
		return -ENOMEM;
	if (src->disk && json_object_set_new(range, "small_stacks_below_ns_per_s",
					     json_integer((json_int_t)src->fold_ns_per_s)))
		return -ENOMEM;
	return json_object_set_new(range, "resolution_s",
				   json_integer(src->disk ? hc_disk__tier_step(src->r.tier) : 1)) ||
			       json_object_set_new(range, "source",
						   json_string(src->disk ? "disk" : "memory")) ||
			       json_object_set_new(
				       range, "tier",
				       json_string(src->disk ? hc_disk__tier_name(src->r.tier)
							     : "1s"))
		       ? -ENOMEM
		       : 0;
}

static const char *kind_name(enum hc_api_kind k)
{
	return k == HC_API_KIND_ON ? "on" : k == HC_API_KIND_OFF ? "off" : "all";
}

/* ---- /api/profile ---- */

static int fill_sampling(struct hc_backend *b, struct hc_profile *p)
{
	int err = 0;

	p->sampling.frequency_hz = b->st.frequency_hz;
	p->sampling.period_ns = b->st.period_ns;
	p->sampling.cpus = b->st.cpus;
	if (p->sampling.period_ns)
		p->sampling.expected_samples =
			p->sampling.cpus * (p->duration_ns / p->sampling.period_ns);
	for (size_t i = 0; i < HC_C_MAX && !err; i++)
		if (hc_counter_defs[i].family == HC_F_LOST)
			err = hc_profile__add_lost(p, hc_counter_defs[i].key, b->st.c.v[i]);
	return err;
}

static unsigned int kind_weights(enum hc_api_kind k)
{
	return k == HC_API_KIND_ON    ? HC_W_ON
	       : k == HC_API_KIND_OFF ? HC_W_OFF | HC_W_RUNQ
				      : HC_W_ALL;
}

/* The range's profile, encoded as q->format: malloc'd, *len bytes. NULL + status/why. */
static char *encode_profile(struct hc_backend *b, const struct hc_api_query *q,
			    unsigned int weights, size_t *len, int *status, char *why, size_t wl,
			    struct hc_store_filter *f_out)
{
	struct hc_store_pruned pruned = {0};
	struct hc_disk_view *view = NULL;
	struct hc_store_filter f;
	struct src src;
	struct hc_profile *p = hc_profile__new();
	const struct hc_weights *w;
	char *buf = NULL;
	FILE *mem;
	int err = 0;

	if (!p) {
		fail(status, 500, why, wl, "out of memory");
		return NULL;
	}
	pthread_rwlock_rdlock(&b->lock);
	if (!range_of(b, q, &f, &src, status, why, wl)) {
		pthread_rwlock_unlock(&b->lock);
		hc_profile__free(p);
		return NULL;
	}
	/* The weights exported decide what the tree holds, whoever asked (kind= or --push-kind). */
	f.on = weights & HC_W_ON;
	f.off = weights & HC_W_OFF;
	f.runqueue = weights & HC_W_RUNQ;
	if (f_out)
		*f_out = f;
	/* The disk has locks of its own: ingest goes on while a long range is read. */
	if (src.disk)
		pthread_rwlock_unlock(&b->lock);
	/* the range read once for the tree and the scheduler's histograms */
	if (src.disk && !(view = hc_disk__view(b->disk, HC_DISK_MAIN, &src.r, &f, true, true)))
		err = -errno;
	if (!err)
		err = view ? hc_disk_view__tree(view, p->tree, &pruned)
			   : hc_store__tree(b->store, &f, p->tree, &pruned);
	/* the scheduler's five, and with --locks lock_wait_ns (record's histograms) */
	for (int h = 0; h < HC_STORE_H_MAX && !err; h++) {
		bool lock = h == HC_STORE_H_LOCK_WAIT_NS;
		struct hc_hist *hist;
		json_t *j;

		if (lock && !b->lstore)
			continue;
		if (src.disk && lock)
			hist = hc_disk__hist(b->disk, HC_DISK_LOCKS, &src.r, (enum hc_store_hist)h,
					     &f);
		else if (src.disk)
			hist = hc_disk_view__hist(view, (enum hc_store_hist)h);
		else
			hist = hc_store__hist(lock ? b->lstore : b->store, (enum hc_store_hist)h,
					      &f);
		j = hist ? hc_hist__to_json(hist) : NULL;

		hc_hist__free(hist);
		if (!j || json_object_set_new(p->histograms, hc_store_hist__name(h), j))
			err = -ENOMEM;
	}
	hc_disk_view__free(view);
	if (src.disk)
		pthread_rwlock_rdlock(&b->lock);
	p->started_at_ns = f.from_s * NS;
	p->duration_ns = (uint64_t)(f.to_s - f.from_s) * NS;
	if (!err)
		err = fill_sampling(b, p);
	pthread_rwlock_unlock(&b->lock);
	if (err)
		goto err_free;

	p->host = strdup(b->host);
	p->kernel = strdup(b->kernel);
	w = hc_node__weights(hc_tree__root(p->tree));
	p->sampling.samples = w->samples;
	p->totals.on_cpu_ns = w->on_cpu_ns;
	p->totals.off_cpu_ns = w->off_cpu_ns;
	p->totals.runqueue_ns = w->runqueue_ns;
	p->range = json_pack("{s:o, s:o, s:I, s:I, s:{s:o?, s:o?, s:s?, s:s}, s:{s:I, s:I, s:I}}",
			     "from", rfc3339(f.from_s * NS), "to", rfc3339(f.to_s * NS), "from_ms",
			     (json_int_t)(f.from_s * 1000), "to_ms", (json_int_t)(f.to_s * 1000),
			     "filter", "pid", q->has_pid ? json_integer(q->pid) : NULL, "tid",
			     q->has_tid ? json_integer(q->tid) : NULL, "comm", q->comm, "kind",
			     kind_name(q->kind), "pruned", "max_nodes", (json_int_t)q->max_nodes,
			     "nodes", (json_int_t)pruned.nodes, "value_ns",
			     (json_int_t)pruned.value_ns);
	if (!p->host || !p->kernel || range_source(p->range, &src))
		goto err_free;
	hc_tree__sort(p->tree);
	mem = open_memstream(&buf, len);
	if (!mem)
		goto err_free;
	switch (q->format) {
	case HC_API_FORMAT_FOLDED:
		err = hc_profile__write_folded(p, weights, mem);
		break;
	case HC_API_FORMAT_PPROF:
		err = hc_profile__write_pprof(p, weights, mem);
		break;
	default:
		err = hc_profile__write_json(p, mem);
		break;
	}
	if (fclose(mem) || err) {
		free(buf);
		goto err_free;
	}
	hc_profile__free(p);
	return buf;

err_free:
	hc_profile__free(p);
	fail(status, 500, why, wl, "building the profile failed (out of memory)");
	return NULL;
}

static char *api_profile(void *ctx, const struct hc_api_query *q, size_t *len, int *status,
			 char *why, size_t wl)
{
	return encode_profile(ctx, q, kind_weights(q->kind), len, status, why, wl, NULL);
}

int hc_backend__pprof(struct hc_backend *b, int64_t from_ns, int64_t *to_ns, unsigned int weights,
		      char **buf, size_t *len)
{
	struct hc_api_query q = {
		.from_ns = from_ns,
		.to_ns = *to_ns,
		.format = HC_API_FORMAT_PPROF,
	};
	struct hc_store_filter f;
	struct hc_store_stats st;
	int status = 0;
	int64_t end_s;
	char why[128];

	/* Only sealed seconds, and only those HC_PUSH_LAG_S behind the newest: blocks that end
	 * within that time are in them whole (later additions are counted as push_late_ns). */
	pthread_rwlock_rdlock(&b->lock);
	hc_store__stats(b->store, &st);
	end_s = *to_ns / NS;
	if (end_s > b->sealed_s + 1 - HC_PUSH_LAG_S)
		end_s = b->sealed_s + 1 - HC_PUSH_LAG_S;
	pthread_rwlock_unlock(&b->lock);
	if (!st.newest_s || !b->sealed_s || end_s <= from_ns / NS)
		return -ENODATA;
	q.to_ns = end_s * NS;
	*buf = encode_profile(b, &q, weights, len, &status, why, sizeof(why), &f);
	if (!*buf)
		return status == 503 ? -ENODATA : -ENOMEM;
	/* What the store held: from may have been clipped up to its oldest second (older
	 * seconds are gone for good), the end down to its newest. Nothing new: no push. */
	if (f.to_s <= from_ns / NS || f.to_s == f.from_s) {
		free(*buf);
		*buf = NULL;
		return -ENODATA;
	}
	*to_ns = f.to_s * NS;
	pthread_rwlock_wrlock(&b->lock);
	if (f.to_s > b->pushed_until_s)
		b->pushed_until_s = f.to_s;
	pthread_rwlock_unlock(&b->lock);
	return 0;
}

/* ---- /api/histograms ---- */

/* Without --locks there is no lock_wait_ns: asked for, it is a 409 (lock tracking is off). */
#define LOCKS_OFF_STATUS 409
#define LOCKS_OFF_WHY "lock tracking is off: start hotcold serve with --locks (docs/locks.md)"

static json_t *api_histogram_names(void *ctx, int *status, char *why, size_t wl)
{
	struct hc_backend *b = ctx;
	json_t *names = json_array();

	for (int h = 0; h < HC_STORE_H_MAX && names; h++)
		if ((h != HC_STORE_H_LOCK_WAIT_NS || b->lstore) &&
		    json_array_append_new(names, json_string(hc_store_hist__name(h)))) {
			json_decref(names);
			names = NULL;
		}
	if (!names) {
		fail(status, 500, why, wl, "out of memory");
		return NULL;
	}
	return json_pack("{s:o}", "histograms", names);
}

static json_t *api_histogram(void *ctx, const char *name, const struct hc_api_query *q, int *status,
			     char *why, size_t wl)
{
	struct hc_backend *b = ctx;
	int h = hc_store_hist__by_name(name);
	struct hc_store_filter f;
	struct src src;
	struct hc_hist *hist;
	json_t *j, *range;

	if (h < 0) {
		*status = 404;
		snprintf(why, wl, "no histogram named '%s' (GET /api/histograms lists them)", name);
		return NULL;
	}
	if (h == HC_STORE_H_LOCK_WAIT_NS && !b->lstore) {
		fail(status, LOCKS_OFF_STATUS, why, wl, LOCKS_OFF_WHY);
		return NULL;
	}
	pthread_rwlock_rdlock(&b->lock);
	if (!range_of(b, q, &f, &src, status, why, wl)) {
		pthread_rwlock_unlock(&b->lock);
		return NULL;
	}
	if (src.disk) {
		pthread_rwlock_unlock(&b->lock);
		hist = hc_disk__hist(b->disk,
				     h == HC_STORE_H_LOCK_WAIT_NS ? HC_DISK_LOCKS : HC_DISK_MAIN,
				     &src.r, (enum hc_store_hist)h, &f);
	} else {
		hist = hc_store__hist(h == HC_STORE_H_LOCK_WAIT_NS ? b->lstore : b->store,
				      (enum hc_store_hist)h, &f);
		pthread_rwlock_unlock(&b->lock);
	}
	j = hist ? hc_hist__to_json(hist) : NULL;
	hc_hist__free(hist);
	range = json_pack("{s:o, s:o, s:I, s:I}", "from", rfc3339(f.from_s * NS), "to",
			  rfc3339(f.to_s * NS), "from_ms", (json_int_t)(f.from_s * 1000), "to_ms",
			  (json_int_t)(f.to_s * 1000));
	if (!j || range_source(range, &src)) {
		json_decref(range);
		range = NULL;
	}
	if (!range || json_object_set_new(j, "range", range)) {
		json_decref(j);
		j = NULL;
		fail(status, 500, why, wl, "building the histogram failed (out of memory)");
	}
	return j;
}

/* ---- /api/locks ---- */

/* The lock kinds' counters of a range, one row per "KIND spin" / "KIND block" key. */
struct kind_row {
	char *key;
	uint64_t v[HC_STORE_C_MAX];
};

struct kind_acc {
	struct kind_row *rows;
	size_t n, cap;
	int c; /* the counter being read */
};

static int kind_cb(void *ctx, const char *key, uint64_t value)
{
	struct kind_acc *a = ctx;
	size_t i;

	for (i = 0; i < a->n && strcmp(a->rows[i].key, key); i++)
		;
	if (i == a->n) {
		if (a->n == a->cap && hc_array_grow(a->rows, a->cap, a->n + 1, 16))
			return -ENOMEM;
		a->rows[i] = (struct kind_row){.key = strdup(key)};
		if (!a->rows[i].key)
			return -ENOMEM;
		a->n++;
	}
	a->rows[i].v[a->c] = value;
	return 0;
}

/* The most waited-for first, as record's by_kind; then by count, then by name. */
static int kind_row_cmp(const void *x, const void *y)
{
	const struct kind_row *a = x, *b = y;

	if (a->v[HC_STORE_C_LOCK_WAIT_NS] != b->v[HC_STORE_C_LOCK_WAIT_NS])
		return a->v[HC_STORE_C_LOCK_WAIT_NS] > b->v[HC_STORE_C_LOCK_WAIT_NS] ? -1 : 1;
	if (a->v[HC_STORE_C_LOCK_COUNT] != b->v[HC_STORE_C_LOCK_COUNT])
		return a->v[HC_STORE_C_LOCK_COUNT] > b->v[HC_STORE_C_LOCK_COUNT] ? -1 : 1;
	return strcmp(a->key, b->key);
}

/* by_kind [{kind, spin, count, total_ns, max_ns}] and the totals into doc. 0, -ENOMEM. */
static int locks_by_kind(struct kind_acc *a, json_t *doc)
{
	uint64_t sum[HC_STORE_C_MAX] = {0};
	json_t *by = json_array();

	if (!by)
		return -ENOMEM;
	if (a->n > 1)
		qsort(a->rows, a->n, sizeof(*a->rows), kind_row_cmp);
	for (size_t i = 0; i < a->n; i++) {
		const struct kind_row *r = &a->rows[i];
		const char *sp = strrchr(r->key, ' '); /* the collector's "KIND spin|block" */
		size_t klen = sp ? (size_t)(sp - r->key) : strlen(r->key);

		for (int c = 0; c < HC_STORE_C_MAX; c++)
			sum[c] += r->v[c];
		if (!r->v[HC_STORE_C_LOCK_COUNT])
			continue;
		if (json_array_append_new(
			    by, json_pack("{s:s%, s:b, s:I, s:I, s:I}", "kind", r->key, klen,
					  "spin", sp && !strcmp(sp + 1, "spin"), "count",
					  (json_int_t)r->v[HC_STORE_C_LOCK_COUNT], "total_ns",
					  (json_int_t)r->v[HC_STORE_C_LOCK_WAIT_NS], "max_ns",
					  (json_int_t)r->v[HC_STORE_C_LOCK_MAX_NS]))) {
			json_decref(by);
			return -ENOMEM;
		}
	}
	if (json_object_set_new(doc, "events",
				json_integer((json_int_t)sum[HC_STORE_C_LOCK_COUNT])) ||
	    json_object_set_new(doc, "wait_ns",
				json_integer((json_int_t)sum[HC_STORE_C_LOCK_WAIT_NS])) ||
	    json_object_set_new(doc, "failed",
				json_integer((json_int_t)sum[HC_STORE_C_LOCK_FAILED])) ||
	    json_object_set_new(doc, "no_stack",
				json_integer((json_int_t)sum[HC_STORE_C_LOCK_NO_STACK])) ||
	    json_object_set_new(doc, "by_kind", by))
		return -ENOMEM;
	return 0;
}

/* dropped: the collector's counts since serve started (record's reasons), and the lock
 * store's own losses. */
static json_t *locks_dropped(struct hc_backend *b)
{
	json_t *l = json_object(), *d;
	struct hc_store_stats ls;

	if (!l || hc_counters__to_json(&b->st.c, HC_F_LOCKS, l)) {
		json_decref(l);
		return NULL;
	}
	d = json_incref(json_object_get(l, "dropped"));
	json_decref(l);
	if (!d)
		return NULL;
	hc_store__stats(b->lstore, &ls);
	if (json_object_set_new(d, "evicted_early_s", json_integer((json_int_t)ls.evicted_early)) ||
	    json_object_set_new(d, "store_error", json_integer((json_int_t)b->lock_store_errors))) {
		json_decref(d);
		return NULL;
	}
	return d;
}

/* GET /api/locks: record's `locks` section for the range, its lock_wait_ns and the range. */
static char *api_locks(void *ctx, const struct hc_api_query *q, size_t *len, int *status, char *why,
		       size_t wl)
{
	struct hc_backend *b = ctx;
	struct kind_acc acc = {0};
	struct hc_store_pruned pruned = {0};
	struct hc_store_filter f;
	struct src src;
	struct hc_tree *tree = hc_tree__new();
	struct hc_hist *hist = NULL;
	json_t *doc = json_object(), *hj = NULL, *dropped = NULL, *range = NULL;
	char *buf = NULL;
	FILE *mem;
	int err = 0;

	if (!b->lstore) {
		fail(status, LOCKS_OFF_STATUS, why, wl, LOCKS_OFF_WHY);
		goto out;
	}
	if (!tree || !doc) {
		fail(status, 500, why, wl, "out of memory");
		goto out;
	}
	pthread_rwlock_rdlock(&b->lock);
	/* The range of the main store: the lock store holds no second without a contention. */
	if (!range_of(b, q, &f, &src, status, why, wl)) {
		pthread_rwlock_unlock(&b->lock);
		goto out;
	}
	f.on = f.off = f.runqueue = true; /* spin and block */
	if (src.disk) {
		pthread_rwlock_unlock(&b->lock);
		for (acc.c = 0; acc.c < HC_STORE_C_MAX && !err; acc.c++)
			err = hc_disk__counter(b->disk, HC_DISK_LOCKS, &src.r,
					       (enum hc_store_counter)acc.c, kind_cb, &acc);
		if (!err)
			err = hc_disk__tree(b->disk, HC_DISK_LOCKS, &src.r, &f, tree, &pruned);
		if (!err)
			hist = hc_disk__hist(b->disk, HC_DISK_LOCKS, &src.r,
					     HC_STORE_H_LOCK_WAIT_NS, &f);
		pthread_rwlock_rdlock(&b->lock);
	} else {
		for (acc.c = 0; acc.c < HC_STORE_C_MAX && !err; acc.c++)
			err = hc_store__counter(b->lstore, (enum hc_store_counter)acc.c, &f,
						kind_cb, &acc);
		if (!err)
			err = hc_store__tree(b->lstore, &f, tree, &pruned);
		if (!err)
			hist = hc_store__hist(b->lstore, HC_STORE_H_LOCK_WAIT_NS, &f);
	}
	if (!err) {
		dropped = locks_dropped(b);
		if (!hist || !dropped)
			err = -ENOMEM;
	}
	pthread_rwlock_unlock(&b->lock);
	hj = hist ? hc_hist__to_json(hist) : NULL;
	range = json_pack("{s:o, s:o, s:I, s:I, s:{s:I, s:I, s:I}}", "from", rfc3339(f.from_s * NS),
			  "to", rfc3339(f.to_s * NS), "from_ms", (json_int_t)(f.from_s * 1000),
			  "to_ms", (json_int_t)(f.to_s * 1000), "pruned", "max_nodes",
			  (json_int_t)q->max_nodes, "nodes", (json_int_t)pruned.nodes, "value_ns",
			  (json_int_t)pruned.value_ns);
	if (range_source(range, &src)) {
		json_decref(range);
		range = NULL;
	}
	if (err || !hj || !range || locks_by_kind(&acc, doc) ||
	    json_object_set(doc, "range", range) || json_object_set(doc, "dropped", dropped) ||
	    json_object_set_new(doc, "histograms", json_pack("{s:O}", "lock_wait_ns", hj))) {
		fail(status, 500, why, wl, "building the answer failed (out of memory)");
		goto out;
	}
	hc_tree__sort(tree);
	mem = open_memstream(&buf, len);
	if (!mem) {
		fail(status, 500, why, wl, "out of memory");
		goto out;
	}
	err = hc_json__write_with_tree(doc, "flamegraph", tree, mem);
	if (fclose(mem) || err) {
		free(buf);
		buf = NULL;
		fail(status, 500, why, wl, "writing the answer failed (out of memory)");
	}
out:
	for (size_t i = 0; i < acc.n; i++)
		free(acc.rows[i].key);
	free(acc.rows);
	json_decref(hj);
	json_decref(dropped);
	json_decref(range);
	json_decref(doc);
	hc_hist__free(hist);
	hc_tree__free(tree);
	return buf;
}

/* ---- /api/timeline ---- */

/* Slots of a timeline: at least the resolution, at most MAX_SLOTS of them, a round step. */
#define MAX_SLOTS 3600
static int64_t pick_step(int64_t asked_s, int64_t res_s, int64_t span_s)
{
	static const int64_t nice[] = {1,   2,	 5,    10,   15,   30,	  60,	 120,	300,
				       600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400};
	int64_t step = asked_s > res_s ? asked_s : res_s;

	if (asked_s)
		return (step + res_s - 1) / res_s * res_s;
	for (size_t i = 0; i < sizeof(nice) / sizeof(nice[0]); i++)
		if (nice[i] >= step && nice[i] % res_s == 0 &&
		    (span_s + nice[i] - 1) / nice[i] <= MAX_SLOTS)
			return nice[i];
	return (span_s + MAX_SLOTS - 1) / MAX_SLOTS / res_s * res_s + res_s;
}

/* Heat-map columns: the memory store's newest MAX_HEAT_COLUMNS seconds of the range; from
 * disk, the 1 s tier's, for ranges up to an hour. */
#define MAX_DISK_HEAT_COLUMNS 3600

static json_t *api_timeline(void *ctx, const struct hc_api_query *q, int *status, char *why,
			    size_t wl)
{
	struct hc_backend *b = ctx;
	struct hc_store_slot *slots = NULL;
	struct hc_store_stats st;
	struct hc_disk_stats ds = {0};
	struct hc_store_filter f;
	struct src src;
	int64_t step_s, cols = 0, heat_from, oldest_s, newest_s;
	json_t *doc = NULL, *t, *on, *off, *rq, *smp, *heat;
	uint64_t max = 0, *rows = NULL;
	size_t n = 0;
	int err = 0;

	/* Copy out under the lock; build the JSON (the slow part) after it. */
	pthread_rwlock_rdlock(&b->lock);
	if (!range_of(b, q, &f, &src, status, why, wl)) {
		pthread_rwlock_unlock(&b->lock);
		return NULL;
	}
	hc_store__stats(b->store, &st);
	if (b->disk)
		hc_disk__stats(b->disk, &ds);
	step_s = pick_step((int64_t)(q->step_ns / NS),
			   src.disk ? hc_disk__tier_step(src.r.tier) : 1, f.to_s - f.from_s);
	cols = f.to_s - f.from_s;
	if (src.disk) {
		pthread_rwlock_unlock(&b->lock);
		if (f.to_s > f.from_s)
			err = hc_disk__timeline(b->disk, &src.r, step_s, &slots, &n);
		if (src.r.tier != 0 || cols > MAX_DISK_HEAT_COLUMNS)
			cols = 0;
		heat_from = f.to_s - cols;
		if (!err && cols > 0) {
			rows = malloc((size_t)cols * HC_STORE_HEAT_ROWS * sizeof(*rows));
			err = rows ? hc_disk__heat(b->disk, heat_from, cols, rows) : -ENOMEM;
		}
	} else {
		err = f.to_s > f.from_s
			      ? hc_store__timeline(b->store, f.from_s, f.to_s, step_s, &slots, &n)
			      : 0;
		/* The heat map covers the newest MAX_HEAT_COLUMNS seconds of a longer range
		 * (start_ms says where it starts). */
		if (cols > MAX_HEAT_COLUMNS)
			cols = MAX_HEAT_COLUMNS;
		heat_from = f.to_s - cols;
		if (!err && cols > 0) {
			rows = malloc((size_t)cols * HC_STORE_HEAT_ROWS * sizeof(*rows));
			if (!rows)
				err = -ENOMEM;
			for (int64_t c = 0; rows && c < cols; c++)
				hc_store__heat(b->store, heat_from + c,
					       rows + c * HC_STORE_HEAT_ROWS);
		}
		pthread_rwlock_unlock(&b->lock);
	}
	if (cols < 0)
		cols = 0;
	oldest_s = st.oldest_s;
	newest_s = st.newest_s;
	if (ds.newest_s && (!oldest_s || ds.oldest_s < oldest_s))
		oldest_s = ds.oldest_s;
	if (ds.newest_s > newest_s)
		newest_s = ds.newest_s;
	if (err) {
		fail(status, err == -EINVAL ? 400 : 500, why, wl,
		     err == -EINVAL ? "step: too many slots for the range" : "out of memory");
		goto out;
	}
	t = json_array();
	on = json_array();
	off = json_array();
	rq = json_array();
	smp = json_array();
	heat = json_array();
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(t, json_integer(slots[i].t_s * 1000));
		json_array_append_new(on, json_integer((json_int_t)slots[i].on_cpu_ns));
		json_array_append_new(off, json_integer((json_int_t)slots[i].off_cpu_ns));
		json_array_append_new(rq, json_integer((json_int_t)slots[i].runqueue_ns));
		json_array_append_new(smp, json_integer((json_int_t)slots[i].samples));
	}
	for (int64_t c = 0; c < cols; c++) {
		json_t *col = json_array();

		for (int r = 0; r < HC_STORE_HEAT_ROWS; r++) {
			uint64_t v = rows[c * HC_STORE_HEAT_ROWS + r];

			json_array_append_new(col, json_integer((json_int_t)v));
			if (v > max)
				max = v;
		}
		json_array_append_new(heat, col);
	}
	doc = json_pack("{s:I, s:I, s:I, s:{s:o, s:o, s:o, s:o, s:o},"
			" s:{s:I, s:I, s:i, s:i, s:I, s:o}, s:{s:I, s:I}}",
			"from_ms", (json_int_t)(f.from_s * 1000), "to_ms",
			(json_int_t)(f.to_s * 1000), "step_ms", (json_int_t)(step_s * 1000),
			"slots", "t_ms", t, "on_cpu_ns", on, "off_cpu_ns", off, "runqueue_ns", rq,
			"samples", smp, "heatmap", "start_ms", (json_int_t)(heat_from * 1000),
			"columns", (json_int_t)cols, "rows", HC_STORE_HEAT_ROWS, "row_ms",
			1000 / HC_STORE_HEAT_ROWS, "max", (json_int_t)max, "counts", heat,
			"retention", "oldest_ms", (json_int_t)(oldest_s * 1000), "newest_ms",
			(json_int_t)(newest_s * 1000 + 999));
	if (doc && range_source(doc, &src)) {
		json_decref(doc);
		doc = NULL;
	}
	if (!doc)
		fail(status, 500, why, wl, "out of memory");
out:
	free(rows);
	free(slots);
	return doc;
}

/* ---- /api/status and /metrics ---- */

/* The server's counters (families SERVE, RETENTION, STORE, LOCK_STORE, MEMORY) beside the
 * collector's last ones, and the profile store's figures. Under the read lock. */
static void server_counters(struct hc_backend *b, struct hc_counters *c, struct hc_store_stats *st)
{
	uint64_t *v = c->v;

	*c = b->st.c;
	hc_store__stats(b->store, st);
	v[HC_C_SERVE_UPTIME_S] = (uint64_t)((hc_clock_ns(CLOCK_REALTIME) - b->started_ns) / NS);
	v[HC_C_SERVE_CPUS] = b->st.cpus;
	v[HC_C_SERVE_PERIOD_NS] = b->st.period_ns;
	v[HC_C_RET_CONFIGURED_S] = b->sopts.retention_s ? b->sopts.retention_s : 3600;
	v[HC_C_RET_SPAN_S] = (uint64_t)(st->newest_s ? st->newest_s - st->oldest_s + 1 : 0);
	v[HC_C_STORE_BYTES] = st->bytes;
	v[HC_C_STORE_SECONDS] = st->buckets;
	v[HC_C_STORE_TRIE_NODES] = st->trie_nodes;
	v[HC_C_STORE_FRAMES] = st->frames;
	v[HC_C_STORE_EXPIRED_NS] = st->expired_ns;
	v[HC_C_STORE_EVICTED_EARLY_S] = st->evicted_early;
	v[HC_C_STORE_GC_RUNS] = st->gc_runs;
	v[HC_C_STORE_ERRORS] = b->store_errors;
	v[HC_C_MEM_STORE_BYTES] = st->bytes;
	if (b->lstore) {
		struct hc_store_stats ls;

		hc_store__stats(b->lstore, &ls);
		v[HC_C_LSTORE_BYTES] = ls.bytes;
		v[HC_C_LSTORE_MAX_BYTES] = b->lopts_max_bytes;
		v[HC_C_LSTORE_SECONDS] = ls.buckets;
		v[HC_C_LSTORE_TRIE_NODES] = ls.trie_nodes;
		v[HC_C_LSTORE_FRAMES] = ls.frames;
		v[HC_C_LSTORE_EVICTED_EARLY_S] = ls.evicted_early;
		v[HC_C_LSTORE_ERRORS] = b->lock_store_errors;
		v[HC_C_MEM_STORE_BYTES] += hc_store__memory_bytes(b->lstore);
	}
	v[HC_C_MEM_SERVER_RSS_BYTES] = hc_self__rss_bytes();
	v[HC_C_DISK_ERRORS] = b->disk_errors;
	if (b->disk) {
		struct hc_disk_stats ds;

		hc_disk__stats(b->disk, &ds);
		v[HC_C_DISK_BYTES] = ds.bytes;
		v[HC_C_DISK_FILE_BYTES] = ds.file_bytes;
		v[HC_C_DISK_MAX_BYTES] = b->max_disk_bytes;
		v[HC_C_RET_CONFIGURED_S] = b->disk_retention_s;
		v[HC_C_DISK_T0_SECONDS] = ds.tier[0].seconds;
		v[HC_C_DISK_T1_SECONDS] = ds.tier[1].seconds;
		v[HC_C_DISK_T2_SECONDS] = ds.tier[2].seconds;
		v[HC_C_DISK_T3_SECONDS] = ds.tier[3].seconds;
		v[HC_C_DISK_WRITES] = ds.writes;
		v[HC_C_DISK_WRITE_FAILURES] = ds.write_failures;
		v[HC_C_DISK_WRITE_NS_LAST] = ds.write_ns_last;
		v[HC_C_DISK_WRITE_NS_MAX] = ds.write_ns_max;
		v[HC_C_DISK_MAINTAIN_NS_LAST] = ds.maintain_ns_last;
		v[HC_C_DISK_MAINTAIN_NS_MAX] = ds.maintain_ns_max;
		v[HC_C_DISK_DROPPED_QUEUE_S] = ds.dropped_queue_s;
		v[HC_C_DISK_DROPPED_WRITE_S] = ds.dropped_write_s;
		v[HC_C_DISK_DROPPED_MAX_DISK_S] = ds.dropped_max_disk_s;
		v[HC_C_DISK_EXPIRED_S] = ds.expired_s;
		v[HC_C_DISK_COMPACTIONS] = ds.compactions;
		v[HC_C_DISK_BUILDS] = ds.builds;
		v[HC_C_DISK_CORRUPT_BUCKETS] = ds.corrupt_blobs;
		v[HC_C_DISK_QUARANTINED] = ds.quarantined;
		v[HC_C_DISK_FRAMES] = ds.frames;
		v[HC_C_DISK_TASKS] = ds.tasks;
		v[HC_C_DISK_STACKS] = ds.stacks;
		v[HC_C_DISK_DICT_BYTES] = ds.dict_bytes;
		v[HC_C_DISK_SQLITE_BYTES] = ds.sqlite_bytes;
		v[HC_C_DISK_EPOCH_CACHE_BYTES] = ds.epoch_cache_bytes;
		v[HC_C_DISK_EPOCH_CACHE_HITS] = ds.epoch_cache_hits;
		v[HC_C_DISK_EPOCH_CACHE_MISSES] = ds.epoch_cache_misses;
		v[HC_C_DISK_DICT_EPOCH] = ds.dict_epoch;
		v[HC_C_DISK_DICT_EPOCHS] = ds.dict_epochs;
		v[HC_C_DISK_DICT_BOUND_BYTES] = ds.dict_bound_bytes;
		v[HC_C_DISK_DICT_BOUND_CHANGES] = ds.dict_bound_changes;
		v[HC_C_DISK_DICT_ROWS_DELETED] = ds.dict_rows_deleted;
		v[HC_C_DISK_DICT_FILE_LOOKUPS] = ds.dict_file_lookups;
		v[HC_C_DISK_DICT_RECALLED] = ds.dict_recalled;
		v[HC_C_DISK_DICT_RECALL_ERRORS] = ds.dict_recall_errors;
		v[HC_C_DISK_STACK_KEYS_FRESH] = ds.stack_keys_fresh;
		v[HC_C_DISK_STACK_KEYS_PACKED] = ds.stack_keys_packed;
		v[HC_C_DISK_STACK_KEY_PASSES] = ds.stack_key_passes;
		v[HC_C_DISK_STACK_CHUNKS_MERGED] = ds.stack_chunks_merged;
		v[HC_C_DISK_FOLDED_ENTRIES] = ds.folded_entries;
		v[HC_C_DISK_FOLDED_NS] = ds.folded_ns;
		v[HC_C_DISK_FOLD_UNREADABLE] = ds.fold_unreadable;
		v[HC_C_MEM_STORE_BYTES] += ds.dict_bytes;
		if (ds.oldest_s && (!st->oldest_s || ds.oldest_s < st->oldest_s))
			v[HC_C_RET_SPAN_S] = (uint64_t)((st->newest_s > ds.newest_s ? st->newest_s
										    : ds.newest_s) -
							ds.oldest_s + 1);
	}
}

/* /api/status's store.disk: where, and each tier's range (the figures are counters). */
static int disk_status(struct hc_backend *b, json_t *doc)
{
	json_t *store = json_object_get(doc, "store"), *disk, *tiers;
	struct hc_disk_stats ds;

	if (!store)
		return -ENOMEM;
	disk = json_object_get(store, "disk");
	if (!disk)
		return -ENOMEM;
	if (json_object_set_new(disk, "enabled", json_boolean(b->disk != NULL)))
		return -ENOMEM;
	if (!b->disk)
		return 0;
	hc_disk__stats(b->disk, &ds);
	tiers = json_object_get(disk, "tiers");
	for (int i = 0; tiers && i < HC_DISK_TIERS; i++) {
		json_t *t = json_object_get(tiers, hc_disk__tier_name(i));

		if (!t ||
		    json_object_set_new(t, "resolution_s", json_integer(hc_disk__tier_step(i))) ||
		    (ds.tier[i].buckets &&
		     (json_object_set_new(t, "oldest", rfc3339(ds.tier[i].oldest_s * NS)) ||
		      json_object_set_new(t, "newest", rfc3339(ds.tier[i].newest_s * NS)))))
			return -ENOMEM;
	}
	return 0;
}

/* obj's member name: a new object holding family f's counters. 0, -ENOMEM. */
static int set_family(json_t *obj, const char *name, const struct hc_counters *c,
		      enum hc_counter_family f)
{
	json_t *o = json_object();

	if (!o || hc_counters__to_json(c, f, o)) {
		json_decref(o);
		return -ENOMEM;
	}
	return json_object_set_new(obj, name, o) ? -ENOMEM : 0;
}

/* /api/status's `unwind`: the settings, then the counters (as record's section). */
static int unwind_status(const struct hc_backend *b, const struct hc_counters *c, json_t *doc)
{
	bool fp = b->st.flags & HC_WIRE_ST_UNWIND_FP;
	bool table = b->st.flags & HC_WIRE_ST_UNWIND_TABLE;
	json_t *u = json_pack("{s:s}", "mode", fp ? "fp" : table ? "table" : "copy");

	if (!u || hc_counters__to_json(c, HC_F_UNWIND, u)) {
		json_decref(u);
		return -ENOMEM;
	}
	return json_object_set_new(doc, "unwind", u) ? -ENOMEM : 0;
}

/* /api/status's `locks`: {"enabled": false}, or the collector's counts since start and the
 * lock store's figures. */
static int locks_status(const struct hc_backend *b, const struct hc_counters *c, json_t *doc)
{
	json_t *l = json_pack("{s:b}", "enabled", b->lstore != NULL);

	if (!l || (b->lstore && (hc_counters__to_json(c, HC_F_LOCKS, l) ||
				 set_family(l, "store", c, HC_F_LOCK_STORE)))) {
		json_decref(l);
		return -ENOMEM;
	}
	return json_object_set_new(doc, "locks", l) ? -ENOMEM : 0;
}

/* /api/status's `retention`: the counters and the range held, as timestamps. */
static int retention_status(struct hc_backend *b, const struct hc_counters *c,
			    const struct hc_store_stats *st, json_t *doc)
{
	int64_t oldest = st->oldest_s, newest = st->newest_s;
	struct hc_disk_stats ds = {0};
	json_t *r;

	if (b->disk)
		hc_disk__stats(b->disk, &ds);
	if (ds.newest_s && (!oldest || ds.oldest_s < oldest))
		oldest = ds.oldest_s;
	if (ds.newest_s > newest)
		newest = ds.newest_s;
	r = json_pack("{s:o?, s:o?}", "oldest", oldest ? rfc3339(oldest * NS) : NULL, "newest",
		      newest ? rfc3339(newest * NS) : NULL);

	if (!r || hc_counters__to_json(c, HC_F_RETENTION, r)) {
		json_decref(r);
		return -ENOMEM;
	}
	return json_object_set_new(doc, "retention", r) ? -ENOMEM : 0;
}

/* Everything /api/status says but the push client's part. Under the read lock. */
static json_t *status_doc(struct hc_backend *b)
{
	static const struct {
		const char *name;
		enum hc_counter_family f;
	} fams[] = {
		{"lost", HC_F_LOST},	       {"scheduler", HC_F_SCHEDULER},
		{"symbolize", HC_F_SYMBOLIZE}, {"collector", HC_F_COLLECTOR},
		{"store", HC_F_STORE},	       {"memory", HC_F_MEMORY},
	};
	struct hc_store_stats st;
	struct hc_counters c;
	json_t *doc;
	int err;

	server_counters(b, &c, &st);
	doc = json_pack("{s:s, s:s, s:s, s:o, s:f, s:b}", "version", b->version, "host", b->host,
			"kernel", b->kernel, "started_at", rfc3339(b->started_ns), "frequency_hz",
			b->st.frequency_hz, "offcpu", (b->st.flags & HC_WIRE_ST_OFFCPU) != 0);
	if (!doc)
		return NULL;
	err = hc_counters__to_json(&c, HC_F_SERVE, doc);
	if (!err)
		err = hc_counters__to_json(&c, HC_F_SAMPLING, doc);
	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]) && !err; i++)
		err = set_family(doc, fams[i].name, &c, fams[i].f);
	if (!err)
		err = unwind_status(b, &c, doc);
	if (!err)
		err = disk_status(b, doc);
	if (!err)
		err = retention_status(b, &c, &st, doc);
	if (!err)
		err = locks_status(b, &c, doc);
	if (err) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

static json_t *api_status(void *ctx, int *status, char *why, size_t wl)
{
	struct hc_backend *b = ctx;
	json_t *doc;

	pthread_rwlock_rdlock(&b->lock);
	doc = status_doc(b);
	pthread_rwlock_unlock(&b->lock);
	if (doc && b->push) {
		json_t *push = hc_push__status(b->push);
		struct hc_counters c = {0};

		pthread_rwlock_rdlock(&b->lock);
		c.v[HC_C_PUSH_LAG_S] = HC_PUSH_LAG_S;
		c.v[HC_C_PUSH_LATE_NS] = b->push_late_ns;
		if (!push || hc_counters__to_json(&c, HC_F_PUSH_SERVER, push) ||
		    json_object_set_new(doc, "push", push)) {
			json_decref(doc);
			doc = NULL;
		}
		pthread_rwlock_unlock(&b->lock);
	}
	if (!doc)
		fail(status, 500, why, wl, "out of memory");
	return doc;
}

/* Every family of counters.def serve has (the lock ones with --locks), then the series
 * derived from them and the push client's. */
static char *api_metrics(void *ctx, size_t *len, int *status, char *why, size_t wl)
{
	struct hc_backend *b = ctx;
	uint32_t fams = HC_F_BIT(HC_F_SAMPLING) | HC_F_BIT(HC_F_LOST) | HC_F_BIT(HC_F_SCHEDULER) |
			HC_F_BIT(HC_F_SYMBOLIZE) | HC_F_BIT(HC_F_UNWIND) |
			HC_F_BIT(HC_F_COLLECTOR) | HC_F_BIT(HC_F_SERVE) | HC_F_BIT(HC_F_RETENTION) |
			HC_F_BIT(HC_F_STORE) | HC_F_BIT(HC_F_MEMORY);
	struct hc_store_stats st;
	struct hc_counters c;
	char *buf = NULL;
	FILE *m = open_memstream(&buf, len);
	uint64_t on_ns;

	if (!m) {
		fail(status, 500, why, wl, "out of memory");
		return NULL;
	}
	if (b->lstore)
		fams |= HC_F_BIT(HC_F_LOCKS) | HC_F_BIT(HC_F_LOCK_STORE);
	if (b->push)
		fams |= HC_F_BIT(HC_F_PUSH_SERVER);
	pthread_rwlock_rdlock(&b->lock);
	server_counters(b, &c, &st);
	c.v[HC_C_PUSH_LAG_S] = HC_PUSH_LAG_S;
	c.v[HC_C_PUSH_LATE_NS] = b->push_late_ns;
	hc_counters__write_metrics(&c, fams, m);
	on_ns = (c.v[HC_C_SAMPLES] - c.v[HC_C_IDLE_SAMPLES]) * b->st.period_ns;
	fprintf(m,
		"# HELP hotcold_on_cpu_seconds_total on-CPU time sampled (samples x period, "
		"idle excluded).\n# TYPE hotcold_on_cpu_seconds_total counter\n"
		"hotcold_on_cpu_seconds_total %" PRIu64 ".%09" PRIu64 "\n",
		on_ns / 1000000000u, on_ns % 1000000000u);
	pthread_rwlock_unlock(&b->lock);
	if (b->push)
		hc_push__metrics(b->push, m);
	if (fclose(m)) {
		free(buf);
		fail(status, 500, why, wl, "out of memory");
		return NULL;
	}
	return buf;
}

const char *hc_backend__host(const struct hc_backend *b)
{
	return b->host;
}

void hc_backend__set_push(struct hc_backend *b, struct hc_push *push)
{
	b->push = push;
}

void hc_backend__api(struct hc_backend *b, struct hc_api_backend *out)
{
	*out = (struct hc_api_backend){
		.profile = api_profile,
		.histogram_names = api_histogram_names,
		.histogram = api_histogram,
		.timeline = api_timeline,
		.locks = api_locks,
		.status = api_status,
		.metrics = api_metrics,
		.ctx = b,
	};
}
