// SPDX-License-Identifier: GPL-2.0-only
/*
 * The disk store: the file (open, check, quarantine, schema, dictionary), the ingest side
 * (pending buckets per second), the writer thread (writes, merges windows, expires, keeps under
 * max_bytes); the queries are query.c. docs/store.md, "On disk", says why it is shaped so.
 */
#include "store/disk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/time.h"
#include "base/why.h"
#include "store/blob.h"
#include "store/dict.h"
#include "store/disk_int.h"
#include "store/stackrows.h"

#define APP_ID 0x68636f6c /* "hcol" */
/* 2: dictionary epochs; 3: stack rows in chunks, recall by key (store/stackrows.h). An older
 * file is migrated at open. */
#define SCHEMA_VERSION 3
#define DEFAULT_RETENTION_S (7 * 86400ull)
#define DEFAULT_MAX_BYTES (1ull << 30)
#define QUEUE_MAX_S 120	     /* seconds waiting for the writer before the oldest are dropped */
#define COMPACT_LAG_S 3	     /* a window is merged once it ended this long before the newest */
#define TIER0_MERGE_LAG_S 60 /* a second's late rows are merged once it is this old */
#define BUILD_LAG_S 30	     /* a 10 s window is built once it ended this long before the newest */
/* a round's builds stop once they took this long (the writer goes back to its seconds), except
 * when closing */
#define BUILD_ROUND_NS (250 * 1000000ull)
#define BUILD_TXN 32	    /* windows built per transaction */
#define ZSTD_LEVEL_SECOND 3 /* written each second */
#define ZSTD_LEVEL_MERGED 9 /* merged windows: written once, kept long */
#define MERGE_BATCH 32	    /* windows merged per round */
/* the stack rows' upkeep stops once a round's took this long */
#define STACKROWS_ROUND_NS (100 * 1000000ull)
/* per epoch: the current one and the one before it are in memory */
#define DEFAULT_DICT_MAX_BYTES (2ull << 20)
/* The bound grows while epochs last under EPOCH_SHORT_S seconds of data with over half of their
 * entries adopted (a working set that does not fit: each epoch adopts it again, through the
 * file, at tens of percent of a core: 16 CPUs at 999 Hz, docs/benchmarks.md "Scale"); up to
 * DICT_CEILING_FACTOR times the floor; it halves back after an epoch of EPOCH_LONG_S. */
#define EPOCH_SHORT_S 30
#define EPOCH_LONG_S 120
#define DICT_CEILING_FACTOR 8
/* An entry used again is adopted by the next epoch under its id (its row stays where it is)
 * while the epoch that wrote its row is at most this many epochs old; past it, it is copied
 * once (a new id), so that a long-lived entry does not keep an old epoch's rows (most of them
 * dead) in the file forever. An epoch lasts 20 s to minutes under load: 256 of them are
 * hours, against days of retention. */
#define DEFAULT_ADOPT_EPOCHS 256
/* Entries one ingest call may add to each table (a stack of an older epoch is translated
 * with its ancestors): a new epoch begins before they could pass the bound. */
#define DICT_MARGIN (HC_STORE_MAX_DEPTH + 2)

const int64_t hc__disk_tier_step[HC_DISK_TIERS] = {1, 10, 60, 3600};
static const char *const tier_names[HC_DISK_TIERS] = {"1s", "10s", "1m", "1h"};

int64_t hc_disk__tier_step(int tier)
{
	return tier >= 0 && tier < HC_DISK_TIERS ? hc__disk_tier_step[tier] : 1;
}

const char *hc_disk__tier_name(int tier)
{
	return tier >= 0 && tier < HC_DISK_TIERS ? tier_names[tier] : "?";
}

/* ---- small SQLite helpers ---- */

int hc__disk_sql_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_DONE:
	case SQLITE_ROW:
		return 0;
	case SQLITE_FULL:
		return ENOSPC;
	case SQLITE_READONLY:
	case SQLITE_PERM:
	case SQLITE_CANTOPEN:
	case SQLITE_AUTH:
		return EACCES;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return EBUSY;
	case SQLITE_NOMEM:
		return ENOMEM;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
	case SQLITE_FORMAT:
		return EBADMSG;
	default:
		return EIO;
	}
}

int hc__disk_exec(sqlite3 *db, const char *sql)
{
	return -hc__disk_sql_errno(sqlite3_exec(db, sql, NULL, NULL, NULL));
}

static int64_t query_int(sqlite3 *db, const char *sql, int64_t dflt)
{
	sqlite3_stmt *st;
	int64_t v = dflt;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return dflt;
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* ---- the lock ---- */

int hc_disk__lock(const char *dir, int uid, int gid, char *why, size_t wl)
{
	struct stat sb;
	bool made;
	int fd;

	/* The default sits one level under a directory that may not exist yet (no tmpfiles.d):
	 * that one only needs to be passable. */
	made = mkdir(dir, 0700) == 0;
	if (!made && errno == ENOENT) {
		char parent[4096], *slash;

		snprintf(parent, sizeof(parent), "%s", dir);
		slash = strrchr(parent, '/');
		if (slash && slash != parent) {
			*slash = 0;
			mkdir(parent, 0711);
		}
		made = mkdir(dir, 0700) == 0;
	}
	if (made) {
		if (uid != -1 && chown(dir, (uid_t)uid, (gid_t)gid)) {
			int err = errno;

			hc_why_set(why, wl,
				   "%s: chown to --user: %s (create it for that user beforehand, "
				   "as contrib/tmpfiles.d/hotcold.conf does)",
				   dir, strerror(err));
			return -err;
		}
	} else if (errno != EEXIST) {
		int err = errno;

		hc_why_set(why, wl, "cannot create the data directory %s: %s", dir, strerror(err));
		return -err;
	}
	if (stat(dir, &sb) || !S_ISDIR(sb.st_mode)) {
		hc_why_set(why, wl, "the data directory %s is not a directory", dir);
		return -ENOTDIR;
	}
	/* The directory itself is locked: the privileged process may read it (it has
	 * CAP_DAC_READ_SEARCH under the unit) but not write into --user's 0700 directory, and a
	 * lock file could be aged out or removed under a running serve. */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		int err = errno;

		hc_why_set(why, wl, "the data directory %s cannot be opened: %s", dir,
			   strerror(err));
		return -err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int err = errno;

		hc_why_set(why, wl,
			   "the data directory %s is in use by another hotcold (serve or import)",
			   dir);
		close(fd);
		return -(err == EWOULDBLOCK ? EWOULDBLOCK : err);
	}
	fcntl(fd, F_SETFD, 0); /* children keep the lock */
	return fd;
}

/* ---- opening ---- */

/* Version 2 added bucket.epoch (appended: a migrated file has it in the same place), its
 * index, and the epoch table; version 3 replaced the table stack(id, parent, frame) and its
 * content index with stackrows' tables. */
static const char schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
	"CREATE TABLE IF NOT EXISTS frame(id INTEGER PRIMARY KEY, kind INTEGER, name TEXT,"
	" module TEXT, fid INTEGER, offset INTEGER, inlined INTEGER);"
	"CREATE TABLE IF NOT EXISTS task(id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER,"
	" process TEXT, thread TEXT);"
	"CREATE TABLE IF NOT EXISTS bucket(store INTEGER, tier INTEGER, t INTEGER, span INTEGER,"
	" on_cpu_ns INTEGER, off_cpu_ns INTEGER, runqueue_ns INTEGER, samples INTEGER,"
	" entries INTEGER, data BLOB, epoch INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX IF NOT EXISTS bucket_at ON bucket(tier, t, store, span);"
	"CREATE INDEX IF NOT EXISTS bucket_epoch ON bucket(epoch);"
	/* content, for recall(): an entry of an older epoch met again is adopted, not written */
	"CREATE INDEX IF NOT EXISTS frame_content ON frame(name, fid, offset);"
	"CREATE TABLE IF NOT EXISTS epoch(id INTEGER PRIMARY KEY, frame_base INTEGER,"
	" task_base INTEGER, stack_base INTEGER);"
	"INSERT OR IGNORE INTO epoch VALUES(0, 0, 0, 0);";

/* A version 1 file: its whole dictionary is epoch 0, its buckets reference it. */
static const char migrate_v1[] = "ALTER TABLE bucket ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0";

int hc__disk_open_db(const char *path, int flags, sqlite3 **out)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);

	if (rc != SQLITE_OK) {
		sqlite3_close(db);
		return -hc__disk_sql_errno(rc);
	}
	sqlite3_busy_timeout(db, 5000);
	sqlite3_extended_result_codes(db, 0);
	*out = db;
	return 0;
}

/* 0 when the file is a healthy hotcold store (or new), -EBADMSG when it is not one or is
 * damaged, another -errno when it cannot be read. */
static int check_db(sqlite3 *db, char *why, size_t wl)
{
	sqlite3_stmt *st;
	int64_t app = query_int(db, "PRAGMA application_id", -1);
	int64_t pages = query_int(db, "PRAGMA page_count", -1);
	int rc;

	if (app < 0 || pages < 0) {
		rc = sqlite3_exec(db, "SELECT 1 FROM sqlite_schema LIMIT 1", NULL, NULL, NULL);
		hc_why_set(why, wl, "%s", sqlite3_errstr(rc));
		return rc == SQLITE_OK ? -EIO : -hc__disk_sql_errno(rc);
	}
	if (pages > 0 && app != APP_ID) {
		hc_why_set(why, wl, "not a hotcold store (application_id %" PRId64 ")", app);
		return -EBADMSG;
	}
	if (pages > 0 && query_int(db, "PRAGMA user_version", 0) > SCHEMA_VERSION) {
		hc_why_set(why, wl, "written by a newer hotcold (schema %" PRId64 ")",
			   query_int(db, "PRAGMA user_version", 0));
		return -EPROTO;
	}
	if (sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL) != SQLITE_OK) {
		hc_why_set(why, wl, "%s", sqlite3_errmsg(db));
		return -EBADMSG;
	}
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "ok")) {
		hc_why_set(why, wl, "damaged: %s",
			   rc == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0)
					    : sqlite3_errmsg(db));
		sqlite3_finalize(st);
		return -EBADMSG;
	}
	sqlite3_finalize(st);
	return 0;
}

/* Move the store file (and its WAL) to DIR/quarantine/: never deleted, never overwritten. */
static int quarantine(struct hc_disk *d, char *why, size_t wl)
{
	static const char *const sfx[] = {"", "-wal", "-shm"};
	char qdir[4096], from[4200], to[4300];
	time_t now = time(NULL);
	struct tm tm;

	snprintf(qdir, sizeof(qdir), "%s/%s", d->dir, HC_DISK_QUARANTINE);
	if (mkdir(qdir, 0700) && errno != EEXIST)
		return -errno;
	gmtime_r(&now, &tm);
	for (size_t i = 0; i < 3; i++) {
		snprintf(from, sizeof(from), "%s%s", d->path, sfx[i]);
		snprintf(to, sizeof(to), "%s/%s.%04d%02d%02dT%02d%02d%02dZ.%d%s", qdir,
			 HC_DISK_FILE, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
			 tm.tm_min, tm.tm_sec, (int)getpid(), sfx[i]);
		if (rename(from, to) && errno != ENOENT) {
			hc_why_set(why, wl, "moving %s to %s: %s", from, to, strerror(errno));
			return -errno;
		}
		if (i == 0)
			hc_why_set(why, wl, "%s was moved to %s", d->path, to);
	}
	d->st.quarantined++;
	return 0;
}

/* ---- dictionary rows ---- */

/* A row of the dictionary's frames and tasks, by id: the columns hc__disk_row_read() takes
 * (stacks are store/stackrows' chunks). */
const char *const hc__disk_row_sql[HC_DICT_TABLES] = {
	[HC_DICT_FRAMES] = "SELECT kind, name, module, fid, offset, inlined FROM frame WHERE id=?",
	[HC_DICT_TASKS] = "SELECT pid, tid, process, thread FROM task WHERE id=?",
};

/* An epoch's rows, in id order: the id, then the same columns. */
static const char *const load_sql[HC_DICT_TABLES] = {
	[HC_DICT_FRAMES] = ("SELECT id, kind, name, module, fid, offset, inlined FROM frame"
			    " WHERE id > ? ORDER BY id"),
	[HC_DICT_TASKS] = "SELECT id, pid, tid, process, thread FROM task WHERE id > ? ORDER BY id",
};

