// SPDX-License-Identifier: GPL-2.0-only
/* web/params: pure parsers for query parameters, the Host header and --listen. */
#include "web/params.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/time.h"
#include "base/timespec.h"
#include "base/why.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Digits only (no sign, no space), at least one, value <= max. */
static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -EINVAL;
	for (; *s; s++) {
		if (!is_digit(*s))
			return -EINVAL;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* --listen ---------------------------------------------------------------------------------- */

int hc_listen__parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len, char *why,
		     size_t why_len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *port_s;
	size_t host_len;
	uint64_t port;

	if (!spec || !*spec)
		spec = HC_LISTEN_DEFAULT;
	colon = strrchr(spec, ':');
	if (!colon)
		return hc_why(-EINVAL, why, why_len,
			      "'%s' is not ADDR:PORT (e.g. 127.0.0.1:8080 or [::1]:8080)", spec);
	port_s = colon + 1;
	if (parse_uint(port_s, 65535, &port))
		return hc_why(-EINVAL, why, why_len, "'%s': the port must be a number 0..65535",
			      spec);
	host_len = (size_t)(colon - spec);
	memset(ss, 0, sizeof(*ss));
	if (host_len >= 2 && spec[0] == '[' && spec[host_len - 1] == ']') {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		if (host_len - 2 >= sizeof(host))
			goto bad_addr;
		memcpy(host, spec + 1, host_len - 2);
		host[host_len - 2] = '\0';
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			goto bad_addr;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*in6);
		return 0;
	}
	if (host_len >= sizeof(host))
		goto bad_addr;
	memcpy(host, spec, host_len);
	host[host_len] = '\0';
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	{
		struct sockaddr_in *in4 = (struct sockaddr_in *)ss;

		/* inet_pton takes dotted quads only (no "127.1", no octal): what we want. */
		if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
			goto bad_addr;
		in4->sin_family = AF_INET;
		in4->sin_port = htons((uint16_t)port);
		*len = sizeof(*in4);
	}
	return 0;

bad_addr:
	return hc_why(-EINVAL, why, why_len,
		      "'%s': the address must be an IPv4 address, [IPv6 address] or localhost "
		      "(no host names)",
		      spec);
}

int hc_listen__format(const struct sockaddr *sa, socklen_t len, char *out, size_t out_len)
{
	char host[INET6_ADDRSTRLEN];
	int n;

	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

		if (!inet_ntop(AF_INET, &in4->sin_addr, host, sizeof(host)))
			return -errno;
		n = snprintf(out, out_len, "%s:%u", host, ntohs(in4->sin_port));
	} else if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		if (!inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)))
			return -errno;
		n = snprintf(out, out_len, "[%s]:%u", host, ntohs(in6->sin6_port));
	} else {
		return -EAFNOSUPPORT;
	}
	if (n < 0 || (size_t)n >= out_len)
		return -ENOSPC;
	return 0;
}

/* Host ---------------------------------------------------------------------------------------- */

bool hc_host__allowed(const char *host, const char *listen_addr)
{
	static const char *const loopback[] = {"localhost", "127.0.0.1", "[::1]"};
	const char *port;

	if (!host || !*host || !listen_addr)
		return false;
	if (!strcasecmp(host, listen_addr))
		return true;
	port = strrchr(listen_addr, ':');
	if (!port)
		return false;
	port++;
	for (size_t i = 0; i < sizeof(loopback) / sizeof(loopback[0]); i++) {
		size_t n = strlen(loopback[i]);

		if (strncasecmp(host, loopback[i], n))
			continue;
		if (host[n] == '\0')
			return true;
		if (host[n] == ':' && !strcmp(host + n + 1, port))
			return true;
	}
	return false;
}

/* Times --------------------------------------------------------------------------------------- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned int m, unsigned int d)
{
	int64_t era;
	unsigned int yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned int)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool leap(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* n digits at *p -> *v; advances *p. */
static bool take_digits(const char **p, int n, unsigned int *v)
{
	unsigned int x = 0;

	for (int i = 0; i < n; i++) {
		if (!is_digit((*p)[i]))
			return false;
		x = x * 10 + (unsigned int)((*p)[i] - '0');
	}
	*p += n;
	*v = x;
	return true;
}

