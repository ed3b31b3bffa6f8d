// SPDX-License-Identifier: GPL-2.0-only
#include "symbolize/kallsyms.h"
#include "symbolize/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "base/array.h"

/* kallsyms is ~10 MB on a distro kernel with many modules; refuse anything absurd. */
#define KALLSYMS_MAX_BYTES (512u * 1024u * 1024u)

#define NO_MODULE 0xffffffu /* a ksym.module of 24 bits */

/*
 * Names are kept compressed (zstd), in blocks of this many symbols in address order: a
 * distribution kernel's ~120k function names are ~3 MB of text, and serve keeps them for its
 * life but looks up a few thousand. Neighbours in address order share much (one source file's
 * functions), so a block of 64 compresses about 4x; a lookup decompresses one (~1.5 KB).
 */
#define NAMES_PER_BLOCK 64

/* Lower rank wins among symbols at one address: a global name reads best in a profile. */
enum ksym_rank {
	RANK_GLOBAL = 0, /* T */
	RANK_WEAK,	 /* W, w */
	RANK_LOCAL,	 /* t */
	RANK_NOT_FUNC,	 /* data etc.: only ends the function before it */
	RANK_DATA,	 /* a named variable (d, D, b, B): the same, and names locks (--locks) */
};

/* While parsing: 16 bytes a symbol, with its name in the parse pool. */
struct ksym {
	uint64_t addr;
	uint32_t name;	      /* pool offset; grows with input order (keeps the sort stable) */
	uint32_t module : 24; /* index into modules[], NO_MODULE for vmlinux */
	uint32_t rank : 8;
};

struct hc_kallsyms {
	/* parsing's, freed once the names are compressed */
	struct ksym *syms;
	size_t cap;
	struct hc_strpool pool;
	/* kept: 12 bytes a symbol, sorted by address, and the compressed names */
	uint64_t *addr;
	uint32_t *meta; /* module << 8 | rank */
	size_t nr;
	size_t nr_funcs;
	size_t bad_lines;
	uint32_t *modules; /* mpool offsets */
	size_t nr_modules, cap_modules;
	struct hc_strpool mpool;
	uint8_t *z; /* block b is z[zoff[b], zoff[b + 1]): its symbols' names, each ending in
		       NUL (empty for a symbol that is never shown) */
	size_t *zoff;
	size_t nr_blocks;
	char *block; /* the block decompressed last: a lookup's name points into it */
	size_t block_cap, block_len;
	size_t block_at; /* its index + 1; 0: none */
	void *dctx;	 /* ZSTD_DCtx */
};

static uint32_t meta_module(uint32_t m)
{
	return m >> 8;
}

static uint32_t meta_rank(uint32_t m)
{
	return m & 0xffu;
}

