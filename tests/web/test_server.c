// SPDX-License-Identifier: GPL-2.0-only
/*
 * A real server on 127.0.0.1 port 0 with a fake backend, spoken to with raw HTTP/1.x over a
 * TCP socket: status lines, headers and bodies as a browser or curl would see them, and the
 * exact query the backend received. Loopback only; every read has a timeout.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <jansson.h>

#include "client.h"
#include "tests.h"
#include "web/assets.h"
#include "web/server.h"

#define S 1000000000ll
#define NOW (1795341600ll * S) /* 2026-11-22T10:00:00Z, the pinned clock */

/* The fake backend ---------------------------------------------------------------------- */

enum call {
	CALL_NONE,
	CALL_PROFILE,
	CALL_NAMES,
	CALL_HIST,
	CALL_TIMELINE,
	CALL_STATUS,
	CALL_METRICS,
	CALL_LOCKS
};

struct fake {
	pthread_mutex_t lock;
	enum call last;
	unsigned int calls;
	struct hc_api_query q; /* the last query; q.comm points at comm[] */
	char comm[64];
	bool comm_null;
	char hist[80];
	int metrics_status; /* nonzero: metrics fails with this status */
	bool locks_off;	    /* locks answers as serve without --locks does */
};

static struct fake fake = {.lock = PTHREAD_MUTEX_INITIALIZER};

#define PROFILE_BODY "{\"format\":\"hotcold-profile/1\"}"
#define METRICS_BODY "# TYPE hotcold_samples_total counter\nhotcold_samples_total 712800\n"

static void record(enum call c, const struct hc_api_query *q, const char *hist)
{
	pthread_mutex_lock(&fake.lock);
	fake.last = c;
	fake.calls++;
	if (q) {
		fake.q = *q;
		fake.comm_null = !q->comm;
		snprintf(fake.comm, sizeof(fake.comm), "%s", q->comm ? q->comm : "");
	}
	snprintf(fake.hist, sizeof(fake.hist), "%s", hist ? hist : "");
	pthread_mutex_unlock(&fake.lock);
}

static char *fake_profile(void *ctx, const struct hc_api_query *q, size_t *len, int *status,
			  char *why, size_t why_len)
{
	(void)ctx;
	(void)status;
	(void)why;
	(void)why_len;
	record(CALL_PROFILE, q, NULL);
	*len = strlen(PROFILE_BODY);
	return strdup(PROFILE_BODY);
}

static json_t *fake_names(void *ctx, int *status, char *why, size_t why_len)
{
	(void)ctx;
	(void)status;
	(void)why;
	(void)why_len;
	record(CALL_NAMES, NULL, NULL);
	return json_pack("{s:[s,s]}", "histograms", "offcpu_us", "priority");
}

static json_t *fake_hist(void *ctx, const char *name, const struct hc_api_query *q, int *status,
			 char *why, size_t why_len)
{
	(void)ctx;
	record(CALL_HIST, q, name);
	if (strcmp(name, "offcpu_us")) {
		*status = 404;
		snprintf(why, why_len, "no histogram called %s", name);
		return NULL;
	}
	return json_pack("{s:s,s:s}", "name", "offcpu_us", "unit", "us");
}

static json_t *fake_timeline(void *ctx, const struct hc_api_query *q, int *status, char *why,
			     size_t why_len)
{
	(void)ctx;
	(void)status;
	(void)why;
	(void)why_len;
	record(CALL_TIMELINE, q, NULL);
	return json_pack("{s:I}", "step_ms", (json_int_t)(q->step_ns / 1000000));
}

static json_t *fake_status(void *ctx, int *status, char *why, size_t why_len)
{
	(void)ctx;
	(void)status;
	(void)why;
	(void)why_len;
	record(CALL_STATUS, NULL, NULL);
	return json_pack("{s:s,s:i}", "version", "0.1.0", "cpus", 2);
}

static char *fake_metrics(void *ctx, size_t *len, int *status, char *why, size_t why_len)
{
	(void)ctx;
	record(CALL_METRICS, NULL, NULL);
	if (fake.metrics_status) {
		*status = fake.metrics_status;
		snprintf(why, why_len, "no data yet");
		return NULL;
	}
	*len = strlen(METRICS_BODY);
	return strdup(METRICS_BODY);
}

#define LOCKS_BODY "{\"events\":3,\"by_kind\":[],\"flamegraph\":{}}"

static char *fake_locks(void *ctx, const struct hc_api_query *q, size_t *len, int *status,
			char *why, size_t why_len)
{
	(void)ctx;
	record(CALL_LOCKS, q, NULL);
	if (fake.locks_off) {
		*status = 409;
		snprintf(why, why_len, "lock tracking is off");
		return NULL;
	}
	*len = strlen(LOCKS_BODY);
	return strdup(LOCKS_BODY);
}

