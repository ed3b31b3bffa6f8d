// SPDX-License-Identifier: GPL-2.0-only
#include "store/dict.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/array.h"
#include "base/hash.h"

#define INDEX_MIN_SLOTS 1024
#define STRING_BYTES 24	   /* hc_interner's copy of an average name, its chunk share included */
#define ADOPTED (1u << 31) /* in an index slot: an adopted entry's index + 1 */

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

/* A value keyed by its high 32 bits into open-addressed slots (cap a power of two, room left). */
static void alias_put(uint64_t *slots, size_t cap, uint64_t v)
{
	size_t i = hc_hash_splitmix(v >> 32) & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = v;
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

/* The entry and the id of an index slot's value. */
static void *slot_entry(const struct hc_dict_tab *t, enum hc_dict_table which, uint32_t v)
{
	if (v & ADOPTED)
		return (char *)t->ad.v + ((v & ~ADOPTED) - 1) * ops[which].size;
	return entry_at(t, which, v - 1);
}

static uint32_t slot_id(const struct hc_dict_tab *t, uint32_t v)
{
	return v & ADOPTED ? t->ad.ids[(v & ~ADOPTED) - 1] : t->base + v;
}

/* The index of adopted id in t->ad, or -1. */
static ssize_t adopted_find(const struct hc_dict_tab *t, uint32_t id)
{
	size_t mask = t->ad.map_cap - 1;

	for (size_t i = t->ad.map_cap ? hc_hash_splitmix(id) & mask : 0;
	     t->ad.map_cap && t->ad.map[i]; i = (i + 1) & mask)
		if (t->ad.map[i] >> 32 == id)
			return (ssize_t)(uint32_t)t->ad.map[i] - 1;
	return -1;
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
	d->oldest_origin = epoch;
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
		free(d->t[i].ad.v);
		free(d->t[i].ad.ids);
		free(d->t[i].ad.origin);
		free(d->t[i].ad.map);
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

static void index_put(uint32_t *slots, size_t cap, uint64_t h, uint32_t v)
{
	size_t i = h & (cap - 1);

	while (slots[i])
		i = (i + 1) & (cap - 1);
	slots[i] = v;
}

/* Room in the index for one more entry, re-inserting them all when it grows. */
static int index_grow(struct hc_dict_tab *t, enum hc_dict_table which)
{
	size_t cap = index_cap(t->ix.cap, t->n + t->ad.n);
	uint32_t *slots;

	if (cap == t->ix.cap)
		return 0;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (uint32_t v = 1; v <= t->n; v++)
		index_put(slots, cap, ops[which].hash(slot_entry(t, which, v)), v);
	for (uint32_t v = 1; v <= t->ad.n; v++)
		index_put(slots, cap, ops[which].hash(slot_entry(t, which, v | ADOPTED)),
			  v | ADOPTED);
	free(t->ix.slots);
	t->ix.slots = slots;
	t->ix.cap = cap;
	return 0;
}

/* The id of an entry with content e (its strings interned in d), or 0. */
static uint32_t find(const struct hc_dict *d, enum hc_dict_table which, const void *e)
{
	const struct hc_dict_tab *t = &d->t[which];
	size_t i, mask = t->ix.cap - 1;

	for (i = t->ix.cap ? ops[which].hash(e) & mask : 0; t->ix.cap && t->ix.slots[i];
	     i = (i + 1) & mask)
		if (ops[which].eq(slot_entry(t, which, t->ix.slots[i]), e))
			return slot_id(t, t->ix.slots[i]);
	return 0;
}

/* The id of entry e (its strings interned in d), appended when new. */
static int64_t intern(struct hc_dict *d, enum hc_dict_table which, const void *e)
{
	struct hc_dict_tab *t = &d->t[which];
	const struct table_ops *o = &ops[which];
	uint64_t h = o->hash(e);
	uint32_t id = find(d, which, e);
	int err = 0;

	if (id)
		return id;
	if ((uint64_t)t->base + t->n >=
	    (which == HC_DICT_STACKS ? HC_DICT_STACK_ID_MAX : UINT32_MAX - 1))
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
	index_put(t->ix.slots, t->ix.cap, h, (uint32_t)t->n);
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

uint32_t hc_dict__find_frame(const struct hc_dict *d, const struct hc_path_elem *e)
{
	struct hc_dict_frame f = {
		.id = e->id, .offset = e->offset, .kind = (uint8_t)e->kind, .inlined = e->inlined};

	if (!e->name)
		return 0;
	f.name = hc_interner__find_str(&d->strings, e->name);
	f.module = e->module ? hc_interner__find_str(&d->strings, e->module) : NULL;
	if (!f.name || (e->module && !f.module))
		return 0; /* a string it never had */
	return find(d, HC_DICT_FRAMES, &f);
}

uint32_t hc_dict__find_task(const struct hc_dict *d, uint32_t pid, uint32_t tid,
			    const char *process, const char *thread)
{
	struct hc_dict_task t = {.pid = pid, .tid = tid};

	t.process = hc_interner__find_str(&d->strings, process ? process : "");
	t.thread = hc_interner__find_str(&d->strings, thread ? thread : "");
	if (!t.process || !t.thread)
		return 0;
	return find(d, HC_DICT_TASKS, &t);
}

uint32_t hc_dict__find_stack(const struct hc_dict *d, uint32_t parent, uint32_t frame)
{
	struct hc_dict_stack s = {.parent = parent, .frame = frame};

	return find(d, HC_DICT_STACKS, &s);
}

/* v into slots holding n values, grown first to stay at most half full. */
static int map_put(uint64_t **slots, size_t *cap, size_t n, uint64_t v)
{
	if (2 * (n + 1) > *cap) {
		size_t ncap = *cap ? 2 * *cap : 256;
		uint64_t *s = calloc(ncap, sizeof(*s));

		if (!s)
			return -ENOMEM;
		for (size_t i = 0; i < *cap; i++)
			if ((*slots)[i])
				alias_put(s, ncap, (*slots)[i]);
		free(*slots);
		*slots = s;
		*cap = ncap;
	}
	alias_put(*slots, *cap, v);
	return 0;
}

int64_t hc_dict__adopt(struct hc_dict *d, enum hc_dict_table t, const void *e, uint32_t id,
		       uint64_t origin)
{
	struct hc_dict_tab *tab = &d->t[t];
	struct hc_dict_adopted *a = &tab->ad;
	const struct table_ops *o = &ops[t];
	union {
		struct hc_dict_frame f;
		struct hc_dict_task k;
		struct hc_dict_stack s;
	} c;
	uint32_t existing;
	int err = 0;

	if (!id || hc_dict__has(d, t, id))
		return -EINVAL;
	memcpy(&c, e, o->size);
	if (t == HC_DICT_FRAMES) {
		c.f.name = hc_interner__add_str(&d->strings, c.f.name);
		c.f.module = c.f.module ? hc_interner__add_str(&d->strings, c.f.module) : NULL;
		if (!c.f.name || (((const struct hc_dict_frame *)e)->module && !c.f.module))
			return -ENOMEM;
	} else if (t == HC_DICT_TASKS) {
		c.k.process = hc_interner__add_str(&d->strings, c.k.process);
		c.k.thread = hc_interner__add_str(&d->strings, c.k.thread);
		if (!c.k.process || !c.k.thread)
			return -ENOMEM;
	} else if (!hc_dict__has(d, HC_DICT_FRAMES, c.s.frame) ||
		   (c.s.parent && !hc_dict__has(d, HC_DICT_STACKS, c.s.parent))) {
		return -EINVAL;
	}
	/* content is unique in an epoch: an entry of its own with it already answers */
	if ((existing = find(d, t, &c)))
		return existing;
	if (index_grow(tab, t))
		return -ENOMEM;
	pthread_rwlock_wrlock(&d->lock);
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 256;
		void *v = realloc(a->v, cap * o->size);
		uint32_t *ids = v ? realloc(a->ids, cap * sizeof(*ids)) : NULL;
		uint32_t *org = ids ? realloc(a->origin, cap * sizeof(*org)) : NULL;

		if (v)
			a->v = v;
		if (ids)
			a->ids = ids;
		if (org) {
			a->origin = org;
			a->cap = cap;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err)
		err = map_put(&a->map, &a->map_cap, a->n, (uint64_t)id << 32 | (a->n + 1));
	if (!err) {
		memcpy((char *)a->v + a->n * o->size, &c, o->size);
		a->ids[a->n] = id;
		a->origin[a->n] = (uint32_t)origin;
		a->n++;
		if (origin < d->oldest_origin)
			d->oldest_origin = origin;
	}
	pthread_rwlock_unlock(&d->lock);
	if (err)
		return err;
	index_put(tab->ix.slots, tab->ix.cap, o->hash(&c), (uint32_t)a->n | ADOPTED);
	return id;
}

bool hc_dict__has(const struct hc_dict *d, enum hc_dict_table t, uint32_t id)
{
	return (id > d->t[t].base && id - d->t[t].base <= d->t[t].n) ||
	       adopted_find(&d->t[t], id) >= 0;
}

const void *hc_dict__entry(const struct hc_dict *d, enum hc_dict_table t, uint32_t id)
{
	const struct hc_dict_tab *tab = &d->t[t];

	if (id > tab->base && id - tab->base <= tab->n)
		return entry_at(tab, t, id - tab->base - 1);
	return (char *)tab->ad.v + (size_t)adopted_find(tab, id) * ops[t].size;
}

uint64_t hc_dict__origin(const struct hc_dict *d, enum hc_dict_table t, uint32_t id)
{
	const struct hc_dict_tab *tab = &d->t[t];
	ssize_t i;

	if (id > tab->base && id - tab->base <= tab->n)
		return d->epoch;
	i = adopted_find(tab, id);
	return i >= 0 ? tab->ad.origin[i] : d->epoch;
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

/* In an alias's value (an index slot's value): looked up since it was added. */
#define ALIAS_USED (1ull << 30)

uint32_t hc_dict__alias(struct hc_dict *d, enum hc_dict_table t, uint32_t old)
{
	struct hc_dict_alias *a = &d->t[t].alias;
	size_t mask = a->cap - 1;

	for (size_t i = a->cap ? hc_hash_splitmix(old) & mask : 0; a->cap && a->slots[i];
	     i = (i + 1) & mask)
		if (a->slots[i] >> 32 == old) {
			a->slots[i] |= ALIAS_USED;
			return slot_id(&d->t[t], (uint32_t)(a->slots[i] & ~ALIAS_USED));
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
			*id = slot_id(&d->t[t], (uint32_t)(a->slots[(*i)++] & ~ALIAS_USED));
			return true;
		}
	return false;
}

int hc_dict__alias_add(struct hc_dict *d, enum hc_dict_table t, uint32_t old, uint32_t id)
{
	struct hc_dict_alias *a = &d->t[t].alias;
	const struct hc_dict_tab *tab = &d->t[t];
	uint32_t v;

	if (!old || !hc_dict__has(d, t, id))
		return -EINVAL;
	v = id > tab->base && id - tab->base <= tab->n
		    ? id - tab->base
		    : ADOPTED | (uint32_t)(adopted_find(tab, id) + 1);
	if (map_put(&a->slots, &a->cap, a->n, (uint64_t)old << 32 | v))
		return -ENOMEM;
	a->n++;
	return 0;
}

size_t hc_dict__entries(const struct hc_dict *d)
{
	size_t n = 0;

	for (int i = 0; i < HC_DICT_TABLES; i++)
		n += d->t[i].n + d->t[i].ad.n;
	return n;
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
			 (extra || t->ix.cap ? index_cap(t->ix.cap, n + t->ad.n - 1) : 0) *
				 sizeof(uint32_t);
		/* adopted entries: what they hold now (a call adds to one table or the other) */
		bytes += t->ad.cap * (ops[i].size + 2 * sizeof(uint32_t)) +
			 t->ad.map_cap * sizeof(*t->ad.map);
	}
	return bytes + sizeof(*d);
}

size_t hc_dict__bytes(const struct hc_dict *d)
{
	return hc_dict__bytes_after(d, 0);
}
