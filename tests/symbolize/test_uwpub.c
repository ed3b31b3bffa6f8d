// SPDX-License-Identifier: GPL-2.0-only
/*
 * symbolize/uwpub: the unwind-table publisher, on this process and children of it, over plain
 * memory standing in for the two mmap'd BPF maps (each followed by a canary that must stay
 * untouched). Every slot is found and read as the BPF walk does (bpf/unwind.h): probed from
 * hc_uw_slot_hash(), matched on tgid and start time, maps bisected, rows looked up with
 * hc_urow__find() at pc - bias. The rows published for libc must be those a fresh compile of
 * the same file gives, and the bias the one the dynamic loader applied (dl_iterate_phdr).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolize/symbolizer.h"
#include "symbolize/uwpub.h"
#include "symbolize/uwtable.h"

#define CANARY 0xa5
#define CANARY_ROWS 64
#define BIG_ROWS (1u << 21)

/* A function of this executable, to be found through its own slot and rows. */
__attribute__((noinline, used)) int uwpub_self_fn(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

static const char *need_env(const char *name)
{
	const char *v = getenv(name);

	if (!v)
		fail_msg("%s is not set (run through meson test)", name);
	return v;
}

/* The process's start_boottime in ns, as BPF records carry it: /proc/PID/stat's ticks. */
static uint64_t start_ns_of(pid_t pid)
{
	char path[64], buf[4096];
	uint64_t ticks;
	size_t len;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fp = fopen(path, "r");
	assert_non_null(fp);
	len = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[len] = '\0';
	assert_int_equal(hc__stat_starttime(buf, len, &ticks), 0);
	return ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* ---- The areas, a publisher over them ---- */

struct fx {
	struct hc_symbolizer *sym;
	struct hc_uwpub *u;
	struct hc_uwpub_area a;
	uint32_t tgid;
	uint64_t start_ns;
};

static bool all_canary(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != CANARY)
			return false;
	return true;
}

static void fx_init(struct fx *f, uint32_t n_rows, uint32_t n_procs)
{
	memset(f, 0, sizeof(*f));
	f->a.rows = calloc((size_t)n_rows + CANARY_ROWS, sizeof(*f->a.rows));
	f->a.procs = calloc((size_t)n_procs + 1, sizeof(*f->a.procs));
	assert_non_null(f->a.rows);
	assert_non_null(f->a.procs);
	memset(f->a.rows + n_rows, CANARY, CANARY_ROWS * sizeof(*f->a.rows));
	memset(f->a.procs + n_procs, CANARY, sizeof(*f->a.procs));
	f->a.n_rows = n_rows;
	f->a.n_procs = n_procs;
	f->sym = hc_symbolizer__new(NULL);
	assert_non_null(f->sym);
	f->u = hc_uwpub__new(f->sym, &f->a);
	assert_non_null(f->u);
	f->tgid = (uint32_t)getpid();
	f->start_ns = start_ns_of(getpid());
}

static void fx_fini(struct fx *f)
{
	/* Nothing written past either area. */
	assert_true(all_canary(f->a.rows + f->a.n_rows, CANARY_ROWS * sizeof(*f->a.rows)));
	assert_true(all_canary(f->a.procs + f->a.n_procs, sizeof(*f->a.procs)));
	hc_uwpub__free(f->u);
	hc_symbolizer__free(f->sym);
	free(f->a.rows);
	free(f->a.procs);
}

static void publish(struct fx *f, uint32_t tgid, uint64_t start_ns)
{
	struct hc_sym_proc *p;

	assert_int_equal(hc_symbolizer__process(f->sym, tgid, start_ns, &p), 0);
	assert_int_equal(hc_uwpub__process(f->u, p), 0);
}

static struct hc_uwpub_stats stats(const struct fx *f)
{
	struct hc_uwpub_stats st;

	hc_uwpub__stats(f->u, &st);
	return st;
}

/* ---- Reading the areas as the BPF walk does ---- */

static struct hc_uw_proc *find_slot(const struct hc_uwpub_area *a, uint32_t tgid, uint64_t pstart)
{
	uint32_t h = hc_uw_slot_hash(tgid, a->n_procs);

	for (uint32_t k = 0; k < HC_UW_PROBES; k++) {
		struct hc_uw_proc *s = &a->procs[(h + k) & (a->n_procs - 1)];

		if (s->tgid == tgid && s->pstart_ns == pstart)
			return s;
	}
	return NULL;
}

static const struct hc_uw_map *find_map(const struct hc_uw_proc *s, uint64_t pc)
{
	uint32_t lo = 0, hi = s->n_maps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->maps[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && pc < s->maps[lo - 1].end ? &s->maps[lo - 1] : NULL;
}

static const struct hc_urow *find_row(const struct hc_uwpub_area *a, const struct hc_uw_map *m,
				      uint64_t pc)
{
	long i;

	if (!m->n_rows)
		return NULL;
	i = hc_urow__find(a->rows + m->rows_at, m->n_rows, (uint32_t)(pc - m->bias));
	return i < 0 ? NULL : &a->rows[m->rows_at + i];
}

/* A stable slot whose maps are sorted, disjoint, inside the area, their rows disjoint. */
static void check_slot(const struct hc_uwpub_area *a, const struct hc_uw_proc *s)
{
	assert_int_equal(s->seq & 1, 0);
	assert_true(s->n_maps > 0 && s->n_maps <= HC_UW_MAPS);
	for (uint32_t i = 0; i < s->n_maps; i++) {
		const struct hc_uw_map *m = &s->maps[i];

		assert_true(m->start < m->end);
		assert_true(!i || s->maps[i - 1].end <= m->start);
		assert_true((uint64_t)m->rows_at + m->n_rows <= a->n_rows);
		for (uint32_t k = 0; k < i && m->n_rows; k++) {
			const struct hc_uw_map *o = &s->maps[k];

			assert_true(!o->n_rows || o->rows_at + o->n_rows <= m->rows_at ||
				    m->rows_at + m->n_rows <= o->rows_at);
		}
	}
}

static uint64_t slot_rows(const struct hc_uw_proc *s)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < s->n_maps; i++)
		n += s->maps[i].n_rows;
	return n;
}

