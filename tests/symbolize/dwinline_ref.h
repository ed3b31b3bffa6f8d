/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inline chains by a DIE walk per lookup over libdw's whole DWARF: the oracle the compact
 * index of symbolize/dwinline.h is compared with. Same contracts as hc_dwinline__*().
 */
#ifndef HOTCOLD_TESTS_DWINLINE_REF_H
#define HOTCOLD_TESTS_DWINLINE_REF_H

#include <stddef.h>
#include <stdint.h>

#define REF_DWINLINE_MAX_NEST 256

struct ref_dwinline;

struct ref_dwinline *ref_dwinline__from_fd(int fd, size_t max_bytes);
struct ref_dwinline *ref_dwinline__from_mem(const void *buf, size_t len, size_t max_bytes);
void ref_dwinline__free(struct ref_dwinline *d);
size_t ref_dwinline__bytes(const struct ref_dwinline *d);
size_t ref_dwinline__alt_build_id(const struct ref_dwinline *d, const uint8_t **id);
int ref_dwinline__set_alt(struct ref_dwinline *d, struct ref_dwinline *alt);
int ref_dwinline__lookup(struct ref_dwinline *d, uint64_t vaddr, const char **names, size_t max,
			 size_t *n);

#endif
