// SPDX-License-Identifier: GPL-2.0-only
#include "privsep/privdrop.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <sys/capability.h>

static int fail(char *why, size_t len, const char *what)
{
	int err = errno ? errno : EPERM;

	snprintf(why, len, "%s: %s", what, strerror(err));
	return -err;
}

int hc_privdrop(const char *user, char *why, size_t why_len)
{
	cap_t none = NULL, now = NULL;
	int rc = 0;

	errno = 0;
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam(user);

		if (!pw) {
			errno = errno ? errno : ENOENT;
			snprintf(why, why_len,
				 "no user '%s' to run the unprivileged side as (--user)", user);
			return -ENOENT;
		}
		if (pw->pw_uid == 0) {
			snprintf(why, why_len, "--user %s is root: pick an unprivileged user",
				 user);
			return -EINVAL;
		}
		/* The bounding set needs CAP_SETPCAP, which only root still has here. */
		/* Every capability the running kernel has, not only those of our headers. */
		for (cap_value_t cap = 0; cap < (cap_value_t)cap_max_bits(); cap++)
			if (cap_drop_bound(cap) && errno != EINVAL)
				return fail(why, why_len, "dropping the capability bounding set");
		if (setgroups(0, NULL))
			return fail(why, why_len, "setgroups");
		if (setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid))
			return fail(why, why_len, "setresgid");
		if (setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid))
			return fail(why, why_len, "setresuid");
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL)
		return fail(why, why_len, "clearing ambient capabilities");
	none = cap_init();
	if (!none)
		return fail(why, why_len, "cap_init");
	if (cap_set_proc(none)) {
		rc = fail(why, why_len, "dropping capabilities");
		goto out;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		rc = fail(why, why_len, "PR_SET_NO_NEW_PRIVS");
		goto out;
	}
	/* Check, rather than trust: nothing left, and no way back to root. */
	now = cap_get_proc();
	if (!now || cap_compare(now, none) != 0 || (geteuid() == 0 && getuid() == 0 && user)) {
		errno = EPERM;
		rc = fail(why, why_len, "capabilities still held after dropping them");
		goto out;
	}
	if (getuid() != geteuid() || (getuid() != 0 && setuid(0) == 0)) {
		errno = EPERM;
		rc = fail(why, why_len, "could regain root");
	}
out:
	cap_free(now);
	cap_free(none);
	return rc;
}
