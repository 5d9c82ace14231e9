//! What `ProfilerLayer` adds to a `tracing` span (new + enter + exit + close), measured
//! as registry + layer minus registry + a no-op layer, beside tracing-chrome's layer, in one
//! run. Prints the ratios at the end.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::time::Duration;

use criterion::{criterion_group, Criterion};
use profiler_core::{ProfileOptions, ProfilerLayer};
use tracing_subscriber::layer::SubscriberExt;

mod support;
use support::{batched, print_table, LongSession, Row, BATCH};

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
            b.iter_custom(|iters| batched(iters, || long.reserve(BATCH), spans, |()| {}))
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

fn main() {
    benches();
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
