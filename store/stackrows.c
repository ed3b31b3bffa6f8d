// SPDX-License-Identifier: GPL-2.0-only
#include "store/stackrows.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "base/array.h"
#include "base/varint.h"
#include "store/disk_int.h"

#define CHUNK_MAGIC 'S'
/* A row's varints take at most 5 + 5 bytes (ids are 32-bit). */
#define ROW_MAX_BYTES 10u
/* Packing: a pass is due when the fresh keys (or the stale ones) pass this many and an
 * eighth of the packed ones; it goes through the slots this many at a time. */
#define PACK_MIN_DUE 16384u
#define PACK_SLOTS_PER_STEP 256u
#define SLOT_MASK ((1u << HC_STACKROWS_SLOT_BITS) - 1)

const char hc__stackrows_schema[] =
	"CREATE TABLE IF NOT EXISTS stack_chunk(last INTEGER PRIMARY KEY, n INTEGER, data BLOB);"
	"CREATE TABLE IF NOT EXISTS stack_key(h INTEGER, id INTEGER, PRIMARY KEY(h, id))"
	" WITHOUT ROWID;"
	"CREATE TABLE IF NOT EXISTS stack_keypack(slot INTEGER PRIMARY KEY, n INTEGER, data BLOB);";

uint32_t hc__stackrows_hash(uint32_t parent, uint32_t frame)
{
	/* splitmix64's finalizer, written out here: the file keeps these values */
	uint64_t x = (uint64_t)parent << 32 | frame;

	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	x ^= x >> 31;
	return (uint32_t)(x >> 33);
}

void hc__stackrows_init(struct hc_stackrows *r, sqlite3 *db)
{
	memset(r, 0, sizeof(*r));
	r->db = db;
}

void hc__stackrows_release(struct hc_stackrows *r)
{
	sqlite3_finalize(r->get);
	sqlite3_finalize(r->scan);
	sqlite3_finalize(r->key);
	sqlite3_finalize(r->pack);
	free(r->v);
	free(r->raw);
	ZSTD_freeDCtx(r->dctx);
	memset(r, 0, sizeof(*r));
}

void hc__stackrows_forget(struct hc_stackrows *r)
{
	r->lo = r->hi = 0;
}

static int prepare(sqlite3 *db, sqlite3_stmt **st, const char *sql)
{
	if (*st) {
		sqlite3_reset(*st);
		return 0;
	}
	if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL) != SQLITE_OK)
		return -hc__disk_sql_errno(sqlite3_errcode(db));
	return 0;
}

/* ---- chunks ---- */

/* Decode the chunk of rows (last - n, last] in st's columns 0-2 into the cache. */
static int decode_chunk(struct hc_stackrows *r, sqlite3_stmt *st)
{
	int64_t last = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1);
	const void *buf = sqlite3_column_blob(st, 2);
	size_t len = (size_t)sqlite3_column_bytes(st, 2), got;
	unsigned long long raw_len;
	const uint8_t *p, *end;

	r->lo = r->hi = 0;
	if (n <= 0 || n > (int64_t)HC_STACKROWS_CHUNK_MAX || last < n || last > UINT32_MAX || !buf)
		return -EBADMSG;
	raw_len = ZSTD_getFrameContentSize(buf, len);
	if (raw_len == ZSTD_CONTENTSIZE_ERROR || raw_len == ZSTD_CONTENTSIZE_UNKNOWN ||
	    raw_len < 1 + 2 * (unsigned long long)n ||
	    raw_len > 1 + ROW_MAX_BYTES * (unsigned long long)n)
		return -EBADMSG;
	if (raw_len > r->raw_cap) {
		uint8_t *nr = realloc(r->raw, raw_len);

		if (!nr)
			return -ENOMEM;
		r->raw = nr;
		r->raw_cap = raw_len;
	}
	if ((size_t)n > r->cap && hc_array_grow(r->v, r->cap, (size_t)n, 256))
		return -ENOMEM;
	if (!r->dctx && !(r->dctx = ZSTD_createDCtx()))
		return -ENOMEM;
	got = ZSTD_decompressDCtx(r->dctx, r->raw, raw_len, buf, len);
	if (ZSTD_isError(got) || got != raw_len || r->raw[0] != CHUNK_MAGIC)
		return -EBADMSG;
	p = r->raw + 1;
	end = r->raw + raw_len;
	for (int64_t i = 0; i < n; i++) {
		uint64_t id = (uint64_t)(last - n + 1 + i), up, frame;

		p = hc_varint_get_checked(p, end, &up);
		if (p)
			p = hc_varint_get_checked(p, end, &frame);
		if (!p || frame > UINT32_MAX)
			return -EBADMSG;
		/* 0: no parent; else the parent is id minus the zigzagged difference */
		up = up ? id - hc_unzigzag(up) : 0;
		if (up >= id && up)
			return -EBADMSG;
		r->v[i] = (struct hc_dict_stack){.parent = (uint32_t)up, .frame = (uint32_t)frame};
	}
	if (p != end)
		return -EBADMSG;
	r->lo = (uint32_t)(last - n);
	r->hi = (uint32_t)last;
	r->chunks_read++;
	return 0;
}

