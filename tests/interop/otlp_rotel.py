#!/usr/bin/env python3
"""Send prof's OTLP spans to a real OpenTelemetry collector and check what it decoded.

The collector is rotel (PyPI `rotel`, a Rust OTLP collector whose wheel ships
the `rotel-agent` binary). It is started on free 127.0.0.1 ports with its
debug exporter, which prints every span it decoded; then COMMAND runs with
`{endpoint}` replaced by the collector's URL; then every printed span is
parsed and checked:

  * at least --min-spans spans arrived, and COMMAND exited 0;
  * trace ids are 32 hex digits (16 bytes) and not all zero; span ids are 16
    hex digits (8 bytes) and not all zero; no span id repeats within a trace
    (rotel prints the ids as hex of whatever bytes it got and checks nothing);
  * a non-empty parent span id names a span received in the same trace;
  * start <= end, and start is Unix-epoch nanoseconds (> 1e18);
  * every --expect-name is some span's name, every --expect-attr KEY is an
    attribute of some span, every --expect-resource KEY=VALUE is set on every
    resource;
  * rotel logged no error.

Usage:
  python tests/interop/otlp_rotel.py --protocol grpc|http [--min-spans N]
      [--expect-name NAME]... [--expect-attr KEY]... [--expect-resource KEY=VALUE]...
      [--summary OUT.json] [--timeout S] -- COMMAND ARGS...

Placeholders substituted in COMMAND's arguments (also inside longer strings):
  {endpoint}         grpc: http://127.0.0.1:PORT   http: http://127.0.0.1:PORT
  {traces_endpoint}  grpc: same as {endpoint}      http: http://127.0.0.1:PORT/v1/traces
The HTTP receiver (like every OTLP/HTTP collector) only answers POST
/v1/traces: a request to the bare base URL gets 404. opentelemetry-otlp
(0.33) does NOT append /v1/traces to an endpoint given with `.with_endpoint()`
(it only appends it to the OTEL_EXPORTER_OTLP_ENDPOINT environment variable),
so a sender that takes {endpoint} must append /v1/traces itself for HTTP, or
be given {traces_endpoint}.

Prints a JSON summary on stdout (also written to --summary):
  {"spans", "traces", "roots", "names": {name: count}, "duration_ns_total",
   "resource": {first resource's attributes}, "resources", "protocol"}
COMMAND's own stdout and stderr go to this script's stderr.

Exit status: 0 pass, 1 a check failed, 2 the environment is wrong (rotel
missing or not starting). Needs `pip install -r tests/interop/requirements-export.txt`.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
PROG = "otlp_rotel"
MIN_EPOCH_NS = 10**18
MAX_REPORTED = 40

STARTUP_TIMEOUT_S = 20.0
# rotel prints a request's spans as it receives it; once its output has been
# still for this long after COMMAND exited, everything has been printed.
QUIET_S = 1.0
DRAIN_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 10.0


def find_rotel() -> str | None:
    """The rotel-agent binary: $ROTEL_AGENT, the one inside the `rotel` wheel, or PATH."""
    if os.environ.get("ROTEL_AGENT"):
        return os.environ["ROTEL_AGENT"]
    # find_spec does not import the package, so nothing of rotel's Python runs.
    spec = importlib.util.find_spec("rotel")
    if spec and spec.submodule_search_locations:
        for d in spec.submodule_search_locations:
            path = os.path.join(d, "rotel-agent")
            if os.access(path, os.X_OK):
                return path
    return shutil.which("rotel-agent")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Rotel:
    """One rotel-agent process with its debug exporter, on free local ports."""

    def __init__(self, binary: str, workdir: str) -> None:
        self.binary = binary
        self.workdir = workdir
        self.proc: subprocess.Popen | None = None
        self.out_path = os.path.join(workdir, "rotel.out")
        self.err_path = os.path.join(workdir, "rotel.err")

    def start(self) -> None:
        # A free port can be taken between probing and binding; retry then.
        for attempt in range(3):
            self.grpc_port, self.http_port = free_port(), free_port()
            argv = [
                self.binary,
                # JSON log lines are easy to tell apart from the debug exporter's text.
                "--log-format", "json",
                "start",
                "--otlp-grpc-endpoint", f"127.0.0.1:{self.grpc_port}",
                "--otlp-http-endpoint", f"127.0.0.1:{self.http_port}",
                "--debug-log", "traces",
                "--debug-log-verbosity", "detailed",
                # Spans only need to be printed; drop them afterwards.
                "--exporter", "blackhole",
                # rotel's pipeline splits batches above 8192 spans and logs an
                # error for the excess; the debug print has all of them anyway.
                "--traces-batch-max-size", "1000000",
                "--pid-file", os.path.join(self.workdir, "rotel.pid"),
                "--log-file", os.path.join(self.workdir, "rotel.log"),
            ]
            with open(self.out_path, "wb") as out, open(self.err_path, "wb") as err:
                self.proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
            deadline = time.monotonic() + STARTUP_TIMEOUT_S
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                if listening(self.grpc_port) and listening(self.http_port):
                    return
                time.sleep(0.1)
            self.stop()
            if time.monotonic() < deadline:
                continue  # exited early, most likely a port clash
            raise RuntimeError(f"rotel did not listen within {STARTUP_TIMEOUT_S:.0f} s")
        raise RuntimeError(
            "rotel exited at startup three times:\n" + self.read(self.err_path) + self.read(self.out_path)
        )

    @staticmethod
    def read(path: str) -> str:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait_quiet(self) -> None:
        """Waits (bounded) until rotel's output stops growing."""
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        size, since = -1, time.monotonic()
        while time.monotonic() < deadline:
            now_size = os.path.getsize(self.out_path)
            if now_size != size:
                size, since = now_size, time.monotonic()
            elif time.monotonic() - since >= QUIET_S:
                return
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=STOP_TIMEOUT_S)


