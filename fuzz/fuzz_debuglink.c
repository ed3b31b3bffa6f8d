// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-debuglink: hc_debuglink__parse() on arbitrary bytes, both byte orders. A
 * .gnu_debuglink section is part of the profiled object, which any local user may write; its
 * name is then opened beside the object, so the parser must never hand out a name with a '/'.
 *
 * A reference reader written from the format (debugfile.h: name, NUL, zero padding to 4
 * bytes, a 4-byte CRC) must agree on the outcome, the name and the CRC.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/debugfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool ref_parse(const uint8_t *p, size_t len, bool msb, size_t *name_len, uint32_t *crc)
{
	size_t n = 0, off;
	uint32_t v = 0;

	while (n < len && p[n])
		n++;
	if (n == len || n == 0 || n >= HC_DEBUGLINK_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (p[i] == '/')
			return false;
	if (!strncmp((const char *)p, ".", n) || !strncmp((const char *)p, "..", n))
		return false;
	off = n + 1;
	while (off % 4)
		off++;
	if (off + 4 > len)
		return false;
	for (int i = 0; i < 4; i++)
		v |= (uint32_t)p[off + (size_t)i] << (msb ? 8 * (3 - i) : 8 * i);
	*name_len = n;
	*crc = v;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (int msb = 0; msb < 2; msb++) {
		char name[HC_DEBUGLINK_NAME_MAX];
		uint32_t crc = 0, want_crc = 0;
		size_t want_len = 0;
		bool ok = ref_parse(data, size, msb, &want_len, &want_crc);
		int err = hc_debuglink__parse(data, size, msb, name, &crc);

		if (err && err != -EBADMSG)
			abort();
		if (ok != !err)
			abort();
		if (!ok)
			continue;
		if (strlen(name) != want_len || memcmp(name, data, want_len) || crc != want_crc ||
		    strchr(name, '/'))
			abort();
	}
	return 0;
}