static int parse_rfc3339(const char *s, int64_t *out_ns)
{
	static const unsigned int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	unsigned int year, mon, day, hour, min, sec, oh = 0, om = 0;
	const char *p = s;
	int64_t frac_ns = 0, secs, off_s = 0;
	int sign = 0;

	if (!take_digits(&p, 4, &year) || *p++ != '-' || !take_digits(&p, 2, &mon) || *p++ != '-' ||
	    !take_digits(&p, 2, &day) || (*p != 'T' && *p != 't'))
		return -EINVAL;
	p++;
	if (!take_digits(&p, 2, &hour) || *p++ != ':' || !take_digits(&p, 2, &min) || *p++ != ':' ||
	    !take_digits(&p, 2, &sec))
		return -EINVAL;
	if (*p == '.') {
		int64_t scale = HC_NSEC_PER_SEC;
		int n = 0;

		p++;
		while (is_digit(*p)) {
			if (++n > 9)
				return -EINVAL;
			scale /= 10;
			frac_ns += (*p - '0') * scale;
			p++;
		}
		if (n == 0)
			return -EINVAL;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == ' ' || *p == '-') {
		sign = *p == '-' ? -1 : 1;
		p++;
		if (!take_digits(&p, 2, &oh) || *p++ != ':' || !take_digits(&p, 2, &om))
			return -EINVAL;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	if (mon < 1 || mon > 12 || day < 1)
		return -ERANGE;
	if (day > mdays[mon - 1] + (mon == 2 && leap(year)))
		return -ERANGE;
	/* second 60: a leap second, counted as the first second of the next minute (POSIX time
	 * has no leap seconds). */
	if (hour > 23 || min > 59 || sec > 60 || oh > 23 || om > 59)
		return -ERANGE;
	if (sign)
		off_s = sign * (int64_t)(oh * 3600 + om * 60);
	secs = days_from_civil(year, mon, day) * 86400 + hour * 3600 + min * 60 + sec - off_s;
	/* years 0000..9999 cannot overflow int64 seconds; ns can. */
	if (secs < 0 || secs > (INT64_MAX - frac_ns) / HC_NSEC_PER_SEC)
		return -ERANGE;
	*out_ns = secs * HC_NSEC_PER_SEC + frac_ns;
	return 0;
}

int hc_param__time(const char *s, int64_t now_ns, int64_t *out_ns, char *why, size_t why_len)
{
	char dwhy[128];
	uint64_t v;
	int err;

	if (!*s)
		return hc_why(-EINVAL, why, why_len, "empty time");
	if (!strcmp(s, "now")) {
		*out_ns = now_ns;
		return 0;
	}
	if (s[0] == '-') {
		/* hc_duration__parse would also take spaces and a '+' here: not in a URL. */
		if (!is_digit(s[1]))
			goto bad;
		err = hc_duration__parse(s + 1, &v, dwhy, sizeof(dwhy));
		if (err)
			return hc_why(err, why, why_len, "'%s': %s", s, dwhy);
		if (now_ns < 0 || v > (uint64_t)now_ns)
			return hc_why(-ERANGE, why, why_len, "'%s' is before 1970", s);
		*out_ns = now_ns - (int64_t)v;
		return 0;
	}
	err = parse_uint(s, UINT64_MAX, &v);
	if (err == 0 || err == -ERANGE) {
		if (err || v > (uint64_t)(INT64_MAX / HC_NSEC_PER_MSEC))
			return hc_why(-ERANGE, why, why_len, "'%s' milliseconds is out of range",
				      s);
		*out_ns = (int64_t)v * HC_NSEC_PER_MSEC;
		return 0;
	}
	err = parse_rfc3339(s, out_ns);
	if (err == -ERANGE)
		return hc_why(-ERANGE, why, why_len,
			      "'%s' is not a valid date and time (or not in 1970..2262)", s);
	if (err == 0)
		return 0;
bad:
	return hc_why(-EINVAL, why, why_len,
		      "'%s' is not a time: use RFC 3339 (2026-11-22T10:00:00Z), unix milliseconds, "
		      "-30s or now",
		      s);
}

/* The other parameters -------------------------------------------------------------------- */

int hc_param__id(const char *s, uint32_t *out, char *why, size_t why_len)
{
	uint64_t v;
	int err;

	err = parse_uint(s, INT_MAX, &v);
	if (err == -ERANGE || (!err && v == 0))
		return hc_why(-ERANGE, why, why_len, "'%s' is not in 1..%d", s, INT_MAX);
	if (err)
		return hc_why(-EINVAL, why, why_len, "'%s' is not a decimal number", s);
	*out = (uint32_t)v;
	return 0;
}

int hc_param__comm(const char *s, char *why, size_t why_len)
{
	size_t n = strlen(s);

	if (n == 0 || n > HC_API_COMM_MAX)
		return hc_why(-ERANGE, why, why_len, "a process name is 1..%d bytes, not %zu",
			      HC_API_COMM_MAX, n);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			return hc_why(-EINVAL, why, why_len, "control character 0x%02x", c);
	}
	return 0;
}

