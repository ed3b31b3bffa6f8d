// SPDX-License-Identifier: GPL-2.0-only
/*
 * The oracle of the differential test: inline chains found by walking the DIE tree of the
 * compilation unit at every lookup, with the whole DWARF held by libdw. symbolize/dwinline.c
 * answers from an index built once; both must agree on every address.
 */
#include "dwinline_ref.h"
#include "symbolize/dwinline.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* DIEs one lookup may visit: a compilation unit of a million top-level DIEs is already
 * extreme; a hostile one could otherwise make each lookup walk forever. */
#define MAX_VISITS (1u << 20)
/* Compilation units claiming one address (overlapping ranges: broken or hostile DWARF). */
#define CU_CANDIDATES 4

/* An address range of one compilation unit. */
struct cu_range {
	uint64_t lo, hi;
	Dwarf_Off cu; /* the CU DIE's offset in .debug_info */
};

struct ref_dwinline {
	Elf *elf;
	Dwarf *dw;
	void *image; /* from_mem: the private copy libelf reads */
	size_t bytes;
	/* Every compilation unit's ranges, sorted by lo: built at the first lookup. .debug_aranges
	 * would give the same, but clang does not write it by default. */
	struct cu_range *cus;
	size_t nr_cus;
	int cus_err;	       /* 0 until built; 1 built; < 0 the build failed */
	const uint8_t *alt_id; /* into .gnu_debugaltlink's data */
	size_t alt_id_len;
	struct ref_dwinline *alt;
};

void ref_dwinline__free(struct ref_dwinline *d)
{
	if (!d)
		return;
	/* An alt set with dwarf_setalt() is ours to end, after its user. */
	if (d->dw)
		dwarf_end(d->dw);
	ref_dwinline__free(d->alt);
	if (d->elf)
		elf_end(d->elf);
	free(d->image);
	free(d->cus);
	free(d);
}

/* Consumes elf (and image, NULL when elf reads from an fd) in every case. */
static struct ref_dwinline *from_elf(Elf *elf, void *image, bool from_fd, size_t max_bytes)
{
	struct ref_dwinline *d;
	const char *alt_name;
	const void *alt_id;
	bool has_info;
	ssize_t n;
	int err;

	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto err_end;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		err = -ENOMEM;
		goto err_end;
	}
	d->elf = elf;
	d->image = image;
	err = hc_dwinline__keep_sections(elf, &d->bytes, &has_info);
	if (!err && !has_info)
		err = -ENODATA;
	if (!err && d->bytes > max_bytes)
		err = -E2BIG;
	if (err)
		goto err_free;
	d->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		/* libdw's error codes are private: out of memory reads as unusable too */
		err = -ENOEXEC;
		goto err_free;
	}
	/* Everything wanted is in memory now: the descriptor may close. */
	if (from_fd && elf_cntl(elf, ELF_C_FDDONE)) {
		err = -ENOEXEC;
		goto err_free;
	}
	n = dwelf_dwarf_gnu_debugaltlink(d->dw, &alt_name, &alt_id);
	if (n < 0) {
		err = -ENOEXEC;
		goto err_free;
	}
	if (n > 0) {
		d->alt_id = alt_id;
		d->alt_id_len = (size_t)n;
	}
	return d;

err_free:
	ref_dwinline__free(d);
	errno = -err;
	return NULL;
err_end:
	if (elf)
		elf_end(elf);
	free(image);
	errno = -err;
	return NULL;
}

struct ref_dwinline *ref_dwinline__from_fd(int fd, size_t max_bytes)
{
	struct stat st;

	elf_version(EV_CURRENT);
	/* A character device or FIFO is no ELF and may never hit EOF. */
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		errno = ENOEXEC;
		return NULL;
	}
	/* ELF_C_READ, not _MMAP: pread()s, so a file truncated under us is a short read. */
	return from_elf(elf_begin(fd, ELF_C_READ, NULL), NULL, true, max_bytes);
}

struct ref_dwinline *ref_dwinline__from_mem(const void *buf, size_t len, size_t max_bytes)
{
	void *copy;

	elf_version(EV_CURRENT);
	if (!buf || !len) {
		errno = ENOEXEC;
		return NULL;
	}
	/* libelf may rewrite the image in place (section headers, decompression). */
	copy = malloc(len);
	if (!copy) {
		errno = ENOMEM;
		return NULL;
	}
	memcpy(copy, buf, len);
	return from_elf(elf_memory(copy, len), copy, false, max_bytes);
}

size_t ref_dwinline__bytes(const struct ref_dwinline *d)
{
	return d->bytes + d->nr_cus * sizeof(*d->cus) + (d->alt ? ref_dwinline__bytes(d->alt) : 0);
}

size_t ref_dwinline__alt_build_id(const struct ref_dwinline *d, const uint8_t **id)
{
	*id = d->alt_id;
	return d->alt_id_len;
}

int ref_dwinline__set_alt(struct ref_dwinline *d, struct ref_dwinline *alt)
{
	if (!d->alt_id_len || d->alt || alt->alt_id_len) {
		ref_dwinline__free(alt);
		return -EINVAL;
	}
	dwarf_setalt(d->dw, alt->dw);
	d->alt = alt;
	return 0;
}

/* ---- compilation units by address ---- */

static int cu_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	return x->cu < y->cu ? -1 : x->cu > y->cu;
}

