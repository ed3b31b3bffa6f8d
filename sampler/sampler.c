// SPDX-License-Identifier: GPL-2.0-only
#include "sampler/sampler.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "bpf/sample.skel.h"
#include "sampler/cpus.h"

struct hc_sampler {
	struct sample_bpf *skel;
	struct ring_buffer *rb;
	struct hc_sampler_callbacks cb;
	uint32_t *cpus;
	int n_cpus;
	int *pfds;                  /* perf event fd per online CPU, -1 if not opened */
	struct bpf_link **links;    /* BPF link per perf event */
	size_t ringbuf_bytes;
	uint64_t decode_errors;
	uint64_t callback_errors;
};

static __thread const char *last_error = "no error";

const char *hc_sampler__last_error(void)
{
	return last_error;
}

static size_t roundup_pow2(size_t v)
{
	size_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/*
 * Room for about half a second of samples at ~512 bytes each (user + kernel frames of a
 * typical stack), at least 4 MiB, at most 256 MiB. The reader normally drains every 100 ms
 * and is woken early at wakeup_bytes, so this is slack, not latency.
 */
static size_t auto_ringbuf_bytes(uint64_t period_ns, int n_cpus)
{
	uint64_t hz = period_ns ? 1000000000ull / period_ns : 1;
	uint64_t want = hz * (uint64_t)n_cpus * 512 / 2;

	if (want < (4u << 20))
		want = 4u << 20;
	if (want > (256u << 20))
		want = 256u << 20;
	return roundup_pow2((size_t)want);
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

		if (size < HC_SAMPLE_HDR_SIZE || size < HC_SAMPLE_HDR_SIZE + ul + kl) {
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

struct hc_sampler *hc_sampler__new(const struct hc_sampler_opts *opts,
				   const struct hc_sampler_callbacks *cb)
{
	struct hc_sampler *s;
	int err, i;

	if (!opts || !opts->period_ns) {
		last_error = "invalid sampler options";
		errno = EINVAL;
		return NULL;
	}
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		last_error = "this kernel has no BTF (/sys/kernel/btf/vmlinux): hotcold's CO-RE BPF "
			     "programs need a kernel built with CONFIG_DEBUG_INFO_BTF=y";
		errno = ENOTSUP;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		last_error = "out of memory";
		errno = ENOMEM;
		return NULL;
	}
	if (cb)
		s->cb = *cb;

	s->n_cpus = hc_cpulist__read(NULL, &s->cpus);
	if (s->n_cpus <= 0) {
		err = s->n_cpus ? s->n_cpus : -EINVAL;
		last_error = "cannot read the online CPUs from /sys/devices/system/cpu/online";
		goto err_free;
	}
	s->pfds = malloc((size_t)s->n_cpus * sizeof(*s->pfds));
	s->links = calloc((size_t)s->n_cpus, sizeof(*s->links));
	if (!s->pfds || !s->links) {
		err = -ENOMEM;
		last_error = "out of memory";
		goto err_free;
	}
	for (i = 0; i < s->n_cpus; i++)
		s->pfds[i] = -1;

	s->skel = sample_bpf__open();
	if (!s->skel) {
		err = -errno;
		last_error = "cannot open the BPF object";
		goto err_free;
	}
	s->skel->rodata->filter_tgid = opts->n_tgids > 0;
	s->ringbuf_bytes = opts->ringbuf_bytes ? roundup_pow2(opts->ringbuf_bytes)
					       : auto_ringbuf_bytes(opts->period_ns, s->n_cpus);
	/* Wake the reader when a quarter of the buffer is full; otherwise it polls every 100 ms. */
	s->skel->rodata->wakeup_bytes = s->ringbuf_bytes / 4;
	err = bpf_map__set_max_entries(s->skel->maps.events, (__u32)s->ringbuf_bytes);
	if (err) {
		last_error = "cannot size the ring buffer";
		goto err_free;
	}
	err = sample_bpf__load(s->skel);
	if (err) {
		last_error = "the kernel refused to load hotcold's BPF programs (run as root, or "
			     "with CAP_BPF and CAP_PERFMON; -v shows the verifier log)";
		goto err_free;
	}
	for (size_t k = 0; k < opts->n_tgids; k++) {
		__u8 one = 1;

		err = bpf_map__update_elem(s->skel->maps.tgids, &opts->tgids[k], sizeof(__u32),
					   &one, sizeof(one), BPF_ANY);
		if (err) {
			last_error = "cannot fill the -p filter map (more than 1024 PIDs?)";
			goto err_free;
		}
	}
	for (i = 0; i < s->n_cpus; i++) {
		s->pfds[i] = perf_event_open_cpu(opts->period_ns, s->cpus[i]);
		if (s->pfds[i] < 0) {
			err = -errno;
			last_error = "perf_event_open(cpu-clock) failed (kernel.perf_event_paranoid, "
				     "or a CPU went offline)";
			goto err_free;
		}
		s->links[i] = bpf_program__attach_perf_event(s->skel->progs.hc_sample, s->pfds[i]);
		if (!s->links[i]) {
			err = -errno;
			last_error = "cannot attach the sampling program to a perf event";
			goto err_free;
		}
	}
	err = sample_bpf__attach(s->skel); /* the tp_btf exec program */
	if (err) {
		last_error = "cannot attach to tp_btf/sched_process_exec";
		goto err_free;
	}
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), handle_event, s, NULL);
	if (!s->rb) {
		err = -errno;
		last_error = "cannot map the ring buffer";
		goto err_free;
	}
	return s;

err_free:
	hc_sampler__free(s);
	errno = -err;
	return NULL;
}

void hc_sampler__free(struct hc_sampler *s)
{
	if (!s)
		return;
	ring_buffer__free(s->rb);
	for (int i = 0; s->links && i < s->n_cpus; i++)
		bpf_link__destroy(s->links[i]);
	for (int i = 0; s->pfds && i < s->n_cpus; i++)
		if (s->pfds[i] >= 0)
			close(s->pfds[i]);
	sample_bpf__destroy(s->skel);
	free(s->links);
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

int hc_sampler__start(struct hc_sampler *s)
{
	return set_enabled(s, true);
}

int hc_sampler__poll(struct hc_sampler *s, int timeout_ms)
{
	return ring_buffer__poll(s->rb, timeout_ms);
}

int hc_sampler__stop(struct hc_sampler *s)
{
	int err = set_enabled(s, false), n;

	/* Events are disabled: what is in the buffer now is all there will be. */
	n = ring_buffer__consume(s->rb);
	if (err)
		return err;
	return n < 0 ? n : 0;
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
	c->per_cpu = NULL;
	c->cpus = NULL;
}

size_t hc_sampler__ringbuf_bytes(const struct hc_sampler *s)
{
	return s->ringbuf_bytes;
}
