/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inline chains from DWARF: which functions the compiler inlined at an address, so that a
 * sample in code inlined into its caller shows the inlined function too, as a frame of its own.
 *
 * A chain is read from the DIE tree of the compilation unit holding the address: the
 * DW_TAG_subprogram whose ranges contain it, then each DW_TAG_inlined_subroutine nested in it
 * that contains it too (names through DW_AT_abstract_origin / DW_AT_specification:
 * DW_AT_linkage_name when there is one, else DW_AT_name).
 *
 * Only the sections such a walk reads are loaded (.debug_info, .debug_abbrev, the string,
 * range and address sections), copied out of the file (never mmap'd: a file truncated under us
 * must not SIGBUS); line tables, location lists and macros stay on disk. The descriptor is
 * not kept. libdw opens no file on its own for us: split DWARF (skeleton units) is skipped,
 * and a dwz-compressed file is only used once its supplementary file has been attached
 * (hc_dwinline__set_alt()); a path it names could be anything, a FIFO included.
 *
 * Hostile input: libdw bounds-checks what it decodes; the walk here bounds its nesting depth,
 * the DIEs it visits per lookup, and refuses sibling links that go backwards.
 */
#ifndef HOTCOLD_SYMBOLIZE_DWINLINE_H
#define HOTCOLD_SYMBOLIZE_DWINLINE_H

#include <stddef.h>
#include <stdint.h>

/* Nesting of scopes followed per lookup: deeper DWARF is refused (-E2BIG). */
#define HC_DWINLINE_MAX_NEST 256

struct hc_dwinline;

/*
 * The DWARF of the ELF file behind fd (an object, or its separate debuginfo file), at most
 * max_bytes of section data (decompressed). The fd is only read during the call. NULL + errno:
 * ENODATA (no .debug_info), E2BIG (more than max_bytes), ENOEXEC (not ELF, or libdw refuses
 * it), ENOMEM.
 */
struct hc_dwinline *hc_dwinline__from_fd(int fd, size_t max_bytes);
/* The same from memory (copied; buf is not retained). */
struct hc_dwinline *hc_dwinline__from_mem(const void *buf, size_t len, size_t max_bytes);
void hc_dwinline__free(struct hc_dwinline *d);

/* Bytes of section data held (what max_bytes bounds), the attached supplementary file's too. */
size_t hc_dwinline__bytes(const struct hc_dwinline *d);

/*
 * A dwz-compressed file's supplementary file (.gnu_debugaltlink): its build-id (borrowed) and
 * length, 0 when the file needs none. Until one is attached, lookups fail with -ENOLINK.
 */
size_t hc_dwinline__alt_build_id(const struct hc_dwinline *d, const uint8_t **id);
/*
 * Attach alt (the file hc_dwinline__alt_build_id() names) to d; d owns it from then on, also
 * on failure (then freed). -EINVAL: d needs none, or alt needs one of its own.
 */
int hc_dwinline__set_alt(struct hc_dwinline *d, struct hc_dwinline *alt);

/*
 * The inline chain at ELF virtual address vaddr (st_value space: the same for an object and
 * its debuginfo file). names[0] is the function whose code holds vaddr (the subprogram), then
 * the functions inlined into it down to the innermost, the one vaddr is in. Names are raw
 * (mangled when the DWARF has a linkage name), NULL when a DIE has none; borrowed until
 * hc_dwinline__free(). A chain longer than max keeps names[0] and the max - 1 innermost.
 *
 * Returns the chain's full length (>= 1; *n = min(length, max)), -ENOENT (no subprogram
 * holds vaddr), -ENOLINK (a supplementary file is needed and not attached), -E2BIG (the
 * DWARF nests deeper than HC_DWINLINE_MAX_NEST or the walk visited too many DIEs), -EINVAL
 * (max 0), -ENOMEM.
 */
int hc_dwinline__lookup(struct hc_dwinline *d, uint64_t vaddr, const char **names, size_t max,
			size_t *n);

#endif
