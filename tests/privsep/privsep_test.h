/* SPDX-License-Identifier: GPL-2.0-only */
/* Helpers shared by the privsep/ unit tests. */
#ifndef HOTCOLD_TESTS_PRIVSEP_H
#define HOTCOLD_TESTS_PRIVSEP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef __has_feature
#define __has_feature(x) 0
#endif
/* The same test as privsep/sandbox.c: sanitizer builds allow LeakSanitizer's calls (clone,
 * ptrace, prctl, wait4, kill), so refusing them is only asserted in the other builds. */
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define HC_TEST_ASAN 1
#else
#define HC_TEST_ASAN 0
#endif

/*
 * A group that needs root (map_files, files of other owners, becoming nobody): exit 77
 * (skip) with a reason outside CI, fail under CI=true, where every test must run.
 */
static inline void privsep_require_root(const char *group, const char *why)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return;
	if (ci && !strcmp(ci, "true")) {
		fprintf(stderr, "FAIL: group %s needs root (%s), and CI=true forbids skipping\n",
			group, why);
		exit(1);
	}
	fprintf(stderr, "SKIP: group %s needs root (%s); run as root\n", group, why);
	exit(77);
}

#endif
