// SPDX-License-Identifier: GPL-2.0-only
#include "symbolize/procmaps.h"
#include "symbolize/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"

/* A process with a million mappings has ~100 MB of maps text; more is not a maps file. */
#define MAPS_MAX_BYTES (256u * 1024u * 1024u)

#define NO_PATH UINT32_MAX

static const char DELETED_SUFFIX[] = " (deleted)";

void hc_procmaps__free(struct hc_procmaps *pm)
{
	if (!pm)
		return;
	free(pm->maps);
	free(pm->strings);
	free(pm);
}

static int parse_dec(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;

	if (p == end || *p < '0' || *p > '9')
		return -EINVAL;
	while (p < end && *p >= '0' && *p <= '9') {
		uint64_t d = (uint64_t)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
		p++;
	}
	*pp = p;
	*out = v;
	return 0;
}

static int expect(const char **pp, const char *end, char c)
{
	if (*pp == end || **pp != c)
		return -EINVAL;
	(*pp)++;
	return 0;
}

/*
 * "7f3a1c000000-7f3a1c021000 r-xp 00002000 fd:01 1311 /usr/lib/x86_64-linux-gnu/libc.so.6"
 * The path is everything after the inode's padding: it may contain spaces.
 */
static int parse_line(const char *p, const char *end, struct hc_mapping *m, const char **path,
		      size_t *path_len)
{
	uint64_t major, minor;

	memset(m, 0, sizeof(*m));
	if (hc_parse_hex(&p, end, false, &m->start) || expect(&p, end, '-') ||
	    hc_parse_hex(&p, end, false, &m->end) || expect(&p, end, ' '))
		return -EINVAL;
	if (m->end <= m->start)
		return -EINVAL;
	if (end - p < 5 || p[4] != ' ')
		return -EINVAL;
	if (p[0] == 'r')
		m->perms |= HC_MAP_R;
	else if (p[0] != '-')
		return -EINVAL;
	if (p[1] == 'w')
		m->perms |= HC_MAP_W;
	else if (p[1] != '-')
		return -EINVAL;
	if (p[2] == 'x')
		m->perms |= HC_MAP_X;
	else if (p[2] != '-')
		return -EINVAL;
	if (p[3] == 's')
		m->perms |= HC_MAP_SHARED;
	else if (p[3] != 'p')
		return -EINVAL;
	p += 5;
	if (hc_parse_hex(&p, end, false, &m->pgoff) || expect(&p, end, ' ') ||
	    hc_parse_hex(&p, end, false, &major) || expect(&p, end, ':') ||
	    hc_parse_hex(&p, end, false, &minor) || expect(&p, end, ' ') ||
	    parse_dec(&p, end, &m->inode))
		return -EINVAL;
	if (major > UINT32_MAX || minor > UINT32_MAX)
		return -EINVAL;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	if (p < end && *p != ' ')
		return -EINVAL;
	while (p < end && *p == ' ')
		p++;
	while (end > p && end[-1] == '\r')
		end--;
	*path = p;
	*path_len = (size_t)(end - p);
	return 0;
}

static int map_cmp(const void *a, const void *b)
{
	const struct hc_mapping *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static void shrink(void **p, size_t bytes)
{
	void *q = realloc(*p, bytes);

	if (q)
		*p = q;
}

struct hc_procmaps *hc_procmaps__parse(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	size_t cap = 0, lines = 0, slen = 0, i;
	struct hc_procmaps *pm;
	int err = -ENOMEM;

	pm = calloc(1, sizeof(*pm));
	if (!pm)
		goto err_out;
	/* Paths are copied out of buf; they can never be longer than buf itself. */
	pm->strings = malloc(len + 1);
	if (!pm->strings)
		goto err_free;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		struct hc_mapping m;
		const char *path;
		size_t path_len;

		if (eol > p) {
			lines++;
			if (parse_line(p, eol, &m, &path, &path_len)) {
				pm->bad_lines++;
			} else {
				if (pm->nr == cap && hc_array_grow(pm->maps, cap, pm->nr + 1, 64))
					goto err_free;
				if (path_len >= sizeof(DELETED_SUFFIX) - 1 &&
				    !memcmp(path + path_len - (sizeof(DELETED_SUFFIX) - 1),
					    DELETED_SUFFIX, sizeof(DELETED_SUFFIX) - 1)) {
					m.deleted = true;
					path_len -= sizeof(DELETED_SUFFIX) - 1;
				}
				if (path_len) {
					memcpy(pm->strings + slen, path, path_len);
					pm->strings[slen + path_len] = '\0';
					/* Offset for now: strings is final only after the loop. */
					m.path = (const char *)(uintptr_t)(slen + 1);
					slen += path_len + 1;
				}
				pm->maps[pm->nr++] = m;
			}
		}
		p = nl ? nl + 1 : end;
	}
	if (lines && !pm->nr) {
		err = -EINVAL;
		goto err_free;
	}
	/* Kept as long as the process lives (hundreds of them on a server): the paths take a
	 * third of the text or less, and the array grew by doubling. Shrinking cannot fail
	 * (a failed realloc leaves the block as it was). */
	shrink((void **)&pm->strings, slen + 1);
	if (pm->nr)
		shrink((void **)&pm->maps, pm->nr * sizeof(*pm->maps));
	for (i = 0; i < pm->nr; i++) {
		uintptr_t off = (uintptr_t)pm->maps[i].path;

		pm->maps[i].path = off ? pm->strings + off - 1 : NULL;
	}
	/* The kernel lists mappings in address order; a hand-made buffer might not. */
	if (pm->nr > 1)
		qsort(pm->maps, pm->nr, sizeof(*pm->maps), map_cmp);
	return pm;

err_free:
	hc_procmaps__free(pm);
err_out:
	errno = -err;
	return NULL;
}

static void *parse_any(const char *buf, size_t len)
{
	return hc_procmaps__parse(buf, len);
}

struct hc_procmaps *hc_procmaps__load(const char *path)
{
	return hc_parse_file(path, MAPS_MAX_BYTES, parse_any);
}

struct hc_procmaps *hc_procmaps__load_fd(int fd)
{
	return hc_parse_fd(fd, MAPS_MAX_BYTES, parse_any);
}

const struct hc_mapping *hc_procmaps__find(const struct hc_procmaps *pm, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!pm)
		return NULL;
	hi = pm->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= pm->maps[lo - 1].end)
		return NULL;
	return &pm->maps[lo - 1];
}

bool hc_mapping__is_file(const struct hc_mapping *m)
{
	return m->path && m->path[0] == '/' && m->inode != 0;
}
