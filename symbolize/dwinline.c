// SPDX-License-Identifier: GPL-2.0-only
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

/* Compilation units claiming one address (overlapping ranges: broken or hostile DWARF). */
#define CU_CANDIDATES 4

/* An address range of one compilation unit, and its top-level nodes. */
struct cu_range {
	uint64_t lo, hi;
	uint32_t first, end; /* nodes[first..end) */
	uint32_t cu;	     /* the unit's ordinal: ties in the sort keep the file's order */
};

/* What a node of the index stands for. */
enum node_kind {
	NODE_SUB, /* DW_TAG_subprogram: a chain starts at it */
	NODE_INL, /* DW_TAG_inlined_subroutine: the chain goes on with it */
	/* A lexical, try or catch block with ranges of its own: in no chain, but kept so that
	 * siblings whose ranges overlap (broken DWARF) resolve as a DIE walk does, to the
	 * first one holding the address. */
	NODE_BLOCK,
	/* Where the walk over the DIEs would stop with -E2BIG (a sibling link going backwards, or
	 * a scope without ranges nested too deep): reaching it fails, whatever the address. */
	NODE_ERR,
};

#define NODE_KIND_BITS 2
#define NODE_DEEP (1u << NODE_KIND_BITS) /* its children nest past HC_DWINLINE_MAX_NEST */
#define NODE_FLAG_BITS 3

/*
 * A scope with code, in DIE order (preorder): its children are the nodes from this one's
 * index + 1 up to end, each child's end the next child's index. Scopes the walk passes
 * through (namespaces, blocks without ranges) are no node: their children are their
 * parent's. A lookup scans one level's nodes for the first holding the address, then that
 * one's children: a few nodes per level in real code (0.4 us per address in libc), and never
 * more than the DIE walk it replaces visited.
 */
struct node {
	uint32_t end;
	uint32_t name;	  /* into strs; 0: none */
	uint32_t range;	  /* first of its ranges[] */
	uint32_t nr_bits; /* number of ranges << NODE_FLAG_BITS | flags | kind */
};

struct range {
	uint64_t lo, hi;
};

struct hc_dwinline {
	/* While loading (and until the supplementary file is attached): the DWARF. */
	Elf *elf;
	Dwarf *dw;
	void *image;	      /* from_mem: the private copy libelf reads */
	size_t section_bytes; /* of the DWARF while held */
	size_t max_bytes;
	bool is_alt;		 /* loaded as a supplementary file: never indexed */
	struct hc_dwinline *alt; /* attached during the build */
	uint8_t *alt_id;	 /* .gnu_debugaltlink's build-id (a copy) */
	size_t alt_id_len;
	/* The index: immutable once built. */
	bool built;
	struct cu_range *cus;
	struct node *nodes;
	struct range *ranges;
	char *strs; /* NUL-terminated names, strs[0] "" */
	uint32_t nr_cus, nr_nodes, nr_ranges, strs_len;
};

/* The sections a walk reads. Every other DWARF section is hidden from libdw (see
 * hc_dwinline__keep_sections()). */
static const char *const wanted[] = {
	".debug_info",	   ".debug_abbrev",	 ".debug_str",
	".debug_line_str", ".debug_str_offsets", ".debug_addr",
	".debug_ranges",   ".debug_rnglists",	 ".gnu_debugaltlink",
};

static bool is_dwarf_name(const char *name)
{
	return !strncmp(name, ".debug_", 7) || !strncmp(name, ".zdebug_", 8) ||
	       !strncmp(name, ".gnu.debuglto_", 14) || !strcmp(name, ".gnu_debugaltlink");
}

static bool is_wanted(const char *name)
{
	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		if (!strcmp(name, wanted[i]))
			return true;
	return false;
}