static const struct hc_api_backend backend = {
	.locks = fake_locks,
	.profile = fake_profile,
	.histogram_names = fake_names,
	.histogram = fake_hist,
	.timeline = fake_timeline,
	.status = fake_status,
	.metrics = fake_metrics,
};

static int64_t pinned_now(void *ctx)
{
	(void)ctx;
	return NOW;
}

static void fake_reset(void)
{
	pthread_mutex_lock(&fake.lock);
	fake.last = CALL_NONE;
	fake.calls = 0;
	memset(&fake.q, 0, sizeof(fake.q));
	fake.comm[0] = '\0';
	fake.hist[0] = '\0';
	fake.metrics_status = 0;
	fake.locks_off = false;
	pthread_mutex_unlock(&fake.lock);
}

/* The server under test --------------------------------------------------------------- */

static struct hc_server *server;
static struct hc_listen listener;
static unsigned short port;

static int setup(void **state)
{
	struct hc_server_opts o = {0};
	char why[256];
	const char *colon;

	(void)state;
	if (hc_listen__open("127.0.0.1:0", &listener, why, sizeof(why))) {
		fprintf(stderr, "listen: %s\n", why);
		return -1;
	}
	colon = strrchr(listener.addr, ':');
	port = (unsigned short)atoi(colon + 1);
	o.listen_fd = listener.fd;
	o.listen_addr = listener.addr;
	o.now_ns = pinned_now;
	server = hc_server__new(&o, &backend);
	if (!server)
		return -1;
	listener.fd = -1; /* the server's now */
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	hc_server__free(server);
	server = NULL;
	return 0;
}

/* The raw HTTP client (client.h), pointed at this server ------------------------------ */

static int connect_to(unsigned short p)
{
	int fd = client_connect(p);

	assert_true(fd >= 0 || fd == -ECONNREFUSED);
	return fd;
}

static void http_raw(const char *req, size_t req_len, struct resp *r)
{
	assert_int_equal(client_request(port, req, req_len, r), 0);
}

static void http(const char *method, const char *target, const char *host, const char *extra,
		 struct resp *r)
{
	char req[4096];
	int n;

	n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\n%s%s%sConnection: close\r\n%s\r\n",
		     method, target, host ? "Host: " : "", host ? host : "", host ? "\r\n" : "",
		     extra ? extra : "");
	assert_true(n > 0 && (size_t)n < sizeof(req));
	http_raw(req, (size_t)n, r);
}

static void get(const char *target, struct resp *r)
{
	http("GET", target, listener.addr, NULL, r);
}

static const char *header(const struct resp *r, const char *name, char *buf, size_t len)
{
	return resp_header(r, name, buf, len);
}

static void expect_header(const struct resp *r, const char *name, const char *value)
{
	char buf[512];

	if (!header(r, name, buf, sizeof(buf)))
		fail_msg("no %s header in:\n%s", name, r->raw);
	assert_string_equal(buf, value);
}

static void expect_common_headers(const struct resp *r)
{
	expect_header(r, "Cache-Control", "no-store");
	expect_header(r, "X-Content-Type-Options", "nosniff");
}

/* A JSON error: the status, the type, and "error" starting with `prefix` (NULL: any). */
static void expect_error(const struct resp *r, int status, const char *prefix)
{
	json_error_t jerr;
	json_t *doc;
	const char *msg;

	if (r->status != status)
		fail_msg("want %d, got:\n%s", status, r->raw);
	expect_header(r, "Content-Type", "application/json; charset=utf-8");
	expect_common_headers(r);
	doc = json_loadb(r->body, r->body_len, 0, &jerr);
	if (!doc)
		fail_msg("not JSON: %s\n%s", jerr.text, r->raw);
	msg = json_string_value(json_object_get(doc, "error"));
	assert_non_null(msg);
	assert_int_equal(json_object_size(doc), 1);
	if (prefix && strncmp(msg, prefix, strlen(prefix)))
		fail_msg("error '%s' does not start with '%s'", msg, prefix);
	json_decref(doc);
}

/* Routes --------------------------------------------------------------------------------- */

static void test_viewer(void **state)
{
	static const char *const targets[] = {"/", "/index.html", "/index.html?v=123", "/?_=1&x"};
	const struct hc_asset *a = hc_asset__find("/index.html");
	struct resp r;

	(void)state;
	assert_non_null(a);
	for (size_t i = 0; i < ARRAY_SIZE(targets); i++) {
		get(targets[i], &r);
		if (r.status != 200)
			fail_msg("%s: %s", targets[i], r.raw);
		expect_header(&r, "Content-Type", "text/html; charset=utf-8");
		expect_common_headers(&r);
		expect_header(&r, "X-Frame-Options", "DENY");
		expect_header(&r, "Referrer-Policy", "no-referrer");
		{
			char csp[512];

			assert_non_null(header(&r, "Content-Security-Policy", csp, sizeof(csp)));
			assert_non_null(strstr(csp, "default-src 'self'"));
			assert_non_null(strstr(csp, "connect-src 'self'"));
			assert_non_null(strstr(csp, "frame-ancestors 'none'"));
			assert_null(strstr(csp, "unsafe-inline"));
			assert_null(strstr(csp, "unsafe-eval"));
		}
		assert_int_equal(r.body_len, a->len);
		assert_memory_equal(r.body, a->data, a->len);
		resp_free(&r);
	}
}

