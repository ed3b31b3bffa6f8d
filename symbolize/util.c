// SPDX-License-Identifier: GPL-2.0-only
#include "symbolize/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

int hc_strpool__add(struct hc_strpool *p, const char *s, size_t len, uint32_t *off)
{
	/* Offsets are 32-bit to keep symbol entries small; 4 GiB of names is not a real input. */
	if (len >= UINT32_MAX || p->len + len + 1 > UINT32_MAX)
		return -E2BIG;
	if (p->len + len + 1 > p->cap) {
		size_t cap = p->cap ? p->cap : 4096;
		char *nbuf;

		while (cap < p->len + len + 1)
			cap *= 2;
		nbuf = realloc(p->buf, cap);
		if (!nbuf)
			return -ENOMEM;
		p->buf = nbuf;
		p->cap = cap;
	}
	memcpy(p->buf + p->len, s, len);
	p->buf[p->len + len] = '\0';
	*off = (uint32_t)p->len;
	p->len += len + 1;
	return 0;
}

void hc_strpool__shrink(struct hc_strpool *p)
{
	char *nbuf;

	if (!p->buf || p->len == p->cap)
		return;
	nbuf = realloc(p->buf, p->len ? p->len : 1);
	if (nbuf) {
		p->buf = nbuf;
		p->cap = p->len ? p->len : 1;
	}
}

void hc_strpool__release(struct hc_strpool *p)
{
	free(p->buf);
	p->buf = NULL;
	p->len = 0;
	p->cap = 0;
}

int hc_read_fd(int fd, size_t max_bytes, char **buf, size_t *len)
{
	size_t cap = 16384, n = 0;
	char *data, *ndata;
	int err;

	data = malloc(cap);
	if (!data)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			if (cap >= max_bytes) {
				err = -EFBIG;
				goto err_free;
			}
			ndata = realloc(data, cap * 2);
			if (!ndata) {
				err = -ENOMEM;
				goto err_free;
			}
			data = ndata;
			cap *= 2;
		}
		r = read(fd, data + n, cap - n - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto err_free;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	data[n] = '\0';
	*buf = data;
	*len = n;
	return 0;

err_free:
	free(data);
	return err;
}

int hc_read_file(const char *path, size_t max_bytes, char **buf, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = hc_read_fd(fd, max_bytes, buf, len);
	close(fd);
	return err;
}

struct hc_keymap_slot {
	uint64_t a;
	uint64_t b;
	uint32_t val;
	uint32_t used;
};

static size_t keymap_slot(const struct hc_keymap *m, uint64_t a, uint64_t b)
{
	/* tgids and inodes are sequential: spread them over the table. */
	size_t i = (size_t)hc_hash_splitmix(a ^ hc_hash_splitmix(b)) & (m->cap - 1);

	while (m->slots[i].used && (m->slots[i].a != a || m->slots[i].b != b))
		i = (i + 1) & (m->cap - 1);
	return i;
}

static int keymap_grow(struct hc_keymap *m)
{
	struct hc_keymap old = *m;
	size_t i;

	m->cap = old.cap ? old.cap * 2 : 64;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		*m = old;
		return -ENOMEM;
	}
	for (i = 0; i < old.cap; i++) {
		if (old.slots[i].used)
			m->slots[keymap_slot(m, old.slots[i].a, old.slots[i].b)] = old.slots[i];
	}
	free(old.slots);
	return 0;
}

int hc_keymap__put(struct hc_keymap *m, uint64_t a, uint64_t b, uint32_t val)
{
	struct hc_keymap_slot *s;
	int err;

	/* Keep the load factor under 1/2 so probe chains stay short. */
	if ((m->nr + 1) * 2 > m->cap) {
		err = keymap_grow(m);
		if (err)
			return err;
	}
	s = &m->slots[keymap_slot(m, a, b)];
	if (!s->used) {
		s->used = 1;
		s->a = a;
		s->b = b;
		m->nr++;
	}
	s->val = val;
	return 0;
}

int hc_keymap__get(const struct hc_keymap *m, uint64_t a, uint64_t b, uint32_t *val)
{
	const struct hc_keymap_slot *s;

	if (!m->cap)
		return -ENOENT;
	s = &m->slots[keymap_slot(m, a, b)];
	if (!s->used)
		return -ENOENT;
	*val = s->val;
	return 0;
}

void hc_keymap__release(struct hc_keymap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

int hc_parse_hex(const char **pp, const char *end, bool allow_0x, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int digits = 0;

	if (allow_0x && end - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		p += 2;
	while (p < end) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			break;
		if (++digits > 16)
			return -EINVAL;
		v = (v << 4) | (uint64_t)d;
		p++;
	}
	if (!digits)
		return -EINVAL;
	*pp = p;
	*out = v;
	return 0;
}

static void *parse_buf(int err, char *buf, size_t len, void *(*parse)(const char *buf, size_t len))
{
	void *obj;

	if (err) {
		errno = -err;
		return NULL;
	}
	obj = parse(buf, len);
	err = errno;
	free(buf);
	errno = err;
	return obj;
}

void *hc_parse_file(const char *path, size_t max_bytes, void *(*parse)(const char *buf, size_t len))
{
	size_t len = 0;
	char *buf = NULL;

	int err = hc_read_file(path, max_bytes, &buf, &len);

	return parse_buf(err, buf, len, parse);
}

void *hc_parse_fd(int fd, size_t max_bytes, void *(*parse)(const char *buf, size_t len))
{
	size_t len = 0;
	char *buf = NULL;

	int err = hc_read_fd(fd, max_bytes, &buf, &len);

	return parse_buf(err, buf, len, parse);
}
