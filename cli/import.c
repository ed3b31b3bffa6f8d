// SPDX-License-Identifier: GPL-2.0-only
/*
 * hotcold import: `record`'s JSON captures into serve's data directory (store/disk.h), so that
 * scheduled captures and the continuous history are browsed on one timeline (docs/cli.md,
 * "import"; docs/scheduled.md).
 *
 * Every file is read and checked before anything is written: one bad file and nothing of the
 * invocation is imported. A capture has no per-second breakdown, so each path's self weights
 * are spread evenly over the whole seconds the capture touches (the remainder on the last, so
 * that the sums are exact to the ns) and its histograms land in its first second.
 * DIR/imported.list names what was imported: the same capture is never added twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sysexits.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/hash.h"
#include "base/why.h"
#include "cli/cli.h"
#include "privsep/run.h"
#include "profile/encode.h"
#include "profile/hist.h"
#include "profile/profile.h"
#include "profile/store.h"
#include "profile/tree.h"
#include "store/disk.h"

/* serve's: the captures' directory is root's, the store in it --user's */
#define DEFAULT_DATA_DIR "/var/lib/hotcold/store"
#define DEFAULT_USER "nobody"
#define IMPORT_LIST "imported.list"
#define IMPORT_MAX_FILE_BYTES (1ull << 30)
#define NS ((int64_t)1000000000)
/* Import writes everything and drops nothing: serve applies its own --retention and
 * --max-disk when it next runs. */
#define KEEP_ALL_S (100ull * 365 * 86400)
/* Seconds sealed at a time: the writer's queue holds 120 at most. */
#define CHUNK_S 10

struct import_cfg {
	const char *data_dir;
	const char *user;
	bool verbose;
};

/* One input file, read and checked. */
struct capture {
	const char *path;
	char *buf; /* the file's bytes until parsed */
	size_t len;
	struct hc_profile *p;
	uint64_t hash; /* FNV-1a of the file's bytes */
	int64_t first_s, n_s;
	struct hc_hist *hist[HC_STORE_H_SCHED_MAX];
	char skip[1400]; /* why it is not imported; empty: imported */
	uint64_t paths, cells;
};

/* A path with self weight, as dictionary ids. */
struct self_path {
	uint32_t task, stack;
	struct hc_weights w;
};

struct paths {
	struct self_path *v;
	size_t n, cap;
};

/* A line of DIR/imported.list. */
struct listed {
	uint64_t hash;
	int64_t started_at_ns;
	char host[256], when[64], path[1024];
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: hotcold import [--data-dir DIR] [-v] FILE...\n"
		"\n"
		"Load captures of 'hotcold record' (hotcold-profile/1 JSON files) into serve's "
		"data\n"
		"directory, so that 'hotcold serve --data-dir DIR' shows them on its timeline "
		"with\n"
		"the continuous history. A capture has no per-second breakdown: its weights are\n"
		"spread evenly over the seconds it covers, its histograms put in its first "
		"second.\n"
		"Every file is checked before anything is written: one bad file, nothing "
		"imported.\n"
		"A file imported before (DIR/" IMPORT_LIST ") is skipped.\n"
		"\n"
		"      --data-dir DIR  the data directory (default " DEFAULT_DATA_DIR ")\n"
		"      --user NAME     when run as root: a missing DIR is created for NAME\n"
		"                      (default " DEFAULT_USER
		", as serve); the files are parsed and\n"
		"                      written as DIR's owner (NAME when that is root), without\n"
		"                      capabilities, under a seccomp allow-list\n"
		"  -v, --verbose       more about each file and the store\n"
		"  -h, --help          this text\n"
		"\n"
		"serve holds DIR while it runs: stop serve, import, start serve again.\n"
		"Exit codes: 0 ok (files skipped as imported before included), 64 usage,\n"
		"65 a file is not a valid hotcold-profile/1 capture (nothing imported), 66 a file\n"
		"cannot be read, 70 the sandboxed process died, 71 system error, 73 DIR cannot be\n"
		"created or written, 74 writing the store failed, 75 another hotcold (a running\n"
		"serve) holds DIR, 77 the process cannot become DIR's owner.\n");
}

