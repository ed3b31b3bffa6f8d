#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/fuzz.sh: run every libFuzzer target (fuzz/, -Dfuzz=true) for a bounded time from its
# seeds, and say per target how far it got and whether it crashed.
#
# Usage: bench/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default 60 s; all targets)
#   Environment: HC_FUZZ_BUILD  build directory (default build-fuzz, configured here with
#                               CC=clang -Dfuzz=true when it does not exist yet)
#                HC_FUZZ_ARGS   extra libFuzzer flags, after ours (e.g. -only_ascii=1)
#
# Each target fuzz/fuzz-NAME starts from a temporary copy of fixtures/fuzz/NAME/ (libFuzzer
# writes new inputs into its corpus directory: never into fixtures/), with
# -max_total_time=SECONDS -rss_limit_mb=2048 -timeout=10. Per target it prints runs, exec/s,
# cov (edges covered, from libFuzzer's last status line), new corpus units, peak RSS, and any
# crash, leak, timeout or OOM input, which is kept with the full log in
# HC_FUZZ_BUILD/fuzz-out/NAME/. A target that ends with a non-zero status (a crash before its
# first status line included) is reported with its exit status and the tail of its log.
# Exit status: 1 if any target found something or failed, 2 on a usage or build error, 0
# otherwise.
#
# Only the fuzz targets are built here (./setup.sh test builds the whole tree with clang too).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
shift || true
build=${HC_FUZZ_BUILD:-build-fuzz}
case $build in /*) ;; *) build=$top/$build ;; esac
all_targets=(elf dwarf kallsyms procmaps perfmap timespec params profile wire broker uwtable debuglink)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

if ! [[ $secs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: bench/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
	exit 2
fi
for t in "${targets[@]}"; do
	if [ ! -d "$top/fixtures/fuzz/$t" ]; then
		echo "bench/fuzz.sh: no target '$t' (known: ${all_targets[*]})" >&2
		exit 2
	fi
done

if [ ! -f "$build/build.ninja" ]; then
	(cd "$top" && CC=clang meson setup "$build" -Dfuzz=true >/dev/null) || {
		echo "bench/fuzz.sh: meson setup $build failed" >&2
		exit 2
	}
elif ! meson introspect --buildoptions "$build" | grep -q '"name": "fuzz", "value": true'; then
	echo "bench/fuzz.sh: $build is not configured with -Dfuzz=true" >&2
	exit 2
fi
ninja -C "$build" "${targets[@]/#/fuzz/fuzz-}" >/dev/null || {
	echo "bench/fuzz.sh: building the fuzz targets in $build failed" >&2
	exit 2
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
found=0
printf '%-10s %12s %9s %7s %7s %8s  %s\n' target runs exec/s cov new_units rss_mb result
for t in "${targets[@]}"; do
	out=$build/fuzz-out/$t
	rm -rf "$out"
	mkdir -p "$out" "$work/$t"
	cp -r "$top/fixtures/fuzz/$t/." "$work/$t/"
	dict=()
	[ -f "$top/fuzz/$t.dict" ] && dict=(-dict="$top/fuzz/$t.dict")
	rc=0
	UBSAN_OPTIONS=print_stacktrace=1 "$build/fuzz/fuzz-$t" "${dict[@]}" \
		-max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$out/" ${HC_FUZZ_ARGS:-} "$work/$t" >"$out/log" 2>&1 || rc=$?
	stat() { awk -v k="stat::$1:" '$1 == k { print $2 }' "$out/log" | tail -1; }
	runs=$(stat number_of_executed_units)
	execs=$(stat average_exec_per_sec)
	units=$(stat new_units_added)
	rss=$(stat peak_rss_mb)
	# No status line at all when the target died at once: no coverage, not the end of the run.
	cov=$(grep -oE '^#[0-9]+.* cov: [0-9]+' "$out/log" | tail -1 | sed 's/.*cov: //') || true
	crashes=$(find "$out" -maxdepth 1 -type f \
		\( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | sort)
	if [ -n "$crashes" ] || [ "$rc" -ne 0 ]; then
		found=1
		result="FOUND (exit $rc) ${crashes:-see $out/log}"
	else
		result=ok
	fi
	printf '%-10s %12s %9s %7s %7s %8s  %s\n' "$t" "${runs:-?}" "${execs:-?}" "${cov:-?}" \
		"${units:-?}" "${rss:-?}" "$(echo "$result" | tr '\n' ' ')"
	if [ "$result" != ok ]; then
		echo "--- fuzz-$t exited $rc; the last 30 lines of $out/log:"
		tail -n 30 "$out/log" | sed 's/^/    /'
		echo "---"
	fi
done
echo "logs and any crash inputs: $build/fuzz-out/<target>/"
exit $found
