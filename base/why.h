/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The error-reason convention of the whole tree (docs/architecture.md): a function whose
 * failure has a reason worth telling takes `char *why, size_t why_len` as its last
 * parameters, returns 0 or -errno, and on failure writes a one-line reason into why (no
 * trailing newline, no program name, NUL-terminated, truncated to why_len). The caller
 * prints it once, with its own context. why may be NULL or why_len 0: the reason is dropped.
 * A buffer, not a pointer to a static string: reasons name what failed ("-F 3x: unknown
 * unit"), and the caller owns the storage, so nothing is shared between threads.
 */
#ifndef HOTCOLD_BASE_WHY_H
#define HOTCOLD_BASE_WHY_H

#include <stddef.h>

/* Write the reason (printf format) into why[0..why_len). */
void hc_why_set(char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* hc_why_set(), then return err: `return hc_why(-EINVAL, why, why_len, "bad %s", s);`. */
int hc_why(int err, char *why, size_t why_len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
