/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * capture/record_sink: record's sink. It keeps what the pipeline hands it for the whole
 * window (the histograms, the locks' kinds, the cpu_unclaimed series), and at the end makes
 * the hotcold-profile/1 document: the tree, the lock tree, and every section
 * (docs/profile-schema.md).
 */
#ifndef HOTCOLD_CAPTURE_RECORD_SINK_H
#define HOTCOLD_CAPTURE_RECORD_SINK_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/capture.h"
#include "profile/profile.h"
#include "sampler/sampler.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwind.h"

struct hc_record_sink;

struct hc_record_sink *hc_record_sink__new(void);
void hc_record_sink__free(struct hc_record_sink *rs);
/* The callbacks into rs (borrowed: rs outlives the pipeline given them). */
struct hc_capture_sink hc_record_sink__sink(struct hc_record_sink *rs);

/* Flush cap (made with rs's sink) into tree and lock_tree (either NULL: not kept). */
int hc_record_sink__trees(struct hc_record_sink *rs, struct hc_capture *cap, struct hc_tree *tree,
			  struct hc_tree *lock_tree);
/* What rs holds of histogram h (enum hc_store_hist: the same series as the document's).
 * Borrowed; NULL for no such histogram. */
const struct hc_hist *hc_record_sink__hist(const struct hc_record_sink *rs, enum hc_store_hist h);
/* The locks section's by_kind array (docs/locks.md), the most waited-for first. New
 * reference, NULL on failure. */
json_t *hc_record_sink__lock_kinds_json(const struct hc_record_sink *rs);

/* What the document says about how it was taken, besides what the pipeline counted. */
struct hc_record_doc {
	double frequency_hz;
	uint64_t period_ns;
	uint64_t min_block_ns;
	uint64_t stack_budget; /* 0: the default (10000) */
	bool no_stack_reuse;
	bool wakers;
	bool locks;
	bool unwind_fp;
	bool unwind_table; /* --unwind table */
	uint32_t unwind_table_mb;
	uint32_t stack_copy_bytes;
	uint64_t copy_budget;
	const struct hc_sampler_counts *cnt;
	struct hc_symbolizer *sym;
	const struct hc_unwinder *unw; /* NULL: --unwind fp or table */
	const struct hc_uwpub *pub;    /* --unwind table */
	int64_t started_at_ns;
	uint64_t duration_ns;
};

/*
 * Flush cap (made with rs's sink) into p's tree and lock tree, then fill every other part of
 * p: sampling, totals, lost, symbolize, scheduler, locks, unwind and the histograms; the tree
 * sorted. 0 or -errno (-ENOMEM).
 */
int hc_record_sink__document(struct hc_record_sink *rs, struct hc_capture *cap,
			     struct hc_profile *p, const struct hc_record_doc *d);

#endif
