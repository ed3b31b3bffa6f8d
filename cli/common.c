// SPDX-License-Identifier: GPL-2.0-only
/* Options `record` and `serve` share: the rate, the off-CPU settings, symbols, verbosity. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sysexits.h>
#include <unistd.h>

#include "bpf/sample.h"
#include "cli/cli.h"
#include "privsep/broker.h"
#include "privsep/run.h"
#include "sampler/sampler.h"
#include "profile/encode.h"

void hc_common_args__init(struct hc_common_args *a)
{
	char why[256];

	*a = (struct hc_common_args){0};
	hc_rate__parse("99", &a->rate, why, sizeof(why));
	/* Call frame information walked in BPF from compiled tables: whole stacks through code
	 * built without frame pointers, no stack copies (docs/unwinding.md#unwind-tables). */
	a->unwind_fp = false;
	a->unwind_table = true;
	a->stack_copy_bytes = HC_DEFAULT_STACK_COPY;
	a->copy_budget = HC_DEFAULT_COPY_BUDGET;
	a->unwind_table_mb = HC_DEFAULT_UNWIND_TABLE_MB;
}

int hc_common_args__parse(struct hc_common_args *a, int opt, const char *arg)
{
	char why[256];

	switch (opt) {
	case 'F':
		if (hc_rate__parse(arg, &a->rate, why, sizeof(why))) {
			hc_err("-F %s: %s", arg, why);
			return EX_USAGE;
		}
		return 0;
	case 'v':
		a->verbose = true;
		return 0;
	case HC_OPT_NO_DEMANGLE:
		a->no_demangle = true;
		return 0;
	case HC_OPT_NO_INLINE:
		a->no_inline = true;
		return 0;
	case HC_OPT_NO_OFFCPU:
		a->no_offcpu = true;
		return 0;
	case HC_OPT_MIN_BLOCK:
		if (hc_duration__parse(arg, &a->min_block_ns, why, sizeof(why))) {
			hc_err("--min-block %s: %s", arg, why);
			return EX_USAGE;
		}
		return 0;
	case HC_OPT_STACK_BUDGET: {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' || v < 1 || v > 1000000) {
			hc_err("--stack-budget %s: a number of stack captures per second per CPU, "
			       "1 to 1000000",
			       arg);
			return EX_USAGE;
		}
		a->stack_budget = v;
		return 0;
	}
	case HC_OPT_NO_STACK_REUSE:
		a->no_stack_reuse = true;
		return 0;
	case HC_OPT_UNWIND:
		a->unwind_given = true;
		/* "dwarf": copy's name before the tables, kept for the command lines that
		 * name it */
		if (!strcmp(arg, "copy") || !strcmp(arg, "dwarf")) {
			a->unwind_fp = false;
			a->unwind_table = false;
		} else if (!strcmp(arg, "fp")) {
			a->unwind_fp = true;
			a->unwind_table = false;
		} else if (!strcmp(arg, "table")) {
			a->unwind_fp = false;
			a->unwind_table = true;
		} else {
			hc_err("--unwind %s: table (call frame information walked in BPF, the "
			       "default), copy (call frame information over stack copies; also "
			       "`dwarf`) or fp (frame pointers only)",
			       arg);
			return EX_USAGE;
		}
		return 0;
	case HC_OPT_UNWIND_TABLE_MB: {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(arg, &end, 10);
		if (errno || end == arg || *end || arg[0] == '-' || v < 1 || v > 2048) {
			hc_err("--unwind-table-mb %s: MiB of unwind table rows (8 bytes each), 1 "
			       "to 2048",
			       arg);
			return EX_USAGE;
		}
		a->unwind_table_mb = (uint32_t)v;
		return 0;
	}
	case HC_OPT_STACK_COPY: {
		uint64_t v;

		if (hc_size__parse(arg, &v) || v < 1024 || v > HC_STACK_COPY_MAX) {
			hc_err("--stack-copy %s: bytes of user stack to copy per stack, 1K to 32K",
			       arg);
			return EX_USAGE;
		}
		a->stack_copy_bytes = (uint32_t)v;
		return 0;
	}
	case HC_OPT_COPY_BUDGET: {
		uint64_t v;

		if (hc_size__parse(arg, &v) || v < (64u << 10) || v > (4ull << 30)) {
			hc_err("--copy-budget %s: bytes of stack copies per second, all CPUs "
			       "together, 64K to 4G (e.g. 32M)",
			       arg);
			return EX_USAGE;
		}
		a->copy_budget = v;
		a->copy_budget_given = true;
		return 0;
	}
	}
	return -1;
}

