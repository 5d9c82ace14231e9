//! The tracking allocator against known allocations, and its counter tracks (the
//! per-step peaks the summary reads from them are tested in profiler-export).

use std::alloc::System;

use prof_test_support::{read, serial};
use profiler_core::alloc::FLUSH_BYTES;
use profiler_core::{schema, session, trace, ProfileOptions, TrackingAllocator};

#[global_allocator]
static ALLOC: TrackingAllocator<System> = TrackingAllocator::new(System);

type Tracking = TrackingAllocator<System>;

// One test: the counts are process-wide, and other tests' allocations would blur them.
#[test]
fn counts_match_known_allocations_and_become_counter_tracks() {
    let _serial = serial();
    // Exact, on this thread: a large allocation and its free.
    let (bytes, count) = (Tracking::bytes_in_use(), Tracking::allocations_in_use());
    let big = vec![1u8; 4 << 20];
    assert_eq!(Tracking::bytes_in_use() - bytes, 4 << 20);
    assert_eq!(Tracking::allocations_in_use() - count, 1);
    drop(big);
    assert_eq!(Tracking::bytes_in_use(), bytes);
    // Many small ones.
    let boxes: Vec<Box<u64>> = (0..1000).map(Box::new).collect();
    assert_eq!(Tracking::allocations_in_use() - count, 1001);
    drop(boxes);
    assert_eq!(Tracking::allocations_in_use(), count);

    session::start(ProfileOptions::default(), None).expect("start");
    let base = Tracking::bytes_in_use() as f64;
    for step in 0..3i64 {
        let _t = trace!("Train", step_num = step);
        // Step 1 holds 8 MiB at its peak; the others 1 MiB.
        let held = vec![7u8; if step == 1 { 8 << 20 } else { 1 << 20 }];
        std::hint::black_box(&held);
    }
    let profile = session::stop().expect("stop");

    let samples = profile.counter_samples(schema::HOST_BYTES_IN_USE);
    assert!(
        samples.len() >= 6,
        "a sample per large allocation and free: {samples:?}"
    );
    let max = samples.iter().copied().fold(f64::MIN, f64::max);
    let slack = 2.0 * FLUSH_BYTES as f64;
    assert!(
        (max - base - (8 << 20) as f64).abs() < slack,
        "peak {max} over base {base}"
    );
    assert!(
        !profile.counter_samples(schema::HOST_ALLOCATIONS).is_empty(),
        "allocation counts are sampled too"
    );
}

/// One memory event of the host plane, its stats by name (int64s as `I`, strings and
/// references to them as `S`, anything else as `Other` so a type mistake shows).
#[derive(Debug, Clone, PartialEq)]
enum V {
    I(i64),
    S(String),
    Other(String),
}

struct MemoryEvent {
    name: String,
    line: String,
    stats: std::collections::BTreeMap<String, V>,
}

fn memory_events(profile: &profiler_core::Profile) -> Vec<MemoryEvent> {
    use profiler_core::xspace::XStatValue;
    let host = read::host(profile);
    let mut out = Vec::new();
    for line in &host.lines {
        for e in &line.events {
            let name = host.event_name(e.metadata_id).unwrap_or("");
            if name != schema::MEMORY_ALLOCATION && name != schema::MEMORY_DEALLOCATION {
                continue;
            }
            let stats = e
                .stats
                .iter()
                .map(|s| {
                    let key = host.stat_name(s.metadata_id).unwrap_or("?").to_owned();
                    let value = match s.value.as_ref() {
                        Some(XStatValue::Int64(v)) => V::I(*v),
                        Some(XStatValue::Str(v)) => V::S(v.clone()),
                        Some(XStatValue::Ref(id)) => {
                            V::S(host.stat_name(*id as i64).unwrap_or("?").to_owned())
                        }
                        other => V::Other(format!("{other:?}")),
                    };
                    (key, value)
                })
                .collect();
            out.push(MemoryEvent {
                name: name.to_owned(),
                line: line.name.clone(),
                stats,
            });
        }
    }
    out
}

fn int(e: &MemoryEvent, key: &str) -> i64 {
    match e.stats.get(key) {
        Some(V::I(v)) => *v,
        other => panic!("{key} should be an int64, is {other:?} in {:?}", e.stats),
    }
}

/// XProf's Memory Profile reads these as int64 (`IntValue()`): any other type reads 0.
const INT_STATS: [&str; 6] = [
    "bytes_reserved",
    "bytes_allocated",
    "peak_bytes_in_use",
    "requested_bytes",
    "allocation_bytes",
    "addr",
];

