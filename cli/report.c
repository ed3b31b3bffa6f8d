// SPDX-License-Identifier: GPL-2.0-only
/*
 * hotcold report: read a saved hotcold-profile/1 document and print part of it.
 *
 * A profile file may come from anywhere, so it is parsed without privileges (docs/security.md):
 * this process opens the inputs and the output (as whoever runs it), then a forked child
 * becomes --user when we are root, drops every capability, sets NoNewPrivs, enters the worker
 * seccomp allow-list (no opening for writing, no sockets, no exec) and only then parses and
 * converts, reading and writing the descriptors it inherited. We commit the output (rename
 * into place) once the child exits 0.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "profile/hist.h"
#include "privsep/run.h"
#include "profile/weights.h"
#include "profile/profile.h"
#include "profile/encode.h"

/* A saved profile is parsed without privileges and may be hostile: refuse absurd sizes. */
#define REPORT_MAX_FILE_BYTES (1ull << 30)

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hotcold report [--format FMT] [--kind KIND] [-o OUT] FILE\n"
		"       hotcold report --hist NAME [--key KEY] FILE\n"
		"       hotcold report --diff [--kind KIND] [--normalize] [-o OUT] BASE NEW\n"
		"\n"
		"Read a saved profile (a hotcold-profile/1 document from hotcold record -o FILE "
		"or\n"
		"GET /api/profile) and convert it, print one of its histograms, or compare two.\n"
		"\n"
		"  --format FMT   folded (the default; flamegraph.pl, values in ns), pprof "
		"(gzipped\n"
		"                 profile.proto, for go tool pprof), speedscope, or json (the\n"
		"                 document re-encoded after validation); docs/formats.md\n"
		"  --kind KIND    what the output carries: all (on-CPU, blocked and run-queue "
		"time;\n"
		"                 the default), on, or off (blocked + run-queue)\n"
		"  -o, --output OUT  write here instead of stdout, atomically (a strftime pattern\n"
		"                 like record's -o)\n"
		"  --hist NAME    print histogram NAME the way DTrace prints an aggregation: per "
		"key,\n"
		"                 `value  ---- Distribution ---- count` rows (docs/histograms.md)\n"
		"  --key KEY      with --hist: only this series (a process name, or \"cpu N\")\n"
		"  --diff         compare BASE and NEW: differential folded stacks, one\n"
		"                 `stack BASE_NS NEW_NS` line per stack (flamegraph.pl draws them "
		"as\n"
		"                 a differential flame graph); processes match by name\n"
		"  --normalize    with --diff: scale BASE so that its total equals NEW's\n"
		"  --user NAME    run as root: the user that parses the files (default nobody);\n"
		"                 the parsing never runs with privileges (docs/security.md)\n"
		"  -h, --help     this text\n"
		"\n"
		"Exit codes: 0 ok, 64 usage or unknown histogram/key, 65 not a valid profile,\n"
		"66 cannot read FILE, 70 the parsing process crashed, 73 cannot create OUT, 74 "
		"write\n"
		"error, 75 another writer holds OUT's lock, 77 cannot drop privileges (no "
		"--user),\n"
		"130 interrupted by SIGINT/SIGTERM (nothing written).\n");
}

/* The names of the histograms in `hists`, comma-separated, for error messages. */
static void list_names(json_t *hists, char *buf, size_t len)
{
	const char *name;
	json_t *v;
	size_t used = 0;

	buf[0] = '\0';
	json_object_foreach (hists, name, v) {
		int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);

		(void)v;
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	if (!used)
		snprintf(buf, len, "none");
}

/* Open `path` for the parsing child (no parsing here): 0, or an exit code after printing
 * why. */
static int open_input(const char *path, FILE **fp)
{
	FILE *f = fopen(path, "re");
	struct stat st;

	*fp = NULL;
	if (!f) {
		hc_err("report: cannot read %s: %s", path, strerror(errno));
		return EX_NOINPUT;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		hc_err("report: cannot read %s: it is a directory", path);
		return EX_NOINPUT;
	}
	if (fstat(fileno(f), &st) == 0 && (unsigned long long)st.st_size > REPORT_MAX_FILE_BYTES) {
		fclose(f);
		hc_err("report: %s is larger than 1 GiB", path);
		return EX_DATAERR;
	}
	*fp = f;
	return 0;
}

