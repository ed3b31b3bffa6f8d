/* SPDX-License-Identifier: GPL-2.0-only */
/* privsep/privdrop: make the calling process unprivileged for good. */
#ifndef HOTCOLD_PRIVSEP_PRIVDROP_H
#define HOTCOLD_PRIVSEP_PRIVDROP_H

#include <stddef.h>

/*
 * Become `user` when running as root (supplementary groups cleared, real/effective/saved
 * uid and gid changed), empty the capability bounding, ambient, permitted, effective and
 * inheritable sets, set NoNewPrivs, and check the result. Without root only the capabilities
 * and NoNewPrivs are dropped. 0, or -errno with a reason in why.
 */
int hc_privdrop(const char *user, char *why, size_t why_len);

#endif
