// SPDX-License-Identifier: GPL-2.0-only
/* hotcold record: sample every CPU for a while, write one hotcold-profile/1 document. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "cli/timespec.h"
#include "privsep/broker.h"
#include "privsep/sandbox.h"
#include "profile/profile.h"
#include "sampler/aggregate.h"
#include "sampler/fill_counters.h"
#include "sampler/sampler.h"
#include "symbolize/symbolizer.h"

struct record_cfg {
	struct hc_common_args c; /* -F, -v, symbols, off-CPU settings */
	uint64_t duration_ns;
	uint32_t *tgids;
	size_t n_tgids;
	const char *output; /* NULL: stdout; a strftime pattern (cli/output.h) */
	enum hc_format format;
	unsigned int weights; /* --kind: HC_W_* for folded, pprof and speedscope */
	bool kind_set;
	const char *comm;
	bool wakers;
	bool locks;
	const char *user; /* the sandboxed worker's user */
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hotcold record [-F SPEC] [-d DURATION] [-p PID]... [-o FILE]\n"
		"                      [--format json|folded|pprof|speedscope] [--kind "
		"on|off|all]\n"
		"\n"
		"Sample every CPU (or only -p processes) with kernel and user stacks, then write "
		"a\n"
		"hotcold-profile/1 JSON document (docs/profile-schema.md) or folded stacks.\n"
		"\n"
		"  -F, --frequency SPEC  sampling rate, DTrace profile-n style: a number with an\n"
		"                        optional unit: hz (rate; the default for a bare number) "
		"or\n"
		"                        ns|nsec, us|usec, ms|msec, s|sec, m|min, h|hour, d|day\n"
		"                        (interval). Default 99 (Hz): not 100, so sampling does "
		"not\n"
		"                        run in lockstep with timers at 100 Hz and their "
		"multiples,\n"
		"                        which would hide or exaggerate periodic work. Intervals "
		"under\n"
		"                        200us (rates above 5000hz) are refused.\n"
		"  -d, --duration DUR    how long to sample: 500ms, 10s, 2m (bare number: "
		"seconds).\n"
		"                        Default 10s. SIGINT/SIGTERM end the capture early; the\n"
		"                        profile is still written complete.\n"
		"  -p, --pid PID         only these processes (repeat, or a comma list). The "
		"capture\n"
		"                        ends early when all of them have exited.\n"
		"  -o, --output FILE     write here; default stdout. FILE may be a strftime "
		"pattern,\n"
		"                        expanded in UTC at the start "
		"(/var/lib/hotcold/%%Y%%m%%dT%%H%%M%%SZ.json).\n"
		"                        Written to a hidden temporary file, fsync'd, renamed "
		"into\n"
		"                        place, under a lock (.FILE.lock): a killed capture "
		"leaves\n"
		"                        nothing that looks complete. Silent on success.\n"
		"      --comm NAME       only processes named NAME (the kernel keeps 15 bytes of "
		"a\n"
		"                        name; longer names are cut to 15)\n"
		"      --no-offcpu       on-CPU samples only: no scheduler tracing, no off-CPU or\n"
		"                        run-queue time, idle time or scheduler histograms\n"
		"      --min-block DUR   leave blocks shorter than DUR (e.g. 1ms) out of the "
		"flame\n"
		"                        graph; their time still counts in totals\n"
		"      --wakers          also take the waker's stack at each wakeup and show it\n"
		"                        above the blocked stack (offwaketime); costs more\n"
		"      --locks           kernel lock contention, lockstat style: spin and block\n"
		"                        time by lock kind and waiter stack (docs/locks.md)\n"
		"      --stack-budget N  off-CPU stack captures per second per CPU (default "
		"10000);\n"
		"                        beyond it intervals keep their time under [not captured]\n"
		"      --no-stack-reuse  take the stacks at every switch-out instead of reusing a\n"
		"                        thread's stacks while its switch-out context is "
		"unchanged\n"
		"      --format FMT      json (default: hotcold-profile/1, everything), folded\n"
		"                        (flamegraph.pl; ns), pprof (gzipped profile.proto, for "
		"go\n"
		"                        tool pprof) or speedscope; docs/formats.md\n"
		"      --kind KIND       what folded, pprof and speedscope carry: all (on-CPU,\n"
		"                        blocked and run-queue time; the default), on or off\n"
		"      --no-demangle     keep C++/Rust symbol names mangled\n"
		"      --no-inline       no inline frames from DWARF debug information\n"
		"      --user NAME       the user the sandboxed worker runs as (default nobody;\n"
		"                        root is refused): it reads the profiled programs' files\n"
		"                        and /proc text with no privileges (docs/security.md)\n"
		"  -v, --verbose         libbpf warnings and a summary on stderr\n"
		"  -h, --help            this text\n"
		"\n"
		"Exit codes: 0 ok, 64 usage, 66 no such process, 69 BPF/BTF/perf unavailable,\n"
		"70 internal error, 71 system error, 73 cannot create output, 74 write error\n"
		"(e.g. disk full; nothing is left behind), 75 another capture is writing FILE,\n"
		"77 not privileged (needs root or CAP_BPF+CAP_PERFMON).\n");
}

