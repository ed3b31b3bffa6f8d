/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The BPF <-> user ABI of hotcold's programs (on-CPU sampling, off-CPU tracking from the
 * scheduler tracepoints, the task iterators): fixed-width fields, no pointers.
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
	HC_EVENT_OFFCPU = 3, /* struct hc_offcpu_event */
	HC_EVENT_THIST = 4,  /* struct hc_thist_event */
	HC_EVENT_WAKER = 5,  /* struct hc_waker_event (--wakers) */
	HC_EVENT_ONCPU = 6,  /* struct hc_oncpu_event (start iterator: a task running on a CPU) */
	HC_EVENT_END = 7,    /* struct hc_end_event (end iterator: one thread's last flush) */
	HC_EVENT_USTACK = 8, /* struct hc_ustack_event (--unwind dwarf: a switch-out's stack) */
	HC_EVENT_LOCK = 9,   /* struct hc_lock_event (--locks: one kernel lock contention) */
};

/*
 * --unwind dwarf: the user registers and a copy of the user stack, unwound in user space
 * with the call frame information of the mapped objects (perf's --call-graph dwarf).
 * regs[] in DWARF register order (x86-64: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip);
 * `len` bytes copied from regs[HC_UREG_SP] upward follow the header.
 */
#define HC_UREGS 17
#define HC_UREG_BP 6
#define HC_UREG_SP 7
#define HC_UREG_IP 16
/* Most bytes of user stack one copy may hold (--stack-copy's upper bound). */
#define HC_STACK_COPY_MAX 32768

struct hc_ucopy {
	__u64 regs[HC_UREGS];
	__u32 len; /* bytes of stack that follow */
	__u32 _pad;
};

/* Most CPUs the per-CPU scheduler state covers; CPUs above it are not tracked. */
#define HC_MAX_CPUS 1024

/*
 * Why a sample (or part of one) was not delivered. Counted per CPU in the
 * `counters` map; user space sums and reports each by name.
 */
