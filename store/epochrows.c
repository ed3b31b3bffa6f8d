// SPDX-License-Identifier: GPL-2.0-only
/*
 * The dictionary rows of sealed epochs, kept between queries (store/epochrows.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "store/disk_int.h"
#include "store/epochrows.h"

int hc__epoch_cache_init(struct hc_epoch_cache *c, size_t max_bytes)
{
	memset(c, 0, sizeof(*c));
	c->max_bytes = max_bytes;
	return -pthread_mutex_init(&c->mu, NULL);
}

static void rows_free(struct hc_epoch_rows *e)
{
	if (!e)
		return;
	free(e->stacks);
	free(e->frames);
	free(e->pool);
	free(e);
}

void hc__epoch_cache_release(struct hc_epoch_cache *c)
{
	/* no query runs any more: every epoch is unreferenced */
	while (c->head) {
		struct hc_epoch_rows *e = c->head;

		c->head = e->next;
		rows_free(e);
	}
	pthread_mutex_destroy(&c->mu);
}

/* e out of the list (under mu); freed now when no query holds it, else by the last put. */
static void evict(struct hc_epoch_cache *c, struct hc_epoch_rows **link)
{
	struct hc_epoch_rows *e = *link;

	*link = e->next;
	e->next = NULL;
	e->cached = false;
	c->bytes -= e->bytes;
	if (!e->refs)
		rows_free(e);
}

static int stack_row(void *arg, uint32_t id, const struct hc_dict_stack *s)
{
	struct hc_epoch_rows *e = arg;

	e->stacks[id - e->stack_lo - 1] = (uint64_t)s->parent << 32 | s->frame;
	e->rows++;
	return 0;
}

/* s appended to the pool: its offset + 1 (0 for NULL); the module of the frame before is
 * reused when it is the same (frames of one module come in runs). */
static int pool_add(struct hc_epoch_rows *e, size_t *cap, const char *s, uint32_t prev,
		    uint32_t *out)
{
	size_t n;

	*out = 0;
	if (!s)
		return 0;
	if (prev && !strcmp(e->pool + prev - 1, s)) {
		*out = prev;
		return 0;
	}
	n = strlen(s) + 1;
	if (e->pool_len + n > UINT32_MAX - 1)
		return -EOVERFLOW;
	if (e->pool_len + n > *cap && hc_array_grow(e->pool, *cap, e->pool_len + n, 65536))
		return -ENOMEM;
	memcpy(e->pool + e->pool_len, s, n);
	*out = (uint32_t)e->pool_len + 1;
	e->pool_len += n;
	return 0;
}

static int read_frames(struct hc_epoch_rows *e, sqlite3 *db)
{
	sqlite3_stmt *st;
	uint32_t module = 0;
	size_t cap = 0;
	int rc, err = 0;

	if (sqlite3_prepare_v2(db,
			       "SELECT id, kind, name, module, fid, offset, inlined FROM frame"
			       " WHERE id > ? AND id <= ?",
			       -1, &st, NULL) != SQLITE_OK)
		return -hc__disk_sql_errno(sqlite3_errcode(db));
	sqlite3_bind_int64(st, 1, e->frame_lo);
	sqlite3_bind_int64(st, 2, e->frame_hi);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);
		struct hc_epoch_frame *f;
		struct dict_row r;

		if (id <= e->frame_lo || id > e->frame_hi)
			continue;
		hc__disk_row_read(HC_DICT_FRAMES, st, 1, &r);
		e->rows++;
		f = &e->frames[id - e->frame_lo - 1];
		*f = (struct hc_epoch_frame){.fid = r.frame.id,
					     .offset = r.frame.offset,
					     .kind = (uint8_t)r.frame.kind,
					     .inlined = r.frame.inlined};
		err = pool_add(e, &cap, r.frame.name ? r.frame.name : "", 0, &f->name);
		if (!err)
			err = pool_add(e, &cap, r.frame.module, module, &f->module);
		if (f->module)
			module = f->module;
	}
	if (!err && rc != SQLITE_DONE)
		err = -hc__disk_sql_errno(rc);
	sqlite3_finalize(st);
	return err;
}

