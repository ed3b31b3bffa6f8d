// SPDX-License-Identifier: GPL-2.0-only
/*
 * A profile.proto reader for the tests (see pprof_read.h). Written from the .proto and the
 * protobuf wire format (varints; wire types 0 varint, 1 fixed64, 2 length-delimited,
 * 5 fixed32), not from the encoder: a test that decodes with this checks the encoder.
 *
 * Fields may come in any order and string indices may precede the string table, so the
 * decoder keeps raw indices first and resolves them (with every id reference) once the
 * whole message is read. Repeated numeric fields are accepted packed (wire type 2) and
 * unpacked (wire type 0), as protobuf parsers must; unknown fields are skipped by wire type.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "tests/pprof/pprof_read.h"

/* Decompressed (and raw) input larger than this is refused. */
#define PP_MAX_BYTES ((size_t)1 << 30)

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

struct rd {
	const uint8_t *p, *end;
};

struct raw_label {
	int64_t key, str, unit;
};

struct ctx {
	struct pp_profile *p;
	char *why;
	size_t why_len;

	size_t cap_strings, cap_types, cap_samples, cap_mappings, cap_locations, cap_functions;
	size_t cap_type_idx, cap_map_idx, cap_fn_idx;

	/* string indices, resolved after the whole message is read */
	int64_t (*type_idx)[2];	  /* parallel to p->sample_types */
	struct raw_label *labels; /* every sample's labels, in sample order */
	size_t n_labels, cap_labels;
	int64_t (*map_idx)[2]; /* filename, build_id; parallel to p->mappings */
	int64_t (*fn_idx)[3];  /* name, system_name, filename; parallel to p->functions */
	int64_t *comments;
	size_t n_comments, cap_comments;
	int64_t period_type[2];
	int64_t default_type;
};

