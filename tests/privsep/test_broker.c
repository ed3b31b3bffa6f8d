// SPDX-License-Identifier: GPL-2.0-only
/*
 * privsep/broker unit tests: what the privileged half hands the sandboxed worker, and what it
 * refuses. One binary, groups chosen by argv[1]:
 *   broker       live children of ours in the real /proc, a fake procfs tree in a temporary
 *                directory (the `proc` argument), the wire through hc_broker__serve
 *   broker-root  map_files (CAP_SYS_ADMIN), perf maps owned by other users (chown), a child
 *                running as nobody: needs root (77 outside CI, a failure under CI=true)
 * Requests go through hc_broker__answer on one end of a socketpair and the reply (error and
 * descriptors) is read back on the other, as the worker reads it.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "privsep/broker.h"
#include "symbolize/symbolizer.h"

#include "privsep_test.h"

/* broker.c's bound on pids (Linux's PID_MAX_LIMIT on 64-bit): larger ones are refused
 * before any path is built. */
#define PID_MAX_LIMIT (4u * 1024 * 1024)
#define NOBODY 65534u
#define REPLY_WAIT_MS 3000

static char tmp[64];	     /* this run's temporary directory */
static int sv[2] = {-1, -1}; /* sv[0] the broker's end, sv[1] the worker's */
static struct hc_broker_stats st;

/* ---- files ---- */

static void put_file(const char *content, const char *fmt, ...)
{
	char path[4096];
	va_list ap;
	int fd;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		fail_msg("creating %s: %s", path, strerror(errno));
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
}

static void make_dir(const char *fmt, ...)
{
	char path[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (mkdir(path, 0755) && errno != EEXIST)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

/* The whole content of a descriptor, read from offset 0; NUL-terminated. */
static char *fd_text(int fd, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t r;

	assert_non_null(buf);
	while ((r = pread(fd, buf + n, cap - n, (off_t)n)) > 0) {
		n += (size_t)r;
		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap + 1);
			assert_non_null(buf);
		}
	}
	assert_true(r == 0);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static char *path_text(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *s;

	if (fd < 0)
		fail_msg("open %s: %s", path, strerror(errno));
	s = fd_text(fd, len);
	close(fd);
	return s;
}

static void assert_fd_text(int fd, const char *want)
{
	char *got = fd_text(fd, NULL);

	assert_string_equal(got, want);
	free(got);
}

/* A descriptor the worker may only read: neither writable nor an O_PATH handle. */
static void assert_read_only(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	assert_true(fl >= 0);
	assert_int_equal(fl & O_ACCMODE, O_RDONLY);
	assert_false(fl & O_PATH);
}

static int count_fds(void)
{
	char path[64];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (!access(path, F_OK))
			n++;
	}
	return n;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * Every close() of this binary, broker.c's included, goes through here (the test is linked
 * with --wrap=close). A close that fails with EBADF is a descriptor closed twice, or never
 * opened: in a broker with threads, the second close could take a descriptor another thread
 * had just been given.
 */
int __real_close(int fd);
int __wrap_close(int fd);
static unsigned int close_ebadf;

int __wrap_close(int fd)
{
	int r = __real_close(fd);

	if (r < 0 && errno == EBADF)
		close_ebadf++;
	return r;
}

/* ---- the wire ---- */

/* The broker's reply as the worker receives it: the error, the descriptors (rep.nfds of
 * them, none with an error, nothing truncated). */
