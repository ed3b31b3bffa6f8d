/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store/dict: the disk store's dictionary in memory: frames, tasks and stacks, each an array
 * indexed by id - 1 and a hash from content to id. Entries are only appended; those past
 * `persisted` are not in the file yet. Reads from query threads take `lock` for reading,
 * appends take it for writing. Internal to store/.
 */
#ifndef HOTCOLD_STORE_DICT_H
#define HOTCOLD_STORE_DICT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/intern.h"
#include "profile/tree.h"

struct hc_dict_frame {
	const char *name, *module; /* interned; module may be NULL */
	uint64_t id;
	int64_t offset;
	uint8_t kind;
	bool inlined;
};

struct hc_dict_task {
	const char *process, *thread; /* interned */
	uint32_t pid, tid;
};

struct hc_dict_stack {
	uint32_t parent, frame;
};

struct hc_dict_index {
	uint32_t *slots; /* entry id, 0: empty */
	size_t cap;	 /* a power of two, or 0 */
};

struct hc_dict {
	pthread_rwlock_t lock;
	struct hc_interner strings;
	struct hc_dict_frame *frames;
	struct hc_dict_task *tasks;
	struct hc_dict_stack *stacks;
	size_t n_frames, n_tasks, n_stacks;
	size_t cap_frames, cap_tasks, cap_stacks;
	struct hc_dict_index frame_ix, task_ix, stack_ix;
	/* entries [0, persisted_*) are in the file */
	size_t persisted_frames, persisted_tasks, persisted_stacks;
};

int hc_dict__init(struct hc_dict *d);
void hc_dict__release(struct hc_dict *d);
/* Interned ids from 1, or -EINVAL / -ENOMEM. Appends take d->lock for writing. */
int64_t hc_dict__frame(struct hc_dict *d, const struct hc_path_elem *e);
int64_t hc_dict__task(struct hc_dict *d, uint32_t pid, uint32_t tid, const char *process,
		      const char *thread);
int64_t hc_dict__stack(struct hc_dict *d, uint32_t parent, uint32_t frame);
/* Memory in use. */
size_t hc_dict__bytes(const struct hc_dict *d);
/* The path elements of a frame id (valid while d lives and under the read lock). */
void hc_dict__elem(const struct hc_dict *d, uint32_t frame, struct hc_path_elem *out);

#endif
