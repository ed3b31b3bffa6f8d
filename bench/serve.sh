#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/serve.sh: the footprint of `hotcold serve` (RSS of both processes, their CPU time) at
# 999 Hz under a busy mix of processes, side by side with peers doing part of the job, and the
# speed of its API once the store is warm.
#
#   1. Footprint. A busy mix runs throughout: stress-ng with a CPU hog, a context-switch and a
#      pipe stressor (blocking, wakeups, preemption), and a shell starting a short process
#      (/bin/ls) 10 times a second (process churn). Each round runs, in turn,
#      `hotcold serve -F 999`, bpftrace (999 Hz kernel+user stacks per process, the usual
#      one-liner) and libbpf-tools offcputime, each for T s; the order rotates per round. For
#      each: RSS of every process of the tool, sampled every 2 s (max over the run, and the
#      last sample: flat after warm-up or not), and CPU time (utime + stime from /proc, all
#      its processes) as a share of one core. Medians over rounds.
#   2. API. A serve instance keeps running under a load with many distinct stacks (the
#      compiler building hotcold, over and over, in a scratch build dir) for W s; then each
#      query is timed R times with curl (median), first with the compiler still running (it
#      takes both CPUs: the server competes for one), then again 3 s after it stopped, over
#      the same seconds: /api/profile pruned to 20000 nodes and unpruned (the node count of
#      the range), /api/timeline for the last hour, /api/status.
#
# Usage: bench/serve.sh [--rounds N] [--seconds T] [--warm W] [--reps R] [--quick]
#                       [--api-only]                                             (as root)
# Results: printed, and written to bench/results/serve-<UTC timestamp>/.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 seconds=60 warm=120 reps=7
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift ;;
	--seconds) seconds=$2; shift ;;
	--warm) warm=$2; shift ;;
	--reps) reps=$2; shift ;;
	--quick) rounds=1 seconds=20 warm=30 reps=3 ;;
	--api-only) rounds=0 ;;
	*) echo "unknown option $1" >&2; exit 64 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "bench/serve.sh: run as root" >&2; exit 77; }
for t in stress-ng bpftrace offcputime curl jq; do
	command -v $t >/dev/null || { echo "bench/serve.sh: needs $t" >&2; exit 69; }
done
hotcold=$PWD/build/hotcold
out=bench/results/serve-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"
page=$(getconf PAGESIZE)
hz=$(getconf CLK_TCK)

