// SPDX-License-Identifier: GPL-2.0-only
/*
 * web/server: libmicrohttpd glue. Each request: Host check, size check, method check, route
 * (one exact-path table), query parameters (web/params.c), then one backend call and one
 * response. Every response goes through queue() so that every one carries the same headers.
 */
#include "web/server.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "base/time.h"
#include "profile/jstream.h"
#include "web/assets.h"
#include "web/mhd_dl.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_QUERY_PARAMS 16 /* more than any route takes; more is an error, not a truncation */

#define CT_JSON "application/json; charset=utf-8"
#define CT_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define CT_FOLDED "text/plain; charset=utf-8"
#define CT_PPROF "application/octet-stream" /* as Go's net/http/pprof answers */

/* The viewer's policy: its own files only, no inline script or style, fetches to this origin
 * only (connect-src), never framed. The API's own answers get a policy allowing nothing. */
#define CSP_VIEWER                                                                        \
	"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " \
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; "    \
	"frame-ancestors 'none'"
#define CSP_API "default-src 'none'; frame-ancestors 'none'"

/*
 * Slow clients. libmicrohttpd's connection timeout is an idle timeout: every byte received
 * restarts it, so a client sending its request a byte every few seconds holds its connection
 * for ever, and max_connections such clients hold the whole server (slowloris). A per-IP limit
 * does not help on loopback, where every client, the user's browser included, is 127.0.0.1.
 * So each request gets a deadline: it must have arrived whole (head and any body) within
 * timeout_s of the connection's opening or of the end of the previous answer on it; a watchdog
 * thread shuts down the sockets of those that have not. The connection's slot frees at once
 * and the next client waiting in the listen backlog gets it. The time we take to answer is
 * not counted (a large range can take a second or more under load), and sending the answer is
 * bounded by the idle timeout.
 */
struct watched {
	struct watched *prev, *next;
	struct hc_server *server;
	/* Our own duplicate of the connection's socket: libmicrohttpd may close its descriptor
	 * before telling us the connection closed, and a number it closed can be reused by the
	 * next connection; shutting the socket down through our duplicate can only ever reach
	 * this connection. */
	int fd;
	int64_t since_ns; /* CLOCK_MONOTONIC: opened, or the previous answer was sent */
	bool arrived;	  /* the request is in whole, or refused: the deadline no longer applies */
	bool cut;
};

struct hc_server {
	struct MHD_Daemon *mhd;
	struct hc_api_backend backend;
	char listen_addr[HC_LISTEN_ADDR_MAX];
	int64_t (*now_ns)(void *ctx);
	void *now_ctx;

	/* The watchdog of slow requests (struct watched). */
	pthread_mutex_t watch_lock;
	pthread_cond_t watch_wake; /* CLOCK_MONOTONIC; signalled to stop */
	struct watched *watch_head;
	int64_t deadline_ns;
	bool watch_stop;
	pthread_t watchdog;
};

/* --listen ---------------------------------------------------------------------------------- */

int hc_listen__open(const char *spec, struct hc_listen *out, char *why, size_t why_len)
{
	struct sockaddr_storage ss, bound;
	socklen_t len, blen = sizeof(bound);
	const int one = 1;
	int fd, err;

	out->fd = -1;
	out->addr[0] = '\0';
	err = hc_listen__parse(spec, &ss, &len, why, why_len);
	if (err)
		return err;
	if (!spec || !*spec)
		spec = HC_LISTEN_DEFAULT;

	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		err = -errno;
		snprintf(why, why_len, "%s: socket: %s", spec, strerror(-err));
		return err;
	}
	/* Restarting serve must not wait out TIME_WAIT connections of the previous run. */
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		goto fail_errno;
	/* [::]:PORT means IPv6 only: dual-stack would also open IPv4, which nobody asked for. */
	if (ss.ss_family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)))
		goto fail_errno;
	if (bind(fd, (struct sockaddr *)&ss, len)) {
		err = -errno;
		if (err == -EADDRINUSE)
			snprintf(why, why_len,
				 "%s: address already in use (another hotcold serve?)", spec);
		else if (err == -EACCES)
			snprintf(why, why_len,
				 "%s: permission denied (ports below 1024 need "
				 "CAP_NET_BIND_SERVICE)",
				 spec);
		else if (err == -EADDRNOTAVAIL)
			snprintf(why, why_len, "%s: not an address of this machine", spec);
		else
			snprintf(why, why_len, "%s: bind: %s", spec, strerror(-err));
		goto fail_close;
	}
	if (listen(fd, 128))
		goto fail_errno;
	if (getsockname(fd, (struct sockaddr *)&bound, &blen))
		goto fail_errno;
	err = hc_listen__format((struct sockaddr *)&bound, blen, out->addr, sizeof(out->addr));
	if (err) {
		snprintf(why, why_len, "%s: cannot format the bound address", spec);
		goto fail_close;
	}
	out->fd = fd;
	return 0;

