/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Call frame information, framed: the one walker over .eh_frame / .debug_frame that
 * symbolize/fstarts.c (function starts) and symbolize/uwtable.c (unwind tables) share.
 * Entries are framed by libdw's dwarf_next_cfi(); CIEs are remembered (augmentation parsed:
 * the FDEs' pointer encoding, 'z', 'S') and each FDE is handed out raw, its CIE resolved and
 * its range decoded on request. Pointers are decoded here: formats absptr, udata2/4/8,
 * sdata2/4/8, applications absolute and pcrel (what gcc, clang and ld write); anything else
 * is refused.
 *
 * The section is untrusted and only borrowed: it must outlive the walk and every pointer the
 * walk hands out. Two policies: a strict walk (uwtable) refuses the section at a CIE it does
 * not understand and at non-zero bytes after the last entry; a lenient one (fstarts) keeps such
 * a CIE with err set, so that only its FDEs are skipped. Not thread-safe per walk; walks share
 * nothing.
 */
#ifndef HOTCOLD_SYMBOLIZE_CFI_H
#define HOTCOLD_SYMBOLIZE_CFI_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hc_cfi_cie {
	uint64_t off;			  /* section offset */
	const uint8_t *insns, *insns_end; /* initial instructions */
	uint64_t caf;			  /* code alignment factor */
	int64_t daf;			  /* data alignment factor */
	uint64_t ra_reg;		  /* return address column */
	uint8_t ptr_enc;		  /* the FDEs' pointer encoding ('R'; absptr without) */
	bool has_z;			  /* FDEs carry augmentation data */
	bool signal;			  /* 'S': a signal trampoline's frame */
	int err; /* 0, or -EBADMSG: augmentation not understood (lenient walks only) */
};

/* An FDE as framed: its CIE pointer (a section offset) and its bytes after it. */
struct hc_cfi_raw_fde {
	uint64_t cie_off;
	const uint8_t *start, *end;
};

/* An FDE decoded: [lo, hi) (hi == lo: an empty range), and its instructions. */
struct hc_cfi_fde {
	uint64_t lo, hi;
	const uint8_t *insns, *insns_end; /* NULL: its augmentation data cannot be skipped */
	const struct hc_cfi_cie *cie;	  /* valid until the next hc_cfi__next_fde() */
};

struct hc_cfi {
	const uint8_t *sec;
	size_t len;
	uint64_t vaddr; /* the section's: pcrel pointers are relative to it */
	bool eh;	/* .eh_frame (else .debug_frame: FDE addresses absolute) */
	bool strict;
	unsigned char ident[EI_NIDENT];
	unsigned addr_size; /* 4 or 8: absptr's */
	size_t max_cies;
	uint64_t off;		 /* the next entry's */
	struct hc_cfi_cie *cies; /* in section order */
	size_t nr_cies, cap_cies;
};

/*
 * Start a walk over sec[0..len) at sec_vaddr. ident: the object's ELF identification (class and
 * byte order; NULL: 64-bit little-endian). max_cies: CIEs kept at most (linkers share CIEs:
 * more is a hostile section; 0: no limit). Nothing is allocated before the first entry.
 */
void hc_cfi__init(struct hc_cfi *w, const void *sec, size_t len, uint64_t sec_vaddr, bool eh_frame,
		  const unsigned char *ident, size_t max_cies, bool strict);
void hc_cfi__fini(struct hc_cfi *w);

/*
 * The next FDE (CIEs are taken in on the way): 0 and *fde, 1 at the end of the section,
 * -EBADMSG (an entry that cannot be framed; strict: also a CIE not understood or a non-zero
 * tail), -E2BIG (more than max_cies CIEs), -ENOMEM. After an error the walk is over; what it
 * handed out before stays valid.
 */
int hc_cfi__next_fde(struct hc_cfi *w, struct hc_cfi_raw_fde *fde);

/* The CIE at section offset off, or NULL. */
const struct hc_cfi_cie *hc_cfi__find_cie(const struct hc_cfi *w, uint64_t off);

/*
 * An FDE's CIE, range and instructions: 0, -ENOENT (no CIE there), -EBADMSG (its CIE not
 * understood, a pointer not decodable, a range that wraps).
 */
int hc_cfi__decode_fde(const struct hc_cfi *w, const struct hc_cfi_raw_fde *raw,
		       struct hc_cfi_fde *out);

/* .eh_frame and the first .debug_frame with contents (NULL where none); 0 or -ENOEXEC. */
int hc_cfi__sections(Elf *elf, Elf_Scn **eh_frame, Elf_Scn **debug_frame);

/* Readers bounded by end: 0 and *pp advanced past the value, or -EBADMSG. */
int hc_cfi__read_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out);
int hc_cfi__read_sleb(const uint8_t **pp, const uint8_t *end, int64_t *out);
int hc_cfi__read_le(const uint8_t **pp, const uint8_t *end, unsigned size, uint64_t *out);
/* A pointer in encoding enc (*pp inside w's section: pcrel is relative to where it lies). */
int hc_cfi__read_ptr(const struct hc_cfi *w, const uint8_t **pp, const uint8_t *end, uint8_t enc,
		     uint64_t *out);

#endif
