//! The memory set-up as the documentation writes it (the facade's `TrackingAllocator`
//! and `memory`), and a session's host memory end to end: the profile's memory events,
//! the summary's peaks, and `prof::memory`, against known allocations.

use prof::summary::SummaryOptions;
use prof::{ProfileExport, ProfileOptions};
// The counts are process-wide: one test at a time, or one's blocks show in the other's
// peaks.
use prof_test_support::serial;

// Exactly as the documentation gives it.
#[global_allocator]
static ALLOC: prof::TrackingAllocator<std::alloc::System> =
    prof::TrackingAllocator::new(std::alloc::System);

#[test]
fn a_session_shows_the_host_allocator_its_peaks_and_the_ops_that_held_them() {
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    prof::memory::reset_peak();
    let base = prof::memory::host()
        .expect("the tracking allocator counts")
        .in_use;
    prof::start(dir.path(), ProfileOptions::default()).expect("start");
    for step in 0..3i64 {
        let _step = prof::trace!("Train", step_num = step);
        let _forward = prof::trace!("forward");
        // Step n holds n + 2 MiB at its peak, allocated under forward/attn.
        let held = {
            let _attn = prof::trace!("attn");
            vec![1u8; (step as usize + 2) << 20]
        };
        std::hint::black_box(&held);
    }
    let profile = prof::stop().expect("stop");
    let summary = profile.summary(&SummaryOptions::default());

    // Each step's peak is its block over what the process held before (within a
    // fold's worth of other threads' tallies, 64 KiB each).
    let peaks: Vec<u64> = summary
        .steps()
        .iter()
        .map(|s| s.peak_memory["host"])
        .collect();
    assert_eq!(peaks.len(), 3);
    for (n, peak) in peaks.iter().enumerate() {
        let block = ((n + 2) << 20) as u64;
        assert!(
            (base + block..base + block + (1 << 20)).contains(peak),
            "step {n}: peak {peak}, base {base}"
        );
    }
    let host = summary
        .memory()
        .iter()
        .find(|p| p.allocator == "host")
        .expect("the host allocator's peak");
    assert_eq!(host.peak_bytes, peaks[2]);
    assert_eq!(host.step, Some(2));
    assert_eq!(host.op, "forward/attn:attn");
    let attn = summary
        .memory_by_op()
        .iter()
        .find(|r| r.allocator == "host" && r.op == "forward/attn:attn")
        .expect("attn's row");
    assert_eq!(attn.blocks, 3);
    assert_eq!(attn.allocated_bytes, 9 << 20);
    assert_eq!(attn.held_at_peak, 4 << 20);
    assert!(summary.to_string().contains("Peak memory by op"));
    // In code, the lifetime peak saw at least what the profile saw.
    assert!(prof::memory::host().expect("host").peak >= host.peak_bytes);
}

#[test]
fn the_documented_scope_measures_the_peak_inside_it() {
    let _one = serial();
    let m = prof::memory::scope();
    let before = prof::memory::host().expect("host").in_use;
    drop(vec![0u8; 16 << 20]);
    assert!(m.peak() >= before + (16 << 20));
    assert!(m.exact());
    assert_eq!(
        m.peak_of("host"),
        Some(m.peak()),
        "host is the default allocator"
    );
    assert_eq!(m.peak_of("GPU_9"), None, "no tracer saw a GPU 9");
}