/*
 * dwarf_begin_elf() reads every DWARF section it recognizes, by name. The line tables,
 * location lists and macros are most of a file's DWARF and a walk never reads them: their
 * headers become SHT_NOBITS in our in-memory copy of the section headers (libdw skips NOBITS
 * sections), so they are never read. The file itself is never written (ELF_C_READ). Sums the
 * bytes of what stays into *bytes; *has_info tells whether .debug_info is among them.
 * GNU-compressed .zdebug_ sections (a format of old toolchains) are hidden too: their size is
 * not known before they are read.
 */
int hc_dwinline__keep_sections(Elf *elf, size_t *bytes, bool *has_info)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	*bytes = 0;
	*has_info = false;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;
		size_t size;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || !is_dwarf_name(name))
			continue;
		if (!is_wanted(name) || (sh.sh_flags & SHF_GROUP)) {
			sh.sh_type = SHT_NOBITS;
			if (!gelf_update_shdr(scn, &sh))
				return -ENOEXEC;
			continue;
		}
		size = sh.sh_size;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			/* the compressed bytes are read, then inflated next to them */
			if (!gelf_getchdr(scn, &ch) || ch.ch_size > SIZE_MAX - size)
				return -ENOEXEC;
			size += ch.ch_size;
		}
		if (size > SIZE_MAX - *bytes)
			return -E2BIG;
		*bytes += size;
		if (!strcmp(name, ".debug_info") && sh.sh_size)
			*has_info = true;
	}
	return 0;
}

/* ---- ownership ---- */

/* Ends libdw's and libelf's hold on the file (and on the attached supplementary file). */
static void release_dwarf(struct hc_dwinline *d)
{
	/* An alt set with dwarf_setalt() is ours to end, after its user. */
	if (d->dw)
		dwarf_end(d->dw);
	d->dw = NULL;
	hc_dwinline__free(d->alt);
	d->alt = NULL;
	if (d->elf)
		elf_end(d->elf);
	d->elf = NULL;
	free(d->image);
	d->image = NULL;
	d->section_bytes = 0;
}

static void free_index(struct hc_dwinline *d)
{
	free(d->cus);
	free(d->nodes);
	free(d->ranges);
	free(d->strs);
	d->cus = NULL;
	d->nodes = NULL;
	d->ranges = NULL;
	d->strs = NULL;
	d->nr_cus = d->nr_nodes = d->nr_ranges = d->strs_len = 0;
}

void hc_dwinline__free(struct hc_dwinline *d)
{
	if (!d)
		return;
	release_dwarf(d);
	free_index(d);
	free(d->alt_id);
	free(d);
}

/* ---- building the index ---- */

struct builder {
	struct hc_dwinline *d;
	uint32_t cap_cus, cap_nodes, cap_ranges, cap_strs;
	uint32_t *names; /* open addressing over offsets into d->strs; 0: empty */
	uint32_t names_mask, nr_names;
	uint64_t visits; /* DIEs and address ranges, bounded by HC_DWINLINE_MAX_DIES */
	size_t used;	 /* bytes of index so far, bounded by d->max_bytes */
};

/* arr (capacity *cap, length len) with room for one more element of size; NULL: *err. */
static void *grow(void *arr, uint32_t *cap, uint32_t len, size_t size, int *err)
{
	uint32_t ncap;
	void *n;

	if (len < *cap)
		return arr;
	*err = -E2BIG;
	if (*cap >= UINT32_MAX / 2)
		return NULL;
	ncap = *cap ? *cap * 2 : 64;
	*err = -ENOMEM;
	n = realloc(arr, (size_t)ncap * size);
	if (n)
		*cap = ncap;
	return n;
}

/* Counts size more bytes of index against max_bytes. */
static int charge(struct builder *b, size_t size)
{
	if (size > b->d->max_bytes || b->used > b->d->max_bytes - size)
		return -E2BIG;
	b->used += size;
	return 0;
}

static int visit(struct builder *b)
{
	return ++b->visits > HC_DWINLINE_MAX_DIES ? -E2BIG : 0;
}

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h;
}

