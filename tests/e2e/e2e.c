// SPDX-License-Identifier: GPL-2.0-only
#include "e2e.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void e2e_require_root(void)
{
	const char *ci = getenv("CI");

	if (geteuid() == 0)
		return;
	if (ci && !strcmp(ci, "true")) {
		fprintf(stderr,
			"FAIL: this test needs root for BPF, and CI=true forbids skipping\n");
		exit(1);
	}
	fprintf(stderr, "SKIP: needs root (BPF programs and perf events); run as root\n");
	exit(77);
}

const char *e2e_env(const char *name)
{
	const char *v = getenv(name);

	if (!v || !*v) {
		fprintf(stderr,
			"FAIL: environment variable %s is not set (run through meson test)\n",
			name);
		exit(1);
	}
	return v;
}

pid_t e2e_spawn(char *const argv[], int *out_fd, const char *stderr_path)
{
	int p[2] = {-1, -1};
	pid_t pid;

	if (out_fd && pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		if (out_fd)
			dup2(p[1], 1);
		if (stderr_path) {
			int fd = open(stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

			if (fd >= 0)
				dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (out_fd) {
		close(p[1]);
		*out_fd = p[0];
	}
	return pid;
}

int e2e_wait(pid_t pid, int timeout_ms)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	int status;

	for (int waited = 0; waited <= timeout_ms; waited += 10) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid) {
			if (WIFEXITED(status))
				return WEXITSTATUS(status);
			return 128 + WTERMSIG(status);
		}
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

pid_t e2e_read_pid(int fd)
{
	char buf[32];
	ssize_t n = 0, r;

	while (n < (ssize_t)sizeof(buf) - 1) {
		r = read(fd, buf + n, 1);
		if (r <= 0 || buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return (pid_t)atoi(buf);
}

int e2e_run(char *const argv[], const char *stderr_path, int timeout_ms)
{
	pid_t pid = e2e_spawn(argv, NULL, stderr_path);

	if (pid < 0)
		return -1;
	return e2e_wait(pid, timeout_ms);
}

json_t *e2e_load_json(const char *path)
{
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);

	if (!j)
		fprintf(stderr, "cannot parse %s: %s (line %d)\n", path, err.text, err.line);
	return j;
}

static const char *str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static uint64_t sum_frames(json_t *node, const char *name)
{
	json_t *children = json_object_get(node, "children"), *c;
	const char *kind = str(node, "kind");
	size_t i;
	uint64_t sum = 0;

	if (kind && (!strcmp(kind, "user") || !strcmp(kind, "kernel")) &&
	    !strcmp(str(node, "name"), name))
		/* Inclusive value: count the outermost occurrence only. */
		return (uint64_t)json_integer_value(json_object_get(node, "on_cpu_ns"));
	json_array_foreach (children, i, c)
		sum += sum_frames(c, name);
	return sum;
}

json_t *e2e_process_node(json_t *root, uint32_t pid)
{
	json_t *fg = json_object_get(root, "flamegraph"), *c;
	size_t i;

	json_array_foreach (json_object_get(fg, "children"), i, c)
		if ((uint32_t)json_integer_value(json_object_get(c, "pid")) == pid)
			return c;
	return NULL;
}

uint64_t e2e_sum_frames(json_t *root, uint32_t pid, const char *comm, const char *name)
{
	json_t *fg = json_object_get(root, "flamegraph"), *c;
	uint64_t sum = 0;
	size_t i;

	json_array_foreach (json_object_get(fg, "children"), i, c) {
		if (pid && (uint32_t)json_integer_value(json_object_get(c, "pid")) != pid)
			continue;
		if (!pid && comm && strcmp(str(c, "name"), comm))
			continue;
		sum += sum_frames(c, name);
	}
	return sum;
}

static bool chain_from(json_t *node, const char *const chain[], int n)
{
	json_t *c;
	size_t i;

	if (strcmp(str(node, "name"), chain[0]))
		return false;
	if (n == 1)
		return true;
	json_array_foreach (json_object_get(node, "children"), i, c)
		if (chain_from(c, chain + 1, n - 1))
			return true;
	return false;
}

static bool chain_any(json_t *node, const char *const chain[], int n)
{
	json_t *c;
	size_t i;

	if (chain_from(node, chain, n))
		return true;
	json_array_foreach (json_object_get(node, "children"), i, c)
		if (chain_any(c, chain, n))
			return true;
	return false;
}

bool e2e_has_chain(json_t *root, uint32_t pid, const char *const chain[], int n)
{
	json_t *p = e2e_process_node(root, pid);

	return p && chain_any(p, chain, n);
}

uint64_t e2e_u64(json_t *obj, const char *path)
{
	char buf[256], *save = NULL, *tok;

	snprintf(buf, sizeof(buf), "%s", path);
	for (tok = strtok_r(buf, ".", &save); tok && obj; tok = strtok_r(NULL, ".", &save))
		obj = json_object_get(obj, tok);
	return obj ? (uint64_t)json_integer_value(obj) : UINT64_MAX;
}

char *e2e_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n + 65536 > cap) {
			cap = cap ? cap * 2 : 131072;
			buf = realloc(buf, cap + 1);
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0);
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

bool e2e_wait_text(const char *path, const char *text, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 10) {
		char *s = e2e_read_file(path, NULL);
		bool found = s && strstr(s, text);

		free(s);
		if (found)
			return true;
		usleep(10000);
	}
	return false;
}

int e2e_list_dir(const char *d, const char *skip, char *list, size_t len)
{
	DIR *dp = opendir(d);
	struct dirent *e;
	size_t used = 0;
	int n = 0;

	if (!dp)
		return -1;
	list[0] = '\0';
	while ((e = readdir(dp))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
		    (skip && !strcmp(e->d_name, skip)))
			continue;
		n++;
		used += (size_t)snprintf(list + used, len - used, "%s%s", used ? " " : "",
					 e->d_name);
		if (used >= len)
			used = len - 1;
	}
	closedir(dp);
	return n;
}