static int recv_reply(int sock, int *fds, unsigned int *nfds)
{
	struct hc_broker_rep rep;
	union {
		char buf[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &rep, .iov_len = sizeof(rep)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	struct pollfd p = {.fd = sock, .events = POLLIN};
	ssize_t n;

	if (poll(&p, 1, REPLY_WAIT_MS) != 1)
		fail_msg("no reply from the broker within %d ms", REPLY_WAIT_MS);
	n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	assert_int_equal(n, (ssize_t)sizeof(rep));
	assert_false(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
	*nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		assert_int_equal(c->cmsg_level, SOL_SOCKET);
		assert_int_equal(c->cmsg_type, SCM_RIGHTS);
		for (size_t k = 0; k < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
			memcpy(&fds[(*nfds)++], CMSG_DATA(c) + k * sizeof(int), sizeof(int));
	}
	assert_int_equal(*nfds, rep.nfds);
	if (rep.err)
		assert_int_equal(*nfds, 0);
	assert_true(rep.err <= 0);
	return rep.err;
}

static int ask_raw(const void *req, size_t len, const char *proc, int *fds, unsigned int *nfds)
{
	unsigned int ebadf = close_ebadf;

	assert_int_equal(hc_broker__answer(sv[0], req, len, proc, &st), 0);
	if (close_ebadf != ebadf)
		fail_msg("the broker closed a descriptor it did not hold (%u times)",
			 close_ebadf - ebadf);
	return recv_reply(sv[1], fds, nfds);
}

static int ask(uint32_t op, uint32_t tgid, uint64_t a, uint64_t b, const char *proc, int *fds,
	       unsigned int *nfds)
{
	struct hc_broker_req rq = {.op = op, .tgid = tgid, .a = a, .b = b};

	return ask_raw(&rq, sizeof(rq), proc, fds, nfds);
}

/* One descriptor granted: returned, counted as opened, read-only. */
static int ask_one(uint32_t op, uint32_t tgid, uint64_t a, uint64_t b, const char *proc)
{
	struct hc_broker_stats before = st;
	unsigned int nfds;
	int fds[8], err;

	err = ask(op, tgid, a, b, proc, fds, &nfds);
	if (err)
		fail_msg("op %u tgid %u a %#llx b %#llx: refused (%s)", op, tgid,
			 (unsigned long long)a, (unsigned long long)b, strerror(-err));
	assert_int_equal(nfds, 1);
	assert_int_equal(st.requests, before.requests + 1);
	assert_int_equal(st.opened, before.opened + 1);
	assert_int_equal(st.refused, before.refused);
	assert_read_only(fds[0]);
	return fds[0];
}

/* Refused with err: no descriptor, counted as refused, and the broker goes on. */
static void expect_refused_raw(const void *req, size_t len, const char *proc, int want)
{
	struct hc_broker_stats before = st;
	unsigned int nfds;
	int fds[8], err;

	err = ask_raw(req, len, proc, fds, &nfds);
	if (err != want)
		fail_msg("request of %zu bytes: got %d (%s), want %d (%s)", len, err,
			 strerror(-err), want, strerror(-want));
	assert_int_equal(nfds, 0);
	assert_int_equal(st.requests, before.requests + 1);
	assert_int_equal(st.refused, before.refused + 1);
	assert_int_equal(st.opened, before.opened);
}

static void expect_refused(uint32_t op, uint32_t tgid, uint64_t a, uint64_t b, const char *proc,
			   int want)
{
	struct hc_broker_req rq = {.op = op, .tgid = tgid, .a = a, .b = b};

	expect_refused_raw(&rq, sizeof(rq), proc, want);
}

/* ---- live children ---- */

/*
 * A child of ours with four mappings it reports, each between PROT_NONE guard pages so that
 * none merges with a neighbour and each is exactly one line of its maps: `exec_path` mapped
 * PROT_READ | PROT_EXEC (program text, as the broker hands out), `data_path` mapped PROT_READ
 * only (a data file: refused), an anonymous read-write region and an anonymous executable one
 * (no file to hand out). It optionally becomes uid/gid `uid`, and waits until ctl is closed.
 */
enum { KID_EXEC, KID_DATA, KID_ANON, KID_ANONX, KID_NMAPS };

struct kid {
	pid_t pid;
	int ctl;
	uint64_t start[KID_NMAPS], end[KID_NMAPS]; /* 0, 0: not mapped */
};

#define KID_PAGES 4 /* pages per mapping; a file's mapping covers the file, rounded up */

static void kid_start(struct kid *k, const char *exec_path, const char *data_path, uid_t uid)
{
	int rep[2], ctl[2];
	uint64_t where[2 * KID_NMAPS];

	assert_int_equal(pipe2(rep, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ctl, O_CLOEXEC), 0);
	fflush(NULL);
	k->pid = fork();
	assert_true(k->pid >= 0);
	if (k->pid == 0) {
		static const int prot[KID_NMAPS] = {
			PROT_READ | PROT_EXEC,
			PROT_READ,
			PROT_READ | PROT_WRITE,
			PROT_READ | PROT_EXEC,
		};
		const char *const paths[KID_NMAPS] = {exec_path, data_path, NULL, NULL};
		size_t page = (size_t)sysconf(_SC_PAGESIZE), slot = (KID_PAGES + 1) * page;
		char *area, c;

		/* Only its two pipe ends: a copy of the broker's socket would keep it open. */
		for (int fd = 3; fd < 1024; fd++)
			if (fd != rep[1] && fd != ctl[0])
				close(fd);
		memset(where, 0, sizeof(where));
		/* One reservation, every mapping placed in it after a guard page. */
		area = mmap(NULL, KID_NMAPS * slot + page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
		if (area == MAP_FAILED)
			_exit(2);
		for (int i = 0; i < KID_NMAPS; i++) {
			char *at = area + page + (size_t)i * slot;
			size_t len = KID_PAGES * page;
			int fd = -1, flags = MAP_PRIVATE | MAP_FIXED;
			struct stat sb;
			void *p;

			if (i <= KID_DATA) {
				if (!paths[i])
					continue;
				fd = open(paths[i], O_RDONLY);
				if (fd < 0 || fstat(fd, &sb) || sb.st_size == 0 ||
				    (size_t)sb.st_size > len)
					_exit(3);
				len = ((size_t)sb.st_size + page - 1) / page * page;
			} else {
				flags |= MAP_ANONYMOUS;
			}
			p = mmap(at, len, prot[i], flags, fd, 0);
			if (p != at)
				_exit(4);
			if (fd >= 0)
				close(fd);
			where[2 * i] = (uint64_t)(uintptr_t)p;
			where[2 * i + 1] = where[2 * i] + len;
		}
		if (uid != (uid_t)-1 && (setresgid(uid, uid, uid) || setresuid(uid, uid, uid)))
			_exit(5);
		if (write(rep[1], where, sizeof(where)) != (ssize_t)sizeof(where))
			_exit(6);
		while (read(ctl[0], &c, 1) > 0)
			;
		_exit(0);
	}
	close(rep[1]);
	close(ctl[0]);
	if (read(rep[0], where, sizeof(where)) != (ssize_t)sizeof(where))
		fail_msg("the child did not start");
	close(rep[0]);
	k->ctl = ctl[1];
	for (int i = 0; i < KID_NMAPS; i++) {
		k->start[i] = where[2 * i];
		k->end[i] = where[2 * i + 1];
	}
}

/* The premise of a MAPPED test: "start-end perms" is a line of pid's maps, exactly. */
static void assert_maps_line(pid_t pid, uint64_t start, uint64_t end, const char *perms)
{
	char path[64], head[80], *maps, *at;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = path_text(path, NULL);
	snprintf(head, sizeof(head), "%llx-%llx %s ", (unsigned long long)start,
		 (unsigned long long)end, perms);
	at = strstr(maps, head);
	if (!at || (at != maps && at[-1] != '\n'))
		fail_msg("no line '%s' in %s:\n%s", head, path, maps);
	free(maps);
}

static void kid_stop(struct kid *k)
{
	int status;

	close(k->ctl);
	assert_int_equal(waitpid(k->pid, &status, 0), k->pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* A pid that was ours and is gone (reaped): nothing lives under it now. */
static pid_t dead_pid(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* ---- setup ---- */

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/hc-privsep-broker-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	/* A worker gone makes our reply EPIPE, never a SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	return nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static int pair_setup(void **state)
{
	(void)state;
	memset(&st, 0, sizeof(st));
	return hc_broker__socketpair(sv);
}

/* hc_broker__serve in a thread of ours: one at a time, in static storage, so that a test
 * failing half-way leaves nothing on its stack for the thread to write to. */
struct serve_run {
	pthread_t th;
	int sock, stop_wfd, ret;
	volatile sig_atomic_t stop;
	const char *proc;
	struct hc_broker_stats st;
	bool running;
};

static struct serve_run serving;

static int pair_teardown(void **state)
{
	int rc = 0;

	(void)state;
	/* The worker's end first: a loop a failed test left behind sees it close and returns,
	 * before its descriptor numbers go to the next test's pair. */
	if (sv[1] >= 0)
		close(sv[1]);
	if (serving.running) {
		struct timespec dl;

		clock_gettime(CLOCK_REALTIME, &dl);
		dl.tv_sec += 5;
		rc = pthread_timedjoin_np(serving.th, NULL, &dl) ? -1 : 0;
		serving.running = false;
	}
	close(sv[0]);
	sv[0] = sv[1] = -1;
	return rc;
}

/* ---- live processes, the real /proc ---- */

/* PROC: maps and stat of that process, the same text /proc/PID/{maps,stat} show us. */
static void test_proc_live(void **state)
{
	struct kid k;
	unsigned int nfds;
	char path[64], *got, *want;
	uint64_t t_got = 0, t_want = 1;
	size_t got_len, want_len;
	int fds[8];

	(void)state;
	kid_start(&k, NULL, NULL, (uid_t)-1);
	assert_int_equal(ask(HC_BROKER_PROC, (uint32_t)k.pid, 0, 0, NULL, fds, &nfds), 0);
	assert_int_equal(nfds, 2);
	assert_int_equal(st.opened, 2);
	assert_int_equal(st.refused, 0);
	assert_read_only(fds[0]);
	assert_read_only(fds[1]);

	got = fd_text(fds[0], &got_len);
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)k.pid);
	want = path_text(path, &want_len);
	assert_true(want_len > 0);
	assert_string_equal(got, want); /* the child is idle: its maps do not change */
	free(got);
	free(want);

	got = fd_text(fds[1], &got_len);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)k.pid);
	want = path_text(path, &want_len);
	snprintf(path, sizeof(path), "%d (", (int)k.pid);
	assert_true(!strncmp(got, path, strlen(path)));
	assert_int_equal(hc__stat_starttime(got, got_len, &t_got), 0);
	assert_int_equal(hc__stat_starttime(want, want_len, &t_want), 0);
	assert_true(t_got == t_want);
	free(got);
	free(want);
	close(fds[0]);
	close(fds[1]);
	kid_stop(&k);
}

static void test_status_live(void **state)
{
	char pid_line[64], ppid_line[64], *got;
	struct kid k;
	int fd;

	(void)state;
	kid_start(&k, NULL, NULL, (uid_t)-1);
	fd = ask_one(HC_BROKER_STATUS, (uint32_t)k.pid, 0, 0, NULL);
	got = fd_text(fd, NULL);
	snprintf(pid_line, sizeof(pid_line), "\nPid:\t%d\n", (int)k.pid);
	snprintf(ppid_line, sizeof(ppid_line), "\nPPid:\t%d\n", (int)getpid());
	assert_true(!strncmp(got, "Name:\t", 6));
	assert_non_null(strstr(got, pid_line));
	assert_non_null(strstr(got, ppid_line));
	free(got);
	close(fd);
	kid_stop(&k);
}

/* KALLSYMS: /proc/kallsyms as opened by us (the opener's credentials decide whether the
 * addresses show), whatever the tgid says. */
static void test_kallsyms(void **state)
{
	static const uint32_t tgids[] = {0, 1, UINT32_MAX};
	char want[4096], got[4096];
	int wfd, fd;
	ssize_t n;

	(void)state;
	wfd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	assert_true(wfd >= 0);
	n = read(wfd, want, sizeof(want));
	assert_true(n > 0);
	close(wfd);
	for (size_t i = 0; i < sizeof(tgids) / sizeof(tgids[0]); i++) {
		fd = ask_one(HC_BROKER_KALLSYMS, tgids[i], 0, 0, NULL);
		assert_int_equal(read(fd, got, (size_t)n), n);
		assert_memory_equal(got, want, (size_t)n);
		close(fd);
	}
}

/* ALIVE: 0 while the process exists (a zombie too), -ENOENT once reaped; no descriptor. */
static void test_alive(void **state)
{
	unsigned int nfds;
	struct kid k;
	int fds[8];

	(void)state;
	kid_start(&k, NULL, NULL, (uid_t)-1);
	assert_int_equal(ask(HC_BROKER_ALIVE, (uint32_t)k.pid, 0, 0, NULL, fds, &nfds), 0);
	assert_int_equal(nfds, 0);
	assert_int_equal(kill(k.pid, SIGKILL), 0);
	/* Dead, not reaped: a zombie, still there. WNOWAIT waits for exactly that and leaves
	 * it unreaped. */
	{
		siginfo_t si = {0};

		assert_int_equal(waitid(P_PID, (id_t)k.pid, &si, WEXITED | WNOWAIT), 0);
		assert_int_equal(si.si_pid, k.pid);
		assert_int_equal(si.si_code, CLD_KILLED);
	}
	assert_int_equal(ask(HC_BROKER_ALIVE, (uint32_t)k.pid, 0, 0, NULL, fds, &nfds), 0);
	assert_int_equal(waitpid(k.pid, NULL, 0), k.pid);
	close(k.ctl);
	expect_refused(HC_BROKER_ALIVE, (uint32_t)k.pid, 0, 0, NULL, -ENOENT);
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.opened, 0);
	assert_int_equal(st.refused, 1);
}

/* ---- bad requests ---- */

static void test_refused_sizes(void **state)
{
	static const size_t sizes[] = {
		0, 1, sizeof(struct hc_broker_req) - 1, sizeof(struct hc_broker_req) + 1, 64, 4096};
	struct hc_broker_req good = {.op = HC_BROKER_ALIVE, .tgid = (uint32_t)getpid()};
	char buf[4096];
	unsigned int nfds;
	int fds[8];

	(void)state;
	/* A valid request followed by anything: the size decides, not the prefix. */
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &good, sizeof(good));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		expect_refused_raw(buf, sizes[i], NULL, -EINVAL);
	assert_int_equal(ask_raw(buf, sizeof(good), NULL, fds, &nfds), 0);
	assert_int_equal(st.refused, sizeof(sizes) / sizeof(sizes[0]));
}

static void test_refused_ops(void **state)
{
	static const uint32_t ops[] = {0, HC_BROKER_ALIVE + 1, 0x100, 0x80000000u, UINT32_MAX};

	(void)state;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		expect_refused(ops[i], (uint32_t)getpid(), 0, 0, NULL, -EINVAL);
}

/* tgid 0, "negative" (as an int) and beyond any pid: refused before any path is built. */
static void test_refused_tgid(void **state)
{
	static const uint32_t ops[] = {HC_BROKER_PROC, HC_BROKER_STATUS, HC_BROKER_MAPPED,
				       HC_BROKER_PERFMAP, HC_BROKER_ALIVE};
	static const uint32_t bad[] = {0, UINT32_MAX, 0x80000000u, PID_MAX_LIMIT + 1,
				       (uint32_t)-4242};
	uint32_t gone = (uint32_t)dead_pid();

	(void)state;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++)
			expect_refused(ops[i], bad[j], 1, 2, NULL, -EINVAL);
		/* In range, but no such process (pids stay below PID_MAX_LIMIT). */
		expect_refused(ops[i], PID_MAX_LIMIT, 1, 2, NULL, -ENOENT);
		expect_refused(ops[i], gone, 1, 2, NULL, -ENOENT);
	}
}

