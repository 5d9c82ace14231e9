//! The tracking allocator against known allocations, and its counter tracks (the
//! per-step peaks the summary reads from them are tested in profiler-export).

mod support;

use std::alloc::System;

use profiler_core::alloc::FLUSH_BYTES;
use profiler_core::{schema, session, trace, ProfileOptions, TrackingAllocator};

#[global_allocator]
static ALLOC: TrackingAllocator<System> = TrackingAllocator::new(System);

type Tracking = TrackingAllocator<System>;

// One test: the counts are process-wide, and other tests' allocations would blur them.
#[test]
fn counts_match_known_allocations_and_become_counter_tracks() {
    let _serial = support::serial();
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
