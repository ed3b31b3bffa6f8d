// SPDX-License-Identifier: GPL-2.0-only
#include "symbolize/elfsym.h"

#include "symbolize/debugfile.h"
#include "symbolize/util.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/array.h"

/* MiniDebugInfo is a few hundred KB even for big libraries; bound what a hostile file costs. */
#define DEBUGDATA_MAX_BYTES (256u * 1024u * 1024u)
#define XZ_MEMLIMIT_BYTES (128u * 1024u * 1024u)
/* Nested functions (or overlapping aliases of different sizes): look back this far. */
#define NESTED_LOOKBACK 4
/* More program headers than this is not a real object; don't spend time on it. */
#define PHDR_MAX 4096

enum sym_rank {
	RANK_GLOBAL = 0,
	RANK_WEAK,
	RANK_LOCAL,
};

/* 24 bytes: a big program has tens of thousands, kept for the life of serve. */
struct esym {
	uint64_t addr;
	uint32_t size;	   /* computed in finalize() for zero-size symbols; never 0 after */
	uint32_t sec_left; /* addr to the end of its section, 0 if unknown (zero-size bound) */
	uint32_t name;	   /* strpool offset */
	uint8_t rank;
	uint8_t sized;
};

/* What a size or distance beyond 4 GiB (no function is) is held as. */
static uint32_t clamp32(uint64_t v)
{
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static uint64_t sym_end(const struct esym *s)
{
	return s->addr + s->size;
}

struct load_seg {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
	uint32_t flags;
};

struct hc_elfsym {
	struct esym *syms;
	size_t nr, cap;
	struct load_seg *segs;
	size_t nr_segs;
	uint8_t build_id[HC_BUILD_ID_MAX];
	size_t build_id_len;
	unsigned int sources;
	struct hc_strpool pool;
	bool has_debuglink;
	uint32_t debuglink_name; /* offset in pool */
	uint32_t debuglink_crc;
};

void hc_elfsym__free(struct hc_elfsym *es)
{
	if (!es)
		return;
	free(es->syms);
	free(es->segs);
	hc_strpool__release(&es->pool);
	free(es);
}

static int add_sym(struct hc_elfsym *es, const char *name, const GElf_Sym *sym, uint64_t sec_end)
{
	struct esym *s;
	int err;

	if (es->nr == es->cap && hc_array_grow(es->syms, es->cap, es->nr + 1, 256))
		return -ENOMEM;
	s = &es->syms[es->nr];
	s->addr = sym->st_value;
	s->sized = sym->st_size != 0 && sym->st_value + sym->st_size > sym->st_value;
	s->size = s->sized ? clamp32(sym->st_size) : 0;
	s->sec_left = sec_end > sym->st_value ? clamp32(sec_end - sym->st_value) : 0;
	switch (GELF_ST_BIND(sym->st_info)) {
	case STB_GLOBAL:
		s->rank = RANK_GLOBAL;
		break;
	case STB_WEAK:
		s->rank = RANK_WEAK;
		break;
	default:
		s->rank = RANK_LOCAL;
		break;
	}
	err = hc_strpool__add(&es->pool, name, strlen(name), &s->name);
	if (err)
		return err;
	es->nr++;
	return 0;
}

/*
 * Section data, decompressed if SHF_COMPRESSED (toolchains may compress non-alloc sections).
 * NULL when the section is NOBITS, empty, or libelf rejects it (out of the file's bounds).
 */
static Elf_Data *section_data(Elf_Scn *scn, const GElf_Shdr *shdr)
{
	Elf_Data *data;

	if (shdr->sh_type == SHT_NOBITS)
		return NULL;
	if ((shdr->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return NULL;
	data = elf_getdata(scn, NULL);
	if (!data || !data->d_buf || !data->d_size)
		return NULL;
	return data;
}

/* End address of section shndx, for bounding zero-size symbols; 0 when unknown. */
static uint64_t section_end(Elf *elf, size_t shndx)
{
	GElf_Shdr shdr;
	Elf_Scn *scn;

	if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
		return 0;
	scn = elf_getscn(elf, shndx);
	if (!scn || !gelf_getshdr(scn, &shdr))
		return 0;
	if (shdr.sh_addr + shdr.sh_size < shdr.sh_addr)
		return 0;
	return shdr.sh_addr + shdr.sh_size;
}

static int load_symtab(struct hc_elfsym *es, Elf *elf, Elf_Scn *scn, const GElf_Shdr *shdr)
{
	GElf_Shdr str_shdr;
	Elf_Scn *str_scn;
	Elf_Data *data;
	size_t entsize, count, i;
	int err;

	/* sh_link must name a string table, or elf_strptr() would read something else. */
	str_scn = elf_getscn(elf, shdr->sh_link);
	if (!str_scn || !gelf_getshdr(str_scn, &str_shdr) || str_shdr.sh_type != SHT_STRTAB)
		return -ENOEXEC;
	if ((str_shdr.sh_flags & SHF_COMPRESSED) && elf_compress(str_scn, 0, 0) < 0)
		return -ENOEXEC;
	data = section_data(scn, shdr);
	if (!data)
		return -ENOEXEC;
	entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	if (!entsize)
		return -ENOEXEC;
	count = data->d_size / entsize;
	if (count > INT32_MAX)
		count = INT32_MAX; /* gelf_getsym() takes an int index */
	for (i = 1; i < count; i++) {
		const char *name;
		GElf_Sym sym;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		/* elf_strptr() checks st_name against the string table's size. */
		name = elf_strptr(elf, shdr->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		err = add_sym(es, name, &sym, sym.st_size ? 0 : section_end(elf, sym.st_shndx));
		if (err)
			return err;
	}
	return 0;
}

/* Symbols of every SHT_SYMTAB (and, if want_dynsym, SHT_DYNSYM) section of elf. */
static int load_symbols(struct hc_elfsym *es, Elf *elf, bool want_dynsym, unsigned int symtab_src)
{
	Elf_Scn *scn = NULL;
	int err;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		if (shdr.sh_type == SHT_SYMTAB) {
			err = load_symtab(es, elf, scn, &shdr);
			if (err == -ENOMEM || err == -E2BIG)
				return err;
			if (!err)
				es->sources |= symtab_src;
		} else if (shdr.sh_type == SHT_DYNSYM && want_dynsym) {
			err = load_symtab(es, elf, scn, &shdr);
			if (err == -ENOMEM || err == -E2BIG)
				return err;
			if (!err)
				es->sources |= HC_ELFSYM_DYNSYM;
		}
	}
	return 0;
}

static int load_segments(struct hc_elfsym *es, Elf *elf)
{
	size_t phnum, i;

	if (elf_getphdrnum(elf, &phnum) || !phnum)
		return 0;
	if (phnum > PHDR_MAX)
		phnum = PHDR_MAX;
	es->segs = calloc(phnum, sizeof(*es->segs));
	if (!es->segs)
		return -ENOMEM;
	for (i = 0; i < phnum; i++) {
		struct load_seg *seg;
		GElf_Phdr phdr;

		if (!gelf_getphdr(elf, (int)i, &phdr))
			break;
		if (phdr.p_type != PT_LOAD || !phdr.p_filesz)
			continue;
		if (phdr.p_offset + phdr.p_filesz < phdr.p_offset ||
		    phdr.p_vaddr + phdr.p_filesz < phdr.p_vaddr)
			continue;
		seg = &es->segs[es->nr_segs++];
		seg->offset = phdr.p_offset;
		seg->vaddr = phdr.p_vaddr;
		seg->filesz = phdr.p_filesz;
		seg->flags = phdr.p_flags;
	}
	return 0;
}

static void load_build_id(struct hc_elfsym *es, Elf *elf)
{
	const void *id;
	ssize_t n;

	n = dwelf_elf_gnu_build_id(elf, &id);
	if (n <= 0 || !id)
		return;
	if ((size_t)n > HC_BUILD_ID_MAX)
		n = HC_BUILD_ID_MAX;
	memcpy(es->build_id, id, (size_t)n);
	es->build_id_len = (size_t)n;
}

/* xz stream -> malloc'd buffer. 0, -ENOEXEC (corrupt), -E2BIG (too large), -ENOMEM. */
static int xz_decompress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len)
{
	lzma_stream strm = LZMA_STREAM_INIT;
	size_t cap = in_len < 4096 ? 16384 : in_len * 4;
	uint8_t *buf, *nbuf;
	lzma_ret ret;
	int err;

	if (cap > DEBUGDATA_MAX_BYTES)
		cap = DEBUGDATA_MAX_BYTES;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	if (lzma_stream_decoder(&strm, XZ_MEMLIMIT_BYTES, 0) != LZMA_OK) {
		err = -ENOMEM;
		goto err_free;
	}
	strm.next_in = in;
	strm.avail_in = in_len;
	strm.next_out = buf;
	strm.avail_out = cap;
	for (;;) {
		ret = lzma_code(&strm, LZMA_FINISH);
		if (ret == LZMA_STREAM_END)
			break;
		if (ret != LZMA_OK) {
			err = ret == LZMA_MEM_ERROR	   ? -ENOMEM
			      : ret == LZMA_MEMLIMIT_ERROR ? -E2BIG
							   : -ENOEXEC;
			goto err_end;
		}
		if (strm.avail_out == 0) {
			size_t used = cap;

			if (cap >= DEBUGDATA_MAX_BYTES) {
				err = -E2BIG;
				goto err_end;
			}
			cap = cap * 2 > DEBUGDATA_MAX_BYTES ? DEBUGDATA_MAX_BYTES : cap * 2;
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				err = -ENOMEM;
				goto err_end;
			}
			buf = nbuf;
			strm.next_out = buf + used;
			strm.avail_out = cap - used;
		}
	}
	*out_len = cap - strm.avail_out;
	*out = buf;
	lzma_end(&strm);
	return 0;

err_end:
	lzma_end(&strm);
err_free:
	free(buf);
	return err;
}

/* .gnu_debugdata: an xz-compressed ELF whose .symtab lists what stripping removed. */
static int load_debugdata(struct hc_elfsym *es, Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	uint8_t *img;
	size_t img_len;
	Elf *inner;
	int err;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		Elf_Data *data;
		GElf_Shdr shdr;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (!name || strcmp(name, ".gnu_debugdata"))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !data->d_buf || !data->d_size)
			return 0;
		err = xz_decompress(data->d_buf, data->d_size, &img, &img_len);
		if (err == -ENOMEM)
			return err;
		if (err)
			return 0; /* corrupt MiniDebugInfo: keep what .symtab/.dynsym gave */
		inner = elf_memory((char *)img, img_len);
		if (inner && elf_kind(inner) == ELF_K_ELF) {
			/* Only its .symtab: the inner ELF's own .gnu_debugdata is not followed. */
			err = load_symbols(es, inner, false, HC_ELFSYM_DEBUGDATA);
		} else {
			err = 0;
		}
		elf_end(inner);
		free(img);
		return err;
	}
	return 0;
}

