/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Helpers internal to symbolize/.
 *
 * hc_strpool: append-only string storage; strings are referenced by a 32-bit offset so that
 * growing the pool (realloc) never invalidates what callers stored.
 */
#ifndef HOTCOLD_SYMBOLIZE_UTIL_H
#define HOTCOLD_SYMBOLIZE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hc_strpool {
	char *buf;
	size_t len;
	size_t cap;
};

/* Copies s[0..len) plus a NUL; returns the offset in *off. 0 or -ENOMEM / -E2BIG. */
int hc_strpool__add(struct hc_strpool *p, const char *s, size_t len, uint32_t *off);

static inline const char *hc_strpool__get(const struct hc_strpool *p, uint32_t off)
{
	return p->buf + off;
}

/* Give back unused capacity once parsing is done. */
void hc_strpool__shrink(struct hc_strpool *p);
void hc_strpool__release(struct hc_strpool *p);

/*
 * Read a whole file (procfs files report st_size 0, so read until EOF) into a malloc'd,
 * NUL-terminated buffer. Fails with -EFBIG beyond max_bytes. 0 or -errno.
 */
int hc_read_file(const char *path, size_t max_bytes, char **buf, size_t *len);
/* The same from an open descriptor (read from its current offset; not closed). */
int hc_read_fd(int fd, size_t max_bytes, char **buf, size_t *len);

/*
 * Read path (at most max_bytes, see hc_read_file) and return parse(buf, len); the buffer is
 * freed afterwards. NULL + errno on failure (the read's, or parse's).
 */
void *hc_parse_file(const char *path, size_t max_bytes,
		    void *(*parse)(const char *buf, size_t len));
void *hc_parse_fd(int fd, size_t max_bytes, void *(*parse)(const char *buf, size_t len));

/*
 * Parse hex digits at *pp (at most 16; with allow_0x an optional 0x/0X prefix) and advance
 * *pp past them. 0, or -EINVAL when there is no digit or too many.
 */
int hc_parse_hex(const char **pp, const char *end, bool allow_0x, uint64_t *out);

/* Open-addressing map from a 128-bit key (a, b) to a 32-bit value. Zeroed struct = empty map. */
struct hc_keymap_slot;
struct hc_keymap {
	struct hc_keymap_slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t nr;
};

/* Insert or overwrite. 0 or -ENOMEM. */
int hc_keymap__put(struct hc_keymap *m, uint64_t a, uint64_t b, uint32_t val);
/* 0 and *val, or -ENOENT. */
int hc_keymap__get(const struct hc_keymap *m, uint64_t a, uint64_t b, uint32_t *val);
void hc_keymap__release(struct hc_keymap *m);

#endif
