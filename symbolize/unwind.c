// SPDX-License-Identifier: GPL-2.0-only
/*
 * User stacks from call frame information: libdwfl's frame API over a copy of the stack.
 *
 * Per process, one Dwfl session: its modules are the executable objects of the symbolizer's
 * maps snapshot, reported at the address their segments lie, each backed by the symbolizer's
 * ELF handle (find_elf hands out a reference, so a library in a thousand processes is read
 * once). The thread callbacks serve the one stack being unwound: registers from the copy,
 * memory only from the copied bytes. A session is rebuilt when the snapshot changes.
 */
#include "symbolize/unwind.h"
#include "symbolize/util.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/array.h"
#include "base/time.h"

/* Objects one process maps executable that are reported, at most. */
#define MAX_MODULES 1024

struct session {
	uint32_t tgid;
	uint64_t start_ns;
	uint64_t gen; /* the maps snapshot it was built from */
	Dwfl *dwfl;   /* NULL: no module could be reported (built, but unusable) */
};

struct stash {
	uint32_t tid; /* 0: free */
	uint32_t tgid;
	uint32_t seq;
	uint8_t end;
	uint16_t n;
	uint64_t *pcs;
};

struct hc_unwinder {
	struct hc_symbolizer *sym;
	struct session *sessions;
	size_t nr_sessions, cap_sessions;
	struct hc_keymap session_idx; /* tgid -> index into sessions[] */
	struct stash *stashes;
	size_t nr_stashes, cap_stashes;
	struct hc_keymap stash_idx; /* (tid, slot) -> index into stashes[] */
	struct hc_sym_module *mods; /* scratch for building a session */
	/* The stack being unwound, for the callbacks. */
	const struct hc_ucopy *cur;
	pid_t cur_tid;
	bool read_past_copy; /* a read fell outside the copy */
	uint64_t *out;
	size_t out_max, out_n;
	struct hc_unwind_stats stats;
};

static const char *const end_names[HC_UNWIND_END_MAX] = {
	[HC_UNWIND_COMPLETE] = "complete",   [HC_UNWIND_STACK_END] = "stack_end",
	[HC_UNWIND_NO_MODULE] = "no_module", [HC_UNWIND_NO_CFI] = "no_cfi",
	[HC_UNWIND_DEPTH] = "depth",
};

const char *hc_unwind_end_name(enum hc_unwind_end end)
{
	return (unsigned)end < HC_UNWIND_END_MAX ? end_names[end] : "unknown";
}

/* ---- libdwfl callbacks ---- */

/* The module's ELF is the symbolizer's handle: a new reference to it, no file. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	(void)mod;
	(void)modname;
	(void)base;
	*file_name = NULL;
	*elfp = *userdata ? elf_begin(-1, ELF_C_READ, *userdata) : NULL;
	return -1;
}

/* No separate debuginfo files: CFI comes from the object itself (.eh_frame, .debug_frame). */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	(void)mod;
	(void)userdata;
	(void)modname;
	(void)base;
	(void)file_name;
	(void)debuglink_file;
	(void)debuglink_crc;
	*debuginfo_file_name = NULL;
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = find_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct hc_unwinder *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->cur_tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	struct hc_unwinder *u = arg;

	(void)dwfl;
	*thread_argp = u;
	return tid == u->cur_tid;
}

/* Only the copied bytes: anything else is not known (and never read from the process). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct hc_unwinder *u = arg;
	const struct hc_ucopy *c = u->cur;
	uint64_t sp = c->regs[HC_UREG_SP];

	(void)dwfl;
	if (addr < sp || addr - sp > c->len || c->len - (addr - sp) < sizeof(*result)) {
		u->read_past_copy = true;
		return false;
	}
	memcpy(result, (const unsigned char *)(c + 1) + (addr - sp), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct hc_unwinder *u = arg;
	Dwarf_Word regs[HC_UREGS];

	for (int i = 0; i < HC_UREGS; i++)
		regs[i] = u->cur->regs[i];
	if (!dwfl_thread_state_registers(thread, 0, HC_UREGS, regs))
		return false;
	dwfl_thread_state_register_pc(thread, regs[HC_UREG_IP]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct hc_unwinder *u = arg;
	Dwarf_Addr pc;

	if (!dwfl_frame_pc(state, &pc, NULL))
		return DWARF_CB_ABORT;
	if (u->out_n >= u->out_max)
		return DWARF_CB_ABORT;
	u->out[u->out_n++] = pc;
	/* What counts is a read that failed on the way to the next frame. */
	u->read_past_copy = false;
	return DWARF_CB_OK;
}

/* ---- sessions ---- */

struct hc_unwinder *hc_unwinder__new(struct hc_symbolizer *sym)
{
	struct hc_unwinder *u = calloc(1, sizeof(*u));

	if (!u)
		goto err;
	u->sym = sym;
	u->mods = calloc(MAX_MODULES, sizeof(*u->mods));
	if (!u->mods)
		goto err;
	elf_version(EV_CURRENT);
	return u;
err:
	free(u);
	errno = ENOMEM;
	return NULL;
}

