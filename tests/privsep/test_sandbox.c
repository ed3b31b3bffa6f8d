// SPDX-License-Identifier: GPL-2.0-only
/*
 * privsep/sandbox and privsep/privdrop unit tests. Each case runs in a forked child that
 * installs an allow-list (or enters the sandbox) and then does one thing; the parent judges
 * how the child ended and what it said. Groups, chosen by argv[1]:
 *   sandbox       the worker and server allow-lists: each forbidden call ends the child with
 *                 exit 70 and one stderr line naming that call (its number), the calls the
 *                 parts need still work
 *   sandbox-root  hc_sandbox__enter and hc_privdrop as root with user nobody: credentials,
 *                 capabilities, NoNewPrivs, seccomp, the parent-death signal; needs root
 *                 (77 outside CI, a failure under CI=true)
 * Sanitizer builds let LeakSanitizer's calls through (sandbox.c): refusing those is only
 * asserted in the other builds.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "privsep/broker.h"
#include "privsep/privdrop.h"
#include "privsep/sandbox.h"

#include "privsep_test.h"

#define NOBODY 65534u
#define CHILD_WAIT_MS 10000

static char tmp[64];		   /* this run's temporary directory */
static pid_t leftover[2];	   /* processes a failed test leaves: killed by its teardown */
static char existing[128];	   /* a file in it, "original\n" */
static char fresh[128];		   /* a path in it that must stay absent */
static int pre_fd = -1;		   /* `existing`, opened before the allow-list */
static int pre_exec_fd = -1;	   /* /bin/true, opened before the allow-list */
static int pre_listen = -1;	   /* a TCP socket listening on 127.0.0.1 */
static int pre_pair[2] = {-1, -1}; /* a broker-like SOCK_SEQPACKET pair */
static struct sockaddr_in listen_addr;

/* ---- running a child ---- */

enum how {
	INSTALL,     /* NoNewPrivs, then hc_sandbox__install: no root needed */
	ENTER_NOBODY /* hc_sandbox__enter(user nobody, our parent): root */
};

struct outcome {
	int status;
	char out[4096]; /* what the action wrote to its descriptor */
	char err[4096]; /* its stderr */
};

typedef void (*action_fn)(int out);

static void say(int out, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && write(out, buf, (size_t)n) < 0)
		_exit(99);
}

static void drain(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t r;

	while (n + 1 < cap && (r = read(fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
}

/* Wait for pid up to ms; kill it when it does not end. The status, or -1 on timeout. */
static int wait_for(pid_t pid, int ms)
{
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0), status, r;
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	if (pidfd < 0)
		fail_msg("pidfd_open %d: %s", (int)pid, strerror(errno));
	/* Readable once the process has ended. */
	r = poll(&p, 1, ms);
	close(pidfd);
	if (r != 1)
		kill(pid, SIGKILL);
	if (waitpid(pid, &status, 0) != pid)
		fail_msg("waitpid %d: %s", (int)pid, strerror(errno));
	return r == 1 ? status : -1;
}

static void run(enum hc_sandbox which, enum how how, action_fn fn, struct outcome *o)
{
	int outp[2], errp[2];
	pid_t pid;

	memset(o, 0, sizeof(*o));
	/* Non-blocking reads: a child that forked (a broken allow-list) may leave a
	 * grandchild holding the pipes. */
	assert_int_equal(pipe2(outp, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(pipe2(errp, O_CLOEXEC | O_NONBLOCK), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char why[256] = "";
		int err;

		if (dup2(errp[1], STDERR_FILENO) < 0)
			_exit(98);
		if (how == INSTALL) {
			/* Without CAP_SYS_ADMIN a filter needs NoNewPrivs (privdrop sets it). */
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
				_exit(97);
			err = hc_sandbox__install(which, why, sizeof(why));
		} else {
			err = hc_sandbox__enter(which, "nobody", getppid(), why, sizeof(why));
		}
		if (err) {
			say(outp[1], "setup failed: %s (%s)\n", why, strerror(-err));
			_exit(96);
		}
		fn(outp[1]);
		_exit(0);
	}
	close(outp[1]);
	close(errp[1]);
	o->status = wait_for(pid, CHILD_WAIT_MS);
	drain(outp[0], o->out, sizeof(o->out));
	drain(errp[0], o->err, sizeof(o->err));
	close(outp[0]);
	close(errp[0]);
	if (o->status == -1)
		fail_msg("the sandboxed child did not end in %d ms (out: %s, err: %s)",
			 CHILD_WAIT_MS, o->out, o->err);
}

/* The child was stopped at system call nr: exit 70, and exactly the handler's line. */
static void expect_trapped(enum hc_sandbox which, enum how how, action_fn fn, long nr,
			   const char *what)
{
	struct outcome o;
	char want[256];

	run(which, how, fn, &o);
	if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) != 70)
		fail_msg("%s: the child ended with status %#x, not exit 70 (out: %s, err: %s)",
			 what, o.status, o.out, o.err);
	snprintf(want, sizeof(want),
		 "hotcold: sandbox: system call %ld refused by the seccomp allow-list"
		 " (a bug: please report)\n",
		 nr);
	if (strcmp(o.err, want))
		fail_msg("%s: stderr is\n%s\nwant\n%s", what, o.err, want);
	assert_string_equal(o.out, ""); /* nothing ran after the call */
}

/* ---- forbidden: one action each ---- */

static void do_open_wronly_creat(int out)
{
	say(out, "returned %d\n", open(fresh, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
}

static void do_open_rdwr(int out)
{
	say(out, "returned %d\n", open(existing, O_RDWR | O_CLOEXEC));
}

static void do_open_rdonly_trunc(int out)
{
	say(out, "returned %d\n", open(existing, O_RDONLY | O_TRUNC | O_CLOEXEC));
}

static void do_open_wronly_append(int out)
{
	say(out, "returned %d\n", open(existing, O_WRONLY | O_APPEND | O_CLOEXEC));
}

static void do_sys_open_wronly(int out)
{
	say(out, "returned %ld\n", syscall(SYS_open, existing, O_WRONLY));
}

static void do_sys_creat(int out)
{
	say(out, "returned %ld\n", syscall(SYS_creat, fresh, 0600));
}

/* openat2's flags sit in memory seccomp cannot read: refused even read-only. */
static void do_openat2(int out)
{
	struct open_how h = {.flags = O_RDONLY};

	say(out, "returned %ld\n", syscall(SYS_openat2, AT_FDCWD, existing, &h, sizeof(h)));
}

static void do_unlink(int out)
{
	say(out, "returned %ld\n", syscall(SYS_unlink, existing));
}

static void do_socket_inet(int out)
{
	say(out, "returned %d\n", socket(AF_INET, SOCK_STREAM, 0));
}

static void do_socket_unix(int out)
{
	say(out, "returned %d\n", socket(AF_UNIX, SOCK_DGRAM, 0));
}

static void do_socketpair(int out)
{
	int sv[2];

	say(out, "returned %d\n", socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
}

static void do_execve(int out)
{
	char *const argv[] = {"true", NULL};

	say(out, "returned %d\n", execve("/bin/true", argv, environ));
}

static void do_execveat(int out)
{
	char *const argv[] = {"true", NULL};

	say(out, "returned %ld\n",
	    syscall(SYS_execveat, pre_exec_fd, "", argv, environ, AT_EMPTY_PATH));
}

static void do_fork(int out)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	say(out, "returned %d\n", (int)pid);
}

static void do_clone_process(int out)
{
	long pid = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);

	if (pid == 0)
		_exit(0);
	say(out, "returned %ld\n", pid);
}

static void do_clone3_process(int out)
{
	struct {
		uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
	} args = {.exit_signal = SIGCHLD};
	long pid = syscall(SYS_clone3, &args, sizeof(args));

	if (pid == 0)
		_exit(0);
	say(out, "returned %ld\n", pid);
}

static void do_vfork(int out)
{
	pid_t pid = vfork();

	if (pid == 0)
		_exit(0);
	say(out, "returned %d\n", (int)pid);
}

static void do_mmap_exec(int out)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	say(out, "returned %p\n", p);
}

static void do_mmap_exec_file(int out)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, pre_exec_fd, 0);

	say(out, "returned %p\n", p);
}

