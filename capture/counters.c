// SPDX-License-Identifier: GPL-2.0-only
#include "capture/counters.h"

#include <string.h>

#include "bpf/unwind.h"

/* The BPF counters reported as counters of their own (the others are inputs of figures the
 * aggregation computes, or not reported). */
static const struct {
	enum hc_counter bpf;
	enum hc_counter_id id;
} bpf_ids[] = {
	{HC_CNT_SEEN, HC_C_SAMPLES},
	{HC_CNT_IDLE, HC_C_IDLE_SAMPLES},
	{HC_CNT_FILTERED, HC_C_FILTERED_SAMPLES},
	{HC_CNT_RINGBUF_FULL, HC_C_LOST_RINGBUF_FULL},
	{HC_CNT_KSTACK_ERR, HC_C_LOST_KSTACK_ERROR},
	{HC_CNT_USTACK_ERR, HC_C_LOST_USTACK_ERROR},
	{HC_CNT_EXEC_LOST, HC_C_LOST_EXEC},
	{HC_CNT_SWITCHES, HC_C_SCHED_SWITCHES},
	{HC_CNT_STACK_CAPTURED, HC_C_SCHED_STACKS_CAPTURED},
	{HC_CNT_STACK_REUSED, HC_C_SCHED_STACKS_REUSED},
	{HC_CNT_STACK_BUDGET, HC_C_SCHED_STACKS_NOT_CAPTURED},
	{HC_CNT_OFF_RINGBUF_FULL, HC_C_LOST_OFFCPU_RINGBUF_FULL},
	{HC_CNT_THIST_LOST, HC_C_LOST_SCHED_HIST},
	{HC_CNT_WAKER_LOST, HC_C_LOST_WAKER},
	{HC_CNT_STATE_NOMEM, HC_C_LOST_TASK_STATE_NOMEM},
	{HC_CNT_KSTACK_ERR_OFF, HC_C_LOST_OFFCPU_KSTACK_ERROR},
	{HC_CNT_USTACK_ERR_OFF, HC_C_LOST_OFFCPU_USTACK_ERROR},
	{HC_CNT_SWITCHIN_MISSED, HC_C_SCHED_SWITCH_IN_UNSEEN},
	{HC_CNT_UCOPY, HC_C_UNW_COPIES},
	{HC_CNT_UCOPY_BYTES, HC_C_UNW_COPY_BYTES},
	{HC_CNT_UCOPY_BUDGET, HC_C_UNW_COPY_OVER_BUDGET},
	{HC_CNT_UCOPY_FAULT, HC_C_UNW_COPY_UNREADABLE},
	{HC_CNT_UCOPY_LOST, HC_C_UNW_COPY_LOST},
	{HC_CNT_UW_WALKS, HC_C_UNW_TABLE_WALKS},
	{HC_CNT_UW_NO_PROC, HC_C_UNW_TABLE_NO_PROCESS},
	{HC_CNT_UW_BUSY, HC_C_UNW_TABLE_BUSY},
	{HC_CNT_UW_PARENT, HC_C_UNW_TABLE_PARENT},
	{HC_CNT_UW_FP_FRAMES, HC_C_UNW_TABLE_FP_FRAMES},
	{HC_CNT_UW_FRAMES, HC_C_UNW_TABLE_FRAMES},
	{HC_CNT_UW_CACHE_HITS, HC_C_UNW_TABLE_CACHE_HITS},
	{HC_CNT_UW_END + HC_UW_COMPLETE, HC_C_UNW_TABLE_END_COMPLETE},
	{HC_CNT_UW_END + HC_UW_DEPTH, HC_C_UNW_TABLE_END_DEPTH},
	{HC_CNT_UW_END + HC_UW_NO_PROCESS, HC_C_UNW_TABLE_END_NO_PROCESS},
	{HC_CNT_UW_END + HC_UW_NO_MAPPING, HC_C_UNW_TABLE_END_NO_MAPPING},
	{HC_CNT_UW_END + HC_UW_NO_TABLE, HC_C_UNW_TABLE_END_NO_TABLE},
	{HC_CNT_UW_END + HC_UW_UNSUPPORTED, HC_C_UNW_TABLE_END_UNSUPPORTED},
	{HC_CNT_UW_END + HC_UW_READ_ERROR, HC_C_UNW_TABLE_END_READ_ERROR},
	{HC_CNT_UW_END + HC_UW_BAD_FRAME, HC_C_UNW_TABLE_END_BAD_FRAME},
	{HC_CNT_UW_END + HC_UW_BAD_PC, HC_C_UNW_TABLE_END_BAD_PC},
	{HC_CNT_LOCK_LOST, HC_C_LOCK_DROP_RINGBUF_FULL},
	{HC_CNT_LOCK_LOST_NS, HC_C_LOCK_DROP_RINGBUF_FULL_NS},
	{HC_CNT_LOCK_NESTED, HC_C_LOCK_DROP_NESTED},
	{HC_CNT_LOCK_UNMATCHED, HC_C_LOCK_DROP_UNMATCHED},
	{HC_CNT_LOCK_NOMEM, HC_C_LOCK_DROP_TASK_STATE_NOMEM},
};

