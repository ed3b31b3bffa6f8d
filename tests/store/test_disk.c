// SPDX-License-Identifier: GPL-2.0-only
/*
 * store/disk on a real SQLite file in a scratch directory: 200 seconds of synthetic adds
 * (entries, late off-CPU time for seconds already sealed, histogram cells, lock counters) come
 * back with the same totals from each tier over aligned ranges, equal to the sum of what was
 * added, to the ns, and equal to the sum of their parts; the answers survive a reopen; the
 * tiers' horizons expire what is past them and max_bytes drops the oldest, both counted; a
 * garbage file is quarantined byte for byte; a second open of a locked directory fails with
 * EWOULDBLOCK. The dictionary's epochs: a stream of distinct stacks under a small bound rolls
 * over several times, its memory stays under the bound, and every answer (trees, filtered
 * trees, timelines, histograms) is the unbounded store's, to the ns, across a restart, after
 * expiry deleted old epochs' rows (counted in the file), with a window merged across a
 * rollover, and with the writer held back; a file of the first layout is migrated.
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
#include "store/disk_int.h"
#include "store/fold.h"
#include "store/stackrows.h"

#define T0 ((int64_t)1700000040) /* a multiple of 60: every tier's windows start here */
#define SECONDS 200
#define PERIOD_NS 10101010ull /* not a round number: the encoding's deviation is exercised */
#define TASKS 4
#define FRAMES 6
#define LATE_LAG_S 2 /* off-CPU time reported for a second this long after it was sealed */
/* and some this long after: its 10 s and 1 min windows are built by then (BUILD_LAG_S) */
#define LONG_LAG_S 95

struct fixture {
	char dir[PATH_MAX];
	struct hc_disk *d;
	uint32_t task[TASKS];
	uint32_t stack[FRAMES];
	/* what was added, per second (main store) */
	struct hc_weights want[SECONDS];
	uint64_t hist_count[SECONDS];
	uint64_t lock_count[SECONDS], lock_max[SECONDS];
	struct hc_store *mem; /* when set, every add also goes into its second 0 */
};

/* A store in dir: tier horizons, retention, max_bytes and dict_max_bytes (0: defaults). */
static struct hc_disk *open_with(const char *dir, uint64_t keep0, uint64_t keep1,
				 uint64_t retention, uint64_t max_bytes, uint64_t dict_max)
{
	struct hc_disk_opts o = {.dir = dir,
				 .retention_s = retention,
				 .max_bytes = max_bytes,
				 .tier_keep_s = {keep0, keep1},
				 .lock_fd = -1,
				 .period_ns = PERIOD_NS,
				 .compact_every_s = 1,
				 .dict_max_bytes = dict_max};
	char why[512] = "";
	struct hc_disk *d = hc_disk__open(&o, why, sizeof(why));

	if (!d)
		print_error("hc_disk__open %s: %s (%s)\n", dir, why, strerror(errno));
	return d;
}

