// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_stacktab: interns variable-length keys of u64 words and accumulates weights per key.
 *
 * Layout:
 *  - every key's words live contiguously in one growable arena (`words`);
 *  - `entries[idx]` holds the key's offset/length in the arena, its hash and its weights;
 *  - `slots` is an open-addressing (linear probing) table of idx + 1 (0 = empty), power-of-two
 *    sized, grown at 0.7 load.
 *
 * The hot path (a key already present) hashes the key, probes, compares and returns: no
 * allocation. Interning a new key allocates only when the arena, the entry array or the slot
 * array must grow (amortized doubling). All growth happens before anything is committed, so a
 * failed intern (-ENOMEM) leaves the table unchanged.
 *
 * Memory: 56 bytes per entry (entries array, up to 2x while doubling) + 8 bytes per key word
 * (arena, up to 2x) + 4 to 8 bytes per entry of slots (0.35..0.7 load).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "profile/stacktab.h"

struct stack_entry {
	uint64_t hash;
	size_t off; /* in words, into tab->words */
	size_t n;   /* words */
	struct hc_weights w;
};

struct hc_stacktab {
	uint64_t *words;
	size_t n_words;
	size_t cap_words;

	struct stack_entry *entries;
	size_t count;
	size_t cap_entries;

	uint32_t *slots; /* idx + 1, 0 = empty */
	size_t n_slots;	 /* power of two */
};

#define STACKTAB_MIN_SLOTS 1024
/* Slots hold idx + 1 in 32 bits. */
#define STACKTAB_MAX_ENTRIES ((size_t)UINT32_MAX - 1)

struct hc_stacktab *hc_stacktab__new(void)
{
	struct hc_stacktab *tab;

	tab = calloc(1, sizeof(*tab));
	if (!tab)
		return NULL;
	tab->slots = calloc(STACKTAB_MIN_SLOTS, sizeof(*tab->slots));
	if (!tab->slots)
		goto err_free_tab;
	tab->n_slots = STACKTAB_MIN_SLOTS;
	return tab;

err_free_tab:
	free(tab);
	errno = ENOMEM;
	return NULL;
}

void hc_stacktab__free(struct hc_stacktab *tab)
{
	if (!tab)
		return;
	free(tab->words);
	free(tab->entries);
	free(tab->slots);
	free(tab);
}

static bool key_equal(const struct hc_stacktab *tab, const struct stack_entry *e, uint64_t hash,
		      const uint64_t *key, size_t n)
{
	if (e->hash != hash || e->n != n)
		return false;
	return n == 0 || memcmp(tab->words + e->off, key, n * sizeof(*key)) == 0;
}

static int grow_slots(struct hc_stacktab *tab)
{
	size_t n_slots = tab->n_slots * 2;
	size_t mask = n_slots - 1;
	uint32_t *slots;

	if (n_slots > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(n_slots, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t idx = 0; idx < tab->count; idx++) {
		size_t i = tab->entries[idx].hash & mask;

		while (slots[i])
			i = (i + 1) & mask;
		slots[i] = (uint32_t)(idx + 1);
	}
	free(tab->slots);
	tab->slots = slots;
	tab->n_slots = n_slots;
	return 0;
}

/* Make room for one more entry of n words; nothing visible changes on failure. */
static int reserve(struct hc_stacktab *tab, size_t n)
{
	int err;

	if (tab->count >= STACKTAB_MAX_ENTRIES)
		return -ENOMEM;
	if (n > SIZE_MAX / sizeof(uint64_t) / 4 || tab->n_words > SIZE_MAX / sizeof(uint64_t) / 4)
		return -ENOMEM;

	if (hc_array_grow(tab->words, tab->cap_words, tab->n_words + n, 4096))
		return -ENOMEM;
	if (tab->count == tab->cap_entries &&
	    hc_array_grow(tab->entries, tab->cap_entries, tab->count + 1, 256))
		return -ENOMEM;
	/* grow at 0.7 load */
	if ((tab->count + 1) * 10 > tab->n_slots * 7) {
		err = grow_slots(tab);
		if (err)
			return err;
	}
	return 0;
}

int64_t hc_stacktab__intern(struct hc_stacktab *tab, const uint64_t *key, size_t n)
{
	uint64_t hash = hc_hash_words(key, n, 0);
	size_t mask = tab->n_slots - 1;
	size_t i = hash & mask;
	struct stack_entry *e;
	size_t idx;
	int err;

	for (; tab->slots[i]; i = (i + 1) & mask) {
		idx = tab->slots[i] - 1;
		if (key_equal(tab, &tab->entries[idx], hash, key, n))
			return (int64_t)idx;
	}

	err = reserve(tab, n);
	if (err)
		return err;
	if (mask != tab->n_slots - 1) { /* slots grew: find the free slot again */
		mask = tab->n_slots - 1;
		for (i = hash & mask; tab->slots[i]; i = (i + 1) & mask)
			;
	}

	idx = tab->count++;
	e = &tab->entries[idx];
	memset(e, 0, sizeof(*e));
	e->hash = hash;
	e->off = tab->n_words;
	e->n = n;
	if (n)
		memcpy(tab->words + tab->n_words, key, n * sizeof(*key));
	tab->n_words += n;
	tab->slots[i] = (uint32_t)(idx + 1);
	return (int64_t)idx;
}

size_t hc_stacktab__count(const struct hc_stacktab *tab)
{
	return tab->count;
}

const uint64_t *hc_stacktab__key(const struct hc_stacktab *tab, size_t idx, size_t *n)
{
	static const uint64_t empty[1];
	const struct stack_entry *e;

	if (idx >= tab->count) {
		if (n)
			*n = 0;
		return NULL;
	}
	e = &tab->entries[idx];
	if (n)
		*n = e->n;
	return e->n ? tab->words + e->off : empty;
}

struct hc_weights *hc_stacktab__weights(struct hc_stacktab *tab, size_t idx)
{
	if (idx >= tab->count)
		return NULL;
	return &tab->entries[idx].w;
}

size_t hc_stacktab__memory_bytes(const struct hc_stacktab *tab)
{
	return sizeof(*tab) + tab->cap_words * sizeof(*tab->words) +
	       tab->cap_entries * sizeof(*tab->entries) + tab->n_slots * sizeof(*tab->slots);
}
