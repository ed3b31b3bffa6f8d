// SPDX-License-Identifier: GPL-2.0-only
/*
 * Histograms with DTrace's quantize()/lquantize() semantics (profile/hist.h,
 * docs/histograms.md). The bucket rules follow the kernel side of DTrace
 * (dtrace_aggregate_quantize/_lquantize) and the compiler's parameter checks; the text follows
 * libdtrace's printer (dt_print_quantize/_lquantize/_quantline), including its bar rounding.
 *
 * Series live in an array (insertion order) indexed by an open-addressing hash of the key, so
 * hc_hist__add() stays O(1) with thousands of processes; encoders sort a copy of the order.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/why.h"
#include "base/hash.h"
#include "profile/hist.h"
#include "profile/profile_internal.h"

struct hc_hist_series {
	char *key; /* owned, valid UTF-8 */
	uint64_t hash;
	uint64_t *counts; /* owned, h->nbuckets of them */
};

struct hc_hist {
	enum hc_hist_type type;
	char *unit; /* owned */
	int64_t lower, upper, step;
	uint32_t levels; /* lquantize: (upper - lower) / step */
	size_t nbuckets;

	struct hc_hist_series *series; /* owned array, insertion order */
	size_t n_series, cap_series;
	uint32_t *slots; /* open addressing: series index + 1, 0 = empty; power of two */
	size_t n_slots;
};

/* ---- bucket arithmetic (docs/histograms.md, "Bucket rules") ---- */

/* floor(log2(v)) for v > 0. */
static unsigned int log2_floor(uint64_t v)
{
	return 63u - (unsigned int)__builtin_clzll(v);
}

size_t hc_hist__bucket_index(const struct hc_hist *h, int64_t value)
{
	if (h->type == HC_HIST_QUANTIZE) {
		uint64_t mag;
		unsigned int k;

		if (value == 0)
			return HC_QUANTIZE_ZERO;
		/* |INT64_MIN| does not fit an int64: take the magnitude as unsigned. */
		mag = value > 0 ? (uint64_t)value : (uint64_t)0 - (uint64_t)value;
		k = log2_floor(mag);
		if (k > 62)
			k = 62; /* 2^63 only as |INT64_MIN|: it shares the outermost bucket */
		return value > 0 ? HC_QUANTIZE_ZERO + 1 + k : HC_QUANTIZE_ZERO - 1 - k;
	}
	if (value < h->lower)
		return 0;
	/* Compare in unsigned 64 bits: value - lower cannot overflow that way. */
	if ((uint64_t)value - (uint64_t)h->lower >= (uint64_t)h->levels * (uint64_t)h->step)
		return (size_t)h->levels + 1;
	return 1 + (size_t)(((uint64_t)value - (uint64_t)h->lower) / (uint64_t)h->step);
}

int64_t hc_quantize__bucket_value(size_t idx)
{
	if (idx == HC_QUANTIZE_ZERO)
		return 0;
	if (idx > HC_QUANTIZE_ZERO)
		return (int64_t)1 << (idx - HC_QUANTIZE_ZERO - 1);
	return -((int64_t)1 << (HC_QUANTIZE_ZERO - 1 - idx));
}

void hc_hist__bucket_bounds(const struct hc_hist *h, size_t idx, int64_t *min, int64_t *max,
			    bool *has_min, bool *has_max)
{
	int64_t lo, hi;
	bool hmin = true, hmax = true;

	if (h->type == HC_HIST_QUANTIZE) {
		int64_t v = hc_quantize__bucket_value(idx);

		if (idx == HC_QUANTIZE_ZERO) {
			lo = hi = 0;
		} else if (idx > HC_QUANTIZE_ZERO) {
			lo = v;
			hi = idx == HC_QUANTIZE_NBUCKETS - 1 ? INT64_MAX : 2 * v - 1;
		} else {
			hi = v;
			lo = idx == 0 ? INT64_MIN : 2 * v + 1;
		}
	} else if (idx == 0) {
		hmin = false;
		lo = INT64_MIN;
		hi = h->lower - 1;
	} else if (idx == (size_t)h->levels + 1) {
		hmax = false;
		lo = h->lower + (int64_t)h->levels * h->step;
		hi = INT64_MAX;
	} else {
		lo = h->lower + (int64_t)(idx - 1) * h->step;
		hi = lo + h->step - 1;
	}
	if (min)
		*min = lo;
	if (max)
		*max = hi;
	if (has_min)
		*has_min = hmin;
	if (has_max)
		*has_max = hmax;
}

