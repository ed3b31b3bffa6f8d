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
#include "base/time.h"
#include "base/timespec.h"
#include "privsep/broker.h"
#include "privsep/run.h"
#include "profile/tree.h"
#include "profile/weights.h"
#include "profile/profile.h"
#include "capture/capture.h"
#include "capture/record_sink.h"
#include "sampler/sampler.h"
#include "symbolize/symbolizer.h"
#include "symbolize/uwpub.h"

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
	return hc_common_args__settle_unwind(&cfg->c);
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

/* The sandboxed half's pipeline: the symbolizer, the unwinder, record's sink. */
struct worker {
	struct hc_symbolizer *sym;
	struct hc_unwinder *unw; /* NULL: --unwind fp or table */
	struct hc_uwpub *pub;	 /* --unwind table */
	struct hc_record_sink *rs;
	struct hc_capture *cap;
};

static void worker__release(struct worker *w)
{
	hc_capture__free(w->cap);
	hc_record_sink__free(w->rs);
	hc_uwpub__free(w->pub);
	hc_unwinder__free(w->unw);
	hc_symbolizer__free(w->sym);
}

/* 0 and the kernel symbols' error in *ksym_err, or -errno. */
static int worker__init(struct worker *w, const struct record_cfg *cfg,
			const struct hc_symbolizer_io *io, struct hc_sampler *sampler,
			int *ksym_err)
{
	struct hc_symbolizer_opts sopts = {
		.no_demangle = cfg->c.no_demangle, .no_inline = cfg->c.no_inline, .io = io};
	struct hc_capture_opts copts = {.period_ns = cfg->c.rate.period_ns};
	struct hc_capture_sink sink;

	w->sym = hc_symbolizer__new(&sopts);
	if (!w->sym)
		return -errno;
	*ksym_err = hc_symbolizer__load_kernel(w->sym);
	if (cfg->c.unwind_table) {
		w->pub = hc_capture__uwpub_new(w->sym, sampler);
		if (!w->pub)
			return -errno;
	} else if (!cfg->c.unwind_fp) {
		w->unw = hc_unwinder__new(w->sym);
		if (!w->unw)
			return -errno;
	}
	w->rs = hc_record_sink__new();
	if (!w->rs)
		return -errno;
	sink = hc_record_sink__sink(w->rs);
	w->cap = hc_capture__new(&copts, w->sym, w->unw, &sink);
	if (!w->cap)
		return -errno;
	hc_capture__set_uwpub(w->cap, w->pub);
	return 0;
}

/* What the document says of the capture's settings; the window's start is now. */
static struct hc_record_doc record_doc(const struct record_cfg *cfg, const struct worker *w,
				       const struct hc_sampler_counts *cnt)
{
	return (struct hc_record_doc){
		.frequency_hz = cfg->c.rate.hz,
		.period_ns = cfg->c.rate.period_ns,
		.min_block_ns = cfg->c.min_block_ns,
		.stack_budget = cfg->c.stack_budget,
		.no_stack_reuse = cfg->c.no_stack_reuse,
		.wakers = cfg->wakers,
		.locks = cfg->locks,
		.unwind_fp = cfg->c.unwind_fp,
		.unwind_table = cfg->c.unwind_table,
		.unwind_table_mb = cfg->c.unwind_table_mb,
		.stack_copy_bytes = cfg->c.stack_copy_bytes,
		.copy_budget = cfg->c.copy_budget,
		.cnt = cnt,
		.sym = w->sym,
		.unw = w->unw,
		.pub = w->pub,
		.started_at_ns = hc_clock_ns(CLOCK_REALTIME),
	};
}

/* Drain the sampler into the pipeline from t0 (the monotonic clock) until the duration, a
 * signal, the stop line or the end of every -p process. 0 or the exit code. */
static int sample_window(const struct record_cfg *cfg, struct hc_sampler *sampler,
			 struct hc_broker_client *bc, int stop_fd, uint64_t t0)
{
	uint64_t deadline = t0 + cfg->duration_ns;
	int err;

