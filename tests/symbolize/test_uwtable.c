// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwind-table compiler (symbolize/uwtable.c). One binary, one group per concern, chosen
 * by argv[1]:
 *   golden   the fixture object ($HC_UWFIX, tests/symbolize/uwtable_fix.S): rows by hand;
 *            the same from its .debug_frame-only twin ($HC_UWFIX_DF)
 *   libdw    differential against libdw's own evaluation, at every pc of every FDE, on
 *            Debian's libc.so.6, on hotcold itself ($HC_HOTCOLD), on the unwinder test's
 *            chain built without frame pointers ($HC_UWCHAIN) and on the fixture
 *   hostile  truncated and hand-made malicious sections: refused, counted, nothing returned
 *   measure FILE...  (not a test) compile time, rows and bytes per object, rows per MB of text
 *   diff FILE...     (not a test) the libdw differential on the given objects
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolize/elfsym.h"
#include "symbolize/uwtable.h"
#include "tests/skip.h"

/* Where the dynamic loader finds libc on Debian/Ubuntu x86-64. */
#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"

static uint64_t clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

static const char *need_env(const char *name)
{
	const char *v = getenv(name);

	if (!v)
		fail_msg("%s is not set (run through meson test)", name);
	return v;
}

static struct hc_uwtable *compile_path(const char *path, struct hc_uwtable_stats *acc)
{
	struct hc_uwtable *t = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	assert_true(fd >= 0);
	err = hc_uwtable__compile_fd(fd, NULL, &t, acc);
	close(fd);
	if (err)
		fail_msg("%s: compile failed: %s", path, strerror(-err));
	return t;
}

static const struct hc_urow *row_at(const struct hc_urow *rows, size_t n, uint64_t pc)
{
	static const struct hc_urow gap = {.kind = HC_UR_GAP};
	long i = hc_urow__find(rows, (uint32_t)n, (uint32_t)pc);

	return i < 0 ? &gap : &rows[i];
}

static void check_sorted(const struct hc_urow *rows, size_t n)
{
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++) {
		assert_true(rows[i].kind < HC_UR_KIND_MAX);
		if (i)
			assert_true(rows[i].pc > rows[i - 1].pc);
	}
	assert_int_equal(rows[n - 1].kind, HC_UR_GAP);
}

/* ---- golden ---- */

struct expect {
	const char *sym;
	uint32_t at; /* from the symbol */
	uint8_t kind, bp;
	int16_t off;
};

#define SP(n) HC_UR_SP, 0, n
#define UNSUPP(why) HC_UR_UNSUPP, 0, why

/* Reviewed against `readelf --debug-dump=frames-interp` of the fixture. */
static const struct expect golden[] = {
	{"uw_pushpop", 0, SP(1)},
	{"uw_pushpop", 1, SP(2)},
	{"uw_pushpop", 2, HC_UR_SP, 3, 3},
	{"uw_pushpop", 5, SP(2)},
	{"uw_pushpop", 6, SP(1)},
	{"uw_remember", 0, SP(1)},
	{"uw_remember", 1, HC_UR_SP, 2, 2},
	{"uw_remember", 4, HC_UR_BP, 2, 2},
	{"uw_remember", 9, SP(1)},	     /* .cfi_restore %rbp: the CIE's rule */
	{"uw_remember", 10, HC_UR_BP, 2, 2}, /* .cfi_restore_state */
	{"uw_remember", 12, HC_UR_SP, 2, 1}, /* rbp's rule outlives the pop */
	{"uw_plt", 0, HC_UR_PLT, 0, 11},
	{"uw_signal", 0, HC_UR_SIGNAL, 0, 0},
	{"uw_undef", 0, HC_UR_STOP, 0, 0},
	{"uw_regcfa", 0, SP(1)},
	{"uw_regcfa", 1, UNSUPP(HC_URU_CFA_REG)},
	{"uw_regcfa", 2, UNSUPP(HC_URU_RA)},
	{"uw_regcfa", 3, SP(1)},
	{"uw_bigsub", 0, SP(1)},
	{"uw_bigsub", 7, SP(0x10010 / 8)},
	{"uw_bigsub", 14, SP(1)},
	{"uw_bigsub", 18, UNSUPP(HC_URU_CFA_OFF)},
	{"uw_bigsub", 22, SP(1)},
	{"uw_deref", 0, SP(1)},
	{"uw_deref", 5, UNSUPP(HC_URU_CFA_REG)},
	{"uw_deref", 19, HC_UR_DEREF_BP, HC_URBP_UNKNOWN, -1},
	{"uw_deref", 20, SP(1)},
	{"uw_nocfi", 0, HC_UR_GAP, 0, 0},
	{"uw_leaf", 0, SP(1)},
	{"uw_leaf", 1, HC_UR_GAP, 0, 0}, /* the final GAP, past the symbol */
};

