#!/usr/bin/env python3
"""A JAX program serving its profiler: the capture target for `capture-profile`.

Starts `jax.profiler.start_server(PORT)` and runs a bounded loop of jitted
matmuls, each step under `jax.profiler.StepTraceAnnotation("train", step_num=i)`,
for --seconds. Prints `listening on 127.0.0.1:PORT` once it can be captured.

JAX's server listens on every interface (it offers no choice); when this runs
as root the CI script starts it inside `unshare -n`, a network namespace with
loopback only.

Usage: python tests/interop/jax_server.py --port PORT [--seconds 120]
"""

from __future__ import annotations

import argparse
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--seconds", type=float, default=120.0)
    args = ap.parse_args()

    import jax
    import jax.numpy as jnp

    jax.profiler.start_server(args.port)

    @jax.jit
    def step(w, x):
        return jnp.tanh(x @ w) @ w.T

    key = jax.random.PRNGKey(0)
    w = jax.random.normal(key, (256, 256))
    x = jax.random.normal(key, (64, 256))
    step(w, x).block_until_ready()  # compile before anyone captures
    print(f"listening on 127.0.0.1:{args.port}", flush=True)

    until = time.monotonic() + args.seconds
    i = 0
    while time.monotonic() < until:
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            with jax.profiler.TraceAnnotation("matmul_step"):
                x = step(w, x)
                x.block_until_ready()
        time.sleep(0.002)
        i += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
