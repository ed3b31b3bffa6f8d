// SPDX-License-Identifier: GPL-2.0-only
/*
 * `hotcold-profile/1` decoder: the inverse of encode_json.c (docs/profile-schema.md), for
 * `hotcold report` and anything else that reads saved profiles. The input may be hostile (it
 * is fuzzed), so every member is checked before it is used, and the first problem found is
 * refused with the JSON path where it is, e.g.
 * `flamegraph.children[2].children[0]: children worth more than the node (off_cpu_ns)`.
 *
 * What is accepted is what the encoder writes:
 *  - counts are integers in 0..INT64_MAX, or reals from 2^63 to 2^64 (how the encoder writes
 *    a u64 above INT64_MAX; 2^64 itself is what UINT64_MAX rounds to, and reads back as it);
 *  - `started_at` is RFC 3339 (any fraction and UTC offset; the encoder writes UTC with ms);
 *  - offsets are "0x" and 1..16 hex digits, at most INT64_MAX;
 *  - tree levels as record and serve make them: the root ("all") at the top, processes under
 *    it, threads under processes, then user, kernel and waker nodes in any order (a thread's
 *    stacks may be empty, serve's merged identities are pid/tid 0), at most 1000 levels deep
 *    (the encoders' limit); every node's value is on + off-CPU + run-queue ns, and its
 *    children are never worth more than it in any of on_cpu_ns, off_cpu_ns, runqueue_ns and
 *    samples (checked on each node as the document writes it);
 *  - `inlined`, when present, is a boolean on a user or kernel frame (absent reads as false;
 *    other nodes may not have it); an inlined frame is a node of its own, not its namesake;
 *  - siblings that are the same node (kind, name, module, pid/tid, offset, inlined), which
 *    earlier versions wrote (two `[unknown]` frames of one module without an offset), are
 *    merged: the later one's weights add to the earlier one's and its children are decoded under
 *    it, merging again where they meet the earlier one's. The merged tree keeps both rules:
 *    each merged weight is a sum of siblings' weights, so it stays within the parent (and
 *    within a u64), and a merged node's children sum to no more than the nodes merged;
 *  - members added after the first revision of /1 (`sampling.per_cpu[].idle_ns`,
 *    `totals.cpu_unclaimed_ns`, `inlined`) may be absent and read as 0 (false); unknown
 *    members are ignored (docs/profile-schema.md: readers must ignore keys they do not know).
 *
 * The tree is rebuilt node by node with the inclusive weights the document states (the
 * private builder hc__tree_add_child(), O(1) per node), iteratively with an explicit stack,
 * so a hostile document cannot exhaust the C stack. Decoding what the encoder wrote and
 * encoding it again gives the same bytes (tests/profile/test_decode.c); a document with
 * merged siblings encodes as the merged tree.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "profile/hist.h"
#include "profile/weights.h"
#include "profile/tree.h"
#include "profile/profile.h"
#include "profile/encode.h"
#include "profile/profile_internal.h"

/* The encoders' limit (encode_json.c): the root is depth 0. */
#define HC_DECODE_MAX_TREE_DEPTH 1000

/* ---- reasons ---- */

struct dec {
	char *why;
	size_t why_len;
	size_t used;
};

static void why_vadd(struct dec *d, const char *fmt, va_list ap)
{
	int n;

	if (!d->why || d->used + 1 >= d->why_len)
		return;
	n = vsnprintf(d->why + d->used, d->why_len - d->used, fmt, ap);
	if (n > 0)
		d->used += (size_t)n < d->why_len - d->used ? (size_t)n : d->why_len - d->used - 1;
}

static void why_add(struct dec *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	why_vadd(d, fmt, ap);
	va_end(ap);
}

