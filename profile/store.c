// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_store: the continuous profile of `hotcold serve` (profile/store.h is the contract,
 * docs/store.md the design and the figures).
 *
 * This file: the store object, the bucket list and retention, adds, sealing, the memory cap
 * (coarsening, early eviction) and stats. profile/store_int.h says what the other store_*.c
 * files hold, and how the data is laid out and encoded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "profile/profile_internal.h"
#include "profile/store_int.h"

#define DEFAULT_RETENTION_S 3600
#define DEFAULT_MAX_BYTES ((size_t)32 << 20)
#define COARSE_SPAN_S 10
/* Coarsening never touches the newest minute: the default range of the API stays exact. */
#define KEEP_FINE_S 60
/* Trie GC: when the trie has doubled since the last one and holds at least this many nodes,
 * or, over max_bytes, when it has grown by a quarter. */
#define GC_MIN_NODES 16384
/* Estimated heap of one hc_hist template (struct, unit, empty series table). */
#define HIST_TEMPLATE_BYTES 256

static inline int64_t sat_sub_s64(int64_t a, uint64_t b)
{
	int64_t r;

	if (b > (uint64_t)INT64_MAX || __builtin_sub_overflow(a, (int64_t)b, &r))
		return INT64_MIN;
	return r;
}

static inline int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ---- histograms ---- */

static const char *const hist_names[HC_STORE_H_MAX] = {
	[HC_STORE_H_PRIORITY] = "priority",
	[HC_STORE_H_RUNQ_LENGTH] = "runqueue_length",
	[HC_STORE_H_ONCPU_SLICE_US] = "oncpu_slice_us",
	[HC_STORE_H_OFFCPU_US] = "offcpu_us",
	[HC_STORE_H_RUNQ_LATENCY_US] = "runqueue_latency_us",
	[HC_STORE_H_LOCK_WAIT_NS] = "lock_wait_ns",
};

const char *hc_store_hist__name(enum hc_store_hist h)
{
	if ((unsigned int)h >= HC_STORE_H_MAX)
		return NULL;
	return hist_names[h];
}

int hc_store_hist__by_name(const char *name)
{
	if (!name)
		return -1;
	for (int h = 0; h < HC_STORE_H_MAX; h++) {
		if (strcmp(hist_names[h], name) == 0)
			return h;
	}
	return -1;
}

struct hc_hist *hc__store_hist_new_shape(enum hc_store_hist h)
{
	switch (h) {
	case HC_STORE_H_PRIORITY:
		return hc_hist__new_lquantize("prio", 0, 140, 10);
	case HC_STORE_H_RUNQ_LENGTH:
		return hc_hist__new_lquantize("tasks", 0, 32, 1);
	case HC_STORE_H_LOCK_WAIT_NS:
		return hc_hist__new_quantize("ns");
	default:
		return hc_hist__new_quantize("us");
	}
}

struct hc_hist *hc_store_hist__new(enum hc_store_hist h)
{
	if ((unsigned int)h >= HC_STORE_H_MAX) {
		errno = EINVAL;
		return NULL;
	}
	return hc__store_hist_new_shape(h);
}

/* ---- buckets ---- */

static size_t bucket_bytes(const struct bucket *b)
{
	size_t n = sizeof(*b) + MALLOC_OVERHEAD;

	n += hc__store_wtab_bytes(b->w_open) + hc__store_htab_bytes(b->h_open);
	if (b->w_enc)
		n += b->w_len + MALLOC_OVERHEAD;
	if (b->heat_open)
		n += (size_t)HC_STORE_HEAT_ROWS * b->span_s * sizeof(uint64_t) + MALLOC_OVERHEAD;
	if (b->heat_enc)
		n += b->heat_len + MALLOC_OVERHEAD;
	if (b->h_enc)
		n += b->h_len + MALLOC_OVERHEAD;
	return n;
}

void hc__store_bucket_account(struct hc_store *st, struct bucket *b)
{
	st->bucket_bytes -= b->bytes;
	b->bytes = bucket_bytes(b);
	st->bucket_bytes += b->bytes;
}

static void bucket_free(struct bucket *b)
{
	if (!b)
		return;
	hc__store_wtab_free(b->w_open);
	free(b->w_enc);
	free(b->heat_open);
	free(b->heat_enc);
	hc__store_htab_free(b->h_open);
	free(b->h_enc);
	free(b);
}

static inline bool bucket_is_open(const struct bucket *b)
{
	return b->w_open || b->heat_open || b->h_open;
}

