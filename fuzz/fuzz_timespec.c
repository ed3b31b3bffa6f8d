// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz-timespec: the -F rate grammar and the -d duration grammar (base/timespec.h) on the
 * input as one NUL-terminated string. What parses must round-trip through its value in ns.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timespec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_DURATION_NS (30ull * 86400 * 1000000000ull) /* timespec.h: at most 30 days */

/* A failure is one of the documented errors, with a reason (it quotes the input, newlines and
 * all: argv can hold them). */
static void check_err(int err, const char *why, size_t why_len)
{
	if (err != -EINVAL && err != -EDOM && err != -ERANGE && err != -ENOTSUP)
		abort();
	if (!why[0] || strnlen(why, why_len) == why_len)
		abort();
}

static void check_rate(const char *spec)
{
	char why[256] = "", again_spec[32];
	struct hc_rate r, again;
	int err;

	err = hc_rate__parse(spec, &r, why, sizeof(why));
	if (err) {
		check_err(err, why, sizeof(why));
		return;
	}
	if (r.period_ns < HC_MIN_PERIOD_NS || !(r.hz > 0) ||
	    fabs(r.hz * (double)r.period_ns - 1e9) > 1e-6 * 1e9)
		abort();
	snprintf(again_spec, sizeof(again_spec), "%" PRIu64 "ns", r.period_ns);
	if (hc_rate__parse(again_spec, &again, why, sizeof(why)) || again.period_ns != r.period_ns)
		abort();
	why[0] = '\0';
	err = hc_rate__check_kernel_max(&r, 1000, why, sizeof(why));
	if ((err != 0) != (r.hz > 1000.0))
		abort();
	if (err)
		check_err(err, why, sizeof(why));
	if (hc_rate__check_kernel_max(&r, 0, why, sizeof(why)))
		abort(); /* 0: no kernel limit known */
}

static void check_duration(const char *spec)
{
	char why[256] = "", again_spec[32];
	uint64_t ns, again;
	int err;

	err = hc_duration__parse(spec, &ns, why, sizeof(why));
	if (err) {
		check_err(err, why, sizeof(why));
		if (err == -ENOTSUP)
			abort(); /* no floor for durations */
		return;
	}
	if (ns == 0 || ns > MAX_DURATION_NS)
		abort();
	snprintf(again_spec, sizeof(again_spec), "%" PRIu64 "ns", ns);
	if (hc_duration__parse(again_spec, &again, why, sizeof(why)) || again != ns)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec = malloc(size + 1);

	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	check_rate(spec);
	check_duration(spec);
	free(spec);
	return 0;
}
