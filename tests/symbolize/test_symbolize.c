// SPDX-License-Identifier: GPL-2.0-only
/*
 * symbolize/ unit tests. One binary, one group per concern, chosen by argv[1]:
 *   kallsyms procmaps perfmap elf hostile facade inline debugfile
 * Inputs: text fixtures in $HC_FIXTURES, ELF fixtures built by meson ($HC_FIX_*), and live
 * fixture processes we spawn (our own, so no root is needed).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <gelf.h>
#include <libelf.h>

#include "symbolize/debugfile.h"
#include "symbolize/demangle.h"
#include "symbolize/dwinline.h"
#include "symbolize/elfsym.h"
#include "symbolize/fstarts.h"
#include "symbolize/kallsyms.h"
#include "symbolize/perfmap.h"
#include "symbolize/procmaps.h"
#include "symbolize/symbolizer.h"
#include "symbolize/util.h"
#include "tests/skip.h"
#include "tests/symbolize/dwinline_ref.h"

/* ---- helpers ---- */

static const char *env_path(const char *name)
{
	const char *v = getenv(name);

	if (!v) {
		fail_msg("%s not set: run through meson test", name);
		return NULL;
	}
	return v;
}

static char *fixture_text(const char *rel, size_t *len)
{
	char path[4096];
	char *buf;

	snprintf(path, sizeof(path), "%s/%s", env_path("HC_FIXTURES"), rel);
	assert_int_equal(hc_read_file(path, 1 << 24, &buf, len), 0);
	return buf;
}

static void *read_all(const char *path, size_t *len)
{
	char *buf;

	assert_int_equal(hc_read_file(path, 1 << 28, &buf, len), 0);
	return buf;
}

/* ---- kallsyms ---- */

struct ksym_case {
	uint64_t addr;
	const char *name; /* NULL: -ENOENT expected */
	const char *module;
	uint64_t offset;
};

static void test_kallsyms_table(void **state)
{
	static const struct ksym_case cases[] = {
		{0xffffffff80000000ull, NULL, NULL, 0},	    /* before the first symbol */
		{0xffffffff81000000ull, "_stext", NULL, 0}, /* alias: first listed wins */
		{0xffffffff81000abcull, "_stext", NULL, 0xabc},
		{0xffffffff81001008ull, "__pfx_do_one_initcall", NULL, 8},
		{0xffffffff81001050ull, "do_one_initcall", NULL, 0x40}, /* mid-function */
		{0xffffffff81001210ull, "trace_initcall_start_cb", NULL, 0x10},
		{0xffffffff81001300ull, "arch_cpu_idle", NULL, 0}, /* weak */
		{0xffffffff81001401ull, "_etext", NULL, 1},
		{0xffffffff81e00010ull, NULL, NULL, 0}, /* data ends the text */
		{0xffffffff82000000ull, NULL, NULL, 0},
		{0xffffffffc0a00100ull, "ext4_fill_super", "ext4", 0x100},
		{0xffffffffc0a00810ull, "ext4_sync_fs", "ext4", 0x10},
		{0xffffffffc0a01010ull, NULL, NULL, 0}, /* module data */
		{0xffffffffc0a02040ull, "xfs_inactive", "xfs", 0x40},
		/* Last function of a module, next symbol far away in another module: bounded. */
		{0xffffffffc0a02000ull + HC_KSYM_MAX_TAIL_BYTES, NULL, NULL, 0},
		{0xffffffffc0b00020ull, "bpf_prog_6deef7357e7b4530_sd_fw_egress", "bpf", 0x20},
		/* Above the highest symbol. */
		{0xffffffffc0b00000ull + HC_KSYM_MAX_TAIL_BYTES, NULL, NULL, 0},
		{0xffffffffffffffffull, NULL, NULL, 0},
		{0, NULL, NULL, 0},
	};
	struct hc_kallsyms *ks;
	size_t len, i;
	char *text;

	(void)state;
	text = fixture_text("kallsyms.txt", &len);
	ks = hc_kallsyms__parse(text, len);
	assert_non_null(ks);
	assert_int_equal(hc_kallsyms__bad_lines(ks), 0);
	assert_int_equal(hc_kallsyms__nr_funcs(ks), 11);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct ksym_case *c = &cases[i];
		struct hc_ksym out;
		int err = hc_kallsyms__lookup(ks, c->addr, &out);

		if (!c->name) {
			if (err != -ENOENT)
				fail_msg("case %zu %#llx: want -ENOENT, got %d (%s)", i,
					 (unsigned long long)c->addr, err, err ? "" : out.name);
			continue;
		}
		if (err)
			fail_msg("case %zu %#llx: want %s, got %d", i, (unsigned long long)c->addr,
				 c->name, err);
		assert_string_equal(out.name, c->name);
		if (c->module)
			assert_string_equal(out.module, c->module);
		else
			assert_null(out.module);
		assert_int_equal(out.offset, c->offset);
	}
	hc_kallsyms__free(ks);
	free(text);
}

/* --locks names a lock by the kernel variable that starts at its address, never by an
 * address; variables end the function before them and are never function names. */
static void test_kallsyms_data(void **state)
{
	static const char text[] = "ffffffff81000000 T _stext\n"
				   "ffffffff81000100 t do_thing\n"
				   "ffffffff82000000 D rtnl_mutex\n"
				   "ffffffff82000040 d cgroup_mutex\n"
				   "ffffffff82001000 B jiffies_lock\n"
				   "ffffffff82002000 r some_rodata\n"
				   "ffffffffc0a00000 b ext4_lock\t[ext4]\n";
	struct hc_kallsyms *ks = hc_kallsyms__parse(text, sizeof(text) - 1);
	struct hc_ksym out;
	const char *name;

	(void)state;
	assert_non_null(ks);
	assert_int_equal(hc_kallsyms__nr_funcs(ks), 2);
	assert_int_equal(hc_kallsyms__lookup_data(ks, 0xffffffff82000000ull, &name), 0);
	assert_string_equal(name, "rtnl_mutex");
	assert_int_equal(hc_kallsyms__lookup_data(ks, 0xffffffff82000040ull, &name), 0);
	assert_string_equal(name, "cgroup_mutex");
	assert_int_equal(hc_kallsyms__lookup_data(ks, 0xffffffff82001000ull, &name), 0);
	assert_string_equal(name, "jiffies_lock");
	assert_int_equal(hc_kallsyms__lookup_data(ks, 0xffffffffc0a00000ull, &name), 0);
	assert_string_equal(name, "ext4_lock");
	/* inside a variable, a read-only one, a function, nothing: no name */
	assert_int_equal(hc_kallsyms__lookup_data(ks, 0xffffffff82000008ull, &name), -ENOENT);
	assert_int_equal(hc_kallsyms__lookup_data(ks, 0xffffffff82002000ull, &name), -ENOENT);
	assert_int_equal(hc_kallsyms__lookup_data(ks, 0xffffffff81000100ull, &name), -ENOENT);
	assert_int_equal(hc_kallsyms__lookup_data(ks, 0, &name), -ENOENT);
	/* a variable still ends the function before it, and is no function itself */
	assert_int_equal(hc_kallsyms__lookup(ks, 0xffffffff82000000ull, &out), -ENOENT);
	assert_int_equal(hc_kallsyms__lookup(ks, 0xffffffff81000180ull, &out), 0);
	assert_string_equal(out.name, "do_thing");
	hc_kallsyms__free(ks);
}

/* Names are kept compressed, 64 symbols a block: lookups in any order, across blocks and
 * back, each name right (and the one before it still read right until the next lookup). */
static void test_kallsyms_blocks(void **state)
{
	enum { N = 1000 };
	size_t cap = N * 64, len = 0;
	char *text = malloc(cap);
	struct hc_kallsyms *ks;

	(void)state;
	assert_non_null(text);
	/* every 7th an 'r' (ends the function before it, never named), every 100th in [mod] */
	for (int i = 0; i < N; i++)
		len += (size_t)snprintf(text + len, cap - len, "%llx %c func_%04d_%s%s\n",
					0xffffffff81000000ull + (unsigned long long)i * 0x100,
					i % 7 == 3 ? 'r'
					: i % 2	   ? 't'
						   : 'T',
					i, i % 3 ? "long_common_prefix_of_a_file" : "x",
					i % 100 == 5 ? "\t[mod]" : "");
	ks = hc_kallsyms__parse(text, len);
	assert_non_null(ks);
	assert_int_equal(hc_kallsyms__bad_lines(ks), 0);
	for (int k = 0; k < 3 * N; k++) {
		int i = (int)(((unsigned)k * 7919u) % N); /* jumps between blocks */
		char want[64];
		struct hc_ksym out;
		int err = hc_kallsyms__lookup(
			ks, 0xffffffff81000000ull + (uint64_t)i * 0x100 + 0x10, &out);

		if (i % 7 == 3) {
			assert_int_equal(err, -ENOENT);
			continue;
		}
		assert_int_equal(err, 0);
		snprintf(want, sizeof(want), "func_%04d_%s", i,
			 i % 3 ? "long_common_prefix_of_a_file" : "x");
		assert_string_equal(out.name, want);
		assert_int_equal(out.offset, 0x10);
		if (i % 100 == 5)
			assert_string_equal(out.module, "mod");
		else
			assert_null(out.module);
	}
	hc_kallsyms__free(ks);
	free(text);
}

static void test_kallsyms_eperm(void **state)
{
	static const char hidden[] = "0000000000000000 T _stext\n"
				     "0000000000000000 t do_one_initcall\n"
				     "0000000000000000 t ext4_fill_super\t[ext4]\n";

	(void)state;
	errno = 0;
	assert_null(hc_kallsyms__parse(hidden, sizeof(hidden) - 1));
	assert_int_equal(errno, EPERM);
}

static void test_kallsyms_garbage(void **state)
{
	static const struct {
		const char *text;
		int err;    /* 0: parses */
		size_t bad; /* bad lines expected when it parses */
	} cases[] = {
		{"", EINVAL, 0},
		{"\n\n\n", EINVAL, 0},
		{"hello world\n", EINVAL, 0},
		{"ffffffff81000000\n", EINVAL, 0},
		{"ffffffff81000000 T\n", EINVAL, 0},
		{"ffffffff81000000 TT foo\n", EINVAL, 0},
		{"fffffffff81000000f T foo\n", EINVAL, 0}, /* 18 digits */
		{"ffffffff81000000 T foo [unterminated\n", EINVAL, 0},
		{"ffffffff81000000 T foo []\n", EINVAL, 0},
		{"ffffffff81000000 D only_data\n", EINVAL, 0}, /* no functions */
		{"\x01\x02\x03\xff\xfe", EINVAL, 0},
		{"ffffffff81000000 T good\nxyz\nffffffff81000100 t also_good\r\n", 0, 1},
		{"ffffffff81000000 T no_newline_at_end", 0, 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hc_kallsyms *ks;

		errno = 0;
		ks = hc_kallsyms__parse(cases[i].text, strlen(cases[i].text));
		if (cases[i].err) {
			if (ks || errno != cases[i].err)
				fail_msg("case %zu: want errno %d, got %p/%d", i, cases[i].err,
					 (void *)ks, errno);
		} else {
			if (!ks)
				fail_msg("case %zu: want success, got errno %d", i, errno);
			assert_int_equal(hc_kallsyms__bad_lines(ks), cases[i].bad);
		}
		hc_kallsyms__free(ks);
	}
	hc_kallsyms__free(NULL);
}

/* The real file, when we may read it: "schedule" must resolve to itself. */
static void test_kallsyms_real(void **state)
{
	struct hc_kallsyms *ks;
	unsigned long long addr = 0;
	struct hc_ksym out;
	char line[512];
	FILE *f;

	(void)state;
	ks = hc_kallsyms__load("/proc/kallsyms");
	if (!ks) {
		assert_true(errno == EPERM || errno == EACCES || errno == ENOENT);
		hc_skip("/proc/kallsyms is not readable here: %s", strerror(errno));
	}
	f = fopen("/proc/kallsyms", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char name[256], type;

		if (sscanf(line, "%llx %c %255s", &addr, &type, name) == 3 &&
		    !strcmp(name, "schedule") && (type == 'T' || type == 't'))
			break;
		addr = 0;
	}
	fclose(f);
	assert_true(addr != 0);
	assert_int_equal(hc_kallsyms__lookup(ks, addr + 1, &out), 0);
	assert_string_equal(out.name, "schedule");
	assert_null(out.module);
	assert_int_equal(out.offset, 1);
	hc_kallsyms__free(ks);
}

/* ---- procmaps ---- */

static void test_procmaps_parse(void **state)
{
	struct hc_procmaps *pm;
	const struct hc_mapping *m;
	size_t len;
	char *text;

	(void)state;
	text = fixture_text("maps.txt", &len);
	pm = hc_procmaps__parse(text, len);
	assert_non_null(pm);
	assert_int_equal(pm->nr, 14);
	assert_int_equal(pm->bad_lines, 0);

	m = &pm->maps[1];
	assert_int_equal(m->start, 0x55d0c8a02000ull);
	assert_int_equal(m->end, 0x55d0c8a05000ull);
	assert_int_equal(m->perms, HC_MAP_R | HC_MAP_X);
	assert_int_equal(m->pgoff, 0x2000);
	assert_int_equal(m->dev_major, 0xfd);
	assert_int_equal(m->dev_minor, 1);
	assert_int_equal(m->inode, 1048601);
	assert_string_equal(m->path, "/usr/bin/my prog"); /* spaces kept */
	assert_false(m->deleted);
	assert_true(hc_mapping__is_file(m));

	m = &pm->maps[4]; /* anonymous rwx: JIT */
	assert_null(m->path);
	assert_int_equal(m->perms, HC_MAP_R | HC_MAP_W | HC_MAP_X);
	assert_false(hc_mapping__is_file(m));

	assert_string_equal(pm->maps[5].path, "[anon:v8 code]");

	m = &pm->maps[8];
	assert_string_equal(m->path, "/opt/old lib/libgone.so");
	assert_true(m->deleted);
	assert_int_equal(m->dev_major, 8);
	assert_int_equal(m->dev_minor, 0x10);

	m = &pm->maps[9];
	assert_int_equal(m->perms, HC_MAP_R | HC_MAP_W | HC_MAP_SHARED);
	assert_true(m->deleted);

	m = &pm->maps[12];
	assert_string_equal(m->path, "[vdso]");
	assert_false(hc_mapping__is_file(m));
	m = &pm->maps[13];
	assert_string_equal(m->path, "[vsyscall]");
	assert_int_equal(m->perms, HC_MAP_X);
	hc_procmaps__free(pm);
	free(text);
}

static void test_procmaps_find(void **state)
{
	static const struct {
		uint64_t addr;
		int idx; /* -1: none */
	} cases[] = {
		{0, -1},
		{0x55d0c8a00000ull, 0},
		{0x55d0c8a01fffull, 0},
		{0x55d0c8a02000ull, 1},
		{0x55d0c8a06000ull, -1}, /* end is exclusive, gap after */
		{0x7f1200000800ull, 4},
		{0x7f1200008000ull, -1},
		{0x7ffd4e600000ull, 12},
		{0xffffffffff600400ull, 13},
		{0xffffffffffffffffull, -1},
	};
	struct hc_procmaps *pm;
	size_t len, i;
	char *text;

	(void)state;
	text = fixture_text("maps.txt", &len);
	pm = hc_procmaps__parse(text, len);
	assert_non_null(pm);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct hc_mapping *m = hc_procmaps__find(pm, cases[i].addr);

		if (cases[i].idx < 0) {
			if (m)
				fail_msg("case %zu: want no mapping", i);
		} else if (m != &pm->maps[cases[i].idx]) {
			fail_msg("case %zu: want mapping %d, got %td", i, cases[i].idx,
				 m ? m - pm->maps : -1);
		}
	}
	hc_procmaps__free(pm);
	free(text);
}

