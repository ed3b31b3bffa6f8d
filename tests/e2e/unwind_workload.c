// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwinding workload: built -O2 -fomit-frame-pointer (tests/e2e/meson.build), like
 * Debian's libraries, so a frame-pointer walk loses callers and only call frame information
 * gives whole stacks. Its chains are known:
 *
 *   main thread:  main > uw_chain_1 > uw_chain_2 > uw_chain_3 > uw_chain_4 > uw_leaf  (on CPU;
 *                 uw_chain_2 keeps a 3 KB buffer on the stack, so a 1K copy cannot reach main)
 *   "uw-blocked": uw_blocked_thread > uw_blocked_outer > uw_blocked_wait > read()  (blocked on
 *                 a pipe nobody writes: asleep before any capture starts)
 *   "uw-pulse":   uw_pulse_thread > uw_pulse_outer > uw_pulse_wait > read()  (woken every
 *                 10 ms by "uw-ticker": its switch-outs happen inside the capture)
 *
 * Usage: hc-unwind-wl SECONDS [fork|plt|signal|locks]. Prints its pid, then runs for SECONDS.
 * With `fork`, the busy main chain runs in a child forked first (no exec: the parent's mappings)
 * and the pid printed is the child's; the parent waits for it. The other modes run instead of
 * the chains above, with no other thread but theirs:
 *
 *   plt:     main > uw_plt_outer > uw_plt_loop > strlen@plt > strlen  (a one-byte string, over
 *            and over: its call goes through the executable's PLT, whose CFA is an expression;
 *            the PLT's page dropped every 16 calls, so that the next call faults in the stub)
 *   signal:  main > uw_sig_outer > uw_sig_loop, busy; SIGALRM every 10 ms (setitimer) runs
 *            uw_sig_handler > uw_sig_work for a few ms on top of it (a signal frame between)
 *   locks:   4 threads "uw-locker": uw_lock_thread > uw_lock_caller > glibc's mmap (256 KiB,
 *            MAP_POPULATE) and munmap, over and over: they contend on the process's mmap_lock,
 *            and glibc's wrappers have no frame pointer
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

volatile unsigned long uw_sink;
static int blocked_pipe[2], pulse_pipe[2];

NOINLINE void uw_leaf(void)
{
	for (int i = 0; i < 200000; i++)
		uw_sink += (unsigned long)i * 7;
}

/* Each adds to the sink after its call: no tail calls, every frame stays on the stack. */
NOINLINE void uw_chain_4(void)
{
	uw_leaf();
	uw_sink++;
}

NOINLINE void uw_chain_3(void)
{
	uw_chain_4();
	uw_sink++;
}

NOINLINE void uw_chain_2(void)
{
	volatile char buf[3072];

	buf[0] = (char)uw_sink;
	uw_chain_3();
	buf[sizeof(buf) - 1] = buf[0];
	uw_sink += (unsigned long)buf[sizeof(buf) - 1];
}

NOINLINE void uw_chain_1(void)
{
	uw_chain_2();
	uw_sink++;
}

NOINLINE void uw_blocked_wait(void)
{
	char c;

	if (read(blocked_pipe[0], &c, 1) < 0)
		abort();
	uw_sink++;
}

NOINLINE void uw_blocked_outer(void)
{
	uw_blocked_wait();
	uw_sink++;
}

NOINLINE void *uw_blocked_thread(void *arg)
{
	(void)arg;
	for (;;)
		uw_blocked_outer();
	return NULL;
}

NOINLINE void uw_pulse_wait(void)
{
	char c;

	if (read(pulse_pipe[0], &c, 1) != 1)
		abort();
	uw_sink++;
}

NOINLINE void uw_pulse_outer(void)
{
	uw_pulse_wait();
	uw_sink++;
}

NOINLINE void *uw_pulse_thread(void *arg)
{
	(void)arg;
	for (;;)
		uw_pulse_outer();
	return NULL;
}

static void *ticker(void *arg)
{
	const struct timespec ts = {0, 10 * 1000 * 1000};

	(void)arg;
	for (;;) {
		nanosleep(&ts, NULL);
		if (write(pulse_pipe[1], "x", 1) != 1)
			abort();
	}
	return NULL;
}

static void start(void *(*fn)(void *), const char *name)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fn, NULL))
		abort();
	pthread_setname_np(t, name);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void say_pid(void)
{
	printf("%d\n", (int)getpid());
	fflush(stdout);
}

/* Filled at run time, so the compiler cannot know its length. */
char uw_plt_buf[16];

