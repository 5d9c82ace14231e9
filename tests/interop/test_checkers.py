#!/usr/bin/env python3
"""Self-test of the export checkers: each must pass a valid synthetic file and
fail, with the right message, on broken variants of it.

  python tests/interop/test_checkers.py [--only perfetto,chrome,otlp,agree,memory]

Runs every checker as CI does (a subprocess, same Python; `node` for the
Chrome checker), so the exit status and the messages are what CI will see.
Needs `pip install -r tests/interop/requirements-export.txt` and, for the
Chrome part, `npm ci --prefix tests/interop/chrome_check`; the memory part
(`xprof_memory.py`) needs xprof from `requirements.txt`. The OTLP part also
sends through the OpenTelemetry Python SDK when it is installed (it is not in
requirements-export.txt); without it, only the built-in raw OTLP/HTTP sender
is used. No pytest needed. Exit status 0 when every case behaves.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable

# An absolute Unix-epoch time in ns (2023-11-14), as prof's exporters write.
T0 = 1_700_000_000_000_000_000

results: list[tuple[str, bool, str]] = []


def run_case(name, argv, expect_rc, expect_text=None, timeout=120):
    """Runs one checker invocation; records whether rc and stderr are as expected."""
    t = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    elapsed = time.monotonic() - t
    ok = p.returncode == expect_rc and (expect_text is None or expect_text in p.stderr)
    detail = f"rc={p.returncode} ({elapsed:.1f}s)"
    if not ok:
        detail += (f", expected rc={expect_rc}"
                   + (f" and stderr containing {expect_text!r}" if expect_text else "")
                   + f"\n--- stdout ---\n{p.stdout[-3000:]}\n--- stderr ---\n{p.stderr[-3000:]}")
    results.append((name, ok, detail))
    print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)
    return p


# --------------------------------------------------------------------------
# Perfetto
# --------------------------------------------------------------------------


def perfetto_packets(pb):
    """A valid trace as a list of TracePackets: host and GPU planes, a flow from
    a host slice to a GPU kernel, an instant and a counter track."""
    P = pb.TracePacket
    CLEARED, NEEDS = P.SEQ_INCREMENTAL_STATE_CLEARED, P.SEQ_NEEDS_INCREMENTAL_STATE
    TE = pb.TrackEvent
    packets = []

    def packet(seq=2, flags=0, ts=None):
        p = P()
        p.trusted_packet_sequence_id = seq
        if flags:
            p.sequence_flags = flags
        if ts is not None:
            p.timestamp = ts
        packets.append(p)
        return p

    cs = packet(seq=1, flags=CLEARED, ts=T0).clock_snapshot
    for clock in (pb.BUILTIN_CLOCK_BOOTTIME, pb.BUILTIN_CLOCK_REALTIME):
        c = cs.clocks.add()
        c.clock_id, c.timestamp = clock, T0
    cs.primary_trace_clock = pb.BUILTIN_CLOCK_REALTIME

    def track(seq=2, flags=0, **kw):
        td = packet(seq=seq, flags=flags).track_descriptor
        td.uuid = kw["uuid"]
        if "parent" in kw:
            td.parent_uuid = kw["parent"]
        if "process" in kw:
            td.process.pid, td.process.process_name = kw["process"]
        if "thread" in kw:
            td.thread.pid, td.thread.tid, td.thread.thread_name = kw["thread"]
        if "counter" in kw:
            td.name = kw["counter"]
            td.counter.SetInParent()

    # One sequence per writer, each in time order: the host (2), the GPU (3), the
    # counter (4).
    track(flags=CLEARED, uuid=100, process=(1, "/host:CPU"))
    track(uuid=101, thread=(1, 11, "main"))
    track(seq=3, flags=CLEARED, uuid=200, process=(2, "/device:GPU:0"))
    track(seq=3, uuid=201, thread=(2, 21, "stream 7"))
    track(seq=4, flags=CLEARED, uuid=202, parent=200, counter="memory")

    def event(ts, kind, uuid, iid=None, name=None, interned=None, seq=2, **kw):
        p = packet(seq=seq, flags=NEEDS, ts=T0 + ts)
        for table, entries in (interned or {}).items():
            for i, n in entries:
                e = getattr(p.interned_data, table).add()
                e.iid, e.name = i, n
        ev = p.track_event
        ev.type, ev.track_uuid = kind, uuid
        if iid is not None:
            ev.name_iid = iid
        if name is not None:
            ev.name = name
        for key, value in kw.items():
            if key == "ann":
                for ann_iid, v in value:
                    a = ev.debug_annotations.add()
                    a.name_iid, a.uint_value = ann_iid, v
            elif key == "cats":
                ev.category_iids.extend(value)
            elif key in ("flow_ids", "terminating_flow_ids"):
                getattr(ev, key).extend(value)
            else:
                setattr(ev, key, value)
        return p

    event(1000, TE.TYPE_SLICE_BEGIN, 101, iid=1, cats=[1], ann=[(1, 4096)],
          interned={"event_names": [(1, "step")], "event_categories": [(1, "host")],
                    "debug_annotation_names": [(1, "bytes")]})
    event(2000, TE.TYPE_SLICE_BEGIN, 101, iid=2, cats=[1], flow_ids=[7],
          interned={"event_names": [(2, "launch")]})
    event(2500, TE.TYPE_INSTANT, 101, name="mark")
    event(3000, TE.TYPE_SLICE_END, 101)
    event(9000, TE.TYPE_SLICE_END, 101)
    event(4000, TE.TYPE_SLICE_BEGIN, 201, iid=3, terminating_flow_ids=[7],
          interned={"event_names": [(3, "kernel")]}, seq=3)
    event(7000, TE.TYPE_SLICE_END, 201, seq=3)
    event(1000, TE.TYPE_COUNTER, 202, counter_value=100, seq=4)
    event(5000, TE.TYPE_COUNTER, 202, double_counter_value=250.5, seq=4)
    return packets


def perf_sample_packets(pb):
    """Stack samples for the trace of perfetto_packets(), as prof writes them: on a
    sequence of their own (5), a first packet clearing its state and interning a
    mapping (its path and build id), two function names, two frames and a callstack,
    then two PerfSamples on main's thread track (pid 1, tid 11)."""
    P = pb.TracePacket
    first = P()
    first.trusted_packet_sequence_id = 5
    first.sequence_flags = P.SEQ_INCREMENTAL_STATE_CLEARED
    first.timestamp = T0 + 1500
    d = first.interned_data
    for table, iid, text in (("function_names", 1, b"forward"), ("function_names", 2, b"matmul"),
                             ("build_ids", 1, b"0123abcd"), ("mapping_paths", 1, b"bin"),
                             ("mapping_paths", 2, b"train")):
        e = getattr(d, table).add()
        e.iid, e.str = iid, text
    m = d.mappings.add()
    m.iid, m.build_id, m.start, m.end = 1, 1, 0x1000, 0x9000
    m.path_string_ids.extend([1, 2])
    for iid, name in ((1, 1), (2, 2)):
        f = d.frames.add()
        f.iid, f.function_name_id, f.mapping_id, f.rel_pc = iid, name, 1, 0x100 * iid
    c = d.callstacks.add()
    c.iid = 1
    c.frame_ids.extend([1, 2])  # outermost first: forward calls matmul
    packets = [first]
    for ts in (2000, 6000):
        p = P()
        p.trusted_packet_sequence_id = 5
        p.sequence_flags = P.SEQ_NEEDS_INCREMENTAL_STATE
        p.timestamp = T0 + ts
        p.perf_sample.pid, p.perf_sample.tid, p.perf_sample.callstack_iid = 1, 11, 1
        packets.append(p)
    return packets


