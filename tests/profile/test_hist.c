// SPDX-License-Identifier: GPL-2.0-only
/*
 * profile/hist: DTrace quantize()/lquantize() bucket rules, JSON round trips and refusals, and
 * the printa()-style text against golden files typed in from the DTrace guides' examples
 * (fixtures/profile/hist-*.txt; the provenance of each is in docs/histograms.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"
#include "profile/hist.h"
#include "tests/skip.h"

#define QZ HC_QUANTIZE_ZERO
#define P2(k) ((int64_t)1 << (k))

static char *slurp(const char *name)
{
	char path[512];
	FILE *f;
	char *buf;
	long len;

	snprintf(path, sizeof(path), "%s/%s", HC_FIXTURES_DIR, name);
	f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)len + 1);
	if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* hc_hist__print into memory; *err gets its return value. */
static char *render(const struct hc_hist *h, const char *key, int *err)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	*err = hc_hist__print(h, key, f);
	fclose(f);
	return buf;
}

/* On a mismatch the actual text is left in NAME.actual (in the test's cwd) for review. */
static void expect_golden(const struct hc_hist *h, const char *name)
{
	char *want = slurp(name);
	int err;
	char *got = render(h, NULL, &err);

	assert_non_null(want);
	assert_int_equal(err, 0);
	expect_golden_text(got, want, name);
	free(got);
	free(want);
}

/* DTrace's kernel rule (dtrace_aggregate_quantize), as written there: a linear scan. */
static size_t dtrace_quantize_ref(int64_t val)
{
	size_t i;

	if (val < 0) {
		for (i = 0; i < QZ; i++)
			if (val <= hc_quantize__bucket_value(i))
				return i;
		fail();
		return 0;
	}
	for (i = QZ + 1; i < HC_QUANTIZE_NBUCKETS; i++)
		if (val < hc_quantize__bucket_value(i))
			return i - 1;
	return HC_QUANTIZE_NBUCKETS - 1;
}

/* DTrace's lquantize rule in 128-bit arithmetic (without the kernel's int32 truncation). */
static size_t dtrace_lquantize_ref(int64_t val, int64_t base, int64_t step, int64_t levels)
{
	__int128 level;

	if (val < base)
		return 0;
	level = ((__int128)val - base) / step;
	return level < levels ? (size_t)level + 1 : (size_t)levels + 1;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* A value of random magnitude: all bit lengths are equally likely. */
static int64_t rng_value(void)
{
	uint64_t v = rng() >> (rng() % 64);

	return (rng() & 1) ? (int64_t)v : (int64_t)(0 - v);
}

/* ---- bucket arithmetic ---- */

static void test_quantize_buckets(void **state)
{
	static const struct {
		int64_t value;
		size_t idx;
		int64_t label, min, max;
	} t[] = {
		{0, QZ, 0, 0, 0},
		{1, QZ + 1, 1, 1, 1},
		{2, QZ + 2, 2, 2, 3},
		{3, QZ + 2, 2, 2, 3},
		{4, QZ + 3, 4, 4, 7},
		{7, QZ + 3, 4, 4, 7},
		{8, QZ + 4, 8, 8, 15},
		{1023, QZ + 10, 512, 512, 1023},
		{1024, QZ + 11, 1024, 1024, 2047},
		{P2(62) - 1, 125, P2(61), P2(61), P2(62) - 1},
		{P2(62), 126, P2(62), P2(62), INT64_MAX},
		{INT64_MAX, 126, P2(62), P2(62), INT64_MAX},
		{-1, QZ - 1, -1, -1, -1},
		{-2, QZ - 2, -2, -3, -2},
		{-3, QZ - 2, -2, -3, -2},
		{-4, QZ - 3, -4, -7, -4},
		{-7, QZ - 3, -4, -7, -4},
		{-8, QZ - 4, -8, -15, -8},
		{-P2(62) + 1, 1, -P2(61), -P2(62) + 1, -P2(61)},
		{-P2(62), 0, -P2(62), INT64_MIN, -P2(62)},
		{INT64_MIN + 1, 0, -P2(62), INT64_MIN, -P2(62)},
		{INT64_MIN, 0, -P2(62), INT64_MIN, -P2(62)},
	};
	struct hc_hist *h = hc_hist__new_quantize("us");
	size_t i;

	(void)state;
	assert_non_null(h);
	assert_int_equal(hc_hist__nbuckets(h), HC_QUANTIZE_NBUCKETS);
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		int64_t min, max;
		bool has_min, has_max;
		size_t idx = hc_hist__bucket_index(h, t[i].value);

		assert_int_equal(idx, t[i].idx);
		assert_int_equal(idx, dtrace_quantize_ref(t[i].value));
		assert_int_equal(hc_quantize__bucket_value(idx), t[i].label);
		hc_hist__bucket_bounds(h, idx, &min, &max, &has_min, &has_max);
		assert_true(has_min && has_max);
		assert_int_equal(min, t[i].min);
		assert_int_equal(max, t[i].max);
	}
	/* Every bucket's bounds map back to it and its neighbours tile the int64 range. */
	for (i = 0; i < HC_QUANTIZE_NBUCKETS; i++) {
		int64_t min, max;

		hc_hist__bucket_bounds(h, i, &min, &max, NULL, NULL);
		assert_true(min <= max);
		assert_int_equal(hc_hist__bucket_index(h, min), i);
		assert_int_equal(hc_hist__bucket_index(h, max), i);
		assert_int_equal(dtrace_quantize_ref(min), i);
		assert_int_equal(dtrace_quantize_ref(max), i);
		if (i > 0)
			assert_int_equal(hc_hist__bucket_index(h, min - 1), i - 1);
		else
			assert_int_equal(min, INT64_MIN);
		if (i < HC_QUANTIZE_NBUCKETS - 1)
			assert_int_equal(hc_hist__bucket_index(h, max + 1), i + 1);
		else
			assert_int_equal(max, INT64_MAX);
	}
	for (i = 0; i < 100000; i++) {
		int64_t v = rng_value();

		assert_int_equal(hc_hist__bucket_index(h, v), dtrace_quantize_ref(v));
	}
	hc_hist__free(h);
}

