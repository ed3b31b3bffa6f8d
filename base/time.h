/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Clocks in the tree's one unit, nanoseconds. CLOCK_MONOTONIC for intervals and deadlines,
 * CLOCK_REALTIME for timestamps that leave the process (ns since the epoch).
 */
#ifndef HOTCOLD_BASE_TIME_H
#define HOTCOLD_BASE_TIME_H

#include <stdint.h>
#include <time.h>

#define HC_NSEC_PER_SEC 1000000000ll
#define HC_NSEC_PER_MSEC 1000000ll

/* clk now, in ns. Signed: realtime stamps are compared and subtracted. clock_gettime()
 * cannot fail for the clocks the tree uses (valid ids, a valid pointer). */
static inline int64_t hc_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * HC_NSEC_PER_SEC + ts.tv_nsec;
}

/* CLOCK_MONOTONIC in ns, unsigned: for deadlines and durations. */
static inline uint64_t hc_mono_ns(void)
{
	return (uint64_t)hc_clock_ns(CLOCK_MONOTONIC);
}

#endif
