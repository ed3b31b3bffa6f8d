// SPDX-License-Identifier: GPL-2.0-only
/*
 * store/fold: the coarse tiers' small stacks, on hand-made trees whose answers are worked out
 * in the comments: a thread's nodes lighter than the threshold go to one "[small stacks]"
 * entry under the nearest heavier node (or the thread), totals stay exact field by field, a
 * folded window folds again at a higher threshold, and stacks whose rows cannot be read (or
 * loop) are left as they are and counted. The disk store's folding is tested on a real file
 * in test_disk.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/blob.h"
#include "store/fold.h"

#define MS 1000000ull
#define F HC_FOLD_BIT

/* Stack rows 1..N_ROWS (index 0 unused) served in spans of SPAN ids, as chunks are. */
#define N_ROWS 16
#define SPAN 4
static struct hc_dict_stack rows[N_ROWS + 1];
static unsigned int reads;

static int rows_of(void *arg, uint32_t id, uint32_t *lo, uint32_t *hi,
		   const struct hc_dict_stack **v)
{
	(void)arg;
	reads++;
	if (!id || id > N_ROWS || (!rows[id].parent && !rows[id].frame))
		return -ENOENT;
	*lo = (id - 1) / SPAN * SPAN;
	*hi = *lo + SPAN;
	*v = &rows[*lo + 1];
	return 0;
}

/*
 * Thread 1:  1 main (2 ms self)        Thread 2:  1 main
 *            |- 2 a                               |- 2 a
 *            |  |- 3 a1 (5 ms)                       |- 3 a1 (0.5 ms)
 *            |  `- 4 a2 (0.3 ms)                     `- 4 a2 (0.5 ms)
 *            `- 5 b (0.4 ms self)
 *               `- 6 b1 (0.2 ms)
 *            7 idle (0.1 ms), a root of its own
 */
static void tree_rows(void)
{
	memset(rows, 0, sizeof(rows));
	rows[1] = (struct hc_dict_stack){0, 101};
	rows[2] = (struct hc_dict_stack){1, 102};
	rows[3] = (struct hc_dict_stack){2, 103};
	rows[4] = (struct hc_dict_stack){2, 104};
	rows[5] = (struct hc_dict_stack){1, 105};
	rows[6] = (struct hc_dict_stack){5, 106};
	rows[7] = (struct hc_dict_stack){0, 107};
	/* 10 and 11 each other's parent: damaged rows */
	rows[10] = (struct hc_dict_stack){11, 110};
	rows[11] = (struct hc_dict_stack){10, 111};
}

/* A weight of ns split on-CPU / blocked / run-queue so that each field's sum is checked. */
static struct hc_weights w_of(uint64_t ns)
{
	return (struct hc_weights){.on_cpu_ns = ns / 2,
				   .off_cpu_ns = ns / 4,
				   .runqueue_ns = ns - ns / 2 - ns / 4,
				   .samples = ns / MS};
}

static void add(struct hc_blob *b, uint32_t task, uint32_t stack, uint64_t ns)
{
	struct hc_weights w = w_of(ns);

	assert_int_equal(hc_blob__add(b, task, stack, &w), 0);
}

static void tree_blob(struct hc_blob *b)
{
	hc_blob__init(b, 0, MS);
	add(b, 1, 3, 5 * MS);
	add(b, 1, 4, 300000);
	add(b, 1, 6, 200000);
	add(b, 1, 5, 400000);
	add(b, 1, 7, 100000);
	add(b, 1, 1, 2 * MS);
	add(b, 2, 4, 500000);
	add(b, 2, 3, 500000);
}

/* The value of (task, stack) in b; fails when absent. */
static uint64_t value_of(const struct hc_blob *b, uint32_t task, uint32_t stack)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->e[i].task == task && b->e[i].stack == stack)
			return hc_weights__value(&b->e[i].w);
	fail_msg("no entry (%u, %#x)", task, stack);
	return 0;
}

static void assert_weights_equal(const struct hc_weights *a, const struct hc_weights *b)
{
	assert_int_equal(a->on_cpu_ns, b->on_cpu_ns);
	assert_int_equal(a->off_cpu_ns, b->off_cpu_ns);
	assert_int_equal(a->runqueue_ns, b->runqueue_ns);
	assert_int_equal(a->samples, b->samples);
}

/* Each entry's weights summed again: what the blob's total says. */
static struct hc_weights sum_of(const struct hc_blob *b)
{
	struct hc_weights s = {0};

	for (size_t i = 0; i < b->n; i++)
		hc_weights__add(&s, &b->e[i].w);
	return s;
}

