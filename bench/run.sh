#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/run.sh: hotcold side by side with perf record and bpftrace, on this machine, in one run.
#
# What and how (docs/benchmarks.md has the long version):
#   1. Overhead. A CPU-bound workload (bench/cpuwork.c, one busy thread per CPU) runs for T s
#      under each configuration: none, hotcold, perf, bpftrace (or those --configs names), at
#      each rate N. Runs are interleaved: for each round, for each N, the configurations in an
#      order rotated by round and N. Each profiler run is paired with the `none` run of the
#      same round and N; the report is the median over rounds of
#      throughput(profiler)/throughput(none), both per CPU-second of the workload's own CPU time
#      and per wall-clock second. With the DWARF configurations (bench/unwind.sh) it also
#      reports what was copied and unwound, and what perf's unwinding costs afterwards
#      (`perf script` over its perf.data).
#   2. Time to a profile on disk at ~100k samples (-F 4999 for 10 s on 2 busy CPUs), with the
#      workload keeping every CPU busy throughout, once with the narrow workload (a few hundred
#      distinct stacks) and once with cpuwork -w (tens of thousands): hotcold from the end of
#      its capture window to the file being complete; perf record's own tail, then
#      `perf script > file` and `perf script | bench/collapse-perf.awk > file`; bpftrace from
#      SIGINT to its map printed.
#   The report is also written, with the raw per-run CSV files, to bench/results/<timestamp>/.
#   3. Peak RSS and CPU time of every profiler process (GNU time: %M, %U, %S).
#
# Performance is compared as ratios measured side by side in one run, never as absolute times:
# these machines are shared and noisy.
#
# Usage: bench/run.sh [options]          (as root)
#   --hotcold PATH        hotcold binary (default: build/hotcold, else build/cli/hotcold)
#   --rounds N            overhead rounds (default 7)
#   --seconds T           workload seconds per overhead run (default 8)
#   --freqs "N ..."       sampling rates in Hz (default "99 999 4999")
#   --todisk-rounds N     rounds of the time-to-disk measurement (default 3; 0 skips it)
#   --todisk-seconds D    capture window of the time-to-disk measurement (default 10)
#   --todisk-freq N       rate of the time-to-disk measurement (default 4999)
#   --wide-depth N        also measure time to disk on a workload spread over 8^N distinct
#                         stacks (cpuwork -w N; default 5; 0: only the narrow workload)
#   --lead S              seconds between a profiler being ready and the workload starting (1)
#   --configs "C ..."     overhead configurations (default "none hotcold perf bpftrace"); also
#                         `floor`: bpftrace `profile:hz:N { @ = count(); }`, sampling with no
#                         stacks, the cost of the timer interrupt and a minimal BPF program;
#                         `hotcold-dwarf`: hotcold record --unwind dwarf (copies; `hotcold` is
#                         --unwind fp); `hotcold-table`: --unwind table, the default (unwind
#                         tables walked in BPF); `perf-dwarf`: perf record -a --call-graph dwarf (8K
#                         stack copies, perf's default); `perf-dwarf16k`: the same with 16K
#                         copies, hotcold's --stack-copy default. After each perf-dwarf* run
#                         `perf script` over its perf.data is timed (perf unwinds there).
#   --workload fp|nofp    fp (default): cpuwork built with frame pointers; nofp: `cpuwork -l`
#                         (its hot path below glibc's qsort()) built with -fomit-frame-pointer
#   --quick               --rounds 1 --seconds 3 --todisk-rounds 1 --todisk-seconds 3
#   --out DIR             results directory (default bench/results/<UTC timestamp>)
#   --keep                keep every overhead run's profile (hotcold JSON, perf.data) in logs/
#   --no-install          do not apt-get missing tools
#   --report DIR          only re-render DIR/summary.md from DIR/*.csv and DIR/machine.txt
#   -h, --help
set -uo pipefail
export LC_ALL=C # one decimal separator for EPOCHREALTIME, awk and printf

die() { echo "bench/run.sh: $*" >&2; exit 1; }
note() { echo "bench/run.sh: $*" >&2; }

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
# shellcheck source=bench/lib.sh
. "$BENCH_DIR/lib.sh"

HOTCOLD=""
ROUNDS=7
SECONDS_T=8
FREQS="99 999 4999"
TODISK_ROUNDS=3
TODISK_D=10
TODISK_F=4999
WIDE_DEPTH=5
LEAD=1
OUT=""
INSTALL=1
REPORT_ONLY=""
CONFIGS=(none hotcold perf bpftrace)
WORKLOAD=fp
KEEP=0

