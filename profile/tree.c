// SPDX-License-Identifier: GPL-2.0-only
/*
 * hc_tree: the merged flame-graph tree.
 *
 * Nodes live in fixed-size chunks (stable addresses, addressed by a 32-bit index). A node is
 * identified under its parent by (kind, name, module, id, offset, inlined); names and modules
 * are interned in a tree-wide string pool, so equal strings share one pointer and identity
 * compares pointers. Child lookup goes through one tree-wide open-addressing table keyed by
 * (parent index, kind, inlined, name ptr, module ptr, id, offset), so a node with thousands of
 * children (a process with many threads, a dispatcher frame) costs O(1) per lookup. Each node
 * also keeps its children in a growable pointer array, for traversal and sorting.
 *
 * Memory per node: 96 bytes (struct hc_node) + 8..16 bytes in its parent's child array
 * (doubling) + 5.7..11.4 bytes of lookup slots (4-byte slots at 0.35..0.7 load), i.e. about
 * 110..125 bytes per node plus the distinct strings (length + 1 bytes, plus 16..45 bytes of
 * pool slots each). 200k nodes take about 25 MB.
 *
 * add_path() is all-or-nothing: every allocation it may need is made before the first node
 * is linked or any weight is added, so -ENOMEM leaves the tree as it was (except for strings
 * added to the pool, which are harmless).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/intern.h"
#include "profile/tree.h"
#include "profile/weights.h"
#include "profile/profile_internal.h"

struct hc_node {
	const char *name;   /* interned */
	const char *module; /* interned or NULL */
	uint64_t id;
	int64_t offset;
	struct hc_weights w; /* inclusive */
	struct hc_node **children;
	uint32_t n_children;
	uint32_t cap_children;
	uint32_t parent; /* index; the root's is its own (0) */
	uint32_t hash;	 /* low bits of the lookup hash, for rehashing */
	uint8_t kind;
	bool inlined;
};

#define NODE_CHUNK_SHIFT 12
#define NODE_CHUNK_SIZE (1u << NODE_CHUNK_SHIFT)
#define NODE_MAX ((size_t)UINT32_MAX - 1)

#define MIN_SLOTS 1024

struct hc_tree {
	struct hc_node **chunks;
	size_t n_chunks;
	size_t cap_chunks;
	size_t count;

	uint32_t *slots; /* node index + 1, 0 = empty; the root is never in the table */
	size_t n_slots;

	struct hc_interner strings; /* names and modules */
};

static inline struct hc_node *node_at(const struct hc_tree *tree, size_t idx)
{
	return &tree->chunks[idx >> NODE_CHUNK_SHIFT][idx & (NODE_CHUNK_SIZE - 1)];
}

/* The pool's copy of s, adding it if needed; NULL on -ENOMEM. */
static const char *str_intern(struct hc_tree *tree, const char *s)
{
	return hc_interner__add_str(&tree->strings, s);
}

/* ---- nodes ---- */

static uint64_t node_key_hash(uint32_t parent, const struct hc_path_elem *e)
{
	uint64_t key[5] = {
		((uint64_t)parent << 9) | ((uint64_t)e->inlined << 8) | (uint64_t)e->kind,
		(uint64_t)(uintptr_t)e->name,
		(uint64_t)(uintptr_t)e->module,
		e->id,
		(uint64_t)e->offset,
	};

	return hc_hash_words(key, 5, 0x686f74636f6c64ULL);
}

/* e->name and e->module must already be interned. Returns the index, or 0 (the root: never a
 * child) when absent; *slot gets the free slot where it would go. */
static uint32_t node_find(const struct hc_tree *tree, uint32_t parent, const struct hc_path_elem *e,
			  uint64_t h, size_t *slot)
{
	size_t mask = tree->n_slots - 1;
	size_t i;

	for (i = h & mask; tree->slots[i]; i = (i + 1) & mask) {
		uint32_t idx = tree->slots[i] - 1;
		const struct hc_node *n = node_at(tree, idx);

		if (n->hash == (uint32_t)h && n->parent == parent && n->kind == e->kind &&
		    n->name == e->name && n->module == e->module && n->id == e->id &&
		    n->offset == e->offset && n->inlined == e->inlined)
			return idx;
	}
	if (slot)
		*slot = i;
	return 0;
}

