// SPDX-License-Identifier: GPL-2.0-only
#include "store/dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"

int hc_dict__init(struct hc_dict *d)
{
	memset(d, 0, sizeof(*d));
	return -pthread_rwlock_init(&d->lock, NULL);
}

void hc_dict__release(struct hc_dict *d)
{
	pthread_rwlock_destroy(&d->lock);
	hc_interner__release(&d->strings);
	free(d->frames);
	free(d->tasks);
	free(d->stacks);
	free(d->frame_ix.slots);
	free(d->task_ix.slots);
	free(d->stack_ix.slots);
	memset(d, 0, sizeof(*d));
}

static uint64_t frame_hash(const struct hc_dict_frame *f)
{
	uint64_t k[5] = {(uintptr_t)f->name, (uintptr_t)f->module, f->id, (uint64_t)f->offset,
			 (uint64_t)f->kind << 1 | f->inlined};

	return hc_hash_words(k, 5, 0);
}

static bool frame_eq(const struct hc_dict_frame *a, const struct hc_dict_frame *b)
{
	return a->name == b->name && a->module == b->module && a->id == b->id &&
	       a->offset == b->offset && a->kind == b->kind && a->inlined == b->inlined;
}

static uint64_t task_hash(const struct hc_dict_task *t)
{
	uint64_t k[3] = {(uint64_t)t->pid << 32 | t->tid, (uintptr_t)t->process,
			 (uintptr_t)t->thread};

	return hc_hash_words(k, 3, 1);
}

static bool task_eq(const struct hc_dict_task *a, const struct hc_dict_task *b)
{
	return a->pid == b->pid && a->tid == b->tid && a->process == b->process &&
	       a->thread == b->thread;
}

static uint64_t stack_hash(const struct hc_dict_stack *s)
{
	return hc_hash_splitmix((uint64_t)s->parent << 32 | s->frame);
}

/* The hash of entry id (from 1) of table `which`: 0 frames, 1 tasks, 2 stacks. */
static uint64_t entry_hash(const struct hc_dict *d, int which, uint32_t id)
{
	if (which == 0)
		return frame_hash(&d->frames[id - 1]);
	if (which == 1)
		return task_hash(&d->tasks[id - 1]);
	return stack_hash(&d->stacks[id - 1]);
}

/* Room in ix for one more than the n entries it holds (<= 0.5 load), re-inserting ids 1..n
 * when it grows. */
static int index_grow(struct hc_dict *d, struct hc_dict_index *ix, int which, size_t n)
{
	size_t cap = ix->cap ? ix->cap : 1024;
	uint32_t *slots;

	while (cap < 2 * (n + 1))
		cap *= 2;
	if (cap == ix->cap)
		return 0;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 1; id <= n; id++) {
		size_t i = entry_hash(d, which, id) & (cap - 1);

		while (slots[i])
			i = (i + 1) & (cap - 1);
		slots[i] = id;
	}
	free(ix->slots);
	ix->slots = slots;
	ix->cap = cap;
	return 0;
}

int64_t hc_dict__frame(struct hc_dict *d, const struct hc_path_elem *e)
{
	struct hc_dict_frame f = {
		.id = e->id, .offset = e->offset, .kind = (uint8_t)e->kind, .inlined = e->inlined};
	uint64_t h;
	size_t i;

	if (!e->name || e->kind > HC_NODE_KIND_MAX)
		return -EINVAL;
	f.name = hc_interner__add_str(&d->strings, e->name);
	f.module = e->module ? hc_interner__add_str(&d->strings, e->module) : NULL;
	if (!f.name || (e->module && !f.module))
		return -ENOMEM;
	h = frame_hash(&f);
	for (i = d->frame_ix.cap ? h & (d->frame_ix.cap - 1) : 0;
	     d->frame_ix.cap && d->frame_ix.slots[i]; i = (i + 1) & (d->frame_ix.cap - 1))
		if (frame_eq(&d->frames[d->frame_ix.slots[i] - 1], &f))
			return d->frame_ix.slots[i];
	if (index_grow(d, &d->frame_ix, 0, d->n_frames))
		return -ENOMEM;
	pthread_rwlock_wrlock(&d->lock);
	if ((d->n_frames == d->cap_frames &&
	     hc_array_grow(d->frames, d->cap_frames, d->n_frames + 1, 1024)) ||
	    d->n_frames >= UINT32_MAX - 1) {
		pthread_rwlock_unlock(&d->lock);
		return -ENOMEM;
	}
	d->frames[d->n_frames++] = f;
	pthread_rwlock_unlock(&d->lock);
	for (i = h & (d->frame_ix.cap - 1); d->frame_ix.slots[i];
	     i = (i + 1) & (d->frame_ix.cap - 1))
		;
	d->frame_ix.slots[i] = (uint32_t)d->n_frames;
	return (int64_t)d->n_frames;
}

