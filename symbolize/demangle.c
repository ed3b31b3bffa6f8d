// SPDX-License-Identifier: GPL-2.0-only
#include "symbolize/demangle.h"

#include <errno.h>
#include <libiberty/demangle.h>
#include <stdbool.h>
#include <string.h>

struct out_buf {
	char *buf;
	size_t size;
	size_t len;
	bool truncated;
};

static void append(const char *s, size_t n, void *opaque)
{
	struct out_buf *o = opaque;

	if (o->truncated || n >= o->size - o->len) {
		o->truncated = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

int hc_demangle(const char *name, char *buf, size_t size)
{
	const int opts = DMGL_PARAMS | DMGL_ANSI;
	struct out_buf o = {.buf = buf, .size = size};
	int ok;

	if (!size)
		return -ENAMETOOLONG;
	/* Itanium C++ and Rust legacy start with _Z, Rust v0 with _R. */
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return -EINVAL;
	/*
	 * Rust first: a legacy Rust name is also a valid C++ name, but only the Rust demangler
	 * drops the trailing ::h<hash>. It declines anything that is not Rust.
	 */
	ok = rust_demangle_callback(name, opts, append, &o);
	if (!ok && !o.truncated) {
		o.len = 0;
		ok = cplus_demangle_v3_callback(name, opts, append, &o);
	}
	if (o.truncated)
		return -ENAMETOOLONG;
	if (!ok || !o.len)
		return -EINVAL;
	buf[o.len] = '\0';
	return 0;
}
