// SPDX-License-Identifier: GPL-2.0-only
/*
 * `hotcold-profile/1` JSON encoder (docs/profile-schema.md). Gather, then render: the whole
 * document is built as a jansson tree, then dumped compact with keys in insertion order.
 *
 * Strings from the system (comms, symbols, module paths, counter names) may hold any bytes;
 * jansson refuses invalid UTF-8, so every string goes through hc__utf8_sanitize(), which replaces
 * each byte that does not start a well-formed UTF-8 sequence with U+FFFD.
 *
 * The flame graph is encoded recursively, one C frame per tree level. Paths are
 * process + thread + at most ~127 user + ~127 kernel frames deep (~260 levels), and each tree
 * level is two JSON levels (node object, children array); jansson's own parser refuses
 * documents nested deeper than 2048, so trees deeper than HC_JSON_MAX_TREE_DEPTH are refused
 * (EOVERFLOW) rather than written unreadable. That also bounds our recursion.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile/jstream.h"
#include "profile/weights.h"
#include "profile/tree.h"
#include "profile/profile.h"
#include "profile/encode.h"
#include "profile/profile_internal.h"

/* Every tree level is 2 JSON levels; 1000 levels leave room for jansson's 2048 limit. */
#define HC_JSON_MAX_TREE_DEPTH 1000

/* Steals val. -ENOMEM when val is NULL (a failed constructor) or the insert fails. */
static int jset(json_t *obj, const char *key, json_t *val)
{
	if (!val)
		return -ENOMEM;
	return json_object_set_new_nocheck(obj, key, val) ? -ENOMEM : 0;
}

/* Adds count under a key from outside (sanitized); repeated keys are summed. */
static int jadd_count(json_t *obj, const char *key, uint64_t count)
{
	json_t *old, *val;
	size_t len;
	char *valid;
	int err;

	valid = hc__utf8_sanitize(key, &len);
	if (!valid)
		return -ENOMEM;
	old = json_object_get(obj, valid);
	if (old && json_is_integer(old))
		count += (uint64_t)json_integer_value(old);
	val = ju64(count);
	err = jset(obj, valid, val);
	if (valid != key)
		free(valid);
	return err;
}

static json_t *counts_to_json(const struct hc_count *c, size_t n)
{
	json_t *obj = json_object();

	if (!obj)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (jadd_count(obj, c[i].name ? c[i].name : "", c[i].count))
			goto err_decref;
	}
	return obj;

err_decref:
	json_decref(obj);
	return NULL;
}

/* RFC 3339, UTC, milliseconds (truncated): 2026-11-22T08:01:02.345Z */
json_t *hc_json__rfc3339_ms(int64_t ns)
{
	int64_t sec = ns / 1000000000, rem = ns % 1000000000;
	char buf[64];
	struct tm tm;
	time_t t;

	if (rem < 0) {
		rem += 1000000000;
		sec--;
	}
	t = (time_t)sec;
	if (!gmtime_r(&t, &tm))
		return json_null();
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(rem / 1000000));
	return json_string(buf);
}

/* An integral frequency prints as an integer (99, not 99.0); NaN/inf as null. */
static json_t *jnumber(double v)
{
	if (!isfinite(v))
		return json_null();
	if (v == floor(v) && fabs(v) < 9007199254740992.0) /* 2^53: exact as an integer */
		return json_integer((json_int_t)v);
	return json_real(v);
}

/* A node's own fields, in schema order, without `children`. */
static json_t *node_fields_to_json(const struct hc_node *n)
{
	const struct hc_weights *w = hc_node__weights(n);
	json_t *obj;
	char hex[32];

	obj = json_object();
	if (!obj)
		return NULL;
	if (jset(obj, "name", jstr(hc_node__name(n))) ||
	    jset(obj, "kind", json_string(hc_node_kind__name(hc_node__kind(n)))))
		goto err_decref;
	switch (hc_node__kind(n)) {
	case HC_NODE_PROCESS:
		if (jset(obj, "pid", ju64(hc_node__id(n))))
			goto err_decref;
		break;
	case HC_NODE_THREAD:
		if (jset(obj, "tid", ju64(hc_node__id(n))))
			goto err_decref;
		break;
	case HC_NODE_WAKER:
		if (jset(obj, "pid", ju64((uint64_t)hc_node__offset(n))) ||
		    jset(obj, "tid", ju64(hc_node__id(n))))
			goto err_decref;
		break;
	case HC_NODE_LOCK:
		break;
	case HC_NODE_USER:
	case HC_NODE_KERNEL:
		if (hc_node__module(n) && jset(obj, "module", jstr(hc_node__module(n))))
			goto err_decref;
		if (hc_node__offset(n) >= 0) {
			snprintf(hex, sizeof(hex), "0x%" PRIx64, (uint64_t)hc_node__offset(n));
			if (jset(obj, "offset", json_string(hex)))
				goto err_decref;
		}
		/* only when true: profiles without inline frames read as before */
		if (hc_node__inlined(n) && jset(obj, "inlined", json_true()))
			goto err_decref;
		break;
	case HC_NODE_ROOT:
		break;
	}
	if (jset(obj, "value", ju64(hc_weights__value(w))) ||
	    jset(obj, "on_cpu_ns", ju64(w->on_cpu_ns)) ||
	    jset(obj, "off_cpu_ns", ju64(w->off_cpu_ns)) ||
	    jset(obj, "runqueue_ns", ju64(w->runqueue_ns)) ||
	    jset(obj, "samples", ju64(w->samples)))
		goto err_decref;
	return obj;
err_decref:
	json_decref(obj);
	return NULL;
}

