// SPDX-License-Identifier: GPL-2.0-only
/*
 * The disk store: the file (open, check, quarantine, schema, dictionary), the ingest side
 * (pending buckets per second), the writer thread (writes, merges windows, expires, keeps under
 * max_bytes) and the queries. docs/store.md, "On disk", says why it is shaped so.
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
#include "base/time.h"
#include "base/why.h"
#include "store/blob.h"
#include "store/dict.h"

#define APP_ID 0x68636f6c /* "hcol" */
#define SCHEMA_VERSION 1
#define DEFAULT_RETENTION_S (7 * 86400ull)
#define DEFAULT_MAX_BYTES (1ull << 30)
#define QUEUE_MAX_S 120	    /* seconds waiting for the writer before the oldest are dropped */
#define COMPACT_LAG_S 3	    /* a window is merged once it ended this long before the newest */
#define ZSTD_LEVEL_SECOND 3 /* written each second */
#define ZSTD_LEVEL_MERGED 9 /* merged windows: written once, kept long */
#define MERGE_BATCH 32	    /* windows merged per round */
#define MERGE_OPEN_ROWS 120 /* rows at which a window still filling is merged */

static const int64_t tier_step[HC_DISK_TIERS] = {1, 10, 60, 3600};
static const char *const tier_names[HC_DISK_TIERS] = {"1s", "10s", "1m", "1h"};

int64_t hc_disk__tier_step(int tier)
{
	return tier >= 0 && tier < HC_DISK_TIERS ? tier_step[tier] : 1;
}

const char *hc_disk__tier_name(int tier)
{
	return tier >= 0 && tier < HC_DISK_TIERS ? tier_names[tier] : "?";
}

/* Sealed buckets on their way to the writer. */
struct batch {
	struct batch *next;
	struct hc_blob *blobs;
	uint8_t *stores;
	size_t n;
};

struct pending {
	struct hc_blob blob;
	uint8_t store;
};

struct hc_disk {
	char *dir, *path;
	int lock_fd;
	bool own_lock;
	uint64_t keep_s[HC_DISK_TIERS];
	uint64_t max_bytes;
	uint64_t period_ns;
	uint64_t compact_every_s;
	sqlite3 *db; /* the writer's connection */
	struct hc_dict dict;

	/* ingest thread only */
	struct pending *pend;
	size_t n_pend, cap_pend;
	int64_t newest_data_s; /* the newest second any record was for */

	/* the queue, the writer, the figures: under mu */
	pthread_mutex_t mu;
	pthread_cond_t cv, idle_cv;
	pthread_t writer;
	bool writer_started, stop, busy, want_maintain;
	struct batch *head, *tail;
	size_t queued_s;
	int64_t newest_sealed_s;
	int64_t first_s; /* the first second ever written (meta first_s); 0: unknown */
	uint64_t last_compact_ns;
	struct hc_disk_stats st;
};

/* ---- small SQLite helpers ---- */

static int sql_errno(int rc)
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

static int exec(sqlite3 *db, const char *sql)
{
	return -sql_errno(sqlite3_exec(db, sql, NULL, NULL, NULL));
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

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
	"CREATE TABLE IF NOT EXISTS frame(id INTEGER PRIMARY KEY, kind INTEGER, name TEXT,"
	" module TEXT, fid INTEGER, offset INTEGER, inlined INTEGER);"
	"CREATE TABLE IF NOT EXISTS task(id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER,"
	" process TEXT, thread TEXT);"
	"CREATE TABLE IF NOT EXISTS stack(id INTEGER PRIMARY KEY, parent INTEGER, frame INTEGER);"
	"CREATE TABLE IF NOT EXISTS bucket(store INTEGER, tier INTEGER, t INTEGER, span INTEGER,"
	" on_cpu_ns INTEGER, off_cpu_ns INTEGER, runqueue_ns INTEGER, samples INTEGER,"
	" entries INTEGER, data BLOB);"
	"CREATE INDEX IF NOT EXISTS bucket_at ON bucket(tier, t, store, span);";

static int open_db(const char *path, int flags, sqlite3 **out)
{
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db, flags | SQLITE_OPEN_NOMUTEX, NULL);

	if (rc != SQLITE_OK) {
		sqlite3_close(db);
		return -sql_errno(rc);
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
		return rc == SQLITE_OK ? -EIO : -sql_errno(rc);
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

static int load_frames(struct hc_disk *d)
{
	sqlite3_stmt *st;
	int64_t want = 1;
	int rc, err = 0;

	if (sqlite3_prepare_v2(
		    d->db,
		    "SELECT id, kind, name, module, fid, offset, inlined FROM frame ORDER BY id",
		    -1, &st, NULL) != SQLITE_OK)
		return -EBADMSG;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct hc_path_elem e = {
			.kind = (enum hc_node_kind)sqlite3_column_int(st, 1),
			.name = (const char *)sqlite3_column_text(st, 2),
			.module = (const char *)sqlite3_column_text(st, 3),
			.id = (uint64_t)sqlite3_column_int64(st, 4),
			.offset = sqlite3_column_int64(st, 5),
			.inlined = sqlite3_column_int(st, 6) != 0,
		};
		int64_t id = sqlite3_column_int64(st, 0);

		/* dense ids, each frame once: anything else is damage */
		if (id != want++ || hc_dict__frame(&d->dict, &e) != id)
			err = -EBADMSG;
	}
	sqlite3_finalize(st);
	return err ? err : rc == SQLITE_DONE ? 0 : -EBADMSG;
}

static int load_tasks(struct hc_disk *d)
{
	sqlite3_stmt *st;
	int64_t want = 1;
	int rc, err = 0;

	if (sqlite3_prepare_v2(d->db, "SELECT id, pid, tid, process, thread FROM task ORDER BY id",
			       -1, &st, NULL) != SQLITE_OK)
		return -EBADMSG;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (id != want++ || hc_dict__task(&d->dict, (uint32_t)sqlite3_column_int64(st, 1),
						  (uint32_t)sqlite3_column_int64(st, 2),
						  (const char *)sqlite3_column_text(st, 3),
						  (const char *)sqlite3_column_text(st, 4)) != id)
			err = -EBADMSG;
	}
	sqlite3_finalize(st);
	return err ? err : rc == SQLITE_DONE ? 0 : -EBADMSG;
}