/* MAPPED: an empty or reversed range is no mapping; refused before map_files is looked at. */
static void test_refused_mapped_range(void **state)
{
	struct kid k;

	(void)state;
	kid_start(&k, NULL, NULL, (uid_t)-1);
	/* Around an executable mapping that exists: reversed, its match would be ENOENT. */
	assert_maps_line(k.pid, k.start[KID_ANONX], k.end[KID_ANONX], "r-xp");
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, k.start[KID_ANONX], k.start[KID_ANONX],
		       NULL, -EINVAL);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, k.end[KID_ANONX], k.start[KID_ANONX],
		       NULL, -EINVAL);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, UINT64_MAX, 0, NULL, -EINVAL);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, 0, 0, NULL, -EINVAL);
	kid_stop(&k);
}

/* ---- a fake procfs tree ---- */

/* The paths are built from `proc` and the numbers in the request, nothing else; a failed
 * second open leaks nothing. */
static void test_fake_proc(void **state)
{
	char proc[128], *s;
	unsigned int nfds;
	int fds[8], before, fd;

	(void)state;
	make_dir("%s/fakeproc", tmp);
	snprintf(proc, sizeof(proc), "%s/fakeproc/proc", tmp);
	make_dir("%s", proc);
	make_dir("%s/42", proc);
	put_file("00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/fake\n", "%s/42/maps", proc);
	put_file("42 (fake) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n", "%s/42/stat",
		 proc);
	put_file("Name:\tfake\nPid:\t42\n", "%s/42/status", proc);
	put_file("ffffffff81000000 T _stext\n", "%s/kallsyms", proc);
	make_dir("%s/44", proc); /* maps without stat */
	put_file("", "%s/44/maps", proc);

	before = count_fds();
	assert_int_equal(ask(HC_BROKER_PROC, 42, 0, 0, proc, fds, &nfds), 0);
	assert_int_equal(nfds, 2);
	assert_fd_text(fds[0], "00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/fake\n");
	s = fd_text(fds[1], NULL);
	assert_string_equal(s, "42 (fake) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n");
	free(s);
	close(fds[0]);
	close(fds[1]);
	fd = ask_one(HC_BROKER_STATUS, 42, 0, 0, proc);
	assert_fd_text(fd, "Name:\tfake\nPid:\t42\n");
	close(fd);
	fd = ask_one(HC_BROKER_KALLSYMS, 0, 0, 0, proc);
	assert_fd_text(fd, "ffffffff81000000 T _stext\n");
	close(fd);
	assert_int_equal(ask(HC_BROKER_ALIVE, 42, 0, 0, proc, fds, &nfds), 0);
	expect_refused(HC_BROKER_ALIVE, 43, 0, 0, proc, -ENOENT);
	expect_refused(HC_BROKER_PROC, 43, 0, 0, proc, -ENOENT);
	expect_refused(HC_BROKER_STATUS, 43, 0, 0, proc, -ENOENT);
	expect_refused(HC_BROKER_PROC, 44, 0, 0, proc, -ENOENT); /* maps opened, then closed */
	assert_int_equal(count_fds(), before);
	/* A procfs without kallsyms: refused, nothing else opened in its place. */
	make_dir("%s/fakeproc/empty", tmp);
	snprintf(proc, sizeof(proc), "%s/fakeproc/empty", tmp);
	expect_refused(HC_BROKER_KALLSYMS, 0, 0, 0, proc, -ENOENT);
}