static int bad(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->why && c->why_len) {
		va_start(ap, fmt);
		vsnprintf(c->why, c->why_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int oom(struct ctx *c)
{
	if (c->why && c->why_len)
		snprintf(c->why, c->why_len, "out of memory");
	return -ENOMEM;
}

/* Makes room for element n of *arr (elements of `size` bytes); -ENOMEM. */
static int grow(void *arr, size_t *cap, size_t n, size_t size)
{
	void **a = arr;
	size_t ncap;
	void *na;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 8;
	na = realloc(*a, ncap * size);
	if (!na)
		return -ENOMEM;
	memset((char *)na + *cap * size, 0, (ncap - *cap) * size);
	*a = na;
	*cap = ncap;
	return 0;
}

/* ---- wire format ---- */

static int rd_varint(struct ctx *c, struct rd *r, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned int shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (r->p >= r->end)
			return bad(c, "truncated varint");
		b = *r->p++;
		/* the 10th byte may only carry bit 63 */
		if (shift == 63 && b > 1)
			return bad(c, "varint overflows 64 bits");
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return bad(c, "varint longer than 10 bytes");
}

static int rd_tag(struct ctx *c, struct rd *r, uint64_t *field, unsigned int *wt)
{
	uint64_t v;
	int err = rd_varint(c, r, &v);

	if (err)
		return err;
	*field = v >> 3;
	*wt = v & 7;
	if (*field == 0 || *field > 0x1fffffff)
		return bad(c, "bad field number %" PRIu64, *field);
	return 0;
}

/* The body of a length-delimited field. */
static int rd_len(struct ctx *c, struct rd *r, struct rd *sub)
{
	uint64_t n;
	int err = rd_varint(c, r, &n);

	if (err)
		return err;
	if (n > (uint64_t)(r->end - r->p))
		return bad(c, "length %" PRIu64 " runs past the end of its message", n);
	sub->p = r->p;
	sub->end = r->p + n;
	r->p += n;
	return 0;
}

static int rd_skip(struct ctx *c, struct rd *r, uint64_t field, unsigned int wt)
{
	struct rd sub;
	uint64_t v;
	size_t n;

	switch (wt) {
	case WT_VARINT:
		return rd_varint(c, r, &v);
	case WT_LEN:
		return rd_len(c, r, &sub);
	case WT_I64:
	case WT_I32:
		n = wt == WT_I64 ? 8 : 4;
		if ((size_t)(r->end - r->p) < n)
			return bad(c, "truncated fixed-size field %" PRIu64, field);
		r->p += n;
		return 0;
	default:
		/* 3 and 4 are proto2 groups, which profile.proto never uses */
		return bad(c, "field %" PRIu64 ": unsupported wire type %u", field, wt);
	}
}

static int want(struct ctx *c, const char *msg, uint64_t field, unsigned int wt,
		unsigned int expected)
{
	if (wt == expected)
		return 0;
	return bad(c, "%s field %" PRIu64 ": wire type %u, expected %u", msg, field, wt, expected);
}

/* A singular varint field. */
static int rd_u64(struct ctx *c, struct rd *r, const char *msg, uint64_t field, unsigned int wt,
		  uint64_t *v)
{
	int err = want(c, msg, field, wt, WT_VARINT);

	return err ? err : rd_varint(c, r, v);
}

static int rd_i64(struct ctx *c, struct rd *r, const char *msg, uint64_t field, unsigned int wt,
		  int64_t *v)
{
	uint64_t u;
	int err = rd_u64(c, r, msg, field, wt, &u);

	if (!err)
		*v = (int64_t)u;
	return err;
}

/* A repeated varint field, packed or not, appended to *arr. */
static int rd_repeated(struct ctx *c, struct rd *r, const char *msg, uint64_t field,
		       unsigned int wt, uint64_t **arr, size_t *n, size_t *cap)
{
	struct rd sub;
	uint64_t v;
	int err;

	if (wt == WT_VARINT) {
		sub = *r;
	} else if (wt == WT_LEN) {
		err = rd_len(c, r, &sub);
		if (err)
			return err;
	} else {
		return bad(c, "%s field %" PRIu64 ": wire type %u, expected 0 or 2", msg, field,
			   wt);
	}
	/* one value unpacked; any number (zero too) packed */
	for (bool first = true; wt == WT_LEN ? sub.p < sub.end : first; first = false) {
		err = rd_varint(c, &sub, &v);
		if (err)
			return err;
		if (grow(arr, cap, *n, sizeof(**arr)))
			return oom(c);
		(*arr)[(*n)++] = v;
	}
	if (wt == WT_VARINT)
		r->p = sub.p;
	return 0;
}

/* ---- messages ---- */

static int rd_value_type(struct ctx *c, struct rd *r, int64_t idx[2])
{
	uint64_t field;
	unsigned int wt;
	int err = 0;

	while (!err && r->p < r->end) {
		err = rd_tag(c, r, &field, &wt);
		if (err)
			break;
		if (field == 1 || field == 2)
			err = rd_i64(c, r, "ValueType", field, wt, &idx[field - 1]);
		else
			err = rd_skip(c, r, field, wt);
	}
	return err;
}

static int rd_label(struct ctx *c, struct rd *r, struct raw_label *raw, struct pp_label *l)
{
	uint64_t field;
	unsigned int wt;
	int err = 0;

	while (!err && r->p < r->end) {
		err = rd_tag(c, r, &field, &wt);
		if (err)
			break;
		switch (field) {
		case 1:
			err = rd_i64(c, r, "Label", field, wt, &raw->key);
			break;
		case 2:
			err = rd_i64(c, r, "Label", field, wt, &raw->str);
			break;
		case 3:
			err = rd_i64(c, r, "Label", field, wt, &l->num);
			break;
		case 4:
			err = rd_i64(c, r, "Label", field, wt, &raw->unit);
			break;
		default:
			err = rd_skip(c, r, field, wt);
		}
	}
	return err;
}

static int rd_sample(struct ctx *c, struct rd *r, struct pp_sample *s)
{
	size_t cap_loc = 0, cap_val = 0, cap_lab = 0;
	uint64_t field;
	unsigned int wt;
	struct rd sub;
	int err = 0;

	while (!err && r->p < r->end) {
		err = rd_tag(c, r, &field, &wt);
		if (err)
			break;
		switch (field) {
		case 1:
			err = rd_repeated(c, r, "Sample", field, wt, &s->location_ids,
					  &s->n_locations, &cap_loc);
			break;
		case 2:
			/* int64 values travel as their two's complement bits */
			err = rd_repeated(c, r, "Sample", field, wt, (uint64_t **)&s->values,
					  &s->n_values, &cap_val);
			break;
		case 3:
			err = want(c, "Sample", field, wt, WT_LEN);
			if (!err)
				err = rd_len(c, r, &sub);
			if (err)
				break;
			if (grow(&s->labels, &cap_lab, s->n_labels, sizeof(*s->labels)) ||
			    grow(&c->labels, &c->cap_labels, c->n_labels, sizeof(*c->labels)))
				return oom(c);
			err = rd_label(c, &sub, &c->labels[c->n_labels++],
				       &s->labels[s->n_labels++]);
			break;
		default:
			err = rd_skip(c, r, field, wt);
		}
	}
	return err;
}

static int rd_mapping(struct ctx *c, struct rd *r, struct pp_mapping *m, int64_t idx[2])
{
	uint64_t field, v;
	unsigned int wt;
	int err = 0;

	while (!err && r->p < r->end) {
		err = rd_tag(c, r, &field, &wt);
		if (err)
			break;
		switch (field) {
		case 1:
			err = rd_u64(c, r, "Mapping", field, wt, &m->id);
			break;
		case 2:
			err = rd_u64(c, r, "Mapping", field, wt, &m->memory_start);
			break;
		case 3:
			err = rd_u64(c, r, "Mapping", field, wt, &m->memory_limit);
			break;
		case 4:
			err = rd_u64(c, r, "Mapping", field, wt, &m->file_offset);
			break;
		case 5:
			err = rd_i64(c, r, "Mapping", field, wt, &idx[0]);
			break;
		case 6:
			err = rd_i64(c, r, "Mapping", field, wt, &idx[1]);
			break;
		case 7:
			err = rd_u64(c, r, "Mapping", field, wt, &v);
			m->has_functions = v != 0;
			break;
		default:
			err = rd_skip(c, r, field, wt);
		}
	}
	return err;
}

static int rd_line(struct ctx *c, struct rd *r, struct pp_line *l)
{
	uint64_t field;
	unsigned int wt;
	int err = 0;

	while (!err && r->p < r->end) {
		err = rd_tag(c, r, &field, &wt);
		if (err)
			break;
		if (field == 1)
			err = rd_u64(c, r, "Line", field, wt, &l->function_id);
		else if (field == 2)
			err = rd_i64(c, r, "Line", field, wt, &l->line);
		else
			err = rd_skip(c, r, field, wt);
	}
	return err;
}

static int rd_location(struct ctx *c, struct rd *r, struct pp_location *l)
{
	size_t cap_lines = 0;
	uint64_t field;
	unsigned int wt;
	struct rd sub;
	int err = 0;

	while (!err && r->p < r->end) {
		err = rd_tag(c, r, &field, &wt);
		if (err)
			break;
		switch (field) {
		case 1:
			err = rd_u64(c, r, "Location", field, wt, &l->id);
			break;
		case 2:
			err = rd_u64(c, r, "Location", field, wt, &l->mapping_id);
			break;
		case 3:
			err = rd_u64(c, r, "Location", field, wt, &l->address);
			break;
		case 4:
			err = want(c, "Location", field, wt, WT_LEN);
			if (!err)
				err = rd_len(c, r, &sub);
			if (err)
				break;
			if (grow(&l->lines, &cap_lines, l->n_lines, sizeof(*l->lines)))
				return oom(c);
			err = rd_line(c, &sub, &l->lines[l->n_lines++]);
			break;
		default:
			err = rd_skip(c, r, field, wt);
		}
	}
	return err;
}

static int rd_function(struct ctx *c, struct rd *r, struct pp_function *f, int64_t idx[3])
{
	uint64_t field;
	unsigned int wt;
	int err = 0;

	while (!err && r->p < r->end) {
		err = rd_tag(c, r, &field, &wt);
		if (err)
			break;
		if (field == 1)
			err = rd_u64(c, r, "Function", field, wt, &f->id);
		else if (field >= 2 && field <= 4)
			err = rd_i64(c, r, "Function", field, wt, &idx[field - 2]);
		else
			err = rd_skip(c, r, field, wt);
	}
	return err;
}

static int rd_profile(struct ctx *c, struct rd *r)
{
	struct pp_profile *p = c->p;
	uint64_t field;
	unsigned int wt;
	struct rd sub;
	int err = 0;

	while (!err && r->p < r->end) {
		err = rd_tag(c, r, &field, &wt);
		if (err)
			break;
		if ((field >= 1 && field <= 6) || field == 11) {
			err = want(c, "Profile", field, wt, WT_LEN);
			if (!err)
				err = rd_len(c, r, &sub);
			if (err)
				break;
		}
		switch (field) {
		case 1:
			if (grow(&p->sample_types, &c->cap_types, p->n_sample_types,
				 sizeof(*p->sample_types)) ||
			    grow(&c->type_idx, &c->cap_type_idx, p->n_sample_types,
				 sizeof(*c->type_idx)))
				return oom(c);
			err = rd_value_type(c, &sub, c->type_idx[p->n_sample_types++]);
			break;
		case 2:
			if (grow(&p->samples, &c->cap_samples, p->n_samples, sizeof(*p->samples)))
				return oom(c);
			err = rd_sample(c, &sub, &p->samples[p->n_samples++]);
			break;
		case 3:
			if (grow(&p->mappings, &c->cap_mappings, p->n_mappings,
				 sizeof(*p->mappings)) ||
			    grow(&c->map_idx, &c->cap_map_idx, p->n_mappings, sizeof(*c->map_idx)))
				return oom(c);
			err = rd_mapping(c, &sub, &p->mappings[p->n_mappings],
					 c->map_idx[p->n_mappings]);
			p->n_mappings++;
			break;
		case 4:
			if (grow(&p->locations, &c->cap_locations, p->n_locations,
				 sizeof(*p->locations)))
				return oom(c);
			err = rd_location(c, &sub, &p->locations[p->n_locations++]);
			break;
		case 5:
			if (grow(&p->functions, &c->cap_functions, p->n_functions,
				 sizeof(*p->functions)) ||
			    grow(&c->fn_idx, &c->cap_fn_idx, p->n_functions, sizeof(*c->fn_idx)))
				return oom(c);
			err = rd_function(c, &sub, &p->functions[p->n_functions],
					  c->fn_idx[p->n_functions]);
			p->n_functions++;
			break;
		case 6: {
			size_t n = (size_t)(sub.end - sub.p);
			char *str;

			if (grow(&p->strings, &c->cap_strings, p->n_strings, sizeof(*p->strings)))
				return oom(c);
			str = malloc(n + 1);
			if (!str)
				return oom(c);
			memcpy(str, sub.p, n);
			str[n] = '\0';
			p->strings[p->n_strings++] = str;
			if (p->n_strings == 1 && n != 0)
				return bad(c, "string_table[0] is not \"\"");
			break;
		}
		case 9:
			err = rd_i64(c, r, "Profile", field, wt, &p->time_nanos);
			break;
		case 10:
			err = rd_i64(c, r, "Profile", field, wt, &p->duration_nanos);
			break;
		case 11:
			/* a singular message seen twice merges, field by field */
			err = rd_value_type(c, &sub, c->period_type);
			break;
		case 12:
			err = rd_i64(c, r, "Profile", field, wt, &p->period);
			break;
		case 13:
			err = rd_repeated(c, r, "Profile", field, wt, (uint64_t **)&c->comments,
					  &c->n_comments, &c->cap_comments);
			break;
		case 14:
			err = rd_i64(c, r, "Profile", field, wt, &c->default_type);
			break;
		default:
			/* drop_frames, keep_frames, tick_unit, ... and fields from the future */
			err = rd_skip(c, r, field, wt);
		}
	}
	return err;
}

/* ---- resolving ---- */

static int str_at(struct ctx *c, int64_t idx, const char *what, const char **out)
{
	if (idx < 0 || (uint64_t)idx >= c->p->n_strings)
		return bad(c, "%s: string index %" PRId64 " out of range (%zu strings)", what, idx,
			   c->p->n_strings);
	*out = c->p->strings[idx];
	return 0;
}

/* Like str_at(), but index 0 means "not set": NULL. */
static int opt_str_at(struct ctx *c, int64_t idx, const char *what, const char **out)
{
	if (idx == 0) {
		*out = NULL;
		return 0;
	}
	return str_at(c, idx, what, out);
}

static int resolve_strings(struct ctx *c)
{
	struct pp_profile *p = c->p;
	size_t li = 0;
	int err = 0;

	if (p->n_strings == 0)
		return bad(c, "no string table (string_table[0] must be \"\")");
	for (size_t i = 0; !err && i < p->n_sample_types; i++) {
		err = str_at(c, c->type_idx[i][0], "sample_type.type", &p->sample_types[i].type);
		if (!err)
			err = str_at(c, c->type_idx[i][1], "sample_type.unit",
				     &p->sample_types[i].unit);
	}
	for (size_t i = 0; !err && i < p->n_samples; i++) {
		struct pp_sample *s = &p->samples[i];

		for (size_t j = 0; !err && j < s->n_labels; j++, li++) {
			err = str_at(c, c->labels[li].key, "label.key", &s->labels[j].key);
			if (!err)
				err = opt_str_at(c, c->labels[li].str, "label.str",
						 &s->labels[j].str);
			if (!err)
				err = opt_str_at(c, c->labels[li].unit, "label.num_unit",
						 &s->labels[j].num_unit);
		}
	}
	for (size_t i = 0; !err && i < p->n_mappings; i++) {
		err = str_at(c, c->map_idx[i][0], "mapping.filename", &p->mappings[i].filename);
		if (!err)
			err = str_at(c, c->map_idx[i][1], "mapping.build_id",
				     &p->mappings[i].build_id);
	}
	for (size_t i = 0; !err && i < p->n_functions; i++) {
		err = str_at(c, c->fn_idx[i][0], "function.name", &p->functions[i].name);
		if (!err)
			err = str_at(c, c->fn_idx[i][1], "function.system_name",
				     &p->functions[i].system_name);
		if (!err)
			err = str_at(c, c->fn_idx[i][2], "function.filename",
				     &p->functions[i].filename);
	}
	if (!err)
		err = str_at(c, c->period_type[0], "period_type.type", &p->period_type.type);
	if (!err)
		err = str_at(c, c->period_type[1], "period_type.unit", &p->period_type.unit);
	if (!err)
		err = str_at(c, c->default_type, "default_sample_type", &p->default_sample_type);
	if (!err && c->n_comments) {
		p->comments = calloc(c->n_comments, sizeof(*p->comments));
		if (!p->comments)
			return oom(c);
		p->n_comments = c->n_comments;
		for (size_t i = 0; !err && i < c->n_comments; i++)
			err = str_at(c, c->comments[i], "comment", &p->comments[i]);
	}
	return err;
}

static int id_cmp(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int mapping_cmp(const void *a, const void *b)
{
	return id_cmp(((const struct pp_mapping *)a)->id, ((const struct pp_mapping *)b)->id);
}

static int location_cmp(const void *a, const void *b)
{
	return id_cmp(((const struct pp_location *)a)->id, ((const struct pp_location *)b)->id);
}

static int function_cmp(const void *a, const void *b)
{
	return id_cmp(((const struct pp_function *)a)->id, ((const struct pp_function *)b)->id);
}

/* Sorted by id; ids unique and non-zero. `stride`: element size, id the first member. */
static int check_ids(struct ctx *c, void *arr, size_t n, size_t stride,
		     int (*cmp)(const void *, const void *), const char *what)
{
	uint64_t prev = 0;

	if (n > 1)
		qsort(arr, n, stride, cmp);
	for (size_t i = 0; i < n; i++) {
		uint64_t id;

		memcpy(&id, (char *)arr + i * stride, sizeof(id));
		if (id == 0)
			return bad(c, "%s with id 0", what);
		if (i && id == prev)
			return bad(c, "two %ss with id %" PRIu64, what, id);
		prev = id;
	}
	return 0;
}

static const void *find_id(const void *arr, size_t n, size_t stride, uint64_t id)
{
	size_t lo = 0, hi = n;

	/* ids are usually 1..n in order: try the direct hit first */
	if (id && id <= n) {
		uint64_t at;

		memcpy(&at, (const char *)arr + (id - 1) * stride, sizeof(at));
		if (at == id)
			return (const char *)arr + (id - 1) * stride;
	}
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at;

		memcpy(&at, (const char *)arr + mid * stride, sizeof(at));
		if (at == id)
			return (const char *)arr + mid * stride;
		if (at < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const struct pp_location *find_location(const struct pp_profile *p, uint64_t id)
{
	return find_id(p->locations, p->n_locations, sizeof(*p->locations), id);
}

static const struct pp_function *find_function(const struct pp_profile *p, uint64_t id)
{
	return find_id(p->functions, p->n_functions, sizeof(*p->functions), id);
}

static int resolve_ids(struct ctx *c)
{
	struct pp_profile *p = c->p;
	int err;

	err = check_ids(c, p->mappings, p->n_mappings, sizeof(*p->mappings), mapping_cmp,
			"mapping");
	if (!err)
		err = check_ids(c, p->locations, p->n_locations, sizeof(*p->locations),
				location_cmp, "location");
	if (!err)
		err = check_ids(c, p->functions, p->n_functions, sizeof(*p->functions),
				function_cmp, "function");
	if (err)
		return err;
	for (size_t i = 0; i < p->n_locations; i++) {
		const struct pp_location *l = &p->locations[i];

		if (l->mapping_id &&
		    !find_id(p->mappings, p->n_mappings, sizeof(*p->mappings), l->mapping_id))
			return bad(c, "location %" PRIu64 ": unknown mapping id %" PRIu64, l->id,
				   l->mapping_id);
		for (size_t j = 0; j < l->n_lines; j++)
			if (!find_function(p, l->lines[j].function_id))
				return bad(c, "location %" PRIu64 ": unknown function id %" PRIu64,
					   l->id, l->lines[j].function_id);
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct pp_sample *s = &p->samples[i];

		if (s->n_values != p->n_sample_types)
			return bad(c, "sample %zu has %zu values for %zu sample types", i,
				   s->n_values, p->n_sample_types);
		for (size_t j = 0; j < s->n_locations; j++)
			if (!find_location(p, s->location_ids[j]))
				return bad(c, "sample %zu: unknown location id %" PRIu64, i,
					   s->location_ids[j]);
	}
	return 0;
}

/* ---- gzip ---- */

/* Inflates a gzip stream (members one after another, as gzip allows) into *out. */
static int gunzip(struct ctx *c, const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream z = {0};
	/* one byte more than allowed, so that too much output shows */
	size_t cap = len < 1024 ? 4096 : len * 4, n = 0, limit = PP_MAX_BYTES + 1;
	uint8_t *buf = NULL, *nb;
	int zerr, err = 0;

	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return oom(c);
	z.next_in = (Bytef *)in;
	for (;;) {
		size_t left = len - (size_t)(z.next_in - in);

		if (!buf || n == cap) {
			if (buf)
				cap *= 2;
			cap = cap > limit ? limit : cap;
			nb = realloc(buf, cap);
			if (!nb) {
				err = oom(c);
				break;
			}
			buf = nb;
		}
		/* avail_in and avail_out are 32 bits: big buffers go in slices */
		if (!z.avail_in)
			z.avail_in = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
		z.next_out = buf + n;
		z.avail_out = cap - n > UINT32_MAX ? UINT32_MAX : (uInt)(cap - n);
		zerr = inflate(&z, Z_NO_FLUSH);
		n = (size_t)(z.next_out - buf);
		left = len - (size_t)(z.next_in - in);
		if (n > PP_MAX_BYTES) {
			err = bad(c, "more than %zu bytes once decompressed", PP_MAX_BYTES);
			break;
		}
		if (zerr == Z_STREAM_END) {
			if (!left)
				break;
			if (left < 2 || z.next_in[0] != 0x1f || z.next_in[1] != 0x8b) {
				err = bad(c, "%zu bytes of garbage after the gzip stream", left);
				break;
			}
			inflateReset(&z);
			continue;
		}
		if (zerr == Z_MEM_ERROR) {
			err = oom(c);
			break;
		}
		if (zerr != Z_OK && zerr != Z_BUF_ERROR) {
			err = bad(c, "gzip: %s", z.msg ? z.msg : "corrupt stream");
			break;
		}
		/* no progress with output space left: the input ended inside the stream */
		if (zerr == Z_BUF_ERROR && n < cap && !left) {
			err = bad(c, "gzip: truncated stream");
			break;
		}
	}
	inflateEnd(&z);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*out_len = n;
	return 0;
}

/* ---- API ---- */

void pp_free(struct pp_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_strings; i++)
		free(p->strings[i]);
	free(p->strings);
	free(p->sample_types);
	for (size_t i = 0; i < p->n_samples; i++) {
		free(p->samples[i].location_ids);
		free(p->samples[i].values);
		free(p->samples[i].labels);
	}
	free(p->samples);
	free(p->mappings);
	for (size_t i = 0; i < p->n_locations; i++)
		free(p->locations[i].lines);
	free(p->locations);
	free(p->functions);
	free(p->comments);
	memset(p, 0, sizeof(*p));
}

int pp_read(const void *buf, size_t len, struct pp_profile *out, char *why, size_t why_len)
{
	struct ctx c = {.p = out, .why = why, .why_len = why_len};
	const uint8_t *b = buf;
	uint8_t *raw = NULL;
	struct rd r;
	int err;

	memset(out, 0, sizeof(*out));
	if (why && why_len)
		why[0] = '\0';
	if (!buf && len)
		return bad(&c, "no buffer");
	if (len > PP_MAX_BYTES)
		return bad(&c, "more than %zu bytes", PP_MAX_BYTES);
	r.p = b;
	r.end = b + len;
	if (len >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
		size_t n;

		err = gunzip(&c, b, len, &raw, &n);
		if (err)
			return err;
		r.p = raw;
		r.end = raw + n;
	}
	err = rd_profile(&c, &r);
	if (!err)
		err = resolve_strings(&c);
	if (!err)
		err = resolve_ids(&c);

	free(raw);
	free(c.type_idx);
	free(c.labels);
	free(c.map_idx);
	free(c.fn_idx);
	free(c.comments);
	if (err)
		pp_free(out);
	return err;
}

int pp_read_file(const char *path, struct pp_profile *out, char *why, size_t why_len)
{
	size_t cap = 65536, n = 0;
	char *buf = NULL;
	FILE *f;
	int err = 0;

	memset(out, 0, sizeof(*out));
	f = fopen(path, "rb");
	if (!f) {
		err = -errno;
		if (why && why_len)
			snprintf(why, why_len, "%s", strerror(errno));
		return err;
	}
	for (;;) {
		size_t got;

		if (!buf || n == cap) {
			char *nb;

			if (buf)
				cap *= 2;
			if (cap > PP_MAX_BYTES + 1)
				cap = PP_MAX_BYTES + 1;
			if (n == cap) {
				err = -EINVAL;
				if (why && why_len)
					snprintf(why, why_len, "more than %zu bytes", PP_MAX_BYTES);
				break;
			}
			nb = realloc(buf, cap);
			if (!nb) {
				err = -ENOMEM;
				if (why && why_len)
					snprintf(why, why_len, "out of memory");
				break;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0) {
			if (ferror(f)) {
				err = errno ? -errno : -EIO;
				if (why && why_len)
					snprintf(why, why_len, "read error: %s", strerror(-err));
			}
			break;
		}
	}
	fclose(f);
	if (!err)
		err = pp_read(buf, n, out, why, why_len);
	free(buf);
	return err;
}

int pp_sample_type_index(const struct pp_profile *p, const char *type)
{
	for (size_t i = 0; i < p->n_sample_types; i++)
		if (strcmp(p->sample_types[i].type, type) == 0)
			return (int)i;
	return -1;
}

int64_t pp_total(const struct pp_profile *p, const char *type)
{
	int idx = pp_sample_type_index(p, type);
	uint64_t sum = 0; /* wraps instead of overflowing on hostile input */

	if (idx < 0)
		return -1;
	for (size_t i = 0; i < p->n_samples; i++)
		sum += (uint64_t)p->samples[i].values[idx];
	return (int64_t)sum;
}

static int append(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);

	if (*len + n + 2 > *cap) {
		size_t ncap = *cap ? *cap : 128;
		char *nb;

		while (ncap < *len + n + 2)
			ncap *= 2;
		nb = realloc(*buf, ncap);
		if (!nb)
			return -ENOMEM;
		*buf = nb;
		*cap = ncap;
	}
	if (*len)
		(*buf)[(*len)++] = ';';
	memcpy(*buf + *len, s, n + 1);
	*len += n;
	return 0;
}

char *pp_sample_folded(const struct pp_profile *p, const struct pp_sample *s)
{
	size_t len = 0, cap = 0;
	char *buf = NULL, addr[32];

	/* locations are leaf first and lines innermost first: read both backwards */
	for (size_t i = s->n_locations; i-- > 0;) {
		const struct pp_location *l = find_location(p, s->location_ids[i]);

		if (!l)
			goto err_free;
		if (!l->n_lines) {
			snprintf(addr, sizeof(addr), "0x%" PRIx64, l->address);
			if (append(&buf, &len, &cap, addr))
				goto err_free;
		}
		for (size_t j = l->n_lines; j-- > 0;) {
			const struct pp_function *f = find_function(p, l->lines[j].function_id);

			if (!f || append(&buf, &len, &cap, f->name))
				goto err_free;
		}
	}
	if (!buf)
		buf = strdup("");
	return buf;

err_free:
	free(buf);
	return NULL;
}

const char *pp_label_str(const struct pp_sample *s, const char *key)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (s->labels[i].str && strcmp(s->labels[i].key, key) == 0)
			return s->labels[i].str;
	return NULL;
}

bool pp_label_num(const struct pp_sample *s, const char *key, int64_t *out)
{
	for (size_t i = 0; i < s->n_labels; i++) {
		if (!s->labels[i].str && strcmp(s->labels[i].key, key) == 0) {
			*out = s->labels[i].num;
			return true;
		}
	}
	return false;
}