fail_errno:
	err = -errno;
	snprintf(why, why_len, "%s: %s", spec, strerror(-err));
fail_close:
	close(fd);
	return err;
}

void hc_listen__close(struct hc_listen *l)
{
	if (l && l->fd >= 0) {
		close(l->fd);
		l->fd = -1;
	}
}

/* The slow-request watchdog --------------------------------------------------------------- */

static struct watched *watched_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		hc_mhd.get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Connections opening and closing, on libmicrohttpd's threads. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct hc_server *s = cls;
	struct watched *w = *socket_context;
	const union MHD_ConnectionInfo *ci;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = hc_mhd.get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		if (!ci)
			return;
		w = calloc(1, sizeof(*w));
		if (w)
			w->fd = fcntl(ci->connect_fd, F_DUPFD_CLOEXEC, 3);
		if (!w || w->fd < 0) {
			/* A connection the watchdog cannot bound is not served. */
			shutdown(ci->connect_fd, SHUT_RDWR);
			free(w);
			return;
		}
		w->server = s;
		w->since_ns = hc_clock_ns(CLOCK_MONOTONIC);
		pthread_mutex_lock(&s->watch_lock);
		w->next = s->watch_head;
		if (w->next)
			w->next->prev = w;
		s->watch_head = w;
		pthread_mutex_unlock(&s->watch_lock);
		*socket_context = w;
		return;
	}
	if (code != MHD_CONNECTION_NOTIFY_CLOSED || !w)
		return;
	pthread_mutex_lock(&s->watch_lock);
	if (w->prev)
		w->prev->next = w->next;
	else
		s->watch_head = w->next;
	if (w->next)
		w->next->prev = w->prev;
	pthread_mutex_unlock(&s->watch_lock);
	close(w->fd);
	free(w);
	*socket_context = NULL;
}

/* An answer went out (or the request ended otherwise): the next request's time starts. */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct hc_server *s = cls;
	struct watched *w = watched_of(c);

	(void)con_cls;
	(void)toe;
	if (!w)
		return;
	pthread_mutex_lock(&s->watch_lock);
	w->arrived = false;
	w->since_ns = hc_clock_ns(CLOCK_MONOTONIC);
	pthread_mutex_unlock(&s->watch_lock);
}

static void mark_arrived(struct MHD_Connection *c)
{
	struct watched *w = watched_of(c);

	if (!w)
		return;
	pthread_mutex_lock(&w->server->watch_lock);
	w->arrived = true;
	pthread_mutex_unlock(&w->server->watch_lock);
}

/*
 * Wakes every quarter of the deadline (at least every second, at most ten times a second), so
 * a slow request is cut between 1 and 1.25 deadlines after its time started. shutdown(2), not
 * close: libmicrohttpd sees the end of the stream on its own thread and closes the connection
 * itself.
 */
