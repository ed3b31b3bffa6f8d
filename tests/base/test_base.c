// SPDX-License-Identifier: GPL-2.0-only
/* base/: hashing, the string interner, growable arrays, the why convention, clocks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/intern.h"
#include "base/time.h"
#include "base/why.h"

/* ---- hashing ---- */

static void test_hash_known_values(void **state)
{
	(void)state;
	/* FNV-1a's published test vectors: "" and "a". */
	assert_true(hc_hash_fnv1a(HC_FNV1A_OFFSET, "", 0) == 0xcbf29ce484222325ULL);
	assert_true(hc_hash_fnv1a(HC_FNV1A_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cULL);
	/* Continuing a hash is hashing the concatenation. */
	assert_true(hc_hash_fnv1a(hc_hash_fnv1a(HC_FNV1A_OFFSET, "ab", 2), "cd", 2) ==
		    hc_hash_fnv1a(HC_FNV1A_OFFSET, "abcd", 4));
	/* The avalanches are bijections that fix 0 and move everything else they are fed here. */
	assert_true(hc_hash_mix(0) == 0);
	assert_true(hc_hash_splitmix(0) == 0);
	assert_true(hc_hash_mix(1) != 1);
	assert_true(hc_hash_splitmix(1) != 1);
}

static void test_hash_spreads(void **state)
{
	/* Sequential keys (tgids, indexes) land in distinct low bits often enough: 4096 keys in
	 * 4096 buckets leave about 1/e of them empty for a random function; far more means the
	 * low bits do not depend on the key. */
	static uint8_t seen_mix[4096], seen_split[4096], seen_words[4096], seen_bytes[4096];
	size_t empty_mix = 0, empty_split = 0, empty_words = 0, empty_bytes = 0;

	(void)state;
	for (uint64_t k = 0; k < 4096; k++) {
		char s[32];
		int n = snprintf(s, sizeof(s), "sym%" PRIu64, k);

		seen_mix[hc_hash_mix(k + 1) & 4095] = 1;
		seen_split[hc_hash_splitmix(k + 1) & 4095] = 1;
		seen_words[hc_hash_words(&k, 1, 0) & 4095] = 1;
		seen_bytes[hc_hash_bytes(s, (size_t)n) & 4095] = 1;
	}
	for (size_t i = 0; i < 4096; i++) {
		empty_mix += !seen_mix[i];
		empty_split += !seen_split[i];
		empty_words += !seen_words[i];
		empty_bytes += !seen_bytes[i];
	}
	assert_true(empty_mix < 1700);
	assert_true(empty_split < 1700);
	assert_true(empty_words < 1700);
	assert_true(empty_bytes < 1700);
}

static void test_hash_words_length_matters(void **state)
{
	uint64_t key[3] = {0, 0, 0};

	(void)state;
	/* Zero words of different counts are different keys (the stack table relies on it). */
	assert_true(hc_hash_words(key, 1, 0) != hc_hash_words(key, 2, 0));
	assert_true(hc_hash_words(key, 2, 0) != hc_hash_words(key, 3, 0));
	assert_true(hc_hash_words(key, 0, 0) != hc_hash_words(key, 0, 1));
	/* Bytes: the length is folded in as well. */
	assert_true(hc_hash_bytes("a\0", 1) != hc_hash_bytes("a\0", 2));
}

/* ---- interner ---- */

static void test_intern_identity(void **state)
{
	struct hc_interner in = {0};
	const char *a, *b, *c, *d;
	char buf[8] = "main";

	(void)state;
	a = hc_interner__add_str(&in, "main");
	assert_non_null(a);
	assert_string_equal(a, "main");
	assert_ptr_not_equal(a, buf);
	b = hc_interner__add(&in, buf, strlen(buf));
	assert_ptr_equal(a, b);
	/* A prefix is another string; so is an empty one. */
	c = hc_interner__add(&in, "mainly", 4);
	assert_ptr_equal(a, c);
	c = hc_interner__add(&in, "mai", 3);
	assert_ptr_not_equal(a, c);
	assert_string_equal(c, "mai");
	d = hc_interner__add_str(&in, "");
	assert_non_null(d);
	assert_string_equal(d, "");
	assert_ptr_equal(d, hc_interner__add(&in, "", 0));
	assert_int_equal(in.nr, 3);
	/* find adds nothing */
	assert_ptr_equal(hc_interner__find_str(&in, "main"), a);
	assert_ptr_equal(hc_interner__find_str(&in, ""), d);
	assert_null(hc_interner__find_str(&in, "ma"));
	assert_null(hc_interner__find_str(&in, "mainly"));
	assert_int_equal(in.nr, 3);
	hc_interner__release(&in);
	assert_null(hc_interner__find_str(&in, "main"));
	assert_int_equal(in.nr, 0);
	assert_null(in.slots);
	hc_interner__release(&in); /* released twice: a no-op */
	hc_interner__release(NULL);
}

static void test_intern_many_stable(void **state)
{
	enum { N = 20000 };
	struct hc_interner in = {0};
	const char **first = calloc(N, sizeof(*first));
	char *huge = malloc(40000);

	(void)state;
	assert_non_null(first);
	assert_non_null(huge);
	/* Enough strings to grow the slots many times and fill several chunks: the pointers
	 * handed out before never move. */
	for (int i = 0; i < N; i++) {
		char s[32];

		snprintf(s, sizeof(s), "frame_%d", i);
		first[i] = hc_interner__add_str(&in, s);
		assert_non_null(first[i]);
	}
	/* A string over a quarter of a chunk gets a block of its own. */
	memset(huge, 'x', 39999);
	huge[39999] = '\0';
	assert_string_equal(hc_interner__add_str(&in, huge), huge);
	for (int i = 0; i < N; i++) {
		char s[32];

		snprintf(s, sizeof(s), "frame_%d", i);
		assert_ptr_equal(hc_interner__add_str(&in, s), first[i]);
		assert_string_equal(first[i], s);
	}
	assert_int_equal(in.nr, N + 1);
	assert_true(in.nr * 10 <= in.cap * 7);
	hc_interner__release(&in);
	free(huge);
	free(first);
}

/* ---- arrays ---- */

static void test_array_grow(void **state)
{
	uint32_t *a = NULL;
	size_t cap = 0, n;

	(void)state;
	assert_int_equal(hc_array_grow(a, cap, 0, 16), 0);
	assert_null(a); /* nothing needed: nothing allocated */
	assert_int_equal(cap, 0);
	for (n = 0; n < 1000; n++) {
		if (n == cap)
			assert_int_equal(hc_array_grow(a, cap, n + 1, 16), 0);
		a[n] = (uint32_t)n;
	}
	assert_int_equal(cap, 1024); /* 16, doubled six times */
	for (n = 0; n < 1000; n++)
		assert_int_equal(a[n], n);
	/* More than twice: doubled until it fits. */
	assert_int_equal(hc_array_grow(a, cap, 5000, 16), 0);
	assert_int_equal(cap, 8192);
	/* A size that overflows is refused, and the array is left as it was. */
	assert_int_equal(hc_array_grow(a, cap, SIZE_MAX / 2, 16), -ENOMEM);
	assert_int_equal(cap, 8192);
	assert_int_equal(a[999], 999);
	free(a);
}

/* ---- why ---- */

static void test_why(void **state)
{
	char why[8] = "old";

	(void)state;
	assert_int_equal(hc_why(-EINVAL, why, sizeof(why), "bad %s", "x"), -EINVAL);
	assert_string_equal(why, "bad x");
	/* Truncated, NUL-terminated. */
	hc_why_set(why, sizeof(why), "%s", "a long reason");
	assert_string_equal(why, "a long ");
	/* No buffer, or an empty one: the reason is dropped and nothing is written. */
	assert_int_equal(hc_why(-ENOENT, NULL, 0, "dropped"), -ENOENT);
	assert_int_equal(hc_why(-ENOENT, why, 0, "dropped"), -ENOENT);
	assert_string_equal(why, "a long ");
}

/* ---- clocks ---- */

static void test_clocks(void **state)
{
	uint64_t m0, m1;
	int64_t r;

	(void)state;
	m0 = hc_mono_ns();
	m1 = hc_mono_ns();
	assert_true(m1 >= m0);
	r = hc_clock_ns(CLOCK_REALTIME);
	/* After 2020-01-01, in ns: the unit is nanoseconds, not seconds or microseconds. */
	assert_true(r > 1577836800ll * HC_NSEC_PER_SEC);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_known_values),
		cmocka_unit_test(test_hash_spreads),
		cmocka_unit_test(test_hash_words_length_matters),
		cmocka_unit_test(test_intern_identity),
		cmocka_unit_test(test_intern_many_stable),
		cmocka_unit_test(test_array_grow),
		cmocka_unit_test(test_why),
		cmocka_unit_test(test_clocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
