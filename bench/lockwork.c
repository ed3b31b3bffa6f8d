// SPDX-License-Identifier: GPL-2.0-only
/*
 * lockwork: the kernel-lock-contention workload of bench/locks.sh.
 *
 *   lockwork [-t THREADS] [-m MODE] SECONDS
 *
 * Runs THREADS threads (default 4) that do nothing but system calls whose kernel side takes a
 * lock shared by all of them, for SECONDS of wall time, and prints one line of key=value pairs:
 *
 *   ops              operations completed by all threads (one op: one round of the mode)
 *   wall_s           wall time from releasing the threads to the last join
 *   cpu_s            CPU time of this process over the same span (CLOCK_PROCESS_CPUTIME_ID)
 *   user_s, sys_s    the getrusage(RUSAGE_SELF) split of the same, tick-based
 *   ops_per_s        ops / wall_s: what a profiler's cost shows up in here; a waiter that
 *                    blocks takes no CPU, so per CPU-second figures would hide part of it
 *   ops_per_cpu_s    ops / cpu_s
 *
 * Modes (no futex, no pipe: the waits are inside the kernel's own locks):
 *
 *   mmap   mmap 256 KiB with MAP_POPULATE, touch it, munmap it. mmap and munmap take the
 *          process's mmap_lock for writing, populating takes it for reading for as long as it
 *          takes to fault 64 pages in: rwsem:W / rwsem:R waits, most of them blocked, and
 *          spinlock waits below (page tables, zone lock, run queues). As `hc-workload locks`.
 *   dir    create, close and unlink a file of one's own in one shared directory on /dev/shm
 *          (tmpfs): every create and unlink takes the directory inode's i_rwsem for writing.
 *   epoll  add an eventfd of one's own to one shared epoll instance and delete it again:
 *          every epoll_ctl takes the instance's ep->mtx, a kernel mutex.
 *
 * System calls are made with a raw `syscall` instruction from our own functions with frame
 * pointers (glibc's wrappers have none and would hide their caller from a frame-pointer walk),
 * so that every tool sees the same, complete user stacks:
 *
 *   lock_thread -> one_op_MODE -> raw_syscall*
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* noinline, and no clones (no ".constprop" names): gcc's noipa. clang has no noipa, and its
 * noinline keeps the name (it does not clone functions under new names). */
#ifdef __clang__
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noipa))
#endif
#define MAP_BYTES (256 * 1024)

enum mode { MODE_MMAP, MODE_DIR, MODE_EPOLL };

struct worker {
	pthread_t tid;
	int id;
	int fd; /* epoll: this thread's eventfd */
	uint64_t ops;
	uint64_t errors;
	char path[128]; /* dir: this thread's file */
	char pad[64];	/* keep the counters of two workers off one cache line */
};

static atomic_int go;
static atomic_int stop;
static enum mode mode = MODE_MMAP;
static int epfd = -1;
static char dir[64];

static double ts_s(const struct timespec *ts)
{
	return (double)ts->tv_sec + (double)ts->tv_nsec / 1e9;
}

static double tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* A call keeps a function a non-leaf with a frame of its own: gcc 12 omits the frame pointer
 * of a leaf that needs no stack, -mno-omit-leaf-frame-pointer notwithstanding. */
NOINLINE static void touch(void)
{
	__asm__ volatile("" ::: "memory");
}

NOINLINE static long raw_syscall4(long nr, long a, long b, long c, long d)
{
	long ret;

	touch(); /* before the register variable: a call clobbers r10 */
	{
		register long r10 __asm__("r10") = d;

		__asm__ volatile("syscall"
				 : "=a"(ret)
				 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
				 : "rcx", "r11", "memory");
	}
	return ret;
}

NOINLINE static long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;

	touch();
	{
		register long r10 __asm__("r10") = d;
		register long r8 __asm__("r8") = e;
		register long r9 __asm__("r9") = f;

		__asm__ volatile("syscall"
				 : "=a"(ret)
				 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
				 : "rcx", "r11", "memory");
	}
	return ret;
}

static int failed(long r)
{
	return r < 0 && r > -4096;
}

NOINLINE static int one_op_mmap(struct worker *w)
{
	long p = raw_syscall6(SYS_mmap, 0, MAP_BYTES, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	(void)w;
	if (failed(p))
		return -1;
	((volatile char *)p)[0] = 1;
	return failed(raw_syscall4(SYS_munmap, p, MAP_BYTES, 0, 0)) ? -1 : 0;
}

NOINLINE static int one_op_dir(struct worker *w)
{
	long fd = raw_syscall4(SYS_openat, AT_FDCWD, (long)w->path,
			       O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);

	if (failed(fd))
		return -1;
	raw_syscall4(SYS_close, fd, 0, 0, 0);
	return failed(raw_syscall4(SYS_unlinkat, AT_FDCWD, (long)w->path, 0, 0)) ? -1 : 0;
}

NOINLINE static int one_op_epoll(struct worker *w)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)w->id};

	if (failed(raw_syscall4(SYS_epoll_ctl, epfd, EPOLL_CTL_ADD, w->fd, (long)&ev)))
		return -1;
	return failed(raw_syscall4(SYS_epoll_ctl, epfd, EPOLL_CTL_DEL, w->fd, 0)) ? -1 : 0;
}

