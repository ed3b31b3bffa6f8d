// SPDX-License-Identifier: GPL-2.0-only
/*
 * store/disk on a real SQLite file in a scratch directory: 200 seconds of synthetic adds
 * (entries, late off-CPU time for seconds already sealed, histogram cells, lock counters) come
 * back with the same totals from each tier over aligned ranges, equal to the sum of what was
 * added, to the ns, and equal to the sum of their parts; the answers survive a reopen; the
 * tiers' horizons expire what is past them and max_bytes drops the oldest, both counted; a
 * garbage file is quarantined byte for byte; a second open of a locked directory fails with
 * EWOULDBLOCK.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "profile/hist.h"
#include "profile/store.h"
#include "profile/tree.h"
#include "store/disk.h"

#define T0 ((int64_t)1700000040) /* a multiple of 60: every tier's windows start here */
#define SECONDS 200
#define PERIOD_NS 10101010ull /* not a round number: the encoding's deviation is exercised */
#define TASKS 4
#define FRAMES 6
#define LATE_LAG_S 2 /* off-CPU time reported for a second this long after it was sealed */

struct fixture {
	char dir[PATH_MAX];
	struct hc_disk *d;
	uint32_t task[TASKS];
	uint32_t stack[FRAMES];
	/* what was added, per second (main store) */
	struct hc_weights want[SECONDS];
	uint64_t hist_count[SECONDS];
	uint64_t lock_count[SECONDS], lock_max[SECONDS];
};

static struct hc_disk *open_dir(const char *dir, uint64_t keep0, uint64_t keep1, uint64_t retention,
				uint64_t max_bytes)
{
	struct hc_disk_opts o = {.dir = dir,
				 .retention_s = retention,
				 .max_bytes = max_bytes,
				 .tier_keep_s = {keep0, keep1},
				 .lock_fd = -1,
				 .period_ns = PERIOD_NS,
				 .compact_every_s = 1};
	char why[512] = "";
	struct hc_disk *d = hc_disk__open(&o, why, sizeof(why));

	if (!d)
		print_error("hc_disk__open %s: %s (%s)\n", dir, why, strerror(errno));
	return d;
}

