//! Cost of one annotation, off and recording, side by side with fastrace's local span
//! and puffin's scope, in one run. Prints the ratios at the end.
//!
//! Every system records in batches of 4096 spans under an open parent, which is how
//! each is meant to be used (fastrace: a root with a local parent; puffin: an outer
//! scope, so hand-off to its global profiler is not timed); only the spans are timed.
//! prof records into one session until a million records, then restarts it untimed,
//! so buffer growth is billed the way a long session pays it.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use profiler_core::{session, trace, ProfileOptions};

const BATCH: u64 = 4096;
const SESSION_RECORDS: u64 = 1 << 20;

fn batched<S>(
    iters: u64,
    mut setup: impl FnMut() -> S,
    mut run: impl FnMut(u64),
    mut teardown: impl FnMut(S),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        let state = setup();
        let t0 = Instant::now();
        run(n);
        total += t0.elapsed();
        teardown(state);
        left -= n;
    }
    total
}

struct NullReporter;
impl fastrace::collector::Reporter for NullReporter {
    fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
        black_box(spans);
    }
}

fn annotations(c: &mut Criterion) {
    let mut g = c.benchmark_group("annotation");
    g.measurement_time(Duration::from_secs(3));

    static FLAG: AtomicBool = AtomicBool::new(false);
    g.bench_function("baseline_atomic_load", |b| {
        b.iter(|| black_box(FLAG.load(Ordering::Relaxed)))
    });

    // The floor of any recording annotation: reading prof's clock twice (the clock
    // source is chosen when the first session starts; choose it now).
    let _ = profiler_core::clock::uses_tsc();
    g.bench_function("two_clock_reads", |b| {
        b.iter(|| {
            (
                black_box(profiler_core::clock::now()),
                black_box(profiler_core::clock::now()),
            )
        })
    });

    // Off: no session / no collector / scopes off.
    g.bench_function("prof_off", |b| {
        b.iter(|| {
            let _t = trace!("span", step_num = black_box(1));
        })
    });
    g.bench_function("fastrace_off", |b| {
        b.iter(|| {
            let _s = fastrace::local::LocalSpan::enter_with_local_parent("span");
        })
    });
    puffin::set_scopes_on(false);
    g.bench_function("puffin_off", |b| {
        b.iter(|| {
            puffin::profile_scope!("span");
        })
    });

    // Recording.
    let recorded = std::cell::Cell::new(0u64);
    let options = ProfileOptions::default().max_events(SESSION_RECORDS + BATCH);
    session::start(options.clone(), None).unwrap();
    for (name, fields) in [("prof_on", false), ("prof_on_one_field", true)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || {
                        if recorded.get() + 2 * BATCH > SESSION_RECORDS {
                            session::stop().unwrap();
                            session::start(options.clone(), None).unwrap();
                            recorded.set(0);
                        }
                    },
                    |n| {
                        if fields {
                            for i in 0..n {
                                let _t = trace!("span", i = i);
                            }
                        } else {
                            for _ in 0..n {
                                let _t = trace!("span");
                            }
                        }
                    },
                    |()| recorded.set(recorded.get() + if fields { 2 * BATCH } else { BATCH }),
                )
            })
        });
    }
    session::stop().unwrap();

    fastrace::set_reporter(NullReporter, fastrace::collector::Config::default());
    g.bench_function("fastrace_on", |b| {
        b.iter_custom(|iters| {
            batched(
                iters,
                || {
                    let span =
                        fastrace::Span::root("root", fastrace::collector::SpanContext::random());
                    let guard = span.set_local_parent();
                    (guard, span)
                },
                |n| {
                    for _ in 0..n {
                        let _s = fastrace::local::LocalSpan::enter_with_local_parent("span");
                    }
                },
                drop,
            )
        })
    });

    puffin::set_scopes_on(true);
    g.bench_function("puffin_on", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(BATCH);
                {
                    puffin::profile_scope!("outer");
                    let t0 = Instant::now();
                    for _ in 0..n {
                        puffin::profile_scope!("span");
                    }
                    total += t0.elapsed();
                }
                puffin::GlobalProfiler::lock().new_frame();
                left -= n;
            }
            total
        })
    });
    puffin::set_scopes_on(false);
    g.finish();
    fastrace::flush();
}

criterion_group!(benches, annotations);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    ratios::print(
        "annotation",
        &[
            ("baseline_atomic_load", None),
            ("prof_off", Some("baseline_atomic_load")),
            ("fastrace_off", Some("prof_off")),
            ("puffin_off", Some("prof_off")),
            ("two_clock_reads", None),
            ("prof_on", Some("two_clock_reads")),
            ("prof_on_one_field", Some("prof_on")),
            ("fastrace_on", Some("prof_on")),
            ("puffin_on", Some("prof_on")),
        ],
    );
}

mod ratios {
    //! Reads criterion's estimates of this run and prints them as one table.
    #![allow(clippy::print_stdout)]
    use std::path::PathBuf;

    fn mean_ns(group: &str, id: &str) -> Option<f64> {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
        let text = std::fs::read_to_string(
            target
                .join("criterion")
                .join(group)
                .join(id)
                .join("new/estimates.json"),
        )
        .ok()?;
        // The slope is what criterion reports as `time` for linear sampling.
        let key = if text.contains("\"slope\":{") {
            "\"slope\""
        } else {
            "\"mean\""
        };
        let mean = &text[text.find(key)?..];
        let at = mean.find("\"point_estimate\":")? + "\"point_estimate\":".len();
        let rest = &mean[at..];
        let end = rest.find([',', '}'])?;
        rest[..end].trim().parse().ok()
    }

    /// Prints `id: ns/iter` and, where a reference is given, `id / reference`.
    pub(super) fn print(group: &str, rows: &[(&str, Option<&str>)]) {
        println!("\n{group}: mean cost per span (this run)");
        println!("| case | ns/span | ratio |");
        println!("|---|---:|---|");
        for (id, reference) in rows {
            let Some(ns) = mean_ns(group, id) else {
                continue;
            };
            let ratio = reference
                .and_then(|r| mean_ns(group, r).map(|base| format!("{:.2}× {r}", ns / base)))
                .unwrap_or_default();
            println!("| {id} | {ns:.2} | {ratio} |");
        }
    }
}
