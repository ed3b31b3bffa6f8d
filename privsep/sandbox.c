// SPDX-License-Identifier: GPL-2.0-only
#include "privsep/sandbox.h"
#include "privsep/privdrop.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <termios.h>
#include <unistd.h>

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define HC_ASAN 1
#endif

/* Calls any part may make: memory, time, signals, descriptors it holds, reading files. */
static const int common_calls[] = {
	SCMP_SYS(read),
	SCMP_SYS(readv),
	SCMP_SYS(pread64),
	SCMP_SYS(write),
	SCMP_SYS(writev),
	SCMP_SYS(pwrite64),
	SCMP_SYS(lseek),
	SCMP_SYS(close),
	SCMP_SYS(fstat),
	SCMP_SYS(newfstatat),
	SCMP_SYS(statx),
	SCMP_SYS(stat),
	SCMP_SYS(lstat),
	SCMP_SYS(access),
	SCMP_SYS(faccessat),
	SCMP_SYS(faccessat2),
	SCMP_SYS(readlink),
	SCMP_SYS(readlinkat),
	SCMP_SYS(getdents64),
	SCMP_SYS(fcntl),
	SCMP_SYS(dup),
	SCMP_SYS(fsync),
	SCMP_SYS(fdatasync),
	SCMP_SYS(munmap),
	SCMP_SYS(mremap),
	SCMP_SYS(brk),
	SCMP_SYS(madvise),
	SCMP_SYS(futex),
	SCMP_SYS(set_robust_list),
	SCMP_SYS(rseq),
	SCMP_SYS(restart_syscall),
	SCMP_SYS(exit),
	SCMP_SYS(exit_group),
	SCMP_SYS(rt_sigaction),
	SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigreturn),
	SCMP_SYS(sigaltstack),
	SCMP_SYS(getpid),
	SCMP_SYS(gettid),
	SCMP_SYS(getppid),
	SCMP_SYS(getuid),
	SCMP_SYS(geteuid),
	SCMP_SYS(getgid),
	SCMP_SYS(getegid),
	SCMP_SYS(clock_gettime),
	SCMP_SYS(clock_getres),
	SCMP_SYS(gettimeofday),
	SCMP_SYS(time),
	SCMP_SYS(clock_nanosleep),
	SCMP_SYS(nanosleep),
	SCMP_SYS(poll),
	SCMP_SYS(ppoll),
	SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait),
	SCMP_SYS(epoll_ctl),
	SCMP_SYS(epoll_create1),
	SCMP_SYS(sched_yield),
	SCMP_SYS(sched_getaffinity),
	SCMP_SYS(getrandom),
	SCMP_SYS(getrusage),
	SCMP_SYS(uname),
	SCMP_SYS(sysinfo),
	SCMP_SYS(sendmsg),
	SCMP_SYS(recvmsg),
	SCMP_SYS(sendto),
	SCMP_SYS(recvfrom),
	SCMP_SYS(shutdown),
	SCMP_SYS(membarrier),
};

/* serve's HTTP process: libmicrohttpd (threads, accept, its inter-thread pipe) and curl. */
static const int server_calls[] = {
	SCMP_SYS(socket),     SCMP_SYS(connect),    SCMP_SYS(accept),	   SCMP_SYS(accept4),
	SCMP_SYS(setsockopt), SCMP_SYS(getsockopt), SCMP_SYS(getsockname), SCMP_SYS(getpeername),
	SCMP_SYS(socketpair), SCMP_SYS(select),	    SCMP_SYS(pselect6),	   SCMP_SYS(eventfd2),
	SCMP_SYS(pipe2),      SCMP_SYS(sendmmsg),   SCMP_SYS(recvmmsg),	   SCMP_SYS(dup2),
	SCMP_SYS(dup3),	      SCMP_SYS(getcwd),
};

/* serve --data-dir's HTTP process: SQLite's file, WAL and -shm, and moving a damaged file to
 * quarantine/. open/openat with any flags (the read-only rule of common_calls is narrower). */
