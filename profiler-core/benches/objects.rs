//! Cost of a `Counter` update, a `Marker` and a `Task` start/stop, off and recording;
//! and the `TrackingAllocator`'s overhead on an allocation-heavy loop (alloc + free of
//! 64 bytes), against the bare system allocator, with no session and with one
//! recording. Prints the ratios at the end; the allocator's target is at most 1.15.
//!
//! The allocators are called directly (`GlobalAlloc::alloc`/`dealloc`) on instances of
//! their own, so both run in one process under the same conditions.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{criterion_group, Criterion};
use profiler_core::domain::{Domain, Marker, MarkerScope, Task};
use profiler_core::{Counter, ProfileOptions, TrackingAllocator};

mod support;
use support::{batched, interleaved, print_table, timed, Case, Cmp, LongSession, Row, BATCH};

static DEPTH: Counter = Counter::new("depth");
static D: Domain = Domain::new("bench");
static MARK: Marker = Marker::new(&D, "mark");
static TASK: Task = Task::new(&D, "task");

/// Not inlined, with an opaque count: the three allocator cases run the same loop.
#[inline(never)]
fn alloc_loop(a: &impl GlobalAlloc, n: u64) {
    let n = black_box(n);
    let layout = Layout::from_size_align(64, 8).unwrap();
    for _ in 0..n {
        // SAFETY: a non-zero-size layout; the pointer is freed with the same layout.
        #[allow(unsafe_code)]
        unsafe {
            let p = a.alloc(layout);
            black_box(p);
            a.dealloc(p, layout);
        }
    }
}

fn objects(c: &mut Criterion) {
    let mut g = c.benchmark_group("objects");
    g.measurement_time(Duration::from_secs(3));

    static FLAG: AtomicBool = AtomicBool::new(false);
    g.bench_function("baseline_atomic_load", |b| {
        b.iter(|| black_box(FLAG.load(Ordering::Relaxed)))
    });
    g.bench_function("counter_off", |b| {
        b.iter(|| DEPTH.increment(black_box(1.0)))
    });
    g.bench_function("marker_off", |b| b.iter(|| MARK.mark(MarkerScope::Thread)));
    g.bench_function("task_off", |b| {
        b.iter(|| {
            TASK.start();
            TASK.stop();
        })
    });
    let tracking = TrackingAllocator::new(System);
    g.bench_function("system_alloc", |b| b.iter(|| alloc_loop(&System, 64)));
    g.bench_function("tracking_alloc_off", |b| {
        b.iter(|| alloc_loop(&tracking, 64))
    });

    let mut long = LongSession::start(ProfileOptions::default());
    // Each recording kind writes at most two records per operation.
    let recording: [(&str, fn()); 3] = [
        ("counter_on", || DEPTH.increment(black_box(1.0))),
        ("marker_on", || MARK.mark(MarkerScope::Thread)),
        ("task_on", || {
            TASK.start();
            TASK.stop();
        }),
    ];
    for (name, op) in recording {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || long.reserve(2 * BATCH),
                    |n| (0..n).for_each(|_| op()),
                    |()| {},
                )
            })
        });
    }
    g.bench_function("tracking_alloc_on", |b| {
        b.iter_custom(|iters| {
            batched(
                iters,
                // Samples are written only when a tally is folded in: far fewer than a batch.
                || long.reserve(BATCH),
                |n| alloc_loop(&tracking, n * 64),
                |()| {},
            )
        })
    });
    drop(long);
    g.finish();
}

criterion_group!(benches, objects);

/// The allocator's goal again, in turn, batch by batch: tracking (recording) over the
/// system allocator per round.
fn allocator_interleaved() {
    let tracking = TrackingAllocator::new(System);
    let long = std::cell::RefCell::new(LongSession::start(ProfileOptions::default()));
    let mut system = |n| timed(n, |n| alloc_loop(&System, n));
    let mut on = |n| {
        long.borrow_mut().reserve(BATCH);
        timed(n, |n| alloc_loop(&tracking, n))
    };
    let mut cases: [Case<'_>; 2] = [
        ("system_alloc", &mut system),
        ("tracking_alloc_on", &mut on),
    ];
    let rounds = interleaved(1000, BATCH, &mut cases);
    rounds.print(
        "objects",
        &[("tracking_alloc_on", "system_alloc", Cmp::Ratio)],
    );
}

fn main() {
    benches();
    allocator_interleaved();
    Criterion::default().configure_from_args().final_summary();
    print_table(
        "objects",
        &[
            Row::Plain("baseline_atomic_load", None),
            Row::Plain("counter_off", Some("baseline_atomic_load")),
            Row::Plain("marker_off", Some("baseline_atomic_load")),
            Row::Plain("task_off", Some("baseline_atomic_load")),
            Row::Plain("counter_on", None),
            Row::Plain("marker_on", None),
            Row::Plain("task_on", None),
            Row::Plain("system_alloc", None),
            Row::Plain("tracking_alloc_off", Some("system_alloc")),
            Row::Plain("tracking_alloc_on", Some("system_alloc")),
        ],
    );
}
