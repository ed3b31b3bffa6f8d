// SPDX-License-Identifier: GPL-2.0-only
/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json; the types are
 * speedscope's src/lib/file-format-spec.ts): `shared.frames` [{name, file?}] and one profile of
 * type "sampled" per thread, whose `samples` are stacks of frame indices, outermost first (the
 * importer walks each stack from the root of its call tree down), with one weight each.
 *
 * Mapping from the tree:
 *  - one profile per thread node, named `COMM (pid N) / THREAD (tid N)`; a process's own self
 *    time (and frames hung directly under it) go to a profile `COMM (pid N)`, the root's own
 *    self time to `[no process]` (with an empty stack). Profiles are sorted heaviest first
 *    (then by name), so activeProfileIndex 0 is the busiest thread;
 *  - one sample per node with selected self time (its selected value minus its children's),
 *    so the weights of all profiles add up to the root's selected value; nodes without self
 *    time add no sample. Samples of a profile are in depth-first order, children heaviest
 *    first (as the JSON encoder orders them), so speedscope's time-order view reads as a
 *    left-heavy flame graph;
 *  - subtrees with no selected weight are skipped, so every frame listed is used;
 *  - frames as in folded output (profile.h), without its `;` replacement and `_[k]` suffix:
 *    unresolved user frames with a module and offset are `[unknown MODULE+0xOFF]`, a waker is
 *    the frame `--` followed by a frame named after the waker. `file` is the module for user
 *    frames that have one, the module or `[kernel.kallsyms]` for kernel frames. Frames are
 *    interned by (name, file). An inlined frame (a function the compiler inlined into the frame
 *    above it) is named `NAME (inlined)`: speedscope has no field for it, and the name keeps
 *    it apart from its out-of-line namesake. A process or thread node below the first frame
 *    of a path (never produced by record or serve) is a frame named after it.
 *
 * Memory: the tree is walked once into compact arrays (8 bytes per frame node for the parent
 * links, 16 per sample, ~40 per distinct frame), then streamed out through profile/jstream.h,
 * which leaves every string to jansson and writes the integers and punctuation itself.
 * Building the samples as jansson arrays would cost ~1.6 KB per value. The walk is iterative,
 * so there is no depth limit. Measured on a 200k-node tree (bench on a loaded 2-CPU VM): 55 ms
 * and +4 MB peak for 10k samples (a 1.5 MB file); 100-120 ms and +7.6 MB when every node has
 * self time (200k samples, 15 MB); write_json takes 120-250 ms for the same trees.
 *
 * Names and files are repaired to UTF-8 (U+FFFD) by the JSON writer, as in the JSON encoder.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "profile/jstream.h"
#include "profile/weights.h"
#include "profile/tree.h"
#include "profile/profile.h"
#include "profile/encode.h"
#include "profile/profile_internal.h"

#define SS_SCHEMA "https://www.speedscope.app/file-format-schema.json"
#define SS_KERNEL_FILE "[kernel.kallsyms]"
#define SS_INLINED " (inlined)" /* the suffix of an inlined frame's name */
#define NONE UINT32_MAX
#define MIN_SLOTS 64

struct ss_frame {
	const char *name; /* borrowed from the tree, or owned (name_owned) */
	const char *file; /* borrowed from the tree or a literal; NULL: none */
	uint64_t hash;
	bool name_owned;
};

/* One frame on a path: the parent link (NONE: the first frame of a profile) and the frame. */
struct ss_link {
	uint32_t parent;
	uint32_t frame;
};

struct ss_sample {
	uint32_t link; /* the stack's innermost frame, NONE for an empty stack */
	uint32_t profile;
	uint64_t weight_ns;
};

struct ss_profile {
	const struct hc_node *proc; /* NULL: none */
	const struct hc_node *thr;  /* NULL: none */
	uint64_t total_ns;
	size_t n_samples;
	size_t first; /* into the sorted sample order */
	char *name;
};

/* A node still to visit, with the profile context and the frame path above it. */
struct ss_todo {
	const struct hc_node *n;
	const struct hc_node *proc;
	const struct hc_node *thr;
	uint32_t link;
};

struct speedscope {
	unsigned int weights;

	struct ss_frame *frames;
	size_t n_frames, cap_frames;
	uint32_t *frame_slots; /* frame index + 1, 0: empty */
	size_t n_frame_slots;
	uint32_t dash; /* the "--" frame, NONE until a waker needs it */

	struct ss_link *links;
	size_t n_links, cap_links;

	struct ss_sample *samples;
	size_t n_samples, cap_samples;

	struct ss_profile *profiles;
	size_t n_profiles, cap_profiles;
	uint32_t *profile_slots; /* profile index + 1, 0: empty */
	size_t n_profile_slots;

	struct ss_todo *todo;
	size_t n_todo, cap_todo;
};

/* Grow *arr (of *cap elements of size) to hold at least need. -ENOMEM. */
static int grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;
	void *a;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / size)
			return -ENOMEM;
		n *= 2;
	}
	a = realloc(*arr, n * size);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = n;
	return 0;
}

