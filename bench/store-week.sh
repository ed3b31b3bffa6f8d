#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/store-week.sh: range queries on a week of history (issue 20: `/api/profile`, pruned to
# 20k nodes, <= 150 ms for 1 h, <= 1 s for 24 h, <= 2 s for 7 d).
#
# 1. Generate: a copy of a real captured data dir (--from DIR: the DIR a `hotcold serve
#    --data-dir DIR` run wrote, e.g. bench/serve-store.sh --keep-data with --seconds 3600)
#    becomes a week with SQL alone (sqlite3 CLI): the capture is shifted to end now, then
#    each tier's bucket rows are copied with `t` shifted back by the capture's length, as
#    many times as the tier's horizon needs (tier 0, 1 s: 1 h; tier 1, 10 s: 24 h; tier 2,
#    1 min: --days); rows past a horizon (counted from the capture's shifted end) are deleted.
#    Blobs name only dictionary ids, so the copies are valid history (docs/store.md). Shifts are
#    whole minutes: every tier's windows stay aligned. Tier 3 (1 h) is left empty: serve builds
#    one row per hour from the minutes when it opens the copy, as it builds its own history. It prints each tier's bytes for the captured hour and the week they
#    project to (the "a week within 1 GiB" arithmetic), and the generated file's size.
# 2. Query: `hotcold serve --data-dir COPY --retention <days>d` on it; then /api/profile for
#    the last 1 h, 24 h and 7 d (fixed absolute ranges ending 5 s before the first request),
#    --reps times each (curl %{time_total}, median), with the answer's size, node count and
#    its range's tier/source/resolution.
#
# Usage: bench/store-week.sh --from DIR [--days 7] [--hotcold PATH] [--reps 5] [--out DIR]
#                            [--keep] [--generate-only] [--no-install]           (as root)
#        bench/store-week.sh --selftest   (the generator on a hand-made DB with the schema)
# Results: bench/results/store-week-<UTC stamp>/ (summary.md, queries.csv, serve.log).
set -uo pipefail
export LC_ALL=C

note() { echo "bench/store-week.sh: $*" >&2; }
die() {
	note "$*"
	exit 1
}

BENCH_DIR=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$BENCH_DIR/.." && pwd)
# shellcheck source=bench/lib.sh
. "$BENCH_DIR/lib.sh"

HOTCOLD="$REPO/build/hotcold"
FROM=""
DAYS=7
REPS=5
OUT=""
KEEP=0
GENERATE_ONLY=0
SELFTEST=0
INSTALL=1
TIER_RES_S=(1 10 60)      # tier 0, 1, 2 (the contract's tiers)
TIER_HORIZON_S=(3600 86400) # tier 2's is --days

while [ $# -gt 0 ]; do
	case "$1" in
	--from) FROM=$2; shift 2 ;;
	--days) DAYS=$2; shift 2 ;;
	--hotcold) HOTCOLD=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--generate-only) GENERATE_ONLY=1; shift ;;
	--selftest) SELFTEST=1; shift ;;
	--no-install) INSTALL=0; shift ;;
	-h | --help) print_header; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
done
install_missing sqlite3:sqlite3 curl:curl jq:jq
TIER_HORIZON_S+=($((DAYS * 86400)))

sql() { sqlite3 -batch -bail "$DB" "$@"; }

# Units of `t` per second, from its magnitude (the contract does not fix it: seconds today).
t_per_s() {
	local max
	max=$(sql "SELECT coalesce(max(abs(t)), 0) FROM bucket")
	if [ "$max" -gt 100000000000000000 ]; then echo 1000000000
	elif [ "$max" -gt 100000000000000 ]; then echo 1000000
	elif [ "$max" -gt 100000000000 ]; then echo 1000
	else echo 1
	fi
}

# Bytes of each tier's rows (blob and figures) in the DB: "tier rows bytes" lines.
tier_bytes() {
	sql "SELECT tier, count(*), sum(length(data)) + 8 * 9 * count(*) FROM bucket GROUP BY tier ORDER BY tier"
}