static int add_cu_range(struct ref_dwinline *d, size_t *cap, uint64_t lo, uint64_t hi, Dwarf_Off cu)
{
	if (d->nr_cus == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct cu_range *n = realloc(d->cus, ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->cus = n;
		*cap = ncap;
	}
	d->cus[d->nr_cus++] = (struct cu_range){.lo = lo, .hi = hi, .cu = cu};
	return 0;
}

/*
 * Every full compilation unit's address ranges. Skeleton units (split DWARF) are skipped:
 * libdw would go and open their .dwo files by the names they carry; partial and type units
 * hold no code.
 */
static int build_cus(struct ref_dwinline *d)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	size_t cap = 0;
	int r, err;

	while ((r = dwarf_get_units(d->dw, cu, &next, &version, &unit_type, &cudie, NULL)) == 0) {
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;

		cu = next;
		if (unit_type != DW_UT_compile)
			continue;
		while ((off = dwarf_ranges(&cudie, off, &base, &start, &end)) > 0) {
			if (start >= end)
				continue;
			err = add_cu_range(d, &cap, start, end, dwarf_dieoffset(&cudie));
			if (err)
				return err;
		}
	}
	if (d->nr_cus > 1)
		qsort(d->cus, d->nr_cus, sizeof(*d->cus), cu_cmp);
	return 0;
}

/* ---- the walk ---- */

struct walk {
	uint64_t pc;
	unsigned int visits;
	size_t n; /* chain[0] the subprogram, then the inlined subroutines */
	Dwarf_Die chain[REF_DWINLINE_MAX_NEST];
};

static bool has_pc_attrs(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/*
 * Look for pc among the children of parent (at nesting depth), recording the subprogram and
 * the inlined subroutines that contain it into w->chain. Returns 1 when the children of
 * parent hold pc (the chain is complete then), 0 when not, -E2BIG past the bounds.
 */
static int search(struct walk *w, Dwarf_Die *parent, unsigned int depth)
{
	Dwarf_Off prev = dwarf_dieoffset(parent);
	Dwarf_Die child;
	int r;

	if (depth >= REF_DWINLINE_MAX_NEST)
		return -E2BIG;
	if (dwarf_child(parent, &child))
		return 0; /* no children (or unreadable ones) */
	do {
		Dwarf_Off off = dwarf_dieoffset(&child);
		int tag;

		/* Sibling links are offsets the file chooses: never let one loop. */
		if (off <= prev || ++w->visits > MAX_VISITS)
			return -E2BIG;
		prev = off;
		tag = dwarf_tag(&child);
		switch (tag) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
			if (dwarf_haspc(&child, w->pc) != 1)
				break;
			/* A subprogram inside another (GNU C nested functions) is real code
			 * of its own: the chain starts again at it. */
			if (tag == DW_TAG_subprogram)
				w->n = 0;
			if (tag == DW_TAG_subprogram || w->n) {
				if (w->n >= REF_DWINLINE_MAX_NEST)
					return -E2BIG;
				w->chain[w->n++] = child;
			}
			r = search(w, &child, depth + 1);
			return r < 0 ? r : 1;
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
			if (dwarf_haspc(&child, w->pc) == 1) {
				r = search(w, &child, depth + 1);
				return r < 0 ? r : 1;
			}
			/* A block without ranges of its own may still hold inlined code. */
			if (!has_pc_attrs(&child)) {
				r = search(w, &child, depth + 1);
				if (r)
					return r;
			}
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
			/* clang places a namespace's function definitions inside it. */
			r = search(w, &child, depth + 1);
			if (r)
				return r;
			break;
		default:
			break;
		}
	} while ((r = dwarf_siblingof(&child, &child)) == 0);
	return 0;
}

/* Linkage name when there is one (C++, Rust), else the plain name; NULL when none. */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	const char *s = NULL;

	if (dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		s = dwarf_formstring(&a);
	if (!s && dwarf_attr_integrate(die, DW_AT_name, &a))
		s = dwarf_formstring(&a);
	return s && *s ? s : NULL;
}

int ref_dwinline__lookup(struct ref_dwinline *d, uint64_t vaddr, const char **names, size_t max,
			 size_t *n)
{
	struct walk *w;
	size_t lo = 0, hi, tried = 0;
	int err = -ENOENT;

	*n = 0;
	if (!max)
		return -EINVAL;
	if (d->alt_id_len && !d->alt)
		return -ENOLINK;
	if (!d->cus_err) {
		d->cus_err = build_cus(d);
		if (!d->cus_err)
			d->cus_err = 1;
	}
	if (d->cus_err < 0)
		return d->cus_err;
	/* the first range starting above vaddr; candidates are before it */
	hi = d->nr_cus;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->cus[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (size_t i = lo; i-- > 0 && tried < CU_CANDIDATES;) {
		Dwarf_Die cudie;
		int r;

		if (vaddr >= d->cus[i].hi)
			continue;
		tried++;
		if (!dwarf_offdie(d->dw, d->cus[i].cu, &cudie))
			continue;
		w->pc = vaddr;
		w->visits = 0;
		w->n = 0;
		r = search(w, &cudie, 0);
		if (r < 0) {
			err = r;
			break;
		}
		if (r == 0 || !w->n)
			continue;
		/* names[0] and the innermost max - 1 */
		names[0] = die_name(&w->chain[0]);
		*n = w->n < max ? w->n : max;
		for (size_t k = 1; k < *n; k++)
			names[k] = die_name(&w->chain[w->n - (*n - k)]);
		err = (int)w->n;
		break;
	}
	free(w);
	return err;
}