/* ---- construction ---- */

static bool utf8_valid(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i, l;

	for (i = 0; i < n; i += l)
		if (!(l = hc__utf8_seq_len(u + i, n - i)))
			return false;
	return true;
}

static struct hc_hist *hist_new(enum hc_hist_type type, const char *unit)
{
	struct hc_hist *h;
	size_t len = unit ? strlen(unit) : 0;

	if (len == 0 || len > HC_HIST_UNIT_MAX || !utf8_valid(unit)) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->type = type;
	h->unit = strdup(unit);
	if (!h->unit) {
		free(h);
		return NULL;
	}
	return h;
}

struct hc_hist *hc_hist__new_quantize(const char *unit)
{
	struct hc_hist *h = hist_new(HC_HIST_QUANTIZE, unit);

	if (h)
		h->nbuckets = HC_QUANTIZE_NBUCKETS;
	return h;
}

static int lquantize_check(int64_t lower, int64_t upper, int64_t step)
{
	if (lower < INT32_MIN || lower > INT32_MAX || upper < INT32_MIN || upper > INT32_MAX)
		return -EINVAL;
	if (upper <= lower || step < 1 || step > HC_LQUANTIZE_MAX_STEP)
		return -EINVAL;
	if ((upper - lower) / step < 1 || (upper - lower) / step > HC_LQUANTIZE_MAX_LEVELS)
		return -EINVAL;
	return 0;
}

struct hc_hist *hc_hist__new_lquantize(const char *unit, int64_t lower, int64_t upper, int64_t step)
{
	struct hc_hist *h;

	if (lquantize_check(lower, upper, step)) {
		errno = EINVAL;
		return NULL;
	}
	h = hist_new(HC_HIST_LQUANTIZE, unit);
	if (!h)
		return NULL;
	h->lower = lower;
	h->upper = upper;
	h->step = step;
	h->levels = (uint32_t)((upper - lower) / step);
	h->nbuckets = h->levels + 2u;
	return h;
}

void hc_hist__free(struct hc_hist *h)
{
	size_t i;

	if (!h)
		return;
	for (i = 0; i < h->n_series; i++) {
		free(h->series[i].key);
		free(h->series[i].counts);
	}
	free(h->series);
	free(h->slots);
	free(h->unit);
	free(h);
}

/* ---- the series table ---- */

static uint64_t key_hash(const char *key)
{
	return hc_hash_bytes(key, strlen(key));
}

static struct hc_hist_series *series_find(const struct hc_hist *h, const char *key, uint64_t hash)
{
	size_t mask = h->n_slots - 1, i;

	if (!h->n_slots)
		return NULL;
	for (i = hash & mask; h->slots[i]; i = (i + 1) & mask) {
		struct hc_hist_series *s = &h->series[h->slots[i] - 1];

		if (s->hash == hash && strcmp(s->key, key) == 0)
			return s;
	}
	return NULL;
}

static int slots_grow(struct hc_hist *h)
{
	size_t n = h->n_slots ? 2 * h->n_slots : 16, i;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < h->n_series; i++) {
		size_t j = h->series[i].hash & (n - 1);

		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = (uint32_t)i + 1;
	}
	free(h->slots);
	h->slots = slots;
	h->n_slots = n;
	return 0;
}

/* Takes ownership of key (a repaired, bounded copy); the series must not exist yet. */
static struct hc_hist_series *series_insert(struct hc_hist *h, char *key, uint64_t hash, int *err)
{
	struct hc_hist_series *s;
	size_t j;

