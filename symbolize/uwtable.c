// SPDX-License-Identifier: GPL-2.0-only
/*
 * Unwind tables: call frame information compiled into bpf/unwind.h rows (uwtable.h).
 *
 * Two passes. The first frames every entry with the shared walker (cfi.h, strict: lengths, CIE
 * ids, versions, augmentation strings and alignment factors, all bounded to the section) and
 * decodes each FDE's range with the CIE's pointer encoding. The second sorts the FDEs, refuses
 * overlaps, and interprets each FDE's instructions once, in order, after its CIE's initial ones,
 * emitting a row at every advance of the location: linear in the instructions, where asking
 * libdw for the frame at every row (dwarf_cfi_addrframe) would re-run the FDE each time.
 * libdw's per-pc evaluation is the test oracle instead (tests/symbolize/test_uwtable.c).
 */
#include "symbolize/uwtable.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "symbolize/cfi.h"
#include "symbolize/elfsym.h"

#define DEF_MAX_FDES (1u << 20)
/* gcc 12's lto-dump has a 122 KB function of ~6 600 distinct rows; the work per FDE is
 * bounded by its instructions anyway (a row needs an advance) */
#define DEF_MAX_ROWS_PER_FDE (1u << 16)
#define DEF_MAX_INSNS_PER_FDE (1u << 16)
#define DEF_MAX_INSNS (1ull << 26)
/* gcc nests .cfi_remember_state once or twice (early returns); deeper refuses the object. */
#define REMEMBER_MAX 16
/* Alignment padding of up to this many bytes after an FDE is folded into its last row. */
#define GAP_FOLD 15

/* Executable PT_LOAD segments an object may have (ld writes one, ld -z separate-code one). */
#define MAX_TEXT_RANGES 16

#define REG_BP 6
#define REG_SP 7

#define PE_ABSPTR 0x00 /* DW_EH_PE_absptr */

struct hc_uwtable {
	struct hc_urow *rows;
	size_t n;
	struct hc_uwtable_stats stats;
};

struct fde {
	uint64_t lo, hi;
	const uint8_t *insns, *insns_end;
	const struct hc_cfi_cie *cie;
};

enum rule_kind {
	R_SAME = 0, /* also "no rule" */
	R_UNDEF,
	R_OFFSET,
	R_VAL_OFFSET,
	R_REG,
	R_EXPR,
	R_VAL_EXPR,
};

struct rule {
	uint8_t kind;
	int64_t off;
};

enum cfa_kind { CFA_REG, CFA_EXPR, CFA_BAD };

struct state {
	uint8_t cfa_kind;
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *expr;
	size_t expr_len;
	struct rule bp, ra;
};

struct text_range {
	uint64_t lo, hi;
};

struct compiler {
	struct hc_cfi cfi;	       /* CIEs, stable once pass 1 is done */
	const struct text_range *text; /* every FDE lies inside one of these */
	size_t nr_text;
	struct hc_uwtable_limits lim;
	struct hc_cfi_raw_fde *raw;
	size_t nr_raw, cap_raw;
	struct fde *fdes;
	size_t nr_fdes;
	struct hc_urow *rows;
	size_t nr_rows, cap_rows;
	uint64_t insns, merged;
};

/* One FDE's interpretation. */
struct interp {
	struct compiler *c;
	const struct hc_cfi_cie *cie;
	struct state st, init;
	struct state stack[REMEMBER_MAX];
	unsigned depth;
	uint64_t loc, hi;
	size_t first_row; /* the table's row count when this FDE began */
	uint64_t insns;
};

static const char *const kind_names[HC_UR_KIND_MAX] = {
	[HC_UR_SP] = "sp",
	[HC_UR_BP] = "bp",
	[HC_UR_PLT] = "plt",
	[HC_UR_DEREF_SP] = "deref_sp",
	[HC_UR_DEREF_BP] = "deref_bp",
	[HC_UR_SIGNAL] = "signal",
	[HC_UR_STOP] = "stop",
	[HC_UR_GAP] = "gap",
	[HC_UR_UNSUPP] = "unsupp",
};

static const char *const unsupp_names[HC_URU_MAX] = {
	[HC_URU_CFA_REG] = "cfa_reg",
	[HC_URU_CFA_OFF] = "cfa_off",
	[HC_URU_CFA_EXPR] = "cfa_expr",
	[HC_URU_RA] = "ra",
};

