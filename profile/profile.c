// SPDX-License-Identifier: GPL-2.0-only
/* struct hc_profile: lifetime and counters. Encoders live in encode_*.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/profile_internal.h"

void hc_weights__add(struct hc_weights *dst, const struct hc_weights *src)
{
	dst->on_cpu_ns += src->on_cpu_ns;
	dst->off_cpu_ns += src->off_cpu_ns;
	dst->runqueue_ns += src->runqueue_ns;
	dst->samples += src->samples;
}

uint64_t hc_weights__select(const struct hc_weights *w, unsigned int weights)
{
	return (weights & HC_W_ON ? w->on_cpu_ns : 0) + (weights & HC_W_OFF ? w->off_cpu_ns : 0) +
	       (weights & HC_W_RUNQ ? w->runqueue_ns : 0);
}

const char *hc_node_kind__name(enum hc_node_kind kind)
{
	switch (kind) {
	case HC_NODE_ROOT:
		return "root";
	case HC_NODE_PROCESS:
		return "process";
	case HC_NODE_THREAD:
		return "thread";
	case HC_NODE_USER:
		return "user";
	case HC_NODE_KERNEL:
		return "kernel";
	case HC_NODE_WAKER:
		return "waker";
	case HC_NODE_LOCK:
		return "lock";
	}
	return "unknown";
}

int hc__unknown_frame_name(const struct hc_node *n, char **out)
{
	const char *module = hc_node__module(n);
	int64_t offset = hc_node__offset(n);

	if (hc_node__kind(n) != HC_NODE_USER || !module || offset < 0 ||
	    strcmp(hc_node__name(n), "[unknown]") != 0)
		return 0;
	if (asprintf(out, "[unknown %s+0x%" PRIx64 "]", module, (uint64_t)offset) < 0)
		return -ENOMEM;
	return 1;
}

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
