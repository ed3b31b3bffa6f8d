#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/locks.sh: the cost of `hotcold record --locks` on contention-heavy workloads, side by
# side with `perf lock contention`, and what each of them saw (docs/benchmarks.md#lock-contention).
#
# The workload is bench/lockwork (THREADS threads doing nothing but system calls that contend
# on one kernel lock; modes: mmap = mmap_lock, dir = a directory's i_rwsem, epoll = an epoll
# instance's mutex; bench/lockwork.c). For each round, for each mode, every configuration runs
# the workload for T seconds, in an order rotated by round and mode:
#   none           no profiler
#   hotcold        hotcold record -F 99 (on-CPU sampling and off-CPU tracing: the default;
#                  what hotcold costs before --locks)
#   hotcold-locks  the same with --locks
#   perf-lock      perf lock contention: with BPF (`perf lock contention -a -b`) when this
#                  perf has it, else the tracepoint mode, `perf lock record -a` (every
#                  contention_begin/_end a sample with a call chain) then
#                  `perf lock contention -i`, whose cost is reported apart ("post")
# Each profiler run is paired with the `none` run of the same round and mode; the report is the
# median over rounds of ops/s(profiler) / ops/s(none) with [min, max], the profiler's CPU time
# and peak RSS (GNU time), the contentions and total wait each tool reported, hotcold's dropped
# counters, and per lock kind what each tool saw. Then, per mode:
#   joint  two runs with hotcold --locks and perf attached together, one in each attach order:
#          both tools' answers about the same contentions. The tool attached first runs first
#          at both tracepoints, so each one's wait includes the part of the other's handler that
#          runs between its own two timestamps; the two orders show how much that is.
#   cost   one run of hotcold --locks alone with kernel.bpf_stats_enabled=1: the run time of
#          hc_lock_begin and hc_lock_end per contention, from the kernel's own accounting
#          (needs bpftool; not blurred by the machine's noise, unlike the ratios)
#
# Performance is compared as ratios measured side by side in one run, never as absolute times:
# these machines are shared and noisy. Run it under `flock /tmp/hc-e2e.lock`.
#
# Usage: bench/locks.sh [options]          (as root)
#   --hotcold PATH     hotcold binary (default: build/hotcold)
#   --rounds N         rounds (default 5)
#   --seconds T        workload seconds per run (default 8)
#   --modes "M ..."    lockwork modes (default "mmap dir epoll")
#   --threads N        lockwork threads (default 4)
#   --configs "C ..."  configurations (default "none hotcold hotcold-locks perf-lock")
#   --lead S           seconds between a profiler being ready and the workload starting (1)
#   --no-joint         skip the joint runs
#   --no-cost          skip the BPF program cost runs
#   --quick            --rounds 1 --seconds 3
#   --out DIR          results directory (default bench/results/locks-<UTC timestamp>)
#   --no-install       do not apt-get missing tools
#   --report DIR       only re-render DIR/summary.md from DIR/*.csv and DIR/machine.txt
#   -h, --help
set -uo pipefail
export LC_ALL=C # one decimal separator for EPOCHREALTIME, awk and printf

die() { echo "bench/locks.sh: $*" >&2; exit 1; }
note() { echo "bench/locks.sh: $*" >&2; }

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
# shellcheck source=bench/lib.sh
. "$BENCH_DIR/lib.sh"

HOTCOLD=""
ROUNDS=5
SECONDS_T=8
MODES="mmap dir epoll"
THREADS=4
LEAD=1
JOINT=1
COST=1
OUT=""
INSTALL=1
REPORT_ONLY=""
CONFIGS=(none hotcold hotcold-locks perf-lock)

