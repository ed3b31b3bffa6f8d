/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * web/api.h: what the HTTP layer (web/server.c) asks of the data behind it.
 *
 * The HTTP layer parses and validates every request (path, query parameters, Host) and turns
 * it into a struct hc_api_query; the backend (the store in `hotcold serve`, a fake in tests)
 * answers with jansson documents or text. Backend functions run on libmicrohttpd's pool
 * threads, possibly several at once: the backend does its own locking.
 *
 * Times are CLOCK_REALTIME nanoseconds since the epoch; the HTTP layer has already resolved
 * relative times ("-30s") against the request's arrival.
 */
#ifndef HOTCOLD_WEB_API_H
#define HOTCOLD_WEB_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

enum hc_api_kind {
	HC_API_KIND_ALL = 0, /* on-CPU + blocked + run-queue */
	HC_API_KIND_ON,	     /* on-CPU only */
	HC_API_KIND_OFF,     /* off-CPU: blocked + run-queue */
};

/* How /api/profile's answer is encoded (the route picks it). */
enum hc_api_format {
	HC_API_FORMAT_JSON = 0, /* hotcold-profile/1 */
	HC_API_FORMAT_FOLDED,	/* flamegraph.pl folded stacks, ns */
	HC_API_FORMAT_PPROF,	/* gzipped profile.proto */
};

#define HC_API_DEFAULT_RANGE_NS (60ull * 1000000000ull) /* from defaults to to - 60 s */
#define HC_API_DEFAULT_MAX_NODES 20000
#define HC_API_MAX_MAX_NODES 1000000
#define HC_API_COMM_MAX 15 /* the kernel keeps 15 bytes of a process name */

struct hc_api_query {
	int64_t from_ns; /* inclusive */
	int64_t to_ns;	 /* exclusive; from_ns < to_ns */
	bool has_pid;
	uint32_t pid; /* process (tgid) */
	bool has_tid;
	uint32_t tid;
	const char *comm; /* process name, exact; NULL: any. Borrowed for the call. */
	enum hc_api_kind kind;
	size_t max_nodes; /* /api/profile: largest nodes kept, the rest folded into parents */
	uint64_t step_ns; /* /api/timeline: slot width; 0: the backend picks (1 s) */
	enum hc_api_format format; /* the profile routes */
	/* /debug/pprof/profile?seconds=N: N s in ns. Nonzero: the range is the newest N complete
	 * seconds the backend holds, whatever from_ns/to_ns say (they are now - N, now). */
	uint64_t last_ns;
};

/*
 * Each returns a new reference, or NULL with *status set to the HTTP status to answer
 * (404 for an unknown histogram, 409 for lock data without --locks, 503 while there is no data
 * yet, 500 otherwise) and `why`
 * filled with a one-line reason for the {"error": ...} body.
 */
struct hc_api_backend {
	/* GET /api/profile (and .folded, .pprof, /debug/pprof/profile): the range's profile,
	 * already encoded in q->format (a hotcold-profile/1 document is streamed by
	 * hc_profile__write_json: building 20k+ nodes as json_t is too slow).
	 * malloc'd, *len bytes; NULL + *status as below. */
	char *(*profile)(void *ctx, const struct hc_api_query *q, size_t *len, int *status,
			 char *why, size_t why_len);
	/* GET /api/histograms: {"histograms": ["name", ...]}. */
	json_t *(*histogram_names)(void *ctx, int *status, char *why, size_t why_len);
	/* GET /api/histograms/NAME: one histogram, the shape of docs/histograms.md. */
	json_t *(*histogram)(void *ctx, const char *name, const struct hc_api_query *q, int *status,
			     char *why, size_t why_len);
	/* GET /api/timeline: docs/api.md. */
	json_t *(*timeline)(void *ctx, const struct hc_api_query *q, int *status, char *why,
			    size_t why_len);
	/* GET /api/locks: the range's lock contention (docs/api.md), JSON text as profile;
	 * 409 when serve runs without --locks. */
	char *(*locks)(void *ctx, const struct hc_api_query *q, size_t *len, int *status, char *why,
		       size_t why_len);
	/* GET /api/status: docs/api.md. */
	json_t *(*status)(void *ctx, int *status, char *why, size_t why_len);
	/* GET /metrics: Prometheus text exposition format 0.0.4; malloc'd, *len bytes. */
	char *(*metrics)(void *ctx, size_t *len, int *status, char *why, size_t why_len);
	void *ctx;
};

#endif
