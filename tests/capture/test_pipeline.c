// SPDX-License-Identifier: GPL-2.0-only
/*
 * capture/: synthetic sampler records -> the pipeline -> a test sink (which hands the
 * observations on to record's sink): interned stacks, the flame-graph tree, the histograms,
 * and the calls a sink gets. User frames are this test's own functions (its real
 * /proc/self/maps and ELF symbols); kernel frames resolve against a fixture kallsyms. No root,
 * no BPF.
 */
#include <errno.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "capture/record_sink.h"
#include "profile/encode.h"
#include "profile/hist.h"
#include "serve/sink.h"
#include "serve/wire.h"

#define PERIOD_NS 1001001ull

__attribute__((noinline)) void hc_t_leaf(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void hc_t_mid(void)
{
	hc_t_leaf();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void hc_t_outer(void)
{
	hc_t_mid();
	__asm__ volatile("" ::: "memory");
}

/*
 * Inlined code (this test is built -O2 -g, so DWARF describes it): an address inside each
 * inlined body is a global label on a nop there (each body is inlined in one place only).
 */
#define ALWAYS_INLINE static inline __attribute__((always_inline))
#define MARK(name) __asm__ volatile(".globl " #name "\n" #name ": nop")

extern const char hc_t_mark_inl[], hc_t_mark_i9[];
volatile int hc_t_sink;

ALWAYS_INLINE void hc_t_inl_leaf(void)
{
	hc_t_sink++;
	MARK(hc_t_mark_inl);
}

__attribute__((noinline, used)) void hc_t_inl_caller(void)
{
	hc_t_inl_leaf();
	hc_t_sink--;
}

/* Nine levels inlined into hc_t_i0: paths of these hit HC_CAPTURE_MAX_PATH. */
ALWAYS_INLINE void hc_t_i9(void)
{
	hc_t_sink++;
	MARK(hc_t_mark_i9);
}
#define LEVEL(n, next)                     \
	ALWAYS_INLINE void hc_t_i##n(void) \
	{                                  \
		hc_t_sink++;               \
		hc_t_i##next();            \
	}
LEVEL(8, 9)
LEVEL(7, 8)
LEVEL(6, 7)
LEVEL(5, 6)
LEVEL(4, 5)
LEVEL(3, 4)
LEVEL(2, 3)
LEVEL(1, 2)

__attribute__((noinline, used)) void hc_t_i0(void)
{
	hc_t_i1();
	hc_t_sink--;
}

/* fixtures/symbolize/kallsyms.txt */
#define K_DO_ONE_INITCALL 0xffffffff81001010ull
#define K_TRACE_CB 0xffffffff81001200ull /* trace_initcall_start_cb, right after it */
#define K_EXT4_SYNC_FS 0xffffffffc0a00800ull

typedef int (*path_cb)(void *ctx, const struct hc_path_elem *path, size_t n,
		       const struct hc_weights *w, int64_t sec);

/* What the test sink was handed, besides what it passes on to record's sink. */
struct sink_log {
	size_t hist, lock, unclaimed, heat;
	struct hc_capture_obs last_obs;
	char last_key[HC_TASK_COMM_LEN + 1];
	struct hc_capture_lock last_lock;
	char last_series[64];
	uint64_t unclaimed_ns;
	int64_t heat_sec;
	unsigned int heat_row;
};

struct fixture {
	struct hc_symbolizer *sym;
	struct hc_record_sink *rs;
	struct hc_capture_sink rsink; /* rs's callbacks */
	struct hc_capture *cap;
	/* where the test sink sends paths at flush */
	path_cb path, lock_path;
	void *path_ctx;
	struct sink_log log;
};

static int t_path(void *ctx, const struct hc_path_elem *path, size_t n, const struct hc_weights *w,
		  int64_t sec)
{
	struct fixture *f = ctx;

	return f->path ? f->path(f->path_ctx, path, n, w, sec) : 0;
}

static int t_lock_path(void *ctx, const struct hc_path_elem *path, size_t n,
		       const struct hc_weights *w, int64_t sec)
{
	struct fixture *f = ctx;

	return f->lock_path ? f->lock_path(f->path_ctx, path, n, w, sec) : 0;
}

static int t_hist(void *ctx, const struct hc_capture_obs *o)
{
	struct fixture *f = ctx;

	f->log.hist++;
	f->log.last_obs = *o;
	snprintf(f->log.last_key, sizeof(f->log.last_key), "%s", o->key);
	return f->rsink.hist(f->rsink.ctx, o);
}

static int t_lock(void *ctx, const struct hc_capture_lock *l)
{
	struct fixture *f = ctx;

	f->log.lock++;
	f->log.last_lock = *l;
	snprintf(f->log.last_series, sizeof(f->log.last_series), "%s", l->series);
	return f->rsink.lock(f->rsink.ctx, l);
}

static int t_unclaimed(void *ctx, uint64_t sec, uint64_t ns)
{
	struct fixture *f = ctx;

	f->log.unclaimed++;
	f->log.unclaimed_ns += ns;
	return f->rsink.unclaimed(f->rsink.ctx, sec, ns);
}

static void t_heat(void *ctx, int64_t sec, unsigned int row)
{
	struct fixture *f = ctx;

	f->log.heat++;
	f->log.heat_sec = sec;
	f->log.heat_row = row;
}

/* A fresh pipeline into the test sink: per second (serve's keying) or one bucket. */
static void reopen(struct fixture *f, bool per_second)
{
	struct hc_capture_opts o = {.period_ns = PERIOD_NS, .per_second = per_second};
	struct hc_capture_sink sink = {
		.path = t_path,
		.lock_path = t_lock_path,
		.hist = t_hist,
		.lock = t_lock,
		.unclaimed = t_unclaimed,
		.heat = t_heat,
		.ctx = f,
	};

	hc_capture__free(f->cap);
	f->cap = hc_capture__new(&o, f->sym, NULL, &sink);
	assert_non_null(f->cap);
}

static int setup(void **state)
{
	struct hc_symbolizer_opts opts = {.kallsyms = HC_FIXTURES_DIR "/symbolize/kallsyms.txt"};
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->sym = hc_symbolizer__new(&opts);
	assert_non_null(f->sym);
	assert_int_equal(hc_symbolizer__load_kernel(f->sym), 0);
	f->rs = hc_record_sink__new();
	assert_non_null(f->rs);
	f->rsink = hc_record_sink__sink(f->rs);
	reopen(f, false);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	hc_capture__free(f->cap);
	hc_record_sink__free(f->rs);
	hc_symbolizer__free(f->sym);
	free(f);
	return 0;
}

static int add_to_tree(void *ctx, const struct hc_path_elem *path, size_t n,
		       const struct hc_weights *w, int64_t sec)
{
	(void)sec;
	return hc_tree__add_path(ctx, path, n, w);
}

/* Flush the pipeline: its paths to fn, its lock table's to lock_fn. */
static int walk(struct fixture *f, path_cb fn, path_cb lock_fn, void *ctx)
{
	int err;

	f->path = fn;
	f->lock_path = lock_fn;
	f->path_ctx = ctx;
	err = hc_capture__flush(f->cap);
	f->path = f->lock_path = NULL;
	return err;
}

static int build_tree(struct fixture *f, struct hc_tree *tree)
{
	return walk(f, add_to_tree, NULL, tree);
}

/* A sample in kernel mode: user stack outer <- mid <- leaf, kernel stack below it. */
static size_t make_event(struct hc_sample_event *e, const char *pcomm, const char *comm)
{
	const uint64_t ustack[] = {
		(uintptr_t)hc_t_leaf,	 /* the leaf: exact PC (gcc makes it a lone ret) */
		(uintptr_t)hc_t_mid + 5, /* callers: return addresses, stepped back by 1 */
		(uintptr_t)hc_t_outer + 5,
	};
	const uint64_t kstack[] = {
		K_TRACE_CB, /* leaf: exactly the start of trace_initcall_start_cb */
		K_TRACE_CB, /* caller: a return address at the end of do_one_initcall */
		K_EXT4_SYNC_FS + 0x10,
	};

	memset(e, 0, sizeof(*e));
	e->type = HC_EVENT_SAMPLE;
	e->cpu = 1;
	e->kernel_ip = K_TRACE_CB;
	e->tgid = (uint32_t)getpid();
	e->tid = (uint32_t)gettid();
	e->prio = 120;
	e->runq_len = 2;
	memcpy(e->pcomm, pcomm, strnlen(pcomm, sizeof(e->pcomm) - 1));
	memcpy(e->comm, comm, strnlen(comm, sizeof(e->comm) - 1));
	memcpy(e->stacks, ustack, sizeof(ustack));
	memcpy(e->stacks + 3, kstack, sizeof(kstack));
	e->ustack_len = sizeof(ustack);
	e->kstack_len = sizeof(kstack);
	return HC_SAMPLE_HDR_SIZE + sizeof(ustack) + sizeof(kstack);
}

static const struct hc_node *only_child(const struct hc_node *n, enum hc_node_kind kind,
					const char *name)
{
	const struct hc_node *c;

	assert_int_equal(hc_node__child_count(n), 1);
	c = hc_node__child(n, 0);
	assert_int_equal(hc_node__kind(c), kind);
	assert_string_equal(hc_node__name(c), name);
	return c;
}

static void test_tree_order_and_names(void **state)
{
	struct fixture *f = *state;
	struct hc_sample_event e;
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *n;
	struct hc_capture_stats st;
	size_t size = make_event(&e, "proc", "thr");

	assert_non_null(tree);
	for (int i = 0; i < 3; i++)
		assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	assert_int_equal(hc_capture__stack_count(f->cap), 1);
	assert_int_equal(build_tree(f, tree), 0);

	n = hc_tree__root(tree);
	assert_int_equal(hc_node__weights(n)->samples, 3);
	assert_int_equal(hc_node__weights(n)->on_cpu_ns, 3 * PERIOD_NS);
	n = only_child(n, HC_NODE_PROCESS, "proc");
	assert_int_equal(hc_node__id(n), (uint64_t)getpid());
	n = only_child(n, HC_NODE_THREAD, "thr");
	assert_int_equal(hc_node__id(n), (uint64_t)gettid());
	/* user frames, outermost first, in this executable */
	n = only_child(n, HC_NODE_USER, "hc_t_outer");
	assert_string_equal(hc_node__module(n), "test-capture");
	n = only_child(n, HC_NODE_USER, "hc_t_mid");
	n = only_child(n, HC_NODE_USER, "hc_t_leaf");
	/* then kernel frames, outermost first; the caller's return address was stepped back
	 * into do_one_initcall, the leaf's exact PC was not */
	n = only_child(n, HC_NODE_KERNEL, "ext4_sync_fs");
	assert_string_equal(hc_node__module(n), "ext4");
	n = only_child(n, HC_NODE_KERNEL, "do_one_initcall");
	assert_null(hc_node__module(n));
	n = only_child(n, HC_NODE_KERNEL, "trace_initcall_start_cb");
	assert_int_equal(hc_node__child_count(n), 0);
	assert_int_equal(hc_node__weights(n)->samples, 3);

	hc_capture__stats(f->cap, &st);
	assert_int_equal(st.samples, 3);
	assert_int_equal(st.kernel_samples, 3);
	assert_int_equal(st.user_samples, 0);
	assert_int_equal(st.ingest_errors, 0);
	hc_tree__free(tree);
}

static void test_identity_splits_stacks(void **state)
{
	struct fixture *f = *state;
	struct hc_sample_event e;
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *proc;
	size_t size;

	size = make_event(&e, "proc", "thr");
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	/* a renamed thread is a different node; so is a different process name */
	size = make_event(&e, "proc", "thr2");
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	size = make_event(&e, "other", "thr");
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	assert_int_equal(hc_capture__stack_count(f->cap), 3);
	assert_int_equal(build_tree(f, tree), 0);
	assert_int_equal(hc_node__child_count(hc_tree__root(tree)), 2);
	hc_tree__sort(tree);
	proc = hc_node__child(hc_tree__root(tree), 0);
	assert_string_equal(hc_node__name(proc), "proc"); /* 2 samples sort first */
	assert_int_equal(hc_node__child_count(proc), 2);
	hc_tree__free(tree);
}

static void test_unknown_user_frame(void **state)
{
	struct fixture *f = *state;
	struct hc_sample_event e;
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *n;
	size_t size = make_event(&e, "proc", "thr");

	/* One user frame in no mapping at all: kept, as [unknown] without an offset. */
	e.stacks[0] = 0x10;
	e.ustack_len = 8;
	e.kstack_len = 0;
	e.kernel_ip = 0;
	e.user_ip = 0x10;
	size = HC_SAMPLE_HDR_SIZE + 8;
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	assert_int_equal(build_tree(f, tree), 0);
	n = only_child(hc_tree__root(tree), HC_NODE_PROCESS, "proc");
	n = only_child(n, HC_NODE_THREAD, "thr");
	n = only_child(n, HC_NODE_USER, "[unknown]");
	assert_string_equal(hc_node__module(n), "[unknown]");
	assert_int_equal(hc_node__offset(n), -1);
	hc_tree__free(tree);
}

static uint64_t bucket_count(const struct hc_hist *h, const char *key, int64_t value)
{
	const uint64_t *c = hc_hist__counts(h, key);

	assert_non_null(c);
	return c[hc_hist__bucket_index(h, value)];
}

static void test_histograms(void **state)
{
	struct fixture *f = *state;
	struct hc_sample_event e;
	const struct hc_hist *prio, *runq;
	size_t size = make_event(&e, "proc", "thr");

	for (int i = 0; i < 4; i++)
		assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	assert_int_equal(hc_capture__idle_samples(f->cap, 0, 0, 7), 0);
	prio = hc_record_sink__hist(f->rs, HC_STORE_H_PRIORITY);
	runq = hc_record_sink__hist(f->rs, HC_STORE_H_RUNQ_LENGTH);
	/* priority: lquantize(prio, 0, 140, 10) per process */
	assert_int_equal(bucket_count(prio, "proc", 120), 4);
	assert_int_equal(bucket_count(prio, "proc", 110), 0);
	/* runqueue_length: per CPU; idle samples are length 0 */
	assert_int_equal(bucket_count(runq, "cpu 1", 2), 4);
	assert_int_equal(bucket_count(runq, "cpu 0", 0), 7);
	assert_null(hc_hist__counts(runq, "cpu 2"));
}

struct sec_sum {
	int64_t sec[256];
	uint64_t off[256], rq[256];
	size_t n;
};

static int sum_by_second(void *ctx, const struct hc_path_elem *path, size_t n,
			 const struct hc_weights *w, int64_t sec)
{
	struct sec_sum *s = ctx;
	size_t i;

	(void)path;
	(void)n;
	for (i = 0; i < s->n && s->sec[i] != sec; i++)
		;
	if (i == s->n) {
		assert_true(s->n < 256);
		s->sec[s->n++] = sec;
	}
	s->off[i] += w->off_cpu_ns;
	s->rq[i] += w->runqueue_ns;
	return 0;
}

static void offcpu_event(struct hc_offcpu_event *e, uint64_t first_ns, uint64_t last_ns,
			 uint64_t off_ns, uint64_t rq_ns)
{
	memset(e, 0, sizeof(*e));
	e->type = HC_EVENT_OFFCPU;
	e->tgid = e->tid = 4242;
	memcpy(e->comm, "sleeper", 8);
	memcpy(e->pcomm, "sleeper", 8);
	e->first_ns = first_ns;
	e->last_ns = last_ns;
	e->off_ns = off_ns;
	e->rq_ns = rq_ns;
	e->n_blocked = 1;
}

/* A user sample of the test itself, leaf first, without a kernel stack. */
static size_t user_event(struct hc_sample_event *e, const uint64_t *ustack, size_t nu)
{
	make_event(e, "proc", "thr");
	memcpy(e->stacks, ustack, nu * sizeof(*ustack));
	e->ustack_len = (int32_t)(nu * sizeof(*ustack));
	e->kstack_len = 0;
	e->kernel_ip = 0;
	e->user_ip = ustack[0];
	return HC_SAMPLE_HDR_SIZE + nu * sizeof(*ustack);
}

/*
 * A frame-pointer walk that reached an address in no mapping (a caller built without frame
 * pointers) reads garbage past it: the user stack ends there, at one [unknown] frame without
 * an offset, whatever the garbage was, and the stack is counted once per record.
 */
static void test_unmapped_cuts_stack(void **state)
{
	const uint64_t a[] = {(uintptr_t)hc_t_leaf, 0x10, (uintptr_t)hc_t_outer + 5};
	const uint64_t b[] = {(uintptr_t)hc_t_leaf, 0x7777000, 0x12345, (uintptr_t)hc_t_mid + 5};
	const uint64_t c[] = {0x20, (uintptr_t)hc_t_mid + 5};
	struct fixture *f = *state;
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *thr, *n;
	struct hc_symbolizer_stats ss;
	struct hc_capture_stats st;
	struct hc_offcpu_event oe;
	struct hc_sample_event e;
	size_t size;

	assert_non_null(tree);
	size = user_event(&e, a, 3);
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	size = user_event(&e, b, 4);
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	/* the two garbage tails are one stack */
	assert_int_equal(hc_capture__stack_count(f->cap), 1);
	/* the leaf itself in no mapping: that one frame is the stack */
	size = user_event(&e, c, 2);
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	assert_int_equal(hc_capture__stack_count(f->cap), 2);
	hc_capture__stats(f->cap, &st);
	assert_int_equal(st.ustacks_unmapped, 3);

	assert_int_equal(build_tree(f, tree), 0);
	n = only_child(hc_tree__root(tree), HC_NODE_PROCESS, "proc");
	thr = only_child(n, HC_NODE_THREAD, "thr");
	/* outermost first: the [unknown] frame, then what came before it */
	n = only_child(thr, HC_NODE_USER, "[unknown]");
	assert_string_equal(hc_node__module(n), "[unknown]");
	assert_int_equal(hc_node__offset(n), -1);
	assert_int_equal(hc_node__weights(n)->samples, 3);
	assert_int_equal(hc_node__child_count(n), 1);
	n = hc_node__child(n, 0);
	assert_string_equal(hc_node__name(n), "hc_t_leaf");
	assert_int_equal(hc_node__weights(n)->samples, 2);
	assert_int_equal(hc_node__child_count(n), 0);
	hc_tree__free(tree);
	/* one distinct frame left [unknown] */
	hc_symbolizer__stats(f->sym, &ss);
	assert_int_equal(ss.user_unresolved, 1);

	/* an off-CPU flush builds its stack twice (run queue, blocked): counted once */
	offcpu_event(&oe, 1000, 2000, 500, 300);
	oe.tgid = oe.tid = (uint32_t)getpid();
	memcpy(oe.stacks, a, sizeof(a));
	oe.ustack_len = sizeof(a);
	assert_int_equal(hc_capture__offcpu(f->cap, &oe, sizeof(oe)), 0);
	hc_capture__stats(f->cap, &st);
	assert_int_equal(st.ustacks_unmapped, 4);
}

/* A running copy of the stripped fixture (tests/symbolize: fix_fstart) and where its local
 * functions are: it prints "name address" lines, then "ready", and exits at EOF. */
struct stripped_proc {
	pid_t pid;
	int in_fd;
	FILE *out;
	uint64_t one, four; /* hc_fs_one, hc_fs_four */
};

static void stripped_spawn(struct stripped_proc *sp)
{
	const char *path = getenv("HC_FIX_FSTART");
	int in[2], out[2];
	char line[256];

	assert_non_null(path);
	assert_int_equal(pipe(in), 0);
	assert_int_equal(pipe(out), 0);
	sp->pid = fork();
	assert_true(sp->pid >= 0);
	if (sp->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	sp->in_fd = in[1];
	sp->out = fdopen(out[0], "r");
	assert_non_null(sp->out);
	sp->one = sp->four = 0;
	while (fgets(line, sizeof(line), sp->out) && strcmp(line, "ready\n")) {
		unsigned long long a;
		char name[64];

		assert_int_equal(sscanf(line, "%63s %llx", name, &a), 2);
		if (!strcmp(name, "hc_fs_one"))
			sp->one = a;
		if (!strcmp(name, "hc_fs_four"))
			sp->four = a;
	}
	assert_true(sp->one && sp->four);
}

static void stripped_reap(struct stripped_proc *sp)
{
	int status;

	close(sp->in_fd);
	fclose(sp->out);
	assert_int_equal(waitpid(sp->pid, &status, 0), sp->pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * A stripped binary's local functions (no symbol) are named by their start, from .eh_frame:
 * samples at different addresses of one function are one node, MODULE+0xSTART with the start
 * as its offset, in the tree and in what the encoders write.
 */
static void test_fstart_frames(void **state)
{
	struct fixture *f = *state;
	struct hc_uloc one, four;
	struct stripped_proc sp;
	struct hc_sample_event e;
	struct hc_profile *p = hc_profile__new();
	const struct hc_node *n;
	char want[64], line[160], hex[32], *buf = NULL;
	size_t len = 0;
	FILE *out;

	assert_non_null(p);
	stripped_spawn(&sp);
	assert_int_equal(hc_symbolizer__normalize(f->sym, (uint32_t)sp.pid, 0, sp.one, &one), 0);
	assert_int_equal(hc_symbolizer__normalize(f->sym, (uint32_t)sp.pid, 0, sp.four, &four), 0);
	for (int i = 0; i < 2; i++) {
		/* leaf inside hc_fs_one, its caller's return address inside hc_fs_four */
		const uint64_t us[] = {sp.one + 1 + 6 * (uint64_t)i,
				       sp.four + 10 + 2 * (uint64_t)i};
		size_t size = user_event(&e, us, 2);

		e.tgid = e.tid = (uint32_t)sp.pid;
		assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	}
	assert_int_equal(hc_capture__stack_count(f->cap), 2); /* two addresses each */
	assert_int_equal(build_tree(f, p->tree), 0);
	stripped_reap(&sp);

	n = only_child(hc_tree__root(p->tree), HC_NODE_PROCESS, "proc");
	n = only_child(n, HC_NODE_THREAD, "thr");
	snprintf(want, sizeof(want), "fix_fstart+0x%" PRIx64, four.off);
	n = only_child(n, HC_NODE_USER, want);
	assert_string_equal(hc_node__module(n), "fix_fstart");
	assert_int_equal(hc_node__offset(n), (int64_t)four.off);
	snprintf(want, sizeof(want), "fix_fstart+0x%" PRIx64, one.off);
	n = only_child(n, HC_NODE_USER, want);
	assert_int_equal(hc_node__offset(n), (int64_t)one.off);
	assert_int_equal(hc_node__weights(n)->samples, 2);

	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(hc_profile__write_json(p, out), 0);
	assert_int_equal(hc_profile__write_folded(p, HC_W_ALL, out), 0);
	fclose(out);
	snprintf(hex, sizeof(hex), "\"offset\":\"0x%" PRIx64 "\"", one.off);
	assert_non_null(strstr(buf, hex));
	snprintf(line, sizeof(line),
		 "\nproc;fix_fstart+0x%" PRIx64 ";fix_fstart+0x%" PRIx64 " %llu\n", four.off,
		 one.off, 2 * PERIOD_NS);
	assert_non_null(strstr(buf, line));
	free(buf);
	hc_profile__free(p);
}

/*
 * serve's time buckets: an off-CPU flush spans [first_ns, last_ns] and its time is spread
 * over those seconds in proportion, every nanosecond kept; time before the oldest second is
 * counted, not kept; a block of hours costs at most 120 pieces.
 */
static void test_offcpu_spread(void **state)
{
	struct fixture *f = *state;
	struct hc_offcpu_event e;
	struct hc_capture_stats st;
	struct sec_sum s = {0};
	uint64_t total = 0;

	/* mono 10.5 s .. 13.75 s with realtime = mono + 1000 s: seconds 1010..1013 */
	reopen(f, true);
	hc_capture__set_clock(f->cap, 1000000000000ll, 1000);
	offcpu_event(&e, 10500000000ull, 13750000000ull, 3250000000ull, 0);
	assert_int_equal(hc_capture__offcpu(f->cap, &e, HC_OFFCPU_HDR_SIZE), 0);
	assert_int_equal(walk(f, sum_by_second, NULL, &s), 0);
	assert_int_equal(s.n, 4);
	for (size_t i = 0; i < s.n; i++) {
		uint64_t want = s.sec[i] == 1010   ? 500000000ull
				: s.sec[i] == 1013 ? 750000000ull
						   : 1000000000ull;

		assert_true(s.sec[i] >= 1010 && s.sec[i] <= 1013);
		assert_int_equal(s.off[i], want);
		total += s.off[i];
	}
	assert_int_equal(total, 3250000000ull);

	/* Half of it before the oldest second kept: counted in expired_ns. */
	reopen(f, true);
	hc_capture__set_clock(f->cap, 1000000000000ll, 1012);
	offcpu_event(&e, 10000000000ull, 14000000000ull, 0, 4000000000ull);
	assert_int_equal(hc_capture__offcpu(f->cap, &e, HC_OFFCPU_HDR_SIZE), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(walk(f, sum_by_second, NULL, &s), 0);
	hc_capture__stats(f->cap, &st);
	assert_int_equal(st.expired_ns, 2000000000ull);
	total = 0;
	for (size_t i = 0; i < s.n; i++) {
		assert_true(s.sec[i] >= 1012);
		total += s.rq[i];
	}
	assert_int_equal(total, 2000000000ull);

	/* A 10-hour block: at most 120 pieces, all of its time kept. */
	reopen(f, true);
	hc_capture__set_clock(f->cap, 0, 0);
	offcpu_event(&e, 1000000000ull, 36001000000000ull, 36000000000000ull, 0);
	assert_int_equal(hc_capture__offcpu(f->cap, &e, HC_OFFCPU_HDR_SIZE), 0);
	memset(&s, 0, sizeof(s));
	assert_int_equal(walk(f, sum_by_second, NULL, &s), 0);
	assert_true(s.n <= 121);
	assert_true(s.n >= 100);
	total = 0;
	for (size_t i = 0; i < s.n; i++)
		total += s.off[i];
	assert_int_equal(total, 36000000000000ull);
}

/* --locks: a contention with the test's own stacks. */
static void lock_event(struct hc_lock_event *e, uint32_t flags, bool blocked, uint32_t named,
		       uint64_t wait_ns)
{
	const uint64_t ustack[] = {(uintptr_t)hc_t_leaf, (uintptr_t)hc_t_mid + 5};
	const uint64_t kstack[] = {K_DO_ONE_INITCALL + 0x10};

	memset(e, 0, sizeof(*e));
	e->type = HC_EVENT_LOCK;
	e->flags = flags;
	e->tgid = e->tid = 4343;
	e->wait_ns = wait_ns;
	e->lock_addr = 0xffff888000001000ull; /* no kallsyms variable: named only by BPF */
	e->blocked = blocked;
	e->named = named;
	memcpy(e->comm, "locker", 7);
	memcpy(e->pcomm, "locker", 7);
	memcpy(e->stacks, ustack, sizeof(ustack));
	memcpy(e->stacks + 2, kstack, sizeof(kstack));
	e->ustack_len = sizeof(ustack);
	e->kstack_len = sizeof(kstack);
}

struct lock_leaf {
	char name[64]; /* a copy: path elements are valid for the call only */
	struct hc_weights w;
	size_t depth;
	enum hc_node_kind before; /* the kind of the element before the lock node */
};

struct lock_leaves {
	struct lock_leaf l[8];
	size_t n;
};

static int collect_lock_leaf(void *ctx, const struct hc_path_elem *path, size_t n,
			     const struct hc_weights *w, int64_t sec)
{
	struct lock_leaves *ll = ctx;

	(void)sec;
	for (size_t i = 0; i < n; i++)
		if (path[i].kind == HC_NODE_LOCK && ll->n < 8) {
			ll->l[ll->n] =
				(struct lock_leaf){.w = *w, .depth = n, .before = path[i - 1].kind};
			snprintf(ll->l[ll->n++].name, sizeof(ll->l[0].name), "%s", path[i].name);
			assert_int_equal(i, n - 1); /* the lock node ends the path (no waker) */
		}
	return 0;
}

/* Contentions -> by_kind, lock_wait_ns, and the waiters' paths ending in a lock node. */
static void test_locks(void **state)
{
	struct fixture *f = *state;
	struct hc_capture_lock_stats ls;
	struct lock_leaves ll = {0};
	struct hc_lock_event e;
	json_t *by, *k;
	const struct hc_hist *h;

	lock_event(&e, HC_LCB_WRITE, true, HC_LOCK_MMAP, 1000);
	assert_int_equal(hc_capture__lock(f->cap, &e, sizeof(e)), 0);
	lock_event(&e, HC_LCB_WRITE, true, HC_LOCK_MMAP, 3000);
	assert_int_equal(hc_capture__lock(f->cap, &e, sizeof(e)), 0);
	lock_event(&e, HC_LCB_SPIN, false, HC_LOCK_UNNAMED, 50);
	e.ret = -4; /* interrupted */
	assert_int_equal(hc_capture__lock(f->cap, &e, sizeof(e)), 0);

	hc_capture__lock_stats(f->cap, &ls);
	assert_int_equal(ls.events, 3);
	assert_int_equal(ls.wait_ns, 4050);
	assert_int_equal(ls.failed, 1);

	by = hc_record_sink__lock_kinds_json(f->rs);
	assert_non_null(by);
	assert_int_equal(json_array_size(by), 2);
	k = json_array_get(by, 0); /* the most waited-for first */
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "rwsem:W");
	assert_true(json_is_false(json_object_get(k, "spin")));
	assert_int_equal(json_integer_value(json_object_get(k, "count")), 2);
	assert_int_equal(json_integer_value(json_object_get(k, "total_ns")), 4000);
	assert_int_equal(json_integer_value(json_object_get(k, "max_ns")), 3000);
	k = json_array_get(by, 1);
	assert_string_equal(json_string_value(json_object_get(k, "kind")), "spinlock");
	assert_true(json_is_true(json_object_get(k, "spin")));
	assert_int_equal(json_integer_value(json_object_get(k, "count")), 1);
	json_decref(by);

	h = hc_record_sink__hist(f->rs, HC_STORE_H_LOCK_WAIT_NS);
	assert_non_null(hc_hist__counts(h, "rwsem:W block"));
	assert_int_equal(hc_hist__counts(h, "rwsem:W block")[hc_hist__bucket_index(h, 3000)], 1);
	assert_int_equal(hc_hist__counts(h, "spinlock spin")[hc_hist__bucket_index(h, 50)], 1);
	assert_null(hc_hist__counts(h, "spinlock block"));

	/* the main table holds none of it */
	assert_int_equal(hc_capture__stack_count(f->cap), 0);
	assert_int_equal(walk(f, NULL, collect_lock_leaf, &ll), 0);
	assert_int_equal(ll.n, 2);
	for (size_t i = 0; i < ll.n; i++) {
		/* process, thread, 1 user frame (pid 4343 does not exist: its leaf is in no
		 * mapping, and ends the user stack), 1 kernel frame, the lock */
		assert_int_equal(ll.l[i].depth, 5);
		assert_int_equal(ll.l[i].before, HC_NODE_KERNEL);
		if (!strcmp(ll.l[i].name, "rwsem:W mmap_lock")) {
			assert_int_equal(ll.l[i].w.off_cpu_ns, 4000);
			assert_int_equal(ll.l[i].w.on_cpu_ns, 0);
			assert_int_equal(ll.l[i].w.samples, 2);
		} else {
			assert_string_equal(ll.l[i].name, "spinlock");
			assert_int_equal(ll.l[i].w.on_cpu_ns, 50);
			assert_int_equal(ll.l[i].w.off_cpu_ns, 0);
			assert_int_equal(ll.l[i].w.samples, 1);
		}
	}
	/* a record claiming more frames than the ABI allows: refused, nothing counted */
	lock_event(&e, HC_LCB_WRITE, true, HC_LOCK_MMAP, 7);
	e.kstack_len = (HC_MAX_STACK_DEPTH + 1) * 8;
	assert_int_equal(hc_capture__lock(f->cap, &e, sizeof(e)), -EINVAL);
	hc_capture__lock_stats(f->cap, &ls);
	assert_int_equal(ls.events, 3);
	assert_int_equal(ls.wait_ns, 4050);
}

/* A blocked flush that was a lock wait ends in a lock node; its run-queue time does not. */
static void test_offcpu_lock_wait(void **state)
{
	struct fixture *f = *state;
	struct lock_leaves ll = {0};
	struct hc_offcpu_event e;

	offcpu_event(&e, 1000, 5000, 3000, 1000);
	e.lock = HC_LOCK_WAIT | HC_LCB_MUTEX;
	assert_int_equal(hc_capture__offcpu(f->cap, &e, HC_OFFCPU_HDR_SIZE), 0);
	assert_int_equal(hc_capture__stack_count(f->cap), 2); /* and the run-queue path */
	assert_int_equal(walk(f, collect_lock_leaf, NULL, &ll), 0);
	assert_int_equal(ll.n, 1);
	assert_string_equal(ll.l[0].name, "mutex");
	assert_int_equal(ll.l[0].w.off_cpu_ns, 3000);
	assert_int_equal(ll.l[0].w.runqueue_ns, 0);
}

static void test_lock_kind_names(void **state)
{
	static const struct {
		uint32_t flags;
		const char *name;
	} k[] = {
		{0, "semaphore"},
		{HC_LCB_SPIN, "spinlock"},
		{HC_LCB_SPIN | HC_LCB_READ, "rwlock:R"},
		{HC_LCB_SPIN | HC_LCB_WRITE, "rwlock:W"},
		{HC_LCB_READ, "rwsem:R"},
		{HC_LCB_WRITE, "rwsem:W"},
		{HC_LCB_RT, "rtmutex"},
		{HC_LCB_RT | HC_LCB_READ, "rwlock-rt:R"},
		{HC_LCB_RT | HC_LCB_WRITE, "rwlock-rt:W"},
		{HC_LCB_PERCPU | HC_LCB_READ, "pcpu-sem:R"},
		{HC_LCB_PERCPU | HC_LCB_WRITE, "pcpu-sem:W"},
		{HC_LCB_MUTEX, "mutex"},
		{HC_LCB_MUTEX | HC_LCB_SPIN, "mutex"},
		{HC_LCB_PERCPU, "other"},
		{0x40 | HC_LCB_WRITE, "rwsem:W"}, /* bits above the known ones are ignored */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		assert_string_equal(hc_lock_kind_name(k[i].flags), k[i].name);
}

static void lock_event_bare(struct hc_lock_event *e, uint32_t flags, uint32_t blocked,
			    uint64_t wait)
{
	memset(e, 0, sizeof(*e));
	e->type = HC_EVENT_LOCK;
	e->flags = flags;
	e->tgid = (uint32_t)getpid();
	e->tid = (uint32_t)gettid();
	e->start_ns = 1000;
	e->wait_ns = wait;
	e->blocked = blocked;
	memcpy(e->pcomm, "proc", 4);
	memcpy(e->comm, "thr", 3);
}

/*
 * A mutex wait that ended while spinning on the owner comes with MUTEX|SPIN, one that slept
 * with MUTEX: both are the kind "mutex", one by_kind entry per spin/block, not two.
 */
static void test_lock_kinds_mutex_spin(void **state)
{
	struct fixture *f = *state;
	struct hc_lock_event e;
	json_t *by, *k;
	size_t i;
	int spin_seen = 0, block_seen = 0;

	lock_event_bare(&e, HC_LCB_MUTEX | HC_LCB_SPIN, 0, 100);
	assert_int_equal(hc_capture__lock(f->cap, &e, HC_LOCK_HDR_SIZE), 0);
	lock_event_bare(&e, HC_LCB_MUTEX, 0, 300);
	assert_int_equal(hc_capture__lock(f->cap, &e, HC_LOCK_HDR_SIZE), 0);
	lock_event_bare(&e, HC_LCB_MUTEX, 1, 5000);
	assert_int_equal(hc_capture__lock(f->cap, &e, HC_LOCK_HDR_SIZE), 0);
	lock_event_bare(&e, HC_LCB_WRITE, 1, 7000);
	assert_int_equal(hc_capture__lock(f->cap, &e, HC_LOCK_HDR_SIZE), 0);

	by = hc_record_sink__lock_kinds_json(f->rs);
	assert_non_null(by);
	assert_int_equal(json_array_size(by), 3);
	json_array_foreach (by, i, k) {
		const char *kind = json_string_value(json_object_get(k, "kind"));

		assert_non_null(kind);
		if (strcmp(kind, "mutex"))
			continue;
		if (json_is_true(json_object_get(k, "spin"))) {
			spin_seen++;
			assert_int_equal(json_integer_value(json_object_get(k, "count")), 2);
			assert_int_equal(json_integer_value(json_object_get(k, "total_ns")), 400);
			assert_int_equal(json_integer_value(json_object_get(k, "max_ns")), 300);
		} else {
			block_seen++;
			assert_int_equal(json_integer_value(json_object_get(k, "count")), 1);
		}
	}
	assert_int_equal(spin_seen, 1);
	assert_int_equal(block_seen, 1);
	/* the most waited-for first */
	assert_string_equal(json_string_value(json_object_get(json_array_get(by, 0), "kind")),
			    "rwsem:W");
	json_decref(by);
}

static void test_bad_event(void **state)
{
	struct fixture *f = *state;
	struct hc_sample_event e;

	make_event(&e, "proc", "thr");
	e.ustack_len = (HC_MAX_STACK_DEPTH + 1) * 8; /* more frames than the ABI allows */
	assert_int_equal(hc_capture__sample(f->cap, &e, sizeof(e)), -EINVAL);
	assert_int_equal(hc_capture__stack_count(f->cap), 0);
}

/* A leaf inside code inlined into its caller: the caller, then the leaf marked inlined. */
static void test_inline_frames(void **state)
{
	struct fixture *f = *state;
	struct hc_sample_event e;
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *n;
	struct hc_symbolizer_stats ss;
	struct hc_capture_stats st;
	size_t size = make_event(&e, "proc", "thr");

	assert_non_null(tree);
	e.stacks[0] = (uintptr_t)hc_t_mark_inl;
	e.stacks[1] = (uintptr_t)hc_t_outer + 5;
	e.ustack_len = 16;
	e.kstack_len = 0;
	e.kernel_ip = 0;
	size = HC_SAMPLE_HDR_SIZE + 16;
	hc_t_inl_caller();
	hc_t_i0();
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	assert_int_equal(build_tree(f, tree), 0);
	n = only_child(hc_tree__root(tree), HC_NODE_PROCESS, "proc");
	n = only_child(n, HC_NODE_THREAD, "thr");
	n = only_child(n, HC_NODE_USER, "hc_t_outer");
	assert_false(hc_node__inlined(n));
	n = only_child(n, HC_NODE_USER, "hc_t_inl_caller");
	assert_false(hc_node__inlined(n));
	n = only_child(n, HC_NODE_USER, "hc_t_inl_leaf");
	assert_true(hc_node__inlined(n));
	assert_string_equal(hc_node__module(n), "test-capture");
	assert_int_equal(hc_node__offset(n), -1);
	assert_int_equal(hc_node__child_count(n), 0);
	assert_int_equal(hc_node__weights(n)->samples, 2);
	hc_symbolizer__stats(f->sym, &ss);
	/* one distinct address, resolved once */
	assert_int_equal(ss.inline_frames, 1);
	hc_capture__stats(f->cap, &st);
	assert_int_equal(st.inline_dropped, 0);
	hc_tree__free(tree);
}

static int max_depth_cb(void *ctx, const struct hc_path_elem *path, size_t n,
			const struct hc_weights *w, int64_t sec)
{
	size_t *max = ctx, inl = 0;

	(void)w;
	(void)sec;
	if (n > *max)
		*max = n;
	/* 127 frames of hc_t_i0: the outermost ones carry all nine inlined levels, the
	 * innermost ones none, and in between one carries its innermost */
	assert_string_equal(path[2].name, "hc_t_i0");
	assert_false(path[2].inlined);
	for (size_t i = 3; i < 12; i++) {
		assert_true(path[i].inlined);
		assert_int_equal(path[i].name[6], (char)('0' + i - 2));
	}
	for (size_t i = 0; i < n; i++)
		inl += path[i].inlined;
	assert_int_equal(inl, HC_CAPTURE_MAX_PATH - 2 - HC_MAX_STACK_DEPTH);
	assert_string_equal(path[n - 1].name, "hc_t_i0");
	return 0;
}

/* Inlined frames fill a path up to HC_CAPTURE_MAX_PATH, no further; the rest are counted. */
static void test_inline_path_limit(void **state)
{
	struct fixture *f = *state;
	struct hc_sample_event e;
	struct hc_tree *tree = hc_tree__new();
	struct hc_profile *p;
	struct hc_capture_stats st;
	size_t size = make_event(&e, "proc", "thr"), max = 0;
	FILE *out;
	char *buf = NULL;
	size_t len = 0;

	for (size_t i = 0; i < HC_MAX_STACK_DEPTH; i++)
		e.stacks[i] = (uintptr_t)hc_t_mark_i9 + (i ? 1 : 0);
	e.ustack_len = HC_MAX_STACK_DEPTH * 8;
	e.kstack_len = 0;
	e.kernel_ip = 0;
	size = HC_SAMPLE_HDR_SIZE + HC_MAX_STACK_DEPTH * 8;
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	assert_int_equal(walk(f, max_depth_cb, NULL, &max), 0);
	assert_int_equal(max, HC_CAPTURE_MAX_PATH);
	hc_capture__stats(f->cap, &st);
	assert_int_equal(st.inline_dropped,
			 HC_MAX_STACK_DEPTH * 9 - (HC_CAPTURE_MAX_PATH - 2 - HC_MAX_STACK_DEPTH));
	/* and the encoders take a tree that deep (the flush started the tables over) */
	assert_int_equal(hc_capture__stack_count(f->cap), 0);
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	p = hc_profile__new();
	assert_non_null(p);
	assert_int_equal(build_tree(f, p->tree), 0);
	out = open_memstream(&buf, &len);
	assert_non_null(out);
	assert_int_equal(hc_profile__write_json(p, out), 0);
	assert_int_equal(hc_profile__write_folded(p, HC_W_ALL, out), 0);
	assert_int_equal(hc_profile__write_pprof(p, HC_W_ALL, out), 0);
	fclose(out);
	free(buf);
	hc_profile__free(p);
	hc_tree__free(tree);
}

/*
 * What a sink is handed for each record, computed once in the pipeline: the histogram
 * observations (which, whose, the value, the second), the heat row, cpuunclaimed, a lock
 * contention's kind and series; a contention older than the oldest second kept reaches no
 * sink and is counted as expired.
 */
static void test_sink_calls(void **state)
{
	struct fixture *f = *state;
	struct hc_capture_lock_stats ls;
	struct hc_thist_event th;
	struct hc_sample_event e;
	struct hc_lock_event le;
	size_t size = make_event(&e, "proc", "thr");

	reopen(f, true);
	/* realtime = mono + 1000 s; mono 2.5 s: second 1002, half of it gone */
	hc_capture__set_clock(f->cap, 1000000000000ll, 1001);
	hc_capture__set_window_start(f->cap, 500000000ull);
	e.time_ns = 2500000000ull;
	e.idle_cpus = 1;
	e.queued_cpus = 2;
	assert_int_equal(hc_capture__sample(f->cap, &e, size), 0);
	/* priority, then the run-queue length of its CPU */
	assert_int_equal(f->log.hist, 2);
	assert_int_equal(f->log.last_obs.hist, HC_STORE_H_RUNQ_LENGTH);
	assert_int_equal(f->log.last_obs.sec, 1002);
	assert_int_equal(f->log.last_obs.pid, 0);
	assert_int_equal(f->log.last_obs.value, 2);
	assert_int_equal(f->log.last_obs.count, 1);
	assert_string_equal(f->log.last_key, "cpu 1");
	assert_memory_equal(f->log.last_obs.name, "cpu 1\0\0\0\0\0\0\0\0\0\0\0", 16);
	assert_int_equal(
		bucket_count(hc_record_sink__hist(f->rs, HC_STORE_H_PRIORITY), "proc", 120), 1);
	/* one idle CPU shared by the two with tasks waiting: half a period, in second 2 of the
	 * window */
	assert_int_equal(f->log.unclaimed, 1);
	assert_int_equal(f->log.unclaimed_ns, PERIOD_NS / 2);
	/* 20 ms rows: 0.5 s into its second is row 25 */
	assert_int_equal(f->log.heat, 1);
	assert_int_equal(f->log.heat_sec, 1002);
	assert_int_equal(f->log.heat_row, 25);

	/* A thread's histograms carry no time: filed under the current second. */
	memset(&th, 0, sizeof(th));
	th.type = HC_EVENT_THIST;
	th.tgid = 77;
	memcpy(th.pcomm, "proc", 4);
	th.slots[HC_TH_OFF][3] = 5;
	hc_capture__set_now(f->cap, 1005);
	assert_int_equal(hc_capture__thist(f->cap, &th), 0);
	assert_int_equal(f->log.hist, 3);
	assert_int_equal(f->log.last_obs.hist, HC_STORE_H_OFFCPU_US);
	assert_int_equal(f->log.last_obs.sec, 1005);
	assert_int_equal(f->log.last_obs.pid, 77);
	assert_int_equal(f->log.last_obs.value, 4); /* quantize slot 3: [4, 8) us */
	assert_int_equal(f->log.last_obs.count, 5);

	/* A mutex that spun: the kind "mutex", its series "mutex spin", its second. */
	lock_event_bare(&le, HC_LCB_MUTEX | HC_LCB_SPIN, 0, 700);
	le.start_ns = 3000000000ull;
	le.ret = -4;
	assert_int_equal(hc_capture__lock(f->cap, &le, HC_LOCK_HDR_SIZE), 0);
	assert_int_equal(f->log.lock, 1);
	assert_int_equal(f->log.last_lock.flags, HC_LCB_MUTEX);
	assert_false(f->log.last_lock.blocked);
	assert_true(f->log.last_lock.failed);
	assert_true(f->log.last_lock.no_stack);
	assert_int_equal(f->log.last_lock.wait_ns, 700);
	assert_int_equal(f->log.last_lock.sec, 1003);
	assert_string_equal(f->log.last_series, "mutex spin");
	/* ended before second 1001: counted, expired, no sink */
	le.start_ns = 100;
	assert_int_equal(hc_capture__lock(f->cap, &le, HC_LOCK_HDR_SIZE), 0);
	assert_int_equal(f->log.lock, 1);
	hc_capture__lock_stats(f->cap, &ls);
	assert_int_equal(ls.events, 2);
	assert_int_equal(ls.wait_ns, 1400);
	assert_int_equal(ls.failed, 2);
	assert_int_equal(ls.expired, 1);
	assert_int_equal(hc_capture__stack_count(f->cap), 1);
}

/* Everything a walk hands over, summed; per_second: keyed by second, as serve's sink is. */
struct totals {
	uint64_t on_cpu_ns, off_cpu_ns, runqueue_ns, samples, paths;
	uint64_t lock_on_ns, lock_off_ns, lock_samples;
	int64_t min_sec, max_sec;
};

static int sum_path(void *ctx, const struct hc_path_elem *path, size_t n,
		    const struct hc_weights *w, int64_t sec)
{
	struct totals *t = ctx;

	(void)path;
	(void)n;
	t->on_cpu_ns += w->on_cpu_ns;
	t->off_cpu_ns += w->off_cpu_ns;
	t->runqueue_ns += w->runqueue_ns;
	t->samples += w->samples;
	if (!t->paths++ || sec < t->min_sec)
		t->min_sec = sec;
	if (sec > t->max_sec)
		t->max_sec = sec;
	return 0;
}

static int sum_lock_path(void *ctx, const struct hc_path_elem *path, size_t n,
			 const struct hc_weights *w, int64_t sec)
{
	struct totals *t = ctx;

	(void)path;
	(void)n;
	(void)sec;
	t->lock_on_ns += w->on_cpu_ns;
	t->lock_off_ns += w->off_cpu_ns;
	t->lock_samples += w->samples;
	return 0;
}

/* The same records: samples over four seconds, off-CPU flushes spanning seconds, locks. */
static void feed(struct hc_capture *cap)
{
	struct hc_sample_event e;
	struct hc_offcpu_event o;
	struct hc_lock_event l;
	size_t size = make_event(&e, "proc", "thr");

	for (int i = 0; i < 40; i++) {
		e.time_ns = 1000000000ull + (uint64_t)i * 97000000ull;
		e.cpu = (uint32_t)i % 3;
		e.prio = 100 + i % 40;
		assert_int_equal(hc_capture__sample(cap, &e, size), 0);
	}
	offcpu_event(&o, 1200000000ull, 4700000000ull, 3333333333ull, 17171717ull);
	assert_int_equal(hc_capture__offcpu(cap, &o, HC_OFFCPU_HDR_SIZE), 0);
	offcpu_event(&o, 2000000001ull, 2000000999ull, 777ull, 11ull);
	o.lock = HC_LOCK_WAIT | HC_LCB_WRITE;
	assert_int_equal(hc_capture__offcpu(cap, &o, HC_OFFCPU_HDR_SIZE), 0);
	for (int i = 0; i < 5; i++) {
		lock_event(&l, i % 2 ? HC_LCB_SPIN : HC_LCB_WRITE, i % 2 == 0, HC_LOCK_MMAP,
			   1000 + (uint64_t)i);
		l.start_ns = 1000000000ull + (uint64_t)i * 900000000ull;
		assert_int_equal(hc_capture__lock(cap, &l, sizeof(l)), 0);
	}
}

/*
 * One pipeline, two keyings: the same records through record's (one bucket) and serve's
 * (per second, realtime = mono + 1000 s) give the same totals to the nanosecond, and serve's
 * are spread over the seconds the records fell in.
 */
static void test_same_totals_both_keyings(void **state)
{
	struct fixture *f = *state;
	struct totals rec = {0}, srv = {0};
	struct hc_capture_stats rs, ss;

	feed(f->cap);
	assert_int_equal(walk(f, sum_path, sum_lock_path, &rec), 0);
	hc_capture__stats(f->cap, &rs);

	reopen(f, true);
	hc_capture__set_clock(f->cap, 1000000000000ll, 0);
	feed(f->cap);
	assert_int_equal(walk(f, sum_path, sum_lock_path, &srv), 0);
	hc_capture__stats(f->cap, &ss);

	assert_int_equal(rec.samples, 40);
	assert_int_equal(rec.on_cpu_ns, 40 * PERIOD_NS);
	assert_int_equal(rec.off_cpu_ns, 3333333333ull + 777ull);
	assert_int_equal(rec.runqueue_ns, 17171717ull + 11ull);
	assert_int_equal(rec.lock_samples, 5);
	assert_int_equal(rec.lock_on_ns + rec.lock_off_ns, 5 * 1000 + 0 + 1 + 2 + 3 + 4);
	assert_int_equal(rec.min_sec, 0);
	assert_int_equal(rec.max_sec, 0);

	assert_int_equal(srv.samples, rec.samples);
	assert_int_equal(srv.on_cpu_ns, rec.on_cpu_ns);
	assert_int_equal(srv.off_cpu_ns, rec.off_cpu_ns);
	assert_int_equal(srv.runqueue_ns, rec.runqueue_ns);
	assert_int_equal(srv.lock_on_ns, rec.lock_on_ns);
	assert_int_equal(srv.lock_off_ns, rec.lock_off_ns);
	assert_int_equal(srv.lock_samples, rec.lock_samples);
	assert_true(srv.paths > rec.paths);
	assert_int_equal(srv.min_sec, 1001);
	assert_int_equal(srv.max_sec, 1004);
	assert_int_equal(ss.samples, rs.samples);
	assert_int_equal(ss.off_ns, rs.off_ns);
	assert_int_equal(ss.runqueue_ns, rs.runqueue_ns);
	assert_int_equal(ss.expired_ns, 0);
	assert_int_equal(rs.expired_ns, 0);
	/* both sent every histogram observation to the sink: 40 samples x 2 histograms, and
	 * each time the same */
	assert_int_equal(f->log.hist, 2 * 2 * 40);
	assert_int_equal(f->log.lock, 2 * 5);
}

static uint64_t hist_total(const struct hc_hist *h, const char *key)
{
	const uint64_t *c = hc_hist__counts(h, key);
	uint64_t sum = 0;

	for (size_t i = 0; c && i < hc_hist__nbuckets(h); i++)
		sum += c[i];
	return sum;
}

/* What serve's sink wrote, summed from its wire records. */
struct wire_sums {
	struct hc_weights add, lock_add;
	uint64_t hist[HC_STORE_H_MAX], heat, lock_count, lock_wait_ns, frames;
	int64_t min_sec, max_sec;
};

static void read_wire(const struct hc_wire_buf *b, struct wire_sums *ws)
{
	struct hc_wire_reader r = {0};
	struct hc_wire_rec *rec = calloc(1, sizeof(*rec));
	int got;

	assert_non_null(rec);
	assert_int_equal(b->err, 0);
	assert_int_equal(hc_wire_reader__feed(&r, b->data, b->len), 0);
	ws->min_sec = INT64_MAX;
	while ((got = hc_wire_reader__next(&r, rec)) == 1) {
		switch (rec->type) {
		case HC_WIRE_FRAME:
			ws->frames++;
			break;
		case HC_WIRE_ADD:
			ws->add.on_cpu_ns += rec->w.on_cpu_ns;
			ws->add.off_cpu_ns += rec->w.off_cpu_ns;
			ws->add.runqueue_ns += rec->w.runqueue_ns;
			ws->add.samples += rec->w.samples;
			ws->min_sec = rec->sec < ws->min_sec ? rec->sec : ws->min_sec;
			ws->max_sec = rec->sec > ws->max_sec ? rec->sec : ws->max_sec;
			break;
		case HC_WIRE_LOCK_ADD:
			ws->lock_add.on_cpu_ns += rec->w.on_cpu_ns;
			ws->lock_add.off_cpu_ns += rec->w.off_cpu_ns;
			ws->lock_add.samples += rec->w.samples;
			break;
		case HC_WIRE_HIST:
			assert_true(rec->hist < HC_STORE_H_MAX);
			ws->hist[rec->hist] += rec->count;
			break;
		case HC_WIRE_HEAT:
			for (int i = 0; i < HC_WIRE_HEAT_ROWS; i++)
				ws->heat += rec->rows[i];
			break;
		case HC_WIRE_COUNTER:
			if (rec->counter == HC_STORE_C_LOCK_COUNT)
				ws->lock_count += rec->count;
			if (rec->counter == HC_STORE_C_LOCK_WAIT_NS)
				ws->lock_wait_ns += rec->count;
			break;
		default:
			break;
		}
	}
	assert_int_equal(got, 0);
	hc_wire_reader__release(&r);
	free(rec);
}

/*
 * The point of one pipeline: the same records through record's sink (the document's tree and
 * histograms) and through serve's sink (the wire records of a second's flush) give the same
 * totals to the nanosecond and the same counts: paths, lock paths, every histogram, the lock
 * kinds' counters, and serve's heat map holds every sample.
 */
static void test_record_and_serve_sinks_agree(void **state)
{
	struct fixture *f = *state;
	struct hc_capture_opts so = {.period_ns = PERIOD_NS, .per_second = true};
	struct hc_tree *tree = hc_tree__new(), *ltree = hc_tree__new();
	const struct hc_weights *rw, *lw;
	struct hc_serve_sink *ss = hc_serve_sink__new(true);
	struct hc_capture_sink sink;
	struct hc_thist_event th;
	struct hc_capture *scap;
	struct wire_sums ws = {0};
	uint64_t lock_count = 0, lock_wait = 0, runq = 0;
	const struct hc_hist *h;
	json_t *by, *k;
	size_t i;

	assert_non_null(tree);
	assert_non_null(ltree);
	assert_non_null(ss);
	memset(&th, 0, sizeof(th));
	th.type = HC_EVENT_THIST;
	th.tgid = 77;
	memcpy(th.pcomm, "proc", 4);
	th.slots[HC_TH_SLICE][5] = 3;
	th.slots[HC_TH_RUNQ][0] = 2;

	/* record's: one bucket, record's sink */
	hc_capture__free(f->cap);
	f->cap = hc_capture__new(&(struct hc_capture_opts){.period_ns = PERIOD_NS}, f->sym, NULL,
				 &f->rsink);
	assert_non_null(f->cap);
	feed(f->cap);
	assert_int_equal(hc_capture__thist(f->cap, &th), 0);
	assert_int_equal(hc_capture__idle_samples(f->cap, 0, 1, 9), 0);
	assert_int_equal(hc_record_sink__trees(f->rs, f->cap, tree, ltree), 0);

	/* serve's: per second, realtime = mono + 1000 s, one flush */
	sink = hc_serve_sink__sink(ss);
	scap = hc_capture__new(&so, f->sym, NULL, &sink);
	assert_non_null(scap);
	hc_capture__set_clock(scap, 1000000000000ll, 0);
	hc_capture__set_now(scap, 1004);
	feed(scap);
	assert_int_equal(hc_capture__thist(scap, &th), 0);
	assert_int_equal(hc_capture__idle_samples(scap, 1003, 1, 9), 0);
	assert_int_equal(hc_serve_sink__begin(ss), 0);
	assert_int_equal(hc_capture__flush(scap), 0);
	assert_int_equal(hc_serve_sink__end(ss, 1005), 0);
	read_wire(hc_serve_sink__buf(ss), &ws);

	rw = hc_node__weights(hc_tree__root(tree));
	assert_int_equal(rw->samples, 40);
	assert_int_equal(ws.add.samples, rw->samples);
	assert_int_equal(ws.add.on_cpu_ns, rw->on_cpu_ns);
	assert_int_equal(ws.add.off_cpu_ns, rw->off_cpu_ns);
	assert_int_equal(ws.add.runqueue_ns, rw->runqueue_ns);
	assert_int_equal(ws.min_sec, 1001);
	assert_int_equal(ws.max_sec, 1004);
	assert_true(ws.frames > 0);
	lw = hc_node__weights(hc_tree__root(ltree));
	assert_int_equal(lw->samples, 5);
	assert_int_equal(ws.lock_add.samples, lw->samples);
	assert_int_equal(ws.lock_add.on_cpu_ns, lw->on_cpu_ns);
	assert_int_equal(ws.lock_add.off_cpu_ns, lw->off_cpu_ns);

	h = hc_record_sink__hist(f->rs, HC_STORE_H_PRIORITY);
	assert_int_equal(hist_total(h, "proc"), 40);
	assert_int_equal(ws.hist[HC_STORE_H_PRIORITY], hist_total(h, "proc"));
	h = hc_record_sink__hist(f->rs, HC_STORE_H_RUNQ_LENGTH);
	for (int cpu = 0; cpu < 3; cpu++) {
		char key[16];

		snprintf(key, sizeof(key), "cpu %d", cpu);
		runq += hist_total(h, key);
	}
	assert_int_equal(runq, 40 + 9);
	assert_int_equal(ws.hist[HC_STORE_H_RUNQ_LENGTH], runq);
	assert_int_equal(
		ws.hist[HC_STORE_H_ONCPU_SLICE_US],
		hist_total(hc_record_sink__hist(f->rs, HC_STORE_H_ONCPU_SLICE_US), "proc"));
	assert_int_equal(ws.hist[HC_STORE_H_ONCPU_SLICE_US], 3);
	assert_int_equal(ws.hist[HC_STORE_H_RUNQ_LATENCY_US], 2);
	h = hc_record_sink__hist(f->rs, HC_STORE_H_LOCK_WAIT_NS);
	assert_int_equal(ws.hist[HC_STORE_H_LOCK_WAIT_NS],
			 hist_total(h, "rwsem:W block") + hist_total(h, "spinlock spin"));
	by = hc_record_sink__lock_kinds_json(f->rs);
	assert_non_null(by);
	json_array_foreach (by, i, k) {
		lock_count += (uint64_t)json_integer_value(json_object_get(k, "count"));
		lock_wait += (uint64_t)json_integer_value(json_object_get(k, "total_ns"));
	}
	json_decref(by);
	assert_int_equal(lock_count, 5);
	assert_int_equal(ws.lock_count, lock_count);
	assert_int_equal(ws.lock_wait_ns, lock_wait);
	assert_int_equal(ws.lock_wait_ns, lw->on_cpu_ns + lw->off_cpu_ns);
	assert_int_equal(ws.heat, 40);

	hc_capture__free(scap);
	hc_serve_sink__free(ss);
	hc_tree__free(tree);
	hc_tree__free(ltree);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_tree_order_and_names, setup, teardown),
		cmocka_unit_test_setup_teardown(test_identity_splits_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_user_frame, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unmapped_cuts_stack, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fstart_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_histograms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offcpu_spread, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lock_kinds_mutex_spin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_event, setup, teardown),
		cmocka_unit_test_setup_teardown(test_locks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_offcpu_lock_wait, setup, teardown),
		cmocka_unit_test(test_lock_kind_names),
		cmocka_unit_test_setup_teardown(test_inline_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inline_path_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sink_calls, setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_totals_both_keyings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_and_serve_sinks_agree, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
