// SPDX-License-Identifier: GPL-2.0-only
/* The -F / -d grammar as a table: accepted and refused cases, with the reason kind. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "base/timespec.h"

struct rate_case {
	const char *spec;
	int err;	    /* expected return */
	uint64_t period_ns; /* when err == 0 */
	const char *why;    /* substring of the reason when err != 0 */
};

static const struct rate_case rate_cases[] = {
	/* bare numbers are hertz */
	{"99", 0, 10101010, NULL},
	{"1", 0, 1000000000, NULL},
	{"997", 0, 1003009, NULL},
	{"5000", 0, 200000, NULL},
	/* rates */
	{"99hz", 0, 10101010, NULL},
	{"99Hz", 0, 10101010, NULL},
	{"5000hz", 0, 200000, NULL},
	{"4999hz", 0, 200040, NULL},
	/* intervals, every suffix */
	{"200us", 0, 200000, NULL},
	{"200usec", 0, 200000, NULL},
	{"200000ns", 0, 200000, NULL},
	{"200000nsec", 0, 200000, NULL},
	{"1ms", 0, 1000000, NULL},
	{"10msec", 0, 10000000, NULL},
	{"1s", 0, 1000000000, NULL},
	{"2sec", 0, 2000000000, NULL},
	{"1m", 0, 60000000000ull, NULL},
	{"1min", 0, 60000000000ull, NULL},
	{"1h", 0, 3600000000000ull, NULL},
	{"1hour", 0, 3600000000000ull, NULL},
	{"1d", 0, 86400000000000ull, NULL},
	{"1day", 0, 86400000000000ull, NULL},
	/* the 200 us floor */
	{"199us", -ENOTSUP, 0, "200 us"},
	{"199999ns", -ENOTSUP, 0, "200 us"},
	{"5001hz", -ENOTSUP, 0, "200 us"},
	{"5001", -ENOTSUP, 0, "200 us"},
	{"100000", -ENOTSUP, 0, "200 us"},
	{"1ns", -ENOTSUP, 0, "200 us"},
	{"4000000000hz", -ENOTSUP, 0, "200 us"},
	/* zero and negatives */
	{"0", -EDOM, 0, "zero"},
	{"0hz", -EDOM, 0, "zero"},
	{"0ms", -EDOM, 0, "zero"},
	{"-5", -EDOM, 0, "negative"},
	{"-1ms", -EDOM, 0, "negative"},
	/* garbage */
	{"", -EINVAL, 0, "empty"},
	{"abc", -EINVAL, 0, "not a number"},
	{"hz", -EINVAL, 0, "not a number"},
	{"1.5ms", -EINVAL, 0, "unknown unit"},
	{"10xs", -EINVAL, 0, "unknown unit"},
	{"1e3", -EINVAL, 0, "unknown unit"},
	{"99 hz", -EINVAL, 0, "unknown unit"},
	{"0x10", -EINVAL, 0, "unknown unit"},
	/* overflow */
	{"99999999999999999999999", -ERANGE, 0, "too large"},
	{"18446744073709551616", -ERANGE, 0, "too large"},
	{"99999999999999d", -ERANGE, 0, "too large"},
};

static void test_rate_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rate_cases) / sizeof(rate_cases[0]); i++) {
		const struct rate_case *c = &rate_cases[i];
		struct hc_rate r = {0};
		char why[256] = "";
		int err = hc_rate__parse(c->spec, &r, why, sizeof(why));

		print_message("-F '%s' -> %d %s\n", c->spec, err, why);
		assert_int_equal(err, c->err);
		if (!c->err) {
			assert_int_equal(r.period_ns, c->period_ns);
			assert_true(r.hz > 0);
		} else {
			assert_non_null(strstr(why, c->why));
		}
	}
}

static void test_rate_hz_value(void **state)
{
	struct hc_rate r;

	(void)state;
	assert_int_equal(hc_rate__parse("1ms", &r, NULL, 0), 0);
	assert_true(r.hz > 999.999 && r.hz < 1000.001);
	assert_int_equal(hc_rate__parse("99", &r, NULL, 0), 0);
	assert_true(r.hz > 98.99 && r.hz < 99.01);
}

static void test_kernel_max(void **state)
{
	struct hc_rate r;
	char why[256] = "";

	(void)state;
	assert_int_equal(hc_rate__parse("4999hz", &r, NULL, 0), 0);
	assert_int_equal(hc_rate__check_kernel_max(&r, 100000, why, sizeof(why)), 0);
	assert_int_equal(hc_rate__check_kernel_max(&r, 4000, why, sizeof(why)), -ERANGE);
	assert_non_null(strstr(why, "perf_event_max_sample_rate"));
	assert_non_null(strstr(why, "4000"));
	/* 0 = unknown (sysctl unreadable): not refused here, the kernel decides. */
	assert_int_equal(hc_rate__check_kernel_max(&r, 0, why, sizeof(why)), 0);
}

struct dur_case {
	const char *spec;
	int err;
	uint64_t ns;
};

static const struct dur_case dur_cases[] = {
	{"10", 0, 10000000000ull},
	{"500ms", 0, 500000000ull},
	{"10s", 0, 10000000000ull},
	{"2m", 0, 120000000000ull},
	{"1h", 0, 3600000000000ull},
	{"250us", 0, 250000ull},
	{"30d", 0, 30ull * 86400 * 1000000000ull},
	{"31d", -ERANGE, 0},
	{"0", -EDOM, 0},
	{"0s", -EDOM, 0},
	{"-1s", -EDOM, 0},
	{"10hz", -EINVAL, 0},
	{"ten", -EINVAL, 0},
	{"", -EINVAL, 0},
	{"1.5s", -EINVAL, 0},
	{"99999999999999999999s", -ERANGE, 0},
};

static void test_duration_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(dur_cases) / sizeof(dur_cases[0]); i++) {
		const struct dur_case *c = &dur_cases[i];
		uint64_t ns = 0;
		char why[256] = "";
		int err = hc_duration__parse(c->spec, &ns, why, sizeof(why));

		print_message("-d '%s' -> %d %s\n", c->spec, err, why);
		assert_int_equal(err, c->err);
		if (!c->err)
			assert_int_equal(ns, c->ns);
		else
			assert_true(strlen(why) > 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rate_table),
		cmocka_unit_test(test_rate_hz_value),
		cmocka_unit_test(test_kernel_max),
		cmocka_unit_test(test_duration_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
