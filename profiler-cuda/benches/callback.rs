//! The CPU side of the GPU tracer, without a GPU: prof's CUPTI callback fed synthetic
//! `CUpti_CallbackData` for a `cuLaunchKernel` (its entry and exit, inside an open
//! annotation, as CUPTI calls it around every launch), and what the GPU tracer's scope
//! hook adds to a recorded `trace!`.
//!
//! Goals (docs/cost.md): the callback, entry and exit, ≤ 60 ns; the hook adds ≤ 3 ns to
//! `trace!`. Both are also timed in interleaved rounds (one batch of each case per
//! round, in turn), which `benches/report.py` reads the goals from.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used, unsafe_code)]

use std::cell::RefCell;
use std::ffi::c_void;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use cudarc::cupti::sys as cupti;
use profiler_core::tracer::keep_scope_stack;
use profiler_core::{trace, ProfileOptions};
use profiler_cuda::calls;

#[path = "../../profiler-core/benches/support/mod.rs"]
mod support;
use support::{batched, interleaved, print_table, timed, Case, Cmp, LongSession, Row, BATCH};

/// `cuLaunchKernel`'s callback id in the driver domain.
const CU_LAUNCH_KERNEL: u32 = 307;
/// Calls a call-log session holds before the bench restarts it, untimed.
const CALLS_PER_SESSION: u64 = 1 << 20;

/// One launch as CUPTI reports it: the entry, then the exit, with the same data.
fn launch(data: &mut cupti::CUpti_CallbackData, correlation_id: u32) {
    data.correlationId = correlation_id;
    let domain = cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API;
    let ptr = std::ptr::from_mut(data).cast::<c_void>().cast_const();
    data.callbackSite = cupti::CUpti_ApiCallbackSite::CUPTI_API_ENTER;
    // SAFETY: `data` is a whole `CUpti_CallbackData` whose `correlationData` points to
    // a live u64, as CUPTI passes them for the driver domain.
    unsafe {
        profiler_cuda::synthetic::callback(std::ptr::null_mut(), domain, CU_LAUNCH_KERNEL, ptr)
    };
    data.callbackSite = cupti::CUpti_ApiCallbackSite::CUPTI_API_EXIT;
    let ptr = std::ptr::from_mut(data).cast::<c_void>().cast_const();
    // SAFETY: as above.
    unsafe {
        profiler_cuda::synthetic::callback(std::ptr::null_mut(), domain, CU_LAUNCH_KERNEL, ptr)
    };
}

/// Synthetic callback data, its per-call storage in `slot`.
fn callback_data(slot: &mut u64) -> cupti::CUpti_CallbackData {
    cupti::CUpti_CallbackData {
        callbackSite: cupti::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
        functionName: c"cuLaunchKernel".as_ptr(),
        functionParams: std::ptr::null(),
        functionReturnValue: std::ptr::null_mut(),
        symbolName: std::ptr::null(),
        context: std::ptr::null_mut(),
        contextUid: 1,
        correlationData: slot,
        correlationId: 0,
    }
}

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
    let mut slot = 0u64;
    let mut data = callback_data(&mut slot);
    {
        let _layer = trace!("attn");
        g.bench_function("launch_callback", |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || calls.borrow_mut().reserve(BATCH),
                    |n| {
                        for i in 0..n {
                            launch(&mut data, i as u32);
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
    let mut slot = 0u64;
    let data = RefCell::new(callback_data(&mut slot));
    let mut callback = |n| {
        calls.borrow_mut().reserve(n);
        long.borrow_mut().reserve(2);
        keep_scope_stack(true);
        let _layer = trace!("attn");
        let mut data = data.borrow_mut();
        timed(n, |n| {
            for i in 0..n {
                launch(&mut data, i as u32);
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
