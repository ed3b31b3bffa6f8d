/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * profile/hist: histograms with DTrace's quantize() and lquantize() semantics
 * (docs/histograms.md states every rule; the comments below are the short form).
 *
 * One struct hc_hist is one aggregation (`@name[key] = quantize(v)` in D): a shape (type, unit,
 * and for lquantize lower/upper/step) shared by many series, each keyed by a string (a process
 * name, "cpu N") and holding one u64 count per bucket.
 *
 * Bucket indices (what hc_hist__bucket_index() returns):
 *  - quantize: HC_QUANTIZE_NBUCKETS (127) buckets, DTrace's layout. Index HC_QUANTIZE_ZERO (63)
 *    holds 0; 64 + k holds [2^k, 2^(k+1) - 1] (the last, 126, holds [2^62, INT64_MAX]);
 *    62 - k holds [-(2^(k+1) - 1), -2^k] (the first, 0, holds [INT64_MIN, -2^62]).
 *  - lquantize(lower, upper, step): levels = (upper - lower) / step (integer division, as
 *    DTrace's compiler computes it), levels + 2 buckets. Index 0 is the underflow bucket
 *    (value < lower); 1 + j holds [lower + j*step, lower + (j+1)*step - 1] for j < levels; the
 *    last, levels + 1, is the overflow bucket (value >= lower + levels*step, which is `upper`
 *    only when step divides upper - lower).
 *
 * Keys and the unit are copied. Keys that are not valid UTF-8 are stored with each bad byte
 * replaced by U+FFFD, so JSON can carry them and distinct stored keys stay distinct in JSON.
 * Counts saturate at HC_HIST_COUNT_MAX (INT64_MAX, the largest JSON integer jansson reads).
 * Nothing here prints except hc_hist__print(), which writes only to the FILE * it is given.
 */
#ifndef HOTCOLD_PROFILE_HIST_H
#define HOTCOLD_PROFILE_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

enum hc_hist_type {
	HC_HIST_QUANTIZE = 1,
	HC_HIST_LQUANTIZE,
};

/* DTrace's quantize layout: 63 negative, one zero, 63 positive power-of-two buckets. */
#define HC_QUANTIZE_NBUCKETS 127
#define HC_QUANTIZE_ZERO 63

/* lquantize parameters, as DTrace's compiler checks them (dt_cc.c): 32-bit bounds, 16-bit step
 * and level count. */
#define HC_LQUANTIZE_MAX_STEP 65535
#define HC_LQUANTIZE_MAX_LEVELS 65535

#define HC_HIST_COUNT_MAX ((uint64_t)INT64_MAX)
/* Bounds that keep a hostile saved profile (hc_hist__from_json) from exhausting memory; the
 * same bounds apply to hc_hist__add() so that whatever is written can be read back. */
#define HC_HIST_KEY_MAX 255	     /* bytes of a key, after UTF-8 repair */
#define HC_HIST_UNIT_MAX 31	     /* bytes of the unit string */
#define HC_HIST_MAX_SERIES 65536     /* series in one histogram */
#define HC_HIST_MAX_CELLS (1u << 23) /* series x buckets: 64 MiB of counts */

struct hc_hist;

/* Constructors: NULL + errno (EINVAL for bad parameters, ENOMEM). The unit (e.g. "us") must be
 * 1..HC_HIST_UNIT_MAX bytes of UTF-8. lquantize validates as DTrace does: INT32_MIN <= lower <
 * upper <= INT32_MAX, 1 <= step <= 65535, 1 <= (upper - lower) / step <= 65535. */
struct hc_hist *hc_hist__new_quantize(const char *unit);
struct hc_hist *hc_hist__new_lquantize(const char *unit, int64_t lower, int64_t upper,
				       int64_t step);
void hc_hist__free(struct hc_hist *h);

/*
 * Add `count` observations of `value` to the series `key` (created on first use; count 0 is a
 * no-op that creates nothing). 0, -EINVAL (key longer than HC_HIST_KEY_MAX after repair),
 * -E2BIG (HC_HIST_MAX_SERIES or HC_HIST_MAX_CELLS reached: the caller counts the loss), -ENOMEM.
 */
int hc_hist__add(struct hc_hist *h, const char *key, int64_t value, uint64_t count);
/* Add every series of src into dst. -EINVAL unless both have the same type, unit and
 * lquantize parameters; -E2BIG, -ENOMEM as for add (dst may then hold part of src). */
int hc_hist__merge(struct hc_hist *dst, const struct hc_hist *src);

/* ---- shape and contents (read-only) ---- */

enum hc_hist_type hc_hist__type(const struct hc_hist *h);
const char *hc_hist__unit(const struct hc_hist *h); /* borrowed, lives as long as h */
/* lquantize arguments (0 for quantize). */
int64_t hc_hist__lower(const struct hc_hist *h);
int64_t hc_hist__upper(const struct hc_hist *h);
int64_t hc_hist__step(const struct hc_hist *h);
/* Buckets per series: 127, or levels + 2. */
size_t hc_hist__nbuckets(const struct hc_hist *h);
/* The bucket `value` falls in (see the top of this file). */
size_t hc_hist__bucket_index(const struct hc_hist *h, int64_t value);
/*
 * Inclusive bounds of bucket idx (< nbuckets). The lquantize underflow bucket has no minimum
 * and the overflow bucket no maximum: *has_min / *has_max say so (then *min = INT64_MIN or
 * *max = INT64_MAX). Either bool pointer may be NULL.
 */
void hc_hist__bucket_bounds(const struct hc_hist *h, size_t idx, int64_t *min, int64_t *max,
			    bool *has_min, bool *has_max);
/* The value DTrace prints in front of a quantize row: 0, 2^k, or -2^k (the bound nearest 0). */
int64_t hc_quantize__bucket_value(size_t idx);

size_t hc_hist__series_count(const struct hc_hist *h);
/* Counts of one series (nbuckets of them), NULL if the key has none. Borrowed, valid until the
 * next add/merge into h. */
const uint64_t *hc_hist__counts(const struct hc_hist *h, const char *key);
/* Same shape, same keys, same counts. */
bool hc_hist__equal(const struct hc_hist *a, const struct hc_hist *b);

/* ---- encoders ---- */

/*
 * The JSON object of docs/histograms.md (a new reference; NULL + errno on failure):
 * {type, unit, lower, upper, step (lquantize only), series: [{key, buckets: [{min, max,
 * count}]}]}, series ordered by key (digit runs compared as numbers: "cpu 2" < "cpu 10").
 * lquantize lists every bucket, underflow (min null) to overflow (max null); quantize lists
 * each series' buckets from its lowest to its highest non-empty one, and its lower/upper are
 * the smallest min and largest max listed in any series (null when there is no data).
 */
json_t *hc_hist__to_json(const struct hc_hist *h);
/*
 * Parse and validate what hc_hist__to_json() writes; the input may be hostile. NULL + errno:
 * EINVAL with a reason in why (always NUL-terminated when why_len > 0), or ENOMEM. Buckets
 * must be exact buckets of the shape, strictly ascending; any subset may be listed (absent
 * buckets count 0). Counts are integers in 0..INT64_MAX; keys are unique. Unknown members
 * are ignored.
 */
struct hc_hist *hc_hist__from_json(const json_t *j, char *why, size_t why_len);

/*
 * Print like DTrace's printa() of a quantize/lquantize aggregation (dt_print_quantize,
 * dt_print_lquantize in libdtrace's dt_consume.c): for each series (key order), or only
 * `key` when it is not NULL, the key line, the `value  --- Distribution --- count` header,
 * one row per bucket from one before the first non-empty bucket to one after the last, and a
 * blank line. 0, -ENOENT (key not found; nothing printed), -EIO (write error).
 */
int hc_hist__print(const struct hc_hist *h, const char *key, FILE *out);

#endif
