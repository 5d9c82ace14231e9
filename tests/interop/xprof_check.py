#!/usr/bin/env python3
"""Check that XProf (TensorBoard's Profile tab) can read an `.xplane.pb` file.

The file is converted with xprof's own converters, the same Python entry
points TensorBoard's profile plugin calls (`xprof.convert.raw_to_tool_data`),
for the tools `tool_names`, `trace_viewer` (legacy Chrome-style JSON) and
`overview_page`. Then the results are checked:

  * every conversion succeeded;
  * every --expect-event NAME is the name of at least one trace event;
  * every --expect-thread NAME is the name of a thread in the trace viewer;
  * the overview page's step-time graph lists at least --min-steps steps;
  * the streaming trace viewer (`trace_viewer@`, what TensorBoard's Profile
    tab loads) draws at least --min-flows flow arrows with both ends;
  * every --expect-arg EVENT KEY TEXT: an event EVENT whose argument KEY
    contains TEXT; every --expect-event-thread EVENT THREAD: an event EVENT on
    the thread THREAD;
  * the overview page's step numbers are exactly --expect-step-numbers, and its
    diagnostics list a warning containing each --expect-warning TEXT.

Usage (CI):
  python tests/interop/xprof_check.py --xplane PATH/host.xplane.pb \
      [--expect-event NAME ...] [--min-steps N] [--expect-thread NAME ...]
      [--min-flows N]

Exit status: 0 when every check passes, 1 when a check fails, 2 when the
input or the environment is wrong (missing file, xprof not installed).

Needs Python 3.11 and `pip install -r tests/interop/requirements.txt`.
Nothing is written next to the input: xprof writes cache files next to the
profiles it reads, so the file is copied into a temporary directory laid out
as `<tmp>/plugins/profile/<run>/<host>.xplane.pb` first. The conversion runs
in a child process, so that xprof's C++ logging stays out of the output
unless something goes wrong (or --verbose is given), and so that a crash in
the native library is reported rather than killing the check silently.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2

# TensorBoard's profile plugin sends these trace viewer options by default
# (`resolution` defaults to 8000, `full_dma` to False). xprof 2.24.2's legacy
# `trace_viewer` tool does not down-sample with them: every event comes back.
TRACE_VIEWER_OPTIONS = {"resolution": 8000, "full_dma": False}

# Names of the files the worker leaves in the work directory.
TOOL_NAMES_FILE = "tool_names.json"
TRACE_FILE = "trace_viewer.json"
STREAM_TRACE_FILE = "trace_viewer_stream.json"
OVERVIEW_FILE = "overview_page.out"
ERRORS_FILE = "errors.json"

STEP_HINTS = (
    "xprof makes a step from an event that has the stat `_r` (int64 1) and "
    "host events nested inside it, on a plane named exactly `/host:CPU`, with "
    "each line's events sorted by offset ascending then duration descending "
    "(unsorted lines silently give 0 steps); `step_num` (int64) numbers the "
    "steps. With more than 5 steps xprof drops the first and the last one "
    "from the step-time graph."
)


# --------------------------------------------------------------------------
# Worker: runs in a child process, calls xprof, writes raw results to files.
# --------------------------------------------------------------------------


def _error_text(raw) -> str:
    if raw is None:
        return ""
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return str(raw)


def _pywrap_error(xplane: str, tool: str, options: dict) -> str:
    """Asks the lower-level binding again, only to get xprof's error text."""
    try:
        from xprof.convert import _pywrap_profiler_plugin

        raw, ok = _pywrap_profiler_plugin.xspace_to_tools_data([xplane], tool, options)
        if ok:
            return "the lower-level converter succeeded but the plugin wrapper returned no data"
        return _error_text(raw)[:2000] or "no error text from xprof"
    except Exception as e:  # noqa: BLE001 - report anything
        return f"{type(e).__name__}: {e}"


