/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cli/: one file per subcommand, dispatched from the table in main.c.
 * Exit codes follow sysexits.h (documented in docs/cli.md):
 *   0 success; 64 EX_USAGE bad flags or values; 65 EX_DATAERR a malformed input file;
 *   66 EX_NOINPUT no such process, or an input file cannot be read;
 *   69 EX_UNAVAILABLE BPF, BTF or perf_event unavailable; 70 EX_SOFTWARE internal error;
 *   71 EX_OSERR out of memory or a system call failed; 73 EX_CANTCREAT output cannot be
 *   created; 74 EX_IOERR output could not be written; 77 EX_NOPERM not privileged enough.
 */
#ifndef HOTCOLD_CLI_H
#define HOTCOLD_CLI_H

#include <stdbool.h>

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* One line on stderr, "hotcold: <message>". */
void hc_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* libbpf messages: warnings and above only with -v. */
void hc_libbpf_verbose(bool on);

#endif