struct bias_q {
	uintptr_t addr;
	uint64_t bias;
	bool found;
};

static int bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct bias_q *q = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && q->addr >= lo && q->addr < lo + ph->p_memsz) {
			q->bias = info->dlpi_addr;
			q->found = true;
			return 1;
		}
	}
	return 0;
}

/* The load bias the dynamic loader applied to the object holding addr. */
static uint64_t loader_bias(uintptr_t addr)
{
	struct bias_q q = {.addr = addr};

	dl_iterate_phdr(bias_cb, &q);
	assert_true(q.found);
	return q.bias;
}

/* The table a fresh compile of the file holding addr gives. */
static struct hc_uwtable *compile_file_of(uintptr_t addr)
{
	struct hc_uwtable *t = NULL;
	Dl_info info;
	int fd;

	assert_int_not_equal(dladdr((void *)addr, &info), 0);
	assert_non_null(info.dli_fname);
	fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(hc_uwtable__compile_fd(fd, NULL, &t, NULL), 0);
	close(fd);
	return t;
}

static void assert_rows_equal(const struct hc_uwpub_area *a, const struct hc_uw_map *m,
			      const struct hc_uwtable *t)
{
	size_t n;
	const struct hc_urow *rows = hc_uwtable__rows(t, &n);

	assert_int_equal(m->n_rows, n);
	assert_memory_equal(a->rows + m->rows_at, rows, n * sizeof(*rows));
}

/* pc's map in s has rows, and pc - bias finds one with a rule (not GAP nor UNSUPP). */
static void assert_pc_has_rule(const struct hc_uwpub_area *a, const struct hc_uw_proc *s,
			       uintptr_t pc)
{
	const struct hc_uw_map *m = find_map(s, pc);
	const struct hc_urow *r;

	assert_non_null(m);
	assert_true(m->n_rows > 0);
	assert_int_equal(m->bias, loader_bias(pc));
	r = find_row(a, m, pc);
	assert_non_null(r);
	assert_int_not_equal(r->kind, HC_UR_GAP);
	assert_int_not_equal(r->kind, HC_UR_UNSUPP);
}

