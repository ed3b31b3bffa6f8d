/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hc_tree: the merged on/off-CPU flame graph: root -> process -> thread -> user frames
 * (outermost first) -> kernel frames. Values are inclusive, in nanoseconds. Strings passed in
 * are copied (interned) by the tree; returned pointers are borrowed and live as long as the
 * tree.
 */
#ifndef HOTCOLD_PROFILE_TREE_H
#define HOTCOLD_PROFILE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/weights.h"

enum hc_node_kind {
	HC_NODE_ROOT = 0,
	HC_NODE_PROCESS, /* name = process comm, id = pid (tgid) */
	HC_NODE_THREAD,	 /* name = thread comm, id = tid */
	HC_NODE_USER,	 /* a user frame */
	HC_NODE_KERNEL,	 /* a kernel frame */
	HC_NODE_WAKER,	 /* who woke a blocked path: name = waker thread comm, id = waker tid,
			  * offset = waker pid (tgid); the waker's frames, if taken, follow */
	HC_NODE_LOCK,	 /* --locks: the kernel lock a blocked path waited for, after its kernel
			  * frames: name = its kind ("rwsem:W"), then its name when known */
};
#define HC_NODE_KIND_MAX HC_NODE_LOCK

/* JSON `kind` strings: "root", "process", "thread", "user", "kernel", "waker", "lock". */
const char *hc_node_kind__name(enum hc_node_kind kind);

/* One step of a path from the root. Two steps name the same node when kind, name, module,
 * id, offset and inlined are all equal. */
struct hc_path_elem {
	enum hc_node_kind kind;
	const char *name;   /* never NULL: unresolved frames are named "[unknown]" */
	const char *module; /* NULL when none (e.g. vmlinux, process/thread nodes) */
	uint64_t id;	    /* process: pid; thread: tid; frames: 0 */
	int64_t offset;	    /* unresolved user frames: offset into module; otherwise -1 */
	/* Frames only: a function the compiler inlined into the frame before it (from DWARF).
	 * An inlined frame and a real frame of the same name are different nodes. */
	bool inlined;
};

struct hc_node; /* opaque */
struct hc_tree;

struct hc_tree *hc_tree__new(void);
void hc_tree__free(struct hc_tree *tree);
/* Add w to the root and to every node on the path (creating nodes as needed). -ENOMEM. */
int hc_tree__add_path(struct hc_tree *tree, const struct hc_path_elem *path, size_t n,
		      const struct hc_weights *w);
size_t hc_tree__node_count(const struct hc_tree *tree); /* including the root */
const struct hc_node *hc_tree__root(const struct hc_tree *tree);

/* Read-only traversal. Children are in insertion order until hc_tree__sort() is called. */
enum hc_node_kind hc_node__kind(const struct hc_node *node);
const char *hc_node__name(const struct hc_node *node);
const char *hc_node__module(const struct hc_node *node);
uint64_t hc_node__id(const struct hc_node *node);
int64_t hc_node__offset(const struct hc_node *node);
bool hc_node__inlined(const struct hc_node *node);
const struct hc_weights *hc_node__weights(const struct hc_node *node);
size_t hc_node__child_count(const struct hc_node *node);
const struct hc_node *hc_node__child(const struct hc_node *node, size_t i);
/* Sort every node's children by value, descending, ties by name: deterministic output. */
void hc_tree__sort(struct hc_tree *tree);

#endif