static void *watchdog_main(void *arg)
{
	struct hc_server *s = arg;
	int64_t tick_ns = s->deadline_ns / 4;
	struct timespec until;

	if (tick_ns > 1000000000ll)
		tick_ns = 1000000000ll;
	if (tick_ns < 100000000ll)
		tick_ns = 100000000ll;
	pthread_mutex_lock(&s->watch_lock);
	while (!s->watch_stop) {
		int64_t now = hc_clock_ns(CLOCK_MONOTONIC), next = now + tick_ns;

		for (struct watched *w = s->watch_head; w; w = w->next) {
			if (w->arrived || w->cut || now - w->since_ns < s->deadline_ns)
				continue;
			shutdown(w->fd, SHUT_RDWR);
			w->cut = true;
		}
		until.tv_sec = next / 1000000000ll;
		until.tv_nsec = next % 1000000000ll;
		pthread_cond_timedwait(&s->watch_wake, &s->watch_lock, &until);
	}
	pthread_mutex_unlock(&s->watch_lock);
	return NULL;
}

static void watchdog_stop(struct hc_server *s)
{
	pthread_mutex_lock(&s->watch_lock);
	s->watch_stop = true;
	pthread_cond_signal(&s->watch_wake);
	pthread_mutex_unlock(&s->watch_lock);
	pthread_join(s->watchdog, NULL);
}

/* Responses ------------------------------------------------------------------------------- */

/*
 * Queue `body` (len bytes, owned per `mode`) with the headers every response carries. HEAD:
 * libmicrohttpd sends the headers (Content-Length included) and drops the body itself.
 */
static enum MHD_Result queue(struct MHD_Connection *c, unsigned int status, void *body, size_t len,
			     enum MHD_ResponseMemoryMode mode, const char *type, bool viewer)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	r = hc_mhd.create_response_from_buffer(len, body, mode);
	if (!r) {
		if (mode == MHD_RESPMEM_MUST_FREE)
			free(body);
		return MHD_NO; /* libmicrohttpd closes the connection */
	}
	if (hc_mhd.add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type) != MHD_YES ||
	    hc_mhd.add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store") != MHD_YES ||
	    hc_mhd.add_response_header(r, "X-Content-Type-Options", "nosniff") != MHD_YES ||
	    hc_mhd.add_response_header(r, "X-Frame-Options", "DENY") != MHD_YES ||
	    hc_mhd.add_response_header(r, "Referrer-Policy", "no-referrer") != MHD_YES ||
	    hc_mhd.add_response_header(r, "Content-Security-Policy",
				       viewer ? CSP_VIEWER : CSP_API) != MHD_YES ||
	    (!strcmp(type, CT_PPROF) &&
	     hc_mhd.add_response_header(r, "Content-Disposition",
					"attachment; filename=\"hotcold.pb.gz\"") != MHD_YES) ||
	    (status == MHD_HTTP_METHOD_NOT_ALLOWED &&
	     hc_mhd.add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") != MHD_YES)) {
		hc_mhd.destroy_response(r);
		return MHD_NO;
	}
	ret = hc_mhd.queue_response(c, status, r);
	hc_mhd.destroy_response(r);
	/* refusals are queued before the request is in whole (a body is never read) */
	if (ret == MHD_YES)
		mark_arrived(c);
	return ret;
}

/* The reason may echo client bytes: make it valid UTF-8 for jansson by replacing anything
 * outside printable ASCII. */
static enum MHD_Result queue_error(struct MHD_Connection *c, unsigned int status, const char *why)
{
	char clean[256];
	json_t *doc;
	char *body;
	size_t i;

	for (i = 0; why[i] && i < sizeof(clean) - 1; i++)
		clean[i] = (why[i] >= 0x20 && why[i] < 0x7f) ? why[i] : '?';
	clean[i] = '\0';
	doc = json_pack("{s:s}", "error", clean);
	body = doc ? jstream_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (!body)
		return MHD_NO;
	return queue(c, status, body, strlen(body), MHD_RESPMEM_MUST_FREE, CT_JSON, false);
}

/* A backend answer: a document, or NULL with *status and why. */
static enum MHD_Result queue_doc(struct MHD_Connection *c, json_t *doc, int status, const char *why)
{
	char *body;