static void test_lquantize_buckets(void **state)
{
	static const struct {
		int64_t lower, upper, step;
		size_t nbuckets;
		int64_t value;
		size_t idx;
	} t[] = {
		/* priority: lquantize(prio, 0, 140, 10) */
		{0, 140, 10, 16, INT64_MIN, 0},
		{0, 140, 10, 16, -1, 0},
		{0, 140, 10, 16, 0, 1},
		{0, 140, 10, 16, 9, 1},
		{0, 140, 10, 16, 10, 2},
		{0, 140, 10, 16, 120, 13},
		{0, 140, 10, 16, 139, 14},
		{0, 140, 10, 16, 140, 15},
		{0, 140, 10, 16, INT64_MAX, 15},
		/* runqueue_length: lquantize(len, 0, 32, 1) */
		{0, 32, 1, 34, -1, 0},
		{0, 32, 1, 34, 0, 1},
		{0, 32, 1, 34, 31, 32},
		{0, 32, 1, 34, 32, 33},
		/* a step that does not divide the range: 4 levels, overflow from 120 */
		{0, 140, 30, 6, 89, 3},
		{0, 140, 30, 6, 90, 4},
		{0, 140, 30, 6, 119, 4},
		{0, 140, 30, 6, 120, 5},
		{0, 140, 30, 6, 139, 5},
		{0, 140, 30, 6, 140, 5},
		/* negative lower bound: (-10, 10, 3) has 6 levels, overflow from 8 */
		{-10, 10, 3, 8, -11, 0},
		{-10, 10, 3, 8, -10, 1},
		{-10, 10, 3, 8, -8, 1},
		{-10, 10, 3, 8, -7, 2},
		{-10, 10, 3, 8, -1, 4},
		{-10, 10, 3, 8, 7, 6},
		{-10, 10, 3, 8, 8, 7},
		{-10, 10, 3, 8, 9, 7},
		/* extreme parameters: values far outside stay exact (no 32-bit truncation) */
		{INT32_MIN, INT32_MIN + 65535, 1, 65537, INT32_MIN, 1},
		{INT32_MIN, INT32_MIN + 65535, 1, 65537, INT64_MIN, 0},
		{INT32_MIN, INT32_MIN + 65535, 1, 65537, INT64_MAX, 65536},
		{INT32_MAX - 65535, INT32_MAX, 65535, 3, INT32_MAX - 1, 1},
		{INT32_MAX - 65535, INT32_MAX, 65535, 3, INT32_MAX, 2},
		{0, 10, 1, 12, (int64_t)1 << 32, 11},
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct hc_hist *h = hc_hist__new_lquantize("x", t[i].lower, t[i].upper, t[i].step);
		int64_t levels = (t[i].upper - t[i].lower) / t[i].step;
		size_t idx;

		assert_non_null(h);
		assert_int_equal(hc_hist__nbuckets(h), t[i].nbuckets);
		idx = hc_hist__bucket_index(h, t[i].value);
		assert_int_equal(idx, t[i].idx);
		assert_int_equal(idx,
				 dtrace_lquantize_ref(t[i].value, t[i].lower, t[i].step, levels));
		hc_hist__free(h);
	}
}

/* Bounds of every lquantize bucket: underflow/overflow open, regular ones step wide. */
static void test_lquantize_bounds(void **state)
{
	struct hc_hist *h = hc_hist__new_lquantize("prio", 0, 140, 30);
	int64_t min, max;
	bool has_min, has_max;
	size_t i;

	(void)state;
	assert_non_null(h);
	hc_hist__bucket_bounds(h, 0, &min, &max, &has_min, &has_max);
	assert_false(has_min);
	assert_true(has_max);
	assert_int_equal(max, -1);
	for (i = 1; i <= 4; i++) {
		hc_hist__bucket_bounds(h, i, &min, &max, &has_min, &has_max);
		assert_true(has_min && has_max);
		assert_int_equal(min, 30 * (int64_t)(i - 1));
		assert_int_equal(max, 30 * (int64_t)i - 1);
	}
	hc_hist__bucket_bounds(h, 5, &min, &max, &has_min, &has_max);
	assert_true(has_min);
	assert_false(has_max);
	assert_int_equal(min, 120);
	hc_hist__free(h);

	/* random shapes and values against the reference rule */
	for (i = 0; i < 2000; i++) {
		int64_t lower = (int64_t)(rng() % 2000) - 1000;
		int64_t step = 1 + (int64_t)(rng() % 100);
		int64_t upper =
			lower + step * (1 + (int64_t)(rng() % 50)) + (int64_t)(rng() % step);
		int64_t v =
			(i % 2) ? rng_value() : lower - 5 + (int64_t)(rng() % (upper - lower + 10));
		struct hc_hist *r = hc_hist__new_lquantize("x", lower, upper, step);

		assert_non_null(r);
		assert_int_equal(hc_hist__bucket_index(r, v),
				 dtrace_lquantize_ref(v, lower, step, (upper - lower) / step));
		hc_hist__free(r);
	}
}