static void test_procmaps_garbage(void **state)
{
	static const struct {
		const char *text;
		int err;
		size_t nr, bad;
	} cases[] = {
		{"", 0, 0, 0}, /* kernel thread / zombie */
		{"garbage\n", EINVAL, 0, 0},
		{"1000-2000\n", EINVAL, 0, 0},
		{"2000-1000 r-xp 00000000 00:00 0\n", EINVAL, 0, 0}, /* end before start */
		{"1000-2000 rzxp 00000000 00:00 0\n", EINVAL, 0, 0},
		{"1000-2000 r-xq 00000000 00:00 0\n", EINVAL, 0, 0},
		{"1000-2000 r-xp 00000000 00:00\n", EINVAL, 0, 0},
		{"1000-2000 r-xp 00000000 00:00 99999999999999999999999\n", EINVAL, 0, 0},
		{"1000-2000 r-xp 0 0:0 12x /a\n", EINVAL, 0, 0},
		{"\xff\xfe\x00\x01", EINVAL, 0, 0},
		{"1000-2000 r-xp 00000000 00:00 0\nbad line\n3000-4000 r--p 0 1:2 3 /x\n", 0, 2, 1},
		/* Out of order input gets sorted. */
		{"3000-4000 r--p 0 1:2 3 /x\n1000-2000 r-xp 0 1:2 3 /y", 0, 2, 0},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hc_procmaps *pm;

		errno = 0;
		pm = hc_procmaps__parse(cases[i].text, strlen(cases[i].text));
		if (cases[i].err) {
			if (pm || errno != cases[i].err)
				fail_msg("case %zu: want errno %d, got %p/%d", i, cases[i].err,
					 (void *)pm, errno);
			continue;
		}
		if (!pm)
			fail_msg("case %zu: want success, got errno %d", i, errno);
		assert_int_equal(pm->nr, cases[i].nr);
		assert_int_equal(pm->bad_lines, cases[i].bad);
		if (pm->nr == 2) {
			assert_true(pm->maps[0].start < pm->maps[1].start);
			assert_non_null(hc_procmaps__find(pm, 0x1800));
			assert_string_equal(hc_procmaps__find(pm, 0x3800)->path, "/x");
		}
		hc_procmaps__free(pm);
	}
	hc_procmaps__free(NULL);
}

/* ---- perfmap ---- */

static void test_perfmap_table(void **state)
{
	static const struct {
		uint64_t addr;
		const char *name;
		uint64_t offset;
	} cases[] = {
		{0x7f12000000ffull, NULL, 0},
		{0x7f1200000100ull, "LazyCompile:~add /srv/app.js:3", 0},
		{0x7f120000013full, "LazyCompile:~add /srv/app.js:3", 0x3f},
		{0x7f1200000150ull, "Builtin:ArgumentsAdaptorTrampoline", 0x10}, /* 0x size */
		{0x7f1200000160ull, NULL, 0},
		{0x7f1200000210ull, "Function:<anonymous> a b c", 0x10}, /* 0x start */
		{0x7f1200010010ull, "regenerated_later", 0x10},		 /* later line wins */
		{0x7f1200010100ull, "JIT stub [vm]", 0x100}, /* only the old one covers */
		{0x7f1200011000ull, NULL, 0},
	};
	struct hc_perfmap *pm;
	size_t len, i;
	char *text;

	(void)state;
	text = fixture_text("perfmap/perf-4242.map", &len);
	pm = hc_perfmap__parse(text, len);
	assert_non_null(pm);
	assert_int_equal(hc_perfmap__nr(pm), 5);
	assert_int_equal(hc_perfmap__bad_lines(pm), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *name = NULL;
		uint64_t off = 0;
		int err = hc_perfmap__lookup(pm, cases[i].addr, &name, &off);

		if (!cases[i].name) {
			if (err != -ENOENT)
				fail_msg("case %zu: want -ENOENT, got %d %s", i, err, name);
			continue;
		}
		if (err)
			fail_msg("case %zu: want %s, got %d", i, cases[i].name, err);
		assert_string_equal(name, cases[i].name);
		assert_int_equal(off, cases[i].offset);
	}
	hc_perfmap__free(pm);
	free(text);
}

static void test_perfmap_garbage(void **state)
{
	static const struct {
		const char *text;
		int err;
		size_t nr, bad;
	} cases[] = {
		{"", 0, 0, 0},
		{"nonsense\n", EINVAL, 0, 0},
		{"1000 10\n", EINVAL, 0, 0}, /* no name */
		{"1000 0 zero_size\n", EINVAL, 0, 0},
		{"ffffffffffffffff 10 wraps\n", EINVAL, 0, 0},
		{"0x 10 nodigits\n", EINVAL, 0, 0},
		{"1000 10 ok\n\x01\x02\nzz 1 x\n2000 20 ok2", 0, 2, 2},
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hc_perfmap *pm;

		errno = 0;
		pm = hc_perfmap__parse(cases[i].text, strlen(cases[i].text));
		if (cases[i].err) {
			if (pm || errno != cases[i].err)
				fail_msg("case %zu: want errno %d, got %p/%d", i, cases[i].err,
					 (void *)pm, errno);
			continue;
		}
		if (!pm)
			fail_msg("case %zu: want success, got errno %d", i, errno);
		assert_int_equal(hc_perfmap__nr(pm), cases[i].nr);
		assert_int_equal(hc_perfmap__bad_lines(pm), cases[i].bad);
		hc_perfmap__free(pm);
	}
	hc_perfmap__free(NULL);
}

/*
 * A JIT reuses freed code space, and the map keeps the stale lines: a new function can cover
 * any number of older ones, and an old one any number of newer ones. Whatever lies in between,
 * the line written last wins (the lookup once looked back only 16 entries: 0x1100 below named
 * stale_16, 0x1f00 and 0x100f00 nothing).
 */
static void test_perfmap_deep_overlap(void **state)
{
	static const struct {
		uint64_t addr;
		const char *name;
		uint64_t offset;
	} cases[] = {
		{0x1008, "new_big", 0x8},   /* over stale_0 */
		{0x1100, "new_big", 0x100}, /* over stale_16 */
		{0x1f00, "new_big", 0xf00}, /* past every stale one */
		{0x1fff, "new_big", 0xfff},
		{0x2000, NULL, 0},
		{0x100008, "old_big", 0x8},
		{0x100110, "new_16", 0}, /* newer small ones win inside the old one */
		{0x100117, "new_16", 0x7},
		{0x100118, "old_big", 0x118},
		{0x100f00, "old_big", 0xf00}, /* past 19 newer ones */
		{0x100ff0, "new_19", 0},
		{0x100fff, "new_19", 0xf},
		{0x101000, NULL, 0},
	};
	char text[4096];
	size_t len = 0, i;
	struct hc_perfmap *pm;

	(void)state;
	for (i = 0; i < 20; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%zx 10 stale_%zu\n",
					0x1000 + i * 0x10, i);
	len += (size_t)snprintf(text + len, sizeof(text) - len, "1000 1000 new_big\n");
	len += (size_t)snprintf(text + len, sizeof(text) - len, "100000 1000 old_big\n");
	for (i = 0; i < 19; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%zx 8 new_%zu\n",
					0x100000 + (i + 1) * 0x10, i);
	len += (size_t)snprintf(text + len, sizeof(text) - len, "100ff0 10 new_19\n");
	assert_true(len < sizeof(text));
	pm = hc_perfmap__parse(text, len);
	assert_non_null(pm);
	assert_int_equal(hc_perfmap__nr(pm), 42);
	assert_int_equal(hc_perfmap__bad_lines(pm), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *name = NULL;
		uint64_t off = 0;
		int err = hc_perfmap__lookup(pm, cases[i].addr, &name, &off);

		if (!cases[i].name) {
			if (err != -ENOENT)
				fail_msg("%#" PRIx64 ": want -ENOENT, got %d %s", cases[i].addr,
					 err, name);
			continue;
		}
		if (err)
			fail_msg("%#" PRIx64 ": want %s, got %d", cases[i].addr, cases[i].name,
				 err);
		if (strcmp(name, cases[i].name) || off != cases[i].offset)
			fail_msg("%#" PRIx64 ": want %s+%#" PRIx64 ", got %s+%#" PRIx64,
				 cases[i].addr, cases[i].name, cases[i].offset, name, off);
	}
	hc_perfmap__free(pm);
}

/* ---- elf ---- */

static int find_sym(const struct hc_elfsym *es, const char *want, uint64_t *vaddr, uint64_t *size)
{
	size_t i;

	for (i = 0; i < hc_elfsym__nr(es); i++) {
		const char *name;

		assert_int_equal(hc_elfsym__symbol(es, i, &name, vaddr, size), 0);
		if (!strcmp(name, want))
			return 0;
	}
	return -ENOENT;
}

/* Every wanted symbol is present, and an address inside it looks up to it. */
static void check_symbols(const struct hc_elfsym *es, const char *const *want, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		uint64_t vaddr, size, off;
		size_t idx;

		if (find_sym(es, want[i], &vaddr, &size))
			fail_msg("symbol %s missing", want[i]);
		assert_true(size > 2);
		assert_int_equal(hc_elfsym__lookup(es, vaddr + 2, &idx, &off), 0);
		assert_string_equal(hc_elfsym__name(es, idx), want[i]);
		assert_int_equal(off, 2);
		/* Just past its end it is not this function any more. */
		if (!hc_elfsym__lookup(es, vaddr + size, &idx, &off))
			assert_string_not_equal(hc_elfsym__name(es, idx), want[i]);
	}
}

static const char *const main_syms[] = {
	"hc_fix_alpha",
	"hc_fix_beta",
	"hc_fix_local",
	"_ZN2hc7fixture4spinEi",
	"_ZN7mycrate4util3bar17h0123456789abcdefE",
	"main",
};

static struct hc_elfsym *elf_from_path(const char *path)
{
	struct hc_elfsym *es;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	es = hc_elfsym__from_fd(fd);
	close(fd);
	return es;
}

static void test_elf_pie(void **state)
{
	struct hc_elfsym *es = elf_from_path(env_path("HC_FIX_PIE"));
	const uint8_t *id;
	uint64_t vaddr, size, v;

	(void)state;
	assert_non_null(es);
	assert_true(hc_elfsym__sources(es) & HC_ELFSYM_SYMTAB);
	assert_true(hc_elfsym__sources(es) & HC_ELFSYM_DYNSYM);
	assert_int_equal(hc_elfsym__build_id(es, &id), 20);
	check_symbols(es, main_syms, sizeof(main_syms) / sizeof(main_syms[0]));
	/* PIE text is linked near 0: vaddr and file offset coincide in the first segments. */
	assert_int_equal(find_sym(es, "hc_fix_alpha", &vaddr, &size), 0);
	assert_true(vaddr < 0x100000);
	assert_int_equal(hc_elfsym__off_to_vaddr(es, vaddr, &v), 0);
	assert_int_equal(v, vaddr);
	/* Offsets past the file's loaded bytes map nowhere. */
	assert_int_equal(hc_elfsym__off_to_vaddr(es, 1ull << 40, &v), -ENOENT);
	hc_elfsym__free(es);
}

static void test_elf_nopie(void **state)
{
	struct hc_elfsym *es = elf_from_path(env_path("HC_FIX_NOPIE"));
	uint64_t vaddr, size, v;

	(void)state;
	assert_non_null(es);
	check_symbols(es, main_syms, sizeof(main_syms) / sizeof(main_syms[0]));
	/* ET_EXEC at 0x400000: the PT_LOAD mapping turns a file offset into the link address. */
	assert_int_equal(find_sym(es, "hc_fix_alpha", &vaddr, &size), 0);
	assert_true(vaddr >= 0x400000);
	assert_int_equal(hc_elfsym__off_to_vaddr(es, vaddr - 0x400000, &v), 0);
	assert_int_equal(v, vaddr);
	hc_elfsym__free(es);
}