static bool sym_addr(const struct hc_elfsym *es, const char *want, uint64_t *addr, uint64_t *size)
{
	for (size_t i = 0; i < hc_elfsym__nr(es); i++) {
		const char *name;

		if (!hc_elfsym__symbol(es, i, &name, addr, size) && !strcmp(name, want))
			return true;
	}
	return false;
}

/* lax_signal: clang's integrated assembler drops .cfi_signal_frame from .debug_frame (no "S"
 * augmentation there), so uw_signal may be an ordinary CFA = rsp+8 frame in that twin. */
static void check_golden(const char *path, bool lax_signal)
{
	struct hc_uwtable_stats st = {0};
	struct hc_uwtable *t = compile_path(path, &st);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct hc_elfsym *es = hc_elfsym__from_fd(fd);
	const struct hc_urow *rows;
	size_t n, checked = 0;

	close(fd);
	assert_non_null(es);
	rows = hc_uwtable__rows(t, &n);
	check_sorted(rows, n);
	for (size_t i = 0; i < sizeof(golden) / sizeof(golden[0]); i++) {
		const struct expect *e = &golden[i];
		uint64_t a, size, to;

		if (!sym_addr(es, e->sym, &a, &size))
			fail_msg("fixture symbol %s missing", e->sym);
		/* every byte up to the next expectation (or the symbol's end) has this rule */
		to = i + 1 < sizeof(golden) / sizeof(golden[0]) &&
				     !strcmp(golden[i + 1].sym, e->sym)
			     ? a + golden[i + 1].at
			     : a + (e->at < size ? size : e->at + 1);
		for (uint64_t pc = a + e->at; pc < to; pc++, checked++) {
			const struct hc_urow *r = row_at(rows, n, pc);

			if (lax_signal && e->kind == HC_UR_SIGNAL && r->kind == HC_UR_SP &&
			    r->off == 1 && !r->bp)
				continue;
			if (r->kind != e->kind || r->bp != e->bp || r->off != e->off)
				fail_msg("%s+%" PRIu64
					 ": row %s bp %u off %d, expected %s bp %u off %d",
					 e->sym, pc - a, hc_urow_kind_name(r->kind), r->bp, r->off,
					 hc_urow_kind_name(e->kind), e->bp, e->off);
		}
	}
	assert_true(checked > 100);
	assert_int_equal(st.objects, 1);
	assert_int_equal(st.refused, 0);
	assert_int_equal(st.fdes, 9);
	assert_int_equal(st.rows, n);
	assert_int_equal(st.gaps, 2);
	assert_int_equal(st.unsupp[HC_URU_CFA_REG], 2);
	assert_int_equal(st.unsupp[HC_URU_RA], 1);
	assert_int_equal(st.unsupp[HC_URU_CFA_OFF], 1);
	assert_true(st.rows_merged > 0);
	hc_elfsym__free(es);
	hc_uwtable__free(t);
}

/*
 * The symbolizer's unwind handle (symbolizer.c unwind_elf()): headers and CFI sections read,
 * then the file let go (ELF_C_FDDONE) and closed. The compiler must need nothing more.
 */
static void test_elf_fddone(void **state)
{
	const char *path = need_env("HC_UWFIX");
	struct hc_uwtable *t = compile_path(path, NULL), *t2 = NULL;
	const struct hc_urow *rows, *rows2;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	size_t n, n2, nph, shstrndx;
	Elf *elf;

	(void)state;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	for (size_t i = 0; i < nph; i++)
		assert_non_null(gelf_getphdr(elf, (int)i, &(GElf_Phdr){0}));
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".eh_frame") || !strcmp(name, ".debug_frame")))
			elf_rawdata(scn, NULL);
	}
	assert_int_equal(elf_cntl(elf, ELF_C_FDDONE), 0);
	close(fd);
	assert_int_equal(hc_uwtable__compile_elf(elf, NULL, &t2, NULL), 0);
	rows = hc_uwtable__rows(t, &n);
	rows2 = hc_uwtable__rows(t2, &n2);
	assert_int_equal(n, n2);
	assert_memory_equal(rows, rows2, n * sizeof(*rows));
	elf_end(elf);
	hc_uwtable__free(t);
	hc_uwtable__free(t2);
	/* not ELF, not a regular file */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(hc_uwtable__compile_fd(fd, NULL, &t, NULL), -ENOEXEC);
	assert_null(t);
	close(fd);
	fd = open(need_env("HC_UWFIX_DF"), O_RDONLY | O_CLOEXEC);
	assert_int_equal(
		hc_uwtable__compile_fd(fd, &(struct hc_uwtable_limits){.max_rows = 3}, &t, NULL),
		-E2BIG);
	close(fd);
}

