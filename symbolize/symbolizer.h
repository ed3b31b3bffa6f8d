/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * symbolize/: addresses -> names. A library: no BPF, no HTTP, never prints.
 *
 * Flow used by the sampler side (capture/), once per record:
 *   1. hc_symbolizer__process(tgid, start) -> the process's handle, its identity checked once;
 *      on a process's first sample or exec, while it lives, this snapshots /proc/PID/maps and
 *      opens each mapped file (via /proc/PID/map_files or /proc/PID/root/PATH, so other mount
 *      namespaces and deleted files work) once per (dev, inode). Cheap when already known.
 *   2. hc_symbolizer__normalize_proc(handle, ip) -> a location {object id, file offset},
 *      stable across processes: interning stacks by location merges identical code in many
 *      processes. The unwinder (symbolize/unwind.h) takes the same handle.
 *   3. At the end, hc_symbolizer__resolve_user(loc) / __resolve_kernel(ip) -> names. ELF files
 *      are parsed lazily, once per object, cached by build-id (or dev+inode).
 *
 * Every function returns 0 or -errno; constructors return NULL and set errno.
 * Strings returned in struct hc_frame_info are owned by the symbolizer and stay valid
 * until hc_symbolizer__free().
 */
#ifndef HOTCOLD_SYMBOLIZER_H
#define HOTCOLD_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "symbolize/debugfile.h"

/*
 * Where the symbolizer's files come from. Without it (opts.io NULL) they are opened directly
 * under proc_root. `hotcold` itself symbolizes in a sandbox with no privileges, and gets the
 * descriptors from its privileged half (privsep/broker.h), which opens them and parses
 * nothing. Each returns a descriptor the caller owns, or -errno.
 */
struct hc_symbolizer_io {
	/* /proc/TGID/maps and /proc/TGID/stat, both of the same process (a reused pid can not
	 * slip between them). */
	int (*open_proc)(void *ctx, uint32_t tgid, int *maps_fd, int *stat_fd);
	int (*open_status)(void *ctx, uint32_t tgid);
	/* The file mapped at [start, end) in tgid: /proc/TGID/map_files/START-END. */
	int (*open_mapped)(void *ctx, uint32_t tgid, uint64_t start, uint64_t end);
	/* tgid's JIT map: perf-NSPID.map in the /tmp of its own root. */
	int (*open_perfmap)(void *ctx, uint32_t tgid, uint32_t nspid);
	int (*open_kallsyms)(void *ctx);
	/* 0 while tgid exists (a zombie too), -ENOENT once it is gone. Asked by the side that
	 * sees every process: the sandbox's own /proc may hide other users' (hidepid). */
	int (*alive)(void *ctx, uint32_t tgid);
	void *ctx;
};

struct hc_symbolizer_opts {
	const char *proc_root; /* "/proc" when NULL */
	const char *kallsyms;  /* "/proc/kallsyms" when NULL */
	/* "/usr/lib/debug" when NULL: where separate debug files are looked for (debugfile.h),
	 * on the host and inside a containerised process's root. Must be absolute. */
	const char *debug_root;
	/* Where JIT maps perf-PID.map are. NULL: in the process's own /tmp, as the runtime wrote
	 * it: PROC_ROOT/PID/root/tmp/perf-NSPID.map, NSPID its pid in its own pid namespace
	 * (containers, systemd's PrivateTmp). Given: DIR/perf-PID.map. */
	const char *perfmap_dir;
	bool no_demangle; /* keep C++/Rust names mangled */
	/* No inline frames: DWARF is never read, resolve_user_inline() gives one frame. */
	bool no_inline;
	/* Bytes of inline index all objects together may hold (hc_dwinline__bytes()); also what
	 * one object's DWARF sections, read while its index is built, may take of what is left.
	 * 0: HC_SYM_DWARF_MAX_BYTES. Objects past it get no inline frames (dwarf_over_budget). */
	size_t dwarf_max_bytes;
	const struct hc_symbolizer_io *io; /* NULL: open files directly (copied) */
};

