// SPDX-License-Identifier: GPL-2.0-only
#include "sampler/aggregate.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/stacktab.h"

/*
 * Stack key layout (u64 words):
 *   [0] tgid  [1] tid  [2] process comm index  [3] thread comm index  [4] n_user  [5] n_kernel
 *   [6] ext: low 32 bits the waker (index + 1 into `wakers`, 0: none), EXT_* flags above
 *   [7] time bucket: the unix second the time fell in (serve), 0 (record)
 *   then n_user pairs {object id, file offset} (leaf first), then n_kernel kernel addresses
 *   (leaf first). Comm indexes point into `comms`, a table keyed by the 16 comm bytes.
 * On-CPU samples and off-CPU flushes share the table, so one path holds both kinds of time.
 * A waker is [tgid, tid, thread comm index, process comm index, waker stack index + 1]; a
 * waker stack is [n_user, n_kernel, frames as above].
 */
#define KEY_HDR 8
#define KEY_MAX (KEY_HDR + 2 * HC_MAX_STACK_DEPTH + HC_MAX_STACK_DEPTH)
#define EXT_NO_STACK (1ull << 32) /* off-CPU stack not captured (budget) */
#define EXT_NEW (1ull << 33)	  /* a new thread waiting for its first run: no stack yet */
/* --locks: a lock wait; its LCB_F_* flags at bit 34, whether it blocked at 40, and (the
 * lock table's paths) the lock's name, index + 1 into lnames, from bit 42. */
#define EXT_LOCK (1ull << 41)
#define EXT_LOCK_FLAGS_SHIFT 34
#define EXT_LOCK_BLOCKED (1ull << 40)
#define EXT_LOCK_NAME_SHIFT 42
#define LOCK_NAMES_MAX 65535
#define WAKER_KEY 5

struct lock_kind {
	uint64_t count, total_ns, max_ns;
};

/*
 * The flags a kind is counted under. A mutex waiter that got the lock while still spinning on
 * the owner ends with MUTEX|SPIN, one that went to sleep with MUTEX: one kind, "mutex", as
 * hc_lock_kind_name() names both. Counted apart, by_kind listed "mutex" twice per spin/block
 * and the flame graph had two "mutex" lock nodes under one stack.
 */
static uint32_t lock_kind_flags(uint32_t flags)
{
	flags &= HC_LCB_MASK;
	return flags == (HC_LCB_MUTEX | HC_LCB_SPIN) ? HC_LCB_MUTEX : flags;
}

