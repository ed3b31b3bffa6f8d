#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/pg-unwind.sh: how complete user stacks are, and what unwinding costs, on Debian's
# PostgreSQL under its own pgbench (-S -c 8 -j 2: bench/pg.sh), for each way of unwinding,
# side by side in one run, interleaved (docs/benchmarks.md, "Unwinding PostgreSQL").
#
#   fp          hotcold record --unwind fp (frame pointers: bpf_get_stack)
#   dwarf       hotcold record --unwind dwarf (stack copies unwound in user space)
#   table       hotcold record --unwind table (unwound in BPF from compiled tables)
#   serve-MODE  hotcold serve --unwind MODE (table, copy or fp; --data-dir none), its profile
#               of the window taken from /api/profile (serve's copy budget is 8 MiB/s, not
#               record's 32)
#   perf-dwarf  perf record -a --call-graph dwarf (8K copies), then perf script
#
# Each run: pgbench from 1 s before the profiler until it ends, the profiler for SECONDS,
# system-wide; pgbench's throughput is taken over the profiler's window (its per-second
# progress), since hotcold's startup (BPF verification) takes seconds on two busy CPUs.
# "dwarf" is taken as a name of copy (hotcold's name for it before the tables).
# Figures per run, over the processes named postgres and pgbench:
#   on_complete, off_complete  the share of on-CPU (and, hotcold, blocked) time whose user
#       stack reaches a thread's entry: its outermost frame is _start, clone3, clone or
#       start_thread, or calls __libc_start_main (a stripped binary's _start has no name:
#       pgbench's) (perf: of samples); truncated: ended by hotcold's [truncated]
#   tps                        pgbench's throughput in the profiler's window
#   sample_ns, switch_ns       kernel bpf_stats: ns per run of hc_sample and hc_switch
#   cpu_s                      the profiler's CPU (user + sys) for the whole run, its startup
#                              and the writing of its output included (perf: record + script;
#                              serve: every process of it, the HTTP answer included)
#   window_cpu_pct             hotcold's processes' CPU from 1 s into its window to about 1 s
#                              before its end, % of a core: its user-space work while it
#                              samples, loading and output left out (issue 21: <= 1 % at 999 Hz)
# The summary has each figure's median per rate and configuration.
#
# Usage: bench/pg-unwind.sh [--rounds R] [--seconds T] [--freqs "99 999"]
#                           [--configs "fp copy table serve-table perf-dwarf"]
#                           [--hotcold PATH]
#                           [--out DIR] [--no-install]                           (as root)
# Defaults: 3 rounds, 10 s, 99 and 999 Hz, fp copy table serve-table perf-dwarf: about 15
# minutes.
set -uo pipefail
export LC_ALL=C

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
note() { echo "bench/pg-unwind.sh: $*" >&2; }
die() {
	note "$*"
	exit 1
}
INSTALL=1
# shellcheck source=bench/pg.sh
. "$BENCH_DIR/pg.sh"

ROUNDS=3
SECS=10
FREQS="99 999"
CONFIGS="fp copy table serve-table perf-dwarf"
HOTCOLD=$REPO/build/hotcold
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--freqs) FREQS=$2; shift 2 ;;
	--configs) CONFIGS=$2; shift 2 ;;
	--hotcold) HOTCOLD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--no-install) INSTALL=0; shift ;;
	-h | --help) sed -n '/^# Usage:/,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "run as root"
