// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-elf: hc_elfsym__from_mem() on an arbitrary file image, then every query the symbolizer
 * makes of a parsed object. The image is also merged into itself as "debuginfo" (its build-id
 * matches its own), which walks the separate-debuginfo path over the same hostile bytes, and
 * read for its function starts (hc_fstarts__from_mem(), the call frame information).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/elfsym.h"
#include "symbolize/fstarts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whatever lookup answers must be consistent with the symbol it names. */
static void check_lookup(const struct hc_elfsym *es, uint64_t vaddr)
{
	uint64_t off, start, sz;
	const char *name;
	size_t idx;

	if (hc_elfsym__lookup(es, vaddr, &idx, &off))
		return;
	if (hc_elfsym__symbol(es, idx, &name, &start, &sz))
		abort();
	if (vaddr - start != off || (sz && off >= sz && sz <= UINT64_MAX - start))
		abort();
}

/* Symbols are sorted by address, one per address, and each resolves to itself. */
static void check_symbols(const struct hc_elfsym *es)
{
	size_t nr = hc_elfsym__nr(es), i, idx;
	uint64_t prev = 0, vaddr, sz, off;
	const char *name;

	for (i = 0; i < nr; i++) {
		if (hc_elfsym__symbol(es, i, &name, &vaddr, &sz))
			abort();
		if (!name || name != hc_elfsym__name(es, i))
			abort();
		(void)strlen(name);
		if (i && vaddr <= prev)
			abort();
		prev = vaddr;
		/* A symbol whose extent wraps past 2^64 cannot be looked up whole: skip it. */
		if (!sz || sz > UINT64_MAX - vaddr)
			continue;
		if (hc_elfsym__lookup(es, vaddr, &idx, &off) || idx != i || off != 0)
			abort();
		/* The last byte may belong to a later, nested symbol (or, in a relocatable
		 * object, one of another section: all start at 0); only consistency holds. */
		check_lookup(es, vaddr + sz - 1);
	}
	if (hc_elfsym__symbol(es, nr, &name, &vaddr, &sz) != -ENOENT || hc_elfsym__name(es, nr))
		abort();
}

static void check_object(const struct hc_elfsym *es, size_t size)
{
	const uint8_t *id;
	char path[256];
	uint64_t vaddr;
	size_t n, i;

	n = hc_elfsym__build_id(es, &id);
	if (n > HC_BUILD_ID_MAX || (n && !id))
		abort();
	if (hc_elfsym__debuginfo_path(es, "/usr/lib/debug", path, sizeof(path)) == 0 &&
	    strlen(path) >= sizeof(path))
		abort();
	check_symbols(es);
	/* Sampled file offsets: the image's own, and the usual page-aligned ones. */
	for (i = 0; i <= 16; i++) {
		uint64_t file_off = (uint64_t)size * i / 16 + i * 0x1000;

		if (hc_elfsym__off_to_vaddr(es, file_off, &vaddr) == 0)
			check_lookup(es, vaddr);
	}
}

/* A start found is at or below the address; a table is never empty. */
static void check_fstarts(const uint8_t *data, size_t size)
{
	struct hc_fstarts *fs = hc_fstarts__from_mem(data, size, 1u << 16);
	uint64_t start;

	if (!fs) {
		if (errno != ENOEXEC && errno != ENODATA && errno != E2BIG && errno != ENOMEM)
			abort();
		return;
	}
	if (!hc_fstarts__nr(fs))
		abort();
	for (uint64_t v = 0; v < 0x10000; v += 0x101)
		if (!hc_fstarts__lookup(fs, v, &start) && start > v)
			abort();
	hc_fstarts__free(fs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hc_elfsym *es;
	int err;

	check_fstarts(data, size);
	es = hc_elfsym__from_mem(data, size);
	if (!es) {
		if (errno != ENOEXEC && errno != ENOMEM)
			abort();
		return 0;
	}
	check_object(es, size);
	err = hc_elfsym__add_debuginfo_mem(es, data, size);
	if (err && err != -ENOEXEC && err != -ESTALE && err != -ENOMEM)
		abort();
	if (!err)
		check_object(es, size);
	hc_elfsym__free(es);
	return 0;
}
