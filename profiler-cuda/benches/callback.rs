//! The CPU side of the GPU tracer, without a GPU: prof's CUPTI callback fed synthetic
//! `CUpti_CallbackData` for a `cuLaunchKernel` (its entry and exit, inside an open
//! annotation, as CUPTI calls it around every launch), and what the GPU tracer's scope
//! hook adds to a recorded `trace!`.
//!
//! Goals (docs/cost.md): the callback, entry and exit, ≤ 60 ns; the hook adds ≤ 3 ns to
//! `trace!`. Both are also timed in interleaved rounds (one batch of each case per
//! round, in turn), which `benches/report.py` reads the goals from.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::cell::RefCell;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use profiler_core::tracer::keep_scope_stack;
use profiler_core::{trace, ProfileOptions};
use profiler_cuda::calls;
use profiler_cuda::synthetic::DriverLaunch;

#[path = "../../profiler-core/benches/support/mod.rs"]
mod support;
use support::{batched, interleaved, print_table, timed, Case, Cmp, LongSession, Row, BATCH};

/// Calls a call-log session holds before the bench restarts it, untimed.
const CALLS_PER_SESSION: u64 = 1 << 20;

/// A call-log session restarted, untimed, before it would hold more calls.
struct CallSession {
    calls: u64,
}

impl CallSession {
    fn start() -> CallSession {
        calls::begin_session(u64::MAX);
        CallSession { calls: 0 }
    }

    fn reserve(&mut self, n: u64) {
        if self.calls + n > CALLS_PER_SESSION {
            calls::end_session();
            calls::begin_session(u64::MAX);
            self.calls = 0;
        }
        self.calls += n;
    }
}

impl Drop for CallSession {
    fn drop(&mut self) {
        calls::end_session();
    }
}

fn gpu_tracer(c: &mut Criterion) {
    let mut g = c.benchmark_group("gpu_tracer");
    g.measurement_time(Duration::from_secs(3));

    // The callback inside an annotation, as a framework's launch is: the scope hook is
    // installed and one annotation is open, so the callback reads a real stack.
    let long = RefCell::new(LongSession::start(
        ProfileOptions::default().device_tracer_level(0),
    ));
    keep_scope_stack(true);
    let calls = RefCell::new(CallSession::start());
    let mut launch = DriverLaunch::new();
    {
        let _layer = trace!("attn");
        g.bench_function("launch_callback", |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || calls.borrow_mut().reserve(BATCH),
                    |n| {
                        for i in 0..n {
                            launch.report(i as u32);
                        }
                    },
                    |()| {},
                )
            })
        });
    }

    // `trace!` with and without the GPU tracer's hook.
    for (name, hook) in [("trace_on", false), ("trace_on_gpu_hook", true)] {
        keep_scope_stack(hook);
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || long.borrow_mut().reserve(2 * BATCH),
                    |n| {
                        for _ in 0..n {
                            let _t = trace!("span");
                        }
                    },
                    |()| {},
                )
            })
        });
    }
    keep_scope_stack(false);
    g.finish();
    drop(calls);
    drop(long);
}

criterion_group!(benches, gpu_tracer);

/// The same cases in turn, batch by batch: the goals per round.
fn gpu_tracer_interleaved() {
    let long = RefCell::new(LongSession::start(
        ProfileOptions::default().device_tracer_level(0),
    ));
    let calls = RefCell::new(CallSession::start());
    let launch = RefCell::new(DriverLaunch::new());
    let mut callback = |n| {
        calls.borrow_mut().reserve(n);
        long.borrow_mut().reserve(2);
        keep_scope_stack(true);
        let _layer = trace!("attn");
        let mut launch = launch.borrow_mut();
        timed(n, |n| {
            for i in 0..n {
                launch.report(i as u32);
            }
        })
    };
    let mut plain = |n| {
        keep_scope_stack(false);
        long.borrow_mut().reserve(2 * n);
        timed(n, |n| {
            for _ in 0..n {
                let _t = trace!("span");
            }
        })
    };
    let mut hooked = |n| {
        keep_scope_stack(true);
        long.borrow_mut().reserve(2 * n);
        timed(n, |n| {
            for _ in 0..n {
                let _t = trace!("span");
            }
        })
    };
    let mut cases: [Case<'_>; 3] = [
        ("launch_callback", &mut callback),
        ("trace_on", &mut plain),
        ("trace_on_gpu_hook", &mut hooked),
    ];
    let rounds = interleaved(400, BATCH, &mut cases);
    keep_scope_stack(false);
    rounds.print(
        "gpu_tracer",
        &[("trace_on_gpu_hook", "trace_on", Cmp::Difference)],
    );
}

fn main() {
    benches();
    gpu_tracer_interleaved();
    Criterion::default().configure_from_args().final_summary();
    print_table(
        "gpu_tracer",
        &[
            Row::Plain("launch_callback", None),
            Row::Plain("trace_on", None),
            Row::Plain("trace_on_gpu_hook", Some("trace_on")),
        ],
    );
}