/* The table is sorted and every entry is found by its own path. */
static void test_asset_table(void **state)
{
	(void)state;
	assert_true(hc_assets_n >= 1);
	for (size_t i = 0; i < hc_assets_n; i++) {
		assert_ptr_equal(hc_asset__find(hc_assets[i].path), &hc_assets[i]);
		if (i)
			assert_true(strcmp(hc_assets[i - 1].path, hc_assets[i].path) < 0);
	}
	assert_ptr_equal(hc_asset__find("/"), hc_asset__find("/index.html"));
	assert_null(hc_asset__find(""));
	assert_null(hc_asset__find("index.html"));
}

static void test_status(void **state)
{
	struct resp r;

	(void)state;
	fake_reset();
	get("/api/status", &r);
	assert_int_equal(r.status, 200);
	expect_header(&r, "Content-Type", "application/json; charset=utf-8");
	expect_common_headers(&r);
	expect_header(&r, "Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'");
	assert_string_equal(r.body, "{\"version\":\"0.1.0\",\"cpus\":2}");
	assert_int_equal(fake.last, CALL_STATUS);
	resp_free(&r);
}

static void test_histograms(void **state)
{
	struct resp r;

	(void)state;
	fake_reset();
	get("/api/histograms", &r);
	assert_int_equal(r.status, 200);
	expect_header(&r, "Content-Type", "application/json; charset=utf-8");
	assert_string_equal(r.body, "{\"histograms\":[\"offcpu_us\",\"priority\"]}");
	assert_int_equal(fake.last, CALL_NAMES);
	resp_free(&r);

	fake_reset();
	get("/api/histograms/offcpu_us?pid=42&comm=postgres&from=-5m", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"name\":\"offcpu_us\",\"unit\":\"us\"}");
	assert_int_equal(fake.last, CALL_HIST);
	assert_string_equal(fake.hist, "offcpu_us");
	assert_true(fake.q.has_pid);
	assert_int_equal(fake.q.pid, 42);
	assert_false(fake.q.has_tid);
	assert_string_equal(fake.comm, "postgres");
	assert_int_equal(fake.q.from_ns, NOW - 300 * S);
	assert_int_equal(fake.q.to_ns, NOW);
	resp_free(&r);

	/* the backend does not know it: its 404 and reason */
	fake_reset();
	get("/api/histograms/no_such", &r);
	expect_error(&r, 404, "no histogram called no_such");
	assert_int_equal(fake.last, CALL_HIST);
	resp_free(&r);

	/* not a histogram name at all: 404 without asking the backend */
	{
		static const char *const bad[] = {"/api/histograms/",	 "/api/histograms/Off",
						  "/api/histograms/a-b", "/api/histograms/a/b",
						  "/api/histograms/..",	 "/api/histograms//x"};

		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			fake_reset();
			get(bad[i], &r);
			expect_error(&r, 404, NULL);
			assert_int_equal(fake.calls, 0);
			resp_free(&r);
		}
	}
	/* tid and kind are not histogram parameters */
	fake_reset();
	get("/api/histograms/offcpu_us?tid=1", &r);
	expect_error(&r, 400, "tid:");
	assert_int_equal(fake.calls, 0);
	resp_free(&r);
}