char *e2e_status_value(pid_t pid, const char *key)
{
	char path[64], *text, *p, *end;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	text = e2e_read_file(path, NULL);
	if (!text)
		return NULL;
	p = strstr(text, key);
	if (!p) {
		free(text);
		return NULL;
	}
	p += strlen(key);
	while (*p == ':' || *p == '\t' || *p == ' ')
		p++;
	end = strchr(p, '\n');
	if (end)
		*end = 0;
	p = strdup(p);
	free(text);
	return p;
}

int e2e_record_pid(char *const wargv[], unsigned int settle_ms, char *const argv[],
		   const char *stderr_path, pid_t *pid)
{
	char *full[64], pidarg[16];
	int fd, rc, n = 0;
	pid_t w;

	*pid = 0;
	w = e2e_spawn(wargv, &fd, NULL);
	if (w < 0)
		return -1;
	*pid = e2e_read_pid(fd);
	close(fd);
	if (*pid <= 0) {
		kill(w, SIGKILL);
		e2e_wait(w, 5000);
		return -1;
	}
	if (settle_ms)
		usleep(settle_ms * 1000);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)*pid);
	for (; argv[n] && n < 61; n++)
		full[n] = argv[n];
	full[n++] = "-p";
	full[n++] = pidarg;
	full[n] = NULL;
	rc = e2e_run(full, stderr_path, 60000);
	kill(w, SIGKILL);
	e2e_wait(w, 5000);
	if (rc) {
		char *err = e2e_read_file(stderr_path, NULL);

		fprintf(stderr, "record exited %d: %s\n", rc, err ? err : "");
		free(err);
	}
	return rc;
}