# --------------------------------------------------------------------------
# Parsing rotel's debug exporter output (--debug-log-verbosity detailed):
#
#   ResourceSpans #0
#   Resource SchemaURL:
#   Resource attributes:
#        -> service.name: Str(prof)
#   ScopeSpans #0
#   ScopeSpans SchemaURL:
#   InstrumentationScope prof 0.1
#   Span #0
#       Trace ID       : 0102030405060708090a0b0c0d0e0f10
#       Parent ID      :
#       ID             : 0000000000000001
#       Name           : step
#       Kind           : SPAN_KIND_INTERNAL
#   Start time: 1700000000000001000
#   End time: 1700000000000009000
#       Status code    : STATUS_CODE_UNSET     (only when a status is set)
#       Status message :
#   Attributes:
#        -> bytes: Int(4096)
#   Events:                                    (span events and links have
#   SpanEvent #0                                their own "->" lines, which
#        -> Name: ev1                           are not span attributes)
#
# A multi-line string value continues on the following lines.
# --------------------------------------------------------------------------

_SPAN_FIELD = re.compile(r"^\s+(Trace ID|Parent ID|ID|Name|Kind|Status code|Status message)\s*: ?(.*)$")
_ATTR = re.compile(r"^\s+-> ([^:]+): (.*)$")
_TIME = re.compile(r"^(Start|End) time: (\d+)$")
_VALUE = re.compile(r"^(Str|Int|Double|Bool)\((.*)\)$", re.S)
_STRUCTURE = ("ResourceSpans #", "Resource SchemaURL:", "Resource attributes:", "ScopeSpans #",
              "ScopeSpans SchemaURL:", "InstrumentationScope", "Span #", "Attributes:", "Events:",
              "SpanEvent #", "Links:", "SpanLink #", "Start time:", "End time:")


def parse_value(text: str):
    m = _VALUE.match(text)
    if not m:
        return text  # Slice(...), Map(...), Bytes(...): kept as printed
    kind, v = m.groups()
    if kind == "Int":
        return int(v)
    if kind == "Double":
        return float(v)
    if kind == "Bool":
        return v == "true"
    return v


