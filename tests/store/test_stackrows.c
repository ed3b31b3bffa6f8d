// SPDX-License-Identifier: GPL-2.0-only
/*
 * store/stackrows: the dictionary's stack rows as chunks, and the content keys recall finds
 * them by, on a real SQLite file: rows read back by id and by range, the newest row of a
 * content found (a colliding or stale key never answers), deleted rows' keys dropped by
 * packing, small chunks merged, a damaged chunk refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <zstd.h>

#include "store/stackrows.h"

struct fixture {
	char dir[64];
	char path[96];
	sqlite3 *db;
	void *cctx;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/hc-stackrows-XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->path, sizeof(fx->path), "%s/rows.db", fx->dir);
	assert_int_equal(sqlite3_open(fx->path, &fx->db), SQLITE_OK);
	/* as serve's writer: WAL; no fsync per statement in a test */
	assert_int_equal(sqlite3_exec(fx->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_exec(fx->db, hc__stackrows_schema, NULL, NULL, NULL), SQLITE_OK);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	char wal[128];

	sqlite3_close(fx->db);
	snprintf(wal, sizeof(wal), "%s-wal", fx->path);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", fx->path);
	unlink(wal);
	unlink(fx->path);
	rmdir(fx->dir);
	ZSTD_freeCCtx(fx->cctx);
	free(fx);
	return 0;
}

static int64_t sql_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int64_t v = -1;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Row i of the test's trie, id i: parents of every distance, none for every 7th. */
static struct hc_dict_stack row_of(uint32_t id)
{
	return (struct hc_dict_stack){.parent = id % 7 == 0 ? 0 : id - 1 - (id * 2654435761u) % id,
				      .frame = (id * 40503u) % 100000u + 1};
}

