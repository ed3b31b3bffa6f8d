// SPDX-License-Identifier: GPL-2.0-only
/*
 * symbolize/unwind: the DWARF unwinder on real stacks of this process, and on hostile ones.
 *
 * The known chain (unwind_chain.h: a shared object built -O2 -fomit-frame-pointer) takes the
 * registers and a copy of this thread's stack as BPF would; the unwinder, fed that copy
 * through its public API with a symbolizer of our own process, must give the chain's frames
 * by name, libgcc's return addresses for the rest (backtrace() at the same point), and end at
 * _start. Then the bytes the profiled process controls: every truncation of that copy, an
 * empty copy, random bytes, a stack whose return addresses repeat forever, a stack pointer at
 * the end of the address space, a pc in no object. Each ends with one counted end reason,
 * never a read outside the copy: every copy is allocated to exactly its length, so ASan
 * (the sanitized build runs this test too) sees any byte read past it.
 */
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "symbolize/symbolizer.h"
#include "symbolize/unwind.h"
#include "unwind_chain.h"

struct fixture {
	struct hc_symbolizer *sym;
	struct hc_unwinder *unw;
	uint32_t tgid;
	struct hc_chain_snap snap;
	uint64_t pcs[HC_MAX_STACK_DEPTH]; /* the full unwind of snap */
	size_t n;
};

/* The unwinder on tgid's handle, looked up as the pipeline does (NULL when the process could
 * not be looked up: the unwinder then says -ESRCH). */
static int unwind_tgid(struct fixture *f, uint32_t tgid, const struct hc_ucopy *c, uint64_t *pcs,
		       size_t max, size_t *n, enum hc_unwind_end *end)
{
	struct hc_sym_proc *p = NULL;

	if (hc_symbolizer__process(f->sym, tgid, 0, &p) < 0)
		p = NULL;
	return hc_unwinder__unwind(f->unw, p, c, pcs, max, n, end);
}

/* The end of this thread's stack: the copy reaches the outermost frame. */
static uintptr_t stack_top(void)
{
	pthread_attr_t attr;
	size_t size;
	void *addr;

	assert_int_equal(pthread_getattr_np(pthread_self(), &attr), 0);
	assert_int_equal(pthread_attr_getstack(&attr, &addr, &size), 0);
	pthread_attr_destroy(&attr);
	return (uintptr_t)addr + size;
}

/* take_snapshot()'s frame pointer (this file is built with frame pointers). */
static uintptr_t snapshot_fp;

/* The caller of the chain: a frame of this executable, named in the unwind. */
__attribute__((noinline)) static void take_snapshot(struct hc_chain_snap *s)
{
	int r;

	snapshot_fp = (uintptr_t)__builtin_frame_address(0);
	r = hc_chain_a(s);

	__asm__ volatile("" ::: "memory");
	assert_int_equal(r, 0);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	void *warm[4];

	assert_non_null(f);
	/* backtrace() loads libgcc_s on its first call: not inside the snapshot. */
	backtrace(warm, 4);
	f->tgid = (uint32_t)getpid();
	f->sym = hc_symbolizer__new(&(struct hc_symbolizer_opts){.no_inline = true});
	assert_non_null(f->sym);
	assert_int_equal(hc_symbolizer__add_process(f->sym, f->tgid, 0), 0);
	f->unw = hc_unwinder__new(f->sym);
	assert_non_null(f->unw);
	f->snap.stack_top = stack_top();
	take_snapshot(&f->snap);
	assert_non_null(f->snap.copy);
	/* The reference the hostile inputs are compared with; test_unwind_known_chain checks it. */
	{
		enum hc_unwind_end end;

		assert_int_equal(unwind_tgid(f, f->tgid, f->snap.copy, f->pcs, HC_MAX_STACK_DEPTH,
					     &f->n, &end),
				 0);
	}
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	hc_unwinder__free(f->unw);
	hc_symbolizer__free(f->sym);
	free(f->snap.copy);
	free(f);
	return 0;
}

/* A copy of c with len bytes of its stack, allocated to exactly that. */
static struct hc_ucopy *copy_of(const struct hc_ucopy *c, uint32_t len)
{
	struct hc_ucopy *n = malloc(sizeof(*n) + len);