static void test_golden(void **state)
{
	(void)state;
	check_golden(need_env("HC_UWFIX"), false);
}

/* The same directives written to .debug_frame only (absolute addresses, "S" without 'z'). */
static void test_golden_debug_frame(void **state)
{
	(void)state;
	check_golden(need_env("HC_UWFIX_DF"), true);
}

/* The lookup on edge cases: empty, before the first row, on and between rows, the end. */
static void test_lookup(void **state)
{
	const struct hc_urow rows[] = {{0x10, 0, 0, 1}, {0x20, 0, 0, 2}, {0x30, 7, 0, 0}};

	(void)state;
	assert_int_equal(hc_urow__find(rows, 0, 0x10), -1);
	assert_int_equal(hc_urow__find(rows, 3, 0), -1);
	assert_int_equal(hc_urow__find(rows, 3, 0xf), -1);
	assert_int_equal(hc_urow__find(rows, 3, 0x10), 0);
	assert_int_equal(hc_urow__find(rows, 3, 0x1f), 0);
	assert_int_equal(hc_urow__find(rows, 3, 0x20), 1);
	assert_int_equal(hc_urow__find(rows, 3, 0x30), 2);
	assert_int_equal(hc_urow__find(rows, 3, UINT32_MAX), 2);
	assert_int_equal(hc_urow__find(rows, 1, 0x30), 0);
}

/* ---- libdw differential ---- */

/* libdw's rule at pc, in the table's terms; -ENOENT when no FDE covers pc. */
static int oracle(Dwarf_CFI *cfi, uint64_t pc, struct hc_urow *r, Dwarf_Addr *end)
{
	Dwarf_Op mem[3], *ops;
	Dwarf_Addr start;
	Dwarf_Frame *fr;
	size_t n;
	bool sig;
	int err = -EIO;

	*r = (struct hc_urow){.pc = (uint32_t)pc};
	if (dwarf_cfi_addrframe(cfi, pc, &fr))
		return -ENOENT;
	if (dwarf_frame_info(fr, &start, end, &sig) < 0)
		goto out;
	if (sig) {
		r->kind = HC_UR_SIGNAL;
		err = 0;
		goto out;
	}
	if (dwarf_frame_register(fr, 16, mem, &ops, &n))
		goto out;
	if (!n && ops == mem) {
		r->kind = HC_UR_STOP;
		err = 0;
		goto out;
	}
	if (n != 2 || ops[0].atom != DW_OP_call_frame_cfa || ops[1].atom != DW_OP_plus_uconst ||
	    (int64_t)ops[1].number != -8) {
		r->kind = HC_UR_UNSUPP;
		r->off = HC_URU_RA;
		err = 0;
		goto out;
	}
	if (dwarf_frame_cfa(fr, &ops, &n))
		goto out;
	r->kind = HC_UR_UNSUPP;
	r->off = HC_URU_CFA_EXPR;
	if (n == 1 && ops[0].atom == DW_OP_bregx) {
		int64_t off = (int64_t)ops[0].number2;

		if (ops[0].number != 6 && ops[0].number != 7) {
			r->off = HC_URU_CFA_REG;
		} else if (off % 8 || off / 8 < INT16_MIN || off / 8 > INT16_MAX) {
			r->off = HC_URU_CFA_OFF;
		} else {
			r->kind = ops[0].number == 7 ? HC_UR_SP : HC_UR_BP;
			r->off = (int16_t)(off / 8);
		}
	} else if (n == 9 && ops[0].atom == DW_OP_breg7 && ops[0].number == 8 &&
		   ops[1].atom == DW_OP_breg16 && ops[1].number == 0 &&
		   ops[2].atom == DW_OP_lit15 && ops[3].atom == DW_OP_and &&
		   ops[4].atom >= DW_OP_lit0 && ops[4].atom <= DW_OP_lit31 &&
		   ops[5].atom == DW_OP_ge && ops[6].atom == DW_OP_lit3 &&
		   ops[7].atom == DW_OP_shl && ops[8].atom == DW_OP_plus) {
		r->kind = HC_UR_PLT;
		r->off = (int16_t)(ops[4].atom - DW_OP_lit0);
	} else if (n == 2 && (ops[0].atom == DW_OP_breg6 || ops[0].atom == DW_OP_breg7) &&
		   ops[1].atom == DW_OP_deref) {
		int64_t off = (int64_t)ops[0].number;

		if (off % 8 || off / 8 < INT16_MIN || off / 8 > INT16_MAX) {
			r->off = HC_URU_CFA_OFF;
		} else {
			r->kind = ops[0].atom == DW_OP_breg6 ? HC_UR_DEREF_BP : HC_UR_DEREF_SP;
			r->off = (int16_t)(off / 8);
		}
	}
	if (r->kind == HC_UR_UNSUPP) {
		err = 0;
		goto out;
	}
	if (dwarf_frame_register(fr, 6, mem, &ops, &n))
		goto out;
	if (!n && !ops)
		r->bp = 0; /* same value */
	else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		 ops[1].atom == DW_OP_plus_uconst && (int64_t)ops[1].number < 0 &&
		 (int64_t)ops[1].number >= -8 * HC_URBP_MAX && (int64_t)ops[1].number % 8 == 0)
		r->bp = (uint8_t)(-(int64_t)ops[1].number / 8);
	else
		r->bp = HC_URBP_UNKNOWN;
	err = 0;
