/* SPDX-License-Identifier: GPL-2.0-only */
/* Helpers shared by the files of profile/. Not part of the public API. */
#ifndef HOTCOLD_PROFILE_INTERNAL_H
#define HOTCOLD_PROFILE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "profile/tree.h"

/*
 * The sibling order of hc_tree__sort() and of the encoders: value descending, then name, id,
 * kind, module (NULL first), offset, inlined (real frames first). A total order over the children
 * of one node, because siblings differ in at least one of those fields.
 */
int hc__node_cmp(const struct hc_node *a, const struct hc_node *b);
/* qsort() adapter over an array of `const struct hc_node *`. */
int hc__node_ptr_cmp(const void *a, const void *b);

/*
 * Tree builder for callers that already know each node's inclusive weights (profile/store_query.c):
 * find or create the child of node index `parent` (0: the root) named by e and add w to that
 * node only, not to its ancestors. Returns the child's index (> 0), -EINVAL (bad parent or
 * element), -ENOMEM. Children keep the identity rule of hc_tree__add_path(): adding the same
 * element twice under one parent returns the same node (weights summed).
 */
int64_t hc__tree_add_child(struct hc_tree *tree, uint32_t parent, const struct hc_path_elem *e,
			   const struct hc_weights *w);
/* Add w to node idx only (0: the root). */
void hc__tree_add_weights(struct hc_tree *tree, uint32_t idx, const struct hc_weights *w);

/*
 * The name the exports (folded, pprof, speedscope) give an unresolved user frame whose place
 * is known (kind user, named "[unknown]", with a module and an offset >= 0):
 * "[unknown MODULE+0xOFF]", malloc'ed into *out. Returns 1 (*out set), 0 when n is not such a
 * frame (it shows under its own name; *out untouched), or -ENOMEM.
 */
int hc__unknown_frame_name(const struct hc_node *n, char **out);

/* Length of the well-formed UTF-8 sequence at s (n bytes available), 0 if ill-formed. */
size_t hc__utf8_seq_len(const unsigned char *s, size_t n);
/* s itself when it is valid UTF-8 (no allocation), else a malloc'ed copy with every invalid
 * byte replaced by U+FFFD; *len gets the length. NULL (ENOMEM) on failure. */
char *hc__utf8_sanitize(const char *s, size_t *len);

#endif
