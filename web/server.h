/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * web/server: the HTTP server of `hotcold serve` (libmicrohttpd, an internal thread pool, and
 * a watchdog thread that cuts requests arriving too slowly).
 * Routes, parameters, errors and headers: docs/api.md. The data comes from a backend
 * (web/api.h). Never prints.
 *
 * Order of use in `hotcold serve`: hc_listen__open() while still privileged (so a port below
 * 1024 works and a bad --listen fails before any BPF work), drop privileges, then
 * hc_server__new() with the fd; hc_server__free() at shutdown.
 */
#ifndef HOTCOLD_WEB_SERVER_H
#define HOTCOLD_WEB_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "web/api.h"
#include "web/params.h"

struct hc_listen {
	int fd;			       /* bound, listening, CLOEXEC; -1 when closed */
	char addr[HC_LISTEN_ADDR_MAX]; /* canonical "127.0.0.1:8080", "[::1]:8080": the real
					* port when the spec said 0 */
};

/*
 * Parse `spec` (hc_listen__parse grammar; NULL: "127.0.0.1:8080"), create the socket with
 * SO_REUSEADDR (and IPV6_V6ONLY for IPv6), bind, listen. 0, or -errno with a one-line reason in
 * `why`: -EINVAL bad spec, -EADDRINUSE port taken, -EACCES port below 1024 without
 * CAP_NET_BIND_SERVICE, -EADDRNOTAVAIL not an address of this machine, others from socket(2).
 */
int hc_listen__open(const char *spec, struct hc_listen *out, char *why, size_t why_len);
/* Close the fd if still open (after a failed hc_server__new, or when never served). */
void hc_listen__close(struct hc_listen *l);

#define HC_SERVER_DEFAULT_THREADS 2
#define HC_SERVER_DEFAULT_MAX_CONNECTIONS 64
#define HC_SERVER_DEFAULT_TIMEOUT_S 10
/*
 * libmicrohttpd's per-connection memory pool: the request line and headers must fit in it (it
 * also holds the parsed header list and our response headers). 16 KiB lets an 8 KiB request
 * head through, with room to spare; beyond the pool, libmicrohttpd itself answers 414 (request
 * line) or 431 (headers) and closes. The server then applies the exact 8 KiB limit of
 * docs/api.md itself (HC_SERVER_MAX_HEAD).
 */
#define HC_SERVER_DEFAULT_MEMORY_LIMIT (16 * 1024)
#define HC_SERVER_MAX_HEAD (8 * 1024) /* URL + header names and values, bytes */

struct hc_server_opts {
	int listen_fd;		 /* from hc_listen__open; the server owns it once created */
	const char *listen_addr; /* canonical address (hc_listen.addr) for the Host check; copied */
	unsigned int threads;	 /* pool threads; 0: HC_SERVER_DEFAULT_THREADS */
	unsigned int max_connections; /* 0: HC_SERVER_DEFAULT_MAX_CONNECTIONS */
	/* 0: HC_SERVER_DEFAULT_TIMEOUT_S. Both the idle timeout of a connection and the time a
	 * request may take to arrive whole (head and body), counted from the connection's
	 * opening or the end of the previous answer on it: a client trickling its request a
	 * byte at a time (slowloris) is cut after it. Answering is not counted. */
	unsigned int timeout_s;
	size_t memory_limit; /* per connection; 0: HC_SERVER_DEFAULT_MEMORY_LIMIT */
	/* The clock relative times resolve against (CLOCK_REALTIME ns); NULL: the real one.
	 * Tests pin it. Called on pool threads. */
	int64_t (*now_ns)(void *ctx);
	void *now_ctx;
};

struct hc_server;

/*
 * Start serving on opts->listen_fd in the background. The backend vtable is copied; its ctx is
 * borrowed and must outlive the server. On success the server owns listen_fd (closed by
 * hc_server__free); on failure NULL with errno set (ELIBACC: libmicrohttpd cannot be loaded,
 * web/mhd_dl.h) and the caller still owns listen_fd.
 */
struct hc_server *hc_server__new(const struct hc_server_opts *opts,
				 const struct hc_api_backend *backend);
/* Stop accepting, finish or drop the connections, join the pool threads. NULL: no-op. */
void hc_server__free(struct hc_server *s);

#endif