const char *hc_urow_kind_name(unsigned kind)
{
	return kind < HC_UR_KIND_MAX ? kind_names[kind] : "?";
}

const char *hc_urow_unsupp_name(unsigned reason)
{
	return reason < HC_URU_MAX ? unsupp_names[reason] : "?";
}

/* ---- pass 1: frame the entries (the shared walker, strict) ---- */

static int frame_entries(struct compiler *c)
{
	struct hc_cfi_raw_fde raw;
	int r;

	while (!(r = hc_cfi__next_fde(&c->cfi, &raw))) {
		if (c->nr_raw >= c->lim.max_fdes)
			return -E2BIG;
		if (hc_array_grow(c->raw, c->cap_raw, c->nr_raw + 1, 64))
			return -ENOMEM;
		c->raw[c->nr_raw++] = raw;
	}
	return r == 1 ? 0 : r;
}

static bool in_text(const struct compiler *c, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < c->nr_text; i++)
		if (lo >= c->text[i].lo && hi <= c->text[i].hi)
			return true;
	return false;
}

/* initial_location and address_range with the CIE's encoding; empty ranges are dropped. */
static int decode_fde(struct compiler *c, const struct hc_cfi_raw_fde *r)
{
	struct hc_cfi_fde f;

	if (hc_cfi__decode_fde(&c->cfi, r, &f) || !f.insns)
		return -EBADMSG;
	if (f.lo == f.hi)
		return 0;
	if (!in_text(c, f.lo, f.hi))
		return -EBADMSG;
	c->fdes[c->nr_fdes++] = (struct fde){f.lo, f.hi, f.insns, f.insns_end, f.cie};
	return 0;
}