/* ---- construction ---- */

struct hc_store *hc_store__new(const struct hc_store_opts *opts)
{
	struct hc_store *st;

	if (!opts || !opts->period_ns || opts->retention_s > (uint64_t)INT64_MAX / 2) {
		errno = EINVAL;
		return NULL;
	}
	st = calloc(1, sizeof(*st));
	if (!st)
		goto err;
	st->o = *opts;
	if (!st->o.retention_s)
		st->o.retention_s = DEFAULT_RETENTION_S;
	if (!st->o.max_bytes)
		st->o.max_bytes = DEFAULT_MAX_BYTES;
	st->evict_floor_s = INT64_MIN;
	st->sealed_through_s = INT64_MIN;
	st->live_after_gc = 1;

	st->trie.cap = 1024;
	st->trie.key = malloc(st->trie.cap * sizeof(*st->trie.key));
	if (!st->trie.key || hc__store_trie_rehash(&st->trie, 1024))
		goto err_free;
	st->trie.key[0] = 0;
	st->trie.n = 1;
	if (hc__store_sp_grow_slots(&st->sp))
		goto err_free;
	for (int h = 0; h < HC_STORE_H_MAX; h++) {
		st->shape[h] = hc__store_hist_new_shape((enum hc_store_hist)h);
		if (!st->shape[h])
			goto err_free;
	}
	return st;

err_free:
	hc_store__free(st);
err:
	errno = ENOMEM;
	return NULL;
}

void hc_store__free(struct hc_store *st)
{
	if (!st)
		return;
	for (size_t i = 0; i < st->n_bk; i++)
		bucket_free(st->bk[i]);
	free(st->bk);
	free(st->trie.key);
	free(st->trie.slots);
	free(st->frames);
	free(st->free_frames);
	free(st->fslots);
	free(st->wmap);
	hc__store_sp_free(&st->sp);
	free(st->scratch);
	for (int h = 0; h < HC_STORE_H_MAX; h++)
		hc_hist__free(st->shape[h]);
	free(st);
}

/* ---- the bucket list, retention, the clock ---- */

/* Index of the first bucket with start_s > sec. */
static size_t bk_upper(const struct hc_store *st, int64_t sec)
{
	size_t lo = 0, hi = st->n_bk;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->bk[mid]->start_s <= sec)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the first bucket with start_s >= sec. */
