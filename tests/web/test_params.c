// SPDX-License-Identifier: GPL-2.0-only
/* web/params as tables: every parameter's grammar, the time forms, Host, --listen, and the
 * assembly of a query (defaults, unknown/duplicate parameters, from >= to, slot limit). */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <string.h>

#include "tests.h"
#include "web/params.h"

#define S 1000000000ll
#define MS 1000000ll
/* 2026-11-22T10:00:00Z: the request's arrival in these tables */
#define NOW (1795341600ll * S)

struct time_case {
	const char *s;
	int err;
	int64_t ns;
};

static const struct time_case time_cases[] = {
	/* now and relative */
	{"now", 0, NOW},
	{"-30s", 0, NOW - 30 * S},
	{"-5m", 0, NOW - 300 * S},
	{"-1h", 0, NOW - 3600 * S},
	{"-500ms", 0, NOW - 500 * MS},
	{"-30", 0, NOW - 30 * S}, /* a bare duration is seconds */
	{"-1d", 0, NOW - 86400 * S},
	{"-31d", -ERANGE, 0}, /* hc_duration__parse: at most 30 days */
	{"-0s", -EDOM, 0},
	{"-", -EINVAL, 0},
	{"- 30s", -EINVAL, 0},
	{"-+30s", -EINVAL, 0},
	{"--30s", -EINVAL, 0},
	{"-30x", -EINVAL, 0},
	{"+30s", -EINVAL, 0},
	{"30s", -EINVAL, 0},
	{"NOW", -EINVAL, 0},
	{"now ", -EINVAL, 0},
	{"", -EINVAL, 0},
	/* unix milliseconds */
	{"1795341600000", 0, NOW},
	{"0", 0, 0},
	{"1", 0, MS},
	{"9223372036854", 0, 9223372036854ll * MS},
	{"9223372036855", -ERANGE, 0},
	{"99999999999999999999999", -ERANGE, 0},
	{"1795341600000.5", -EINVAL, 0},
	{"1e12", -EINVAL, 0},
	{" 1795341600000", -EINVAL, 0},
	/* RFC 3339 */
	{"2026-11-22T10:00:00Z", 0, NOW},
	{"2026-11-22t10:00:00z", 0, NOW},
	{"2026-11-22T11:00:00.250+01:00", 0, NOW + 250 * MS},
	{"2026-11-22T11:00:00.250 01:00", 0, NOW + 250 * MS}, /* '+' after form decoding */
	{"2026-11-22T04:30:00-05:30", 0, NOW},
	{"2026-11-22T10:00:00+00:00", 0, NOW},
	{"2026-11-22T10:00:00-00:00", 0, NOW},
	{"2026-11-22T10:00:00.1Z", 0, NOW + 100 * MS},
	{"2026-11-22T10:00:00.000000001Z", 0, NOW + 1},
	{"2026-11-22T10:00:00.123456789Z", 0, NOW + 123456789},
	{"1970-01-01T00:00:00Z", 0, 0},
	{"2024-02-29T23:59:59Z", 0, 1709251199ll * S},
	{"2000-03-01T00:00:00-05:30", 0, 951888600ll * S},
	{"2016-12-31T23:59:60Z", 0, 1483228800ll * S}, /* leap second: the next one */
	{"2262-04-11T23:47:16.854775807Z", 0, INT64_MAX},
	{"2262-04-11T23:47:16.854775808Z", -ERANGE, 0},
	{"2262-04-11T23:47:17Z", -ERANGE, 0},
	{"9999-12-31T23:59:59Z", -ERANGE, 0},
	{"1969-12-31T23:59:59Z", -ERANGE, 0},
	{"1970-01-01T00:30:00+01:00", -ERANGE, 0},
	{"2023-02-29T00:00:00Z", -ERANGE, 0},
	{"2100-02-29T00:00:00Z", -ERANGE, 0},
	{"2026-13-01T00:00:00Z", -ERANGE, 0},
	{"2026-00-01T00:00:00Z", -ERANGE, 0},
	{"2026-04-31T00:00:00Z", -ERANGE, 0},
	{"2026-04-00T00:00:00Z", -ERANGE, 0},
	{"2026-11-22T24:00:00Z", -ERANGE, 0},
	{"2026-11-22T10:60:00Z", -ERANGE, 0},
	{"2026-11-22T10:00:61Z", -ERANGE, 0},
	{"2026-11-22T10:00:00+24:00", -ERANGE, 0},
	{"2026-11-22T10:00:00+01:60", -ERANGE, 0},
	{"2026-11-22T10:00:00", -EINVAL, 0}, /* no offset: ambiguous */
	{"2026-11-22 10:00:00Z", -EINVAL, 0},
	{"2026-11-22T10:00Z", -EINVAL, 0},
	{"2026-11-22", -EINVAL, 0},
	{"2026-11-22T10:00:00.Z", -EINVAL, 0},
	{"2026-11-22T10:00:00.1234567891Z", -EINVAL, 0},
	{"2026-11-22T10:00:00+0100", -EINVAL, 0},
	{"2026-11-22T10:00:00+1:00", -EINVAL, 0},
	{"2026-11-22T10:00:00ZZ", -EINVAL, 0},
	{"2026-11-22T10:00:00Z ", -EINVAL, 0},
	{"26-11-22T10:00:00Z", -EINVAL, 0},
	{"2026-1-22T10:00:00Z", -EINVAL, 0},
	{"2026-11-22T10:00:00UTC", -EINVAL, 0},
	{"yesterday", -EINVAL, 0},
};