/* Mapped writable first (allowed), then the change to executable. */
static void *rw_page(int out)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		say(out, "mmap PROT_READ|PROT_WRITE failed: %s\n", strerror(errno));
		_exit(3);
	}
	return p;
}

static void do_mprotect_exec(int out)
{
	void *p = rw_page(out);

	say(out, "returned %d\n", mprotect(p, 4096, PROT_READ | PROT_EXEC));
}

static void do_pkey_mprotect_exec(int out)
{
	void *p = rw_page(out);

	say(out, "returned %ld\n", syscall(SYS_pkey_mprotect, p, 4096, PROT_READ | PROT_EXEC, -1));
}

static void do_memfd_create(int out)
{
	say(out, "returned %ld\n", syscall(SYS_memfd_create, "x", 0));
}

static void do_ptrace(int out)
{
	say(out, "returned %ld\n", ptrace(PTRACE_TRACEME, 0, NULL, NULL));
}

static void do_process_vm_readv(int out)
{
	char buf[8];
	struct iovec l = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct iovec r = {.iov_base = (void *)&listen_addr, .iov_len = sizeof(buf)};

	say(out, "returned %ld\n", syscall(SYS_process_vm_readv, getppid(), &l, 1, &r, 1, 0));
}

static void do_bpf_prog_load(int out)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	say(out, "returned %ld\n", syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr)));
}

static void do_bpf_map_create(int out)
{
	union bpf_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	say(out, "returned %ld\n", syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr)));
}

