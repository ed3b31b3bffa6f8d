/* SPDX-License-Identifier: GPL-2.0-only */
/* C++ (Itanium ABI) and Rust (legacy and v0) symbol demangling through libiberty. */
#ifndef HOTCOLD_SYMBOLIZE_DEMANGLE_H
#define HOTCOLD_SYMBOLIZE_DEMANGLE_H

#include <stddef.h>

/*
 * Demangle name into buf (NUL-terminated). 0; -EINVAL if name is not a mangled C++/Rust name
 * (plain C symbols are not mangled); -ENAMETOOLONG if buf is too small.
 * Uses libiberty's callback API, which does not allocate (so it cannot abort on OOM).
 */
int hc_demangle(const char *name, char *buf, size_t size);

#endif
