//! What `ProfilerLayer` adds to a `tracing` span (new + enter + exit + close), measured
//! as registry + layer minus registry + a no-op layer, beside tracing-chrome's layer, in one
//! run. Prints the ratios at the end.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::cell::RefCell;
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use profiler_core::{ProfileOptions, ProfilerLayer};
use tracing_subscriber::layer::SubscriberExt;

mod support;
use support::{batched, interleaved, print_table, timed, Case, Cmp, LongSession, Row, BATCH};

fn spans(n: u64) {
    for _ in 0..n {
        let span = tracing::info_span!("span");
        let _entered = span.enter();
    }
}

struct NoopLayer;
impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NoopLayer {}

fn layer(c: &mut Criterion) {
    let mut g = c.benchmark_group("layer");
    g.measurement_time(Duration::from_secs(3));

    tracing::subscriber::with_default(tracing_subscriber::registry(), || {
        g.bench_function("registry", |b| b.iter(|| spans(1)));
    });

    // The bare registry takes another path than any layered one (it measures slower
    // here), so what a layer adds is taken over registry + a layer that does nothing.
    tracing::subscriber::with_default(tracing_subscriber::registry().with(NoopLayer), || {
        g.bench_function("registry+noop_layer", |b| b.iter(|| spans(1)));
    });

    let with_prof = tracing_subscriber::registry().with(ProfilerLayer::new());
    tracing::subscriber::with_default(with_prof, || {
        g.bench_function("registry+prof_off", |b| b.iter(|| spans(1)));
        let mut long = LongSession::start(ProfileOptions::default());
        g.bench_function("registry+prof_on", |b| {
            // At most three records a span: its event, the event's span id, and its
            // close (usually a flag on the event instead).
            b.iter_custom(|iters| batched(iters, || long.reserve(3 * BATCH), spans, |()| {}))
        });
    });

    let dir = tempfile::tempdir().unwrap();
    let (chrome, flush) = tracing_chrome::ChromeLayerBuilder::new()
        .file(dir.path().join("trace.json"))
        .build();
    tracing::subscriber::with_default(tracing_subscriber::registry().with(chrome), || {
        g.bench_function("registry+tracing_chrome", |b| b.iter(|| spans(1)));
    });
    drop(flush);

    g.finish();
}

criterion_group!(benches, layer);

/// The goals' cases again, in turn, batch by batch: what the layer adds over a no-op
/// layer per round, off (the session paused, so the gate is closed) and recording.
fn layer_interleaved() {
    let noop = tracing::Dispatch::new(tracing_subscriber::registry().with(NoopLayer));
    let prof = tracing::Dispatch::new(tracing_subscriber::registry().with(ProfilerLayer::new()));
    let long = RefCell::new(LongSession::start(ProfileOptions::default()));
    let under = |dispatch: &tracing::Dispatch, n: u64| {
        tracing::dispatcher::with_default(dispatch, || timed(n, spans))
    };
    let mut noop_case = |n| under(&noop, n);
    let mut off = |n| {
        profiler_core::session::pause().unwrap();
        let took = under(&prof, n);
        profiler_core::session::resume().unwrap();
        took
    };
    let mut on = |n| {
        long.borrow_mut().reserve(3 * n);
        under(&prof, n)
    };
    let mut cases: [Case<'_>; 3] = [
        ("registry+noop_layer", &mut noop_case),
        ("registry+prof_off", &mut off),
        ("registry+prof_on", &mut on),
    ];
    let rounds = interleaved(400, BATCH, &mut cases);
    rounds.print(
        "layer",
        &[
            ("registry+prof_off", "registry+noop_layer", Cmp::Difference),
            ("registry+prof_on", "registry+noop_layer", Cmp::Difference),
        ],
    );
}

fn main() {
    benches();
    layer_interleaved();
    Criterion::default().configure_from_args().final_summary();
    print_table(
        "layer",
        &[
            Row::Plain("registry", None),
            Row::Plain("registry+noop_layer", Some("registry")),
            Row::Added {
                case: "registry+prof_off",
                base: "registry+noop_layer",
                other: None,
            },
            Row::Added {
                case: "registry+prof_on",
                base: "registry+noop_layer",
                other: None,
            },
            Row::Added {
                case: "registry+tracing_chrome",
                base: "registry+noop_layer",
                other: Some("registry+prof_on"),
            },
        ],
    );
}
