// SPDX-License-Identifier: GPL-2.0-only
/*
 * serve/push against a scripted Pyroscope stand-in on 127.0.0.1 (libmicrohttpd): what arrives
 * (method, path, query, multipart parts, the decoded pprof), consecutive windows, retries,
 * rejections, a bounded queue while the receiver is down, and a prompt stop while a request
 * hangs. Every wait is bounded by a deadline.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>
#include <microhttpd.h>

#include "profile/weights.h"
#include "profile/tree.h"
#include "profile/profile.h"
#include "profile/encode.h"
#include "serve/push.h"
#include "tests/pprof/pprof_read.h"

#define NS 1000000000ll
/* How long a test waits for what must happen before it gives up: a guard against a hang, not a
 * latency bound (a loaded CI machine stalls for seconds), and far below the 60 s and hour-long
 * waits it tells a stopped wait from. */
#define HANG_GUARD_NS (30 * NS)
#define PERIOD_NS 10000000ull /* 100 Hz */
#define MAX_REQS 64
#define MAX_WINDOWS 256

/* ---- the receiver ---- */

struct req {
	char *uri; /* raw, as sent: still percent-encoded */
	char *method, *path, *content_type, *user_agent;
	char *q_name, *q_from, *q_until, *q_format, *q_rate, *q_spy;
	unsigned int n_args;
	char *profile, *profile_file, *config;
	size_t profile_len, config_len;
	unsigned int status; /* what it was answered */
	int64_t at_ns;	     /* CLOCK_MONOTONIC, when the body was complete */
};

/* Per connection: the raw URI (from the URI log callback) and the body. */
struct conn {
	char *uri;
	char *body;
	size_t len;
	bool started;
};

struct receiver {
	struct MHD_Daemon *d;
	uint16_t port;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct req reqs[MAX_REQS];
	size_t n;
	unsigned int script[8]; /* statuses to answer in order, then dflt */
	size_t n_script;
	unsigned int dflt;
	bool hang; /* hold every request until released */
	bool released;
	size_t hanging; /* requests currently held */
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct conn *cn = calloc(1, sizeof(*cn));

	(void)cls;
	(void)c;
	if (cn)
		cn->uri = strdup(uri);
	return cn;
}

static void on_done(void *cls, struct MHD_Connection *c, void **con_cls,
		    enum MHD_RequestTerminationCode toe)
{
	struct conn *cn = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (cn) {
		free(cn->uri);
		free(cn->body);
		free(cn);
	}
	*con_cls = NULL;
}

static void append(char **buf, size_t *len, const char *data, size_t size)
{
	char *b = realloc(*buf, *len + size + 1);

	assert_non_null(b);
	memcpy(b + *len, data, size);
	*len += size;
	b[*len] = '\0';
	*buf = b;
}

static enum MHD_Result on_part(void *cls, enum MHD_ValueKind kind, const char *key,
			       const char *filename, const char *content_type,
			       const char *transfer_encoding, const char *data, uint64_t off,
			       size_t size)
{
	struct req *r = cls;

	(void)kind;
	(void)content_type;
	(void)transfer_encoding;
	(void)off;
	if (strcmp(key, "profile") == 0) {
		if (filename && !r->profile_file)
			r->profile_file = strdup(filename);
		append(&r->profile, &r->profile_len, data, size);
	} else if (strcmp(key, "sample_type_config") == 0) {
		append(&r->config, &r->config_len, data, size);
	}
	return MHD_YES;
}

