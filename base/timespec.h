/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * DTrace profile-n grammar for -F and the duration grammar for -d. Pure: fed strings,
 * returns numbers or a reason; the caller prints it.
 */
#ifndef HOTCOLD_BASE_TIMESPEC_H
#define HOTCOLD_BASE_TIMESPEC_H

#include <stddef.h>
#include <stdint.h>

/* DTrace refuses profile intervals under 200 us; so do we, loudly. */
#define HC_MIN_PERIOD_NS 200000ull

struct hc_rate {
	uint64_t period_ns; /* the cpu-clock period: what each sample stands for */
	double hz;	    /* 1e9 / period_ns */
};

/*
 * -F SPEC: `n` with an optional suffix: ns|nsec, us|usec, ms|msec, s|sec, m|min, h|hour,
 * d|day (an interval) or hz (a rate); a bare number is hertz. n is a decimal integer.
 * Returns 0, or -EINVAL (garbage), -EDOM (zero or negative), -ERANGE (overflow),
 * -ENOTSUP (under the 200 us floor); `why` gets a one-line reason.
 */
int hc_rate__parse(const char *spec, struct hc_rate *out, char *why, size_t why_len);

/* Refuse a rate above kernel.perf_event_max_sample_rate (max_hz). -ERANGE with a reason. */
int hc_rate__check_kernel_max(const struct hc_rate *rate, uint64_t max_hz, char *why,
			      size_t why_len);

/*
 * -d DURATION: `n` with an optional suffix ns|us|ms|s|m|h|d (long forms too); a bare number
 * is seconds. Same errors as hc_rate__parse but no floor; at most 30 days.
 */
int hc_duration__parse(const char *spec, uint64_t *ns, char *why, size_t why_len);

#endif
