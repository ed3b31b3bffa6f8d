# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/lib.sh: what the benchmark scripts share (sourced by bench/run.sh, bench/locks.sh,
# bench/pg.sh, bench/pg-unwind.sh, bench/scale-unwind.sh, bench/serve-store.sh and
# bench/store-week.sh).
# The caller defines note() and die() (its own name in front) and INSTALL (0: --no-install).

# Sourced once: bench/serve-store.sh sources it and bench/pg.sh, which sources it too.
[ -n "${BENCH_LIB_SOURCED:-}" ] && return 0
BENCH_LIB_SOURCED=1

# Install the commands missing among "cmd:package" pairs from Debian, unless --no-install.
install_missing() {
	local missing=() cmd pkg pair
	for pair in "$@"; do
		cmd=${pair%%:*} pkg=${pair#*:}
		command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$INSTALL" -eq 1 ] || die "missing: ${missing[*]} (and --no-install given)"
	note "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null || die "apt-get update failed"
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
		die "apt-get install ${missing[*]} failed"
}

ppid_of() {
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) }
	st=${st#* }
	echo "${st%% *}"
}

# Whether a process exists and is not a zombie (builtins only: it is polled every 10 ms).
alive() {
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# The (only) child of a process, e.g. the profiler under /usr/bin/time.
child_of() {
	local i c
	for i in $(seq 1 500); do
		c=$(cat "/proc/$1/task/$1/children" 2>/dev/null | awk '{ print $1 }')
		[ -n "$c" ] && { echo "$c"; return 0; }
		alive "$1" || return 1
		sleep 0.01
	done
	return 1
}

# Wait for our background pid $1, at most $2 s, then SIGKILL it and its child $3 (the profiler
# under /usr/bin/time: killing only time would leave the profiler running). Sets WAIT_RC.
# (Not usable in $(...): a subshell cannot wait for its parent's children.)
wait_bounded() {
	local pid=$1 limit=$2 child=${3:-} i
	for ((i = 0; i < limit * 100; i++)); do
		alive "$pid" || break
		sleep 0.01
	done
	if alive "$pid"; then
		note "pid $pid${child:+ (profiler $child)} still running after ${limit}s: killing it"
		[ -n "$child" ] && kill -KILL "$child" 2>/dev/null
		kill -KILL "$pid" 2>/dev/null
	fi
	wait "$pid"
	WAIT_RC=$? # read by the caller
	: "$WAIT_RC"
}

sysfs_or() { cat "$1" 2>/dev/null || echo "$2"; }

# tree_ticks PID: CPU ticks (user + system, 1/100 s) of PID and all its descendants (hotcold's
# worker and HTTP server are forks of it; under /usr/bin/time it is a child itself), from /proc
# alone (the lent machine has no procps).
tree_ticks() {
	local f line rest pid t=0 grew=1
	local -A ppid ticks in=(["$1"]=1)
	for f in /proc/[0-9]*/stat; do
		read -r line <"$f" 2>/dev/null || continue
		rest=${line##*) }
		# shellcheck disable=SC2086 # the fields after comm, a word each
		set -- $rest
		pid=${f//[^0-9]/}
		ppid[$pid]=$2
		ticks[$pid]=$((${12} + ${13}))
	done
	while ((grew)); do
		grew=0
		for pid in "${!ppid[@]}"; do
			if [ -z "${in[$pid]:-}" ] && [ -n "${in[${ppid[$pid]}]:-}" ]; then
				in[$pid]=1
				grew=1
			fi
		done
	done
	for pid in "${!in[@]}"; do
		t=$((t + ${ticks[$pid]:-0}))
	done
	echo "$t"
}

# Cleanup that must happen however the script ends (exit, error, ^C, SIGTERM): at_exit CMD
# queues CMD (a string for eval); queued commands run once, newest first. The script's own
# EXIT/INT/TERM traps would replace these: scripts using at_exit set no other.
AT_EXIT=()
run_at_exit() {
	local i
	for ((i = ${#AT_EXIT[@]} - 1; i >= 0; i--)); do
		eval "${AT_EXIT[i]}" || true
	done
	AT_EXIT=()
}
at_exit() {
	AT_EXIT+=("$*")
	trap run_at_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# --help: the script's header comment (after the shebang, SPDX and empty comment lines).
print_header() { awk 'NR > 3 && /^#/ { sub(/^# ?/, ""); print; next } NR > 3 { exit }' "$0"; }
