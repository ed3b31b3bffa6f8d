// SPDX-License-Identifier: GPL-2.0-only
/*
 * store-bench: fill an hc_store with a synthetic hour and time it (figures in docs/store.md).
 *
 * Load, per second: 60 processes x 4 threads; 2000 distinct paths of depth 20..40 (process,
 * thread, 14..38 user frames, 0..4 kernel frames: walks down a per-process call tree that
 * share long prefixes), 80% of them repeats drawn from a working set of 20000 paths, 20% new:
 * a working-set path with its last 1..4 frames replaced by random ones (a new leaf or kernel
 * path under a known call chain), which then replaces that working-set entry.
 * On-CPU 1..3 samples each; 30% also off-CPU time, 10% run-queue time. 50 heat rows; 5
 * histograms x 60 processes x 3 values (plus 2 CPUs of run-queue length).
 *
 * Usage: store-bench [seconds (3600)] [max_bytes MiB (0: unlimited, i.e. 64 GiB)]
 *                    [new paths per second (400)]
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/store.h"

#define N_PROC 60
#define N_THREAD 4
#define N_USER_FN 400 /* per process */
#define N_KERNEL_FN 300
#define PER_SEC 2000
#define WORKSET 20000
#define MAX_PATH 40
#define PERIOD_NS 10101010ULL
#define BASE_S 1795341600LL

struct path {
	uint8_t n;
	uint8_t proc;
	uint32_t f[MAX_PATH];
};

struct load {
	uint32_t proc[N_PROC], thr[N_PROC][N_THREAD], user[N_PROC][N_USER_FN], kernel[N_KERNEL_FN];
	char comm[N_PROC][16];
	struct path *ws;
	uint64_t rng;
	size_t new_per_sec;
	size_t bytes_at_60s;
};