static uint64_t frame_hash(const char *name, const char *file)
{
	uint64_t h = hc_hash_fnv1a(HC_FNV1A_OFFSET, name, strlen(name));

	/* a value no byte has keeps ("ab", "c") from ("a", "bc") */
	h = (h ^ (file ? 0x100 : 0x200)) * HC_FNV1A_PRIME;
	if (file)
		h = hc_hash_fnv1a(h, file, strlen(file));
	return hc_hash_mix(h);
}

static bool str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static int frame_slots_grow(struct speedscope *ss)
{
	size_t n = ss->n_frame_slots ? ss->n_frame_slots * 2 : MIN_SLOTS;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t f = 0; f < ss->n_frames; f++) {
		size_t i;

		for (i = ss->frames[f].hash & (n - 1); slots[i]; i = (i + 1) & (n - 1))
			;
		slots[i] = (uint32_t)f + 1;
	}
	free(ss->frame_slots);
	ss->frame_slots = slots;
	ss->n_frame_slots = n;
	return 0;
}

/*
 * The index of frame (name, file), added if new. Takes ownership of name when name_owned (it
 * is freed at once if the frame already exists). < 0: -ENOMEM (name freed as well).
 */
static int64_t frame_intern(struct speedscope *ss, char *name, bool name_owned, const char *file)
{
	uint64_t h = frame_hash(name, file);
	struct ss_frame *f;
	size_t i, mask;

	if ((ss->n_frames + 1) * 10 > ss->n_frame_slots * 7 && frame_slots_grow(ss))
		goto err_free;
	mask = ss->n_frame_slots - 1;
	for (i = h & mask; ss->frame_slots[i]; i = (i + 1) & mask) {
		f = &ss->frames[ss->frame_slots[i] - 1];
		if (f->hash == h && strcmp(f->name, name) == 0 && str_eq(f->file, file)) {
			if (name_owned)
				free(name);
			return ss->frame_slots[i] - 1;
		}
	}
	if (ss->n_frames >= NONE - 1 ||
	    grow((void **)&ss->frames, &ss->cap_frames, ss->n_frames + 1, sizeof(*ss->frames)))
		goto err_free;
	f = &ss->frames[ss->n_frames];
	*f = (struct ss_frame){.name = name, .file = file, .hash = h, .name_owned = name_owned};
	ss->frame_slots[i] = (uint32_t)++ss->n_frames;
	return (int64_t)ss->n_frames - 1;

err_free:
	if (name_owned)
		free(name);
	return -ENOMEM;
}

/* An inlined frame's name: "NAME (inlined)", malloc'ed (consumes owned when true). */
static char *inlined_name(const char *name, bool owned)
{
	size_t len = strlen(name);
	char *s = malloc(len + sizeof(SS_INLINED));

	if (s) {
		memcpy(s, name, len);
		memcpy(s + len, SS_INLINED, sizeof(SS_INLINED));
	}
	if (owned)
		free((char *)name);
	return s;
}