/*
 * MAPPED in a fake tree, no root needed: /proc/42/maps says which ranges are mappings and
 * whether they are executable, map_files/START-END (symlinks here, magic links in /proc) is
 * what is opened. The maps line decides, not what map_files holds.
 */
static void test_mapped_fake(void **state)
{
	static const struct {
		uint64_t start, end;
		int want; /* 0: the file is handed out */
		const char *text;
	} cases[] = {
		{0x400000, 0x403000, 0, "program text\n"},
		{0x600000, 0x601000, -EPERM, NULL},	 /* r--p: data */
		{0x700000, 0x701000, -EPERM, NULL},	 /* rw-p: data */
		{0x800000, 0x801000, 0, "other text\n"}, /* --xp: executable */
		{0x900000, 0x901000, -EPERM, NULL},	 /* executable, a FIFO */
		{0xa00000, 0xa01000, -EPERM, NULL},	 /* executable, a directory */
		{0xb00000, 0xb01000, -ENOENT, NULL},	 /* in map_files, not in maps */
		{0xc00000, 0xc01000, -ENOENT, NULL},	 /* in maps, not in map_files */
		/* Part of a mapping, more than one: map_files has them here (the kernel's
		 * never does), the maps check alone refuses them. */
		{0x400000, 0x401000, -ENOENT, NULL},
		{0x401000, 0x403000, -ENOENT, NULL},
		{0x400000, 0x601000, -ENOENT, NULL},
	};
	static const char *const links[][2] = {
		{"400000-403000", "text.bin"}, {"600000-601000", "secret"},
		{"700000-701000", "secret"},   {"800000-801000", "text2.bin"},
		{"900000-901000", "fifo"},     {"a00000-a01000", "dir"},
		{"b00000-b01000", "secret"},   {"400000-401000", "secret"},
		{"401000-403000", "secret"},   {"400000-601000", "secret"},
	};
	char proc[192], dir[128], link[512], target[512];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/mapped", tmp);
	make_dir("%s", dir);
	snprintf(proc, sizeof(proc), "%s/proc", dir);
	make_dir("%s", proc);
	make_dir("%s/42", proc);
	make_dir("%s/42/map_files", proc);
	put_file("00400000-00403000 r-xp 00000000 08:01 12 /usr/bin/fake\n"
		 "00600000-00601000 r--p 00000000 08:01 13 /etc/secret\n"
		 "00700000-00701000 rw-p 00000000 08:01 13 /etc/secret\n"
		 "00800000-00801000 --xp 00000000 08:01 14 /usr/lib/other\n"
		 "00900000-00901000 r-xp 00000000 08:01 15 /tmp/fifo\n"
		 "00a00000-00a01000 r-xp 00000000 08:01 16 /tmp/dir\n"
		 "00c00000-00c01000 r-xp 00000000 08:01 17 /usr/lib/gone\n",
		 "%s/42/maps", proc);
	put_file("program text\n", "%s/text.bin", dir);
	put_file("other text\n", "%s/text2.bin", dir);
	put_file("a private key\n", "%s/secret", dir);
	snprintf(target, sizeof(target), "%s/fifo", dir);
	assert_int_equal(mkfifo(target, 0644), 0);
	make_dir("%s/dir", dir);
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(link, sizeof(link), "%s/42/map_files/%s", proc, links[i][0]);
		snprintf(target, sizeof(target), "%s/%s", dir, links[i][1]);
		assert_int_equal(symlink(target, link), 0);
	}

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i].want) {
			alarm(10); /* a FIFO opened for reading would block us */
			expect_refused(HC_BROKER_MAPPED, 42, cases[i].start, cases[i].end, proc,
				       cases[i].want);
			alarm(0);
		} else {
			int fd = ask_one(HC_BROKER_MAPPED, 42, cases[i].start, cases[i].end, proc);

			assert_fd_text(fd, cases[i].text);
			close(fd);
		}
	}
	/* No such process in the tree. */
	expect_refused(HC_BROKER_MAPPED, 43, 0x400000, 0x403000, proc, -ENOENT);
}