static int parse_args(int argc, char **argv, struct import_cfg *cfg)
{
	enum { OPT_DATA_DIR = 256, OPT_USER };
	static const struct option opts[] = {
		{"data-dir", required_argument, NULL, OPT_DATA_DIR},
		{"user", required_argument, NULL, OPT_USER},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{0},
	};
	int c;

	cfg->data_dir = DEFAULT_DATA_DIR;
	cfg->user = DEFAULT_USER;
	optind = 1;
	while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
		switch (c) {
		case OPT_DATA_DIR:
			if (!*optarg || !strcmp(optarg, "none")) {
				hc_err("import: --data-dir: a directory is needed");
				return EX_USAGE;
			}
			cfg->data_dir = optarg;
			break;
		case OPT_USER:
			if (!*optarg) {
				hc_err("import: --user: empty name");
				return EX_USAGE;
			}
			cfg->user = optarg;
			break;
		case 'v':
			cfg->verbose = true;
			break;
		case 'h':
			usage(stdout);
			return -1;
		default:
			usage(stderr);
			return EX_USAGE;
		}
	}
	if (optind >= argc) {
		hc_err("import: no FILE given (try 'hotcold import --help')");
		return EX_USAGE;
	}
	return 0;
}

/* ---- reading and checking ---- */

/* The whole file: 0, or an exit code having said why. */
static int read_bytes(const char *path, char **buf, size_t *len)
{
	FILE *f = fopen(path, "re");
	struct stat st;
	size_t n;

	*buf = NULL;
	if (!f || fstat(fileno(f), &st)) {
		hc_err("import: cannot read %s: %s", path, strerror(errno));
		if (f)
			fclose(f);
		return EX_NOINPUT;
	}
	if (!S_ISREG(st.st_mode)) {
		fclose(f);
		hc_err("import: cannot read %s: not a regular file", path);
		return EX_NOINPUT;
	}
	if ((unsigned long long)st.st_size > IMPORT_MAX_FILE_BYTES) {
		fclose(f);
		hc_err("import: %s is larger than 1 GiB", path);
		return EX_DATAERR;
	}
	*buf = malloc((size_t)st.st_size + 1);
	if (!*buf) {
		fclose(f);
		hc_err("import: reading %s: out of memory", path);
		return EX_OSERR;
	}
	n = fread(*buf, 1, (size_t)st.st_size + 1, f);
	if (ferror(f)) {
		hc_err("import: cannot read %s: %s", path, strerror(errno ? errno : EIO));
		fclose(f);
		free(*buf);
		*buf = NULL;
		return EX_NOINPUT;
	}
	fclose(f);
	*len = n;
	return 0;
}

static bool weights_zero(const struct hc_weights *w)
{
	return !w->on_cpu_ns && !w->off_cpu_ns && !w->runqueue_ns && !w->samples;
}

/* n's weights less its children's (the decoder guarantees they never exceed it). */
static struct hc_weights self_weights(const struct hc_node *n)
{
	struct hc_weights w = *hc_node__weights(n);

	for (size_t i = 0; i < hc_node__child_count(n); i++) {
		const struct hc_weights *c = hc_node__weights(hc_node__child(n, i));

		w.on_cpu_ns -= c->on_cpu_ns;
		w.off_cpu_ns -= c->off_cpu_ns;
		w.runqueue_ns -= c->runqueue_ns;
		w.samples -= c->samples;
	}
	return w;
}

/* Every weight of the tree must sit on a thread's path, as serve stores it: root ->
 * processes -> threads -> frames. 0 or -EINVAL with why. */
static int check_tree(const struct hc_tree *t, char *why, size_t wl)
{
	const struct hc_node *root = hc_tree__root(t);
	struct hc_weights w = self_weights(root);

	if (!weights_zero(&w))
		return hc_why(-EINVAL, why, wl,
			      "the flame graph's root has weight outside any process (a pruned "
			      "export of serve?)");
	for (size_t i = 0; i < hc_node__child_count(root); i++) {
		const struct hc_node *p = hc_node__child(root, i);

		if (hc_node__kind(p) != HC_NODE_PROCESS)
			return hc_why(
				-EINVAL, why, wl,
				"a %s node \"%s\" directly under the root (processes expected)",
				hc_node_kind__name(hc_node__kind(p)), hc_node__name(p));
		w = self_weights(p);
		if (!weights_zero(&w))
			return hc_why(-EINVAL, why, wl,
				      "process \"%s\" (pid %" PRIu64
				      ") has weight outside any thread",
				      hc_node__name(p), hc_node__id(p));
		for (size_t j = 0; j < hc_node__child_count(p); j++) {
			const struct hc_node *th = hc_node__child(p, j);

			if (hc_node__kind(th) != HC_NODE_THREAD)
				return hc_why(-EINVAL, why, wl,
					      "a %s node \"%s\" directly under process \"%s\" "
					      "(threads expected)",
					      hc_node_kind__name(hc_node__kind(th)),
					      hc_node__name(th), hc_node__name(p));
		}
	}
	return 0;
}

