/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF <-> user ABI of the on-CPU sampler: fixed-width fields, no pointers.
 * Included by bpf/sample.bpf.c and by sampler/.
 */
#ifndef HOTCOLD_BPF_SAMPLE_H
#define HOTCOLD_BPF_SAMPLE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* perf's default max stack depth (kernel.perf_event_max_stack is 127). */
#define HC_MAX_STACK_DEPTH 127
#define HC_TASK_COMM_LEN 16

enum hc_event_type {
	HC_EVENT_SAMPLE = 1, /* struct hc_sample_event */
	HC_EVENT_EXEC = 2,   /* struct hc_exec_event */
};

/*
 * Why a sample (or part of one) was not delivered. Counted per CPU in the
 * `counters` map; user space sums and reports each by name.
 */
enum hc_counter {
	HC_CNT_SEEN = 0,       /* BPF program ran for a cpu-clock sample */
	HC_CNT_IDLE,           /* sample hit the idle task (pid 0): counted, not emitted */
	HC_CNT_FILTERED,       /* sample belonged to a task outside -p: counted, not emitted */
	HC_CNT_RINGBUF_FULL,   /* bpf_ringbuf_output failed: sample lost */
	HC_CNT_KSTACK_ERR,     /* bpf_get_stack(kernel) < 0: sample kept, kernel stack empty */
	HC_CNT_USTACK_ERR,     /* bpf_get_stack(user) < 0: sample kept, user stack empty */
	HC_CNT_EXEC_LOST,      /* exec notification not delivered (ring buffer full) */
	HC_CNT_MAX,
};

/*
 * One cpu-clock sample: DTrace profile-n's arg0 (kernel PC or 0) and arg1
 * (user PC or 0), the task's identity and priority, and both stacks. Only
 * kstack_len + ustack_len bytes of `stacks` are sent: kernel frames first,
 * then user frames, innermost (leaf) first.
 */
struct hc_sample_event {
	__u32 type; /* HC_EVENT_SAMPLE */
	__u32 cpu;
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 kernel_ip;
	__u64 user_ip;
	__u32 tgid;
	__u32 tid;
	__s32 prio;   /* task_struct.prio: 0..99 RT, 100..139 normal (120 = nice 0) */
	__u32 policy; /* SCHED_OTHER 0, FIFO 1, RR 2, BATCH 3, IDLE 5, DEADLINE 6 */
	__s32 kstack_len; /* bytes of kernel frames, or -errno from bpf_get_stack */
	__s32 ustack_len; /* bytes of user frames, or -errno */
	/* Tasks waiting on this CPU's run queue, the interrupted one excluded: rq->nr_running - 1
	 * (all scheduling classes). */
	__u32 runq_len;
	__u32 _pad; /* zero: the per-CPU scratch record starts zeroed and nothing writes it */
	char comm[HC_TASK_COMM_LEN];  /* thread name */
	char pcomm[HC_TASK_COMM_LEN]; /* process name: the group leader's comm */
	__u64 stacks[2 * HC_MAX_STACK_DEPTH];
};

/* Header size of a sample: what precedes the variable-length stack array. */
#define HC_SAMPLE_HDR_SIZE ((unsigned long)&((struct hc_sample_event *)0)->stacks)

/* A process exec'd: user space snapshots its mappings while it lives. */
struct hc_exec_event {
	__u32 type; /* HC_EVENT_EXEC */
	__u32 tgid;
	__u64 time_ns;
	char comm[HC_TASK_COMM_LEN];
};

#endif
