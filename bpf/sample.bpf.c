// SPDX-License-Identifier: GPL-2.0-only
/*
 * On-CPU sampling, DTrace profile-n style: a cpu-clock perf_event with a fixed period on
 * every CPU runs hc_sample(). Each sample carries arg0 (kernel PC or 0), arg1 (user PC or 0),
 * the task's prio and policy, and its kernel and user stacks, taken with bpf_get_stack()
 * straight into the record: no stack map, so no bpf_get_stackid() hash collisions.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "sample.h"
#include "unwind.h"

#define PF_KTHREAD 0x00200000
#define STACK_BYTES ((long)(HC_MAX_STACK_DEPTH * sizeof(__u64)))

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile bool filter_tgid = false; /* only tgids in `tgids` are emitted (-p) */
const volatile bool filter_comm = false; /* only processes named comm_filter (--comm) */
const volatile char comm_filter[HC_TASK_COMM_LEN] = {};
/* Wake the reader once this many bytes wait; below that it polls on a timer (cheaper). */
const volatile __u64 wakeup_bytes = 1 << 20;

/* Events (struct hc_sample_event, struct hc_exec_event) for the sampler; drained by
 * sampler/ with ring_buffer__poll(). Size set by user space from frequency x CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20);
} events SEC(".maps");

/* Per-CPU counters indexed by enum hc_counter; summed and reported by sampler/. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, HC_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Per-CPU scratch record: too large for the 512-byte BPF stack. Only its used prefix is
 * copied into `events`. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hc_sample_event);
} scratch SEC(".maps");

/* -p filter: tgid -> 1. Filled by user space before sampling starts. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u8);
} tgids SEC(".maps");

/* tgids already announced to user space. A miss means a new process: its record wakes the
 * reader at once so the process's mappings are read while it still lives. Evicting an old
 * entry only costs one early wakeup. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u8);
} seen_tgids SEC(".maps");

static __always_inline void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

static __always_inline void count_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += n;
}

/* Per-CPU scheduler state, indexed by CPU number (struct hc_cpu_state). An array, not a
 * per-CPU array: the cpuunclaimed count at a sample reads every CPU's entry. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, HC_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct hc_cpu_state);
} cpu_state SEC(".maps");

/* Highest possible CPU number + 1 (set by user space): bounds the cpuunclaimed scan. */
const volatile __u32 nr_cpu_ids = 1;

static __always_inline bool comm_matches(const char *comm)
{
	/* Byte-wise up to the first NUL: comm_filter is NUL-padded. */
	for (int i = 0; i < HC_TASK_COMM_LEN; i++) {
		if (comm[i] != comm_filter[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

static __always_inline bool wanted(__u32 tgid)
{
	return !filter_tgid || bpf_map_lookup_elem(&tgids, &tgid);
}

/* -p and --comm, for a task given by pointer (the comm filter names the process). */
static __always_inline bool task_wanted(struct task_struct *t)
{
	char pcomm[HC_TASK_COMM_LEN];

	if (!wanted(BPF_CORE_READ(t, tgid)))
		return false;
	if (!filter_comm)
		return true;
	BPF_CORE_READ_STR_INTO(&pcomm, t, group_leader, comm);
	return comm_matches(pcomm);
}

/*
 * BPF_RB_NO_WAKEUP unless the process is new or enough data waits. prev_tgid is the tgid of
 * this CPU's previous sample: a busy CPU mostly samples one process, and then the LRU lookup
 * (the dearest step after the stack walk) is skipped.
 */
static __always_inline __u64 wakeup_flags(__u32 tgid, __u32 prev_tgid)
{
	static const __u8 one = 1;

	if (tgid != prev_tgid && !bpf_map_lookup_elem(&seen_tgids, &tgid)) {
		bpf_map_update_elem(&seen_tgids, &tgid, &one, BPF_ANY);
		return BPF_RB_FORCE_WAKEUP;
	}
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/*
 * Tasks waiting for this CPU, as bcc's runqlen reads it but over all scheduling classes:
 * the CPU's rq->nr_running, reached through the current task's cfs_rq (the per-CPU
 * `runqueues` variable is no ksym on kernels without CONFIG_KALLSYMS_ALL). Without
 * CONFIG_FAIR_GROUP_SCHED (no cfs_rq->rq) the task's CFS queue is counted instead.
 * nr_running includes the interrupted task, which is running, not waiting.
 */
static __always_inline __u32 runq_len(struct task_struct *task)
{
	struct cfs_rq *cfs = BPF_CORE_READ(task, se.cfs_rq);
	__u32 nr;

	if (bpf_core_field_exists(cfs->rq))
		nr = BPF_CORE_READ(cfs, rq, nr_running);
	else if (bpf_core_field_exists(cfs->nr_queued))
		nr = BPF_CORE_READ(cfs, nr_queued);
	else
		nr = BPF_CORE_READ(cfs, nr_running);
	return nr > 0 ? nr - 1 : 0;
}

struct unclaimed_ctx {
	__u32 idle;
	__u32 queued;
};

static long unclaimed_cb(__u32 i, struct unclaimed_ctx *c)
{
	struct hc_cpu_state *cs = bpf_map_lookup_elem(&cpu_state, &i);

	if (!cs)
		return 1;
	if (cs->last_switch_ns && cs->cur_idle)
		c->idle++;
	else if (cs->queued)
		c->queued++;
	return 0;
}

/*
 * cpuunclaimed at this sample: this CPU has tasks waiting; how many CPUs are idle right now
 * and how many have tasks waiting (from the scheduler tracking: the idle state at each
 * switch, the queue length at each switch and sample). User space weighs the sample's period
 * by idle / queued so that CPUs sampling the same instant do not count it twice.
 */
static __always_inline void unclaimed(struct hc_sample_event *e)
{
	struct unclaimed_ctx c = {0};
	__u32 cpu = e->cpu;
	struct hc_cpu_state *cs = bpf_map_lookup_elem(&cpu_state, &cpu);

	e->idle_cpus = 0;
	e->queued_cpus = 0;
	if (!cs)
		return;
	cs->queued = e->runq_len;
	if (!e->runq_len || !cs->last_switch_ns)
		return; /* nothing waits here, or no scheduler tracking (--no-offcpu) */
	bpf_loop(nr_cpu_ids < HC_MAX_CPUS ? nr_cpu_ids : HC_MAX_CPUS, unclaimed_cb, &c, 0);
	e->idle_cpus = c.idle;
	e->queued_cpus = c.queued;
}

/* Set by user space around the window, sampling and scheduler
 * programs alike (bpf_ktime_get_ns() clock: CLOCK_MONOTONIC). */
__u64 window_start_ns = 0;
__u64 window_end_ns = 0;

/* ------------------------------------------------------------------------------------------
 * --unwind dwarf: copies of the user stack for user space to unwind with each object's call
 * frame information. Set by user space before load: the bytes a copy may hold (0: no
 * copies, frame pointers only) and a per-CPU byte budget (a token bucket).
 * ------------------------------------------------------------------------------------------ */
const volatile __u32 ucopy_bytes = 0;
const volatile __u64 ucopy_rate = 0;	    /* bytes per second per CPU */
const volatile __u64 ucopy_burst = 0;	    /* bucket depth in bytes */
const volatile __u64 ucopy_max_pending = 0; /* no copy while more than this waits in `events` */

#define PAGE_BYTES 4096

struct ucopy_buf {
	struct hc_ustack_event ev;
	/* One page more than a copy holds: each read is at most a page from an offset below
	 * HC_STACK_COPY_MAX, which is how the verifier sees that it stays inside. */
	__u8 data[HC_STACK_COPY_MAX + PAGE_BYTES];
};

/* One buffer per CPU, and one more (the last) for the start iterator, which sleeps and may
 * move between CPUs. An array, not a per-CPU array: per-CPU values are limited to 32 KiB.
 * Entries set by user space (possible CPUs + 1). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ucopy_buf);
} ucopy SEC(".maps");

/* User registers in DWARF order (sample.h); p is a struct pt_regs of user mode. */
#define UREGS_FROM(r, p)            \
	do {                        \
		(r)[0] = (p)->ax;   \
		(r)[1] = (p)->dx;   \
		(r)[2] = (p)->cx;   \
		(r)[3] = (p)->bx;   \
		(r)[4] = (p)->si;   \
		(r)[5] = (p)->di;   \
		(r)[6] = (p)->bp;   \
		(r)[7] = (p)->sp;   \
		(r)[8] = (p)->r8;   \
		(r)[9] = (p)->r9;   \
		(r)[10] = (p)->r10; \
		(r)[11] = (p)->r11; \
		(r)[12] = (p)->r12; \
		(r)[13] = (p)->r13; \
		(r)[14] = (p)->r14; \
		(r)[15] = (p)->r15; \
		(r)[16] = (p)->ip;  \
	} while (0)

/* May a copy be taken on this CPU now? Refills by elapsed time; a copy may overdraw the
 * bucket (its size is known only afterwards), which the next ones pay back. */
static __always_inline bool ucopy_budget(struct hc_cpu_state *cs, __u64 now)
{
	__u64 dt;
	__s64 credit;

	/* A reader that falls behind: copies go first, so that samples are not lost for them. */
	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > ucopy_max_pending) {
		count(HC_CNT_UCOPY_BUDGET);
		return false;
	}
	if (!cs)
		return true;
	dt = now > cs->ucopy_at_ns ? now - cs->ucopy_at_ns : 0;
	if (dt > 1000000000ull)
		dt = 1000000000ull;
	credit = cs->ucopy_credit + (__s64)(dt * ucopy_rate / 1000000000ull);
	if (credit > (__s64)ucopy_burst)
		credit = ucopy_burst;
	cs->ucopy_at_ns = now;
	cs->ucopy_credit = credit;
	if (credit <= 0) {
		count(HC_CNT_UCOPY_BUDGET);
		return false;
	}
	return true;
}

/* A chunk length the verifier can bound: at most a page. */
static __always_inline __u64 chunk_bytes(__u64 v)
{
	asm volatile("" : "+r"(v));
	if (v > PAGE_BYTES)
		v = PAGE_BYTES;
	return v;
}

/*
 * Copy up to ucopy_bytes of `task`'s user stack from sp into b->data, a page at a time up
 * to the first page that cannot be read (the top of a thread's stack). Not sleepable: the
 * current task's, without faulting (samples, the scheduler); sleepable: `task`'s, whose
 * pages may be faulted in (the start iterator). Returns the bytes copied.
 */
static __always_inline __u32 copy_stack(struct ucopy_buf *b, __u64 sp, bool sleepable,
					struct task_struct *task)
{
	__u64 n = 0, want = ucopy_bytes < HC_STACK_COPY_MAX ? ucopy_bytes : HC_STACK_COPY_MAX;
	__u64 chunk = PAGE_BYTES - (sp & (PAGE_BYTES - 1));

	for (int i = 0; i < HC_STACK_COPY_MAX / PAGE_BYTES + 1; i++) {
		__u64 len = chunk, off = n & (HC_STACK_COPY_MAX - 1);
		long err;

		if (n >= want)
			break;
		if (len > want - n)
			len = want - n;
		len = chunk_bytes(len);
		if (!len)
			break;
		if (sleepable)
			err = bpf_copy_from_user_task(b->data + off, len, (void *)(sp + n), task,
						      0);
		else
			err = bpf_probe_read_user(b->data + off, len, (void *)(sp + n));
		if (err)
			break;
		n += len;
		chunk = PAGE_BYTES;
	}
	return n;
}

/* Fill b->ev.copy from user registers already in b->ev.copy.regs: the stack copy and the
 * counters. Returns the size of the struct hc_ucopy with its bytes, 0 when nothing was
 * copied (the first page unreadable). */
static __always_inline __u32 take_copy(struct ucopy_buf *b, bool sleepable,
				       struct task_struct *task)
{
	__u32 len = copy_stack(b, b->ev.copy.regs[HC_UREG_SP], sleepable, task);

	b->ev.copy.len = len;
	b->ev.copy._pad = 0;
	if (!len) {
		count(HC_CNT_UCOPY_FAULT);
		return 0;
	}
	count(HC_CNT_UCOPY);
	count_add(HC_CNT_UCOPY_BYTES, len);
	return sizeof(struct hc_ucopy) + len;
}

static __always_inline void ucopy_charge(struct hc_cpu_state *cs, __u32 size)
{
	if (cs)
		cs->ucopy_credit -= size;
}

/* A size the verifier can bound: a struct hc_ucopy and at most HC_STACK_COPY_MAX bytes. */
static __always_inline __u64 ucopy_size_bound(__u64 v)
{
	asm volatile("" : "+r"(v));
	if (v > sizeof(struct hc_ucopy) + HC_STACK_COPY_MAX)
		v = sizeof(struct hc_ucopy) + HC_STACK_COPY_MAX;
	return v;
}

/* Send a sample of `size` bytes followed by the copy (usize bytes from b->ev.copy). */
static __always_inline int send_with_copy(struct hc_sample_event *e, __u64 size,
					  struct ucopy_buf *b, __u32 usize, __u64 flags)
{
	struct bpf_dynptr dp;
	__u64 us = ucopy_size_bound(usize);

	if (size > HC_SAMPLE_HDR_SIZE + 2 * STACK_BYTES) {
		count(HC_CNT_RINGBUF_FULL); /* never: the stack lengths are clamped */
		return 0;
	}
	e->ucopy_size = us;
	if (bpf_ringbuf_reserve_dynptr(&events, size + us, 0, &dp)) {
		bpf_ringbuf_discard_dynptr(&dp, 0);
		count(HC_CNT_RINGBUF_FULL);
		return 0;
	}
	bpf_dynptr_write(&dp, 0, e, size, 0);
	bpf_dynptr_write(&dp, size, &b->ev.copy, us, 0);
	bpf_ringbuf_submit_dynptr(&dp, flags);
	return 0;
}

/* ------------------------------------------------------------------------------------------
 * --unwind table: user stacks walked here, frame by frame, with the unwind tables user space
 * compiled from each object's call frame information and published in two mmap'd arrays
 * (bpf/unwind.h; symbolize/uwpub.c). Objects without a table (JIT code, anonymous memory,
 * a table that did not fit) are walked with frame pointers, mixed along one stack.
 * ------------------------------------------------------------------------------------------ */
#ifndef BPF_F_MMAPABLE
#define BPF_F_MMAPABLE (1U << 10) /* include/uapi/linux/bpf.h */
#endif
const volatile bool uw_tables = false;
const volatile __u32 uw_n_procs = 1; /* entries of uw_procs: a power of two */
const volatile __u32 uw_n_rows = 1;  /* entries of uw_rows */
/* CLOCK_BOOTTIME when the programs were loaded: processes started before it exec'd unseen
 * (uw_execd knows nothing of them), so their parent's tables are not theirs */
const volatile __u64 uw_loaded_ns = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hc_urow);
} uw_rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hc_uw_proc);
} uw_procs SEC(".maps");

