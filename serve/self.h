/* SPDX-License-Identifier: GPL-2.0-only */
/* serve/self: what this process costs, for /api/status and /metrics. */
#ifndef HOTCOLD_SERVE_SELF_H
#define HOTCOLD_SERVE_SELF_H

#include <stdint.h>

/* Resident set size from /proc/self/statm, bytes; 0 if unreadable. */
uint64_t hc_self__rss_bytes(void);
/* User + system CPU time of this process, ns. */
uint64_t hc_self__cpu_ns(void);

#endif
