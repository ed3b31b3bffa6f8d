/* SPDX-License-Identifier: GPL-2.0-only */
/* Helpers shared by the end-to-end tests: run hotcold and workloads, walk profiles. */
#ifndef HOTCOLD_E2E_H
#define HOTCOLD_E2E_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

/* Exit 77 (skip) with a reason unless root; under CI=true a skip is a failure (exit 1). */
void e2e_require_root(void);
const char *e2e_env(const char *name); /* aborts when unset */

/* Start argv[0] with stdout to a pipe; returns pid, *out_fd the read end. */
pid_t e2e_spawn(char *const argv[], int *out_fd, const char *stderr_path);
/* Wait up to timeout_ms; returns the exit status (0-255), 128+sig when killed, -1 on
 * timeout (the child is then killed). */
int e2e_wait(pid_t pid, int timeout_ms);
/* Read the workload's first line (its pid). */
pid_t e2e_read_pid(int fd);
/* Run to completion; returns exit status as e2e_wait. */
int e2e_run(char *const argv[], const char *stderr_path, int timeout_ms);

json_t *e2e_load_json(const char *path);
/* Sum of on_cpu_ns over nodes named `name` (kind user/kernel) under the process `pid`
 * (pid 0: any process whose name is `comm`, or any when comm is NULL). */
uint64_t e2e_sum_frames(json_t *root, uint32_t pid, const char *comm, const char *name);
/* True when a chain a -> b -> c (consecutive frames) exists under pid. */
bool e2e_has_chain(json_t *root, uint32_t pid, const char *const chain[], int n);
json_t *e2e_process_node(json_t *root, uint32_t pid);
uint64_t e2e_u64(json_t *obj, const char *path); /* "a.b.c" */
char *e2e_read_file(const char *path, size_t *len);
/* Whether the file comes to hold text within timeout_ms (polled every 10 ms). */
bool e2e_wait_text(const char *path, const char *text, int timeout_ms);
/* The first node (depth first) of kind whose integer member key is id, or NULL. */
json_t *e2e_find_node(json_t *n, const char *kind, const char *key, json_int_t id);
/* An integer member of a node (0 if absent). */
uint64_t e2e_field(json_t *n, const char *name);
/* Member `what` summed over the outermost nodes of kind named name under n (inclusive values:
 * nested ones are not counted twice). */
uint64_t e2e_sum_named(json_t *n, const char *kind, const char *name, const char *what);
char *e2e_tmpdir(void);
/*
 * Start the workload wargv (it prints its pid first), wait settle_ms, run `argv -p PID`
 * (argv: hotcold record and its options, NULL-ended) and kill the workload. The workload's
 * pid in *pid; record's exit status (its stderr printed when not 0), -1 if none ran.
 */
int e2e_record_pid(char *const wargv[], unsigned int settle_ms, char *const argv[],
		   const char *stderr_path, pid_t *pid);
/* rm -rf a directory e2e_tmpdir() made (a warning on stderr when it cannot). */
void e2e_remove_tmpdir(const char *dir);
/* Entries of directory d but skip (hidden ones included), names joined by ' ' into list;
 * how many, or -1 when d cannot be opened. */
int e2e_list_dir(const char *d, const char *skip, char *list, size_t len);
/* The value of /proc/PID/status's line "key:", malloc'd; NULL if none. */
char *e2e_status_value(pid_t pid, const char *key);
/* One HTTP/1.1 request to addr ("127.0.0.1:PORT") with Host: host (NULL: addr). Returns the
 * status (-1 on a transport failure); *body gets the malloc'd body (NUL-ended) when asked. */
int e2e_http(const char *addr, const char *method, const char *path, const char *host, char **body,
	     size_t *body_len);

/* What `go tool pprof -raw SRC` (SRC a file or URL) printed: its sample types (the default
 * one's "[dflt]" mark removed) and the sum of each over the samples. */
struct e2e_go_raw {
	char types[8][48];
	int n_types;
	int64_t totals[8];
	size_t samples;
};

/* Runs the real pprof with HOME and Go's caches in scratch_dir and no network toolchain.
 * 0; -ENOENT when go is not installed; the command's exit status (> 0) when it failed. */
int e2e_go_pprof_raw(const char *src, const char *scratch_dir, struct e2e_go_raw *r);
/* The total of sample type "TYPE/UNIT", or -1. */
int64_t e2e_go_total(const struct e2e_go_raw *r, const char *type);

#endif