size_t hc__store_bk_lower(const struct hc_store *st, int64_t sec)
{
	size_t lo = 0, hi = st->n_bk;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (st->bk[mid]->start_s < sec)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct bucket *hc__store_bk_containing(const struct hc_store *st, int64_t sec)
{
	size_t i = bk_upper(st, sec);

	if (i && sec - st->bk[i - 1]->start_s < (int64_t)st->bk[i - 1]->span_s)
		return st->bk[i - 1];
	return NULL;
}

/* Drop buckets [0, n). */
static void bk_drop_front(struct hc_store *st, size_t n)
{
	if (!n)
		return;
	st->dropped_since_gc = true;
	for (size_t i = 0; i < n; i++) {
		st->bucket_bytes -= st->bk[i]->bytes;
		bucket_free(st->bk[i]);
	}
	memmove(st->bk, st->bk + n, (st->n_bk - n) * sizeof(*st->bk));
	st->n_bk -= n;
}

static int64_t retention_cutoff(const struct hc_store *st)
{
	return sat_sub_s64(st->newest_s, st->o.retention_s);
}

/* The oldest second that may still receive data. */
static int64_t floor_s(const struct hc_store *st)
{
	int64_t c = retention_cutoff(st);

	return c > st->evict_floor_s ? c : st->evict_floor_s;
}

/* Move the retention clock to sec if it is newer; drop what falls out. */
static void advance_clock(struct hc_store *st, int64_t sec)
{
	int64_t cutoff;

	if (st->has_clock && sec <= st->newest_s)
		return;
	st->has_clock = true;
	st->newest_s = sec;
	cutoff = retention_cutoff(st);
	bk_drop_front(st, hc__store_bk_lower(st, cutoff));
}

/* The bucket receiving data for sec, created if needed; *out = NULL when sec is expired. */
static int bucket_for(struct hc_store *st, int64_t sec, struct bucket **out)
{
	struct bucket *b;
	size_t i;

	advance_clock(st, sec);
	*out = NULL;
	if (sec < floor_s(st))
		return 0;
	if (st->n_bk) {
		b = st->bk[st->n_bk - 1];
		if (sec >= b->start_s && sec - b->start_s < (int64_t)b->span_s) {
			*out = b;
			return 0;
		}
	}
	i = bk_upper(st, sec);
	if (i && sec - st->bk[i - 1]->start_s < (int64_t)st->bk[i - 1]->span_s) {
		*out = st->bk[i - 1];
		return 0;
	}
	if (st->n_bk == st->cap_bk && hc_array_grow(st->bk, st->cap_bk, st->n_bk + 1, 64))
		return -ENOMEM;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->start_s = sec;
	b->span_s = 1;
	memmove(st->bk + i + 1, st->bk + i, (st->n_bk - i) * sizeof(*st->bk));
	st->bk[i] = b;
	st->n_bk++;
	hc__store_bucket_account(st, b);
	*out = b;
	return 0;
}

static void count_expired(struct hc_store *st, uint64_t ns)
{
	st->expired_adds++;
	st->expired_ns = sat_add(st->expired_ns, ns);
}

/* ---- adds ---- */

int hc_store__add(struct hc_store *st, int64_t sec, const uint32_t *path, size_t n,
		  const struct hc_weights *w)
{
	uint32_t fid[HC_STORE_MAX_DEPTH];
	struct bucket *b;
	uint32_t node = 0;
	int err;

	if (!st || !path || !w || n < 2 || n > HC_STORE_MAX_DEPTH)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (path[i] == 0 || path[i] > st->n_wmap)
			return -EINVAL;
		fid[i] = st->wmap[path[i] - 1];
	}
	if (st->frames[fid[0] - 1].kind != HC_NODE_PROCESS ||
	    st->frames[fid[1] - 1].kind != HC_NODE_THREAD)
		return -EINVAL;
	if (weights_zero(w))
		return 0;

	err = bucket_for(st, sec, &b);
	if (err)
		return err;
	if (!b) {
		count_expired(st, sat_add(sat_add(w->on_cpu_ns, w->off_cpu_ns), w->runqueue_ns));
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		int64_t child = hc__store_trie_child(&st->trie, node, fid[i]);

		if (child < 0)
			return (int)child;
		node = (uint32_t)child;
	}
	err = hc__store_open_weights(st, b);
	if (!err)
		err = hc__store_wtab_add(b->w_open, node, w);
	if (!err)
		hc_weights__add(&b->total, w);
	hc__store_bucket_account(st, b);
	return err;
}

int hc_store__add_heat(struct hc_store *st, int64_t sec, unsigned int row, uint64_t count)
{
	struct bucket *b;
	uint64_t *c;
	int err;

	if (!st || row >= HC_STORE_HEAT_ROWS)
		return -EINVAL;
	if (!count)
		return 0;
	err = bucket_for(st, sec, &b);
	if (err)
		return err;
	if (!b) {
		count_expired(st, 0);
		return 0;
	}
	err = hc__store_open_heat(b);
	if (!err) {
		c = &b->heat_open[(size_t)(sec - b->start_s) * HC_STORE_HEAT_ROWS + row];
		*c = sat_add(*c, count);
	}
	hc__store_bucket_account(st, b);
	return err;
}

/* One cell into second sec's bucket: the key stored as hc_hist would store it (UTF-8
 * repaired), and refused where it would refuse it. */
static int add_cell(struct hc_store *st, int64_t sec, struct hcell *cell, const char *key)
{
	struct bucket *b;
	size_t len;
	char *clean;
	int64_t key_id;
	int err;

	clean = hc__utf8_sanitize(key, &len);
	if (!clean)
		return -ENOMEM;
	if (len > HC_HIST_KEY_MAX) {
		err = -EINVAL;
		goto out_free;
	}
	err = 0;
	if (!cell->count)
		goto out_free;
	err = bucket_for(st, sec, &b);
	if (err)
		goto out_free;
	if (!b) {
		count_expired(st, 0);
		goto out_free;
	}
	key_id = hc__store_sp_intern(&st->sp, clean);
	if (key_id < 0) {
		err = (int)key_id;
		goto out_free;
	}
	cell->key = (uint32_t)key_id;
	err = hc__store_open_hist(b);
	if (!err)
		err = hc__store_htab_add(b->h_open, cell);
	hc__store_bucket_account(st, b);
out_free:
	if (clean != key)
		free(clean);
	return err;
}