/* Doubles the name table, rehashing what it holds. */
static int names_grow(struct builder *b)
{
	uint32_t mask = b->names_mask ? b->names_mask * 2 + 1 : 4095;
	uint32_t *n = calloc((size_t)mask + 1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; b->names && i <= b->names_mask; i++) {
		uint32_t off = b->names[i], h;

		if (!off)
			continue;
		for (h = name_hash(b->d->strs + off) & mask; n[h]; h = (h + 1) & mask)
			;
		n[h] = off;
	}
	free(b->names);
	b->names = n;
	b->names_mask = mask;
	return 0;
}

/* s's offset in the string pool, added once; 0 for NULL. */
static int intern(struct builder *b, const char *s, uint32_t *off)
{
	struct hc_dwinline *d = b->d;
	size_t len;
	uint32_t h;
	int err;

	*off = 0;
	if (!s)
		return 0;
	if ((b->nr_names + 1) * 2 > b->names_mask && (err = names_grow(b)))
		return err;
	for (h = name_hash(s) & b->names_mask; b->names[h]; h = (h + 1) & b->names_mask)
		if (!strcmp(d->strs + b->names[h], s)) {
			*off = b->names[h];
			return 0;
		}
	len = strlen(s) + 1;
	if (len > UINT32_MAX - d->strs_len)
		return -E2BIG;
	if ((err = charge(b, len)))
		return err;
	while (d->strs_len + len > b->cap_strs) {
		char *n = grow(d->strs, &b->cap_strs, b->cap_strs, 1, &err);

		if (!n)
			return err;
		d->strs = n;
	}
	memcpy(d->strs + d->strs_len, s, len);
	*off = d->strs_len;
	b->names[h] = d->strs_len;
	b->nr_names++;
	d->strs_len += (uint32_t)len;
	return 0;
}

/* Appends die's non-empty address ranges (what dwarf_haspc() tests) to d->ranges. */
static int add_ranges(struct builder *b, Dwarf_Die *die, uint32_t *nr)
{
	struct hc_dwinline *d = b->d;
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	struct range *n;
	int err;

	*nr = 0;
	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		if ((err = visit(b)))
			return err;
		if (start >= end)
			continue;
		if (*nr >= UINT32_MAX >> NODE_FLAG_BITS)
			return -E2BIG;
		if ((err = charge(b, sizeof(*n))))
			return err;
		n = grow(d->ranges, &b->cap_ranges, d->nr_ranges, sizeof(*n), &err);
		if (!n)
			return err;
		d->ranges = n;
		d->ranges[d->nr_ranges++] = (struct range){.lo = start, .hi = end};
		(*nr)++;
	}
	return 0;
}

static int add_node(struct builder *b, const struct node *n)
{
	struct hc_dwinline *d = b->d;
	struct node *nodes;
	int err;

	if ((err = charge(b, sizeof(*n))))
		return err;
	nodes = grow(d->nodes, &b->cap_nodes, d->nr_nodes, sizeof(*n), &err);
	if (!nodes)
		return err;
	d->nodes = nodes;
	d->nodes[d->nr_nodes++] = *n;
	return 0;
}