/* The histograms serve keeps, parsed; others (lock_wait_ns) are left out. 0 or -EINVAL. */
static int load_hists(struct capture *c, bool verbose, char *why, size_t wl)
{
	const char *name;
	json_t *hj;

	json_object_foreach (c->p->histograms, name, hj) {
		int h = hc_store_hist__by_name(name);
		struct hc_hist *want, *got;
		bool same;

		if (h < 0 || h >= HC_STORE_H_SCHED_MAX) {
			if (verbose)
				fprintf(stderr, "hotcold: import: %s: histogram %s not imported\n",
					c->path, name);
			continue;
		}
		got = hc_hist__from_json(hj, why, wl);
		if (!got)
			return errno == ENOMEM ? -ENOMEM : -EINVAL;
		want = hc_store_hist__new((enum hc_store_hist)h);
		if (!want) {
			hc_hist__free(got);
			return -ENOMEM;
		}
		same = hc_hist__type(got) == hc_hist__type(want) &&
		       !strcmp(hc_hist__unit(got), hc_hist__unit(want)) &&
		       hc_hist__lower(got) == hc_hist__lower(want) &&
		       hc_hist__upper(got) == hc_hist__upper(want) &&
		       hc_hist__step(got) == hc_hist__step(want);
		hc_hist__free(want);
		if (!same) {
			hc_hist__free(got);
			return hc_why(-EINVAL, why, wl,
				      "histogram %s has another shape than serve's", name);
		}
		c->hist[h] = got;
	}
	return 0;
}

/* Parse and check one file read already. 0, or an exit code having said why. */
static int load_capture(struct capture *c, bool verbose)
{
	json_error_t jerr;
	const char *schema;
	char why[256];
	json_t *doc;
	int64_t end_ns = 0;
	int err;

	doc = json_loadb(c->buf, c->len, JSON_REJECT_DUPLICATES, &jerr);
	free(c->buf);
	c->buf = NULL;
	if (!doc) {
		hc_err("import: %s is not valid JSON: %s (line %d, column %d)", c->path, jerr.text,
		       jerr.line, jerr.column);
		return EX_DATAERR;
	}
	schema = json_string_value(json_object_get(doc, "schema"));
	if (!schema || strcmp(schema, HC_PROFILE_SCHEMA)) {
		hc_err("import: %s is not a %s document (schema: %s)", c->path, HC_PROFILE_SCHEMA,
		       schema ? schema : "missing");
		json_decref(doc);
		return EX_DATAERR;
	}
	err = hc_profile__from_json(doc, &c->p, why, sizeof(why));
	json_decref(doc);
	if (!err)
		err = check_tree(c->p->tree, why, sizeof(why));
	if (!err)
		err = load_hists(c, verbose, why, sizeof(why));
	if (!err &&
	    (c->p->started_at_ns < 0 ||
	     __builtin_add_overflow(c->p->started_at_ns, (int64_t)c->p->duration_ns, &end_ns) ||
	     c->p->duration_ns > (uint64_t)INT64_MAX))
		err = hc_why(-EINVAL, why, sizeof(why), "its time range is outside 1970..2262");
	if (err == -ENOMEM) {
		hc_err("import: reading %s: out of memory", c->path);
		return EX_OSERR;
	}
	if (err) {
		hc_err("import: %s is not a valid capture: %s", c->path, why);
		return EX_DATAERR;
	}
	/* every second the capture touches: [started_at, started_at + duration) */
	c->first_s = c->p->started_at_ns / NS;
	c->n_s = (end_ns + NS - 1) / NS - c->first_s;
	if (c->n_s < 1)
		c->n_s = 1;
	return 0;
}

static void capture_release(struct capture *c)
{
	free(c->buf);
	hc_profile__free(c->p);
	for (int h = 0; h < HC_STORE_H_SCHED_MAX; h++)
		hc_hist__free(c->hist[h]);
}