	if (h->n_series >= HC_HIST_MAX_SERIES ||
	    (h->n_series + 1) * h->nbuckets > HC_HIST_MAX_CELLS) {
		*err = -E2BIG;
		goto err_key;
	}
	if (2 * (h->n_series + 1) > h->n_slots && slots_grow(h))
		goto err_nomem;
	if (h->n_series == h->cap_series) {
		size_t cap = h->cap_series ? 2 * h->cap_series : 8;
		struct hc_hist_series *tmp = realloc(h->series, cap * sizeof(*tmp));

		if (!tmp)
			goto err_nomem;
		h->series = tmp;
		h->cap_series = cap;
	}
	s = &h->series[h->n_series];
	s->counts = calloc(h->nbuckets, sizeof(*s->counts));
	if (!s->counts)
		goto err_nomem;
	s->key = key;
	s->hash = hash;
	for (j = hash & (h->n_slots - 1); h->slots[j]; j = (j + 1) & (h->n_slots - 1))
		;
	h->slots[j] = (uint32_t)++h->n_series;
	return s;

err_nomem:
	*err = -ENOMEM;
err_key:
	free(key);
	return NULL;
}

/* The series for key, created when missing. NULL with *err set on failure. */
static struct hc_hist_series *series_get(struct hc_hist *h, const char *key, int *err)
{
	struct hc_hist_series *s;
	size_t len;
	/* Keys are repaired to valid UTF-8 (they must survive JSON); no copy when already valid,
	 * which is the common case on the per-sample path. */
	char *fixed = hc__utf8_sanitize(key, &len);
	uint64_t hash;

	if (!fixed) {
		*err = -ENOMEM;
		return NULL;
	}
	if (len > HC_HIST_KEY_MAX) {
		if (fixed != key)
			free(fixed);
		*err = -EINVAL;
		return NULL;
	}
	hash = key_hash(fixed);
	s = series_find(h, fixed, hash);
	if (s) {
		if (fixed != key)
			free(fixed);
		return s;
	}
	if (fixed == key) {
		/* series_insert() takes ownership of a malloc'ed key. */
		fixed = strdup(key);
		if (!fixed) {
			*err = -ENOMEM;
			return NULL;
		}
	}
	return series_insert(h, fixed, hash, err);
}

static void count_add(uint64_t *c, uint64_t n)
{
	*c = n > HC_HIST_COUNT_MAX - *c ? HC_HIST_COUNT_MAX : *c + n;
}

int hc_hist__add(struct hc_hist *h, const char *key, int64_t value, uint64_t count)
{
	struct hc_hist_series *s;
	int err = 0;

	if (!key)
		return -EINVAL;
	if (!count)
		return 0;
	s = series_get(h, key, &err);
	if (!s)
		return err;
	count_add(&s->counts[hc_hist__bucket_index(h, value)], count);
	return 0;
}

static bool same_shape(const struct hc_hist *a, const struct hc_hist *b)
{
	return a->type == b->type && strcmp(a->unit, b->unit) == 0 && a->lower == b->lower &&
	       a->upper == b->upper && a->step == b->step;
}

int hc_hist__merge(struct hc_hist *dst, const struct hc_hist *src)
{
	size_t i, b;

	if (!same_shape(dst, src))
		return -EINVAL;
	for (i = 0; i < src->n_series; i++) {
		const struct hc_hist_series *from = &src->series[i];
		struct hc_hist_series *to;
		int err = 0;

		to = series_get(dst, from->key, &err);
		if (!to)
			return err;
		for (b = 0; b < dst->nbuckets; b++)
			count_add(&to->counts[b], from->counts[b]);
	}
	return 0;
}

/* ---- accessors ---- */

enum hc_hist_type hc_hist__type(const struct hc_hist *h)
{
	return h->type;
}

const char *hc_hist__unit(const struct hc_hist *h)
{
	return h->unit;
}

int64_t hc_hist__lower(const struct hc_hist *h)
{
	return h->lower;
}

int64_t hc_hist__upper(const struct hc_hist *h)
{
	return h->upper;
}

int64_t hc_hist__step(const struct hc_hist *h)
{
	return h->step;
}

size_t hc_hist__nbuckets(const struct hc_hist *h)
{
	return h->nbuckets;
}

size_t hc_hist__series_count(const struct hc_hist *h)
{
	return h->n_series;
}

const uint64_t *hc_hist__counts(const struct hc_hist *h, const char *key)
{
	const struct hc_hist_series *s = series_find(h, key, key_hash(key));

	return s ? s->counts : NULL;
}

bool hc_hist__equal(const struct hc_hist *a, const struct hc_hist *b)
{
	size_t i;

	if (!same_shape(a, b) || a->n_series != b->n_series)
		return false;
	for (i = 0; i < a->n_series; i++) {
		const struct hc_hist_series *s = &a->series[i];
		const struct hc_hist_series *t = series_find(b, s->key, s->hash);

		if (!t || memcmp(s->counts, t->counts, a->nbuckets * sizeof(*s->counts)) != 0)
			return false;
	}
	return true;
}

