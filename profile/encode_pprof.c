// SPDX-License-Identifier: GPL-2.0-only
/*
 * pprof export: Google's profile.proto (github.com/google/pprof, proto/profile.proto), encoded
 * by hand and gzipped with zlib, streamed to the caller's FILE.
 *
 * One walk over the tree. Each frame node is turned into a location id when the walk enters
 * it (a frame met before, by its tree-interned name pointers, in one lookup), and pushed on a
 * stack of the path's location ids (outermost first); a node with
 * selected self weight becomes one sample whose location ids are that stack read backwards
 * (pprof wants the leaf first). Process and thread nodes are not locations: they set the
 * sample's `pid`/`process` and `tid`/`thread` labels (pid and tid numeric, with their key as
 * num_unit so that pid 0 is not dropped: see put_num_label()). A waker node is two frames,
 * "--" and the waker's name, as in offwaketime and in the folded export. An inlined frame
 * (right below another frame) is no location of its own but one more line of its caller's:
 * that location, extended, replaces the caller's on the stack; so a function and what was
 * inlined into it are one Location whose Lines are innermost first, as profile.proto has
 * them (pprof prints such lines as "(inline)" frames). Samples are encoded and
 * compressed as the walk finds them; the tables they refer to (strings, functions, locations,
 * mappings) are interned through hash tables and written after the samples (protobuf fields
 * may come in any order, and readers resolve string indices after the whole message), so
 * memory is bounded by the distinct names, not by the output.
 *
 * Function names are what hc_profile__write_folded() prints for the same frame (';', '\n'
 * and '\r' become '_', unresolved user frames are `[unknown MODULE+0xOFF]`, with OFF, a file
 * offset, as the location's address, as is the start of a frame named `MODULE+0xSTART`), except
 * that kernel frames do not get folded's `_[k]` suffix: they live in the `[kernel.kallsyms]`
 * mapping (or their module's) instead. Every string is also made valid UTF-8 (invalid bytes
 * become U+FFFD): profile.proto is proto3, whose `string` fields protobuf runtimes refuse
 * when they are not UTF-8. Functions have no source file name: we do not know one, and the
 * binary is the mapping's file name. Mappings carry no addresses (the tree keeps none) and
 * say has_functions, so pprof does not try to symbolize them.
 *
 * The walk recurses once per tree level; trees deeper than HC_PPROF_MAX_TREE_DEPTH (the limit
 * of the JSON and folded encoders) are refused with -EOVERFLOW.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/varint.h"
#include "profile/weights.h"
#include "profile/tree.h"
#include "profile/profile.h"
#include "profile/encode.h"
#include "profile/profile_internal.h"

#define HC_PPROF_MAX_TREE_DEPTH 1000
/* compressed in chunks of this many protobuf bytes */
#define PB_FLUSH_BYTES (64 * 1024)
#define GZ_OUT_BYTES (64 * 1024)
#define MIN_SLOTS 256

/* profile.proto field numbers */
enum {
	PROFILE_SAMPLE_TYPE = 1,
	PROFILE_SAMPLE = 2,
	PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4,
	PROFILE_FUNCTION = 5,
	PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9,
	PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11,
	PROFILE_PERIOD = 12,
	PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,

	VALUE_TYPE_TYPE = 1,
	VALUE_TYPE_UNIT = 2,

	SAMPLE_LOCATION_ID = 1,
	SAMPLE_VALUE = 2,
	SAMPLE_LABEL = 3,

	LABEL_KEY = 1,
	LABEL_STR = 2,
	LABEL_NUM = 3,
	LABEL_NUM_UNIT = 4,

	MAPPING_ID = 1,
	MAPPING_FILENAME = 5,
	MAPPING_HAS_FUNCTIONS = 7,

	LOCATION_ID = 1,
	LOCATION_MAPPING_ID = 2,
	LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,

	LINE_FUNCTION_ID = 1,

	FUNCTION_ID = 1,
	FUNCTION_NAME = 2,
	FUNCTION_FILENAME = 4,
};

enum { WT_VARINT = 0, WT_LEN = 2 };

/* ---- protobuf bytes ---- */

struct pbuf {
	uint8_t *b;
	size_t len;
	size_t cap;
};

/* Room for `more` bytes; afterwards p->b is never NULL, so that memcpy() and pointer
 * arithmetic on it are defined even for 0 bytes (an empty name). */
static int pbuf_reserve(struct pbuf *p, size_t more)
{
	size_t cap;
	uint8_t *b;

	if (p->b && p->len + more <= p->cap)
		return 0;
	cap = p->cap ? p->cap : 256;
	while (cap < p->len + more)
		cap *= 2;
	b = realloc(p->b, cap);
	if (!b)
		return -ENOMEM;
	p->b = b;
	p->cap = cap;
	return 0;
}