static const int store_calls[] = {
	SCMP_SYS(openat),     SCMP_SYS(open),	  SCMP_SYS(ftruncate), SCMP_SYS(fallocate),
	SCMP_SYS(unlink),     SCMP_SYS(unlinkat), SCMP_SYS(rename),    SCMP_SYS(renameat),
	SCMP_SYS(renameat2),  SCMP_SYS(mkdir),	  SCMP_SYS(mkdirat),   SCMP_SYS(flock),
	SCMP_SYS(fchown),     SCMP_SYS(fchmod),	  SCMP_SYS(getpid),    SCMP_SYS(readlink),
	SCMP_SYS(readlinkat),
};

#ifdef HC_ASAN
/* LeakSanitizer's exit-time check stops the world from a ptrace()ing helper process. Only
 * sanitizer builds (tests) allow these. */
static const int asan_calls[] = {
	SCMP_SYS(clone), SCMP_SYS(ptrace), SCMP_SYS(prctl), SCMP_SYS(wait4), SCMP_SYS(kill),
};
#endif

static int add_all(scmp_filter_ctx ctx, const int *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, calls[i], 0);

		/* A call this architecture does not have (-EFAULT from libseccomp), or one a
		 * narrower rule allows already (-EEXIST). */
		if (err && err != -EFAULT && err != -EEXIST)
			return err;
	}
	return 0;
}

/*
 * One argument comparison, every field named. libseccomp's SCMP_A<n>() macros leave datum_b
 * out for a plain comparison, which clang's -Wmissing-field-initializers refuses under -Werror.
 */
static struct scmp_arg_cmp arg_eq(unsigned int arg, scmp_datum_t value)
{
	return (struct scmp_arg_cmp){.arg = arg, .op = SCMP_CMP_EQ, .datum_a = value, .datum_b = 0};
}

/* (argument & mask) == value */
static struct scmp_arg_cmp arg_masked_eq(unsigned int arg, scmp_datum_t mask, scmp_datum_t value)
{
	return (struct scmp_arg_cmp){
		.arg = arg, .op = SCMP_CMP_MASKED_EQ, .datum_a = mask, .datum_b = value};
}

static int add_rules(scmp_filter_ctx ctx, enum hc_sandbox which)
{
	const unsigned int rdonly_mask = O_ACCMODE | O_CREAT | O_TRUNC | O_APPEND;
	static const unsigned int bpf_cmds[] = {
		BPF_MAP_LOOKUP_ELEM,  BPF_MAP_UPDATE_ELEM,    BPF_MAP_DELETE_ELEM,
		BPF_MAP_GET_NEXT_KEY, BPF_OBJ_GET_INFO_BY_FD, BPF_RAW_TRACEPOINT_OPEN,
		BPF_MAP_LOOKUP_BATCH, BPF_LINK_CREATE,	      BPF_ITER_CREATE,
		BPF_LINK_DETACH,
	};
	static const unsigned long ioctls[] = {
		PERF_EVENT_IOC_ENABLE,
		PERF_EVENT_IOC_DISABLE,
		TCGETS,
	};
	int err;

	err = add_all(ctx, common_calls, sizeof(common_calls) / sizeof(common_calls[0]));
	/* Files read-only: nothing is created, truncated or written by path. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 1,
				       arg_masked_eq(2, rdonly_mask, O_RDONLY));
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(open), 1,
				       arg_masked_eq(1, rdonly_mask, O_RDONLY));
	/* Reading limits, never setting them. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1, arg_eq(2, 0));
	/* abort() and raise() signal this process only. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
				       arg_eq(0, (scmp_datum_t)getpid()));
	for (size_t i = 0; i < sizeof(ioctls) / sizeof(ioctls[0]) && !err; i++)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				       arg_eq(1, ioctls[i]));
	if (err)
		return err;

	if (which == HC_SANDBOX_WORKER) {
		/* No executable memory: parsing never needs to map code. */
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				       arg_masked_eq(2, PROT_EXEC, 0));
		if (!err)
			err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
					       arg_masked_eq(2, PROT_EXEC, 0));
		/* The BPF objects the privileged half loaded: maps, links, iterators. Never
		 * BPF_PROG_LOAD or BPF_MAP_CREATE (refused without CAP_BPF anyway). */
		for (size_t i = 0; i < sizeof(bpf_cmds) / sizeof(bpf_cmds[0]) && !err; i++)
			err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(bpf), 1,
					       arg_eq(0, bpf_cmds[i]));
		return err;
	}
	err = add_all(ctx, server_calls, sizeof(server_calls) / sizeof(server_calls[0]));
	if (!err && which == HC_SANDBOX_SERVER_STORE)
		err = add_all(ctx, store_calls, sizeof(store_calls) / sizeof(store_calls[0]));
	/* Name service modules may be mapped by curl's resolver. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 0);
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 0);
	/* Threads only: clone without CLONE_THREAD would be a new process. clone3's flags sit
	 * in memory seccomp cannot read: ENOSYS makes glibc fall back to clone. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
				       arg_masked_eq(0, CLONE_THREAD, CLONE_THREAD));
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	/* MHD names its threads. */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
				       arg_eq(0, PR_SET_NAME));
	return err;
}

