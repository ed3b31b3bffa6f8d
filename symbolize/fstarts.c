// SPDX-License-Identifier: GPL-2.0-only
/*
 * Function starts from call frame information (fstarts.h). One linear pass over the section:
 * CIEs remembered with their pointer encoding, each FDE's initial_location and
 * address_range decoded with it. Nothing of the instructions is read: only the ranges matter.
 */
#include "symbolize/fstarts.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/array.h"

/* DW_EH_PE_*: the .eh_frame pointer encodings. */
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

struct range {
	uint64_t lo, hi;
};

struct hc_fstarts {
	struct range *r; /* sorted by lo, one per lo */
	size_t n;
};

struct cie {
	uint64_t off; /* section offset */
	uint8_t enc;  /* the FDEs' pointer encoding ('R') */
	bool ok;      /* augmentation understood: its FDEs can be decoded */
};

struct walk {
	const uint8_t *sec;
	size_t len;
	uint64_t vaddr; /* the section's: pcrel pointers are relative to it */
	bool eh;	/* .eh_frame (else .debug_frame: absolute pointers) */
	unsigned addr_size;
	size_t max_fdes;
	struct cie *cies;
	size_t n_cies, cap_cies;
	struct range *r;
	size_t n, cap;
};

/* Bytes a pointer of encoding enc takes; 0: not understood. */
static unsigned ptr_size(const struct walk *w, uint8_t enc)
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

/* A pointer in encoding enc at *pp (absolute or pcrel: what gcc, clang and ld write). */
static int read_ptr(const struct walk *w, const uint8_t **pp, const uint8_t *end, uint8_t enc,
		    uint64_t *out)
{
	unsigned size = ptr_size(w, enc);
	uint64_t v = 0;

	if (enc == PE_OMIT || (enc & PE_INDIRECT) || !size || (size_t)(end - *pp) < size)
		return -EBADMSG;
	for (unsigned i = 0; i < size; i++)
		v |= (uint64_t)(*pp)[i] << (8 * i);
	if ((enc & 0x08) && size < 8 && (v >> (8 * size - 1)))
		v |= ~0ull << (8 * size); /* sdata: sign-extend */
	switch (enc & PE_APP_MASK) {
	case 0:
		break;
	case PE_PCREL:
		v += w->vaddr + (uint64_t)(*pp - w->sec);
		break;
	default:
		return -EBADMSG;
	}
	*pp += size;
	*out = v;
	return 0;
}

/* The FDE pointer encoding of a CIE's augmentation ("", "S", or a z-string of R, P, L, S, B). */
static bool cie_encoding(const struct walk *w, const Dwarf_CIE *ce, uint8_t *enc)
{
	const uint8_t *p = ce->augmentation_data, *end;
	const char *a = ce->augmentation;

	*enc = PE_ABSPTR;
	/* .debug_frame's FDE addresses are absolute, whatever the augmentation says */
	if (!w->eh || !a || !a[0])
		return true;
	if (a[0] != 'z')
		return !strcmp(a, "S");
	if (!p)
		return false;
	end = p + ce->augmentation_data_size;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			if (p >= end)
				return false;
			*enc = *p++;
			break;
		case 'L':
			if (p >= end)
				return false;
			p++;
			break;
		case 'P': {
			unsigned size;

			if (p >= end)
				return false;
			size = ptr_size(w, *p++);
			if (!size || (size_t)(end - p) < size)
				return false;
			p += size; /* the personality routine: not needed */
			break;
		}
		case 'S':
		case 'B':
			break;
		default:
			return false;
		}
	}
	return true;
}

static int add_cie(struct walk *w, uint64_t off, const Dwarf_CIE *ce)
{
	struct cie *c;

	if (w->n_cies >= w->max_fdes)
		return -E2BIG; /* linkers share CIEs: more than FDEs is a hostile section */
	if (hc_array_grow(w->cies, w->cap_cies, w->n_cies + 1, 256))
		return -ENOMEM;
	c = &w->cies[w->n_cies++];
	c->off = off;
	c->ok = cie_encoding(w, ce, &c->enc);
	return 0;
}

