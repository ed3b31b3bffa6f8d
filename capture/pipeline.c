// SPDX-License-Identifier: GPL-2.0-only
#include "capture/capture.h"

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
 *   [7] time bucket: the unix second the time fell in (per_second), else 0
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
/* The default oldest second: every time is kept (its ns still fit an int64_t). */
#define KEEP_ALL_S (INT64_MIN / 1000000000ll)
#define WAKER_KEY 5

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

/* What a flush hands to the sink and starts over: a second's (per_second) or the window's. */
struct tables {
	struct hc_stacktab *stacks;
	struct hc_stacktab *comms;
	struct hc_stacktab *wakers;  /* waker identity (+ stack) */
	struct hc_stacktab *wstacks; /* --wakers stacks, normalized */
	struct hc_stacktab *wseqs;   /* [wakee tid, seq] -> index into wseq_stack */
	uint64_t *wseq_stack;	     /* wstacks index + 1, per wseqs entry */
	size_t wseq_cap;
	/* --locks: contentions: key as `stacks`, weights: spin ns as on_cpu_ns, blocked ns as
	 * off_cpu_ns, samples = count */
	struct hc_stacktab *lstacks;
	char **lnames;
	size_t n_lnames, cap_lnames;
	struct hc_stacktab *llabel_keys; /* [flags, name index + 1] -> llabels */
	char **llabels;
	size_t n_llabels, cap_llabels;
};

struct hc_capture {
	struct hc_capture_opts o;
	struct hc_symbolizer *sym;
	struct hc_unwinder *unw; /* --unwind dwarf; borrowed */
	struct hc_uwpub *pub;	 /* --unwind table; borrowed */
	struct hc_capture_sink sink;
	struct tables t;
	uint64_t window_start_ns; /* for the per-second cpu_unclaimed series */
	int64_t mono_to_real_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	int64_t oldest_s;	  /* seconds before this one are not kept */
	int64_t now_s;		  /* for records without a time */
	char (*cpu_keys)[16];	  /* "cpu N" by CPU number, formatted once, not per sample */
	size_t n_cpu_keys;
	struct hc_capture_lock_stats lstats;
	struct hc_capture_stats stats;
	uint64_t upcs[HC_MAX_STACK_DEPTH]; /* an unwound user stack */
	uint64_t key[KEY_MAX + 2];
};

static void tables__release(struct tables *t)
{
	hc_stacktab__free(t->stacks);
	hc_stacktab__free(t->comms);
	hc_stacktab__free(t->wakers);
	hc_stacktab__free(t->wstacks);
	hc_stacktab__free(t->wseqs);
	free(t->wseq_stack);
	hc_stacktab__free(t->lstacks);
	for (size_t i = 0; i < t->n_lnames; i++)
		free(t->lnames[i]);
	free(t->lnames);
	for (size_t i = 0; i < t->n_llabels; i++)
		free(t->llabels[i]);
	free(t->llabels);
	hc_stacktab__free(t->llabel_keys);
	memset(t, 0, sizeof(*t));
}

static int tables__init(struct tables *t)
{
	memset(t, 0, sizeof(*t));
	t->stacks = hc_stacktab__new();
	t->comms = hc_stacktab__new();
	t->wakers = hc_stacktab__new();
	t->wstacks = hc_stacktab__new();
	t->wseqs = hc_stacktab__new();
	t->lstacks = hc_stacktab__new();
	t->llabel_keys = hc_stacktab__new();
	if (!t->stacks || !t->comms || !t->wakers || !t->wstacks || !t->wseqs || !t->lstacks ||
	    !t->llabel_keys) {
		tables__release(t);
		return -ENOMEM;
	}
	return 0;
}

struct hc_capture *hc_capture__new(const struct hc_capture_opts *o, struct hc_symbolizer *sym,
				   struct hc_unwinder *unw, const struct hc_capture_sink *sink)
{
	struct hc_capture *cap = calloc(1, sizeof(*cap));

	if (!cap)
		return NULL;
	cap->o = *o;
	cap->sym = sym;
	cap->unw = unw;
	if (sink)
		cap->sink = *sink;
	cap->oldest_s = KEEP_ALL_S;
	if (tables__init(&cap->t)) {
		free(cap);
		errno = ENOMEM;
		return NULL;
	}
	return cap;
}

void hc_capture__free(struct hc_capture *cap)
{
	if (!cap)
		return;
	tables__release(&cap->t);
	free(cap->cpu_keys);
	free(cap);
}

static int64_t intern_comm(struct hc_capture *cap, const char comm[HC_TASK_COMM_LEN])
{
	uint64_t k[2];

	memcpy(k, comm, sizeof(k));
	return hc_stacktab__intern(cap->t.comms, k, 2);
}

/* A kernel comm (up to 16 bytes, NUL-padded or not) as a C string. */
static void comm_cstr(const char comm[HC_TASK_COMM_LEN], char out[HC_TASK_COMM_LEN + 1])
{
	memcpy(out, comm, HC_TASK_COMM_LEN);
	out[HC_TASK_COMM_LEN] = '\0';
}

/* Copy a comm key back to a NUL-terminated string. */
static void comm_string(const struct hc_capture *cap, uint64_t idx, char out[HC_TASK_COMM_LEN + 1])
{
	size_t n;
	const uint64_t *k = hc_stacktab__key(cap->t.comms, (size_t)idx, &n);

	comm_cstr((const char *)k, out);
}

/* CPU numbers come from the kernel; bound them so a bad record cannot grow the table. */
#define CAPTURE_MAX_CPU 65536