static int slots_grow(struct hc_tree *tree)
{
	size_t n = tree->n_slots * 2;
	uint32_t *slots;

	slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	/* node 0 is the root and is not in the table */
	for (size_t idx = 1; idx < tree->count; idx++) {
		size_t i;

		for (i = node_at(tree, idx)->hash & (n - 1); slots[i]; i = (i + 1) & (n - 1))
			;
		slots[i] = (uint32_t)(idx + 1);
	}
	free(tree->slots);
	tree->slots = slots;
	tree->n_slots = n;
	return 0;
}

/* Room for `more` nodes in the chunks and the lookup table. */
static int reserve_nodes(struct hc_tree *tree, size_t more)
{
	size_t need = tree->count + more;
	int err;

	if (more > NODE_MAX || need > NODE_MAX)
		return -ENOMEM;
	while (tree->n_chunks * NODE_CHUNK_SIZE < need) {
		if (tree->n_chunks == tree->cap_chunks &&
		    hc_array_grow(tree->chunks, tree->cap_chunks, tree->n_chunks + 1, 16))
			return -ENOMEM;
		tree->chunks[tree->n_chunks] = malloc(NODE_CHUNK_SIZE * sizeof(struct hc_node));
		if (!tree->chunks[tree->n_chunks])
			return -ENOMEM;
		tree->n_chunks++;
	}
	/* the root is not in the table: count - 1 + more entries, grow at 0.7 load */
	while (need * 10 > tree->n_slots * 7) {
		err = slots_grow(tree);
		if (err)
			return err;
	}
	return 0;
}

static int children_reserve(struct hc_node *n, uint32_t want)
{
	struct hc_node **c;
	uint32_t cap;

	if (want <= n->cap_children)
		return 0;
	cap = n->cap_children ? n->cap_children : 1;
	while (cap < want)
		cap = cap > UINT32_MAX / 2 ? UINT32_MAX : cap * 2;
	c = realloc(n->children, (size_t)cap * sizeof(*c));
	if (!c)
		return -ENOMEM;
	n->children = c;
	n->cap_children = cap;
	return 0;
}

struct hc_tree *hc_tree__new(void)
{
	struct hc_tree *tree;
	struct hc_node *root;

	tree = calloc(1, sizeof(*tree));
	if (!tree)
		goto err;
	tree->slots = calloc(MIN_SLOTS, sizeof(*tree->slots));
	if (!tree->slots)
		goto err_free_tree;
	tree->n_slots = MIN_SLOTS;
	if (reserve_nodes(tree, 1))
		goto err_free_all;

	root = node_at(tree, 0);
	memset(root, 0, sizeof(*root));
	root->kind = HC_NODE_ROOT;
	root->offset = -1;
	root->name = str_intern(tree, "all");
	if (!root->name)
		goto err_free_all;
	tree->count = 1;
	return tree;

err_free_all:
	hc_tree__free(tree);
	goto err;
err_free_tree:
	free(tree);
err:
	errno = ENOMEM;
	return NULL;
}

void hc_tree__free(struct hc_tree *tree)
{
	if (!tree)
		return;
	for (size_t idx = 0; idx < tree->count; idx++)
		free(node_at(tree, idx)->children);
	for (size_t i = 0; i < tree->n_chunks; i++)
		free(tree->chunks[i]);
	free(tree->chunks);
	free(tree->slots);
	hc_interner__release(&tree->strings);
	free(tree);
}

/* Interned copies of one path element. */
struct elem_ref {
	struct hc_path_elem e;
	uint64_t hash;
};

