/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hotcold's BPF programs and links, by id: a test takes the ids loaded before and after it
 * starts a capture, and follows exactly those (other captures, other tests' leftovers and
 * other tools' programs on the machine are not counted). Needs root (CAP_SYS_ADMIN).
 */
#ifndef HOTCOLD_TESTS_E2E_BPF_IDS_H
#define HOTCOLD_TESTS_E2E_BPF_IDS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define BPF_IDS_MAX 256

struct bpf_ids {
	uint32_t id[BPF_IDS_MAX];
	char name[BPF_IDS_MAX][16]; /* BPF_OBJ_NAME_LEN */
	int n;
};

bool bpf_ids__has(const struct bpf_ids *s, uint32_t id);
/* Every loaded program whose name is hotcold's (bpf/sample.bpf.c names every one hc_*). */
void bpf_ids__load_hc(struct bpf_ids *s);
/* hotcold's programs loaded at or after boot_ns (CLOCK_BOOTTIME, the kernel's load_time). */
void bpf_ids__load_hc_since(struct bpf_ids *s, uint64_t boot_ns);
/* Adds to s the hotcold programs process pid holds a descriptor of (its fdinfo's prog_id). */
void bpf_ids__add_pid(struct bpf_ids *s, pid_t pid);
/* The programs in now that were not in before (a capture's): into mine. */
void bpf_ids__diff(const struct bpf_ids *before, const struct bpf_ids *now, struct bpf_ids *mine);
/* How many of mine are still loaded. */
int bpf_ids__loaded(const struct bpf_ids *mine);
/* Links (perf event, tracepoint) to any program in progs, or only to the one named name. */
int bpf_ids__links(const struct bpf_ids *progs, const char *name);

#endif