/* Callers reserve HC_VARINT_MAX bytes per varint first. */
static void put_varint_raw(struct pbuf *p, uint64_t v)
{
	p->len = (size_t)(hc_varint_put(p->b + p->len, v) - p->b);
}

static int put_varint(struct pbuf *p, uint64_t v)
{
	if (pbuf_reserve(p, HC_VARINT_MAX))
		return -ENOMEM;
	put_varint_raw(p, v);
	return 0;
}

static int put_tag(struct pbuf *p, unsigned int field, unsigned int wire_type)
{
	return put_varint(p, (uint64_t)field << 3 | wire_type);
}

/* A varint field; proto3 leaves fields at their default (0) out. int64 values go as their
 * two's complement, as protobuf's int64 does. */
static int put_uint_field(struct pbuf *p, unsigned int field, uint64_t v)
{
	if (!v)
		return 0;
	if (put_tag(p, field, WT_VARINT) || put_varint(p, v))
		return -ENOMEM;
	return 0;
}

static int put_bytes_field(struct pbuf *p, unsigned int field, const void *data, size_t len)
{
	if (put_tag(p, field, WT_LEN) || put_varint(p, len) || pbuf_reserve(p, len))
		return -ENOMEM;
	if (len)
		memcpy(p->b + p->len, data, len);
	p->len += len;
	return 0;
}

/* ---- interning ---- */

/* Distinct strings, in table order, bytes in one growing buffer. */
struct strtab {
	char *bytes;
	size_t len;
	size_t cap;
	size_t *off; /* off[i]: start of string i; its length is stored in lens[i] */
	uint32_t *lens;
	uint64_t *hashes;
	size_t n;
	size_t cap_n;
	uint64_t *slots; /* see SLOT() */
	size_t n_slots;
};

/* Fixed 5-word keys -> id (index + 1): functions, locations, mappings, tree frames. */
#define TUP_WORDS 5
struct tuptab {
	uint64_t (*keys)[TUP_WORDS];
	size_t n;
	size_t cap;
	uint64_t *slots; /* see SLOT() */
	size_t n_slots;
};

/*
 * A hash slot: the entry's index + 1 (0: empty) in the low 32 bits, the high 32 bits of its
 * hash above, so that a probe past other entries does not have to read them (the tables
 * are bigger than the caches; each entry read is a cache miss).
 */
#define SLOT(hash, idx) (((hash)&0xffffffff00000000ULL) | ((uint64_t)(idx) + 1))
#define SLOT_IDX(slot) ((size_t)((slot)&0xffffffffu) - 1)
#define SLOT_TAG_MATCH(slot, hash) ((((slot) ^ (hash)) >> 32) == 0)

static int slots_grow(uint64_t **slots, size_t *n_slots, size_t count,
		      uint64_t (*hash_of)(const void *, size_t), const void *tab)
{
	size_t n = *n_slots ? *n_slots * 2 : MIN_SLOTS, mask = n - 1;
	uint64_t *s;

	/* at most half full: short probe chains */
	while (count + 1 > n / 2) {
		n *= 2;
		mask = n - 1;
	}
	s = calloc(n, sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t idx = 0; idx < count; idx++) {
		uint64_t h = hash_of(tab, idx);
		size_t i = h & mask;

		while (s[i])
			i = (i + 1) & mask;
		s[i] = SLOT(h, idx);
	}
	free(*slots);
	*slots = s;
	*n_slots = n;
	return 0;
}

static uint64_t strtab_hash_of(const void *tab, size_t idx)
{
	return ((const struct strtab *)tab)->hashes[idx];
}