void hc__disk_row_read(enum hc_dict_table t, sqlite3_stmt *st, int col, struct dict_row *r)
{
	if (t == HC_DICT_FRAMES)
		r->frame = (struct hc_path_elem){
			.kind = (enum hc_node_kind)sqlite3_column_int(st, col),
			.name = (const char *)sqlite3_column_text(st, col + 1),
			.module = (const char *)sqlite3_column_text(st, col + 2),
			.id = (uint64_t)sqlite3_column_int64(st, col + 3),
			.offset = sqlite3_column_int64(st, col + 4),
			.inlined = sqlite3_column_int(st, col + 5) != 0,
		};
	else if (t == HC_DICT_TASKS)
		r->task = (struct hc_dict_task){
			.pid = (uint32_t)sqlite3_column_int64(st, col),
			.tid = (uint32_t)sqlite3_column_int64(st, col + 1),
			.process = (const char *)sqlite3_column_text(st, col + 2),
			.thread = (const char *)sqlite3_column_text(st, col + 3),
		};
	else
		r->stack = (struct hc_dict_stack){
			.parent = (uint32_t)sqlite3_column_int64(st, col),
			.frame = (uint32_t)sqlite3_column_int64(st, col + 1),
		};
}

/* The same from an epoch in memory that has id. */
void hc__disk_row_from_dict(const struct hc_dict *dict, enum hc_dict_table t, uint32_t id,
			    struct dict_row *r)
{
	if (t == HC_DICT_FRAMES)
		hc_dict__elem(dict, id, &r->frame);
	else if (t == HC_DICT_TASKS)
		r->task = *(const struct hc_dict_task *)hc_dict__entry(dict, t, id);
	else
		r->stack = *(const struct hc_dict_stack *)hc_dict__entry(dict, t, id);
}

static int64_t row_intern(struct hc_dict *dict, enum hc_dict_table t, const struct dict_row *r)
{
	if (t == HC_DICT_FRAMES)
		return hc_dict__frame(dict, &r->frame);
	if (t == HC_DICT_TASKS)
		return hc_dict__task(dict, r->task.pid, r->task.tid, r->task.process,
				     r->task.thread);
	return hc_dict__stack(dict, r->stack.parent, r->stack.frame);
}

/* The current epoch's rows of table t, into dict: dense ids from its base, each entry once
 * (anything else is damage). */
static int old_row(struct hc_disk *d, enum hc_dict_table t, uint32_t id, struct dict_row *r);

/* The epoch of the file whose rows hold id of table t, -EBADMSG for none. */
static int64_t file_epoch_of(struct hc_disk *d, enum hc_dict_table t, uint32_t id)
{
	static const char *const sql[HC_DICT_TABLES] = {
		"SELECT max(id) FROM epoch WHERE frame_base < ?",
		"SELECT max(id) FROM epoch WHERE task_base < ?",
		"SELECT max(id) FROM epoch WHERE stack_base < ?",
	};
	sqlite3_stmt *st;
	int64_t e = -EBADMSG;

	if (sqlite3_prepare_v2(d->db, sql[t], -1, &st, NULL) != SQLITE_OK)
		return -EBADMSG;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		e = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return e;
}

/* A frame's path element as a dictionary entry (strings not interned). */
static struct hc_dict_frame dict_frame(const struct hc_path_elem *e)
{
	return (struct hc_dict_frame){.name = e->name,
				      .module = e->module,
				      .id = e->id,
				      .offset = e->offset,
				      .kind = (uint8_t)e->kind,
				      .inlined = e->inlined};
}

/*
 * Entry id of an older epoch of the file adopted by dict under its id, what it names first:
 * the loaded epoch's rows name the entries it had adopted. 0, -EBADMSG (not in the file),
 * -errno.
 */
static int adopt_row(struct hc_disk *d, struct hc_dict *dict, enum hc_dict_table t, uint32_t id,
		     int depth)
{
	struct dict_row r;
	int64_t origin, got;
	int err;

	if (!id || hc_dict__has(dict, t, id))
		return 0;
	if (depth > HC_STORE_MAX_DEPTH + 2)
		return -EBADMSG;
	err = old_row(d, t, id, &r);
	if (err)
		return err == -ESTALE ? -EBADMSG : err;
	origin = file_epoch_of(d, t, id);
	if (origin < 0)
		return (int)origin;
	if (t == HC_DICT_FRAMES) {
		struct hc_dict_frame f = dict_frame(&r.frame);

		got = hc_dict__adopt(dict, t, &f, id, (uint64_t)origin);
	} else if (t == HC_DICT_TASKS) {
		got = hc_dict__adopt(dict, t, &r.task, id, (uint64_t)origin);
	} else {
		struct hc_dict_stack s = r.stack;

		err = adopt_row(d, dict, HC_DICT_STACKS, s.parent, depth + 1);
		if (!err)
			err = adopt_row(d, dict, HC_DICT_FRAMES, s.frame, depth + 1);
		if (err)
			return err;
		got = hc_dict__adopt(dict, t, &s, id, (uint64_t)origin);
	}
	return got < 0 ? (int)got : 0;
}

struct load_stack {
	struct hc_disk *d;
	struct hc_dict *dict;
	int64_t want;
};

/* A stack row of the current epoch, what it names adopted first. */
static int load_stack(void *arg, uint32_t id, const struct hc_dict_stack *s)
{
	struct load_stack *l = arg;
	int err = adopt_row(l->d, l->dict, HC_DICT_STACKS, s->parent, 0);

	if (!err)
		err = adopt_row(l->d, l->dict, HC_DICT_FRAMES, s->frame, 0);
	if (!err && (id != l->want++ || hc_dict__stack(l->dict, s->parent, s->frame) != id))
		err = -EBADMSG;
	return err;
}

static int load_table(struct hc_disk *d, struct hc_dict *dict, enum hc_dict_table t)
{
	int64_t want = (int64_t)dict->t[t].base + 1;
	sqlite3_stmt *st;
	int rc, err = 0;

	if (t == HC_DICT_STACKS) {
		struct load_stack l = {.d = d, .dict = dict, .want = want};
		struct hc_stackrows r;

		hc__stackrows_init(&r, d->db);
		err = hc__stackrows_scan(&r, dict->t[t].base, UINT32_MAX, load_stack, &l);
		hc__stackrows_release(&r);
		hc__stackrows_forget(&d->ingest_rows);
		return err;
	}
	if (sqlite3_prepare_v2(d->db, load_sql[t], -1, &st, NULL) != SQLITE_OK)
		return -EBADMSG;
	sqlite3_bind_int64(st, 1, dict->t[t].base);
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct dict_row r;

		hc__disk_row_read(t, st, 1, &r);
		if (!err &&
		    (sqlite3_column_int64(st, 0) != want++ || row_intern(dict, t, &r) != want - 1))
			err = -EBADMSG;
	}
	sqlite3_finalize(st);
	for (int i = 0; i < HC_DICT_TABLES; i++)
		if (d->ingest_get[i])
			sqlite3_reset(d->ingest_get[i]);
	return err ? err : rc == SQLITE_DONE ? 0 : -EBADMSG;
}

/* The newest epoch, loaded: memory holds only it. */
static int load_dict(struct hc_disk *d)
{
	uint32_t base[HC_DICT_TABLES] = {0};
	uint64_t epoch = 0;
	sqlite3_stmt *st;
	int err = 0;

	if (sqlite3_prepare_v2(d->db,
			       "SELECT id, frame_base, task_base, stack_base FROM epoch"
			       " ORDER BY id DESC LIMIT 1",
			       -1, &st, NULL) != SQLITE_OK)
		return -EBADMSG;
	if (sqlite3_step(st) == SQLITE_ROW) {
		epoch = (uint64_t)sqlite3_column_int64(st, 0);
		for (int t = 0; t < HC_DICT_TABLES; t++)
			base[t] = (uint32_t)sqlite3_column_int64(st, t + 1);
	}
	sqlite3_finalize(st);
	d->dict = hc_dict__new(epoch, base);
	if (!d->dict)
		return -ENOMEM;
	d->dict->refs = 1;
	for (int t = 0; !err && t < HC_DICT_TABLES; t++)
		err = load_table(d, d->dict, (enum hc_dict_table)t);
	for (int t = 0; t < HC_DICT_TABLES; t++)
		d->dict->t[t].persisted = d->dict->t[t].n;
	d->st.dict_epoch = epoch;
	return err;
}

static int create_schema(sqlite3 *db)
{
	int err = hc__disk_exec(db, schema);

	return err ? err : hc__disk_exec(db, hc__stackrows_schema);
}

/* A run of consecutive stack rows of one epoch, written as chunks. */
struct stack_run {
	struct hc_dict_stack *v;
	size_t n, cap;
	uint32_t first; /* the id before v[0] */
};

static int run_flush(struct hc_disk *d, struct stack_run *r)
{
	int err = hc__stackrows_put(d->db, &d->cctx, r->first, r->v, r->n, true);

	r->first += (uint32_t)r->n;
	r->n = 0;
	return err;
}

/* The stack rows of a version 2 file (table stack, index stack_content) into chunks and keys,
 * each epoch's rows chunks of their own; the table and its index dropped. */
static int migrate_stacks(struct hc_disk *d)
{
	struct stack_run run = {0};
	sqlite3_stmt *st = NULL, *ep = NULL;
	uint32_t next_base = 0; /* the next epoch's stack base above the run; 0: none */
	int rc, err = 0;

	if (sqlite3_prepare_v2(d->db, "SELECT id, parent, frame FROM stack ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d->db, "SELECT min(stack_base) FROM epoch WHERE stack_base >= ?", -1,
			       &ep, NULL) != SQLITE_OK)
		err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (id <= 0 || id > UINT32_MAX) {
			err = -EBADMSG;
			break;
		}
		/* a gap, the next epoch, or a full chunk: the run so far goes */
		if (run.n &&
		    ((uint32_t)id != run.first + run.n + 1 ||
		     (next_base && (uint32_t)id > next_base) || run.n == HC_STACKROWS_CHUNK_MAX))
			err = run_flush(d, &run);
		if (!err && !run.n) {
			run.first = (uint32_t)id - 1;
			sqlite3_reset(ep);
			sqlite3_bind_int64(ep, 1, id);
			rc = sqlite3_step(ep);
			next_base = rc == SQLITE_ROW && sqlite3_column_type(ep, 0) != SQLITE_NULL
					    ? (uint32_t)sqlite3_column_int64(ep, 0)
					    : 0;
			sqlite3_reset(ep);
		}
		if (!err && run.n == run.cap && hc_array_grow(run.v, run.cap, run.n + 1, 1024))
			err = -ENOMEM;
		if (!err)
			run.v[run.n++] = (struct hc_dict_stack){
				.parent = (uint32_t)sqlite3_column_int64(st, 1),
				.frame = (uint32_t)sqlite3_column_int64(st, 2)};
	}
	if (!err && rc != SQLITE_DONE)
		err = -hc__disk_sql_errno(rc);
	if (!err && run.n)
		err = run_flush(d, &run);
	sqlite3_finalize(st);
	sqlite3_finalize(ep);
	free(run.v);
	if (!err)
		err = hc__disk_exec(d->db, "DROP INDEX IF EXISTS stack_content; DROP TABLE stack");
	return err;
}

/* Bring a file of an older schema up to this one, in one transaction. */
static int migrate(struct hc_disk *d)
{
	bool v1 = query_int(d->db, "SELECT count(*) FROM sqlite_schema WHERE name='bucket'", 0) &&
		  !query_int(d->db,
			     "SELECT count(*) FROM pragma_table_info('bucket') WHERE name='epoch'",
			     0);
	bool v2 = query_int(d->db, "SELECT count(*) FROM sqlite_schema WHERE name='stack'", 0);
	int err;

	if (!v1 && !v2)
		return 0;
	err = hc__disk_exec(d->db, "BEGIN IMMEDIATE");
	if (!err && v1)
		err = hc__disk_exec(d->db, migrate_v1);
	if (!err)
		err = create_schema(d->db);
	if (!err && v2)
		err = migrate_stacks(d);
	if (!err)
		err = hc__disk_exec(d->db, "COMMIT");
	else
		hc__disk_exec(d->db, "ROLLBACK");
	return err;
}

static void refresh_tiers(struct hc_disk *d);

/* Stack rows, for folding: from the file (the writer wrote the rows of the windows it
 * builds before it builds them), a chunk at a time. */
static int fold_rows(void *arg, uint32_t id, uint32_t *lo, uint32_t *hi,
		     const struct hc_dict_stack **v)
{
	struct hc_disk *d = arg;
	struct hc_dict_stack row;
	int err = hc__stackrows_get(&d->fold_rows, id, &row);

	*lo = d->fold_rows.lo;
	*hi = d->fold_rows.hi;
	*v = d->fold_rows.v;
	return err;
}

