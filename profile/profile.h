/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * profile/: the data model. Pure functions over data: no BPF, no /proc, never prints.
 *
 *  - hc_stacktab: interns variable-length keys of u64 words (raw stacks plus identity)
 *    and accumulates struct hc_weights per key. The sampler side feeds it while capturing.
 *  - hc_tree: the merged on/off-CPU flame graph: root -> process -> thread -> user frames
 *    (outermost first) -> kernel frames. Values are inclusive, in nanoseconds.
 *  - struct hc_profile: one `hotcold-profile/1` document; encoders to JSON and folded stacks.
 *
 * Strings passed in are copied (interned) by the callee; returned pointers are borrowed and
 * live as long as the object that returned them.
 */
#ifndef HOTCOLD_PROFILE_H
#define HOTCOLD_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#define HC_PROFILE_SCHEMA "hotcold-profile/1"

/* ---- weights: one unit, nanoseconds ---- */

struct hc_weights {
	uint64_t on_cpu_ns;   /* samples x period_ns */
	uint64_t off_cpu_ns;  /* blocked (measured) */
	uint64_t runqueue_ns; /* runnable, waiting for a CPU (measured) */
	uint64_t samples;     /* on-CPU samples behind on_cpu_ns */
};

static inline uint64_t hc_weights__value(const struct hc_weights *w)
{
	return w->on_cpu_ns + w->off_cpu_ns + w->runqueue_ns;
}

void hc_weights__add(struct hc_weights *dst, const struct hc_weights *src);

/* ---- stack table: key (u64 words) -> index, weights ---- */

struct hc_stacktab;

struct hc_stacktab *hc_stacktab__new(void);
void hc_stacktab__free(struct hc_stacktab *tab);
/* Intern a key of n words (n may be 0). Returns its index (>= 0), or -ENOMEM. */
int64_t hc_stacktab__intern(struct hc_stacktab *tab, const uint64_t *key, size_t n);
size_t hc_stacktab__count(const struct hc_stacktab *tab);
/* Borrowed, valid until the next intern (the table may grow). */
const uint64_t *hc_stacktab__key(const struct hc_stacktab *tab, size_t idx, size_t *n);
struct hc_weights *hc_stacktab__weights(struct hc_stacktab *tab, size_t idx);
/* Bytes of heap the table holds (for RSS accounting and docs). */
size_t hc_stacktab__memory_bytes(const struct hc_stacktab *tab);

/* ---- the flame graph tree ---- */

enum hc_node_kind {
	HC_NODE_ROOT = 0,
	HC_NODE_PROCESS, /* name = process comm, id = pid (tgid) */
	HC_NODE_THREAD,	 /* name = thread comm, id = tid */
	HC_NODE_USER,	 /* a user frame */
	HC_NODE_KERNEL,	 /* a kernel frame */
	HC_NODE_WAKER,	 /* who woke a blocked path: name = waker thread comm, id = waker tid,
			  * offset = waker pid (tgid); the waker's frames, if taken, follow */
	HC_NODE_LOCK,	 /* --locks: the kernel lock a blocked path waited for, after its kernel
			  * frames: name = its kind ("rwsem:W"), then its name when known */
};
#define HC_NODE_KIND_MAX HC_NODE_LOCK

/* JSON `kind` strings: "root", "process", "thread", "user", "kernel", "waker", "lock". */
const char *hc_node_kind__name(enum hc_node_kind kind);

/* One step of a path from the root. Two steps name the same node when kind, name, module,
 * id, offset and inlined are all equal. */
struct hc_path_elem {
	enum hc_node_kind kind;
	const char *name;   /* never NULL: unresolved frames are named "[unknown]" */
	const char *module; /* NULL when none (e.g. vmlinux, process/thread nodes) */
	uint64_t id;	    /* process: pid; thread: tid; frames: 0 */
	int64_t offset;	    /* unresolved user frames: offset into module; otherwise -1 */
	/* Frames only: a function the compiler inlined into the frame before it (from DWARF).
	 * An inlined frame and a real frame of the same name are different nodes. */
	bool inlined;
};

struct hc_node; /* opaque */
struct hc_tree;

struct hc_tree *hc_tree__new(void);
void hc_tree__free(struct hc_tree *tree);
/* Add w to the root and to every node on the path (creating nodes as needed). -ENOMEM. */
int hc_tree__add_path(struct hc_tree *tree, const struct hc_path_elem *path, size_t n,
		      const struct hc_weights *w);