static enum MHD_Result on_arg(void *cls, enum MHD_ValueKind kind, const char *key,
			      const char *value)
{
	(void)kind;
	(void)key;
	(void)value;
	(*(unsigned int *)cls)++;
	return MHD_YES;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct receiver *rc = cls;
	struct conn *cn = *con_cls;
	struct MHD_PostProcessor *pp;
	struct MHD_Response *resp;
	struct req r = {0};
	const char *text;
	enum MHD_Result ret;
	struct timespec ts;

	(void)version;
	if (!cn)
		return MHD_NO;
	if (!cn->started) {
		cn->started = true;
		return MHD_YES;
	}
	if (*upload_data_size) {
		append(&cn->body, &cn->len, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}

	r.uri = dup_or_null(cn->uri);
	r.method = strdup(method);
	r.path = strdup(url);
	r.content_type = dup_or_null(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE));
	r.user_agent = dup_or_null(
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_USER_AGENT));
	r.q_name = dup_or_null(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name"));
	r.q_from = dup_or_null(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "from"));
	r.q_until = dup_or_null(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "until"));
	r.q_format = dup_or_null(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "format"));
	r.q_rate = dup_or_null(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "sampleRate"));
	r.q_spy = dup_or_null(MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "spyName"));
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, on_arg, &r.n_args);
	/* A real multipart parser reads the body, as Pyroscope's mime/multipart would. */
	pp = MHD_create_post_processor(c, 4096, on_part, &r);
	if (pp) {
		if (cn->len)
			MHD_post_process(pp, cn->body, cn->len);
		MHD_destroy_post_processor(pp);
	}
	r.at_ns = mono_ns();

	pthread_mutex_lock(&rc->lock);
	r.status = rc->n < rc->n_script ? rc->script[rc->n] : rc->dflt;
	if (rc->n < MAX_REQS)
		rc->reqs[rc->n++] = r;
	pthread_cond_broadcast(&rc->cond);
	if (rc->hang) {
		rc->hanging++;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 30;
		while (!rc->released)
			if (pthread_cond_timedwait(&rc->cond, &rc->lock, &ts) == ETIMEDOUT)
				break;
		rc->hanging--;
	}
	pthread_mutex_unlock(&rc->lock);

	text = r.status == 200 ? "" : "invalid profile: scripted refusal\nsecond line\n";
	resp = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!resp)
		return MHD_NO;
	ret = MHD_queue_response(c, r.status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static struct receiver *receiver_start(const unsigned int *script, size_t n, unsigned int dflt,
				       bool hang)
{
	struct receiver *rc = calloc(1, sizeof(*rc));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
	const union MHD_DaemonInfo *info;

	assert_non_null(rc);
	assert_true(n <= 8);
	if (n) /* script may be NULL then: memcpy's arguments must not be */
		memcpy(rc->script, script, n * sizeof(*script));
	rc->n_script = n;
	rc->dflt = dflt;
	rc->hang = hang;
	pthread_mutex_init(&rc->lock, NULL);
	pthread_cond_init(&rc->cond, NULL);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	rc->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION, 0,
				 NULL, NULL, handle, rc, MHD_OPTION_SOCK_ADDR, &sa,
				 MHD_OPTION_URI_LOG_CALLBACK, on_uri, NULL,
				 MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
	assert_non_null(rc->d);
	info = MHD_get_daemon_info(rc->d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	rc->port = info->port;
	assert_true(rc->port > 0);
	return rc;
}

static void req_free(struct req *r)
{
	free(r->uri);
	free(r->method);
	free(r->path);
	free(r->content_type);
	free(r->user_agent);
	free(r->q_name);
	free(r->q_from);
	free(r->q_until);
	free(r->q_format);
	free(r->q_rate);
	free(r->q_spy);
	free(r->profile);
	free(r->profile_file);
	free(r->config);
}

static void receiver_stop(struct receiver *rc)
{
	size_t i;

	pthread_mutex_lock(&rc->lock);
	rc->released = true;
	pthread_cond_broadcast(&rc->cond);
	pthread_mutex_unlock(&rc->lock);
	MHD_stop_daemon(rc->d);
	for (i = 0; i < rc->n; i++)
		req_free(&rc->reqs[i]);
	pthread_cond_destroy(&rc->cond);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}

/* Waits until the receiver holds at least n requests; false at the deadline. */
static bool wait_reqs(struct receiver *rc, size_t n, int64_t timeout_ns)
{
	int64_t deadline = mono_ns() + timeout_ns;
	bool ok;

	for (;;) {
		pthread_mutex_lock(&rc->lock);
		ok = rc->n >= n;
		pthread_mutex_unlock(&rc->lock);
		if (ok || mono_ns() > deadline)
			return ok;
		usleep(20000);
	}
}

/* A port nothing listens on: bound, read, closed. */
static uint16_t closed_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* ---- the profile source: what the store would answer ---- */

struct window {
	int64_t from_ns, to_ns; /* to_ns: covered; for a failed call, the end asked for */
	uint64_t on_ns, off_ns, rq_ns, samples;
	bool failed;
};

struct source {
	pthread_mutex_t lock;
	struct window win[MAX_WINDOWS];
	size_t n;	      /* calls that did not answer -ENODATA */
	size_t fail_call;     /* 1-based call to answer -EIO; 0: none */
	bool empty;	      /* always -ENODATA */
	unsigned int weights; /* as passed by the pusher */
};

static void add(struct hc_tree *t, const struct hc_path_elem *path, size_t n,
		const struct hc_weights *w)
{
	assert_int_equal(hc_tree__add_path(t, path, n, w), 0);
}

/* A small, real profile whose weights depend on the window, so that a decoded body can be
 * matched to the window it claims to be. */
static int fetch(void *ctx, int64_t from_ns, int64_t *to_ns, unsigned int weights, char **buf,
		 size_t *len)
{
	struct source *s = ctx;
	int64_t to = *to_ns / NS * NS;
	uint64_t k = (uint64_t)(from_ns / NS) % 7 + 1;
	const struct hc_path_elem on_path[] = {
		{HC_NODE_PROCESS, "shopd", NULL, 100, -1, false},
		{HC_NODE_THREAD, "shopd", NULL, 101, -1, false},
		{HC_NODE_USER, "main", "shopd", 0, -1, false},
		{HC_NODE_USER, "checkout", "shopd", 0, -1, false},
	};
	const struct hc_path_elem off_path[] = {
		{HC_NODE_PROCESS, "shopd", NULL, 100, -1, false},
		{HC_NODE_THREAD, "io", NULL, 102, -1, false},
		{HC_NODE_USER, "main", "shopd", 0, -1, false},
		{HC_NODE_KERNEL, "schedule", NULL, 0, -1, false},
	};
	struct hc_weights w1 = {
		.on_cpu_ns = k * 3 * PERIOD_NS, .samples = k * 3, .runqueue_ns = k * 1000};
	struct hc_weights w2 = {.off_cpu_ns = k * 5000000, .runqueue_ns = 70};
	struct hc_profile *p;
	struct window *win;
	FILE *f;
	int err;

	if (to <= from_ns || s->empty)
		return -ENODATA;
	pthread_mutex_lock(&s->lock);
	s->weights = weights;
	assert_true(s->n < MAX_WINDOWS);
	win = &s->win[s->n++];
	*win = (struct window){.from_ns = from_ns, .to_ns = *to_ns};
	if (s->n == s->fail_call) {
		win->failed = true;
		pthread_mutex_unlock(&s->lock);
		return -EIO;
	}
	win->to_ns = to;
	win->on_ns = w1.on_cpu_ns;
	win->samples = w1.samples;
	win->off_ns = w2.off_cpu_ns;
	win->rq_ns = w1.runqueue_ns + w2.runqueue_ns;
	pthread_mutex_unlock(&s->lock);

	p = hc_profile__new();
	assert_non_null(p);
	p->host = strdup("node-1");
	p->kernel = strdup("6.1.0-test");
	p->started_at_ns = from_ns;
	p->duration_ns = (uint64_t)(to - from_ns);
	p->sampling.frequency_hz = 100;
	p->sampling.period_ns = PERIOD_NS;
	p->sampling.cpus = 2;
	add(p->tree, on_path, 4, &w1);
	add(p->tree, off_path, 4, &w2);
	f = open_memstream(buf, len);
	assert_non_null(f);
	err = hc_profile__write_pprof(p, weights, f);
	fclose(f);
	hc_profile__free(p);
	if (err) {
		free(*buf);
		*buf = NULL;
		return err;
	}
	*to_ns = to;
	return 0;
}

static const struct window *window_from(struct source *s, int64_t from_s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->win[i].from_ns / NS == from_s)
			return &s->win[i];
	return NULL;
}

/* ---- helpers over the pusher ---- */

struct fixture {
	struct receiver *rc;
	struct source src;
	struct hc_push *push;
	char url[128];
};

static struct fixture *fixture_new(const unsigned int *script, size_t n, unsigned int dflt,
				   bool hang)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	assert_non_null(fx);
	pthread_mutex_init(&fx->src.lock, NULL);
	if (n || dflt) {
		fx->rc = receiver_start(script, n, dflt, hang);
		snprintf(fx->url, sizeof(fx->url), "http://127.0.0.1:%u", fx->rc->port);
	} else {
		snprintf(fx->url, sizeof(fx->url), "http://127.0.0.1:%u", closed_port());
	}
	return fx;
}