/* For tests: the innermost pid of the NSpid line in a /proc/PID/status text (which must
 * start with '\n' or hold the line after one). 0, -ENOENT (no line), -EINVAL. */
int hc__status_nspid(const char *status, uint32_t *out);
/* For tests: field 22 (starttime, clock ticks since boot) of a /proc/PID/stat text.
 * 0 or -EINVAL. */
int hc__stat_starttime(const char *stat, size_t len, uint64_t *ticks);

/* Object id 0: the address fell in no known mapping; off is then the raw address. */
#define HC_OBJ_UNKNOWN 0u

struct hc_uloc {
	uint32_t obj; /* interned object id (file by dev+inode, or a process's JIT map) */
	uint64_t off; /* file offset within obj (absolute address for JIT/anon and unknown) */
};

struct hc_frame_info {
	const char *name;   /* function name (demangled), or NULL when unresolved */
	const char *module; /* user: basename of the object ("libc.so.6");
			     * kernel: module name ("ext4"), NULL for vmlinux itself */
	uint64_t offset;    /* resolved: offset into the function; unresolved: offset into module
			     * (user frames only: never a raw kernel address); inlined: 0;
			     * fstart: the function's start, as a file offset into module */
	bool inlined;	    /* a function the compiler inlined into the frame before it */
	/* No symbol, but the object's call frame information (symbolize/fstarts.h) knows the
	 * function holding the address: name is "MODULE+0xSTART", START the function's start
	 * as a file offset into the object (what unresolved frames' offsets are too). */
	bool fstart;
};

/* Inlined functions resolve_user_inline() gives per address, at most. */
#define HC_SYM_INLINE_MAX 32

/* Default of hc_symbolizer_opts.dwarf_max_bytes. */
#define HC_SYM_DWARF_MAX_BYTES (256u << 20)

/* Bytes of function-start tables (16 per function of an object without a full symbol table)
 * all objects together may hold; objects past it keep per-address [unknown] frames. */
#define HC_SYM_FSTARTS_MAX_BYTES (64u << 20)

struct hc_symbolizer_stats {
	uint64_t processes;	  /* maps snapshots taken */
	uint64_t process_gone;	  /* add_process on a process that had already exited */
	uint64_t pid_reused;	  /* a pid seen again with another start time: new process */
	uint64_t objects;	  /* distinct objects opened */
	uint64_t object_open_err; /* mapped file could not be opened */
	uint64_t elf_err;	  /* object opened but not parseable as ELF */
	uint64_t no_symbols;	  /* ELF without .symtab/.dynsym/.gnu_debugdata/debuginfo */
	uint64_t user_unresolved; /* resolve_user calls that found no symbol nor function start */
	uint64_t fstart_frames;	  /* resolve_user calls answered by a function start (fstart) */
	uint64_t kernel_unresolved;
	uint64_t dwarf_objects;		 /* objects whose DWARF gives inline frames */
	uint64_t dwarf_over_budget;	 /* objects with DWARF left unread: over dwarf_max_bytes */
	uint64_t dwarf_err;		 /* DWARF there but unusable (corrupt, dwz file missing) */
	uint64_t inline_frames;		 /* inlined frames handed out by resolve_user_inline */
	uint64_t inline_truncated;	 /* inline chains cut to the caller's max */
	struct hc_debugfile_stats debug; /* separate debug files found and candidates refused */
};

struct hc_symbolizer;

struct hc_symbolizer *hc_symbolizer__new(const struct hc_symbolizer_opts *opts);
void hc_symbolizer__free(struct hc_symbolizer *sym);

/* Read kallsyms (vmlinux and modules), sorted once. -EPERM when addresses are hidden. */
int hc_symbolizer__load_kernel(struct hc_symbolizer *sym);

/* A process as the symbolizer keeps it: its identity, maps snapshot and objects. */
struct hc_sym_proc;