/* ---- DIR/imported.list ---- */

/* Control characters and tabs would break the line format: '?' instead. */
static void clean(char *dst, size_t n, const char *src)
{
	size_t i = 0;

	for (; src && src[i] && i + 1 < n; i++)
		dst[i] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '?' : src[i];
	dst[i] = 0;
}

static void rfc3339_s(int64_t ns, char *out, size_t n)
{
	time_t t = (time_t)(ns / NS);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, n, "%" PRId64 "s", ns / NS);
}

/* The lines of DIR/imported.list (none when it does not exist). 0 or -errno. */
static int read_list(const char *dir, struct listed **out, size_t *n_out)
{
	char path[4200], line[2048];
	struct listed *v = NULL;
	size_t n = 0;
	FILE *f;

	*out = NULL;
	*n_out = 0;
	snprintf(path, sizeof(path), "%s/%s", dir, IMPORT_LIST);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f)) {
		struct listed l = {0};
		struct listed *nv;

		line[strcspn(line, "\n")] = 0;
		if (line[0] == '#' ||
		    sscanf(line, "%" SCNx64 "\t%" SCNd64 "\t%255[^\t]\t%63[^\t]\t%1023[^\n]",
			   &l.hash, &l.started_at_ns, l.host, l.when, l.path) < 3)
			continue;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			fclose(f);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = l;
	}
	fclose(f);
	*out = v;
	*n_out = n;
	return 0;
}

/* Mark captures imported before (or given twice) as skipped. */
/* The host as imported.list writes it: control characters '?', "-" when none. */
static void list_host(const struct hc_profile *p, char *out, size_t n)
{
	clean(out, n, p->host);
	if (!out[0])
		snprintf(out, n, "-");
}

/* The same capture: the same bytes, or the same host and start to the ns. */
static bool same_capture(uint64_t hash, int64_t started_at_ns, const char *host,
			 const struct capture *c)
{
	char h[256];

	list_host(c->p, h, sizeof(h));
	return hash == c->hash || (started_at_ns == c->p->started_at_ns && !strcmp(host, h));
}

/* Mark captures imported before (or given twice) as skipped. */
static void mark_skipped(struct capture *c, size_t n, const struct listed *l, size_t nl)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < nl && !c[i].skip[0]; k++)
			if (same_capture(l[k].hash, l[k].started_at_ns, l[k].host, &c[i]))
				snprintf(c[i].skip, sizeof(c[i].skip),
					 "imported before, on %s from %s", l[k].when, l[k].path);
		for (size_t k = 0; k < i && !c[i].skip[0]; k++) {
			char h[256];

			list_host(c[k].p, h, sizeof(h));
			if (!c[k].skip[0] &&
			    same_capture(c[k].hash, c[k].p->started_at_ns, h, &c[i]))
				snprintf(c[i].skip, sizeof(c[i].skip),
					 "the same capture as %s, given before it", c[k].path);
		}
	}
}

/* Append the imported captures and make the lines durable. 0 or -errno. */
static int append_list(const char *dir, const struct capture *c, size_t n)
{
	char path[4200], host[256], file[1024], when[64];
	struct timespec now;
	int fd, err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, IMPORT_LIST);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "a");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	rfc3339_s((int64_t)now.tv_sec * NS, when, sizeof(when));
	for (size_t i = 0; i < n; i++) {
		if (c[i].skip[0])
			continue;
		list_host(c[i].p, host, sizeof(host));
		clean(file, sizeof(file), c[i].path);
		fprintf(f, "%016" PRIx64 "\t%" PRId64 "\t%s\t%s\t%s\n", c[i].hash,
			c[i].p->started_at_ns, host, when, file);
	}
	if (fflush(f) || fsync(fd))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

/* ---- writing ---- */

static int add_self(struct paths *ps, uint32_t task, uint32_t stack, const struct hc_weights *w)
{
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 256;
		struct self_path *v = realloc(ps->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ps->v = v;
		ps->cap = cap;
	}
	ps->v[ps->n++] = (struct self_path){.task = task, .stack = stack, .w = *w};
	return 0;
}

static void node_elem(const struct hc_node *n, struct hc_path_elem *e)
{
	*e = (struct hc_path_elem){
		.kind = hc_node__kind(n),
		.name = hc_node__name(n),
		.module = hc_node__module(n),
		.id = hc_node__id(n),
		.offset = hc_node__offset(n),
		.inlined = hc_node__inlined(n),
	};
}

