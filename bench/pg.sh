#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/pg.sh: a throwaway PostgreSQL under pgbench, the database load of bench/serve-store.sh
# (issue 20's "Speed and size" figures are measured on it).
#
# Sourced (after the caller's note(), die() and INSTALL; defaults below), it defines:
#   pg_install        Debian's postgresql (brings pgbench) if initdb/pgbench are missing
#   pg_start          a fresh cluster in a temp dir: initdb as user postgres, started on its own
#                     port with its unix socket in that dir and no TCP listener (so it never
#                     meets the system's cluster), fsync off; then pgbench -i -s PG_SCALE.
#                     pg_stop is queued to run at exit (at_exit, bench/lib.sh), however the
#                     script ends
#   pg_load SECONDS   pgbench -S -c PG_CLIENTS -j PG_THREADS -T SECONDS (read-only: select by
#                     primary key, the busiest OLTP shape: a switch per query and client);
#                     sets PG_TPS and PG_CTXT_PER_S (context switches per second of the whole
#                     machine while pgbench ran, from /proc/stat ctxt) and prints both
#   pg_stop           stop the server (immediate shutdown) and remove the temp dir; idempotent
# Run, it starts a cluster, runs one load, prints the figures and cleans up.
#
# Usage: bench/pg.sh [--seconds T] [--scale S] [--clients C] [--threads J] [--no-install]
#                                                                                  (as root)
# Defaults: 30 s, scale 10 (1M accounts, ~160 MB), 8 clients, 2 threads.

BENCH_DIR=${BENCH_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}
# shellcheck source=bench/lib.sh
. "$BENCH_DIR/lib.sh"
declare -F note >/dev/null || note() { echo "bench/pg.sh: $*" >&2; }
declare -F die >/dev/null || die() {
	echo "bench/pg.sh: $*" >&2
	exit 1
}
INSTALL=${INSTALL:-1}
PG_SCALE=${PG_SCALE:-10}
PG_CLIENTS=${PG_CLIENTS:-8}
PG_THREADS=${PG_THREADS:-2}
PG_PORT=${PG_PORT:-54329} # only names the socket file: there is no TCP listener
PG_DIR=""
PG_BIN=""
PG_LOAD_PID=""
PG_TPS=""
PG_CTXT_PER_S=""

pg_find_bin() {
	PG_BIN=$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -1)
	[ -n "$PG_BIN" ] && [ -x "$PG_BIN/initdb" ] && [ -x "$PG_BIN/pgbench" ]
}

pg_install() {
	pg_find_bin && return 0
	[ "$INSTALL" -eq 1 ] || die "postgresql is missing (and --no-install given)"
	note "installing postgresql"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null || die "apt-get update failed"
	apt-get install -y -q postgresql >/dev/null || die "apt-get install postgresql failed"
	pg_find_bin || die "no initdb/pgbench under /usr/lib/postgresql/*/bin after installing"
}

pg_as_postgres() { runuser -u postgres -- "$@"; }

pg_stop() {
	[ -n "$PG_LOAD_PID" ] && kill -TERM "$PG_LOAD_PID" 2>/dev/null
	PG_LOAD_PID=""
	[ -n "$PG_DIR" ] || return 0
	if [ -f "$PG_DIR/data/postmaster.pid" ]; then
		pg_as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w -t 20 stop \
			>/dev/null 2>&1 || note "pg_ctl stop failed (log: $PG_DIR/server.log)"
	fi
	rm -rf "$PG_DIR"
	PG_DIR=""
}

pg_start() {
	local opts
	pg_install
	id postgres >/dev/null 2>&1 || die "no user postgres (the postgresql package makes it)"
	PG_DIR=$(mktemp -d /tmp/hotcold-pg.XXXXXX) || die "mktemp failed"
	at_exit pg_stop
	chown postgres: "$PG_DIR"
	pg_as_postgres "$PG_BIN/initdb" -D "$PG_DIR/data" -A trust -U postgres --no-sync \
		>"$PG_DIR/initdb.log" 2>&1 || die "initdb failed: $(tail -3 "$PG_DIR/initdb.log")"
	opts="-p $PG_PORT -k $PG_DIR -c listen_addresses='' -c fsync=off"
	opts+=" -c synchronous_commit=off -c full_page_writes=off -c max_connections=50"
	pg_as_postgres "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -o "$opts" \
		-w -t 60 start >/dev/null || die "postgres did not start: $(tail -3 "$PG_DIR/server.log")"
	note "postgres up (socket $PG_DIR/.s.PGSQL.$PG_PORT); pgbench -i -s $PG_SCALE"
	pg_bench -i -q -s "$PG_SCALE" >"$PG_DIR/init.log" 2>&1 ||
		die "pgbench -i failed: $(tail -3 "$PG_DIR/init.log")"
}

pg_bench() { "$PG_BIN/pgbench" -h "$PG_DIR" -p "$PG_PORT" -U postgres "$@" postgres; }

ctxt_now() { awk '$1 == "ctxt" { print $2 }' /proc/stat; }

pg_load() {
	local secs=$1 log c0 c1 t0 t1
	[ -n "$PG_DIR" ] || die "pg_load before pg_start"
	log="$PG_DIR/load.log"
	c0=$(ctxt_now)
	t0=$(date +%s%N)
	# In the background and waited for: a signal to the script interrupts `wait` at once
	# (a foreground child would hold the trap back until pgbench's -T ran out).
	pg_bench -n -S -c "$PG_CLIENTS" -j "$PG_THREADS" -T "$secs" >"$log" 2>&1 &
	PG_LOAD_PID=$!
	if ! wait "$PG_LOAD_PID"; then
		PG_LOAD_PID=""
		note "pgbench failed: $(tail -3 "$log")"
		return 1
	fi
	PG_LOAD_PID=""
	t1=$(date +%s%N)
	c1=$(ctxt_now)
	PG_TPS=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' "$log" | head -1)
	PG_CTXT_PER_S=$(awk -v c=$((c1 - c0)) -v ns=$((t1 - t0)) 'BEGIN { printf "%.0f", c / (ns / 1e9) }')
	[ -n "$PG_TPS" ] || { note "no tps in pgbench's output: $(tail -3 "$log")"; return 1; }
	echo "tps $PG_TPS ctxt_per_s $PG_CTXT_PER_S"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -uo pipefail
	export LC_ALL=C
	secs=30
	while [ $# -gt 0 ]; do
		case "$1" in
		--seconds) secs=$2; shift 2 ;;
		--scale) PG_SCALE=$2; shift 2 ;;
		--clients) PG_CLIENTS=$2; shift 2 ;;
		--threads) PG_THREADS=$2; shift 2 ;;
		--no-install) INSTALL=0; shift ;;
		-h | --help) print_header; exit 0 ;;
		*) die "unknown option $1" ;;
		esac
	done
	[ "$(id -u)" = 0 ] || die "run as root"
	pg_start
	note "pgbench -S -c $PG_CLIENTS -j $PG_THREADS -T $secs"
	pg_load "$secs" || exit 1
fi