static int fde_cmp(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int decode_fdes(struct compiler *c)
{
	if (!c->nr_raw)
		return 0;
	c->fdes = calloc(c->nr_raw, sizeof(*c->fdes));
	if (!c->fdes)
		return -ENOMEM;
	for (size_t i = 0; i < c->nr_raw; i++) {
		int err = decode_fde(c, &c->raw[i]);

		if (err)
			return err;
	}
	qsort(c->fdes, c->nr_fdes, sizeof(*c->fdes), fde_cmp);
	for (size_t i = 1; i < c->nr_fdes; i++)
		if (c->fdes[i].lo < c->fdes[i - 1].hi)
			return -EBADMSG;
	return 0;
}

/* ---- pass 2: interpret, translate, emit ---- */

static int64_t scale(int64_t v, int64_t factor)
{
	int64_t r;

	/* a hostile factor saturates into an offset no row can express */
	return __builtin_mul_overflow(v, factor, &r) ? INT64_MAX : r;
}

static int64_t uscale(uint64_t v, int64_t factor)
{
	return v > INT64_MAX ? INT64_MAX : scale((int64_t)v, factor);
}

/* PLT: breg7 8; breg16 0; lit15; and; litT; ge; lit3; shl; plus (ld's .plt CFI). */
static bool match_plt(const uint8_t *e, size_t n, int16_t *t)
{
	static const uint8_t head[] = {DW_OP_breg7, 8, DW_OP_breg16, 0, DW_OP_lit15, DW_OP_and};
	static const uint8_t tail[] = {DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus};

	if (n != sizeof(head) + 1 + sizeof(tail) || memcmp(e, head, sizeof(head)) ||
	    memcmp(e + sizeof(head) + 1, tail, sizeof(tail)))
		return false;
	if (e[sizeof(head)] < DW_OP_lit0 || e[sizeof(head)] > DW_OP_lit31)
		return false;
	*t = (int16_t)(e[sizeof(head)] - DW_OP_lit0);
	return true;
}

/* breg6/breg7 N; deref (gcc's CFA after stack realignment). */
static bool match_deref(const uint8_t *e, size_t n, uint8_t *kind, int64_t *off)
{
	const uint8_t *p = e + 1, *end = e + n;

	if (n < 3 || (e[0] != DW_OP_breg6 && e[0] != DW_OP_breg7))
		return false;
	if (hc_cfi__read_sleb(&p, end, off) || p + 1 != end || *p != DW_OP_deref)
		return false;
	*kind = e[0] == DW_OP_breg6 ? HC_UR_DEREF_BP : HC_UR_DEREF_SP;
	return true;
}

static bool off_fits(int64_t off)
{
	return off % 8 == 0 && off / 8 >= INT16_MIN && off / 8 <= INT16_MAX;
}

static void translate_cfa(const struct state *s, struct hc_urow *r)
{
	uint8_t kind;
	int64_t off;
	int16_t t;

	r->kind = HC_UR_UNSUPP;
	if (s->cfa_kind == CFA_REG) {
		if (s->cfa_reg != REG_SP && s->cfa_reg != REG_BP) {
			r->off = HC_URU_CFA_REG;
		} else if (!off_fits(s->cfa_off)) {
			r->off = HC_URU_CFA_OFF;
		} else {
			r->kind = s->cfa_reg == REG_SP ? HC_UR_SP : HC_UR_BP;
			r->off = (int16_t)(s->cfa_off / 8);
		}
	} else if (s->cfa_kind == CFA_EXPR && match_plt(s->expr, s->expr_len, &t)) {
		r->kind = HC_UR_PLT;
		r->off = t;
	} else if (s->cfa_kind == CFA_EXPR && match_deref(s->expr, s->expr_len, &kind, &off)) {
		if (off_fits(off)) {
			r->kind = kind;
			r->off = (int16_t)(off / 8);
		} else {
			r->off = HC_URU_CFA_OFF;
		}
	} else {
		r->off = HC_URU_CFA_EXPR;
	}
}

static struct hc_urow translate(const struct state *s)
{
	struct hc_urow r = {0};

	if (s->ra.kind == R_UNDEF) {
		r.kind = HC_UR_STOP;
		return r;
	}
	if (s->ra.kind != R_OFFSET || s->ra.off != -8) {
		r.kind = HC_UR_UNSUPP;
		r.off = HC_URU_RA;
		return r;
	}
	translate_cfa(s, &r);
	if (r.kind == HC_UR_UNSUPP)
		return r;
	if (s->bp.kind == R_SAME)
		r.bp = 0;
	else if (s->bp.kind == R_OFFSET && s->bp.off < 0 && s->bp.off >= -8 * HC_URBP_MAX &&
		 s->bp.off % 8 == 0)
		r.bp = (uint8_t)(-s->bp.off / 8);
	else
		r.bp = HC_URBP_UNKNOWN;
	return r;
}

/* Append a row at pc, merged into the previous one when the rule is the same. */
static int emit(struct compiler *c, uint64_t pc, struct hc_urow r)
{
	struct hc_urow *last = c->nr_rows ? &c->rows[c->nr_rows - 1] : NULL;

	if (last && last->kind == r.kind && last->bp == r.bp && last->off == r.off) {
		c->merged++;
		return 0;
	}
	if (c->nr_rows >= c->lim.max_rows)
		return -E2BIG;
	if (hc_array_grow(c->rows, c->cap_rows, c->nr_rows + 1, 64))
		return -ENOMEM;
	r.pc = (uint32_t)pc; /* every text range ends below 2^32 (checked) */
	c->rows[c->nr_rows++] = r;
	return 0;
}

/* The rule of [loc, to) is final: emit it; 1 once the FDE's end is reached. */
static int move_to(struct interp *in, uint64_t to)
{
	int err;

	if (to < in->loc)
		return -EBADMSG;
	if (to == in->loc)
		return 0;
	err = emit(in->c, in->loc, translate(&in->st));
	if (err)
		return err;
	/* rows kept, not advances: many advances only change registers we ignore */
	if (in->c->nr_rows - in->first_row > in->c->lim.max_rows_per_fde)
		return -E2BIG;
	in->loc = to;
	return in->loc >= in->hi;
}

static int advance(struct interp *in, uint64_t delta)
{
	uint64_t d, to;

	if (__builtin_mul_overflow(delta, in->cie->caf, &d) ||
	    __builtin_add_overflow(in->loc, d, &to))
		to = UINT64_MAX;
	return move_to(in, to);
}

static struct rule *reg_rule(struct interp *in, uint64_t reg, struct rule *scratch)
{
	if (reg == in->cie->ra_reg)
		return &in->st.ra;
	if (reg == REG_BP)
		return &in->st.bp;
	return scratch; /* other registers are tracked only to be ignored */
}

static void set_rule(struct interp *in, uint64_t reg, uint8_t kind, int64_t off)
{
	struct rule scratch;
	struct rule *r = reg_rule(in, reg, &scratch);

	r->kind = kind;
	r->off = off;
	/* a register that is both (a hostile CIE's RA column 6) gets both rules */
	if (reg == REG_BP && reg == in->cie->ra_reg)
		in->st.bp = *r;
}

static void restore_reg(struct interp *in, uint64_t reg)
{
	if (reg == in->cie->ra_reg)
		in->st.ra = in->init.ra;
	if (reg == REG_BP)
		in->st.bp = in->init.bp;
}

static int read_block(const uint8_t **pp, const uint8_t *end, const uint8_t **blk, size_t *n)
{
	uint64_t len;

	if (hc_cfi__read_uleb(pp, end, &len) || len > (uint64_t)(end - *pp))
		return -EBADMSG;
	*blk = *pp;
	*n = (size_t)len;
	*pp += len;
	return 0;
}

static int cfa_reg_only(struct interp *in)
{
	/* def_cfa_register/_offset keep the other half of a register rule; after an expression
	 * there is none (libdw calls that invalid CFI): the rule becomes unrepresentable */
	if (in->st.cfa_kind != CFA_REG)
		in->st.cfa_kind = CFA_BAD;
	return in->st.cfa_kind == CFA_REG;
}

/* The DW_CFA_* opcodes without an operand in their low 6 bits. */
static int extended_op(struct interp *in, uint8_t op, const uint8_t **pp, const uint8_t *end,
		       bool in_cie)
{
	const struct hc_cfi_cie *k = in->cie;
	uint64_t reg, u, v;
	int64_t s;

	switch (op) {
	case DW_CFA_nop:
		return 0;
	case DW_CFA_set_loc:
		if (in_cie || hc_cfi__read_ptr(&in->c->cfi, pp, end,
					       in->c->cfi.eh ? k->ptr_enc : PE_ABSPTR, &u))
			return -EBADMSG;
		return move_to(in, u);
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
		/* a 1-, 2- or 4-byte delta */
		if (in_cie || hc_cfi__read_le(pp, end, 1u << (op - DW_CFA_advance_loc1), &u))
			return -EBADMSG;
		return advance(in, u);
	case DW_CFA_offset_extended:
		if (hc_cfi__read_uleb(pp, end, &reg) || hc_cfi__read_uleb(pp, end, &u))
			return -EBADMSG;
		set_rule(in, reg, R_OFFSET, uscale(u, k->daf));
		return 0;
	case DW_CFA_restore_extended:
		if (hc_cfi__read_uleb(pp, end, &reg))
			return -EBADMSG;
		restore_reg(in, reg);
		return 0;
	case DW_CFA_undefined:
	case DW_CFA_same_value:
		if (hc_cfi__read_uleb(pp, end, &reg))
			return -EBADMSG;
		set_rule(in, reg, op == DW_CFA_undefined ? R_UNDEF : R_SAME, 0);
		return 0;
	case DW_CFA_register:
		if (hc_cfi__read_uleb(pp, end, &reg) || hc_cfi__read_uleb(pp, end, &v))
			return -EBADMSG;
		set_rule(in, reg, R_REG, (int64_t)v);
		return 0;
	case DW_CFA_remember_state:
		if (in->depth >= REMEMBER_MAX)
			return -E2BIG;
		in->stack[in->depth++] = in->st;
		return 0;
	case DW_CFA_restore_state:
		if (!in->depth)
			return -EBADMSG;
		in->st = in->stack[--in->depth];
		return 0;
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
		if (hc_cfi__read_uleb(pp, end, &reg))
			return -EBADMSG;
		if (op == DW_CFA_def_cfa ? hc_cfi__read_uleb(pp, end, &u)
					 : hc_cfi__read_sleb(pp, end, &s))
			return -EBADMSG;
		in->st.cfa_kind = CFA_REG;
		in->st.cfa_reg = reg;
		in->st.cfa_off = op == DW_CFA_def_cfa ? (u > INT64_MAX ? INT64_MAX : (int64_t)u)
						      : scale(s, k->daf);
		return 0;
	case DW_CFA_def_cfa_register:
		if (hc_cfi__read_uleb(pp, end, &reg))
			return -EBADMSG;
		if (cfa_reg_only(in))
			in->st.cfa_reg = reg;
		return 0;
	case DW_CFA_def_cfa_offset:
		if (hc_cfi__read_uleb(pp, end, &u))
			return -EBADMSG;
		if (cfa_reg_only(in))
			in->st.cfa_off = u > INT64_MAX ? INT64_MAX : (int64_t)u;
		return 0;
	case DW_CFA_def_cfa_offset_sf:
		if (hc_cfi__read_sleb(pp, end, &s))
			return -EBADMSG;
		if (cfa_reg_only(in))
			in->st.cfa_off = scale(s, k->daf);
		return 0;
	case DW_CFA_def_cfa_expression:
		if (read_block(pp, end, &in->st.expr, &in->st.expr_len))
			return -EBADMSG;
		in->st.cfa_kind = CFA_EXPR;
		return 0;
	case DW_CFA_expression:
	case DW_CFA_val_expression: {
		const uint8_t *blk;
		size_t n;

		if (hc_cfi__read_uleb(pp, end, &reg) || read_block(pp, end, &blk, &n))
			return -EBADMSG;
		set_rule(in, reg, op == DW_CFA_expression ? R_EXPR : R_VAL_EXPR, 0);
		return 0;
	}
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
		if (hc_cfi__read_uleb(pp, end, &reg) || hc_cfi__read_sleb(pp, end, &s))
			return -EBADMSG;
		set_rule(in, reg, op == DW_CFA_offset_extended_sf ? R_OFFSET : R_VAL_OFFSET,
			 scale(s, k->daf));
		return 0;
	case DW_CFA_val_offset:
		if (hc_cfi__read_uleb(pp, end, &reg) || hc_cfi__read_uleb(pp, end, &u))
			return -EBADMSG;
		set_rule(in, reg, R_VAL_OFFSET, uscale(u, k->daf));
		return 0;
	case DW_CFA_GNU_args_size:
		return hc_cfi__read_uleb(pp, end, &u) ? -EBADMSG : 0;
	case DW_CFA_GNU_negative_offset_extended:
		if (hc_cfi__read_uleb(pp, end, &reg) || hc_cfi__read_uleb(pp, end, &u))
			return -EBADMSG;
		s = uscale(u, k->daf);
		set_rule(in, reg, R_OFFSET, s == INT64_MIN ? INT64_MAX : -s);
		return 0;
	default:
		return -EBADMSG;
	}
}

/* Run p[0..end); 1 when the FDE's end was reached (the rest cannot matter). */
static int run(struct interp *in, const uint8_t *p, const uint8_t *end, bool in_cie)
{
	struct compiler *c = in->c;
	uint64_t u;

	while (p < end) {
		uint8_t op = *p++;
		int err;

		if (++in->insns > c->lim.max_insns_per_fde || ++c->insns > c->lim.max_insns)
			return -E2BIG;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			err = in_cie ? -EBADMSG : advance(in, op & 0x3f);
			break;
		case DW_CFA_offset:
			err = hc_cfi__read_uleb(&p, end, &u) ? -EBADMSG : 0;
			if (!err)
				set_rule(in, op & 0x3f, R_OFFSET, uscale(u, in->cie->daf));
			break;
		case DW_CFA_restore:
			restore_reg(in, op & 0x3f);
			err = 0;
			break;
		default:
			err = extended_op(in, op, &p, end, in_cie);
			break;
		}
		if (err)
			return err;
	}
	return 0;
}

