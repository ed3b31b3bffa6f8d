#!/usr/bin/env bash
# The viewer in a real browser against a real `hotcold serve`: start serve on a free loopback
# port with a known workload running, then drive the page with headless Chromium
# (tests/e2e/viewer/viewer.test.mjs, playwright-core). serve runs with --locks, and
# `hc-workload locks` contends on its mmap_lock for a few seconds before the browser looks (the
# Locks view's steps). Root + BPF: skipped (77) outside CI without root; under CI=true a skip is
# a failure.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)

skip() {
	if [ "${CI:-}" = "true" ]; then
		echo "FAIL: $* (CI=true forbids skipping)" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}

[ "$(id -u)" -eq 0 ] || skip "needs root (BPF programs and perf events); run as root"
[ -x /usr/bin/chromium ] || skip "no /usr/bin/chromium (apt-get install chromium)"
command -v node >/dev/null || skip "no node (apt-get install nodejs)"
[ -d "$src/node_modules/playwright-core" ] || skip "no playwright-core (npm ci at the top)"

dir=$(mktemp -d)
# serve's HTTP process (nobody) writes its data directory inside: it must pass through.
chmod 711 "$dir"
serve_pid=
work_pid=
locks_pid=
cleanup() {
	[ -n "$serve_pid" ] && kill -TERM "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	[ -n "$work_pid" ] && kill -KILL "$work_pid" 2>/dev/null
	[ -n "$locks_pid" ] && kill -KILL "$locks_pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT

"$HC_WORKLOAD" worksleep 120 >/dev/null &
work_pid=$!
# --max-store well above the default: on a busy machine (many processes, many frames) 10M fills
# in under a minute and the oldest seconds are dropped early, so a range picked on the heat map
# could be gone by the time it is asked for. The store's eviction is test_serve's business.
"$HOTCOLD" serve -F 999 --locks --listen 127.0.0.1:0 --retention 10m --max-store 256M \
	--data-dir "$dir/data" 2>"$dir/stderr" &
serve_pid=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's|.*serving \(http://[^/]*/\).*|\1|p' "$dir/stderr" | head -1)
	[ -n "$url" ] && break
	kill -0 "$serve_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "FAIL: hotcold serve did not start:" >&2
	cat "$dir/stderr" >&2
	exit 1
fi
# A few seconds of data before the browser looks, with 6 s of lock contention in them.
locks_from=$(date +%s%3N)
"$HC_WORKLOAD" locks 6 >/dev/null &
locks_pid=$!
wait "$locks_pid"
locks_to=$(date +%s%3N)
locks_wl=$locks_pid
locks_pid= # gone: its pid is not ours to kill any more
sleep 3
HOTCOLD_URL=$url HC_WORKLOAD_PID=$work_pid HC_LOCKS_PID=$locks_wl HC_LOCKS_FROM_MS=$locks_from \
	HC_LOCKS_TO_MS=$locks_to node "$src/tests/e2e/viewer/viewer.test.mjs"
rc=$?
if [ $rc -ne 0 ]; then
	echo "--- hotcold serve stderr ---" >&2
	cat "$dir/stderr" >&2
fi
exit $rc
