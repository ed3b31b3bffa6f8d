// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-uwtable: the unwind-table compiler (symbolize/uwtable.h) on arbitrary bytes.
 *
 * An input that starts with the ELF magic is a file image (hc_uwtable__compile_elf() over
 * elf_memory(), as the symbolizer's handle would be); anything else is a 16-byte header
 * { u32 section vaddr, u32 text_lo, u32 text_hi, u32 flags (bit 0: .eh_frame format) }
 * followed by a CFI section for hc_uwtable__compile_mem().
 *
 * Invariants (uwtable.h, bpf/unwind.h): only the documented errors, and nothing returned with
 * them; rows strictly increasing, inside the text, ending with a GAP, no more than the row
 * limit; every field within its encoding; the stats agree with the rows; the instruction
 * budget holds; the lookup lands on the last row at or below any pc.
 */
#include <errno.h>
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/uwtable.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ROWS 100000
#define MAX_INSNS (1u << 22)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void check_row(const struct hc_urow *r)
{
	switch (r->kind) {
	case HC_UR_SP:
	case HC_UR_BP:
	case HC_UR_DEREF_SP:
	case HC_UR_DEREF_BP:
		if (r->bp > HC_URBP_MAX && r->bp != HC_URBP_UNKNOWN)
			abort();
		break;
	case HC_UR_PLT:
		if ((r->bp > HC_URBP_MAX && r->bp != HC_URBP_UNKNOWN) || r->off < 0 || r->off > 31)
			abort();
		break;
	case HC_UR_UNSUPP:
		if (r->bp || r->off < 0 || r->off >= HC_URU_MAX)
			abort();
		break;
	case HC_UR_SIGNAL:
	case HC_UR_STOP:
	case HC_UR_GAP:
		if (r->bp || r->off)
			abort();
		break;
	default:
		abort();
	}
}

static void check_table(const struct hc_uwtable *t, const struct hc_uwtable_stats *acc,
			uint64_t text_lo, uint64_t text_hi)
{
	uint64_t unsupp[HC_URU_MAX] = {0}, gaps = 0;
	struct hc_uwtable_stats st;
	const struct hc_urow *rows;
	size_t n;

	rows = hc_uwtable__rows(t, &n);
	hc_uwtable__stats(t, &st);
	if (!n || n > MAX_ROWS || rows[n - 1].kind != HC_UR_GAP || st.rows != n ||
	    st.objects != 1 || st.insns > MAX_INSNS || acc->objects != 1 || acc->refused)
		abort();
	for (size_t i = 0; i < n; i++) {
		check_row(&rows[i]);
		if ((i && rows[i].pc <= rows[i - 1].pc) || rows[i].pc < text_lo ||
		    rows[i].pc > text_hi)
			abort();
		if (rows[i].kind == HC_UR_GAP)
			gaps++;
		if (rows[i].kind == HC_UR_UNSUPP)
			unsupp[rows[i].off]++;
	}
	if (gaps != st.gaps || memcmp(unsupp, st.unsupp, sizeof(unsupp)))
		abort();
	/* the lookup, at each row, around it, and at the ends */
	for (size_t i = 0; i < n; i++) {
		uint32_t pcs[3] = {rows[i].pc, rows[i].pc - 1, rows[i].pc + 1};

		for (int k = 0; k < 3; k++) {
			long j = hc_urow__find(rows, (uint32_t)n, pcs[k]);

			if (j < -1 || j >= (long)n || (j >= 0 && rows[j].pc > pcs[k]) ||
			    (j + 1 < (long)n && rows[j + 1].pc <= pcs[k]))
				abort();
		}
	}
	if (hc_urow__find(rows, (uint32_t)n, UINT32_MAX) != (long)n - 1)
		abort();
}

static bool documented(int err)
{
	return err == -EBADMSG || err == -E2BIG || err == -ENODATA || err == -ENOEXEC ||
	       err == -ENOMEM;
}

static void from_elf(const uint8_t *data, size_t size, const struct hc_uwtable_limits *lim)
{
	struct hc_uwtable_stats acc = {0};
	struct hc_uwtable *t = NULL;
	void *copy = malloc(size);
	Elf *elf;
	int err;

	if (!copy)
		return;
	/* elf_memory() may rewrite its image: a private copy */
	memcpy(copy, data, size);
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, size);
	err = hc_uwtable__compile_elf(elf, lim, &t, &acc);
	if (err && (!documented(err) || t))
		abort();
	if (!err)
		check_table(t, &acc, 0, UINT32_MAX);
	hc_uwtable__free(t);
	elf_end(elf);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hc_uwtable_limits lim = {.max_rows = MAX_ROWS, .max_insns = MAX_INSNS};
	struct hc_uwtable_stats acc = {0};
	struct hc_uwtable *t = NULL;
	uint32_t vaddr, lo, hi;
	int err;

	if (size >= 4 && !memcmp(data, ELFMAG, SELFMAG)) {
		from_elf(data, size, &lim);
		return 0;
	}
	if (size < 16)
		return 0;
	vaddr = le32(data);
	lo = le32(data + 4);
	hi = le32(data + 8);
	err = hc_uwtable__compile_mem(data + 16, size - 16, vaddr, le32(data + 12) & 1, lo, hi,
				      &lim, &t, &acc);
	if (err) {
		if (!documented(err) || t || acc.objects ||
		    acc.refused != (err == -EBADMSG || err == -E2BIG))
			abort();
		return 0;
	}
	check_table(t, &acc, lo, hi);
	hc_uwtable__free(t);
	return 0;
}
