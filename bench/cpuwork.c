// SPDX-License-Identifier: GPL-2.0-only
/*
 * cpuwork: the CPU-bound workload of bench/run.sh.
 *
 *   cpuwork [-t THREADS] [-w DEPTH | -l] SECONDS
 *
 * Runs THREADS busy threads (default: one per online CPU) for SECONDS of wall time and prints
 * one line of key=value pairs:
 *
 *   units            work units done by all threads (a unit is a fixed amount of work)
 *   wall_s           wall time from releasing the threads to the last join
 *   cpu_s            CPU time of this process over the same span (CLOCK_PROCESS_CPUTIME_ID:
 *                    user + sys; on kernels without CONFIG_IRQ_TIME_ACCOUNTING it also holds the
 *                    interrupt time spent on our CPUs, i.e. the profilers' sampling handlers)
 *   user_s, sys_s    the getrusage(RUSAGE_SELF) split of the same, tick-based
 *   units_per_cpu_s  units / cpu_s: throughput per CPU-second of our own, which excludes time
 *                    the profiler's user-space process took from us, but includes in-context
 *                    sampling cost (hrtimer interrupt + BPF program or perf's NMI-less handler)
 *   units_per_wall_s units / wall_s: also drops when another process competes for the CPUs
 *
 * The call graph is fixed and made of named noinline functions so that every profiler sees
 * real, unwindable stacks (built with -fno-omit-frame-pointer):
 *
 *   worker_main -> do_unit -> hot_hash   (~3/4 of the cycles)
 *                          -> warm_mix   (~1/4 of the cycles)
 *
 * With -w DEPTH ("wide"), each unit instead walks a random path of DEPTH calls through eight
 * functions step0..step7 before doing its work, so samples spread over up to 8^DEPTH distinct
 * stacks (DEPTH 5: 32768), as on a busy server, not a handful: the cost of aggregating and
 * symbolizing depends on distinct stacks, not only on samples.
 *
 *   worker_main -> do_unit_wide -> stepA -> stepB -> ... (DEPTH) -> hot_hash
 *
 * With -l ("libc"), most of each unit is spent two frames below glibc's qsort(), whose merge
 * sort recurses through ~6 levels of libc frames that have CFI but no frame pointer:
 *
 *   worker_main -> do_unit_libc -> sort_block -> qsort -> msort... -> cmp_mixed -> mix64
 *                               -> hot_hash
 *
 * This is the workload of bench/unwind.sh, built with -fomit-frame-pointer -DCPUWORK_OMIT_FP:
 * as Debian builds its packages, so a frame-pointer walk loses the callers of nearly every
 * sample and an unwinder has to use the call frame information (.eh_frame) of both cpuwork
 * and libc.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* noinline, and no clones (no ".constprop" names): gcc's noipa. clang has no noipa, and its
 * noinline keeps the name (it does not clone functions under new names). */
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif
/*
 * Build with -fno-omit-frame-pointer -fno-optimize-sibling-calls (bench/run.sh does). Even so,
 * GCC omits the frame pointer in leaf functions ("several targets always omit the frame
 * pointer in leaf functions", -mno-omit-leaf-frame-pointer notwithstanding), and then a
 * frame-pointer unwinder loses the leaf's caller. Taking the frame's address forces one.
 */
static volatile uintptr_t frame_sink;
#ifdef CPUWORK_OMIT_FP
/* The -fomit-frame-pointer build: __builtin_frame_address(0) would set one up again. */
#define KEEP_FRAME() ((void)0)
#else
#define KEEP_FRAME() (frame_sink = (uintptr_t)__builtin_frame_address(0))
#endif
#define BLOCK_WORDS 256 /* 2 KiB of state per thread: stays in L1, so units are CPU-bound */

struct worker {
	pthread_t tid;
	uint64_t state[BLOCK_WORDS];
	uint64_t units;
	uint64_t sink;
	uint64_t rng;
	char pad[64]; /* keep the hot counters of two workers off one cache line */
};

static atomic_int go;
static atomic_int stop;
static int wide_depth; /* 0: the narrow call graph */
static int libc_graph; /* -l: the call graph through qsort() */

static double ts_s(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

static double tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

NOINLINE static uint64_t hot_hash(uint64_t *s, int rounds)
{
	uint64_t h = 0xcbf29ce484222325ull;

	KEEP_FRAME();
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < BLOCK_WORDS; i++) {
			h ^= s[i];
			h *= 0x100000001b3ull;
			s[i] = h >> 7 | h << 57;
		}
	return h;
}

NOINLINE static uint64_t warm_mix(uint64_t *s, int rounds)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;

	KEEP_FRAME();
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < BLOCK_WORDS; i++) {
			x += s[(i * 7) & (BLOCK_WORDS - 1)];
			x ^= x >> 31;
			s[i] += x;
		}
	return x;
}

/* One unit: a fixed amount of work, a few tens of microseconds. */
NOINLINE static uint64_t do_unit(struct worker *w)
{
	return hot_hash(w->state, 12) + warm_mix(w->state, 4);
}

/* The wide call graph: step<n> calls a random step<m> until depth runs out. Every level must
 * stay on the stack: hence -fno-optimize-sibling-calls (with "+ 0", step0's calls would
 * otherwise become jumps and step0 would vanish from every stack). */
typedef uint64_t (*step_fn)(struct worker *w, uint64_t path, int depth);
static const step_fn steps[8];