	if (!doc) {
		if (status < 400 || status > 599)
			status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		return queue_error(c, (unsigned int)status, why[0] ? why : "no answer");
	}
	body = jstream_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!body)
		return queue_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				   "cannot serialize the answer");
	return queue(c, MHD_HTTP_OK, body, strlen(body), MHD_RESPMEM_MUST_FREE, CT_JSON, false);
}

static enum MHD_Result queue_text(struct MHD_Connection *c, char *text, size_t len, int status,
				  const char *why, const char *type)
{
	if (!text) {
		if (status < 400 || status > 599)
			status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		return queue_error(c, (unsigned int)status, why[0] ? why : "no answer");
	}
	return queue(c, MHD_HTTP_OK, text, len, MHD_RESPMEM_MUST_FREE, type, false);
}

/* Request checks ---------------------------------------------------------------------------- */

struct head_scan {
	size_t bytes;	    /* header names + values, as a stand-in for the request head */
	unsigned int hosts; /* Host headers seen */
	const char *host;
};

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct head_scan *h = cls;

	(void)kind;
	h->bytes += strlen(key) + (value ? strlen(value) : 0) + 4; /* ": " and CRLF */
	if (!strcasecmp(key, MHD_HTTP_HEADER_HOST)) {
		h->hosts++;
		h->host = value;
	}
	return MHD_YES;
}

struct args {
	struct hc_param_kv kv[MAX_QUERY_PARAMS];
	char *copy[MAX_QUERY_PARAMS][2];
	size_t n;
	int err; /* -E2BIG too many, -ENOMEM */
};

/* The query's share of the request head (the URL handed to us stops at the '?'). */
static enum MHD_Result count_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	size_t *bytes = cls;

	(void)kind;
	*bytes += strlen(key) + (value ? strlen(value) + 1 : 0) + 1; /* '=' and '?' or '&' */
	return MHD_YES;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct args *a = cls;

	(void)kind;
	if (a->err)
		return MHD_YES;
	if (a->n == MAX_QUERY_PARAMS) {
		a->err = -E2BIG;
		return MHD_YES;
	}
	a->copy[a->n][0] = strdup(key);
	a->copy[a->n][1] = value ? strdup(value) : NULL;
	if (!a->copy[a->n][0] || (value && !a->copy[a->n][1])) {
		free(a->copy[a->n][0]);
		free(a->copy[a->n][1]);
		a->err = -ENOMEM;
		return MHD_YES;
	}
	a->kv[a->n].key = a->copy[a->n][0];
	a->kv[a->n].value = a->copy[a->n][1];
	a->n++;
	return MHD_YES;
}

static void args_free(struct args *a)
{
	for (size_t i = 0; i < a->n; i++) {
		free(a->copy[i][0]);
		free(a->copy[i][1]);
	}
}

static bool args_has(const struct args *a, const char *key)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->kv[i].key, key))
			return true;
	return false;
}

/* libmicrohttpd would decode %XX in the path and the query itself; we take both raw. The path
 * then only matches the table as written (a %2e never becomes a dot), and each query key and
 * value is decoded by hc_param__unescape, which refuses bad escapes and NUL bytes. */