static int sym_cmp(const void *a, const void *b)
{
	const struct esym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* Best first among aliases: sized, then global over weak over local. */
	if (x->sized != y->sized)
		return x->sized ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return 0;
}

/* Leading underscores mark internal aliases (__libc_malloc vs malloc): fewer reads better. */
static size_t underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

static bool better_alias(const struct hc_elfsym *es, const struct esym *cand,
			 const struct esym *cur)
{
	const char *a = hc_strpool__get(&es->pool, cand->name);
	const char *b = hc_strpool__get(&es->pool, cur->name);

	if (cand->sized != cur->sized)
		return cand->sized;
	if (cand->rank != cur->rank)
		return cand->rank < cur->rank;
	if (underscores(a) != underscores(b))
		return underscores(a) < underscores(b);
	return strcmp(a, b) < 0;
}

/*
 * The table at its size, and its names alone in the pool: the table grew by doubling, and
 * the pool holds the names of aliases finalize() dropped (a .dynsym repeats the .symtab).
 * Nothing changes when memory is short.
 */
static void shrink(struct hc_elfsym *es)
{
	struct hc_strpool pool = {0};
	struct esym *syms;
	uint32_t *names = malloc((es->nr ? es->nr : 1) * sizeof(*names));
	size_t i;

	for (i = 0; names && i < es->nr; i++) {
		const char *n = hc_strpool__get(&es->pool, es->syms[i].name);

		if (hc_strpool__add(&pool, n, strlen(n), &names[i]))
			break;
	}
	if (names && i == es->nr) {
		for (i = 0; i < es->nr; i++)
			es->syms[i].name = names[i];
		if (es->has_debuglink) {
			const char *n = hc_strpool__get(&es->pool, es->debuglink_name);

			if (hc_strpool__add(&pool, n, strlen(n), &es->debuglink_name))
				es->has_debuglink = false;
		}
		hc_strpool__release(&es->pool);
		es->pool = pool;
		hc_strpool__shrink(&es->pool);
	} else {
		hc_strpool__release(&pool);
	}
	free(names);
	syms = es->nr ? realloc(es->syms, es->nr * sizeof(*syms)) : NULL;
	if (syms) {
		es->syms = syms;
		es->cap = es->nr;
	}
}

