// SPDX-License-Identifier: GPL-2.0-only
#include "serve/wire.h"

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct hdr {
	uint32_t type;
	uint32_t len;
};

void hc_wire_buf__reset(struct hc_wire_buf *b)
{
	b->len = 0;
	b->err = 0;
}

void hc_wire_buf__release(struct hc_wire_buf *b)
{
	free(b->data);
	*b = (struct hc_wire_buf){0};
}

static unsigned char *reserve(struct hc_wire_buf *b, size_t n)
{
	unsigned char *p;

	if (b->err)
		return NULL;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 64 * 1024;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p) {
			b->err = -ENOMEM;
			return NULL;
		}
		b->data = p;
		b->cap = cap;
	}
	p = b->data + b->len;
	b->len += n;
	return p;
}

/* Appends a header for a payload of len bytes; returns the payload's first byte. */
static unsigned char *record(struct hc_wire_buf *b, enum hc_wire_type type, size_t len)
{
	struct hdr h = {.type = type, .len = (uint32_t)len};
	unsigned char *p;

	if (len > HC_WIRE_MAX_RECORD) {
		b->err = b->err ? b->err : -E2BIG;
		return NULL;
	}
	p = reserve(b, sizeof(h) + len);
	if (!p)
		return NULL;
	memcpy(p, &h, sizeof(h));
	return p + sizeof(h);
}

#define PUT(p, v)                             \
	do {                                  \
		__typeof__(v) _v = (v);       \
		memcpy((p), &_v, sizeof(_v)); \
		(p) += sizeof(_v);            \
	} while (0)

static size_t str_len(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	return n > HC_WIRE_MAX_STR ? HC_WIRE_MAX_STR : n;
}

static void frame(struct hc_wire_buf *b, enum hc_wire_type type, uint32_t fid,
		  const struct hc_path_elem *e)
{
	size_t nl = str_len(e->name), ml = str_len(e->module);
	unsigned char *p = record(b, type, 4 + 4 + 8 + 8 + 4 + 4 + nl + 1 + ml + 1);

	if (!p)
		return;
	PUT(p, fid);
	PUT(p, (uint32_t)e->kind | (e->inlined ? HC_WIRE_INLINED : 0));
	PUT(p, (uint64_t)e->id);
	PUT(p, (int64_t)e->offset);
	PUT(p, (uint32_t)nl);
	PUT(p, e->module ? (uint32_t)ml : HC_WIRE_NO_MODULE);
	memcpy(p, e->name, nl);
	p[nl] = 0;
	p += nl + 1;
	if (ml)
		memcpy(p, e->module, ml);
	p[ml] = 0;
}

void hc_wire__frame(struct hc_wire_buf *b, uint32_t fid, const struct hc_path_elem *e)
{
	frame(b, HC_WIRE_FRAME, fid, e);
}

void hc_wire__lock_frame(struct hc_wire_buf *b, uint32_t fid, const struct hc_path_elem *e)
{
	frame(b, HC_WIRE_LOCK_FRAME, fid, e);
}

static void add(struct hc_wire_buf *b, enum hc_wire_type type, int64_t sec,
		const struct hc_weights *w, const uint32_t *fids, uint32_t n)
{
	unsigned char *p = record(b, type, 8 + 4 * 8 + 4 + (size_t)n * 4);

	if (!p)
		return;
	PUT(p, sec);
	PUT(p, (uint64_t)w->on_cpu_ns);
	PUT(p, (uint64_t)w->off_cpu_ns);
	PUT(p, (uint64_t)w->runqueue_ns);
	PUT(p, (uint64_t)w->samples);
	PUT(p, n);
	memcpy(p, fids, (size_t)n * 4);
}

void hc_wire__add(struct hc_wire_buf *b, int64_t sec, const struct hc_weights *w,
		  const uint32_t *fids, uint32_t n)
{
	add(b, HC_WIRE_ADD, sec, w, fids, n);
}

void hc_wire__lock_add(struct hc_wire_buf *b, int64_t sec, const struct hc_weights *w,
		       const uint32_t *fids, uint32_t n)
{
	add(b, HC_WIRE_LOCK_ADD, sec, w, fids, n);
}

