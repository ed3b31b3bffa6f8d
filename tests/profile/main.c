// SPDX-License-Identifier: GPL-2.0-only
/* One cmocka binary for profile/: every group runs, the exit status counts the failures. */
#include "tests.h"

int main(void)
{
	int failed = 0;

	failed += run_stacktab_tests();
	failed += run_tree_tests();
	failed += run_encode_tests();
	failed += run_hist_tests();
	return failed ? 1 : 0;
}