static void test_elf_shlib(void **state)
{
	static const char *const want[] = {"hc_fixlib_gamma", "hc_fixlib_delta",
					   "hc_fixlib_hidden"};
	struct hc_elfsym *es = elf_from_path(env_path("HC_FIX_LIB"));

	(void)state;
	assert_non_null(es);
	check_symbols(es, want, 3);
	hc_elfsym__free(es);
}

/* Stripped + .gnu_debugdata: the same names at the same addresses as the unstripped input. */
static void test_elf_debugdata(void **state)
{
	struct hc_elfsym *full = elf_from_path(env_path("HC_FIX_FULL"));
	struct hc_elfsym *es = elf_from_path(env_path("HC_FIX_DEBUGDATA"));
	size_t i;

	(void)state;
	assert_non_null(full);
	assert_non_null(es);
	assert_false(hc_elfsym__sources(es) & HC_ELFSYM_SYMTAB);
	assert_true(hc_elfsym__sources(es) & HC_ELFSYM_DEBUGDATA);
	check_symbols(es, main_syms, sizeof(main_syms) / sizeof(main_syms[0]));
	for (i = 0; i < sizeof(main_syms) / sizeof(main_syms[0]); i++) {
		uint64_t a1, a2, s1, s2;

		assert_int_equal(find_sym(full, main_syms[i], &a1, &s1), 0);
		assert_int_equal(find_sym(es, main_syms[i], &a2, &s2), 0);
		assert_int_equal(a1, a2);
		assert_int_equal(s1, s2);
	}
	hc_elfsym__free(es);
	hc_elfsym__free(full);
}

static void test_elf_debuginfo(void **state)
{
	struct hc_elfsym *es = elf_from_path(env_path("HC_FIX_DEBUGINFO"));
	struct hc_elfsym *other = elf_from_path(env_path("HC_FIX_PIE"));
	uint64_t vaddr, size;
	char path[4096];
	int fd;

	(void)state;
	assert_non_null(es);
	assert_non_null(other);
	/* Stripped: no .symtab, and the executable's functions are not exported. */
	assert_false(hc_elfsym__sources(es) & HC_ELFSYM_SYMTAB);
	assert_int_equal(find_sym(es, "hc_fix_local", &vaddr, &size), -ENOENT);
	assert_int_equal(
		hc_elfsym__debuginfo_path(es, env_path("HC_FIX_DEBUG_ROOT"), path, sizeof(path)),
		0);
	assert_int_equal(hc_elfsym__debuginfo_path(es, "/x", path, 10), -ENAMETOOLONG);
	assert_int_equal(
		hc_elfsym__debuginfo_path(es, env_path("HC_FIX_DEBUG_ROOT"), path, sizeof(path)),
		0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	/* Another binary's debuginfo is refused by build-id. */
	assert_int_equal(hc_elfsym__add_debuginfo_fd(other, fd), -ESTALE);
	assert_int_equal(hc_elfsym__add_debuginfo_fd(es, fd), 0);
	close(fd);
	assert_true(hc_elfsym__sources(es) & HC_ELFSYM_DEBUGINFO);
	check_symbols(es, main_syms, sizeof(main_syms) / sizeof(main_syms[0]));
	hc_elfsym__free(other);
	hc_elfsym__free(es);
}

/* from_mem and from_fd see the same symbols. */
static void test_elf_mem(void **state)
{
	size_t len;
	void *img = read_all(env_path("HC_FIX_DEBUGDATA"), &len);
	struct hc_elfsym *es = hc_elfsym__from_mem(img, len);

	(void)state;
	assert_non_null(es);
	assert_true(hc_elfsym__sources(es) & HC_ELFSYM_DEBUGDATA);
	check_symbols(es, main_syms, sizeof(main_syms) / sizeof(main_syms[0]));
	hc_elfsym__free(es);
	free(img);
}

static void test_demangle(void **state)
{
	static const struct {
		const char *in;
		const char *out; /* NULL: not mangled */
	} cases[] = {
		{"_ZN2hc7fixture4spinEi", "hc::fixture::spin(int)"},
		{"_Z3fooPKc", "foo(char const*)"},
		{"_ZNSt6vectorIiSaIiEE9push_backERKi",
		 "std::vector<int, std::allocator<int> >::push_back(int const&)"},
		{"_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write"}, /* Rust legacy */
		{"_RNvNtCs1234_7mycrate4util3bar", "mycrate::util::bar"},	/* Rust v0 */
		{"main", NULL},
		{"_Zgarbage", NULL},
		{"_", NULL},
		{"", NULL},
	};
	char buf[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err = hc_demangle(cases[i].in, buf, sizeof(buf));

		if (!cases[i].out) {
			if (err != -EINVAL)
				fail_msg("case %s: want -EINVAL, got %d", cases[i].in, err);
			continue;
		}
		if (err)
			fail_msg("case %s: got %d", cases[i].in, err);
		assert_string_equal(buf, cases[i].out);
	}
	assert_int_equal(hc_demangle("_ZNSt6vectorIiSaIiEE9push_backERKi", buf, 8), -ENAMETOOLONG);
}

/* ---- hostile ---- */

/* Whatever libelf makes of img, using the result must stay in bounds (valgrind/ASan watch). */
static void poke(const void *img, size_t len)
{
	struct hc_elfsym *es = hc_elfsym__from_mem(img, len);
	struct hc_fstarts *fs = hc_fstarts__from_mem(img, len, 0);
	uint64_t v, off, vaddr, size;
	const char *name;
	size_t i, idx;

	/* whatever the table holds, a start found is at or below the address */
	for (v = 0; fs && v < 0x4000; v += 0x10)
		if (!hc_fstarts__lookup(fs, v, &off))
			assert_true(off <= v);
	hc_fstarts__free(fs);
	if (!es) {
		assert_true(errno == ENOEXEC);
		return;
	}
	for (i = 0; i < hc_elfsym__nr(es); i++) {
		assert_int_equal(hc_elfsym__symbol(es, i, &name, &vaddr, &size), 0);
		assert_non_null(name);
		(void)strlen(name);
		if (!hc_elfsym__lookup(es, vaddr, &idx, &off))
			assert_non_null(hc_elfsym__name(es, idx));
	}
	for (off = 0; off < 0x4000; off += 0x400)
		hc_elfsym__off_to_vaddr(es, off, &v);
	hc_elfsym__free(es);
}

static void test_hostile_elf_truncated(void **state)
{
	const char *paths[] = {env_path("HC_FIX_PIE"), env_path("HC_FIX_DEBUGDATA"),
			       env_path("HC_FIX_LIB")};
	size_t p;

	(void)state;
	for (p = 0; p < 3; p++) {
		size_t len, cut;
		uint8_t *img = read_all(paths[p], &len);

		/* Every length near the start (headers), then strides through the rest. */
		for (cut = 0; cut < 256 && cut < len; cut++)
			poke(img, cut);
		for (cut = 256; cut < len; cut += 61)
			poke(img, cut);
		free(img);
	}
}

static void test_hostile_elf_corrupt(void **state)
{
	const char *paths[] = {env_path("HC_FIX_PIE"), env_path("HC_FIX_DEBUGDATA")};
	size_t p, round;
	uint32_t seed = 12345;

	(void)state;
	for (p = 0; p < 2; p++) {
		size_t len;
		uint8_t *img = read_all(paths[p], &len);
		uint8_t *copy = malloc(len);

		assert_non_null(copy);
		for (round = 0; round < 300; round++) {
			size_t k;

			memcpy(copy, img, len);
			/* A few random bytes: headers, section tables, string offsets, xz data. */
			for (k = 0; k < 8; k++) {
				seed = seed * 1103515245u + 12345u;
				/* Half of the flips in the first KB where the headers are. */
				size_t at = (k & 1) ? (seed >> 8) % (len < 1024 ? len : 1024)
						    : (seed >> 8) % len;
				copy[at] ^= (uint8_t)(seed >> 3) | 1;
			}
			poke(copy, len);
		}
		/* The tail holds the section headers: smash it wholesale. */
		memcpy(copy, img, len);
		memset(copy + len - (len > 2048 ? 2048 : len), 0xff, len > 2048 ? 2048 : len);
		poke(copy, len);
		free(copy);
		free(img);
	}
}

static void test_hostile_not_elf(void **state)
{
	static const char text[] = "#!/bin/sh\necho not an elf\n";
	uint8_t elfish[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	int fd;

	(void)state;
	errno = 0;
	assert_null(hc_elfsym__from_mem(text, sizeof(text)));
	assert_int_equal(errno, ENOEXEC);
	assert_null(hc_elfsym__from_mem(NULL, 0));
	poke(elfish, sizeof(elfish));
	/* A character device is refused without reading it. */
	fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	errno = 0;
	assert_null(hc_elfsym__from_fd(fd));
	assert_int_equal(errno, ENOEXEC);
	close(fd);
}

/* ---- facade: live fixture processes ---- */

#define MAX_FNS 16

struct fixture_proc {
	pid_t pid;
	FILE *out; /* its stdout */
	int in_fd; /* its stdin */
	size_t nr;
	char names[MAX_FNS][64];
	uint64_t addrs[MAX_FNS];
};

static void read_fns(struct fixture_proc *fp, const char *until)
{
	char line[512];

	while (fgets(line, sizeof(line), fp->out)) {
		unsigned long long addr = 0;
		char name[64], *sp;

		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, until))
			return;
		/* Names may contain spaces ("hc::fixture::spin(int)"): the address is last. */
		sp = strrchr(line, ' ');

		if (!sp || sscanf(sp + 1, "%llx", &addr) != 1)
			fail_msg("fixture said: %s", line);
		*sp = '\0';
		assert_true(strlen(line) < sizeof(name));
		memcpy(name, line, strlen(line) + 1);
		assert_true(fp->nr < MAX_FNS);
		memcpy(fp->names[fp->nr], name, sizeof(name));
		fp->addrs[fp->nr++] = addr;
		if (!*until)
			return;
	}
	fail_msg("fixture exited early");
}

static void spawn(struct fixture_proc *fp, const char *path)
{
	int in[2], out[2];

	memset(fp, 0, sizeof(*fp));
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	fp->pid = fork();
	assert_true(fp->pid >= 0);
	if (fp->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	fp->in_fd = in[1];
	fp->out = fdopen(out[0], "r");
	assert_non_null(fp->out);
	read_fns(fp, "ready");
}

static void reap(struct fixture_proc *fp)
{
	int status;

	close(fp->in_fd); /* EOF: the fixture exits */
	fclose(fp->out);
	assert_int_equal(waitpid(fp->pid, &status, 0), fp->pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* No debuginfo unless the test says where: fix_debugdata shares fix_debuginfo's build-id. */
#define NO_DEBUG_ROOT "/nonexistent/debug"

static struct hc_symbolizer *new_sym_debug(bool no_demangle, const char *debug_root)
{
	struct hc_symbolizer_opts opts = {
		.proc_root = "/proc",
		.debug_root = debug_root,
		.no_demangle = no_demangle,
	};
	struct hc_symbolizer *sym = hc_symbolizer__new(&opts);

	assert_non_null(sym);
	return sym;
}

static struct hc_symbolizer *new_sym(bool no_demangle)
{
	return new_sym_debug(no_demangle, NO_DEBUG_ROOT);
}

static const char *base(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Each printed function address goes through normalize + resolve back to its name. */
static void check_resolves(struct hc_symbolizer *sym, const struct fixture_proc *fp,
			   const char *exe, struct hc_uloc *locs)
{
	size_t i;

	for (i = 0; i < fp->nr; i++) {
		struct hc_frame_info fi;
		struct hc_uloc loc;

		assert_int_equal(
			hc_symbolizer__normalize(sym, (uint32_t)fp->pid, 0, fp->addrs[i], &loc), 0);
		assert_int_not_equal(loc.obj, HC_OBJ_UNKNOWN);
		if (locs)
			locs[i] = loc;
		if (hc_symbolizer__resolve_user(sym, &loc, &fi))
			fail_msg("%s: %s at %#llx (obj %u off %#llx) unresolved (module %s)", exe,
				 fp->names[i], (unsigned long long)fp->addrs[i], loc.obj,
				 (unsigned long long)loc.off, fi.module);
		assert_string_equal(fi.name, fp->names[i]);
		assert_int_equal(fi.offset, 4); /* the fixture prints function + 4 */
		if (!strncmp(fp->names[i], "hc_fixlib_", 10))
			assert_string_equal(fi.module, "libhcfix.so");
		else
			assert_string_equal(fi.module, base(exe));
	}
}

static void run_and_check(const char *env, size_t want_fns, const char *debug_root)
{
	const char *exe = env_path(env);
	struct hc_symbolizer_stats st;
	struct hc_symbolizer *sym = new_sym_debug(false, debug_root);
	struct fixture_proc fp;

	spawn(&fp, exe);
	assert_int_equal(fp.nr, want_fns);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	/* Known now: cheap, no re-read. */
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	check_resolves(sym, &fp, exe, NULL);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.process_gone, 0);
	assert_int_equal(st.user_unresolved, 0);
	assert_int_equal(st.elf_err, 0);
	assert_true(st.objects >= 3); /* exe, libc, ld.so */
	reap(&fp);
	hc_symbolizer__free(sym);
}

static void test_facade_pie(void **state)
{
	(void)state;
	run_and_check("HC_FIX_PIE", 6, NO_DEBUG_ROOT);
}

static void test_facade_nopie(void **state)
{
	(void)state;
	run_and_check("HC_FIX_NOPIE", 5, NO_DEBUG_ROOT);
}

static void test_facade_debugdata(void **state)
{
	(void)state;
	run_and_check("HC_FIX_DEBUGDATA", 5, NO_DEBUG_ROOT);
}

static void test_facade_debuginfo(void **state)
{
	const char *exe = env_path("HC_FIX_DEBUGINFO");
	struct hc_symbolizer *sym = new_sym(false);
	struct hc_symbolizer_stats st;
	struct hc_frame_info fi;
	struct fixture_proc fp;
	struct hc_uloc loc;
	size_t i;

	(void)state;
	run_and_check("HC_FIX_DEBUGINFO", 5, env_path("HC_FIX_DEBUG_ROOT"));

	/* Without the debug root the stripped executable's functions have no names: each is
	 * named by its start (the fixture prints function + 4), from .eh_frame. */
	spawn(&fp, exe);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	for (i = 0; i < fp.nr; i++) {
		char want[64];

		assert_int_equal(
			hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[i], &loc), 0);
		assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), 0);
		assert_true(fi.fstart);
		assert_string_equal(fi.module, "fix_debuginfo");
		assert_int_equal(fi.offset, loc.off - 4);
		snprintf(want, sizeof(want), "fix_debuginfo+0x%" PRIx64, loc.off - 4);
		assert_string_equal(fi.name, want);
	}
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.user_unresolved, 0);
	assert_int_equal(st.fstart_frames, fp.nr);
	/* Its .dynsym only imports: no function symbols at all, and stats say so. */
	assert_int_equal(st.no_symbols, 1);
	reap(&fp);
	hc_symbolizer__free(sym);
}