#define UW_USER_TOP 0x800000000000ull
/* struct rt_sigframe on x86-64, as __restore_rt finds it (the return address popped): the
 * interrupted registers in uc.uc_mcontext (struct sigcontext) */
#define UW_SIG_RBP 120
#define UW_SIG_RSP 160
#define UW_SIG_RIP 168

struct uw_walk {
	__u64 pc, sp, bp;
	__u32 slot;
	__u32 seq;	  /* the slot's sequence when the walk began (even) */
	__u32 n;	  /* frames written to pcs[] */
	__u32 fp_frames;  /* of them, walked with frame pointers */
	__u32 cache_hits; /* frames whose row came from the cache */
	__u32 end;	  /* enum hc_uw_end once ended; HC_UW_END_MAX while walking */
	bool bp_unknown;  /* rbp's value is not known from here on */
	bool exact;	  /* pc is where execution stopped (leaf, signal), not a return address */
};

/* A bisection's bounds: the answer is lo - 1 once lo == hi. */
struct uw_bisect {
	__u64 lo, hi;
};

/*
 * The rows found lately, per CPU: stacks repeat (the same callers under every sample of a
 * thread), and a hit skips both bisections. An entry holds while its slot's sequence is the
 * one it was found under: a slot's rows are not freed nor rewritten while it names them, and
 * the sequence only grows (a freed slot's too), so a rewritten slot never hits old entries.
 */
#define UW_CACHE_LOG2 9
#define UW_CACHE (1u << UW_CACHE_LOG2)

struct uw_cache_ent {
	__u64 pc; /* the looked-up pc (a return address - 1); 0: empty */
	__u32 slot, seq;
	struct hc_urow row;
};

/*
 * The walk's state, per CPU, in a map value rather than on the stack: the verifier knows
 * nothing of what a map value holds, so the frame step (a bpf_loop callback) and the
 * bisections' loops are checked once each, where state on the stack (constants it follows
 * through every halving) has it walk each path apart.
 */
struct uw_state {
	struct uw_walk w;
	struct uw_bisect b;
	__u64 pcs[HC_MAX_STACK_DEPTH]; /* the frames, leaf first */
	struct uw_cache_ent cache[UW_CACHE];
};

/* Entry 0: the walks of the current task (samples, tracepoints); 1: the start iterator's,
 * which sleeps and may be interrupted by a sample on its CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, struct uw_state);
} uw_scratch SEC(".maps");

/* What a walk's callbacks are given: the state's entry, and for the iterator the task whose
 * memory is read (bpf_copy_from_user_task(): another task's, and it may fault pages in). */
struct uw_ctx {
	__u32 idx;
	struct task_struct *task;
};

static __always_inline struct uw_state *uw_state(__u32 idx)
{
	return bpf_map_lookup_elem(&uw_scratch, &idx);
}

/* The published map of process proc holding pc, or -1. The halvings' bounds live in
 * the per-CPU map value, not in registers: the verifier, knowing nothing of them, finds each
 * iteration's states alike and checks the loop once, without a callback per halving. */
static __always_inline long uw_find_map(struct uw_state *st, const struct hc_uw_proc *proc,
					__u64 pc)
{
	__u64 i;

	st->b.lo = 0;
	st->b.hi = proc->n_maps < HC_UW_MAPS ? proc->n_maps : HC_UW_MAPS;
	for (int k = 0; k < 8; k++) {
		__u64 lo = st->b.lo, hi = st->b.hi, mid;

		if (lo >= hi)
			break;
		mid = lo + (hi - lo) / 2;
		if (mid >= HC_UW_MAPS)
			return -1;
		if (proc->maps[mid].start <= pc)
			st->b.lo = mid + 1;
		else
			st->b.hi = mid;
	}
	if (st->b.lo != st->b.hi)
		return -1;
	i = st->b.lo - 1;
	if (i >= HC_UW_MAPS || pc >= proc->maps[i].end)
		return -1;
	return (long)i;
}

/* The row for rel in rows [at, at + n) of uw_rows: its index in uw_rows, or -1 before the
 * first row (or on a bad range). As uw_find_map(). */
static __always_inline long uw_find_row(struct uw_state *st, __u32 at, __u32 n, __u32 rel)
{
	if (n > HC_UROWS_MAX || at >= uw_n_rows || n > uw_n_rows - at)
		return -1;
	st->b.lo = 0;
	st->b.hi = n;
	for (int k = 0; k <= HC_UROWS_LOG2; k++) {
		__u64 lo = st->b.lo, hi = st->b.hi;
		__u32 idx;
		struct hc_urow *r;

		if (lo >= hi)
			break;
		idx = at + (__u32)(lo + (hi - lo) / 2);
		r = bpf_map_lookup_elem(&uw_rows, &idx);
		if (!r)
			return -1;
		if (r->pc <= rel)
			st->b.lo = idx - at + 1;
		else
			st->b.hi = idx - at;
	}
	if (st->b.lo != st->b.hi || !st->b.lo)
		return -1;
	return (long)(at + st->b.lo - 1);
}

