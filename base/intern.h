/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hc_interner: one copy of each distinct string. Equal strings get the same pointer, so
 * identity compares (and hashes) pointers. Copies never move and live until
 * hc_interner__release(); there is no removal. A zeroed struct is an empty interner.
 *
 * Memory: the strings (length + 1 bytes each) in 64 KiB chunks (a string over 16 KiB gets a
 * block of its own), plus 16 bytes of slot per 0.35..0.7 of a string (open addressing,
 * linear probing, grown at 0.7 load). Not thread-safe.
 */
#ifndef HOTCOLD_BASE_INTERN_H
#define HOTCOLD_BASE_INTERN_H

#include <stddef.h>
#include <stdint.h>

struct hc_intern_slot;
struct hc_intern_chunk;

struct hc_interner {
	struct hc_intern_slot *slots;
	size_t cap;			/* slots: a power of two, or 0 */
	size_t nr;			/* distinct strings */
	struct hc_intern_chunk *chunks; /* the one with free space first */
};

/* The interned copy of s[0..len) (s need not be NUL-terminated; it must not hold a NUL
 * before len), or NULL on allocation failure (the interner is unchanged then). */
const char *hc_interner__add(struct hc_interner *in, const char *s, size_t len);
/* The same for a NUL-terminated string. */
const char *hc_interner__add_str(struct hc_interner *in, const char *s);
/* The interned copy of s if there is one, else NULL; adds nothing. */
const char *hc_interner__find_str(const struct hc_interner *in, const char *s);
/* Frees every copy; the struct is empty (zeroed) afterwards. NULL-safe. */
void hc_interner__release(struct hc_interner *in);

#endif