static struct hc_disk *open_dir(const char *dir, uint64_t keep0, uint64_t keep1, uint64_t retention,
				uint64_t max_bytes)
{
	return open_with(dir, keep0, keep1, retention, max_bytes, 0);
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
static const char *const names[FRAMES] = {"main", "serve", "parse", "io_wait", "compute", "hash"};
static const uint32_t parent[FRAMES] = {0, 0, 1, 1, 0, 4}; /* index + 1, 0: root */

/* The same in an in-memory store: ids 1, 2 the processes, 3.. the threads, then the frames. */
static void mem_dictionary(struct hc_store *m)
{
	for (int i = 0; i < 2; i++) {
		struct hc_path_elem p = {.kind = HC_NODE_PROCESS,
					 .name = i ? "db" : "web",
					 .id = i ? 200 : 100,
					 .offset = -1};

		assert_int_equal(hc_store__define_frame(m, 1 + i, &p), 0);
	}
	for (int i = 0; i < TASKS; i++) {
		struct hc_path_elem t = {
			.kind = HC_NODE_THREAD, .name = "worker", .id = 1000 + i, .offset = -1};

		assert_int_equal(hc_store__define_frame(m, 3 + i, &t), 0);
	}
	for (int i = 0; i < FRAMES; i++) {
		struct hc_path_elem f = {
			.kind = HC_NODE_USER, .name = names[i], .module = "app", .offset = -1};

		assert_int_equal(hc_store__define_frame(m, 3 + TASKS + i, &f), 0);
	}
}

static void mem_add(struct hc_store *m, int task, int stack, const struct hc_weights *w)
{
	uint32_t path[2 + FRAMES];
	size_t n = 0;

	for (int i = stack; i >= 0; i = (int)parent[i] - 1)
		n++;
	path[0] = task < 2 ? 1 : 2;
	path[1] = 3 + (uint32_t)task;
	for (int i = stack, k = (int)n; i >= 0; i = (int)parent[i] - 1)
		path[1 + k--] = 3 + TASKS + (uint32_t)i;
	assert_int_equal(hc_store__add(m, 0, path, n + 2, w), 0);
}

static void dictionary(struct fixture *fx)
{

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
	if (fx->mem)
		mem_add(fx->mem, k % TASKS, k % FRAMES, w);
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
	if (s >= LONG_LAG_S && s % 3 == 0) {
		struct hc_weights late = {.off_cpu_ns = 7777ull * (uint64_t)s};

		add(fx, s - LONG_LAG_S, 4, &late);
		add(fx, s - LONG_LAG_S + 1, 4, &late);
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
			hc_disk__maintain(fx->d); /* builds what the late pieces then go into */
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
	/* the 10 s windows that ended BUILD_LAG_S (30 s) before the newest second are built,
	 * and the 1 min windows they complete */
	assert_int_equal(st.tier[1].seconds, SECONDS - 30);
	assert_int_equal(st.tier[1].newest_s, T0 + SECONDS - 31);
	assert_int_equal(st.tier[2].seconds, 120);
	assert_int_equal(st.tier[2].oldest_s, T0);
	assert_int_equal(st.builds, (SECONDS - 30) / 10 + 2);
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
	/* closing built every tier, the windows still filling too */
	assert_int_equal(st.tier[1].seconds, SECONDS);
	assert_int_equal(st.tier[2].seconds, 240);
	assert_int_equal(st.tier[3].seconds, 3600);
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
	/* newest T0 + 199. A tier keeps what the next one has not been built from: tier 1 holds
	 * [T0, T0 + 170) (BUILD_LAG_S), so tier 0 keeps [T0 + 170, ...) past its 20 s; tier 2
	 * holds the minutes tier 1 completed, [T0, T0 + 120), so tier 1 keeps [T0 + 120, ...)
	 * (its horizon would be T0 + 140); tier 2's horizon (T0 + 80) takes its windows that
	 * start before it, [T0, T0 + 120): it is empty, until [T0 + 120, T0 + 180) is built */
	assert_int_equal(st.tier[0].seconds, 30);
	assert_int_equal(st.tier[0].oldest_s, T0 + 170);
	assert_int_equal(st.tier[1].seconds, 50);
	assert_int_equal(st.tier[1].oldest_s, T0 + 120);
	assert_int_equal(st.tier[2].seconds, 0);
	assert_int_equal(st.expired_s, 170 + 120 + 120);
	assert_int_equal(st.dropped_max_disk_s, 0);
	assert_int_equal(st.oldest_s, T0 + 120);
	/* what is left is whole: a range before tier 0's oldest second comes from the finest
	 * tier that reaches back, its newest seconds (not built yet) from tier 0 */
	assert_int_equal(hc_disk__pick(fx->d, T0 + 150, T0 + 190, &r), 0);
	assert_int_equal(r.tier, 1);
	assert_int_equal(r.from_s, T0 + 150);
	assert_int_equal(r.to_s, T0 + 190);
	assert_int_equal(hc_disk__pick(fx->d, T0 + 100, T0 + 190, &r), 0);
	assert_int_equal(r.tier, 1);
	assert_int_equal(r.from_s, T0 + 120);
	w = tree_total(fx->d, HC_DISK_MAIN, 1, T0 + 120, T0 + 200, &f);
	want = want_sum(fx, T0 + 120, T0 + 200);
	assert_weights_equal(&w, &want);
	w = tree_total(fx->d, HC_DISK_MAIN, 1, T0 + 140, T0 + 190, &f);
	want = want_sum(fx, T0 + 140, T0 + 190);
	assert_weights_equal(&w, &want);
	w = tree_total(fx->d, HC_DISK_MAIN, 0, T0 + 170, T0 + 200, &f);
	want = want_sum(fx, T0 + 170, T0 + 200);
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
	/* A cut takes whole windows, at least one; what is counted is what no answering tier
	 * holds any more: never more than the 200 s written (late pieces do not bring back
	 * what was cut, to be cut and counted again). */
	assert_true(st.dropped_max_disk_s <= 200);
	assert_int_equal(st.dropped_max_disk_s, st.oldest_s - T0);
	/* the oldest went first: what each tier holds is one run of windows, the 1 s tier's
	 * ending at the newest second, each coarser one's where the next finer one begins
	 * or later (it is built from it) */
	assert_true(st.oldest_s > T0);
	assert_true(st.tier[0].seconds > 0);
	assert_int_equal(st.tier[0].newest_s, T0 + SECONDS - 1);
	for (int t = 0; t < HC_DISK_TIERS; t++) {
		if (!st.tier[t].seconds)
			continue;
		assert_int_equal((int64_t)st.tier[t].seconds,
				 st.tier[t].newest_s + 1 - st.tier[t].oldest_s);
		if (t && st.tier[t - 1].seconds)
			assert_true(st.tier[t].newest_s + 1 >= st.tier[t - 1].oldest_s);
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

/* ---- dictionary epochs ---- */

#define CH_SECONDS 240
#define CH_NEW 20		      /* stacks a second with frames never seen before */
#define CH_DEPTH 5		      /* frames below the trunk */
#define CH_PIDS 7		      /* processes */
#define CH_BOUND (640u << 10)	      /* a dictionary bound that this stream passes several times */
#define HOUR_T0 ((int64_t)1700002800) /* a multiple of 3600 */

/* A stream of distinct stacks (process churn: new frames every second), fed the way serve
 * feeds the store: trunk frame ids and a trunk stack id kept from the start, so that they
 * belong to an older epoch after each rollover. */
struct churn {
	struct hc_disk *d;
	int64_t t0; /* a multiple of 60 */
	uint32_t trunk_frame[2], trunk_stack;
	uint32_t early_frame; /* a frame id of second 0, never used again by its id */
	struct hc_weights want[CH_SECONDS + 60];
	uint64_t hist[CH_SECONDS + 60];
	uint64_t epoch_at[CH_SECONDS + 60];
};

/* Entries used again are adopted by the next epochs for this many epochs: fewer than the
 * streams below have, so that old epochs' rows can go. */
#define CH_ADOPT_EPOCHS 4

/* The epoch cache's bound open_epochs() gives (0: the default). */
static uint64_t epochs_cache_bytes;

static struct hc_disk *open_epochs(const char *dir, uint64_t dict_max, uint64_t keep0,
				   uint64_t keep1, uint64_t retention)
{
	struct hc_disk_opts o = {.dir = dir,
				 .retention_s = retention,
				 .tier_keep_s = {keep0, keep1},
				 .lock_fd = -1,
				 .period_ns = PERIOD_NS,
				 .compact_every_s = 1,
				 .dict_max_bytes = dict_max,
				 .dict_ceiling_bytes = dict_max, /* a fixed bound */
				 .adopt_epochs = CH_ADOPT_EPOCHS,
				 /* the same stack under two epochs' ids is two stacks to folding
				  * (it goes by id): the coarse tiers of a store of many epochs and
				  * of one would differ below the threshold */
				 .fold_ns_per_s = HC_DISK_FOLD_OFF,
				 .epoch_cache_bytes = epochs_cache_bytes};
	char why[512] = "";
	struct hc_disk *d = hc_disk__open(&o, why, sizeof(why));

	if (!d)
		print_error("hc_disk__open %s: %s (%s)\n", dir, why, strerror(errno));
	return d;
}

static void churn_trunk(struct churn *c)
{
	static const char *const names[2] = {"main", "loop"};
	int64_t sid = 0;

	for (int i = 0; i < 2; i++) {
		struct hc_path_elem f = {
			.kind = HC_NODE_USER, .name = names[i], .module = "app", .offset = -1};
		int64_t fid = hc_disk__frame(c->d, &f);

		assert_true(fid > 0);
		c->trunk_frame[i] = (uint32_t)fid;
		sid = hc_disk__stack(c->d, (uint32_t)sid, (uint32_t)fid);
		assert_true(sid > 0);
	}
	c->trunk_stack = (uint32_t)sid;
}

/* Second s: CH_NEW new stacks below the kept trunk, a few repeated ones, a histogram. */
static void churn_second(struct churn *c, int s)
{
	char name[64], comm[32];

	for (int k = 0; k < CH_NEW + 8; k++) {
		int pid = 300 + (s + k) % CH_PIDS;
		struct hc_path_elem p = {
			.kind = HC_NODE_PROCESS, .id = (uint64_t)pid, .offset = -1};
		struct hc_path_elem t = {.kind = HC_NODE_THREAD,
					 .name = "worker",
					 .id = (uint64_t)pid * 10 + (uint64_t)(k % 3),
					 .offset = -1};
		/* repeated stacks (k >= CH_NEW) reach back to second 0's names */
		int born = k < CH_NEW ? s : 0;
		struct hc_weights w = weights(s, k);
		int64_t task, stack = c->trunk_stack;

		snprintf(comm, sizeof(comm), "proc%d", pid);
		p.name = comm;
		task = hc_disk__task(c->d, &p, &t);
		assert_true(task > 0);
		for (int depth = 0; depth < CH_DEPTH; depth++) {
			struct hc_path_elem f = {
				.kind = HC_NODE_USER, .module = "lib", .offset = -1};
			int64_t fid;

			snprintf(name, sizeof(name), "fn_%d_%d_%d", born, k % CH_NEW, depth);
			f.name = name;
			fid = hc_disk__frame(c->d, &f);
			assert_true(fid > 0);
			if (!c->early_frame)
				c->early_frame = (uint32_t)fid;
			stack = hc_disk__stack(c->d, (uint32_t)stack, (uint32_t)fid);
			assert_true(stack > 0);
		}
		if (!w.samples && !w.off_cpu_ns && !w.runqueue_ns)
			w.samples = 1, w.on_cpu_ns = PERIOD_NS;
		assert_int_equal(hc_disk__add(c->d, HC_DISK_MAIN, c->t0 + s, (uint32_t)task,
					      (uint32_t)stack, &w),
				 0);
		hc_weights__add(&c->want[s], &w);
	}
	/* the trunk alone, by its kept ids: translated after each rollover */
	{
		struct hc_weights w = {.samples = 2, .on_cpu_ns = 2 * PERIOD_NS};
		struct hc_path_elem p, t;
		int64_t task, stack;

		assert_int_equal(hc_disk__elem(c->d, c->trunk_frame[0], &p), 0);
		assert_string_equal(p.name, "main");
		t = p;
		t.kind = HC_NODE_THREAD;
		p.kind = HC_NODE_PROCESS;
		task = hc_disk__task(c->d, &p, &t);
		stack = hc_disk__stack(c->d, c->trunk_stack, c->trunk_frame[1]);
		assert_true(task > 0 && stack > 0);
		assert_int_equal(hc_disk__add(c->d, HC_DISK_MAIN, c->t0 + s, (uint32_t)task,
					      c->trunk_stack, &w),
				 0);
		assert_int_equal(hc_disk__add(c->d, HC_DISK_MAIN, c->t0 + s, (uint32_t)task,
					      (uint32_t)stack, &w),
				 0);
		hc_weights__add(&c->want[s], &w);
		hc_weights__add(&c->want[s], &w);
	}
	assert_int_equal(hc_disk__add_hist(c->d, HC_DISK_MAIN, c->t0 + s, HC_STORE_H_OFFCPU_US, 300,
					   "proc300", (int64_t)(s % 13) * 37, 1),
			 0);
	c->hist[s] = 1;
	assert_int_equal(hc_disk__seal(c->d, c->t0 + s), 0);
}

/* Seconds [from, to) of the stream; the bound checked each second once the writer caught
 * up (a retired epoch leaves memory at the seal after it was written). */
static void churn_run(struct churn *c, int from, int to, uint64_t bound, uint64_t *max_bytes)
{
	struct hc_disk_stats st;

	for (int s = from; s < to; s++) {
		churn_second(c, s);
		hc_disk__sync(c->d);
		assert_int_equal(hc_disk__seal(c->d, c->t0 + s), 0);
		hc_disk__stats(c->d, &st);
		c->epoch_at[s] = st.dict_epoch;
		if (st.dict_bytes > *max_bytes)
			*max_bytes = st.dict_bytes;
		assert_true(st.dict_bytes <= bound);
	}
	hc_disk__sync(c->d);
	hc_disk__maintain(c->d);
}

static const struct hc_node *node_match(const struct hc_node *parent, const struct hc_node *n)
{
	for (size_t i = 0; i < hc_node__child_count(parent); i++) {
		const struct hc_node *c = hc_node__child(parent, i);

		if (hc_node__kind(c) == hc_node__kind(n) && hc_node__id(c) == hc_node__id(n) &&
		    hc_node__offset(c) == hc_node__offset(n) &&
		    !strcmp(hc_node__name(c), hc_node__name(n)) &&
		    !hc_node__module(c) == !hc_node__module(n) &&
		    (!hc_node__module(c) || !strcmp(hc_node__module(c), hc_node__module(n))))
			return c;
	}
	return NULL;
}

/* The same nodes with the same weights, to the ns. */
static void assert_nodes_equal(const struct hc_node *a, const struct hc_node *b)
{
	assert_weights_equal(hc_node__weights(a), hc_node__weights(b));
	assert_int_equal(hc_node__child_count(a), hc_node__child_count(b));
	for (size_t i = 0; i < hc_node__child_count(a); i++) {
		const struct hc_node *c = hc_node__child(a, i), *o = node_match(b, c);

		assert_non_null(o);
		assert_nodes_equal(c, o);
	}
}

static struct hc_tree *tree_of(struct hc_disk *d, int tier, int64_t from, int64_t to,
			       const struct hc_store_filter *f)
{
	struct hc_disk_range r = {.tier = tier, .from_s = from, .to_s = to};
	struct hc_store_pruned pruned = {0};
	struct hc_tree *t = hc_tree__new();

	assert_non_null(t);
	assert_int_equal(hc_disk__tree(d, HC_DISK_MAIN, &r, f, t, &pruned), 0);
	return t;
}

/* Two stores fed the same stream answer the same over [from, to): trees (whole, and
 * filtered by pid and by comm), timelines, histograms; and the sums of the adds. */
static void assert_same_answers(struct hc_disk *a, struct hc_disk *b, const struct churn *c,
				int64_t from, int64_t to)
{
	for (int tier = 0; tier < HC_DISK_TIERS - 1; tier++) {
		struct hc_store_filter f[3] = {all(), all(), all()};
		struct hc_weights want = {0};
		struct hc_disk_stats st;
		int64_t lo, hi;

		/* aligned to the tier and clipped to what it holds, as queries are */
		hc_disk__stats(b, &st);
		lo = from > st.tier[tier].oldest_s ? from : st.tier[tier].oldest_s;
		lo = (lo + hc_disk__tier_step(tier) - 1) / hc_disk__tier_step(tier) *
		     hc_disk__tier_step(tier);
		hi = to / hc_disk__tier_step(tier) * hc_disk__tier_step(tier);
		if (hi <= lo)
			continue;
		for (int64_t s = lo; s < hi; s++)
			hc_weights__add(&want, &c->want[s - c->t0]);
		f[1].has_pid = true;
		f[1].pid = 302;
		f[2].comm = "proc304";
		for (int i = 0; i < 3; i++) {
			struct hc_tree *ta = tree_of(a, tier, lo, hi, &f[i]);
			struct hc_tree *tb = tree_of(b, tier, lo, hi, &f[i]);

			if (i == 0)
				assert_weights_equal(hc_node__weights(hc_tree__root(ta)), &want);
			assert_true(hc_tree__node_count(ta) > 1);
			assert_nodes_equal(hc_tree__root(ta), hc_tree__root(tb));
			hc_tree__free(ta);
			hc_tree__free(tb);
		}
		{
			struct hc_weights wa = timeline_total(a, tier, lo, hi);
			struct hc_weights wb = timeline_total(b, tier, lo, hi);
			struct hc_hist *ha, *hb;

			struct hc_disk_range hr = {.tier = tier, .from_s = lo, .to_s = hi};

			assert_weights_equal(&wa, &want);
			assert_weights_equal(&wb, &want);
			ha = hc_disk__hist(a, HC_DISK_MAIN, &hr, HC_STORE_H_OFFCPU_US, &f[0]);
			hb = hc_disk__hist(b, HC_DISK_MAIN, &hr, HC_STORE_H_OFFCPU_US, &f[0]);
			assert_non_null(ha);
			assert_non_null(hb);
			assert_non_null(hc_hist__counts(ha, "proc300"));
			assert_true(hc_hist__equal(ha, hb));
			hc_hist__free(ha);
			hc_hist__free(hb);
		}
	}
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One query over the whole stream, best of 3. */
static uint64_t tree_ns(struct hc_disk *d, int tier, int64_t t0)
{
	struct hc_store_filter f = all();
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 3; i++) {
		uint64_t start = now_ns(), dt;

		hc_tree__free(tree_of(d, tier, t0, t0 + CH_SECONDS, &f));
		dt = now_ns() - start;
		if (dt < best)
			best = dt;
	}
	return best;
}

static int64_t sql_int(const char *dir, const char *sql)
{
	char path[PATH_MAX + 32];
	sqlite3 *db = NULL;
	sqlite3_stmt *st;
	int64_t v = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, HC_DISK_FILE);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

static void sql_exec(const char *dir, const char *sql)
{
	char path[PATH_MAX + 32], *err = NULL;
	sqlite3 *db = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, HC_DISK_FILE);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK)
		fail_msg("%s: %s", sql, err);
	sqlite3_close(db);
}

/* The stack rows of the file in dir (store/stackrows' chunks), read through its reader. */
struct stack_rows {
	uint32_t *id;
	struct hc_dict_stack *v;
	size_t n, cap;
};

static int stack_rows_add(void *arg, uint32_t id, const struct hc_dict_stack *s)
{
	struct stack_rows *r = arg;

	if (r->n == r->cap) {
		r->cap = r->cap ? 2 * r->cap : 1024;
		r->id = realloc(r->id, r->cap * sizeof(*r->id));
		r->v = realloc(r->v, r->cap * sizeof(*r->v));
		assert_non_null(r->id);
		assert_non_null(r->v);
	}
	r->id[r->n] = id;
	r->v[r->n++] = *s;
	return 0;
}

static struct stack_rows stack_rows(const char *dir)
{
	struct stack_rows r = {0};
	struct hc_stackrows rd;
	char path[PATH_MAX + 32];
	sqlite3 *db = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, HC_DISK_FILE);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	hc__stackrows_init(&rd, db);
	assert_int_equal(hc__stackrows_scan(&rd, 0, UINT32_MAX, stack_rows_add, &r), 0);
	hc__stackrows_release(&rd);
	sqlite3_close(db);
	return r;
}

static void stack_rows_free(struct stack_rows *r)
{
	free(r->id);
	free(r->v);
	*r = (struct stack_rows){0};
}

/* How many stack rows of the file name frame. */
static int64_t stack_rows_with_frame(const char *dir, uint32_t frame)
{
	struct stack_rows r = stack_rows(dir);
	int64_t n = 0;

	for (size_t i = 0; i < r.n; i++)
		n += r.v[i].frame == frame;
	stack_rows_free(&r);
	return n;
}

/* Two stores in dir/bounded and dir/whole, their trunks interned: one with a dictionary bound
 * the stream passes several times, one with none. */
static void churn_open(struct fixture *fx, struct churn *a, struct churn *b, char *da, char *db,
		       size_t len, int64_t t0, uint64_t keep0, uint64_t keep1, uint64_t retention)
{
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	snprintf(da, len, "%s/bounded", fx->dir);
	snprintf(db, len, "%s/whole", fx->dir);
	assert_int_equal(mkdir(da, 0700), 0);
	assert_int_equal(mkdir(db, 0700), 0);
	a->t0 = b->t0 = t0;
	a->d = open_epochs(da, CH_BOUND, keep0, keep1, retention);
	b->d = open_epochs(db, 1ull << 40, keep0, keep1, retention);
	assert_non_null(a->d);
	assert_non_null(b->d);
	churn_trunk(a);
	churn_trunk(b);
}

/* Two stores in dir/bounded and dir/whole, fed the same stream: one with a dictionary bound
 * this stream passes several times, one with none. */
static void churn_pair(struct fixture *fx, struct churn *a, struct churn *b, char *da, char *db,
		       size_t len, int64_t t0, uint64_t keep0, uint64_t keep1, uint64_t retention)
{
	uint64_t max_a = 0, max_b = 0;
	struct hc_disk_stats sa, sb;

	churn_open(fx, a, b, da, db, len, t0, keep0, keep1, retention);
	churn_run(a, 0, CH_SECONDS, CH_BOUND, &max_a);
	churn_run(b, 0, CH_SECONDS, UINT64_MAX, &max_b);
	memcpy(b->want, a->want, sizeof(a->want));
	hc_disk__stats(a->d, &sa);
	hc_disk__stats(b->d, &sb);
	print_message("dictionary: bound %u B: %" PRIu64 " epochs, at most %" PRIu64
		      " B in memory (now %" PRIu64 " entries); no bound: %" PRIu64 " B (%" PRIu64
		      " entries); file %" PRIu64 " / %" PRIu64 " B\n",
		      CH_BOUND, sa.dict_epoch + 1, max_a, sa.frames + sa.tasks + sa.stacks,
		      sb.dict_bytes, sb.frames + sb.tasks + sb.stacks, sa.bytes, sb.bytes);
	assert_true(sa.dict_epoch >= 3);
	assert_int_equal(sb.dict_epoch, 0);
	assert_true(max_a <= CH_BOUND);
	assert_true(sb.dict_bytes > 2 * CH_BOUND);
	assert_int_equal(sa.write_failures + sa.dropped_queue_s + sa.corrupt_blobs, 0);
}

/* Queries across epochs answer as one epoch does, to the ns; a restart keeps that; windows
 * merged across a rollover hold both epochs' ids. */
static void test_epochs_agree(void **state)
{
	struct fixture *fx = *state;
	static struct churn a, b;
	char da[PATH_MAX + 16], db[PATH_MAX + 16];
	struct hc_disk_stats st;
	uint64_t lookups, max_a = 0, max_b = 0, cache_all;
	int rolled_mid_window = -1;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	churn_pair(fx, &a, &b, da, db, sizeof(da), T0, 0, 0, 0);
	hc_disk__stats(a.d, &st);
	lookups = st.dict_file_lookups;
	/* the trunk, used every second, is adopted by each next epoch under its ids: its rows
	 * are written again only once its first row's epoch is CH_ADOPT_EPOCHS old, not once
	 * per epoch */
	{
		int64_t copies = sql_int(da, "SELECT count(*) FROM frame WHERE name = 'main'");

		print_message("trunk frame rows: %" PRId64 " over %" PRIu64 " epochs\n", copies,
			      st.dict_epoch + 1);
		assert_true(copies >= 1);
		assert_true(copies <= (int64_t)((st.dict_epoch + 1) / (CH_ADOPT_EPOCHS + 1)) + 1);
	}
	assert_same_answers(a.d, b.d, &a, T0, T0 + CH_SECONDS);
	assert_same_answers(a.d, b.d, &a, T0 + 37, T0 + 181);
	hc_disk__stats(a.d, &st);
	assert_true(st.dict_file_lookups > lookups);
	/* the sealed epochs' rows were kept: asked again, the same answers from memory */
	assert_true(st.epoch_cache_misses > 0);
	assert_true(st.epoch_cache_bytes > 0);
	lookups = st.dict_file_lookups;
	assert_same_answers(a.d, b.d, &a, T0, T0 + CH_SECONDS);
	hc_disk__stats(a.d, &st);
	assert_true(st.epoch_cache_hits > 0);
	print_message("epochs kept for queries: %" PRIu64 " B, %" PRIu64 " found, %" PRIu64
		      " read; file lookups of the range asked again: %" PRIu64 "\n",
		      st.epoch_cache_bytes, st.epoch_cache_hits, st.epoch_cache_misses,
		      st.dict_file_lookups - lookups);
	print_message("tree of %d s, 1 s tier: %" PRIu64 " us over %" PRIu64 " epochs, %" PRIu64
		      " us in one; 1 min tier: %" PRIu64 " / %" PRIu64 " us; %" PRIu64
		      " file lookups\n",
		      CH_SECONDS, tree_ns(a.d, 0, T0) / 1000, st.dict_epoch + 1,
		      tree_ns(b.d, 0, T0) / 1000, tree_ns(a.d, 2, T0) / 1000,
		      tree_ns(b.d, 2, T0) / 1000, st.dict_file_lookups);

	/* a 1 min window whose seconds span a rollover: merged into one row naming the older
	 * epoch, answering as above */
	for (int s = 1; s < CH_SECONDS - 60 && rolled_mid_window < 0; s++)
		if (a.epoch_at[s] != a.epoch_at[s - 1] && s % 60)
			rolled_mid_window = s;
	assert_true(rolled_mid_window > 0);
	{
		char sql[200];
		int64_t w = T0 + rolled_mid_window / 60 * 60;

		snprintf(sql, sizeof(sql),
			 "SELECT count(*) FROM bucket WHERE tier=2 AND t=%" PRId64, w);
		assert_int_equal(sql_int(da, sql), 1);
		snprintf(sql, sizeof(sql), "SELECT epoch FROM bucket WHERE tier=2 AND t=%" PRId64,
			 w);
		/* the oldest epoch whose rows its ids are: that of its first second, or older
		 * when that one had adopted entries */
		assert_true(sql_int(da, sql) <= (int64_t)a.epoch_at[w - T0 > 0 ? w - T0 - 1 : 0]);
		assert_true(sql_int(da, sql) + CH_ADOPT_EPOCHS >=
			    (int64_t)a.epoch_at[w - T0 > 0 ? w - T0 - 1 : 0]);
	}

	/* restart: only the newest epoch is loaded; the answers are the same; the stream goes
	 * on with ids kept from before the restart. The epoch cache now holds about two
	 * epochs: the others are read, kept and let go in turn, the answers the same. */
	hc_disk__close(a.d);
	cache_all = st.epoch_cache_bytes;
	epochs_cache_bytes = 2 * st.epoch_cache_bytes / (st.epoch_cache_misses + 1);
	a.d = open_epochs(da, CH_BOUND, 0, 0, 0);
	epochs_cache_bytes = 0;
	assert_non_null(a.d);
	hc_disk__stats(a.d, &st);
	assert_int_equal(st.dict_epoch, a.epoch_at[CH_SECONDS - 1]);
	assert_true(st.dict_bytes <= CH_BOUND);
	assert_same_answers(a.d, b.d, &a, T0, T0 + CH_SECONDS);
	churn_run(&a, CH_SECONDS, CH_SECONDS + 30, CH_BOUND, &max_a);
	churn_run(&b, CH_SECONDS, CH_SECONDS + 30, UINT64_MAX, &max_b);
	memcpy(b.want, a.want, sizeof(a.want));
	assert_same_answers(a.d, b.d, &a, T0 + 180, T0 + CH_SECONDS + 30);
	hc_disk__stats(a.d, &st);
	print_message("a smaller epoch cache: %" PRIu64 " B (all epochs: %" PRIu64 "), %" PRIu64
		      " found, %" PRIu64 " read\n",
		      st.epoch_cache_bytes, cache_all, st.epoch_cache_hits, st.epoch_cache_misses);
	assert_true(st.epoch_cache_bytes <= 2 * cache_all / 3);
	assert_true(st.epoch_cache_misses > 0);
	hc_disk__close(a.d);
	hc_disk__close(b.d);
}

/* Expiry deletes the rows of epochs no bucket references any more, counted; what is left
 * still answers as one epoch does. */
static void test_epochs_expire(void **state)
{
	struct fixture *fx = *state;
	static struct churn a, b;
	char da[PATH_MAX + 16], db[PATH_MAX + 16];
	struct hc_disk_stats st;
	int64_t kept;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	/* the first minute in an hour of its own: the 1 h tier's row of it expires too */
	churn_pair(fx, &a, &b, da, db, sizeof(da), HOUR_T0 - 60, 20, 60, 120);
	hc_disk__stats(a.d, &st);
	print_message("expiry: %" PRIu64 " dictionary rows deleted, %" PRIu64 " epochs of %" PRIu64
		      " in the file; rows left: %" PRId64 " frames, %" PRId64
		      " stacks (whole: %" PRId64 ", %" PRId64 ")\n",
		      st.dict_rows_deleted, st.dict_epochs, st.dict_epoch + 1,
		      sql_int(da, "SELECT count(*) FROM frame"),
		      sql_int(da, "SELECT sum(n) FROM stack_chunk"),
		      sql_int(db, "SELECT count(*) FROM frame"),
		      sql_int(db, "SELECT sum(n) FROM stack_chunk"));
	assert_true(st.dict_rows_deleted > 0);
	assert_true(st.dict_epochs < st.dict_epoch + 1);
	/* the stack rows' keys were packed (a pass dropping deleted rows' keys), and every row
	 * left has one */
	print_message("stack keys: %" PRIu64 " passes, %" PRIu64 " packed, %" PRIu64
		      " fresh; %" PRIu64 " chunks merged\n",
		      st.stack_key_passes, st.stack_keys_packed, st.stack_keys_fresh,
		      st.stack_chunks_merged);
	assert_true(st.stack_key_passes >= 1);
	assert_true(st.stack_keys_packed > 0);
	assert_true(st.stack_chunks_merged > 0);
	{
		/* the store that keeps everything packs too: fresh keys alone make a pass due */
		struct hc_disk_stats sb;

		hc_disk__stats(b.d, &sb);
		assert_int_equal(sb.dict_rows_deleted, 0);
		assert_true(sb.stack_key_passes >= 1);
	}
	assert_true(sql_int(da, "SELECT count(*) FROM stack_key") +
			    sql_int(da, "SELECT coalesce(sum(n), 0) FROM stack_keypack") >=
		    sql_int(da, "SELECT sum(n) FROM stack_chunk"));
	assert_int_equal(st.dict_epochs, sql_int(da, "SELECT count(*) FROM epoch"));
	/* nothing left names a deleted epoch; the oldest kept one's rows start at its base */
	kept = sql_int(da, "SELECT min(id) FROM epoch");
	assert_true(kept > 0);
	assert_true(sql_int(da, "SELECT min(epoch) FROM bucket") >= kept);
	assert_true(sql_int(da, "SELECT min(last - n + 1) FROM stack_chunk") >
		    sql_int(da, "SELECT stack_base FROM epoch ORDER BY id LIMIT 1"));
	assert_true(sql_int(da, "SELECT sum(n) FROM stack_chunk") <
		    sql_int(db, "SELECT sum(n) FROM stack_chunk"));
	{
		/* the rows left are whole chunks of dense ids, each readable */
		struct stack_rows r = stack_rows(da);

		assert_int_equal((int64_t)r.n, sql_int(da, "SELECT sum(n) FROM stack_chunk"));
		for (size_t i = 1; i < r.n; i++)
			assert_true(r.id[i] > r.id[i - 1]);
		stack_rows_free(&r);
	}
	assert_true(sql_int(da, "SELECT count(*) FROM frame") <
		    sql_int(db, "SELECT count(*) FROM frame"));
	/* what the tiers hold answers as before */
	assert_same_answers(a.d, b.d, &a, a.t0 + 120, a.t0 + CH_SECONDS);
	/* the trunk's ids, kept from the first epoch whose rows are gone, are still taken
	 * through epochs to come: used in every epoch, they are carried into the next */
	{
		uint64_t max_a = 0, max_b = 0, epoch = st.dict_epoch;
		char sql[96];

		snprintf(sql, sizeof(sql), "SELECT count(*) FROM frame WHERE id=%u",
			 a.trunk_frame[0]);
		assert_int_equal(sql_int(da, sql), 0);
		/* one kept but left unused since its epoch, whose rows are gone, is refused */
		assert_int_equal(hc_disk__stack(a.d, 0, a.early_frame), -ESTALE);
		/* content of second 1 alone, whose rows are gone, is not recalled: a new row */
		{
			struct hc_path_elem f = {.kind = HC_NODE_USER,
						 .name = "fn_1_0_0",
						 .module = "lib",
						 .offset = -1};
			int64_t fid;

			assert_int_equal(
				sql_int(da, "SELECT count(*) FROM frame WHERE name = 'fn_1_0_0'"),
				0);
			fid = hc_disk__frame(a.d, &f);
			assert_true(fid > sql_int(da, "SELECT max(id) FROM frame"));
		}
		churn_run(&a, CH_SECONDS, CH_SECONDS + 50, CH_BOUND, &max_a);
		churn_run(&b, CH_SECONDS, CH_SECONDS + 50, UINT64_MAX, &max_b);
		memcpy(b.want, a.want, sizeof(a.want));
		hc_disk__stats(a.d, &st);
		assert_true(st.dict_epoch >= epoch + 2);
		assert_same_answers(a.d, b.d, &a, a.t0 + CH_SECONDS, a.t0 + CH_SECONDS + 50);
	}
	hc_disk__close(a.d);
	hc_disk__close(b.d);
}

/* With the writer held back (another connection holds the write lock), epochs retire
 * faster than they are written: kept ids translate from the retired epochs still in memory,
 * one transaction then writes them all, and the answers are one epoch's. */
static void test_epochs_writer_behind(void **state)
{
	struct fixture *fx = *state;
	static struct churn a, b;
	char da[PATH_MAX + 16], db[PATH_MAX + 16], path[PATH_MAX + 32];
	uint64_t max_a = 0, max_b = 0, epoch;
	struct hc_disk_stats st;
	sqlite3 *lock = NULL;

	churn_open(fx, &a, &b, da, db, sizeof(da), T0, 0, 0, 0);
	churn_run(&a, 0, 20, CH_BOUND, &max_a);
	hc_disk__stats(a.d, &st);
	epoch = st.dict_epoch;
	/* the writer's next BEGIN IMMEDIATE waits (its busy timeout is 5 s) */
	snprintf(path, sizeof(path), "%s/%s", da, HC_DISK_FILE);
	assert_int_equal(sqlite3_open(path, &lock), SQLITE_OK);
	assert_int_equal(sqlite3_exec(lock, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
	for (int s = 20; s < 80; s++)
		churn_second(&a, s);
	hc_disk__stats(a.d, &st);
	print_message("writer held back: epoch %" PRIu64 " -> %" PRIu64 ", %" PRIu64
		      " B of dictionary in memory\n",
		      epoch, st.dict_epoch, st.dict_bytes);
	assert_true(st.dict_epoch >= epoch + 2);
	assert_int_equal(sqlite3_exec(lock, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(lock);
	hc_disk__sync(a.d);
	assert_int_equal(hc_disk__seal(a.d, T0 + 79), 0); /* the written epochs leave memory */
	hc_disk__maintain(a.d);
	hc_disk__stats(a.d, &st);
	assert_int_equal(st.write_failures + st.dropped_queue_s, 0);
	assert_true(st.dict_bytes <= CH_BOUND);
	churn_run(&b, 0, 80, UINT64_MAX, &max_b);
	memcpy(b.want, a.want, sizeof(a.want));
	assert_same_answers(a.d, b.d, &a, T0, T0 + 80);
	hc_disk__close(a.d);
	hc_disk__close(b.d);
}

/* Second s of both stores: the rare path (its own process, two frames below the root). The
 * ids it got, for the caller to compare. */
static void rare_second(struct churn *c, int s, uint32_t frame[2], uint32_t *stack)
{
	static const char *const names[2] = {"rare_a", "rare_b"};
	struct hc_path_elem p = {
		.kind = HC_NODE_PROCESS, .name = "rareproc", .id = 900, .offset = -1};
	struct hc_path_elem t = p;
	struct hc_weights w = {.samples = 3, .on_cpu_ns = 3 * PERIOD_NS, .off_cpu_ns = 777};
	int64_t task, sid = 0;

	t.kind = HC_NODE_THREAD;
	task = hc_disk__task(c->d, &p, &t);
	assert_true(task > 0);
	for (int i = 0; i < 2; i++) {
		struct hc_path_elem f = {
			.kind = HC_NODE_USER, .name = names[i], .module = "app", .offset = -1};
		int64_t fid = hc_disk__frame(c->d, &f);

		assert_true(fid > 0);
		frame[i] = (uint32_t)fid;
		sid = hc_disk__stack(c->d, (uint32_t)sid, (uint32_t)fid);
		assert_true(sid > 0);
	}
	*stack = (uint32_t)sid;
	assert_int_equal(hc_disk__add(c->d, HC_DISK_MAIN, c->t0 + s, (uint32_t)task, *stack, &w),
			 0);
	hc_weights__add(&c->want[s], &w);
}

/* Content neither epoch in memory has, met again from an older epoch of the file, is adopted
 * under its ids (its rows are not written again) until its epoch is adopt_epochs old; the
 * answers stay one epoch's, across a restart. */
static void test_epochs_recall(void **state)
{
	struct fixture *fx = *state;
	static struct churn a, b;
	char da[PATH_MAX + 16], db[PATH_MAX + 16], sql[160];
	uint32_t f0[2], s0, f1[2], s1, fb[2], sb;
	uint64_t max_a = 0, e0, recalled;
	struct hc_disk_stats st;
	int64_t kept_stack;
	uint32_t kept;
	int s = 1, again;

	churn_open(fx, &a, &b, da, db, sizeof(da), T0, 0, 0, 0);
	/* bad frames are refused before or after the file is asked, nothing interned */
	{
		struct hc_path_elem bad = {.kind = HC_NODE_USER, .module = "app", .offset = -1};

		assert_int_equal(hc_disk__frame(a.d, &bad), -EINVAL);
		bad.name = "rare_a";
		bad.kind = (enum hc_node_kind)(HC_NODE_KIND_MAX + 1);
		assert_int_equal(hc_disk__frame(a.d, &bad), -EINVAL);
	}
	rare_second(&a, 0, f0, &s0);
	rare_second(&b, 0, fb, &sb);
	/* a frame whose id the caller keeps (serve keeps the collector's frames' ids) */
	{
		struct hc_path_elem f = {
			.kind = HC_NODE_USER, .name = "rare_kept", .module = "app", .offset = -1};
		int64_t fid = hc_disk__frame(a.d, &f);

		assert_true(fid > 0);
		kept = (uint32_t)fid;
		kept_stack = hc_disk__stack(a.d, s0, kept);
		assert_true(kept_stack > 0);
	}
	churn_run(&a, 0, 1, CH_BOUND, &max_a);
	e0 = a.epoch_at[0];
	/* unused for two whole epochs: neither in the current one nor the one before */
	while (a.epoch_at[s - 1] < e0 + 3) {
		assert_true(s < CH_SECONDS);
		churn_run(&a, s, s + 1, CH_BOUND, &max_a), s++;
	}
	again = s;
	hc_disk__stats(a.d, &st);
	recalled = st.dict_recalled;
	rare_second(&a, again, f1, &s1);
	hc_disk__stats(a.d, &st);
	print_message("recall: epoch %" PRIu64 " -> %" PRIu64 ", %" PRIu64 " entries recalled\n",
		      e0, a.epoch_at[again - 1], st.dict_recalled);
	assert_int_equal(f1[0], f0[0]);
	assert_int_equal(f1[1], f0[1]);
	assert_int_equal(s1, s0);
	assert_int_equal(st.dict_recalled - recalled, 4); /* two frames, two stacks */
	/* presented by its kept id, from an epoch neither in memory: its row is adopted too */
	assert_int_equal(hc_disk__stack(a.d, s1, kept), kept_stack);
	churn_run(&a, again, again + 1, CH_BOUND, &max_a);
	assert_int_equal(sql_int(da, "SELECT count(*) FROM frame WHERE name = 'rare_b'"), 1);
	assert_int_equal(sql_int(da, "SELECT count(*) FROM frame WHERE name = 'rare_kept'"), 1);
	assert_int_equal(stack_rows_with_frame(da, f0[1]), 1);
	/* the second that names them names their epoch: expiry keeps its rows */
	snprintf(sql, sizeof(sql), "SELECT min(epoch) FROM bucket WHERE tier = 0 AND t = %" PRId64,
		 T0 + again);
	assert_true(sql_int(da, sql) <= (int64_t)e0);

	/* past adopt_epochs, the content is written again under new ids */
	s = again + 1;
	while (a.epoch_at[s - 1] < e0 + CH_ADOPT_EPOCHS + 3) {
		assert_true(s < CH_SECONDS);
		churn_run(&a, s, s + 1, CH_BOUND, &max_a), s++;
	}
	rare_second(&a, s, f1, &s1);
	assert_true(f1[1] != f0[1] && s1 != s0);
	churn_run(&a, s, s + 1, CH_BOUND, &max_a);
	assert_int_equal(sql_int(da, "SELECT count(*) FROM frame WHERE name = 'rare_b'"), 2);

	/* the same stream into the store that never rolls over: the same answers */
	for (int i = 0; i <= s; i++) {
		if (i == again || i == s)
			rare_second(&b, i, fb, &sb);
		churn_second(&b, i);
	}
	hc_disk__sync(b.d);
	memcpy(b.want, a.want, sizeof(a.want));
	assert_same_answers(a.d, b.d, &a, T0, T0 + s + 1);
	hc_disk__close(a.d);
	a.d = open_epochs(da, CH_BOUND, 0, 0, 0);
	assert_non_null(a.d);
	assert_same_answers(a.d, b.d, &a, T0, T0 + s + 1);
	hc_disk__close(a.d);
	hc_disk__close(b.d);
}

/* A file of the first layout (a1c3d56: no epochs) opens, is migrated, and answers as it did. */
/* Second t of a steady load: the same n stacks (one leaf each below one trunk) every second,
 * plus fresh ones new stacks never seen before; sealed. */
static void steady_second(struct hc_disk *d, int64_t t, int n, int fresh)
{
	struct hc_path_elem p = {.kind = HC_NODE_PROCESS, .name = "db", .id = 42, .offset = -1};
	struct hc_path_elem th = {.kind = HC_NODE_THREAD, .name = "db", .id = 42, .offset = -1};
	struct hc_path_elem f = {.kind = HC_NODE_USER, .module = "db", .offset = -1};
	struct hc_weights w = {.samples = 1, .on_cpu_ns = PERIOD_NS};
	int64_t task = hc_disk__task(d, &p, &th), trunk, fid, sid;
	char name[48];

	assert_true(task > 0);
	f.name = "main";
	fid = hc_disk__frame(d, &f);
	assert_true(fid > 0);
	trunk = hc_disk__stack(d, 0, (uint32_t)fid);
	assert_true(trunk > 0);
	for (int k = 0; k < n + fresh; k++) {
		if (k < n)
			snprintf(name, sizeof(name), "steady_%d", k);
		else
			snprintf(name, sizeof(name), "fresh_%" PRId64 "_%d", t, k);
		f.name = name;
		fid = hc_disk__frame(d, &f);
		assert_true(fid > 0);
		sid = hc_disk__stack(d, (uint32_t)trunk, (uint32_t)fid);
		assert_true(sid > 0);
		assert_int_equal(
			hc_disk__add(d, HC_DISK_MAIN, t, (uint32_t)task, (uint32_t)sid, &w), 0);
	}
	assert_int_equal(hc_disk__seal(d, t), 0);
	hc_disk__sync(d);
}

/* A working set larger than the dictionary's bound: each epoch fills with what the one before
 * held, adopted again, and rolls over within the second. The bound doubles until it fits (up to
 * the ceiling), then epochs last; after an epoch of over 2 minutes of data it halves. With a
 * fixed bound (ceiling = floor) the same load rolls over every second. */
#define BOUND_FLOOR CH_BOUND
#define BOUND_WS 4000 /* stacks of the working set: over a floor, under 8 */
static void test_epochs_bound(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_stats st, fixed;
	char dg[PATH_MAX + 16], df[PATH_MAX + 16];
	struct hc_disk *g, *f;
	uint64_t epoch_at[60], grown;

	snprintf(dg, sizeof(dg), "%s/grows", fx->dir);
	snprintf(df, sizeof(df), "%s/fixed", fx->dir);
	assert_int_equal(mkdir(dg, 0700), 0);
	assert_int_equal(mkdir(df, 0700), 0);
	{
		struct hc_disk_opts o = {.dir = dg,
					 .lock_fd = -1,
					 .period_ns = PERIOD_NS,
					 .compact_every_s = 1,
					 .dict_max_bytes = BOUND_FLOOR,
					 .dict_ceiling_bytes = 8 * BOUND_FLOOR};
		char why[512] = "";

		g = hc_disk__open(&o, why, sizeof(why));
		assert_non_null(g);
		o.dir = df;
		o.dict_ceiling_bytes = BOUND_FLOOR;
		f = hc_disk__open(&o, why, sizeof(why));
		assert_non_null(f);
	}
	hc_disk__stats(g, &st);
	assert_int_equal(st.dict_bound_bytes, BOUND_FLOOR);
	for (int s = 0; s < 60; s++) {
		steady_second(g, T0 + s, BOUND_WS, 0);
		steady_second(f, T0 + s, BOUND_WS, 0);
		hc_disk__stats(g, &st);
		epoch_at[s] = st.dict_epoch;
		assert_true(st.dict_bytes <= 2 * st.dict_bound_bytes); /* this epoch and the last */
	}
	hc_disk__stats(g, &st);
	hc_disk__stats(f, &fixed);
	print_message("bound: %" PRIu64 " -> %" PRIu64 " bytes in %" PRIu64
		      " changes, epoch %" PRIu64 " at 30 s, %" PRIu64 " at 60 s, %" PRIu64
		      " B in memory (fixed bound: epoch %" PRIu64 ")\n",
		      (uint64_t)BOUND_FLOOR, st.dict_bound_bytes, st.dict_bound_changes,
		      epoch_at[29], st.dict_epoch, st.dict_bytes, fixed.dict_epoch);
	assert_true(st.dict_bound_changes >= 1);
	assert_true(st.dict_bound_bytes > BOUND_FLOOR && st.dict_bound_bytes <= 8 * BOUND_FLOOR);
	/* once it fits, no epoch begins: the last 30 seconds are one epoch */
	assert_int_equal(epoch_at[59], epoch_at[29]);
	/* the fixed bound rolled over at least once a second after its first epochs */
	assert_true(fixed.dict_epoch >= 50);
	assert_int_equal(fixed.dict_bound_changes, 0);
	assert_int_equal(fixed.dict_bound_bytes, BOUND_FLOOR);

	/* minutes later, a smaller working set and new content fill the long epoch:
	 * the bound halves, and the epoch after it, mostly new content, does not double it again */
	grown = st.dict_bound_bytes;
	for (int s = 700; st.dict_epoch == epoch_at[59]; s++) {
		assert_true(s < 2000);
		steady_second(g, T0 + s, 100, 200);
		hc_disk__stats(g, &st);
	}
	assert_int_equal(st.dict_bound_bytes, grown / 2);
	for (int s = 2000; s < 2010; s++)
		steady_second(g, T0 + s, 100, 200);
	hc_disk__stats(g, &st);
	assert_int_equal(st.dict_bound_bytes, grown / 2);
	hc_disk__close(g);
	hc_disk__close(f);
}

/* A version 3 file's stack rows back to version 2's table and index. */
static void stacks_to_v2(const char *dir, const struct stack_rows *r)
{
	char path[PATH_MAX + 32];
	sqlite3_stmt *ins;
	sqlite3 *db = NULL;

	sql_exec(dir, "DROP TABLE stack_chunk; DROP TABLE stack_key; DROP TABLE stack_keypack;"
		      "CREATE TABLE stack(id INTEGER PRIMARY KEY, parent INTEGER, frame INTEGER);"
		      "CREATE INDEX stack_content ON stack(parent, frame)");
	snprintf(path, sizeof(path), "%s/%s", dir, HC_DISK_FILE);
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "INSERT INTO stack VALUES(?,?,?)", -1, &ins, NULL),
			 SQLITE_OK);
	for (size_t i = 0; i < r->n; i++) {
		sqlite3_bind_int64(ins, 1, r->id[i]);
		sqlite3_bind_int64(ins, 2, r->v[i].parent);
		sqlite3_bind_int64(ins, 3, r->v[i].frame);
		assert_int_equal(sqlite3_step(ins), SQLITE_DONE);
		sqlite3_reset(ins);
	}
	sqlite3_finalize(ins);
	assert_int_equal(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void test_epochs_migrate(void **state)
{
	struct fixture *fx = *state;
	struct hc_disk_stats st;
	struct stack_rows before, after;

	fx->d = open_dir(fx->dir, 0, 0, 0, 0);
	assert_non_null(fx->d);
	fill(fx, 120);
	hc_disk__close(fx->d);
	fx->d = NULL;
	/* back to version 1: no epoch table, no bucket.epoch, stack rows as SQL rows */
	before = stack_rows(fx->dir);
	assert_int_equal(before.n, FRAMES);
	stacks_to_v2(fx->dir, &before);
	sql_exec(fx->dir, "DROP INDEX bucket_epoch; ALTER TABLE bucket DROP COLUMN epoch;"
			  "DROP TABLE epoch; PRAGMA user_version=1");
	assert_int_equal(sql_int(fx->dir, "SELECT count(*) FROM pragma_table_info('bucket')"), 10);
	fx->d = open_dir(fx->dir, 0, 0, 0, 0);
	assert_non_null(fx->d);
	hc_disk__stats(fx->d, &st);
	assert_int_equal(st.quarantined, 0);
	assert_int_equal(st.dict_epoch, 0);
	assert_int_equal(st.frames, FRAMES);
	assert_int_equal(st.stacks, FRAMES);
	assert_int_equal(st.tier[0].seconds, 120);
	{
		struct hc_store_filter f = all();

		for (int tier = 0; tier < HC_DISK_TIERS - 1; tier++) {
			struct hc_weights w =
				tree_total(fx->d, HC_DISK_MAIN, tier, T0, T0 + 120, &f);
			struct hc_weights want = want_sum(fx, T0, T0 + 120);

			assert_weights_equal(&w, &want);
		}
	}
	hc_disk__close(fx->d);
	fx->d = NULL;
	assert_int_equal(sql_int(fx->dir, "PRAGMA user_version"), 3);
	assert_int_equal(sql_int(fx->dir, "SELECT count(*) FROM epoch"), 1);
	assert_int_equal(sql_int(fx->dir, "SELECT count(*) FROM bucket WHERE epoch != 0"), 0);
	/* the stack rows, as chunks again, the same; their keys written; the table gone */
	assert_int_equal(sql_int(fx->dir, "SELECT count(*) FROM sqlite_schema WHERE name = 'stack'"
					  " OR name = 'stack_content'"),
			 0);
	after = stack_rows(fx->dir);
	assert_int_equal(after.n, before.n);
	assert_memory_equal(after.id, before.id, before.n * sizeof(*before.id));
	assert_memory_equal(after.v, before.v, before.n * sizeof(*before.v));
	assert_int_equal(sql_int(fx->dir, "SELECT count(*) FROM stack_key") +
				 sql_int(fx->dir, "SELECT coalesce(sum(n), 0) FROM stack_keypack"),
			 (int64_t)before.n);
	stack_rows_free(&before);
	stack_rows_free(&after);
}

/* The disk's tree of a range is the in-memory store's tree of the same adds: every weight
 * kind alone and together, the task filters, and pruned to a node budget (the same nodes
 * kept, the same counted as folded). */
static void test_tree_as_memory(void **state)
{
	struct hc_store_opts so = {.retention_s = 10, .max_bytes = 1 << 24, .period_ns = PERIOD_NS};
	struct fixture *fx = *state;
	struct hc_store_filter f[10];

	fx->mem = hc_store__new(&so);
	assert_non_null(fx->mem);
	mem_dictionary(fx->mem);
	fx->d = open_dir(fx->dir, 0, 0, 0, 0);
	assert_non_null(fx->d);
	fill(fx, SECONDS);
	for (int i = 0; i < 10; i++)
		f[i] = all();
	f[1].off = f[1].runqueue = false;
	f[2].on = f[2].runqueue = false;
	f[3].on = f[3].off = false;
	f[4].has_pid = true;
	f[4].pid = 200;
	f[5].has_tid = true;
	f[5].tid = 1002;
	f[6].comm = "web";
	f[7].max_nodes = 6;
	f[8].max_nodes = 2;
	f[9].max_nodes = 9;
	f[9].off = false;
	/* i >= 10: the same, the rows decoded on two threads (the range is small); i >= 20: the
	 * rows copied out of the file one at a time */
	for (int i = 0; i < 30; i++) {
		struct hc_disk_range r = {.tier = 0, .from_s = T0, .to_s = T0 + SECONDS};
		struct hc_store_pruned pd, pm;
		struct hc_tree *td = hc_tree__new(), *tm = hc_tree__new();
		struct hc_store_filter g = f[i % 10];

		assert_non_null(td);
		assert_non_null(tm);
		hc__disk_decode_split_bytes = i >= 10 && i < 20 ? 0 : HC_DISK_DECODE_SPLIT_BYTES;
		hc__disk_decode_batch_bytes = i >= 20 ? 1 : HC_DISK_DECODE_BATCH_BYTES;
		assert_int_equal(hc_disk__tree(fx->d, HC_DISK_MAIN, &r, &g, td, &pd), 0);
		g.from_s = 0;
		g.to_s = 1;
		assert_int_equal(hc_store__tree(fx->mem, &g, tm, &pm), 0);
		assert_true(hc_tree__node_count(td) > 1);
		if (g.max_nodes)
			assert_int_equal(hc_tree__node_count(td), g.max_nodes);
		assert_nodes_equal(hc_tree__root(td), hc_tree__root(tm));
		assert_int_equal(pd.nodes, pm.nodes);
		assert_int_equal(pd.value_ns, pm.value_ns);
		assert_true(!g.max_nodes || pd.nodes > 0);
		hc_tree__free(td);
		hc_tree__free(tm);
	}
	hc__disk_decode_split_bytes = HC_DISK_DECODE_SPLIT_BYTES;
	hc__disk_decode_batch_bytes = HC_DISK_DECODE_BATCH_BYTES;
	hc_store__free(fx->mem);
	fx->mem = NULL;
}

/*
 * The coarse tiers fold a thread's nodes under 100 us a second of their window into
 * "[small stacks]" under the nearest heavier node (store/fold.h). Frames (names[], parent[]):
 * main, serve, compute roots; parse and io_wait under main; hash under io_wait. Each second,
 * thread 1000: main 10 ms on-CPU, parse 20 us blocked, io_wait 30 us in the run queue, hash
 * 60 us blocked, compute 10 ms, serve 40 us; thread 1001 the same but parse 5 ms and hash
 * 1 ms. In 10 s (1 ms threshold) and in 1 min (6 ms), thread 1000's parse, io_wait and hash
 * (1.1 ms, 6.6 ms) become [small stacks] under main, each thread's serve (0.4 ms, 2.4 ms)
 * [small stacks] under the thread; thread 1001 keeps main's subtree whole.
 */
#define FOLD_SECONDS 150
#define US 1000ull

static const struct {
	int task, frame; /* frame: index of names[] (its parent: parent[]) */
	struct hc_weights w;
} fold_feed[] = {
	{0, 0, {.on_cpu_ns = 10000 * US, .samples = 1}},
	{0, 2, {.off_cpu_ns = 20 * US}},
	{0, 3, {.runqueue_ns = 30 * US}},
	{0, 5, {.off_cpu_ns = 60 * US}},
	{0, 4, {.on_cpu_ns = 10000 * US, .samples = 1}},
	{0, 1, {.off_cpu_ns = 40 * US}},
	{1, 0, {.on_cpu_ns = 10000 * US, .samples = 1}},
	{1, 2, {.off_cpu_ns = 5000 * US}},
	{1, 3, {.runqueue_ns = 30 * US}},
	{1, 5, {.off_cpu_ns = 1000 * US}},
	{1, 4, {.on_cpu_ns = 10000 * US, .samples = 1}},
	{1, 1, {.off_cpu_ns = 40 * US}},
};

static struct hc_disk *fold_store(const char *dir, uint64_t fold_ns_per_s)
{
	struct hc_disk_opts o = {.dir = dir,
				 .lock_fd = -1,
				 .period_ns = PERIOD_NS,
				 .compact_every_s = 1,
				 .fold_ns_per_s = fold_ns_per_s};
	char why[512] = "";
	struct hc_disk *d;
	uint32_t task[2], stack[FRAMES];

	assert_int_equal(mkdir(dir, 0700), 0);
	d = hc_disk__open(&o, why, sizeof(why));
	if (!d)
		print_error("hc_disk__open %s: %s (%s)\n", dir, why, strerror(errno));
	assert_non_null(d);
	for (int i = 0; i < 2; i++) {
		struct hc_path_elem p = {
			.kind = HC_NODE_PROCESS, .name = "web", .id = 100, .offset = -1};
		struct hc_path_elem t = {
			.kind = HC_NODE_THREAD, .name = "worker", .id = 1000 + i, .offset = -1};
		int64_t id = hc_disk__task(d, &p, &t);

		assert_true(id > 0);
		task[i] = (uint32_t)id;
	}
	for (int i = 0; i < FRAMES; i++) {
		struct hc_path_elem f = {
			.kind = HC_NODE_USER, .name = names[i], .module = "app", .offset = -1};
		int64_t fid = hc_disk__frame(d, &f);
		int64_t sid = fid > 0 ? hc_disk__stack(d, parent[i] ? stack[parent[i] - 1] : 0,
						       (uint32_t)fid)
				      : fid;

		assert_true(sid > 0);
		stack[i] = (uint32_t)sid;
	}
	for (int s = 0; s < FOLD_SECONDS; s++) {
		for (size_t i = 0; i < sizeof(fold_feed) / sizeof(fold_feed[0]); i++)
			assert_int_equal(hc_disk__add(d, HC_DISK_MAIN, T0 + s,
						      task[fold_feed[i].task],
						      stack[fold_feed[i].frame], &fold_feed[i].w),
					 0);
		assert_int_equal(hc_disk__seal(d, T0 + s), 0);
		if (s % 10 == 9)
			hc_disk__maintain(d);
	}
	hc_disk__sync(d);
	hc_disk__maintain(d);
	return d;
}

/* The child of n named name, NULL when none. */
static const struct hc_node *child_named(const struct hc_node *n, const char *name)
{
	for (size_t i = 0; i < hc_node__child_count(n); i++)
		if (!strcmp(hc_node__name(hc_node__child(n, i)), name))
			return hc_node__child(n, i);
	return NULL;
}

/* Thread tid's node of t (under process web). */
static const struct hc_node *thread_of(const struct hc_tree *t, uint64_t tid)
{
	const struct hc_node *web = child_named(hc_tree__root(t), "web");

	assert_non_null(web);
	for (size_t i = 0; i < hc_node__child_count(web); i++)
		if (hc_node__id(hc_node__child(web, i)) == tid)
			return hc_node__child(web, i);
	fail_msg("no thread %" PRIu64, tid);
	return NULL;
}

/* A pseudo-frame of n's children: [small stacks], a leaf, holding want. */
static void assert_small(const struct hc_node *n, const struct hc_weights *want)
{
	const struct hc_node *small = child_named(n, HC_FOLD_NAME);

	assert_non_null(small);
	assert_int_equal(hc_node__kind(small), HC_NODE_USER);
	assert_null(hc_node__module(small));
	assert_int_equal(hc_node__child_count(small), 0);
	assert_weights_equal(hc_node__weights(small), want);
}

/* A tree of the folding store (t) against the same range of the other (o): the same totals
 * at every node folding keeps, what it folds where the comment above says. */
static void assert_folded(const struct hc_tree *t, const struct hc_tree *o)
{
	const struct hc_node *th = thread_of(t, 1000), *tho = thread_of(o, 1000), *main;
	struct hc_weights w;

	assert_weights_equal(hc_node__weights(hc_tree__root(t)),
			     hc_node__weights(hc_tree__root(o)));
	assert_weights_equal(hc_node__weights(th), hc_node__weights(tho));
	assert_nodes_equal(child_named(th, "compute"), child_named(tho, "compute"));
	assert_null(child_named(th, "serve"));
	assert_small(th, hc_node__weights(child_named(tho, "serve")));
	main = child_named(th, "main");
	assert_weights_equal(hc_node__weights(main), hc_node__weights(child_named(tho, "main")));
	assert_int_equal(hc_node__child_count(main), 1);
	w = *hc_node__weights(child_named(child_named(tho, "main"), "parse"));
	hc_weights__add(&w, hc_node__weights(child_named(child_named(tho, "main"), "io_wait")));
	assert_small(main, &w);
	/* thread 1001: main's subtree is heavy, kept whole */
	th = thread_of(t, 1001);
	tho = thread_of(o, 1001);
	assert_weights_equal(hc_node__weights(th), hc_node__weights(tho));
	assert_nodes_equal(child_named(th, "main"), child_named(tho, "main"));
	assert_nodes_equal(child_named(th, "compute"), child_named(tho, "compute"));
	assert_small(th, hc_node__weights(child_named(tho, "serve")));
}

static void test_fold_small_stacks(void **state)
{
	struct fixture *fx = *state;
	struct hc_store_filter f = all();
	char dir_fold[PATH_MAX + 16], dir_off[PATH_MAX + 16];
	struct hc_disk *off;
	struct hc_disk_stats st;
	/* [from, to): 1 s windows only; 10 s windows in the middle; minutes */
	static const int64_t ranges[][2] = {{T0 + 3, T0 + 9}, {T0 + 10, T0 + 50}, {T0, T0 + 120}};

	snprintf(dir_fold, sizeof(dir_fold), "%s/fold", fx->dir);
	snprintf(dir_off, sizeof(dir_off), "%s/off", fx->dir);
	fx->d = fold_store(dir_fold, 0);
	off = fold_store(dir_off, HC_DISK_FOLD_OFF);
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		struct hc_tree *t = tree_of(fx->d, 0, ranges[i][0], ranges[i][1], &f);
		struct hc_tree *o = tree_of(off, 0, ranges[i][0], ranges[i][1], &f);

		/* the 1 s tier is never folded */
		if (i == 0)
			assert_nodes_equal(hc_tree__root(t), hc_tree__root(o));
		else
			assert_folded(t, o);
		hc_tree__free(t);
		hc_tree__free(o);
	}
	hc_disk__stats(fx->d, &st);
	/* each 10 s window: thread 1000's parse, io_wait, hash and serve, thread 1001's serve;
	 * the minutes fold nothing again (each [small stacks] is under a node that holds the
	 * threshold) */
	print_message("folded: %" PRIu64 " entries, %" PRIu64 " ns; %" PRIu64 " unreadable\n",
		      st.folded_entries, st.folded_ns, st.fold_unreadable);
	assert_int_equal(st.folded_entries, 12 * 5);
	assert_int_equal(st.folded_ns, 120 * (20 + 30 + 60 + 40 + 40) * US);
	assert_int_equal(st.fold_unreadable, 0);
	hc_disk__stats(off, &st);
	assert_int_equal(st.folded_entries, 0);
	hc_disk__close(off);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tiers_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tree_as_memory, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_max_bytes_wal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_close_keeps_history, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_quarantined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epochs_agree, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epochs_expire, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epochs_writer_behind, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epochs_recall, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epochs_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(test_epochs_migrate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fold_small_stacks, setup, teardown),
	};

	return cmocka_run_group_tests_name("store-disk", tests, NULL, NULL);
}