def _varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _ld(field, payload):
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def encode_trace(packets, raw_tail=b""):
    return b"".join(_ld(1, p.SerializeToString()) for p in packets) + raw_tail


def test_perfetto(tmp):
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    checker = [PY, os.path.join(HERE, "perfetto_check.py")]
    TE = pb.TrackEvent

    def write(name, packets, raw_tail=b""):
        path = os.path.join(tmp, name + ".pftrace")
        with open(path, "wb") as f:
            f.write(encode_trace(packets, raw_tail))
        return path

    good = write("good", perfetto_packets(pb))
    summary_path = os.path.join(tmp, "perfetto_summary.json")
    p = run_case("perfetto: valid trace passes", checker + [
        good, "--min-slices", "4", "--min-counters", "2", "--min-flows", "1",
        "--thread", "main", "--thread", "stream 7", "--process", "/device:GPU:0",
        "--summary", summary_path], 0)
    if p.returncode == 0:
        s = json.load(open(summary_path))
        expect = {"slices": 4, "instants": 1, "slice_duration_ns_total": 8000 + 1000 + 3000,
                  "counter_values": 2, "counter_tracks": 1, "flows": 1,
                  "names": {"step": 1, "launch": 1, "mark": 1, "kernel": 1}}
        got = {k: s[k] for k in expect}
        results.append(("perfetto: summary numbers", got == expect, f"{got} vs {expect}"))
        print(f"{'ok  ' if got == expect else 'FAIL'} perfetto: summary numbers {got}")

    run_case("perfetto: --thread of a missing thread fails",
             checker + [good, "--thread", "nope"], 1, "no thread track named 'nope'")

    def variant(name, mutate, expect_text, raw_tail=b""):
        packets = perfetto_packets(pb)
        mutate(packets)
        run_case(f"perfetto: {name}", checker + [write(name.replace(" ", "_"), packets, raw_tail)],
                 1, expect_text)

    # packets: 0 clock, 1-5 tracks (100,101,200,201,202), 6.. events (see perfetto_packets)
    def move_thread_track_after_use(ps):
        ps.insert(7, ps.pop(2))
    variant("track used before declaration", move_thread_track_after_use,
            "track_uuid 101 is not declared by a TrackDescriptor in an earlier packet")

    def extra_end(ps):
        extra = copy.deepcopy(ps[9])  # the END at 3000
        extra.timestamp = T0 + 9500
        ps.insert(11, extra)
    variant("unbalanced END", extra_end, "TYPE_SLICE_END on track 101 ('main') with no open")

    def missing_end(ps):
        del ps[12]
    variant("BEGIN without END", missing_end, "TYPE_SLICE_BEGIN without TYPE_SLICE_END")

    def undefined_iid(ps):
        ps[11].ClearField("interned_data")
    variant("undefined iid", undefined_iid, "event_names iid 3 is not defined on sequence 3")

    def iid_after_clear(ps):
        # Packet 10 clears the host sequence's state; a later use of iid 1 (defined
        # before the clear) must then fail.
        ps[10].sequence_flags |= pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        late = copy.deepcopy(ps[6])
        late.ClearField("interned_data")
        late.timestamp = T0 + 9500
        late.track_event.type = TE.TYPE_INSTANT
        ps.insert(11, late)
    variant("iid from before a clear", iid_after_clear, "event_names iid 1 is not defined")

    def sequence_going_back(ps):
        # The GPU's events on the host's sequence, after its END at 9000 (each track
        # stays in order: only the shared sequence goes back).
        for p in ps[11:13]:
            p.trusted_packet_sequence_id = 2
    variant("timestamps going back on a sequence", sequence_going_back,
            "on sequence 2 is earlier than packet 10 of that sequence")

    def no_needs_flag(ps):
        ps[7].ClearField("sequence_flags")
    variant("interned ids without SEQ_NEEDS_INCREMENTAL_STATE", no_needs_flag,
            "does not set SEQ_NEEDS_INCREMENTAL_STATE")

    def no_clear_flag(ps):
        ps[1].ClearField("sequence_flags")
    variant("first packet without SEQ_INCREMENTAL_STATE_CLEARED", no_clear_flag,
            "first packet of sequence 2 does not set SEQ_INCREMENTAL_STATE_CLEARED")

    def no_seq_id(ps):
        ps[3].ClearField("trusted_packet_sequence_id")
    variant("packet without trusted_packet_sequence_id", no_seq_id,
            "packet 3: no trusted_packet_sequence_id")

    def missing_flow_end(ps):
        ps[11].track_event.ClearField("terminating_flow_ids")
    variant("missing flow end", missing_flow_end, "flow id 7 has no terminating_flow_ids end")

    def relative_ts(ps):
        ps[6].timestamp = 1000
    variant("relative timestamp", relative_ts, "is not Unix-epoch nanoseconds")

    def decreasing_ts(ps):
        ps[8].timestamp = T0 + 1500  # instant before the BEGIN at 2000 that precedes it
    variant("timestamps going back on a track", decreasing_ts, "is earlier than the previous event")

    def counter_on_thread(ps):
        ps[13].track_event.track_uuid = 101
    variant("counter value on a thread track", counter_on_thread,
            "TYPE_COUNTER on track 101 ('main'), a thread track")

    def counter_without_parent(ps):
        ps[5].track_descriptor.ClearField("parent_uuid")
    variant("counter track without parent", counter_without_parent, "has no parent_uuid")

    def clock_without_snapshot(ps):
        ps[7].timestamp_clock_id = pb.BUILTIN_CLOCK_MONOTONIC
    variant("timestamp clock not in the ClockSnapshot", clock_without_snapshot,
            "no earlier ClockSnapshot holds both")

    def packed_flow_ids(ps):
        # Re-encode packet 7's flow_ids packed, as a proto3-style encoder would.
        ev = ps.pop(7)
        te = ev.track_event
        ids = list(te.flow_ids)
        te.ClearField("flow_ids")
        te_bytes = te.SerializeToString() + _ld(47, b"".join(struct.pack("<Q", i) for i in ids))
        ev.ClearField("track_event")
        raw = _ld(1, ev.SerializeToString() + _ld(11, te_bytes))
        ps[:] = ps[:7] + [("RAW", raw)] + ps[7:]
    packets = perfetto_packets(pb)
    packed_flow_ids(packets)
    path = os.path.join(tmp, "packed_flow_ids.pftrace")
    with open(path, "wb") as f:
        f.write(b"".join(p[1] if isinstance(p, tuple) else _ld(1, p.SerializeToString())
                         for p in packets))
    run_case("perfetto: packed flow_ids", checker + [path], 1,
             "TrackEvent.flow_ids (field 47) is written packed")

    # Stack samples (PerfSample): appended to the valid trace, they pass; each broken
    # variant fails, naming what is wrong. The samples are the last three packets:
    # [-3] the interning packet, [-2] and [-1] the samples at +2000 and +6000 ns.
    def with_samples(name, mutate=None, extra=()):
        packets = perfetto_packets(pb) + perf_sample_packets(pb)
        if mutate:
            mutate(packets)
        return checker + [write(name, packets)] + list(extra)

    run_case("perfetto: valid trace with PerfSamples passes",
             with_samples("samples_good", extra=["--min-perf-samples", "2",
                                                 "--session-ns", "10000"]), 0)

    def sample_variant(name, mutate, expect_text, extra=()):
        run_case(f"perfetto: PerfSample: {name}",
                 with_samples("samples_" + name.replace(" ", "_"), mutate, extra), 1, expect_text)

    def callstack_undefined(ps):
        ps[-2].perf_sample.callstack_iid = 9
    sample_variant("callstack iid never defined", callstack_undefined,
                   "the PerfSample uses callstacks iid 9, not defined on the sequence before")

    def interned_after_use(ps):
        # The interning packet after the first sample: its ids are used before they
        # are defined (and the sequence's first packet no longer clears its state).
        ps[-3], ps[-2] = ps[-2], ps[-3]
        ps[-2].timestamp = ps[-3].timestamp
    sample_variant("iids defined after the sample that uses them", interned_after_use,
                   "the PerfSample uses callstacks iid 1, not defined on the sequence before")

    def frame_mapping_undefined(ps):
        ps[-3].interned_data.frames[1].mapping_id = 7
    sample_variant("a frame's mapping never defined", frame_mapping_undefined,
                   "frame 2 uses mappings iid 7, not defined")

    def iids_on_another_sequence(ps):
        # Interned on sequence 5, used from sequence 6: ids are per sequence.
        for p in ps[-2:]:
            p.trusted_packet_sequence_id = 6
        ps[-2].sequence_flags |= pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    sample_variant("iids of another sequence", iids_on_another_sequence,
                   "uses callstacks iid 1, not defined on the sequence before")

    def wrong_pid(ps):
        ps[-1].perf_sample.pid = 2
    sample_variant("pid other than its thread track's", wrong_pid,
                   "PerfSample of tid 11 in pid 2, but its thread track is in pid 1")

    def undeclared_tid(ps):
        ps[-1].perf_sample.tid = 99
    sample_variant("tid of no thread track", undeclared_tid,
                   "PerfSample of tid 99, which no thread track declares")

    def before_session(ps):
        ps[-3].timestamp = T0 - 2000
        ps[-2].timestamp = T0 - 1000
    sample_variant("time before the session", before_session,
                   f"PerfSample at {T0 - 1000}, before the session's start ({T0})")

    sample_variant("time after the session", None,
                   f"PerfSample at {T0 + 6000}, after the session's end ({T0 + 5000})",
                   extra=["--session-ns", "5000"])

    run_case("perfetto: unknown field number", checker + [write("unknown_field", perfetto_packets(pb),
             _ld(1, _varint(10 << 3) + _varint(2) + _varint(999 << 3) + _varint(1)))], 1,
             "TracePacket has unknown field number 999")