/* Locations are per object, not per process: two runs of one binary intern identically. */
static void test_facade_shared_objects(void **state)
{
	const char *exe = env_path("HC_FIX_PIE");
	struct hc_symbolizer *sym = new_sym(false);
	struct hc_uloc a[MAX_FNS], b[MAX_FNS];
	struct hc_symbolizer_stats st;
	struct fixture_proc p1, p2;
	size_t i;

	(void)state;
	spawn(&p1, exe);
	spawn(&p2, exe);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)p1.pid, 0), 0);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)p2.pid, 0), 0);
	hc_symbolizer__stats(sym, &st);
	check_resolves(sym, &p1, exe, a);
	check_resolves(sym, &p2, exe, b);
	for (i = 0; i < p1.nr; i++) {
		assert_int_equal(a[i].obj, b[i].obj);
		assert_int_equal(a[i].off, b[i].off);
	}
	/* The second process added no new objects: same files, same (dev, inode). */
	{
		struct hc_symbolizer_stats st2;

		hc_symbolizer__stats(sym, &st2);
		assert_int_equal(st2.objects, st.objects);
		assert_int_equal(st2.processes, 2);
	}
	reap(&p1);
	reap(&p2);
	hc_symbolizer__free(sym);
}

/* A library dlopen'd after the snapshot is found by re-reading the maps once. */
static void test_facade_dlopen(void **state)
{
	const char *exe = env_path("HC_FIX_NOPIE");
	struct hc_symbolizer *sym = new_sym(false);
	struct hc_symbolizer_stats st;
	struct hc_frame_info fi;
	struct fixture_proc fp;
	struct hc_uloc loc;
	char cmd[4200];
	ssize_t n;

	(void)state;
	spawn(&fp, exe);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	n = snprintf(cmd, sizeof(cmd), "dlopen %s\n", env_path("HC_FIX_LIB"));
	assert_int_equal(write(fp.in_fd, cmd, (size_t)n), n);
	read_fns(&fp, "");
	assert_string_equal(fp.names[fp.nr - 1], "hc_fixlib_delta");
	assert_int_equal(
		hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[fp.nr - 1], &loc), 0);
	assert_int_not_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), 0);
	assert_string_equal(fi.name, "hc_fixlib_delta");
	assert_string_equal(fi.module, "libhcfix.so");
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.processes, 2);

	/* Unknown addresses: one more re-read at most within the rate-limit window. */
	for (int i = 0; i < 100; i++) {
		assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, 0x10 + i, &loc),
				 0);
		assert_int_equal(loc.obj, HC_OBJ_UNKNOWN);
		assert_int_equal(loc.off, 0x10 + i);
	}
	hc_symbolizer__stats(sym, &st);
	assert_true(st.processes <= 3);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), -ENOENT);
	assert_null(fi.name);
	reap(&fp);
	hc_symbolizer__free(sym);
}

static void test_facade_no_demangle(void **state)
{
	const char *exe = env_path("HC_FIX_NOPIE");
	struct hc_symbolizer *sym = new_sym(true);
	struct fixture_proc fp;
	size_t i, checked = 0;

	(void)state;
	spawn(&fp, exe);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	for (i = 0; i < fp.nr; i++) {
		struct hc_frame_info fi;
		struct hc_uloc loc;

		assert_int_equal(
			hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[i], &loc), 0);
		assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), 0);
		if (!strcmp(fp.names[i], "hc::fixture::spin(int)")) {
			assert_string_equal(fi.name, "_ZN2hc7fixture4spinEi");
			checked++;
		}
		if (!strcmp(fp.names[i], "mycrate::util::bar")) {
			assert_string_equal(fi.name, "_ZN7mycrate4util3bar17h0123456789abcdefE");
			checked++;
		}
	}
	assert_int_equal(checked, 2);
	reap(&fp);
	hc_symbolizer__free(sym);
}

static void test_facade_gone(void **state)
{
	struct hc_symbolizer_stats st;
	struct hc_symbolizer *sym;
	struct hc_uloc loc;
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	sym = new_sym(false);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)pid, 0), -ESRCH);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)pid, 0), -ESRCH);
	assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)pid, 0, 0x401000, &loc), 0);
	assert_int_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_int_equal(loc.off, 0x401000);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.process_gone, 1);
	assert_int_equal(st.processes, 0);
	hc_symbolizer__free(sym);
}

/* Our own JIT region, described by a perf map in a private directory. */
static void test_facade_jit_self(void **state)
{
	char dir[] = "/tmp/hc-symbolize-XXXXXX", path[4200];
	struct hc_symbolizer_opts opts = {0};
	struct hc_symbolizer *sym;
	struct hc_frame_info fi;
	struct hc_uloc loc;
	uint8_t *code;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	code = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(code != MAP_FAILED);
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, getpid());
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%lx 100 js:hot_loop app.js:10\n", (unsigned long)(uintptr_t)code);
	fclose(f);

	opts.perfmap_dir = dir;
	sym = hc_symbolizer__new(&opts);
	assert_non_null(sym);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)getpid(), 0), 0);
	assert_int_equal(
		hc_symbolizer__normalize(sym, (uint32_t)getpid(), 0, (uintptr_t)code + 0x10, &loc),
		0);
	assert_int_not_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_int_equal(loc.off, (uintptr_t)code + 0x10); /* JIT: absolute address */
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), 0);
	assert_string_equal(fi.name, "js:hot_loop app.js:10");
	assert_string_equal(fi.module, "[jit]");
	assert_int_equal(fi.offset, 0x10);

	/* Code compiled after the snapshot: the map is re-read when an address misses. */
	assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)getpid(), 0,
						  (uintptr_t)code + 0x1010, &loc),
			 0);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), -ENOENT);
	assert_string_equal(fi.module, "[jit]");
	f = fopen(path, "a");
	assert_non_null(f);
	fprintf(f, "%lx 200 js:compiled_later\n", (unsigned long)(uintptr_t)code + 0x1000);
	fclose(f);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), 0);
	assert_string_equal(fi.name, "js:compiled_later");
	assert_int_equal(fi.offset, 0x10);

	hc_symbolizer__free(sym);
	munmap(code, 8192);
	unlink(path);
	rmdir(dir);
}

/* Our own vdso through the façade: module [vdso], and its clock_gettime resolves. */
static void test_facade_vdso_self(void **state)
{
	struct hc_symbolizer *sym = new_sym(false);
	const struct hc_mapping *vdso = NULL;
	uint64_t vaddr = 0, size, v;
	struct hc_procmaps *pm;
	struct hc_elfsym *es;
	struct hc_frame_info fi;
	struct hc_uloc loc;
	size_t i;

	(void)state;
	pm = hc_procmaps__load("/proc/self/maps");
	assert_non_null(pm);
	for (i = 0; i < pm->nr; i++)
		if (pm->maps[i].path && !strcmp(pm->maps[i].path, "[vdso]"))
			vdso = &pm->maps[i];
	if (!vdso) {
		hc_procmaps__free(pm);
		hc_symbolizer__free(sym);
		hc_skip("this process has no [vdso] mapping");
	}
	es = hc_elfsym__from_mem((void *)(uintptr_t)vdso->start, vdso->end - vdso->start);
	assert_non_null(es);
	assert_int_equal(find_sym(es, "__vdso_clock_gettime", &vaddr, &size), 0);
	/* The vdso is linked at 0: its vaddrs are offsets into the mapping. */
	assert_int_equal(hc_elfsym__off_to_vaddr(es, vaddr, &v), 0);
	assert_int_equal(v, vaddr);

	assert_int_equal(
		hc_symbolizer__normalize(sym, (uint32_t)getpid(), 0, vdso->start + vaddr + 3, &loc),
		0);
	assert_int_equal(loc.off, vaddr + 3);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), 0);
	assert_string_equal(fi.module, "[vdso]");
	assert_string_equal(fi.name, "__vdso_clock_gettime");
	assert_int_equal(fi.offset, 3);
	hc_elfsym__free(es);
	hc_procmaps__free(pm);
	hc_symbolizer__free(sym);
}

/* A fake /proc: files that cannot be opened, anon JIT memory, special mappings, forget. */
static void test_facade_fake_proc(void **state)
{
	char proc_root[4096], perfmap_dir[4096];
	struct hc_symbolizer_opts opts = {0};
	struct hc_symbolizer_stats st;
	struct hc_symbolizer *sym;
	struct hc_frame_info fi;
	struct hc_uloc loc, loc2;

	(void)state;
	snprintf(proc_root, sizeof(proc_root), "%s/proc", env_path("HC_FIXTURES"));
	snprintf(perfmap_dir, sizeof(perfmap_dir), "%s/perfmap", env_path("HC_FIXTURES"));
	opts.proc_root = proc_root;
	opts.perfmap_dir = perfmap_dir;
	opts.kallsyms = "/nonexistent/kallsyms";
	sym = hc_symbolizer__new(&opts);
	assert_non_null(sym);
	assert_int_equal(hc_symbolizer__add_process(sym, 4242, 0), 0);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.processes, 1);
	/* "/usr/bin/my prog", libc (other inode than ours), libgone (deleted). */
	assert_int_equal(st.objects, 3);
	assert_int_equal(st.object_open_err, 3);

	/* File mapping: file offset = ip - start + pgoff; unresolved keeps module + offset. */
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x55d0c8a02010ull, &loc), 0);
	assert_int_not_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_int_equal(loc.off, 0x2010);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), -ENOENT);
	assert_null(fi.name);
	assert_string_equal(fi.module, "my prog");
	assert_int_equal(fi.offset, 0x2010);
	/* The non-executable mapping of the same file is the same object. */
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x55d0c8a00010ull, &loc2), 0);
	assert_int_equal(loc2.obj, loc.obj);
	assert_int_equal(loc2.off, 0x10);

	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x7f3a1c300004ull, &loc), 0);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), -ENOENT);
	assert_string_equal(fi.module, "libgone.so");
	assert_int_equal(fi.offset, 0x1004);

	/* Anonymous rwx and [anon:v8 code]: one JIT object, resolved by perf-4242.map. */
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x7f1200000110ull, &loc), 0);
	assert_int_equal(loc.off, 0x7f1200000110ull);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), 0);
	assert_string_equal(fi.name, "LazyCompile:~add /srv/app.js:3");
	assert_string_equal(fi.module, "[jit]");
	assert_int_equal(fi.offset, 0x10);
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x7f1200010100ull, &loc2), 0);
	assert_int_equal(loc2.obj, loc.obj);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc2, &fi), 0);
	assert_string_equal(fi.name, "JIT stub [vm]");

	/* [vdso] of another size than ours: module only. [vsyscall]: module only. */
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x7ffd4e5ff100ull, &loc), 0);
	assert_int_equal(loc.off, 0x100);
	hc_symbolizer__resolve_user(sym, &loc, &fi);
	assert_string_equal(fi.module, "[vdso]");
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0xffffffffff600400ull, &loc), 0);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), -ENOENT);
	assert_string_equal(fi.module, "[vsyscall]");
	assert_int_equal(fi.offset, 0x400);

	/* In no mapping: one re-read, then unknown with the raw address. */
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x1000, &loc), 0);
	assert_int_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_int_equal(loc.off, 0x1000);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), -ENOENT);
	/* [heap], [stack] and [vvar] cannot hold code: as in no mapping, not a JIT frame each. */
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x55d0c9000100ull, &loc), 0);
	assert_int_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x7ffd4e5a0100ull, &loc), 0);
	assert_int_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_int_equal(loc.off, 0x7ffd4e5a0100ull);
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x7ffd4e5fb010ull, &loc), 0);
	assert_int_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_null(fi.name);
	assert_int_equal(fi.offset, 0x1000);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.processes, 2);

	/* forget: the next add_process re-reads; objects are reused. */
	hc_symbolizer__forget_process(sym, 4242);
	assert_int_equal(hc_symbolizer__add_process(sym, 4242, 0), 0);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.processes, 3);
	assert_int_equal(st.objects, 3);
	assert_true(st.user_unresolved >= 5);

	/* Unknown ids are unresolved, not a crash. */
	loc.obj = 9999;
	loc.off = 0x42;
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), -ENOENT);
	assert_int_equal(fi.offset, 0x42);

	/* kallsyms missing: kernel frames unresolved, never showing the address. */
	assert_int_equal(hc_symbolizer__load_kernel(sym), -ENOENT);
	assert_int_equal(hc_symbolizer__resolve_kernel(sym, 0xffffffff81001050ull, &fi), -ENOENT);
	assert_null(fi.name);
	assert_string_equal(fi.module, "[kernel]");
	assert_int_equal(fi.offset, 0);
	hc_symbolizer__free(sym);
	hc_symbolizer__free(NULL);
}

