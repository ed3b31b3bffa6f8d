// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-params: the HTTP layer's input parsers (web/params.h). The input is up to three lines:
 *
 *	QUERY_STRING        key=value&key&... as after the '?' (raw: %XX and '+' not decoded)
 *	HOST                a Host header value
 *	LISTEN              a --listen ADDR:PORT
 *
 * The query is split and decoded the way web/server.c does (libmicrohttpd's '+' -> ' ', then
 * hc_param__unescape per key and value) and parsed for every route's parameter set; each value
 * also goes through each single-parameter parser.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sys/socket.h>

#include "web/params.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NSEC_PER_SEC 1000000000ll
#define NOW_NS (1795341600ll * NSEC_PER_SEC) /* 2026-11-22T10:00:00Z, as tests/web */
#define MAX_KV 16			     /* web/server.c's MAX_QUERY_PARAMS */

static const unsigned int routes[] = {
	HC_P_PROFILE, HC_P_HISTOGRAM, HC_P_TIMELINE, HC_P_GO_PPROF, HC_P_LOCKS, 0,
};

static bool points_into(const char *p, const struct hc_param_kv *kv, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p == kv[i].value)
			return true;
	return false;
}

/* What hc_params__parse promises of a query it accepts. */
static void check_query(unsigned int accepted, const struct hc_param_kv *kv, size_t n,
			const struct hc_api_query *q)
{
	if (q->from_ns >= q->to_ns)
		abort();
	if (!(accepted & HC_P_SECONDS) && q->from_ns < 0)
		abort();
	if (q->kind != HC_API_KIND_ALL && q->kind != HC_API_KIND_ON && q->kind != HC_API_KIND_OFF)
		abort();
	if (q->max_nodes < 1 || q->max_nodes > HC_API_MAX_MAX_NODES)
		abort();
	if ((q->has_pid && (q->pid == 0 || q->pid > INT32_MAX)) ||
	    (q->has_tid && (q->tid == 0 || q->tid > INT32_MAX)))
		abort();
	if (q->comm &&
	    (!points_into(q->comm, kv, n) || !q->comm[0] || strlen(q->comm) > HC_API_COMM_MAX))
		abort();
	if (accepted & HC_P_STEP) {
		uint64_t span = (uint64_t)(q->to_ns - q->from_ns);

		/* 0: no step given, the backend picks one for the range */
		if (q->step_ns &&
		    (q->step_ns < (uint64_t)NSEC_PER_SEC || q->step_ns % NSEC_PER_SEC ||
		     (span + q->step_ns - 1) / q->step_ns > HC_PARAM_MAX_SLOTS))
			abort();
	} else if (q->step_ns) {
		abort();
	}
	if (accepted & HC_P_SECONDS) {
		if (q->last_ns < (uint64_t)NSEC_PER_SEC ||
		    q->last_ns > HC_PARAM_MAX_SECONDS * (uint64_t)NSEC_PER_SEC ||
		    q->to_ns != NOW_NS || q->to_ns - q->from_ns != (int64_t)q->last_ns)
			abort();
	} else if (q->last_ns) {
		abort();
	}
}

/* Every single-value parser on one value; results only need to be self-consistent. */
static void check_value(const char *v)
{
	static const int64_t nows[] = {0, NSEC_PER_SEC, NOW_NS, INT64_MAX};
	enum hc_api_kind kind;
	char why[192];
	uint64_t u64;
	uint32_t id;
	int64_t ns;
	size_t sz;

	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++)
		if (hc_param__time(v, nows[i], &ns, why, sizeof(why)) == 0 && ns < 0)
			abort();
	if (hc_param__id(v, &id, why, sizeof(why)) == 0 && (id == 0 || id > INT32_MAX))
		abort();
	if (hc_param__comm(v, why, sizeof(why)) == 0 && (!v[0] || strlen(v) > HC_API_COMM_MAX))
		abort();
	if (hc_param__kind(v, &kind, why, sizeof(why)) == 0 && kind > HC_API_KIND_OFF)
		abort();
	if (hc_param__max_nodes(v, &sz, why, sizeof(why)) == 0 &&
	    (sz < 1 || sz > HC_API_MAX_MAX_NODES))
		abort();
	if (hc_param__step(v, &u64, why, sizeof(why)) == 0 &&
	    (u64 < (uint64_t)NSEC_PER_SEC || u64 % NSEC_PER_SEC))
		abort();
	if (hc_param__seconds(v, &u64, why, sizeof(why)) == 0 &&
	    (u64 < (uint64_t)NSEC_PER_SEC || u64 > HC_PARAM_MAX_SECONDS * (uint64_t)NSEC_PER_SEC))
		abort();
	if (hc_param__hist_name_ok(v) && (!v[0] || strlen(v) > HC_HIST_NAME_MAX))
		abort();
}