/* "PATH: reason"; returns -EINVAL. */
static int fail(struct dec *d, const char *path, const char *fmt, ...)
{
	va_list ap;

	d->used = 0;
	if (path && *path)
		why_add(d, "%s: ", path);
	va_start(ap, fmt);
	why_vadd(d, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- members ---- */

#define TWO_63 9223372036854775808.0

/* A count as the encoder writes it (see the top of the file). */
static bool get_u64(const json_t *v, uint64_t *out)
{
	double r;

	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return false;
		*out = (uint64_t)json_integer_value(v);
		return true;
	}
	if (!json_is_real(v))
		return false;
	r = json_real_value(v);
	if (!(r >= TWO_63 && r <= 2.0 * TWO_63) || r != floor(r))
		return false;
	*out = r == 2.0 * TWO_63 ? UINT64_MAX : (uint64_t)r;
	return true;
}

/* Member key of obj as a u64 in 0..max; absent is an error unless dflt is given. */
static int member_u64(struct dec *d, const json_t *obj, const char *path, const char *key,
		      uint64_t max, const uint64_t *dflt, uint64_t *out)
{
	const json_t *v = json_object_get(obj, key);

	if (!v) {
		if (dflt) {
			*out = *dflt;
			return 0;
		}
		return fail(d, path, "member \"%s\" missing", key);
	}
	if (!get_u64(v, out) || *out > max) {
		if (max == UINT64_MAX)
			return fail(d, path, "%s: not a non-negative integer", key);
		return fail(d, path, "%s: not an integer in 0..%llu", key, (unsigned long long)max);
	}
	return 0;
}

static bool is_c_string(const json_t *v)
{
	return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
}

/* A string member (null allowed when nullable: *out = NULL), strdup'ed. */
static int member_strdup(struct dec *d, const json_t *obj, const char *path, const char *key,
			 bool nullable, char **out)
{
	const json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v)
		return fail(d, path, "member \"%s\" missing", key);
	if (nullable && json_is_null(v))
		return 0;
	if (!is_c_string(v))
		return fail(d, path, "%s: not a string%s", key,
			    json_is_string(v) ? " without NUL characters" : "");
	*out = strdup(json_string_value(v));
	return *out ? 0 : -ENOMEM;
}

static int member_object(struct dec *d, const json_t *obj, const char *path, const char *key,
			 const json_t **out)
{
	*out = json_object_get(obj, key);
	if (!*out)
		return fail(d, path, "member \"%s\" missing", key);
	if (!json_is_object(*out))
		return fail(d, path, "%s: not an object", key);
	return 0;
}

/* ---- started_at: RFC 3339 ---- */

static bool digits(const char *s, int n, int *out)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

/* Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (era arithmetic: the
 * year is shifted to start in March so the leap day comes last). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM) -> ns since the epoch (int64). */
static bool parse_rfc3339(const char *s, int64_t *ns)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	int64_t frac = 0, secs, r;
	size_t i = 19, nd = 0;

	if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
	    s[7] != '-' || !digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
	    !digits(s + 11, 2, &h) || s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
	    !digits(s + 17, 2, &sec))
		return false;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 ||
	    mi > 59 || sec > 60) /* 60: a leap second, counted into the next minute as POSIX does */
		return false;
	if (s[i] == '.') {
		for (i++; s[i] >= '0' && s[i] <= '9'; i++, nd++) {
			if (nd < 9)
				frac = frac * 10 + (s[i] - '0');
		}
		if (!nd)
			return false;
		for (; nd < 9; nd++)
			frac *= 10;
	}
	if ((s[i] == 'Z' || s[i] == 'z') && s[i + 1] == '\0') {
		sign = 0;
	} else if ((s[i] == '+' || s[i] == '-') && digits(s + i + 1, 2, &oh) && s[i + 3] == ':' &&
		   digits(s + i + 4, 2, &om) && s[i + 6] == '\0' && oh <= 23 && om <= 59) {
		sign = s[i] == '+' ? 1 : -1;
	} else {
		return false;
	}
	secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec -
	       sign * (oh * 3600 + om * 60);
	if (__builtin_mul_overflow(secs, (int64_t)1000000000, &r) ||
	    __builtin_add_overflow(r, frac, &r))
		return false;
	*ns = r;
	return true;
}

/* ---- header ---- */

static int decode_counts(struct dec *d, const json_t *obj, const char *path, struct hc_profile *p,
			 int (*add)(struct hc_profile *, const char *, uint64_t))
{
	const char *key;
	size_t key_len;
	json_t *v;
	uint64_t count;
	int err;

	/* the iteration macros take a non-const object; nothing is modified */
	json_object_keylen_foreach((json_t *)obj, key, key_len, v)
	{
		if (strlen(key) != key_len)
			return fail(d, path, "a key holds a NUL character");
		if (!get_u64(v, &count))
			return fail(d, path, "%s: not a non-negative integer", key);
		err = add(p, key, count);
		if (err)
			return err;
	}
	return 0;
}