def run_worker(xplane: str, outdir: str) -> int:
    from xprof.convert import raw_to_tool_data

    errors: dict[str, str] = {}

    # 1. tool_names (TensorBoard: convert.xspace_to_tool_names).
    names = raw_to_tool_data.xspace_to_tool_names([xplane])
    if not names:
        errors["tool_names"] = _pywrap_error(xplane, "tool_names", {})
    with open(os.path.join(outdir, TOOL_NAMES_FILE), "w") as f:
        json.dump(names, f)

    def convert(tool: str, params: dict, out_name: str) -> None:
        """Runs one converter as TensorBoard does; saves its output or its error."""
        try:
            data, _ = raw_to_tool_data.xspace_to_tool_data([xplane], tool, params)
        except Exception as e:  # noqa: BLE001
            data = None
            errors[tool] = f"{type(e).__name__}: {e}"
        if data is None:
            # The lower-level binding says why; the plugin wrapper only returns None.
            flat = {**params.get("trace_viewer_options", {}), "use_saved_result": False}
            errors.setdefault(tool, _pywrap_error(xplane, tool, flat))
        else:
            with open(os.path.join(outdir, out_name), "wb") as f:
                f.write(data.encode("utf-8") if isinstance(data, str) else data)

    trace_params = {
        "use_saved_result": False,
        "trace_viewer_options": dict(TRACE_VIEWER_OPTIONS),
    }
    # 2. trace_viewer (legacy, non-streaming): raw Trace proto turned into
    #    Chrome trace JSON by raw_to_tool_data.process_raw_trace.
    convert("trace_viewer", trace_params, TRACE_FILE)
    # 2b. trace_viewer@ (streaming; what TensorBoard's Profile tab loads): the
    #     only output that carries flow arrows (`bind_id`, `flow_in`, `flow_out`).
    convert("trace_viewer@", trace_params, STREAM_TRACE_FILE)
    # 3. overview_page: JSON (a list of Google-Charts DataTables) in 2.24.2.
    convert("overview_page", {"use_saved_result": False}, OVERVIEW_FILE)

    with open(os.path.join(outdir, ERRORS_FILE), "w") as f:
        json.dump(errors, f)
    return 0


# --------------------------------------------------------------------------
# Decoding the converters' outputs.
# --------------------------------------------------------------------------


class TraceSummary:
    def __init__(self) -> None:
        self.processes: dict[object, str] = {}
        self.threads: dict[tuple[object, object], str] = {}
        self.event_counts: Counter[str] = Counter()
        self.events_per_thread: Counter[tuple[object, object]] = Counter()
        # Step roots are renamed "<name> <step_num>" by xprof; remember them.
        self.step_events: dict[str, Counter[str]] = defaultdict(Counter)
        self.total_events = 0
        # Per name, the thread and arguments of its first events.
        self.instances: dict[str, list[tuple[tuple[object, object], dict]]] = defaultdict(list)


_STEP_RENAME = re.compile(r"^(?P<base>.*) (?P<num>-?\d+)$")


def decode_trace(raw: bytes) -> TraceSummary:
    doc = json.loads(raw)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    s = TraceSummary()
    for ev in events:
        if not isinstance(ev, dict) or not ev:
            continue  # xprof appends one empty {} as a terminator
        ph = ev.get("ph")
        name = ev.get("name")
        args = ev.get("args") or {}
        if ph == "M":
            if name == "process_name":
                s.processes[ev.get("pid")] = str(args.get("name", ""))
            elif name == "thread_name":
                s.threads[(ev.get("pid"), ev.get("tid"))] = str(args.get("name", ""))
            continue
        if name is None:
            continue
        s.total_events += 1
        s.event_counts[name] += 1
        if len(s.instances[name]) < 100:
            s.instances[name].append(((ev.get("pid"), ev.get("tid")), args))
        s.events_per_thread[(ev.get("pid"), ev.get("tid"))] += 1
        if any(k in args for k in ("step_name", "step_num", "group_id")):
            m = _STEP_RENAME.match(name)
            if m and ("step_name" in args or "step_num" in args):
                s.step_events[m.group("base")][m.group("num")] += 1
    return s


def count_flows(raw: bytes) -> tuple[int, int]:
    """Flow arrows in trace_viewer@ JSON: (ids with both ends, ids with one end)."""
    doc = json.loads(raw)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    outs: set = set()
    ins: set = set()
    for ev in events:
        if not isinstance(ev, dict) or "bind_id" not in ev:
            continue
        if ev.get("flow_out"):
            outs.add(ev["bind_id"])
        if ev.get("flow_in"):
            ins.add(ev["bind_id"])
    return len(outs & ins), len(outs ^ ins)


def counter_samples(raw: bytes) -> dict:
    """Counter tracks in trace_viewer@ JSON: name -> number of samples. XProf turns the
    `_counters_` line into one "C" event per counter holding all its `entries`."""
    doc = json.loads(raw)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    counts: dict = {}
    for ev in events:
        if isinstance(ev, dict) and ev.get("ph") == "C":
            counts[ev.get("name")] = counts.get(ev.get("name"), 0) + len(ev.get("entries", [1]))
    return counts