/* in: scratch reused across FDEs (its remember stack is 1 KiB: not zeroed per FDE) */
static int compile_fde(struct interp *in, const struct fde *f)
{
	int err;

	if (f->cie->signal) {
		/* the trampoline's registers are in the rt_sigframe, whatever its CFI says */
		struct hc_urow r = {.kind = HC_UR_SIGNAL};

		return emit(in->c, f->lo, r);
	}
	in->cie = f->cie;
	/* the x86-64 ABI's state before any instruction, as libdw's: CFA rsp+8, ra at CFA-8;
	 * also what a DW_CFA_restore among the CIE's own instructions goes back to */
	in->st = (struct state){.cfa_kind = CFA_REG, .cfa_reg = REG_SP, .cfa_off = 8};
	in->st.ra = (struct rule){R_OFFSET, -8};
	in->init = in->st;
	in->depth = 0;
	in->first_row = in->c->nr_rows;
	in->insns = 0;
	in->loc = f->lo;
	in->hi = f->hi;
	err = run(in, f->cie->insns, f->cie->insns_end, true);
	if (err)
		return err;
	in->init = in->st;
	in->depth = 0; /* a CIE's remembered states are not the FDE's */
	err = run(in, f->insns, f->insns_end, false);
	if (err == 1)
		return 0;
	if (!err && in->loc < in->hi && (err = move_to(in, in->hi)) > 0)
		err = 0;
	return err;
}

