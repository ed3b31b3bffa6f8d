# SPDX-License-Identifier: GPL-2.0-only
# Shared by the contrib tests (sourced, bash): reading systemd units and cron lines the way
# systemd and cron do (the subset contrib/ uses; anything else fails loudly rather than being
# misread), and running a unit's command in the part of its sandbox that can be reproduced
# without systemd as PID 1.

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# Exit 77 (skip) with a reason; under CI=true a skip is a failure.
skip() {
	if [ "${CI:-}" = "true" ]; then
		echo "FAIL: $* (CI=true forbids skipping)" >&2
		exit 1
	fi
	echo "SKIP: $*" >&2
	exit 77
}

need_root_bpf() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (BPF programs and perf events); run as root"
	[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF (/sys/kernel/btf/vmlinux)"
}

need_tool() {
	command -v "$1" >/dev/null || skip "no $1 (apt-get install $2)"
}

# unit_get FILE SECTION KEY: the values of every KEY= in [SECTION], in order, one a line,
# after systemd's line continuation; an empty assignment resets the list.
unit_get() {
	awk -v want_section="[$2]" -v key="$3" '
	function flush(line,   k, v) {
		if (line !~ /=/)
			return
		k = line; sub(/=.*/, "", k); gsub(/^[ \t]+|[ \t]+$/, "", k)
		v = line; sub(/^[^=]*=/, "", v); gsub(/^[ \t]+|[ \t]+$/, "", v)
		if (section != want_section || k != key)
			return
		if (v == "")
			n = 0
		else
			vals[++n] = v
	}
	{
		line = $0
		if (cont != "") {
			line = cont " " line
			cont = ""
		} else {
			sub(/^[ \t]+/, "", line)
			if (line ~ /^[#;]/ || line == "")
				next
			if (line ~ /^\[.*\]$/) {
				section = line
				next
			}
		}
		if (line ~ /\\$/) {
			cont = substr(line, 1, length(line) - 1)
			next
		}
		flush(line)
	}
	END {
		if (cont != "")
			flush(cont)
		for (i = 1; i <= n; i++)
			print vals[i]
	}' "$1"
}

# unit_bool FILE KEY: 1 if the [Service] boolean KEY (last assignment) is true, else 0.
unit_bool() {
	case "$(unit_get "$1" Service "$2" | tail -n 1)" in
	1 | yes | true | on) echo 1 ;;
	*) echo 0 ;;
	esac
}

# unit_exec FILE: ExecStart= split into words as systemd does, one a line: %% is %, double
# and single quotes group, backslash escapes. Prefixes, other specifiers and $VARIABLES are
# not used by contrib/ and fail.
unit_exec() {
	local v
	v=$(unit_get "$1" Service ExecStart)
	[ "$(printf '%s\n' "$v" | grep -c .)" -eq 1 ] || fail "$1: expected one ExecStart="
	case "$v" in
	[-@:+!]*) fail "$1: ExecStart prefixes are not handled by this test" ;;
	esac
	printf '%s' "$v" | awk '
	{
		s = $0
		out = ""; word = ""; inword = 0; q = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (c == "%") {
				if (substr(s, i + 1, 1) != "%") {
					print "unsupported specifier %" substr(s, i + 1, 1) > "/dev/stderr"
					exit 1
				}
				word = word "%"; inword = 1; i++
				continue
			}
			if (c == "$") {
				print "unsupported $ in ExecStart" > "/dev/stderr"
				exit 1
			}
			if (c == "\\") {
				word = word substr(s, i + 1, 1); inword = 1; i++
				continue
			}
			if (q != "") {
				if (c == q) q = ""; else word = word c
				continue
			}
			if (c == "\"" || c == "\047") { q = c; inword = 1; continue }
			if (c == " " || c == "\t") {
				if (inword) print word
				word = ""; inword = 0
				continue
			}
			word = word c; inword = 1
		}
		if (q != "") { print "unterminated quote" > "/dev/stderr"; exit 1 }
		if (inword) print word
	}' || fail "$1: ExecStart= cannot be read"
}

