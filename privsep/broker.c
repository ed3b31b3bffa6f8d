// SPDX-License-Identifier: GPL-2.0-only
#include "privsep/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux's PID_MAX_LIMIT on 64-bit. */
#define HC_PID_MAX (4u * 1024 * 1024)

int hc_broker__socketpair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ? -errno : 0;
}

/* ---- the privileged side ---- */

/* Reopen an O_PATH descriptor for reading, if it is a regular file. Closes path_fd. */
static int reopen_regular(int path_fd)
{
	char self[64];
	struct stat st;
	int fd;

	if (fstat(path_fd, &st)) {
		fd = -errno;
	} else if (!S_ISREG(st.st_mode)) {
		fd = -EPERM; /* a device, FIFO, socket or symlink: never opened for reading */
	} else {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", path_fd);
		fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			fd = -errno;
	}
	close(path_fd);
	return fd;
}

static int open_proc(const char *proc, uint32_t tgid, int fds[2])
{
	char path[PATH_MAX];
	int dir;

	snprintf(path, sizeof(path), "%s/%u", proc, tgid);
	dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -errno;
	/* Both through one directory: they are the same process's, even if the pid is reused
	 * meanwhile (then the second open fails). */
	fds[0] = openat(dir, "maps", O_RDONLY | O_CLOEXEC);
	fds[1] = fds[0] < 0 ? -1 : openat(dir, "stat", O_RDONLY | O_CLOEXEC);
	if (fds[0] < 0 || fds[1] < 0) {
		int err = -errno;

		if (fds[0] >= 0)
			close(fds[0]);
		/* Closed: hc_broker__answer closes whatever is still >= 0 here. */
		fds[0] = fds[1] = -1;
		close(dir);
		return err;
	}
	close(dir);
	return 0;
}

static int open_under(const char *proc, uint32_t tgid, const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%u/%s", proc, tgid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * 0 when tgid has an executable mapping exactly [start, end), -EPERM when the mapping is not
 * executable, -ENOENT when there is none. Code addresses are all the symbolizer asks about;
 * anything else a process maps (a database's data file, a private key it mmaps) is refused,
 * so even a worker taken over gets program text and nothing more. Reads only the leading
 * "start-end perms" fields, which the kernel writes itself, never a path (the kernel escapes
 * newlines in those, so every line is one mapping).
 */
static int mapping_is_exec(const char *proc, uint32_t tgid, uint64_t start, uint64_t end)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u/maps", proc, tgid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long long s, e;
		char perms[5];

		if (sscanf(line, "%llx-%llx %4s", &s, &e, perms) != 3)
			continue;
		if (s == start && e == end) {
			err = perms[2] == 'x' ? 0 : -EPERM;
			break;
		}
	}
	free(line);
	fclose(f);
	return err;
}

static int open_mapped(const char *proc, uint32_t tgid, uint64_t start, uint64_t end)
{
	char path[PATH_MAX];
	int fd, err;

	err = mapping_is_exec(proc, tgid, start, end);
	if (err)
		return err;
	/* The kernel resolves it to the file mapped there: only what tgid maps can be had. */
	snprintf(path, sizeof(path), "%s/%u/map_files/%llx-%llx", proc, tgid,
		 (unsigned long long)start, (unsigned long long)end);
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return reopen_regular(fd);
}