static void session_release(struct session *s)
{
	if (s->dwfl)
		dwfl_end(s->dwfl);
	s->dwfl = NULL;
}

void hc_unwinder__free(struct hc_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nr_sessions; i++)
		session_release(&u->sessions[i]);
	for (size_t i = 0; i < u->nr_stashes; i++)
		free(u->stashes[i].pcs);
	free(u->sessions);
	free(u->stashes);
	free(u->mods);
	hc_keymap__release(&u->session_idx);
	hc_keymap__release(&u->stash_idx);
	free(u);
}

/* A Dwfl for the process's modules; NULL when none could be reported. */
static Dwfl *build_dwfl(struct hc_unwinder *u, uint32_t tgid, size_t nmods)
{
	Dwfl *dwfl = dwfl_begin(&dwfl_callbacks);
	size_t reported = 0;

	if (!dwfl)
		return NULL;
	dwfl_report_begin(dwfl);
	for (size_t i = 0; i < nmods; i++) {
		const struct hc_sym_module *m = &u->mods[i];
		Dwfl_Module *mod = dwfl_report_module(dwfl, m->module, m->low, m->high);
		void **userdata = NULL;

		if (!mod)
			continue; /* overlaps another module: a mapping changed under the snapshot
				   */
		dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
		if (userdata)
			*userdata = m->elf;
		reported++;
	}
	if (dwfl_report_end(dwfl, NULL, NULL) || !reported ||
	    !dwfl_attach_state(dwfl, NULL, (pid_t)tgid, &thread_callbacks, u)) {
		dwfl_end(dwfl);
		return NULL;
	}
	return dwfl;
}

/* The session of tgid: the index the process's handle keeps (checked: sessions move when
 * pruned), else the table's. */
static bool find_session(struct hc_unwinder *u, struct hc_sym_proc *p, uint32_t tgid, uint32_t *idx)
{
	uint32_t slot = *hc_sym_proc__unwinder_slot(p);

	if (slot && slot <= u->nr_sessions && u->sessions[slot - 1].tgid == tgid) {
		*idx = slot - 1;
		return true;
	}
	return !hc_keymap__get(&u->session_idx, tgid, 0, idx);
}

/* The process's session, (re)built from the symbolizer's current snapshot. */
static int get_session(struct hc_unwinder *u, struct hc_sym_proc *p, struct session **out)
{
	struct session *s = NULL;
	uint64_t gen = 0, start_ns;
	uint32_t idx, tgid;
	size_t nmods;
	int err;

	/* The snapshot's number first: listing the modules reads every object's program
	 * headers, the work of a rebuild, not of each stack. */
	err = hc_symbolizer__maps_gen(u->sym, p, &gen);
	if (err)
		return err;
	hc_sym_proc__identity(p, &tgid, &start_ns);
	if (find_session(u, p, tgid, &idx)) {
		s = &u->sessions[idx];
		*hc_sym_proc__unwinder_slot(p) = idx + 1;
		if (s->gen == gen && s->start_ns == start_ns) {
			*out = s;
			return 0;
		}
	}
	err = hc_symbolizer__modules(u->sym, p, u->mods, MAX_MODULES, &nmods, &gen);
	if (err)
		return err;
	if (s) {
		session_release(s);
	} else {
		if (u->nr_sessions == u->cap_sessions &&
		    hc_array_grow(u->sessions, u->cap_sessions, u->nr_sessions + 1, 64))
			return -ENOMEM;
		err = hc_keymap__put(&u->session_idx, tgid, 0, (uint32_t)u->nr_sessions);
		if (err)
			return err;
		*hc_sym_proc__unwinder_slot(p) = (uint32_t)u->nr_sessions + 1;
		s = &u->sessions[u->nr_sessions++];
		memset(s, 0, sizeof(*s));
	}
	s->tgid = tgid;
	s->start_ns = start_ns;
	s->gen = gen;
	s->dwfl = build_dwfl(u, tgid, nmods);
	u->stats.sessions++;
	*out = s;
	return 0;
}

/* Why libdwfl stopped at the last pc found. */
static enum hc_unwind_end classify(struct hc_unwinder *u, Dwfl *dwfl)
{
	if (u->out_n >= u->out_max)
		return HC_UNWIND_DEPTH;
	if (u->read_past_copy)
		return HC_UNWIND_STACK_END;
	if (u->out_n && !dwfl_addrmodule(dwfl, u->out[u->out_n - 1] - (u->out_n > 1)))
		return HC_UNWIND_NO_MODULE;
	return HC_UNWIND_NO_CFI;
}