static void fixture_free(struct fixture *fx)
{
	hc_push__free(fx->push);
	if (fx->rc)
		receiver_stop(fx->rc);
	pthread_mutex_destroy(&fx->src.lock);
	free(fx);
}

static struct hc_push_opts base_opts(const char *url)
{
	return (struct hc_push_opts){
		.url = url,
		.interval_ns = NS,
		.service = "shop/api",
		.host = "node-1.example",
		.weights = HC_W_ALL,
		.sample_rate_hz = 99.4,
		.timeout_ns = 5 * NS,
		.version = "9.9.9-test",
	};
}

static int64_t jget(json_t *st, const char *key)
{
	json_t *v = json_object_get(st, key);

	assert_true(json_is_integer(v));
	return json_integer_value(v);
}

static int64_t jdropped(json_t *st, const char *reason)
{
	return jget(json_object_get(st, "dropped"), reason);
}

static int64_t dropped_sum(json_t *st)
{
	return jdropped(st, "queue_full") + jdropped(st, "rejected") +
	       jdropped(st, "retries_exhausted") + jdropped(st, "fetch_error");
}

/* Waits until status[key] >= min; the status after the wait. */
static json_t *wait_status(struct hc_push *p, const char *key, int64_t min, int64_t timeout_ns)
{
	int64_t deadline = mono_ns() + timeout_ns;
	json_t *st;

	for (;;) {
		st = hc_push__status(p);
		assert_non_null(st);
		if (json_integer_value(json_object_get(st, key)) >= min || mono_ns() > deadline)
			return st;
		json_decref(st);
		usleep(20000);
	}
}

