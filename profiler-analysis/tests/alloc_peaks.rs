//! The summary's per-step host memory peaks, read from the tracking allocator's
//! counter track (the allocator's own counts are tested in profiler-core).

use std::alloc::System;

use profiler_analysis::summary::{GroupBy, SummaryOptions};
use profiler_analysis::ProfileAnalysis;
use profiler_core::alloc::FLUSH_BYTES;
use profiler_core::{session, trace, ProfileOptions, TrackingAllocator};

#[global_allocator]
static ALLOC: TrackingAllocator<System> = TrackingAllocator::new(System);

#[test]
fn each_step_row_holds_the_peak_of_host_memory_in_that_step() {
    session::start(ProfileOptions::default(), None).expect("start");
    let base = TrackingAllocator::<System>::bytes_in_use() as f64;
    for step in 0..3i64 {
        let _t = trace!("Train", step_num = step);
        // Step 1 holds 8 MiB at its peak; the others 1 MiB.
        let held = vec![7u8; if step == 1 { 8 << 20 } else { 1 << 20 }];
        std::hint::black_box(&held);
    }
    let profile = session::stop().expect("stop");

    let summary = profile.summary(&SummaryOptions::default().group_by(GroupBy::Step));
    let peaks: Vec<f64> = summary
        .steps()
        .iter()
        .map(|s| s.peak_host_bytes.expect("peak") - base)
        .collect();
    assert_eq!(peaks.len(), 3);
    let slack = 2.0 * FLUSH_BYTES as f64;
    for (peak, want) in peaks.iter().zip([1 << 20, 8 << 20, 1 << 20]) {
        assert!((peak - want as f64).abs() < slack, "{peaks:?}");
    }
    assert!(summary.table().contains("Peak host memory"));
}
