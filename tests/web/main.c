// SPDX-License-Identifier: GPL-2.0-only
/* One cmocka binary for web/: every group runs, the exit status counts the failures. */
#include "tests.h"

int main(void)
{
	int failed = 0;

	failed += run_params_tests();
	failed += run_server_tests();
	return failed ? 1 : 0;
}