/* SIGSYS from a refused call: say which, exit 70. Async-signal-safe. */
static void on_sigsys(int sig, siginfo_t *si, void *uctx)
{
	static const char head[] = "hotcold: sandbox: system call ";
	static const char tail[] = " refused by the seccomp allow-list (a bug: please report)\n";
	char num[16];
	int n = si->si_syscall, i = (int)sizeof(num);

	(void)sig;
	(void)uctx;
	do {
		num[--i] = (char)('0' + n % 10);
		n /= 10;
	} while (n > 0 && i > 0);
	if (write(STDERR_FILENO, head, sizeof(head) - 1) < 0 ||
	    write(STDERR_FILENO, num + i, sizeof(num) - (size_t)i) < 0 ||
	    write(STDERR_FILENO, tail, sizeof(tail) - 1) < 0) {
		/* nothing else to say it with */
	}
	_exit(70);
}

int hc_sandbox__install(enum hc_sandbox which, char *why, size_t why_len)
{
	struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
	scmp_filter_ctx ctx;
	int err;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL)) {
		err = -errno;
		snprintf(why, why_len, "sigaction(SIGSYS): %s", strerror(-err));
		return err;
	}
	/* TRAP: a refused call is never executed, and SIGSYS cannot be blocked away. */
	ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx) {
		snprintf(why, why_len, "seccomp_init: out of memory");
		return -ENOMEM;
	}
	err = add_rules(ctx, which);
#ifdef HC_ASAN
	if (!err)
		err = add_all(ctx, asan_calls, sizeof(asan_calls) / sizeof(asan_calls[0]));
#endif
	if (err) {
		snprintf(why, why_len, "building the seccomp filter: %s", strerror(-err));
		goto out;
	}
	/* NoNewPrivs is set already (privdrop): no need for libseccomp to set it. */
	err = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	if (!err)
		err = seccomp_load(ctx);
	if (err)
		snprintf(why, why_len, "loading the seccomp filter: %s", strerror(-err));
out:
	seccomp_release(ctx);
	return err;
}

int hc_sandbox__enter(enum hc_sandbox which, const char *user, pid_t parent, char *why,
		      size_t why_len)
{
	int err = hc_privdrop(user, why, why_len);

	if (err)
		return err;
	if (parent > 0) {
		if (prctl(PR_SET_PDEATHSIG, SIGKILL)) {
			err = -errno;
			snprintf(why, why_len, "PR_SET_PDEATHSIG: %s", strerror(-err));
			return err;
		}
		/* Died between fork() and here: the signal was never armed for it. */
		if (getppid() != parent) {
			snprintf(why, why_len, "the privileged process is gone");
			return -ESRCH;
		}
	}
	return hc_sandbox__install(which, why, why_len);
}
