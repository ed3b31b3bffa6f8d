#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# contrib/systemd against systemd and against hotcold itself.
#
#   test_units.sh verify   (no root) systemd-analyze verify accepts the three units (with
#       ExecStart= pointing at this build and Documentation=man:hotcold(8) resolved to
#       docs/hotcold.8); systemd-analyze security --offline rates each service at or below
#       its exposure bound; the timer's calendar and delay keep one capture an hour; the
#       record service writes a strftime-named file into its StateDirectory=.
#   test_units.sh bpf      (root, BPF) each service's ExecStart=, run with exactly the
#       capabilities and the parts of the sandbox the unit grants (lib.sh: sandbox_prepare),
#       works: record writes a profile with samples, named kernel frames and named frames
#       of three workloads only those capabilities reach (another user's binary in a 0700
#       directory, one in a private mount namespace, a deleted one) and of a JIT (node, its
#       /tmp/perf-PID.map: what PrivateTmp=yes would hide); serve answers its API
#       and its HTTP server and collector worker run as --user with nothing but a seccomp
#       filter; every system call and socket family either makes (strace) passes
#       SystemCallFilter= and RestrictAddressFamilies=.
#       And the same record without CAP_SYSLOG, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH and
#       CAP_CHECKPOINT_RESTORE must fail the profile check: the check can fail.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

units=$HC_SRC/contrib/systemd
record=$units/hotcold-record.service
serve=$units/hotcold-serve.service
timer=$units/hotcold-record.timer
# Exposure scores (0 best, 10 worst) measured for these units with systemd 252: 2.2 and 3.3.
# A change that weakens the sandbox past these bounds fails here.
record_bound=2.5
serve_bound=3.6

for u in "$record" "$serve" "$timer"; do
	[ -r "$u" ] || fail "no $u"
done
mode=${1:-verify}
t=$(mktemp -d "$HC_TESTDIR/units.XXXXXX")
# The workloads' files, where user nobody can reach them whatever the build directory's
# parents allow.
w=$(mktemp -d /tmp/hc-contrib.XXXXXX)
chmod 755 "$w"
pids=()
JIT_PID=
cleanup() {
	for p in "${pids[@]}"; do
		kill -KILL "$p" 2>/dev/null
	done
	wait 2>/dev/null
	[ -n "$JIT_PID" ] && rm -f "/tmp/perf-$JIT_PID.map"
	rm -rf "$t" "$w"
}
trap cleanup EXIT