/* Open, check, create the schema, load the dictionary: 0, -EBADMSG (damaged: quarantine
 * it), another -errno. */
static int open_store(struct hc_disk *d, char *why, size_t wl)
{
	int err = hc__disk_open_db(d->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &d->db);
	char sql[128];

	if (err) {
		hc_why_set(why, wl, "%s: %s", d->path, strerror(-err));
		return err;
	}
	err = check_db(d->db, why, wl);
	if (!err)
		err = hc__disk_exec(d->db, "PRAGMA journal_mode=WAL");
	if (!err)
		err = hc__disk_exec(d->db, "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-2048;"
					   "PRAGMA temp_store=MEMORY");
	if (!err) {
		snprintf(sql, sizeof(sql), "PRAGMA application_id=%d; PRAGMA user_version=%d",
			 APP_ID, SCHEMA_VERSION);
		err = migrate(d);
		if (!err)
			err = create_schema(d->db);
		if (!err)
			err = hc__disk_exec(d->db, sql);
		if (err)
			hc_why_set(why, wl, "%s: creating the schema: %s", d->path,
				   sqlite3_errmsg(d->db));
	}
	if (!err) {
		err = load_dict(d);
		if (err == -EBADMSG)
			hc_why_set(why, wl, "damaged dictionary");
	}
	if (!err) {
		hc__stackrows_init(&d->fold_rows, d->db);
		hc__fold_init(&d->fold, fold_rows, d);
		err = hc__stackrows_pack_open(d->db, &d->packer);
		d->st.stack_keys_fresh = d->packer.fresh;
		d->st.stack_keys_packed = d->packer.packed;
	}
	if (err) {
		hc__stackrows_release(&d->fold_rows);
		sqlite3_close(d->db);
		d->db = NULL;
		hc_dict__free(d->dict);
		d->dict = NULL;
		return err;
	}
	d->first_s = query_int(d->db, "SELECT value FROM meta WHERE key = 'first_s'", 0);
	for (int k = 0; k < HC_DISK_TIERS; k++)
		d->cut[k] = INT64_MIN;
	for (int k = 1; k < HC_DISK_TIERS; k++) {
		snprintf(sql, sizeof(sql), "SELECT max(t + span) FROM bucket WHERE tier=%d", k);
		/* a window a file of the earlier layout was still filling counts as built: its
		 * seconds to come are written into it directly */
		d->built[k] = query_int(d->db, sql, INT64_MIN);
	}
	refresh_tiers(d);
	return 0;
}

static void *writer_main(void *arg);

static void disk_free(struct hc_disk *d)
{
	hc__fold_release(&d->fold);
	hc__stackrows_release(&d->fold_rows);
	if (d->db)
		sqlite3_close(d->db);
	for (int t = 0; t < HC_DICT_TABLES; t++) {
		sqlite3_finalize(d->ingest_get[t]);
		sqlite3_finalize(d->ingest_recall[t]);
	}
	hc__stackrows_release(&d->ingest_rows);
	sqlite3_close(d->ingest_db);
	hc_dict__free(d->dict);
	for (struct hc_dict *x = d->retired; d->prev && x; x = x->next)
		if (x == d->prev)
			d->prev = NULL; /* freed below */
	hc_dict__free(d->prev);
	while (d->retired) {
		struct hc_dict *next = d->retired->next;

		hc_dict__free(d->retired);
		d->retired = next;
	}
	for (size_t i = 0; i < d->n_pend; i++)
		hc_blob__release(&d->pend[i].blob);
	free(d->pend);
	hc_blob__cctx_free(d->cctx);
	if (d->own_lock && d->lock_fd >= 0)
		close(d->lock_fd);
	hc__epoch_cache_release(&d->epochs);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	pthread_cond_destroy(&d->idle_cv);
	free(d->dir);
	free(d->path);
	free(d);
}

struct hc_disk *hc_disk__open(const struct hc_disk_opts *o, char *why, size_t wl)
{
	struct hc_disk *d = calloc(1, sizeof(*d));
	char qwhy[512] = "";
	int err;

	if (!d || !o->dir || !*o->dir) {
		free(d);
		hc_why_set(why, wl, "no data directory");
		errno = d ? EINVAL : ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&d->mu, NULL);
	pthread_cond_init(&d->cv, NULL);
	pthread_cond_init(&d->idle_cv, NULL);
	hc__epoch_cache_init(&d->epochs, o->epoch_cache_bytes == HC_DISK_EPOCH_CACHE_OFF ? 0
					 : o->epoch_cache_bytes ? o->epoch_cache_bytes
								: HC_DISK_EPOCH_CACHE_DEFAULT);
	d->lock_fd = o->lock_fd;
	d->keep_s[0] = o->tier_keep_s[0] ? o->tier_keep_s[0] : 3600;
	d->keep_s[1] = o->tier_keep_s[1] ? o->tier_keep_s[1] : 86400;
	d->keep_s[2] = o->retention_s ? o->retention_s : DEFAULT_RETENTION_S;
	d->keep_s[3] = d->keep_s[2];
	for (int t = 0; t < 2; t++)
		if (d->keep_s[t] > d->keep_s[2])
			d->keep_s[t] = d->keep_s[2];
	d->max_bytes = o->max_bytes ? o->max_bytes : DEFAULT_MAX_BYTES;
	d->period_ns = o->period_ns;
	d->compact_every_s = o->compact_every_s ? o->compact_every_s : 10;
	d->dict_max_bytes = o->dict_max_bytes ? o->dict_max_bytes : DEFAULT_DICT_MAX_BYTES;
	d->dict_ceiling = o->dict_ceiling_bytes ? o->dict_ceiling_bytes
						: DICT_CEILING_FACTOR * d->dict_max_bytes;
	if (d->dict_ceiling < d->dict_max_bytes)
		d->dict_ceiling = d->dict_max_bytes;
	d->dict_bound = d->dict_max_bytes;
	d->st.dict_bound_bytes = d->dict_bound;
	d->adopt_epochs = o->adopt_epochs ? o->adopt_epochs : DEFAULT_ADOPT_EPOCHS;
	d->fold_ns_per_s = o->fold_ns_per_s == HC_DISK_FOLD_OFF ? 0
			   : o->fold_ns_per_s			? o->fold_ns_per_s
								: HC_DISK_FOLD_DEFAULT;
	d->st.fold_ns_per_s = d->fold_ns_per_s;
	d->dir = strdup(o->dir);
	if (d->dir && asprintf(&d->path, "%s/%s", o->dir, HC_DISK_FILE) < 0)
		d->path = NULL;
	if (!d->dir || !d->path) {
		errno = ENOMEM;
		goto err;
	}
	if (d->lock_fd < 0) {
		d->lock_fd = hc_disk__lock(o->dir, -1, -1, why, wl);
		if (d->lock_fd < 0) {
			errno = -d->lock_fd;
			goto err;
		}
		d->own_lock = true;
	}
	if (access(o->dir, W_OK | X_OK)) {
		err = errno;
		hc_why_set(why, wl,
			   "the data directory %s is not writable by uid %d (%s): make it that "
			   "user's (serve's --user) or pick another --data-dir",
			   o->dir, (int)geteuid(), strerror(err));
		errno = err;
		goto err;
	}
	err = open_store(d, why, wl);
	if (err == -EBADMSG) {
		snprintf(qwhy, sizeof(qwhy), "%s", why);
		err = quarantine(d, why, wl);
		if (!err)
			err = open_store(d, why, wl);
		if (!err)
			hc_why_set(why, wl,
				   "%s was damaged (%s) and moved aside; a new store is started",
				   d->path, qwhy);
	}
	if (err) {
		errno = -err;
		goto err;
	}
	if (pthread_create(&d->writer, NULL, writer_main, d)) {
		errno = ENOMEM;
		goto err;
	}
	d->writer_started = true;
	return d;
err:
	err = errno;
	disk_free(d);
	errno = err;
	return NULL;
}

/* ---- ingest ---- */

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		hc_blob__release(&b->blobs[i]);
	free(b->blobs);
	free(b->stores);
	free(b);
}

static int enqueue_pending(struct hc_disk *d);

static int64_t current_id(struct hc_disk *d, enum hc_dict_table t, uint32_t id);

/*
 * The ids of older epochs that callers used during the epoch just retired stay translated in
 * the new one: a frame id serve keeps for a long-running process is used every epoch, and
 * must not depend on its first epoch's rows, which leave the file with that epoch's data.
 * Up to half the bound: a new epoch must have room for what comes.
 */
static void carry_aliases(struct hc_disk *d, const struct hc_dict *old)
{
	for (int t = 0; t < HC_DICT_TABLES; t++) {
		uint32_t stale, id;
		size_t i = 0;

		while (hc_dict__bytes(d->dict) < d->dict_bound / 2 &&
		       hc_dict__alias_next(old, (enum hc_dict_table)t, &i, &stale, &id)) {
			int64_t nid = current_id(d, (enum hc_dict_table)t, id);

			if (nid > 0)
				hc_dict__alias_add(d->dict, (enum hc_dict_table)t, stale,
						   (uint32_t)nid);
		}
	}
}

/* The bound for the epoch that follows old (see EPOCH_SHORT_S): doubled when old lasted under
 * EPOCH_SHORT_S seconds of data and adopted over half of its entries (a burst of new content, as
 * at start, does not count: it fits the next epoch), halved after a long one. */
static void adjust_bound(struct hc_disk *d, const struct hc_dict *old)
{
	int64_t span = d->newest_data_s - d->epoch_first_s;
	size_t own = 0, adopted = 0;
	uint64_t bound = d->dict_bound;

	for (int t = 0; t < HC_DICT_TABLES; t++) {
		own += old->t[t].n;
		adopted += old->t[t].ad.n;
	}
	if (d->epoch_first_s && span < EPOCH_SHORT_S && adopted > own)
		bound = bound * 2 < d->dict_ceiling ? bound * 2 : d->dict_ceiling;
	else if (d->epoch_first_s && span > EPOCH_LONG_S)
		bound = bound / 2 > d->dict_max_bytes ? bound / 2 : d->dict_max_bytes;
	d->epoch_first_s = d->newest_data_s;
	if (bound == d->dict_bound)
		return;
	d->dict_bound = bound;
	pthread_mutex_lock(&d->mu);
	d->st.dict_bound_bytes = bound;
	d->st.dict_bound_changes++;
	pthread_mutex_unlock(&d->mu);
}

/* Begin a new epoch: what is pending (its ids are the old one's) goes to the writer first;
 * the old epoch stays in memory, retired, until the writer has written it. */
static int new_epoch(struct hc_disk *d)
{
	struct hc_dict *old = d->dict, *next, **tail, *gone;
	uint32_t base[HC_DICT_TABLES];
	int err = enqueue_pending(d);

	if (err)
		return err;
	for (int t = 0; t < HC_DICT_TABLES; t++)
		base[t] = old->t[t].base + (uint32_t)old->t[t].n;
	next = hc_dict__new(old->epoch + 1, base);
	if (!next)
		return -ENOMEM;
	adjust_bound(d, old);
	next->refs = 1;
	for (tail = &d->retired; *tail; tail = &(*tail)->next)
		;
	pthread_mutex_lock(&d->mu);
	*tail = old;
	old->refs++;
	gone = d->prev;
	d->prev = old;
	d->dict = next;
	d->st.dict_epoch = next->epoch;
	pthread_mutex_unlock(&d->mu);
	if (gone)
		hc__disk_dict_put(d, gone);
	carry_aliases(d, old);
	return 0;
}

/* Before an ingest call that may intern: a new epoch when this one's memory could pass the
 * bound during the call. An empty epoch always takes the call. */
static int epoch_room(struct hc_disk *d)
{
	size_t n = hc_dict__entries(d->dict);

	/* A bound grown for a burst comes back down: an epoch that outlasts EPOCH_LONG_S under it
	 * ends, and the next begins at half of it (adjust_bound). Under a working set that fits,
	 * the epoch would otherwise never end, and keep what the burst put in it. */
	if (d->dict_bound > d->dict_max_bytes && d->epoch_first_s && n &&
	    d->newest_data_s - d->epoch_first_s > EPOCH_LONG_S)
		return new_epoch(d);
	/* most calls find their entries interned already: nothing grew since the last look */
	if (n == d->room_entries && d->room_epoch == d->dict->epoch)
		return 0;
	if (!n || hc_dict__bytes_after(d->dict, DICT_MARGIN) <= d->dict_bound) {
		d->room_entries = n;
		d->room_epoch = d->dict->epoch;
		return 0;
	}
	return new_epoch(d);
}

