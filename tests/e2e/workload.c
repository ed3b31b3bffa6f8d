// SPDX-License-Identifier: GPL-2.0-only
/*
 * Deterministic workloads for the end-to-end tests, with named noinline functions:
 *   hc-workload cpu SECONDS      main -> hc_work_loop -> hc_burn_a|b|c, 60/30/10 % of CPU
 *   hc-workload syscall SECONDS  main -> hc_syscall_loop: getppid()+write() to /dev/null
 *   hc-workload short MS         main -> hc_short_burn for MS ms, then exit
 *   hc-workload worksleep SECONDS  main -> hc_worksleep_loop: 20 ms in hc_work_phase, then
 *                                20 ms asleep in hc_sleep_phase (nanosleep), repeated
 *   hc-workload pipeblock SECONDS  main -> hc_pipe_read: blocked reading an empty pipe
 *   hc-workload pingpong SECONDS   a child (hc_pong) blocks reading a pipe until the parent
 *                                (hc_ping) writes to it, 1 ms of work apart, back and forth
 *   hc-workload reuse SECONDS PID  a child forked with exactly pid PID (clone3's set_tid: root)
 *                                runs hc_work_loop, with no exec; the parent waits for it
 *   hc-workload locks SECONDS    4 threads (hc-locker) in hc_lock_thread -> hc_lock_churn:
 *                                mmap 256 KiB populated, munmap, over and over: the threads
 *                                contend on their process's mmap_lock (populating reads it,
 *                                mmap/munmap write it) and on spinlocks below
 * Built with frame pointers so user stacks unwind without DWARF. The blocking system calls
 * are made from our own functions (raw `syscall` instructions), not through glibc, whose
 * wrappers have no frame pointer and would hide their caller from a frame-pointer walk.
 */
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

/* The same body in every burner, so time spent is proportional to iterations. */
#define BURN(iters)                                                              \
	do {                                                                     \
		uint64_t x = sink;                                               \
		for (uint64_t i = 0; i < (iters); i++)                           \
			x = x * 6364136223846793005ull + 1442695040888963407ull; \
		sink = x;                                                        \
	} while (0)

#define UNIT 200000ull

/*
 * gcc 12 omits the frame pointer of a leaf function that needs no stack, even with
 * -mno-omit-leaf-frame-pointer, which hides the leaf's caller from a frame-pointer unwind.
 * Calling this keeps every burner a non-leaf with a frame of its own.
 */
__attribute__((noinline)) void hc_touch(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void hc_burn_a(void)
{
	BURN(6 * UNIT);
	hc_touch();
}

__attribute__((noinline)) void hc_burn_b(void)
{
	BURN(3 * UNIT);
	hc_touch();
}

__attribute__((noinline)) void hc_burn_c(void)
{
	BURN(1 * UNIT);
	hc_touch();
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void hc_work_loop(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end) {
		hc_burn_a();
		hc_burn_b();
		hc_burn_c();
	}
}

__attribute__((noinline)) void hc_syscall_loop(double seconds)
{
	int fd = open("/dev/null", O_WRONLY);
	char buf[4096];
	double end = now_s() + seconds;

	memset(buf, 'x', sizeof(buf));
	while (now_s() < end) {
		for (int i = 0; i < 1000; i++) {
			sink += (uint64_t)getppid();
			sink += (uint64_t)write(fd, buf, sizeof(buf));
		}
	}
	close(fd);
}

__attribute__((noinline)) void hc_short_burn(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end)
		BURN(UNIT / 10);
}

__attribute__((noinline)) static long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;

	hc_touch(); /* a call keeps this a non-leaf with its own frame (see hc_touch) */
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "0"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

