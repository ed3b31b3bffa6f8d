// SPDX-License-Identifier: GPL-2.0-only
#include "sampler/aggregate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Stack key layout (u64 words):
 *   [0] tgid  [1] tid  [2] process comm index  [3] thread comm index  [4] n_user  [5] n_kernel
 *   then n_user pairs {object id, file offset} (leaf first), then n_kernel kernel addresses
 *   (leaf first). Comm indexes point into `comms`, a table keyed by the 16 comm bytes.
 */
#define KEY_HDR 6
#define KEY_MAX (KEY_HDR + 2 * HC_MAX_STACK_DEPTH + HC_MAX_STACK_DEPTH)

struct hc_agg {
	struct hc_symbolizer *sym;
	uint64_t period_ns;
	struct hc_stacktab *stacks;
	struct hc_stacktab *comms;
	struct hc_hist *priority;
	struct hc_hist *runq;
	char (*cpu_keys)[16]; /* "cpu N" by CPU number, formatted once, not per sample */
	size_t n_cpu_keys;
	struct hc_agg_stats stats;
	uint64_t key[KEY_MAX];
};

struct hc_agg *hc_agg__new(struct hc_symbolizer *sym, uint64_t period_ns)
{
	struct hc_agg *agg = calloc(1, sizeof(*agg));

	if (!agg)
		return NULL;
	agg->sym = sym;
	agg->period_ns = period_ns;
	agg->stacks = hc_stacktab__new();
	agg->comms = hc_stacktab__new();
	agg->priority = hc_hist__new_lquantize("prio", 0, 140, 10);
	agg->runq = hc_hist__new_lquantize("tasks", 0, 32, 1);
	if (!agg->stacks || !agg->comms || !agg->priority || !agg->runq) {
		hc_agg__free(agg);
		errno = ENOMEM;
		return NULL;
	}
	return agg;
}

void hc_agg__free(struct hc_agg *agg)
{
	if (!agg)
		return;
	hc_stacktab__free(agg->stacks);
	hc_stacktab__free(agg->comms);
	hc_hist__free(agg->priority);
	hc_hist__free(agg->runq);
	free(agg->cpu_keys);
	free(agg);
}

static int64_t intern_comm(struct hc_agg *agg, const char comm[HC_TASK_COMM_LEN])
{
	uint64_t k[2];

	memcpy(k, comm, sizeof(k));
	return hc_stacktab__intern(agg->comms, k, 2);
}

/* Copy a comm key back to a NUL-terminated string. */
static void comm_string(const struct hc_agg *agg, uint64_t idx, char out[HC_TASK_COMM_LEN + 1])
{
	size_t n;
	const uint64_t *k = hc_stacktab__key(agg->comms, (size_t)idx, &n);

	memcpy(out, k, HC_TASK_COMM_LEN);
	out[HC_TASK_COMM_LEN] = '\0';
}

/* CPU numbers come from the kernel; bound them so a bad record cannot grow the table. */
#define AGG_MAX_CPU 65536

static int add_runq(struct hc_agg *agg, uint32_t cpu, int64_t len, uint64_t count)
{
	if (cpu >= AGG_MAX_CPU)
		return -EINVAL;
	if (cpu >= agg->n_cpu_keys) {
		char(*keys)[16] = realloc(agg->cpu_keys, ((size_t)cpu + 1) * sizeof(*keys));

		if (!keys)
			return -ENOMEM;
		for (size_t i = agg->n_cpu_keys; i <= cpu; i++)
			snprintf(keys[i], sizeof(keys[i]), "cpu %zu", i);
		agg->cpu_keys = keys;
		agg->n_cpu_keys = (size_t)cpu + 1;
	}
	return hc_hist__add(agg->runq, agg->cpu_keys[cpu], len, count);
}