/* A JIT in a container: its perf map is in its own /tmp, named by its pid there. */
static void test_facade_jit_namespaced(void **state)
{
	char dir[] = "/tmp/hc-proc-XXXXXX", path[4200];
	struct hc_symbolizer_opts opts = {0};
	struct hc_symbolizer *sym;
	struct hc_frame_info fi;
	struct hc_uloc loc;
	uint32_t v;
	FILE *f;

	(void)state;
	assert_int_equal(hc__status_nspid("\nName:\tx\nNSpid:\t4242\t7\n", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(hc__status_nspid("\nNSpid:\t4242\n", &v), 0);
	assert_int_equal(v, 4242);
	assert_int_equal(hc__status_nspid("\nName:\tx\n", &v), -ENOENT);
	assert_int_equal(hc__status_nspid("\nNSpid:\t\n", &v), -EINVAL);
	assert_int_equal(hc__status_nspid("\nNSpid:\t4242\t99999999999\n", &v), -EINVAL);

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "mkdir -p %s/4242/root/tmp", dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/4242/maps", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "7f0000000000-7f0000010000 r-xp 00000000 00:00 0 \n");
	fclose(f);
	snprintf(path, sizeof(path), "%s/4242/status", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "Name:\tnode\nTgid:\t4242\nNSpid:\t4242\t7\n");
	fclose(f);
	/* a decoy under the host pid: must not be read */
	snprintf(path, sizeof(path), "%s/4242/root/tmp/perf-4242.map", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "7f0000000100 100 wrong_map\n");
	fclose(f);
	snprintf(path, sizeof(path), "%s/4242/root/tmp/perf-7.map", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "7f0000000100 100 js:in_container\n");
	fclose(f);

	opts.proc_root = dir;
	sym = hc_symbolizer__new(&opts);
	assert_non_null(sym);
	assert_int_equal(hc_symbolizer__add_process(sym, 4242, 0), 0);
	assert_int_equal(hc_symbolizer__normalize(sym, 4242, 0, 0x7f0000000110ull, &loc), 0);
	assert_int_not_equal(loc.obj, HC_OBJ_UNKNOWN);
	assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &fi), 0);
	assert_string_equal(fi.name, "js:in_container");
	assert_string_equal(fi.module, "[jit]");
	assert_int_equal(fi.offset, 0x10);
	hc_symbolizer__free(sym);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	assert_int_equal(system(path), 0);
}

/* Maps that cannot be read for a reason other than exit: an error each time, never "known". */
static void test_facade_unreadable(void **state)
{
	char dir[] = "/tmp/hc-proc-XXXXXX", path[4200];
	struct hc_symbolizer_opts opts = {0};
	struct hc_symbolizer *sym;
	struct hc_uloc loc;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/77", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/77/maps", dir);
	assert_int_equal(mkdir(path, 0755), 0); /* read() gives EISDIR */
	opts.proc_root = dir;
	sym = hc_symbolizer__new(&opts);
	assert_non_null(sym);
	assert_int_equal(hc_symbolizer__add_process(sym, 77, 0), -EISDIR);
	assert_int_equal(hc_symbolizer__add_process(sym, 77, 0), -EISDIR);
	assert_int_equal(hc_symbolizer__normalize(sym, 77, 0, 0x1234, &loc), 0);
	assert_int_equal(loc.obj, HC_OBJ_UNKNOWN);
	/* No such pid at all. */
	assert_int_equal(hc_symbolizer__add_process(sym, 78, 0), -ESRCH);
	hc_symbolizer__free(sym);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/77", dir);
	rmdir(path);
	rmdir(dir);
}

static void test_facade_kernel(void **state)
{
	struct hc_symbolizer_opts opts = {0};
	char path[4096], dir[] = "/tmp/hc-kallsyms-XXXXXX", zpath[4200];
	struct hc_symbolizer_stats st;
	struct hc_symbolizer *sym;
	struct hc_frame_info fi;
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/kallsyms.txt", env_path("HC_FIXTURES"));
	opts.kallsyms = path;
	sym = hc_symbolizer__new(&opts);
	assert_non_null(sym);
	assert_int_equal(hc_symbolizer__load_kernel(sym), 0);
	assert_int_equal(hc_symbolizer__resolve_kernel(sym, 0xffffffff81001050ull, &fi), 0);
	assert_string_equal(fi.name, "do_one_initcall");
	assert_null(fi.module);
	assert_int_equal(fi.offset, 0x40);
	assert_int_equal(hc_symbolizer__resolve_kernel(sym, 0xffffffffc0a00810ull, &fi), 0);
	assert_string_equal(fi.name, "ext4_sync_fs");
	assert_string_equal(fi.module, "ext4");
	assert_int_equal(hc_symbolizer__resolve_kernel(sym, 0xffffffff81e00010ull, &fi), -ENOENT);
	assert_null(fi.name);
	assert_string_equal(fi.module, "[kernel]");
	assert_int_equal(fi.offset, 0);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.kernel_unresolved, 1);
	hc_symbolizer__free(sym);

	/* kptr_restrict: every address zero. */
	assert_non_null(mkdtemp(dir));
	snprintf(zpath, sizeof(zpath), "%s/kallsyms", dir);
	f = fopen(zpath, "w");
	assert_non_null(f);
	fputs("0000000000000000 T _stext\n0000000000000000 t foo\n", f);
	fclose(f);
	opts.kallsyms = zpath;
	sym = hc_symbolizer__new(&opts);
	assert_non_null(sym);
	assert_int_equal(hc_symbolizer__load_kernel(sym), -EPERM);
	assert_int_equal(hc_symbolizer__resolve_kernel(sym, 0xffffffff81001050ull, &fi), -ENOENT);
	assert_string_equal(fi.module, "[kernel]");
	hc_symbolizer__free(sym);
	unlink(zpath);
	rmdir(dir);
}

/* ---- inline frames (DWARF) ---- */

/*
 * Each address the inline fixture prints resolves to the chain it names ("a;b;c": a the real
 * function, b and c inlined into it, c innermost). Returns the inlined frames seen.
 */
static size_t check_chains(struct hc_symbolizer *sym, const struct fixture_proc *fp,
			   const char *module)
{
	size_t inlined = 0;

	for (size_t i = 0; i < fp->nr; i++) {
		struct hc_frame_info fr[8], one;
		char want[sizeof(fp->names[i])], *save = NULL, *tok;
		struct hc_uloc loc;
		size_t n, k = 0;

		assert_int_equal(
			hc_symbolizer__normalize(sym, (uint32_t)fp->pid, 0, fp->addrs[i], &loc), 0);
		assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 8, &n), 0);
		memcpy(want, fp->names[i], sizeof(want));
		for (tok = strtok_r(want, ";", &save); tok; tok = strtok_r(NULL, ";", &save), k++) {
			if (k >= n)
				fail_msg("%s: %zu frames", fp->names[i], n);
			assert_string_equal(fr[k].name, tok);
			assert_string_equal(fr[k].module, module);
			assert_int_equal(fr[k].inlined, k > 0);
			if (k)
				assert_int_equal(fr[k].offset, 0);
		}
		if (k != n)
			fail_msg("%s: %zu frames, the innermost %s", fp->names[i], n,
				 fr[n - 1].name);
		inlined += n - 1;
		/* resolve_user: the real function only, as without DWARF */
		assert_int_equal(hc_symbolizer__resolve_user(sym, &loc, &one), 0);
		assert_string_equal(one.name, fr[0].name);
		assert_false(one.inlined);
		assert_int_equal(one.offset, fr[0].offset);
	}
	return inlined;
}

static void test_inline_chains(void **state)
{
	const char *exe = env_path("HC_FIX_INLINE");
	struct hc_symbolizer *sym = new_sym(false);
	struct hc_symbolizer_stats st;
	struct fixture_proc fp;
	size_t inlined;

	(void)state;
	spawn(&fp, exe);
	assert_int_equal(fp.nr, 4);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	inlined = check_chains(sym, &fp, "fix_inline");
	assert_int_equal(inlined, 2 + 1 + 0 + 1);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.inline_frames, inlined);
	assert_int_equal(st.inline_truncated, 0);
	assert_int_equal(st.user_unresolved, 0);
	assert_int_equal(st.dwarf_err, 0);
	assert_int_equal(st.dwarf_over_budget, 0);
	assert_true(st.dwarf_objects >= 1);
	reap(&fp);
	hc_symbolizer__free(sym);
}

/* Stripped, with its DWARF in <debug_root>/.build-id/: the same chains; without it, none. */
static void test_inline_debuginfo(void **state)
{
	const char *exe = env_path("HC_FIX_INLINE_DEBUGINFO");
	struct hc_symbolizer *sym = new_sym_debug(false, env_path("HC_FIX_DEBUG_ROOT"));
	struct hc_symbolizer_stats st;
	struct hc_frame_info fr[8];
	struct fixture_proc fp;
	struct hc_uloc loc;
	size_t n;
	char want[64];

	(void)state;
	spawn(&fp, exe);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	assert_int_equal(check_chains(sym, &fp, "fix_inline_debuginfo"), 4);
	hc_symbolizer__free(sym);

	sym = new_sym(false);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[0], &loc), 0);
	/* no DWARF, no symbol: named by its function's start, from .eh_frame */
	assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_true(fr[0].fstart);
	assert_false(fr[0].inlined);
	assert_true(fr[0].offset <= loc.off);
	snprintf(want, sizeof(want), "fix_inline_debuginfo+0x%" PRIx64, fr[0].offset);
	assert_string_equal(fr[0].name, want);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.dwarf_objects, 0);
	assert_int_equal(st.inline_frames, 0);
	assert_int_equal(st.user_unresolved, 0);
	assert_int_equal(st.fstart_frames, 1);
	reap(&fp);
	hc_symbolizer__free(sym);
}

/* A chain longer than max keeps the real function and the innermost; max 1 is resolve_user. */
static void test_inline_truncated(void **state)
{
	const char *exe = env_path("HC_FIX_INLINE");
	struct hc_symbolizer *sym = new_sym(false);
	struct hc_symbolizer_stats st;
	struct hc_frame_info fr[3];
	struct fixture_proc fp;
	struct hc_uloc loc;
	size_t n;

	(void)state;
	spawn(&fp, exe);
	assert_string_equal(fp.names[0], "hc_inl_outer;hc_inl_mid;hc_inl_leaf");
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[0], &loc), 0);
	assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 2, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(fr[0].name, "hc_inl_outer");
	assert_string_equal(fr[1].name, "hc_inl_leaf");
	assert_true(fr[1].inlined);
	assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].name, "hc_inl_outer");
	assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 0, &n), -EINVAL);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.inline_truncated, 1);
	assert_int_equal(st.inline_frames, 1);
	reap(&fp);
	hc_symbolizer__free(sym);
}

/* --no-inline, and a DWARF budget too small for the object: one frame, as before. */
static void test_inline_off(void **state)
{
	const char *exe = env_path("HC_FIX_INLINE");
	struct hc_symbolizer_opts opts[2] = {
		{.debug_root = NO_DEBUG_ROOT, .no_inline = true},
		{.debug_root = NO_DEBUG_ROOT, .dwarf_max_bytes = 64},
	};
	struct fixture_proc fp;

	(void)state;
	spawn(&fp, exe);
	for (size_t k = 0; k < 2; k++) {
		struct hc_symbolizer *sym = hc_symbolizer__new(&opts[k]);
		struct hc_symbolizer_stats st;

		assert_non_null(sym);
		assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
		for (size_t i = 0; i < fp.nr; i++) {
			struct hc_frame_info fr[8];
			struct hc_uloc loc;
			size_t n;

			assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0,
								  fp.addrs[i], &loc),
					 0);
			assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 8, &n),
					 0);
			assert_int_equal(n, 1);
			assert_false(fr[0].inlined);
			assert_int_equal(strncmp(fr[0].name, fp.names[i], strlen(fr[0].name)), 0);
		}
		hc_symbolizer__stats(sym, &st);
		assert_int_equal(st.inline_frames, 0);
		assert_int_equal(st.dwarf_objects, 0);
		/* the executable at least; libc and ld.so too, if they have DWARF */
		if (k == 1)
			assert_true(st.dwarf_over_budget >= 1);
		else
			assert_int_equal(st.dwarf_over_budget, 0);
		hc_symbolizer__free(sym);
	}
	reap(&fp);
}

/*
 * A file naming a supplementary file (dwz): used once that file is found by build-id in the
 * debug root, refused (counted, one frame per address) when it is not; libdw is never left to
 * look for it itself.
 */
