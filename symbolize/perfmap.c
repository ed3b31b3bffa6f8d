// SPDX-License-Identifier: GPL-2.0-only
#include "symbolize/perfmap.h"
#include "symbolize/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define PERFMAP_MAX_BYTES (1024u * 1024u * 1024u)

/*
 * Overlaps are resolved by looking back at most this many entries: enough for code that was
 * regenerated a few times at one address without making a lookup O(n).
 */
#define OVERLAP_LOOKBACK 16

struct jit_sym {
	uint64_t start;
	uint64_t end;
	uint32_t name; /* strpool offset */
	uint32_t seq;  /* line number: later lines supersede earlier ones */
};

struct hc_perfmap {
	struct jit_sym *syms;
	size_t nr, cap;
	size_t bad_lines;
	struct hc_strpool pool;
};

void hc_perfmap__free(struct hc_perfmap *pm)
{
	if (!pm)
		return;
	free(pm->syms);
	hc_strpool__release(&pm->pool);
	free(pm);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int parse_line(struct hc_perfmap *pm, const char *p, const char *end)
{
	uint64_t start, size;
	struct jit_sym *s;
	int err;

	while (end > p && (end[-1] == '\r' || is_blank(end[-1])))
		end--;
	while (p < end && is_blank(*p))
		p++;
	if (hc_parse_hex(&p, end, true, &start) || p == end || !is_blank(*p))
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;
	if (hc_parse_hex(&p, end, true, &size) || p == end || !is_blank(*p))
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;
	if (p == end || size == 0 || start + size < start)
		return -EINVAL;
	if (pm->nr == pm->cap) {
		size_t cap = pm->cap ? pm->cap * 2 : 256;
		struct jit_sym *n = realloc(pm->syms, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		pm->syms = n;
		pm->cap = cap;
	}
	s = &pm->syms[pm->nr];
	s->start = start;
	s->end = start + size;
	s->seq = (uint32_t)pm->nr;
	err = hc_strpool__add(&pm->pool, p, (size_t)(end - p), &s->name);
	if (err)
		return err;
	pm->nr++;
	return 0;
}

static int jit_cmp(const void *a, const void *b)
{
	const struct jit_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return 0;
}

struct hc_perfmap *hc_perfmap__parse(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	struct hc_perfmap *pm;
	size_t lines = 0;
	int err;

	pm = calloc(1, sizeof(*pm));
	if (!pm) {
		errno = ENOMEM;
		return NULL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (eol > p) {
			lines++;
			err = parse_line(pm, p, eol);
			if (err == -ENOMEM || err == -E2BIG)
				goto err_free;
			if (err)
				pm->bad_lines++;
		}
		p = nl ? nl + 1 : end;
	}
	if (lines && !pm->nr) {
		err = -EINVAL;
		goto err_free;
	}
	if (pm->nr > 1)
		qsort(pm->syms, pm->nr, sizeof(*pm->syms), jit_cmp);
	hc_strpool__shrink(&pm->pool);
	return pm;

err_free:
	hc_perfmap__free(pm);
	errno = -err;
	return NULL;
}

static void *parse_any(const char *buf, size_t len)
{
	return hc_perfmap__parse(buf, len);
}

struct hc_perfmap *hc_perfmap__load(const char *path)
{
	return hc_parse_file(path, PERFMAP_MAX_BYTES, parse_any);
}

struct hc_perfmap *hc_perfmap__load_fd(int fd)
{
	return hc_parse_fd(fd, PERFMAP_MAX_BYTES, parse_any);
}

int hc_perfmap__lookup(const struct hc_perfmap *pm, uint64_t addr, const char **name,
		       uint64_t *offset)
{
	const struct jit_sym *best = NULL;
	size_t lo = 0, hi, i, n;

	if (!pm)
		return -ENOENT;
	hi = pm->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, n = 0; i > 0 && n < OVERLAP_LOOKBACK; i--, n++) {
		const struct jit_sym *s = &pm->syms[i - 1];

		if (addr < s->end && (!best || s->seq > best->seq))
			best = s;
	}
	if (!best)
		return -ENOENT;
	*name = hc_strpool__get(&pm->pool, best->name);
	*offset = addr - best->start;
	return 0;
}

size_t hc_perfmap__nr(const struct hc_perfmap *pm)
{
	return pm ? pm->nr : 0;
}

size_t hc_perfmap__bad_lines(const struct hc_perfmap *pm)
{
	return pm ? pm->bad_lines : 0;
}
