/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Growable arrays: the grow-by-doubling step every table of the tree needs.
 *
 *	if (t->n == t->cap && hc_array_grow(t->items, t->cap, t->n + 1, 64))
 *		return -ENOMEM;
 *
 * The array and its capacity (a size_t, in elements) stay the caller's fields; the helper
 * only reallocates. Amortized O(1) appends; up to 2x the elements in use.
 */
#ifndef HOTCOLD_BASE_ARRAY_H
#define HOTCOLD_BASE_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * Make *(void **)arrp hold at least `need` elements of elem_size bytes: the capacity *cap
 * doubles (starting from min_cap when 0) until it is enough. Nothing happens when *cap >=
 * need already. 0, or -ENOMEM (allocation failure or a size that overflows), with *arrp and
 * *cap unchanged. New elements are not initialized.
 */
int hc_array__grow(void *arrp, size_t *cap, size_t need, size_t elem_size, size_t min_cap);

/* hc_array__grow() on an lvalue array pointer and its size_t capacity. */
#define hc_array_grow(arr, cap, need, min_cap) \
	hc_array__grow(&(arr), &(cap), (need), sizeof(*(arr)), (min_cap))

/*
 * calloc() for a table that is probed before it is written (a hash table's slots): zeroed
 * by writing, so that its pages are the process's own at once. A large calloc'd block is
 * fresh pages the kernel maps to its shared zero page on the first read; the first write to
 * each then faults again and, in a process with threads, flushes their TLBs.
 */
static inline void *hc_calloc_written(size_t n, size_t size)
{
	size_t bytes = n * size;
	void *p = size && n > SIZE_MAX / size ? NULL : malloc(bytes > 0 ? bytes : 1);

	if (p)
		memset(p, 0, bytes);
	return p;
}

#endif
