// SPDX-License-Identifier: GPL-2.0-only
/*
 * What the contrib tests (shell scripts) cannot check well in shell: a profile's contents
 * (Debian's jq 1.6 refuses documents nested deeper than 256 levels, which whole-machine
 * profiles are) and one HTTP request with the Host header serve insists on.
 *
 *   hc-contrib-check profile FILE [PID...] [jit:PID:NAME]
 *	FILE is a hotcold-profile/1 document of the whole machine. Fails unless it has
 *	samples, its kernel frames are named (at least 10 named, fewer than 1 in 10 unknown:
 *	what /proc/kallsyms and CAP_SYSLOG give), and each PID (an hc-workload cpu process)
 *	was sampled with at least half of its on-CPU time in hc_burn_a/b/c (its binary was
 *	opened and its symbols read). jit:PID:NAME: user frames of PID whose names contain
 *	NAME (a JIT function named from /tmp/perf-PID.map) hold some of its on-CPU time.
 *	Prints what it counted.
 *   hc-contrib-check http ADDR PATH OUT
 *	GET PATH from ADDR (127.0.0.1:PORT), body to OUT; fails unless the status is 200.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../e2e/e2e.h"

struct kernel_count {
	uint64_t named;
	uint64_t unknown;
};

static void count_kernel(json_t *n, struct kernel_count *kc)
{
	const char *kind = json_string_value(json_object_get(n, "kind"));
	const char *name = json_string_value(json_object_get(n, "name"));
	json_t *c;
	size_t i;

	if (kind && name && !strcmp(kind, "kernel")) {
		if (!strcmp(name, "[unknown]"))
			kc->unknown++;
		else
			kc->named++;
	}
	json_array_foreach (json_object_get(n, "children"), i, c)
		count_kernel(c, kc);
}

/* on_cpu_ns of the outermost user frames under n whose names contain part. */
static uint64_t sum_user_containing(json_t *n, const char *part)
{
	const char *kind = json_string_value(json_object_get(n, "kind"));
	const char *name = json_string_value(json_object_get(n, "name"));
	uint64_t sum = 0;
	json_t *c;
	size_t i;

	if (kind && name && !strcmp(kind, "user") && strstr(name, part))
		return e2e_field(n, "on_cpu_ns");
	json_array_foreach (json_object_get(n, "children"), i, c)
		sum += sum_user_containing(c, part);
	return sum;
}

static int check_jit(json_t *root, const char *spec)
{
	char *end;
	uint32_t pid = (uint32_t)strtoul(spec, &end, 10);
	json_t *proc = e2e_process_node(root, pid);
	uint64_t on = proc ? e2e_field(proc, "on_cpu_ns") : 0, jit;

	if (*end != ':' || !end[1]) {
		fprintf(stderr, "FAIL: jit:%s: want jit:PID:NAME\n", spec);
		return 1;
	}
	jit = proc ? sum_user_containing(proc, end + 1) : 0;
	printf("pid %u: on-CPU %llu ns, %llu ns of it in frames named *%s*\n", pid,
	       (unsigned long long)on, (unsigned long long)jit, end + 1);
	if (on == 0) {
		fprintf(stderr, "FAIL: pid %u was not sampled\n", pid);
		return 1;
	}
	if (jit == 0) {
		fprintf(stderr, "FAIL: pid %u: no JIT frame named (its /tmp/perf-%u.map unread)\n",
			pid, pid);
		return 1;
	}
	return 0;
}

static int check_profile(const char *path, int npids, char **pids)
{
	static const char *const burners[] = {"hc_burn_a", "hc_burn_b", "hc_burn_c"};
	struct kernel_count kc = {0};
	json_t *root = e2e_load_json(path);
	uint64_t samples;
	int bad = 0;

	if (!root) {
		fprintf(stderr, "FAIL: %s is not a JSON document\n", path);
		return 1;
	}
	samples = e2e_u64(root, "sampling.samples");
	count_kernel(json_object_get(root, "flamegraph"), &kc);
	printf("%s: %llu samples; kernel frames: %llu named, %llu [unknown]\n", path,
	       (unsigned long long)samples, (unsigned long long)kc.named,
	       (unsigned long long)kc.unknown);
	if (samples == 0) {
		fprintf(stderr, "FAIL: no samples\n");
		bad = 1;
	}
	if (kc.named < 10 || kc.unknown * 10 >= kc.named) {
		fprintf(stderr, "FAIL: kernel frames are not named (no CAP_SYSLOG, or "
				"/proc/kallsyms hidden)\n");
		bad = 1;
	}
	for (int i = 0; i < npids; i++) {
		uint32_t pid = (uint32_t)strtoul(pids[i], NULL, 10);
		json_t *proc = e2e_process_node(root, pid);
		uint64_t on = proc ? e2e_field(proc, "on_cpu_ns") : 0, burn = 0;

		if (!strncmp(pids[i], "jit:", 4)) {
			bad |= check_jit(root, pids[i] + 4);
			continue;
		}
		for (size_t b = 0; b < sizeof(burners) / sizeof(burners[0]); b++)
			burn += e2e_sum_frames(root, pid, NULL, burners[b]);
		printf("pid %u: %s, on-CPU %llu ns, %llu ns of it in hc_burn_*\n", pid,
		       proc ? json_string_value(json_object_get(proc, "name")) : "(absent)",
		       (unsigned long long)on, (unsigned long long)burn);
		if (on == 0) {
			fprintf(stderr, "FAIL: pid %u was not sampled\n", pid);
			bad = 1;
		} else if (burn * 2 < on) {
			fprintf(stderr,
				"FAIL: pid %u: its frames are not named (its binary "
				"could not be opened)\n",
				pid);
			bad = 1;
		}
	}
	json_decref(root);
	return bad;
}

static int check_http(const char *addr, const char *path, const char *out)
{
	char *body = NULL;
	size_t len = 0;
	int status = e2e_http(addr, "GET", path, NULL, &body, &len);
	FILE *f;

	if (status != 200) {
		fprintf(stderr, "FAIL: GET %s from %s: status %d\n", path, addr, status);
		free(body);
		return 1;
	}
	f = fopen(out, "w");
	if (!f || fwrite(body ? body : "", 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "FAIL: writing %s\n", out);
		free(body);
		return 1;
	}
	free(body);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "profile"))
		return check_profile(argv[2], argc - 3, argv + 3);
	if (argc == 5 && !strcmp(argv[1], "http"))
		return check_http(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: hc-contrib-check profile FILE [PID...] | http ADDR PATH OUT\n");
	return 2;
}