static uintptr_t libc_pc(void)
{
	void *pc = dlsym(RTLD_DEFAULT, "getpid"); /* libc's own, not a PLT entry */
	Dl_info info;

	assert_non_null(pc);
	assert_int_not_equal(dladdr(pc, &info), 0);
	assert_non_null(strstr(info.dli_fname, "libc.so"));
	return (uintptr_t)pc;
}

/* ---- Children: another process, with or without an object of its own ---- */

struct child {
	pid_t pid;
	uint64_t start_ns;
	uint64_t pc; /* fn in the library it dlopen'd */
};

static void child_start(struct child *c, const char *lib, const char *fn)
{
	int fds[2];

	assert_int_equal(pipe(fds), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (!c->pid) {
		uint64_t pc = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves no child behind */
		close(fds[0]);
		if (lib) {
			void *h = dlopen(lib, RTLD_NOW);
			void *s = h ? dlsym(h, fn) : NULL;

			if (!s)
				_exit(1);
			pc = (uintptr_t)s;
		}
		if (write(fds[1], &pc, sizeof(pc)) != sizeof(pc))
			_exit(1);
		for (;;)
			pause();
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &c->pc, sizeof(c->pc)), sizeof(c->pc));
	close(fds[0]);
	c->start_ns = start_ns_of(c->pid);
}

static void child_end(struct child *c)
{
	assert_int_equal(kill(c->pid, SIGKILL), 0);
	assert_int_equal(waitpid(c->pid, NULL, 0), c->pid);
}

/* ---- Tests ---- */

/* 1. This process, read back as BPF reads it: libc's rows are a fresh compile's. */
static void test_publish_self(void **state)
{
	struct hc_uwpub_stats st;
	struct hc_uw_proc *s;
	struct hc_uwtable *t;
	struct fx f;

	(void)state;
	fx_init(&f, BIG_ROWS, 64);
	publish(&f, f.tgid, f.start_ns);
	s = find_slot(&f.a, f.tgid, f.start_ns);
	assert_non_null(s);
	assert_int_not_equal(f.start_ns, 0);
	check_slot(&f.a, s);
	st = stats(&f);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.slots_full, 0);
	assert_int_equal(st.maps_over, 0);
	assert_int_equal(st.table_full, 0);
	assert_true(st.objects >= 2); /* this executable and libc at least */
	assert_int_equal(st.rows_used, slot_rows(s));
	assert_int_equal(st.compile.objects, st.objects); /* every table placed */

	t = compile_file_of(libc_pc());
	assert_rows_equal(&f.a, find_map(s, libc_pc()), t);
	hc_uwtable__free(t);
	assert_pc_has_rule(&f.a, s, libc_pc());
	assert_pc_has_rule(&f.a, s, (uintptr_t)&uwpub_self_fn);
	/* Nowhere: below every object. */
	assert_null(find_map(s, 0x1000));
	fx_fini(&f);
}

/* 2. Unchanged maps write nothing; a dlopen'd library is published, shared objects are not
 * compiled again. */
