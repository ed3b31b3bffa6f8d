// SPDX-License-Identifier: GPL-2.0-only
#include "profile/counters.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

const struct hc_counter_def hc_counter_defs[HC_C_MAX] = {
#define HC_COUNTER(id, fam, key_, type_, unit_, metric_, labels_, help_) \
	[HC_C_##id] = {.family = HC_F_##fam,                             \
		       .key = key_,                                      \
		       .type = HC_CT_##type_,                            \
		       .unit = HC_CU_##unit_,                            \
		       .metric = metric_,                                \
		       .labels = labels_,                                \
		       .help = help_},
#define HC_ALIAS(fam, key, id)
#define HC_METRIC(metric, help)
#include "profile/counters.def"
#undef HC_COUNTER
#undef HC_ALIAS
#undef HC_METRIC
};

const struct hc_counter_alias hc_counter_aliases[] = {
#define HC_COUNTER(id, fam, key, type, unit, metric, labels, help)
#define HC_ALIAS(fam, key_, id_) {.family = HC_F_##fam, .key = key_, .id = HC_C_##id_},
#define HC_METRIC(metric, help)
#include "profile/counters.def"
#undef HC_COUNTER
#undef HC_ALIAS
#undef HC_METRIC
};

const size_t hc_counter_n_aliases = sizeof(hc_counter_aliases) / sizeof(hc_counter_aliases[0]);

struct metric_help {
	const char *metric;
	const char *help;
};

static const struct metric_help metric_helps[] = {
#define HC_COUNTER(id, fam, key, type, unit, metric, labels, help)
#define HC_ALIAS(fam, key, id)
#define HC_METRIC(metric_, help_) {.metric = metric_, .help = help_},
#include "profile/counters.def"
#undef HC_COUNTER
#undef HC_ALIAS
#undef HC_METRIC
};

static const char *const family_names[HC_F_MAX] = {
	[HC_F_SAMPLING] = "sampling",
	[HC_F_LOST] = "lost",
	[HC_F_SCHEDULER] = "scheduler",
	[HC_F_SYMBOLIZE] = "symbolize",
	[HC_F_UNWIND] = "unwind",
	[HC_F_LOCKS] = "locks",
	[HC_F_COLLECTOR] = "collector",
	[HC_F_SERVE] = "serve",
	[HC_F_RETENTION] = "retention",
	[HC_F_STORE] = "store",
	[HC_F_LOCK_STORE] = "locks.store",
	[HC_F_MEMORY] = "memory",
	[HC_F_PUSH] = "push",
	[HC_F_PUSH_SERVER] = "push (server)",
};

/* Where each family is written: record's profile, /api/status. */
static const char *const family_where[HC_F_MAX][2] = {
	[HC_F_SAMPLING] = {"`sampling`", "top level"},
	[HC_F_LOST] = {"`sampling.lost`", "`lost`"},
	[HC_F_SCHEDULER] = {"`scheduler`", "`scheduler`"},
	[HC_F_SYMBOLIZE] = {"`symbolize`", "`symbolize`"},
	[HC_F_UNWIND] = {"`unwind`", "`unwind`"},
	[HC_F_LOCKS] = {"`locks`", "`locks`"},
	[HC_F_COLLECTOR] = {"-", "`collector`"},
	[HC_F_SERVE] = {"-", "top level"},
	[HC_F_RETENTION] = {"-", "`retention`"},
	[HC_F_STORE] = {"-", "`store`"},
	[HC_F_LOCK_STORE] = {"-", "`locks.store`"},
	[HC_F_MEMORY] = {"-", "`memory`"},
	[HC_F_PUSH] = {"-", "`push`"},
	[HC_F_PUSH_SERVER] = {"-", "`push`"},
};

const char *hc_counter_family_name(enum hc_counter_family f)
{
	return (unsigned)f < HC_F_MAX ? family_names[f] : "unknown";
}

/* Set obj's dotted path to v, making the objects on the way. */
static int set_path(json_t *obj, const char *path, json_t *v)
{
	const char *dot;

	while ((dot = strchr(path, '.'))) {
		char part[64];
		size_t len = (size_t)(dot - path);
		json_t *sub;

		if (len >= sizeof(part))
			goto einval;
		memcpy(part, path, len);
		part[len] = '\0';
		sub = json_object_get(obj, part);
		if (!sub) {
			sub = json_object();
			if (json_object_set_new(obj, part, sub))
				goto enomem;
		} else if (!json_is_object(sub)) {
			goto einval;
		}
		obj = sub;
		path = dot + 1;
	}
	return json_object_set_new(obj, path, v) ? -ENOMEM : 0;
einval:
	json_decref(v);
	return -EINVAL;
enomem:
	json_decref(v);
	return -ENOMEM;
}

