/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A small hand-written vmlinux.h: only the kernel types hotcold's BPF programs read.
 * Kernel-internal structs carry preserve_access_index, so clang records CO-RE relocations
 * and libbpf fixes field offsets against the running kernel's BTF at load time; the build
 * never depends on the build host's kernel. UAPI types (the perf_event program context)
 * have a fixed layout and need no relocation.
 */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s32 s32;
typedef __s64 s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef int pid_t;
typedef _Bool bool;
enum { false = 0, true = 1 };

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

enum {
	BPF_F_NO_PREALLOC = (1U << 0),
};

enum {
	BPF_LOCAL_STORAGE_GET_F_CREATE = (1ULL << 0),
};

enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};

/* bpf_get_stack() flags */
enum {
	BPF_F_SKIP_FIELD_MASK = 0xff,
	BPF_F_USER_STACK = (1ULL << 8),
};

/* bpf_ringbuf_output() flags and bpf_ringbuf_query() selectors */
enum {
	BPF_RB_NO_WAKEUP = (1ULL << 0),
	BPF_RB_FORCE_WAKEUP = (1ULL << 1),
};
enum {
	BPF_RB_AVAIL_DATA = 0,
	BPF_RB_RING_SIZE = 1,
};

/* x86-64 UAPI struct pt_regs layout (bpf_user_pt_regs_t): the perf_event program context. */
struct pt_regs {
	unsigned long r15;
	unsigned long r14;
	unsigned long r13;
	unsigned long r12;
	unsigned long bp;
	unsigned long bx;
	unsigned long r11;
	unsigned long r10;
	unsigned long r9;
	unsigned long r8;
	unsigned long ax;
	unsigned long cx;
	unsigned long dx;
	unsigned long si;
	unsigned long di;
	unsigned long orig_ax;
	unsigned long ip;
	unsigned long cs;
	unsigned long flags;
	unsigned long sp;
	unsigned long ss;
};

struct bpf_perf_event_data {
	struct pt_regs regs;
	__u64 sample_period;
	__u64 addr;
};

/* --locks: only the addresses of the well-known per-process locks are computed. */
struct rw_semaphore {
} __attribute__((preserve_access_index));

struct spinlock {
} __attribute__((preserve_access_index));
typedef struct spinlock spinlock_t;

struct mm_struct {
	struct rw_semaphore mmap_lock;
} __attribute__((preserve_access_index));

struct sighand_struct {
	spinlock_t siglock;
} __attribute__((preserve_access_index));

struct rq {
	unsigned int nr_running;
} __attribute__((preserve_access_index));

/* cfs_rq.rq exists with CONFIG_FAIR_GROUP_SCHED; nr_running was renamed nr_queued in 6.14. */
struct cfs_rq {
	struct rq *rq;
	unsigned int nr_running;
	unsigned int nr_queued;
} __attribute__((preserve_access_index));

struct sched_entity {
	struct cfs_rq *cfs_rq;
} __attribute__((preserve_access_index));

/* UAPI: bpf_ringbuf_reserve_dynptr() and friends. */
struct bpf_dynptr {
	__u64 __opaque[2];
} __attribute__((aligned(8)));

/* x86-64: the CPU moved back into thread_info in 5.16. */
struct thread_info {
	unsigned int cpu;
} __attribute__((preserve_access_index));

struct task_struct {
	struct thread_info thread_info;
	unsigned int __state;
	int on_cpu;
	unsigned int flags;
	int prio;
	unsigned int policy;
	struct sched_entity se;
	struct mm_struct *mm;
	struct sighand_struct *sighand;
	pid_t pid;
	pid_t tgid;
	struct task_struct *real_parent;
	struct task_struct *group_leader;
	__u64 start_boottime;
	char comm[16];
} __attribute__((preserve_access_index));

struct linux_binprm {
} __attribute__((preserve_access_index));

/* BPF iterator contexts (matched by name against the kernel's BTF). */
struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
	__u64 session_id;
	__u64 seq_num;
} __attribute__((preserve_access_index));

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
} __attribute__((preserve_access_index));

#endif
