// SPDX-License-Identifier: GPL-2.0-only
/*
 * The unwind-table publisher (uwpub.h): the symbolizer's view of a process turned into the
 * slot the BPF walk reads, and each object's compiled table placed once in the shared rows.
 *
 * Bookkeeping of our own (of the areas only a slot's seq is ever read back, to advance it):
 * per process (tgid -> entry) the maps snapshot and identity last published, its slot and
 * the objects that slot names; per object (indexed by the symbolizer's object id, dense and
 * never reused) its state, its rows and how many published slots name it; the free extents
 * of the rows area.
 *
 * Concurrency: one calling thread. The BPF side reads the areas concurrently: a slot is only
 * written under its seqlock (slot_write()), rows before the slot naming them, and rows are
 * freed only by prune, once no slot names them (the header says why that is enough).
 */
#include "symbolize/uwpub.h"
#include "symbolize/util.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/time.h"

/* Executable objects asked of the symbolizer per process, as the unwinder does. */
#define MAX_MODULES 1024

enum obj_state {
	OBJ_NEW = 0, /* not compiled yet, evicted, or worth another try */
	OBJ_TABLE,   /* its rows are at rows_at */
	OBJ_NONE,    /* no table (refused, no CFI): never compiled again */
	OBJ_FULL,    /* compiled to `need` rows that did not fit */
};

struct uwobj {
	uint32_t rows_at, n_rows; /* OBJ_TABLE */
	uint64_t text_bytes;	  /* OBJ_TABLE: its executable segments' size */
	uint32_t need;		  /* OBJ_FULL */
	uint32_t refs;		  /* published slots naming it */
	uint8_t state;		  /* enum obj_state */
};

struct uwproc {
	uint32_t tgid;
	int32_t slot; /* -1: not published */
	uint64_t start_ns;
	uint64_t gen;	/* the snapshot last published, or that found no slot; 0: do it again */
	uint32_t *objs; /* the objects its slot names, one reference each */
	uint32_t n_objs;
};

struct extent {
	uint32_t at, len;
};

struct hc_uwpub {
	struct hc_symbolizer *sym;
	struct hc_uwpub_area a;
	bool *slot_busy; /* per slot of a.procs: one of our entries holds it */

	struct uwproc *procs;
	size_t nr_procs, cap_procs;
	struct hc_keymap proc_idx; /* tgid -> index into procs[] */

	struct uwobj *objs; /* by object id */
	size_t cap_objs;

	/* Free extents of a.rows, sorted by at, never adjacent. There is room for one more
	 * than the blocks held, so that freeing never allocates. */
	struct extent *ext;
	size_t nr_ext, cap_ext, nr_blocks;

	/* Scratch for one publish. */
	struct hc_sym_module *mods;
	struct hc_uw_map maps[HC_UW_MAPS];
	uint32_t map_obj[HC_UW_MAPS];

	struct hc_uwpub_stats stats;
};

/* ---- Rows allocator: first fit, coalescing ---- */

int hc__uwpub_rows_alloc(struct hc_uwpub *u, uint32_t n, uint32_t *at)
{
	if (!n)
		return -EINVAL;
	if (hc_array_grow(u->ext, u->cap_ext, u->nr_blocks + 2, 16))
		return -ENOMEM;
	for (size_t i = 0; i < u->nr_ext; i++) {
		struct extent *e = &u->ext[i];

		if (e->len < n)
			continue;
		*at = e->at;
		e->at += n;
		e->len -= n;
		if (!e->len) {
			memmove(e, e + 1, (u->nr_ext - i - 1) * sizeof(*e));
			u->nr_ext--;
		}
		u->nr_blocks++;
		return 0;
	}
	return -ENOSPC;
}

int hc__uwpub_rows_free(struct hc_uwpub *u, uint32_t at, uint32_t n)
{
	struct extent *prev, *next;
	size_t i = 0;

	if (!n || at > u->a.n_rows || n > u->a.n_rows - at)
		return -EINVAL;
	while (i < u->nr_ext && u->ext[i].at < at)
		i++;
	prev = i ? &u->ext[i - 1] : NULL;
	next = i < u->nr_ext ? &u->ext[i] : NULL;
	if ((prev && prev->at + prev->len > at) || (next && at + n > next->at))
		return -EINVAL;
	if (prev && prev->at + prev->len == at) {
		prev->len += n;
		if (next && prev->at + prev->len == next->at) {
			prev->len += next->len;
			memmove(next, next + 1, (u->nr_ext - i - 1) * sizeof(*next));
			u->nr_ext--;
		}
	} else if (next && at + n == next->at) {
		next->at = at;
		next->len += n;
	} else {
		/* Only a free of rows never allocated as one block can need room here. */
		if (u->nr_ext == u->cap_ext && hc_array_grow(u->ext, u->cap_ext, u->nr_ext + 1, 16))
			return -ENOMEM;
		memmove(&u->ext[i + 1], &u->ext[i], (u->nr_ext - i) * sizeof(*u->ext));
		u->ext[i] = (struct extent){.at = at, .len = n};
		u->nr_ext++;
	}
	if (u->nr_blocks)
		u->nr_blocks--;
	return 0;
}