int hc__stackrows_get(struct hc_stackrows *r, uint32_t id, struct hc_dict_stack *out)
{
	int rc, err;

	if (id > r->lo && id <= r->hi) {
		*out = r->v[id - r->lo - 1];
		return 0;
	}
	err = prepare(
		r->db, &r->get,
		"SELECT last, n, data FROM stack_chunk WHERE last >= ? ORDER BY last LIMIT 1");
	if (err)
		return err;
	sqlite3_bind_int64(r->get, 1, id);
	rc = sqlite3_step(r->get);
	if (rc == SQLITE_ROW &&
	    sqlite3_column_int64(r->get, 0) - sqlite3_column_int64(r->get, 1) < id) {
		err = decode_chunk(r, r->get);
		if (!err)
			*out = r->v[id - r->lo - 1];
	} else {
		err = rc == SQLITE_ROW || rc == SQLITE_DONE ? -ENOENT : -hc__disk_sql_errno(rc);
	}
	/* left stepped, the statement would hold a read transaction open */
	sqlite3_reset(r->get);
	return err;
}

int hc__stackrows_scan(struct hc_stackrows *r, uint32_t lo, uint32_t hi,
		       int (*fn)(void *arg, uint32_t id, const struct hc_dict_stack *row),
		       void *arg)
{
	int rc, err;

	if (hi <= lo)
		return 0;
	err = prepare(r->db, &r->scan,
		      "SELECT last, n, data FROM stack_chunk WHERE last > ? ORDER BY last");
	if (err)
		return err;
	sqlite3_bind_int64(r->scan, 1, lo);
	while (!err && (rc = sqlite3_step(r->scan)) == SQLITE_ROW) {
		if (sqlite3_column_int64(r->scan, 0) - sqlite3_column_int64(r->scan, 1) >= hi)
			break;
		err = decode_chunk(r, r->scan);
		for (uint32_t id = r->lo > lo ? r->lo + 1 : lo + 1; !err && id <= r->hi && id <= hi;
		     id++)
			err = fn(arg, id, &r->v[id - r->lo - 1]);
	}
	if (!err && rc != SQLITE_ROW && rc != SQLITE_DONE)
		err = -hc__disk_sql_errno(rc);
	sqlite3_reset(r->scan);
	return err;
}

/* The encoded chunk of rows[0..n) (ids first + 1..): *out malloc'd. */
static int encode_chunk(void **cctx, uint32_t first, const struct hc_dict_stack *rows, size_t n,
			void **out, size_t *len)
{
	uint8_t *raw = malloc(1 + ROW_MAX_BYTES * n), *p = raw;
	size_t cap = ZSTD_compressBound(1 + ROW_MAX_BYTES * n), z;
	void *dst = malloc(cap);

	if (!raw || !dst) {
		free(raw);
		free(dst);
		return -ENOMEM;
	}
	*p++ = CHUNK_MAGIC;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = (uint64_t)first + 1 + i;

		p = hc_varint_put(p, rows[i].parent ? hc_zigzag(id - rows[i].parent) : 0);
		p = hc_varint_put(p, rows[i].frame);
	}
	z = hc_blob__compress(cctx, dst, cap, raw, (size_t)(p - raw), 3);
	free(raw);
	if (ZSTD_isError(z)) {
		free(dst);
		return -ENOMEM;
	}
	*out = dst;
	*len = z;
	return 0;
}