int hc_tree__add_path(struct hc_tree *tree, const struct hc_path_elem *path, size_t n,
		      const struct hc_weights *w)
{
	struct elem_ref stack_refs[64];
	struct elem_ref *refs = stack_refs;
	struct hc_node *parent, *node;
	uint32_t parent_idx = 0;
	size_t depth, slot, i;
	int err = 0;

	if (n && !path)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!path[i].name || path[i].kind <= HC_NODE_ROOT ||
		    path[i].kind > HC_NODE_KIND_MAX)
			return -EINVAL;
	}
	if (n > sizeof(stack_refs) / sizeof(stack_refs[0])) {
		refs = calloc(n, sizeof(*refs));
		if (!refs)
			return -ENOMEM;
	}

	/* 1. intern strings, walk the existing prefix */
	for (depth = 0; depth < n; depth++) {
		struct elem_ref *r = &refs[depth];
		uint32_t idx;

		r->e = path[depth];
		r->e.name = str_intern(tree, path[depth].name);
		r->e.module = path[depth].module ? str_intern(tree, path[depth].module) : NULL;
		if (!r->e.name || (path[depth].module && !r->e.module)) {
			err = -ENOMEM;
			goto out_free_refs;
		}
		r->hash = node_key_hash(parent_idx, &r->e);
		idx = node_find(tree, parent_idx, &r->e, r->hash, NULL);
		if (!idx)
			break;
		parent_idx = idx;
	}
	for (i = depth + 1; i < n; i++) {
		struct elem_ref *r = &refs[i];

		r->e = path[i];
		r->e.name = str_intern(tree, path[i].name);
		r->e.module = path[i].module ? str_intern(tree, path[i].module) : NULL;
		if (!r->e.name || (path[i].module && !r->e.module)) {
			err = -ENOMEM;
			goto out_free_refs;
		}
	}

	/* 2. reserve everything the new suffix [depth, n) needs */
	if (depth < n) {
		size_t first_new = tree->count;
		size_t more = n - depth;

		err = reserve_nodes(tree, more);
		if (err)
			goto out_free_refs;
		err = children_reserve(node_at(tree, parent_idx),
				       node_at(tree, parent_idx)->n_children + 1);
		if (err)
			goto out_free_refs;
		/* new nodes other than the last get a child array of one */
		for (i = 0; i + 1 < more; i++) {
			node = node_at(tree, first_new + i);
			memset(node, 0, sizeof(*node));
			node->children = malloc(sizeof(*node->children));
			if (!node->children) {
				while (i--)
					free(node_at(tree, first_new + i)->children);
				err = -ENOMEM;
				goto out_free_refs;
			}
			node->cap_children = 1;
		}
		memset(node_at(tree, first_new + more - 1), 0, sizeof(struct hc_node));

		/* 3. commit: link the new nodes, nothing can fail from here */
		for (i = depth; i < n; i++) {
			struct elem_ref *r = &refs[i];
			uint32_t idx = (uint32_t)tree->count++;

			if (i != depth)
				r->hash = node_key_hash(parent_idx, &r->e);
			node = node_at(tree, idx);
			node->kind = (uint8_t)r->e.kind;
			node->name = r->e.name;
			node->module = r->e.module;
			node->id = r->e.id;
			node->offset = r->e.offset;
			node->inlined = r->e.inlined;
			node->parent = parent_idx;
			node->hash = (uint32_t)r->hash;
			node_find(tree, parent_idx, &r->e, r->hash, &slot);
			tree->slots[slot] = idx + 1;
			parent = node_at(tree, parent_idx);
			parent->children[parent->n_children++] = node;
			parent_idx = idx;
		}
	}

	/* 4. add the weights along the path: parent_idx is now the last node */
	node = node_at(tree, parent_idx);
	for (;;) {
		hc_weights__add(&node->w, w);
		if (node == node_at(tree, 0))
			break;
		node = node_at(tree, node->parent);
	}

out_free_refs:
	if (refs != stack_refs)
		free(refs);
	return err;
}

size_t hc_tree__node_count(const struct hc_tree *tree)
{
	return tree->count;
}

const struct hc_node *hc_tree__root(const struct hc_tree *tree)
{
	return node_at(tree, 0);
}

enum hc_node_kind hc_node__kind(const struct hc_node *node)
{
	return (enum hc_node_kind)node->kind;
}

const char *hc_node__name(const struct hc_node *node)
{
	return node->name;
}

const char *hc_node__module(const struct hc_node *node)
{
	return node->module;
}

uint64_t hc_node__id(const struct hc_node *node)
{
	return node->id;
}

int64_t hc_node__offset(const struct hc_node *node)
{
	return node->offset;
}

bool hc_node__inlined(const struct hc_node *node)
{
	return node->inlined;
}

const struct hc_weights *hc_node__weights(const struct hc_node *node)
{
	return &node->w;
}

size_t hc_node__child_count(const struct hc_node *node)
{
	return node->n_children;
}

const struct hc_node *hc_node__child(const struct hc_node *node, size_t i)
{
	if (i >= node->n_children)
		return NULL;
	return node->children[i];
}

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

