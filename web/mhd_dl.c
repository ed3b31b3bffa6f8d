// SPDX-License-Identifier: GPL-2.0-only
/* web/mhd_dl: libmicrohttpd loaded on first use (mhd_dl.h says why). */
#include "web/mhd_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

/* The SONAME of libmicrohttpd 0.9.x (Debian's libmicrohttpd12). */
#define MHD_SONAME "libmicrohttpd.so.12"

struct hc_mhd hc_mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_why[256];

#define SYM(member, name)                                                                       \
	do {                                                                                    \
		*(void **)&hc_mhd.member = dlsym(h, name);                                      \
		if (!hc_mhd.member) {                                                           \
			snprintf(load_why, sizeof(load_why), "%s has no %s", MHD_SONAME, name); \
			return false;                                                           \
		}                                                                               \
	} while (0)

static bool resolve(void *h)
{
	SYM(start_daemon, "MHD_start_daemon");
	SYM(stop_daemon, "MHD_stop_daemon");
	SYM(get_connection_info, "MHD_get_connection_info");
	SYM(get_connection_values, "MHD_get_connection_values");
	SYM(create_response_from_buffer, "MHD_create_response_from_buffer");
	SYM(add_response_header, "MHD_add_response_header");
	SYM(queue_response, "MHD_queue_response");
	SYM(destroy_response, "MHD_destroy_response");
	return true;
}

/* Never unloaded: the process exits with it. */
static void load(void)
{
	void *h = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(load_why, sizeof(load_why), "%s", dlerror());
		return;
	}
	if (!resolve(h)) {
		dlclose(h);
		return;
	}
	loaded = true;
}

int hc_mhd__load(char *why, size_t why_len)
{
	pthread_once(&once, load);
	if (loaded)
		return 0;
	if (why && why_len)
		snprintf(why, why_len, "%s", load_why);
	return -ELIBACC;
}