static const enum hc_counter_id end_ids[HC_UNWIND_END_MAX] = {
	[HC_UNWIND_COMPLETE] = HC_C_UNW_END_COMPLETE,
	[HC_UNWIND_STACK_END] = HC_C_UNW_END_STACK_END,
	[HC_UNWIND_NO_MODULE] = HC_C_UNW_END_NO_MODULE,
	[HC_UNWIND_NO_CFI] = HC_C_UNW_END_NO_CFI,
	[HC_UNWIND_DEPTH] = HC_C_UNW_END_DEPTH,
};

static void fill_agg(uint64_t *v, const struct hc_capture_stats *as)
{
	v[HC_C_LOST_INGEST_ERROR] = as->ingest_errors;
	v[HC_C_LOST_HISTOGRAM_ERROR] = as->hist_errors;
	v[HC_C_LOST_WAKER_STACK_MISSING] = as->waker_stack_missing;
	v[HC_C_LOST_OFFCPU_NS] += as->offcpu_lost_ns;
	v[HC_C_SCHED_OFF_CPU_NS] = as->off_ns;
	v[HC_C_SCHED_RUNQUEUE_NS] = as->runqueue_ns;
	v[HC_C_SCHED_INTERVALS_BLOCKED] = as->blocked_intervals;
	v[HC_C_SCHED_INTERVALS_PREEMPTED] = as->preempted_intervals;
	v[HC_C_SCHED_BELOW_MIN_BLOCK_OFF_NS] = as->short_off_ns;
	v[HC_C_SCHED_BELOW_MIN_BLOCK_RQ_NS] = as->short_rq_ns;
	v[HC_C_SCHED_FLUSHES] = as->offcpu_flushes;
	v[HC_C_SCHED_BEFORE_RETENTION_NS] = as->expired_ns;
	v[HC_C_SCHED_UNCLAIMED_NS] = as->unclaimed_ns;
	v[HC_C_SYM_TRUNCATED_USER_STACKS] = as->truncated_ustacks;
	v[HC_C_SYM_UNMAPPED_USER_STACKS] = as->ustacks_unmapped;
	v[HC_C_SYM_TRUNCATED_KERNEL_STACKS] = as->truncated_kstacks;
	v[HC_C_SYM_INLINE_DROPPED] = as->inline_dropped;
	v[HC_C_UNW_USTACKS_DWARF] = as->ustacks_dwarf;
	v[HC_C_UNW_USTACKS_DWARF_TRUNCATED] = as->ustacks_dwarf_truncated;
	v[HC_C_UNW_USTACKS_FP] = as->ustacks_fp;
	v[HC_C_UNW_USTACKS_FALLBACK] = as->ustacks_fp_fallback;
	v[HC_C_UNW_USTACKS_TABLE] = as->ustacks_table;
	v[HC_C_UNW_USTACKS_TABLE_TRUNCATED] = as->ustacks_table_truncated;
}

