// SPDX-License-Identifier: GPL-2.0-only
/* hotcold report: read a saved hotcold-profile/1 document and print part of it. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>

#include <jansson.h>

#include "cli/cli.h"
#include "profile/hist.h"
#include "profile/profile.h"

/* A saved profile is parsed without privileges and may be hostile: refuse absurd sizes. */
#define REPORT_MAX_FILE_BYTES (1ull << 30)

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hotcold report --hist NAME [--key KEY] FILE\n"
		"\n"
		"Print histogram NAME of a saved profile (hotcold record -o FILE) the way DTrace\n"
		"prints an aggregation: per key, `value  ---- Distribution ---- count` rows with @\n"
		"bars. Histograms and their bucket rules: docs/histograms.md.\n"
		"\n"
		"  --hist NAME   the histogram (e.g. priority)\n"
		"  --key KEY     only this series (a process name, or \"cpu N\")\n"
		"  -h, --help    this text\n"
		"\n"
		"Exit codes: 0 ok, 64 usage or unknown histogram/key, 65 not a valid profile,\n"
		"66 cannot read FILE.\n");
}

/* The names of the histograms in `hists`, comma-separated, for error messages. */
static void list_names(json_t *hists, char *buf, size_t len)
{
	const char *name;
	json_t *v;
	size_t used = 0;

	buf[0] = '\0';
	json_object_foreach(hists, name, v) {
		int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);

		(void)v;
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += (size_t)n;
	}
	if (!used)
		snprintf(buf, len, "none");
}

int cmd_report(int argc, char **argv)
{
	enum { OPT_HIST = 256, OPT_KEY };
	static const struct option opts[] = {
		{ "hist", required_argument, NULL, OPT_HIST },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *hist_name = NULL, *key = NULL, *path, *schema;
	json_t *doc = NULL, *hists, *hj;
	struct hc_hist *h = NULL;
	json_error_t jerr;
	char why[256], names[256];
	int c, rc = 0, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_HIST:
			hist_name = optarg;
			break;
		case OPT_KEY:
			key = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (!hist_name) {
		hc_err("report: --hist NAME is required (see hotcold report --help)");
		return EX_USAGE;
	}
	if (optind + 1 != argc) {
		hc_err("report: give exactly one profile FILE (see hotcold report --help)");
		return EX_USAGE;
	}
	path = argv[optind];

	{
		FILE *f = fopen(path, "re");
		long size;

		if (!f) {
			hc_err("report: cannot read %s: %s", path, strerror(errno));
			return EX_NOINPUT;
		}
		if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 &&
		    (unsigned long long)size > REPORT_MAX_FILE_BYTES) {
			fclose(f);
			hc_err("report: %s is larger than 1 GiB", path);
			return EX_DATAERR;
		}
		rewind(f);
		doc = json_loadf(f, JSON_REJECT_DUPLICATES, &jerr);
		fclose(f);
	}
	if (!doc) {
		hc_err("report: %s is not valid JSON: %s (line %d, column %d)", path, jerr.text,
		       jerr.line, jerr.column);
		return EX_DATAERR;
	}
	schema = json_string_value(json_object_get(doc, "schema"));
	if (!schema || strcmp(schema, HC_PROFILE_SCHEMA)) {
		hc_err("report: %s is not a %s document (schema: %s)", path, HC_PROFILE_SCHEMA,
		       schema ? schema : "missing");
		rc = EX_DATAERR;
		goto out;
	}
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
