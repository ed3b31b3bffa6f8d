#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/scale-unwind.sh: user-stack unwinding at scale: bench/cpuwork -l (its hot path below
# glibc's qsort(), built without frame pointers) on every CPU, and `hotcold record -F 999`
# with each --unwind mode, interleaved (docs/benchmarks.md, "Unwinding at 16 CPUs"). Made for
# the lent 16-CPU machine, where only bundled programs run (bench/bundle.sh): everything it
# runs is found on PATH, and it writes raw files only; bench/scale-unwind-report.py reads them
# back here.
#
# Per run, in OUT: r<ROUND>-<MODE>.cw (cpuwork's key=value line: units_per_cpu_s), .json.gz
# (the profile; .json without gzip), .err (hotcold -v), .bpf.json (`bpftool -j prog show` while it samples: hc_sample's
# run_time_ns / run_cnt with kernel.bpf_stats_enabled). MODE `none`: cpuwork alone.
#
# Usage: bench/scale-unwind.sh OUT [--rounds R] [--seconds T] [--modes "none fp dwarf table"]
#                                  [--freq HZ] [--cpuwork PATH]              (as root)
# Defaults: 2 rounds, 8 s windows, 999 Hz, cpuwork found on PATH.
set -uo pipefail
export LC_ALL=C

OUT=${1:?usage: bench/scale-unwind.sh OUT [options]}
shift
ROUNDS=2
SECS=8
MODES="none fp dwarf table"
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

run_one() {
	local r=$1 mode=$2 pfx=$OUT/r$1-$2 cw prof i
	# cpuwork outlasts hotcold's startup (BPF verification on busy CPUs) and its window
	"$CPUWORK" -l $((SECS + 10)) >"$pfx.cw" 2>&1 &
	cw=$!
	sleep 0.5
	if [ "$mode" != none ]; then
		hotcold record -v --unwind "$mode" -F "$FREQ" -d "${SECS}s" -o "$pfx.json" \
			2>"$pfx.err" &
		prof=$!
		for ((i = 0; i < 300; i++)); do
			grep -q "the window is open" "$pfx.err" 2>/dev/null && break
			sleep 0.1
		done
		sleep $((SECS / 2))
		bpftool -j prog show >"$pfx.bpf.json" 2>/dev/null || true
		wait "$prof" || echo "bench/scale-unwind.sh: record $mode failed" >&2
		command -v gzip >/dev/null && gzip -f "$pfx.json"
	fi
	wait "$cw"
	echo "r$r $mode: $(tr ' ' '\n' <"$pfx.cw" | grep units_per_cpu_s)" >&2
}

for r in $(seq 1 "$ROUNDS"); do
	# shellcheck disable=SC2086 # the modes, a word each
	set -- $MODES
	k=$(((r - 1) % $#))
	for mode in "${@:k+1}" "${@:1:k}"; do
		run_one "$r" "$mode"
	done
done