static int open_perfmap(const char *proc, uint32_t tgid, uint64_t nspid)
{
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		/* Symlinks resolve inside the process's root, never out of it to ours. */
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	char path[PATH_MAX];
	struct stat owner, st;
	int root, fd;

	snprintf(path, sizeof(path), "%s/%u", proc, tgid);
	if (stat(path, &owner))
		return -errno;
	snprintf(path, sizeof(path), "%s/%u/root", proc, tgid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return -errno;
	snprintf(path, sizeof(path), "tmp/perf-%llu.map", (unsigned long long)nspid);
	fd = (int)syscall(SYS_openat2, root, path, &how, sizeof(how));
	close(root);
	if (fd < 0)
		return -errno;
	/* Written by the runtime itself: owned by the process's owner (as perf requires). A
	 * hard link to somebody else's file is refused here. */
	if (fstat(fd, &st) || st.st_uid != owner.st_uid) {
		close(fd);
		return -EPERM;
	}
	return reopen_regular(fd);
}

static int reply(int sock, int err, const int *fds, unsigned int nfds)
{
	struct hc_broker_rep rep = {.err = err, .nfds = err ? 0 : nfds};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (rep.nfds) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE(rep.nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(rep.nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, rep.nfds * sizeof(int));
	}
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int hc_broker__decode(const void *buf, size_t len, struct hc_broker_req *out)
{
	struct hc_broker_req rq;

	if (len != sizeof(rq))
		return -EINVAL;
	memcpy(&rq, buf, sizeof(rq));
	if (rq.op < HC_BROKER_PROC || rq.op > HC_BROKER_ALIVE)
		return -EINVAL;
	if (rq.op != HC_BROKER_KALLSYMS && (rq.tgid == 0 || rq.tgid > HC_PID_MAX))
		return -EINVAL;
	if (rq.op == HC_BROKER_MAPPED && rq.a >= rq.b)
		return -EINVAL;
	if (rq.op == HC_BROKER_PERFMAP && (rq.a == 0 || rq.a > HC_PID_MAX))
		return -EINVAL;
	*out = rq;
	return 0;
}

int hc_broker__answer(int sock, const void *req, size_t len, const char *proc,
		      struct hc_broker_stats *stats)
{
	struct hc_broker_req rq;
	int fds[2] = {-1, -1}, err = 0;
	unsigned int nfds = 1;

	if (!proc)
		proc = "/proc";
	stats->requests++;
	err = hc_broker__decode(req, len, &rq);
	if (err)
		goto out;
	switch (rq.op) {
	case HC_BROKER_PROC:
		err = open_proc(proc, rq.tgid, fds);
		nfds = 2;
		break;
	case HC_BROKER_STATUS:
		fds[0] = open_under(proc, rq.tgid, "status");
		break;
	case HC_BROKER_MAPPED:
		fds[0] = open_mapped(proc, rq.tgid, rq.a, rq.b);
		break;
	case HC_BROKER_PERFMAP:
		fds[0] = open_perfmap(proc, rq.tgid, rq.a);
		break;
	case HC_BROKER_ALIVE: {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%u", proc, rq.tgid);
		err = access(path, F_OK) ? -errno : 0;
		nfds = 0;
		break;
	}
	case HC_BROKER_KALLSYMS:
		/* Opened by us, so the addresses show: kallsyms checks the opener. */
		{
			char path[PATH_MAX];

			snprintf(path, sizeof(path), "%s/kallsyms", proc);
			fds[0] = open(path, O_RDONLY | O_CLOEXEC);
			if (fds[0] < 0)
				fds[0] = -errno;
		}
		break;
	default:
		err = -EINVAL;
		break;
	}
	if (!err && nfds && fds[0] < 0)
		err = fds[0];
out:
	if (err)
		stats->refused++;
	else
		stats->opened += nfds;
	{
		int e = reply(sock, err, fds, nfds);

		for (unsigned int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				close(fds[i]);
		return e;
	}
}

int hc_stopline__new(int line[2])
{
	/* A socket, not a pipe: send(MSG_NOSIGNAL) to a worker gone is EPIPE, not SIGPIPE. */
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, line) ? -errno : 0;
}

bool hc_stopline__asked(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	/* POLLHUP (our end closed) and POLLERR count too: either way nobody is left to serve. */
	return poll(&p, 1, 0) > 0;
}

int hc_broker__serve(int sock, int stop_wfd, const volatile sig_atomic_t *stop, const char *proc,
		     struct hc_broker_stats *stats)
{
	bool told = false;

	for (;;) {
		struct pollfd p = {.fd = sock, .events = POLLIN};
		char buf[sizeof(struct hc_broker_req) + 1];
		ssize_t n;
		int r;

		if (*stop && !told) {
			/* A full pipe already says it; EPIPE (the worker gone) is seen below. */
			while (send(stop_wfd, "", 1, MSG_NOSIGNAL) < 0 && errno == EINTR)
				;
			told = true;
		}
		r = poll(&p, 1, 200);
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r <= 0)
			continue;
		n = recv(sock, buf, sizeof(buf), MSG_TRUNC);
		/* 0 is also an empty datagram, which is a bad request: the end of the stream
		 * is 0 with POLLHUP. One that slips between poll and recv ends in EPIPE below. */
		if (n == 0 && (p.revents & POLLHUP))
			return 0; /* the worker closed its end, or exited */
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECONNRESET ? 0 : -errno;
		}
		r = hc_broker__answer(sock, buf, (size_t)n > sizeof(buf) ? sizeof(buf) : (size_t)n,
				      proc, stats);
		if (r == -EPIPE || r == -ECONNRESET)
			return 0;
		if (r)
			return r;
	}
}

