//! Cost per event of turning a recorded session into files, for 1M events: collection
//! (thread buffers → XSpace), the `.xplane.pb` (encoding, and the atomic file write),
//! and each timeline format side by side (Perfetto, Chrome JSON, gzipped Chrome JSON),
//! streamed to a sink so that only the exporter is measured; then the same cases in
//! interleaved rounds (one export of each per round, in turn), whose medians and
//! fastest rounds the report reads. Targets (issue 15): stop → file ≤ 120 ns/event,
//! Perfetto and Chrome JSON ≤ 200, gzipped ≤ 350.
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use profiler_core::{session, Profile, ProfileOptions};

#[path = "../../profiler-core/benches/support/interleaved.rs"]
#[allow(dead_code, unreachable_pub)] // shared with profiler-core's benches, which use all of it
mod interleaved;
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
    let mut files = NewFiles::new(dir.path());
    g.bench_function("encode_and_write_atomically", |b| {
        b.iter_batched(
            || files.next(),
            |path| xplane::write(&path, profile.xspace()).unwrap(),
            criterion::BatchSize::PerIteration,
        )
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

/// A new file for each write, as each session's profile is (a run's logdir gets a
/// directory per capture), with the one before removed untimed: writing over one
/// path timed the old file's removal too, which on a filesystem mounted with
/// `discard` was an eighth of the write.
struct NewFiles {
    dir: PathBuf,
    count: u64,
    last: Option<PathBuf>,
}

impl NewFiles {
    fn new(dir: &Path) -> NewFiles {
        NewFiles {
            dir: dir.to_owned(),
            count: 0,
            last: None,
        }
    }

    fn next(&mut self) -> PathBuf {
        if let Some(last) = self.last.take() {
            let _ = std::fs::remove_file(last);
        }
        self.count += 1;
        let path = self.dir.join(format!("host{}.xplane.pb", self.count));
        self.last = Some(path.clone());
        path
    }
}

/// The export goals again, in turn, round by round: on a shared VM whose speed drifts
/// over seconds, criterion's cases (ten seconds each, one after the other) can see
/// different machines.
fn export_interleaved() {
    let profile = profile();
    let dir = tempfile::tempdir().unwrap();
    let mut files = NewFiles::new(dir.path());
    // Each case exports once whatever the count it is given: the rounds divide by
    // EVENTS, which makes their figures nanoseconds per event.
    let mut collect = |_| {
        record();
        let t0 = Instant::now();
        let p = session::stop().unwrap();
        let took = t0.elapsed();
        assert_eq!(p.event_count() as u64, EVENTS);
        took
    };
    let mut write = |_| {
        let path = files.next();
        let t0 = Instant::now();
        xplane::write(&path, profile.xspace()).unwrap();
        t0.elapsed()
    };
    let mut pftrace = |_| {
        let t0 = Instant::now();
        perfetto::write_to(profile.xspace(), std::io::sink()).unwrap();
        t0.elapsed()
    };
    let mut json = |_| {
        let t0 = Instant::now();
        chrome::write_to(profile.xspace(), std::io::sink()).unwrap();
        t0.elapsed()
    };
    let mut gz = |_| {
        let t0 = Instant::now();
        chrome::write_gz_to(profile.xspace(), std::io::sink()).unwrap();
        t0.elapsed()
    };
    let mut cases: [interleaved::Case<'_>; 5] = [
        ("collect", &mut collect),
        ("encode_and_write_atomically", &mut write),
        ("perfetto", &mut pftrace),
        ("chrome_json", &mut json),
        ("chrome_json_gz", &mut gz),
    ];
    let rounds = interleaved::interleaved(15, EVENTS, &mut cases);
    rounds.print("export_1M_events", &[]);
    rounds.print_fastest("export_1M_events");
}

fn main() {
    benches();
    export_interleaved();
    Criterion::default().configure_from_args().final_summary();
}