[ -x "$HOTCOLD" ] || die "no hotcold at $HOTCOLD"
command -v jq >/dev/null || die "needs jq"
command -v bpftool >/dev/null || die "needs bpftool"
case " $CONFIGS " in *" perf-dwarf "*) command -v perf >/dev/null || die "needs perf" ;; esac
OUT=${OUT:-$BENCH_DIR/results/pg-unwind-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" || die "cannot create $OUT"
CSV=$OUT/runs.csv
echo "round,hz,config,on_complete,on_truncated,off_complete,off_truncated,on_ms,off_ms,tps,sample_ns,switch_ns,cpu_s,window_cpu_pct" >"$CSV"

old_stats=$(sysctl -n kernel.bpf_stats_enabled)
at_exit 'sysctl -q kernel.bpf_stats_enabled='"$old_stats"
sysctl -q kernel.bpf_stats_enabled=1

# ns per run of the program named $1 (hotcold's), "NA" when not loaded.
prog_ns() {
	bpftool -j prog show 2>/dev/null | jq -r --arg n "$1" '[.[] | select(.name == $n)]
		| if length == 0 then "NA" else
		  (map(.run_time_ns // 0) | add) as $t | (map(.run_cnt // 0) | add) as $c
		  | if $c > 0 then ($t / $c | floor) else "NA" end end'
}

# The completeness of a hotcold profile: "on_complete on_truncated off_complete off_truncated
# on_ms off_ms" over the threads of postgres and pgbench processes. (Python: the flame graph
# nests deeper than jq's parser allows.)
hotcold_complete() {
	python3 - "$1" <<'PY'
import json, sys
sys.setrecursionlimit(20000)
ENTRY = {"_start", "clone3", "clone", "__clone", "start_thread"}
d = json.load(open(sys.argv[1]))
on = off = on_ok = off_ok = on_tr = off_tr = 0
for p in d["flamegraph"].get("children", []):
    if p.get("kind") != "process" or p.get("name") not in ("postgres", "pgbench"):
        continue
    for t in p.get("children", []):
        for f in t.get("children", []):
            a, b = f.get("on_cpu_ns", 0), f.get("off_cpu_ns", 0)
            on += a
            off += b
            # a stripped binary's unnamed _start calls __libc_start_main
            second = {c.get("name") for c in f.get("children", [])}
            if f.get("kind") == "user" and (f.get("name") in ENTRY or "__libc_start_main" in second):
                on_ok += a
                off_ok += b
            if f.get("name") == "[truncated]":
                on_tr += a
                off_tr += b
r = lambda x, y: x / y if y else 0
print(r(on_ok, on), r(on_tr, on), r(off_ok, off), r(off_tr, off), on // 1000000, off // 1000000)
PY
}

# perf script's samples of postgres and pgbench: the share whose outermost user frame is an
# entry, "on_complete 0 NA NA samples NA".
perf_complete() {
	perf script -i "$1" -F comm,ip,sym 2>/dev/null | awk '
		function flush() {
			if (keep) {
				n++
				if (last ~ /^(_start|clone3|clone|__clone|start_thread)(\+|$)/ ||
				    prev ~ /^__libc_start_main(_impl|_alias_2)?(\+|$)/)
					ok++
			}
			keep = 0; last = ""; prev = ""
		}
		/^[^ \t]/ { flush(); keep = ($1 == "postgres" || $1 == "pgbench"); next }
		/^[ \t]*$/ { flush(); next }
		{ if ($1 !~ /^ffffffff/) { prev = last; last = $2 } }
		END { flush(); printf "%s 0 NA NA %d NA\n", n ? ok / n : 0, n }'
}

# pgbench's mean tps over [from, to) (unix seconds), from its --progress-timestamp lines.
window_tps() {
	awk -v a="$2" -v b="$3" '$1 == "progress:" && $2 + 0 > a && $2 + 0 <= b + 1 {
		s += $4; n++ } END { if (n) printf "%.0f", s / n; else print "NA" }' "$1"
}

# window_cpu PID T FILE: 1 s, then PID's processes' CPU over the next T - 1 s as % of a core
# into FILE (hotcold's user-space work while it samples: loading and output left out)
window_cpu() {
	local t0 t1 s0 s1
	sleep 1
	s0=$(date +%s.%N)
	t0=$(tree_ticks "$1")
	sleep $(($2 - 1))
	t1=$(tree_ticks "$1")
	s1=$(date +%s.%N)
	awk -v t=$((t1 - t0)) -v a="$s0" -v b="$s1" 'BEGIN { printf "%.2f\n", t / (b - a) }' >"$3"
}

run_one() {
	local round=$1 hz=$2 cfg=$3 pfx=$OUT/r$1-$2-$3 sample=NA switch=NA fig cpu from to
	# pgbench outlasts the profiler's startup (BPF verification is seconds on two busy
	# CPUs); its throughput is taken over the profiler's window only
	# pgbench itself in the background (not pg_bench's subshell): it is stopped below
	"$PG_BIN/pgbench" -h "$PG_DIR" -p "$PG_PORT" -U postgres -n -S -c "$PG_CLIENTS" \
		-j "$PG_THREADS" -T $((SECS + 60)) -P 1 --progress-timestamp postgres \
		>"$pfx.pgbench" 2>&1 &
	PG_LOAD_PID=$!
	sleep 1
	case "$cfg" in
	fp | dwarf | copy | table)
		/usr/bin/time -f '%U %S' -o "$pfx.time" "$HOTCOLD" record -v --unwind "$cfg" \
			-F "$hz" -d "${SECS}s" -o "$pfx.json" 2>"$pfx.err" &
		local prof=$!
		for ((i = 0; i < 600; i++)); do
			grep -q "the window is open" "$pfx.err" 2>/dev/null && break
			sleep 0.1
		done
		from=$(date +%s.%N)
		window_cpu "$prof" $((SECS - 2)) "$pfx.wcpu"
		sleep 1
		sample=$(prog_ns hc_sample)
		switch=$(prog_ns hc_switch)
		wait "$prof" || note "record failed: $(grep -v '^libbpf' "$pfx.err" | tail -2)"
		to=$(python3 -c 'import json, sys, calendar, time
sys.setrecursionlimit(20000)
d = json.load(open(sys.argv[1]))
s = d["started_at"]  # 2026-11-27T15:20:57.335Z
t = calendar.timegm(time.strptime(s[:19], "%Y-%m-%dT%H:%M:%S")) + float("0" + s[19:].rstrip("Z"))
print(t + d["duration_ns"] / 1e9)' "$pfx.json" 2>/dev/null || date +%s.%N)
		fig=$(hotcold_complete "$pfx.json")
		;;
	serve-*)
		# its own time: every process of serve (the worker is a child), taken at the end
		"$HOTCOLD" serve --unwind "${cfg#serve-}" -F "$hz" --data-dir none \
			--listen 127.0.0.1:0 </dev/null 2>"$pfx.err" &
		local prof=$! addr=""
		for ((i = 0; i < 600; i++)); do
			addr=$(sed -n 's|.*serving http://\([^/]*\)/.*|\1|p' "$pfx.err")
			[ -n "$addr" ] && break
			sleep 0.1
		done
		# the whole seconds after it is serving; serve keeps them all at this load
		sleep 1
		from=$(date +%s)
		window_cpu "$prof" $((SECS - 1)) "$pfx.wcpu"
		sleep 1
		to=$(date +%s)
		sample=$(prog_ns hc_sample)
		switch=$(prog_ns hc_switch)
		curl -sf "http://$addr/api/profile?from=${from}000&to=${to}000&max_nodes=1000000" \
			-o "$pfx.json" || note "serve: no profile from $addr"
		cpu=0
		for p in $prof $(pgrep -P "$prof"); do
			cpu=$(awk -v c="$cpu" '{ printf "%.2f", c + ($14 + $15) / 100 }' \
				"/proc/$p/stat" 2>/dev/null || echo "$cpu")
		done
		echo "$cpu 0" >"$pfx.time"
		kill -INT "$prof"
		wait "$prof" || note "serve exited $?: $(grep -v '^libbpf' "$pfx.err" | tail -2)"
		fig=$(hotcold_complete "$pfx.json")
		;;
	perf-dwarf)
		from=$(date +%s.%N)
		/usr/bin/time -f '%U %S' -o "$pfx.time" perf record -q -a --call-graph dwarf -F "$hz" \
			-o "$pfx.perf.data" -- sleep "$SECS" 2>"$pfx.err"
		to=$(date +%s.%N)
		/usr/bin/time -f '%U %S' -o "$pfx.time2" perf script -i "$pfx.perf.data" >/dev/null 2>&1
		fig=$(perf_complete "$pfx.perf.data")
		cat "$pfx.time2" >>"$pfx.time"
		rm -f "$pfx.perf.data"
		;;
	esac
	kill -INT "$PG_LOAD_PID" 2>/dev/null
	wait "$PG_LOAD_PID"
	PG_LOAD_PID=""
	local tps
	tps=$(window_tps "$pfx.pgbench" "$from" "$to")
	cpu=$(awk '{ s += $1 + $2 } END { printf "%.2f", s }' "$pfx.time")
	# shellcheck disable=SC2086 # fig's six fields
	set -- ${fig:-NA NA NA NA NA NA}
	echo "$round,$hz,$cfg,$1,$2,$3,$4,$5,$6,${tps:-NA},$sample,$switch,$cpu,$(cat "$pfx.wcpu" 2>/dev/null || echo NA)" |
		tee -a "$CSV" >&2
	rm -f "$pfx.json"
}

pg_start
note "$(uname -r), $(nproc) CPUs; $ROUNDS rounds x ${SECS}s at $FREQS Hz: $CONFIGS"
for r in $(seq 1 "$ROUNDS"); do
	for hz in $FREQS; do
		# rotate the order each round
		# shellcheck disable=SC2086 # the configurations, a word each
		set -- $CONFIGS
		k=$(((r - 1) % $#))
		order="${*:k+1} ${*:1:k}"
		for cfg in $order; do
			run_one "$r" "$hz" "$cfg"
		done
	done
done

{
	echo "# User stacks on PostgreSQL under pgbench -S -c $PG_CLIENTS -j $PG_THREADS ($ROUNDS rounds x ${SECS}s, medians)"
	echo
	echo "| Hz | unwinding | on-CPU time complete | [truncated] | blocked time complete | [truncated] | pgbench tps | hc_sample ns | hc_switch ns | profiler CPU s | hotcold CPU in the window, % of a core |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	python3 - "$CSV" "$FREQS" "$CONFIGS" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(rs, k):
    v = [float(r[k]) for r in rs if r[k] not in ("NA", "")]
    return statistics.median(v) if v else None
pct = lambda x: "NA" if x is None else f"{100 * x:.1f} %"
num = lambda x: "NA" if x is None else f"{x:.0f}"
for hz in sys.argv[2].split():
    for c in sys.argv[3].split():
        rs = [r for r in rows if r["hz"] == hz and r["config"] == c]
        if not rs:
            continue
        cpu, wc = med(rs, "cpu_s"), med(rs, "window_cpu_pct")
        print(f"| {hz} | {c} | {pct(med(rs, 'on_complete'))} | {pct(med(rs, 'on_truncated'))} | "
              f"{pct(med(rs, 'off_complete'))} | {pct(med(rs, 'off_truncated'))} | "
              f"{num(med(rs, 'tps'))} | {num(med(rs, 'sample_ns'))} | {num(med(rs, 'switch_ns'))} | "
              f"{'NA' if cpu is None else f'{cpu:.2f}'} | {'NA' if wc is None else f'{wc:.2f}'} |")
PY
	echo
	echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%F); hotcold $HOTCOLD ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null))."
} | tee "$OUT/summary.md"
note "results: $OUT"
