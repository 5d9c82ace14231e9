#!/usr/bin/env python3
"""One machine's bench table: every goal of the cost tables, measured in one run.

Reads what benches/run.sh left in a run directory (criterion's estimates, the logs of
the `scale`, `export_memory` and `stop` benches), prints a Markdown table headed by the
machine's CPU, and writes it (and the raw figures as JSON) where asked.

usage: report.py RUN_DIR [--commit C] [--md FILE] [--json FILE]
"""

import argparse
import glob
import json
import os
import platform
import re
import sys


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def machine():
    cpuinfo = read("/proc/cpuinfo")
    model = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
    clock = read("/sys/devices/system/clocksource/clocksource0/current_clocksource").strip()
    return {
        "host": platform.node(),
        "cpu": model.group(1).strip() if model else platform.processor() or "unknown",
        "cores": os.cpu_count(),
        "clocksource": clock or "unknown",
        "kernel": platform.release(),
    }


def estimates(run_dir):
    """{(group, id): (median ns, low, high)} from criterion's files."""
    out = {}
    for bench in glob.glob(os.path.join(run_dir, "criterion", "*", "*", "new", "benchmark.json")):
        meta = json.loads(read(bench))
        est = json.loads(read(os.path.join(os.path.dirname(bench), "estimates.json")))
        median = est["median"]
        ci = median["confidence_interval"]
        key = (meta["group_id"], meta["function_id"])
        out[key] = (median["point_estimate"], ci["lower_bound"], ci["upper_bound"])
    return out


def interleaved(run_dir):
    """{(group, case or comparison): (median, q1, q3)} from the benches' interleaved
    rounds (support/interleaved.rs), which every log prints as
    `interleaved GROUP NAME median q1 q3`; and {(group, case): ns} of the fastest
    round, where a bench prints `interleaved-fastest GROUP NAME ns` (the exports)."""
    out, fastest = {}, {}
    for log in glob.glob(os.path.join(run_dir, "*.log")):
        for line in read(log).splitlines():
            parts = line.split()
            if len(parts) == 6 and parts[0] == "interleaved":
                out[(parts[1], parts[2])] = tuple(float(x) for x in parts[3:])
            elif len(parts) == 4 and parts[0] == "interleaved-fastest":
                fastest[(parts[1], parts[2])] = float(parts[3])
    return out, fastest


