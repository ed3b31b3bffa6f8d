/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store/fold: the coarser tiers' small stacks (docs/store.md, "Small stacks"). A window of a
 * coarse tier holds, per thread, a flame graph; its nodes lighter than the tier's threshold
 * (on-CPU + blocked + run-queue ns in the window) are folded: their weights go to one
 * "[small stacks]" child of the nearest node above them that is at least the threshold (or of
 * the thread). That entry's stack is HC_FOLD_BIT | the kept node's stack id (0: the thread).
 * Totals, per thread and per kept node, stay exact to the ns.
 *
 * Internal to store/; one thread at a time (the writer's).
 */
#ifndef HOTCOLD_STORE_FOLD_H
#define HOTCOLD_STORE_FOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/blob.h"
#include "store/dict.h"

/* A stack id with this bit: "[small stacks]" under the stack of the other bits. Stack ids of
 * the dictionary stay below it (HC_DICT_STACK_ID_MAX). */
#define HC_FOLD_BIT (1u << 31)
/* The pseudo-frame's name. */
#define HC_FOLD_NAME "[small stacks]"

/* Where stack rows come from: the rows (lo, hi] around id, v[i] being row lo + 1 + i (valid
 * until the next call), 0; or -errno (the entries under that stack are then left as they
 * are). */
typedef int (*hc_fold_rows_fn)(void *arg, uint32_t id, uint32_t *lo, uint32_t *hi,
			       const struct hc_dict_stack **v);

struct hc_fold {
	hc_fold_rows_fn rows;
	void *arg;
	/* stack parents read so far, by spans of ids (lo, hi], ordered, disjoint: kept from
	 * one window to the next (a row never changes), up to a bound */
	struct hc_fold_span {
		uint32_t lo, hi;
		uint32_t *parent;
	} * spans;
	size_t n_spans, cap_spans, span_ids, last;
	/* one thread's nodes (a stack, or HC_FOLD_BIT | its stack) -> subtree weight; a slot
	 * is in use when its gen is the table's */
	struct hc_fold_node {
		uint32_t key, gen;
		uint64_t val;
	} * nodes;
	size_t n_nodes, cap_nodes;
	uint32_t gen;
	/* a blob's entries: their new stacks, their order by task */
	uint32_t *out, *order;
	size_t cap_out;
	bool moved;
	/* folded so far: entries (before merging) and their ns; entries left as they were
	 * because a row could not be read */
	uint64_t entries, ns, unreadable;
};

void hc__fold_init(struct hc_fold *f, hc_fold_rows_fn rows, void *arg);
/* Free a blob's scratch (the parents read and the counts stay). */
void hc__fold_forget(struct hc_fold *f);
void hc__fold_release(struct hc_fold *f);
/* Fold b's entries under below_ns (0: nothing). 0, -ENOMEM (b is then partly folded: drop
 * it). */
int hc__fold_blob(struct hc_fold *f, struct hc_blob *b, uint64_t below_ns);

#endif
