/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hc_stacktab: interns variable-length keys of u64 words (raw stacks plus identity) and
 * accumulates struct hc_weights per key. The sampler side feeds it while capturing.
 */
#ifndef HOTCOLD_PROFILE_STACKTAB_H
#define HOTCOLD_PROFILE_STACKTAB_H

#include <stddef.h>
#include <stdint.h>

#include "profile/weights.h"

struct hc_stacktab;

struct hc_stacktab *hc_stacktab__new(void);
void hc_stacktab__free(struct hc_stacktab *tab);
/* Intern a key of n words (n may be 0). Returns its index (>= 0), or -ENOMEM. */
int64_t hc_stacktab__intern(struct hc_stacktab *tab, const uint64_t *key, size_t n);
size_t hc_stacktab__count(const struct hc_stacktab *tab);
/* Borrowed, valid until the next intern (the table may grow). */
const uint64_t *hc_stacktab__key(const struct hc_stacktab *tab, size_t idx, size_t *n);
struct hc_weights *hc_stacktab__weights(struct hc_stacktab *tab, size_t idx);
/* Bytes of heap the table holds (for RSS accounting and docs). */
size_t hc_stacktab__memory_bytes(const struct hc_stacktab *tab);

#endif
