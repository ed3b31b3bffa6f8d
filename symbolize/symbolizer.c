// SPDX-License-Identifier: GPL-2.0-only
/*
 * The symbolizer façade: processes -> mapping snapshots -> objects -> parsed symbol tables.
 *
 * Objects are files keyed by (dev, inode) as /proc/PID/maps reports them, so one library mapped
 * by a thousand processes is opened once and parsed once; their ids are what stacks get
 * interned by. A process's anonymous executable memory is its own "JIT" object, resolved with
 * its perf-PID.map. The fd of a file object is opened while its process is alive (at snapshot
 * time) because afterwards the file may be unreachable (deleted, other mount namespace); it is
 * parsed, and closed, at the first resolve.
 */
#include "symbolize/symbolizer.h"
#include "symbolize/demangle.h"
#include "symbolize/dwinline.h"
#include "symbolize/elfsym.h"
#include "symbolize/fstarts.h"
#include "symbolize/kallsyms.h"
#include "symbolize/perfmap.h"
#include "symbolize/procmaps.h"
#include "symbolize/util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/intern.h"
#include "base/time.h"

/*
 * An address in no known mapping re-reads the process's maps (it may have dlopen'd or mmap'd
 * since the snapshot), but at most once per this interval per process: a stream of addresses
 * that are truly unknown must not turn into a stream of /proc reads.
 */
#define MAPS_REREAD_MIN_INTERVAL_NS (100ull * 1000 * 1000)
/* A re-read that still finds no mapping doubles the wait, up to this: frame-pointer walks
 * through code built without them yield addresses no mapping will ever hold, and reading
 * /proc/PID/maps ten times a second for them was a quarter of serve's collector CPU. */
#define MAPS_REREAD_MAX_INTERVAL_NS (10ull * 1000 * 1000 * 1000)

/*
 * Inline chains resolved lately, by location: a walk of the DWARF costs microseconds (more in
 * big C++ units), and serve resolves each distinct address of every second again. 4-way set
 * associative, round robin within a set (direct mapped, a few thousand addresses already
 * evicted one another half the time); an entry holds at most HC_SYM_INLINE_MAX + 1 name
 * pointers (interned strings). 16384 entries: 512 KiB plus their chains.
 */
#define INLINE_CACHE_WAYS 4
#define INLINE_CACHE_SETS 4096
#define INLINE_CACHE_SLOTS (INLINE_CACHE_WAYS * INLINE_CACHE_SETS)

/* Demangled C++ names can be long (templates); longer ones stay mangled. */
#define DEMANGLE_MAX_BYTES 4096

#define MODULE_UNKNOWN "[unknown]"
#define MODULE_KERNEL "[kernel]"
#define MODULE_JIT "[jit]"
#define MODULE_VDSO "[vdso]"

enum obj_kind {
	OBJ_FILE,    /* an ELF file, by (dev, inode) */
	OBJ_JIT,     /* one process's anonymous executable memory; off = absolute address */
	OBJ_SPECIAL, /* [vdso], [vsyscall], ...: by (name, size); off = ip - mapping start */
};

enum obj_state {
	OBJ_UNPARSED,
	OBJ_PARSED,
	OBJ_FAILED,
};

struct object {
	enum obj_kind kind;
	enum obj_state state;
	int fd;		    /* OBJ_FILE until parsed, else -1 */
	bool open_err;	    /* counted in stats.object_open_err already */
	const char *module; /* interned: basename, "[jit]", "[vdso]" */
	uint32_t symtab;    /* index + 1 into symtabs[], 0: none */
	uint64_t size;	    /* OBJ_SPECIAL: mapping size */
	/* OBJ_FILE: the first process that mapped it, and its path there (interned): where its
	 * debug file is looked for. OBJ_JIT: the process. */
	uint32_t tgid;
	const char *path;
	uint32_t nspid; /* tgid in the process's own pid namespace: its perf map's name */
	struct hc_perfmap *perfmap;
	struct stat perfmap_st; /* of the file perfmap was read from, to notice rewrites */
	bool perfmap_read;
	/* For the unwinder (OBJ_FILE): the ELF with its CFI read in, detached from the file. */
	Elf *uelf;
	bool uelf_tried;
	/* Its loadable segments, kept when uelf is let go (hc_symbolizer__drop_cfi): module
	 * spans are found without it. NULL: none kept. */
	struct load_seg *segs;
	uint8_t n_segs;
};

/* A PT_LOAD program header, as module_span() reads it. */
struct load_seg {
	uint64_t vaddr, offset, filesz, memsz, align;
	uint32_t flags;
};

/* Objects have a few loadable segments; more are not kept (the span is then found from the
 * ELF, read again). */
#define LOAD_SEGS_MAX 16

/* One parsed ELF symbol table, shared by all objects with its build-id. */
struct symtab {
	struct hc_elfsym *es;
	/* demangled names of the symbols asked for (most are not mangled: not kept) */
	struct hc_keymap display; /* symbol index -> index into names[] */
	const char **names;
	size_t nr_names, cap_names;
	uint8_t build_id[HC_BUILD_ID_MAX];
	size_t build_id_len;
	struct hc_dwinline *dw; /* inline chains, when the object has DWARF; NULL: none */
	struct hc_fstarts *fs;	/* function starts, for an object without .symtab; NULL: none */
};

/* A cached inline chain: names[0] the subprogram's name from DWARF (NULL: none), then the
 * inlined functions, outermost first; len the chain's full length (0: no subprogram). */
struct inline_slot {
	uint64_t off;
	uint32_t obj; /* HC_OBJ_UNKNOWN: empty */
	uint32_t n, len;
	const char **names;
};

struct hc_sym_proc {
	uint32_t tgid;
	uint64_t start_ns;    /* the process's start_boottime as BPF saw it; 0: not known */
	uint64_t start_ticks; /* starttime of its /proc/PID/stat; 0: not read */
	bool stale;	      /* forgotten (exec): next add_process re-reads */
	bool gone;	      /* maps could not be read any more */
	struct hc_procmaps *maps;
	uint32_t *map_obj; /* object id per mapping, parallel to maps->maps; 0: none yet */
	uint32_t jit_obj;
	uint64_t last_reread_ns;
	uint64_t reread_interval_ns; /* 0: MAPS_REREAD_MIN_INTERVAL_NS */
	uint64_t gen;		     /* the snapshot's number: a new one means new mappings */
	uint32_t unwinder_slot;	     /* the unwinder's (hc_sym_proc__unwinder_slot) */
	uint32_t hint; /* index into maps->maps of the code mapping last found (a stack's
			* frames mostly lie in a few mappings): checked before the bisection */
};

struct hc_symbolizer {
	char *proc_root;
	char *kallsyms_path;
	char *debug_root;
	char *perfmap_dir;
	bool no_demangle;
	bool no_inline;
	size_t dwarf_max_bytes;
	size_t dwarf_bytes;   /* held by the symtabs' DWARF, bounded by dwarf_max_bytes */
	size_t fstarts_bytes; /* held by the symtabs' function starts, HC_SYM_FSTARTS_MAX_BYTES */
	struct inline_slot *inline_cache; /* INLINE_CACHE_SLOTS, allocated at first use */
	uint8_t *inline_victim;		  /* per set: the way to replace next */
	struct hc_symbolizer_io io;
	bool has_io;
	uint64_t tick_ns; /* one clock tick of /proc/PID/stat's starttime */

	struct hc_kallsyms *kallsyms;
	bool kernel_tried;

	struct hc_sym_proc *procs;
	size_t nr_procs, cap_procs;
	struct hc_keymap proc_idx; /* tgid -> index into procs[] */

	struct object *objs; /* object id N is objs[N - 1] */
	size_t nr_objs, cap_objs;
	struct hc_keymap file_ids;    /* (dev, inode) -> object id */
	struct hc_keymap special_ids; /* (interned name, mapping size) -> object id */

	struct symtab *symtabs;
	size_t nr_symtabs, cap_symtabs;
	struct hc_keymap build_ids; /* first 16 bytes of a build-id -> index into symtabs[] */

	/* Our own vdso, parsed once: the same kernel maps the same image into every process. */
	struct hc_elfsym *vdso;
	uint64_t vdso_size;
	bool vdso_tried;
	/* For the unwinder: our vdso image as libelf sees it (a private copy), and whether
	 * objects keep an ELF handle for it past their parse. */
	Elf *vdso_uelf;
	void *vdso_copy;
	bool keep_uelf;
	uint64_t next_gen;

	struct hc_interner strings;
	struct hc_symbolizer_stats stats;
};