out:
	free(fr);
	return err;
}

static bool same_rule(const struct hc_urow *a, const struct hc_urow *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == HC_UR_SIGNAL || a->kind == HC_UR_STOP || a->kind == HC_UR_GAP)
		return true;
	return a->off == b->off && (a->kind == HC_UR_UNSUPP || a->bp == b->bp);
}

struct diff {
	uint64_t pcs, in_fde, evals, mismatches, unsupp[HC_URU_MAX], oracle_err;
	uint64_t by_kind[HC_UR_KIND_MAX];
};

static void report_mismatch(struct diff *d, uint64_t pc, const struct hc_urow *got,
			    const struct hc_urow *want)
{
	if (d->mismatches++ < 20)
		print_message("  MISMATCH pc 0x%" PRIx64 ": table %s bp %u off %d, libdw %s bp %u "
			      "off %d\n",
			      pc, hc_urow_kind_name(got->kind), got->bp, got->off,
			      hc_urow_kind_name(want->kind), want->bp, want->off);
}

/* Every pc of the executable segments: inside an FDE the rules agree, outside a GAP. */
static void diff_object(const char *path)
{
	struct hc_uwtable_stats st = {0};
	uint64_t t0 = now_ns(), t1, t2, lo = UINT64_MAX, hi = 0, covered_end = 0;
	struct hc_uwtable *t = compile_path(path, &st);
	const struct hc_urow *rows;
	struct diff d = {0};
	struct hc_urow want;
	Dwarf_Addr end = 0;
	Dwarf_CFI *cfi;
	size_t n, nph;
	int fd;
	Elf *elf;

	t1 = now_ns();
	rows = hc_uwtable__rows(t, &n);
	check_sorted(rows, n);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			lo = ph.p_vaddr < lo ? ph.p_vaddr : lo;
			hi = ph.p_vaddr + ph.p_memsz > hi ? ph.p_vaddr + ph.p_memsz : hi;
		}
	}
	cfi = dwarf_getcfi_elf(elf);
	assert_non_null(cfi);
	for (uint64_t pc = lo; pc < hi; pc++) {
		const struct hc_urow *got = row_at(rows, n, pc);
		int err = oracle(cfi, pc, &want, &end);

		d.pcs++;
		if (err == -ENOENT) {
			/* padding of up to 15 bytes after an FDE is folded into its last row */
			if (got->kind != HC_UR_GAP && pc >= covered_end + 16)
				report_mismatch(&d, pc, got, &(struct hc_urow){.kind = HC_UR_GAP});
			continue;
		}
		d.in_fde++;
		if (end > covered_end)
			covered_end = end;
		if (err) {
			if (d.oracle_err++ < 20)
				print_message("  libdw error at 0x%" PRIx64 ": %s\n", pc,
					      dwarf_errmsg(-1));
			continue;
		}
		d.by_kind[want.kind]++;
		if (!same_rule(got, &want)) {
			report_mismatch(&d, pc, got, &want);
			continue;
		}
		if (got->kind == HC_UR_UNSUPP && got->off >= 0 && got->off < HC_URU_MAX &&
		    d.unsupp[got->off]++ < 3)
			print_message("  unsupported (%s) at 0x%" PRIx64 "\n",
				      hc_urow_unsupp_name((unsigned)got->off), pc);
	}
	t2 = now_ns();
	print_message("%s: %zu rows (%zu bytes) from %" PRIu64 " FDEs in %.1f ms; %" PRIu64
		      " pcs checked (%" PRIu64 " in FDEs) in %.1f s\n",
		      path, n, n * sizeof(*rows), st.fdes, (t1 - t0) / 1e6, d.pcs, d.in_fde,
		      (t2 - t1) / 1e9);
	print_message("  pcs by libdw rule:");
	for (int k = 0; k < HC_UR_KIND_MAX; k++)
		if (d.by_kind[k])
			print_message(" %s %" PRIu64, hc_urow_kind_name(k), d.by_kind[k]);
	print_message("\n  unsupported pcs: cfa_reg %" PRIu64 " cfa_off %" PRIu64
		      " cfa_expr %" PRIu64 " ra %" PRIu64 "; mismatches %" PRIu64
		      ", libdw errors %" PRIu64 "\n",
		      d.unsupp[HC_URU_CFA_REG], d.unsupp[HC_URU_CFA_OFF], d.unsupp[HC_URU_CFA_EXPR],
		      d.unsupp[HC_URU_RA], d.mismatches, d.oracle_err);
	assert_true(d.in_fde > 0);
	assert_int_equal(d.mismatches, 0);
	assert_int_equal(d.oracle_err, 0);
	dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
	hc_uwtable__free(t);
}