static void test_inline_altlink(void **state)
{
	const char *exe = env_path("HC_FIX_INLINE_ALTLINK");
	struct hc_symbolizer_stats st;
	struct hc_symbolizer *sym;
	struct hc_frame_info fr[8];
	struct fixture_proc fp;
	struct hc_dwinline *d;
	const uint8_t *id;
	struct hc_uloc loc;
	size_t len, n;
	void *img;

	(void)state;
	spawn(&fp, exe);
	sym = new_sym_debug(false, env_path("HC_FIX_DEBUG_ROOT"));
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	assert_int_equal(check_chains(sym, &fp, "fix_inline_altlink"), 4);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.dwarf_err, 0);
	hc_symbolizer__free(sym);

	sym = new_sym(false);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[0], &loc), 0);
	assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(fr[0].name, "hc_inl_outer");
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.dwarf_err, 1);
	assert_int_equal(st.inline_frames, 0);
	hc_symbolizer__free(sym);
	reap(&fp);

	/* the reader alone: no lookup before the supplementary file is attached */
	img = read_all(exe, &len);
	d = hc_dwinline__from_mem(img, len, SIZE_MAX);
	assert_non_null(d);
	assert_int_equal(hc_dwinline__alt_build_id(d, &id), 20);
	{
		const char *names[4];

		assert_int_equal(hc_dwinline__lookup(d, 0x1000, names, 4, &n), -ENOLINK);
		/* itself cannot be its own supplementary file: it names one */
		assert_int_equal(hc_dwinline__set_alt(d, hc_dwinline__from_mem(img, len, SIZE_MAX)),
				 -EINVAL);
	}
	hc_dwinline__free(d);
	free(img);
}

/* The ELF file's function symbols, as [vaddr, vaddr + size) ranges to look up. */
static void text_span(const char *path, uint64_t *lo, uint64_t *hi)
{
	struct hc_elfsym *es = elf_from_path(path);
	const char *name;
	uint64_t v, size;

	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < hc_elfsym__nr(es); i++) {
		assert_int_equal(hc_elfsym__symbol(es, i, &name, &v, &size), 0);
		if (v < *lo)
			*lo = v;
		if (v + size > *hi)
			*hi = v + size;
	}
	assert_true(*lo < *hi);
	hc_elfsym__free(es);
}

/* Every address of the text: chains hold only non-empty names, and never more than max. */
static size_t lookup_all(struct hc_dwinline *d, uint64_t lo, uint64_t hi)
{
	size_t found = 0;

	for (uint64_t v = lo; v < hi; v++) {
		const char *names[4];
		size_t n = 99;
		int len = hc_dwinline__lookup(d, v, names, 4, &n);

		if (len < 0) {
			assert_true(len == -ENOENT || len == -E2BIG || len == -ENOLINK);
			assert_int_equal(n, 0);
			continue;
		}
		assert_true(len >= 1 && n == ((size_t)len < 4 ? (size_t)len : 4));
		for (size_t k = 0; k < n; k++)
			if (names[k])
				assert_true(strlen(names[k]) > 0);
		found++;
	}
	return found;
}

/* The DWARF reader alone, from memory: what it finds, what it refuses. */
static void test_inline_dwinline(void **state)
{
	const char *path = env_path("HC_FIX_INLINE");
	struct hc_dwinline *d;
	uint64_t lo, hi;
	const uint8_t *id;
	size_t len;
	void *img = read_all(path, &len);
	static const char text[] = "not an elf";

	(void)state;
	text_span(path, &lo, &hi);
	d = hc_dwinline__from_mem(img, len, SIZE_MAX);
	assert_non_null(d);
	assert_true(hc_dwinline__bytes(d) > 0);
	assert_int_equal(hc_dwinline__alt_build_id(d, &id), 0);
	assert_true(lookup_all(d, lo, hi) > 0);
	/* every byte of a function compiled with -g is in its subprogram */
	{
		struct hc_elfsym *es = elf_from_path(path);
		uint64_t v, size;
		const char *names[4];
		size_t n;

		assert_int_equal(find_sym(es, "hc_inl_other", &v, &size), 0);
		assert_int_equal(lookup_all(d, v, v + size), size);
		assert_true(hc_dwinline__lookup(d, v, names, 1, &n) >= 1);
		assert_int_equal(n, 1);
		assert_string_equal(names[0], "hc_inl_other");
		assert_int_equal(hc_dwinline__lookup(d, v, names, 0, &n), -EINVAL);
		hc_elfsym__free(es);
	}
	hc_dwinline__free(d);

	/* over its budget: refused before anything is read */
	errno = 0;
	assert_null(hc_dwinline__from_mem(img, len, 16));
	assert_int_equal(errno, E2BIG);
	errno = 0;
	assert_null(hc_dwinline__from_mem(text, sizeof(text), SIZE_MAX));
	assert_int_equal(errno, ENOEXEC);
	free(img);

	/* the stripped copy has no DWARF */
	img = read_all(env_path("HC_FIX_INLINE_DEBUGINFO"), &len);
	errno = 0;
	assert_null(hc_dwinline__from_mem(img, len, SIZE_MAX));
	assert_int_equal(errno, ENODATA);
	free(img);
}

/* Truncated and corrupted images: refused or read, never out of bounds (ASan watches). */
static void test_inline_hostile(void **state)
{
	const char *path = env_path("HC_FIX_INLINE");
	uint32_t seed = 4242;
	uint64_t lo, hi;
	size_t len, cut;
	uint8_t *img = read_all(path, &len), *copy = malloc(len);
	int parsed = 0;

	(void)state;
	assert_non_null(copy);
	text_span(path, &lo, &hi);
	for (cut = 64; cut < len; cut += len / 23) {
		struct hc_dwinline *d = hc_dwinline__from_mem(img, cut, SIZE_MAX);

		if (d) {
			lookup_all(d, lo, hi);
			hc_dwinline__free(d);
		}
	}
	for (int round = 0; round < 200; round++) {
		struct hc_dwinline *d;

		memcpy(copy, img, len);
		for (int k = 0; k < 16; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[(seed >> 8) % len] ^= (uint8_t)(seed >> 3) | 1;
		}
		d = hc_dwinline__from_mem(copy, len, SIZE_MAX);
		if (d) {
			lookup_all(d, lo, lo + 512 < hi ? lo + 512 : hi);
			hc_dwinline__free(d);
			parsed++;
		}
	}
	/* most flips miss the headers: the walk did see corrupt DWARF */
	assert_true(parsed > 0);
	free(copy);
	free(img);
}

/* ---- the index against a DIE walk per lookup ---- */

struct diff_stats {
	size_t lookups, chains, inlined, too_deep; /* inlined: chains of 2 or more */
};

/* Every step-th address of [lo, hi): the index and the oracle give the same answer. */
static void diff_range(struct hc_dwinline *d, struct ref_dwinline *r, uint64_t lo, uint64_t hi,
		       uint64_t step, struct diff_stats *ds)
{
	for (uint64_t v = lo; v < hi; v += step) {
		const char *a[6], *b[6];
		size_t na = 99, nb = 98;
		int la = hc_dwinline__lookup(d, v, a, 6, &na);
		int lb = ref_dwinline__lookup(r, v, b, 6, &nb);

		if (la != lb || na != nb)
			fail_msg("at %#" PRIx64 ": index %d (%zu names), walk %d (%zu names)", v,
				 la, na, lb, nb);
		for (size_t k = 0; k < na; k++) {
			if (!a[k] != !b[k] || (a[k] && strcmp(a[k], b[k])))
				fail_msg("at %#" PRIx64 ", name %zu: index %s, walk %s", v, k,
					 a[k] ? a[k] : "(none)", b[k] ? b[k] : "(none)");
		}
		ds->lookups++;
		ds->chains += la > 0;
		ds->inlined += la > 1;
		ds->too_deep += la == -E2BIG;
	}
}

/* The text of the ELF file at path, both ways, from memory; *ds gets the figures. */
static void diff_file(const char *path, uint64_t step, struct diff_stats *ds)
{
	struct ref_dwinline *r;
	struct hc_dwinline *d;
	uint64_t lo, hi;
	size_t len;
	void *img = read_all(path, &len);

	text_span(path, &lo, &hi);
	d = hc_dwinline__from_mem(img, len, SIZE_MAX);
	r = ref_dwinline__from_mem(img, len, SIZE_MAX);
	assert_non_null(d);
	assert_non_null(r);
	/* the index is what stays: smaller than the sections the walk keeps */
	assert_true(hc_dwinline__bytes(d) < ref_dwinline__bytes(r));
	diff_range(d, r, lo, hi, step, ds);
	hc_dwinline__free(d);
	ref_dwinline__free(r);
	free(img);
}

/* Where section name lies in the ELF image (uncompressed): [*off, *off + *size). */
static void section_span(const void *img, size_t len, const char *name, size_t *off, size_t *size)
{
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	elf_version(EV_CURRENT);
	elf = elf_memory((char *)img, len);
	assert_non_null(elf);
	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	*size = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		assert_non_null(gelf_getshdr(scn, &sh));
		if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name)) {
			assert_false(sh.sh_flags & SHF_COMPRESSED);
			assert_true(sh.sh_offset + sh.sh_size <= len);
			*off = sh.sh_offset;
			*size = sh.sh_size;
		}
	}
	elf_end(elf);
	assert_true(*size > 0);
}

/* libc's separate debuginfo file (libc6-dbg), when this machine has one; NULL if not. */
static char *libc_debuginfo(void)
{
	char line[4096], path[4096], *dbg = NULL;
	uint8_t id[HC_BUILD_ID_MAX];
	FILE *f = fopen("/proc/self/maps", "re");
	size_t len;
	int fd = -1;

	assert_non_null(f);
	while (fd < 0 && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (!p || !strstr(p, "/libc.so"))
			continue;
		p[strcspn(p, "\n")] = '\0';
		fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	fclose(f);
	if (fd < 0)
		return NULL;
	if (!hc_elfsym__read_build_id_fd(fd, id, &len) &&
	    !hc_build_id_path("/usr/lib/debug", id, len, path, sizeof(path)) && !access(path, R_OK))
		dbg = strdup(path);
	close(fd);
	return dbg;
}

/*
 * The index answers exactly what a walk of the DIEs at every lookup answers (the chain, its
 * names, its errors): on the fixtures with -g, on this test's own binary, on corrupted
 * copies, with a supplementary file, and on a sample of libc's debuginfo when installed.
 */
static void test_inline_differential(void **state)
{
	const char *path = env_path("HC_FIX_INLINE");
	struct diff_stats ds = {0};
	size_t len, info_off = 0, info_size = 0;
	uint64_t lo, hi;
	uint32_t seed = 777;
	uint8_t *img, *copy;
	char *libc;

	(void)state;
	diff_file(path, 1, &ds);
	/* inlined code, seen as such */
	assert_true(ds.inlined > 0);
	diff_file(env_path("HC_FIX_FULL"), 1, &ds);
	diff_file("/proc/self/exe", 3, &ds);
	/* past HC_DWINLINE_MAX_NEST: refused alike, found alike above it */
	ds = (struct diff_stats){0};
	diff_file(env_path("HC_FIX_DEEP"), 1, &ds);
	assert_true(ds.too_deep > 0);
	assert_true(ds.chains > 0);

	/*
	 * Corrupted DIEs: the same answers, the same refusals (ASan watches both). Flips in
	 * .debug_info alone reach the walk's bounds: sibling links that go backwards, broken
	 * nesting, ranges that overlap.
	 */
	img = read_all(path, &len);
	copy = malloc(len);
	assert_non_null(copy);
	text_span(path, &lo, &hi);
	section_span(img, len, ".debug_info", &info_off, &info_size);
	for (int round = 0; round < 400; round++) {
		struct ref_dwinline *r;
		struct hc_dwinline *d;
		int d_err, r_err;

		memcpy(copy, img, len);
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[info_off + (seed >> 8) % info_size] ^= (uint8_t)(seed >> 3) | 1;
		}
		errno = 0;
		d = hc_dwinline__from_mem(copy, len, SIZE_MAX);
		d_err = errno;
		errno = 0;
		r = ref_dwinline__from_mem(copy, len, SIZE_MAX);
		r_err = errno;
		assert_int_equal(!d, !r);
		if (d)
			diff_range(d, r, lo, hi, 1, &ds);
		else
			assert_int_equal(d_err, r_err);
		hc_dwinline__free(d);
		ref_dwinline__free(r);
	}
	free(copy);
	free(img);

	/* with a supplementary file: indexed once it is attached, then released */
	{
		const char *alt_path = env_path("HC_FIX_INLINE_ALTLINK");
		struct hc_dwinline *d, *alt;
		struct ref_dwinline *r;
		char apath[4096];
		const uint8_t *id;
		size_t alen, id_len;
		void *aimg;

		img = read_all(alt_path, &len);
		d = hc_dwinline__from_mem(img, len, SIZE_MAX);
		r = ref_dwinline__from_mem(img, len, SIZE_MAX);
		assert_non_null(d);
		assert_non_null(r);
		id_len = hc_dwinline__alt_build_id(d, &id);
		assert_int_equal(id_len, 20);
		assert_int_equal(hc_build_id_path(env_path("HC_FIX_DEBUG_ROOT"), id, id_len, apath,
						  sizeof(apath)),
				 0);
		aimg = read_all(apath, &alen);
		/* a file loaded to be looked up in is no supplementary file */
		alt = hc_dwinline__from_mem(aimg, alen, SIZE_MAX);
		assert_non_null(alt);
		assert_int_equal(hc_dwinline__set_alt(d, alt), -EINVAL);
		assert_int_equal(
			hc_dwinline__set_alt(d, hc_dwinline__alt_from_mem(aimg, alen, SIZE_MAX)),
			0);
		assert_int_equal(
			ref_dwinline__set_alt(r, ref_dwinline__from_mem(aimg, alen, SIZE_MAX)), 0);
		/* attached once */
		assert_int_equal(
			hc_dwinline__set_alt(d, hc_dwinline__alt_from_mem(aimg, alen, SIZE_MAX)),
			-EINVAL);
		text_span(path, &lo, &hi);
		diff_range(d, r, lo, hi, 1, &ds);
		hc_dwinline__free(d);
		ref_dwinline__free(r);
		free(aimg);
		free(img);
	}

	libc = libc_debuginfo();
	if (libc) {
		struct diff_stats lds = {0};

		/* a prime step: every alignment of an address within its instruction */
		diff_file(libc, 61, &lds);
		assert_true(lds.inlined > 0);
		print_message("libc's debuginfo %s: %zu lookups agree (%zu chains, %zu inlined)\n",
			      libc, lds.lookups, lds.chains, lds.inlined);
		free(libc);
	} else {
		print_message("no debuginfo file for libc (libc6-dbg): fixtures only\n");
	}
}