int hc_size__parse(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned int shift = 0;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -EINVAL;
	switch (*end) {
	case 'G':
	case 'g':
		shift = 30;
		end++;
		break;
	case 'M':
	case 'm':
		shift = 20;
		end++;
		break;
	case 'K':
	case 'k':
		shift = 10;
		end++;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	v <<= shift;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -EINVAL;
	*out = v;
	return 0;
}

bool hc_common_args__offcpu_tuned(const struct hc_common_args *a)
{
	return a->min_block_ns || a->stack_budget || a->no_stack_reuse;
}

volatile sig_atomic_t hc_stop_requested;

static void on_stop_signal(int sig)
{
	(void)sig;
	hc_stop_requested = 1;
}

void hc_catch_stop_signals(void)
{
	struct sigaction sa = {.sa_handler = on_stop_signal}; /* no SA_RESTART: poll()
							       * returns EINTR at once */

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/*
 * The symbolizer holds one fd per distinct mapped object from a process's first sample until
 * the object is resolved after the capture; a busy machine maps more than the default soft
 * limit of 1024. Raise the soft limit to the hard one; a failure shows up as
 * symbolize.object_open_err, not as a crash.
 */
void hc_raise_nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int hc_format__parse(const char *s, enum hc_format *out)
{
	static const char *const names[] = {
		[HC_FORMAT_JSON] = "json",
		[HC_FORMAT_FOLDED] = "folded",
		[HC_FORMAT_PPROF] = "pprof",
		[HC_FORMAT_SPEEDSCOPE] = "speedscope",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum hc_format)i;
			return 0;
		}
	return -EINVAL;
}

int hc_kind__parse(const char *s, unsigned int *weights)
{
	if (!strcmp(s, "all"))
		*weights = HC_W_ALL;
	else if (!strcmp(s, "on"))
		*weights = HC_W_ON;
	else if (!strcmp(s, "off"))
		*weights = HC_W_OFF | HC_W_RUNQ;
	else
		return -EINVAL;
	return 0;
}

bool hc_format__refuse_tty(enum hc_format fmt, FILE *out)
{
	if (fmt != HC_FORMAT_PPROF || !isatty(fileno(out)))
		return false;
	hc_err("pprof is gzipped binary: not written to a terminal (give -o FILE or redirect)");
	return true;
}

int hc_format__write(const struct hc_profile *p, enum hc_format fmt, unsigned int weights,
		     FILE *out)
{
	switch (fmt) {
	case HC_FORMAT_FOLDED:
		return hc_profile__write_folded(p, weights, out);
	case HC_FORMAT_PPROF:
		return hc_profile__write_pprof(p, weights, out);
	case HC_FORMAT_SPEEDSCOPE:
		return hc_profile__write_speedscope(p, weights, out);
	case HC_FORMAT_JSON:
		break;
	}
	return hc_profile__write_json(p, out);
}

int hc_child_exit_code(int status, const char *who)
{
	char why[128];
	int rc = hc_privsep__exit_code(status, why, sizeof(why));

	if (why[0])
		hc_err("the %s %s", who, why);
	return rc;
}

int hc_sandbox_refused(const char *prefix, int err, const char *why)
{
	hc_err("%s%s", prefix, why);
	return hc_privsep__refused_exit_code(err);
}

void hc_broker_stats__print(const struct hc_broker_stats *st)
{
	fprintf(stderr, "hotcold: broker: %llu requests, %llu descriptors passed, %llu refused\n",
		(unsigned long long)st->requests, (unsigned long long)st->opened,
		(unsigned long long)st->refused);
}

int hc_common_args__settle_unwind(struct hc_common_args *a)
{
	char why[160];

	if (!a->unwind_table || hc_sampler__tables_supported(why, sizeof(why)) != 0)
		return 0;
	if (a->unwind_given) {
		hc_err("--unwind table: %s", why);
		return EX_UNAVAILABLE;
	}
	hc_err("warning: %s: user stacks are unwound from stack copies instead (--unwind copy)",
	       why);
	a->unwind_table = false;
	return 0;
}
