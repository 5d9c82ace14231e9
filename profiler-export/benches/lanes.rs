//! Lane assignment on 1M slices that overlap without nesting: a staircase where each
//! slice starts before the previous one ends and ends after it, so every slice needs
//! a lane of its own (the worst case; a plain scan of the lanes was quadratic and took
//! 26.7 s for 100k). Measured as the bare walk and as a Perfetto trace to a sink.
//!
//! `cargo bench -p profiler-export --bench lanes`
#![allow(missing_docs, clippy::unwrap_used)]

use std::convert::Infallible;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use prof_test_support::spaces;
use profiler_export::perfetto;
use profiler_export::timeline::{Arg, CounterTrack, Process, Slice, Thread, Timeline, Visitor};

const EVENTS: i64 = 1_000_000;

/// Visits everything and keeps nothing, so only the walk is measured.
struct Discard;

impl<'a> Visitor<'a> for Discard {
    type Error = Infallible;
    fn process(&mut self, _: &Process<'a>) -> Result<(), Infallible> {
        Ok(())
    }
    fn thread(&mut self, _: &Thread<'a>) -> Result<(), Infallible> {
        Ok(())
    }
    fn slice(&mut self, _: &Slice<'a, '_>) -> Result<(), Infallible> {
        Ok(())
    }
    fn slice_end(&mut self, _: &Thread<'a>, _: i64) -> Result<(), Infallible> {
        Ok(())
    }
    fn counter_track(&mut self, _: &CounterTrack<'a>) -> Result<(), Infallible> {
        Ok(())
    }
    fn counter(&mut self, _: &CounterTrack<'a>, _: i64, _: Arg<'_>) -> Result<(), Infallible> {
        Ok(())
    }
}

fn lanes(c: &mut Criterion) {
    // Slice `i` covers [i µs, (i + EVENTS) µs).
    let space = spaces::staircase(EVENTS);
    let mut g = c.benchmark_group("overlapping_1M_events");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.throughput(Throughput::Elements(EVENTS as u64));
    g.bench_function("walk", |b| {
        b.iter(|| {
            let Ok(totals) = Timeline::new(&space).walk(&mut Discard);
            assert_eq!(totals.threads, EVENTS as u64);
        })
    });
    g.bench_function("perfetto", |b| {
        b.iter(|| perfetto::write_to(&space, std::io::sink()).unwrap())
    });
    g.finish();
}

criterion_group!(benches, lanes);
criterion_main!(benches);
