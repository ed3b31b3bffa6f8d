// SPDX-License-Identifier: GPL-2.0-only
/* UTF-8 checking and repair: jansson refuses invalid UTF-8, and process names, symbols and
 * file names are arbitrary bytes. */
#include <stdlib.h>
#include <string.h>

#include "profile/profile_internal.h"

/* Length of the well-formed UTF-8 sequence at s (n bytes available), 0 if ill-formed. */
size_t hc__utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
	if (c >= 0xE0 && c <= 0xEF) {
		unsigned char lo = 0x80, hi = 0xBF;

		if (c == 0xE0)
			lo = 0xA0; /* overlong */
		else if (c == 0xED)
			hi = 0x9F; /* UTF-16 surrogates */
		if (n < 3 || s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xF0 && c <= 0xF4) {
		unsigned char lo = 0x80, hi = 0xBF;

		if (c == 0xF0)
			lo = 0x90; /* overlong */
		else if (c == 0xF4)
			hi = 0x8F; /* > U+10FFFF */
		if (n < 4 || s[1] < lo || s[1] > hi || (s[2] & 0xC0) != 0x80 ||
		    (s[3] & 0xC0) != 0x80)
			return 0;
		return 4;
	}
	return 0; /* continuation byte, 0xC0, 0xC1, 0xF5..0xFF */
}

/*
 * Returns s itself when it is valid UTF-8, else a malloc'ed copy with every invalid byte
 * replaced by U+FFFD (EF BF BD); *len gets the length. NULL (ENOMEM) on failure.
 */
char *hc__utf8_sanitize(const char *s, size_t *len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, bad = 0, o = 0;
	char *out;

	while (i < n) {
		size_t l = hc__utf8_seq_len(u + i, n - i);

		if (!l) {
			bad++;
			l = 1;
		}
		i += l;
	}
	*len = n;
	if (!bad)
		return (char *)s;

	out = malloc(n + 2 * bad + 1);
	if (!out)
		return NULL;
	for (i = 0; i < n;) {
		size_t l = hc__utf8_seq_len(u + i, n - i);

		if (l) {
			memcpy(out + o, s + i, l);
			o += l;
			i += l;
		} else {
			memcpy(out + o, "\xEF\xBF\xBD", 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
	*len = o;
	return out;
}