static int add_err(struct builder *b)
{
	return add_node(b, &(struct node){.end = b->d->nr_nodes + 1, .nr_bits = NODE_ERR});
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

static bool has_pc_attrs(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

static int walk(struct builder *b, Dwarf_Die *parent, unsigned int depth);

/*
 * A scope with code at nesting depth (its parent's children's): a node with its ranges,
 * then its subtree. Without a range it holds no address, nor does anything inside it.
 */
static int add_scope(struct builder *b, Dwarf_Die *die, enum node_kind kind, unsigned int depth)
{
	struct hc_dwinline *d = b->d;
	uint32_t idx = d->nr_nodes, range = d->nr_ranges, nr, name = 0;
	int err;

	if ((err = add_ranges(b, die, &nr)) || !nr)
		return err;
	if (kind != NODE_BLOCK && (err = intern(b, die_name(die), &name)))
		return err;
	err = add_node(b, &(struct node){.end = idx + 1,
					 .name = name,
					 .range = range,
					 .nr_bits = nr << NODE_FLAG_BITS | kind});
	if (err)
		return err;
	/* A lookup that reaches it would have to look deeper than allowed. */
	if (depth + 1 >= HC_DWINLINE_MAX_NEST) {
		d->nodes[idx].nr_bits |= NODE_DEEP;
		return 0;
	}
	err = walk(b, die, depth + 1);
	d->nodes[idx].end = d->nr_nodes;
	return err;
}

/* A scope without code of its own: its children are its parent's. */
static int pass_through(struct builder *b, Dwarf_Die *die, unsigned int depth)
{
	if (depth + 1 >= HC_DWINLINE_MAX_NEST)
		return add_err(b);
	return walk(b, die, depth + 1);
}

static int add_die(struct builder *b, Dwarf_Die *die, unsigned int depth)
{
	switch (dwarf_tag(die)) {
	case DW_TAG_subprogram:
		/* A subprogram inside another (GNU C nested functions) is real code of its own:
		 * a chain starts again at it. */
		return add_scope(b, die, NODE_SUB, depth);
	case DW_TAG_inlined_subroutine:
		return add_scope(b, die, NODE_INL, depth);
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
		if (has_pc_attrs(die))
			return add_scope(b, die, NODE_BLOCK, depth);
		/* A block without ranges of its own may still hold inlined code. */
		return pass_through(b, die, depth);
	case DW_TAG_namespace:
	case DW_TAG_module:
		/* clang places a namespace's function definitions inside it. */
		return pass_through(b, die, depth);
	default:
		return 0;
	}
}

/* The children of parent, which are at nesting depth, in DIE order. */
static int walk(struct builder *b, Dwarf_Die *parent, unsigned int depth)
{
	Dwarf_Off prev = dwarf_dieoffset(parent);
	Dwarf_Die child;
	int err;

	if (dwarf_child(parent, &child))
		return 0; /* no children (or unreadable ones) */
	do {
		Dwarf_Off off = dwarf_dieoffset(&child);

		if ((err = visit(b)))
			return err;
		/* Sibling links are offsets the file chooses: never let one loop. */
		if (off <= prev)
			return add_err(b);
		prev = off;
		if ((err = add_die(b, &child, depth)))
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* A compilation unit's ranges, each naming the unit's top-level nodes, walked next. */
static int add_cu(struct builder *b, Dwarf_Die *cudie, uint32_t ordinal)
{
	struct hc_dwinline *d = b->d;
	uint32_t from = d->nr_cus, first = d->nr_nodes;
	Dwarf_Addr base, start, end;
	struct cu_range *cus;
	ptrdiff_t off = 0;
	int err;

	while ((off = dwarf_ranges(cudie, off, &base, &start, &end)) > 0) {
		if ((err = visit(b)))
			return err;
		if (start >= end)
			continue;
		if ((err = charge(b, sizeof(*cus))))
			return err;
		cus = grow(d->cus, &b->cap_cus, d->nr_cus, sizeof(*cus), &err);
		if (!cus)
			return err;
		d->cus = cus;
		d->cus[d->nr_cus++] =
			(struct cu_range){.lo = start, .hi = end, .first = first, .cu = ordinal};
	}
	/* no lookup would come here */
	if (from == d->nr_cus)
		return 0;
	err = walk(b, cudie, 0);
	for (uint32_t i = from; i < d->nr_cus; i++)
		d->cus[i].end = d->nr_nodes;
	return err;
}

static int cu_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	return x->cu < y->cu ? -1 : x->cu > y->cu;
}

/* arr without the capacity past len elements of size (arr itself when realloc() cannot). */
static void *shrink(void *arr, size_t len, size_t size)
{
	void *n;

	if (!len) {
		free(arr);
		return NULL;
	}
	n = realloc(arr, len * size);
	return n ? n : arr;
}

/*
 * Every full compilation unit, walked once. Skeleton units (split DWARF) are skipped: libdw
 * would go and open their .dwo files by the names they carry; partial and type units hold no
 * code.
 */
static int build(struct hc_dwinline *d)
{
	struct builder b = {.d = d, .used = sizeof(*d) + d->alt_id_len};
	Dwarf_CU *cu = NULL, *next;
	uint32_t ordinal = 0;
	Dwarf_Die cudie;
	uint8_t unit_type;
	Dwarf_Half version;
	int err;

	if (b.used > d->max_bytes)
		return -E2BIG;
	/* strs[0]: the empty string, offset 0 stands for "no name" */
	d->strs = grow(NULL, &b.cap_strs, 0, 1, &err);
	if (!d->strs)
		return err;
	d->strs[d->strs_len++] = '\0';
	err = 0;
	while (!err && dwarf_get_units(d->dw, cu, &next, &version, &unit_type, &cudie, NULL) == 0) {
		cu = next;
		if (ordinal++ == UINT32_MAX)
			err = -E2BIG;
		else if (unit_type == DW_UT_compile && !(err = visit(&b)))
			err = add_cu(&b, &cudie, ordinal);
	}
	free(b.names);
	if (err) {
		free_index(d);
		return err;
	}
	if (d->nr_cus > 1)
		qsort(d->cus, d->nr_cus, sizeof(*d->cus), cu_cmp);
	d->cus = shrink(d->cus, d->nr_cus, sizeof(*d->cus));
	d->nodes = shrink(d->nodes, d->nr_nodes, sizeof(*d->nodes));
	d->ranges = shrink(d->ranges, d->nr_ranges, sizeof(*d->ranges));
	d->strs = shrink(d->strs, d->strs_len, 1);
	d->built = true;
	return 0;
}

/* ---- loading ---- */

/* Consumes elf (and image, NULL when elf reads from an fd) in every case. */
static struct hc_dwinline *from_elf(Elf *elf, void *image, bool from_fd, size_t max_bytes,
				    bool is_alt)
{
	struct hc_dwinline *d;
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
	d->max_bytes = max_bytes;
	d->is_alt = is_alt;
	err = hc_dwinline__keep_sections(elf, &d->section_bytes, &has_info);
	if (!err && !has_info)
		err = -ENODATA;
	if (!err && d->section_bytes > max_bytes)
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
		d->alt_id = malloc((size_t)n);
		if (!d->alt_id) {
			err = -ENOMEM;
			goto err_free;
		}
		memcpy(d->alt_id, alt_id, (size_t)n);
		d->alt_id_len = (size_t)n;
	}
	/* Without its supplementary file, names and DIEs it points to are unknown yet. */
	if (is_alt || d->alt_id_len)
		return d;
	err = build(d);
	release_dwarf(d);
	if (err)
		goto err_free;
	return d;

err_free:
	hc_dwinline__free(d);
	errno = -err;
	return NULL;
err_end:
	if (elf)
		elf_end(elf);
	free(image);
	errno = -err;
	return NULL;
}

static struct hc_dwinline *load_fd(int fd, size_t max_bytes, bool is_alt)
{
	struct stat st;

	elf_version(EV_CURRENT);
	/* A character device or FIFO is no ELF and may never hit EOF. */
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		errno = ENOEXEC;
		return NULL;
	}
	/* ELF_C_READ, not _MMAP: pread()s, so a file truncated under us is a short read. */
	return from_elf(elf_begin(fd, ELF_C_READ, NULL), NULL, true, max_bytes, is_alt);
}

static struct hc_dwinline *load_mem(const void *buf, size_t len, size_t max_bytes, bool is_alt)
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
	return from_elf(elf_memory(copy, len), copy, false, max_bytes, is_alt);
}

