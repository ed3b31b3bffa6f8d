/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * struct hc_profile: one `hotcold-profile/1` document (sampling counters, totals, the
 * tree, the sections other stages fill). Its encoders and decoder: profile/encode.h.
 */
#ifndef HOTCOLD_PROFILE_H
#define HOTCOLD_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "profile/tree.h"

#define HC_PROFILE_SCHEMA "hotcold-profile/1"

struct hc_cpu_samples {
	uint32_t cpu;
	uint64_t expected; /* frequency x duration */
	uint64_t samples;  /* cpu-clock samples the BPF program saw on this CPU (idle included) */
	uint64_t idle_ns;  /* idle task's time on this CPU, from the scheduler */
};

struct hc_count {
	char *name; /* owned */
	uint64_t count;
};

struct hc_profile {
	char *host;	       /* owned; uname nodename */
	char *kernel;	       /* owned; uname release */
	int64_t started_at_ns; /* CLOCK_REALTIME, ns since the epoch */
	uint64_t duration_ns;

	struct {
		double frequency_hz;
		uint64_t period_ns;
		uint32_t cpus;
		uint64_t expected_samples;
		uint64_t samples;      /* delivered, idle included */
		uint64_t idle_samples; /* samples of the idle task: in totals, not in the tree */
		uint64_t filtered_samples;	/* of tasks -p / --comm leave out: counted only */
		struct hc_cpu_samples *per_cpu; /* owned array */
		size_t n_per_cpu;
		struct hc_count *lost; /* owned array: reason -> samples not delivered */
		size_t n_lost;
	} sampling;

	struct {
		uint64_t on_cpu_ns;
		uint64_t off_cpu_ns;
		uint64_t runqueue_ns;
		uint64_t idle_ns;
		uint64_t cpu_unclaimed_ns; /* idle CPU time while tasks waited on another CPU */
		uint64_t kernel_samples;   /* samples with arg0 != 0 (kernel PC) */
		uint64_t user_samples;	   /* samples with arg1 != 0 (user PC) */
	} totals;

	struct hc_count *symbolize; /* owned array: symbolization counters by name */
	size_t n_symbolize;

	json_t *scheduler;    /* owned reference or NULL: off-CPU settings and counters */
	json_t *unwind;	      /* owned reference or NULL: how user stacks were unwound */
	json_t *range;	      /* owned reference or NULL: serve's query and pruning (docs/api.md) */
	struct hc_tree *tree; /* owned */
	/* --locks (docs/locks.md): the section's members but its flame graph (owned reference),
	 * and that flame graph (owned); both NULL without --locks. */
	json_t *locks;
	struct hc_tree *lock_tree;
	json_t *histograms; /* owned reference; an empty object until the off-CPU issue */
};

/* A zeroed profile with an empty tree and histograms object. NULL + errno on failure. */
struct hc_profile *hc_profile__new(void);
void hc_profile__free(struct hc_profile *p);
/* Append a counter to p->sampling.lost (or p->symbolize). -ENOMEM. */
int hc_profile__add_lost(struct hc_profile *p, const char *reason, uint64_t count);
int hc_profile__add_symbolize(struct hc_profile *p, const char *name, uint64_t count);

#endif