void hc_kallsyms__free(struct hc_kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	hc_strpool__release(&ks->pool);
	free(ks->addr);
	free(ks->meta);
	free(ks->modules);
	hc_strpool__release(&ks->mpool);
	free(ks->z);
	free(ks->zoff);
	free(ks->block);
	ZSTD_freeDCtx(ks->dctx);
	free(ks);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static int module_index(struct hc_kallsyms *ks, const char *name, size_t len, uint32_t *idx)
{
	uint32_t off;
	size_t i;
	int err;

	/* Symbols of one module are contiguous in kallsyms: check the last one first. */
	for (i = ks->nr_modules; i-- > 0;) {
		const char *m = hc_strpool__get(&ks->mpool, ks->modules[i]);

		if (strlen(m) == len && !memcmp(m, name, len)) {
			*idx = (uint32_t)i;
			return 0;
		}
	}
	if (ks->nr_modules >= NO_MODULE)
		return -E2BIG;
	if (ks->nr_modules == ks->cap_modules &&
	    hc_array_grow(ks->modules, ks->cap_modules, ks->nr_modules + 1, 64))
		return -ENOMEM;
	err = hc_strpool__add(&ks->mpool, name, len, &off);
	if (err)
		return err;
	ks->modules[ks->nr_modules] = off;
	*idx = (uint32_t)ks->nr_modules++;
	return 0;
}

/* One line "ffffffff81000000 T _text" or "ffffffffc0a01000 t ext4_foo\t[ext4]". */
static int parse_line(struct hc_kallsyms *ks, const char *p, const char *end, bool *nonzero)
{
	const char *name, *name_end;
	uint32_t module = NO_MODULE;
	uint64_t addr;
	uint32_t rank;
	struct ksym *s;
	char type;
	int err;

	if (hc_parse_hex(&p, end, false, &addr) || p == end || !is_blank(*p))
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;
	if (p == end)
		return -EINVAL;
	type = *p++;
	if (p == end || !is_blank(*p))
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;
	name = p;
	while (p < end && !is_blank(*p))
		p++;
	name_end = p;
	if (name == name_end)
		return -EINVAL;
	while (p < end && is_blank(*p))
		p++;
	if (p < end) {
		const char *m = p;

		if (*m != '[')
			return -EINVAL;
		while (p < end && *p != ']')
			p++;
		if (p == end || p == m + 1)
			return -EINVAL;
		err = module_index(ks, m + 1, (size_t)(p - m - 1), &module);
		if (err)
			return err;
	}

	switch (type) {
	case 'T':
		rank = RANK_GLOBAL;
		break;
	case 'W':
	case 'w':
		rank = RANK_WEAK;
		break;
	case 't':
		rank = RANK_LOCAL;
		break;
	case 'a':
	case 'A':
	case 'U':
	case 'u':
		/* Absolute values (per-CPU offsets) and undefined names are not addresses. */
		return 0;
	case 'd':
	case 'D':
	case 'b':
	case 'B':
		rank = RANK_DATA;
		break;
	default:
		rank = RANK_NOT_FUNC;
		break;
	}
	if (addr)
		*nonzero = true;

	if (ks->nr == ks->cap && hc_array_grow(ks->syms, ks->cap, ks->nr + 1, 4096))
		return -ENOMEM;
	s = &ks->syms[ks->nr];
	s->addr = addr;
	s->module = module;
	s->rank = rank & 0xffu;
	if (rank == RANK_NOT_FUNC) {
		s->name = 0; /* never shown: do not spend memory on their names */
	} else {
		err = hc_strpool__add(&ks->pool, name, (size_t)(name_end - name), &s->name);
		if (err)
			return err;
		if (rank != RANK_DATA)
			ks->nr_funcs++;
	}
	ks->nr++;
	return 0;
}

/* Within one address, the preferred symbol sorts last: lookup takes the last entry <= addr. */
static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	/* Named entries: input order (their names' offsets grow with it); nameless ones
	 * (never shown) by module, so that equal inputs sort alike. */
	if (x->name != y->name)
		return x->name > y->name ? -1 : 1;
	if (x->module != y->module)
		return x->module > y->module ? -1 : 1;
	return 0;
}

/*
 * The sorted symbols into the kept form: addresses, module and rank, and the names in
 * compressed blocks; the parse's table and pool are let go.
 */
static int pack(struct hc_kallsyms *ks)
{
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	size_t raw_cap = 0, z_len = 0, z_cap = 0;
	char *raw = NULL;
	int err = 0;

	ks->nr_blocks = (ks->nr + NAMES_PER_BLOCK - 1) / NAMES_PER_BLOCK;
	ks->addr = malloc(ks->nr * sizeof(*ks->addr));
	ks->meta = malloc(ks->nr * sizeof(*ks->meta));
	ks->zoff = malloc((ks->nr_blocks + 1) * sizeof(*ks->zoff));
	if (!cctx || !ks->addr || !ks->meta || !ks->zoff)
		err = -ENOMEM;
	for (size_t b = 0; !err && b < ks->nr_blocks; b++) {
		size_t first = b * NAMES_PER_BLOCK, len = 0, bound, got;

		for (size_t i = first; i < ks->nr && i < first + NAMES_PER_BLOCK; i++) {
			const struct ksym *k = &ks->syms[i];
			const char *name =
				k->rank == RANK_NOT_FUNC ? "" : hc_strpool__get(&ks->pool, k->name);
			size_t n = strlen(name) + 1;

			ks->addr[i] = k->addr;
			ks->meta[i] = (uint32_t)k->module << 8 | k->rank;
			if (len + n > raw_cap && hc_array_grow(raw, raw_cap, len + n, 4096)) {
				err = -ENOMEM;
				break;
			}
			memcpy(raw + len, name, n);
			len += n;
		}
		bound = ZSTD_compressBound(len);
		if (!err && z_len + bound > z_cap &&
		    hc_array_grow(ks->z, z_cap, z_len + bound, 65536))
			err = -ENOMEM;
		if (err)
			break;
		got = ZSTD_compressCCtx(cctx, ks->z + z_len, bound, raw, len, 3);
		if (ZSTD_isError(got)) {
			err = -ENOMEM;
			break;
		}
		ks->zoff[b] = z_len;
		z_len += got;
	}
	free(raw);
	ZSTD_freeCCtx(cctx);
	if (err)
		return err;
	ks->zoff[ks->nr_blocks] = z_len;
	{
		uint8_t *z = realloc(ks->z, z_len ? z_len : 1);

		if (z)
			ks->z = z;
	}
	free(ks->syms);
	ks->syms = NULL;
	ks->cap = 0;
	hc_strpool__release(&ks->pool);
	hc_strpool__shrink(&ks->mpool);
	return 0;
}

/* The name of symbol i, from its block (decompressed unless it was the last one); NULL when
 * the block cannot be read (no memory). Valid until a lookup reads another block. */