/* n bytes of user memory at addr: the current task's, or (sleepable: the start iterator)
 * c->task's. */
static __always_inline bool uw_read_n(bool sleepable, const struct uw_ctx *c, void *v, __u32 n,
				      __u64 addr)
{
	if (sleepable)
		return !bpf_copy_from_user_task(v, n, (const void *)addr, c->task, 0);
	return !bpf_probe_read_user(v, n, (const void *)addr);
}

#define uw_read(v, addr) uw_read_n(sleepable, c, (v), sizeof(*(v)), (addr))

/* One frame with frame pointers: rbp points at the saved rbp, the return address above it. */
static __always_inline long uw_fp_step(bool sleepable, const struct uw_ctx *c, struct uw_walk *w,
				       __u32 fail)
{
	__u64 fr[2];

	if (w->bp_unknown) {
		w->end = HC_UW_UNSUPPORTED;
		return 1;
	}
	if (!w->bp) {
		w->end = HC_UW_COMPLETE; /* _start and thread starts clear rbp */
		return 1;
	}
	if (w->bp < w->sp || w->bp >= UW_USER_TOP) {
		w->end = fail;
		return 1;
	}
	if (!uw_read_n(sleepable, c, fr, sizeof(fr), w->bp)) {
		w->end = HC_UW_READ_ERROR;
		return 1;
	}
	w->sp = w->bp + 16;
	w->bp = fr[0];
	w->pc = fr[1];
	w->exact = false;
	w->fp_frames++;
	if (!w->pc) {
		w->end = HC_UW_COMPLETE;
		return 1;
	}
	return 0;
}

/* One frame: pc recorded, then its caller's registers from pc's row (a bpf_loop step). */
static __always_inline long uw_step_impl(bool sleepable, struct uw_ctx *c)
{
	struct uw_state *st = uw_state(c->idx);
	struct uw_walk *w = st ? &st->w : NULL;
	struct hc_uw_proc *proc;
	struct uw_cache_ent *ce;
	__u32 slot, n, at, h;
	__u64 pc, lpc, cfa, ra, v;
	struct hc_urow *r, row;
	long m, ri;
	bool hit;

	if (!w)
		return 1;
	slot = w->slot;
	n = w->n;
	pc = w->pc;
	proc = bpf_map_lookup_elem(&uw_procs, &slot);
	if (!proc) {
		w->end = HC_UW_NO_PROCESS;
		return 1;
	}
	if (pc < 0x1000 || pc >= UW_USER_TOP) {
		w->end = HC_UW_BAD_PC;
		return 1;
	}
	if (n >= HC_MAX_STACK_DEPTH) {
		w->end = HC_UW_DEPTH;
		return 1;
	}
	st->pcs[n] = pc;
	w->n = n + 1;
	/* a return address is the instruction after the call: look the call up */
	lpc = w->exact ? pc : pc - 1;
	h = ((__u32)lpc * 2654435761u) >> (32 - UW_CACHE_LOG2);
	ce = &st->cache[h & (UW_CACHE - 1)];
	hit = ce->pc == lpc && ce->slot == slot && ce->seq == w->seq;
	if (hit) {
		row = ce->row;
		/* again: a walk nested on this CPU (a sample interrupting a lock tracepoint's)
		 * may have rewritten the entry while it was copied */
		hit = ce->pc == lpc && ce->slot == slot && ce->seq == w->seq;
	}
	if (hit) {
		w->cache_hits++;
	} else {
		m = uw_find_map(st, proc, lpc);
		if (m < 0 || m >= HC_UW_MAPS)
			return uw_fp_step(sleepable, c, w, HC_UW_NO_MAPPING);
		if (!proc->maps[m].n_rows)
			return uw_fp_step(sleepable, c, w, HC_UW_NO_TABLE);
		ri = uw_find_row(st, proc->maps[m].rows_at, proc->maps[m].n_rows,
				 (__u32)(lpc - proc->maps[m].bias));
		at = (__u32)ri;
		r = ri < 0 ? NULL : bpf_map_lookup_elem(&uw_rows, &at);
		if (!r)
			return uw_fp_step(sleepable, c, w, HC_UW_NO_TABLE);
		row = *r;
		/* empty first: a walk that interrupts this one on this CPU never hits a half
		 * written entry */
		ce->pc = 0;
		ce->slot = slot;
		ce->seq = w->seq;
		ce->row = row;
		ce->pc = lpc;
	}
	r = &row;
	switch (r->kind) {
	case HC_UR_SP:
		cfa = w->sp + 8 * (__s64)r->off;
		break;
	case HC_UR_BP:
		if (w->bp_unknown) {
			w->end = HC_UW_UNSUPPORTED;
			return 1;
		}
		cfa = w->bp + 8 * (__s64)r->off;
		break;
	case HC_UR_PLT:
		cfa = w->sp + 8 + ((pc & 15) >= (__u64)r->off ? 8 : 0);
		break;
	case HC_UR_DEREF_SP:
	case HC_UR_DEREF_BP:
		if (r->kind == HC_UR_DEREF_BP && w->bp_unknown) {
			w->end = HC_UW_UNSUPPORTED;
			return 1;
		}
		if (!uw_read(&cfa,
			     (r->kind == HC_UR_DEREF_SP ? w->sp : w->bp) + 8 * (__s64)r->off)) {
			w->end = HC_UW_READ_ERROR;
			return 1;
		}
		break;
	case HC_UR_SIGNAL:
		/* the interrupted context: its pc is where it stopped, not a return address */
		if (!uw_read(&w->pc, w->sp + UW_SIG_RIP) || !uw_read(&v, w->sp + UW_SIG_RSP) ||
		    !uw_read(&w->bp, w->sp + UW_SIG_RBP)) {
			w->end = HC_UW_READ_ERROR;
			return 1;
		}
		if (v <= w->sp) {
			w->end = HC_UW_BAD_FRAME;
			return 1;
		}
		w->sp = v;
		w->bp_unknown = false;
		w->exact = true;
		return 0;
	case HC_UR_STOP:
		w->end = HC_UW_COMPLETE;
		return 1;
	case HC_UR_GAP:
		return uw_fp_step(sleepable, c, w, HC_UW_NO_TABLE);
	default:
		w->end = HC_UW_UNSUPPORTED;
		return 1;
	}
	if (cfa <= w->sp || cfa >= UW_USER_TOP) {
		w->end = HC_UW_BAD_FRAME;
		return 1;
	}
	if (r->bp == 2) {
		/* push %rbp first, as most functions that save it do: rbp and the return
		 * address side by side, one read */
		__u64 fr[2];

		if (!uw_read_n(sleepable, c, fr, sizeof(fr), cfa - 16)) {
			w->end = HC_UW_READ_ERROR;
			return 1;
		}
		w->bp = fr[0];
		ra = fr[1];
		w->bp_unknown = false;
	} else {
		if (!uw_read(&ra, cfa - 8)) {
			w->end = HC_UW_READ_ERROR;
			return 1;
		}
		if (r->bp == HC_URBP_UNKNOWN) {
			w->bp_unknown = true;
		} else if (r->bp) {
			if (!uw_read(&w->bp, cfa - 8 * (__u64)r->bp)) {
				w->end = HC_UW_READ_ERROR;
				return 1;
			}
			w->bp_unknown = false;
		}
	}
	w->sp = cfa;
	w->pc = ra;
	w->exact = false;
	if (!ra) {
		w->end = HC_UW_COMPLETE;
		return 1;
	}
	return 0;
}

static long uw_step(__u32 i, struct uw_ctx *c)
{
	return uw_step_impl(false, c);
}

static long uw_step_task(__u32 i, struct uw_ctx *c)
{
	return uw_step_impl(true, c);
}

/* Processes that exec'd (--unwind table): tgid -> its start time and when. Their slot from
 * before the exec, and their parent's, are not theirs. */
struct uw_exec {
	__u64 pstart_ns;
	__u64 exec_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct uw_exec);
} uw_execd SEC(".maps");

/* tgid's published slot (tgid and start time both match, seq even), or -1. */
static __always_inline long uw_find_proc(__u32 tgid, __u64 pstart, __u32 *seq)
{
	__u32 h = hc_uw_slot_hash(tgid, uw_n_procs);

	for (__u32 k = 0; k < HC_UW_PROBES; k++) {
		__u32 slot = (h + k) & (uw_n_procs - 1);
		struct hc_uw_proc *p = bpf_map_lookup_elem(&uw_procs, &slot);

		if (!p)
			return -1;
		if (p->tgid == tgid &&
		    (p->pstart_ns == pstart || ((p->flags & HC_UW_PROC_TICKS) &&
						p->pstart_ns == pstart - pstart % HC_UW_TICK_NS))) {
			struct uw_exec *x = bpf_map_lookup_elem(&uw_execd, &tgid);

			*seq = *(volatile __u32 *)&p->seq;
			if (*seq & 1)
				return -1;
			/* written before the process's exec: the old image's maps */
			if (x && x->pstart_ns == pstart && x->exec_ns > p->published_ns)
				return -1;
			return slot;
		}
	}
	return -1;
}

/*
 * The user stack of task t (tgid, its group leader's start pstart) into dst (room for
 * HC_MAX_STACK_DEPTH frames), walked from its user registers ip, sp, bp: t is the current
 * task, or (sleepable: the start iterator) any, whose memory is read with
 * bpf_copy_from_user_task(). Its bytes, or -1 when it was not walked (no published slot, or
 * the slot changed meanwhile: the caller takes frame pointers). *end is how the walk ended
 * (HC_UW_NONE when it did not run).
 */