enum hc_counter {
	HC_CNT_SEEN = 0,     /* BPF program ran for a cpu-clock sample */
	HC_CNT_IDLE,	     /* sample hit the idle task (pid 0): counted, not emitted */
	HC_CNT_FILTERED,     /* sample belonged to a task outside -p: counted, not emitted */
	HC_CNT_RINGBUF_FULL, /* bpf_ringbuf_output failed: sample lost */
	HC_CNT_KSTACK_ERR,   /* bpf_get_stack(kernel) < 0: sample kept, kernel stack empty */
	HC_CNT_USTACK_ERR,   /* bpf_get_stack(user) < 0: sample kept, user stack empty */
	HC_CNT_EXEC_LOST,    /* exec notification not delivered (ring buffer full) */
	/* Off-CPU tracking (sched_switch and friends) */
	HC_CNT_SWITCHES,       /* sched_switch events seen */
	HC_CNT_OFF_INTERVALS,  /* off-CPU intervals closed (blocked or preempted) */
	HC_CNT_STACK_CAPTURED, /* switch-out stacks taken */
	HC_CNT_STACK_REUSED,   /* switch-out context unchanged: the thread's last stacks reused */
	HC_CNT_STACK_BUDGET, /* stack capture over budget: interval kept, stack "[not captured]" */
	HC_CNT_OFF_RINGBUF_FULL, /* an off-CPU flush not delivered: its time is lost (see _NS) */
	HC_CNT_OFF_LOST_NS,	 /* ns of off-CPU + run-queue time in flushes that were lost */
	HC_CNT_THIST_LOST,	 /* a thread's histogram flush not delivered */
	HC_CNT_WAKER_LOST,	 /* a --wakers record not delivered (waker shown without stack) */
	HC_CNT_WAKER_BUDGET,	 /* waker stack not taken: over budget */
	HC_CNT_STATE_NOMEM,	 /* no task storage for a thread: its intervals are not tracked */
	HC_CNT_KSTACK_ERR_OFF,	 /* switch-out kernel stack failed */
	HC_CNT_USTACK_ERR_OFF,	 /* switch-out user stack failed */
	HC_CNT_SWITCHIN_MISSED,	 /* a thread switched out whose switch-in had no event */
	/* --unwind dwarf */
	HC_CNT_UCOPY,	     /* user stacks copied (samples and switch-outs) */
	HC_CNT_UCOPY_BYTES,  /* bytes of user stack copied */
	HC_CNT_UCOPY_BUDGET, /* copy not taken, over the byte budget or the ring buffer half
			      * full: frame pointers used */
	HC_CNT_UCOPY_FAULT,  /* the page at the stack pointer could not be read: frame pointers */
	HC_CNT_UCOPY_LOST,   /* a switch-out's copy not delivered (ring buffer full) */
	/* --unwind table: user stacks walked in BPF from the published unwind tables */
	HC_CNT_UW_WALKS,      /* walks (samples of a published process) */
	HC_CNT_UW_NO_PROC,    /* the process was not published (yet): frame pointers */
	HC_CNT_UW_BUSY,	      /* its slot was rewritten during the walk: frame pointers */
	HC_CNT_UW_PARENT,     /* walked with its parent's slot (a fork not published yet) */
	HC_CNT_UW_FP_FRAMES,  /* frames of walks taken with frame pointers (no table there) */
	HC_CNT_UW_FRAMES,     /* frames of all walks */
	HC_CNT_UW_CACHE_HITS, /* frames whose row came from the per-CPU cache */
	HC_CNT_UW_END,	      /* HC_UW_END_MAX counters: how the walks ended (enum hc_uw_end) */
	HC_CNT_UW_END_LAST = HC_CNT_UW_END + 8,
	/* --locks (lock:contention_begin / lock:contention_end) */
	HC_CNT_LOCK_SEEN,      /* contentions ended (contention_end matched to its begin) */
	HC_CNT_LOCK_LOST,      /* a contention not delivered (ring buffer full): see _LOST_NS */
	HC_CNT_LOCK_LOST_NS,   /* ns of wait in contentions not delivered */
	HC_CNT_LOCK_NO_STACK,  /* contention sent without stacks: stack capture over budget */
	HC_CNT_LOCK_NESTED,    /* a begin nested deeper than HC_LOCK_DEPTH: not timed */
	HC_CNT_LOCK_UNMATCHED, /* an end with no begin (began before the capture) or an abandoned
				* begin (its end never came): not timed */
	HC_CNT_LOCK_NOMEM,     /* no task storage for the waiter: not timed */
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
	/* The process's identity with tgid (pids are reused): its group leader's
	 * start_boottime, what /proc/PID/stat's starttime counts in clock ticks. */
	__u64 pstart_ns;
	__u64 kernel_ip;
	__u64 user_ip;
	__u32 tgid;
	__u32 tid;
	__s32 prio;	  /* task_struct.prio: 0..99 RT, 100..139 normal (120 = nice 0) */
	__u32 policy;	  /* SCHED_OTHER 0, FIFO 1, RR 2, BATCH 3, IDLE 5, DEADLINE 6 */
	__s32 kstack_len; /* bytes of kernel frames, or -errno from bpf_get_stack */
	__s32 ustack_len; /* bytes of user frames, or -errno */
	/* Tasks waiting on this CPU's run queue, the interrupted one excluded: rq->nr_running - 1
	 * (all scheduling classes). */
	__u32 runq_len;
	/* cpuunclaimed: when runq_len > 0, CPUs idle at this instant and CPUs with tasks waiting
	 * (this one included), from the scheduler state; both 0 when not known. */
	__u32 idle_cpus;
	__u32 queued_cpus;
	/* --unwind dwarf: bytes of the struct hc_ucopy (+ its stack bytes) that follow the
	 * kernel frames; 0 when none was taken. */
	__u32 ucopy_size;
	/* --unwind table: how the BPF walk of the user stack ended (enum hc_uw_end in
	 * bpf/unwind.h), HC_UW_NONE when it came from bpf_get_stack's frame pointers. */
	__u32 uw_end;
	__u32 _pad;
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
	__u64 pstart_ns; /* as in hc_sample_event */
	char comm[HC_TASK_COMM_LEN];
};