static void do_perf_event_open(int out)
{
	struct perf_event_attr attr = {.type = PERF_TYPE_SOFTWARE,
				       .size = sizeof(attr),
				       .config = PERF_COUNT_SW_CPU_CLOCK};

	say(out, "returned %ld\n", syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
}

/* io_uring's operations never pass through the filter: the ring itself must not be had. */
static void do_io_uring_setup(int out)
{
	char params[120];

	memset(params, 0, sizeof(params));
	say(out, "returned %ld\n", syscall(SYS_io_uring_setup, 1, params));
}

static void do_ioctl_tiocsti(int out)
{
	char c = 'x';

	say(out, "returned %d\n", ioctl(STDIN_FILENO, TIOCSTI, &c));
}

static void do_kill_parent(int out)
{
	say(out, "returned %d\n", kill(getppid(), 0));
}

static void do_tgkill_parent(int out)
{
	say(out, "returned %ld\n", syscall(SYS_tgkill, getppid(), getppid(), 0));
}

static void do_setuid0(int out)
{
	say(out, "returned %ld\n", syscall(SYS_setuid, 0));
}

static void do_unshare_user(int out)
{
	say(out, "returned %d\n", unshare(CLONE_NEWUSER));
}

static void do_prctl_dumpable(int out)
{
	say(out, "returned %d\n", prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
}

static void do_setrlimit(int out)
{
	struct rlimit rl = {0, 0};

	say(out, "returned %d\n", setrlimit(RLIMIT_CORE, &rl));
}

struct forbidden {
	const char *what;
	action_fn fn;
	long nr;
	bool asan_allows; /* in sandbox.c's sanitizer list */
};

static const struct forbidden worker_forbidden[] = {
	{"open(O_WRONLY|O_CREAT)", do_open_wronly_creat, SYS_openat, false},
	{"open(O_RDWR)", do_open_rdwr, SYS_openat, false},
	{"open(O_RDONLY|O_TRUNC)", do_open_rdonly_trunc, SYS_openat, false},
	{"open(O_WRONLY|O_APPEND)", do_open_wronly_append, SYS_openat, false},
	{"SYS_open(O_WRONLY)", do_sys_open_wronly, SYS_open, false},
	{"SYS_creat", do_sys_creat, SYS_creat, false},
	{"openat2(O_RDONLY)", do_openat2, SYS_openat2, false},
	{"unlink", do_unlink, SYS_unlink, false},
	{"socket(AF_INET)", do_socket_inet, SYS_socket, false},
	{"socket(AF_UNIX)", do_socket_unix, SYS_socket, false},
	{"socketpair", do_socketpair, SYS_socketpair, false},
	{"execve", do_execve, SYS_execve, false},
	{"execveat", do_execveat, SYS_execveat, false},
	{"fork", do_fork, SYS_clone, true},
	{"clone(SIGCHLD)", do_clone_process, SYS_clone, true},
	{"clone3", do_clone3_process, SYS_clone3, false},
	{"vfork", do_vfork, SYS_vfork, false},
	{"mmap(PROT_EXEC) anonymous", do_mmap_exec, SYS_mmap, false},
	{"mmap(PROT_EXEC) of a file", do_mmap_exec_file, SYS_mmap, false},
	{"mprotect(PROT_EXEC)", do_mprotect_exec, SYS_mprotect, false},
	{"pkey_mprotect(PROT_EXEC)", do_pkey_mprotect_exec, SYS_pkey_mprotect, false},
	{"memfd_create", do_memfd_create, SYS_memfd_create, false},
	{"ptrace(PTRACE_TRACEME)", do_ptrace, SYS_ptrace, true},
	{"process_vm_readv", do_process_vm_readv, SYS_process_vm_readv, false},
	{"bpf(BPF_PROG_LOAD)", do_bpf_prog_load, SYS_bpf, false},
	{"bpf(BPF_MAP_CREATE)", do_bpf_map_create, SYS_bpf, false},
	{"perf_event_open", do_perf_event_open, SYS_perf_event_open, false},
	{"io_uring_setup", do_io_uring_setup, SYS_io_uring_setup, false},
	{"ioctl(TIOCSTI)", do_ioctl_tiocsti, SYS_ioctl, false},
	{"kill(parent)", do_kill_parent, SYS_kill, true},
	{"tgkill(parent)", do_tgkill_parent, SYS_tgkill, false},
	{"setuid(0)", do_setuid0, SYS_setuid, false},
	{"unshare(CLONE_NEWUSER)", do_unshare_user, SYS_unshare, false},
	{"prctl(PR_SET_DUMPABLE)", do_prctl_dumpable, SYS_prctl, true},
	{"setrlimit", do_setrlimit, SYS_prlimit64, false},
};

static const struct forbidden server_forbidden[] = {
	{"open(O_WRONLY|O_CREAT)", do_open_wronly_creat, SYS_openat, false},
	{"open(O_RDWR)", do_open_rdwr, SYS_openat, false},
	{"SYS_open(O_WRONLY)", do_sys_open_wronly, SYS_open, false},
	{"execve", do_execve, SYS_execve, false},
	{"execveat", do_execveat, SYS_execveat, false},
	{"fork", do_fork, SYS_clone, true},
	{"clone(SIGCHLD)", do_clone_process, SYS_clone, true},
	{"vfork", do_vfork, SYS_vfork, false},
	{"ptrace(PTRACE_TRACEME)", do_ptrace, SYS_ptrace, true},
	{"bpf(BPF_PROG_LOAD)", do_bpf_prog_load, SYS_bpf, false},
	{"setuid(0)", do_setuid0, SYS_setuid, false},
	{"unshare(CLONE_NEWUSER)", do_unshare_user, SYS_unshare, false},
	{"prctl(PR_SET_DUMPABLE)", do_prctl_dumpable, SYS_prctl, true},
	{"kill(parent)", do_kill_parent, SYS_kill, true},
};

static void check_forbidden(enum hc_sandbox which, enum how how, const struct forbidden *f,
			    size_t n)
{
	struct stat sb;
	char buf[64];

	for (size_t i = 0; i < n; i++) {
		if (f[i].asan_allows && HC_TEST_ASAN) {
			fprintf(stderr, "note: %s not checked: sanitizer builds allow it\n",
				f[i].what);
			continue;
		}
		expect_trapped(which, how, f[i].fn, f[i].nr, f[i].what);
		/* Never executed: nothing created, truncated, appended to or removed. */
		assert_int_equal(stat(fresh, &sb), -1);
		assert_int_equal(pread(pre_fd, buf, sizeof(buf), 0), 9);
		assert_memory_equal(buf, "original\n", 9);
	}
}

static void test_worker_forbidden(void **state)
{
	(void)state;
	check_forbidden(HC_SANDBOX_WORKER, INSTALL, worker_forbidden,
			sizeof(worker_forbidden) / sizeof(worker_forbidden[0]));
}

static void test_server_forbidden(void **state)
{
	(void)state;
	check_forbidden(HC_SANDBOX_SERVER, INSTALL, server_forbidden,
			sizeof(server_forbidden) / sizeof(server_forbidden[0]));
}

/* ---- allowed ---- */

/* Each step says its name when it worked; the first that did not says why and exits. */
#define STEP(out, name, ok)                                                 \
	do {                                                                \
		if (!(ok)) {                                                \
			say(out, "%s failed: %s\n", name, strerror(errno)); \
			_exit(1);                                           \
		}                                                           \
		say(out, "%s\n", name);                                     \
	} while (0)

static bool read_is(int fd, const char *want)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf), 0);

	return n == (ssize_t)strlen(want) && !memcmp(buf, want, (size_t)n);
}