/* The frames below a thread, as stacks of the disk dictionary (serve's mapping: backend.c). */
static int walk_frames(struct hc_disk *d, const struct hc_node *n, uint32_t task, uint32_t stack,
		       struct paths *ps)
{
	struct hc_weights w = self_weights(n);
	int err = 0;

	if (!weights_zero(&w))
		err = add_self(ps, task, stack, &w);
	for (size_t i = 0; !err && i < hc_node__child_count(n); i++) {
		const struct hc_node *ch = hc_node__child(n, i);
		struct hc_path_elem e;
		int64_t frame, sid;

		node_elem(ch, &e);
		frame = hc_disk__frame(d, &e);
		sid = frame < 0 ? frame : hc_disk__stack(d, stack, (uint32_t)frame);
		err = sid < 0 ? (int)sid : walk_frames(d, ch, task, (uint32_t)sid, ps);
	}
	return err;
}

static int collect_paths(struct hc_disk *d, const struct hc_tree *t, struct paths *ps)
{
	const struct hc_node *root = hc_tree__root(t);
	int err = 0;

	for (size_t i = 0; !err && i < hc_node__child_count(root); i++) {
		const struct hc_node *p = hc_node__child(root, i);
		struct hc_path_elem pe;

		node_elem(p, &pe);
		for (size_t j = 0; !err && j < hc_node__child_count(p); j++) {
			const struct hc_node *th = hc_node__child(p, j);
			struct hc_path_elem te;
			int64_t task;

			node_elem(th, &te);
			task = hc_disk__task(d, &pe, &te);
			err = task < 0 ? (int)task : walk_frames(d, th, (uint32_t)task, 0, ps);
		}
	}
	return err;
}

/* Part i of n of v: v / n each, the remainder on the last. */
static uint64_t share(uint64_t v, int64_t i, int64_t n)
{
	return v / (uint64_t)n + (i == n - 1 ? v % (uint64_t)n : 0);
}

static struct hc_weights weights_share(const struct hc_weights *w, int64_t i, int64_t n,
				       uint64_t period_ns)
{
	struct hc_weights s = {
		.samples = share(w->samples, i, n),
		.off_cpu_ns = share(w->off_cpu_ns, i, n),
		.runqueue_ns = share(w->runqueue_ns, i, n),
	};
	uint64_t on;

	/* on-CPU time that is samples x period stays so in each second (the store encodes it
	 * as such, and the parts still add up to the whole) */
	if (period_ns && !__builtin_mul_overflow(w->samples, period_ns, &on) && on == w->on_cpu_ns)
		s.on_cpu_ns = s.samples * period_ns;
	else
		s.on_cpu_ns = share(w->on_cpu_ns, i, n);
	return s;
}

/* Each bucket's count at a value inside the bucket, into second sec. */
static int add_hists(struct hc_disk *d, const struct capture *c, int64_t sec)
{
	int err = 0;

	for (int h = 0; h < HC_STORE_H_SCHED_MAX && !err; h++) {
		json_t *series = json_object_get(
			json_object_get(c->p->histograms, hc_store_hist__name(h)), "series");
		size_t nb, i;
		json_t *s;

		if (!c->hist[h])
			continue;
		nb = hc_hist__nbuckets(c->hist[h]);
		json_array_foreach (series, i, s) {
			const char *key = json_string_value(json_object_get(s, "key"));
			const uint64_t *counts = key ? hc_hist__counts(c->hist[h], key) : NULL;

			for (size_t b = 0; counts && b < nb && !err; b++) {
				int64_t lo, hi;
				bool has_lo;

				if (!counts[b])
					continue;
				hc_hist__bucket_bounds(c->hist[h], b, &lo, &hi, &has_lo, NULL);
				err = hc_disk__add_hist(d, HC_DISK_MAIN, sec, (enum hc_store_hist)h,
							0, key, has_lo ? lo : hi, counts[b]);
			}
		}
	}
	return err;
}