/* Sort, keep one symbol per address (the best-named alias), bound zero-size symbols. */
static void finalize(struct hc_elfsym *es)
{
	size_t i, out = 0;

	if (!es->nr)
		return;
	qsort(es->syms, es->nr, sizeof(*es->syms), sym_cmp);
	for (i = 0; i < es->nr; i++) {
		struct esym *s = &es->syms[i];

		if (out && es->syms[out - 1].addr == s->addr) {
			struct esym *kept = &es->syms[out - 1];

			if (better_alias(es, s, kept)) {
				uint32_t size = kept->size > s->size ? kept->size : s->size;

				*kept = *s;
				if (!s->sized)
					kept->size = size;
			}
			continue;
		}
		es->syms[out++] = *s;
	}
	es->nr = out;
	for (i = 0; i < es->nr; i++) {
		struct esym *s = &es->syms[i];
		uint64_t next = i + 1 < es->nr ? es->syms[i + 1].addr : UINT64_MAX;
		uint64_t end;

		if (s->sized)
			continue;
		/* Hand-written asm without .size: up to the next symbol, within its section. */
		end = s->sec_left ? s->addr + s->sec_left : UINT64_MAX;
		if (next < end)
			end = next;
		/* last symbol, section unknown: exact address only */
		s->size = end == UINT64_MAX ? 1 : clamp32(end - s->addr);
	}
	shrink(es);
}