static size_t unescape_none(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

/* Routes ---------------------------------------------------------------------------------- */

enum route_id {
	ROUTE_PROFILE,
	ROUTE_HIST_NAMES,
	ROUTE_HIST,
	ROUTE_TIMELINE,
	ROUTE_LOCKS,
	ROUTE_STATUS,
	ROUTE_METRICS,
};

static const struct route {
	const char *path;
	enum route_id id;
	unsigned int params;	   /* enum hc_param_bit: what the route accepts */
	enum hc_api_format format; /* the profile routes */
} routes[] = {
	{"/api/profile", ROUTE_PROFILE, HC_P_PROFILE, HC_API_FORMAT_JSON},
	{"/api/profile.folded", ROUTE_PROFILE, HC_P_PROFILE, HC_API_FORMAT_FOLDED},
	{"/api/profile.pprof", ROUTE_PROFILE, HC_P_PROFILE, HC_API_FORMAT_PPROF},
	/* Go's CPU profile handler, for Parca, Pyroscope's scraper and `go tool pprof`. */
	{"/debug/pprof/profile", ROUTE_PROFILE, HC_P_GO_PPROF, HC_API_FORMAT_PPROF},
	{"/api/histograms", ROUTE_HIST_NAMES, 0, HC_API_FORMAT_JSON},
	{"/api/timeline", ROUTE_TIMELINE, HC_P_TIMELINE, HC_API_FORMAT_JSON},
	{"/api/locks", ROUTE_LOCKS, HC_P_LOCKS, HC_API_FORMAT_JSON},
	{"/api/status", ROUTE_STATUS, 0, HC_API_FORMAT_JSON},
	{"/metrics", ROUTE_METRICS, 0, HC_API_FORMAT_JSON},
};

static const struct route hist_route = {"/api/histograms/", ROUTE_HIST, HC_P_HISTOGRAM,
					HC_API_FORMAT_JSON};

static int64_t real_now_ns(void *ctx)
{
	(void)ctx;
	return hc_clock_ns(CLOCK_REALTIME);
}

static enum MHD_Result answer(struct hc_server *s, struct MHD_Connection *c, const struct route *rt,
			      const char *hist_name, const struct hc_api_query *q)
{
	const struct hc_api_backend *b = &s->backend;
	char why[256] = "";
	int status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	size_t len = 0;
	char *text;
	json_t *doc;

	/* Call, then queue: `status` is only meaningful after the call returned. */
	switch (rt->id) {
	case ROUTE_PROFILE:
		if (!b->profile)
			break;
		text = b->profile(b->ctx, q, &len, &status, why, sizeof(why));
		return queue_text(c, text, len, status, why,
				  q->format == HC_API_FORMAT_PPROF    ? CT_PPROF
				  : q->format == HC_API_FORMAT_FOLDED ? CT_FOLDED
								      : CT_JSON);
	case ROUTE_HIST_NAMES:
		if (!b->histogram_names)
			break;
		doc = b->histogram_names(b->ctx, &status, why, sizeof(why));
		return queue_doc(c, doc, status, why);
	case ROUTE_HIST:
		if (!b->histogram)
			break;
		doc = b->histogram(b->ctx, hist_name, q, &status, why, sizeof(why));
		return queue_doc(c, doc, status, why);
	case ROUTE_TIMELINE:
		if (!b->timeline)
			break;
		doc = b->timeline(b->ctx, q, &status, why, sizeof(why));
		return queue_doc(c, doc, status, why);
	case ROUTE_LOCKS:
		if (!b->locks)
			break;
		text = b->locks(b->ctx, q, &len, &status, why, sizeof(why));
		return queue_text(c, text, len, status, why, CT_JSON);
	case ROUTE_STATUS:
		if (!b->status)
			break;
		doc = b->status(b->ctx, &status, why, sizeof(why));
		return queue_doc(c, doc, status, why);
	case ROUTE_METRICS:
		if (!b->metrics)
			break;
		text = b->metrics(b->ctx, &len, &status, why, sizeof(why));
		return queue_text(c, text, len, status, why, CT_METRICS);
	}
	return queue_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "not available in this server");
}

