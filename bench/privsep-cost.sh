#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/privsep-cost.sh: what a change to serve costs, this tree against another revision,
# side by side. Made for the privilege split (docs/security.md): `hotcold serve -F 999` of
# REV and of this build run in turn (interleaved, the order swapped every round) under the
# busy mix of bench/serve.sh (stress-ng: a CPU hog, context switches, pipes; /bin/ls ten
# times a second), each for W s of warm-up then T s measured. Per run: CPU (utime + stime
# of every process of serve, and per process) as a share of one core, RSS summed (which
# counts pages shared copy-on-write after fork() once per process) and PSS summed (each
# shared page split between its sharers: the memory really used). Medians over rounds.
#
# Usage: bench/privsep-cost.sh [--rounds N] [--seconds T] [--warm W] REV     (as root)
# REV is built in a scratch worktree (build-REV/ under it); this tree's build/ must be built.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=3 seconds=30 warm=8
while [ $# -gt 1 ]; do
	case "$1" in
	--rounds) rounds=$2; shift ;;
	--seconds) seconds=$2; shift ;;
	--warm) warm=$2; shift ;;
	*) echo "unknown option $1" >&2; exit 64 ;;
	esac
	shift
done
[ $# -eq 1 ] || { echo "usage: $0 [--rounds N] [--seconds T] [--warm W] REV" >&2; exit 64; }
[ "$(id -u)" = 0 ] || { echo "$0: run as root (BPF)" >&2; exit 77; }
command -v stress-ng >/dev/null || { echo "$0: needs stress-ng" >&2; exit 69; }
rev=$(git rev-parse --short "$1")
new=$PWD/build/hotcold
[ -x "$new" ] || { echo "$0: build this tree first (build/hotcold)" >&2; exit 69; }
wt=$(mktemp -d /tmp/hc-privsep-cost.XXXXXX)
stress_pid= loop_pid=
cleanup() {
	[ -n "$stress_pid" ] && kill "$stress_pid" 2>/dev/null
	[ -n "$loop_pid" ] && kill "$loop_pid" 2>/dev/null
	wait 2>/dev/null || true
	git worktree remove --force "$wt" 2>/dev/null || rm -rf "$wt"
}
trap cleanup EXIT
git worktree add -q --detach "$wt" "$rev"
(cd "$wt" && meson setup build >/dev/null && meson compile -C build hotcold >/dev/null)
old=$wt/build/hotcold
hz=$(getconf CLK_TCK)

ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
mem() { # pid -> "rss_kb pss_kb"
	echo "$(awk '/^VmRSS/ {print $2}' "/proc/$1/status") $(awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup")"
}

# run BINARY LABEL -> one line: LABEL cpu% rss_mb pss_mb per-process-cpu%...
run() {
	local bin=$1 label=$2 pid kids p t0=() t1=() rss=0 pss=0 r s per="" total=0 i=0
	"$bin" serve -F 999 --listen 127.0.0.1:0 2>/dev/null &
	pid=$!
	sleep "$warm"
	kids=$(cat "/proc/$pid/task/$pid/children")
	for p in $pid $kids; do t0+=("$(ticks "$p")"); done
	sleep "$seconds"
	for p in $pid $kids; do
		t1+=("$(ticks "$p")")
		read -r r s < <(mem "$p")
		rss=$((rss + r)) pss=$((pss + s))
	done
	kill -TERM "$pid"
	wait "$pid" || true
	for p in $pid $kids; do
		local d=$((t1[i] - t0[i]))
		total=$((total + d))
		per="$per $(awk -v d="$d" -v hz="$hz" -v t="$seconds" 'BEGIN { printf "%.2f", 100 * d / hz / t }')"
		i=$((i + 1))
	done
	awk -v l="$label" -v d="$total" -v hz="$hz" -v t="$seconds" -v r="$rss" -v s="$pss" -v per="$per" \
		'BEGIN { printf "%s %.2f %.1f %.1f%s\n", l, 100 * d / hz / t, r / 1024, s / 1024, per }'
}

stress-ng --cpu 1 --switch 1 --pipe 1 -q >/dev/null 2>&1 &
stress_pid=$!
(while :; do /bin/ls >/dev/null; sleep 0.1; done) &
loop_pid=$!
out=$(mktemp)
for ((r = 1; r <= rounds; r++)); do
	if ((r % 2)); then
		run "$old" "$rev" | tee -a "$out"
		run "$new" this | tee -a "$out"
	else
		run "$new" this | tee -a "$out"
		run "$old" "$rev" | tee -a "$out"
	fi
done
echo
echo "serve -F 999, busy mix, $rounds rounds of ${seconds} s, medians (per process: main first, then children in fork order)"
echo
echo "| build | CPU (% of one core) | RSS sum (MB) | PSS sum (MB) |"
echo "|---|---|---|---|"
for l in "$rev" this; do
	awk -v l="$l" '$1 == l { c[n] = $2; r[n] = $3; p[n] = $4; n++ }
		function med(a, n,   i, j, t) { for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t } return a[int(n / 2)] }
		END { printf "| %s | %.2f | %.1f | %.1f |\n", l, med(c, n), med(r, n), med(p, n) }' "$out"
done
rm -f "$out"