Elf *hc_elf_open_fd(int fd)
{
	struct stat st;
	Elf *elf;

	/* A mapped character device (/dev/zero, DRM) is no ELF and may never hit EOF. */
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return NULL;
	elf_version(EV_CURRENT);
	/*
	 * ELF_C_READ, not _MMAP: libelf then pread()s headers and the sections we ask for, and a
	 * file truncated under us (its owner may do that on purpose) gives a short read, not a
	 * SIGBUS in a root process.
	 */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return NULL;
	}
	return elf;
}

/*
 * elf_memory() may rewrite the image in place (ELF_C_READ_MMAP_PRIVATE, elf_compress), so it
 * gets a private copy, which the caller frees after elf_end(). Also lets callers pass const.
 */
static Elf *open_elf_mem(const void *buf, size_t len, void **copy)
{
	Elf *elf;

	*copy = malloc(len);
	if (!*copy)
		return NULL;
	memcpy(*copy, buf, len);
	elf = elf_memory(*copy, len);
	if (elf && elf_kind(elf) != ELF_K_ELF) {
		elf_end(elf);
		return NULL;
	}
	return elf;
}

/* Consumes elf (elf_end) and then image (free; NULL when elf reads from an fd). */
/* .gnu_debuglink, kept for the debug file search (debugfile.h); a bad one is no link. */
static int load_debuglink(struct hc_elfsym *es, Elf *elf)
{
	char name[HC_DEBUGLINK_NAME_MAX];
	int err;

	if (hc_debuglink__from_elf(elf, name, &es->debuglink_crc))
		return 0;
	err = hc_strpool__add(&es->pool, name, strlen(name), &es->debuglink_name);
	if (err == -ENOMEM)
		return err;
	es->has_debuglink = !err;
	return 0;
}