#[test]
fn large_blocks_and_folds_become_xprof_memory_events_named_by_their_op() {
    let _serial = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    let addr;
    {
        let _step = trace!("Train", step_num = 1i64);
        let _forward = trace!("forward");
        let held = {
            let _attn = trace!("attn");
            vec![3u8; 3 << 20]
        };
        addr = held.as_ptr() as i64;
        // Small ones, past a fold, under forward alone.
        let small: Vec<Vec<u8>> = (0..40).map(|_| vec![0u8; 4096]).collect();
        std::hint::black_box(&small);
        drop(held);
    }
    let profile = session::stop().expect("stop");
    let events = memory_events(&profile);
    let this = read::this_thread();

    for e in &events {
        assert_eq!(e.stats.get("allocator_name"), Some(&V::S("host".into())));
        for key in INT_STATS {
            int(e, key);
        }
        assert!(int(e, "peak_bytes_in_use") >= int(e, "bytes_allocated"));
    }
    let allocated: Vec<&MemoryEvent> = events
        .iter()
        .filter(|e| e.name == "MemoryAllocation" && e.stats.get("addr") == Some(&V::I(addr)))
        .collect();
    assert_eq!(allocated.len(), 1, "one event for the 3 MiB block");
    let block = allocated[0];
    assert_eq!(block.line, this);
    assert_eq!(int(block, "allocation_bytes"), 3 << 20);
    assert_eq!(int(block, "requested_bytes"), 3 << 20);
    assert_eq!(
        block.stats.get("tf_op"),
        Some(&V::S("forward/attn:attn".into())),
        "the step's own annotation is left out of the op"
    );
    assert_eq!(block.stats.get("region_type"), Some(&V::S("attn".into())));
    let released: Vec<&MemoryEvent> = events
        .iter()
        .filter(|e| e.name == "MemoryDeallocation" && e.stats.get("addr") == Some(&V::I(addr)))
        .collect();
    assert_eq!(released.len(), 1, "one event for its release");
    assert_eq!(int(released[0], "allocation_bytes"), 3 << 20);
    assert_eq!(
        released[0].stats.get("tf_op"),
        Some(&V::S("forward:forward".into()))
    );
    // In between, this thread allocated only the small blocks (and their vector).
    let small = 40 * 4096 + 40 * std::mem::size_of::<Vec<u8>>() as i64;
    assert_eq!(
        int(block, "bytes_allocated") - int(released[0], "bytes_allocated"),
        (3 << 20) - small,
    );
    // The 40 small blocks (160 KiB) folded at least twice, as snapshots of 0 bytes.
    let snapshots: Vec<&MemoryEvent> = events
        .iter()
        .filter(|e| e.line == this && int(e, "addr") == 0)
        .collect();
    assert!(snapshots.len() >= 2, "{} snapshots", snapshots.len());
    for s in &snapshots {
        assert_eq!(int(s, "allocation_bytes"), 0);
        assert_eq!(int(s, "requested_bytes"), 0);
    }
    assert!(
        snapshots
            .iter()
            .any(|s| s.stats.get("tf_op") == Some(&V::S("forward:forward".into()))),
        "the folds under forward carry its op"
    );
    // The counter track moves with the events: the same value at the block's event.
    let samples = profile.counter_samples(schema::HOST_BYTES_IN_USE);
    assert!(samples.contains(&(int(block, "bytes_allocated") as f64)));
}

#[test]
fn the_threshold_decides_which_blocks_are_events_of_their_own() {
    let _serial = serial();
    let before = profiler_core::memory::set_large_allocation_threshold(2 << 20);
    session::start(ProfileOptions::default(), None).expect("start");
    let below = vec![1u8; 1536 << 10];
    let above = vec![1u8; 2 << 20];
    let (below_at, above_at) = (below.as_ptr() as i64, above.as_ptr() as i64);
    drop((below, above));
    let profile = session::stop().expect("stop");
    profiler_core::memory::set_large_allocation_threshold(before);
    let at = |addr| {
        memory_events(&profile)
            .iter()
            .filter(|e| e.stats.get("addr") == Some(&V::I(addr)))
            .count()
    };
    assert_eq!(at(below_at), 0, "1.5 MiB is below a 2 MiB threshold");
    assert_eq!(at(above_at), 2, "2 MiB: its allocation and its release");
}