static void test_params(void **state)
{
	static const struct {
		int64_t lower, upper, step;
		bool ok;
	} t[] = {
		{0, 140, 10, true},
		{0, 32, 1, true},
		{0, 140, 30, true},
		{0, 1, 1, true},
		{0, 65535, 1, true},  /* 65535 levels */
		{0, 65536, 1, false}, /* 65536 levels */
		{0, 140, 0, false},   /* step 0 */
		{0, 140, -10, false}, /* negative step */
		{0, 1000000, 65535, true},
		{0, 1000000, 65536, false}, /* step wider than 16 bits */
		{0, 5, 10, false},	    /* no level: (5 - 0) / 10 == 0 */
		{140, 140, 1, false},	    /* upper == lower */
		{140, 0, 1, false},	    /* upper < lower */
		{INT32_MIN, INT32_MIN + 1, 1, true},
		{(int64_t)INT32_MIN - 1, 0, 65535, false},
		{0, (int64_t)INT32_MAX + 1, 65535, false},
	};
	char long_unit[HC_HIST_UNIT_MAX + 2];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct hc_hist *h;

		errno = 0;
		h = hc_hist__new_lquantize("x", t[i].lower, t[i].upper, t[i].step);
		if (t[i].ok) {
			assert_non_null(h);
		} else {
			assert_null(h);
			assert_int_equal(errno, EINVAL);
		}
		hc_hist__free(h);
	}
	memset(long_unit, 'u', sizeof(long_unit) - 1);
	long_unit[sizeof(long_unit) - 1] = '\0';
	assert_null(hc_hist__new_quantize(NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(hc_hist__new_quantize(""));
	assert_int_equal(errno, EINVAL);
	assert_null(hc_hist__new_quantize(long_unit));
	assert_int_equal(errno, EINVAL);
	assert_null(hc_hist__new_lquantize(long_unit, 0, 10, 1));
	assert_null(hc_hist__new_quantize("\xffs"));
	assert_int_equal(errno, EINVAL);
	hc_hist__free(NULL);
}

/* ---- add, merge ---- */

static void test_add_merge(void **state)
{
	struct hc_hist *a = hc_hist__new_lquantize("prio", 0, 140, 10);
	struct hc_hist *b = hc_hist__new_lquantize("prio", 0, 140, 10);
	struct hc_hist *c = hc_hist__new_lquantize("prio", 0, 140, 20);
	struct hc_hist *d = hc_hist__new_lquantize("nice", 0, 140, 10);
	struct hc_hist *q = hc_hist__new_quantize("prio");
	char long_key[HC_HIST_KEY_MAX + 2];
	const uint64_t *cnt;

	(void)state;
	assert_true(a && b && c && d && q);
	assert_int_equal(hc_hist__add(a, "ksh", 120, 3), 0);
	assert_int_equal(hc_hist__add(a, "ksh", 129, 1), 0);
	assert_int_equal(hc_hist__add(a, "ksh", 200, 2), 0);
	assert_int_equal(hc_hist__add(a, "make", 100, 0), 0); /* count 0: creates nothing */
	assert_int_equal(hc_hist__series_count(a), 1);
	assert_null(hc_hist__counts(a, "make"));
	cnt = hc_hist__counts(a, "ksh");
	assert_non_null(cnt);
	assert_int_equal(cnt[13], 4);
	assert_int_equal(cnt[15], 2);

	/* merge adds series by key */
	assert_int_equal(hc_hist__add(b, "ksh", 120, 10), 0);
	assert_int_equal(hc_hist__add(b, "cc1", -5, 7), 0);
	assert_int_equal(hc_hist__merge(a, b), 0);
	assert_int_equal(hc_hist__series_count(a), 2);
	assert_int_equal(hc_hist__counts(a, "ksh")[13], 14);
	assert_int_equal(hc_hist__counts(a, "cc1")[0], 7);
	assert_false(hc_hist__equal(a, b));

	/* different shapes do not merge */
	assert_int_equal(hc_hist__merge(a, c), -EINVAL);
	assert_int_equal(hc_hist__merge(a, d), -EINVAL);
	assert_int_equal(hc_hist__merge(a, q), -EINVAL);
	assert_int_equal(hc_hist__merge(q, a), -EINVAL);

	/* counts saturate at INT64_MAX (the JSON integer range) */
	assert_int_equal(hc_hist__add(q, "big", 5, HC_HIST_COUNT_MAX - 1), 0);
	assert_int_equal(hc_hist__add(q, "big", 5, 10), 0);
	assert_int_equal(hc_hist__add(q, "big", 6, UINT64_MAX), 0);
	assert_int_equal(hc_hist__counts(q, "big")[QZ + 3], HC_HIST_COUNT_MAX);

	/* invalid UTF-8 in a key is repaired, so JSON can carry it */
	assert_int_equal(hc_hist__add(q,
				      "a\xff"
				      "b",
				      1, 1),
			 0);
	assert_non_null(hc_hist__counts(q, "a\xEF\xBF\xBD"
					   "b"));
	memset(long_key, 'k', sizeof(long_key) - 1);
	long_key[sizeof(long_key) - 1] = '\0';
	assert_int_equal(hc_hist__add(q, long_key, 1, 1), -EINVAL);
	long_key[HC_HIST_KEY_MAX] = '\0';
	assert_int_equal(hc_hist__add(q, long_key, 1, 1), 0);
	assert_int_equal(hc_hist__add(q, NULL, 1, 1), -EINVAL);

	hc_hist__free(a);
	hc_hist__free(b);
	hc_hist__free(c);
	hc_hist__free(d);
	hc_hist__free(q);
}

/* Many keys: the hash table grows and finds them all; the series bound holds. */
static void test_many_series(void **state)
{
	struct hc_hist *h = hc_hist__new_lquantize("tasks", 0, 1, 1); /* 3 buckets: small */
	char key[32];
	int i;

	(void)state;
	assert_non_null(h);
	for (i = 0; i < HC_HIST_MAX_SERIES; i++) {
		snprintf(key, sizeof(key), "cpu %d", i);
		assert_int_equal(hc_hist__add(h, key, i, 1), 0);
	}
	assert_int_equal(hc_hist__series_count(h), HC_HIST_MAX_SERIES);
	assert_int_equal(hc_hist__add(h, "one too many", 1, 1), -E2BIG);
	assert_int_equal(hc_hist__add(h, "cpu 77", 1, 1), 0); /* existing keys still count */
	for (i = 0; i < HC_HIST_MAX_SERIES; i += 997) {
		snprintf(key, sizeof(key), "cpu %d", i);
		assert_non_null(hc_hist__counts(h, key));
	}
	hc_hist__free(h);
}

/* ---- JSON ---- */

static char *dump(const json_t *j)
{
	return json_dumps(j, JSON_COMPACT);
}

static void test_json_shape(void **state)
{
	struct hc_hist *l = hc_hist__new_lquantize("tasks", 0, 3, 1);
	struct hc_hist *q = hc_hist__new_quantize("us");
	json_t *j;
	char *s;

	(void)state;
	assert_true(l && q);
	/* keys order digit runs numerically */
	assert_int_equal(hc_hist__add(l, "cpu 10", 1, 2), 0);
	assert_int_equal(hc_hist__add(l, "cpu 2", 7, 1), 0);
	assert_int_equal(hc_hist__add(l, "cpu 2", -1, 1), 0);
	j = hc_hist__to_json(l);
	assert_non_null(j);
	s = dump(j);
	assert_string_equal(
		s, "{\"type\":\"lquantize\",\"unit\":\"tasks\",\"lower\":0,\"upper\":3,\"step\":1,"
		   "\"series\":["
		   "{\"key\":\"cpu 2\",\"buckets\":[{\"min\":null,\"max\":-1,\"count\":1},"
		   "{\"min\":0,\"max\":0,\"count\":0},{\"min\":1,\"max\":1,\"count\":0},"
		   "{\"min\":2,\"max\":2,\"count\":0},{\"min\":3,\"max\":null,\"count\":1}]},"
		   "{\"key\":\"cpu 10\",\"buckets\":[{\"min\":null,\"max\":-1,\"count\":0},"
		   "{\"min\":0,\"max\":0,\"count\":0},{\"min\":1,\"max\":1,\"count\":2},"
		   "{\"min\":2,\"max\":2,\"count\":0},{\"min\":3,\"max\":null,\"count\":0}]}]}");
	free(s);
	json_decref(j);

	/* quantize: each series lists its lowest..highest non-empty bucket; lower/upper span all */
	j = hc_hist__to_json(q);
	s = dump(j);
	assert_string_equal(s, "{\"type\":\"quantize\",\"unit\":\"us\",\"lower\":null,"
			       "\"upper\":null,\"series\":[]}");
	free(s);
	json_decref(j);
	assert_int_equal(hc_hist__add(q, "sshd", 5, 1), 0);
	assert_int_equal(hc_hist__add(q, "sshd", 17, 2), 0);
	assert_int_equal(hc_hist__add(q, "bash", -1, 1), 0);
	assert_int_equal(hc_hist__add(q, "bash", 0, 4), 0);
	j = hc_hist__to_json(q);
	s = dump(j);
	assert_string_equal(
		s, "{\"type\":\"quantize\",\"unit\":\"us\",\"lower\":-1,\"upper\":31,\"series\":["
		   "{\"key\":\"bash\",\"buckets\":[{\"min\":-1,\"max\":-1,\"count\":1},"
		   "{\"min\":0,\"max\":0,\"count\":4}]},"
		   "{\"key\":\"sshd\",\"buckets\":[{\"min\":4,\"max\":7,\"count\":1},"
		   "{\"min\":8,\"max\":15,\"count\":0},{\"min\":16,\"max\":31,\"count\":2}]}]}");
	free(s);
	json_decref(j);
	hc_hist__free(l);
	hc_hist__free(q);
}

/* to_json -> text -> parse -> from_json gives an equal histogram. */
static void round_trip(const struct hc_hist *h)
{
	char why[256] = "";
	json_t *j = hc_hist__to_json(h), *back;
	struct hc_hist *r;
	char *s;

	assert_non_null(j);
	s = dump(j);
	assert_non_null(s);
	back = json_loads(s, 0, NULL);
	assert_non_null(back);
	r = hc_hist__from_json(back, why, sizeof(why));
	if (!r)
		fprintf(stderr, "from_json refused: %s\n", why);
	assert_non_null(r);
	assert_true(hc_hist__equal(h, r));
	assert_true(hc_hist__equal(r, h));
	hc_hist__free(r);
	json_decref(back);
	json_decref(j);
	free(s);
}

static void test_json_round_trip(void **state)
{
	struct hc_hist *q = hc_hist__new_quantize("us");
	struct hc_hist *l = hc_hist__new_lquantize("prio", 0, 140, 10);
	struct hc_hist *odd = hc_hist__new_lquantize("x", INT32_MIN, INT32_MIN + 65535, 1);
	struct hc_hist *nd = hc_hist__new_lquantize("x", -10, 10, 3);
	char key[32];
	int i;

	(void)state;
	assert_true(q && l && odd && nd);
	round_trip(q);
	round_trip(l);
	assert_int_equal(hc_hist__add(q, "min", INT64_MIN, 1), 0);
	assert_int_equal(hc_hist__add(q, "max", INT64_MAX, HC_HIST_COUNT_MAX), 0);
	assert_int_equal(hc_hist__add(q, "caf\xc3\xa9 \"quoted\" \\ \x01", 3, 1), 0);
	assert_int_equal(hc_hist__add(odd, "edge", INT64_MIN, 1), 0);
	assert_int_equal(hc_hist__add(odd, "edge", INT64_MAX, 1), 0);
	assert_int_equal(hc_hist__add(nd, "nd", 8, 1), 0);
	for (i = 0; i < 3000; i++) {
		snprintf(key, sizeof(key), "proc-%d", (int)(rng() % 50));
		assert_int_equal(hc_hist__add(q, key, rng_value(), 1 + rng() % 1000), 0);
		assert_int_equal(hc_hist__add(l, key, (int64_t)(rng() % 160) - 10, 1), 0);
		assert_int_equal(hc_hist__add(nd, key, (int64_t)(rng() % 30) - 15, 1), 0);
	}
	round_trip(q);
	round_trip(l);
	round_trip(odd);
	round_trip(nd);
	hc_hist__free(q);
	hc_hist__free(l);
	hc_hist__free(odd);
	hc_hist__free(nd);
}

static void test_json_refuses(void **state)
{
#define Q "{\"type\":\"quantize\",\"unit\":\"us\",\"lower\":null,\"upper\":null,"
#define L "{\"type\":\"lquantize\",\"unit\":\"prio\",\"lower\":0,\"upper\":140,\"step\":10,"
#define S1(buckets) "\"series\":[{\"key\":\"k\",\"buckets\":[" buckets "]}]}"
	static const struct {
		const char *json;
		const char *why;
	} t[] = {
		{"[]", "not an object"},
		{"{\"unit\":\"us\",\"series\":[]}", "type"},
		{"{\"type\":\"llquantize\",\"unit\":\"us\",\"series\":[]}", "type"},
		{"{\"type\":\"quantize\",\"series\":[]}", "unit"},
		{"{\"type\":\"quantize\",\"unit\":\"\",\"series\":[]}", "unit"},
		{"{\"type\":\"quantize\",\"unit\":\"0123456789abcdef0123456789abcdef\","
		 "\"series\":[]}",
		 "unit"},
		{"{\"type\":\"quantize\",\"unit\":7,\"series\":[]}", "unit"},
		{"{\"type\":\"quantize\",\"unit\":\"u\\u0000s\",\"series\":[]}", "unit"},
		{"{\"type\":\"quantize\",\"unit\":\"us\",\"lower\":5,\"upper\":1,\"series\":[]}",
		 "lower <= upper"},
		{"{\"type\":\"quantize\",\"unit\":\"us\",\"lower\":1.5,\"upper\":2,\"series\":[]}",
		 "lower"},
		{"{\"type\":\"quantize\",\"unit\":\"us\",\"lower\":1,\"series\":[]}", "lower"},
		{"{\"type\":\"lquantize\",\"unit\":\"prio\",\"lower\":0,\"upper\":140,"
		 "\"series\":[]}",
		 "step"},
		{"{\"type\":\"lquantize\",\"unit\":\"prio\",\"lower\":0,\"upper\":140,\"step\":0,"
		 "\"series\":[]}",
		 "step in 1..65535"},
		{"{\"type\":\"lquantize\",\"unit\":\"prio\",\"lower\":140,\"upper\":0,\"step\":1,"
		 "\"series\":[]}",
		 "lower < upper"},
		{"{\"type\":\"lquantize\",\"unit\":\"prio\",\"lower\":0,\"upper\":1000000,"
		 "\"step\":1,\"series\":[]}",
		 "levels"},
		{"{\"type\":\"lquantize\",\"unit\":\"prio\",\"lower\":0,\"upper\":5,\"step\":10,"
		 "\"series\":[]}",
		 "levels"},
		{"{\"type\":\"lquantize\",\"unit\":\"prio\",\"lower\":-9999999999,\"upper\":0,"
		 "\"step\":65535,\"series\":[]}",
		 "32-bit"},
		{Q "\"series\":{}}", "series: not an array"},
		{Q "\"series\":[7]}", "series[0]: not an object"},
		{Q "\"series\":[{\"buckets\":[]}]}", "series[0].key"},
		{Q "\"series\":[{\"key\":3,\"buckets\":[]}]}", "series[0].key"},
		{Q "\"series\":[{\"key\":\"a\\u0000b\",\"buckets\":[]}]}", "series[0].key"},
		{Q "\"series\":[{\"key\":\"k\",\"buckets\":[]},{\"key\":\"k\",\"buckets\":[]}]}",
		 "series[1].key: duplicate"},
		{Q "\"series\":[{\"key\":\"k\"}]}", "series[0].buckets"},
		{Q "\"series\":[{\"key\":\"k\",\"buckets\":{}}]}", "series[0].buckets"},
		{Q S1("7"), "buckets[0]: not an object"},
		{Q S1("{\"min\":5,\"max\":9,\"count\":1}"), "not the bounds of a quantize bucket"},
		{Q S1("{\"min\":8,\"max\":15}"), "count"},
		{Q S1("{\"min\":9,\"max\":8,\"count\":1}"), "not the bounds"},
		{Q S1("{\"min\":null,\"max\":0,\"count\":1}"), "not the bounds"},
		{Q S1("{\"min\":null,\"max\":null,\"count\":1}"), "not the bounds"},
		{Q S1("{\"min\":\"8\",\"max\":15,\"count\":1}"), "not the bounds"},
		{Q S1("{\"min\":8.0,\"max\":15,\"count\":1}"), "not the bounds"},
		{Q S1("{\"max\":15,\"count\":1}"), "not the bounds"},
		{Q S1("{\"min\":8,\"max\":15,\"count\":1},{\"min\":4,\"max\":7,\"count\":1}"),
		 "buckets[1]: buckets not in strictly ascending order"},
		{Q S1("{\"min\":8,\"max\":15,\"count\":1},{\"min\":8,\"max\":15,\"count\":1}"),
		 "ascending"},
		{Q S1("{\"min\":8,\"max\":15,\"count\":-1}"), "count: not a non-negative integer"},
		{Q S1("{\"min\":8,\"max\":15,\"count\":1.5}"), "count"},
		{Q S1("{\"min\":8,\"max\":15,\"count\":\"1\"}"), "count"},
		{Q S1("{\"min\":8,\"max\":15,\"count\":null}"), "count"},
		{L S1("{\"min\":0,\"max\":10,\"count\":1}"), "lquantize bucket"},
		{L S1("{\"min\":-1,\"max\":null,\"count\":1}"), "lquantize bucket"},
		{L S1("{\"min\":null,\"max\":0,\"count\":1}"), "lquantize bucket"},
		{L S1("{\"min\":140,\"max\":null,\"count\":1}"
		      ",{\"min\":0,\"max\":9,\"count\":1}"),
		 "ascending"},
		{L S1("{\"min\":140,\"max\":149,\"count\":1}"), "lquantize bucket"},
	};
	char why[160];
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		json_error_t jerr;
		json_t *j = json_loads(t[i].json, JSON_ALLOW_NUL, &jerr);
		struct hc_hist *h;

		if (!j)
			fprintf(stderr, "bad test JSON %s: %s\n", t[i].json, jerr.text);
		assert_non_null(j);
		memset(why, 'x', sizeof(why));
		errno = 0;
		h = hc_hist__from_json(j, why, sizeof(why));
		if (h)
			fprintf(stderr, "accepted: %s\n", t[i].json);
		assert_null(h);
		assert_int_equal(errno, EINVAL);
		assert_non_null(memchr(why, '\0', sizeof(why)));
		if (!strstr(why, t[i].why))
			fprintf(stderr, "reason \"%s\" lacks \"%s\"\n", why, t[i].why);
		assert_non_null(strstr(why, t[i].why));
		/* without a buffer for the reason it still refuses */
		errno = 0;
		assert_null(hc_hist__from_json(j, NULL, 0));
		assert_int_equal(errno, EINVAL);
		json_decref(j);
	}
	assert_null(hc_hist__from_json(NULL, why, sizeof(why)));
	assert_int_equal(errno, EINVAL);
#undef Q
#undef L
#undef S1
}

