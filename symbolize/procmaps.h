/* SPDX-License-Identifier: GPL-2.0-only */
/* /proc/PID/maps text -> sorted mappings. */
#ifndef HOTCOLD_SYMBOLIZE_PROCMAPS_H
#define HOTCOLD_SYMBOLIZE_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum hc_map_perm {
	HC_MAP_R = 1u << 0,
	HC_MAP_W = 1u << 1,
	HC_MAP_X = 1u << 2,
	HC_MAP_SHARED = 1u << 3, /* 's' rather than 'p' */
};

struct hc_mapping {
	uint64_t start; /* [start, end) virtual addresses */
	uint64_t end;
	uint64_t pgoff; /* file offset of start, bytes */
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t perms;	  /* enum hc_map_perm bits */
	bool deleted;	  /* path had the " (deleted)" suffix, now stripped */
	const char *path; /* "/usr/lib/libc.so.6", "[vdso]", "[anon:name]"; NULL if anonymous.
			   * Borrowed: valid until hc_procmaps__free(). */
};

struct hc_procmaps {
	struct hc_mapping *maps; /* sorted by start */
	size_t nr;
	size_t bad_lines; /* malformed lines skipped */
	char *strings;	  /* private: storage behind the paths */
};

/*
 * Parse maps text (need not be NUL-terminated). Malformed lines are skipped and counted in
 * bad_lines; empty input is a valid empty snapshot (kernel threads, zombies).
 * NULL + errno: EINVAL if there were lines and none parsed, ENOMEM.
 */
struct hc_procmaps *hc_procmaps__parse(const char *buf, size_t len);
/* Read and parse a file; NULL + errno (ENOENT/ESRCH when the process is gone). */
struct hc_procmaps *hc_procmaps__load(const char *path);
/* The same from an open descriptor (not closed). */
struct hc_procmaps *hc_procmaps__load_fd(int fd);
void hc_procmaps__free(struct hc_procmaps *pm);

/* The mapping containing addr, or NULL. */
const struct hc_mapping *hc_procmaps__find(const struct hc_procmaps *pm, uint64_t addr);

/* True for a mapping backed by a file we could open (an absolute path and an inode). */
bool hc_mapping__is_file(const struct hc_mapping *m);

#endif