int64_t hc_dict__task(struct hc_dict *d, uint32_t pid, uint32_t tid, const char *process,
		      const char *thread)
{
	struct hc_dict_task t = {.pid = pid, .tid = tid};
	uint64_t h;
	size_t i;

	t.process = hc_interner__add_str(&d->strings, process ? process : "");
	t.thread = hc_interner__add_str(&d->strings, thread ? thread : "");
	if (!t.process || !t.thread)
		return -ENOMEM;
	h = task_hash(&t);
	for (i = d->task_ix.cap ? h & (d->task_ix.cap - 1) : 0;
	     d->task_ix.cap && d->task_ix.slots[i]; i = (i + 1) & (d->task_ix.cap - 1))
		if (task_eq(&d->tasks[d->task_ix.slots[i] - 1], &t))
			return d->task_ix.slots[i];
	if (index_grow(d, &d->task_ix, 1, d->n_tasks))
		return -ENOMEM;
	pthread_rwlock_wrlock(&d->lock);
	if ((d->n_tasks == d->cap_tasks &&
	     hc_array_grow(d->tasks, d->cap_tasks, d->n_tasks + 1, 256)) ||
	    d->n_tasks >= UINT32_MAX - 1) {
		pthread_rwlock_unlock(&d->lock);
		return -ENOMEM;
	}
	d->tasks[d->n_tasks++] = t;
	pthread_rwlock_unlock(&d->lock);
	for (i = h & (d->task_ix.cap - 1); d->task_ix.slots[i]; i = (i + 1) & (d->task_ix.cap - 1))
		;
	d->task_ix.slots[i] = (uint32_t)d->n_tasks;
	return (int64_t)d->n_tasks;
}

int64_t hc_dict__stack(struct hc_dict *d, uint32_t parent, uint32_t frame)
{
	struct hc_dict_stack s = {.parent = parent, .frame = frame};
	uint64_t h = stack_hash(&s);
	size_t i;

	if (!frame || frame > d->n_frames || parent > d->n_stacks)
		return -EINVAL;
	for (i = d->stack_ix.cap ? h & (d->stack_ix.cap - 1) : 0;
	     d->stack_ix.cap && d->stack_ix.slots[i]; i = (i + 1) & (d->stack_ix.cap - 1)) {
		const struct hc_dict_stack *o = &d->stacks[d->stack_ix.slots[i] - 1];

		if (o->parent == parent && o->frame == frame)
			return d->stack_ix.slots[i];
	}
	if (index_grow(d, &d->stack_ix, 2, d->n_stacks))
		return -ENOMEM;
	pthread_rwlock_wrlock(&d->lock);
	if ((d->n_stacks == d->cap_stacks &&
	     hc_array_grow(d->stacks, d->cap_stacks, d->n_stacks + 1, 4096)) ||
	    d->n_stacks >= UINT32_MAX - 1) {
		pthread_rwlock_unlock(&d->lock);
		return -ENOMEM;
	}
	d->stacks[d->n_stacks++] = s;
	pthread_rwlock_unlock(&d->lock);
	for (i = h & (d->stack_ix.cap - 1); d->stack_ix.slots[i];
	     i = (i + 1) & (d->stack_ix.cap - 1))
		;
	d->stack_ix.slots[i] = (uint32_t)d->n_stacks;
	return (int64_t)d->n_stacks;
}

size_t hc_dict__bytes(const struct hc_dict *d)
{
	return d->cap_frames * sizeof(*d->frames) + d->cap_tasks * sizeof(*d->tasks) +
	       d->cap_stacks * sizeof(*d->stacks) +
	       (d->frame_ix.cap + d->task_ix.cap + d->stack_ix.cap) * sizeof(uint32_t) +
	       d->strings.cap * 16 + d->strings.nr * 24;
}

void hc_dict__elem(const struct hc_dict *d, uint32_t frame, struct hc_path_elem *out)
{
	const struct hc_dict_frame *f = &d->frames[frame - 1];

	*out = (struct hc_path_elem){.kind = (enum hc_node_kind)f->kind,
				     .name = f->name,
				     .module = f->module,
				     .id = f->id,
				     .offset = f->offset,
				     .inlined = f->inlined};
}