/* A hostile file cannot make us allocate without bound: series and cells are capped. */
static void test_json_bounds(void **state)
{
	json_t *j = json_pack("{s:s,s:s,s:i,s:i,s:i}", "type", "lquantize", "unit", "x", "lower", 0,
			      "upper", 65535, "step", 1);
	json_t *series = json_array();
	char why[160], key[32];
	struct hc_hist *h;
	int i;

	(void)state;
	assert_true(j && series);
	/* 65537 buckets per series: 128 series is 8.4M cells, past HC_HIST_MAX_CELLS */
	for (i = 0; i < 128; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(json_array_append_new(
					 series, json_pack("{s:s,s:[]}", "key", key, "buckets")),
				 0);
	}
	assert_int_equal(json_object_set_new(j, "series", series), 0);
	h = hc_hist__from_json(j, why, sizeof(why));
	assert_null(h);
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(why, "series[127]"));
	/* one fewer fits */
	assert_int_equal(json_array_remove(series, 127), 0);
	h = hc_hist__from_json(j, why, sizeof(why));
	assert_non_null(h);
	assert_int_equal(hc_hist__series_count(h), 127);
	hc_hist__free(h);
	json_decref(j);
}

/* ---- text ---- */

/* Adds `count` observations spread over the inclusive range [lo, hi], one value per count. */
static void add_spread(struct hc_hist *h, const char *key, int64_t lo, int64_t hi, int count)
{
	int i;

	for (i = 0; i < count; i++)
		assert_int_equal(hc_hist__add(h, key, lo + (hi - lo) * i / count, 1), 0);
}

