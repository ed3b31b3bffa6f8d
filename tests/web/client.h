/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A raw HTTP/1.x client for the web/ tests: a TCP connection to 127.0.0.1, the request sent
 * byte for byte as given, the answer read until the server closes. Every socket has 5 s send
 * and receive timeouts. No cmocka assertions: safe on any thread; callers assert.
 */
#ifndef HOTCOLD_TESTS_WEB_CLIENT_H
#define HOTCOLD_TESTS_WEB_CLIENT_H

#include <stddef.h>

struct resp {
	int status; /* from the status line; -1 when there was none */
	char *raw;  /* the whole answer, NUL-terminated */
	size_t raw_len;
	char *head_end; /* first byte after "\r\n\r\n" */
	const char *body;
	size_t body_len;
	int read_err; /* errno of a read that failed after some data (e.g. ECONNRESET) */
};

/* A connected socket (CLOEXEC, 5 s timeouts) or -errno. */
int client_connect(unsigned short port);

/*
 * Connect, send `req` (len bytes, as is), read until the server closes, at most 1 MiB, each
 * read bounded by the receive timeout. 0 with *r filled (free with resp_free), or -errno
 * when no connection or no memory (then *r holds nothing to free).
 */
int client_request(unsigned short port, const char *req, size_t len, struct resp *r);

void resp_free(struct resp *r);

/* The value of header `name` (case-insensitive), copied into buf; NULL when absent. */
const char *resp_header(const struct resp *r, const char *name, char *buf, size_t len);

#endif
