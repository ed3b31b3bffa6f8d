// SPDX-License-Identifier: GPL-2.0-only
#include "symbolize/kallsyms.h"
#include "symbolize/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"

/* kallsyms is ~10 MB on a distro kernel with many modules; refuse anything absurd. */
#define KALLSYMS_MAX_BYTES (512u * 1024u * 1024u)

#define NO_MODULE 0xffffffu /* a ksym.module of 24 bits */

/* Lower rank wins among symbols at one address: a global name reads best in a profile. */
enum ksym_rank {
	RANK_GLOBAL = 0, /* T */
	RANK_WEAK,	 /* W, w */
	RANK_LOCAL,	 /* t */
	RANK_NOT_FUNC,	 /* data etc.: only ends the function before it */
	RANK_DATA,	 /* a named variable (d, D, b, B): the same, and names locks (--locks) */
};

/* 16 bytes: a distribution kernel has ~120k of them, held for the life of serve. */
struct ksym {
	uint64_t addr;
	uint32_t name;	      /* strpool offset; grows with input order (keeps the sort stable) */
	uint32_t module : 24; /* index into modules[], NO_MODULE for vmlinux */
	uint32_t rank : 8;
};

struct hc_kallsyms {
	struct ksym *syms;
	size_t nr, cap;
	size_t nr_funcs;
	size_t bad_lines;
	uint32_t *modules; /* strpool offsets */
	size_t nr_modules, cap_modules;
	struct hc_strpool pool;
};

void hc_kallsyms__free(struct hc_kallsyms *ks)
{
	if (!ks)
		return;
	free(ks->syms);
	free(ks->modules);
	hc_strpool__release(&ks->pool);
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
		const char *m = hc_strpool__get(&ks->pool, ks->modules[i]);

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
	err = hc_strpool__add(&ks->pool, name, len, &off);
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

/* The array grew by doubling; it is kept for the life of the process. */
static void shrink_syms(struct hc_kallsyms *ks)
{
	struct ksym *syms = realloc(ks->syms, ks->nr * sizeof(*syms));

	if (syms) {
		ks->syms = syms;
		ks->cap = ks->nr;
	}
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
	shrink_syms(ks);
	hc_strpool__shrink(&ks->pool);
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

int hc_kallsyms__lookup(const struct hc_kallsyms *ks, uint64_t addr, struct hc_ksym *out)
{
	const struct ksym *s, *next;
	size_t lo = 0, hi;

	if (!ks || !ks->nr)
		return -ENOENT;
	/* First entry with addr > target; the candidate is the one before it. */
	hi = ks->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -ENOENT;
	s = &ks->syms[lo - 1];
	if (s->rank >= RANK_NOT_FUNC)
		return -ENOENT;
	next = lo < ks->nr ? &ks->syms[lo] : NULL;
	/* The next symbol bounds this one only if it lives in the same image (vmlinux/module). */
	if (!next || next->module != s->module) {
		if (addr - s->addr >= HC_KSYM_MAX_TAIL_BYTES)
			return -ENOENT;
	}
	out->name = hc_strpool__get(&ks->pool, s->name);
	out->module =
		s->module == NO_MODULE ? NULL : hc_strpool__get(&ks->pool, ks->modules[s->module]);
	out->offset = addr - s->addr;
	return 0;
}

int hc_kallsyms__lookup_data(const struct hc_kallsyms *ks, uint64_t addr, const char **name)
{
	size_t lo = 0, hi;

	if (!ks || !ks->nr || !addr)
		return -ENOENT;
	hi = ks->nr;
	while (lo < hi) { /* the first entry at or above addr */
		size_t mid = lo + (hi - lo) / 2;

		if (ks->syms[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < ks->nr && ks->syms[lo].addr == addr; lo++)
		if (ks->syms[lo].rank == RANK_DATA) {
			*name = hc_strpool__get(&ks->pool, ks->syms[lo].name);
			return 0;
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