/* An epoch's rows read from the file: NULL + errno. */
static struct hc_epoch_rows *rows_read(struct hc_stackrows *rows, sqlite3 *db, uint32_t stack_lo,
				       uint32_t stack_hi, uint32_t frame_lo, uint32_t frame_hi)
{
	struct hc_epoch_rows *e = calloc(1, sizeof(*e));
	size_t ns = stack_hi - stack_lo, nf = frame_hi - frame_lo;
	int err = -ENOMEM;

	if (!e)
		goto err;
	*e = (struct hc_epoch_rows){.stack_lo = stack_lo,
				    .stack_hi = stack_hi,
				    .frame_lo = frame_lo,
				    .frame_hi = frame_hi};
	e->stacks = calloc(ns ? ns : 1, sizeof(*e->stacks));
	e->frames = calloc(nf ? nf : 1, sizeof(*e->frames));
	if (!e->stacks || !e->frames)
		goto err;
	err = ns ? hc__stackrows_scan(rows, stack_lo, stack_hi, stack_row, e) : 0;
	if (!err && nf)
		err = read_frames(e, db);
	if (err)
		goto err;
	e->bytes = sizeof(*e) + ns * sizeof(*e->stacks) + nf * sizeof(*e->frames) + e->pool_len;
	return e;
err:
	rows_free(e);
	errno = -err;
	return NULL;
}

/* The kept epoch of those ids, NULL: none (under mu). */
static struct hc_epoch_rows *find(struct hc_epoch_cache *c, uint32_t stack_lo, uint32_t stack_hi,
				  uint32_t frame_lo, uint32_t frame_hi)
{
	struct hc_epoch_rows *e = c->head;

	while (e && !(e->stack_lo == stack_lo && e->stack_hi == stack_hi &&
		      e->frame_lo == frame_lo && e->frame_hi == frame_hi))
		e = e->next;
	return e;
}

struct hc_epoch_rows *hc__epoch_cache_get(struct hc_epoch_cache *c, struct hc_stackrows *rows,
					  sqlite3 *db, uint32_t stack_lo, uint32_t stack_hi,
					  uint32_t frame_lo, uint32_t frame_hi, bool keep,
					  uint64_t *read)
{
	struct hc_epoch_rows *e, **link;

	*read = 0;
	pthread_mutex_lock(&c->mu);
	e = find(c, stack_lo, stack_hi, frame_lo, frame_hi);
	if (e) {
		e->refs++;
		e->used = ++c->clock;
		c->hits++;
	} else {
		c->misses++;
	}
	pthread_mutex_unlock(&c->mu);
	if (e)
		return e;
	/* read outside the lock: other queries go on meanwhile */
	e = rows_read(rows, db, stack_lo, stack_hi, frame_lo, frame_hi);
	if (!e)
		return NULL;
	*read = e->rows;
	e->refs = 1;
	pthread_mutex_lock(&c->mu);
	/* not twice: another query may have read the same epoch meanwhile */
	if (keep && e->bytes <= c->max_bytes && !find(c, stack_lo, stack_hi, frame_lo, frame_hi)) {
		/* the least recently used first out, until it fits */
		while (c->bytes + e->bytes > c->max_bytes) {
			struct hc_epoch_rows **lru = NULL;

			for (link = &c->head; *link; link = &(*link)->next)
				if (!lru || (*link)->used < (*lru)->used)
					lru = link;
			evict(c, lru);
		}
		e->used = ++c->clock;
		e->cached = true;
		e->next = c->head;
		c->head = e;
		c->bytes += e->bytes;
	}
	pthread_mutex_unlock(&c->mu);
	return e;
}

void hc__epoch_cache_put(struct hc_epoch_cache *c, struct hc_epoch_rows *e)
{
	bool gone;

	if (!e)
		return;
	pthread_mutex_lock(&c->mu);
	gone = --e->refs == 0 && !e->cached;
	pthread_mutex_unlock(&c->mu);
	if (gone)
		rows_free(e);
}

void hc__epoch_cache_trim(struct hc_epoch_cache *c, uint32_t stack_base)
{
	pthread_mutex_lock(&c->mu);
	for (struct hc_epoch_rows **link = &c->head; *link;)
		if ((*link)->stack_lo < stack_base)
			evict(c, link);
		else
			link = &(*link)->next;
	pthread_mutex_unlock(&c->mu);
}

bool hc__epoch_rows_frame(const struct hc_epoch_rows *e, uint32_t id, struct hc_path_elem *out)
{
	const struct hc_epoch_frame *f;

	if (id <= e->frame_lo || id > e->frame_hi)
		return false;
	f = &e->frames[id - e->frame_lo - 1];
	if (!f->name)
		return false;
	*out = (struct hc_path_elem){.kind = (enum hc_node_kind)f->kind,
				     .name = e->pool + f->name - 1,
				     .module = f->module ? e->pool + f->module - 1 : NULL,
				     .id = f->fid,
				     .offset = f->offset,
				     .inlined = f->inlined};
	return true;
}

void hc__epoch_cache_stats(struct hc_epoch_cache *c, uint64_t *bytes, uint64_t *hits,
			   uint64_t *misses)
{
	pthread_mutex_lock(&c->mu);
	*bytes = c->bytes;
	*hits = c->hits;
	*misses = c->misses;
	pthread_mutex_unlock(&c->mu);
}
