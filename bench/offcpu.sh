#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/offcpu.sh: off-CPU tracing overhead on a switch-heavy machine, hotcold side by side
# with libbpf-tools offcputime and bpftrace, in one run.
#
# The workload is `stress-ng --switch 2` (two pairs of processes ping-ponging over pipes: as
# many context switches as the machine can do). For each round, each configuration runs the
# workload for T seconds while the tracer is attached, in an order rotated by round:
#   none        no tracer
#   hotcold     hotcold record (on-CPU at -F 99 plus off-CPU from sched_switch, the default)
#   hotcold-always  the same with --no-stack-reuse (stacks at every switch-out, budgeted)
#   hotcold-base    hotcold record as hotcold, with the --base binary (an older build)
#   offcputime  libbpf-tools offcputime (kernel+user stack at every switch-out)
#   bpftrace    a bpftrace offcputime script (kstack+ustack at every switch-out, by tid)
# The figure is stress-ng's bogo ops/s (real time) under the tracer divided by the `none` run
# of the same round; the report gives the median over rounds and every raw figure.
#
# Usage: bench/offcpu.sh [--rounds N] [--seconds T] [--configs "..."] [--hotcold PATH]
#        [--base PATH: hotcold-base, another build for a before/after comparison]
#        [--out DIR]                                   (as root)
set -uo pipefail
export LC_ALL=C

die() { echo "bench/offcpu.sh: $*" >&2; exit 1; }

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
HOTCOLD="$REPO/build/hotcold"
HOTCOLD_BASE="" # --base: another build, the hotcold-base configuration (before/after)
ROUNDS=5
SECS=5
CONFIGS="none hotcold hotcold-always offcputime bpftrace"
OUT=""

while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--configs) CONFIGS=$2; shift 2 ;;
	--hotcold) HOTCOLD=$2; shift 2 ;;
	--base) HOTCOLD_BASE=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	-h | --help) sed -n '3,20p' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "run as root"
for t in stress-ng bpftrace offcputime; do
	command -v "$t" >/dev/null || die "$t is missing (apt-get install stress-ng bpftrace libbpf-tools)"
done
[ -x "$HOTCOLD" ] || die "no hotcold binary at $HOTCOLD (meson compile -C build)"
case " $CONFIGS " in
*" hotcold-base "*) [ -x "$HOTCOLD_BASE" ] || die "hotcold-base needs --base PATH (a hotcold binary)" ;;
esac
OUT=${OUT:-$BENCH_DIR/results/offcpu-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
CSV="$OUT/offcpu.csv"
echo "round,config,bogo_ops_per_s" >"$CSV"

BT_SCRIPT="$OUT/offcpu.bt"
cat >"$BT_SCRIPT" <<'EOF'
tracepoint:sched:sched_switch {
	@start[args->prev_pid] = nsecs;
	@ks[args->prev_pid] = kstack;
	@us[args->prev_pid] = ustack;
	$s = @start[args->next_pid];
	if ($s) {
		@off[@ks[args->next_pid], @us[args->next_pid]] = sum(nsecs - $s);
		delete(@start[args->next_pid]);
	}
}
EOF

# Start a tracer in the background (TRACER_PID). It must be attached before the workload.
start_tracer() {
	local cfg=$1 log=$2
	case "$cfg" in
	hotcold) "$HOTCOLD" record -F 99 -d 3600s -o "$OUT/hotcold.json" </dev/null 2>"$log" & ;;
	hotcold-base) "$HOTCOLD_BASE" record -F 99 -d 3600s -o "$OUT/hotcold-base.json" \
		</dev/null 2>"$log" & ;;
	hotcold-always) "$HOTCOLD" record -F 99 -d 3600s --no-stack-reuse \
		-o "$OUT/hotcold-always.json" </dev/null 2>"$log" & ;;
	offcputime) offcputime </dev/null >"$OUT/offcputime.txt" 2>"$log" & ;;
	bpftrace) bpftrace "$BT_SCRIPT" </dev/null >"$OUT/bpftrace.txt" 2>"$log" & ;;
	*) return 1 ;;
	esac
	TRACER_PID=$!
}

run_one() {
	local round=$1 cfg=$2 pid="" ops
	if [ "$cfg" != none ]; then
		start_tracer "$cfg" "$OUT/$cfg.log" || die "unknown config $cfg"
		pid=$TRACER_PID
		sleep 3 # attach (bpftrace compiles for a while)
		kill -0 "$pid" 2>/dev/null || die "$cfg exited early: $(tail -3 "$OUT/$cfg.log")"
	fi
	ops=$(stress-ng --switch 2 -t "$SECS" --metrics-brief 2>&1 |
		awk '/metrc:.* switch +[0-9]/ { print $(NF-1); exit }')
	if [ -n "$pid" ]; then
		kill -INT "$pid"
		wait "$pid" 2>/dev/null
	fi
	echo "$round,$cfg,${ops:-0}" >>"$CSV"
	echo "round $round $cfg: ${ops:-?} bogo ops/s" >&2
}

read -r -a CFGS <<<"$CONFIGS"
n=${#CFGS[@]}
for ((r = 0; r < ROUNDS; r++)); do
	for ((i = 0; i < n; i++)); do
		run_one "$r" "${CFGS[$(((i + r) % n))]}"
	done
done

# Median over rounds of (config / none of the same round).
{
	echo "# off-CPU tracing overhead: stress-ng --switch 2, $ROUNDS rounds x ${SECS}s, interleaved"
	echo
	echo "| configuration | median bogo ops/s | throughput kept (median of per-round ratios) | per-round ratios |"
	echo "|---|---|---|---|"
	awk -F, 'NR > 1 { v[$1","$2] = $3; cfg[$2] = 1; rounds[$1] = 1 }
	function median(a, n,   i, j, t) {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	END {
		split("'"$CONFIGS"'", order, " ")
		for (k = 1; k in order; k++) {
			c = order[k]; n = 0; m = 0; list = ""
			for (r in rounds) {
				raw[++m] = v[r","c]
				if (v[r",none"] > 0) { ratio[++n] = v[r","c] / v[r",none"]; list = list sprintf("%.3f ", ratio[n]) }
			}
			printf "| %s | %.0f | %.3f | %s|\n", c, median(raw, m), median(ratio, n), list
			delete raw; delete ratio
		}
	}' "$CSV"
	echo
	echo "Machine: $(nproc) CPUs, $(uname -r); raw figures in offcpu.csv."
	if [ -f "$OUT/hotcold.json" ]; then
		python3 - "$OUT/hotcold.json" <<'EOF' 2>/dev/null || true
import json, sys
d = json.load(open(sys.argv[1]))
s = d["scheduler"]
print("hotcold's last run: %d switches, stacks captured %d, reused %d, not captured (budget) %d;"
      " lost %s" % (s["switches"], s["stacks"]["captured"], s["stacks"]["reused"],
                    s["stacks"]["not_captured"],
                    {k: v for k, v in d["sampling"]["lost"].items() if v}))
EOF
	fi
} | tee "$OUT/summary.md"