static int parse_pids(struct record_cfg *cfg, const char *arg)
{
	char *dup = strdup(arg), *save = NULL, *tok;
	int rc = 0;

	if (!dup)
		return EX_OSERR;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;
		unsigned long v;
		uint32_t *nt;

		errno = 0;
		v = strtoul(tok, &end, 10);
		if (errno || end == tok || *end || tok[0] == '-' || v == 0 || v > INT_MAX) {
			hc_err("-p %s: '%s' is not a process id", arg, tok);
			rc = EX_USAGE;
			break;
		}
		if (cfg->n_tgids >= 1024) {
			hc_err("-p: at most 1024 processes");
			rc = EX_USAGE;
			break;
		}
		nt = realloc(cfg->tgids, (cfg->n_tgids + 1) * sizeof(*nt));
		if (!nt) {
			rc = EX_OSERR;
			break;
		}
		cfg->tgids = nt;
		cfg->tgids[cfg->n_tgids++] = (uint32_t)v;
	}
	free(dup);
	return rc;
}

static uint64_t read_u64_file(const char *path)
{
	unsigned long long v = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

/* Returns 0 or an exit code; prints the reason. */
static int parse_args(int argc, char **argv, struct record_cfg *cfg)
{
	enum {
		OPT_FORMAT = 256,
		OPT_COMM,
		OPT_WAKERS,
		OPT_LOCKS,
		OPT_KIND,
		OPT_USER,
	};
	static const struct option opts[] = {
		HC_COMMON_LONGOPTS,
		{"duration", required_argument, NULL, 'd'},
		{"pid", required_argument, NULL, 'p'},
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"comm", required_argument, NULL, OPT_COMM},
		{"wakers", no_argument, NULL, OPT_WAKERS},
		{"locks", no_argument, NULL, OPT_LOCKS},
		{"kind", required_argument, NULL, OPT_KIND},
		{"user", required_argument, NULL, OPT_USER},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	char why[256];
	int c, rc;

	hc_common_args__init(&cfg->c);
	cfg->weights = HC_W_ALL;
	cfg->duration_ns = 10ull * 1000000000ull;
	cfg->user = "nobody";
	optind = 1;
	while ((c = getopt_long(argc, argv, "F:d:p:o:vh", opts, NULL)) != -1) {
		rc = hc_common_args__parse(&cfg->c, c, optarg);
		if (rc > 0)
			return rc;
		if (rc == 0)
			continue;
		switch (c) {
		case 'd':
			if (hc_duration__parse(optarg, &cfg->duration_ns, why, sizeof(why))) {
				hc_err("-d %s: %s", optarg, why);
				return EX_USAGE;
			}
			break;
		case 'p':
			rc = parse_pids(cfg, optarg);
			if (rc)
				return rc;
			break;
		case 'o':
			if (!*optarg) {
				hc_err("-o: empty file name");
				return EX_USAGE;
			}
			cfg->output = optarg;
			break;
		case OPT_FORMAT:
			if (hc_format__parse(optarg, &cfg->format)) {
				hc_err("--format %s: use json, folded, pprof or speedscope",
				       optarg);
				return EX_USAGE;
			}
			break;
		case OPT_KIND:
			if (hc_kind__parse(optarg, &cfg->weights)) {
				hc_err("--kind %s: use all, on or off", optarg);
				return EX_USAGE;
			}
			cfg->kind_set = true;
			break;
		case OPT_COMM:
			if (!*optarg) {
				hc_err("--comm: empty process name");
				return EX_USAGE;
			}
			cfg->comm = optarg;
			break;
		case OPT_USER:
			if (!*optarg) {
				hc_err("--user: empty user name");
				return EX_USAGE;
			}
			cfg->user = optarg;
			break;
		case OPT_WAKERS:
			cfg->wakers = true;
			break;
		case OPT_LOCKS:
			cfg->locks = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (cfg->c.no_offcpu &&
	    (hc_common_args__offcpu_tuned(&cfg->c) || cfg->wakers || cfg->locks)) {
		hc_err("--no-offcpu cannot be combined with --min-block, --wakers, --locks, "
		       "--stack-budget or --no-stack-reuse");
		return EX_USAGE;
	}
	if (cfg->kind_set && cfg->format == HC_FORMAT_JSON) {
		hc_err("--kind selects what folded, pprof and speedscope carry; json always "
		       "carries "
		       "every kind (give --format)");
		return EX_USAGE;
	}
	if (cfg->c.no_offcpu && cfg->kind_set && cfg->weights == (HC_W_OFF | HC_W_RUNQ)) {
		hc_err("--kind off with --no-offcpu would write an empty profile");
		return EX_USAGE;
	}
	if (optind < argc) {
		hc_err("unexpected argument '%s' (see hotcold record --help)", argv[optind]);
		return EX_USAGE;
	}
	if (hc_rate__check_kernel_max(&cfg->c.rate,
				      read_u64_file("/proc/sys/kernel/perf_event_max_sample_rate"),
				      why, sizeof(why))) {
		hc_err("-F: %s", why);
		return EX_USAGE;
	}
	return 0;
}

static int on_sample(void *ctx, const struct hc_sample_event *e, size_t size)
{
	return hc_agg__sample(*(struct hc_agg **)ctx, e, size);
}

static int on_exec(void *ctx, const struct hc_exec_event *e)
{
	return hc_agg__exec(*(struct hc_agg **)ctx, e);
}

static int on_offcpu(void *ctx, const struct hc_offcpu_event *e, size_t size)
{
	return hc_agg__offcpu(*(struct hc_agg **)ctx, e, size);
}

static int on_thist(void *ctx, const struct hc_thist_event *e)
{
	return hc_agg__thist(*(struct hc_agg **)ctx, e);
}

static int on_waker(void *ctx, const struct hc_waker_event *e, size_t size)
{
	return hc_agg__waker(*(struct hc_agg **)ctx, e, size);
}

static int on_ustack(void *ctx, const struct hc_ustack_event *e, size_t size)
{
	return hc_agg__ustack(*(struct hc_agg **)ctx, e, size);
}

static int on_lock(void *ctx, const struct hc_lock_event *e, size_t size)
{
	return hc_agg__lock(*(struct hc_agg **)ctx, e, size);
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Asked of the broker: the sandbox may not signal anybody (kill(pid, 0)), and its own /proc
 * may hide other users' processes (hidepid). A zombie still counts. */
static bool any_alive(const struct record_cfg *cfg, struct hc_broker_client *bc)
{
	for (size_t i = 0; i < cfg->n_tgids; i++)
		if (hc_broker_client__alive(bc, cfg->tgids[i]) != -ENOENT)
			return true;
	return false;
}

/* The `scheduler` section: the off-CPU settings, the SCHEDULER counters and the cpuunclaimed
 * series. */
static json_t *scheduler_json(const struct record_cfg *cfg, const struct hc_sampler_counts *cnt,
			      const struct hc_agg *agg, const struct hc_counters *c,
			      uint64_t duration_ns)
{
	double cpu_ns = (double)cnt->n_cpus * (double)duration_ns;
	size_t nsec;
	const uint64_t *per_s = hc_agg__unclaimed_per_second(agg, &nsec);
	json_t *ps = json_array(), *doc, *cu;

	doc = json_pack("{s:b, s:I, s:I, s:b, s:b}", "offcpu", 1, "min_block_ns",
			(json_int_t)cfg->c.min_block_ns, "stack_budget_per_cpu_s",
			(json_int_t)(cfg->c.stack_budget ? cfg->c.stack_budget : 10000),
			"stack_reuse", !cfg->c.no_stack_reuse, "wakers", cfg->wakers);
	for (size_t i = 0; ps && i < nsec; i++)
		if (json_array_append_new(ps, json_integer((json_int_t)per_s[i]))) {
			json_decref(ps);
			ps = NULL;
		}
	if (!doc || !ps || hc_counters__to_json(c, HC_F_SCHEDULER, doc))
		goto err;
	cu = json_object_get(doc, "cpu_unclaimed");
	if (json_object_set_new(
		    cu, "share",
		    json_real(cpu_ns > 0 ? (double)c->v[HC_C_SCHED_UNCLAIMED_NS] / cpu_ns : 0.0)) ||
	    json_object_set_new(cu, "per_second_ns", ps))
		goto err_doc;
	return doc;
err:
	json_decref(ps);
err_doc:
	json_decref(doc);
	return NULL;
}

/* A section holding family f's counters after the members doc already has. */
static json_t *section(json_t *doc, const struct hc_counters *c, enum hc_counter_family f)
{
	if (doc && hc_counters__to_json(c, f, doc)) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

static int fill_counters(struct hc_profile *p, const struct hc_counters *c)
{
	int err = 0;

	for (size_t i = 0; i < HC_C_MAX && !err; i++) {
		const struct hc_counter_def *d = &hc_counter_defs[i];

		if (d->family == HC_F_LOST)
			err = hc_profile__add_lost(p, d->key, c->v[i]);
		else if (d->family == HC_F_SYMBOLIZE)
			err = hc_profile__add_symbolize(p, d->key, c->v[i]);
	}
	return err;
}

static int fill_profile(struct hc_profile *p, const struct record_cfg *cfg,
			struct hc_sampler_counts *cnt, struct hc_agg *agg,
			struct hc_symbolizer *sym, const struct hc_unwinder *unw,
			int64_t started_at_ns, uint64_t duration_ns)
{
	struct hc_symbolizer_stats ss;
	struct hc_unwind_stats us = {0};
	struct hc_agg_lock_stats ls;
	struct hc_agg_stats as;
	struct hc_counters c = {0};
	struct hc_capture_figures f = {.cnt = cnt, .as = &as, .ls = &ls, .ss = &ss, .us = &us};
	struct utsname u;
	int err = 0;

	if (uname(&u) == 0) {
		p->host = strdup(u.nodename);
		p->kernel = strdup(u.release);
	}
	p->started_at_ns = started_at_ns;
	p->duration_ns = duration_ns;
	p->sampling.frequency_hz = cfg->c.rate.hz;
	p->sampling.period_ns = cfg->c.rate.period_ns;
	p->sampling.cpus = cnt->n_cpus;
	p->sampling.per_cpu = calloc(cnt->n_cpus, sizeof(*p->sampling.per_cpu));
	if (!p->sampling.per_cpu || !p->host || !p->kernel)
		return -ENOMEM;
	p->sampling.n_per_cpu = cnt->n_cpus;
	for (uint32_t i = 0; i < cnt->n_cpus; i++) {
		uint64_t expected = duration_ns / cfg->c.rate.period_ns;

		p->sampling.per_cpu[i].cpu = cnt->cpus[i];
		p->sampling.per_cpu[i].expected = expected;
		p->sampling.per_cpu[i].samples = cnt->per_cpu[(size_t)i * HC_CNT_MAX + HC_CNT_SEEN];
		p->sampling.per_cpu[i].idle_ns = cnt->idle_ns ? cnt->idle_ns[i] : 0;
		p->sampling.expected_samples += expected;
	}

	/* Every counter of the shared families, from the figures of the capture. */
	hc_agg__stats(agg, &as);
	hc_agg__lock_stats(agg, &ls);
	hc_symbolizer__stats(sym, &ss);
	if (unw)
		hc_unwinder__stats(unw, &us);
	hc_counters__fill_capture(&c, &f);
	c.v[HC_C_UNW_STACK_COPY_BYTES] = cfg->c.unwind_fp ? 0 : cfg->c.stack_copy_bytes;
	c.v[HC_C_UNW_COPY_BUDGET] = cfg->c.unwind_fp ? 0 : cfg->c.copy_budget;
	p->sampling.samples = c.v[HC_C_SAMPLES];
	p->sampling.idle_samples = c.v[HC_C_IDLE_SAMPLES];
	p->sampling.filtered_samples = c.v[HC_C_FILTERED_SAMPLES];
	err = fill_counters(p, &c);
	if (err)
		return err;
	if (cnt->offcpu) {
		p->totals.off_cpu_ns = as.off_ns;
		p->totals.runqueue_ns = as.runqueue_ns;
		p->totals.idle_ns = cnt->idle_total_ns;
		p->totals.cpu_unclaimed_ns = as.unclaimed_ns;
		p->scheduler = scheduler_json(cfg, cnt, agg, &c, duration_ns);
		if (!p->scheduler)
			return -ENOMEM;
	}

	if (cfg->locks) {
		p->locks = section(json_pack("{s:o}", "by_kind", hc_agg__lock_kinds_json(agg)), &c,
				   HC_F_LOCKS);
		p->lock_tree = hc_tree__new();
		if (!p->locks || !p->lock_tree)
			return -ENOMEM;
		err = hc_agg__build_lock_tree(agg, p->lock_tree);
		if (err)
			return err;
		hc_tree__sort(p->lock_tree);
	}

	p->unwind = section(json_pack("{s:s}", "mode", cfg->c.unwind_fp ? "fp" : "dwarf"), &c,
			    HC_F_UNWIND);
	if (!p->unwind)
		return -ENOMEM;

	p->totals.on_cpu_ns = as.samples * cfg->c.rate.period_ns;
	p->totals.kernel_samples = as.kernel_samples;
	p->totals.user_samples = as.user_samples;
	return 0;
}

/*
 * The sandboxed half: everything after the BPF objects exist. Runs as --user with no
 * capabilities under the worker seccomp allow-list; gets its files from the broker on
 * broker_fd; finishes early when asked on stop_fd (privsep/broker.h: the stop line) or on a
 * signal; writes the profile to out->f (opened by the privileged half, which commits it when
 * we exit 0). Returns the exit code.
 */
static int record_worker(const struct record_cfg *cfg, struct hc_sampler *sampler,
			 struct hc_agg **aggp, struct hc_output *out, int broker_fd, int stop_fd)
{
	struct hc_broker_client bc = {.sock = broker_fd};
	struct hc_symbolizer_opts sopts = {0};
	struct hc_sampler_counts cnt = {0};
	struct hc_symbolizer_io io;
	struct hc_symbolizer *sym = NULL;
	struct hc_profile *prof = NULL;
	struct hc_unwinder *unw = NULL;
	struct hc_agg *agg = NULL;
	uint64_t t0, t1, t_tree, t_enc, deadline;
	struct hc_sampler_window win;
	int64_t started_at;
	int rc = 0, err, ksym_err;

	hc_broker_client__io(&bc, &io);
	sopts.no_demangle = cfg->c.no_demangle;
	sopts.no_inline = cfg->c.no_inline;
	sopts.io = &io;
	sym = hc_symbolizer__new(&sopts);
	if (!sym) {
		rc = EX_OSERR;
		goto out;
	}
	ksym_err = hc_symbolizer__load_kernel(sym);
	agg = hc_agg__new(sym, cfg->c.rate.period_ns);
	if (!agg) {
		rc = EX_OSERR;
		goto out;
	}
	if (!cfg->c.unwind_fp) {
		unw = hc_unwinder__new(sym);
		if (!unw) {
			rc = EX_OSERR;
			goto out;
		}
		hc_agg__set_unwinder(agg, unw);
	}
	*aggp = agg;
	/* Snapshot the -p processes now, before any sample. */
	for (size_t i = 0; i < cfg->n_tgids; i++)
		hc_symbolizer__add_process(sym, cfg->tgids[i], 0);

	/* Said once sampling is sure to run, not only with -v: a capture whose kernel frames
	 * are all [unknown] is degraded, and a cron job should say so (CAP_SYSLOG missing, or
	 * kallsyms hidden by a sandbox). */
	if (ksym_err)
		hc_err("warning: kernel symbols unavailable (%s): kernel frames stay [unknown]",
		       strerror(-ksym_err));

	started_at = (int64_t)now_ns(CLOCK_REALTIME);
	t0 = now_ns(CLOCK_MONOTONIC);
	err = hc_sampler__start(sampler);
	if (err) {
		hc_err("cannot start sampling (scheduler tracepoints, task iterator or perf "
		       "events): %s",
		       strerror(-err));
		rc = EX_UNAVAILABLE;
		goto out;
	}
	hc_sampler__window(sampler, &win);
	hc_agg__set_window_start(agg, win.start_ns);
	/* Loading, the split and the sandbox come first (tenths of a second, more on a loaded
	 * machine): the window, and so the profile, starts here, not at the command. */
	if (cfg->c.verbose)
		fprintf(stderr, "hotcold: sampling every %llu ns; the window is open\n",
			(unsigned long long)cfg->c.rate.period_ns);
	deadline = t0 + cfg->duration_ns;
	while (!hc_stop_requested) {
		uint64_t now = now_ns(CLOCK_MONOTONIC);
		int64_t left_ms;

		if (now >= deadline)
			break;
		left_ms = (int64_t)((deadline - now + 999999) / 1000000);
		err = hc_sampler__poll(sampler, left_ms < 100 ? (int)left_ms : 100);
		if (err < 0 && err != -EINTR) {
			hc_err("reading the ring buffer: %s", strerror(-err));
			rc = EX_OSERR;
			goto out;
		}
		if (cfg->n_tgids && !any_alive(cfg, &bc))
			break;
		if (hc_stopline__asked(stop_fd))
			break;
	}
	err = hc_sampler__stop(sampler);
	t1 = now_ns(CLOCK_MONOTONIC);
	if (err)
		hc_err("warning: stopping the sampler: %s", strerror(-err));
	hc_sampler__window(sampler, &win);
	err = hc_sampler__counts(sampler, &cnt);
	if (err) {
		hc_err("reading the BPF counters: %s", strerror(-err));
		rc = EX_OSERR;
		goto out;
	}
	/* BPF is no longer needed here: our copies of programs, links and perf events go
	 * before the (possibly slow) symbolization; the privileged half releases its own. */
	hc_sampler__free(sampler);
	sampler = NULL;

	prof = hc_profile__new();
	if (!prof) {
		rc = EX_OSERR;
		goto out;
	}
	/* With off-CPU tracking the window is the scheduler programs' (idle and off-CPU time
	 * are measured against it); the perf events run inside it. */
	/* The tree first: building it symbolizes, and the profile's symbolize counters
	 * (unresolved frames...) are read after. */
	err = hc_agg__build_tree(agg, prof->tree);
	if (!err)
		err = fill_profile(prof, cfg, &cnt, agg, sym, unw, started_at,
				   cnt.offcpu ? win.end_ns - win.start_ns : t1 - t0);
	t_tree = now_ns(CLOCK_MONOTONIC);
	if (err) {
		hc_err("building the profile: %s", strerror(-err));
		rc = EX_OSERR;
		goto out;
	}
	for (uint32_t i = 0; i < cnt.n_cpus; i++)
		hc_agg__idle_samples(agg, cnt.cpus[i],
				     cnt.per_cpu[(size_t)i * HC_CNT_MAX + HC_CNT_IDLE]);
	{
		json_t *prio = hc_hist__to_json(hc_agg__priority(agg));
		json_t *runq = hc_hist__to_json(hc_agg__runqueue_length(agg));
		static const char *const names[HC_TH_MAX] = {
			[HC_TH_SLICE] = "oncpu_slice_us",
			[HC_TH_OFF] = "offcpu_us",
			[HC_TH_RUNQ] = "runqueue_latency_us",
		};
		bool bad = !prio || json_object_set_new(prof->histograms, "priority", prio) ||
			   !runq || json_object_set_new(prof->histograms, "runqueue_length", runq);

		for (int h = 0; h < HC_TH_MAX && !bad && cnt.offcpu; h++) {
			json_t *j = hc_hist__to_json(hc_agg__sched_hist(agg, (enum hc_thist)h));

			bad = !j || json_object_set_new(prof->histograms, names[h], j);
		}
		if (!bad && cfg->locks) {
			json_t *j = hc_hist__to_json(hc_agg__lock_hist(agg));

			bad = !j || json_object_set_new(prof->histograms, "lock_wait_ns", j);
		}
		if (bad) {
			hc_err("building the histograms: out of memory");
			rc = EX_OSERR;
			goto out;
		}
	}
	hc_tree__sort(prof->tree);
	err = hc_format__write(prof, cfg->format, cfg->weights, out->f);
	/* Flushed here: the privileged half only syncs and renames what we wrote. */
	if (!err && (fflush(out->f) != 0 || ferror(out->f)))
		err = -(errno ? errno : EIO);
	t_enc = now_ns(CLOCK_MONOTONIC);
	if (err) {
		hc_err("writing %s: %s", out->path ? out->path : "the profile to stdout",
		       strerror(-err));
		rc = EX_IOERR;
		goto out;
	}
	if (cfg->c.verbose) {
		fprintf(stderr,
			"hotcold: %llu samples (%llu idle) on %u CPUs in %.3f s, expected %llu; "
			"%zu distinct stacks, %zu nodes; written %.1f ms after the window closed "
			"(symbolize+tree %.1f ms, encode %.1f ms)\n",
			(unsigned long long)prof->sampling.samples,
			(unsigned long long)prof->sampling.idle_samples, prof->sampling.cpus,
			(double)(t1 - t0) / 1e9,
			(unsigned long long)prof->sampling.expected_samples,
			hc_agg__stack_count(agg), hc_tree__node_count(prof->tree),
			(double)(now_ns(CLOCK_MONOTONIC) - t1) / 1e6, (double)(t_tree - t1) / 1e6,
			(double)(t_enc - t_tree) / 1e6);
	}
out:
	hc_profile__free(prof);
	hc_sampler_counts__release(&cnt);
	hc_sampler__free(sampler);
	hc_agg__free(agg);
	hc_unwinder__free(unw);
	hc_symbolizer__free(sym);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	struct record_cfg cfg = {0};
	struct hc_sampler_opts popts = {0};
	struct hc_sampler_callbacks cb;
	struct hc_sampler *sampler = NULL;
	struct hc_broker_stats bstats = {0};
	struct hc_output out = {0};
	struct hc_agg *agg = NULL; /* set by the worker, read by the callbacks */
	char comm[HC_TASK_COMM_LEN];
	int rc, err, status, sv[2] = {-1, -1}, line[2] = {-1, -1};
	pid_t parent, child;

	rc = parse_args(argc, argv, &cfg);
	if (rc)
		goto out;
	/* From here on SIGINT/SIGTERM only end the capture early: the output, once opened, is
	 * always committed or removed, never left half-made by the default action. */
	hc_catch_stop_signals();
	hc_libbpf_verbose(cfg.c.verbose);
	for (size_t i = 0; i < cfg.n_tgids; i++) {
		if (kill((pid_t)cfg.tgids[i], 0) != 0 && errno == ESRCH) {
			hc_err("-p %u: no such process", cfg.tgids[i]);
			rc = EX_NOINPUT;
			goto out;
		}
	}
	/* Create the output first: a bad path fails now, not after the capture. */
	rc = hc_output__open(&out, cfg.output, time(NULL));
	if (!rc && hc_format__refuse_tty(cfg.format, out.f))
		rc = EX_USAGE;
	if (rc)
		goto out;

	hc_raise_nofile_limit();
	cb = (struct hc_sampler_callbacks){.sample = on_sample,
					   .exec = on_exec,
					   .offcpu = on_offcpu,
					   .thist = on_thist,
					   .waker = on_waker,
					   .ustack = on_ustack,
					   .lock = on_lock,
					   .ctx = &agg};
	popts.period_ns = cfg.c.rate.period_ns;
	popts.tgids = cfg.tgids;
	popts.n_tgids = cfg.n_tgids;
	popts.no_offcpu = cfg.c.no_offcpu;
	popts.min_block_ns = cfg.c.min_block_ns;
	popts.wakers = cfg.wakers;
	popts.locks = cfg.locks;
	popts.no_stack_reuse = cfg.c.no_stack_reuse;
	popts.stack_budget = cfg.c.stack_budget;
	popts.stack_copy_bytes = cfg.c.unwind_fp ? 0 : cfg.c.stack_copy_bytes;
	popts.stack_copy_budget = cfg.c.copy_budget;
	if (cfg.comm) {
		snprintf(comm, sizeof(comm), "%s", cfg.comm); /* the kernel's 15 bytes */
		popts.comm = comm;
	}
	sampler = hc_sampler__new(&popts, &cb);
	if (!sampler) {
		err = errno;
		hc_err("%s: %s", hc_sampler__last_error(), strerror(err));
		rc = (err == EPERM || err == EACCES) ? EX_NOPERM : EX_UNAVAILABLE;
		goto out;
	}

	/* The split: from here everything that reads what users control runs in a child with
	 * no privileges (privsep/); we keep the BPF objects alive and open files for it. */
	err = hc_broker__socketpair(sv);
	if (!err)
		err = hc_stopline__new(line);
	if (err) {
		hc_err("socketpair: %s", strerror(-err));
		rc = EX_OSERR;
		goto out;
	}
	fflush(NULL);
	parent = getpid();
	child = fork();
	if (child < 0) {
		hc_err("fork: %s", strerror(errno));
		rc = EX_OSERR;
		goto out;
	}
	if (child == 0) {
		char why[256];

		close(sv[0]);
		close(line[1]);
		/* The lock is the parent's to hold and release: were we to keep a copy, a next
		 * capture could find it held for a moment after a SIGKILL and keep the killed
		 * one's leftovers. */
		if (out.lock_fd >= 0)
			close(out.lock_fd);
		/* A killed parent takes us along (PR_SET_PDEATHSIG, armed by the sandbox after
		 * the drop): nothing outlives it holding its BPF objects. */
		err = hc_sandbox__enter(HC_SANDBOX_WORKER, cfg.user, parent, why, sizeof(why));
		if (err) {
			hc_err("%s", why);
			_exit(err == -ESRCH ? EX_OSERR : EX_NOPERM);
		}
		_exit(record_worker(&cfg, sampler, &agg, &out, sv[1], line[0]));
	}
	close(sv[1]);
	sv[1] = -1;
	close(line[0]);
	line[0] = -1;
	err = hc_broker__serve(sv[0], line[1], &hc_stop_requested, NULL, &bstats);
	if (err)
		hc_err("serving the sandboxed worker: %s", strerror(-err));
	close(sv[0]);
	sv[0] = -1;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	/* Release programs, links and perf events before committing the output. */
	hc_sampler__free(sampler);
	sampler = NULL;
	rc = hc_child_exit_code(status, "sandboxed worker");
	if (!rc)
		rc = hc_output__commit(&out);
	if (cfg.c.verbose)
		fprintf(stderr,
			"hotcold: broker: %llu requests, %llu descriptors passed, %llu refused\n",
			(unsigned long long)bstats.requests, (unsigned long long)bstats.opened,
			(unsigned long long)bstats.refused);
out:
	if (sv[0] >= 0)
		close(sv[0]);
	if (sv[1] >= 0)
		close(sv[1]);
	for (int i = 0; i < 2; i++)
		if (line[i] >= 0)
			close(line[i]);
	hc_output__abort(&out);
	hc_sampler__free(sampler);
	free(cfg.tgids);
	return rc;
}