/* *con_cls of a request whose headers passed the first checks. */
static char request_seen;

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct hc_server *s = cls;
	struct head_scan head = {0};
	struct args args = {.n = 0};
	const struct route *rt = NULL;
	const struct hc_asset *asset;
	const char *hist_name = NULL;
	struct hc_api_query q;
	char why[256];
	enum MHD_Result ret;
	int64_t now_ns;

	(void)version;
	(void)upload_data;

	/*
	 * libmicrohttpd calls this once when the headers are in, then again for each piece of
	 * body and once more after it. A response queued on the first call makes it close the
	 * connection (it will not read a body it was not asked for): right for refusals
	 * (421, 405), wrong for answers, which go out on the last call so that keep-alive works.
	 */
	if (!*con_cls) {
		size_t url_bytes = strlen(url);

		hc_mhd.get_connection_values(c, MHD_HEADER_KIND, scan_header, &head);
		hc_mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, count_arg, &url_bytes);
		/* DNS rebinding: only names that can only mean this machine (docs/api.md). */
		if (head.hosts != 1 || !hc_host__allowed(head.host, s->listen_addr))
			return queue_error(c, MHD_HTTP_MISDIRECTED_REQUEST,
					   head.hosts > 1 ? "more than one Host header"
							  : "Host must be this server's listen "
							    "address or localhost");
		if (url_bytes > HC_SERVER_MAX_HEAD)
			return queue_error(c, MHD_HTTP_URI_TOO_LONG, "URL longer than 8 KiB");
		if (url_bytes + head.bytes > HC_SERVER_MAX_HEAD)
			return queue_error(c, MHD_HTTP_REQUEST_HEADER_FIELDS_TOO_LARGE,
					   "URL and headers larger than 8 KiB");
		if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
			return queue_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD");
		*con_cls = &request_seen;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a GET with a body: the body means nothing */
		return MHD_YES;
	}
	mark_arrived(c);

	/* The request's arrival, for relative times: the headers are all in, nothing slow ran. */
	now_ns = s->now_ns(s->now_ctx);
	hc_mhd.get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &args);

	for (size_t i = 0; i < ARRAY_SIZE(routes); i++) {
		if (!strcmp(url, routes[i].path)) {
			rt = &routes[i];
			break;
		}
	}
	if (!rt && !strncmp(url, hist_route.path, strlen(hist_route.path))) {
		hist_name = url + strlen(hist_route.path);
		if (!hc_param__hist_name_ok(hist_name)) {
			args_free(&args);
			return queue_error(c, MHD_HTTP_NOT_FOUND, "no such histogram");
		}
		rt = &hist_route;
	}
	if (!rt) {
		/* The viewer's files take no parameters, but a browser or a proxy may add a
		 * cache buster: ignored rather than refused. */
		args_free(&args);
		asset = hc_asset__find(url);
		if (!asset)
			return queue_error(c, MHD_HTTP_NOT_FOUND, "no such path");
		return queue(c, MHD_HTTP_OK, (void *)asset->data, asset->len,
			     MHD_RESPMEM_PERSISTENT, asset->content_type,
			     !strncmp(asset->content_type, "text/html", 9));
	}

	if (args.err) {
		args_free(&args);
		if (args.err == -E2BIG)
			return queue_error(c, MHD_HTTP_BAD_REQUEST, "too many query parameters");
		return queue_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
	}
	for (size_t i = 0; i < args.n; i++) {
		char uwhy[64];

		if (hc_param__unescape(args.copy[i][0], uwhy, sizeof(uwhy))) {
			snprintf(why, sizeof(why), "query: %s in a parameter name", uwhy);
			goto bad_request;
		}
		if (args.copy[i][1] && hc_param__unescape(args.copy[i][1], uwhy, sizeof(uwhy))) {
			snprintf(why, sizeof(why), "%.64s: %s", args.copy[i][0], uwhy);
			goto bad_request;
		}
	}
	if (hc_params__parse(rt->params, args.kv, args.n, now_ns, &q, why, sizeof(why)))
		goto bad_request;
	q.format = rt->format;
	/* Tools get the whole tree (up to the largest max_nodes, so that one request cannot
	 * take the server's memory) unless they ask for less; the viewer's JSON stays pruned.
	 * Go's handler profiles the CPU: on-CPU time unless kind says otherwise. */
	if (rt->format != HC_API_FORMAT_JSON && !args_has(&args, "max_nodes"))
		q.max_nodes = HC_API_MAX_MAX_NODES;
	if ((rt->params & HC_P_SECONDS) && !args_has(&args, "kind"))
		q.kind = HC_API_KIND_ON;

	ret = answer(s, c, rt, hist_name, &q);
	args_free(&args);
	return ret;

bad_request:
	args_free(&args);
	return queue_error(c, MHD_HTTP_BAD_REQUEST, why);
}

/* Lifecycle ------------------------------------------------------------------------------- */

