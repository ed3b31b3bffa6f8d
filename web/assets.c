// SPDX-License-Identifier: GPL-2.0-only
/* web/assets: exact-path lookup in the table web/embed.c generated. */
#include "web/assets.h"

#include <stdlib.h>
#include <string.h>

static int cmp_path(const void *key, const void *elem)
{
	return strcmp(key, ((const struct hc_asset *)elem)->path);
}

const struct hc_asset *hc_asset__find(const char *path)
{
	if (!strcmp(path, "/"))
		path = "/index.html";
	return bsearch(path, hc_assets, hc_assets_n, sizeof(hc_assets[0]), cmp_path);
}
