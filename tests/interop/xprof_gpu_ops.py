#!/usr/bin/env python3
"""Check, through xprof's own converters, that XProf knows which op each GPU kernel
belongs to, and that the host lines hold only the CUDA API calls that matter.

Usage: python tests/interop/xprof_gpu_ops.py --xplane PATH \
           [--expect-op KERNEL=OP_NAME ...]          kernel_stats: every row of KERNEL
                                                     has op_name OP_NAME
           [--expect-kernel-under KERNEL=OP_NAME ...] kernel_stats: a row of KERNEL has
                                                     op_name OP_NAME (a kernel run by
                                                     several ops)
           [--expect-framework-op OP_NAME[=TYPE] ...] framework_op_stats: a Device row
                                                     for OP_NAME (of type TYPE)
           [--expect-derived-line LINE[=EVENT,...] ...]  trace viewer: a line of the GPU
                                                     plane named LINE... (XProf derives
                                                     "Framework Name Scope - from #N"
                                                     and "Framework Ops - from #N" from
                                                     the kernels' tf_op), holding events
                                                     named EVENT
           [--absent-host-event NAME ...]            trace viewer: no /host:CPU event
                                                     named NAME
           [--expect-host-event NAME ...]            trace viewer: a /host:CPU event
                                                     named NAME
           [--min-overview KEY=VALUE ...]            overview_page's Performance Summary
                                                     property KEY (e.g. infeed_time_ms_avg,
                                                     device_tf_op_percent) >= VALUE
           [--max-one-ended-flows N]                 trace_viewer@: at most N flow arrows
                                                     with one end

The file is copied into a temporary logdir first (xprof writes caches beside what it
reads), and every tool runs with use_saved_result=False. The Performance Summary is
printed whatever is asked. Exit 0 when every check passes; 1 when one fails; 2 on bad
input or when xprof is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from collections import Counter, defaultdict

TRACE_VIEWER_OPTIONS = {"resolution": 8000, "full_dma": False}

# The Performance Summary of the overview page, in the order XProf's UI shows it.
SUMMARY_KEYS = [
    ("steptime_ms_average", "Average step time"),
    ("infeed_time_ms_avg", "Input"),
    ("outfeed_time_ms_avg", "Output"),
    ("device_compute_time_ms_avg", "Device compute"),
    ("device_to_device_time_ms_avg", "Device to device"),
    ("device_collectives_time_ms_avg", "Device collectives"),
    ("kernel_launch_time_ms_avg", "Kernel launch"),
    ("host_compute_time_ms_avg", "Host compute"),
    ("compile_time_ms_avg", "Compilation"),
    ("other_time_ms_avg", "All others"),
    ("device_tf_op_percent", "Framework ops on device"),
    ("host_tf_op_percent", "Framework ops on host"),
]


def pair(spec: str, flag: str) -> tuple[str, str | None]:
    if "=" in spec:
        key, value = spec.split("=", 1)
        return key, value
    return spec, None


def table_rows(table: dict) -> list[dict]:
    ids = [c["id"] for c in table.get("cols", [])]
    return [dict(zip(ids, (c.get("v") if isinstance(c, dict) else c for c in r["c"])))
            for r in table.get("rows", [])]


def number(text) -> float:
    return float(str(text).strip().rstrip("%") or 0)


def convert(path: str, tool: str) -> bytes | str | None:
    from xprof.convert import raw_to_tool_data

    params: dict = {"use_saved_result": False}
    if tool.startswith("trace_viewer"):
        params["trace_viewer_options"] = dict(TRACE_VIEWER_OPTIONS)
    data, _ = raw_to_tool_data.xspace_to_tool_data([path], tool, params)
    return data


def trace_events(raw) -> tuple[dict, dict, list]:
    doc = json.loads(raw)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    processes, threads = {}, {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "M":
            name = (ev.get("args") or {}).get("name", "")
            if ev.get("name") == "process_name":
                processes[ev.get("pid")] = name
            elif ev.get("name") == "thread_name":
                threads[(ev.get("pid"), ev.get("tid"))] = name
    return processes, threads, [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]


def one_ended_flows(raw) -> tuple[int, int]:
    doc = json.loads(raw)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    outs, ins = set(), set()
    for ev in events:
        if isinstance(ev, dict) and "bind_id" in ev:
            if ev.get("flow_out"):
                outs.add(ev["bind_id"])
            if ev.get("flow_in"):
                ins.add(ev["bind_id"])
    return len(outs & ins), len(outs ^ ins)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xplane", required=True)
    ap.add_argument("--expect-op", nargs="+", default=[], metavar="KERNEL=OP_NAME")
    ap.add_argument("--expect-kernel-under", nargs="+", default=[], metavar="KERNEL=OP_NAME")
    ap.add_argument("--expect-framework-op", nargs="+", default=[], metavar="OP_NAME[=TYPE]")
    ap.add_argument("--expect-derived-line", nargs="+", default=[], metavar="LINE[=EVENT,...]")
    ap.add_argument("--absent-host-event", nargs="+", default=[], metavar="NAME")
    ap.add_argument("--expect-host-event", nargs="+", default=[], metavar="NAME")
    ap.add_argument("--min-overview", nargs="+", default=[], metavar="KEY=VALUE")
    ap.add_argument("--max-one-ended-flows", type=int, default=None, metavar="N")
    args = ap.parse_args()
    if not os.path.isfile(args.xplane):
        print(f"xprof_gpu_ops: no such file: {args.xplane}", file=sys.stderr)
        return 2
    for spec in args.expect_op + args.expect_kernel_under + args.min_overview:
        if "=" not in spec:
            print(f"xprof_gpu_ops: {spec!r} needs the form KEY=VALUE", file=sys.stderr)
            return 2
    try:
        import xprof.convert.raw_to_tool_data  # noqa: F401
    except ImportError as e:
        print(f"xprof_gpu_ops: xprof is not installed ({e})", file=sys.stderr)
        return 2

    outputs: dict[str, bytes | str | None] = {}
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "plugins", "profile", "run")
        os.makedirs(run)
        path = shutil.copy(args.xplane, run)
        for tool in ("kernel_stats", "framework_op_stats", "trace_viewer", "trace_viewer@",
                     "overview_page"):
            outputs[tool] = convert(path, tool)
    failures: list[str] = []
    for tool, data in outputs.items():
        if data is None:
            failures.append(f"the {tool} conversion failed")

    # ---- kernel_stats: op_name per kernel ----
    if outputs["kernel_stats"] is not None:
        rows = table_rows(json.loads(outputs["kernel_stats"]))
        by_kernel: dict[str, set] = defaultdict(set)
        for r in rows:
            by_kernel[r["kernel_name"]].add(r.get("op_name") or "")
        print(f"kernel_stats: {len(rows)} rows; op_name per kernel: "
              f"{ {k: sorted(v) for k, v in sorted(by_kernel.items())} }")
        for spec in args.expect_op:
            kernel, op = spec.split("=", 1)
            got = by_kernel.get(kernel)
            ok = got == {op}
            print(f"  kernel {kernel}: op_name {sorted(got) if got else '(no row)'}: "
                  f"{'OK' if ok else 'expected ' + repr(op)}")
            if not ok:
                failures.append(f"kernel_stats: {kernel} has op_name {sorted(got or [])}, not "
                                f"{op!r} (XProf takes it from the kernel's `tf_op` stat, "
                                "'scope/name:type')")
        for spec in args.expect_kernel_under:
            kernel, op = spec.split("=", 1)
            got = by_kernel.get(kernel) or set()
            print(f"  kernel {kernel} under {op!r}: {'OK' if op in got else 'MISSING'}")
            if op not in got:
                failures.append(f"kernel_stats: no row of {kernel} under op {op!r} (its rows: "
                                f"{sorted(got)}; XProf needs `kernel_details` to take an event "
                                "for a kernel, and its `tf_op` for the op)")

    # ---- framework_op_stats: device rows ----
    if outputs["framework_op_stats"] is not None:
        doc = json.loads(outputs["framework_op_stats"])
        tables = doc if isinstance(doc, list) else [doc]
        rows = table_rows(tables[0]) if tables else []
        device = [r for r in rows if r.get("host_or_device") == "Device" and r.get("type") != "IDLE"]
        print("framework_op_stats device rows: "
              + ", ".join(f"{r['operation']} ({r['type']}, {r['occurrences']:g}x)" for r in device)
              if device else "framework_op_stats device rows: (none but IDLE)")
        for spec in args.expect_framework_op:
            op, want_type = pair(spec, "--expect-framework-op")
            match = [r for r in device if r.get("operation") == op and
                     (want_type is None or r.get("type") == want_type) and
                     number(r.get("occurrences", 0)) > 0]
            print(f"  framework op {spec}: {'OK' if match else 'MISSING'}")
            if not match:
                failures.append(f"framework_op_stats has no Device row for {spec}")

    # ---- trace viewer: derived GPU lines, host events ----
    if outputs["trace_viewer"] is not None:
        processes, threads, events = trace_events(outputs["trace_viewer"])
        per_line: dict[tuple, Counter] = defaultdict(Counter)
        for ev in events:
            key = (processes.get(ev.get("pid"), ""), threads.get((ev.get("pid"), ev.get("tid")), ""))
            per_line[key][ev.get("name")] += 1
        gpu_lines = {t: c for (p, t), c in per_line.items() if p.startswith("/device:GPU:")}
        host = Counter()
        for (p, _), c in per_line.items():
            if p == "/host:CPU":
                host.update(c)
        print("GPU plane lines: " + "; ".join(
            f"{t!r}: {dict(c.most_common(6))}" for t, c in sorted(gpu_lines.items())))
        api = {n: k for n, k in host.items() if n.startswith("cu")}
        print(f"host CUDA API events: {sum(api.values())} under {len(api)} names: "
              f"{dict(sorted(api.items()))}")
        for spec in args.expect_derived_line:
            line, names = pair(spec, "--expect-derived-line")
            found = {t: c for t, c in gpu_lines.items() if t.startswith(line)}
            missing = [n for n in (names.split(",") if names else [])
                       if not any(n in c for c in found.values())]
            ok = bool(found) and not missing
            print(f"  GPU line {line!r}: {'OK' if ok else 'MISSING'}"
                  + (f" (no event named {missing})" if found and missing else ""))
            if not ok:
                failures.append(f"no GPU plane line {line!r}" + (f" with events {missing}" if found else "")
                                + " (XProf derives it from the kernels' `tf_op` stats, unless the "
                                "file already carries `group_id`)")
        for name in args.absent_host_event:
            if host.get(name):
                failures.append(f"{host[name]} host events named {name!r}: it launches nothing "
                                "and should be left out by default")
            print(f"  host event {name!r}: {host.get(name, 0)} (expected none)")
        for name in args.expect_host_event:
            if not host.get(name):
                failures.append(f"no host event named {name!r}")
            print(f"  host event {name!r}: {host.get(name, 0)}")

    # ---- trace_viewer@: flows ----
    if args.max_one_ended_flows is not None and outputs["trace_viewer@"] is not None:
        both, one = one_ended_flows(outputs["trace_viewer@"])
        print(f"trace_viewer@ flows: {both} with both ends, {one} with one end")
        if one > args.max_one_ended_flows:
            failures.append(f"{one} flow arrows with one end (at most {args.max_one_ended_flows}): "
                            "a host API event carries a correlation_id that no device event has")

    # ---- overview_page: Performance Summary ----
    if outputs["overview_page"] is not None:
        props: dict = {}
        for t in json.loads(outputs["overview_page"]):
            if isinstance(t, dict):
                props.update(t.get("p") or {})
        print("overview Performance Summary: " + ", ".join(
            f"{label} {props.get(key, '?')}" for key, label in SUMMARY_KEYS))
        for spec in args.min_overview:
            key, want = spec.split("=", 1)
            if key not in props:
                failures.append(f"overview_page has no property {key!r}")
                continue
            ok = number(props[key]) >= float(want)
            print(f"  {key} = {props[key]}: {'OK' if ok else 'below ' + want}")
            if not ok:
                failures.append(f"overview_page {key} = {props[key]}, expected at least {want}"
                                + (" (copies count as Input/Output only when named "
                                   "MemcpyHToD/MemcpyDToH and linked to a step)"
                                   if re.match(r"(in|out)feed", key) else ""))

    if failures:
        print("xprof_gpu_ops: FAIL:\n  - " + "\n  - ".join(failures), file=sys.stderr)
        return 1
    print(f"xprof_gpu_ops: OK: {args.xplane}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