#[test]
fn memory_api_follows_a_known_allocation_pattern() {
    use profiler_core::memory;
    let _serial = serial();
    // No session: the API works from the allocator's counts alone.
    let start = memory::host().expect("the tracking allocator is installed");
    assert!(memory::allocators().iter().any(|(name, _)| name == "host"));
    memory::reset_peak();
    let base = memory::host().expect("host").in_use;
    assert_eq!(memory::host().expect("host").peak, base, "reset to in use");
    let _ = start;

    let outer = memory::scope();
    let a = vec![0u8; 8 << 20];
    assert_eq!(memory::host().expect("host").in_use - base, 8 << 20);
    drop(a);
    let inner = memory::scope();
    let b = vec![0u8; 2 << 20];
    let c = vec![0u8; 3 << 20];
    assert_eq!(memory::host().expect("host").in_use - base, 5 << 20);
    drop((b, c));
    assert_eq!(memory::host().expect("host").in_use, base);

    // The outer scope saw the 8 MiB; the inner one only the 5 MiB after it started.
    assert_eq!(outer.peak() - base, 8 << 20);
    assert_eq!(inner.peak() - base, 5 << 20);
    assert!(outer.exact() && inner.exact());
    assert_eq!(memory::host().expect("host").peak - base, 8 << 20);
    drop((outer, inner));

    // After a reset the lifetime peak forgets the 8 MiB.
    memory::reset_peak();
    let d = vec![0u8; 1 << 20];
    assert_eq!(memory::host().expect("host").peak - base, 1 << 20);
    drop(d);
}

/// Issue 36: a program whose memory is steady (a model loaded before the session,
/// buffers allocated and freed each step) never folds a tally, yet its session shows
/// its level at the start, at each step's end (steps of `trace!` and of `tracing`
/// spans alike) and at the end.
#[test]
fn a_steady_program_shows_its_level_at_the_edges_and_at_each_steps_end() {
    use tracing_subscriber::layer::SubscriberExt;

    let _serial = serial();
    let model = vec![1u8; 4 << 20];
    std::hint::black_box(&model);
    let level = Tracking::bytes_in_use();
    session::start(ProfileOptions::default(), None).expect("start");
    for step in 0..40i64 {
        let _step = trace!("Train", step_num = step);
        let _forward = trace!("forward");
        let scratch = vec![0u8; 16 << 10];
        std::hint::black_box(&scratch);
    }
    let subscriber = tracing_subscriber::registry().with(profiler_core::ProfilerLayer::new());
    tracing::subscriber::with_default(subscriber, || {
        // A span step whose step_num comes with the span, and one given later.
        let _given = tracing::info_span!("Train", step_num = 40i64).entered();
        drop(_given);
        let later = tracing::info_span!("Train", step_num = tracing::field::Empty);
        let _entered = later.enter();
        later.record("step_num", 41i64);
    });
    let profile = session::stop().expect("stop");
    drop(model);

    let events = memory_events(&profile);
    let this = read::this_thread();
    // The steps' ends, on this thread's line, inside their steps (the step is the
    // only annotation open: no op, region Train).
    let steps: Vec<&MemoryEvent> = events
        .iter()
        .filter(|e| e.line == this && e.stats.get("region_type") == Some(&V::S("Train".into())))
        .collect();
    assert_eq!(steps.len(), 42, "one per step: {:?}", events.len());
    for e in &steps {
        assert_eq!(e.stats.get("tf_op"), None);
    }
    // The edges, on the Profiler line, first and last.
    let edges: Vec<&MemoryEvent> = events.iter().filter(|e| e.line == "Profiler").collect();
    assert_eq!(edges.len(), 2, "the start and the end");
    // Every point at the program's level: exact for this thread, within a fold's worth
    // for another (prof's own buffer chunk, 32 KiB, counts too).
    for e in steps.iter().chain(&edges) {
        assert_eq!(e.stats.get("allocator_name"), Some(&V::S("host".into())));
        for key in INT_STATS {
            int(e, key);
        }
        let at = int(e, "bytes_allocated");
        assert!(
            (at - level).abs() < 2 * FLUSH_BYTES,
            "{} at {at}, the program's level {level}",
            e.name
        );
        assert!(int(e, "peak_bytes_in_use") >= at);
        assert_eq!(int(e, "addr"), 0, "a snapshot is no block");
    }
    // The counter track has the same points.
    let samples = profile.counter_samples(schema::HOST_BYTES_IN_USE);
    assert!(samples.len() >= 44, "{} samples", samples.len());
    let host = read::host(&profile);
    let profiler = read::line(host, "Profiler");
    let (first, last) = (
        profiler.events.first().expect("start"),
        profiler.events.last().expect("end"),
    );
    assert_eq!(
        first.offset_ps(),
        0,
        "the start's level at the session's start"
    );
    let mine = read::my_line(host);
    let end = mine
        .events
        .iter()
        .map(|e| mine.timestamp_ns * 1000 + e.offset_ps() + e.duration_ps)
        .max()
        .expect("events");
    assert!(
        profiler.timestamp_ns * 1000 + last.offset_ps() >= end,
        "the end's after all"
    );
}