static int compile_all(struct compiler *c)
{
	struct hc_urow gap = {.kind = HC_UR_GAP};
	struct interp *in = malloc(sizeof(*in));
	int err = 0;

	if (!in)
		return -ENOMEM;
	in->c = c;
	for (size_t i = 0; !err && i < c->nr_fdes; i++) {
		const struct fde *f = &c->fdes[i];

		err = compile_fde(in, f);
		if (!err && (i + 1 == c->nr_fdes || c->fdes[i + 1].lo - f->hi > GAP_FOLD))
			err = emit(c, f->hi, gap);
	}
	free(in);
	return err;
}

static void set_limits(struct hc_uwtable_limits *l, const struct hc_uwtable_limits *in)
{
	*l = in ? *in : (struct hc_uwtable_limits){0};
	if (!l->max_rows || l->max_rows > HC_UROWS_MAX)
		l->max_rows = HC_UROWS_MAX;
	if (!l->max_fdes)
		l->max_fdes = DEF_MAX_FDES;
	if (!l->max_rows_per_fde)
		l->max_rows_per_fde = DEF_MAX_ROWS_PER_FDE;
	if (!l->max_insns_per_fde)
		l->max_insns_per_fde = DEF_MAX_INSNS_PER_FDE;
	if (!l->max_insns)
		l->max_insns = DEF_MAX_INSNS;
}

