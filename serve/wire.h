/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * serve/wire: the records the collector (privileged: BPF, /proc, symbolization) sends to the
 * server (unprivileged: the store and HTTP) over a local stream socket, once per second.
 * Both ends are the same binary, so fields are in host byte order; the reader still checks
 * every length, since it must not trust bytes to be well formed.
 *
 * Each record is a header {u32 type, u32 payload length} and a payload:
 *   FRAME  u32 fid, u32 kind (| HC_WIRE_INLINED for an inlined frame), u64 id, i64 offset,
 *          u32 name_len, u32 module_len (HC_WIRE_NO_MODULE: none), name bytes, module bytes.
 *          fid = frames sent so far + 1.
 *   ADD    i64 sec, u64 on_cpu_ns, off_cpu_ns, runqueue_ns, samples, u32 n, u32 fid[n]
 *   HEAT   i64 sec, u32 rows[HC_WIRE_HEAT_ROWS] (on-CPU samples per 20 ms of the second)
 *   HIST   i64 sec, u32 hist, u32 pid, i64 value, u64 count, u32 key_len, key bytes
 *   SEAL   i64 sec: every second up to sec is complete
 *   STATUS struct hc_wire_status: the collector's settings and counters, typed
 *          (profile/counters.h; the reader checks the size and the number of counters)
 *   RESET  (no payload) frame ids start again from 1: the collector's frame table is bounded
 * serve --locks adds the waiters' paths, with frame ids of their own (a second table on each
 * side: the lock store's), and the lock kinds' per-second counters:
 *   LOCK_FRAME, LOCK_ADD, LOCK_RESET  as FRAME, ADD, RESET, for the lock store
 *   COUNTER i64 sec, u32 counter (enum hc_store_counter), u64 value, u32 key_len, key bytes
 * (the lock_wait_ns observations are HIST records of HC_STORE_H_LOCK_WAIT_NS).
 */
#ifndef HOTCOLD_SERVE_WIRE_H
#define HOTCOLD_SERVE_WIRE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/weights.h"
#include "profile/tree.h"
#include "profile/counters.h"

enum hc_wire_type {
	HC_WIRE_FRAME = 1,
	HC_WIRE_ADD,
	HC_WIRE_HEAT,
	HC_WIRE_HIST,
	HC_WIRE_SEAL,
	HC_WIRE_STATUS,
	HC_WIRE_RESET,
	HC_WIRE_LOCK_FRAME,
	HC_WIRE_LOCK_ADD,
	HC_WIRE_LOCK_RESET,
	HC_WIRE_COUNTER,
};

#define HC_WIRE_HEAT_ROWS 50
#define HC_WIRE_NO_MODULE UINT32_MAX
#define HC_WIRE_INLINED (1u << 8)     /* in FRAME's kind word */
#define HC_WIRE_MAX_RECORD (4u << 20) /* payload bytes; a larger header is a broken stream */
#define HC_WIRE_MAX_PATH 1024
#define HC_WIRE_MAX_STR 4096

/* STATUS's flags */
#define HC_WIRE_ST_OFFCPU (1u << 0)
#define HC_WIRE_ST_UNWIND_FP (1u << 1)
#define HC_WIRE_ST_LOCKS (1u << 2)
#define HC_WIRE_ST_UNWIND_TABLE (1u << 3)

/* The collector's settings, and its counters since start (families SAMPLING, LOST, SCHEDULER,
 * SYMBOLIZE, UNWIND, LOCKS, COLLECTOR; the server fills the rest). */
struct hc_wire_status {
	double frequency_hz;
	uint64_t period_ns;
	int64_t started_at_ns;
	uint32_t cpus;
	uint32_t flags;	     /* HC_WIRE_ST_* */
	uint32_t n_counters; /* HC_C_MAX */
	uint32_t reserved;   /* 0 */
	struct hc_counters c;
};

/* ---- writing: records appended to a growable buffer, sent in one go ---- */

struct hc_wire_buf {
	unsigned char *data;
	size_t len, cap;
	int err; /* first -ENOMEM; appends after it are no-ops */
};

void hc_wire_buf__reset(struct hc_wire_buf *b);
void hc_wire_buf__release(struct hc_wire_buf *b);
void hc_wire__frame(struct hc_wire_buf *b, uint32_t fid, const struct hc_path_elem *e);
void hc_wire__add(struct hc_wire_buf *b, int64_t sec, const struct hc_weights *w,
		  const uint32_t *fids, uint32_t n);
void hc_wire__heat(struct hc_wire_buf *b, int64_t sec, const uint32_t rows[HC_WIRE_HEAT_ROWS]);
void hc_wire__hist(struct hc_wire_buf *b, int64_t sec, uint32_t hist, uint32_t pid, int64_t value,
		   uint64_t count, const char *key);
void hc_wire__seal(struct hc_wire_buf *b, int64_t sec);
void hc_wire__status(struct hc_wire_buf *b, const struct hc_wire_status *st);
void hc_wire__reset(struct hc_wire_buf *b);
/* --locks: the lock store's frames, paths and frame resets; a counter of second sec. */
void hc_wire__lock_frame(struct hc_wire_buf *b, uint32_t fid, const struct hc_path_elem *e);
void hc_wire__lock_add(struct hc_wire_buf *b, int64_t sec, const struct hc_weights *w,
		       const uint32_t *fids, uint32_t n);
void hc_wire__lock_reset(struct hc_wire_buf *b);
void hc_wire__counter(struct hc_wire_buf *b, int64_t sec, uint32_t counter, const char *key,
		      uint64_t value);
/*
 * Write the whole buffer to fd (no SIGPIPE). Waits while the reader is slow (backpressure:
 * the BPF ring buffer then fills and counts its drops), but gives up with -EINTR as soon as
 * *stop is set, so a stuck reader cannot hold the writer. 0 or -errno.
 */
int hc_wire_buf__send(struct hc_wire_buf *b, int fd, const volatile sig_atomic_t *stop);

/* ---- reading ---- */

struct hc_wire_rec {
	enum hc_wire_type type;
	int64_t sec;
	/* FRAME, LOCK_FRAME */
	uint32_t fid;
	struct hc_path_elem elem; /* name/module point into the reader's buffer (NUL-ended) */
	/* ADD, LOCK_ADD */
	struct hc_weights w;
	uint32_t n;
	uint32_t fids[HC_WIRE_MAX_PATH];
	/* HEAT */
	uint32_t rows[HC_WIRE_HEAT_ROWS];
	/* HIST; COUNTER: counter, count (its value), key */
	uint32_t hist, pid;
	int64_t value;
	uint64_t count;
	const char *key; /* NUL-ended, into the buffer */
	uint32_t counter;
	/* STATUS */
	struct hc_wire_status status;
};

struct hc_wire_reader {
	unsigned char *data;
	size_t len, cap, pos;
};

void hc_wire_reader__release(struct hc_wire_reader *r);
/* Read what fd has (one read()). >0 bytes read, 0 at end of stream, -errno. */
ssize_t hc_wire_reader__fill(struct hc_wire_reader *r, int fd);
/* Feed bytes from memory (tests, fuzzing). 0 or -ENOMEM. */
int hc_wire_reader__feed(struct hc_wire_reader *r, const void *buf, size_t len);
/*
 * The next complete record: 1 and *out filled (pointers valid until the next call), 0 when
 * more bytes are needed, -EBADMSG for a malformed record (the stream cannot continue).
 */
int hc_wire_reader__next(struct hc_wire_reader *r, struct hc_wire_rec *out);

#endif