static void test_time(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(time_cases); i++) {
		const struct time_case *c = &time_cases[i];
		char why[256] = "";
		int64_t ns = -42;
		int err;

		err = hc_param__time(c->s, NOW, &ns, why, sizeof(why));
		if (err != c->err || (!err && ns != c->ns))
			fail_msg("'%s': got %d (%s) %lld, want %d %lld", c->s, err, why,
				 (long long)ns, c->err, (long long)c->ns);
		if (err) {
			assert_true(strlen(why) > 0);
			assert_int_equal(ns, -42); /* untouched on failure */
		}
	}
}

/* A relative time cannot reach before the epoch. */
static void test_time_before_epoch(void **state)
{
	char why[128];
	int64_t ns;

	(void)state;
	assert_int_equal(hc_param__time("-1h", 10 * S, &ns, why, sizeof(why)), -ERANGE);
	assert_int_equal(hc_param__time("-10s", 10 * S, &ns, why, sizeof(why)), 0);
	assert_int_equal(ns, 0);
}

struct id_case {
	const char *s;
	int err;
	uint32_t v;
};

static const struct id_case id_cases[] = {
	{"1", 0, 1},
	{"4242", 0, 4242},
	{"2147483647", 0, INT_MAX},
	{"007", 0, 7},
	{"0", -ERANGE, 0},
	{"2147483648", -ERANGE, 0},
	{"99999999999999999999", -ERANGE, 0},
	{"-1", -EINVAL, 0},
	{"+1", -EINVAL, 0},
	{" 1", -EINVAL, 0},
	{"1 ", -EINVAL, 0},
	{"0x10", -EINVAL, 0},
	{"1e3", -EINVAL, 0},
	{"", -EINVAL, 0},
	{"abc", -EINVAL, 0},
};

static void test_id(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(id_cases); i++) {
		char why[128] = "";
		uint32_t v = 0;
		int err = hc_param__id(id_cases[i].s, &v, why, sizeof(why));

		if (err != id_cases[i].err || (!err && v != id_cases[i].v))
			fail_msg("'%s': got %d (%s) %u", id_cases[i].s, err, why, v);
	}
}

static void test_comm(void **state)
{
	static const char *const good[] = {
		"a",	       "postgres", "123456789012345", "kworker/0:1H", "name with space",
		"caf\xc3\xa9", "\xff\xfe"};
	static const char *const bad[] = {"",	  "1234567890123456", "tab\there",
					  "nl\n", "del\x7f",	      "esc\x1b["};
	char why[128];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(good); i++)
		if (hc_param__comm(good[i], why, sizeof(why)))
			fail_msg("'%s' refused: %s", good[i], why);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		if (!hc_param__comm(bad[i], why, sizeof(why)))
			fail_msg("'%s' accepted", bad[i]);
}