/* Hand one observation to the sink; a failure to store it is counted. */
static int observe(struct hc_capture *cap, int64_t sec, enum hc_store_hist h, uint32_t pid,
		   const char name[HC_TASK_COMM_LEN], int64_t value, uint64_t count)
{
	struct hc_capture_obs o = {
		.sec = sec, .hist = h, .pid = pid, .value = value, .count = count};
	char key[HC_TASK_COMM_LEN + 1];
	int err;

	if (!cap->sink.hist)
		return 0;
	memcpy(o.name, name, HC_TASK_COMM_LEN);
	memcpy(key, name, HC_TASK_COMM_LEN);
	key[HC_TASK_COMM_LEN] = '\0';
	o.key = key;
	err = cap->sink.hist(cap->sink.ctx, &o);
	if (err)
		cap->stats.hist_errors++;
	return err;
}

/* The run-queue length series of a CPU: "cpu N". */
static int add_runq(struct hc_capture *cap, int64_t sec, uint32_t cpu, int64_t len, uint64_t count)
{
	if (cpu >= CAPTURE_MAX_CPU) {
		cap->stats.hist_errors++;
		return -EINVAL;
	}
	if (cpu >= cap->n_cpu_keys) {
		char(*keys)[16] = realloc(cap->cpu_keys, ((size_t)cpu + 1) * sizeof(*keys));

		if (!keys) {
			cap->stats.hist_errors++;
			return -ENOMEM;
		}
		for (size_t i = cap->n_cpu_keys; i <= cpu; i++) {
			memset(keys[i], 0, sizeof(keys[i]));
			snprintf(keys[i], sizeof(keys[i]), "cpu %zu", i);
		}
		cap->cpu_keys = keys;
		cap->n_cpu_keys = (size_t)cpu + 1;
	}
	return observe(cap, sec, HC_STORE_H_RUNQ_LENGTH, 0, cap->cpu_keys[cpu], len, count);
}

/* The record's process, looked up once (when first needed: a record with no user stack
 * never reads the process's maps) and shared by the unwinder and every frame. */
struct rec_proc {
	uint32_t tgid;
	uint64_t start_ns;
	bool looked_up;
	struct hc_sym_proc *p; /* NULL: could not be made (out of memory) */
	bool unmapped;	       /* its user stack was cut at an address in no mapping */
};

static struct hc_sym_proc *rec_proc(struct hc_capture *cap, struct rec_proc *rp)
{
	if (!rp->looked_up) {
		rp->looked_up = true;
		/* Cheap when known; otherwise reads the maps now, while the process lives. */
		hc_symbolizer__process(cap->sym, rp->tgid, rp->start_ns, &rp->p);
		/* --unwind table: its next stacks are walked with its objects' tables (a
		 * failure only leaves it to frame pointers: counted by the BPF side) */
		if (cap->pub && rp->p)
			(void)hc_uwpub__process(cap->pub, rp->p);
	}
	return rp->p;
}

void hc_capture__set_uwpub(struct hc_capture *cap, struct hc_uwpub *pub)
{
	cap->pub = pub;
}

static int uw_map_rows(void *sampler, uint32_t end)
{
	return hc_sampler__uw_map_rows(sampler, end);
}

static int uw_map_slot(void *sampler, uint32_t slot)
{
	return hc_sampler__uw_map_slot(sampler, slot);
}

struct hc_uwpub *hc_capture__uwpub_new(struct hc_symbolizer *sym, struct hc_sampler *s)
{
	struct hc_sampler_uw_area a;

	if (!hc_sampler__uw_area(s, &a)) {
		errno = EINVAL;
		return NULL;
	}
	return hc_uwpub__new(sym, &(struct hc_uwpub_area){.rows = a.rows,
							  .n_rows = a.n_rows,
							  .procs = a.procs,
							  .n_procs = a.n_procs,
							  .map_rows = uw_map_rows,
							  .map_slot = uw_map_slot,
							  .map_ctx = s});
}

/* A user stack, leaf first; truncated: the unwinder stopped short of the outermost frame,
 * and a "[truncated]" frame ends it. */
struct ustack {
	const __u64 *pcs;
	size_t n;
	bool truncated;
};

/*
 * Normalize a user stack (leaf first) to {object, offset} pairs at key[*n...], and their count
 * (a "[truncated]" marker included) to *count. An address in no mapping is one frame,
 * {HC_OBJ_UNKNOWN, 0}, and the last: a frame-pointer walk that reached a garbage return
 * address (code built without frame pointers) reads garbage past it, and each such address
 * would be a frame of its own.
 */
static int put_user_frames(struct hc_capture *cap, struct rec_proc *rp, const struct ustack *us,
			   uint64_t *key, size_t *n, uint64_t *count)
{
	const __u64 *ustack = us->pcs;
	struct hc_sym_proc *p = NULL;
	size_t first = *n;

	if (us->n) {
		p = rec_proc(cap, rp);
		if (!p)
			return -ENOMEM;
	}
	for (size_t i = 0; i < us->n; i++) {
		struct hc_uloc loc;
		/* Callers' frames hold return addresses: step back into the call. */
		uint64_t ip = i == 0 ? ustack[i] : ustack[i] - 1;

		if (hc_symbolizer__normalize_proc(cap->sym, p, ip, &loc))
			return -ENOMEM;
		key[(*n)++] = loc.obj;
		key[(*n)++] = loc.obj == HC_OBJ_UNKNOWN ? 0 : loc.off;
		if (loc.obj == HC_OBJ_UNKNOWN) {
			/* Once per record, and only where the maps were read: a process gone before
			 * its first record is counted in symbolize.process_gone. */
			if (!rp->unmapped && hc_sym_proc__has_maps(p))
				cap->stats.ustacks_unmapped++;
			rp->unmapped = true;
			goto out;
		}
	}
	if (us->truncated) {
		key[(*n)++] = HC_OBJ_TRUNCATED;
		key[(*n)++] = 0;
	}
out:
	*count = (*n - first) / 2;
	return 0;
}