/* Every profile fetched is sent, dropped or queued: exactly once. */
static void check_accounting(json_t *st)
{
	assert_int_equal(jget(st, "fetched"),
			 jget(st, "sent") + jget(st, "queued") + dropped_sum(st));
}

static int64_t q_int(const char *s)
{
	char *end;
	long long v;

	assert_non_null(s);
	v = strtoll(s, &end, 10);
	assert_true(*s && !*end);
	return v;
}

/* The body of r: the profile part decodes, with our sample types and the totals of the
 * window it names in from/until. */
static void check_profile(struct fixture *fx, const struct req *r)
{
	struct pp_profile pp = {0};
	const struct window *w;
	char why[256] = "";
	size_t i;

	assert_non_null(r->profile);
	assert_non_null(r->profile_file);
	assert_string_equal(r->profile_file, "profile.pprof");
	assert_true(r->profile_len > 2);
	assert_true((unsigned char)r->profile[0] == 0x1f && (unsigned char)r->profile[1] == 0x8b);
	if (pp_read(r->profile, r->profile_len, &pp, why, sizeof(why)))
		fail_msg("pp_read: %s", why);
	assert_int_equal(pp.n_sample_types, 4);
	assert_string_equal(pp.sample_types[0].type, "samples");
	assert_string_equal(pp.sample_types[0].unit, "count");
	assert_string_equal(pp.sample_types[1].type, "cpu");
	assert_string_equal(pp.sample_types[2].type, "off_cpu");
	assert_string_equal(pp.sample_types[2].unit, "nanoseconds");
	assert_string_equal(pp.sample_types[3].type, "runqueue");
	assert_string_equal(pp.sample_types[3].unit, "nanoseconds");

	pthread_mutex_lock(&fx->src.lock);
	w = window_from(&fx->src, q_int(r->q_from));
	assert_non_null(w);
	assert_false(w->failed);
	assert_int_equal(w->to_ns / NS, q_int(r->q_until));
	assert_int_equal(pp_total(&pp, "samples"), w->samples);
	assert_int_equal(pp_total(&pp, "cpu"), w->on_ns);
	assert_int_equal(pp_total(&pp, "off_cpu"), w->off_ns);
	assert_int_equal(pp_total(&pp, "runqueue"), w->rq_ns);
	pthread_mutex_unlock(&fx->src.lock);
	assert_int_equal(pp.time_nanos / NS, q_int(r->q_from));
	assert_true(pp.n_samples >= 2);
	for (i = 0; i < pp.n_samples; i++)
		assert_string_equal(pp_label_str(&pp.samples[i], "process"), "shopd");
	pp_free(&pp);
}

/* ---- tests ---- */