def match_event(s: TraceSummary, name: str) -> tuple[int, int]:
    """Returns (exact matches, matches as an xprof step root renamed '<name> <n>')."""
    return s.event_counts.get(name, 0), sum(s.step_events.get(name, Counter()).values())


class Steps:
    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.labels: list[str] = []
        self.step_times_ms: list[float | None] = []
        self.hardware_type: str | None = None
        self.avg_ms: str | None = None
        self.source = ""

    @property
    def numbers(self) -> list[int | None]:
        out: list[int | None] = []
        for label in self.labels:
            m = re.search(r"(-?\d+)\s*$", label)
            out.append(int(m.group(1)) if m else None)
        return out


def _find_step_table(tables: list) -> dict | None:
    # Same rule as the XProf frontend (overview page, "findAnalysisData"):
    # the step-time graph is the DataTable that has a column with id
    # "stepnum", or failing that one whose table properties carry the
    # step-time summary.
    for t in tables:
        if isinstance(t, dict) and any(
            isinstance(c, dict) and c.get("id") == "stepnum" for c in t.get("cols") or []
        ):
            return t
    for t in tables:
        if isinstance(t, dict) and isinstance(t.get("p"), dict) and (
            "step_time_graph_column_ids" in t["p"] or "steptime_ms_average" in t["p"]
        ):
            return t
    return None


def _cell(row: dict, i: int):
    cells = row.get("c") or []
    if i < 0 or i >= len(cells) or cells[i] is None:
        return None
    c = cells[i]
    if isinstance(c, dict):
        return c.get("v") if c.get("v") is not None else c.get("f")
    return c


def decode_overview_json(doc) -> Steps:
    tables = doc if isinstance(doc, list) else [doc]
    table = _find_step_table(tables)
    if table is None:
        raise ValueError(
            "overview_page JSON has no step-time table (no DataTable with a 'stepnum' column); "
            f"tables have columns {[[c.get('id') for c in (t.get('cols') or [])] for t in tables if isinstance(t, dict)]}"
        )
    cols = [c.get("id") if isinstance(c, dict) else None for c in table.get("cols") or []]
    i_step = cols.index("stepnum") if "stepnum" in cols else 0
    i_time = cols.index("stepTimeMs") if "stepTimeMs" in cols else -1
    st = Steps()
    st.source = "overview_page JSON, DataTable with column 'stepnum'"
    for row in table.get("rows") or []:
        if not isinstance(row, dict):
            continue
        label = _cell(row, i_step)
        st.labels.append("" if label is None else str(label))
        t = _cell(row, i_time)
        st.step_times_ms.append(float(t) if isinstance(t, (int, float)) else None)
    # The diagnostics: the DataTable with "severity" and "message" columns.
    for t in tables:
        if not isinstance(t, dict):
            continue
        ids = [c.get("id") if isinstance(c, dict) else None for c in t.get("cols") or []]
        if "severity" in ids and "message" in ids:
            for row in t.get("rows") or []:
                if isinstance(row, dict):
                    st.warnings.append(str(_cell(row, ids.index("message")) or ""))
    p = table.get("p") or {}
    st.hardware_type = p.get("hardware_type")
    st.avg_ms = p.get("steptime_ms_average")
    return st


def decode_overview_proto(raw: bytes) -> Steps:
    """Fallback for builds that return a serialized OverviewPage proto."""
    from xprof.protobuf import input_pipeline_pb2, overview_page_pb2

    page = overview_page_pb2.OverviewPage()
    page.ParseFromString(raw)
    st = Steps()
    st.source = "overview_page proto, input_analysis.step_details"
    ia = page.input_analysis
    st.hardware_type = ia.hardware_type or None
    if ia.HasField("step_time_summary"):
        st.avg_ms = f"{ia.step_time_summary.average:.3f}"
    for any_msg in ia.step_details:
        d = input_pipeline_pb2.PerGenericStepDetails()
        if any_msg.Unpack(d):
            st.labels.append(d.step_name or str(d.step_number))
            st.step_times_ms.append(d.step_time_ms)
        else:
            st.labels.append(f"<{any_msg.TypeName()}>")
            st.step_times_ms.append(None)
    return st


def decode_overview(raw: bytes) -> Steps:
    text = None
    try:
        text = raw.decode("utf-8")
        doc = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError):
        doc = None
    if doc is not None:
        return decode_overview_json(doc)
    return decode_overview_proto(raw)


