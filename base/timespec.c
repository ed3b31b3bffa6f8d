// SPDX-License-Identifier: GPL-2.0-only
#include "base/timespec.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/why.h"

#define NSEC_PER_SEC 1000000000ull
#define HC_MAX_DURATION_NS (30ull * 86400 * NSEC_PER_SEC)

struct unit {
	const char *name;
	uint64_t ns; /* 0: hertz */
};

static const struct unit units[] = {
	{"ns", 1},
	{"nsec", 1},
	{"us", 1000},
	{"usec", 1000},
	{"ms", 1000000},
	{"msec", 1000000},
	{"s", NSEC_PER_SEC},
	{"sec", NSEC_PER_SEC},
	{"m", 60 * NSEC_PER_SEC},
	{"min", 60 * NSEC_PER_SEC},
	{"h", 3600 * NSEC_PER_SEC},
	{"hour", 3600 * NSEC_PER_SEC},
	{"d", 86400 * NSEC_PER_SEC},
	{"day", 86400 * NSEC_PER_SEC},
	{"hz", 0},
};

/* Split "123suffix" into a number and a unit. `bare` is the unit of a bare number. */
static int parse_spec(const char *spec, bool allow_hz, const struct unit *bare, uint64_t *n,
		      const struct unit **unit, char *why, size_t why_len)
{
	const char *p = spec;
	uint64_t v = 0;

	if (!spec || !*spec)
		return hc_why(-EINVAL, why, why_len, "empty value");
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '-')
		return hc_why(-EDOM, why, why_len, "'%s' is negative: it must be a positive number",
			      spec);
	if (*p == '+')
		p++;
	if (*p < '0' || *p > '9')
		return hc_why(-EINVAL, why, why_len,
			      "'%s' is not a number with an optional unit (e.g. 99, 99hz, 1ms)",
			      spec);
	while (*p >= '0' && *p <= '9') {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return hc_why(-ERANGE, why, why_len, "'%s' is too large", spec);
		v = v * 10 + d;
		p++;
	}
	if (!*p) {
		*unit = bare;
	} else {
		*unit = NULL;
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			if (!strcasecmp(p, units[i].name) && (allow_hz || units[i].ns)) {
				*unit = &units[i];
				break;
			}
		}
		if (!*unit)
			return hc_why(-EINVAL, why, why_len,
				      "'%s': unknown unit '%s' (use ns, us, ms, s, m, h, d%s)",
				      spec, p, allow_hz ? " or hz" : "");
	}
	if (v == 0)
		return hc_why(-EDOM, why, why_len, "'%s' is zero: it must be positive", spec);
	*n = v;
	return 0;
}

int hc_rate__parse(const char *spec, struct hc_rate *out, char *why, size_t why_len)
{
	static const struct unit hz = {"hz", 0};
	const struct unit *unit;
	uint64_t n, period;
	int err;

	err = parse_spec(spec, true, &hz, &n, &unit, why, why_len);
	if (err)
		return err;
	if (unit->ns == 0) {
		/* Rate: the nearest whole-ns period. 5000 Hz is exactly 200 us and allowed. */
		if (n > NSEC_PER_SEC)
			period = 0; /* under 1 ns: refused by the floor below */
		else
			period = (NSEC_PER_SEC + n / 2) / n;
	} else {
		if (n > UINT64_MAX / unit->ns)
			return hc_why(-ERANGE, why, why_len, "'%s' is too large", spec);
		period = n * unit->ns;
	}
	if (period < HC_MIN_PERIOD_NS)
		return hc_why(
			-ENOTSUP, why, why_len,
			"'%s' is faster than one sample per 200 us (5000 Hz): DTrace's profile "
			"provider floor, which hotcold enforces",
			spec);
	out->period_ns = period;
	out->hz = (double)NSEC_PER_SEC / (double)period;
	return 0;
}

int hc_rate__check_kernel_max(const struct hc_rate *rate, uint64_t max_hz, char *why,
			      size_t why_len)
{
	if (max_hz && rate->hz > (double)max_hz)
		return hc_why(-ERANGE, why, why_len,
			      "%.0f Hz is above kernel.perf_event_max_sample_rate = %llu "
			      "(/proc/sys/kernel/perf_event_max_sample_rate)",
			      rate->hz, (unsigned long long)max_hz);
	return 0;
}

int hc_duration__parse(const char *spec, uint64_t *ns, char *why, size_t why_len)
{
	static const struct unit sec = {"s", NSEC_PER_SEC};
	const struct unit *unit;
	uint64_t n;
	int err;

	err = parse_spec(spec, false, &sec, &n, &unit, why, why_len);
	if (err)
		return err;
	if (n > UINT64_MAX / unit->ns || n * unit->ns > HC_MAX_DURATION_NS)
		return hc_why(-ERANGE, why, why_len, "'%s' is longer than 30 days", spec);
	*ns = n * unit->ns;
	return 0;
}
