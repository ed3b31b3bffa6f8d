// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-procmaps: hc_procmaps__parse() on arbitrary text (not NUL-terminated), then the
 * invariants of struct hc_procmaps and hc_procmaps__find() on every mapping's edges.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/procmaps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_find(const struct hc_procmaps *pm, uint64_t addr, bool must)
{
	const struct hc_mapping *m = hc_procmaps__find(pm, addr);

	if (!m) {
		if (must)
			abort();
		return;
	}
	if (m < pm->maps || m >= pm->maps + pm->nr || addr < m->start || addr >= m->end)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct hc_procmaps *pm;
	size_t lines = 0, i;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		if ((nl ? nl : end) > p)
			lines++;
		p = nl ? nl + 1 : end;
	}
	pm = hc_procmaps__parse((const char *)data, size);
	if (!pm) {
		if (errno != EINVAL && errno != ENOMEM)
			abort();
		if (errno == EINVAL && !lines)
			abort(); /* empty input is a valid empty snapshot */
		return 0;
	}
	if (pm->nr + pm->bad_lines != lines || (lines && !pm->nr))
		abort();
	for (i = 0; i < pm->nr; i++) {
		const struct hc_mapping *m = &pm->maps[i];

		if (m->start >= m->end || (i && m->start < pm->maps[i - 1].start))
			abort();
		if (m->perms & ~(unsigned)(HC_MAP_R | HC_MAP_W | HC_MAP_X | HC_MAP_SHARED))
			abort();
		if (m->path) {
			if (m->path < pm->strings || m->path >= pm->strings + size + 1)
				abort();
			(void)strlen(m->path);
		}
		(void)hc_mapping__is_file(m);
		check_find(pm, m->start, true);
		check_find(pm, m->end - 1, false);
		check_find(pm, m->end, false);
		check_find(pm, m->start - 1, false);
	}
	check_find(pm, 0, false);
	check_find(pm, UINT64_MAX, false);
	hc_procmaps__free(pm);
	return 0;
}
