// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-broker: the privileged broker's handling of one request datagram (privsep/broker.h),
 * the bytes a sandboxed worker, possibly taken over, sends to root. The input is the datagram.
 *
 * hc_broker__decode() says whether the bytes are a request at all; hc_broker__answer() then
 * answers it on a socketpair, against a small procfs made here (two processes, executable and
 * writable mappings, a perf map, a symlinked perf map, a FIFO where a mapped file should be).
 * Beyond "no crash": a reply is always one well-formed datagram; a request that does not
 * decode is refused with -EINVAL and passes nothing; descriptors passed are exactly the ones
 * the reply counts, and only for what the policy allows (program text, the owner's perf map,
 * a process's own /proc files, kallsyms); the broker keeps no descriptor afterwards.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "privsep/broker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The fake procfs: process 1 maps text at 400000-401000 and data at 401000-402000; process 2
 * "maps" a FIFO as text at 400000-401000. */
#define TEXT_START 0x400000u
#define TEXT_END 0x401000u
#define DATA_END 0x402000u
#define PERFMAP_NSPID 7u
#define PERFMAP_LINK_NSPID 8u

static char proc[64];
static int sv[2] = {-1, -1};

static void put(const char *rel, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", proc, rel);
	f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		abort();
}

static void dir(const char *rel)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", proc, rel);
	if (mkdir(path, 0755))
		abort();
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) ? -1 : 0;
}

static void remove_proc(void)
{
	nftw(proc, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

static void make_proc(void)
{
	char path[256];
	const char *maps = "00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/app\n"
			   "00401000-00402000 rw-p 00001000 08:01 12 /usr/bin/app\n";

	snprintf(proc, sizeof(proc), "/tmp/hc-fuzz-broker.XXXXXX");
	if (!mkdtemp(proc) || atexit(remove_proc))
		abort();
	for (int pid = 1; pid <= 2; pid++) {
		char rel[64];

		snprintf(rel, sizeof(rel), "%d", pid);
		dir(rel);
		snprintf(rel, sizeof(rel), "%d/map_files", pid);
		dir(rel);
		snprintf(rel, sizeof(rel), "%d/root", pid);
		dir(rel);
		snprintf(rel, sizeof(rel), "%d/root/tmp", pid);
		dir(rel);
		snprintf(rel, sizeof(rel), "%d/maps", pid);
		put(rel, maps);
		snprintf(rel, sizeof(rel), "%d/stat", pid);
		put(rel, "1 (app) S 0 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42\n");
		snprintf(rel, sizeof(rel), "%d/status", pid);
		put(rel, "Name:\tapp\nNSpid:\t1\n");
	}
	put("1/map_files/400000-401000", "\177ELF text");
	put("1/map_files/401000-402000", "secret data");
	put("1/root/tmp/perf-7.map", "1000 10 jitted\n");
	snprintf(path, sizeof(path), "%s/1/root/tmp/perf-8.map", proc);
	if (symlink("/etc/passwd", path))
		abort();
	snprintf(path, sizeof(path), "%s/2/map_files/400000-401000", proc);
	if (mkfifo(path, 0600))
		abort();
	put("kallsyms", "ffffffff81000000 T _text\n");
	if (hc_broker__socketpair(sv))
		abort();
}

/* Whether the policy lets the decoded request have descriptors in the procfs above. */
static bool allowed(const struct hc_broker_req *rq)
{
	switch (rq->op) {
	case HC_BROKER_PROC:
	case HC_BROKER_STATUS:
	case HC_BROKER_ALIVE:
		return rq->tgid == 1 || rq->tgid == 2;
	case HC_BROKER_MAPPED:
		return rq->tgid == 1 && rq->a == TEXT_START && rq->b == TEXT_END;
	case HC_BROKER_PERFMAP:
		return rq->tgid == 1 && rq->a == PERFMAP_NSPID;
	case HC_BROKER_KALLSYMS:
		return true;
	default:
		return false;
	}
}

static unsigned int expected_fds(const struct hc_broker_req *rq)
{
	return rq->op == HC_BROKER_PROC ? 2 : rq->op == HC_BROKER_ALIVE ? 0 : 1;
}

/* The reply: its error, with the descriptors it passed counted and closed. */
static int32_t receive(unsigned int *nfds)
{
	struct hc_broker_rep rep;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	ssize_t n = recvmsg(sv[1], &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	if (n != (ssize_t)sizeof(rep) || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		abort();
	*nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			abort();
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			close(fd);
			++*nfds;
		}
	}
	if (rep.nfds != *nfds)
		abort();
	return rep.err;
}

/* The lowest free descriptor: the same after each request, or the broker kept one. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	if (fd < 0)
		abort();
	close(fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hc_broker_stats st = {0};
	struct hc_broker_req rq;
	unsigned int nfds;
	int decoded, fd0;
	int32_t err;

	if (sv[0] < 0)
		make_proc();
	fd0 = lowest_free_fd();
	decoded = hc_broker__decode(data, size, &rq);
	if (decoded && decoded != -EINVAL)
		abort();
	if (hc_broker__answer(sv[0], data, size, proc, &st))
		abort();
	err = receive(&nfds);
	if (st.requests != 1 || (err != 0) != (st.refused == 1))
		abort();
	if (decoded) {
		if (err != -EINVAL || nfds)
			abort();
	} else if (err == 0) {
		if (!allowed(&rq) || nfds != expected_fds(&rq) || st.opened != nfds)
			abort();
	} else if (err > 0 || nfds) {
		abort();
	}
	if (lowest_free_fd() != fd0)
		abort();
	return 0;
}
