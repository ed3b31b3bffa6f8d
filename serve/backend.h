/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * serve/backend: the unprivileged half of `hotcold serve`. Holds the store, applies what
 * the collector sends (serve/wire.h), and answers the HTTP layer's queries (web/api.h).
 * Ingest and queries may run on different threads: a rwlock guards the store.
 */
#ifndef HOTCOLD_SERVE_BACKEND_H
#define HOTCOLD_SERVE_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/store.h"
#include "store/disk.h"
#include "web/api.h"

struct hc_backend_opts {
	struct hc_store_opts store;
	/* serve --locks: a second store for the waiters' paths, the lock kinds' counters and
	 * lock_wait_ns (docs/serve.md); its max_bytes is part of serve's --max-store. */
	bool locks;
	struct hc_store_opts lock_store;
	const char *version;
	/* --data-dir: the history on disk (NULL: memory only). The backend owns it from
	 * hc_backend__new() on, and closes it in hc_backend__free(). */
	struct hc_disk *disk;
	uint64_t max_disk_bytes;   /* for /api/status */
	uint64_t disk_retention_s; /* --retention */
};

struct hc_backend;

struct hc_backend *hc_backend__new(const struct hc_backend_opts *o);
void hc_backend__free(struct hc_backend *b);
/* Read what fd has and apply every complete record. >0 progress, 0 end of stream, -errno
 * (-EBADMSG: the stream is broken). */
int hc_backend__ingest(struct hc_backend *b, int fd);
/* Seconds a push stays behind the newest sealed second, so that blocks ending within that
 * time are in it whole (off-CPU time is spread back when a block ends). */
#define HC_PUSH_LAG_S 10

/*
 * The profile of [from_ns, *to_ns) as gzipped pprof carrying `weights` (HC_W_*), for the
 * push client (serve/push.h's fetch). *to_ns out: the end actually covered, a whole second
 * no later than HC_PUSH_LAG_S before the newest sealed one. Time the collector adds to
 * seconds after they were handed out is counted (push.late_ns in /api/status). 0 + *buf (malloc'd,
 * *len bytes); -ENODATA when the store holds nothing new for it; -ENOMEM. Thread-safe.
 */
int hc_backend__pprof(struct hc_backend *b, int64_t from_ns, int64_t *to_ns, unsigned int weights,
		      char **buf, size_t *len);
/* uname's nodename, for labels. Lives as long as b. */
const char *hc_backend__host(const struct hc_backend *b);
struct hc_push;
/* Report this push client's counters in /api/status and /metrics. Set before queries run;
 * push must outlive every query (free the server first). */
void hc_backend__set_push(struct hc_backend *b, struct hc_push *push);
/* The vtable for hc_server__new(); b must outlive the server. */
void hc_backend__api(struct hc_backend *b, struct hc_api_backend *out);

#endif