static char *dup_or_default(const char *s, const char *def)
{
	return strdup(s ? s : def);
}

struct hc_symbolizer *hc_symbolizer__new(const struct hc_symbolizer_opts *opts)
{
	const struct hc_symbolizer_opts none = {0};
	struct hc_symbolizer *sym;

	if (!opts)
		opts = &none;
	/* libelf set up once, before the first ELF handle (objects, modules, unwind tables) */
	elf_version(EV_CURRENT);
	sym = calloc(1, sizeof(*sym));
	if (!sym)
		goto err_out;
	sym->proc_root = dup_or_default(opts->proc_root, "/proc");
	sym->kallsyms_path = dup_or_default(opts->kallsyms, "/proc/kallsyms");
	sym->debug_root = dup_or_default(opts->debug_root, "/usr/lib/debug");
	if (opts->perfmap_dir) {
		sym->perfmap_dir = strdup(opts->perfmap_dir);
		if (!sym->perfmap_dir)
			goto err_free;
	}
	if (!sym->proc_root || !sym->kallsyms_path || !sym->debug_root)
		goto err_free;
	sym->no_demangle = opts->no_demangle;
	sym->no_inline = opts->no_inline;
	sym->dwarf_max_bytes =
		opts->dwarf_max_bytes ? opts->dwarf_max_bytes : HC_SYM_DWARF_MAX_BYTES;
	if (opts->io) {
		sym->io = *opts->io;
		sym->has_io = true;
	}
	{
		long hz = sysconf(_SC_CLK_TCK);

		sym->tick_ns = hz > 0 ? 1000000000ull / (uint64_t)hz : 10000000ull;
	}
	return sym;

err_free:
	hc_symbolizer__free(sym);
err_out:
	errno = ENOMEM;
	return NULL;
}

void hc_symbolizer__free(struct hc_symbolizer *sym)
{
	size_t i;

	if (!sym)
		return;
	for (i = 0; i < sym->nr_procs; i++) {
		hc_procmaps__free(sym->procs[i].maps);
		free(sym->procs[i].map_obj);
	}
	free(sym->procs);
	for (i = 0; i < sym->nr_objs; i++) {
		if (sym->objs[i].fd >= 0)
			close(sym->objs[i].fd);
		hc_perfmap__free(sym->objs[i].perfmap);
		if (sym->objs[i].uelf)
			elf_end(sym->objs[i].uelf);
		free(sym->objs[i].segs);
	}
	if (sym->vdso_uelf)
		elf_end(sym->vdso_uelf);
	free(sym->vdso_copy);
	free(sym->objs);
	for (i = 0; i < sym->nr_symtabs; i++) {
		hc_elfsym__free(sym->symtabs[i].es);
		hc_dwinline__free(sym->symtabs[i].dw);
		hc_fstarts__free(sym->symtabs[i].fs);
		hc_keymap__release(&sym->symtabs[i].display);
		free(sym->symtabs[i].names);
	}
	free(sym->symtabs);
	if (sym->inline_cache)
		for (i = 0; i < INLINE_CACHE_SLOTS; i++)
			free(sym->inline_cache[i].names);
	free(sym->inline_cache);
	free(sym->inline_victim);
	hc_keymap__release(&sym->proc_idx);
	hc_keymap__release(&sym->file_ids);
	hc_keymap__release(&sym->special_ids);
	hc_keymap__release(&sym->build_ids);
	hc_elfsym__free(sym->vdso);
	hc_kallsyms__free(sym->kallsyms);
	hc_interner__release(&sym->strings);
	free(sym->proc_root);
	free(sym->kallsyms_path);
	free(sym->debug_root);
	free(sym->perfmap_dir);
	free(sym);
}

static const char *intern(struct hc_symbolizer *sym, const char *s)
{
	return hc_interner__add(&sym->strings, s, strlen(s));
}

/* ---- kernel ---- */

int hc_symbolizer__load_kernel(struct hc_symbolizer *sym)
{
	sym->kernel_tried = true;
	/* Already loaded: keep it (modules' names handed out earlier point into it). */
	if (sym->kallsyms)
		return 0;
	if (sym->has_io) {
		int fd = sym->io.open_kallsyms(sym->io.ctx);

		if (fd < 0)
			return fd;
		sym->kallsyms = hc_kallsyms__load_fd(fd);
		if (!sym->kallsyms) {
			int err = -errno;

			close(fd);
			return err;
		}
		close(fd);
		return 0;
	}
	sym->kallsyms = hc_kallsyms__load(sym->kallsyms_path);
	return sym->kallsyms ? 0 : -errno;
}

int hc_symbolizer__resolve_kernel(struct hc_symbolizer *sym, uint64_t ip, struct hc_frame_info *out)
{
	struct hc_ksym ks;

	if (!sym->kernel_tried)
		hc_symbolizer__load_kernel(sym); /* failure shows as unresolved frames + stats */
	/* kallsyms hands out a name until its next lookup: the callers keep theirs */
	if (sym->kallsyms && !hc_kallsyms__lookup(sym->kallsyms, ip, &ks) &&
	    (out->name = intern(sym, ks.name))) {
		out->module = ks.module;
		out->offset = ks.offset;
		return 0;
	}
	/* Never a raw kernel address: it would defeat KASLR for whoever reads the profile. */
	sym->stats.kernel_unresolved++;
	out->name = NULL;
	out->module = MODULE_KERNEL;
	out->offset = 0;
	return -ENOENT;
}

int hc_symbolizer__kernel_data(struct hc_symbolizer *sym, uint64_t addr, const char **name)
{
	const char *n;
	int err;

	if (!sym->kernel_tried)
		hc_symbolizer__load_kernel(sym);
	err = hc_kallsyms__lookup_data(sym->kallsyms, addr, &n);
	if (err)
		return err;
	*name = intern(sym, n);
	return *name ? 0 : -ENOMEM;
}

/* ---- objects ---- */

static int new_object(struct hc_symbolizer *sym, enum obj_kind kind, const char *module,
		      uint32_t *id)
{
	struct object *o;

	if (sym->nr_objs >= UINT32_MAX - 1)
		return -E2BIG;
	if (sym->nr_objs == sym->cap_objs &&
	    hc_array_grow(sym->objs, sym->cap_objs, sym->nr_objs + 1, 64))
		return -ENOMEM;
	o = &sym->objs[sym->nr_objs];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->fd = -1;
	o->module = intern(sym, module);
	if (!o->module)
		return -ENOMEM;
	*id = (uint32_t)++sym->nr_objs;
	return 0;
}

static struct object *get_object(struct hc_symbolizer *sym, uint32_t id)
{
	if (id == HC_OBJ_UNKNOWN || id > sym->nr_objs)
		return NULL;
	return &sym->objs[id - 1];
}

/*
 * Open the file behind mapping m of tgid. /proc/PID/map_files/ gives the mapped file itself,
 * even deleted or in another mount namespace (needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE);
 * /proc/PID/root/PATH follows the process's mount namespace; PATH is the last resort, and must
 * then still be the same inode.
 */
static int open_mapping(struct hc_symbolizer *sym, uint32_t tgid, const struct hc_mapping *m)
{
	char path[PATH_MAX];
	struct stat st;
	int fd, n;

	/* Sandboxed: the broker opens map_files only, the kernel's word that tgid maps it. */
	if (sym->has_io)
		return sym->io.open_mapped(sym->io.ctx, tgid, m->start, m->end);
	n = snprintf(path, sizeof(path), "%s/%u/map_files/%llx-%llx", sym->proc_root, tgid,
		     (unsigned long long)m->start, (unsigned long long)m->end);
	if (n > 0 && (size_t)n < sizeof(path)) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	/* A deleted file's path names nothing, or worse, its replacement. */
	if (m->deleted)
		return -ENOENT;
	n = snprintf(path, sizeof(path), "%s/%u/root%s", sym->proc_root, tgid, m->path);
	if (n > 0 && (size_t)n < sizeof(path)) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0)
			return fd;
	}
	fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_ino != m->inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int file_object(struct hc_symbolizer *sym, uint32_t tgid, const struct hc_mapping *m,
		       uint32_t *id)
{
	uint64_t dev = ((uint64_t)m->dev_major << 32) | m->dev_minor;
	struct object *o;
	int err, fd;

	if (!hc_keymap__get(&sym->file_ids, dev, m->inode, id)) {
		o = get_object(sym, *id);
		/* The process that first mapped it may have died before we could open it. */
		if (o->fd < 0 && o->state == OBJ_UNPARSED && o->open_err) {
			fd = open_mapping(sym, tgid, m);
			if (fd >= 0) {
				/* its debug file is looked for where this process sees it */
				o->fd = fd;
				o->tgid = tgid;
				o->path = intern(sym, m->path);
			}
		}
		return 0;
	}
	err = new_object(sym, OBJ_FILE, basename_of(m->path), id);
	if (err)
		return err;
	err = hc_keymap__put(&sym->file_ids, dev, m->inode, *id);
	if (err) {
		sym->nr_objs--;
		return err;
	}
	o = get_object(sym, *id);
	sym->stats.objects++;
	o->tgid = tgid;
	o->path = intern(sym, m->path); /* NULL (no memory): no search by path */
	fd = open_mapping(sym, tgid, m);
	if (fd >= 0) {
		o->fd = fd;
	} else {
		o->open_err = true;
		sym->stats.object_open_err++;
	}
	return 0;
}

