#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/soak.sh: `hotcold serve` for a long time under churn, its memory and descriptors
# watched (issue 6). Passes when, after warm-up, they stay flat.
#
#   - serve (the built binary) runs at -F HZ on 127.0.0.1, a port of its own.
#   - Churn throughout: a shell starting short-lived processes that exec (true, ls, sh, awk,
#     sleep: ~CHURN a second, counted), stress-ng (if installed) creating and ending threads
#     (--pthread) and switching contexts (--switch), so the collector keeps seeing new pids,
#     new maps, threads that come and go.
#   - A client polls every API route and two viewer files with curl, one request after the
#     other, all the time; every answer's status is counted.
#   - Every INTERVAL s: RSS (VmRSS) and open descriptors (/proc/PID/fd) of every process of
#     serve, found as the descendants of the pid we started (whatever the split: collector and
#     server, or broker, server and worker), printed as a table.
#
# Verdict (exit 0 pass, 1 fail):
#   - RSS: the sum over serve's processes, over the second half of the run: the rise of a
#     least-squares line through its samples is at most MAX_GROWTH_PCT % of its mean.
#   - descriptors: for each process, the most it held in the second half is at most FD_SLACK
#     above the most it held in the first half after warm-up (the first WARM s).
#   - no process of serve ended or appeared, every request was answered (no connection error,
#     no 5xx except 503 "no data yet" in the first 10 s), and SIGTERM at the end stops serve
#     with exit 0 within 10 s.
#
# Usage: bench/soak.sh [--duration S] [--interval S] [--warm S] [--hz N] [--churn N]
#                      [--max-growth-pct P] [--fd-slack N] [--no-stress]      (as root)
#   defaults: 600 s, 5 s, 60 s, 999 Hz, 100 processes a second, 5 %, 4
# Results: printed, and kept in bench/results/soak-<UTC timestamp>/ (samples.tsv, requests.log,
# serve.log). Run long loads under the e2e lock: flock /tmp/hc-e2e.lock bench/soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."

duration=600 interval=5 warm=60 hz=999 churn=100 max_growth_pct=5 fd_slack=4 use_stress=1
while [ $# -gt 0 ]; do
	case "$1" in
	--duration) duration=$2; shift ;;
	--interval) interval=$2; shift ;;
	--warm) warm=$2; shift ;;
	--hz) hz=$2; shift ;;
	--churn) churn=$2; shift ;;
	--max-growth-pct) max_growth_pct=$2; shift ;;
	--fd-slack) fd_slack=$2; shift ;;
	--no-stress) use_stress=0 ;;
	-h|--help) sed -n '3,34p' "$0"; exit 0 ;;
	*) echo "bench/soak.sh: unknown option $1" >&2; exit 64 ;;
	esac
	shift
done
[ "$(id -u)" -eq 0 ] || { echo "bench/soak.sh: run as root (serve loads BPF)" >&2; exit 77; }
command -v curl >/dev/null || { echo "bench/soak.sh: needs curl" >&2; exit 69; }
hotcold=$PWD/build/hotcold
[ -x "$hotcold" ] || { echo "bench/soak.sh: build first (meson compile -C build)" >&2; exit 69; }
if [ "$warm" -ge $((duration / 2)) ]; then
	echo "bench/soak.sh: --warm must be shorter than half of --duration" >&2
	exit 64
fi
out=bench/results/soak-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$out"

serve_pid='' churn_pid='' poll_pid='' stress_pid=''
cleanup() {
	local p
	for p in $churn_pid $poll_pid $stress_pid; do
		kill "$p" 2>/dev/null || true
	done
	for p in $churn_pid $poll_pid $stress_pid; do
		wait "$p" 2>/dev/null || true
	done
	if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
		kill -TERM "$serve_pid" 2>/dev/null || true
		wait "$serve_pid" 2>/dev/null || true
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Every descendant of $1, $1 first. The parent pid is the 2nd field after the comm in
# parentheses (which may hold spaces and parentheses: the last ") " ends it). cat, not awk on
# the files: processes vanish under churn between the glob and the read, and cat goes on.
descendants() {
	cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '
		{
			pid = $1
			line = $0
			sub(/^.*\) /, "", line)
			split(line, f, " ")
			parent[pid] = f[2]
		}
		END {
			n = 1
			list[1] = root
			for (i = 1; i <= n; i++)
				for (p in parent)
					if (parent[p] == list[i])
						list[++n] = p
			for (i = 1; i <= n; i++)
				print list[i]
		}'
}