/* Parse f (named path in messages): 0, or an exit code after printing why. */
static int load_doc(FILE *f, const char *path, json_t **doc)
{
	json_error_t jerr;
	const char *schema;

	*doc = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
	if (!*doc) {
		hc_err("report: %s is not valid JSON: %s (line %d, column %d)", path, jerr.text,
		       jerr.line, jerr.column);
		return EX_DATAERR;
	}
	schema = json_string_value(json_object_get(*doc, "schema"));
	if (!schema || strcmp(schema, HC_PROFILE_SCHEMA)) {
		hc_err("report: %s is not a %s document (schema: %s)", path, HC_PROFILE_SCHEMA,
		       schema ? schema : "missing");
		json_decref(*doc);
		*doc = NULL;
		return EX_DATAERR;
	}
	return 0;
}

/* Parse and decode f (named path) into a profile: 0, or an exit code after printing why. */
static int load_profile(FILE *f, const char *path, struct hc_profile **out)
{
	char why[256];
	json_t *doc;
	int rc, err;

	*out = NULL;
	rc = load_doc(f, path, &doc);
	if (rc)
		return rc;
	err = hc_profile__from_json(doc, out, why, sizeof(why));
	json_decref(doc);
	if (err == -ENOMEM) {
		hc_err("report: reading %s: out of memory", path);
		return EX_OSERR;
	}
	if (err) {
		hc_err("report: %s is not a valid profile: %s", path, why);
		return EX_DATAERR;
	}
	return 0;
}

static int print_hist(FILE *f, const char *path, const char *hist_name, const char *key)
{
	struct hc_hist *h = NULL;
	json_t *doc, *hists, *hj;
	char why[256], names[256];
	int rc, err;

	rc = load_doc(f, path, &doc);
	if (rc)
		return rc;
	hists = json_object_get(doc, "histograms");
	if (!json_is_object(hists)) {
		hc_err("report: %s has no histograms object", path);
		rc = EX_DATAERR;
		goto out;
	}
	hj = json_object_get(hists, hist_name);
	if (!hj) {
		list_names(hists, names, sizeof(names));
		hc_err("report: %s has no histogram '%s' (it has: %s)", path, hist_name, names);
		rc = EX_USAGE;
		goto out;
	}
	h = hc_hist__from_json(hj, why, sizeof(why));
	if (!h) {
		hc_err("report: histogram '%s' in %s is malformed: %s", hist_name, path, why);
		rc = EX_DATAERR;
		goto out;
	}
	err = hc_hist__print(h, key, stdout);
	if (err == -ENOENT) {
		hc_err("report: histogram '%s' has no series '%s'", hist_name, key);
		rc = EX_USAGE;
	} else if (err || fflush(stdout)) {
		hc_err("report: writing the histogram: %s", strerror(err ? -err : errno));
		rc = EX_IOERR;
	}
out:
	hc_hist__free(h);
	json_decref(doc);
	return rc;
}

/* What the parsing child is to do, with the descriptors opened for it. */
struct report_job {
	const char *path[2]; /* for messages */
	FILE *in[2];	     /* BASE and NEW with --diff; in[1] NULL otherwise */
	const char *hist_name, *key;
	enum hc_format format;
	unsigned int weights;
	bool diff, normalize;
	FILE *out; /* the output's temporary file, or stdout */
	const char *out_name;
};