static void test_kind(void **state)
{
	enum hc_api_kind k;
	char why[128];

	(void)state;
	assert_int_equal(hc_param__kind("all", &k, why, sizeof(why)), 0);
	assert_int_equal(k, HC_API_KIND_ALL);
	assert_int_equal(hc_param__kind("on", &k, why, sizeof(why)), 0);
	assert_int_equal(k, HC_API_KIND_ON);
	assert_int_equal(hc_param__kind("off", &k, why, sizeof(why)), 0);
	assert_int_equal(k, HC_API_KIND_OFF);
	assert_int_equal(hc_param__kind("ON", &k, why, sizeof(why)), -EINVAL);
	assert_int_equal(hc_param__kind("", &k, why, sizeof(why)), -EINVAL);
	assert_int_equal(hc_param__kind("offcpu", &k, why, sizeof(why)), -EINVAL);
	assert_int_equal(hc_param__kind("on ", &k, why, sizeof(why)), -EINVAL);
	assert_non_null(strstr(why, "all, on or off"));
}

static void test_max_nodes(void **state)
{
	char why[128];
	size_t v;

	(void)state;
	assert_int_equal(hc_param__max_nodes("1", &v, why, sizeof(why)), 0);
	assert_int_equal(v, 1);
	assert_int_equal(hc_param__max_nodes("1000000", &v, why, sizeof(why)), 0);
	assert_int_equal(v, HC_API_MAX_MAX_NODES);
	assert_int_equal(hc_param__max_nodes("1000001", &v, why, sizeof(why)), -ERANGE);
	assert_int_equal(hc_param__max_nodes("0", &v, why, sizeof(why)), -ERANGE);
	assert_int_equal(hc_param__max_nodes("-5", &v, why, sizeof(why)), -EINVAL);
	assert_int_equal(hc_param__max_nodes("10k", &v, why, sizeof(why)), -EINVAL);
	assert_int_equal(hc_param__max_nodes("", &v, why, sizeof(why)), -EINVAL);
}

static void test_step(void **state)
{
	static const struct {
		const char *s;
		int err;
		uint64_t ns;
	} cases[] = {
		{"1s", 0, S},	       {"1", 0, S},
		{"10s", 0, 10 * S},    {"1m", 0, 60 * S},
		{"2h", 0, 7200 * S},   {"1000ms", 0, S},
		{"500ms", -EINVAL, 0}, {"1500ms", -EINVAL, 0},
		{"0s", -EDOM, 0},      {"-1s", -EINVAL, 0},
		{"+1s", -EINVAL, 0},   {" 1s", -EINVAL, 0},
		{"1y", -EINVAL, 0},    {"31d", -ERANGE, 0},
		{"", -EINVAL, 0},
	};
	char why[128];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		uint64_t ns = 0;
		int err = hc_param__step(cases[i].s, &ns, why, sizeof(why));

		if (err != cases[i].err || (!err && ns != cases[i].ns))
			fail_msg("'%s': got %d %llu", cases[i].s, err, (unsigned long long)ns);
	}
}

static void test_hist_name(void **state)
{
	char long_ok[65], long_bad[66];

	(void)state;
	memset(long_ok, 'a', 64);
	long_ok[64] = '\0';
	memset(long_bad, 'a', 65);
	long_bad[65] = '\0';
	assert_true(hc_param__hist_name_ok("offcpu_us"));
	assert_true(hc_param__hist_name_ok("_"));
	assert_true(hc_param__hist_name_ok(long_ok));
	assert_false(hc_param__hist_name_ok(long_bad));
	assert_false(hc_param__hist_name_ok(""));
	assert_false(hc_param__hist_name_ok("OffCPU"));
	assert_false(hc_param__hist_name_ok("offcpu_us/"));
	assert_false(hc_param__hist_name_ok("../etc"));
	assert_false(hc_param__hist_name_ok("p99"));
	assert_false(hc_param__hist_name_ok("a-b"));
}

static void test_unescape(void **state)
{
	static const struct {
		const char *in;
		int err;
		const char *out;
	} cases[] = {
		{"plain", 0, "plain"},	     {"a%20b", 0, "a b"},
		{"%2B01%3a00", 0, "+01:00"}, {"%e2%82%ac", 0, "\xe2\x82\xac"},
		{"%", -EINVAL, NULL},	     {"%2", -EINVAL, NULL},
		{"%zz", -EINVAL, NULL},	     {"%%41", -EINVAL, NULL},
		{"a%00b", -EINVAL, NULL},    {"", 0, ""},
	};
	char buf[64], why[64];

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int err;

		strcpy(buf, cases[i].in);
		err = hc_param__unescape(buf, why, sizeof(why));
		if (err != cases[i].err || (!err && strcmp(buf, cases[i].out)))
			fail_msg("'%s': got %d '%s'", cases[i].in, err, buf);
	}
}