int hc_store__add_hist(struct hc_store *st, int64_t sec, enum hc_store_hist h, uint32_t pid,
		       const char *key, int64_t value, uint64_t count)
{
	struct hcell cell = {0};

	if (!st || !key || (unsigned int)h >= HC_STORE_H_MAX)
		return -EINVAL;
	cell.hist = (uint8_t)h;
	cell.pid = pid;
	cell.idx = (uint16_t)hc_hist__bucket_index(st->shape[h], value);
	cell.count = count;
	return add_cell(st, sec, &cell, key);
}

int hc_store__add_counter(struct hc_store *st, int64_t sec, enum hc_store_counter c,
			  const char *key, uint64_t value)
{
	struct hcell cell = {0};

	if (!st || !key || (unsigned int)c >= HC_STORE_C_MAX)
		return -EINVAL;
	cell.hist = (uint8_t)(CELL_COUNTER + c);
	cell.count = value;
	return add_cell(st, sec, &cell, key);
}

/* ---- memory cap: coarsening, early eviction ---- */

/*
 * Coarsening also merges identities that only grow memory: threads by name (tid 0), wakers
 * (no pid/tid), and processes not seen in the newest COARSE_SPAN_S seconds (exited, or idle)
 * by name (pid 0). Short-lived processes each had a subtree of their own; merged, a thousand
 * `ls` runs are one `ls`, and the trie GC frees the rest. Processes still running keep their
 * pid. Unresolved user frames ([unknown] in a module, named by their offset) lose the offset:
 * in a binary without symbols every sampled address was a frame of its own.
 */
struct coarse {
	struct hc_store *st;
	struct wtab *w;
	uint32_t *memo;	     /* old node -> merged node + 1 (0: not yet), old nodes only */
	uint8_t *alive;	     /* process-level node seen lately */
	uint32_t n_old;	     /* trie nodes when coarsening began */
	const char *unknown; /* the pool's "[unknown]", or NULL */
};

/* The process-level ancestor of node (the child of the root on its path). */
static uint32_t process_node(const struct trie *t, uint32_t node)
{
	while (node && trie_parent(t, node))
		node = trie_parent(t, node);
	return node;
}

static int mark_alive_cb(void *ctx, uint32_t node, const struct hc_weights *w)
{
	struct coarse *c = ctx;

	(void)w;
	c->alive[process_node(&c->st->trie, node)] = 1;
	return 0;
}

/* The node of the same path with identities merged, created if needed; < 0 -ENOMEM. */
static int64_t merged_node(struct coarse *c, uint32_t node)
{
	struct trie *t = &c->st->trie;
	uint32_t fr[HC_STORE_MAX_DEPTH + 1], x = node, proc = 0;
	size_t n = 0;
	int64_t parent = 0;

	if (c->memo[node])
		return c->memo[node] - 1;
	while (x && n < HC_STORE_MAX_DEPTH + 1) {
		fr[n++] = trie_frame(t, x);
		proc = x;
		x = trie_parent(t, x);
	}
	for (size_t i = n; i-- > 0;) {
		struct frame f = c->st->frames[fr[i] - 1];
		uint32_t fid = fr[i];

		if ((f.kind == HC_NODE_PROCESS && !c->alive[proc] && f.id) ||
		    (f.kind == HC_NODE_THREAD && f.id) ||
		    (f.kind == HC_NODE_WAKER && (f.id || f.offset != 0)) ||
		    (f.kind == HC_NODE_USER && f.name == c->unknown && f.offset != -1)) {
			int64_t id;

			f.id = 0;
			/* a waker's offset is its pid: merged wakers say pid 0 (docs/store.md),
			 * not -1, which JSON would print as 2^64 - 1 */
			if (f.kind == HC_NODE_WAKER)
				f.offset = 0;
			else if (f.kind == HC_NODE_USER)
				f.offset = -1;
			id = hc__store_frame_intern(c->st, &f);
			if (id < 0)
				return id;
			fid = (uint32_t)id;
		}
		parent = hc__store_trie_child(t, (uint32_t)parent, fid);
		if (parent < 0)
			return parent;
	}
	c->memo[node] = (uint32_t)parent + 1;
	return parent;
}

static int coarse_w_cb(void *ctx, uint32_t node, const struct hc_weights *w)
{
	struct coarse *c = ctx;
	int64_t m = node < c->n_old ? merged_node(c, node) : node;

	return m < 0 ? (int)m : hc__store_wtab_add(c->w, (uint32_t)m, w);
}

