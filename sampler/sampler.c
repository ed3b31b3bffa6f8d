// SPDX-License-Identifier: GPL-2.0-only
#include "sampler/sampler.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/sample.skel.h"
#include "base/time.h"
#include "sampler/cpus.h"

struct hc_sampler {
	struct sample_bpf *skel;
	struct ring_buffer *rb;
	struct hc_sampler_callbacks cb;
	uint32_t *cpus;
	int n_cpus;
	int *pfds;     /* perf event fd per online CPU, -1 if not opened */
	int *link_fds; /* BPF link per perf event, -1 if none */
	size_t ringbuf_bytes;
	uint64_t decode_errors;
	uint64_t callback_errors;
	/* Off-CPU */
	bool offcpu;
	struct bpf_link *exec_link;
	struct bpf_link *sched_links[4]; /* switch, wakeup, wakeup_new, exit */
	struct bpf_link *lock_links[2];	 /* --locks: contention_begin, contention_end */
	bool locks;
	struct hc_sampler_window window;
	bool *busy_at_start; /* per cpus[] index: a task ran there when the window opened */
	uint64_t *idle_ns;   /* per cpus[] index, computed at stop */
	uint64_t iter_records;
	/* --unwind table: the two mmap'd maps */
	struct hc_sampler_uw_area uw;
	size_t uw_rows_bytes, uw_procs_bytes;
	size_t uw_rows_mapped; /* bytes of uw_rows mapped at uw.rows (the rest reserved) */
	bool *uw_slot_mapped;  /* per slot of uw_procs; NULL: all of it is mapped */
};

