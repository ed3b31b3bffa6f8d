// SPDX-License-Identifier: GPL-2.0-only
#include "store/blob.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/varint.h"

#define BLOB_MAGIC0 'H'
#define BLOB_MAGIC1 'B'
#define BLOB_VERSION 1
/* A decoded blob larger than this is refused as damaged: a 1 min bucket of a busy server is
 * a few MiB. */
#define BLOB_MAX_RAW (256u << 20)
#define CELL_MAX_NS (HC_BLOB_COUNTER + HC_STORE_C_LOCK_MAX_NS)
#define HIST_CELLS (HC_BLOB_COUNTER + HC_STORE_C_MAX)

static struct hc_hist *shapes[HC_STORE_H_MAX];
static pthread_once_t shapes_once = PTHREAD_ONCE_INIT;

static void shapes_init(void)
{
	for (int h = 0; h < HC_STORE_H_MAX; h++)
		shapes[h] = hc_store_hist__new((enum hc_store_hist)h);
}

void hc_blob__init(struct hc_blob *b, int64_t t, uint64_t period_ns)
{
	memset(b, 0, sizeof(*b));
	b->t = t;
	b->period_ns = period_ns;
}

void hc_blob__release(struct hc_blob *b)
{
	free(b->e);
	free(b->slots);
	free(b->c);
	free(b->cslots);
	free(b->raw);
	free(b->tmp);
	ZSTD_freeDCtx(b->dctx);
	hc_interner__release(&b->keys);
	memset(b, 0, sizeof(*b));
}

bool hc_blob__empty(const struct hc_blob *b)
{
	if (b->n || b->nc)
		return false;
	for (int i = 0; i < HC_STORE_HEAT_ROWS; i++)
		if (b->heat[i])
			return false;
	return true;
}

size_t hc_blob__bytes(const struct hc_blob *b)
{
	return b->cap * sizeof(*b->e) + b->n_slots * 4 + b->capc * sizeof(*b->c) + b->n_cslots * 4 +
	       b->keys.cap * 16 + sizeof(*b);
}

static inline size_t entry_hash(uint32_t task, uint32_t stack)
{
	return (size_t)hc_hash_splitmix((uint64_t)task << 32 | stack);
}

/* slots sized for want + 1 entries at <= 0.5 load, holding the n there are; hash(arr, i)
 * hashes entry i. */
static int reserve(uint32_t **slots, size_t *n_slots, size_t n, size_t want,
		   size_t (*hash)(const void *, size_t), const void *arr)
{
	size_t cap = *n_slots ? *n_slots : 256;
	uint32_t *s;

	while (cap < 2 * (want + 1))
		cap *= 2;
	if (cap == *n_slots)
		return 0;
	s = hc_calloc_written(cap, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t j = hash(arr, i) & (cap - 1);

		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = (uint32_t)(i + 1);
	}
	free(*slots);
	*slots = s;
	*n_slots = cap;
	return 0;
}

static int rehash(uint32_t **slots, size_t *n_slots, size_t n, size_t (*hash)(const void *, size_t),
		  const void *arr)
{
	return reserve(slots, n_slots, n, n, hash, arr);
}

static size_t entry_hash_at(const void *arr, size_t i)
{
	const struct hc_blob_entry *e = arr;

	return entry_hash(e[i].task, e[i].stack);
}

static void weights_add(struct hc_weights *a, const struct hc_weights *w)
{
	a->on_cpu_ns += w->on_cpu_ns;
	a->off_cpu_ns += w->off_cpu_ns;
	a->runqueue_ns += w->runqueue_ns;
	a->samples += w->samples;
}

