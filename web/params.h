/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * web/params: every input of the HTTP layer that comes from the client or the command line
 * (query parameters, the Host header, --listen), each parsed by one pure function fed a string:
 * no sockets, no clock, no libmicrohttpd. They return 0 or -errno (-EINVAL garbage, -ERANGE out
 * of range) and fill `why` with a one-line reason meant for an {"error": ...} body or a CLI
 * message; the caller reports it.
 */
#ifndef HOTCOLD_WEB_PARAMS_H
#define HOTCOLD_WEB_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/socket.h>

#include "web/api.h"

#define HC_PARAM_MAX_SLOTS 10000 /* /api/timeline: (to - from) / step at most */
#define HC_HIST_NAME_MAX 64	 /* /api/histograms/NAME: [a-z_]{1,64} */

/* "[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]:65535" and a NUL fit. */
#define HC_LISTEN_ADDR_MAX 64
#define HC_LISTEN_DEFAULT "127.0.0.1:8080"

/*
 * --listen ADDR:PORT: `a.b.c.d:PORT`, `[IPv6]:PORT` or `localhost:PORT` (127.0.0.1); PORT is
 * 0..65535 (0: the kernel picks). NULL or "": HC_LISTEN_DEFAULT. Numeric addresses only: no
 * name resolution, no IPv6 zone. Fills *ss and *len; -EINVAL with a reason.
 */
int hc_listen__parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len, char *why,
		     size_t why_len);
/* "a.b.c.d:PORT" or "[v6]:PORT" for an AF_INET/AF_INET6 address; -EAFNOSUPPORT otherwise. */
int hc_listen__format(const struct sockaddr *sa, socklen_t len, char *out, size_t out_len);

/*
 * The Host header against the canonical listen address (hc_listen__format). Accepted: the
 * listen address itself (ASCII case-insensitive), or one of the loopback names `localhost`,
 * `127.0.0.1`, `[::1]` either bare or followed by `:` and exactly the listen port. Anything
 * else, including a missing (NULL) or empty Host, is refused.
 */
bool hc_host__allowed(const char *host, const char *listen_addr);

/*
 * Times (from, to): RFC 3339 (`2026-11-22T10:00:00Z`, `...T11:00:00.250+01:00`; `T`/`Z` in
 * either case; up to 9 fraction digits; a space where the offset's `+` should be is read as
 * `+`, because form decoding turns a raw `+` into a space), unix milliseconds (digits only),
 * a relative `-DURATION` (the grammar of hc_duration__parse: -30s, -5m, -500ms; at most
 * 30 days) before now_ns, or `now`. The result must lie in [0, INT64_MAX] ns.
 */
int hc_param__time(const char *s, int64_t now_ns, int64_t *out_ns, char *why, size_t why_len);
/* pid, tid: decimal digits only, 1..INT_MAX. */
int hc_param__id(const char *s, uint32_t *out, char *why, size_t why_len);
/* comm: 1..HC_API_COMM_MAX bytes, no control characters (< 0x20, 0x7f). */
int hc_param__comm(const char *s, char *why, size_t why_len);
/* kind: `all`, `on`, `off`. */
int hc_param__kind(const char *s, enum hc_api_kind *out, char *why, size_t why_len);
/* max_nodes: decimal digits only, 1..HC_API_MAX_MAX_NODES. */
int hc_param__max_nodes(const char *s, size_t *out, char *why, size_t why_len);
/* step: a duration (hc_duration__parse grammar), a whole number of seconds, at least 1 s. */
int hc_param__step(const char *s, uint64_t *out_ns, char *why, size_t why_len);
/* seconds: a whole number of seconds in 1..HC_PARAM_MAX_SECONDS (Go's pprof handler's
 * parameter: an integer, no unit). */
int hc_param__seconds(const char *s, uint64_t *out_ns, char *why, size_t why_len);
/* A histogram name: [a-z_]{1,HC_HIST_NAME_MAX}. */
bool hc_param__hist_name_ok(const char *s);

/*
 * Percent-decoding of one query key or value, done here rather than by libmicrohttpd so that
 * bad escapes and NUL bytes are errors: `%XX` (hex, either case) -> that byte; `%` not followed
 * by two hex digits: -EINVAL; a decoded NUL: -EINVAL. (`+` was already turned into a space by
 * libmicrohttpd.) Decodes in place; the result is never longer.
 */
int hc_param__unescape(char *s, char *why, size_t why_len);

/* The parameters a route accepts. */
enum hc_param_bit {
	HC_P_FROM = 1u << 0,
	HC_P_TO = 1u << 1,
	HC_P_PID = 1u << 2,
	HC_P_TID = 1u << 3,
	HC_P_COMM = 1u << 4,
	HC_P_KIND = 1u << 5,
	HC_P_MAX_NODES = 1u << 6,
	HC_P_STEP = 1u << 7,
	HC_P_SECONDS = 1u << 8, /* Go's /debug/pprof/profile: instead of from and to */
};

#define HC_P_PROFILE \
	(HC_P_FROM | HC_P_TO | HC_P_PID | HC_P_TID | HC_P_COMM | HC_P_KIND | HC_P_MAX_NODES)
#define HC_P_HISTOGRAM (HC_P_FROM | HC_P_TO | HC_P_PID | HC_P_COMM)
#define HC_P_TIMELINE (HC_P_FROM | HC_P_TO | HC_P_STEP)
#define HC_P_LOCKS (HC_P_FROM | HC_P_TO | HC_P_MAX_NODES)
#define HC_P_GO_PPROF (HC_P_SECONDS | HC_P_PID | HC_P_TID | HC_P_COMM | HC_P_KIND)

#define HC_PARAM_DEFAULT_SECONDS 30 /* Go's net/http/pprof default */
#define HC_PARAM_MAX_SECONDS 86400

/* One query parameter as the client sent it (already percent-decoded); value NULL: `?key`. */
struct hc_param_kv {
	const char *key;
	const char *value;
};

/*
 * A request's query parameters -> a query. Refused (-EINVAL, `why` starts with the parameter's
 * name): a parameter the route does not take, one given twice, one without a value, one whose
 * value does not parse, from >= to, a timeline of more than HC_PARAM_MAX_SLOTS steps.
 * Defaults: to = now_ns, from = to - HC_API_DEFAULT_RANGE_NS, kind all, max_nodes
 * HC_API_DEFAULT_MAX_NODES, step 1 s for routes that take it (0 otherwise), no pid/tid/comm.
 * Routes that take `seconds` (and no from/to): last_ns = seconds (default
 * HC_PARAM_DEFAULT_SECONDS), to = now_ns, from = to - last_ns.
 * q->comm points into kv[] (the caller keeps kv alive while q is used).
 */
int hc_params__parse(unsigned int accepted, const struct hc_param_kv *kv, size_t n, int64_t now_ns,
		     struct hc_api_query *q, char *why, size_t why_len);

#endif
