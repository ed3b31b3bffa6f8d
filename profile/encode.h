/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The profile's exports (JSON, folded, pprof, speedscope, differential folded) and the
 * JSON decoder. Pure: they write to a stream or build JSON, never print otherwise.
 */
#ifndef HOTCOLD_PROFILE_ENCODE_H
#define HOTCOLD_PROFILE_ENCODE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "profile/profile.h"
#include "profile/tree.h"
#include "profile/weights.h"

/* ns since the epoch (CLOCK_REALTIME) as an RFC 3339 UTC string with milliseconds,
 * "2026-11-22T10:00:00.000Z"; JSON null when gmtime cannot represent it. */
json_t *hc_json__rfc3339_ms(int64_t ns);

/* A tree as the JSON of its root node (the `flamegraph` member's form). NULL + errno. */
json_t *hc_tree__to_json(const struct hc_tree *tree);
/* obj's members and then `key`: the tree (as hc_tree__to_json would give it), written
 * compact with a newline, the tree streamed (a large tree as json_t is slow). obj is
 * borrowed and must not hold `key`. 0, -EINVAL, -ENOMEM, -errno of the write. */
int hc_json__write_with_tree(const json_t *obj, const char *key, const struct hc_tree *tree,
			     FILE *out);

/* Encoders. to_json returns a new reference (NULL + errno on failure). */
json_t *hc_profile__to_json(const struct hc_profile *p);
int hc_profile__write_json(const struct hc_profile *p, FILE *out);
/*
 * flamegraph.pl folded stacks, one line per distinct path with self time:
 * `process;frame;frame VALUE`, VALUE in nanoseconds (pass `--countname=ns` to flamegraph.pl).
 * Threads are merged into their process (as stackcollapse-perf does). Kernel frames get the
 * suffix `_[k]`; ';' and newlines inside names become '_'. Unresolved frames print as
 * `[unknown]` (user frames: `[unknown module+0xOFF]`). The root's own self time (serve's
 * pruned nodes are folded into it) is the line `all VALUE`, as pprof's stand-in frame names
 * it; so the lines add up to the root's selected value. Lines sorted for stable output.
 * -EOVERFLOW: a tree deeper than 1000 levels, or equal lines summing beyond a u64 (only a
 * tree whose children outweigh their parent can); nothing is written then. -errno from the
 * stream.
 */
int hc_profile__write_folded(const struct hc_profile *p, unsigned int weights, FILE *out);

/*
 * pprof: a gzipped profile.proto message (docs/formats.md). Sample types, in this order and
 * only those selected: samples/count and cpu/nanoseconds (HC_W_ON), off_cpu/nanoseconds
 * (HC_W_OFF), runqueue/nanoseconds (HC_W_RUNQ); period_type cpu/nanoseconds, period =
 * sampling.period_ns. One sample per tree path with self weight, locations leaf first,
 * process and thread as labels (pid/tid numeric, with num_unit "pid"/"tid" so that 0 is kept;
 * an empty comm is no label). -EOVERFLOW when something does not fit profile.proto's int64:
 * a selected self value or sample count, a pid or tid, duration_ns or period_ns above
 * INT64_MAX (a decoded document may hold them), or a tree deeper than 1000 levels; part of
 * the file may have been written then. Else -errno (-EIO/-errno from the stream, -ENOMEM).
 */
int hc_profile__write_pprof(const struct hc_profile *p, unsigned int weights, FILE *out);

/*
 * speedscope's file format (https://www.speedscope.app/file-format-schema.json): one
 * "sampled" profile per thread, unit nanoseconds, weights = the selected self time of each
 * path, stacks outermost first. Never -EOVERFLOW: weights above INT64_MAX are JSON reals, as
 * in the JSON encoder, and there is no depth limit. -errno on failure.
 */
int hc_profile__write_speedscope(const struct hc_profile *p, unsigned int weights, FILE *out);

/*
 * Differential folded stacks, flamegraph.pl's difffolded format: one line `stack BASE NEW`
 * (ns of the selected weights) per stack in either profile, in folded order; stacks are the
 * folded writer's, so processes match by name, not pid. normalize: scale BASE so that its
 * total equals NEW's (difffolded.pl -n; scaled in doubles, else values are exact). -EOVERFLOW
 * as write_folded(); -errno on failure.
 */
int hc_profile__write_diff_folded(const struct hc_profile *base, const struct hc_profile *new,
				  unsigned int weights, bool normalize, FILE *out);

/*
 * Decoder: a parsed hotcold-profile/1 document back into a profile. Every field is checked
 * (types, ranges, tree depth, children never worth more than their parent); a document
 * that fails any check is refused with a one-line reason in `why`. Siblings that are the same
 * node (earlier versions wrote some) are merged into one, weights summed. Returns 0 and *out, or
 * -EINVAL (not a valid profile: `why` says where) or -ENOMEM.
 */
int hc_profile__from_json(const json_t *doc, struct hc_profile **out, char *why, size_t why_len);

#endif
