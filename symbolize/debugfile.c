// SPDX-License-Identifier: GPL-2.0-only
/*
 * Separate debug files (debugfile.h): the candidates in order, each opened, checked and
 * refused or taken.
 */
#include "symbolize/debugfile.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <zlib.h>

#include "symbolize/elfsym.h"

/* A .gnu_debuglink section is a name and a CRC: anything larger is not one. */
#define DEBUGLINK_SECTION_MAX (HC_DEBUGLINK_NAME_MAX + 8)
#define CRC_CHUNK (256u << 10)

int hc_debuglink__parse(const void *sec, size_t len, bool msb, char name[HC_DEBUGLINK_NAME_MAX],
			uint32_t *crc)
{
	const uint8_t *p = sec;
	const uint8_t *nul = len ? memchr(p, '\0', len) : NULL;
	size_t n, crc_off;

	if (!nul)
		return -EBADMSG;
	n = (size_t)(nul - p);
	crc_off = (n + 1 + 3) & ~(size_t)3;
	if (!n || n >= HC_DEBUGLINK_NAME_MAX || memchr(p, '/', n) || crc_off + 4 > len)
		return -EBADMSG;
	if ((n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
		return -EBADMSG;
	memcpy(name, p, n + 1);
	p += crc_off;
	if (msb)
		*crc = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	else
		*crc = (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
	return 0;
}

int hc_debuglink__from_elf(Elf *elf, char name[HC_DEBUGLINK_NAME_MAX], uint32_t *crc)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    elf_getshdrstrndx(elf, &shstrndx))
		return -ENOEXEC;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *sname;
		Elf_Data *data;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return -ENOEXEC;
		sname = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!sname || strcmp(sname, ".gnu_debuglink"))
			continue;
		if (sh.sh_type == SHT_NOBITS || sh.sh_size > DEBUGLINK_SECTION_MAX)
			return -EBADMSG;
		data = elf_rawdata(scn, NULL);
		if (!data || !data->d_buf)
			return -EBADMSG;
		return hc_debuglink__parse(data->d_buf, data->d_size,
					   eh.e_ident[EI_DATA] == ELFDATA2MSB, name, crc);
	}
	return -ENOENT;
}

int hc_debuglink__read_fd(int fd, char name[HC_DEBUGLINK_NAME_MAX], uint32_t *crc)
{
	Elf *elf = hc_elf_open_fd(fd);
	int err;

	if (!elf)
		return -ENOEXEC;
	err = hc_debuglink__from_elf(elf, name, crc);
	elf_end(elf);
	return err;
}

int hc_debugfile__crc32_fd(int fd, uint32_t *crc)
{
	unsigned char *buf = malloc(CRC_CHUNK);
	uLong c = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n = pread(fd, buf, CRC_CHUNK, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n ? -errno : 0;
			break;
		}
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	free(buf);
	*crc = (uint32_t)c;
	return err;
}