size_t hc__uwpub_rows_extents(const struct hc_uwpub *u, uint32_t *at, uint32_t *len, size_t max)
{
	for (size_t i = 0; i < u->nr_ext && i < max; i++) {
		at[i] = u->ext[i].at;
		len[i] = u->ext[i].len;
	}
	return u->nr_ext;
}

static uint32_t rows_largest_free(const struct hc_uwpub *u)
{
	uint32_t max = 0;

	for (size_t i = 0; i < u->nr_ext; i++)
		if (u->ext[i].len > max)
			max = u->ext[i].len;
	return max;
}

/* ---- Lifecycle ---- */

struct hc_uwpub *hc_uwpub__new(struct hc_symbolizer *sym, const struct hc_uwpub_area *a)
{
	struct hc_uwpub *u;

	if (!sym || !a || !a->procs || !a->n_procs || (a->n_procs & (a->n_procs - 1)) ||
	    (a->n_rows && !a->rows)) {
		errno = EINVAL;
		return NULL;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		goto err_nomem;
	u->sym = sym;
	u->a = *a;
	u->slot_busy = calloc(a->n_procs, sizeof(*u->slot_busy));
	u->mods = calloc(MAX_MODULES, sizeof(*u->mods));
	if (!u->slot_busy || !u->mods || hc_array_grow(u->ext, u->cap_ext, 2, 16))
		goto err_free;
	if (a->n_rows)
		u->ext[u->nr_ext++] = (struct extent){.at = 0, .len = a->n_rows};
	return u;

err_free:
	hc_uwpub__free(u);
err_nomem:
	errno = ENOMEM;
	return NULL;
}

void hc_uwpub__free(struct hc_uwpub *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nr_procs; i++)
		free(u->procs[i].objs);
	free(u->procs);
	hc_keymap__release(&u->proc_idx);
	free(u->objs);
	free(u->ext);
	free(u->slot_busy);
	free(u->mods);
	free(u);
}

void hc_uwpub__stats(const struct hc_uwpub *u, struct hc_uwpub_stats *out)
{
	*out = u->stats;
}

/* ---- Slots ---- */

/*
 * Rewrite slot s under its seqlock: odd while written (the release fence orders that store
 * before the writes of the fields), even again with a release store after them. tgid 0 and
 * n 0 free it.
 */
static void slot_write(struct hc_uw_proc *s, uint32_t tgid, uint64_t start_ns, uint32_t flags,
		       const struct hc_uw_map *maps, uint32_t n)
{
	uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_RELAXED);

	seq += 1 + (seq & 1); /* odd (from a slot left odd by a writer that died: past it) */
	__atomic_store_n(&s->seq, seq, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	s->tgid = tgid;
	s->pstart_ns = start_ns;
	s->published_ns = (uint64_t)hc_mono_ns();
	s->n_maps = n;
	s->flags = flags;
	if (n)
		memcpy(s->maps, maps, n * sizeof(*maps));
	memset(s->maps + n, 0, (HC_UW_MAPS - n) * sizeof(*maps));
	__atomic_store_n(&s->seq, seq + 1, __ATOMIC_RELEASE);
}

/* The first slot of tgid's probes that none of ours holds, as the BPF side probes; -1. */
static int64_t slot_find_free(const struct hc_uwpub *u, uint32_t tgid)
{
	uint32_t h = hc_uw_slot_hash(tgid, u->a.n_procs);

	for (uint32_t k = 0; k < HC_UW_PROBES; k++) {
		uint32_t s = (h + k) & (u->a.n_procs - 1);

		if (!u->slot_busy[s])
			return s;
	}
	return -1;
}

/* ---- Objects ---- */

static void obj_unref_all(struct hc_uwpub *u, const uint32_t *objs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		u->objs[objs[i]].refs--;
}

