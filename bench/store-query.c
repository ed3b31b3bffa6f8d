// SPDX-License-Identifier: GPL-2.0-only
/*
 * store-query: time /api/profile's work on a data dir without HTTP (docs/benchmarks.md, "The
 * 1 h query"): the range summed (hc_disk__view), the tree built and pruned, the histograms and
 * the JSON written, as serve's encode_profile() does them, phase by phase.
 *
 * The store is opened as serve opens it (its writer builds what is missing first: the 1 h tier
 * of a generated week, bench/store-week.sh --generate-only); the ranges end at its newest
 * second. Run it on a copy: opening may expire and build rows. CPU: the process's (both of
 * the decoding threads, and the writer's if it works meanwhile), less disturbed than the
 * wall-clock times by other work on a shared machine.
 *
 * Usage: store-query [-n] DIR [reps (5)] [range seconds... (3600 86400 604800)]
 * -n: time at once, without waiting for the writer's builds (a range of the newest hour).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "profile/hist.h"
#include "profile/encode.h"
#include "profile/profile.h"
#include "store/disk.h"

#define PERIOD_NS 10101010ull /* serve's default, 99 Hz */
#define MAX_NODES 20000

static double clock_ms(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double now_ms(void)
{
	return clock_ms(CLOCK_MONOTONIC);
}

/* One profile of range r, timed: view, tree, histograms, JSON (t[0..3], ms); its size. */
static int one(struct hc_disk *d, const struct hc_disk_range *r, double t[4], size_t *bytes,
	       uint64_t *pruned_nodes)
{
	struct hc_store_filter f = {.from_s = r->from_s,
				    .to_s = r->to_s,
				    .max_nodes = MAX_NODES,
				    .on = true,
				    .off = true,
				    .runqueue = true};
	struct hc_store_pruned pruned = {0};
	struct hc_profile *p = hc_profile__new();
	struct hc_disk_view *v;
	char *buf = NULL;
	double a = now_ms(), b;
	FILE *mem;
	int err;

	if (!p)
		return -ENOMEM;
	v = hc_disk__view(d, HC_DISK_MAIN, r, &f, true, true);
	if (!v) {
		hc_profile__free(p);
		return -errno;
	}
	b = now_ms();
	t[0] = b - a;
	err = hc_disk_view__tree(v, p->tree, &pruned);
	a = now_ms();
	t[1] = a - b;
	for (int h = 0; h < HC_STORE_H_MAX && !err; h++) {
		struct hc_hist *hist;
		json_t *j;

		if (h == HC_STORE_H_LOCK_WAIT_NS)
			continue;
		hist = hc_disk_view__hist(v, (enum hc_store_hist)h);
		j = hist ? hc_hist__to_json(hist) : NULL;
		hc_hist__free(hist);
		if (!j || json_object_set_new(p->histograms, hc_store_hist__name(h), j))
			err = -ENOMEM;
	}
	hc_disk_view__free(v);
	b = now_ms();
	t[2] = b - a;
	p->host = strdup("bench");
	p->kernel = strdup("bench");
	hc_tree__sort(p->tree);
	mem = open_memstream(&buf, bytes);
	if (!err && (!mem || !p->host || !p->kernel))
		err = -ENOMEM;
	if (!err)
		err = hc_profile__write_json(p, mem);
	if (mem && fclose(mem) && !err)
		err = -EIO;
	t[3] = now_ms() - b;
	*pruned_nodes = pruned.nodes;
	free(buf);
	hc_profile__free(p);
	return err;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double min_of(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	static const int64_t default_ranges[] = {3600, 86400, 604800};
	struct hc_disk_opts o = {.lock_fd = -1, .period_ns = PERIOD_NS};
	struct hc_disk_stats st;
	struct hc_disk *d;
	char why[512] = "";
	uint64_t builds;
	bool wait_builds = !(argc > 1 && !strcmp(argv[1], "-n"));
	int reps;

	if (!wait_builds) {
		argv++;
		argc--;
	}
	reps = argc > 2 ? atoi(argv[2]) : 5;
	if (argc < 2 || reps < 1 || reps > 1000) {
		fprintf(stderr, "usage: store-query [-n] DIR [reps] [range_s...]\n");
		return 64;
	}
	o.dir = argv[1];
	d = hc_disk__open(&o, why, sizeof(why));
	if (!d) {
		fprintf(stderr, "store-query: %s: %s (%s)\n", o.dir, why, strerror(errno));
		return 1;
	}
	do { /* the writer builds a few windows a round */
		hc_disk__stats(d, &st);
		builds = st.builds;
		if (wait_builds)
			hc_disk__maintain(d);
		hc_disk__stats(d, &st);
	} while (st.builds != builds);
	printf("store: newest %" PRId64 ", 1 h tier %" PRIu64 " s, dictionary epochs %" PRIu64 "\n",
	       st.newest_s, st.tier[3].seconds, st.dict_epochs);
	for (int i = 0; i < (argc > 3 ? argc - 3 : 3); i++) {
		int64_t len = argc > 3 ? atoll(argv[3 + i]) : default_ranges[i];
		double t[4][1000], total[1000], cpu[1000];
		struct hc_disk_range r;
		uint64_t pn = 0;
		size_t bytes = 0;
		int err = hc_disk__pick(d, st.newest_s + 1 - len, st.newest_s + 1, &r);

		for (int k = 0; !err && k < reps; k++) {
			double x[4], c0 = clock_ms(CLOCK_PROCESS_CPUTIME_ID);

			err = one(d, &r, x, &bytes, &pn);
			cpu[k] = clock_ms(CLOCK_PROCESS_CPUTIME_ID) - c0;
			total[k] = 0;
			for (int j = 0; j < 4; j++) {
				t[j][k] = x[j];
				total[k] += x[j];
			}
		}
		if (err) {
			fprintf(stderr, "store-query: %" PRId64 " s: %s\n", len, strerror(-err));
			hc_disk__close(d);
			return 1;
		}
		printf("%7" PRId64 " s tier %d: total %.1f ms (min %.1f), CPU %.1f ms (min %.1f);"
		       " view %.1f, tree+prune %.1f, histograms %.1f, json %.1f; %zu bytes, "
		       "%" PRIu64 " nodes pruned\n",
		       len, r.tier, median(total, reps), min_of(total, reps), median(cpu, reps),
		       min_of(cpu, reps), median(t[0], reps), median(t[1], reps),
		       median(t[2], reps), median(t[3], reps), bytes, pn);
	}
	hc_disk__close(d);
	return 0;
}
