/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A streaming JSON writer shared by the encoders of profile/ (encode_json.c, encode_speedscope.c).
 * Private to profile/; header-only (static inline), so it needs no build line.
 *
 * Building a whole document in jansson costs ~1.6 KB and ~10 us per value (measured: 580 ms and
 * ~100 MB for a 30k-node tree), so large parts (the flame graph, speedscope's samples) are
 * written piece by piece instead. Every string that needs escaping still goes through jansson
 * (jstream_value() of a json_string), so all escaping stays there; what callers write directly
 * is only fixed keys, punctuation, decimal integers (jstream_u64()) and strings that need none
 * (jstream_str()), each as jansson would print them.
 *
 * Errors are sticky: the first failure is kept in js->err (-errno or -EIO for a short write,
 * -ENOMEM) and every later call is a no-op, so a caller writes a whole document and checks once.
 */
#ifndef HOTCOLD_PROFILE_JSTREAM_H
#define HOTCOLD_PROFILE_JSTREAM_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "profile/profile_internal.h"

#define JSTREAM_OUT_BYTES 16384

struct jstream {
	FILE *out;
	char *buf; /* scratch for jansson's encoding of one value; jstream_finish() frees it */
	size_t cap;
	int err;
	/* Output is gathered here and handed to fwrite in blocks: a large profile is millions
	 * of short tokens, and one locked fwrite per token cost more than all the rest. */
	size_t olen;
	char obuf[JSTREAM_OUT_BYTES];
};

/* A string from the system as JSON: invalid UTF-8 repaired (hc__utf8_sanitize), NULL as null.
 * A new reference, NULL on ENOMEM. */
static inline json_t *jstr(const char *s)
{
	size_t len;
	char *valid;
	json_t *j;

	if (!s)
		return json_null();
	valid = hc__utf8_sanitize(s, &len);
	if (!valid)
		return NULL;
	j = json_stringn_nocheck(valid, len);
	if (valid != s)
		free(valid);
	return j;
}

/* json_int_t is signed 64-bit: larger values (never reached by ns counters) become reals. */
static inline json_t *ju64(uint64_t v)
{
	if (v > (uint64_t)INT64_MAX)
		return json_real((double)v);
	return json_integer((json_int_t)v);
}

static inline void jstream_flush(struct jstream *js)
{
	errno = 0; /* a short fwrite says why in errno: ENOSPC, EIO... */
	if (js->olen && !js->err && fwrite(js->obuf, 1, js->olen, js->out) != js->olen)
		js->err = errno ? -errno : -EIO;
	js->olen = 0;
}

static inline void jstream_raw(struct jstream *js, const char *s, size_t n)
{
	if (js->err)
		return;
	if (n > sizeof(js->obuf) - js->olen) {
		jstream_flush(js);
		if (n >= sizeof(js->obuf)) {
			errno = 0;
			if (!js->err && fwrite(s, 1, n, js->out) != n)
				js->err = errno ? -errno : -EIO;
			return;
		}
	}
	memcpy(js->obuf + js->olen, s, n);
	js->olen += n;
}

#define JSTREAM_LIT(js, lit) jstream_raw((js), (lit), sizeof(lit) - 1)

/* Encode v compact with jansson into js->buf (grown as needed); the length, 0 on ENOMEM. */
static inline size_t jstream_dump(struct jstream *js, const json_t *v, size_t flags)
{
	size_t n;

	for (;;) {
		n = json_dumpb(v, js->buf, js->cap, flags);
		if (n == 0 || n <= js->cap)
			return n;
		free(js->buf);
		js->cap = n * 2;
		js->buf = malloc(js->cap);
		if (!js->buf) {
			js->cap = 0;
			return 0;
		}
	}
}

/*
 * json_dumps() without its flaw: out of memory while it writes a key, jansson 2.14's
 * json_dumps() leaves the key out and still returns the text (akheron/jansson#655).
 * json_dumpb() sizes the text, then writes it into our buffer. Malloc'd and NUL-ended, NULL
 * when out of memory.
 */
static inline char *jstream_dumps(const json_t *v, size_t flags)
{
	size_t n = json_dumpb(v, NULL, 0, flags);
	char *s = n ? malloc(n + 1) : NULL;

	if (!s)
		return NULL;
	if (json_dumpb(v, s, n, flags) != n) {
		free(s);
		return NULL;
	}
	s[n] = '\0';
	return s;
}

/* Encode one value with jansson and append it; steals v (NULL: a failed constructor). */
static inline void jstream_value(struct jstream *js, json_t *v)
{
	size_t n;

	if (!v) {
		if (!js->err)
			js->err = -ENOMEM;
		return;
	}
	n = js->err ? 0 : jstream_dump(js, v, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(v);
	if (n == 0) {
		if (!js->err)
			js->err = -ENOMEM;
		return;
	}
	jstream_raw(js, js->buf, n);
}

/*
 * A string from the system (as jstr(): NULL is null). Printable ASCII without a quote or a
 * backslash (a flame graph's names, nearly always) is written as jansson writes it, between
 * quotes and unchanged; anything else goes through jansson. A 20k-node answer made and freed
 * ~60k jansson strings.
 */
static inline void jstream_str(struct jstream *js, const char *s)
{
	size_t n = 0;

	if (!s) {
		JSTREAM_LIT(js, "null");
		return;
	}
	while (s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
		n++;
	if (s[n]) {
		jstream_value(js, jstr(s));
		return;
	}
	JSTREAM_LIT(js, "\"");
	jstream_raw(js, s, n);
	JSTREAM_LIT(js, "\"");
}

/* A u64 as jansson prints it: a plain decimal integer (a real above INT64_MAX, see ju64). */
static inline void jstream_u64(struct jstream *js, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	if (v > (uint64_t)INT64_MAX) {
		jstream_value(js, ju64(v));
		return;
	}
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	jstream_raw(js, tmp + i, sizeof(tmp) - i);
}

/* Write out what is gathered, fflush and check the stream, free the scratch: the final error
 * of a document (0, -EIO or -errno). */
static inline int jstream_finish(struct jstream *js)
{
	jstream_flush(js);
	if (!js->err && (fflush(js->out) || ferror(js->out)))
		js->err = errno ? -errno : -EIO;
	free(js->buf);
	js->buf = NULL;
	js->cap = 0;
	return js->err;
}

#endif