def parse_debug_output(text: str):
    """Returns (spans, resources, log_records) from rotel's stdout."""
    spans: list[dict] = []
    resources: list[dict] = []
    logs: list[dict] = []
    target: dict | None = None  # where "->" attribute lines go, if anywhere
    last_key: str | None = None
    resource: dict = {}
    span: dict | None = None
    for line in text.split("\n"):
        if line.startswith('{"v":'):
            try:
                logs.append(json.loads(line))
            except ValueError:
                pass
            continue
        if line.startswith("ResourceSpans #"):
            resource = {}
            resources.append(resource)
            span, target, last_key = None, None, None
        elif line.startswith("Resource attributes:"):
            target, last_key = resource, None
        elif line.startswith(("ScopeSpans #", "InstrumentationScope", "Events:", "Links:",
                              "SpanEvent #", "SpanLink #")):
            target, last_key = None, None
        elif line.startswith("Span #"):
            span = {"resource": resource, "attributes": {}}
            spans.append(span)
            target, last_key = None, None
        elif line.startswith("Attributes:") and span is not None:
            target, last_key = span["attributes"], None
        elif (m := _TIME.match(line)) and span is not None:
            span["start" if m.group(1) == "Start" else "end"] = int(m.group(2))
        elif (m := _SPAN_FIELD.match(line)) and span is not None and target is None:
            span[m.group(1)] = m.group(2)
        elif m := _ATTR.match(line):
            last_key = None
            if target is not None:
                target[m.group(1)] = m.group(2)
                last_key = m.group(1)
        elif last_key is not None and target is not None and not line.startswith(_STRUCTURE):
            target[last_key] += "\n" + line  # a string value with newlines
    for attrs in resources + [s["attributes"] for s in spans]:
        for k in attrs:
            attrs[k] = parse_value(attrs[k].rstrip("\n"))
    return spans, resources, logs