void e2e_remove_tmpdir(const char *dir)
{
	char cmd[700];

	if (!dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not remove %s\n", dir);
}

char *e2e_tmpdir(void)
{
	char *d = strdup("/tmp/hotcold-e2e.XXXXXX");

	return mkdtemp(d);
}

/* One HTTP/1.1 request over loopback TCP, Connection: close. */
int e2e_http(const char *addr, const char *method, const char *path, const char *host, char **body,
	     size_t *body_len)
{
	char req[4096], *resp = NULL, *sep;
	size_t len = 0, cap = 0;
	struct sockaddr_in sa = {.sin_family = AF_INET};
	const char *colon = strrchr(addr, ':');
	struct timeval tv = {.tv_sec = 20};
	int fd, status = -1, n;

	if (body)
		*body = NULL;
	if (!colon)
		return -1;
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	n = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
		     method, path, host ? host : addr);
	if (n < 0 || (size_t)n >= sizeof(req) || write(fd, req, (size_t)n) != n) {
		close(fd);
		return -1;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < 65536) {
			char *p = realloc(resp, cap + 1024 * 1024);

			if (!p)
				break;
			resp = p;
			cap += 1024 * 1024;
		}
		r = read(fd, resp + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (!resp)
		return -1;
	resp[len] = 0;
	if (sscanf(resp, "HTTP/1.%*d %d", &status) != 1)
		status = -1;
	sep = strstr(resp, "\r\n\r\n");
	if (body && sep) {
		size_t hl = (size_t)(sep + 4 - resp);

		memmove(resp, sep + 4, len - hl + 1);
		*body = resp;
		if (body_len)
			*body_len = len - hl;
		resp = NULL;
	}
	free(resp);
	return status;
}

json_t *e2e_find_node(json_t *n, const char *kind, const char *key, json_int_t id)
{
	json_t *c, *f;
	size_t i;

	if (!strcmp(json_string_value(json_object_get(n, "kind")), kind) &&
	    json_integer_value(json_object_get(n, key)) == id)
		return n;
	json_array_foreach (json_object_get(n, "children"), i, c) {
		f = e2e_find_node(c, kind, key, id);
		if (f)
			return f;
	}
	return NULL;
}

uint64_t e2e_field(json_t *n, const char *name)
{
	return (uint64_t)json_integer_value(json_object_get(n, name));
}

uint64_t e2e_sum_named(json_t *n, const char *kind, const char *name, const char *what)
{
	json_t *c;
	size_t i;
	uint64_t v = 0;

	if (!strcmp(json_string_value(json_object_get(n, "kind")), kind) &&
	    !strcmp(json_string_value(json_object_get(n, "name")), name))
		return e2e_field(n, what);
	json_array_foreach (json_object_get(n, "children"), i, c)
		v += e2e_sum_named(c, kind, name, what);
	return v;
}

int e2e_go_pprof_raw(const char *src, const char *scratch_dir, struct e2e_go_raw *r)
{
	char cmd[2048], line[8192];
	bool in_samples = false;
	FILE *p;
	int rc;

	memset(r, 0, sizeof(*r));
	if (system("command -v go >/dev/null 2>&1") != 0)
		return -ENOENT;
	snprintf(cmd, sizeof(cmd),
		 "HOME='%s' GOCACHE='%s/gocache' GOPATH='%s/gopath' PPROF_TMPDIR='%s' "
		 "GOTOOLCHAIN=local GOPROXY=off go tool pprof -raw '%s' 2>&1",
		 scratch_dir, scratch_dir, scratch_dir, scratch_dir, src);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof(line), p)) {
		char *s = line, *colon;
		int k = 0;

		if (!strncmp(line, "Samples:", 8)) {
			in_samples = true;
			if (!fgets(line, sizeof(line), p))
				break;
			/* "samples/count cpu/nanoseconds[dflt] ...": the default one is marked */
			for (char *tok = strtok(line, " \t\n"); tok && r->n_types < 8;
			     tok = strtok(NULL, " \t\n")) {
				char *mark = strstr(tok, "[dflt]");

				if (mark)
					*mark = '\0';
				snprintf(r->types[r->n_types++], sizeof(r->types[0]), "%s", tok);
			}
			continue;
		}
		if (!strncmp(line, "Locations", 9))
			in_samples = false;
		if (!in_samples)
			continue;
		/* "   v1 v2 ...: loc loc ..."; label lines do not start with a number */
		while (*s == ' ')
			s++;
		colon = strchr(s, ':');
		if (!colon || *s < '0' || *s > '9')
			continue;
		*colon = '\0';
		for (char *tok = strtok(s, " "); tok && k < r->n_types; tok = strtok(NULL, " "))
			r->totals[k++] += strtoll(tok, NULL, 10);
		if (k == r->n_types)
			r->samples++;
	}
	rc = pclose(p);
	if (rc != 0)
		return WIFEXITED(rc) && WEXITSTATUS(rc) ? WEXITSTATUS(rc) : 1;
	return r->n_types ? 0 : 1;
}

int64_t e2e_go_total(const struct e2e_go_raw *r, const char *type)
{
	for (int i = 0; i < r->n_types; i++)
		if (!strcmp(r->types[i], type))
			return r->totals[i];
	return -1;
}
