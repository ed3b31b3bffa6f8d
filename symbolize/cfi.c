// SPDX-License-Identifier: GPL-2.0-only
/*
 * The shared call frame information walker (cfi.h): entries framed by dwarf_next_cfi(), CIEs
 * kept in section order (so found by binary search), FDEs decoded with their CIE's encoding.
 */
#include "symbolize/cfi.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"

/* DW_EH_PE_* (the .eh_frame pointer encodings; not in dwarf.h under these names everywhere). */
#define PE_OMIT 0xff
#define PE_ABSPTR 0x00
#define PE_UDATA2 0x02
#define PE_UDATA4 0x03
#define PE_UDATA8 0x04
#define PE_SDATA2 0x0a
#define PE_SDATA4 0x0b
#define PE_SDATA8 0x0c
#define PE_PCREL 0x10
#define PE_APP_MASK 0x70
#define PE_FMT_MASK 0x0f
#define PE_INDIRECT 0x80
#define PE_SIGNED 0x08

int hc_cfi__read_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *pp < end; shift += 7) {
		uint8_t b = *(*pp)++;

		if (shift >= 64 || (shift == 63 && (b & 0x7e)))
			return -EBADMSG;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -EBADMSG;
}

int hc_cfi__read_sleb(const uint8_t **pp, const uint8_t *end, int64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0; *pp < end; shift += 7) {
		uint8_t b = *(*pp)++;

		if (shift >= 64)
			return -EBADMSG;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (shift + 7 < 64 && (b & 0x40))
				v |= ~0ull << (shift + 7);
			*out = (int64_t)v;
			return 0;
		}
	}
	return -EBADMSG;
}

int hc_cfi__read_le(const uint8_t **pp, const uint8_t *end, unsigned size, uint64_t *out)
{
	uint64_t v = 0;

	if ((size_t)(end - *pp) < size)
		return -EBADMSG;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)(*pp)[i] << (8 * i);
	*pp += size;
	*out = v;
	return 0;
}

/* Bytes a pointer of encoding enc takes; 0: not understood. */
static unsigned ptr_size(const struct hc_cfi *w, uint8_t enc)
{
	switch (enc & PE_FMT_MASK) {
	case PE_ABSPTR:
		return w->addr_size;
	case PE_UDATA2:
	case PE_SDATA2:
		return 2;
	case PE_UDATA4:
	case PE_SDATA4:
		return 4;
	case PE_UDATA8:
	case PE_SDATA8:
		return 8;
	}
	return 0;
}

int hc_cfi__read_ptr(const struct hc_cfi *w, const uint8_t **pp, const uint8_t *end, uint8_t enc,
		     uint64_t *out)
{
	uint64_t field = w->vaddr + (uint64_t)(*pp - w->sec), v;
	unsigned size = ptr_size(w, enc);
	uint8_t app = enc & PE_APP_MASK;

	if (enc == PE_OMIT || (enc & PE_INDIRECT) || !size || (app && app != PE_PCREL) ||
	    hc_cfi__read_le(pp, end, size, &v))
		return -EBADMSG;
	if ((enc & PE_SIGNED) && size < 8 && (v >> (8 * size - 1)))
		v |= ~0ull << (8 * size);
	*out = app == PE_PCREL ? v + field : v;
	return 0;
}

/* The augmentation: "", runs of the data-less 'S', or a z-string of R, P, L, S, B. */
static int parse_augmentation(const struct hc_cfi *w, const Dwarf_CIE *ce, struct hc_cfi_cie *k)
{
	const uint8_t *p = ce->augmentation_data, *end;
	const char *a = ce->augmentation;

	if (!a || !a[0])
		return 0;
	if (a[0] != 'z') {
		/* without 'z' the augmentation data cannot be sized: only 'S' (gas writes "S"
		 * into .debug_frame for .cfi_signal_frame) is understood */
		for (; *a; a++)
			if (*a != 'S')
				return -EBADMSG;
		k->signal = true;
		return 0;
	}
	if (!p)
		return -EBADMSG;
	k->has_z = true;
	end = p + ce->augmentation_data_size;
	for (a++; *a; a++) {
		unsigned size;

		switch (*a) {
		case 'R':
			if (p >= end)
				return -EBADMSG;
			k->ptr_enc = *p++;
			break;
		case 'L':
			if (p >= end)
				return -EBADMSG;
			p++;
			break;
		case 'P':
			/* the personality routine is not used: its pointer only skipped */
			if (p >= end)
				return -EBADMSG;
			size = ptr_size(w, *p++);
			if (!size || (size_t)(end - p) < size)
				return -EBADMSG;
			p += size;
			break;
		case 'S':
			k->signal = true;
			break;
		case 'B': /* arm64 B-key return address signing: no data */
			break;
		default:
			return -EBADMSG;
		}
	}
	return 0;
}