static void test_libdw_libc(void **state)
{
	(void)state;
	if (access(LIBC_PATH, R_OK))
		hc_skip("%s: %s", LIBC_PATH, strerror(errno));
	diff_object(LIBC_PATH);
}

static void test_libdw_self(void **state)
{
	(void)state;
	diff_object(need_env("HC_HOTCOLD"));
}

/* diff FILE...: the same differential on any objects (not a test: for the objects of a host) */
static char **diff_paths;
static int nr_diff_paths;

static void test_libdw_files(void **state)
{
	(void)state;
	for (int i = 0; i < nr_diff_paths; i++)
		diff_object(diff_paths[i]);
}

/* The unwinder test's chain, built without frame pointers: rsp-based rows only. */
static void test_libdw_chain(void **state)
{
	(void)state;
	diff_object(need_env("HC_UWCHAIN"));
}

static void test_libdw_fixture(void **state)
{
	(void)state;
	diff_object(need_env("HC_UWFIX"));
}

/* ---- hostile ---- */

struct section {
	uint8_t *buf;
	size_t len;
	uint64_t vaddr, lo, hi;
};

static bool load_eh_frame(const char *path, struct section *s)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	size_t shstrndx, nph;
	bool found = false;
	Elf *elf;

	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const char *name;

		assert_non_null(gelf_getshdr(scn, &sh));
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".eh_frame"))
			continue;
		data = elf_rawdata(scn, NULL);
		assert_non_null(data);
		s->buf = malloc(data->d_size);
		assert_non_null(s->buf);
		memcpy(s->buf, data->d_buf, data->d_size);
		s->len = data->d_size;
		s->vaddr = sh.sh_addr;
		found = true;
	}
	assert_int_equal(elf_getphdrnum(elf, &nph), 0);
	s->lo = UINT64_MAX;
	s->hi = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		assert_non_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			s->lo = ph.p_vaddr < s->lo ? ph.p_vaddr : s->lo;
			s->hi = ph.p_vaddr + ph.p_memsz > s->hi ? ph.p_vaddr + ph.p_memsz : s->hi;
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

static int compile_sec(const struct section *s, size_t len, const struct hc_uwtable_limits *lim,
		       struct hc_uwtable_stats *acc)
{
	struct hc_uwtable *t = (struct hc_uwtable *)1;
	int err = hc_uwtable__compile_mem(s->buf, len, s->vaddr, true, s->lo, s->hi, lim, &t, acc);

	if (err) {
		assert_null(t); /* nothing half-returned */
	} else {
		size_t n;
		const struct hc_urow *rows = hc_uwtable__rows(t, &n);

		check_sorted(rows, n);
	}
	hc_uwtable__free(err ? NULL : t);
	return err;
}