static __always_inline long uw_walk(__u64 *dst, struct task_struct *t, __u32 tgid, __u64 pstart,
				    __u64 ip, __u64 sp, __u64 bp, __u32 *end, bool sleepable)
{
	struct uw_ctx c = {.idx = sleepable, .task = t};
	struct uw_state *st = uw_state(c.idx);
	struct hc_uw_proc *p;
	__u32 seq = 0, slot, e;
	__u64 bytes;
	long s;

	*end = HC_UW_NONE;
	if (!st)
		return -1;
	s = uw_find_proc(tgid, pstart, &seq);
	if (s < 0) {
		/* a fork not published yet, that has not exec'd: its parent's mappings */
		struct uw_exec *x = bpf_map_lookup_elem(&uw_execd, &tgid);

		if ((!x || x->pstart_ns != pstart) && pstart > uw_loaded_ns) {
			struct task_struct *parent = BPF_CORE_READ(t, group_leader, real_parent);

			s = uw_find_proc(BPF_CORE_READ(parent, tgid),
					 BPF_CORE_READ(parent, group_leader, start_boottime), &seq);
		}
		if (s < 0) {
			count(HC_CNT_UW_NO_PROC);
			return -1;
		}
		count(HC_CNT_UW_PARENT);
	}
	slot = (__u32)s;
	st->w = (struct uw_walk){.pc = ip,
				 .sp = sp,
				 .bp = bp,
				 .slot = slot,
				 .seq = seq,
				 .end = HC_UW_END_MAX,
				 .exact = true};
	if (sleepable)
		bpf_loop(HC_MAX_STACK_DEPTH + 1, uw_step_task, &c, 0);
	else
		bpf_loop(HC_MAX_STACK_DEPTH + 1, uw_step, &c, 0);
	p = bpf_map_lookup_elem(&uw_procs, &slot);
	/* x86-64 keeps loads in order: a plain (volatile) read of seq after the walk */
	if (!p || *(volatile __u32 *)&p->seq != seq) {
		count(HC_CNT_UW_BUSY);
		return -1;
	}
	e = st->w.end < HC_UW_END_MAX ? st->w.end : HC_UW_DEPTH;
	bytes = st->w.n < HC_MAX_STACK_DEPTH ? (__u64)st->w.n * 8 : STACK_BYTES;
	if (bytes && bpf_probe_read_kernel(dst, bytes, st->pcs))
		bytes = 0;
	count(HC_CNT_UW_WALKS);
	count(HC_CNT_UW_END + e);
	count_add(HC_CNT_UW_FP_FRAMES, st->w.fp_frames);
	count_add(HC_CNT_UW_FRAMES, st->w.n);
	count_add(HC_CNT_UW_CACHE_HITS, st->w.cache_hits);
	*end = e;
	return (long)bytes;
}

/* uw_walk() of the current task from the user registers it entered the kernel with (the
 * scheduler and lock tracepoints, a sample that interrupted the kernel). */
static __always_inline long uw_walk_current(__u64 *dst, __u32 *end)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(t);
	__u64 id = bpf_get_current_pid_tgid();

	return uw_walk(dst, t, id >> 32, BPF_CORE_READ(t, group_leader, start_boottime),
		       BPF_CORE_READ(r, ip), BPF_CORE_READ(r, sp), BPF_CORE_READ(r, bp), end,
		       false);
}

/* The current task's user stack into stacks (HC_MAX_STACK_DEPTH frames): walked from the
 * tables (--unwind table), else, or when its process is not published (yet), frame pointers.
 * Bytes, or bpf_get_stack()'s -errno; *uw_end as uw_walk() sets it. */
static __always_inline long take_ustack(void *ctx, __u64 *stacks, __u32 *uw_end)
{
	long ulen = -1;

	*uw_end = HC_UW_NONE;
	if (uw_tables)
		ulen = uw_walk_current(stacks, uw_end);
	if (ulen < 0)
		ulen = bpf_get_stack(ctx, stacks, STACK_BYTES, BPF_F_USER_STACK);
	return ulen;
}

SEC("perf_event")
int hc_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	bool in_kernel = (ctx->regs.cs & 3) == 0;
	struct hc_sample_event *e;
	long ulen = 0, klen = 0;
	__u32 prev_tgid, usize;
	__u64 size, now = bpf_ktime_get_ns();

	/* A sample before the window is not part of the profile. The events are enabled only
	 * when the window opens (sampler.c), but whatever else enables one early (libbpf's
	 * attach did: up to 4x the window's CPU time was counted) must not add to it. The
	 * window ends after the events are disabled, so nothing comes after it. */
	if (!window_start_ns || now < window_start_ns)
		return 0;
	count(HC_CNT_SEEN);
	if (tid == 0) {
		/* The idle task: counted (idle_samples), never drawn. */
		count(HC_CNT_IDLE);
		return 0;
	}
	if (!(filter_comm ? task_wanted(task) : wanted(tgid))) {
		count(HC_CNT_FILTERED);
		return 0;
	}
	e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return 0;

	/* The scratch record still holds this CPU's previous sample (tgid 0 before the first). */
	prev_tgid = e->tgid;
	e->type = HC_EVENT_SAMPLE;
	e->cpu = bpf_get_smp_processor_id();
	e->time_ns = now;
	e->kernel_ip = in_kernel ? ctx->regs.ip : 0;
	e->user_ip = in_kernel ? 0 : ctx->regs.ip;
	e->tgid = tgid;
	e->tid = tid;
	e->pstart_ns = BPF_CORE_READ(task, group_leader, start_boottime);
	e->runq_len = runq_len(task);
	unclaimed(e);
	e->prio = BPF_CORE_READ(task, prio);
	e->policy = BPF_CORE_READ(task, policy);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	BPF_CORE_READ_STR_INTO(&e->pcomm, task, group_leader, comm);

	/* User stack: none for kernel threads (no mm). */
	e->uw_end = HC_UW_NONE;
	if (!(BPF_CORE_READ(task, flags) & PF_KTHREAD)) {
		ulen = take_ustack(ctx, e->stacks, &e->uw_end);
		if (ulen < 0) {
			count(HC_CNT_USTACK_ERR);
			e->ustack_len = ulen;
			ulen = 0;
		} else {
			e->ustack_len = ulen;
		}
	} else {
		e->ustack_len = 0;
	}
	/* Kernel stack: only when the sample interrupted kernel code. */
	if (in_kernel) {
		/* Variable offset, bounded for the verifier: ulen + STACK_BYTES fits in stacks[].
		 */
		if (ulen > STACK_BYTES)
			ulen = STACK_BYTES;
		klen = bpf_get_stack(ctx, (void *)e->stacks + ulen, STACK_BYTES, 0);
		if (klen < 0) {
			count(HC_CNT_KSTACK_ERR);
			e->kstack_len = klen;
			klen = 0;
		} else {
			e->kstack_len = klen;
		}
	} else {
		e->kstack_len = 0;
	}

	if (ulen > STACK_BYTES)
		ulen = STACK_BYTES;
	if (klen > STACK_BYTES)
		klen = STACK_BYTES;
	size = HC_SAMPLE_HDR_SIZE + ulen + klen;

	/* --unwind dwarf: the user registers and stack go after the frames. */
	e->ucopy_size = 0;
	if (ucopy_bytes && !(BPF_CORE_READ(task, flags) & PF_KTHREAD)) {
		__u32 cpu = e->cpu;
		struct hc_cpu_state *cs = bpf_map_lookup_elem(&cpu_state, &cpu);
		struct ucopy_buf *b = bpf_map_lookup_elem(&ucopy, &cpu);

		if (b && ucopy_budget(cs, now)) {
			/* The registers the task entered the kernel with, at the top of its
			 * kernel stack: the interrupted ones when it was in user mode. */
			struct pt_regs *r =
				(struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

			UREGS_FROM(b->ev.copy.regs, r);
			usize = take_copy(b, false, 0);
			ucopy_charge(cs, usize);
			if (usize)
				return send_with_copy(e, size, b, usize,
						      wakeup_flags(tgid, prev_tgid));
		}
	}
	if (bpf_ringbuf_output(&events, e, size, wakeup_flags(tgid, prev_tgid)))
		count(HC_CNT_RINGBUF_FULL);
	return 0;
}

/* A new program image: user space forgets the old mappings and snapshots the new ones. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(hc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct hc_exec_event *e;
	__u32 tgid = BPF_CORE_READ(p, tgid);

	/* --comm too: by now the task has its new name, and it leads its group. Without it
	 * every exec on the machine had its maps read (and counted process_gone when short). */
	if (!(filter_comm ? task_wanted(p) : wanted(tgid)))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(HC_CNT_EXEC_LOST);
		return 0;
	}
	e->type = HC_EVENT_EXEC;
	e->tgid = tgid;
	e->time_ns = bpf_ktime_get_ns();
	e->pstart_ns = BPF_CORE_READ(p, group_leader, start_boottime);
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	if (uw_tables) {
		struct uw_exec x = {.pstart_ns = e->pstart_ns, .exec_ns = e->time_ns};

		bpf_map_update_elem(&uw_execd, &tgid, &x, BPF_ANY);
	}
	bpf_map_delete_elem(&seen_tgids, &tgid);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* ------------------------------------------------------------------------------------------
 * Off-CPU time from the scheduler: sched_switch, sched_wakeup(_new), sched_process_exit.
 *
 * Per thread, in task-local storage (it lives and dies with the task_struct, so pid reuse
 * and CPU migration cannot mix two threads' intervals, and lookups cost no hashing):
 *  - at switch-out (the thread is `current`): the time, whether it went to sleep (blocked) or
 *    stays runnable (preempted), and its stacks, unless its switch-out context is the same as
 *    last time (user ip, sp, bp, the word at sp, syscall number, how it left), then the
 *    stacks it already holds are reused;
 *  - at wakeup: the time and the waker;
 *  - at switch-in: the interval closes: blocked = switch-out -> wakeup, run-queue = wakeup (or
 *    a preempted switch-out) -> switch-in. Times add up in the thread's current "slot" (one
 *    stack + one waker), which is flushed to user space as one hc_offcpu_event when the stack
 *    or waker changes, at least once a second, at exit and when the capture ends.
 * Every switch costs timestamps and a few stores; stacks are taken only when the context
 * changes, within a per-CPU budget (a token bucket); over budget the interval is kept with
 * its stack marked "[not captured]", never weighted or dropped.
 * ------------------------------------------------------------------------------------------ */