static struct hc_elfsym *from_elf(Elf *elf, void *image)
{
	struct hc_elfsym *es;
	int err = -ENOMEM;

	if (!elf) {
		err = -ENOEXEC;
		goto err_out;
	}
	es = calloc(1, sizeof(*es));
	if (!es)
		goto err_end;
	err = load_segments(es, elf);
	if (err)
		goto err_free;
	load_build_id(es, elf);
	err = load_debuglink(es, elf);
	if (err)
		goto err_free;
	err = load_symbols(es, elf, true, HC_ELFSYM_SYMTAB);
	if (err)
		goto err_free;
	err = load_debugdata(es, elf);
	if (err)
		goto err_free;
	elf_end(elf);
	free(image);
	finalize(es);
	hc_strpool__shrink(&es->pool);
	return es;

err_free:
	hc_elfsym__free(es);
err_end:
	elf_end(elf);
err_out:
	free(image);
	errno = -err;
	return NULL;
}

struct hc_elfsym *hc_elfsym__from_fd(int fd)
{
	elf_version(EV_CURRENT);
	return from_elf(hc_elf_open_fd(fd), NULL);
}

struct hc_elfsym *hc_elfsym__from_mem(const void *buf, size_t len)
{
	elf_version(EV_CURRENT);
	void *copy;
	Elf *elf;

	if (!buf || !len) {
		errno = ENOEXEC;
		return NULL;
	}
	elf = open_elf_mem(buf, len, &copy);
	if (!elf && !copy) {
		errno = ENOMEM;
		return NULL;
	}
	return from_elf(elf, copy);
}

/* Consumes elf and image like from_elf(). */
static int add_debuginfo(struct hc_elfsym *es, Elf *elf, void *image)
{
	const void *id;
	ssize_t n;
	int err;

	if (!elf) {
		free(image);
		return -ENOEXEC;
	}
	n = dwelf_elf_gnu_build_id(elf, &id);
	if (es->build_id_len && n > 0 &&
	    ((size_t)n != es->build_id_len || memcmp(id, es->build_id, (size_t)n))) {
		err = -ESTALE;
		goto out_end;
	}
	err = load_symbols(es, elf, false, HC_ELFSYM_DEBUGINFO);
	if (!err)
		finalize(es);

out_end:
	elf_end(elf);
	free(image);
	return err;
}

int hc_elfsym__read_build_id_fd(int fd, uint8_t id[HC_BUILD_ID_MAX], size_t *len)
{
	const void *p;
	ssize_t n;
	Elf *elf;

	elf_version(EV_CURRENT);
	elf = hc_elf_open_fd(fd);
	if (!elf)
		return -ENOEXEC;
	*len = 0;
	n = dwelf_elf_gnu_build_id(elf, &p);
	if (n > 0 && p) {
		*len = (size_t)n > HC_BUILD_ID_MAX ? HC_BUILD_ID_MAX : (size_t)n;
		memcpy(id, p, *len);
	}
	elf_end(elf);
	return 0;
}