/* libc's .eh_frame cut at many lengths: a cut inside an entry is refused, never half-read. */
static void test_hostile_truncated(void **state)
{
	struct hc_uwtable_stats st = {0};
	struct section s = {0};
	uint64_t ok = 0, bad = 0;

	(void)state;
	if (!load_eh_frame(LIBC_PATH, &s))
		hc_skip("%s has no .eh_frame (or is missing)", LIBC_PATH);
	for (size_t len = 1; len < s.len; len += len < 512 ? 1 : 997 + len / 64) {
		int err = compile_sec(&s, len, NULL, &st);

		if (err == -EBADMSG)
			bad++;
		else if (!err || err == -ENODATA)
			ok++; /* a cut on an entry boundary is a valid, shorter section */
		else
			fail_msg("len %zu: unexpected %s", len, strerror(-err));
	}
	print_message("truncations: %" PRIu64 " refused, %" PRIu64 " on entry boundaries\n", bad,
		      ok);
	assert_true(bad > 10 * ok);
	assert_int_equal(st.refused, bad);
	/* and the whole section compiles */
	assert_int_equal(compile_sec(&s, s.len, NULL, &st), 0);
	/* limits: too few rows or FDEs allowed, too few instructions */
	assert_int_equal(compile_sec(&s, s.len, &(struct hc_uwtable_limits){.max_rows = 100}, &st),
			 -E2BIG);
	assert_int_equal(compile_sec(&s, s.len, &(struct hc_uwtable_limits){.max_fdes = 100}, &st),
			 -E2BIG);
	assert_int_equal(
		compile_sec(&s, s.len, &(struct hc_uwtable_limits){.max_insns = 1000}, &st),
		-E2BIG);
	assert_int_equal(st.refused, bad + 3);
	free(s.buf);
}

/*
 * A hand-made .eh_frame: one CIE ("zR", pcrel|sdata4, caf 1, daf -8, ra 16, CFA rsp+8, ra at
 * CFA-8) and FDEs of range `range` at 0x2000, 0x3000, ... with the given instructions.
 */
struct builder {
	uint8_t *buf;
	size_t len, cap;
};

static void put(struct builder *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2;
		b->buf = realloc(b->buf, b->cap);
		assert_non_null(b->buf);
	}
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

static void put32(struct builder *b, uint32_t v)
{
	put(b, &v, 4);
}

#define SEC_VADDR 0x1000u

static void put_cie(struct builder *b)
{
	static const uint8_t body[] = {0,
				       0,
				       0,
				       0, /* CIE id */
				       1,
				       'z',
				       'R',
				       0,
				       1,
				       0x78 /* -8 */,
				       16,
				       1,
				       0x1b,
				       DW_CFA_def_cfa,
				       7,
				       8,
				       DW_CFA_offset | 16,
				       1,
				       0,
				       0};

	put32(b, sizeof(body));
	put(b, body, sizeof(body));
}

/* cie_delta: added to the CIE pointer (0: the CIE at offset 0). */
static void put_fde(struct builder *b, uint32_t pc, uint32_t range, const uint8_t *insns, size_t n,
		    int32_t cie_delta)
{
	size_t start = b->len;
	uint32_t body = (uint32_t)(4 + 4 + 4 + 1 + n);
	int32_t rel;

	body = (body + 7) & ~7u; /* DW_CFA_nop padding */
	put32(b, body);
	put32(b, (uint32_t)(start + 4) + (uint32_t)cie_delta);
	rel = (int32_t)(pc - (SEC_VADDR + b->len));
	put32(b, (uint32_t)rel);
	put32(b, range);
	put(b, &(uint8_t){0}, 1); /* augmentation length */
	put(b, insns, n);
	while (b->len - start < body + 4)
		put(b, &(uint8_t){DW_CFA_nop}, 1);
}

static int compile_built(struct builder *b, const struct hc_uwtable_limits *lim,
			 struct hc_uwtable_stats *acc)
{
	struct hc_uwtable *t = NULL;
	int err;

	put32(b, 0); /* terminator */
	err = hc_uwtable__compile_mem(b->buf, b->len, SEC_VADDR, true, 0x2000, UINT32_MAX, lim, &t,
				      acc);
	if (err)
		assert_null(t);
	hc_uwtable__free(t);
	free(b->buf);
	*b = (struct builder){0};
	return err;
}