def scale_rows(run_dir):
    rows = []
    for line in read(os.path.join(run_dir, "scale.log")).splitlines():
        parts = line.split()
        if len(parts) == 9 and parts[0].isdigit():
            events, stop_s, stop_ns, write_s, write_ns, bufs, peak, profile, file_b = parts
            rows.append({
                "events": int(events), "stop_s": float(stop_s), "stop_ns_per_event": float(stop_ns),
                "write_s": float(write_s), "write_ns_per_event": float(write_ns),
                "buffers_b": float(bufs), "stop_peak_b": float(peak),
                "profile_b": float(profile), "file_b": float(file_b),
            })
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--commit", default="unknown")
    ap.add_argument("--md")
    ap.add_argument("--json")
    args = ap.parse_args()

    est = estimates(args.run_dir)
    inter, fastest = interleaved(args.run_dir)
    m = machine()

    def ns(group, bench, per=1):
        v = est.get((group, bench))
        return None if v is None else tuple(x / per for x in v)

    lines = []
    add = lines.append
    add(f"### {m['cpu']} ({m['cores']} cores, clocksource {m['clocksource']})")
    add("")
    add(f"Host `{m['host']}`, kernel {m['kernel']}, prof {args.commit}. Median of each "
        "criterion bench [its 95% interval]; every ratio is between figures of one run. "
        "Where a goal was also measured in interleaved rounds (each case one batch per "
        "round, in turn), the goal is read from those: the median of the per-round ratio "
        "or difference [its quartiles], with criterion's figures after it.")
    add("")
    add("| goal | measured | target | met |")
    add("|---|---|---|---|")
    figures = {"machine": m, "commit": args.commit, "goals": [], "criterion": {},
               "interleaved": {f"{g}/{n}": v for (g, n), v in sorted(inter.items())}}
    for (g, b), v in sorted(est.items()):
        figures["criterion"][f"{g}/{b}"] = v

    def goal(name, value, target, ok, shown):
        met = "n/a" if value is None else ("yes" if ok(value) else "**no**")
        add(f"| {name} | {shown if value is not None else 'not measured'} | {target} | {met} |")
        figures["goals"].append({"goal": name, "value": value, "target": target, "met": met})

    def fmt(v):
        return f"{v[0]:.1f} ns [{v[1]:.1f}–{v[2]:.1f}]"

    def prefer_rounds(value, shown, rounds, spec, unit):
        """The goal's value from interleaved rounds where a bench printed them, with
        criterion's figures after it; criterion's alone where it did not."""
        if not rounds:
            return value, shown
        med, q1, q3 = (format(x, spec) for x in rounds)
        return rounds[0], f"{med}{unit} [{q1}–{q3}] interleaved; criterion {shown}"

    def ratio(a, b, name, target, ok, a_name, b_name, rounds=None):
        if a is None or b is None:
            goal(name, None, target, ok, "")
            return
        r = a[0] / b[0]
        shown = f"{r:.2f}× ({a_name} {a[0]:.1f} / {b_name} {b[0]:.1f} ns)"
        value, shown = prefer_rounds(r, shown, rounds, ".2f", "×")
        goal(name, value, target, ok, shown)

    def added(a, b, name, target, ok, b_name, rounds=None):
        if a is None or b is None:
            goal(name, None, target, ok, "")
            return
        d = a[0] - b[0]
        shown = f"{d:+.1f} ns ({a[0]:.1f} vs {b_name} {b[0]:.1f})"
        value, shown = prefer_rounds(d, shown, rounds, "+.1f", " ns")
        goal(name, value, target, ok, shown)

    on = ns("annotation", "prof_on")
    ratio(on, ns("annotation", "two_clock_reads"), "`trace!` recording ÷ two clock reads",
          "≤ 1.15×", lambda r: r <= 1.15, "trace!", "clock×2",
          inter.get(("annotation", "prof_on÷two_clock_reads")))
    ratio(ns("annotation", "fastrace_on"), on, "fastrace ÷ `trace!` (recording)", "≥ 2×",
          lambda r: r >= 2, "fastrace", "trace!",
          inter.get(("annotation", "fastrace_on÷prof_on")))
    ratio(ns("annotation", "puffin_on"), on, "puffin ÷ `trace!` (recording)", "≥ 3×",
          lambda r: r >= 3, "puffin", "trace!", inter.get(("annotation", "puffin_on÷prof_on")))
    added(ns("annotation", "prof_on_one_field"), on, "one int field adds", "≤ 3 ns",
          lambda d: d <= 3, "trace!", inter.get(("annotation", "prof_on_one_field-prof_on")))
    noop = ns("layer", "registry+noop_layer")
    added(ns("layer", "registry+prof_off"), noop, "`ProfilerLayer` off, over a no-op layer",
          "≤ 5 ns", lambda d: d <= 5, "no-op layer",
          inter.get(("layer", "registry+prof_off-registry+noop_layer")))
    added(ns("layer", "registry+prof_on"), noop, "`ProfilerLayer` recording, over a no-op layer",
          "≤ 80 ns", lambda d: d <= 80, "no-op layer",
          inter.get(("layer", "registry+prof_on-registry+noop_layer")))
    ratio(ns("instrument", "prof_on"), ns("instrument", "trace_on"),
          "`#[prof::instrument]` ÷ `trace!` with the same field", "≤ 1.10×",
          lambda r: r <= 1.10, "instrument", "trace!",
          inter.get(("instrument", "prof_on÷trace_on")))
    ratio(ns("instrument_compiled_out", "prof_compiled_out"),
          ns("instrument_compiled_out", "empty_loop"),
          "`#[prof::instrument]` compiled out (no `enable`) ÷ the bare function", "≤ 1.05×",
          lambda r: r <= 1.05, "compiled out", "empty loop",
          inter.get(("instrument_compiled_out", "prof_compiled_out÷empty_loop")))
    sys_alloc = ns("objects", "system_alloc")
    track = ns("objects", "tracking_alloc_on")
    rounds = inter.get(("objects", "tracking_alloc_on÷system_alloc"))
    if sys_alloc and track:
        r = track[0] / sys_alloc[0]
        spread = f"{track[1] / sys_alloc[2]:.2f}–{track[2] / sys_alloc[1]:.2f}"
        shown = f"{r:.2f}× (spread {spread}; {track[0]:.0f} / {sys_alloc[0]:.0f} ns per 64)"
        r, shown = prefer_rounds(r, shown, rounds, ".2f", "×")
        goal("`TrackingAllocator` recording ÷ `System`", r, "≤ 1.15×", lambda r: r <= 1.15,
             shown)
    else:
        goal("`TrackingAllocator` recording ÷ `System`", None, "≤ 1.15×", None, "")
    callback = ns("gpu_tracer", "launch_callback")
    cb_rounds = inter.get(("gpu_tracer", "launch_callback"))
    if callback:
        shown = f"{callback[0]:.1f} ns"
        value, shown = prefer_rounds(callback[0], shown, cb_rounds, ".1f", " ns")
        goal("GPU tracer's launch callback (entry and exit)", value, "≤ 60 ns",
             lambda v: v <= 60, shown)
    else:
        goal("GPU tracer's launch callback (entry and exit)", None, "≤ 60 ns", None, "")
    added(ns("gpu_tracer", "trace_on_gpu_hook"), ns("gpu_tracer", "trace_on"),
          "the GPU tracer's scope stack adds to `trace!`", "≤ 3 ns", lambda d: d <= 3,
          "trace!", inter.get(("gpu_tracer", "trace_on_gpu_hook-trace_on")))
    per = 1_000_000

    def export(benches):
        """An export goal's ns per event, summed over `benches`: the median of the
        interleaved rounds where the bench printed them (with its quartiles and fastest
        round), else criterion's; and how it is shown."""
        rounds = [inter.get(("export_1M_events", b)) for b in benches]
        crit = [ns("export_1M_events", b, per) for b in benches]
        crit_shown = ("criterion " + " + ".join(f"{c[0]:.0f}" for c in crit)
                      if all(crit) else "")
        if all(rounds):
            med = sum(r[0] for r in rounds)
            parts = " + ".join(f"{r[0]:.0f}" for r in rounds)
            quick = [fastest.get(("export_1M_events", b)) for b in benches]
            quick = f", fastest round {sum(quick):.0f}" if all(quick) else ""
            split = f" ({parts})" if len(benches) > 1 else ""
            return med, (f"{med:.0f} ns{split} [{sum(r[1] for r in rounds):.0f}–"
                         f"{sum(r[2] for r in rounds):.0f}] interleaved{quick}; {crit_shown}")
        if all(crit):
            return sum(c[0] for c in crit), f"{sum(c[0] for c in crit):.0f} ns ({crit_shown})"
        return None, ""

    value, shown = export(["collect", "encode_and_write_atomically"])
    goal("stop → `.xplane.pb`, per event (collect + encode and write)", value, "≤ 120 ns",
         lambda v: v <= 120, shown)
    for bench, name, target in [("perfetto", "Perfetto", 200), ("chrome_json", "Chrome JSON", 200),
                                ("chrome_json_gz", "Chrome JSON, gzipped", 350)]:
        value, shown = export([bench])
        goal(f"{name}, per event", value, f"≤ {target} ns", lambda x, t=target: x <= t, shown)

    d = ns("diff", "two 1M-event profiles, from files", 1e9)
    goal("`prof-diff` of two 1M-event profiles, from files (s)", d and d[0], "≤ 2 s",
         lambda s: s <= 2, f"{d[0]:.2f} s [{d[1]:.2f}–{d[2]:.2f}]" if d else "")

    rows = scale_rows(args.run_dir)
    figures["scale"] = rows
    if rows:
        biggest = rows[-1]
        goal("collected profile, bytes per event", biggest["profile_b"], "≤ 40",
             lambda b: b <= 40, f"{biggest['profile_b']:.1f} ({biggest['events']:,} events)")
    else:
        goal("collected profile, bytes per event", None, "≤ 40", None, "")
    if rows:
        add("")
        add("Scale: one thread records N events, then `stop` collects them and the profile is "
            "written as `.xplane.pb` (bytes per event: thread buffers, the most resident memory "
            "stop adds, what the profile keeps, the file).")
        add("")
        add("| events | stop (s) | stop ns/event | write (s) | buffers B | stop peak B | profile B | file B |")
        add("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            add(f"| {r['events']:,} | {r['stop_s']:.2f} | {r['stop_ns_per_event']:.0f} | "
                f"{r['write_s']:.2f} | {r['buffers_b']:.1f} | {r['stop_peak_b']:.1f} | "
                f"{r['profile_b']:.1f} | {r['file_b']:.1f} |")
        first, last = rows[0], rows[-1]
        if last["events"] > first["events"]:
            growth = last["stop_ns_per_event"] / first["stop_ns_per_event"]
            add("")
            add(f"Stop time per event at {last['events']:,} is {growth:.2f}× that at "
                f"{first['events']:,} (1.00× is linear).")
    mem = read(os.path.join(args.run_dir, "export_memory.log")).strip()
    if mem:
        add("")
        add("Exporters' memory (10M events):")
        add("")
        add("```")
        add(mem)
        add("```")

    # profiler-cuda's `stop` bench: three runs a size; the last of each, warm.
    stops = {}
    for line in read(os.path.join(args.run_dir, "stop.log")).splitlines():
        if "launches: stop" in line:
            stops[line.split()[0]] = line.strip()
    if stops:
        add("")
        add("A GPU session's stop, CPU side (profiler-cuda's `stop` bench: the launches' "
            "calls read back, made into records, put on the XSpace beside a kernel each; "
            "CUPTI's flush and buffers left out):")
        add("")
        add("```")
        for line in stops.values():
            add(line)
        add("```")

    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