static void test_profile_query(void **state)
{
	struct resp r;

	(void)state;
	fake_reset();
	get("/api/profile?from=-5m&kind=off&comm=post%67res&pid=42&tid=43&max_nodes=500", &r);
	assert_int_equal(r.status, 200);
	expect_header(&r, "Content-Type", "application/json; charset=utf-8");
	expect_common_headers(&r);
	assert_string_equal(r.body, PROFILE_BODY);
	assert_int_equal(fake.last, CALL_PROFILE);
	assert_int_equal(fake.q.from_ns, NOW - 300 * S);
	assert_int_equal(fake.q.to_ns, NOW);
	assert_true(fake.q.has_pid);
	assert_int_equal(fake.q.pid, 42);
	assert_true(fake.q.has_tid);
	assert_int_equal(fake.q.tid, 43);
	assert_string_equal(fake.comm, "postgres");
	assert_int_equal(fake.q.kind, HC_API_KIND_OFF);
	assert_int_equal(fake.q.max_nodes, 500);
	resp_free(&r);

	/* defaults */
	fake_reset();
	get("/api/profile", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(fake.q.from_ns, NOW - 60 * S);
	assert_int_equal(fake.q.to_ns, NOW);
	assert_false(fake.q.has_pid);
	assert_false(fake.q.has_tid);
	assert_true(fake.comm_null);
	assert_int_equal(fake.q.kind, HC_API_KIND_ALL);
	assert_int_equal(fake.q.max_nodes, HC_API_DEFAULT_MAX_NODES);
	resp_free(&r);

	/* RFC 3339 with an offset: raw '+' (form-decoded to a space), %2B, and unix ms */
	{
		static const char *const targets[] = {
			/* one element (in parentheses: not a missing comma) */
			("/api/profile?from=2026-11-22T10:59:00%2B01:00"
			 "&to=2026-11-22T11:00:00+01:00"),
			"/api/profile?from=2026-11-22T09:59:00Z&to=1795341600000",
			"/api/profile?from=1795341540000&to=now",
		};

		for (size_t i = 0; i < ARRAY_SIZE(targets); i++) {
			fake_reset();
			get(targets[i], &r);
			if (r.status != 200)
				fail_msg("%s: %s", targets[i], r.raw);
			assert_int_equal(fake.q.from_ns, NOW - 60 * S);
			assert_int_equal(fake.q.to_ns, NOW);
			resp_free(&r);
		}
	}
	/* a comm with a space, form-encoded both ways */
	fake_reset();
	get("/api/profile?comm=my+proc%20x", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(fake.comm, "my proc x");
	resp_free(&r);
}

/* The tool formats: same parameters, the format from the path, unpruned unless asked; Go's
 * handler: `seconds`, on-CPU by default, no from/to. */
static void test_profile_formats(void **state)
{
	struct resp r;

	(void)state;
	fake_reset();
	get("/api/profile.pprof?from=-5m&kind=off&pid=42", &r);
	assert_int_equal(r.status, 200);
	expect_header(&r, "Content-Type", "application/octet-stream");
	expect_header(&r, "Content-Disposition", "attachment; filename=\"hotcold.pb.gz\"");
	expect_common_headers(&r);
	assert_int_equal(fake.q.format, HC_API_FORMAT_PPROF);
	assert_int_equal(fake.q.from_ns, NOW - 300 * S);
	assert_int_equal(fake.q.kind, HC_API_KIND_OFF);
	assert_int_equal(fake.q.pid, 42);
	assert_int_equal(fake.q.max_nodes, HC_API_MAX_MAX_NODES);
	assert_int_equal(fake.q.last_ns, 0);
	resp_free(&r);

	fake_reset();
	get("/api/profile.folded?max_nodes=300", &r);
	assert_int_equal(r.status, 200);
	expect_header(&r, "Content-Type", "text/plain; charset=utf-8");
	assert_int_equal(fake.q.format, HC_API_FORMAT_FOLDED);
	assert_int_equal(fake.q.max_nodes, 300);
	assert_int_equal(fake.q.kind, HC_API_KIND_ALL);
	resp_free(&r);

	fake_reset();
	get("/api/profile", &r);
	assert_int_equal(fake.q.format, HC_API_FORMAT_JSON);
	resp_free(&r);

	fake_reset();
	get("/debug/pprof/profile?seconds=7", &r);
	assert_int_equal(r.status, 200);
	expect_header(&r, "Content-Type", "application/octet-stream");
	assert_int_equal(fake.q.format, HC_API_FORMAT_PPROF);
	assert_int_equal(fake.q.last_ns, 7 * S);
	assert_int_equal(fake.q.from_ns, NOW - 7 * S);
	assert_int_equal(fake.q.to_ns, NOW);
	assert_int_equal(fake.q.kind, HC_API_KIND_ON);
	assert_int_equal(fake.q.max_nodes, HC_API_MAX_MAX_NODES);
	resp_free(&r);

	fake_reset();
	get("/debug/pprof/profile", &r);
	assert_int_equal(fake.q.last_ns, 30 * S);
	resp_free(&r);
	fake_reset();
	get("/debug/pprof/profile?seconds=2&kind=all", &r);
	assert_int_equal(fake.q.kind, HC_API_KIND_ALL);
	resp_free(&r);

	{
		static const struct {
			const char *target, *why;
		} bad[] = {
			{"/debug/pprof/profile?seconds=0", "seconds:"},
			{"/debug/pprof/profile?seconds=-1", "seconds:"},
			{"/debug/pprof/profile?seconds=1.5", "seconds:"},
			{"/debug/pprof/profile?seconds=86401", "seconds:"},
			{"/debug/pprof/profile?seconds=5s", "seconds:"},
			{"/debug/pprof/profile?from=-5m", "from: unknown parameter"},
			{"/api/profile.pprof?seconds=5", "seconds: unknown parameter"},
			{"/api/profile.folded?step=1s", "step: unknown parameter"},
		};

		for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
			fake_reset();
			get(bad[i].target, &r);
			expect_error(&r, 400, bad[i].why);
			assert_int_equal(fake.calls, 0);
			resp_free(&r);
		}
	}
	get("/debug/pprof/", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	get("/api/profile.json", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
}

static void test_timeline_and_metrics(void **state)
{
	char ct[128];
	struct resp r;

	(void)state;
	fake_reset();
	get("/api/timeline?from=-1h&step=10s", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"step_ms\":10000}");
	assert_int_equal(fake.q.from_ns, NOW - 3600 * S);
	assert_int_equal(fake.q.to_ns, NOW);
	assert_int_equal(fake.q.step_ns, 10 * S);
	resp_free(&r);

	fake_reset();
	get("/api/timeline", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(fake.q.step_ns, 0); /* the backend picks */
	resp_free(&r);

	fake_reset();
	get("/api/timeline?from=-3h&step=1s", &r); /* 10800 one-second slots */
	expect_error(&r, 400, "step:");
	assert_int_equal(fake.calls, 0);
	resp_free(&r);

	fake_reset();
	get("/metrics", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(header(&r, "Content-Type", ct, sizeof(ct)));
	assert_non_null(strstr(ct, "text/plain; version=0.0.4"));
	expect_common_headers(&r);
	assert_string_equal(r.body, METRICS_BODY);
	resp_free(&r);
}

/* /api/locks: the time range and max_nodes as /api/profile takes them, no filters; the
 * backend's 409 (no --locks) passes through as a JSON error. */
static void test_locks(void **state)
{
	static const char *const refused[] = {
		"/api/locks?pid=1",   "/api/locks?comm=x",	    "/api/locks?kind=off",
		"/api/locks?step=1s", "/api/locks?from=-1m&to=-2m", "/api/locks?max_nodes=0",
	};
	char ct[128];
	struct resp r;

	(void)state;
	fake_reset();
	get("/api/locks?from=-5m&max_nodes=300", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(header(&r, "Content-Type", ct, sizeof(ct)));
	assert_non_null(strstr(ct, "application/json"));
	expect_common_headers(&r);
	assert_string_equal(r.body, LOCKS_BODY);
	assert_int_equal(fake.last, CALL_LOCKS);
	assert_int_equal(fake.q.from_ns, NOW - 300 * S);
	assert_int_equal(fake.q.to_ns, NOW);
	assert_int_equal(fake.q.max_nodes, 300);
	assert_false(fake.q.has_pid);
	resp_free(&r);

	fake_reset();
	get("/api/locks", &r); /* defaults: the last minute, max_nodes as /api/profile's */
	assert_int_equal(r.status, 200);
	assert_int_equal(fake.q.from_ns, NOW - 60 * S);
	assert_int_equal(fake.q.max_nodes, HC_API_DEFAULT_MAX_NODES);
	resp_free(&r);

	for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
		fake_reset();
		get(refused[i], &r);
		if (r.status != 400)
			fail_msg("%s: %s", refused[i], r.raw);
		expect_error(&r, 400, NULL);
		assert_int_equal(fake.calls, 0);
		resp_free(&r);
	}

	fake_reset();
	fake.locks_off = true;
	get("/api/locks", &r);
	expect_error(&r, 409, "lock tracking is off");
	resp_free(&r);
	fake_reset();
}

static void test_backend_errors(void **state)
{
	struct resp r;

	(void)state;
	fake_reset();
	fake.metrics_status = 503;
	get("/metrics", &r);
	expect_error(&r, 503, "no data yet");
	resp_free(&r);

	/* a backend that fails without a sensible status: 500 */
	fake_reset();
	fake.metrics_status = 200;
	get("/metrics", &r);
	expect_error(&r, 500, NULL);
	resp_free(&r);
	fake_reset();
}

static void test_head(void **state)
{
	static const char *const targets[] = {"/api/status", "/", "/metrics"};
	struct resp r;
	char len[32];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(targets); i++) {
		fake_reset();
		http("HEAD", targets[i], listener.addr, NULL, &r);
		if (r.status != 200)
			fail_msg("HEAD %s: %s", targets[i], r.raw);
		expect_common_headers(&r);
		/* the length of the body a GET would get, and no body */
		assert_non_null(header(&r, "Content-Length", len, sizeof(len)));
		assert_true(atoi(len) > 0);
		assert_int_equal(r.body_len, 0);
		resp_free(&r);
	}
}

static void test_methods(void **state)
{
	static const char *const methods[] = {"POST",  "PUT",	"DELETE", "OPTIONS",
					      "PATCH", "TRACE", "get"};
	struct resp r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
		fake_reset();
		http(methods[i], "/api/status", listener.addr, NULL, &r);
		if (r.status != 405)
			fail_msg("%s: %s", methods[i], r.raw);
		expect_error(&r, 405, NULL);
		expect_header(&r, "Allow", "GET, HEAD");
		assert_int_equal(fake.calls, 0);
		resp_free(&r);
	}
	/* with a body the server never reads */
	fake_reset();
	http("POST", "/api/profile", listener.addr,
	     "Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", &r);
	expect_error(&r, 405, NULL);
	expect_header(&r, "Allow", "GET, HEAD");
	assert_int_equal(fake.calls, 0);
	resp_free(&r);
}

static void test_host_header(void **state)
{
	char good[3][64];
	static const char *const bad[] = {"evil.example", "evil.example:8080",	    "127.0.0.2",
					  "localhost:1",  "localhost.evil.example", "0.0.0.0"};
	struct resp r;

	(void)state;
	snprintf(good[0], sizeof(good[0]), "localhost:%u", port);
	snprintf(good[1], sizeof(good[1]), "[::1]:%u", port);
	snprintf(good[2], sizeof(good[2]), "LOCALHOST");
	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		http("GET", "/api/status", good[i], NULL, &r);
		if (r.status != 200)
			fail_msg("Host %s: %s", good[i], r.raw);
		resp_free(&r);
	}
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		fake_reset();
		http("GET", "/api/status", bad[i], NULL, &r);
		expect_error(&r, 421, "Host");
		assert_int_equal(fake.calls, 0);
		resp_free(&r);
	}
	/* a bad Host wins over a bad method: nothing is said to a misdirected request */
	http("POST", "/api/status", "evil.example", NULL, &r);
	expect_error(&r, 421, NULL);
	resp_free(&r);

	/* two Host headers */
	http("GET", "/api/status", listener.addr, "Host: evil.example\r\n", &r);
	expect_error(&r, 421, "more than one Host");
	resp_free(&r);

	/* HTTP/1.1 without Host: libmicrohttpd 0.9.75 (not strict for clients) passes it on and
	 * we refuse it like a wrong one */
	{
		const char req[] = "GET /api/status HTTP/1.1\r\nConnection: close\r\n\r\n";

		http_raw(req, sizeof(req) - 1, &r);
		expect_error(&r, 421, "Host");
		resp_free(&r);
	}
	/* HTTP/1.0 without Host: 421 too (docs/api.md) */
	{
		const char req[] = "GET /api/status HTTP/1.0\r\n\r\n";

		http_raw(req, sizeof(req) - 1, &r);
		expect_error(&r, 421, "Host");
		resp_free(&r);
	}
	/* HTTP/1.0 with a good Host works */
	{
		char req[128];
		int n = snprintf(req, sizeof(req), "GET /api/status HTTP/1.0\r\nHost: %s\r\n\r\n",
				 listener.addr);

		http_raw(req, (size_t)n, &r);
		assert_int_equal(r.status, 200);
		resp_free(&r);
	}
}

static void test_not_found(void **state)
{
	static const char *const targets[] = {
		"/nope",
		"/api",
		"/api/",
		"/api/profile/",
		"/api/Profile",
		"/metrics/",
		"/../etc/passwd",
		"/%2e%2e/",
		"/%2e%2e/etc/passwd",
		"//index.html",
		"/./index.html",
		"/index%2ehtml",
		"/index.html/",
		"/index.html%00",
		"/static/index.html",
		"/web/static/index.html",
		"/%2findex.html",
		"/index.html;x",
		"/.",
		"/INDEX.HTML",
	};
	struct resp r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(targets); i++) {
		fake_reset();
		get(targets[i], &r);
		if (r.status != 404)
			fail_msg("%s: %s", targets[i], r.raw);
		expect_error(&r, 404, NULL);
		assert_int_equal(fake.calls, 0);
		resp_free(&r);
	}
	/* an absolute-form target names no path of ours */
	get("http://evil.example/api/status", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
}

static void test_bad_params(void **state)
{
	static const struct {
		const char *target, *prefix;
	} cases[] = {
		{"/api/profile?pid=abc", "pid:"},
		{"/api/profile?pid=0", "pid:"},
		{"/api/profile?tid=-1", "tid:"},
		{"/api/profile?frm=-5m", "frm: unknown parameter"},
		{"/api/profile?step=1s", "step: unknown parameter"},
		{"/api/profile?pid=1&pid=1", "pid: given more than once"},
		{"/api/profile?pid", "pid: no value"},
		{"/api/profile?pid=", "pid: no value"},
		{"/api/profile?kind=both", "kind:"},
		{"/api/profile?max_nodes=1000001", "max_nodes:"},
		{"/api/profile?comm=1234567890123456", "comm:"},
		{"/api/profile?comm=a%00b", "comm: %00"},
		{"/api/profile?comm=a%0ab", "comm: control character"},
		{"/api/profile?comm=a%zz", "comm: bad percent-encoding"},
		{"/api/profile?p%zzid=1", "query: bad percent-encoding"},
		{"/api/profile?from=yesterday", "from:"},
		{"/api/profile?from=now", "from: must be before to"},
		{"/api/profile?from=-1m&to=-2m", "from: must be before to"},
		{"/api/profile?to=2026-13-01T00:00:00Z", "to:"},
		{"/api/timeline?step=500ms", "step:"},
		{"/api/status?verbose=1", "verbose: unknown parameter"},
		{"/api/histograms?x=1", "x: unknown parameter"},
		{"/metrics?name=x", "name: unknown parameter"},
		{"/api/profile?a=1&b=2&c=3&d=4&e=5&f=6&g=7&h=8&i=9&j=10&k=11&l=12&m=13&n=14&o=15"
		 "&p=16&q=17",
		 "too many query parameters"},
	};
	struct resp r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		fake_reset();
		get(cases[i].target, &r);
		if (r.status != 400)
			fail_msg("%s: %s", cases[i].target, r.raw);
		expect_error(&r, 400, cases[i].prefix);
		assert_int_equal(fake.calls, 0);
		resp_free(&r);
	}
}

