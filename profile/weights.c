// SPDX-License-Identifier: GPL-2.0-only
#include "profile/weights.h"

void hc_weights__add(struct hc_weights *dst, const struct hc_weights *src)
{
	dst->on_cpu_ns += src->on_cpu_ns;
	dst->off_cpu_ns += src->off_cpu_ns;
	dst->runqueue_ns += src->runqueue_ns;
	dst->samples += src->samples;
}

uint64_t hc_weights__select(const struct hc_weights *w, unsigned int weights)
{
	return (weights & HC_W_ON ? w->on_cpu_ns : 0) + (weights & HC_W_OFF ? w->off_cpu_ns : 0) +
	       (weights & HC_W_RUNQ ? w->runqueue_ns : 0);
}