size_t hc_tree__node_count(const struct hc_tree *tree); /* including the root */
const struct hc_node *hc_tree__root(const struct hc_tree *tree);

/* Read-only traversal. Children are in insertion order until hc_tree__sort() is called. */
enum hc_node_kind hc_node__kind(const struct hc_node *node);
const char *hc_node__name(const struct hc_node *node);
const char *hc_node__module(const struct hc_node *node);
uint64_t hc_node__id(const struct hc_node *node);
int64_t hc_node__offset(const struct hc_node *node);
bool hc_node__inlined(const struct hc_node *node);
const struct hc_weights *hc_node__weights(const struct hc_node *node);
size_t hc_node__child_count(const struct hc_node *node);
const struct hc_node *hc_node__child(const struct hc_node *node, size_t i);
/* Sort every node's children by value, descending, ties by name: deterministic output. */
void hc_tree__sort(struct hc_tree *tree);

/* ---- the profile document ---- */

struct hc_cpu_samples {
	uint32_t cpu;
	uint64_t expected; /* frequency x duration */
	uint64_t samples;  /* cpu-clock samples the BPF program saw on this CPU (idle included) */
	uint64_t idle_ns;  /* idle task's time on this CPU, from the scheduler */
};

struct hc_count {
	char *name; /* owned */
	uint64_t count;
};

struct hc_profile {
	char *host;	       /* owned; uname nodename */
	char *kernel;	       /* owned; uname release */
	int64_t started_at_ns; /* CLOCK_REALTIME, ns since the epoch */
	uint64_t duration_ns;

	struct {
		double frequency_hz;
		uint64_t period_ns;
		uint32_t cpus;
		uint64_t expected_samples;
		uint64_t samples;      /* delivered, idle included */
		uint64_t idle_samples; /* samples of the idle task: in totals, not in the tree */
		uint64_t filtered_samples;	/* of tasks -p / --comm leave out: counted only */
		struct hc_cpu_samples *per_cpu; /* owned array */
		size_t n_per_cpu;
		struct hc_count *lost; /* owned array: reason -> samples not delivered */
		size_t n_lost;
	} sampling;

	struct {
		uint64_t on_cpu_ns;
		uint64_t off_cpu_ns;
		uint64_t runqueue_ns;
		uint64_t idle_ns;
		uint64_t cpu_unclaimed_ns; /* idle CPU time while tasks waited on another CPU */
		uint64_t kernel_samples;   /* samples with arg0 != 0 (kernel PC) */
		uint64_t user_samples;	   /* samples with arg1 != 0 (user PC) */
	} totals;

	struct hc_count *symbolize; /* owned array: symbolization counters by name */
	size_t n_symbolize;

	json_t *scheduler;    /* owned reference or NULL: off-CPU settings and counters */
	json_t *unwind;	      /* owned reference or NULL: how user stacks were unwound */
	json_t *range;	      /* owned reference or NULL: serve's query and pruning (docs/api.md) */
	struct hc_tree *tree; /* owned */
	/* --locks (docs/locks.md): the section's members but its flame graph (owned reference),
	 * and that flame graph (owned); both NULL without --locks. */
	json_t *locks;
	struct hc_tree *lock_tree;
	json_t *histograms; /* owned reference; an empty object until the off-CPU issue */
};

/* A zeroed profile with an empty tree and histograms object. NULL + errno on failure. */
struct hc_profile *hc_profile__new(void);
void hc_profile__free(struct hc_profile *p);
/* Append a counter to p->sampling.lost (or p->symbolize). -ENOMEM. */
int hc_profile__add_lost(struct hc_profile *p, const char *reason, uint64_t count);
int hc_profile__add_symbolize(struct hc_profile *p, const char *name, uint64_t count);

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

/* Which weights an export carries (a bit set; HC_W_ALL: the merged on/off-CPU view). */
enum hc_weight_bits {
	HC_W_ON = 1u << 0,   /* on_cpu_ns (and the samples behind it) */
	HC_W_OFF = 1u << 1,  /* off_cpu_ns: blocked */
	HC_W_RUNQ = 1u << 2, /* runqueue_ns: waiting for a CPU */
	HC_W_ALL = HC_W_ON | HC_W_OFF | HC_W_RUNQ,
};

/* The selected part of w, in ns. */
uint64_t hc_weights__select(const struct hc_weights *w, unsigned int weights);

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
