// SPDX-License-Identifier: GPL-2.0-only
/*
 * serve/backend with --locks, fed the collector's records (serve/wire.h) over a socketpair as
 * serve's server half reads them: the lock store's paths, the kinds' counters and
 * lock_wait_ns come back as /api/locks, /api/histograms and /api/profile answer them; lock
 * nodes of the main flame graph keep their kind; without --locks the answers say tracking is
 * off and lock records are refused, counted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "serve/backend.h"
#include "serve/wire.h"

#define NS 1000000000ll
#define T0 1795341600ll /* 2026-11-22T10:00:00Z */

static struct hc_backend *backend(bool locks)
{
	struct hc_backend_opts o = {
		.store = {.retention_s = 3600, .max_bytes = 8 << 20, .period_ns = 10000000},
		.locks = locks,
		.lock_store = {.retention_s = 3600, .max_bytes = 1 << 20, .period_ns = 1},
		.version = "test",
	};
	struct hc_backend *b = hc_backend__new(&o);

	assert_non_null(b);
	return b;
}

/* What a collector with --locks sends for three seconds of contention. */
static void records(struct hc_wire_buf *w)
{
	static const struct hc_path_elem main_frames[] = {
		{.kind = HC_NODE_PROCESS, .name = "hc-workload", .id = 42, .offset = -1},
		{.kind = HC_NODE_THREAD, .name = "hc-locker", .id = 43, .offset = -1},
		{.kind = HC_NODE_KERNEL, .name = "down_write_killable", .offset = -1},
		{.kind = HC_NODE_LOCK, .name = "rwsem:W", .offset = -1},
	};
	static const struct hc_path_elem lock_frames[] = {
		{.kind = HC_NODE_PROCESS, .name = "hc-workload", .id = 42, .offset = -1},
		{.kind = HC_NODE_THREAD, .name = "hc-locker", .id = 43, .offset = -1},
		{.kind = HC_NODE_USER,
		 .name = "hc_lock_thread",
		 .module = "hc-workload",
		 .offset = -1},
		{.kind = HC_NODE_KERNEL, .name = "down_write_killable", .offset = -1},
		{.kind = HC_NODE_LOCK, .name = "rwsem:W mmap_lock", .offset = -1},
		{.kind = HC_NODE_KERNEL, .name = "_raw_spin_lock", .offset = -1},
		{.kind = HC_NODE_LOCK, .name = "spinlock", .offset = -1},
	};
	const uint32_t blocked[] = {1, 2, 3, 4}, oncpu[] = {1, 2, 3};
	const uint32_t rw[] = {1, 2, 3, 4, 5}, spin[] = {1, 2, 3, 6, 7};
	struct hc_wire_status status = {.period_ns = 1000000, .cpus = 2, .n_counters = HC_C_MAX};

	for (uint32_t i = 0; i < 4; i++)
		hc_wire__frame(w, i + 1, &main_frames[i]);
	hc_wire__add(w, T0, &(struct hc_weights){.off_cpu_ns = 5000000}, blocked, 4);
	hc_wire__add(w, T0 + 1, &(struct hc_weights){.on_cpu_ns = 10000000, .samples = 1}, oncpu,
		     3);
	hc_wire__add(w, T0 + 2, &(struct hc_weights){.on_cpu_ns = 10000000, .samples = 1}, oncpu,
		     3);
	for (uint32_t i = 0; i < 7; i++)
		hc_wire__lock_frame(w, i + 1, &lock_frames[i]);
	hc_wire__lock_add(w, T0, &(struct hc_weights){.off_cpu_ns = 3000000, .samples = 2}, rw, 5);
	hc_wire__lock_add(w, T0 + 1, &(struct hc_weights){.on_cpu_ns = 1000, .samples = 10}, spin,
			  5);
	hc_wire__lock_add(w, T0 + 2, &(struct hc_weights){.off_cpu_ns = 5000000, .samples = 1}, rw,
			  5);
	hc_wire__counter(w, T0, HC_STORE_C_LOCK_COUNT, "rwsem:W block", 2);
	hc_wire__counter(w, T0, HC_STORE_C_LOCK_WAIT_NS, "rwsem:W block", 3000000);
	hc_wire__counter(w, T0, HC_STORE_C_LOCK_MAX_NS, "rwsem:W block", 2000000);
	hc_wire__counter(w, T0 + 1, HC_STORE_C_LOCK_COUNT, "spinlock spin", 10);
	hc_wire__counter(w, T0 + 1, HC_STORE_C_LOCK_WAIT_NS, "spinlock spin", 1000);
	hc_wire__counter(w, T0 + 1, HC_STORE_C_LOCK_MAX_NS, "spinlock spin", 300);
	hc_wire__counter(w, T0 + 1, HC_STORE_C_LOCK_NO_STACK, "spinlock spin", 1);
	hc_wire__counter(w, T0 + 2, HC_STORE_C_LOCK_COUNT, "rwsem:W block", 1);
	hc_wire__counter(w, T0 + 2, HC_STORE_C_LOCK_WAIT_NS, "rwsem:W block", 5000000);
	hc_wire__counter(w, T0 + 2, HC_STORE_C_LOCK_MAX_NS, "rwsem:W block", 5000000);
	hc_wire__counter(w, T0 + 2, HC_STORE_C_LOCK_FAILED, "rwsem:W block", 1);
	hc_wire__hist(w, T0, HC_STORE_H_LOCK_WAIT_NS, 0, 1048576, 2, "rwsem:W block");
	hc_wire__hist(w, T0 + 1, HC_STORE_H_LOCK_WAIT_NS, 0, 64, 10, "spinlock spin");
	hc_wire__hist(w, T0 + 2, HC_STORE_H_LOCK_WAIT_NS, 0, 4194304, 1, "rwsem:W block");
	status.c.v[HC_C_LOCK_EVENTS] = 13;
	status.c.v[HC_C_LOCK_WAIT_NS] = 8001000;
	status.c.v[HC_C_LOCK_DROP_RINGBUF_FULL] = 4;
	status.c.v[HC_C_LOCK_DROP_UNMATCHED] = 1;
	status.c.v[HC_C_SAMPLES] = 7;
	status.c.v[HC_C_SYM_PID_REUSED] = 3;
	hc_wire__status(w, &status);
	hc_wire__seal(w, T0 + 2);
}