# The capture's per-tier size and what a week of it takes (horizon / capture length copies).
project() {
	local len_s=$1
	echo "Bytes: blobs + 72 per row (the row's nine integers); the file adds the index and page slack"
	echo "(compare the generated file's size)."
	echo
	echo "| tier | resolution | horizon | rows captured | bytes captured | copies in the week | bytes in the week |"
	echo "|---|---|---|---|---|---|---|"
	tier_bytes | awk -F'|' -v len="$len_s" -v h0="${TIER_HORIZON_S[0]}" -v h1="${TIER_HORIZON_S[1]}" \
		-v h2="${TIER_HORIZON_S[2]}" '
	BEGIN { h[0] = h0; h[1] = h1; h[2] = h2; r[0] = "1 s"; r[1] = "10 s"; r[2] = "1 min" }
	{
		c = h[$1] / len; wb = $3 * c; total += wb
		printf "| %d | %s | %d s | %d | %d | %.1f | %.0f (%.1f MiB) |\n", $1, r[$1], h[$1], $2, $3, c, wb, wb / 1048576
	}
	END { printf "| all | | | | | | %.0f (%.1f MiB; limit 1 GiB) |\n", total, total / 1048576 }'
}

# Turn the capture in $DB into DAYS of history ending now.
week_generate() {
	local u lo hi len_u p_u now_u delta cols sel tier h copies
	u=$(t_per_s)
	read -r lo hi <<<"$(sql -separator ' ' "SELECT min(t), max(t + span) FROM bucket WHERE tier < 3")"
	[ -n "$lo" ] || die "$DB has no bucket rows"
	len_u=$((hi - lo))
	# shellcheck disable=SC2017 # rounding to whole minutes is the point
	p_u=$(((len_u + 60 * u - 1) / (60 * u) * 60 * u)) # whole minutes, rounded up: no overlap
	now_u=$(($(date +%s) * u))
	# shellcheck disable=SC2017
	delta=$(((now_u - hi) / (60 * u) * 60 * u))
	note "capture: $((len_u / u)) s (t in 1/$u s), copied every $((p_u / u)) s; shifted by $((delta / u)) s to end now"
	project $((p_u / u)) >"$WORK_NOTES"
	# Every column, t shifted: no assumption on what the store adds beyond the contract.
	cols=$(sql "SELECT group_concat(name, ',') FROM pragma_table_info('bucket')")
	sel=$(echo "$cols" | tr , '\n' | awk '{ print ($1 == "t") ? "b.t - k.n * '"$p_u"'" : "b." $1 }' | paste -sd,)
	sql "UPDATE bucket SET t = t + $delta" || die "shift failed"
	for tier in 0 1 2; do
		h=$((TIER_HORIZON_S[tier] * u))
		copies=$(((h + p_u - 1) / p_u - 1))
		[ "$copies" -gt 0 ] || continue
		sql "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < $copies)
		     INSERT INTO bucket($cols) SELECT $sel FROM bucket AS b, k WHERE b.tier = $tier;" ||
			die "copying tier $tier failed"
		sql "DELETE FROM bucket WHERE tier = $tier AND t + span <= $((hi + delta - h))" ||
			die "trimming tier $tier failed"
	done
	# Tier 3 (1 h windows over the retention, what long ranges read) is left to serve: it
	# builds each hour from the tier below, one row per window, as it does for its own history
	# (docs/store.md, "Tiers are rollups"). The timing below waits for those builds.
	sql "DELETE FROM bucket WHERE tier = 3;" || die "clearing tier 3 failed"
	sql "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
	sql "SELECT 'generated: tier ' || tier || ': ' || count(*) || ' rows, ' ||
	     ((max(t + span) - min(t)) / $u) || ' s, ' || sum(length(data)) || ' blob bytes'
	     FROM bucket GROUP BY tier ORDER BY tier" | while read -r l; do note "$l"; done
	note "file: $(du -sb "$(dirname "$DB")" | cut -f1) bytes in $(dirname "$DB")"
}