/* The parsing child's work, sandboxed: an exit code, having said why when not 0. */
static int report_child(const struct report_job *j)
{
	struct hc_profile *a = NULL, *b = NULL;
	int rc, err;

	if (j->hist_name) {
		rc = print_hist(j->in[0], j->path[0], j->hist_name, j->key);
		return rc ? rc : (hc_stop_requested ? 130 : 0);
	}
	rc = load_profile(j->in[0], j->path[0], &a);
	if (!rc && j->diff)
		rc = load_profile(j->in[1], j->path[1], &b);
	if (rc)
		goto out;
	if (j->diff)
		err = hc_profile__write_diff_folded(a, b, j->weights, j->normalize, j->out);
	else
		err = hc_format__write(a, j->format, j->weights, j->out);
	/* Ours to flush: the parent's copy of the stream never saw these bytes. */
	if (!err && fflush(j->out))
		err = -errno;
	if (err == -EOVERFLOW) {
		hc_err("report: %s holds values %s cannot represent (above 2^63)", j->path[0],
		       j->diff ? "folded stacks" : "this format");
		rc = EX_DATAERR;
	} else if (err) {
		hc_err("report: writing %s: %s", j->out_name, strerror(-err));
		rc = err == -ENOMEM ? EX_OSERR : EX_IOERR;
	} else if (hc_stop_requested) {
		hc_err("report: interrupted: nothing written");
		rc = 130;
	}
out:
	hc_profile__free(a);
	hc_profile__free(b);
	return rc;
}

static int report_worker(void *ctx, const struct hc_privsep_child *child)
{
	(void)child;
	return report_child(ctx);
}

static int report_refused(void *ctx, int err, const char *why)
{
	(void)ctx;
	return hc_sandbox_refused("report: ", err, why);
}

/*
 * Run report_child() in a forked child that becomes `user` (when root), with no capabilities,
 * NoNewPrivs and the worker allow-list. lock_fd (the output's lock, or -1) stays ours. The
 * child's exit code; 70 when a signal ended it.
 */
static int run_sandboxed(struct report_job *j, const char *user, int lock_fd)
{
	const struct hc_privsep_opts opts = {
		.sandbox = HC_SANDBOX_WORKER,
		.user = user,
		.close_fds = &lock_fd,
		.n_close_fds = 1,
		.refused = report_refused,
	};
	struct hc_privsep_result res;
	char why[256];

	if (hc_privsep__run(&opts, report_worker, j, &res, why, sizeof(why))) {
		hc_err("report: %s", why);
		return EX_OSERR;
	}
	return hc_child_exit_code(res.status, "report's parsing process");
}

/* What the command line asks for. */
struct report_cfg {
	const char *hist_name, *key, *output, *user;
	enum hc_format format;
	unsigned int weights;
	bool diff, normalize, format_set, kind_set;
	char **files; /* the operands: FILE, or BASE and NEW */
	int n_files;
};

/* The options into cfg: 0, or an exit code after printing why. -h prints the usage and exits. */
static int parse_args(int argc, char **argv, struct report_cfg *cfg)
{
	enum { OPT_HIST = 256, OPT_KEY, OPT_FORMAT, OPT_KIND, OPT_DIFF, OPT_NORMALIZE, OPT_USER };
	static const struct option opts[] = {
		{"hist", required_argument, NULL, OPT_HIST},
		{"key", required_argument, NULL, OPT_KEY},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"kind", required_argument, NULL, OPT_KIND},
		{"diff", no_argument, NULL, OPT_DIFF},
		{"normalize", no_argument, NULL, OPT_NORMALIZE},
		{"output", required_argument, NULL, 'o'},
		{"user", required_argument, NULL, OPT_USER},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	*cfg = (struct report_cfg){
		.user = "nobody", .format = HC_FORMAT_FOLDED, .weights = HC_W_ALL};
	optind = 1;
	while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_HIST:
			cfg->hist_name = optarg;
			break;
		case OPT_KEY:
			cfg->key = optarg;
			break;
		case OPT_FORMAT:
			if (hc_format__parse(optarg, &cfg->format)) {
				hc_err("report: --format %s: use folded, pprof, speedscope or json",
				       optarg);
				return EX_USAGE;
			}
			cfg->format_set = true;
			break;
		case OPT_KIND:
			if (hc_kind__parse(optarg, &cfg->weights)) {
				hc_err("report: --kind %s: use all, on or off", optarg);
				return EX_USAGE;
			}
			cfg->kind_set = true;
			break;
		case OPT_DIFF:
			cfg->diff = true;
			break;
		case OPT_NORMALIZE:
			cfg->normalize = true;
			break;
		case 'o':
			if (!*optarg) {
				hc_err("report: -o: empty file name");
				return EX_USAGE;
			}
			cfg->output = optarg;
			break;
		case OPT_USER:
			if (!*optarg) {
				hc_err("report: --user: empty user name");
				return EX_USAGE;
			}
			cfg->user = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	cfg->files = argv + optind;
	cfg->n_files = argc - optind;
	return 0;
}

