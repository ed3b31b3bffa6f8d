// SPDX-License-Identifier: GPL-2.0-only
/* One cmocka binary for profile/: every group runs, the exit status counts the failures. */
#include <stdio.h>
#include <string.h>

#include "tests.h"

/* On a mismatch, leave the actual output next to the test for a human to diff and review. */
void expect_golden_text(const char *actual, const char *expected, const char *name)
{
	if (strcmp(actual, expected) != 0) {
		char path[256];
		FILE *f;

		snprintf(path, sizeof(path), "%s.actual", name);
		f = fopen(path, "w");
		if (f) {
			fputs(actual, f);
			fclose(f);
		}
		fprintf(stderr, "golden mismatch for %s: actual output in %s\n", name, path);
	}
	assert_string_equal(actual, expected);
}

uint64_t hc_test_rng(void)
{
	static uint64_t state = 7;

	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

int main(void)
{
	int failed = 0;

	failed += run_stacktab_tests();
	failed += run_tree_tests();
	failed += run_encode_tests();
	failed += run_hist_tests();
	failed += run_store_tests();
	failed += run_pprof_tests();
	failed += run_speedscope_tests();
	failed += run_decode_tests();
	failed += run_counters_tests();
	return failed ? 1 : 0;
}