/* Three pushes arrive as Pyroscope's /ingest expects them, gapless. */
static void test_delivery(void **state)
{
	static const unsigned int ok[] = {200};
	struct fixture *fx = fixture_new(ok, 1, 200, false);
	struct hc_push_opts o = base_opts(fx->url);
	int64_t before_s = real_ns() / NS, after_s;
	json_t *st, *cfg;
	size_t i;

	(void)state;
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	after_s = real_ns() / NS;
	assert_true(wait_reqs(fx->rc, 3, 10 * NS));

	pthread_mutex_lock(&fx->rc->lock);
	for (i = 0; i < 3; i++) {
		const struct req *r = &fx->rc->reqs[i];

		assert_string_equal(r->method, "POST");
		assert_string_equal(r->path, "/ingest");
		assert_non_null(r->content_type);
		assert_non_null(strstr(r->content_type, "multipart/form-data; boundary="));
		assert_string_equal(r->user_agent, "hotcold/9.9.9-test");
		/* Labels in the name, decoded by the receiver ... */
		assert_string_equal(r->q_name, "shop/api{host=node-1.example,service=shop/api}");
		/* ... and percent-encoded on the wire: '{', '}', ',' and '=' would break the
		 * query otherwise. */
		assert_non_null(r->uri);
		assert_non_null(strstr(r->uri, "name=shop%2Fapi%7Bhost%3Dnode-1.example%2C"
					       "service%3Dshop%2Fapi%7D&"));
		assert_null(strchr(r->uri, '{'));
		assert_null(strchr(r->uri, ','));
		/* format=pprof would make Pyroscope read the multipart body as raw pprof. */
		assert_null(r->q_format);
		assert_string_equal(r->q_spy, "hotcold");
		assert_string_equal(r->q_rate, "99");
		assert_int_equal(r->n_args, 5);
		assert_true(q_int(r->q_until) > q_int(r->q_from));
		if (i)
			assert_int_equal(q_int(r->q_from), q_int(fx->rc->reqs[i - 1].q_until));
		else
			assert_true(q_int(r->q_from) >= before_s && q_int(r->q_from) <= after_s);
		check_profile(fx, r);
		cfg = json_loadb(r->config, r->config_len, 0, NULL);
		assert_non_null(cfg);
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(cfg, "off_cpu"), "display-name")),
				    "off_cpu");
		assert_non_null(json_object_get(cfg, "samples"));
		assert_non_null(json_object_get(cfg, "cpu"));
		assert_non_null(json_object_get(cfg, "runqueue"));
		json_decref(cfg);
	}
	pthread_mutex_unlock(&fx->rc->lock);
	assert_int_equal(fx->src.weights, HC_W_ALL);

	st = wait_status(fx->push, "sent", 3, 5 * NS);
	assert_true(jget(st, "sent") >= 3);
	assert_int_equal(jget(st, "retries"), 0);
	assert_int_equal(dropped_sum(st), 0);
	assert_true(jget(st, "attempts") >= jget(st, "sent"));
	assert_true(jget(st, "bytes_sent") > 0);
	assert_true(json_is_string(json_object_get(st, "last_success")));
	assert_true(json_is_null(json_object_get(st, "last_error")));
	assert_string_equal(json_string_value(json_object_get(st, "url")),
			    strcat(fx->url, "/ingest"));
	assert_int_equal(jget(st, "interval_s"), 1);
	check_accounting(st);
	json_decref(st);
	fixture_free(fx);
}

/* 503, 503, 200: the first window arrives on the third attempt, one interval apart (the
 * backoff is capped at the interval), and the windows queued behind it follow in order. */
static void test_retry(void **state)
{
	static const unsigned int script[] = {503, 503, 200};
	struct fixture *fx = fixture_new(script, 3, 200, false);
	struct hc_push_opts o = base_opts(fx->url);
	const struct req *r;
	json_t *st;
	int64_t gap;

	(void)state;
	o.max_attempts = 5;
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	assert_true(wait_reqs(fx->rc, 4, 15 * NS));

	pthread_mutex_lock(&fx->rc->lock);
	r = fx->rc->reqs;
	assert_int_equal(r[0].status, 503);
	assert_int_equal(r[1].status, 503);
	assert_int_equal(r[2].status, 200);
	assert_string_equal(r[1].q_from, r[0].q_from);
	assert_string_equal(r[2].q_from, r[0].q_from);
	assert_string_equal(r[2].q_until, r[0].q_until);
	/* Each retry waits out its backoff (not before); HANG_GUARD_NS only ends a wait that
	 * never would. The cap (1 s rather than 2 s for the second retry) is not told apart
	 * from a loaded machine's delays by the wall clock, so it is not asserted here. */
	gap = r[1].at_ns - r[0].at_ns;
	assert_true(gap >= 900000000ll && gap < HANG_GUARD_NS);
	gap = r[2].at_ns - r[1].at_ns;
	assert_true(gap >= 900000000ll && gap < HANG_GUARD_NS);
	check_profile(fx, &r[2]);
	/* The next window starts where the retried one ended. */
	assert_int_equal(q_int(r[3].q_from), q_int(r[2].q_until));
	pthread_mutex_unlock(&fx->rc->lock);

	/* The receiver holds the 4th request before the client counts its attempt. */
	st = wait_status(fx->push, "attempts", 4, HANG_GUARD_NS);
	assert_true(jget(st, "sent") >= 1);
	assert_true(jget(st, "retries") >= 2);
	assert_true(jget(st, "attempts") >= 4);
	assert_int_equal(dropped_sum(st), 0);
	assert_non_null(strstr(json_string_value(json_object_get(st, "last_error")), "HTTP 503"));
	assert_true(json_is_string(json_object_get(st, "last_error_at")));
	check_accounting(st);
	json_decref(st);
	fixture_free(fx);
}