rss_kb() { awk '/^VmRSS:/ {print $2; found = 1} END {if (!found) print 0}' /proc/"$1"/status 2>/dev/null || echo 0; }
fd_count() { local n; n=$(ls /proc/"$1"/fd 2>/dev/null | wc -l) || n=0; echo "$n"; }

# --- serve -------------------------------------------------------------------------------
"$hotcold" serve -F "$hz" --listen 127.0.0.1:0 >"$out/serve.log" 2>&1 &
serve_pid=$!
url=''
for _ in $(seq 1 300); do
	url=$(grep -o 'http://[^/ ]*/' "$out/serve.log" | head -1 || true)
	[ -n "$url" ] && break
	kill -0 "$serve_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "bench/soak.sh: serve did not start:" >&2
	cat "$out/serve.log" >&2
	exit 1
fi
t_start=$(date +%s.%N)
echo "serve pid $serve_pid at $url, -F $hz, for ${duration} s (samples every ${interval} s, warm-up ${warm} s)"

# --- churn -------------------------------------------------------------------------------
# Batches of 10 short-lived processes, each exec'ing a program, paced to ~$churn a second.
(
	n=0
	batch_pause=$(awk -v c="$churn" 'BEGIN {printf "%.3f", (c > 0 ? 10 / c : 1)}')
	trap 'echo $n >"$out/churn.count"; exit 0' TERM
	while :; do
		/bin/true & /bin/ls /proc >/dev/null & sh -c ':' & awk 'BEGIN {}' &
		sleep 0.001 & /bin/true & /bin/ls / >/dev/null & sh -c 'echo $$' >/dev/null &
		cat /proc/self/stat >/dev/null & env >/dev/null &
		wait
		n=$((n + 10))
		sleep "$batch_pause"
	done
) &
churn_pid=$!
stress_note='stress-ng: not installed'
if [ "$use_stress" = 1 ] && command -v stress-ng >/dev/null; then
	stress-ng --pthread 1 --pthread-max 16 --switch 1 --timeout "$((duration + 30))s" \
		>"$out/stress-ng.log" 2>&1 &
	stress_pid=$!
	stress_note='stress-ng --pthread 1 --pthread-max 16 --switch 1'
elif [ "$use_stress" = 0 ]; then
	stress_note='stress-ng: not used (--no-stress)'
fi
echo "churn: ~$churn short-lived processes a second; $stress_note"

# --- API client --------------------------------------------------------------------------
# One request after the other; each line: seconds since start, route, HTTP status (000: no
# answer), time taken.
(
	routes=(api/status 'api/profile?from=-10s' 'api/profile?from=-5m&kind=off'
		'api/profile.folded?from=-30s' 'api/profile.pprof?from=-30s'
		'debug/pprof/profile?seconds=5' 'api/timeline?from=-10m&step=5s'
		api/histograms metrics index.html app.js)
	trap 'exit 0' TERM
	while :; do
		hist=$(curl -s --max-time 10 "${url}api/histograms" |
			grep -o '"[a-z_]*"' | sed -n '2p' | tr -d '"' || true)
		for r in "${routes[@]}" ${hist:+"api/histograms/$hist?from=-1m"}; do
			now=$(date +%s.%N)
			res=$(curl -s -o /dev/null --max-time 20 -w '%{http_code} %{time_total}' \
				"$url$r" || true)
			awk -v n="$now" -v s="$t_start" -v r="$r" -v res="$res" \
				'BEGIN {printf "%.1f %s %s\n", n - s, r, res}'
		done
	done >"$out/requests.log"
) &
poll_pid=$!

# --- samples -----------------------------------------------------------------------------
sleep 1
mapfile -t procs < <(descendants "$serve_pid")
roles=()
for p in "${procs[@]}"; do
	roles+=("$p:$(cat /proc/"$p"/comm 2>/dev/null || echo '?')")
