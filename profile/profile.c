// SPDX-License-Identifier: GPL-2.0-only
/* struct hc_profile: lifetime and counters. Encoders live in encode_*.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/tree.h"

struct hc_profile *hc_profile__new(void)
{
	struct hc_profile *p;

	p = calloc(1, sizeof(*p));
	if (!p)
		goto err;
	p->tree = hc_tree__new();
	if (!p->tree)
		goto err_free_p;
	p->histograms = json_object();
	if (!p->histograms)
		goto err_free_tree;
	return p;

err_free_tree:
	hc_tree__free(p->tree);
err_free_p:
	free(p);
err:
	errno = ENOMEM;
	return NULL;
}

static void counts__free(struct hc_count *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(c[i].name);
	free(c);
}

void hc_profile__free(struct hc_profile *p)
{
	if (!p)
		return;
	free(p->host);
	free(p->kernel);
	free(p->sampling.per_cpu);
	counts__free(p->sampling.lost, p->sampling.n_lost);
	counts__free(p->symbolize, p->n_symbolize);
	hc_tree__free(p->tree);
	json_decref(p->histograms);
	json_decref(p->scheduler);
	json_decref(p->unwind);
	json_decref(p->range);
	json_decref(p->locks);
	hc_tree__free(p->lock_tree);
	free(p);
}

static int counts__append(struct hc_count **arr, size_t *n, const char *name, uint64_t count)
{
	struct hc_count *grown;
	char *copy;

	if (!name)
		return -EINVAL;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	grown = realloc(*arr, (*n + 1) * sizeof(**arr));
	if (!grown)
		goto err_free_copy;
	grown[*n].name = copy;
	grown[*n].count = count;
	*arr = grown;
	(*n)++;
	return 0;

err_free_copy:
	free(copy);
	return -ENOMEM;
}

int hc_profile__add_lost(struct hc_profile *p, const char *reason, uint64_t count)
{
	return counts__append(&p->sampling.lost, &p->sampling.n_lost, reason, count);
}

int hc_profile__add_symbolize(struct hc_profile *p, const char *name, uint64_t count)
{
	return counts__append(&p->symbolize, &p->n_symbolize, name, count);
}