static void add_stats(struct hc_uwtable_stats *acc, const struct hc_uwtable_stats *s)
{
	acc->objects += s->objects;
	acc->refused += s->refused;
	acc->fdes += s->fdes;
	acc->insns += s->insns;
	acc->rows += s->rows;
	acc->rows_merged += s->rows_merged;
	acc->gaps += s->gaps;
	for (int i = 0; i < HC_URU_MAX; i++)
		acc->unsupp[i] += s->unsupp[i];
}

static int finish(struct compiler *c, struct hc_uwtable **out, struct hc_uwtable_stats *acc)
{
	struct hc_uwtable *t = calloc(1, sizeof(*t));
	struct hc_urow *shrunk;

	if (!t)
		return -ENOMEM;
	/* give back the doubling's slack: tables live as long as their object is mapped */
	shrunk = c->nr_rows ? realloc(c->rows, c->nr_rows * sizeof(*c->rows)) : NULL;
	t->rows = shrunk ? shrunk : c->rows;
	c->rows = NULL;
	t->n = c->nr_rows;
	t->stats.objects = 1;
	t->stats.fdes = c->nr_fdes;
	t->stats.insns = c->insns;
	t->stats.rows = t->n;
	t->stats.rows_merged = c->merged;
	for (size_t i = 0; i < t->n; i++) {
		if (t->rows[i].kind == HC_UR_GAP)
			t->stats.gaps++;
		else if (t->rows[i].kind == HC_UR_UNSUPP && t->rows[i].off >= 0 &&
			 t->rows[i].off < HC_URU_MAX)
			t->stats.unsupp[t->rows[i].off]++;
	}
	if (acc)
		add_stats(acc, &t->stats);
	*out = t;
	return 0;
}

static int count_refused(int err, struct hc_uwtable_stats *acc)
{
	if (acc && (err == -EBADMSG || err == -E2BIG))
		acc->refused++;
	return err;
}

static int compile(const void *sec, size_t len, uint64_t sec_vaddr, bool eh_frame,
		   const struct text_range *text, size_t nr_text,
		   const struct hc_uwtable_limits *lim, struct hc_uwtable **out,
		   struct hc_uwtable_stats *acc)
{
	struct compiler c = {
		.text = text,
		.nr_text = nr_text,
	};
	int err;

