/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The counters hotcold reports, defined once in profile/counters.def: the enum, the JSON keys
 * (a profile's sampling/lost/scheduler/symbolize/unwind/locks sections, /api/status), the
 * /metrics series and docs/counters.md's table all come from that list, so record and serve
 * report the same keys and a renamed key cannot silently read 0 somewhere.
 *
 * A struct hc_counters is a plain array of values by id: producers fill it (the capture
 * pipeline, serve's collector and server), it travels between serve's processes as it is,
 * and renderers read it. Nothing here allocates but the JSON objects it is asked to fill.
 */
#ifndef HOTCOLD_PROFILE_COUNTERS_H
#define HOTCOLD_PROFILE_COUNTERS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

enum hc_counter_family {
	HC_F_SAMPLING,	  /* record: sampling; serve: /api/status's top level */
	HC_F_LOST,	  /* record: sampling.lost; serve: lost */
	HC_F_SCHEDULER,	  /* scheduler */
	HC_F_SYMBOLIZE,	  /* symbolize */
	HC_F_UNWIND,	  /* unwind */
	HC_F_LOCKS,	  /* locks (--locks) */
	HC_F_COLLECTOR,	  /* serve: collector */
	HC_F_SERVE,	  /* serve: /api/status's top level */
	HC_F_RETENTION,	  /* serve: retention */
	HC_F_STORE,	  /* serve: store */
	HC_F_LOCK_STORE,  /* serve: locks.store (--locks) */
	HC_F_MEMORY,	  /* serve: memory */
	HC_F_PUSH,	  /* serve --push: push (the push client's) */
	HC_F_PUSH_SERVER, /* serve --push: push (the server's: lag, late time) */
	HC_F_MAX,
};

#define HC_F_BIT(f) (1u << (f))

enum hc_counter_id {
#define HC_COUNTER(id, fam, key, type, unit, metric, labels, help) HC_C_##id,
#define HC_ALIAS(fam, key, id)
#define HC_METRIC(metric, help)
#include "profile/counters.def"
#undef HC_COUNTER
#undef HC_ALIAS
#undef HC_METRIC
	HC_C_MAX,
};

enum hc_counter_type {
	HC_CT_COUNTER, /* cumulative since start */
	HC_CT_GAUGE,
};

enum hc_counter_unit {
	HC_CU_COUNT,
	HC_CU_NS, /* nanoseconds in JSON; the series is in seconds */
	HC_CU_S,
	HC_CU_BYTES,
};

struct hc_counter_def {
	enum hc_counter_family family;
	const char *key; /* in the family's object; "a.b" nests */
	enum hc_counter_type type;
	enum hc_counter_unit unit;
	const char *metric; /* the Prometheus series */
	const char *labels; /* "" or what goes between the braces */
	const char *help;
};

/* Indexed by enum hc_counter_id. */
extern const struct hc_counter_def hc_counter_defs[HC_C_MAX];

struct hc_counter_alias {
	enum hc_counter_family family;
	const char *key;
	enum hc_counter_id id;
};

extern const struct hc_counter_alias hc_counter_aliases[];
extern const size_t hc_counter_n_aliases;

/* Values by enum hc_counter_id; passed by value between serve's processes. */
struct hc_counters {
	uint64_t v[HC_C_MAX];
};

/* The family's name as docs/counters.md writes it ("sampling", "lost", ...). */
const char *hc_counter_family_name(enum hc_counter_family f);

/*
 * Set every key of family f (counters, then aliases, in the order of counters.def) into obj,
 * making the nested objects a dotted key names (or adding to those already there). 0, or
 * -ENOMEM, or -EINVAL when a key's path runs into a member that is not an object.
 */
int hc_counters__to_json(const struct hc_counters *c, enum hc_counter_family f, json_t *obj);

/*
 * The Prometheus text (0.0.4) of every counter whose family is in families (HC_F_BIT()s):
 * one HELP and TYPE per series name, its samples together, in counters.def's order. 0, or
 * -EIO when out fails.
 */
int hc_counters__write_metrics(const struct hc_counters *c, uint32_t families, FILE *out);

/* The counter (or alias) key names in family f: its id, or -ENOENT. */
int hc_counter__lookup(enum hc_counter_family f, const char *key);

/* docs/counters.md's table, in Markdown. 0, or -EIO. */
int hc_counters__write_doc_table(FILE *out);

#endif