static void test_fold_threshold(void **state)
{
	struct hc_fold f;
	struct hc_blob b;
	struct hc_weights before, after;

	(void)state;
	tree_rows();
	tree_blob(&b);
	before = b.total;
	hc__fold_init(&f, rows_of, NULL);
	/* 0: nothing folds */
	assert_int_equal(hc__fold_blob(&f, &b, 0), 0);
	assert_int_equal(b.n, 8);
	assert_int_equal(hc__fold_blob(&f, &b, 1 * MS), 0);
	/*
	 * Thread 1's subtrees: 3 = 5, 4 = 0.3, 2 = 5.3, 6 = 0.2, 5 = 0.6, 1 = 7.9, 7 = 0.1 ms.
	 * Kept: 3, 1 (and 2: no entry of its own). 4 goes under 2; 6 and 5 under 1 (5 weighs
	 * 0.6 with 6); 7 under the thread. Thread 2: 2 = 1 ms exactly, kept: 3 and 4 under it.
	 */
	assert_int_equal(b.n, 6);
	assert_int_equal(value_of(&b, 1, 3), 5 * MS);
	assert_int_equal(value_of(&b, 1, 1), 2 * MS);
	assert_int_equal(value_of(&b, 1, F | 2), 300000);
	assert_int_equal(value_of(&b, 1, F | 1), 600000);
	assert_int_equal(value_of(&b, 1, F | 0), 100000);
	assert_int_equal(value_of(&b, 2, F | 2), 1 * MS);
	assert_int_equal(f.entries, 6);
	assert_int_equal(f.ns, 2 * MS);
	assert_int_equal(f.unreadable, 0);
	after = sum_of(&b);
	assert_weights_equal(&before, &after);
	assert_weights_equal(&before, &b.total);

	/*
	 * The next tier folds the folded window again at 5.5 ms: thread 1's 3 (5) and 2 (5.3,
	 * [small stacks] under it included) go under 1 (7.9) with [small stacks] under 2; [small
	 * stacks] under 1 and under the thread stay where they are (not counted again); thread
	 * 2's 1 ms goes under the thread.
	 */
	assert_int_equal(hc__fold_blob(&f, &b, 5500000), 0);
	assert_int_equal(b.n, 4);
	assert_int_equal(value_of(&b, 1, F | 1), 5900000);
	assert_int_equal(value_of(&b, 1, 1), 2 * MS);
	assert_int_equal(value_of(&b, 1, F | 0), 100000);
	assert_int_equal(value_of(&b, 2, F | 0), 1 * MS);
	assert_int_equal(f.entries, 6 + 3);
	assert_int_equal(f.ns, 2 * MS + 5300000 + 1 * MS);
	after = sum_of(&b);
	assert_weights_equal(&before, &after);
	hc_blob__release(&b);
	hc__fold_release(&f);
}

/* Parents are read a span at a time and kept from one blob to the next. */
static void test_fold_reads_spans(void **state)
{
	struct hc_fold f;
	struct hc_blob b;

	(void)state;
	tree_rows();
	hc__fold_init(&f, rows_of, NULL);
	reads = 0;
	tree_blob(&b);
	assert_int_equal(hc__fold_blob(&f, &b, 1 * MS), 0);
	/* rows 1-4 and 5-8: two spans */
	assert_int_equal(reads, 2);
	hc_blob__release(&b);
	hc__fold_forget(&f);
	tree_blob(&b);
	assert_int_equal(hc__fold_blob(&f, &b, 1 * MS), 0);
	assert_int_equal(reads, 2);
	hc_blob__release(&b);
	hc__fold_release(&f);
}

/* A stack whose row is missing, or whose rows loop, is left as it is and counted; the rest
 * folds as before. */
static void test_fold_unreadable(void **state)
{
	struct hc_fold f;
	struct hc_blob b;

	(void)state;
	tree_rows();
	tree_blob(&b);
	add(&b, 1, 9, 1000);  /* no row 9 */
	add(&b, 1, 10, 2000); /* 10 -> 11 -> 10 ... */
	add(&b, 3, 14, 3000); /* no row 14 */
	hc__fold_init(&f, rows_of, NULL);
	assert_int_equal(hc__fold_blob(&f, &b, 1 * MS), 0);
	assert_int_equal(value_of(&b, 1, 9), 1000);
	assert_int_equal(value_of(&b, 1, 10), 2000);
	assert_int_equal(value_of(&b, 3, 14), 3000);
	assert_int_equal(value_of(&b, 1, F | 1), 600000);
	assert_int_equal(f.unreadable, 3);
	assert_int_equal(f.entries, 6);
	hc_blob__release(&b);
	hc__fold_release(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fold_threshold),
		cmocka_unit_test(test_fold_reads_spans),
		cmocka_unit_test(test_fold_unreadable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