/* The tree may not have been sorted: sort a copy, the profile is const. */
static const struct hc_node **sorted_children(const struct hc_node *n, size_t nc)
{
	const struct hc_node **sorted = malloc(nc * sizeof(*sorted));

	if (!sorted)
		return NULL;
	for (size_t i = 0; i < nc; i++)
		sorted[i] = hc_node__child(n, i);
	qsort(sorted, nc, sizeof(*sorted), hc__node_ptr_cmp);
	return sorted;
}

static json_t *node_to_json(const struct hc_node *n, unsigned int depth)
{
	size_t nc = hc_node__child_count(n);
	const struct hc_node **sorted = NULL;
	json_t *obj, *children;
	int saved_errno;

	if (depth > HC_JSON_MAX_TREE_DEPTH) {
		errno = EOVERFLOW;
		return NULL;
	}
	obj = node_fields_to_json(n);
	if (!obj)
		goto err_nomem;
	children = json_array();
	if (jset(obj, "children", children))
		goto err_decref;
	if (!nc)
		return obj;

	sorted = sorted_children(n, nc);
	if (!sorted)
		goto err_decref;
	for (size_t i = 0; i < nc; i++) {
		json_t *c = node_to_json(sorted[i], depth + 1);

		if (!c)
			goto err_free_sorted; /* errno set by the callee */
		if (json_array_append_new(children, c))
			goto err_free_sorted_nomem;
	}
	free(sorted);
	return obj;

err_free_sorted_nomem:
	errno = ENOMEM;
err_free_sorted:
	saved_errno = errno;
	free(sorted);
	json_decref(obj);
	errno = saved_errno;
	return NULL;
err_decref:
	json_decref(obj);
err_nomem:
	errno = ENOMEM;
	return NULL;
}

/*
 * Streaming writer for hc_profile__write_json() (profile/jstream.h says why). The bytes are
 * identical to json_dumpf(hc_profile__to_json(p), JSON_COMPACT): tests/profile checks it.
 */
static void jstream_node(struct jstream *js, const struct hc_node *n, unsigned int depth)
{
	const struct hc_weights *w = hc_node__weights(n);
	size_t nc = hc_node__child_count(n);
	const struct hc_node **sorted;
	char hex[32];

	if (depth > HC_JSON_MAX_TREE_DEPTH) {
		js->err = -EOVERFLOW;
		return;
	}
	/* Same keys, same order as node_fields_to_json(). */
	JSTREAM_LIT(js, "{\"name\":");
	jstream_str(js, hc_node__name(n));
	JSTREAM_LIT(js, ",\"kind\":");
	jstream_str(js, hc_node_kind__name(hc_node__kind(n)));
	switch (hc_node__kind(n)) {
	case HC_NODE_PROCESS:
		JSTREAM_LIT(js, ",\"pid\":");
		jstream_u64(js, hc_node__id(n));
		break;
	case HC_NODE_THREAD:
		JSTREAM_LIT(js, ",\"tid\":");
		jstream_u64(js, hc_node__id(n));
		break;
	case HC_NODE_WAKER:
		JSTREAM_LIT(js, ",\"pid\":");
		jstream_u64(js, (uint64_t)hc_node__offset(n));
		JSTREAM_LIT(js, ",\"tid\":");
		jstream_u64(js, hc_node__id(n));
		break;
	case HC_NODE_LOCK:
		break;
	case HC_NODE_USER:
	case HC_NODE_KERNEL:
		if (hc_node__module(n)) {
			JSTREAM_LIT(js, ",\"module\":");
			jstream_str(js, hc_node__module(n));
		}
		if (hc_node__offset(n) >= 0) {
			snprintf(hex, sizeof(hex), "0x%" PRIx64, (uint64_t)hc_node__offset(n));
			JSTREAM_LIT(js, ",\"offset\":");
			jstream_str(js, hex);
		}
		if (hc_node__inlined(n))
			JSTREAM_LIT(js, ",\"inlined\":true");
		break;
	case HC_NODE_ROOT:
		break;
	}
	JSTREAM_LIT(js, ",\"value\":");
	jstream_u64(js, hc_weights__value(w));
	JSTREAM_LIT(js, ",\"on_cpu_ns\":");
	jstream_u64(js, w->on_cpu_ns);
	JSTREAM_LIT(js, ",\"off_cpu_ns\":");
	jstream_u64(js, w->off_cpu_ns);
	JSTREAM_LIT(js, ",\"runqueue_ns\":");
	jstream_u64(js, w->runqueue_ns);
	JSTREAM_LIT(js, ",\"samples\":");
	jstream_u64(js, w->samples);
	JSTREAM_LIT(js, ",\"children\":[");
	if (nc && !js->err) {
		sorted = sorted_children(n, nc);
		if (!sorted) {
			js->err = -ENOMEM;
			return;
		}
		for (size_t i = 0; i < nc && !js->err; i++) {
			if (i)
				JSTREAM_LIT(js, ",");
			jstream_node(js, sorted[i], depth + 1);
		}
		free(sorted);
	}
	JSTREAM_LIT(js, "]}");
}