	while (!hc_stop_requested) {
		uint64_t now = hc_mono_ns();
		int64_t left_ms;

		if (now >= deadline)
			break;
		left_ms = (int64_t)((deadline - now + 999999) / 1000000);
		err = hc_sampler__poll(sampler, left_ms < 100 ? (int)left_ms : 100);
		if (err < 0 && err != -EINTR) {
			hc_err("reading the ring buffer: %s", strerror(-err));
			return EX_OSERR;
		}
		if (cfg->n_tgids && !any_alive(cfg, bc))
			break;
		if (hc_stopline__asked(stop_fd))
			break;
	}
	return 0;
}

/* The document (capture/record_sink.h) written to out; the exit code. */
static int write_profile(const struct record_cfg *cfg, struct worker *w, struct hc_output *out,
			 const struct hc_record_doc *doc, uint64_t t0, uint64_t t1)
{
	struct hc_profile *prof = hc_profile__new();
	size_t stacks = hc_capture__stack_count(w->cap);
	uint64_t t_tree, t_enc;
	int err, rc = 0;

	if (!prof)
		return EX_OSERR;
	err = hc_record_sink__document(w->rs, w->cap, prof, doc);
	t_tree = hc_mono_ns();
	if (err) {
		hc_err("building the profile: %s", strerror(-err));
		rc = EX_OSERR;
		goto out;
	}
	err = hc_format__write(prof, cfg->format, cfg->weights, out->f);
	/* Flushed here: the privileged half only syncs and renames what we wrote. */
	if (!err && (fflush(out->f) != 0 || ferror(out->f)))
		err = -(errno ? errno : EIO);
	t_enc = hc_mono_ns();
	if (err) {
		hc_err("writing %s: %s", out->path ? out->path : "the profile to stdout",
		       strerror(-err));
		rc = EX_IOERR;
		goto out;
	}
	if (cfg->c.verbose)
		fprintf(stderr,
			"hotcold: %llu samples (%llu idle) on %u CPUs in %.3f s, expected %llu; "
			"%zu distinct stacks, %zu nodes; written %.1f ms after the window closed "
			"(symbolize+tree %.1f ms, encode %.1f ms)\n",
			(unsigned long long)prof->sampling.samples,
			(unsigned long long)prof->sampling.idle_samples, prof->sampling.cpus,
			(double)(t1 - t0) / 1e9,
			(unsigned long long)prof->sampling.expected_samples, stacks,
			hc_tree__node_count(prof->tree), (double)(hc_mono_ns() - t1) / 1e6,
			(double)(t_tree - t1) / 1e6, (double)(t_enc - t_tree) / 1e6);
out:
	hc_profile__free(prof);
	return rc;
}

/*
 * The sandboxed half: everything after the BPF objects exist. Runs as --user with no
 * capabilities under the worker seccomp allow-list; gets its files from the broker on
 * broker_fd; finishes early when asked on stop_fd (privsep/broker.h: the stop line) or on a
 * signal; writes the profile to out->f (opened by the privileged half, which commits it when
 * we exit 0). *capp is the pipeline the sampler's callbacks read. Returns the exit code.
 */