/* The frame a tree node shows as (not for the root, nor the waker's "--"). */
static int64_t node_frame(struct speedscope *ss, const struct hc_node *n)
{
	const char *name = hc_node__name(n), *module = hc_node__module(n);
	char *unknown = NULL, *inl;
	int r;

	switch (hc_node__kind(n)) {
	case HC_NODE_KERNEL:
	case HC_NODE_USER:
		if (!module && hc_node__kind(n) == HC_NODE_KERNEL)
			module = SS_KERNEL_FILE;
		r = hc_node__kind(n) == HC_NODE_USER ? hc__unknown_frame_name(n, &unknown) : 0;
		if (r < 0)
			return r;
		if (hc_node__inlined(n)) {
			inl = inlined_name(r ? unknown : name, r);
			return inl ? frame_intern(ss, inl, true, module) : -ENOMEM;
		}
		if (r)
			return frame_intern(ss, unknown, true, module);
		return frame_intern(ss, (char *)name, false, module);
	default:
		return frame_intern(ss, (char *)name, false, NULL);
	}
}

/* A link below parent; its index, or < 0 (-ENOMEM). */
static int64_t add_link(struct speedscope *ss, uint32_t parent, int64_t frame)
{
	if (frame < 0)
		return frame;
	if (ss->n_links >= NONE - 1 ||
	    grow((void **)&ss->links, &ss->cap_links, ss->n_links + 1, sizeof(*ss->links)))
		return -ENOMEM;
	ss->links[ss->n_links] = (struct ss_link){.parent = parent, .frame = (uint32_t)frame};
	return (int64_t)ss->n_links++;
}

static uint64_t ptr_hash(const void *a, const void *b)
{
	uint64_t x = (uint64_t)(uintptr_t)a * HC_HASH_GOLDEN;

	return hc_hash_mix(x ^ (uint64_t)(uintptr_t)b);
}

static int profile_slots_grow(struct speedscope *ss)
{
	size_t n = ss->n_profile_slots ? ss->n_profile_slots * 2 : MIN_SLOTS;
	uint32_t *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t p = 0; p < ss->n_profiles; p++) {
		size_t i = ptr_hash(ss->profiles[p].proc, ss->profiles[p].thr) & (n - 1);

		for (; slots[i]; i = (i + 1) & (n - 1))
			;
		slots[i] = (uint32_t)p + 1;
	}
	free(ss->profile_slots);
	ss->profile_slots = slots;
	ss->n_profile_slots = n;
	return 0;
}

/* `COMM (pid N) / THREAD (tid N)`, either part alone, or `[no process]`. */
static char *profile_name(const struct hc_node *proc, const struct hc_node *thr)
{
	char *s = NULL;
	int r;

	if (proc && thr)
		r = asprintf(&s, "%s (pid %" PRIu64 ") / %s (tid %" PRIu64 ")", hc_node__name(proc),
			     hc_node__id(proc), hc_node__name(thr), hc_node__id(thr));
	else if (proc)
		r = asprintf(&s, "%s (pid %" PRIu64 ")", hc_node__name(proc), hc_node__id(proc));
	else if (thr)
		r = asprintf(&s, "[no process] / %s (tid %" PRIu64 ")", hc_node__name(thr),
			     hc_node__id(thr));
	else
		r = asprintf(&s, "[no process]");
	return r < 0 ? NULL : s;
}