/*
 * Look tgid up once for one record (checking its identity), snapshotting its mappings now
 * when they are not known or stale: *out is its handle, valid until the next call that looks
 * up another process, forgets or prunes (NULL only when it could not be made: -ENOMEM).
 * Returns as hc_symbolizer__add_process().
 */
int hc_symbolizer__process(struct hc_symbolizer *sym, uint32_t tgid, uint64_t start_ns,
			   struct hc_sym_proc **out);
/* The tgid and start time the handle stands for. */
void hc_sym_proc__identity(const struct hc_sym_proc *p, uint32_t *tgid, uint64_t *start_ns);
/* The start time /proc/PID/stat gave, in ns (a whole number of clock ticks): 0 when not read.
 * For a process known before any record of it, whose start_ns is 0. */
uint64_t hc_sym_proc__start_tick_ns(const struct hc_symbolizer *sym, const struct hc_sym_proc *p);
/* Whether p's mappings were ever read: without them (a process gone, or unreadable, before
 * its first record) every address of it is in no known mapping. */
bool hc_sym_proc__has_maps(const struct hc_sym_proc *p);

/*
 * Snapshot tgid's mappings now. start_ns identifies the process behind a pid: the
 * group leader's start_boottime in ns (what /proc/PID/stat's starttime counts in ticks), as
 * the BPF records carry it; 0 when unknown. A known pid with another start time is a new
 * process (the pid was reused): its state starts afresh, and a /proc/PID whose start time is
 * not start_ns is not read for it. 0 if done or already known; -ESRCH if the process is gone.
 */
int hc_symbolizer__add_process(struct hc_symbolizer *sym, uint32_t tgid, uint64_t start_ns);
/* The processes under proc_root now (its numeric entries), at most max in out: how many
 * there are, or -errno. The sandbox's /proc may hide other users' (hidepid): those are met
 * at their first record instead. */
long hc_symbolizer__list_processes(struct hc_symbolizer *sym, uint32_t *out, size_t max);
/* tgid exec'd (or its maps changed): the next add_process re-reads its mappings. */
void hc_symbolizer__forget_process(struct hc_symbolizer *sym, uint32_t tgid);

/*
 * Drop the maps snapshots of processes that have exited (no /proc/PID any more), for a
 * symbolizer that runs for days (serve). Locations already normalized stay resolvable: they
 * name objects, not processes. *dropped counts them. 0 or -ENOMEM (then nothing changed).
 */
int hc_symbolizer__prune_gone(struct hc_symbolizer *sym, size_t *dropped);

/*
 * User address of process p -> location. If ip is in no known mapping and the process still
 * lives, the maps are re-read once (dlopen, late mmap) before giving up with obj =
 * HC_OBJ_UNKNOWN (also for p NULL). Returns 0 (also for unknown) or -errno on allocation
 * failure.
 */
int hc_symbolizer__normalize_proc(struct hc_symbolizer *sym, struct hc_sym_proc *p, uint64_t ip,
				  struct hc_uloc *out);
/* The same for one address of tgid, looked up for it (a caller with many addresses of one
 * process takes its handle once). */
int hc_symbolizer__normalize(struct hc_symbolizer *sym, uint32_t tgid, uint64_t start_ns,
			     uint64_t ip, struct hc_uloc *out);

/* Location -> frame. Returns 0 when resolved (by a symbol, a perf map, DWARF, or by the start
 * of the function holding the address: out->fstart), -ENOENT when not (out->name NULL,
 * module/offset still filled in as far as known). Function starts are read, once per object,
 * only for objects with no .symtab of their own, in .gnu_debugdata or in a debuginfo file
 * (stripped distribution binaries): there a missing symbol is a local function. */
int hc_symbolizer__resolve_user(struct hc_symbolizer *sym, const struct hc_uloc *loc,
				struct hc_frame_info *out);