/* The size of elf's executable segments: what its table covers, at most. */
static uint64_t text_bytes(Elf *elf)
{
	uint64_t sum = 0;
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
			sum += ph.p_memsz;
	}
	return sum;
}

/* Compile elf into o's rows. 0 (o's state says what came of it) or -ENOMEM. */
static int obj_compile(struct hc_uwpub *u, Elf *elf, struct uwobj *o)
{
	const struct hc_urow *rows;
	struct hc_uwtable *t;
	uint32_t at;
	size_t n;
	int err;

	err = hc_uwtable__compile_elf(elf, NULL, &t, &u->stats.compile);
	if (err == -ENOMEM)
		return err;
	if (err) {
		if (err == -EBADMSG || err == -E2BIG)
			u->stats.refused++;
		else
			u->stats.no_cfi++;
		o->state = OBJ_NONE;
		return 0;
	}
	rows = hc_uwtable__rows(t, &n);
	/* n <= HC_UROWS_MAX: the compiler's bound */
	err = n ? hc__uwpub_rows_alloc(u, (uint32_t)n, &at) : -ENODATA;
	if (!err && u->a.map_rows && u->a.map_rows(u->a.map_ctx, at + (uint32_t)n)) {
		hc__uwpub_rows_free(u, at, (uint32_t)n);
		err = -ENOSPC;
	}
	if (err == -ENOMEM) {
		hc_uwtable__free(t);
		return err;
	}
	if (err == -ENODATA) {
		u->stats.no_cfi++;
		o->state = OBJ_NONE;
	} else if (err == -ENOSPC) {
		u->stats.table_full++;
		o->state = OBJ_FULL;
		o->need = (uint32_t)n;
	} else {
		/* Free rows: no slot names them, the walk reads none of them now. */
		memcpy(&u->a.rows[at], rows, n * sizeof(*rows));
		o->state = OBJ_TABLE;
		o->rows_at = at;
		o->n_rows = (uint32_t)n;
		o->text_bytes = text_bytes(elf);
		u->stats.objects++;
		u->stats.rows_used += n;
		u->stats.text_bytes += o->text_bytes;
	}
	hc_uwtable__free(t);
	return 0;
}

/* m's object (p maps it), compiled when it has not been: 0 and *out, or -ENOMEM. */
static int obj_ready(struct hc_uwpub *u, struct hc_sym_proc *p, const struct hc_sym_module *m,
		     struct uwobj **out)
{
	Elf *elf = m->elf;
	struct uwobj *o;
	int err;

	if (m->obj >= u->cap_objs) {
		size_t old = u->cap_objs;

		if (hc_array_grow(u->objs, u->cap_objs, (size_t)m->obj + 1, 64))
			return -ENOMEM;
		memset(u->objs + old, 0, (u->cap_objs - old) * sizeof(*u->objs));
	}
	o = &u->objs[m->obj];
	if (o->state == OBJ_NEW) {
		/* Its CFI was let go after an earlier compile (its rows were evicted since, or
		 * did not fit): read again through p's mapping. Failing that the object stays
		 * new, for a later process; p goes without its table (frame pointers). */
		if (!elf && hc_symbolizer__module_cfi(u->sym, p, m->obj, &elf)) {
			u->stats.reread_failed++;
			*out = o;
			return 0;
		}
		err = obj_compile(u, elf, o);
		if (err)
			return err;
		/* The rows hold what the walk needs: the CFI read in is let go (megabytes for a
		 * machine's libraries, kept for the object's life otherwise). */
		hc_symbolizer__drop_cfi(u->sym, m->obj);
	}
	*out = o;
	return 0;
}

/* ---- Publishing ---- */

static int cmp_module(const void *a, const void *b)
{
	const struct hc_sym_module *x = a, *y = b;

	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	return x->obj < y->obj ? -1 : x->obj > y->obj;
}

/*
 * u->maps[0..*n) and u->map_obj[] from u->mods[0..n_mods): sorted by start, an object
 * overlapping the one before left out (a mapping changed under the snapshot), at most
 * HC_UW_MAPS (the lowest addresses: the executable and the first libraries). 0 or -ENOMEM.
 */