#define TASK_RUNNING 0
#define TASK_DEAD 0x80
#define SIG_WORDS 5

enum ts_state { TS_NONE = 0, TS_BLOCKED, TS_PREEMPTED, TS_DEAD };

/* Set by user space before load. */
const volatile __u64 min_block_ns = 0;	       /* --min-block */
const volatile __u64 stack_cost_ns = 100000;   /* 1e9 / stack captures per second per CPU */
const volatile __u64 stack_burst_ns = 6400000; /* bucket depth: 64 captures */
const volatile bool stack_reuse = true;
const volatile bool capture_wakers = false; /* --wakers */
const volatile __u64 flush_ns = 1000000000; /* flush a slot at least this often */

struct tstate {
	__u64 t_out;		 /* switch-out time; 0 while on a CPU (or not tracked yet) */
	__u64 t_wake;		 /* wakeup time of the current blocked interval; 0: not woken yet */
	__u32 state;		 /* enum ts_state of the current off-CPU interval */
	__u32 waker_seq;	 /* last hc_waker_event seq of this thread */
	__u32 cur;		 /* slot of the current interval: SLOT_BLOCKED or SLOT_RUNNABLE */
	__u32 useq;		 /* --unwind dwarf: last hc_ustack_event seq of this thread */
	__u64 sig[2][SIG_WORDS]; /* switch-out context of each slot's stacks */
	__u64 wsig[SIG_WORDS];	 /* --wakers: context of the last waker stack taken */
	/* The waker of the current blocked interval, until it closes. */
	__u32 pend_tgid;
	__u32 pend_tid;
	__u32 pend_seq;
	__u32 hist_dirty;
	char pend_comm[HC_TASK_COMM_LEN];
	char pend_pcomm[HC_TASK_COMM_LEN];
	__u64 hist_first_ns; /* time of the first histogram entry since the last flush */
	/* The end iterator sends th and both slots as one struct hc_end_event: keep them
	 * together and in this order. */
	struct hc_thist_event th; /* histograms since the last flush */
	/* Two slots, accumulated times + their stacks: one for blocked switch-outs, one for
	 * preempted ones. A thread often alternates between the two at one call site (a pipe
	 * writer blocks when the pipe is full, is preempted by the reader it woke otherwise);
	 * each keeps its own kernel stack, so neither forces a new capture on the other. */
	struct hc_offcpu_event ev[2];
};

#define SLOT_BLOCKED 0
#define SLOT_RUNNABLE 1

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tstate);
} tstate SEC(".maps");

/* --locks: the contentions a thread is inside (innermost last). */
const volatile bool track_locks = false;

struct lentry {
	__u64 lock;
	__u64 start_ns;
	__u32 flags;
	__u32 blocked;
};

struct lstate {
	struct lentry e[HC_LOCK_DEPTH];
	__u32 depth;
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lstate);
} lstate SEC(".maps");

/* A spinning waiter never leaves its CPU (it spins with preemption off). */
static __always_inline bool spin_only(__u32 flags)
{
	return (flags & HC_LCB_SPIN) && !(flags & (HC_LCB_MUTEX | HC_LCB_RT));
}

/*
 * The thread t leaves its CPU (asleep when blocked): the contention it is in, if any, is one
 * it blocked in. Returns HC_LOCK_WAIT | its flags, 0 when none. A spinlock contention still
 * open here is one whose end this program could not see (contention inside a BPF program,
 * say on the ring buffer's lock while hc_lock_end runs: a program does not run inside
 * itself): it is dropped, counted as unmatched.
 */
static __always_inline __u32 lock_switch_out(struct task_struct *t, bool blocked)
{
	struct lstate *ls;
	__u32 d;

	if (!track_locks)
		return 0;
	ls = bpf_task_storage_get(&lstate, t, 0, 0);
	if (!ls)
		return 0;
	d = ls->depth;
	for (int i = 0; i < HC_LOCK_DEPTH && d > 0 && d <= HC_LOCK_DEPTH; i++) {
		if (!spin_only(ls->e[(d - 1) & (HC_LOCK_DEPTH - 1)].flags))
			break;
		d--;
		count(HC_CNT_LOCK_UNMATCHED);
	}
	ls->depth = d;
	if (!blocked || d == 0 || d > HC_LOCK_DEPTH)
		return 0;
	ls->e[(d - 1) & (HC_LOCK_DEPTH - 1)].blocked = 1;
	return HC_LOCK_WAIT | (ls->e[(d - 1) & (HC_LOCK_DEPTH - 1)].flags & HC_LCB_MASK);
}

/* Per-CPU scratch for the end iterator's copy of a thread's state. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hc_end_event);
} end_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hc_waker_event);
} waker_scratch SEC(".maps");

static __always_inline __u64 rb_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
}

/* DTrace quantize() slot of a value: 0 -> 0, [2^(k-1), 2^k) -> k. */
static __always_inline __u32 qslot(__u64 v)
{
	__u32 k = 0;

	if (!v)
		return 0;
	/* 1 + floor(log2 v), in at most 6 steps */
	if (v >> 32) {
		v >>= 32;
		k += 32;
	}
	if (v >> 16) {
		v >>= 16;
		k += 16;
	}
	if (v >> 8) {
		v >>= 8;
		k += 8;
	}
	if (v >> 4) {
		v >>= 4;
		k += 4;
	}
	if (v >> 2) {
		v >>= 2;
		k += 2;
	}
	if (v >> 1) {
		k += 1;
	}
	k += 1;
	return k < HC_QSLOTS ? k : HC_QSLOTS - 1;
}

static __always_inline void hist_add(struct tstate *ts, __u32 h, __u64 ns, __u64 now)
{
	__u32 k = qslot(ns / 1000);

	if (h < HC_TH_MAX && k < HC_QSLOTS) {
		ts->th.slots[h][k]++;
		if (!ts->hist_dirty)
			ts->hist_first_ns = now;
		ts->hist_dirty = 1;
	}
}

static __always_inline void reset_slot_times(struct hc_offcpu_event *ev)
{
	ev->first_ns = 0;
	ev->last_ns = 0;
	ev->off_ns = 0;
	ev->rq_ns = 0;
	ev->short_off_ns = 0;
	ev->short_rq_ns = 0;
	ev->n_blocked = 0;
	ev->n_preempted = 0;
}

/* A stack length in bytes, clamped to [0, STACK_BYTES] in a way the verifier can follow
 * (the barrier keeps clang from folding the clamp into a 32-bit compare). */
static __always_inline __u64 stack_bytes(__s32 len)
{
	__u64 v = len > 0 ? (__u64)len : 0;

	asm volatile("" : "+r"(v));
	if (v > STACK_BYTES)
		v = STACK_BYTES;
	return v;
}

static __always_inline __u64 slot_size(const struct hc_offcpu_event *ev)
{
	return HC_OFFCPU_HDR_SIZE + stack_bytes(ev->ustack_len) + stack_bytes(ev->kstack_len);
}

/* Send the slot's accumulated times (if any) and start it over. A lost flush is counted
 * with its nanoseconds. */
static __always_inline void flush_slot(struct tstate *ts, __u32 k)
{
	struct hc_offcpu_event *ev = &ts->ev[k & 1];
	__u64 t = ev->off_ns + ev->rq_ns + ev->short_off_ns + ev->short_rq_ns;

	if (!ev->n_blocked && !ev->n_preempted) {
		return;
	}
	ev->type = HC_EVENT_OFFCPU;
	if (bpf_ringbuf_output(&events, ev, slot_size(ev), rb_flags())) {
		count(HC_CNT_OFF_RINGBUF_FULL);
		count_add(HC_CNT_OFF_LOST_NS, t);
	}
	reset_slot_times(ev);
}

static __always_inline void flush_hist(struct tstate *ts)
{
	if (!ts->hist_dirty)
		return;
	ts->th.type = HC_EVENT_THIST;
	ts->th.tgid = ts->ev[0].tgid;
	ts->th.tid = ts->ev[0].tid;
	__builtin_memcpy(ts->th.pcomm, ts->ev[ts->cur & 1].pcomm, HC_TASK_COMM_LEN);
	if (bpf_ringbuf_output(&events, &ts->th, sizeof(ts->th), rb_flags()))
		count(HC_CNT_THIST_LOST);
	else
		__builtin_memset(ts->th.slots, 0, sizeof(ts->th.slots));
	ts->hist_dirty = 0;
}

/* The thread's storage; created (when `create` and the filters want it) on first use. */
static __always_inline struct tstate *tstate_get(struct task_struct *t, bool create)
{
	struct tstate *ts = bpf_task_storage_get(&tstate, t, 0, 0);

	if (ts || !create)
		return ts;
	if (!task_wanted(t))
		return 0;
	ts = bpf_task_storage_get(&tstate, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ts) {
		count(HC_CNT_STATE_NOMEM);
		return 0;
	}
	ts->ev[0].tgid = ts->ev[1].tgid = BPF_CORE_READ(t, tgid);
	ts->ev[0].pstart_ns = ts->ev[1].pstart_ns = BPF_CORE_READ(t, group_leader, start_boottime);
	ts->ev[0].tid = ts->ev[1].tid = BPF_CORE_READ(t, pid);
	if (BPF_CORE_READ(t, flags) & PF_KTHREAD)
		ts->ev[0].flags = ts->ev[1].flags = HC_OFF_KTHREAD;
	ts->ev[0].uw_end = ts->ev[1].uw_end = HC_UW_NONE;
	return ts;
}