int hc_blob__add(struct hc_blob *b, uint32_t task, uint32_t stack, const struct hc_weights *w)
{
	size_t j;

	if (rehash(&b->slots, &b->n_slots, b->n, entry_hash_at, b->e))
		return -ENOMEM;
	for (j = entry_hash(task, stack) & (b->n_slots - 1); b->slots[j];
	     j = (j + 1) & (b->n_slots - 1)) {
		struct hc_blob_entry *e = &b->e[b->slots[j] - 1];

		if (e->task == task && e->stack == stack) {
			weights_add(&e->w, w);
			weights_add(&b->total, w);
			return 0;
		}
	}
	if (b->n == b->cap && hc_array_grow(b->e, b->cap, b->n + 1, 256))
		return -ENOMEM;
	b->e[b->n] = (struct hc_blob_entry){.task = task, .stack = stack, .w = *w};
	b->slots[j] = (uint32_t)++b->n;
	weights_add(&b->total, w);
	return 0;
}

int hc_blob__restack(struct hc_blob *b, const uint32_t *stack)
{
	struct hc_blob_entry *old = b->e;
	size_t n = b->n;
	int err = 0;

	b->e = NULL;
	b->n = b->cap = 0;
	if (b->slots)
		memset(b->slots, 0, b->n_slots * sizeof(*b->slots));
	b->total = (struct hc_weights){0};
	for (size_t i = 0; !err && i < n; i++)
		err = hc_blob__add(b, old[i].task, stack[i], &old[i].w);
	free(old);
	return err;
}

static inline size_t cell_hash(const struct hc_blob_cell *c)
{
	uint64_t k[2] = {(uint64_t)c->pid << 24 | (uint64_t)c->hist << 16 | c->idx,
			 (uintptr_t)c->key};

	return (size_t)hc_hash_words(k, 2, 7);
}

static size_t cell_hash_at(const void *arr, size_t i)
{
	return cell_hash(&((const struct hc_blob_cell *)arr)[i]);
}

int hc_blob__add_cell(struct hc_blob *b, uint8_t hist, uint32_t pid, const char *key, int64_t value,
		      uint64_t count)
{
	struct hc_blob_cell c = {.pid = pid, .hist = hist, .value = value, .count = count};
	size_t j;

	if (hist >= HIST_CELLS || !key)
		return -EINVAL;
	if (!count)
		return 0;
	pthread_once(&shapes_once, shapes_init);
	if (hist < HC_STORE_H_MAX) {
		if (!shapes[hist])
			return -ENOMEM;
		c.idx = (uint16_t)hc_hist__bucket_index(shapes[hist], value);
	} else {
		c.value = 0;
	}
	c.key = hc_interner__add_str(&b->keys, key);
	if (!c.key || rehash(&b->cslots, &b->n_cslots, b->nc, cell_hash_at, b->c))
		return -ENOMEM;
	for (j = cell_hash(&c) & (b->n_cslots - 1); b->cslots[j]; j = (j + 1) & (b->n_cslots - 1)) {
		struct hc_blob_cell *o = &b->c[b->cslots[j] - 1];

		if (o->pid == c.pid && o->hist == c.hist && o->idx == c.idx && o->key == c.key) {
			if (hist == CELL_MAX_NS)
				o->count = o->count > count ? o->count : count;
			else
				o->count += count;
			return 0;
		}
	}
	if (b->nc == b->capc && hc_array_grow(b->c, b->capc, b->nc + 1, 64))
		return -ENOMEM;
	b->c[b->nc] = c;
	b->cslots[j] = (uint32_t)++b->nc;
	return 0;
}

/*
 * e[0, n) summed into b. A long range sums a million entries into a table of a hundred
 * thousand: each add is a cache miss on its slot and another on the entry the slot names, so
 * the slots of the entries 2 x ADD_AHEAD ahead are asked for meanwhile, and the entries the
 * slots of those ADD_AHEAD ahead name (their slots are in the cache by then; the table is
 * grown first, so places stay put; an entry array moved since is only a wasted hint).
 */
#define ADD_AHEAD 8

