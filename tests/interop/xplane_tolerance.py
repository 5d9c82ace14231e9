#!/usr/bin/env python3
"""Check that prof reads an `.xplane.pb` as tolerantly as protobuf does: every file
Python's protobuf parses, prof converts (and the same events), and every file it
refuses, prof refuses; an event no profile can hold is left out with a warning,
the rest converted.

Usage: python tests/interop/xplane_tolerance.py --prof-convert BIN --xplane SEED

From SEED (a real `.xplane.pb`), variants are made by appending bytes to it (fields
of a message concatenate): an unknown group field on the XSpace (the issue's case),
a plane whose line, event, stat and metadata each carry unknown groups (nested, of
every wire type), groups nested 100 deep (protobuf's limit), and broken ones (101
deep, an end-group tag with no group open, a group never closed, an end-group tag
for another field, wire types 6 and 7). A plane with one event whose offset_ps is 2^62 beside one that is fine is
valid protobuf that no profile can hold: prof must convert it, leave that event out
and say so.

Each variant is parsed by Python's protobuf (XSpace built from xplane.proto's field
numbers at run time: the `xprof` wheel ships no xplane_pb2) and converted by
`prof-convert --format chrome`: the two must agree on whether it is an XSpace, and
prof's event count must be the seed's plus what the variant added. Exit 0 when every
case agrees, 1 when one does not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

# Wire types.
VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5


def xspace_class():
    """XSpace as a Python protobuf class, from xplane.proto's field numbers (maps as
    repeated entry messages: the same bytes on the wire)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(
        name="prof_xplane_check.proto", package="prof_check", syntax="proto3")

    def message(name, fields, oneofs=()):
        m = fdp.message_type.add(name=name)
        for o in oneofs:
            m.oneof_decl.add(name=o)
        for fname, number, kind, extra in fields:
            f = m.field.add(name=fname, number=number)
            f.label = F.LABEL_REPEATED if extra.get("repeated") else F.LABEL_OPTIONAL
            if isinstance(kind, str):
                f.type, f.type_name = F.TYPE_MESSAGE, f".prof_check.{kind}"
            else:
                f.type = kind
            if "oneof" in extra:
                f.oneof_index = extra["oneof"]
        return m

    R = {"repeated": True}
    message("XStat", [("metadata_id", 1, F.TYPE_INT64, {}),
                      ("double_value", 2, F.TYPE_DOUBLE, {"oneof": 0}),
                      ("uint64_value", 3, F.TYPE_UINT64, {"oneof": 0}),
                      ("int64_value", 4, F.TYPE_INT64, {"oneof": 0}),
                      ("str_value", 5, F.TYPE_STRING, {"oneof": 0}),
                      ("bytes_value", 6, F.TYPE_BYTES, {"oneof": 0}),
                      ("ref_value", 7, F.TYPE_UINT64, {"oneof": 0})], ["value"])
    message("XEvent", [("metadata_id", 1, F.TYPE_INT64, {}),
                       ("offset_ps", 2, F.TYPE_INT64, {"oneof": 0}),
                       ("num_occurrences", 5, F.TYPE_INT64, {"oneof": 0}),
                       ("duration_ps", 3, F.TYPE_INT64, {}),
                       ("stats", 4, "XStat", R)], ["data"])
    message("XLine", [("id", 1, F.TYPE_INT64, {}), ("display_id", 10, F.TYPE_INT64, {}),
                      ("name", 2, F.TYPE_STRING, {}), ("display_name", 11, F.TYPE_STRING, {}),
                      ("timestamp_ns", 3, F.TYPE_INT64, {}),
                      ("duration_ps", 9, F.TYPE_INT64, {}),
                      ("events", 4, "XEvent", R)])
    message("XEventMetadata", [("id", 1, F.TYPE_INT64, {}), ("name", 2, F.TYPE_STRING, {}),
                               ("display_name", 4, F.TYPE_STRING, {}),
                               ("metadata", 3, F.TYPE_BYTES, {}),
                               ("stats", 5, "XStat", R),
                               ("child_id", 6, F.TYPE_INT64, R)])
    message("XStatMetadata", [("id", 1, F.TYPE_INT64, {}), ("name", 2, F.TYPE_STRING, {}),
                              ("description", 3, F.TYPE_STRING, {})])
    message("EventMetadataEntry", [("key", 1, F.TYPE_INT64, {}),
                                   ("value", 2, "XEventMetadata", {})])
    message("StatMetadataEntry", [("key", 1, F.TYPE_INT64, {}),
                                  ("value", 2, "XStatMetadata", {})])
    message("XPlane", [("id", 1, F.TYPE_INT64, {}), ("name", 2, F.TYPE_STRING, {}),
                       ("lines", 3, "XLine", R),
                       ("event_metadata", 4, "EventMetadataEntry", R),
                       ("stat_metadata", 5, "StatMetadataEntry", R),
                       ("stats", 6, "XStat", R)])
    message("XSpace", [("planes", 1, "XPlane", R), ("errors", 2, F.TYPE_STRING, R),
                       ("warnings", 3, F.TYPE_STRING, R), ("hostnames", 4, F.TYPE_STRING, R)])
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("prof_check.XSpace"))


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def ld(field: int, payload: bytes) -> bytes:
    return key(field, LEN) + varint(len(payload)) + payload


def vi(field: int, n: int) -> bytes:
    return key(field, VARINT) + varint(n)


def group(field: int, depth: int = 1) -> bytes:
    """An unknown group: a value of every other wire type, and `depth - 1` groups
    nested inside it."""
    body = (vi(1, 300) + key(2, FIXED64) + bytes(8) + ld(3, b"newer schema")
            + key(4, FIXED32) + bytes(4))
    inner = group(field + 1, depth - 1) if depth > 1 else b""
    return key(field, START_GROUP) + body + inner + key(field, END_GROUP)