int hc__stackrows_put(sqlite3 *db, void **cctx, uint32_t first, const struct hc_dict_stack *rows,
		      size_t n, bool with_keys)
{
	sqlite3_stmt *ins = NULL, *key = NULL;
	int err = 0;

	if (!n)
		return 0;
	if (sqlite3_prepare_v2(db, "INSERT INTO stack_chunk VALUES(?,?,?)", -1, &ins, NULL) !=
		    SQLITE_OK ||
	    (with_keys && sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO stack_key VALUES(?,?)", -1,
					     &key, NULL) != SQLITE_OK))
		err = -hc__disk_sql_errno(sqlite3_errcode(db));
	for (size_t at = 0; !err && at < n; at += HC_STACKROWS_CHUNK_MAX) {
		size_t k = n - at < HC_STACKROWS_CHUNK_MAX ? n - at : HC_STACKROWS_CHUNK_MAX;
		uint32_t base = first + (uint32_t)at;
		void *data;
		size_t len;

		err = encode_chunk(cctx, base, rows + at, k, &data, &len);
		if (err)
			break;
		sqlite3_bind_int64(ins, 1, (int64_t)base + (int64_t)k);
		sqlite3_bind_int64(ins, 2, (int64_t)k);
		sqlite3_bind_blob(ins, 3, data, (int)len, SQLITE_STATIC);
		if (sqlite3_step(ins) != SQLITE_DONE)
			err = -hc__disk_sql_errno(sqlite3_errcode(db));
		sqlite3_reset(ins);
		free(data);
		for (size_t i = 0; with_keys && !err && i < k; i++) {
			sqlite3_bind_int64(
				key, 1,
				hc__stackrows_hash(rows[at + i].parent, rows[at + i].frame));
			sqlite3_bind_int64(key, 2, (int64_t)base + 1 + (int64_t)i);
			if (sqlite3_step(key) != SQLITE_DONE)
				err = -hc__disk_sql_errno(sqlite3_errcode(db));
			sqlite3_reset(key);
		}
	}
	sqlite3_finalize(ins);
	sqlite3_finalize(key);
	return err;
}

static int64_t query_i64(sqlite3 *db, const char *sql, int64_t a, int64_t b, int *err)
{
	sqlite3_stmt *st;
	int64_t v = 0;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		*err = -hc__disk_sql_errno(sqlite3_errcode(db));
		return 0;
	}
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		*err = -hc__disk_sql_errno(rc);
	sqlite3_finalize(st);
	return v;
}

static int exec2(sqlite3 *db, const char *sql, int64_t a, int64_t b)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -hc__disk_sql_errno(sqlite3_errcode(db));
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	rc = sqlite3_step(st);
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -hc__disk_sql_errno(rc);
}

int hc__stackrows_drop(sqlite3 *db, uint32_t below, uint64_t *rows)
{
	int err = 0;
	int64_t n = query_i64(db, "SELECT coalesce(sum(n), 0) FROM stack_chunk WHERE last <= ?1",
			      below, 0, &err);

	if (!err && n)
		err = exec2(db, "DELETE FROM stack_chunk WHERE last <= ?1", below, 0);
	*rows = err ? 0 : (uint64_t)n;
	return err;
}

struct collect {
	struct hc_dict_stack *v;
	size_t n, cap;
	uint32_t next; /* the id the next row should have */
	bool gap;
};

static int collect_row(void *arg, uint32_t id, const struct hc_dict_stack *row)
{
	struct collect *c = arg;

	if (id != c->next)
		c->gap = true;
	c->next = id + 1;
	if (c->n == c->cap && hc_array_grow(c->v, c->cap, c->n + 1, 1024))
		return -ENOMEM;
	c->v[c->n++] = *row;
	return 0;
}