static void test_host(void **state)
{
	static const struct {
		const char *host, *listen;
		bool ok;
	} cases[] = {
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"127.0.0.1", "127.0.0.1:8080", true},
		{"localhost", "127.0.0.1:8080", true},
		{"localhost:8080", "127.0.0.1:8080", true},
		{"LocalHost:8080", "127.0.0.1:8080", true},
		{"[::1]", "127.0.0.1:8080", true},
		{"[::1]:8080", "127.0.0.1:8080", true},
		{"[::1]:8080", "[::1]:8080", true},
		{"localhost:8080", "[::1]:8080", true},
		{"192.168.1.5:9000", "192.168.1.5:9000", true},
		{"localhost:9000", "192.168.1.5:9000", true},
		{"[::ABCD]:80", "[::abcd]:80", true},
		/* refused */
		{"localhost:8081", "127.0.0.1:8080", false},
		{"localhost:08080", "127.0.0.1:8080", false},
		{"localhost:", "127.0.0.1:8080", false},
		{"127.0.0.1:80", "127.0.0.1:8080", false},
		{"192.168.1.5", "192.168.1.5:9000",
		 false}, /* not a loopback name: needs the port */
		{"evil.example", "127.0.0.1:8080", false},
		{"evil.example:8080", "127.0.0.1:8080", false},
		{"localhost.evil.example", "127.0.0.1:8080", false},
		{"localhost.", "127.0.0.1:8080", false},
		{"localhostx", "127.0.0.1:8080", false},
		{"127.0.0.2:8080", "127.0.0.1:8080", false},
		{"127.1:8080", "127.0.0.1:8080", false},
		{"[::1", "127.0.0.1:8080", false},
		{"::1", "127.0.0.1:8080", false},
		{"0.0.0.0:8080", "127.0.0.1:8080", false},
		{"", "127.0.0.1:8080", false},
		{NULL, "127.0.0.1:8080", false},
		{"localhost:8080 ", "127.0.0.1:8080", false},
		{"user@localhost:8080", "127.0.0.1:8080", false},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		if (hc_host__allowed(cases[i].host, cases[i].listen) != cases[i].ok)
			fail_msg("Host '%s' vs %s: want %s",
				 cases[i].host ? cases[i].host : "(none)", cases[i].listen,
				 cases[i].ok ? "allowed" : "refused");
}

static void test_listen_spec(void **state)
{
	static const struct {
		const char *spec;
		int err;
		const char *canon; /* hc_listen__format of the parse */
	} cases[] = {
		{NULL, 0, "127.0.0.1:8080"},
		{"", 0, "127.0.0.1:8080"},
		{"127.0.0.1:8080", 0, "127.0.0.1:8080"},
		{"127.0.0.1:0", 0, "127.0.0.1:0"},
		{"0.0.0.0:65535", 0, "0.0.0.0:65535"},
		{"localhost:9", 0, "127.0.0.1:9"},
		{"[::1]:8080", 0, "[::1]:8080"},
		{"[::]:80", 0, "[::]:80"},
		{"[0:0:0:0:0:0:0:1]:80", 0, "[::1]:80"},
		{"[::ffff:127.0.0.1]:80", 0, "[::ffff:127.0.0.1]:80"},
		{"127.0.0.1", -EINVAL, NULL},
		{"127.0.0.1:", -EINVAL, NULL},
		{"127.0.0.1:65536", -EINVAL, NULL},
		{"127.0.0.1:-1", -EINVAL, NULL},
		{"127.0.0.1:80a", -EINVAL, NULL},
		{"127.0.0.1: 80", -EINVAL, NULL},
		{":8080", -EINVAL, NULL},
		{"127.1:8080", -EINVAL, NULL},
		{"256.0.0.1:8080", -EINVAL, NULL},
		{"example.com:8080", -EINVAL, NULL},
		{"::1:8080", -EINVAL, NULL},
		{"[::1]8080", -EINVAL, NULL},
		{"[::1:8080", -EINVAL, NULL},
		{"[fe80::1%eth0]:8080", -EINVAL, NULL},
		{"[127.0.0.1]:8080", -EINVAL, NULL},
		{"8080", -EINVAL, NULL},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct sockaddr_storage ss;
		socklen_t len = 0;
		char why[256] = "", canon[HC_LISTEN_ADDR_MAX];
		int err = hc_listen__parse(cases[i].spec, &ss, &len, why, sizeof(why));

		if (err != cases[i].err)
			fail_msg("'%s': got %d (%s), want %d", cases[i].spec, err, why,
				 cases[i].err);
		if (err) {
			assert_true(strlen(why) > 0);
			continue;
		}
		assert_int_equal(
			hc_listen__format((struct sockaddr *)&ss, len, canon, sizeof(canon)), 0);
		assert_string_equal(canon, cases[i].canon);
	}
}