static int add_many(struct hc_blob *b, const struct hc_blob_entry *e, size_t n)
{
	size_t mask;
	int err = 0;

	if (reserve(&b->slots, &b->n_slots, b->n, b->n + n, entry_hash_at, b->e))
		return -ENOMEM;
	mask = b->n_slots - 1;
	for (size_t i = 0; !err && i < n; i++) {
		if (i + 2 * ADD_AHEAD < n)
			__builtin_prefetch(&b->slots[entry_hash(e[i + 2 * ADD_AHEAD].task,
								e[i + 2 * ADD_AHEAD].stack) &
						     mask]);
		if (i + ADD_AHEAD < n) {
			uint32_t s =
				b->slots[entry_hash(e[i + ADD_AHEAD].task, e[i + ADD_AHEAD].stack) &
					 mask];

			if (s)
				__builtin_prefetch(&b->e[s - 1]);
		}
		err = hc_blob__add(b, e[i].task, e[i].stack, &e[i].w);
	}
	return err;
}

int hc_blob__add_blob(struct hc_blob *b, const struct hc_blob *src)
{
	int err = add_many(b, src->e, src->n);

	for (size_t i = 0; !err && i < src->nc; i++) {
		const struct hc_blob_cell *c = &src->c[i];

		err = hc_blob__add_cell(b, c->hist, c->pid, c->key, c->value, c->count);
	}
	for (int i = 0; !err && i < HC_STORE_HEAT_ROWS; i++)
		b->heat[i] += src->heat[i];
	return err;
}

/* ---- encoding ---- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

static void put_bytes(struct wbuf *w, const void *s, size_t n)
{
	if (w->oom)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		uint8_t *p;

		while (cap < w->len + n)
			cap *= 2;
		p = realloc(w->p, cap);
		if (!p) {
			w->oom = true;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

static void put_uv(struct wbuf *w, uint64_t v)
{
	uint8_t b[HC_VARINT_MAX];

	put_bytes(w, b, (size_t)(hc_varint_put(b, v) - b));
}

static int entry_cmp(const void *x, const void *y)
{
	const struct hc_blob_entry *a = x, *b = y;

	if (a->task != b->task)
		return a->task < b->task ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int cell_cmp(const void *x, const void *y)
{
	const struct hc_blob_cell *a = x, *b = y;
	int k;

	if (a->hist != b->hist)
		return a->hist < b->hist ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	k = strcmp(a->key, b->key);
	if (k)
		return k;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Columns, one after the other: varints of one kind compress together. */
static void encode_entries(struct wbuf *w, const struct hc_blob_entry *e, size_t n,
			   uint64_t period_ns)
{
	put_uv(w, n);
	for (size_t i = 0; i < n; i++)
		put_uv(w, e[i].task - (i ? e[i - 1].task : 0));
	for (size_t i = 0; i < n; i++)
		put_uv(w, i && e[i].task == e[i - 1].task
				  ? hc_zigzag((uint64_t)e[i].stack - e[i - 1].stack)
				  : e[i].stack);
	for (size_t i = 0; i < n; i++)
		put_uv(w, e[i].w.samples);
	for (size_t i = 0; i < n; i++)
		put_uv(w, hc_zigzag(e[i].w.on_cpu_ns - e[i].w.samples * period_ns));
	for (size_t i = 0; i < n; i++)
		put_uv(w, e[i].w.off_cpu_ns);
	for (size_t i = 0; i < n; i++)
		put_uv(w, e[i].w.runqueue_ns);
}

static void encode_cells(struct wbuf *w, const struct hc_blob_cell *c, size_t n)
{
	put_uv(w, n);
	for (size_t i = 0; i < n; i++) {
		size_t kl = strlen(c[i].key);

		put_uv(w, c[i].hist);
		put_uv(w, c[i].pid);
		put_uv(w, kl);
		put_bytes(w, c[i].key, kl);
		put_uv(w, hc_zigzag((uint64_t)c[i].value));
		put_uv(w, c[i].count);
	}
}

