// SPDX-License-Identifier: GPL-2.0-only
/*
 * Inline frames from DWARF (issue 7), as root with real BPF. The inline workload
 * (inline_workload.c, -O2 -g, frame pointers) spends its time in inl_hot, inlined into inl_step,
 * inlined into inl_caller; neither has code or a symbol of its own. Checked:
 *  - record: at least 80 % of inl_caller's on-CPU time is under inl_caller > inl_step > inl_hot
 *    with both marked inlined; neither is ever a real frame; the symbolize counters say so;
 *    converted by report, folded has inl_step_[i];inl_hot_[i] and pprof one Location whose Lines
 *    are inl_hot, inl_step, inl_caller (innermost first);
 *  - record --no-inline: none of it (the proof the above can fail): inl_caller keeps the time;
 *  - serve: /api/profile marks them the same way (collector, wire, store, JSON).
 * The sandboxed worker symbolizes in all of them: the DWARF is read under its seccomp list.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "e2e.h"
#include "tests/pprof/pprof_read.h"

static const char *hotcold, *workload;
static char *dir;
static char out_path[600], err_path[600], conv_path[600];

struct inl {
	uint64_t caller;    /* on-CPU ns of the outermost real inl_caller nodes */
	uint64_t chained;   /* of it, at inl_caller > inl_step (inlined) > inl_hot (inlined) */
	uint64_t real_self; /* inl_caller's own time (what --no-inline leaves there) */
	int inlined_nodes;  /* nodes marked inlined anywhere under the process */
	int real_namesakes; /* inl_step or inl_hot as real frames */
};

static bool is_inlined(json_t *n)
{
	return json_is_true(json_object_get(n, "inlined"));
}

static const char *name_of(json_t *n)
{
	const char *s = json_string_value(json_object_get(n, "name"));

	return s ? s : "";
}

static json_t *child_named(json_t *n, const char *name, bool inlined)
{
	json_t *c;
	size_t i;

	json_array_foreach (json_object_get(n, "children"), i, c)
		if (!strcmp(name_of(c), name) && is_inlined(c) == inlined)
			return c;
	return NULL;
}

static void walk(json_t *n, struct inl *s, bool under_caller)
{
	const char *name = name_of(n);
	json_t *c;
	size_t i;

	if (is_inlined(n))
		s->inlined_nodes++;
	if ((!strcmp(name, "inl_step") || !strcmp(name, "inl_hot")) && !is_inlined(n))
		s->real_namesakes++;
	if (!under_caller && !strcmp(name, "inl_caller") && !is_inlined(n)) {
		json_t *step = child_named(n, "inl_step", true);
		json_t *hot = step ? child_named(step, "inl_hot", true) : NULL;
		uint64_t kids = 0;

		s->caller += e2e_field(n, "on_cpu_ns");
		if (hot)
			s->chained += e2e_field(hot, "on_cpu_ns");
		json_array_foreach (json_object_get(n, "children"), i, c)
			kids += e2e_field(c, "on_cpu_ns");
		s->real_self += e2e_field(n, "on_cpu_ns") - kids;
		under_caller = true;
	}
	json_array_foreach (json_object_get(n, "children"), i, c)
		walk(c, s, under_caller);
}

static struct inl inline_share(json_t *root, pid_t pid)
{
	json_t *p = e2e_process_node(root, (uint32_t)pid);
	struct inl s = {0};

	assert_non_null(p);
	walk(p, &s, false);
	return s;
}