/* A quantize series given as (power of two, count) pairs. */
static void add_pow2(struct hc_hist *h, const char *key, const int64_t (*rows)[2], size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		add_spread(h, key, rows[i][0], 2 * rows[i][0] - 1, (int)rows[i][1]);
}

/* Oracle Linux DTrace Guide, "Using the quantize Function": wrquantize.d's sample output. */
static void test_print_wrquantize(void **state)
{
	static const int64_t xorg[][2] = {{4096, 4},  {8192, 8},  {16384, 7},
					  {32768, 2}, {65536, 1}, {2097152, 2}};
	static const int64_t bash[][2] = {{16384, 4}, {131072, 1}};
	static const int64_t firefox[][2] = {{4096, 22},  {8192, 90},  {16384, 107}, {32768, 72},
					     {65536, 28}, {131072, 3}, {524288, 1},  {1048576, 1}};
	static const int64_t term[][2] = {{8192, 5}, {16384, 5}, {32768, 4}, {65536, 1}};
	struct hc_hist *h = hc_hist__new_quantize("ns");
	char *want, *got, *block;
	int err;

	(void)state;
	assert_non_null(h);
	add_pow2(h, "bash", bash, ARRAY_SIZE(bash));
	add_pow2(h, "gnome-terminal", term, ARRAY_SIZE(term));
	add_pow2(h, "Xorg", xorg, ARRAY_SIZE(xorg));
	add_pow2(h, "firefox", firefox, ARRAY_SIZE(firefox));
	expect_golden(h, "hist-wrquantize.txt");

	/* one key: exactly that key's block of the golden */
	want = slurp("hist-wrquantize.txt");
	assert_non_null(want);
	block = strstr(want, "  bash ");
	assert_non_null(block);
	*strstr(block, "\n\n") = '\0';
	got = render(h, "bash", &err);
	assert_int_equal(err, 0);
	assert_int_equal(strlen(got), strlen(block) + 2);
	assert_memory_equal(got, block, strlen(block));
	free(got);
	free(want);

	got = render(h, "no such process", &err);
	assert_int_equal(err, -ENOENT);
	assert_string_equal(got, "");
	free(got);
	hc_hist__free(h);
}