void hc__disk_dict_put(struct hc_disk *d, struct hc_dict *dict)
{
	bool last;

	pthread_mutex_lock(&d->mu);
	last = !--dict->refs;
	pthread_mutex_unlock(&d->mu);
	if (last)
		hc_dict__free(dict);
}

/* Retired epochs the writer has written leave memory (queries still reading one keep it
 * until they end). */
static void free_written(struct hc_disk *d)
{
	struct hc_dict **p = &d->retired;

	while (*p) {
		struct hc_dict *dict = *p;
		bool written;

		pthread_mutex_lock(&d->mu);
		written = dict->written;
		if (written)
			*p = dict->next;
		pthread_mutex_unlock(&d->mu);
		if (written)
			hc__disk_dict_put(d, dict);
		else
			p = &dict->next;
	}
}

/* The ingest thread's read connection, opened at its first use. Its reads are single rows
 * (older epochs' ids, content lookups through the indexes): a small page cache (256 KiB
 * against SQLite's 2 MB default) keeps the indexes' upper levels; their leaves come from the
 * kernel's page cache. */
static int ingest_open(struct hc_disk *d)
{
	int err;

	if (d->ingest_db)
		return 0;
	err = hc__disk_open_db(d->path, SQLITE_OPEN_READONLY, &d->ingest_db);

	if (!err)
		err = hc__disk_exec(d->ingest_db, "PRAGMA cache_size=-256");
	if (!err)
		hc__stackrows_init(&d->ingest_rows, d->ingest_db);
	return err;
}

/* The ingest's cached chunk of stack rows, forgotten once the writer has deleted rows since
 * (a deleted row must read as gone). */
static void ingest_rows_check(struct hc_disk *d)
{
	uint64_t gen;

	pthread_mutex_lock(&d->mu);
	gen = d->rows_gen;
	pthread_mutex_unlock(&d->mu);
	if (gen != d->ingest_rows_gen) {
		hc__stackrows_forget(&d->ingest_rows);
		d->ingest_rows_gen = gen;
	}
}

/* Row id of table t of an older epoch: from a retired epoch still in memory, else from the
 * file (strings valid until the next lookup of t). */
static int old_row(struct hc_disk *d, enum hc_dict_table t, uint32_t id, struct dict_row *r)
{
	sqlite3_stmt **st = &d->ingest_get[t];
	int rc;

	for (const struct hc_dict *x = d->retired; x; x = x->next)
		if (hc_dict__has(x, t, id)) {
			hc__disk_row_from_dict(x, t, id, r);
			return 0;
		}
	rc = ingest_open(d);
	if (rc)
		return rc;
	if (t == HC_DICT_STACKS) {
		ingest_rows_check(d);
		rc = hc__stackrows_get(&d->ingest_rows, id, &r->stack);
		pthread_mutex_lock(&d->mu);
		d->st.dict_file_lookups++;
		pthread_mutex_unlock(&d->mu);
		/* -ENOENT: its epoch was deleted, no bucket referenced it any more */
		return rc == -ENOENT ? -ESTALE : rc;
	}
	if (!*st &&
	    sqlite3_prepare_v2(d->ingest_db, hc__disk_row_sql[t], -1, st, NULL) != SQLITE_OK)
		return -hc__disk_sql_errno(sqlite3_errcode(d->ingest_db));
	sqlite3_reset(*st);
	sqlite3_bind_int64(*st, 1, id);
	rc = sqlite3_step(*st);
	pthread_mutex_lock(&d->mu);
	d->st.dict_file_lookups++;
	pthread_mutex_unlock(&d->mu);
	if (rc == SQLITE_DONE)
		return -ESTALE; /* its epoch was deleted: no bucket referenced it any more */
	if (rc != SQLITE_ROW)
		return -hc__disk_sql_errno(rc);
	hc__disk_row_read(t, *st, 0, r);
	return 0;
}

/*
 * Entry id of the previous epoch taken into the current one under the same id (its row stays
 * where it is in the file), with what it names (a stack's parent and frame, first): id, 0 when
 * it cannot be (not the previous epoch's, its row's epoch adopt_epochs old, or what it names
 * had to be copied: then it is copied too), -errno.
 */
static int64_t adopt(struct hc_disk *d, enum hc_dict_table t, uint32_t id)
{
	struct hc_dict *prev = d->prev;
	const void *e;
	uint64_t origin;

	if (!prev || !hc_dict__has(prev, t, id))
		return 0;
	origin = hc_dict__origin(prev, t, id);
	if (origin + d->adopt_epochs < d->dict->epoch)
		return 0;
	e = hc_dict__entry(prev, t, id);
	if (t == HC_DICT_STACKS) {
		struct hc_dict_stack s = *(const struct hc_dict_stack *)e;
		int64_t p = current_id(d, HC_DICT_STACKS, s.parent);
		int64_t f = p < 0 ? p : current_id(d, HC_DICT_FRAMES, s.frame);

		if (f < 0)
			return f;
		if ((uint32_t)p != s.parent || (uint32_t)f != s.frame)
			return 0;
		if (hc_dict__has(d->dict, t, id)) /* adopted on the way (a cycle cannot be) */
			return id;
	}
	return hc_dict__adopt(d->dict, t, e, id, origin);
}

/*
 * Frames: the newest row of the file with the content r, and the epoch that holds it if that
 * one may still be adopted from (at most adopt_epochs old; NULL otherwise): columns 0 and 1.
 * The content index makes it one lookup; the epoch's is bounded to the epochs it may be.
 * Stacks: the epoch of a row found by store/stackrows' keys, the same way.
 */
static const char *const recall_sql[HC_DICT_TABLES] = {
	[HC_DICT_FRAMES] =
		("SELECT f.id, (SELECT e.id FROM epoch e WHERE e.frame_base < f.id"
		 " AND e.id >= ?7 ORDER BY e.id DESC LIMIT 1) FROM frame f WHERE f.name = ?1"
		 " AND f.fid = ?2 AND f.offset = ?3 AND f.kind = ?4"
		 " AND f.module IS ?5 AND f.inlined = ?6 ORDER BY f.id DESC LIMIT 1"),
	[HC_DICT_STACKS] = ("SELECT ?1, (SELECT e.id FROM epoch e WHERE e.stack_base < ?1"
			    " AND e.id >= ?3 ORDER BY e.id DESC LIMIT 1)"),
};

static int64_t recall_failed(struct hc_disk *d)
{
	pthread_mutex_lock(&d->mu);
	d->st.dict_recall_errors++;
	pthread_mutex_unlock(&d->mu);
	return 0;
}

/*
 * Content neither epoch in memory has, met again from an older epoch of the file (a stack
 * seen 5 minutes ago, not in the last 2): adopted under its id rather than written again.
 * Under a steady load most of what an epoch would write is such content (measured in
 * docs/benchmarks.md, "the dictionary's recall"). Not from an epoch adopt_epochs old, nor
 * from one the writer may be deleting (below recall_floor): the check and the adoption are
 * one step under mu, as the writer's reading of the epochs' oldest origins is. Id, 0 (not
 * found, or the file could not be read: intern it), -ENOMEM. Recall only spares rows: a
 * failed lookup is counted (store.disk.dictionary.recall_errors) and the content written as
 * before.
 */