static void rm_rf(const char *dir)
{
	char cmd[PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		print_error("cannot remove %s\n", dir);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	const char *tmp = getenv("TMPDIR");

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "%s/hc-disk-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	hc_disk__close(fx->d);
	rm_rf(fx->dir);
	free(fx);
	return 0;
}

/* The dictionary: TASKS threads of two processes, a small tree of user frames. */
static void dictionary(struct fixture *fx)
{
	static const char *const names[FRAMES] = {"main",    "serve",	"parse",
						  "io_wait", "compute", "hash"};
	static const uint32_t parent[FRAMES] = {0, 0, 1, 1, 0, 4}; /* index + 1, 0: root */

	for (int i = 0; i < TASKS; i++) {
		struct hc_path_elem p = {.kind = HC_NODE_PROCESS,
					 .name = i < 2 ? "web" : "db",
					 .id = i < 2 ? 100 : 200,
					 .offset = -1};
		struct hc_path_elem t = {
			.kind = HC_NODE_THREAD, .name = "worker", .id = 1000 + i, .offset = -1};
		int64_t id = hc_disk__task(fx->d, &p, &t);

		assert_true(id > 0);
		fx->task[i] = (uint32_t)id;
	}
	for (int i = 0; i < FRAMES; i++) {
		struct hc_path_elem f = {
			.kind = HC_NODE_USER, .name = names[i], .module = "app", .offset = -1};
		int64_t fid = hc_disk__frame(fx->d, &f), sid;

		assert_true(fid > 0);
		assert_int_equal(hc_disk__frame(fx->d, &f), fid); /* interned */
		sid = hc_disk__stack(fx->d, parent[i] ? fx->stack[parent[i] - 1] : 0,
				     (uint32_t)fid);
		assert_true(sid > 0);
		fx->stack[i] = (uint32_t)sid;
	}
}

static struct hc_weights weights(int s, int k)
{
	uint64_t samples = (uint64_t)((s * 7 + k * 3) % 11);
	struct hc_weights w = {
		.samples = samples,
		/* not always samples x period: the deviation is kept exactly */
		.on_cpu_ns = samples * PERIOD_NS + (uint64_t)((s + k) % 3) * 17,
		.off_cpu_ns = (uint64_t)((s * 13 + k) % 17) * 1000003ull,
		.runqueue_ns = (uint64_t)((s + 5 * k) % 7) * 99991ull,
	};

	return w;
}

static void add(struct fixture *fx, int s, int k, const struct hc_weights *w)
{
	assert_int_equal(hc_disk__add(fx->d, HC_DISK_MAIN, T0 + s, fx->task[k % TASKS],
				      fx->stack[k % FRAMES], w),
			 0);
	hc_weights__add(&fx->want[s], w);
}

/* Second s: entries, heat, a histogram, lock counters; then off-CPU time of a block that
 * covered second s - LATE_LAG_S, which was sealed (and written) already. */
static void fill_second(struct fixture *fx, int s)
{
	for (int k = 0; k < 9; k++) {
		struct hc_weights w = weights(s, k);

		if (w.samples || w.off_cpu_ns || w.runqueue_ns)
			add(fx, s, k, &w);
	}
	assert_int_equal(hc_disk__add_heat(fx->d, T0 + s, (unsigned int)s % HC_STORE_HEAT_ROWS,
					   (uint64_t)s + 1),
			 0);
	assert_int_equal(hc_disk__add_hist(fx->d, HC_DISK_MAIN, T0 + s, HC_STORE_H_OFFCPU_US, 100,
					   "web", (int64_t)(s % 13) * 37, (uint64_t)(s % 4) + 1),
			 0);
	fx->hist_count[s] = (uint64_t)(s % 4) + 1;
	fx->lock_count[s] = (uint64_t)(s % 5) + 1;
	fx->lock_max[s] = (uint64_t)((s * 31) % 97) + 1;
	assert_int_equal(hc_disk__add_counter(fx->d, HC_DISK_LOCKS, T0 + s, HC_STORE_C_LOCK_COUNT,
					      "rwsem spin", fx->lock_count[s]),
			 0);
	assert_int_equal(hc_disk__add_counter(fx->d, HC_DISK_LOCKS, T0 + s, HC_STORE_C_LOCK_MAX_NS,
					      "rwsem spin", fx->lock_max[s]),
			 0);
	if (s >= LATE_LAG_S) {
		struct hc_weights late = {.off_cpu_ns = 555555ull + (uint64_t)s};

		add(fx, s - LATE_LAG_S, 3, &late);
	}
	assert_int_equal(hc_disk__seal(fx->d, T0 + s), 0);
}

static void fill(struct fixture *fx, int seconds)
{
	dictionary(fx);
	/* paced: the writer's queue bound (dropped_queue_s) is not what these tests are about */
	for (int s = 0; s < seconds; s++) {
		fill_second(fx, s);
		if (s % 10 == 9)
			hc_disk__sync(fx->d);
	}
	hc_disk__sync(fx->d);
	hc_disk__maintain(fx->d);
}

static struct hc_weights want_sum(const struct fixture *fx, int64_t from, int64_t to)
{
	struct hc_weights w = {0};

	for (int64_t s = from; s < to; s++)
		hc_weights__add(&w, &fx->want[s - T0]);
	return w;
}

static struct hc_store_filter all(void)
{
	struct hc_store_filter f = {.on = true, .off = true, .runqueue = true};

	return f;
}

/* The root's totals of tier's range [from, to) of store s. */
static struct hc_weights tree_total(struct hc_disk *d, enum hc_disk_store s, int tier, int64_t from,
				    int64_t to, const struct hc_store_filter *f)
{
	struct hc_disk_range r = {.tier = tier, .from_s = from, .to_s = to};
	struct hc_store_pruned pruned = {0};
	struct hc_tree *t = hc_tree__new();
	struct hc_weights w;

	assert_non_null(t);
	assert_int_equal(hc_disk__tree(d, s, &r, f, t, &pruned), 0);
	w = *hc_node__weights(hc_tree__root(t));
	hc_tree__free(t);
	return w;
}

static void assert_weights_equal(const struct hc_weights *a, const struct hc_weights *b)
{
	assert_int_equal(a->on_cpu_ns, b->on_cpu_ns);
	assert_int_equal(a->off_cpu_ns, b->off_cpu_ns);
	assert_int_equal(a->runqueue_ns, b->runqueue_ns);
	assert_int_equal(a->samples, b->samples);
}

static struct hc_weights timeline_total(struct hc_disk *d, int tier, int64_t from, int64_t to)
{
	struct hc_disk_range r = {.tier = tier, .from_s = from, .to_s = to};
	struct hc_store_slot *slots = NULL;
	struct hc_weights w = {0};
	size_t n = 0;

	assert_int_equal(hc_disk__timeline(d, &r, 60, &slots, &n), 0);
	for (size_t i = 0; i < n; i++) {
		w.on_cpu_ns += slots[i].on_cpu_ns;
		w.off_cpu_ns += slots[i].off_cpu_ns;
		w.runqueue_ns += slots[i].runqueue_ns;
		w.samples += slots[i].samples;
	}
	free(slots);
	return w;
}

static uint64_t hist_total(struct hc_disk *d, int tier, int64_t from, int64_t to,
			   struct hc_hist **keep)
{
	struct hc_disk_range r = {.tier = tier, .from_s = from, .to_s = to};
	struct hc_store_filter f = all();
	struct hc_hist *h = hc_disk__hist(d, HC_DISK_MAIN, &r, HC_STORE_H_OFFCPU_US, &f);
	const uint64_t *c;
	uint64_t sum = 0;

	assert_non_null(h);
	c = hc_hist__counts(h, "web");
	assert_non_null(c);
	for (size_t i = 0; i < hc_hist__nbuckets(h); i++)
		sum += c[i];
	if (keep)
		*keep = h;
	else
		hc_hist__free(h);
	return sum;
}

static int counter_cb(void *ctx, const char *key, uint64_t value)
{
	uint64_t *out = ctx;

	assert_string_equal(key, "rwsem spin");
	*out += value;
	return 0;
}

static uint64_t counter(struct hc_disk *d, int tier, int64_t from, int64_t to,
			enum hc_store_counter c)
{
	struct hc_disk_range r = {.tier = tier, .from_s = from, .to_s = to};
	uint64_t v = 0;

	assert_int_equal(hc_disk__counter(d, HC_DISK_LOCKS, &r, c, counter_cb, &v), 0);
	return v;
}

/* Every tier over every 60 s-aligned range of the 200 s: the same totals, the sum of the
 * adds, and the sum of their parts. */
static void check_identities(struct fixture *fx)
{
	static const int64_t bounds[] = {0, 60, 120, 180};
	struct hc_store_filter f = all();

	for (size_t i = 0; i < 4; i++) {
		for (size_t j = i + 1; j < 4; j++) {
			int64_t from = T0 + bounds[i], to = T0 + bounds[j];
			struct hc_weights want = want_sum(fx, from, to);
			uint64_t hwant = 0, cwant = 0, mwant = 0;
			struct hc_hist *h0, *h;

			for (int64_t s = from; s < to; s++) {
				hwant += fx->hist_count[s - T0];
				cwant += fx->lock_count[s - T0];
				if (fx->lock_max[s - T0] > mwant)
					mwant = fx->lock_max[s - T0];
			}
			assert_int_equal(hist_total(fx->d, 0, from, to, &h0), hwant);
			/* the tiers that answer: the 1 h one only serves their plans */
			for (int tier = 0; tier < HC_DISK_TIERS - 1; tier++) {
				struct hc_weights t =
					tree_total(fx->d, HC_DISK_MAIN, tier, from, to, &f);
				struct hc_weights tl = timeline_total(fx->d, tier, from, to);

				assert_weights_equal(&t, &want);
				assert_weights_equal(&tl, &want);
				assert_int_equal(hist_total(fx->d, tier, from, to, &h), hwant);
				assert_true(hc_hist__equal(h, h0));
				hc_hist__free(h);
				assert_int_equal(
					counter(fx->d, tier, from, to, HC_STORE_C_LOCK_COUNT),
					cwant);
				assert_int_equal(
					counter(fx->d, tier, from, to, HC_STORE_C_LOCK_MAX_NS),
					mwant);
			}
			hc_hist__free(h0);
		}
	}
	/* the parts: [T0, T0 + 180) = [T0, T0 + 37) + [T0 + 37, T0 + 180) at 1 s */
	{
		struct hc_weights a = tree_total(fx->d, HC_DISK_MAIN, 0, T0, T0 + 37, &f);
		struct hc_weights b = tree_total(fx->d, HC_DISK_MAIN, 0, T0 + 37, T0 + 180, &f);
		struct hc_weights whole = tree_total(fx->d, HC_DISK_MAIN, 2, T0, T0 + 180, &f);

		hc_weights__add(&a, &b);
		assert_weights_equal(&a, &whole);
	}
}

static void test_tiers_agree(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_stats st;
	struct hc_disk_range r;

	fx->d = open_dir(fx->dir, 0, 0, 0, 0);
	assert_non_null(fx->d);
	fill(fx, SECONDS);
	hc_disk__stats(fx->d, &st);
	print_message("%zu s written: %" PRIu64 " writes, %" PRIu64 " bytes, %" PRIu64
		      " compactions, tiers %" PRIu64 "/%" PRIu64 "/%" PRIu64 " s\n",
		      (size_t)SECONDS, st.writes, st.bytes, st.compactions, st.tier[0].seconds,
		      st.tier[1].seconds, st.tier[2].seconds);
	assert_int_equal(st.write_failures, 0);
	assert_int_equal(st.dropped_queue_s + st.dropped_write_s + st.dropped_max_disk_s, 0);
	assert_int_equal(st.expired_s, 0);
	assert_int_equal(st.corrupt_blobs, 0);
	assert_true(st.compactions > 0);
	assert_int_equal(st.tier[0].seconds, SECONDS);
	assert_int_equal(st.tier[0].oldest_s, T0);
	assert_int_equal(st.tier[0].newest_s, T0 + SECONDS - 1);
	assert_int_equal(st.tier[1].seconds, SECONDS);
	assert_int_equal(st.tier[2].seconds, 240); /* four 1 min windows, the last one filling */
	assert_int_equal(st.tier[2].oldest_s, T0);
	assert_int_equal(st.oldest_s, T0);
	assert_int_equal(st.newest_s, T0 + SECONDS - 1);
	assert_int_equal(st.frames, FRAMES);
	assert_int_equal(st.tasks, TASKS);
	assert_int_equal(st.stacks, FRAMES);
	/* a range the 1 s tier holds is answered from it, aligned and clipped */
	assert_int_equal(hc_disk__pick(fx->d, T0 + 5, T0 + 500, &r), 0);
	assert_int_equal(r.tier, 0);
	assert_int_equal(r.from_s, T0 + 5);
	assert_int_equal(r.to_s, T0 + SECONDS);
	check_identities(fx);
	/* filters: one pid's part */
	{
		struct hc_store_filter f = all();
		struct hc_weights web, db, both;

		f.has_pid = true;
		f.pid = 100;
		web = tree_total(fx->d, HC_DISK_MAIN, 1, T0, T0 + 120, &f);
		f.pid = 200;
		db = tree_total(fx->d, HC_DISK_MAIN, 1, T0, T0 + 120, &f);
		f = all();
		both = tree_total(fx->d, HC_DISK_MAIN, 1, T0, T0 + 120, &f);
		assert_true(web.on_cpu_ns > 0 && db.on_cpu_ns > 0);
		hc_weights__add(&web, &db);
		assert_weights_equal(&web, &both);
	}
	/* heat: tier 0's rows, summed per second */
	{
		uint64_t rows[3 * HC_STORE_HEAT_ROWS];

		assert_int_equal(hc_disk__heat(fx->d, T0 + 10, 3, rows), 0);
		for (int c = 0; c < 3; c++)
			for (int i = 0; i < HC_STORE_HEAT_ROWS; i++)
				assert_int_equal(rows[c * HC_STORE_HEAT_ROWS + i],
						 i == (10 + c) % HC_STORE_HEAT_ROWS ? 11 + c : 0);
	}

	/* reopen: the same answers, the dictionary loaded (ids unchanged) */
	hc_disk__close(fx->d);
	fx->d = open_dir(fx->dir, 0, 0, 0, 0);
	assert_non_null(fx->d);
	hc_disk__stats(fx->d, &st);
	assert_int_equal(st.quarantined, 0);
	assert_int_equal(st.frames, FRAMES);
	assert_int_equal(st.tasks, TASKS);
	assert_int_equal(st.stacks, FRAMES);
	assert_int_equal(st.tier[0].seconds, SECONDS);
	assert_int_equal(st.tier[0].oldest_s, T0);
	assert_int_equal(st.tier[0].newest_s, T0 + SECONDS - 1);
	check_identities(fx);
	{
		struct hc_path_elem p = {
			.kind = HC_NODE_PROCESS, .name = "web", .id = 100, .offset = -1};
		struct hc_path_elem t = {
			.kind = HC_NODE_THREAD, .name = "worker", .id = 1000, .offset = -1};

		assert_int_equal(hc_disk__task(fx->d, &p, &t), fx->task[0]);
	}
}

/* Each tier's horizon (tier_keep_s, retention_s) expires what is past it, counted. */
static void test_retention(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_stats st;
	struct hc_store_filter f = all();
	struct hc_weights w, want;
	struct hc_disk_range r;

	fx->d = open_dir(fx->dir, 20, 60, 120, 0);
	assert_non_null(fx->d);
	fill(fx, SECONDS);
	hc_disk__stats(fx->d, &st);
	print_message("expired %" PRIu64 " s; tiers %" PRIu64 "/%" PRIu64 "/%" PRIu64 " s\n",
		      st.expired_s, st.tier[0].seconds, st.tier[1].seconds, st.tier[2].seconds);
	/* newest T0 + 199: tier 0 keeps [T0 + 180, ...), tier 1 [T0 + 140, ...), tier 2 the
	 * windows starting at or after T0 + 80 */
	assert_int_equal(st.tier[0].seconds, 20);
	assert_int_equal(st.tier[0].oldest_s, T0 + 180);
	assert_int_equal(st.tier[1].seconds, 60);
	assert_int_equal(st.tier[1].oldest_s, T0 + 140);
	assert_int_equal(st.tier[2].seconds, 120);
	assert_int_equal(st.tier[2].oldest_s, T0 + 120);
	assert_int_equal(st.expired_s, 180 + 140 + 120);
	assert_int_equal(st.dropped_max_disk_s, 0);
	assert_int_equal(st.oldest_s, T0 + 120);
	/* what is left is whole: a range before tier 0's oldest second comes from the finest
	 * tier that reaches back */
	assert_int_equal(hc_disk__pick(fx->d, T0 + 150, T0 + 190, &r), 0);
	assert_int_equal(r.tier, 1);
	assert_int_equal(r.from_s, T0 + 150);
	assert_int_equal(r.to_s, T0 + 190);
	assert_int_equal(hc_disk__pick(fx->d, T0 + 130, T0 + 190, &r), 0);
	assert_int_equal(r.tier, 2);
	assert_int_equal(r.from_s, T0 + 120);
	w = tree_total(fx->d, HC_DISK_MAIN, 2, T0 + 120, T0 + 180, &f);
	want = want_sum(fx, T0 + 120, T0 + 180);
	assert_weights_equal(&w, &want);
	w = tree_total(fx->d, HC_DISK_MAIN, 1, T0 + 140, T0 + 190, &f);
	want = want_sum(fx, T0 + 140, T0 + 190);
	assert_weights_equal(&w, &want);
	w = tree_total(fx->d, HC_DISK_MAIN, 0, T0 + 180, T0 + 200, &f);
	want = want_sum(fx, T0 + 180, T0 + 200);
	assert_weights_equal(&w, &want);
}

/* The bytes of the pages in use (not free) of dir's store file, read as it is on disk. */
static uint64_t pages_bytes(const char *dir)
{
	char uri[PATH_MAX + 64];
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	uint64_t n = 0;

	snprintf(uri, sizeof(uri), "file:%s/%s?immutable=1", dir, HC_DISK_FILE);
	assert_int_equal(sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
					    "SELECT (SELECT page_count FROM pragma_page_count) -"
					    " (SELECT freelist_count FROM pragma_freelist_count),"
					    " (SELECT page_size FROM pragma_page_size)",
					    -1, &st, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	n = (uint64_t)sqlite3_column_int64(st, 0) * (uint64_t)sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

static uint64_t wal_bytes(const char *dir)
{
	char path[PATH_MAX + 32];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s-wal", dir, HC_DISK_FILE);
	return stat(path, &sb) ? 0 : (uint64_t)sb.st_size;
}

/* Fill a store in dir with max_bytes cap (0: unbounded); its figures (and the WAL's size
 * before closing in *wal). The store stays open in fx->d. */
static void fill_capped(struct fixture *fx, const char *dir, uint64_t cap, struct hc_disk_stats *st,
			uint64_t *wal)
{
	memset(fx->want, 0, sizeof(fx->want));
	fx->d = open_dir(dir, 0, 0, 0, cap);
	assert_non_null(fx->d);
	fill(fx, SECONDS);
	hc_disk__stats(fx->d, st);
	*wal = wal_bytes(dir);
	print_message("max %" PRIu64 ": %" PRIu64 " bytes (file %" PRIu64 ", WAL %" PRIu64
		      "), dropped %" PRIu64 " s, tiers %" PRIu64 "/%" PRIu64 "/%" PRIu64
		      " s from T0+%" PRId64 "/%" PRId64 "/%" PRId64 "\n",
		      cap, st->bytes, st->file_bytes, *wal, st->dropped_max_disk_s,
		      st->tier[0].seconds, st->tier[1].seconds, st->tier[2].seconds,
		      st->tier[0].oldest_s - T0, st->tier[1].oldest_s - T0,
		      st->tier[2].oldest_s - T0);
}

/*
 * max_bytes: the oldest data goes first, counted; what is left is whole. The cap is half the
 * pages the unbounded store uses; whether the store then fits it depends on the WAL (see
 * test_max_bytes_wal) and on page granularity, so that is not asserted here.
 */
static void test_max_bytes(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_stats full, st;
	char big[PATH_MAX + 8];
	uint64_t wal, cap;

	snprintf(big, sizeof(big), "%s/big", fx->dir);
	assert_int_equal(mkdir(big, 0700), 0);
	fill_capped(fx, big, 0, &full, &wal);
	hc_disk__close(fx->d);
	fx->d = NULL;
	assert_int_equal(full.dropped_max_disk_s, 0);

	cap = pages_bytes(big) / 2;
	fill_capped(fx, fx->dir, cap, &st, &wal);
	assert_true(st.dropped_max_disk_s > 0);
	assert_int_equal(st.expired_s, 0);
	assert_int_equal(st.write_failures, 0);
	/* A cut takes whole windows, at least one, never a whole tier holding two at once (the
	 * one with the newest second stays); what is counted is what no answering tier holds
	 * any more: never more than the 200 s written. */
	assert_true(st.tier[2].seconds > 0);
	assert_true(st.dropped_max_disk_s <= 200);
	/* the oldest went first: what each tier holds is one run of windows ending at the
	 * newest second */
	assert_true(st.oldest_s > T0);
	assert_true(st.tier[0].seconds > 0);
	for (int t = 0; t < HC_DISK_TIERS; t++) {
		int64_t step = hc_disk__tier_step(t);

		if (!st.tier[t].seconds)
			continue;
		assert_int_equal(st.tier[t].newest_s, (T0 + SECONDS - 1) / step * step + step - 1);
		assert_int_equal((int64_t)st.tier[t].seconds,
				 st.tier[t].newest_s + 1 - st.tier[t].oldest_s);
	}
	{
		struct hc_store_filter f = all();
		struct hc_weights w =
			tree_total(fx->d, HC_DISK_MAIN, 0, st.tier[0].oldest_s, T0 + SECONDS, &f);
		struct hc_weights want = want_sum(fx, st.tier[0].oldest_s, T0 + SECONDS);

		assert_weights_equal(&w, &want);
	}
}

/*
 * max_bytes bounds the pages in use, not the WAL (checkpointed and truncated each round):
 * half of the unbounded store's pages and WAL is met, however many small windows that takes
 * (up to 400 cuts a round).
 */
static void test_max_bytes_wal(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_stats full, st;
	char big[PATH_MAX + 8];
	uint64_t wal, cap;

	snprintf(big, sizeof(big), "%s/big", fx->dir);
	assert_int_equal(mkdir(big, 0700), 0);
	fill_capped(fx, big, 0, &full, &wal);
	hc_disk__close(fx->d);
	fx->d = NULL;

	cap = (pages_bytes(big) + wal) / 2;
	fill_capped(fx, fx->dir, cap, &st, &wal);
	assert_true(st.bytes <= cap);
}

/*
 * Closing seals "everything" (hc_disk__seal(d, INT64_MAX)): the writer's last batch must not
 * take INT64_MAX as the newest second when it compacts, or every tier's horizon (newest + 1 -
 * keep_s, an overflow) lies past all the data and expire() deletes it all.
 */
static void test_close_keeps_history(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_stats st;
	struct timespec ts = {1, 200 * 1000 * 1000}; /* past compact_every_s */

	fx->d = open_dir(fx->dir, 0, 0, 0, 0);
	assert_non_null(fx->d);
	fill(fx, 30);
	/* a second added but not sealed: close seals and writes it, compaction due */
	{
		struct hc_weights w = weights(30, 1);

		w.samples = 1;
		w.on_cpu_ns = PERIOD_NS;
		add(fx, 30, 1, &w);
	}
	nanosleep(&ts, NULL);
	hc_disk__close(fx->d);
	fx->d = open_dir(fx->dir, 0, 0, 0, 0);
	assert_non_null(fx->d);
	hc_disk__stats(fx->d, &st);
	print_message("after close and reopen: tiers %" PRIu64 "/%" PRIu64 "/%" PRIu64 " s\n",
		      st.tier[0].seconds, st.tier[1].seconds, st.tier[2].seconds);
	assert_int_equal(st.tier[0].seconds, 31);
	assert_int_equal(st.tier[1].seconds, 40);
	assert_int_equal(st.tier[2].seconds, 60);
	{
		struct hc_store_filter f = all();
		struct hc_weights w = tree_total(fx->d, HC_DISK_MAIN, 0, T0, T0 + 31, &f);
		struct hc_weights want = want_sum(fx, T0, T0 + 31);

		assert_weights_equal(&w, &want);
	}
}

/* Whether dir/quarantine holds one file whose bytes are want's. */
static bool quarantined_copy(const char *dir, const char *want, size_t len)
{
	char q[PATH_MAX + 16], path[2 * PATH_MAX];
	struct dirent *e;
	bool found = false;
	DIR *dh;

	snprintf(q, sizeof(q), "%s/%s", dir, HC_DISK_QUARANTINE);
	dh = opendir(q);
	if (!dh)
		return false;
	while ((e = readdir(dh))) {
		char buf[8192];
		FILE *f;
		size_t n;

		if (strncmp(e->d_name, HC_DISK_FILE ".", strlen(HC_DISK_FILE) + 1) ||
		    strstr(e->d_name, "-wal") || strstr(e->d_name, "-shm"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", q, e->d_name);
		f = fopen(path, "rb");
		if (!f)
			continue;
		n = fread(buf, 1, sizeof(buf), f);
		fclose(f);
		found = n == len && !memcmp(buf, want, len);
	}
	closedir(dh);
	return found;
}

/* A file that is not a store: moved to DIR/quarantine/ as it was, counted, a new one used. */
static void test_garbage_quarantined(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_opts o = {.dir = fx->dir, .lock_fd = -1, .period_ns = PERIOD_NS};
	char path[PATH_MAX + 32], garbage[6000], why[512] = "";
	struct hc_disk_stats st;
	FILE *f;

	for (size_t i = 0; i < sizeof(garbage); i++)
		garbage[i] = (char)(i * 7 + 3);
	snprintf(path, sizeof(path), "%s/%s", fx->dir, HC_DISK_FILE);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(garbage, 1, sizeof(garbage), f), sizeof(garbage));
	fclose(f);
	fx->d = hc_disk__open(&o, why, sizeof(why));
	assert_non_null(fx->d);
	print_message("why: %s\n", why);
	hc_disk__stats(fx->d, &st);
	assert_int_equal(st.quarantined, 1);
	assert_non_null(strstr(why, path));
	assert_true(quarantined_copy(fx->dir, garbage, sizeof(garbage)));
	/* the new store works */
	fill(fx, 5);
	hc_disk__stats(fx->d, &st);
	assert_int_equal(st.tier[0].seconds, 5);
}

/* The directory's lock: a second open fails with EWOULDBLOCK and says who holds it. */
static void test_locked(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_opts o = {.dir = fx->dir, .lock_fd = -1, .period_ns = PERIOD_NS};
	char why[512] = "";
	struct hc_disk *second;
	int fd;

	fx->d = hc_disk__open(&o, why, sizeof(why));
	assert_non_null(fx->d);
	second = hc_disk__open(&o, why, sizeof(why));
	assert_null(second);
	assert_int_equal(errno, EWOULDBLOCK);
	print_message("why: %s\n", why);
	assert_non_null(strstr(why, fx->dir));
	assert_non_null(strstr(why, "in use"));
	fd = hc_disk__lock(fx->dir, -1, -1, why, sizeof(why));
	assert_int_equal(fd, -EWOULDBLOCK);
	/* released with the store */
	hc_disk__close(fx->d);
	fx->d = NULL;
	fd = hc_disk__lock(fx->dir, -1, -1, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tiers_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes_wal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_keeps_history, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_quarantined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
	};

	return cmocka_run_group_tests_name("store-disk", tests, NULL, NULL);
}