/* Oracle Solaris Dynamic Tracing Guide, profile provider, profpri.d: lquantize(pri, 0, 100, 10). */
static void test_print_profpri(void **state)
{
	static const int spin[] = {7443, 2235, 1679, 1119, 560, 554};
	struct hc_hist *idle = hc_hist__new_lquantize("prio", 0, 100, 10);
	struct hc_hist *h = hc_hist__new_lquantize("prio", 0, 100, 10);
	size_t i;

	(void)state;
	assert_true(idle && h);
	/* the shell typing: 14 samples at priority 50..59; the guide's text, verbatim */
	add_spread(idle, "ksh", 50, 59, 14);
	expect_golden(idle, "hist-profpri-idle.txt");

	/* the spinning shell: the guide's counts; bars as libdtrace rounds them (see the file) */
	for (i = 0; i < ARRAY_SIZE(spin); i++)
		add_spread(h, "ksh", 10 * (int64_t)i, 10 * (int64_t)i + 9, spin[i]);
	expect_golden(h, "hist-profpri-spin.txt");
	hc_hist__free(idle);
	hc_hist__free(h);
}

/* Oracle Linux DTrace Guide, "Using the lquantize Function": wrlquantize.d, gnome-session. */
static void test_print_wrlquantize(void **state)
{
	struct hc_hist *h = hc_hist__new_lquantize("fd", 0, 100, 1);

	(void)state;
	assert_non_null(h);
	assert_int_equal(hc_hist__add(h, "gnome-session", 26, 9), 0);
	expect_golden(h, "hist-wrlquantize.txt");
	hc_hist__free(h);
}

