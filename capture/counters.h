/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The counters of a capture, gathered in one place for record and serve: the BPF counters,
 * the aggregation's, the symbolizer's, the unwinder's and the lock tracking's figures into
 * the families they share (profile/counters.def: SAMPLING, LOST, SCHEDULER, SYMBOLIZE,
 * UNWIND, LOCKS). A figure a mode does not have is passed as NULL and reads 0.
 */
#ifndef HOTCOLD_CAPTURE_COUNTERS_H
#define HOTCOLD_CAPTURE_COUNTERS_H

#include "capture/capture.h"
#include "profile/counters.h"
#include "sampler/sampler.h"
#include "symbolize/symbolizer.h"
#include "symbolize/unwind.h"
#include "symbolize/uwpub.h"

struct hc_capture_figures {
	const struct hc_sampler_counts *cnt; /* required */
	const struct hc_capture_stats *as;
	const struct hc_capture_lock_stats *ls;
	const struct hc_symbolizer_stats *ss;
	const struct hc_unwind_stats *us;
	const struct hc_uwpub_stats *ps; /* --unwind table */
	uint32_t table_mb;		 /* --unwind-table-mb; 0 in other modes */
	uint64_t lock_ingest_errors;	 /* contentions the caller could not count (beyond ls's) */
	uint64_t send_errors;		 /* serve: batches not handed to the server */
};

/* Set the shared families' counters of c from f (others are left as they are). */
void hc_counters__fill_capture(struct hc_counters *c, const struct hc_capture_figures *f);

#endif
