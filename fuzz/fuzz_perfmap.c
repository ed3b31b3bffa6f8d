// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-perfmap: hc_perfmap__parse() on arbitrary text (not NUL-terminated). A JIT map is
 * written by the profiled program itself (/tmp/perf-PID.map), so any local user controls it.
 *
 * The input is also read by a reference reader here, written from the format's description
 * (perfmap.h: "START SIZE name", hex with an optional 0x, at most 16 digits, name = the rest of
 * the line less trailing blanks and CR) rather than from the parser. The parser must agree with
 * it on the outcome (empty map, EINVAL, or nr and bad_lines), and every lookup at and around
 * each accepted entry's edges must give what a brute-force search over the accepted lines gives:
 * the covering line written last, at the right offset, or -ENOENT.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct ref_line {
	uint64_t start, end;
	const char *name; /* into the input, not NUL-terminated */
	size_t name_len;
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A field: an optional 0x/0X, then 1 to 16 hex digits, and nothing else. */
static bool ref_hex(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;

	if (end - p >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	if (p == end || end - p > 16)
		return false;
	for (; p < end; p++) {
		char c = *p;

		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v = v << 4 | (uint64_t)(c - 'A' + 10);
		else
			return false;
	}
	*out = v;
	return true;
}

/* One non-empty line [p, end) split into blank-separated fields; true if it is an entry. */
static bool ref_line(const char *p, const char *end, struct ref_line *l)
{
	const char *f1, *f2;
	uint64_t start, size;

	while (end > p && (end[-1] == '\r' || is_blank(end[-1])))
		end--;
	while (p < end && is_blank(*p))
		p++;
	for (f1 = p; p < end && !is_blank(*p); p++)
		;
	if (!ref_hex(f1, p, &start))
		return false;
	while (p < end && is_blank(*p))
		p++;
	for (f2 = p; p < end && !is_blank(*p); p++)
		;
	if (!ref_hex(f2, p, &size))
		return false;
	while (p < end && is_blank(*p))
		p++;
	if (p == end || size == 0 || start > UINT64_MAX - size)
		return false;
	l->start = start;
	l->end = start + size;
	l->name = p;
	l->name_len = (size_t)(end - p);
	return true;
}

/* The last line covering addr, or NULL. */
static const struct ref_line *ref_lookup(const struct ref_line *refs, size_t nr, uint64_t addr)
{
	size_t i = nr;

	while (i-- > 0)
		if (refs[i].start <= addr && addr < refs[i].end)
			return &refs[i];
	return NULL;
}

static void check_lookup(const struct hc_perfmap *pm, const struct ref_line *refs, size_t nr,
			 uint64_t addr)
{
	const struct ref_line *want = ref_lookup(refs, nr, addr);
	const char *name = NULL, *nul;
	uint64_t off = UINT64_MAX;
	size_t want_len;
	int err;

	err = hc_perfmap__lookup(pm, addr, &name, &off);
	if (!want) {
		if (err != -ENOENT)
			abort();
		return;
	}
	if (err || !name || off != addr - want->start)
		abort();
	/* A NUL inside the name ends the C string the lookup hands out. */
	nul = memchr(want->name, '\0', want->name_len);
	want_len = nul ? (size_t)(nul - want->name) : want->name_len;
	if (strlen(name) != want_len || memcmp(name, want->name, want_len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct ref_line *refs;
	struct hc_perfmap *pm;
	size_t lines = 0, nr = 0, i;

	refs = malloc((size / 2 + 1) * sizeof(*refs)); /* a line is at least 2 bytes with its \n */
	if (!refs)
		return 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (eol > p) {
			lines++;
			if (ref_line(p, eol, &refs[nr]))
				nr++;
		}
		p = nl ? nl + 1 : end;
	}

	errno = 0;
	pm = hc_perfmap__parse((const char *)data, size);
	if (!pm) {
		/* Documented: EINVAL if there were lines and none parsed; ENOMEM. */
		if (errno != ENOMEM && (errno != EINVAL || !lines || nr))
			abort();
		free(refs);
		return 0;
	}
	if (hc_perfmap__nr(pm) != nr || hc_perfmap__bad_lines(pm) != lines - nr)
		abort();
	for (i = 0; i < nr; i++) {
		const struct ref_line *r = &refs[i];

		check_lookup(pm, refs, nr, r->start - 1);
		check_lookup(pm, refs, nr, r->start);
		check_lookup(pm, refs, nr, r->start + (r->end - r->start) / 2);
		check_lookup(pm, refs, nr, r->end - 1);
		check_lookup(pm, refs, nr, r->end);
	}
	check_lookup(pm, refs, nr, 0);
	check_lookup(pm, refs, nr, UINT64_MAX);
	hc_perfmap__free(pm);
	free(refs);
	return 0;
}