void hc_wire__heat(struct hc_wire_buf *b, int64_t sec, const uint32_t rows[HC_WIRE_HEAT_ROWS])
{
	unsigned char *p = record(b, HC_WIRE_HEAT, 8 + 4 * HC_WIRE_HEAT_ROWS);

	if (!p)
		return;
	PUT(p, sec);
	memcpy(p, rows, 4 * HC_WIRE_HEAT_ROWS);
}

void hc_wire__hist(struct hc_wire_buf *b, int64_t sec, uint32_t hist, uint32_t pid, int64_t value,
		   uint64_t count, const char *key)
{
	size_t kl = str_len(key);
	unsigned char *p = record(b, HC_WIRE_HIST, 8 + 4 + 4 + 8 + 8 + 4 + kl + 1);

	if (!p)
		return;
	PUT(p, sec);
	PUT(p, hist);
	PUT(p, pid);
	PUT(p, value);
	PUT(p, count);
	PUT(p, (uint32_t)kl);
	memcpy(p, key, kl);
	p[kl] = 0;
}

void hc_wire__seal(struct hc_wire_buf *b, int64_t sec)
{
	unsigned char *p = record(b, HC_WIRE_SEAL, 8);

	if (p)
		PUT(p, sec);
}

void hc_wire__status(struct hc_wire_buf *b, const struct hc_wire_status *st)
{
	unsigned char *p = record(b, HC_WIRE_STATUS, sizeof(*st));

	if (p)
		memcpy(p, st, sizeof(*st));
}

void hc_wire__reset(struct hc_wire_buf *b)
{
	record(b, HC_WIRE_RESET, 0);
}

void hc_wire__lock_reset(struct hc_wire_buf *b)
{
	record(b, HC_WIRE_LOCK_RESET, 0);
}

void hc_wire__counter(struct hc_wire_buf *b, int64_t sec, uint32_t counter, const char *key,
		      uint64_t value)
{
	size_t kl = str_len(key);
	unsigned char *p = record(b, HC_WIRE_COUNTER, 8 + 4 + 8 + 4 + kl + 1);

	if (!p)
		return;
	PUT(p, sec);
	PUT(p, counter);
	PUT(p, value);
	PUT(p, (uint32_t)kl);
	memcpy(p, key, kl);
	p[kl] = 0;
}