/* Send the records and let the backend read them all (the writer closes: end of stream). */
static void feed(struct hc_backend *b)
{
	struct hc_wire_buf w = {0};
	int sv[2], rc;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	records(&w);
	assert_int_equal(w.err, 0);
	assert_int_equal(hc_wire_buf__send(&w, sv[0], NULL), 0);
	close(sv[0]);
	while ((rc = hc_backend__ingest(b, sv[1])) > 0)
		;
	assert_int_equal(rc, 0);
	close(sv[1]);
	hc_wire_buf__release(&w);
}

static json_t *locks(struct hc_api_backend *api, int64_t from_s, int64_t to_s, int *status)
{
	struct hc_api_query q = {.from_ns = from_s * NS, .to_ns = to_s * NS, .max_nodes = 100};
	char why[256] = "";
	size_t len = 0;
	char *text;
	json_t *doc;

	*status = 0;
	text = api->locks(api->ctx, &q, &len, status, why, sizeof(why));
	if (!text) {
		assert_true(why[0]);
		return NULL;
	}
	assert_true(len > 0 && text[len - 1] == '\n');
	doc = json_loadb(text, len, 0, NULL);
	free(text);
	assert_non_null(doc);
	return doc;
}

static json_int_t num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);

	if (!json_is_integer(v))
		fail_msg("%s: not an integer", k);
	return json_integer_value(v);
}

/* The node at kinds/names from the root (NULL-ended), or NULL. */
static json_t *at(json_t *n, const char *const *names)
{
	for (; n && *names; names++) {
		json_t *c, *found = NULL;
		size_t i;

		json_array_foreach (json_object_get(n, "children"), i, c)
			if (!strcmp(json_string_value(json_object_get(c, "name")), *names))
				found = c;
		n = found;
	}
	return n;
}

static uint64_t series_count(json_t *h, const char *key)
{
	json_t *s, *bk;
	size_t i, k;
	uint64_t n = 0;

	json_array_foreach (json_object_get(h, "series"), i, s) {
		if (strcmp(json_string_value(json_object_get(s, "key")), key))
			continue;
		json_array_foreach (json_object_get(s, "buckets"), k, bk)
			n += (uint64_t)num(bk, "count");
	}
	return n;
}