int hc__stackrows_compact(sqlite3 *db, void **cctx, uint32_t lo, uint32_t hi, uint64_t *merged)
{
	struct collect c = {.next = lo + 1};
	struct hc_stackrows r;
	int err = 0;
	int64_t chunks =
		query_i64(db, "SELECT count(*) FROM stack_chunk WHERE last > ?1 AND last <= ?2", lo,
			  hi, &err);

	*merged = 0;
	if (err ||
	    (uint64_t)chunks <= (hi - lo + HC_STACKROWS_CHUNK_MAX - 1) / HC_STACKROWS_CHUNK_MAX)
		return err;
	hc__stackrows_init(&r, db);
	err = hc__stackrows_scan(&r, lo, hi, collect_row, &c);
	hc__stackrows_release(&r);
	/* only a whole range of ids: a chunk of the range that does not decode stays as it is */
	if (!err && !c.gap && c.n == hi - lo) {
		err = exec2(db, "DELETE FROM stack_chunk WHERE last > ?1 AND last <= ?2", lo, hi);
		if (!err)
			err = hc__stackrows_put(db, cctx, lo, c.v, c.n, false);
		if (!err)
			*merged = (uint64_t)chunks;
	}
	free(c.v);
	return err == -EBADMSG ? 0 : err;
}

/* ---- keys ---- */