struct hc_agg {
	struct hc_symbolizer *sym;
	uint64_t period_ns;
	struct hc_stacktab *stacks;
	struct hc_stacktab *comms;
	struct hc_hist *priority;
	struct hc_hist *runq;
	struct hc_hist *thist[HC_TH_MAX]; /* oncpu_slice_us, offcpu_us, runqueue_latency_us */
	struct hc_stacktab *wakers;	  /* waker identity (+ stack) */
	struct hc_stacktab *wstacks;	  /* --wakers stacks, normalized */
	struct hc_stacktab *wseqs;	  /* [wakee tid, seq] -> index into wseq_stack */
	uint64_t *wseq_stack;		  /* wstacks index + 1, per wseqs entry */
	size_t wseq_cap;
	uint64_t window_start_ns; /* for the per-second cpu_unclaimed series */
	bool bucketed;		  /* key time by unix second (hc_agg__set_buckets) */
	int64_t mono_to_real_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	int64_t oldest_s;	  /* seconds before this one are not kept */
	uint64_t *unclaimed_s;	  /* ns per second of the window */
	size_t n_unclaimed_s;
	char (*cpu_keys)[16]; /* "cpu N" by CPU number, formatted once, not per sample */
	size_t n_cpu_keys;
	struct hc_unwinder *unw; /* --unwind dwarf; borrowed */
	/* --locks */
	struct hc_stacktab *lstacks; /* contentions: key as `stacks`, weights: spin ns as
				      * on_cpu_ns, blocked ns as off_cpu_ns, samples = count */
	struct hc_hist *lock_hist;   /* lock_wait_ns: quantize per "<kind> spin|block" */
	struct lock_kind lkind[HC_LCB_MASK + 1][2]; /* [flags][blocked] */
	char **lnames;
	size_t n_lnames, cap_lnames;
	struct hc_stacktab *llabel_keys; /* [flags, name index + 1] -> llabels */
	char **llabels;
	size_t n_llabels, cap_llabels;
	struct hc_agg_lock_stats lstats;
	struct hc_agg_stats stats;
	uint64_t upcs[HC_MAX_STACK_DEPTH]; /* an unwound user stack */
	uint64_t key[KEY_MAX + 2];
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
	for (int h = 0; h < HC_TH_MAX; h++)
		agg->thist[h] = hc_hist__new_quantize("us");
	agg->wakers = hc_stacktab__new();
	agg->wstacks = hc_stacktab__new();
	agg->wseqs = hc_stacktab__new();
	agg->lstacks = hc_stacktab__new();
	agg->lock_hist = hc_hist__new_quantize("ns");
	agg->llabel_keys = hc_stacktab__new();
	if (!agg->llabel_keys || !agg->lstacks || !agg->lock_hist || !agg->stacks || !agg->comms ||
	    !agg->priority || !agg->runq || !agg->thist[0] || !agg->thist[1] || !agg->thist[2] ||
	    !agg->wakers || !agg->wstacks || !agg->wseqs) {
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
	for (int h = 0; h < HC_TH_MAX; h++)
		hc_hist__free(agg->thist[h]);
	hc_stacktab__free(agg->wakers);
	hc_stacktab__free(agg->wstacks);
	hc_stacktab__free(agg->wseqs);
	free(agg->wseq_stack);
	hc_stacktab__free(agg->lstacks);
	hc_hist__free(agg->lock_hist);
	for (size_t i = 0; i < agg->n_lnames; i++)
		free(agg->lnames[i]);
	free(agg->lnames);
	for (size_t i = 0; i < agg->n_llabels; i++)
		free(agg->llabels[i]);
	free(agg->llabels);
	hc_stacktab__free(agg->llabel_keys);
	free(agg->unclaimed_s);
	free(agg->cpu_keys);
	free(agg);
}

static int64_t intern_comm(struct hc_agg *agg, const char comm[HC_TASK_COMM_LEN])
{
	uint64_t k[2];

	memcpy(k, comm, sizeof(k));
	return hc_stacktab__intern(agg->comms, k, 2);
}

/* A kernel comm (up to 16 bytes, NUL-padded or not) as a C string. */
static void comm_cstr(const char comm[HC_TASK_COMM_LEN], char out[HC_TASK_COMM_LEN + 1])
{
	memcpy(out, comm, HC_TASK_COMM_LEN);
	out[HC_TASK_COMM_LEN] = '\0';
}

/* Copy a comm key back to a NUL-terminated string. */
static void comm_string(const struct hc_agg *agg, uint64_t idx, char out[HC_TASK_COMM_LEN + 1])
{
	size_t n;
	const uint64_t *k = hc_stacktab__key(agg->comms, (size_t)idx, &n);

	comm_cstr((const char *)k, out);
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

/* A user stack, leaf first; truncated: the unwinder stopped short of the outermost frame,
 * and a "[truncated]" frame ends it. */
struct ustack {
	const __u64 *pcs;
	size_t n;
	bool truncated;
};

/* Normalize a user stack (leaf first) to {object, offset} pairs at key[*n...]. */
static int put_user_frames(struct hc_agg *agg, uint32_t tgid, uint64_t pstart_ns,
			   const struct ustack *us, uint64_t *key, size_t *n)
{
	const __u64 *ustack = us->pcs;
	size_t nu = us->n;

	if (us->truncated) {
		key[*n + 2 * nu] = HC_OBJ_TRUNCATED;
		key[*n + 2 * nu + 1] = 0;
	}
	if (!nu)
		goto out;
	/* Cheap when known; otherwise reads the maps now, while the process lives. */
	hc_symbolizer__add_process(agg->sym, tgid, pstart_ns);
	for (size_t i = 0; i < nu; i++) {
		struct hc_uloc loc;
		/* Callers' frames hold return addresses: step back into the call. */
		uint64_t ip = i == 0 ? ustack[i] : ustack[i] - 1;

		if (hc_symbolizer__normalize(agg->sym, tgid, pstart_ns, ip, &loc))
			return -ENOMEM;
		key[(*n)++] = loc.obj;
		key[(*n)++] = loc.off;
	}
out:
	if (us->truncated)
		*n += 2;
	return 0;
}

static void put_kernel_frames(const __u64 *kstack, size_t nk, uint64_t *key, size_t *n)
{
	for (size_t i = 0; i < nk; i++)
		key[(*n)++] = i == 0 ? kstack[i] : kstack[i] - 1;
}

/* Build the key of a path in agg->key; returns its length, or -ENOMEM. */
static int64_t build_key(struct hc_agg *agg, uint32_t tgid, uint64_t pstart_ns, uint32_t tid,
			 const char pcomm[HC_TASK_COMM_LEN], const char comm[HC_TASK_COMM_LEN],
			 const struct ustack *us, const __u64 *kstack, size_t nk, uint64_t ext)
{
	uint64_t *key = agg->key;
	int64_t pc = intern_comm(agg, pcomm), tc = intern_comm(agg, comm);
	size_t n = KEY_HDR;

	if (pc < 0 || tc < 0)
		return -ENOMEM;
	key[0] = tgid;
	key[1] = tid;
	key[2] = (uint64_t)pc;
	key[3] = (uint64_t)tc;
	key[4] = us->n + us->truncated;
	key[5] = nk;
	key[6] = ext;
	key[7] = 0;
	if (put_user_frames(agg, tgid, pstart_ns, us, key, &n))
		return -ENOMEM;
	put_kernel_frames(kstack, nk, key, &n);
	return (int64_t)n;
}

static struct hc_weights *weights_of(struct hc_agg *agg, size_t n)
{
	int64_t idx = hc_stacktab__intern(agg->stacks, agg->key, n);

	return idx < 0 ? NULL : hc_stacktab__weights(agg->stacks, (size_t)idx);
}

/* Pieces an off-CPU flush is spread over, at most (one per second up to this many seconds). */
#define SPREAD_MAX 120

static int64_t real_second(const struct hc_agg *agg, uint64_t mono_ns)
{
	int64_t real = (int64_t)mono_ns + agg->mono_to_real_ns;

	return real >= 0 ? real / 1000000000ll : 0;
}

void hc_agg__set_buckets(struct hc_agg *agg, int64_t mono_to_real_ns, int64_t oldest_s)
{
	agg->bucketed = true;
	agg->mono_to_real_ns = mono_to_real_ns;
	agg->oldest_s = oldest_s;
}

/*
 * Add ns of off-CPU (off = true) or run-queue time at the key in agg->key (n words). Bucketed,
 * the time is spread evenly over the seconds of [first_ns, last_ns] (a flush sums intervals
 * between those instants; one long block spans many seconds); seconds before oldest_s are
 * counted, not kept.
 */
static int add_offcpu_time(struct hc_agg *agg, size_t n, bool off, uint64_t ns, uint64_t first_ns,
			   uint64_t last_ns)
{
	int64_t a, b, lo, s1, oldest_ns, step;
	uint64_t given = 0;

	if (!agg->bucketed) {
		struct hc_weights *w = weights_of(agg, n);

		if (!w)
			return -ENOMEM;
		*(off ? &w->off_cpu_ns : &w->runqueue_ns) += ns;
		return 0;
	}
	b = (int64_t)last_ns + agg->mono_to_real_ns;
	a = first_ns && first_ns < last_ns ? (int64_t)first_ns + agg->mono_to_real_ns : b;
	if (a < 0)
		a = 0;
	if (b < a)
		b = a;
	oldest_ns = agg->oldest_s * 1000000000ll;
	if (b < oldest_ns) {
		agg->stats.expired_ns += ns;
		return 0;
	}
	if (a < oldest_ns) { /* the part before the oldest second kept */
		given = (uint64_t)((unsigned __int128)ns * (uint64_t)(oldest_ns - a) /
				   (uint64_t)(b - a));
		agg->stats.expired_ns += given;
		lo = oldest_ns;
	} else {
		lo = a;
	}
	s1 = b / 1000000000ll;
	/* At most SPREAD_MAX pieces: a block of days does not cost a key per second (its time
	 * then lands on the first second of each piece). */
	step = (s1 - lo / 1000000000ll + SPREAD_MAX) / SPREAD_MAX;
	for (int64_t sec = lo / 1000000000ll; sec <= s1; sec += step) {
		int64_t hi = sec + step > s1 ? b : (sec + step) * 1000000000ll;
		uint64_t part = sec + step > s1
					? ns - given
					: (uint64_t)((unsigned __int128)ns * (uint64_t)(hi - lo) /
						     (uint64_t)(b - a));
		struct hc_weights *w;

		given += part;
		lo = hi;
		agg->key[7] = (uint64_t)sec;
		w = weights_of(agg, n);
		if (!w)
			return -ENOMEM;
		*(off ? &w->off_cpu_ns : &w->runqueue_ns) += part;
	}
	return 0;
}

/* Per-second cpu_unclaimed series: add ns to the second of the window holding t. */
static int add_unclaimed(struct hc_agg *agg, uint64_t t, uint64_t ns)
{
	uint64_t sec = t > agg->window_start_ns ? (t - agg->window_start_ns) / 1000000000ull : 0;

	if (sec >= 1u << 20)
		return -EINVAL;
	if (sec >= agg->n_unclaimed_s) {
		uint64_t *a = realloc(agg->unclaimed_s, (sec + 1) * sizeof(*a));

		if (!a)
			return -ENOMEM;
		memset(a + agg->n_unclaimed_s, 0, (sec + 1 - agg->n_unclaimed_s) * sizeof(*a));
		agg->unclaimed_s = a;
		agg->n_unclaimed_s = sec + 1;
	}
	agg->unclaimed_s[sec] += ns;
	agg->stats.unclaimed_ns += ns;
	return 0;
}

/* The copy that follows a sample's frames (size as the sampler validated it), or NULL. */
static const struct hc_ucopy *sample_ucopy(const struct hc_sample_event *e, size_t size)
{
	size_t off = HC_SAMPLE_HDR_SIZE + (e->ustack_len > 0 ? (size_t)e->ustack_len : 0) +
		     (e->kstack_len > 0 ? (size_t)e->kstack_len : 0);

	if (!e->ucopy_size || off + e->ucopy_size > size || e->ucopy_size < sizeof(struct hc_ucopy))
		return NULL;
	return (const struct hc_ucopy *)((const char *)e + off);
}

static void set_unwound(struct hc_agg *agg, struct ustack *us, const uint64_t *pcs, size_t n,
			enum hc_unwind_end end)
{
	us->pcs = (const __u64 *)pcs; /* the same 64-bit words */
	us->n = n;
	/* A stack cut at the depth limit is as deep as a frame-pointer one may be: counted in
	 * truncated_ustacks, without a marker, like those. */
	us->truncated = end != HC_UNWIND_COMPLETE && end != HC_UNWIND_DEPTH;
	agg->stats.ustacks_dwarf++;
	if (us->truncated)
		agg->stats.ustacks_dwarf_truncated++;
}

/* Unwind copy c into agg->upcs and point *us at it; on failure *us (the frame-pointer
 * stack) stays. */
static int unwind(struct hc_agg *agg, uint32_t tgid, uint64_t pstart_ns, const struct hc_ucopy *c,
		  struct ustack *us)
{
	enum hc_unwind_end end;
	size_t n;
	int err;

	/* Cheap when known; otherwise reads the maps now, while the process lives. */
	hc_symbolizer__add_process(agg->sym, tgid, pstart_ns);
	err = hc_unwinder__unwind(agg->unw, tgid, pstart_ns, c, agg->upcs, HC_MAX_STACK_DEPTH, &n,
				  &end);
	if (err) {
		agg->stats.ustacks_fp_fallback++;
		return err;
	}
	set_unwound(agg, us, agg->upcs, n, end);
	return 0;
}

int hc_agg__sample(struct hc_agg *agg, const struct hc_sample_event *e, size_t size)
{
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	struct hc_weights *w;
	int64_t n;

	struct ustack us = {.pcs = e->stacks, .n = nu};
	const struct hc_ucopy *c;

	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	/* --unwind dwarf: the unwound stack replaces the frame-pointer one. */
	c = agg->unw ? sample_ucopy(e, size) : NULL;
	if (c) {
		if (unwind(agg, e->tgid, e->pstart_ns, c, &us) == -ENOMEM)
			goto err_nomem;
	} else if (nu) {
		agg->stats.ustacks_fp++;
	}
	n = build_key(agg, e->tgid, e->pstart_ns, e->tid, e->pcomm, e->comm, &us, e->stacks + nu,
		      nk, 0);
	if (n >= 0 && agg->bucketed)
		agg->key[7] = (uint64_t)real_second(agg, e->time_ns);
	w = n < 0 ? NULL : weights_of(agg, (size_t)n);
	if (!w)
		goto err_nomem;
	w->samples++;
	w->on_cpu_ns += agg->period_ns;

	/* Whole-window histograms and the cpu_unclaimed series are record's; bucketed (serve),
	 * the caller keeps its own per second and per process. */
	if (!agg->bucketed) {
		char pcomm[HC_TASK_COMM_LEN + 1];

		comm_cstr(e->pcomm, pcomm);
		if (hc_hist__add(agg->priority, pcomm, e->prio, 1))
			agg->stats.hist_errors++;
		if (add_runq(agg, e->cpu, e->runq_len, 1))
			agg->stats.hist_errors++;
		/* cpuunclaimed: CPUs idle while this one had tasks waiting, shared among the
		 * CPUs that had tasks waiting at that moment (each samples the same instant). */
		if (e->idle_cpus && e->queued_cpus &&
		    add_unclaimed(agg, e->time_ns, agg->period_ns * e->idle_cpus / e->queued_cpus))
			agg->stats.hist_errors++;
	}
	agg->stats.samples++;
	if (e->kernel_ip)
		agg->stats.kernel_samples++;
	else
		agg->stats.user_samples++;
	if (us.n == HC_MAX_STACK_DEPTH)
		agg->stats.truncated_ustacks++;
	if (nk == HC_MAX_STACK_DEPTH)
		agg->stats.truncated_kstacks++;
	return 0;
err_nomem:
	agg->stats.ingest_errors++;
	return -ENOMEM;
}

/* The waker entry (index + 1) for a flush, 0 when no wakeup was seen. */
static int64_t waker_ref(struct hc_agg *agg, const struct hc_offcpu_event *e)
{
	uint64_t k[WAKER_KEY], wstack = 0;
	int64_t wc, wpc, idx;

	if (!e->n_blocked || !e->waker_comm[0])
		return 0;
	if (e->waker_seq) {
		uint64_t sk[2] = {e->tid, e->waker_seq};
		size_t before = hc_stacktab__count(agg->wseqs);
		int64_t si = hc_stacktab__intern(agg->wseqs, sk, 2);

		if (si < 0)
			return -ENOMEM;
		if ((size_t)si < before)
			wstack = agg->wseq_stack[si];
		else
			agg->stats.waker_stack_missing++; /* its record was lost */
	}
	wc = intern_comm(agg, e->waker_comm);
	wpc = intern_comm(agg, e->waker_pcomm);
	if (wc < 0 || wpc < 0)
		return -ENOMEM;
	k[0] = e->waker_tgid;
	k[1] = e->waker_tid;
	k[2] = (uint64_t)wc;
	k[3] = (uint64_t)wpc;
	k[4] = wstack;
	idx = hc_stacktab__intern(agg->wakers, k, WAKER_KEY);
	return idx < 0 ? idx : idx + 1;
}

int hc_agg__offcpu(struct hc_agg *agg, const struct hc_offcpu_event *e, size_t size)
{
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	struct ustack us = {.pcs = e->stacks};
	uint64_t ext = 0;
	int64_t n, wref;

	(void)size;
	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	agg->stats.off_ns += e->off_ns + e->short_off_ns;
	agg->stats.runqueue_ns += e->rq_ns + e->short_rq_ns;
	agg->stats.short_off_ns += e->short_off_ns;
	agg->stats.short_rq_ns += e->short_rq_ns;
	agg->stats.blocked_intervals += e->n_blocked;
	agg->stats.preempted_intervals += e->n_preempted;
	agg->stats.offcpu_flushes++;
	if (e->flags & (HC_OFF_NO_STACK | HC_OFF_NEW)) {
		ext = e->flags & HC_OFF_NEW ? EXT_NEW : EXT_NO_STACK;
		nu = nk = 0;
	}
	us.n = nu;
	if (nu && agg->unw && e->ucopy_seq) {
		const uint64_t *pcs;
		enum hc_unwind_end end;
		size_t n_pcs;

		/* The switch-out's copy came before this flush and was unwound then. */
		if (!hc_unwinder__stashed(agg->unw, e->tid, e->ucopy_seq, &pcs, &n_pcs, &end))
			set_unwound(agg, &us, pcs, n_pcs, end);
		else
			agg->stats.ustacks_fp_fallback++;
	} else if (nu) {
		agg->stats.ustacks_fp++;
	}
	/* Run-queue time hangs on the thread's own stack... */
	if (e->rq_ns) {
		n = build_key(agg, e->tgid, e->pstart_ns, e->tid, e->pcomm, e->comm, &us,
			      e->stacks + nu, nk, ext);
		if (n < 0 ||
		    add_offcpu_time(agg, (size_t)n, false, e->rq_ns, e->first_ns, e->last_ns))
			goto err_nomem;
	}
	/* ...blocked time under its waker, when one was seen; a lock wait is marked. */
	if (e->off_ns) {
		wref = waker_ref(agg, e);
		if (wref < 0)
			goto err_nomem;
		if (e->lock & HC_LOCK_WAIT)
			ext |= EXT_LOCK | EXT_LOCK_BLOCKED |
			       (uint64_t)lock_kind_flags(e->lock) << EXT_LOCK_FLAGS_SHIFT;
		n = build_key(agg, e->tgid, e->pstart_ns, e->tid, e->pcomm, e->comm, &us,
			      e->stacks + nu, nk, ext | (uint64_t)wref);
		if (n < 0 ||
		    add_offcpu_time(agg, (size_t)n, true, e->off_ns, e->first_ns, e->last_ns))
			goto err_nomem;
	}
	return 0;
err_nomem:
	agg->stats.ingest_errors++;
	agg->stats.offcpu_lost_ns += e->off_ns + e->rq_ns;
	return -ENOMEM;
}

int hc_agg__waker(struct hc_agg *agg, const struct hc_waker_event *e, size_t size)
{
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	uint64_t sk[2] = {e->tid, e->seq}, *key = agg->key;
	struct ustack us = {.pcs = e->stacks, .n = nu};
	int64_t si, wi;
	size_t n = 2;

	(void)size;
	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	key[0] = nu;
	key[1] = nk;
	/* The waker's start time is not recorded: its tgid alone (0: not checked). */
	if (put_user_frames(agg, e->waker_tgid, 0, &us, key, &n))
		goto err_nomem;
	put_kernel_frames(e->stacks + nu, nk, key, &n);
	wi = hc_stacktab__intern(agg->wstacks, key, n);
	si = wi < 0 ? wi : hc_stacktab__intern(agg->wseqs, sk, 2);
	if (si < 0)
		goto err_nomem;
	if ((size_t)si >= agg->wseq_cap) {
		size_t cap = agg->wseq_cap ? agg->wseq_cap * 2 : 256;
		uint64_t *a = realloc(agg->wseq_stack, cap * sizeof(*a));

		if (!a)
			goto err_nomem;
		agg->wseq_stack = a;
		agg->wseq_cap = cap;
	}
	agg->wseq_stack[si] = (uint64_t)wi + 1;
	return 0;
err_nomem:
	agg->stats.ingest_errors++;
	return -ENOMEM;
}

int hc_agg__thist(struct hc_agg *agg, const struct hc_thist_event *e)
{
	char pcomm[HC_TASK_COMM_LEN + 1];

	comm_cstr(e->pcomm, pcomm);
	for (int h = 0; h < HC_TH_MAX; h++)
		for (int k = 0; k < HC_QSLOTS; k++)
			if (e->slots[h][k] &&
			    hc_hist__add(agg->thist[h], pcomm, k ? (int64_t)1 << (k - 1) : 0,
					 e->slots[h][k]))
				agg->stats.hist_errors++;
	return 0;
}

void hc_agg__set_window_start(struct hc_agg *agg, uint64_t start_ns)
{
	agg->window_start_ns = start_ns;
}

const struct hc_hist *hc_agg__sched_hist(const struct hc_agg *agg, enum hc_thist which)
{
	return which < HC_TH_MAX ? agg->thist[which] : NULL;
}

const uint64_t *hc_agg__unclaimed_per_second(const struct hc_agg *agg, size_t *n)
{
	*n = agg->n_unclaimed_s;
	return agg->unclaimed_s;
}

void hc_agg__set_unwinder(struct hc_agg *agg, struct hc_unwinder *unw)
{
	agg->unw = unw;
}

int hc_agg__ustack(struct hc_agg *agg, const struct hc_ustack_event *e, size_t size)
{
	enum hc_unwind_end end;
	size_t n;
	int err;

	(void)size; /* validated by the sampler */
	if (!agg->unw)
		return 0;
	hc_symbolizer__add_process(agg->sym, e->tgid, e->pstart_ns);
	err = hc_unwinder__unwind(agg->unw, e->tgid, e->pstart_ns, &e->copy, agg->upcs,
				  HC_MAX_STACK_DEPTH, &n, &end);
	if (err == -ESRCH)
		return 0; /* its flushes fall back to the frame pointers, counted then */
	if (!err)
		err = hc_unwinder__stash(agg->unw, e->tgid, e->tid, e->seq, agg->upcs, n, end);
	if (err)
		agg->stats.ingest_errors++;
	return err;
}

int hc_agg__exec(struct hc_agg *agg, const struct hc_exec_event *e)
{
	hc_symbolizer__forget_process(agg->sym, e->tgid);
	/* The new image and the dynamic loader are mapped now; libraries come later and are
	 * picked up by normalize()'s re-read on an unknown address. */
	hc_symbolizer__add_process(agg->sym, e->tgid, e->pstart_ns);
	return 0;
}

const char *hc_lock_kind_name(uint32_t flags)
{
	switch (flags & HC_LCB_MASK) {
	case 0:
		return "semaphore";
	case HC_LCB_SPIN:
		return "spinlock";
	case HC_LCB_SPIN | HC_LCB_READ:
		return "rwlock:R";
	case HC_LCB_SPIN | HC_LCB_WRITE:
		return "rwlock:W";
	case HC_LCB_READ:
		return "rwsem:R";
	case HC_LCB_WRITE:
		return "rwsem:W";
	case HC_LCB_RT:
		return "rtmutex";
	case HC_LCB_RT | HC_LCB_READ:
		return "rwlock-rt:R";
	case HC_LCB_RT | HC_LCB_WRITE:
		return "rwlock-rt:W";
	case HC_LCB_PERCPU | HC_LCB_READ:
		return "pcpu-sem:R";
	case HC_LCB_PERCPU | HC_LCB_WRITE:
		return "pcpu-sem:W";
	case HC_LCB_MUTEX:
	case HC_LCB_MUTEX | HC_LCB_SPIN: /* still spinning on the owner when it got the lock */
		return "mutex";
	default:
		return "other";
	}
}

/* The lock's name, index + 1 into lnames; 0: none (not a symbol, or too many names). */
static uint64_t lock_name(struct hc_agg *agg, const struct hc_lock_event *e)
{
	const char *name = NULL;

	if (e->named == HC_LOCK_MMAP)
		name = "mmap_lock";
	else if (e->named == HC_LOCK_SIGHAND)
		name = "siglock";
	else if (hc_symbolizer__kernel_data(agg->sym, e->lock_addr, &name))
		return 0;
	for (size_t i = 0; i < agg->n_lnames; i++)
		if (!strcmp(agg->lnames[i], name))
			return i + 1;
	if (agg->n_lnames >= LOCK_NAMES_MAX) {
		agg->lstats.unnamed_over_limit++;
		return 0;
	}
	if (agg->n_lnames == agg->cap_lnames) {
		size_t cap = agg->cap_lnames ? agg->cap_lnames * 2 : 16;
		char **n = realloc(agg->lnames, cap * sizeof(*n));

		if (!n)
			return 0;
		agg->lnames = n;
		agg->cap_lnames = cap;
	}
	agg->lnames[agg->n_lnames] = strdup(name);
	if (!agg->lnames[agg->n_lnames])
		return 0;
	return ++agg->n_lnames;
}

int hc_agg__lock(struct hc_agg *agg, const struct hc_lock_event *e, size_t size)
{
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	struct ustack us = {.pcs = e->stacks, .n = nu};
	uint32_t f = lock_kind_flags(e->flags);
	bool blocked = e->blocked != 0;
	struct lock_kind *lk = &agg->lkind[f][blocked];
	char key[64];
	uint64_t ext, wait = e->wait_ns;
	struct hc_weights *w;
	int64_t n, idx;
	int err;

	(void)size; /* validated by the sampler */
	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	agg->lstats.events++;
	agg->lstats.wait_ns += wait;
	if (e->ret)
		agg->lstats.failed++;
	if (!e->ustack_len && !e->kstack_len)
		agg->lstats.no_stack++;
	lk->count++;
	lk->total_ns += wait;
	if (wait > lk->max_ns)
		lk->max_ns = wait;
	snprintf(key, sizeof(key), "%s %s", hc_lock_kind_name(f), blocked ? "block" : "spin");
	err = hc_hist__add(agg->lock_hist, key, wait > INT64_MAX ? INT64_MAX : (int64_t)wait, 1);
	if (err == -ENOMEM)
		goto err_nomem;
	if (err)
		agg->stats.hist_errors++;
	ext = EXT_LOCK | (uint64_t)f << EXT_LOCK_FLAGS_SHIFT | (blocked ? EXT_LOCK_BLOCKED : 0) |
	      lock_name(agg, e) << EXT_LOCK_NAME_SHIFT;
	n = build_key(agg, e->tgid, e->pstart_ns, e->tid, e->pcomm, e->comm, &us, e->stacks + nu,
		      nk, ext);
	if (n < 0)
		goto err_nomem;
	if (agg->bucketed) {
		int64_t sec = real_second(agg, e->start_ns + wait);

		if (sec < agg->oldest_s) {
			agg->lstats.expired++;
			return 0;
		}
		agg->key[7] = (uint64_t)sec;
	}
	idx = hc_stacktab__intern(agg->lstacks, agg->key, (size_t)n);
	if (idx < 0)
		goto err_nomem;
	w = hc_stacktab__weights(agg->lstacks, (size_t)idx);
	*(blocked ? &w->off_cpu_ns : &w->on_cpu_ns) += wait;
	w->samples++;
	return 0;
err_nomem:
	agg->lstats.ingest_errors++;
	return -ENOMEM;
}

void hc_agg__lock_stats(const struct hc_agg *agg, struct hc_agg_lock_stats *out)
{
	*out = agg->lstats;
}

const struct hc_hist *hc_agg__lock_hist(const struct hc_agg *agg)
{
	return agg->lock_hist;
}

/* by_kind: [{kind, spin, count, total_ns, max_ns}], the most waited-for first. */
json_t *hc_agg__lock_kinds_json(const struct hc_agg *agg)
{
	struct {
		uint32_t f;
		int b;
	} order[(HC_LCB_MASK + 1) * 2];
	size_t n = 0;
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	for (uint32_t f = 0; f <= HC_LCB_MASK; f++)
		for (int b = 0; b < 2; b++)
			if (agg->lkind[f][b].count)
				order[n++] = (typeof(order[0])){f, b};
	for (size_t i = 1; i < n; i++) /* insertion sort: at most 128, usually a few */
		for (size_t j = i; j > 0; j--) {
			const struct lock_kind *x = &agg->lkind[order[j].f][order[j].b];
			const struct lock_kind *y = &agg->lkind[order[j - 1].f][order[j - 1].b];

			if (x->total_ns <= y->total_ns)
				break;
			typeof(order[0]) t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		const struct lock_kind *k = &agg->lkind[order[i].f][order[i].b];

		if (json_array_append_new(arr, json_pack("{s:s, s:b, s:I, s:I, s:I}", "kind",
							 hc_lock_kind_name(order[i].f), "spin",
							 !order[i].b, "count", (json_int_t)k->count,
							 "total_ns", (json_int_t)k->total_ns,
							 "max_ns", (json_int_t)k->max_ns))) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

json_t *hc_locks_json(const struct hc_agg *agg, const uint64_t *t)
{
	const struct hc_agg_lock_stats *ls = &agg->lstats;
	json_t *by = hc_agg__lock_kinds_json(agg);

	if (!by)
		return NULL;
	return json_pack("{s:I, s:I, s:I, s:I, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
			 "events", (json_int_t)ls->events, "wait_ns", (json_int_t)ls->wait_ns,
			 "failed", (json_int_t)ls->failed, "no_stack", (json_int_t)ls->no_stack,
			 "by_kind", by, "dropped", "ringbuf_full", (json_int_t)t[HC_CNT_LOCK_LOST],
			 "ringbuf_full_ns", (json_int_t)t[HC_CNT_LOCK_LOST_NS], "nested",
			 (json_int_t)t[HC_CNT_LOCK_NESTED], "unmatched",
			 (json_int_t)t[HC_CNT_LOCK_UNMATCHED], "task_state_nomem",
			 (json_int_t)t[HC_CNT_LOCK_NOMEM], "ingest_error",
			 (json_int_t)ls->ingest_errors, "expired", (json_int_t)ls->expired);
}

/*
 * Per distinct frame, resolved once: a table keyed like the stack key's frame words. A user
 * frame may stand for several path elements: the function, then what was inlined into it
 * (outermost first), all in elems[first .. first + n).
 */
struct frame_cache {
	struct hc_stacktab *keys;
	struct fc_ent {
		uint32_t first, n;
	} * ents;
	size_t cap;
	struct hc_path_elem *elems;
	size_t n_elems, cap_elems;
};

static struct hc_path_elem *fc_elems(struct frame_cache *fc, size_t n)
{
	if (fc->n_elems + n > fc->cap_elems) {
		size_t cap = fc->cap_elems ? fc->cap_elems * 2 : 1024;
		struct hc_path_elem *ne;

		while (cap < fc->n_elems + n)
			cap *= 2;
		if (cap > UINT32_MAX)
			return NULL;
		ne = realloc(fc->elems, cap * sizeof(*ne));
		if (!ne)
			return NULL;
		fc->elems = ne;
		fc->cap_elems = cap;
	}
	return &fc->elems[fc->n_elems];
}

/* The elements of frame (kernel, a, b): *out (valid until the next call) and their count. */
static int frame_cache__get(struct frame_cache *fc, struct hc_agg *agg, bool kernel, uint64_t a,
			    uint64_t b, const struct hc_path_elem **out, size_t *count)
{
	struct hc_frame_info fi[HC_SYM_INLINE_MAX + 1] = {{0}};
	uint64_t k[3] = {kernel, a, b};
	size_t before = hc_stacktab__count(fc->keys), n = 1;
	struct hc_path_elem *el;
	int64_t idx;

	idx = hc_stacktab__intern(fc->keys, k, 3);
	if (idx < 0)
		return -ENOMEM;
	if ((size_t)idx < before) {
		*out = &fc->elems[fc->ents[idx].first];
		*count = fc->ents[idx].n;
		return 0;
	}
	if ((size_t)idx >= fc->cap) {
		size_t cap = fc->cap ? fc->cap * 2 : 1024;
		struct fc_ent *ne = realloc(fc->ents, cap * sizeof(*ne));

		if (!ne)
			return -ENOMEM;
		fc->ents = ne;
		fc->cap = cap;
	}
	if (kernel) {
		int r = hc_symbolizer__resolve_kernel(agg->sym, a, &fi[0]);

		el = fc_elems(fc, 1);
		if (!el)
			return -ENOMEM;
		el->kind = HC_NODE_KERNEL;
		el->name = r == 0 && fi[0].name ? fi[0].name : "[unknown]";
		el->module = fi[0].module;
		el->id = 0;
		el->offset = -1; /* never a raw kernel address */
		el->inlined = false;
	} else if (a == HC_OBJ_TRUNCATED) {
		/* The unwinder stopped short of the outermost frame: callers are missing. */
		el = fc_elems(fc, 1);
		if (!el)
			return -ENOMEM;
		*el = (struct hc_path_elem){
			.kind = HC_NODE_USER, .name = "[truncated]", .offset = -1};
	} else {
		struct hc_uloc loc = {.obj = (uint32_t)a, .off = b};
		int r = hc_symbolizer__resolve_user_inline(agg->sym, &loc, fi,
							   HC_SYM_INLINE_MAX + 1, &n);

		if (r == -ENOMEM)
			return r;
		el = fc_elems(fc, n);
		if (!el)
			return -ENOMEM;
		el->kind = HC_NODE_USER;
		el->id = 0;
		el->inlined = false;
		if (r == 0 && fi[0].name) {
			el->name = fi[0].name;
			el->module = fi[0].module;
			el->offset = -1;
		} else {
			/* Unresolved frames stay visible, named by module and offset. */
			el->name = "[unknown]";
			el->module = fi[0].module;
			el->offset = loc.obj == HC_OBJ_UNKNOWN ? (int64_t)b : (int64_t)fi[0].offset;
			/* An address in no mapping can be anything (a corrupt frame chain, an
			 * emulator's stack): one above 2^63 has no offset JSON could print,
			 * and two such would be distinct nodes that print the same. */
			if (el->offset < 0)
				el->offset = -1;
		}
		/* What the compiler inlined there (DWARF), innermost last. */
		for (size_t i = 1; i < n; i++)
			el[i] = (struct hc_path_elem){.kind = HC_NODE_USER,
						      .name = fi[i].name,
						      .module = fi[i].module,
						      .offset = -1,
						      .inlined = true};
	}
	fc->ents[idx] = (struct fc_ent){.first = (uint32_t)fc->n_elems, .n = (uint32_t)n};
	fc->n_elems += n;
	*out = el;
	*count = n;
	return 0;
}

/*
 * Appends frame (kernel, a, b) to the path, its inlined functions too while *spare allows
 * (the path must stay within HC_AGG_MAX_PATH): past it, the innermost of them are kept, and
 * the rest counted in inline_dropped.
 */
static int put_frame(struct frame_cache *fc, struct hc_agg *agg, bool kernel, uint64_t a,
		     uint64_t b, struct hc_path_elem *path, size_t *depth, size_t *spare)
{
	const struct hc_path_elem *el;
	size_t n, keep;
	int err = frame_cache__get(fc, agg, kernel, a, b, &el, &n);

	if (err)
		return err;
	path[(*depth)++] = el[0];
	keep = n - 1 <= *spare ? n - 1 : *spare;
	agg->stats.inline_dropped += n - 1 - keep;
	*spare -= keep;
	for (size_t i = n - keep; i < n; i++)
		path[(*depth)++] = el[i];
	return 0;
}

/* The waker's user and kernel frame counts from its stack key, false when it has none. */
static bool waker_stack(struct hc_agg *agg, const uint64_t *wk, const uint64_t **sk, size_t *nu,
			size_t *nk)
{
	size_t sn;

	if (!wk[4])
		return false;
	*sk = hc_stacktab__key(agg->wstacks, wk[4] - 1, &sn);
	if (sn < 2)
		return false;
	*nu = (*sk)[0];
	*nk = (*sk)[1];
	return sn == 2 + 2 * *nu + *nk;
}

/* The waker node and, with --wakers, the waker's frames (outermost first). */
static int waker_path(struct hc_agg *agg, struct frame_cache *fc, size_t widx,
		      char wcomm[HC_TASK_COMM_LEN + 1], struct hc_path_elem *path, size_t *depth,
		      size_t *spare)
{
	size_t n, nu, nk;
	const uint64_t *wk = hc_stacktab__key(agg->wakers, widx, &n), *sk;
	int err;

	if (n != WAKER_KEY)
		return 0;
	if (wk[1] == 0)
		snprintf(wcomm, HC_TASK_COMM_LEN + 1, "[interrupt]"); /* woken from the idle task */
	else
		comm_string(agg, wk[2], wcomm);
	path[(*depth)++] = (struct hc_path_elem){
		.kind = HC_NODE_WAKER, .name = wcomm, .id = wk[1], .offset = (int64_t)wk[0]};
	if (!waker_stack(agg, wk, &sk, &nu, &nk))
		return 0;
	for (size_t i = nu; i-- > 0;) {
		err = put_frame(fc, agg, false, sk[2 + 2 * i], sk[2 + 2 * i + 1], path, depth,
				spare);
		if (err)
			return err;
	}
	for (size_t i = nk; i-- > 0;) {
		err = put_frame(fc, agg, true, sk[2 + 2 * nu + i], 0, path, depth, spare);
		if (err)
			return err;
	}
	return 0;
}

/* A lock node's name, "<kind>" or "<kind> <lock name>": one string per distinct label, kept
 * as long as agg (path consumers may key frames by the name's address, as serve's collector
 * does). NULL on allocation failure. */
static const char *lock_label(struct hc_agg *agg, uint64_t ext)
{
	uint64_t ni = ext >> EXT_LOCK_NAME_SHIFT;
	uint32_t f = (uint32_t)(ext >> EXT_LOCK_FLAGS_SHIFT) & HC_LCB_MASK;
	uint64_t k[2] = {f, ni <= agg->n_lnames ? ni : 0};
	size_t before = hc_stacktab__count(agg->llabel_keys);
	int64_t idx = hc_stacktab__intern(agg->llabel_keys, k, 2);
	char buf[160];

	if (idx < 0)
		return NULL;
	if ((size_t)idx < before)
		return agg->llabels[idx];
	if ((size_t)idx >= agg->cap_llabels) {
		size_t cap = agg->cap_llabels ? agg->cap_llabels * 2 : 16;
		char **n = realloc(agg->llabels, cap * sizeof(*n));

		if (!n)
			return NULL;
		agg->llabels = n;
		agg->cap_llabels = cap;
	}
	if (k[1])
		snprintf(buf, sizeof(buf), "%s %s", hc_lock_kind_name(f), agg->lnames[k[1] - 1]);
	else
		snprintf(buf, sizeof(buf), "%s", hc_lock_kind_name(f));
	agg->llabels[idx] = strdup(buf);
	agg->n_llabels = (size_t)idx + 1;
	return agg->llabels[idx];
}

/* Path elements of stack key `key` without inlined functions: what may never be left out. */
static size_t base_depth(struct hc_agg *agg, const uint64_t *key)
{
	size_t n = 2 + key[4] + key[5], wn, nu, nk;
	const uint64_t *wk, *sk;

	if (key[6] & (EXT_NO_STACK | EXT_NEW))
		n++;
	if (key[6] & EXT_LOCK)
		n++;
	if ((uint32_t)key[6]) {
		wk = hc_stacktab__key(agg->wakers, (uint32_t)key[6] - 1, &wn);
		if (wn == WAKER_KEY)
			n += 1 + (waker_stack(agg, wk, &sk, &nu, &nk) ? nu + nk : 0);
	}
	return n;
}

static int for_each_path(struct hc_agg *agg, struct hc_stacktab *tab, hc_agg_path_fn fn, void *ctx)
{
	struct frame_cache fc = {0};
	struct hc_path_elem *path;
	size_t count = hc_stacktab__count(tab);
	int err = 0;

	fc.keys = hc_stacktab__new();
	path = calloc(HC_AGG_MAX_PATH, sizeof(*path));
	if (!fc.keys || !path) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t s = 0; s < count; s++) {
		char pcomm[HC_TASK_COMM_LEN + 1], tcomm[HC_TASK_COMM_LEN + 1];
		char wcomm[HC_TASK_COMM_LEN + 1];
		const uint64_t *key;
		size_t n, nu, nk, depth = 0, spare;
		uint64_t ext;

		key = hc_stacktab__key(tab, s, &n);
		if (n < KEY_HDR)
			continue;
		nu = key[4];
		nk = key[5];
		ext = key[6];
		/* at most 2 + 2 * 128 + 2 * 127 + 2 = 514 (HC_MAX_STACK_DEPTH 127): room for
		 * inlined functions is what is left of HC_AGG_MAX_PATH */
		spare = HC_AGG_MAX_PATH - base_depth(agg, key);
		comm_string(agg, key[2], pcomm);
		comm_string(agg, key[3], tcomm);
		path[depth++] = (struct hc_path_elem){
			.kind = HC_NODE_PROCESS, .name = pcomm, .id = key[0], .offset = -1};
		path[depth++] = (struct hc_path_elem){
			.kind = HC_NODE_THREAD, .name = tcomm, .id = key[1], .offset = -1};
		/* Outermost first: walk user frames from the root end, then kernel frames. */
		for (size_t i = nu; i-- > 0;) {
			/* frame_cache__get may grow the stack table only of fc.keys, not
			 * agg->stacks, so `key` stays valid. */
			err = put_frame(&fc, agg, false, key[KEY_HDR + 2 * i],
					key[KEY_HDR + 2 * i + 1], path, &depth, &spare);
			if (err)
				goto out;
		}
		for (size_t i = nk; i-- > 0;) {
			err = put_frame(&fc, agg, true, key[KEY_HDR + 2 * nu + i], 0, path, &depth,
					&spare);
			if (err)
				goto out;
		}
		if (ext & (EXT_NO_STACK | EXT_NEW))
			path[depth++] = (struct hc_path_elem){
				.kind = HC_NODE_USER,
				.name = ext & EXT_NEW ? "[new thread, not run yet]"
						      : "[not captured]",
				.offset = -1};
		if (ext & EXT_LOCK) {
			const char *label = lock_label(agg, ext);

			if (!label) {
				err = -ENOMEM;
				goto out;
			}
			path[depth++] = (struct hc_path_elem){
				.kind = HC_NODE_LOCK, .name = label, .offset = -1};
		}
		if ((uint32_t)ext) {
			err = waker_path(agg, &fc, (uint32_t)ext - 1, wcomm, path, &depth, &spare);
			if (err)
				goto out;
		}
		err = fn(ctx, path, depth, hc_stacktab__weights(tab, s), (int64_t)key[7]);
		if (err)
			goto out;
	}
out:
	free(path);
	free(fc.elems);
	free(fc.ents);
	hc_stacktab__free(fc.keys);
	return err;
}

int hc_agg__for_each_path(struct hc_agg *agg, hc_agg_path_fn fn, void *ctx)
{
	return for_each_path(agg, agg->stacks, fn, ctx);
}

int hc_agg__for_each_lock_path(struct hc_agg *agg, hc_agg_path_fn fn, void *ctx)
{
	return for_each_path(agg, agg->lstacks, fn, ctx);
}

static int add_to_tree(void *ctx, const struct hc_path_elem *path, size_t n,
		       const struct hc_weights *w, int64_t sec)
{
	(void)sec;
	return hc_tree__add_path(ctx, path, n, w);
}

int hc_agg__build_tree(struct hc_agg *agg, struct hc_tree *tree)
{
	return hc_agg__for_each_path(agg, add_to_tree, tree);
}

int hc_agg__build_lock_tree(struct hc_agg *agg, struct hc_tree *tree)
{
	return hc_agg__for_each_lock_path(agg, add_to_tree, tree);
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

json_t *hc_unwind_json(bool fp, uint32_t copy_bytes, uint64_t copy_budget, const uint64_t *t,
		       const struct hc_agg_stats *as, const struct hc_unwinder *unw)
{
	struct hc_unwind_stats us = {0};
	json_t *ends, *doc;

	if (unw)
		hc_unwinder__stats(unw, &us);
	ends = json_object();
	for (int k = 0; ends && k < HC_UNWIND_END_MAX; k++)
		if (json_object_set_new(ends, hc_unwind_end_name((enum hc_unwind_end)k),
					json_integer((json_int_t)us.ends[k]))) {
			json_decref(ends);
			ends = NULL;
		}
	if (!ends)
		return NULL;
	doc = json_pack("{s:s, s:I, s:I, s:{s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I},"
			" s:{s:I, s:I, s:o, s:I, s:I, s:I, s:I}}",
			"mode", fp ? "fp" : "dwarf", "stack_copy_bytes",
			(json_int_t)(fp ? 0 : copy_bytes), "copy_budget_bytes_per_s",
			(json_int_t)(fp ? 0 : copy_budget), "copies", "taken",
			(json_int_t)t[HC_CNT_UCOPY], "bytes", (json_int_t)t[HC_CNT_UCOPY_BYTES],
			"over_budget", (json_int_t)t[HC_CNT_UCOPY_BUDGET], "unreadable",
			(json_int_t)t[HC_CNT_UCOPY_FAULT], "lost", (json_int_t)t[HC_CNT_UCOPY_LOST],
			"user_stacks", "dwarf", (json_int_t)as->ustacks_dwarf, "dwarf_truncated",
			(json_int_t)as->ustacks_dwarf_truncated, "frame_pointers",
			(json_int_t)as->ustacks_fp, "fallback", (json_int_t)as->ustacks_fp_fallback,
			"unwinder", "stacks", (json_int_t)us.stacks, "frames",
			(json_int_t)us.frames, "ends", ends, "no_process",
			(json_int_t)us.no_process, "sessions", (json_int_t)us.sessions, "ns",
			(json_int_t)us.ns, "stash_missing", (json_int_t)us.stash_missing);
	return doc;
}