usage() { sed -n '/^# Usage:/,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
	case "$1" in
	--hotcold) HOTCOLD=${2:?}; shift ;;
	--rounds) ROUNDS=${2:?}; shift ;;
	--seconds) SECONDS_T=${2:?}; shift ;;
	--freqs) FREQS=${2:?}; shift ;;
	--todisk-rounds) TODISK_ROUNDS=${2:?}; shift ;;
	--todisk-seconds) TODISK_D=${2:?}; shift ;;
	--todisk-freq) TODISK_F=${2:?}; shift ;;
	--wide-depth) WIDE_DEPTH=${2:?}; shift ;;
	--lead) LEAD=${2:?}; shift ;;
	--out) OUT=${2:?}; shift ;;
	--configs) read -r -a CONFIGS <<<"${2:?}"; shift ;;
	--workload) WORKLOAD=${2:?}; shift ;;
	--keep) KEEP=1 ;;
	--quick) ROUNDS=1; SECONDS_T=3; TODISK_ROUNDS=1; TODISK_D=3 ;;
	--no-install) INSTALL=0 ;;
	--report) REPORT_ONLY=${2:?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 64 ;;
	esac
	shift
done

# ---------------------------------------------------------------------------------------------
# Report (also: bench/run.sh --report DIR re-renders DIR/summary.md from its CSV files)

# Overhead: pair each profiler run with the none run of the same round and rate.
# Every configuration, in the order the tables list them.
CONFIG_ORDER="hotcold hotcold-table hotcold-dwarf perf perf-dwarf perf-dwarf16k bpftrace floor"

report_overhead() {
	awk -F, -v freqs="$FREQS" -v CONFIG_ORDER="$CONFIG_ORDER" '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		if (n == 0) return ""
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function lo(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
	function hi(a, n,   i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
	NR == 1 { next }
	{
		key = $1 SUBSEP $2 SUBSEP $3
		ok[key] = ($5 != "") && ($10 == "" || $10 == "0")
		tpc[key] = $8; tpw[key] = $9
		rss[key] = $12; cpu[key] = $13 + $14; smp[key] = $15; exp_[key] = $16; rdy[key] = $11
		rounds[$1] = 1
	}
	END {
		printf "| rate | profiler | throughput per CPU-s (median [min, max]) | throughput per wall-s (median [min, max]) | profiler CPU s per run | profiler peak RSS MiB | samples (median) | ready after s |\n"
		printf "|---:|---|---|---|---:|---:|---:|---:|\n"
		nf = split(freqs, F, " ")
		for (fi = 1; fi <= nf; fi++) {
			hz = F[fi]
			# baseline, for reference: median units per CPU-s and per wall-s of none
			nb = 0; delete B; delete W
			for (r in rounds) {
				k = r SUBSEP hz SUBSEP "none"
				if (ok[k]) { nb++; B[nb] = tpc[k]; W[nb] = tpw[k] }
			}
			printf "| %s Hz | none | 1 (= %.0f units/CPU-s) | 1 (= %.0f units/s) | | | | |\n", hz, med(B, nb), med(W, nb)
			nc = split(CONFIG_ORDER, C, " ")
			for (ci = 1; ci <= nc; ci++) {
				c = C[ci]; n = 0; bad = 0
				delete RC; delete RW; delete MEM; delete CP; delete SM; delete RD
				for (r in rounds) {
					k = r SUBSEP hz SUBSEP c; kb = r SUBSEP hz SUBSEP "none"
					if (!(k in ok)) continue
					if (!ok[k] || !ok[kb]) { bad++; continue }
					n++
					RC[n] = tpc[k] / tpc[kb]; RW[n] = tpw[k] / tpw[kb]
					MEM[n] = rss[k] / 1024; CP[n] = cpu[k]; SM[n] = smp[k] + 0; RD[n] = rdy[k]
				}
				if (n == 0 && bad == 0) continue # not run
				if (n == 0) { printf "| %s Hz | %s | failed (%d runs) | | | | | |\n", hz, c, bad; continue }
				printf "| %s Hz | %s | %.3f [%.3f, %.3f] | %.3f [%.3f, %.3f] | %.2f | %.1f | %s | %.2f |\n",
					hz, c, med(RC, n), lo(RC, n), hi(RC, n), med(RW, n), lo(RW, n), hi(RW, n),
					med(CP, n), med(MEM, n), sprintf("%.0f", med(SM, n)),
					med(RD, n)
				if (bad) printf "| | %s: %d failed runs not counted | | | | | | |\n", c, bad
			}
		}
	}' "$RUNS"
}

# Configurations against each other directly: per round, A's throughput / B's, same rate.
# Only the pairs whose both sides ran.
report_paired() {
	awk -F, -v freqs="$FREQS" '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function cell(f, a, b, col,   r, n, k, kp, A, lo, hi) {
		n = 0
		for (r in rounds) {
			k = r SUBSEP f SUBSEP a; kp = r SUBSEP f SUBSEP b
			if (!ok[k] || !ok[kp]) continue
			A[++n] = (col == 8 ? tpc[k] / tpc[kp] : tpw[k] / tpw[kp])
			if (n == 1 || A[n] < lo) lo = A[n]
			if (n == 1 || A[n] > hi) hi = A[n]
		}
		return n ? sprintf("%.3f [%.3f, %.3f]", med(A, n), lo, hi) : "n/a"
	}
	NR == 1 { next }
	{
		key = $1 SUBSEP $2 SUBSEP $3
		ok[key] = ($5 != "") && ($10 == "" || $10 == "0")
		tpc[key] = $8; tpw[key] = $9; rounds[$1] = 1; ran[$3] = 1
	}
	END {
		np = split("hotcold/perf hotcold/bpftrace hotcold-table/perf hotcold-table/hotcold " \
			"hotcold-table/hotcold-dwarf hotcold-dwarf/hotcold hotcold-dwarf/perf-dwarf " \
			"hotcold-dwarf/perf-dwarf16k perf-dwarf/perf", P, " ")
		printf "| rate | A / B | per CPU-s | per wall-s |\n"
		printf "|---:|---|---|---|\n"
		nf = split(freqs, F, " ")
		for (fi = 1; fi <= nf; fi++)
			for (pi = 1; pi <= np; pi++) {
				split(P[pi], AB, "/")
				if (!(AB[1] in ran) || !(AB[2] in ran)) continue
				printf "| %s Hz | %s / %s | %s | %s |\n", F[fi], AB[1], AB[2],
					cell(F[fi], AB[1], AB[2], 8), cell(F[fi], AB[1], AB[2], 9)
			}
	}' "$RUNS"
}

# What was copied and unwound, per rate and configuration (medians over rounds): hotcold's
# unwind counters; perf's perf.data and its `perf script` pass, where perf unwinds.
report_unwind() {
	awk -F, -v freqs="$FREQS" -v CONFIG_ORDER="$CONFIG_ORDER" -v table="$1" '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		if (n == 0) return ""
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	# median of column c over the rounds of (hz, cfg), formatted, or "" if never set
	function m(hz, cfg, c, fmt,   r, k, n, A) {
		n = 0
		for (r in rounds) {
			k = r SUBSEP hz SUBSEP cfg
			if ((k, c) in V && V[k, c] != "") A[++n] = V[k, c]
		}
		return n ? sprintf(fmt, med(A, n)) : ""
	}
	# the same with [min, max] over rounds
	function mr(hz, cfg, c, fmt,   r, k, n, A, lo, hi) {
		n = 0
		for (r in rounds) {
			k = r SUBSEP hz SUBSEP cfg
			if (!((k, c) in V) || V[k, c] == "") continue
			A[++n] = V[k, c]
			if (n == 1 || A[n] < lo) lo = A[n]
			if (n == 1 || A[n] > hi) hi = A[n]
		}
		return n ? sprintf(fmt " [" fmt ", " fmt "]", med(A, n), lo, hi) : ""
	}
	NR == 1 { next }
	$5 == "" || ($10 != "" && $10 != "0") { next }
	{
		k = $1 SUBSEP $2 SUBSEP $3; rounds[$1] = 1; ran[$3] = 1
		for (c = 15; c <= 39; c++) V[k, c] = $c
		if ($22 != "") V[k, 50] = $22 / 1024
		# the workload: share of complete stacks, frames per stack
		if ($37 > 0) { V[k, 51] = 100 * $39 / $37; V[k, 52] = $38 / $37 }
		if ($36 != "") V[k, 48] = $36 / 1024
		if ($12 != "") V[k, 49] = $12 / 1024
		# derived: stacks/s of the unwinder, frames per stack; perf script samples/s,
		# frames per sample; data MiB; profiler CPU s
		if ($30 > 0 && $32 > 0) { V[k, 40] = $30 / ($32 / 1e9); V[k, 41] = $31 / $30 }
		if ($19 > 0 && $23 > 0) { V[k, 42] = $23 / $19; V[k, 43] = $24 / $23 }
		if ($3 ~ /^hotcold/) V[k, 44] = $25 / 1048576
		else if ($35 != "") V[k, 44] = $35 / 1048576
		V[k, 45] = $13 + $14
		if ($20 != "") V[k, 46] = $20 + $21
		if ($25 != "" && $26 > 0) V[k, 47] = $25 / $26
	}
	END {
		nf = split(freqs, F, " "); nc = split(CONFIG_ORDER, C, " ")
		if (table == 1) {
			printf "| rate | profiler | samples | profiler CPU s | PSS MiB | peak RSS MiB | stack bytes copied (hotcold) or perf.data written, MiB | bytes per copy | window end -> output complete, s | perf script s | perf script CPU s | perf script peak RSS MiB |\n"
			printf "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
		} else {
			printf "| rate | profiler | workload stacks complete, %% | frames per workload stack | copies over budget | user stacks from frame pointers | fallback | lost | stacks unwound in the capture | frames per stack | [truncated] | unwinder stacks/s | perf script samples/s |\n"
			printf "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
		}
		for (fi = 1; fi <= nf; fi++)
			for (ci = 1; ci <= nc; ci++) {
				hz = F[fi]; c = C[ci]
				if (!(c in ran) || c == "bpftrace" || c == "floor") continue
				if (table == 1)
					printf "| %s Hz | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
						hz, c, m(hz, c, 15, "%.0f"), m(hz, c, 45, "%.2f"),
						m(hz, c, 48, "%.1f"), m(hz, c, 49, "%.1f"), m(hz, c, 44, "%.1f"),
						m(hz, c, 47, "%.0f"), m(hz, c, 18, "%.3f"), mr(hz, c, 19, "%.2f"),
						m(hz, c, 46, "%.2f"), m(hz, c, 50, "%.1f")
				else
					printf "| %s Hz | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
						hz, c, mr(hz, c, 51, "%.1f"), m(hz, c, 52, "%.1f"),
						m(hz, c, 27, "%.0f"), m(hz, c, 29, "%.0f"), m(hz, c, 28, "%.0f"),
						m(hz, c, 34, "%.0f"), m(hz, c, 30, "%.0f"), m(hz, c, 41, "%.1f"),
						m(hz, c, 33, "%.0f"), m(hz, c, 40, "%.0f"), m(hz, c, 42, "%.0f")
			}
	}' "$RUNS"
}

report_todisk() {
	awk -F, '
	function med(a, n,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	NR == 1 { next }
	{
		k = $2 SUBSEP $3 SUBSEP $4
		if (!(k in n)) { order[++no] = k; n[k] = 0 }
		i = ++n[k]
		S[k, i] = $5; R[k, i] = $6; SMP[k, i] = $9; STK[k, i] = $10; BY[k, i] = $11
		if ($12 != "" && $12 != "0") fails[k]++
	}
	END {
		printf "| workload | profiler | step | seconds (median [min, max]) | peak RSS MiB | samples | distinct stacks | output MiB |\n"
		printf "|---|---|---|---|---:|---:|---:|---:|\n"
		for (o = 1; o <= no; o++) {
			k = order[o]; split(k, P, SUBSEP); m = n[k]
			gsub(/\|/, "\\|", P[3]) # markdown table cell
			delete A; delete AR; delete AS; delete AT; delete AB; lo = ""; hi = ""
			for (i = 1; i <= m; i++) {
				A[i] = S[k, i]; AR[i] = R[k, i] / 1024; AS[i] = SMP[k, i]; AT[i] = STK[k, i]
				AB[i] = BY[k, i] / 1048576
				if (lo == "" || A[i] < lo) lo = A[i]
				if (hi == "" || A[i] > hi) hi = A[i]
			}
			printf "| %s | %s | %s | %.3f [%.3f, %.3f] | %s | %s | %s | %s |%s\n", P[1], P[2], P[3], med(A, m), lo, hi,
				(R[k, 1] == "") ? "" : sprintf("%.1f", med(AR, m)),
				(SMP[k, 1] == "") ? "" : sprintf("%.0f", med(AS, m)),
				(STK[k, 1] == "") ? "" : sprintf("%.0f", med(AT, m)),
				(BY[k, 1] == "") ? "" : sprintf("%.1f", med(AB, m)),
				fails[k] ? sprintf(" %d runs exited non-zero", fails[k]) : ""
		}
	}' "$TODISK"
}

write_report() {
	local rounds td_rounds secs freqs ncpu
	RUNS=$OUT/runs.csv TODISK=$OUT/todisk.csv
	rounds=$(awk -F, 'NR > 1 && $1 > m { m = $1 } END { print m + 0 }' "$RUNS")
	freqs=$(awk -F, 'NR > 1 && !($2 in s) { s[$2]; printf "%s%s", sep, $2; sep = " " }' "$RUNS")
	FREQS=$freqs
	secs=$(sed -n 's/^options: .*seconds=\([0-9]*\) freqs.*/\1/p' "$OUT/machine.txt")
	ncpu=$(sed -n 's/^cpus: \([0-9]*\) online.*/\1/p' "$OUT/machine.txt")
	td_rounds=0
	[ -s "$TODISK" ] && td_rounds=$(awk -F, 'NR > 1 && $1 > m { m = $1 } END { print m + 0 }' "$TODISK")
	{
		echo "# hotcold benchmark, $(basename "$OUT")"
		echo
		echo '```'
		cat "$OUT/machine.txt"
		echo '```'
		echo
		echo "## Overhead: workload throughput relative to no profiler"
		echo
		echo "Per round, each profiler run divided by the \`none\` run of the same round and rate;"
		echo "median over $rounds rounds, [min, max] over rounds. ${secs}s of bench/cpuwork on $ncpu CPUs per run"
		echo "(workload: $(sed -n 's/^workload: //p' "$OUT/machine.txt"))."
		echo
		report_overhead
		echo
		echo "Configurations against each other directly: per round, A's throughput divided by"
		echo "B's at the same rate; median over rounds, [min, max]. Above 1: A costs less."
		echo
		report_paired
		if grep -q ',\(hotcold-dwarf\|perf-dwarf\|perf-dwarf16k\),' "$RUNS"; then
			echo
			echo "## Stack copies and unwinding"
			echo
			echo "Medians over rounds. Cost: hotcold's stack copies (its profile's unwind section);"
			echo "perf's perf.data, then \`perf script\` over it (perf unwinds DWARF stacks when the data"
			echo "is read), timed after the run while nothing else is measured. Window end -> output"
			echo "complete: hotcold -v's own figure; perf record from its \`sleep\` exiting to its exit."
			echo "PSS: the profiler's processes summed, shared pages split, read as the workload ends;"
			echo "peak RSS (GNU time) counts hotcold's ring buffer twice (libbpf maps it twice in a row)"
			echo "and includes perf record's build-id pass over perf.data at its exit."
			echo
			report_unwind 1
			echo
			echo "What the stacks hold. Workload stacks complete: the share of the workload's on-CPU"
			echo "samples (comm cpuwork) whose stack reaches start_thread, its threads' outermost frame"
			echo "with CFI; frames per workload stack: kernel frames included (hotcold: its folded"
			echo "output; perf: perf script's). Copies over budget, user stacks from frame pointers,"
			echo "fallback, stacks unwound, frames per stack, [truncated]: hotcold's unwind counters, over"
			echo "every process and off-CPU stacks too. Lost: hotcold's ring-buffer drops, perf record's"
			echo "lost chunks. Unwinder stacks/s: unwinder.stacks / unwinder.ns, the worker's wall time"
			echo "around each unwind (preemption by the busy workload counts against it). perf script"
			echo "samples/s includes perf's startup, symbolization and printing. perf script CPU s is"
			echo "perf's own (GNU time); the addr2line processes it starts for inlined frames are not"
			echo "in it, but are in its wall time."
			echo
			report_unwind 2
		fi
		if [ "$td_rounds" -gt 0 ]; then
			echo
			echo "## Time to a profile on disk: $(sed -n 's/.*todisk: rounds=[0-9]* seconds=\([0-9]*\) freq=\([0-9]*\).*/-F \2 for \1s/p' "$OUT/machine.txt"), $ncpu CPUs busy throughout"
			echo
			echo "Median over $td_rounds rounds, [min, max] over rounds. Workloads: narrow = bench/cpuwork"
			echo "(a fixed call graph: a few hundred distinct raw stacks, mostly leaf addresses); wide ="
			echo "bench/cpuwork -w $(sed -n 's/.*wide_depth=\([0-9]*\).*/\1/p' "$OUT/machine.txt") (every unit takes a random path through 8 functions per level)."
			echo
			report_todisk
		fi
		echo
		echo "Raw numbers: runs.csv (overhead, one row per run), todisk.csv; profiler stderr in logs/."
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
if [ -z "$HOTCOLD" ]; then
	HOTCOLD=$REPO/build/hotcold
	[ -x "$HOTCOLD" ] || HOTCOLD=$REPO/build/cli/hotcold
fi
[ -x "$HOTCOLD" ] || die "no hotcold binary at $HOTCOLD (build it, or pass --hotcold PATH)"
HOTCOLD=$(realpath "$HOTCOLD")
for v in "$ROUNDS" "$SECONDS_T" "$TODISK_ROUNDS" "$TODISK_D" "$TODISK_F" "$WIDE_DEPTH" $FREQS; do
	[[ $v =~ ^[0-9]+$ ]] || die "not a whole number: '$v'"
done
[[ $LEAD =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "--lead: not a number: '$LEAD'"
[[ $WORKLOAD == fp || $WORKLOAD == nofp ]] || die "--workload: fp or nofp, not '$WORKLOAD'"
for c in "${CONFIGS[@]}"; do
	case "$c" in
	none | hotcold | hotcold-table | hotcold-dwarf | perf | perf-dwarf | perf-dwarf16k | bpftrace | floor) ;;
	*) die "--configs: unknown configuration '$c'" ;;
	esac
done

install_missing perf:linux-perf bpftrace:bpftrace /usr/bin/time:time cc:gcc

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
[ -n "$OUT" ] || OUT=$REPO/bench/results/$STAMP
mkdir -p "$OUT/logs" || die "cannot create $OUT"
OUT=$(realpath "$OUT")
TMP=$(mktemp -d /tmp/hotcold-bench.XXXXXX) || die "mktemp failed"

# Every background process this script starts is recorded here; on exit, those still running
# are killed. pid_max may be 32768 and a run lasts long enough for pids to be reused, so a pid
# is killed only if its parent is this script or another recorded process.
BG_PIDS=()
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
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The workload. nofp is built as distributions build their packages (-fomit-frame-pointer, as
# -O2 implies on x86-64) and runs the call graph through glibc's qsort(), whose frames have CFI
# and no frame pointer either: a frame-pointer walk loses the callers, CFI unwinding has work.
# Sibling calls stay off in both, so the call graph is the same in every build.
CPUWORK=$TMP/cpuwork
CPUWORK_ARGS=()
if [ "$WORKLOAD" = fp ]; then
	CPUWORK_CFLAGS="-O2 -fno-omit-frame-pointer -fno-optimize-sibling-calls"
else
	CPUWORK_CFLAGS="-O2 -fomit-frame-pointer -fno-optimize-sibling-calls -DCPUWORK_OMIT_FP"
	CPUWORK_ARGS=(-l)
fi
# shellcheck disable=SC2086 # word splitting of the flags is meant
cc $CPUWORK_CFLAGS -Wall -Wextra -pthread -o "$CPUWORK" "$BENCH_DIR/cpuwork.c" ||
	die "cannot build bench/cpuwork.c"
NCPU=$(nproc)

# ---------------------------------------------------------------------------------------------
# Small helpers

now() { echo "$EPOCHREALTIME"; }          # wall clock, microsecond resolution
calc() { awk "BEGIN { printf \"%.6f\", $* }"; }

# Value of key=value in a line of text.
kv() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1=//p" | head -1; }

# Number of perf_event file descriptors a process holds.
n_perf_fds() {
	local f n=0
	for f in /proc/"$1"/fd/*; do
		[[ $(readlink "$f" 2>/dev/null) == *perf_event* ]] && n=$((n + 1))
	done
	echo "$n"
}


# Wait until process $1 holds at least one perf_event fd per CPU (every profiler here opens
# one cpu-clock event per CPU), i.e. it is sampling, or has exited. Max 60 s. With $2, a
# stderr file: wait instead for hotcold -v's "the window is open" (its privileged half holds
# the events, disabled, before its worker opens the window).
wait_ready() {
	local i
	for i in $(seq 1 6000); do
		if [ -n "${2:-}" ]; then
			grep -q "the window is open" "$2" 2>/dev/null && return 0
		elif [ "$(n_perf_fds "$1")" -ge "$NCPU" ]; then
			return 0
		fi
		alive "$1" || return 1
		sleep 0.01
	done
	return 1
}



# SIGINT bpftrace $1 (running under our time process $2) and wait for it, $3 s at most (it
# symbolizes every map entry after the SIGINT: with thousands of distinct stacks that takes
# tens of seconds). bpftrace 0.17 was also seen ignoring a SIGINT (no output, still running
# minutes later): then repeat the SIGINT, and SIGKILL 20 s later. Sets WAIT_RC.
stop_bpftrace() {
	local i
	kill -INT "$1" 2>/dev/null
	for ((i = 0; i < $3 * 20; i++)); do
		alive "$1" || break
		sleep 0.05
	done
	if alive "$1"; then
		note "bpftrace (pid $1) still running $3 s after SIGINT: sending another"
		kill -INT "$1" 2>/dev/null
	fi
	wait_bounded "$2" 20 "$1"
}

# GNU time's last line: "%M %U %S %e" -> rss_kb user_s sys_s
time_fields() { tail -1 "$1" 2>/dev/null | awk 'NF == 4 { print $1, $2, $3; exit } { print "", "", "" }'; }

# Sum of the counts in a bpftrace map printout ("]: N" closes each entry).
bpftrace_samples() { sed -n 's/.*\]: \([0-9]*\)$/\1/p' "$1" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'; }

# Samples a profiler reports: hotcold "samples expected" (-v line on stderr), perf samples
# (stderr), bpftrace samples (sum of its map printout, file $3). Empty if not found.
samples_of() {
	case "$1" in
	hotcold*) sed -n 's/^hotcold: \([0-9]*\) samples .*expected \([0-9]*\);.*/\1 \2/p' "$2" | tail -1 ;;
	perf*) sed -n 's/.*(\([0-9]*\) samples).*/\1/p' "$2" | tail -1 ;;
	bpftrace) bpftrace_samples "$3" ;;
	floor) sed -n 's/^@: \([0-9]*\)$/\1/p' "$3" | tail -1 ;;
	esac
}

# Start profiler $1 at rate $2 for about $3 s, under GNU time, output files prefixed $4.
# Sets PROF_TPID (the time process), PROF_PID (the profiler), PROF_T0 (launch time).
start_profiler() {
	local cfg=$1 hz=$2 secs=$3 pfx=$4
	PROF_T0=$(now)
	case "$cfg" in
	hotcold | hotcold-table | hotcold-dwarf)
		local mode=fp
		[ "$cfg" = hotcold-table ] && mode=table
		[ "$cfg" = hotcold-dwarf ] && mode=dwarf
		/usr/bin/time -f '%M %U %S %e' -o "$pfx.time" \
			"$HOTCOLD" record -F "$hz" -d "${secs}s" -o "$pfx.json" -v --unwind "$mode" \
			>/dev/null 2>"$pfx.err" &
		;;
	perf | perf-dwarf | perf-dwarf16k)
		local cg=(-g)
		[ "$cfg" = perf-dwarf ] && cg=(--call-graph dwarf)
		[ "$cfg" = perf-dwarf16k ] && cg=(--call-graph "dwarf,16384")
		/usr/bin/time -f '%M %U %S %e' -o "$pfx.time" \
			perf record -a "${cg[@]}" -F "$hz" -o "$pfx.perf.data" -- sleep "$secs" \
			>/dev/null 2>"$pfx.err" &
		;;
	bpftrace)
		/usr/bin/time -f '%M %U %S %e' -o "$pfx.time" \
			bpftrace -e "profile:hz:$hz { @[kstack, ustack] = count(); }" \
			>"$pfx.bpftrace.out" 2>"$pfx.err" &
		;;
	floor)
		/usr/bin/time -f '%M %U %S %e' -o "$pfx.time" \
			bpftrace -e "profile:hz:$hz { @ = count(); }" \
			>"$pfx.bpftrace.out" 2>"$pfx.err" &
		;;
	esac
	PROF_TPID=$!
	BG_PIDS+=("$PROF_TPID")
	PROF_PID=$(child_of "$PROF_TPID") || PROF_PID=""
	[ -n "$PROF_PID" ] && BG_PIDS+=("$PROF_PID")
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
	echo "clocksource: $(sysfs_or /sys/devices/system/clocksource/clocksource0/current_clocksource ?)"
	echo "perf_event_max_sample_rate: $(sysfs_or /proc/sys/kernel/perf_event_max_sample_rate ?)"
	echo "perf_event_paranoid: $(sysfs_or /proc/sys/kernel/perf_event_paranoid ?)"
	if [ -r /proc/config.gz ]; then
		echo "kernel config: $(zcat /proc/config.gz | grep -E '^(# )?CONFIG_(IRQ_TIME_ACCOUNTING|HZ)[ =]' | tr '\n' ' ')"
	fi
	echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "hotcold: $HOTCOLD (git $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo ?), $(git -C "$REPO" status --porcelain 2>/dev/null | wc -l) uncommitted paths)"
	echo "perf: $(perf --version 2>&1 | head -1)"
	echo "bpftrace: $(bpftrace --version 2>&1 | head -1)"
	echo "cc: $(cc --version | head -1)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "options: rounds=$ROUNDS seconds=$SECONDS_T freqs=\"$FREQS\" lead=${LEAD}s" \
		"todisk: rounds=$TODISK_ROUNDS seconds=$TODISK_D freq=$TODISK_F wide_depth=$WIDE_DEPTH"
	echo "configs: ${CONFIGS[*]}"
	echo "workload: $WORKLOAD: cpuwork${CPUWORK_ARGS[*]:+ ${CPUWORK_ARGS[*]}} built with cc $CPUWORK_CFLAGS"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt"
