#!/usr/bin/env python3
"""Check, through xprof's own `memory_profile` converter, what XProf's Memory Profile
shows of an `.xplane.pb`, and that every memory event's stats have the types XProf
reads them with.

Usage: python tests/interop/xprof_memory.py --xplane PATH
           [--expect-allocator NAME ...]           memory_profile lists allocator NAME
           [--min-timeline NAME=N ...]             ...with more than N points on its
                                                   timeline
           [--expect-largest NAME=OP[,OP...] ...]  ...and at its peak, its largest
                                                   blocks (the breakdown table's rows
                                                   that are blocks, largest first)
                                                   carry these ops, in this order
           [--expect-levels PATH]                  a JSON object {NAME: {"bytes": B,
                                                   "slack": S}}: NAME's timeline has at
                                                   least 2 points, each within S bytes
                                                   of B (a program whose memory is
                                                   steady shows it flat, at its level)
           [--summary-json PATH]                   each allocator's peak equals the
                                                   peak of prof's summary
                                                   (`memory[].peak_bytes`) there
           [--perfetto PATH] [--chrome PATH]       the Perfetto trace and Chrome JSON
                                                   written beside it carry each
                                                   allocator's memory track (`host`:
                                                   host_bytes_in_use on /host:CPU;
                                                   `GPU_<n>`: device_bytes_in_use on
                                                   /device:GPU:<n>) reaching the same
                                                   highest bytes in use as its events

Every `MemoryAllocation` / `MemoryDeallocation` event of the `/host:CPU` plane is read
from the file itself (a minimal protobuf reader): the stats XProf reads with
`IntValue()` must be int64 (a uint64 reads as 0), those it reads with
`StrOrRefValue()` a string or a reference, `fragmentation` a double, and each event
must name its allocator. The file is copied into a temporary logdir first (xprof
writes caches beside what it reads). Exit 0 when every check passes, 1 when one
fails, 2 on bad input or when xprof is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from formats_agree import fields  # noqa: E402  (the minimal protobuf reader)

HOST_PLANE = "/host:CPU"
MEMORY_EVENTS = ("MemoryAllocation", "MemoryDeallocation")
# xprof/convert/xplane_to_memory_profile.cc: how each stat is read.
INT_STATS = {
    "bytes_reserved", "bytes_allocated", "bytes_available", "peak_bytes_in_use",
    "requested_bytes", "allocation_bytes", "addr", "group_id", "data_type",
    "index_on_host", "device_ordinal",
}
TEXT_STATS = {"allocator_name", "tf_op", "region_type", "tensor_shapes"}
DOUBLE_STATS = {"fragmentation"}
# XStat's value fields.
KINDS = {2: "double", 3: "uint64", 4: "int64", 5: "str", 6: "bytes", 7: "ref"}


def memory_event_stats(path: str) -> tuple[list[str], int, dict[str, int]]:
    """The problems with the memory events' stat types, how many events there are, and
    each allocator's highest `bytes_allocated`."""
    with open(path, "rb") as f:
        data = memoryview(f.read())
    problems: list[str] = []
    count = 0
    highest: dict[str, int] = {}
    for number, wire, plane in fields(data):
        if number != 1 or wire != 2:
            continue
        name, lines, event_names, stat_names = "", [], {}, {}
        for n, w, v in fields(plane):
            if n == 2 and w == 2:
                name = bytes(v).decode("utf-8", "replace")
            elif n == 3 and w == 2:
                lines.append(v)
            elif n in (4, 5) and w == 2:
                key, meta = None, None
                for en, ew, ev in fields(v):
                    if en == 1:
                        key = ev
                    elif en == 2:
                        meta = ev
                label = ""
                for mn, mw, mv in fields(meta or b""):
                    if mn == 2 and mw == 2:
                        label = bytes(mv).decode("utf-8", "replace")
                (event_names if n == 4 else stat_names)[key] = label
        if name != HOST_PLANE:
            continue
        for line in lines:
            for n, w, event in fields(line):
                if n != 4 or w != 2:
                    continue
                metadata, stats = None, []
                for en, ew, ev in fields(event):
                    if en == 1:
                        metadata = ev
                    elif en == 4 and ew == 2:
                        stats.append(ev)
                kind = event_names.get(metadata, "")
                if kind not in MEMORY_EVENTS:
                    continue
                count += 1
                seen, values = {}, {}
                for stat in stats:
                    sid, value_kind, value = None, None, None
                    for sn, sw, sv in fields(stat):
                        if sn == 1:
                            sid = sv
                        elif sn in KINDS:
                            value_kind, value = KINDS[sn], sv
                    name = stat_names.get(sid, f"<stat {sid}>")
                    seen[name] = value_kind
                    if value_kind == "ref":
                        value = stat_names.get(value)
                    elif value_kind == "str":
                        value = bytes(value).decode("utf-8", "replace")
                    elif value_kind == "int64" and value >= 1 << 63:
                        value -= 1 << 64
                    values[name] = value
                allocator = values.get("allocator_name")
                if isinstance(allocator, str) and isinstance(values.get("bytes_allocated"), int):
                    highest[allocator] = max(highest.get(allocator, 0), values["bytes_allocated"])
                if "allocator_name" not in seen:
                    problems.append(f"a {kind} event names no allocator: {seen}")
                for stat, value_kind in seen.items():
                    want = None
                    if stat in INT_STATS and value_kind != "int64":
                        want = "int64"
                    elif stat in TEXT_STATS and value_kind not in ("str", "ref"):
                        want = "a string or a reference"
                    elif stat in DOUBLE_STATS and value_kind != "double":
                        want = "double"
                    if want:
                        problems.append(
                            f"{kind}.{stat} is {value_kind}; XProf reads it as {want}")
    return problems, count, highest


