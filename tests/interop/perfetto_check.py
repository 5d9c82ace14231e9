#!/usr/bin/env python3
"""Check a Perfetto native protobuf trace (`.pftrace`) written by prof's exporter.

The file is decoded with the official schema that ships in the PyPI `perfetto`
package (`perfetto.protos.perfetto.trace.perfetto_trace_pb2`), then checked
against what Perfetto's trace processor needs to import it without silently
dropping data:

  * wire level: every field number is one the schema knows, with the wire type
    the schema declares, and no packed encoding for repeated scalars the schema
    declares unpacked (flow_ids, category_iids, ...). Python's protobuf accepts
    all of these, but Perfetto's own decoder (protozero) does not: an unknown
    field is ignored and a packed flow_ids is read as garbage.
  * sequences: every packet sets trusted_packet_sequence_id; the first packet
    of a sequence sets SEQ_INCREMENTAL_STATE_CLEARED; a packet that uses
    interned ids sets SEQ_NEEDS_INCREMENTAL_STATE (or clears the state itself);
    every iid it uses was defined on that sequence since the last clear; the
    timestamps of a sequence never go back (per clock), as a Perfetto producer
    writes each sequence. The trace processor sorts packets by time and would
    load them anyway, but a sequence going back is not what its producers
    write, and lints of the format flag it.
  * clocks: timestamps are Unix-epoch nanoseconds (> 1e18); a packet that names
    a timestamp_clock_id other than the trace clock can only be converted if
    an earlier ClockSnapshot holds both clocks (trace processor drops it
    otherwise).
  * tracks: a TrackDescriptor declares every track_uuid/parent_uuid in an
    earlier packet than its first use; one uuid, one meaning; thread tracks
    belong to a declared process (by pid); counter tracks are children of a
    process track.
  * events: BEGIN/END/INSTANT on thread tracks, balanced per track, with
    non-decreasing timestamps per track; COUNTER on counter tracks with a
    value; slices and instants have a name.
  * flows: each flow id has a producer (flow_ids on a BEGIN) and a consumer
    (terminating_flow_ids on a later-or-equal BEGIN).
  * stack samples (PerfSample): the callstack, its frames, their mappings and
    function names, the mappings' build ids and paths are interned on the
    sample's sequence before it; pid and tid are those of a declared thread
    track; each sample lies inside the session (at or after the clock
    snapshot that starts it, and within --session-ns of it when given).

Usage:
  python tests/interop/perfetto_check.py FILE.pftrace [--min-slices N]
      [--min-counters N] [--min-flows N] [--thread NAME]... [--process NAME]...
      [--summary OUT.json]

Prints a JSON summary on stdout (and writes it to --summary):
  {"slices", "slice_duration_ns_total", "instants", "counter_values",
   "counter_tracks", "flows", "threads", "processes", "names"}
"slices" counts complete BEGIN/END pairs plus instants.

Exit status: 0 when every check passes, 1 when a check fails, 2 when the input
or the environment is wrong. Needs `pip install -r
tests/interop/requirements-export.txt` (perfetto + protobuf).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2

PROG = "perfetto_check"

# Unix-epoch nanoseconds are > 1e18 from 2001-09-09 on; anything smaller is a
# relative or boot-time timestamp, which the contract rules out.
MIN_EPOCH_NS = 10**18

# Stop listing failures after this many; the count of the rest is still given.
MAX_REPORTED = 40

SEQ_INCREMENTAL_STATE_CLEARED = 1
SEQ_NEEDS_INCREMENTAL_STATE = 2

# Perfetto's default trace clock when no ClockSnapshot sets primary_trace_clock.
BUILTIN_CLOCK_BOOTTIME = 6


class Failures:
    """Collects rule violations so one run reports all of them, not just the first."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.count = 0

    def add(self, msg: str) -> None:
        self.count += 1
        if len(self.items) < MAX_REPORTED:
            self.items.append(msg)


