// SPDX-License-Identifier: GPL-2.0-only
/*
 * hotcold serve: continuous on/off-CPU profiling of the machine, browsed at localhost.
 *
 * Three processes (docs/security.md):
 *  - this one keeps the privileges: it loads BPF and then only opens files for the worker
 *    (privsep/broker.h), parsing none of them;
 *  - the collector worker (forked once BPF is loaded) drops to --user with no capabilities,
 *    NoNewPrivs and the worker seccomp allow-list, drains, symbolizes from the descriptors
 *    it is given and sends one batch a second over a socketpair;
 *  - the server (forked before any BPF work, so it never held a BPF fd or a byte of kernel
 *    symbol data) drops the same way under the server allow-list, holds the store and
 *    speaks HTTP.
 * Any of them ending ends the others: the worker sees EPIPE from the server, the server
 * EOF from the worker, the privileged process the worker's exit; a SIGKILLed privileged
 * process takes the worker along (PR_SET_PDEATHSIG), and the server then sees EOF.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "base/timespec.h"
#include "serve/backend.h"
#include "serve/collector.h"
#include "privsep/broker.h"
#include "privsep/run.h"
#include "serve/curl_dl.h"
#include "serve/push.h"
#include "web/mhd_dl.h"
#include "store/disk.h"
#include "web/server.h"

#ifndef HOTCOLD_VERSION
#define HOTCOLD_VERSION "unknown"
#endif

struct serve_cfg {
	struct hc_common_args c; /* -F, -v, symbols, off-CPU settings */
	const char *listen;
	uint64_t retention_s;
	uint64_t max_store_bytes;
	const char *user;
	const char *push_url; /* NULL: no push */
	uint64_t push_interval_ns;
	const char *push_service;
	unsigned int push_weights;
	bool locks;
	const char *data_dir; /* NULL: --data-dir none, memory only */
	uint64_t max_disk_bytes;
	uint64_t fold_ns_per_s; /* HC_DISK_FOLD_OFF: --fold-below 0 */
	bool retention_given, max_store_given;
};

#define DEFAULT_DATA_DIR "/var/lib/hotcold/store"
#define MEMORY_RETENTION_S 3600
/* --max-store's defaults: memory alone keeps the hour; beside a disk store memory is the
 * cache of the newest minutes (~2 min at 1 s under PostgreSQL's pgbench -S: 30 KB a second). */
#define MEMORY_STORE_BYTES (10ull << 20)
#define CACHE_STORE_BYTES (4ull << 20)

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hotcold serve [-F SPEC] [--listen ADDR:PORT] [--retention DUR] [OPTIONS]\n"
		"\n"
		"Profile every CPU continuously (on-CPU samples, blocked and run-queue time) and\n"
		"serve the flame graphs, timeline and histograms at http://ADDR:PORT/ (the "
		"viewer)\n"
		"and as JSON (docs/api.md).\n"
		"\n"
		"  -F, --frequency SPEC   sampling rate, as for record (default 99)\n"
		"  -l, --listen ADDR:PORT where to listen (default 127.0.0.1:8080; [::1]:PORT for\n"
		"                         IPv6; port 0 picks a free port, printed at start)\n"
		"      --data-dir DIR     keep the history on disk in DIR "
		"(default " DEFAULT_DATA_DIR ",\n"
		"                         created 0700 for --user; docs/store.md); 'none': memory\n"
		"                         only, lost when serve stops\n"
		"      --retention DUR    how much history to keep (default 7d on disk, 10s to "
		"30d;\n"
		"                         1h with --data-dir none, up to 7d)\n"
		"      --max-disk SIZE    disk for that history (default 1G; the oldest goes "
		"first)\n"
		"      --fold-below DUR   the 10 s, 1 min and 1 h tiers fold each thread's stacks\n"
		"                         that took less than DUR per second of their window into\n"
		"                         [small stacks] (default 100us: 0.01 %% of a CPU; 0 or\n"
		"                         off: never)\n"
		"      --max-store SIZE   memory for the newest minutes (default 4M with a data\n"
		"                         dir, 10M with none; K, M, G suffixes; beyond it old\n"
		"                         seconds are merged to 10 s, then dropped from memory)\n"
		"      --user NAME        the unprivileged user the HTTP server runs as (default\n"
		"                         nobody)\n"
		"      --push URL         push pprof to Grafana Pyroscope's URL/ingest every\n"
		"                         --push-interval, labelled with host and service; "
		"retried\n"
		"                         with backoff, held in a bounded queue (docs/fleet.md)\n"
		"      --push-interval DUR  how often to push (default 15s; 1s to 1h)\n"
		"      --push-service NAME  the application name and service label (default\n"
		"                         hotcold; letters, digits, '.', '_', '-')\n"
		"      --push-kind KIND   what is pushed: all (the default: on-CPU, off-CPU and\n"
		"                         run-queue sample types), on or off\n"
		"      --locks            also kernel lock contention, lockstat style "
		"(docs/locks.md):\n"
		"                         /api/locks and the viewer's Locks view; off by default: "
		"it\n"
		"                         costs a record per contention and 1/8 of --max-store\n"
		"      --no-offcpu        on-CPU samples only\n"
		"      --min-block DUR    leave blocks shorter than DUR out of the flame graph\n"
		"      --stack-budget N   off-CPU stack captures per second per CPU (default "
		"10000)\n"
		"      --no-stack-reuse   take stacks at every switch-out\n"
		"      --no-demangle      keep C++/Rust symbol names mangled\n"
		"      --no-inline        no inline frames from DWARF debug information\n"
		"  -v, --verbose          libbpf warnings\n"
		"  -h, --help             this text\n"
		"\n"
		"SIGINT or SIGTERM stops both processes (exit 0) and releases every BPF program.\n"
		"Exit codes: 0 ok, 64 usage, 69 BPF/BTF/perf unavailable, 70 internal error,\n"
		"71 system error, 73 cannot listen on ADDR:PORT or the data directory is not\n"
		"writable, 75 another hotcold uses the data directory, 77 not privileged.\n");
}