/* Index of s[0..n) in the table, adding it if new; -ENOMEM. */
static int64_t strtab_intern(struct strtab *t, const char *s, size_t n)
{
	uint64_t h = hc_hash_bytes(s, n);
	size_t mask, i;

	if (n > UINT32_MAX || t->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((t->n + 1) > t->n_slots / 2 &&
	    slots_grow(&t->slots, &t->n_slots, t->n, strtab_hash_of, t))
		return -ENOMEM;
	mask = t->n_slots - 1;
	for (i = h & mask; t->slots[i]; i = (i + 1) & mask) {
		size_t idx = SLOT_IDX(t->slots[i]);

		/* the table's bytes are NULL while it holds only "" */
		if (SLOT_TAG_MATCH(t->slots[i], h) && t->lens[idx] == n &&
		    (!n || !memcmp(t->bytes + t->off[idx], s, n)))
			return (int64_t)idx;
	}
	if (t->n == t->cap_n) {
		size_t cap = t->cap_n ? t->cap_n * 2 : 256;
		size_t *off = realloc(t->off, cap * sizeof(*off));
		uint32_t *lens;
		uint64_t *hashes;

		if (!off)
			return -ENOMEM;
		t->off = off;
		lens = realloc(t->lens, cap * sizeof(*lens));
		if (!lens)
			return -ENOMEM;
		t->lens = lens;
		hashes = realloc(t->hashes, cap * sizeof(*hashes));
		if (!hashes)
			return -ENOMEM;
		t->hashes = hashes;
		t->cap_n = cap;
	}
	if (t->len + n > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		char *b;

		while (cap < t->len + n)
			cap *= 2;
		b = realloc(t->bytes, cap);
		if (!b)
			return -ENOMEM;
		t->bytes = b;
		t->cap = cap;
	}
	if (n)
		memcpy(t->bytes + t->len, s, n);
	t->off[t->n] = t->len;
	t->lens[t->n] = (uint32_t)n;
	t->hashes[t->n] = h;
	t->len += n;
	t->slots[i] = SLOT(h, t->n);
	return (int64_t)t->n++;
}

static uint64_t tuptab_hash_of(const void *tab, size_t idx)
{
	return hc_hash_words(((const struct tuptab *)tab)->keys[idx], TUP_WORDS, 0);
}

/* The id (index + 1) of the key, adding it if new (*created, when not NULL); -ENOMEM. */
static int64_t tuptab_intern(struct tuptab *t, uint64_t a, uint64_t b, uint64_t c, uint64_t d,
			     uint64_t e, bool *created)
{
	const uint64_t key[TUP_WORDS] = {a, b, c, d, e};
	uint64_t h = hc_hash_words(key, TUP_WORDS, 0);
	size_t mask, i;

	if (t->n >= UINT32_MAX - 1)
		return -ENOMEM;
	if ((t->n + 1) > t->n_slots / 2 &&
	    slots_grow(&t->slots, &t->n_slots, t->n, tuptab_hash_of, t))
		return -ENOMEM;
	mask = t->n_slots - 1;
	for (i = h & mask; t->slots[i]; i = (i + 1) & mask) {
		size_t idx = SLOT_IDX(t->slots[i]);

		if (SLOT_TAG_MATCH(t->slots[i], h) && !memcmp(t->keys[idx], key, sizeof(key))) {
			if (created)
				*created = false;
			return (int64_t)idx + 1;
		}
	}
	if (t->n == t->cap && hc_array_grow(t->keys, t->cap, t->n + 1, 256))
		return -ENOMEM;
	memcpy(t->keys[t->n], key, sizeof(key));
	t->slots[i] = SLOT(h, t->n);
	if (created)
		*created = true;
	return (int64_t)++t->n;
}

/* ---- the encoder ---- */

struct sample_type {
	unsigned int bit; /* HC_W_ON, HC_W_OFF, HC_W_RUNQ */
	bool samples;	  /* samples/count rather than nanoseconds */
	const char *type, *unit;
};

static const struct sample_type all_types[] = {
	{HC_W_ON, true, "samples", "count"},
	{HC_W_ON, false, "cpu", "nanoseconds"},
	{HC_W_OFF, false, "off_cpu", "nanoseconds"},
	{HC_W_RUNQ, false, "runqueue", "nanoseconds"},
};

struct pprof {
	unsigned int weights;
	const struct sample_type *types[4];
	size_t n_types;

	struct strtab strs;
	struct tuptab functions; /* (name, filename, 0, 0, 0) */
	/* (function id, mapping id, address, location it is inlined into or 0, 0): the lines of a
	 * location are its function, then those of the location it is inlined into */
	struct tuptab locations;
	struct tuptab mappings; /* (filename, 0, 0, 0, 0) */
	/*
	 * (kind | inlined << 8, name, module, offset, location it is inlined into or 0) of tree
	 * frames -> location id (frame_locs[id - 1]): the tree interns its strings, so a frame
	 * seen before costs one lookup on pointers instead of cleaning and interning its name
	 * again.
	 */
	struct tuptab frames;
	uint64_t *frame_locs;
	size_t cap_frame_locs;
	uint64_t loc_dashes; /* the waker separator's location; 0: not made yet */

	int64_t s_pid, s_process, s_tid, s_thread, s_dashes, s_kernel_mapping;

	/* the walk: location ids of the path, outermost first, and the label nodes; top_kind:
	 * the kind of the frame the last of them is (0: none, or a waker's), which an inlined
	 * frame of the same kind extends */
	uint64_t *path;
	size_t n_path;
	size_t cap_path;
	enum hc_node_kind top_kind;
	const struct hc_node *proc, *thread;
	int64_t s_proc, s_thread_name; /* their names' string indices */

	struct pbuf name;   /* scratch: a cleaned name */
	struct pbuf sample; /* scratch: one sample's body */
	struct pbuf packed; /* scratch: a packed field's body */
	struct pbuf out;    /* protobuf bytes not yet compressed */

	z_stream z;
	bool z_ready;
	uint8_t *zout;
	FILE *file;
};

/* Cleans s into b as folded would print it (';', '\n', '\r' -> '_') and as proto3 wants it
 * (invalid UTF-8 bytes -> U+FFFD). */
static int clean_name(struct pbuf *b, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s);

	b->len = 0;
	/* each byte becomes at most 3 */
	if (pbuf_reserve(b, 3 * n))
		return -ENOMEM;
	for (size_t i = 0; i < n;) {
		size_t l = hc__utf8_seq_len(u + i, n - i);

		if (!l) {
			memcpy(b->b + b->len, "\xEF\xBF\xBD", 3);
			b->len += 3;
			i++;
			continue;
		}
		if (l == 1 && (s[i] == ';' || s[i] == '\n' || s[i] == '\r')) {
			b->b[b->len++] = '_';
		} else {
			memcpy(b->b + b->len, s + i, l);
			b->len += l;
		}
		i += l;
	}
	return 0;
}