/* ---- function starts ---- */

/* The unstripped copy's symbol for a function of the stripped one, by its file offset:
 * its vaddr, which must be the function's first byte, and its size. */
static void full_symbol(const struct hc_elfsym *full, uint64_t file_off, const char *want,
			uint64_t *vaddr, uint64_t *size)
{
	const char *name;
	uint64_t v, off;
	size_t idx;

	assert_int_equal(hc_elfsym__off_to_vaddr(full, file_off, &v), 0);
	assert_int_equal(hc_elfsym__lookup(full, v, &idx, &off), 0);
	assert_int_equal(off, 0);
	assert_int_equal(hc_elfsym__symbol(full, idx, &name, vaddr, size), 0);
	assert_string_equal(name, want);
	assert_true(*size > 1);
}

/*
 * A stripped -O2 binary: no symbol for its local functions, yet every address inside each is
 * named by the function's start, read from .eh_frame: one frame per function, whose start is
 * the unstripped copy's symbol (what nm prints). An address no FDE covers (code without CFI)
 * keeps today's frame per address.
 */
static void test_facade_fstart(void **state)
{
	const char *exe = env_path("HC_FIX_FSTART");
	struct hc_elfsym *full = elf_from_path(env_path("HC_FIX_FSTART_FULL"));
	struct hc_symbolizer *sym = new_sym(false);
	struct hc_frame_info fi, chain[4];
	struct hc_symbolizer_stats st;
	const char *fns[MAX_FNS];
	size_t n_fns = 0, named = 0, nocfi = 0, n;
	struct fixture_proc fp;
	char want[128];

	(void)state;
	assert_non_null(full);
	spawn(&fp, exe);
	assert_int_equal(fp.nr, 5);
	for (size_t i = 0; i < fp.nr; i++) {
		bool cfi = strcmp(fp.names[i], "hc_fs_nocfi") != 0;
		const char *first = NULL;
		uint64_t vaddr, size;
		struct hc_uloc at, loc;

		assert_int_equal(
			hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[i], &at), 0);
		assert_int_not_equal(at.obj, HC_OBJ_UNKNOWN);
		full_symbol(full, at.off, fp.names[i], &vaddr, &size);
		snprintf(want, sizeof(want), "fix_fstart+0x%" PRIx64, at.off);
		/* every byte of the function */
		for (uint64_t k = 0; k < size; k++) {
			int r;

			assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0,
								  fp.addrs[i] + k, &loc),
					 0);
			r = hc_symbolizer__resolve_user(sym, &loc, &fi);
			assert_string_equal(fi.module, "fix_fstart");
			if (!cfi) {
				assert_int_equal(r, -ENOENT);
				assert_null(fi.name);
				assert_false(fi.fstart);
				assert_int_equal(fi.offset, loc.off);
				nocfi++;
				continue;
			}
			assert_int_equal(r, 0);
			assert_true(fi.fstart);
			assert_string_equal(fi.name, want);
			assert_int_equal(fi.offset, at.off);
			if (first)
				assert_ptr_equal(fi.name, first); /* one interned name a function */
			first = fi.name;
			named++;
		}
		if (!cfi)
			continue;
		/* the pipeline's entry point names it the same way */
		assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, chain, 4, &n), 0);
		assert_int_equal(n, 1);
		assert_true(chain[0].fstart);
		assert_ptr_equal(chain[0].name, first);
		assert_int_equal(chain[0].offset, at.off);
		named++;
		fns[n_fns++] = first;
	}
	assert_int_equal(n_fns, 4);
	for (size_t a = 0; a < n_fns; a++)
		for (size_t b = a + 1; b < n_fns; b++)
			assert_string_not_equal(fns[a], fns[b]);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.fstart_frames, named);
	assert_int_equal(st.user_unresolved, nocfi);
	assert_true(nocfi > 1);
	print_message("fstart: %zu addresses in %zu functions: %zu distinct frames per address, "
		      "%zu by function start; %zu addresses without an FDE stay one frame each\n",
		      named - n_fns, n_fns, named - n_fns, n_fns, nocfi);
	reap(&fp);
	hc_symbolizer__free(sym);
	hc_elfsym__free(full);
}

static struct hc_fstarts *fstarts_from_path(const char *path)
{
	struct hc_fstarts *fs;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	fs = hc_fstarts__from_fd(fd, 0);
	close(fd);
	return fs;
}

/* The symbol of name in es: vaddr and size. */
static void symbol_named(const struct hc_elfsym *es, const char *want, uint64_t *vaddr,
			 uint64_t *size)
{
	const char *name;

	for (size_t i = 0; i < hc_elfsym__nr(es); i++) {
		assert_int_equal(hc_elfsym__symbol(es, i, &name, vaddr, size), 0);
		if (!strcmp(name, want))
			return;
	}
	fail_msg("no symbol %s", want);
}

/* The table itself: each local function's FDE starts at its symbol and covers its bytes. */
static void test_elf_fstarts(void **state)
{
	static const char *const fns[] = {"hc_fs_one", "hc_fs_two", "hc_fs_three", "hc_fs_four"};
	struct hc_elfsym *full = elf_from_path(env_path("HC_FIX_FSTART_FULL"));
	struct hc_fstarts *fs = fstarts_from_path(env_path("HC_FIX_FSTART"));
	static const char text[] = "not an elf";
	uint64_t vaddr, size, start;

	(void)state;
	assert_non_null(full);
	assert_non_null(fs);
	assert_true(hc_fstarts__nr(fs) >= 5); /* the four, main, _start, ... */
	assert_int_equal(hc_fstarts__bytes(fs) >= 16 * hc_fstarts__nr(fs), true);
	for (size_t i = 0; i < 4; i++) {
		symbol_named(full, fns[i], &vaddr, &size);
		assert_int_equal(hc_fstarts__lookup(fs, vaddr, &start), 0);
		assert_int_equal(start, vaddr);
		assert_int_equal(hc_fstarts__lookup(fs, vaddr + size - 1, &start), 0);
		assert_int_equal(start, vaddr);
	}
	symbol_named(full, "hc_fs_nocfi", &vaddr, &size);
	for (uint64_t k = 0; k < size; k++)
		assert_int_equal(hc_fstarts__lookup(fs, vaddr + k, &start), -ENOENT);
	assert_int_equal(hc_fstarts__lookup(fs, 0, &start), -ENOENT);
	/* more FDEs than allowed: no table at all */
	hc_fstarts__free(fs);
	{
		int fd = open(env_path("HC_FIX_FSTART"), O_RDONLY | O_CLOEXEC);

		assert_true(fd >= 0);
		errno = 0;
		assert_null(hc_fstarts__from_fd(fd, 2));
		assert_int_equal(errno, E2BIG);
		close(fd);
	}
	errno = 0;
	assert_null(hc_fstarts__from_mem(text, sizeof(text), 0));
	assert_int_equal(errno, ENOEXEC);
	hc_fstarts__free(NULL);
	hc_elfsym__free(full);
}

/* Random bytes of .eh_frame flipped: the table stays in bounds and consistent. */
static void test_hostile_eh_frame(void **state)
{
	size_t len, off, size;
	uint8_t *img = read_all(env_path("HC_FIX_FSTART"), &len);
	uint8_t *copy = malloc(len);
	uint32_t seed = 4242;

	(void)state;
	assert_non_null(copy);
	section_span(img, len, ".eh_frame", &off, &size);
	for (int round = 0; round < 500; round++) {
		struct hc_fstarts *fs;
		uint64_t start;

		memcpy(copy, img, len);
		for (int k = 0; k < 1 + round % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			copy[off + (seed >> 8) % size] ^= (uint8_t)(seed >> 3) | 1;
		}
		fs = hc_fstarts__from_mem(copy, len, 0);
		for (uint64_t v = 0; fs && v < 0x3000; v += 3)
			if (!hc_fstarts__lookup(fs, v, &start))
				assert_true(start <= v);
		hc_fstarts__free(fs);
	}
	/* cut short inside the section */
	for (size_t cut = off; cut < off + size; cut += 7) {
		memcpy(copy, img, len);
		memset(copy + cut, 0, off + size - cut);
		hc_fstarts__free(hc_fstarts__from_mem(copy, len, 0));
	}
	free(copy);
	free(img);
}

/* ---- separate debug files (debugfile.h) ---- */

/* The layouts of fixtures/symbolize/make-debuglink.sh, made once for the group. */
static char dbg_dir[] = "/tmp/hc-dbg-XXXXXX";

static int debugfile_setup(void **state)
{
	char cmd[8192];

	(void)state;
	if (!mkdtemp(dbg_dir))
		return -1;
	snprintf(cmd, sizeof(cmd), "'%s/make-debuglink.sh' '%s' '%s' '%s'", env_path("HC_FIXTURES"),
		 dbg_dir, env_path("HC_FIX_INLINE"), env_path("HC_FIX_FULL"));
	return system(cmd) ? -1 : 0;
}

static int debugfile_teardown(void **state)
{
	char cmd[4200];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dbg_dir);
	return system(cmd) ? -1 : 0;
}

/* Look for the debug file of DIR/sub/prog with debug_root (relative: under DIR). */
static int dbg_find(const char *sub, const char *debug_root, int root_fd,
		    struct hc_debugfile_stats *st, enum hc_debugfile_how *how)
{
	char obj[4200], root[4200], link[HC_DEBUGLINK_NAME_MAX];
	struct hc_debugfile_query q = {.debug_root = root, .root_fd = root_fd, .path = obj};
	uint8_t id[HC_BUILD_ID_MAX];
	int fd, err;

	snprintf(obj, sizeof(obj), "%s/%s/prog", dbg_dir, sub);
	if (debug_root[0] == '/')
		snprintf(root, sizeof(root), "%s", debug_root);
	else
		snprintf(root, sizeof(root), "%s/%s", dbg_dir, debug_root);
	fd = open(obj, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hc_elfsym__read_build_id_fd(fd, id, &q.build_id_len), 0);
	assert_int_equal(q.build_id_len, 20);
	q.build_id = id;
	err = hc_debuglink__read_fd(fd, link, &q.link_crc);
	assert_true(!err || err == -ENOENT);
	if (!err)
		q.link = link;
	close(fd);
	memset(st, 0, sizeof(*st));
	return hc_debugfile__find(&q, st, how);
}

/* fd is the file at DIR/rel. */
static void assert_same_file(int fd, const char *rel)
{
	char path[8400];
	struct stat a, b;

	snprintf(path, sizeof(path), "%s/%s", dbg_dir, rel);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	assert_true(a.st_dev == b.st_dev && a.st_ino == b.st_ino);
	close(fd);
}

static void test_debuglink_parse(void **state)
{
	char name[HC_DEBUGLINK_NAME_MAX], big[300];
	uint32_t crc;

	(void)state;
	/* name, NUL, padding to 4, CRC */
	assert_int_equal(
		hc_debuglink__parse("ab.debug\0\0\0\0\x78\x56\x34\x12", 16, false, name, &crc), 0);
	assert_string_equal(name, "ab.debug");
	assert_int_equal(crc, 0x12345678);
	assert_int_equal(hc_debuglink__parse("abc\0\x12\x34\x56\x78", 8, true, name, &crc), 0);
	assert_string_equal(name, "abc");
	assert_int_equal(crc, 0x12345678);
	/* no room for the CRC, no NUL, empty, a path, dot names */
	assert_int_equal(hc_debuglink__parse("abc\0\x12\x34\x56", 7, false, name, &crc), -EBADMSG);
	assert_int_equal(hc_debuglink__parse("abcdefgh", 8, false, name, &crc), -EBADMSG);
	assert_int_equal(hc_debuglink__parse("", 0, false, name, &crc), -EBADMSG);
	assert_int_equal(hc_debuglink__parse("\0\0\0\0\1\2\3\4", 8, false, name, &crc), -EBADMSG);
	assert_int_equal(hc_debuglink__parse("../x\0\0\0\0\1\2\3\4", 12, false, name, &crc),
			 -EBADMSG);
	assert_int_equal(hc_debuglink__parse("..\0\0\1\2\3\4", 8, false, name, &crc), -EBADMSG);
	memset(big, 'a', sizeof(big));
	big[sizeof(big) - 5] = '\0';
	assert_int_equal(hc_debuglink__parse(big, sizeof(big), false, name, &crc), -EBADMSG);
}