static int special_object(struct hc_symbolizer *sym, const struct hc_mapping *m, uint32_t *id)
{
	const char *name = intern(sym, m->path);
	uint64_t size = m->end - m->start;
	int err;

	if (!name)
		return -ENOMEM;
	if (!hc_keymap__get(&sym->special_ids, (uintptr_t)name, size, id))
		return 0;
	err = new_object(sym, OBJ_SPECIAL, name, id);
	if (err)
		return err;
	get_object(sym, *id)->size = size;
	err = hc_keymap__put(&sym->special_ids, (uintptr_t)name, size, *id);
	if (err)
		sym->nr_objs--;
	return err;
}

/* The innermost pid of an NSpid line of /proc/PID/status ("NSpid:\t4242\t7\n" -> 7). */
int hc__status_nspid(const char *status, uint32_t *out)
{
	const char *p = strstr(status, "\nNSpid:");
	unsigned long v = 0;
	bool any = false;

	if (!p)
		return -ENOENT;
	for (p += 7; *p && *p != '\n';) {
		char *end;
		unsigned long x;

		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			break;
		errno = 0;
		x = strtoul(p, &end, 10);
		if (errno || x == 0 || x > UINT32_MAX)
			return -EINVAL;
		v = x;
		any = true;
		p = end;
	}
	if (!any)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static uint32_t read_nspid(const struct hc_symbolizer *sym, uint32_t tgid)
{
	char path[PATH_MAX], buf[4096];
	uint32_t nspid;
	ssize_t n;
	int fd;

	if (sym->has_io) {
		fd = sym->io.open_status(sym->io.ctx, tgid);
	} else {
		snprintf(path, sizeof(path), "%s/%u/status", sym->proc_root, tgid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return tgid;
	buf[0] = '\n'; /* so that a first line matches "\nNSpid:" too */
	n = read(fd, buf + 1, sizeof(buf) - 2);
	close(fd);
	if (n <= 0)
		return tgid;
	buf[n + 1] = '\0';
	return hc__status_nspid(buf, &nspid) ? tgid : nspid;
}

static void perfmap_path(const struct hc_symbolizer *sym, const struct object *o, char *buf,
			 size_t size)
{
	if (sym->perfmap_dir)
		snprintf(buf, size, "%s/perf-%u.map", sym->perfmap_dir, o->tgid);
	else
		snprintf(buf, size, "%s/%u/root/tmp/perf-%u.map", sym->proc_root, o->tgid,
			 o->nspid ? o->nspid : o->tgid);
}

/*
 * (Re)read a JIT object's perf-PID.map if it changed since the last read. Names handed out
 * earlier are interned copies, so the old table can go.
 */
static void refresh_perfmap(struct hc_symbolizer *sym, struct object *o)
{
	struct hc_perfmap *pm;
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (sym->has_io && !sym->perfmap_dir) {
		fd = sym->io.open_perfmap(sym->io.ctx, o->tgid, o->nspid ? o->nspid : o->tgid);
	} else {
		perfmap_path(sym, o, path, sizeof(path));
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return;
	if (fstat(fd, &st) || (o->perfmap_read && st.st_size == o->perfmap_st.st_size &&
			       st.st_mtim.tv_sec == o->perfmap_st.st_mtim.tv_sec &&
			       st.st_mtim.tv_nsec == o->perfmap_st.st_mtim.tv_nsec &&
			       st.st_ino == o->perfmap_st.st_ino)) {
		close(fd);
		return;
	}
	pm = hc_perfmap__load_fd(fd);
	close(fd);
	if (!pm)
		return;
	hc_perfmap__free(o->perfmap);
	o->perfmap = pm;
	o->perfmap_st = st;
	o->perfmap_read = true;
}

static int jit_object(struct hc_symbolizer *sym, struct hc_sym_proc *p, uint32_t *id)
{
	struct object *o;
	int err;

	if (p->jit_obj) {
		*id = p->jit_obj;
		return 0;
	}
	err = new_object(sym, OBJ_JIT, MODULE_JIT, id);
	if (err)
		return err;
	o = get_object(sym, *id);
	o->tgid = p->tgid;
	o->nspid = read_nspid(sym, p->tgid);
	p->jit_obj = *id;
	/* Read while the process lives; a runtime may remove its map at exit. */
	refresh_perfmap(sym, o);
	return 0;
}

static bool is_special(const char *path)
{
	return !strcmp(path, "[vdso]") || !strcmp(path, "[vsyscall]") || !strcmp(path, "[vvar]") ||
	       !strcmp(path, "[uprobes]");
}

/* The object behind mapping m of process p. 0 with *id (0 if none), or -ENOMEM/-E2BIG. */
static int mapping_object(struct hc_symbolizer *sym, struct hc_sym_proc *p,
			  const struct hc_mapping *m, uint32_t *id)
{
	*id = HC_OBJ_UNKNOWN;
	if (hc_mapping__is_file(m))
		return file_object(sym, p->tgid, m, id);
	if (m->path && is_special(m->path))
		return special_object(sym, m, id);
	/* Anonymous, [heap], [stack], [anon:name], memory of odd filesystems: JIT code, if any. */
	return jit_object(sym, p, id);
}

/* ---- processes ---- */

static struct hc_sym_proc *find_proc(struct hc_symbolizer *sym, uint32_t tgid)
{
	uint32_t idx;

	if (hc_keymap__get(&sym->proc_idx, tgid, 0, &idx))
		return NULL;
	return &sym->procs[idx];
}

static int new_proc(struct hc_symbolizer *sym, uint32_t tgid, struct hc_sym_proc **out)
{
	struct hc_sym_proc *p;
	int err;

	if (sym->nr_procs == sym->cap_procs &&
	    hc_array_grow(sym->procs, sym->cap_procs, sym->nr_procs + 1, 64))
		return -ENOMEM;
	err = hc_keymap__put(&sym->proc_idx, tgid, 0, (uint32_t)sym->nr_procs);
	if (err)
		return err;
	p = &sym->procs[sym->nr_procs++];
	memset(p, 0, sizeof(*p));
	p->tgid = tgid;
	*out = p;
	return 0;
}

int hc__stat_starttime(const char *stat, size_t len, uint64_t *ticks)
{
	const char *p = NULL, *end = stat + len;
	int field = 2; /* the one ')' closes: comm may hold spaces and parentheses */

	for (const char *q = stat; q < end; q++)
		if (*q == ')')
			p = q;
	if (!p)
		return -EINVAL;
	for (p++; p < end && field < 22;) {
		while (p < end && *p == ' ')
			p++;
		if (p == end)
			return -EINVAL;
		if (++field == 22)
			break;
		while (p < end && *p != ' ')
			p++;
	}
	if (field != 22 || p == end || *p < '0' || *p > '9')
		return -EINVAL;
	*ticks = 0;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (*ticks > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		*ticks = *ticks * 10 + (uint64_t)(*p - '0');
	}
	return p == end || *p == ' ' || *p == '\n' ? 0 : -EINVAL;
}

/*
 * tgid's mappings and, when its stat can be read, its start time in ticks (0 if not), both
 * of the same process: opened through one /proc/PID directory.
 */
static int open_proc(struct hc_symbolizer *sym, uint32_t tgid, struct hc_procmaps **maps,
		     uint64_t *ticks)
{
	int maps_fd = -1, stat_fd = -1, err = 0;
	char buf[1024];
	ssize_t n;

	if (sym->has_io) {
		err = sym->io.open_proc(sym->io.ctx, tgid, &maps_fd, &stat_fd);
	} else {
		char path[PATH_MAX];
		int dir;

		snprintf(path, sizeof(path), "%s/%u", sym->proc_root, tgid);
		dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			return -errno;
		maps_fd = openat(dir, "maps", O_RDONLY | O_CLOEXEC);
		if (maps_fd < 0)
			err = -errno;
		stat_fd = openat(dir, "stat", O_RDONLY | O_CLOEXEC); /* fixtures may have none */
		close(dir);
	}
	if (err)
		goto out;
	*maps = hc_procmaps__load_fd(maps_fd);
	if (!*maps) {
		err = -errno;
		goto out;
	}
	/* Read after the maps: a stat still readable now means the maps were this process's. */
	if (stat_fd >= 0) {
		n = pread(stat_fd, buf, sizeof(buf), 0);
		if (n < 0 && (errno == ESRCH || errno == ENOENT)) {
			hc_procmaps__free(*maps);
			*maps = NULL;
			err = -ESRCH;
		} else if (n <= 0 || hc__stat_starttime(buf, (size_t)n, ticks)) {
			*ticks = 0;
		}
	}
out:
	if (maps_fd >= 0)
		close(maps_fd);
	if (stat_fd >= 0)
		close(stat_fd);
	return err;
}

/* Read p's maps now and open the objects of its executable mappings. 0, -ESRCH, -errno. */
static int snapshot(struct hc_symbolizer *sym, struct hc_sym_proc *p)
{
	struct hc_procmaps *maps = NULL;
	uint64_t ticks = 0;
	uint32_t *ids;
	size_t i;
	int err;

	err = open_proc(sym, p->tgid, &maps, &ticks);
	/* The pid names another process now: the one sampled has exited. */
	if (!err && ticks && p->start_ns && ticks != p->start_ns / sym->tick_ns) {
		hc_procmaps__free(maps);
		maps = NULL;
		err = -ESRCH;
	}
	if (err) {
		if (err == -ENOENT || err == -ESRCH) {
			/* A known process that is gone keeps its last snapshot for normalize. */
			p->gone = true;
			p->stale = false;
			sym->stats.process_gone++;
			return -ESRCH;
		}
		/* EACCES and the like: not known yet, so the next add_process tries again. */
		if (!p->maps)
			p->stale = true;
		return err;
	}
	ids = calloc(maps->nr ? maps->nr : 1, sizeof(*ids));
	if (!ids) {
		hc_procmaps__free(maps);
		return -ENOMEM;
	}
	for (i = 0; i < maps->nr; i++) {
		if (!(maps->maps[i].perms & HC_MAP_X))
			continue; /* non-executable ones get an object on demand in normalize */
		err = mapping_object(sym, p, &maps->maps[i], &ids[i]);
		if (err)
			goto err_free;
	}
	hc_procmaps__free(p->maps);
	free(p->map_obj);
	p->maps = maps;
	p->map_obj = ids;
	p->gen = ++sym->next_gen;
	if (ticks)
		p->start_ticks = ticks;
	p->stale = false;
	p->gone = false;
	sym->stats.processes++;
	return 0;

err_free:
	free(ids);
	hc_procmaps__free(maps);
	return err;
}

/* A pid seen with another start time than p's: a new process. Start p afresh; the old
 * process's objects stay (stacks already name them). */
static void check_identity(struct hc_symbolizer *sym, struct hc_sym_proc *p, uint64_t start_ns)
{
	bool reused;

	if (!start_ns)
		return;
	if (p->start_ns)
		reused = p->start_ns != start_ns;
	else
		reused = p->start_ticks && p->start_ticks != start_ns / sym->tick_ns;
	if (reused) {
		uint32_t tgid = p->tgid;

		hc_procmaps__free(p->maps);
		free(p->map_obj);
		memset(p, 0, sizeof(*p));
		p->tgid = tgid;
		p->stale = true;
		sym->stats.pid_reused++;
	}
	p->start_ns = start_ns;
}

/* A known process, its identity checked: re-read its maps when they are stale. */
static int refresh(struct hc_symbolizer *sym, struct hc_sym_proc *p)
{
	if (!p->stale)
		return p->gone ? -ESRCH : 0;
	return snapshot(sym, p);
}

int hc_symbolizer__process(struct hc_symbolizer *sym, uint32_t tgid, uint64_t start_ns,
			   struct hc_sym_proc **out)
{
	struct hc_sym_proc *p = find_proc(sym, tgid);
	int err;

	*out = NULL;
	if (p) {
		check_identity(sym, p, start_ns);
		*out = p;
		return refresh(sym, p);
	}
	err = new_proc(sym, tgid, &p);
	if (err)
		return err;
	p->start_ns = start_ns;
	*out = p;
	return snapshot(sym, p);
}

int hc_symbolizer__add_process(struct hc_symbolizer *sym, uint32_t tgid, uint64_t start_ns)
{
	struct hc_sym_proc *p;

	return hc_symbolizer__process(sym, tgid, start_ns, &p);
}

uint32_t *hc_sym_proc__unwinder_slot(struct hc_sym_proc *p)
{
	return &p->unwinder_slot;
}

void hc_sym_proc__identity(const struct hc_sym_proc *p, uint32_t *tgid, uint64_t *start_ns)
{
	*tgid = p->tgid;
	*start_ns = p->start_ns;
}

long hc_symbolizer__list_processes(struct hc_symbolizer *sym, uint32_t *out, size_t max)
{
	DIR *d = opendir(sym->proc_root);
	struct dirent *e;
	long n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char *end;
		unsigned long v;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		errno = 0;
		v = strtoul(e->d_name, &end, 10);
		if (errno || *end || v > UINT32_MAX)
			continue;
		if ((size_t)n < max)
			out[n] = (uint32_t)v;
		n++;
	}
	closedir(d);
	return n;
}

uint64_t hc_sym_proc__start_tick_ns(const struct hc_symbolizer *sym, const struct hc_sym_proc *p)
{
	return p->start_ticks * sym->tick_ns;
}

bool hc_sym_proc__has_maps(const struct hc_sym_proc *p)
{
	return p && p->maps;
}

void hc_symbolizer__forget_process(struct hc_symbolizer *sym, uint32_t tgid)
{
	struct hc_sym_proc *p = find_proc(sym, tgid);

	/* Keep the old snapshot until the re-read: samples taken before exec still need it. */
	if (p) {
		p->stale = true;
		p->gone = false;
		p->reread_interval_ns = 0; /* a new image: unknown addresses may be new code */
	}
}

int hc_symbolizer__prune_gone(struct hc_symbolizer *sym, size_t *dropped)
{
	struct hc_keymap idx = {0};
	bool *dead;
	size_t kept = 0, i;
	char path[PATH_MAX];

	*dropped = 0;
	if (!sym->nr_procs)
		return 0;
	dead = calloc(sym->nr_procs, sizeof(*dead));
	if (!dead)
		return -ENOMEM;
	/* The new index first: on failure nothing has changed. */
	for (i = 0; i < sym->nr_procs; i++) {
		bool exited;

		if (sym->has_io) {
			exited = sym->io.alive(sym->io.ctx, sym->procs[i].tgid) == -ENOENT;
		} else {
			snprintf(path, sizeof(path), "%s/%u", sym->proc_root, sym->procs[i].tgid);
			exited = access(path, F_OK) != 0 && errno == ENOENT;
		}
		/* Gone (its maps could not be read because it had exited), or no /proc entry:
		 * a later process with this pid gets a fresh snapshot. */
		if (sym->procs[i].gone || exited) {
			dead[i] = true;
			continue;
		}
		if (hc_keymap__put(&idx, sym->procs[i].tgid, 0, (uint32_t)kept++)) {
			hc_keymap__release(&idx);
			free(dead);
			return -ENOMEM;
		}
	}
	kept = 0;
	for (i = 0; i < sym->nr_procs; i++) {
		if (dead[i]) {
			hc_procmaps__free(sym->procs[i].maps);
			free(sym->procs[i].map_obj);
			(*dropped)++;
			continue;
		}
		sym->procs[kept++] = sym->procs[i];
	}
	free(dead);
	hc_keymap__release(&sym->proc_idx);
	sym->proc_idx = idx;
	sym->nr_procs = kept;
	return 0;
}

int hc_symbolizer__normalize(struct hc_symbolizer *sym, uint32_t tgid, uint64_t start_ns,
			     uint64_t ip, struct hc_uloc *out)
{
	struct hc_sym_proc *p = find_proc(sym, tgid);
	int err;

	if (p) {
		check_identity(sym, p, start_ns);
	} else {
		/* Not known yet: taken now (a gone process stays unknown). */
		err = hc_symbolizer__process(sym, tgid, start_ns, &p);
		if (err == -ENOMEM || err == -E2BIG) {
			out->obj = HC_OBJ_UNKNOWN;
			out->off = ip;
			return err;
		}
	}
	return hc_symbolizer__normalize_proc(sym, p, ip, out);
}

/*
 * The mapping containing ip, or NULL; memory that is not a file's must be executable. A
 * frame-pointer walk through code built without frame pointers reads stack or heap words as
 * return addresses: in [stack], [heap] or anonymous data each would be a "JIT" frame of its
 * own address, so it is met as an address in no mapping (and ends the stack). A JIT runtime
 * that made its memory executable after the snapshot is met as a miss: the maps are read
 * again.
 */
/* Where code may run: a file's mapping, or any executable one. */
static bool is_code(const struct hc_mapping *m)
{
	return hc_mapping__is_file(m) || (m->perms & HC_MAP_X);
}

static const struct hc_mapping *find_code(const struct hc_procmaps *pm, uint64_t ip)
{
	const struct hc_mapping *m = hc_procmaps__find(pm, ip);

	return m && is_code(m) ? m : NULL;
}

/* find_code(), first trying the mapping found last for p (mappings do not overlap: an
 * address inside the hinted one is found there by the bisection too) */
static const struct hc_mapping *find_code_hinted(struct hc_sym_proc *p, uint64_t ip)
{
	const struct hc_procmaps *pm = p->maps;
	const struct hc_mapping *m;

	if (pm && p->hint < pm->nr) {
		m = &pm->maps[p->hint];
		/* maps may have been read again since: checked as find_code() checks */
		if (m->start <= ip && ip < m->end && is_code(m))
			return m;
	}
	m = find_code(pm, ip);
	if (m)
		p->hint = (uint32_t)(m - pm->maps);
	return m;
}

int hc_symbolizer__normalize_proc(struct hc_symbolizer *sym, struct hc_sym_proc *p, uint64_t ip,
				  struct hc_uloc *out)
{
	const struct hc_mapping *m;
	uint32_t id;
	size_t idx;
	int err;

	out->obj = HC_OBJ_UNKNOWN;
	out->off = ip;
	if (!p)
		return 0;
	if (p->stale && !p->maps && p->last_reread_ns) {
		/* Its maps could not be read (e.g. EACCES): retry on the same backoff as an
		 * unknown address, not at every frame. */
		uint64_t now = hc_mono_ns(), wait = p->reread_interval_ns
							    ? p->reread_interval_ns
							    : MAPS_REREAD_MIN_INTERVAL_NS;

		if (now - p->last_reread_ns < wait)
			return 0;
		p->last_reread_ns = now;
		p->reread_interval_ns = wait * 2 < MAPS_REREAD_MAX_INTERVAL_NS
						? wait * 2
						: MAPS_REREAD_MAX_INTERVAL_NS;
	} else if (p->stale && !p->maps) {
		p->last_reread_ns = hc_mono_ns();
	}
	if (p->stale) {
		err = refresh(sym, p);
		if (err == -ENOMEM || err == -E2BIG)
			return err;
	}
	m = find_code_hinted(p, ip);
	if (!m && !p->gone) {
		uint64_t now = hc_mono_ns();

		uint64_t wait =
			p->reread_interval_ns ? p->reread_interval_ns : MAPS_REREAD_MIN_INTERVAL_NS;

		if (!p->last_reread_ns || now - p->last_reread_ns >= wait) {
			p->last_reread_ns = now;
			err = snapshot(sym, p);
			if (err == -ENOMEM || err == -E2BIG)
				return err;
			m = find_code(p->maps, ip);
			p->reread_interval_ns = m ? 0
						: wait * 2 < MAPS_REREAD_MAX_INTERVAL_NS
							? wait * 2
							: MAPS_REREAD_MAX_INTERVAL_NS;
		}
	}
	if (!m)
		return 0;
	idx = (size_t)(m - p->maps->maps);
	id = p->map_obj[idx];
	if (id == HC_OBJ_UNKNOWN) {
		err = mapping_object(sym, p, m, &id);
		if (err)
			return err;
		p->map_obj[idx] = id;
	}
	switch (get_object(sym, id)->kind) {
	case OBJ_FILE:
		out->off = ip - m->start + m->pgoff;
		break;
	case OBJ_SPECIAL:
		out->off = ip - m->start;
		break;
	case OBJ_JIT:
		out->off = ip;
		break;
	}
	out->obj = id;
	return 0;
}

/* ---- ELF objects ---- */

static int build_id_key(const uint8_t *id, size_t len, uint64_t *a, uint64_t *b)
{
	uint8_t k[16] = {0};

	if (len < 2)
		return -ENOENT;
	memcpy(k, id, len < sizeof(k) ? len : sizeof(k));
	memcpy(a, k, 8);
	memcpy(b, k + 8, 8);
	return 0;
}

static int find_symtab(struct hc_symbolizer *sym, const uint8_t *id, size_t len, uint32_t *idx)
{
	const struct symtab *st;
	uint64_t a, b;

	if (build_id_key(id, len, &a, &b) || hc_keymap__get(&sym->build_ids, a, b, idx))
		return -ENOENT;
	st = &sym->symtabs[*idx];
	if (st->build_id_len != len || memcmp(st->build_id, id, len))
		return -ENOENT;
	return 0;
}

/* Takes ownership of es. 0 with *idx, or -ENOMEM (es freed). */
static int add_symtab(struct hc_symbolizer *sym, struct hc_elfsym *es, uint32_t *idx)
{
	const uint8_t *id;
	struct symtab *st;
	size_t len;
	uint64_t a, b;

	if (sym->nr_symtabs == sym->cap_symtabs &&
	    hc_array_grow(sym->symtabs, sym->cap_symtabs, sym->nr_symtabs + 1, 32))
		goto err_free;
	st = &sym->symtabs[sym->nr_symtabs];
	memset(st, 0, sizeof(*st));
	len = hc_elfsym__build_id(es, &id);
	memcpy(st->build_id, id, len);
	st->build_id_len = len;
	st->es = es;
	*idx = (uint32_t)sym->nr_symtabs++;
	/* Sharing is an optimization: failing to index it only costs a re-parse later. */
	if (!build_id_key(id, len, &a, &b))
		hc_keymap__put(&sym->build_ids, a, b, *idx);
	return 0;

err_free:
	hc_elfsym__free(es);
	return -ENOMEM;
}

/* An object's separate debug file, looked for once, when first needed. */
struct debug_lookup {
	const struct object *o;
	int fd; /* -ENOENT: none */
	bool tried;
};

/*
 * The process's root when it is not ours (a container's), as an O_PATH descriptor; -1 when it
 * is ours, unknown, or sandboxed: the worker (another uid, under seccomp) can neither enter
 * another user's /proc/PID/root nor call openat2.
 */
static int process_root(struct hc_symbolizer *sym, uint32_t tgid)
{
	struct stat ours, theirs;
	char path[PATH_MAX];
	int fd, n;

	if (sym->has_io || !tgid || stat("/", &ours))
		return -1;
	n = snprintf(path, sizeof(path), "%s/%u/root", sym->proc_root, tgid);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -1;
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &theirs) || (theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The separate debug file of the object being parsed (es, before any merge): fd or -ENOENT. */
static int debug_fd(struct hc_symbolizer *sym, struct debug_lookup *lk, const struct hc_elfsym *es)
{
	struct hc_debugfile_query q = {.debug_root = sym->debug_root, .root_fd = -1};
	enum hc_debugfile_how how;

	if (lk->tried)
		return lk->fd;
	lk->tried = true;
	q.build_id_len = hc_elfsym__build_id(es, &q.build_id);
	q.path = lk->o->path;
	if (hc_elfsym__debuglink(es, &q.link, &q.link_crc))
		q.link = NULL;
	q.root_fd = process_root(sym, lk->o->tgid);
	lk->fd = hc_debugfile__find(&q, &sym->stats.debug, &how);
	if (q.root_fd >= 0)
		close(q.root_fd);
	return lk->fd;
}

/* A stripped object's .symtab may live in its separate debug file. */
static void add_debuginfo(struct hc_symbolizer *sym, struct debug_lookup *lk, struct hc_elfsym *es)
{
	int fd = debug_fd(sym, lk, es);

	if (fd < 0)
		return;
	/* Not ELF enough, or another build: the object's own symbols are all we have. */
	hc_elfsym__add_debuginfo_fd(es, fd);
}

/*
 * The DWARF for st's inline chains: the object's own (fd), else its separate debug file's
 * (lk); with the supplementary file of a dwz-compressed one from the same debug root. The
 * sections read to build the index, and the index kept, each within what is left of
 * dwarf_max_bytes. Without any, st->dw stays NULL: one frame per address, as before.
 */
static void load_dwarf(struct hc_symbolizer *sym, struct symtab *st, int fd,
		       struct debug_lookup *lk)
{
	size_t left = sym->dwarf_max_bytes - sym->dwarf_bytes, id_len;
	struct hc_dwinline *d, *alt;
	char path[PATH_MAX];
	const uint8_t *id;
	int dfd, err;

	if (sym->no_inline || sym->dwarf_bytes >= sym->dwarf_max_bytes)
		goto out_budget;
	d = hc_dwinline__from_fd(fd, left);
	if (!d && errno == ENODATA) {
		dfd = debug_fd(sym, lk, st->es);
		if (dfd < 0)
			return;
		d = hc_dwinline__from_fd(dfd, left);
	}
	if (!d)
		goto out_err;
	id_len = hc_dwinline__alt_build_id(d, &id);
	if (id_len) {
		/* libdw would look for it by itself, in places the file names: not here. */
		if (hc_build_id_path(sym->debug_root, id, id_len, path, sizeof(path)) ||
		    (dfd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
			hc_dwinline__free(d);
			errno = ENOLINK;
			goto out_err;
		}
		alt = hc_dwinline__alt_from_fd(dfd, left - hc_dwinline__bytes(d));
		/* over the budget, or unusable (an alt with no DWARF is no alt: not ENODATA) */
		err = alt ? hc_dwinline__set_alt(d, alt) : errno == E2BIG ? -E2BIG : -ENOLINK;
		close(dfd);
		if (err) {
			hc_dwinline__free(d);
			errno = -err;
			goto out_err;
		}
	}
	st->dw = d;
	sym->dwarf_bytes += hc_dwinline__bytes(d);
	sym->stats.dwarf_objects++;
	return;

out_err:
	if (errno == ENODATA)
		return;
	if (errno != E2BIG) {
		sym->stats.dwarf_err++;
		return;
	}
out_budget:
	if (!sym->no_inline)
		sym->stats.dwarf_over_budget++;
}

/*
 * Function starts for st, read from fd, when its symbols are only the dynamic ones (a stripped
 * object): an address without a symbol is then most likely in a local function, which the
 * call frame information still delimits. Objects with a .symtab need none: an address there
 * without a symbol is in code that has none (padding, hand-written stubs).
 */
static void load_fstarts(struct hc_symbolizer *sym, struct symtab *st, int fd)
{
	const unsigned int full = HC_ELFSYM_SYMTAB | HC_ELFSYM_DEBUGDATA | HC_ELFSYM_DEBUGINFO;
	size_t max_fdes;

	if ((hc_elfsym__sources(st->es) & full) || sym->fstarts_bytes >= HC_SYM_FSTARTS_MAX_BYTES)
		return;
	/* 16 bytes a function; a table that would not fit is not built at all (E2BIG) */
	max_fdes = (HC_SYM_FSTARTS_MAX_BYTES - sym->fstarts_bytes) / 16;
	if (!max_fdes)
		return;
	st->fs = hc_fstarts__from_fd(fd, max_fdes);
	sym->fstarts_bytes += hc_fstarts__bytes(st->fs);
}

/* Sections larger than this are not read for unwinding (a hostile file may claim any size). */
#define UNWIND_SECTION_MAX (64u << 20)

/*
 * An ELF handle for the unwinder: program headers, section headers and the call frame
 * information (.eh_frame, .eh_frame_hdr, .debug_frame) read now with pread() (ELF_C_READ,
 * not _MMAP: a file truncated under us gives a short read, not a SIGBUS), then the file let
 * go (ELF_C_FDDONE): the descriptor may close, and nothing else of the file is ever read.
 */
static Elf *unwind_elf(int fd)
{
	Elf_Scn *scn = NULL;
	size_t nph, shstrndx;
	struct stat st;
	Elf *elf;

	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return NULL;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		return NULL;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) ||
	    elf_getshdrstrndx(elf, &shstrndx))
		goto err;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			goto err;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    sh.sh_size > UNWIND_SECTION_MAX)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || (strcmp(name, ".eh_frame") && strcmp(name, ".eh_frame_hdr") &&
			      strcmp(name, ".debug_frame")))
			continue;
		elf_rawdata(scn, NULL);
		elf_getdata(scn, NULL);
	}
	if (elf_cntl(elf, ELF_C_FDDONE))
		goto err;
	return elf;
err:
	elf_end(elf);
	return NULL;
}

