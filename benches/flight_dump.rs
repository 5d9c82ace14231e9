//! What a flight-recorder dump costs: `flight_recorder::snapshot()` alone, and the
//! snapshot written as a logdir run (`write_logdir`), over full rings of the default
//! 64 Ki records on 1 and on 8 threads. A job dumping every N seconds spends one
//! dump's time per N seconds of one core (the recording threads take no lock and wait
//! for nothing meanwhile); the table at the end says how much for N = 1, 10 and 60 s.
//! The guide's sessions chapter quotes it.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion};
use prof::flight_recorder::{self, FlightRecorder, DEFAULT_EVENTS_PER_THREAD};
use prof::ProfileOptions;

/// Threads recording into full rings, kept alive (their rings with them) until dropped.
struct Recording {
    release: Arc<Barrier>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Recording {
    /// A flight recorder whose `threads` threads have each gone round their ring
    /// twice: steps of an annotation with a field and 14 plain ones (16 records).
    fn start(threads: usize) -> Recording {
        flight_recorder::start(
            ProfileOptions::default(),
            FlightRecorder::new(DEFAULT_EVENTS_PER_THREAD),
        )
        .unwrap();
        let filled = Arc::new(Barrier::new(threads + 1));
        let release = Arc::new(Barrier::new(threads + 1));
        let threads = (0..threads)
            .map(|t| {
                let (filled, release) = (Arc::clone(&filled), Arc::clone(&release));
                std::thread::Builder::new()
                    .name(format!("trainer-{t}"))
                    .spawn(move || {
                        for step in 0..2 * DEFAULT_EVENTS_PER_THREAD / 16 {
                            let _step = prof::trace!("Train", step_num = step);
                            for _ in 0..14 {
                                drop(black_box(prof::trace!("op")));
                            }
                        }
                        filled.wait();
                        release.wait();
                    })
                    .unwrap()
            })
            .collect();
        filled.wait();
        Recording { release, threads }
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.release.wait();
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
        let _ = prof::stop();
    }
}

fn dump(dir: &std::path::Path) -> u64 {
    let snapshot = flight_recorder::snapshot().unwrap();
    let written = prof::export::logdir::write_logdir(dir, snapshot).unwrap();
    std::fs::metadata(&written.files()[0]).unwrap().len()
}

const THREADS: [usize; 2] = [1, 8];

fn flight_dump(c: &mut Criterion) {
    let mut g = c.benchmark_group("flight_dump");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    for threads in THREADS {
        let _recording = Recording::start(threads);
        let dir = tempfile::tempdir().unwrap();
        let id = format!("{threads}x64Ki");
        g.bench_function(BenchmarkId::new("snapshot", &id), |b| {
            b.iter(|| black_box(flight_recorder::snapshot().unwrap()))
        });
        g.bench_function(BenchmarkId::new("snapshot+write", &id), |b| {
            b.iter(|| dump(dir.path()))
        });
    }
    g.finish();
}

criterion_group!(benches, flight_dump);

/// The median of 5 dumps, with the file's size.
fn measure(threads: usize) -> (Duration, Duration, u64) {
    let _recording = Recording::start(threads);
    let dir = tempfile::tempdir().unwrap();
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2]
    };
    let snapshots = (0..5)
        .map(|_| {
            let t = Instant::now();
            black_box(flight_recorder::snapshot().unwrap());
            t.elapsed()
        })
        .collect();
    let mut bytes = 0;
    let dumps = (0..5)
        .map(|_| {
            let t = Instant::now();
            bytes = dump(dir.path());
            t.elapsed()
        })
        .collect();
    (median(snapshots), median(dumps), bytes)
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    println!("\nflight-recorder dumps (rings of 64 Ki records, full), median of 5:");
    println!("| threads | snapshot | snapshot + write | .xplane.pb | every 1 s | every 10 s | every 60 s |");
    println!("|---|---|---|---|---|---|---|");
    for threads in THREADS {
        let (snapshot, dump, bytes) = measure(threads);
        let share = |every: f64| format!("{:.2}%", 100.0 * dump.as_secs_f64() / every);
        println!(
            "| {threads} | {:.1} ms | {:.1} ms | {:.1} MB | {} | {} | {} |",
            snapshot.as_secs_f64() * 1e3,
            dump.as_secs_f64() * 1e3,
            bytes as f64 / 1e6,
            share(1.0),
            share(10.0),
            share(60.0),
        );
    }
    println!("(each share: one core's time spent dumping, the recording threads going on)");
}