/* The profile of (proc, thr), added if new; < 0 -ENOMEM. */
static int64_t profile_of(struct speedscope *ss, const struct hc_node *proc,
			  const struct hc_node *thr)
{
	size_t mask, i;
	struct ss_profile *p;

	if ((ss->n_profiles + 1) * 10 > ss->n_profile_slots * 7 && profile_slots_grow(ss))
		return -ENOMEM;
	mask = ss->n_profile_slots - 1;
	for (i = ptr_hash(proc, thr) & mask; ss->profile_slots[i]; i = (i + 1) & mask) {
		p = &ss->profiles[ss->profile_slots[i] - 1];
		if (p->proc == proc && p->thr == thr)
			return ss->profile_slots[i] - 1;
	}
	if (ss->n_profiles >= NONE - 1 || grow((void **)&ss->profiles, &ss->cap_profiles,
					       ss->n_profiles + 1, sizeof(*ss->profiles)))
		return -ENOMEM;
	p = &ss->profiles[ss->n_profiles];
	*p = (struct ss_profile){.proc = proc, .thr = thr, .name = profile_name(proc, thr)};
	if (!p->name)
		return -ENOMEM;
	ss->profile_slots[i] = (uint32_t)++ss->n_profiles;
	return (int64_t)ss->n_profiles - 1;
}

static int add_sample(struct speedscope *ss, const struct hc_node *proc, const struct hc_node *thr,
		      uint32_t link, uint64_t weight_ns)
{
	int64_t prof = profile_of(ss, proc, thr);

	if (prof < 0)
		return (int)prof;
	if (grow((void **)&ss->samples, &ss->cap_samples, ss->n_samples + 1, sizeof(*ss->samples)))
		return -ENOMEM;
	ss->samples[ss->n_samples++] =
		(struct ss_sample){.link = link, .profile = (uint32_t)prof, .weight_ns = weight_ns};
	ss->profiles[prof].total_ns += weight_ns;
	ss->profiles[prof].n_samples++;
	return 0;
}

/* Reversed sibling order: children pushed and sorted with it pop heaviest first. */
static int todo_rev_cmp(const void *a, const void *b)
{
	return hc__node_cmp(((const struct ss_todo *)b)->n, ((const struct ss_todo *)a)->n);
}

/* Visit one node: its frames, its self time, and its children onto the to-do stack. */
static int visit(struct speedscope *ss, const struct ss_todo *t)
{
	const struct hc_node *n = t->n, *proc = t->proc, *thr = t->thr;
	uint64_t self = hc_weights__select(hc_node__weights(n), ss->weights), kids = 0;
	size_t nc = hc_node__child_count(n), base;
	int64_t link = t->link;

	/* nothing selected at or below: no sample, and no frames that no sample would use */
	if (!self)
		return 0;
	switch (hc_node__kind(n)) {
	case HC_NODE_ROOT:
		break;
	case HC_NODE_PROCESS:
		if (!proc && !thr && link == NONE) {
			proc = n;
			break;
		}
		link = add_link(ss, (uint32_t)link, node_frame(ss, n));
		break;
	case HC_NODE_THREAD:
		if (!thr && link == NONE) {
			thr = n;
			break;
		}
		link = add_link(ss, (uint32_t)link, node_frame(ss, n));
		break;
	case HC_NODE_WAKER:
		if (ss->dash == NONE) {
			int64_t d = frame_intern(ss, (char *)"--", false, NULL);

			if (d < 0)
				return (int)d;
			ss->dash = (uint32_t)d;
		}
		link = add_link(ss, (uint32_t)link, ss->dash);
		if (link < 0)
			return (int)link;
		link = add_link(ss, (uint32_t)link, node_frame(ss, n));
		break;
	case HC_NODE_USER:
	case HC_NODE_KERNEL:
	case HC_NODE_LOCK:
		link = add_link(ss, (uint32_t)link, node_frame(ss, n));
		break;
	}
	if (link < 0)
		return (int)link;

	if (grow((void **)&ss->todo, &ss->cap_todo, ss->n_todo + nc, sizeof(*ss->todo)))
		return -ENOMEM;
	base = ss->n_todo;
	for (size_t i = 0; i < nc; i++) {
		const struct hc_node *c = hc_node__child(n, i);

		kids += hc_weights__select(hc_node__weights(c), ss->weights);
		ss->todo[ss->n_todo++] =
			(struct ss_todo){.n = c, .proc = proc, .thr = thr, .link = (uint32_t)link};
	}
	if (nc > 1)
		qsort(ss->todo + base, nc, sizeof(*ss->todo), todo_rev_cmp);
	/* values are inclusive, so kids <= self; saturate rather than wrap if that broke */
	self = self > kids ? self - kids : 0;
	if (self)
		return add_sample(ss, proc, thr, (uint32_t)link, self);
	return 0;
}