echo

# ---------------------------------------------------------------------------------------------
# 1. Overhead

RUNS=$OUT/runs.csv
echo "round,freq_hz,config,position,units,wall_s,cpu_s,units_per_cpu_s,units_per_wall_s,prof_exit,prof_ready_s,prof_rss_kb,prof_user_s,prof_sys_s,samples,expected_samples,load1,end_s,post_s,post_user_s,post_sys_s,post_rss_kb,post_samples,post_frames,copy_bytes,copies,over_budget,fallback,fp_stacks,uw_stacks,uw_frames,uw_ns,truncated,lost,data_bytes,pss_kb,wl_weight,wl_frames,wl_complete" >"$RUNS"

# The unwind counters of a hotcold profile, and the samples it lost to a full ring buffer:
# "copy_bytes copies over_budget fallback fp_stacks uw_stacks uw_frames uw_ns truncated lost".
# Read with grep, not jq (see todisk_hotcold); the section precedes the flame graph, and every
# name below occurs once in it.
hotcold_unwind() {
	local u lost v out=""
	u=$(head -c 262144 "$1" 2>/dev/null | grep -o '"unwind":{.*' | sed 's/,"flamegraph":.*//')
	lost=$(head -c 262144 "$1" 2>/dev/null | grep -o '"ringbuf_full":[0-9]*' | head -1 | sed 's/.*://')
	for k in bytes taken over_budget fallback frame_pointers stacks frames ns dwarf_truncated; do
		v=$(grep -o "\"$k\":[0-9]*" <<<"$u" | head -1 | sed 's/.*://')
		out+="${v:--} "
	done
	v=$(grep -o '"lost":[0-9]*' <<<"$u" | head -1 | sed 's/.*://')
	[ -n "$lost" ] && [ -n "$v" ] && lost=$((lost + v))
	echo "$out${lost:--}"
}