/*
 * Location -> the frames of the code there, outermost first: frames[0] is what
 * resolve_user() gives (the function the code belongs to), then, where the object or its
 * separate debuginfo file has DWARF, the functions the compiler inlined into it, down to the
 * innermost, which the address is in (inlined = true; same module; offset 0). Without DWARF,
 * or with max 1, *n is 1. A chain longer than max keeps frames[0] and the max - 1 innermost
 * (counted in inline_truncated). Returns like resolve_user(), with *n >= 1 (also unresolved);
 * -EINVAL for max 0, -ENOMEM.
 */
int hc_symbolizer__resolve_user_inline(struct hc_symbolizer *sym, const struct hc_uloc *loc,
				       struct hc_frame_info *frames, size_t max, size_t *n);
int hc_symbolizer__resolve_kernel(struct hc_symbolizer *sym, uint64_t ip,
				  struct hc_frame_info *out);

/* The kernel variable starting at addr (a lock that is a symbol: "rtnl_mutex"); 0 and *name
 * (owned by the symbolizer), -ENOENT or -ENOMEM. Never a raw address. */
int hc_symbolizer__kernel_data(struct hc_symbolizer *sym, uint64_t addr, const char **name);

void hc_symbolizer__stats(const struct hc_symbolizer *sym, struct hc_symbolizer_stats *out);

/* ---- For the unwinder (symbolize/unwind.h) ---- */

/* A user stack ended by the unwinder short of its outermost frame: a frame of its own. */
#define HC_OBJ_TRUNCATED UINT32_MAX

struct Elf;

/* An object mapped executable in a process, where its loadable segments lie. */
struct hc_sym_module {
	uint64_t low, high;
	uint64_t bias; /* process address - ELF virtual address */
	uint32_t obj;
	const char *module;
	struct Elf *elf; /* program headers and call frame information only; the symbolizer's.
			  * NULL after hc_symbolizer__drop_cfi(): hc_symbolizer__module_cfi() */
};

/*
 * p's executable objects as its last maps snapshot has them (at most max), with the ELF
 * handles the unwinder reads CFI from; *gen numbers the snapshot (a new number: mappings
 * changed). From the first call on, objects keep that handle after their parse. -ESRCH when
 * p is NULL or stale, or its maps could not be read.
 */
/* Only *gen, as hc_symbolizer__modules() would set it: whether a module list is still current. */
int hc_symbolizer__maps_gen(struct hc_symbolizer *sym, struct hc_sym_proc *p, uint64_t *gen);
int hc_symbolizer__modules(struct hc_symbolizer *sym, struct hc_sym_proc *p,
			   struct hc_sym_module *out, size_t max, size_t *n, uint64_t *gen);
/*
 * --unwind table: the publisher has compiled obj's CFI into rows; let go of its ELF handle
 * (the CFI sections read in: megabytes for a set of libraries, kept for the life of the
 * object otherwise) and keep only its loadable segments, from which hc_symbolizer__modules()
 * finds spans (with elf NULL). Not for the unwinder, which reads CFI at every stack.
 */
void hc_symbolizer__drop_cfi(struct hc_symbolizer *sym, uint32_t obj);
/*
 * obj's ELF handle with its CFI read in (the symbolizer's): the one held, or, after
 * hc_symbolizer__drop_cfi(), read again through one of p's mappings of it. 0 and *out, or
 * -ENOENT (not a file object, or p does not map it), -ENODATA (no readable ELF), -errno of
 * the open.
 */
int hc_symbolizer__module_cfi(struct hc_symbolizer *sym, struct hc_sym_proc *p, uint32_t obj,
			      struct Elf **out);
/* A word the unwinder keeps with the process (its session's index + 1): 0 for a process new
 * to the symbolizer or started afresh (pid reused). */
uint32_t *hc_sym_proc__unwinder_slot(struct hc_sym_proc *p);
/* Whether the symbolizer still keeps tgid (with that start time, when not 0). */
bool hc_symbolizer__tracks(struct hc_symbolizer *sym, uint32_t tgid, uint64_t start_ns);

#endif
