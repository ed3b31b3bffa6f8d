// SPDX-License-Identifier: GPL-2.0-only
/*
 * pprof-dump FILE [TYPE]: prints a pprof file (gzipped or raw profile.proto) for shell tests,
 * decoded by tests/pprof/pprof_read.c (independent of hotcold's encoder).
 *
 * Output, one item per line, fields separated by one space, in this order:
 *
 *   sample_type TYPE/UNIT          one line per sample type, in file order
 *   period_type TYPE/UNIT
 *   period N
 *   time_nanos N
 *   duration_nanos N
 *   default_sample_type TYPE       ("" when unset: the line is "default_sample_type ")
 *   comment TEXT                   one line per comment, in file order
 *   samples N                      counts of samples, locations, functions, mappings
 *   locations N
 *   functions N
 *   mappings N
 *   total TYPE N                   one line per sample type: the sum of its values
 *
 * and, when TYPE is given, the samples as folded stacks:
 *
 *   PROCESS;FRAME;...;FRAME VALUE
 *
 * PROCESS is the sample's `process` label (left out, with its ';', when the sample has none),
 * then the function names outermost first (pp_sample_folded(): inlined functions included;
 * a location without lines reads as its address 0xHEX). A sample with neither label nor
 * location prints as "[empty]". Equal stacks are summed; lines whose sum is 0 are left out;
 * the lines are sorted by the stack text (strcmp, byte order). Newlines inside names are
 * printed as '_' so that every record stays on one line.
 *
 * Exit status: 0 printed; 1 usage (wrong arguments, TYPE not a sample type of the file);
 * 2 the file cannot be read or is not a valid profile (the reason on stderr).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/pprof/pprof_read.h"

struct line {
	char *text;
	int64_t value;
};

static int line_cmp(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->text, ((const struct line *)b)->text);
}

/* Prints s with newlines as '_'. */
static void put_clean(const char *s)
{
	for (; *s; s++)
		putchar(*s == '\n' || *s == '\r' ? '_' : *s);
}

static char *sample_text(const struct pp_profile *p, const struct pp_sample *s)
{
	const char *proc = pp_label_str(s, "process");
	char *stack = pp_sample_folded(p, s), *text;
	size_t n;

	if (!stack)
		return NULL;
	if (!proc && !*stack) {
		free(stack);
		return strdup("[empty]");
	}
	if (!proc)
		return stack;
	n = strlen(proc) + 1 + strlen(stack) + 1;
	text = malloc(n);
	if (text)
		snprintf(text, n, "%s%s%s", proc, *stack ? ";" : "", stack);
	free(stack);
	return text;
}

static int print_folded(const struct pp_profile *p, int idx)
{
	struct line *lines = calloc(p->n_samples ? p->n_samples : 1, sizeof(*lines));
	size_t n = 0, i, j;
	int err = 0;

	if (!lines)
		return -ENOMEM;
	for (i = 0; i < p->n_samples; i++) {
		lines[n].text = sample_text(p, &p->samples[i]);
		if (!lines[n].text) {
			err = -ENOMEM;
			goto out_free;
		}
		lines[n++].value = p->samples[i].values[idx];
	}
	qsort(lines, n, sizeof(*lines), line_cmp);
	for (i = 0; i < n; i = j) {
		uint64_t sum = (uint64_t)lines[i].value;

		for (j = i + 1; j < n && strcmp(lines[i].text, lines[j].text) == 0; j++)
			sum += (uint64_t)lines[j].value;
		if (!sum)
			continue;
		put_clean(lines[i].text);
		printf(" %" PRId64 "\n", (int64_t)sum);
	}

out_free:
	for (i = 0; i < n; i++)
		free(lines[i].text);
	free(lines);
	return err;
}

int main(int argc, char **argv)
{
	struct pp_profile p;
	char why[256];
	int err, idx = -1;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: pprof-dump FILE [TYPE]\n");
		return 1;
	}
	err = pp_read_file(argv[1], &p, why, sizeof(why));
	if (err) {
		fprintf(stderr, "pprof-dump: %s: %s\n", argv[1], why);
		return 2;
	}
	if (argc == 3) {
		idx = pp_sample_type_index(&p, argv[2]);
		if (idx < 0) {
			fprintf(stderr, "pprof-dump: %s: no sample type %s\n", argv[1], argv[2]);
			pp_free(&p);
			return 1;
		}
	}

	for (size_t i = 0; i < p.n_sample_types; i++)
		printf("sample_type %s/%s\n", p.sample_types[i].type, p.sample_types[i].unit);
	printf("period_type %s/%s\n", p.period_type.type, p.period_type.unit);
	printf("period %" PRId64 "\n", p.period);
	printf("time_nanos %" PRId64 "\n", p.time_nanos);
	printf("duration_nanos %" PRId64 "\n", p.duration_nanos);
	printf("default_sample_type %s\n", p.default_sample_type);
	for (size_t i = 0; i < p.n_comments; i++) {
		printf("comment ");
		put_clean(p.comments[i]);
		putchar('\n');
	}
	printf("samples %zu\nlocations %zu\nfunctions %zu\nmappings %zu\n", p.n_samples,
	       p.n_locations, p.n_functions, p.n_mappings);
	for (size_t i = 0; i < p.n_sample_types; i++) {
		uint64_t sum = 0;

		for (size_t j = 0; j < p.n_samples; j++)
			sum += (uint64_t)p.samples[j].values[i];
		printf("total %s %" PRId64 "\n", p.sample_types[i].type, (int64_t)sum);
	}

	if (idx >= 0 && print_folded(&p, idx)) {
		fprintf(stderr, "pprof-dump: out of memory\n");
		pp_free(&p);
		return 2;
	}
	pp_free(&p);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "pprof-dump: write error: %s\n", strerror(errno));
		return 2;
	}
	return 0;
}
