// SPDX-License-Identifier: GPL-2.0-only
/*
 * Deterministic workloads for the end-to-end tests, with named noinline functions:
 *   hc-workload cpu SECONDS      main -> hc_work_loop -> hc_burn_a|b|c, 60/30/10 % of CPU
 *   hc-workload syscall SECONDS  main -> hc_syscall_loop: getppid()+write() to /dev/null
 *   hc-workload short MS         main -> hc_short_burn for MS ms, then exit
 * Built with frame pointers so user stacks unwind without DWARF.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

/* The same body in every burner, so time spent is proportional to iterations. */
#define BURN(iters)                                                                    \
	do {                                                                           \
		uint64_t x = sink;                                                     \
		for (uint64_t i = 0; i < (iters); i++)                                 \
			x = x * 6364136223846793005ull + 1442695040888963407ull;       \
		sink = x;                                                              \
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

int main(int argc, char **argv)
{
	double arg;

	if (argc != 3) {
		fprintf(stderr, "usage: hc-workload cpu|syscall SECONDS | short MS\n");
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
	else
		return 64;
	return 0;
}