static json_t *sampling_to_json(const struct hc_profile *p)
{
	json_t *s, *per_cpu;

	s = json_object();
	if (!s)
		return NULL;
	if (jset(s, "frequency_hz", jnumber(p->sampling.frequency_hz)) ||
	    jset(s, "period_ns", ju64(p->sampling.period_ns)) ||
	    jset(s, "cpus", ju64(p->sampling.cpus)) ||
	    jset(s, "expected_samples", ju64(p->sampling.expected_samples)) ||
	    jset(s, "samples", ju64(p->sampling.samples)) ||
	    jset(s, "idle_samples", ju64(p->sampling.idle_samples)) ||
	    jset(s, "filtered_samples", ju64(p->sampling.filtered_samples)))
		goto err_decref;

	per_cpu = json_array();
	if (jset(s, "per_cpu", per_cpu))
		goto err_decref;
	for (size_t i = 0; i < p->sampling.n_per_cpu; i++) {
		const struct hc_cpu_samples *c = &p->sampling.per_cpu[i];
		json_t *o = json_object();

		if (!o || json_array_append_new(per_cpu, o))
			goto err_decref;
		if (jset(o, "cpu", ju64(c->cpu)) || jset(o, "expected", ju64(c->expected)) ||
		    jset(o, "samples", ju64(c->samples)) || jset(o, "idle_ns", ju64(c->idle_ns)))
			goto err_decref;
	}
	if (jset(s, "lost", counts_to_json(p->sampling.lost, p->sampling.n_lost)))
		goto err_decref;
	return s;

err_decref:
	json_decref(s);
	return NULL;
}

static json_t *totals_to_json(const struct hc_profile *p)
{
	json_t *t = json_object();

	if (!t)
		return NULL;
	if (jset(t, "on_cpu_ns", ju64(p->totals.on_cpu_ns)) ||
	    jset(t, "off_cpu_ns", ju64(p->totals.off_cpu_ns)) ||
	    jset(t, "runqueue_ns", ju64(p->totals.runqueue_ns)) ||
	    jset(t, "idle_ns", ju64(p->totals.idle_ns)) ||
	    jset(t, "cpu_unclaimed_ns", ju64(p->totals.cpu_unclaimed_ns)) ||
	    jset(t, "kernel_samples", ju64(p->totals.kernel_samples)) ||
	    jset(t, "user_samples", ju64(p->totals.user_samples))) {
		json_decref(t);
		return NULL;
	}
	return t;
}

