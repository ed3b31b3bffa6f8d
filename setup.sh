#!/usr/bin/env bash
# hotcold quick start. Run as root from a fresh clone:
#   ./setup.sh serve    install dependencies, build, profile continuously and serve the
#                       viewer at http://127.0.0.1:8080/ (PORT=... to change; Ctrl-C stops)
#   ./setup.sh record   install dependencies, build, profile the machine for 10 s
#   ./setup.sh test     install dependencies, build, run every test
#   ./setup.sh build    install dependencies and build only
set -euo pipefail
cd "$(dirname "$0")"

# Debian 12 packages: the toolchain, the libraries hotcold links, and what the tests use
# (objcopy/strip/xz build the ELF fixtures, jq reads the test log, chromium drives the
# viewer's browser tests, golang-go's `go tool pprof` reads the pprof files back, mandoc
# checks the man page, systemd-analyze and strace the units in contrib/). Named one by one:
# apt-get --no-install-recommends brings clang without libclang-rt-14-dev (libFuzzer and
# clang's sanitizer runtimes) and without llvm (llvm-symbolizer, which names the frames of a
# fuzz target's report); clang-format-14 is the formatter the tree is checked against.
PKGS=(clang bpftool libbpf-dev meson ninja-build pkg-config gcc make binutils xz-utils
      libsqlite3-dev libzstd-dev
      libelf-dev libdw-dev liblzma-dev libjansson-dev libcmocka-dev zlib1g-dev libiberty-dev jq
      libmicrohttpd-dev libcap-dev libseccomp-dev libcurl4-openssl-dev)
TEST_PKGS=(chromium golang-go mandoc systemd strace libclang-rt-14-dev llvm clang-format-14 sqlite3)

die() { echo "setup.sh: $*" >&2; exit 1; }

install_deps() {
	local missing=() want=("${PKGS[@]}")
	[ "${1:-}" = test ] && want+=("${TEST_PKGS[@]}")
	# Node.js for the browser tests (playwright-core from npm): Debian's, unless one is there.
	[ "${1:-}" = test ] && ! command -v node >/dev/null && want+=(nodejs npm)
	for p in "${want[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}): run as root to install them"
	echo "setup.sh: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

build() {
	if [ ! -f build/build.ninja ]; then
		meson setup build >/dev/null
	fi
	meson compile -C build >/dev/null || meson compile -C build
}

# build-clang: the same tree with clang, -Werror kept: every target compiles with both
# compilers, and the unit tests run on clang's code too (the e2e tests on gcc's: clang's e2e
# run is not established yet, docs/fuzzing.md "In CI"; serve, record and build use build/).
clang_build() {
	if [ ! -f build-clang/build.ninja ]; then
		CC=clang meson setup build-clang >/dev/null
	fi
	meson compile -C build-clang >/dev/null || meson compile -C build-clang
}

# build-asan: the tree with -Db_sanitize=address,undefined (gcc; -Db_lundef=false, as
# sanitized shared objects want; -Dwerror=false: the instrumentation makes gcc warn where
# the plain build, which keeps -Werror, does not). gcc rather than clang, whose sanitized
# build keeps -Werror but fails unit tests today (docs/fuzzing.md, "In CI").
sanitized_build() {
	if [ ! -f build-asan/build.ninja ]; then
		meson setup build-asan -Db_sanitize=address,undefined -Db_lundef=false \
			-Dwerror=false >/dev/null
	fi
	meson compile -C build-asan >/dev/null || meson compile -C build-asan
}

# Every tracked C file as clang-format 14 formats it with .clang-format (the tree was
# formatted once with it; other versions format differently). Lists the files that are not.
check_format() {
	local files bad out rc=0
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		mapfile -t files < <(git ls-files '*.c' '*.h')
	else
		mapfile -t files < <(find . -path ./node_modules -prune -o -path './build*' -prune \
			-o \( -name '*.c' -o -name '*.h' \) -type f -print | sed 's|^\./||' | sort)
	fi
	command -v clang-format-14 >/dev/null || { echo "setup.sh: no clang-format-14" >&2; return 1; }
	out=$(clang-format-14 --dry-run --Werror "${files[@]}" 2>&1) || rc=$?
	bad=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*clang-format-violations.*/\1/p' \
		<<<"$out" | sort -u)
	if [ -n "$bad" ]; then
		echo "setup.sh: not formatted (clang-format-14 -i FILE... fixes them):" >&2
		echo "$bad" | sed 's/^/  /' >&2
		return 1
	elif [ $rc -ne 0 ]; then
		echo "setup.sh: clang-format-14 failed:" >&2
		echo "$out" | tail -20 >&2
		return 1
	fi
	echo "format: ${#files[@]} C files, all formatted (clang-format-14)"
}

# suite DIR LABEL [MESON TEST ARGS...]: meson test in DIR, its summary, and CI's rule that a
# skip is a failure. Sanitizer reports are fatal (halt_on_error) and leaks are checked at
# every exit: ours come after any inherited options, so they win (the last setting of a
# sanitizer option is the one used).
suite() {
	local dir=$1 label=$2 log rc=0 passed failed skipped
	shift 2
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1:halt_on_error=1:abort_on_error=1:print_summary=1 \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
		meson test -C "$dir" --print-errorlogs "$@" || rc=$?
	log=$dir/meson-logs/testlog.json
	# EXPECTEDFAIL: a test meson runs with should_fail (none today: refusals are checked
	# for their exit status and message by tests/expect_exit.sh).
	passed=$(jq -s '[.[] | select(.result == "OK" or .result == "EXPECTEDFAIL")] | length' "$log")
	failed=$(jq -s '[.[] | select(.result != "OK" and .result != "EXPECTEDFAIL" and .result != "SKIP")] | length' "$log")
	skipped=$(jq -s '[.[] | select(.result == "SKIP")] | length' "$log")
	echo "tests${label:+ $label}: $passed passed, $failed failed, $skipped skipped"
	if [ "${CI:-}" = "true" ] && [ "$skipped" -gt 0 ]; then
		echo "setup.sh: CI=true and $skipped test(s) skipped: a skip is a failure here" >&2
		rc=1
	fi
	return $rc
}

# playwright-core (the browser tests' driver), pinned by package-lock.json.
install_node_modules() {
	[ -d node_modules/playwright-core ] && return 0
	npm ci --no-audit --no-fund --loglevel=error >/dev/null
}

cmd=${1:-}
case "$cmd" in
serve)
	install_deps
	build
	[ "$(id -u)" -eq 0 ] || die "serve needs root (BPF and perf events; the HTTP side drops it)"
	port=${PORT:-8080}
	echo "setup.sh: open http://127.0.0.1:$port/ in a browser (Ctrl-C stops hotcold)" >&2
	exec ./build/hotcold serve --listen "127.0.0.1:$port"
	;;