static int record_worker(const struct record_cfg *cfg, struct hc_sampler *sampler,
			 struct hc_capture **capp, struct hc_output *out, int broker_fd,
			 int stop_fd)
{
	struct hc_broker_client bc = {.sock = broker_fd};
	struct hc_sampler_counts cnt = {0};
	struct hc_sampler_window win;
	struct hc_symbolizer_io io;
	struct worker w = {0};
	struct hc_record_doc doc;
	uint64_t t0, t1;
	int rc, err, ksym_err = 0;

	hc_broker_client__io(&bc, &io);
	if (worker__init(&w, cfg, &io, sampler, &ksym_err)) {
		rc = EX_OSERR;
		goto out;
	}
	*capp = w.cap;
	/* Snapshot the -p processes now, before any sample; --unwind table: and publish their
	 * tables, so that the start iterator walks their sleeping threads too. */
	for (size_t i = 0; i < cfg->n_tgids; i++) {
		struct hc_sym_proc *p = NULL;

		hc_symbolizer__process(w.sym, cfg->tgids[i], 0, &p);
		if (w.pub && p)
			(void)hc_uwpub__process(w.pub, p);
	}
	/* every process, without -p (the window is not open yet: this is not sampled time) */
	if (w.pub && !cfg->n_tgids) {
		size_t n = 0;
		uint64_t t = hc_mono_ns();

		err = hc_uwpub__publish_running(w.pub, &n);
		if (cfg->c.verbose)
			fprintf(stderr,
				"hotcold: unwind tables of %zu processes published in %.0f ms%s\n",
				n, (double)(hc_mono_ns() - t) / 1e6, err ? " (out of memory)" : "");
	}

	/* Said once sampling is sure to run, not only with -v: a capture whose kernel frames
	 * are all [unknown] is degraded, and a cron job should say so (CAP_SYSLOG missing, or
	 * kallsyms hidden by a sandbox). */
	if (ksym_err)
		hc_err("warning: kernel symbols unavailable (%s): kernel frames stay [unknown]",
		       strerror(-ksym_err));

	doc = record_doc(cfg, &w, &cnt);
	t0 = hc_mono_ns();
	err = hc_sampler__start(sampler);
	if (err) {
		hc_err("cannot start sampling (scheduler tracepoints, task iterator or perf "
		       "events): %s",
		       strerror(-err));
		rc = EX_UNAVAILABLE;
		goto out;
	}
	hc_sampler__window(sampler, &win);
	hc_capture__set_window_start(w.cap, win.start_ns);
	/* Loading, the split and the sandbox come first (tenths of a second, more on a loaded
	 * machine): the window, and so the profile, starts here, not at the command. */
	if (cfg->c.verbose)
		fprintf(stderr,
			"hotcold: sampling every %llu ns; the window is open (%.0f ms to open "
			"it)\n",
			(unsigned long long)cfg->c.rate.period_ns,
			(double)(hc_mono_ns() - t0) / 1e6);
	rc = sample_window(cfg, sampler, &bc, stop_fd, t0);
	if (rc)
		goto out;
	err = hc_sampler__stop(sampler);
	t1 = hc_mono_ns();
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
	 * before the (possibly slow) symbolization; the privileged half releases its own.
	 * The unwind tables' memory goes with them: nothing is published from here on. */
	hc_capture__set_uwpub(w.cap, NULL);
	hc_sampler__free(sampler);
	sampler = NULL;
	/* With off-CPU tracking the window is the scheduler programs' (idle and off-CPU time
	 * are measured against it); the perf events run inside it. */
	doc.duration_ns = cnt.offcpu ? win.end_ns - win.start_ns : t1 - t0;
	rc = write_profile(cfg, &w, out, &doc, t0, t1);
out:
	hc_sampler_counts__release(&cnt);
	hc_sampler__free(sampler);
	worker__release(&w);
	return rc;
}

/* The sandboxed worker's view of cmd_record's state. */
struct record_split {
	const struct record_cfg *cfg;
	struct hc_sampler *sampler;
	struct hc_capture **capp; /* set by the worker, read by the callbacks */
	struct hc_output *out;
};

static int record_worker_main(void *ctx, const struct hc_privsep_child *child)
{
	struct record_split *r = ctx;

	return record_worker(r->cfg, r->sampler, r->capp, r->out, child->broker_fd, child->stop_fd);
}

static int record_refused(void *ctx, int err, const char *why)
{
	(void)ctx;
	return hc_sandbox_refused("", err, why);
}

/* Nothing to sample, or nothing to write to: 0, or an exit code after printing why. */
static int record_prepare(const struct record_cfg *cfg, struct hc_output *out)
{
	int rc;

	for (size_t i = 0; i < cfg->n_tgids; i++) {
		if (kill((pid_t)cfg->tgids[i], 0) != 0 && errno == ESRCH) {
			hc_err("-p %u: no such process", cfg->tgids[i]);
			return EX_NOINPUT;
		}
	}
	/* Create the output first: a bad path fails now, not after the capture. */
	rc = hc_output__open(out, cfg->output, time(NULL));
	if (!rc && hc_format__refuse_tty(cfg->format, out->f))
		rc = EX_USAGE;
	return rc;
}