static int decode_sampling(struct dec *d, const json_t *s, struct hc_profile *p)
{
	static const uint64_t zero = 0;
	const json_t *freq = json_object_get(s, "frequency_hz"), *per_cpu, *lost;
	char path[64];
	int err;

	if (!freq)
		return fail(d, "sampling", "member \"frequency_hz\" missing");
	if (json_is_null(freq)) {
		p->sampling.frequency_hz = NAN; /* the encoder's null: not finite */
	} else if (json_is_number(freq) && json_number_value(freq) >= 0 &&
		   isfinite(json_number_value(freq))) {
		p->sampling.frequency_hz = json_number_value(freq);
	} else {
		return fail(d, "sampling", "frequency_hz: not a non-negative number or null");
	}
	{
		uint64_t cpus;

		err = member_u64(d, s, "sampling", "cpus", UINT32_MAX, NULL, &cpus);
		if (err)
			return err;
		p->sampling.cpus = (uint32_t)cpus;
	}
	err = member_u64(d, s, "sampling", "period_ns", UINT64_MAX, NULL, &p->sampling.period_ns);
	if (!err)
		err = member_u64(d, s, "sampling", "expected_samples", UINT64_MAX, NULL,
				 &p->sampling.expected_samples);
	if (!err)
		err = member_u64(d, s, "sampling", "samples", UINT64_MAX, NULL,
				 &p->sampling.samples);
	if (!err)
		err = member_u64(d, s, "sampling", "idle_samples", UINT64_MAX, NULL,
				 &p->sampling.idle_samples);
	if (!err)
		err = member_u64(d, s, "sampling", "filtered_samples", UINT64_MAX, &zero,
				 &p->sampling.filtered_samples);
	if (err)
		return err;

	per_cpu = json_object_get(s, "per_cpu");
	if (!per_cpu)
		return fail(d, "sampling", "member \"per_cpu\" missing");
	if (!json_is_array(per_cpu))
		return fail(d, "sampling", "per_cpu: not an array");
	if (json_array_size(per_cpu)) {
		p->sampling.per_cpu =
			calloc(json_array_size(per_cpu), sizeof(*p->sampling.per_cpu));
		if (!p->sampling.per_cpu)
			return -ENOMEM;
	}
	for (size_t i = 0; i < json_array_size(per_cpu); i++) {
		const json_t *c = json_array_get(per_cpu, i);
		struct hc_cpu_samples *out = &p->sampling.per_cpu[i];
		uint64_t cpu;

		snprintf(path, sizeof(path), "sampling.per_cpu[%zu]", i);
		if (!json_is_object(c))
			return fail(d, path, "not an object");
		err = member_u64(d, c, path, "cpu", UINT32_MAX, NULL, &cpu);
		if (!err)
			err = member_u64(d, c, path, "expected", UINT64_MAX, NULL, &out->expected);
		if (!err)
			err = member_u64(d, c, path, "samples", UINT64_MAX, NULL, &out->samples);
		if (!err) /* added within /1: older documents lack it */
			err = member_u64(d, c, path, "idle_ns", UINT64_MAX, &zero, &out->idle_ns);
		if (err)
			return err;
		out->cpu = (uint32_t)cpu;
		p->sampling.n_per_cpu = i + 1;
	}

	err = member_object(d, s, "sampling", "lost", &lost);
	if (err)
		return err;
	return decode_counts(d, lost, "sampling.lost", p, hc_profile__add_lost);
}

static int decode_totals(struct dec *d, const json_t *t, struct hc_profile *p)
{
	static const uint64_t zero = 0;
	int err;

	err = member_u64(d, t, "totals", "on_cpu_ns", UINT64_MAX, NULL, &p->totals.on_cpu_ns);
	if (!err)
		err = member_u64(d, t, "totals", "off_cpu_ns", UINT64_MAX, NULL,
				 &p->totals.off_cpu_ns);
	if (!err)
		err = member_u64(d, t, "totals", "runqueue_ns", UINT64_MAX, NULL,
				 &p->totals.runqueue_ns);
	if (!err)
		err = member_u64(d, t, "totals", "idle_ns", UINT64_MAX, NULL, &p->totals.idle_ns);
	if (!err) /* added within /1: older documents lack it */
		err = member_u64(d, t, "totals", "cpu_unclaimed_ns", UINT64_MAX, &zero,
				 &p->totals.cpu_unclaimed_ns);
	if (!err)
		err = member_u64(d, t, "totals", "kernel_samples", UINT64_MAX, NULL,
				 &p->totals.kernel_samples);
	if (!err)
		err = member_u64(d, t, "totals", "user_samples", UINT64_MAX, NULL,
				 &p->totals.user_samples);
	return err;
}