static void test_republish(void **state)
{
	struct hc_uwpub_stats st0, st1, st2;
	struct hc_uw_proc *s, before;
	uintptr_t pc;
	void *h;
	struct fx f;

	(void)state;
	fx_init(&f, BIG_ROWS, 64);
	publish(&f, f.tgid, f.start_ns);
	s = find_slot(&f.a, f.tgid, f.start_ns);
	assert_non_null(s);
	before = *s;
	st0 = stats(&f);
	for (int i = 0; i < 3; i++)
		publish(&f, f.tgid, f.start_ns);
	st1 = stats(&f);
	assert_memory_equal(s, &before, sizeof(before));
	assert_int_equal(st1.processes, st0.processes);
	assert_int_equal(st1.compile.objects, st0.compile.objects);

	h = dlopen(need_env("HC_FIX_LIB"), RTLD_NOW);
	assert_non_null(h);
	pc = (uintptr_t)dlsym(h, "hc_fixlib_gamma");
	assert_true(pc != 0);
	assert_null(find_map(s, pc));
	hc_symbolizer__forget_process(f.sym, f.tgid);
	publish(&f, f.tgid, f.start_ns);
	assert_ptr_equal(find_slot(&f.a, f.tgid, f.start_ns), s); /* rewritten in place */
	check_slot(&f.a, s);
	st2 = stats(&f);
	assert_int_equal(s->seq, before.seq + 2);
	assert_int_equal(s->n_maps, before.n_maps + 1);
	assert_int_equal(st2.processes, st1.processes + 1);
	assert_int_equal(st2.objects, st1.objects + 1);
	assert_int_equal(st2.compile.objects, st1.compile.objects + 1);
	assert_int_equal(st2.rows_used, slot_rows(s));
	assert_pc_has_rule(&f.a, s, pc);
	assert_pc_has_rule(&f.a, s, libc_pc());
	fx_fini(&f);
	/* h stays open: later tests' children inherit it, harmlessly */
}

/* 3. Rows for everything but libc: libc is published without a table, nothing spills. */
static void test_table_full(void **state)
{
	const struct hc_uw_map *m;
	struct hc_uwpub_stats st;
	struct hc_uw_proc *s;
	struct hc_uwtable *t;
	size_t libc_rows;
	struct fx f;

	(void)state;
	t = compile_file_of(libc_pc());
	hc_uwtable__rows(t, &libc_rows);
	hc_uwtable__free(t);
	fx_init(&f, (uint32_t)libc_rows - 1, 64);
	publish(&f, f.tgid, f.start_ns);
	s = find_slot(&f.a, f.tgid, f.start_ns);
	assert_non_null(s);
	check_slot(&f.a, s);
	m = find_map(s, libc_pc());
	assert_non_null(m);
	assert_int_equal(m->n_rows, 0);
	assert_int_equal(m->rows_at, 0);
	assert_int_equal(m->bias, loader_bias(libc_pc()));
	st = stats(&f);
	assert_true(st.table_full >= 1);
	assert_true(st.rows_used <= f.a.n_rows);
	assert_int_equal(st.rows_used, slot_rows(s));
	fx_fini(&f); /* the canaries */
}

/* 3b. Rows all taken: every table is full. Given back, the next prune has the process
 * published again with its tables. */
static void test_table_full_retry(void **state)
{
	struct hc_uwpub_stats st;
	struct hc_uw_proc *s;
	struct hc_uwtable *t;
	uint32_t at;
	struct fx f;

	(void)state;
	fx_init(&f, BIG_ROWS, 64);
	assert_int_equal(hc__uwpub_rows_alloc(f.u, BIG_ROWS, &at), 0);
	assert_int_equal(at, 0);
	publish(&f, f.tgid, f.start_ns);
	s = find_slot(&f.a, f.tgid, f.start_ns);
	assert_non_null(s);
	assert_int_equal(slot_rows(s), 0);
	st = stats(&f);
	assert_int_equal(st.objects, 0);
	assert_int_equal(st.rows_used, 0);
	assert_int_equal(st.table_full, st.compile.objects);
	assert_true(st.table_full >= 2);

	assert_int_equal(hc__uwpub_rows_free(f.u, 0, BIG_ROWS), 0);
	assert_int_equal(hc_uwpub__prune(f.u), 0);
	publish(&f, f.tgid, f.start_ns);
	assert_ptr_equal(find_slot(&f.a, f.tgid, f.start_ns), s);
	check_slot(&f.a, s);
	st = stats(&f);
	assert_int_equal(st.processes, 2);
	assert_int_equal(st.objects, st.table_full); /* each compiled again, placed */
	assert_int_equal(st.compile.objects, 2 * st.table_full);
	assert_int_equal(st.rows_used, slot_rows(s));
	t = compile_file_of(libc_pc());
	assert_rows_equal(&f.a, find_map(s, libc_pc()), t);
	hc_uwtable__free(t);
	fx_fini(&f);
}