int hc__node_cmp(const struct hc_node *a, const struct hc_node *b)
{
	uint64_t va = hc_weights__value(&a->w), vb = hc_weights__value(&b->w);
	int r;

	if (va != vb)
		return va > vb ? -1 : 1;
	if (a->name != b->name) {
		r = strcmp(a->name, b->name);
		if (r)
			return r;
	}
	r = cmp_u64(a->id, b->id);
	if (r)
		return r;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->module != b->module) {
		if (!a->module || !b->module)
			return a->module ? 1 : -1;
		r = strcmp(a->module, b->module);
		if (r)
			return r;
	}
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	if (a->inlined != b->inlined)
		return a->inlined ? 1 : -1;
	return 0;
}

int hc__node_ptr_cmp(const void *a, const void *b)
{
	return hc__node_cmp(*(const struct hc_node *const *)a, *(const struct hc_node *const *)b);
}

void hc_tree__sort(struct hc_tree *tree)
{
	for (size_t idx = 0; idx < tree->count; idx++) {
		struct hc_node *n = node_at(tree, idx);

		if (n->n_children > 1)
			qsort(n->children, n->n_children, sizeof(*n->children), hc__node_ptr_cmp);
	}
}

/* ---- internal builder (profile_internal.h) ---- */

int64_t hc__tree_add_child(struct hc_tree *tree, uint32_t parent, const struct hc_path_elem *e,
			   const struct hc_weights *w)
{
	struct hc_path_elem ie;
	struct hc_node *node, *p;
	uint64_t h;
	uint32_t idx;
	size_t slot;
	int err;

	if (parent >= tree->count || !e->name || e->kind <= HC_NODE_ROOT ||
	    e->kind > HC_NODE_KIND_MAX)
		return -EINVAL;
	ie = *e;
	ie.name = str_intern(tree, e->name);
	ie.module = e->module ? str_intern(tree, e->module) : NULL;
	if (!ie.name || (e->module && !ie.module))
		return -ENOMEM;
	h = node_key_hash(parent, &ie);
	idx = node_find(tree, parent, &ie, h, NULL);
	if (idx) {
		hc_weights__add(&node_at(tree, idx)->w, w);
		return idx;
	}

	err = reserve_nodes(tree, 1);
	if (err)
		return err;
	p = node_at(tree, parent);
	err = children_reserve(p, p->n_children + 1);
	if (err)
		return err;
	/* the table may have grown: find the free slot again */
	node_find(tree, parent, &ie, h, &slot);
	idx = (uint32_t)tree->count++;
	node = node_at(tree, idx);
	memset(node, 0, sizeof(*node));
	node->kind = (uint8_t)ie.kind;
	node->name = ie.name;
	node->module = ie.module;
	node->id = ie.id;
	node->offset = ie.offset;
	node->inlined = ie.inlined;
	node->parent = parent;
	node->hash = (uint32_t)h;
	node->w = *w;
	tree->slots[slot] = idx + 1;
	p->children[p->n_children++] = node;
	return idx;
}

void hc__tree_add_weights(struct hc_tree *tree, uint32_t idx, const struct hc_weights *w)
{
	if (idx < tree->count)
		hc_weights__add(&node_at(tree, idx)->w, w);
}

const char *hc_node_kind__name(enum hc_node_kind kind)
{
	switch (kind) {
	case HC_NODE_ROOT:
		return "root";
	case HC_NODE_PROCESS:
		return "process";
	case HC_NODE_THREAD:
		return "thread";
	case HC_NODE_USER:
		return "user";
	case HC_NODE_KERNEL:
		return "kernel";
	case HC_NODE_WAKER:
		return "waker";
	case HC_NODE_LOCK:
		return "lock";
	}
	return "unknown";
}

int hc__unknown_frame_name(const struct hc_node *n, char **out)
{
	const char *module = hc_node__module(n);
	int64_t offset = hc_node__offset(n);

	if (hc_node__kind(n) != HC_NODE_USER || !module || offset < 0 ||
	    strcmp(hc_node__name(n), "[unknown]") != 0)
		return 0;
	if (asprintf(out, "[unknown %s+0x%" PRIx64 "]", module, (uint64_t)offset) < 0)
		return -ENOMEM;
	return 1;
}