def load_schema():
    try:
        from perfetto.protos.perfetto.trace import perfetto_trace_pb2
    except Exception as e:  # noqa: BLE001 - explain any import failure the same way
        print(
            f"{PROG}: cannot import perfetto_trace_pb2 ({type(e).__name__}: {e}).\n"
            "  Install it with: pip install -r tests/interop/requirements-export.txt",
            file=sys.stderr,
        )
        sys.exit(EXIT_USAGE)
    return perfetto_trace_pb2


# --------------------------------------------------------------------------
# Wire-level walk. Python's parser is lenient where Perfetto's is not, so the
# raw bytes are checked against the schema's descriptors before decoding.
# --------------------------------------------------------------------------

# Wire type each FieldDescriptor.type must use when not packed.
_WIRE_OF_TYPE = {
    1: 1, 6: 1, 16: 1,  # double, fixed64, sfixed64
    2: 5, 7: 5, 15: 5,  # float, fixed32, sfixed32
    3: 0, 4: 0, 5: 0, 8: 0, 13: 0, 14: 0, 17: 0, 18: 0,  # varint kinds
    9: 2, 11: 2, 12: 2,  # string, message, bytes
    10: 3,  # group
}
_WIRE_NAMES = {0: "varint", 1: "64-bit", 2: "length-delimited", 3: "start-group", 5: "32-bit"}


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise ValueError("truncated or overlong varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


_FIELD_RULES: dict = {}


def _rules(desc) -> dict:
    """Per message type, field number -> (name, expected wire type, packed?, repeated
    scalar?, sub-message descriptor); built once, as the walk visits every field."""
    rules = _FIELD_RULES.get(desc.full_name)
    if rules is None:
        rules = _FIELD_RULES[desc.full_name] = {
            f.number: (
                f.name,
                _WIRE_OF_TYPE.get(f.type),
                f.is_packed,
                f.is_repeated and f.type not in (9, 11, 12),
                f.message_type if f.type == 11 else None,
            )
            for f in desc.fields
        }
    return rules


def wire_walk(buf: bytes, start: int, end: int, desc, where: str, fail: Failures) -> None:
    """Checks field numbers and wire types of one message, recursing into sub-messages."""
    rules = _rules(desc)
    pos = start
    while pos < end:
        try:
            key, pos = _varint(buf, pos, end)
        except ValueError as e:
            fail.add(f"{where}: {desc.name}: {e}")
            return
        number, wire = key >> 3, key & 7
        try:
            if wire == 0:
                _, pos = _varint(buf, pos, end)
            elif wire == 1:
                pos += 8
            elif wire == 5:
                pos += 4
            elif wire == 2:
                length, pos = _varint(buf, pos, end)
                sub_start, pos = pos, pos + length
            else:
                fail.add(f"{where}: {desc.name} field {number}: wire type {wire} is not supported")
                return
        except ValueError as e:
            fail.add(f"{where}: {desc.name} field {number}: {e}")
            return
        if pos > end:
            fail.add(f"{where}: {desc.name} field {number}: runs past the end of its message")
            return
        rule = rules.get(number)
        if rule is None:
            fail.add(
                f"{where}: {desc.name} has unknown field number {number} "
                f"({_WIRE_NAMES.get(wire, wire)}); Perfetto ignores it (wrong field number?)"
            )
            continue
        name, expected, packed, repeated_scalar, sub = rule
        if repeated_scalar and wire == 2:
            if not packed:
                fail.add(
                    f"{where}: {desc.name}.{name} (field {number}) is written packed, "
                    "but the schema declares it unpacked: write one tag per element "
                    "(Perfetto's protozero decoder misreads packed data here)"
                )
            continue
        if repeated_scalar and packed:
            fail.add(
                f"{where}: {desc.name}.{name} (field {number}) must be packed "
                "(one length-delimited blob) but is written element by element"
            )
            continue
        if wire != expected:
            fail.add(
                f"{where}: {desc.name}.{name} (field {number}) has wire type "
                f"{_WIRE_NAMES.get(wire, wire)}, the schema says "
                f"{_WIRE_NAMES.get(expected, expected)}"
            )
            continue
        if sub is not None:
            wire_walk(buf, sub_start, pos, sub, where, fail)


def wire_check(data: bytes, pb, fail: Failures) -> None:
    """Top level: a Trace is only `repeated TracePacket packet = 1`."""
    pos, end, index = 0, len(data), 0
    packet_desc = pb.TracePacket.DESCRIPTOR
    while pos < end:
        try:
            key, pos = _varint(data, pos, end)
            if key != (1 << 3 | 2):
                fail.add(
                    f"byte {pos}: top-level field {key >> 3} wire type {key & 7}; a Trace "
                    "holds only `packet = 1` (length-delimited)"
                )
                return
            length, pos = _varint(data, pos, end)
        except ValueError as e:
            fail.add(f"packet {index}: {e}")
            return
        if pos + length > end:
            fail.add(f"packet {index}: length {length} runs past the end of the file")
            return
        wire_walk(data, pos, pos + length, packet_desc, f"packet {index}", fail)
        pos += length
        index += 1


# --------------------------------------------------------------------------
# Semantic checks on the decoded trace.
# --------------------------------------------------------------------------


PROFILING_TABLES = ("function_names", "build_ids", "mapping_paths", "mappings", "frames",
                    "callstacks")


def check_perf_sample(where, sample, seq, thread_owner, fail) -> None:
    """A PerfSample's interned ids resolve on its sequence, and it is on a thread track."""
    t = seq.profiling

    def need(table, iid, what):
        if iid not in t[table]:
            fail.add(f"{where}: {what} uses {table} iid {iid}, not defined on the sequence before")
            return None
        return t[table][iid]

    stack = need("callstacks", sample.callstack_iid, "the PerfSample")
    for fid in (stack.frame_ids if stack is not None else []):
        frame = need("frames", fid, f"callstack {sample.callstack_iid}")
        if frame is None:
            continue
        if frame.HasField("function_name_id"):
            need("function_names", frame.function_name_id, f"frame {fid}")
        if frame.HasField("mapping_id"):
            mapping = need("mappings", frame.mapping_id, f"frame {fid}")
            if mapping is not None:
                if mapping.HasField("build_id"):
                    need("build_ids", mapping.build_id, f"mapping {frame.mapping_id}")
                for path in mapping.path_string_ids:
                    need("mapping_paths", path, f"mapping {frame.mapping_id}")
    owner = thread_owner.get(sample.tid)
    if owner is None:
        fail.add(f"{where}: PerfSample of tid {sample.tid}, which no thread track declares")
    elif owner[0] != sample.pid:
        fail.add(
            f"{where}: PerfSample of tid {sample.tid} in pid {sample.pid}, but its thread "
            f"track is in pid {owner[0]}"
        )


class SequenceState:
    """Interned tables of one trusted_packet_sequence_id since its last clear."""

    def __init__(self) -> None:
        self.seen = False
        self.tables: dict[str, dict[int, str]] = {
            "event_names": {},
            "event_categories": {},
            "debug_annotation_names": {},
        }
        # Interned tables of stack samples (entries kept whole: frames and
        # callstacks point into the others).
        self.profiling: dict[str, dict] = {name: {} for name in PROFILING_TABLES}
        self.defaults_track_uuid: int | None = None
        self.defaults_clock_id: int | None = None
        # clock id -> (timestamp, packet) of the sequence's latest packet on it
        self.last_ts: dict[int, tuple[int, int]] = {}

    def clear(self) -> None:
        for t in self.tables.values():
            t.clear()
        for t in self.profiling.values():
            t.clear()
        self.defaults_track_uuid = None
        self.defaults_clock_id = None


class Track:
    """A declared track and the state of the events seen on it so far. A
    placeholder stands in for a uuid used before any TrackDescriptor declared it."""

    def __init__(self, index: int, desc, placeholder: bool = False) -> None:
        self.packet = index
        self.placeholder = placeholder
        self.open: list[tuple[int, str, int]] = []  # (ts, name, packet) of open BEGINs
        self.last_ts: int | None = None
        self.describe(desc)

    def describe(self, desc) -> None:
        self.desc = desc
        self.kind = (
            "thread" if desc.HasField("thread")
            else "counter" if desc.HasField("counter")
            else "process" if desc.HasField("process")
            else "other"
        )
        self.label = desc.name or (
            desc.thread.thread_name if self.kind == "thread"
            else desc.process.process_name if self.kind == "process"
            else ""
        )


def annotation_iids(annotations):
    """Yields every debug annotation name_iid, nested dicts and arrays included."""
    for a in annotations:
        if a.HasField("name_iid"):
            yield a.name_iid
        yield from annotation_iids(a.dict_entries)
        yield from annotation_iids(a.array_values)


def declare_track(i, td, tracks, process_pids, thread_owner, warnings, fail) -> None:
    """Registers one TrackDescriptor and checks it against the tracks declared before it."""
    where = f"packet {i}"
    if not td.HasField("uuid") or td.uuid == 0:
        fail.add(f"{where}: TrackDescriptor without a non-zero uuid")
        return
    track = tracks.get(td.uuid)
    if track is not None and not track.placeholder:
        if track.desc.SerializeToString(deterministic=True) != td.SerializeToString(
            deterministic=True
        ):
            fail.add(
                f"{where}: track uuid {td.uuid} declared again with different contents "
                f"(first declared in packet {track.packet})"
            )
        return
    if track is None:
        track = tracks[td.uuid] = Track(i, td)
    else:
        # Used before this declaration (already reported): adopt the stand-in so
        # that the events seen so far keep their balance state.
        track.placeholder = False
        track.describe(td)

    kinds = [k for k in ("process", "thread", "counter") if td.HasField(k)]
    if len(kinds) > 1:
        fail.add(f"{where}: track {td.uuid} sets {' and '.join(kinds)}; pick one")
    if td.HasField("parent_uuid"):
        parent = tracks.get(td.parent_uuid)
        if parent is None or parent.placeholder:
            fail.add(
                f"{where}: track {td.uuid} has parent_uuid {td.parent_uuid}, not declared by "
                "a TrackDescriptor in an earlier packet"
            )
        elif track.kind == "counter" and parent.kind != "process":
            fail.add(
                f"{where}: counter track {td.uuid} ({track.label!r}) has parent "
                f"{td.parent_uuid}, a {parent.kind} track; it must be a process track"
            )
    elif track.kind == "counter":
        fail.add(
            f"{where}: counter track {td.uuid} ({track.label!r}) has no parent_uuid; "
            "it must be the process track of its plane"
        )

    if track.kind == "process":
        p = td.process
        if not p.HasField("pid") or not p.process_name:
            fail.add(f"{where}: process track {td.uuid} needs pid and process_name")
        if p.pid in process_pids:
            fail.add(f"{where}: pid {p.pid} already has process track {process_pids[p.pid]}")
        process_pids.setdefault(p.pid, td.uuid)
    elif track.kind == "thread":
        t = td.thread
        if not (t.HasField("pid") and t.HasField("tid") and t.thread_name):
            fail.add(f"{where}: thread track {td.uuid} needs pid, tid and thread_name")
        if t.pid not in process_pids:
            fail.add(
                f"{where}: thread track {td.uuid} ({t.thread_name!r}) has pid {t.pid}, which "
                "no earlier process TrackDescriptor declares"
            )
        owner = thread_owner.get(t.tid)
        if owner is not None and owner[0] != t.pid:
            warnings.append(
                f"{where}: tid {t.tid} is used in pid {owner[0]} and pid {t.pid}; Perfetto "
                "treats tids as system-wide, so its UI may mix up these threads"
            )
        thread_owner.setdefault(t.tid, (t.pid, td.uuid))
    elif track.kind == "counter" and not td.name:
        warnings.append(f"{where}: counter track {td.uuid} has no name")


def check_trace(trace, pb, fail: Failures, session_ns: int | None = None) -> dict:
    seqs: dict[int, SequenceState] = defaultdict(SequenceState)
    tracks: dict[int, Track] = {}
    process_pids: dict[int, int] = {}  # pid -> uuid of its process track
    thread_owner: dict[int, tuple[int, int]] = {}  # tid -> (pid, uuid)
    warnings: list[str] = []

    TYPE_NAMES = {v.number: v.name for v in pb.TrackEvent.Type.DESCRIPTOR.values}
    trace_clock = BUILTIN_CLOCK_BOOTTIME
    snapshot_clocks: set[int] = set()

    flow_out: dict[int, tuple[int, int]] = {}  # id -> (packet, ts) of the producer
    flow_in: dict[int, tuple[int, int]] = {}  # id -> (packet, ts) of the consumer

    slices = instants = counter_values = perf_samples = 0
    session_start = None
    sampled: set[int] = set()
    duration_total = 0
    names: Counter[str] = Counter()

    for i, packet in enumerate(trace.packet):
        where = f"packet {i}"
        if not packet.HasField("trusted_packet_sequence_id"):
            fail.add(f"{where}: no trusted_packet_sequence_id (every packet must set it)")
            continue
        seq_id = packet.trusted_packet_sequence_id
        seq = seqs[seq_id]
        flags = packet.sequence_flags
        cleared = bool(flags & SEQ_INCREMENTAL_STATE_CLEARED) or packet.incremental_state_cleared
        if not seq.seen and not cleared:
            fail.add(
                f"{where}: first packet of sequence {seq_id} does not set "
                "SEQ_INCREMENTAL_STATE_CLEARED (sequence_flags bit 1)"
            )
        seq.seen = True
        if cleared:
            seq.clear()

        if packet.HasField("trace_packet_defaults"):
            d = packet.trace_packet_defaults
            if d.HasField("timestamp_clock_id"):
                seq.defaults_clock_id = d.timestamp_clock_id
            if d.HasField("track_event_defaults") and d.track_event_defaults.HasField("track_uuid"):
                seq.defaults_track_uuid = d.track_event_defaults.track_uuid

        if packet.HasField("interned_data"):
            for table_name, table in seq.tables.items():
                for entry in getattr(packet.interned_data, table_name):
                    old = table.get(entry.iid)
                    if old is not None and old != entry.name:
                        fail.add(
                            f"{where}: interned {table_name} iid {entry.iid} redefined as "
                            f"{entry.name!r} (was {old!r}) without clearing the sequence state"
                        )
                    table[entry.iid] = entry.name
            for table_name, table in seq.profiling.items():
                for entry in getattr(packet.interned_data, table_name):
                    if entry.iid in table and table[entry.iid] != entry:
                        fail.add(f"{where}: interned {table_name} iid {entry.iid} redefined")
                    table[entry.iid] = entry

        if packet.HasField("clock_snapshot"):
            cs = packet.clock_snapshot
            if session_start is None and packet.HasField("timestamp"):
                session_start = packet.timestamp
            if cs.HasField("primary_trace_clock"):
                trace_clock = cs.primary_trace_clock
            snapshot_clocks.update(c.clock_id for c in cs.clocks)

        if packet.HasField("timestamp"):
            if packet.timestamp <= MIN_EPOCH_NS:
                fail.add(
                    f"{where}: timestamp {packet.timestamp} is not Unix-epoch nanoseconds "
                    "(expected > 1e18)"
                )
            clock = (
                packet.timestamp_clock_id if packet.HasField("timestamp_clock_id")
                else seq.defaults_clock_id or 0
            )
            previous = seq.last_ts.get(clock)
            if previous is not None and packet.timestamp < previous[0]:
                fail.add(
                    f"{where}: timestamp {packet.timestamp} on sequence {seq_id} is earlier "
                    f"than packet {previous[1]} of that sequence ({previous[0]}); a sequence "
                    "goes forward in time (write each track's packets in order, on a "
                    "sequence of its own or merged by time)"
                )
            else:
                seq.last_ts[clock] = (packet.timestamp, i)
            # Clock 0 means "already in trace time": trace processor converts nothing.
            if clock and clock != trace_clock and not {clock, trace_clock} <= snapshot_clocks:
                fail.add(
                    f"{where}: timestamp_clock_id {clock} differs from the trace clock "
                    f"{trace_clock} and no earlier ClockSnapshot holds both; trace processor "
                    "cannot convert it and drops the packet"
                )

        if packet.HasField("track_descriptor"):
            declare_track(i, packet.track_descriptor, tracks, process_pids, thread_owner,
                          warnings, fail)

        if packet.HasField("perf_sample"):
            if not (flags & SEQ_NEEDS_INCREMENTAL_STATE or cleared):
                fail.add(f"{where}: a PerfSample uses interned ids but does not set "
                         "SEQ_NEEDS_INCREMENTAL_STATE")
            check_perf_sample(where, packet.perf_sample, seq, thread_owner, fail)
            ts = packet.timestamp
            if session_start is None or ts < session_start:
                fail.add(f"{where}: PerfSample at {ts}, before the session's start "
                         f"({session_start})")
            elif session_ns is not None and ts > session_start + session_ns:
                fail.add(f"{where}: PerfSample at {ts}, after the session's end "
                         f"({session_start + session_ns})")
            perf_samples += 1
            sampled.add(packet.perf_sample.tid)

        if not packet.HasField("track_event"):
            continue
        ev = packet.track_event

        # Interned ids used by this packet must exist on its sequence.
        used = []
        if ev.HasField("name_iid"):
            used.append(("event_names", ev.name_iid))
        used += [("event_categories", c) for c in ev.category_iids]
        used += [("debug_annotation_names", a) for a in annotation_iids(ev.debug_annotations)]
        if used and not (flags & SEQ_NEEDS_INCREMENTAL_STATE) and not cleared:
            fail.add(
                f"{where}: uses interned ids but does not set SEQ_NEEDS_INCREMENTAL_STATE "
                "(sequence_flags bit 2)"
            )
        for table_name, iid in used:
            if iid not in seq.tables[table_name]:
                fail.add(
                    f"{where}: {table_name} iid {iid} is not defined on sequence {seq_id} "
                    "since its last SEQ_INCREMENTAL_STATE_CLEARED"
                )

        if not packet.HasField("timestamp"):
            fail.add(f"{where}: TrackEvent packet without a timestamp")
            continue
        ts = packet.timestamp

        uuid = ev.track_uuid if ev.HasField("track_uuid") else seq.defaults_track_uuid
        if uuid is None:
            fail.add(f"{where}: TrackEvent without track_uuid (and no sequence default)")
            continue
        track = tracks.get(uuid)
        if track is None or track.placeholder:
            fail.add(
                f"{where}: track_uuid {uuid} is not declared by a TrackDescriptor in an "
                "earlier packet"
            )
            if track is None:
                # Keep checking balance and flows on a stand-in, so one late
                # declaration is not reported as a cascade of unrelated failures.
                track = tracks[uuid] = Track(i, pb.TrackDescriptor(uuid=uuid), placeholder=True)

        if ev.HasField("name_iid"):
            name = seq.tables["event_names"].get(ev.name_iid, f"<iid {ev.name_iid}>")
        else:
            name = ev.name

        type_name = TYPE_NAMES.get(ev.type, f"type {ev.type}")
        if track.last_ts is not None and ts < track.last_ts:
            fail.add(
                f"{where}: {type_name} at {ts} on track {uuid} ({track.label!r}) is earlier than "
                f"the previous event on that track ({track.last_ts})"
            )
        track.last_ts = ts if track.last_ts is None else max(ts, track.last_ts)

        if ev.flow_ids or ev.terminating_flow_ids:
            if ev.type not in (ev.TYPE_SLICE_BEGIN, ev.TYPE_INSTANT):
                fail.add(f"{where}: flow ids on a {type_name}; put them on the slice's BEGIN")
            for fid in ev.flow_ids:
                if fid in flow_out:
                    fail.add(f"{where}: flow id {fid} started again (first in packet {flow_out[fid][0]})")
                flow_out.setdefault(fid, (i, ts))
            for fid in ev.terminating_flow_ids:
                if fid in flow_in:
                    fail.add(f"{where}: flow id {fid} terminated again (first in packet {flow_in[fid][0]})")
                flow_in.setdefault(fid, (i, ts))
        if ev.flow_ids_old or ev.terminating_flow_ids_old:
            fail.add(f"{where}: uses the deprecated flow_ids_old/terminating_flow_ids_old fields")

        if ev.type in (ev.TYPE_SLICE_BEGIN, ev.TYPE_SLICE_END, ev.TYPE_INSTANT):
            if track.kind != "thread" and not track.placeholder:
                fail.add(
                    f"{where}: {type_name} on track {uuid} ({track.label!r}), a {track.kind} "
                    "track; slices and instants go on thread tracks"
                )
            if ev.type != ev.TYPE_SLICE_END and not name:
                fail.add(f"{where}: {type_name} on track {uuid} has no name (name_iid or name)")
            if ev.type == ev.TYPE_SLICE_BEGIN:
                track.open.append((ts, name, i))
            elif ev.type == ev.TYPE_SLICE_END:
                if not track.open:
                    fail.add(
                        f"{where}: TYPE_SLICE_END on track {uuid} ({track.label!r}) with no open "
                        "TYPE_SLICE_BEGIN"
                    )
                else:
                    begin_ts, begin_name, _ = track.open.pop()
                    slices += 1
                    duration_total += ts - begin_ts
                    names[begin_name] += 1
            else:
                instants += 1
                slices += 1
                names[name] += 1
        elif ev.type == ev.TYPE_COUNTER:
            if track.kind != "counter" and not track.placeholder:
                fail.add(
                    f"{where}: TYPE_COUNTER on track {uuid} ({track.label!r}), a {track.kind} "
                    "track; counter values go on tracks whose descriptor sets `counter`"
                )
            if not (ev.HasField("counter_value") or ev.HasField("double_counter_value")):
                fail.add(f"{where}: TYPE_COUNTER without counter_value or double_counter_value")
            counter_values += 1
        else:
            fail.add(f"{where}: TrackEvent type {type_name} is not BEGIN, END, INSTANT or COUNTER")

    for uuid, track in tracks.items():
        if track.placeholder:
            fail.add(f"track_uuid {uuid} is used but never declared by a TrackDescriptor")
        if track.open:
            ts, name, i = track.open[-1]
            fail.add(
                f"track {uuid} ({track.label!r}): {len(track.open)} TYPE_SLICE_BEGIN without "
                f"TYPE_SLICE_END at the end of the trace (last: {name!r} in packet {i})"
            )

    for fid, (i, ts) in sorted(flow_out.items()):
        if fid not in flow_in:
            fail.add(f"packet {i}: flow id {fid} has no terminating_flow_ids end")
        elif flow_in[fid][1] < ts:
            fail.add(
                f"packet {flow_in[fid][0]}: flow id {fid} terminates at {flow_in[fid][1]}, before "
                f"it starts at {ts} (packet {i}); trace processor reads events in time order "
                "and drops it"
            )
    for fid, (i, _) in sorted(flow_in.items()):
        if fid not in flow_out:
            fail.add(f"packet {i}: terminating flow id {fid} was never started by a flow_ids")

    return {
        "packets": len(trace.packet),
        "slices": slices,
        "slice_duration_ns_total": duration_total,
        "instants": instants,
        "counter_values": counter_values,
        "counter_tracks": sum(1 for t in tracks.values() if t.kind == "counter" and not t.placeholder),
        "flows": sum(1 for fid in flow_out if fid in flow_in),
        "threads": [t.desc.thread.thread_name for t in tracks.values() if t.kind == "thread"],
        "processes": [t.desc.process.process_name for t in tracks.values() if t.kind == "process"],
        "counter_track_names": [t.label for t in tracks.values() if t.kind == "counter"],
        "names": dict(sorted(names.items())),
        "perf_samples": perf_samples,
        "sampled_threads": sorted(
            tracks[thread_owner[tid][1]].label for tid in sampled
            if tid in thread_owner and thread_owner[tid][1] in tracks
        ),
        "warnings": warnings,
    }


def parse_args(argv):
    ap = argparse.ArgumentParser(description="Check a Perfetto .pftrace written by prof.")
    ap.add_argument("file", help="the .pftrace file")
    ap.add_argument("--min-slices", type=int, default=0, metavar="N",
                    help="fail unless there are at least N slices (complete pairs + instants)")
    ap.add_argument("--min-counters", type=int, default=0, metavar="N",
                    help="fail unless there are at least N TYPE_COUNTER values")
    ap.add_argument("--min-flows", type=int, default=0, metavar="N",
                    help="fail unless at least N flow ids have both ends")
    ap.add_argument("--thread", action="append", default=[], metavar="NAME",
                    help="a thread track with this thread_name must exist (repeatable)")
    ap.add_argument("--process", action="append", default=[], metavar="NAME",
                    help="a process track with this process_name must exist (repeatable)")
    ap.add_argument("--min-perf-samples", type=int, default=0, metavar="N",
                    help="fail unless there are at least N PerfSample packets")
    ap.add_argument("--session-ns", type=int, metavar="NS",
                    help="every PerfSample lies within NS of the session's start")
    ap.add_argument("--summary", metavar="OUT.json", help="also write the JSON summary here")
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    pb = load_schema()
    try:
        with open(args.file, "rb") as f:
            data = f.read()
    except OSError as e:
        print(f"{PROG}: cannot read {args.file}: {e}", file=sys.stderr)
        return EXIT_USAGE

    fail = Failures()
    if not data:
        fail.add("the file is empty")
    wire_check(data, pb, fail)

    trace = pb.Trace()
    summary = None
    try:
        trace.ParseFromString(data)
    except Exception as e:  # noqa: BLE001 - any decode error is a failure of the file
        fail.add(f"perfetto_trace_pb2 cannot decode the file as a Trace: {type(e).__name__}: {e}")
    else:
        summary = check_trace(trace, pb, fail, args.session_ns)
        for name, key, n in (("perf samples", "perf_samples", args.min_perf_samples),
                             ("slices", "slices", args.min_slices),
                             ("counter values", "counter_values", args.min_counters),
                             ("flows", "flows", args.min_flows)):
            if summary[key] < n:
                fail.add(f"{summary[key]} {name}, expected at least {n}")
        for t in args.thread:
            if t not in summary["threads"]:
                fail.add(f"no thread track named {t!r} (threads: {summary['threads']})")
        for p in args.process:
            if p not in summary["processes"]:
                fail.add(f"no process track named {p!r} (processes: {summary['processes']})")
        for w in summary["warnings"]:
            print(f"{PROG}: warning: {w}", file=sys.stderr)

    if summary is not None:
        text = json.dumps(summary, indent=2, sort_keys=True)
        print(text)
        if args.summary:
            with open(args.summary, "w") as f:
                f.write(text + "\n")

    if fail.count:
        for msg in fail.items:
            print(f"{PROG}: FAIL: {msg}", file=sys.stderr)
        if fail.count > len(fail.items):
            print(f"{PROG}: ... and {fail.count - len(fail.items)} more failures", file=sys.stderr)
        print(f"{PROG}: {os.path.basename(args.file)}: {fail.count} failure(s)", file=sys.stderr)
        return EXIT_FAIL
    print(f"{PROG}: OK: {os.path.basename(args.file)}", file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