# perf script over a perf.data ($1), timed, its output counted: samples (header lines) and
# frames (the tab-indented callchain lines), and of the workload's samples (comm cpuwork) how
# many, their frames, and how many reach start_thread (complete: the thread's outermost frame
# with CFI, under clone3). Sets POST_S POST_USER POST_SYS POST_RSS POST_SAMPLES POST_FRAMES
# and WL; stderr to $2.
perf_post() {
	local t0 t1
	t0=$(now)
	/usr/bin/time -f '%M %U %S %e' -o "$1.post.time" perf script -i "$1" 2>"$2" |
		awk '
		function done() { if (cur == "cpuwork" && ok) wc++ }
		/^\t/ { f++; if (cur == "cpuwork") { wf++; if ($0 ~ / start_thread\+/) ok = 1 } next }
		NF { done(); s++; cur = $1; ok = 0; if (cur == "cpuwork") ws++ }
		END { done(); print s + 0, f + 0, ws + 0, wf + 0, wc + 0 }' >"$1.post.count"
	t1=$(now)
	POST_S=$(calc "$t1 - $t0")
	read -r POST_RSS POST_USER POST_SYS < <(time_fields "$1.post.time")
	read -r POST_SAMPLES POST_FRAMES w f c <"$1.post.count"
	WL="$w $f $c"
}