static void put_kernel_frames(const __u64 *kstack, size_t nk, uint64_t *key, size_t *n)
{
	for (size_t i = 0; i < nk; i++)
		key[(*n)++] = i == 0 ? kstack[i] : kstack[i] - 1;
}

/* Build the key of a path in cap->key; returns its length, or -ENOMEM. */
static int64_t build_key(struct hc_capture *cap, struct rec_proc *rp, uint32_t tid,
			 const char pcomm[HC_TASK_COMM_LEN], const char comm[HC_TASK_COMM_LEN],
			 const struct ustack *us, const __u64 *kstack, size_t nk, uint64_t ext,
			 int64_t sec)
{
	uint64_t *key = cap->key;
	int64_t pc = intern_comm(cap, pcomm), tc = intern_comm(cap, comm);
	size_t n = KEY_HDR;

	if (pc < 0 || tc < 0)
		return -ENOMEM;
	key[0] = rp->tgid;
	key[1] = tid;
	key[2] = (uint64_t)pc;
	key[3] = (uint64_t)tc;
	key[5] = nk;
	key[6] = ext;
	key[7] = cap->o.per_second ? (uint64_t)sec : 0;
	if (put_user_frames(cap, rp, us, key, &n, &key[4]))
		return -ENOMEM;
	put_kernel_frames(kstack, nk, key, &n);
	return (int64_t)n;
}

static struct hc_weights *weights_of(struct hc_capture *cap, size_t n)
{
	int64_t idx = hc_stacktab__intern(cap->t.stacks, cap->key, n);

	return idx < 0 ? NULL : hc_stacktab__weights(cap->t.stacks, (size_t)idx);
}

/* Pieces an off-CPU flush is spread over, at most (one per second up to this many seconds). */
#define SPREAD_MAX 120

static int64_t real_second(const struct hc_capture *cap, uint64_t mono_ns)
{
	int64_t real = (int64_t)mono_ns + cap->mono_to_real_ns;

	return real >= 0 ? real / 1000000000ll : 0;
}

void hc_capture__set_clock(struct hc_capture *cap, int64_t mono_to_real_ns, int64_t oldest_s)
{
	cap->mono_to_real_ns = mono_to_real_ns;
	cap->oldest_s = oldest_s;
}

void hc_capture__set_now(struct hc_capture *cap, int64_t now_s)
{
	cap->now_s = now_s;
}

static int add_time(struct hc_capture *cap, size_t n, bool off, uint64_t ns)
{
	struct hc_weights *w = weights_of(cap, n);

	if (!w)
		return -ENOMEM;
	*(off ? &w->off_cpu_ns : &w->runqueue_ns) += ns;
	return 0;
}

/*
 * Add ns of off-CPU (off = true) or run-queue time at the key in cap->key (n words); the part
 * before oldest_s is counted, not kept. Per second, the time is spread evenly over the
 * seconds of [first_ns, last_ns] (a flush sums intervals between those instants; one long
 * block spans many seconds).
 */
static int add_offcpu_time(struct hc_capture *cap, size_t n, bool off, uint64_t ns,
			   uint64_t first_ns, uint64_t last_ns)
{
	int64_t a, b, lo, s1, oldest_ns, step;
	uint64_t given = 0;
	b = (int64_t)last_ns + cap->mono_to_real_ns;
	a = first_ns && first_ns < last_ns ? (int64_t)first_ns + cap->mono_to_real_ns : b;
	if (a < 0)
		a = 0;
	if (b < a)
		b = a;
	oldest_ns = cap->oldest_s * 1000000000ll;
	if (b < oldest_ns) {
		cap->stats.expired_ns += ns;
		return 0;
	}
	if (a < oldest_ns) { /* the part before the oldest second kept */
		given = (uint64_t)((unsigned __int128)ns * (uint64_t)(oldest_ns - a) /
				   (uint64_t)(b - a));
		cap->stats.expired_ns += given;
		lo = oldest_ns;
	} else {
		lo = a;
	}
	if (!cap->o.per_second)
		return add_time(cap, n, off, ns - given);
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

		given += part;
		lo = hi;
		cap->key[7] = (uint64_t)sec;
		if (add_time(cap, n, off, part))
			return -ENOMEM;
	}
	return 0;
}

