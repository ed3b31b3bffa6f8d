// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_store: the continuous profile of `hotcold serve` (profile/store.h is the contract,
 * docs/store.md the design and the figures).
 *
 * This file: the store object, the bucket list and retention, adds, sealing, the memory cap
 * (coarsening, early eviction), stats and the queries. profile/store_int.h says what the other
 * store_*.c files hold, and how the data is laid out and encoded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
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

static struct hc_hist *hist_new_shape(enum hc_store_hist h)
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
		st->shape[h] = hist_new_shape((enum hc_store_hist)h);
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
static size_t bk_lower(const struct hc_store *st, int64_t sec)
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

static const struct bucket *bk_containing(const struct hc_store *st, int64_t sec)
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
	bk_drop_front(st, bk_lower(st, cutoff));
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

/* ---- queries: the tree ---- */

#define LOCAL_FAIL UINT32_MAX

struct query {
	const struct hc_store *st;
	const struct hc_store_filter *f;
	const char *comm; /* pool pointer, or NULL (no comm filter, or no such name) */
	bool comm_absent; /* a comm filter naming a string never seen: nothing matches */
	uint32_t *map;	  /* trie node -> local + 1, LOCAL_FAIL (filtered out), 0 (unseen) */
	uint32_t *node;	  /* local -> trie node */
	uint32_t *parent; /* local -> local */
	struct hc_weights *w;
	uint32_t n, cap;
};

static int query_grow(struct query *q)
{
	uint32_t cap = q->cap ? q->cap * 2 : 4096;
	uint32_t *node, *parent;
	struct hc_weights *w;

	if (q->cap >= (1u << 31))
		return -ENOMEM;
	node = realloc(q->node, cap * sizeof(*node));
	if (!node)
		return -ENOMEM;
	q->node = node;
	parent = realloc(q->parent, cap * sizeof(*parent));
	if (!parent)
		return -ENOMEM;
	q->parent = parent;
	w = realloc(q->w, cap * sizeof(*w));
	if (!w)
		return -ENOMEM;
	q->w = w;
	q->cap = cap;
	return 0;
}

static bool query_pass(const struct query *q, uint32_t parent_local, uint32_t trie_node)
{
	const struct frame *fr = &q->st->frames[trie_frame(&q->st->trie, trie_node) - 1];

	if (parent_local == 0) { /* a process */
		if (q->f->has_pid && fr->id != q->f->pid)
			return false;
		if (q->f->comm && (q->comm_absent || fr->name != q->comm))
			return false;
		return true;
	}
	if (q->parent[parent_local] == 0) /* a thread */
		return !q->f->has_tid || fr->id == q->f->tid;
	return true;
}

/* The local index of trie node `node`, adding it and its unseen ancestors (top-down, so a
 * parent's local index is below its children's); LOCAL_FAIL when the filter drops it. */
static int64_t query_resolve(struct query *q, uint32_t node)
{
	uint32_t stack[HC_STORE_MAX_DEPTH + 1];
	const struct trie *t = &q->st->trie;
	uint32_t k = 0, anc, p = node;
	int err;

	while (p && !q->map[p]) {
		stack[k++] = p;
		p = trie_parent(t, p);
	}
	anc = p ? (q->map[p] == LOCAL_FAIL ? LOCAL_FAIL : q->map[p] - 1) : 0;
	while (k--) {
		uint32_t id = stack[k];

		if (anc == LOCAL_FAIL || !query_pass(q, anc, id)) {
			q->map[id] = LOCAL_FAIL;
			anc = LOCAL_FAIL;
			continue;
		}
		if (q->n == q->cap) {
			err = query_grow(q);
			if (err)
				return err;
		}
		q->node[q->n] = id;
		q->parent[q->n] = anc;
		memset(&q->w[q->n], 0, sizeof(q->w[q->n]));
		q->map[id] = q->n + 1;
		anc = q->n++;
	}
	return anc;
}

static inline int query_add(struct query *q, uint32_t node, const struct hc_weights *w)
{
	struct hc_weights x = {0};
	uint32_t m;
	int64_t li;

	if (q->f->on) {
		x.on_cpu_ns = w->on_cpu_ns;
		x.samples = w->samples;
	}
	if (q->f->off)
		x.off_cpu_ns = w->off_cpu_ns;
	if (q->f->runqueue)
		x.runqueue_ns = w->runqueue_ns;
	if (weights_zero(&x))
		return 0;
	m = q->map[node];
	if (m == LOCAL_FAIL)
		return 0;
	if (m) {
		li = m - 1;
	} else {
		li = query_resolve(q, node);
		if (li < 0)
			return (int)li;
		if (li == LOCAL_FAIL)
			return 0;
	}
	hc_weights__add(&q->w[li], &x);
	return 0;
}

