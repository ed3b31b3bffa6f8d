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

#endif