static void test_locks_range(void **state)
{
	static const char *const rw_path[] = {"hc-workload",	   "hc-locker",
					      "hc_lock_thread",	   "down_write_killable",
					      "rwsem:W mmap_lock", NULL};
	struct hc_backend *b = backend(true);
	struct hc_api_backend api;
	json_t *doc, *by, *k, *lock, *h;
	int status;

	(void)state;
	hc_backend__api(b, &api);
	feed(b);

	doc = locks(&api, T0, T0 + 10, &status);
	assert_non_null(doc);
	assert_int_equal(num(doc, "events"), 13);
	assert_int_equal(num(doc, "wait_ns"), 8001000);
	assert_int_equal(num(doc, "failed"), 1);
	assert_int_equal(num(doc, "no_stack"), 1);
	/* the most waited-for first; spin and block apart; the maximum over the seconds */
	by = json_object_get(doc, "by_kind");
	assert_int_equal(json_array_size(by), 2);
	k = json_array_get(by, 0);
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "rwsem:W");
	assert_true(json_is_false(json_object_get(k, "spin")));
	assert_int_equal(num(k, "count"), 3);
	assert_int_equal(num(k, "total_ns"), 8000000);
	assert_int_equal(num(k, "max_ns"), 5000000);
	k = json_array_get(by, 1);
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "spinlock");
	assert_true(json_is_true(json_object_get(k, "spin")));
	assert_int_equal(num(k, "count"), 10);
	assert_int_equal(num(k, "max_ns"), 300);
	/* the collector's drops since start, the lock store's own */
	assert_int_equal(num(json_object_get(doc, "dropped"), "ringbuf_full"), 4);
	assert_int_equal(num(json_object_get(doc, "dropped"), "unmatched"), 1);
	assert_int_equal(num(json_object_get(doc, "dropped"), "evicted_early_s"), 0);
	assert_int_equal(num(json_object_get(doc, "dropped"), "store_error"), 0);
	/* clipped to what is held: T0 .. T0 + 2 */
	assert_int_equal(num(json_object_get(doc, "range"), "from_ms"), T0 * 1000);
	assert_int_equal(num(json_object_get(doc, "range"), "to_ms"), (T0 + 3) * 1000);
	/* the waiters' tree: contentions as samples, spin as on-CPU, block as off-CPU */
	assert_int_equal(num(json_object_get(doc, "flamegraph"), "samples"), 13);
	assert_int_equal(num(json_object_get(doc, "flamegraph"), "on_cpu_ns"), 1000);
	assert_int_equal(num(json_object_get(doc, "flamegraph"), "off_cpu_ns"), 8000000);
	lock = at(json_object_get(doc, "flamegraph"), rw_path);
	assert_non_null(lock);
	assert_string_equal(json_string_value(json_object_get(lock, "kind")), "lock");
	assert_int_equal(num(lock, "samples"), 3);
	assert_null(json_object_get(lock, "module"));
	/* lock_wait_ns, as many waits per series as by_kind counts */
	h = json_object_get(json_object_get(doc, "histograms"), "lock_wait_ns");
	assert_string_equal(json_string_value(json_object_get(h, "unit")), "ns");
	assert_int_equal(series_count(h, "rwsem:W block"), 3);
	assert_int_equal(series_count(h, "spinlock spin"), 10);
	json_decref(doc);

	/* one second: the spinlock's alone */
	doc = locks(&api, T0 + 1, T0 + 2, &status);
	assert_int_equal(num(doc, "events"), 10);
	assert_int_equal(json_array_size(json_object_get(doc, "by_kind")), 1);
	assert_null(at(json_object_get(doc, "flamegraph"), rw_path));
	json_decref(doc);

	/* pruned like /api/profile: 3 nodes kept, the rest folded, totals unchanged */
	{
		struct hc_api_query q = {
			.from_ns = T0 * NS, .to_ns = (T0 + 3) * NS, .max_nodes = 3};
		char why[128];
		size_t len;
		char *text = api.locks(api.ctx, &q, &len, &status, why, sizeof(why));

		doc = json_loadb(text, len, 0, NULL);
		free(text);
		assert_int_equal(
			num(json_object_get(json_object_get(doc, "range"), "pruned"), "nodes"),
			8 - 3);
		assert_int_equal(num(json_object_get(doc, "flamegraph"), "samples"), 13);
		json_decref(doc);
	}
	hc_backend__free(b);
}