/* hc_param__unescape never lengthens its string; a failure leaves a reason. */
static int unescape(char *s)
{
	size_t before = strlen(s);
	char why[64] = "";
	int err;

	for (char *p = s; *p; p++)
		if (*p == '+')
			*p = ' ';
	err = hc_param__unescape(s, why, sizeof(why));
	if (err && (err != -EINVAL || !why[0]))
		abort();
	if (!err && strlen(s) > before)
		abort();
	return err;
}

static void fuzz_query(char *qs)
{
	struct hc_param_kv kv[MAX_KV];
	struct hc_api_query q;
	char why[256], *save = NULL, *tok;
	size_t n = 0;
	bool bad = false;

	for (tok = strtok_r(qs, "&", &save); tok; tok = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(tok, '=');

		if (n == MAX_KV)
			return; /* the server answers "too many query parameters" */
		if (eq)
			*eq++ = '\0';
		if (unescape(tok) || (eq && unescape(eq)))
			bad = true;
		kv[n].key = tok;
		kv[n].value = eq;
		n++;
	}
	for (size_t i = 0; i < n; i++) {
		check_value(kv[i].key);
		if (kv[i].value)
			check_value(kv[i].value);
	}
	if (bad)
		return; /* 400 before hc_params__parse */
	for (size_t r = 0; r < sizeof(routes) / sizeof(routes[0]); r++) {
		why[0] = '\0';
		if (hc_params__parse(routes[r], kv, n, NOW_NS, &q, why, sizeof(why)) == 0)
			check_query(routes[r], kv, n, &q);
		else if (!why[0])
			abort();
	}
}

static void fuzz_host_listen(const char *host, const char *listen)
{
	char why[256], canon[HC_LISTEN_ADDR_MAX], canon2[HC_LISTEN_ADDR_MAX];
	struct sockaddr_storage ss, ss2;
	socklen_t len, len2;

	if (hc_listen__parse(listen, &ss, &len, why, sizeof(why)))
		return;
	/* The canonical form parses back to the same address and is always an allowed Host. */
	if (hc_listen__format((struct sockaddr *)&ss, len, canon, sizeof(canon)))
		abort();
	if (hc_listen__parse(canon, &ss2, &len2, why, sizeof(why)) || len2 != len ||
	    memcmp(&ss, &ss2, len))
		abort();
	if (hc_listen__format((struct sockaddr *)&ss2, len2, canon2, sizeof(canon2)) ||
	    strcmp(canon, canon2))
		abort();
	if (!hc_host__allowed(canon, canon) || hc_host__allowed(NULL, canon) ||
	    hc_host__allowed("", canon))
		abort();
	(void)hc_host__allowed(host, canon);
	(void)hc_host__allowed(host, listen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + 1), *host = NULL, *listen = NULL, *nl;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	nl = strchr(buf, '\n');
	if (nl) {
		*nl = '\0';
		host = nl + 1;
		nl = strchr(host, '\n');
		if (nl) {
			*nl = '\0';
			listen = nl + 1;
			nl = strchr(listen, '\n');
			if (nl)
				*nl = '\0';
		}
	}
	fuzz_host_listen(host, listen);
	fuzz_query(buf);
	free(buf);
	return 0;
}