static void test_hostile_made(void **state)
{
	static const uint8_t push[] = {DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16};
	static const uint8_t bad_op[] = {DW_CFA_advance_loc | 1, 0x3f};
	static const uint8_t pop_empty[] = {DW_CFA_restore_state};
	static const uint8_t far[] = {DW_CFA_advance_loc4,   0xff, 0xff, 0xff, 0x7f,
				      DW_CFA_def_cfa_offset, 16};
	struct hc_uwtable_stats st = {0};
	struct builder b = {0};
	uint64_t want_refused = 0;
	uint8_t *many;
	size_t nmany = 1u << 20;

	(void)state;
	/* the well-formed baseline */
	put_cie(&b);
	put_fde(&b, 0x2000, 0x100, push, sizeof(push), 0);
	assert_int_equal(compile_built(&b, NULL, &st), 0);
	/* an advance far past the FDE's end only ends it */
	put_cie(&b);
	put_fde(&b, 0x2000, 0x100, far, sizeof(far), 0);
	assert_int_equal(compile_built(&b, NULL, &st), 0);
	/* a CIE pointer to the middle of the CIE, and one before the section */
	put_cie(&b);
	put_fde(&b, 0x2000, 0x100, push, sizeof(push), -4);
	assert_int_equal(compile_built(&b, NULL, &st), -EBADMSG), want_refused++;
	put_cie(&b);
	put_fde(&b, 0x2000, 0x100, push, sizeof(push), 0x1000);
	assert_int_equal(compile_built(&b, NULL, &st), -EBADMSG), want_refused++;
	/* an FDE outside the text, and overlapping FDEs */
	put_cie(&b);
	put_fde(&b, 0x1000, 0x100, push, sizeof(push), 0);
	assert_int_equal(compile_built(&b, NULL, &st), -EBADMSG), want_refused++;
	put_cie(&b);
	put_fde(&b, 0x2000, 0x100, push, sizeof(push), 0);
	put_fde(&b, 0x2080, 0x100, push, sizeof(push), 0);
	assert_int_equal(compile_built(&b, NULL, &st), -EBADMSG), want_refused++;
	/* an unknown opcode, restore_state on an empty stack */
	put_cie(&b);
	put_fde(&b, 0x2000, 0x100, bad_op, sizeof(bad_op), 0);
	assert_int_equal(compile_built(&b, NULL, &st), -EBADMSG), want_refused++;
	put_cie(&b);
	put_fde(&b, 0x2000, 0x100, pop_empty, sizeof(pop_empty), 0);
	assert_int_equal(compile_built(&b, NULL, &st), -EBADMSG), want_refused++;
	/* a remember stack 100 deep */
	many = malloc(nmany);
	assert_non_null(many);
	memset(many, DW_CFA_remember_state, 100);
	put_cie(&b);
	put_fde(&b, 0x2000, 0x100, many, 100, 0);
	assert_int_equal(compile_built(&b, NULL, &st), -E2BIG), want_refused++;
	/* a million advance_locs in one FDE: over the instructions per FDE */
	memset(many, DW_CFA_advance_loc | 1, nmany);
	put_cie(&b);
	put_fde(&b, 0x2000, 0x10000000, many, nmany, 0);
	assert_int_equal(compile_built(&b, NULL, &st), -E2BIG), want_refused++;
	/* rules that change at every byte: over the rows per FDE (not the instructions) */
	for (size_t i = 0; i + 3 <= 3 * 5000; i += 3) {
		many[i] = DW_CFA_advance_loc | 1;
		many[i + 1] = DW_CFA_def_cfa_offset;
		many[i + 2] = i / 3 % 2 ? 8 : 16;
	}
	put_cie(&b);
	put_fde(&b, 0x2000, 0x10000, many, 3 * 5000, 0);
	assert_int_equal(
		compile_built(&b, &(struct hc_uwtable_limits){.max_rows_per_fde = 4096}, &st),
		-E2BIG),
		want_refused++;
	put_cie(&b);
	put_fde(&b, 0x2000, 0x10000, many, 3 * 5000, 0);
	assert_int_equal(compile_built(&b, NULL, &st), 0);
	/* ... and a million that do not move: over the instructions per FDE */
	memset(many, DW_CFA_advance_loc, nmany);
	put_cie(&b);
	put_fde(&b, 0x2000, 0x10000000, many, nmany, 0);
	assert_int_equal(compile_built(&b, NULL, &st), -E2BIG), want_refused++;
	free(many);
	assert_int_equal(st.refused, want_refused);
	assert_int_equal(st.objects, 3);
}

/* ---- measure ---- */