/* ---- key order: bytes, except that digit runs compare as numbers ("cpu 2" < "cpu 10") ---- */

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int key_cmp(const char *a, const char *b)
{
	const char *p = a, *q = b;

	while (*p && *q) {
		if (is_digit(*p) && is_digit(*q)) {
			size_t lp, lq;
			int c;

			while (*p == '0' && is_digit(p[1]))
				p++;
			while (*q == '0' && is_digit(q[1]))
				q++;
			for (lp = 0; is_digit(p[lp]); lp++)
				;
			for (lq = 0; is_digit(q[lq]); lq++)
				;
			if (lp != lq)
				return lp < lq ? -1 : 1;
			c = memcmp(p, q, lp);
			if (c)
				return c;
			p += lp;
			q += lq;
			continue;
		}
		if (*p != *q)
			return (unsigned char)*p < (unsigned char)*q ? -1 : 1;
		p++;
		q++;
	}
	if (*p || *q)
		return *p ? 1 : -1;
	return strcmp(a, b); /* "cpu 01" vs "cpu 1": still a total order */
}

static int series_ptr_cmp(const void *a, const void *b)
{
	const struct hc_hist_series *const *x = a, *const *y = b;

	return key_cmp((*x)->key, (*y)->key);
}

/* The series in key order (a malloc'ed array of borrowed pointers). NULL on ENOMEM; an empty
 * histogram gives a 1-element allocation. */
static const struct hc_hist_series **sorted_series(const struct hc_hist *h)
{
	const struct hc_hist_series **v = malloc((h->n_series + 1) * sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < h->n_series; i++)
		v[i] = &h->series[i];
	qsort(v, h->n_series, sizeof(*v), series_ptr_cmp);
	return v;
}

/* First and last non-empty bucket; false when the series is all zero. */
static bool nonzero_span(const struct hc_hist *h, const uint64_t *c, size_t *first, size_t *last)
{
	size_t i = 0, j = h->nbuckets;

	while (i < h->nbuckets && !c[i])
		i++;
	if (i == h->nbuckets)
		return false;
	while (!c[j - 1])
		j--;
	*first = i;
	*last = j - 1;
	return true;
}

/* ---- JSON ---- */

static int jset(json_t *obj, const char *key, json_t *val)
{
	return val ? json_object_set_new(obj, key, val) : -1;
}

static json_t *bound_json(int64_t v, bool present)
{
	return present ? json_integer((json_int_t)v) : json_null();
}

static json_t *bucket_to_json(const struct hc_hist *h, size_t idx, uint64_t count)
{
	json_t *b = json_object();
	int64_t min, max;
	bool has_min, has_max;

	hc_hist__bucket_bounds(h, idx, &min, &max, &has_min, &has_max);
	if (!b || jset(b, "min", bound_json(min, has_min)) ||
	    jset(b, "max", bound_json(max, has_max)) ||
	    jset(b, "count", json_integer((json_int_t)count))) {
		json_decref(b);
		return NULL;
	}
	return b;
}

static json_t *series_to_json(const struct hc_hist *h, const struct hc_hist_series *s)
{
	json_t *obj = json_object(), *buckets = json_array();
	size_t first = 0, last = h->nbuckets - 1, i;

	if (h->type == HC_HIST_QUANTIZE && !nonzero_span(h, s->counts, &first, &last)) {
		first = 1; /* an all-zero quantize series lists no bucket */
		last = 0;
	}
	for (i = first; buckets && i <= last; i++)
		if (json_array_append_new(buckets, bucket_to_json(h, i, s->counts[i])))
			goto err;
	/* keys are valid UTF-8 by construction; set_new steals (and on failure drops) values */
	if (!obj || jset(obj, "key", json_string_nocheck(s->key)) ||
	    jset(obj, "buckets", json_incref(buckets)))
		goto err;
	json_decref(buckets);
	return obj;

err:
	json_decref(buckets);
	json_decref(obj);
	return NULL;
}