/* The link objcopy wrote carries the CRC32 zlib computes over the debug file. */
static void test_debuglink_crc(void **state)
{
	char path[4200], name[HC_DEBUGLINK_NAME_MAX];
	struct hc_elfsym *es;
	const char *link;
	uint32_t want, got;
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/a/prog", dbg_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hc_debuglink__read_fd(fd, name, &want), 0);
	assert_string_equal(name, "prog.debug");
	es = hc_elfsym__from_fd(fd);
	assert_non_null(es);
	assert_int_equal(hc_elfsym__debuglink(es, &link, &got), 0);
	assert_string_equal(link, "prog.debug");
	assert_int_equal(got, want);
	hc_elfsym__free(es);
	close(fd);
	snprintf(path, sizeof(path), "%s/prog.debug", dbg_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hc_debugfile__crc32_fd(fd, &got), 0);
	assert_int_equal(got, want);
	close(fd);
	/* no link in a stripped copy without one; not ELF */
	snprintf(path, sizeof(path), "%s/d/prog", dbg_dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_int_equal(hc_debuglink__read_fd(fd, name, &want), -ENOENT);
	es = hc_elfsym__from_fd(fd);
	assert_non_null(es);
	assert_int_equal(hc_elfsym__debuglink(es, &link, &got), -ENOENT);
	hc_elfsym__free(es);
	close(fd);
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_int_equal(hc_debuglink__read_fd(fd, name, &want), -ENOEXEC);
	close(fd);
}

/* Each way, in the order documented in sampling.md; each found and counted once. */
static void test_debugfile_found(void **state)
{
	const struct {
		const char *sub, *debug_root, *want;
		enum hc_debugfile_how how;
	} cases[] = {
		{"a", "none", "a/prog.debug", HC_DEBUG_DEBUGLINK},
		{"b", "none", "b/.debug/prog.debug", HC_DEBUG_DEBUGLINK},
		{"c", "root", NULL, HC_DEBUG_DEBUGLINK}, /* root/DIR/c/prog.debug */
		{"d", "root", NULL, HC_DEBUG_PATH},	 /* root/DIR/d/prog.debug */
		{"e", "bid", NULL, HC_DEBUG_BUILD_ID},
		{"a", "bid", NULL, HC_DEBUG_BUILD_ID}, /* the build-id first */
	};
	struct hc_debugfile_stats st;
	enum hc_debugfile_how how;
	char want[4200];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int fd = dbg_find(cases[i].sub, cases[i].debug_root, -1, &st, &how);

		if (fd < 0)
			fail_msg("%s with %s: %d", cases[i].sub, cases[i].debug_root, fd);
		assert_int_equal(how, cases[i].how);
		assert_int_equal(st.found[how], 1);
		assert_int_equal(st.refused[HC_DEBUG_REF_BUILD_ID] + st.refused[HC_DEBUG_REF_CRC] +
					 st.refused[HC_DEBUG_REF_CORRUPT],
				 0);
		if (cases[i].want)
			snprintf(want, sizeof(want), "%s", cases[i].want);
		else if (how == HC_DEBUG_BUILD_ID)
			snprintf(want, sizeof(want), "prog.debug"); /* a copy: compare below */
		else
			snprintf(want, sizeof(want), "%s%s/%s/prog.debug", cases[i].debug_root,
				 dbg_dir, cases[i].sub);
		if (how == HC_DEBUG_BUILD_ID)
			close(fd);
		else
			assert_same_file(fd, want);
	}
}

/* A wrong CRC, a wrong build-id, a corrupt file, a FIFO: refused, counted, never fatal. */
static void test_debugfile_refused(void **state)
{
	struct hc_debugfile_stats st;
	enum hc_debugfile_how how;

	(void)state;
	assert_int_equal(dbg_find("f", "none", -1, &st, &how), -ENOENT);
	assert_int_equal(st.refused[HC_DEBUG_REF_CRC], 1);
	assert_int_equal(st.found[HC_DEBUG_DEBUGLINK], 0);
	/* the build-id path and <root><path>.debug both hold another build's debug file */
	assert_int_equal(dbg_find("g", "gbid", -1, &st, &how), -ENOENT);
	assert_int_equal(st.refused[HC_DEBUG_REF_BUILD_ID], 2);
	assert_int_equal(dbg_find("j", "jroot", -1, &st, &how), -ENOENT);
	assert_int_equal(st.refused[HC_DEBUG_REF_CORRUPT], 1);
	assert_int_equal(dbg_find("i", "none", -1, &st, &how), -ENOENT);
	assert_int_equal(st.refused[HC_DEBUG_REF_CORRUPT], 1);
}

/* Inside a process's root: its own debug root; a symlink there does not lead out of it. */
static void test_debugfile_in_root(void **state)
{
	struct hc_debugfile_stats st;
	enum hc_debugfile_how how;
	char path[4200];
	int root, fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/ctr", dbg_dir);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	fd = dbg_find("k", "/usr/lib/debug", root, &st, &how);
	assert_true(fd >= 0);
	assert_int_equal(how, HC_DEBUG_BUILD_ID);
	close(fd);
	close(root);
	/* ctr2's build-id file is a symlink to DIR/prog.debug, which exists on the host */
	snprintf(path, sizeof(path), "%s/ctr2", dbg_dir);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(root >= 0);
	assert_int_equal(dbg_find("k", "/usr/lib/debug", root, &st, &how), -ENOENT);
	assert_int_equal(st.found[HC_DEBUG_BUILD_ID], 0);
	close(root);
}

/* Through the symbolizer: symbols and inline chains from a debuglink'd file; a CRC
 * mismatch leaves the function starts only. */
static void test_debugfile_facade(void **state)
{
	struct hc_symbolizer *sym = new_sym(false);
	struct hc_symbolizer_stats st;
	struct hc_frame_info fr[8];
	struct fixture_proc fp;
	struct hc_uloc loc;
	char exe[4200];
	size_t n;

	(void)state;
	snprintf(exe, sizeof(exe), "%s/a/prog", dbg_dir);
	spawn(&fp, exe);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	assert_int_equal(check_chains(sym, &fp, "prog"), 4);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.debug.found[HC_DEBUG_DEBUGLINK], 1);
	assert_int_equal(st.dwarf_objects >= 1, true);
	reap(&fp);
	hc_symbolizer__free(sym);

	sym = new_sym(false);
	snprintf(exe, sizeof(exe), "%s/f/prog", dbg_dir);
	spawn(&fp, exe);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	assert_int_equal(hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[0], &loc), 0);
	assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 8, &n), 0);
	assert_int_equal(n, 1);
	assert_true(fr[0].fstart);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.debug.refused[HC_DEBUG_REF_CRC], 1);
	assert_int_equal(st.debug.found[HC_DEBUG_DEBUGLINK], 0);
	reap(&fp);
	hc_symbolizer__free(sym);

	/* a corrupt debug file whose CRC matches is taken, and fails without harm: no symbols
	 * nor DWARF from it, the function starts still name the frames */
	sym = new_sym(false);
	snprintf(exe, sizeof(exe), "%s/h/prog", dbg_dir);
	spawn(&fp, exe);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	for (size_t i = 0; i < fp.nr; i++) {
		assert_int_equal(
			hc_symbolizer__normalize(sym, (uint32_t)fp.pid, 0, fp.addrs[i], &loc), 0);
		assert_int_equal(hc_symbolizer__resolve_user_inline(sym, &loc, fr, 8, &n), 0);
		assert_true(n >= 1);
	}
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.user_unresolved, 0);
	assert_int_equal(
		st.debug.found[HC_DEBUG_DEBUGLINK] + st.debug.refused[HC_DEBUG_REF_CORRUPT], 1);
	reap(&fp);
	hc_symbolizer__free(sym);
}

/* A containerised process (a fake /proc whose PID/root is DIR/ctr): its object is opened, and
 * its debug file found, inside that root. */
static void test_debugfile_container(void **state)
{
	struct hc_symbolizer_opts opts = {.debug_root = "/usr/lib/debug"};
	char exe[4200], proc[4200], cmd[16384];
	struct hc_symbolizer_stats st;
	struct hc_symbolizer *sym;
	struct fixture_proc fp;

	(void)state;
	snprintf(exe, sizeof(exe), "%s/k/prog", dbg_dir);
	snprintf(proc, sizeof(proc), "%s/proc", dbg_dir);
	spawn(&fp, exe);
	snprintf(cmd, sizeof(cmd),
		 "set -e; mkdir -p '%s/%d'; cp /proc/%d/maps /proc/%d/stat '%s/%d/';"
		 "ln -sfn '%s/ctr' '%s/%d/root'",
		 proc, fp.pid, fp.pid, fp.pid, proc, fp.pid, dbg_dir, proc, fp.pid);
	assert_int_equal(system(cmd), 0);
	opts.proc_root = proc;
	sym = hc_symbolizer__new(&opts);
	assert_non_null(sym);
	assert_int_equal(hc_symbolizer__add_process(sym, (uint32_t)fp.pid, 0), 0);
	assert_int_equal(check_chains(sym, &fp, "prog"), 4);
	hc_symbolizer__stats(sym, &st);
	assert_int_equal(st.debug.found[HC_DEBUG_BUILD_ID], 1);
	reap(&fp);
	hc_symbolizer__free(sym);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest kallsyms[] = {
		cmocka_unit_test(test_kallsyms_table), cmocka_unit_test(test_kallsyms_eperm),
		cmocka_unit_test(test_kallsyms_data),  cmocka_unit_test(test_kallsyms_garbage),
		cmocka_unit_test(test_kallsyms_real),  cmocka_unit_test(test_kallsyms_blocks),
	};
	const struct CMUnitTest procmaps[] = {
		cmocka_unit_test(test_procmaps_parse),
		cmocka_unit_test(test_procmaps_find),
		cmocka_unit_test(test_procmaps_garbage),
	};
	const struct CMUnitTest perfmap[] = {
		cmocka_unit_test(test_perfmap_table),
		cmocka_unit_test(test_perfmap_garbage),
		cmocka_unit_test(test_perfmap_deep_overlap),
	};
	const struct CMUnitTest elf[] = {
		cmocka_unit_test(test_elf_pie),	      cmocka_unit_test(test_elf_nopie),
		cmocka_unit_test(test_elf_shlib),     cmocka_unit_test(test_elf_debugdata),
		cmocka_unit_test(test_elf_debuginfo), cmocka_unit_test(test_elf_mem),
		cmocka_unit_test(test_demangle),      cmocka_unit_test(test_elf_fstarts),
	};
	const struct CMUnitTest hostile[] = {
		cmocka_unit_test(test_hostile_elf_truncated),
		cmocka_unit_test(test_hostile_elf_corrupt),
		cmocka_unit_test(test_hostile_not_elf),
		cmocka_unit_test(test_hostile_eh_frame),
	};
	const struct CMUnitTest facade[] = {
		cmocka_unit_test(test_facade_pie),
		cmocka_unit_test(test_facade_nopie),
		cmocka_unit_test(test_facade_debugdata),
		cmocka_unit_test(test_facade_debuginfo),
		cmocka_unit_test(test_facade_shared_objects),
		cmocka_unit_test(test_facade_dlopen),
		cmocka_unit_test(test_facade_no_demangle),
		cmocka_unit_test(test_facade_gone),
		cmocka_unit_test(test_facade_jit_self),
		cmocka_unit_test(test_facade_vdso_self),
		cmocka_unit_test(test_facade_fake_proc),
		cmocka_unit_test(test_facade_jit_namespaced),
		cmocka_unit_test(test_facade_unreadable),
		cmocka_unit_test(test_facade_kernel),
		cmocka_unit_test(test_facade_fstart),
	};
	const struct CMUnitTest inline_[] = {
		cmocka_unit_test(test_inline_chains),	 cmocka_unit_test(test_inline_debuginfo),
		cmocka_unit_test(test_inline_truncated), cmocka_unit_test(test_inline_off),
		cmocka_unit_test(test_inline_dwinline),	 cmocka_unit_test(test_inline_altlink),
		cmocka_unit_test(test_inline_hostile),	 cmocka_unit_test(test_inline_differential),
	};
	const struct CMUnitTest debugfile[] = {
		cmocka_unit_test(test_debuglink_parse),
		cmocka_unit_test(test_debuglink_crc),
		cmocka_unit_test(test_debugfile_found),
		cmocka_unit_test(test_debugfile_refused),
		cmocka_unit_test(test_debugfile_in_root),
		cmocka_unit_test(test_debugfile_facade),
		cmocka_unit_test(test_debugfile_container),
	};
	static const char *const groups[] = {
		"all",	   "kallsyms", "procmaps", "perfmap",	"elf",
		"hostile", "facade",   "inline",   "debugfile",
	};
	const char *group = argc > 1 ? argv[1] : "all";
	int fails = 0;
	bool all = !strcmp(group, "all"), known = false;

	/* A misspelt group would run nothing and pass. */
	for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
		known = known || !strcmp(group, groups[i]);
	if (!known) {
		fprintf(stderr, "test-symbolize: unknown group '%s' (known:", group);
		for (size_t i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
			fprintf(stderr, " %s", groups[i]);
		fprintf(stderr, ")\n");
		return 2;
	}
	/* A fixture dying must not kill us through a write to its stdin. */
	signal(SIGPIPE, SIG_IGN);
	if (all || !strcmp(group, "kallsyms"))
		fails += cmocka_run_group_tests_name("kallsyms", kallsyms, NULL, NULL);
	if (all || !strcmp(group, "procmaps"))
		fails += cmocka_run_group_tests_name("procmaps", procmaps, NULL, NULL);
	if (all || !strcmp(group, "perfmap"))
		fails += cmocka_run_group_tests_name("perfmap", perfmap, NULL, NULL);
	if (all || !strcmp(group, "elf"))
		fails += cmocka_run_group_tests_name("elf", elf, NULL, NULL);
	if (all || !strcmp(group, "debugfile"))
		fails += cmocka_run_group_tests_name("debugfile", debugfile, debugfile_setup,
						     debugfile_teardown);
	if (all || !strcmp(group, "hostile"))
		fails += cmocka_run_group_tests_name("hostile", hostile, NULL, NULL);
	if (all || !strcmp(group, "facade"))
		fails += cmocka_run_group_tests_name("facade", facade, NULL, NULL);
	if (all || !strcmp(group, "inline"))
		fails += cmocka_run_group_tests_name("inline", inline_, NULL, NULL);
	return fails ? 1 : 0;
}
