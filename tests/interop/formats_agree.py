#!/usr/bin/env python3
"""Check that prof's exports of one profile agree with each other.

Compares the JSON summaries written by perfetto_check.py, chrome_check.mjs and
(optionally) otlp_rotel.py, and optionally the source .xplane.pb itself:

  * slices (complete slices + instants): Perfetto == Chrome [== OTLP spans]
    [== xplane events];
  * total slice duration: equal within 1 us per slice (Chrome's float
    microseconds round; |a - b| <= slices * 1000 ns);
  * counter values and flows: Perfetto == Chrome;
  * per-name slice counts: Perfetto == Chrome (and OTLP span names);
  * thread names: differences are reported as warnings only.

For --xplane, events are counted on every line of every plane except lines
named "_counters_" and the plane "Task Environment", and their durations
(duration_ps / 1000) summed. The `xprof` wheel ships no xplane_pb2, so the
file is read with a small protobuf wire decoder below (XSpace.planes = 1,
XPlane.name = 2, XPlane.lines = 3, XLine.name = 2, XLine.events = 4,
XEvent.duration_ps = 3).

Usage:
  python tests/interop/formats_agree.py --perfetto P.json --chrome C.json
      [--otlp O.json] [--otlp-excludes-instants] [--xplane FILE.xplane.pb]

Exit status: 0 when everything agrees, 1 when something differs, 2 on
unreadable input. Needs only the Python standard library.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
PROG = "formats_agree"

# Per slice, durations may differ by this much: Chrome JSON carries float
# microseconds, the others integer ns or ps.
TOLERANCE_NS_PER_SLICE = 1000

COUNTER_LINE = "_counters_"
SKIPPED_PLANE = "Task Environment"


# --------------------------------------------------------------------------
# Minimal protobuf reader for the XSpace fields needed here.
# --------------------------------------------------------------------------


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def fields(buf: bytes):
    """Yields (field number, wire type, value) of one message; value is an int
    for varint/fixed fields and a bytes slice for length-delimited ones."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = int.from_bytes(buf[pos:pos + 8], "little"), pos + 8
        elif wire == 5:
            value, pos = int.from_bytes(buf[pos:pos + 4], "little"), pos + 4
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        else:
            raise ValueError(f"unsupported wire type {wire} for field {number}")
        if pos > end:
            raise ValueError("message runs past its end")
        yield number, wire, value


def _int64(v: int) -> int:
    return v - (1 << 64) if v >= 1 << 63 else v


def xplane_summary(path: str) -> dict:
    with open(path, "rb") as f:
        data = memoryview(f.read())
    events = 0
    duration_ps = 0
    planes = []
    for number, wire, plane in fields(data):
        if number != 1 or wire != 2:
            continue  # XSpace.errors, warnings, hostnames
        name, lines = "", []
        for n, w, v in fields(plane):
            if n == 2 and w == 2:
                name = bytes(v).decode("utf-8", "replace")
            elif n == 3 and w == 2:
                lines.append(v)
        counted = 0
        if name != SKIPPED_PLANE:
            for line in lines:
                line_name, line_events = "", []
                for n, w, v in fields(line):
                    if n == 2 and w == 2:
                        line_name = bytes(v).decode("utf-8", "replace")
                    elif n == 4 and w == 2:
                        line_events.append(v)
                if line_name == COUNTER_LINE:
                    continue
                for ev in line_events:
                    events += 1
                    counted += 1
                    for n, w, v in fields(ev):
                        if n == 3 and w == 0:
                            duration_ps += _int64(v)
        planes.append({"name": name, "lines": len(lines), "events_counted": counted})
    return {"slices": events, "slice_duration_ns_total": duration_ps / 1000, "planes": planes}


# --------------------------------------------------------------------------