static size_t roundup_pow2(size_t v)
{
	size_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/*
 * Room for about half a second of samples at ~512 bytes each (user + kernel frames of a
 * typical stack) and their stack copies, at least 4 MiB, at most 256 MiB. The reader normally
 * drains every 100 ms and is woken early at wakeup_bytes, so this is slack, not latency.
 */
static size_t auto_ringbuf_bytes(uint64_t period_ns, int n_cpus, uint32_t copy_bytes,
				 uint64_t copy_budget)
{
	uint64_t hz = period_ns ? 1000000000ull / period_ns : 1;
	uint64_t want = hz * (uint64_t)n_cpus * 512 / 2;

	/* --unwind dwarf: and a quarter of a second of stack copies, as many as the budget
	 * allows (the reader drains every 100 ms, and copies stop while it is half full). */
	if (copy_bytes) {
		uint64_t copies = hz * (uint64_t)n_cpus * (copy_bytes + sizeof(struct hc_ucopy));

		if (copy_budget && copies > copy_budget)
			copies = copy_budget;
		want += copies / 4;
	}

	if (want < (4u << 20))
		want = 4u << 20;
	if (want > (256u << 20))
		want = 256u << 20;
	return roundup_pow2((size_t)want);
}

/* Bytes of a stack from its (possibly negative: an error) length. */
static size_t stack_len(int32_t len)
{
	return len > 0 ? (size_t)len : 0;
}

/* A copy of `size` bytes holds its header and exactly its len bytes. */
static bool ucopy_valid(const struct hc_ucopy *u, size_t size)
{
	return size >= sizeof(*u) && u->len <= HC_STACK_COPY_MAX && sizeof(*u) + u->len == size;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct hc_sampler *s = ctx;
	const struct hc_sample_event *e = data;
	int err = 0;

	if (size < sizeof(__u32)) {
		s->decode_errors++;
		return 0;
	}
	switch (e->type) {
	case HC_EVENT_SAMPLE: {
		size_t ul = e->ustack_len > 0 ? (size_t)e->ustack_len : 0;
		size_t kl = e->kstack_len > 0 ? (size_t)e->kstack_len : 0;

		if (size < HC_SAMPLE_HDR_SIZE ||
		    size < HC_SAMPLE_HDR_SIZE + ul + kl + e->ucopy_size ||
		    (e->ucopy_size &&
		     !ucopy_valid((const void *)((const char *)e + HC_SAMPLE_HDR_SIZE + ul + kl),
				  e->ucopy_size))) {
			s->decode_errors++;
			return 0;
		}
		if (s->cb.sample)
			err = s->cb.sample(s->cb.ctx, e, size);
		break;
	}
	case HC_EVENT_EXEC:
		if (size < sizeof(struct hc_exec_event)) {
			s->decode_errors++;
			return 0;
		}
		if (s->cb.exec)
			err = s->cb.exec(s->cb.ctx, data);
		break;
	case HC_EVENT_OFFCPU: {
		const struct hc_offcpu_event *o = data;

		if (size < HC_OFFCPU_HDR_SIZE || size < HC_OFFCPU_HDR_SIZE +
								 stack_len(o->ustack_len) +
								 stack_len(o->kstack_len)) {
			s->decode_errors++;
			return 0;
		}
		if (s->cb.offcpu)
			err = s->cb.offcpu(s->cb.ctx, o, size);
		break;
	}
	case HC_EVENT_THIST:
		if (size < sizeof(struct hc_thist_event)) {
			s->decode_errors++;
			return 0;
		}
		if (s->cb.thist)
			err = s->cb.thist(s->cb.ctx, data);
		break;
	case HC_EVENT_WAKER: {
		const struct hc_waker_event *w = data;

		if (size < HC_WAKER_HDR_SIZE || size < HC_WAKER_HDR_SIZE +
								stack_len(w->ustack_len) +
								stack_len(w->kstack_len)) {
			s->decode_errors++;
			return 0;
		}
		if (s->cb.waker)
			err = s->cb.waker(s->cb.ctx, w, size);
		break;
	}
	case HC_EVENT_LOCK: {
		const struct hc_lock_event *l = data;

		if (size < HC_LOCK_HDR_SIZE ||
		    size < HC_LOCK_HDR_SIZE + stack_len(l->ustack_len) + stack_len(l->kstack_len)) {
			s->decode_errors++;
			return 0;
		}
		if (s->cb.lock)
			err = s->cb.lock(s->cb.ctx, l, size);
		break;
	}
	case HC_EVENT_USTACK: {
		const struct hc_ustack_event *u = data;

		if (size < sizeof(*u) ||
		    !ucopy_valid(&u->copy, size - (sizeof(*u) - sizeof(u->copy)))) {
			s->decode_errors++;
			return 0;
		}
		if (s->cb.ustack)
			err = s->cb.ustack(s->cb.ctx, u, size);
		break;
	}
	default:
		s->decode_errors++;
		return 0;
	}
	/* A callback failure (e.g. -ENOMEM) is counted, not fatal to the drain. */
	if (err)
		s->callback_errors++;
	return 0;
}

static int perf_event_open_cpu(uint64_t period_ns, uint32_t cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* Fixed period, not freq mode: every sample stands for exactly period_ns. */
		.sample_period = period_ns,
		.freq = 0,
		.disabled = 1,
	};

	return (int)syscall(__NR_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* hc_sampler__new()'s steps: 0, or -errno with *step saying what failed (its reason). */

/* The CPUs to sample and a descriptor slot per CPU. */
static int alloc_cpus(struct hc_sampler *s, const char **step)
{
	s->n_cpus = hc_cpulist__read(NULL, &s->cpus);
	if (s->n_cpus <= 0) {
		*step = "cannot read the online CPUs from /sys/devices/system/cpu/online";
		return s->n_cpus ? s->n_cpus : -EINVAL;
	}
	s->pfds = malloc((size_t)s->n_cpus * sizeof(*s->pfds));
	s->link_fds = malloc((size_t)s->n_cpus * sizeof(*s->link_fds));
	s->busy_at_start = calloc((size_t)s->n_cpus, sizeof(*s->busy_at_start));
	s->idle_ns = calloc((size_t)s->n_cpus, sizeof(*s->idle_ns));
	/* -1 first: hc_sampler__free() closes what is not, whichever allocation failed */
	for (int i = 0; i < s->n_cpus; i++) {
		if (s->pfds)
			s->pfds[i] = -1;
		if (s->link_fds)
			s->link_fds[i] = -1;
	}
	if (!s->pfds || !s->link_fds || !s->busy_at_start || !s->idle_ns) {
		*step = "out of memory";
		return -ENOMEM;
	}
	return 0;
}

/* The -p and --comm filters, and what off-CPU tracking takes and leaves out. */
static int configure_tracking(struct hc_sampler *s, const struct hc_sampler_opts *opts,
			      const char **step)
{
	uint64_t budget = opts->stack_budget ? opts->stack_budget : 10000;
	int ncpu = libbpf_num_possible_cpus();

	s->skel->rodata->filter_tgid = opts->n_tgids > 0;
	if (opts->comm) {
		size_t len = strlen(opts->comm);

		if (len == 0 || len >= HC_TASK_COMM_LEN) {
			*step = "a process name (--comm) has 1 to 15 bytes";
			return -EINVAL;
		}
		s->skel->rodata->filter_comm = true;
		memcpy((char *)s->skel->rodata->comm_filter, opts->comm, len);
	}
	s->skel->rodata->nr_cpu_ids = ncpu > 0 ? (__u32)ncpu : 1;
	s->offcpu = !opts->no_offcpu;
	s->skel->rodata->min_block_ns = opts->min_block_ns;
	s->skel->rodata->stack_reuse = !opts->no_stack_reuse;
	s->skel->rodata->capture_wakers = opts->wakers;
	s->skel->rodata->stack_cost_ns = 1000000000ull / budget;
	s->skel->rodata->stack_burst_ns = 64 * s->skel->rodata->stack_cost_ns;
	if (!s->offcpu) {
		struct bpf_program *progs[] = {
			s->skel->progs.hc_switch,     s->skel->progs.hc_wakeup,
			s->skel->progs.hc_wakeup_new, s->skel->progs.hc_exit,
			s->skel->progs.hc_iter_start, s->skel->progs.hc_iter_end,
		};

		for (size_t k = 0; k < sizeof(progs) / sizeof(progs[0]); k++)
			bpf_program__set_autoload(progs[k], false);
	}
	if (opts->locks && opts->no_offcpu) {
		*step = "lock contention needs off-CPU tracking (whether a waiter blocked)";
		return -EINVAL;
	}
	s->locks = opts->locks;
	s->skel->rodata->track_locks = opts->locks;
	if (!opts->locks) {
		bpf_program__set_autoload(s->skel->progs.hc_lock_begin, false);
		bpf_program__set_autoload(s->skel->progs.hc_lock_end, false);
	}
	return 0;
}

/* --unwind dwarf: the stack copies' size, byte budget and buffers. */
static int configure_copies(struct hc_sampler *s, const struct hc_sampler_opts *opts,
			    const char **step)
{
	uint64_t per_cpu = opts->stack_copy_budget / (uint64_t)s->n_cpus;
	int err;

	if (opts->stack_copy_bytes > HC_STACK_COPY_MAX) {
		*step = "a user stack copy holds at most 32 KiB";
		return -EINVAL;
	}
	if (!opts->stack_copy_bytes)
		return 0;
	if (!opts->stack_copy_budget)
		per_cpu = UINT64_MAX / 2;
	s->skel->rodata->ucopy_bytes = opts->stack_copy_bytes;
	s->skel->rodata->ucopy_rate = per_cpu;
	/* A tenth of a second of credit, and never less than one whole copy. */
	s->skel->rodata->ucopy_burst =
		per_cpu / 10 > opts->stack_copy_bytes ? per_cpu / 10 : opts->stack_copy_bytes;
	s->skel->rodata->ucopy_burst = s->skel->rodata->ucopy_burst > INT64_MAX / 2
					       ? INT64_MAX / 2
					       : s->skel->rodata->ucopy_burst;
	/* One buffer per possible CPU and one for the start iterator. */
	err = bpf_map__set_max_entries(s->skel->maps.ucopy, s->skel->rodata->nr_cpu_ids + 1);
	if (err)
		*step = "cannot size the stack copy buffers";
	return err;
}

_Static_assert(HC_CNT_UW_END_LAST - HC_CNT_UW_END + 1 == HC_UW_END_MAX,
	       "one counter per enum hc_uw_end");
_Static_assert(sizeof(struct hc_uw_proc) == 4096, "a process slot is a page");

/* --unwind table: the tables' two maps sized (before load). */
static int configure_tables(struct hc_sampler *s, const struct hc_sampler_opts *opts,
			    const char **step)
{
	uint32_t procs = opts->uw_procs ? (uint32_t)roundup_pow2(opts->uw_procs) : 512;
	uint32_t rows = (uint32_t)(((uint64_t)opts->uw_table_mb << 20) / sizeof(struct hc_urow));
	int err;

	if (!opts->uw_tables)
		return 0;
	if (!opts->uw_table_mb || opts->uw_table_mb > 2048 || procs > (1u << 16)) {
		*step = "unwind tables: 1 to 2048 MiB of rows, at most 65536 process slots";
		return -EINVAL;
	}
	s->skel->rodata->uw_tables = true;
	s->skel->rodata->uw_n_rows = rows;
	s->skel->rodata->uw_n_procs = procs;
	s->skel->rodata->uw_loaded_ns = (uint64_t)hc_clock_ns(CLOCK_BOOTTIME);
	err = bpf_map__set_max_entries(s->skel->maps.uw_rows, rows);
	if (!err)
		err = bpf_map__set_max_entries(s->skel->maps.uw_procs, procs);
	if (err)
		*step = "cannot size the unwind table maps";
	s->uw.n_rows = rows;
	s->uw.n_procs = procs;
	return err;
}

/* uw_rows is mapped in chunks of this many bytes, as rows are placed (a page multiple) */
#define UW_ROWS_CHUNK (256u << 10)

/* After load: uw_procs mapped shared, uw_rows's address range reserved (no access, no
 * memory) for hc_sampler__uw_map_rows() to map into, for the reader to publish into. */
static int map_tables(struct hc_sampler *s, const char **step)
{
	long page = sysconf(_SC_PAGESIZE);
	void *rows, *procs;

	if (!s->uw.n_rows)
		return 0;
	s->uw_rows_bytes = ((size_t)s->uw.n_rows * sizeof(struct hc_urow) + (size_t)page - 1) &
			   ~((size_t)page - 1);
	s->uw_procs_bytes = (size_t)s->uw.n_procs * sizeof(struct hc_uw_proc);
	/* A slot a page, mapped as used; otherwise the whole map now. */
	if (s->uw_procs_bytes % (size_t)page == 0 &&
	    sizeof(struct hc_uw_proc) % (size_t)page == 0) {
		s->uw_slot_mapped = calloc(s->uw.n_procs, sizeof(*s->uw_slot_mapped));
		if (!s->uw_slot_mapped) {
			*step = "cannot map the unwind table maps";
			return -ENOMEM;
		}
	}
	rows = mmap(NULL, s->uw_rows_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		    -1, 0);
	if (rows == MAP_FAILED)
		procs = MAP_FAILED;
	else if (s->uw_slot_mapped)
		procs = mmap(NULL, s->uw_procs_bytes, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	else
		procs = mmap(NULL, s->uw_procs_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			     bpf_map__fd(s->skel->maps.uw_procs), 0);
	if (procs == MAP_FAILED) {
		int err = -errno;

		if (rows != MAP_FAILED)
			munmap(rows, s->uw_rows_bytes);
		free(s->uw_slot_mapped);
		s->uw_slot_mapped = NULL;
		*step = "cannot map the unwind table maps";
		return err;
	}
	s->uw.rows = rows;
	s->uw.procs = procs;
	s->uw_rows_mapped = 0;
	return 0;
}

int hc_sampler__uw_map_rows(struct hc_sampler *s, uint32_t end)
{
	size_t want = (size_t)end * sizeof(struct hc_urow);
	void *at;

	if (!s->uw.rows || end > s->uw.n_rows)
		return -EINVAL;
	if (want <= s->uw_rows_mapped)
		return 0;
	want = (want + UW_ROWS_CHUNK - 1) & ~((size_t)UW_ROWS_CHUNK - 1);
	if (want > s->uw_rows_bytes)
		want = s->uw_rows_bytes;
	/* over the reservation: the map's pages from the same offset */
	at = mmap((char *)s->uw.rows + s->uw_rows_mapped, want - s->uw_rows_mapped,
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		  bpf_map__fd(s->skel->maps.uw_rows), (off_t)s->uw_rows_mapped);
	if (at == MAP_FAILED)
		return -errno;
	s->uw_rows_mapped = want;
	return 0;
}

int hc_sampler__uw_map_slot(struct hc_sampler *s, uint32_t slot)
{
	size_t off = (size_t)slot * sizeof(struct hc_uw_proc);
	void *at;

	if (!s->uw.procs || slot >= s->uw.n_procs)
		return -EINVAL;
	if (!s->uw_slot_mapped || s->uw_slot_mapped[slot])
		return 0;
	at = mmap((char *)s->uw.procs + off, sizeof(struct hc_uw_proc), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_FIXED, bpf_map__fd(s->skel->maps.uw_procs), (off_t)off);
	if (at == MAP_FAILED)
		return -errno;
	s->uw_slot_mapped[slot] = true;
	return 0;
}

static void unmap_tables(struct hc_sampler *s)
{
	if (s->uw.rows)
		munmap(s->uw.rows, s->uw_rows_bytes);
	if (s->uw.procs)
		munmap(s->uw.procs, s->uw_procs_bytes);
	s->uw.rows = NULL;
	s->uw.procs = NULL;
	free(s->uw_slot_mapped);
	s->uw_slot_mapped = NULL;
}

bool hc_sampler__uw_area(const struct hc_sampler *s, struct hc_sampler_uw_area *out)
{
	if (!s->uw.rows)
		return false;
	*out = s->uw;
	return true;
}

/* The ring buffer's size, then the programs into the kernel and the -p filter map. */
static int load(struct hc_sampler *s, const struct hc_sampler_opts *opts, const char **step)
{
	int err;

	s->ringbuf_bytes = opts->ringbuf_bytes ? roundup_pow2(opts->ringbuf_bytes)
					       : auto_ringbuf_bytes(opts->period_ns, s->n_cpus,
								    opts->stack_copy_bytes,
								    opts->stack_copy_budget);
	/* Wake the reader when a quarter of the buffer is full; otherwise it polls every 100 ms. */
	s->skel->rodata->wakeup_bytes = s->ringbuf_bytes / 4;
	s->skel->rodata->ucopy_max_pending = s->ringbuf_bytes / 2;
	err = bpf_map__set_max_entries(s->skel->maps.events, (__u32)s->ringbuf_bytes);
	if (err) {
		*step = "cannot size the ring buffer";
		return err;
	}
	err = sample_bpf__load(s->skel);
	if (err) {
		*step = "the kernel refused to load hotcold's BPF programs (run as root, or "
			"with CAP_BPF and CAP_PERFMON; -v shows the verifier log)";
		return err;
	}
	for (size_t k = 0; k < opts->n_tgids; k++) {
		__u8 one = 1;

		err = bpf_map__update_elem(s->skel->maps.tgids, &opts->tgids[k], sizeof(__u32),
					   &one, sizeof(one), BPF_ANY);
		if (err) {
			*step = "cannot fill the -p filter map (more than 1024 PIDs?)";
			return err;
		}
	}
	return 0;
}

/* A disabled cpu-clock event per CPU with the sampling program linked, the exec tracepoint,
 * the ring buffer's reader. */
static int attach(struct hc_sampler *s, const struct hc_sampler_opts *opts, const char **step)
{
	for (int i = 0; i < s->n_cpus; i++) {
		s->pfds[i] = perf_event_open_cpu(opts->period_ns, s->cpus[i]);
		if (s->pfds[i] < 0) {
			*step = "perf_event_open(cpu-clock) failed (kernel.perf_event_paranoid, "
				"or a CPU went offline)";
			return -errno;
		}
		/*
		 * A bare link, not bpf_program__attach_perf_event(): that one also enables the
		 * event, and samples would flow from here on, through the fork, the sandbox and
		 * the kernel symbols, all before the window hc_sampler__start() opens (a 300 ms
		 * capture at 5000 Hz counted up to four times the CPU time two CPUs have).
		 */
		s->link_fds[i] = bpf_link_create(bpf_program__fd(s->skel->progs.hc_sample),
						 s->pfds[i], BPF_PERF_EVENT, NULL);
		if (s->link_fds[i] < 0) {
			*step = "cannot attach the sampling program to a perf event";
			return -errno;
		}
	}
	s->exec_link = bpf_program__attach(s->skel->progs.hc_exec);
	if (!s->exec_link) {
		*step = "cannot attach to tp_btf/sched_process_exec";
		return -errno;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_event, s, NULL);
	if (!s->rb) {
		*step = "cannot map the ring buffer";
		return -errno;
	}
	return 0;
}

int hc_sampler__tables_supported(char *why, size_t why_len)
{
	int r = libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, BPF_FUNC_loop, NULL);

	if (r == 0)
		snprintf(why, why_len,
			 "this kernel has no bpf_loop() for perf_event programs (Linux 5.17 or "
			 "later has)");
	return r < 0 ? r : r > 0;
}

struct hc_sampler *hc_sampler__new(const struct hc_sampler_opts *opts,
				   const struct hc_sampler_callbacks *cb, char *why, size_t why_len)
{
	const char *step = "out of memory";
	struct hc_sampler *s;
	int err;

	if (!opts || !opts->period_ns) {
		snprintf(why, why_len, "invalid sampler options");
		errno = EINVAL;
		return NULL;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(why, why_len,
			 "this kernel has no BTF (/sys/kernel/btf/vmlinux): hotcold's CO-RE BPF "
			 "programs need a kernel built with CONFIG_DEBUG_INFO_BTF=y");
		errno = ENOTSUP;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(why, why_len, "%s", step);
		errno = ENOMEM;
		return NULL;
	}
	if (cb)
		s->cb = *cb;
	err = alloc_cpus(s, &step);
	if (!err) {
		s->skel = sample_bpf__open();
		if (!s->skel) {
			err = -errno;
			step = "cannot open the BPF object";
		}
	}
	if (!err)
		err = configure_tracking(s, opts, &step);
	if (!err)
		err = configure_copies(s, opts, &step);
	if (!err)
		err = configure_tables(s, opts, &step);
	if (!err)
		err = load(s, opts, &step);
	if (!err)
		err = map_tables(s, &step);
	if (!err)
		err = attach(s, opts, &step);
	if (!err)
		return s;
	snprintf(why, why_len, "%s", step);
	hc_sampler__free(s);
	errno = -err;
	return NULL;
}

void hc_sampler__free(struct hc_sampler *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	unmap_tables(s);
	bpf_link__destroy(s->exec_link);
	for (size_t i = 0; i < 2; i++)
		bpf_link__destroy(s->lock_links[i]);
	for (size_t i = 0; i < sizeof(s->sched_links) / sizeof(s->sched_links[0]); i++)
		bpf_link__destroy(s->sched_links[i]);
	for (int i = 0; s->link_fds && i < s->n_cpus; i++)
		if (s->link_fds[i] >= 0)
			close(s->link_fds[i]);
	for (int i = 0; s->pfds && i < s->n_cpus; i++)
		if (s->pfds[i] >= 0)
			close(s->pfds[i]);
	sample_bpf__destroy(s->skel);
	free(s->link_fds);
	free(s->busy_at_start);
	free(s->idle_ns);
	free(s->pfds);
	free(s->cpus);
	free(s);
}

static int set_enabled(struct hc_sampler *s, bool on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;

	for (int i = 0; i < s->n_cpus; i++)
		if (ioctl(s->pfds[i], req, 0) < 0)
			return -errno;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Run a task iterator to its end; *out holds everything it wrote (malloc'd). */
static int run_iter(struct bpf_program *prog, char **out, size_t *len)
{
	struct bpf_link *link = bpf_program__attach_iter(prog, NULL);
	size_t cap = 1 << 16, n = 0;
	char *buf = NULL;
	int fd, err = 0;

	*out = NULL;
	*len = 0;
	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
		goto out;
	}
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r;

		if (cap - n < (1 << 15)) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				err = -ENOMEM;
				goto out;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			err = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*out = buf;
	*len = n;
	buf = NULL;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	bpf_link__destroy(link);
	return err;
}

/* Records the iterators write, one after another: hand each to handle_event(). */
static void parse_iter_records(struct hc_sampler *s, char *buf, size_t len)
{
	size_t off = 0;

	while (off + sizeof(__u32) <= len) {
		__u32 type;
		size_t size;

		memcpy(&type, buf + off, sizeof(type));
		switch (type) {
		case HC_EVENT_ONCPU: {
			struct hc_oncpu_event o;

			if (off + sizeof(o) > len)
				goto bad;
			memcpy(&o, buf + off, sizeof(o));
			for (int i = 0; i < s->n_cpus; i++)
				if (s->cpus[i] == o.cpu)
					s->busy_at_start[i] = true;
			size = sizeof(o);
			break;
		}
		case HC_EVENT_END: {
			const struct hc_end_event *e = (const void *)(buf + off);

			size = sizeof(*e);
			if (off + size > len)
				goto bad;
			handle_event(s, (void *)&e->th, sizeof(e->th));
			for (int k = 0; k < 2; k++)
				if (e->ev[k].n_blocked || e->ev[k].n_preempted)
					handle_event(s, (void *)&e->ev[k], sizeof(e->ev[k]));
			break;
		}
		default:
			goto bad;
		}
		s->iter_records++;
		off += size;
	}
	if (off == len)
		return;
bad:
	/* A record we cannot frame: the rest of the stream is unreadable. */
	s->decode_errors++;
}

int hc_sampler__start(struct hc_sampler *s)
{
	/* Samples, idle and slices count from here; tasks asleep now are caught by the
	 * iterator. */
	s->window.start_ns = mono_ns();
	s->skel->bss->window_start_ns = s->window.start_ns;
	if (s->offcpu) {
		struct bpf_program *progs[] = {s->skel->progs.hc_switch, s->skel->progs.hc_wakeup,
					       s->skel->progs.hc_wakeup_new,
					       s->skel->progs.hc_exit};
		char *buf;
		size_t len;
		int err;

		for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
			s->sched_links[i] = bpf_program__attach(progs[i]);
			if (!s->sched_links[i])
				return -errno;
		}
		err = run_iter(s->skel->progs.hc_iter_start, &buf, &len);
		if (err)
			return err;
		parse_iter_records(s, buf, len);
		free(buf);
	}
	if (s->locks) {
		struct bpf_program *progs[] = {s->skel->progs.hc_lock_begin,
					       s->skel->progs.hc_lock_end};

		for (size_t i = 0; i < 2; i++) {
			s->lock_links[i] = bpf_program__attach(progs[i]);
			if (!s->lock_links[i])
				return -errno;
		}
	}
	return set_enabled(s, true);
}

void hc_sampler__unmap_reader(struct hc_sampler *s)
{
	ring_buffer__free(s->rb);
	s->rb = NULL;
	unmap_tables(s);
}

int hc_sampler__poll(struct hc_sampler *s, int timeout_ms)
{
	int n, m;

	if (!s->rb)
		return -EBADF;
	n = ring_buffer__poll(s->rb, timeout_ms);

	/* The BPF side wakes us only when a quarter of the buffer is full (BPF_RB_NO_WAKEUP
	 * below that): on a timeout ring_buffer__poll() consumes nothing, so without this
	 * records waited for the next wakeup, seconds later at low rates (serve's live view
	 * and its per-second histograms saw them in bursts). */
	if (n < 0 && n != -EINTR)
		return n;
	m = ring_buffer__consume(s->rb);
	if (m < 0)
		return m;
	return n == -EINTR ? -EINTR : n + m;
}

/* Idle time per CPU: closed idle intervals, the open one, and CPUs that never switched. */
static int compute_idle(struct hc_sampler *s)
{
	uint64_t win = s->window.end_ns - s->window.start_ns;

	for (int i = 0; i < s->n_cpus; i++) {
		struct hc_cpu_state cs;
		__u32 cpu = s->cpus[i];
		int err;

		if (cpu >= HC_MAX_CPUS)
			continue;
		err = bpf_map__lookup_elem(s->skel->maps.cpu_state, &cpu, sizeof(cpu), &cs,
					   sizeof(cs), 0);
		if (err)
			return err;
		if (!cs.last_switch_ns)
			s->idle_ns[i] = s->busy_at_start[i] ? 0 : win;
		else
			s->idle_ns[i] =
				cs.idle_ns + (cs.cur_idle && s->window.end_ns > cs.last_switch_ns
						      ? s->window.end_ns - cs.last_switch_ns
						      : 0);
		if (s->idle_ns[i] > win)
			s->idle_ns[i] = win;
	}
	return 0;
}

int hc_sampler__stop(struct hc_sampler *s)
{
	int err = set_enabled(s, false), n, e2 = 0;

	for (size_t i = 0; i < 2; i++) {
		bpf_link__destroy(s->lock_links[i]);
		s->lock_links[i] = NULL;
	}
	for (size_t i = 0; i < sizeof(s->sched_links) / sizeof(s->sched_links[0]); i++) {
		bpf_link__destroy(s->sched_links[i]);
		s->sched_links[i] = NULL;
	}
	s->window.end_ns = mono_ns();
	/* Events are disabled: what is in the buffer now is all there will be. */
	n = s->rb ? ring_buffer__consume(s->rb) : -EBADF;
	if (s->offcpu) {
		char *buf;
		size_t len;

		s->skel->bss->window_end_ns = s->window.end_ns;
		e2 = run_iter(s->skel->progs.hc_iter_end, &buf, &len);
		if (!e2) {
			parse_iter_records(s, buf, len);
			free(buf);
			e2 = compute_idle(s);
		}
	}
	if (err)
		return err;
	if (e2)
		return e2;
	return n < 0 ? n : 0;
}

void hc_sampler__window(const struct hc_sampler *s, struct hc_sampler_window *w)
{
	*w = s->window;
}

static const char *const lost_names[HC_CNT_MAX] = {
	[HC_CNT_RINGBUF_FULL] = "ringbuf_full",
	[HC_CNT_KSTACK_ERR] = "kstack_error",
	[HC_CNT_USTACK_ERR] = "ustack_error",
	[HC_CNT_EXEC_LOST] = "exec_lost",
	[HC_CNT_OFF_RINGBUF_FULL] = "offcpu_ringbuf_full",
	[HC_CNT_THIST_LOST] = "sched_hist_lost",
	[HC_CNT_WAKER_LOST] = "waker_lost",
	[HC_CNT_STATE_NOMEM] = "task_state_nomem",
	[HC_CNT_KSTACK_ERR_OFF] = "offcpu_kstack_error",
	[HC_CNT_USTACK_ERR_OFF] = "offcpu_ustack_error",
};

const char *hc_sampler__lost_name(int counter)
{
	return counter >= 0 && counter < HC_CNT_MAX ? lost_names[counter] : NULL;
}

int hc_sampler__counts(struct hc_sampler *s, struct hc_sampler_counts *out)
{
	int ncpu_possible = libbpf_num_possible_cpus();
	uint64_t *vals;
	int err = 0;

	if (ncpu_possible <= 0)
		return ncpu_possible ? ncpu_possible : -EINVAL;
	memset(out, 0, sizeof(*out));
	vals = calloc((size_t)ncpu_possible, sizeof(*vals));
	out->per_cpu = calloc((size_t)s->n_cpus * HC_CNT_MAX, sizeof(*out->per_cpu));
	out->cpus = malloc((size_t)s->n_cpus * sizeof(*out->cpus));
	if (!vals || !out->per_cpu || !out->cpus) {
		err = -ENOMEM;
		goto out;
	}
	out->n_cpus = (uint32_t)s->n_cpus;
	memcpy(out->cpus, s->cpus, (size_t)s->n_cpus * sizeof(*out->cpus));
	for (__u32 k = 0; k < HC_CNT_MAX; k++) {
		err = bpf_map__lookup_elem(s->skel->maps.counters, &k, sizeof(k), vals,
					   (size_t)ncpu_possible * sizeof(*vals), 0);
		if (err)
			goto out;
		for (int i = 0; i < s->n_cpus; i++) {
			uint32_t c = s->cpus[i];
			uint64_t v = (int)c < ncpu_possible ? vals[c] : 0;

			out->per_cpu[(size_t)i * HC_CNT_MAX + k] = v;
			out->total[k] += v;
		}
	}
	out->decode_errors = s->decode_errors;
	out->callback_errors = s->callback_errors;
	out->offcpu = s->offcpu;
	out->iter_records = s->iter_records;
	out->idle_ns = calloc((size_t)s->n_cpus, sizeof(*out->idle_ns));
	if (!out->idle_ns) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < s->n_cpus; i++) {
		out->idle_ns[i] = s->idle_ns[i];
		out->idle_total_ns += s->idle_ns[i];
	}
out:
	free(vals);
	if (err)
		hc_sampler_counts__release(out);
	return err;
}

void hc_sampler_counts__release(struct hc_sampler_counts *c)
{
	free(c->per_cpu);
	free(c->cpus);
	free(c->idle_ns);
	c->per_cpu = NULL;
	c->cpus = NULL;
	c->idle_ns = NULL;
}

size_t hc_sampler__ringbuf_bytes(const struct hc_sampler *s)
{
	return s->ringbuf_bytes;
}