/* path inside the process's root (root_fd >= 0), else on the host. fd or -errno. */
static int open_in(int root_fd, const char *path)
{
	/* O_NONBLOCK: a FIFO planted as a candidate must not hang the open */
	int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
	struct open_how how = {
		.flags = (uint64_t)flags,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	int fd;

	if (root_fd < 0)
		fd = open(path, flags);
	else
		fd = (int)syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	return fd < 0 ? -errno : fd;
}

struct search {
	const struct hc_debugfile_query *q;
	struct hc_debugfile_stats *st;
	int roots[2]; /* the process's root first (when not ours), then the host (-1) */
	size_t nr_roots;
};

static void refuse(struct search *s, enum hc_debugfile_refusal why)
{
	if (s->st)
		s->st->refused[why]++;
}

/* 0 when the file behind fd is the object's debug file found by how, else a refusal. */
static int check(struct search *s, int fd, enum hc_debugfile_how how)
{
	const struct hc_debugfile_query *q = s->q;
	uint8_t id[HC_BUILD_ID_MAX];
	size_t len = 0;
	uint32_t crc;

	/* a FIFO, a directory or a device is no ELF file (hc_elf_open_fd) */
	if (hc_elfsym__read_build_id_fd(fd, id, &len)) {
		refuse(s, HC_DEBUG_REF_CORRUPT);
		return -EBADMSG;
	}
	if ((how == HC_DEBUG_BUILD_ID || (len && q->build_id_len)) &&
	    (len != q->build_id_len || memcmp(id, q->build_id, len))) {
		refuse(s, HC_DEBUG_REF_BUILD_ID);
		return -ESTALE;
	}
	if (how == HC_DEBUG_DEBUGLINK) {
		if (hc_debugfile__crc32_fd(fd, &crc)) {
			refuse(s, HC_DEBUG_REF_CORRUPT);
			return -EBADMSG;
		}
		if (crc != q->link_crc) {
			refuse(s, HC_DEBUG_REF_CRC);
			return -ESTALE;
		}
	}
	return 0;
}

/* Try path under each root: fd of the first that matches, or -ENOENT. */
static int try_path(struct search *s, const char *path, enum hc_debugfile_how how)
{
	for (size_t i = 0; i < s->nr_roots; i++) {
		int fd = open_in(s->roots[i], path);

		if (fd < 0)
			continue;
		if (!check(s, fd, how)) {
			if (s->st)
				s->st->found[how]++;
			return fd;
		}
		close(fd);
	}
	return -ENOENT;
}

/* snprintf into path (PATH_MAX bytes): 0 or -ENAMETOOLONG. */
__attribute__((format(printf, 2, 3))) static int format(char *path, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(path, PATH_MAX, fmt, ap);
	va_end(ap);
	return n < 0 || n >= PATH_MAX ? -ENAMETOOLONG : 0;
}

static int by_build_id(struct search *s, char *path)
{
	const struct hc_debugfile_query *q = s->q;

	if (hc_build_id_path(q->debug_root, q->build_id, q->build_id_len, path, PATH_MAX))
		return -ENOENT;
	return try_path(s, path, HC_DEBUG_BUILD_ID);
}

/* Beside the object, in .debug/ beside it, under the debug root at the object's directory. */
static int by_debuglink(struct search *s, char *path)
{
	const struct hc_debugfile_query *q = s->q;
	const char *slash = q->path ? strrchr(q->path, '/') : NULL;
	int dir_len, fd = -ENOENT;

	if (!q->link || !slash)
		return -ENOENT;
	dir_len = (int)(slash - q->path);
	if (!format(path, "%.*s/%s", dir_len, q->path, q->link))
		fd = try_path(s, path, HC_DEBUG_DEBUGLINK);
	if (fd < 0 && !format(path, "%.*s/.debug/%s", dir_len, q->path, q->link))
		fd = try_path(s, path, HC_DEBUG_DEBUGLINK);
	if (fd < 0 && !format(path, "%s%.*s/%s", q->debug_root, dir_len, q->path, q->link))
		fd = try_path(s, path, HC_DEBUG_DEBUGLINK);
	return fd;
}

static int by_path(struct search *s, char *path)
{
	const struct hc_debugfile_query *q = s->q;

	if (!q->path || q->path[0] != '/' || format(path, "%s%s.debug", q->debug_root, q->path))
		return -ENOENT;
	return try_path(s, path, HC_DEBUG_PATH);
}

int hc_debugfile__find(const struct hc_debugfile_query *q, struct hc_debugfile_stats *st,
		       enum hc_debugfile_how *how)
{
	int (*const ways[HC_DEBUG_HOW_MAX])(struct search *, char *) = {
		[HC_DEBUG_BUILD_ID] = by_build_id,
		[HC_DEBUG_DEBUGLINK] = by_debuglink,
		[HC_DEBUG_PATH] = by_path,
	};
	struct search s = {.q = q, .st = st};
	char *path;
	int fd = -ENOENT;

	if (!q->debug_root || q->debug_root[0] != '/')
		return -ENOENT;
	if (q->root_fd >= 0)
		s.roots[s.nr_roots++] = q->root_fd;
	s.roots[s.nr_roots++] = -1;
	path = malloc(PATH_MAX);
	if (!path)
		return -ENOMEM;
	for (int i = 0; i < HC_DEBUG_HOW_MAX && fd < 0; i++) {
		fd = ways[i](&s, path);
		if (fd >= 0)
			*how = (enum hc_debugfile_how)i;
	}
	free(path);
	return fd;
}