/* Parse o's ELF file once; afterwards o->state is PARSED or FAILED and its fd is closed. */
static int parse_object(struct hc_symbolizer *sym, struct object *o)
{
	struct debug_lookup lk = {.o = o, .fd = -ENOENT};
	uint8_t id[HC_BUILD_ID_MAX];
	struct hc_elfsym *es;
	size_t id_len = 0;
	uint32_t idx;
	int err = 0;

	if (o->state != OBJ_UNPARSED)
		return 0;
	o->state = OBJ_FAILED;
	if (o->fd < 0)
		return 0; /* counted as object_open_err when the open failed */
	if (hc_elfsym__read_build_id_fd(o->fd, id, &id_len)) {
		sym->stats.elf_err++;
		goto out_close;
	}
	if (!find_symtab(sym, id, id_len, &idx)) {
		o->symtab = idx + 1;
		o->state = OBJ_PARSED;
		goto out_close;
	}
	es = hc_elfsym__from_fd(o->fd);
	if (!es) {
		if (errno == ENOMEM)
			err = -ENOMEM;
		else
			sym->stats.elf_err++;
		goto out_close;
	}
	if (!(hc_elfsym__sources(es) & HC_ELFSYM_SYMTAB))
		add_debuginfo(sym, &lk, es);
	if (!hc_elfsym__nr(es))
		sym->stats.no_symbols++;
	err = add_symtab(sym, es, &idx);
	if (err)
		goto out_close;
	o->symtab = idx + 1;
	o->state = OBJ_PARSED;
	load_dwarf(sym, &sym->symtabs[idx], o->fd, &lk);
	load_fstarts(sym, &sym->symtabs[idx], o->fd);

out_close:
	if (lk.fd >= 0)
		close(lk.fd);
	if (sym->keep_uelf && !o->uelf_tried) {
		o->uelf_tried = true;
		o->uelf = unwind_elf(o->fd);
	}
	close(o->fd);
	o->fd = -1;
	return err;
}