/* Samples of a second over the heat map's rows, evenly. */
static int add_heat(struct hc_disk *d, int64_t sec, uint64_t samples)
{
	int err = 0;

	for (unsigned int r = 0; r < HC_STORE_HEAT_ROWS && !err; r++) {
		uint64_t v = samples / HC_STORE_HEAT_ROWS + (r < samples % HC_STORE_HEAT_ROWS);

		if (v)
			err = hc_disk__add_heat(d, sec, r, v);
	}
	return err;
}

/* A capture of a time serve recorded (or another capture covers) counts the same events
 * twice: say so. */
static void warn_overlap(struct hc_disk *d, const struct capture *c)
{
	struct hc_store_slot *slots = NULL;
	struct hc_disk_range r;
	bool held = false;
	size_t n = 0;

	if (hc_disk__pick(d, c->first_s, c->first_s + c->n_s, &r) || r.to_s <= r.from_s ||
	    hc_disk__timeline(d, &r, r.to_s - r.from_s, &slots, &n))
		return;
	for (size_t i = 0; i < n; i++)
		held |= slots[i].samples || slots[i].on_cpu_ns || slots[i].off_cpu_ns ||
			slots[i].runqueue_ns;
	free(slots);
	/* a coarse tier's windows may reach past the capture: "around" then */
	if (held)
		hc_err("import: warning: the store already holds data %s %s's time (serve was "
		       "recording, or another capture covers it): both are added",
		       r.tier ? "in windows around" : "of", c->path);
}

static int import_capture(struct hc_disk *d, struct capture *c)
{
	struct paths ps = {0};
	int err;

	warn_overlap(d, c);
	err = collect_paths(d, c->p->tree, &ps);

	c->paths = ps.n;
	for (int64_t i = 0; !err && i < c->n_s; i++) {
		int64_t sec = c->first_s + i;
		uint64_t samples = 0;

		for (size_t k = 0; !err && k < ps.n; k++) {
			struct hc_weights w =
				weights_share(&ps.v[k].w, i, c->n_s, c->p->sampling.period_ns);

			if (weights_zero(&w))
				continue;
			samples += w.samples;
			err = hc_disk__add(d, HC_DISK_MAIN, sec, ps.v[k].task, ps.v[k].stack, &w);
		}
		if (!err)
			err = add_heat(d, sec, samples);
		if (!err && i == 0)
			err = add_hists(d, c, sec);
		if (!err && ((i + 1) % CHUNK_S == 0 || i == c->n_s - 1)) {
			hc_disk__sync(d); /* the previous chunk written: the queue stays short */
			err = hc_disk__seal(d, sec);
		}
	}
	free(ps.v);
	hc_disk__sync(d); /* written: the next capture's overlap check sees it */
	return err;
}

/* ---- the data directory ---- */

static int dir_exit_code(int err)
{
	return err == EWOULDBLOCK ? EX_TEMPFAIL : err == ENOMEM ? EX_OSERR : EX_CANTCREAT;
}

/* Lock DIR (created for --user when we are root and it is missing), then become its owner. 0
 * or an exit code having said why; *fd the lock. */
static int take_dir(const struct import_cfg *cfg, int *fd)
{
	struct passwd *pw = NULL;
	struct stat st;
	char why[512];

	if (geteuid() == 0 && stat(cfg->data_dir, &st) && errno == ENOENT) {
		pw = getpwnam(cfg->user);
		if (!pw) {
			hc_err("import: --user %s: no such user", cfg->user);
			return EX_USAGE;
		}
	}
	*fd = hc_disk__lock(cfg->data_dir, pw ? (int)pw->pw_uid : -1, pw ? (int)pw->pw_gid : -1,
			    why, sizeof(why));
	if (*fd == -EWOULDBLOCK) {
		hc_err("import: %s; a running serve holds its data directory: stop serve, import, "
		       "start serve again",
		       why);
		return EX_TEMPFAIL;
	}
	if (*fd < 0) {
		hc_err("import: --data-dir: %s", why);
		return dir_exit_code(-*fd);
	}
	return 0;
}

/* Who the sandboxed process becomes (as root): DIR's owner, whose files serve writes; --user
 * when that is root (serve, run as --user, cannot write such a directory either). */
static const char *child_user(const struct import_cfg *cfg, char *buf, size_t len)
{
	struct passwd *owner;
	struct stat st;

	if (geteuid() || stat(cfg->data_dir, &st) || st.st_uid == 0)
		return cfg->user;
	owner = getpwuid(st.st_uid);
	if (!owner)
		return cfg->user;
	snprintf(buf, len, "%s", owner->pw_name);
	return buf;
}

