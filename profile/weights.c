// SPDX-License-Identifier: GPL-2.0-only
#include "profile/weights.h"

uint64_t hc_weights__select(const struct hc_weights *w, unsigned int weights)
{
	return (weights & HC_W_ON ? w->on_cpu_ns : 0) + (weights & HC_W_OFF ? w->off_cpu_ns : 0) +
	       (weights & HC_W_RUNQ ? w->runqueue_ns : 0);
}