int hc_elfsym__add_debuginfo_fd(struct hc_elfsym *es, int fd)
{
	elf_version(EV_CURRENT);
	return add_debuginfo(es, hc_elf_open_fd(fd), NULL);
}

int hc_elfsym__add_debuginfo_mem(struct hc_elfsym *es, const void *buf, size_t len)
{
	elf_version(EV_CURRENT);
	void *copy;
	Elf *elf;

	if (!buf || !len)
		return -ENOEXEC;
	elf = open_elf_mem(buf, len, &copy);
	if (!elf && !copy)
		return -ENOMEM;
	return add_debuginfo(es, elf, copy);
}

size_t hc_elfsym__build_id(const struct hc_elfsym *es, const uint8_t **id)
{
	*id = es->build_id;
	return es->build_id_len;
}

int hc_build_id_path(const char *debug_root, const uint8_t *id, size_t len, char *buf, size_t size)
{
	char hex[2 * HC_BUILD_ID_MAX + 1];
	size_t i;
	int n;

	/* A one-byte id would leave an empty file name; real ids are 16 or 20 bytes. */
	if (len < 2 || len > HC_BUILD_ID_MAX)
		return -ENOENT;
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	n = snprintf(buf, size, "%s/.build-id/%.2s/%s.debug", debug_root, hex, hex + 2);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

int hc_elfsym__debuginfo_path(const struct hc_elfsym *es, const char *debug_root, char *buf,
			      size_t size)
{
	return hc_build_id_path(debug_root, es->build_id, es->build_id_len, buf, size);
}

int hc_elfsym__debuglink(const struct hc_elfsym *es, const char **name, uint32_t *crc)
{
	if (!es->has_debuglink)
		return -ENOENT;
	*name = hc_strpool__get(&es->pool, es->debuglink_name);
	*crc = es->debuglink_crc;
	return 0;
}

unsigned int hc_elfsym__sources(const struct hc_elfsym *es)
{
	return es->sources;
}

size_t hc_elfsym__nr(const struct hc_elfsym *es)
{
	return es->nr;
}

int hc_elfsym__off_to_vaddr(const struct hc_elfsym *es, uint64_t file_off, uint64_t *vaddr)
{
	const struct load_seg *found = NULL;
	size_t i;

	for (i = 0; i < es->nr_segs; i++) {
		const struct load_seg *seg = &es->segs[i];

		if (file_off < seg->offset || file_off - seg->offset >= seg->filesz)
			continue;
		/* Segments may share a file page; code lives in the executable one. */
		if (!found || ((seg->flags & PF_X) && !(found->flags & PF_X)))
			found = seg;
	}
	if (!found)
		return -ENOENT;
	*vaddr = file_off - found->offset + found->vaddr;
	return 0;
}

int hc_elfsym__lookup(const struct hc_elfsym *es, uint64_t vaddr, size_t *idx, uint64_t *offset)
{
	size_t lo = 0, hi = es->nr, i, n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (es->syms[mid].addr <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo, n = 0; i > 0 && n < NESTED_LOOKBACK; i--, n++) {
		const struct esym *s = &es->syms[i - 1];

		if (vaddr < sym_end(s)) {
			*idx = i - 1;
			*offset = vaddr - s->addr;
			return 0;
		}
	}
	return -ENOENT;
}

const char *hc_elfsym__name(const struct hc_elfsym *es, size_t idx)
{
	if (idx >= es->nr)
		return NULL;
	return hc_strpool__get(&es->pool, es->syms[idx].name);
}

int hc_elfsym__symbol(const struct hc_elfsym *es, size_t idx, const char **name, uint64_t *vaddr,
		      uint64_t *size)
{
	const struct esym *s;

	if (idx >= es->nr)
		return -ENOENT;
	s = &es->syms[idx];
	*name = hc_strpool__get(&es->pool, s->name);
	*vaddr = s->addr;
	*size = s->size;
	return 0;
}