/* Query assembly ------------------------------------------------------------------------- */

#define KV(k, v)         \
	{                \
		(k), (v) \
	}

static int parse(unsigned int accepted, const struct hc_param_kv *kv, size_t n,
		 struct hc_api_query *q, char *why)
{
	return hc_params__parse(accepted, kv, n, NOW, q, why, 256);
}

static void test_query_defaults(void **state)
{
	struct hc_api_query q;
	char why[256];

	(void)state;
	assert_int_equal(parse(HC_P_PROFILE, NULL, 0, &q, why), 0);
	assert_int_equal(q.to_ns, NOW);
	assert_int_equal(q.from_ns, NOW - 60 * S);
	assert_false(q.has_pid);
	assert_false(q.has_tid);
	assert_null(q.comm);
	assert_int_equal(q.kind, HC_API_KIND_ALL);
	assert_int_equal(q.max_nodes, HC_API_DEFAULT_MAX_NODES);
	assert_int_equal(q.step_ns, 0);

	/* no step: 0, the backend picks one for the range */
	assert_int_equal(parse(HC_P_TIMELINE, NULL, 0, &q, why), 0);
	assert_int_equal(q.step_ns, 0);

	/* only `to`: from is 60 s before it */
	{
		const struct hc_param_kv kv[] = {KV("to", "-10s")};

		assert_int_equal(parse(HC_P_PROFILE, kv, 1, &q, why), 0);
		assert_int_equal(q.to_ns, NOW - 10 * S);
		assert_int_equal(q.from_ns, NOW - 70 * S);
	}
	/* only `from`: to is now */
	{
		const struct hc_param_kv kv[] = {KV("from", "-5m")};

		assert_int_equal(parse(HC_P_PROFILE, kv, 1, &q, why), 0);
		assert_int_equal(q.from_ns, NOW - 300 * S);
		assert_int_equal(q.to_ns, NOW);
	}
}

static void test_query_all(void **state)
{
	const struct hc_param_kv kv[] = {
		KV("kind", "off"),
		KV("comm", "postgres"),
		KV("from", "2026-11-22T09:59:00Z"),
		KV("to", "1795341600000"),
		KV("pid", "42"),
		KV("tid", "43"),
		KV("max_nodes", "500"),
	};
	struct hc_api_query q;
	char why[256];

	(void)state;
	assert_int_equal(parse(HC_P_PROFILE, kv, ARRAY_SIZE(kv), &q, why), 0);
	assert_int_equal(q.from_ns, NOW - 60 * S);
	assert_int_equal(q.to_ns, NOW);
	assert_true(q.has_pid);
	assert_int_equal(q.pid, 42);
	assert_true(q.has_tid);
	assert_int_equal(q.tid, 43);
	assert_string_equal(q.comm, "postgres");
	assert_ptr_equal(q.comm, kv[1].value);
	assert_int_equal(q.kind, HC_API_KIND_OFF);
	assert_int_equal(q.max_nodes, 500);
}

struct bad_query {
	unsigned int accepted;
	struct hc_param_kv kv[3];
	size_t n;
	const char *why_prefix; /* the parameter named first */
};

