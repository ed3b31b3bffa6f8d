// SPDX-License-Identifier: GPL-2.0-only
/* serve/push: the store's profile to Grafana Pyroscope's /ingest, on an interval. See push.h. */
#include "serve/push.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/time.h"
#include "profile/weights.h"
#include "profile/encode.h"
#include "profile/jstream.h"
#include "profile/counters.h"
#include "serve/curl_dl.h"

#define NS ((int64_t)1000000000)
#define MS ((int64_t)1000000)
#define DEFAULT_QUEUE_MAX 32
#define DEFAULT_MAX_ATTEMPTS 5
#define DEFAULT_TIMEOUT_NS (10 * NS)
#define CONNECT_TIMEOUT_NS (5 * NS) /* a receiver that takes longer to accept is down */
#define BACKOFF_MAX_NS (60 * NS)
#define POLL_MS 250   /* p->cu->multi_poll() slice: how often the stop flag is looked at */
#define REPLY_MAX 512 /* response bytes kept for last_error */
#define ERROR_MAX 256

/* One fetched window waiting to be sent. */
struct item {
	int64_t from_ns, until_ns; /* CLOCK_REALTIME */
	char *buf;		   /* gzipped pprof, owned */
	size_t len;
	unsigned int attempts;
	int64_t retry_at_ns; /* CLOCK_MONOTONIC: not before */
};

enum outcome {
	OUT_SENT,
	OUT_RETRY,    /* connection error, timeout, 408, 429, 5xx */
	OUT_REJECTED, /* any other answer: sending it again cannot help */
	OUT_STOPPED,  /* hc_push__free() aborted the transfer */
};

struct reply {
	char text[REPLY_MAX];
	size_t len;
};

struct hc_push {
	/* Set once by hc_push__new(), read-only afterwards. */
	const struct hc_curl *cu; /* libcurl, loaded on the first --push */
	hc_push_fetch_fn fetch;
	void *ctx;
	char *ingest_url; /* scheme://[user:pass@]host[:port]/path/ingest */
	char *shown_url;  /* the same without credentials, for the status */
	char *name;	  /* SERVICE{host=...,service=...}, not yet URL-encoded */
	char *user_agent;
	char *type_config; /* the sample_type_config part (JSON) */
	unsigned int weights, max_attempts, sample_rate_hz;
	uint64_t interval_ns, timeout_ns, backoff_cap_ns;
	size_t queue_max;

	/* Owned by the push thread. */
	CURL *easy; /* reused: keeps the connection alive between pushes */
	CURLM *multi;
	pthread_t thread;
	atomic_bool stop; /* read without the lock by the curl callbacks */

	/* Guarded by lock: the queue and everything the status shows. The push thread changes
	 * them; readers only copy. */
	pthread_mutex_t lock;
	pthread_cond_t wake; /* CLOCK_MONOTONIC; signalled by hc_push__free() */
	struct item *q;	     /* ring of queue_max */
	size_t head, n;
	int64_t next_from_ns; /* the end of the last window fetched */
	uint64_t fetched, sent, bytes_sent, attempts, retries;
	uint64_t drop_queue_full, drop_rejected, drop_retries_exhausted, drop_fetch_error;
	int64_t last_success_ns, last_error_ns; /* CLOCK_REALTIME, 0: never */
	char last_error[ERROR_MAX];
};

/* ---- options -> what every request needs ---- */

/* Pyroscope's application name allows [A-Za-z0-9_.-/] only (labelset.ValidateServiceName). */
static bool service_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-' || c == '/';
}

/* Label values end at ',' or '}' and have no escaping; '{', '=' and '"' would confuse other
 * readers of the name. */
static bool label_char_ok(char c)
{
	return (unsigned char)c > 0x20 && c != 0x7f && !strchr(",{}=\"", c);
}

static void sanitize(char *s, bool (*ok)(char))
{
	for (; *s; s++)
		if (!ok(*s))
			*s = '_';
}

