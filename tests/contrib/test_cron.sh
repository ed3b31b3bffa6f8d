#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# contrib/cron/hotcold read as cron reads /etc/cron.d files, then run.
#
#   test_cron.sh parse   (no root) every line is a comment, a NAME=value setting or a job:
#       five valid time fields (or an @keyword), a user that exists, a command /bin/sh can
#       parse once cron's % handling is applied (\% -> %, a bare % would cut the command);
#       exactly one job runs `hotcold record -o` with a strftime name under /var/lib/hotcold;
#       the clean-up job, pointed at a scratch directory, deletes old files and keeps new ones.
#   test_cron.sh run     (root, BPF) that job's command, exactly as cron would run it (its
#       SHELL and PATH, stdin empty), with /var/lib/hotcold moved to a scratch directory and
#       `-d 1s` added by a `hotcold` first on PATH: exits 0 with no output (cron mails any),
#       and leaves one profile named by strftime at a second of the run in UTC, mode 0600,
#       with samples and named kernel frames.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

cronfile=$HC_SRC/contrib/cron/hotcold
[ -r "$cronfile" ] || fail "no $cronfile"
t=$(mktemp -d "$HC_TESTDIR/cron.XXXXXX")
trap 'rm -rf "$t"' EXIT

# valid_field VALUE MIN MAX [NAMES]: cron's syntax for one time field: * or a list of
# numbers and ranges (names for months and days), each with an optional /step.
valid_field() {
	local v=$1 min=$2 max=$3 names=${4:-} item range step a b i
	IFS=, read -ra items <<<"$v"
	[ ${#items[@]} -ge 1 ] || return 1
	for item in "${items[@]}"; do
		range=${item%%/*}
		step=
		[ "$range" != "$item" ] && step=${item#*/}
		if [ -n "$step" ]; then
			[[ $step =~ ^[0-9]+$ ]] && [ "$step" -ge 1 ] || return 1
		fi
		[ "$range" = "*" ] && continue
		a=${range%%-*}
		b=${range#*-}
		for i in "$a" "$b"; do
			if [[ $i =~ ^[0-9]+$ ]]; then
				[ "$((10#$i))" -ge "$min" ] && [ "$((10#$i))" -le "$max" ] || return 1
			else
				[ -n "$names" ] && [[ " $names " == *" ${i,,} "* ]] || return 1
			fi
		done
	done
}

# Reads the file; sets ENV_NAMES/ENV_VALUES and JOBS (the command fields, raw), checking
# every job line on the way.
read_cronfile() {
	local line n=0 f1 rest user cmd
	ENV_NAMES=()
	ENV_VALUES=()
	JOBS=()
	while IFS= read -r line || [ -n "$line" ]; do
		n=$((n + 1))
		line=${line#"${line%%[![:space:]]*}"}
		[ -z "$line" ] || [ "${line:0:1}" = "#" ] && continue
		if [[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*=[[:space:]]*(.*)$ ]]; then
			ENV_NAMES+=("${BASH_REMATCH[1]}")
			ENV_VALUES+=("${BASH_REMATCH[2]}")
			continue
		fi
		read -r f1 rest <<<"$line"
		if [ "${f1:0:1}" = "@" ]; then
			case "$f1" in
			@reboot | @yearly | @annually | @monthly | @weekly | @daily | @midnight | @hourly) ;;
			*) fail "$cronfile:$n: unknown $f1" ;;
			esac
			read -r user cmd <<<"$rest"
		else
			local -a tf
			read -r -a tf <<<"$line"
			[ ${#tf[@]} -ge 7 ] || fail "$cronfile:$n: not 5 time fields, a user and a command"
			valid_field "${tf[0]}" 0 59 || fail "$cronfile:$n: minute '${tf[0]}'"
			valid_field "${tf[1]}" 0 23 || fail "$cronfile:$n: hour '${tf[1]}'"
			valid_field "${tf[2]}" 1 31 || fail "$cronfile:$n: day of month '${tf[2]}'"
			valid_field "${tf[3]}" 1 12 "jan feb mar apr may jun jul aug sep oct nov dec" ||
				fail "$cronfile:$n: month '${tf[3]}'"
			valid_field "${tf[4]}" 0 7 "sun mon tue wed thu fri sat" ||
				fail "$cronfile:$n: day of week '${tf[4]}'"
			user=${tf[5]}
			# The command: the rest of the line after the sixth field, as written.
			cmd=$(printf '%s\n' "$line" |
				sed -E 's/^([^[:space:]]+[[:space:]]+){6}//')
		fi
		getent passwd "$user" >/dev/null || fail "$cronfile:$n: no user '$user'"
		[ -n "$cmd" ] || fail "$cronfile:$n: no command"
		JOBS+=("$cmd")
	done <"$cronfile"
	[ ${#JOBS[@]} -ge 1 ] || fail "$cronfile: no job"
}

# The job that runs hotcold record, after cron's % handling; fails unless there is exactly
# one and nothing of it would be cut off as standard input.
record_job() {
	local j c found=
	for j in "${JOBS[@]}"; do
		c=$(cron_command "$j")
		case "$c" in
		*"hotcold record"*) ;;
		*) continue ;;
		esac
		[ -z "$found" ] || fail "$cronfile: more than one hotcold record job"
		# Cron cuts at the first unescaped %: every % written must reach the command.
		[ "$(printf '%s' "$c" | tr -cd '%' | wc -c)" -eq \
			"$(printf '%s' "$j" | tr -cd '%' | wc -c)" ] ||
			fail "$cronfile: an unescaped % cuts the command: cron runs only '$c'"
		found=$c
	done
	[ -n "$found" ] || fail "$cronfile: no job runs hotcold record"
	printf '%s\n' "$found"
}

# cron's environment for a job: the file's settings over SHELL=/bin/sh and PATH=/usr/bin:/bin.
cron_env() {
	local i shell=/bin/sh path=/usr/bin:/bin
	for i in "${!ENV_NAMES[@]}"; do
		case "${ENV_NAMES[$i]}" in
		SHELL) shell=${ENV_VALUES[$i]} ;;
		PATH) path=${ENV_VALUES[$i]} ;;
		esac
	done
	CRON_SHELL=$shell
	CRON_PATH=$path
}

parse() {
	local cmd j c out old new
	read_cronfile
	cron_env
	cmd=$(record_job) || exit 1
	"$CRON_SHELL" -n -c "$cmd" || fail "$CRON_SHELL cannot parse: $cmd"
	out=$(printf '%s\n' "$cmd" | grep -oE -- '-o[[:space:]]+[^[:space:]]+' | awk '{ print $2 }')
	case "$out" in
	/var/lib/hotcold/*%Y*%m*%d*%H*%M*%S*) ;;
	*) fail "$cronfile: -o '$out' is not a strftime name under /var/lib/hotcold/" ;;
	esac
	echo "${#JOBS[@]} jobs parse; cron runs: $cmd"

	# The clean-up job, if there is one, on a scratch directory.
	for j in "${JOBS[@]}"; do
		c=$(cron_command "$j")
		case "$c" in *find*/var/lib/hotcold*-delete*) ;; *) continue ;; esac
		mkdir -p "$t/state"
		old=$t/state/20200101T000000Z.json
		new=$t/state/$(date -u +%Y%m%dT%H%M%SZ).json
		touch -d '10 days ago' "$old" "$t/state/.killed.json.tmp.AbC123"
		touch "$new"
		c=${c//\/var\/lib\/hotcold/$t/state}
		env -i PATH="$CRON_PATH" "$CRON_SHELL" -c "$c" </dev/null || fail "clean-up job failed: $c"
		[ ! -e "$old" ] && [ ! -e "$t/state/.killed.json.tmp.AbC123" ] ||
			fail "clean-up job kept files 10 days old: $(ls -A "$t/state")"
		[ -e "$new" ] || fail "clean-up job deleted a new capture"
		echo "clean-up job: deletes 10-day-old captures and temporary files, keeps new ones"
	done
}

run() {
	local cmd state=$t/state start end name n pattern ok=0 s out
	need_root_bpf
	read_cronfile
	cron_env
	cmd=$(record_job) || exit 1
	# `hotcold` first on PATH: this build, with -d 1s after the job's own arguments.
	mkdir -p "$t/bin"
	printf '#!/bin/sh\nexec "%s" "$@" -d 1s\n' "$HOTCOLD" >"$t/bin/hotcold"
	chmod +x "$t/bin/hotcold"
	# A job naming hotcold by its absolute path gets the stand-in the same way.
	cmd=$(printf '%s\n' "$cmd" |
		sed -E "s#(^|[[:space:];&|])/[^[:space:]]*/hotcold([[:space:]]+record)#\\1$t/bin/hotcold\\2#g")
	cmd=${cmd//\/var\/lib\/hotcold/$state}
	start=$(date -u +%s)
	out=$(cd / && env -i SHELL="$CRON_SHELL" PATH="$t/bin:$CRON_PATH" HOME=/root LOGNAME=root \
		"$CRON_SHELL" -c "$cmd" </dev/null 2>&1)
	n=$?
	end=$(date -u +%s)
	[ $n -eq 0 ] || fail "the job exited $n: $out"
	[ -z "$out" ] || fail "the job printed (cron would mail it): $out"
	n=$(find "$state" -mindepth 1 | wc -l)
	[ "$n" -eq 1 ] || fail "$n entries in $state: $(ls -A "$state")"
	name=$(ls -A "$state")
	pattern=$(basename "$(printf '%s\n' "$cmd" | grep -oE -- '-o[[:space:]]+[^[:space:]]+' | awk '{ print $2 }')")
	for ((s = start - 1; s <= end; s++)); do
		[ "$(date -u -d "@$s" +"$pattern")" = "$name" ] && ok=1
	done
	[ $ok = 1 ] || fail "'$name' is not '$pattern' at a second of the run (UTC)"
	[ "$(stat -c %a "$state/$name")" = 600 ] ||
		fail "$name is mode $(stat -c %a "$state/$name"): a profile names every process"
	"$HC_CONTRIB_CHECK" profile "$state/$name" || fail "the cron capture is not complete"
	echo "cron job: exit 0, silent, wrote $name (mode 600)"
}

case "${1:-parse}" in
parse) parse ;;
run) run ;;
*) fail "usage: test_cron.sh parse|run" ;;
esac