def plane(events: list[bytes], groups: bool) -> bytes:
    """A plane of one line holding `events`, its metadata naming event 1 and stat 1;
    with `groups`, an unknown group in the plane, the line and both metadata."""
    g = (lambda n: group(n, 2)) if groups else (lambda n: b"")
    line = vi(1, 7) + ld(2, b"tolerance") + vi(3, 1000) + b"".join(ld(4, e) for e in events) + g(90)
    event_meta = ld(4, vi(1, 1) + ld(2, vi(1, 1) + ld(2, b"tolerant_op") + g(91)))
    stat_meta = ld(5, vi(1, 1) + ld(2, vi(1, 1) + ld(2, b"tolerant_stat") + g(92)))
    return ld(1, vi(1, 77) + ld(2, b"/host:tolerance") + ld(3, line) + event_meta + stat_meta + g(93))


def event(offset_ps: int, groups: bool) -> bytes:
    stat = vi(1, 1) + vi(4, 42) + (group(94) if groups else b"")
    return vi(1, 1) + vi(2, offset_ps) + vi(3, 5000) + ld(4, stat) + (group(95) if groups else b"")


def variants(seed: bytes) -> list[tuple[str, bytes, int, int | None]]:
    """(name, bytes, events added to the seed's, events prof leaves out; None when
    the bytes are no XSpace)."""
    return [
        ("the seed as it is", seed, 0, 0),
        ("an unknown group field on the XSpace", seed + group(50), 0, 0),
        ("unknown groups in a plane, line, event, stat and metadata",
         seed + plane([event(10_000, True), event(20_000, True)], True), 2, 0),
        # Python's protobuf (upb) allows 100 levels, as prof does.
        ("groups nested 100 deep", seed + group(50, 100), 0, 0),
        ("an event whose offset_ps is 2^62 beside one that is fine",
         seed + plane([event(1 << 62, False), event(10_000, False)], False), 1, 1),
        ("an end-group tag with no group open", seed + key(50, END_GROUP), 0, None),
        ("a group never closed", seed + key(50, START_GROUP) + vi(1, 1), 0, None),
        ("an end-group tag of another field",
         seed + key(50, START_GROUP) + key(51, END_GROUP), 0, None),
        ("groups nested 101 deep", seed + group(50, 101), 0, None),
        ("wire type 6", seed + key(50, 6) + bytes(4), 0, None),
        ("wire type 7", seed + key(50, 7) + bytes(4), 0, None),
    ]


def python_events(cls, data: bytes) -> int | None:
    """How many events Python's protobuf finds; None when it refuses the bytes."""
    from google.protobuf.message import DecodeError

    space = cls()
    try:
        space.ParseFromString(data)
    except DecodeError:
        return None
    return sum(len(line.events) for plane in space.planes for line in plane.lines)


def prof_convert(binary: str, path: str, out: str) -> tuple[int, int | None, str]:
    """prof-convert's exit status, the events it converted and what it printed."""
    run = subprocess.run([binary, path, "--format", "chrome", "--out", out],
                         capture_output=True, text=True, timeout=120)
    text = run.stdout + run.stderr
    m = re.search(r"\((\d+) events,", run.stdout)
    return run.returncode, int(m.group(1)) if m else None, text


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prof-convert", required=True, metavar="BIN")
    ap.add_argument("--xplane", required=True, metavar="SEED")
    args = ap.parse_args()
    try:
        cls = xspace_class()
    except ImportError as e:
        print(f"xplane_tolerance: protobuf is not installed ({e})", file=sys.stderr)
        return 2
    with open(args.xplane, "rb") as f:
        seed = f.read()
    failures = []
    base = None
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, data, added, left_out) in enumerate(variants(seed)):
            path = os.path.join(tmp, f"case{i}.xplane.pb")
            with open(path, "wb") as f:
                f.write(data)
            parsed = python_events(cls, data)
            rc, converted, text = prof_convert(args.prof_convert, path, os.path.join(tmp, f"out{i}"))
            if i == 0:
                base = converted
            verdict = "parses" if parsed is not None else "refuses"
            print(f"{name}: Python's protobuf {verdict} ({parsed} events); "
                  f"prof-convert rc {rc}, {converted} events converted")
            if (parsed is None) != (left_out is None):
                failures.append(f"{name}: Python's protobuf {verdict} it, unlike expected")
                continue
            if parsed is None:
                if rc == 0:
                    failures.append(f"{name}: Python's protobuf refuses it, prof converted it")
                elif "not an XSpace protobuf" not in text:
                    failures.append(f"{name}: prof refused it without saying why: {text.strip()}")
                continue
            if rc != 0 or converted is None:
                failures.append(f"{name}: Python's protobuf parses it, prof refused it: "
                                f"{text.strip()}")
                continue
            if base is not None and converted != base + added:
                failures.append(f"{name}: prof converted {converted} events, not the seed's "
                                f"{base} plus the {added} added")
            warned = re.search(r"(\d+) events? (was|were) left out", text)
            if left_out and not (warned and int(warned.group(1)) == left_out):
                failures.append(f"{name}: no warning that {left_out} event(s) were left out: "
                                f"{text.strip()}")
            if not left_out and warned:
                failures.append(f"{name}: a warning of events left out: {text.strip()}")
    for failure in failures:
        print(f"xplane_tolerance: FAIL: {failure}", file=sys.stderr)
    if failures:
        return 1
    print("xplane_tolerance: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