def track_of(allocator: str) -> tuple[str, str] | None:
    """(process, counter) of an allocator's memory track, as prof writes it."""
    if allocator == "host":
        return "/host:CPU", "host_bytes_in_use"
    if allocator.startswith("GPU_") and allocator[4:].isdigit():
        return f"/device:GPU:{allocator[4:]}", "device_bytes_in_use"
    return None


def perfetto_counters(path: str) -> dict[tuple[str, str], float]:
    """The highest value of each counter track of a Perfetto trace, by (process, name)."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    trace = pb.Trace()
    with open(path, "rb") as f:
        trace.ParseFromString(f.read())
    names, parents, processes, defaults = {}, {}, {}, {}
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            d = packet.track_descriptor
            if d.HasField("process"):
                processes[d.uuid] = d.process.process_name
            names[d.uuid] = d.name
            parents[d.uuid] = d.parent_uuid
        if packet.HasField("trace_packet_defaults"):
            # A sequence's events name their track once, in its defaults.
            track = packet.trace_packet_defaults.track_event_defaults.track_uuid
            defaults[packet.trusted_packet_sequence_id] = track
    highest: dict[tuple[str, str], float] = {}
    for packet in trace.packet:
        if not packet.HasField("track_event"):
            continue
        e = packet.track_event
        if e.type != pb.TrackEvent.TYPE_COUNTER:
            continue
        value = e.double_counter_value if e.HasField("double_counter_value") else e.counter_value
        uuid = e.track_uuid if e.HasField("track_uuid") else defaults.get(
            packet.trusted_packet_sequence_id)
        key = (processes.get(parents.get(uuid), ""), names.get(uuid, ""))
        highest[key] = max(highest.get(key, value), value)
    return highest


def chrome_counters(path: str) -> dict[tuple[str, str], float]:
    """The highest value of each counter of a Chrome JSON trace, by (process, name)."""
    import gzip

    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    processes = {e.get("pid"): e.get("args", {}).get("name", "") for e in events
                 if e.get("ph") == "M" and e.get("name") == "process_name"}
    highest: dict[tuple[str, str], float] = {}
    for e in events:
        if e.get("ph") != "C":
            continue
        for value in (e.get("args") or {}).values():
            key = (processes.get(e.get("pid"), ""), e.get("name", ""))
            highest[key] = max(highest.get(key, value), value)
    return highest


def memory_profile(path: str) -> dict:
    from xprof.convert import raw_to_tool_data

    data, _ = raw_to_tool_data.xspace_to_tool_data(
        [path], "memory_profile", {"use_saved_result": False})
    if data is None:
        raise RuntimeError("xprof's memory_profile converter returned nothing")
    return json.loads(data)


def pair(spec: str) -> tuple[str, str]:
    if "=" not in spec:
        raise argparse.ArgumentTypeError(f"{spec!r} needs the form NAME=VALUE")
    name, value = spec.split("=", 1)
    return name, value


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xplane", required=True)
    ap.add_argument("--expect-allocator", nargs="+", default=[], metavar="NAME")
    ap.add_argument("--min-timeline", nargs="+", default=[], type=pair, metavar="NAME=N")
    ap.add_argument("--expect-largest", nargs="+", default=[], type=pair,
                    metavar="NAME=OP[,OP...]")
    ap.add_argument("--expect-levels", metavar="PATH")
    ap.add_argument("--summary-json", metavar="PATH")
    ap.add_argument("--perfetto", metavar="PATH")
    ap.add_argument("--chrome", metavar="PATH")
    args = ap.parse_args()
    if not os.path.isfile(args.xplane):
        print(f"xprof_memory: no such file: {args.xplane}", file=sys.stderr)
        return 2
    try:
        import xprof.convert.raw_to_tool_data  # noqa: F401
    except ImportError as e:
        print(f"xprof_memory: xprof is not installed ({e})", file=sys.stderr)
        return 2

    failures: list[str] = []
    problems, events, highest = memory_event_stats(args.xplane)
    failures.extend(problems[:20])
    if len(problems) > 20:
        failures.append(f"... and {len(problems) - 20} more stat type problems")
    if events == 0:
        failures.append("no MemoryAllocation or MemoryDeallocation event on /host:CPU")

    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "plugins", "profile", "run")
        os.makedirs(run)
        copy = os.path.join(run, os.path.basename(args.xplane))
        shutil.copyfile(args.xplane, copy)
        profile = memory_profile(copy)

    allocators = profile.get("memoryProfilePerAllocator", {})
    ids = profile.get("memoryIds", [])
    print(f"xprof memory_profile: {events} memory events; allocators {ids}")
    for name in ids:
        a = allocators.get(name, {})
        peak = int(a.get("profileSummary", {}).get("peakStats", {}).get("peakBytesInUse", 0))
        timeline = len(a.get("sampledTimelineSnapshots", []))
        print(f"  {name}: peak {peak} bytes, {timeline} timeline points, "
              f"{len(a.get('activeAllocations', []))} rows at the peak")
    for name in args.expect_allocator:
        if name not in ids:
            failures.append(f"allocator {name} is not in memory_profile's {ids}")
    for name, n in args.min_timeline:
        timeline = len(allocators.get(name, {}).get("sampledTimelineSnapshots", []))
        if timeline <= int(n):
            failures.append(f"{name}'s timeline has {timeline} points, not more than {n}")
    for name, ops in args.expect_largest:
        a = allocators.get(name, {})
        snapshots = a.get("memoryProfileSnapshots", [])
        rows = []
        for row in a.get("activeAllocations", []):
            index = int(row.get("snapshotIndex", -1))
            if index < 0:
                continue  # XProf's own rows (unaccounted memory, stack)
            meta = snapshots[index].get("activityMetadata", {})
            rows.append((int(meta.get("allocationBytes", 0)), meta.get("tfOpName", "")))
        rows.sort(key=lambda r: -r[0])
        want = ops.split(",")
        got = [op for _, op in rows[:len(want)]]
        print(f"  {name}'s largest blocks at its peak: {rows[:len(want) + 2]}")
        if got != want:
            failures.append(f"{name}'s largest blocks at its peak carry {got}, not {want}")
    if args.expect_levels:
        with open(args.expect_levels) as f:
            levels = json.load(f)
        for name, want in levels.items():
            points = allocators.get(name, {}).get("sampledTimelineSnapshots", [])
            heap = [int(p.get("aggregationStats", {}).get("heapAllocatedBytes", 0))
                    for p in points]
            level, slack = int(want["bytes"]), int(want["slack"])
            off = [b for b in heap if abs(b - level) > slack]
            print(f"  {name}: {len(heap)} timeline points from {min(heap, default=None)} "
                  f"to {max(heap, default=None)} bytes; the program's level {level} "
                  f"(slack {slack})")
            if len(heap) < 2:
                failures.append(f"{name}'s timeline has {len(heap)} points, not at least 2")
            if off:
                failures.append(f"{name}: {len(off)} timeline points are more than {slack} "
                                f"bytes from the level {level}: {off[:5]}")
    if args.summary_json:
        with open(args.summary_json) as f:
            summary = json.load(f)
        peaks = {p["allocator"]: p["peak_bytes"] for p in summary.get("memory", [])}
        if not peaks:
            failures.append(f"{args.summary_json} lists no allocator's peak")
        for name, bytes_ in peaks.items():
            xprof_peak = int(allocators.get(name, {}).get("profileSummary", {})
                             .get("peakStats", {}).get("peakBytesInUse", -1))
            print(f"  {name}: summary's peak {bytes_}, XProf's {xprof_peak}")
            if xprof_peak != bytes_:
                failures.append(f"{name}: XProf's peak {xprof_peak} is not the summary's {bytes_}")

    for fmt, path, read in (("Perfetto", args.perfetto, perfetto_counters),
                            ("Chrome JSON", args.chrome, chrome_counters)):
        if not path:
            continue
        counters = read(path)
        for allocator, most in sorted(highest.items()):
            track = track_of(allocator)
            if track is None:
                continue
            got = counters.get(track)
            print(f"  {allocator}: {fmt} track {track[1]} on {track[0]} reaches {got}, "
                  f"the events {most}")
            if got is None:
                failures.append(f"{fmt}: no counter track {track[1]} on {track[0]} for {allocator}")
            elif int(got) != most:
                failures.append(f"{fmt}: {allocator}'s track reaches {got}, its events {most}")

    for failure in failures:
        print(f"xprof_memory: FAIL: {failure}", file=sys.stderr)
    if failures:
        return 1
    print("xprof_memory: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
