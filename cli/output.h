/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * cli/output: how `record` and `report` write a file so that nothing half-written ever sits
 * under its name (docs/scheduled.md).
 *
 *  - The name may be a strftime(3) pattern, expanded once, in UTC, when the output is opened.
 *  - A lock file `.NAME.lock` in the same directory (flock) is held from open to commit: a
 *    second writer of the same name fails at once (EX_TEMPFAIL) instead of racing.
 *  - The data goes to a hidden temporary file `.NAME.tmp.XXXXXX` in the same directory, is
 *    flushed and fsync'd, then renamed over NAME and the directory fsync'd. Killed at any
 *    point (SIGKILL included), a writer leaves at most that hidden file and its lock file;
 *    the next writer into the same directory removes both (it can tell they are stale: no
 *    one holds the lock).
 *  - A NAME that exists and is not a regular file (a device, FIFO, symlink) is refused.
 *  - Any failure removes the temporary file: a full disk or an I/O error leaves nothing.
 */
#ifndef HOTCOLD_CLI_OUTPUT_H
#define HOTCOLD_CLI_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <time.h>

struct hc_output {
	char *path;	 /* the expanded name; NULL: stdout */
	char *tmp_path;	 /* while open */
	char *lock_path; /* while open */
	int lock_fd;
	FILE *f; /* write here */
};

/*
 * Expand a strftime pattern for time t (UTC) into out. Conversions allowed: the ones that
 * make sense in a file name (aAbBCdeFgGhHIjmMpsSuUVwWyYzZ and %%; %s is t itself, whatever
 * TZ says); anything else, a
 * pattern ending in '%', an empty or over-long result: -EINVAL with why. A pattern without
 * '%' is copied as is.
 */
int hc_output__expand(const char *pattern, time_t t, char *out, size_t out_len, char *why,
		      size_t why_len);

/*
 * Open the output: pattern NULL or "-" means stdout (nothing else is done). Otherwise expand,
 * lock and create the temporary file. Returns 0 or a sysexits code after printing the reason:
 * EX_USAGE (bad pattern), EX_CANTCREAT (missing or unwritable directory, not a directory...),
 * EX_TEMPFAIL (another writer holds the lock), EX_OSERR.
 */
int hc_output__open(struct hc_output *o, const char *pattern, time_t t);
/* Flush, fsync, rename into place. 0, or EX_IOERR (write error, disk full) / EX_CANTCREAT
 * (rename refused) after printing why; on failure nothing is left behind. Releases the lock. */
int hc_output__commit(struct hc_output *o);
/* Give up: remove the temporary file, release the lock. Safe after commit and on a zeroed
 * struct. */
void hc_output__abort(struct hc_output *o);

#endif
