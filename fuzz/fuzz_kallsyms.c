// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-kallsyms: hc_kallsyms__parse() on arbitrary text (not NUL-terminated: the buffer is
 * exactly the input), then lookups around every address the text mentions.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/kallsyms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * A lookup that succeeds names a function starting at addr - offset, and looking that start
 * up gives the same symbol (the same name, the same borrowed module string) at offset 0.
 */
static void check_lookup(struct hc_kallsyms *ks, uint64_t addr)
{
	struct hc_ksym a, b;
	char *name;

	if (hc_kallsyms__lookup(ks, addr, &a))
		return;
	if (!a.name || a.offset > addr)
		abort();
	name = strdup(a.name); /* a.name lasts until the next lookup */
	if (!name)
		abort();
	if (a.module)
		(void)strlen(a.module);
	if (hc_kallsyms__lookup(ks, addr - a.offset, &b))
		abort();
	if (b.offset != 0 || strcmp(b.name, name) || b.module != a.module)
		abort();
	free(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	size_t lines = 0;
	struct hc_kallsyms *ks;

	ks = hc_kallsyms__parse(p, size);
	if (!ks) {
		if (errno != EINVAL && errno != EPERM && errno != ENOMEM)
			abort();
		return 0;
	}
	if (hc_kallsyms__nr_funcs(ks) == 0)
		abort();
	/* The leading hex number of every line, and its neighbours. */
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		uint64_t addr = 0;
		int d;

		if (eol > p)
			lines++;
		for (; p < eol && (d = hex_digit(*p)) >= 0; p++)
			addr = addr << 4 | (uint64_t)d;
		check_lookup(ks, addr);
		check_lookup(ks, addr + 1);
		check_lookup(ks, addr - 1);
		check_lookup(ks, addr + HC_KSYM_MAX_TAIL_BYTES);
		p = nl ? nl + 1 : end;
	}
	if (hc_kallsyms__bad_lines(ks) >= lines)
		abort();
	check_lookup(ks, 0);
	check_lookup(ks, UINT64_MAX);
	hc_kallsyms__free(ks);
	return 0;
}