static void test_print_edges(void **state)
{
	struct hc_hist *q = hc_hist__new_quantize("us");
	struct hc_hist *l;
	json_t *j;
	char why[160], *got;
	int err;

	(void)state;
	assert_non_null(q);
	assert_int_equal(hc_hist__add(q, "mixed", -1, 1), 0);
	assert_int_equal(hc_hist__add(q, "mixed", 0, 1), 0);
	assert_int_equal(hc_hist__add(q, "mixed", 5, 1), 0);
	assert_int_equal(hc_hist__add(q, "mixed", 7, 1), 0);
	assert_int_equal(hc_hist__add(q, "min", INT64_MIN, 1), 0);
	assert_int_equal(hc_hist__add(q, "max", INT64_MAX, 1), 0);
	expect_golden(q, "hist-quantize-edges.txt");
	hc_hist__free(q);

	/* An empty series (only a saved file can hold one) prints the first three buckets, as
	 * DTrace does; the overflow bucket of a non-divisible range starts at 120. */
	j = json_loads("{\"type\":\"lquantize\",\"unit\":\"prio\",\"lower\":0,\"upper\":140,"
		       "\"step\":30,\"series\":[{\"key\":\"empty\",\"buckets\":[]}]}",
		       0, NULL);
	assert_non_null(j);
	l = hc_hist__from_json(j, why, sizeof(why));
	assert_non_null(l);
	json_decref(j);
	assert_int_equal(hc_hist__add(l, "edges", -1, 1), 0);
	assert_int_equal(hc_hist__add(l, "edges", 0, 1), 0);
	assert_int_equal(hc_hist__add(l, "edges", 119, 1), 0);
	assert_int_equal(hc_hist__add(l, "edges", 120, 1), 0);
	assert_int_equal(hc_hist__add(l, "edges", 139, 1), 0);
	assert_int_equal(hc_hist__add(l, "edges", INT64_MAX, 1), 0);
	expect_golden(l, "hist-lquantize-edges.txt");
	hc_hist__free(l);

	/* an empty quantize series: the buckets around zero */
	j = json_loads("{\"type\":\"quantize\",\"unit\":\"us\",\"lower\":null,\"upper\":null,"
		       "\"series\":[{\"key\":\"none\",\"buckets\":[]}]}",
		       0, NULL);
	q = hc_hist__from_json(j, why, sizeof(why));
	assert_non_null(q);
	json_decref(j);
	got = render(q, NULL, &err);
	assert_int_equal(err, 0);
	assert_string_equal(got,
			    "  none                                              \n"
			    "           value  ------------- Distribution ------------- count    \n"
			    "              -1 |                                         0        \n"
			    "               0 |                                         0        \n"
			    "               1 |                                         0        \n"
			    "\n");
	free(got);
	hc_hist__free(q);
}