__attribute__((noinline)) static long raw_syscall6(long nr, long a, long b, long c, long d, long e,
						   long f)
{
	long ret;

	hc_touch(); /* before the register variables: a call clobbers r8-r10 */
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

/* Work for ms milliseconds of wall-clock time. */
__attribute__((noinline)) void hc_work_phase(double ms)
{
	double end = now_s() + ms / 1000.0;

	while (now_s() < end)
		BURN(UNIT / 20);
	hc_touch();
}

__attribute__((noinline)) void hc_sleep_phase(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	raw_syscall3(SYS_nanosleep, (long)&ts, 0, 0);
	hc_touch();
}

__attribute__((noinline)) void hc_worksleep_loop(double seconds)
{
	double end = now_s() + seconds;

	while (now_s() < end) {
		hc_work_phase(20);
		hc_sleep_phase(20);
	}
}

__attribute__((noinline)) long hc_pipe_read(int fd, char *buf, long n)
{
	long r = raw_syscall3(SYS_read, fd, (long)buf, n);

	hc_touch();
	return r;
}

__attribute__((noinline)) void hc_pipe_block(double seconds)
{
	int p[2];
	char c;

	(void)seconds; /* blocks until killed: nothing ever writes */
	if (pipe(p) != 0)
		return;
	hc_pipe_read(p[0], &c, 1);
}

__attribute__((noinline)) void hc_pong(int in, int out, double seconds)
{
	double end = now_s() + seconds;
	char c;

	while (now_s() < end && hc_pipe_read(in, &c, 1) == 1) {
		hc_work_phase(1);
		if (raw_syscall3(SYS_write, out, (long)&c, 1) != 1)
			break;
	}
}

__attribute__((noinline)) void hc_ping(int in, int out, double seconds)
{
	double end = now_s() + seconds;
	char c = 'x';

	while (now_s() < end) {
		hc_work_phase(1);
		if (raw_syscall3(SYS_write, out, (long)&c, 1) != 1 || hc_pipe_read(in, &c, 1) != 1)
			break;
	}
}

static void pingpong(double seconds)
{
	int to_child[2], to_parent[2];
	pid_t child;

	if (pipe(to_child) != 0 || pipe(to_parent) != 0)
		return;
	child = fork();
	if (child == 0) {
		/* Only our ends stay open, so the parent's death ends the read with EOF. */
		close(to_child[1]);
		close(to_parent[0]);
		hc_pong(to_child[0], to_parent[1], seconds + 1);
		_exit(0);
	}
	close(to_child[0]);
	close(to_parent[1]);
	hc_ping(to_parent[0], to_child[1], seconds);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

#define LOCK_MAP_BYTES (256 * 1024)

/* One round on the process's mmap_lock: mmap (write) that populates its pages (read, for
 * as long as it takes to fault 64 pages in), munmap (write, while they are freed). Page
 * faults alone would not do: they take a per-VMA lock. */
__attribute__((noinline)) void hc_lock_churn(void)
{
	long p = raw_syscall6(SYS_mmap, 0, LOCK_MAP_BYTES, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p < 0 && p > -4096)
		return;
	((volatile char *)p)[0] = 1;
	raw_syscall3(SYS_munmap, p, LOCK_MAP_BYTES, 0);
}

static double lock_end;

__attribute__((noinline)) void *hc_lock_thread(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "hc-locker");
	while (now_s() < lock_end)
		for (int i = 0; i < 16; i++)
			hc_lock_churn();
	return NULL;
}

static void locks(double seconds)
{
	pthread_t t[4];

	lock_end = now_s() + seconds;
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, hc_lock_thread, NULL))
			return;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* A process that gets a pid another one had, and runs this program's code without an exec: only
 * its start time tells a profiler it is not the old process. */
static int reuse(double seconds, pid_t pid)
{
	struct clone_args ca = {
		.exit_signal = SIGCHLD,
		.set_tid = (uint64_t)(uintptr_t)&pid,
		.set_tid_size = 1,
	};
	long r = syscall(SYS_clone3, &ca, sizeof(ca));
	int status;

	if (r < 0) {
		perror("hc-workload: clone3 with set_tid");
		return 1;
	}
	if (r == 0) {
		hc_work_loop(seconds);
		_exit(0);
	}
	if (waitpid((pid_t)r, &status, 0) != (pid_t)r)
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	double arg;

	/* A fourth argument is ignored (but by reuse): a tag that only /proc/PID/cmdline
	 * carries, for tests that check command lines never leak into hotcold's output. */
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: hc-workload cpu|syscall|worksleep|pipeblock|pingpong|locks "
				"SECONDS"
				" | short MS [TAG] | reuse SECONDS PID\n");
		return 64;
	}
	arg = atof(argv[2]);
	/* Tell the parent we run (and which pid), then work. */
	printf("%d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(argv[1], "cpu"))
		hc_work_loop(arg);
	else if (!strcmp(argv[1], "syscall"))
		hc_syscall_loop(arg);
	else if (!strcmp(argv[1], "short"))
		hc_short_burn(arg / 1000.0);
	else if (!strcmp(argv[1], "worksleep"))
		hc_worksleep_loop(arg);
	else if (!strcmp(argv[1], "pipeblock"))
		hc_pipe_block(arg);
	else if (!strcmp(argv[1], "pingpong"))
		pingpong(arg);
	else if (!strcmp(argv[1], "locks"))
		locks(arg);
	else if (!strcmp(argv[1], "reuse") && argc == 4)
		return reuse(arg, (pid_t)atoi(argv[3]));
	else
		return 64;
	return 0;
}
