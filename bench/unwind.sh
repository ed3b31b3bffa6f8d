#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench/unwind.sh: what DWARF unwinding costs, against frame pointers and against
# `perf record --call-graph dwarf`, side by side in one run (docs/benchmarks.md#dwarf-unwinding).
#
# A thin front for bench/run.sh: the overhead measurement only, at 99 and 999 Hz, on the
# workload without frame pointers (`cpuwork -l`: its hot path two frames below glibc's qsort(),
# built with -fomit-frame-pointer), with the configurations
#
#   none           the workload alone
#   hotcold        hotcold record --unwind fp (frame pointers)
#   hotcold-dwarf  hotcold record --unwind dwarf (16K copies, 32M/s budget: the defaults)
#   perf-dwarf     perf record -a --call-graph dwarf (8K copies, perf's default), then
#                  `perf script` over its perf.data, timed: perf unwinds there
#   perf-dwarf16k  the same with --call-graph dwarf,16384: hotcold's --stack-copy default
#
# interleaved, rotated by round and rate. The summary's "Stack copies and unwinding" table has
# the bytes copied, the copies over budget, hotcold's unwinder throughput (stacks/s, frames per
# stack), and perf's post-processing time.
#
# Usage: bench/unwind.sh [bench/run.sh options]   (as root; under flock /tmp/hc-e2e.lock here)
#   Defaults: --rounds 5 --seconds 8 --freqs "99 999"
#             --configs "none hotcold hotcold-dwarf perf-dwarf perf-dwarf16k"
#   About 16 minutes on the 2-CPU VM, most of it perf script over 16K copies at 999 Hz.
#   --workload fp measures the frame-pointer build instead. The time-to-disk measurement is
#   always skipped (--todisk-rounds 0).
set -uo pipefail
exec "$(dirname "$0")/run.sh" --workload nofp --rounds 5 --seconds 8 --freqs "99 999" \
	--configs "none hotcold hotcold-dwarf perf-dwarf perf-dwarf16k" "$@" --todisk-rounds 0