int hc_param__kind(const char *s, enum hc_api_kind *out, char *why, size_t why_len)
{
	if (!strcmp(s, "all"))
		*out = HC_API_KIND_ALL;
	else if (!strcmp(s, "on"))
		*out = HC_API_KIND_ON;
	else if (!strcmp(s, "off"))
		*out = HC_API_KIND_OFF;
	else
		return hc_why(-EINVAL, why, why_len, "'%s' is not all, on or off", s);
	return 0;
}

int hc_param__max_nodes(const char *s, size_t *out, char *why, size_t why_len)
{
	uint64_t v;
	int err;

	err = parse_uint(s, HC_API_MAX_MAX_NODES, &v);
	if (err == -ERANGE || (!err && v == 0))
		return hc_why(-ERANGE, why, why_len, "'%s' is not in 1..%d", s,
			      HC_API_MAX_MAX_NODES);
	if (err)
		return hc_why(-EINVAL, why, why_len, "'%s' is not a decimal number", s);
	*out = (size_t)v;
	return 0;
}

int hc_param__seconds(const char *s, uint64_t *out_ns, char *why, size_t why_len)
{
	uint64_t v;
	int err;

	err = parse_uint(s, HC_PARAM_MAX_SECONDS, &v);
	if (err == -ERANGE || (!err && v == 0))
		return hc_why(-ERANGE, why, why_len, "'%s' is not in 1..%d", s,
			      HC_PARAM_MAX_SECONDS);
	if (err)
		return hc_why(-EINVAL, why, why_len, "'%s' is not a whole number of seconds", s);
	*out_ns = v * HC_NSEC_PER_SEC;
	return 0;
}

int hc_param__step(const char *s, uint64_t *out_ns, char *why, size_t why_len)
{
	char dwhy[128];
	uint64_t v;
	int err;

	if (!is_digit(s[0]))
		return hc_why(-EINVAL, why, why_len, "'%s' is not a duration (e.g. 1s, 10s, 1m)",
			      s);
	err = hc_duration__parse(s, &v, dwhy, sizeof(dwhy));
	if (err)
		return hc_why(err, why, why_len, "%s", dwhy);
	if (v % HC_NSEC_PER_SEC)
		return hc_why(-EINVAL, why, why_len, "'%s' is not a whole number of seconds", s);
	*out_ns = v;
	return 0;
}

bool hc_param__hist_name_ok(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++) {
		if (n >= HC_HIST_NAME_MAX || !((s[n] >= 'a' && s[n] <= 'z') || s[n] == '_'))
			return false;
	}
	return n > 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hc_param__unescape(char *s, char *why, size_t why_len)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		int hi, lo;

		if (*r != '%') {
			*w++ = *r;
			continue;
		}
		hi = hexval(r[1]);
		lo = hi < 0 ? -1 : hexval(r[2]);
		if (hi < 0 || lo < 0)
			return hc_why(-EINVAL, why, why_len, "bad percent-encoding");
		if (hi == 0 && lo == 0)
			return hc_why(-EINVAL, why, why_len, "%%00 (a NUL byte)");
		*w++ = (char)(hi << 4 | lo);
		r += 2;
	}
	*w = '\0';
	return 0;
}

/* A request's parameters ------------------------------------------------------------------- */

static const struct {
	const char *name;
	enum hc_param_bit bit;
} param_names[] = {
	{"from", HC_P_FROM},
	{"to", HC_P_TO},
	{"pid", HC_P_PID},
	{"tid", HC_P_TID},
	{"comm", HC_P_COMM},
	{"kind", HC_P_KIND},
	{"max_nodes", HC_P_MAX_NODES},
	{"step", HC_P_STEP},
	{"seconds", HC_P_SECONDS},
};