static int walk(struct speedscope *ss, const struct hc_node *root)
{
	int err;

	if (grow((void **)&ss->todo, &ss->cap_todo, 1, sizeof(*ss->todo)))
		return -ENOMEM;
	ss->todo[ss->n_todo++] = (struct ss_todo){.n = root, .link = NONE};
	while (ss->n_todo) {
		struct ss_todo t = ss->todo[--ss->n_todo];

		err = visit(ss, &t);
		if (err)
			return err;
	}
	return 0;
}

/* Heaviest profile first, then by name, then the order profiles were met (their address). */
static int profile_rank_cmp(const void *a, const void *b)
{
	const struct ss_profile *pa = *(const struct ss_profile *const *)a;
	const struct ss_profile *pb = *(const struct ss_profile *const *)b;
	int r;

	if (pa->total_ns != pb->total_ns)
		return pa->total_ns > pb->total_ns ? -1 : 1;
	r = strcmp(pa->name, pb->name);
	if (r)
		return r;
	return pa < pb ? -1 : pa > pb;
}

static void write_stack(struct jstream *js, const struct speedscope *ss, uint32_t link,
			uint32_t **scratch, size_t *cap)
{
	size_t n = 0;

	for (uint32_t l = link; l != NONE; l = ss->links[l].parent) {
		if (grow((void **)scratch, cap, n + 1, sizeof(**scratch))) {
			if (!js->err)
				js->err = -ENOMEM;
			return;
		}
		(*scratch)[n++] = ss->links[l].frame;
	}
	JSTREAM_LIT(js, "[");
	while (n--) {
		jstream_u64(js, (*scratch)[n]);
		if (n)
			JSTREAM_LIT(js, ",");
	}
	JSTREAM_LIT(js, "]");
}

static void write_profile(struct jstream *js, const struct speedscope *ss,
			  const struct ss_profile *p, const uint32_t *order, uint32_t **scratch,
			  size_t *cap)
{
	const uint32_t *s = order + p->first;

	JSTREAM_LIT(js, "{\"type\":\"sampled\",\"name\":");
	jstream_str(js, p->name);
	JSTREAM_LIT(js, ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":");
	jstream_u64(js, p->total_ns);
	JSTREAM_LIT(js, ",\"samples\":[");
	for (size_t i = 0; i < p->n_samples && !js->err; i++) {
		if (i)
			JSTREAM_LIT(js, ",");
		write_stack(js, ss, ss->samples[s[i]].link, scratch, cap);
	}
	JSTREAM_LIT(js, "],\"weights\":[");
	for (size_t i = 0; i < p->n_samples && !js->err; i++) {
		if (i)
			JSTREAM_LIT(js, ",");
		jstream_u64(js, ss->samples[s[i]].weight_ns);
	}
	JSTREAM_LIT(js, "]}");
}

/* The file's name: the host and the weights exported. */
static char *file_name(const struct hc_profile *p, unsigned int weights)
{
	char what[64] = "";
	char *s = NULL;

	if (weights & HC_W_ON)
		strcat(what, ", on-CPU");
	if (weights & HC_W_OFF)
		strcat(what, ", off-CPU");
	if (weights & HC_W_RUNQ)
		strcat(what, ", run queue");
	if (asprintf(&s, "hotcold%s%s (%s)", p->host ? " " : "", p->host ? p->host : "",
		     what[0] ? what + 2 : "no weights") < 0)
		return NULL;
	return s;
}

