#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/serve-store.sh: `hotcold serve` under a real PostgreSQL load (bench/pg.sh: pgbench -S,
# 8 clients), its memory store side by side with its disk store (issue 20, "Speed and size").
#
# One throwaway cluster serves every run. Each round runs every configuration once, in an
# order rotated by round; each run starts serve, waits --warm s, then measures over one
# pgbench run of T s:
#   off           no profiler: pgbench's own figure (tps), the reference of the round
#   memory@RATE   serve --data-dir none (today's memory store; a build without --data-dir
#                 runs plain, which is the same thing)
#   disk@RATE     serve --data-dir DIR, DIR fresh and empty each run (skipped, saying so, when
#                 the binary's `serve --help` does not mention --data-dir); the build's
#                 default unwinding (--unwind table since the twelfth session of issue 21)
#   diskfp@RATE   the same with --unwind fp: what the rest costs without unwinding
#   disktable@RATE the same with --unwind table: DWARF unwinding in BPF from compiled tables
#   diskcopy@RATE the same with --unwind copy: stack copies unwound in user space (`dwarf`,
#                 the default before the tables)
#   base@RATE     the --base build (an older one, before/after), memory store
#   diskbase@RATE the --base build with its disk store (named in --configs only)
# RATE: `default` (no -F: serve's default rate) and any --rates given (e.g. "default 199").
# The report gives medians over rounds; tps "kept" is the median of per-round ratios to `off`.
#
# Per run: pgbench tps and the machine's context switches per second (/proc/stat ctxt);
# CPU (% of one core: utime+stime deltas over the load) of the collector worker and of all
# serve's processes; RSS of all serve's processes together (sum of VmRSS of the main process
# and its children, found by their /proc/PID/stat ppid; sampled every 2 s: max and last);
# PSS of them together at the end (smaps_rollup: shared library pages, which RSS counts once
# in each process, divided among the processes that map them);
# from /api/status: ring-buffer losses (`lost`, deltas), memory store bytes (`store.bytes`),
# seconds held at 1 s (`store.seconds`), `retention.span_s`, `store.evicted_early_s`, disk
# bytes (`store.disk.bytes`, when present); growth of DIR (`du -sb`) per second of load.
# The worker and the HTTP server are both `hotcold`, both run as --user: the worker is the
# child holding a BPF map fd (the ring buffer it drains: anon_inode:bpf-map in /proc/PID/fd),
# which the server, forked before any BPF object existed, never has (docs/serve.md).
#
# --load synthetic replaces PostgreSQL with our own programs, for a machine without packages
# (the lent 16-CPU machine: docs/benchmarks.md, "Scale"): bench/cpuwork -w 5 on --cpu-threads
# threads (default one per CPU; spread over 32768 distinct stacks) beside bench/lockwork -m mmap
# on --lock-threads threads (default half the CPUs; blocks and wakes on a shared mmap_lock,
# for off-CPU and run-queue intervals). Its figures: cpuwork's units/s in the tps column and
# lockwork's ops/s in lock_ops_per_s.
#
# Usage: bench/serve-store.sh [--rounds N] [--seconds T] [--warm W] [--rates "default 199"]
#        [--configs "off memory disk"] [--hotcold PATH] [--base PATH] [--data-root DIR]
#        [--keep-data] [--scale S] [--clients C] [--out DIR] [--no-install]
#        [--load pg|synthetic] [--cpuwork PATH] [--lockwork PATH] [--cpu-threads N]
#        [--lock-threads N]                                                     (as root)
# Defaults: 3 rounds, 60 s, warm 5 s, rates "default", configs "off memory disk" (plus base
# with --base), data under /var/tmp (a real disk, not tmpfs), results in
# bench/results/serve-store-<UTC stamp>/ (runs.csv, summary.md, logs/). --keep-data keeps
# the last disk run's DIR there (data-RATE/: an input for bench/store-week.sh).
set -uo pipefail
export LC_ALL=C

note() { echo "bench/serve-store.sh: $*" >&2; }
die() {
	note "$*"
	exit 1
}

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
# shellcheck source=bench/lib.sh
. "$BENCH_DIR/lib.sh"
# shellcheck source=bench/pg.sh
. "$BENCH_DIR/pg.sh"

