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
 * Usage: hc-unwind-wl SECONDS [fork]. Prints its pid, then runs for SECONDS. With `fork`,
 * the busy main chain runs in a child forked first (no exec: the parent's mappings) and the
 * pid printed is the child's; the parent waits for it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	struct timespec t0, now;

	if (argc > 2 && !strcmp(argv[2], "fork")) {
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
	printf("%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		uw_chain_1();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 <
		 secs);
	return 0;
}