build)
	install_deps
	build
	;;
record)
	install_deps
	build
	[ "$(id -u)" -eq 0 ] || die "recording needs root (BPF and perf events)"
	out="hotcold-$(date -u +%Y%m%dT%H%M%SZ).json"
	echo "setup.sh: profiling every CPU for 10 s at 99 Hz..." >&2
	./build/hotcold record -d 10s -o "$out"
	echo
	echo "Profile written to $PWD/$out (hotcold-profile/1, see docs/profile-schema.md)."
	echo "Busiest processes (ms on CPU / blocked / waiting for a CPU):"
	# --stream: Debian's jq 1.6 refuses documents nested deeper than 256 levels, and a
	# flame graph of deep stacks is deeper than that.
	jq -n -r --stream '[inputs | select(length == 2 and (.[0] | length) == 4
	    and .[0][0] == "flamegraph"
	    and (.[0][3] | IN("name", "pid", "on_cpu_ns", "off_cpu_ns", "runqueue_ns")))]
	  | group_by(.[0][2]) | map(map({(.[0][3]): .[1]}) | add)
	  | map(select(.on_cpu_ns > 0)) | sort_by(-.on_cpu_ns) | .[:8][]
	  | "  \(.on_cpu_ns / 1e6 | floor) / \(.off_cpu_ns / 1e6 | floor) / \(.runqueue_ns / 1e6 | floor) ms  \(.name) [\(.pid)]"' "$out"
	jq -n -r --stream '[inputs | select(length == 2 and .[0][0] == "sampling"
	    and (.[0][1] | IN("samples", "expected_samples", "idle_samples", "lost")))
	    | "\(.[0][1:] | join("."))=\(.[1])"] | "Sampling: " + join(", ")' "$out"
	echo
	echo "Look at it:"
	echo "  ./build/hotcold record -d 10s --format folded -o out.folded"
	echo "      open out.folded in speedscope, or: flamegraph.pl --countname=ns out.folded > out.svg"
	echo "  jq --stream, or python3 -m json.tool, for the JSON (Debian's jq 1.6 stops at 256"
	echo "      levels of nesting without --stream: docs/profile-schema.md)"
	;;
test)
	install_deps test
	# HC_TEST_FILTER narrows faults-bpf to the tests it names: a filter left in CI's
	# environment would pass the run with tests unrun.
	if [ -n "${HC_TEST_FILTER:-}" ]; then
		[ "${CI:-}" = "true" ] &&
			die "HC_TEST_FILTER=$HC_TEST_FILTER is set, and CI=true runs every test: unset it"
		echo "setup.sh: HC_TEST_FILTER=$HC_TEST_FILTER: faults-bpf runs only the tests it names" >&2
	fi
	rc=0
	check_format || rc=1
	install_node_modules
	# Both compilers build every target (hotcold, the tests, the benchmarks) under -Werror:
	# gcc in build/, clang in build-clang/; the fuzz targets build with clang (libFuzzer) in
	# build-fuzz/ (bench/fuzz.sh).
	build
	clang_build
	suite build "(gcc)" || rc=1
	suite build-clang "(clang, unit)" --suite unit || rc=1
	# The whole suite again, every C file (hotcold and the tests) under AddressSanitizer and
	# UBSan: a memory error, undefined behaviour or a leak in any process fails its test,
	# the sandboxed workers and the BPF runs included (docs/fuzzing.md).
	sanitized_build
	suite build-asan "(gcc) under ASan+UBSan" || rc=1
	# Every fuzz target from its seed corpus for a bounded time (bench/fuzz.sh; longer
	# campaigns: docs/fuzzing.md). A crash, leak or timeout fails the run.
	bench/fuzz.sh "${HC_FUZZ_SECONDS:-20}" || rc=1
	exit $rc
	;;
*)
	echo "usage: ./setup.sh serve | record | test | build" >&2
	exit 64
	;;
esac
