/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * serve/sink: serve's sink of the capture pipeline (capture/capture.h). It turns each
 * second's paths, histogram observations, lock contentions and heat rows into the records
 * of serve/wire.h, in a buffer the collector sends once a second. Frame ids are its own and
 * bounded (a RESET record starts them over on both sides).
 *
 * A flush: hc_serve_sink__begin(), then hc_capture__flush() (the paths), then
 * hc_serve_sink__end() (the lock counters, the histogram cells, the heat columns of the
 * seconds that are over); the buffer then holds that second's records.
 */
#ifndef HOTCOLD_SERVE_SINK_H
#define HOTCOLD_SERVE_SINK_H

#include <stdbool.h>
#include <stdint.h>

#include "capture/capture.h"
#include "serve/wire.h"

struct hc_serve_sink_stats {
	uint64_t frames;	   /* in the profile store's frame table now */
	uint64_t frame_resets;	   /* times a frame table started over */
	uint64_t lock_cell_errors; /* contentions not counted (out of memory) */
};

struct hc_serve_sink;

/* locks: --locks (the lock store's frame table and counters). NULL + errno. */
struct hc_serve_sink *hc_serve_sink__new(bool locks);
void hc_serve_sink__free(struct hc_serve_sink *s);
/* The callbacks into s (borrowed: s outlives the pipeline given them). */
struct hc_capture_sink hc_serve_sink__sink(struct hc_serve_sink *s);

/* Before the pipeline's flush: frame tables past their bounds start over. 0 or -ENOMEM. */
int hc_serve_sink__begin(struct hc_serve_sink *s);
/* After it: the lock counters, the histogram cells, and the heat columns of seconds before
 * now_s. 0 or -ENOMEM. */
int hc_serve_sink__end(struct hc_serve_sink *s, int64_t now_s);
/* The records so far (the caller sends and resets it). Borrowed. */
struct hc_wire_buf *hc_serve_sink__buf(struct hc_serve_sink *s);
void hc_serve_sink__stats(const struct hc_serve_sink *s, struct hc_serve_sink_stats *out);

#endif