/*
 * strlen() of one byte through strlen@plt (the compiler cannot know the string, so the call
 * stays; the memory clobber keeps it from being hoisted out of the loop as a pure one).
 * Left alone, the stub's one jump holds 0.1 to 0.3 % of the samples (measured): a timer
 * interrupt is taken as the oldest instruction in flight retires, so samples pile up after
 * slow instructions, and the jump is rarely one. So each round first drops the page that
 * holds the PLT (MADV_DONTNEED: it is clean, the next touch maps it back from the page
 * cache): the first call faults on fetching the stub, and while the kernel handles that
 * fault the user pc is the stub's, on any CPU. Page aligned, this function is on a page of
 * its own: returning to it does not fault first.
 */
NOINLINE __attribute__((aligned(4096))) void uw_plt_loop(double secs)
{
	const double end = now_s() + secs;
	uintptr_t stub;

	__asm__("leaq strlen@PLT(%%rip), %0" : "=r"(stub));
	do {
		for (int i = 0; i < 1000; i++) {
			if (madvise((void *)(stub & ~(uintptr_t)4095), 4096, MADV_DONTNEED))
				abort();
			for (int k = 0; k < 16; k++) {
				uw_sink += strlen(uw_plt_buf);
				__asm__ volatile("" ::: "memory");
			}
		}
	} while (now_s() < end);
}

NOINLINE void uw_plt_outer(double secs)
{
	uw_plt_buf[0] = (char)('a' + (getpid() & 7));
	uw_plt_loop(secs);
	uw_sink++;
}

static volatile sig_atomic_t uw_sig_ticks, uw_sig_limit;

/* A few ms of the CPU (3-5 here; a fixed count: no clock read, so no vdso frame under it). */
NOINLINE void uw_sig_work(void)
{
	for (int i = 0; i < 3000000; i++)
		uw_sink += (unsigned long)i * 7;
}

NOINLINE void uw_sig_handler(int sig)
{
	(void)sig;
	uw_sig_work();
	uw_sig_ticks = uw_sig_ticks + 1;
}

/* Busy until the handler has run SECONDS' worth of ticks: no call, so wherever SIGALRM
 * interrupts it, the interrupted pc is in this function. */
NOINLINE void uw_sig_loop(void)
{
	while (uw_sig_ticks < uw_sig_limit)
		uw_sink += (unsigned long)uw_sig_ticks * 7;
}

NOINLINE void uw_sig_outer(void)
{
	uw_sig_loop();
	uw_sink++;
}

static int signal_mode(double secs)
{
	const struct itimerval every_10ms = {{0, 10000}, {0, 10000}};
	struct sigaction sa = {.sa_handler = uw_sig_handler, .sa_flags = SA_RESTART};

	sigemptyset(&sa.sa_mask);
	uw_sig_limit = (sig_atomic_t)(secs * 100);
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &every_10ms, NULL))
		return 1;
	say_pid();
	uw_sig_outer();
	return 0;
}

#define UW_LOCK_MAP_BYTES (256 * 1024)

/* One round on the mmap_lock, through glibc's wrappers: mmap (write) populating its pages
 * (read, while 64 pages fault in), munmap (write). */
NOINLINE void uw_lock_caller(void)
{
	void *p = mmap(NULL, UW_LOCK_MAP_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		abort();
	((volatile char *)p)[0] = 1;
	if (munmap(p, UW_LOCK_MAP_BYTES))
		abort();
	uw_sink++;
}

NOINLINE void *uw_lock_thread(void *arg)
{
	(void)arg;
	for (;;)
		uw_lock_caller();
	return NULL;
}

static int locks_mode(double secs)
{
	const struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};

	for (int i = 0; i < 4; i++)
		start(uw_lock_thread, "uw-locker");
	say_pid();
	nanosleep(&ts, NULL);
	return 0;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	const char *mode = argc > 2 ? argv[2] : "";
	struct timespec t0, now;

	if (!strcmp(mode, "plt")) {
		say_pid();
		uw_plt_outer(secs);
		return 0;
	}
	if (!strcmp(mode, "signal"))
		return signal_mode(secs);
	if (!strcmp(mode, "locks"))
		return locks_mode(secs);
	if (!strcmp(mode, "fork")) {
		pid_t child = fork();
		int status;

		if (child < 0)
			return 1;
		if (child > 0)
			return waitpid(child, &status, 0) == child && WIFEXITED(status)
				       ? WEXITSTATUS(status)
				       : 1;
	}
	if (pipe(blocked_pipe) || pipe(pulse_pipe))
		return 1;
	start(uw_blocked_thread, "uw-blocked");
	start(uw_pulse_thread, "uw-pulse");
	start(ticker, "uw-ticker");
	say_pid();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		uw_chain_1();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 <
		 secs);
	return 0;
}