#define STEP(n)                                                                      \
	NOINLINE static uint64_t step##n(struct worker *w, uint64_t path, int depth) \
	{                                                                            \
		if (depth == 0)                                                      \
			return hot_hash(w->state, 2) + n;                            \
		return steps[path & 7](w, path >> 3, depth - 1) + n;                 \
	}
STEP(0)
STEP(1)
STEP(2)
STEP(3)
STEP(4)
STEP(5)
STEP(6)
STEP(7)
static const step_fn steps[8] = {step0, step1, step2, step3, step4, step5, step6, step7};

NOINLINE static uint64_t do_unit_wide(struct worker *w)
{
	/* xorshift64: a different path for every unit */
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return steps[w->rng & 7](w, w->rng >> 3, wide_depth - 1);
}

/* The -l call graph: a comparator that does real work, so samples land below qsort(). */
NOINLINE static uint64_t mix64(uint64_t x)
{
	for (int i = 0; i < 4; i++) {
		x ^= x >> 33;
		x *= 0xff51afd7ed558ccdull;
	}
	return x;
}

NOINLINE static int cmp_mixed(const void *a, const void *b)
{
	uint64_t x = mix64(*(const uint64_t *)a), y = mix64(*(const uint64_t *)b);

	return (x > y) - (x < y);
}

#define SORT_WORDS 64 /* 512 bytes: qsort() merges in a buffer on the stack (alloca) */

NOINLINE static uint64_t sort_block(struct worker *w, int part)
{
	uint64_t a[SORT_WORDS];

	for (int i = 0; i < SORT_WORDS; i++)
		a[i] = w->state[(part * SORT_WORDS + i) & (BLOCK_WORDS - 1)] ^ w->rng;
	qsort(a, SORT_WORDS, sizeof(a[0]), cmp_mixed);
	return a[0] ^ a[SORT_WORDS - 1];
}

NOINLINE static uint64_t do_unit_libc(struct worker *w)
{
	uint64_t x = 0;

	w->rng = w->rng * 6364136223846793005ull + 1442695040888963407ull;
	for (int part = 0; part < 2; part++)
		x += sort_block(w, part);
	return x + hot_hash(w->state, 2);
}

NOINLINE static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		w->sink += wide_depth ? do_unit_wide(w) : libc_graph ? do_unit_libc(w) : do_unit(w);
		w->units++;
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: cpuwork [-t THREADS] [-w DEPTH | -l] SECONDS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct timespec w0, w1, c0, c1, dl;
	struct rusage r0, r1;
	struct worker *ws;
	long nthreads = sysconf(_SC_NPROCESSORS_ONLN);
	double seconds, wall, cpu;
	uint64_t units = 0, sink = 0;
	int c;

	while ((c = getopt(argc, argv, "t:w:l")) != -1) {
		if (c == 't')
			nthreads = strtol(optarg, NULL, 10);
		else if (c == 'w')
			wide_depth = (int)strtol(optarg, NULL, 10);
		else if (c == 'l')
			libc_graph = 1;
		else
			usage();
	}
	if (optind != argc - 1 || nthreads < 1 || nthreads > 1024 || wide_depth < 0 ||
	    wide_depth > 20 || (wide_depth && libc_graph))
		usage();
	seconds = strtod(argv[optind], NULL);
	if (!(seconds > 0))
		usage();

	ws = aligned_alloc(64, sizeof(*ws) * (size_t)nthreads);
	if (!ws) {
		perror("cpuwork");
		return 1;
	}
	memset(ws, 0, sizeof(*ws) * (size_t)nthreads);
	for (long i = 0; i < nthreads; i++) {
		for (int j = 0; j < BLOCK_WORDS; j++)
			ws[i].state[j] = (uint64_t)(i + 1) * 0x2545f4914f6cdd1dull + (uint64_t)j;
		ws[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		errno = pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]);
		if (errno) {
			perror("cpuwork: pthread_create");
			return 1;
		}
	}

	/* The span starts when the threads are released, after their creation. */
	getrusage(RUSAGE_SELF, &r0);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
	clock_gettime(CLOCK_MONOTONIC, &w0);
	atomic_store_explicit(&go, 1, memory_order_release);

	dl.tv_sec = w0.tv_sec + (time_t)seconds;
	dl.tv_nsec = w0.tv_nsec + (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL) == EINTR)
		;
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	for (long i = 0; i < nthreads; i++) {
		pthread_join(ws[i].tid, NULL);
		units += ws[i].units;
		sink += ws[i].sink;
	}
	clock_gettime(CLOCK_MONOTONIC, &w1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	getrusage(RUSAGE_SELF, &r1);

	wall = ts_s(&w1) - ts_s(&w0);
	cpu = ts_s(&c1) - ts_s(&c0);
	printf("cpuwork threads=%ld wide_depth=%d libc=%d seconds=%.3f units=%llu wall_s=%.6f "
	       "cpu_s=%.6f user_s=%.3f "
	       "sys_s=%.3f units_per_cpu_s=%.3f units_per_wall_s=%.3f sink=%llx\n",
	       nthreads, wide_depth, libc_graph, seconds, (unsigned long long)units, wall, cpu,
	       tv_s(&r1.ru_utime) - tv_s(&r0.ru_utime), tv_s(&r1.ru_stime) - tv_s(&r0.ru_stime),
	       (double)units / cpu, (double)units / wall, (unsigned long long)(sink & 0xffff));
	free(ws);
	return 0;
}
