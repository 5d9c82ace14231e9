//! Cost per event of turning a recorded session into files, for 1M events: collection
//! (thread buffers → XSpace), the `.xplane.pb` (encoding, and the atomic file write),
//! and each timeline format side by side (Perfetto, Chrome JSON, gzipped Chrome JSON),
//! streamed to a sink so that only the exporter is measured. Targets: Perfetto
//! ≤ 200 ns/event, Chrome JSON ≤ 400 ns/event.
#![allow(missing_docs, clippy::unwrap_used)]

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use profiler_core::{session, Profile, ProfileOptions};

mod workload;
use profiler_export::{chrome, perfetto, xplane};

const EVENTS: u64 = 1_000_000;

/// Records 1M events shaped like a training loop.
fn record() {
    session::start(ProfileOptions::default().max_events(4 * EVENTS), None).unwrap();
    workload::training_loop(EVENTS);
}

fn profile() -> Profile {
    record();
    session::stop().unwrap()
}

fn export(c: &mut Criterion) {
    let mut g = c.benchmark_group("export_1M_events");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(EVENTS));

    g.bench_function("collect", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                record();
                let t0 = Instant::now();
                let p = session::stop().unwrap();
                total += t0.elapsed();
                assert_eq!(p.event_count() as u64, EVENTS);
            }
            total
        })
    });

    let profile = profile();
    g.bench_function("encode", |b| b.iter(|| xplane::encode(profile.xspace())));

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.xplane.pb");
    g.bench_function("encode_and_write_atomically", |b| {
        b.iter(|| xplane::write(&path, profile.xspace()).unwrap())
    });
    g.bench_function("perfetto", |b| {
        b.iter(|| perfetto::write_to(profile.xspace(), std::io::sink()).unwrap())
    });
    g.bench_function("chrome_json", |b| {
        b.iter(|| chrome::write_to(profile.xspace(), std::io::sink()).unwrap())
    });
    g.bench_function("chrome_json_gz", |b| {
        b.iter(|| chrome::write_gz_to(profile.xspace(), std::io::sink()).unwrap())
    });
    g.finish();
}

criterion_group!(benches, export);
criterion_main!(benches);