# unit_caps FILE: the capabilities the unit's process ends up with, as setpriv names
# (bpf,perfmon,...): CapabilityBoundingSet= (unset: all) minus what ProtectKernelLogs=,
# ProtectKernelModules=, ProtectClock= and PrivateDevices= take away.
unit_caps() {
	local f=$1 v all set=" " c
	all=$(setpriv --list-caps | tr '\n' ' ')
	v=$(unit_get "$f" Service CapabilityBoundingSet | tr '\n' ' ')
	if [ -z "$v" ]; then
		set=" $all"
	else
		for c in $v; do
			case "$c" in
			~*) fail "$f: inverted CapabilityBoundingSet= is not handled by this test" ;;
			CAP_*) ;;
			*) fail "$f: CapabilityBoundingSet: '$c' is not a capability" ;;
			esac
			c=$(printf '%s' "${c#CAP_}" | tr 'A-Z' 'a-z')
			case " $all " in *" $c "*) ;; *) skip "this kernel has no CAP_${c^^}" ;; esac
			set="$set$c "
		done
	fi
	[ "$(unit_bool "$f" ProtectKernelLogs)" = 1 ] && set=${set/ syslog / }
	[ "$(unit_bool "$f" ProtectKernelModules)" = 1 ] && set=${set/ sys_module / }
	if [ "$(unit_bool "$f" ProtectClock)" = 1 ]; then
		set=${set/ sys_time / }
		set=${set/ wake_alarm / }
	fi
	if [ "$(unit_bool "$f" PrivateDevices)" = 1 ]; then
		set=${set/ mknod / }
		set=${set/ sys_rawio / }
	fi
	set=$(echo $set)
	echo "${set// /,}"
}

# caps_mask NAMES: the /proc/PID/status mask (16 hex digits) of comma-separated names.
caps_mask() {
	local all i=0 mask=0 c
	all=$(setpriv --list-caps)
	for c in $all; do
		case ",$1," in *",$c,"*) mask=$((mask | (1 << i))) ;; esac
		i=$((i + 1))
	done
	printf '%016x\n' "$mask"
}

# ro_mount OPTIONAL PATH, hide_mount OPTIONAL PATH DIR: the shell lines that make PATH
# read-only, or inaccessible (an empty mode-000 directory or file over it); OPTIONAL 1 skips
# a PATH missing when they run.
ro_mount() {
	printf 'if %s [ -e %q ]; then\n' "$([ "$1" = 1 ] || echo '!')" "$2"
	[ "$1" = 1 ] || printf '\techo "no %q" >&2; exit 1\nelse\n' "$2"
	printf '\tmount --rbind %q %q\n\tmount -o remount,bind,ro %q\nfi\n' "$2" "$2" "$2"
}

hide_mount() {
	printf 'if %s [ -e %q ]; then\n' "$([ "$1" = 1 ] || echo '!')" "$2"
	[ "$1" = 1 ] || printf '\techo "no %q" >&2; exit 1\nelif [ -d %q ]; then\n' "$2" "$2"
	[ "$1" = 1 ] && printf 'if [ -d %q ]; then\n' "$2"
	printf '\tmount -t tmpfs -o mode=000,size=4k none %q\nelse\n' "$2"
	printf '\tmount --bind %q %q\nfi\n' "$3/inaccessible/reg" "$2"
	[ "$1" = 1 ] && printf 'fi\n'
	return 0
}