int hc_wire_buf__send(struct hc_wire_buf *b, int fd, const volatile sig_atomic_t *stop)
{
	size_t off = 0;

	if (b->err)
		return b->err;
	while (off < b->len) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		ssize_t n;

		if (stop && *stop)
			return -EINTR;
		n = send(fd, b->data + off, b->len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0) {
			off += (size_t)n;
			continue;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (poll(&p, 1, 200) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* ---- reading ---- */

void hc_wire_reader__release(struct hc_wire_reader *r)
{
	free(r->data);
	*r = (struct hc_wire_reader){0};
}

/* Room for n more bytes at the end, consumed bytes moved out first. */
static int room(struct hc_wire_reader *r, size_t n)
{
	if (r->pos) {
		memmove(r->data, r->data + r->pos, r->len - r->pos);
		r->len -= r->pos;
		r->pos = 0;
	}
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap : 256 * 1024;
		unsigned char *d;

		while (cap < r->len + n)
			cap *= 2;
		d = realloc(r->data, cap);
		if (!d)
			return -ENOMEM;
		r->data = d;
		r->cap = cap;
	}
	return 0;
}

ssize_t hc_wire_reader__fill(struct hc_wire_reader *r, int fd)
{
	ssize_t n;

	if (room(r, 64 * 1024))
		return -ENOMEM;
	n = read(fd, r->data + r->len, r->cap - r->len);
	if (n < 0)
		return -errno;
	r->len += (size_t)n;
	return n;
}

int hc_wire_reader__feed(struct hc_wire_reader *r, const void *buf, size_t len)
{
	/* Nothing to add: an empty reader has no buffer to point past (found by fuzz-wire). */
	if (!len)
		return 0;
	if (room(r, len))
		return -ENOMEM;
	memcpy(r->data + r->len, buf, len);
	r->len += len;
	return 0;
}

struct cursor {
	const unsigned char *p, *end;
	int bad;
};

static void take(struct cursor *c, void *out, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = 1;
		memset(out, 0, n);
		return;
	}
	memcpy(out, c->p, n);
	c->p += n;
}

/* A string of len bytes followed by a NUL, without NULs inside. */
static const char *take_str(struct cursor *c, uint32_t len)
{
	const char *s = (const char *)c->p;

	if (c->bad || len > HC_WIRE_MAX_STR || (size_t)(c->end - c->p) < (size_t)len + 1 ||
	    c->p[len] != 0 || memchr(c->p, 0, len)) {
		c->bad = 1;
		return NULL;
	}
	c->p += len + 1;
	return s;
}

int hc_wire_reader__next(struct hc_wire_reader *r, struct hc_wire_rec *out)
{
	struct cursor c;
	struct hdr h;
	uint32_t u32a, u32b;

	if (r->len - r->pos < sizeof(h))
		return 0;
	memcpy(&h, r->data + r->pos, sizeof(h));
	if (h.len > HC_WIRE_MAX_RECORD)
		return -EBADMSG;
	if (r->len - r->pos - sizeof(h) < h.len)
		return 0;
	c.p = r->data + r->pos + sizeof(h);
	c.end = c.p + h.len;
	c.bad = 0;
	memset(out, 0, sizeof(*out));
	out->type = (enum hc_wire_type)h.type;
	switch (h.type) {
	case HC_WIRE_FRAME:
	case HC_WIRE_LOCK_FRAME: {
		uint32_t kind;

		take(&c, &out->fid, 4);
		take(&c, &kind, 4);
		take(&c, &out->elem.id, 8);
		take(&c, &out->elem.offset, 8);
		take(&c, &u32a, 4);
		take(&c, &u32b, 4);
		if (kind & ~(HC_WIRE_INLINED | 0xffu))
			c.bad = 1;
		out->elem.kind = (enum hc_node_kind)(kind & 0xffu);
		out->elem.inlined = kind & HC_WIRE_INLINED;
		out->elem.name = take_str(&c, u32a);
		out->elem.module =
			u32b == HC_WIRE_NO_MODULE ? (take_str(&c, 0), NULL) : take_str(&c, u32b);
		break;
	}
	case HC_WIRE_ADD:
	case HC_WIRE_LOCK_ADD:
		take(&c, &out->sec, 8);
		take(&c, &out->w.on_cpu_ns, 8);
		take(&c, &out->w.off_cpu_ns, 8);
		take(&c, &out->w.runqueue_ns, 8);
		take(&c, &out->w.samples, 8);
		take(&c, &out->n, 4);
		if (c.bad || out->n > HC_WIRE_MAX_PATH) {
			c.bad = 1;
			break;
		}
		take(&c, out->fids, (size_t)out->n * 4); /* records are not aligned: copy */
		break;
	case HC_WIRE_HEAT:
		take(&c, &out->sec, 8);
		take(&c, out->rows, sizeof(out->rows));
		break;
	case HC_WIRE_HIST:
		take(&c, &out->sec, 8);
		take(&c, &out->hist, 4);
		take(&c, &out->pid, 4);
		take(&c, &out->value, 8);
		take(&c, &out->count, 8);
		take(&c, &u32a, 4);
		out->key = take_str(&c, u32a);
		break;
	case HC_WIRE_SEAL:
		take(&c, &out->sec, 8);
		break;
	case HC_WIRE_STATUS:
		take(&c, &out->status, sizeof(out->status));
		c.bad |= out->status.n_counters != HC_C_MAX ||
			 !isfinite(out->status.frequency_hz) || out->status.frequency_hz < 0;
		break;
	case HC_WIRE_COUNTER:
		take(&c, &out->sec, 8);
		take(&c, &out->counter, 4);
		take(&c, &out->count, 8);
		take(&c, &u32a, 4);
		out->key = take_str(&c, u32a);
		break;
	case HC_WIRE_RESET:
	case HC_WIRE_LOCK_RESET:
		break;
	default:
		return -EBADMSG;
	}
	if (c.bad || c.p != c.end)
		return -EBADMSG;
	r->pos += sizeof(h) + h.len;
	return 1;
}