/*
 * PERFMAP, as the broker promises it: TGID's /tmp/perf-NSPID.map, resolved in the process's
 * root (symlinks on the way stay inside it, `..` stops at it), the file itself a regular
 * file owned by the process's owner and never a symlink; a FIFO is never opened.
 * The fake process 42 has its root at TMP/root42 (/proc/42/root is a symlink there).
 */
static void fake_perfmap_tree(const char *name, char *proc, size_t len, char *root, size_t root_len)
{
	char target[256];

	make_dir("%s/%s", tmp, name);
	snprintf(proc, len, "%s/%s/proc", tmp, name);
	snprintf(root, root_len, "%s/%s/root42", tmp, name);
	make_dir("%s", proc);
	make_dir("%s/42", proc);
	make_dir("%s", root);
	make_dir("%s/tmp", root);
	snprintf(target, sizeof(target), "%s/42/root", proc);
	if (symlink(root, target))
		fail_msg("symlink %s: %s", target, strerror(errno));
	/* Outside the process's root: must never be handed out through its perf maps. */
	make_dir("%s/%s/outside", tmp, name);
	put_file("7f0000000000 10 outside_root\n", "%s/%s/outside/perf-7.map", tmp, name);
	put_file("7f0000000000 10 outside_root\n", "%s/%s/outside/secret", tmp, name);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Refused quickly: a FIFO would block an open for reading until a writer came. SIGALRM's
 * default action ends the test run if the broker blocks anyway. */
static void expect_refused_fast(uint32_t tgid, uint64_t nspid, const char *proc, int want)
{
	double t0 = now_s();

	alarm(10);
	expect_refused(HC_BROKER_PERFMAP, tgid, nspid, 0, proc, want);
	alarm(0);
	assert_true(now_s() - t0 < 2.0);
}

static void test_perfmap_fake(void **state)
{
	char proc[128], root[128], path[512], target[512];
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	int fd, s, dir;

	(void)state;
	fake_perfmap_tree("perfmap", proc, sizeof(proc), root, sizeof(root));
	put_file("7f0000000000 10 inside_root\n", "%s/tmp/perf-7.map", root);

	/* The regular file, owned (like the process dir) by us. */
	fd = ask_one(HC_BROKER_PERFMAP, 42, 7, 0, proc);
	assert_fd_text(fd, "7f0000000000 10 inside_root\n");
	close(fd);

	/* nspid is a pid too. */
	expect_refused(HC_BROKER_PERFMAP, 42, 0, 0, proc, -EINVAL);
	expect_refused(HC_BROKER_PERFMAP, 42, PID_MAX_LIMIT + 1, 0, proc, -EINVAL);
	expect_refused(HC_BROKER_PERFMAP, 42, UINT64_MAX, 0, proc, -EINVAL);
	expect_refused(HC_BROKER_PERFMAP, 42, 6, 0, proc, -ENOENT);
	expect_refused(HC_BROKER_PERFMAP, 43, 7, 0, proc, -ENOENT); /* no such process */

	/* The map itself a symlink, absolute or relative, to a file out of the root, to a
	 * file in it, or to /etc/shadow: never followed. */
	snprintf(path, sizeof(path), "%s/tmp/perf-8.map", root);
	snprintf(target, sizeof(target), "%s/perfmap/outside/secret", tmp);
	assert_int_equal(symlink(target, path), 0);
	expect_refused_fast(42, 8, proc, -EPERM);
	snprintf(path, sizeof(path), "%s/tmp/perf-9.map", root);
	assert_int_equal(symlink("../../outside/secret", path), 0);
	expect_refused_fast(42, 9, proc, -EPERM);
	snprintf(path, sizeof(path), "%s/tmp/perf-10.map", root);
	assert_int_equal(symlink("perf-7.map", path), 0);
	expect_refused_fast(42, 10, proc, -EPERM);
	snprintf(path, sizeof(path), "%s/tmp/perf-11.map", root);
	assert_int_equal(symlink("/etc/shadow", path), 0);
	expect_refused_fast(42, 11, proc, -EPERM);

	/* Not regular files: a FIFO (never opened: that would block us), a directory, a
	 * socket. */
	snprintf(path, sizeof(path), "%s/tmp/perf-12.map", root);
	assert_int_equal(mkfifo(path, 0644), 0);
	expect_refused_fast(42, 12, proc, -EPERM);
	make_dir("%s/tmp/perf-13.map", root);
	expect_refused_fast(42, 13, proc, -EPERM);
	/* Bound through the directory's descriptor: sun_path holds 108 bytes only. */
	snprintf(path, sizeof(path), "%s/tmp", root);
	dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(dir >= 0);
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/perf-14.map", dir);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(s >= 0);
	assert_int_equal(bind(s, (struct sockaddr *)&sun, sizeof(sun)), 0);
	expect_refused_fast(42, 14, proc, -EPERM);
	close(s);
	close(dir);
}

/*
 * The process's /tmp a symlink: followed, but inside the process's root only. Our temporary
 * directory is under /tmp, so inside the root an absolute path to it starts with the very
 * symlink being resolved: ELOOP, never the file we can see there.
 */
static void test_perfmap_fake_root(void **state)
{
	char proc[128], root[128], path[512], target[512];
	int fd;

	(void)state;
	fake_perfmap_tree("inroot", proc, sizeof(proc), root, sizeof(root));
	snprintf(path, sizeof(path), "%s/tmp", root);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(strncmp(tmp, "/tmp/", 5), 0);

	/* To us TMP/inroot/outside holds a perf-7.map; not to the process. */
	snprintf(target, sizeof(target), "%s/inroot/outside", tmp);
	assert_int_equal(symlink(target, path), 0);
	expect_refused(HC_BROKER_PERFMAP, 42, 7, 0, proc, -ELOOP);
	/* `..` climbs no higher than the root: the same place. */
	assert_int_equal(unlink(path), 0);
	snprintf(target, sizeof(target), "../../../../../../../../../../../..%s/inroot/outside",
		 tmp);
	assert_int_equal(symlink(target, path), 0);
	expect_refused(HC_BROKER_PERFMAP, 42, 7, 0, proc, -ELOOP);

	/* Paths that exist only inside the root: absolute, climbing, relative. */
	make_dir("%s/elsewhere", root);
	put_file("7f0000000000 10 in_root_elsewhere\n", "%s/elsewhere/perf-7.map", root);
	{
		static const char *const targets[] = {"/elsewhere", "../../../../../elsewhere",
						      "elsewhere", "/../elsewhere/."};

		for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
			assert_int_equal(unlink(path), 0);
			assert_int_equal(symlink(targets[i], path), 0);
			fd = ask_one(HC_BROKER_PERFMAP, 42, 7, 0, proc);
			assert_fd_text(fd, "7f0000000000 10 in_root_elsewhere\n");
			close(fd);
		}
	}
	/* /elsewhere does not exist outside: had it been resolved there, ENOENT. */
	assert_int_equal(access("/elsewhere", F_OK), -1);
}

