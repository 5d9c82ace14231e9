#!/usr/bin/env python3
"""TensorFlow's own Monitor client against a ProfilerService server.

`xprof.convert._pywrap_profiler_plugin.monitor(addr, duration_ms, level, timestamp)`
is the client behind `tf.profiler.experimental.client.monitor`. At level 2 the
answer must come within the duration plus a second and hold a line
`Step time: Nms (avg), Nms (min), Nms (max)`; at level 1 it must not, and both
levels carry a `Utilization ...: N%` line that wandb's parser reads.

Usage (CI):
  python tests/interop/xprof_monitor.py --address localhost:PORT [--duration-ms 1000]
      [--expect-step-ms-min 2] [--expect-step-ms-max 50]

Exit status: 0 when both answers are as above, 1 otherwise, 2 when xprof is not
installed.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

STEP = re.compile(r"^Step time: ([0-9.]+)ms \(avg\), ([0-9.]+)ms \(min\), ([0-9.]+)ms \(max\)$")


def wandb_utilization(text: str) -> float:
    """What wandb's TPU monitor reads from the text (its own expression)."""
    return float(text.split("Utilization ")[1].split(": ")[1].split("%")[0])


def ask(monitor, address: str, duration_ms: int, level: int) -> tuple[str, float]:
    started = time.monotonic()
    text = monitor(address, duration_ms, level, True)
    return text, time.monotonic() - started


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--address", required=True)
    ap.add_argument("--duration-ms", type=int, default=1000)
    ap.add_argument("--expect-step-ms-min", type=float, default=0.0)
    ap.add_argument("--expect-step-ms-max", type=float, default=1e9)
    args = ap.parse_args()
    try:
        from xprof.convert import _pywrap_profiler_plugin
    except Exception as e:  # noqa: BLE001
        print(f"xprof_monitor: cannot import xprof ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    failures = []
    limit = args.duration_ms / 1000 + 1.0
    for level in (2, 1):
        try:
            text, took = ask(_pywrap_profiler_plugin.monitor, args.address, args.duration_ms, level)
        except Exception as e:  # noqa: BLE001
            failures.append(f"level {level}: monitor raised {type(e).__name__}: {e}")
            continue
        print(f"--- level {level} ({took:.2f} s)\n{text}")
        if took > limit:
            failures.append(f"level {level}: answered in {took:.2f} s, over {limit:.2f} s")
        steps = [m for m in (STEP.match(line) for line in text.splitlines()) if m]
        if level == 2:
            if len(steps) != 1:
                failures.append(f"level 2: {len(steps)} 'Step time: ...' lines, want 1")
            else:
                avg, low, high = (float(g) for g in steps[0].groups())
                if not low <= avg <= high:
                    failures.append(f"level 2: avg {avg} outside min {low} .. max {high}")
                if not args.expect_step_ms_min <= avg <= args.expect_step_ms_max:
                    failures.append(
                        f"level 2: avg step {avg} ms outside "
                        f"{args.expect_step_ms_min} .. {args.expect_step_ms_max}"
                    )
        elif steps or "Step time" in text:
            failures.append("level 1: a step time line, which level 1 does not give")
        try:
            utilization = wandb_utilization(text)
        except (IndexError, ValueError) as e:
            failures.append(f"level {level}: wandb cannot read the utilisation ({e})")
        else:
            if not 0.0 <= utilization <= 100.0:
                failures.append(f"level {level}: utilisation {utilization} is no percentage")
    for failure in failures:
        print(f"xprof_monitor: FAIL: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