/* Demangled (unless no_demangle) name of symbol idx, demangled once per symbol. */
static const char *display_name(struct hc_symbolizer *sym, struct symtab *st, size_t idx)
{
	const char *raw = hc_elfsym__name(st->es, idx);
	char buf[DEMANGLE_MAX_BYTES];
	const char *name;
	uint32_t at;

	if (!hc_keymap__get(&st->display, idx, 0, &at))
		return st->names[at];
	/* Raw names live in the symbol table until hc_symbolizer__free(). */
	if (sym->no_demangle || hc_demangle(raw, buf, sizeof(buf)) || !(name = intern(sym, buf)))
		return raw;
	/* Kept when there is room: else demangled again next time. */
	if ((st->nr_names < st->cap_names ||
	     !hc_array_grow(st->names, st->cap_names, st->nr_names + 1, 16)) &&
	    !hc_keymap__put(&st->display, idx, 0, (uint32_t)st->nr_names))
		st->names[st->nr_names++] = name;
	return name;
}

static int resolve_elf(struct hc_symbolizer *sym, struct symtab *st, uint64_t file_off,
		       struct hc_frame_info *out)
{
	uint64_t vaddr, offset;
	size_t idx;

	if (hc_elfsym__off_to_vaddr(st->es, file_off, &vaddr) ||
	    hc_elfsym__lookup(st->es, vaddr, &idx, &offset))
		return -ENOENT;
	out->name = display_name(sym, st, idx);
	out->offset = offset;
	return 0;
}

