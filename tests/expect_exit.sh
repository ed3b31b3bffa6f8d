#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-only
#
# expect_exit.sh STATUS MESSAGE COMMAND [ARG...]: run COMMAND, pass only if it exits with
# exactly STATUS and its standard error contains MESSAGE (a fixed string). For the tests that
# check a refusal: meson's should_fail passes on any non-zero exit, a crash or a sanitizer's
# report (LeakSanitizer exits 23, abort_on_error 134) included.
[ $# -ge 3 ] || { echo "usage: expect_exit.sh STATUS MESSAGE COMMAND [ARG...]" >&2; exit 2; }
want=$1 msg=$2
shift 2
err=$(mktemp) || exit 1
trap 'rm -f "$err"' EXIT
rc=0
"$@" 2>"$err" || rc=$?
cat "$err" >&2
if [ "$rc" -ne "$want" ]; then
	echo "FAIL: $1 exited $rc, expected $want" >&2
	exit 1
fi
if ! grep -qF -- "$msg" "$err"; then
	echo "FAIL: $1 did not say \"$msg\"" >&2
	exit 1
fi
echo "ok: $1 exited $rc with \"$msg\""