struct hc_dwinline *hc_dwinline__from_fd(int fd, size_t max_bytes)
{
	return load_fd(fd, max_bytes, false);
}

struct hc_dwinline *hc_dwinline__from_mem(const void *buf, size_t len, size_t max_bytes)
{
	return load_mem(buf, len, max_bytes, false);
}

struct hc_dwinline *hc_dwinline__alt_from_fd(int fd, size_t max_bytes)
{
	return load_fd(fd, max_bytes, true);
}

struct hc_dwinline *hc_dwinline__alt_from_mem(const void *buf, size_t len, size_t max_bytes)
{
	return load_mem(buf, len, max_bytes, true);
}

size_t hc_dwinline__bytes(const struct hc_dwinline *d)
{
	if (!d->built)
		return d->section_bytes + (d->alt ? hc_dwinline__bytes(d->alt) : 0);
	return sizeof(*d) + d->alt_id_len + (size_t)d->nr_cus * sizeof(*d->cus) +
	       (size_t)d->nr_nodes * sizeof(*d->nodes) + (size_t)d->nr_ranges * sizeof(*d->ranges) +
	       d->strs_len;
}

size_t hc_dwinline__alt_build_id(const struct hc_dwinline *d, const uint8_t **id)
{
	*id = d->alt_id;
	return d->alt_id_len;
}

