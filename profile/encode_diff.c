// SPDX-License-Identifier: GPL-2.0-only
/*
 * Differential folded stacks (flamegraph.pl's difffolded.pl output): `stack BASE NEW` per
 * stack found in either profile, from their folded forms. Matching goes by the folded text,
 * which names processes and frames but no pid or tid: the same program captured twice
 * matches itself.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/encode.h"

struct fline {
	char *text; /* the stack, NUL-terminated inside the folded buffer */
	uint64_t value;
};

struct folded_text {
	char *buf;
	size_t len;
	struct fline *lines;
	size_t n;
	uint64_t total;
};

/* BASE's value scaled by `scale` (normalize), rounded; exact when not scaling. Scaled values
 * stay within NEW's total, a u64, up to the rounding of doubles: clamped at UINT64_MAX. */
static uint64_t scaled(uint64_t v, double scale, bool normalize)
{
	double r;

	if (!normalize)
		return v;
	r = round((double)v * scale);
	/* 2^64: the first double above every u64 */
	return r >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)r;
}

static void folded_text__release(struct folded_text *t)
{
	free(t->buf);
	free(t->lines);
}

/* Fold p and split its output into lines; the writer sorts them by text and merges equal
 * stacks, which the merge below relies on. */
static int folded_text__build(struct folded_text *t, const struct hc_profile *p,
			      unsigned int weights)
{
	FILE *mem = open_memstream(&t->buf, &t->len);
	size_t cap = 0;
	char *line, *next;
	int err;

	if (!mem)
		return -ENOMEM;
	err = hc_profile__write_folded(p, weights, mem);
	if (fclose(mem) && !err)
		err = -ENOMEM;
	if (err)
		return err;
	for (line = t->buf; line && *line; line = next) {
		char *nl = strchr(line, '\n'), *sp, *end;

		if (!nl)
			return -EINVAL;
		*nl = '\0';
		next = nl + 1;
		sp = strrchr(line, ' ');
		if (!sp)
			return -EINVAL;
		*sp = '\0';
		if (t->n == cap) {
			struct fline *nl_arr;

			cap = cap ? cap * 2 : 256;
			nl_arr = realloc(t->lines, cap * sizeof(*nl_arr));
			if (!nl_arr)
				return -ENOMEM;
			t->lines = nl_arr;
		}
		errno = 0;
		t->lines[t->n].value = strtoull(sp + 1, &end, 10);
		if (errno || *end)
			return -EINVAL;
		t->lines[t->n].text = line;
		/* the lines add up to the root's selected value, a u64 (encode_folded.c) */
		if (__builtin_add_overflow(t->total, t->lines[t->n].value, &t->total))
			return -EOVERFLOW;
		t->n++;
	}
	return 0;
}

int hc_profile__write_diff_folded(const struct hc_profile *base, const struct hc_profile *new,
				  unsigned int weights, bool normalize, FILE *out)
{
	struct folded_text a = {0}, b = {0};
	double scale = 1.0;
	size_t i = 0, j = 0;
	int err;

	if (!base || !new || !base->tree || !new->tree)
		return -EINVAL;
	err = folded_text__build(&a, base, weights);
	if (!err)
		err = folded_text__build(&b, new, weights);
	if (err)
		goto out;
	if (normalize && a.total)
		scale = (double)b.total / (double)a.total;
	errno = 0;
	while (i < a.n || j < b.n) {
		int c = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.lines[i].text, b.lines[j].text);
		uint64_t va = c <= 0 ? scaled(a.lines[i].value, scale, normalize) : 0;
		uint64_t vb = c >= 0 ? b.lines[j].value : 0;
		const char *text = c <= 0 ? a.lines[i].text : b.lines[j].text;

		if (fprintf(out, "%s %" PRIu64 " %" PRIu64 "\n", text, va, vb) < 0) {
			err = errno ? -errno : -EIO;
			goto out;
		}
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	if (fflush(out) || ferror(out))
		err = errno ? -errno : -EIO;
out:
	folded_text__release(&a);
	folded_text__release(&b);
	return err;
}
