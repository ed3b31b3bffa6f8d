/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Function starts: where an object's functions begin and end, from its call frame
 * information (what samply does for stripped code). Every function a compiler emits with
 * unwind tables (gcc and clang default to -fasynchronous-unwind-tables on x86-64 and arm64) has
 * an FDE whose [initial_location, +address_range) is the function; `strip --strip-all` keeps
 * .eh_frame, which the C++ runtime and the unwinder need. An address of a stripped object
 * without a symbol is then named by the start of the FDE that covers it: one frame per
 * function instead of one per sampled address.
 *
 * The table is built once per object from .eh_frame (else an uncompressed .debug_frame) by the
 * shared call frame walker (symbolize/cfi.h), in its lenient mode. The input is untrusted: an entry
 * that cannot be framed ends the walk (the FDEs before it are kept), an FDE whose CIE or encoding
 * is not understood is skipped, and at most max_fdes are kept. Lookups take ELF virtual addresses
 * (st_value space), like symbolize/elfsym.h's.
 *
 * Memory: 16 bytes per FDE kept (hc_fstarts__bytes()). Tables are immutable once built.
 */
#ifndef HOTCOLD_SYMBOLIZE_FSTARTS_H
#define HOTCOLD_SYMBOLIZE_FSTARTS_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* Sections larger than this are not read (a hostile file may claim any size). */
#define HC_FSTARTS_SECTION_MAX (64u << 20)

struct hc_fstarts;

/*
 * From an ELF handle (only read). max_fdes: FDEs kept at most (0: no limit but the section's
 * size). NULL + errno: ENODATA (no call frame information, or no FDE with a range), E2BIG
 * (more FDEs than max_fdes: none kept, a partial table would leave functions unnamed at
 * random), ENOEXEC (not ELF), ENOMEM.
 */
struct hc_fstarts *hc_fstarts__from_elf(Elf *elf, size_t max_fdes);
/* The same from an open file: headers and the one CFI section read with pread() (the caller
 * keeps fd), or from a file image in memory (tests, fuzzing; buf is not retained). */
struct hc_fstarts *hc_fstarts__from_fd(int fd, size_t max_fdes);
struct hc_fstarts *hc_fstarts__from_mem(const void *buf, size_t len, size_t max_fdes);
void hc_fstarts__free(struct hc_fstarts *fs);

/* The start of the function (FDE) covering vaddr: 0 and *start, or -ENOENT (no FDE does). */
int hc_fstarts__lookup(const struct hc_fstarts *fs, uint64_t vaddr, uint64_t *start);
/* Functions kept (distinct starts), and the bytes the table holds. */
size_t hc_fstarts__nr(const struct hc_fstarts *fs);
size_t hc_fstarts__bytes(const struct hc_fstarts *fs);

#endif