selftest() {
	local dir rows
	dir=$(mktemp -d) || die "mktemp failed"
	at_exit "rm -rf '$dir'"
	DB=$dir/hotcold.db
	WORK_NOTES=$dir/notes.md
	# The contract's schema; an hour ending 5 min ago, t in seconds, each tier's windows.
	sql "CREATE TABLE meta(key TEXT PRIMARY KEY, value);
	     CREATE TABLE frame(id INTEGER PRIMARY KEY, kind INTEGER, name TEXT, module TEXT,
	                        fid INTEGER, offset INTEGER, inlined INTEGER);
	     CREATE TABLE task(id INTEGER PRIMARY KEY, pid INTEGER, tid INTEGER, process TEXT, thread TEXT);
	     CREATE TABLE stack_chunk(last INTEGER PRIMARY KEY, n INTEGER, data BLOB);
	     CREATE TABLE bucket(store INTEGER, tier INTEGER, t INTEGER, span INTEGER, on_cpu_ns INTEGER,
	                         off_cpu_ns INTEGER, runqueue_ns INTEGER, samples INTEGER, entries INTEGER,
	                         data BLOB);
	     CREATE INDEX bucket_at ON bucket(tier, t);
	     PRAGMA journal_mode = WAL;" >/dev/null || die "schema failed"
	local end=$((($(date +%s) - 300) / 60 * 60)) tier res
	for tier in 0 1 2; do
		res=${TIER_RES_S[tier]}
		sql "WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 3600 / $res - 1)
		     INSERT INTO bucket SELECT 0, $tier, $((end - 3600)) + n * $res, $res, 1000, 2000, 30,
		                               4, 5, randomblob(100) FROM k;" || die "fill failed"
	done
	# an hour of tier 3, as a file serve closed holds: the generator clears it
	sql "INSERT INTO bucket VALUES (0, 3, $((end - 3600)), 3600, 1000, 2000, 30, 4, 5, randomblob(100))" ||
		die "fill failed"
	week_generate
	cat "$WORK_NOTES" >&2
	# Each tier: its horizon covered once, at its resolution, no duplicate window, ending now.
	for tier in 0 1 2; do
		res=${TIER_RES_S[tier]}
		rows=$(sql "SELECT count(*), count(DISTINCT t), (max(t + span) - min(t)),
		                   sum(t % $res != 0), $(date +%s) - max(t + span) < 400
		            FROM bucket WHERE tier = $tier")
		local want_s=${TIER_HORIZON_S[tier]} want_n
		want_n=$((want_s / res))
		[ "$rows" = "$want_n|$want_n|$want_s|0|1" ] ||
			die "selftest: tier $tier: rows|distinct|span|misaligned|recent = $rows, wanted $want_n|$want_n|$want_s|0|1"
		note "selftest: tier $tier: $want_n rows, $want_s s, aligned, ends now: ok"
	done
	rows=$(sql "SELECT count(*) FROM bucket WHERE tier = 3")
	[ "$rows" = 0 ] || die "selftest: tier 3 holds $rows rows, wanted none (serve builds it)"
	note "selftest: ok"
}

if [ "$SELFTEST" -eq 1 ]; then
	selftest
	exit 0
fi

[ "$(id -u)" = 0 ] || die "run as root"
[ -n "$FROM" ] || die "--from DIR (a data dir a serve run wrote) is required"
[ -f "$FROM/hotcold.db" ] || die "no $FROM/hotcold.db"
OUT=${OUT:-$BENCH_DIR/results/store-week-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" || die "cannot create $OUT"

PARENT=$(mktemp -d /var/tmp/hotcold-week.XXXXXX) || die "mktemp failed"
chmod 755 "$PARENT" # serve's --user reaches the data dir through it
# shellcheck disable=SC2016 # expanded when it runs
[ "$KEEP" -eq 1 ] || at_exit 'rm -rf "$PARENT"'
cp -a "$FROM" "$PARENT/data" || die "copying $FROM failed"
DB=$PARENT/data/hotcold.db
WORK_NOTES=$OUT/projection.md
week_generate
# sqlite3 ran as root: its files go back to the data dir's owner (serve's --user).
chown -R --reference="$FROM" "$PARENT/data"
if [ "$GENERATE_ONLY" -eq 1 ]; then
	cat "$WORK_NOTES"
	note "generated: $PARENT/data"
	[ "$KEEP" -eq 1 ] || note "(removed at exit: --keep keeps it)"
	exit 0
fi
[ -x "$HOTCOLD" ] || die "no hotcold binary at $HOTCOLD (meson compile -C build)"
"$HOTCOLD" serve --help 2>&1 | grep -q -- '--data-dir' ||
	die "$HOTCOLD serve --help does not mention --data-dir: a build without the disk store"

SERVE_PID=""
stop_serve() {
	[ -n "$SERVE_PID" ] || return 0
	kill -INT "$SERVE_PID" 2>/dev/null
	wait_bounded "$SERVE_PID" 10
	SERVE_PID=""
}
at_exit stop_serve
"$HOTCOLD" serve --listen 127.0.0.1:0 --data-dir "$PARENT/data" --retention "${DAYS}d" \
	</dev/null 2>"$OUT/serve.log" &
SERVE_PID=$!
ADDR=""
for ((i = 0; i < 1200; i++)); do
	ADDR=$(sed -n 's|.*serving http://\([^/]*\)/.*|\1|p' "$OUT/serve.log")
	[ -n "$ADDR" ] && break
	alive "$SERVE_PID" || die "serve exited: $(tail -3 "$OUT/serve.log")"
	sleep 0.05
done
[ -n "$ADDR" ] || die "serve did not start in 60 s: $(tail -3 "$OUT/serve.log")"
# The writer builds the generated week's hours (tier 3) over its first rounds (250 ms of
# building a round): the queries are timed once tier 3 holds the whole retention. (Serve's
# own seconds go on being built meanwhile: the build count never stands still.)
last=0
for ((i = 0; i < 180; i++)); do
	last=$(curl -s "http://$ADDR/api/status" | jq '.store.disk.tiers["1h"].seconds // 0')
	[ "$last" -ge $((DAYS * 86400)) ] && break
	sleep 10
done
note "tier 3 holds $last s before timing"
curl -s "http://$ADDR/api/status" >"$OUT/status.json"

median() { sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

to_ms=$((($(date +%s) - 5) * 1000))
echo "range,rep,seconds,bytes,http" >"$OUT/queries.csv"
{
	echo "# /api/profile on a generated ${DAYS}-day store ($REPS requests each, median)"
	echo
	echo "| range | median ms | min ms | max ms | bytes | nodes | tier | source | resolution_s | nodes before pruning | covered |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	for range in 1h:3600 24h:86400 7d:604800; do
		name=${range%%:*} secs=${range#*:}
		[ "$secs" -le $((DAYS * 86400)) ] || continue
		from_ms=$((to_ms - secs * 1000))
		url="http://$ADDR/api/profile?from=$from_ms&to=$to_ms"
		for ((k = 1; k <= REPS; k++)); do
			curl -s -o "$OUT/q-$name.json" -w "$name,$k,%{time_total},%{size_download},%{http_code}\n" \
				"$url" >>"$OUT/queries.csv"
		done
		times=$(awk -F, -v n="$name" '$1 == n { print $3 * 1000 }' "$OUT/queries.csv")
		nodes=$(grep -o '"kind":' "$OUT/q-$name.json" | wc -l)
		# --stream: the flame graph nests deeper than jq's parser allows a document to.
		info=$(jq -rn --stream '
			reduce (inputs | select(length == 2 and .[0][0] == "range")) as $e
				({}; .[$e[0][1:] | map(tostring) | join(".")] = $e[1])
			| "\(.tier // "?") | \(.source // "?") | \(.resolution_s // "?") | \(.["pruned.nodes"] // "?") | \(.from // "?") .. \(.to // "?")"' \
			"$OUT/q-$name.json" 2>/dev/null || echo "? | ? | ? | ? | ?")
		printf '| %s | %.0f | %.0f | %.0f | %s | %s | %s |\n' "$name" \
			"$(echo "$times" | median)" "$(echo "$times" | sort -n | head -1)" \
			"$(echo "$times" | sort -n | tail -1)" "$(stat -c %s "$OUT/q-$name.json")" \
			"$nodes" "$info"
	done
	echo
	echo "What a week of the captured load takes (each tier's bytes in the capture x the copies its horizon needs):"
	echo
	cat "$WORK_NOTES"
	echo
	echo "Store: $(jq -c '.store.disk // .store' "$OUT/status.json")"
	echo "Machine: $(nproc) CPUs, $(uname -r), $(date -u +%Y-%m-%d); capture $FROM; hotcold $HOTCOLD."
} | tee "$OUT/summary.md"
note "results: $OUT"