# --------------------------------------------------------------------------
# Chrome JSON
# --------------------------------------------------------------------------


def chrome_trace():
    """The same profile as perfetto_packets(), as Chrome JSON (relative us)."""
    def x(name, pid, tid, ts, dur, **args):
        return {"ph": "X", "name": name, "cat": "prof", "pid": pid, "tid": tid,
                "ts": ts, "dur": dur, "args": args}
    return {
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "/host:CPU"}},
            {"ph": "M", "name": "process_sort_index", "pid": 1, "tid": 0, "args": {"sort_index": 0}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 11, "args": {"name": "main"}},
            {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "/device:GPU:0"}},
            {"ph": "M", "name": "thread_name", "pid": 2, "tid": 21, "args": {"name": "stream 7"}},
            x("step", 1, 11, 1.0, 8.0, bytes=4096),
            x("launch", 1, 11, 2.0, 1.0),
            {"ph": "i", "name": "mark", "cat": "prof", "pid": 1, "tid": 11, "ts": 2.5, "s": "t",
             "args": {}},
            x("kernel", 2, 21, 4.0, 3.0),
            {"ph": "s", "name": "flow", "cat": "prof", "id": 7, "pid": 1, "tid": 11, "ts": 2.0},
            {"ph": "f", "name": "flow", "cat": "prof", "id": 7, "pid": 2, "tid": 21, "ts": 4.0,
             "bp": "e"},
            {"ph": "C", "name": "memory", "pid": 2, "ts": 1.0, "args": {"bytes": 100}},
            {"ph": "C", "name": "memory", "pid": 2, "ts": 5.0, "args": {"bytes": 250.5}},
        ],
        "displayTimeUnit": "ns",
        "otherData": {"producer": "prof test_checkers"},
    }