static int query_bucket(struct query *q, const struct bucket *b)
{
	int err;

	if (b->w_open) {
		for (uint32_t k = 0; k < b->w_open->n; k++) {
			err = query_add(q, b->w_open->e[k].node, &b->w_open->e[k].w);
			if (err)
				return err;
		}
	} else if (b->w_enc) {
		const uint8_t *p = b->w_enc, *end = b->w_enc + b->w_len;
		uint64_t period_ns = q->st->o.period_ns;
		uint32_t node = 0;
		struct hc_weights w;

		while (p < end) {
			p = get_wentry(p, &node, &w, period_ns);
			err = query_add(q, node, &w);
			if (err)
				return err;
		}
	}
	return 0;
}

struct rank {
	uint64_t v;
	uint32_t node; /* trie id: tie-break, lower first (a parent before its children) */
	uint32_t li;
};

static inline bool rank_better(const struct rank *a, const struct rank *b)
{
	return a->v > b->v || (a->v == b->v && a->node < b->node);
}

static inline void rank_swap(struct rank *r, ptrdiff_t i, ptrdiff_t j)
{
	struct rank t = r[i];

	r[i] = r[j];
	r[j] = t;
}

/* Reorder r[0, n) so that r[0, k] are the k + 1 best (quickselect, median of three). */
static void rank_select(struct rank *r, ptrdiff_t n, ptrdiff_t k)
{
	ptrdiff_t lo = 0, hi = n - 1;

	while (hi > lo) {
		ptrdiff_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		struct rank p;

		if (rank_better(&r[hi], &r[lo]))
			rank_swap(r, lo, hi);
		if (rank_better(&r[mid], &r[lo]))
			rank_swap(r, mid, lo);
		if (rank_better(&r[hi], &r[mid]))
			rank_swap(r, mid, hi);
		p = r[mid];
		while (i <= j) {
			while (rank_better(&r[i], &p))
				i++;
			while (rank_better(&p, &r[j]))
				j--;
			if (i <= j) {
				rank_swap(r, i, j);
				i++;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return;
	}
}

static int query_build(struct query *q, struct hc_tree *out, struct hc_store_pruned *pruned)
{
	const struct hc_store_filter *f = q->f;
	uint8_t *keep = NULL;
	uint32_t *out_idx = NULL;
	struct rank *r = NULL;
	size_t cand = 0;
	int err = -ENOMEM;

	/* inclusive values: children have higher local indices than their parents */
	for (uint32_t i = q->n; i-- > 1;)
		hc_weights__add(&q->w[q->parent[i]], &q->w[i]);

	keep = calloc(q->n, 1);
	out_idx = malloc((size_t)q->n * sizeof(*out_idx));
	if (!keep || !out_idx)
		goto out;
	for (uint32_t i = 1; i < q->n; i++)
		cand += !weights_zero(&q->w[i]);
	keep[0] = 1;
	if (!f->max_nodes || cand + 1 <= f->max_nodes) {
		for (uint32_t i = 1; i < q->n; i++)
			keep[i] = !weights_zero(&q->w[i]);
	} else if (f->max_nodes > 1) {
		size_t k = 0;

		r = malloc(cand * sizeof(*r));
		if (!r)
			goto out;
		for (uint32_t i = 1; i < q->n; i++) {
			if (weights_zero(&q->w[i]))
				continue;
			r[k].v = hc_weights__value(&q->w[i]);
			r[k].node = q->node[i];
			r[k].li = i;
			k++;
		}
		rank_select(r, (ptrdiff_t)cand, (ptrdiff_t)f->max_nodes - 2);
		for (k = 0; k + 1 < f->max_nodes; k++)
			keep[r[k].li] = 1;
	}

	if (pruned) {
		pruned->nodes = 0;
		pruned->value_ns = 0;
		for (uint32_t i = 1; i < q->n; i++) {
			if (keep[i] || weights_zero(&q->w[i]))
				continue;
			pruned->nodes++;
			if (keep[q->parent[i]])
				pruned->value_ns += hc_weights__value(&q->w[i]);
		}
	}

	/* kept nodes carry their inclusive weights: what was folded stays in them as self */
	hc__tree_add_weights(out, 0, &q->w[0]);
	out_idx[0] = 0;
	for (uint32_t i = 1; i < q->n; i++) {
		const struct frame *fr;
		struct hc_path_elem e;
		int64_t idx;

		if (!keep[i])
			continue;
		fr = &q->st->frames[trie_frame(&q->st->trie, q->node[i]) - 1];
		e.kind = (enum hc_node_kind)fr->kind;
		e.name = fr->name;
		e.module = fr->module;
		e.id = fr->id;
		e.offset = fr->offset;
		e.inlined = fr->inlined;
		idx = hc__tree_add_child(out, out_idx[q->parent[i]], &e, &q->w[i]);
		if (idx < 0) {
			err = (int)idx;
			goto out;
		}
		out_idx[i] = (uint32_t)idx;
	}
	err = 0;
out:
	free(keep);
	free(out_idx);
	free(r);
	return err;
}

int hc_store__tree(const struct hc_store *st, const struct hc_store_filter *f, struct hc_tree *out,
		   struct hc_store_pruned *pruned)
{
	struct query q = {.st = st, .f = f};
	int err;

	if (!st || !f || !out)
		return -EINVAL;
	if (pruned)
		memset(pruned, 0, sizeof(*pruned));
	if (f->comm) {
		int64_t id = hc__store_sp_find(&st->sp, f->comm);

		if (id < 0)
			q.comm_absent = true;
		else
			q.comm = st->sp.strs[id];
	}
	q.map = calloc(st->trie.n, sizeof(*q.map));
	if (!q.map)
		return -ENOMEM;
	err = query_grow(&q);
	if (err)
		goto out;
	/* local 0 is the root */
	q.node[0] = 0;
	q.parent[0] = 0;
	memset(&q.w[0], 0, sizeof(q.w[0]));
	q.n = 1;

	if (f->from_s < f->to_s) {
		for (size_t i = bk_lower(st, f->from_s);
		     i < st->n_bk && st->bk[i]->start_s < f->to_s; i++) {
			err = query_bucket(&q, st->bk[i]);
			if (err)
				goto out;
		}
	}
	err = query_build(&q, out, pruned);
out:
	free(q.map);
	free(q.node);
	free(q.parent);
	free(q.w);
	return err;
}

/* ---- queries: timeline, heat, histograms ---- */

int hc_store__timeline(const struct hc_store *st, int64_t from_s, int64_t to_s, int64_t step_s,
		       struct hc_store_slot **out, size_t *n)
{
	struct hc_store_slot *s;
	uint64_t range, n_slots;

	if (!st || !out || !n || step_s <= 0 || from_s >= to_s)
		return -EINVAL;
	range = (uint64_t)to_s - (uint64_t)from_s;
	n_slots = range / (uint64_t)step_s + (range % (uint64_t)step_s != 0);
	if (n_slots > 100000)
		return -EINVAL;
	s = calloc(n_slots, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint64_t i = 0; i < n_slots; i++)
		s[i].t_s = from_s + (int64_t)i * step_s;
	for (size_t i = bk_lower(st, from_s); i < st->n_bk && st->bk[i]->start_s < to_s; i++) {
		const struct bucket *b = st->bk[i];
		struct hc_store_slot *slot =
			&s[((uint64_t)b->start_s - (uint64_t)from_s) / (uint64_t)step_s];

		slot->on_cpu_ns += b->total.on_cpu_ns;
		slot->off_cpu_ns += b->total.off_cpu_ns;
		slot->runqueue_ns += b->total.runqueue_ns;
		slot->samples += b->total.samples;
	}
	*out = s;
	*n = n_slots;
	return 0;
}

void hc_store__heat(const struct hc_store *st, int64_t sec, uint64_t rows[HC_STORE_HEAT_ROWS])
{
	const struct bucket *b;
	uint64_t first, pos, count;

	memset(rows, 0, HC_STORE_HEAT_ROWS * sizeof(*rows));
	if (!st)
		return;
	b = bk_containing(st, sec);
	if (!b)
		return;
	first = (uint64_t)(sec - b->start_s) * HC_STORE_HEAT_ROWS;
	if (b->heat_open) {
		memcpy(rows, b->heat_open + first, HC_STORE_HEAT_ROWS * sizeof(*rows));
	} else if (b->heat_enc) {
		HEAT_EACH(b->heat_enc, b->heat_len, pos, count, {
			if (pos >= first && pos < first + HC_STORE_HEAT_ROWS)
				rows[pos - first] = count;
		});
	}
}

struct hist_query {
	const struct hc_store *st;
	const struct hc_store_filter *f;
	uint8_t hist;
	int64_t comm_id;  /* -1: no comm filter; -2: comm never seen */
	struct htab *acc; /* (key, idx) -> count, pid and hist 0 */
};

static int hist_query_cb(void *ctx, const struct hcell *c)
{
	struct hist_query *hq = ctx;
	struct hcell x;

	if (c->hist != hq->hist)
		return 0;
	if (hq->f->has_pid || hq->f->comm) {
		if (c->pid == 0) /* per-CPU series */
			return 0;
		if (hq->f->has_pid && c->pid != hq->f->pid)
			return 0;
		if (hq->comm_id != -1 && (int64_t)c->key != hq->comm_id)
			return 0;
	}
	x.hist = 0;
	x.pid = 0;
	x.key = c->key;
	x.idx = c->idx;
	x.count = c->count;
	return hc__store_htab_add(hq->acc, &x);
}

struct hc_hist *hc_store__hist(const struct hc_store *st, enum hc_store_hist h,
			       const struct hc_store_filter *f)
{
	struct hist_query hq = {.st = st, .f = f, .comm_id = -1};
	struct hc_hist *out = NULL;
	int err;

	if (!st || !f || (unsigned int)h >= HC_STORE_H_MAX) {
		errno = EINVAL;
		return NULL;
	}
	hq.hist = (uint8_t)h;
	if (f->comm) {
		hq.comm_id = hc__store_sp_find(&st->sp, f->comm);
		if (hq.comm_id < 0)
			hq.comm_id = -2;
	}
	out = hist_new_shape(h);
	hq.acc = hc__store_htab_new();
	if (!out || !hq.acc) {
		err = -ENOMEM;
		goto err;
	}
	if (f->from_s < f->to_s && hq.comm_id != -2) {
		for (size_t i = bk_lower(st, f->from_s);
		     i < st->n_bk && st->bk[i]->start_s < f->to_s; i++) {
			err = hc__store_bucket_each_cell(st->bk[i], hist_query_cb, &hq);
			if (err)
				goto err;
		}
	}
	/* sorted, so that series are created in a stable order */
	if (hq.acc->n > 1)
		qsort(hq.acc->c, hq.acc->n, sizeof(*hq.acc->c), hc__store_hcell_cmp);
	for (uint32_t k = 0; k < hq.acc->n; k++) {
		const struct hcell *c = &hq.acc->c[k];
		int64_t min, max, value;
		bool has_min;

		hc_hist__bucket_bounds(st->shape[h], c->idx, &min, &max, &has_min, NULL);
		value = has_min ? min : max;
		err = hc_hist__add(out, st->sp.strs[c->key], value, c->count);
		if (err)
			goto err;
	}
	hc__store_htab_free(hq.acc);
	return out;

err:
	hc__store_htab_free(hq.acc);
	hc_hist__free(out);
	errno = -err;
	return NULL;
}

struct counter_query {
	uint8_t hist;
	struct htab *acc; /* key -> value, merged as the counter merges */
};

static int counter_query_cb(void *ctx, const struct hcell *c)
{
	struct counter_query *cq = ctx;

	if (c->hist != cq->hist)
		return 0;
	return hc__store_htab_add(cq->acc, c);
}

int hc_store__counter(const struct hc_store *st, enum hc_store_counter c,
		      const struct hc_store_filter *f,
		      int (*fn)(void *ctx, const char *key, uint64_t value), void *ctx)
{
	struct counter_query cq = {.hist = (uint8_t)(CELL_COUNTER + c)};
	int err = 0;

	if (!st || !f || !fn || (unsigned int)c >= HC_STORE_C_MAX)
		return -EINVAL;
	cq.acc = hc__store_htab_new();
	if (!cq.acc)
		return -ENOMEM;
	for (size_t i = f->from_s < f->to_s ? bk_lower(st, f->from_s) : st->n_bk;
	     i < st->n_bk && st->bk[i]->start_s < f->to_s && !err; i++)
		err = hc__store_bucket_each_cell(st->bk[i], counter_query_cb, &cq);
	if (!err && cq.acc->n > 1)
		qsort(cq.acc->c, cq.acc->n, sizeof(*cq.acc->c), hc__store_hcell_cmp);
	for (uint32_t k = 0; k < cq.acc->n && !err; k++)
		err = fn(ctx, st->sp.strs[cq.acc->c[k].key], cq.acc->c[k].count);
	hc__store_htab_free(cq.acc);
	return err;
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
	}
}
