/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Weights: one unit, nanoseconds. What every node of a tree and every key of a stack table
 * carries, and which part of them an export selects.
 */
#ifndef HOTCOLD_PROFILE_WEIGHTS_H
#define HOTCOLD_PROFILE_WEIGHTS_H

#include <stdint.h>

struct hc_weights {
	uint64_t on_cpu_ns;   /* samples x period_ns */
	uint64_t off_cpu_ns;  /* blocked (measured) */
	uint64_t runqueue_ns; /* runnable, waiting for a CPU (measured) */
	uint64_t samples;     /* on-CPU samples behind on_cpu_ns */
};

static inline uint64_t hc_weights__value(const struct hc_weights *w)
{
	return w->on_cpu_ns + w->off_cpu_ns + w->runqueue_ns;
}

static inline void hc_weights__add(struct hc_weights *dst, const struct hc_weights *src)
{
	dst->on_cpu_ns += src->on_cpu_ns;
	dst->off_cpu_ns += src->off_cpu_ns;
	dst->runqueue_ns += src->runqueue_ns;
	dst->samples += src->samples;
}

/* Which weights an export carries (a bit set; HC_W_ALL: the merged on/off-CPU view). */
enum hc_weight_bits {
	HC_W_ON = 1u << 0,   /* on_cpu_ns (and the samples behind it) */
	HC_W_OFF = 1u << 1,  /* off_cpu_ns: blocked */
	HC_W_RUNQ = 1u << 2, /* runqueue_ns: waiting for a CPU */
	HC_W_ALL = HC_W_ON | HC_W_OFF | HC_W_RUNQ,
};

/* The selected part of w, in ns. */
uint64_t hc_weights__select(const struct hc_weights *w, unsigned int weights);

#endif
