/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The unwind-table publisher (issue 21, stage 2; docs/unwinding.md): what the BPF walk reads
 * of a process, written into two areas the caller owns (the mmap'd `uw_rows` and `uw_procs`
 * array maps, bpf/unwind.h). Per process a slot: its executable objects' spans, biases and
 * where their rows are. Per object its compiled table (symbolize/uwtable.h), compiled once,
 * keyed by the symbolizer's object id, and shared by every process that maps it.
 *
 * Concurrency: one thread calls everything here (as with the symbolizer it reads). The BPF
 * side reads both areas at the same time from any CPU, so
 *   - a slot is only ever written under its seqlock (seq odd while written, then even, with
 *     release ordering), and an object's rows are written before any slot that names them;
 *   - rows are freed only by hc_uwpub__prune(), and only those of objects that no published
 *     slot names (a re-publish that drops an object keeps its rows until then): a walk that
 *     read a slot just before it changed still finds the rows it names intact.
 *
 * Losses are counted (struct hc_uwpub_stats): an object with no table is published with
 * n_rows 0, which the walk reads as "frame pointers here".
 */
#ifndef HOTCOLD_SYMBOLIZE_UWPUB_H
#define HOTCOLD_SYMBOLIZE_UWPUB_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind.h"
#include "symbolize/symbolizer.h"
#include "symbolize/uwtable.h"

/* The two areas, borrowed: they must outlive the publisher, which never frees them. */
struct hc_uwpub_area {
	struct hc_urow *rows; /* the uw_rows map's memory, n_rows entries */
	uint32_t n_rows;
	struct hc_uw_proc *procs; /* the uw_procs map's memory, n_procs entries */
	uint32_t n_procs;	  /* a power of two */
	/* When set: called before rows [0, end) are written, to make them writable (the
	 * sampler maps the rows as they are used, hc_sampler__uw_map_rows()). 0 or -errno: the
	 * table is left out as if it had not fit (table_full). NULL: all rows are writable. */
	int (*map_rows)(void *ctx, uint32_t end);
	/* When set: called before a slot is first written, to make it writable. 0 or -errno:
	 * the process is not published this time (-ENOMEM). */
	int (*map_slot)(void *ctx, uint32_t slot);
	void *map_ctx;
};

struct hc_uwpub_stats {
	uint64_t objects;	/* tables compiled and placed */
	uint64_t refused;	/* compile refused (-EBADMSG/-E2BIG): published without a table */
	uint64_t no_cfi;	/* no call frame information (-ENODATA), or not an x86-64 ELF
				 * (-ENOEXEC): published without a table, frame pointers */
	uint64_t table_full;	/* tables that did not fit in the rows left (or whose rows could
				 * not be mapped): frame pointers */
	uint64_t rows_used;	/* rows held now */
	uint64_t text_bytes;	/* executable segments' bytes of the objects whose rows are held */
	uint64_t processes;	/* slots written (first publish and re-publishes) */
	uint64_t slots_full;	/* no free slot among the probes: the process is not published */
	uint64_t maps_over;	/* objects left out: a process with more than HC_UW_MAPS */
	uint64_t unpublished;	/* slots freed (process gone) */
	uint64_t evicted;	/* objects whose rows were freed (no published process maps them) */
	uint64_t reread_failed; /* an object's CFI, let go after its first compile, could not
				 * be read again: published without its table this time */
	uint64_t ns;		/* time spent compiling and publishing */
	struct hc_uwtable_stats compile; /* summed over compiles (uwtable.h) */
};

struct hc_uwpub;

/*
 * A publisher over a zeroed area (as a new BPF array map is), which it then writes alone.
 * sym is borrowed and must outlive it. NULL and errno: EINVAL (n_procs not a power of two,
 * NULL areas), ENOMEM.
 */
struct hc_uwpub *hc_uwpub__new(struct hc_symbolizer *sym, const struct hc_uwpub_area *a);
/* Frees the bookkeeping only: the areas are the caller's, and stay as last written. */
void hc_uwpub__free(struct hc_uwpub *u);

/*
 * Publish p's executable objects (hc_symbolizer__modules) when its maps snapshot or identity
 * changed since we last published it: cheap otherwise (called for every record). Objects are
 * compiled once each and shared. A process with no free slot among its probes is counted
 * (slots_full) and tried again after a prune has freed slots. 0 or -errno: -ESRCH when p has
 * no maps (p NULL, stale, never read), -EINVAL for tgid 0 (a free slot's), -ENOMEM (nothing
 * published: the next call tries again).
 */
int hc_uwpub__process(struct hc_uwpub *u, struct hc_sym_proc *p);

/*
 * Publish every process running now (hc_symbolizer__list_processes()): before a window
 * opens, so that the threads asleep then are walked by the start iterator too. Processes
 * without user mappings (kernel threads) and those gone meanwhile are skipped. *n: how many
 * were published. 0 or -errno (-ENOMEM).
 */
int hc_uwpub__publish_running(struct hc_uwpub *u, size_t *n);

/*
 * Free the slots of processes the symbolizer no longer tracks (hc_symbolizer__tracks: call
 * hc_symbolizer__prune_gone() first), then the rows of objects no published process maps.
 * Objects that did not fit (table_full) and now would are compiled again at their processes'
 * next hc_uwpub__process(). 0 or -ENOMEM (then nothing changed).
 */
int hc_uwpub__prune(struct hc_uwpub *u);

void hc_uwpub__stats(const struct hc_uwpub *u, struct hc_uwpub_stats *out);

/* For tests: the rows allocator (first fit over [0, n_rows), free extents coalesced). */
/* n rows (n > 0): 0 and *at, or -ENOSPC. */
int hc__uwpub_rows_alloc(struct hc_uwpub *u, uint32_t n, uint32_t *at);
/* Give back [at, at + n): 0, or -EINVAL when out of the area or overlapping a free extent. */
int hc__uwpub_rows_free(struct hc_uwpub *u, uint32_t at, uint32_t n);
/* The free extents in increasing order, at most max of them; returns how many there are. */
size_t hc__uwpub_rows_extents(const struct hc_uwpub *u, uint32_t *at, uint32_t *len, size_t max);

#endif
