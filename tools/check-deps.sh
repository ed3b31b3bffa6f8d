#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
# Check every `#include "..."` of the tree's C files against tools/deps.table (which folder
# may include which; docs/architecture.md). Prints each offending include as file:line and
# exits 1; exits 0 when the graph holds. Usage: tools/check-deps.sh [SOURCE_ROOT]
set -eu

root=${1:-$(dirname "$0")/..}
cd "$root"
table=tools/deps.table
[ -r "$table" ] || { echo "check-deps: cannot read $table" >&2; exit 2; }

# Git's list when there is one (no build directories), else every C file outside build*/.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	files=$(git ls-files --cached --others --exclude-standard -- '*.c' '*.h')
else
	files=$(find . -name build\* -prune -o \( -name '*.c' -o -name '*.h' \) -print |
		sed 's|^\./||')
fi
[ -n "$files" ] || { echo "check-deps: no C files under $root" >&2; exit 2; }

# shellcheck disable=SC2086 # one file name per word: the tree's names have no spaces
awk -v table="$table" '
# Depth-first over the table: an edge back to a folder on the current path is a cycle.
function visit(n, path,    nb, cnt, i, m) {
	color[n] = 1
	cnt = split(adj[n], nb, " ")
	for (i = 1; i <= cnt; i++) {
		m = nb[i]
		if (m == "*")
			continue
		if (color[m] == 1) {
			printf "%s: the table has a cycle: %s -> %s\n", table, path, m
			bad = 1
		} else if (!color[m]) {
			visit(m, path " -> " m)
		}
	}
	color[n] = 2
}
BEGIN {
	while ((getline line < table) > 0) {
		sub(/#.*/, "", line)
		if (line !~ /:/)
			continue
		dir = line; sub(/:.*/, "", dir); gsub(/[ \t]/, "", dir)
		rest = line; sub(/^[^:]*:/, "", rest)
		known[dir] = 1
		n = split(rest, dests, /[ \t]+/)
		for (i = 1; i <= n; i++)
			if (dests[i] != "") {
				allow[dir, dests[i]] = 1
				adj[dir] = adj[dir] " " dests[i]
			}
	}
	close(table)
	bad = 0
	for (dir in known)
		if (!color[dir])
			visit(dir, dir)
}
FNR == 1 {
	from = FILENAME; sub(/\/.*/, "", from)
	if (FILENAME !~ /\// || !(from in known)) {
		printf "%s:1: folder \"%s\" is not in %s: add it where it belongs\n",
		       FILENAME, FILENAME ~ /\// ? from : ".", table
		bad = 1
		nextfile
	}
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
	inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
	if (allow[from, "*"])
		next
	if (inc ~ /(^|\/)\.\.(\/|$)/) {
		printf "%s:%d: #include \"%s\": no .. in include paths, name the folder\n",
		       FILENAME, FNR, inc
		bad = 1
		next
	}
	if (inc !~ /\//)
		next # a header next to the file: its own folder
	to = inc; sub(/\/.*/, "", to)
	if (to == from || allow[from, to])
		next
	printf "%s:%d: #include \"%s\": %s/ may not include from %s/ (%s)\n",
	       FILENAME, FNR, inc, from, to, table
	bad = 1
}
END { exit bad }
' $files