# --------------------------------------------------------------------------
# Driver.
# --------------------------------------------------------------------------


def host_name_of(path: str) -> str:
    base = os.path.basename(path)
    for suffix in (".xplane.pb", ".pb"):
        if base.endswith(suffix):
            base = base[: -len(suffix)]
            break
    return base or "host"


def _fmt_list(items) -> str:
    return ", ".join(repr(i) for i in items) if items else "(none)"


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Convert an .xplane.pb with xprof's converters and check the result."
    )
    ap.add_argument("--xplane", required=True, help="path to a <host>.xplane.pb file")
    ap.add_argument(
        "--expect-event",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME",
        help="event name that must appear in the trace viewer (repeatable). "
        "A step root that xprof renamed '<NAME> <step_num>' also counts.",
    )
    ap.add_argument(
        "--expect-thread",
        action="extend",
        nargs="+",
        default=[],
        metavar="NAME",
        help="thread (line) name that must appear in the trace viewer (repeatable)",
    )
    ap.add_argument(
        "--min-steps",
        type=int,
        default=0,
        metavar="N",
        help="minimum number of rows in the overview page's step-time graph",
    )
    ap.add_argument(
        "--dump-dir",
        metavar="DIR",
        help="also copy xprof's outputs (trace_viewer.json, overview_page.out, "
        "tool_names.json) into DIR",
    )
    ap.add_argument(
        "--timeout", type=float, default=600, help="seconds allowed for the conversion (600)"
    )
    ap.add_argument(
        "--min-flows",
        type=int,
        default=0,
        help="fail unless the streaming trace viewer draws at least N complete flow arrows",
    )
    ap.add_argument(
        "--expect-counter",
        nargs="+",
        default=[],
        metavar="NAME",
        help="counter tracks the streaming trace viewer must show, each with --min-steps samples",
    )
    ap.add_argument(
        "--expect-arg",
        nargs=3,
        action="append",
        default=[],
        metavar=("EVENT", "KEY", "TEXT"),
        help="an event named EVENT must have an argument KEY containing TEXT (repeatable)",
    )
    ap.add_argument(
        "--expect-event-thread",
        nargs=2,
        action="append",
        default=[],
        metavar=("EVENT", "THREAD"),
        help="an event named EVENT must be on the thread named THREAD (repeatable)",
    )
    ap.add_argument(
        "--expect-step-numbers",
        nargs="+",
        type=int,
        default=None,
        metavar="N",
        help="the overview page's step numbers must be exactly these",
    )
    ap.add_argument(
        "--expect-warning",
        action="append",
        default=[],
        metavar="TEXT",
        help="the overview page's diagnostics must list a warning containing TEXT (repeatable)",
    )
    ap.add_argument("-v", "--verbose", action="store_true", help="show xprof's own log")
    ap.add_argument("--_worker", nargs=2, metavar=("XPLANE", "OUTDIR"), help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args._worker:
        return run_worker(*args._worker)

    src = args.xplane
    if not os.path.isfile(src):
        print(f"xprof_check: FAIL: input file not found: {src}", file=sys.stderr)
        return EXIT_USAGE
    if args.min_steps < 0:
        print("xprof_check: --min-steps must be >= 0", file=sys.stderr)
        return EXIT_USAGE

    try:
        import xprof.version  # noqa: F401
        from xprof.convert import raw_to_tool_data  # noqa: F401

        xprof_version = getattr(xprof.version, "__version__", "?")
    except Exception as e:  # noqa: BLE001
        print(
            f"xprof_check: cannot import xprof ({type(e).__name__}: {e}).\n"
            "  Install it with: pip install -r tests/interop/requirements.txt",
            file=sys.stderr,
        )
        return EXIT_USAGE

    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="xprof_check_") as tmp:
        run = time.strftime("%Y_%m_%d_%H_%M_%S", time.gmtime())
        host = host_name_of(src)
        run_dir = os.path.join(tmp, "plugins", "profile", run)
        os.makedirs(run_dir)
        xplane = os.path.join(run_dir, f"{host}.xplane.pb")
        shutil.copyfile(src, xplane)
        outdir = os.path.join(tmp, "out")
        os.makedirs(outdir)

        print(f"xprof_check: xprof {xprof_version}, input {src} ({os.path.getsize(src)} bytes)")
        print(f"  converting {os.path.relpath(xplane, tmp)} in a temporary logdir")

        cmd = [sys.executable, os.path.abspath(__file__), "--xplane", src, "--_worker", xplane, outdir]
        t0 = time.monotonic()
        try:
            proc = subprocess.run(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=args.timeout,
                cwd=tmp,
            )
            log = proc.stdout.decode("utf-8", "replace")
            rc = proc.returncode
        except subprocess.TimeoutExpired as e:
            log = (e.stdout or b"").decode("utf-8", "replace")
            rc = None
        elapsed = time.monotonic() - t0
        if args.verbose:
            print("----- xprof log -----")
            print(log.rstrip())
            print("---------------------")
        if rc != 0:
            sys.stdout.flush()
            tail = "\n".join(log.rstrip().splitlines()[-40:])
            what = f"timed out after {args.timeout:g}s" if rc is None else f"exited with status {rc}"
            print(
                f"xprof_check: FAIL: the xprof conversion process {what}.\n"
                f"----- last lines of its output -----\n{tail}",
                file=sys.stderr,
            )
            return EXIT_FAIL
        print(f"  conversion took {elapsed:.1f}s")

        with open(os.path.join(outdir, ERRORS_FILE)) as f:
            errors: dict[str, str] = json.load(f)
        with open(os.path.join(outdir, TOOL_NAMES_FILE)) as f:
            tool_names: list[str] = json.load(f)

        if args.dump_dir:
            os.makedirs(args.dump_dir, exist_ok=True)
            for name in (TOOL_NAMES_FILE, TRACE_FILE, STREAM_TRACE_FILE, OVERVIEW_FILE):
                p = os.path.join(outdir, name)
                if os.path.exists(p):
                    shutil.copyfile(p, os.path.join(args.dump_dir, name))
            with open(os.path.join(args.dump_dir, "xprof.log"), "w") as f:
                f.write(log)

        # ---- tool_names ----
        print(f"tools: {', '.join(tool_names) if tool_names else '(none)'}")
        if "tool_names" in errors:
            failures.append(f"tool_names conversion failed: {errors['tool_names']}")
        else:
            if "overview_page" not in tool_names:
                failures.append("xprof does not offer overview_page for this file")
            if not ({"trace_viewer", "trace_viewer@"} & set(tool_names)):
                failures.append("xprof does not offer a trace viewer for this file")

        # ---- trace_viewer ----
        trace = None
        if "trace_viewer" in errors:
            failures.append(f"trace_viewer conversion failed: {errors['trace_viewer']}")
        else:
            try:
                with open(os.path.join(outdir, TRACE_FILE), "rb") as f:
                    trace = decode_trace(f.read())
            except (OSError, ValueError) as e:
                failures.append(f"trace_viewer output is not valid trace JSON: {e}")

        if trace is not None:
            print(
                f"trace viewer: {trace.total_events} events, "
                f"{len(trace.event_counts)} distinct names, {len(trace.threads)} threads"
            )
            print("  processes: " + _fmt_list(sorted(trace.processes.values())))
            print("  threads:")
            for key, tname in sorted(trace.threads.items(), key=lambda kv: (str(kv[0][0]), str(kv[0][1]))):
                pname = trace.processes.get(key[0], f"pid {key[0]}")
                print(f"    {pname} / {tname!r} (tid {key[1]}): {trace.events_per_thread.get(key, 0)} events")
            print("  events per name (top 20):")
            for name, n in trace.event_counts.most_common(20):
                print(f"    {n:8d}  {name}")
            if trace.step_events:
                for base, nums in sorted(trace.step_events.items()):
                    print(f"  step roots shown as '{base} <n>': n in {sorted(int(n) for n in nums)}")

            for name in args.expect_event:
                exact, renamed = match_event(trace, name)
                if exact or renamed:
                    how = f"{exact} exact" + (f", {renamed} as '{name} <step_num>'" if renamed else "")
                    print(f"  expected event {name!r}: OK ({how})")
                else:
                    close = [n for n in trace.event_counts if name.lower() in n.lower()][:5]
                    failures.append(
                        f"expected event {name!r} not found in the trace viewer"
                        + (f" (similar names: {_fmt_list(close)})" if close else "")
                    )
            thread_names = set(trace.threads.values())
            for name in args.expect_thread:
                if name in thread_names:
                    print(f"  expected thread {name!r}: OK")
                else:
                    failures.append(
                        f"expected thread {name!r} not found; threads are {_fmt_list(sorted(thread_names))}"
                    )
            for event, key, text in args.expect_arg:
                found = [a.get(key) for _, a in trace.instances.get(event, [])]
                if any(text in str(v) for v in found if v is not None):
                    print(f"  expected {event!r} with {key} containing {text!r}: OK")
                else:
                    failures.append(
                        f"no event {event!r} has an argument {key!r} containing {text!r}; "
                        f"its {key!r} values: {_fmt_list(found[:10])}"
                    )
            for event, thread in args.expect_event_thread:
                on = sorted({trace.threads.get(k, f"tid {k[1]}") for k, _ in trace.instances.get(event, [])})
                if thread in on:
                    print(f"  expected {event!r} on thread {thread!r}: OK")
                else:
                    failures.append(f"no event {event!r} on thread {thread!r}; it is on {_fmt_list(on)}")
        else:
            for name in args.expect_event:
                failures.append(f"expected event {name!r}: not checked (no trace viewer data)")
            for name in args.expect_thread:
                failures.append(f"expected thread {name!r}: not checked (no trace viewer data)")

        # ---- trace_viewer@ flows ----
        if args.min_flows > 0:
            if "trace_viewer@" in errors:
                failures.append(f"trace_viewer@ conversion failed: {errors['trace_viewer@']}")
            else:
                with open(os.path.join(outdir, STREAM_TRACE_FILE), "rb") as f:
                    complete, dangling = count_flows(f.read())
                print(f"trace viewer flows: {complete} with both ends, {dangling} with one end")
                if complete < args.min_flows:
                    failures.append(
                        f"expected at least {args.min_flows} flow arrows in trace_viewer@, "
                        f"found {complete} (XProf draws one per producer `_pt`/`_p` and "
                        "consumer `_ct`/`_c` pair with equal type and id)"
                    )

        # ---- trace_viewer@ counters ----
        if args.expect_counter:
            if "trace_viewer@" in errors:
                failures.append(f"trace_viewer@ conversion failed: {errors['trace_viewer@']}")
            else:
                with open(os.path.join(outdir, STREAM_TRACE_FILE), "rb") as f:
                    counters = counter_samples(f.read())
                print(f"trace viewer counters: {counters}")
                for name in args.expect_counter:
                    if counters.get(name, 0) < max(1, args.min_steps):
                        failures.append(
                            f"expected counter {name!r} with at least {max(1, args.min_steps)} "
                            f"samples in trace_viewer@, found {counters.get(name, 0)}"
                        )

        # ---- overview_page ----
        steps = None
        if "overview_page" in errors:
            failures.append(f"overview_page conversion failed: {errors['overview_page']}")
        else:
            try:
                with open(os.path.join(outdir, OVERVIEW_FILE), "rb") as f:
                    steps = decode_overview(f.read())
            except Exception as e:  # noqa: BLE001
                failures.append(f"cannot decode the overview_page output: {type(e).__name__}: {e}")

        if steps is not None:
            print(
                f"overview page: {len(steps.labels)} steps in the step-time graph "
                f"(hardware_type={steps.hardware_type}, average step time {steps.avg_ms} ms; "
                f"from {steps.source})"
            )
            if steps.labels:
                nums = steps.numbers
                if all(n is not None for n in nums):
                    shown = nums if len(nums) <= 20 else nums[:20] + ["..."]
                    print(f"  step numbers: {shown}")
                print(f"  step labels: {_fmt_list(steps.labels[:20])}" + (" ..." if len(steps.labels) > 20 else ""))
            if args.expect_step_numbers is not None and steps.numbers != args.expect_step_numbers:
                failures.append(
                    f"overview page step numbers are {steps.numbers}, expected {args.expect_step_numbers}"
                )
            for text in args.expect_warning:
                if any(text in w for w in steps.warnings):
                    print(f"  expected warning containing {text!r}: OK")
                else:
                    failures.append(
                        f"no overview page warning contains {text!r}; warnings: {_fmt_list(steps.warnings)}"
                    )
            if len(steps.labels) < args.min_steps:
                failures.append(
                    f"overview page lists {len(steps.labels)} steps, expected at least {args.min_steps}. "
                    + STEP_HINTS
                )
        elif args.min_steps > 0:
            failures.append(f"steps: not checked (no overview page data), expected at least {args.min_steps}")

    sys.stdout.flush()
    if failures:
        print(f"\nxprof_check: FAIL ({len(failures)} problem{'s' if len(failures) != 1 else ''}) for {src}:", file=sys.stderr)
        for f_ in failures:
            print(f"  - {f_}", file=sys.stderr)
        return EXIT_FAIL
    print(f"\nxprof_check: OK: {src}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
