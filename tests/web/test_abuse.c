// SPDX-License-Identifier: GPL-2.0-only
/*
 * Abuse of the real web/server.c on 127.0.0.1 (issue 6): path traversal in every encoding,
 * foreign Host headers (DNS rebinding), oversized URLs and headers, wrong methods, slow clients
 * holding connections, many concurrent clients, and no descriptor left behind by any of it.
 * Each abuse is followed by a normal request that must still be answered. Loops are bounded in
 * count and time; every socket has 5 s timeouts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "client.h"
#include "tests.h"
#include "web/assets.h"
#include "web/server.h"

extern char **environ;

#define STATUS_BODY "{\"version\":\"0.1.0\",\"cpus\":2}"
#define PROFILE_BODY "{\"format\":\"hotcold-profile/1\"}"

/* The fake backend: two routes, counted; the others answer 500 "not available". */
static pthread_mutex_t calls_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned int calls;

static void count_call(void)
{
	pthread_mutex_lock(&calls_lock);
	calls++;
	pthread_mutex_unlock(&calls_lock);
}

static unsigned int calls_get(void)
{
	unsigned int n;

	pthread_mutex_lock(&calls_lock);
	n = calls;
	pthread_mutex_unlock(&calls_lock);
	return n;
}

static json_t *fake_status(void *ctx, int *status, char *why, size_t why_len)
{
	(void)ctx;
	(void)status;
	(void)why;
	(void)why_len;
	count_call();
	return json_pack("{s:s,s:i}", "version", "0.1.0", "cpus", 2);
}

static char *fake_profile(void *ctx, const struct hc_api_query *q, size_t *len, int *status,
			  char *why, size_t why_len)
{
	(void)ctx;
	(void)status;
	(void)why;
	(void)why_len;
	count_call();
	/* pid 7: a backend slower than a short timeout (a large range under load) */
	if (q->has_pid && q->pid == 7)
		usleep(3000 * 1000);
	*len = strlen(PROFILE_BODY);
	return strdup(PROFILE_BODY);
}

static const struct hc_api_backend backend = {
	.status = fake_status,
	.profile = fake_profile,
};

/* Servers -------------------------------------------------------------------------------- */

struct srv {
	struct hc_server *s;
	char addr[HC_LISTEN_ADDR_MAX];
	unsigned short port;
};

/* The group's server, with the defaults `hotcold serve` uses. */
static struct srv main_srv;

/* A server on 127.0.0.1 port 0; `o` gives the limits (its fd and address are filled in). */
static int srv_start(struct srv *v, struct hc_server_opts o)
{
	struct hc_listen l;
	char why[256];

	if (hc_listen__open("127.0.0.1:0", &l, why, sizeof(why))) {
		fprintf(stderr, "listen: %s\n", why);
		return -1;
	}
	snprintf(v->addr, sizeof(v->addr), "%s", l.addr);
	v->port = (unsigned short)atoi(strrchr(l.addr, ':') + 1);
	o.listen_fd = l.fd;
	o.listen_addr = l.addr;
	v->s = hc_server__new(&o, &backend);
	if (!v->s) {
		hc_listen__close(&l);
		return -1;
	}
	return 0;
}

static void srv_stop(struct srv *v)
{
	hc_server__free(v->s);
	v->s = NULL;
}

static int setup(void **state)
{
	(void)state;
	return srv_start(&main_srv, (struct hc_server_opts){0});
}

static int teardown(void **state)
{
	(void)state;
	srv_stop(&main_srv);
	return 0;
}

/* Requests --------------------------------------------------------------------------------- */

static void request(const struct srv *v, const char *method, const char *target, const char *host,
		    const char *extra, struct resp *r)
{
	char *req;
	int n;

	n = asprintf(&req, "%s %s HTTP/1.1\r\n%s%s%sConnection: close\r\n%s\r\n", method, target,
		     host ? "Host: " : "", host ? host : "", host ? "\r\n" : "",
		     extra ? extra : "");
	assert_true(n > 0);
	assert_int_equal(client_request(v->port, req, (size_t)n, r), 0);
	free(req);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * How long a test waits for what must happen before it gives up: a guard against a hang, not
 * a latency bound (a loaded CI machine stalls for seconds). Whether something happened at once
 * is told by order instead: a slow client not yet cut, a 405 rather than a timed-out close.
 */
#define HANG_GUARD_S 30.0

/* The server still answers a normal request (the client's 5 s socket timeouts end a wait
 * for a server that stopped). */
static void expect_alive(const struct srv *v)
{
	double t0 = now_s(), dt;
	struct resp r;

	request(v, "GET", "/api/status", v->addr, NULL, &r);
	dt = now_s() - t0;
	if (r.status != 200 || strcmp(r.body ? r.body : "", STATUS_BODY))
		fail_msg("the server stopped answering: status %d after %.2f s, read error %d:\n%s",
			 r.status, dt, r.read_err, r.raw);
	resp_free(&r);
}

static void expect_json_error(const struct resp *r, int status, const char *what)
{
	json_error_t jerr;
	json_t *doc;

	if (r->status != status)
		fail_msg("%s: want %d, got %d:\n%s", what, status, r->status, r->raw);
	doc = json_loadb(r->body, r->body_len, 0, &jerr);
	if (!doc || !json_is_string(json_object_get(doc, "error")))
		fail_msg("%s: not a JSON error:\n%s", what, r->raw);
	json_decref(doc);
}

/* Open descriptors of this process (the server's included: it runs on our threads). */
static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own */
}

