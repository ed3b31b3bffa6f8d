// SPDX-License-Identifier: GPL-2.0-only
/*
 * The inline workload: built -O2 -g with frame pointers (tests/e2e/meson.build), its hot loop
 * in functions the compiler inlines into a named caller, so that only DWARF tells them apart
 * from the caller. Its chain is known:
 *
 *   main > inl_caller > inl_step (inlined) > inl_hot (inlined, the loop)
 *
 * inl_step and inl_hot are always_inline and called from inl_caller only: they have no code of
 * their own, and no ELF symbol. Usage: hc-inline-wl SECONDS. Prints its pid, then runs for
 * SECONDS.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define ALWAYS_INLINE static inline __attribute__((always_inline))

volatile uint64_t inl_sink;

/* A few hundred microseconds of arithmetic the compiler cannot fold away. */
ALWAYS_INLINE uint64_t inl_hot(uint64_t x)
{
	for (int i = 0; i < 100000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

ALWAYS_INLINE uint64_t inl_step(uint64_t x)
{
	x = inl_hot(x ^ inl_sink);
	return x + 1;
}

NOINLINE void inl_tally(uint64_t x)
{
	inl_sink = x;
}

/* Calls out after the loop: not a leaf, so it keeps its frame pointer (gcc drops it from leaf
 * functions that touch no stack, -mno-omit-leaf-frame-pointer or not, and main's frame would
 * then be skipped by the frame-pointer walk). */
NOINLINE uint64_t inl_caller(uint64_t x)
{
	x = inl_step(x);
	inl_tally(x);
	return x + 1; /* after the call: no tail call */
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = now_s() + (argc > 1 ? atof(argv[1]) : 5.0);
	uint64_t x = 1;

	printf("%d\n", (int)getpid());
	fflush(stdout);
	while (now_s() < end)
		x = inl_caller(x);
	return (int)(x & 1) * 0;
}