done
echo "serve's processes: ${roles[*]}"
{
	printf 't_s\tprocs\trss_total_kb\tfds_total'
	for p in "${procs[@]}"; do printf '\trss_kb_%s\tfds_%s' "$p" "$p"; done
	printf '\n'
} >"$out/samples.tsv"
printf '%6s %5s %12s %9s' t_s procs rss_total_MB fds_total
for p in "${procs[@]}"; do printf ' %18s' "pid $p MB/fds"; done
printf '\n'

extra_procs=0
t_end=$(awk -v s="$t_start" -v d="$duration" 'BEGIN {printf "%.3f", s + d}')
while :; do
	now=$(date +%s.%N)
	awk -v n="$now" -v e="$t_end" 'BEGIN {exit !(n < e)}' || break
	t=$(awk -v n="$now" -v s="$t_start" 'BEGIN {printf "%.0f", n - s}')
	mapfile -t cur < <(descendants "$serve_pid")
	total_rss=0 total_fds=0 row=''
	for p in "${cur[@]}"; do
		total_rss=$((total_rss + $(rss_kb "$p")))
		total_fds=$((total_fds + $(fd_count "$p")))
	done
	[ "${#cur[@]}" -gt "${#procs[@]}" ] && extra_procs=$((extra_procs + 1))
	line=$(printf '%s\t%s\t%s\t%s' "$t" "${#cur[@]}" "$total_rss" "$total_fds")
	printf '%6s %5s %12.1f %9s' "$t" "${#cur[@]}" "$(awk -v k="$total_rss" 'BEGIN {print k / 1024}')" "$total_fds"
	for p in "${procs[@]}"; do
		if [ -d /proc/"$p" ]; then
			r=$(rss_kb "$p") f=$(fd_count "$p")
		else
			r=0 f=0
		fi
		line+=$(printf '\t%s\t%s' "$r" "$f")
		printf ' %18s' "$(awk -v k="$r" -v f="$f" 'BEGIN {printf "%.1f/%d", k / 1024, f}')"
	done
	printf '\n'
	echo "$line" >>"$out/samples.tsv"
	sleep "$interval"
done

