/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The one way a cmocka test skips. cmocka's skip() marks the test skipped but the binary still
 * exits 0, so meson reports it passed and CI's "a skip is a failure" rule never sees it. Under
 * CI=true, where every test must run, hc_skip() fails the test instead; elsewhere it skips.
 * Either way it prints the reason. Include after <cmocka.h>.
 */
#ifndef HOTCOLD_TESTS_SKIP_H
#define HOTCOLD_TESTS_SKIP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* hc_skip(fmt, ...): does not return (cmocka jumps out of the test). */
#define hc_skip(...) hc_skip_at(__FILE__, __LINE__, __VA_ARGS__)

__attribute__((format(printf, 3, 4))) static inline void hc_skip_at(const char *file, int line,
								    const char *fmt, ...)
{
	const char *ci = getenv("CI");
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (ci && !strcmp(ci, "true")) {
		print_error("FAIL: %s, and CI=true forbids skipping\n", why);
		_fail(file, line);
	}
	print_message("SKIP: %s\n", why);
	_skip(file, line);
}

#endif