static void print_capture(const struct capture *c, bool verbose)
{
	const struct hc_weights *w = hc_node__weights(hc_tree__root(c->p->tree));
	char from[64], to[64];

	rfc3339_s(c->first_s * NS, from, sizeof(from));
	rfc3339_s((c->first_s + c->n_s) * NS, to, sizeof(to));
	if (c->skip[0]) {
		printf("skipped %s: %s\n", c->path, c->skip);
		return;
	}
	printf("imported %s: %s .. %s (%" PRId64 " s), on-CPU %" PRIu64 " ns (%" PRIu64
	       " samples), blocked %" PRIu64 " ns, run-queue %" PRIu64 " ns\n",
	       c->path, from, to, c->n_s, w->on_cpu_ns, w->samples, w->off_cpu_ns, w->runqueue_ns);
	if (verbose)
		printf("  host %s, started %" PRId64 " ns, duration %" PRIu64 " ns, %" PRIu64
		       " paths with self weight, %d histograms, FNV-1a %016" PRIx64 "\n",
		       c->p->host ? c->p->host : "?", c->p->started_at_ns, c->p->duration_ns,
		       c->paths, (int)json_object_size(c->p->histograms), c->hash);
}

/* Warnings that do not stop the import: another machine's capture, one older than serve's
 * default retention. */
static void warn_capture(const struct capture *c)
{
	struct utsname u;

	if (c->skip[0])
		return;
	if (!uname(&u) && c->p->host && strcmp(u.nodename, c->p->host))
		hc_err("import: warning: %s was captured on %s, not on this machine (%s): its "
		       "processes join this machine's timeline",
		       c->path, c->p->host, u.nodename);
	if ((int64_t)time(NULL) - (c->first_s + c->n_s) > 7 * 86400)
		hc_err("import: warning: %s is older than 7 days: serve drops it unless its "
		       "--retention reaches back that far",
		       c->path);
}

static int write_store(const struct import_cfg *cfg, int lock_fd, struct capture *c, size_t n,
		       struct hc_disk_stats *out)
{
	struct hc_disk_opts o = {
		.dir = cfg->data_dir,
		.retention_s = KEEP_ALL_S,
		.max_bytes = UINT64_MAX,
		.tier_keep_s = {KEEP_ALL_S, KEEP_ALL_S},
		.lock_fd = lock_fd,
		/* windows are merged once, by hc_disk__maintain() at the end, not while writing */
		.compact_every_s = KEEP_ALL_S,
	};
	struct hc_disk_stats st;
	char why[512] = "";
	struct hc_disk *d;
	int err = 0;

	for (size_t i = 0; i < n && !o.period_ns; i++)
		if (!c[i].skip[0])
			o.period_ns = c[i].p->sampling.period_ns;
	d = hc_disk__open(&o, why, sizeof(why));
	if (!d) {
		err = errno;
		hc_err("import: --data-dir: %s", why[0] ? why : strerror(err));
		return dir_exit_code(err);
	}
	hc_disk__stats(d, &st);
	if (st.quarantined)
		hc_err("import: --data-dir: %s", why);
	for (size_t i = 0; i < n && !err; i++)
		if (!c[i].skip[0])
			err = import_capture(d, &c[i]);
	if (!err) {
		hc_disk__maintain(d);
		hc_disk__stats(d, &st);
	}
	if (err) {
		hc_err("import: adding to the store: %s", strerror(-err));
		hc_disk__close(d);
		return err == -ENOMEM ? EX_OSERR : EX_SOFTWARE;
	}
	hc_disk__close(d);
	if (st.write_failures || st.dropped_queue_s || st.dropped_write_s) {
		hc_err("import: writing %s/%s failed (%" PRIu64 " failed writes, %" PRIu64
		       " seconds lost): part of the captures may be in the store",
		       cfg->data_dir, HC_DISK_FILE, st.write_failures,
		       st.dropped_queue_s + st.dropped_write_s);
		return EX_IOERR;
	}
	*out = st;
	return 0;
}