static char *build_name(const char *service, const char *host)
{
	char *svc = strdup(service), *h = host && *host ? strdup(host) : NULL, *name = NULL;
	int n;

	if (!svc || (host && *host && !h))
		goto out;
	sanitize(svc, service_char_ok);
	if (h) {
		sanitize(h, label_char_ok);
		n = asprintf(&name, "%s{host=%s,service=%s}", svc, h, svc);
	} else {
		n = asprintf(&name, "%s{service=%s}", svc, svc);
	}
	if (n < 0)
		name = NULL;
out:
	free(svc);
	free(h);
	return name;
}

/*
 * The sample_type_config part. Pyroscope (pkg/og/convert/pprof) uses it to name the profile
 * family: the first type whose display name contains "cpu" makes the series process_cpu. Our
 * nanosecond types are totals already, so they are not "sampled" (not scaled by the rate).
 */
static int add_type(json_t *c, const char *type, const char *units, const char *display,
		    bool sampled)
{
	return json_object_set_new(c, type,
				   json_pack("{s:s, s:s, s:s, s:b}", "units", units, "aggregation",
					     "sum", "display-name", display, "sampled", sampled));
}

static char *build_type_config(unsigned int weights)
{
	json_t *c = json_object();
	char *s = NULL;
	int err = 0;

	if (!c)
		return NULL;
	if (weights & HC_W_ON) {
		err |= add_type(c, "samples", "samples", "cpu", true);
		err |= add_type(c, "cpu", "nanoseconds", "cpu_nanoseconds", false);
	}
	if (weights & HC_W_OFF)
		err |= add_type(c, "off_cpu", "nanoseconds", "off_cpu", false);
	if (weights & HC_W_RUNQ)
		err |= add_type(c, "runqueue", "nanoseconds", "runqueue", false);
	if (!err)
		s = jstream_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(c);
	return s;
}