size_t hc_blob__compress(void **cctx, void *dst, size_t cap, const void *src, size_t len, int level)
{
	ZSTD_CCtx *cc = *cctx;
	size_t z;

	/* A context kept from one call to the next keeps its tables: a new one allocates (and
	 * faults in) them for every blob. */
	if (!cc && !(*cctx = cc = ZSTD_createCCtx()))
		return (size_t)-1;
	z = ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
	if (!ZSTD_isError(z))
		z = ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(z))
		z = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
	if (!ZSTD_isError(z))
		z = ZSTD_compress2(cc, dst, cap, src, len);
	return z;
}

void hc_blob__cctx_free(void *cctx)
{
	ZSTD_freeCCtx(cctx);
}

int hc_blob__encode(const struct hc_blob *b, void **cctx, int level, void **out, size_t *len)
{
	void *own = NULL;
	struct hc_blob_entry *e = NULL;
	struct hc_blob_cell *c = NULL;
	struct wbuf w = {0};
	uint8_t hdr[3] = {BLOB_MAGIC0, BLOB_MAGIC1, BLOB_VERSION};
	size_t bound, z, nheat = 0;
	void *zbuf;

	if ((b->n && !(e = malloc(b->n * sizeof(*e)))) ||
	    (b->nc && !(c = malloc(b->nc * sizeof(*c))))) {
		free(e);
		return -ENOMEM;
	}
	if (b->n) {
		memcpy(e, b->e, b->n * sizeof(*e));
		qsort(e, b->n, sizeof(*e), entry_cmp);
	}
	if (b->nc) {
		memcpy(c, b->c, b->nc * sizeof(*c));
		qsort(c, b->nc, sizeof(*c), cell_cmp);
	}
	put_bytes(&w, hdr, sizeof(hdr));
	put_uv(&w, b->period_ns);
	encode_entries(&w, e, b->n, b->period_ns);
	for (int i = 0; i < HC_STORE_HEAT_ROWS; i++)
		nheat += b->heat[i] != 0;
	put_uv(&w, nheat);
	for (int i = 0; i < HC_STORE_HEAT_ROWS; i++)
		if (b->heat[i]) {
			put_uv(&w, (uint64_t)i);
			put_uv(&w, b->heat[i]);
		}
	encode_cells(&w, c, b->nc);
	free(e);
	free(c);
	if (w.oom) {
		free(w.p);
		return -ENOMEM;
	}
	bound = ZSTD_compressBound(w.len);
	zbuf = malloc(bound);
	if (!zbuf) {
		free(w.p);
		return -ENOMEM;
	}
	z = hc_blob__compress(cctx ? cctx : &own, zbuf, bound, w.p, w.len, level);
	ZSTD_freeCCtx(own);
	free(w.p);
	if (ZSTD_isError(z)) {
		free(zbuf);
		return -ENOMEM;
	}
	*out = zbuf;
	*len = z;
	return 0;
}

/* ---- decoding ---- */

struct rbuf {
	const uint8_t *p, *end;
	bool bad;
};

static inline uint64_t get_uv(struct rbuf *r)
{
	uint64_t v = 0;
	const uint8_t *next;

	/* most are one byte: counts, deltas, small ids */
	if (!r->bad && r->p < r->end && *r->p < 0x80)
		return *r->p++;
	next = r->bad ? NULL : hc_varint_get_checked(r->p, r->end, &v);

	if (!next) {
		r->bad = true;
		return 0;
	}
	r->p = next;
	return v;
}

static int decode_entries(struct hc_blob *b, struct rbuf *r, uint64_t period_ns, bool keep)
{
	uint64_t n = get_uv(r);
	struct hc_blob_entry *e;
	int err = 0;

	/* every entry takes at least 6 bytes */
	if (r->bad || n > (uint64_t)(r->end - r->p) / 6)
		return -EBADMSG;
	if (n > b->tmp_cap) {
		e = realloc(b->tmp, n * sizeof(*e));
		if (!e)
			return -ENOMEM;
		b->tmp = e;
		b->tmp_cap = n;
	}
	e = b->tmp;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t d = get_uv(r);

		e[i].task = (uint32_t)((i ? e[i - 1].task : 0) + d);
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = get_uv(r);

		e[i].stack = i && e[i].task == e[i - 1].task
				     ? (uint32_t)(e[i - 1].stack + hc_unzigzag(v))
				     : (uint32_t)v;
	}
	for (uint64_t i = 0; i < n; i++)
		e[i].w.samples = get_uv(r);
	for (uint64_t i = 0; i < n; i++)
		e[i].w.on_cpu_ns = e[i].w.samples * period_ns + hc_unzigzag(get_uv(r));
	for (uint64_t i = 0; i < n; i++)
		e[i].w.off_cpu_ns = get_uv(r);
	for (uint64_t i = 0; i < n; i++)
		e[i].w.runqueue_ns = get_uv(r);
	if (r->bad)
		err = -EBADMSG;
	if (keep && !err)
		err = add_many(b, e, n);
	return err;
}