/* ---- the loop: hc_broker__serve and the stop line ---- */

static void *serve_main(void *arg)
{
	struct serve_run *r = arg;

	r->ret = hc_broker__serve(r->sock, r->stop_wfd, &r->stop, r->proc, &r->st);
	return NULL;
}

static struct serve_run *serve_start(int sock, int stop_wfd, const char *proc)
{
	struct serve_run *r = &serving;

	assert_false(r->running);
	memset(r, 0, sizeof(*r));
	r->sock = sock;
	r->stop_wfd = stop_wfd;
	r->proc = proc;
	r->ret = 1;
	assert_int_equal(pthread_create(&r->th, NULL, serve_main, r), 0);
	r->running = true;
	return r;
}

/* The worker closed its end: serve returns 0 in time. */
static void serve_join(struct serve_run *r)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += 5;
	assert_int_equal(pthread_timedjoin_np(r->th, NULL, &dl), 0);
	r->running = false;
	assert_int_equal(r->ret, 0);
}

static int send_recv(int sock, const void *buf, size_t len, int *fds, unsigned int *nfds)
{
	assert_int_equal(send(sock, buf, len, MSG_NOSIGNAL), (ssize_t)len);
	return recv_reply(sock, fds, nfds);
}

/* Through the real recv: empty, short, long (cut by MSG_TRUNC) datagrams and descriptors
 * sent to the broker are refused or dropped, and the loop goes on serving. */
static void test_serve_wire(void **state)
{
	static const size_t bad_sizes[] = {
		0,   1,	   sizeof(struct hc_broker_req) - 1, sizeof(struct hc_broker_req) + 1,
		100, 65536};
	struct hc_broker_req good = {.op = HC_BROKER_ALIVE, .tgid = (uint32_t)getpid()};
	struct serve_run *r;
	unsigned int nfds, nbad = 0, nreq = 0;
	int fds[8], pfd[2], before;
	char *big;

	(void)state;
	big = calloc(1, 65536);
	assert_non_null(big);
	memcpy(big, &good, sizeof(good));
	r = serve_start(sv[0], -1, NULL);
	assert_int_equal(send_recv(sv[1], &good, sizeof(good), fds, &nfds), 0);
	nreq++;
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		int err = send_recv(sv[1], big, bad_sizes[i], fds, &nfds);

		if (err != -EINVAL)
			fail_msg("a %zu-byte request: got %d, want -EINVAL", bad_sizes[i], err);
		assert_int_equal(nfds, 0);
		nbad++;
		nreq++;
		assert_int_equal(send_recv(sv[1], &good, sizeof(good), fds, &nfds), 0);
		nreq++;
	}

	/* A descriptor sent along with a request is not kept by the broker. */
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	before = count_fds();
	{
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = {.iov_base = &good, .iov_len = sizeof(good)};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf)};
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

		memset(&u, 0, sizeof(u));
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pfd[0], sizeof(int));
		assert_int_equal(sendmsg(sv[1], &msg, MSG_NOSIGNAL), (ssize_t)sizeof(good));
		assert_int_equal(recv_reply(sv[1], fds, &nfds), 0);
		nreq++;
	}
	assert_int_equal(count_fds(), before);
	close(pfd[0]);
	close(pfd[1]);

	close(sv[1]);
	sv[1] = -1;
	serve_join(r);
	assert_int_equal(r->st.requests, nreq);
	assert_int_equal(r->st.refused, nbad);
	assert_int_equal(r->st.opened, 0);
	free(big);
}