/* Connections close asynchronously on the server's threads: wait for the count to come back
 * to `before`. */
static void expect_fds_back(int before, const char *after_what)
{
	double t_end = now_s() + HANG_GUARD_S;
	int n;

	while ((n = fd_count()) > before && now_s() < t_end)
		usleep(20 * 1000);
	if (n > before)
		fail_msg("after %s: %d descriptors open, %d before", after_what, n, before);
}

/* Path traversal ------------------------------------------------------------------------- */

/*
 * Targets that would escape a directory-backed file server, in every encoding such servers
 * have been fooled by. The viewer's files are compiled in and looked up by exact path, so each
 * must be a 404 JSON error, and no answer may contain a byte of a file outside the table.
 */
static const char *const traversal[] = {
	/* plain */
	"/../etc/passwd",
	"/../../../../../../../../../../../../etc/passwd",
	"/js/../../../../etc/passwd",
	"/./../etc/passwd",
	"/..//..//..//etc/passwd",
	"/....//....//....//etc/passwd",
	"/..././..././etc/passwd",
	"/..;/..;/..;/etc/passwd",
	"/index.html/../../../etc/passwd",
	/* absolute paths */
	"/etc/passwd",
	"//etc/passwd",
	"///etc/passwd",
	"/proc/self/environ",
	"/proc/self/root/etc/passwd",
	"/proc/self/cwd/meson.build",
	/* percent-encoded */
	"/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
	"/%2E%2E%2F%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
	"/..%2f..%2f..%2fetc%2fpasswd",
	"/.%2e/.%2e/.%2e/etc/passwd",
	"/%2fetc%2fpasswd",
	"/%2F%2Fetc%2Fpasswd",
	"/%2e%2e",
	/* double- and triple-encoded */
	"/%252e%252e/%252e%252e/etc/passwd",
	"/%252e%252e%252f%252e%252e%252fetc%252fpasswd",
	"/..%252f..%252f..%252fetc%252fpasswd",
	"/%25252e%25252e%25252fetc%25252fpasswd",
	/* backslashes */
	"/..\\..\\..\\etc\\passwd",
	"/\\..\\..\\etc\\passwd",
	"/..%5c..%5c..%5cetc%5cpasswd",
	"/..%255c..%255c..%255cetc%255cpasswd",
	/* NUL */
	"/index.html%00/../../etc/passwd",
	"/../../etc/passwd%00.html",
	"/../../etc/passwd%00index.html",
	"/%00/etc/passwd",
	/* overlong UTF-8 and other spellings of '.' and '/' */
	"/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd",
	"/%c0%ae%c0%ae%c0%af%c0%ae%c0%ae%c0%afetc%c0%afpasswd",
	"/..%c0%af..%c0%afetc%c0%afpasswd",
	"/..%c1%9c..%c1%9cetc%c1%9cpasswd",
	"/%e0%80%ae%e0%80%ae/etc/passwd",
	"/%f0%80%80%ae%f0%80%80%ae/etc/passwd",
	"/%u002e%u002e/%u002e%u002e/etc/passwd",
	"/%ef%bc%8e%ef%bc%8e/etc/passwd",
	/* absolute-form targets */
	"http://127.0.0.1/../../etc/passwd",
	"file:///etc/passwd",
	/* through the API's paths */
	"/api/histograms/..%2f..%2f..%2fetc%2fpasswd",
	"/api/histograms/../../etc/passwd",
	"/api/profile/../../../etc/passwd",
	"/metrics/../etc/passwd",
};

/* A private file outside any root the server could have: its marker must never come back. */
static char sentinel_dir[64], sentinel_path[96], sentinel_marker[64];