static int setup(void **state)
{
	(void)state;
	dir = e2e_tmpdir();
	snprintf(out_path, sizeof(out_path), "%s/out.json", dir);
	snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
	snprintf(conv_path, sizeof(conv_path), "%s/conv", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	e2e_remove_tmpdir(dir);
	free(dir);
	return 0;
}

static void dump(const char *what, int rc)
{
	char *err = e2e_read_file(err_path, NULL);

	fprintf(stderr, "%s exited %d: %s\n", what, rc, err ? err : "");
	free(err);
}

/* Record the workload for 3 s at 999 Hz, with extra (NULL: none); its pid in *pid. */
static json_t *record(pid_t *pid, const char *extra)
{
	char *argv[] = {(char *)hotcold, "record",	"-F", "999", "-d", "3s", "-o",
			out_path,	 (char *)extra, NULL};
	char *wargv[] = {(char *)workload, "6", NULL};

	assert_int_equal(e2e_record_pid(wargv, 0, argv, err_path, pid), 0);
	return e2e_load_json(out_path);
}

/* hotcold report --format fmt -o conv_path out_path */
static void convert(const char *fmt)
{
	char *argv[] = {(char *)hotcold, "report", "--format", (char *)fmt, "-o",
			conv_path,	 out_path, NULL};
	int rc = e2e_run(argv, err_path, 60000);

	if (rc)
		dump("report", rc);
	assert_int_equal(rc, 0);
}

static const char *fn_name(const struct pp_profile *pp, uint64_t id)
{
	for (size_t i = 0; i < pp->n_functions; i++)
		if (pp->functions[i].id == id)
			return pp->functions[i].name;
	return "";
}

static void test_record_inline(void **state)
{
	struct pp_profile pp;
	char why[256], *folded;
	bool three = false;
	struct inl s;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(&pid, NULL);
	assert_non_null(j);
	s = inline_share(j, pid);
	print_message("inl_caller %.0f ms on CPU, %.1f %% under inl_step > inl_hot (inlined); "
		      "%d inlined nodes; symbolize: dwarf_objects %llu, inline_frames %llu, "
		      "inline_truncated %llu, inline_dropped %llu, dwarf_over_budget %llu\n",
		      (double)s.caller / 1e6,
		      s.caller ? 100.0 * (double)s.chained / (double)s.caller : 0, s.inlined_nodes,
		      (unsigned long long)e2e_u64(j, "symbolize.dwarf_objects"),
		      (unsigned long long)e2e_u64(j, "symbolize.inline_frames"),
		      (unsigned long long)e2e_u64(j, "symbolize.inline_truncated"),
		      (unsigned long long)e2e_u64(j, "symbolize.inline_dropped"),
		      (unsigned long long)e2e_u64(j, "symbolize.dwarf_over_budget"));
	/* 3 s at 999 Hz of one busy thread */
	assert_true(s.caller > 1000000000ull);
	assert_true(s.chained >= s.caller * 8 / 10);
	assert_int_equal(s.real_namesakes, 0);
	assert_true(e2e_u64(j, "symbolize.dwarf_objects") >= 1);
	assert_true(e2e_u64(j, "symbolize.inline_frames") >= 2);
	assert_int_equal(e2e_u64(j, "symbolize.inline_dropped"), 0);
	json_decref(j);

	convert("folded");
	folded = e2e_read_file(conv_path, NULL);
	assert_non_null(folded);
	assert_non_null(strstr(folded, ";main;inl_caller;inl_step_[i];inl_hot_[i] "));
	free(folded);

	convert("pprof");
	assert_int_equal(pp_read_file(conv_path, &pp, why, sizeof(why)), 0);
	for (size_t i = 0; i < pp.n_locations; i++) {
		const struct pp_location *l = &pp.locations[i];

		if (l->n_lines == 3 && !strcmp(fn_name(&pp, l->lines[0].function_id), "inl_hot") &&
		    !strcmp(fn_name(&pp, l->lines[1].function_id), "inl_step") &&
		    !strcmp(fn_name(&pp, l->lines[2].function_id), "inl_caller"))
			three = true;
	}
	assert_true(three);
	pp_free(&pp);
}

/* Without inline frames the time stays in inl_caller itself. */
static void test_record_no_inline(void **state)
{
	struct inl s;
	pid_t pid;
	json_t *j;

	(void)state;
	j = record(&pid, "--no-inline");
	assert_non_null(j);
	s = inline_share(j, pid);
	print_message("--no-inline: inl_caller %.0f ms on CPU, %.0f ms its own; %d inlined nodes\n",
		      (double)s.caller / 1e6, (double)s.real_self / 1e6, s.inlined_nodes);
	assert_true(s.caller > 1000000000ull);
	assert_int_equal(s.chained, 0);
	assert_int_equal(s.inlined_nodes, 0);
	assert_true(s.real_self >= s.caller * 8 / 10);
	assert_int_equal(e2e_u64(j, "symbolize.inline_frames"), 0);
	assert_int_equal(e2e_u64(j, "symbolize.dwarf_objects"), 0);
	json_decref(j);
}

/* serve: the marks go through the collector, the wire and the store to /api/profile. */
static void test_serve_inline(void **state)
{
	char *argv[] = {(char *)hotcold, "serve",    "--data-dir",  "none", "-F",
			"999",		 "--listen", "127.0.0.1:0", NULL};
	char *wargv[] = {(char *)workload, "12", NULL};
	char addr[64] = "", path[128], *body = NULL;
	int fd, status = -1;
	pid_t srv, w, pid;
	struct inl s = {0};
	json_t *j = NULL;

	(void)state;
	srv = e2e_spawn(argv, &fd, err_path);
	assert_true(srv > 0);
	for (int i = 0; i < 200 && !*addr; i++) { /* 10 s */
		char *text = e2e_read_file(err_path, NULL), *u;

		u = text ? strstr(text, "serving http://") : NULL;
		if (!u || sscanf(u, "serving http://%63[^/]/", addr) != 1)
			usleep(50000);
		free(text);
	}
	if (!*addr)
		dump("serve", -1);
	assert_true(*addr);
	w = e2e_spawn(wargv, &fd, NULL);
	pid = e2e_read_pid(fd);
	close(fd);
	assert_true(pid > 0);
	/* the path of 3 s of its time, asked for until it has them (at most 20 s) */
	snprintf(path, sizeof(path), "/api/profile?from=-10s&pid=%d", (int)pid);
	for (int i = 0; i < 40; i++) {
		sleep(1);
		free(body);
		body = NULL;
		status = e2e_http(addr, "GET", path, NULL, &body, NULL);
		json_decref(j);
		j = status == 200 ? json_loads(body, 0, NULL) : NULL;
		if (j && e2e_process_node(j, (uint32_t)pid)) {
			s = inline_share(j, pid);
			if (s.caller > 3000000000ull)
				break;
		}
	}
	kill(w, SIGKILL);
	e2e_wait(w, 5000);
	kill(srv, SIGTERM);
	assert_int_equal(e2e_wait(srv, 20000), 0);
	print_message("serve: status %d, inl_caller %.0f ms on CPU, %.1f %% under inl_step > "
		      "inl_hot (inlined)\n",
		      status, (double)s.caller / 1e6,
		      s.caller ? 100.0 * (double)s.chained / (double)s.caller : 0);
	assert_int_equal(status, 200);
	assert_true(s.caller > 1000000000ull);
	assert_true(s.chained >= s.caller * 8 / 10);
	assert_int_equal(s.real_namesakes, 0);
	json_decref(j);
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_record_inline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_no_inline, setup, teardown),
		cmocka_unit_test_setup_teardown(test_serve_inline, setup, teardown),
	};

	e2e_require_root();
	hotcold = e2e_env("HOTCOLD");
	workload = e2e_env("HC_INLINE_WORKLOAD");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
