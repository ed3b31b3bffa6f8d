// SPDX-License-Identifier: GPL-2.0-only
#include "store/dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"

#define INDEX_MIN_SLOTS 1024
#define STRING_BYTES 24 /* hc_interner's copy of an average name, its chunk share included */

static uint64_t frame_hash(const void *e)
{
	const struct hc_dict_frame *f = e;
	uint64_t k[5] = {(uintptr_t)f->name, (uintptr_t)f->module, f->id, (uint64_t)f->offset,
			 (uint64_t)f->kind << 1 | f->inlined};

	return hc_hash_words(k, 5, 0);
}

static bool frame_eq(const void *x, const void *y)
{
	const struct hc_dict_frame *a = x, *b = y;

	return a->name == b->name && a->module == b->module && a->id == b->id &&
	       a->offset == b->offset && a->kind == b->kind && a->inlined == b->inlined;
}

static uint64_t task_hash(const void *e)
{
	const struct hc_dict_task *t = e;
	uint64_t k[3] = {(uint64_t)t->pid << 32 | t->tid, (uintptr_t)t->process,
			 (uintptr_t)t->thread};

	return hc_hash_words(k, 3, 1);
}

static bool task_eq(const void *x, const void *y)
{
	const struct hc_dict_task *a = x, *b = y;

	return a->pid == b->pid && a->tid == b->tid && a->process == b->process &&
	       a->thread == b->thread;
}

static uint64_t stack_hash(const void *e)
{
	const struct hc_dict_stack *s = e;

	return hc_hash_splitmix((uint64_t)s->parent << 32 | s->frame);
}

static bool stack_eq(const void *x, const void *y)
{
	const struct hc_dict_stack *a = x, *b = y;

	return a->parent == b->parent && a->frame == b->frame;
}

/* What differs between the three tables: everything else is one path. */
static const struct table_ops {
	size_t size, min_cap;
	uint64_t (*hash)(const void *e);
	bool (*eq)(const void *a, const void *b);
} ops[HC_DICT_TABLES] = {
	[HC_DICT_FRAMES] = {sizeof(struct hc_dict_frame), 1024, frame_hash, frame_eq},
	[HC_DICT_TASKS] = {sizeof(struct hc_dict_task), 256, task_hash, task_eq},
	[HC_DICT_STACKS] = {sizeof(struct hc_dict_stack), 4096, stack_hash, stack_eq},
};

static void *entry_at(const struct hc_dict_tab *t, enum hc_dict_table which, size_t i)
{
	return (char *)t->v + i * ops[which].size;
}

struct hc_dict *hc_dict__new(uint64_t epoch, const uint32_t base[HC_DICT_TABLES])
{
	struct hc_dict *d = calloc(1, sizeof(*d));
	int err;

	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	err = pthread_rwlock_init(&d->lock, NULL);
	if (err) {
		free(d);
		errno = err;
		return NULL;
	}
	d->epoch = epoch;
	for (int i = 0; i < HC_DICT_TABLES; i++)
		d->t[i].base = base[i];
	return d;
}

void hc_dict__free(struct hc_dict *d)
{
	if (!d)
		return;
	pthread_rwlock_destroy(&d->lock);
	hc_interner__release(&d->strings);
	for (int i = 0; i < HC_DICT_TABLES; i++) {
		free(d->t[i].v);
		free(d->t[i].ix.slots);
		free(d->t[i].alias.slots);
	}
	free(d);
}

/* The index's slot count for n entries: at most half full. */
static size_t index_cap(size_t cap, size_t n)
{
	cap = cap ? cap : INDEX_MIN_SLOTS;
	while (cap < 2 * (n + 1))
		cap *= 2;
	return cap;
}