# sandbox_prepare FILE DIR: write DIR/sandbox.sh, which runs "$@" the way the unit would be
# run, as far as it can be reproduced here: User=/DynamicUser=, the capability sets,
# NoNewPrivileges=, UMask=, PrivateNetwork=, PrivateTmp=, ProtectHome=, ProtectKernelTunables=,
# ProtectProc=/ProcSubset=, ReadOnlyPaths= and InaccessiblePaths=. Not reproduced:
# ProtectSystem= and the directories (the caller points the state directory elsewhere),
# seccomp (SystemCallFilter=, RestrictAddressFamilies=: checked with strace instead), cgroup
# and scheduling limits. Sets SANDBOX_UID to the uid the command runs as.
sandbox_prepare() {
	local f=$1 d=$2 caps user uid pp subset ambient p m
	local setpriv="setpriv" mounts="$d/sandbox-mounts.sh" unshare="unshare -m --propagation private"
	mkdir -p "$d/inaccessible"
	: >"$d/inaccessible/reg"
	chmod 000 "$d/inaccessible/reg"
	caps=$(unit_caps "$f") || exit $?
	user=$(unit_get "$f" Service User | tail -n 1)
	if [ "$(unit_bool "$f" DynamicUser)" = 1 ]; then
		# The first uid systemd hands out to dynamic users, if nobody has it here.
		getent passwd 61184 >/dev/null && skip "uid 61184 is taken: cannot stand in for DynamicUser="
		uid=61184
		setpriv="$setpriv --reuid=$uid --regid=$uid --clear-groups"
	elif [ -n "$user" ] && [ "$user" != root ] && [ "$user" != 0 ]; then
		uid=$(id -u "$user") || fail "$f: no user $user here"
		setpriv="$setpriv --reuid=$uid --regid=$(id -g "$user") --init-groups"
	else
		uid=0
	fi
	SANDBOX_UID=$uid
	setpriv="$setpriv --bounding-set=-all${caps:+,+${caps//,/,+}}"
	if [ "$uid" != 0 ]; then
		ambient=$(unit_get "$f" Service AmbientCapabilities | tr '\n' ' ')
		ambient=$(for c in $ambient; do printf '%s\n' "${c#CAP_}"; done | tr 'A-Z\n' 'a-z,')
		ambient=${ambient%,}
		setpriv="$setpriv --inh-caps=-all${ambient:+,+${ambient//,/,+}}"
		setpriv="$setpriv --ambient-caps=-all${ambient:+,+${ambient//,/,+}}"
	fi
	[ "$(unit_bool "$f" NoNewPrivileges)" = 1 ] && setpriv="$setpriv --no-new-privs"
	[ "$(unit_bool "$f" PrivateNetwork)" = 1 ] && unshare="$unshare -n"

	{
		echo "set -e"
		m=$(unit_get "$f" Service UMask | tail -n 1)
		[ -n "$m" ] && echo "umask $m"
		[ "$(unit_bool "$f" PrivateNetwork)" = 1 ] &&
			echo "ip link set lo up 2>/dev/null || true"
		pp=$(unit_get "$f" Service ProtectProc | tail -n 1)
		subset=$(unit_get "$f" Service ProcSubset | tail -n 1)
		if [ -n "$pp" ] && [ "$pp" != default ] || [ "$subset" = pid ]; then
			m="hidepid=${pp:-default}"
			[ "$pp" = default ] || [ -z "$pp" ] && m="hidepid=off"
			[ "$subset" = pid ] && m="$m,subset=pid"
			echo "mount -t proc -o $m proc /proc"
		fi
		# Paths are looked up when the script runs (after /proc was remounted); a missing
		# one is skipped when systemd would skip it (a "-" prefix, its own tables), else
		# the script fails as the unit would (226/NAMESPACE).
		# (Simple commands and if-blocks only: set -e ignores a failure inside an && list.)
		if [ "$(unit_bool "$f" ProtectKernelTunables)" = 1 ]; then
			ro_mount 1 /proc/sys
			ro_mount 0 /sys
			hide_mount 1 /proc/kallsyms "$d"
			hide_mount 1 /proc/kcore "$d"
		fi
		for p in $(unit_get "$f" Service ReadOnlyPaths); do
			ro_mount "$([ "${p#-}" != "$p" ] && echo 1 || echo 0)" "${p#-}"
		done
		for p in $(unit_get "$f" Service InaccessiblePaths); do
			hide_mount "$([ "${p#-}" != "$p" ] && echo 1 || echo 0)" "${p#-}" "$d"
		done
		if [ "$(unit_bool "$f" PrivateTmp)" = 1 ]; then
			for p in /tmp /var/tmp; do
				# As for ProtectHome below: a checkout under /tmp (a CI clone) must stay
				# visible to the process under test. The note goes to the test's log,
				# not into the sandbox (whose stderr must stay silent).
				case "$d/ $HOTCOLD" in
				"$p"/* | *" $p"/*) echo "note: $p holds the test; not made private" >&2 ;;
				*) echo "mount -t tmpfs -o mode=1777 none '$p'" ;;
				esac
			done
		fi
		case "$(unit_get "$f" Service ProtectHome | tail -n 1)" in
		yes | true | 1 | tmpfs)
			for p in /home /root /run/user; do
				[ -d "$p" ] || continue
				# What systemd would hide must not hold what this test runs.
				case "$d/ $HOTCOLD" in
				"$p"/* | *" $p"/*) echo "note: $p holds the test; not hidden" >&2 ;;
				*) echo "mount -t tmpfs -o mode=000,size=4k none '$p'" ;;
				esac
			done
			;;
		read-only)
			for p in /home /root /run/user; do
				[ -d "$p" ] && echo "mount --bind '$p' '$p' && mount -o remount,bind,ro '$p'"
			done
			;;
		esac
	} >"$mounts"
	cat >"$d/sandbox.sh" <<EOF
#!/bin/sh
# Generated from $f by tests/contrib/lib.sh: runs "\$@" in that unit's sandbox (in part).
exec $unshare sh -c '. "\$0"; exec "\$@"' '$mounts' $setpriv "\$@"
EOF
	chmod +x "$d/sandbox.sh"
}

# syscalls_allowed FILE: the unit's SystemCallFilter= as systemd builds it: the first
# assignment decides allow-list or deny-list mode (an allow list starts from @default), each
# later one adds or removes in order. Prints "allow" or "deny", then the set, one a line.
syscalls_allowed() {
	local filters
	filters=$(unit_get "$1" Service SystemCallFilter)
	[ -n "$filters" ] || { echo deny; return; }
	systemd-analyze syscall-filter 2>/dev/null | awk -v filters="$filters" '
	/^@/ { g = $1; next }
	/^[ \t]*#/ || NF == 0 { next }
	{ members[g] = members[g] " " $1 }
	function expand(x, out,   n, a, i) {
		if (x in seen) return
		seen[x] = 1
		if (x ~ /^@/) {
			if (!(x in members)) { print "unknown group " x > "/dev/stderr"; exit 1 }
			n = split(members[x], a, " ")
			for (i = 1; i <= n; i++) expand(a[i], out)
		} else
			out[x] = 1
	}
	END {
		nl = split(filters, lines, "\n")
		for (l = 1; l <= nl; l++) {
			line = lines[l]
			inv = (line ~ /^~/)
			sub(/^~/, "", line)
			if (l == 1) {
				allow = !inv
				if (allow) { delete seen; expand("@default", set) }
			}
			n = split(line, items, " ")
			for (i = 1; i <= n; i++) {
				delete seen; delete got
				expand(items[i], got)
				for (s in got) {
					if (inv == !allow) set[s] = 1
					else delete set[s]
				}
			}
		}
		print allow ? "allow" : "deny"
		for (s in set) print s
	}'
}

# strace_calls LOG: the system calls a `strace -f -o LOG` run made, one a line, sorted.
strace_calls() {
	sed -E 's/^[0-9]+ +//; s/^<\.\.\. ([a-z0-9_]+) resumed>.*/\1/; s/^([a-z0-9_]+)\(.*/\1/' "$1" |
		grep -E '^[a-z_][a-z0-9_]*$' | sort -u
}

# check_syscalls FILE LOG: fails when the strace LOG shows a call the unit's
# SystemCallFilter= would refuse, or a socket(2) family RestrictAddressFamilies= would.
check_syscalls() {
	local f=$1 log=$2 mode bad calls fams allowed allowed_fams fam
	calls=$(strace_calls "$log")
	[ "$(printf '%s\n' "$calls" | grep -c .)" -gt 20 ] || fail "$log: strace saw almost nothing"
	allowed=$(syscalls_allowed "$f") || fail "$f: SystemCallFilter= cannot be read"
	mode=$(printf '%s\n' "$allowed" | head -n 1)
	allowed=$(printf '%s\n' "$allowed" | tail -n +2 | sort -u)
	if [ "$mode" = allow ]; then
		[ "$(printf '%s\n' "$allowed" | grep -c .)" -gt 100 ] ||
			fail "$f: an allow list of only $(printf '%s\n' "$allowed" | grep -c .) calls"
		bad=$(comm -23 <(printf '%s\n' "$calls") <(printf '%s\n' "$allowed"))
	else
		bad=$(comm -12 <(printf '%s\n' "$calls") <(printf '%s\n' "$allowed"))
	fi
	[ -z "$bad" ] || fail "$f: SystemCallFilter= would kill hotcold at: $(echo $bad)"
	echo "$f: all $(printf '%s\n' "$calls" | grep -c .) system calls pass SystemCallFilter="

	allowed_fams=$(unit_get "$f" Service RestrictAddressFamilies | tr '\n' ' ')
	fams=$(sed -nE 's/^([0-9]+ +)?socket\((AF_[A-Z0-9]+),.*/\2/p' "$log" | sort -u)
	[ -n "$allowed_fams" ] || return 0
	case "$allowed_fams" in ~*) fail "$f: inverted RestrictAddressFamilies= is not handled" ;; esac
	for fam in $fams; do
		case " $allowed_fams " in
		*" $fam "*) ;;
		*) fail "$f: RestrictAddressFamilies=$allowed_fams refuses socket($fam, ...)" ;;
		esac
	done
	echo "$f: socket families used: $(echo ${fams:-none}); allowed: $allowed_fams"
}

# cron_command LINE: what cron runs for a crontab command field: a backslash before % or \
# is removed; the first unescaped % ends the command (the rest is its standard input).
cron_command() {
	printf '%s' "$1" | awk '
	{
		s = $0; out = ""
		for (i = 1; i <= length(s); i++) {
			c = substr(s, i, 1)
			if (c == "\\") {
				n = substr(s, i + 1, 1)
				if (n == "%" || n == "\\") { out = out n; i++; continue }
				out = out c
				continue
			}
			if (c == "%") break
			out = out c
		}
		print out
	}'
}