static int build_maps(struct hc_uwpub *u, struct hc_sym_proc *p, size_t n_mods, uint32_t *n)
{
	*n = 0;
	qsort(u->mods, n_mods, sizeof(*u->mods), cmp_module);
	for (size_t i = 0; i < n_mods; i++) {
		const struct hc_sym_module *m = &u->mods[i];
		struct uwobj *o;
		int err;

		if (*n && m->low < u->maps[*n - 1].end)
			continue;
		if (*n == HC_UW_MAPS) {
			u->stats.maps_over++;
			continue;
		}
		err = obj_ready(u, p, m, &o);
		if (err)
			return err;
		u->maps[*n] = (struct hc_uw_map){
			.start = m->low,
			.end = m->high,
			.bias = m->bias,
			.rows_at = o->state == OBJ_TABLE ? o->rows_at : 0,
			.n_rows = o->state == OBJ_TABLE ? o->n_rows : 0,
		};
		u->map_obj[*n] = m->obj;
		(*n)++;
	}
	return 0;
}

/* tgid's entry, made when there is none (not published, gen 0). 0 or -ENOMEM. */
static int proc_entry(struct hc_uwpub *u, uint32_t tgid, struct uwproc **out)
{
	uint32_t idx;

	if (!hc_keymap__get(&u->proc_idx, tgid, 0, &idx)) {
		*out = &u->procs[idx];
		return 0;
	}
	if (hc_array_grow(u->procs, u->cap_procs, u->nr_procs + 1, 64) ||
	    hc_keymap__put(&u->proc_idx, tgid, 0, (uint32_t)u->nr_procs))
		return -ENOMEM;
	*out = &u->procs[u->nr_procs++];
	**out = (struct uwproc){.tgid = tgid, .slot = -1};
	return 0;
}

static int publish(struct hc_uwpub *u, struct hc_sym_proc *p, uint32_t tgid, uint64_t start_ns,
		   uint32_t flags)
{
	struct uwproc *e;
	uint32_t *objs, n;
	size_t n_mods;
	uint64_t gen;
	int64_t slot;
	int err;

	err = proc_entry(u, tgid, &e);
	if (err)
		return err;
	err = hc_symbolizer__modules(u->sym, p, u->mods, MAX_MODULES, &n_mods, &gen);
	if (err)
		return err;
	slot = e->slot >= 0 ? e->slot : slot_find_free(u, tgid);
	if (slot < 0) {
		/* Counted once per snapshot; prune makes it try again when slots free up. */
		u->stats.slots_full++;
		e->start_ns = start_ns;
		e->gen = gen;
		return 0;
	}
	if (e->slot < 0 && u->a.map_slot && u->a.map_slot(u->a.map_ctx, (uint32_t)slot))
		return -ENOMEM;
	err = build_maps(u, p, n_mods, &n);
	if (err)
		return err;
	objs = malloc((n ? n : 1) * sizeof(*objs));
	if (!objs)
		return -ENOMEM;
	memcpy(objs, u->map_obj, n * sizeof(*objs));
	/* The new objects' references before the write, the old ones' dropped after it: an
	 * object both name never reaches 0. */
	for (uint32_t i = 0; i < n; i++)
		u->objs[objs[i]].refs++;
	slot_write(&u->a.procs[slot], tgid, start_ns, flags, u->maps, n);
	obj_unref_all(u, e->objs, e->n_objs);
	free(e->objs);
	e->objs = objs;
	e->n_objs = n;
	e->slot = (int32_t)slot;
	e->start_ns = start_ns;
	e->gen = gen;
	u->slot_busy[slot] = true;
	u->stats.processes++;
	return 0;
}

int hc_uwpub__process(struct hc_uwpub *u, struct hc_sym_proc *p)
{
	uint64_t start_ns, gen, t0;
	uint32_t tgid, idx, flags = 0;
	int err;

	/* First: it checks p (NULL, stale, no maps) before anything reads it. */
	err = hc_symbolizer__maps_gen(u->sym, p, &gen);
	if (err)
		return err;
	hc_sym_proc__identity(p, &tgid, &start_ns);
	if (!tgid)
		return -EINVAL; /* tgid 0 marks a free slot */
	/* Known before any record of it (-p, at the start): its start time to the clock tick,
	 * which the walk matches as such; the exact one, once a record brings it, republishes. */
	if (!start_ns) {
		uint64_t tick = hc_sym_proc__start_tick_ns(u->sym, p);

		if (tick && tick % HC_UW_TICK_NS == 0) {
			start_ns = tick;
			flags = HC_UW_PROC_TICKS;
		}
	}
	if (!hc_keymap__get(&u->proc_idx, tgid, 0, &idx) && u->procs[idx].gen == gen &&
	    u->procs[idx].start_ns == start_ns)
		return 0;
	t0 = hc_mono_ns();
	err = publish(u, p, tgid, start_ns, flags);
	u->stats.ns += hc_mono_ns() - t0;
	return err;
}

