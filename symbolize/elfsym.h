/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One ELF object's function symbols, from every place a distro may have left them:
 * .symtab, .dynsym, .gnu_debugdata (MiniDebugInfo: an xz-compressed ELF holding the local
 * symbols a stripped binary lost) and a separate debuginfo file found by build-id.
 *
 * Lookups take ELF virtual addresses (st_value space). A sampled address is first turned into
 * a file offset (ip - mapping start + mapping pgoff), then into a vaddr through the PT_LOAD
 * program headers; that handles PIE, shared libraries and non-PIE executables alike without
 * knowing the load bias.
 *
 * All ELF parsing goes through libelf; whatever it returns is bounds-checked here, so hostile or
 * truncated files fail with an error rather than crash.
 */
#ifndef HOTCOLD_SYMBOLIZE_ELFSYM_H
#define HOTCOLD_SYMBOLIZE_ELFSYM_H

#include <libelf.h>
#include <stddef.h>
#include <stdint.h>

/* Where the symbols came from (hc_elfsym__sources()). */
enum hc_elfsym_source {
	HC_ELFSYM_SYMTAB = 1u << 0,    /* the object's own .symtab */
	HC_ELFSYM_DYNSYM = 1u << 1,    /* .dynsym */
	HC_ELFSYM_DEBUGDATA = 1u << 2, /* .gnu_debugdata's .symtab */
	HC_ELFSYM_DEBUGINFO = 1u << 3, /* separate debuginfo's .symtab */
};

#define HC_BUILD_ID_MAX 64

struct hc_elfsym;

/*
 * A read-only ELF handle on fd, which must be a regular file: headers and sections read with
 * pread() as asked for (ELF_C_READ), never mapped. NULL when fd is not a regular ELF file.
 * The caller keeps fd open while it uses the handle, and elf_end()s it.
 */
Elf *hc_elf_open_fd(int fd);

/*
 * Parse an ELF object: program headers, build-id, .symtab, .dynsym and .gnu_debugdata.
 * The fd is only read during the call (the caller keeps ownership); buf is not retained.
 * NULL + errno: ENOEXEC (not an ELF file or libelf could not parse it), ENOMEM.
 */
struct hc_elfsym *hc_elfsym__from_fd(int fd);
struct hc_elfsym *hc_elfsym__from_mem(const void *buf, size_t len);
void hc_elfsym__free(struct hc_elfsym *es);

/*
 * Merge the .symtab of a separate debuginfo file (objcopy --only-keep-debug output).
 * 0, -ENOEXEC (not ELF), -ESTALE (its build-id differs from the object's), -ENOMEM.
 * Invalidates names returned by earlier lookups.
 */
int hc_elfsym__add_debuginfo_fd(struct hc_elfsym *es, int fd);
int hc_elfsym__add_debuginfo_mem(struct hc_elfsym *es, const void *buf, size_t len);

/*
 * Only the build-id of the ELF file behind fd, without loading symbols: cheap, used to share one
 * parsed table between copies of a file. 0 and *len (0 when there is none), or -ENOEXEC.
 */
int hc_elfsym__read_build_id_fd(int fd, uint8_t id[HC_BUILD_ID_MAX], size_t *len);

/* Build-id bytes (borrowed) and their count; 0 when the object has none. */
size_t hc_elfsym__build_id(const struct hc_elfsym *es, const uint8_t **id);
/* "<debug_root>/.build-id/ab/cdef....debug". 0, -ENOENT (no build-id), -ENAMETOOLONG. */
int hc_build_id_path(const char *debug_root, const uint8_t *id, size_t len, char *buf, size_t size);
/* The same for es's build-id. */
int hc_elfsym__debuginfo_path(const struct hc_elfsym *es, const char *debug_root, char *buf,
			      size_t size);

/* The object's own .gnu_debuglink (debugfile.h): 0 with the file name (borrowed until the next
 * add_debuginfo or free) and CRC32, or -ENOENT (none, or malformed). */
int hc_elfsym__debuglink(const struct hc_elfsym *es, const char **name, uint32_t *crc);
unsigned int hc_elfsym__sources(const struct hc_elfsym *es); /* enum hc_elfsym_source bits */
size_t hc_elfsym__nr(const struct hc_elfsym *es);	     /* function symbols kept */

/* File offset -> ELF vaddr via the PT_LOAD segment holding it. 0 or -ENOENT. */
int hc_elfsym__off_to_vaddr(const struct hc_elfsym *es, uint64_t file_off, uint64_t *vaddr);

/*
 * vaddr -> symbol index and offset into the function. Zero-size symbols (hand-written asm)
 * extend to the next symbol or the end of their section. 0 or -ENOENT.
 */
int hc_elfsym__lookup(const struct hc_elfsym *es, uint64_t vaddr, size_t *idx, uint64_t *offset);
/* Raw (mangled) name of symbol idx; borrowed until the next add_debuginfo or free. */
const char *hc_elfsym__name(const struct hc_elfsym *es, size_t idx);
/* Symbol idx (0 .. nr-1, sorted by address): name as above, vaddr and extent in bytes. 0/-ENOENT */
int hc_elfsym__symbol(const struct hc_elfsym *es, size_t idx, const char **name, uint64_t *vaddr,
		      uint64_t *size);

#endif