/* Send fd on `from`, receive it on `to` as *got (close-on-exec, as the broker client asks). */
static bool pass_fd(int from, int to, int fd, int *got)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte = 'x';
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	memset(&u, 0, sizeof(u));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	if (sendmsg(from, &msg, MSG_NOSIGNAL) != 1)
		return false;
	memset(&u, 0, sizeof(u));
	msg.msg_controllen = sizeof(u.buf);
	if (recvmsg(to, &msg, MSG_CMSG_CLOEXEC) != 1 || msg.msg_flags & MSG_CTRUNC)
		return false;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)))
		return false;
	memcpy(got, CMSG_DATA(c), sizeof(int));
	return *got >= 0 && *got != fd;
}

static void worker_allowed(int out)
{
	struct timespec ts;
	struct rlimit rl;
	struct stat sb;
	char *big, c;
	void *p;
	DIR *d;
	int fd;

	STEP(out, "read-inherited", read_is(pre_fd, "original\n"));
	STEP(out, "fstat", !fstat(pre_fd, &sb) && sb.st_size == 9);
	fd = open(existing, O_RDONLY | O_CLOEXEC);
	STEP(out, "open-rdonly", fd >= 0 && read_is(fd, "original\n"));
	close(fd);
	d = opendir(tmp);
	STEP(out, "readdir", d && readdir(d));
	closedir(d);
	big = malloc(256u << 20);
	STEP(out, "malloc-256MiB", big != NULL);
	memset(big, 0x5a, 256u << 20);
	free(big);
	p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	STEP(out, "mmap-rw", p != MAP_FAILED);
	STEP(out, "mprotect-ro", !mprotect(p, 8192, PROT_READ));
	STEP(out, "munmap", !munmap(p, 8192));
	STEP(out, "clock_gettime", !clock_gettime(CLOCK_MONOTONIC, &ts));
	STEP(out, "sys_clock_gettime", !syscall(SYS_clock_gettime, CLOCK_REALTIME, &ts));
	ts = (struct timespec){.tv_nsec = 1000000};
	STEP(out, "nanosleep", !nanosleep(&ts, NULL));
	STEP(out, "getrlimit", !getrlimit(RLIMIT_NOFILE, &rl));
	STEP(out, "tgkill-self", !syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), 0));
	/* Allowed calls that fail on their own: errors, not SIGSYS. */
	STEP(out, "ioctl-tcgets", ioctl(pre_fd, TCGETS, &c) < 0 && errno == ENOTTY);
	{
		union bpf_attr attr;

		memset(&attr, 0, sizeof(attr));
		attr.map_fd = (uint32_t)-1;
		STEP(out, "bpf-map-lookup",
		     syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &attr, sizeof(attr)) < 0 &&
			     errno == EBADF);
	}
	STEP(out, "stderr", fprintf(stderr, "to stderr\n") > 0 && !fflush(stderr));
	/* How the broker's descriptors arrive: SCM_RIGHTS on a socket it already holds. */
	STEP(out, "scm-rights",
	     pass_fd(pre_pair[1], pre_pair[0], pre_fd, &fd) && read_is(fd, "original\n"));
	close(fd);
	/* The stop line: polled, never blocking. */
	STEP(out, "stopline", !hc_stopline__asked(pre_pair[0]));
	say(out, "done\n");
}

static const char worker_steps[] =
	"read-inherited\nfstat\nopen-rdonly\nreaddir\nmalloc-256MiB\nmmap-rw\nmprotect-ro\n"
	"munmap\nclock_gettime\nsys_clock_gettime\nnanosleep\ngetrlimit\ntgkill-self\n"
	"ioctl-tcgets\nbpf-map-lookup\nstderr\nscm-rights\nstopline\ndone\n";

/* The child ran every step of fn, in order, and wrote err_want to stderr. */
static void expect_allowed(enum hc_sandbox which, enum how how, action_fn fn, const char *steps,
			   const char *err_want)
{
	struct outcome o;

	run(which, how, fn, &o);
	if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) != 0 || strcmp(o.out, steps))
		fail_msg("the child ended with status %#x\nout:\n%s\nerr:\n%s\nwant out:\n%s",
			 o.status, o.out, o.err, steps);
	assert_string_equal(o.err, err_want);
}