/* An optional member that is copied as it is (scheduler, range). */
static int copy_optional(struct dec *d, const json_t *doc, const char *key, json_t **out)
{
	const json_t *v = json_object_get(doc, key);

	if (!v)
		return 0;
	if (!json_is_object(v))
		return fail(d, key, "not an object");
	*out = json_deep_copy(v);
	return *out ? 0 : -ENOMEM;
}

static int decode_histograms(struct dec *d, const json_t *h, struct hc_profile *p)
{
	char hwhy[160];
	const char *key;
	json_t *v;

	json_object_foreach ((json_t *)h, key, v) {
		struct hc_hist *hist = hc_hist__from_json(v, hwhy, sizeof(hwhy));

		if (!hist) {
			if (errno == ENOMEM)
				return -ENOMEM;
			return fail(d, NULL, "histograms.%s: %s", key, hwhy);
		}
		hc_hist__free(hist);
	}
	json_decref(p->histograms);
	p->histograms = json_deep_copy(h);
	return p->histograms ? 0 : -ENOMEM;
}

/* ---- the tree ---- */

struct dnode {
	const json_t *children;
	size_t n, next;
	size_t pos; /* index in the parent's children */
	uint32_t idx;
	struct hc_weights w;	/* inclusive, as stated */
	struct hc_weights kids; /* the children's, summed so far */
};

struct tree_dec {
	struct dec *d;
	struct dnode *st;  /* st[k]: the open node at depth k */
	const char *where; /* "flamegraph", "locks.flamegraph" */
};

#define PATH_ENDS 3 /* levels shown at either end of a long path */

