/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * serve/curl_dl: libcurl, loaded when --push first needs it (dlopen of libcurl.so.4). Linked
 * in, libcurl and what it pulls in (OpenSSL, Kerberos, LDAP, libssh2...) were mapped and
 * initialised in every one of serve's processes: 3.4 MB of each process's RSS, for a feature
 * most runs do not use. Only serve/push.c calls it.
 */
#ifndef HOTCOLD_SERVE_CURL_DL_H
#define HOTCOLD_SERVE_CURL_DL_H

#include <stddef.h>

#include <curl/curl.h>

/* The functions push.c calls, under their names without the curl_ prefix. */
struct hc_curl {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *h, CURLoption o, ...);
	CURLcode (*easy_getinfo)(CURL *h, CURLINFO i, ...);
	const char *(*easy_strerror)(CURLcode rc);
	char *(*easy_escape)(CURL *h, const char *s, int len);
	void (*easy_cleanup)(CURL *h);
	CURLM *(*multi_init)(void);
	CURLMcode (*multi_add_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_remove_handle)(CURLM *m, CURL *h);
	CURLMcode (*multi_perform)(CURLM *m, int *running);
	CURLMcode (*multi_poll)(CURLM *m, struct curl_waitfd extra[], unsigned int n,
				int timeout_ms, int *numfds);
	CURLMcode (*multi_wakeup)(CURLM *m);
	CURLMsg *(*multi_info_read)(CURLM *m, int *left);
	CURLMcode (*multi_cleanup)(CURLM *m);
	curl_mime *(*mime_init)(CURL *h);
	curl_mimepart *(*mime_addpart)(curl_mime *m);
	CURLcode (*mime_name)(curl_mimepart *p, const char *name);
	CURLcode (*mime_filename)(curl_mimepart *p, const char *name);
	CURLcode (*mime_type)(curl_mimepart *p, const char *type);
	CURLcode (*mime_data)(curl_mimepart *p, const char *data, size_t len);
	void (*mime_free)(curl_mime *m);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
	CURLU *(*url)(void);
	CURLUcode (*url_set)(CURLU *u, CURLUPart what, const char *part, unsigned int flags);
	CURLUcode (*url_get)(const CURLU *u, CURLUPart what, char **part, unsigned int flags);
	void (*url_cleanup)(CURLU *u);
	void (*free)(void *p);
};

/*
 * libcurl loaded and curl_global_init() done, once per process (thread-safe). NULL + errno
 * (ELIBACC: libcurl.so.4 or one of its functions is missing; ENOMEM: its initialisation
 * failed), and why (may be NULL) says which.
 */
const struct hc_curl *hc_curl__get(char *why, size_t why_len);

#endif