/* Load and attach the BPF side, its records to *capp once the worker sets it: 0, or an exit
 * code after printing why. */
static int record_load(const struct record_cfg *cfg, struct hc_capture **capp,
		       struct hc_sampler **samplerp)
{
	const struct hc_sampler_callbacks cb = hc_capture__sampler_callbacks(capp);
	struct hc_sampler_opts popts = {
		.period_ns = cfg->c.rate.period_ns,
		.tgids = cfg->tgids,
		.n_tgids = cfg->n_tgids,
		.no_offcpu = cfg->c.no_offcpu,
		.min_block_ns = cfg->c.min_block_ns,
		.wakers = cfg->wakers,
		.locks = cfg->locks,
		.no_stack_reuse = cfg->c.no_stack_reuse,
		.stack_budget = cfg->c.stack_budget,
		.stack_copy_bytes =
			cfg->c.unwind_fp || cfg->c.unwind_table ? 0 : cfg->c.stack_copy_bytes,
		.stack_copy_budget = cfg->c.copy_budget,
		.uw_tables = cfg->c.unwind_table,
		.uw_table_mb = cfg->c.unwind_table_mb,
	};
	char comm[HC_TASK_COMM_LEN], why[256];
	int err;

	hc_raise_nofile_limit();
	if (cfg->comm) {
		snprintf(comm, sizeof(comm), "%s", cfg->comm); /* the kernel's 15 bytes */
		popts.comm = comm;
	}
	*samplerp = hc_sampler__new(&popts, &cb, why, sizeof(why));
	if (!*samplerp) {
		err = errno;
		hc_err("%s: %s", why, strerror(err));
		return (err == EPERM || err == EACCES) ? EX_NOPERM : EX_UNAVAILABLE;
	}
	return 0;
}

/*
 * The split: from here everything that reads what users control runs in a child with no
 * privileges (privsep/run.h); we keep the BPF objects alive and open files for it, then commit
 * the output once it exited 0. Takes *samplerp (freed here). The exit code.
 */
static int record_split(const struct record_cfg *cfg, struct hc_sampler **samplerp,
			struct hc_capture **capp, struct hc_output *out)
{
	struct record_split r = {.cfg = cfg, .sampler = *samplerp, .capp = capp, .out = out};
	const struct hc_privsep_opts opts = {
		.sandbox = HC_SANDBOX_WORKER,
		.user = cfg->user,
		.broker = true,
		.stop = &hc_stop_requested,
		.close_fds = &out->lock_fd,
		.n_close_fds = 1,
		.refused = record_refused,
	};
	struct hc_privsep_result res;
	char why[256];
	int rc;

	rc = hc_privsep__run(&opts, record_worker_main, &r, &res, why, sizeof(why));
	if (res.broker_err)
		hc_err("serving the sandboxed worker: %s", strerror(-res.broker_err));
	/* Release programs, links and perf events before committing the output. */
	hc_sampler__free(*samplerp);
	*samplerp = NULL;
	if (rc) {
		hc_err("%s", why);
		return EX_OSERR;
	}
	rc = hc_child_exit_code(res.status, "sandboxed worker");
	if (!rc)
		rc = hc_output__commit(out);
	if (cfg->c.verbose)
		hc_broker_stats__print(&res.broker);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	struct record_cfg cfg = {0};
	struct hc_sampler *sampler = NULL;
	struct hc_output out = {0};
	struct hc_capture *cap = NULL; /* set by the worker, read by the callbacks */
	int rc;

	rc = parse_args(argc, argv, &cfg);
	if (!rc) {
		/* From here on SIGINT/SIGTERM only end the capture early: the output, once
		 * opened, is always committed or removed, never left half-made by the default
		 * action. */
		hc_catch_stop_signals();
		hc_libbpf_verbose(cfg.c.verbose);
		rc = record_prepare(&cfg, &out);
	}
	if (!rc)
		rc = record_load(&cfg, &cap, &sampler);
	if (!rc)
		rc = record_split(&cfg, &sampler, &cap, &out);
	hc_output__abort(&out);
	hc_sampler__free(sampler);
	free(cfg.tgids);
	return rc;
}