/* Oversized requests: above 8 KiB of URL + headers we refuse (our JSON 414/431); far above,
 * libmicrohttpd's memory pool refuses before we see the request (its own 414/431 pages). */
static void test_oversized(void **state)
{
	const size_t big = 9 * 1024, huge = 64 * 1024;
	char *req = malloc(huge + 512);
	struct resp r;
	int n;

	(void)state;
	if (!req) {
		fail();
		return;
	}

	/* URL just under the limit: fine */
	n = sprintf(req, "GET /index.html?v=");
	memset(req + n, 'a', 7 * 1024);
	n += 7 * 1024;
	n += sprintf(req + n, " HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", listener.addr);
	http_raw(req, (size_t)n, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);

	/* 9 KiB URL: our 414 */
	n = sprintf(req, "GET /index.html?v=");
	memset(req + n, 'a', big);
	n += (int)big;
	n += sprintf(req + n, " HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", listener.addr);
	http_raw(req, (size_t)n, &r);
	expect_error(&r, 414, NULL);
	resp_free(&r);

	/* 9 KiB header: our 431 */
	n = sprintf(req, "GET /api/status HTTP/1.1\r\nHost: %s\r\nX-Big: ", listener.addr);
	memset(req + n, 'b', big);
	n += (int)big;
	n += sprintf(req + n, "\r\nConnection: close\r\n\r\n");
	http_raw(req, (size_t)n, &r);
	expect_error(&r, 431, NULL);
	resp_free(&r);

	/* 16 KiB and 64 KiB URLs: libmicrohttpd's 414 */
	for (size_t len = 16 * 1024; len <= huge; len *= 4) {
		n = sprintf(req, "GET /");
		memset(req + n, 'a', len);
		n += (int)len;
		n += sprintf(req + n, " HTTP/1.1\r\nHost: %s\r\n\r\n", listener.addr);
		http_raw(req, (size_t)n, &r);
		if (r.status != 414)
			fail_msg("%zu-byte URL: status %d, %zu bytes read, read error %d", len,
				 r.status, r.raw_len, r.read_err);
		resp_free(&r);
	}

	/* 64 KiB header: libmicrohttpd's 431 */
	n = sprintf(req, "GET /api/status HTTP/1.1\r\nHost: %s\r\nX-Big: ", listener.addr);
	memset(req + n, 'b', huge);
	n += (int)huge;
	n += sprintf(req + n, "\r\n\r\n");
	http_raw(req, (size_t)n, &r);
	if (r.status != 431)
		fail_msg("64 KiB header: status %d, %zu bytes read, read error %d", r.status,
			 r.raw_len, r.read_err);
	resp_free(&r);
	free(req);
}

