// SPDX-License-Identifier: GPL-2.0-only
#include "sampler/cpus.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* CPU numbers above this are refused: a corrupt file must not make us allocate gigabytes. */
#define HC_CPU_MAX 65536

static int parse_num(const char **p, const char *end, uint32_t *out)
{
	uint64_t v = 0;
	const char *s = *p;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	while (s < end && *s >= '0' && *s <= '9') {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > HC_CPU_MAX)
			return -EINVAL;
		s++;
	}
	*p = s;
	*out = (uint32_t)v;
	return 0;
}

int hc_cpulist__parse(const char *buf, size_t len, uint32_t **cpus)
{
	const char *p = buf, *end = buf + len;
	uint32_t *v = NULL, *nv, lo, hi;
	size_t n = 0, cap = 0;
	int err;

	while (end > p && (end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\0'))
		end--;
	if (p == end)
		return -EINVAL;
	while (p < end) {
		err = parse_num(&p, end, &lo);
		if (err)
			goto err_free;
		hi = lo;
		if (p < end && *p == '-') {
			p++;
			err = parse_num(&p, end, &hi);
			if (err)
				goto err_free;
			if (hi < lo) {
				err = -EINVAL;
				goto err_free;
			}
		}
		if (p < end) {
			if (*p != ',') {
				err = -EINVAL;
				goto err_free;
			}
			p++;
			if (p == end) {
				err = -EINVAL;
				goto err_free;
			}
		}
		for (uint32_t c = lo; c <= hi; c++) {
			if (n && v[n - 1] >= c) {
				/* Lists are ascending and disjoint; anything else is corrupt. */
				err = -EINVAL;
				goto err_free;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					err = -ENOMEM;
					goto err_free;
				}
				v = nv;
			}
			v[n++] = c;
		}
	}
	*cpus = v;
	return (int)n;
err_free:
	free(v);
	return err;
}

int hc_cpulist__read(const char *path, uint32_t **cpus)
{
	char buf[4096];
	ssize_t len;
	int fd, err;

	fd = open(path ? path : "/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	len = read(fd, buf, sizeof(buf));
	err = len < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	return hc_cpulist__parse(buf, (size_t)len, cpus);
}