NOINLINE static void *lock_thread(void *arg)
{
	struct worker *w = arg;
	int (*op)(struct worker *) = mode == MODE_MMAP	? one_op_mmap
				     : mode == MODE_DIR ? one_op_dir
							: one_op_epoll;

	prctl(PR_SET_NAME, "lockwork");
	while (!atomic_load_explicit(&go, memory_order_acquire))
		;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (op(w))
			w->errors++;
		else
			w->ops++;
		touch();
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: lockwork [-t THREADS] [-m mmap|dir|epoll] SECONDS\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const char *const names[] = {"mmap", "dir", "epoll"};
	struct timespec w0, w1, c0, c1, dl;
	struct rusage r0, r1;
	struct worker *ws;
	long nthreads = 4;
	double seconds, wall, cpu;
	uint64_t ops = 0, errors = 0;
	int c;

	while ((c = getopt(argc, argv, "t:m:")) != -1) {
		if (c == 't') {
			nthreads = strtol(optarg, NULL, 10);
		} else if (c == 'm') {
			if (!strcmp(optarg, "mmap"))
				mode = MODE_MMAP;
			else if (!strcmp(optarg, "dir"))
				mode = MODE_DIR;
			else if (!strcmp(optarg, "epoll"))
				mode = MODE_EPOLL;
			else
				usage();
		} else {
			usage();
		}
	}
	if (optind != argc - 1 || nthreads < 1 || nthreads > 1024)
		usage();
	seconds = strtod(argv[optind], NULL);
	if (!(seconds > 0))
		usage();

	if (mode == MODE_DIR) {
		snprintf(dir, sizeof(dir), "/dev/shm/lockwork.XXXXXX");
		if (!mkdtemp(dir)) {
			perror("lockwork: mkdtemp /dev/shm");
			return 1;
		}
	} else if (mode == MODE_EPOLL) {
		epfd = epoll_create1(EPOLL_CLOEXEC);
		if (epfd < 0) {
			perror("lockwork: epoll_create1");
			return 1;
		}
	}

	ws = aligned_alloc(64, sizeof(*ws) * (size_t)nthreads);
	if (!ws) {
		perror("lockwork");
		return 1;
	}
	memset(ws, 0, sizeof(*ws) * (size_t)nthreads);
	for (long i = 0; i < nthreads; i++) {
		ws[i].id = (int)i;
		ws[i].fd = -1;
		if (mode == MODE_DIR)
			snprintf(ws[i].path, sizeof(ws[i].path), "%s/f%ld", dir, i);
		if (mode == MODE_EPOLL && (ws[i].fd = eventfd(0, EFD_CLOEXEC)) < 0) {
			perror("lockwork: eventfd");
			return 1;
		}
		errno = pthread_create(&ws[i].tid, NULL, lock_thread, &ws[i]);
		if (errno) {
			perror("lockwork: pthread_create");
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
		ops += ws[i].ops;
		errors += ws[i].errors;
		if (ws[i].fd >= 0)
			close(ws[i].fd);
		if (mode == MODE_DIR)
			unlink(ws[i].path); /* if an op stopped between create and unlink */
	}
	clock_gettime(CLOCK_MONOTONIC, &w1);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
	getrusage(RUSAGE_SELF, &r1);
	if (mode == MODE_DIR)
		rmdir(dir);

	wall = ts_s(&w1) - ts_s(&w0);
	cpu = ts_s(&c1) - ts_s(&c0);
	printf("lockwork mode=%s threads=%ld seconds=%.3f ops=%llu errors=%llu wall_s=%.6f "
	       "cpu_s=%.6f "
	       "user_s=%.3f sys_s=%.3f ops_per_s=%.3f ops_per_cpu_s=%.3f\n",
	       names[mode], nthreads, seconds, (unsigned long long)ops, (unsigned long long)errors,
	       wall, cpu, tv_s(&r1.ru_utime) - tv_s(&r0.ru_utime),
	       tv_s(&r1.ru_stime) - tv_s(&r0.ru_stime), (double)ops / wall, (double)ops / cpu);
	free(ws);
	return errors && !ops ? 1 : 0;
}