/* *stop set: the worker is asked once on the stop line, and still served until it leaves. */
static void test_serve_stop(void **state)
{
	struct hc_broker_req good = {.op = HC_BROKER_ALIVE, .tgid = (uint32_t)getpid()};
	struct pollfd p;
	struct serve_run *r;
	unsigned int nfds;
	int line[2], fds[8];
	char c;

	(void)state;
	assert_int_equal(hc_stopline__new(line), 0);
	assert_false(hc_stopline__asked(line[0]));
	r = serve_start(sv[0], line[1], NULL);
	assert_int_equal(send_recv(sv[1], &good, sizeof(good), fds, &nfds), 0);
	assert_false(hc_stopline__asked(line[0]));
	r->stop = 1;
	p = (struct pollfd){.fd = line[0], .events = POLLIN};
	assert_int_equal(poll(&p, 1, 3000), 1);
	assert_true(hc_stopline__asked(line[0]));
	assert_int_equal(read(line[0], &c, 1), 1);
	/* Each answer is a turn of the loop past the check of *stop: asked only once. */
	for (int i = 0; i < 3; i++)
		assert_int_equal(send_recv(sv[1], &good, sizeof(good), fds, &nfds), 0);
	assert_false(hc_stopline__asked(line[0]));
	close(sv[1]);
	sv[1] = -1;
	serve_join(r);
	assert_int_equal(r->st.requests, 4);
	/* Our end closed (the privileged process died): the worker reads that as asked. */
	close(line[1]);
	assert_true(hc_stopline__asked(line[0]));
	close(line[0]);
}

/* The worker's side of it: the symbolizer I/O hc_broker_client__io gives, against serve. */
static void test_client_io(void **state)
{
	struct hc_broker_client cl = {.sock = sv[1]};
	struct hc_symbolizer_io io;
	struct serve_run *r;
	struct kid k;
	int maps_fd = -1, stat_fd = -1, fd;
	pid_t gone = dead_pid();

	(void)state;
	kid_start(&k, NULL, NULL, (uid_t)-1);
	r = serve_start(sv[0], -1, NULL);
	hc_broker_client__io(&cl, &io);
	assert_int_equal(io.open_proc(io.ctx, (uint32_t)k.pid, &maps_fd, &stat_fd), 0);
	assert_true(maps_fd >= 0 && stat_fd >= 0 && maps_fd != stat_fd);
	assert_true(fcntl(maps_fd, F_GETFD) & FD_CLOEXEC);
	close(maps_fd);
	close(stat_fd);
	fd = io.open_status(io.ctx, (uint32_t)k.pid);
	assert_true(fd >= 0);
	close(fd);
	fd = io.open_kallsyms(io.ctx);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(io.alive(io.ctx, (uint32_t)k.pid), 0);
	assert_int_equal(io.alive(io.ctx, (uint32_t)gone), -ENOENT);
	assert_int_equal(io.open_proc(io.ctx, 0, &maps_fd, &stat_fd), -EINVAL);
	assert_int_equal(io.open_mapped(io.ctx, (uint32_t)k.pid, 4096, 4096), -EINVAL);
	assert_int_equal(io.open_perfmap(io.ctx, (uint32_t)k.pid, 0), -EINVAL);
	close(sv[1]);
	sv[1] = -1;
	serve_join(r);
	assert_int_equal(r->st.requests, 8);
	assert_int_equal(r->st.opened, 4);
	assert_int_equal(r->st.refused, 4);
	kid_stop(&k);
}

/* ---- root: map_files, owners ---- */

/* MAPPED in the real /proc: exactly an executable mapping of a file, and then that file
 * (deleted or not); a data mapping, anonymous memory or anything else refused. */
static void test_mapped_live(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char path[256], data[256], *content, *got;
	struct stat want, sb;
	size_t len = 2 * page + 123;
	uint64_t xs, xe;
	struct kid k;
	pid_t gone;
	int fd;

	(void)state;
	content = malloc(len + 1);
	assert_non_null(content);
	for (size_t i = 0; i < len; i++)
		content[i] = (char)('a' + i % 26);
	content[len] = '\0';
	snprintf(path, sizeof(path), "%s/mapped.bin", tmp);
	put_file(content, "%s", path);
	assert_int_equal(stat(path, &want), 0);
	/* What a process maps as data: a key, a database. */
	snprintf(data, sizeof(data), "%s/data.bin", tmp);
	put_file("a private key\n", "%s", data);
	kid_start(&k, path, data, (uid_t)-1);
	xs = k.start[KID_EXEC];
	xe = k.end[KID_EXEC];
	assert_int_equal(xe - xs, 3 * page);
	assert_maps_line(k.pid, xs, xe, "r-xp");
	assert_maps_line(k.pid, k.start[KID_DATA], k.end[KID_DATA], "r--p");
	assert_maps_line(k.pid, k.start[KID_ANON], k.end[KID_ANON], "rw-p");
	assert_maps_line(k.pid, k.start[KID_ANONX], k.end[KID_ANONX], "r-xp");

	fd = ask_one(HC_BROKER_MAPPED, (uint32_t)k.pid, xs, xe, NULL);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_true(sb.st_dev == want.st_dev && sb.st_ino == want.st_ino);
	assert_true(S_ISREG(sb.st_mode));
	got = fd_text(fd, NULL);
	assert_string_equal(got, content);
	free(got);
	close(fd);

	/* Mapped, but not executable: a file (map_files has it: only the policy stops it) and
	 * an anonymous region. */
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, k.start[KID_DATA], k.end[KID_DATA], NULL,
		       -EPERM);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, k.start[KID_ANON], k.end[KID_ANON], NULL,
		       -EPERM);
	/* Executable, but no file behind it (JIT code): nothing to hand out. */
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, k.start[KID_ANONX], k.end[KID_ANONX],
		       NULL, -ENOENT);
	/* Not exactly a mapping: part of one, more than one, none. */
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, xs + page, xe, NULL, -ENOENT);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, xs, xe - page, NULL, -ENOENT);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, xs, xe + page, NULL, -ENOENT);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, xs - page, xe, NULL, -ENOENT);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, 0x1000, 0x2000, NULL, -ENOENT);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, UINT64_MAX - 1, UINT64_MAX, NULL,
		       -ENOENT);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, xe, xs, NULL, -EINVAL);
	expect_refused(HC_BROKER_MAPPED, (uint32_t)k.pid, xs, xs, NULL, -EINVAL);

	/* A deleted file is still what the process maps, and still readable. */
	assert_int_equal(unlink(path), 0);
	fd = ask_one(HC_BROKER_MAPPED, (uint32_t)k.pid, xs, xe, NULL);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_true(sb.st_dev == want.st_dev && sb.st_ino == want.st_ino);
	close(fd);
	gone = k.pid;
	kid_stop(&k);
	/* The process gone: its mappings with it. */
	expect_refused(HC_BROKER_MAPPED, (uint32_t)gone, xs, xe, NULL, -ENOENT);
	assert_int_equal(unlink(data), 0);
	free(content);
}

