// SPDX-License-Identifier: GPL-2.0-only
#include "symbolize/perfmap.h"
#include "symbolize/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"

#define PERFMAP_MAX_BYTES (1024u * 1024u * 1024u)

struct jit_sym {
	uint64_t start;
	uint64_t end;
	uint32_t name; /* strpool offset */
	uint32_t seq;  /* line number: later lines supersede earlier ones */
};

/*
 * Entries overlap when a JIT reuses freed code space (the old lines stay in the file), and
 * a new function may cover any number of stale ones. So the entries are flattened once, at
 * parse time, into sorted disjoint ranges, each naming the last line that covers it: a lookup
 * is one binary search, exact however deep the overlap, and a hostile map cannot make it
 * O(n).
 */
struct jit_range {
	uint64_t start;
	uint64_t end;
	uint32_t sym; /* index into syms */
};

struct hc_perfmap {
	struct jit_sym *syms;
	size_t nr, cap;
	struct jit_range *ranges;
	size_t nr_ranges;
	size_t bad_lines;
	struct hc_strpool pool;
};

void hc_perfmap__free(struct hc_perfmap *pm)
{
	if (!pm)
		return;
	free(pm->syms);
	free(pm->ranges);
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
	if (pm->nr == pm->cap && hc_array_grow(pm->syms, pm->cap, pm->nr + 1, 256))
		return -ENOMEM;
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

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A binary max-heap of syms indices, by seq: the line written last on top. */
static bool heap_above(const struct jit_sym *syms, uint32_t a, uint32_t b)
{
	return syms[a].seq > syms[b].seq;
}

static void heap_push(const struct jit_sym *syms, uint32_t *heap, size_t *n, uint32_t idx)
{
	size_t i = (*n)++;

	while (i && heap_above(syms, idx, heap[(i - 1) / 2])) {
		heap[i] = heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	heap[i] = idx;
}

static void heap_pop(const struct jit_sym *syms, uint32_t *heap, size_t *n)
{
	uint32_t last = heap[--(*n)];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && heap_above(syms, heap[c + 1], heap[c]))
			c++;
		if (!heap_above(syms, heap[c], last))
			break;
		heap[i] = heap[c];
		i = c;
	}
	heap[i] = last;
}

/*
 * syms sorted by start -> pm->ranges. A sweep over every start and end: the entries begun
 * and not yet ended are in a heap by line order, and between two consecutive boundaries the
 * top of the heap covers the whole stretch (its end is a boundary too). n entries give at
 * most 2n - 1 ranges. 0 or -ENOMEM.
 */
static int flatten(struct hc_perfmap *pm)
{
	const struct jit_sym *syms = pm->syms;
	size_t nr = pm->nr, i = 0, j = 0, nheap = 0, k;
	struct jit_range *ranges, *shrunk;
	uint64_t *ends;
	uint32_t *heap;
	int err = -ENOMEM;

	ranges = malloc(2 * nr * sizeof(*ranges));
	ends = malloc(nr * sizeof(*ends));
	heap = malloc(nr * sizeof(*heap));
	if (!ranges || !ends || !heap)
		goto out;
	for (k = 0; k < nr; k++)
		ends[k] = syms[k].end;
	qsort(ends, nr, sizeof(*ends), u64_cmp);
	pm->nr_ranges = 0;
	/* Every end lies after its own start, so while starts remain, so do ends (j < nr). */
	while (j < nr) {
		uint64_t x = i < nr && syms[i].start < ends[j] ? syms[i].start : ends[j], next;
		uint32_t top;

		while (i < nr && syms[i].start == x)
			heap_push(syms, heap, &nheap, (uint32_t)i++);
		while (j < nr && ends[j] == x)
			j++;
		while (nheap && syms[heap[0]].end <= x)
			heap_pop(syms, heap, &nheap);
		if (!nheap)
			continue;
		/* An entry is live past x, so an end is left: j < nr. */
		next = i < nr && syms[i].start < ends[j] ? syms[i].start : ends[j];
		top = heap[0];
		if (pm->nr_ranges && ranges[pm->nr_ranges - 1].end == x &&
		    ranges[pm->nr_ranges - 1].sym == top) {
			ranges[pm->nr_ranges - 1].end = next;
		} else {
			ranges[pm->nr_ranges].start = x;
			ranges[pm->nr_ranges].end = next;
			ranges[pm->nr_ranges].sym = top;
			pm->nr_ranges++;
		}
	}
	shrunk = realloc(ranges, pm->nr_ranges * sizeof(*ranges));
	if (shrunk)
		ranges = shrunk;
	pm->ranges = ranges;
	ranges = NULL;
	err = 0;
out:
	free(heap);
	free(ends);
	free(ranges);
	return err;
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
	if (pm->nr) {
		err = flatten(pm);
		if (err)
			goto err_free;
	}
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
	const struct jit_range *r;
	const struct jit_sym *s;
	size_t lo = 0, hi;

	if (!pm)
		return -ENOENT;
	hi = pm->nr_ranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->ranges[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= pm->ranges[lo - 1].end)
		return -ENOENT;
	r = &pm->ranges[lo - 1];
	s = &pm->syms[r->sym];
	*name = hc_strpool__get(&pm->pool, s->name);
	*offset = addr - s->start;
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