def load(path: str) -> dict:
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"{PROG}: cannot read summary {path}: {e}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Check that prof's exports of one profile agree.")
    ap.add_argument("--perfetto", required=True, metavar="SUMMARY.json",
                    help="summary written by perfetto_check.py --summary")
    ap.add_argument("--chrome", required=True, metavar="SUMMARY.json",
                    help="summary written by chrome_check.mjs --summary")
    ap.add_argument("--otlp", metavar="SUMMARY.json", help="summary written by otlp_rotel.py --summary")
    ap.add_argument("--otlp-excludes-instants", action="store_true",
                    help="OTLP carries slices only, no instants: compare its spans with slices - instants")
    ap.add_argument("--xplane", metavar="FILE.xplane.pb", help="the profile the exports came from")
    args = ap.parse_args(argv)

    p, c = load(args.perfetto), load(args.chrome)
    fail: list[str] = []
    warn: list[str] = []
    report = {"perfetto": {}, "chrome": {}}

    def same(what, a_name, a, b_name, b):
        if a != b:
            fail.append(f"{what}: {a_name} has {a}, {b_name} has {b}")

    def close(what, a_name, a, b_name, b, count):
        if abs(a - b) > count * TOLERANCE_NS_PER_SLICE:
            fail.append(
                f"{what}: {a_name} has {a} ns, {b_name} has {b} ns; they differ by "
                f"{abs(a - b)} ns, more than {TOLERANCE_NS_PER_SLICE} ns x {count} slices"
            )

    slices = p["slices"]
    same("slices", "perfetto", slices, "chrome", c["slices"])
    close("total slice duration", "perfetto", p["slice_duration_ns_total"],
          "chrome", c["slice_duration_ns_total"], slices)
    same("counter values", "perfetto", p["counter_values"], "chrome", c["counter_values"])
    same("flows", "perfetto", p["flows"], "chrome", c["flows"])
    same("instants", "perfetto", p.get("instants"), "chrome", c.get("instants"))
    if "names" in p and "names" in c and p["names"] != c["names"]:
        diff = sorted(n for n in set(p["names"]) | set(c["names"])
                      if p["names"].get(n) != c["names"].get(n))
        fail.append("slice counts by name differ: " + ", ".join(
            f"{n!r} perfetto {p['names'].get(n, 0)} chrome {c['names'].get(n, 0)}" for n in diff[:10]))
    if sorted(p.get("threads", [])) != sorted(c.get("threads", [])):
        warn.append(f"thread names differ: perfetto {sorted(p.get('threads', []))}, "
                    f"chrome {sorted(c.get('threads', []))}")
    for k in ("slices", "slice_duration_ns_total", "counter_values", "flows"):
        report["perfetto"][k], report["chrome"][k] = p[k], c[k]

    if args.otlp:
        o = load(args.otlp)
        expected = slices - (p.get("instants", 0) if args.otlp_excludes_instants else 0)
        same("spans vs slices", "otlp", o["spans"], "perfetto", expected)
        close("total span duration", "otlp", o["duration_ns_total"], "perfetto",
              p["slice_duration_ns_total"], expected)
        for name, n in sorted(o.get("names", {}).items()):
            if p.get("names", {}).get(name, 0) < n:
                fail.append(f"otlp has {n} spans named {name!r}, perfetto {p.get('names', {}).get(name, 0)}")
        report["otlp"] = {"spans": o["spans"], "duration_ns_total": o["duration_ns_total"]}

    if args.xplane:
        try:
            x = xplane_summary(args.xplane)
        except (OSError, ValueError, IndexError) as e:
            print(f"{PROG}: cannot read {args.xplane}: {e}", file=sys.stderr)
            return EXIT_USAGE
        same("slices vs xplane events", "xplane", x["slices"], "perfetto", slices)
        close("total duration vs xplane", "xplane", x["slice_duration_ns_total"], "perfetto",
              p["slice_duration_ns_total"], slices)
        report["xplane"] = x

    print(json.dumps(report, indent=2, sort_keys=True))
    for w in warn:
        print(f"{PROG}: warning: {w}", file=sys.stderr)
    if fail:
        for msg in fail:
            print(f"{PROG}: FAIL: {msg}", file=sys.stderr)
        return EXIT_FAIL
    print(f"{PROG}: OK: the exports agree", file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