	assert_non_null(n);
	memcpy(n, c, sizeof(*n) + len);
	n->len = len;
	return n;
}

static const char *name_of(struct fixture *f, uint64_t pc)
{
	struct hc_frame_info fi = {0};
	struct hc_uloc loc;

	assert_int_equal(hc_symbolizer__normalize(f->sym, f->tgid, 0, pc, &loc), 0);
	if (hc_symbolizer__resolve_user(f->sym, &loc, &fi))
		return "?";
	return fi.name;
}

/*
 * Unwind c with at most max frames: checks what holds for every input (pcs[0] is the
 * interrupted pc, exactly one end reason counted per stack, -ESRCH only with no frame) and
 * returns the error.
 */
static int unwind(struct fixture *f, const struct hc_ucopy *c, uint64_t *pcs, size_t max, size_t *n,
		  enum hc_unwind_end *end)
{
	struct hc_unwind_stats before, after;
	uint64_t ends_before = 0, ends_after = 0;
	int err;

	hc_unwinder__stats(f->unw, &before);
	err = unwind_tgid(f, f->tgid, c, pcs, max, n, end);
	hc_unwinder__stats(f->unw, &after);
	assert_true(*n <= max);
	assert_true((unsigned)*end < HC_UNWIND_END_MAX);
	for (int k = 0; k < HC_UNWIND_END_MAX; k++) {
		ends_before += before.ends[k];
		ends_after += after.ends[k];
	}
	if (err) {
		assert_int_equal(err, -ESRCH);
		assert_int_equal(*n, 0);
		assert_int_equal(after.no_process, before.no_process + 1);
		assert_int_equal(after.stacks, before.stacks);
		assert_int_equal(ends_after, ends_before);
		return err;
	}
	assert_true(*n >= 1);
	assert_int_equal(pcs[0], c->regs[HC_UREG_IP]);
	assert_int_equal(after.stacks, before.stacks + 1);
	assert_int_equal(after.frames, before.frames + *n);
	assert_int_equal(after.ends[*end], before.ends[*end] + 1);
	assert_int_equal(ends_after, ends_before + 1);
	return 0;
}

/* The whole copy: the chain by name, libgcc's frames after it, the outermost frame reached. */
static void test_unwind_known_chain(void **state)
{
	struct fixture *f = *state;
	const struct hc_chain_snap *s = &f->snap;
	uint64_t pcs[HC_MAX_STACK_DEPTH];
	enum hc_unwind_end end;
	size_t n, k;

	assert_int_equal(unwind(f, s->copy, pcs, HC_MAX_STACK_DEPTH, &n, &end), 0);
	assert_int_equal(end, HC_UNWIND_COMPLETE);
	assert_int_equal(n, f->n);
	assert_memory_equal(pcs, f->pcs, n * sizeof(*pcs));
	assert_string_equal(name_of(f, f->pcs[0]), "hc_chain_c");
	/* Return addresses: the call is the byte before. */
	assert_string_equal(name_of(f, f->pcs[1] - 1), "hc_chain_b");
	assert_string_equal(name_of(f, f->pcs[2] - 1), "hc_chain_a");
	assert_string_equal(name_of(f, f->pcs[3] - 1), "take_snapshot");
	assert_string_equal(name_of(f, f->pcs[f->n - 1] - 1), "_start");
	/*
	 * backtrace() ran in hc_chain_c too: from its caller on, the same return addresses
	 * (ASan's backtrace() interceptor adds a frame of its own first).
	 */
	for (k = 1; k < (size_t)s->nbt && (uint64_t)(uintptr_t)s->bt[k] != f->pcs[1]; k++)
		;
	assert_true(k <= 2);
	assert_int_equal(f->n - 1, (size_t)s->nbt - k);
	for (size_t i = 1; i < f->n; i++)
		assert_int_equal(f->pcs[i], (uint64_t)(uintptr_t)s->bt[k + i - 1]);
}