static int add_cie(struct hc_cfi *w, uint64_t off, const Dwarf_CIE *ce)
{
	struct hc_cfi_cie *k;

	if (w->nr_cies >= w->max_cies)
		return -E2BIG;
	if (hc_array_grow(w->cies, w->cap_cies, w->nr_cies + 1, 64))
		return -ENOMEM;
	k = &w->cies[w->nr_cies];
	*k = (struct hc_cfi_cie){
		.off = off,
		.insns = ce->initial_instructions,
		.insns_end = ce->initial_instructions_end,
		.caf = ce->code_alignment_factor,
		.daf = ce->data_alignment_factor,
		.ra_reg = ce->return_address_register,
		.ptr_enc = PE_ABSPTR,
	};
	if (!k->insns || k->insns_end < k->insns)
		k->err = -EBADMSG;
	else
		k->err = parse_augmentation(w, ce, k);
	if (k->err && w->strict)
		return k->err;
	w->nr_cies++;
	return 0;
}

void hc_cfi__init(struct hc_cfi *w, const void *sec, size_t len, uint64_t sec_vaddr, bool eh_frame,
		  const unsigned char *ident, size_t max_cies, bool strict)
{
	static const unsigned char ident64le[EI_NIDENT] = {
		ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT};

	memset(w, 0, sizeof(*w));
	w->sec = sec;
	w->len = len;
	w->vaddr = sec_vaddr;
	w->eh = eh_frame;
	w->strict = strict;
	memcpy(w->ident, ident ? ident : ident64le, EI_NIDENT);
	w->addr_size = w->ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	w->max_cies = max_cies ? max_cies : SIZE_MAX;
}

void hc_cfi__fini(struct hc_cfi *w)
{
	free(w->cies);
	w->cies = NULL;
	w->nr_cies = w->cap_cies = 0;
}

/*
 * dwarf_next_cfi() reports the end of the section when fewer than a whole length field and
 * its entry remain, so a section cut inside an entry's first bytes would read as complete.
 * Only a zero terminator or zero padding may follow the last entry.
 */
static int tail_is_zero(const struct hc_cfi *w)
{
	for (size_t i = w->off; i < w->len; i++)
		if (w->sec[i])
			return -EBADMSG;
	return 1;
}

int hc_cfi__next_fde(struct hc_cfi *w, struct hc_cfi_raw_fde *fde)
{
	Elf_Data data = {
		.d_buf = (void *)w->sec,
		.d_type = ELF_T_BYTE,
		.d_size = w->len,
		.d_version = EV_CURRENT,
	};

	for (;;) {
		Dwarf_Off next;
		Dwarf_CFI_Entry e;
		int r = dwarf_next_cfi(w->ident, &data, w->eh, w->off, &next, &e);

		if (r == 1)
			return w->strict ? tail_is_zero(w) : 1;
		if (r < 0 || next <= w->off || next > w->len)
			return -EBADMSG;
		if (!dwarf_cfi_cie_p(&e)) {
			*fde = (struct hc_cfi_raw_fde){e.fde.CIE_pointer, e.fde.start, e.fde.end};
			w->off = next;
			return 0;
		}
		r = add_cie(w, w->off, &e.cie);
		if (r)
			return r;
		w->off = next;
	}
}

const struct hc_cfi_cie *hc_cfi__find_cie(const struct hc_cfi *w, uint64_t off)
{
	size_t lo = 0, hi = w->nr_cies;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->cies[mid].off == off)
			return &w->cies[mid];
		if (w->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int hc_cfi__decode_fde(const struct hc_cfi *w, const struct hc_cfi_raw_fde *raw,
		       struct hc_cfi_fde *out)
{
	const struct hc_cfi_cie *k = hc_cfi__find_cie(w, raw->cie_off);
	const uint8_t *p = raw->start;
	uint64_t lo, range, aug;
	uint8_t enc;

	if (!k)
		return -ENOENT;
	/* .debug_frame's FDE addresses are absolute, whatever the augmentation says */
	if ((k->err && w->eh) || !p || raw->end < p)
		return -EBADMSG;
	enc = w->eh ? k->ptr_enc : PE_ABSPTR;
	if (hc_cfi__read_ptr(w, &p, raw->end, enc, &lo) ||
	    hc_cfi__read_ptr(w, &p, raw->end, enc & PE_FMT_MASK, &range) || lo + range < lo)
		return -EBADMSG;
	*out = (struct hc_cfi_fde){.lo = lo, .hi = lo + range, .cie = k};
	if (k->has_z && (hc_cfi__read_uleb(&p, raw->end, &aug) || aug > (uint64_t)(raw->end - p)))
		return 0; /* the range is known, the instructions are not */
	if (k->has_z)
		p += aug;
	out->insns = p;
	out->insns_end = raw->end;
	return 0;
}

int hc_cfi__sections(Elf *elf, Elf_Scn **eh_frame, Elf_Scn **debug_frame)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	*eh_frame = *debug_frame = NULL;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		/* ld leaves an empty .eh_frame in objects whose CFI is all in .debug_frame */
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame") && !*eh_frame)
			*eh_frame = scn;
		else if (name && !strcmp(name, ".debug_frame") && !*debug_frame)
			*debug_frame = scn;
	}
	return 0;
}