/* 4. A child with an object of its own exits: its slot is freed, that object's rows are
 * evicted and free again; the objects this process maps keep theirs. A second child with the
 * same object gets its table again. */
static void test_gone(void **state)
{
	struct hc_uwpub_stats st0, st1, st2;
	struct hc_uw_proc *self, *cs, self_before;
	const struct hc_uw_map *m;
	uint32_t ext_at[256], ext_len[256], rows_at, n_rows, seq;
	struct hc_uwtable *t;
	struct child c;
	size_t dropped, n_ext;
	bool covered = false;
	struct fx f;

	(void)state;
	fx_init(&f, BIG_ROWS, 64);
	publish(&f, f.tgid, f.start_ns);
	self = find_slot(&f.a, f.tgid, f.start_ns);
	assert_non_null(self);
	st0 = stats(&f);

	child_start(&c, need_env("HC_FIX_DEEP"), "hc_deep");
	publish(&f, (uint32_t)c.pid, c.start_ns);
	cs = find_slot(&f.a, (uint32_t)c.pid, c.start_ns);
	assert_non_null(cs);
	assert_ptr_not_equal(cs, self);
	check_slot(&f.a, cs);
	st1 = stats(&f);
	assert_int_equal(st1.processes, st0.processes + 1);
	assert_int_equal(st1.objects, st0.objects + 1); /* only the library the child opened */
	m = find_map(cs, c.pc);
	assert_non_null(m);
	assert_true(m->n_rows > 0);
	assert_non_null(find_row(&f.a, m, c.pc));
	rows_at = m->rows_at;
	n_rows = m->n_rows;
	seq = cs->seq;
	self_before = *self;

	child_end(&c);
	assert_int_equal(hc_symbolizer__prune_gone(f.sym, &dropped), 0);
	assert_int_equal(dropped, 1);
	assert_int_equal(hc_uwpub__prune(f.u), 0);
	st2 = stats(&f);
	assert_int_equal(cs->tgid, 0);
	assert_int_equal(cs->n_maps, 0);
	assert_int_equal(cs->seq, seq + 2);
	assert_int_equal(st2.unpublished, 1);
	assert_int_equal(st2.evicted, 1);
	assert_int_equal(st2.rows_used, st1.rows_used - n_rows);
	assert_int_equal(st2.rows_used, slot_rows(self));
	assert_memory_equal(self, &self_before, sizeof(*self));
	t = compile_file_of(libc_pc());
	assert_rows_equal(&f.a, find_map(self, libc_pc()), t);
	hc_uwtable__free(t);
	/* The evicted rows are free again. */
	n_ext = hc__uwpub_rows_extents(f.u, ext_at, ext_len, 256);
	assert_true(n_ext <= 256);
	for (size_t i = 0; i < n_ext; i++)
		covered |= ext_at[i] <= rows_at && rows_at + n_rows <= ext_at[i] + ext_len[i];
	assert_true(covered);
	/* This process is still current: nothing written. */
	publish(&f, f.tgid, f.start_ns);
	assert_int_equal(stats(&f).processes, st2.processes);

	/* The library's CFI was let go after its compile: a new process that maps it has it
	 * read again through its own mapping, and gets the same rows' content. */
	child_start(&c, need_env("HC_FIX_DEEP"), "hc_deep");
	publish(&f, (uint32_t)c.pid, c.start_ns);
	cs = find_slot(&f.a, (uint32_t)c.pid, c.start_ns);
	assert_non_null(cs);
	check_slot(&f.a, cs);
	m = find_map(cs, c.pc);
	assert_non_null(m);
	assert_int_equal(m->n_rows, n_rows);
	assert_non_null(find_row(&f.a, m, c.pc));
	{
		int fd = open(need_env("HC_FIX_DEEP"), O_RDONLY | O_CLOEXEC);

		assert_true(fd >= 0);
		assert_int_equal(hc_uwtable__compile_fd(fd, NULL, &t, NULL), 0);
		close(fd);
	}
	assert_rows_equal(&f.a, m, t);
	hc_uwtable__free(t);
	assert_int_equal(stats(&f).reread_failed, 0);
	assert_int_equal(stats(&f).objects, st2.objects + 1);
	child_end(&c);
	fx_fini(&f);
}

