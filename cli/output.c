// SPDX-License-Identifier: GPL-2.0-only
/* Atomic, locked output files for record and report: cli/output.h. */
#include "cli/output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sysexits.h>
#include <unistd.h>

#include "cli/cli.h"

/* Conversions with a fixed, file-name-safe meaning. Not %c %x %X %r %R %T %D (locale forms,
 * colons, slashes), %n %t (whitespace), %E/%O modifiers or glibc's flags. */
#define ALLOWED_CONVERSIONS "aAbBCdeFgGhHIjmMpsSuUVwWyYzZ%"

int hc_output__expand(const char *pattern, time_t t, char *out, size_t out_len, char *why,
		      size_t why_len)
{
	char pat[PATH_MAX * 2], secs[32];
	size_t n, used = 0;
	struct tm tm;

	for (const char *p = pattern; *p; p++) {
		if (*p != '%')
			continue;
		if (!p[1]) {
			snprintf(why, why_len, "the pattern ends with a lone '%%'");
			return -EINVAL;
		}
		if (!strchr(ALLOWED_CONVERSIONS, p[1])) {
			snprintf(
				why, why_len,
				"%%%c is not a conversion allowed in a file name (use one of %%%s)",
				p[1], "Y %m %d %H %M %S %s %F %j %a %b %z...");
			return -EINVAL;
		}
		p++;
	}
	if (!gmtime_r(&t, &tm)) {
		snprintf(why, why_len, "the time cannot be represented");
		return -EINVAL;
	}
	/* glibc's %s is mktime() of the broken-down time, i.e. it reads our UTC fields as local
	 * time: off by the TZ offset. Put the seconds in ourselves. */
	snprintf(secs, sizeof(secs), "%lld", (long long)t);
	for (const char *p = pattern; *p; p++) {
		const char *add = NULL;
		char two[3] = {p[0], p[1], '\0'};

		if (*p == '%' && p[1] == 's') {
			add = secs;
			p++;
		} else if (*p == '%') {
			add = two;
			p++;
		} else {
			two[1] = '\0';
			add = two;
		}
		if (used + strlen(add) >= sizeof(pat)) {
			snprintf(why, why_len, "the pattern is too long");
			return -EINVAL;
		}
		memcpy(pat + used, add, strlen(add));
		used += strlen(add);
	}
	pat[used] = '\0';
	n = strftime(out, out_len, pat, &tm);
	if (n == 0) {
		snprintf(why, why_len,
			 *pattern ? "the name is empty or longer than %zu bytes"
				  : "empty file name",
			 out_len - 1);
		return -EINVAL;
	}
	return 0;
}

static char *join(const char *dir, const char *base, const char *suffix)
{
	char *s;

	if (asprintf(&s, "%s/.%s%s", dir, base, suffix) < 0)
		return NULL;
	return s;
}

/* Take .NAME.lock. 0, -EWOULDBLOCK (held by another writer), -errno. */
static int take_lock(struct hc_output *o)
{
	for (int tries = 0; tries < 8; tries++) {
		struct stat a, b;
		/* Read-only and 0644: flock needs no write access, so a later writer of another
		 * user can still take a lock file a killed root capture left. */
		int fd = open(o->lock_path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

		if (fd < 0)
			return -errno;
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			int err = errno;

			close(fd);
			return err == EWOULDBLOCK ? -EWOULDBLOCK : -err;
		}
		/* The holder before us unlinks the file before unlocking it: if what we locked
		 * is no longer the file under that name, try again on the new one. */
		if (fstat(fd, &a) == 0 && stat(o->lock_path, &b) == 0 && a.st_dev == b.st_dev &&
		    a.st_ino == b.st_ino) {
			o->lock_fd = fd;
			return 0;
		}
		close(fd);
	}
	return -EAGAIN;
}

static void release_lock(struct hc_output *o)
{
	if (o->lock_fd < 0)
		return;
	unlink(o->lock_path); /* while still holding it: see take_lock() */
	close(o->lock_fd);
	o->lock_fd = -1;
}

/* ".X.tmp.XXXXXX" -> X's length, or 0 when name is not one of our temporary files. */
static size_t tmp_base_len(const char *name)
{
	size_t len = strlen(name);

	if (len < 1 + 1 + 5 + 6 || name[0] != '.' || strncmp(name + len - 11, ".tmp.", 5))
		return 0;
	return len - 1 - 11;
}

/*
 * Writers killed before they renamed (SIGKILL, a crash, power loss) leave `.X.tmp.XXXXXX`, and
 * usually `.X.lock`. Names from a strftime pattern are never written again, so every writer
 * cleans the whole directory: a temporary file whose lock file is gone or not held by anyone
 * belongs to a dead writer; it goes, and so does its unheld lock file. Other hidden files
 * (not ours) are left alone.
 */
static void remove_stale(const char *dir)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t blen = tmp_base_len(e->d_name);
		char lock[NAME_MAX + 8];
		struct stat a, b;
		int fd;

		if (!blen || blen + 7 >= sizeof(lock))
			continue;
		snprintf(lock, sizeof(lock), ".%.*s.lock", (int)blen, e->d_name + 1);
		fd = openat(dirfd(d), lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			if (errno == ENOENT)
				unlinkat(dirfd(d), e->d_name, 0);
			continue;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			unlinkat(dirfd(d), e->d_name, 0);
			/* as release_lock(): unlink only the file we hold, while holding it */
			if (fstat(fd, &a) == 0 &&
			    fstatat(dirfd(d), lock, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
			    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
				unlinkat(dirfd(d), lock, 0);
		}
		close(fd);
	}
	closedir(d);
}

