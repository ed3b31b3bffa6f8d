// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-profile: the profile reader (json_loadb + hc_profile__from_json, as `report` and the
 * store read files) on arbitrary bytes. A document it accepts goes through every encoder, and
 * what the encoders promise is checked:
 *  - JSON: write_json's output decodes again, and re-encoding that is byte-identical (the
 *    decoder's merging of duplicate siblings happened on the first pass); to_json agrees;
 *  - folded: the lines add up to the root's selected value (profile.h); diff of p with itself;
 *  - pprof and speedscope: succeed (or -EOVERFLOW where documented); speedscope is JSON.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "profile/weights.h"
#include "profile/tree.h"
#include "profile/profile.h"
#include "profile/encode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One encoder's output in memory. */
struct out {
	char *buf;
	size_t len;
	FILE *f;
};

static void out_open(struct out *o)
{
	o->buf = NULL;
	o->len = 0;
	o->f = open_memstream(&o->buf, &o->len);
	if (!o->f)
		abort();
}

/* Closes the stream; buf stays valid until out_free. */
static void out_close(struct out *o)
{
	if (fclose(o->f))
		abort();
	o->f = NULL;
}

static void out_free(struct out *o)
{
	free(o->buf);
	o->buf = NULL;
}

static int decode(const char *buf, size_t len, struct hc_profile **p, char *why, size_t why_len)
{
	json_t *doc;
	int err;

	doc = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (!doc)
		return -EBADMSG;
	err = hc_profile__from_json(doc, p, why, why_len);
	json_decref(doc);
	return err;
}

/* Sum the VALUE at the end of each `stack VALUE` line; false if a line has none. */
static bool folded_sum(const char *buf, size_t len, uint64_t *sum)
{
	const char *p = buf, *end = buf + len;

	*sum = 0;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *sp;
		uint64_t v = 0;

		if (!nl)
			return false; /* every line ends with a newline */
		for (sp = nl; sp > p && sp[-1] != ' '; sp--)
			;
		if (sp == p || sp == nl)
			return false;
		for (const char *d = sp; d < nl; d++) {
			if (*d < '0' || *d > '9' || v > (UINT64_MAX - (uint64_t)(*d - '0')) / 10)
				return false;
			v = v * 10 + (uint64_t)(*d - '0');
		}
		if (v > UINT64_MAX - *sum)
			return false;
		*sum += v;
		p = nl + 1;
	}
	return true;
}

static void check_json(const struct hc_profile *p)
{
	struct hc_profile *p2 = NULL;
	struct out a, b;
	char why[512] = "";
	json_t *j, *j2;

	out_open(&a);
	if (hc_profile__write_json(p, a.f))
		abort();
	out_close(&a);
	if (decode(a.buf, a.len, &p2, why, sizeof(why))) {
		fprintf(stderr, "fuzz-profile: re-decoding write_json output: %s\n", why);
		abort();
	}
	out_open(&b);
	if (hc_profile__write_json(p2, b.f))
		abort();
	out_close(&b);
	if (a.len != b.len || memcmp(a.buf, b.buf, a.len))
		abort();

	j = hc_profile__to_json(p);
	if (!j)
		abort();
	j2 = json_loadb(a.buf, a.len, 0, NULL);
	if (!j2 || !json_equal(j, j2))
		abort();
	json_decref(j2);
	json_decref(j);
	out_free(&b);
	out_free(&a);
	hc_profile__free(p2);
}

static void check_folded(const struct hc_profile *p, unsigned int weights, bool normalize)
{
	const struct hc_node *root = hc_tree__root(p->tree);
	uint64_t sum;
	struct out o;
	int err;

	out_open(&o);
	err = hc_profile__write_folded(p, weights, o.f);
	out_close(&o);
	if (err && err != -EOVERFLOW)
		abort();
	if (err == -EOVERFLOW && o.len)
		abort(); /* "nothing is written then" */
	if (!err && (!folded_sum(o.buf, o.len, &sum) ||
		     sum != hc_weights__select(hc_node__weights(root), weights)))
		abort();
	out_free(&o);

	out_open(&o);
	err = hc_profile__write_diff_folded(p, p, weights, normalize, o.f);
	out_close(&o);
	if (err && err != -EOVERFLOW)
		abort();
	out_free(&o);
}

static void check_pprof_speedscope(const struct hc_profile *p, unsigned int weights)
{
	struct out o;
	json_t *doc;
	int err;

	out_open(&o);
	err = hc_profile__write_pprof(p, weights, o.f);
	out_close(&o);
	if (err && err != -EOVERFLOW)
		abort();
	if (!err && (o.len < 2 || (uint8_t)o.buf[0] != 0x1f || (uint8_t)o.buf[1] != 0x8b))
		abort(); /* gzip */
	out_free(&o);

	out_open(&o);
	if (hc_profile__write_speedscope(p, weights, o.f))
		abort();
	out_close(&o);
	doc = json_loadb(o.buf, o.len, 0, NULL);
	if (!doc)
		abort();
	json_decref(doc);
	out_free(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The weight selection is not in the document: take it from the input's length, so
	 * that all seven non-empty selections get exercised across the corpus. */
	unsigned int weights = (unsigned int)(size % 7) + 1;
	struct hc_profile *p = NULL;
	char why[512] = "";
	int err;

	err = decode((const char *)data, size, &p, why, sizeof(why));
	if (err == -EBADMSG)
		return 0;
	if (err) {
		if ((err != -EINVAL && err != -ENOMEM) || p || (err == -EINVAL && !why[0]))
			abort();
		return 0;
	}
	check_json(p);
	check_folded(p, weights, size & 8);
	check_pprof_speedscope(p, weights);
	hc_profile__free(p);
	return 0;
}