/* 5. One slot, three processes: the others find it taken (counted once, not per record);
 * when the first has gone, its objects (no published slot names them) are evicted, and the
 * next process gets the slot. */
static void test_slots_full(void **state)
{
	struct hc_uwpub_stats st, st0;
	struct child a, b;
	size_t dropped;
	struct fx f;

	(void)state;
	fx_init(&f, BIG_ROWS, 1);
	child_start(&a, NULL, NULL);
	child_start(&b, NULL, NULL);
	publish(&f, (uint32_t)a.pid, a.start_ns);
	assert_non_null(find_slot(&f.a, (uint32_t)a.pid, a.start_ns));
	st0 = stats(&f);
	for (int i = 0; i < 3; i++)
		publish(&f, (uint32_t)b.pid, b.start_ns);
	publish(&f, f.tgid, f.start_ns);
	st = stats(&f);
	assert_int_equal(st.processes, 1);
	assert_int_equal(st.slots_full, 2);	   /* b once, this process once */
	assert_int_equal(st.objects, st0.objects); /* nothing compiled for them */
	assert_null(find_slot(&f.a, (uint32_t)b.pid, b.start_ns));
	assert_int_equal(f.a.procs[0].tgid, (uint32_t)a.pid);

	child_end(&a);
	assert_int_equal(hc_symbolizer__prune_gone(f.sym, &dropped), 0);
	assert_int_equal(hc_uwpub__prune(f.u), 0);
	assert_int_equal(f.a.procs[0].tgid, 0);
	st = stats(&f);
	assert_int_equal(st.unpublished, 1);
	assert_int_equal(st.evicted, st0.objects);
	assert_int_equal(st.rows_used, 0);
	publish(&f, (uint32_t)b.pid, b.start_ns);
	st = stats(&f);
	assert_int_equal(st.processes, 2);
	assert_int_equal(st.objects, 2 * st0.objects); /* b maps what a did: compiled again */
	assert_non_null(find_slot(&f.a, (uint32_t)b.pid, b.start_ns));
	check_slot(&f.a, &f.a.procs[0]);
	assert_int_equal(st.rows_used, slot_rows(&f.a.procs[0]));
	child_end(&b);
	fx_fini(&f);
}

/* The free extents match shadow[] (1: allocated): sorted, never adjacent, exactly its runs. */
static void check_extents(struct hc_uwpub *u, const uint8_t *shadow, uint32_t n)
{
	uint32_t at[512], len[512], pos = 0;
	size_t k = 0, n_ext = hc__uwpub_rows_extents(u, at, len, 512);

	assert_true(n_ext <= 512);
	while (pos < n) {
		uint32_t end = pos;

		while (end < n && shadow[end] == shadow[pos])
			end++;
		if (!shadow[pos]) {
			assert_true(k < n_ext);
			assert_int_equal(at[k], pos);
			assert_int_equal(len[k], end - pos);
			k++;
		}
		pos = end;
	}
	assert_int_equal(k, n_ext);
}

/* 6. The rows allocator: first fit, coalescing, refusals; then random traffic against a
 * shadow map, and everything freed is one extent again. */