HOTCOLD="$REPO/build/hotcold"
HOTCOLD_BASE=""
ROUNDS=3
SECS=60
WARM=5
RATES="default"
CONFIGS="off memory disk"
DATA_ROOT=/var/tmp
KEEP_DATA=0
OUT=""
INSTALL=1
LOAD=pg
CPUWORK="$REPO/build/bench/cpuwork"
LOCKWORK="$REPO/build/bench/lockwork"
CPU_THREADS=$(nproc)
LOCK_THREADS=$((($(nproc) + 1) / 2))
LOCK_OPS=NA
MAX_STORE_BYTES=$((10 << 20)) # serve's default --max-store (10M), for the implied seconds

while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	--seconds) SECS=$2; shift 2 ;;
	--warm) WARM=$2; shift 2 ;;
	--rates) RATES=$2; shift 2 ;;
	--configs) CONFIGS=$2; shift 2 ;;
	--hotcold) HOTCOLD=$2; shift 2 ;;
	--base) HOTCOLD_BASE=$2; shift 2 ;;
	--data-root) DATA_ROOT=$2; shift 2 ;;
	--keep-data) KEEP_DATA=1; shift ;;
	--scale) PG_SCALE=$2; shift 2 ;;
	--clients) PG_CLIENTS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--no-install) INSTALL=0; shift ;;
	--load) LOAD=$2; shift 2 ;;
	--cpuwork) CPUWORK=$2; shift 2 ;;
	--lockwork) LOCKWORK=$2; shift 2 ;;
	--cpu-threads) CPU_THREADS=$2; shift 2 ;;
	--lock-threads) LOCK_THREADS=$2; shift 2 ;;
	-h | --help) print_header; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
[ "$(id -u)" = 0 ] || die "run as root"
install_missing curl:curl jq:jq
[ -x "$HOTCOLD" ] || die "no hotcold binary at $HOTCOLD (meson compile -C build)"
case "$LOAD" in
pg) ;;
synthetic)
	[ -x "$CPUWORK" ] || die "no cpuwork at $CPUWORK (meson compile -C build)"
	[ -x "$LOCKWORK" ] || die "no lockwork at $LOCKWORK (meson compile -C build)"
	;;
*) die "unknown --load $LOAD (pg or synthetic)" ;;
esac
if [ -n "$HOTCOLD_BASE" ]; then
	[ -x "$HOTCOLD_BASE" ] || die "--base $HOTCOLD_BASE is not an executable"
	case " $CONFIGS " in *" base "* | *" diskbase "*) ;; *) CONFIGS+=" base" ;; esac
fi

has_data_dir() { "$1" serve --help 2>&1 | grep -q -- '--data-dir'; }

# The run list: off once, every other configuration at every rate.
RUNS=()
for cfg in $CONFIGS; do
	case "$cfg" in
	off) RUNS+=(off); continue ;;
	memory) ;;
	disk | diskfp | disktable | diskcopy)
		if ! has_data_dir "$HOTCOLD"; then
			note "skipping disk: $HOTCOLD serve --help does not mention --data-dir (no disk store in that build)"
			continue
		fi
		;;
	base) [ -n "$HOTCOLD_BASE" ] || die "base needs --base PATH" ;;
	diskbase)
		[ -n "$HOTCOLD_BASE" ] || die "diskbase needs --base PATH"
		has_data_dir "$HOTCOLD_BASE" || die "diskbase: $HOTCOLD_BASE has no disk store"
		;;
	*) die "unknown configuration $cfg (off, memory, disk, diskfp, disktable, diskcopy, base, diskbase)" ;;
	esac
	for rate in $RATES; do
		case "$rate" in
		default | [1-9]*) RUNS+=("$cfg@$rate") ;;
		*) die "bad rate $rate (default or Hz)" ;;
		esac
	done