int hc_unwinder__unwind(struct hc_unwinder *u, struct hc_sym_proc *p, const struct hc_ucopy *c,
			uint64_t *pcs, size_t max, size_t *n, enum hc_unwind_end *end)
{
	uint64_t t0 = hc_mono_ns();
	struct session *s;
	int err, r;

	*n = 0;
	*end = HC_UNWIND_COMPLETE;
	err = get_session(u, p, &s);
	if (err == -ENOMEM)
		goto out;
	if (err || !s->dwfl) {
		u->stats.no_process++;
		err = -ESRCH;
		goto out;
	}
	u->cur = c;
	/* libdwfl asks for a thread of the process: any tid will do, the copy is the thread. */
	u->cur_tid = (pid_t)s->tgid;
	u->read_past_copy = false;
	u->out = pcs;
	u->out_max = max;
	u->out_n = 0;
	r = dwfl_getthread_frames(s->dwfl, u->cur_tid, frame_cb, u);
	/*
	 * 0: no caller. Either the outermost frame was reached (its CFI says the return address
	 * is undefined), or the return address could not be read, which libdwfl takes for the
	 * same: a read outside the copy on the way tells the two apart.
	 */
	*end = r == 0 && !u->read_past_copy ? HC_UNWIND_COMPLETE : classify(u, s->dwfl);
	*n = u->out_n;
	u->cur = NULL;
	if (!*n) {
		/* Not even the first pc: leave it to the frame pointers. */
		u->stats.no_process++;
		err = -ESRCH;
		goto out;
	}
	u->stats.stacks++;
	u->stats.frames += *n;
	u->stats.ends[*end]++;
out:
	u->stats.ns += hc_mono_ns() - t0;
	return err;
}

/* ---- off-CPU stashes ---- */

int hc_unwinder__stash(struct hc_unwinder *u, uint32_t tgid, uint32_t tid, uint32_t seq,
		       const uint64_t *pcs, size_t n, enum hc_unwind_end end)
{
	struct stash *st;
	uint64_t *copy;
	uint32_t idx;
	int err;

	if (n > HC_MAX_STACK_DEPTH)
		return -EINVAL;
	copy = malloc((n ? n : 1) * sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	memcpy(copy, pcs, n * sizeof(*copy));
	if (!hc_keymap__get(&u->stash_idx, tid, seq & 1, &idx)) {
		st = &u->stashes[idx];
		free(st->pcs);
	} else {
		if (u->nr_stashes == u->cap_stashes &&
		    hc_array_grow(u->stashes, u->cap_stashes, u->nr_stashes + 1, 256)) {
			free(copy);
			return -ENOMEM;
		}
		err = hc_keymap__put(&u->stash_idx, tid, seq & 1, (uint32_t)u->nr_stashes);
		if (err) {
			free(copy);
			return err;
		}
		st = &u->stashes[u->nr_stashes++];
	}
	st->tid = tid;
	st->tgid = tgid;
	st->seq = seq;
	st->end = (uint8_t)end;
	st->n = (uint16_t)n;
	st->pcs = copy;
	return 0;
}

int hc_unwinder__stashed(struct hc_unwinder *u, uint32_t tid, uint32_t seq, const uint64_t **pcs,
			 size_t *n, enum hc_unwind_end *end)
{
	const struct stash *st;
	uint32_t idx;

	if (hc_keymap__get(&u->stash_idx, tid, seq & 1, &idx) || u->stashes[idx].seq != seq) {
		u->stats.stash_missing++;
		return -ENOENT;
	}
	st = &u->stashes[idx];
	*pcs = st->pcs;
	*n = st->n;
	*end = (enum hc_unwind_end)st->end;
	return 0;
}

void hc_unwinder__prune(struct hc_unwinder *u)
{
	struct hc_keymap sidx = {0}, tidx = {0};
	size_t kept = 0;

	/* New indexes first: on failure nothing changes (pruning is only an economy). */
	for (size_t i = 0; i < u->nr_sessions; i++) {
		const struct session *s = &u->sessions[i];

		if (hc_symbolizer__tracks(u->sym, s->tgid, s->start_ns) &&
		    hc_keymap__put(&sidx, s->tgid, 0, (uint32_t)kept++))
			goto err;
	}
	kept = 0;
	for (size_t i = 0; i < u->nr_stashes; i++) {
		const struct stash *st = &u->stashes[i];

		if (hc_symbolizer__tracks(u->sym, st->tgid, 0) &&
		    hc_keymap__put(&tidx, st->tid, st->seq & 1, (uint32_t)kept++))
			goto err;
	}
	kept = 0;
	for (size_t i = 0; i < u->nr_sessions; i++) {
		if (hc_symbolizer__tracks(u->sym, u->sessions[i].tgid, u->sessions[i].start_ns))
			u->sessions[kept++] = u->sessions[i];
		else
			session_release(&u->sessions[i]);
	}
	u->nr_sessions = kept;
	kept = 0;
	for (size_t i = 0; i < u->nr_stashes; i++) {
		if (hc_symbolizer__tracks(u->sym, u->stashes[i].tgid, 0))
			u->stashes[kept++] = u->stashes[i];
		else
			free(u->stashes[i].pcs);
	}
	u->nr_stashes = kept;
	hc_keymap__release(&u->session_idx);
	hc_keymap__release(&u->stash_idx);
	u->session_idx = sidx;
	u->stash_idx = tidx;
	return;
err:
	hc_keymap__release(&sidx);
	hc_keymap__release(&tidx);
}

void hc_unwinder__stats(const struct hc_unwinder *u, struct hc_unwind_stats *out)
{
	*out = u->stats;
}