static int64_t recall(struct hc_disk *d, enum hc_dict_table t, const struct hc_path_elem *e,
		      uint32_t parent, uint32_t frame)
{
	sqlite3_stmt **st = &d->ingest_recall[t];
	int64_t id = 0, origin = -1, found;
	uint64_t oldest = d->dict->epoch > d->adopt_epochs ? d->dict->epoch - d->adopt_epochs : 0;
	int rc;

	if (ingest_open(d) ||
	    (!*st && sqlite3_prepare_v2(d->ingest_db, recall_sql[t], -1, st, NULL) != SQLITE_OK))
		return recall_failed(d);
	if (t == HC_DICT_FRAMES) {
		sqlite3_bind_text(*st, 1, e->name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(*st, 2, (int64_t)e->id);
		sqlite3_bind_int64(*st, 3, e->offset);
		sqlite3_bind_int(*st, 4, (int)e->kind);
		if (e->module)
			sqlite3_bind_text(*st, 5, e->module, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(*st, 5);
		sqlite3_bind_int(*st, 6, e->inlined);
		sqlite3_bind_int64(*st, 7, (int64_t)oldest);
	} else {
		int64_t row;

		ingest_rows_check(d);
		row = hc__stackrows_find(&d->ingest_rows, parent, frame, 0);
		if (row <= 0) {
			sqlite3_reset(*st);
			return row < 0 && row != -ENOMEM ? recall_failed(d) : row;
		}
		sqlite3_bind_int64(*st, 1, row);
		sqlite3_bind_int64(*st, 3, (int64_t)oldest);
	}
	rc = sqlite3_step(*st);
	if (rc == SQLITE_ROW && sqlite3_column_type(*st, 1) != SQLITE_NULL) {
		id = sqlite3_column_int64(*st, 0);
		origin = sqlite3_column_int64(*st, 1);
	}
	/* left stepped, the statement would hold a read transaction open */
	sqlite3_reset(*st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return recall_failed(d);
	if (!id || id > d->dict->t[t].base || origin < (int64_t)oldest)
		return 0;
	/* adopted already (translate() asks by content without looking here first) */
	if (hc_dict__has(d->dict, t, (uint32_t)id))
		return id;
	found = id;
	pthread_mutex_lock(&d->mu);
	if (origin >= d->recall_floor) {
		if (t == HC_DICT_FRAMES) {
			struct hc_dict_frame f = dict_frame(e);

			id = hc_dict__adopt(d->dict, t, &f, (uint32_t)id, (uint64_t)origin);
		} else {
			struct hc_dict_stack s = {.parent = parent, .frame = frame};

			id = hc_dict__adopt(d->dict, t, &s, (uint32_t)id, (uint64_t)origin);
		}
		/* (an entry of this epoch with that content may answer instead) */
		if (id == found)
			d->st.dict_recalled++;
	} else {
		id = 0;
	}
	pthread_mutex_unlock(&d->mu);
	return id;
}

/* Id of an older epoch into the current one: adopted, or its content interned here (a
 * stack's ancestors first) and noted. */
static int64_t translate(struct hc_disk *d, enum hc_dict_table t, uint32_t id)
{
	struct hc_dict *cur = d->dict;
	int64_t nid;
	struct dict_row r;
	uint32_t a;
	int err;

	a = hc_dict__alias(cur, t, id);
	if (a)
		return a;
	nid = adopt(d, t, id);
	if (nid)
		return nid;
	err = old_row(d, t, id, &r);
	if (err)
		return err;
	if (t == HC_DICT_STACKS) {
		int64_t parent = current_id(d, HC_DICT_STACKS, r.stack.parent);
		int64_t frame = parent < 0 ? parent : current_id(d, HC_DICT_FRAMES, r.stack.frame);

		if (frame < 0)
			return frame;
		r.stack = (struct hc_dict_stack){.parent = (uint32_t)parent,
						 .frame = (uint32_t)frame};
	}
	/* its content's newest row, when that may still be adopted (often id itself: serve
	 * keeps the collector's frames' ids across epochs); else a copy */
	nid = t == HC_DICT_TASKS ? 0 : recall(d, t, &r.frame, r.stack.parent, r.stack.frame);
	if (!nid)
		nid = row_intern(cur, t, &r);
	if (nid > 0 && (uint32_t)nid != id)
		err = hc_dict__alias_add(cur, t, id, (uint32_t)nid);
	return err ? err : nid;
}

/* The current epoch's id for id of table t, which a caller may have kept from an older
 * epoch. */
static int64_t current_id(struct hc_disk *d, enum hc_dict_table t, uint32_t id)
{
	int64_t nid;

	if (t == HC_DICT_STACKS && !id)
		return 0;
	if (hc_dict__has(d->dict, t, id))
		return id;
	if (!id || id > d->dict->t[t].base)
		return -EINVAL;
	nid = translate(d, t, id);
	/* a statement left stepped would hold a read transaction open (and the writer's
	 * checkpoints waiting) */
	if (d->ingest_get[t])
		sqlite3_reset(d->ingest_get[t]);
	return nid;
}

/* Content the current epoch lacks and the previous one has (its id there, or 0): adopted. */
static int64_t adopt_found(struct hc_disk *d, enum hc_dict_table t, uint32_t prev_id)
{
	return prev_id ? adopt(d, t, prev_id) : 0;
}

int64_t hc_disk__frame(struct hc_disk *d, const struct hc_path_elem *e)
{
	int err = epoch_room(d);
	int64_t id;

	if (err)
		return err;
	id = hc_dict__find_frame(d->dict, e);
	if (!id && d->prev)
		id = adopt_found(d, HC_DICT_FRAMES, hc_dict__find_frame(d->prev, e));
	if (!id)
		id = recall(d, HC_DICT_FRAMES, e, 0, 0);
	return id ? id : hc_dict__frame(d->dict, e);
}

int64_t hc_disk__task(struct hc_disk *d, const struct hc_path_elem *process,
		      const struct hc_path_elem *thread)
{
	uint32_t pid = (uint32_t)process->id, tid = (uint32_t)thread->id;
	int err = epoch_room(d);
	int64_t id;

	if (err)
		return err;
	id = hc_dict__find_task(d->dict, pid, tid, process->name, thread->name);
	if (!id && d->prev)
		id = adopt_found(
			d, HC_DICT_TASKS,
			hc_dict__find_task(d->prev, pid, tid, process->name, thread->name));
	return id ? id : hc_dict__task(d->dict, pid, tid, process->name, thread->name);
}

int hc_disk__elem(struct hc_disk *d, uint32_t frame, struct hc_path_elem *out)
{
	int err = epoch_room(d); /* an older epoch's frame is interned here */
	int64_t id = err ? err : current_id(d, HC_DICT_FRAMES, frame);

	if (id < 0)
		return (int)id;
	hc_dict__elem(d->dict, (uint32_t)id, out);
	return 0;
}

int64_t hc_disk__stack(struct hc_disk *d, uint32_t parent, uint32_t frame)
{
	int64_t p, f, id;
	int err = epoch_room(d);

	if (err)
		return err;
	p = current_id(d, HC_DICT_STACKS, parent);
	f = p < 0 ? p : current_id(d, HC_DICT_FRAMES, frame);
	if (f < 0)
		return f;
	id = hc_dict__find_stack(d->dict, (uint32_t)p, (uint32_t)f);
	if (!id && d->prev)
		id = adopt_found(d, HC_DICT_STACKS,
				 hc_dict__find_stack(d->prev, (uint32_t)p, (uint32_t)f));
	if (!id)
		id = recall(d, HC_DICT_STACKS, NULL, (uint32_t)p, (uint32_t)f);
	return id ? id : hc_dict__stack(d->dict, (uint32_t)p, (uint32_t)f);
}

static struct hc_blob *pending(struct hc_disk *d, enum hc_disk_store s, int64_t sec)
{
	struct pending *p;

	for (size_t i = d->n_pend; i-- > 0;)
		if (d->pend[i].blob.t == sec && d->pend[i].store == s)
			return &d->pend[i].blob;
	if (!d->n_pend && !d->newest_data_s)
		d->newest_data_s = sec;
	if (sec > d->newest_data_s)
		d->newest_data_s = sec;
	if (d->n_pend == d->cap_pend && hc_array_grow(d->pend, d->cap_pend, d->n_pend + 1, 16))
		return NULL;
	p = &d->pend[d->n_pend++];
	hc_blob__init(&p->blob, sec, s == HC_DISK_LOCKS ? 1 : d->period_ns);
	p->store = (uint8_t)s;
	return &p->blob;
}

int hc_disk__add(struct hc_disk *d, enum hc_disk_store s, int64_t sec, uint32_t task,
		 uint32_t stack, const struct hc_weights *w)
{
	int err = epoch_room(d); /* ids of an older epoch are interned here */
	int64_t t = err ? err : current_id(d, HC_DICT_TASKS, task);
	int64_t k = t < 0 ? t : current_id(d, HC_DICT_STACKS, stack);
	struct hc_blob *b;

	if (k < 0)
		return (int)k;
	b = pending(d, s, sec);
	return b ? hc_blob__add(b, (uint32_t)t, (uint32_t)k, w) : -ENOMEM;
}

int hc_disk__add_heat(struct hc_disk *d, int64_t sec, unsigned int row, uint64_t count)
{
	struct hc_blob *b;

	if (row >= HC_STORE_HEAT_ROWS)
		return -EINVAL;
	b = pending(d, HC_DISK_MAIN, sec);
	if (!b)
		return -ENOMEM;
	b->heat[row] += count;
	return 0;
}

int hc_disk__add_hist(struct hc_disk *d, enum hc_disk_store s, int64_t sec, enum hc_store_hist h,
		      uint32_t pid, const char *key, int64_t value, uint64_t count)
{
	struct hc_blob *b;

	if ((unsigned int)h >= HC_STORE_H_MAX)
		return -EINVAL;
	b = pending(d, s, sec);
	return b ? hc_blob__add_cell(b, (uint8_t)h, pid, key, value, count) : -ENOMEM;
}

int hc_disk__add_counter(struct hc_disk *d, enum hc_disk_store s, int64_t sec,
			 enum hc_store_counter c, const char *key, uint64_t value)
{
	struct hc_blob *b;

	if ((unsigned int)c >= HC_STORE_C_MAX)
		return -EINVAL;
	b = pending(d, s, sec);
	return b ? hc_blob__add_cell(b, (uint8_t)(HC_BLOB_COUNTER + c), 0, key, 0, value) : -ENOMEM;
}

/* Everything pending, open seconds too (as a first row of theirs: what comes later is one
 * more row, merged later), to the writer: a crash loses only what has not reached us yet. */
static int enqueue_pending(struct hc_disk *d)
{
	size_t n = d->n_pend;
	struct batch *b;

	if (!n)
		return 0;
	b = calloc(1, sizeof(*b));
	if (b) {
		b->blobs = calloc(n, sizeof(*b->blobs));
		b->stores = calloc(n, 1);
	}
	if (!b || !b->blobs || !b->stores) {
		if (b) {
			free(b->blobs);
			free(b->stores);
			free(b);
		}
		return -ENOMEM;
	}
	/* the oldest epoch whose rows its ids are: adopted entries' too */
	pthread_rwlock_rdlock(&d->dict->lock);
	b->epoch = d->dict->oldest_origin;
	pthread_rwlock_unlock(&d->dict->lock);
	for (size_t i = 0; i < d->n_pend; i++) {
		b->blobs[b->n] = d->pend[i].blob;
		b->stores[b->n++] = d->pend[i].store;
	}
	d->n_pend = 0;
	pthread_mutex_lock(&d->mu);
	/* A writer that cannot keep up must not hold the whole history in memory. A batch is
	 * one sealed second (with the late pieces of older seconds it carries). */
	while (d->head && d->queued_s + 1 > QUEUE_MAX_S) {
		struct batch *old = d->head;

		d->head = old->next;
		if (!d->head)
			d->tail = NULL;
		d->queued_s--;
		d->st.dropped_queue_s++;
		batch_free(old);
	}
	if (d->tail)
		d->tail->next = b;
	else
		d->head = b;
	d->tail = b;
	d->queued_s++;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	return 0;
}

int hc_disk__seal(struct hc_disk *d, int64_t sec)
{
	int err = enqueue_pending(d);

	if (err)
		return err;
	free_written(d);
	/* The horizons count back from the newest sealed second: never past the data (closing
	 * seals "everything", INT64_MAX, which must not expire the whole history). */
	if (sec > d->newest_data_s)
		sec = d->newest_data_s;
	pthread_mutex_lock(&d->mu);
	if (sec > d->newest_sealed_s)
		d->newest_sealed_s = sec;
	pthread_mutex_unlock(&d->mu);
	return 0;
}

void hc_disk__maintain(struct hc_disk *d)
{
	pthread_mutex_lock(&d->mu);
	d->want_maintain = true;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	hc_disk__sync(d);
}

void hc_disk__sync(struct hc_disk *d)
{
	pthread_mutex_lock(&d->mu);
	while (d->head || d->busy || d->want_maintain)
		pthread_cond_wait(&d->idle_cv, &d->mu);
	pthread_mutex_unlock(&d->mu);
}

void hc_disk__close(struct hc_disk *d)
{
	if (!d)
		return;
	hc_disk__seal(d, INT64_MAX);
	if (d->writer_started) {
		pthread_mutex_lock(&d->mu);
		d->stop = true;
		pthread_cond_signal(&d->cv);
		pthread_mutex_unlock(&d->mu);
		pthread_join(d->writer, NULL);
	}
	if (d->db)
		sqlite3_exec(d->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
	while (d->head) {
		struct batch *b = d->head;

		d->head = b->next;
		batch_free(b);
	}
	disk_free(d);
}

/* ---- the writer ---- */

static const char *const insert_dict_sql[HC_DICT_TABLES] = {
	[HC_DICT_FRAMES] = "INSERT INTO frame VALUES(?,?,?,?,?,?,?)",
	[HC_DICT_TASKS] = "INSERT INTO task VALUES(?,?,?,?,?)",
};

static void bind_text(sqlite3_stmt *st, int col, const char *s)
{
	if (s)
		sqlite3_bind_text(st, col, s, -1, SQLITE_STATIC);
	else
		sqlite3_bind_null(st, col);
}

/* An entry's columns after its id. */
static void bind_entry(sqlite3_stmt *st, enum hc_dict_table t, const void *entry)
{
	if (t == HC_DICT_FRAMES) {
		const struct hc_dict_frame *e = entry;

		sqlite3_bind_int(st, 2, e->kind);
		bind_text(st, 3, e->name);
		bind_text(st, 4, e->module);
		sqlite3_bind_int64(st, 5, (int64_t)e->id);
		sqlite3_bind_int64(st, 6, e->offset);
		sqlite3_bind_int(st, 7, e->inlined);
	} else if (t == HC_DICT_TASKS) {
		const struct hc_dict_task *e = entry;

		sqlite3_bind_int64(st, 2, e->pid);
		sqlite3_bind_int64(st, 3, e->tid);
		bind_text(st, 4, e->process);
		bind_text(st, 5, e->thread);
	} else {
		const struct hc_dict_stack *e = entry;

		sqlite3_bind_int64(st, 2, e->parent);
		sqlite3_bind_int64(st, 3, e->frame);
	}
}

/* An epoch being written, and how far. */
struct dict_write {
	struct hc_dict *dict;
	size_t n[HC_DICT_TABLES];
};

/* Epoch w->dict's row and the entries the file lacks. Under the epoch's read lock: the ingest
 * thread may be appending to the current one. */
static int write_epoch(struct hc_disk *d, sqlite3_stmt *ep, sqlite3_stmt *const ins[],
		       struct dict_write *w)
{
	struct hc_dict *x = w->dict;
	int rc, err = 0;

	sqlite3_bind_int64(ep, 1, (int64_t)x->epoch);
	for (int t = 0; t < HC_DICT_TABLES; t++)
		sqlite3_bind_int64(ep, t + 2, x->t[t].base);
	rc = sqlite3_step(ep) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(d->db);
	sqlite3_reset(ep);
	pthread_rwlock_rdlock(&x->lock);
	for (int t = 0; t < HC_DICT_TABLES; t++) {
		struct hc_dict_tab *tab = &x->t[t];

		w->n[t] = tab->n;
		if (t == HC_DICT_STACKS) {
			if (rc != SQLITE_OK)
				continue;
			err = hc__stackrows_put(
				d->db, &d->cctx, tab->base + (uint32_t)tab->persisted,
				(const struct hc_dict_stack *)tab->v + tab->persisted,
				w->n[t] - tab->persisted, true);
			/* their keys, to be packed (counted before the commit: a write rolled back
			 * only brings packing sooner) */
			if (!err)
				d->packer.fresh += w->n[t] - tab->persisted;
			continue;
		}
		for (size_t i = tab->persisted; rc == SQLITE_OK && i < w->n[t]; i++) {
			uint32_t id = tab->base + (uint32_t)i + 1;

			sqlite3_bind_int64(ins[t], 1, id);
			bind_entry(ins[t], (enum hc_dict_table)t, hc_dict__entry(x, t, id));
			rc = sqlite3_step(ins[t]) == SQLITE_DONE ? SQLITE_OK
								 : sqlite3_errcode(d->db);
			sqlite3_reset(ins[t]);
		}
	}
	pthread_rwlock_unlock(&x->lock);
	return err ? err : rc == SQLITE_OK ? 0 : -hc__disk_sql_errno(rc);
}

/* The dictionary entries the file lacks: of the retired epochs not written yet, then of the
 * current one. *w (malloc'd, *nw of them) says what was written, for write_done(). */
static int write_dict(struct hc_disk *d, struct dict_write **w, size_t *nw)
{
	sqlite3_stmt *ins[HC_DICT_TABLES] = {NULL}, *ep = NULL;
	size_t n = 1;
	int err = 0;

	pthread_mutex_lock(&d->mu);
	for (struct hc_dict *x = d->retired; x; x = x->next)
		n += !x->written;
	*w = calloc(n, sizeof(**w));
	n = 0;
	for (struct hc_dict *x = d->retired; *w && x; x = x->next)
		if (!x->written)
			(*w)[n++].dict = x;
	if (*w)
		(*w)[n++].dict = d->dict;
	pthread_mutex_unlock(&d->mu);
	*nw = n;
	if (!*w)
		return -ENOMEM;
	if (sqlite3_prepare_v2(d->db, "INSERT OR IGNORE INTO epoch VALUES(?,?,?,?)", -1, &ep,
			       NULL) != SQLITE_OK)
		err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
	for (int t = 0; !err && t < HC_DICT_STACKS; t++)
		if (sqlite3_prepare_v2(d->db, insert_dict_sql[t], -1, &ins[t], NULL) != SQLITE_OK)
			err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
	for (size_t i = 0; !err && i < n; i++)
		err = write_epoch(d, ep, ins, &(*w)[i]);
	sqlite3_finalize(ep);
	for (int t = 0; t < HC_DICT_TABLES; t++)
		sqlite3_finalize(ins[t]);
	return err;
}

/* After the commit: what is in the file now; a retired epoch all in it may leave memory. */
static void write_done(struct hc_disk *d, const struct dict_write *w, size_t nw)
{
	for (size_t i = 0; i < nw; i++) {
		bool all = true;

		for (int t = 0; t < HC_DICT_TABLES; t++) {
			w[i].dict->t[t].persisted = w[i].n[t];
			all = all && w[i].n[t] == w[i].dict->t[t].n;
		}
		pthread_mutex_lock(&d->mu);
		if (w[i].dict != d->dict && all)
			w[i].dict->written = true;
		pthread_mutex_unlock(&d->mu);
	}
}

/* The first second ever written, kept in meta (the range held never starts before it,
 * whatever a coarse window's aligned start says). */
static int note_first(struct hc_disk *d, const struct batch *b)
{
	int64_t first = INT64_MAX;
	char sql[200];
	int err;

	for (size_t i = 0; i < b->n; i++)
		if (b->stores[i] == HC_DISK_MAIN && !hc_blob__empty(&b->blobs[i]) &&
		    b->blobs[i].t < first)
			first = b->blobs[i].t;
	if (first == INT64_MAX || (d->first_s && d->first_s <= first))
		return 0;
	snprintf(sql, sizeof(sql),
		 "INSERT INTO meta VALUES('first_s', %" PRId64 ") ON CONFLICT(key) DO UPDATE SET "
		 "value = min(value, excluded.value)",
		 first);
	err = hc__disk_exec(d->db, sql);
	if (!err) {
		pthread_mutex_lock(&d->mu);
		d->first_s = first;
		pthread_mutex_unlock(&d->mu);
	}
	return err;
}

/* A bucket row. */
static int insert_row(sqlite3_stmt *ins, int store, int tier, int64_t t, int64_t span,
		      const struct hc_blob *b, const void *data, size_t len, uint64_t epoch)
{
	sqlite3_bind_int(ins, 1, store);
	sqlite3_bind_int(ins, 2, tier);
	sqlite3_bind_int64(ins, 3, t);
	sqlite3_bind_int64(ins, 4, span);
	sqlite3_bind_int64(ins, 5, (int64_t)b->total.on_cpu_ns);
	sqlite3_bind_int64(ins, 6, (int64_t)b->total.off_cpu_ns);
	sqlite3_bind_int64(ins, 7, (int64_t)b->total.runqueue_ns);
	sqlite3_bind_int64(ins, 8, (int64_t)b->total.samples);
	sqlite3_bind_int64(ins, 9, (int64_t)b->n);
	sqlite3_bind_blob(ins, 10, data, (int)len, SQLITE_STATIC);
	sqlite3_bind_int64(ins, 11, (int64_t)epoch);
	return sqlite3_step(ins) == SQLITE_DONE ? 0 : -1;
}

static const char insert_sql[] = "INSERT INTO bucket VALUES(?,?,?,?,?,?,?,?,?,?,?)";

/*
 * The oldest second tier keeps when newest is the newest sealed one: its horizon, but never
 * past what the next tier has been built from (the 1 h tier only speeds long ranges up: the
 * 1 min one does not wait for it); and never before what --max-disk cut. Writer thread.
 */
static int64_t keep_from(const struct hc_disk *d, int tier, int64_t newest)
{
	int64_t cut = newest + 1 - (int64_t)d->keep_s[tier];

	if (tier < HC_DISK_TIERS - 2 && d->built[tier + 1] < cut)
		cut = d->built[tier + 1];
	return cut > d->cut[tier] ? cut : d->cut[tier];
}

/* Encode b (zstd at level) and insert it as a row of window t of tier. */
static int insert_blob(struct hc_disk *d, sqlite3_stmt *ins, int store, int tier, int64_t t,
		       const struct hc_blob *b, int level, uint64_t epoch)
{
	void *data;
	size_t len;
	int err = hc_blob__encode(b, &d->cctx, level, &data, &len);

	if (err)
		return err;
	if (insert_row(ins, store, tier, t, hc__disk_tier_step[tier], b, data, len, epoch))
		err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
	sqlite3_reset(ins);
	free(data);
	return err;
}

/*
 * The seconds of a batch that fall in windows tier k has built already (late pieces of
 * off-CPU time, or the rest of a window a file of the earlier layout was filling) go into
 * those windows directly: one row per window, whatever number of seconds it gathers.
 */
static int write_built(struct hc_disk *d, sqlite3_stmt *ins, const struct batch *b, int k,
		       int64_t newest)
{
	struct group {
		struct hc_blob blob;
		uint8_t store;
	} *g = NULL;
	size_t ng = 0, cap = 0;
	int err = 0;

	for (size_t i = 0; !err && i < b->n; i++) {
		const struct hc_blob *bl = &b->blobs[i];
		int64_t w = hc__disk_floor(bl->t, hc__disk_tier_step[k]);
		size_t j;

		if (d->built[k] == INT64_MIN || bl->t >= d->built[k] || hc_blob__empty(bl) ||
		    (k < HC_DISK_TIERS - 1 && w < keep_from(d, k, newest)))
			continue;
		for (j = 0; j < ng && (g[j].blob.t != w || g[j].store != b->stores[i]); j++)
			;
		if (j == ng) {
			if (ng == cap && hc_array_grow(g, cap, ng + 1, 8)) {
				err = -ENOMEM;
				break;
			}
			hc_blob__init(&g[ng].blob, w, bl->period_ns);
			g[ng++].store = b->stores[i];
		}
		err = hc_blob__add_blob(&g[j].blob, bl);
	}
	for (size_t j = 0; !err && j < ng; j++)
		err = insert_blob(d, ins, g[j].store, k, g[j].blob.t, &g[j].blob, ZSTD_LEVEL_SECOND,
				  b->epoch);
	for (size_t j = 0; j < ng; j++)
		hc_blob__release(&g[j].blob);
	free(g);
	return err;
}

/*
 * One batch in one transaction: the dictionary, then each second's row of the 1 s tier. The
 * coarser tiers are built from it later (build_tiers), except for the windows they hold
 * already (write_built).
 */
static int write_batch(struct hc_disk *d, struct batch *b, int64_t newest)
{
	int64_t keep0 = keep_from(d, 0, newest);
	struct dict_write *w = NULL;
	sqlite3_stmt *ins = NULL;
	size_t nw = 0;
	int err = hc__disk_exec(d->db, "BEGIN IMMEDIATE");

	if (!err)
		err = write_dict(d, &w, &nw);
	if (!err && sqlite3_prepare_v2(d->db, insert_sql, -1, &ins, NULL) != SQLITE_OK)
		err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
	/* a late piece of a second past a tier's horizon goes only into the tiers that keep it */
	for (size_t i = 0; !err && i < b->n; i++)
		if (!hc_blob__empty(&b->blobs[i]) && b->blobs[i].t >= keep0)
			err = insert_blob(d, ins, b->stores[i], 0, b->blobs[i].t, &b->blobs[i],
					  ZSTD_LEVEL_SECOND, b->epoch);
	for (int k = 1; !err && k < HC_DISK_TIERS; k++)
		err = write_built(d, ins, b, k, newest);
	sqlite3_finalize(ins);
	if (!err)
		err = note_first(d, b);
	if (!err)
		err = hc__disk_exec(d->db, "COMMIT");
	if (err)
		hc__disk_exec(d->db, "ROLLBACK");
	else
		write_done(d, w, nw);
	free(w);
	return err;
}

/*
 * Decode the rows of [t, t + span) of tier, store into b (which holds nothing yet); *epoch:
 * the oldest epoch they name. Rows that fail to decode are left as they are (queries skip
 * them) and counted.
 */
static int gather(struct hc_disk *d, sqlite3_stmt *sel, int store, int tier, int64_t t,
		  int64_t span, struct hc_blob *b, uint64_t *epoch)
{
	int err = 0, rc;

	sqlite3_bind_int(sel, 1, store);
	sqlite3_bind_int(sel, 2, tier);
	sqlite3_bind_int64(sel, 3, t);
	sqlite3_bind_int64(sel, 4, t + span);
	while (!err && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		err = hc_blob__decode(b, sqlite3_column_blob(sel, 0),
				      (size_t)sqlite3_column_bytes(sel, 0), true, true);
		/* ids are unique across epochs: a merged row may hold several, and keeps the
		 * oldest alive */
		if ((uint64_t)sqlite3_column_int64(sel, 1) < *epoch)
			*epoch = (uint64_t)sqlite3_column_int64(sel, 1);
		if (err == -EBADMSG) {
			pthread_mutex_lock(&d->mu);
			d->st.corrupt_blobs++;
			pthread_mutex_unlock(&d->mu);
			err = 0;
		}
	}
	sqlite3_reset(sel);
	return err;
}

static const char gather_sql[] =
	"SELECT data, epoch FROM bucket WHERE store=? AND tier=? AND t>=? AND t<?";

/* A window of a coarse tier, before it is written: its small stacks folded (the main
 * store's; the locks' are few). */
static int fold_window(struct hc_disk *d, int store, int tier, struct hc_blob *b)
{
	if (!tier || store != HC_DISK_MAIN || !d->fold_ns_per_s)
		return 0;
	return hc__fold_blob(&d->fold, b, d->fold_ns_per_s * (uint64_t)hc__disk_tier_step[tier]);
}

/* The fold's counts into the figures; its caches freed (the next round's windows are
 * elsewhere in the dictionary). */
static void fold_done(struct hc_disk *d)
{
	hc__fold_forget(&d->fold);
	hc__stackrows_forget(&d->fold_rows);
	pthread_mutex_lock(&d->mu);
	d->st.folded_entries = d->fold.entries;
	d->st.folded_ns = d->fold.ns;
	d->st.fold_unreadable = d->fold.unreadable;
	pthread_mutex_unlock(&d->mu);
}

/* Merge the rows of one window (store, tier, t) into one. 0, -errno. */
static int merge_window(struct hc_disk *d, sqlite3_stmt *sel, sqlite3_stmt *del, sqlite3_stmt *ins,
			int store, int tier, int64_t t)
{
	struct hc_blob b;
	uint64_t epoch = UINT64_MAX;
	int err;

	hc_blob__init(&b, t, d->period_ns);
	err = gather(d, sel, store, tier, t, hc__disk_tier_step[tier], &b, &epoch);
	if (!err) {
		sqlite3_bind_int(del, 1, store);
		sqlite3_bind_int(del, 2, tier);
		sqlite3_bind_int64(del, 3, t);
		if (sqlite3_step(del) != SQLITE_DONE)
			err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
		sqlite3_reset(del);
	}
	if (!err)
		err = fold_window(d, store, tier, &b);
	/* the 1 s tier lives an hour: not worth the higher level */
	if (!err)
		err = insert_blob(d, ins, store, tier, t, &b,
				  tier ? ZSTD_LEVEL_MERGED : ZSTD_LEVEL_SECOND, epoch);
	hc_blob__release(&b);
	return err;
}

/* Windows that hold several rows (late pieces) and ended COMPACT_LAG_S before the newest
 * sealed second (the 1 s tier's: TIER0_MERGE_LAG_S, by when most of them have come). */
static int merge_windows(struct hc_disk *d, int64_t newest)
{
	sqlite3_stmt *list = NULL, *sel = NULL, *del = NULL, *ins = NULL;
	struct {
		int store, tier;
		int64_t t;
	} w[MERGE_BATCH];
	size_t n = 0;
	int err = 0;

	if (sqlite3_prepare_v2(d->db,
			       "SELECT store, tier, t FROM bucket GROUP BY tier, t, store"
			       " HAVING count(*) > 1 AND max(t + span) <= CASE tier WHEN 0 THEN ?"
			       " ELSE ? END LIMIT ?",
			       -1, &list, NULL) != SQLITE_OK)
		return -hc__disk_sql_errno(sqlite3_errcode(d->db));
	sqlite3_bind_int64(list, 1, newest - TIER0_MERGE_LAG_S);
	sqlite3_bind_int64(list, 2, newest - COMPACT_LAG_S);
	sqlite3_bind_int(list, 3, MERGE_BATCH);
	while (n < MERGE_BATCH && sqlite3_step(list) == SQLITE_ROW) {
		w[n].store = sqlite3_column_int(list, 0);
		w[n].tier = sqlite3_column_int(list, 1);
		w[n++].t = sqlite3_column_int64(list, 2);
	}
	sqlite3_finalize(list);
	if (!n)
		return 0;
	if (sqlite3_prepare_v2(d->db, gather_sql, -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d->db, "DELETE FROM bucket WHERE store=? AND tier=? AND t=?", -1,
			       &del, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d->db, insert_sql, -1, &ins, NULL) != SQLITE_OK)
		err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
	if (!err)
		err = hc__disk_exec(d->db, "BEGIN IMMEDIATE");
	for (size_t i = 0; !err && i < n; i++)
		err = merge_window(d, sel, del, ins, w[i].store, w[i].tier, w[i].t);
	if (!err)
		err = hc__disk_exec(d->db, "COMMIT");
	else
		hc__disk_exec(d->db, "ROLLBACK");
	sqlite3_finalize(sel);
	sqlite3_finalize(del);
	sqlite3_finalize(ins);
	fold_done(d);
	if (!err) {
		pthread_mutex_lock(&d->mu);
		d->st.compactions += n;
		pthread_mutex_unlock(&d->mu);
	}
	return err ? err : (int)n;
}

/* Build window [w, w + span) of tier k from tier k - 1's rows, each store's in a row. */
static int build_window(struct hc_disk *d, sqlite3_stmt *sel, sqlite3_stmt *ins, int k, int64_t w)
{
	int err = 0;

	for (int s = 0; !err && s < HC_DISK_STORES; s++) {
		struct hc_blob b;
		uint64_t epoch = UINT64_MAX;

		hc_blob__init(&b, w, d->period_ns);
		err = gather(d, sel, s, k - 1, w, hc__disk_tier_step[k], &b, &epoch);
		if (!err)
			err = fold_window(d, s, k, &b);
		if (!err && !hc_blob__empty(&b))
			err = insert_blob(d, ins, s, k, w, &b, ZSTD_LEVEL_MERGED, epoch);
		hc_blob__release(&b);
	}
	return err;
}

/*
 * Build tier k's windows from tier k - 1's rows, oldest first: each window once it is
 * complete (it ends at or before limit) or, closing (final), once it has begun before limit.
 * A window is built once: what comes for its seconds afterwards goes into it directly
 * (write_built). The 1 s tier is the only one written every second.
 */
static int build_tier(struct hc_disk *d, int k, int64_t limit, bool final, uint64_t deadline_ns)
{
	int64_t step = hc__disk_tier_step[k], done = d->built[k];
	sqlite3_stmt *next = NULL, *sel = NULL, *ins = NULL;
	int err = 0, n = 0, in_txn = 0;

	if (sqlite3_prepare_v2(d->db, "SELECT min(t) FROM bucket WHERE tier=? AND t>=?", -1, &next,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d->db, gather_sql, -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d->db, insert_sql, -1, &ins, NULL) != SQLITE_OK)
		err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
	while (!err && (final || hc_mono_ns() < deadline_ns)) {
		int64_t w;

		sqlite3_bind_int(next, 1, k - 1);
		sqlite3_bind_int64(next, 2, done);
		if (sqlite3_step(next) != SQLITE_ROW ||
		    sqlite3_column_type(next, 0) == SQLITE_NULL) {
			sqlite3_reset(next);
			break;
		}
		w = hc__disk_floor(sqlite3_column_int64(next, 0), step);
		sqlite3_reset(next);
		if (final ? w >= limit : w + step > limit)
			break;
		if (!in_txn && (err = hc__disk_exec(d->db, "BEGIN IMMEDIATE")))
			break;
		in_txn++;
		/* --max-disk cut part of it from the tier below: the oldest go first, so the
		 * rest of it goes too (late pieces do not bring it back) */
		if (w < d->cut[k - 1])
			d->cut[k] = w + step > d->cut[k] ? w + step : d->cut[k];
		else
			err = build_window(d, sel, ins, k, w);
		done = w + step;
		n++;
		if (!err && in_txn == BUILD_TXN) {
			err = hc__disk_exec(d->db, "COMMIT");
			in_txn = 0;
			if (!err)
				d->built[k] = done;
		}
	}
	if (in_txn && !err && !(err = hc__disk_exec(d->db, "COMMIT")))
		d->built[k] = done;
	else if (in_txn && err)
		hc__disk_exec(d->db, "ROLLBACK");
	sqlite3_finalize(next);
	sqlite3_finalize(sel);
	sqlite3_finalize(ins);
	if (n && !err) {
		pthread_mutex_lock(&d->mu);
		d->st.builds += (uint64_t)n;
		pthread_mutex_unlock(&d->mu);
	}
	return err;
}

/* Each coarser tier from the one below it: the 10 s tier BUILD_LAG_S behind the newest
 * sealed second (most off-CPU time for a second comes within it), the others as soon as the
 * tier below holds their whole window. */
static void build_tiers(struct hc_disk *d, int64_t newest, bool final)
{
	uint64_t deadline_ns = hc_mono_ns() + BUILD_ROUND_NS;

	for (int k = 1; k < HC_DISK_TIERS; k++) {
		int64_t limit = k == 1 ? newest + 1 - (final ? 0 : BUILD_LAG_S) : d->built[k - 1];

		if (limit == INT64_MIN || build_tier(d, k, limit, final, deadline_ns))
			break;
	}
	fold_done(d);
}

/* Delete the windows of tier whose start is before cutoff; the seconds they held. */
static int64_t drop_before(struct hc_disk *d, int tier, int64_t cutoff)
{
	char sql[200];
	int64_t s;

	snprintf(sql, sizeof(sql),
		 "SELECT count(DISTINCT t) FROM bucket WHERE tier=%d AND t < %" PRId64, tier,
		 cutoff);
	s = query_int(d->db, sql, 0) * hc__disk_tier_step[tier];
	if (!s)
		return 0;
	snprintf(sql, sizeof(sql), "DELETE FROM bucket WHERE tier=%d AND t < %" PRId64, tier,
		 cutoff);
	return hc__disk_exec(d->db, sql) ? 0 : s;
}

/* Pages in use (not free). The WAL is not counted: it is checkpointed and truncated after
 * each maintenance round, and between rounds holds at most SQLite's autocheckpoint (1000
 * pages, 4 MiB) plus what one round rewrote. */
static uint64_t used_bytes(struct hc_disk *d)
{
	int64_t psz = query_int(d->db, "PRAGMA page_size", 4096);
	int64_t used = query_int(d->db, "PRAGMA page_count", 0) -
		       query_int(d->db, "PRAGMA freelist_count", 0);

	return (uint64_t)(used * psz);
}

/* Each tier's horizon, then max_bytes: the oldest windows of whichever tier holds the oldest
 * data go first, in steps of a twentieth of what that tier holds. */
/* The oldest second the tiers that answer queries (all but the 1 h one, which only speeds
 * long ranges up) hold; INT64_MAX when they are empty. */
static int64_t answering_oldest(struct hc_disk *d)
{
	int64_t oldest = INT64_MAX;
	char sql[96];

	for (int tier = 0; tier < HC_DISK_TIERS - 1; tier++) {
		int64_t lo;

		snprintf(sql, sizeof(sql), "SELECT min(t) FROM bucket WHERE tier=%d", tier);
		lo = query_int(d->db, sql, INT64_MAX);
		if (lo < oldest)
			oldest = lo;
	}
	return oldest;
}

/*
 * Delete the dictionary rows of the epochs nothing can reference any more: older than every
 * bucket in the file (a merged row names the oldest epoch it holds ids of), every batch still
 * queued and the current epoch. Ids only grow, so an epoch's rows are an id range.
 */
static void drop_epochs(struct hc_disk *d)
{
	static const char *const del[HC_DICT_TABLES] = {
		"DELETE FROM frame WHERE id <= ?",
		"DELETE FROM task WHERE id <= ?",
	};
	int64_t keep = query_int(d->db, "SELECT min(epoch) FROM bucket", INT64_MAX);
	sqlite3_stmt *st = NULL;
	uint64_t deleted = 0, stacks = 0;
	int err;

	pthread_mutex_lock(&d->mu);
	for (struct batch *b = d->head; b; b = b->next)
		if ((int64_t)b->epoch < keep)
			keep = (int64_t)b->epoch;
	/* what the current epoch adopted, and what it may still adopt from the previous one */
	for (int i = 0; i < 2; i++) {
		struct hc_dict *x = i ? d->prev : d->dict;

		if (!x)
			continue;
		pthread_rwlock_rdlock(&x->lock);
		if ((int64_t)x->oldest_origin < keep)
			keep = (int64_t)x->oldest_origin;
		pthread_rwlock_unlock(&x->lock);
	}
	/* from now on the ingest adopts nothing below keep (recall()) */
	if (keep > d->recall_floor)
		d->recall_floor = keep;
	pthread_mutex_unlock(&d->mu);
	if (query_int(d->db, "SELECT min(id) FROM epoch", INT64_MAX) >= keep)
		return;
	err = hc__disk_exec(d->db, "BEGIN IMMEDIATE");
	/* the bases of the oldest epoch kept: everything below them goes */
	if (!err && sqlite3_prepare_v2(d->db,
				       "SELECT frame_base, task_base, stack_base FROM epoch"
				       " WHERE id >= ? ORDER BY id LIMIT 1",
				       -1, &st, NULL) != SQLITE_OK)
		err = -EIO;
	if (!err) {
		sqlite3_bind_int64(st, 1, keep);
		if (sqlite3_step(st) != SQLITE_ROW)
			err = -ENOENT; /* the epoch kept has no row yet: next round */
	}
	if (!err)
		err = hc__stackrows_drop(d->db, (uint32_t)sqlite3_column_int64(st, HC_DICT_STACKS),
					 &stacks);
	for (int t = 0; !err && t < HC_DICT_STACKS; t++) {
		sqlite3_stmt *dt;

		if (sqlite3_prepare_v2(d->db, del[t], -1, &dt, NULL) != SQLITE_OK) {
			err = -EIO;
			break;
		}
		sqlite3_bind_int64(dt, 1, sqlite3_column_int64(st, t));
		if (sqlite3_step(dt) != SQLITE_DONE)
			err = -hc__disk_sql_errno(sqlite3_errcode(d->db));
		deleted += (uint64_t)sqlite3_changes(d->db);
		sqlite3_finalize(dt);
	}
	sqlite3_finalize(st);
	if (!err) {
		char sql[96];

		snprintf(sql, sizeof(sql), "DELETE FROM epoch WHERE id < %" PRId64, keep);
		err = hc__disk_exec(d->db, sql);
	}
	if (!err)
		err = hc__disk_exec(d->db, "COMMIT");
	if (err) {
		hc__disk_exec(d->db, "ROLLBACK");
		return;
	}
	/* their keys go as packing meets them */
	d->packer.stale += stacks;
	pthread_mutex_lock(&d->mu);
	d->st.dict_rows_deleted += deleted + stacks;
	if (stacks)
		d->rows_gen++;
	pthread_mutex_unlock(&d->mu);
}

static void expire(struct hc_disk *d, int64_t newest)
{
	int64_t expired = 0, before, after;

	for (int tier = 0; tier < HC_DISK_TIERS - 1; tier++)
		expired += drop_before(d, tier, keep_from(d, tier, newest));
	/* The 1 h tier answers nothing itself: an hour goes once all of it is past the horizon,
	 * and its seconds were counted in the tiers that answer. */
	drop_before(d, HC_DISK_TIERS - 1,
		    newest + 2 - (int64_t)d->keep_s[HC_DISK_TIERS - 1] -
			    hc__disk_tier_step[HC_DISK_TIERS - 1]);
	drop_epochs(d);
	before = answering_oldest(d);
	for (int round = 0; round < 400 && used_bytes(d) > d->max_bytes; round++) {
		int64_t oldest = INT64_MAX, lo, hi, cut, step;
		int which = -1;
		char sql[160];

		for (int tier = 0; tier < HC_DISK_TIERS; tier++) {
			snprintf(sql, sizeof(sql), "SELECT min(t) FROM bucket WHERE tier=%d", tier);
			lo = query_int(d->db, sql, INT64_MAX);
			if (lo < oldest) {
				oldest = lo;
				which = tier;
			}
		}
		if (which < 0)
			break;
		snprintf(sql, sizeof(sql), "SELECT max(t) FROM bucket WHERE tier=%d", which);
		hi = query_int(d->db, sql, oldest);
		/* a twentieth of the tier, in whole windows, at least one */
		step = hc__disk_tier_step[which];
		cut = (hi - oldest) / 20 / step * step;
		cut = oldest + (cut > step ? cut : step);
		drop_before(d, which, cut);
		/* late pieces must not bring back what was cut */
		if (cut > d->cut[which])
			d->cut[which] = cut;
		drop_epochs(d); /* what the dropped windows alone referenced counts too */
	}
	after = answering_oldest(d);
	pthread_mutex_lock(&d->mu);
	d->st.expired_s += (uint64_t)expired;
	/* What no answering tier holds any more, whichever tiers the cuts were in. */
	if (before != INT64_MAX && after > before)
		d->st.dropped_max_disk_s += (uint64_t)(after == INT64_MAX ? 0 : after - before);
	pthread_mutex_unlock(&d->mu);
	sqlite3_exec(d->db, "PRAGMA wal_checkpoint(TRUNCATE)", NULL, NULL, NULL);
}

/* The figures of each tier, and the file's size. */
static void refresh_tiers(struct hc_disk *d)
{
	struct hc_disk_tier_stats t[HC_DISK_TIERS] = {0};
	sqlite3_stmt *st;
	struct stat sb;
	uint64_t used = used_bytes(d);
	uint64_t epochs = (uint64_t)query_int(d->db, "SELECT count(*) FROM epoch", 0);

	if (sqlite3_prepare_v2(d->db,
			       "SELECT tier, count(DISTINCT t), min(t), max(t + span) FROM bucket"
			       " WHERE store=0 GROUP BY tier",
			       -1, &st, NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			int tier = sqlite3_column_int(st, 0);

			if (tier < 0 || tier >= HC_DISK_TIERS)
				continue;
			t[tier].buckets = (uint64_t)sqlite3_column_int64(st, 1);
			t[tier].seconds = t[tier].buckets * (uint64_t)hc__disk_tier_step[tier];
			t[tier].oldest_s = sqlite3_column_int64(st, 2);
			t[tier].newest_s = sqlite3_column_int64(st, 3) - 1;
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_lock(&d->mu);
	memcpy(d->st.tier, t, sizeof(t));
	d->st.dict_epochs = epochs;
	d->st.bytes = used;
	d->st.file_bytes = stat(d->path, &sb) ? 0 : (uint64_t)sb.st_size;
	d->st.oldest_s = d->st.newest_s = 0;
	/* The range held is what the tiers that answer hold (not the 1 h one's whole hours), and
	 * never before the first second ever written: a coarse window's start is aligned
	 * before it. */
	for (int i = 0; i < HC_DISK_TIERS - 1; i++) {
		if (!t[i].buckets)
			continue;
		if (!d->st.oldest_s || t[i].oldest_s < d->st.oldest_s)
			d->st.oldest_s = t[i].oldest_s;
		/* a coarse window ends in the future while it fills: the finest tier says */
		if (!d->st.newest_s)
			d->st.newest_s = t[i].newest_s;
	}
	if (d->st.oldest_s && d->first_s && d->st.oldest_s < d->first_s)
		d->st.oldest_s = d->first_s;
	pthread_mutex_unlock(&d->mu);
}

/*
 * The stack rows' upkeep (store/stackrows.h), one transaction, within STACKROWS_ROUND_NS: the
 * fresh keys packed (a pass over the slots when due, some of it each round), then the chunks
 * of the epochs written whole merged (each transaction wrote its new rows as a chunk).
 */
static void stackrows_upkeep(struct hc_disk *d)
{
	uint64_t t0 = hc_mono_ns(), merged = 0;
	int64_t floor, limit;
	sqlite3_stmt *st = NULL;
	struct hc_stackrows_packer was = d->packer;
	uint32_t compacted_was = d->compacted_to;
	int err = hc__disk_exec(d->db, "BEGIN IMMEDIATE");

	/* ids below the oldest epoch's base are deleted: their keys go */
	floor = query_int(d->db, "SELECT min(stack_base) FROM epoch", 0);
	while (!err && hc_mono_ns() - t0 < STACKROWS_ROUND_NS) {
		uint64_t passes = d->packer.passes;

		err = hc__stackrows_pack_step(d->db, &d->packer, (uint32_t)floor);
		if (!d->packer.next || d->packer.passes != passes)
			break;
	}
	/* the epochs below the current one and below any not yet written whole */
	pthread_mutex_lock(&d->mu);
	limit = d->dict->t[HC_DICT_STACKS].base;
	for (const struct hc_dict *x = d->retired; x; x = x->next)
		if (!x->written && x->t[HC_DICT_STACKS].base < limit)
			limit = x->t[HC_DICT_STACKS].base;
	pthread_mutex_unlock(&d->mu);
	if (!err && sqlite3_prepare_v2(d->db,
				       "SELECT stack_base FROM epoch WHERE stack_base >= ?"
				       " ORDER BY stack_base",
				       -1, &st, NULL) != SQLITE_OK)
		err = -EIO;
	if (!err && d->compacted_to < (uint32_t)floor)
		d->compacted_to = (uint32_t)floor;
	if (!err)
		sqlite3_bind_int64(st, 1, d->compacted_to);
	while (!err && sqlite3_step(st) == SQLITE_ROW && hc_mono_ns() - t0 < STACKROWS_ROUND_NS) {
		int64_t hi = sqlite3_column_int64(st, 0);
		uint64_t m = 0;

		if (hi > limit)
			break;
		if (hi > d->compacted_to)
			err = hc__stackrows_compact(d->db, &d->cctx, d->compacted_to, (uint32_t)hi,
						    &m);
		if (!err)
			d->compacted_to = (uint32_t)hi;
		merged += m;
	}
	sqlite3_finalize(st);
	if (!err)
		err = hc__disk_exec(d->db, "COMMIT");
	if (err) {
		/* nothing of it happened: the next round does it again */
		hc__disk_exec(d->db, "ROLLBACK");
		d->packer = was;
		d->compacted_to = compacted_was;
		return;
	}
	pthread_mutex_lock(&d->mu);
	d->st.stack_keys_fresh = d->packer.fresh;
	d->st.stack_keys_packed = d->packer.packed;
	d->st.stack_key_passes = d->packer.passes;
	d->st.stack_chunks_merged += merged;
	pthread_mutex_unlock(&d->mu);
}

static void maintain(struct hc_disk *d, int64_t newest)
{
	uint64_t t0 = hc_mono_ns(), dt;
	int rounds = 0;

	build_tiers(d, newest, false);
	while (merge_windows(d, newest) == MERGE_BATCH && ++rounds < 16)
		;
	expire(d, newest);
	stackrows_upkeep(d);
	dt = hc_mono_ns() - t0;
	pthread_mutex_lock(&d->mu);
	d->st.maintain_ns_last = dt;
	if (dt > d->st.maintain_ns_max)
		d->st.maintain_ns_max = dt;
	pthread_mutex_unlock(&d->mu);
}

/* Between full refreshes: what a batch added to each tier's range. */
static void note_written(struct hc_disk *d, const struct batch *b)
{
	pthread_mutex_lock(&d->mu);
	for (size_t i = 0; i < b->n; i++) {
		if (b->stores[i] != HC_DISK_MAIN || hc_blob__empty(&b->blobs[i]))
			continue;
		for (int tier = 0; tier < HC_DISK_TIERS; tier++) {
			struct hc_disk_tier_stats *t = &d->st.tier[tier];
			int64_t step = hc__disk_tier_step[tier], s = b->blobs[i].t;

			if (tier && s >= d->built[tier])
				continue; /* built later */
			int64_t end = (s >= 0 ? s / step * step : s - step + 1) + step - 1;

			if (!t->buckets || s < t->oldest_s)
				t->oldest_s = s - ((s % step) + step) % step;
			if (!t->buckets || end > t->newest_s) {
				if (!t->buckets || end / step != t->newest_s / step) {
					t->buckets++;
					t->seconds += (uint64_t)step;
				}
				t->newest_s = end;
			}
		}
		if (!d->st.oldest_s || b->blobs[i].t < d->st.oldest_s)
			d->st.oldest_s = b->blobs[i].t;
		if (b->blobs[i].t > d->st.newest_s)
			d->st.newest_s = b->blobs[i].t;
	}
	pthread_mutex_unlock(&d->mu);
}

static void *writer_main(void *arg)
{
	struct hc_disk *d = arg;

	pthread_mutex_lock(&d->mu);
	for (;;) {
		struct batch *b;
		uint64_t t0, dt;
		int64_t newest;
		bool compact;
		int err;

		while (!d->head && !d->stop && !d->want_maintain) {
			d->busy = false;
			pthread_cond_broadcast(&d->idle_cv);
			pthread_cond_wait(&d->cv, &d->mu);
		}
		if (!d->head && d->want_maintain) {
			d->want_maintain = false;
			d->busy = true;
			newest = d->newest_sealed_s;
			pthread_mutex_unlock(&d->mu);
			maintain(d, newest);
			refresh_tiers(d);
			d->last_compact_ns = hc_mono_ns();
			pthread_mutex_lock(&d->mu);
			continue;
		}
		if (!d->head) {
			/* closing: every tier holds everything, the windows still filling too
			 * (their seconds to come, after a restart, go into them directly) */
			newest = d->newest_sealed_s;
			pthread_mutex_unlock(&d->mu);
			if (newest)
				build_tiers(d, newest, true);
			pthread_mutex_lock(&d->mu);
			break;
		}
		b = d->head;
		d->head = b->next;
		if (!d->head)
			d->tail = NULL;
		d->queued_s--;
		d->busy = true;
		newest = d->newest_sealed_s;
		pthread_mutex_unlock(&d->mu);

		t0 = hc_mono_ns();
		err = write_batch(d, b, newest);
		dt = hc_mono_ns() - t0;
		compact = hc_mono_ns() - d->last_compact_ns >= d->compact_every_s * 1000000000ull;
		if (compact && !err) {
			d->last_compact_ns = hc_mono_ns();
			maintain(d, newest);
		}
		if (compact)
			refresh_tiers(d);
		else if (!err)
			note_written(d, b);

		pthread_mutex_lock(&d->mu);
		if (err) {
			d->st.write_failures++;
			d->st.dropped_write_s += b->n;
		} else {
			d->st.writes++;
			d->st.write_ns_last = dt;
			if (dt > d->st.write_ns_max)
				d->st.write_ns_max = dt;
		}
		batch_free(b);
	}
	d->busy = false;
	pthread_cond_broadcast(&d->idle_cv);
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

void hc_disk__stats(struct hc_disk *d, struct hc_disk_stats *out)
{
	bool prev_retired = false;

	/* the ingest thread changes the epochs' list and pointer under mu; their entries under
	 * each epoch's lock */
	pthread_mutex_lock(&d->mu);
	*out = d->st;
	pthread_rwlock_rdlock(&d->dict->lock);
	out->frames = d->dict->t[HC_DICT_FRAMES].n + d->dict->t[HC_DICT_FRAMES].ad.n;
	out->tasks = d->dict->t[HC_DICT_TASKS].n + d->dict->t[HC_DICT_TASKS].ad.n;
	out->stacks = d->dict->t[HC_DICT_STACKS].n + d->dict->t[HC_DICT_STACKS].ad.n;
	out->dict_bytes = hc_dict__bytes(d->dict);
	pthread_rwlock_unlock(&d->dict->lock);
	for (const struct hc_dict *x = d->retired; x; x = x->next) {
		out->dict_bytes += hc_dict__bytes(x);
		prev_retired |= x == d->prev;
	}
	if (d->prev && !prev_retired)
		out->dict_bytes += hc_dict__bytes(d->prev);
	pthread_mutex_unlock(&d->mu);
	/* all connections' page caches and statements, the queries' included */
	out->sqlite_bytes = (uint64_t)sqlite3_memory_used();
	hc__epoch_cache_stats(&d->epochs, &out->epoch_cache_bytes, &out->epoch_cache_hits,
			      &out->epoch_cache_misses);
}
