/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * JIT symbol maps, /tmp/perf-PID.map: one "START SIZE name" line per generated function,
 * START and SIZE in hex (usually without 0x). Written by V8, the JVM (perf-map-agent),
 * LuaJIT, .NET, ...; the name is the rest of the line and may contain spaces.
 */
#ifndef HOTCOLD_SYMBOLIZE_PERFMAP_H
#define HOTCOLD_SYMBOLIZE_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

struct hc_perfmap;

/* NULL + errno (ENOMEM; EINVAL if there were lines and none parsed). Empty input is valid. */
struct hc_perfmap *hc_perfmap__parse(const char *buf, size_t len);
struct hc_perfmap *hc_perfmap__load(const char *path);
/* The same from an open descriptor (not closed). */
struct hc_perfmap *hc_perfmap__load_fd(int fd);
void hc_perfmap__free(struct hc_perfmap *pm);

/*
 * Absolute address -> name (borrowed until hc_perfmap__free) and offset into it.
 * When entries overlap (code regenerated at the same place, or freed code space reused), the
 * line written last wins, however many lines lie in between. O(log n). 0 or -ENOENT.
 */
int hc_perfmap__lookup(const struct hc_perfmap *pm, uint64_t addr, const char **name,
		       uint64_t *offset);

size_t hc_perfmap__nr(const struct hc_perfmap *pm);
size_t hc_perfmap__bad_lines(const struct hc_perfmap *pm);

#endif