int hc_agg__sample(struct hc_agg *agg, const struct hc_sample_event *e, size_t size)
{
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	const __u64 *ustack = e->stacks, *kstack = e->stacks + nu;
	uint64_t *key = agg->key;
	struct hc_weights *w;
	int64_t pc, tc, idx;
	size_t n = KEY_HDR;
	int err;

	(void)size; /* validated by the sampler */
	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	pc = intern_comm(agg, e->pcomm);
	tc = intern_comm(agg, e->comm);
	if (pc < 0 || tc < 0)
		goto err_nomem;
	key[0] = e->tgid;
	key[1] = e->tid;
	key[2] = (uint64_t)pc;
	key[3] = (uint64_t)tc;
	key[4] = nu;
	key[5] = nk;
	if (nu) {
		/* Cheap when known; otherwise reads the maps now, while the process lives. */
		hc_symbolizer__add_process(agg->sym, e->tgid);
		for (size_t i = 0; i < nu; i++) {
			struct hc_uloc loc;
			/* Callers' frames hold return addresses: step back into the call. */
			uint64_t ip = i == 0 ? ustack[i] : ustack[i] - 1;

			err = hc_symbolizer__normalize(agg->sym, e->tgid, ip, &loc);
			if (err)
				goto err_nomem;
			key[n++] = loc.obj;
			key[n++] = loc.off;
		}
	}
	for (size_t i = 0; i < nk; i++)
		key[n++] = i == 0 ? kstack[i] : kstack[i] - 1;

	idx = hc_stacktab__intern(agg->stacks, key, n);
	if (idx < 0)
		goto err_nomem;
	w = hc_stacktab__weights(agg->stacks, (size_t)idx);
	w->samples++;
	w->on_cpu_ns += agg->period_ns;

	{
		char pcomm[HC_TASK_COMM_LEN + 1];

		memcpy(pcomm, e->pcomm, HC_TASK_COMM_LEN);
		pcomm[HC_TASK_COMM_LEN] = '\0';
		if (hc_hist__add(agg->priority, pcomm, e->prio, 1))
			agg->stats.hist_errors++;
	}
	if (add_runq(agg, e->cpu, e->runq_len, 1))
		agg->stats.hist_errors++;
	agg->stats.samples++;
	if (e->kernel_ip)
		agg->stats.kernel_samples++;
	else
		agg->stats.user_samples++;
	if (nu == HC_MAX_STACK_DEPTH)
		agg->stats.truncated_ustacks++;
	if (nk == HC_MAX_STACK_DEPTH)
		agg->stats.truncated_kstacks++;
	return 0;
err_nomem:
	agg->stats.ingest_errors++;
	return -ENOMEM;
}

int hc_agg__exec(struct hc_agg *agg, const struct hc_exec_event *e)
{
	hc_symbolizer__forget_process(agg->sym, e->tgid);
	/* The new image and the dynamic loader are mapped now; libraries come later and are
	 * picked up by normalize()'s re-read on an unknown address. */
	hc_symbolizer__add_process(agg->sym, e->tgid);
	return 0;
}

/* Per distinct frame, resolved once: a table keyed like the stack key's frame words. */
struct frame_cache {
	struct hc_stacktab *keys;
	struct hc_path_elem *elems;
	size_t cap;
};