static int64_t intern_clean(struct pprof *pp, const char *s)
{
	if (clean_name(&pp->name, s))
		return -ENOMEM;
	return strtab_intern(&pp->strs, (const char *)pp->name.b, pp->name.len);
}

static int64_t intern_lit(struct pprof *pp, const char *s)
{
	return strtab_intern(&pp->strs, s, strlen(s));
}

/* Location id of function `name_idx` in mapping `mapping_idx` (string index of the
 * mapping's file name, or -1: none) at `address`, inlined into location `into` (0: none). */
static int64_t location_of(struct pprof *pp, int64_t name_idx, int64_t mapping_idx,
			   uint64_t address, uint64_t into)
{
	int64_t fn, map = 0;

	if (name_idx < 0)
		return name_idx;
	fn = tuptab_intern(&pp->functions, (uint64_t)name_idx, 0, 0, 0, 0, NULL);
	if (fn < 0)
		return fn;
	if (mapping_idx >= 0) {
		map = tuptab_intern(&pp->mappings, (uint64_t)mapping_idx, 0, 0, 0, 0, NULL);
		if (map < 0)
			return map;
	}
	return tuptab_intern(&pp->locations, (uint64_t)fn, (uint64_t)map, address, into, 0, NULL);
}

/* The location `into` extended by function `name_idx` inlined into it: same mapping and
 * address, one line more. */
static int64_t inlined_location(struct pprof *pp, int64_t name_idx, uint64_t into)
{
	const uint64_t *k = pp->locations.keys[into - 1];
	int64_t fn;

	if (name_idx < 0)
		return name_idx;
	fn = tuptab_intern(&pp->functions, (uint64_t)name_idx, 0, 0, 0, 0, NULL);
	if (fn < 0)
		return fn;
	return tuptab_intern(&pp->locations, (uint64_t)fn, k[1], k[2], into, 0, NULL);
}

static int push_loc(struct pprof *pp, int64_t loc)
{
	if (loc < 0)
		return (int)loc;
	if (pp->n_path == pp->cap_path && hc_array_grow(pp->path, pp->cap_path, pp->n_path + 1, 64))
		return -ENOMEM;
	pp->path[pp->n_path++] = (uint64_t)loc;
	return 0;
}

/* The location of a frame node (of a waker node: of its name), inlined into location `into`
 * (0: none). */
static int64_t frame_location(struct pprof *pp, const struct hc_node *n, uint64_t into)
{
	const char *name = hc_node__name(n), *module = hc_node__module(n);
	int64_t map = -1, loc;
	char *unknown = NULL;
	int r;

	switch (hc_node__kind(n)) {
	case HC_NODE_KERNEL:
		if (into)
			return inlined_location(pp, intern_clean(pp, name), into);
		map = module ? intern_clean(pp, module) : pp->s_kernel_mapping;
		if (map < 0)
			return map;
		return location_of(pp, intern_clean(pp, name), map, 0, 0);
	case HC_NODE_USER:
		r = hc__unknown_frame_name(n, &unknown);
		if (r < 0)
			return r;
		if (into) {
			loc = inlined_location(pp, intern_clean(pp, r ? unknown : name), into);
			free(unknown);
			return loc;
		}
		if (module) {
			map = intern_clean(pp, module);
			if (map < 0) {
				free(unknown);
				return map;
			}
		}
		/* a frame named by its function's start (MODULE+0xSTART) has that start as its
		 * address, as an unresolved one has its own */
		if (!r)
			return location_of(
				pp, intern_clean(pp, name), map,
				hc_node__offset(n) >= 0 ? (uint64_t)hc_node__offset(n) : 0, 0);
		/* folded's name, and the offset as the address, so that a reader with the binary
		 * can still symbolize it */
		loc = location_of(pp, intern_clean(pp, unknown), map, (uint64_t)hc_node__offset(n),
				  0);
		free(unknown);
		return loc;
	default: /* HC_NODE_WAKER */
		return location_of(pp, intern_clean(pp, name), -1, 0, 0);
	}
}

