#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/bpfcost.sh: what each profiler's BPF program costs per sample, from the kernel's own
# accounting (kernel.bpf_stats_enabled: run_time_ns and run_cnt per program), while
# bench/cpuwork keeps every CPU busy. Unlike throughput ratios this is not blurred by the
# machine's noise: it is the CPU time the programs themselves ran.
#
# Usage: bench/bpfcost.sh [--hotcold PATH] [--freq N] [--seconds T] [--rounds R]
#                         [--workload fp|nofp]                                      (as root)
# Compares: hotcold's hc_sample with frame pointers (--unwind fp) and with stack copies
# (--unwind copy: the copy is taken in hc_sample) and walking the unwind tables (--unwind
# table: the whole DWARF unwind runs in hc_sample); bpftrace `profile:hz:N { @[kstack, ustack]
# = count(); }`; and the floor, bpftrace `profile:hz:N { @ = count(); }` (no stacks). perf
# record samples without BPF, so it has no figure here (its cost is in bench/run.sh's ratios).
# --workload nofp: `cpuwork -l` built with -fomit-frame-pointer, as bench/run.sh builds it.
set -uo pipefail
export LC_ALL=C

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
HOTCOLD=$REPO/build/hotcold
FREQ=999
T=6
ROUNDS=3
WORKLOAD=fp

while [ $# -gt 0 ]; do
	case "$1" in
	--hotcold) HOTCOLD=${2:?}; shift ;;
	--freq) FREQ=${2:?}; shift ;;
	--seconds) T=${2:?}; shift ;;
	--rounds) ROUNDS=${2:?}; shift ;;
	--workload) WORKLOAD=${2:?}; shift ;;
	*) sed -n '/^# Usage:/,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 64 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "bench/bpfcost.sh: needs root" >&2; exit 77; }
command -v bpftrace >/dev/null && command -v bpftool >/dev/null ||
	{ echo "bench/bpfcost.sh: needs bpftrace and bpftool" >&2; exit 69; }

tmp=$(mktemp -d /tmp/hotcold-bpfcost.XXXXXX)
trap 'rm -rf "$tmp"; sysctl -q kernel.bpf_stats_enabled="$old_stats"' EXIT
old_stats=$(sysctl -n kernel.bpf_stats_enabled)
sysctl -q kernel.bpf_stats_enabled=1
WL_ARGS=()
case "$WORKLOAD" in
fp) CFLAGS_WL="-O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls" ;;
nofp)
	CFLAGS_WL="-O2 -fomit-frame-pointer -fno-optimize-sibling-calls -DCPUWORK_OMIT_FP"
	WL_ARGS=(-l)
	;;
*) echo "bench/bpfcost.sh: --workload fp or nofp" >&2; exit 64 ;;
esac
# shellcheck disable=SC2086 # word splitting of the flags is meant
cc $CFLAGS_WL -pthread -o "$tmp/cpuwork" "$BENCH_DIR/cpuwork.c" -lm || exit 70

# Sum run_time_ns and run_cnt of every loaded perf_event program. Only one profiler runs at a
# time here, and this bpftool cannot tell which process owns a program (its "pids" is empty).
prog_stats() {
	bpftool -j prog show 2>/dev/null | jq -r '[.[] | select(.type == "perf_event")]
		| "\(map(.run_time_ns // 0) | add // 0) \(map(.run_cnt // 0) | add // 0)"'
}

# Run one profiler for T seconds under load; print "ns_per_run runs".
measure() {
	local name=$1; shift
	"$tmp/cpuwork" "${WL_ARGS[@]}" $((T + 2)) >/dev/null 2>&1 &
	local work=$!
	sleep 0.5
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err" &
	local prof=$!
	sleep "$T"
	read -r t c < <(prog_stats)
	kill -INT "$prof" 2>/dev/null
	wait "$prof" 2>/dev/null
	wait "$work" 2>/dev/null
	if [ -n "$(bpftool -j prog show | jq '.[] | select(.type == "perf_event") | .id')" ]; then
		echo "bench/bpfcost.sh: perf_event programs still loaded after $name" >&2
	fi
	if [ "${c:-0}" -gt 0 ]; then
		echo "$name $((t / c)) $c"
	else
		echo "$name NA 0"
	fi
}

echo "bench/bpfcost.sh: $(uname -r), $(nproc) CPUs, ${FREQ} Hz, ${T}s x $ROUNDS rounds, workload $WORKLOAD, $(date -u +%FT%TZ)" >&2
{
	for r in $(seq 1 "$ROUNDS"); do
		measure hotcold "$HOTCOLD" record --unwind fp -F "$FREQ" -d $((T + 5))s -o "$tmp/h.json"
		measure hotcold_copy "$HOTCOLD" record --unwind copy -F "$FREQ" -d $((T + 5))s \
			-o "$tmp/h.json"
		measure hotcold_table "$HOTCOLD" record --unwind table -F "$FREQ" -d $((T + 5))s \
			-o "$tmp/h.json"
		measure bpftrace_stacks bpftrace -e "profile:hz:$FREQ { @[kstack, ustack] = count(); }"
		measure bpftrace_nostack bpftrace -e "profile:hz:$FREQ { @ = count(); }"
	done
} | tee "$tmp/rows" >&2
echo
echo "| program | ns per sample (median of $ROUNDS) | samples per run |"
echo "|---|---:|---:|"
for n in hotcold hotcold_copy hotcold_table bpftrace_stacks bpftrace_nostack; do
	awk -v n="$n" '$1 == n && $2 != "NA" { print $2, $3 }' "$tmp/rows" | sort -n |
		awk -v n="$n" '{ v[NR] = $1; c[NR] = $2 } END {
			if (NR) printf "| %s | %d | %d |\n", n, v[int((NR + 1) / 2)], c[int((NR + 1) / 2)] }'
done