/* Parse our own vdso once (see struct hc_symbolizer). */
static void load_vdso(struct hc_symbolizer *sym)
{
	const struct hc_mapping *m = NULL;
	struct hc_procmaps *maps;
	size_t i;

	sym->vdso_tried = true;
	maps = hc_procmaps__load("/proc/self/maps");
	if (!maps)
		return;
	for (i = 0; i < maps->nr && !m; i++) {
		if (maps->maps[i].path && !strcmp(maps->maps[i].path, "[vdso]"))
			m = &maps->maps[i];
	}
	if (m) {
		sym->vdso = hc_elfsym__from_mem((const void *)(uintptr_t)m->start,
						(size_t)(m->end - m->start));
		sym->vdso_size = m->end - m->start;
	}
	hc_procmaps__free(maps);
}

static int resolve_vdso(struct hc_symbolizer *sym, const struct object *o, uint64_t off,
			struct hc_frame_info *out)
{
	uint64_t vaddr, offset;
	size_t idx;

	if (!sym->vdso_tried)
		load_vdso(sym);
	/* A different size is a different image (a 32-bit process's vdso): do not guess. */
	if (!sym->vdso || o->size != sym->vdso_size)
		return -ENOENT;
	if (hc_elfsym__off_to_vaddr(sym->vdso, off, &vaddr) ||
	    hc_elfsym__lookup(sym->vdso, vaddr, &idx, &offset))
		return -ENOENT;
	out->name = intern(sym, hc_elfsym__name(sym->vdso, idx));
	out->offset = offset;
	return out->name ? 0 : -ENOENT;
}

