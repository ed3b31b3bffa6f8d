// SPDX-License-Identifier: GPL-2.0-only
/* The raw HTTP client of the web/ tests (client.h). */
#include "client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

int client_connect(unsigned short port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int err;

	if (fd < 0)
		return -errno;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int client_request(unsigned short port, const char *req, size_t len, struct resp *r)
{
	size_t cap = 1 << 20, off = 0;
	int fd;

	memset(r, 0, sizeof(*r));
	fd = client_connect(port);
	if (fd < 0)
		return fd;
	r->raw = calloc(1, cap + 1);
	if (!r->raw) {
		close(fd);
		return -ENOMEM;
	}
	while (off < len) {
		ssize_t n = send(fd, req + off, len - off, MSG_NOSIGNAL);

		if (n <= 0)
			break; /* the server may refuse before reading everything */
		off += (size_t)n;
	}
	off = 0;
	while (off < cap) {
		ssize_t n = recv(fd, r->raw + off, cap - off, 0);

		if (n < 0) {
			r->read_err = errno;
			break;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	r->raw_len = off;
	r->raw[off] = '\0';
	if (sscanf(r->raw, "HTTP/1.%*c %d ", &r->status) != 1)
		r->status = -1;
	r->head_end = strstr(r->raw, "\r\n\r\n");
	if (r->head_end) {
		r->head_end += 4;
		r->body = r->head_end;
		r->body_len = off - (size_t)(r->head_end - r->raw);
	}
	return 0;
}

void resp_free(struct resp *r)
{
	free(r->raw);
	r->raw = NULL;
}

const char *resp_header(const struct resp *r, const char *name, char *buf, size_t len)
{
	size_t nlen = strlen(name);
	const char *line = strstr(r->raw, "\r\n");

	while (line && r->head_end && line + 2 < r->head_end) {
		const char *start = line + 2, *end = strstr(start, "\r\n");

		if (!end)
			return NULL;
		if (!strncasecmp(start, name, nlen) && start[nlen] == ':') {
			const char *v = start + nlen + 1;
			size_t vlen;

			while (*v == ' ')
				v++;
			vlen = (size_t)(end - v);
			if (vlen >= len)
				vlen = len - 1;
			memcpy(buf, v, vlen);
			buf[vlen] = '\0';
			return buf;
		}
		line = end;
	}
	return NULL;
}