def check_spans(spans, resources, logs, args, fail: list[str]) -> dict:
    hex32 = re.compile(r"^[0-9a-f]{32}$")
    hex16 = re.compile(r"^[0-9a-f]{16}$")
    ids: dict[str, set[str]] = {}
    for n, s in enumerate(spans):
        where = f"span #{n} {s.get('Name', '?')!r}"
        tid, sid = s.get("Trace ID"), s.get("ID")
        if tid is None or sid is None or "start" not in s or "end" not in s:
            fail.append(f"{where}: rotel printed no trace id, span id or times for it")
            continue
        if not hex32.match(tid) or tid == "0" * 32:
            fail.append(f"{where}: trace id {tid!r} is not 16 non-zero bytes (32 hex digits)")
        if not hex16.match(sid) or sid == "0" * 16:
            fail.append(f"{where}: span id {sid!r} is not 8 non-zero bytes (16 hex digits)")
        if sid in ids.setdefault(tid, set()):
            fail.append(f"{where}: span id {sid} appears twice in trace {tid}")
        ids[tid].add(sid)
        if s["start"] > s["end"]:
            fail.append(f"{where}: start {s['start']} is after end {s['end']}")
        if s["start"] <= MIN_EPOCH_NS:
            fail.append(f"{where}: start {s['start']} is not Unix-epoch nanoseconds (> 1e18)")
    for n, s in enumerate(spans):
        parent = s.get("Parent ID", "")
        if parent and parent not in ids.get(s.get("Trace ID"), set()):
            fail.append(
                f"span #{n} {s.get('Name', '?')!r}: parent span id {parent!r} is not a span "
                f"received in trace {s.get('Trace ID')}"
            )

    if len(spans) < args.min_spans:
        fail.append(f"rotel received {len(spans)} spans, expected at least {args.min_spans}")
    names = Counter(s.get("Name", "") for s in spans)
    for name in args.expect_name:
        if name not in names:
            fail.append(f"no span named {name!r} (names: {sorted(names)[:20]})")
    attr_keys = set().union(*(s["attributes"].keys() for s in spans)) if spans else set()
    for key in args.expect_attr:
        if key not in attr_keys:
            fail.append(f"no span has attribute {key!r} (keys: {sorted(attr_keys)[:30]})")
    for kv in args.expect_resource:
        key, _, value = kv.partition("=")
        for i, r in enumerate(resources):
            if key not in r or str(r[key]) != value:
                fail.append(f"resource #{i}: {key}={r.get(key)!r}, expected {value!r}")
    for rec in logs:
        if rec.get("level", 0) >= 50:  # bunyan-style levels: 50 error, 60 fatal
            fail.append(f"rotel logged an error: {rec.get('msg')} {json.dumps(rec)[:300]}")

    return {
        "protocol": args.protocol,
        "spans": len(spans),
        "traces": len(ids),
        "roots": sum(1 for s in spans if not s.get("Parent ID")),
        "names": dict(sorted(names.items())),
        "duration_ns_total": sum(s["end"] - s["start"] for s in spans if "start" in s and "end" in s),
        "resource": resources[0] if resources else {},
        "resources": len(resources),
    }


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description="Run COMMAND against a real OTLP collector (rotel) and check the spans it decoded.",
        usage="%(prog)s --protocol grpc|http [options] -- COMMAND ARGS...",
    )
    ap.add_argument("--protocol", required=True, choices=("grpc", "http"))
    ap.add_argument("--min-spans", type=int, default=1, metavar="N",
                    help="fail unless at least N spans arrive (default 1)")
    ap.add_argument("--expect-name", action="append", default=[], metavar="NAME")
    ap.add_argument("--expect-attr", action="append", default=[], metavar="KEY")
    ap.add_argument("--expect-resource", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--summary", metavar="OUT.json")
    ap.add_argument("--timeout", type=float, default=300, metavar="S",
                    help="seconds COMMAND may run (default 300)")
    ap.add_argument("--keep-output", metavar="FILE", help="copy rotel's raw output here")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = ap.parse_args(argv)
    if args.command and args.command[0] == "--":
        args.command = args.command[1:]
    if not args.command:
        ap.error("COMMAND is required after --")
    for kv in args.expect_resource:
        if "=" not in kv:
            ap.error(f"--expect-resource needs KEY=VALUE, got {kv!r}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    binary = find_rotel()
    if not binary:
        print(f"{PROG}: rotel-agent not found; pip install -r tests/interop/requirements-export.txt "
              "(or set ROTEL_AGENT)", file=sys.stderr)
        return EXIT_USAGE

    fail: list[str] = []
    with tempfile.TemporaryDirectory(prefix="otlp_rotel_") as work:
        rotel = Rotel(binary, work)
        try:
            rotel.start()
        except RuntimeError as e:
            print(f"{PROG}: {e}", file=sys.stderr)
            return EXIT_USAGE
        try:
            port = rotel.grpc_port if args.protocol == "grpc" else rotel.http_port
            base = f"http://127.0.0.1:{port}"
            traces = base if args.protocol == "grpc" else base + "/v1/traces"
            command = [a.replace("{endpoint}", base).replace("{traces_endpoint}", traces)
                       for a in args.command]
            print(f"{PROG}: rotel on {base} ({args.protocol}); running: {' '.join(command)}",
                  file=sys.stderr, flush=True)
            try:
                rc = subprocess.run(command, stdout=sys.stderr, timeout=args.timeout).returncode
            except subprocess.TimeoutExpired:
                rc = None
                fail.append(f"COMMAND did not finish within {args.timeout:.0f} s")
            except OSError as e:
                rc = None
                fail.append(f"cannot run COMMAND: {e}")
            if rc not in (0, None):
                fail.append(f"COMMAND exited with status {rc}")
            rotel.wait_quiet()
            if rotel.proc.poll() is not None:
                fail.append(f"rotel exited during the run (status {rotel.proc.returncode}): "
                            + rotel.read(rotel.err_path)[-2000:])
        finally:
            rotel.stop()
        output = rotel.read(rotel.out_path)
        if args.keep_output:
            with open(args.keep_output, "w") as f:
                f.write(output)

    spans, resources, logs = parse_debug_output(output)
    summary = check_spans(spans, resources, logs, args, fail)
    text = json.dumps(summary, indent=2, sort_keys=True)
    print(text)
    if args.summary:
        with open(args.summary, "w") as f:
            f.write(text + "\n")
    if fail:
        for msg in fail[:MAX_REPORTED]:
            print(f"{PROG}: FAIL: {msg}", file=sys.stderr)
        if len(fail) > MAX_REPORTED:
            print(f"{PROG}: ... and {len(fail) - MAX_REPORTED} more failures", file=sys.stderr)
        print(f"{PROG}: {len(fail)} failure(s)", file=sys.stderr)
        return EXIT_FAIL
    print(f"{PROG}: OK: {len(spans)} spans over {args.protocol}", file=sys.stderr)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