static void test_locks_elsewhere(void **state)
{
	static const char *const main_lock[] = {"hc-workload", "hc-locker", "down_write_killable",
						"rwsem:W", NULL};
	struct hc_backend *b = backend(true);
	struct hc_api_query q = {.from_ns = T0 * NS,
				 .to_ns = (T0 + 3) * NS,
				 .max_nodes = 100,
				 .format = HC_API_FORMAT_JSON};
	struct hc_api_backend api;
	json_t *doc, *n;
	char why[128];
	size_t len;
	char *text;
	int status = 0;

	(void)state;
	hc_backend__api(b, &api);
	feed(b);
	/* the main flame graph's lock node comes back with its kind */
	text = api.profile(api.ctx, &q, &len, &status, why, sizeof(why));
	assert_non_null(text);
	doc = json_loadb(text, len, 0, NULL);
	free(text);
	n = at(json_object_get(doc, "flamegraph"), main_lock);
	assert_non_null(n);
	assert_string_equal(json_string_value(json_object_get(n, "kind")), "lock");
	assert_int_equal(num(n, "off_cpu_ns"), 5000000);
	/* lock_wait_ns among the profile's histograms, as record writes it */
	assert_int_equal(
		series_count(json_object_get(json_object_get(doc, "histograms"), "lock_wait_ns"),
			     "rwsem:W block"),
		3);
	json_decref(doc);
	/* and among /api/histograms */
	doc = api.histogram_names(api.ctx, &status, why, sizeof(why));
	assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "histograms"),
							     HC_STORE_H_LOCK_WAIT_NS)),
			    "lock_wait_ns");
	json_decref(doc);
	doc = api.histogram(api.ctx, "lock_wait_ns", &q, &status, why, sizeof(why));
	assert_int_equal(series_count(doc, "spinlock spin"), 10);
	json_decref(doc);
	/* /api/status: enabled, the collector's counts, the lock store */
	doc = api.status(api.ctx, &status, why, sizeof(why));
	n = json_object_get(doc, "locks");
	assert_true(json_is_true(json_object_get(n, "enabled")));
	assert_int_equal(num(n, "events"), 13);
	assert_true(num(json_object_get(n, "store"), "bytes") > 0);
	assert_int_equal(num(json_object_get(n, "store"), "max_bytes"), 1 << 20);
	assert_int_equal(num(json_object_get(n, "store"), "seconds"), 3);
	assert_true(num(json_object_get(doc, "memory"), "store_bytes") >
		    num(json_object_get(doc, "store"), "bytes"));
	json_decref(doc);
	hc_backend__free(b);
}

static void test_locks_off(void **state)
{
	struct hc_backend *b = backend(false);
	struct hc_api_query q = {.from_ns = T0 * NS, .to_ns = (T0 + 3) * NS, .max_nodes = 100};
	struct hc_api_backend api;
	json_t *doc;
	char why[128];
	int status = 0;

	(void)state;
	hc_backend__api(b, &api);
	feed(b);
	assert_null(locks(&api, T0, T0 + 3, &status));
	assert_int_equal(status, 409);
	why[0] = 0;
	assert_null(api.histogram(api.ctx, "lock_wait_ns", &q, &status, why, sizeof(why)));
	assert_int_equal(status, 409);
	assert_non_null(strstr(why, "--locks"));
	doc = api.histogram_names(api.ctx, &status, why, sizeof(why));
	assert_int_equal(json_array_size(json_object_get(doc, "histograms")), HC_STORE_H_SCHED_MAX);
	json_decref(doc);
	/* the lock records were refused and counted; the rest went in */
	doc = api.status(api.ctx, &status, why, sizeof(why));
	assert_true(json_is_false(json_object_get(json_object_get(doc, "locks"), "enabled")));
	assert_int_equal(json_object_size(json_object_get(doc, "locks")), 1);
	assert_true(num(json_object_get(doc, "store"), "store_errors") > 0);
	assert_int_equal(num(json_object_get(doc, "store"), "seconds"), 3);
	json_decref(doc);
	hc_backend__free(b);
}

