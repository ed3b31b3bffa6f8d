/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * web/assets: the viewer's files (web/static/), compiled into the binary by web/embed.c at build
 * time. Looked up by exact path only: there is no file system access at run time, so no path
 * to traverse; anything not in the table (`..`, percent-escapes, `//`) is simply not found.
 */
#ifndef HOTCOLD_WEB_ASSETS_H
#define HOTCOLD_WEB_ASSETS_H

#include <stddef.h>

struct hc_asset {
	const char *path;	  /* "/index.html", "/js/app.js": relative to web/static/ */
	const char *content_type; /* from the extension, chosen at build time */
	const unsigned char *data;
	size_t len;
};

/* Generated (web/embed.c): sorted by strcmp(path), no duplicates. */
extern const struct hc_asset hc_assets[];
extern const size_t hc_assets_n;

/* The asset at exactly `path` ("/" is "/index.html"), or NULL. */
const struct hc_asset *hc_asset__find(const char *path);

#endif