/*
 * One thread's off-CPU time accumulated on one switch-out context and flushed: when the
 * context (stack or waker) changes, at least once a second, at thread exit, and when the
 * capture ends. Times are exact sums of intervals; the stack was taken at the switch-out
 * that started them (or reused: the context signature did not change).
 */
#define HC_OFF_NO_STACK 0x1 /* stack not captured (over budget): "[not captured]" */
#define HC_OFF_START 0x2    /* stack taken by the start iterator (asleep before the window) */
#define HC_OFF_KTHREAD 0x4
#define HC_OFF_NEW 0x8 /* a new thread that has not run yet: no stack */

struct hc_offcpu_event {
	__u32 type; /* HC_EVENT_OFFCPU */
	__u32 flags;
	__u32 tgid;
	__u32 tid;
	__u64 pstart_ns; /* as in hc_sample_event */
	__u64 first_ns;	 /* earliest interval start in this flush */
	__u64 last_ns;	 /* latest interval end */
	__u64 off_ns; /* blocked: switch-out asleep -> wakeup (or -> switch-in, no wakeup seen) */
	__u64 rq_ns;  /* runnable: preempted switch-out or wakeup -> switch-in */
	__u64 short_off_ns; /* blocked time of blocks shorter than --min-block (not in off_ns) */
	__u64 short_rq_ns;  /* their run-queue time (not in rq_ns) */
	__u32 n_blocked;
	__u32 n_preempted;
	__u32 waker_tgid; /* who woke the blocked intervals (0: none seen) */
	__u32 waker_tid;
	__u32 waker_seq; /* --wakers: the hc_waker_event of this thread with that seq; 0: none */
	/* --unwind dwarf: the hc_ustack_event of this thread with that seq (its low bit: the
	 * slot, 0 blocked, 1 runnable); 0: none */
	__u32 ucopy_seq;
	/* --locks: the blocked intervals were waits for a kernel lock: HC_LOCK_WAIT | the
	 * contention flags (LCB_F_*); 0: not a lock wait (and always 0 for run-queue time). */
	__u32 lock;
	__u32 uw_end; /* as in hc_sample_event */
	char comm[HC_TASK_COMM_LEN];
	char pcomm[HC_TASK_COMM_LEN];
	char waker_comm[HC_TASK_COMM_LEN];
	char waker_pcomm[HC_TASK_COMM_LEN];
	__s32 kstack_len; /* bytes, or -errno */
	__s32 ustack_len;
	__u64 stacks[2 * HC_MAX_STACK_DEPTH]; /* user frames, then kernel frames, leaf first */
};

#define HC_OFFCPU_HDR_SIZE ((unsigned long)&((struct hc_offcpu_event *)0)->stacks)

/* quantize() buckets as DTrace: slot 0 holds value 0, slot k >= 1 holds [2^(k-1), 2^k). */
#define HC_QSLOTS 40
enum hc_thist { HC_TH_SLICE = 0, HC_TH_OFF, HC_TH_RUNQ, HC_TH_MAX };

/* A thread's scheduler histograms in microseconds, flushed with its off-CPU time. */
struct hc_thist_event {
	__u32 type; /* HC_EVENT_THIST */
	__u32 tgid;
	__u32 tid;
	__u32 _pad;
	char pcomm[HC_TASK_COMM_LEN];
	__u32 slots[HC_TH_MAX][HC_QSLOTS];
};

/* --wakers: the stack of the task that woke thread `tid`; referenced by waker_seq. */
struct hc_waker_event {
	__u32 type; /* HC_EVENT_WAKER */
	__u32 tid;  /* the woken thread */
	__u32 seq;
	__u32 waker_tgid;
	__u32 waker_tid;
	__s32 kstack_len;
	__s32 ustack_len;
	__u32 uw_end; /* as in hc_sample_event */
	__u64 stacks[2 * HC_MAX_STACK_DEPTH];
};

#define HC_WAKER_HDR_SIZE ((unsigned long)&((struct hc_waker_event *)0)->stacks)

/* --unwind dwarf: a switch-out's user registers and stack, sent when the stacks are taken;
 * the slot's hc_offcpu_event names it by (tid, ucopy_seq). copy.len bytes follow. */
