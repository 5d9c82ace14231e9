//! One run's outputs agree with each other, as a user reading them side by side
//! expects: the example's last line and the memory table's peak, the time table and
//! the memory tables' op names, the example's and `prof-diff`'s event counts, one row
//! per allocator in `prof-diff`'s memory table, and calls cut by the session's edges
//! marked and kept out of min and max.

use prof::diff::{DiffOptions, Side};
use prof::summary::SummaryOptions;
use prof::{ProfileAnalysis, ProfileOptions};
// The allocator's counts are process-wide: one test at a time.
use prof_test_support::serial;

#[global_allocator]
static ALLOC: prof::TrackingAllocator<std::alloc::System> =
    prof::TrackingAllocator::new(std::alloc::System);

/// A small training loop as `examples/train_loop.rs` shapes it: steps, nested ops,
/// a block of 1 MiB allocated and freed under `dense_1/MatMul` in each, and a
/// transient 4 MiB under `backward` that a fold sees come and go. Returns the
/// profile and the heap as `prof::memory::host()` gave it just before `stop`.
fn train(dir: &std::path::Path, steps: i64) -> (prof::Profile, prof::memory::Usage) {
    prof::memory::set_large_allocation_threshold(128 << 10);
    prof::memory::reset_peak();
    prof::start(dir, ProfileOptions::default()).expect("start");
    for step in 0..steps {
        let _step = prof::trace!("Train", step_num = step);
        {
            let _forward = prof::trace!("forward");
            let _matmul = prof::trace!("dense_1/MatMul");
            std::hint::black_box(vec![1u8; 1 << 20]);
        }
        let _backward = prof::trace!("backward");
        std::hint::black_box(vec![2u8; 4 << 20]);
    }
    let heap = prof::memory::host().expect("the tracking allocator counts");
    let profile = prof::stop().expect("stop");
    (profile, heap)
}

#[test]
fn the_allocators_peak_is_what_memory_host_said_when_the_session_stopped() {
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (profile, heap) = train(dir.path(), 3);
    // Work after stop (summing up, printing) allocates: it must not change the
    // profile's numbers, only what `memory::host()` says from now on.
    let summary = profile.summary(&SummaryOptions::default());
    let text = summary.to_string();
    let host = summary
        .memory()
        .iter()
        .find(|p| p.allocator == "host")
        .expect("the host allocator");
    assert_eq!(host.allocator_peak_bytes, heap.peak, "{text}");
    // The timeline's peak is of the recorded events: never above the allocator's own,
    // and the table says why the two may differ.
    assert!(host.peak_bytes <= host.allocator_peak_bytes, "{text}");
    assert!(host.peak_bytes >= 4 << 20, "the 4 MiB block folds: {text}");
    assert!(text.contains("Allocator's peak"), "{text}");
    assert!(text.contains("when the session stopped"), "{text}");
}

#[test]
fn an_op_has_one_name_in_the_time_and_memory_tables_and_in_prof_diff() {
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (profile, _) = train(dir.path(), 3);
    let summary = profile.summary(&SummaryOptions::default());
    let timed: Vec<&str> = summary.rows().iter().map(|r| r.name.as_str()).collect();
    let by_op: Vec<&str> = summary
        .memory_by_op()
        .iter()
        .map(|r| r.op.as_str())
        .collect();
    for op in ["dense_1/MatMul", "backward"] {
        assert!(timed.contains(&op), "time table: {timed:?}");
        assert!(by_op.contains(&op), "memory table: {by_op:?}");
    }
    // Every op the memory tables name is a row of the time table (or none, `-`).
    for op in &by_op {
        assert!(*op == "-" || timed.contains(op), "{op} is not in {timed:?}");
    }
    let diff = prof::diff::diff_with(
        Side::from(&profile),
        Side::from(&profile),
        &DiffOptions::default(),
    )
    .expect("diff");
    let diffed: Vec<&str> = diff.memory.iter().filter_map(|m| m.op.as_deref()).collect();
    assert!(diffed.contains(&"dense_1/MatMul"), "{diffed:?}");
    for op in &diffed {
        assert!(timed.contains(op), "prof-diff's {op} is not in {timed:?}");
    }
}

#[test]
fn the_event_count_prof_diff_reports_is_the_profiles() {
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (profile, _) = train(dir.path(), 4);
    // 4 steps of Train, forward, dense_1/MatMul and backward.
    assert_eq!(profile.event_count(), 16);
    let memory = profile.memory_event_count();
    assert!(memory >= 8, "a block and its release a step: {memory}");
    // prof-diff reads the file the session wrote.
    let file = profile.files()[0].clone();
    let diff = prof::diff::diff_with(
        Side::from(file.clone()),
        Side::from(file),
        &DiffOptions::default(),
    )
    .expect("diff");
    let side = &diff.sides.base;
    assert_eq!(side.events, profile.event_count() as u64);
    assert_eq!(side.memory_events, memory as u64);
    assert_eq!(side.device_events, 0);
    let text = diff.to_string();
    assert!(
        text.contains(&format!("16 events (and {memory} memory events)")),
        "{text}"
    );
}

#[test]
fn prof_diff_lists_each_allocator_once() {
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (profile, _) = train(dir.path(), 3);
    // The session wrote the host_bytes_in_use counter beside the host's memory events.
    assert!(!profile.counter_samples("host_bytes_in_use").is_empty());
    let diff = prof::diff::diff_with(
        Side::from(&profile),
        Side::from(&profile),
        &DiffOptions::default(),
    )
    .expect("diff");
    let wholes: Vec<&str> = diff
        .memory
        .iter()
        .filter(|m| m.op.is_none())
        .map(|m| m.allocator.as_str())
        .collect();
    assert_eq!(wholes, ["host"], "{}", diff);
}

#[test]
fn a_call_cut_by_the_sessions_stop_is_marked_and_kept_out_of_min_and_max() {
    let _one = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    prof::start(dir.path(), ProfileOptions::default()).expect("start");
    for _ in 0..3 {
        let _load = prof::trace!("load_batch");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    // Still loading when the session stops: its recorded part is a moment long.
    let open = prof::trace!("load_batch");
    let profile = prof::stop().expect("stop");
    drop(open);

    let summary = profile.summary(&SummaryOptions::default());
    let row = summary.row("load_batch").expect("load_batch");
    assert_eq!((row.count, row.cut), (4, 1), "{summary}");
    assert!(
        row.min_ns >= 5_000_000,
        "the cut call is no minimum: {row:?}"
    );
    assert!(row.mean_ns() >= 5_000_000.0, "{row:?}");
    assert!(row.total_ns >= 15_000_000 + row.cut_ns, "{row:?}");
    let text = summary.to_string();
    assert!(text.contains("4 (1 cut)"), "{text}");
    assert!(
        text.contains("cut: calls the session's start or stop cut"),
        "{text}"
    );
    let json = summary.to_json();
    assert!(json.contains(r#""count":4,"cut":1"#), "{json}");

    // The file says which call was cut, for any reader.
    let space = prof::export::xplane::read(&profile.files()[0]).expect("read");
    let host = space.plane(prof::schema::HOST_PLANE).expect("host plane");
    let cut = host.stat_id(prof::schema::CUT_BY_SESSION);
    let marked: Vec<_> = host
        .lines
        .iter()
        .flat_map(|l| &l.events)
        .filter_map(|e| e.stat(cut).and_then(|v| host.text_of(v)))
        .collect();
    assert_eq!(marked, [prof::schema::CUT_AT_STOP]);
}