/* The URL parser: http(s)://[user:pass@]host[:port][/path] -> .../path/ingest. -EINVAL. */
static int parse_url(struct hc_push *p, const char *url)
{
	CURLU *u = p->cu->url();
	char *scheme = NULL, *host = NULL, *path = NULL, *ingest = NULL;
	size_t n;
	int err = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (!url || !*url || p->cu->url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
		goto out;
	if (p->cu->url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") && strcmp(scheme, "https")))
		goto out;
	if (p->cu->url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
		goto out;
	if (p->cu->url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		goto out;
	n = strlen(path);
	while (n && path[n - 1] == '/')
		n--;
	err = -ENOMEM;
	if (asprintf(&ingest, "%.*s/ingest", (int)n, path) < 0) {
		ingest = NULL;
		goto out;
	}
	/* Our query replaces any the user gave; a fragment is never sent. */
	if (p->cu->url_set(u, CURLUPART_PATH, ingest, 0) != CURLUE_OK ||
	    p->cu->url_set(u, CURLUPART_QUERY, NULL, 0) != CURLUE_OK ||
	    p->cu->url_set(u, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK ||
	    p->cu->url_get(u, CURLUPART_URL, &p->ingest_url, 0) != CURLUE_OK)
		goto out;
	if (p->cu->url_set(u, CURLUPART_USER, NULL, 0) != CURLUE_OK ||
	    p->cu->url_set(u, CURLUPART_PASSWORD, NULL, 0) != CURLUE_OK ||
	    p->cu->url_get(u, CURLUPART_URL, &p->shown_url, 0) != CURLUE_OK)
		goto out;
	err = 0;
out:
	free(ingest);
	p->cu->free(path);
	p->cu->free(host);
	p->cu->free(scheme);
	p->cu->url_cleanup(u);
	return err;
}

/* ---- status bookkeeping (lock held) ---- */

/* Printable ASCII only: the text ends up in JSON and in logs. */
static void set_error(struct hc_push *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void set_error(struct hc_push *p, const char *fmt, ...)
{
	va_list ap;
	char *c;

	va_start(ap, fmt);
	vsnprintf(p->last_error, sizeof(p->last_error), fmt, ap);
	va_end(ap);
	for (c = p->last_error; *c; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e)
			*c = ' ';
	p->last_error_ns = hc_clock_ns(CLOCK_REALTIME);
}

static struct item *queue_head(struct hc_push *p)
{
	return p->n ? &p->q[p->head] : NULL;
}

static void queue_pop(struct hc_push *p)
{
	free(p->q[p->head].buf);
	p->q[p->head].buf = NULL;
	p->head = (p->head + 1) % p->queue_max;
	p->n--;
}

static void queue_push(struct hc_push *p, const struct item *it)
{
	if (p->n == p->queue_max) {
		/* The newest data is worth more than the oldest: a receiver that comes back
		 * gets the recent past first. */
		p->drop_queue_full++;
		set_error(p, "queue full (%zu): dropped the profile of [%" PRId64 ", %" PRId64 ")",
			  p->queue_max, p->q[p->head].from_ns / NS, p->q[p->head].until_ns / NS);
		queue_pop(p);
	}
	p->q[(p->head + p->n) % p->queue_max] = *it;
	p->n++;
}

/* ---- the push thread ---- */

static void fetch_window(struct hc_push *p)
{
	int64_t from, want = hc_clock_ns(CLOCK_REALTIME), to = want;
	struct item it = {0};
	char *buf = NULL;
	size_t len = 0;
	int err;

	pthread_mutex_lock(&p->lock);
	from = p->next_from_ns;
	pthread_mutex_unlock(&p->lock);
	if (want <= from)
		return;
	err = p->fetch(p->ctx, from, &to, p->weights, &buf, &len);
	if (err == -ENODATA) {
		free(buf);
		return;
	}
	if (!err && (to <= from || to > want || !buf || !len)) {
		err = -ERANGE; /* the callback broke its contract: do not send what it gave */
		free(buf);
		buf = NULL;
	}

	pthread_mutex_lock(&p->lock);
	p->fetched++;
	if (err) {
		/* The window is given up (and counted), so that one window the store cannot
		 * answer does not wedge every push after it. */
		p->drop_fetch_error++;
		set_error(p, "fetch [%" PRId64 ", %" PRId64 "): %s", from / NS, want / NS,
			  strerror(-err));
		if (want / NS * NS > from)
			p->next_from_ns = want / NS * NS;
	} else {
		it = (struct item){.from_ns = from, .until_ns = to, .buf = buf, .len = len};
		queue_push(p, &it);
		p->next_from_ns = to;
	}
	pthread_mutex_unlock(&p->lock);
}

static size_t on_reply(char *data, size_t size, size_t nmemb, void *arg)
{
	struct reply *r = arg;
	size_t n = size * nmemb, room = sizeof(r->text) - 1 - r->len;

	/* Keep the start for the error message; the rest is read and thrown away. */
	if (room) {
		memcpy(r->text + r->len, data, n < room ? n : room);
		r->len += n < room ? n : room;
		r->text[r->len] = '\0';
	}
	return n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct hc_push *p = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return atomic_load(&p->stop) ? 1 : 0; /* non-zero: CURLE_ABORTED_BY_CALLBACK */
}

static char *build_url(const struct hc_push *p, const struct item *it)
{
	char *name = p->cu->easy_escape(p->easy, p->name, 0), *url = NULL;
	char rate[32] = "";
	int n;

	if (!name)
		return NULL;
	if (p->sample_rate_hz)
		snprintf(rate, sizeof(rate), "&sampleRate=%u", p->sample_rate_hz);
	/* from/until in unix seconds (attime.Parse reads 10-digit numbers as seconds); the
	 * window is [from, until) in whole seconds. */
	n = asprintf(&url, "%s?name=%s&from=%" PRId64 "&until=%" PRId64 "&spyName=hotcold%s",
		     p->ingest_url, name, it->from_ns / NS, (it->until_ns + NS - 1) / NS, rate);
	p->cu->free(name);
	return n < 0 ? NULL : url;
}

/* The reply's first line, for last_error. */
static const char *reply_line(struct reply *r)
{
	char *nl = strpbrk(r->text, "\r\n");

	if (nl)
		*nl = '\0';
	return r->text;
}

/* Runs the transfer on the multi handle so that hc_push__free() can interrupt it at once
 * with p->cu->multi_wakeup(), whatever state it is in (resolving, connecting, waiting). */
static CURLcode perform(struct hc_push *p)
{
	CURLcode rc = CURLE_OK;
	CURLMsg *msg;
	int running = 1, left;

	if (p->cu->multi_add_handle(p->multi, p->easy) != CURLM_OK)
		return CURLE_OUT_OF_MEMORY;
	while (running) {
		if (p->cu->multi_perform(p->multi, &running) != CURLM_OK) {
			rc = CURLE_RECV_ERROR;
			break;
		}
		if (!running)
			break;
		if (atomic_load(&p->stop)) {
			rc = CURLE_ABORTED_BY_CALLBACK;
			break;
		}
		if (p->cu->multi_poll(p->multi, NULL, 0, POLL_MS, NULL) != CURLM_OK) {
			rc = CURLE_RECV_ERROR;
			break;
		}
	}
	if (!running) {
		while ((msg = p->cu->multi_info_read(p->multi, &left)))
			if (msg->msg == CURLMSG_DONE && msg->easy_handle == p->easy)
				rc = msg->data.result;
	}
	p->cu->multi_remove_handle(p->multi, p->easy);
	return rc;
}

static enum outcome post(struct hc_push *p, const struct item *it, char *why, size_t why_len)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL;
	enum outcome out = OUT_RETRY;
	struct reply reply = {.len = 0};
	curl_mimepart *part;
	curl_mime *mime;
	char *url;
	long code = 0;
	CURLcode rc;

	url = build_url(p, it);
	mime = p->cu->mime_init(p->easy);
	/* Without this header curl waits up to a second for "100 Continue" on large bodies. */
	hdrs = p->cu->slist_append(NULL, "Expect:");
	if (!url || !mime || !hdrs) {
		snprintf(why, why_len, "out of memory");
		goto out;
	}
	part = p->cu->mime_addpart(mime);
	if (!part || p->cu->mime_name(part, "profile") ||
	    p->cu->mime_filename(part, "profile.pprof") ||
	    p->cu->mime_type(part, "application/octet-stream") ||
	    p->cu->mime_data(part, it->buf, it->len)) {
		snprintf(why, why_len, "out of memory");
		goto out;
	}
	part = p->cu->mime_addpart(mime);
	if (!part || p->cu->mime_name(part, "sample_type_config") ||
	    p->cu->mime_filename(part, "sample_type_config.json") ||
	    p->cu->mime_type(part, "application/json") ||
	    p->cu->mime_data(part, p->type_config, CURL_ZERO_TERMINATED)) {
		snprintf(why, why_len, "out of memory");
		goto out;
	}

	p->cu->easy_setopt(p->easy, CURLOPT_URL, url);
	p->cu->easy_setopt(p->easy, CURLOPT_MIMEPOST, mime);
	p->cu->easy_setopt(p->easy, CURLOPT_HTTPHEADER, hdrs);
	p->cu->easy_setopt(p->easy, CURLOPT_WRITEFUNCTION, on_reply);
	p->cu->easy_setopt(p->easy, CURLOPT_WRITEDATA, &reply);
	p->cu->easy_setopt(p->easy, CURLOPT_ERRORBUFFER, errbuf);
	rc = perform(p);
	p->cu->easy_setopt(p->easy, CURLOPT_ERRORBUFFER, NULL);

	if (rc == CURLE_ABORTED_BY_CALLBACK && atomic_load(&p->stop)) {
		out = OUT_STOPPED;
		goto out;
	}
	if (rc != CURLE_OK) {
		snprintf(why, why_len, "%.200s", *errbuf ? errbuf : p->cu->easy_strerror(rc));
		goto out;
	}
	p->cu->easy_getinfo(p->easy, CURLINFO_RESPONSE_CODE, &code);
	if (code >= 200 && code < 300)
		out = OUT_SENT;
	else if (code == 408 || code == 429 || code >= 500)
		out = OUT_RETRY;
	else
		out = OUT_REJECTED; /* 3xx too: redirects are not followed */
	if (out != OUT_SENT)
		snprintf(why, why_len, "HTTP %ld: %.160s", code, reply_line(&reply));
out:
	/* The handle keeps pointers to these until they are replaced or cleared. */
	p->cu->easy_setopt(p->easy, CURLOPT_MIMEPOST, NULL);
	p->cu->easy_setopt(p->easy, CURLOPT_HTTPHEADER, NULL);
	p->cu->easy_setopt(p->easy, CURLOPT_WRITEDATA, NULL);
	p->cu->slist_free_all(hdrs);
	p->cu->mime_free(mime);
	free(url);
	return out;
}

static uint64_t backoff_ns(const struct hc_push *p, unsigned int attempts)
{
	uint64_t d = (uint64_t)NS << (attempts > 20 ? 20 : attempts - 1);

	return d < p->backoff_cap_ns ? d : p->backoff_cap_ns;
}

static void send_head(struct hc_push *p)
{
	char why[ERROR_MAX] = "";
	struct item *it;
	enum outcome out;

	/* Only this thread changes the queue, so the head stays put while it is sent. */
	pthread_mutex_lock(&p->lock);
	it = queue_head(p);
	pthread_mutex_unlock(&p->lock);
	out = post(p, it, why, sizeof(why));
	if (out == OUT_STOPPED)
		return;

	pthread_mutex_lock(&p->lock);
	p->attempts++;
	if (it->attempts++)
		p->retries++;
	switch (out) {
	case OUT_SENT:
		p->sent++;
		p->bytes_sent += it->len;
		p->last_success_ns = hc_clock_ns(CLOCK_REALTIME);
		queue_pop(p);
		break;
	case OUT_REJECTED:
		p->drop_rejected++;
		set_error(p, "rejected [%" PRId64 ", %" PRId64 "): %s", it->from_ns / NS,
			  it->until_ns / NS, why);
		queue_pop(p);
		break;
	case OUT_RETRY:
		if (it->attempts >= p->max_attempts) {
			p->drop_retries_exhausted++;
			set_error(p, "gave up on [%" PRId64 ", %" PRId64 ") after %u attempts: %s",
				  it->from_ns / NS, it->until_ns / NS, it->attempts, why);
			queue_pop(p);
		} else {
			set_error(p, "attempt %u of %u: %s", it->attempts, p->max_attempts, why);
			it->retry_at_ns =
				hc_clock_ns(CLOCK_MONOTONIC) + (int64_t)backoff_ns(p, it->attempts);
		}
		break;
	case OUT_STOPPED:
		break;
	}
	pthread_mutex_unlock(&p->lock);
}

static void *run(void *arg)
{
	struct hc_push *p = arg;
	int64_t next_fetch_ns = hc_clock_ns(CLOCK_MONOTONIC) + (int64_t)p->interval_ns, now, until;
	struct item *head;
	struct timespec ts;

	pthread_mutex_lock(&p->lock);
	while (!atomic_load(&p->stop)) {
		now = hc_clock_ns(CLOCK_MONOTONIC);
		if (now >= next_fetch_ns) {
			pthread_mutex_unlock(&p->lock);
			fetch_window(p);
			pthread_mutex_lock(&p->lock);
			/* Keep the cadence; after a long send, start again from now. */
			next_fetch_ns += (int64_t)p->interval_ns;
			if (next_fetch_ns <= now)
				next_fetch_ns = now + (int64_t)p->interval_ns;
			continue;
		}
		head = queue_head(p);
		if (head && head->retry_at_ns <= now) {
			pthread_mutex_unlock(&p->lock);
			send_head(p);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		until = next_fetch_ns;
		if (head && head->retry_at_ns < until)
			until = head->retry_at_ns;
		ts.tv_sec = until / NS;
		ts.tv_nsec = until % NS;
		pthread_cond_timedwait(&p->wake, &p->lock, &ts);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- lifecycle ---- */

static void push_destroy(struct hc_push *p)
{
	size_t i;

	if (p->q)
		for (i = 0; i < p->n; i++)
			free(p->q[(p->head + i) % p->queue_max].buf);
	free(p->q);
	if (p->multi)
		p->cu->multi_cleanup(p->multi);
	if (p->easy)
		p->cu->easy_cleanup(p->easy);
	p->cu->free(p->ingest_url);
	p->cu->free(p->shown_url);
	free(p->name);
	free(p->user_agent);
	free(p->type_config);
	free(p);
}

static int setup_easy(struct hc_push *p)
{
	long timeout_ms = (long)(p->timeout_ns / MS), connect_ms;
	int err = 0;

	if (timeout_ms < 1)
		timeout_ms = 1;
	connect_ms = timeout_ms < CONNECT_TIMEOUT_NS / MS ? timeout_ms : CONNECT_TIMEOUT_NS / MS;
	p->easy = p->cu->easy_init();
	p->multi = p->cu->multi_init();
	if (!p->easy || !p->multi)
		return -ENOMEM;
	/* Threads: never let curl raise SIGALRM/SIGPIPE for timeouts and broken sockets. */
	err |= p->cu->easy_setopt(p->easy, CURLOPT_NOSIGNAL, 1L);
	err |= p->cu->easy_setopt(p->easy, CURLOPT_TIMEOUT_MS, timeout_ms);
	err |= p->cu->easy_setopt(p->easy, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	err |= p->cu->easy_setopt(p->easy, CURLOPT_USERAGENT, p->user_agent);
	/* A redirect could carry the profile (and basic-auth credentials) elsewhere. */
	err |= p->cu->easy_setopt(p->easy, CURLOPT_FOLLOWLOCATION, 0L);
#if LIBCURL_VERSION_NUM >= 0x075500
	err |= p->cu->easy_setopt(p->easy, CURLOPT_PROTOCOLS_STR, "http,https");
#else
	err |= p->cu->easy_setopt(p->easy, CURLOPT_PROTOCOLS, CURLPROTO_HTTP | CURLPROTO_HTTPS);
#endif
	err |= p->cu->easy_setopt(p->easy, CURLOPT_NOPROGRESS, 0L);
	err |= p->cu->easy_setopt(p->easy, CURLOPT_XFERINFOFUNCTION, on_progress);
	err |= p->cu->easy_setopt(p->easy, CURLOPT_XFERINFODATA, p);
	err |= p->cu->easy_setopt(p->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	return err ? -EINVAL : 0;
}

struct hc_push *hc_push__new(const struct hc_push_opts *o, hc_push_fetch_fn fetch, void *ctx)
{
	const struct hc_curl *cu;
	struct hc_push *p;
	pthread_condattr_t ca;
	int err;

	if (!o || !fetch || o->interval_ns < (uint64_t)NS || !o->service || !*o->service ||
	    (o->weights & ~(unsigned int)HC_W_ALL)) {
		errno = EINVAL;
		return NULL;
	}
	cu = hc_curl__get(NULL, 0);
	if (!cu)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->cu = cu;
	p->fetch = fetch;
	p->ctx = ctx;
	p->weights = o->weights ? o->weights : HC_W_ALL;
	p->interval_ns = o->interval_ns;
	p->queue_max = o->queue_max ? o->queue_max : DEFAULT_QUEUE_MAX;
	p->max_attempts = o->max_attempts ? o->max_attempts : DEFAULT_MAX_ATTEMPTS;
	p->timeout_ns = o->timeout_ns ? o->timeout_ns : DEFAULT_TIMEOUT_NS;
	p->backoff_cap_ns = o->interval_ns < (uint64_t)BACKOFF_MAX_NS ? o->interval_ns
								      : (uint64_t)BACKOFF_MAX_NS;
	p->sample_rate_hz = o->sample_rate_hz > 0 && o->sample_rate_hz < 1e9
				    ? (unsigned int)(o->sample_rate_hz + 0.5)
				    : 0;
	atomic_init(&p->stop, false);

	err = parse_url(p, o->url);
	if (err)
		goto err_destroy;
	err = -ENOMEM;
	p->name = build_name(o->service, o->host);
	p->type_config = build_type_config(p->weights);
	p->q = calloc(p->queue_max, sizeof(*p->q));
	if (asprintf(&p->user_agent, "hotcold/%s", o->version ? o->version : "unknown") < 0)
		p->user_agent = NULL;
	if (!p->name || !p->type_config || !p->q || !p->user_agent)
		goto err_destroy;
	err = setup_easy(p);
	if (err)
		goto err_destroy;
	/* The first window starts at a whole second so that windows line up with the store's. */
	p->next_from_ns = hc_clock_ns(CLOCK_REALTIME) / NS * NS;

	err = -pthread_mutex_init(&p->lock, NULL);
	if (err)
		goto err_destroy;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	err = -pthread_cond_init(&p->wake, &ca);
	pthread_condattr_destroy(&ca);
	if (err)
		goto err_mutex;
	err = -pthread_create(&p->thread, NULL, run, p);
	if (err)
		goto err_cond;
	return p;

err_cond:
	pthread_cond_destroy(&p->wake);
err_mutex:
	pthread_mutex_destroy(&p->lock);
err_destroy:
	push_destroy(p);
	errno = -err;
	return NULL;
}

void hc_push__free(struct hc_push *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	atomic_store(&p->stop, true);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	p->cu->multi_wakeup(p->multi); /* interrupts a transfer in progress */
	pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	push_destroy(p);
}

/* ---- status and metrics ---- */

/* Times in the status: RFC 3339, or null for "never". */
static json_t *rfc3339(int64_t ns)
{
	return ns ? hc_json__rfc3339_ms(ns) : json_null();
}

/* The PUSH family of counters.def. Under p->lock. */
static void push_counters(const struct hc_push *p, struct hc_counters *c)
{
	uint64_t *v = c->v;

	v[HC_C_PUSH_INTERVAL_S] = p->interval_ns / NS;
	v[HC_C_PUSH_QUEUE_MAX] = p->queue_max;
	v[HC_C_PUSH_MAX_ATTEMPTS] = p->max_attempts;
	v[HC_C_PUSH_FETCHED] = p->fetched;
	v[HC_C_PUSH_QUEUED] = p->n;
	v[HC_C_PUSH_SENT] = p->sent;
	v[HC_C_PUSH_BYTES_SENT] = p->bytes_sent;
	v[HC_C_PUSH_ATTEMPTS] = p->attempts;
	v[HC_C_PUSH_RETRIES] = p->retries;
	v[HC_C_PUSH_DROP_QUEUE_FULL] = p->drop_queue_full;
	v[HC_C_PUSH_DROP_REJECTED] = p->drop_rejected;
	v[HC_C_PUSH_DROP_RETRIES_EXHAUSTED] = p->drop_retries_exhausted;
	v[HC_C_PUSH_DROP_FETCH_ERROR] = p->drop_fetch_error;
}

json_t *hc_push__status(struct hc_push *p)
{
	struct hc_counters c = {0};
	json_t *doc;

	pthread_mutex_lock(&p->lock);
	push_counters(p, &c);
	doc = json_pack("{s:s, s:o, s:s?, s:o, s:o}", "url", p->shown_url, "last_success",
			rfc3339(p->last_success_ns), "last_error",
			p->last_error_ns ? p->last_error : NULL, "last_error_at",
			rfc3339(p->last_error_ns), "pushed_until", rfc3339(p->next_from_ns));
	pthread_mutex_unlock(&p->lock);
	if (doc && hc_counters__to_json(&c, HC_F_PUSH, doc)) {
		json_decref(doc);
		doc = NULL;
	}
	if (!doc)
		errno = ENOMEM;
	return doc;
}

int hc_push__metrics(struct hc_push *p, FILE *out)
{
	struct hc_counters c = {0};
	int64_t last_ok;

	pthread_mutex_lock(&p->lock);
	push_counters(p, &c);
	last_ok = p->last_success_ns;
	pthread_mutex_unlock(&p->lock);
	hc_counters__write_metrics(&c, HC_F_BIT(HC_F_PUSH), out);
	fprintf(out,
		"# HELP hotcold_push_last_success_timestamp_seconds when Pyroscope last "
		"accepted a profile (0: never).\n"
		"# TYPE hotcold_push_last_success_timestamp_seconds gauge\n"
		"hotcold_push_last_success_timestamp_seconds %.3f\n",
		(double)last_ok / 1e9);
	return ferror(out) ? -EIO : 0;
}
