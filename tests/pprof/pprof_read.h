/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A small reader of pprof files (Google's profile.proto, gzipped or not) for the tests: it
 * decodes what hotcold writes, and what a push receiver gets, without sharing any code with
 * profile/encode_pprof.c, so a test compares the encoder against an independent decoding.
 *
 * Every string below points into p->strings (owned by the profile, freed by pp_free()).
 * String indices 0 read as "" (strings[0]), except in labels: a label whose `str` is 0 is a
 * numeric label and has str == NULL; a numeric label without a unit has num_unit == NULL.
 * mappings, locations and functions are sorted by id after reading (their order in the file
 * carries no meaning); ids are unique and non-zero, and every id a sample, location or line
 * refers to exists (checked by pp_read()).
 */
#ifndef HOTCOLD_TESTS_PPROF_READ_H
#define HOTCOLD_TESTS_PPROF_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pp_value_type {
	const char *type, *unit;
};

struct pp_label {
	const char *key;
	const char *str;
	int64_t num;
	const char *num_unit;
};

struct pp_sample {
	uint64_t *location_ids; /* leaf first */
	size_t n_locations;
	int64_t *values; /* one per sample type */
	size_t n_values;
	struct pp_label *labels;
	size_t n_labels;
};

struct pp_line {
	uint64_t function_id;
	int64_t line;
};

struct pp_location {
	uint64_t id, mapping_id, address; /* mapping_id 0: none */
	struct pp_line *lines;		  /* lines[0] is the innermost (inlined) function */
	size_t n_lines;
};

struct pp_function {
	uint64_t id;
	const char *name, *system_name, *filename;
};

struct pp_mapping {
	uint64_t id, memory_start, memory_limit, file_offset;
	const char *filename, *build_id;
	bool has_functions;
};

struct pp_profile {
	char **strings;
	size_t n_strings;
	struct pp_value_type *sample_types;
	size_t n_sample_types;
	struct pp_sample *samples;
	size_t n_samples;
	struct pp_mapping *mappings;
	size_t n_mappings;
	struct pp_location *locations;
	size_t n_locations;
	struct pp_function *functions;
	size_t n_functions;
	int64_t time_nanos, duration_nanos, period;
	struct pp_value_type period_type;
	const char *default_sample_type;
	const char **comments;
	size_t n_comments;
};

/*
 * buf: gzipped (starts with 1f 8b) or raw protobuf. Returns 0, or -EINVAL with a one-line
 * reason in `why` (malformed: bad varint, truncated field, wrong wire type for a known field,
 * string index out of range, unknown location/function/mapping id, duplicate or zero id,
 * values not matching the sample types, string_table[0] not "", more than 1 GiB once
 * decompressed), or -ENOMEM. On failure *out is left empty (pp_free() on it is harmless).
 */
int pp_read(const void *buf, size_t len, struct pp_profile *out, char *why, size_t why_len);
/* pp_read() on a file's contents; -errno (with `why`) when it cannot be read. */
int pp_read_file(const char *path, struct pp_profile *out, char *why, size_t why_len);
void pp_free(struct pp_profile *p);

/* Index of the first sample type named `type`; -1: none. */
int pp_sample_type_index(const struct pp_profile *p, const char *type);
/* Sum over the samples of the values of type `type`; -1: no such type. */
int64_t pp_total(const struct pp_profile *p, const char *type);
/*
 * malloc'd: the sample's function names outermost first, joined by ';' (every line of a
 * location, inlined ones too; a location without lines reads as its address, "0x1f").
 * NULL on ENOMEM.
 */
char *pp_sample_folded(const struct pp_profile *p, const struct pp_sample *s);
/* The first string label with that key; NULL: none. */
const char *pp_label_str(const struct pp_sample *s, const char *key);
/* The first numeric label with that key into *out; false: none. */
bool pp_label_num(const struct pp_sample *s, const char *key, int64_t *out);

#endif