static int resolve_jit(struct hc_symbolizer *sym, struct object *o, uint64_t addr,
		       struct hc_frame_info *out)
{
	const char *name;
	uint64_t offset;

	if (hc_perfmap__lookup(o->perfmap, addr, &name, &offset)) {
		/* The runtime appends as it compiles: a newer map may know this address. */
		refresh_perfmap(sym, o);
		if (hc_perfmap__lookup(o->perfmap, addr, &name, &offset))
			return -ENOENT;
	}
	/* Interned: a later refresh frees the table name points into. */
	out->name = intern(sym, name);
	out->offset = offset;
	return out->name ? 0 : -ENOENT;
}

/* resolve_user() without counting; *op gets the object when there is one. */
static int resolve_one(struct hc_symbolizer *sym, const struct hc_uloc *loc,
		       struct hc_frame_info *out, struct object **op)
{
	struct object *o = get_object(sym, loc->obj);
	int err = -ENOENT;

	*op = o;
	out->name = NULL;
	out->module = MODULE_UNKNOWN;
	out->offset = loc->off;
	out->inlined = false;
	out->fstart = false;
	if (!o)
		return -ENOENT;
	out->module = o->module;
	switch (o->kind) {
	case OBJ_FILE:
		err = parse_object(sym, o);
		if (err)
			return err;
		err = o->symtab ? resolve_elf(sym, &sym->symtabs[o->symtab - 1], loc->off, out)
				: -ENOENT;
		break;
	case OBJ_SPECIAL:
		if (!strcmp(o->module, MODULE_VDSO))
			err = resolve_vdso(sym, o, loc->off, out);
		break;
	case OBJ_JIT:
		err = resolve_jit(sym, o, loc->off, out);
		break;
	}
	if (err) {
		out->name = NULL;
		out->offset = loc->off;
	}
	return err;
}

/*
 * No symbol at loc: name it by the start of the function its object's call frame information
 * says holds it ("libfoo.so+0x1a40"), so that every address of one function is one frame.
 * 0, -ENOENT (no table, or no FDE covers the address), -ENOMEM.
 */
static int resolve_fstart(struct hc_symbolizer *sym, const struct object *o,
			  const struct hc_uloc *loc, struct hc_frame_info *out)
{
	const struct symtab *st;
	uint64_t vaddr, start, off;
	char buf[PATH_MAX + 32];

	if (!o || o->kind != OBJ_FILE || !o->symtab)
		return -ENOENT;
	st = &sym->symtabs[o->symtab - 1];
	if (!st->fs || hc_elfsym__off_to_vaddr(st->es, loc->off, &vaddr) ||
	    hc_fstarts__lookup(st->fs, vaddr, &start) || vaddr - start > loc->off)
		return -ENOENT;
	/* the function does not cross its segment: its start's file offset is as far back */
	off = loc->off - (vaddr - start);
	snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, o->module, off);
	out->name = intern(sym, buf);
	if (!out->name)
		return -ENOMEM;
	out->offset = off;
	out->fstart = true;
	sym->stats.fstart_frames++;
	return 0;
}

int hc_symbolizer__resolve_user(struct hc_symbolizer *sym, const struct hc_uloc *loc,
				struct hc_frame_info *out)
{
	struct object *o;
	int err = resolve_one(sym, loc, out, &o);

	if (err == -ENOENT)
		err = resolve_fstart(sym, o, loc, out);
	if (err == -ENOENT)
		sym->stats.user_unresolved++;
	return err;
}

/* A name from DWARF as frames show it: demangled unless no_demangle, interned. */
static const char *dwarf_display(struct hc_symbolizer *sym, const char *raw)
{
	char buf[DEMANGLE_MAX_BYTES];

	if (!raw)
		return MODULE_UNKNOWN;
	if (!sym->no_demangle && !hc_demangle(raw, buf, sizeof(buf)))
		raw = buf;
	return intern(sym, raw);
}

/* The inline chain at loc in st's DWARF, from the cache or walked now; NULL on -ENOMEM. */
static const struct inline_slot *inline_chain(struct hc_symbolizer *sym, const struct symtab *st,
					      const struct hc_uloc *loc)
{
	const char *raw[HC_SYM_INLINE_MAX + 1];
	struct inline_slot *slot, *set;
	uint64_t vaddr, h;
	size_t got = 0;
	int len = -ENOENT;
	uint8_t *victim;

	if (!sym->inline_cache) {
		sym->inline_cache = calloc(INLINE_CACHE_SLOTS, sizeof(*sym->inline_cache));
		sym->inline_victim = calloc(INLINE_CACHE_SETS, 1);
		if (!sym->inline_cache || !sym->inline_victim) {
			free(sym->inline_cache);
			free(sym->inline_victim);
			sym->inline_cache = NULL;
			sym->inline_victim = NULL;
			return NULL;
		}
	}
	h = (loc->off * HC_HASH_GOLDEN) ^ ((uint64_t)loc->obj * HC_XXH_P2);
	h = (h ^ (h >> 29)) & (INLINE_CACHE_SETS - 1);
	set = &sym->inline_cache[h * INLINE_CACHE_WAYS];
	for (int w = 0; w < INLINE_CACHE_WAYS; w++)
		if (set[w].obj == loc->obj && set[w].off == loc->off && set[w].obj)
			return &set[w];
	victim = &sym->inline_victim[h];
	slot = &set[*victim];
	*victim = (uint8_t)((*victim + 1) % INLINE_CACHE_WAYS);
	free(slot->names);
	*slot = (struct inline_slot){0};
	if (!hc_elfsym__off_to_vaddr(st->es, loc->off, &vaddr))
		len = hc_dwinline__lookup(st->dw, vaddr, raw, HC_SYM_INLINE_MAX + 1, &got);
	if (len == -ENOMEM)
		return NULL;
	if (len > 0) {
		slot->names = calloc(got, sizeof(*slot->names));
		if (!slot->names)
			return NULL;
		for (size_t i = 0; i < got; i++) {
			/* the subprogram's name is only a stand-in for a missing symbol */
			slot->names[i] = i || raw[i] ? dwarf_display(sym, raw[i]) : NULL;
			if ((i || raw[i]) && !slot->names[i]) {
				free(slot->names);
				slot->names = NULL;
				return NULL;
			}
		}
		slot->n = (uint32_t)got;
		slot->len = (uint32_t)len;
	}
	slot->obj = loc->obj;
	slot->off = loc->off;
	return slot;
}

/* Appends the functions inlined at loc to frames[0] (resolved or not); 0 or -ENOMEM. */
static int add_inlined(struct hc_symbolizer *sym, const struct hc_uloc *loc, const struct object *o,
		       struct hc_frame_info *frames, size_t max, size_t *n)
{
	const struct inline_slot *c;
	const struct symtab *st;
	size_t got, skip;

	if (!o || o->kind != OBJ_FILE || !o->symtab)
		return 0;
	st = &sym->symtabs[o->symtab - 1];
	if (!st->dw)
		return 0;
	c = inline_chain(sym, st, loc);
	if (!c)
		return -ENOMEM;
	if (!c->n)
		return 0;
	/* No symbol, but DWARF knows the function. */
	if (!frames[0].name && c->names[0]) {
		frames[0].name = c->names[0];
		frames[0].offset = 0;
	}
	/* names[0], then the innermost max - 1 */
	got = c->n < max ? c->n : max;
	skip = c->n - got;
	for (size_t i = 1; i < got; i++)
		frames[i] = (struct hc_frame_info){
			.name = c->names[skip + i], .module = frames[0].module, .inlined = true};
	*n = got;
	sym->stats.inline_frames += got - 1;
	if (c->len > got)
		sym->stats.inline_truncated++;
	return 0;
}