/* The combination of options and operands: 0, or EX_USAGE after printing why. */
static int check_args(const struct report_cfg *cfg)
{
	if (cfg->hist_name || cfg->key) {
		if (!cfg->hist_name) {
			hc_err("report: --key needs --hist NAME");
			return EX_USAGE;
		}
		if (cfg->diff || cfg->format_set || cfg->kind_set || cfg->output ||
		    cfg->normalize) {
			hc_err("report: --hist prints a histogram; it takes no --diff, --format, "
			       "--kind, --normalize or -o");
			return EX_USAGE;
		}
	} else if (cfg->diff) {
		if (cfg->format_set && cfg->format != HC_FORMAT_FOLDED) {
			hc_err("report: --diff writes differential folded stacks only (for pprof, "
			       "convert both and use go tool pprof -diff_base)");
			return EX_USAGE;
		}
		if (cfg->n_files != 2) {
			hc_err("report: --diff takes two profiles, BASE and NEW");
			return EX_USAGE;
		}
		return 0;
	} else {
		if (cfg->normalize) {
			hc_err("report: --normalize applies to --diff");
			return EX_USAGE;
		}
		if (cfg->kind_set && cfg->format == HC_FORMAT_JSON) {
			hc_err("report: --kind selects what folded, pprof and speedscope carry; "
			       "json "
			       "carries every kind");
			return EX_USAGE;
		}
	}
	if (cfg->n_files != 1) {
		hc_err("report: give exactly one profile FILE (see hotcold report --help)");
		return EX_USAGE;
	}
	return 0;
}

/* Open the inputs and create the output for the child: 0, or an exit code after printing
 * why. What was opened is in job and out either way. */
static int open_job(const struct report_cfg *cfg, struct report_job *job, struct hc_output *out)
{
	int rc;

	job->hist_name = cfg->hist_name;
	job->key = cfg->key;
	job->format = cfg->format;
	job->weights = cfg->weights;
	job->diff = cfg->diff;
	job->normalize = cfg->normalize;
	for (int i = 0; i < cfg->n_files; i++) {
		job->path[i] = cfg->files[i];
		rc = open_input(job->path[i], &job->in[i]);
		if (rc)
			return rc;
	}
	if (cfg->hist_name) {
		job->out = stdout;
		job->out_name = "the histogram";
		return 0;
	}
	/* Only the file is created here; a bad input still leaves nothing behind (the temporary
	 * file is removed unless the child succeeds). */
	rc = hc_output__open(out, cfg->output, time(NULL));
	if (!rc && hc_format__refuse_tty(cfg->format, out->f))
		rc = EX_USAGE;
	if (rc)
		return rc;
	job->out = out->f;
	job->out_name = out->path ? out->path : "the output";
	return 0;
}

int cmd_report(int argc, char **argv)
{
	struct report_cfg cfg;
	struct report_job job = {0};
	struct hc_output out = {.lock_fd = -1};
	int rc;

	rc = parse_args(argc, argv, &cfg);
	if (!rc)
		rc = check_args(&cfg);
	if (rc)
		return rc;
	/* SIGINT/SIGTERM: stop, remove what was begun, exit 130 (nothing written). */
	hc_catch_stop_signals();
	rc = open_job(&cfg, &job, &out);
	if (!rc)
		rc = run_sandboxed(&job, cfg.user, out.lock_fd);
	if (!rc && hc_stop_requested) {
		hc_err("report: interrupted: nothing written");
		rc = 130;
	}
	if (!rc && !cfg.hist_name)
		rc = hc_output__commit(&out);
	hc_output__abort(&out);
	for (int i = 0; i < 2; i++)
		if (job.in[i])
			fclose(job.in[i]);
	return rc;
}
