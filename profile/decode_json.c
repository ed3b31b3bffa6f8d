// SPDX-License-Identifier: GPL-2.0-only
typedef int hc_placeholder_t;
