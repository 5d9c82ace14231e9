#!/usr/bin/env python3
"""Writes the crafted inputs of regressions/xplane_decode/: small .xplane.pb files, each
reaching one of the reader's defences, which profiler-export/tests/fuzz_regressions.rs
replays through `xplane::decode` and the streaming file reader in every `cargo test`.
They never made the reader panic; they are kept so that a change that would is caught.

    python3 fuzz/craft_regressions.py      # rewrites them (the same bytes every time)
"""
import pathlib

OUT = pathlib.Path(__file__).resolve().parent / "regressions" / "xplane_decode"

# Wire types.
VARINT, LEN, START_GROUP, END_GROUP = 0, 2, 3, 4


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64s are ten bytes, as protobuf writes them
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        if not n:
            out.append(b)
            return bytes(out)
        out.append(b | 0x80)


def key(field: int, wire: int) -> bytes:
    return varint(field << 3 | wire)


def ld(field: int, body: bytes) -> bytes:
    return key(field, LEN) + varint(len(body)) + body


def vi(field: int, value: int) -> bytes:
    return key(field, VARINT) + varint(value)


# xplane.proto: XEvent{metadata_id 1, offset_ps 2, duration_ps 3}; XLine{id 1, name 2,
# events 4}; XPlane{id 1, name 2, lines 3, event_metadata 4}; XSpace{planes 1,
# hostnames 4}.
def event(offset_ps: int) -> bytes:
    return vi(1, 1) + vi(2, offset_ps) + vi(3, 1000)


def line(events: list[bytes], extra: bytes = b"") -> bytes:
    return vi(1, 1) + ld(2, b"main") + b"".join(ld(4, e) for e in events) + extra


def plane(lines: list[bytes], extra: bytes = b"") -> bytes:
    op = ld(4, vi(1, 1) + ld(2, vi(1, 1) + ld(2, b"op")))  # event_metadata {1: "op"}
    return vi(1, 1) + ld(2, b"/host:CPU") + op + b"".join(ld(3, l) for l in lines) + extra


def space(planes: list[bytes], extra: bytes = b"") -> bytes:
    return b"".join(ld(1, p) for p in planes) + ld(4, b"h") + extra


VALID = space([plane([line([event(0)])])])
SHORT_LINE = line([event(0)])
# A plane whose line says it is 40 bytes longer than the plane holds.
PLANE_OF_A_LONG_LINE = vi(1, 1) + key(3, LEN) + varint(len(SHORT_LINE) + 40) + SHORT_LINE

INPUTS = {
    # A length whose varint the file cuts short.
    "truncated-varint": VALID + key(1, LEN) + b"\xff\xff",
    # A varint of eleven bytes (protobuf's are at most ten).
    "varint-of-eleven-bytes": VALID + key(5, VARINT) + b"\xff" * 10 + b"\x01",
    # A line whose length runs past the end of its plane, though not past the file.
    "line-longer-than-its-plane": ld(1, PLANE_OF_A_LONG_LINE) + ld(4, b"x" * 64),
    # A plane's name 2^64 - 1 bytes long: the end it names overflows a u64.
    "length-near-u64-max": ld(1, vi(1, 1) + key(2, LEN) + varint((1 << 64) - 1) + b"a")
    + b"bcdefgh\x00",
    # A plane that says it is 2^40 bytes long, in a file of nine.
    "length-past-the-end": key(1, LEN) + varint(1 << 40) + vi(1, 1),
    # An unknown field of wire type 3/4 (a group) after a valid space, as a newer
    # schema could write: protobuf skips it.
    "unknown-group-field": VALID + key(9, START_GROUP) + vi(1, 5) + ld(2, b"g")
    + key(9, END_GROUP),
    # The same inside a line.
    "group-in-a-line": space([plane([line([event(0)], key(15, START_GROUP) + vi(1, 1)
                                          + ld(2, b"g") + key(15, END_GROUP))])]),
    # An end-group with no start, in a plane.
    "lone-end-group": space([plane([line([event(0)])], key(20, END_GROUP))]),
    # An event whose offset_ps is 2^62, past what an XEvent holds (within ±2^62 ps).
    "event-offset-2-pow-62": space([plane([line([event(0), event(1 << 62)])])]),
    # One below -2^62.
    "event-offset-below-minus-2-pow-62": space([plane([line([event(-(1 << 62) - 1)])])]),
}

if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in INPUTS.items():
        (OUT / f"{name}.xplane.pb").write_bytes(data)
        print(f"{name}.xplane.pb: {len(data)} bytes")