json_t *hc_hist__to_json(const struct hc_hist *h)
{
	const struct hc_hist_series **sorted = sorted_series(h);
	json_t *obj = json_object(), *series = json_array();
	bool any = false;
	int64_t lower = 0, upper = 0;
	size_t i;

	if (!sorted || !obj || !series)
		goto err;
	if (h->type == HC_HIST_QUANTIZE) {
		/* the span of buckets listed in any series: a common axis for consumers */
		for (i = 0; i < h->n_series; i++) {
			size_t first, last;
			int64_t lo, hi;

			if (!nonzero_span(h, sorted[i]->counts, &first, &last))
				continue;
			hc_hist__bucket_bounds(h, first, &lo, NULL, NULL, NULL);
			hc_hist__bucket_bounds(h, last, NULL, &hi, NULL, NULL);
			lower = any && lower < lo ? lower : lo;
			upper = any && upper > hi ? upper : hi;
			any = true;
		}
	} else {
		lower = h->lower;
		upper = h->upper;
		any = true;
	}
	if (jset(obj, "type",
		 json_string(h->type == HC_HIST_QUANTIZE ? "quantize" : "lquantize")) ||
	    jset(obj, "unit", json_string(h->unit)) || jset(obj, "lower", bound_json(lower, any)) ||
	    jset(obj, "upper", bound_json(upper, any)))
		goto err;
	if (h->type == HC_HIST_LQUANTIZE && jset(obj, "step", json_integer(h->step)))
		goto err;
	for (i = 0; i < h->n_series; i++)
		if (json_array_append_new(series, series_to_json(h, sorted[i])))
			goto err;
	if (jset(obj, "series", series))
		goto err_obj;
	free(sorted);
	return obj;

err:
	json_decref(series);
err_obj:
	json_decref(obj);
	free(sorted);
	errno = ENOMEM;
	return NULL;
}

/* ---- JSON reader ---- */

/* An integer member; false when absent or not an integer. */
static bool get_int(const json_t *obj, const char *name, int64_t *v)
{
	const json_t *j = json_object_get(obj, name);

	if (!json_is_integer(j))
		return false;
	*v = json_integer_value(j);
	return true;
}

/* A string member without NUL bytes inside; NULL otherwise. */
static const char *get_str(const json_t *obj, const char *name)
{
	const json_t *j = json_object_get(obj, name);

	if (!json_is_string(j) || strlen(json_string_value(j)) != json_string_length(j))
		return NULL;
	return json_string_value(j);
}

/* Maps a bucket's {min, max} to its index; -1 when it is not a bucket of h. */
static long bucket_from_bounds(const struct hc_hist *h, const json_t *jmin, const json_t *jmax)
{
	int64_t min = INT64_MIN, max = INT64_MAX, emin, emax;
	bool has_min = !json_is_null(jmin), has_max = !json_is_null(jmax), ehas_min, ehas_max;
	size_t idx;

	if ((has_min && !json_is_integer(jmin)) || (has_max && !json_is_integer(jmax)))
		return -1;
	if (has_min)
		min = json_integer_value(jmin);
	if (has_max)
		max = json_integer_value(jmax);
	if (!has_min && !has_max)
		return -1;
	if (h->type == HC_HIST_LQUANTIZE && !has_min)
		idx = 0;
	else if (h->type == HC_HIST_LQUANTIZE && !has_max)
		idx = h->levels + 1u;
	else
		idx = hc_hist__bucket_index(h, min);
	hc_hist__bucket_bounds(h, idx, &emin, &emax, &ehas_min, &ehas_max);
	if (has_min != ehas_min || has_max != ehas_max || (has_min && min != emin) ||
	    (has_max && max != emax))
		return -1;
	return (long)idx;
}