def float_dropped_child():
    """A parent and a child ending on the same nanosecond whose float
    microseconds put the child's ts + dur past the parent's: the DevTools engine
    leaves the child out of the tree, though it nests in integer ns."""
    for k in range(10000):
        p0 = 1_000_000 + k * 7919
        p1, c0 = p0 + 123_457 + k * 13, p0 + 1000 + k
        if c0 / 1000 + (p1 - c0) / 1000 > p0 / 1000 + (p1 - p0) / 1000:
            return [(p0 / 1000, (p1 - p0) / 1000), (c0 / 1000, (p1 - c0) / 1000)]
    raise AssertionError("no float rounding case found")


def test_chrome(tmp):
    node = shutil.which("node")
    script = os.path.join(HERE, "chrome_check", "chrome_check.mjs")
    if not node or not os.path.isdir(os.path.join(HERE, "chrome_check", "node_modules")):
        results.append(("chrome: node and npm ci", False,
                        "needs node and `npm ci --prefix tests/interop/chrome_check`"))
        print("FAIL chrome: needs node and `npm ci --prefix tests/interop/chrome_check`")
        return
    checker = [node, script]

    def write(name, doc, gz=False):
        path = os.path.join(tmp, name + (".trace.json.gz" if gz else ".trace.json"))
        data = json.dumps(doc).encode()
        with open(path, "wb") as f:
            # mtime=0 keeps the gzip bytes deterministic.
            f.write(gzip.compress(data, mtime=0) if gz else data)
        return path

    summary_path = os.path.join(tmp, "chrome_summary.json")
    p = run_case("chrome: valid trace passes", checker + [
        write("good", chrome_trace()), "--min-slices", "4", "--min-counters", "2",
        "--min-flows", "1", "--thread", "main", "--thread", "stream 7",
        "--process", "/device:GPU:0", "--require-engine-flows", "--summary", summary_path], 0)
    if p.returncode == 0:
        s = json.load(open(summary_path))
        expect = {"slices": 4, "instants": 1, "slice_duration_ns_total": 12000,
                  "counter_values": 2, "flows": 1,
                  "names": {"step": 1, "launch": 1, "mark": 1, "kernel": 1}}
        got = {k: s[k] for k in expect}
        eng = s["engine"]
        ok = got == expect and eng["slices"] == 3 and eng["flows"] == 1 and eng["threads_with_events"] == 2
        results.append(("chrome: summary numbers", ok, f"{got}, engine {eng}"))
        print(f"{'ok  ' if ok else 'FAIL'} chrome: summary numbers {got} engine slices "
              f"{eng['slices']} flows {eng['flows']}")
    run_case("chrome: gzipped trace passes", checker + [write("good", chrome_trace(), gz=True)], 0)

    def variant(name, mutate, expect_text, extra=()):
        doc = chrome_trace()
        mutate(doc["traceEvents"])
        run_case(f"chrome: {name}", checker + [write(name.replace(" ", "_"), doc)] + list(extra),
                 1, expect_text)

    # traceEvents: 0-4 metadata, 5 step, 6 launch, 7 mark, 8 kernel, 9 s, 10 f, 11-12 C
    variant("partially overlapping X slices", lambda ev: ev[6].update(ts=8.5),
            "X slices partially overlap")
    variant("event without name", lambda ev: ev[8].pop("name"), 'has no "name" string')
    variant("flow without end", lambda ev: ev.pop(10), '1 "s" and 0 "f" events')
    variant("flow end outside any slice", lambda ev: ev[10].update(ts=7.5),
            "is not inside any X slice of thread 2/21")
    variant("flow end without bp", lambda ev: ev[10].pop("bp"), 'must set "bp": "e"')
    variant("absolute timestamps", lambda ev: ev[5].update(ts=1.7e15),
            "is not a relative timestamp")
    variant("counter without values", lambda ev: ev[11].update(args={}),
            "a counter needs \"args\" with at least one numeric series")
    variant("missing thread", lambda ev: None, 'no thread named "gpu"', extra=["--thread", "gpu"])
    variant("flow the engine cannot bind", lambda ev: ev[9].update(ts=2.25),
            "the engine binds 0 of 1 flows", extra=["--require-engine-flows"])

    def float_child(ev):
        (pts, pdur), (cts, cdur) = float_dropped_child()
        ev[5:7] = [{"ph": "X", "name": "parent", "cat": "prof", "pid": 1, "tid": 11, "ts": pts,
                    "dur": pdur},
                   {"ph": "X", "name": "child", "cat": "prof", "pid": 1, "tid": 11, "ts": cts,
                    "dur": cdur}]
        del ev[7:]  # keep it to the two slices
    variant("slice the engine drops (float rounding)", float_child,
            'the engine left event "child"')

    path = os.path.join(tmp, "plain.trace.json.gz")
    with open(path, "w") as f:
        json.dump(chrome_trace(), f)
    run_case("chrome: .gz name on plain JSON", checker + [path], 1, "ends in .gz but is not gzip data")


