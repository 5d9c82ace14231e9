//! The memory set-up as the documentation writes it (the facade's `TrackingAllocator`
//! and `memory`), and a session's host memory end to end: the profile's memory events,
//! the summary's peaks, and `prof::memory`, against known allocations.

use prof::summary::SummaryOptions;
use prof::{ProfileAnalysis, ProfileOptions};
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
    // Named as the time table names the annotation.
    assert_eq!(host.op, "attn");
    let attn = summary
        .memory_by_op()
        .iter()
        .find(|r| r.allocator == "host" && r.op == "attn")
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

/// Issue 36: a program whose memory is steady, set up as the documentation shows: a
/// model of 4 MiB loaded before the session, and 40 steps that each allocate 16 KiB
/// and free it. No thread's tally ever folds, yet the profile holds the host's level
/// at the session's start, at each step's end and at its end, all at the program's
/// level. CI runs this with `PROF_STEADY_LOGDIR` set and has XProf's `memory_profile`
/// read the logdir, against the level this writes beside it (`expected_levels.json`).
#[test]
fn a_steady_program_has_a_memory_timeline_at_its_level() {
    let _one = serial();
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = std::env::var_os("PROF_STEADY_LOGDIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_owned());
    let model = vec![1u8; 4 << 20];
    std::hint::black_box(&model);
    let level = prof::memory::host()
        .expect("the tracking allocator counts")
        .in_use;
    prof::start(&dir, ProfileOptions::default()).expect("start");
    for step in 0..40u64 {
        let _step = prof::trace!("Train", step_num = step);
        let scratch = vec![0u8; 16 << 10];
        std::hint::black_box(&scratch);
    }
    let profile = prof::stop().expect("stop");

    let host = profile.xspace().plane("/host:CPU").expect("the host plane");
    let levels: Vec<i64> = host
        .lines
        .iter()
        .flat_map(|line| &line.events)
        .filter(|e| {
            matches!(
                host.event_name(e.metadata_id),
                Some("MemoryAllocation" | "MemoryDeallocation")
            )
        })
        .filter_map(|e| host.find_stat(&e.stats, "bytes_allocated")?.as_i64())
        .collect();
    assert_eq!(levels.len(), 42, "the start, 40 step ends and the end");
    // Within a fold's worth for each thread that allocates here (this one, whose
    // count is exact but includes prof's own 32 KiB buffer chunk, and the harness's).
    let slack: u64 = 2 * 64 * 1024;
    for at in &levels {
        assert!(at.abs_diff(level as i64) < slack, "{at} against {level}");
    }
    let summary = profile.summary(&SummaryOptions::default());
    let peak = summary
        .memory()
        .iter()
        .find(|p| p.allocator == "host")
        .expect("the summary lists the host");
    assert!(peak.peak_bytes.abs_diff(level) < slack);
    let expected = format!(r#"{{"host": {{"bytes": {level}, "slack": {slack}}}}}"#);
    std::fs::write(dir.join("expected_levels.json"), expected).expect("write the levels");
    drop(model);
}