static uint64_t rnd(struct load *l)
{
	l->rng ^= l->rng << 13;
	l->rng ^= l->rng >> 7;
	l->rng ^= l->rng << 17;
	return l->rng;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int define_frames(struct hc_store *st, struct load *l)
{
	uint32_t id = 0;
	char name[64];
	int err = 0;

	for (int p = 0; p < N_PROC; p++) {
		struct hc_path_elem e = {HC_NODE_PROCESS,    l->comm[p], NULL,
					 1000 + (uint64_t)p, -1,	 false};

		snprintf(l->comm[p], sizeof(l->comm[p]), "proc%d", p % 45); /* some names shared */
		err |= hc_store__define_frame(st, l->proc[p] = ++id, &e);
		for (int t = 0; t < N_THREAD; t++) {
			e.kind = HC_NODE_THREAD;
			e.id = 1000 + (uint64_t)p * 100 + (uint64_t)t;
			err |= hc_store__define_frame(st, l->thr[p][t] = ++id, &e);
		}
		for (int f = 0; f < N_USER_FN; f++) {
			snprintf(name, sizeof(name), "app%d::module%d::function_%d", p, f / 40, f);
			e = (struct hc_path_elem){HC_NODE_USER, name, "/usr/bin/app", 0, -1, false};
			err |= hc_store__define_frame(st, l->user[p][f] = ++id, &e);
		}
	}
	for (int f = 0; f < N_KERNEL_FN; f++) {
		struct hc_path_elem e = {HC_NODE_KERNEL, name, NULL, 0, -1, false};

		snprintf(name, sizeof(name), "kernel_function_%d", f);
		err |= hc_store__define_frame(st, l->kernel[f] = ++id, &e);
	}
	return err;
}

/*
 * Frames from position `from` on: a walk down the process's synthetic call tree (a frame's
 * callee is its main callee 98% of the time, one of 3 others otherwise, and 75% in the last 8
 * frames: paths share long trunks and differ near the leaves, as real stacks do), user frames up to
 * `user_n`, then kernel frames.
 */
static void fill_tail(struct load *l, struct path *p, size_t from, size_t user_n)
{
	uint32_t at = from > 2 ? (uint32_t)(p->f[from - 1] * 2654435761u) : p->proc;

	for (size_t i = from; i < p->n; i++) {
		uint32_t branch = i + 8 < p->n ? 2 : 25; /* %: shared trunk, bushy leaves */
		uint32_t choice = rnd(l) % 100 >= branch ? 0 : 1 + (uint32_t)(rnd(l) % 3);

		at = (at * 31 + (uint32_t)i * 7 + choice) * 2654435761u;
		p->f[i] =
			i < user_n ? l->user[p->proc][at % N_USER_FN] : l->kernel[at % N_KERNEL_FN];
	}
}

static void new_path(struct load *l, struct path *p)
{
	size_t user_n;

	p->proc = (uint8_t)(rnd(l) % N_PROC);
	p->n = (uint8_t)(20 + rnd(l) % 21);
	user_n = p->n - rnd(l) % 5;
	p->f[0] = l->proc[p->proc];
	p->f[1] = l->thr[p->proc][rnd(l) % N_THREAD];
	fill_tail(l, p, 2, user_n);
}

/* A variant of a known path: the same chain with its last 1..4 frames replaced (at random:
 * a new leaf or kernel path under a known call chain). */
static void mutate_path(struct load *l, struct path *p)
{
	size_t k = 1 + rnd(l) % 4;

	for (size_t i = p->n - k; i < p->n; i++)
		p->f[i] = rnd(l) % 2 ? l->user[p->proc][rnd(l) % N_USER_FN]
				     : l->kernel[rnd(l) % N_KERNEL_FN];
}

static int fill(struct hc_store *st, struct load *l, int64_t seconds, double *seal_s,
		double *seal_max_s, double *add_s)
{
	static uint32_t chosen[PER_SEC];
	uint8_t *used = calloc(WORKSET, 1);
	int err = 0;

	if (!used)
		return -ENOMEM;
	*seal_s = *seal_max_s = *add_s = 0;
	for (int64_t s = 0; s < seconds && !err; s++) {
		int64_t sec = BASE_S + s;
		double t0 = now_s(), t1;
		size_t n = 0;

		/* 1600 distinct repeats, 400 new paths replacing working-set entries */
		memset(used, 0, WORKSET);
		while (n < PER_SEC - l->new_per_sec) {
			uint32_t i = (uint32_t)(rnd(l) % WORKSET);

			if (!used[i]) {
				used[i] = 1;
				chosen[n++] = i;
			}
		}
		while (n < PER_SEC) {
			uint32_t i = (uint32_t)(rnd(l) % WORKSET);

			if (used[i])
				continue;
			used[i] = 1;
			mutate_path(l, &l->ws[i]);
			chosen[n++] = i;
		}
		for (size_t k = 0; k < n && !err; k++) {
			const struct path *p = &l->ws[chosen[k]];
			uint64_t samples = 1 + rnd(l) % 3, r = rnd(l) % 10;
			struct hc_weights w = {
				.on_cpu_ns = samples * PERIOD_NS,
				.samples = samples,
				.off_cpu_ns = r < 3 ? rnd(l) % 500000000 : 0,
				.runqueue_ns = r == 3 ? rnd(l) % 2000000 : 0,
			};

			err = hc_store__add(st, sec, p->f, p->n, &w);
		}
		for (unsigned int row = 0; row < HC_STORE_HEAT_ROWS && !err; row++)
			err = hc_store__add_heat(st, sec, row, 1 + rnd(l) % 8);
		for (int p = 0; p < N_PROC && !err; p++) {
			for (int h = 0; h < HC_STORE_H_MAX && !err; h++) {
				for (int k = 0; k < 3 && !err; k++) {
					uint64_t v = h == HC_STORE_H_PRIORITY ? 100 + rnd(l) % 40
						     : h == HC_STORE_H_RUNQ_LENGTH
							     ? rnd(l) % 4
							     : rnd(l) % 100000;

					if (h == HC_STORE_H_RUNQ_LENGTH) {
						char key[16];

						if (p >= 2)
							continue;
						snprintf(key, sizeof(key), "cpu %d", p);
						err = hc_store__add_hist(st, sec, h, 0, key,
									 (int64_t)v, 1);
					} else {
						err = hc_store__add_hist(st, sec, h,
									 1000 + (uint32_t)p,
									 l->comm[p], (int64_t)v, 1);
					}
				}
			}
		}
		t1 = now_s();
		*add_s += t1 - t0;
		if (!err)
			err = hc_store__seal(st, sec);
		t0 = now_s() - t1;
		*seal_s += t0;
		if (s == 59) /* the working set is in the trie by now */
			l->bytes_at_60s = hc_store__memory_bytes(st);
		if (t0 > *seal_max_s)
			*seal_max_s = t0;
	}
	free(used);
	return err;
}

static void time_tree(const struct hc_store *st, int64_t from, int64_t to, size_t max_nodes,
		      const char *label)
{
	struct hc_store_filter f = {.from_s = from,
				    .to_s = to,
				    .on = true,
				    .off = true,
				    .runqueue = true,
				    .max_nodes = max_nodes};
	struct hc_store_pruned pr;
	double best = 1e9;
	size_t nodes = 0;

	for (int rep = 0; rep < 3; rep++) {
		struct hc_tree *t = hc_tree__new();
		double t0 = now_s(), dt;
		int err;

		if (!t)
			return;
		err = hc_store__tree(st, &f, t, &pr);
		dt = now_s() - t0;
		nodes = hc_tree__node_count(t);
		hc_tree__free(t);
		if (err) {
			printf("  tree %s: error %d\n", label, err);
			return;
		}
		best = dt < best ? dt : best;
	}
	printf("  tree %-6s max_nodes %-7zu %8.1f ms  %8zu nodes  (%" PRIu64 " folded)\n", label,
	       max_nodes, best * 1e3, nodes, pr.nodes);
}

int main(int argc, char **argv)
{
	int64_t seconds = argc > 1 ? atoll(argv[1]) : 3600;
	size_t max_mib = argc > 2 ? (size_t)atoll(argv[2]) : 0;
	struct hc_store_opts o = {.retention_s = 3600,
				  .period_ns = PERIOD_NS,
				  .max_bytes = max_mib ? max_mib << 20 : (size_t)64 << 30};
	struct load l = {.rng = 0x2545F4914F6CDD1DULL,
			 .new_per_sec = argc > 3 ? (size_t)atoll(argv[3]) : 400};
	double seal_s, seal_max_s, add_s;
	struct hc_store_stats s;
	struct hc_store *st;
	int64_t newest;
	int err;

	st = hc_store__new(&o);
	l.ws = calloc(WORKSET, sizeof(*l.ws));
	if (!st || !l.ws || define_frames(st, &l)) {
		fprintf(stderr, "store-bench: setup failed\n");
		return 1;
	}
	for (size_t i = 0; i < WORKSET; i++)
		new_path(&l, &l.ws[i]);
	err = fill(st, &l, seconds, &seal_s, &seal_max_s, &add_s);
	if (err) {
		fprintf(stderr, "store-bench: fill: %s\n", strerror(-err));
		return 1;
	}
	hc_store__stats(st, &s);
	newest = BASE_S + seconds;
	printf("store-bench: %" PRId64 " s, max_bytes %zu MiB%s\n", seconds, o.max_bytes >> 20,
	       max_mib ? "" : " (no cap)");
	printf("  memory      %.1f MiB total, %.0f bytes per second held\n",
	       (double)s.bytes / (1 << 20), (double)s.bytes / (double)(s.buckets ? s.buckets : 1));
	if (seconds > 120 && !s.evicted_early && !s.coarse_buckets)
		printf("  marginal    %.0f bytes per second of profile (growth after 60 s;"
		       " %zu new paths/s)\n",
		       (double)(s.bytes - l.bytes_at_60s) / (double)(seconds - 60), l.new_per_sec);
	printf("  held        %" PRIu64 " s (%" PRIu64 " coarse buckets), evicted early %" PRIu64
	       " s, trie %" PRIu64 " nodes, %" PRIu64 " frames, %" PRIu64 " GC runs\n",
	       s.buckets, s.coarse_buckets, s.evicted_early, s.trie_nodes, s.frames, s.gc_runs);
	printf("  add         %.2f ms per second of profile (%d paths, heat, histograms)\n",
	       add_s * 1e3 / (double)seconds, PER_SEC);
	printf("  seal        %.3f ms per second on average, %.1f ms at most\n",
	       seal_s * 1e3 / (double)seconds, seal_max_s * 1e3);
	time_tree(st, newest - 60, newest, 20000, "1 min");
	time_tree(st, newest - 60, newest, 0, "1 min");
	time_tree(st, newest - 600, newest, 20000, "10 min");
	time_tree(st, newest - 600, newest, 0, "10 min");
	time_tree(st, newest - 3600, newest, 20000, "1 h");
	time_tree(st, newest - 3600, newest, 0, "1 h");
	{
		struct hc_store_slot *slots;
		struct hc_store_filter f = {.from_s = newest - 3600, .to_s = newest};
		struct hc_hist *h;
		double t0 = now_s();
		size_t n;

		if (hc_store__timeline(st, newest - 3600, newest, 1, &slots, &n) == 0)
			free(slots);
		printf("  timeline 1 h x 1 s: %.2f ms\n", (now_s() - t0) * 1e3);
		t0 = now_s();
		h = hc_store__hist(st, HC_STORE_H_OFFCPU_US, &f);
		printf("  histogram offcpu_us 1 h: %.2f ms\n", (now_s() - t0) * 1e3);
		hc_hist__free(h);
	}
	hc_store__free(st);
	free(l.ws);
	return 0;
}