/* Token bucket per CPU: may a stack be taken now? */
static __always_inline bool budget_take(struct hc_cpu_state *cs, __u64 now)
{
	__u64 credit;

	if (!cs)
		return true;
	credit = cs->credit_ns + (now - cs->credit_at_ns);
	if (credit > stack_burst_ns)
		credit = stack_burst_ns;
	cs->credit_at_ns = now;
	if (credit < stack_cost_ns) {
		cs->credit_ns = credit;
		return false;
	}
	cs->credit_ns = credit - stack_cost_ns;
	return true;
}

/* The switch-out context of `current`: its user registers (where it entered the kernel),
 * the word at its user stack pointer (the return address of a leaf syscall stub), the
 * syscall number (how it left the CPU picks the slot). Kernel threads have none: sig[0] = 0 there,
 * and their stacks are always taken. */
static __always_inline void context_sig(struct task_struct *t, __u64 sig[SIG_WORDS])
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);

	sig[0] = regs->ip;
	sig[1] = regs->sp;
	sig[2] = regs->bp;
	sig[3] = regs->orig_ax;
	sig[4] = 0;
	bpf_probe_read_user(&sig[4], sizeof(sig[4]), (void *)regs->sp);
}

static __always_inline bool sig_equal(const __u64 *a, const __u64 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3] && a[4] == b[4];
}

/*
 * --unwind dwarf: send t's user registers and stack as an hc_ustack_event; the slot that
 * took the stacks names it by its seq. buf is the ucopy entry to use; sleepable: the start
 * iterator (t is not current; its pages may be faulted in). Returns the seq, 0 when none
 * was sent (budget, unreadable stack, ring buffer full: each counted).
 */
static __always_inline __u32 send_ucopy(struct tstate *ts, struct task_struct *t, __u32 k,
					struct hc_cpu_state *cs, __u64 now, __u32 buf,
					bool sleepable)
{
	struct ucopy_buf *b;
	struct pt_regs *regs;
	__u32 usize;

	if (!ucopy_bytes)
		return 0;
	if (!ucopy_budget(cs, now))
		return 0;
	b = bpf_map_lookup_elem(&ucopy, &buf);
	if (!b)
		return 0;
	regs = (struct pt_regs *)bpf_task_pt_regs(t);
	UREGS_FROM(b->ev.copy.regs, regs);
	usize = take_copy(b, sleepable, t);
	ucopy_charge(cs, usize);
	if (!usize)
		return 0;
	/* The slot in the low bit: user space keeps the latest copy of each slot. */
	if (++ts->useq >= (1u << 31))
		ts->useq = 1;
	b->ev.type = HC_EVENT_USTACK;
	b->ev.tgid = ts->ev[0].tgid;
	b->ev.tid = ts->ev[0].tid;
	b->ev.seq = (ts->useq << 1) | (k & 1);
	b->ev.pstart_ns = ts->ev[0].pstart_ns;
	if (bpf_ringbuf_output(&events, &b->ev,
			       sizeof(b->ev) - sizeof(b->ev.copy) + ucopy_size_bound(usize),
			       rb_flags())) {
		count(HC_CNT_UCOPY_LOST);
		return 0;
	}
	return b->ev.seq;
}

/* Stacks of `current` into a buffer of 2 * HC_MAX_STACK_DEPTH words: user frames first. */
static __always_inline void take_stacks(void *ctx, __u64 *stacks, __s32 *ulen_out, __s32 *klen_out,
					__u32 *uw_end, bool kthread, __u32 uerr, __u32 kerr)
{
	long ulen = 0, klen;

	*uw_end = HC_UW_NONE;
	if (!kthread) {
		ulen = take_ustack(ctx, stacks, uw_end);
		if (ulen < 0)
			count(uerr);
	}
	*ulen_out = ulen;
	if (ulen < 0)
		ulen = 0;
	if (ulen > STACK_BYTES)
		ulen = STACK_BYTES;
	/* Skip the BPF program, bpf_trace_run*() and __traceiter_*(): the stack starts at the
	 * tracepoint's caller (__schedule, try_to_wake_up...). */
	klen = bpf_get_stack(ctx, (void *)stacks + ulen, STACK_BYTES, 3 & BPF_F_SKIP_FIELD_MASK);
	if (klen < 0)
		count(kerr);
	*klen_out = klen;
}

static __always_inline bool waker_differs(const struct tstate *ts, const struct hc_offcpu_event *ev)
{
	return ts->pend_tid != ev->waker_tid || ts->pend_tgid != ev->waker_tgid ||
	       ts->pend_seq != ev->waker_seq;
}

/* The waker of the thread's current blocked interval becomes the slot's. */
static __always_inline void take_waker(struct hc_offcpu_event *ev, const struct tstate *ts)
{
	ev->waker_tgid = ts->pend_tgid;
	ev->waker_tid = ts->pend_tid;
	ev->waker_seq = ts->pend_seq;
	__builtin_memcpy(ev->waker_comm, ts->pend_comm, HC_TASK_COMM_LEN);
	__builtin_memcpy(ev->waker_pcomm, ts->pend_pcomm, HC_TASK_COMM_LEN);
}

/*
 * Add the thread's open interval [ts->t_out, end] to the slot ev (ts's own slot, or the end
 * iterator's copy of it): blocked until the wakeup (or until end, none seen), then runnable;
 * blocks under --min-block go to the short_* sums. *off and *rq get the two parts.
 */
static __always_inline void add_interval(struct hc_offcpu_event *ev, const struct tstate *ts,
					 __u64 end, __u64 *off, __u64 *rq)
{
	__u64 start = ts->t_out, wake;

	if (ts->state == TS_BLOCKED) {
		wake = ts->t_wake && ts->t_wake <= end ? ts->t_wake : end;
		if (wake < start)
			wake = start;
		*off = wake - start;
		*rq = end - wake;
		if (*off < min_block_ns) {
			ev->short_off_ns += *off;
			ev->short_rq_ns += *rq;
		} else {
			ev->off_ns += *off;
			ev->rq_ns += *rq;
		}
		ev->n_blocked++;
	} else {
		*off = 0;
		*rq = end - start;
		ev->rq_ns += *rq;
		ev->n_preempted++;
	}
	if (!ev->first_ns)
		ev->first_ns = start;
	ev->last_ns = end;
}

/* Close the off-CPU interval of a thread coming back on a CPU at `now`. */
static __always_inline void close_interval(struct tstate *ts, __u64 now)
{
	struct hc_offcpu_event *ev = &ts->ev[ts->cur & 1];
	__u64 off, rq;

	if (!ts->t_out || now < ts->t_out)
		return;
	/* A waker change starts a new slot: blocked time is kept per waker. */
	if (ts->state == TS_BLOCKED && waker_differs(ts, ev)) {
		flush_slot(ts, SLOT_BLOCKED);
		take_waker(ev, ts);
	}
	add_interval(ev, ts, now, &off, &rq);
	if (ts->state == TS_BLOCKED)
		hist_add(ts, HC_TH_OFF, off, now);
	if (ts->state != TS_BLOCKED || ts->t_wake)
		hist_add(ts, HC_TH_RUNQ, rq, now);
	ts->t_out = 0;
	ts->t_wake = 0;
	ts->state = TS_NONE;
	count(HC_CNT_OFF_INTERVALS);
	if (now - ev->first_ns >= flush_ns) {
		flush_slot(ts, SLOT_BLOCKED);
		flush_slot(ts, SLOT_RUNNABLE);
	}
	/* On its own clock: slot flushes on a context change restart first_ns, and serve
	 * files histogram entries under the second they arrive in. */
	if (ts->hist_dirty && now - ts->hist_first_ns >= flush_ns)
		flush_hist(ts);
}

