#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# tools/check-deps.sh can fail: on a scratch tree (no git: the script's find(1) path) it
# accepts allowed includes and refuses, with file:line, an upward include, a `..` path, a
# folder missing from the table and a table with a cycle.
set -eu

src=$1
check="$src/tools/check-deps.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$tmp/tools" "$tmp/base" "$tmp/web" "$tmp/serve" "$tmp/build/web"
cp "$src/tools/deps.table" "$tmp/tools/"
printf '#include <stdio.h>\n' > "$tmp/base/a.h"
printf '#include "base/a.h"\n#include "params.h"\n' > "$tmp/web/params.c"
printf '#include "web/params.h"\n#include "base/a.h"\n' > "$tmp/serve/s.c"
# A build directory's generated files are not the tree's.
printf '#include "serve/s.h"\n' > "$tmp/build/web/gen.c"

"$check" "$tmp" > "$tmp/out" 2>&1 || { cat "$tmp/out"; fail "a clean tree was refused"; }

printf '\n#include "serve/wire.h"\n' >> "$tmp/web/params.c"
if "$check" "$tmp" > "$tmp/out" 2>&1; then fail "web/ including serve/ passed"; fi
grep -q '^web/params.c:4: #include "serve/wire.h": web/ may not include from serve/' "$tmp/out" ||
	{ cat "$tmp/out"; fail "no file:line for the upward include"; }
printf '#include "base/a.h"\n' > "$tmp/web/params.c"

printf '#include "../serve/s.h"\n' > "$tmp/web/up.c"
if "$check" "$tmp" > "$tmp/out" 2>&1; then fail "a .. include passed"; fi
grep -q '^web/up.c:1: ' "$tmp/out" || { cat "$tmp/out"; fail "no file:line for the .. include"; }
rm "$tmp/web/up.c"

mkdir "$tmp/newdir"
printf 'int x;\n' > "$tmp/newdir/n.c"
if "$check" "$tmp" > "$tmp/out" 2>&1; then fail "a folder missing from the table passed"; fi
grep -q '^newdir/n.c:1: folder "newdir" is not in' "$tmp/out" || { cat "$tmp/out"; fail "unnamed folder"; }
rm -r "$tmp/newdir"

sed -i 's/^base:.*/base: cli/' "$tmp/tools/deps.table"
if "$check" "$tmp" > "$tmp/out" 2>&1; then fail "a table with a cycle passed"; fi
grep -q 'the table has a cycle' "$tmp/out" || { cat "$tmp/out"; fail "cycle not named"; }
echo "check-deps: refuses what it must"