int hc_symbolizer__resolve_user_inline(struct hc_symbolizer *sym, const struct hc_uloc *loc,
				       struct hc_frame_info *frames, size_t max, size_t *n)
{
	struct object *o;
	int err;

	*n = 0;
	if (!max)
		return -EINVAL;
	err = resolve_one(sym, loc, &frames[0], &o);
	if (err && err != -ENOENT)
		return err;
	*n = 1;
	if (max > 1 && add_inlined(sym, loc, o, frames, max, n))
		return -ENOMEM;
	/* DWARF's name for the function, when it has one, before its start's */
	if (!frames[0].name && resolve_fstart(sym, o, loc, &frames[0]) == -ENOMEM)
		return -ENOMEM;
	if (!frames[0].name) {
		sym->stats.user_unresolved++;
		return -ENOENT;
	}
	return 0;
}

/* ---- For the unwinder ---- */

/* Where o's loadable segments lie in a process that maps file offset m->pgoff at m->start:
 * the load bias from the segment holding that offset, then the segments' span. */
/* elf's PT_LOAD headers into out[0..*n) (at most max). 0, or -EINVAL (unreadable, or more
 * than max). */
static int load_segs(Elf *elf, struct load_seg *out, size_t max, size_t *n)
{
	size_t nph;

	*n = 0;
	if (elf_getphdrnum(elf, &nph))
		return -EINVAL;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (*n == max)
			return -EINVAL;
		out[(*n)++] = (struct load_seg){.vaddr = ph.p_vaddr,
						.offset = ph.p_offset,
						.filesz = ph.p_filesz,
						.memsz = ph.p_memsz,
						.align = ph.p_align,
						.flags = ph.p_flags};
	}
	return 0;
}

/* The span and bias of the module that mapping m of a process belongs to, from its
 * loadable segments. 0, -ENOENT (m is not in an executable segment). */
static int segs_span(const struct load_seg *segs, size_t n, const struct hc_mapping *m,
		     struct hc_sym_module *mod)
{
	uint64_t lo = UINT64_MAX, hi = 0, bias = 0;
	bool found = false;

	for (size_t i = 0; i < n; i++) {
		const struct load_seg *ph = &segs[i];
		uint64_t align = ph->align > 1 && !(ph->align & (ph->align - 1)) ? ph->align : 1;

		if ((ph->vaddr & ~(align - 1)) < lo)
			lo = ph->vaddr & ~(align - 1);
		if (ph->vaddr + ph->memsz > hi)
			hi = ph->vaddr + ph->memsz;
		if (!found && (ph->flags & PF_X) && m->pgoff >= (ph->offset & ~(align - 1)) &&
		    m->pgoff < ph->offset + ph->filesz) {
			bias = m->start - (ph->vaddr - ph->offset + m->pgoff);
			found = true;
		}
	}
	if (!found || lo >= hi)
		return -ENOENT;
	mod->low = bias + lo;
	mod->high = bias + hi;
	mod->bias = bias;
	return 0;
}

static int module_span(Elf *elf, const struct hc_mapping *m, struct hc_sym_module *mod)
{
	struct load_seg segs[LOAD_SEGS_MAX];
	size_t n;

	if (load_segs(elf, segs, LOAD_SEGS_MAX, &n))
		return -EINVAL;
	return segs_span(segs, n, m, mod);
}

static Elf *vdso_uelf(struct hc_symbolizer *sym)
{
	if (!sym->vdso_tried)
		load_vdso(sym);
	if (!sym->vdso_uelf && sym->vdso && !sym->vdso_copy) {
		const struct hc_mapping *m = NULL;
		struct hc_procmaps *maps = hc_procmaps__load("/proc/self/maps");

		for (size_t i = 0; maps && i < maps->nr && !m; i++) {
			if (maps->maps[i].path && !strcmp(maps->maps[i].path, "[vdso]"))
				m = &maps->maps[i];
		}
		if (m && (sym->vdso_copy = malloc(m->end - m->start))) {
			memcpy(sym->vdso_copy, (const void *)(uintptr_t)m->start,
			       m->end - m->start);
			sym->vdso_uelf = elf_memory(sym->vdso_copy, m->end - m->start);
		}
		hc_procmaps__free(maps);
	}
	return sym->vdso_uelf;
}

int hc_symbolizer__maps_gen(struct hc_symbolizer *sym, struct hc_sym_proc *p, uint64_t *gen)
{
	sym->keep_uelf = true;
	if (!p || p->stale || !p->maps)
		return -ESRCH;
	*gen = p->gen;
	return 0;
}

int hc_symbolizer__modules(struct hc_symbolizer *sym, struct hc_sym_proc *p,
			   struct hc_sym_module *out, size_t max, size_t *n, uint64_t *gen)
{
	int err;

	*n = 0;
	err = hc_symbolizer__maps_gen(sym, p, gen);
	if (err)
		return err;
	for (size_t i = 0; i < p->maps->nr && *n < max; i++) {
		const struct hc_mapping *m = &p->maps->maps[i];
		struct object *o = get_object(sym, p->map_obj[i]);
		struct hc_sym_module *mod = &out[*n];
		bool dup = false;
		Elf *elf;

		if (!(m->perms & HC_MAP_X) || !o)
			continue;
		if (o->kind == OBJ_FILE) {
			if (!o->uelf_tried && o->fd >= 0) {
				o->uelf_tried = true;
				o->uelf = unwind_elf(o->fd);
			}
			elf = o->uelf;
		} else if (o->kind == OBJ_SPECIAL && !strcmp(o->module, MODULE_VDSO)) {
			elf = vdso_uelf(sym);
			if (elf && o->size != sym->vdso_size)
				elf = NULL;
		} else {
			continue;
		}
		/* its CFI let go (hc_symbolizer__drop_cfi): the span from the segments kept */
		if (!elf && !o->segs)
			continue;
		/* An object with two executable mappings is one module. */
		for (size_t k = 0; k < *n && !dup; k++)
			dup = out[k].obj == p->map_obj[i];
		if (dup || (elf ? module_span(elf, m, mod) : segs_span(o->segs, o->n_segs, m, mod)))
			continue;
		mod->obj = p->map_obj[i];
		mod->module = o->module;
		mod->elf = elf;
		(*n)++;
	}
	return 0;
}

void hc_symbolizer__drop_cfi(struct hc_symbolizer *sym, uint32_t obj)
{
	struct object *o = get_object(sym, obj);
	struct load_seg segs[LOAD_SEGS_MAX];
	size_t n;

	if (!o || o->kind != OBJ_FILE || !o->uelf)
		return;
	if (!o->segs) {
		if (load_segs(o->uelf, segs, LOAD_SEGS_MAX, &n) || !n)
			return; /* kept: spans are found from the ELF */
		o->segs = malloc(n * sizeof(*segs));
		if (!o->segs)
			return;
		memcpy(o->segs, segs, n * sizeof(*segs));
		o->n_segs = (uint8_t)n;
	}
	elf_end(o->uelf);
	o->uelf = NULL;
}

int hc_symbolizer__module_cfi(struct hc_symbolizer *sym, struct hc_sym_proc *p, uint32_t obj,
			      struct Elf **out)
{
	struct object *o = get_object(sym, obj);
	int fd;

	*out = NULL;
	if (!o || o->kind != OBJ_FILE || !p || p->stale || !p->maps)
		return -ENOENT;
	if (o->uelf) {
		*out = o->uelf;
		return 0;
	}
	for (size_t i = 0; i < p->maps->nr; i++) {
		if (p->map_obj[i] != obj)
			continue;
		fd = open_mapping(sym, p->tgid, &p->maps->maps[i]);
		if (fd < 0)
			return fd;
		o->uelf = unwind_elf(fd); /* its data read in: the descriptor may close */
		close(fd);
		if (!o->uelf)
			return -ENODATA;
		*out = o->uelf;
		return 0;
	}
	return -ENOENT;
}

bool hc_symbolizer__tracks(struct hc_symbolizer *sym, uint32_t tgid, uint64_t start_ns)
{
	const struct hc_sym_proc *p = find_proc(sym, tgid);

	return p && (!start_ns || !p->start_ns || p->start_ns == start_ns);
}

void hc_symbolizer__stats(const struct hc_symbolizer *sym, struct hc_symbolizer_stats *out)
{
	*out = sym->stats;
}