static void test_allocator(void **state)
{
	enum { N = 1000, MAXB = 200 };
	uint32_t at[MAXB], len[MAXB], x, e_at, e_len;
	uint8_t shadow[N] = {0};
	unsigned rng = 12345;
	size_t live = 0;
	struct fx f;

	(void)state;
	fx_init(&f, N, 1);
	/* First fit from 0, in order. */
	for (uint32_t i = 0, want = 0; i < 10; want += 10 + i, i++) {
		assert_int_equal(hc__uwpub_rows_alloc(f.u, 10 + i, &x), 0);
		assert_int_equal(x, want);
	}
	/* 0..145 held. A hole of 11 at 10 takes 11 but not 12; then 5 lands in it. */
	assert_int_equal(hc__uwpub_rows_free(f.u, 10, 11), 0);
	assert_int_equal(hc__uwpub_rows_alloc(f.u, 12, &x), 0);
	assert_int_equal(x, 145);
	assert_int_equal(hc__uwpub_rows_alloc(f.u, 5, &x), 0);
	assert_int_equal(x, 10);
	/* Refusals. */
	assert_int_equal(hc__uwpub_rows_alloc(f.u, N, &x), -ENOSPC);
	assert_int_equal(hc__uwpub_rows_alloc(f.u, 0, &x), -EINVAL);
	assert_int_equal(hc__uwpub_rows_free(f.u, 15, 2), -EINVAL);    /* already free */
	assert_int_equal(hc__uwpub_rows_free(f.u, 900, 200), -EINVAL); /* past the end */
	assert_int_equal(hc__uwpub_rows_free(f.u, 0, 0), -EINVAL);
	/* Free all of it in an order that merges left, right and both ways. */
	assert_int_equal(hc__uwpub_rows_free(f.u, 10, 5), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 0, 10), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 145, 12), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 33, 13), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 21, 12), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 46, 14), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 75, 16), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 60, 15), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 108, 18), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 91, 17), 0);
	assert_int_equal(hc__uwpub_rows_free(f.u, 126, 19), 0);
	assert_int_equal(hc__uwpub_rows_extents(f.u, &e_at, &e_len, 1), 1);
	assert_int_equal(e_at, 0);
	assert_int_equal(e_len, N);

	for (int op = 0; op < 20000; op++) {
		rng = rng * 1103515245u + 12345u;
		if (live < MAXB && (live == 0 || (rng >> 16) % 3)) {
			uint32_t n = 1 + (rng >> 8) % 40;
			int err = hc__uwpub_rows_alloc(f.u, n, &x);
			uint32_t run = 0, first = N;

			/* The first run of n free rows in the shadow, if any. */
			for (uint32_t i = 0; i < N && first == N; i++) {
				run = shadow[i] ? 0 : run + 1;
				if (run == n)
					first = i + 1 - n;
			}
			if (first == N) {
				assert_int_equal(err, -ENOSPC);
			} else {
				assert_int_equal(err, 0);
				assert_int_equal(x, first);
				memset(shadow + x, 1, n);
				at[live] = x;
				len[live++] = n;
			}
		} else {
			size_t i = (rng >> 8) % live;

			assert_int_equal(hc__uwpub_rows_free(f.u, at[i], len[i]), 0);
			memset(shadow + at[i], 0, len[i]);
			at[i] = at[--live];
			len[i] = len[live];
		}
		check_extents(f.u, shadow, N);
	}
	while (live) {
		live--;
		assert_int_equal(hc__uwpub_rows_free(f.u, at[live], len[live]), 0);
	}
	assert_int_equal(hc__uwpub_rows_extents(f.u, &e_at, &e_len, 1), 1);
	assert_int_equal(e_at, 0);
	assert_int_equal(e_len, N);
	fx_fini(&f);
}

/* Bad areas and bad handles. */
static void test_args(void **state)
{
	struct hc_symbolizer *sym = hc_symbolizer__new(NULL);
	struct hc_uw_proc procs[3];
	struct hc_uwpub_area a = {.procs = procs, .n_procs = 3};
	struct hc_uwpub *u;

	(void)state;
	assert_non_null(sym);
	errno = 0;
	assert_null(hc_uwpub__new(sym, &a)); /* not a power of two */
	assert_int_equal(errno, EINVAL);
	a.n_procs = 2;
	a.n_rows = 10; /* and no rows */
	assert_null(hc_uwpub__new(sym, &a));
	a.n_rows = 0;
	memset(procs, 0, sizeof(procs));
	u = hc_uwpub__new(sym, &a);
	assert_non_null(u);
	assert_int_equal(hc_uwpub__process(u, NULL), -ESRCH);
	assert_int_equal(hc_uwpub__prune(u), 0);
	hc_uwpub__free(u);
	hc_uwpub__free(NULL);
	hc_symbolizer__free(sym);
}