int hc_uwpub__publish_running(struct hc_uwpub *u, size_t *n)
{
	uint32_t *tgids = NULL;
	long nr = 0;
	int err = 0;

	*n = 0;
	/* twice at most: the list may grow between the count and the copy */
	for (int tries = 0; tries < 2; tries++) {
		size_t cap = (size_t)nr + 64;
		uint32_t *t = realloc(tgids, cap * sizeof(*t));

		if (!t) {
			free(tgids);
			return -ENOMEM;
		}
		tgids = t;
		nr = hc_symbolizer__list_processes(u->sym, tgids, cap);
		if (nr < 0 || (size_t)nr <= cap)
			break;
	}
	for (long i = 0; i < nr && !err; i++) {
		struct hc_sym_proc *p = NULL;

		if (hc_symbolizer__process(u->sym, tgids[i], 0, &p) || !p)
			continue;
		err = hc_uwpub__process(u, p);
		if (!err)
			(*n)++;
		else if (err != -ENOMEM)
			err = 0; /* a kernel thread (no maps), gone meanwhile: not published */
	}
	free(tgids);
	return nr < 0 ? (int)nr : err;
}

/* ---- Pruning ---- */

/* Free the rows of objects no slot names. Objects that did not fit and now would (rows were
 * freed here, or since the last prune) are made new, and the processes whose slots name them
 * published again at their next record. */
static void evict(struct hc_uwpub *u)
{
	bool retry = false;
	uint32_t largest;

	for (size_t id = 0; id < u->cap_objs; id++) {
		struct uwobj *o = &u->objs[id];

		if (o->state != OBJ_TABLE || o->refs)
			continue;
		hc__uwpub_rows_free(u, o->rows_at, o->n_rows);
		u->stats.rows_used -= o->n_rows;
		u->stats.text_bytes -= o->text_bytes;
		u->stats.evicted++;
		*o = (struct uwobj){.state = OBJ_NEW};
	}
	largest = rows_largest_free(u);
	for (size_t id = 0; id < u->cap_objs; id++) {
		struct uwobj *o = &u->objs[id];

		if (o->state == OBJ_FULL && o->need <= largest) {
			o->state = OBJ_NEW;
			retry = true;
		}
	}
	for (size_t i = 0; retry && i < u->nr_procs; i++) {
		struct uwproc *e = &u->procs[i];

		for (uint32_t k = 0; k < e->n_objs; k++) {
			if (u->objs[e->objs[k]].state == OBJ_NEW) {
				e->gen = 0;
				break;
			}
		}
	}
}

int hc_uwpub__prune(struct hc_uwpub *u)
{
	struct hc_keymap idx = {0};
	bool freed_slots = false;
	uint64_t t0 = hc_mono_ns();
	size_t kept = 0;
	bool *dead;

	dead = calloc(u->nr_procs ? u->nr_procs : 1, sizeof(*dead));
	if (!dead)
		return -ENOMEM;
	/* The new index first: on failure nothing has changed. */
	for (size_t i = 0; i < u->nr_procs; i++) {
		const struct uwproc *e = &u->procs[i];

		dead[i] = !hc_symbolizer__tracks(u->sym, e->tgid, e->start_ns);
		if (!dead[i] && hc_keymap__put(&idx, e->tgid, 0, (uint32_t)kept++)) {
			hc_keymap__release(&idx);
			free(dead);
			return -ENOMEM;
		}
	}
	kept = 0;
	for (size_t i = 0; i < u->nr_procs; i++) {
		struct uwproc *e = &u->procs[i];

		if (!dead[i]) {
			u->procs[kept++] = *e;
			continue;
		}
		if (e->slot >= 0) {
			/* Unpublished first: its objects' rows are freed below, after. */
			slot_write(&u->a.procs[e->slot], 0, 0, 0, NULL, 0);
			u->slot_busy[e->slot] = false;
			u->stats.unpublished++;
			freed_slots = true;
		}
		obj_unref_all(u, e->objs, e->n_objs);
		free(e->objs);
	}
	u->nr_procs = kept;
	hc_keymap__release(&u->proc_idx);
	u->proc_idx = idx;
	free(dead);
	for (size_t i = 0; freed_slots && i < u->nr_procs; i++) {
		if (u->procs[i].slot < 0)
			u->procs[i].gen = 0; /* found no slot: try again */
	}
	evict(u);
	u->stats.ns += hc_mono_ns() - t0;
	return 0;
}
