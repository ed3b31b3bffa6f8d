/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef HOTCOLD_TESTS_WEB_H
#define HOTCOLD_TESTS_WEB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int run_params_tests(void);
int run_server_tests(void);

#endif