/* ---- Areas mapped as used (the sampler's hc_sampler__uw_map_rows/_slot) ---- */

struct lazy {
	uint32_t rows_end; /* rows [0, rows_end) are "mapped" */
	uint32_t slots[8]; /* slots "mapped", in order */
	uint32_t n_slots;
	bool fail_rows, fail_slot;
};

static int lazy_rows(void *ctx, uint32_t end)
{
	struct lazy *l = ctx;

	if (l->fail_rows)
		return -ENOMEM;
	if (end > l->rows_end)
		l->rows_end = end;
	return 0;
}

static int lazy_slot(void *ctx, uint32_t slot)
{
	struct lazy *l = ctx;

	if (l->fail_slot)
		return -ENOMEM;
	assert_true(l->n_slots < 8);
	l->slots[l->n_slots++] = slot;
	return 0;
}

static void fx_lazy(struct fx *f, struct lazy *l)
{
	hc_uwpub__free(f->u);
	f->a.map_rows = lazy_rows;
	f->a.map_slot = lazy_slot;
	f->a.map_ctx = l;
	f->u = hc_uwpub__new(f->sym, &f->a);
	assert_non_null(f->u);
}

/* 7. Every row written lies below what map_rows was asked for, and the slot was mapped before
 * it was written; a failed slot mapping publishes nothing (-ENOMEM, tried again at the next
 * call), failed row mappings leave the objects without tables (table_full). */
static void test_mapped_as_used(void **state)
{
	struct hc_uwpub_stats st;
	struct lazy l = {0};
	struct hc_sym_proc *p;
	struct hc_uw_proc *s;
	struct fx f;

	(void)state;
	fx_init(&f, 1u << 20, 64);
	fx_lazy(&f, &l);
	assert_int_equal(hc_symbolizer__process(f.sym, f.tgid, f.start_ns, &p), 0);
	l.fail_slot = true;
	assert_int_equal(hc_uwpub__process(f.u, p), -ENOMEM);
	assert_null(find_slot(&f.a, f.tgid, f.start_ns));
	assert_int_equal(l.n_slots, 0);
	l.fail_slot = false;
	assert_int_equal(hc_uwpub__process(f.u, p), 0);
	s = find_slot(&f.a, f.tgid, f.start_ns);
	assert_non_null(s);
	check_slot(&f.a, s);
	assert_int_equal(l.n_slots, 1);
	assert_ptr_equal(&f.a.procs[l.slots[0]], s);
	st = stats(&f);
	assert_true(st.objects >= 2);		    /* the test binary, libc, ... */
	assert_int_equal(l.rows_end, st.rows_used); /* first fit from row 0, nothing freed */
	for (uint32_t i = 0; i < s->n_maps; i++)
		assert_true(s->maps[i].rows_at + s->maps[i].n_rows <= l.rows_end);
	/* nothing past rows_end was written */
	for (uint32_t i = l.rows_end; i < f.a.n_rows; i++)
		assert_true(!memcmp(&f.a.rows[i], &(struct hc_urow){0}, sizeof(struct hc_urow)));
	fx_fini(&f);

	memset(&l, 0, sizeof(l));
	fx_init(&f, 1u << 20, 64);
	fx_lazy(&f, &l);
	l.fail_rows = true;
	publish(&f, f.tgid, f.start_ns);
	s = find_slot(&f.a, f.tgid, f.start_ns);
	assert_non_null(s);
	st = stats(&f);
	assert_int_equal(st.rows_used, 0);
	assert_int_equal(slot_rows(s), 0);
	assert_true(st.table_full >= 2);
	fx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_args),	       cmocka_unit_test(test_allocator),
		cmocka_unit_test(test_publish_self),   cmocka_unit_test(test_republish),
		cmocka_unit_test(test_table_full),     cmocka_unit_test(test_table_full_retry),
		cmocka_unit_test(test_gone),	       cmocka_unit_test(test_slots_full),
		cmocka_unit_test(test_mapped_as_used),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