static const struct cie *find_cie(const struct walk *w, uint64_t off)
{
	size_t lo = 0, hi = w->n_cies;

	/* appended in section order */
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

/* An FDE's range, when its CIE is known and understood; empty ranges are left out. */
static int add_fde(struct walk *w, const Dwarf_FDE *fde)
{
	const struct cie *c = find_cie(w, fde->CIE_pointer);
	const uint8_t *p = fde->start;
	uint64_t lo, range;
	uint8_t enc;

	if (!c || !c->ok || !p || fde->end < p)
		return 0;
	enc = w->eh ? c->enc : PE_ABSPTR;
	if (read_ptr(w, &p, fde->end, enc, &lo) ||
	    read_ptr(w, &p, fde->end, enc & PE_FMT_MASK, &range))
		return 0;
	if (!range || lo + range < lo)
		return 0;
	if (w->n >= w->max_fdes)
		return -E2BIG;
	if (hc_array_grow(w->r, w->cap, w->n + 1, 256))
		return -ENOMEM;
	w->r[w->n++] = (struct range){lo, lo + range};
	return 0;
}

static int walk_entries(struct walk *w, const unsigned char *ident)
{
	Elf_Data data = {
		.d_buf = (void *)w->sec,
		.d_type = ELF_T_BYTE,
		.d_size = w->len,
		.d_version = EV_CURRENT,
	};
	Dwarf_Off off = 0, next;

	for (;;) {
		Dwarf_CFI_Entry e;
		int r = dwarf_next_cfi(ident, &data, w->eh, off, &next, &e);

		/* the end, or an entry that cannot be framed: what came before is kept */
		if (r != 0 || next <= off || next > w->len)
			return 0;
		r = dwarf_cfi_cie_p(&e) ? add_cie(w, off, &e.cie) : add_fde(w, &e.fde);
		if (r)
			return r;
		off = next;
	}
}

static int range_cmp(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/* Sort, and keep one range per start (the longest). */
static void sort_unique(struct walk *w)
{
	size_t k = 0;

	qsort(w->r, w->n, sizeof(*w->r), range_cmp);
	for (size_t i = 0; i < w->n; i++) {
		if (k && w->r[k - 1].lo == w->r[i].lo)
			w->r[k - 1].hi = w->r[i].hi; /* sorted by hi too: the longest is last */
		else
			w->r[k++] = w->r[i];
	}
	w->n = k;
}

/* .eh_frame, else .debug_frame, as raw bytes (not compressed, not over the size limit). */
static Elf_Scn *cfi_section(Elf *elf, bool *eh)
{
	Elf_Scn *scn = NULL, *debug = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    (sh.sh_flags & SHF_COMPRESSED) || !sh.sh_size ||
		    sh.sh_size > HC_FSTARTS_SECTION_MAX)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && !strcmp(name, ".eh_frame")) {
			*eh = true;
			return scn;
		}
		if (name && !strcmp(name, ".debug_frame") && !debug)
			debug = scn;
	}
	*eh = false;
	return debug;
}

struct hc_fstarts *hc_fstarts__from_elf(Elf *elf, size_t max_fdes)
{
	struct walk w = {.max_fdes = max_fdes ? max_fdes : SIZE_MAX};
	const unsigned char *ident;
	struct hc_fstarts *fs;
	Elf_Data *data;
	Elf_Scn *scn;
	GElf_Shdr sh;
	int err;

	ident = (const unsigned char *)elf_getident(elf, NULL);
	if (!ident || elf_kind(elf) != ELF_K_ELF) {
		errno = ENOEXEC;
		return NULL;
	}
	w.addr_size = ident[EI_CLASS] == ELFCLASS32 ? 4 : 8;
	scn = cfi_section(elf, &w.eh);
	data = scn ? elf_rawdata(scn, NULL) : NULL;
	if (!data || !data->d_buf || !gelf_getshdr(scn, &sh)) {
		errno = ENODATA;
		return NULL;
	}
	w.sec = data->d_buf;
	w.len = data->d_size;
	w.vaddr = sh.sh_addr;
	err = walk_entries(&w, ident);
	free(w.cies);
	if (!err && !w.n)
		err = -ENODATA;
	if (err)
		goto err_free;
	sort_unique(&w);
	fs = calloc(1, sizeof(*fs));
	if (!fs) {
		err = -ENOMEM;
		goto err_free;
	}
	/* the table is kept: give back what growing it left over */
	fs->r = realloc(w.r, w.n * sizeof(*w.r));
	if (!fs->r)
		fs->r = w.r;
	fs->n = w.n;
	return fs;

err_free:
	free(w.r);
	errno = -err;
	return NULL;
}

struct hc_fstarts *hc_fstarts__from_fd(int fd, size_t max_fdes)
{
	struct hc_fstarts *fs;
	struct stat st;
	Elf *elf;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		errno = ENOEXEC;
		return NULL;
	}
	elf_version(EV_CURRENT);
	/* ELF_C_READ: sections read with pread() as asked for, never mapped (a file truncated
	 * under us is a short read, not a SIGBUS) */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		errno = ENOEXEC;
		return NULL;
	}
	fs = hc_fstarts__from_elf(elf, max_fdes);
	if (!fs) {
		int err = errno;

		elf_end(elf);
		errno = err;
		return NULL;
	}
	elf_end(elf);
	return fs;
}

struct hc_fstarts *hc_fstarts__from_mem(const void *buf, size_t len, size_t max_fdes)
{
	struct hc_fstarts *fs = NULL;
	char *copy;
	Elf *elf;
	int err = ENOEXEC;

	elf_version(EV_CURRENT);
	/* elf_memory() may write to its image: it gets a copy */
	copy = malloc(len ? len : 1);
	if (!copy) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, buf, len);
	elf = elf_memory(copy, len);
	if (elf) {
		fs = hc_fstarts__from_elf(elf, max_fdes);
		err = errno;
		elf_end(elf);
	}
	free(copy);
	if (!fs)
		errno = err;
	return fs;
}

void hc_fstarts__free(struct hc_fstarts *fs)
{
	if (!fs)
		return;
	free(fs->r);
	free(fs);
}

int hc_fstarts__lookup(const struct hc_fstarts *fs, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = fs ? fs->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fs->r[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The last range starting at or below vaddr; a nested one (rare: hand-written
	 * assembly) may hide the range around it: then the address stays unnamed. */
	if (!lo || vaddr >= fs->r[lo - 1].hi)
		return -ENOENT;
	*start = fs->r[lo - 1].lo;
	return 0;
}

size_t hc_fstarts__nr(const struct hc_fstarts *fs)
{
	return fs ? fs->n : 0;
}

size_t hc_fstarts__bytes(const struct hc_fstarts *fs)
{
	return fs ? sizeof(*fs) + fs->n * sizeof(*fs->r) : 0;
}