static void test_unwind_depth(void **state)
{
	struct fixture *f = *state;
	uint64_t pcs[HC_MAX_STACK_DEPTH];
	enum hc_unwind_end end;
	size_t n;

	assert_int_equal(unwind(f, f->snap.copy, pcs, 3, &n, &end), 0);
	assert_int_equal(n, 3);
	assert_int_equal(end, HC_UNWIND_DEPTH);
	assert_memory_equal(pcs, f->pcs, 3 * sizeof(*pcs));
}

/*
 * Every length from 0 to the whole copy, a word at a time: a prefix of the whole unwind that
 * grows with the length, ended by the copy's end until the copy holds the outermost frame.
 */
static void test_unwind_truncated(void **state)
{
	struct fixture *f = *state;
	uint64_t pcs[HC_MAX_STACK_DEPTH], full[HC_MAX_STACK_DEPTH];
	uint32_t whole = f->snap.copy->len;
	enum hc_unwind_end end;
	size_t n, last = 1, full_n;

	assert_int_equal(unwind(f, f->snap.copy, full, HC_MAX_STACK_DEPTH, &full_n, &end), 0);
	for (uint32_t len = 0; len <= whole; len += 8) {
		struct hc_ucopy *c = copy_of(f->snap.copy, len);

		assert_int_equal(unwind(f, c, pcs, HC_MAX_STACK_DEPTH, &n, &end), 0);
		assert_true(n >= last);
		assert_memory_equal(pcs, full, n * sizeof(*pcs));
		if (n < full_n)
			assert_int_equal(end, HC_UNWIND_STACK_END);
		else
			assert_int_equal(end, HC_UNWIND_COMPLETE);
		if (len == 0)
			assert_int_equal(n, 1); /* the interrupted pc alone */
		last = n;
		free(c);
	}
	assert_int_equal(last, full_n);
}

/* xorshift64: the same garbage on every run. */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/*
 * Random stack bytes under real registers, random registers over the real stack, and random
 * both, 1500 times: clean ends only.
 */
static void test_unwind_garbage(void **state)
{
	struct fixture *f = *state;
	uint64_t pcs[HC_MAX_STACK_DEPTH], x = 0x9e3779b97f4a7c15ull;
	const struct hc_ucopy *real = f->snap.copy;
	uint64_t ends[HC_UNWIND_END_MAX] = {0};
	enum hc_unwind_end end;
	size_t n;

	for (int i = 0; i < 1500; i++) {
		uint32_t len = (uint32_t)(next_rand(&x) % 4097) & ~7u;
		struct hc_ucopy *c;

		if (len > real->len)
			len = real->len;
		c = copy_of(real, len);
		if (i % 3 != 1) /* garbage stack */
			for (uint32_t k = 0; k < len / 8; k++)
				((uint64_t *)(c + 1))[k] =
					next_rand(&x) % 4 ? next_rand(&x) : f->pcs[k % f->n];
		if (i % 3 != 0) /* garbage registers, the pc sometimes real */
			for (int r = 0; r < HC_UREGS; r++)
				if (r != HC_UREG_IP || next_rand(&x) % 2)
					c->regs[r] = next_rand(&x);
		if (i % 5 == 0) /* no frame pointer to fall back on */
			c->regs[HC_UREG_BP] = 0;
		assert_int_equal(unwind(f, c, pcs, HC_MAX_STACK_DEPTH, &n, &end), 0);
		ends[end]++;
		free(c);
	}
	/* The garbage reached more than one way out. */
	assert_true(ends[HC_UNWIND_STACK_END] > 0);
	assert_true(ends[HC_UNWIND_NO_MODULE] > 0);
}

/*
 * A stack of one return address, over and over: every frame returns into the frame below it
 * again. It climbs a frame at a time until the depth limit, or the copy's end.
 */
