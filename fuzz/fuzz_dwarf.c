// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-dwarf: hc_dwinline__from_mem() on an arbitrary file image (the DWARF of a profiled
 * program or of its debuginfo file), then the inline chain at every address its own symbol
 * table names, and around them. The chain must be what the header promises: a length of at
 * least one, no more names than asked for, every name a string.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/dwinline.h"
#include "symbolize/elfsym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_NAMES 4
#define MAX_LOOKUPS 4096

static void check_at(struct hc_dwinline *d, uint64_t vaddr)
{
	const char *names[MAX_NAMES];
	size_t n = 99;
	int len = hc_dwinline__lookup(d, vaddr, names, MAX_NAMES, &n);

	if (len < 0) {
		if ((len != -ENOENT && len != -E2BIG && len != -ENOLINK && len != -ENOMEM) || n)
			abort();
		return;
	}
	if (len < 1 || n != ((size_t)len < MAX_NAMES ? (size_t)len : MAX_NAMES))
		abort();
	for (size_t i = 0; i < n; i++)
		if (names[i])
			(void)strlen(names[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hc_dwinline *d = hc_dwinline__from_mem(data, size, 64u << 20);
	struct hc_elfsym *es;
	size_t lookups = 0;

	if (!d) {
		if (errno != ENOEXEC && errno != ENODATA && errno != E2BIG && errno != ENOMEM)
			abort();
		return 0;
	}
	if (!hc_dwinline__bytes(d))
		abort();
	check_at(d, 0);
	check_at(d, UINT64_MAX);
	es = hc_elfsym__from_mem(data, size);
	for (size_t i = 0; es && i < hc_elfsym__nr(es) && lookups < MAX_LOOKUPS; i++) {
		const char *name;
		uint64_t v, sz;

		if (hc_elfsym__symbol(es, i, &name, &v, &sz))
			abort();
		/* the first bytes of each function, and its last */
		for (uint64_t k = 0; k < 16 && k < sz; k++, lookups++)
			check_at(d, v + k);
		if (sz)
			check_at(d, v + sz - 1);
	}
	hc_elfsym__free(es);
	hc_dwinline__free(d);
	return 0;
}
