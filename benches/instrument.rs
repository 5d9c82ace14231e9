//! `#[prof::instrument]` beside `#[tracing::instrument]` on the same function, and
//! beside the `trace!` it stands for, in one run: off (no session / no subscriber) and
//! recording (a prof session / a registry, bare or with `ProfilerLayer` recording).
//! Prints the ratios at the end.
//!
//! Built without prof's `enable` feature (`cargo bench --bench instrument
//! --no-default-features --features tracing`), it times the same functions with the
//! annotations compiled out, inside a running session, against the function without
//! them (an empty loop of calls): group `instrument_compiled_out`, whose ratio is 1
//! when compiling out leaves nothing behind.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use prof::{ProfileOptions, ProfilerLayer};
use tracing_subscriber::layer::SubscriberExt;

#[path = "../profiler-core/benches/support/mod.rs"]
mod support;
use support::{batched, interleaved, print_table, timed, Case, Cmp, LongSession, Row, BATCH};

#[prof::instrument]
fn with_prof(x: u64) -> u64 {
    black_box(x)
}

/// What `#[prof::instrument]` stands for, written by hand: its goal is to cost the
/// same.
fn with_trace(x: u64) -> u64 {
    let _t = prof::trace!("with_trace", x = x);
    black_box(x)
}

#[tracing::instrument]
fn with_tracing(x: u64) -> u64 {
    black_box(x)
}

/// The same function with no annotation: what a compiled-out one must cost.
fn bare(x: u64) -> u64 {
    black_box(x)
}

fn calls(f: fn(u64) -> u64) -> impl FnMut(u64) {
    move |n| {
        for i in 0..n {
            black_box(f(i));
        }
    }
}

fn instrument(c: &mut Criterion) {
    let mut g = c.benchmark_group("instrument");
    g.measurement_time(Duration::from_secs(3));

    g.bench_function("prof_off", |b| b.iter(|| with_prof(black_box(7))));
    // Off, in batches of calls as the compiled-out build times them, beside the same
    // loop over the function without the attribute.
    g.bench_function("empty_loop", |b| {
        b.iter_custom(|iters| batched(iters, || (), calls(bare), |()| {}))
    });
    g.bench_function("prof_off_loop", |b| {
        b.iter_custom(|iters| batched(iters, || (), calls(with_prof), |()| {}))
    });
    tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
        g.bench_function("tracing_off", |b| b.iter(|| with_tracing(black_box(7))));
    });

    {
        let mut long = LongSession::start(ProfileOptions::default());
        // An event and its field: two records per call.
        g.bench_function("prof_on", |b| {
            b.iter_custom(|iters| {
                batched(iters, || long.reserve(2 * BATCH), calls(with_prof), |()| {})
            })
        });
        g.bench_function("trace_on", |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || long.reserve(2 * BATCH),
                    calls(with_trace),
                    |()| {},
                )
            })
        });
    }

    tracing::subscriber::with_default(tracing_subscriber::registry(), || {
        g.bench_function("tracing_registry", |b| {
            b.iter(|| with_tracing(black_box(7)))
        });
    });

    let layered = tracing_subscriber::registry().with(ProfilerLayer::new());
    tracing::subscriber::with_default(layered, || {
        let mut long = LongSession::start(ProfileOptions::default());
        // Event, span tag, field, close mark: four records per call.
        g.bench_function("tracing_registry+prof_layer_on", |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || long.reserve(4 * BATCH),
                    calls(with_tracing),
                    |()| {},
                )
            })
        });
    });

    g.finish();
}

criterion_group!(benches, instrument);

/// The goal again, in turn, batch by batch: `#[prof::instrument]` over the `trace!`
/// it stands for, per round.
fn instrument_interleaved() {
    let long = std::cell::RefCell::new(LongSession::start(ProfileOptions::default()));
    let timed = |f: fn(u64) -> u64, n: u64| {
        long.borrow_mut().reserve(2 * n);
        timed(n, calls(f))
    };
    let mut trace = |n| timed(with_trace, n);
    let mut instrument = |n| timed(with_prof, n);
    let mut cases: [Case<'_>; 2] = [("trace_on", &mut trace), ("prof_on", &mut instrument)];
    let rounds = interleaved(600, BATCH, &mut cases);
    rounds.print("instrument", &[("prof_on", "trace_on", Cmp::Ratio)]);
}

/// With the annotations compiled out: calls of the annotated functions and of the
/// bare one, in batches, inside a session (which records nothing in this build).
fn compiled_out(c: &mut Criterion) {
    let _session = LongSession::start(ProfileOptions::default());
    let mut g = c.benchmark_group("instrument_compiled_out");
    g.measurement_time(Duration::from_secs(3));
    for (name, f) in [
        ("empty_loop", bare as fn(u64) -> u64),
        ("prof_compiled_out", with_prof),
        ("trace_compiled_out", with_trace),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| batched(iters, || (), calls(f), |()| {}))
        });
    }
    g.finish();
    let mut empty = |n| timed(n, calls(bare));
    let mut instrument = |n| timed(n, calls(with_prof));
    let mut trace = |n| timed(n, calls(with_trace));
    let mut cases: [Case<'_>; 3] = [
        ("empty_loop", &mut empty),
        ("prof_compiled_out", &mut instrument),
        ("trace_compiled_out", &mut trace),
    ];
    let rounds = interleaved(600, BATCH, &mut cases);
    rounds.print(
        "instrument_compiled_out",
        &[
            ("prof_compiled_out", "empty_loop", Cmp::Ratio),
            ("trace_compiled_out", "empty_loop", Cmp::Ratio),
        ],
    );
}

fn main() {
    if prof::gate::STATIC_MAX_LEVEL == 0 {
        let mut c = Criterion::default().configure_from_args();
        compiled_out(&mut c);
        c.final_summary();
        print_table(
            "instrument_compiled_out",
            &[
                Row::Plain("empty_loop", None),
                Row::Plain("prof_compiled_out", Some("empty_loop")),
                Row::Plain("trace_compiled_out", Some("empty_loop")),
            ],
        );
        return;
    }
    benches();
    instrument_interleaved();
    Criterion::default().configure_from_args().final_summary();
    print_table(
        "instrument",
        &[
            Row::Plain("prof_off", Some("tracing_off")),
            Row::Plain("tracing_off", None),
            Row::Plain("empty_loop", None),
            Row::Plain("prof_off_loop", Some("empty_loop")),
            Row::Plain("trace_on", None),
            Row::Plain("prof_on", Some("trace_on")),
            Row::Plain("tracing_registry", None),
            Row::Plain("tracing_registry+prof_layer_on", Some("prof_on")),
        ],
    );
}
