// SPDX-License-Identifier: GPL-2.0-only
#include "failalloc.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
FILE *__real_open_memstream(char **buf, size_t *len);

void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_asprintf(char **out, const char *fmt, ...);
FILE *__wrap_open_memstream(char **buf, size_t *len);

static struct {
	bool armed, held, fired;
	unsigned long seen, fail_at;
} fa;

/* Whether this allocation is the one to fail. */
static bool fail_now(void)
{
	if (!fa.armed || fa.held)
		return false;
	if (fa.seen++ != fa.fail_at)
		return false;
	fa.fired = true;
	errno = ENOMEM;
	return true;
}

void *__wrap_malloc(size_t size)
{
	return fail_now() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return fail_now() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return fail_now() ? NULL : __real_realloc(p, size);
}

char *__wrap_strdup(const char *s)
{
	return fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n)
{
	return fail_now() ? NULL : __real_strndup(s, n);
}

int __wrap_asprintf(char **out, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (fail_now())
		return -1;
	va_start(ap, fmt);
	r = vasprintf(out, fmt, ap);
	va_end(ap);
	return r;
}

FILE *__wrap_open_memstream(char **buf, size_t *len)
{
	return fail_now() ? NULL : __real_open_memstream(buf, len);
}

static void *json_alloc(size_t size)
{
	return fail_now() ? NULL : __real_malloc(size);
}

void failalloc__init(void)
{
	json_set_alloc_funcs(json_alloc, free);
}

void failalloc__arm(unsigned long n)
{
	fa.armed = true;
	fa.held = false;
	fa.fired = false;
	fa.seen = 0;
	fa.fail_at = n;
}

unsigned long failalloc__disarm(void)
{
	fa.armed = false;
	return fa.seen;
}

void failalloc__hold(bool hold)
{
	fa.held = hold;
}

bool failalloc__fired(void)
{
	return fa.fired;
}