/* 400: dropped at once, never retried; the reason is the reply's first line. */
static void test_rejected(void **state)
{
	struct fixture *fx = fixture_new(NULL, 0, 400, false);
	struct hc_push_opts o = base_opts(fx->url);
	const char *err;
	json_t *st;

	(void)state;
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	assert_true(wait_reqs(fx->rc, 2, 10 * NS));
	pthread_mutex_lock(&fx->rc->lock);
	/* Two different windows: the first was not tried again. */
	assert_int_equal(q_int(fx->rc->reqs[1].q_from), q_int(fx->rc->reqs[0].q_until));
	pthread_mutex_unlock(&fx->rc->lock);

	st = hc_push__status(fx->push);
	assert_non_null(st);
	assert_true(jdropped(st, "rejected") >= 1);
	assert_int_equal(jget(st, "retries"), 0);
	assert_int_equal(jget(st, "sent"), 0);
	assert_int_equal(jdropped(st, "retries_exhausted"), 0);
	err = json_string_value(json_object_get(st, "last_error"));
	assert_non_null(err);
	assert_non_null(strstr(err, "HTTP 400: invalid profile: scripted refusal"));
	assert_null(strstr(err, "second line"));
	check_accounting(st);
	json_decref(st);
	fixture_free(fx);
}

/* Nothing listens: the queue never holds more than queue_max, the oldest go first, and the
 * books balance in every snapshot. */
static void test_down_queue_full(void **state)
{
	struct fixture *fx = fixture_new(NULL, 0, 0, false);
	struct hc_push_opts o = base_opts(fx->url);
	int64_t deadline = mono_ns() + 15 * NS, snapshots = 0;
	json_t *st = NULL;
	size_t calls;

	(void)state;
	o.queue_max = 2;
	o.max_attempts = 1000;
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	for (;;) {
		json_decref(st);
		st = hc_push__status(fx->push);
		assert_non_null(st);
		snapshots++;
		assert_true(jget(st, "queued") <= 2);
		check_accounting(st);
		if (jdropped(st, "queue_full") >= 2 || mono_ns() > deadline)
			break;
		usleep(50000);
	}
	assert_true(jdropped(st, "queue_full") >= 2);
	assert_int_equal(jget(st, "queued"), 2);
	assert_int_equal(jget(st, "sent"), 0);
	assert_int_equal(jdropped(st, "retries_exhausted"), 0);
	assert_true(jget(st, "attempts") >= 3);
	assert_non_null(json_string_value(json_object_get(st, "last_error")));
	assert_true(snapshots > 10);
	pthread_mutex_lock(&fx->src.lock);
	calls = fx->src.n;
	pthread_mutex_unlock(&fx->src.lock);
	/* The source may be one call ahead of the snapshot. */
	assert_true((size_t)jget(st, "fetched") == calls ||
		    (size_t)jget(st, "fetched") + 1 == calls);
	json_decref(st);

	/* The metrics say the same. */
	{
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		assert_non_null(f);
		assert_int_equal(hc_push__metrics(fx->push, f), 0);
		fclose(f);
		assert_non_null(strstr(text, "# TYPE hotcold_push_dropped_total counter\n"));
		assert_non_null(strstr(text, "hotcold_push_dropped_total{reason=\"queue_full\"} "));
		assert_null(strstr(text, "hotcold_push_dropped_total{reason=\"queue_full\"} 0\n"));
		assert_non_null(strstr(text, "hotcold_push_sent_total 0\n"));
		assert_non_null(strstr(text, "hotcold_push_queued 2\n"));
		assert_non_null(strstr(text, "# TYPE hotcold_push_queued gauge\n"));
		assert_non_null(strstr(text, "# HELP hotcold_push_attempts_total "));
		assert_non_null(strstr(text, "# TYPE hotcold_push_attempts_total counter\n"));
		assert_non_null(strstr(text, "\nhotcold_push_attempts_total "));
		assert_null(strstr(text, "\nhotcold_push_attempts_total 0\n"));
		assert_non_null(
			strstr(text, "hotcold_push_dropped_total{reason=\"fetch_error\"} 0\n"));
		free(text);
	}
	fixture_free(fx);
}

/* An outage longer than the queue: the oldest windows are the ones dropped, and when the
 * receiver recovers the newest windows arrive, in order. */
