// SPDX-License-Identifier: GPL-2.0-only
/* profile/counters: the one list of counters and what is derived from it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/counters.h"
#include "tests.h"

/* Every key of a family, aliases included, once: two producers cannot write one key. */
static void test_keys_unique(void **state)
{
	(void)state;
	for (size_t i = 0; i < HC_C_MAX; i++) {
		const struct hc_counter_def *a = &hc_counter_defs[i];

		assert_non_null(a->key);
		assert_true(*a->help);
		for (size_t j = i + 1; j < HC_C_MAX; j++)
			if (hc_counter_defs[j].family == a->family &&
			    !strcmp(hc_counter_defs[j].key, a->key))
				fail_msg("%s.%s listed twice", hc_counter_family_name(a->family),
					 a->key);
		for (size_t j = 0; j < hc_counter_n_aliases; j++)
			if (hc_counter_aliases[j].family == a->family &&
			    !strcmp(hc_counter_aliases[j].key, a->key))
				fail_msg("alias %s.%s shadows a counter",
					 hc_counter_family_name(a->family), a->key);
	}
}

/* Prometheus naming: counters end in _total, time is in seconds, a series has one type and
 * unit, and its samples differ by their labels. */
static void test_metric_names(void **state)
{
	(void)state;
	for (size_t i = 0; i < HC_C_MAX; i++) {
		const struct hc_counter_def *a = &hc_counter_defs[i];
		size_t n = strlen(a->metric);

		assert_true(!strncmp(a->metric, "hotcold_", 8));
		if (a->type == HC_CT_COUNTER && (n < 6 || strcmp(a->metric + n - 6, "_total")))
			fail_msg("counter series %s does not end in _total", a->metric);
		if (a->type == HC_CT_GAUGE && n >= 6 && !strcmp(a->metric + n - 6, "_total"))
			fail_msg("gauge series %s ends in _total", a->metric);
		if ((a->unit == HC_CU_NS || a->unit == HC_CU_S) && !strstr(a->metric, "_seconds"))
			fail_msg("time series %s is not in _seconds", a->metric);
		if (a->unit == HC_CU_BYTES && !strstr(a->metric, "_bytes"))
			fail_msg("byte series %s is not in _bytes", a->metric);
		for (size_t j = i + 1; j < HC_C_MAX; j++) {
			const struct hc_counter_def *b = &hc_counter_defs[j];

			if (strcmp(a->metric, b->metric))
				continue;
			if (a->type != b->type || a->unit != b->unit)
				fail_msg("series %s mixes types or units", a->metric);
			if (!strcmp(a->labels, b->labels))
				fail_msg("series %s{%s} twice", a->metric, a->labels);
		}
	}
}

static void test_json_nested(void **state)
{
	struct hc_counters c = {0};
	json_t *o = json_object();

	(void)state;
	c.v[HC_C_SCHED_STACKS_CAPTURED] = 7;
	c.v[HC_C_LOST_OFFCPU_NS] = 42;
	c.v[HC_C_SCHED_SWITCHES] = UINT64_MAX; /* clamped, not negative */
	assert_non_null(o);
	assert_int_equal(hc_counters__to_json(&c, HC_F_SCHEDULER, o), 0);
	assert_int_equal(
		json_integer_value(json_object_get(json_object_get(o, "stacks"), "captured")), 7);
	assert_int_equal(json_integer_value(json_object_get(o, "stacks_captured")), 7);
	assert_int_equal(json_integer_value(json_object_get(o, "lost_ns")), 42);
	assert_true(json_integer_value(json_object_get(o, "switches")) == INT64_MAX);
	/* a family adds to what is there: record's cpu_unclaimed keeps its other members */
	json_object_set_new(json_object_get(o, "cpu_unclaimed"), "share", json_real(0.5));
	assert_int_equal(hc_counters__to_json(&c, HC_F_SCHEDULER, o), 0);
	assert_non_null(json_object_get(json_object_get(o, "cpu_unclaimed"), "share"));
	/* a path through a non-object is refused, nothing overwritten */
	json_object_set_new(o, "intervals", json_integer(1));
	assert_int_equal(hc_counters__to_json(&c, HC_F_SCHEDULER, o), -EINVAL);
	assert_int_equal(json_integer_value(json_object_get(o, "intervals")), 1);
	json_decref(o);
}

static __attribute__((noinline)) char *metrics_text(const struct hc_counters *c, uint32_t families)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(hc_counters__write_metrics(c, families, f), 0);
	fclose(f);
	return buf;
}

static void test_metrics_text(void **state)
{
	struct hc_counters c = {0};
	char *t;
	const char *lost, *store;

	(void)state;
	c.v[HC_C_LOST_RINGBUF_FULL] = 3;
	c.v[HC_C_STORE_ERRORS] = 5;
	c.v[HC_C_SCHED_OFF_CPU_NS] = 1500000001;
	t = metrics_text(&c, HC_F_BIT(HC_F_LOST) | HC_F_BIT(HC_F_SCHEDULER) | HC_F_BIT(HC_F_STORE));
	assert_non_null(strstr(t, "hotcold_lost_total{reason=\"ringbuf_full\"} 3\n"));
	assert_non_null(strstr(t, "hotcold_off_cpu_seconds_total 1.500000001\n"));
	/* one HELP per series, its samples together though the store's is listed far below */
	lost = strstr(t, "# TYPE hotcold_lost_total counter\n");
	assert_non_null(lost);
	assert_null(strstr(lost + 1, "# TYPE hotcold_lost_total"));
	store = strstr(t, "hotcold_lost_total{reason=\"store_error\"} 5\n");
	assert_non_null(store);
	assert_true(strstr(t, "# TYPE hotcold_lost_seconds_total") > store);
	/* families not asked for are absent */
	assert_null(strstr(t, "hotcold_lock_contentions_total"));
	free(t);
}

/* docs/counters.md carries the table generated from the list, exactly. */
static void test_doc_table(void **state)
{
	char *gen = NULL, *doc = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&gen, &len);
	long n;

	(void)state;
	assert_non_null(f);
	assert_int_equal(hc_counters__write_doc_table(f), 0);
	fclose(f);
	f = fopen(HC_DOCS_DIR "/counters.md", "re");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	doc = calloc(1, (size_t)n + 1);
	assert_non_null(doc);
	assert_int_equal(fread(doc, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	if (!strstr(doc, gen)) {
		f = fopen("counters-table.md.actual", "w");
		if (f) {
			fputs(gen, f);
			fclose(f);
		}
		fail_msg("docs/counters.md lacks the table profile/counters.def gives: the table "
			 "is in counters-table.md.actual (the test's directory); paste it in");
	}
	free(gen);
	free(doc);
}

int run_counters_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys_unique), cmocka_unit_test(test_metric_names),
		cmocka_unit_test(test_json_nested), cmocka_unit_test(test_metrics_text),
		cmocka_unit_test(test_doc_table),
	};

	return cmocka_run_group_tests_name("counters", tests, NULL, NULL);
}