/* Everything before `flamegraph`, in schema order. */
static json_t *header_to_json(const struct hc_profile *p)
{
	json_t *doc = json_object();

	if (!doc)
		return NULL;
	if (jset(doc, "schema", json_string(HC_PROFILE_SCHEMA)) ||
	    jset(doc, "host", jstr(p->host)) || jset(doc, "kernel", jstr(p->kernel)) ||
	    jset(doc, "started_at", hc_json__rfc3339_ms(p->started_at_ns)) ||
	    jset(doc, "duration_ns", ju64(p->duration_ns)) ||
	    jset(doc, "sampling", sampling_to_json(p)) || jset(doc, "totals", totals_to_json(p)) ||
	    jset(doc, "symbolize", counts_to_json(p->symbolize, p->n_symbolize)) ||
	    (p->scheduler && jset(doc, "scheduler", json_incref(p->scheduler))) ||
	    (p->unwind && jset(doc, "unwind", json_incref(p->unwind))) ||
	    (p->range && jset(doc, "range", json_incref(p->range)))) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

json_t *hc_tree__to_json(const struct hc_tree *tree)
{
	return node_to_json(hc_tree__root(tree), 0);
}

json_t *hc_profile__to_json(const struct hc_profile *p)
{
	json_t *doc, *flame;
	int saved_errno;

	if (!p || !p->tree) {
		errno = EINVAL;
		return NULL;
	}
	doc = header_to_json(p);
	if (!doc)
		goto err_nomem;

	flame = node_to_json(hc_tree__root(p->tree), 0);
	if (!flame)
		goto err_decref; /* ENOMEM or EOVERFLOW */
	if (jset(doc, "flamegraph", flame))
		goto err_decref_nomem;
	if (p->locks && p->lock_tree) {
		json_t *l = json_deep_copy(p->locks), *lf;

		if (!l || jset(doc, "locks", l))
			goto err_decref_nomem;
		lf = node_to_json(hc_tree__root(p->lock_tree), 0);
		if (!lf)
			goto err_decref;
		if (jset(l, "flamegraph", lf))
			goto err_decref_nomem;
	}
	if (jset(doc, "histograms", p->histograms ? json_incref(p->histograms) : json_object()))
		goto err_decref_nomem;
	return doc;

err_decref_nomem:
	errno = ENOMEM;
err_decref:
	saved_errno = errno;
	json_decref(doc);
	errno = saved_errno;
	return NULL;
err_nomem:
	errno = ENOMEM;
	return NULL;
}

int hc_profile__write_json(const struct hc_profile *p, FILE *out)
{
	struct jstream js = {.out = out};
	json_t *head;
	size_t n;

	if (!p || !p->tree)
		return -EINVAL;
	head = header_to_json(p);
	if (!head)
		return -ENOMEM;
	/* The header object without its closing brace; then the tree, the histograms, '}'. */
	n = jstream_dump(&js, head, JSON_COMPACT);
	json_decref(head);
	if (n < 3 || js.buf[n - 1] != '}') {
		free(js.buf);
		return -ENOMEM;
	}
	jstream_raw(&js, js.buf, n - 1);
	JSTREAM_LIT(&js, ",\"flamegraph\":");
	jstream_node(&js, hc_tree__root(p->tree), 0);
	if (p->locks && p->lock_tree) {
		/*
		 * The section's members, then its flame graph, streamed as the main one. Not
		 * json_dumps(): out of memory while it writes a key, it leaves the key out and
		 * still returns the text (jansson 2.14, akheron/jansson#655); json_dumpb()
		 * allocates nothing.
		 */
		size_t ln = js.err ? 0 : jstream_dump(&js, p->locks, JSON_COMPACT);

		if (ln < 2 || js.buf[ln - 1] != '}') {
			free(js.buf);
			return js.err ? js.err : -ENOMEM;
		}
		JSTREAM_LIT(&js, ",\"locks\":");
		jstream_raw(&js, js.buf, ln - 1);
		if (ln > 2)
			JSTREAM_LIT(&js, ",");
		JSTREAM_LIT(&js, "\"flamegraph\":");
		jstream_node(&js, hc_tree__root(p->lock_tree), 0);
		JSTREAM_LIT(&js, "}");
	}
	JSTREAM_LIT(&js, ",\"histograms\":");
	jstream_value(&js, p->histograms ? json_incref(p->histograms) : json_object());
	JSTREAM_LIT(&js, "}\n");
	return jstream_finish(&js);
}

int hc_json__write_with_tree(const json_t *obj, const char *key, const struct hc_tree *tree,
			     FILE *out)
{
	struct jstream js = {.out = out};
	json_t *k;
	size_t n;

	if (!json_is_object(obj) || !key || !tree)
		return -EINVAL;
	n = jstream_dump(&js, obj, JSON_COMPACT);
	if (n < 2 || js.buf[n - 1] != '}') {
		free(js.buf);
		return -ENOMEM;
	}
	/* the object without its closing brace, then ,"key": the tree streamed, '}' */
	jstream_raw(&js, js.buf, n - 1);
	if (n > 2)
		JSTREAM_LIT(&js, ",");
	k = json_string(key);
	if (!k) {
		free(js.buf);
		return -ENOMEM;
	}
	jstream_value(&js, k); /* takes the reference */
	JSTREAM_LIT(&js, ":");
	jstream_node(&js, hc_tree__root(tree), 0);
	JSTREAM_LIT(&js, "}\n");
	return jstream_finish(&js);
}
