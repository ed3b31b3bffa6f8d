// SPDX-License-Identifier: GPL-2.0-only
#include "base/intern.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"

#define INTERN_CHUNK_BYTES (64u * 1024u)
#define INTERN_MIN_SLOTS 256

struct hc_intern_slot {
	const char *s;
	uint64_t hash; /* compared before the bytes; reused when the table grows */
};

struct hc_intern_chunk {
	struct hc_intern_chunk *next;
	size_t used;
	size_t size;
	char data[];
};

static int slots_grow(struct hc_interner *in)
{
	size_t n = in->cap ? in->cap * 2 : INTERN_MIN_SLOTS;
	struct hc_intern_slot *slots;

	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < in->cap; i++) {
		const struct hc_intern_slot *old = &in->slots[i];
		size_t j;

		if (!old->s)
			continue;
		for (j = old->hash & (n - 1); slots[j].s; j = (j + 1) & (n - 1))
			;
		slots[j] = *old;
	}
	free(in->slots);
	in->slots = slots;
	in->cap = n;
	return 0;
}

/* Bytes for a new copy: from the head chunk, a new chunk, or (if huge) a block of its own. */
static char *chunk_alloc(struct hc_interner *in, size_t size)
{
	struct hc_intern_chunk *c = in->chunks;
	char *p;

	if (!c || c->size - c->used < size) {
		size_t csize = size > INTERN_CHUNK_BYTES / 4 ? size : INTERN_CHUNK_BYTES;

		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->size = csize;
		c->used = 0;
		/* keep a partly used chunk at the head for small strings */
		if (in->chunks && csize != INTERN_CHUNK_BYTES) {
			c->next = in->chunks->next;
			in->chunks->next = c;
		} else {
			c->next = in->chunks;
			in->chunks = c;
		}
	}
	p = c->data + c->used;
	c->used += size;
	return p;
}

static size_t slot_of(const struct hc_interner *in, const char *s, size_t len, uint64_t h)
{
	size_t mask = in->cap - 1, i;

	for (i = h & mask; in->slots[i].s; i = (i + 1) & mask) {
		const struct hc_intern_slot *sl = &in->slots[i];

		if (sl->hash == h && strncmp(sl->s, s, len) == 0 && sl->s[len] == '\0')
			break;
	}
	return i;
}

const char *hc_interner__add(struct hc_interner *in, const char *s, size_t len)
{
	uint64_t h = hc_hash_bytes(s, len);
	size_t i;
	char *copy;

	if (!in->cap && slots_grow(in))
		return NULL;
	i = slot_of(in, s, len, h);
	if (in->slots[i].s)
		return in->slots[i].s;
	if ((in->nr + 1) * 10 > in->cap * 7) {
		if (slots_grow(in))
			return NULL;
		i = slot_of(in, s, len, h);
	}
	copy = chunk_alloc(in, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	in->slots[i] = (struct hc_intern_slot){.s = copy, .hash = h};
	in->nr++;
	return copy;
}

const char *hc_interner__add_str(struct hc_interner *in, const char *s)
{
	return hc_interner__add(in, s, strlen(s));
}

const char *hc_interner__find_str(const struct hc_interner *in, const char *s)
{
	size_t len = strlen(s);

	return in->cap ? in->slots[slot_of(in, s, len, hc_hash_bytes(s, len))].s : NULL;
}

void hc_interner__release(struct hc_interner *in)
{
	struct hc_intern_chunk *c, *next;

	if (!in)
		return;
	for (c = in->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(in->slots);
	memset(in, 0, sizeof(*in));
}