done
[ ${#RUNS[@]} -gt 0 ] || die "nothing to run"

OUT=${OUT:-$BENCH_DIR/results/serve-store-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/logs" || die "cannot create $OUT"
CSV="$OUT/runs.csv"
COLS="round,config,tps,ctxt_per_s,load_s,worker_cpu_pct,all_cpu_pct,status_collector_cpu_pct"
COLS+=",rss_max_kb,rss_end_kb,worker_rss_kb,server_rss_kb,main_rss_kb,du_bytes_per_s"
COLS+=",disk_status_bytes_per_s,disk_bytes_end,mem_store_bytes_per_s,mem_store_bytes_end"
COLS+=",store_seconds,span_s,evicted_early_s,lost,lost_ringbuf,samples_per_s,processes,loadavg"
COLS+=",pss_end_kb,lock_ops_per_s"
echo "$COLS" >"$CSV"
NCOLS=$(echo "$COLS" | tr , '\n' | wc -l)
HZ=$(getconf CLK_TCK)

# A parent for the disk runs' data dirs: traversable by serve's --user (nobody).
DATA_PARENT=$(mktemp -d "$DATA_ROOT/hotcold-bench-store.XXXXXX") || die "mktemp in $DATA_ROOT failed"
chmod 755 "$DATA_PARENT"
# shellcheck disable=SC2016 # expanded when it runs
at_exit 'rm -rf "$DATA_PARENT"'

SAMPLER_PID=""
stop_sampler() {
	[ -n "$SAMPLER_PID" ] || return 0
	kill "$SAMPLER_PID" 2>/dev/null
	wait "$SAMPLER_PID" 2>/dev/null
	SAMPLER_PID=""
}
at_exit stop_sampler

SERVE_PID=""
SERVE_ADDR=""
stop_serve() {
	[ -n "$SERVE_PID" ] || return 0
	kill -INT "$SERVE_PID" 2>/dev/null
	wait_bounded "$SERVE_PID" 10
	[ "$WAIT_RC" -eq 0 ] || note "serve exited $WAIT_RC"
	SERVE_PID=""
}
at_exit stop_serve

# Start `BIN serve ARGS...` on a free loopback port; sets SERVE_PID and SERVE_ADDR.
start_serve() {
	local bin=$1 log=$2 i
	shift 2
	"$bin" serve --listen 127.0.0.1:0 "$@" </dev/null 2>"$log" &
	SERVE_PID=$!
	for ((i = 0; i < 600; i++)); do
		SERVE_ADDR=$(sed -n 's|.*serving http://\([^/]*\)/.*|\1|p' "$log")
		[ -n "$SERVE_ADDR" ] && return 0
		alive "$SERVE_PID" || break
		sleep 0.05
	done
	die "serve did not start ($bin serve $*): $(tail -3 "$log")"
}

# serve's processes: the main one and its children (found by ppid).
serve_pids() {
	local f st pid
	echo "$SERVE_PID"
	for f in /proc/[0-9]*/stat; do
		read -r st 2>/dev/null <"$f" || continue
		pid=${st%% *}
		st=${st##*) }
		st=${st#* }
		[ "${st%% *}" = "$SERVE_PID" ] && echo "$pid"
	done
}

is_worker() { [ -n "$(find "/proc/$1/fd" -lname 'anon_inode:bpf-map' -print -quit 2>/dev/null)" ]; }

# Which child is which: "WORKER SERVER" (see the header).
serve_roles() {
	local p worker="" server=""
	for p in $(serve_pids); do
		[ "$p" = "$SERVE_PID" ] && continue
		if is_worker "$p"; then worker=$p; else server=$p; fi
	done
	echo "${worker:-0} ${server:-0}"
}

ticks() { # utime + stime of the processes given (all threads: the leader's /proc/PID/stat)
	local p st sum=0 f
	for p in "$@"; do
		read -r st 2>/dev/null <"/proc/$p/stat" || continue
		st=${st##*) }
		read -r -a f <<<"$st"
		sum=$((sum + f[11] + f[12])) # fields 14 and 15, counted from field 3 (state)
	done
	echo $sum
}

# The sum of FIELD (kB) of /proc/PID/FILE over the PIDs given: kb_sum FILE FIELD PID...
kb_sum() {
	local file=$1 field=$2 p sum=0 r
	shift 2
	for p in "$@"; do
		r=$(awk -v f="$field:" '$1 == f { print $2 }' "/proc/$p/$file" 2>/dev/null)
		sum=$((sum + ${r:-0}))
	done
	echo $sum
}
rss_kb() { kb_sum status VmRSS "$@"; }
pss_kb() { kb_sum smaps_rollup Pss "$@"; }

# Every 2 s until killed, a line into $1: "ns rss_kb store_bytes evicted_early_s", RSS of all
# serve's processes and the memory store's size, whose growth is only measurable until
# --max-store is reached (then seconds are merged or dropped: evicted_early_s grows). serve
# profiles every process of the machine, and a process the sampler starts is one more process
# (and subtree) in the profile: it uses bash builtins only, except one curl | jq every 10 s.
# (Before, about 13 processes a second: 16k in 20 min, most of the store's distinct stacks.)
sampler() {
	local i=0 sfd p k v st rss store="NA NA"
	local -a pids
	exec {sfd}<> <(:) # read -t on it: a sleep without a process
	while alive "$SERVE_PID"; do
		((i++ % 5 == 0)) &&
			store=$(status | jq -r '"\(.store.bytes // "NA") \(.store.evicted_early_s // "NA")"' 2>/dev/null)
		pids=("$SERVE_PID")
		for p in /proc/[0-9]*/stat; do
			read -r st 2>/dev/null <"$p" || continue
			k=${st##*) }
			k=${k#* }
			[ "${k%% *}" = "$SERVE_PID" ] && pids+=("${st%% *}")
		done
		rss=0
		for p in "${pids[@]}"; do
			while read -r k v _; do
				[ "$k" = VmRSS: ] && rss=$((rss + v)) && break
			done 2>/dev/null <"/proc/$p/status"
		done
		echo "${EPOCHREALTIME/./}000 $rss ${store:-NA NA}" >>"$1"
		read -r -t 2 -u "$sfd" _
	done
}

# The memory store's growth in bytes per second of load: from the first sample to the last
# one before --max-store made it drop seconds early.
mem_store_rate() {
	awk 'NR == 1 { t0 = $1; b0 = $3; e0 = $4 }
	$4 == e0 && $3 != "NA" { t = $1; b = $3 }
	END { if (t > t0) printf "%.1f\n", (b - b0) / ((t - t0) / 1e9); else print "NA" }' "$1"
}

status() { curl -s -m 10 "http://$SERVE_ADDR/api/status"; }

# The /api/status figures a run reports, as "name value" lines.
status_figures() {
	jq -r '
		def n: if . == null then "NA" else . end;
		"lost \([.lost | to_entries[] | select(.key | endswith("_ns") | not) | .value] | add | n)",
		"lost_ringbuf \((.lost.ringbuf_full // 0) + (.lost.offcpu_ringbuf_full // 0))",
		"mem_store_bytes \(.store.bytes | n)",
		"store_seconds \(.store.seconds | n)",
		"evicted_early_s \(.store.evicted_early_s | n)",
		"span_s \(.retention.span_s | n)",
		"disk_bytes \(.store.disk.bytes | n)",
		"collector_cpu_ns \(.collector.cpu_ns | n)",
		"samples \(.samples | n)",
		"processes \(.symbolize.processes | n)"' "$1"
}

fig() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

# b - a over s seconds, or NA.
rate() { awk -v a="$1" -v b="$2" -v s="$3" 'BEGIN { if (a == "NA" || b == "NA" || a == "" || b == "") print "NA"; else printf "%.1f", (b - a) / s }'; }

# The synthetic load for SECS s: sets PG_TPS (cpuwork's units/s), LOCK_OPS (lockwork's ops/s)
# and PG_CTXT_PER_S, as pg_load does.
synth_load() {
	local secs=$1 c0 c1 t0 t1 cpid lpid clog llog
	clog=$OUT/logs/cpuwork.last llog=$OUT/logs/lockwork.last
	c0=$(ctxt_now)
	t0=$(date +%s%N)
	"$CPUWORK" -t "$CPU_THREADS" -w 5 "$secs" >"$clog" 2>&1 &
	cpid=$!
	"$LOCKWORK" -t "$LOCK_THREADS" -m mmap "$secs" >"$llog" 2>&1 &
	lpid=$!
	wait "$cpid" || { note "cpuwork failed: $(tail -3 "$clog")"; return 1; }
	wait "$lpid" || { note "lockwork failed: $(tail -3 "$llog")"; return 1; }
	t1=$(date +%s%N)
	c1=$(ctxt_now)
	PG_TPS=$(tr ' ' '\n' <"$clog" | sed -n 's/^units_per_wall_s=//p')
	LOCK_OPS=$(tr ' ' '\n' <"$llog" | sed -n 's/^ops_per_s=//p')
	PG_CTXT_PER_S=$(awk -v c=$((c1 - c0)) -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", c / (ns / 1e9) }')
	if [ -z "$PG_TPS" ] || [ -z "$LOCK_OPS" ]; then
		note "no figures from the synthetic load"
		return 1
	fi
}

load_run() {
	if [ "$LOAD" = pg ]; then pg_load "$1" >/dev/null; else synth_load "$1"; fi
}

run_one() {
	local round=$1 run=$2 cfg rate bin args=() log data="" worker server
	local t0 t1 all0 all1 w0 w1 du0=NA du1=NA s0 s1 load_s samples
	local rss_max rss_end wrss srss mrss pss
	cfg=${run%@*} rate=${run#*@}
	log="$OUT/logs/$round-$run.log"
	if [ "$cfg" = off ]; then
		load_run "$SECS" || die "the load failed"
		echo "$round,off,$PG_TPS,$PG_CTXT_PER_S,$SECS$(printf ',NA%.0s' $(seq $((NCOLS - 8)))),$(cut -d' ' -f1 /proc/loadavg),NA,$LOCK_OPS" >>"$CSV"
		note "round $round off: $PG_TPS tps, $PG_CTXT_PER_S switches/s"
		return 0
	fi
	bin=$HOTCOLD
	case "$cfg" in base | diskbase) bin=$HOTCOLD_BASE ;; esac
	[ "$rate" = default ] || args+=(-F "$rate")
	case "$cfg" in
	memory | base) has_data_dir "$bin" && args+=(--data-dir none) ;;
	disk | diskfp | disktable | diskcopy | diskbase)
		data="$DATA_PARENT/data-$rate"
		rm -rf "$data"
		args+=(--data-dir "$data")
		[ "$cfg" = diskfp ] && args+=(--unwind fp)
		[ "$cfg" = disktable ] && args+=(--unwind table)
		[ "$cfg" = diskcopy ] && args+=(--unwind dwarf) # copy's name in every build
		;;
	esac
	start_serve "$bin" "$log" "${args[@]}"
	sleep "$WARM"
	read -r worker server <<<"$(serve_roles)"
	[ "$worker" != 0 ] || die "no collector worker found among serve's children ($(serve_pids | tr '\n' ' '))"
	samples="$OUT/logs/$round-$run.samples"
	: >"$samples"
	status >"$OUT/logs/$round-$run.status0.json"
	[ -n "$data" ] && du0=$(du -sb "$data" | cut -f1)
	# shellcheck disable=SC2046
	all0=$(ticks $(serve_pids))
	w0=$(ticks "$worker")
	t0=$(date +%s%N)
	sampler "$samples" &
	SAMPLER_PID=$!
	load_run "$SECS" || die "the load failed"
	t1=$(date +%s%N)
	# shellcheck disable=SC2046
	all1=$(ticks $(serve_pids))
	w1=$(ticks "$worker")
	stop_sampler
	[ -n "$data" ] && du1=$(du -sb "$data" | cut -f1)
	status >"$OUT/logs/$round-$run.status1.json"
	wrss=$(rss_kb "$worker") srss=$(rss_kb "$server") mrss=$(rss_kb "$SERVE_PID")
	pss=$(pss_kb "$worker" "$server" "$SERVE_PID")
	stop_serve
	if [ -n "$data" ] && [ "$KEEP_DATA" -eq 1 ]; then
		rm -rf "$OUT/data-$rate"
		mv "$data" "$OUT/data-$rate"
	fi
	rss_max=$(awk '$2 > m { m = $2 } END { print m + 0 }' "$samples")
	rss_end=$(awk 'END { print $2 + 0 }' "$samples")
	status_figures "$OUT/logs/$round-$run.status0.json" >"$OUT/logs/s0"
	status_figures "$OUT/logs/$round-$run.status1.json" >"$OUT/logs/s1"
	s0=$OUT/logs/s0 s1=$OUT/logs/s1
	load_s=$(awk -v ns=$((t1 - t0)) 'BEGIN { printf "%.3f", ns / 1e9 }')
	local row
	row="$round,$run,$PG_TPS,$PG_CTXT_PER_S,$load_s"
	row+=",$(awk -v t=$((w1 - w0)) -v hz="$HZ" -v s="$load_s" 'BEGIN { printf "%.2f", 100 * t / hz / s }')"
	row+=",$(awk -v t=$((all1 - all0)) -v hz="$HZ" -v s="$load_s" 'BEGIN { printf "%.2f", 100 * t / hz / s }')"
	row+=",$(rate "$(fig collector_cpu_ns "$s0")" "$(fig collector_cpu_ns "$s1")" "$load_s" |
		awk '{ print $1 == "NA" ? "NA" : sprintf("%.2f", $1 / 1e7) }')"
	row+=",$rss_max,$rss_end,$wrss,$srss,$mrss"
	row+=",$(rate "$du0" "$du1" "$load_s")"
	row+=",$(rate "$(fig disk_bytes "$s0")" "$(fig disk_bytes "$s1")" "$load_s"),$(fig disk_bytes "$s1")"
	row+=",$(mem_store_rate "$samples")"
	row+=",$(fig mem_store_bytes "$s1"),$(fig store_seconds "$s1"),$(fig span_s "$s1")"
	row+=",$(fig evicted_early_s "$s1")"
	row+=",$(awk -v a="$(fig lost "$s0")" -v b="$(fig lost "$s1")" 'BEGIN { print b - a }')"
	row+=",$(awk -v a="$(fig lost_ringbuf "$s0")" -v b="$(fig lost_ringbuf "$s1")" 'BEGIN { print b - a }')"
	row+=",$(rate "$(fig samples "$s0")" "$(fig samples "$s1")" "$load_s")"
	row+=",$(fig processes "$s1"),$(cut -d' ' -f1 /proc/loadavg),$pss,$LOCK_OPS"
	echo "$row" >>"$CSV"
	rm -f "$s0" "$s1"
	note "round $round $run: $PG_TPS tps, collector $(echo "$row" | cut -d, -f6) % of a core, RSS $((rss_max / 1024)) MiB"
}

# Median of column COL over the rows of configuration CFG (NA rows left out).
med() {
	awk -F, -v cfg="$1" -v col="$2" '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
	$2 == cfg && $c != "NA" && $c != "" { a[++n] = $c + 0 }
	END {
		if (!n) { print "NA"; exit }
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		print (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}' "$CSV"
}

# Median over rounds of (CFG's COL / off's COL in the same round); COL: tps unless given.
kept() {
	awk -F, -v cfg="$1" -v col="${2:-tps}" '
	NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; next }
	$2 == "off" && $c != "NA" { off[$1] = $c }
	$2 == cfg && $c != "NA" { v[$1] = $c }
	END {
		for (r in v) if (off[r] > 0) a[++n] = v[r] / off[r]
		if (!n) { print "NA"; exit }
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		printf "%.3f\n", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}' "$CSV"
}

fmt() { awk -v v="$1" -v f="$2" -v d="${3:-1}" 'BEGIN { if (v == "NA") print "–"; else printf f "\n", v / d }'; }

report() {
	local run
	if [ "$LOAD" = pg ]; then
		echo "# serve under pgbench -S -c $PG_CLIENTS -j $PG_THREADS (scale $PG_SCALE): $ROUNDS rounds x ${SECS}s, interleaved, medians"
	else
		echo "# serve under cpuwork -w 5 ($CPU_THREADS threads) beside lockwork -m mmap ($LOCK_THREADS threads): $ROUNDS rounds x ${SECS}s, interleaved, medians"
		echo
		echo "| configuration | cpuwork units/s | kept vs off | lockwork ops/s | kept vs off |"
		echo "|---|---|---|---|---|"
		for run in "${UNIQUE_RUNS[@]}"; do
			echo "| $run | $(fmt "$(med "$run" tps)" %.0f) | $(kept "$run") | $(fmt "$(med "$run" lock_ops_per_s)" %.0f) | $(kept "$run" lock_ops_per_s) |"
		done
	fi
	echo
	echo "| configuration | $([ "$LOAD" = pg ] && echo "pgbench tps" || echo "cpuwork units/s") | kept vs off | switches/s | load avg | collector CPU % | all serve CPU % | RSS all, max (MiB) | RSS all, end (MiB) | PSS all, end (MiB) | collector / server / main RSS (MiB) | ring-buffer losses | all losses |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for run in "${UNIQUE_RUNS[@]}"; do
		echo "| $run | $(fmt "$(med "$run" tps)" %.0f) | $(kept "$run") | $(fmt "$(med "$run" ctxt_per_s)" %.0f)" \
			"| $(fmt "$(med "$run" loadavg)" %.1f)" \
			"| $(fmt "$(med "$run" worker_cpu_pct)" %.2f) | $(fmt "$(med "$run" all_cpu_pct)" %.2f)" \
			"| $(fmt "$(med "$run" rss_max_kb)" %.1f 1024) | $(fmt "$(med "$run" rss_end_kb)" %.1f 1024)" \
			"| $(fmt "$(med "$run" pss_end_kb)" %.1f 1024)" \
			"| $(fmt "$(med "$run" worker_rss_kb)" %.1f 1024) / $(fmt "$(med "$run" server_rss_kb)" %.1f 1024) / $(fmt "$(med "$run" main_rss_kb)" %.1f 1024)" \
			"| $(fmt "$(med "$run" lost_ringbuf)" %.0f) | $(fmt "$(med "$run" lost)" %.0f) |"
	done
	echo
	echo "| configuration | disk B/s (du growth) | disk B/s (store.disk.bytes) | memory store B/s | store.seconds at end | retention.span_s | store.evicted_early_s | seconds $((MAX_STORE_BYTES >> 20)) MiB holds at 1 s (implied) | samples/s | processes seen |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for run in "${UNIQUE_RUNS[@]}"; do
		[ "$run" = off ] && continue
		local msb
		msb=$(med "$run" mem_store_bytes_per_s)
		echo "| $run | $(fmt "$(med "$run" du_bytes_per_s)" %.0f) | $(fmt "$(med "$run" disk_status_bytes_per_s)" %.0f)" \
			"| $(fmt "$msb" %.0f) | $(fmt "$(med "$run" store_seconds)" %.0f) | $(fmt "$(med "$run" span_s)" %.0f)" \
			"| $(fmt "$(med "$run" evicted_early_s)" %.0f)" \
			"| $(awk -v b="$msb" -v m="$MAX_STORE_BYTES" 'BEGIN { print (b == "NA" || b <= 0) ? "–" : sprintf("%.0f", m / b) }')" \
			"| $(fmt "$(med "$run" samples_per_s)" %.0f) | $(fmt "$(med "$run" processes)" %.0f) |"
	done
	echo
	echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); hotcold $HOTCOLD${HOTCOLD_BASE:+, base $HOTCOLD_BASE}."
	echo "Collector CPU: the worker's utime+stime over the load; all: main + worker + HTTP server."
	echo "Load avg: /proc/loadavg's 1-min figure at each run's end (other work on the machine);"
	echo "processes seen: symbolize.processes (the load's, and whatever else ran)."
	echo "Raw figures: runs.csv (one row per run), logs/ (serve's stderr, /api/status before and after each load, RSS and store.bytes every 2 s)."
}

UNIQUE_RUNS=("${RUNS[@]}")
[ "$LOAD" = pg ] && pg_start
note "runs per round: ${RUNS[*]}; $ROUNDS rounds x ${SECS}s (+${WARM}s warm-up each)"
n=${#RUNS[@]}
for ((r = 1; r <= ROUNDS; r++)); do
	for ((i = 0; i < n; i++)); do
		run_one "$r" "${RUNS[$(((i + r) % n))]}"
	done
done
report | tee "$OUT/summary.md"
note "results: $OUT"
