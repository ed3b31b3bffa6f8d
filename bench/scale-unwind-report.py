#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""bench/scale-unwind-report.py OUT [ENTRY...]: the table of a bench/scale-unwind.sh run.

ENTRY: more names of an outermost frame that counts as the thread's entry (without libc's
debug information there, clone3 is a frame named after its place: libc.so.6+0x1098e1 on
Debian 12's libc 2.36-9+deb12u14, as `addr2line` on its debug file says here).

Per mode, medians over rounds: cpuwork's throughput per CPU-second against `none` (cpuwork
alone), the share of cpuwork's on-CPU time (the busiest process) whose stack reaches its
threads' entry (the outermost user frame clone3, clone, start_thread or _start), frames per
stack, the
stacks hotcold took with frame pointers (copy: over the copy budget; table: not published
yet), [truncated] stacks, hc_sample's BPF time per run (kernel bpf_stats), and hotcold's CPU over
the middle of its window (its processes' user and system time).
"""
import glob
import gzip
import json
import os
import re
import statistics
import sys

sys.setrecursionlimit(20000)
ENTRY = {"clone3", "clone", "__clone", "start_thread", "_start"}


def cw_rate(path):
    try:
        m = re.search(r"units_per_cpu_s=([0-9.]+)", open(path).read())
        return float(m.group(1)) if m else None
    except OSError:
        return None


def completeness(path):
    """(complete share, frames per stack, truncated share) of cpuwork's on-CPU time."""
    d = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    on = ok = tr = 0
    frames = 0.0

    def depth(n):
        best, d_ = n, 0
        while best.get("children"):
            best = max(best["children"], key=lambda c: c.get("on_cpu_ns", 0))
            d_ += 1
        return d_

    procs = d["flamegraph"].get("children", [])
    # cpuwork is the busiest process (under bench/bundle.sh's loader its name is the loader's)
    for p in sorted(procs, key=lambda p: -p.get("on_cpu_ns", 0))[:1]:
        for t in p.get("children", []):
            for f in t.get("children", []):
                a = f.get("on_cpu_ns", 0)
                on += a
                if f.get("kind") == "user" and f.get("name") in ENTRY:
                    ok += a
                if f.get("name") == "[truncated]":
                    tr += a
                frames += a * (1 + depth(f))
    u = d.get("unwind", {})
    return (ok / on if on else None, frames / on if on else None, tr / on if on else None, u)


def sample_ns(path):
    try:
        progs = json.load(open(path))
    except (OSError, ValueError):
        return None
    t = sum(p.get("run_time_ns", 0) for p in progs if p.get("name") == "hc_sample")
    c = sum(p.get("run_cnt", 0) for p in progs if p.get("name") == "hc_sample")
    return t / c if c else None


def cpu_share(path):
    """hotcold's CPU in % of a core over the middle of its window (bench/scale-unwind.sh)."""
    try:
        ticks, t0, t1 = open(path).read().split()
        return int(ticks) / 100 / (float(t1) - float(t0)) * 100
    except (OSError, ValueError, ZeroDivisionError):
        return None


def med(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def main():
    out = sys.argv[1]
    ENTRY.update(sys.argv[2:])
    rows = {}
    for cw in sorted(glob.glob(os.path.join(out, "r*-*.cw"))):
        m = re.match(r"r(\d+)-([\w-]+)\.cw$", os.path.basename(cw))
        r, mode = int(m.group(1)), m.group(2)
        row = {"rate": cw_rate(cw)}
        js = cw[:-3] + ".json"
        if not os.path.exists(js):
            js += ".gz"
        if os.path.exists(js):
            row["complete"], row["frames"], row["truncated"], u = completeness(js)
            try:  # serve: its unwind counters since it started, from /api/status
                u = json.load(open(cw[:-3] + ".status.json")).get("unwind", u)
            except (OSError, ValueError):
                pass
            us = u.get("user_stacks", {})
            row["fp"] = us.get("frame_pointers")
            row["copies_over"] = u.get("copies", {}).get("over_budget")
            t = u.get("tables", {})
            row["walks"] = t.get("walks")
            row["no_process"] = t.get("no_process")
            row["bpf_ns"] = sample_ns(cw[:-3] + ".bpf.json")
            row["cpu"] = cpu_share(cw[:-3] + ".cpu")
        rows.setdefault(mode, {})[r] = row
    machine = open(os.path.join(out, "machine.txt")).read().split("\n")[0]
    base = {r: v["rate"] for r, v in rows.get("none", {}).items()}
    print(f"Machine: {machine}\n")
    print("| unwinding | cpuwork kept (per CPU-s, vs none) | stacks complete | frames per stack "
          "| [truncated] | frame-pointer stacks | copies over budget | table walks | hc_sample ns "
          "| hotcold CPU % of a core |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for mode in ("none", "fp", "dwarf", "copy", "table", "serve-fp", "serve-copy", "serve-table"):
        if mode not in rows:
            continue
        rs = rows[mode]
        kept = med([v["rate"] / base[r] for r, v in rs.items() if v.get("rate") and base.get(r)])

        def f(key, fmt):
            x = med([v.get(key) for v in rs.values()])
            return "–" if x is None else fmt.format(x)
        print(f"| {mode} | {'–' if kept is None else f'{kept:.3f}'} | {f('complete', '{:.1%}')} "
              f"| {f('frames', '{:.1f}')} | {f('truncated', '{:.1%}')} | {f('fp', '{:.0f}')} "
              f"| {f('copies_over', '{:.0f}')} | {f('walks', '{:.0f}')} | {f('bpf_ns', '{:.0f}')} "
              f"| {f('cpu', '{:.2f}')} |")


if __name__ == "__main__":
    main()