static void test_unwind_loop(void **state)
{
	struct fixture *f = *state;
	uint64_t pcs[HC_MAX_STACK_DEPTH], ra = f->pcs[2]; /* into hc_chain_a, after its call */
	uint32_t lens[] = {HC_STACK_COPY_MAX, 256};
	enum hc_unwind_end end;
	size_t n;

	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
		struct hc_ucopy *c = calloc(1, sizeof(*c) + lens[l]);

		assert_non_null(c);
		c->len = lens[l];
		for (uint32_t k = 0; k < lens[l] / 8; k++)
			((uint64_t *)(c + 1))[k] = ra;
		for (int r = 0; r < HC_UREGS; r++)
			c->regs[r] = ra;
		c->regs[HC_UREG_SP] = f->snap.copy->regs[HC_UREG_SP];
		assert_int_equal(unwind(f, c, pcs, HC_MAX_STACK_DEPTH, &n, &end), 0);
		for (size_t i = 0; i < n; i++)
			assert_int_equal(pcs[i], ra);
		if (l == 0) {
			assert_int_equal(n, HC_MAX_STACK_DEPTH);
			assert_int_equal(end, HC_UNWIND_DEPTH);
		} else {
			assert_true(n > 1 && n < HC_MAX_STACK_DEPTH);
			assert_int_equal(end, HC_UNWIND_STACK_END);
		}
		free(c);
	}
}

/* A stack pointer where its copy would wrap past the end of the address space, or at 0. */
static void test_unwind_sp_outside(void **state)
{
	struct fixture *f = *state;
	uint64_t pcs[HC_MAX_STACK_DEPTH];
	const uint64_t sps[] = {UINT64_MAX - 7, UINT64_MAX - 63, 0};
	enum hc_unwind_end end;
	size_t n;

	for (size_t i = 0; i < sizeof(sps) / sizeof(sps[0]); i++) {
		struct hc_ucopy *c = copy_of(f->snap.copy, 64);

		c->regs[HC_UREG_SP] = sps[i];
		assert_int_equal(unwind(f, c, pcs, HC_MAX_STACK_DEPTH, &n, &end), 0);
		if (sps[i])
			assert_int_equal(end, HC_UNWIND_STACK_END);
		free(c);
	}
}

/* A pc in no object the process maps: its one frame, and why it went no further. */
static void test_unwind_no_module(void **state)
{
	struct fixture *f = *state;
	struct hc_ucopy *c = copy_of(f->snap.copy, f->snap.copy->len);
	uint64_t pcs[HC_MAX_STACK_DEPTH];
	enum hc_unwind_end end;
	size_t n;

	c->regs[HC_UREG_IP] = 0x1000;
	c->regs[HC_UREG_BP] = 0;
	assert_int_equal(unwind(f, c, pcs, HC_MAX_STACK_DEPTH, &n, &end), 0);
	assert_int_equal(n, 1);
	assert_int_equal(end, HC_UNWIND_NO_MODULE);
	free(c);
}

/* A pc in an object, but in no function's CFI (its read-only data): no frame pointer either. */
static void test_unwind_no_cfi(void **state)
{
	static const char rodata[] = "not code";
	struct fixture *f = *state;
	struct hc_ucopy *c = copy_of(f->snap.copy, f->snap.copy->len);
	uint64_t pcs[HC_MAX_STACK_DEPTH];
	enum hc_unwind_end end;
	size_t n;

	c->regs[HC_UREG_IP] = (uint64_t)(uintptr_t)rodata;
	c->regs[HC_UREG_BP] = 0;
	assert_int_equal(unwind(f, c, pcs, HC_MAX_STACK_DEPTH, &n, &end), 0);
	assert_int_equal(n, 1);
	assert_int_equal(end, HC_UNWIND_NO_CFI);
	free(c);
}

/*
 * A pc without CFI but a frame pointer chain: the unwinder follows rbp, here take_snapshot()'s
 * frame (the chain, built without frame pointers, has none). So it skips the chain and
 * rejoins the CFI walk at take_snapshot's caller, to the outermost frame.
 */
static void test_unwind_fp_fallback(void **state)
{
	struct fixture *f = *state;
	struct hc_ucopy *c = copy_of(f->snap.copy, f->snap.copy->len);
	uint64_t pcs[HC_MAX_STACK_DEPTH];
	enum hc_unwind_end end;
	size_t n;

	c->regs[HC_UREG_IP] = 0x1000;
	c->regs[HC_UREG_BP] = snapshot_fp;
	assert_int_equal(unwind(f, c, pcs, HC_MAX_STACK_DEPTH, &n, &end), 0);
	assert_int_equal(end, HC_UNWIND_COMPLETE);
	assert_int_equal(n, f->n - 3);
	assert_string_equal(name_of(f, pcs[1] - 1), "setup");
	assert_memory_equal(pcs + 1, f->pcs + 4, (n - 1) * sizeof(*pcs));
	free(c);
}