static void sentinel_make(void)
{
	FILE *f;

	snprintf(sentinel_dir, sizeof(sentinel_dir), "/tmp/hc-abuse-XXXXXX");
	assert_non_null(mkdtemp(sentinel_dir));
	snprintf(sentinel_path, sizeof(sentinel_path), "%s/secret.txt", sentinel_dir);
	snprintf(sentinel_marker, sizeof(sentinel_marker), "hc-abuse-sentinel-%d", (int)getpid());
	f = fopen(sentinel_path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", sentinel_marker);
	assert_int_equal(fclose(f), 0);
}

static void sentinel_remove(void)
{
	unlink(sentinel_path);
	rmdir(sentinel_dir);
}

/* Nothing from outside the viewer's table: a 200 is byte for byte one of its files. */
static void expect_no_leak(const struct resp *r, const char *target)
{
	if (strstr(r->raw, "root:x:0:0") || strstr(r->raw, sentinel_marker) ||
	    strstr(r->raw, "PATH=") || strstr(r->raw, "project('hotcold'"))
		fail_msg("%s: leaked a file:\n%s", target, r->raw);
	if (r->status == 200) {
		for (size_t i = 0; i < hc_assets_n; i++)
			if (r->body_len == hc_assets[i].len &&
			    !memcmp(r->body, hc_assets[i].data, r->body_len))
				return;
		fail_msg("%s: a 200 that is none of the viewer's files:\n%s", target, r->raw);
	}
}

static void test_traversal(void **state)
{
	unsigned int before_calls = calls_get();
	char target[512];
	struct resp r;

	(void)state;
	assert_true(ARRAY_SIZE(traversal) >= 20);
	sentinel_make();
	for (size_t i = 0; i < ARRAY_SIZE(traversal); i++) {
		request(&main_srv, "GET", traversal[i], main_srv.addr, NULL, &r);
		expect_no_leak(&r, traversal[i]);
		expect_json_error(&r, 404, traversal[i]);
		resp_free(&r);
	}

	/* The sentinel by its absolute path, raw, climbing, and with every '/' escaped. */
	{
		const char *forms[] = {"%s", "/../../../../../../../..%s", "/.%s"};

		for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
			snprintf(target, sizeof(target), forms[i], sentinel_path);
			request(&main_srv, "GET", target, main_srv.addr, NULL, &r);
			expect_no_leak(&r, target);
			expect_json_error(&r, 404, target);
			resp_free(&r);
		}
		snprintf(target, sizeof(target), "/..");
		for (const char *p = sentinel_path; *p; p++) {
			size_t len = strlen(target);

			snprintf(target + len, sizeof(target) - len, *p == '/' ? "%%2f" : "%c", *p);
		}
		request(&main_srv, "GET", target, main_srv.addr, NULL, &r);
		expect_no_leak(&r, target);
		expect_json_error(&r, 404, target);
		resp_free(&r);
	}

	/* Traversal in the query of a viewer file: the parameters are ignored, the file is ours. */
	request(&main_srv, "GET", "/index.html?file=../../../../etc/passwd", main_srv.addr, NULL,
		&r);
	expect_no_leak(&r, "query");
	assert_int_equal(r.status, 200);
	resp_free(&r);

	/* Raw bytes no client should send: a NUL, overlong UTF-8, a tab, in the request line.
	 * Whatever the answer (libmicrohttpd may refuse or cut at the NUL), nothing leaks. */
	{
		/* clang-format off */
#define RAW(s) {s, sizeof(s) - 1}
		static const struct {
			const char *bytes;
			size_t len;
		} raw[] = {
			RAW("/../../etc/passwd\0/index.html"), RAW("/\xc0\xae\xc0\xae/etc/passwd"),
			RAW("/..\t/../etc/passwd"),	       RAW("/index.html\0../../etc/passwd"),
			RAW("/\xff\xfe/../etc/passwd"),
		};
#undef RAW
		/* clang-format on */
		char req[512];

		for (size_t i = 0; i < ARRAY_SIZE(raw); i++) {
			size_t n = 0;

			n += (size_t)sprintf(req, "GET ");
			memcpy(req + n, raw[i].bytes, raw[i].len);
			n += raw[i].len;
			n += (size_t)sprintf(req + n,
					     " HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
					     main_srv.addr);
			assert_int_equal(client_request(main_srv.port, req, n, &r), 0);
			expect_no_leak(&r, "raw bytes");
			resp_free(&r);
		}
	}
	sentinel_remove();
	/* not one of them reached the backend */
	assert_int_equal(calls_get(), before_calls);
	expect_alive(&main_srv);
}

