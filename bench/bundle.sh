#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/bundle.sh: carry programs built here to a machine that has no package access (the
# lent 16-CPU machine of docs/benchmarks.md, "Scale"), with the shared libraries they load
# and this machine's dynamic loader, so that they run there whatever its own glibc is.
#
#   bench/bundle.sh DIR PROGRAM...
#
# For each PROGRAM (a path, or a command found on PATH): DIR/real/NAME is the binary,
# DIR/lib/ every library `ldd` lists for it plus ld-linux-x86-64.so.2, and DIR/bin/NAME a
# wrapper that runs `DIR/lib/ld-linux-x86-64.so.2 --library-path DIR/lib DIR/real/NAME "$@"`.
# Put DIR/bin first on PATH there. A program that re-executes itself would leave the bundle
# (hotcold does not: its worker and server are forks). ldd does not see libraries opened with
# dlopen() (hotcold's libmicrohttpd and libcurl): list them in BUNDLE_EXTRA_LIBS (paths,
# space-separated); they are copied with what they load. DIR is emptied first; exits 1 on
# any failure.
set -euo pipefail
export LC_ALL=C

note() { echo "bench/bundle.sh: $*" >&2; }
die() {
	note "$*"
	exit 1
}

[ $# -ge 2 ] || die "usage: bench/bundle.sh DIR PROGRAM..."
dir=$1
shift
case "$dir" in /*) ;; *) dir=$PWD/$dir ;; esac
rm -rf "$dir"
mkdir -p "$dir/bin" "$dir/lib" "$dir/real"

copy_lib() {
	local lib=$1
	[ -f "$lib" ] || die "library $lib not found"
	[ -e "$dir/lib/$(basename "$lib")" ] || cp -L "$lib" "$dir/lib/"
}

loader=""
for prog in "$@"; do
	path=$prog
	[ -x "$path" ] || path=$(command -v "$prog") || die "no program $prog"
	name=$(basename "$path")
	cp -L "$path" "$dir/real/$name"
	# ldd's lines: "libx.so.1 => /path (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)".
	while read -r lib; do
		case "$lib" in
		*/ld-linux*) loader=$lib ;;
		*) copy_lib "$lib" ;;
		esac
	done < <(ldd "$path" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\/.*ld-linux/ { print $1 }')
	cat >"$dir/bin/$name" <<EOF
#!/bin/sh
d=\$(cd "\$(dirname "\$0")/.." && pwd)
exec "\$d/lib/ld-linux-x86-64.so.2" --library-path "\$d/lib" "\$d/real/$name" "\$@"
EOF
	chmod 755 "$dir/bin/$name"
done
[ -n "$loader" ] || die "no dynamic loader among the programs' libraries (static programs only?)"
cp -L "$loader" "$dir/lib/ld-linux-x86-64.so.2"
for lib in ${BUNDLE_EXTRA_LIBS:-}; do
	copy_lib "$lib"
	while read -r dep; do
		copy_lib "$dep"
	done < <(ldd "$lib" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
done
note "$dir: $(du -sh "$dir" | cut -f1) ($# programs, $(ls "$dir/lib" | wc -l) libraries)"