/* Several requests one after the other on one keep-alive connection, as a browser sends them. */
static void test_keep_alive(void **state)
{
	char req[256], buf[4096];
	int fd, n;

	(void)state;
	fd = connect_to(port);
	assert_true(fd >= 0);
	n = snprintf(req, sizeof(req), "GET /api/status HTTP/1.1\r\nHost: %s\r\n\r\n",
		     listener.addr);
	for (int i = 0; i < 3; i++) {
		size_t off = 0;

		assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
		/* one whole answer: it ends with the body (reads bounded by SO_RCVTIMEO) */
		while (off < sizeof(buf) - 1) {
			ssize_t got = recv(fd, buf + off, sizeof(buf) - 1 - off, 0);

			if (got <= 0)
				break;
			off += (size_t)got;
			buf[off] = '\0';
			if (strstr(buf, "\"cpus\":2}"))
				break;
		}
		buf[off] = '\0';
		if (strncmp(buf, "HTTP/1.1 200", 12) || !strstr(buf, "\"cpus\":2}") ||
		    strcasestr(buf, "Connection: close"))
			fail_msg("request %d on one connection:\n%s", i, buf);
	}
	close(fd);
}

/* Listening and the server's lifecycle -------------------------------------------------- */

static void test_listen_open(void **state)
{
	struct hc_listen a, b;
	char why[256], spec[64];

	(void)state;
	assert_int_equal(hc_listen__open("127.0.0.1:0", &a, why, sizeof(why)), 0);
	assert_true(a.fd >= 0);
	assert_int_equal(strncmp(a.addr, "127.0.0.1:", 10), 0);
	assert_true(atoi(a.addr + 10) > 0); /* the real port, not 0 */

	/* the same address again: in use */
	snprintf(spec, sizeof(spec), "%s", a.addr);
	assert_int_equal(hc_listen__open(spec, &b, why, sizeof(why)), -EADDRINUSE);
	assert_int_equal(b.fd, -1);
	assert_non_null(strstr(why, "in use"));
	hc_listen__close(&a);
	assert_int_equal(a.fd, -1);
	hc_listen__close(&a); /* twice: no-op */

	assert_int_equal(hc_listen__open("nonsense", &b, why, sizeof(why)), -EINVAL);
	assert_int_equal(hc_listen__open("example.com:80", &b, why, sizeof(why)), -EINVAL);
	/* TEST-NET-1 is not configured on this machine */
	assert_int_equal(hc_listen__open("192.0.2.1:0", &b, why, sizeof(why)), -EADDRNOTAVAIL);

	/* IPv6 loopback, where the kernel has it */
	if (hc_listen__open("[::1]:0", &b, why, sizeof(why)) == 0) {
		assert_int_equal(strncmp(b.addr, "[::1]:", 6), 0);
		assert_true(atoi(b.addr + 6) > 0);
		hc_listen__close(&b);
	}
}