# The workload's on-CPU stacks in a hotcold profile ($1), the same three figures as perf_post's
# (weighted by on-CPU time: samples x period, in ms): "weight frames complete". Frames are
# those of the folded stack after the process name, kernel frames included, [truncated] not.
hotcold_workload() {
	"$HOTCOLD" report --kind on --format folded "$1" 2>/dev/null | awk '
	{
		v = $NF; st = substr($0, 1, length($0) - length(v) - 1)
		n = split(st, a, ";")
		if (a[1] != "cpuwork") next
		fr = 0; ok = 0
		for (i = 2; i <= n; i++) {
			if (a[i] == "[truncated]") continue
			fr++
			if (a[i] == "start_thread") ok = 1
		}
		w = v / 1e6; W += w; F += w * fr; if (ok) C += w
	}
	END { printf "%.3f %.3f %.3f\n", W, F, C }'
}

# Proportional set size of process $1 and its descendants, KiB: each page shared between them
# counted once, split. RSS is not summed over processes and overstates a BPF ring buffer, which
# libbpf maps twice in a row (so that a record wrapping around its end reads contiguously).
tree_pss_kb() {
	local todo=("$1") p c v total=0
	while [ ${#todo[@]} -gt 0 ]; do
		p=${todo[0]}
		todo=("${todo[@]:1}")
		v=$(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null)
		total=$((total + ${v:-0}))
		for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
			todo+=("$c")
		done
	done
	echo "$total"
}

# One overhead run; appends a CSV row.
overhead_run() {
	local round=$1 hz=$2 cfg=$3 pos=$4
	local pfx=$TMP/r$round-$hz-$cfg log=$OUT/logs/overhead-r$round-$hz-$cfg
	local ready="" rc="" rss="" usr="" sys="" samples="" expected="" line
	local load1 sleep_pid="" t_win_end="" end_s="" unw="- - - - - - - - - -" data_bytes="" pss=""
	local POST_S="" POST_USER="" POST_SYS="" POST_RSS="" POST_SAMPLES="" POST_FRAMES="" WL="- - -"
	load1=$(cut -d' ' -f1 /proc/loadavg)

	if [ "$cfg" != none ]; then
		# The profiler outlives the workload by about a second; bpftrace is stopped by SIGINT.
		start_profiler "$cfg" "$hz" $((SECONDS_T + 2)) "$pfx"
		if [ -z "$PROF_PID" ] || ! wait_ready "$PROF_PID" \
			"$([[ $cfg == hotcold* ]] && echo "$pfx.err")"; then
			note "$cfg at $hz Hz did not start sampling (see $log.err)"
			cp "$pfx.err" "$log.err" 2>/dev/null
			wait_bounded "$PROF_TPID" 30 "$PROF_PID"
			rc=$WAIT_RC
			echo "$round,$hz,$cfg,$pos,,,,,,$rc,,,,,,,$load1" >>"$RUNS"
			return
		fi
		ready=$(calc "$(now) - $PROF_T0")
		# perf record's window closes when its `sleep` child exits (see todisk_perf).
		[[ $cfg == perf* ]] && sleep_pid=$(child_of "$PROF_PID")
	fi
	sleep "$LEAD"
	line=$("$CPUWORK" "${CPUWORK_ARGS[@]}" "$SECONDS_T")
	if [ "$cfg" != none ]; then
		# Every profiler still runs here (about a second more): its memory at full size.
		pss=$(tree_pss_kb "$PROF_PID")
		if [ "$cfg" = bpftrace ] || [ "$cfg" = floor ]; then
			stop_bpftrace "$PROF_PID" "$PROF_TPID" 60
		else
			# Polled only now, after the workload: not while it is measured.
			if [ -n "$sleep_pid" ]; then
				while alive "$sleep_pid"; do
					sleep 0.01
				done
				t_win_end=$(now)
			fi
			wait_bounded "$PROF_TPID" 300 "$PROF_PID"
			[ -n "$t_win_end" ] && end_s=$(calc "$(now) - $t_win_end")
		fi
		rc=$WAIT_RC
		read -r rss usr sys < <(time_fields "$pfx.time")
		read -r samples expected < <(samples_of "$cfg" "$pfx.err" "$pfx.bpftrace.out")
		case "$cfg" in
		hotcold*)
			end_s=$(sed -n 's/.*written \([0-9.]*\) ms after the window closed.*/\1/p' "$pfx.err" | tail -1)
			[ -n "$end_s" ] && end_s=$(calc "$end_s / 1000")
			unw=$(hotcold_unwind "$pfx.json")
			WL=$(hotcold_workload "$pfx.json")
			data_bytes=$(stat -c %s "$pfx.json" 2>/dev/null)
			;;
		perf*)
			# perf record: "Processed N events and lost M chunks!"
			unw="- - - - - - - - - $(sed -n 's/.*and lost \([0-9]*\) chunks.*/\1/p' "$pfx.err" | tail -1)"
			data_bytes=$(stat -c %s "$pfx.perf.data" 2>/dev/null)
			# perf unwinds DWARF stacks here, when the data is read, not while recording.
			if [[ $cfg == perf-dwarf* ]] && [ -s "$pfx.perf.data" ]; then
				perf_post "$pfx.perf.data" "$pfx.post.err"
				cp "$pfx.post.err" "$log.post.err" 2>/dev/null
			fi
			;;
		esac
		cp "$pfx.err" "$log.err" 2>/dev/null
		cp "$pfx.time" "$log.time" 2>/dev/null
		[ "$rc" = 0 ] || note "$cfg at $hz Hz exited with status $rc (see $log.err)"
		if [ "$KEEP" = 1 ]; then
			mv "$pfx.json" "$log.json" 2>/dev/null
			mv "$pfx.perf.data" "$log.perf.data" 2>/dev/null
		fi
		rm -f "$pfx".*
	fi
	echo "$round,$hz,$cfg,$pos,$(kv units "$line"),$(kv wall_s "$line"),$(kv cpu_s "$line"),$(kv units_per_cpu_s "$line"),$(kv units_per_wall_s "$line"),$rc,$ready,$rss,$usr,$sys,$samples,$expected,$load1,$end_s,$POST_S,$POST_USER,$POST_SYS,$POST_RSS,$POST_SAMPLES,$POST_FRAMES,$(tr ' ' , <<<"${unw//-/}"),$data_bytes,$pss,$(tr ' ' , <<<"${WL//-/}")" >>"$RUNS"
	printf '  round %d  %5s Hz  %-13s  %10s units/cpu-s  %10s units/s  %s%s\n' "$round" "$hz" "$cfg" \
		"$(kv units_per_cpu_s "$line")" "$(kv units_per_wall_s "$line")" \
		"${samples:+samples=$samples${expected:+/$expected}}" \
		"${POST_S:+  perf script ${POST_S}s}" >&2
	sleep 1 # let the previous profiler's teardown settle
}

T_BENCH0=$(now)
note "overhead: $ROUNDS rounds x {$FREQS} Hz x {${CONFIGS[*]}}, ${SECONDS_T}s each"
read -r -a freq_arr <<<"$FREQS"
for ((r = 1; r <= ROUNDS; r++)); do
	for ((fi = 0; fi < ${#freq_arr[@]}; fi++)); do
		hz=${freq_arr[fi]}
		off=$(((r - 1 + fi) % ${#CONFIGS[@]}))
		for ((k = 0; k < ${#CONFIGS[@]}; k++)); do
			cfg=${CONFIGS[(off + k) % ${#CONFIGS[@]}]}
			overhead_run "$r" "$hz" "$cfg" "$k"
		done
	done
done

# ---------------------------------------------------------------------------------------------
# 2. Time to a profile on disk, with every CPU kept busy by the workload

TODISK=$OUT/todisk.csv
echo "round,workload,profiler,step,seconds,rss_kb,user_s,sys_s,samples,stacks,bytes,exit" >"$TODISK"

# Keep every CPU busy for the whole measurement with workload $TD_WL; pid in BUSY_PID.
busy_start() {
	if [ "$TD_WL" = narrow ]; then
		"$CPUWORK" "${CPUWORK_ARGS[@]}" 100000 >/dev/null &
	else
		"$CPUWORK" -w "$WIDE_DEPTH" 100000 >/dev/null &
	fi
	BUSY_PID=$!
	BG_PIDS+=("$BUSY_PID")
	sleep 1
}
busy_stop() { kill -KILL "$BUSY_PID" 2>/dev/null; wait "$BUSY_PID" 2>/dev/null; }

# round profiler step seconds rss_kb user_s sys_s samples stacks bytes exit (workload: $TD_WL)
todisk_row() { echo "$1,$TD_WL,$2,$3,$4,$5,$6,$7,$8,$9,${10},${11}" >>"$TODISK"; }

# Distinct stacks: hotcold reports raw (address-level) stacks with -v; a bpftrace map has one
# entry per distinct (kstack, ustack) pair; folded output has one line per symbolized stack.
hotcold_stacks() { sed -n 's/.* \([0-9]*\) distinct stacks.*/\1/p' "$1" | tail -1; }
bpftrace_stacks() { grep -c '\]: [0-9]*$' "$1" 2>/dev/null; }

todisk_hotcold() {
	local r=$1
	local pfx=$TMP/td$r-hotcold log=$OUT/logs/todisk-r$r-$TD_WL-hotcold
	local rc t_exit started dur_ns t_started rss usr sys samples expected stacks bytes written_ms
	local tree_ms="" enc_ms=""
	busy_start
	start_profiler hotcold "$TODISK_F" "$TODISK_D" "$pfx"
	wait "$PROF_TPID"
	rc=$?
	t_exit=$(now)
	busy_stop
	read -r rss usr sys < <(time_fields "$pfx.time")
	read -r samples expected < <(samples_of hotcold "$pfx.err")
	stacks=$(hotcold_stacks "$pfx.err")
	bytes=$(stat -c %s "$pfx.json" 2>/dev/null)
	cp "$pfx.err" "$log.err" 2>/dev/null
	[ "$rc" = 0 ] || note "hotcold exited with status $rc (see $log.err)"
	# hotcold's own figure (-v): from the sampler stopped to the file fsync'ed and renamed.
	written_ms=$(sed -n 's/.*written \([0-9.]*\) ms after the window closed.*/\1/p' "$pfx.err" | tail -1)
	if [ -n "$written_ms" ]; then
		todisk_row "$r" hotcold "window end -> file complete (hotcold -v)" \
			"$(calc "$written_ms / 1000")" "$rss" "$usr" "$sys" "$samples" "$stacks" "$bytes" "$rc"
	fi
	# and its phases, when -v reports them: "(symbolize+tree X ms, encode Y ms)"
	read -r tree_ms enc_ms < <(sed -n 's/.*(symbolize+tree \([0-9.]*\) ms, encode \([0-9.]*\) ms).*/\1 \2/p' "$pfx.err" | tail -1)
	if [ -n "${tree_ms:-}" ]; then
		todisk_row "$r" hotcold "- of which symbolize + tree (hotcold -v)" \
			"$(calc "$tree_ms / 1000")" "" "" "" "" "" "" "$rc"
		todisk_row "$r" hotcold "- of which encode (hotcold -v)" \
			"$(calc "$enc_ms / 1000")" "" "" "" "" "" "" "$rc"
	fi
	# The window as the profile records it, started_at (RFC 3339, ms) + duration_ns, to the
	# process exit seen from here. Read with sed, not jq: jq 1.6 stops at 256 nesting levels
	# and a deep (e.g. interpreter) stack in the flame graph tree exceeds that.
	started=$(head -c 4096 "$pfx.json" 2>/dev/null | grep -o '"started_at" *: *"[^"]*"' | head -1 | sed 's/.*: *"//; s/"$//')
	dur_ns=$(head -c 4096 "$pfx.json" 2>/dev/null | grep -o '"duration_ns" *: *[0-9]*' | head -1 | sed 's/.*: *//')
	if [ -n "$started" ] && [[ $dur_ns =~ ^[0-9]+$ ]]; then
		t_started=$(date -d "$started" +%s.%N)
		todisk_row "$r" hotcold "window end -> process exit (external; profile clock)" \
			"$(calc "$t_exit - $t_started - $dur_ns / 1e9")" "$rss" "$usr" "$sys" "$samples" \
			"$stacks" "$bytes" "$rc"
		todisk_row "$r" hotcold "startup: exec -> window start" \
			"$(calc "$t_started - $PROF_T0")" "" "" "" "" "" "" "$rc"
	fi
	todisk_row "$r" hotcold "exec -> exit minus D (external; incl. startup)" \
		"$(calc "$t_exit - $PROF_T0 - $TODISK_D")" "$rss" "$usr" "$sys" "$samples" "$stacks" \
		"$bytes" "$rc"
	rm -f "$pfx".*
}

todisk_perf() {
	local r=$1
	local pfx=$TMP/td$r-perf log=$OUT/logs/todisk-r$r-$TD_WL-perf
	local rc t_exit t_win_end="" t0 t1 rss usr sys samples bytes rec_tail sleep_pid
	busy_start
	start_profiler perf "$TODISK_F" "$TODISK_D" "$pfx"
	# perf record's window closes when its `sleep D` child exits: watch for that.
	if [ -n "$PROF_PID" ] && wait_ready "$PROF_PID" && sleep_pid=$(child_of "$PROF_PID"); then
		while alive "$sleep_pid"; do
			sleep 0.01
		done
		t_win_end=$(now)
	fi
	wait "$PROF_TPID"
	rc=$?
	t_exit=$(now)
	read -r rss usr sys < <(time_fields "$pfx.time")
	samples=$(samples_of perf "$pfx.err")
	bytes=$(stat -c %s "$pfx.perf.data" 2>/dev/null)
	cp "$pfx.err" "$log.record.err" 2>/dev/null
	[ "$rc" = 0 ] || note "perf record exited with status $rc (see $log.record.err)"
	[ -n "$t_win_end" ] || t_win_end=$(calc "$PROF_T0 + $TODISK_D")
	rec_tail=$(calc "$t_exit - $t_win_end")
	todisk_row "$r" perf "perf record: window end (sleep exits) -> exit" "$rec_tail" \
		"$rss" "$usr" "$sys" "$samples" "" "$bytes" "$rc"
	todisk_row "$r" perf "perf record: exec -> exit minus D (incl. startup)" \
		"$(calc "$t_exit - $PROF_T0 - $TODISK_D")" "$rss" "$usr" "$sys" "$samples" "" "$bytes" "$rc"

	t0=$(now)
	/usr/bin/time -f '%M %U %S %e' -o "$pfx.script.time" \
		perf script -i "$pfx.perf.data" >"$pfx.script.txt" 2>"$pfx.script.err"
	rc=$?
	t1=$(now)
	read -r rss usr sys < <(time_fields "$pfx.script.time")
	todisk_row "$r" perf "perf script > file" "$(calc "$t1 - $t0")" "$rss" "$usr" "$sys" \
		"$samples" "" "$(stat -c %s "$pfx.script.txt" 2>/dev/null)" "$rc"
	rm -f "$pfx.script.txt"

	t0=$(now)
	/usr/bin/time -f '%M %U %S %e' -o "$pfx.script.time" \
		perf script -i "$pfx.perf.data" 2>"$pfx.script.err" |
		awk -f "$BENCH_DIR/collapse-perf.awk" >"$pfx.folded"
	rc=$?
	t1=$(now)
	read -r rss usr sys < <(time_fields "$pfx.script.time")
	todisk_row "$r" perf "perf script | collapse > file" "$(calc "$t1 - $t0")" "$rss" "$usr" \
		"$sys" "$(awk '{ s += $NF } END { print s + 0 }' "$pfx.folded")" \
		"$(wc -l <"$pfx.folded")" "$(stat -c %s "$pfx.folded" 2>/dev/null)" "$rc"
	todisk_row "$r" perf "total: record tail + script | collapse" \
		"$(calc "$rec_tail + $t1 - $t0")" "" "" "" "" "" "" ""
	cp "$pfx.script.err" "$log.script.err" 2>/dev/null
	busy_stop
	rm -f "$pfx".*
}

todisk_bpftrace() {
	local r=$1
	local pfx=$TMP/td$r-bpftrace log=$OUT/logs/todisk-r$r-$TD_WL-bpftrace
	local rc t_int t_exit rss usr sys
	busy_start
	start_profiler bpftrace "$TODISK_F" 0 "$pfx"
	[ -n "$PROF_PID" ] && wait_ready "$PROF_PID"
	sleep "$TODISK_D"
	t_int=$(now)
	stop_bpftrace "$PROF_PID" "$PROF_TPID" 180
	rc=$WAIT_RC
	t_exit=$(now)
	busy_stop
	read -r rss usr sys < <(time_fields "$pfx.time")
	cp "$pfx.err" "$log.err" 2>/dev/null
	[ "$rc" = 0 ] || note "bpftrace exited with status $rc (see $log.err)"
	todisk_row "$r" bpftrace "SIGINT -> map printed to file" "$(calc "$t_exit - $t_int")" \
		"$rss" "$usr" "$sys" "$(bpftrace_samples "$pfx.bpftrace.out")" \
		"$(bpftrace_stacks "$pfx.bpftrace.out")" "$(stat -c %s "$pfx.bpftrace.out" 2>/dev/null)" "$rc"
	rm -f "$pfx".*
}

if [ "$TODISK_ROUNDS" -gt 0 ]; then
	TD=(hotcold perf bpftrace)
	WLS=(narrow)
	[ "$WIDE_DEPTH" -gt 0 ] && WLS+=(wide)
	note "time to disk: $TODISK_ROUNDS rounds x {${WLS[*]}} workloads, -F $TODISK_F for ${TODISK_D}s on $NCPU busy CPUs"
	for ((r = 1; r <= TODISK_ROUNDS; r++)); do
		for TD_WL in "${WLS[@]}"; do
			for ((k = 0; k < 3; k++)); do
				p=${TD[(r - 1 + k) % 3]}
				note "  round $r, $TD_WL workload: $p"
				"todisk_$p" "$r"
				sleep 1
			done
		done
	done
fi
T_BENCH1=$(now)
echo "perf_event_max_sample_rate after: $(sysfs_or /proc/sys/kernel/perf_event_max_sample_rate ?)" >>"$OUT/machine.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
echo "bench wall time: $(calc "($T_BENCH1 - $T_BENCH0) / 60") min" >>"$OUT/machine.txt"

write_report
echo
cat "$OUT/summary.md"
echo
note "results in $OUT"