/* ---- the worker's side ---- */

static int request(struct hc_broker_client *c, uint32_t op, uint32_t tgid, uint64_t a, uint64_t b,
		   int *fds, unsigned int want)
{
	struct hc_broker_req rq = {.op = op, .tgid = tgid, .a = a, .b = b};
	struct hc_broker_rep rep;
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	unsigned int got = 0;
	struct cmsghdr *cm;
	ssize_t n;

	while (send(c->sock, &rq, sizeof(rq), MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -errno;
	while ((n = recvmsg(c->sock, &msg, MSG_CMSG_CLOEXEC)) < 0)
		if (errno != EINTR)
			return -errno;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(fd));
			if (got < want)
				fds[got++] = fd;
			else
				close(fd);
		}
	}
	if (n != (ssize_t)sizeof(rep) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) ||
	    (!rep.err && got != want)) {
		for (unsigned int i = 0; i < got; i++)
			close(fds[i]);
		return n == 0 ? -EPIPE : -EPROTO;
	}
	if (rep.err) {
		for (unsigned int i = 0; i < got; i++)
			close(fds[i]);
		return rep.err < 0 ? rep.err : -EPROTO;
	}
	return 0;
}

static int one(struct hc_broker_client *c, uint32_t op, uint32_t tgid, uint64_t a, uint64_t b)
{
	int fd = -1, err = request(c, op, tgid, a, b, &fd, 1);

	return err ? err : fd;
}

static int io_proc(void *ctx, uint32_t tgid, int *maps_fd, int *stat_fd)
{
	int fds[2], err = request(ctx, HC_BROKER_PROC, tgid, 0, 0, fds, 2);

	if (err)
		return err;
	*maps_fd = fds[0];
	*stat_fd = fds[1];
	return 0;
}

static int io_status(void *ctx, uint32_t tgid)
{
	return one(ctx, HC_BROKER_STATUS, tgid, 0, 0);
}

static int io_mapped(void *ctx, uint32_t tgid, uint64_t start, uint64_t end)
{
	return one(ctx, HC_BROKER_MAPPED, tgid, start, end);
}

static int io_perfmap(void *ctx, uint32_t tgid, uint32_t nspid)
{
	return one(ctx, HC_BROKER_PERFMAP, tgid, nspid, 0);
}

static int io_kallsyms(void *ctx)
{
	return one(ctx, HC_BROKER_KALLSYMS, 0, 0, 0);
}

int hc_broker_client__alive(struct hc_broker_client *c, uint32_t tgid)
{
	return request(c, HC_BROKER_ALIVE, tgid, 0, 0, NULL, 0);
}

static int io_alive(void *ctx, uint32_t tgid)
{
	return hc_broker_client__alive(ctx, tgid);
}

void hc_broker_client__io(struct hc_broker_client *c, struct hc_symbolizer_io *io)
{
	*io = (struct hc_symbolizer_io){
		.open_proc = io_proc,
		.open_status = io_status,
		.open_mapped = io_mapped,
		.open_perfmap = io_perfmap,
		.open_kallsyms = io_kallsyms,
		.alive = io_alive,
		.ctx = c,
	};
}
