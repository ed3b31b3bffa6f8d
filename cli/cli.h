/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cli/: one file per subcommand, dispatched from the table in main.c.
 * Exit codes follow sysexits.h (documented in docs/cli.md):
 *   0 success; 64 EX_USAGE bad flags or values; 65 EX_DATAERR a malformed input file;
 *   66 EX_NOINPUT no such process, or an input file cannot be read;
 *   69 EX_UNAVAILABLE BPF, BTF or perf_event unavailable; 70 EX_SOFTWARE internal error;
 *   71 EX_OSERR out of memory or a system call failed; 73 EX_CANTCREAT output cannot be
 *   created; 74 EX_IOERR output could not be written (nothing partial is left);
 *   75 EX_TEMPFAIL another capture holds the output's lock; 77 EX_NOPERM not privileged.
 */
#ifndef HOTCOLD_CLI_H
#define HOTCOLD_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <getopt.h>
#include <signal.h>

#include "base/timespec.h"
#include "profile/profile.h"

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_import(int argc, char **argv);

/* Options record and serve share (cli/common.c). */
struct hc_common_args {
	struct hc_rate rate; /* -F, default 99 Hz */
	bool verbose;	     /* -v */
	bool no_demangle;
	bool no_inline; /* no inline frames from DWARF (docs/unwinding.md) */
	bool no_offcpu;
	uint64_t min_block_ns;
	uint64_t stack_budget; /* 0: the default */
	bool no_stack_reuse;
	/* User stacks (docs/unwinding.md): --unwind table (the default) walks them in BPF from
	 * compiled unwind tables of --unwind-table-mb MiB of rows; --unwind copy unwinds stack
	 * copies of --stack-copy bytes, at most --copy-budget bytes per second; --unwind fp
	 * walks frame pointers only. */
	bool unwind_fp;
	bool unwind_table;
	bool unwind_given; /* --unwind was given */
	uint32_t unwind_table_mb;
	uint32_t stack_copy_bytes;
	uint64_t copy_budget;
	bool copy_budget_given;
};

#define HC_DEFAULT_STACK_COPY (16u << 10)
#define HC_DEFAULT_UNWIND_TABLE_MB 16u
#define HC_DEFAULT_COPY_BUDGET (32ull << 20)
/* serve's: it runs for days, and its ring buffer holds a quarter of a second of copies. */
#define HC_SERVE_COPY_BUDGET (8ull << 20)

enum {
	HC_OPT_NO_DEMANGLE = 0x1000,
	HC_OPT_NO_OFFCPU,
	HC_OPT_MIN_BLOCK,
	HC_OPT_STACK_BUDGET,
	HC_OPT_NO_STACK_REUSE,
	HC_OPT_UNWIND,
	HC_OPT_STACK_COPY,
	HC_OPT_COPY_BUDGET,
	HC_OPT_NO_INLINE,
	HC_OPT_UNWIND_TABLE_MB,
};

/* getopt_long entries of the shared options (with "F:v" in the short option string). */
#define HC_COMMON_LONGOPTS                                                                \
	{"frequency", required_argument, NULL, 'F'}, {"verbose", no_argument, NULL, 'v'}, \
		{"no-demangle", no_argument, NULL, HC_OPT_NO_DEMANGLE},                   \
		{"no-inline", no_argument, NULL, HC_OPT_NO_INLINE},                       \
		{"no-offcpu", no_argument, NULL, HC_OPT_NO_OFFCPU},                       \
		{"min-block", required_argument, NULL, HC_OPT_MIN_BLOCK},                 \
		{"stack-budget", required_argument, NULL, HC_OPT_STACK_BUDGET},           \
		{"no-stack-reuse", no_argument, NULL, HC_OPT_NO_STACK_REUSE},             \
		{"unwind", required_argument, NULL, HC_OPT_UNWIND},                       \
		{"stack-copy", required_argument, NULL, HC_OPT_STACK_COPY},               \
		{"unwind-table-mb", required_argument, NULL, HC_OPT_UNWIND_TABLE_MB},     \
	{                                                                                 \
		"copy-budget", required_argument, NULL, HC_OPT_COPY_BUDGET                \
	}

void hc_common_args__init(struct hc_common_args *a);
/* One getopt result: 0 handled, -1 not a shared option, EX_USAGE (the reason printed). */
int hc_common_args__parse(struct hc_common_args *a, int opt, const char *arg);
/* "1K", "32M", "4G": bytes. 0, -EINVAL, -ERANGE. */
int hc_size__parse(const char *s, uint64_t *out);
/* Any off-CPU tuning given (what --no-offcpu cannot be combined with). */
bool hc_common_args__offcpu_tuned(const struct hc_common_args *a);
/* --unwind table where the kernel cannot walk tables: asked for, EX_UNAVAILABLE after saying
 * why; the default, copies instead (said on stderr). 0 otherwise. */
int hc_common_args__settle_unwind(struct hc_common_args *a);

/* SIGINT and SIGTERM set hc_stop_requested (a capture or serve then ends cleanly). */
extern volatile sig_atomic_t hc_stop_requested;
void hc_catch_stop_signals(void);

/* The symbolizer keeps one fd per mapped object it has seen: soft RLIMIT_NOFILE to the hard one. */
void hc_raise_nofile_limit(void);

/* The exit code a sandboxed child's wait status stands for: its own, or 70 after saying which
 * signal ended "the <who>" (SIGSYS: a system call outside its seccomp allow-list). */
int hc_child_exit_code(int status, const char *who);
/* -v: what the broker did for a sandboxed child, one line on stderr. */
struct hc_broker_stats;
void hc_broker_stats__print(const struct hc_broker_stats *st);
/* A child could not enter its sandbox (err, why from hc_sandbox__enter): say why after prefix,
 * return its exit code (privsep/run.h: hc_privsep__refused_exit_code). */
int hc_sandbox_refused(const char *prefix, int err, const char *why);

/* One line on stderr, "hotcold: <message>". */
void hc_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Output formats of record and report (docs/formats.md). */
enum hc_format {
	HC_FORMAT_JSON = 0, /* hotcold-profile/1: everything */
	HC_FORMAT_FOLDED,
	HC_FORMAT_PPROF,
	HC_FORMAT_SPEEDSCOPE,
};

/* "json", "folded", "pprof", "speedscope". 0 or -EINVAL. */
int hc_format__parse(const char *s, enum hc_format *out);
/* --kind: "all", "on", "off" (blocked + run-queue) -> HC_W_* bits. 0 or -EINVAL. */
int hc_kind__parse(const char *s, unsigned int *weights);
/* pprof is gzip: refuse to write it to a terminal (prints why). */
bool hc_format__refuse_tty(enum hc_format fmt, FILE *out);
/* Encode p as fmt carrying `weights` (ignored by json). 0 or -errno. */
int hc_format__write(const struct hc_profile *p, enum hc_format fmt, unsigned int weights,
		     FILE *out);

/* libbpf messages: warnings and above only with -v. */
void hc_libbpf_verbose(bool on);

#endif
