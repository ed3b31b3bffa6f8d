/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A query's flame graph before pruning: nodes in creation order, each after its parent (so a
 * node's index is above its parent's), with the weights summed into each (self, not yet
 * inclusive). hc_qtree__emit() makes them inclusive, keeps the max_nodes heaviest (ties to
 * the lower index: a parent before its children, so what is kept stays connected) and writes
 * them into an hc_tree. The in-memory store's queries and the disk store's both build one.
 */
#ifndef HOTCOLD_PROFILE_QTREE_H
#define HOTCOLD_PROFILE_QTREE_H

#include <stddef.h>
#include <stdint.h>

#include "profile/store.h"
#include "profile/tree.h"
#include "profile/weights.h"

struct hc_qtree {
	uint32_t *key;	  /* node -> the caller's key for it (its element) */
	uint32_t *parent; /* node -> node; node 0 is the root */
	struct hc_weights *w;
	uint32_t n, cap;
};

/* An empty tree holding the root (node 0, key 0), with room for about hint nodes (0: a
 * few thousand; a guess: the room is address space until used): 0 or -ENOMEM. */
int hc_qtree__init(struct hc_qtree *q, size_t hint);
void hc_qtree__release(struct hc_qtree *q);
/* A new node under parent (< q->n) with zero weights: its index, or -ENOMEM. */
int64_t hc_qtree__add(struct hc_qtree *q, uint32_t parent, uint32_t key);

/* The element of node li (> 0), for the output tree; strings must outlive the call. */
typedef void (*hc_qtree_elem_fn)(const void *ctx, uint32_t li, uint32_t key,
				 struct hc_path_elem *out);

/*
 * The nodes with a weight into out (an empty tree), at most max_nodes of them with the root
 * (0: all); pruned (may be NULL) counts the rest and, among them, the value of those whose
 * parent was kept (what the kept nodes hold as self). Makes q's weights inclusive.
 */
int hc_qtree__emit(struct hc_qtree *q, size_t max_nodes, hc_qtree_elem_fn elem, const void *ctx,
		   struct hc_tree *out, struct hc_store_pruned *pruned);

#endif