static const char *name_of(struct hc_kallsyms *ks, size_t i)
{
	size_t b = i / NAMES_PER_BLOCK;
	const char *p, *end;

	if (ks->block_at != b + 1) {
		const uint8_t *src = ks->z + ks->zoff[b];
		size_t src_len = ks->zoff[b + 1] - ks->zoff[b];
		unsigned long long n = ZSTD_getFrameContentSize(src, src_len);
		size_t got;

		ks->block_at = 0;
		if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n == 0)
			return NULL;
		if (n > ks->block_cap && hc_array_grow(ks->block, ks->block_cap, (size_t)n, 4096))
			return NULL;
		if (!ks->dctx && !(ks->dctx = ZSTD_createDCtx()))
			return NULL;
		got = ZSTD_decompressDCtx(ks->dctx, ks->block, ks->block_cap, src, src_len);
		if (ZSTD_isError(got) || got != n)
			return NULL;
		ks->block_len = got;
		ks->block_at = b + 1;
	}
	p = ks->block;
	end = ks->block + ks->block_len;
	for (size_t k = b * NAMES_PER_BLOCK; k < i && p < end; k++)
		p += strlen(p) + 1;
	return p < end ? p : NULL;
}

struct hc_kallsyms *hc_kallsyms__parse(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	struct hc_kallsyms *ks;
	bool nonzero = false;
	size_t lines = 0;
	int err;

	ks = calloc(1, sizeof(*ks));
	if (!ks) {
		errno = ENOMEM;
		return NULL;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;

		if (eol > p) {
			lines++;
			err = parse_line(ks, p, eol, &nonzero);
			if (err == -ENOMEM || err == -E2BIG)
				goto err_free;
			if (err)
				ks->bad_lines++;
		}
		p = nl ? nl + 1 : end;
	}
	if (ks->nr_funcs == 0 || lines == ks->bad_lines) {
		err = -EINVAL;
		goto err_free;
	}
	if (!nonzero) {
		err = -EPERM;
		goto err_free;
	}
	qsort(ks->syms, ks->nr, sizeof(*ks->syms), ksym_cmp);
	err = pack(ks);
	if (err)
		goto err_free;
	return ks;

err_free:
	hc_kallsyms__free(ks);
	errno = -err;
	return NULL;
}

static void *parse_any(const char *buf, size_t len)
{
	return hc_kallsyms__parse(buf, len);
}

struct hc_kallsyms *hc_kallsyms__load(const char *path)
{
	return hc_parse_file(path, KALLSYMS_MAX_BYTES, parse_any);
}

struct hc_kallsyms *hc_kallsyms__load_fd(int fd)
{
	return hc_parse_fd(fd, KALLSYMS_MAX_BYTES, parse_any);
}

int hc_kallsyms__lookup(struct hc_kallsyms *ks, uint64_t addr, struct hc_ksym *out)
{
	size_t lo = 0, hi, i;
	uint32_t m;

	if (!ks || !ks->nr)
		return -ENOENT;
	/* First entry with addr > target; the candidate is the one before it. */
	hi = ks->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->addr[mid] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	i = lo - 1;
	m = ks->meta[i];
	if (meta_rank(m) >= RANK_NOT_FUNC)
		return -ENOENT;
	/* The next symbol bounds this one only if it lives in the same image (vmlinux/module). */
	if (lo == ks->nr || meta_module(ks->meta[lo]) != meta_module(m)) {
		if (addr - ks->addr[i] >= HC_KSYM_MAX_TAIL_BYTES)
			return -ENOENT;
	}
	out->name = name_of(ks, i);
	if (!out->name)
		return -ENOMEM;
	out->module = meta_module(m) == NO_MODULE
			      ? NULL
			      : hc_strpool__get(&ks->mpool, ks->modules[meta_module(m)]);
	out->offset = addr - ks->addr[i];
	return 0;
}

int hc_kallsyms__lookup_data(struct hc_kallsyms *ks, uint64_t addr, const char **name)
{
	size_t lo = 0, hi;

	if (!ks || !ks->nr || !addr)
		return -ENOENT;
	hi = ks->nr;
	while (lo < hi) { /* the first entry at or above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (ks->addr[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ks->nr && ks->addr[lo] == addr; lo++)
		if (meta_rank(ks->meta[lo]) == RANK_DATA) {
			*name = name_of(ks, lo);
			return *name ? 0 : -ENOMEM;
		}
	return -ENOENT;
}

size_t hc_kallsyms__nr_funcs(const struct hc_kallsyms *ks)
{
	return ks ? ks->nr_funcs : 0;
}

size_t hc_kallsyms__bad_lines(const struct hc_kallsyms *ks)
{
	return ks ? ks->bad_lines : 0;
}