/*
 * Symlinks: the server opens no file at run time; the only files it serves were read at build
 * time by hc-embed, which resolves each one and refuses any whose real path is outside the
 * root. Here: a root holding a link out (absolute and relative) is refused with that reason,
 * a link inside the root is fine.
 */
static int run_embed(const char *root, const char *file, char *err, size_t err_len)
{
	const char *embed = getenv("HC_EMBED");
	char out[128], errpath[128];
	char *argv[] = {(char *)embed, (char *)root, out, (char *)file, NULL};
	posix_spawn_file_actions_t fa;
	int status, fd;
	pid_t pid;
	ssize_t n;

	if (!embed)
		fail_msg("HC_EMBED is not set: run this test through meson test");
	snprintf(out, sizeof(out), "%s/out.c", root);
	snprintf(errpath, sizeof(errpath), "%s/stderr", sentinel_dir);

	assert_int_equal(posix_spawn_file_actions_init(&fa), 0);
	assert_int_equal(posix_spawn_file_actions_addopen(&fa, 2, errpath,
							  O_WRONLY | O_CREAT | O_TRUNC, 0600),
			 0);
	assert_int_equal(posix_spawn(&pid, embed, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	fd = open(errpath, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, err, err_len - 1);
	close(fd);
	err[n > 0 ? n : 0] = '\0';
	unlink(errpath);
	unlink(out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_embed_symlinks(void **state)
{
	char root[128], link[160], target[160], err[1024];
	FILE *f;

	(void)state;
	sentinel_make();
	snprintf(root, sizeof(root), "%s/static", sentinel_dir);
	assert_int_equal(mkdir(root, 0700), 0);

	/* absolute link out */
	snprintf(link, sizeof(link), "%s/passwd.txt", root);
	assert_int_equal(symlink("/etc/passwd", link), 0);
	assert_int_equal(run_embed(root, link, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "is not under"));
	unlink(link);

	/* relative link out, to the sentinel next to the root */
	snprintf(link, sizeof(link), "%s/secret.js", root);
	assert_int_equal(symlink("../secret.txt", link), 0);
	assert_int_equal(run_embed(root, link, err, sizeof(err)), 1);
	assert_non_null(strstr(err, "is not under"));
	unlink(link);

	/* a link inside the root: embedded under the real file's path */
	snprintf(target, sizeof(target), "%s/real.js", root);
	f = fopen(target, "w");
	assert_non_null(f);
	fputs("export {};\n", f);
	assert_int_equal(fclose(f), 0);
	snprintf(link, sizeof(link), "%s/alias.js", root);
	assert_int_equal(symlink("real.js", link), 0);
	if (run_embed(root, link, err, sizeof(err)) != 0)
		fail_msg("a link inside the root was refused: %s", err);
	unlink(link);
	unlink(target);
	assert_int_equal(rmdir(root), 0);
	sentinel_remove();
}

/* Host ---------------------------------------------------------------------------------------- */

static void test_foreign_host(void **state)
{
	char good[4][64], bad_port[2][64];
	static const char *const bad[] = {
		"attacker.example",
		"attacker.example:8080",
		"127.0.0.1.nip.io",
		"localtest.me",
		"localhost.",
		"localhost.attacker.example",
		"127.0.0.2",
		"127.1",
		"2130706433",
		"0x7f000001",
		"0177.0.0.1",
		"[::ffff:127.0.0.1]",
		"[0:0:0:0:0:0:0:1]",
		"0.0.0.0",
		"localhost:",
		"localhost@attacker.example",
		"attacker.example#@localhost",
		"localhost attacker.example",
		"",
	};
	unsigned int before_calls;
	struct resp r;

	(void)state;
	snprintf(good[0], sizeof(good[0]), "%s", main_srv.addr);
	snprintf(good[1], sizeof(good[1]), "localhost:%u", main_srv.port);
	snprintf(good[2], sizeof(good[2]), "[::1]:%u", main_srv.port);
	snprintf(good[3], sizeof(good[3]), "localhost");
	snprintf(bad_port[0], sizeof(bad_port[0]), "localhost:%u", main_srv.port + 1);
	snprintf(bad_port[1], sizeof(bad_port[1]), "127.0.0.1:%u0", main_srv.port);

	for (size_t i = 0; i < ARRAY_SIZE(good); i++) {
		request(&main_srv, "GET", "/api/status", good[i], NULL, &r);
		if (r.status != 200)
			fail_msg("Host %s: %s", good[i], r.raw);
		resp_free(&r);
	}
	before_calls = calls_get();
	for (size_t i = 0; i < ARRAY_SIZE(bad) + ARRAY_SIZE(bad_port); i++) {
		const char *h = i < ARRAY_SIZE(bad) ? bad[i] : bad_port[i - ARRAY_SIZE(bad)];

		request(&main_srv, "GET", "/api/status", h, NULL, &r);
		expect_json_error(&r, 421, h);
		resp_free(&r);
		/* the viewer's files too: a rebound page must not even load the viewer */
		request(&main_srv, "GET", "/index.html", h, NULL, &r);
		expect_json_error(&r, 421, h);
		resp_free(&r);
	}
	/* no Host at all, and two of them */
	request(&main_srv, "GET", "/api/status", NULL, NULL, &r);
	expect_json_error(&r, 421, "no Host");
	resp_free(&r);
	request(&main_srv, "GET", "/api/status", main_srv.addr, "Host: attacker.example\r\n", &r);
	expect_json_error(&r, 421, "two Hosts");
	resp_free(&r);
	assert_int_equal(calls_get(), before_calls);
	expect_alive(&main_srv);
}

/* Sizes and methods ---------------------------------------------------------------------------- */

/* A request with `n` bytes of 'a' in the URL (url=true) or in one header's value. */
static void big_request(bool url, size_t n, struct resp *r)
{
	char *req = malloc(n + 512);
	size_t len;

	assert_non_null(req);
	if (url) {
		len = (size_t)sprintf(req, "GET /index.html?v=");
		memset(req + len, 'a', n);
		len += n;
		len += (size_t)sprintf(req + len,
				       " HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
				       main_srv.addr);
	} else {
		len = (size_t)sprintf(
			req, "GET /api/status HTTP/1.1\r\nHost: %s\r\nX-Big: ", main_srv.addr);
		memset(req + len, 'a', n);
		len += n;
		len += (size_t)sprintf(req + len, "\r\nConnection: close\r\n\r\n");
	}
	assert_int_equal(client_request(main_srv.port, req, len, r), 0);
	free(req);
}

static void test_oversized(void **state)
{
	static const size_t sizes[] = {9 * 1024, 17 * 1024, 64 * 1024, 1024 * 1024};
	int fds = fd_count();
	struct resp r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		big_request(true, sizes[i], &r);
		/* ours with a JSON body below the memory pool's size, libmicrohttpd's above */
		if (r.status != 414)
			fail_msg("%zu-byte URL: status %d, read error %d", sizes[i], r.status,
				 r.read_err);
		resp_free(&r);
		expect_alive(&main_srv);

		big_request(false, sizes[i], &r);
		if (r.status != 431)
			fail_msg("%zu-byte header: status %d, read error %d", sizes[i], r.status,
				 r.read_err);
		resp_free(&r);
		expect_alive(&main_srv);
	}

	/* many small headers: 4000 of them, 40 KB */
	{
		size_t cap = 4000 * 16 + 256, len;
		char *req = malloc(cap);

		assert_non_null(req);
		len = (size_t)sprintf(req, "GET /api/status HTTP/1.1\r\nHost: %s\r\n",
				      main_srv.addr);
		for (int i = 0; i < 4000; i++)
			len += (size_t)sprintf(req + len, "X-%d: v\r\n", i);
		len += (size_t)sprintf(req + len, "\r\n");
		assert_int_equal(client_request(main_srv.port, req, len, &r), 0);
		if (r.status != 431)
			fail_msg("4000 headers: status %d", r.status);
		resp_free(&r);
		free(req);
	}
	expect_alive(&main_srv);
	expect_fds_back(fds, "oversized requests");
}

static void test_methods(void **state)
{
	static const char *const methods[] = {"POST",	 "PUT",	  "DELETE",  "PATCH",
					      "OPTIONS", "TRACE", "CONNECT", "PROPFIND",
					      "MKCOL",	 "FOO",	  "get",     "Get"};
	unsigned int before_calls = calls_get();
	char allow[64];
	struct resp r;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(methods); i++) {
		request(&main_srv, methods[i], "/api/status", main_srv.addr, NULL, &r);
		expect_json_error(&r, 405, methods[i]);
		if (!resp_header(&r, "Allow", allow, sizeof(allow)) || strcmp(allow, "GET, HEAD"))
			fail_msg("%s: no Allow: GET, HEAD in\n%s", methods[i], r.raw);
		resp_free(&r);
		/* the viewer's files too */
		request(&main_srv, methods[i], "/index.html", main_srv.addr, NULL, &r);
		expect_json_error(&r, 405, methods[i]);
		resp_free(&r);
	}
	/* a POST announcing a large body it never sends: refused at once, not waited for (a
	 * server waiting for the body would close the connection at its timeout, no 405) */
	request(&main_srv, "POST", "/api/profile", main_srv.addr, "Content-Length: 1000000000\r\n",
		&r);
	expect_json_error(&r, 405, "POST with a body");
	resp_free(&r);
	assert_int_equal(calls_get(), before_calls);
	expect_alive(&main_srv);
}

/* Slow clients --------------------------------------------------------------------------------- */

/*
 * Slowloris: each client sends its request a byte at a time, never finishing it. Kind HEAD
 * trickles a request head that never ends (a header value growing forever); kind BODY sends a
 * whole GET head announcing a body, then trickles the body. One thread drives them all.
 */
enum slow_kind { SLOW_HEAD, SLOW_BODY };

struct slow_client {
	int fd;
	enum slow_kind kind;
	char head[256];
	size_t sent;
	double cut_s; /* when the server closed it, since the start; 0: still open */
};

struct slowloris {
	struct slow_client c[64];
	size_t n;
	double start_s, interval_s, limit_s;
	pthread_t thread;
	pthread_mutex_t lock;
	bool stop;
};

static bool slow_cut(struct slow_client *c)
{
	char buf[512];
	ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

	/* EOF, a reset, or an answer (libmicrohttpd's timeouts send none; an answer would mean
	 * the server gave up on the request, which also frees the slot) */
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) || n > 0;
}

static void *slow_main(void *arg)
{
	struct slowloris *s = arg;

	for (;;) {
		double t = now_s() - s->start_s;
		bool stop;

		pthread_mutex_lock(&s->lock);
		stop = s->stop;
		for (size_t i = 0; i < s->n && !stop; i++) {
			struct slow_client *c = &s->c[i];
			size_t hlen = strlen(c->head);
			char b = 'a';

			if (c->cut_s)
				continue;
			if (slow_cut(c)) {
				c->cut_s = t;
				continue;
			}
			if (c->sent < hlen)
				b = c->head[c->sent];
			if (send(c->fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
				c->sent++;
			else if (errno != EAGAIN && errno != EWOULDBLOCK)
				c->cut_s = t;
		}
		pthread_mutex_unlock(&s->lock);
		if (stop || t > s->limit_s)
			return NULL;
		usleep((useconds_t)(s->interval_s * 1e6));
	}
}

/* n clients of alternating kinds (every `body_every`-th a BODY one; 0: none), all connected
 * before this returns. */
static void slow_start(struct slowloris *s, const struct srv *v, size_t n, size_t body_every,
		       double interval_s, double limit_s)
{
	memset(s, 0, sizeof(*s));
	assert_true(n <= ARRAY_SIZE(s->c));
	pthread_mutex_init(&s->lock, NULL);
	s->interval_s = interval_s;
	s->limit_s = limit_s;
	for (size_t i = 0; i < n; i++) {
		struct slow_client *c = &s->c[i];

		c->fd = client_connect(v->port);
		assert_true(c->fd >= 0);
		c->kind = body_every && i % body_every == body_every - 1 ? SLOW_BODY : SLOW_HEAD;
		if (c->kind == SLOW_HEAD) {
			snprintf(c->head, sizeof(c->head),
				 "GET /api/status HTTP/1.1\r\nHost: %s\r\nX-Slow: ", v->addr);
		} else {
			snprintf(c->head, sizeof(c->head),
				 "GET /api/status HTTP/1.1\r\nHost: %s\r\n"
				 "Content-Length: 100000\r\n\r\n",
				 v->addr);
			/* the whole head at once: only the body is slow */
			assert_int_equal(send(c->fd, c->head, strlen(c->head), MSG_NOSIGNAL),
					 (ssize_t)strlen(c->head));
			c->sent = strlen(c->head);
		}
	}
	s->n = n;
	s->start_s = now_s();
	assert_int_equal(pthread_create(&s->thread, NULL, slow_main, s), 0);
}

static void slow_stop(struct slowloris *s)
{
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	for (size_t i = 0; i < s->n; i++)
		close(s->c[i].fd);
	pthread_mutex_destroy(&s->lock);
}

/*
 * A few slow clients against the default server (64 connections, 2 threads): a normal client
 * is served at once, again and again, while they trickle.
 */
static void test_slowloris_some(void **state)
{
	struct slowloris s;
	int fds = fd_count();

	(void)state;
	slow_start(&s, &main_srv, 16, 4, 0.2, 8);
	for (int i = 0; i < 5; i++) {
		usleep(300 * 1000);
		expect_alive(&main_srv);
	}
	pthread_mutex_lock(&s.lock);
	for (size_t i = 0; i < s.n; i++)
		if (s.c[i].cut_s)
			fail_msg("slow client %zu cut after %.1f s, before the timeout", i,
				 s.c[i].cut_s);
	pthread_mutex_unlock(&s.lock);
	slow_stop(&s);
	expect_fds_back(fds, "slow clients");
}

/*
 * As many slow clients as the server takes connections: every slot is held by a client that
 * keeps sending a byte every 0.2 s, which an idle timeout alone never ends. The server must cut
 * each of them once its request has taken longer than the timeout, so that a normal client
 * waiting in the listen backlog is served once the first is cut, long before they would stop.
 */
static void test_slowloris_all_slots(void **state)
{
	const unsigned int timeout_s = 2, max_conn = 4;
	struct srv v;
	struct slowloris s;
	double t0, dt;
	struct resp r;
	char req[256];
	int fds = fd_count(), n;

	(void)state;
	assert_int_equal(srv_start(&v, (struct hc_server_opts){.threads = 1,
							       .max_connections = max_conn,
							       .timeout_s = timeout_s}),
			 0);
	slow_start(&s, &v, max_conn, 2, 0.2, 3 * timeout_s + 5);
	usleep(300 * 1000); /* all accepted: every slot is taken */

	t0 = now_s();
	n = snprintf(req, sizeof(req),
		     "GET /api/status HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", v.addr);
	assert_int_equal(client_request(v.port, req, (size_t)n, &r), 0);
	dt = now_s() - t0;
	if (r.status != 200 || strcmp(r.body ? r.body : "", STATUS_BODY))
		fail_msg("a normal client behind %u slow ones: status %d after %.2f s (read error "
			 "%d)",
			 max_conn, r.status, dt, r.read_err);
	/* Served because the server cut a slow client, not because they gave up by themselves
	 * (at s.limit_s): a server that enforced only an idle timeout would never cut them. */
	if (dt >= s.limit_s)
		fail_msg("a normal client behind %u slow ones waited %.2f s", max_conn, dt);
	resp_free(&r);

	/* every slow client was cut, after the timeout, before its own end */
	for (bool all_cut = false; !all_cut && now_s() - s.start_s < s.limit_s;) {
		usleep(50 * 1000);
		pthread_mutex_lock(&s.lock);
		all_cut = true;
		for (size_t i = 0; i < s.n; i++)
			all_cut = all_cut && s.c[i].cut_s;
		pthread_mutex_unlock(&s.lock);
	}
	pthread_mutex_lock(&s.lock);
	for (size_t i = 0; i < s.n; i++) {
		const struct slow_client *c = &s.c[i];

		print_message("slow client %zu (%s): cut after %.2f s, %zu bytes sent\n", i,
			      c->kind == SLOW_HEAD ? "head" : "body", c->cut_s, c->sent);
	}
	print_message("normal client behind them: served after %.2f s (timeout %u s)\n", dt,
		      timeout_s);
	for (size_t i = 0; i < s.n; i++) {
		const struct slow_client *c = &s.c[i];

		if (!c->cut_s || c->cut_s < timeout_s - 0.5 || c->cut_s >= s.limit_s)
			fail_msg("slow client %zu (%s, %zu bytes sent): cut after %.2f s (timeout "
				 "%u s)",
				 i, c->kind == SLOW_HEAD ? "head" : "body", c->sent, c->cut_s,
				 timeout_s);
	}
	pthread_mutex_unlock(&s.lock);
	slow_stop(&s);
	srv_stop(&v);
	expect_fds_back(fds, "a server held by slow clients");
}

/*
 * What the deadline does not cut: the time the backend takes (3 s against a 2 s timeout), and a
 * keep-alive connection used by a client that pauses between requests for less than the
 * timeout each time but longer than it in all.
 */
static void test_slow_answer_not_cut(void **state)
{
	char req[256], buf[4096];
	struct srv v;
	struct resp r;
	int fd, n;

	(void)state;
	assert_int_equal(srv_start(&v, (struct hc_server_opts){.timeout_s = 2}), 0);
	n = snprintf(req, sizeof(req),
		     "GET /api/profile?pid=7 HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
		     v.addr);
	assert_int_equal(client_request(v.port, req, (size_t)n, &r), 0);
	if (r.status != 200 || strcmp(r.body ? r.body : "", PROFILE_BODY))
		fail_msg("a 3 s answer with a 2 s timeout: status %d, read error %d", r.status,
			 r.read_err);
	resp_free(&r);

	fd = client_connect(v.port);
	assert_true(fd >= 0);
	n = snprintf(req, sizeof(req), "GET /api/status HTTP/1.1\r\nHost: %s\r\n\r\n", v.addr);
	for (int i = 0; i < 4; i++) {
		size_t off = 0;

		assert_int_equal(send(fd, req, (size_t)n, MSG_NOSIGNAL), n);
		while (off < sizeof(buf) - 1) {
			ssize_t got = recv(fd, buf + off, sizeof(buf) - 1 - off, 0);

			if (got <= 0)
				break;
			off += (size_t)got;
			buf[off] = '\0';
			if (strstr(buf, STATUS_BODY))
				break;
		}
		buf[off] = '\0';
		if (strncmp(buf, "HTTP/1.1 200", 12) || !strstr(buf, STATUS_BODY))
			fail_msg("request %d on one connection, 1.2 s after the previous:\n%s", i,
				 buf);
		usleep(1200 * 1000);
	}
	close(fd);
	srv_stop(&v);
}

/* Concurrency ------------------------------------------------------------------------------------
 */

#define CONC_THREADS 20
#define CONC_PER_THREAD 10

struct conc {
	unsigned int id, ok;
	char failure[256];
};

static void *conc_main(void *arg)
{
	static const char *const targets[] = {"/api/status", "/index.html", "/api/profile?pid=1",
					      "/"};
	struct conc *c = arg;
	const struct hc_asset *index = hc_asset__find("/index.html");

	for (unsigned int i = 0; i < CONC_PER_THREAD; i++) {
		const char *t = targets[(c->id + i) % ARRAY_SIZE(targets)];
		const char *want_body = NULL;
		char req[256];
		struct resp r;
		bool good;
		int n, err;

		n = snprintf(req, sizeof(req),
			     "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", t,
			     main_srv.addr);
		err = client_request(main_srv.port, req, (size_t)n, &r);
		if (err) {
			snprintf(c->failure, sizeof(c->failure), "%s: %s", t, strerror(-err));
			return NULL;
		}
		if (!strcmp(t, "/api/status"))
			want_body = STATUS_BODY;
		else if (!strncmp(t, "/api/profile", 12))
			want_body = PROFILE_BODY;
		good = r.status == 200 && r.body &&
		       (want_body ? !strcmp(r.body, want_body)
				  : r.body_len == index->len &&
					    !memcmp(r.body, index->data, index->len));
		if (!good) {
			snprintf(c->failure, sizeof(c->failure),
				 "%s: status %d, %zu body bytes, read error %d", t, r.status,
				 r.body_len, r.read_err);
			resp_free(&r);
			return NULL;
		}
		c->ok++;
		resp_free(&r);
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	struct conc c[CONC_THREADS] = {0};
	pthread_t th[CONC_THREADS];
	unsigned int ok = 0;
	int fds = fd_count();
	double t0 = now_s();

	(void)state;
	for (unsigned int i = 0; i < CONC_THREADS; i++) {
		c[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, conc_main, &c[i]), 0);
	}
	for (unsigned int i = 0; i < CONC_THREADS; i++) {
		pthread_join(th[i], NULL);
		if (c[i].failure[0])
			fail_msg("client thread %u: %s", i, c[i].failure);
		ok += c[i].ok;
	}
	assert_int_equal(ok, CONC_THREADS * CONC_PER_THREAD);
	if (now_s() - t0 > HANG_GUARD_S)
		fail_msg("%u requests took %.1f s", ok, now_s() - t0);
	expect_fds_back(fds, "concurrent requests");
	expect_alive(&main_srv);
}

/* A whole server's life, many times: starting and stopping leaks no descriptor or thread. */
static void test_restart(void **state)
{
	int fds = fd_count();

	(void)state;
	for (int i = 0; i < 20; i++) {
		struct srv v;

		assert_int_equal(srv_start(&v, (struct hc_server_opts){0}), 0);
		expect_alive(&v);
		srv_stop(&v);
	}
	expect_fds_back(fds, "20 servers started and stopped");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_traversal),
		cmocka_unit_test(test_embed_symlinks),
		cmocka_unit_test(test_foreign_host),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_methods),
		cmocka_unit_test(test_slowloris_some),
		cmocka_unit_test(test_slowloris_all_slots),
		cmocka_unit_test(test_slow_answer_not_cut),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_restart),
	};

	/* a server that closes first must not kill the client with SIGPIPE */
	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests_name("web/abuse", tests, setup, teardown) ? 1 : 0;
}