/* Tasks waiting on this CPU after the switch: the next task's run queue length - 1. */
static __always_inline __u32 queued_after(struct task_struct *next)
{
	return BPF_CORE_READ(next, pid) ? runq_len(next) : 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(hc_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 now = bpf_ktime_get_ns(), slice_start;
	__u32 cpu = bpf_get_smp_processor_id();
	struct hc_cpu_state *cs = bpf_map_lookup_elem(&cpu_state, &cpu);
	struct tstate *ts;
	bool prev_idle = prev->pid == 0;

	count(HC_CNT_SWITCHES);
	if (cs) {
		slice_start = cs->last_switch_ns ? cs->last_switch_ns : window_start_ns;
		if (prev_idle && now > slice_start)
			cs->idle_ns += now - slice_start;
		cs->last_switch_ns = now;
		cs->cur_idle = next->pid == 0;
		cs->queued = queued_after(next);
	} else {
		slice_start = now;
	}

	/* The thread leaving the CPU: it is `current`. */
	if (!prev_idle) {
		ts = tstate_get(prev, true);
		if (ts && ts->state != TS_DEAD) {
			bool blocked = !preempt && (prev->__state & 0xff) != TASK_RUNNING;
			bool kthread = ts->ev[0].flags & HC_OFF_KTHREAD;
			__u32 k = blocked ? SLOT_BLOCKED : SLOT_RUNNABLE;
			struct hc_offcpu_event *ev = &ts->ev[k];
			__u64 sig[SIG_WORDS] = {0};
			__u32 lock = lock_switch_out(prev, blocked);

			if (ts->t_out) {
				/* It ran without a sched_switch event naming it `next` (seen on
				 * 6.x kernels, the tracepoint itself does not fire): it was back on
				 * a CPU by its wakeup, or by the start of this slice. */
				__u64 in = ts->t_wake ? ts->t_wake : slice_start;

				count(HC_CNT_SWITCHIN_MISSED);
				close_interval(ts,
					       in > ts->t_out ? (in < now ? in : now) : ts->t_out);
			}
			if (now > slice_start)
				hist_add(ts, HC_TH_SLICE, now - slice_start, now);
			if (!kthread)
				context_sig(prev, sig);
			/* A lock wait and another block at one user call site are two contexts:
			 * the flame graph marks the lock's. */
			sig[3] ^= (__u64)lock << 32;
			/* --unwind table: only a whole walk (or one as deep as stacks go) is kept
			 * for its context. Frame pointers (the process not published yet) and
			 * walks cut short (tables changing: a dlopen, an exec, a slot
			 * rewritten) are taken again at the next switch-out. */
			if (stack_reuse && !kthread && sig_equal(sig, ts->sig[k]) &&
			    ev->lock == lock &&
			    !(ev->flags & (HC_OFF_NO_STACK | HC_OFF_START | HC_OFF_NEW)) &&
			    !(uw_tables && ev->uw_end != HC_UW_COMPLETE &&
			      ev->uw_end != HC_UW_DEPTH)) {
				count(HC_CNT_STACK_REUSED);
			} else {
				/* A new context: what the slot holds belongs to the old stack. */
				flush_slot(ts, k);
				ev->flags &= HC_OFF_KTHREAD;
				ev->lock = lock;
				bpf_get_current_comm(ev->comm, sizeof(ev->comm));
				BPF_CORE_READ_STR_INTO(&ev->pcomm, prev, group_leader, comm);
				if (budget_take(cs, now)) {
					take_stacks(ctx, ev->stacks, &ev->ustack_len,
						    &ev->kstack_len, &ev->uw_end, kthread,
						    HC_CNT_USTACK_ERR_OFF, HC_CNT_KSTACK_ERR_OFF);
					ev->ucopy_seq = kthread ? 0
								: send_ucopy(ts, prev, k, cs, now,
									     cpu, false);
					count(HC_CNT_STACK_CAPTURED);
					__builtin_memcpy(ts->sig[k], sig, sizeof(sig));
				} else {
					ev->flags |= HC_OFF_NO_STACK;
					ev->ustack_len = 0;
					ev->uw_end = HC_UW_NONE;
					ev->kstack_len = 0;
					ev->ucopy_seq = 0;
					count(HC_CNT_STACK_BUDGET);
				}
			}
			ts->cur = k;
			ts->t_out = now;
			ts->t_wake = 0;
			ts->state = blocked ? TS_BLOCKED : TS_PREEMPTED;
			ts->pend_tgid = 0;
			ts->pend_tid = 0;
			ts->pend_comm[0] = 0;
			ts->pend_seq = 0;
		}
	}

	/* The thread coming on: its interval closes. */
	if (next->pid) {
		ts = tstate_get(next, false);
		if (ts)
			close_interval(ts, now);
	}
	return 0;
}

/* --wakers: the waker's (current's) stacks, sent once per change of its context. */
static __always_inline __u32 waker_stack(void *ctx, struct tstate *ts, struct task_struct *waker,
					 __u32 wakee_tid, __u64 now)
{
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	struct hc_cpu_state *cs = bpf_map_lookup_elem(&cpu_state, &cpu);
	bool kthread = BPF_CORE_READ(waker, flags) & PF_KTHREAD;
	struct hc_waker_event *w;
	__u64 sig[SIG_WORDS] = {0}, ul, kl;

	if (!kthread)
		context_sig(waker, sig);
	if (ts->waker_seq && !kthread && sig_equal(sig, ts->wsig))
		return ts->waker_seq;
	if (!budget_take(cs, now)) {
		count(HC_CNT_WAKER_BUDGET);
		return 0;
	}
	w = bpf_map_lookup_elem(&waker_scratch, &zero);
	if (!w)
		return 0;
	w->type = HC_EVENT_WAKER;
	w->tid = wakee_tid;
	w->seq = ts->waker_seq + 1;
	w->waker_tgid = BPF_CORE_READ(waker, tgid);
	w->waker_tid = BPF_CORE_READ(waker, pid);
	take_stacks(ctx, w->stacks, &w->ustack_len, &w->kstack_len, &w->uw_end, kthread,
		    HC_CNT_USTACK_ERR_OFF, HC_CNT_KSTACK_ERR_OFF);
	ul = stack_bytes(w->ustack_len);
	kl = stack_bytes(w->kstack_len);
	if (bpf_ringbuf_output(&events, w, HC_WAKER_HDR_SIZE + ul + kl, rb_flags())) {
		count(HC_CNT_WAKER_LOST);
		return 0;
	}
	ts->waker_seq = w->seq;
	__builtin_memcpy(ts->wsig, sig, sizeof(sig));
	return w->seq;
}

static __always_inline void on_wakeup(void *ctx, struct task_struct *p)
{
	struct task_struct *waker = bpf_get_current_task_btf();
	struct tstate *ts = tstate_get(p, false);
	__u64 now;

	if (!ts || ts->state != TS_BLOCKED || !ts->t_out || ts->t_wake)
		return;
	now = bpf_ktime_get_ns();
	ts->t_wake = now;
	ts->pend_tgid = waker->tgid;
	ts->pend_tid = waker->pid;
	bpf_get_current_comm(ts->pend_comm, sizeof(ts->pend_comm));
	BPF_CORE_READ_STR_INTO(&ts->pend_pcomm, waker, group_leader, comm);
	ts->pend_seq = capture_wakers ? waker_stack(ctx, ts, waker, ts->ev[0].tid, now) : 0;
}

/* sched_waking, not sched_wakeup: it fires in try_to_wake_up() on the waker's CPU, in the
 * waker's context. sched_wakeup often fires later on the wakee's CPU, from the IPI that
 * queued remote wakeups are delivered by, where `current` is that CPU's idle task. */
SEC("tp_btf/sched_waking")
int BPF_PROG(hc_wakeup, struct task_struct *p)
{
	on_wakeup(ctx, p);
	return 0;
}

/* A new thread: runnable from its first wakeup until it first runs. */
SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(hc_wakeup_new, struct task_struct *p)
{
	struct tstate *ts = tstate_get(p, true);

	if (!ts || ts->t_out)
		return 0;
	ts->t_out = bpf_ktime_get_ns();
	ts->state = TS_PREEMPTED;
	ts->cur = SLOT_RUNNABLE;
	ts->ev[1].flags = (ts->ev[1].flags & HC_OFF_KTHREAD) | HC_OFF_NEW;
	ts->ev[1].ustack_len = 0;
	ts->ev[1].uw_end = HC_UW_NONE;
	ts->ev[1].kstack_len = 0;
	ts->ev[1].ucopy_seq = 0;
	BPF_CORE_READ_STR_INTO(&ts->ev[1].comm, p, comm);
	BPF_CORE_READ_STR_INTO(&ts->ev[1].pcomm, p, group_leader, comm);
	return 0;
}

/* A thread exits (it is `current`): send what it holds; its last switch-out starts nothing. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(hc_exit, struct task_struct *p)
{
	struct tstate *ts = tstate_get(p, false);

	if (!ts)
		return 0;
	flush_slot(ts, SLOT_BLOCKED);
	flush_slot(ts, SLOT_RUNNABLE);
	flush_hist(ts);
	ts->state = TS_DEAD;
	ts->t_out = 0;
	return 0;
}

/*
 * --locks: lockstat from lock:contention_begin / lock:contention_end. A thread may be in
 * several contentions at once (a mutex's slow path contending on its wait_lock): they stack.
 * A begin on the lock the innermost contention is already on (a mutex that spun and now goes
 * to sleep) only updates its flags: one contention, timed from its first begin.
 */
SEC("tp_btf/contention_begin")
int BPF_PROG(hc_lock_begin, void *lock, unsigned int flags)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct lstate *ls;
	__u32 d;

	if (!t->pid)
		return 0;
	ls = bpf_task_storage_get(&lstate, t, 0, 0);
	if (!ls) {
		if (!task_wanted(t))
			return 0;
		ls = bpf_task_storage_get(&lstate, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!ls) {
			count(HC_CNT_LOCK_NOMEM);
			return 0;
		}
	}
	d = ls->depth;
	if (d > HC_LOCK_DEPTH)
		return 0;
	if (d && ls->e[(d - 1) & (HC_LOCK_DEPTH - 1)].lock == (__u64)lock) {
		ls->e[(d - 1) & (HC_LOCK_DEPTH - 1)].flags = flags;
		return 0;
	}
	if (d == HC_LOCK_DEPTH) {
		count(HC_CNT_LOCK_NESTED);
		return 0;
	}
	ls->e[d & (HC_LOCK_DEPTH - 1)] = (struct lentry){
		.lock = (__u64)lock, .start_ns = bpf_ktime_get_ns(), .flags = flags};
	ls->depth = d + 1;
	return 0;
}

/* Which well-known lock of t's own is this? */
static __always_inline __u32 lock_named(struct task_struct *t, __u64 lock)
{
	struct mm_struct *mm = BPF_CORE_READ(t, mm);
	struct sighand_struct *sh;

	if (mm && lock == (__u64)mm + bpf_core_field_offset(struct mm_struct, mmap_lock))
		return HC_LOCK_MMAP;
	sh = BPF_CORE_READ(t, sighand);
	if (sh && lock == (__u64)sh + bpf_core_field_offset(struct sighand_struct, siglock))
		return HC_LOCK_SIGHAND;
	return HC_LOCK_UNNAMED;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct hc_lock_event);
} lock_scratch SEC(".maps");

