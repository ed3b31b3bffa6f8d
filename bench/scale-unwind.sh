#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/scale-unwind.sh: user-stack unwinding at scale: bench/cpuwork -l (its hot path below
# glibc's qsort(), built without frame pointers) on every CPU, and `hotcold record -F 999`
# with each --unwind mode (or `hotcold serve`: serve-MODE), interleaved (docs/benchmarks.md,
# "Unwinding at 16 CPUs"). Made for the lent 16-CPU machine, where only bundled programs run
# (bench/bundle.sh): everything it runs is found on PATH, and it writes raw files only;
# bench/scale-unwind-report.py reads them back here.
#
# Per run, in OUT: r<ROUND>-<MODE>.cw (cpuwork's key=value line: units_per_cpu_s), .json.gz
# (the profile, serve's from /api/profile for its window, with .status.json from /api/status
# at its end: its unwind counters; .json without gzip), .err (hotcold
# -v), .bpf.json (`bpftool -j prog show` while it samples: hc_sample's run_time_ns / run_cnt
# with kernel.bpf_stats_enabled), .cpu ("TICKS FROM TO": hotcold's processes' CPU from 1 s
# into the window to 1 s before its end, table building at load left out). MODE `none`:
# cpuwork alone.
#
# Usage: bench/scale-unwind.sh OUT [--rounds R] [--seconds T]
#                                  [--modes "none fp copy table serve-table serve-copy"]
#                                  [--freq HZ] [--cpuwork PATH]              (as root)
# Defaults: 2 rounds, 8 s windows, 999 Hz, cpuwork found on PATH.
set -uo pipefail
export LC_ALL=C

# shellcheck source=bench/lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

OUT=${1:?usage: bench/scale-unwind.sh OUT [options]}
shift
ROUNDS=2
SECS=8
MODES="none fp copy table serve-table serve-copy"
FREQ=999
CPUWORK=cpuwork
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--modes) MODES=$2; shift 2 ;;
	--freq) FREQ=$2; shift 2 ;;
	--cpuwork) CPUWORK=$2; shift 2 ;;
	*) echo "bench/scale-unwind.sh: unknown option $1" >&2; exit 64 ;;
	esac
done
mkdir -p "$OUT"
sysctl -q kernel.bpf_stats_enabled=1 2>/dev/null ||
	echo 1 >/proc/sys/kernel/bpf_stats_enabled 2>/dev/null || true
{
	echo "cpus=$(nproc) kernel=$(uname -r) freq=$FREQ secs=$SECS rounds=$ROUNDS modes=$MODES"
	date -u +%FT%TZ
} >"$OUT/machine.txt"

# window_cpu PID SECS FILE: hotcold's CPU in the middle of its window (from 1 s after it opens
# to 1 s before it ends: table building at load is left out), "ticks from to" into FILE, with
# bpftool's program list halfway
window_cpu() {
	local t0 t1 s0 s1 mid=$(((SECS - 2) / 2))
	sleep 1
	s0=$(date +%s.%N)
	t0=$(tree_ticks "$1")
	sleep "$mid"
	bpftool -j prog show >"$3.bpf.json" 2>/dev/null || true
	sleep $((SECS - 2 - mid))
	t1=$(tree_ticks "$1")
	s1=$(date +%s.%N)
	echo "$((t1 - t0)) $s0 $s1" >"$3.cpu"
}

run_one() {
	local r=$1 mode=$2 pfx=$OUT/r$1-$2 cw prof i addr from to
	# cpuwork outlasts hotcold's startup (BPF verification on busy CPUs) and its window
	"$CPUWORK" -l $((SECS + 12)) >"$pfx.cw" 2>&1 &
	cw=$!
	sleep 0.5
	case "$mode" in
	none) ;;
	serve-*)
		# serve's window: the whole seconds after it is serving, from /api/profile
		hotcold serve -v --unwind "${mode#serve-}" -F "$FREQ" --data-dir none \
			--listen 127.0.0.1:0 </dev/null 2>"$pfx.err" &
		prof=$!
		addr=""
		for ((i = 0; i < 300; i++)); do
			addr=$(sed -n 's|.*serving http://\([^/]*\)/.*|\1|p' "$pfx.err" 2>/dev/null)
			[ -n "$addr" ] && break
			sleep 0.1
		done
		from=$(date +%s)
		window_cpu "$prof" "$SECS" "$pfx"
		to=$(date +%s)
		curl -sf "http://$addr/api/profile?from=${from}000&to=${to}000&max_nodes=1000000" \
			-o "$pfx.json" || echo "bench/scale-unwind.sh: no profile from serve at '$addr'" >&2
		curl -sf "http://$addr/api/status" -o "$pfx.status.json" || true
		kill -INT "$prof"
		wait "$prof" || echo "bench/scale-unwind.sh: serve $mode exited $?" >&2
		command -v gzip >/dev/null && gzip -f "$pfx.json"
		;;
	*)
		hotcold record -v --unwind "$mode" -F "$FREQ" -d "${SECS}s" -o "$pfx.json" \
			2>"$pfx.err" &
		prof=$!
		for ((i = 0; i < 300; i++)); do
			grep -q "the window is open" "$pfx.err" 2>/dev/null && break
			sleep 0.1
		done
		window_cpu "$prof" "$SECS" "$pfx"
		wait "$prof" || echo "bench/scale-unwind.sh: record $mode failed" >&2
		command -v gzip >/dev/null && gzip -f "$pfx.json"
		;;
	esac
	wait "$cw"
	echo "r$r $mode: $(tr ' ' '\n' <"$pfx.cw" | grep units_per_cpu_s) cpu=$(cat "$pfx.cpu" 2>/dev/null)" >&2
}

for r in $(seq 1 "$ROUNDS"); do
	# shellcheck disable=SC2086 # the modes, a word each
	set -- $MODES
	k=$(((r - 1) % $#))
	for mode in "${@:k+1}" "${@:1:k}"; do
		run_one "$r" "$mode"
	done
done
