/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Raw sampler events -> interned stacks -> a hotcold profile.
 *
 * On the drain path (hc_agg__sample) user addresses are normalized at once to
 * {object, file offset} while the process lives (its mappings are snapshotted on its first
 * sample or exec), and the whole stack plus identity is interned in a stack table: repeated
 * stacks cost one hash lookup. Names are resolved only once per distinct frame, at
 * hc_agg__build_tree().
 */
#ifndef HOTCOLD_AGGREGATE_H
#define HOTCOLD_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/sample.h"
#include "profile/hist.h"
#include "profile/profile.h"
#include "symbolize/symbolizer.h"

struct hc_agg_stats {
	uint64_t samples;        /* samples ingested (idle never reaches user space) */
	uint64_t kernel_samples; /* arg0 != 0 */
	uint64_t user_samples;   /* arg1 != 0 */
	uint64_t ingest_errors;  /* samples dropped in user space (out of memory) */
	uint64_t truncated_ustacks; /* user stacks that hit HC_MAX_STACK_DEPTH */
	uint64_t truncated_kstacks;
	uint64_t hist_errors;    /* samples not counted in a histogram (out of memory, limits) */
};

struct hc_agg;

/* sym is borrowed and must outlive the aggregator. */
struct hc_agg *hc_agg__new(struct hc_symbolizer *sym, uint64_t period_ns);
void hc_agg__free(struct hc_agg *agg);

int hc_agg__sample(struct hc_agg *agg, const struct hc_sample_event *e, size_t size);
int hc_agg__exec(struct hc_agg *agg, const struct hc_exec_event *e);

/*
 * The `priority` histogram: lquantize(prio, 0, 140, 10) of every on-CPU sample, per process
 * name (DTrace's profpri.d). Borrowed; lives as long as agg.
 */
const struct hc_hist *hc_agg__priority(const struct hc_agg *agg);
/*
 * The `runqueue_length` histogram: lquantize(len, 0, 32, 1) per CPU ("cpu N"), read at every
 * on-CPU sample (bcc runqlen, all scheduling classes). Borrowed; lives as long as agg.
 */
const struct hc_hist *hc_agg__runqueue_length(const struct hc_agg *agg);
/* Idle-task samples of one CPU (counted in BPF, never sent): the idle task runs only when
 * nothing waits, so each is a run-queue length of 0. */
int hc_agg__idle_samples(struct hc_agg *agg, uint32_t cpu, uint64_t count);

/* Resolve every distinct frame and add every stack to tree. */
int hc_agg__build_tree(struct hc_agg *agg, struct hc_tree *tree);
void hc_agg__stats(const struct hc_agg *agg, struct hc_agg_stats *out);
size_t hc_agg__stack_count(const struct hc_agg *agg);

#endif
