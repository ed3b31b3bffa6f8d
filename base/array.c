// SPDX-License-Identifier: GPL-2.0-only
#include "base/array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int hc_array__grow(void *arrp, size_t *cap, size_t need, size_t elem_size, size_t min_cap)
{
	size_t n = *cap ? *cap : (min_cap ? min_cap : 1);
	void *arr, *grown;

	if (need <= *cap)
		return 0;
	if (*cap) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (elem_size && n > SIZE_MAX / elem_size)
		return -ENOMEM;
	/* arrp points to a T *; every object pointer has the representation of void * here. */
	memcpy(&arr, arrp, sizeof(arr));
	grown = realloc(arr, n * elem_size);
	if (!grown)
		return -ENOMEM;
	memcpy(arrp, &grown, sizeof(grown));
	*cap = n;
	return 0;
}
