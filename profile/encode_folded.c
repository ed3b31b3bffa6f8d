// SPDX-License-Identifier: GPL-2.0-only
/*
 * flamegraph.pl folded stacks (see profile.h and docs/profile-schema.md).
 *
 * Gather, then render: walk the tree once, building one (path, self value) line per node with
 * self time; thread nodes add nothing to the path, so threads of one process, and processes of
 * the same name, produce equal lines; sort the lines and sum equal neighbours; print.
 *
 * The walk recurses once per tree level (paths are ~260 levels deep at most); trees deeper
 * than HC_FOLDED_MAX_TREE_DEPTH are refused with -EOVERFLOW, which bounds the C stack use.
 * Name bytes other than ';', '\n' and '\r' are written as they are (no UTF-8 repair).
 * A node with self time but no frame on its path (the root, which holds the time of the nodes
 * serve prunes; a thread hung right under the root) prints as a line named after itself:
 * "all 123", pprof's stand-in frame for the same sample. So the lines always add up to the
 * root's selected value.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "profile/weights.h"
#include "profile/tree.h"
#include "profile/profile.h"
#include "profile/encode.h"
#include "profile/profile_internal.h"

#define HC_FOLDED_MAX_TREE_DEPTH 1000

struct sbuf {
	char *s;
	size_t len;
	size_t cap;
};

struct folded_line {
	char *text;
	uint64_t value;
};

struct folded {
	unsigned int weights;
	struct sbuf path;
	struct folded_line *lines;
	size_t n_lines;
	size_t cap_lines;
};

static int sbuf_reserve(struct sbuf *b, size_t more)
{
	size_t cap;
	char *s;

	if (b->len + more + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	s = realloc(b->s, cap);
	if (!s)
		return -ENOMEM;
	b->s = s;
	b->cap = cap;
	return 0;
}

/* Appends s with ';', '\n' and '\r' replaced by '_'. */
static int sbuf_add_name(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	if (sbuf_reserve(b, n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		b->s[b->len++] = (c == ';' || c == '\n' || c == '\r') ? '_' : c;
	}
	b->s[b->len] = '\0';
	return 0;
}

static int sbuf_add_raw(struct sbuf *b, const char *s)
{
	size_t n = strlen(s);

	if (sbuf_reserve(b, n))
		return -ENOMEM;
	memcpy(b->s + b->len, s, n + 1);
	b->len += n;
	return 0;
}

static int add_frame(struct sbuf *b, const struct hc_node *n)
{
	const char *name = hc_node__name(n);
	char *unknown = NULL;
	int err;

	if (b->len && sbuf_add_raw(b, ";"))
		return -ENOMEM;
	switch (hc_node__kind(n)) {
	case HC_NODE_KERNEL:
		if (sbuf_add_name(b, name) || sbuf_add_raw(b, "_[k]"))
			return -ENOMEM;
		return 0;
	case HC_NODE_USER:
		err = hc__unknown_frame_name(n, &unknown);
		if (err < 0)
			return err;
		err = sbuf_add_name(b, err ? unknown : name);
		free(unknown);
		/* flamegraph.pl's mark of an inlined function (its java palette colours it) */
		if (!err && hc_node__inlined(n))
			err = sbuf_add_raw(b, "_[i]");
		return err;
	case HC_NODE_WAKER:
		/* offwaketime's separator between the blocked stack and its waker */
		if (sbuf_add_raw(b, "--;") || sbuf_add_name(b, name))
			return -ENOMEM;
		return 0;
	case HC_NODE_LOCK:
		/* "[lock rwsem:W mmap_lock]": a pseudo-frame, as "[unknown]" is one */
		if (sbuf_add_raw(b, "[lock ") || sbuf_add_name(b, name) || sbuf_add_raw(b, "]"))
			return -ENOMEM;
		return 0;
	default:
		return sbuf_add_name(b, name);
	}
}

static int add_line(struct folded *f, uint64_t value)
{
	struct folded_line *l;

	if (f->n_lines == f->cap_lines &&
	    hc_array_grow(f->lines, f->cap_lines, f->n_lines + 1, 256))
		return -ENOMEM;
	l = &f->lines[f->n_lines];
	l->text = strndup(f->path.s ? f->path.s : "", f->path.len);
	if (!l->text)
		return -ENOMEM;
	l->value = value;
	f->n_lines++;
	return 0;
}

static int walk(struct folded *f, const struct hc_node *n, unsigned int depth)
{
	size_t saved_len = f->path.len, nc = hc_node__child_count(n);
	uint64_t self = hc_weights__select(hc_node__weights(n), f->weights), kids = 0;
	enum hc_node_kind kind = hc_node__kind(n);
	int err = 0;

	if (depth > HC_FOLDED_MAX_TREE_DEPTH)
		return -EOVERFLOW;
	if (kind == HC_NODE_PROCESS || kind == HC_NODE_USER || kind == HC_NODE_KERNEL ||
	    kind == HC_NODE_WAKER || kind == HC_NODE_LOCK) {
		err = add_frame(&f->path, n);
		if (err)
			goto out_restore;
	}
	for (size_t i = 0; i < nc; i++) {
		const struct hc_node *c = hc_node__child(n, i);

		kids += hc_weights__select(hc_node__weights(c), f->weights);
		err = walk(f, c, depth + 1);
		if (err)
			goto out_restore;
	}
	/* values are inclusive, so kids <= self; saturate rather than wrap if that broke */
	self = self > kids ? self - kids : 0;
	if (self) {
		/* no frame above: the line is named after the node, as pprof's stand-in frame */
		if (!f->path.len)
			err = sbuf_add_name(&f->path, hc_node__name(n));
		if (!err)
			err = add_line(f, self);
	}

out_restore:
	f->path.len = saved_len;
	if (f->path.s)
		f->path.s[saved_len] = '\0';
	return err;
}

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

int hc_profile__write_folded(const struct hc_profile *p, unsigned int weights, FILE *out)
{
	struct folded f = {.weights = weights};
	size_t i, j;
	int err;

	if (!p || !p->tree)
		return -EINVAL;
	err = walk(&f, hc_tree__root(p->tree), 0);
	if (err)
		goto out_free;

	if (f.n_lines > 1)
		qsort(f.lines, f.n_lines, sizeof(*f.lines), line_cmp);
	/* Sum equal neighbours into the first of them before printing anything, so that a
	 * refusal leaves no output. Lines never add up to more than the root's value, a u64,
	 * unless a node's children are worth more than it (which no builder makes). */
	for (i = 0; i < f.n_lines; i = j) {
		for (j = i + 1; j < f.n_lines && !strcmp(f.lines[i].text, f.lines[j].text); j++) {
			if (__builtin_add_overflow(f.lines[i].value, f.lines[j].value,
						   &f.lines[i].value)) {
				err = -EOVERFLOW;
				goto out_free;
			}
		}
	}
	errno = 0;
	for (i = 0; i < f.n_lines; i = j) {
		if (fprintf(out, "%s %" PRIu64 "\n", f.lines[i].text, f.lines[i].value) < 0) {
			err = errno ? -errno : -EIO;
			goto out_free;
		}
		for (j = i + 1; j < f.n_lines && !strcmp(f.lines[i].text, f.lines[j].text); j++)
			;
	}
	if (fflush(out) || ferror(out))
		err = errno ? -errno : -EIO;

out_free:
	for (i = 0; i < f.n_lines; i++)
		free(f.lines[i].text);
	free(f.lines);
	free(f.path.s);
	return err;
}