/* A process the symbolizer does not know: -ESRCH, for the frame pointers to take over. */
static void test_unwind_unknown_process(void **state)
{
	struct fixture *f = *state;
	uint64_t pcs[HC_MAX_STACK_DEPTH];
	enum hc_unwind_end end;
	size_t n;

	assert_int_equal(
		unwind_tgid(f, f->tgid + 1000000, f->snap.copy, pcs, HC_MAX_STACK_DEPTH, &n, &end),
		-ESRCH);
	assert_int_equal(n, 0);
}

/* Off-CPU stashes: kept per (tid, seq), two per thread, the old one replaced. */
static void test_unwind_stash(void **state)
{
	struct fixture *f = *state;
	struct hc_unwind_stats st;
	const uint64_t *pcs;
	enum hc_unwind_end end;
	uint64_t missing;
	size_t n;

	hc_unwinder__stats(f->unw, &st);
	missing = st.stash_missing;
	assert_int_equal(hc_unwinder__stash(f->unw, f->tgid, 7, 1, f->pcs, 3, HC_UNWIND_DEPTH), 0);
	assert_int_equal(hc_unwinder__stash(f->unw, f->tgid, 7, 2, f->pcs, 0, HC_UNWIND_COMPLETE),
			 0);
	assert_int_equal(hc_unwinder__stashed(f->unw, 7, 1, &pcs, &n, &end), 0);
	assert_int_equal(n, 3);
	assert_int_equal(end, HC_UNWIND_DEPTH);
	assert_memory_equal(pcs, f->pcs, 3 * sizeof(*pcs));
	assert_int_equal(hc_unwinder__stash(f->unw, f->tgid, 7, 3, f->pcs, 1, HC_UNWIND_NO_CFI), 0);
	assert_int_equal(hc_unwinder__stashed(f->unw, 7, 1, &pcs, &n, &end), -ENOENT);
	assert_int_equal(hc_unwinder__stashed(f->unw, 7, 2, &pcs, &n, &end), 0);
	assert_int_equal(n, 0);
	assert_int_equal(hc_unwinder__stashed(f->unw, 8, 1, &pcs, &n, &end), -ENOENT);
	assert_int_equal(hc_unwinder__stash(f->unw, f->tgid, 7, 4, f->pcs, HC_MAX_STACK_DEPTH + 1,
					    HC_UNWIND_DEPTH),
			 -EINVAL);
	hc_unwinder__stats(f->unw, &st);
	assert_int_equal(st.stash_missing, missing + 2);
}

static void test_unwind_end_names(void **state)
{
	(void)state;
	assert_string_equal(hc_unwind_end_name(HC_UNWIND_COMPLETE), "complete");
	assert_string_equal(hc_unwind_end_name(HC_UNWIND_STACK_END), "stack_end");
	assert_string_equal(hc_unwind_end_name(HC_UNWIND_NO_MODULE), "no_module");
	assert_string_equal(hc_unwind_end_name(HC_UNWIND_NO_CFI), "no_cfi");
	assert_string_equal(hc_unwind_end_name(HC_UNWIND_DEPTH), "depth");
	assert_string_equal(hc_unwind_end_name(HC_UNWIND_END_MAX), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unwind_known_chain),
		cmocka_unit_test(test_unwind_depth),
		cmocka_unit_test(test_unwind_truncated),
		cmocka_unit_test(test_unwind_garbage),
		cmocka_unit_test(test_unwind_loop),
		cmocka_unit_test(test_unwind_sp_outside),
		cmocka_unit_test(test_unwind_no_module),
		cmocka_unit_test(test_unwind_no_cfi),
		cmocka_unit_test(test_unwind_fp_fallback),
		cmocka_unit_test(test_unwind_unknown_process),
		cmocka_unit_test(test_unwind_stash),
		cmocka_unit_test(test_unwind_end_names),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