static void fill_sym(uint64_t *v, const struct hc_symbolizer_stats *ss)
{
	v[HC_C_SYM_PROCESSES] = ss->processes;
	v[HC_C_SYM_PROCESS_GONE] = ss->process_gone;
	v[HC_C_SYM_PID_REUSED] = ss->pid_reused;
	v[HC_C_SYM_OBJECTS] = ss->objects;
	v[HC_C_SYM_OBJECT_OPEN_ERR] = ss->object_open_err;
	v[HC_C_SYM_ELF_ERR] = ss->elf_err;
	v[HC_C_SYM_NO_SYMBOLS] = ss->no_symbols;
	v[HC_C_SYM_USER_UNRESOLVED] = ss->user_unresolved;
	v[HC_C_SYM_FSTART_FRAMES] = ss->fstart_frames;
	v[HC_C_SYM_KERNEL_UNRESOLVED] = ss->kernel_unresolved;
	v[HC_C_SYM_DWARF_OBJECTS] = ss->dwarf_objects;
	v[HC_C_SYM_DWARF_OVER_BUDGET] = ss->dwarf_over_budget;
	v[HC_C_SYM_DWARF_ERR] = ss->dwarf_err;
	v[HC_C_SYM_INLINE_FRAMES] = ss->inline_frames;
	v[HC_C_SYM_INLINE_TRUNCATED] = ss->inline_truncated;
	v[HC_C_SYM_DEBUG_FOUND_BUILD_ID] = ss->debug.found[HC_DEBUG_BUILD_ID];
	v[HC_C_SYM_DEBUG_FOUND_DEBUGLINK] = ss->debug.found[HC_DEBUG_DEBUGLINK];
	v[HC_C_SYM_DEBUG_FOUND_PATH] = ss->debug.found[HC_DEBUG_PATH];
	v[HC_C_SYM_DEBUG_REFUSED_BUILD_ID] = ss->debug.refused[HC_DEBUG_REF_BUILD_ID];
	v[HC_C_SYM_DEBUG_REFUSED_CRC] = ss->debug.refused[HC_DEBUG_REF_CRC];
	v[HC_C_SYM_DEBUG_REFUSED_CORRUPT] = ss->debug.refused[HC_DEBUG_REF_CORRUPT];
}

static void fill_unwinder(uint64_t *v, const struct hc_unwind_stats *us)
{
	v[HC_C_UNW_STACKS] = us->stacks;
	v[HC_C_UNW_FRAMES] = us->frames;
	for (int k = 0; k < HC_UNWIND_END_MAX; k++)
		v[end_ids[k]] = us->ends[k];
	v[HC_C_UNW_NO_PROCESS] = us->no_process;
	v[HC_C_UNW_SESSIONS] = us->sessions;
	v[HC_C_UNW_NS] = us->ns;
	v[HC_C_UNW_STASH_MISSING] = us->stash_missing;
}

static void fill_tables(uint64_t *v, const struct hc_uwpub_stats *ps)
{
	v[HC_C_UNW_TABLE_ROWS_USED] = ps->rows_used;
	v[HC_C_UNW_TABLE_TEXT_BYTES] = ps->text_bytes;
	v[HC_C_UNW_TABLE_OBJECTS] = ps->objects;
	v[HC_C_UNW_TABLE_REFUSED] = ps->refused;
	v[HC_C_UNW_TABLE_NO_CFI] = ps->no_cfi;
	v[HC_C_UNW_TABLE_FULL] = ps->table_full;
	v[HC_C_UNW_TABLE_REREAD_FAILED] = ps->reread_failed;
	v[HC_C_UNW_TABLE_PROCESSES] = ps->processes;
	v[HC_C_UNW_TABLE_SLOTS_FULL] = ps->slots_full;
	v[HC_C_UNW_TABLE_MAPS_OVER] = ps->maps_over;
	v[HC_C_UNW_TABLE_EVICTED] = ps->evicted;
	v[HC_C_UNW_TABLE_NS] = ps->ns;
}

static void fill_locks(uint64_t *v, const struct hc_capture_lock_stats *ls, uint64_t extra_errors)
{
	v[HC_C_LOCK_EVENTS] = ls->events;
	v[HC_C_LOCK_WAIT_NS] = ls->wait_ns;
	v[HC_C_LOCK_FAILED] = ls->failed;
	v[HC_C_LOCK_NO_STACK] = ls->no_stack;
	v[HC_C_LOCK_DROP_INGEST_ERROR] = ls->ingest_errors + extra_errors;
	v[HC_C_LOCK_DROP_EXPIRED] = ls->expired;
}

void hc_counters__fill_capture(struct hc_counters *c, const struct hc_capture_figures *f)
{
	uint64_t *v = c->v;

	for (size_t i = 0; i < sizeof(bpf_ids) / sizeof(bpf_ids[0]); i++)
		v[bpf_ids[i].id] = f->cnt->total[bpf_ids[i].bpf];
	v[HC_C_LOST_DECODE_ERROR] = f->cnt->decode_errors;
	v[HC_C_LOST_OFFCPU_NS] = f->cnt->total[HC_CNT_OFF_LOST_NS];
	v[HC_C_LOST_SEND_ERROR] = f->send_errors;
	if (f->as)
		fill_agg(v, f->as);
	if (f->ss)
		fill_sym(v, f->ss);
	if (f->us)
		fill_unwinder(v, f->us);
	if (f->ps)
		fill_tables(v, f->ps);
	v[HC_C_UNW_TABLE_MB] = f->table_mb;
	if (f->ls)
		fill_locks(v, f->ls, f->lock_ingest_errors);
}