int hc_dwinline__set_alt(struct hc_dwinline *d, struct hc_dwinline *alt)
{
	int err;

	if (!d->alt_id_len || d->built || !d->dw || !alt->is_alt || !alt->dw || alt->alt_id_len) {
		hc_dwinline__free(alt);
		return -EINVAL;
	}
	dwarf_setalt(d->dw, alt->dw);
	d->alt = alt;
	err = build(d);
	release_dwarf(d);
	return err;
}

/* ---- lookups ---- */

static bool node_has(const struct hc_dwinline *d, const struct node *n, uint64_t pc)
{
	const struct range *r = &d->ranges[n->range];

	for (uint32_t i = 0; i < n->nr_bits >> NODE_FLAG_BITS; i++)
		if (r[i].lo <= pc && pc < r[i].hi)
			return true;
	return false;
}

/*
 * What the walk of cr's unit finds at pc: among the nodes of one level, the first holding
 * pc, then among its children, down to the innermost. chain[] gets the subprogram and the
 * inlined subroutines on the way (*len 0: none); -E2BIG past the bounds.
 */
static int chain_at(const struct hc_dwinline *d, const struct cu_range *cr, uint64_t pc,
		    uint32_t *chain, size_t *len)
{
	uint32_t c = cr->first, end = cr->end;

	*len = 0;
	while (c < end) {
		const struct node *n = &d->nodes[c];
		unsigned int kind = n->nr_bits & ((1u << NODE_KIND_BITS) - 1);

		if (kind == NODE_ERR)
			return -E2BIG;
		if (!node_has(d, n, pc)) {
			c = n->end;
			continue;
		}
		if (n->nr_bits & NODE_DEEP)
			return -E2BIG;
		if (kind == NODE_SUB)
			*len = 0;
		if (kind == NODE_SUB || (kind == NODE_INL && *len))
			chain[(*len)++] = c;
		end = n->end;
		c++;
	}
	return 0;
}

static const char *node_name(const struct hc_dwinline *d, uint32_t idx)
{
	return d->nodes[idx].name ? d->strs + d->nodes[idx].name : NULL;
}

int hc_dwinline__lookup(struct hc_dwinline *d, uint64_t vaddr, const char **names, size_t max,
			size_t *n)
{
	uint32_t chain[HC_DWINLINE_MAX_NEST];
	size_t lo = 0, hi, tried = 0, len;

	*n = 0;
	if (!max)
		return -EINVAL;
	if (d->alt_id_len && !d->built)
		return -ENOLINK;
	/* the first range starting above vaddr; candidates are before it */
	hi = d->nr_cus;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->cus[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && tried < CU_CANDIDATES;) {
		int r;

		if (vaddr >= d->cus[i].hi)
			continue;
		tried++;
		r = chain_at(d, &d->cus[i], vaddr, chain, &len);
		if (r < 0)
			return r;
		if (!len)
			continue;
		/* names[0] and the innermost max - 1 */
		names[0] = node_name(d, chain[0]);
		*n = len < max ? len : max;
		for (size_t k = 1; k < *n; k++)
			names[k] = node_name(d, chain[len - (*n - k)]);
		return (int)len;
	}
	return -ENOENT;
}