usage() { sed -n '/^# Usage:/,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--hotcold) HOTCOLD=${2:?}; shift ;;
	--rounds) ROUNDS=${2:?}; shift ;;
	--seconds) SECONDS_T=${2:?}; shift ;;
	--modes) MODES=${2:?}; shift ;;
	--threads) THREADS=${2:?}; shift ;;
	--configs) read -r -a CONFIGS <<<"${2:?}"; shift ;;
	--lead) LEAD=${2:?}; shift ;;
	--no-joint) JOINT=0 ;;
	--no-cost) COST=0 ;;
	--quick) ROUNDS=1; SECONDS_T=3 ;;
	--out) OUT=${2:?}; shift ;;
	--no-install) INSTALL=0 ;;
	--report) REPORT_ONLY=${2:?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 64 ;;
	esac
	shift
done

# ---------------------------------------------------------------------------------------------
# Report (also: bench/locks.sh --report DIR re-renders DIR/summary.md from its CSV files)

# The awk functions every report table uses.
AWK_LIB='
function med(a, n,   i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	if (n == 0) return ""
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function lo(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
function hi(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
function human(n) {
	if (n >= 1e6) return sprintf("%.2f M", n / 1e6)
	if (n >= 1e4) return sprintf("%.0f k", n / 1e3)
	return sprintf("%.0f", n)
}
function secs(ns) {
	if (ns >= 1e9) return sprintf("%.2f s", ns / 1e9)
	if (ns >= 1e6) return sprintf("%.1f ms", ns / 1e6)
	return sprintf("%.0f us", ns / 1e3)
}
'

# Overhead and what each tool counted, per mode and configuration.
report_overhead() {
	awk -F, -v modes="$MODES" "$AWK_LIB"'
	NR == 1 { next }
	{
		key = $1 SUBSEP $2 SUBSEP $3
		ok[key] = ($5 != "") && ($10 == "" || $10 == "0") && ($15 == "" || $15 == "0")
		ops[key] = $8; opc[key] = $9
		rss[key] = $12; cpu[key] = $13 + $14; prss[key] = $16; pcpu[key] = $17 + $18
		ev[key] = $19; wt[key] = $20; drop[key] = $21; nost[key] = $22; mib[key] = $23
		lost[key] = $25
		rounds[$1] = 1
	}
	END {
		printf "| workload | configuration | ops/s kept (median [min, max]) | per CPU-s kept | profiler CPU s | post-processing CPU s | peak RSS MiB (post) | contentions seen | total wait | hotcold dropped / no stack; perf lost chunks | perf.data MiB |\n"
		printf "|---|---|---|---|---:|---:|---:|---:|---:|---|---:|\n"
		nm = split(modes, M, " ")
		for (mi = 1; mi <= nm; mi++) {
			m = M[mi]
			nb = 0; delete B
			for (r in rounds) {
				k = r SUBSEP m SUBSEP "none"
				if (ok[k]) B[++nb] = ops[k]
			}
			if (nb) printf "| %s | none | 1 (= %s ops/s) | 1 | | | | | | | |\n", m, human(med(B, nb))
			nc = split("hotcold hotcold-locks perf-lock", C, " ")
			for (ci = 1; ci <= nc; ci++) {
				c = C[ci]; n = 0; bad = 0
				delete RW; delete RC; delete CP; delete PC; delete MEM; delete PM
				delete EV; delete WT; delete DR; delete NS; delete MB; delete LO
				for (r in rounds) {
					k = r SUBSEP m SUBSEP c; kb = r SUBSEP m SUBSEP "none"
					if (!(k in ok)) continue
					if (!ok[k] || !ok[kb]) { bad++; continue }
					n++
					RW[n] = ops[k] / ops[kb]; RC[n] = opc[k] / opc[kb]
					CP[n] = cpu[k]; PC[n] = pcpu[k]; MEM[n] = rss[k] / 1024; PM[n] = prss[k] / 1024
					EV[n] = ev[k]; WT[n] = wt[k]; DR[n] = drop[k]; NS[n] = nost[k]; MB[n] = mib[k]
					LO[n] = lost[k] + 0
				}
				if (n == 0 && bad == 0) continue # not run
				if (n == 0) { printf "| %s | %s | failed (%d runs) | | | | | | | | |\n", m, c, bad; continue }
				dropcell = ""
				if (c == "hotcold-locks")
					dropcell = sprintf("%s / %s", human(med(DR, n)), human(med(NS, n)))
				else if (c == "perf-lock")
					dropcell = sprintf("%s [%s, %s]", med(LO, n), lo(LO, n), hi(LO, n))
				printf "| %s | %s | %.3f [%.3f, %.3f] | %.3f [%.3f, %.3f] | %.2f | %s | %.1f%s | %s | %s | %s | %s |\n",
					m, c, med(RW, n), lo(RW, n), hi(RW, n), med(RC, n), lo(RC, n), hi(RC, n),
					med(CP, n), (c == "perf-lock" && PC[1] != "") ? sprintf("%.2f", med(PC, n)) : "",
					med(MEM, n), (c == "perf-lock" && PM[1] != "") ? sprintf(" (%.1f)", med(PM, n)) : "",
					EV[1] == "" ? "" : human(med(EV, n)), WT[1] == "" ? "" : secs(med(WT, n)),
					dropcell,
					c == "perf-lock" && MB[1] != "" ? sprintf("%.0f", med(MB, n)) : ""
				if (bad) printf "| | %s: %d failed runs not counted | | | | | | | | | |\n", c, bad
			}
		}
	}' "$RUNS"
}

# Per mode, per lock kind: what hotcold --locks and perf lock contention each reported,
# medians over the rounds (kinds.csv: round,mode,config,kind,split,count,total_ns,max_ns).
# hotcold's spin and block entries of a kind are added up for the comparison, perf has one
# figure per kind; hotcold's blocked share is shown apart.
report_kinds() {
	awk -F, -v modes="$MODES" -v only="${2:-}" "$AWK_LIB"'
	NR == 1 { next }
	only != "" && $1 != only { next }
	$3 != "hotcold-locks" && $3 != "perf-lock" && $3 != "joint-hotcold" && $3 != "joint-perf" { next }
	{
		t = ($3 ~ /hotcold/) ? "h" : "p"
		k = $2 SUBSEP t SUBSEP $4
		c[k, $1] += $6; w[k, $1] += $7
		if ($5 == "block") bw[k, $1] += $7
		if ($8 > mx[k]) mx[k] = $8
		kinds[$2 SUBSEP $4] = 1; rounds[$1] = 1
		tot[$2, t, $1] += $7
	}
	END {
		printf "| workload | kind | hotcold: contentions | hotcold: total wait (blocked) | perf: contentions | perf: total wait | hotcold / perf wait |\n"
		printf "|---|---|---:|---:|---:|---:|---:|\n"
		nm = split(modes, M, " ")
		for (mi = 1; mi <= nm; mi++) {
			m = M[mi]
			# kinds of this mode, by hotcold wait then perf wait, largest first
			nk = 0; delete K; delete KW
			for (kk in kinds) {
				split(kk, P, SUBSEP)
				if (P[1] != m) continue
				K[++nk] = P[2]
				s = 0; n = 0
				for (r in rounds) { s += w[m SUBSEP "h" SUBSEP P[2], r] + w[m SUBSEP "p" SUBSEP P[2], r]; n++ }
				KW[nk] = s
			}
			for (i = 2; i <= nk; i++)
				for (j = i; j > 1 && KW[j - 1] < KW[j]; j--) {
					t = KW[j]; KW[j] = KW[j - 1]; KW[j - 1] = t; t = K[j]; K[j] = K[j - 1]; K[j - 1] = t
				}
			for (i = 1; i <= nk; i++) {
				kd = K[i]
				delete HC; delete HW; delete HB; delete PCn; delete PW
				nh = 0; np = 0
				for (r in rounds) {
					kh = m SUBSEP "h" SUBSEP kd; kp = m SUBSEP "p" SUBSEP kd
					if ((m, "h", r) in tot) { nh++; HC[nh] = c[kh, r] + 0; HW[nh] = w[kh, r] + 0; HB[nh] = bw[kh, r] + 0 }
					if ((m, "p", r) in tot) { np++; PCn[np] = c[kp, r] + 0; PW[np] = w[kp, r] + 0 }
				}
				hw = med(HW, nh); pw = med(PW, np)
				printf "| %s | %s | %s | %s (%s) | %s | %s | %s |\n", m, kd,
					nh ? human(med(HC, nh)) : "", nh ? secs(hw) : "", nh ? secs(med(HB, nh)) : "",
					np ? human(med(PCn, np)) : "", np ? secs(pw) : "",
					(nh && np && pw > 0) ? sprintf("%.2f", hw / pw) : ""
			}
		}
	}' "$1"
}

write_report() {
	local rounds secs threads perfmode
	RUNS=$OUT/runs.csv
	rounds=$(awk -F, 'NR > 1 && $1 > m { m = $1 } END { print m + 0 }' "$RUNS")
	MODES=$(awk -F, 'NR > 1 && !($2 in s) { s[$2]; printf "%s%s", sep, $2; sep = " " }' "$RUNS")
	secs=$(sed -n 's/^options: .*seconds=\([0-9]*\) .*/\1/p' "$OUT/machine.txt")
	threads=$(sed -n 's/^options: .*threads=\([0-9]*\).*/\1/p' "$OUT/machine.txt")
	perfmode=$(sed -n 's/^perf lock mode: //p' "$OUT/machine.txt")
	{
		echo "# hotcold lock-contention benchmark, $(basename "$OUT")"
		echo
		echo '```'
		cat "$OUT/machine.txt"
		echo '```'
		echo
		echo "## Overhead and what each tool counted"
		echo
		echo "bench/lockwork -t $threads, ${secs}s per run. Per round, each configuration's ops/s (wall) is"
		echo "divided by the \`none\` run of the same round and workload; median over $rounds rounds,"
		echo "[min, max] over rounds. perf-lock: $perfmode. Profiler CPU s and RSS: GNU time"
		echo "of the recording process; post-processing: \`perf lock contention -i\` afterwards."
		echo "Contentions and total wait: hotcold's locks.events and locks.wait_ns; perf's, its"
		echo "table's contended and total wait columns summed. Medians over the rounds."
		echo
		report_overhead
		echo
		echo "## Per lock kind, the same runs (medians over rounds)"
		echo
		echo "hotcold's spin and block entries of a kind added up; in brackets its blocked part."
		echo
		report_kinds "$OUT/kinds.csv"
		if [ -s "$OUT/joint.csv" ]; then
			echo
			echo "## Joint runs: hotcold --locks and perf attached to the same run"
			echo
			echo "One run per attach order. The tool attached first runs first at both tracepoints:"
			echo "each tool's wait then holds the part of the other's handler that runs between its"
			echo "own two timestamps."
			echo
			echo '```'
			cat "$OUT/joint.txt" 2>/dev/null
			echo '```'
			echo
			echo "hotcold attached first:"
			echo
			report_kinds "$OUT/joint.csv" 1
			echo
			echo "perf attached first:"
			echo
			report_kinds "$OUT/joint.csv" 2
		fi
		if [ -s "$OUT/cost.txt" ]; then
			echo
			echo "## BPF program cost per contention (kernel.bpf_stats_enabled=1, hotcold --locks alone)"
			echo
			echo "| workload | ops/s | hc_lock_end runs (hotcold's events) | hc_lock_begin ns/run | hc_lock_end ns/run | both, ns per contention | events with stacks |"
			echo "|---|---:|---:|---:|---:|---:|---:|"
			cat "$OUT/cost.txt"
		fi
		echo
		echo "Raw numbers: runs.csv (one row per run), kinds.csv, joint.csv; profiler output in logs/."
	} >"$OUT/summary.md"
}

if [ -n "$REPORT_ONLY" ]; then
	OUT=$(realpath "$REPORT_ONLY")
	[ -s "$OUT/runs.csv" ] && [ -s "$OUT/machine.txt" ] || die "$OUT: no runs.csv or machine.txt"
	write_report
	cat "$OUT/summary.md"
	exit 0
fi

[ "$(id -u)" -eq 0 ] || die "needs root (BPF, perf events, apt-get)"
[ -n "$HOTCOLD" ] || HOTCOLD=$REPO/build/hotcold
[ -x "$HOTCOLD" ] || die "no hotcold binary at $HOTCOLD (build it, or pass --hotcold PATH)"
HOTCOLD=$(realpath "$HOTCOLD")
for v in "$ROUNDS" "$SECONDS_T" "$THREADS"; do
	[[ $v =~ ^[0-9]+$ ]] || die "not a whole number: '$v'"
done
[[ $LEAD =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--lead: not a number: '$LEAD'"
for m in $MODES; do
	case "$m" in mmap | dir | epoll) ;; *) die "unknown mode '$m' (mmap, dir, epoll)" ;; esac
done
for c in "${CONFIGS[@]}"; do
	case "$c" in none | hotcold | hotcold-locks | perf-lock) ;; *) die "unknown configuration '$c'" ;; esac
done

install_missing perf:linux-perf /usr/bin/time:time cc:gcc python3:python3

# perf lock contention -b needs a perf built with BUILD_BPF_SKEL=1; Debian 12's (6.1) is not,
# and says so in its help ("not built-in because no BUILD_BPF_SKEL=1").
if perf lock contention -h 2>&1 | grep -q -- '--use-bpf' &&
	! perf lock contention -h 2>&1 | grep -q 'not built-in'; then
	PERF_MODE=bpf
	PERF_MODE_TEXT="\`perf lock contention -a -b\` (BPF, in-kernel aggregation)"
else
	PERF_MODE=record
	PERF_MODE_TEXT="\`perf lock record -a\` then \`perf lock contention -i\` (tracepoint mode: this perf has no -b)"
fi

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
[ -n "$OUT" ] || OUT=$REPO/bench/results/locks-$STAMP
mkdir -p "$OUT/logs" || die "cannot create $OUT"
OUT=$(realpath "$OUT")
TMP=$(mktemp -d /tmp/hotcold-locks.XXXXXX) || die "mktemp failed"

# Every background process this script starts is recorded here; on exit, those still running
# are killed: only if their parent is this script or another recorded process (pids are
# reused over a run this long).
BG_PIDS=()
OLD_STATS=""
cleanup() {
	local p pp ours
	for p in "${BG_PIDS[@]}"; do
		pp=$(ppid_of "$p") || continue
		ours=0
		[ "$pp" = $$ ] && ours=1
		for q in "${BG_PIDS[@]}"; do
			[ "$pp" = "$q" ] && ours=1
		done
		[ "$ours" = 1 ] && kill -KILL "$p" 2>/dev/null
	done
	# the cost runs turn kernel BPF accounting on: put it back as it was
	[ -n "$OLD_STATS" ] && sysctl -q kernel.bpf_stats_enabled="$OLD_STATS"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

LOCKWORK=$TMP/lockwork
cc -O2 -Wall -Wextra -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -pthread -o "$LOCKWORK" "$BENCH_DIR/lockwork.c" ||
	die "cannot build bench/lockwork.c"
NCPU=$(nproc)

# ---------------------------------------------------------------------------------------------
# Small helpers (as bench/run.sh's)

now() { echo "$EPOCHREALTIME"; }
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }
kv() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p" | head -1; }

n_perf_fds() {
	local f n=0
	for f in /proc/"$1"/fd/*; do
		[[ $(readlink "$f" 2>/dev/null) == *perf_event* ]] && n=$((n + 1))
	done
	echo "$n"
}



# Wait until profiler $1 (configuration $2, stderr $3) is recording: hotcold -v's "the window
# is open"; perf lock record: its two tracepoint events open on every CPU (they are enabled at
# the exec of its `sleep`, which follows at once); perf -b: its `sleep` child started (it
# attaches its BPF programs before). Max 60 s.
wait_ready() {
	local i
	for i in $(seq 1 6000); do
		case "$2" in
		hotcold*) grep -q "the window is open" "$3" 2>/dev/null && return 0 ;;
		perf-lock)
			if [ "$PERF_MODE" = record ]; then
				[ "$(n_perf_fds "$1")" -ge $((2 * NCPU)) ] && return 0
			else
				[ -n "$(cat "/proc/$1/task/$1/children" 2>/dev/null)" ] && return 0
			fi
			;;
		esac
		alive "$1" || return 1
		sleep 0.01
	done
	return 1
}


# GNU time's last line: "%M %U %S %e" -> rss_kb user_s sys_s wall_s
time_fields() { tail -1 "$1" 2>/dev/null | awk 'NF == 4 { print $1, $2, $3, $4; exit } { print "", "", "", "" }'; }

# Start configuration $1 for about $2 s, output files prefixed $3. Sets PROF_TPID (the time
# process), PROF_PID (the profiler), PROF_T0.
start_profiler() {
	local cfg=$1 secs=$2 pfx=$3
	PROF_T0=$(now)
	case "$cfg" in
	hotcold)
		/usr/bin/time -f '%M %U %S %e' -o "$pfx.time" \
			"$HOTCOLD" record -F 99 -d "${secs}s" -o "$pfx.json" -v >/dev/null 2>"$pfx.err" &
		;;
	hotcold-locks)
		/usr/bin/time -f '%M %U %S %e' -o "$pfx.time" \
			"$HOTCOLD" record --locks -F 99 -d "${secs}s" -o "$pfx.json" -v \
			>/dev/null 2>"$pfx.err" &
		;;
	perf-lock)
		if [ "$PERF_MODE" = record ]; then
			/usr/bin/time -f '%M %U %S %e' -o "$pfx.time" \
				perf lock record -a -o "$pfx.perf.data" -- sleep "$secs" \
				>/dev/null 2>"$pfx.err" &
		else
			/usr/bin/time -f '%M %U %S %e' -o "$pfx.time" \
				perf lock contention -a -b -E 1000000 -- sleep "$secs" \
				>/dev/null 2>"$pfx.err" &
		fi
		;;
	esac
	PROF_TPID=$!
	BG_PIDS+=("$PROF_TPID")
	PROF_PID=$(child_of "$PROF_TPID") || PROF_PID=""
	[ -n "$PROF_PID" ] && BG_PIDS+=("$PROF_PID")
}

# hotcold's locks section -> "events wait_ns dropped_sum no_stack dropped_detail" on stdout,
# and one kinds row per by_kind entry appended to $2 with prefix $3 (round,mode,config).
hotcold_locks() {
	python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
try:
	d = json.load(open(sys.argv[1]))
except Exception:
	print("", "", "", "", "")
	sys.exit(0)
l = d.get("locks")
if l is None:
	print("", "", "", "", "")
	sys.exit(0)
dr = l.get("dropped", {})
detail = ";".join("%s=%d" % (k, v) for k, v in dr.items() if v)
print(l["events"], l["wait_ns"], sum(v for k, v in dr.items() if not k.endswith("_ns")),
      l["no_stack"], detail or "-")
with open(sys.argv[2], "a") as f:
	for k in l["by_kind"]:
		f.write("%s,%s,%s,%d,%d,%d\n" % (sys.argv[3], k["kind"], "spin" if k["spin"] else "block",
						 k["count"], k["total_ns"], k["max_ns"]))
EOF
}

# perf lock contention's table ($1: it prints it on stderr) -> "events wait_ns" on stdout, and per type (kind) rows
# appended to $2 with prefix $3. Rows: contended, total wait, max wait, avg wait (each a
# number and a unit), type, caller.
perf_locks() {
	awk -v kinds="$2" -v pfx="$3" '
	function ns(v, u) {
		if (u == "s") return v * 1e9
		if (u == "ms") return v * 1e6
		if (u == "us") return v * 1e3
		return v
	}
	$1 ~ /^[0-9]+$/ && NF >= 8 {
		c[$8] += $1; w[$8] += ns($2, $3); x = ns($4, $5); if (x > m[$8]) m[$8] = x
		n += $1; t += ns($2, $3)
	}
	END {
		for (k in c) printf "%s,%s,,%d,%.0f,%.0f\n", pfx, k, c[k], w[k], m[k] >>kinds
		printf "%d %.0f\n", n, t
	}' "$1"
}

# ---------------------------------------------------------------------------------------------
# Machine facts

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "host: $(uname -n)"
	echo "kernel: $(uname -r) ($(uname -v))"
	echo "cpus: $NCPU online, $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)"
	echo "virtualization: $(systemd-detect-virt 2>/dev/null || echo unknown)"
	echo "memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	if [ -r /proc/config.gz ]; then
		echo "kernel config: $(zcat /proc/config.gz | grep -E '^(# )?CONFIG_(PREEMPT|PREEMPT_VOLUNTARY|PREEMPT_NONE|HZ|LOCKDEP|LOCK_STAT)[ =]' | tr '\n' ' ')"
	fi
	echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "hotcold: $HOTCOLD (git $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo ?), $(git -C "$REPO" status --porcelain 2>/dev/null | wc -l) uncommitted paths)"
	echo "perf: $(perf --version 2>&1 | head -1)"
	echo "perf lock mode: $PERF_MODE_TEXT"
	echo "cc: $(cc --version | head -1)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "options: rounds=$ROUNDS seconds=$SECONDS_T modes=\"$MODES\" threads=$THREADS lead=${LEAD}s"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"
echo

# ---------------------------------------------------------------------------------------------
# Runs

RUNS=$OUT/runs.csv
KINDS=$OUT/kinds.csv
echo "round,mode,config,position,ops,wall_s,cpu_s,ops_per_s,ops_per_cpu_s,prof_exit,prof_ready_s,prof_rss_kb,prof_user_s,prof_sys_s,post_exit,post_rss_kb,post_user_s,post_sys_s,events,wait_ns,dropped,no_stack,data_mib,dropped_detail,perf_lost_chunks,load1" >"$RUNS"
echo "round,mode,config,kind,split,count,total_ns,max_ns" >"$KINDS"

# Collect what profiler $1 (files prefixed $2, log prefix $3) reported; kinds rows to $4 with
# prefix $5. Sets EV WT DR NS MIB DETAIL LOST POST_RC POST_RSS POST_USR POST_SYS.
collect() {
	local cfg=$1 pfx=$2 log=$3 kinds=$4 kpfx=$5 table
	EV="" WT="" DR="" NS="" MIB="" DETAIL="" LOST="" POST_RC="" POST_RSS="" POST_USR="" POST_SYS=""
	case "$cfg" in
	hotcold-locks)
		read -r EV WT DR NS DETAIL < <(hotcold_locks "$pfx.json" "$kinds" "$kpfx")
		;;
	perf-lock)
		if [ "$PERF_MODE" = record ]; then
			MIB=$(stat -c %s "$pfx.perf.data" 2>/dev/null | awk '{ printf "%.1f", $1 / 1048576 }')
			/usr/bin/time -f '%M %U %S %e' -o "$pfx.post.time" \
				perf lock contention -i "$pfx.perf.data" -E 1000000 \
				>/dev/null 2>"$pfx.post.err"
			POST_RC=$?
			read -r POST_RSS POST_USR POST_SYS _ < <(time_fields "$pfx.post.time")
			cp "$pfx.post.err" "$log.post.err" 2>/dev/null
			table=$pfx.post.err
		else
			table=$pfx.err
		fi
		# perf: "Processed N events and lost M chunks!" (its ring buffer overflowed)
		LOST=$(sed -n 's/.*lost \([0-9]*\) chunks.*/\1/p' "$pfx.err" "$pfx.post.err" 2>/dev/null |
			awk '{ s += $1 } END { print s + 0 }')
		read -r EV WT < <(perf_locks "$table" "$kinds" "$kpfx")
		;;
	esac
}

run_one() {
	local round=$1 mode=$2 cfg=$3 pos=$4
	local pfx=$TMP/r$round-$mode-$cfg log=$OUT/logs/r$round-$mode-$cfg
	local ready="" rc="" rss="" usr="" sys="" line load1
	load1=$(cut -d' ' -f1 /proc/loadavg)
	EV="" WT="" DR="" NS="" MIB="" DETAIL="" LOST="" POST_RC="" POST_RSS="" POST_USR="" POST_SYS=""

	if [ "$cfg" != none ]; then
		start_profiler "$cfg" "$(calc "$SECONDS_T + $LEAD + 1" | sed 's/\.*0*$//')" "$pfx"
		if [ -z "$PROF_PID" ] || ! wait_ready "$PROF_PID" "$cfg" "$pfx.err"; then
			note "$cfg did not start (see $log.err)"
			cp "$pfx.err" "$log.err" 2>/dev/null
			wait_bounded "$PROF_TPID" 30 "$PROF_PID"
			echo "$round,$mode,$cfg,$pos,,,,,,$WAIT_RC,,,,,,,,,,,,,,,,$load1" >>"$RUNS"
			return
		fi
		ready=$(calc "$(now) - $PROF_T0")
	fi
	sleep "$LEAD"
	line=$("$LOCKWORK" -t "$THREADS" -m "$mode" "$SECONDS_T")
	if [ "$cfg" != none ]; then
		wait_bounded "$PROF_TPID" 120 "$PROF_PID"
		rc=$WAIT_RC
		read -r rss usr sys _ < <(time_fields "$pfx.time")
		cp "$pfx.err" "$log.err" 2>/dev/null
		[ "$rc" = 0 ] || note "$cfg exited with status $rc (see $log.err)"
		collect "$cfg" "$pfx" "$log" "$KINDS" "$round,$mode,$cfg"
		rm -f "$pfx".*
	fi
	echo "$round,$mode,$cfg,$pos,$(kv ops "$line"),$(kv wall_s "$line"),$(kv cpu_s "$line"),$(kv ops_per_s "$line"),$(kv ops_per_cpu_s "$line"),$rc,$ready,$rss,$usr,$sys,$POST_RC,$POST_RSS,$POST_USR,$POST_SYS,$EV,$WT,$DR,$NS,$MIB,$DETAIL,$LOST,$load1" >>"$RUNS"
	printf '  round %d  %-5s  %-13s  %10s ops/s  %s\n' "$round" "$mode" "$cfg" \
		"$(kv ops_per_s "$line")" "${EV:+contentions=$EV wait_ns=$WT}${DR:+ dropped=$DR}" >&2
	sleep 1 # let the previous profiler's teardown settle
}

T_BENCH0=$(now)
read -r -a mode_arr <<<"$MODES"
note "$ROUNDS rounds x {$MODES} x {${CONFIGS[*]}}, ${SECONDS_T}s each"
for ((r = 1; r <= ROUNDS; r++)); do
	for ((mi = 0; mi < ${#mode_arr[@]}; mi++)); do
		mode=${mode_arr[mi]}
		off=$(((r - 1 + mi) % ${#CONFIGS[@]}))
		for ((k = 0; k < ${#CONFIGS[@]}; k++)); do
			run_one "$r" "$mode" "${CONFIGS[(off + k) % ${#CONFIGS[@]}]}" "$k"
		done
	done
done

# Joint runs: both tools on the same run, so their answers are about the same contentions
# (each one's tracing cost perturbs the workload for both). Started one after the other, the
# first ready before the second starts, so that the attach order is known: order 1 hotcold
# first, order 2 perf first (a tracepoint calls its probes in the order they were attached).
joint_run() {
	local mode=$1 order=$2 first second secs f1 f2 tp1 p1 tp2 p2 line
	local pfxh=$TMP/joint$order-$mode-hotcold pfxp=$TMP/joint$order-$mode-perf
	secs=$(calc "$SECONDS_T + $LEAD + 3" | sed 's/\.*0*$//')
	if [ "$order" = 1 ]; then
		first=hotcold-locks f1=$pfxh second=perf-lock f2=$pfxp
	else
		first=perf-lock f1=$pfxp second=hotcold-locks f2=$pfxh
	fi
	start_profiler "$first" "$secs" "$f1"
	tp1=$PROF_TPID p1=$PROF_PID
	if [ -z "$p1" ] || ! wait_ready "$p1" "$first" "$f1.err"; then
		note "joint $mode: $first did not start"
		wait_bounded "$tp1" 60 "$p1"
		return
	fi
	start_profiler "$second" "$(calc "$secs - 1" | sed 's/\.*0*$//')" "$f2"
	tp2=$PROF_TPID p2=$PROF_PID
	if [ -z "$p2" ] || ! wait_ready "$p2" "$second" "$f2.err"; then
		note "joint $mode: $second did not start"
		wait_bounded "$tp2" 60 "$p2"
		wait_bounded "$tp1" 60 "$p1"
		return
	fi
	sleep "$LEAD"
	line=$("$LOCKWORK" -t "$THREADS" -m "$mode" "$SECONDS_T")
	wait_bounded "$tp2" 120 "$p2"
	wait_bounded "$tp1" 120 "$p1"
	collect hotcold-locks "$pfxh" "$OUT/logs/joint$order-$mode-hotcold" "$JOINTCSV" "$order,$mode,joint-hotcold"
	local hev=$EV hwt=$WT hdr=$DR hdetail=$DETAIL
	cp "$pfxh.err" "$OUT/logs/joint$order-$mode-hotcold.err" 2>/dev/null
	collect perf-lock "$pfxp" "$OUT/logs/joint$order-$mode-perf" "$JOINTCSV" "$order,$mode,joint-perf"
	cp "$pfxp.err" "$OUT/logs/joint$order-$mode-perf.err" 2>/dev/null
	printf '%-5s %-13s first: %s ops/s; hotcold: %s contentions, %s ns, dropped %s (%s); perf: %s contentions, %s ns, lost %s chunks\n' \
		"$mode" "$first" "$(kv ops_per_s "$line")" "$hev" "$hwt" "$hdr" "$hdetail" "$EV" "$WT" \
		"$LOST" | tee -a "$OUT/joint.txt" >&2
	rm -f "$pfxh".* "$pfxp".*
	sleep 1
}

if [ "$JOINT" = 1 ]; then
	JOINTCSV=$OUT/joint.csv
	echo "round,mode,config,kind,split,count,total_ns,max_ns" >"$JOINTCSV"
	: >"$OUT/joint.txt"
	for mode in "${mode_arr[@]}"; do
		joint_run "$mode" 1
		joint_run "$mode" 2
	done
fi

# BPF program cost: run time per program from the kernel's accounting, read while hotcold
# still holds the programs (after the workload, before its window closes).
prog_stats() {
	bpftool -j prog show 2>/dev/null | python3 -c '
import json, sys
want = {"hc_lock_begin": 0, "hc_lock_end": 1}
t = [[0, 0], [0, 0]]
for p in json.load(sys.stdin):
	i = want.get(p.get("name"))
	if i is not None:
		t[i][0] += p.get("run_time_ns", 0)
		t[i][1] += p.get("run_cnt", 0)
print(t[0][0], t[0][1], t[1][0], t[1][1])'
}

if [ "$COST" = 1 ] && command -v bpftool >/dev/null 2>&1; then
	OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
	sysctl -q kernel.bpf_stats_enabled=1
	: >"$OUT/cost.txt"
	for mode in "${mode_arr[@]}"; do
		pfx=$TMP/cost-$mode
		start_profiler hotcold-locks $((SECONDS_T + 4)) "$pfx"
		if [ -z "$PROF_PID" ] || ! wait_ready "$PROF_PID" hotcold-locks "$pfx.err"; then
			note "cost $mode: hotcold did not start"
			wait_bounded "$PROF_TPID" 60 "$PROF_PID"
			continue
		fi
		sleep "$LEAD"
		read -r bt0 bn0 et0 en0 < <(prog_stats)
		line=$("$LOCKWORK" -t "$THREADS" -m "$mode" "$SECONDS_T")
		read -r bt1 bn1 et1 en1 < <(prog_stats)
		wait_bounded "$PROF_TPID" 120 "$PROF_PID"
		read -r EV WT DR NS DETAIL < <(hotcold_locks "$pfx.json" /dev/null "")
		cp "$pfx.err" "$OUT/logs/cost-$mode.err" 2>/dev/null
		awk -v m="$mode" -v bt=$((bt1 - bt0)) -v bn=$((bn1 - bn0)) -v et=$((et1 - et0)) \
			-v en=$((en1 - en0)) -v ev="${EV:-0}" -v ns="${NS:-0}" \
			-v ops="$(kv ops_per_s "$line")" 'BEGIN {
			printf "| %s | %.0f | %d (%d) | %.0f | %.0f | %.0f | %.0f %% |\n", m, ops, en, ev,
				bn ? bt / bn : 0, en ? et / en : 0, en ? (bt + et) / en : 0,
				ev ? 100 * (ev - ns) / ev : 0
		}' | tee -a "$OUT/cost.txt" >&2
		rm -f "$pfx".*
		sleep 1
	done
	sysctl -q kernel.bpf_stats_enabled="$OLD_STATS"
	OLD_STATS=""
fi

T_BENCH1=$(now)
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
echo "bench wall time: $(calc "($T_BENCH1 - $T_BENCH0) / 60") min" >>"$OUT/machine.txt"

write_report
echo
cat "$OUT/summary.md"
echo
note "results in $OUT"