static void put_rows(struct fixture *fx, uint32_t first, size_t n)
{
	struct hc_dict_stack *v = malloc(n * sizeof(*v));

	assert_non_null(v);
	for (size_t i = 0; i < n; i++)
		v[i] = row_of(first + 1 + (uint32_t)i);
	assert_int_equal(sqlite3_exec(fx->db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(hc__stackrows_put(fx->db, &fx->cctx, first, v, n, true), 0);
	assert_int_equal(sqlite3_exec(fx->db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	free(v);
}

struct scan {
	uint32_t next, last;
	size_t n;
};

static int check_row(void *arg, uint32_t id, const struct hc_dict_stack *s)
{
	struct scan *sc = arg;
	struct hc_dict_stack want = row_of(id);

	assert_int_equal(id, sc->next);
	assert_int_equal(s->parent, want.parent);
	assert_int_equal(s->frame, want.frame);
	sc->next = id + 1;
	sc->n++;
	return id == sc->last ? 1 : 0;
}

/* Rows written in chunks of up to HC_STACKROWS_CHUNK_MAX, read back by id and by range. */
static void test_rows(void **state)
{
	struct fixture *fx = *state;
	uint32_t n = 4 * HC_STACKROWS_CHUNK_MAX + 5;
	struct hc_stackrows r;
	struct hc_dict_stack s;
	struct scan sc = {.next = 1};

	put_rows(fx, 0, n);
	put_rows(fx, n, 3); /* a transaction's rows: a chunk of their own */
	assert_int_equal(sql_int(fx->db, "SELECT count(*) FROM stack_chunk"), 6);
	assert_int_equal(sql_int(fx->db, "SELECT sum(n) FROM stack_chunk"), n + 3);
	print_message("%u rows: %" PRId64 " bytes of chunks\n", n + 3,
		      sql_int(fx->db, "SELECT sum(length(data)) FROM stack_chunk"));
	hc__stackrows_init(&r, fx->db);
	for (uint32_t id = n + 3; id >= 1; id -= 37) {
		struct hc_dict_stack want = row_of(id);

		assert_int_equal(hc__stackrows_get(&r, id, &s), 0);
		assert_int_equal(s.parent, want.parent);
		assert_int_equal(s.frame, want.frame);
		if (id <= 37)
			break;
	}
	assert_int_equal(hc__stackrows_get(&r, n + 4, &s), -ENOENT);
	assert_int_equal(hc__stackrows_get(&r, 0, &s), -ENOENT);
	assert_int_equal(hc__stackrows_scan(&r, 0, UINT32_MAX, check_row, &sc), 0);
	assert_int_equal(sc.n, n + 3);
	/* a range inside chunks; a non-zero return stops the scan */
	sc = (struct scan){.next = 1000, .last = 1200};
	assert_int_equal(hc__stackrows_scan(&r, 999, 5000, check_row, &sc), 1);
	assert_int_equal(sc.n, 201);
	/* from a chunk's last row */
	sc = (struct scan){.next = 4 * HC_STACKROWS_CHUNK_MAX + 1};
	assert_int_equal(hc__stackrows_scan(&r, 4 * HC_STACKROWS_CHUNK_MAX,
					    4 * HC_STACKROWS_CHUNK_MAX + 4, check_row, &sc),
			 0);
	assert_int_equal(sc.n, 4);
	hc__stackrows_release(&r);
}

/* The newest row of a content, through fresh keys and packed ones alike; a key whose row has
 * other content (a collision) or none (deleted) never answers. */
static void test_find(void **state)
{
	struct fixture *fx = *state;
	struct hc_dict_stack dup = row_of(10);
	struct hc_stackrows_packer p;
	struct hc_stackrows r;
	uint64_t rows;
	char sql[160];

	put_rows(fx, 0, 100);
	/* the content of row 10 again as row 101 */
	assert_int_equal(hc__stackrows_put(fx->db, &fx->cctx, 100, &dup, 1, true), 0);
	hc__stackrows_init(&r, fx->db);
	assert_int_equal(hc__stackrows_find(&r, dup.parent, dup.frame, 0), 101);
	assert_int_equal(hc__stackrows_find(&r, dup.parent, dup.frame, 101), 0);
	assert_int_equal(hc__stackrows_find(&r, row_of(50).parent, row_of(50).frame, 0), 50);
	assert_int_equal(hc__stackrows_find(&r, 99999, 99999, 0), 0);
	/* a key of that content's hash pointing at rows of another content, and at none */
	snprintf(sql, sizeof(sql), "INSERT INTO stack_key VALUES(%u, 60), (%u, 5000)",
		 hc__stackrows_hash(1, 2), hc__stackrows_hash(1, 2));
	assert_int_equal(sqlite3_exec(fx->db, sql, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(hc__stackrows_find(&r, 1, 2, 0), 0);

	/* packed: every key moves into the packs, found the same */
	assert_int_equal(hc__stackrows_pack_open(fx->db, &p), 0);
	assert_int_equal(p.fresh, 103);
	p.fresh = UINT32_MAX; /* due now */
	do
		assert_int_equal(hc__stackrows_pack_step(fx->db, &p, 0), 0);
	while (p.next);
	assert_int_equal(p.passes, 1);
	assert_int_equal(p.moved, 103);
	assert_int_equal(sql_int(fx->db, "SELECT count(*) FROM stack_key"), 0);
	assert_int_equal(sql_int(fx->db, "SELECT sum(n) FROM stack_keypack"), 103);
	assert_int_equal(p.packed, 103);
	hc__stackrows_forget(&r);
	assert_int_equal(hc__stackrows_find(&r, dup.parent, dup.frame, 0), 101);
	assert_int_equal(hc__stackrows_find(&r, row_of(50).parent, row_of(50).frame, 0), 50);
	assert_int_equal(hc__stackrows_find(&r, 1, 2, 0), 0);
	for (uint32_t id = 1; id <= 100; id++)
		if (id != 10)
			assert_int_equal(
				hc__stackrows_find(&r, row_of(id).parent, row_of(id).frame, 0), id);

	/* rows up to 64 deleted: not found, and the next pass drops their keys */
	assert_int_equal(hc__stackrows_drop(fx->db, 64, &rows), 0);
	assert_int_equal(rows, 0); /* no chunk lies wholly below 64: the first holds 1..100 */
	assert_int_equal(hc__stackrows_drop(fx->db, 100, &rows), 0);
	assert_int_equal(rows, 100);
	hc__stackrows_forget(&r);
	assert_int_equal(hc__stackrows_find(&r, row_of(50).parent, row_of(50).frame, 0), 0);
	assert_int_equal(hc__stackrows_find(&r, dup.parent, dup.frame, 0), 101);
	p.stale = UINT32_MAX;
	do
		assert_int_equal(hc__stackrows_pack_step(fx->db, &p, 100), 0);
	while (p.next);
	/* left: 101's key, and the key of no row that lies above the floor */
	assert_int_equal(p.passes, 2);
	assert_int_equal(p.packed, 2);
	assert_int_equal(p.dropped, 101);
	assert_int_equal(sql_int(fx->db, "SELECT sum(n) FROM stack_keypack"), 2);
	assert_int_equal(hc__stackrows_find(&r, dup.parent, dup.frame, 0), 101);
	hc__stackrows_release(&r);
}

/* A pass is due only once enough keys are fresh (or stale); a pass's steps take the fresh
 * keys written meanwhile in the slots still ahead. */
static void test_pack_due(void **state)
{
	struct fixture *fx = *state;
	struct hc_stackrows_packer p;

	put_rows(fx, 0, 1000);
	assert_int_equal(hc__stackrows_pack_open(fx->db, &p), 0);
	assert_int_equal(hc__stackrows_pack_step(fx->db, &p, 0), 0);
	assert_int_equal(p.next, 0);
	assert_int_equal(p.passes, 0);
	assert_int_equal(sql_int(fx->db, "SELECT count(*) FROM stack_key"), 1000);
	put_rows(fx, 1000, 20000);
	assert_int_equal(hc__stackrows_pack_open(fx->db, &p), 0);
	assert_int_equal(p.fresh, 21000);
	assert_int_equal(hc__stackrows_pack_step(fx->db, &p, 0), 0);
	assert_true(p.next > 0);
	put_rows(fx, 21000, 500); /* written during the pass */
	while (p.next)
		assert_int_equal(hc__stackrows_pack_step(fx->db, &p, 0), 0);
	assert_int_equal(p.packed + (uint64_t)sql_int(fx->db, "SELECT count(*) FROM stack_key"),
			 21500);
	assert_int_equal(p.packed, (uint64_t)sql_int(fx->db, "SELECT sum(n) FROM stack_keypack"));
	print_message("21500 keys: %" PRId64 " packed in %" PRId64 " bytes, %" PRId64 " fresh\n",
		      sql_int(fx->db, "SELECT sum(n) FROM stack_keypack"),
		      sql_int(fx->db, "SELECT sum(length(data)) FROM stack_keypack"),
		      sql_int(fx->db, "SELECT count(*) FROM stack_key"));
}

/* An epoch's small chunks merged into one: the same rows; a range with a gap left alone. */
static void test_compact(void **state)
{
	struct fixture *fx = *state;
	struct scan sc = {.next = 1};
	struct hc_stackrows r;
	uint64_t merged;
	int64_t small, big;

	for (uint32_t id = 0; id < 300; id += 30)
		put_rows(fx, id, 30);
	small = sql_int(fx->db, "SELECT sum(length(data)) FROM stack_chunk");
	assert_int_equal(hc__stackrows_compact(fx->db, &fx->cctx, 0, 300, &merged), 0);
	assert_int_equal(merged, 10);
	assert_int_equal(sql_int(fx->db, "SELECT count(*) FROM stack_chunk"), 1);
	big = sql_int(fx->db, "SELECT sum(length(data)) FROM stack_chunk");
	print_message("300 rows: %" PRId64 " bytes in 10 chunks, %" PRId64 " in one\n", small, big);
	assert_true(big < small);
	hc__stackrows_init(&r, fx->db);
	assert_int_equal(hc__stackrows_scan(&r, 0, 300, check_row, &sc), 0);
	assert_int_equal(sc.n, 300);
	hc__stackrows_release(&r);
	/* already one chunk: nothing to do */
	assert_int_equal(hc__stackrows_compact(fx->db, &fx->cctx, 0, 300, &merged), 0);
	assert_int_equal(merged, 0);
	/* rows 301..330 and 341..370: a gap, left as they are */
	put_rows(fx, 300, 30);
	put_rows(fx, 340, 30);
	assert_int_equal(hc__stackrows_compact(fx->db, &fx->cctx, 300, 370, &merged), 0);
	assert_int_equal(merged, 0);
	assert_int_equal(sql_int(fx->db, "SELECT count(*) FROM stack_chunk"), 3);
}

/* A flipped byte in a chunk: its rows read as damaged, never as other rows; find passes over
 * it. */
static void test_damaged(void **state)
{
	struct fixture *fx = *state;
	struct hc_stackrows r;
	struct hc_dict_stack s;

	sqlite3_stmt *st;
	uint8_t buf[4096];
	int len;

	put_rows(fx, 0, 200);
	assert_int_equal(sqlite3_prepare_v2(fx->db, "SELECT data FROM stack_chunk", -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	len = sqlite3_column_bytes(st, 0);
	assert_true(len > 30 && len <= (int)sizeof(buf));
	memcpy(buf, sqlite3_column_blob(st, 0), (size_t)len);
	sqlite3_finalize(st);
	buf[len / 2] ^= 0x10;
	assert_int_equal(
		sqlite3_prepare_v2(fx->db, "UPDATE stack_chunk SET data = ?", -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_blob(st, 1, buf, len, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
	hc__stackrows_init(&r, fx->db);
	assert_int_equal(hc__stackrows_get(&r, 5, &s), -EBADMSG);
	assert_int_equal(hc__stackrows_find(&r, row_of(5).parent, row_of(5).frame, 0), 0);
	assert_int_equal(
		sqlite3_exec(fx->db, "UPDATE stack_chunk SET data = x'00'", NULL, NULL, NULL),
		SQLITE_OK);
	assert_int_equal(hc__stackrows_get(&r, 5, &s), -EBADMSG);
	hc__stackrows_release(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pack_due, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_damaged, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