# --- stop everything, serve last ---------------------------------------------------------
kill "$poll_pid" "$churn_pid" 2>/dev/null || true
[ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null || true
wait "$poll_pid" "$churn_pid" 2>/dev/null || true
[ -n "$stress_pid" ] && { wait "$stress_pid" 2>/dev/null || true; }
poll_pid='' churn_pid='' stress_pid=''
alive_at_end=1
for p in "${procs[@]}"; do
	[ -d /proc/"$p" ] || alive_at_end=0
done
kill -TERM "$serve_pid"
term_t0=$(date +%s.%N)
serve_rc=0
for _ in $(seq 1 100); do
	kill -0 "$serve_pid" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$serve_pid" 2>/dev/null; then
	serve_rc=timeout
	for p in $(descendants "$serve_pid"); do kill -KILL "$p" 2>/dev/null || true; done
	wait "$serve_pid" 2>/dev/null || true
else
	wait "$serve_pid" || serve_rc=$?
fi
term_s=$(awk -v a="$term_t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
serve_pid=''

# --- verdict -----------------------------------------------------------------------------
fail=0
verdict() { # PASS|FAIL what
	printf '%-4s %s\n' "$1" "$2"
	[ "$1" = PASS ] || fail=1
}
echo
echo "== $out"
churned=$(cat "$out/churn.count" 2>/dev/null || echo 0)
echo "churn: $churned short-lived processes started ($(awk -v n="$churned" -v d="$duration" \
	'BEGIN {printf "%.0f", n / d}') a second); $stress_note"

# requests: per route, count and statuses
awk '{ key = $2; n[key]++; st[key, $3]++; codes[$3] = 1; total++; t += $4 }
	END {
		printf "requests: %d (%.1f a second on average, %.0f ms each)\n", total,
			total / ($1 > 0 ? $1 : 1), total ? 1000 * t / total : 0
		for (k in n) {
			line = ""
			for (c in codes) if (st[k, c]) line = line sprintf(" %s x%d", c, st[k, c])
			printf "  %-34s%s\n", k, line
		}
	}' "$out/requests.log" | sort
bad=$(awk '$3 == "000" || ($3 >= 500 && !($3 == 503 && $1 < 10))' "$out/requests.log" | wc -l)
nreq=$(wc -l <"$out/requests.log")
if [ "$bad" -eq 0 ] && [ "$nreq" -gt 0 ]; then
	verdict PASS "every one of $nreq requests answered (no connection error, no 5xx after 10 s)"
else
	verdict FAIL "$bad of $nreq requests failed (status 000 or 5xx):"
	awk '$3 == "000" || ($3 >= 500 && !($3 == 503 && $1 < 10))' "$out/requests.log" | head -5
fi

# RSS and descriptors from the samples
# RSS: a least-squares line through the second half's samples (transient answer buffers make
# single samples jump by tens of MB); its rise over that half, as a share of the half's mean.
rss_trend() { # column -> "mean_kb rise_kb rise_pct"
	awk -F'\t' -v c="$1" -v d="$duration" '
		NR > 1 && $1 > d / 2 { n++; x = $1; y = $c; sx += x; sy += y; sxx += x * x; sxy += x * y }
		END {
			if (n < 3) { print "0 0 0"; exit }
			slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
			mean = sy / n
			rise = slope * d / 2
			printf "%d %d %.2f\n", mean, rise, mean ? 100 * rise / mean : 0
		}' "$out/samples.tsv"
}
read -r rss_mean rss_rise rss_rise_pct < <(rss_trend 3)
ok=$(awk -v g="$rss_rise_pct" -v m="$max_growth_pct" 'BEGIN {print (g <= m) ? 1 : 0}')
msg=$(awk -v a="$rss_mean" -v b="$rss_rise" -v g="$rss_rise_pct" -v m="$max_growth_pct" \
	'BEGIN {printf "RSS of all serve processes over the second half: mean %.1f MB, trend %+.1f MB (%+.2f %%, limit %s %%)", a / 1024, b / 1024, g, m}')
[ "$ok" = 1 ] && verdict PASS "$msg" || verdict FAIL "$msg"
col=5
for p in "${procs[@]}"; do
	read -r m r g < <(rss_trend "$col")
	awk -v p="$p" -v a="$m" -v b="$r" -v g="$g" \
		'BEGIN {printf "     RSS of pid %s over the second half: mean %.1f MB, trend %+.1f MB (%+.2f %%)\n", p, a / 1024, b / 1024, g}'
	col=$((col + 2))
done

col=5
for p in "${procs[@]}"; do
	read -r first second < <(awk -F'\t' -v c="$((col + 1))" -v w="$warm" -v d="$duration" '
		NR > 1 && $1 >= w && $1 <= d / 2 && $c > a { a = $c }
		NR > 1 && $1 > d / 2 && $c > b { b = $c }
		END { printf "%d %d\n", a, b }' "$out/samples.tsv")
	msg="descriptors of pid $p ($(printf '%s\n' "${roles[@]}" | grep "^$p:" | cut -d: -f2)): at most $first in the first half after warm-up, $second in the second (slack $fd_slack)"
	[ "$second" -le $((first + fd_slack)) ] && verdict PASS "$msg" || verdict FAIL "$msg"
	col=$((col + 2))
done

[ "$alive_at_end" = 1 ] && verdict PASS "all ${#procs[@]} processes of serve alive to the end" ||
	verdict FAIL "a process of serve ended during the run"
[ "$extra_procs" -eq 0 ] && verdict PASS "no new process appeared under serve" ||
	verdict FAIL "serve had more processes than at start in $extra_procs samples"
[ "$serve_rc" = 0 ] && verdict PASS "SIGTERM: serve exited 0 after $term_s s" ||
	verdict FAIL "SIGTERM: serve exit status $serve_rc after $term_s s"

echo
[ "$fail" = 0 ] && echo "soak: PASS" || echo "soak: FAIL"
exit "$fail"
