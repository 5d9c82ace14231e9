#!/usr/bin/env python3
"""Capture a profile from a ProfilerService server with xprof's own client.

This is the call behind TensorBoard/XProf's "Capture Profile" button
(`xprof.convert._pywrap_profiler_plugin.trace`): it sends the request the button
sends, and the server writes LOGDIR/plugins/profile/<run>/<host>.xplane.pb.

Usage (CI):
  python tests/interop/xprof_capture.py --address localhost:PORT --logdir DIR \
      [--duration-ms 1000] [--attempts 3]

Prints the path of the file the capture produced. Exit status: 0 on success,
1 when the capture failed or wrote no file, 2 when xprof is not installed.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--address", required=True, help="HOST:PORT of the server")
    ap.add_argument("--logdir", required=True)
    ap.add_argument("--duration-ms", type=int, default=1000)
    ap.add_argument("--attempts", type=int, default=3)
    args = ap.parse_args()
    try:
        from xprof.convert import _pywrap_profiler_plugin
    except Exception as e:  # noqa: BLE001
        print(f"xprof_capture: cannot import xprof ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    # xprof's native client prints progress on stdout; keep stdout for the path.
    sys.stdout.flush()
    saved_stdout = os.dup(1)
    os.dup2(2, 1)
    options = {"host_tracer_level": 2, "device_tracer_level": 1, "python_tracer_level": 0, "delay_ms": 0}
    try:
        # (service_addr, logdir, worker_list, include_dataset_ops, duration_ms,
        #  num_tracing_attempts, options), as TensorBoard's profile plugin calls it.
        _pywrap_profiler_plugin.trace(
            args.address, args.logdir, "", True, args.duration_ms, args.attempts, options
        )
    except Exception as e:  # noqa: BLE001
        print(f"xprof_capture: FAIL: xprof's capture from {args.address}: {e}", file=sys.stderr)
        return 1
    finally:
        os.dup2(saved_stdout, 1)
        os.close(saved_stdout)
    files = sorted(glob.glob(os.path.join(args.logdir, "plugins", "profile", "*", "*.xplane.pb")))
    if not files:
        print(f"xprof_capture: FAIL: the capture wrote no .xplane.pb under {args.logdir}", file=sys.stderr)
        return 1
    print(files[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