struct key {
	uint32_t low, id;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* A pack's keys appended to *v (a damaged pack yields what decoded before the damage). */
static int pack_decode(const void *buf, size_t len, struct key **v, size_t *n, size_t *cap)
{
	const uint8_t *p = buf, *end = p + len;
	uint64_t low = 0;

	while (p && p < end) {
		uint64_t d, id;

		p = hc_varint_get_checked(p, end, &d);
		if (p)
			p = hc_varint_get_checked(p, end, &id);
		if (!p || (low += d) > SLOT_MASK || id > UINT32_MAX)
			break;
		if (*n == *cap && hc_array_grow(*v, *cap, *n + 1, 256))
			return -ENOMEM;
		(*v)[(*n)++] = (struct key){.low = (uint32_t)low, .id = (uint32_t)id};
	}
	return 0;
}

static int id_desc(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x > y ? -1 : x < y;
}

int64_t hc__stackrows_find(struct hc_stackrows *r, uint32_t parent, uint32_t frame, uint32_t above)
{
	uint32_t h = hc__stackrows_hash(parent, frame), *ids = NULL;
	size_t n = 0, cap = 0, nk = 0, capk = 0;
	struct key *keys = NULL;
	int64_t found = 0;
	int rc, err;

	err = prepare(r->db, &r->key, "SELECT id FROM stack_key WHERE h = ?1 AND id > ?2");
	if (!err) {
		sqlite3_bind_int64(r->key, 1, h);
		sqlite3_bind_int64(r->key, 2, above);
		while (!err && (rc = sqlite3_step(r->key)) == SQLITE_ROW) {
			if (n == cap && hc_array_grow(ids, cap, n + 1, 8))
				err = -ENOMEM;
			else
				ids[n++] = (uint32_t)sqlite3_column_int64(r->key, 0);
		}
		if (!err && rc != SQLITE_DONE)
			err = -hc__disk_sql_errno(rc);
		sqlite3_reset(r->key);
	}
	if (!err)
		err = prepare(r->db, &r->pack, "SELECT data FROM stack_keypack WHERE slot = ?1");
	if (!err) {
		sqlite3_bind_int64(r->pack, 1, h >> HC_STACKROWS_SLOT_BITS);
		rc = sqlite3_step(r->pack);
		if (rc == SQLITE_ROW)
			err = pack_decode(sqlite3_column_blob(r->pack, 0),
					  (size_t)sqlite3_column_bytes(r->pack, 0), &keys, &nk,
					  &capk);
		else if (rc != SQLITE_DONE)
			err = -hc__disk_sql_errno(rc);
		sqlite3_reset(r->pack);
	}
	for (size_t i = 0; !err && i < nk; i++) {
		if (keys[i].low != (h & SLOT_MASK) || keys[i].id <= above)
			continue;
		if (n == cap && hc_array_grow(ids, cap, n + 1, 8))
			err = -ENOMEM;
		else
			ids[n++] = keys[i].id;
	}
	if (n > 1)
		qsort(ids, n, sizeof(*ids), id_desc);
	/* the newest row with that content: the keys only say where to look */
	for (size_t i = 0; !err && !found && i < n; i++) {
		struct hc_dict_stack s;

		if (i && ids[i] == ids[i - 1])
			continue;
		rc = hc__stackrows_get(r, ids[i], &s);
		if (!rc && s.parent == parent && s.frame == frame)
			found = ids[i];
		else if (rc && rc != -ENOENT && rc != -EBADMSG)
			err = rc;
	}
	free(ids);
	free(keys);
	return err ? err : found;
}

/* ---- packing ---- */

int hc__stackrows_pack_open(sqlite3 *db, struct hc_stackrows_packer *p)
{
	int err = 0;

	memset(p, 0, sizeof(*p));
	p->fresh = (uint64_t)query_i64(db, "SELECT count(*) FROM stack_key", 0, 0, &err);
	if (!err)
		p->packed = (uint64_t)query_i64(db, "SELECT coalesce(sum(n), 0) FROM stack_keypack",
						0, 0, &err);
	return err;
}

static bool pack_due(const struct hc_stackrows_packer *p)
{
	uint64_t at = p->packed / 8 > PACK_MIN_DUE ? p->packed / 8 : PACK_MIN_DUE;

	return p->fresh >= at || p->stale >= at;
}

/* Write slot's keys v[0..n) (sorted, unique), or delete its pack when none. */
static int pack_write(sqlite3_stmt *put, sqlite3_stmt *del, uint32_t slot, const struct key *v,
		      size_t n, uint8_t **buf, size_t *cap)
{
	uint8_t *p;
	uint32_t low = 0;
	int rc;

	if (!n) {
		sqlite3_bind_int64(del, 1, slot);
		rc = sqlite3_step(del);
		sqlite3_reset(del);
		return rc == SQLITE_DONE ? 0 : -hc__disk_sql_errno(rc);
	}
	if (n * ROW_MAX_BYTES > *cap && hc_array_grow(*buf, *cap, n * ROW_MAX_BYTES, 4096))
		return -ENOMEM;
	p = *buf;
	for (size_t i = 0; i < n; i++) {
		p = hc_varint_put(p, v[i].low - low);
		p = hc_varint_put(p, v[i].id);
		low = v[i].low;
	}
	sqlite3_bind_int64(put, 1, slot);
	sqlite3_bind_int64(put, 2, (int64_t)n);
	sqlite3_bind_blob(put, 3, *buf, (int)(p - *buf), SQLITE_STATIC);
	rc = sqlite3_step(put);
	sqlite3_reset(put);
	return rc == SQLITE_DONE ? 0 : -hc__disk_sql_errno(rc);
}

/* Slots [s0, s0 + PACK_SLOTS_PER_STEP): each pack merged with the fresh keys of its slot. */
static int pack_slots(sqlite3 *db, struct hc_stackrows_packer *p, uint32_t s0)
{
	sqlite3_stmt *fresh = NULL, *packs = NULL, *put = NULL, *del = NULL;
	struct {
		struct key *v;
		size_t n, cap;
	} f = {0}, k = {0};
	uint64_t old_n[PACK_SLOTS_PER_STEP] = {0};
	uint8_t *buf = NULL;
	size_t bcap = 0, fi = 0;
	int64_t h0 = (int64_t)s0 << HC_STACKROWS_SLOT_BITS, h1 = (int64_t)(s0 + PACK_SLOTS_PER_STEP)
								 << HC_STACKROWS_SLOT_BITS;
	int rc, err = 0;

	/* read first, then write: SQLite does not promise what a cursor sees of rows the same
	 * connection changes under it */
	if (sqlite3_prepare_v2(db,
			       "SELECT h, id FROM stack_key WHERE h >= ?1 AND h < ?2 ORDER BY h",
			       -1, &fresh, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db,
			       "SELECT slot, n, data FROM stack_keypack WHERE slot >= ?1 AND"
			       " slot < ?2",
			       -1, &packs, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO stack_keypack VALUES(?,?,?)", -1, &put,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "DELETE FROM stack_keypack WHERE slot = ?", -1, &del, NULL) !=
		    SQLITE_OK) {
		err = -hc__disk_sql_errno(sqlite3_errcode(db));
		goto out;
	}
	sqlite3_bind_int64(fresh, 1, h0);
	sqlite3_bind_int64(fresh, 2, h1);
	while (!err && (rc = sqlite3_step(fresh)) == SQLITE_ROW) {
		int64_t h = sqlite3_column_int64(fresh, 0);

		if (h < h0 || h >= h1)
			continue;
		if (f.n == f.cap && hc_array_grow(f.v, f.cap, f.n + 1, 1024))
			err = -ENOMEM;
		else
			f.v[f.n++] = (struct key){.low = (uint32_t)h, /* the whole hash, for now */
						  .id = (uint32_t)sqlite3_column_int64(fresh, 1)};
	}
	if (!err && rc != SQLITE_DONE)
		err = -hc__disk_sql_errno(rc);
	sqlite3_reset(fresh);
	/* every slot's pack, each slot's keys kept apart by their slot in .low's high bits */
	sqlite3_bind_int64(packs, 1, s0);
	sqlite3_bind_int64(packs, 2, s0 + PACK_SLOTS_PER_STEP);
	while (!err && (rc = sqlite3_step(packs)) == SQLITE_ROW) {
		int64_t slot = sqlite3_column_int64(packs, 0);
		size_t from = k.n;

		if (slot < s0 || slot >= s0 + PACK_SLOTS_PER_STEP)
			continue;
		old_n[slot - s0] = (uint64_t)sqlite3_column_int64(packs, 1);
		err = pack_decode(sqlite3_column_blob(packs, 2),
				  (size_t)sqlite3_column_bytes(packs, 2), &k.v, &k.n, &k.cap);
		for (size_t i = from; i < k.n; i++)
			k.v[i].low |= (uint32_t)slot << HC_STACKROWS_SLOT_BITS;
	}
	if (!err && rc != SQLITE_DONE)
		err = -hc__disk_sql_errno(rc);
	sqlite3_reset(packs);
	/* both together, sorted by hash and id; the keys of deleted rows dropped */
	for (size_t i = 0; !err && i < f.n; i++) {
		if (k.n == k.cap && hc_array_grow(k.v, k.cap, k.n + 1, 1024))
			err = -ENOMEM;
		else
			k.v[k.n++] = f.v[i];
	}
	if (!err && k.n > 1)
		qsort(k.v, k.n, sizeof(*k.v), key_cmp);
	for (uint32_t s = 0; !err && s < PACK_SLOTS_PER_STEP; s++) {
		uint32_t slot = s0 + s;
		size_t from = fi, out = fi;

		while (fi < k.n && k.v[fi].low >> HC_STACKROWS_SLOT_BITS == slot)
			fi++;
		for (size_t i = from; i < fi; i++) {
			if (k.v[i].id <= p->floor ||
			    (out > from && k.v[out - 1].low == k.v[i].low &&
			     k.v[out - 1].id == k.v[i].id))
				continue;
			k.v[out] = k.v[i];
			k.v[out++].low &= SLOT_MASK;
		}
		if (out - from == old_n[s] && fi - from == old_n[s])
			continue; /* unchanged */
		err = pack_write(put, del, slot, k.v + from, out - from, &buf, &bcap);
		if (!err) {
			p->dropped += (fi - from) - (out - from);
			p->packed += out - from;
			p->packed -= old_n[s] < p->packed ? old_n[s] : p->packed;
		}
	}
	if (!err)
		err = exec2(db, "DELETE FROM stack_key WHERE h >= ?1 AND h < ?2", h0, h1);
	if (!err) {
		p->moved += f.n;
		p->fresh -= f.n < p->fresh ? f.n : p->fresh;
	}
out:
	sqlite3_finalize(fresh);
	sqlite3_finalize(packs);
	sqlite3_finalize(put);
	sqlite3_finalize(del);
	free(f.v);
	free(k.v);
	free(buf);
	return err;
}

int hc__stackrows_pack_step(sqlite3 *db, struct hc_stackrows_packer *p, uint32_t floor)
{
	int err;

	if (!p->next) {
		if (!pack_due(p))
			return 0;
		p->floor = floor;
		p->stale = 0;
	}
	err = pack_slots(db, p, p->next);
	if (err)
		return err;
	p->next += PACK_SLOTS_PER_STEP;
	if (p->next >= HC_STACKROWS_SLOTS) {
		p->next = 0;
		p->passes++;
	}
	return 0;
}