/* "flamegraph.children[i]...[.key]: reason" for the node at depth. */
static int node_fail(struct tree_dec *t, size_t depth, const char *key, const char *fmt, ...)
{
	struct dec *d = t->d;
	va_list ap;

	d->used = 0;
	why_add(d, "%s", t->where);
	for (size_t i = 1; i <= depth; i++) {
		/* a path 1000 levels deep would crowd out the reason: elide its middle */
		if (depth > 2 * PATH_ENDS && i == PATH_ENDS + 1) {
			why_add(d, "<%zu levels>", depth - 2 * PATH_ENDS);
			i = depth - PATH_ENDS;
			continue;
		}
		why_add(d, ".children[%zu]", t->st[i].pos);
	}
	if (key)
		why_add(d, ".%s", key);
	why_add(d, ": ");
	va_start(ap, fmt);
	why_vadd(d, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static const char *const weight_keys[] = {"on_cpu_ns", "off_cpu_ns", "runqueue_ns", "samples"};

static uint64_t weight_get(const struct hc_weights *w, size_t i)
{
	return i == 0	? w->on_cpu_ns
	       : i == 1 ? w->off_cpu_ns
	       : i == 2 ? w->runqueue_ns
			: w->samples;
}

static uint64_t *weight_field(struct hc_weights *w, size_t i)
{
	switch (i) {
	case 0:
		return &w->on_cpu_ns;
	case 1:
		return &w->off_cpu_ns;
	case 2:
		return &w->runqueue_ns;
	default:
		return &w->samples;
	}
}

static int node_u64(struct tree_dec *t, size_t depth, const json_t *n, const char *key,
		    uint64_t *out)
{
	const json_t *v = json_object_get(n, key);

	if (!v)
		return node_fail(t, depth, NULL, "member \"%s\" missing", key);
	if (!get_u64(v, out))
		return node_fail(t, depth, key, "not a non-negative integer");
	return 0;
}

/* "0x" and 1..16 hex digits, <= INT64_MAX. */
static bool parse_offset(const char *s, int64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (s[0] != '0' || s[1] != 'x')
		return false;
	for (i = 2; s[i]; i++) {
		int c = s[i], x;

		if (c >= '0' && c <= '9')
			x = c - '0';
		else if (c >= 'a' && c <= 'f')
			x = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			x = c - 'A' + 10;
		else
			return false;
		if (i >= 2 + 16)
			return false;
		v = v << 4 | (uint64_t)x;
	}
	if (i == 2 || v > (uint64_t)INT64_MAX)
		return false;
	*out = (int64_t)v;
	return true;
}

static const char *depth_expects(size_t depth)
{
	return depth == 0   ? "root"
	       : depth == 1 ? "process"
	       : depth == 2 ? "thread"
			    : "user, kernel or waker";
}

/* Checks the node at depth (t->st[depth].pos already set) and fills e, w, *children. */
static int parse_node(struct tree_dec *t, size_t depth, const json_t *n, struct hc_path_elem *e,
		      struct hc_weights *w, const json_t **children)
{
	const json_t *name = json_object_get(n, "name"), *kind = json_object_get(n, "kind");
	const json_t *module, *offset, *inlined;
	uint64_t value, sum, id;
	enum hc_node_kind k;
	int err;

	if (!json_is_object(n))
		return node_fail(t, depth, NULL, "not an object");
	if (!name)
		return node_fail(t, depth, NULL, "member \"name\" missing");
	if (!is_c_string(name))
		return node_fail(t, depth, "name", "not a string without NUL characters");
	if (!kind)
		return node_fail(t, depth, NULL, "member \"kind\" missing");
	if (!json_is_string(kind))
		return node_fail(t, depth, "kind", "not a string");
	for (k = HC_NODE_ROOT; k <= HC_NODE_KIND_MAX; k++) {
		if (strcmp(json_string_value(kind), hc_node_kind__name(k)) == 0 &&
		    json_string_length(kind) == strlen(hc_node_kind__name(k)))
			break;
	}
	if (k > HC_NODE_KIND_MAX)
		return node_fail(t, depth, "kind", "unknown kind \"%s\"", json_string_value(kind));
	if ((depth == 0) != (k == HC_NODE_ROOT) || (depth == 1) != (k == HC_NODE_PROCESS) ||
	    (depth == 2) != (k == HC_NODE_THREAD))
		return node_fail(t, depth, "kind", "\"%s\" at depth %zu (%s expected)",
				 hc_node_kind__name(k), depth, depth_expects(depth));

	*e = (struct hc_path_elem){.kind = k, .name = json_string_value(name), .offset = -1};
	/* only frames are inlined into a caller */
	if (k != HC_NODE_USER && k != HC_NODE_KERNEL && json_object_get(n, "inlined"))
		return node_fail(t, depth, "inlined", "only user and kernel frames are inlined");
	switch (e->kind) {
	case HC_NODE_ROOT:
		/* hc_tree names its root; anything else would not survive a round trip */
		if (strcmp(e->name, "all") != 0)
			return node_fail(t, depth, "name", "the root is named \"all\"");
		break;
	case HC_NODE_PROCESS:
		err = node_u64(t, depth, n, "pid", &e->id);
		if (err)
			return err;
		break;
	case HC_NODE_THREAD:
		err = node_u64(t, depth, n, "tid", &e->id);
		if (err)
			return err;
		break;
	case HC_NODE_WAKER:
		/* the tree keeps a waker's pid in the offset (profile.h) */
		err = node_u64(t, depth, n, "pid", &id);
		if (!err)
			err = node_u64(t, depth, n, "tid", &e->id);
		if (err)
			return err;
		e->offset = (int64_t)id;
		break;
	case HC_NODE_LOCK:
		break;
	case HC_NODE_USER:
	case HC_NODE_KERNEL:
		inlined = json_object_get(n, "inlined");
		if (inlined && !json_is_boolean(inlined))
			return node_fail(t, depth, "inlined", "not a boolean");
		e->inlined = json_is_true(inlined);
		module = json_object_get(n, "module");
		if (module && !is_c_string(module))
			return node_fail(t, depth, "module", "not a string without NUL characters");
		e->module = module ? json_string_value(module) : NULL;
		offset = json_object_get(n, "offset");
		if (offset && (!json_is_string(offset) ||
			       !parse_offset(json_string_value(offset), &e->offset) ||
			       strlen(json_string_value(offset)) != json_string_length(offset)))
			return node_fail(t, depth, "offset",
					 "not a hex string \"0x...\" up to 0x7fffffffffffffff");
		break;
	}

	err = node_u64(t, depth, n, "value", &value);
	for (size_t i = 0; i < 4 && !err; i++)
		err = node_u64(t, depth, n, weight_keys[i], weight_field(w, i));
	if (err)
		return err;
	if (__builtin_add_overflow(w->on_cpu_ns, w->off_cpu_ns, &sum) ||
	    __builtin_add_overflow(sum, w->runqueue_ns, &sum) || sum != value)
		return node_fail(t, depth, "value", "not on_cpu_ns + off_cpu_ns + runqueue_ns");

	*children = json_object_get(n, "children");
	if (!*children)
		return node_fail(t, depth, NULL, "member \"children\" missing");
	if (!json_is_array(*children))
		return node_fail(t, depth, "children", "not an array");
	return 0;
}

/* Adds child weights w to the open node at depth; refuses children worth more than it. */
static int add_to_parent(struct tree_dec *t, size_t depth, const struct hc_weights *w)
{
	struct dnode *p = &t->st[depth];

	for (size_t i = 0; i < 4; i++) {
		uint64_t *kid = weight_field(&p->kids, i);

		if (__builtin_add_overflow(*kid, weight_get(w, i), kid) ||
		    *kid > weight_get(&p->w, i))
			return node_fail(t, depth, NULL, "children worth more than the node (%s)",
					 weight_keys[i]);
	}
	return 0;
}

static int decode_tree(struct dec *d, const json_t *root, struct hc_tree *tree, const char *where)
{
	struct tree_dec t = {.d = d, .where = where};
	struct hc_path_elem e;
	struct hc_weights w;
	const json_t *children;
	size_t sp = 0;
	int err;

	t.st = calloc(HC_DECODE_MAX_TREE_DEPTH + 1, sizeof(*t.st));
	if (!t.st)
		return -ENOMEM;
	err = parse_node(&t, 0, root, &e, &w, &children);
	if (err)
		goto out;
	hc__tree_add_weights(tree, 0, &w);
	t.st[0] = (struct dnode){.children = children, .n = json_array_size(children), .w = w};

	for (;;) {
		struct dnode *top = &t.st[sp];
		const json_t *c;
		size_t pos;
		int64_t idx;

		if (top->next == top->n) {
			if (!sp)
				break;
			sp--;
			continue;
		}
		pos = top->next++;
		c = json_array_get(top->children, pos);
		if (sp + 1 > HC_DECODE_MAX_TREE_DEPTH) {
			err = node_fail(&t, sp, "children", "nested deeper than %d levels",
					HC_DECODE_MAX_TREE_DEPTH);
			goto out;
		}
		memset(&t.st[sp + 1], 0, sizeof(t.st[sp + 1]));
		t.st[sp + 1].pos = pos;
		err = parse_node(&t, sp + 1, c, &e, &w, &children);
		if (!err)
			err = add_to_parent(&t, sp, &w);
		if (err)
			goto out;
		/* the same node as an earlier sibling comes back as that sibling, its weights
		 * summed (see the top of the file); its children then go under it as well */
		idx = hc__tree_add_child(tree, top->idx, &e, &w);
		if (idx < 0) {
			err = (int)idx;
			goto out;
		}
		sp++;
		t.st[sp].children = children;
		t.st[sp].n = json_array_size(children);
		t.st[sp].idx = (uint32_t)idx;
		t.st[sp].w = w;
	}
out:
	free(t.st);
	return err;
}

/* `locks` (docs/locks.md): by_kind checked, the waiters' flame graph decoded as the main one;
 * the other members are kept as they are. */
static int decode_locks(struct dec *d, const json_t *doc, struct hc_profile *p)
{
	const json_t *l = json_object_get(doc, "locks"), *by, *fg, *k;
	size_t i;
	int err;

	if (!l)
		return 0;
	if (!json_is_object(l))
		return fail(d, "locks", "not an object");
	by = json_object_get(l, "by_kind");
	if (!json_is_array(by))
		return fail(d, "locks", "member \"by_kind\" missing or not an array");
	json_array_foreach (by, i, k) {
		uint64_t v;

		d->used = 0;
		if (!json_is_object(k) || !is_c_string(json_object_get(k, "kind")) ||
		    !json_is_boolean(json_object_get(k, "spin")))
			return fail(d, "locks.by_kind", "entry %zu: not {kind, spin, ...}", i);
		if (member_u64(d, k, "locks.by_kind[]", "count", UINT64_MAX, NULL, &v) ||
		    member_u64(d, k, "locks.by_kind[]", "total_ns", UINT64_MAX, NULL, &v) ||
		    member_u64(d, k, "locks.by_kind[]", "max_ns", UINT64_MAX, NULL, &v))
			return -EINVAL;
	}
	fg = json_object_get(l, "flamegraph");
	if (!json_is_object(fg))
		return fail(d, "locks", "member \"flamegraph\" missing or not an object");
	p->lock_tree = hc_tree__new();
	p->locks = json_deep_copy(l);
	if (!p->lock_tree || !p->locks)
		return -ENOMEM;
	json_object_del(p->locks, "flamegraph");
	err = decode_tree(d, fg, p->lock_tree, "locks.flamegraph");
	return err;
}

/* ---- the document ---- */

static int decode(struct dec *d, const json_t *doc, struct hc_profile *p)
{
	const json_t *v, *obj;
	int err;

	if (!json_is_object(doc))
		return fail(d, NULL, "not a JSON object");
	v = json_object_get(doc, "schema");
	if (!v)
		return fail(d, NULL, "member \"schema\" missing");
	if (!json_is_string(v) || strcmp(json_string_value(v), HC_PROFILE_SCHEMA) != 0 ||
	    json_string_length(v) != strlen(HC_PROFILE_SCHEMA))
		return fail(d, "schema", "not \"" HC_PROFILE_SCHEMA "\"");

	err = member_strdup(d, doc, NULL, "host", true, &p->host);
	if (!err)
		err = member_strdup(d, doc, NULL, "kernel", true, &p->kernel);
	if (err)
		return err;
	v = json_object_get(doc, "started_at");
	if (!v)
		return fail(d, NULL, "member \"started_at\" missing");
	if (!is_c_string(v) || !parse_rfc3339(json_string_value(v), &p->started_at_ns))
		return fail(d, "started_at", "not an RFC 3339 time within int64 ns of the epoch");
	err = member_u64(d, doc, NULL, "duration_ns", UINT64_MAX, NULL, &p->duration_ns);
	if (err)
		return err;

	err = member_object(d, doc, NULL, "sampling", &obj);
	if (!err)
		err = decode_sampling(d, obj, p);
	if (!err)
		err = member_object(d, doc, NULL, "totals", &obj);
	if (!err)
		err = decode_totals(d, obj, p);
	if (!err)
		err = member_object(d, doc, NULL, "symbolize", &obj);
	if (!err)
		err = decode_counts(d, obj, "symbolize", p, hc_profile__add_symbolize);
	if (!err)
		err = copy_optional(d, doc, "scheduler", &p->scheduler);
	if (!err)
		err = copy_optional(d, doc, "unwind", &p->unwind);
	if (!err)
		err = copy_optional(d, doc, "range", &p->range);
	if (!err)
		err = member_object(d, doc, NULL, "flamegraph", &obj);
	if (!err)
		err = decode_tree(d, obj, p->tree, "flamegraph");
	if (!err)
		err = decode_locks(d, doc, p);
	if (!err)
		err = member_object(d, doc, NULL, "histograms", &obj);
	if (!err)
		err = decode_histograms(d, obj, p);
	if (err)
		return err;
	/* the document's order is the encoder's; sorting makes any input canonical */
	hc_tree__sort(p->tree);
	if (p->lock_tree)
		hc_tree__sort(p->lock_tree);
	return 0;
}

int hc_profile__from_json(const json_t *doc, struct hc_profile **out, char *why, size_t why_len)
{
	struct dec d = {.why = why, .why_len = why_len};
	struct hc_profile *p;
	int err;

	if (why && why_len)
		why[0] = '\0';
	if (out)
		*out = NULL;
	if (!out)
		return fail(&d, NULL, "no place for the result");
	p = hc_profile__new();
	if (!p) {
		fail(&d, NULL, "out of memory");
		return -ENOMEM;
	}
	err = decode(&d, doc, p);
	if (err) {
		if (err != -EINVAL)
			fail(&d, NULL, "out of memory");
		hc_profile__free(p);
		return err;
	}
	*out = p;
	return 0;
}
