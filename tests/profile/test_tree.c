// SPDX-License-Identifier: GPL-2.0-only
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests.h"

#define P 1000 /* period_ns for these tests */

static const struct hc_node *child_named(const struct hc_node *n, const char *name)
{
	for (size_t i = 0; i < hc_node__child_count(n); i++) {
		if (strcmp(hc_node__name(hc_node__child(n, i)), name) == 0)
			return hc_node__child(n, i);
	}
	return NULL;
}

static void test_tree_prefixes(void **state)
{
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *root, *proc, *thr, *main_, *a, *b, *k;
	const struct hc_weights one = {.on_cpu_ns = P, .samples = 1};
	char name[16];

	(void)state;
	assert_non_null(tree);
	root = hc_tree__root(tree);
	assert_int_equal(hc_tree__node_count(tree), 1);
	assert_int_equal(hc_node__kind(root), HC_NODE_ROOT);
	assert_string_equal(hc_node__name(root), "all");
	assert_int_equal(hc_node__child_count(root), 0);
	assert_null(hc_node__child(root, 0));

	/* names passed in are copied: reuse one buffer */
	strcpy(name, "main");
	ADD_PATH(tree, P, 2, 0, 0, PROC("app", 1), THR("app", 1), USR(name, "/bin/app"),
		 USR("a", "/bin/app"));
	ADD_PATH(tree, P, 3, 5, 7, PROC("app", 1), THR("app", 1), USR(name, "/bin/app"),
		 USR("b", "/bin/app"), KRN("k"));
	strcpy(name, "XXXX");
	ADD_PATH(tree, P, 1, 0, 0, PROC("app", 1), THR("app", 1), USR("main", "/bin/app"));
	assert_int_equal(hc_tree__node_count(tree), 1 + 6);

	assert_int_equal(hc_node__weights(root)->samples, 6);
	assert_int_equal(hc_weights__value(hc_node__weights(root)), 6 * P + 12);
	assert_int_equal(hc_node__child_count(root), 1);
	proc = hc_node__child(root, 0);
	assert_int_equal(hc_node__kind(proc), HC_NODE_PROCESS);
	assert_int_equal(hc_node__id(proc), 1);
	assert_null(hc_node__module(proc));
	assert_int_equal(hc_node__weights(proc)->samples, 6);
	thr = hc_node__child(proc, 0);
	assert_int_equal(hc_node__kind(thr), HC_NODE_THREAD);
	assert_int_equal(hc_node__weights(thr)->on_cpu_ns, 6 * P);
	main_ = hc_node__child(thr, 0);
	assert_string_equal(hc_node__name(main_), "main");
	assert_string_equal(hc_node__module(main_), "/bin/app");
	assert_int_equal(hc_node__offset(main_), -1);
	assert_int_equal(hc_node__child_count(main_), 2);
	assert_int_equal(hc_node__weights(main_)->samples, 6);
	assert_int_equal(hc_node__weights(main_)->off_cpu_ns, 5);
	assert_int_equal(hc_node__weights(main_)->runqueue_ns, 7);
	/* insertion order before sorting */
	a = hc_node__child(main_, 0);
	b = hc_node__child(main_, 1);
	assert_string_equal(hc_node__name(a), "a");
	assert_string_equal(hc_node__name(b), "b");
	assert_int_equal(hc_weights__value(hc_node__weights(a)), 2 * P);
	assert_int_equal(hc_weights__value(hc_node__weights(b)), 3 * P + 12);
	k = hc_node__child(b, 0);
	assert_int_equal(hc_node__kind(k), HC_NODE_KERNEL);
	assert_int_equal(hc_weights__value(hc_node__weights(k)), 3 * P + 12);
	assert_int_equal(hc_node__child_count(k), 0);

	/* equal strings are interned once */
	assert_ptr_equal(hc_node__name(proc), hc_node__name(thr));
	assert_ptr_equal(hc_node__module(main_), hc_node__module(a));

	/* empty path: root only */
	assert_int_equal(hc_tree__add_path(tree, NULL, 0, &one), 0);
	assert_int_equal(hc_node__weights(root)->samples, 7);
	assert_int_equal(hc_node__weights(proc)->samples, 6);
	hc_tree__free(tree);
	hc_tree__free(NULL);
}

