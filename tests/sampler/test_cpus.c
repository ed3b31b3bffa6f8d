// SPDX-License-Identifier: GPL-2.0-only
/* Parsing the kernel's CPU lists (/sys/devices/system/cpu/online). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sampler/cpus.h"

static void check(const char *s, int want_n, const uint32_t *want)
{
	uint32_t *cpus = NULL;
	int n = hc_cpulist__parse(s, strlen(s), &cpus);

	assert_int_equal(n, want_n);
	for (int i = 0; i < n; i++)
		assert_int_equal(cpus[i], want[i]);
	free(cpus);
}

static void test_valid(void **state)
{
	(void)state;
	check("0\n", 1, (uint32_t[]){0});
	check("0-1\n", 2, (uint32_t[]){0, 1});
	check("0-3,8,10-11\n", 7, (uint32_t[]){0, 1, 2, 3, 8, 10, 11});
	check("5", 1, (uint32_t[]){5});
}

static void test_invalid(void **state)
{
	(void)state;
	check("", -EINVAL, NULL);
	check("\n", -EINVAL, NULL);
	check("a", -EINVAL, NULL);
	check("3-1", -EINVAL, NULL);
	check("0,", -EINVAL, NULL);
	check("0-", -EINVAL, NULL);
	check("1,0", -EINVAL, NULL);
	check("0-1,1", -EINVAL, NULL);
	check("0-99999999", -EINVAL, NULL);
	check("0 1", -EINVAL, NULL);
}

static void test_real_file(void **state)
{
	uint32_t *cpus = NULL;
	int n;

	(void)state;
	n = hc_cpulist__read(NULL, &cpus);
	assert_true(n >= 1);
	free(cpus);
	assert_int_equal(hc_cpulist__read("/nonexistent/online", &cpus), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_real_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