static int load_stacks(struct hc_disk *d)
{
	sqlite3_stmt *st;
	int64_t want = 1;
	int rc, err = 0;

	if (sqlite3_prepare_v2(d->db, "SELECT id, parent, frame FROM stack ORDER BY id", -1, &st,
			       NULL) != SQLITE_OK)
		return -EBADMSG;
	while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(st, 0);

		if (id != want++ || hc_dict__stack(&d->dict, (uint32_t)sqlite3_column_int64(st, 1),
						   (uint32_t)sqlite3_column_int64(st, 2)) != id)
			err = -EBADMSG;
	}
	sqlite3_finalize(st);
	return err ? err : rc == SQLITE_DONE ? 0 : -EBADMSG;
}

static void refresh_tiers(struct hc_disk *d);

/* Open, check, create the schema, load the dictionary: 0, -EBADMSG (damaged: quarantine
 * it), another -errno. */
static int open_store(struct hc_disk *d, char *why, size_t wl)
{
	int err = open_db(d->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &d->db);
	char sql[128];

	if (err) {
		hc_why_set(why, wl, "%s: %s", d->path, strerror(-err));
		return err;
	}
	err = check_db(d->db, why, wl);
	if (!err)
		err = exec(d->db, "PRAGMA journal_mode=WAL");
	if (!err)
		err = exec(d->db, "PRAGMA synchronous=NORMAL; PRAGMA cache_size=-2048;"
				  "PRAGMA temp_store=MEMORY");
	if (!err) {
		snprintf(sql, sizeof(sql), "PRAGMA application_id=%d; PRAGMA user_version=%d",
			 APP_ID, SCHEMA_VERSION);
		err = exec(d->db, schema);
		if (!err)
			err = exec(d->db, sql);
		if (err)
			hc_why_set(why, wl, "%s: creating the schema: %s", d->path,
				   sqlite3_errmsg(d->db));
	}
	if (!err) {
		err = load_frames(d);
		if (!err)
			err = load_tasks(d);
		if (!err)
			err = load_stacks(d);
		if (err == -EBADMSG)
			hc_why_set(why, wl, "damaged dictionary");
	}
	if (err) {
		sqlite3_close(d->db);
		d->db = NULL;
		hc_dict__release(&d->dict);
		hc_dict__init(&d->dict);
		return err;
	}
	d->dict.persisted_frames = d->dict.n_frames;
	d->dict.persisted_tasks = d->dict.n_tasks;
	d->dict.persisted_stacks = d->dict.n_stacks;
	d->first_s = query_int(d->db, "SELECT value FROM meta WHERE key = 'first_s'", 0);
	refresh_tiers(d);
	return 0;
}

static void *writer_main(void *arg);