/* The real /tmp/perf-PID.map of a live child of ours (its root is ours, its pid the same in
 * its namespace): the owner decides, and only a regular file is handed out. */
static void test_perfmap_live(void **state)
{
	static const char text[] = "7f0000001000 20 jitted_fn\n";
	char path[128];
	struct kid k, kn;
	int fd;

	(void)state;
	kid_start(&k, NULL, NULL, (uid_t)-1); /* root, like us */
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)k.pid);
	unlink(path);
	put_file(text, "%s", path);
	fd = ask_one(HC_BROKER_PERFMAP, (uint32_t)k.pid, (uint64_t)k.pid, 0, NULL);
	assert_fd_text(fd, text);
	close(fd);
	/* Written by someone else than the process's owner. */
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	expect_refused_fast((uint32_t)k.pid, (uint64_t)k.pid, NULL, -EPERM);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/shadow", path), 0);
	expect_refused_fast((uint32_t)k.pid, (uint64_t)k.pid, NULL, -EPERM);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkfifo(path, 0644), 0);
	expect_refused_fast((uint32_t)k.pid, (uint64_t)k.pid, NULL, -EPERM);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0755), 0);
	expect_refused_fast((uint32_t)k.pid, (uint64_t)k.pid, NULL, -EPERM);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(mknod(path, S_IFCHR | 0644, makedev(1, 3)), 0); /* /dev/null's */
	expect_refused_fast((uint32_t)k.pid, (uint64_t)k.pid, NULL, -EPERM);
	assert_int_equal(unlink(path), 0);
	kid_stop(&k);

	/* A process of nobody's: its own file, not root's. */
	kid_start(&kn, NULL, NULL, NOBODY);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)kn.pid);
	unlink(path);
	put_file(text, "%s", path);
	expect_refused_fast((uint32_t)kn.pid, (uint64_t)kn.pid, NULL, -EPERM);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	fd = ask_one(HC_BROKER_PERFMAP, (uint32_t)kn.pid, (uint64_t)kn.pid, 0, NULL);
	assert_fd_text(fd, text);
	close(fd);
	/* nobody's symlink to a file of nobody's is still a symlink. */
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/nobody.map", tmp);
	put_file(text, "%s", path);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	{
		char link[64];

		snprintf(link, sizeof(link), "/tmp/perf-%d.map", (int)kn.pid);
		assert_int_equal(symlink(path, link), 0);
		assert_int_equal(lchown(link, NOBODY, NOBODY), 0);
		expect_refused_fast((uint32_t)kn.pid, (uint64_t)kn.pid, NULL, -EPERM);
		assert_int_equal(unlink(link), 0);
	}
	kid_stop(&kn);
}

/* The same owner rule in the fake tree: the process dir's owner against the file's. */
static void test_perfmap_fake_owner(void **state)
{
	char proc[128], root[128], path[512];
	int fd;

	(void)state;
	fake_perfmap_tree("owner", proc, sizeof(proc), root, sizeof(root));
	snprintf(path, sizeof(path), "%s/tmp/perf-21.map", root);
	put_file("7f0000000000 10 x\n", "%s", path);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	expect_refused(HC_BROKER_PERFMAP, 42, 21, 0, proc, -EPERM);
	snprintf(path, sizeof(path), "%s/42", proc);
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	fd = ask_one(HC_BROKER_PERFMAP, 42, 21, 0, proc);
	close(fd);
	put_file("7f0000000000 10 y\n", "%s/tmp/perf-22.map", root); /* root's */
	expect_refused(HC_BROKER_PERFMAP, 42, 22, 0, proc, -EPERM);
	assert_int_equal(chown(path, 0, 0), 0);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest broker[] = {
		cmocka_unit_test_setup_teardown(test_proc_live, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_status_live, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_kallsyms, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_alive, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_refused_sizes, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_refused_ops, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_refused_tgid, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_refused_mapped_range, pair_setup,
						pair_teardown),
		cmocka_unit_test_setup_teardown(test_fake_proc, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_mapped_fake, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_fake, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_fake_root, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_serve_wire, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_serve_stop, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_client_io, pair_setup, pair_teardown),
	};
	const struct CMUnitTest broker_root[] = {
		cmocka_unit_test_setup_teardown(test_mapped_live, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_live, pair_setup, pair_teardown),
		cmocka_unit_test_setup_teardown(test_perfmap_fake_owner, pair_setup, pair_teardown),
	};
	const char *group = argc > 1 ? argv[1] : "broker";

	if (!strcmp(group, "broker"))
		return cmocka_run_group_tests_name("broker", broker, group_setup, group_teardown);
	if (!strcmp(group, "broker-root")) {
		privsep_require_root(group, "map_files, files of other owners, a child as nobody");
		return cmocka_run_group_tests_name("broker-root", broker_root, group_setup,
						   group_teardown);
	}
	fprintf(stderr, "unknown group %s (broker, broker-root)\n", group);
	return 2;
}