/*
 * Pushes the locations a frame or waker node stands for. An inlined frame right below another
 * frame of its kind is no location of its own: it replaces the path's last location by that
 * location with one more line (profile.proto's way: a location's lines are innermost first, the
 * last one the function the others were inlined into).
 */
static int push_frame(struct pprof *pp, const struct hc_node *n)
{
	enum hc_node_kind kind = hc_node__kind(n);
	uint64_t into = 0;
	bool created;
	int64_t id, loc;
	int err;

	if (kind == HC_NODE_WAKER) {
		pp->top_kind = HC_NODE_ROOT;
		/* offwaketime's separator between the blocked stack and its waker */
		if (!pp->loc_dashes) {
			loc = location_of(pp, pp->s_dashes, -1, 0, 0);
			if (loc < 0)
				return (int)loc;
			pp->loc_dashes = (uint64_t)loc;
		}
		err = push_loc(pp, (int64_t)pp->loc_dashes);
		if (err)
			return err;
	}
	if (hc_node__inlined(n) && pp->top_kind == kind && pp->n_path)
		into = pp->path[--pp->n_path];
	pp->top_kind = kind != HC_NODE_WAKER ? kind : HC_NODE_ROOT;
	id = tuptab_intern(&pp->frames, kind | (uint64_t)hc_node__inlined(n) << 8,
			   (uintptr_t)hc_node__name(n), (uintptr_t)hc_node__module(n),
			   (uint64_t)hc_node__offset(n), into, &created);
	if (id < 0)
		return (int)id;
	if (!created)
		return push_loc(pp, (int64_t)pp->frame_locs[id - 1]);
	if (hc_array_grow(pp->frame_locs, pp->cap_frame_locs, (size_t)id, 256))
		return -ENOMEM;
	loc = frame_location(pp, n, into);
	if (loc < 0)
		return (int)loc;
	pp->frame_locs[id - 1] = (uint64_t)loc;
	return push_loc(pp, loc);
}

static int gz_write(struct pprof *pp, const uint8_t *data, size_t len, int flush)
{
	int zerr;

	pp->z.next_in = (Bytef *)data;
	pp->z.avail_in = (uInt)len;
	do {
		size_t have;

		pp->z.next_out = pp->zout;
		pp->z.avail_out = GZ_OUT_BYTES;
		zerr = deflate(&pp->z, flush);
		if (zerr == Z_STREAM_ERROR)
			return -EIO;
		have = GZ_OUT_BYTES - pp->z.avail_out;
		errno = 0;
		if (have && fwrite(pp->zout, 1, have, pp->file) != have)
			return errno ? -errno : -EIO;
	} while (pp->z.avail_out == 0 || (flush == Z_FINISH && zerr != Z_STREAM_END));
	return 0;
}

/* Compresses what has accumulated once it is worth a deflate call. */
static int out_maybe_flush(struct pprof *pp)
{
	int err;

	if (pp->out.len < PB_FLUSH_BYTES)
		return 0;
	err = gz_write(pp, pp->out.b, pp->out.len, Z_NO_FLUSH);
	pp->out.len = 0;
	return err;
}

/* A string label; str is a string index. An empty string (index 0) is no label: str 0 is how
 * profile.proto says "not a string label", so pprof would read it as a numeric one. */
static int put_str_label(struct pbuf *b, struct pbuf *scratch, int64_t key, int64_t str)
{
	if (!str)
		return 0;
	scratch->len = 0;
	if (put_uint_field(scratch, LABEL_KEY, (uint64_t)key) ||
	    put_uint_field(scratch, LABEL_STR, (uint64_t)str))
		return -ENOMEM;
	return put_bytes_field(b, SAMPLE_LABEL, scratch->b, scratch->len);
}

/* A numeric label, whose unit is its key (callers keep num <= INT64_MAX: it is an int64). */
static int put_num_label(struct pbuf *b, struct pbuf *scratch, int64_t key, uint64_t num)
{
	/*
	 * proto3 leaves num out when it is 0 (serve's merged identities are pid/tid 0), and
	 * pprof reads a label with neither str, num nor num_unit as no label at all (profile/
	 * encode.go postDecode). The unit keeps it: the key itself, which is the unit pprof
	 * infers for a numeric label without one (Profile.NumLabelUnits), so -tags and
	 * -tagfocus read the same either way; -raw prints it ("pid:[0 pid]").
	 */
	scratch->len = 0;
	if (put_uint_field(scratch, LABEL_KEY, (uint64_t)key) ||
	    put_uint_field(scratch, LABEL_NUM, num) ||
	    put_uint_field(scratch, LABEL_NUM_UNIT, (uint64_t)key))
		return -ENOMEM;
	return put_bytes_field(b, SAMPLE_LABEL, scratch->b, scratch->len);
}