static int frame_cache__get(struct frame_cache *fc, struct hc_agg *agg, bool kernel,
			    uint64_t a, uint64_t b, struct hc_path_elem *out)
{
	uint64_t k[3] = { kernel, a, b };
	struct hc_frame_info fi = { 0 };
	struct hc_path_elem *el;
	int64_t idx;
	size_t before = hc_stacktab__count(fc->keys);

	idx = hc_stacktab__intern(fc->keys, k, 3);
	if (idx < 0)
		return -ENOMEM;
	if ((size_t)idx < before) {
		*out = fc->elems[idx];
		return 0;
	}
	if ((size_t)idx >= fc->cap) {
		size_t cap = fc->cap ? fc->cap * 2 : 1024;
		struct hc_path_elem *ne = realloc(fc->elems, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		fc->elems = ne;
		fc->cap = cap;
	}
	el = &fc->elems[idx];
	if (kernel) {
		int r = hc_symbolizer__resolve_kernel(agg->sym, a, &fi);

		el->kind = HC_NODE_KERNEL;
		el->name = r == 0 && fi.name ? fi.name : "[unknown]";
		el->module = fi.module;
		el->id = 0;
		el->offset = -1; /* never a raw kernel address */
	} else {
		struct hc_uloc loc = { .obj = (uint32_t)a, .off = b };
		int r = hc_symbolizer__resolve_user(agg->sym, &loc, &fi);

		el->kind = HC_NODE_USER;
		el->id = 0;
		if (r == 0 && fi.name) {
			el->name = fi.name;
			el->module = fi.module;
			el->offset = -1;
		} else {
			/* Unresolved frames stay visible, named by module and offset. */
			el->name = "[unknown]";
			el->module = fi.module;
			el->offset = loc.obj == HC_OBJ_UNKNOWN ? (int64_t)b : (int64_t)fi.offset;
		}
	}
	*out = *el;
	return 0;
}

int hc_agg__build_tree(struct hc_agg *agg, struct hc_tree *tree)
{
	struct frame_cache fc = { 0 };
	struct hc_path_elem *path;
	size_t count = hc_stacktab__count(agg->stacks);
	int err = 0;

	fc.keys = hc_stacktab__new();
	path = calloc(2 + 2 * HC_MAX_STACK_DEPTH, sizeof(*path));
	if (!fc.keys || !path) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t s = 0; s < count; s++) {
		char pcomm[HC_TASK_COMM_LEN + 1], tcomm[HC_TASK_COMM_LEN + 1];
		const uint64_t *key;
		size_t n, nu, nk, depth = 0;

		key = hc_stacktab__key(agg->stacks, s, &n);
		if (n < KEY_HDR)
			continue;
		nu = key[4];
		nk = key[5];
		comm_string(agg, key[2], pcomm);
		comm_string(agg, key[3], tcomm);
		path[depth++] = (struct hc_path_elem){ .kind = HC_NODE_PROCESS, .name = pcomm,
						       .id = key[0], .offset = -1 };
		path[depth++] = (struct hc_path_elem){ .kind = HC_NODE_THREAD, .name = tcomm,
						       .id = key[1], .offset = -1 };
		/* Outermost first: walk user frames from the root end, then kernel frames. */
		for (size_t i = nu; i-- > 0;) {
			/* frame_cache__get may grow the stack table only of fc.keys, not agg->stacks,
			 * so `key` stays valid. */
			err = frame_cache__get(&fc, agg, false, key[KEY_HDR + 2 * i],
					       key[KEY_HDR + 2 * i + 1], &path[depth++]);
			if (err)
				goto out;
		}
		for (size_t i = nk; i-- > 0;) {
			err = frame_cache__get(&fc, agg, true, key[KEY_HDR + 2 * nu + i], 0,
					       &path[depth++]);
			if (err)
				goto out;
		}
		err = hc_tree__add_path(tree, path, depth, hc_stacktab__weights(agg->stacks, s));
		if (err)
			goto out;
	}
out:
	free(path);
	free(fc.elems);
	hc_stacktab__free(fc.keys);
	return err;
}

const struct hc_hist *hc_agg__priority(const struct hc_agg *agg)
{
	return agg->priority;
}

const struct hc_hist *hc_agg__runqueue_length(const struct hc_agg *agg)
{
	return agg->runq;
}

int hc_agg__idle_samples(struct hc_agg *agg, uint32_t cpu, uint64_t count)
{
	return add_runq(agg, cpu, 0, count);
}

void hc_agg__stats(const struct hc_agg *agg, struct hc_agg_stats *out)
{
	*out = agg->stats;
}

size_t hc_agg__stack_count(const struct hc_agg *agg)
{
	return hc_stacktab__count(agg->stacks);
}