static void test_worker_allowed(void **state)
{
	(void)state;
	expect_allowed(HC_SANDBOX_WORKER, INSTALL, worker_allowed, worker_steps, "to stderr\n");
}

static void *thread_main(void *arg)
{
	*(int *)arg = 1; /* joined before it is read */
	return (void *)(intptr_t)42;
}

static void server_allowed(int out)
{
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	pthread_t th;
	void *ret = NULL;
	char buf[8];
	int s, c, sv[2], pp[2], ev, ran = 0;

	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	STEP(out, "socket-inet", s >= 0);
	STEP(out, "connect", !connect(s, (struct sockaddr *)&listen_addr, sizeof(listen_addr)));
	c = accept4(pre_listen, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
	STEP(out, "accept", c >= 0);
	STEP(out, "send-recv",
	     write(s, "ping", 4) == 4 && read(c, buf, 4) == 4 && !memcmp(buf, "ping", 4));
	close(c);
	close(s);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	STEP(out, "socket-unix", s >= 0);
	close(s);
	STEP(out, "socketpair", !socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv));
	STEP(out, "pipe2", !pipe2(pp, O_CLOEXEC));
	ev = eventfd(0, EFD_CLOEXEC);
	STEP(out, "eventfd", ev >= 0);
	/* clone3 answers ENOSYS (its flags cannot be checked), glibc falls back to clone
	 * with CLONE_THREAD. */
	{
		struct {
			uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack,
				stack_size, tls;
		} args = {.exit_signal = SIGCHLD};

		STEP(out, "clone3-enosys",
		     syscall(SYS_clone3, &args, sizeof(args)) < 0 && errno == ENOSYS);
	}
	STEP(out, "pthread_create", !(errno = pthread_create(&th, NULL, thread_main, &ran)));
	STEP(out, "pthread_join", !(errno = pthread_join(th, &ret)) && ret == (void *)42 && ran);
	STEP(out, "prctl-set-name", !prctl(PR_SET_NAME, "hc-test", 0, 0, 0));
	say(out, "done\n");
}

static const char server_steps[] =
	"socket-inet\nconnect\naccept\nsend-recv\nsocket-unix\nsocketpair\npipe2\neventfd\n"
	"clone3-enosys\npthread_create\npthread_join\nprctl-set-name\ndone\n";

static void expect_server_allowed(enum how how)
{
	expect_allowed(HC_SANDBOX_SERVER, how, server_allowed, server_steps, "");
}

static void test_server_allowed(void **state)
{
	(void)state;
	expect_server_allowed(INSTALL);
}

/* ---- root: entering the sandbox as nobody ---- */

/* A line of /proc/PID/status, its value up to the newline. */
static void status_field(pid_t pid, const char *name, char *val, size_t len)
{
	char path[64], buf[8192], key[64], *p, *nl;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	snprintf(key, sizeof(key), "\n%s:\t", name);
	p = strstr(buf, key);
	if (!p)
		fail_msg("no %s line in %s", name, path);
	p += strlen(key);
	nl = strchr(p, '\n');
	assert_non_null(nl);
	/* The kernel ends some lines with a space (Groups always does). */
	while (nl > p && nl[-1] == ' ')
		nl--;
	snprintf(val, len, "%.*s", (int)(nl - p), p);
}

static void expect_status(pid_t pid, const char *name, const char *want)
{
	char got[256];

	status_field(pid, name, got, sizeof(got));
	if (strcmp(got, want))
		fail_msg("process %d: %s is '%s', want '%s'", (int)pid, name, got, want);
}

static ssize_t read_wait(int fd, void *buf, size_t len, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	if (poll(&p, 1, ms) != 1)
		return -1;
	return read(fd, buf, len);
}

/*
 * hc_sandbox__enter from a process that is not root: nothing to become, but every capability
 * is dropped, NoNewPrivs set and the filter installed. As root the child first becomes nobody
 * keeping its permitted capabilities (PR_SET_KEEPCAPS), so that there is something to drop;
 * otherwise it is us. Checked from outside: the child can no longer ask (capget, prctl).
 */