int hc_params__parse(unsigned int accepted, const struct hc_param_kv *kv, size_t n, int64_t now_ns,
		     struct hc_api_query *q, char *why, size_t why_len)
{
	const char *from_s = NULL, *to_s = NULL, *step_s = NULL, *seconds_s = NULL;
	char pwhy[192];
	unsigned int seen = 0;
	int err;

	memset(q, 0, sizeof(*q));
	q->kind = HC_API_KIND_ALL;
	q->max_nodes = HC_API_DEFAULT_MAX_NODES;

	for (size_t i = 0; i < n; i++) {
		const char *key = kv[i].key, *val = kv[i].value;
		enum hc_param_bit bit = 0;

		for (size_t j = 0; j < sizeof(param_names) / sizeof(param_names[0]); j++) {
			if (!strcmp(key, param_names[j].name)) {
				bit = param_names[j].bit;
				break;
			}
		}
		if (!bit || !(accepted & bit)) {
			/* Echo at most 64 bytes of what the client sent: it may be anything. */
			return hc_why(-EINVAL, why, why_len,
				      "%.64s: unknown parameter for this path", key);
		}
		if (seen & bit)
			return hc_why(-EINVAL, why, why_len, "%s: given more than once", key);
		seen |= bit;
		if (!val || !*val)
			return hc_why(-EINVAL, why, why_len, "%s: no value", key);

		err = 0;
		switch (bit) {
		case HC_P_FROM:
			from_s = val;
			break;
		case HC_P_TO:
			to_s = val;
			break;
		case HC_P_STEP:
			step_s = val;
			break;
		case HC_P_SECONDS:
			seconds_s = val;
			break;
		case HC_P_PID:
			err = hc_param__id(val, &q->pid, pwhy, sizeof(pwhy));
			q->has_pid = !err;
			break;
		case HC_P_TID:
			err = hc_param__id(val, &q->tid, pwhy, sizeof(pwhy));
			q->has_tid = !err;
			break;
		case HC_P_COMM:
			err = hc_param__comm(val, pwhy, sizeof(pwhy));
			q->comm = err ? NULL : val;
			break;
		case HC_P_KIND:
			err = hc_param__kind(val, &q->kind, pwhy, sizeof(pwhy));
			break;
		case HC_P_MAX_NODES:
			err = hc_param__max_nodes(val, &q->max_nodes, pwhy, sizeof(pwhy));
			break;
		}
		if (err)
			return hc_why(-EINVAL, why, why_len, "%s: %s", key, pwhy);
	}

	if (accepted & HC_P_SECONDS) {
		q->last_ns = HC_PARAM_DEFAULT_SECONDS * HC_NSEC_PER_SEC;
		if (seconds_s && hc_param__seconds(seconds_s, &q->last_ns, pwhy, sizeof(pwhy)))
			return hc_why(-EINVAL, why, why_len, "seconds: %s", pwhy);
		q->to_ns = now_ns;
		q->from_ns = now_ns - (int64_t)q->last_ns;
		return 0;
	}
	q->to_ns = now_ns;
	if (to_s && hc_param__time(to_s, now_ns, &q->to_ns, pwhy, sizeof(pwhy)))
		return hc_why(-EINVAL, why, why_len, "to: %s", pwhy);
	if (from_s) {
		if (hc_param__time(from_s, now_ns, &q->from_ns, pwhy, sizeof(pwhy)))
			return hc_why(-EINVAL, why, why_len, "from: %s", pwhy);
	} else {
		q->from_ns = q->to_ns > (int64_t)HC_API_DEFAULT_RANGE_NS
				     ? q->to_ns - (int64_t)HC_API_DEFAULT_RANGE_NS
				     : 0;
	}
	if (q->from_ns >= q->to_ns)
		return hc_why(-EINVAL, why, why_len, "from: must be before to");

	if (accepted & HC_P_STEP) {
		uint64_t span = (uint64_t)(q->to_ns - q->from_ns);

		/* No step: 0, the backend picks one for the range (docs/api.md). */
		q->step_ns = 0;
		if (step_s && hc_param__step(step_s, &q->step_ns, pwhy, sizeof(pwhy)))
			return hc_why(-EINVAL, why, why_len, "step: %s", pwhy);
		if (q->step_ns && (span + q->step_ns - 1) / q->step_ns > HC_PARAM_MAX_SLOTS)
			return hc_why(-EINVAL, why, why_len,
				      "step: the range would have more than %d slots; use a larger "
				      "step or a shorter range",
				      HC_PARAM_MAX_SLOTS);
	}
	return 0;
}