/* Keys from a hostile file cannot send control sequences to the terminal. */
static void test_print_hostile_key(void **state)
{
	json_t *j = json_loads("{\"type\":\"quantize\",\"unit\":\"us\",\"lower\":1,\"upper\":1,"
			       "\"series\":[{\"key\":\"\\u001b[2Jx\\u009by\\u007f\",\"buckets\":"
			       "[{\"min\":1,\"max\":1,\"count\":1}]}]}",
			       0, NULL);
	struct hc_hist *h;
	char why[160], *got;
	int err;

	(void)state;
	assert_non_null(j);
	h = hc_hist__from_json(j, why, sizeof(why));
	assert_non_null(h);
	got = render(h, NULL, &err);
	assert_int_equal(err, 0);
	assert_memory_equal(got, "  ?[2Jx?y? ", 11);
	assert_null(strchr(got, '\x1b'));
	free(got);
	hc_hist__free(h);
	json_decref(j);
}

static void test_print_write_error(void **state)
{
	struct hc_hist *h = hc_hist__new_quantize("us");
	FILE *f = fopen("/dev/full", "w");

	(void)state;
	assert_non_null(h);
	if (!f) {
		hc_hist__free(h);
		hc_skip("cannot open /dev/full: %s", strerror(errno));
	}
	setvbuf(f, NULL, _IONBF, 0);
	assert_int_equal(hc_hist__add(h, "k", 1, 1), 0);
	assert_int_equal(hc_hist__print(h, NULL, f), -EIO);
	fclose(f);
	hc_hist__free(h);
}

int run_hist_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantize_buckets),  cmocka_unit_test(test_lquantize_buckets),
		cmocka_unit_test(test_lquantize_bounds),  cmocka_unit_test(test_params),
		cmocka_unit_test(test_add_merge),	  cmocka_unit_test(test_many_series),
		cmocka_unit_test(test_json_shape),	  cmocka_unit_test(test_json_round_trip),
		cmocka_unit_test(test_json_refuses),	  cmocka_unit_test(test_json_bounds),
		cmocka_unit_test(test_print_wrquantize),  cmocka_unit_test(test_print_profpri),
		cmocka_unit_test(test_print_wrlquantize), cmocka_unit_test(test_print_edges),
		cmocka_unit_test(test_print_hostile_key), cmocka_unit_test(test_print_write_error),
	};

	return cmocka_run_group_tests_name("hist", tests, NULL, NULL);
}
