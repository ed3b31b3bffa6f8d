// SPDX-License-Identifier: GPL-2.0-only
#include <stdlib.h>
#include <string.h>

#include "tests.h"

/* Deterministic key material: key k has length k % 9 (0..8 words) and distinct contents. */
static size_t make_key(uint64_t k, uint64_t *key)
{
	size_t n = k % 9;

	for (size_t i = 0; i < n; i++)
		key[i] = (k << 8) ^ (i * 0x9E3779B97F4A7C15ULL);
	if (n)
		key[0] = k; /* keys of equal length differ in word 0 */
	return n;
}

static void test_stacktab_basic(void **state)
{
	struct hc_stacktab *tab = hc_stacktab__new();
	const uint64_t a[] = {1, 2, 3}, b[] = {1, 2}, c[] = {1, 2, 3, 0};
	const uint64_t *k;
	size_t n = 99;
	int64_t ia, ib, ic, iempty;

	(void)state;
	assert_non_null(tab);
	assert_int_equal(hc_stacktab__count(tab), 0);

	ia = hc_stacktab__intern(tab, a, 3);
	ib = hc_stacktab__intern(tab, b, 2);
	ic = hc_stacktab__intern(tab, c, 4);
	iempty = hc_stacktab__intern(tab, NULL, 0);
	assert_int_equal(ia, 0);
	assert_int_equal(ib, 1);
	assert_int_equal(ic, 2);
	assert_int_equal(iempty, 3);
	assert_int_equal(hc_stacktab__count(tab), 4);

	/* existing keys: same index, no new entry */
	assert_int_equal(hc_stacktab__intern(tab, a, 3), ia);
	assert_int_equal(hc_stacktab__intern(tab, b, 2), ib);
	assert_int_equal(hc_stacktab__intern(tab, a, 0), iempty); /* length matters, not ptr */
	assert_int_equal(hc_stacktab__count(tab), 4);

	k = hc_stacktab__key(tab, (size_t)ic, &n);
	assert_int_equal(n, 4);
	assert_memory_equal(k, c, sizeof(c));
	k = hc_stacktab__key(tab, (size_t)iempty, &n);
	assert_non_null(k);
	assert_int_equal(n, 0);
	assert_null(hc_stacktab__key(tab, 4, &n));
	assert_int_equal(n, 0);
	assert_null(hc_stacktab__weights(tab, 4));
	assert_true(hc_stacktab__memory_bytes(tab) > 0);

	hc_stacktab__free(tab);
	hc_stacktab__free(NULL);
}

static void test_stacktab_weights(void **state)
{
	struct hc_stacktab *tab = hc_stacktab__new();
	const uint64_t a[] = {0xffffffff81000000ULL, 0x401000};
	const struct hc_weights w = {
		.on_cpu_ns = 10, .off_cpu_ns = 3, .runqueue_ns = 2, .samples = 1};
	struct hc_weights *got;
	int64_t idx;

	(void)state;
	assert_non_null(tab);
	for (int i = 0; i < 1000; i++) {
		idx = hc_stacktab__intern(tab, a, 2);
		assert_int_equal(idx, 0);
		hc_weights__add(hc_stacktab__weights(tab, (size_t)idx), &w);
	}
	idx = hc_stacktab__intern(tab, a, 1);
	assert_int_equal(idx, 1);
	hc_weights__add(hc_stacktab__weights(tab, (size_t)idx), &w);

	got = hc_stacktab__weights(tab, 0);
	assert_int_equal(got->on_cpu_ns, 10000);
	assert_int_equal(got->off_cpu_ns, 3000);
	assert_int_equal(got->runqueue_ns, 2000);
	assert_int_equal(got->samples, 1000);
	assert_int_equal(hc_weights__value(got), 15000);
	got = hc_stacktab__weights(tab, 1);
	assert_int_equal(got->samples, 1);
	assert_int_equal(hc_weights__value(got), 15);
	hc_stacktab__free(tab);
}

#define MANY_KEYS 100000

static void test_stacktab_growth(void **state)
{
	struct hc_stacktab *tab = hc_stacktab__new();
	uint64_t key[8];
	size_t n, got_n, zero_len_idx = 0;
	bool have_zero = false;

	(void)state;
	assert_non_null(tab);
	/* key k % 9 == 0 is the empty key: all of them intern to one entry */
	for (uint64_t k = 0; k < MANY_KEYS; k++) {
		int64_t idx;

		n = make_key(k, key);
		idx = hc_stacktab__intern(tab, key, n);
		assert_true(idx >= 0);
		if (!n) {
			if (!have_zero)
				zero_len_idx = (size_t)idx;
			have_zero = true;
			assert_int_equal((size_t)idx, zero_len_idx);
		}
		hc_stacktab__weights(tab, (size_t)idx)->samples += 1;
	}
	/* 1 empty key + every key with n > 0 */
	assert_int_equal(hc_stacktab__count(tab), 1 + MANY_KEYS - (MANY_KEYS + 8) / 9);

	/* a second pass finds every key at a stable index, with its words intact */
	for (uint64_t k = 0; k < MANY_KEYS; k++) {
		const uint64_t *stored;
		int64_t idx;
		size_t before = hc_stacktab__count(tab);

		n = make_key(k, key);
		idx = hc_stacktab__intern(tab, key, n);
		assert_true(idx >= 0);
		assert_int_equal(hc_stacktab__count(tab), before);
		stored = hc_stacktab__key(tab, (size_t)idx, &got_n);
		assert_int_equal(got_n, n);
		if (n)
			assert_memory_equal(stored, key, n * sizeof(*key));
		assert_int_equal(hc_stacktab__weights(tab, (size_t)idx)->samples,
				 n ? 1 : (MANY_KEYS + 8) / 9);
	}
	/* 100k entries at <= 0.7 load: at least 2^18 slots; no more than ~50 MB in all */
	assert_true(hc_stacktab__memory_bytes(tab) > MANY_KEYS * 56);
	assert_true(hc_stacktab__memory_bytes(tab) < 50u * 1024 * 1024);
	hc_stacktab__free(tab);
}

int run_stacktab_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stacktab_basic),
		cmocka_unit_test(test_stacktab_weights),
		cmocka_unit_test(test_stacktab_growth),
	};

	return cmocka_run_group_tests_name("stacktab", tests, NULL, NULL);
}