static void enter_unprivileged(enum hc_sandbox which)
{
	int infop[2], hold[2], e = 1, status;
	uint32_t prm_before = 0;
	char why[256] = "", want[64];
	uid_t uid = geteuid() == 0 ? NOBODY : getuid();
	gid_t gid = geteuid() == 0 ? NOBODY : getgid();
	pid_t c;

	assert_int_equal(pipe2(infop, O_CLOEXEC), 0);
	assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
	fflush(NULL);
	c = fork();
	assert_true(c >= 0);
	if (c == 0) {
		struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
		struct __user_cap_data_struct data[2];
		char w[256] = "", b;
		uint32_t prm;
		int err;

		close(hold[1]);
		if (geteuid() == 0 &&
		    (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) || setgroups(0, NULL) ||
		     setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY)))
			_exit(2);
		prm = syscall(SYS_capget, &hdr, data) ? UINT32_MAX : data[0].permitted;
		err = hc_sandbox__enter(which, "nobody", getppid(), w, sizeof(w));
		if (write(infop[1], &prm, sizeof(prm)) < 0 ||
		    write(infop[1], &err, sizeof(err)) < 0 || write(infop[1], w, sizeof(w)) < 0)
			_exit(3);
		while (read(hold[0], &b, 1) > 0) /* until the test is done looking */
			;
		_exit(err ? 1 : 0);
	}
	leftover[0] = c;
	close(infop[1]);
	close(hold[0]);
	assert_int_equal(read_wait(infop[0], &prm_before, sizeof(prm_before), CHILD_WAIT_MS),
			 (ssize_t)sizeof(prm_before));
	assert_int_equal(read_wait(infop[0], &e, sizeof(e), CHILD_WAIT_MS), (ssize_t)sizeof(e));
	assert_int_equal(read_wait(infop[0], why, sizeof(why), CHILD_WAIT_MS),
			 (ssize_t)sizeof(why));
	if (e)
		fail_msg("hc_sandbox__enter: %s (%s)", why, strerror(-e));
	/* The premise, as root: there were capabilities to drop. */
	if (geteuid() == 0 && !(prm_before & (1u << CAP_SETUID)))
		fail_msg("the child kept no capability through setresuid (%#x)", prm_before);

	snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", uid, uid, uid, uid);
	expect_status(c, "Uid", want);
	snprintf(want, sizeof(want), "%u\t%u\t%u\t%u", gid, gid, gid, gid);
	expect_status(c, "Gid", want);
	expect_status(c, "CapInh", "0000000000000000");
	expect_status(c, "CapPrm", "0000000000000000");
	expect_status(c, "CapEff", "0000000000000000");
	expect_status(c, "CapAmb", "0000000000000000");
	expect_status(c, "NoNewPrivs", "1");
	expect_status(c, "Seccomp", "2");
	close(hold[1]);
	status = wait_for(c, CHILD_WAIT_MS);
	leftover[0] = 0;
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(infop[0]);
}

static void test_enter_unprivileged(void **state)
{
	(void)state;
	enter_unprivileged(HC_SANDBOX_WORKER);
	enter_unprivileged(HC_SANDBOX_SERVER);
}

/*
 * We fork P (the privileged process's stand-in), P forks C, C enters the sandbox (either
 * profile) as nobody naming P as its parent. From outside (C can no longer call capget or
 * prctl), C's credentials, capabilities, NoNewPrivs and seccomp mode; then P is SIGKILLed
 * and C must die of SIGKILL: the parent-death signal was armed, and after the change of
 * credentials that would have cleared it. We are a subreaper, so C becomes ours to wait for.
 */
static void enter_nobody(enum hc_sandbox which)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	int pidp[2], infop[2], hold[2], status, err = 1;
	char why[256] = "", u[64];
	pid_t p, c;

	assert_int_equal(pipe2(pidp, O_CLOEXEC), 0);
	assert_int_equal(pipe2(infop, O_CLOEXEC), 0);
	assert_int_equal(pipe2(hold, O_CLOEXEC), 0);
	fflush(NULL);
	p = fork();
	assert_true(p >= 0);
	if (p == 0) {
		char b;

		/* Only the test holds the write end: its close (or death) ends us both. */
		close(hold[1]);
		c = fork();
		if (c == 0) {
			static const gid_t extra[] = {4242, 4243};
			char w[256] = "";
			int e;

			/* Groups to be cleared (root here has none of its own). */
			if (setgroups(2, extra))
				_exit(2);
			e = hc_sandbox__enter(which, "nobody", getppid(), w, sizeof(w));

			if (write(infop[1], &e, sizeof(e)) < 0 || write(infop[1], w, sizeof(w)) < 0)
				_exit(2);
			if (e)
				_exit(1);
			while (read(hold[0], &b, 1) > 0) /* until the test ends */
				;
			_exit(0);
		}
		if (write(pidp[1], &c, sizeof(c)) < 0)
			_exit(2);
		while (read(hold[0], &b, 1) > 0)
			;
		_exit(0);
	}
	leftover[0] = p;
	close(pidp[1]);
	close(infop[1]);
	close(hold[0]);
	assert_int_equal(read_wait(pidp[0], &c, sizeof(c), CHILD_WAIT_MS), (ssize_t)sizeof(c));
	leftover[1] = c;
	assert_int_equal(read_wait(infop[0], &err, sizeof(err), CHILD_WAIT_MS),
			 (ssize_t)sizeof(err));
	assert_int_equal(read_wait(infop[0], why, sizeof(why), CHILD_WAIT_MS),
			 (ssize_t)sizeof(why));
	if (err)
		fail_msg("hc_sandbox__enter: %s (%s)", why, strerror(-err));

	snprintf(u, sizeof(u), "%u\t%u\t%u\t%u", NOBODY, NOBODY, NOBODY, NOBODY);
	expect_status(c, "Uid", u); /* real, effective, saved, filesystem */
	expect_status(c, "Gid", u);
	expect_status(c, "Groups", "");
	expect_status(c, "CapInh", "0000000000000000");
	expect_status(c, "CapPrm", "0000000000000000");
	expect_status(c, "CapEff", "0000000000000000");
	expect_status(c, "CapBnd", "0000000000000000");
	expect_status(c, "CapAmb", "0000000000000000");
	expect_status(c, "NoNewPrivs", "1");
	expect_status(c, "Seccomp", "2");
	hdr.pid = c;
	assert_int_equal(syscall(SYS_capget, &hdr, data), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(data[i].effective, 0);
		assert_int_equal(data[i].permitted, 0);
		assert_int_equal(data[i].inheritable, 0);
	}

	assert_int_equal(kill(p, SIGKILL), 0);
	assert_int_equal(waitpid(p, &status, 0), p);
	leftover[0] = 0;
	status = wait_for(c, 5000);
	leftover[1] = 0;
	if (status == -1)
		fail_msg("the sandboxed child outlived its parent: PR_SET_PDEATHSIG not armed");
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	close(hold[1]);
	close(pidp[0]);
	close(infop[0]);
}