static int decode_cells(struct hc_blob *b, struct rbuf *r, bool keep)
{
	uint64_t n = get_uv(r);
	char key[HC_HIST_KEY_MAX + 1];
	int err = 0;

	if (r->bad || n > (uint64_t)(r->end - r->p) / 5)
		return -EBADMSG;
	for (uint64_t i = 0; i < n && !err; i++) {
		uint64_t hist = get_uv(r), pid = get_uv(r), kl = get_uv(r);
		int64_t value;
		uint64_t count;

		if (r->bad || hist >= HIST_CELLS || pid > UINT32_MAX || kl > HC_HIST_KEY_MAX ||
		    kl > (uint64_t)(r->end - r->p))
			return -EBADMSG;
		memcpy(key, r->p, kl);
		key[kl] = 0;
		r->p += kl;
		if (memchr(key, 0, kl))
			return -EBADMSG;
		value = (int64_t)hc_unzigzag(get_uv(r));
		count = get_uv(r);
		if (r->bad)
			return -EBADMSG;
		if (keep)
			err = hc_blob__add_cell(b, (uint8_t)hist, (uint32_t)pid, key, value, count);
	}
	return err;
}

int hc_blob__decode(struct hc_blob *b, const void *buf, size_t len, bool with_entries,
		    bool with_cells)
{
	unsigned long long raw_len = ZSTD_getFrameContentSize(buf, len);
	struct rbuf r;
	uint64_t period_ns, nheat;
	uint8_t *raw;
	size_t got;
	int err;

	if (raw_len == ZSTD_CONTENTSIZE_ERROR || raw_len == ZSTD_CONTENTSIZE_UNKNOWN ||
	    raw_len < 4 || raw_len > BLOB_MAX_RAW)
		return -EBADMSG;
	if (raw_len > b->raw_cap) {
		raw = realloc(b->raw, raw_len);
		if (!raw)
			return -ENOMEM;
		b->raw = raw;
		b->raw_cap = raw_len;
	}
	raw = b->raw;
	if (!b->dctx && !(b->dctx = ZSTD_createDCtx()))
		return -ENOMEM;
	got = ZSTD_decompressDCtx(b->dctx, raw, raw_len, buf, len);
	if (ZSTD_isError(got) || got != raw_len || raw[0] != BLOB_MAGIC0 || raw[1] != BLOB_MAGIC1 ||
	    raw[2] != BLOB_VERSION)
		return -EBADMSG;
	r = (struct rbuf){.p = raw + 3, .end = raw + raw_len};
	period_ns = get_uv(&r);
	err = r.bad ? -EBADMSG : decode_entries(b, &r, period_ns, with_entries);
	nheat = err ? 0 : get_uv(&r);
	if (!err && (r.bad || nheat > HC_STORE_HEAT_ROWS))
		err = -EBADMSG;
	for (uint64_t i = 0; !err && i < nheat; i++) {
		uint64_t row = get_uv(&r), count = get_uv(&r);

		if (r.bad || row >= HC_STORE_HEAT_ROWS)
			err = -EBADMSG;
		else
			b->heat[row] += count;
	}
	if (!err)
		err = decode_cells(b, &r, with_cells);
	if (!err && r.p != r.end)
		err = -EBADMSG;
	return err;
}
