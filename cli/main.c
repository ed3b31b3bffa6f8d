// SPDX-License-Identifier: GPL-2.0-only
/* hotcold: a continuous on/off-CPU sampling profiler. Options -> config -> modules -> run. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include <bpf/libbpf.h>

#include "cli/cli.h"

#ifndef HOTCOLD_VERSION
#define HOTCOLD_VERSION "unknown"
#endif

static bool libbpf_verbose;

void hc_err(const char *fmt, ...)
{
	va_list ap;

	fputs("hotcold: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!libbpf_verbose || level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void hc_libbpf_verbose(bool on)
{
	libbpf_verbose = on;
}

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
} commands[] = {
	{"record", cmd_record, "sample every CPU for a while and write a profile"},
	{"report", cmd_report,
	 "convert a saved profile (folded, pprof, speedscope), diff two, print a histogram"},
	{"serve", cmd_serve,
	 "profile continuously; flame graphs and JSON at http://127.0.0.1:8080"},
	{"import", cmd_import, "load record's captures into serve's data directory (its timeline)"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: hotcold COMMAND [OPTIONS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n'hotcold COMMAND --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	libbpf_set_print(libbpf_print);
	if (argc < 2) {
		usage(stderr);
		return EX_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("hotcold %s\n", HOTCOLD_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	hc_err("unknown command '%s' (try 'hotcold --help')", argv[1]);
	return EX_USAGE;
}