static void test_enter_nobody(void **state)
{
	(void)state;
	enter_nobody(HC_SANDBOX_WORKER);
	enter_nobody(HC_SANDBOX_SERVER);
}

/* The premise of enter's order: a change of credentials clears the parent-death signal. */
static void test_pdeathsig_cleared_by_drop(void **state)
{
	struct outcome o;
	int outp[2];
	pid_t pid;

	(void)state;
	memset(&o, 0, sizeof(o));
	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char why[256] = "";
		int sig = -1;

		close(outp[0]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || prctl(PR_GET_PDEATHSIG, &sig))
			_exit(2);
		say(outp[1], "before %d\n", sig);
		if (hc_privdrop("nobody", why, sizeof(why)))
			_exit(3);
		sig = -1;
		if (prctl(PR_GET_PDEATHSIG, &sig))
			_exit(4);
		say(outp[1], "after %d\n", sig);
		_exit(0);
	}
	close(outp[1]);
	o.status = wait_for(pid, CHILD_WAIT_MS);
	drain(outp[0], o.out, sizeof(o.out));
	close(outp[0]);
	assert_true(WIFEXITED(o.status) && WEXITSTATUS(o.status) == 0);
	snprintf(o.err, sizeof(o.err), "before %d\nafter 0\n", SIGKILL);
	assert_string_equal(o.out, o.err);
}

/* hc_privdrop alone (no seccomp yet), checked from inside with capget and prctl, and no way
 * back to root. */
static void privdrop_checks(int out)
{
	static const gid_t extra[] = {4242}; /* to be cleared: root here has no groups */
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2];
	uid_t r, e, s;
	gid_t gr, ge, gs;
	char why[256] = "";

	STEP(out, "setgroups-before", !setgroups(1, extra) && getgroups(0, NULL) == 1);
	STEP(out, "privdrop", !hc_privdrop("nobody", why, sizeof(why)));
	STEP(out, "uid", !getresuid(&r, &e, &s) && r == NOBODY && e == NOBODY && s == NOBODY);
	STEP(out, "gid", !getresgid(&gr, &ge, &gs) && gr == NOBODY && ge == NOBODY && gs == NOBODY);
	STEP(out, "groups", getgroups(0, NULL) == 0);
	STEP(out, "capget",
	     !syscall(SYS_capget, &hdr, data) && !data[0].effective && !data[0].permitted &&
		     !data[0].inheritable && !data[1].effective && !data[1].permitted &&
		     !data[1].inheritable);
	{
		bool none = true;

		for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
			none = none && prctl(PR_CAPBSET_READ, cap, 0, 0, 0) == 0 &&
			       prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 0;
		STEP(out, "bounding-ambient", none);
	}
	STEP(out, "no-new-privs", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1);
	STEP(out, "setuid0", setuid(0) < 0 && errno == EPERM);
	STEP(out, "seteuid0", setresuid((uid_t)-1, 0, (uid_t)-1) < 0 && errno == EPERM);
	STEP(out, "setgid0", setgid(0) < 0 && errno == EPERM);
	STEP(out, "setgroups", setgroups(0, NULL) < 0 && errno == EPERM);
	data[0].effective = data[0].permitted = 1u << CAP_SETUID;
	STEP(out, "capset", syscall(SYS_capset, &hdr, data) < 0 && errno == EPERM);
	say(out, "done\n");
}

static void test_privdrop_nobody(void **state)
{
	static const char steps[] = "setgroups-before\nprivdrop\nuid\ngid\ngroups\ncapget\n"
				    "bounding-ambient\nno-new-privs\nsetuid0\nseteuid0\nsetgid0\n"
				    "setgroups\ncapset\ndone\n";
	struct outcome o;
	int outp[2];
	pid_t pid;

	(void)state;
	memset(&o, 0, sizeof(o));
	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(outp[0]);
		privdrop_checks(outp[1]);
		_exit(0);
	}
	close(outp[1]);
	o.status = wait_for(pid, CHILD_WAIT_MS);
	drain(outp[0], o.out, sizeof(o.out));
	close(outp[0]);
	if (!WIFEXITED(o.status) || WEXITSTATUS(o.status) || strcmp(o.out, steps))
		fail_msg("status %#x, out:\n%s", o.status, o.out);
}

/* After enter, setuid(0) is not even attempted: the allow-list stops it. */
static void test_enter_then_setuid(void **state)
{
	(void)state;
	expect_trapped(HC_SANDBOX_WORKER, ENTER_NOBODY, do_setuid0, SYS_setuid,
		       "setuid(0) after enter");
	expect_trapped(HC_SANDBOX_SERVER, ENTER_NOBODY, do_setuid0, SYS_setuid,
		       "setuid(0) after enter (server)");
	/* And the rest holds after enter as after install. */
	expect_trapped(HC_SANDBOX_WORKER, ENTER_NOBODY, do_open_wronly_creat, SYS_openat,
		       "open(O_WRONLY|O_CREAT) after enter");
	expect_allowed(HC_SANDBOX_WORKER, ENTER_NOBODY, worker_allowed, worker_steps,
		       "to stderr\n");
	expect_server_allowed(ENTER_NOBODY);
}

