/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOTCOLD_TESTS_PROFILE_H
#define HOTCOLD_TESTS_PROFILE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "profile/encode.h"
#include "profile/profile.h"
#include "profile/stacktab.h"
#include "profile/tree.h"
#include "profile/weights.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Path elements for hand-built trees. */
#define PROC(n, pid)                                         \
	{                                                    \
		HC_NODE_PROCESS, (n), NULL, (pid), -1, false \
	}
#define THR(n, tid)                                         \
	{                                                   \
		HC_NODE_THREAD, (n), NULL, (tid), -1, false \
	}
#define USR(n, m)                                    \
	{                                            \
		HC_NODE_USER, (n), (m), 0, -1, false \
	}
#define UNK(m, off)                                             \
	{                                                       \
		HC_NODE_USER, "[unknown]", (m), 0, (off), false \
	}
#define KRN(n)                                          \
	{                                               \
		HC_NODE_KERNEL, (n), NULL, 0, -1, false \
	}
/* a function the compiler inlined into the frame before it */
#define INL(n, m)                                   \
	{                                           \
		HC_NODE_USER, (n), (m), 0, -1, true \
	}

/* Adds a path with `samples` on-CPU samples of period_ns, plus off-CPU/runqueue ns. */
#define ADD_PATH(tree, period_ns, nsamples, off_ns, rq_ns, ...)                          \
	do {                                                                             \
		const struct hc_path_elem p_[] = {__VA_ARGS__};                          \
		const struct hc_weights w_ = {                                           \
			.on_cpu_ns = (uint64_t)(nsamples) * (period_ns),                 \
			.off_cpu_ns = (off_ns),                                          \
			.runqueue_ns = (rq_ns),                                          \
			.samples = (nsamples),                                           \
		};                                                                       \
		assert_int_equal(hc_tree__add_path((tree), p_, ARRAY_SIZE(p_), &w_), 0); \
	} while (0)

/* assert actual == expected; on a mismatch first leave `name`.actual (in the working
 * directory) for a human to diff and review. */
void expect_golden_text(const char *actual, const char *expected, const char *name);

/* xorshift64: the random trees of the encoder tests, the same sequence every run. */
uint64_t hc_test_rng(void);

int run_stacktab_tests(void);
int run_tree_tests(void);
int run_encode_tests(void);
int run_hist_tests(void);
int run_store_tests(void);
int run_pprof_tests(void);
int run_speedscope_tests(void);
int run_decode_tests(void);
int run_counters_tests(void);

#endif
