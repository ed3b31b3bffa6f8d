// SPDX-License-Identifier: GPL-2.0-only
#include "base/why.h"

#include <stdarg.h>
#include <stdio.h>

static void why_vset(char *why, size_t why_len, const char *fmt, va_list ap)
{
	if (why && why_len)
		vsnprintf(why, why_len, fmt, ap);
}

void hc_why_set(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	why_vset(why, why_len, fmt, ap);
	va_end(ap);
}

int hc_why(int err, char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	why_vset(why, why_len, fmt, ap);
	va_end(ap);
	return err;
}