static void disk_free(struct hc_disk *d)
{
	if (d->db)
		sqlite3_close(d->db);
	hc_dict__release(&d->dict);
	for (size_t i = 0; i < d->n_pend; i++)
		hc_blob__release(&d->pend[i].blob);
	free(d->pend);
	if (d->own_lock && d->lock_fd >= 0)
		close(d->lock_fd);
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
	hc_dict__init(&d->dict);
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

int64_t hc_disk__frame(struct hc_disk *d, const struct hc_path_elem *e)
{
	return hc_dict__frame(&d->dict, e);
}

int64_t hc_disk__task(struct hc_disk *d, const struct hc_path_elem *process,
		      const struct hc_path_elem *thread)
{
	return hc_dict__task(&d->dict, (uint32_t)process->id, (uint32_t)thread->id, process->name,
			     thread->name);
}

int hc_disk__elem(struct hc_disk *d, uint32_t frame, struct hc_path_elem *out)
{
	if (!frame || frame > d->dict.n_frames)
		return -EINVAL;
	hc_dict__elem(&d->dict, frame, out);
	return 0;
}

int64_t hc_disk__stack(struct hc_disk *d, uint32_t parent, uint32_t frame)
{
	return hc_dict__stack(&d->dict, parent, frame);
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
	struct hc_blob *b;

	if (!task || task > d->dict.n_tasks || stack > d->dict.n_stacks)
		return -EINVAL;
	b = pending(d, s, sec);
	return b ? hc_blob__add(b, task, stack, w) : -ENOMEM;
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

static void batch_free(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		hc_blob__release(&b->blobs[i]);
	free(b->blobs);
	free(b->stores);
	free(b);
}

int hc_disk__seal(struct hc_disk *d, int64_t sec)
{
	struct batch *b;
	size_t n;

	/* Seconds still open go too, as a first row of theirs (what comes later is one more
	 * row, merged later): a crash loses only what has not reached us yet. */
	n = d->n_pend;
	if (!n)
		goto out;
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
	for (size_t i = 0; i < d->n_pend; i++) {
		b->blobs[b->n] = d->pend[i].blob;
		b->stores[b->n++] = d->pend[i].store;
	}
	d->n_pend = 0;
	pthread_mutex_lock(&d->mu);
	/* A writer that cannot keep up must not hold the whole history in memory. */
	while (d->head && d->queued_s + b->n > QUEUE_MAX_S) {
		struct batch *old = d->head;

		d->head = old->next;
		if (!d->head)
			d->tail = NULL;
		d->queued_s -= old->n;
		d->st.dropped_queue_s += old->n;
		batch_free(old);
	}
	if (d->tail)
		d->tail->next = b;
	else
		d->head = b;
	d->tail = b;
	d->queued_s += b->n;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
out:
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

/* The dictionary entries the file lacks. Under the dictionary's read lock: the ingest thread
 * may be appending. */
static int write_dict(struct hc_disk *d, size_t *nf_out, size_t *nt_out, size_t *ns_out)
{
	sqlite3_stmt *f = NULL, *t = NULL, *s = NULL;
	size_t nf, nt, ns;
	int rc = SQLITE_OK;

	pthread_rwlock_rdlock(&d->dict.lock);
	nf = d->dict.n_frames;
	nt = d->dict.n_tasks;
	ns = d->dict.n_stacks;
	if (sqlite3_prepare_v2(d->db, "INSERT INTO frame VALUES(?,?,?,?,?,?,?)", -1, &f, NULL) ||
	    sqlite3_prepare_v2(d->db, "INSERT INTO task VALUES(?,?,?,?,?)", -1, &t, NULL) ||
	    sqlite3_prepare_v2(d->db, "INSERT INTO stack VALUES(?,?,?)", -1, &s, NULL))
		rc = sqlite3_errcode(d->db);
	for (size_t i = d->dict.persisted_frames; rc == SQLITE_OK && i < nf; i++) {
		const struct hc_dict_frame *e = &d->dict.frames[i];

		sqlite3_bind_int64(f, 1, (int64_t)i + 1);
		sqlite3_bind_int(f, 2, e->kind);
		sqlite3_bind_text(f, 3, e->name, -1, SQLITE_STATIC);
		if (e->module)
			sqlite3_bind_text(f, 4, e->module, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(f, 4);
		sqlite3_bind_int64(f, 5, (int64_t)e->id);
		sqlite3_bind_int64(f, 6, e->offset);
		sqlite3_bind_int(f, 7, e->inlined);
		rc = sqlite3_step(f) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(d->db);
		sqlite3_reset(f);
	}
	for (size_t i = d->dict.persisted_tasks; rc == SQLITE_OK && i < nt; i++) {
		const struct hc_dict_task *e = &d->dict.tasks[i];

		sqlite3_bind_int64(t, 1, (int64_t)i + 1);
		sqlite3_bind_int64(t, 2, e->pid);
		sqlite3_bind_int64(t, 3, e->tid);
		sqlite3_bind_text(t, 4, e->process, -1, SQLITE_STATIC);
		sqlite3_bind_text(t, 5, e->thread, -1, SQLITE_STATIC);
		rc = sqlite3_step(t) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(d->db);
		sqlite3_reset(t);
	}
	for (size_t i = d->dict.persisted_stacks; rc == SQLITE_OK && i < ns; i++) {
		sqlite3_bind_int64(s, 1, (int64_t)i + 1);
		sqlite3_bind_int64(s, 2, d->dict.stacks[i].parent);
		sqlite3_bind_int64(s, 3, d->dict.stacks[i].frame);
		rc = sqlite3_step(s) == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(d->db);
		sqlite3_reset(s);
	}
	pthread_rwlock_unlock(&d->dict.lock);
	sqlite3_finalize(f);
	sqlite3_finalize(t);
	sqlite3_finalize(s);
	*nf_out = nf;
	*nt_out = nt;
	*ns_out = ns;
	return rc == SQLITE_OK ? 0 : -sql_errno(rc);
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
	err = exec(d->db, sql);
	if (!err) {
		pthread_mutex_lock(&d->mu);
		d->first_s = first;
		pthread_mutex_unlock(&d->mu);
	}
	return err;
}

/* A bucket row. */
static int insert_row(sqlite3_stmt *ins, int store, int tier, int64_t t, int64_t span,
		      const struct hc_blob *b, const void *data, size_t len)
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
	return sqlite3_step(ins) == SQLITE_DONE ? 0 : -1;
}

static const char insert_sql[] = "INSERT INTO bucket VALUES(?,?,?,?,?,?,?,?,?,?)";

/* One batch in one transaction: the dictionary, then each second's row in every tier. */
static int write_batch(struct hc_disk *d, struct batch *b)
{
	sqlite3_stmt *ins = NULL;
	size_t nf = 0, nt = 0, ns = 0;
	int err = exec(d->db, "BEGIN IMMEDIATE");

	if (!err)
		err = write_dict(d, &nf, &nt, &ns);
	if (!err && sqlite3_prepare_v2(d->db, insert_sql, -1, &ins, NULL) != SQLITE_OK)
		err = -sql_errno(sqlite3_errcode(d->db));
	for (size_t i = 0; !err && i < b->n; i++) {
		const struct hc_blob *bl = &b->blobs[i];
		void *data;
		size_t len;

		if (hc_blob__empty(bl))
			continue;
		err = hc_blob__encode(bl, ZSTD_LEVEL_SECOND, &data, &len);
		if (err)
			break;
		for (int tier = 0; !err && tier < HC_DISK_TIERS; tier++) {
			int64_t step = tier_step[tier];
			int64_t t = bl->t >= 0 ? bl->t / step * step
					       : -((-bl->t + step - 1) / step) * step;

			if (insert_row(ins, b->stores[i], tier, t, step, bl, data, len))
				err = -sql_errno(sqlite3_errcode(d->db));
			sqlite3_reset(ins);
		}
		free(data);
	}
	sqlite3_finalize(ins);
	if (!err)
		err = note_first(d, b);
	if (!err)
		err = exec(d->db, "COMMIT");
	if (err) {
		exec(d->db, "ROLLBACK");
		return err;
	}
	d->dict.persisted_frames = nf;
	d->dict.persisted_tasks = nt;
	d->dict.persisted_stacks = ns;
	return 0;
}

/* Merge the rows of one window (store, tier, t) into one. 0, -errno. */
static int merge_window(struct hc_disk *d, sqlite3_stmt *sel, sqlite3_stmt *del, sqlite3_stmt *ins,
			int store, int tier, int64_t t)
{
	struct hc_blob b;
	int64_t span = tier_step[tier];
	void *data = NULL;
	size_t len;
	int err = 0, rc;

	hc_blob__init(&b, t, d->period_ns);
	sqlite3_bind_int(sel, 1, store);
	sqlite3_bind_int(sel, 2, tier);
	sqlite3_bind_int64(sel, 3, t);
	while (!err && (rc = sqlite3_step(sel)) == SQLITE_ROW) {
		err = hc_blob__decode(&b, sqlite3_column_blob(sel, 0),
				      (size_t)sqlite3_column_bytes(sel, 0), true, true);
		if (err == -EBADMSG) { /* leave the window as it is: queries skip the bad row */
			pthread_mutex_lock(&d->mu);
			d->st.corrupt_blobs++;
			pthread_mutex_unlock(&d->mu);
		}
	}
	sqlite3_reset(sel);
	if (!err)
		err = hc_blob__encode(&b, ZSTD_LEVEL_MERGED, &data, &len);
	if (!err) {
		sqlite3_bind_int(del, 1, store);
		sqlite3_bind_int(del, 2, tier);
		sqlite3_bind_int64(del, 3, t);
		if (sqlite3_step(del) != SQLITE_DONE ||
		    insert_row(ins, store, tier, t, span, &b, data, len))
			err = -sql_errno(sqlite3_errcode(d->db));
		sqlite3_reset(del);
		sqlite3_reset(ins);
	}
	free(data);
	hc_blob__release(&b);
	return err;
}

/* Windows that ended COMPACT_LAG_S before the newest sealed second and hold several rows. */
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
			       " HAVING count(*) > 1 AND (max(t + span) <= ? OR count(*) > ?)"
			       " LIMIT ?",
			       -1, &list, NULL) != SQLITE_OK)
		return -sql_errno(sqlite3_errcode(d->db));
	sqlite3_bind_int64(list, 1, newest - COMPACT_LAG_S);
	/* A window still filling is merged too once it has MERGE_OPEN_ROWS rows: an hour of
	 * unmerged seconds would be 3600 rows. */
	sqlite3_bind_int(list, 2, MERGE_OPEN_ROWS);
	sqlite3_bind_int(list, 3, MERGE_BATCH);
	while (n < MERGE_BATCH && sqlite3_step(list) == SQLITE_ROW) {
		w[n].store = sqlite3_column_int(list, 0);
		w[n].tier = sqlite3_column_int(list, 1);
		w[n++].t = sqlite3_column_int64(list, 2);
	}
	sqlite3_finalize(list);
	if (!n)
		return 0;
	if (sqlite3_prepare_v2(d->db, "SELECT data FROM bucket WHERE store=? AND tier=? AND t=?",
			       -1, &sel, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d->db, "DELETE FROM bucket WHERE store=? AND tier=? AND t=?", -1,
			       &del, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(d->db, insert_sql, -1, &ins, NULL) != SQLITE_OK)
		err = -sql_errno(sqlite3_errcode(d->db));
	if (!err)
		err = exec(d->db, "BEGIN IMMEDIATE");
	for (size_t i = 0; !err && i < n; i++)
		err = merge_window(d, sel, del, ins, w[i].store, w[i].tier, w[i].t);
	if (!err)
		err = exec(d->db, "COMMIT");
	else
		exec(d->db, "ROLLBACK");
	sqlite3_finalize(sel);
	sqlite3_finalize(del);
	sqlite3_finalize(ins);
	if (!err) {
		pthread_mutex_lock(&d->mu);
		d->st.compactions += n;
		pthread_mutex_unlock(&d->mu);
	}
	return err ? err : (int)n;
}

/* Delete the windows of tier whose start is before cutoff; the seconds they held. */
static int64_t drop_before(struct hc_disk *d, int tier, int64_t cutoff)
{
	char sql[200];
	int64_t s;

	snprintf(sql, sizeof(sql),
		 "SELECT count(DISTINCT t) FROM bucket WHERE tier=%d AND t < %" PRId64, tier,
		 cutoff);
	s = query_int(d->db, sql, 0) * tier_step[tier];
	if (!s)
		return 0;
	snprintf(sql, sizeof(sql), "DELETE FROM bucket WHERE tier=%d AND t < %" PRId64, tier,
		 cutoff);
	return exec(d->db, sql) ? 0 : s;
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

static void expire(struct hc_disk *d, int64_t newest)
{
	int64_t expired = 0, before, after;

	for (int tier = 0; tier < HC_DISK_TIERS - 1; tier++)
		expired += drop_before(d, tier, newest + 1 - (int64_t)d->keep_s[tier]);
	/* The 1 h tier answers nothing itself: an hour goes once all of it is past the horizon,
	 * and its seconds were counted in the tiers that answer. */
	drop_before(d, HC_DISK_TIERS - 1,
		    newest + 2 - (int64_t)d->keep_s[HC_DISK_TIERS - 1] -
			    tier_step[HC_DISK_TIERS - 1]);
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
		step = tier_step[which];
		cut = (hi - oldest) / 20 / step * step;
		cut = oldest + (cut > step ? cut : step);
		drop_before(d, which, cut);
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

	if (sqlite3_prepare_v2(d->db,
			       "SELECT tier, count(DISTINCT t), min(t), max(t + span) FROM bucket"
			       " WHERE store=0 GROUP BY tier",
			       -1, &st, NULL) == SQLITE_OK) {
		while (sqlite3_step(st) == SQLITE_ROW) {
			int tier = sqlite3_column_int(st, 0);

			if (tier < 0 || tier >= HC_DISK_TIERS)
				continue;
			t[tier].buckets = (uint64_t)sqlite3_column_int64(st, 1);
			t[tier].seconds = t[tier].buckets * (uint64_t)tier_step[tier];
			t[tier].oldest_s = sqlite3_column_int64(st, 2);
			t[tier].newest_s = sqlite3_column_int64(st, 3) - 1;
		}
		sqlite3_finalize(st);
	}
	pthread_mutex_lock(&d->mu);
	memcpy(d->st.tier, t, sizeof(t));
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

static void maintain(struct hc_disk *d, int64_t newest)
{
	int rounds = 0;

	while (merge_windows(d, newest) == MERGE_BATCH && ++rounds < 16)
		;
	expire(d, newest);
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
			int64_t step = tier_step[tier], s = b->blobs[i].t;
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
		if (!d->head)
			break;
		b = d->head;
		d->head = b->next;
		if (!d->head)
			d->tail = NULL;
		d->queued_s -= b->n;
		d->busy = true;
		newest = d->newest_sealed_s;
		pthread_mutex_unlock(&d->mu);

		t0 = hc_mono_ns();
		err = write_batch(d, b);
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
	pthread_mutex_lock(&d->mu);
	*out = d->st;
	pthread_mutex_unlock(&d->mu);
	pthread_rwlock_rdlock(&d->dict.lock);
	out->frames = d->dict.n_frames;
	out->tasks = d->dict.n_tasks;
	out->stacks = d->dict.n_stacks;
	out->dict_bytes = hc_dict__bytes(&d->dict);
	pthread_rwlock_unlock(&d->dict.lock);
}

/* ---- queries ---- */

int hc_disk__pick(struct hc_disk *d, int64_t from_s, int64_t to_s, struct hc_disk_range *out)
{
	struct hc_disk_stats st;
	int tier = -1;

	pthread_mutex_lock(&d->mu);
	st = d->st;
	pthread_mutex_unlock(&d->mu);
	/* Tiers 0..2 answer; the 1 h tier only serves their plans (read_range). */
	for (int i = 0; i < HC_DISK_TIERS - 1 && tier < 0; i++)
		if (st.tier[i].buckets && st.tier[i].oldest_s <= from_s)
			tier = i;
	for (int i = HC_DISK_TIERS - 1; tier < 0 && i-- > 0;)
		if (st.tier[i].buckets)
			tier = i;
	if (tier < 0)
		return -ENODATA;
	out->tier = tier;
	out->from_s = from_s - ((from_s % tier_step[tier]) + tier_step[tier]) % tier_step[tier];
	out->to_s = to_s + (tier_step[tier] -
			    ((to_s % tier_step[tier]) + tier_step[tier]) % tier_step[tier]) %
				   tier_step[tier];
	if (out->from_s < st.tier[tier].oldest_s)
		out->from_s = st.tier[tier].oldest_s;
	if (out->to_s > st.tier[tier].newest_s + 1)
		out->to_s = st.tier[tier].newest_s + 1;
	if (out->to_s < out->from_s)
		out->to_s = out->from_s;
	return 0;
}

/* One piece of a range: [from_s, to_s) of one tier. */
struct piece {
	int tier;
	int64_t from_s, to_s;
};

static int64_t floor_to(int64_t v, int64_t step)
{
	return v >= 0 ? v / step * step : -((-v + step - 1) / step) * step;
}

/*
 * Cover [lo, hi) (aligned to tier k's step) with the fewest rows: the whole windows of the
 * coarsest tier that holds them in the middle, finer tiers at the edges, down to tier k. Every
 * tier holds every second of its horizon, so the pieces sum to the range exactly.
 */
static void plan(const struct hc_disk_stats *st, int k, int j, int64_t lo, int64_t hi,
		 struct piece *p, size_t *n)
{
	int64_t step = tier_step[j], a, b;

	if (lo >= hi)
		return;
	if (j == k) {
		p[(*n)++] = (struct piece){k, lo, hi};
		return;
	}
	a = floor_to(lo + step - 1, step);
	b = floor_to(hi, step);
	if (a >= b || !st->tier[j].buckets || st->tier[j].oldest_s > a) {
		plan(st, k, j - 1, lo, hi, p, n);
		return;
	}
	plan(st, k, j - 1, lo, a, p, n);
	p[(*n)++] = (struct piece){j, a, b};
	plan(st, k, j - 1, b, hi, p, n);
}

/* The rows of range r, store s, decoded into acc. */
static int read_range(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		      struct hc_blob *acc, bool entries, bool cells)
{
	struct piece pieces[2 * HC_DISK_TIERS + 1];
	struct hc_disk_stats st;
	sqlite3 *db;
	sqlite3_stmt *stmt;
	uint64_t bad = 0;
	size_t np = 0;
	int err = open_db(d->path, SQLITE_OPEN_READONLY, &db), rc = SQLITE_DONE;

	if (err)
		return err;
	if (sqlite3_prepare_v2(db,
			       "SELECT data FROM bucket WHERE tier=? AND t>=? AND t<? AND store=?",
			       -1, &stmt, NULL) != SQLITE_OK) {
		err = -sql_errno(sqlite3_errcode(db));
		sqlite3_close(db);
		return err;
	}
	pthread_mutex_lock(&d->mu);
	st = d->st;
	pthread_mutex_unlock(&d->mu);
	plan(&st, r->tier, HC_DISK_TIERS - 1, r->from_s, r->to_s, pieces, &np);
	for (size_t i = 0; !err && i < np; i++) {
		sqlite3_bind_int(stmt, 1, pieces[i].tier);
		sqlite3_bind_int64(stmt, 2, pieces[i].from_s);
		sqlite3_bind_int64(stmt, 3, pieces[i].to_s);
		sqlite3_bind_int(stmt, 4, s);
		while (!err && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
			err = hc_blob__decode(acc, sqlite3_column_blob(stmt, 0),
					      (size_t)sqlite3_column_bytes(stmt, 0), entries,
					      cells);
			if (err == -EBADMSG) {
				bad++;
				err = 0;
			}
		}
		if (!err && rc != SQLITE_DONE)
			err = -sql_errno(rc);
		sqlite3_reset(stmt);
	}
	sqlite3_finalize(stmt);
	sqlite3_close(db);
	if (bad) {
		pthread_mutex_lock(&d->mu);
		d->st.corrupt_blobs += bad;
		pthread_mutex_unlock(&d->mu);
	}
	return err;
}

/* A scratch in-memory store holding a range summed into one second, so that the queries'
 * filters, pruning and histogram rules are the in-memory store's own. */
struct hydrate {
	struct hc_store *st;
	uint32_t *frame_map; /* disk frame id -> scratch id */
	uint32_t *task_map;  /* disk task id -> scratch ids of its process and thread (2 each) */
	uint32_t next_id;
	uint32_t *path;
	size_t cap_path;
};

#define SCRATCH_SEC 0

static int64_t scratch_define(struct hydrate *h, const struct hc_path_elem *e)
{
	int err = hc_store__define_frame(h->st, h->next_id + 1, e);

	if (err)
		return err;
	return ++h->next_id;
}

static int64_t scratch_frame(struct hydrate *h, const struct hc_dict *dict, uint32_t f)
{
	struct hc_path_elem e;
	int64_t id;

	if (h->frame_map[f])
		return h->frame_map[f];
	hc_dict__elem(dict, f, &e);
	id = scratch_define(h, &e);
	if (id > 0)
		h->frame_map[f] = (uint32_t)id;
	return id;
}

static bool task_passes(const struct hc_dict_task *t, const struct hc_store_filter *f)
{
	return (!f->has_pid || t->pid == f->pid) && (!f->has_tid || t->tid == f->tid) &&
	       (!f->comm || !strcmp(f->comm, t->process));
}

static int scratch_entry(struct hydrate *h, const struct hc_dict *dict,
			 const struct hc_blob_entry *e)
{
	const struct hc_dict_task *t = &dict->tasks[e->task - 1];
	size_t n = 0, depth = 0;

	if (!h->task_map[2 * e->task]) {
		struct hc_path_elem p = {
			.kind = HC_NODE_PROCESS, .name = t->process, .id = t->pid, .offset = -1};
		struct hc_path_elem th = {
			.kind = HC_NODE_THREAD, .name = t->thread, .id = t->tid, .offset = -1};
		int64_t a = scratch_define(h, &p), b = a > 0 ? scratch_define(h, &th) : a;

		if (b <= 0)
			return b ? (int)b : -EINVAL;
		h->task_map[2 * e->task] = (uint32_t)a;
		h->task_map[2 * e->task + 1] = (uint32_t)b;
	}
	for (uint32_t s = e->stack; s && depth <= HC_STORE_MAX_DEPTH;
	     s = dict->stacks[s - 1].parent)
		depth++;
	if (depth + 2 > HC_STORE_MAX_DEPTH)
		return -EINVAL;
	if (depth + 2 > h->cap_path && hc_array_grow(h->path, h->cap_path, depth + 2, 64))
		return -ENOMEM;
	h->path[0] = h->task_map[2 * e->task];
	h->path[1] = h->task_map[2 * e->task + 1];
	n = depth + 2;
	for (uint32_t s = e->stack, i = (uint32_t)n; s; s = dict->stacks[s - 1].parent) {
		int64_t id = scratch_frame(h, dict, dict->stacks[s - 1].frame);

		if (id <= 0)
			return id ? (int)id : -EINVAL;
		h->path[--i] = (uint32_t)id;
	}
	return hc_store__add(h->st, SCRATCH_SEC, h->path, n, &e->w);
}

static void hydrate_free(struct hydrate *h)
{
	hc_store__free(h->st);
	free(h->frame_map);
	free(h->task_map);
	free(h->path);
}

/* The range summed into h->st's second SCRATCH_SEC. */
static int hydrate(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		   const struct hc_store_filter *f, bool entries, bool cells, struct hydrate *h)
{
	struct hc_store_opts so = {
		.retention_s = 10,
		.max_bytes = (size_t)1 << 40,
		.period_ns = s == HC_DISK_LOCKS ? 1 : (d->period_ns ? d->period_ns : 1)};
	struct hc_blob acc;
	int err;

	memset(h, 0, sizeof(*h));
	hc_blob__init(&acc, 0, so.period_ns);
	err = read_range(d, s, r, &acc, entries, cells);
	if (err)
		goto out;
	h->st = hc_store__new(&so);
	if (!h->st) {
		err = -ENOMEM;
		goto out;
	}
	pthread_rwlock_rdlock(&d->dict.lock);
	h->frame_map = calloc(d->dict.n_frames + 1, sizeof(*h->frame_map));
	h->task_map = calloc(2 * (d->dict.n_tasks + 1), sizeof(*h->task_map));
	if (!h->frame_map || !h->task_map)
		err = -ENOMEM;
	for (size_t i = 0; !err && i < acc.n; i++) {
		const struct hc_blob_entry *e = &acc.e[i];

		/* ids beyond the dictionary cannot come from this file's writer: skip them */
		if (!e->task || e->task > d->dict.n_tasks || e->stack > d->dict.n_stacks)
			continue;
		if (!task_passes(&d->dict.tasks[e->task - 1], f))
			continue;
		err = scratch_entry(h, &d->dict, e);
	}
	pthread_rwlock_unlock(&d->dict.lock);
	for (size_t i = 0; !err && i < acc.nc; i++) {
		const struct hc_blob_cell *c = &acc.c[i];

		if (c->hist < HC_STORE_H_MAX)
			err = hc_store__add_hist(h->st, SCRATCH_SEC, (enum hc_store_hist)c->hist,
						 c->pid, c->key, c->value, c->count);
		else
			err = hc_store__add_counter(
				h->st, SCRATCH_SEC,
				(enum hc_store_counter)(c->hist - HC_BLOB_COUNTER), c->key,
				c->count);
	}
out:
	hc_blob__release(&acc);
	if (err)
		hydrate_free(h);
	return err;
}

static struct hc_store_filter scratch_filter(const struct hc_store_filter *f)
{
	struct hc_store_filter g = *f;

	g.from_s = SCRATCH_SEC;
	g.to_s = SCRATCH_SEC + 1;
	return g;
}

int hc_disk__tree(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		  const struct hc_store_filter *f, struct hc_tree *out,
		  struct hc_store_pruned *pruned)
{
	struct hc_store_filter g = scratch_filter(f);
	struct hydrate h;
	int err = hydrate(d, s, r, f, true, false, &h);

	if (err)
		return err;
	err = hc_store__tree(h.st, &g, out, pruned);
	hydrate_free(&h);
	return err;
}

struct hc_hist *hc_disk__hist(struct hc_disk *d, enum hc_disk_store s,
			      const struct hc_disk_range *r, enum hc_store_hist hist,
			      const struct hc_store_filter *f)
{
	struct hc_store_filter g = scratch_filter(f);
	struct hc_hist *out;
	struct hydrate h;
	int err = hydrate(d, s, r, f, false, true, &h);

	if (err) {
		errno = -err;
		return NULL;
	}
	out = hc_store__hist(h.st, hist, &g);
	hydrate_free(&h);
	return out;
}

int hc_disk__counter(struct hc_disk *d, enum hc_disk_store s, const struct hc_disk_range *r,
		     enum hc_store_counter c, int (*fn)(void *ctx, const char *key, uint64_t value),
		     void *ctx)
{
	struct hc_store_filter g = {.from_s = SCRATCH_SEC, .to_s = SCRATCH_SEC + 1};
	struct hydrate h;
	int err = hydrate(d, s, r, &g, false, true, &h);

	if (err)
		return err;
	err = hc_store__counter(h.st, c, &g, fn, ctx);
	hydrate_free(&h);
	return err;
}

int hc_disk__timeline(struct hc_disk *d, const struct hc_disk_range *r, int64_t step_s,
		      struct hc_store_slot **out, size_t *n)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	struct hc_store_slot *slots;
	int64_t ns;
	int err;

	if (step_s < 1 || r->from_s >= r->to_s)
		return -EINVAL;
	ns = (r->to_s - r->from_s + step_s - 1) / step_s;
	if (ns > 100000)
		return -EINVAL;
	slots = calloc((size_t)ns, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (int64_t i = 0; i < ns; i++)
		slots[i].t_s = r->from_s + i * step_s;
	err = open_db(d->path, SQLITE_OPEN_READONLY, &db);
	if (!err && sqlite3_prepare_v2(db,
				       "SELECT t, on_cpu_ns, off_cpu_ns, runqueue_ns, samples FROM"
				       " bucket WHERE tier=? AND t>=? AND t<? AND store=0",
				       -1, &st, NULL) != SQLITE_OK)
		err = -sql_errno(sqlite3_errcode(db));
	if (!err) {
		sqlite3_bind_int(st, 1, r->tier);
		sqlite3_bind_int64(st, 2, r->from_s);
		sqlite3_bind_int64(st, 3, r->to_s);
		while (sqlite3_step(st) == SQLITE_ROW) {
			struct hc_store_slot *sl =
				&slots[(sqlite3_column_int64(st, 0) - r->from_s) / step_s];

			sl->on_cpu_ns += (uint64_t)sqlite3_column_int64(st, 1);
			sl->off_cpu_ns += (uint64_t)sqlite3_column_int64(st, 2);
			sl->runqueue_ns += (uint64_t)sqlite3_column_int64(st, 3);
			sl->samples += (uint64_t)sqlite3_column_int64(st, 4);
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	if (err) {
		free(slots);
		return err;
	}
	*out = slots;
	*n = (size_t)ns;
	return 0;
}

int hc_disk__heat(struct hc_disk *d, int64_t from_s, int64_t cols, uint64_t *rows)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	struct hc_blob one;
	int err;

	hc_blob__init(&one, 0, d->period_ns);
	memset(rows, 0, (size_t)cols * HC_STORE_HEAT_ROWS * sizeof(*rows));
	err = open_db(d->path, SQLITE_OPEN_READONLY, &db);
	if (!err && sqlite3_prepare_v2(db,
				       "SELECT t, data FROM bucket WHERE tier=0 AND t>=? AND t<?"
				       " AND store=0",
				       -1, &st, NULL) != SQLITE_OK)
		err = -sql_errno(sqlite3_errcode(db));
	if (!err) {
		sqlite3_bind_int64(st, 1, from_s);
		sqlite3_bind_int64(st, 2, from_s + cols);
		while (!err && sqlite3_step(st) == SQLITE_ROW) {
			int64_t c = sqlite3_column_int64(st, 0) - from_s;

			memset(one.heat, 0, sizeof(one.heat));
			err = hc_blob__decode(&one, sqlite3_column_blob(st, 1),
					      (size_t)sqlite3_column_bytes(st, 1), false, false);
			for (int i = 0; !err && i < HC_STORE_HEAT_ROWS; i++)
				rows[c * HC_STORE_HEAT_ROWS + i] += one.heat[i];
			if (err == -EBADMSG)
				err = 0;
		}
		sqlite3_finalize(st);
	}
	sqlite3_close(db);
	hc_blob__release(&one);
	return err;
}