/* Room in the index for one more entry, re-inserting 1..n when it grows. */
static int index_grow(struct hc_dict_tab *t, enum hc_dict_table which)
{
	size_t cap = index_cap(t->ix.cap, t->n);
	uint32_t *slots;

	if (cap == t->ix.cap)
		return 0;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t id = 1; id <= t->n; id++) {
		size_t i = ops[which].hash(entry_at(t, which, id - 1)) & (cap - 1);

		while (slots[i])
			i = (i + 1) & (cap - 1);
		slots[i] = id;
	}
	free(t->ix.slots);
	t->ix.slots = slots;
	t->ix.cap = cap;
	return 0;
}

/* The id of entry e (its strings interned in d), appended when new. */
static int64_t intern(struct hc_dict *d, enum hc_dict_table which, const void *e)
{
	struct hc_dict_tab *t = &d->t[which];
	const struct table_ops *o = &ops[which];
	uint64_t h = o->hash(e);
	size_t i, mask = t->ix.cap - 1;
	int err = 0;

	for (i = h & mask; t->ix.cap && t->ix.slots[i]; i = (i + 1) & mask)
		if (o->eq(entry_at(t, which, t->ix.slots[i] - 1), e))
			return (int64_t)t->base + t->ix.slots[i];
	if ((uint64_t)t->base + t->n >= UINT32_MAX - 1)
		return -EOVERFLOW;
	if (index_grow(t, which))
		return -ENOMEM;
	pthread_rwlock_wrlock(&d->lock);
	if (t->n == t->cap && hc_array__grow(&t->v, &t->cap, t->n + 1, o->size, o->min_cap))
		err = -ENOMEM;
	else
		memcpy(entry_at(t, which, t->n++), e, o->size);
	pthread_rwlock_unlock(&d->lock);
	if (err)
		return err;
	mask = t->ix.cap - 1;
	for (i = h & mask; t->ix.slots[i]; i = (i + 1) & mask)
		;
	t->ix.slots[i] = (uint32_t)t->n;
	return (int64_t)t->base + (int64_t)t->n;
}

int64_t hc_dict__frame(struct hc_dict *d, const struct hc_path_elem *e)
{
	struct hc_dict_frame f = {
		.id = e->id, .offset = e->offset, .kind = (uint8_t)e->kind, .inlined = e->inlined};

	if (!e->name || e->kind > HC_NODE_KIND_MAX)
		return -EINVAL;
	f.name = hc_interner__add_str(&d->strings, e->name);
	f.module = e->module ? hc_interner__add_str(&d->strings, e->module) : NULL;
	if (!f.name || (e->module && !f.module))
		return -ENOMEM;
	return intern(d, HC_DICT_FRAMES, &f);
}

int64_t hc_dict__task(struct hc_dict *d, uint32_t pid, uint32_t tid, const char *process,
		      const char *thread)
{
	struct hc_dict_task t = {.pid = pid, .tid = tid};

	t.process = hc_interner__add_str(&d->strings, process ? process : "");
	t.thread = hc_interner__add_str(&d->strings, thread ? thread : "");
	if (!t.process || !t.thread)
		return -ENOMEM;
	return intern(d, HC_DICT_TASKS, &t);
}

int64_t hc_dict__stack(struct hc_dict *d, uint32_t parent, uint32_t frame)
{
	struct hc_dict_stack s = {.parent = parent, .frame = frame};

	if (!hc_dict__has(d, HC_DICT_FRAMES, frame) ||
	    (parent && !hc_dict__has(d, HC_DICT_STACKS, parent)))
		return -EINVAL;
	return intern(d, HC_DICT_STACKS, &s);
}

bool hc_dict__has(const struct hc_dict *d, enum hc_dict_table t, uint32_t id)
{
	return id > d->t[t].base && id - d->t[t].base <= d->t[t].n;
}

const void *hc_dict__entry(const struct hc_dict *d, enum hc_dict_table t, uint32_t id)
{
	return entry_at(&d->t[t], t, id - d->t[t].base - 1);
}

void hc_dict__elem(const struct hc_dict *d, uint32_t frame, struct hc_path_elem *out)
{
	const struct hc_dict_frame *f = hc_dict__entry(d, HC_DICT_FRAMES, frame);

	*out = (struct hc_path_elem){.kind = (enum hc_node_kind)f->kind,
				     .name = f->name,
				     .module = f->module,
				     .id = f->id,
				     .offset = f->offset,
				     .inlined = f->inlined};
}