/* Pool sizes 1 and 4 both serve; free stops listening; bad options are refused. */
static void test_lifecycle(void **state)
{
	struct hc_server_opts o = {0};
	struct hc_listen l;
	struct hc_server *s;
	char why[256];

	(void)state;
	for (unsigned int threads = 1; threads <= 4; threads += 3) {
		unsigned short p;
		char req[128];
		struct resp r;
		int fd, n;

		assert_int_equal(hc_listen__open("127.0.0.1:0", &l, why, sizeof(why)), 0);
		p = (unsigned short)atoi(strrchr(l.addr, ':') + 1);
		o.listen_fd = l.fd;
		o.listen_addr = l.addr;
		o.threads = threads;
		s = hc_server__new(&o, &backend);
		assert_non_null(s);

		{
			unsigned short saved = port;

			port = p;
			n = snprintf(
				req, sizeof(req),
				"GET /api/status HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
				l.addr);
			http_raw(req, (size_t)n, &r);
			port = saved;
		}
		assert_int_equal(r.status, 200);
		resp_free(&r);
		hc_server__free(s);
		fd = connect_to(p);
		assert_int_equal(fd, -ECONNREFUSED);
	}
	hc_server__free(NULL);

	/* refused options leave the fd to the caller */
	assert_int_equal(hc_listen__open("127.0.0.1:0", &l, why, sizeof(why)), 0);
	o.listen_fd = l.fd;
	o.listen_addr = NULL;
	errno = 0;
	assert_null(hc_server__new(&o, &backend));
	assert_int_equal(errno, EINVAL);
	o.listen_addr = l.addr;
	o.threads = 8;
	o.max_connections = 4;
	assert_null(hc_server__new(&o, &backend));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(close(l.fd), 0); /* still open, still ours */
}

int run_server_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_asset_table),	cmocka_unit_test(test_viewer),
		cmocka_unit_test(test_status),		cmocka_unit_test(test_histograms),
		cmocka_unit_test(test_profile_query),	cmocka_unit_test(test_timeline_and_metrics),
		cmocka_unit_test(test_profile_formats), cmocka_unit_test(test_locks),
		cmocka_unit_test(test_backend_errors),	cmocka_unit_test(test_head),
		cmocka_unit_test(test_methods),		cmocka_unit_test(test_host_header),
		cmocka_unit_test(test_not_found),	cmocka_unit_test(test_bad_params),
		cmocka_unit_test(test_oversized),	cmocka_unit_test(test_keep_alive),
		cmocka_unit_test(test_listen_open),	cmocka_unit_test(test_lifecycle),
	};

	return cmocka_run_group_tests_name("web/server", tests, setup, teardown);
}