static const struct bad_query bad_queries[] = {
	{HC_P_PROFILE, {KV("frm", "-5m")}, 1, "frm: unknown parameter"},
	{HC_P_PROFILE, {KV("step", "1s")}, 1, "step: unknown parameter"},
	{HC_P_HISTOGRAM, {KV("kind", "on")}, 1, "kind: unknown parameter"},
	{HC_P_HISTOGRAM, {KV("tid", "1")}, 1, "tid: unknown parameter"},
	{HC_P_TIMELINE, {KV("pid", "1")}, 1, "pid: unknown parameter"},
	{0, {KV("from", "now")}, 1, "from: unknown parameter"},
	{HC_P_PROFILE, {KV("", "x")}, 1, ": unknown parameter"},
	{HC_P_PROFILE, {KV("pid", "1"), KV("pid", "2")}, 2, "pid: given more than once"},
	{HC_P_PROFILE, {KV("pid", "1"), KV("pid", "1")}, 2, "pid: given more than once"},
	{HC_P_PROFILE, {KV("from", "-1m"), KV("from", "-2m")}, 2, "from: given more"},
	{HC_P_PROFILE, {KV("pid", NULL)}, 1, "pid: no value"},
	{HC_P_PROFILE, {KV("comm", "")}, 1, "comm: no value"},
	{HC_P_PROFILE, {KV("pid", "0")}, 1, "pid: "},
	{HC_P_PROFILE, {KV("tid", "x")}, 1, "tid: "},
	{HC_P_PROFILE, {KV("comm", "1234567890123456")}, 1, "comm: "},
	{HC_P_PROFILE, {KV("kind", "both")}, 1, "kind: "},
	{HC_P_PROFILE, {KV("max_nodes", "0")}, 1, "max_nodes: "},
	{HC_P_PROFILE, {KV("from", "yesterday")}, 1, "from: "},
	{HC_P_PROFILE, {KV("to", "soon")}, 1, "to: "},
	{HC_P_PROFILE, {KV("from", "now")}, 1, "from: must be before to"},
	{HC_P_PROFILE, {KV("from", "-1m"), KV("to", "-1m")}, 2, "from: must be before to"},
	{HC_P_PROFILE, {KV("from", "-1m"), KV("to", "-2m")}, 2, "from: must be before to"},
	{HC_P_TIMELINE, {KV("step", "500ms")}, 1, "step: "},
	{HC_P_TIMELINE, {KV("from", "-10001s"), KV("step", "1s")}, 2, "step: the range would have"},
	{HC_P_TIMELINE, {KV("from", "-20001s"), KV("step", "2s")}, 2, "step: the range"},
};

static void test_query_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad_queries); i++) {
		const struct bad_query *b = &bad_queries[i];
		struct hc_api_query q;
		char why[256] = "";
		int err = parse(b->accepted, b->kv, b->n, &q, why);

		if (err != -EINVAL || strncmp(why, b->why_prefix, strlen(b->why_prefix)))
			fail_msg("case %zu: got %d '%s', want -EINVAL '%s...'", i, err, why,
				 b->why_prefix);
	}
}

/* The slot limit is inclusive: exactly 10000 slots pass, a partial last slot counts. */
static void test_query_slots(void **state)
{
	const struct hc_param_kv ok[] = {KV("from", "-10000s")};
	const struct hc_param_kv ok2[] = {KV("from", "-20000s"), KV("step", "2s")};
	const struct hc_param_kv partial[] = {KV("from", "-20001s"), KV("step", "2")};
	struct hc_api_query q;
	char why[256];

	(void)state;
	assert_int_equal(parse(HC_P_TIMELINE, ok, 1, &q, why), 0);
	assert_int_equal(parse(HC_P_TIMELINE, ok2, 2, &q, why), 0);
	assert_int_equal(q.step_ns, 2 * S);
	assert_int_equal(parse(HC_P_TIMELINE, partial, 2, &q, why), -EINVAL);
}

int run_params_tests(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),	    cmocka_unit_test(test_time_before_epoch),
		cmocka_unit_test(test_id),	    cmocka_unit_test(test_comm),
		cmocka_unit_test(test_kind),	    cmocka_unit_test(test_max_nodes),
		cmocka_unit_test(test_step),	    cmocka_unit_test(test_hist_name),
		cmocka_unit_test(test_unescape),    cmocka_unit_test(test_host),
		cmocka_unit_test(test_listen_spec), cmocka_unit_test(test_query_defaults),
		cmocka_unit_test(test_query_all),   cmocka_unit_test(test_query_bad),
		cmocka_unit_test(test_query_slots),
	};

	return cmocka_run_group_tests_name("web/params", tests, NULL, NULL);
}