static uint64_t text_bytes(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf_Scn *scn = NULL;
	uint64_t text = 0;
	size_t shstrndx;
	Elf *elf;

	if (fd < 0)
		return 0;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getshdrstrndx(elf, &shstrndx)) {
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			const char *name;

			if (gelf_getshdr(scn, &sh) &&
			    (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
			    !strcmp(name, ".text"))
				text = sh.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	return text;
}

static int measure(int argc, char **argv)
{
	elf_version(EV_CURRENT);
	for (int i = 0; i < argc; i++) {
		struct hc_uwtable_stats st = {0};
		struct hc_uwtable *t = NULL;
		int fd = open(argv[i], O_RDONLY | O_CLOEXEC), err;
		uint64_t t0, c0, best = UINT64_MAX, best_cpu = UINT64_MAX;
		uint64_t text = text_bytes(argv[i]);

		if (fd < 0) {
			printf("%s: %s\n", argv[i], strerror(errno));
			continue;
		}
		for (int rep = 0; rep < 5; rep++) {
			hc_uwtable__free(t);
			memset(&st, 0, sizeof(st));
			t0 = now_ns();
			c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
			err = hc_uwtable__compile_fd(fd, NULL, &t, &st);
			c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
			t0 = now_ns() - t0;
			best = t0 < best ? t0 : best;
			best_cpu = c0 < best_cpu ? c0 : best_cpu;
			if (err)
				break;
		}
		close(fd);
		if (err) {
			printf("%s: %s\n", argv[i], strerror(-err));
			continue;
		}
		printf("%s: .text %.2f MB, %" PRIu64 " FDEs, %" PRIu64 " rows (%" PRIu64
		       " merged, %" PRIu64 " gaps), %" PRIu64 " bytes, %.0f rows/MB of text, "
		       "compile %.2f ms wall, %.2f ms CPU (best of 5, file read included); "
		       "unsupported rows: cfa_reg %" PRIu64 " cfa_off %" PRIu64 " cfa_expr %" PRIu64
		       " ra %" PRIu64 "\n",
		       argv[i], text / 1e6, st.fdes, st.rows, st.rows_merged, st.gaps,
		       st.rows * (uint64_t)sizeof(struct hc_urow),
		       text ? st.rows / (text / 1e6) : 0, best / 1e6, best_cpu / 1e6,
		       st.unsupp[HC_URU_CFA_REG], st.unsupp[HC_URU_CFA_OFF],
		       st.unsupp[HC_URU_CFA_EXPR], st.unsupp[HC_URU_RA]);
		hc_uwtable__free(t);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest golden_tests[] = {
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_golden_debug_frame),
		cmocka_unit_test(test_elf_fddone),
		cmocka_unit_test(test_lookup),
	};
	const struct CMUnitTest libdw_tests[] = {
		cmocka_unit_test(test_libdw_fixture),
		cmocka_unit_test(test_libdw_libc),
		cmocka_unit_test(test_libdw_self),
		cmocka_unit_test(test_libdw_chain),
	};
	const struct CMUnitTest hostile_tests[] = {
		cmocka_unit_test(test_hostile_made),
		cmocka_unit_test(test_hostile_truncated),
	};

	elf_version(EV_CURRENT);
	if (argc >= 2 && !strcmp(argv[1], "measure"))
		return measure(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "diff")) {
		const struct CMUnitTest files[] = {cmocka_unit_test(test_libdw_files)};

		diff_paths = argv + 2;
		nr_diff_paths = argc - 2;
		return cmocka_run_group_tests(files, NULL, NULL);
	}
	if (argc == 2 && !strcmp(argv[1], "golden"))
		return cmocka_run_group_tests(golden_tests, NULL, NULL);
	if (argc == 2 && !strcmp(argv[1], "libdw")) {
		const char *ci = getenv("CI");

		/* meson's skip; under CI=true test_libdw_libc fails instead (tests/skip.h) */
		if (access(LIBC_PATH, R_OK) && !(ci && !strcmp(ci, "true"))) {
			printf("SKIP: %s: %s\n", LIBC_PATH, strerror(errno));
			return 77;
		}
		return cmocka_run_group_tests(libdw_tests, NULL, NULL);
	}
	if (argc == 2 && !strcmp(argv[1], "hostile"))
		return cmocka_run_group_tests(hostile_tests, NULL, NULL);
	fprintf(stderr, "usage: %s golden|libdw|hostile | measure FILE... | diff FILE...\n",
		argv[0]);
	return 2;
}