static int parse_args(int argc, char **argv, struct serve_cfg *cfg)
{
	enum {
		OPT_RETENTION = 256,
		OPT_MAX_STORE,
		OPT_USER,
		OPT_PUSH,
		OPT_PUSH_INTERVAL,
		OPT_PUSH_SERVICE,
		OPT_PUSH_KIND,
		OPT_LOCKS,
		OPT_DATA_DIR,
		OPT_MAX_DISK,
		OPT_FOLD_BELOW,
	};
	static const struct option opts[] = {
		HC_COMMON_LONGOPTS,
		{"listen", required_argument, NULL, 'l'},
		{"retention", required_argument, NULL, OPT_RETENTION},
		{"max-store", required_argument, NULL, OPT_MAX_STORE},
		{"user", required_argument, NULL, OPT_USER},
		{"push", required_argument, NULL, OPT_PUSH},
		{"push-interval", required_argument, NULL, OPT_PUSH_INTERVAL},
		{"push-service", required_argument, NULL, OPT_PUSH_SERVICE},
		{"push-kind", required_argument, NULL, OPT_PUSH_KIND},
		{"locks", no_argument, NULL, OPT_LOCKS},
		{"data-dir", required_argument, NULL, OPT_DATA_DIR},
		{"max-disk", required_argument, NULL, OPT_MAX_DISK},
		{"fold-below", required_argument, NULL, OPT_FOLD_BELOW},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	char why[256];
	uint64_t ns;
	int c, rc;

	hc_common_args__init(&cfg->c);
	cfg->listen = "127.0.0.1:8080";
	cfg->retention_s = 7 * 86400;
	cfg->max_store_bytes = MEMORY_STORE_BYTES;
	cfg->data_dir = DEFAULT_DATA_DIR;
	cfg->max_disk_bytes = 1ull << 30;
	cfg->fold_ns_per_s = HC_DISK_FOLD_DEFAULT;
	cfg->user = "nobody";
	cfg->push_interval_ns = 15ull * 1000000000ull;
	cfg->push_service = "hotcold";
	cfg->push_weights = HC_W_ALL;
	optind = 1;
	while ((c = getopt_long(argc, argv, "F:l:vh", opts, NULL)) != -1) {
		rc = hc_common_args__parse(&cfg->c, c, optarg);
		if (rc > 0)
			return rc;
		if (rc == 0)
			continue;
		switch (c) {
		case 'l':
			cfg->listen = optarg;
			break;
		case OPT_RETENTION:
			if (hc_duration__parse(optarg, &ns, why, sizeof(why))) {
				hc_err("--retention %s: %s", optarg, why);
				return EX_USAGE;
			}
			if (ns < 10 * 1000000000ull || ns > 30 * 86400 * 1000000000ull) {
				hc_err("--retention %s: between 10s and 30d", optarg);
				return EX_USAGE;
			}
			cfg->retention_s = ns / 1000000000ull;
			cfg->retention_given = true;
			break;
		case OPT_DATA_DIR:
			if (!*optarg) {
				hc_err("--data-dir: empty path (use 'none' for memory only)");
				return EX_USAGE;
			}
			cfg->data_dir = strcmp(optarg, "none") ? optarg : NULL;
			break;
		case OPT_MAX_DISK:
			if (hc_size__parse(optarg, &cfg->max_disk_bytes) ||
			    cfg->max_disk_bytes < (1ull << 20) ||
			    cfg->max_disk_bytes > (16ull << 40)) {
				hc_err("--max-disk %s: a size from 1M to 16T (e.g. 4G)", optarg);
				return EX_USAGE;
			}
			break;
		case OPT_FOLD_BELOW:
			if (!strcmp(optarg, "0") || !strcmp(optarg, "off")) {
				cfg->fold_ns_per_s = HC_DISK_FOLD_OFF;
				break;
			}
			if (hc_duration__parse(optarg, &ns, why, sizeof(why))) {
				hc_err("--fold-below %s: %s", optarg, why);
				return EX_USAGE;
			}
			if (ns >= 1000000000ull) {
				hc_err("--fold-below %s: under 1s (a second per second is all of a "
				       "CPU); 0 folds nothing",
				       optarg);
				return EX_USAGE;
			}
			cfg->fold_ns_per_s = ns;
			break;
		case OPT_MAX_STORE:
			if (hc_size__parse(optarg, &cfg->max_store_bytes) ||
			    cfg->max_store_bytes < (1ull << 20) ||
			    cfg->max_store_bytes > (64ull << 30)) {
				hc_err("--max-store %s: a size from 1M to 64G (e.g. 32M)", optarg);
				return EX_USAGE;
			}
			cfg->max_store_given = true;
			break;
		case OPT_USER:
			if (!*optarg) {
				hc_err("--user: empty user name");
				return EX_USAGE;
			}
			cfg->user = optarg;
			break;
		case OPT_PUSH:
			if (strncmp(optarg, "http://", 7) && strncmp(optarg, "https://", 8)) {
				hc_err("--push %s: give Pyroscope's base URL, http://HOST:PORT or "
				       "https://...",
				       optarg);
				return EX_USAGE;
			}
			cfg->push_url = optarg;
			break;
		case OPT_PUSH_INTERVAL:
			if (hc_duration__parse(optarg, &ns, why, sizeof(why))) {
				hc_err("--push-interval %s: %s", optarg, why);
				return EX_USAGE;
			}
			if (ns < 1000000000ull || ns > 3600 * 1000000000ull || ns % 1000000000ull) {
				hc_err("--push-interval %s: whole seconds from 1s to 1h", optarg);
				return EX_USAGE;
			}
			cfg->push_interval_ns = ns;
			break;
		case OPT_PUSH_SERVICE:
			if (!*optarg || strlen(optarg) > 128 ||
			    strspn(optarg, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					   "0123456789._-") != strlen(optarg)) {
				hc_err("--push-service '%s': 1 to 128 letters, digits, '.', '_' or "
				       "'-'",
				       optarg);
				return EX_USAGE;
			}
			cfg->push_service = optarg;
			break;
		case OPT_PUSH_KIND:
			if (hc_kind__parse(optarg, &cfg->push_weights)) {
				hc_err("--push-kind %s: use all, on or off", optarg);
				return EX_USAGE;
			}
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
	if (optind < argc) {
		hc_err("unexpected argument '%s' (see hotcold serve --help)", argv[optind]);
		return EX_USAGE;
	}
	if (cfg->data_dir && !cfg->max_store_given)
		cfg->max_store_bytes = CACHE_STORE_BYTES;
	if (!cfg->data_dir) {
		if (!cfg->retention_given)
			cfg->retention_s = MEMORY_RETENTION_S;
		if (cfg->retention_s > 7 * 86400) {
			hc_err("--retention: up to 7d in memory (--data-dir none)");
			return EX_USAGE;
		}
	}
	if (!cfg->push_url &&
	    (cfg->push_interval_ns != 15ull * 1000000000ull ||
	     strcmp(cfg->push_service, "hotcold") || cfg->push_weights != HC_W_ALL)) {
		hc_err("--push-interval, --push-service and --push-kind need --push URL");
		return EX_USAGE;
	}
	if (cfg->c.no_offcpu && (hc_common_args__offcpu_tuned(&cfg->c) || cfg->locks)) {
		hc_err("--no-offcpu cannot be combined with --min-block, --locks, --stack-budget "
		       "or "
		       "--no-stack-reuse");
		return EX_USAGE;
	}
	return hc_common_args__settle_unwind(&cfg->c);
}

static int push_fetch(void *ctx, int64_t from_ns, int64_t *to_ns, unsigned int weights, char **buf,
		      size_t *len)
{
	return hc_backend__pprof(ctx, from_ns, to_ns, weights, buf, len);
}

/* The exit code for a data directory that cannot be used: 75 when another process holds it,
 * 73 when it cannot be created or written. */
static int disk_exit_code(int err)
{
	return err == EWOULDBLOCK ? EX_TEMPFAIL : err == ENOMEM ? EX_OSERR : EX_CANTCREAT;
}

/* Take the data directory before any BPF work: a second serve on it stops here. Created for --user,
 * whose HTTP process writes it. 0 or an exit code. */
static int lock_data_dir(const struct serve_cfg *cfg, int *fd_out)
{
	struct passwd *pw = geteuid() == 0 ? getpwnam(cfg->user) : NULL;
	char why[512];
	int fd;

	fd = hc_disk__lock(cfg->data_dir, pw ? (int)pw->pw_uid : -1, pw ? (int)pw->pw_gid : -1, why,
			   sizeof(why));
	if (fd < 0) {
		hc_err("--data-dir: %s", why);
		return disk_exit_code(-fd);
	}
	*fd_out = fd;
	return 0;
}

/* The store in the data directory (locked already by the privileged process). 0 or an exit
 * code, having said why. */
static int open_disk(const struct serve_cfg *cfg, int lock_fd, struct hc_disk **out)
{
	struct hc_disk_opts o = {.dir = cfg->data_dir,
				 .retention_s = cfg->retention_s,
				 .max_bytes = cfg->max_disk_bytes,
				 .lock_fd = lock_fd,
				 .period_ns = cfg->c.rate.period_ns,
				 .fold_ns_per_s = cfg->fold_ns_per_s};
	struct hc_disk_stats st;
	char why[512] = "";

	*out = hc_disk__open(&o, why, sizeof(why));
	if (!*out) {
		int err = errno;

		hc_err("--data-dir: %s", why[0] ? why : strerror(err));
		return disk_exit_code(err);
	}
	hc_disk__stats(*out, &st);
	if (st.quarantined) /* where to look: why names the file, not where it went */
		hc_err("--data-dir: %s (kept in %s/%s/)", why, cfg->data_dir, HC_DISK_QUARANTINE);
	return 0;
}

/* The server process, sandboxed already: the store and HTTP. Returns its exit code. */
static int run_server(const struct serve_cfg *cfg, int sock, struct hc_listen *l, int lock_fd)
{
	/* --max-store bounds both stores: with --locks the lock store takes an eighth of it
	 * (docs/serve.md#locks). Its on-CPU weights are spin ns per contention, not samples of a
	 * period: 1 ns keeps them exact. */
	size_t lock_bytes = cfg->locks ? (size_t)cfg->max_store_bytes / 8 : 0;
	/* With a data dir, memory keeps the newest hour at most: older ranges come from disk. */
	uint64_t mem_s = cfg->data_dir && cfg->retention_s > MEMORY_RETENTION_S ? MEMORY_RETENTION_S
										: cfg->retention_s;
	struct hc_backend_opts bopts = {
		.store = {.retention_s = mem_s,
			  .max_bytes = (size_t)cfg->max_store_bytes - lock_bytes,
			  .period_ns = cfg->c.rate.period_ns},
		.locks = cfg->locks,
		.lock_store = {.retention_s = mem_s, .max_bytes = lock_bytes, .period_ns = 1},
		.version = HOTCOLD_VERSION,
		.max_disk_bytes = cfg->max_disk_bytes,
		.disk_retention_s = cfg->retention_s,
	};
	struct hc_server_opts sopts = {.listen_fd = l->fd, .listen_addr = l->addr};
	struct hc_api_backend api;
	struct hc_backend *b = NULL;
	struct hc_server *srv = NULL;
	struct hc_push *push = NULL;
	int err, rc = 0;

	/* Long-lived and answering big queries now and then: big blocks (trees, response
	 * buffers) go straight to mmap and back to the kernel when freed, and the pool threads
	 * share two arenas instead of keeping one each. */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	mallopt(M_ARENA_MAX, 2);
	if (cfg->data_dir) {
		rc = open_disk(cfg, lock_fd, &bopts.disk);
		if (rc) {
			hc_listen__close(l);
			return rc;
		}
	}
	b = hc_backend__new(&bopts);
	if (!b) {
		hc_err("server: creating the store: %s", strerror(errno));
		hc_disk__close(bopts.disk);
		return EX_OSERR;
	}
	/* The push client first: the HTTP threads read its status from their first request. */
	if (cfg->push_url) {
		struct hc_push_opts popts = {
			.url = cfg->push_url,
			.interval_ns = cfg->push_interval_ns,
			.service = cfg->push_service,
			.host = hc_backend__host(b),
			.weights = cfg->push_weights,
			.sample_rate_hz = cfg->c.rate.hz,
			.version = HOTCOLD_VERSION,
		};

		push = hc_push__new(&popts, push_fetch, b);
		if (!push) {
			char why[256] = "";

			err = errno;
			if (err == ELIBACC)
				hc_curl__get(why, sizeof(why));
			hc_err("server: --push %s: %s%s%s", cfg->push_url,
			       err == EINVAL	? "not a URL curl can use"
			       : err == ELIBACC ? "libcurl (Debian's libcurl4) cannot be loaded: "
						: strerror(err),
			       why, "");
			hc_listen__close(l);
			hc_backend__free(b);
			return err == EINVAL ? EX_USAGE : EX_OSERR;
		}
		hc_backend__set_push(b, push);
	}
	hc_backend__api(b, &api);
	srv = hc_server__new(&sopts, &api);
	if (!srv) {
		char why[256] = "";

		err = errno;
		if (err == ELIBACC)
			hc_mhd__load(why, sizeof(why));
		hc_err("server: starting the HTTP server: %s%s%s", strerror(err), *why ? ": " : "",
		       why);
		hc_listen__close(l);
		hc_push__free(push);
		hc_backend__free(b);
		return EX_SOFTWARE;
	}
	/* Tell the collector we answer: only then does it print the URL. */
	if (write(sock, "R", 1) != 1) {
		hc_server__free(srv);
		hc_push__free(push);
		hc_backend__free(b);
		return EX_OSERR;
	}
	while (!hc_stop_requested) {
		struct pollfd p = {.fd = sock, .events = POLLIN};

		err = poll(&p, 1, 250);
		if (err < 0 && errno != EINTR) {
			rc = EX_OSERR;
			break;
		}
		if (err <= 0)
			continue;
		err = hc_backend__ingest(b, sock);
		if (err == 0)
			break; /* the collector is gone: so are we */
		if (err < 0) {
			hc_err("server: reading from the collector: %s", strerror(-err));
			rc = EX_SOFTWARE;
			break;
		}
	}
	hc_server__free(srv); /* no query reads the push status after this */
	hc_push__free(push);
	hc_backend__free(b);
	return rc;
}

/* The worker's exit code when the server went away first (internal: the server's own exit
 * code is then passed on). */
#define WORKER_PEER_GONE 100

/* serve's three processes and what links them. */
struct serve_procs {
	const struct serve_cfg *cfg;
	struct hc_listen l;
	int sv[2]; /* the collector's batches to the server: sv[0] ours, then the worker's */
	struct hc_privsep server; /* forked first, before any BPF object exists */
	struct hc_privsep worker; /* the collector worker, with the broker and the stop line */
	int lock_fd;		  /* --data-dir's lock: taken first, inherited by the children */
	struct hc_broker_client bc;
	struct hc_symbolizer_io io;
	struct hc_collector *coll;
	bool peer_gone; /* the server ended first: its exit code is ours */
};

static int server_main(void *ctx, const struct hc_privsep_child *child)
{
	struct serve_procs *sp = ctx;

	(void)child;
	return run_server(sp->cfg, sp->sv[1], &sp->l, sp->lock_fd);
}

static int server_refused(void *ctx, int err, const char *why)
{
	(void)ctx;
	(void)err;
	hc_err("server: %s", why);
	return EX_NOPERM;
}

/* The collector worker, sandboxed: its files from the broker (the collector's io), told to stop
 * on the stop line. */
static int worker_main(void *ctx, const struct hc_privsep_child *child)
{
	struct serve_procs *sp = ctx;
	bool peer_gone = false;
	int err;

	/* Big transient blocks (DWARF sections while an inline index is built, per-second
	 * tables) straight to mmap and back when freed: a fixed threshold, not glibc's sliding
	 * one, which moves them into the heap after the first free and leaves it fragmented
	 * (measured: 24 MB of heap for 14 MB in use). */
	mallopt(M_MMAP_THRESHOLD, 256 * 1024);
	err = hc_collector__start(sp->coll, sp->cfg->c.verbose);
	if (err) {
		hc_err("collector: cannot start sampling (scheduler tracepoints, task iterator or "
		       "perf events): %s",
		       strerror(-err));
		return EX_UNAVAILABLE;
	}
	err = hc_collector__run(sp->coll, &hc_stop_requested, child->stop_fd, &peer_gone);
	if (err) {
		hc_err("collector: %s", strerror(-err));
		return EX_SOFTWARE;
	}
	/* Our copies of the BPF objects only: the parent releases the programs. */
	hc_collector__free(sp->coll);
	return peer_gone ? WORKER_PEER_GONE : 0;
}

static int worker_refused(void *ctx, int err, const char *why)
{
	(void)ctx;
	return hc_sandbox_refused("collector: ", err, why);
}

/* Bind --listen and fork the HTTP server, which gets the socket and sv[1]. 0 or an exit code,
 * having said why. */
static int start_server(struct serve_procs *sp)
{
	const struct hc_privsep_opts opts = {
		.sandbox = sp->cfg->data_dir ? HC_SANDBOX_SERVER_STORE : HC_SANDBOX_SERVER,
		.user = sp->cfg->user,
		.close_fds = &sp->sv[0],
		.n_close_fds = 1,
		.refused = server_refused,
	};
	char why[256];
	int err;

	err = hc_listen__open(sp->cfg->listen, &sp->l, why, sizeof(why));
	if (err) {
		hc_err("--listen %s: %s", sp->cfg->listen, why);
		return err == -EINVAL ? EX_USAGE : EX_CANTCREAT;
	}
	if (sp->cfg->data_dir) {
		err = lock_data_dir(sp->cfg, &sp->lock_fd);
		if (err) {
			hc_listen__close(&sp->l);
			return err;
		}
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp->sv)) {
		hc_err("socketpair: %s", strerror(errno));
		hc_listen__close(&sp->l);
		return EX_OSERR;
	}
	hc_catch_stop_signals();
	signal(SIGPIPE, SIG_IGN);
	err = hc_privsep__init(&sp->server, &opts, why, sizeof(why));
	if (!err)
		err = hc_privsep__spawn(&sp->server, server_main, sp, why, sizeof(why));
	hc_listen__close(&sp->l);
	if (err) {
		hc_err("%s", why);
		return EX_OSERR;
	}
	close(sp->sv[1]);
	sp->sv[1] = -1;
	return 0;
}

/* Load BPF: the collector, its symbolizer asking the broker the worker will be served. 0 or an
 * exit code, having said why. */
static int start_collector(struct serve_procs *sp)
{
	const struct serve_cfg *cfg = sp->cfg;
	const struct hc_privsep_opts opts = {
		.sandbox = HC_SANDBOX_WORKER,
		.user = cfg->user,
		.broker = true,
		.stop = &hc_stop_requested,
		.refused = worker_refused,
	};
	struct hc_collector_opts copts = {
		.period_ns = cfg->c.rate.period_ns,
		.frequency_hz = cfg->c.rate.hz,
		.retention_s = cfg->retention_s,
		.no_offcpu = cfg->c.no_offcpu,
		.min_block_ns = cfg->c.min_block_ns,
		.stack_budget = cfg->c.stack_budget,
		.no_stack_reuse = cfg->c.no_stack_reuse,
		.no_demangle = cfg->c.no_demangle,
		.no_inline = cfg->c.no_inline,
		.locks = cfg->locks,
		.unwind_fp = cfg->c.unwind_fp,
		.unwind_table = cfg->c.unwind_table,
		.unwind_table_mb = cfg->c.unwind_table_mb,
		.stack_copy_bytes = cfg->c.stack_copy_bytes,
		.copy_budget = cfg->c.copy_budget_given ? cfg->c.copy_budget : HC_SERVE_COPY_BUDGET,
		.fd = sp->sv[0],
		.io = &sp->io,
	};
	char what[256];
	char why[256];
	int err;

	if (hc_privsep__init(&sp->worker, &opts, why, sizeof(why))) {
		hc_err("%s", why);
		return EX_OSERR;
	}
	sp->bc.sock = sp->worker.child_broker_fd;
	hc_broker_client__io(&sp->bc, &sp->io);
	hc_raise_nofile_limit();
	sp->coll = hc_collector__new(&copts, what, sizeof(what));
	if (!sp->coll) {
		err = errno;
		hc_err("%s: %s", what, strerror(err));
		return (err == EPERM || err == EACCES) ? EX_NOPERM : EX_UNAVAILABLE;
	}
	return 0;
}

/* The URL is printed once the HTTP process answers: if it could not drop its privileges or
 * start, it has said why, and its exit code is ours. false when it is gone. */
static bool server_answers(struct serve_procs *sp)
{
	struct pollfd p = {.fd = sp->sv[0], .events = POLLIN};
	char ready = 0;
	int err;

	while ((err = poll(&p, 1, 10000)) < 0 && errno == EINTR && !hc_stop_requested)
		;
	return !(err > 0 && read(sp->sv[0], &ready, 1) != 1);
}

/* Fork the collector worker, serve its broker until it ends. Its exit code. */
static int run_collector(struct serve_procs *sp)
{
	const struct serve_cfg *cfg = sp->cfg;
	struct hc_privsep_result res;
	char why[256];
	int rc;

	if (hc_privsep__spawn(&sp->worker, worker_main, sp, why, sizeof(why))) {
		hc_err("%s", why);
		return EX_OSERR;
	}
	/* The worker alone talks to the server now, and alone reads the ring buffer. */
	close(sp->sv[0]);
	sp->sv[0] = -1;
	hc_collector__unmap_reader(sp->coll);
	fprintf(stderr,
		"hotcold: serving http://%s/ (sampling %g Hz on every CPU%s%s; keeping %llu s)\n",
		sp->l.addr, cfg->c.rate.hz, cfg->c.no_offcpu ? "" : ", off-CPU time too",
		cfg->locks ? ", lock contention" : "", (unsigned long long)cfg->retention_s);
	if (hc_privsep__wait(&sp->worker, -1, &res, why, sizeof(why))) {
		hc_err("%s", why);
		return EX_OSERR;
	}
	if (res.broker_err)
		hc_err("serving the collector: %s", strerror(-res.broker_err));
	rc = hc_child_exit_code(res.status, "collector worker");
	if (rc == WORKER_PEER_GONE) {
		sp->peer_gone = true;
		rc = 0;
	}
	if (cfg->c.verbose)
		hc_broker_stats__print(&res.broker);
	return rc;
}

/* BPF released before anything else, then the server told (EOF) and reaped (killed after
 * 1.5 s). The exit code: rc, or the server's when it ended on its own first. */
static int stop_all(struct serve_procs *sp, int rc)
{
	struct hc_privsep_result res;
	char why[256];

	hc_collector__free(sp->coll);
	hc_privsep__close(&sp->worker);
	if (sp->sv[0] >= 0)
		close(sp->sv[0]);
	hc_privsep__wait(&sp->server, 1500, &res, why, sizeof(why));
	hc_privsep__close(&sp->server);
	/* The server ended on its own: its exit code (it said why), or 70 for a crash. */
	if (!rc && sp->peer_gone && !hc_stop_requested)
		rc = hc_child_exit_code(res.status, "HTTP server");
	return rc;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_cfg cfg = {0};
	struct serve_procs sp = {.cfg = &cfg, .l = {.fd = -1}, .sv = {-1, -1}, .lock_fd = -1};
	int rc;

	rc = parse_args(argc, argv, &cfg);
	if (rc)
		return rc;
	hc_libbpf_verbose(cfg.c.verbose);
	rc = start_server(&sp);
	if (rc)
		return rc;
	rc = start_collector(&sp);
	if (!rc && !server_answers(&sp))
		sp.peer_gone = true;
	else if (!rc && !hc_stop_requested)
		rc = run_collector(&sp);
	return stop_all(&sp, rc);
}