int hc_output__open(struct hc_output *o, const char *pattern, time_t t)
{
	char path[PATH_MAX], why[256], *dup_dir = NULL, *dup_base = NULL, *dir, *base;
	struct stat st;
	mode_t mask;
	int fd, err, rc;

	memset(o, 0, sizeof(*o));
	o->lock_fd = -1;
	if (!pattern || !strcmp(pattern, "-")) {
		o->f = stdout;
		return 0;
	}
	if (hc_output__expand(pattern, t, path, sizeof(path), why, sizeof(why))) {
		hc_err("-o %s: %s", pattern, why);
		return EX_USAGE;
	}
	if (path[strlen(path) - 1] == '/' || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
		hc_err("cannot create %s: it is a directory; give a file name", path);
		return EX_CANTCREAT;
	}
	/* The output replaces NAME by rename: a device, a FIFO or a symlink (/dev/null,
	 * /dev/stdout) would be replaced by a regular file, not written to. */
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		hc_err("cannot write %s: not a regular file (a device, FIFO or symbolic link would "
		       "be replaced, not written); leave out -o to write to stdout",
		       path);
		return EX_CANTCREAT;
	}
	o->path = strdup(path);
	dup_dir = strdup(path);
	dup_base = strdup(path);
	if (!o->path || !dup_dir || !dup_base) {
		hc_err("cannot create %s: out of memory", path);
		rc = EX_OSERR;
		goto err;
	}
	dir = dirname(dup_dir);
	base = basename(dup_base);
	o->lock_path = join(dir, base, ".lock");
	o->tmp_path = join(dir, base, ".tmp.XXXXXX");
	if (!o->lock_path || !o->tmp_path) {
		hc_err("cannot create %s: out of memory", path);
		rc = EX_OSERR;
		goto err;
	}
	err = take_lock(o);
	if (err == -EWOULDBLOCK || err == -EAGAIN) {
		hc_err("cannot write %s: another capture is writing it (it holds %s)", o->path,
		       o->lock_path);
		rc = EX_TEMPFAIL;
		goto err;
	}
	if (err) {
		if (err == -ENOENT || err == -ENOTDIR)
			hc_err("cannot create %s: directory %s: %s", o->path, dir, strerror(-err));
		else
			hc_err("cannot create %s: %s", o->path, strerror(-err));
		rc = EX_CANTCREAT;
		goto err;
	}
	remove_stale(dir);
	fd = mkostemp(o->tmp_path, O_CLOEXEC);
	if (fd < 0) {
		hc_err("cannot create %s: %s", o->path, strerror(errno));
		free(o->tmp_path);
		o->tmp_path = NULL;
		rc = EX_CANTCREAT;
		goto err;
	}
	/* mkostemp makes 0600; a profile gets the mode any new file would (0666 & ~umask). */
	mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) < 0 || !(o->f = fdopen(fd, "w"))) {
		hc_err("cannot create %s: %s", o->path, strerror(errno));
		close(fd);
		rc = EX_CANTCREAT;
		goto err;
	}
	free(dup_dir);
	free(dup_base);
	return 0;

err:
	free(dup_dir);
	free(dup_base);
	hc_output__abort(o);
	return rc;
}

static int fsync_dir_of(const char *path)
{
	char *dup = strdup(path);
	int fd, rc = 0;

	if (!dup)
		return -ENOMEM;
	fd = open(dirname(dup), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dup);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL) /* some file systems cannot sync a directory */
		rc = -errno;
	close(fd);
	return rc;
}

int hc_output__commit(struct hc_output *o)
{
	int rc = 0, err;

	if (!o->tmp_path) {
		if (fflush(o->f) != 0 || ferror(o->f)) {
			hc_err("writing to stdout: %s", strerror(errno));
			return EX_IOERR;
		}
		return 0;
	}
	if (fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0) {
		hc_err("writing %s: %s", o->path, strerror(errno));
		rc = EX_IOERR;
	}
	if (fclose(o->f) != 0 && !rc) {
		hc_err("writing %s: %s", o->path, strerror(errno));
		rc = EX_IOERR;
	}
	o->f = NULL;
	if (!rc && rename(o->tmp_path, o->path) != 0) {
		hc_err("cannot rename the output into %s: %s", o->path, strerror(errno));
		rc = EX_CANTCREAT;
	}
	if (!rc) {
		free(o->tmp_path);
		o->tmp_path = NULL;
		/* The rename is durable once the directory is. */
		err = fsync_dir_of(o->path);
		if (err) {
			hc_err("writing %s: syncing its directory: %s", o->path, strerror(-err));
			rc = EX_IOERR;
		}
	}
	hc_output__abort(o);
	return rc;
}

void hc_output__abort(struct hc_output *o)
{
	if (o->f && o->f != stdout)
		fclose(o->f);
	o->f = NULL;
	if (o->tmp_path) {
		unlink(o->tmp_path);
		free(o->tmp_path);
		o->tmp_path = NULL;
	}
	if (o->lock_path) {
		if (o->lock_fd >= 0)
			release_lock(o);
		free(o->lock_path);
		o->lock_path = NULL;
	}
	free(o->path);
	o->path = NULL;
}