static void test_outage_drops_oldest(void **state)
{
	static const unsigned int script[] = {503, 503, 503, 503, 503, 503};
	struct fixture *fx = fixture_new(script, 6, 200, false);
	struct hc_push_opts o = base_opts(fx->url);
	const struct req *r;
	size_t i, first_ok = 0;
	json_t *st;

	(void)state;
	o.queue_max = 2;
	o.max_attempts = 100;
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	assert_true(wait_reqs(fx->rc, 8, 20 * NS));
	pthread_mutex_lock(&fx->rc->lock);
	r = fx->rc->reqs;
	for (i = 0; i < fx->rc->n; i++) {
		if (r[i].status == 200 && !first_ok)
			first_ok = i;
		/* The first window was dropped, never delivered. */
		if (r[i].status == 200)
			assert_true(q_int(r[i].q_from) > q_int(r[0].q_from));
	}
	assert_int_equal(first_ok, 6);
	/* After recovery the queue drains in order, gapless. */
	assert_int_equal(q_int(r[7].q_from), q_int(r[6].q_until));
	check_profile(fx, &r[6]);
	pthread_mutex_unlock(&fx->rc->lock);
	st = hc_push__status(fx->push);
	assert_non_null(st);
	assert_true(jdropped(st, "queue_full") >= 1);
	assert_int_equal(jdropped(st, "retries_exhausted"), 0);
	check_accounting(st);
	json_decref(st);
	fixture_free(fx);
}

/* Nothing listens and each profile gets two attempts: dropped as retries_exhausted. */
static void test_down_retries_exhausted(void **state)
{
	struct fixture *fx = fixture_new(NULL, 0, 0, false);
	struct hc_push_opts o = base_opts(fx->url);
	int64_t deadline = mono_ns() + 15 * NS;
	json_t *st = NULL;

	(void)state;
	o.max_attempts = 2;
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	for (;;) {
		json_decref(st);
		st = hc_push__status(fx->push);
		assert_non_null(st);
		check_accounting(st);
		if (jdropped(st, "retries_exhausted") >= 2 || mono_ns() > deadline)
			break;
		usleep(50000);
	}
	assert_true(jdropped(st, "retries_exhausted") >= 2);
	assert_int_equal(jdropped(st, "queue_full"), 0);
	assert_int_equal(jget(st, "sent"), 0);
	assert_true(jget(st, "attempts") >= 2 * jdropped(st, "retries_exhausted"));
	assert_true(jget(st, "retries") >= jdropped(st, "retries_exhausted"));
	assert_true(json_is_null(json_object_get(st, "last_success")));
	json_decref(st);
	fixture_free(fx);
}

/* A failed fetch is counted and its window given up; the next window follows it. */
static void test_fetch_error(void **state)
{
	struct fixture *fx = fixture_new(NULL, 0, 200, false);
	struct hc_push_opts o = base_opts(fx->url);
	const struct window *bad;
	json_t *st;

	(void)state;
	fx->src.fail_call = 2;
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	assert_true(wait_reqs(fx->rc, 2, 10 * NS));
	pthread_mutex_lock(&fx->src.lock);
	bad = &fx->src.win[1];
	assert_true(bad->failed);
	pthread_mutex_lock(&fx->rc->lock);
	assert_int_equal(q_int(fx->rc->reqs[0].q_until), bad->from_ns / NS);
	assert_int_equal(q_int(fx->rc->reqs[1].q_from), bad->to_ns / NS);
	pthread_mutex_unlock(&fx->rc->lock);
	pthread_mutex_unlock(&fx->src.lock);

	st = hc_push__status(fx->push);
	assert_non_null(st);
	assert_int_equal(jdropped(st, "fetch_error"), 1);
	assert_non_null(strstr(json_string_value(json_object_get(st, "last_error")), "fetch"));
	assert_non_null(
		strstr(json_string_value(json_object_get(st, "last_error")), strerror(EIO)));
	check_accounting(st);
	json_decref(st);
	fixture_free(fx);
}

/* Nothing new in the store: nothing is sent and nothing is counted. */
static void test_nodata(void **state)
{
	struct fixture *fx = fixture_new(NULL, 0, 200, false);
	struct hc_push_opts o = base_opts(fx->url);
	json_t *st;

	(void)state;
	fx->src.empty = true;
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	usleep(2500000);
	st = hc_push__status(fx->push);
	assert_non_null(st);
	assert_int_equal(jget(st, "fetched"), 0);
	assert_int_equal(jget(st, "attempts"), 0);
	assert_true(json_is_null(json_object_get(st, "last_error")));
	json_decref(st);
	pthread_mutex_lock(&fx->rc->lock);
	assert_int_equal(fx->rc->n, 0);
	pthread_mutex_unlock(&fx->rc->lock);
	fixture_free(fx);
}