/* enter's refusals: a parent that is not ours, users that are no good. */
static void enter_result(const char *user, bool wrong_parent, int *err, char *why, size_t len)
{
	int outp[2], status;
	pid_t pid;

	assert_int_equal(pipe2(outp, O_CLOEXEC), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char w[256] = "";
		/* Ourselves: never our own parent. */
		pid_t parent = wrong_parent ? getpid() : getppid();
		int e = hc_sandbox__enter(HC_SANDBOX_WORKER, user, parent, w, sizeof(w));

		if (write(outp[1], &e, sizeof(e)) < 0 || write(outp[1], w, sizeof(w)) < 0)
			_exit(2);
		_exit(0);
	}
	close(outp[1]);
	status = wait_for(pid, CHILD_WAIT_MS);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(read(outp[0], err, sizeof(*err)), (ssize_t)sizeof(*err));
	assert_true(len >= 256);
	assert_int_equal(read(outp[0], why, 256), 256);
	close(outp[0]);
}

static void test_enter_refusals(void **state)
{
	char why[256];
	int err;

	(void)state;
	enter_result("nobody", true, &err, why, sizeof(why));
	assert_int_equal(err, -ESRCH);
	assert_string_equal(why, "the privileged process is gone");
	enter_result("hc-no-such-user-4242", false, &err, why, sizeof(why));
	assert_int_equal(err, -ENOENT);
	assert_non_null(strstr(why, "hc-no-such-user-4242"));
	enter_result("root", false, &err, why, sizeof(why));
	assert_int_equal(err, -EINVAL);
	assert_non_null(strstr(why, "root"));
}

/* ---- setup ---- */

/* A test that failed half-way may leave its children (and, as subreaper, grandchildren). */
static int kill_leftovers(void **state)
{
	(void)state;
	for (int i = 0; i < 2; i++) {
		if (leftover[i] > 0) {
			kill(leftover[i], SIGKILL);
			waitpid(leftover[i], NULL, 0);
		}
		leftover[i] = 0;
	}
	return 0;
}

static int group_setup(void **state)
{
	socklen_t len = sizeof(listen_addr);
	int fd;

	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/hc-privsep-sandbox-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	/* Readable by nobody too (the -root group's children). */
	if (chmod(tmp, 0755))
		return -1;
	snprintf(existing, sizeof(existing), "%s/existing", tmp);
	snprintf(fresh, sizeof(fresh), "%s/fresh", tmp);
	fd = open(existing, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || write(fd, "original\n", 9) != 9)
		return -1;
	close(fd);
	pre_fd = open(existing, O_RDONLY | O_CLOEXEC);
	pre_exec_fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
	pre_listen = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (pre_fd < 0 || pre_exec_fd < 0 || pre_listen < 0 || hc_broker__socketpair(pre_pair))
		return -1;
	listen_addr = (struct sockaddr_in){.sin_family = AF_INET,
					   .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(pre_listen, (struct sockaddr *)&listen_addr, sizeof(listen_addr)) ||
	    listen(pre_listen, 4) || getsockname(pre_listen, (struct sockaddr *)&listen_addr, &len))
		return -1;
	/* A child's refused call must not take us along through a shared signal. */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	close(pre_fd);
	close(pre_exec_fd);
	close(pre_listen);
	close(pre_pair[0]);
	close(pre_pair[1]);
	unlink(fresh);
	unlink(existing);
	return rmdir(tmp);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest sandbox[] = {
		cmocka_unit_test(test_worker_forbidden),
		cmocka_unit_test(test_worker_allowed),
		cmocka_unit_test(test_server_forbidden),
		cmocka_unit_test(test_server_allowed),
		cmocka_unit_test_teardown(test_enter_unprivileged, kill_leftovers),
	};
	const struct CMUnitTest sandbox_root[] = {
		cmocka_unit_test_teardown(test_enter_nobody, kill_leftovers),
		cmocka_unit_test(test_pdeathsig_cleared_by_drop),
		cmocka_unit_test(test_privdrop_nobody),
		cmocka_unit_test(test_enter_then_setuid),
		cmocka_unit_test(test_enter_refusals),
	};
	const char *group = argc > 1 ? argv[1] : "sandbox";

	if (!strcmp(group, "sandbox"))
		return cmocka_run_group_tests_name("sandbox", sandbox, group_setup, group_teardown);
	if (!strcmp(group, "sandbox-root")) {
		privsep_require_root(group, "becoming nobody");
		if (!getpwnam("nobody")) {
			fprintf(stderr, "FAIL: no user nobody to drop to\n");
			return 1;
		}
		/* Orphans of ours (the sandboxed grandchild whose parent we kill) come to us. */
		if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) {
			fprintf(stderr, "FAIL: PR_SET_CHILD_SUBREAPER: %s\n", strerror(errno));
			return 1;
		}
		return cmocka_run_group_tests_name("sandbox-root", sandbox_root, group_setup,
						   group_teardown);
	}
	fprintf(stderr, "unknown group %s (sandbox, sandbox-root)\n", group);
	return 2;
}