/* cpuunclaimed: ns in the second of the window holding t (the series is the sink's). */
static void add_unclaimed(struct hc_capture *cap, uint64_t t, uint64_t ns)
{
	uint64_t sec = t > cap->window_start_ns ? (t - cap->window_start_ns) / 1000000000ull : 0;

	if (cap->sink.unclaimed && cap->sink.unclaimed(cap->sink.ctx, sec, ns)) {
		cap->stats.hist_errors++;
		return;
	}
	cap->stats.unclaimed_ns += ns;
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

static void set_unwound(struct hc_capture *cap, struct ustack *us, const uint64_t *pcs, size_t n,
			enum hc_unwind_end end)
{
	us->pcs = (const __u64 *)pcs; /* the same 64-bit words */
	us->n = n;
	/* A stack cut at the depth limit is as deep as a frame-pointer one may be: counted in
	 * truncated_ustacks, without a marker, like those. */
	us->truncated = end != HC_UNWIND_COMPLETE && end != HC_UNWIND_DEPTH;
	cap->stats.ustacks_dwarf++;
	if (us->truncated)
		cap->stats.ustacks_dwarf_truncated++;
}

/* Unwind copy c into cap->upcs and point *us at it; on failure *us (the frame-pointer
 * stack) stays. */
static int unwind(struct hc_capture *cap, struct rec_proc *rp, const struct hc_ucopy *c,
		  struct ustack *us)
{
	enum hc_unwind_end end;
	size_t n;
	int err;

	err = hc_unwinder__unwind(cap->unw, rec_proc(cap, rp), c, cap->upcs, HC_MAX_STACK_DEPTH, &n,
				  &end);
	if (err) {
		cap->stats.ustacks_fp_fallback++;
		return err;
	}
	set_unwound(cap, us, cap->upcs, n, end);
	return 0;
}

/* Where one on-CPU sample goes besides its path: the histograms, cpuunclaimed, the heat map. */
static void observe_sample(struct hc_capture *cap, const struct hc_sample_event *e, int64_t real)
{
	int64_t sec = real >= 0 ? real / 1000000000ll : 0;

	observe(cap, sec, HC_STORE_H_PRIORITY, e->tgid, e->pcomm, e->prio, 1);
	add_runq(cap, sec, e->cpu, e->runq_len, 1);
	/* cpuunclaimed: CPUs idle while this one had tasks waiting, shared among the CPUs that
	 * had tasks waiting at that moment (each samples the same instant). */
	if (e->idle_cpus && e->queued_cpus)
		add_unclaimed(cap, e->time_ns, cap->o.period_ns * e->idle_cpus / e->queued_cpus);
	if (cap->sink.heat && real >= 0)
		cap->sink.heat(cap->sink.ctx, sec,
			       (unsigned int)(real % 1000000000ll /
					      (1000000000ll / HC_CAPTURE_HEAT_ROWS)));
}

/* --unwind table: a user stack walked in BPF (uw_end not HC_UW_NONE) ends in "[truncated]"
 * when the walk stopped short of the outermost frame. Whether it was. */
static bool table_stack(struct hc_capture *cap, struct ustack *us, uint32_t uw_end)
{
	if (uw_end == HC_UW_NONE || !us->n)
		return false;
	cap->stats.ustacks_table++;
	if (uw_end != HC_UW_COMPLETE) {
		us->truncated = true;
		cap->stats.ustacks_table_truncated++;
	}
	return true;
}

int hc_capture__sample(struct hc_capture *cap, const struct hc_sample_event *e, size_t size)
{
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	struct rec_proc rp = {.tgid = e->tgid, .start_ns = e->pstart_ns};
	struct ustack us = {.pcs = e->stacks, .n = nu};
	int64_t real = (int64_t)e->time_ns + cap->mono_to_real_ns;
	const struct hc_ucopy *c;
	struct hc_weights *w;
	int64_t n;

	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	/* --unwind dwarf: the unwound stack replaces the frame-pointer one. */
	c = cap->unw ? sample_ucopy(e, size) : NULL;
	if (c) {
		if (unwind(cap, &rp, c, &us) == -ENOMEM)
			goto err_nomem;
	} else if (!table_stack(cap, &us, e->uw_end) && nu) {
		cap->stats.ustacks_fp++;
	}
	n = build_key(cap, &rp, e->tid, e->pcomm, e->comm, &us, e->stacks + nu, nk, 0,
		      real_second(cap, e->time_ns));
	w = n < 0 ? NULL : weights_of(cap, (size_t)n);
	if (!w)
		goto err_nomem;
	w->samples++;
	w->on_cpu_ns += cap->o.period_ns;
	observe_sample(cap, e, real);
	cap->stats.samples++;
	if (e->kernel_ip)
		cap->stats.kernel_samples++;
	else
		cap->stats.user_samples++;
	if (us.n == HC_MAX_STACK_DEPTH)
		cap->stats.truncated_ustacks++;
	if (nk == HC_MAX_STACK_DEPTH)
		cap->stats.truncated_kstacks++;
	return 0;
err_nomem:
	cap->stats.ingest_errors++;
	return -ENOMEM;
}

/* The waker entry (index + 1) for a flush, 0 when no wakeup was seen. */
static int64_t waker_ref(struct hc_capture *cap, const struct hc_offcpu_event *e)
{
	uint64_t k[WAKER_KEY], wstack = 0;
	int64_t wc, wpc, idx;

	if (!e->n_blocked || !e->waker_comm[0])
		return 0;
	if (e->waker_seq) {
		uint64_t sk[2] = {e->tid, e->waker_seq};
		size_t before = hc_stacktab__count(cap->t.wseqs);
		int64_t si = hc_stacktab__intern(cap->t.wseqs, sk, 2);

		if (si < 0)
			return -ENOMEM;
		if ((size_t)si < before)
			wstack = cap->t.wseq_stack[si];
		else
			cap->stats.waker_stack_missing++; /* its record was lost */
	}
	wc = intern_comm(cap, e->waker_comm);
	wpc = intern_comm(cap, e->waker_pcomm);
	if (wc < 0 || wpc < 0)
		return -ENOMEM;
	k[0] = e->waker_tgid;
	k[1] = e->waker_tid;
	k[2] = (uint64_t)wc;
	k[3] = (uint64_t)wpc;
	k[4] = wstack;
	idx = hc_stacktab__intern(cap->t.wakers, k, WAKER_KEY);
	return idx < 0 ? idx : idx + 1;
}

int hc_capture__offcpu(struct hc_capture *cap, const struct hc_offcpu_event *e, size_t size)
{
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	struct rec_proc rp = {.tgid = e->tgid, .start_ns = e->pstart_ns};
	struct ustack us = {.pcs = e->stacks};
	uint64_t ext = 0;
	int64_t n, wref;

	(void)size;
	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	cap->stats.off_ns += e->off_ns + e->short_off_ns;
	cap->stats.runqueue_ns += e->rq_ns + e->short_rq_ns;
	cap->stats.short_off_ns += e->short_off_ns;
	cap->stats.short_rq_ns += e->short_rq_ns;
	cap->stats.blocked_intervals += e->n_blocked;
	cap->stats.preempted_intervals += e->n_preempted;
	cap->stats.offcpu_flushes++;
	if (e->flags & (HC_OFF_NO_STACK | HC_OFF_NEW)) {
		ext = e->flags & HC_OFF_NEW ? EXT_NEW : EXT_NO_STACK;
		nu = nk = 0;
	}
	us.n = nu;
	if (nu && cap->unw && e->ucopy_seq) {
		const uint64_t *pcs;
		enum hc_unwind_end end;
		size_t n_pcs;

		/* The switch-out's copy came before this flush and was unwound then. */
		if (!hc_unwinder__stashed(cap->unw, e->tid, e->ucopy_seq, &pcs, &n_pcs, &end))
			set_unwound(cap, &us, pcs, n_pcs, end);
		else
			cap->stats.ustacks_fp_fallback++;
	} else if (!table_stack(cap, &us, e->uw_end) && nu) {
		cap->stats.ustacks_fp++;
	}
	if (!e->rq_ns && !e->off_ns)
		return 0;
	/* The key is built once (its user frames normalized once): both times hang on the
	 * thread's own stack and differ in the key's ext word only. */
	n = build_key(cap, &rp, e->tid, e->pcomm, e->comm, &us, e->stacks + nu, nk, ext, 0);
	if (n < 0)
		goto err_nomem;
	/* Run-queue time as it is... */
	if (e->rq_ns && add_offcpu_time(cap, (size_t)n, false, e->rq_ns, e->first_ns, e->last_ns))
		goto err_nomem;
	/* ...blocked time under its waker, when one was seen; a lock wait is marked. */
	if (e->off_ns) {
		wref = waker_ref(cap, e);
		if (wref < 0)
			goto err_nomem;
		if (e->lock & HC_LOCK_WAIT)
			ext |= EXT_LOCK | EXT_LOCK_BLOCKED |
			       (uint64_t)lock_kind_flags(e->lock) << EXT_LOCK_FLAGS_SHIFT;
		cap->key[6] = ext | (uint64_t)wref;
		if (add_offcpu_time(cap, (size_t)n, true, e->off_ns, e->first_ns, e->last_ns))
			goto err_nomem;
	}
	return 0;
err_nomem:
	cap->stats.ingest_errors++;
	cap->stats.offcpu_lost_ns += e->off_ns + e->rq_ns;
	return -ENOMEM;
}

int hc_capture__waker(struct hc_capture *cap, const struct hc_waker_event *e, size_t size)
{
	/* The waker's start time is not recorded: its tgid alone (0: not checked). */
	struct rec_proc rp = {.tgid = e->waker_tgid};
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	uint64_t sk[2] = {e->tid, e->seq}, *key = cap->key;
	struct ustack us = {.pcs = e->stacks, .n = nu};
	int64_t si, wi;
	size_t n = 2;

	(void)size;
	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	(void)table_stack(cap, &us, e->uw_end);
	key[1] = nk;
	if (put_user_frames(cap, &rp, &us, key, &n, &key[0]))
		goto err_nomem;
	put_kernel_frames(e->stacks + nu, nk, key, &n);
	wi = hc_stacktab__intern(cap->t.wstacks, key, n);
	si = wi < 0 ? wi : hc_stacktab__intern(cap->t.wseqs, sk, 2);
	if (si < 0)
		goto err_nomem;
	if ((size_t)si >= cap->t.wseq_cap) {
		size_t ncap = cap->t.wseq_cap ? cap->t.wseq_cap * 2 : 256;
		uint64_t *a = realloc(cap->t.wseq_stack, ncap * sizeof(*a));

		if (!a)
			goto err_nomem;
		cap->t.wseq_stack = a;
		cap->t.wseq_cap = ncap;
	}
	cap->t.wseq_stack[si] = (uint64_t)wi + 1;
	return 0;
err_nomem:
	cap->stats.ingest_errors++;
	return -ENOMEM;
}

int hc_capture__thist(struct hc_capture *cap, const struct hc_thist_event *e)
{
	static const enum hc_store_hist map[HC_TH_MAX] = {
		[HC_TH_SLICE] = HC_STORE_H_ONCPU_SLICE_US,
		[HC_TH_OFF] = HC_STORE_H_OFFCPU_US,
		[HC_TH_RUNQ] = HC_STORE_H_RUNQ_LATENCY_US,
	};

	for (int h = 0; h < HC_TH_MAX; h++)
		for (int k = 0; k < HC_QSLOTS; k++)
			if (e->slots[h][k])
				observe(cap, cap->now_s, map[h], e->tgid, e->pcomm,
					k ? (int64_t)1 << (k - 1) : 0, e->slots[h][k]);
	return 0;
}

int hc_capture__idle_samples(struct hc_capture *cap, int64_t sec, uint32_t cpu, uint64_t count)
{
	return add_runq(cap, sec, cpu, 0, count);
}

void hc_capture__set_window_start(struct hc_capture *cap, uint64_t start_ns)
{
	cap->window_start_ns = start_ns;
}

int hc_capture__ustack(struct hc_capture *cap, const struct hc_ustack_event *e, size_t size)
{
	struct rec_proc rp = {.tgid = e->tgid, .start_ns = e->pstart_ns};
	enum hc_unwind_end end;
	size_t n;
	int err;

	(void)size; /* validated by the sampler */
	if (!cap->unw)
		return 0;
	err = hc_unwinder__unwind(cap->unw, rec_proc(cap, &rp), &e->copy, cap->upcs,
				  HC_MAX_STACK_DEPTH, &n, &end);
	if (err == -ESRCH)
		return 0; /* its flushes fall back to the frame pointers, counted then */
	if (!err)
		err = hc_unwinder__stash(cap->unw, e->tgid, e->tid, e->seq, cap->upcs, n, end);
	if (err)
		cap->stats.ingest_errors++;
	return err;
}

int hc_capture__exec(struct hc_capture *cap, const struct hc_exec_event *e)
{
	hc_symbolizer__forget_process(cap->sym, e->tgid);
	/* The new image and the dynamic loader are mapped now; libraries come later and are
	 * picked up by normalize()'s re-read on an unknown address. */
	hc_symbolizer__add_process(cap->sym, e->tgid, e->pstart_ns);
	/* --unwind table: the new image's tables at once (the libraries it loads next are
	 * published when an address in them makes the symbolizer re-read the maps) */
	if (cap->pub) {
		struct rec_proc rp = {.tgid = e->tgid, .start_ns = e->pstart_ns};

		rec_proc(cap, &rp);
	}
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
static uint64_t lock_name(struct hc_capture *cap, const struct hc_lock_event *e)
{
	const char *name = NULL;

	if (e->named == HC_LOCK_MMAP)
		name = "mmap_lock";
	else if (e->named == HC_LOCK_SIGHAND)
		name = "siglock";
	else if (hc_symbolizer__kernel_data(cap->sym, e->lock_addr, &name))
		return 0;
	for (size_t i = 0; i < cap->t.n_lnames; i++)
		if (!strcmp(cap->t.lnames[i], name))
			return i + 1;
	if (cap->t.n_lnames >= LOCK_NAMES_MAX) {
		cap->lstats.unnamed_over_limit++;
		return 0;
	}
	if (cap->t.n_lnames == cap->t.cap_lnames) {
		size_t ncap = cap->t.cap_lnames ? cap->t.cap_lnames * 2 : 16;
		char **n = realloc(cap->t.lnames, ncap * sizeof(*n));

		if (!n)
			return 0;
		cap->t.lnames = n;
		cap->t.cap_lnames = ncap;
	}
	cap->t.lnames[cap->t.n_lnames] = strdup(name);
	if (!cap->t.lnames[cap->t.n_lnames])
		return 0;
	return ++cap->t.n_lnames;
}

/* The sink's share of a contention kept; -ENOMEM stops it there. */
static int observe_lock(struct hc_capture *cap, const struct hc_lock_event *e, int64_t sec,
			uint32_t flags, bool blocked)
{
	char series[64];
	struct hc_capture_lock l = {
		.sec = sec,
		.flags = flags,
		.blocked = blocked,
		.failed = e->ret != 0,
		.no_stack = !e->ustack_len && !e->kstack_len,
		.wait_ns = e->wait_ns,
		.series = series,
	};
	int err;

	if (!cap->sink.lock)
		return 0;
	snprintf(series, sizeof(series), "%s %s", hc_lock_kind_name(flags),
		 blocked ? "block" : "spin");
	err = cap->sink.lock(cap->sink.ctx, &l);
	if (err == -ENOMEM)
		return err;
	if (err)
		cap->stats.hist_errors++;
	return 0;
}

int hc_capture__lock(struct hc_capture *cap, const struct hc_lock_event *e, size_t size)
{
	size_t nu = e->ustack_len > 0 ? (size_t)e->ustack_len / 8 : 0;
	size_t nk = e->kstack_len > 0 ? (size_t)e->kstack_len / 8 : 0;
	struct rec_proc rp = {.tgid = e->tgid, .start_ns = e->pstart_ns};
	struct ustack us = {.pcs = e->stacks, .n = nu};
	uint32_t f = lock_kind_flags(e->flags);
	bool blocked = e->blocked != 0;
	/* the second the contention ended in */
	int64_t sec = real_second(cap, e->start_ns + e->wait_ns);
	struct hc_capture_lock_stats *ls = &cap->lstats;
	uint64_t ext;
	struct hc_weights *w;
	int64_t n, idx;

	(void)size; /* validated by the sampler */
	if (nu > HC_MAX_STACK_DEPTH || nk > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	ls->events++;
	ls->wait_ns += e->wait_ns;
	ls->failed += e->ret != 0;
	ls->no_stack += !e->ustack_len && !e->kstack_len;
	if (sec < cap->oldest_s) {
		ls->expired++;
		return 0;
	}
	if (observe_lock(cap, e, sec, f, blocked))
		goto err_nomem;
	(void)table_stack(cap, &us, e->uw_end);
	ext = EXT_LOCK | (uint64_t)f << EXT_LOCK_FLAGS_SHIFT | (blocked ? EXT_LOCK_BLOCKED : 0) |
	      lock_name(cap, e) << EXT_LOCK_NAME_SHIFT;
	n = build_key(cap, &rp, e->tid, e->pcomm, e->comm, &us, e->stacks + nu, nk, ext, sec);
	if (n < 0)
		goto err_nomem;
	idx = hc_stacktab__intern(cap->t.lstacks, cap->key, (size_t)n);
	if (idx < 0)
		goto err_nomem;
	w = hc_stacktab__weights(cap->t.lstacks, (size_t)idx);
	*(blocked ? &w->off_cpu_ns : &w->on_cpu_ns) += e->wait_ns;
	w->samples++;
	return 0;
err_nomem:
	ls->ingest_errors++;
	return -ENOMEM;
}

void hc_capture__lock_stats(const struct hc_capture *cap, struct hc_capture_lock_stats *out)
{
	*out = cap->lstats;
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
static int frame_cache__get(struct frame_cache *fc, struct hc_capture *cap, bool kernel, uint64_t a,
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
		int r = hc_symbolizer__resolve_kernel(cap->sym, a, &fi[0]);

		el = fc_elems(fc, 1);
		if (!el)
			return -ENOMEM;
		el->kind = HC_NODE_KERNEL;
		el->name = r == 0 && fi[0].name ? fi[0].name : "[unknown]";
		el->module = fi[0].module;
		el->id = 0;
		el->offset = -1; /* never a raw kernel address */
		el->inlined = false;
	} else if (a == HC_OBJ_UNKNOWN) {
		/* An address in no mapping (put_user_frames() ended the stack there): one frame
		 * for all of them, without an offset; counted in user_unresolved like any
		 * distinct frame left [unknown]. */
		struct hc_uloc loc = {.obj = HC_OBJ_UNKNOWN};

		hc_symbolizer__resolve_user(cap->sym, &loc, &fi[0]);
		el = fc_elems(fc, 1);
		if (!el)
			return -ENOMEM;
		*el = (struct hc_path_elem){.kind = HC_NODE_USER,
					    .name = "[unknown]",
					    .module = "[unknown]",
					    .offset = -1};
	} else if (a == HC_OBJ_TRUNCATED) {
		/* The unwinder stopped short of the outermost frame: callers are missing. */
		el = fc_elems(fc, 1);
		if (!el)
			return -ENOMEM;
		*el = (struct hc_path_elem){
			.kind = HC_NODE_USER, .name = "[truncated]", .offset = -1};
	} else {
		struct hc_uloc loc = {.obj = (uint32_t)a, .off = b};
		int r = hc_symbolizer__resolve_user_inline(cap->sym, &loc, fi,
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
			/* named by its function's start: that start is the offset */
			el->offset = fi[0].fstart ? (int64_t)fi[0].offset : -1;
		} else {
			/* Unresolved frames stay visible, named by module and offset. */
			el->name = "[unknown]";
			el->module = fi[0].module;
			el->offset = (int64_t)fi[0].offset;
		}
		/* A file offset past 2^63 (a hostile mapping's pgoff) has none JSON could
		 * print, and two such would be distinct nodes that print the same. */
		if (el->offset < 0)
			el->offset = -1;
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
 * (the path must stay within HC_CAPTURE_MAX_PATH): past it, the innermost of them are kept, and
 * the rest counted in inline_dropped.
 */
static int put_frame(struct frame_cache *fc, struct hc_capture *cap, bool kernel, uint64_t a,
		     uint64_t b, struct hc_path_elem *path, size_t *depth, size_t *spare)
{
	const struct hc_path_elem *el;
	size_t n, keep;
	int err = frame_cache__get(fc, cap, kernel, a, b, &el, &n);

	if (err)
		return err;
	path[(*depth)++] = el[0];
	keep = n - 1 <= *spare ? n - 1 : *spare;
	cap->stats.inline_dropped += n - 1 - keep;
	*spare -= keep;
	for (size_t i = n - keep; i < n; i++)
		path[(*depth)++] = el[i];
	return 0;
}

/* The waker's user and kernel frame counts from its stack key, false when it has none. */
static bool waker_stack(struct hc_capture *cap, const uint64_t *wk, const uint64_t **sk, size_t *nu,
			size_t *nk)
{
	size_t sn;

	if (!wk[4])
		return false;
	*sk = hc_stacktab__key(cap->t.wstacks, wk[4] - 1, &sn);
	if (sn < 2)
		return false;
	*nu = (*sk)[0];
	*nk = (*sk)[1];
	return sn == 2 + 2 * *nu + *nk;
}

/* The waker node and, with --wakers, the waker's frames (outermost first). */
static int waker_path(struct hc_capture *cap, struct frame_cache *fc, size_t widx,
		      char wcomm[HC_TASK_COMM_LEN + 1], struct hc_path_elem *path, size_t *depth,
		      size_t *spare)
{
	size_t n, nu, nk;
	const uint64_t *wk = hc_stacktab__key(cap->t.wakers, widx, &n), *sk;
	int err;

	if (n != WAKER_KEY)
		return 0;
	if (wk[1] == 0)
		snprintf(wcomm, HC_TASK_COMM_LEN + 1, "[interrupt]"); /* woken from the idle task */
	else
		comm_string(cap, wk[2], wcomm);
	path[(*depth)++] = (struct hc_path_elem){
		.kind = HC_NODE_WAKER, .name = wcomm, .id = wk[1], .offset = (int64_t)wk[0]};
	if (!waker_stack(cap, wk, &sk, &nu, &nk))
		return 0;
	for (size_t i = nu; i-- > 0;) {
		err = put_frame(fc, cap, false, sk[2 + 2 * i], sk[2 + 2 * i + 1], path, depth,
				spare);
		if (err)
			return err;
	}
	for (size_t i = nk; i-- > 0;) {
		err = put_frame(fc, cap, true, sk[2 + 2 * nu + i], 0, path, depth, spare);
		if (err)
			return err;
	}
	return 0;
}

/* A lock node's name, "<kind>" or "<kind> <lock name>": one string per distinct label, kept
 * until the tables start over (a sink that keys frames by the name's address, as serve's
 * does, copies it). NULL on allocation failure. */
static const char *lock_label(struct hc_capture *cap, uint64_t ext)
{
	uint64_t ni = ext >> EXT_LOCK_NAME_SHIFT;
	uint32_t f = (uint32_t)(ext >> EXT_LOCK_FLAGS_SHIFT) & HC_LCB_MASK;
	uint64_t k[2] = {f, ni <= cap->t.n_lnames ? ni : 0};
	size_t before = hc_stacktab__count(cap->t.llabel_keys);
	int64_t idx = hc_stacktab__intern(cap->t.llabel_keys, k, 2);
	char buf[160];

	if (idx < 0)
		return NULL;
	if ((size_t)idx < before)
		return cap->t.llabels[idx];
	if ((size_t)idx >= cap->t.cap_llabels) {
		size_t ncap = cap->t.cap_llabels ? cap->t.cap_llabels * 2 : 16;
		char **n = realloc(cap->t.llabels, ncap * sizeof(*n));

		if (!n)
			return NULL;
		cap->t.llabels = n;
		cap->t.cap_llabels = ncap;
	}
	if (k[1])
		snprintf(buf, sizeof(buf), "%s %s", hc_lock_kind_name(f), cap->t.lnames[k[1] - 1]);
	else
		snprintf(buf, sizeof(buf), "%s", hc_lock_kind_name(f));
	cap->t.llabels[idx] = strdup(buf);
	cap->t.n_llabels = (size_t)idx + 1;
	return cap->t.llabels[idx];
}

/* Path elements of stack key `key` without inlined functions: what may never be left out. */
static size_t base_depth(struct hc_capture *cap, const uint64_t *key)
{
	size_t n = 2 + key[4] + key[5], wn, nu, nk;
	const uint64_t *wk, *sk;

	if (key[6] & (EXT_NO_STACK | EXT_NEW))
		n++;
	if (key[6] & EXT_LOCK)
		n++;
	if ((uint32_t)key[6]) {
		wk = hc_stacktab__key(cap->t.wakers, (uint32_t)key[6] - 1, &wn);
		if (wn == WAKER_KEY)
			n += 1 + (waker_stack(cap, wk, &sk, &nu, &nk) ? nu + nk : 0);
	}
	return n;
}

/* One resolved path (outermost first, the elements valid for the call) with its weights and
 * its second. Returning non-zero stops the walk with that value. */
typedef int (*path_fn)(void *ctx, const struct hc_path_elem *path, size_t n,
		       const struct hc_weights *w, int64_t sec);

static int for_each_path(struct hc_capture *cap, struct hc_stacktab *tab, path_fn fn, void *ctx)
{
	struct frame_cache fc = {0};
	struct hc_path_elem *path;
	size_t count = hc_stacktab__count(tab);
	int err = 0;

	fc.keys = hc_stacktab__new();
	path = calloc(HC_CAPTURE_MAX_PATH, sizeof(*path));
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
		 * inlined functions is what is left of HC_CAPTURE_MAX_PATH */
		spare = HC_CAPTURE_MAX_PATH - base_depth(cap, key);
		comm_string(cap, key[2], pcomm);
		comm_string(cap, key[3], tcomm);
		path[depth++] = (struct hc_path_elem){
			.kind = HC_NODE_PROCESS, .name = pcomm, .id = key[0], .offset = -1};
		path[depth++] = (struct hc_path_elem){
			.kind = HC_NODE_THREAD, .name = tcomm, .id = key[1], .offset = -1};
		/* Outermost first: walk user frames from the root end, then kernel frames. */
		for (size_t i = nu; i-- > 0;) {
			/* frame_cache__get may grow the stack table only of fc.keys, not
			 * cap->t.stacks, so `key` stays valid. */
			err = put_frame(&fc, cap, false, key[KEY_HDR + 2 * i],
					key[KEY_HDR + 2 * i + 1], path, &depth, &spare);
			if (err)
				goto out;
		}
		for (size_t i = nk; i-- > 0;) {
			err = put_frame(&fc, cap, true, key[KEY_HDR + 2 * nu + i], 0, path, &depth,
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
			const char *label = lock_label(cap, ext);

			if (!label) {
				err = -ENOMEM;
				goto out;
			}
			path[depth++] = (struct hc_path_elem){
				.kind = HC_NODE_LOCK, .name = label, .offset = -1};
		}
		if ((uint32_t)ext) {
			err = waker_path(cap, &fc, (uint32_t)ext - 1, wcomm, path, &depth, &spare);
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

int hc_capture__flush(struct hc_capture *cap)
{
	struct tables fresh;
	int err = 0;

	if (cap->sink.path)
		err = for_each_path(cap, cap->t.stacks, cap->sink.path, cap->sink.ctx);
	if (!err && cap->sink.lock_path)
		err = for_each_path(cap, cap->t.lstacks, cap->sink.lock_path, cap->sink.ctx);
	if (err)
		return err;
	if (tables__init(&fresh))
		return -ENOMEM;
	tables__release(&cap->t);
	cap->t = fresh;
	return 0;
}

void hc_capture__stats(const struct hc_capture *cap, struct hc_capture_stats *out)
{
	*out = cap->stats;
}

size_t hc_capture__stack_count(const struct hc_capture *cap)
{
	return hc_stacktab__count(cap->t.stacks);
}

/* The sampler's callbacks: the pipeline a slot points at, read at each record. */
#define SLOT(ctx) (*(struct hc_capture **)(ctx))

static int cb_sample(void *ctx, const struct hc_sample_event *e, size_t size)
{
	return SLOT(ctx) ? hc_capture__sample(SLOT(ctx), e, size) : 0;
}

static int cb_exec(void *ctx, const struct hc_exec_event *e)
{
	return SLOT(ctx) ? hc_capture__exec(SLOT(ctx), e) : 0;
}

static int cb_offcpu(void *ctx, const struct hc_offcpu_event *e, size_t size)
{
	return SLOT(ctx) ? hc_capture__offcpu(SLOT(ctx), e, size) : 0;
}

static int cb_thist(void *ctx, const struct hc_thist_event *e)
{
	return SLOT(ctx) ? hc_capture__thist(SLOT(ctx), e) : 0;
}

static int cb_waker(void *ctx, const struct hc_waker_event *e, size_t size)
{
	return SLOT(ctx) ? hc_capture__waker(SLOT(ctx), e, size) : 0;
}

static int cb_ustack(void *ctx, const struct hc_ustack_event *e, size_t size)
{
	return SLOT(ctx) ? hc_capture__ustack(SLOT(ctx), e, size) : 0;
}

static int cb_lock(void *ctx, const struct hc_lock_event *e, size_t size)
{
	return SLOT(ctx) ? hc_capture__lock(SLOT(ctx), e, size) : 0;
}

struct hc_sampler_callbacks hc_capture__sampler_callbacks(struct hc_capture **slot)
{
	return (struct hc_sampler_callbacks){
		.sample = cb_sample,
		.exec = cb_exec,
		.offcpu = cb_offcpu,
		.thist = cb_thist,
		.waker = cb_waker,
		.ustack = cb_ustack,
		.lock = cb_lock,
		.ctx = slot,
	};
}