static int encode_sample(struct pprof *pp, const uint64_t *vals)
{
	struct pbuf *s = &pp->sample, *pk = &pp->packed;
	size_t len = 0;

	s->len = 0;
	for (size_t i = 0; i < pp->n_path; i++)
		len += hc_varint_len(pp->path[i]);
	if (put_tag(s, SAMPLE_LOCATION_ID, WT_LEN) || put_varint(s, len) || pbuf_reserve(s, len))
		return -ENOMEM;
	for (size_t i = pp->n_path; i-- > 0;)
		put_varint_raw(s, pp->path[i]);

	pk->len = 0;
	for (size_t i = 0; i < pp->n_types; i++) {
		if (vals[i] > INT64_MAX)
			return -EOVERFLOW;
		if (put_varint(pk, vals[i]))
			return -ENOMEM;
	}
	if (put_bytes_field(s, SAMPLE_VALUE, pk->b, pk->len))
		return -ENOMEM;

	if (pp->proc && (put_num_label(s, pk, pp->s_pid, hc_node__id(pp->proc)) ||
			 put_str_label(s, pk, pp->s_process, pp->s_proc)))
		return -ENOMEM;
	if (pp->thread && (put_num_label(s, pk, pp->s_tid, hc_node__id(pp->thread)) ||
			   put_str_label(s, pk, pp->s_thread, pp->s_thread_name)))
		return -ENOMEM;

	if (put_bytes_field(&pp->out, PROFILE_SAMPLE, s->b, s->len))
		return -ENOMEM;
	return out_maybe_flush(pp);
}

/* One sample: the path's locations leaf first, the selected self values, the labels. */
static int emit_sample(struct pprof *pp, const struct hc_node *n, const uint64_t *vals)
{
	size_t saved_path = pp->n_path;
	int err;

	if (!pp->n_path) {
		/* no frame on the path: a stand-in named after the deepest node, for this
		 * sample only */
		err = push_loc(pp, location_of(pp, intern_clean(pp, hc_node__name(n)), -1, 0, 0));
		if (err)
			return err;
	}
	err = encode_sample(pp, vals);
	pp->n_path = saved_path;
	return err;
}

static uint64_t type_value(const struct sample_type *t, const struct hc_weights *w)
{
	if (t->samples)
		return w->samples;
	return hc_weights__select(w, t->bit);
}

static int walk(struct pprof *pp, const struct hc_node *n, unsigned int depth)
{
	const struct hc_node *saved_proc = pp->proc, *saved_thread = pp->thread;
	int64_t saved_s_proc = pp->s_proc, saved_s_thread = pp->s_thread_name;
	size_t saved_path = pp->n_path, nc = hc_node__child_count(n);
	/* an inlined child replaces the last location: put it back for the next child */
	uint64_t saved_top = pp->n_path ? pp->path[pp->n_path - 1] : 0;
	enum hc_node_kind saved_top_kind = pp->top_kind;
	uint64_t vals[4], kids[4] = {0};
	bool any = false;
	int err = 0;

	if (depth > HC_PPROF_MAX_TREE_DEPTH)
		return -EOVERFLOW;
	switch (hc_node__kind(n)) {
	case HC_NODE_PROCESS:
		/* pid and tid labels are int64 */
		if (hc_node__id(n) > INT64_MAX) {
			err = -EOVERFLOW;
			break;
		}
		pp->proc = n;
		pp->s_proc = intern_clean(pp, hc_node__name(n));
		if (pp->s_proc < 0)
			err = (int)pp->s_proc;
		break;
	case HC_NODE_THREAD:
		if (hc_node__id(n) > INT64_MAX) {
			err = -EOVERFLOW;
			break;
		}
		pp->thread = n;
		pp->s_thread_name = intern_clean(pp, hc_node__name(n));
		if (pp->s_thread_name < 0)
			err = (int)pp->s_thread_name;
		break;
	case HC_NODE_ROOT:
		break;
	default:
		err = push_frame(pp, n);
		break;
	}
	if (err)
		goto out_restore;

	for (size_t i = 0; i < nc; i++)
		for (size_t t = 0; t < pp->n_types; t++)
			kids[t] += type_value(pp->types[t], hc_node__weights(hc_node__child(n, i)));
	for (size_t t = 0; t < pp->n_types; t++) {
		vals[t] = type_value(pp->types[t], hc_node__weights(n));
		/* values are inclusive, so kids <= self; saturate rather than wrap if that broke */
		vals[t] = vals[t] > kids[t] ? vals[t] - kids[t] : 0;
		any |= vals[t] != 0;
	}
	if (any) {
		err = emit_sample(pp, n, vals);
		if (err)
			goto out_restore;
	}

	for (size_t i = 0; i < nc; i++) {
		err = walk(pp, hc_node__child(n, i), depth + 1);
		if (err)
			break;
	}

out_restore:
	pp->n_path = saved_path;
	if (saved_path)
		pp->path[saved_path - 1] = saved_top;
	pp->top_kind = saved_top_kind;
	pp->proc = saved_proc;
	pp->thread = saved_thread;
	pp->s_proc = saved_s_proc;
	pp->s_thread_name = saved_s_thread;
	return err;
}