# load_argv UNIT: ARGV is the ExecStart= words of UNIT, the program replaced by this build's
# hotcold. (A global, not a subshell's output: a failure here must end the test.)
load_argv() {
	local out
	out=$(unit_exec "$1") || exit 1
	mapfile -t ARGV <<<"$out"
	[ ${#ARGV[@]} -ge 2 ] || fail "$1: ExecStart= has no command"
	case "${ARGV[0]}" in
	/*/hotcold) ;;
	*) fail "$1: ExecStart= does not run an absolute .../hotcold: ${ARGV[0]}" ;;
	esac
	ARGV[0]=$HOTCOLD
}

# arg_after NAME: the word after NAME in ARGV (empty if none).
arg_after() {
	local i
	for ((i = 1; i < ${#ARGV[@]} - 1; i++)); do
		[ "${ARGV[$i]}" = "$1" ] && { printf '%s\n' "${ARGV[$((i + 1))]}"; return; }
	done
}

# load_caps UNIT: CAPS is what the unit's process is left with (lib.sh: unit_caps).
load_caps() {
	CAPS=$(unit_caps "$1") || exit $?
}

verify() {
	local u s score bound cal delay sd out
	need_tool systemd-analyze systemd
	mkdir -p "$t/man/man8"
	cp "$HC_SRC/docs/hotcold.8" "$t/man/man8/"
	for u in "$record" "$serve" "$timer"; do
		sed "s|^ExecStart=/[^ ]*/hotcold |ExecStart=$HOTCOLD |" "$u" >"$t/$(basename "$u")"
	done
	out=$(cd "$t" && MANPATH=$t/man SYSTEMD_LOG_LEVEL=notice systemd-analyze verify \
		./hotcold-record.service ./hotcold-record.timer ./hotcold-serve.service 2>&1)
	[ $? -eq 0 ] && [ -z "$out" ] || fail "systemd-analyze verify:"$'\n'"$out"
	echo "systemd-analyze verify: the three units are clean"

	for s in record serve; do
		u=$t/hotcold-$s.service
		bound=${s}_bound
		out=$(systemd-analyze security --offline=yes "$u" 2>&1) ||
			fail "systemd-analyze security $u:"$'\n'"$out"
		score=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
		[ -n "$score" ] || fail "no exposure score for $u:"$'\n'"$out"
		awk -v a="$score" -v b="${!bound}" 'BEGIN { exit !(a <= b) }' ||
			fail "hotcold-$s.service: exposure $score above $bound ${!bound}:"$'\n'"$out"
		echo "hotcold-$s.service: exposure $score (bound ${!bound})"
	done

	# One capture an hour, in the hour, caught up after downtime.
	cal=$(unit_get "$timer" Timer OnCalendar)
	out=$(systemd-analyze calendar "$cal" 2>&1) || fail "OnCalendar=$cal:"$'\n'"$out"
	grep -q 'Normalized form: \*-\*-\* \*:00:00' <<<"$out" ||
		fail "OnCalendar=$cal is not hourly:"$'\n'"$out"
	delay=$(unit_get "$timer" Timer RandomizedDelaySec | tail -n 1)
	out=$(systemd-analyze timespan "${delay:-0}" | sed -n 's/.*μs: *//p')
	[ -n "$out" ] && [ "$out" -lt 3600000000 ] ||
		fail "RandomizedDelaySec=$delay must stay under an hour"
	[ "$(unit_get "$timer" Timer Persistent | tail -n 1)" = true ] ||
		fail "$timer: Persistent=true, or a capture missed during downtime is lost"
	u=$(unit_get "$timer" Timer Unit | tail -n 1)
	[ -z "$u" ] || [ "$u" = hotcold-record.service ] || fail "$timer starts $u"
	echo "hotcold-record.timer: $cal, delay ${delay:-0}, persistent"

	# record: oneshot, into the StateDirectory= systemd creates, a name from the clock.
	[ "$(unit_get "$record" Service Type)" = oneshot ] || fail "$record: Type=oneshot"
	sd=$(unit_get "$record" Service StateDirectory)
	[ -n "$sd" ] || fail "$record: no StateDirectory="
	load_argv "$record"
	out=$(arg_after -o)
	case "$out" in
	/var/lib/$sd/*%Y*%m*%d*%H*%M*%S*) ;;
	*) fail "$record: -o '$out' is not a strftime name under /var/lib/$sd/" ;;
	esac
	[ "${ARGV[1]}" = record ] || fail "$record does not run record"
	load_argv "$serve"
	[ "${ARGV[1]}" = serve ] || fail "$serve does not run serve"
	echo "hotcold-record.service: writes $out"
}

# Start `hc-workload cpu 60` three ways only the unit's capabilities reach; sets WORKLOADS.
start_workloads() {
	local home=$w/home/alice p
	mkdir -p "$home"
	cp "$HC_WORKLOAD" "$home/hc-workload"
	chown -R 65534:65534 "$w/home"
	chmod 700 "$home"
	# Another user's binary in a directory only it may enter (CAP_DAC_READ_SEARCH).
	setpriv --reuid=65534 --regid=65534 --clear-groups "$home/hc-workload" cpu 60 >/dev/null &
	pids+=($!)
	WORKLOADS=$!
	# In a mount namespace of its own: only /proc/PID/root or map_files reach the binary.
	unshare -m --propagation private sh -c 'mount -t tmpfs none /mnt &&
		cp "$1" /mnt/hc-workload-ns && exec setpriv --reuid=65534 --regid=65534 \
		--clear-groups /mnt/hc-workload-ns cpu 60' sh "$HC_WORKLOAD" >/dev/null &
	pids+=($!)
	WORKLOADS="$WORKLOADS $!"
	# Deleted after it started (a package upgrade): only map_files reaches it.
	cp "$HC_WORKLOAD" "$w/hc-workload-del"
	setpriv --reuid=65534 --regid=65534 --clear-groups "$w/hc-workload-del" cpu 60 >/dev/null &
	pids+=($!)
	WORKLOADS="$WORKLOADS $!"
	sleep 0.5
	rm -f "$w/hc-workload-del"
	for p in $WORKLOADS; do
		kill -0 "$p" 2>/dev/null || fail "workload $p did not start"
	done
	# A JIT: its functions are named only from its /tmp/perf-PID.map, which hotcold reads
	# through /proc/PID/root (so the units' PrivateTmp=yes keeps them). Node.js is a test
	# dependency (the viewer).
	if ! command -v node >/dev/null; then
		echo "note: no node; the JIT check (PrivateTmp=) is left out"
		return
	fi
	cat >"$w/jit.js" <<-'EOF'
	function hcJitBurn() { let x = 0; for (let i = 0; i < 1e6; i++) x += Math.sqrt(i); return x; }
	const end = Date.now() + 60000;
	while (Date.now() < end) hcJitBurn();
	EOF
	# From $w: node --perf-basic-prof also writes an isolate-*-v8.log into its directory.
	(cd "$w" && exec node --perf-basic-prof jit.js) &
	pids+=($!)
	JIT_PID=$!
	for p in $(seq 100); do
		[ -s "/tmp/perf-$JIT_PID.map" ] && grep -q hcJitBurn "/tmp/perf-$JIT_PID.map" && break
		sleep 0.1
	done
	grep -q hcJitBurn "/tmp/perf-$JIT_PID.map" || fail "node wrote no perf map naming hcJitBurn"
	WORKLOADS="$WORKLOADS jit:$JIT_PID:hcJitBurn"
}

# Check the sandbox gives exactly the unit's capabilities: sandbox_check UNIT DIR.
sandbox_check() {
	local status want eff nnp
	status=$("$2/sandbox.sh" cat /proc/self/status) || fail "$2/sandbox.sh does not run"
	load_caps "$1"
	want=$(caps_mask "$CAPS")
	eff=$(printf '%s\n' "$status" | awk '/^CapEff:/ { print $2 }')
	[ "$eff" = "$want" ] || fail "sandbox of $1: CapEff $eff, want $want"
	nnp=$(printf '%s\n' "$status" | awk '/^NoNewPrivs:/ { print $2 }')
	[ "$nnp" = "$(unit_bool "$1" NoNewPrivileges)" ] || fail "sandbox of $1: NoNewPrivs $nnp"
	echo "sandbox of $(basename "$1"): capabilities $CAPS (CapEff $eff), NoNewPrivs $nnp"
}

# run_record UNIT DIR: ExecStart= of a record unit in its sandbox, the state directory in
# DIR/state, -d 1s; checks exit 0, silence (or, with WARNING, exactly that warning on stderr),
# the file's name and mode. Sets PROFILE.
run_record() {
	local u=$1 d=$2 warning=${3:-} sd state start end name n um
	local -a argv
	sd=/var/lib/$(unit_get "$u" Service StateDirectory)
	state=$d/state
	sandbox_prepare "$u" "$d"
	um=$(unit_get "$u" Service UMask | tail -n 1)
	mkdir -p "$state"
	chmod "$(unit_get "$u" Service StateDirectoryMode | tail -n 1 | grep . || echo 755)" "$state"
	chown "$SANDBOX_UID" "$state"
	load_argv "$u"
	argv=("${ARGV[@]//$sd\//$state/}" -d 1s)
	start=$(date -u +%s)
	"$d/sandbox.sh" "${argv[@]}" >"$d/stdout" 2>"$d/stderr"
	n=$?
	end=$(date -u +%s)
	[ $n -eq 0 ] || fail "$(basename "$u"): ${argv[*]} exited $n: $(cat "$d/stderr")"
	if [ -n "$warning" ]; then
		[ ! -s "$d/stdout" ] && [ "$(wc -l <"$d/stderr")" -eq 1 ] &&
			grep -q "$warning" "$d/stderr" ||
			fail "$(basename "$u"): wanted only '$warning': $(cat "$d/stdout" "$d/stderr")"
	else
		[ ! -s "$d/stdout" ] && [ ! -s "$d/stderr" ] ||
			fail "$(basename "$u"): not silent: $(cat "$d/stdout" "$d/stderr")"
	fi
	n=$(find "$state" -mindepth 1 | wc -l)
	[ "$n" -eq 1 ] || fail "$(basename "$u"): $n entries in the state directory: $(ls -A "$state")"
	name=$(ls -A "$state")
	# The -o pattern, expanded by date(1) (strftime too) for each second of the run, in UTC.
	local pattern ok=0 s
	ARGV=("${argv[@]}")
	pattern=$(basename "$(arg_after -o)")
	for ((s = start - 1; s <= end; s++)); do
		[ "$(date -u -d "@$s" +"$pattern")" = "$name" ] && ok=1
	done
	[ $ok = 1 ] || fail "$(basename "$u"): '$name' is not '$pattern' at a second of the run (UTC)"
	if [ -n "$um" ]; then
		[ $(($(stat -c '0%a' "$state/$name") & 8#$um)) -eq 0 ] ||
			fail "$(basename "$u"): $name is mode $(stat -c %a "$state/$name") despite UMask=$um"
	fi
	PROFILE=$state/$name
	echo "$(basename "$u"): exit 0, silent, wrote $name (mode $(stat -c %a "$PROFILE"))"
}

bpf_record() {
	local d=$t/record out msg
	start_workloads
	sandbox_prepare "$record" "$d"
	sandbox_check "$record" "$d"
	run_record "$record" "$d"
	"$HC_CONTRIB_CHECK" profile "$PROFILE" $WORKLOADS ||
		fail "hotcold-record.service's capabilities do not give a complete profile"

	# The check fails when the capabilities behind it are missing.
	d=$t/record-less
	mkdir -p "$d"
	sed -E '/^CapabilityBoundingSet=/s/ CAP_(SYSLOG|SYS_PTRACE|DAC_READ_SEARCH|CHECKPOINT_RESTORE)//g' \
		"$record" >"$d/less.service"
	# without CAP_SYSLOG the capture says its kernel frames are unnamed
	run_record "$d/less.service" "$d" "warning: kernel symbols unavailable"
	out=$("$HC_CONTRIB_CHECK" profile "$PROFILE" $WORKLOADS 2>&1) &&
		fail "the profile check passed without CAP_SYSLOG and the /proc capabilities: $out"
	for msg in "kernel frames are not named" "pid ${WORKLOADS%% *}: its frames are not named"; do
		grep -q "$msg" <<<"$out" || fail "without them, no '$msg':"$'\n'"$out"
	done
	echo "without CAP_SYSLOG, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_CHECKPOINT_RESTORE the check fails: ok"

	# System calls and socket families, traced (as root: the filter does not depend on them).
	d=$t/record-strace
	mkdir -p "$d/state"
	local -a argv
	load_argv "$record"
	argv=("${ARGV[@]//\/var\/lib\/$(unit_get "$record" Service StateDirectory)\//$d/state/}" -d 1s)
	# (A sanitized build's leak check cannot stop the world in a process strace traces.)
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		strace -f -qq -o "$d/strace" "${argv[@]}" 2>"$d/stderr" ||
		fail "traced record failed: $(cat "$d/stderr")"
	check_syscalls "$record" "$d/strace"
}

# start_serve UNIT DIR WRAPPER...: its ExecStart= plus --listen 127.0.0.1:0, started through
# WRAPPER (the sandbox, or strace); sets SERVE_PID (hotcold's) and ADDR.
start_serve() {
	local u=$1 d=$2 i
	shift 2
	load_argv "$u"
	# The unit's --data-dir is a real system directory: a scratch one instead (the last
	# --data-dir given wins).
	# as contrib/tmpfiles.d/hotcold.conf makes /var/lib/hotcold/store: --user's, 0700 (the
	# unit has no CAP_CHOWN to make it so itself)
	mkdir -p "$d/state/store"
	# nobody passes through to it (mktemp made $t 0700)
	chmod 711 "$t" "$d" "$d/state"
	chmod 700 "$d/state/store"
	chown nobody:nogroup "$d/state/store"
	"$@" "${ARGV[@]}" --listen 127.0.0.1:0 --data-dir "$d/state/store" "${SERVE_EXTRA[@]}" \
		2>"$d/stderr" &
	SERVE_PID=$!
	pids+=("$SERVE_PID")
	ADDR=
	for i in $(seq 300); do
		ADDR=$(sed -n 's|.*serving http://\([^/]*\)/.*|\1|p' "$d/stderr" | head -n 1)
		[ -n "$ADDR" ] && break
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ -n "$ADDR" ] || fail "$(basename "$u"): serve did not start: $(cat "$d/stderr")"
}

# stop_serve PID DIR: SIGTERM to hotcold (PID); it must exit 0 within 10 s. SERVE_PID (the
# shell's child: hotcold itself, or strace, which exits with its tracee's status) is reaped.
stop_serve() {
	local i
	kill -TERM "$1"
	for i in $(seq 100); do
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$SERVE_PID" 2>/dev/null && fail "serve did not stop within 10 s of SIGTERM"
	wait "$SERVE_PID"
	i=$?
	[ $i -eq 0 ] || fail "serve exited $i after SIGTERM: $(cat "$2/stderr")"
}

# wait_served DIR: until serve answers for its first seconds (at most 30 s: traced, every
# system call is slower), rather than guessing how long that takes.
wait_served() {
	local i
	for i in $(seq 150); do
		"$HC_CONTRIB_CHECK" http "$ADDR" '/api/profile?from=-5s' "$1/body" 2>/dev/null && return
		sleep 0.2
	done
}

bpf_serve() {
	local d=$t/serve user uid child children st f
	SERVE_EXTRA=()
	mkdir -p "$d"
	sandbox_prepare "$serve" "$d"
	sandbox_check "$serve" "$d"
	start_serve "$serve" "$d" "$d/sandbox.sh"
	# The main process holds the unit's capabilities; its two children (the HTTP server,
	# forked first, and the collector worker) nothing, as --user, under seccomp.
	st=$(awk '/^CapEff:/ { print $2 }' "/proc/$SERVE_PID/status")
	load_caps "$serve"
	[ "$st" = "$(caps_mask "$CAPS")" ] || fail "main process: CapEff $st"
	children=$(cat "/proc/$SERVE_PID/task/$SERVE_PID/children")
	[ "$(wc -w <<<"$children")" -eq 2 ] ||
		fail "serve has not two children (HTTP server, collector worker): '$children'"
	load_argv "$serve"
	user=$(arg_after --user)
	uid=$(id -u "${user:-nobody}") || fail "no user ${user:-nobody} here"
	for child in $children; do
		for f in "Uid:	$uid	$uid	$uid	$uid" "CapEff:	0000000000000000" \
			"CapBnd:	0000000000000000" "NoNewPrivs:	1" "Seccomp:	2"; do
			grep -qF "$f" "/proc/$child/status" ||
				fail "child $child: no '$f' in: $(grep -E '^(Uid|Cap|NoNew|Seccomp:)' "/proc/$child/status")"
		done
	done
	echo "hotcold-serve.service: main process CapEff $st; HTTP server and collector worker uid $uid, no capabilities, NoNewPrivs, seccomp filter"
	sleep 3
	wait_served "$d"
	"$HC_CONTRIB_CHECK" http "$ADDR" /api/status "$d/status.json" || fail "GET /api/status"
	"$HC_CONTRIB_CHECK" http "$ADDR" '/api/profile?from=-10s' "$d/profile.json" ||
		fail "GET /api/profile"
	"$HC_CONTRIB_CHECK" profile "$d/profile.json" || fail "serve's profile is not complete"
	stop_serve "$SERVE_PID" "$d"
	echo "hotcold-serve.service: answered, stopped with exit 0"

	# Traced, with --push to a closed port so libcurl's calls are seen too.
	d=$t/serve-strace
	mkdir -p "$d"
	SERVE_EXTRA=(--push http://127.0.0.1:1/ --push-interval 1s)
	start_serve "$serve" "$d" env "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -o "$d/strace"
	local pid
	pid=$(awk 'NR == 1 { print $1 }' "$d/strace")
	# A killed strace lets its tracees run on: the cleanup must kill hotcold itself too.
	pids+=("$pid")
	wait_served "$d"
	for f in /api/status '/api/profile?from=-5s' '/api/profile.pprof?from=-5s' \
		'/api/profile.folded?from=-5s' '/debug/pprof/profile?seconds=2' /api/timeline /metrics; do
		"$HC_CONTRIB_CHECK" http "$ADDR" "$f" "$d/body" || fail "traced serve: GET $f"
	done
	sleep 1
	stop_serve "$pid" "$d"
	check_syscalls "$serve" "$d/strace"
}

case "$mode" in
verify)
	verify
	;;
bpf)
	need_root_bpf
	need_tool strace strace
	need_tool setpriv util-linux
	need_tool unshare util-linux
	bpf_record
	bpf_serve
	;;
*)
	fail "usage: test_units.sh verify|bpf"
	;;
esac
