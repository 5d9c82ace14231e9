"""torch.profiler's cost on the loop `cuda_matmul --overhead` times, for comparison.

The same shape as cuda_matmul's overhead loop: LAUNCHES iterations, each one annotation
(`record_function("tiny")`, as `prof::trace!("tiny")`) around one tiny in-place kernel
on 1024 floats, then one synchronize. Rounds alternate untraced and traced (under
`torch.profiler.profile` with CPU and CUDA activities); the loop is timed inside the
profiler, and entering and leaving it (Kineto's set-up; collecting and post-processing
the events) are timed apart, as cuda_matmul times its session's start and stop.

    python examples/cuda_overhead_torch.py --launches 10000,100000 --rounds 21

Prints one line per launch count: the medians with their range, the ratio of the
medians with the range of the rounds' own ratios, the time added per launch, and the
per-session costs. `--budget-s` caps the time spent on one launch count (leaving the
profiler takes seconds for 100k launches); the line says how many rounds ran.
"""

import argparse
import statistics
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launches", default="10000,100000",
                        help="comma-separated launch counts (default 10000,100000)")
    parser.add_argument("--rounds", type=int, default=21,
                        help="alternated (untraced, traced) rounds per count (default 21)")
    parser.add_argument("--budget-s", type=float, default=600.0,
                        help="stop adding rounds for a count after this many seconds")
    args = parser.parse_args()

    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    if not torch.cuda.is_available():
        print("cuda_overhead_torch: no CUDA device; nothing to do.")
        return 0
    print(f"cuda_overhead_torch: torch {torch.__version__}, {torch.cuda.get_device_name(0)}")
    x = torch.zeros(1024, device="cuda")

    def run(launches: int) -> float:
        start = time.perf_counter()
        for _ in range(launches):
            with record_function("tiny"):
                x.mul_(1.0)
        torch.cuda.synchronize()
        return time.perf_counter() - start

    def traced(launches: int) -> tuple[float, float, float]:
        t0 = time.perf_counter()
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        prof.__enter__()
        started = time.perf_counter() - t0
        took = run(launches)
        t1 = time.perf_counter()
        prof.__exit__(None, None, None)
        kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
        stopped = time.perf_counter() - t1
        if kernels < launches:
            raise SystemExit(f"traced round saw {kernels} of {launches} kernels")
        return took, started, stopped

    for launches in (int(n) for n in args.launches.split(",")):
        # One round of each first, not counted: CUDA's and Kineto's start-up.
        run(launches)
        traced(launches)
        untraced_s, traced_s, start_s, stop_s = [], [], [], []
        began = time.perf_counter()
        while len(traced_s) < args.rounds and time.perf_counter() - began < args.budget_s:
            untraced_s.append(run(launches))
            took, started, stopped = traced(launches)
            traced_s.append(took)
            start_s.append(started)
            stop_s.append(stopped)

        def spread(v: list[float]) -> str:
            return f"{statistics.median(v) * 1e3:.2f} ms [{min(v) * 1e3:.2f}-{max(v) * 1e3:.2f}]"

        ratios = [t / u for t, u in zip(traced_s, untraced_s)]
        u, t = statistics.median(untraced_s), statistics.median(traced_s)
        print(f"torch.profiler overhead on {launches} launches, {len(traced_s)} alternated "
              f"rounds: untraced {spread(untraced_s)}, traced {spread(traced_s)}: "
              f"{t / u:.3f}x (rounds {min(ratios):.3f}-{max(ratios):.3f}), "
              f"{(t - u) * 1e9 / launches:+.0f} ns per launch; once per session: "
              f"start {spread(start_s)}, stop {spread(stop_s)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