static void test_tree_identity(void **state)
{
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *root, *thr;
	const struct hc_path_elem bad_name[] = {{HC_NODE_USER, NULL, NULL, 0, -1, false}};
	const struct hc_path_elem bad_kind[] = {{HC_NODE_ROOT, "x", NULL, 0, -1, false}};
	const struct hc_weights w = {.on_cpu_ns = 1, .samples = 1};

	(void)state;
	assert_non_null(tree);
	/* same comm, different pid: two processes */
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), USR("f", "/bin/sh"));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 11), THR("sh", 11), USR("f", "/bin/sh"));
	/* same name, different module / offset / kind */
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), USR("f", "/lib/libc.so.6"));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), USR("f", NULL));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), KRN("f"));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), UNK("/bin/sh", 0x10));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), UNK("/bin/sh", 0x20));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), UNK("/bin/sh", 0x10));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), UNK(NULL, -1));
	/* a thread with the same tid as the pid but a different comm: a second thread */
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("worker", 10));
	/* module "" is not NULL */
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), USR("f", ""));

	root = hc_tree__root(tree);
	assert_int_equal(hc_node__child_count(root), 2);
	thr = hc_node__child(hc_node__child(root, 0), 0);
	assert_int_equal(hc_node__id(thr), 10);
	/* f@/bin/sh, f@libc, f@NULL, f[k], unk+0x10, unk+0x20, unk, f@"" */
	assert_int_equal(hc_node__child_count(thr), 8);
	assert_int_equal(hc_node__offset(hc_node__child(thr, 4)), 0x10);
	assert_int_equal(hc_node__weights(hc_node__child(thr, 4))->samples, 2);
	assert_int_equal(hc_node__offset(hc_node__child(thr, 5)), 0x20);
	assert_null(hc_node__module(hc_node__child(thr, 2)));
	assert_string_equal(hc_node__module(hc_node__child(thr, 7)), "");
	assert_int_equal(hc_node__child_count(hc_node__child(root, 0)), 2);
	/* 1 root + 2 proc + 2+1 threads + 1 (pid 11 frame) + 8 frames */
	assert_int_equal(hc_tree__node_count(tree), 15);
	assert_int_equal(hc_node__weights(root)->samples, 11);

	/* invalid elements are refused and change nothing */
	assert_int_equal(hc_tree__add_path(tree, bad_name, 1, &w), -EINVAL);
	assert_int_equal(hc_tree__add_path(tree, bad_kind, 1, &w), -EINVAL);
	assert_int_equal(hc_tree__node_count(tree), 15);
	assert_int_equal(hc_node__weights(root)->samples, 11);
	hc_tree__free(tree);
}

/* An inlined frame and a real frame of the same name are two nodes; inlined ones merge. */
static void test_tree_inlined(void **state)
{
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *f, *a, *b;

	(void)state;
	assert_non_null(tree);
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), USR("f", "/bin/sh"),
		 USR("g", "/bin/sh"));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), USR("f", "/bin/sh"),
		 INL("g", "/bin/sh"));
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), USR("f", "/bin/sh"),
		 INL("g", "/bin/sh"), INL("h", "/bin/sh"));
	f = hc_node__child(hc_node__child(hc_node__child(hc_tree__root(tree), 0), 0), 0);
	assert_string_equal(hc_node__name(f), "f");
	assert_false(hc_node__inlined(f));
	assert_int_equal(hc_node__child_count(f), 2);
	a = hc_node__child(f, 0);
	b = hc_node__child(f, 1);
	assert_false(hc_node__inlined(a));
	assert_true(hc_node__inlined(b));
	assert_int_equal(hc_node__weights(a)->samples, 1);
	assert_int_equal(hc_node__weights(b)->samples, 2);
	assert_true(hc_node__inlined(hc_node__child(b, 0)));
	/* equal value: the real frame sorts before its inlined namesake */
	ADD_PATH(tree, P, 1, 0, 0, PROC("sh", 10), THR("sh", 10), USR("f", "/bin/sh"),
		 USR("g", "/bin/sh"));
	hc_tree__sort(tree);
	assert_false(hc_node__inlined(hc_node__child(f, 0)));
	assert_true(hc_node__inlined(hc_node__child(f, 1)));
	assert_int_equal(hc_tree__node_count(tree), 7);
	hc_tree__free(tree);
}

static void test_tree_sort(void **state)
{
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *root, *thr;
	const char *want[] = {"big", "a", "b", "b", "b", "c"};

	(void)state;
	assert_non_null(tree);
	ADD_PATH(tree, P, 1, 0, 0, PROC("p", 1), THR("p", 1), USR("c", NULL));
	ADD_PATH(tree, P, 1, 0, 0, PROC("p", 1), THR("p", 1), USR("b", "/z"));
	ADD_PATH(tree, P, 1, 0, 0, PROC("p", 1), THR("p", 1), USR("b", "/a"));
	ADD_PATH(tree, P, 1, 0, 0, PROC("p", 1), THR("p", 1), USR("b", NULL));
	ADD_PATH(tree, P, 1, 0, 0, PROC("p", 1), THR("p", 1), USR("a", NULL));
	ADD_PATH(tree, P, 5, 0, 0, PROC("p", 1), THR("p", 1), USR("big", NULL));
	/* processes: value desc, then name, then pid */
	ADD_PATH(tree, P, 1, 0, 0, PROC("q", 7));
	ADD_PATH(tree, P, 1, 0, 0, PROC("q", 3));
	ADD_PATH(tree, P, 1, 0, 0, PROC("o", 9));
	ADD_PATH(tree, 0, 0, 1, 0, PROC("z", 2)); /* value 1: off-CPU counts too */

	hc_tree__sort(tree);
	root = hc_tree__root(tree);
	assert_int_equal(hc_node__child_count(root), 5);
	assert_string_equal(hc_node__name(hc_node__child(root, 0)), "p");
	assert_string_equal(hc_node__name(hc_node__child(root, 1)), "o");
	assert_int_equal(hc_node__id(hc_node__child(root, 2)), 3);
	assert_int_equal(hc_node__id(hc_node__child(root, 3)), 7);
	assert_string_equal(hc_node__name(hc_node__child(root, 4)), "z");

	thr = hc_node__child(hc_node__child(root, 0), 0);
	assert_int_equal(hc_node__child_count(thr), 6);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(hc_node__name(hc_node__child(thr, i)), want[i]);
	/* ties on value, name, id, kind: module NULL first, then by string */
	assert_null(hc_node__module(hc_node__child(thr, 2)));
	assert_string_equal(hc_node__module(hc_node__child(thr, 3)), "/a");
	assert_string_equal(hc_node__module(hc_node__child(thr, 4)), "/z");
	/* sorting twice changes nothing */
	hc_tree__sort(tree);
	assert_string_equal(hc_node__module(hc_node__child(thr, 3)), "/a");
	hc_tree__free(tree);
}

