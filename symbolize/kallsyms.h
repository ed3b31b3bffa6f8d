/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * /proc/kallsyms -> sorted table of kernel function symbols (vmlinux and modules).
 *
 * Only function symbols (types t, T, w, W) are returned by lookups. Every other symbol still
 * ends the function before it, so an address in data after the last function of .text does
 * not resolve to that function.
 */
#ifndef HOTCOLD_SYMBOLIZE_KALLSYMS_H
#define HOTCOLD_SYMBOLIZE_KALLSYMS_H

#include <stddef.h>
#include <stdint.h>

/*
 * A function followed by nothing (the highest symbol) or by another module's symbol has no
 * known end; it is assumed to be at most this long. Kernel functions are far shorter.
 */
#define HC_KSYM_MAX_TAIL_BYTES (64u * 1024u)

struct hc_kallsyms;

struct hc_ksym {
	const char *name;   /* borrowed: valid until the next lookup (names are kept compressed) */
	const char *module; /* "ext4", "bpf"; NULL for vmlinux. Valid until hc_kallsyms__free(). */
	uint64_t offset;    /* addr - symbol start */
};

/*
 * Parse kallsyms text (need not be NUL-terminated). Malformed lines are skipped and counted.
 * NULL + errno: EPERM when every address is zero (kptr_restrict hides them), EINVAL when no
 * line parsed, ENOMEM.
 */
struct hc_kallsyms *hc_kallsyms__parse(const char *buf, size_t len);
/* Read and parse a file (normally "/proc/kallsyms"). NULL + errno as above or from open(). */
struct hc_kallsyms *hc_kallsyms__load(const char *path);
/* The same from an open descriptor (not closed). */
struct hc_kallsyms *hc_kallsyms__load_fd(int fd);
void hc_kallsyms__free(struct hc_kallsyms *ks);

/* 0 and *out filled, -ENOENT (before the first function, in data, past the last one) or
 * -ENOMEM (its name could not be decompressed). */
int hc_kallsyms__lookup(struct hc_kallsyms *ks, uint64_t addr, struct hc_ksym *out);

/* The variable (kallsyms type d, D, b or B) that starts exactly at addr: how a lock that is a
 * kernel symbol (rtnl_mutex) is named. Only kernels built with CONFIG_KALLSYMS_ALL list their
 * variables. 0 and *name (borrowed until the next lookup), -ENOENT or -ENOMEM. */
int hc_kallsyms__lookup_data(struct hc_kallsyms *ks, uint64_t addr, const char **name);

size_t hc_kallsyms__nr_funcs(const struct hc_kallsyms *ks);
size_t hc_kallsyms__bad_lines(const struct hc_kallsyms *ks);

#endif