static int put_value_type(struct pprof *pp, unsigned int field, const char *type, const char *unit)
{
	int64_t t = intern_lit(pp, type), u = intern_lit(pp, unit);
	struct pbuf *b = &pp->packed;

	if (t < 0 || u < 0)
		return -ENOMEM;
	b->len = 0;
	if (put_uint_field(b, VALUE_TYPE_TYPE, (uint64_t)t) ||
	    put_uint_field(b, VALUE_TYPE_UNIT, (uint64_t)u))
		return -ENOMEM;
	return put_bytes_field(&pp->out, field, b->b, b->len);
}

/* Everything but the samples; the string table last, as it is complete only then. */
static int put_tables(struct pprof *pp, const struct hc_profile *p)
{
	struct pbuf *b = &pp->sample;
	int64_t comment, dflt;
	char *text;
	int err;

	for (size_t i = 0; i < pp->mappings.n; i++) {
		b->len = 0;
		if (put_uint_field(b, MAPPING_ID, i + 1) ||
		    put_uint_field(b, MAPPING_FILENAME, pp->mappings.keys[i][0]) ||
		    /* every location has its function: nothing for pprof to symbolize */
		    put_uint_field(b, MAPPING_HAS_FUNCTIONS, 1) ||
		    put_bytes_field(&pp->out, PROFILE_MAPPING, b->b, b->len))
			return -ENOMEM;
		if ((err = out_maybe_flush(pp)))
			return err;
	}
	for (size_t i = 0; i < pp->locations.n; i++) {
		const uint64_t *k = pp->locations.keys[i];

		b->len = 0;
		if (put_uint_field(b, LOCATION_ID, i + 1) ||
		    put_uint_field(b, LOCATION_MAPPING_ID, k[1]) ||
		    put_uint_field(b, LOCATION_ADDRESS, k[2]))
			return -ENOMEM;
		/* innermost first: its own function, then those it is inlined into (an
		 * earlier location: ids only grow along a chain) */
		for (const uint64_t *l = k; l; l = l[3] ? pp->locations.keys[l[3] - 1] : NULL) {
			pp->packed.len = 0;
			if (put_uint_field(&pp->packed, LINE_FUNCTION_ID, l[0]) ||
			    put_bytes_field(b, LOCATION_LINE, pp->packed.b, pp->packed.len))
				return -ENOMEM;
		}
		if (put_bytes_field(&pp->out, PROFILE_LOCATION, b->b, b->len))
			return -ENOMEM;
		if ((err = out_maybe_flush(pp)))
			return err;
	}
	for (size_t i = 0; i < pp->functions.n; i++) {
		const uint64_t *k = pp->functions.keys[i];

		b->len = 0;
		if (put_uint_field(b, FUNCTION_ID, i + 1) ||
		    put_uint_field(b, FUNCTION_NAME, k[0]) ||
		    put_uint_field(b, FUNCTION_FILENAME, k[1]) ||
		    put_bytes_field(&pp->out, PROFILE_FUNCTION, b->b, b->len))
			return -ENOMEM;
		if ((err = out_maybe_flush(pp)))
			return err;
	}

	if (put_uint_field(&pp->out, PROFILE_TIME_NANOS, (uint64_t)p->started_at_ns) ||
	    put_uint_field(&pp->out, PROFILE_DURATION_NANOS, p->duration_ns) ||
	    put_value_type(pp, PROFILE_PERIOD_TYPE, "cpu", "nanoseconds") ||
	    put_uint_field(&pp->out, PROFILE_PERIOD, p->sampling.period_ns))
		return -ENOMEM;

	/* "hotcold HOST KERNEL" */
	text = malloc(strlen("hotcold") + (p->host ? 1 + strlen(p->host) : 0) +
		      (p->kernel ? 1 + strlen(p->kernel) : 0) + 1);
	if (!text)
		return -ENOMEM;
	sprintf(text, "hotcold%s%s%s%s", p->host ? " " : "", p->host ? p->host : "",
		p->kernel ? " " : "", p->kernel ? p->kernel : "");
	err = clean_name(&pp->name, text);
	free(text);
	if (err)
		return err;
	comment = strtab_intern(&pp->strs, (const char *)pp->name.b, pp->name.len);
	if (comment < 0)
		return -ENOMEM;
	pp->packed.len = 0;
	if (put_varint(&pp->packed, (uint64_t)comment) ||
	    put_bytes_field(&pp->out, PROFILE_COMMENT, pp->packed.b, pp->packed.len))
		return -ENOMEM;

	dflt = intern_lit(pp, pp->weights & HC_W_ON ? "cpu" : pp->types[0]->type);
	if (dflt < 0 || put_uint_field(&pp->out, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)dflt))
		return -ENOMEM;

	for (size_t i = 0; i < pp->strs.n; i++) {
		if (put_bytes_field(&pp->out, PROFILE_STRING_TABLE,
				    pp->strs.bytes + pp->strs.off[i], pp->strs.lens[i]))
			return -ENOMEM;
		if ((err = out_maybe_flush(pp)))
			return err;
	}
	return 0;
}