static int set_value(json_t *obj, const char *key, uint64_t v)
{
	json_t *j = json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);

	return j ? set_path(obj, key, j) : -ENOMEM;
}

int hc_counters__to_json(const struct hc_counters *c, enum hc_counter_family f, json_t *obj)
{
	int err = 0;

	for (size_t i = 0; i < HC_C_MAX && !err; i++)
		if (hc_counter_defs[i].family == f)
			err = set_value(obj, hc_counter_defs[i].key, c->v[i]);
	for (size_t i = 0; i < hc_counter_n_aliases && !err; i++)
		if (hc_counter_aliases[i].family == f)
			err = set_value(obj, hc_counter_aliases[i].key,
					c->v[hc_counter_aliases[i].id]);
	return err;
}

int hc_counter__lookup(enum hc_counter_family f, const char *key)
{
	for (size_t i = 0; i < HC_C_MAX; i++)
		if (hc_counter_defs[i].family == f && !strcmp(hc_counter_defs[i].key, key))
			return (int)i;
	for (size_t i = 0; i < hc_counter_n_aliases; i++)
		if (hc_counter_aliases[i].family == f && !strcmp(hc_counter_aliases[i].key, key))
			return (int)hc_counter_aliases[i].id;
	return -ENOENT;
}

static const char *metric_help(size_t id)
{
	for (size_t i = 0; i < sizeof(metric_helps) / sizeof(metric_helps[0]); i++)
		if (!strcmp(metric_helps[i].metric, hc_counter_defs[id].metric))
			return metric_helps[i].help;
	return hc_counter_defs[id].help;
}

static void write_sample(FILE *out, size_t id, uint64_t v)
{
	const struct hc_counter_def *d = &hc_counter_defs[id];

	fputs(d->metric, out);
	if (*d->labels)
		fprintf(out, "{%s}", d->labels);
	if (d->unit == HC_CU_NS)
		fprintf(out, " %" PRIu64 ".%09" PRIu64 "\n", v / 1000000000u, v % 1000000000u);
	else
		fprintf(out, " %" PRIu64 "\n", v);
}

int hc_counters__write_metrics(const struct hc_counters *c, uint32_t families, FILE *out)
{
	bool done[HC_C_MAX] = {0};

	for (size_t i = 0; i < HC_C_MAX; i++) {
		const struct hc_counter_def *d = &hc_counter_defs[i];

		if (done[i] || !(families & HC_F_BIT(d->family)))
			continue;
		fprintf(out, "# HELP %s %s.\n# TYPE %s %s\n", d->metric, metric_help(i), d->metric,
			d->type == HC_CT_COUNTER ? "counter" : "gauge");
		/* every sample of the series together, wherever its counters are listed */
		for (size_t j = i; j < HC_C_MAX; j++) {
			if (done[j] || !(families & HC_F_BIT(hc_counter_defs[j].family)) ||
			    strcmp(hc_counter_defs[j].metric, d->metric))
				continue;
			write_sample(out, j, c->v[j]);
			done[j] = true;
		}
	}
	return ferror(out) ? -EIO : 0;
}

static const char *const unit_names[] = {
	[HC_CU_COUNT] = "", [HC_CU_NS] = "ns", [HC_CU_S] = "s", [HC_CU_BYTES] = "bytes"};

int hc_counters__write_doc_table(FILE *out)
{
	fputs("| family | record | /api/status | key | type | unit | series | meaning |\n"
	      "|---|---|---|---|---|---|---|---|\n",
	      out);
	for (size_t i = 0; i < HC_C_MAX; i++) {
		const struct hc_counter_def *d = &hc_counter_defs[i];

		fprintf(out, "| %s | %s | %s | `%s` | %s | %s | `%s%s%s%s` | %s |\n",
			family_names[d->family], family_where[d->family][0],
			family_where[d->family][1], d->key,
			d->type == HC_CT_COUNTER ? "counter" : "gauge", unit_names[d->unit],
			d->metric, *d->labels ? "{" : "", d->labels, *d->labels ? "}" : "",
			d->help);
	}
	fputs("\nAliases (the same value under a second key, kept for readers of earlier "
	      "versions):\n\n| family | key | same as |\n|---|---|---|\n",
	      out);
	for (size_t i = 0; i < hc_counter_n_aliases; i++) {
		const struct hc_counter_alias *a = &hc_counter_aliases[i];
		const struct hc_counter_def *d = &hc_counter_defs[a->id];

		fprintf(out, "| %s | `%s` | %s `%s` |\n", family_names[a->family], a->key,
			family_names[d->family], d->key);
	}
	return ferror(out) ? -EIO : 0;
}
