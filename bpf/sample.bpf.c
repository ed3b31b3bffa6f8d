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

#define PF_KTHREAD 0x00200000
#define STACK_BYTES ((long)(HC_MAX_STACK_DEPTH * sizeof(__u64)))

char LICENSE[] SEC("license") = "GPL";


/* Set by user space before load. */
const volatile bool filter_tgid = false; /* only tgids in `tgids` are emitted (-p) */
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

static __always_inline bool wanted(__u32 tgid)
{
	return !filter_tgid || bpf_map_lookup_elem(&tgids, &tgid);
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

SEC("perf_event")
int hc_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id, zero = 0;
	bool in_kernel = (ctx->regs.cs & 3) == 0;
	struct hc_sample_event *e;
	long ulen = 0, klen = 0;
	__u32 prev_tgid;
	__u64 size;

	count(HC_CNT_SEEN);
	if (tid == 0) {
		/* The idle task: counted (idle_samples), never drawn. */
		count(HC_CNT_IDLE);
		return 0;
	}
	if (!wanted(tgid)) {
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
	e->time_ns = bpf_ktime_get_ns();
	e->kernel_ip = in_kernel ? ctx->regs.ip : 0;
	e->user_ip = in_kernel ? 0 : ctx->regs.ip;
	e->tgid = tgid;
	e->tid = tid;
	e->runq_len = runq_len(task);
	e->prio = BPF_CORE_READ(task, prio);
	e->policy = BPF_CORE_READ(task, policy);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	BPF_CORE_READ_STR_INTO(&e->pcomm, task, group_leader, comm);

	/* User stack: none for kernel threads (no mm). */
	if (!(BPF_CORE_READ(task, flags) & PF_KTHREAD)) {
		ulen = bpf_get_stack(ctx, e->stacks, STACK_BYTES, BPF_F_USER_STACK);
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
		/* Variable offset, bounded for the verifier: ulen + STACK_BYTES fits in stacks[]. */
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

	if (!wanted(tgid))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count(HC_CNT_EXEC_LOST);
		return 0;
	}
	e->type = HC_EVENT_EXEC;
	e->tgid = tgid;
	e->time_ns = bpf_ktime_get_ns();
	BPF_CORE_READ_STR_INTO(&e->comm, p, comm);
	bpf_map_delete_elem(&seen_tgids, &tgid);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}
