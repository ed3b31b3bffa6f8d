/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Inline chains from DWARF: which functions the compiler inlined at an address, so that a
 * sample in code inlined into its caller shows the inlined function too, as a frame of its own.
 *
 * A chain is what a walk of the DIE tree of the compilation unit holding the address finds:
 * the DW_TAG_subprogram whose ranges contain it, then each DW_TAG_inlined_subroutine nested in
 * it that contains it too (names through DW_AT_abstract_origin / DW_AT_specification:
 * DW_AT_linkage_name when there is one, else DW_AT_name).
 *
 * That walk is done once per file, when it is loaded: it leaves a compact index (each
 * subprogram, inlined subroutine and lexical block with code: its address ranges, its subtree,
 * its name in one deduplicated string pool), and the DWARF itself is released. libc's
 * debuginfo file (Debian 12): 0.9 MB of index where libdw held 10.7 MB (figures in
 * docs/unwinding.md, "Inline frames").
 *
 * Only the sections the walk reads are loaded (.debug_info, .debug_abbrev, the string, range
 * and address sections), copied out of the file (never mmap'd: a file truncated under us must
 * not SIGBUS); line tables, location lists and macros stay on disk. The descriptor is not
 * kept. libdw opens no file on its own for us: split DWARF (skeleton units) is skipped, and a
 * dwz-compressed file keeps its sections, unindexed, until its supplementary file is attached
 * (hc_dwinline__set_alt()); a path it names could be anything, a FIFO included.
 *
 * Hostile input: libdw bounds-checks what it decodes; the walk bounds its nesting depth and
 * the DIEs it visits in all, and refuses sibling links that go backwards.
 */
#ifndef HOTCOLD_SYMBOLIZE_DWINLINE_H
#define HOTCOLD_SYMBOLIZE_DWINLINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nesting of scopes followed: a lookup that reaches deeper DWARF is refused (-E2BIG). */
#define HC_DWINLINE_MAX_NEST 256
/*
 * DIEs (and address ranges) the walk of one file may visit in all: past it, the file is
 * refused (E2BIG). libc's debuginfo file (Debian 12) takes 0.35M (of its 1.2M DIEs: types are
 * not walked), in 0.13 s; a file within the symbolizer's 256 MiB budget, some millions. A
 * hostile file packs a DIE in a byte: this bounds what it costs, once.
 */
#define HC_DWINLINE_MAX_DIES (16u << 20)

struct hc_dwinline;

/*
 * The inline index of the ELF file behind fd (an object, or its separate debuginfo file),
 * built from at most max_bytes of section data (decompressed), into at most max_bytes of
 * index. The fd is only read during the call. A file that needs a supplementary file is only
 * loaded: its index is built by hc_dwinline__set_alt(). NULL + errno: ENODATA (no
 * .debug_info), E2BIG (more than max_bytes, or more than HC_DWINLINE_MAX_DIES DIEs), ENOEXEC
 * (not ELF, or libdw refuses it), ENOMEM.
 */
struct hc_dwinline *hc_dwinline__from_fd(int fd, size_t max_bytes);
/* The same from memory (copied; buf is not retained). */
struct hc_dwinline *hc_dwinline__from_mem(const void *buf, size_t len, size_t max_bytes);
/*
 * A supplementary file (the one hc_dwinline__alt_build_id() names), loaded and not indexed:
 * only for hc_dwinline__set_alt() (lookups in it find nothing). Errors as from_fd().
 */
struct hc_dwinline *hc_dwinline__alt_from_fd(int fd, size_t max_bytes);
struct hc_dwinline *hc_dwinline__alt_from_mem(const void *buf, size_t len, size_t max_bytes);
void hc_dwinline__free(struct hc_dwinline *d);

/*
 * Bytes held: the index's once built; before (a file waiting for its supplementary file, or a
 * supplementary file) the section data loaded, what max_bytes bounds.
 */
size_t hc_dwinline__bytes(const struct hc_dwinline *d);

/*
 * A dwz-compressed file's supplementary file (.gnu_debugaltlink): its build-id (borrowed) and
 * length, 0 when the file needs none. Until one is attached, lookups fail with -ENOLINK.
 */
size_t hc_dwinline__alt_build_id(const struct hc_dwinline *d, const uint8_t **id);
/*
 * Attach alt (the file hc_dwinline__alt_build_id() names, from hc_dwinline__alt_from_fd()) to
 * d and build d's index with it, within the max_bytes d was loaded with; then the DWARF of
 * both is released. alt is consumed in every case. -EINVAL: d needs none or has one, alt needs
 * one of its own or is no supplementary file; -E2BIG, -ENOMEM: the build failed, d still has
 * none.
 */
int hc_dwinline__set_alt(struct hc_dwinline *d, struct hc_dwinline *alt);

/*
 * The DWARF sections of elf (opened ELF_C_READ: only the in-memory section headers change) that
 * an inline lookup reads stay; the others (line tables, location lists, macros, group members,
 * .zdebug_) become SHT_NOBITS so that dwarf_begin_elf() never reads them. *bytes: the bytes
 * kept (compressed ones counted with their inflated size); *has_info: .debug_info is among
 * them. -ENOEXEC (unreadable headers), -E2BIG (sizes overflow). For this file and its test's
 * reference walk, which must read the same sections.
 */
struct Elf;
int hc_dwinline__keep_sections(struct Elf *elf, size_t *bytes, bool *has_info);

/*
 * The inline chain at ELF virtual address vaddr (st_value space: the same for an object and
 * its debuginfo file). names[0] is the function whose code holds vaddr (the subprogram), then
 * the functions inlined into it down to the innermost, the one vaddr is in. Names are raw
 * (mangled when the DWARF has a linkage name), NULL when a DIE has none; borrowed until
 * hc_dwinline__free(). A chain longer than max keeps names[0] and the max - 1 innermost.
 *
 * Returns the chain's full length (>= 1; *n = min(length, max)), -ENOENT (no subprogram
 * holds vaddr), -ENOLINK (a supplementary file is needed and not attached), -E2BIG (the
 * DWARF nests deeper than HC_DWINLINE_MAX_NEST there, or a sibling link there goes
 * backwards), -EINVAL (max 0).
 */
int hc_dwinline__lookup(struct hc_dwinline *d, uint64_t vaddr, const char **names, size_t max,
			size_t *n);

#endif