static int series_from_json(struct hc_hist *h, const json_t *js, size_t si, char *why,
			    size_t why_len)
{
	const char *key = get_str(js, "key");
	const json_t *buckets = json_object_get(js, "buckets"), *b;
	struct hc_hist_series *s;
	long prev = -1;
	size_t bi;
	char *copy;
	int err = 0;

	if (!json_is_object(js)) {
		hc_why_set(why, why_len, "series[%zu]: not an object", si);
		return -EINVAL;
	}
	if (!key || strlen(key) > HC_HIST_KEY_MAX) {
		hc_why_set(why, why_len, "series[%zu].key: not a string of at most %d bytes", si,
			   HC_HIST_KEY_MAX);
		return -EINVAL;
	}
	if (series_find(h, key, key_hash(key))) {
		hc_why_set(why, why_len, "series[%zu].key: duplicate key", si);
		return -EINVAL;
	}
	if (!json_is_array(buckets) || json_array_size(buckets) > h->nbuckets) {
		hc_why_set(why, why_len, "series[%zu].buckets: not an array of at most %zu buckets",
			   si, h->nbuckets);
		return -EINVAL;
	}
	copy = strdup(key); /* jansson strings are valid UTF-8 already */
	if (!copy)
		return -ENOMEM;
	s = series_insert(h, copy, key_hash(key), &err);
	if (!s) {
		if (err == -E2BIG)
			hc_why_set(why, why_len,
				   "series[%zu]: more than %d series or %u buckets in all", si,
				   HC_HIST_MAX_SERIES, HC_HIST_MAX_CELLS);
		return err == -E2BIG ? -EINVAL : err;
	}
	json_array_foreach (buckets, bi, b) {
		const json_t *jcount = json_object_get(b, "count");
		long idx;

		if (!json_is_object(b)) {
			hc_why_set(why, why_len, "series[%zu].buckets[%zu]: not an object", si, bi);
			return -EINVAL;
		}
		idx = bucket_from_bounds(h, json_object_get(b, "min"), json_object_get(b, "max"));
		if (idx < 0) {
			hc_why_set(why, why_len,
				   "series[%zu].buckets[%zu]: min/max are not the bounds of a %s "
				   "bucket",
				   si, bi, h->type == HC_HIST_QUANTIZE ? "quantize" : "lquantize");
			return -EINVAL;
		}
		if (idx <= prev) {
			hc_why_set(
				why, why_len,
				"series[%zu].buckets[%zu]: buckets not in strictly ascending order",
				si, bi);
			return -EINVAL;
		}
		if (!json_is_integer(jcount) || json_integer_value(jcount) < 0) {
			hc_why_set(why, why_len,
				   "series[%zu].buckets[%zu].count: not a non-negative integer", si,
				   bi);
			return -EINVAL;
		}
		s->counts[idx] = (uint64_t)json_integer_value(jcount);
		prev = idx;
	}
	return 0;
}

struct hc_hist *hc_hist__from_json(const json_t *j, char *why, size_t why_len)
{
	const json_t *series, *js;
	const char *type, *unit;
	struct hc_hist *h = NULL;
	int64_t lower, upper, step;
	size_t i;
	int err;

	if (why && why_len)
		why[0] = '\0';
	if (!json_is_object(j)) {
		hc_why_set(why, why_len, "histogram: not an object");
		goto err_inval;
	}
	type = get_str(j, "type");
	unit = get_str(j, "unit");
	if (!type || (strcmp(type, "quantize") != 0 && strcmp(type, "lquantize") != 0)) {
		hc_why_set(why, why_len, "type: not \"quantize\" or \"lquantize\"");
		goto err_inval;
	}
	if (!unit || !unit[0] || strlen(unit) > HC_HIST_UNIT_MAX) {
		hc_why_set(why, why_len, "unit: not a string of 1..%d bytes", HC_HIST_UNIT_MAX);
		goto err_inval;
	}
	if (strcmp(type, "lquantize") == 0) {
		if (!get_int(j, "lower", &lower) || !get_int(j, "upper", &upper) ||
		    !get_int(j, "step", &step)) {
			hc_why_set(why, why_len,
				   "lquantize: lower, upper and step must be integers");
			goto err_inval;
		}
		if (lquantize_check(lower, upper, step)) {
			hc_why_set(why, why_len,
				   "lquantize: need 32-bit lower < upper, step in 1..%d and 1..%d "
				   "levels",
				   HC_LQUANTIZE_MAX_STEP, HC_LQUANTIZE_MAX_LEVELS);
			goto err_inval;
		}
		h = hc_hist__new_lquantize(unit, lower, upper, step);
	} else {
		/* lower/upper are derived (the span listed); check only that they are sane */
		const json_t *jl = json_object_get(j, "lower"), *ju = json_object_get(j, "upper");

		/* absent reads as null */
		if (!((!jl || json_is_null(jl)) && (!ju || json_is_null(ju))) &&
		    !(json_is_integer(jl) && json_is_integer(ju) &&
		      json_integer_value(jl) <= json_integer_value(ju))) {
			hc_why_set(
				why, why_len,
				"quantize: lower and upper must both be null or integers, lower <= "
				"upper");
			goto err_inval;
		}
		h = hc_hist__new_quantize(unit);
	}
	if (!h)
		return NULL;