/* Merge the 1 s buckets [i0, i1) (all with start in [k, k + COARSE_SPAN_S)) into one. */
static int coarsen(struct hc_store *st, size_t i0, size_t i1, int64_t k)
{
	struct bucket *nb = calloc(1, sizeof(*nb));
	struct coarse c = {.st = st, .n_old = st->trie.n};
	uint32_t hint = 0;
	int err = -ENOMEM;
	int64_t unk = hc__store_sp_find(&st->sp, "[unknown]");

	if (!nb)
		return -ENOMEM;
	c.unknown = unk >= 0 ? st->sp.strs[unk] : NULL;
	c.memo = calloc(c.n_old, sizeof(*c.memo));
	c.alive = calloc(c.n_old, 1);
	if (!c.memo || !c.alive)
		goto err_free;
	/* Processes with data in the newest seconds keep their pid. */
	for (size_t i = st->n_bk > COARSE_SPAN_S ? st->n_bk - COARSE_SPAN_S : 0; i < st->n_bk; i++)
		if (hc__store_bucket_each_weight(st, st->bk[i], mark_alive_cb, &c))
			goto err_free;
	nb->start_s = k;
	nb->span_s = COARSE_SPAN_S;
	for (size_t i = i0; i < i1; i++)
		hint = hint > st->bk[i]->w_n ? hint : st->bk[i]->w_n;
	nb->w_open = hc__store_wtab_new(hint * 2);
	nb->h_open = hc__store_htab_new();
	nb->heat_open = calloc((size_t)HC_STORE_HEAT_ROWS * COARSE_SPAN_S, sizeof(uint64_t));
	if (!nb->w_open || !nb->h_open || !nb->heat_open)
		goto err_free;
	c.w = nb->w_open;
	for (size_t i = i0; i < i1; i++) {
		const struct bucket *b = st->bk[i];
		size_t off = (size_t)(b->start_s - k) * HC_STORE_HEAT_ROWS;
		uint64_t pos, count;

		if (hc__store_bucket_each_weight(st, b, coarse_w_cb, &c) ||
		    hc__store_bucket_each_cell(b, hc__store_htab_add_cb, nb->h_open))
			goto err_free;
		if (b->heat_open) {
			for (size_t r = 0; r < HC_STORE_HEAT_ROWS; r++)
				nb->heat_open[off + r] += b->heat_open[r];
		} else if (b->heat_enc) {
			HEAT_EACH(b->heat_enc, b->heat_len, pos, count,
				  nb->heat_open[off + pos] += count);
		}
		hc_weights__add(&nb->total, &b->total);
	}
	err = hc__store_seal_bucket(st, nb); /* accounts nb */
	if (err)
		goto err_uncount;
	for (size_t i = i0; i < i1; i++) {
		st->bucket_bytes -= st->bk[i]->bytes;
		bucket_free(st->bk[i]);
	}
	st->bk[i0] = nb;
	memmove(st->bk + i0 + 1, st->bk + i1, (st->n_bk - i1) * sizeof(*st->bk));
	st->n_bk -= i1 - i0 - 1;
	/* The per-pid subtrees these seconds used may now be garbage. */
	st->dropped_since_gc = true;
	free(c.memo);
	free(c.alive);
	return 0;

err_uncount:
	st->bucket_bytes -= nb->bytes;
err_free:
	bucket_free(nb);
	free(c.memo);
	free(c.alive);
	return err;
}

/* Coarsen the oldest group of 1 s buckets if one is old enough: 1 done, 0 none, -ENOMEM. */
static int coarsen_oldest(struct hc_store *st)
{
	size_t i0, i1;
	int64_t k;
	int err;

	for (i0 = 0; i0 < st->n_bk && st->bk[i0]->span_s != 1; i0++)
		;
	if (i0 == st->n_bk)
		return 0;
	k = floor_div(st->bk[i0]->start_s, COARSE_SPAN_S) * COARSE_SPAN_S;
	if (k > sat_sub_s64(st->newest_s, KEEP_FINE_S + COARSE_SPAN_S) ||
	    k + COARSE_SPAN_S - 1 > st->sealed_through_s)
		return 0;
	for (i1 = i0;
	     i1 < st->n_bk && st->bk[i1]->span_s == 1 && st->bk[i1]->start_s < k + COARSE_SPAN_S;
	     i1++)
		;
	err = coarsen(st, i0, i1, k);
	return err ? err : 1;
}