#define ALIAS_USED (1ull << 31) /* in a slot's local index: looked up since it was added */

uint32_t hc_dict__alias(struct hc_dict *d, enum hc_dict_table t, uint32_t old)
{
	struct hc_dict_alias *a = &d->t[t].alias;
	size_t mask = a->cap - 1;

	for (size_t i = a->cap ? hc_hash_splitmix(old) & mask : 0; a->cap && a->slots[i];
	     i = (i + 1) & mask)
		if (a->slots[i] >> 32 == old) {
			a->slots[i] |= ALIAS_USED;
			return d->t[t].base + (uint32_t)(a->slots[i] & (ALIAS_USED - 1));
		}
	return 0;
}

bool hc_dict__alias_next(const struct hc_dict *d, enum hc_dict_table t, size_t *i, uint32_t *old,
			 uint32_t *id)
{
	const struct hc_dict_alias *a = &d->t[t].alias;

	for (; *i < a->cap; (*i)++)
		if (a->slots[*i] & ALIAS_USED) {
			*old = (uint32_t)(a->slots[*i] >> 32);
			*id = d->t[t].base + (uint32_t)(a->slots[(*i)++] & (ALIAS_USED - 1));
			return true;
		}
	return false;
}

static void alias_put(uint64_t *slots, size_t cap, uint64_t v)
{
	size_t i = hc_hash_splitmix(v >> 32) & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = v;
}

int hc_dict__alias_add(struct hc_dict *d, enum hc_dict_table t, uint32_t old, uint32_t id)
{
	struct hc_dict_alias *a = &d->t[t].alias;

	if (!old || !hc_dict__has(d, t, id))
		return -EINVAL;
	if (2 * (a->n + 1) > a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 256;
		uint64_t *slots = calloc(cap, sizeof(*slots));

		if (!slots)
			return -ENOMEM;
		for (size_t i = 0; i < a->cap; i++)
			if (a->slots[i])
				alias_put(slots, cap, a->slots[i]);
		free(a->slots);
		a->slots = slots;
		a->cap = cap;
	}
	alias_put(a->slots, a->cap, (uint64_t)old << 32 | (id - d->t[t].base));
	a->n++;
	return 0;
}

size_t hc_dict__entries(const struct hc_dict *d)
{
	return d->t[HC_DICT_FRAMES].n + d->t[HC_DICT_TASKS].n + d->t[HC_DICT_STACKS].n;
}

/* The interner's slots (16 bytes, grown at 0.7 load) and copies for nr strings. */
static size_t strings_bytes(size_t cap, size_t nr)
{
	if (!cap && nr)
		cap = 64;
	while (cap && 10 * nr > 7 * cap)
		cap *= 2;
	return cap * 16 + nr * STRING_BYTES;
}

size_t hc_dict__bytes_after(const struct hc_dict *d, size_t extra)
{
	size_t bytes = strings_bytes(d->strings.cap, d->strings.nr + 2 * extra);

	for (int i = 0; i < HC_DICT_TABLES; i++) {
		const struct hc_dict_tab *t = &d->t[i];
		size_t cap = t->cap, n = t->n + extra;

		if (extra && cap < n)
			cap = cap ? cap : ops[i].min_cap;
		while (cap < n)
			cap *= 2;
		size_t acap = t->alias.cap;

		if (extra && 2 * (t->alias.n + extra) > acap)
			acap = acap ? acap : 256;
		while (extra && 2 * (t->alias.n + extra) > acap)
			acap *= 2;
		bytes += cap * ops[i].size + acap * sizeof(*t->alias.slots) +
			 (extra || t->ix.cap ? index_cap(t->ix.cap, n - 1) : 0) * sizeof(uint32_t);
	}
	return bytes + sizeof(*d);
}

size_t hc_dict__bytes(const struct hc_dict *d)
{
	return hc_dict__bytes_after(d, 0);
}