	series = json_object_get(j, "series");
	if (!json_is_array(series) || json_array_size(series) > HC_HIST_MAX_SERIES) {
		hc_why_set(why, why_len, "series: not an array of at most %d series",
			   HC_HIST_MAX_SERIES);
		goto err_inval;
	}
	json_array_foreach (series, i, js) {
		err = series_from_json(h, js, i, why, why_len);
		if (err) {
			hc_hist__free(h);
			errno = -err;
			return NULL;
		}
	}
	return h;

err_inval:
	hc_hist__free(h);
	errno = EINVAL;
	return NULL;
}

/* ---- text, as libdtrace prints it ---- */

/* The key as DTrace prints a string tuple member: two spaces, left-justified in 50 columns.
 * Control characters (C0, DEL, C1) from a hostile file become '?' so they cannot drive the
 * terminal. */
static void print_key(const char *key, FILE *out)
{
	const unsigned char *u = (const unsigned char *)key;
	size_t n = 0;

	fputs("  ", out);
	while (*u) {
		if (*u < 0x20 || *u == 0x7f) {
			fputc('?', out);
			u++;
		} else if (u[0] == 0xC2 && u[1] >= 0x80 && u[1] <= 0x9F) {
			fputc('?', out);
			u += 2;
		} else {
			fputc(*u++, out);
		}
		n++;
	}
	fprintf(out, "%*s\n", n < 50 ? (int)(50 - n) : 0, "");
}

static void print_series(const struct hc_hist *h, const struct hc_hist_series *s, FILE *out)
{
	static const char ats[] = "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@";
	const int len = 40;
	size_t first, last, i;
	long double total = 0;

	if (nonzero_span(h, s->counts, &first, &last)) {
		/* one empty row either side of the data, where there is a bucket */
		if (first > 0)
			first--;
		if (last < h->nbuckets - 1)
			last++;
	} else if (h->type == HC_HIST_QUANTIZE) {
		first = HC_QUANTIZE_ZERO - 1; /* no data: the buckets around 0 */
		last = HC_QUANTIZE_ZERO + 1;
	} else {
		first = 0;
		last = 2;
	}
	for (i = first; i <= last; i++)
		total += (long double)s->counts[i];

	print_key(s->key, out);
	fprintf(out, "%16s %41s %-9s\n", "value", "------------- Distribution -------------",
		"count");
	for (i = first; i <= last; i++) {
		int depth = 0;

		if (h->type == HC_HIST_QUANTIZE) {
			fprintf(out, "%16" PRId64 " ", hc_quantize__bucket_value(i));
		} else {
			char label[32];

			if (i == 0)
				snprintf(label, sizeof(label), "< %" PRId64, h->lower);
			else if (i == h->levels + 1u)
				snprintf(label, sizeof(label), ">= %" PRId64,
					 h->lower + (int64_t)h->levels * h->step);
			else
				snprintf(label, sizeof(label), "%" PRId64,
					 h->lower + (int64_t)(i - 1) * h->step);
			fprintf(out, "%16s ", label);
		}
		/* dt_print_quantline(): the share of 40 columns, rounded half up */
		if (total > 0)
			depth = (int)((long double)s->counts[i] * len / total + 0.5L);
		fprintf(out, "|%.*s%*s %-9" PRIu64 "\n", depth, ats, len - depth, "", s->counts[i]);
	}
	fputc('\n', out);
}

int hc_hist__print(const struct hc_hist *h, const char *key, FILE *out)
{
	const struct hc_hist_series **sorted;
	size_t i;

	if (key) {
		const struct hc_hist_series *s = series_find(h, key, key_hash(key));

		if (!s)
			return -ENOENT;
		print_series(h, s, out);
		return ferror(out) ? -EIO : 0;
	}
	sorted = sorted_series(h);
	if (!sorted)
		return -ENOMEM;
	for (i = 0; i < h->n_series; i++)
		print_series(h, sorted[i], out);
	free(sorted);
	return ferror(out) ? -EIO : 0;
}
