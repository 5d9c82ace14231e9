//! Comparing two 1M-event profiles, from their files: reading both `.xplane.pb`
//! files, sampling every step, testing every row. Goal: at most 2 s (issue 32).
//!
//! Each profile is a training loop of 1000 steps of 1000 events: the step, and 333
//! layers (50 names) each with a matmul and an add nested inside, with seeded jitter;
//! the new one has one layer name 20% slower.
//!
//! `cargo bench -p profiler-analysis --bench diff`
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use profiler_analysis::diff::{self, Verdict};
use profiler_core::schema;
use profiler_core::xspace::{PlaneBuilder, Stats, XEvent, XLine, XSpace, XStatValue};
use profiler_export::xplane;

const STEPS: i64 = 1000;
const LAYERS: i64 = 333;
/// Events a profile holds: a step root and three events a layer.
const EVENTS: i64 = STEPS * (1 + 3 * LAYERS);

/// A seeded jitter of a few percent (splitmix64).
fn jitter(state: &mut u64) -> f64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    let u = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
    0.95 + 0.1 * u
}

fn training(seed: u64, slow_layer: Option<i64>) -> XSpace {
    let mut host = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let layers: Vec<i64> = (0..50)
        .map(|i| host.event_metadata_id(&format!("layer_{i}")))
        .collect();
    let (train, matmul, add) = (
        host.event_metadata_id("Train"),
        host.event_metadata_id("matmul"),
        host.event_metadata_id("add"),
    );
    let root = host.stat(schema::IS_ROOT, XStatValue::Int64(1));
    let mut state = seed;
    let mut events = Vec::with_capacity(EVENTS as usize);
    let mut t = 0i64; // ps
    for step in 0..STEPS {
        let start = t;
        let mut steps = Stats::new();
        steps.push(host.stat(schema::STEP_NUM, XStatValue::Int64(step)));
        steps.push(root.clone());
        let at = events.len();
        events.push(XEvent::new(train, start, 0));
        t += 1_000_000;
        for i in 0..LAYERS {
            let slow = if slow_layer == Some(i % 50) { 1.2 } else { 1.0 };
            let len = |base: f64, state: &mut u64| (base * slow * jitter(state)) as i64;
            let layer_start = t;
            let mm = len(3_000_000.0, &mut state);
            let ad = len(1_000_000.0, &mut state);
            let own = len(500_000.0, &mut state);
            events.push(XEvent::new(
                layers[(i % 50) as usize],
                layer_start,
                mm + ad + own,
            ));
            events.push(XEvent::new(matmul, layer_start + own, mm));
            events.push(XEvent::new(add, layer_start + own + mm, ad));
            t = layer_start + mm + ad + own;
        }
        t += 1_000_000;
        events[at] = XEvent::new(train, start, t - start).with_stats(steps);
    }
    host.add_line(XLine {
        id: 1,
        name: "main".into(),
        events,
        ..XLine::default()
    });
    XSpace {
        planes: vec![host.build()],
        hostnames: vec!["bench".into()],
        ..XSpace::default()
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (
        dir.path().join("base.xplane.pb"),
        dir.path().join("new.xplane.pb"),
    );
    xplane::write(&base, &training(1, None)).unwrap();
    xplane::write(&new, &training(2, Some(7))).unwrap();
    check(&base, &new);
    let mut group = c.benchmark_group("diff");
    group.sample_size(10);
    group.bench_function("two 1M-event profiles, from files", |b| {
        b.iter(|| diff::diff(&base, &new).unwrap())
    });
    group.finish();
}

/// The comparison finds what the profiles were made to show, once, before timing it.
fn check(base: &Path, new: &Path) {
    let d = diff::diff(base, new).unwrap();
    assert_eq!(d.sides.base.events, EVENTS as u64);
    assert_eq!(d.step_time.dist.base.n, STEPS as usize);
    assert_eq!(d.ops[0].name, "layer_7");
    assert_eq!(d.ops[0].time.verdict, Verdict::Increase);
    assert!(d.ops[1..].iter().all(|o| !o.time.verdict.is_significant()));
}

criterion_group!(benches, bench);
criterion_main!(benches);
