#!/usr/bin/env python3
"""Check that xprof's kernel_stats tool reads the GPU plane of an `.xplane.pb`.

Usage: python tests/interop/xprof_kernel_stats.py --xplane PATH \
           --expect-kernel NAME:REGS:BLOCK:GRID[:OCC] ...  (e.g. gemm:64:128,2,1:80,4,1:50)

The file is copied into a temporary logdir first (xprof writes caches beside what it
reads). Exit 0 when every expected kernel has a row with those registers per thread,
block and grid dimensions (and occupancy percent, when given); 1 when one does not; 2 on
bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--xplane", required=True)
    ap.add_argument("--expect-kernel", nargs="+", default=[])
    args = ap.parse_args()
    if not os.path.isfile(args.xplane):
        print(f"xprof_kernel_stats: no such file: {args.xplane}", file=sys.stderr)
        return 2
    try:
        from xprof.convert import raw_to_tool_data
    except ImportError as e:
        print(f"xprof_kernel_stats: xprof is not installed ({e})", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "plugins", "profile", "run")
        os.makedirs(run)
        path = shutil.copy(args.xplane, run)
        data, _ = raw_to_tool_data.xspace_to_tool_data([path], "kernel_stats", {})
    if data is None:
        print("xprof_kernel_stats: FAIL: kernel_stats conversion failed", file=sys.stderr)
        return 1
    table = json.loads(data)
    ids = [c["id"] for c in table["cols"]]
    rows = [dict(zip(ids, (c.get("v") for c in r["c"]))) for r in table["rows"]]
    print(f"kernel_stats: {len(rows)} kernel rows")
    failed = False
    for spec in args.expect_kernel:
        parts = spec.split(":")
        if len(parts) not in (4, 5):
            print(f"xprof_kernel_stats: bad --expect-kernel {spec!r}", file=sys.stderr)
            return 2
        name, regs, block, grid = parts[:4]
        occupancy = float(parts[4]) if len(parts) == 5 else None
        match = [r for r in rows if r["kernel_name"] == name]
        ok = any(
            int(r["registers_per_thread"]) == int(regs)
            and r["block_dim"] == block
            and r["grid_dim"] == grid
            and (occupancy is None or abs(float(r["occupancy_pct"]) - occupancy) < 0.05)
            for r in match
        )
        print(f"  kernel {name}: {'OK' if ok else 'MISSING'} {match[:1]}")
        failed |= not ok
    if failed:
        print("xprof_kernel_stats: FAIL: kernel_details must read "
              "'regs:R static_shared:S dynamic_shared:D grid:x,y,z block:x,y,z occ_pct:P' "
              "on events of a /device:GPU:<n> plane", file=sys.stderr)
        return 1
    print(f"xprof_kernel_stats: OK: {args.xplane}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
