// SPDX-License-Identifier: GPL-2.0-only
/*
 * serve's sink: what the capture pipeline hands over, as wire records. Frames get ids of
 * their own (one table for the profile store, one for the lock store), histogram
 * observations and lock contentions are summed per second and key, heat rows per second.
 */
#include "serve/sink.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/stacktab.h"
#include "profile/store.h"

/* Seconds of the heat map held before they are sent: samples arrive nearly in order. */
#define HEAT_SLOTS 8
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

_Static_assert(HC_CAPTURE_HEAT_ROWS == HC_WIRE_HEAT_ROWS, "a heat column is a wire record");

struct hc_serve_sink {
	bool locks;		   /* --locks: the lock store's frame table too */
	struct ftab ft, lft;	   /* frame ids: the main store's, the lock store's */
	struct hc_stacktab *cells; /* [sec, hist, pid, value, name0, name1] -> count (samples) */
	/* --locks: lock-node names, stable for the frame tables (the pipeline's own last until
	 * its flush); the contentions' counters since the last flush */
	struct hc_stacktab *label_keys; /* name bytes -> labels[] */
	char **labels;
	size_t n_labels, cap_labels;
	struct lock_cell *lcells;
	size_t n_lcells, cap_lcells, lcell_last;
	uint64_t lcell_errors; /* contentions not counted (out of memory) */
	uint64_t frame_resets;
	struct heat_col heat[HEAT_SLOTS];
	struct hc_wire_buf buf;
	uint32_t path[HC_WIRE_MAX_PATH];
};

static void add_cell(struct hc_serve_sink *c, int64_t sec, enum hc_store_hist h, uint32_t pid,
		     int64_t value, const char name[16], uint64_t count)
{
	uint64_t k[6] = {(uint64_t)sec, h, pid, (uint64_t)value, 0, 0};
	int64_t idx;

	memcpy(&k[4], name, 16);
	idx = hc_stacktab__intern(c->cells, k, 6);
	if (idx >= 0)
		hc_stacktab__weights(c->cells, (size_t)idx)->samples += count;
}

static int on_hist(void *ctx, const struct hc_capture_obs *o)
{
	add_cell(ctx, o->sec, o->hist, o->pid, o->value, o->name, o->count);
	return 0;
}

static struct lock_cell *lock_cell(struct hc_serve_sink *c, int64_t sec, uint32_t flags,
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

static int on_lock(void *ctx, const struct hc_capture_lock *l)
{
	struct hc_serve_sink *c = ctx;
	/* as record's histogram does: a wait beyond 2^63 - 1 ns is counted there */
	uint64_t qv = l->wait_ns > INT64_MAX ? INT64_MAX : l->wait_ns;
	struct lock_cell *lc = lock_cell(c, l->sec, l->flags, l->blocked);

	if (!lc) {
		c->lcell_errors++;
		return 0;
	}
	lc->count++;
	lc->wait_ns += l->wait_ns;
	if (l->wait_ns > lc->max_ns)
		lc->max_ns = l->wait_ns;
	lc->failed += l->failed;
	lc->no_stack += l->no_stack;
	lc->q[qv ? 64 - __builtin_clzll(qv) : 0]++;
	return 0;
}

static void add_heat(void *ctx, int64_t sec, unsigned int row)
{
	struct hc_serve_sink *c = ctx;
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

/* A lock node's name as a pointer that lives as long as the frame tables: the pipeline's
 * own go at its flush every second, and a freed name's address can come back with another name. */
static const char *stable_label(struct hc_serve_sink *c, const char *name)
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
static int64_t frame_id(struct hc_serve_sink *c, struct ftab *t, const struct hc_path_elem *e)
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

static int send_to(struct hc_serve_sink *c, struct ftab *t, const struct hc_path_elem *path,
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
	struct hc_serve_sink *c = ctx;

	return send_to(c, &c->ft, path, n, w, sec);
}

static int send_lock_path(void *ctx, const struct hc_path_elem *path, size_t n,
			  const struct hc_weights *w, int64_t sec)
{
	struct hc_serve_sink *c = ctx;

	return send_to(c, &c->lft, path, n, w, sec);
}

/* --locks: the contentions' counters and lock_wait_ns since the last flush. */
static void send_lock_cells(struct hc_serve_sink *c)
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
static int ftab_reset(struct hc_serve_sink *c, struct ftab *t)
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

int hc_serve_sink__begin(struct hc_serve_sink *c)
{
	if (c->n_labels >= LABELS_MAX) {
		struct hc_stacktab *keys = hc_stacktab__new();

		if (!keys || ftab_reset(c, &c->ft) || (c->locks && ftab_reset(c, &c->lft))) {
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
	if (c->locks && hc_stacktab__count(c->lft.frames) >= FRAMES_MAX && ftab_reset(c, &c->lft))
		return -ENOMEM;
	return 0;
}

/* The histogram cells and the heat columns of seconds that are over. */
static int send_cells(struct hc_serve_sink *c, int64_t now_s)
{
	struct hc_stacktab *cells = hc_stacktab__new();

	if (!cells)
		return -ENOMEM;
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
	for (int i = 0; i < HEAT_SLOTS; i++)
		if (c->heat[i].sec && c->heat[i].sec < now_s) {
			hc_wire__heat(&c->buf, c->heat[i].sec, c->heat[i].rows);
			memset(&c->heat[i], 0, sizeof(c->heat[i]));
		}
	return 0;
}

/* Exited processes: their maps are no longer needed once their seconds are sent (the frames
 * are resolved), every 10 s. */
struct hc_serve_sink *hc_serve_sink__new(bool locks)
{
	struct hc_serve_sink *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->locks = locks;
	c->ft.frames = hc_stacktab__new();
	c->ft.fcache = calloc(FCACHE_SLOTS, sizeof(*c->ft.fcache));
	c->cells = hc_stacktab__new();
	c->label_keys = hc_stacktab__new();
	if (!c->ft.frames || !c->ft.fcache || !c->cells || !c->label_keys)
		goto err_free;
	if (locks) {
		c->lft.lock = true;
		c->lft.frames = hc_stacktab__new();
		c->lft.fcache = calloc(FCACHE_SLOTS, sizeof(*c->lft.fcache));
		if (!c->lft.frames || !c->lft.fcache)
			goto err_free;
	}
	return c;

err_free:
	hc_serve_sink__free(c);
	errno = ENOMEM;
	return NULL;
}

void hc_serve_sink__free(struct hc_serve_sink *c)
{
	if (!c)
		return;
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
	hc_wire_buf__release(&c->buf);
	free(c);
}

struct hc_capture_sink hc_serve_sink__sink(struct hc_serve_sink *c)
{
	return (struct hc_capture_sink){
		.path = send_path,
		.lock_path = send_lock_path,
		.hist = on_hist,
		.lock = on_lock,
		.heat = add_heat,
		.ctx = c,
	};
}

int hc_serve_sink__end(struct hc_serve_sink *c, int64_t now_s)
{
	if (c->locks)
		send_lock_cells(c);
	return send_cells(c, now_s);
}

struct hc_wire_buf *hc_serve_sink__buf(struct hc_serve_sink *c)
{
	return &c->buf;
}

void hc_serve_sink__stats(const struct hc_serve_sink *c, struct hc_serve_sink_stats *out)
{
	out->frames = hc_stacktab__count(c->ft.frames);
	out->frame_resets = c->frame_resets;
	out->lock_cell_errors = c->lcell_errors;
}