/* Checks inclusive values at every node; returns the number of nodes below and at n. */
static size_t check_inclusive(const struct hc_node *n)
{
	const struct hc_weights *w = hc_node__weights(n);
	struct hc_weights sum = {0};
	size_t count = 1;

	for (size_t i = 0; i < hc_node__child_count(n); i++) {
		hc_weights__add(&sum, hc_node__weights(hc_node__child(n, i)));
		count += check_inclusive(hc_node__child(n, i));
	}
	assert_true(sum.on_cpu_ns <= w->on_cpu_ns);
	assert_true(sum.off_cpu_ns <= w->off_cpu_ns);
	assert_true(sum.runqueue_ns <= w->runqueue_ns);
	assert_true(sum.samples <= w->samples);
	return count;
}

static void test_tree_large(void **state)
{
	struct hc_tree *tree = hc_tree__new();
	const struct hc_node *root, *proc, *thr;
	char name[32];

	(void)state;
	assert_non_null(tree);
	/* one thread with 50k distinct leaf frames (wide), then 50k more frames spread deep */
	for (int i = 0; i < 50000; i++) {
		snprintf(name, sizeof(name), "leaf_%d", i);
		ADD_PATH(tree, P, 1, 0, 0, PROC("wide", 1), THR("wide", 1), USR(name, "/bin/w"));
	}
	for (int i = 0; i < 500; i++) {
		struct hc_path_elem path[102];
		const struct hc_weights w = {.on_cpu_ns = P, .samples = 1};
		char names[100][32];

		path[0] = (struct hc_path_elem)PROC("deep", 2);
		path[1] = (struct hc_path_elem)THR("deep", 2);
		for (int d = 0; d < 100; d++) {
			snprintf(names[d], sizeof(names[d]), "f%d_%d", i, d);
			path[2 + d] = (struct hc_path_elem)USR(names[d], "/bin/d");
		}
		assert_int_equal(hc_tree__add_path(tree, path, 102, &w), 0);
		/* again: no new nodes */
		assert_int_equal(hc_tree__add_path(tree, path, 102, &w), 0);
	}
	assert_int_equal(hc_tree__node_count(tree), 1 + 2 + 50000 + 2 + 500 * 100);

	root = hc_tree__root(tree);
	assert_int_equal(hc_node__weights(root)->samples, 50000 + 1000);
	proc = child_named(root, "wide");
	assert_non_null(proc);
	thr = hc_node__child(proc, 0);
	assert_int_equal(hc_node__child_count(thr), 50000);
	assert_int_equal(hc_node__weights(thr)->samples, 50000);
	assert_non_null(child_named(thr, "leaf_49999"));
	proc = child_named(root, "deep");
	assert_non_null(proc);
	assert_int_equal(hc_node__weights(proc)->on_cpu_ns, 1000 * P);

	hc_tree__sort(tree);
	assert_string_equal(hc_node__name(hc_node__child(root, 0)), "wide");
	/* all leaves tie on value: sorted by name (strcmp) */
	assert_string_equal(hc_node__name(hc_node__child(thr, 0)), "leaf_0");
	assert_string_equal(hc_node__name(hc_node__child(thr, 1)), "leaf_1");
	assert_string_equal(hc_node__name(hc_node__child(thr, 2)), "leaf_10");
	assert_int_equal(check_inclusive(root), hc_tree__node_count(tree));
	hc_tree__free(tree);
}

int run_tree_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tree_prefixes), cmocka_unit_test(test_tree_identity),
		cmocka_unit_test(test_tree_inlined),  cmocka_unit_test(test_tree_sort),
		cmocka_unit_test(test_tree_large),
	};

	return cmocka_run_group_tests_name("tree", tests, NULL, NULL);
}
