//! Cost of one annotation, off and recording, side by side with fastrace's local span
//! and puffin's scope, in one run. Prints the ratios at the end.
//!
//! Every system records in batches of 4096 spans under an open parent, which is how
//! each is meant to be used (fastrace: a root with a local parent; puffin: an outer
//! scope, so hand-off to its global profiler is not timed); only the spans are timed.
//! prof records into one session until a million records, then restarts it untimed,
//! so buffer growth is billed the way a long session pays it.
#![allow(missing_docs, clippy::print_stdout, clippy::unwrap_used)]

use std::cell::RefCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use profiler_core::{trace, ProfileOptions};

mod support;
use support::{batched, interleaved, print_table, timed, Case, Cmp, LongSession, Row, BATCH};

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
    let mut long = LongSession::start(ProfileOptions::default());
    for (name, fields) in [("prof_on", false), ("prof_on_one_field", true)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                batched(
                    iters,
                    || long.reserve(2 * BATCH),
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
                    |()| {},
                )
            })
        });
    }
    drop(long);

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

/// The recording cases again, in turn, batch by batch: the goals' ratios per round.
fn annotations_interleaved() {
    let long = RefCell::new(LongSession::start(ProfileOptions::default()));
    let mut clock = |n| {
        timed(n, |n| {
            for _ in 0..n {
                black_box(profiler_core::clock::now());
                black_box(profiler_core::clock::now());
            }
        })
    };
    let mut prof = |n| {
        long.borrow_mut().reserve(2 * n);
        timed(n, |n| {
            for _ in 0..n {
                let _t = trace!("span");
            }
        })
    };
    let mut prof_field = |n| {
        long.borrow_mut().reserve(2 * n);
        timed(n, |n| {
            for i in 0..n {
                let _t = trace!("span", i = i);
            }
        })
    };
    let mut fastrace = |n| {
        let root = fastrace::Span::root("root", fastrace::collector::SpanContext::random());
        let parent = root.set_local_parent();
        let took = timed(n, |n| {
            for _ in 0..n {
                let _s = fastrace::local::LocalSpan::enter_with_local_parent("span");
            }
        });
        drop((parent, root));
        took
    };
    puffin::set_scopes_on(true);
    let mut puffin = |n| {
        let took = {
            puffin::profile_scope!("outer");
            timed(n, |n| {
                for _ in 0..n {
                    puffin::profile_scope!("span");
                }
            })
        };
        puffin::GlobalProfiler::lock().new_frame();
        took
    };
    let mut cases: [Case<'_>; 5] = [
        ("two_clock_reads", &mut clock),
        ("prof_on", &mut prof),
        ("prof_on_one_field", &mut prof_field),
        ("fastrace_on", &mut fastrace),
        ("puffin_on", &mut puffin),
    ];
    let rounds = interleaved(600, BATCH, &mut cases);
    puffin::set_scopes_on(false);
    fastrace::flush();
    rounds.print(
        "annotation",
        &[
            ("prof_on", "two_clock_reads", Cmp::Ratio),
            ("prof_on_one_field", "prof_on", Cmp::Difference),
            ("fastrace_on", "prof_on", Cmp::Ratio),
            ("puffin_on", "prof_on", Cmp::Ratio),
        ],
    );
}

fn main() {
    benches();
    annotations_interleaved();
    Criterion::default().configure_from_args().final_summary();
    print_table(
        "annotation",
        &[
            Row::Plain("baseline_atomic_load", None),
            Row::Plain("prof_off", Some("baseline_atomic_load")),
            Row::Plain("fastrace_off", Some("prof_off")),
            Row::Plain("puffin_off", Some("prof_off")),
            Row::Plain("two_clock_reads", None),
            Row::Plain("prof_on", Some("two_clock_reads")),
            Row::Plain("prof_on_one_field", Some("prof_on")),
            Row::Plain("fastrace_on", Some("prof_on")),
            Row::Plain("puffin_on", Some("prof_on")),
        ],
    );
}
