// SPDX-License-Identifier: GPL-2.0-only
/* serve/curl_dl: libcurl loaded on first use (curl_dl.h says why). */
#include "serve/curl_dl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

/* The SONAME of libcurl 7.x and 8.x (Debian's libcurl4 package). */
#define CURL_SONAME "libcurl.so.4"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct hc_curl api;
static int load_err;	   /* 0 once loaded */
static char load_why[256]; /* what failed */

/* Each member of api from its name (the member's name with the curl_ prefix). */
#define SYM(member, name)                                                                        \
	do {                                                                                     \
		*(void **)&api.member = dlsym(h, name);                                          \
		if (!api.member) {                                                               \
			snprintf(load_why, sizeof(load_why), "%s has no %s", CURL_SONAME, name); \
			return false;                                                            \
		}                                                                                \
	} while (0)

static bool resolve(void *h)
{
	SYM(global_init, "curl_global_init");
	SYM(easy_init, "curl_easy_init");
	SYM(easy_setopt, "curl_easy_setopt");
	SYM(easy_getinfo, "curl_easy_getinfo");
	SYM(easy_strerror, "curl_easy_strerror");
	SYM(easy_escape, "curl_easy_escape");
	SYM(easy_cleanup, "curl_easy_cleanup");
	SYM(multi_init, "curl_multi_init");
	SYM(multi_add_handle, "curl_multi_add_handle");
	SYM(multi_remove_handle, "curl_multi_remove_handle");
	SYM(multi_perform, "curl_multi_perform");
	SYM(multi_poll, "curl_multi_poll");
	SYM(multi_wakeup, "curl_multi_wakeup");
	SYM(multi_info_read, "curl_multi_info_read");
	SYM(multi_cleanup, "curl_multi_cleanup");
	SYM(mime_init, "curl_mime_init");
	SYM(mime_addpart, "curl_mime_addpart");
	SYM(mime_name, "curl_mime_name");
	SYM(mime_filename, "curl_mime_filename");
	SYM(mime_type, "curl_mime_type");
	SYM(mime_data, "curl_mime_data");
	SYM(mime_free, "curl_mime_free");
	SYM(slist_append, "curl_slist_append");
	SYM(slist_free_all, "curl_slist_free_all");
	SYM(url, "curl_url");
	SYM(url_set, "curl_url_set");
	SYM(url_get, "curl_url_get");
	SYM(url_cleanup, "curl_url_cleanup");
	SYM(free, "curl_free");
	return true;
}

/* curl_global_init() is not thread-safe before 7.84 and the server already runs threads:
 * once only; curl_global_cleanup() is never called (the process exits instead), nor is the
 * library unloaded. */
static void load(void)
{
	void *h = dlopen(CURL_SONAME, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(load_why, sizeof(load_why), "%s", dlerror());
		load_err = ELIBACC;
		return;
	}
	if (!resolve(h)) {
		dlclose(h);
		load_err = ELIBACC;
		return;
	}
	if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		snprintf(load_why, sizeof(load_why), "curl_global_init failed");
		load_err = ENOMEM;
	}
}

const struct hc_curl *hc_curl__get(char *why, size_t why_len)
{
	pthread_once(&once, load);
	if (load_err) {
		if (why && why_len)
			snprintf(why, why_len, "%s", load_why);
		errno = load_err;
		return NULL;
	}
	return &api;
}