static int write_file(const struct hc_profile *p, struct speedscope *ss, FILE *out)
{
	struct jstream js = {.out = out};
	struct ss_profile **rank = NULL;
	uint32_t *order = NULL, *scratch = NULL;
	size_t scratch_cap = 0, pos = 0;
	struct ss_profile empty = {0};
	char *name;

	name = file_name(p, ss->weights);
	rank = calloc(ss->n_profiles + 1, sizeof(*rank));
	order = calloc(ss->n_samples + 1, sizeof(*order));
	if (!name || !rank || !order) {
		js.err = -ENOMEM;
		goto out_free;
	}

	/* Profiles heaviest first; samples grouped by profile, in walk order (a counting sort). */
	for (size_t i = 0; i < ss->n_profiles; i++)
		rank[i] = &ss->profiles[i];
	qsort(rank, ss->n_profiles, sizeof(*rank), profile_rank_cmp);
	for (size_t r = 0; r < ss->n_profiles; r++) {
		rank[r]->first = pos;
		pos += rank[r]->n_samples;
	}
	{
		size_t *fill = calloc(ss->n_profiles + 1, sizeof(*fill));

		if (!fill) {
			js.err = -ENOMEM;
			goto out_free;
		}
		for (size_t i = 0; i < ss->n_samples; i++) {
			uint32_t prof = ss->samples[i].profile;

			order[ss->profiles[prof].first + fill[prof]++] = (uint32_t)i;
		}
		free(fill);
	}

	JSTREAM_LIT(&js, "{\"$schema\":\"" SS_SCHEMA "\",\"shared\":{\"frames\":[");
	for (size_t f = 0; f < ss->n_frames && !js.err; f++) {
		if (f)
			JSTREAM_LIT(&js, ",");
		JSTREAM_LIT(&js, "{\"name\":");
		jstream_value(&js, jstr(ss->frames[f].name));
		if (ss->frames[f].file) {
			JSTREAM_LIT(&js, ",\"file\":");
			jstream_value(&js, jstr(ss->frames[f].file));
		}
		JSTREAM_LIT(&js, "}");
	}
	JSTREAM_LIT(&js, "]},\"profiles\":[");
	if (!ss->n_profiles) {
		/* activeProfileIndex must name a profile: an empty one when nothing was selected */
		empty.name = "[no samples]";
		write_profile(&js, ss, &empty, order, &scratch, &scratch_cap);
	}
	for (size_t r = 0; r < ss->n_profiles && !js.err; r++) {
		if (r)
			JSTREAM_LIT(&js, ",");
		write_profile(&js, ss, rank[r], order, &scratch, &scratch_cap);
	}
	JSTREAM_LIT(&js, "],\"name\":");
	jstream_value(&js, jstr(name));
	JSTREAM_LIT(&js, ",\"activeProfileIndex\":0,\"exporter\":\"hotcold\"}\n");

out_free:
	free(scratch);
	free(order);
	free(rank);
	free(name);
	return jstream_finish(&js);
}

static void speedscope_free(struct speedscope *ss)
{
	for (size_t i = 0; i < ss->n_frames; i++) {
		if (ss->frames[i].name_owned)
			free((char *)ss->frames[i].name);
	}
	for (size_t i = 0; i < ss->n_profiles; i++)
		free(ss->profiles[i].name);
	free(ss->frames);
	free(ss->frame_slots);
	free(ss->links);
	free(ss->samples);
	free(ss->profiles);
	free(ss->profile_slots);
	free(ss->todo);
}

int hc_profile__write_speedscope(const struct hc_profile *p, unsigned int weights, FILE *out)
{
	struct speedscope ss = {.weights = weights, .dash = NONE};
	int err;

	if (!p || !p->tree || !out)
		return -EINVAL;
	err = walk(&ss, hc_tree__root(p->tree));
	free(ss.todo);
	ss.todo = NULL;
	if (!err)
		err = write_file(p, &ss, out);
	speedscope_free(&ss);
	return err;
}