/* The family a member of /api/status belongs to, from its path ("" at the top). */
static int status_family(const char *parent, const char *key)
{
	static const struct {
		const char *path;
		enum hc_counter_family f;
	} m[] = {
		{"lost", HC_F_LOST},
		{"scheduler", HC_F_SCHEDULER},
		{"symbolize", HC_F_SYMBOLIZE},
		{"unwind", HC_F_UNWIND},
		{"collector", HC_F_COLLECTOR},
		{"retention", HC_F_RETENTION},
		{"store", HC_F_STORE},
		{"memory", HC_F_MEMORY},
		{"locks.store", HC_F_LOCK_STORE},
		{"locks", HC_F_LOCKS},
	};

	if (!*parent)
		return hc_counter__lookup(HC_F_SERVE, key) >= 0 ? HC_F_SERVE : HC_F_SAMPLING;
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (!strncmp(parent, m[i].path, strlen(m[i].path)) &&
		    (parent[strlen(m[i].path)] == 0 || parent[strlen(m[i].path)] == '.'))
			return m[i].f;
	return -1;
}

/* Every number in doc (a member of /api/status at path) is a counter of counters.def whose
 * series /metrics carries. Returns how many were checked. */
static size_t check_numbers(json_t *doc, const char *path, const char *metrics)
{
	const char *k;
	json_t *v;
	size_t n = 0;

	json_object_foreach (doc, k, v) {
		char sub[256], key[256], line[256];
		const char *rel;
		int f, id;

		snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", k);
		if (json_is_object(v)) {
			n += check_numbers(v, sub, metrics);
			continue;
		}
		if (!json_is_number(v) || !strcmp(sub, "frequency_hz"))
			continue; /* a setting: hotcold_sampling_period_seconds is its series */
		f = status_family(path, k);
		if (f < 0)
			fail_msg("/api/status %s: no family", sub);
		/* the key within its family: what follows the family's object */
		if (f == HC_F_LOCK_STORE)
			rel = sub + strlen("locks.store.");
		else
			rel = sub + (*path ? strcspn(path, ".") + 1 : 0);
		snprintf(key, sizeof(key), "%s", rel);
		id = hc_counter__lookup((enum hc_counter_family)f, key);
		if (id < 0)
			fail_msg("/api/status %s: not in counters.def (family %s, key %s)", sub,
				 hc_counter_family_name((enum hc_counter_family)f), key);
		snprintf(line, sizeof(line), "\n%s%s%s%s ", hc_counter_defs[id].metric,
			 *hc_counter_defs[id].labels ? "{" : "", hc_counter_defs[id].labels,
			 *hc_counter_defs[id].labels ? "}" : "");
		if (!strstr(metrics, line))
			fail_msg("/api/status %s has no /metrics series (%s)", sub, line + 1);
		n++;
	}
	return n;
}

/* Every number /api/status gives is a counter with a /metrics series, and the status carries
 * what the collector sent, typed. */
static void test_status_metrics(void **state)
{
	struct hc_backend *b = backend(true);
	struct hc_api_backend api;
	json_t *doc;
	char why[128], *text;
	size_t len, n;
	int status = 0;

	(void)state;
	hc_backend__api(b, &api);
	feed(b);
	doc = api.status(api.ctx, &status, why, sizeof(why));
	assert_non_null(doc);
	assert_int_equal(json_integer_value(json_object_get(doc, "samples")), 7);
	assert_int_equal(json_integer_value(json_object_get(doc, "cpus")), 2);
	assert_int_equal(json_integer_value(
				 json_object_get(json_object_get(doc, "symbolize"), "pid_reused")),
			 3);
	text = api.metrics(api.ctx, &len, &status, why, sizeof(why));
	assert_non_null(text);
	assert_non_null(strstr(text, "\nhotcold_samples_total 7\n"));
	assert_non_null(strstr(text, "\nhotcold_lock_contentions_total 13\n"));
	assert_non_null(strstr(text, "\nhotcold_lock_wait_seconds_total 0.008001000\n"));
	n = check_numbers(doc, "", text);
	/* every family serve has, the lock ones included */
	assert_true(n >= 100);
	print_message("/api/status: %zu numbers, each with its /metrics series\n", n);
	free(text);
	json_decref(doc);
	hc_backend__free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_locks_range),
		cmocka_unit_test(test_locks_elsewhere),
		cmocka_unit_test(test_locks_off),
		cmocka_unit_test(test_status_metrics),
	};

	return cmocka_run_group_tests_name("backend", tests, NULL, NULL);
}