/* The receiver holds the request: free() aborts it and returns promptly. */
static void test_free_while_hanging(void **state)
{
	struct fixture *fx = fixture_new(NULL, 0, 200, true);
	struct hc_push_opts o = base_opts(fx->url);
	int64_t t0, took;
	bool held;

	(void)state;
	o.timeout_ns = 60 * NS; /* curl's own timeout must not be what ends it */
	fx->push = hc_push__new(&o, fetch, &fx->src);
	assert_non_null(fx->push);
	assert_true(wait_reqs(fx->rc, 1, 10 * NS));
	usleep(200000);
	pthread_mutex_lock(&fx->rc->lock);
	held = fx->rc->hanging == 1;
	pthread_mutex_unlock(&fx->rc->lock);
	assert_true(held);
	t0 = mono_ns();
	hc_push__free(fx->push);
	took = mono_ns() - t0;
	fx->push = NULL;
	print_message("free() while a request hung took %.3f s\n", (double)took / 1e9);
	/* Aborted, not ended by curl's 60 s timeout. */
	assert_true(took < HANG_GUARD_NS);
	fixture_free(fx);
}

/* Bad options are refused up front; credentials never reach the status. */
static void test_bad_options(void **state)
{
	static const char *const bad[] = {"ftp://x", "not a url",     "",
					  "http://", "file:///tmp/x", "gopher://127.0.0.1:70/"};
	struct source src = {.n = 0};
	struct hc_push_opts o;
	struct hc_push *p;
	const char *shown;
	int64_t t0;
	json_t *st;
	size_t i;

	(void)state;
	pthread_mutex_init(&src.lock, NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = base_opts(bad[i]);
		errno = 0;
		p = hc_push__new(&o, fetch, &src);
		if (p)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_int_equal(errno, EINVAL);
	}
	o = base_opts(NULL);
	errno = 0;
	assert_null(hc_push__new(&o, fetch, &src));
	assert_int_equal(errno, EINVAL);
	o = base_opts("http://127.0.0.1:1");
	o.interval_ns = NS / 2;
	errno = 0;
	assert_null(hc_push__new(&o, fetch, &src));
	assert_int_equal(errno, EINVAL);
	o = base_opts("http://127.0.0.1:1");
	o.weights = 1u << 7;
	errno = 0;
	assert_null(hc_push__new(&o, fetch, &src));
	assert_int_equal(errno, EINVAL);
	o = base_opts("http://127.0.0.1:1");
	o.service = "";
	errno = 0;
	assert_null(hc_push__new(&o, fetch, &src));
	assert_int_equal(errno, EINVAL);

	o = base_opts("https://user:s3cret@profiles.example:4443/base/?x=1#frag");
	o.interval_ns = 3600 * NS;
	p = hc_push__new(&o, fetch, &src);
	assert_non_null(p);
	st = hc_push__status(p);
	assert_non_null(st);
	shown = json_string_value(json_object_get(st, "url"));
	assert_string_equal(shown, "https://profiles.example:4443/base/ingest");
	assert_int_equal(jget(st, "queue_max"), 32);
	assert_int_equal(jget(st, "max_attempts"), 5);
	json_decref(st);
	t0 = mono_ns();
	hc_push__free(p); /* sleeping for an hour: must still stop, not wait the hour out */
	assert_true(mono_ns() - t0 < HANG_GUARD_NS);
	assert_int_equal(src.n, 0);
	hc_push__free(NULL);
	pthread_mutex_destroy(&src.lock);
}

int main(void)
{
	static const char *const proxies[] = {"http_proxy",  "HTTP_PROXY", "https_proxy",
					      "HTTPS_PROXY", "all_proxy",  "ALL_PROXY"};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_delivery),
		cmocka_unit_test(test_retry),
		cmocka_unit_test(test_rejected),
		cmocka_unit_test(test_down_queue_full),
		cmocka_unit_test(test_down_retries_exhausted),
		cmocka_unit_test(test_outage_drops_oldest),
		cmocka_unit_test(test_fetch_error),
		cmocka_unit_test(test_nodata),
		cmocka_unit_test(test_free_while_hanging),
	};
	size_t i;

	/* libcurl honours proxy variables; the receiver is on loopback. */
	for (i = 0; i < sizeof(proxies) / sizeof(proxies[0]); i++)
		unsetenv(proxies[i]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
