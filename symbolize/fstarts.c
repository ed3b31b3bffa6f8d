// SPDX-License-Identifier: GPL-2.0-only
/*
 * Function starts from call frame information (fstarts.h). One linear, lenient pass of the
 * shared walker (cfi.h) over the section: each FDE's range kept. Nothing of the instructions is
 * read: only the ranges matter.
 */
#include "symbolize/fstarts.h"

#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "symbolize/cfi.h"
#include "symbolize/elfsym.h"

struct range {
	uint64_t lo, hi;
};

struct hc_fstarts {
	struct range *r; /* sorted by lo, one per lo */
	size_t n;
};

struct walk {
	struct hc_cfi cfi;
	size_t max_fdes;
	struct range *r;
	size_t n, cap;
};

/* An FDE's range, when its CIE is known and understood; empty ranges are left out. */
static int add_fde(struct walk *w, const struct hc_cfi_raw_fde *raw)
{
	struct hc_cfi_fde f;

	if (hc_cfi__decode_fde(&w->cfi, raw, &f) || f.lo == f.hi)
		return 0;
	if (w->n >= w->max_fdes)
		return -E2BIG;
	if (hc_array_grow(w->r, w->cap, w->n + 1, 256))
		return -ENOMEM;
	w->r[w->n++] = (struct range){f.lo, f.hi};
	return 0;
}

static int walk_entries(struct walk *w)
{
	struct hc_cfi_raw_fde raw;
	int r;

	while (!(r = hc_cfi__next_fde(&w->cfi, &raw)))
		if ((r = add_fde(w, &raw)))
			return r;
	/* the end, or an entry that cannot be framed: what came before is kept */
	return r == 1 || r == -EBADMSG ? 0 : r;
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

static bool usable(Elf_Scn *scn)
{
	GElf_Shdr sh;

	return scn && gelf_getshdr(scn, &sh) && !(sh.sh_flags & SHF_COMPRESSED) &&
	       sh.sh_size <= HC_FSTARTS_SECTION_MAX;
}

/* .eh_frame, else .debug_frame, as raw bytes (not compressed, not over the size limit). */
static Elf_Scn *cfi_section(Elf *elf, bool *eh)
{
	Elf_Scn *eh_frame, *debug_frame;

	if (hc_cfi__sections(elf, &eh_frame, &debug_frame))
		return NULL;
	*eh = usable(eh_frame);
	return *eh ? eh_frame : usable(debug_frame) ? debug_frame : NULL;
}

struct hc_fstarts *hc_fstarts__from_elf(Elf *elf, size_t max_fdes)
{
	struct walk w = {.max_fdes = max_fdes ? max_fdes : SIZE_MAX};
	const unsigned char *ident;
	struct hc_fstarts *fs;
	Elf_Data *data;
	Elf_Scn *scn;
	GElf_Shdr sh;
	bool eh;
	int err;

	ident = (const unsigned char *)elf_getident(elf, NULL);
	if (!ident || elf_kind(elf) != ELF_K_ELF) {
		errno = ENOEXEC;
		return NULL;
	}
	scn = cfi_section(elf, &eh);
	data = scn ? elf_rawdata(scn, NULL) : NULL;
	if (!data || !data->d_buf || !gelf_getshdr(scn, &sh)) {
		errno = ENODATA;
		return NULL;
	}
	/* linkers share CIEs: more CIEs than FDEs is a hostile section */
	hc_cfi__init(&w.cfi, data->d_buf, data->d_size, sh.sh_addr, eh, ident, w.max_fdes, false);
	err = walk_entries(&w);
	hc_cfi__fini(&w.cfi);
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
	Elf *elf = hc_elf_open_fd(fd);
	struct hc_fstarts *fs;

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