SEC("tp_btf/contention_end")
int BPF_PROG(hc_lock_end, void *lock, int ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 now = bpf_ktime_get_ns(), size;
	__u32 cpu = bpf_get_smp_processor_id(), zero = 0, d, i;
	struct hc_cpu_state *cs;
	struct hc_lock_event *e;
	struct lentry le = {};
	struct lstate *ls;

	ls = bpf_task_storage_get(&lstate, t, 0, 0);
	if (!ls)
		return 0;
	d = ls->depth;
	if (d == 0 || d > HC_LOCK_DEPTH) {
		count(HC_CNT_LOCK_UNMATCHED);
		return 0;
	}
	/* Normally the innermost; contentions above it whose end never came are abandoned. */
	for (i = 0; i < HC_LOCK_DEPTH && d; i++) {
		le = ls->e[(d - 1) & (HC_LOCK_DEPTH - 1)];
		d--;
		if (le.lock == (__u64)lock)
			break;
		count(HC_CNT_LOCK_UNMATCHED);
	}
	ls->depth = d;
	if (le.lock != (__u64)lock)
		return 0;
	count(HC_CNT_LOCK_SEEN);
	e = bpf_map_lookup_elem(&lock_scratch, &zero);
	if (!e)
		return 0;
	e->type = HC_EVENT_LOCK;
	e->flags = le.flags & HC_LCB_MASK;
	e->tgid = t->tgid;
	e->tid = t->pid;
	e->pstart_ns = BPF_CORE_READ(t, group_leader, start_boottime);
	e->start_ns = le.start_ns;
	e->wait_ns = now > le.start_ns ? now - le.start_ns : 0;
	e->lock_addr = (__u64)lock;
	e->blocked = le.blocked;
	e->ret = ret;
	e->named = lock_named(t, (__u64)lock);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	BPF_CORE_READ_STR_INTO(&e->pcomm, t, group_leader, comm);
	cs = bpf_map_lookup_elem(&cpu_state, &cpu);
	if (budget_take(cs, now)) {
		take_stacks(ctx, e->stacks, &e->ustack_len, &e->kstack_len, &e->uw_end,
			    BPF_CORE_READ(t, flags) & PF_KTHREAD, HC_CNT_USTACK_ERR_OFF,
			    HC_CNT_KSTACK_ERR_OFF);
	} else {
		e->ustack_len = 0;
		e->kstack_len = 0;
		e->uw_end = HC_UW_NONE;
		count(HC_CNT_LOCK_NO_STACK);
	}
	size = HC_LOCK_HDR_SIZE + stack_bytes(e->ustack_len) + stack_bytes(e->kstack_len);
	if (size > sizeof(*e))
		size = sizeof(*e);
	if (bpf_ringbuf_output(&events, e, size, rb_flags())) {
		count(HC_CNT_LOCK_LOST);
		count_add(HC_CNT_LOCK_LOST_NS, e->wait_ns);
	}
	return 0;
}

/*
 * Start of the window, over every task (sleepable: it reads other tasks' user stacks).
 * A task on a CPU is reported (its CPU is not idle). A task off a CPU and not tracked yet
 * gets an interval open since window_start_ns, with its stacks: the kernel stack from
 * bpf_get_task_stack(), the user stack by walking its frame pointers from the registers it
 * entered the kernel with.
 */
SEC("iter.s/task")
int hc_iter_start(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct seq_file *seq = ctx->meta->seq;
	struct hc_offcpu_event *ev;
	struct tstate *ts;
	__u32 state, n = 0;
	bool kthread;
	long klen;

	if (!t || t->pid == 0)
		return 0;
	if (t->on_cpu) {
		struct hc_oncpu_event o = {.type = HC_EVENT_ONCPU, .tid = t->pid};

		o.cpu = BPF_CORE_READ(t, thread_info.cpu);
		bpf_seq_write(seq, &o, sizeof(o));
		return 0;
	}
	state = t->__state;
	if (state & (TASK_DEAD | 0x10 | 0x20)) /* dead, EXIT_DEAD, EXIT_ZOMBIE */
		return 0;
	if (bpf_task_storage_get(&tstate, t, 0, 0))
		return 0; /* already switched since the programs attached */
	ts = tstate_get(t, true);
	if (!ts)
		return 0;
	ts->cur = (state & 0xff) == TASK_RUNNING ? SLOT_RUNNABLE : SLOT_BLOCKED;
	ev = &ts->ev[ts->cur & 1];
	kthread = ev->flags & HC_OFF_KTHREAD;
	ev->flags = (ev->flags & HC_OFF_KTHREAD) | HC_OFF_START;
	BPF_CORE_READ_STR_INTO(&ev->comm, t, comm);
	BPF_CORE_READ_STR_INTO(&ev->pcomm, t, group_leader, comm);
	ev->uw_end = HC_UW_NONE;
	if (!kthread && uw_tables) {
		/* --unwind table: walked as a sample would be, reading its memory sleepably */
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
		long ulen = uw_walk(ev->stacks, t, BPF_CORE_READ(t, tgid),
				    BPF_CORE_READ(t, group_leader, start_boottime), regs->ip,
				    regs->sp, regs->bp, &ev->uw_end, true);

		if (ulen >= 0)
			n = (__u32)ulen / 8;
	}
	if (!kthread && ev->uw_end == HC_UW_NONE) {
		struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(t);
		__u64 bp = regs->bp, fr[2];

		ev->stacks[n++] = regs->ip;
		for (int i = 0; i < HC_MAX_STACK_DEPTH - 1; i++) {
			if (!bp || bpf_copy_from_user_task(fr, sizeof(fr), (void *)bp, t, 0))
				break;
			if (!fr[1] || n >= HC_MAX_STACK_DEPTH)
				break;
			ev->stacks[n & 127] =
				fr[1]; /* n < 127: the mask is only for the verifier */
			n++;
			if (fr[0] <= bp)
				break;
			bp = fr[0];
		}
	}
	{
		/* the user frames' bytes, bounded on the register that offsets (the verifier
		 * follows no other) */
		__u64 ub = (__u64)n * 8;

		asm volatile("" : "+r"(ub));
		if (ub > STACK_BYTES)
			ub = STACK_BYTES;
		ev->ustack_len = ub;
		klen = bpf_get_task_stack(t, (void *)ev->stacks + ub, STACK_BYTES, 0);
	}
	ev->kstack_len = klen;
	/* Its own copy buffer (the last), and no bucket: it runs once, but nothing drains the
	 * ring buffer while it runs, so copies stop once half of it is full. */
	ev->ucopy_seq = 0;
	if (!kthread && ucopy_bytes) {
		if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) <
		    bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 2)
			ev->ucopy_seq = send_ucopy(ts, t, ts->cur, 0, 0, nr_cpu_ids, true);
		else
			count(HC_CNT_UCOPY_BUDGET);
	}
	ts->state = (state & 0xff) == TASK_RUNNING ? TS_PREEMPTED : TS_BLOCKED;
	ts->t_out = window_start_ns;
	ts->t_wake = 0;
	return 0;
}

/*
 * End of the window (the scheduler programs are detached): close every open interval at
 * window_end_ns and send each thread's histograms and both slots through the iterator's
 * output, one hc_end_event per thread. The state is reset only when the write succeeded:
 * after an overflow the iterator visits the task again in the next read().
 */
SEC("iter/task")
int hc_iter_end(struct bpf_iter__task *ctx)
{
	struct task_struct *t = ctx->task;
	struct hc_offcpu_event *ev;
	struct hc_end_event *r;
	struct tstate *ts;
	__u32 zero = 0;

	if (!t)
		return 0;
	ts = bpf_task_storage_get(&tstate, t, 0, 0);
	r = bpf_map_lookup_elem(&end_scratch, &zero);
	if (!ts || !r)
		return 0;
	if (bpf_probe_read_kernel(&r->th, sizeof(r->th) + sizeof(r->ev), &ts->th))
		return 0;
	ev = &r->ev[ts->cur & 1];
	/* Close the open interval in the copy: nothing in ts changes before the write. */
	if (ts->t_out && ts->state != TS_DEAD && window_end_ns > ts->t_out) {
		__u64 end = window_end_ns, off, rq;

		if (t->on_cpu) {
			/* Running now, its switch-in unseen (see hc_switch): off until its
			 * wakeup, or until its CPU's last switch. */
			__u32 cpu = BPF_CORE_READ(t, thread_info.cpu);
			struct hc_cpu_state *cs = bpf_map_lookup_elem(&cpu_state, &cpu);
			__u64 in = ts->t_wake ? ts->t_wake : (cs ? cs->last_switch_ns : 0);

			if (in > ts->t_out && in < end)
				end = in;
		}
		/* A different waker for the last, open interval: attribute it to that waker
		 * only when the slot holds nothing else. */
		if (ts->state == TS_BLOCKED && waker_differs(ts, ev) && !ev->n_blocked &&
		    !ev->n_preempted)
			take_waker(ev, ts);
		add_interval(ev, ts, end, &off, &rq);
	}
	if (!r->ev[0].n_blocked && !r->ev[0].n_preempted && !r->ev[1].n_blocked &&
	    !r->ev[1].n_preempted && !ts->hist_dirty)
		return 0;
	r->type = HC_EVENT_END;
	r->th.type = HC_EVENT_THIST;
	r->th.tgid = r->ev[0].tgid;
	r->th.tid = r->ev[0].tid;
	__builtin_memcpy(r->th.pcomm, r->ev[ts->cur & 1].pcomm, HC_TASK_COMM_LEN);
	r->ev[0].type = HC_EVENT_OFFCPU;
	r->ev[1].type = HC_EVENT_OFFCPU;
	if (bpf_seq_write(ctx->meta->seq, r, sizeof(*r)))
		return 0;
	reset_slot_times(&ts->ev[0]);
	reset_slot_times(&ts->ev[1]);
	__builtin_memset(ts->th.slots, 0, sizeof(ts->th.slots));
	ts->hist_dirty = 0;
	ts->t_out = 0;
	return 0;
}