struct hc_server *hc_server__new(const struct hc_server_opts *o,
				 const struct hc_api_backend *backend)
{
	unsigned int threads, max_conn, timeout_s;
	pthread_condattr_t cattr;
	struct hc_server *s;
	size_t mem;
	int fd, err;

	if (!o || !backend || o->listen_fd < 0 || !o->listen_addr ||
	    strlen(o->listen_addr) >= HC_LISTEN_ADDR_MAX) {
		errno = EINVAL;
		return NULL;
	}
	threads = o->threads ? o->threads : HC_SERVER_DEFAULT_THREADS;
	max_conn = o->max_connections ? o->max_connections : HC_SERVER_DEFAULT_MAX_CONNECTIONS;
	timeout_s = o->timeout_s ? o->timeout_s : HC_SERVER_DEFAULT_TIMEOUT_S;
	mem = o->memory_limit ? o->memory_limit : HC_SERVER_DEFAULT_MEMORY_LIMIT;
	/* libmicrohttpd splits the connection limit between the pool threads. */
	if (threads > 64 || max_conn < threads) {
		errno = EINVAL;
		return NULL;
	}
	if (hc_mhd__load(NULL, 0)) {
		errno = ELIBACC;
		return NULL;
	}

	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->backend = *backend;
	strcpy(s->listen_addr, o->listen_addr);
	s->now_ns = o->now_ns ? o->now_ns : real_now_ns;
	s->now_ctx = o->now_ctx;
	s->deadline_ns = (int64_t)timeout_s * 1000000000ll;

	err = pthread_condattr_init(&cattr);
	if (err)
		goto free_server;
	err = pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
	if (!err)
		err = pthread_cond_init(&s->watch_wake, &cattr);
	pthread_condattr_destroy(&cattr);
	if (err)
		goto free_server;
	err = pthread_mutex_init(&s->watch_lock, NULL);
	if (err)
		goto destroy_cond;
	err = pthread_create(&s->watchdog, NULL, watchdog_main, s);
	if (err)
		goto destroy_lock;

	/*
	 * libmicrohttpd gets a duplicate: whether it closes a listen socket it was given when
	 * MHD_start_daemon fails is not documented, so the caller's fd stays the caller's until
	 * we know the server runs (a failure may leak the duplicate; serve exits then anyway).
	 */
	fd = fcntl(o->listen_fd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0) {
		err = errno;
		goto stop_watchdog;
	}

	/*
	 * No MHD_USE_ERROR_LOG: the library never prints. Not strict for clients (RFC 7230
	 * section 3.2.4 lenience is libmicrohttpd's default): a missing Host reaches us and is
	 * answered 421 like a wrong one. The connection timeout is an idle timeout; the
	 * watchdog bounds each request as a whole (struct watched).
	 */
	s->mhd = hc_mhd.start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL, on_request, s,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd, MHD_OPTION_THREAD_POOL_SIZE, threads,
		MHD_OPTION_CONNECTION_LIMIT, max_conn, MHD_OPTION_CONNECTION_TIMEOUT, timeout_s,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, mem, MHD_OPTION_UNESCAPE_CALLBACK,
		unescape_none, NULL, MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_END);
	if (!s->mhd) {
		err = EIO; /* libmicrohttpd does not say why */
		goto stop_watchdog;
	}
	close(o->listen_fd);
	return s;

stop_watchdog:
	watchdog_stop(s);
destroy_lock:
	pthread_mutex_destroy(&s->watch_lock);
destroy_cond:
	pthread_cond_destroy(&s->watch_wake);
free_server:
	free(s);
	errno = err;
	return NULL;
}

void hc_server__free(struct hc_server *s)
{
	if (!s)
		return;
	/* Joins the pool threads and closes the listen socket and every connection (each
	 * closing connection leaves the watchdog's list). */
	hc_mhd.stop_daemon(s->mhd);
	watchdog_stop(s);
	pthread_mutex_destroy(&s->watch_lock);
	pthread_cond_destroy(&s->watch_wake);
	free(s);
}
