/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * serve/push: sends the store's profile to Grafana Pyroscope's HTTP ingest API on an interval,
 * from a thread of the unprivileged server process (docs/push-notes.md has the protocol facts).
 *
 * Every interval the thread asks the fetch callback for [last covered end, now) and queues the
 * gzipped pprof it gets; windows are consecutive and never overlap. A sender takes the queue
 * oldest first: connection errors, timeouts, 408, 429 and 5xx are retried with exponential
 * backoff (1 s, 2 s, 4 s ... capped at min(interval, 60 s)) up to max_attempts; other non-2xx
 * answers drop the profile at once. A full queue drops its oldest profile. Every profile is
 * counted exactly once: sent, or dropped by reason, or still queued.
 *
 * The request, as Pyroscope's own clients send it (pyroscope-go upstream/remote):
 *   POST {url}/ingest?name=SERVICE{host=HOST,service=SERVICE}&from=S&until=S&spyName=hotcold
 *        &sampleRate=HZ
 *   Content-Type: multipart/form-data; parts `profile` (the gzipped pprof) and
 *   `sample_type_config` (JSON naming our sample types). No `format` parameter: Pyroscope
 *   only looks for the multipart parts when `format` is not `pprof`.
 * SERVICE keeps only [A-Za-z0-9_.-/] (Pyroscope refuses other characters in the application
 * name); label values lose ',', '{', '}', '=', '"' and control characters (the name syntax
 * has no escaping).
 */
#ifndef HOTCOLD_SERVE_PUSH_H
#define HOTCOLD_SERVE_PUSH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

/*
 * Fill *buf (malloc'd, gzipped pprof) with the profile of [from_ns, *to_ns). *to_ns in: the
 * end wanted; out: the end actually covered (whole seconds, <= in; the store only answers for
 * sealed seconds). Returns 0; -ENODATA when nothing new is held (*to_ns <= from_ns); -errno.
 * Called on the push thread only. Times are CLOCK_REALTIME ns since the epoch.
 */
typedef int (*hc_push_fetch_fn)(void *ctx, int64_t from_ns, int64_t *to_ns, unsigned int weights,
				char **buf, size_t *len);

struct hc_push_opts {
	const char *url;	   /* Pyroscope base URL: http://host:4040 (path /ingest appended);
				    * http or https; user:password@ becomes basic auth */
	uint64_t interval_ns;	   /* how often to push (>= 1 s) */
	const char *service;	   /* application name and `service` label */
	const char *host;	   /* `host` label; NULL or "": none */
	unsigned int weights;	   /* HC_W_* bits passed to fetch (0: HC_W_ALL) */
	double sample_rate_hz;	   /* sent as an integer; 0: not sent */
	size_t queue_max;	   /* profiles held while the receiver is unreachable (0: 32) */
	unsigned int max_attempts; /* per profile (0: 5) */
	uint64_t timeout_ns;	   /* per request (0: 10 s) */
	const char *version;	   /* User-Agent hotcold/VERSION; NULL: "unknown" */
};

struct hc_push;

/*
 * Validates the options and the URL, copies what it needs (o's strings need not outlive the
 * call) and starts the thread. fetch and ctx must stay valid until hc_push__free() returns.
 * NULL + errno: EINVAL (URL not http(s)://host..., interval < 1 s, no service, unknown weight
 * bits), ELIBACC (libcurl cannot be loaded: hc_curl__get() says why), ENOMEM, or the error of
 * pthread_create.
 */
struct hc_push *hc_push__new(const struct hc_push_opts *o, hc_push_fetch_fn fetch, void *ctx);
/* Stops the thread at once, even while a request hangs (the transfer is aborted through
 * curl_multi_wakeup()), and drops what is still queued. NULL is a no-op. */
void hc_push__free(struct hc_push *p);
/*
 * A new object (NULL + errno on failure), consistent at one instant:
 * {url (credentials removed), interval_s, queue_max, max_attempts, fetched, queued, sent,
 *  bytes_sent, attempts, retries, dropped:{queue_full, rejected, retries_exhausted,
 *  fetch_error}, last_success, last_error, last_error_at, pushed_until}
 * fetched counts fetch calls that did not answer -ENODATA, so
 * fetched == sent + queued + sum(dropped). Times are RFC 3339 strings or null.
 * Safe to call from any thread while the push thread runs.
 */
json_t *hc_push__status(struct hc_push *p);
/* Prometheus text exposition lines (with HELP/TYPE) for the counters above:
 * hotcold_push_{sent,sent_bytes,attempts,retries,dropped{reason}}_total, hotcold_push_queued,
 * hotcold_push_last_success_timestamp_seconds. 0 or -EIO. Thread-safe like status. */
int hc_push__metrics(struct hc_push *p, FILE *out);

#endif