# All processes of a tree rooted at $1 (the tool and its children).
tree() {
	local p=$1 kids
	echo "$p"
	kids=$(cat /proc/"$p"/task/*/children 2>/dev/null || true)
	for k in $kids; do tree "$k"; done
}

rss_kb() { # sum over the tree
	local sum=0 r
	for p in $(tree "$1"); do
		r=$(awk '/^VmRSS/ {print $2}' /proc/"$p"/status 2>/dev/null || echo 0)
		sum=$((sum + ${r:-0}))
	done
	echo $sum
}

cpu_ticks() {
	local sum=0 t
	for p in $(tree "$1"); do
		t=$(awk '{print $14 + $15}' /proc/"$p"/stat 2>/dev/null || echo 0)
		sum=$((sum + ${t:-0}))
	done
	echo $sum
}

run_tool() { # name -> "max_rss_kb last_rss_kb cpu_share"
	local name=$1 pid max=0 last=0 t0 t1 r start end
	case $name in
	hotcold) "$hotcold" serve -F 999 --listen 127.0.0.1:0 2>"$out/$name.err" & ;;
	bpftrace) bpftrace -e 'profile:hz:999 { @[kstack, ustack, comm] = count(); }' \
			>"$out/$name.out" 2>"$out/$name.err" & ;;
	offcputime) offcputime >"$out/$name.out" 2>"$out/$name.err" & ;;
	esac
	pid=$!
	sleep 3 # loaded and attached
	start=$(date +%s%N)
	t0=$(cpu_ticks $pid)
	for _ in $(seq $((seconds / 2))); do
		sleep 2
		r=$(rss_kb $pid)
		last=$r
		[ "$r" -gt "$max" ] && max=$r
	done
	t1=$(cpu_ticks $pid)
	end=$(date +%s%N)
	kill -INT $pid
	wait $pid 2>/dev/null || true
	awk -v m=$max -v l=$last -v c=$((t1 - t0)) -v hz=$hz -v ns=$((end - start)) \
		'BEGIN { printf "%d %d %.4f\n", m, l, c / hz / (ns / 1e9) }'
}

median() { sort -n | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

if [ "$rounds" -gt 0 ]; then
echo "footprint: $rounds rounds x $seconds s per tool, busy mix running" | tee "$out/summary.md"
mix_s=$((rounds * 3 * (seconds + 6) + 30))
stress-ng --cpu 1 --switch 1 --pipe 1 --timeout $mix_s >/dev/null 2>&1 &
mix=$!
(end=$((SECONDS + mix_s)); while [ $SECONDS -lt $end ]; do ls /usr/bin >/dev/null; sleep 0.1; done) &
churn=$!
tools=(hotcold bpftrace offcputime)
echo "round,tool,max_rss_kb,last_rss_kb,cpu_share" >"$out/footprint.csv"
for r in $(seq "$rounds"); do
	for i in 0 1 2; do
		tool=${tools[$(((i + r) % 3))]}
		res=$(run_tool "$tool")
		echo "$r,$tool,${res// /,}" | tee -a "$out/footprint.csv"
	done
done
kill $mix $churn 2>/dev/null || true
wait $mix $churn 2>/dev/null || true
{
	echo
	echo "| tool | RSS max (MB) | RSS at the end (MB) | CPU (% of one core) |"
	echo "|---|---|---|---|"
	for tool in "${tools[@]}"; do
		mx=$(awk -F, -v t=$tool '$2 == t {print $3}' "$out/footprint.csv" | median)
		ls=$(awk -F, -v t=$tool '$2 == t {print $4}' "$out/footprint.csv" | median)
		cp=$(awk -F, -v t=$tool '$2 == t {print $5}' "$out/footprint.csv" | median)
		awk -v t=$tool -v m=$mx -v l=$ls -v c=$cp \
			'BEGIN { printf "| %s | %.1f | %.1f | %.2f |\n", t, m / 1024, l / 1024, c * 100 }'
	done
} | tee -a "$out/summary.md"
fi

# ---- 2. the API on a warm store ----
echo | tee -a "$out/summary.md"
echo "API: serve -F 999 warmed $warm s under a compiler loop; $reps requests each, median" |
	tee -a "$out/summary.md"
scratch=$(mktemp -d)
"$hotcold" serve -F 999 --listen 127.0.0.1:0 2>"$out/api-serve.err" &
spid=$!
sleep 2
addr=$(sed -n 's|.*serving http://\([^/]*\)/.*|\1|p' "$out/api-serve.err")
meson setup "$scratch/b" >/dev/null
(end=$((SECONDS + warm + 5)); while [ $SECONDS -lt $end ]; do
	ninja -C "$scratch/b" >/dev/null 2>&1 || true
	ninja -C "$scratch/b" -t clean >/dev/null 2>&1 || true
done) &
load=$!
sleep "$warm"
query() { # path -> "median_ms nodes bytes"
	local path=$1 times=() sz
	for _ in $(seq "$reps"); do
		times+=("$(curl -s -o "$out/q.json" -w '%{time_total}' "http://$addr$path")")
	done
	sz=$(stat -c %s "$out/q.json")
	nodes=$(grep -o '"kind":' "$out/q.json" | wc -l)
	printf '%s\n' "${times[@]}" | awk '{print $1 * 1000}' | median | tr '\n' ' '
	echo "$nodes $sz"
}
queries() { # label; the same absolute seconds each time
	echo
	echo "$1"
	echo
	echo "| query | median ms | nodes | bytes |"
	echo "|---|---|---|---|"
	for q in "/api/profile?from=$r_from&to=$r_to" \
		"/api/profile?from=$r_from&to=$r_to&max_nodes=1000000" \
		"/api/profile?from=$r_to_30&to=$r_to" \
		"/api/profile?from=$r_to_30&to=$r_to&max_nodes=1000000" \
		"/api/timeline?from=-1h" "/api/status"; do
		read -r ms nodes sz <<<"$(query "$q")"
		echo "| \`$q\` | $ms | $nodes | $sz |"
	done
}
now_s=$(date +%s)
r_to=$(((now_s - 3) * 1000))
r_from=$((r_to - 60000))
r_to_30=$((r_to - 10000))
queries "while the compiler loop runs (ranges: 60 s and 10 s, ending 3 s ago)" | tee -a "$out/summary.md"
kill $load 2>/dev/null || true
wait $load 2>/dev/null || true
pkill -f "ninja -C $scratch" 2>/dev/null || true
sleep 3
queries "the same seconds, the machine quiet" | tee -a "$out/summary.md"
curl -s "http://$addr/api/status" | jq -c '{memory, store, retention}' | tee -a "$out/summary.md"
kill -TERM $spid
wait $spid 2>/dev/null || true
rm -rf "$scratch"
echo "results: $out"
