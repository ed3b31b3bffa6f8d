#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# docs/hotcold.8 against the binary: mandoc -Tlint finds nothing; every flag that
# `hotcold record|report|serve --help` prints is documented in that command's subsection;
# every exit code they list is an item of EXIT STATUS; every command `hotcold --help` lists
# has a subsection. Then the same checks on copies with one flag, then one exit code,
# removed must fail: the check can fail.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

man=$HC_SRC/docs/hotcold.8
need_tool mandoc mandoc
[ -r "$man" ] || fail "no $man"
t=$(mktemp -d "$HC_TESTDIR/man.XXXXXX")
trap 'rm -rf "$t"' EXIT

# 1. Lint: nothing about the page at any level (style included), except the lookups of the
# pages SEE ALSO names, which depend on what this machine has installed. Messages about the
# machine's own manual database (mandoc.db outdated or being rebuilt) are not the page's.
all=$(mandoc -Tlint -Wstyle "$man" 2>&1)
rc=$?
out=$(printf '%s\n' "$all" | grep -F "$man:" | grep -v 'referenced manual not found')
[ -z "$out" ] || fail "mandoc -Tlint (exit $rc):"$'\n'"$out"
case $rc in
0 | 1 | 5) ;; # clean; style notes (filtered above); a system error (the database)
*) fail "mandoc -Tlint exited $rc:"$'\n'"$all" ;;
esac
echo "mandoc -Tlint: clean"

# The options a --help text mentions: -x and --long-name tokens not glued to a word.
help_options() {
	grep -oE '(^|[^A-Za-z0-9_/.-])--?[A-Za-z][A-Za-z0-9-]*' |
		sed -E 's/^[^-]+//' | sort -u
}

# The exit codes a --help text lists after "Exit codes:".
help_codes() {
	tr '\n' ' ' | sed -n 's/.*Exit codes://p' | grep -oE '(^|[ ,])[0-9]{1,3} ' |
		tr -dc '0-9\n ' | tr ' ' '\n' | grep . | sort -un
}

# check MANFILE: 0 when everything is documented, else 1 with what is missing. (Searches read
# here-strings, not `printf | grep -q`: under pipefail, grep -q leaving early can kill printf
# with SIGPIPE and turn a match into a miss.)
check() {
	local f=$1 text sub opts codes o c bad=0 cmd n
	# Rendered text, overstrike (bold, underline) removed.
	text=$(mandoc -Tascii "$f" | sed 's/.\x08//g')
	for cmd in $("$HOTCOLD" --help | awk '/^commands:/ { on = 1; next } on && !NF { exit } on { print $1 }'); do
		# The subsection: from its heading to the next heading of either level.
		sub=$(printf '%s\n' "$text" |
			awk -v h="   hotcold $cmd" '$0 == h { on = 1; next } on && (/^[^ ]/ || /^   [^ ]/) { exit } on')
		if [ -z "$sub" ]; then
			echo "no subsection 'hotcold $cmd' for the command 'hotcold --help' lists"
			bad=1
			continue
		fi
		opts=$("$HOTCOLD" "$cmd" --help | help_options)
		n=$(printf '%s\n' "$opts" | grep -c .)
		[ "$n" -ge 6 ] || { echo "only $n options read from '$cmd --help'"; bad=1; }
		for o in $opts; do
			grep -qE -- "(^|[^A-Za-z0-9-])$o([^A-Za-z0-9-]|\$)" <<<"$sub" ||
				{ echo "hotcold $cmd: $o is not documented in its subsection"; bad=1; }
		done
		codes=$("$HOTCOLD" "$cmd" --help | help_codes)
		n=$(printf '%s\n' "$codes" | grep -c .)
		[ "$n" -ge 5 ] || { echo "only $n exit codes read from '$cmd --help'"; bad=1; }
		sub=$(printf '%s\n' "$text" |
			awk '$0 == "EXIT STATUS" { on = 1; next } on && /^[^ ]/ { exit } on')
		for c in $codes; do
			grep -qE "^ {5}$c( |\$)" <<<"$sub" ||
				{ echo "hotcold $cmd: exit code $c is not an item of EXIT STATUS"; bad=1; }
		done
		[ $bad -eq 0 ] && [ "$f" = "$man" ] &&
			echo "hotcold $cmd: $(echo $opts | wc -w) options and exit codes $(echo $codes) documented"
	done
	grep -qE -- '(^|[^A-Za-z0-9-])--version([^A-Za-z0-9-]|$)' <<<"$text" ||
		{ echo "--version is not documented"; bad=1; }
	return $bad
}

check "$man" || fail "$man is missing the above"

# 2. The check can fail: a flag's every mention removed, then an exit code's item.
grep -v -e 'Fl -wakers' "$man" >"$t/no-flag.8"
out=$(check "$t/no-flag.8") && fail "the check passed a page without --wakers"
grep -q -- '--wakers is not documented' <<<"$out" ||
	fail "the check missed the removal of --wakers: $out"
grep -v -e '^\.It 75' "$man" >"$t/no-code.8"
out=$(check "$t/no-code.8") && fail "the check passed a page without exit code 75"
grep -q 'exit code 75 is not' <<<"$out" ||
	fail "the check missed the removal of exit code 75: $out"
echo "the check fails without --wakers or exit code 75: ok"
