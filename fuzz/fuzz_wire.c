// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-wire: the server's reader of the collector's records (serve/wire.h), on the input as
 * the byte stream the socket carries. The server runs unprivileged and must not trust the
 * stream to be well formed, so every record it accepts must hold what the header promises,
 * and must be exactly the bytes the writer makes of it: each accepted record is encoded again
 * with hc_wire__*() and compared with the bytes it was read from. The stream is read twice,
 * fed at once and fed in small pieces (as read() may hand it over): both readings agree.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "serve/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_str(const char *s, size_t max)
{
	if (!s || strnlen(s, max + 1) > max)
		abort();
}

/* The record again, as the collector writes it. */
static void encode(struct hc_wire_buf *b, const struct hc_wire_rec *r)
{
	switch (r->type) {
	case HC_WIRE_FRAME:
		hc_wire__frame(b, r->fid, &r->elem);
		break;
	case HC_WIRE_LOCK_FRAME:
		hc_wire__lock_frame(b, r->fid, &r->elem);
		break;
	case HC_WIRE_ADD:
		hc_wire__add(b, r->sec, &r->w, r->fids, r->n);
		break;
	case HC_WIRE_LOCK_ADD:
		hc_wire__lock_add(b, r->sec, &r->w, r->fids, r->n);
		break;
	case HC_WIRE_HEAT:
		hc_wire__heat(b, r->sec, r->rows);
		break;
	case HC_WIRE_HIST:
		hc_wire__hist(b, r->sec, r->hist, r->pid, r->value, r->count, r->key);
		break;
	case HC_WIRE_SEAL:
		hc_wire__seal(b, r->sec);
		break;
	case HC_WIRE_STATUS:
		hc_wire__status(b, &r->status);
		break;
	case HC_WIRE_RESET:
		hc_wire__reset(b);
		break;
	case HC_WIRE_LOCK_RESET:
		hc_wire__lock_reset(b);
		break;
	case HC_WIRE_COUNTER:
		hc_wire__counter(b, r->sec, r->counter, r->key, r->count);
		break;
	default:
		abort(); /* the reader refuses unknown types */
	}
}

static void check_rec(const struct hc_wire_rec *r)
{
	switch (r->type) {
	case HC_WIRE_FRAME:
	case HC_WIRE_LOCK_FRAME:
		check_str(r->elem.name, HC_WIRE_MAX_STR);
		if (r->elem.module)
			check_str(r->elem.module, HC_WIRE_MAX_STR);
		if ((unsigned)r->elem.kind > 0xffu)
			abort();
		break;
	case HC_WIRE_ADD:
	case HC_WIRE_LOCK_ADD:
		if (r->n > HC_WIRE_MAX_PATH)
			abort();
		break;
	case HC_WIRE_HIST:
	case HC_WIRE_COUNTER:
		check_str(r->key, HC_WIRE_MAX_STR);
		break;
	case HC_WIRE_STATUS:
		/* what the reader promises of an accepted status */
		if (r->status.n_counters != HC_C_MAX || !(r->status.frequency_hz >= 0))
			abort();
		break;
	default:
		break;
	}
}

/*
 * Read every record the reader has; each is checked and its encoding appended to out.
 * Returns what the last next() said: 0 (more bytes needed) or -EBADMSG.
 */
static int drain(struct hc_wire_reader *rd, struct hc_wire_rec *rec, struct hc_wire_buf *out)
{
	static struct hc_wire_buf again;
	int r;

	while ((r = hc_wire_reader__next(rd, rec)) == 1) {
		size_t end = rd->pos;

		check_rec(rec);
		hc_wire_buf__reset(&again);
		encode(&again, rec);
		if (again.err)
			abort();
		if (again.len > end || memcmp(again.data, rd->data + end - again.len, again.len))
			abort();
		encode(out, rec);
	}
	if (r != 0 && r != -EBADMSG)
		abort();
	return r;
}

/* Empty again, keeping its buffer: the buffers are large (256 KiB), and mapping and unmapping
 * them on every input is most of a run's time. */
static void rewind_reader(struct hc_wire_reader *rd)
{
	rd->len = rd->pos = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct hc_wire_rec rec; /* 4 KiB of fids: not on the stack */
	static struct hc_wire_buf whole, pieces;
	static struct hc_wire_reader rd;
	size_t chunk = 1 + size % 61, off = 0;
	int r1, r2 = 0;

	hc_wire_buf__reset(&whole);
	hc_wire_buf__reset(&pieces);
	rewind_reader(&rd);
	if (hc_wire_reader__feed(&rd, data, size))
		abort();
	r1 = drain(&rd, &rec, &whole);

	/* The same stream in pieces: a record split anywhere waits for its rest. */
	rewind_reader(&rd);
	while (off < size && r2 == 0) {
		size_t n = size - off < chunk ? size - off : chunk;

		if (hc_wire_reader__feed(&rd, data + off, n))
			abort();
		off += n;
		r2 = drain(&rd, &rec, &pieces);
	}
	if (r1 != r2 || whole.err || pieces.err || whole.len != pieces.len ||
	    (whole.len && memcmp(whole.data, pieces.data, whole.len)))
		abort();
	/* What was accepted is a prefix of the input, byte for byte. */
	if (whole.len > size || (whole.len && memcmp(whole.data, data, whole.len)))
		abort();
	return 0;
}
