/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOTCOLD_CPUS_H
#define HOTCOLD_CPUS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse a kernel CPU list ("0-3,8,10-11\n", as in /sys/devices/system/cpu/online) into a
 * sorted array of CPU numbers. *cpus is malloc'd; returns the count (> 0) or -EINVAL/-ENOMEM.
 */
int hc_cpulist__parse(const char *buf, size_t len, uint32_t **cpus);
/* Same, from a file (default /sys/devices/system/cpu/online when path is NULL). */
int hc_cpulist__read(const char *path, uint32_t **cpus);

#endif