	*out = NULL;
	if (!sec || !len)
		return -ENODATA;
	if (len > HC_UWTABLE_SECTION_MAX)
		return count_refused(-E2BIG, acc);
	for (size_t i = 0; i < nr_text; i++) {
		if (text[i].hi > UINT32_MAX)
			return count_refused(-E2BIG, acc);
		if (text[i].lo >= text[i].hi)
			return count_refused(-EBADMSG, acc);
	}
	set_limits(&c.lim, lim);
	/* linkers share CIEs: more CIEs than allowed FDEs is a hostile section */
	hc_cfi__init(&c.cfi, sec, len, sec_vaddr, eh_frame, NULL, c.lim.max_fdes, true);
	err = frame_entries(&c);
	if (!err)
		err = decode_fdes(&c);
	if (!err)
		err = c.nr_fdes ? compile_all(&c) : -ENODATA;
	if (!err)
		err = finish(&c, out, acc);
	free(c.rows);
	free(c.fdes);
	free(c.raw);
	hc_cfi__fini(&c.cfi);
	return count_refused(err, acc);
}

int hc_uwtable__compile_mem(const void *sec, size_t len, uint64_t sec_vaddr, bool eh_frame,
			    uint64_t text_lo, uint64_t text_hi, const struct hc_uwtable_limits *lim,
			    struct hc_uwtable **out, struct hc_uwtable_stats *acc)
{
	struct text_range text = {text_lo, text_hi};

	return compile(sec, len, sec_vaddr, eh_frame, &text, 1, lim, out, acc);
}

/* The executable PT_LOAD segments. */
static int text_ranges(Elf *elf, struct text_range *text, size_t *nr)
{
	size_t nph;

	*nr = 0;
	if (elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) || !ph.p_memsz)
			continue;
		if (ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			return -EBADMSG;
		if (*nr == MAX_TEXT_RANGES)
			return -E2BIG;
		text[(*nr)++] = (struct text_range){ph.p_vaddr, ph.p_vaddr + ph.p_memsz};
	}
	return *nr ? 0 : -ENODATA;
}

/* .eh_frame, else .debug_frame (which only a few hand-built objects carry alone). */
static Elf_Scn *cfi_section(Elf *elf, bool *eh)
{
	Elf_Scn *eh_frame, *debug_frame;

	if (hc_cfi__sections(elf, &eh_frame, &debug_frame))
		return NULL;
	*eh = eh_frame != NULL;
	return eh_frame ? eh_frame : debug_frame;
}

int hc_uwtable__compile_elf(Elf *elf, const struct hc_uwtable_limits *lim, struct hc_uwtable **out,
			    struct hc_uwtable_stats *acc)
{
	struct text_range text[MAX_TEXT_RANGES];
	Elf_Data *data;
	size_t nr_text;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Scn *scn;
	bool is_eh;
	int err;

	*out = NULL;
	if (!elf || !gelf_getehdr(elf, &eh) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_X86_64)
		return -ENOEXEC;
	err = text_ranges(elf, text, &nr_text);
	if (err)
		return count_refused(err, acc);
	scn = cfi_section(elf, &is_eh);
	if (!scn || !gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED))
		return -ENODATA;
	if (sh.sh_size > HC_UWTABLE_SECTION_MAX)
		return count_refused(-E2BIG, acc);
	data = elf_rawdata(scn, NULL);
	if (!data || !data->d_buf || data->d_size != sh.sh_size)
		return count_refused(-EBADMSG, acc);
	return compile(data->d_buf, data->d_size, sh.sh_addr, is_eh, text, nr_text, lim, out, acc);
}

int hc_uwtable__compile_fd(int fd, const struct hc_uwtable_limits *lim, struct hc_uwtable **out,
			   struct hc_uwtable_stats *acc)
{
	Elf *elf = hc_elf_open_fd(fd);
	int err;

	*out = NULL;
	if (!elf)
		return -ENOEXEC;
	err = hc_uwtable__compile_elf(elf, lim, out, acc);
	elf_end(elf);
	return err;
}

const struct hc_urow *hc_uwtable__rows(const struct hc_uwtable *t, size_t *n)
{
	*n = t->n;
	return t->rows;
}

void hc_uwtable__stats(const struct hc_uwtable *t, struct hc_uwtable_stats *s)
{
	*s = t->stats;
}

void hc_uwtable__free(struct hc_uwtable *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}
