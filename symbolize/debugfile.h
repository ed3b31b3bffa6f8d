/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Separate debug files: where a stripped object's .symtab and DWARF went. Looked for the way
 * perf and gdb do (docs/sampling.md, "Naming user frames", has the order): by build-id under
 * the debug root, by the object's .gnu_debuglink (beside it, in .debug/ beside it, under the
 * debug root at its directory) with the link's CRC32 checked, and as <debug root><path>.debug;
 * each first inside the process's own root (a container's), then on the host.
 *
 * Every candidate is untrusted: it is opened read-only and non-blocking, must be a regular
 * file and an ELF whose build-id is the object's (required for a build-id candidate, checked
 * for the others when both have one) and, for a debuglink candidate, whose CRC32 is the
 * link's. A candidate that fails is refused, counted by reason, and the search goes on.
 * Inside a process's root, paths are resolved with openat2(RESOLVE_IN_ROOT |
 * RESOLVE_NO_MAGICLINKS): no symlink there leads out of it.
 */
#ifndef HOTCOLD_SYMBOLIZE_DEBUGFILE_H
#define HOTCOLD_SYMBOLIZE_DEBUGFILE_H

#include <libelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A .gnu_debuglink's file name, at most (a longer one is refused). */
#define HC_DEBUGLINK_NAME_MAX 256

/* How a debug file was found. */
enum hc_debugfile_how {
	HC_DEBUG_BUILD_ID,  /* <debug root>/.build-id/xx/yyyy.debug */
	HC_DEBUG_DEBUGLINK, /* .gnu_debuglink */
	HC_DEBUG_PATH,	    /* <debug root><path>.debug */
	HC_DEBUG_HOW_MAX,
};

/* Why a candidate was refused. */
enum hc_debugfile_refusal {
	HC_DEBUG_REF_BUILD_ID, /* its build-id is not the object's */
	HC_DEBUG_REF_CRC,      /* its CRC32 is not the debuglink's */
	HC_DEBUG_REF_CORRUPT,  /* not a regular file, or not ELF */
	HC_DEBUG_REF_MAX,
};

struct hc_debugfile_stats {
	uint64_t found[HC_DEBUG_HOW_MAX];   /* objects whose debug file was found, by how */
	uint64_t refused[HC_DEBUG_REF_MAX]; /* candidates refused, by reason */
};

/* What is known of the object whose debug file is looked for; all borrowed for the call. */
struct hc_debugfile_query {
	const char *debug_root; /* absolute, e.g. "/usr/lib/debug" */
	/* The process's root directory (O_PATH), when it is not ours; -1: the host's only. */
	int root_fd;
	const char *path; /* the object's absolute path as its process sees it; NULL: unknown */
	const uint8_t *build_id;
	size_t build_id_len; /* 0: none */
	const char *link;    /* .gnu_debuglink's file name; NULL: none */
	uint32_t link_crc;
};

/*
 * The first candidate that matches, opened read-only: a descriptor the caller owns and *how,
 * or -ENOENT (none; refusals were added to st, which may be NULL), -ENOMEM.
 */
int hc_debugfile__find(const struct hc_debugfile_query *q, struct hc_debugfile_stats *st,
		       enum hc_debugfile_how *how);

/*
 * A .gnu_debuglink section's contents: the file name, NUL, zero padding to 4 bytes, then the
 * CRC32 in the object's byte order (msb: big-endian). 0, or -EBADMSG (no NUL, an empty or
 * too long name, a name with '/', no room for the CRC).
 */
int hc_debuglink__parse(const void *sec, size_t len, bool msb, char name[HC_DEBUGLINK_NAME_MAX],
			uint32_t *crc);
/* The same from an ELF handle (only read), or from the ELF file behind fd (not closed).
 * 0, -ENOENT (no section), -EBADMSG, -ENOEXEC (not ELF). */
int hc_debuglink__from_elf(Elf *elf, char name[HC_DEBUGLINK_NAME_MAX], uint32_t *crc);
int hc_debuglink__read_fd(int fd, char name[HC_DEBUGLINK_NAME_MAX], uint32_t *crc);

/* The CRC32 (zlib's, which is .gnu_debuglink's) of the whole regular file fd. 0 or -errno. */
int hc_debugfile__crc32_fd(int fd, uint32_t *crc);

#endif