static void pprof_release(struct pprof *pp)
{
	if (pp->z_ready)
		deflateEnd(&pp->z);
	free(pp->zout);
	free(pp->out.b);
	free(pp->packed.b);
	free(pp->sample.b);
	free(pp->name.b);
	free(pp->path);
	free(pp->strs.bytes);
	free(pp->strs.off);
	free(pp->strs.lens);
	free(pp->strs.hashes);
	free(pp->strs.slots);
	free(pp->functions.keys);
	free(pp->functions.slots);
	free(pp->locations.keys);
	free(pp->locations.slots);
	free(pp->mappings.keys);
	free(pp->mappings.slots);
	free(pp->frames.keys);
	free(pp->frames.slots);
	free(pp->frame_locs);
}

int hc_profile__write_pprof(const struct hc_profile *p, unsigned int weights, FILE *out)
{
	struct pprof pp = {.weights = weights, .file = out};
	int err;

	if (!p || !p->tree || !out || !(weights & HC_W_ALL) || (weights & ~HC_W_ALL))
		return -EINVAL;
	if (p->duration_ns > INT64_MAX || p->sampling.period_ns > INT64_MAX)
		return -EOVERFLOW;
	for (size_t i = 0; i < sizeof(all_types) / sizeof(all_types[0]); i++)
		if (weights & all_types[i].bit)
			pp.types[pp.n_types++] = &all_types[i];

	pp.zout = malloc(GZ_OUT_BYTES);
	if (!pp.zout) {
		err = -ENOMEM;
		goto out_release;
	}
	/*
	 * windowBits 15 + 16: a gzip wrapper, as pprof files are. Level 1, as Go's runtime/pprof
	 * does: on a 200k-node tree the file is 6 % bigger than at the default level, and
	 * deflate takes a fifth of the time (it was a third of the whole encode).
	 */
	if (deflateInit2(&pp.z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		err = -ENOMEM;
		goto out_release;
	}
	pp.z_ready = true;

	/* string_table[0] must be "" */
	err = -ENOMEM;
	if (intern_lit(&pp, "") != 0)
		goto out_release;
	for (size_t i = 0; i < pp.n_types; i++)
		if (put_value_type(&pp, PROFILE_SAMPLE_TYPE, pp.types[i]->type, pp.types[i]->unit))
			goto out_release;
	pp.s_pid = intern_lit(&pp, "pid");
	pp.s_process = intern_lit(&pp, "process");
	pp.s_tid = intern_lit(&pp, "tid");
	pp.s_thread = intern_lit(&pp, "thread");
	pp.s_dashes = intern_lit(&pp, "--");
	pp.s_kernel_mapping = intern_lit(&pp, "[kernel.kallsyms]");
	if (pp.s_pid < 0 || pp.s_process < 0 || pp.s_tid < 0 || pp.s_thread < 0 ||
	    pp.s_dashes < 0 || pp.s_kernel_mapping < 0)
		goto out_release;

	err = walk(&pp, hc_tree__root(p->tree), 0);
	if (err)
		goto out_release;
	err = put_tables(&pp, p);
	if (err)
		goto out_release;
	err = gz_write(&pp, pp.out.b, pp.out.len, Z_FINISH);
	if (err)
		goto out_release;
	errno = 0;
	if (fflush(out) || ferror(out))
		err = errno ? -errno : -EIO;

out_release:
	pprof_release(&pp);
	return err;
}
