#!/usr/bin/env bash
# Export formats on one real capture: output size and `hotcold report` conversion time per
# format (rounds interleaved, medians), plus gzip of the JSON for scale.
#
#   bench/formats.sh [ROUNDS]     (root; uses build/hotcold; writes bench/results/formats-*.txt)
#
# The capture is 10 s at 999 Hz of a busy mix (stress-ng cpu/switch/pipe), so the tree has tens
# of thousands of nodes, like a real machine's.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
HC=${HOTCOLD:-build/hotcold}
OUT=bench/results
mkdir -p "$OUT"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; pkill -f "stress-ng --cpu 1 --switch 1" 2>/dev/null || true' EXIT

stress-ng --cpu 1 --switch 1 --pipe 1 -t 14 >/dev/null 2>&1 &
sleep 1
"$HC" record -F 999 -d 10s -o "$TMP/cap.json"
wait || true

nodes=$(python3 -c "
import json,sys
def c(n): return 1+sum(c(x) for x in n['children'])
print(c(json.load(open('$TMP/cap.json'))['flamegraph']))")

declare -A times
fmts=(json folded pprof speedscope)
for ((r = 0; r < ROUNDS; r++)); do
	# rotate the order each round so no format always runs first
	for ((i = 0; i < ${#fmts[@]}; i++)); do
		f=${fmts[$(((i + r) % ${#fmts[@]}))]}
		t0=$(date +%s%N)
		"$HC" report --format "$f" -o "$TMP/out.$f" "$TMP/cap.json"
		t1=$(date +%s%N)
		times[$f]+="$(((t1 - t0) / 1000000)) "
	done
done
gzip -k -6 "$TMP/cap.json"

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
stamp=$(date -u +%Y%m%dT%H%M%SZ)
{
	echo "capture: 10 s at 999 Hz, busy mix; tree nodes: $nodes; rounds: $ROUNDS"
	printf '%-12s %12s %14s\n' format bytes "report ms (median)"
	for f in "${fmts[@]}"; do
		printf '%-12s %12d %14s\n' "$f" "$(stat -c %s "$TMP/out.$f")" \
			"$(echo "${times[$f]}" | median)"
	done
	printf '%-12s %12d %14s\n' "json.gz" "$(stat -c %s "$TMP/cap.json.gz")" "-"
} | tee "$OUT/formats-$stamp.txt"
