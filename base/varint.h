/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * LEB128 varints (7 bits a byte, low first: 0 costs one byte, a u64 at most HC_VARINT_MAX) and
 * zigzag (a small signed value as a small unsigned one), shared by the encodings that store
 * integers compactly: the memory store's buckets, the disk store's blobs, pprof's protobuf.
 */
#ifndef HOTCOLD_BASE_VARINT_H
#define HOTCOLD_BASE_VARINT_H

#include <stddef.h>
#include <stdint.h>

#define HC_VARINT_MAX 10

static inline size_t hc_varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes v at p (room for HC_VARINT_MAX bytes): the byte after it. */
static inline uint8_t *hc_varint_put(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Reads a varint the caller wrote itself (no bounds): the byte after it. */
static inline const uint8_t *hc_varint_get(const uint8_t *p, uint64_t *v)
{
	uint64_t r = 0;
	unsigned int shift = 0;

	while (*p & 0x80) {
		r |= (uint64_t)(*p++ & 0x7f) << shift;
		shift += 7;
	}
	*v = r | (uint64_t)*p++ << shift;
	return p;
}

/* Reads a varint of untrusted bytes [p, end): the byte after it, or NULL when it runs past
 * end or over 64 bits. */
static inline const uint8_t *hc_varint_get_checked(const uint8_t *p, const uint8_t *end,
						   uint64_t *v)
{
	uint64_t r = 0;

	for (unsigned int shift = 0; shift < 64 && p < end; shift += 7) {
		uint8_t byte = *p++;

		r |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80)) {
			*v = r;
			return p;
		}
	}
	return NULL;
}

/* v as two's complement: 0, -1, 1, -2... as 0, 1, 2, 3... */
static inline uint64_t hc_zigzag(uint64_t v)
{
	return (v << 1) ^ (0 - (v >> 63));
}

static inline uint64_t hc_unzigzag(uint64_t z)
{
	return (z >> 1) ^ (0 - (z & 1));
}

#endif
