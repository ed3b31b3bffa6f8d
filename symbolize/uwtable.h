/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Unwind tables: an object's call frame information (.eh_frame, else .debug_frame) compiled
 * into the rows of bpf/unwind.h, sorted by pc, consecutive equal rules merged, a GAP row after
 * every FDE not followed by another within 15 bytes and a final GAP. Nothing uses them yet
 * (issue 21, stage 1; docs/unwinding.md).
 *
 * The input is untrusted (any file a profiled process maps). Entries are framed by libdw's
 * dwarf_next_cfi(); pointers and call frame instructions are decoded here, in one linear pass
 * per FDE, bounded in rows, instructions and FDEs. A structural error anywhere refuses the
 * whole object: nothing is half-returned. An unrepresentable rule is only an UNSUPP row.
 *
 * Errors: -EBADMSG malformed (truncated entry, bad CIE pointer or pointer encoding, unknown
 * opcode, unbalanced restore_state, FDE outside the text or overlapping another), -E2BIG a
 * bound exceeded (see struct hc_uwtable_limits; also objects past 4 GiB of vaddr, a remember
 * stack deeper than 16), -ENODATA no call frame information (no section, no FDE with a
 * range, a compressed .debug_frame, no executable segment), -ENOEXEC not a 64-bit
 * little-endian x86-64 ELF, -ENOMEM. Only -EBADMSG and -E2BIG count as refused.
 * Tables are immutable once returned; compiles share no state (thread-safe).
 *
 * Not handled yet: signal trampolines recognised by their code (musl has no 'S'
 * augmentation), and a return address popped by the frame itself (musl's __clone): both
 * give ordinary rows today.
 */
#ifndef HOTCOLD_SYMBOLIZE_UWTABLE_H
#define HOTCOLD_SYMBOLIZE_UWTABLE_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind.h"

struct hc_uwtable;

/* Zero fields take the defaults below. */
struct hc_uwtable_limits {
	size_t max_rows;	  /* whole table; default and ceiling HC_UROWS_MAX */
	size_t max_fdes;	  /* FDEs, and CIEs apart; default 1 << 20 */
	size_t max_rows_per_fde;  /* rows kept (after merging); default 1 << 16 */
	size_t max_insns_per_fde; /* call frame instructions; default 1 << 16 */
	uint64_t max_insns;	  /* whole object; default 1 << 26 */
};

#define HC_UWTABLE_SECTION_MAX (64u << 20) /* bytes of .eh_frame/.debug_frame read, at most */

struct hc_uwtable_stats {
	uint64_t objects;	     /* compiled */
	uint64_t refused;	     /* compile failed with -EBADMSG or -E2BIG */
	uint64_t fdes;		     /* FDEs with a non-empty range */
	uint64_t insns;		     /* call frame instructions interpreted */
	uint64_t rows;		     /* rows in the tables, after merging */
	uint64_t rows_merged;	     /* rows dropped because they repeated the previous rule */
	uint64_t gaps;		     /* GAP rows (the final one included) */
	uint64_t unsupp[HC_URU_MAX]; /* UNSUPP rows, by enum hc_urow_unsupp */
};

/*
 * Compile a CFI section from memory (tests, fuzzing; the ELF entry points end here).
 * sec[0..len): the section's bytes; sec_vaddr: its virtual address (pcrel pointers are relative
 * to it); eh_frame: .eh_frame format (else .debug_frame, whose FDE addresses are absolute);
 * every FDE range must lie in [text_lo, text_hi), text_hi < 2^32 (row pcs are 32-bit). lim may be
 * NULL. On success *out owns a new table. acc, if not NULL, has this compile's stats added to it
 * (refused counted there on -EBADMSG/-E2BIG). 0 or -errno (see above); *out NULL on error.
 */
int hc_uwtable__compile_mem(const void *sec, size_t len, uint64_t sec_vaddr, bool eh_frame,
			    uint64_t text_lo, uint64_t text_hi, const struct hc_uwtable_limits *lim,
			    struct hc_uwtable **out, struct hc_uwtable_stats *acc);

/*
 * From an ELF handle (for instance the symbolizer's unwind handle, whose CFI sections are
 * read already): .eh_frame, or .debug_frame when there is no .eh_frame; every FDE must lie
 * inside one executable PT_LOAD segment (at most 16 of them). The handle is only read.
 */
int hc_uwtable__compile_elf(Elf *elf, const struct hc_uwtable_limits *lim, struct hc_uwtable **out,
			    struct hc_uwtable_stats *acc);

/*
 * From an open file: headers and the one CFI section read with pread() (ELF_C_READ, no
 * mmap: a file truncated under us is a short read, not a SIGBUS). fd is not kept nor closed.
 */
int hc_uwtable__compile_fd(int fd, const struct hc_uwtable_limits *lim, struct hc_uwtable **out,
			   struct hc_uwtable_stats *acc);

/* The rows, sorted by strictly increasing pc; valid until hc_uwtable__free(t). */
const struct hc_urow *hc_uwtable__rows(const struct hc_uwtable *t, size_t *n);
/* This table's own stats (objects = 1). */
void hc_uwtable__stats(const struct hc_uwtable *t, struct hc_uwtable_stats *s);
void hc_uwtable__free(struct hc_uwtable *t);

/* A kind's name ("sp", "plt", ...), or "?" */
const char *hc_urow_kind_name(unsigned kind);
/* An UNSUPP reason's name ("cfa_reg", ...), or "?" */
const char *hc_urow_unsupp_name(unsigned reason);

#endif