struct hc_ustack_event {
	__u32 type; /* HC_EVENT_USTACK */
	__u32 tgid;
	__u32 tid;
	__u32 seq;
	__u64 pstart_ns;
	struct hc_ucopy copy;
};

/*
 * --locks: one contention, from lock:contention_begin to lock:contention_end of the same
 * thread and lock. flags are the tracepoint's (include/trace/events/lock.h, LCB_F_*): the
 * kind of lock. blocked: the waiter left the CPU asleep meanwhile (else it spun, or waited
 * on a CPU). The lock address never leaves hotcold: user space names it (kallsyms) or drops
 * it; `named` is set when BPF recognised it as a well-known per-process lock.
 */
#define HC_LCB_SPIN (1u << 0)
#define HC_LCB_READ (1u << 1)
#define HC_LCB_WRITE (1u << 2)
#define HC_LCB_RT (1u << 3)
#define HC_LCB_PERCPU (1u << 4)
#define HC_LCB_MUTEX (1u << 5)
#define HC_LCB_MASK 0x3fu
#define HC_LOCK_WAIT (1u << 31) /* in hc_offcpu_event.lock: a lock wait */
#define HC_LOCK_DEPTH 4		/* contentions one thread can be inside at once (nesting) */

enum hc_lock_named {
	HC_LOCK_UNNAMED = 0,
	HC_LOCK_MMAP = 1,    /* the waiter's own mm->mmap_lock */
	HC_LOCK_SIGHAND = 2, /* the waiter's own sighand->siglock */
};

struct hc_lock_event {
	__u32 type; /* HC_EVENT_LOCK */
	__u32 flags;
	__u32 tgid;
	__u32 tid;
	__u64 pstart_ns; /* as in hc_sample_event */
	__u64 start_ns;	 /* contention_begin, bpf_ktime_get_ns() */
	__u64 wait_ns;	 /* contention_begin -> contention_end */
	__u64 lock_addr; /* for naming by kallsyms only: never printed */
	__u32 blocked;
	__s32 ret;    /* contention_end's ret: 0 acquired, else -errno (interrupted, timed out) */
	__u32 named;  /* enum hc_lock_named */
	__u32 uw_end; /* as in hc_sample_event */
	char comm[HC_TASK_COMM_LEN];
	char pcomm[HC_TASK_COMM_LEN];
	__s32 kstack_len; /* bytes, or -errno; both 0: not captured (budget) */
	__s32 ustack_len;
	__u64 stacks[2 * HC_MAX_STACK_DEPTH]; /* user frames, then kernel frames, leaf first */
};

#define HC_LOCK_HDR_SIZE ((unsigned long)&((struct hc_lock_event *)0)->stacks)

/* End iterator: a thread's histograms and both of its slots (blocked, runnable), at full
 * size; a slot with no intervals carries nothing. */
struct hc_end_event {
	__u32 type; /* HC_EVENT_END */
	__u32 _pad;
	struct hc_thist_event th;
	struct hc_offcpu_event ev[2];
};

/* Start iterator: a task was on a CPU when the window opened (the CPU was not idle). */
struct hc_oncpu_event {
	__u32 type; /* HC_EVENT_ONCPU */
	__u32 cpu;
	__u32 tid;
	__u32 _pad;
};

/* Per-CPU scheduler state, one cache line per CPU; read back by user space at the end. */
struct hc_cpu_state {
	__u64 last_switch_ns; /* 0: no switch seen on this CPU yet */
	__u64 idle_ns;	      /* idle task's time, closed intervals */
	__u64 credit_ns;      /* stack-capture budget (token bucket, in ns of credit) */
	__u64 credit_at_ns;
	__u32 cur_idle;	    /* the idle task runs now (valid once last_switch_ns != 0) */
	__u32 queued;	    /* tasks waiting, at the last switch or sample */
	__s64 ucopy_credit; /* --unwind dwarf: stack-copy budget (token bucket, in bytes) */
	__u64 ucopy_at_ns;
	__u64 _pad;
};

#endif
