// SPDX-License-Identifier: GPL-2.0-only
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bpf_ids.h"

bool bpf_ids__has(const struct bpf_ids *s, uint32_t id)
{
	for (int i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return true;
	return false;
}

/* Program id's name and load time (ns since boot); false when it is gone or not ours. */
static bool hc_prog(uint32_t id, char name[16], uint64_t *load_ns)
{
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);
	bool ok;

	if (fd < 0)
		return false; /* freed meanwhile */
	memset(&info, 0, sizeof(info));
	ok = !bpf_obj_get_info_by_fd(fd, &info, &len) && !strncmp(info.name, "hc_", 3);
	close(fd);
	if (ok) {
		memcpy(name, info.name, 16);
		*load_ns = info.load_time;
	}
	return ok;
}

void bpf_ids__load_hc_since(struct bpf_ids *s, uint64_t boot_ns)
{
	uint32_t id = 0;
	uint64_t load_ns;

	s->n = 0;
	while (!bpf_prog_get_next_id(id, &id))
		if (s->n < BPF_IDS_MAX && hc_prog(id, s->name[s->n], &load_ns) &&
		    load_ns >= boot_ns)
			s->id[s->n++] = id;
}

void bpf_ids__load_hc(struct bpf_ids *s)
{
	bpf_ids__load_hc_since(s, 0);
}

void bpf_ids__add_pid(struct bpf_ids *s, pid_t pid)
{
	char path[320], line[128];
	struct dirent *e;
	uint64_t load_ns;
	unsigned int id;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo", (int)pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid, e->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "prog_id: %u", &id) == 1 && !bpf_ids__has(s, id) &&
			    s->n < BPF_IDS_MAX && hc_prog(id, s->name[s->n], &load_ns))
				s->id[s->n++] = id;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

void bpf_ids__diff(const struct bpf_ids *before, const struct bpf_ids *now, struct bpf_ids *mine)
{
	mine->n = 0;
	for (int i = 0; i < now->n; i++)
		if (!bpf_ids__has(before, now->id[i])) {
			memcpy(mine->name[mine->n], now->name[i], sizeof(mine->name[0]));
			mine->id[mine->n++] = now->id[i];
		}
}

int bpf_ids__loaded(const struct bpf_ids *mine)
{
	struct bpf_ids now;
	int n = 0;

	bpf_ids__load_hc(&now);
	for (int i = 0; i < mine->n; i++)
		n += bpf_ids__has(&now, mine->id[i]);
	return n;
}

int bpf_ids__links(const struct bpf_ids *progs, const char *name)
{
	uint32_t id = 0;
	int n = 0;

	while (!bpf_link_get_next_id(id, &id)) {
		struct bpf_link_info info;
		uint32_t len = sizeof(info);
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			for (int i = 0; i < progs->n; i++)
				n += progs->id[i] == info.prog_id &&
				     (!name || !strcmp(progs->name[i], name));
		close(fd);
	}
	return n;
}