static int run_import(const struct import_cfg *cfg, struct capture *c, size_t n, int lock_fd)
{
	struct hc_disk_stats st = {0};
	struct listed *l = NULL;
	size_t nl = 0, todo = 0;
	int rc, err;

	err = read_list(cfg->data_dir, &l, &nl);
	if (err) {
		hc_err("import: reading %s/%s: %s", cfg->data_dir, IMPORT_LIST, strerror(-err));
		return err == -ENOMEM ? EX_OSERR : EX_CANTCREAT;
	}
	mark_skipped(c, n, l, nl);
	free(l);
	for (size_t i = 0; i < n; i++) {
		todo += !c[i].skip[0];
		warn_capture(&c[i]);
	}
	rc = todo ? write_store(cfg, lock_fd, c, n, &st) : 0;
	if (!rc && todo) {
		err = append_list(cfg->data_dir, c, n);
		if (err) {
			hc_err("import: the captures are in the store, but %s/%s could not be "
			       "written (%s): importing them again would count them twice",
			       cfg->data_dir, IMPORT_LIST, strerror(-err));
			rc = EX_IOERR;
		}
	}
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++)
		print_capture(&c[i], cfg->verbose);
	if (cfg->verbose && todo)
		printf("store %s/%s: %" PRIu64 " bytes, %" PRIu64 " frames, %" PRIu64
		       " tasks, %" PRIu64 " stacks, %" PRIu64 " writes\n",
		       cfg->data_dir, HC_DISK_FILE, st.bytes, st.frames, st.tasks, st.stacks,
		       st.writes);
	return 0;
}

struct job {
	const struct import_cfg *cfg;
	struct capture *c;
	size_t n;
	int lock_fd;
};

/* The sandboxed process: parse and check every file, then write. An exit code. */
static int import_worker(void *ctx, const struct hc_privsep_child *child)
{
	struct job *j = ctx;
	int rc = 0;

	(void)child;
	for (size_t i = 0; i < j->n && !rc; i++)
		rc = load_capture(&j->c[i], j->cfg->verbose);
	if (rc == EX_DATAERR && j->n > 1)
		hc_err("import: nothing imported");
	if (!rc)
		rc = run_import(j->cfg, j->c, j->n, j->lock_fd);
	/* ours to flush: the process ends with _exit() */
	if (fflush(stdout) && !rc)
		rc = EX_IOERR;
	return rc;
}

static int import_refused(void *ctx, int err, const char *why)
{
	(void)ctx;
	return hc_sandbox_refused("import: ", err, why);
}

/*
 * Read every file (as the caller: captures are root's 0600 files) and take DIR; the parsing
 * and writing happen in a child that becomes DIR's owner with no capabilities, under serve's
 * store allow-list (the one its HTTP process writes the store with).
 */
static int import_files(const struct import_cfg *cfg, struct capture *c, size_t n)
{
	struct job j = {.cfg = cfg, .c = c, .n = n, .lock_fd = -1};
	struct hc_privsep_result res;
	char user[256], why[256];
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		rc = read_bytes(c[i].path, &c[i].buf, &c[i].len);
		if (!rc)
			c[i].hash = hc_hash_fnv1a(HC_FNV1A_OFFSET, c[i].buf, c[i].len);
	}
	if (!rc)
		rc = take_dir(cfg, &j.lock_fd);
	if (!rc) {
		const struct hc_privsep_opts opts = {
			.sandbox = HC_SANDBOX_SERVER_STORE,
			.user = child_user(cfg, user, sizeof(user)),
			.refused = import_refused,
		};

		fflush(stdout);
		if (hc_privsep__run(&opts, import_worker, &j, &res, why, sizeof(why))) {
			hc_err("import: %s", why);
			rc = EX_OSERR;
		} else {
			rc = hc_child_exit_code(res.status, "import process");
		}
	}
	if (j.lock_fd >= 0)
		close(j.lock_fd);
	return rc;
}

int cmd_import(int argc, char **argv)
{
	struct import_cfg cfg = {0};
	struct capture *c;
	size_t n;
	int rc = parse_args(argc, argv, &cfg);

	if (rc)
		return rc < 0 ? 0 : rc;
	n = (size_t)(argc - optind);
	c = calloc(n, sizeof(*c));
	if (!c) {
		hc_err("import: out of memory");
		return EX_OSERR;
	}
	for (size_t i = 0; i < n; i++)
		c[i].path = argv[optind + (int)i];
	rc = import_files(&cfg, c, n);
	for (size_t i = 0; i < n; i++) {
		capture_release(&c[i]);
	}
	free(c);
	return rc;
}
