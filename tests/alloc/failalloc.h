/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tests/alloc/failalloc: allocation failure injection for unit tests.
 *
 * A test executable linked with failalloc_link_args (meson.build: the linker's --wrap for
 * malloc, calloc, realloc, strdup, strndup, asprintf and open_memstream) sends every such call
 * of its own code and of the static libraries it links through here; jansson's allocations
 * come here through json_set_alloc_funcs(). While armed, the allocations are counted and the
 * n-th (0: the first) fails as the real one would (NULL and ENOMEM, asprintf -1), once.
 * Allocations inside shared libraries (libc's own, zlib's, libdw's) are not seen. One thread.
 */
#ifndef HOTCOLD_TESTS_FAILALLOC_H
#define HOTCOLD_TESTS_FAILALLOC_H

#include <stdbool.h>

/* Route jansson through the counter; before any jansson allocation. */
void failalloc__init(void);
/* Count from now; the n-th allocation fails. */
void failalloc__arm(unsigned long n);
/* Stop counting (allocations succeed); returns how many were counted since arm. */
unsigned long failalloc__disarm(void);
/* Pause and resume counting while armed (a test's own checks between two steps). */
void failalloc__hold(bool hold);
/* Whether the armed failure happened. */
bool failalloc__fired(void);

#endif