# --------------------------------------------------------------------------
# OTLP
# --------------------------------------------------------------------------


def _f64(field, v):
    return _varint(field << 3 | 1) + struct.pack("<Q", v)


def _kv(key, value):
    return _ld(1, key.encode()) + _ld(2, _ld(1, value.encode()))


def otlp_request(spans, resource=(("service.name", "prof-test"),)):
    """ExportTraceServiceRequest bytes, hand-encoded so that broken ids can be sent.
    spans: (trace_id, span_id, parent_id, name, start_ns, end_ns, {attr: str})."""
    body = b""
    for trace_id, span_id, parent_id, name, start, end, attrs in spans:
        s = _ld(1, trace_id) + _ld(2, span_id)
        if parent_id:
            s += _ld(4, parent_id)
        s += _ld(5, name.encode()) + _varint(6 << 3) + _varint(1) + _f64(7, start) + _f64(8, end)
        for k, v in attrs.items():
            s += _ld(9, _kv(k, v))
        body += _ld(2, s)
    res = b"".join(_ld(1, _kv(k, v)) for k, v in resource)
    scope = _ld(1, _ld(1, b"prof-test"))
    return _ld(1, _ld(1, res) + _ld(2, scope + body))


def send_raw(url, scenario):
    """Sends one OTLP/HTTP protobuf request; exits non-zero on an HTTP error."""
    trace = bytes(range(1, 17))
    now = time.time_ns()

    def sid(n):
        return n.to_bytes(8, "big")
    spans = [(trace, sid(1), b"", "step", now, now + 9000, {"prof.kind": "step"}),
             (trace, sid(2), sid(1), "launch", now + 1000, now + 2000, {}),
             (trace, sid(3), sid(1), "kernel", now + 3000, now + 6000, {"gpu.stream": "7"})]
    if scenario == "orphan":
        spans[2] = spans[2][:2] + (sid(99),) + spans[2][3:]
    elif scenario == "short_trace_id":
        spans = [(trace[:8],) + s[1:] for s in spans]
    elif scenario == "zero_span_id":
        spans[1] = (trace, bytes(8)) + spans[1][2:]
    elif scenario == "relative_time":
        spans = [s[:4] + (s[4] - now, s[5] - now) + s[6:] for s in spans]
    req = urllib.request.Request(url, data=otlp_request(spans),
                                 headers={"Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            print(f"sent {len(spans)} spans: HTTP {r.status}", file=sys.stderr)
    except Exception as e:  # noqa: BLE001 - any send error fails the sender
        print(f"send failed: {e}", file=sys.stderr)
        return 1
    return 0


def send_sdk(protocol, endpoint, scenario):
    """Sends a small trace with the OpenTelemetry Python SDK (the reference sender)."""
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        exporter = OTLPSpanExporter(endpoint=endpoint)
    provider = TracerProvider(resource=Resource.create({"service.name": "prof-test"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("prof-test")
    context = None
    if scenario == "orphan":
        # A parent that lives in another process and is never sent.
        remote = trace.SpanContext(trace_id=0x0102030405060708090A0B0C0D0E0F10, span_id=0x99,
                                   is_remote=True, trace_flags=trace.TraceFlags(1))
        context = trace.set_span_in_context(trace.NonRecordingSpan(remote))
    with tracer.start_as_current_span("step", context=context, attributes={"prof.kind": "step"}):
        with tracer.start_as_current_span("launch"):
            pass
        with tracer.start_as_current_span("kernel", attributes={"gpu.stream": "7"}):
            pass
    provider.shutdown()
    return 0


def test_otlp(tmp):
    harness = [PY, os.path.join(HERE, "otlp_rotel.py")]
    me = [PY, os.path.abspath(__file__)]
    expect = ["--min-spans", "3", "--expect-name", "step", "--expect-name", "kernel",
              "--expect-attr", "gpu.stream", "--expect-resource", "service.name=prof-test"]
    try:
        import opentelemetry.exporter.otlp.proto.grpc.trace_exporter  # noqa: F401
        import opentelemetry.exporter.otlp.proto.http.trace_exporter  # noqa: F401
        have_sdk = True
    except ImportError:
        have_sdk = False
        print("skip OTLP via the OpenTelemetry SDK (not installed; raw sender only)")
    if have_sdk:
        for proto, ep in (("grpc", "{endpoint}"), ("http", "{traces_endpoint}")):
            run_case(f"otlp: SDK over {proto} passes", harness + ["--protocol", proto] + expect
                     + ["--summary", os.path.join(tmp, f"otlp_{proto}.json"), "--"]
                     + me + ["--send-sdk", proto, ep, "good"], 0)
            run_case(f"otlp: SDK over {proto}, parent never sent", harness + ["--protocol", proto]
                     + ["--"] + me + ["--send-sdk", proto, ep, "orphan"], 1,
                     "parent span id '0000000000000099' is not a span received")
    run_case("otlp: raw over http passes", harness + ["--protocol", "http"] + expect
             + ["--"] + me + ["--send-raw", "{traces_endpoint}", "good"], 0)
    for scenario, text in (("orphan", "parent span id '0000000000000063' is not a span received"),
                           ("short_trace_id", "is not 16 non-zero bytes"),
                           ("zero_span_id", "span id '0000000000000000' is not 8 non-zero bytes"),
                           ("relative_time", "is not Unix-epoch nanoseconds")):
        run_case(f"otlp: raw over http, {scenario}", harness + ["--protocol", "http", "--"]
                 + me + ["--send-raw", "{traces_endpoint}", scenario], 1, text)
    run_case("otlp: http without /v1/traces gets nothing", harness + ["--protocol", "http", "--"]
             + me + ["--send-raw", "{endpoint}", "good"], 1, "COMMAND exited with status 1")
    run_case("otlp: wrong resource value", harness + ["--protocol", "http",
             "--expect-resource", "service.name=other", "--"]
             + me + ["--send-raw", "{traces_endpoint}", "good"], 1,
             "service.name='prof-test', expected 'other'")
    run_case("otlp: missing span name", harness + ["--protocol", "http", "--expect-name", "nope",
             "--"] + me + ["--send-raw", "{traces_endpoint}", "good"], 1, "no span named 'nope'")


# --------------------------------------------------------------------------
# Agreement
# --------------------------------------------------------------------------


def xspace(planes):
    """XSpace bytes: planes = [(name, [(line name, [duration_ps, ...])])]."""
    out = b""
    for pname, lines in planes:
        p = _varint(1 << 3) + _varint(1) + _ld(2, pname.encode())
        for lname, durations in lines:
            line = _ld(2, lname.encode())
            for i, d in enumerate(durations):
                line += _ld(4, _varint(1 << 3) + _varint(1) + _varint(2 << 3) + _varint(i * 1000)
                            + _varint(3 << 3) + _varint(d))
            p += _ld(3, line)
        out += _ld(1, p)
    return out


def test_agree(tmp):
    agree = [PY, os.path.join(HERE, "formats_agree.py")]
    perfetto = {"slices": 4, "instants": 1, "slice_duration_ns_total": 12000, "counter_values": 2,
                "flows": 1, "threads": ["main", "stream 7"],
                "names": {"step": 1, "launch": 1, "mark": 1, "kernel": 1}}
    otlp = {"spans": 4, "duration_ns_total": 12000, "names": {"step": 1, "launch": 1, "mark": 1,
                                                              "kernel": 1}}

    def write(name, doc):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    xplane = os.path.join(tmp, "synthetic.xplane.pb")
    with open(xplane, "wb") as f:
        f.write(xspace([("/host:CPU", [("main", [8_000_000, 1_000_000, 0]),
                                       ("_counters_", [0, 0])]),
                        ("/device:GPU:0", [("stream 7", [3_000_000])]),
                        ("Task Environment", [("env", [5, 5, 5])])]))
    p_path = write("agree_perfetto", perfetto)

    chrome = dict(perfetto, slice_duration_ns_total=12000 + 3)  # float rounding
    run_case("agree: matching summaries and xplane pass", agree + [
        "--perfetto", p_path, "--chrome", write("agree_chrome", chrome),
        "--otlp", write("agree_otlp", otlp), "--xplane", xplane], 0)
    run_case("agree: slice count differs", agree + [
        "--perfetto", p_path, "--chrome", write("agree_chrome_bad", dict(perfetto, slices=5))],
        1, "slices: perfetto has 4, chrome has 5")
    run_case("agree: duration differs beyond rounding", agree + [
        "--perfetto", p_path, "--chrome",
        write("agree_chrome_dur", dict(perfetto, slice_duration_ns_total=12000 + 4001))],
        1, "total slice duration")
    run_case("agree: names differ", agree + [
        "--perfetto", p_path, "--chrome", write("agree_chrome_names", dict(
            perfetto, names={"step": 2, "launch": 1, "mark": 1}))],
        1, "slice counts by name differ")
    run_case("agree: OTLP without instants needs the flag", agree + [
        "--perfetto", p_path, "--chrome", p_path, "--otlp",
        write("agree_otlp_noinst", dict(otlp, spans=3))], 1, "spans vs slices: otlp has 3")
    short = os.path.join(tmp, "short.xplane.pb")
    with open(short, "wb") as f:
        f.write(xspace([("/host:CPU", [("main", [8_000_000, 1_000_000])])]))
    run_case("agree: xplane has fewer events", agree + [
        "--perfetto", p_path, "--chrome", p_path, "--xplane", short], 1,
        "slices vs xplane events: xplane has 2, perfetto has 4")

    # The synthetic Perfetto and Chrome files describe the same profile: their
    # real summaries (from the parts above, when run) must agree too.
    ps, cs = os.path.join(tmp, "perfetto_summary.json"), os.path.join(tmp, "chrome_summary.json")
    if os.path.exists(ps) and os.path.exists(cs):
        run_case("agree: checker summaries of the synthetic files", agree + [
            "--perfetto", ps, "--chrome", cs, "--xplane", xplane], 0)


# --------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------


# --------------------------------------------------------------------------
# XProf's Memory Profile (xprof_memory.py)
# --------------------------------------------------------------------------


def _vi(field, n):
    return _varint(field << 3) + _varint(n & (1 << 64) - 1)


def memory_space(uint_bytes=False, no_allocator=False):
    """An XSpace with one /host:CPU line of GPU_0 memory events: 1 MiB allocated
    under fwd/attn, 2 MiB under fwd/mlp (the peak: 3 MiB), then the first released."""
    stat_names = ["allocator_name", "bytes_reserved", "bytes_allocated",
                  "peak_bytes_in_use", "requested_bytes", "allocation_bytes", "addr",
                  "tf_op", "GPU_0", "fwd/attn:attn", "fwd/mlp:mlp"]
    sid = {n: i + 1 for i, n in enumerate(stat_names)}

    def stat(name, kind, value):
        body = _vi(1, sid[name])
        if kind == "int":
            body += _vi(4, value)
        elif kind == "uint":
            body += _vi(3, value)
        else:  # a reference to a stat metadata name
            body += _vi(7, sid[value])
        return _ld(4, body)

    def event(kind_id, at_us, in_use, peak, size, addr, op):
        stats = b"" if no_allocator else stat("allocator_name", "ref", "GPU_0")
        stats += stat("bytes_reserved", "int", 0)
        stats += stat("bytes_allocated", "uint" if uint_bytes else "int", in_use)
        stats += stat("peak_bytes_in_use", "int", peak)
        stats += stat("requested_bytes", "int", size)
        stats += stat("allocation_bytes", "int", size)
        stats += stat("addr", "int", addr)
        stats += stat("tf_op", "ref", op)
        return _ld(4, _vi(1, kind_id) + _vi(2, at_us * 1_000_000) + stats)

    mib = 1 << 20
    line = _vi(1, 1) + _ld(2, b"main") + _vi(3, 1000) + b"".join([
        event(1, 10, mib, mib, mib, 0x1000, "fwd/attn:attn"),
        event(1, 20, 3 * mib, 3 * mib, 2 * mib, 0x2000, "fwd/mlp:mlp"),
        event(2, 30, 2 * mib, 3 * mib, mib, 0x1000, "fwd/attn:attn"),
    ])
    plane = _vi(1, 49) + _ld(2, b"/host:CPU") + _ld(3, line)
    for i, name in enumerate(["MemoryAllocation", "MemoryDeallocation"], 1):
        plane += _ld(4, _vi(1, i) + _ld(2, _vi(1, i) + _ld(2, name.encode())))
    for name, i in sid.items():
        plane += _ld(5, _vi(1, i) + _ld(2, _vi(1, i) + _ld(2, name.encode())))
    return _ld(1, plane)


def test_memory(tmp):
    checker = [PY, os.path.join(HERE, "xprof_memory.py")]

    def write(name, data):
        path = os.path.join(tmp, name + ".xplane.pb")
        with open(path, "wb") as f:
            f.write(data)
        return path

    def summary(peak):
        path = os.path.join(tmp, f"summary_{peak}.json")
        with open(path, "w") as f:
            json.dump({"memory": [{"allocator": "GPU_0", "peak_bytes": peak}]}, f)
        return path

    good = write("memory", memory_space())
    expect = ["--expect-allocator", "GPU_0", "--min-timeline", "GPU_0=2",
              "--expect-largest", "GPU_0=fwd/mlp:mlp,fwd/attn:attn"]
    run_case("memory: valid profile passes", checker + [
        "--xplane", good, "--summary-json", summary(3 << 20)] + expect, 0)
    run_case("memory: a peak other than the summary's fails", checker + [
        "--xplane", good, "--summary-json", summary(2 << 20)], 1, "is not the summary's")
    run_case("memory: blocks in another order fail", checker + [
        "--xplane", good, "--expect-largest", "GPU_0=fwd/attn:attn"], 1,
        "largest blocks at its peak")
    run_case("memory: a missing allocator fails", checker + [
        "--xplane", good, "--expect-allocator", "host"], 1, "allocator host is not")
    run_case("memory: a uint64 stat fails", checker + [
        "--xplane", write("uint", memory_space(uint_bytes=True))], 1,
        "bytes_allocated is uint64; XProf reads it as int64")
    def levels(level, slack, name="GPU_0"):
        path = os.path.join(tmp, f"levels_{name}_{level}_{slack}.json")
        with open(path, "w") as f:
            json.dump({name: {"bytes": level, "slack": slack}}, f)
        return path

    # The timeline goes 1, 3, 2 MiB: within 1 MiB of 2 MiB, not within 0.5 MiB.
    run_case("memory: a timeline at its level passes", checker + [
        "--xplane", good, "--expect-levels", levels(2 << 20, 1 << 20)], 0)
    run_case("memory: a timeline off its level fails", checker + [
        "--xplane", good, "--expect-levels", levels(2 << 20, 1 << 19)], 1,
        "from the level")
    run_case("memory: an allocator without a timeline fails its level", checker + [
        "--xplane", good, "--expect-levels", levels(0, 1 << 30, name="host")], 1,
        "not at least 2")
    run_case("memory: an event without its allocator fails", checker + [
        "--xplane", write("anonymous", memory_space(no_allocator=True))], 1,
        "names no allocator")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="perfetto,chrome,otlp,agree,memory",
                    help="comma-separated parts to run (default: all)")
    # Sender modes, run by otlp_rotel.py as its COMMAND.
    ap.add_argument("--send-raw", nargs=2, metavar=("URL", "SCENARIO"), help=argparse.SUPPRESS)
    ap.add_argument("--send-sdk", nargs=3, metavar=("PROTOCOL", "URL", "SCENARIO"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.send_raw:
        return send_raw(*args.send_raw)
    if args.send_sdk:
        return send_sdk(*args.send_sdk)
    parts = args.only.split(",")
    tmp = tempfile.mkdtemp(prefix="export_checkers_")
    try:
        if "perfetto" in parts:
            test_perfetto(tmp)
        if "chrome" in parts:
            test_chrome(tmp)
        if "otlp" in parts:
            test_otlp(tmp)
        if "agree" in parts:
            test_agree(tmp)
        if "memory" in parts:
            test_memory(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    failed = [n for n, ok, _ in results if not ok]
    print(f"\n{len(results) - len(failed)} passed, {len(failed)} failed")
    for n in failed:
        print(f"  FAILED: {n}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