static size_t fixed_bytes(const struct hc_store *st)
{
	return sizeof(*st) + MALLOC_OVERHEAD + st->cap_bk * sizeof(*st->bk) +
	       (size_t)st->cap_frames * sizeof(*st->frames) + st->n_fslots * sizeof(uint32_t) +
	       ((size_t)st->cap_wmap + st->cap_free) * sizeof(uint32_t) + st->scratch_cap +
	       3 * MALLOC_OVERHEAD + hc__store_sp_bytes(&st->sp) + hc__store_trie_bytes(&st->trie) +
	       HC_STORE_H_MAX * HIST_TEMPLATE_BYTES;
}

size_t hc_store__memory_bytes(const struct hc_store *st)
{
	if (!st)
		return 0;
	return fixed_bytes(st) + st->bucket_bytes;
}

/*
 * Drop the oldest buckets (never the newest) until about `need` bytes are freed, counting for
 * each bucket its share of the trie (trie bytes x its part of all bucket bytes): what a GC
 * after the eviction should give back.
 */
static void evict_batch(struct hc_store *st, size_t need)
{
	double share = st->bucket_bytes
			       ? (double)hc__store_trie_bytes(&st->trie) / (double)st->bucket_bytes
			       : 0;
	double got = 0;
	size_t k = 0;

	while (k + 1 < st->n_bk && got < (double)need) {
		got += (double)st->bk[k]->bytes * (1 + share);
		st->evicted_early += st->bk[k]->span_s;
		st->evict_floor_s = st->bk[k]->start_s + st->bk[k]->span_s;
		k++;
	}
	bk_drop_front(st, k);
}

static int enforce_limits(struct hc_store *st)
{
	size_t target = st->o.max_bytes - st->o.max_bytes / 8, bytes;
	bool gc_done = false;
	int r;

	if (st->trie.n >= GC_MIN_NODES && st->trie.n / 2 >= st->live_after_gc) {
		r = hc__store_trie_gc(st);
		if (r)
			return r;
		gc_done = true;
	}
	while ((bytes = hc_store__memory_bytes(st)) > st->o.max_bytes) {
		r = coarsen_oldest(st);
		if (r < 0)
			return r;
		if (r > 0) {
			/* merged identities left per-pid subtrees behind: collect before
			 * evicting anything, even if a collection ran earlier in this call */
			gc_done = false;
			continue;
		}
		/* garbage exists only once buckets were dropped: collect it before evicting */
		if (st->dropped_since_gc && !gc_done) {
			r = hc__store_trie_gc(st);
			if (r)
				return r;
			gc_done = true;
			continue;
		}
		if (st->n_bk <= 1)
			break;
		/* down to 7/8 of the cap, so that the next seconds do not evict (and GC) again */
		evict_batch(st, bytes - target);
		gc_done = false;
	}
	return 0;
}

int hc_store__seal(struct hc_store *st, int64_t sec)
{
	int err = 0, r;

	if (!st)
		return -EINVAL;
	advance_clock(st, sec);
	for (size_t i = 0; i < st->n_bk; i++) {
		struct bucket *b = st->bk[i];

		if (b->start_s > sec)
			break;
		if (bucket_is_open(b) && sec - b->start_s >= (int64_t)b->span_s - 1) {
			r = hc__store_seal_bucket(st, b);
			if (r)
				err = r;
		}
	}
	if (sec > st->sealed_through_s)
		st->sealed_through_s = sec;
	r = enforce_limits(st);
	return err ? err : r;
}

/* ---- stats ---- */

void hc_store__stats(const struct hc_store *st, struct hc_store_stats *out)
{
	if (!out)
		return;
	memset(out, 0, sizeof(*out));
	if (!st)
		return;
	for (size_t i = 0; i < st->n_bk; i++) {
		out->buckets += st->bk[i]->span_s;
		out->coarse_buckets += st->bk[i]->span_s != 1;
		/* coarse buckets are the oldest: after the last of them, 1 s */
		if (st->bk[i]->span_s != 1)
			out->fine_from_s = st->bk[i]->start_s + st->bk[i]->span_s;
	}
	out->trie_nodes = st->trie.n - 1;
	out->frames = st->live_frames;
	out->bytes = hc_store__memory_bytes(st);
	out->expired_adds = st->expired_adds;
	out->expired_ns = st->expired_ns;
	out->evicted_early = st->evicted_early;
	out->gc_runs = st->gc_runs;
	if (st->n_bk) {
		const struct bucket *last = st->bk[st->n_bk - 1];

		out->oldest_s = st->bk[0]->start_s;
		out->newest_s = last->start_s + last->span_s - 1;
		if (!out->coarse_buckets)
			out->fine_from_s = out->oldest_s;
	}
}
