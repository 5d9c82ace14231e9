//! Training steps marked with one line: [`step`] opens the next `Train` step.

use std::sync::atomic::{AtomicI64, Ordering};

use profiler_core::Trace;

static NEXT: AtomicI64 = AtomicI64::new(0);

/// Opens a training step, `Train` with `step_num` 0, 1, 2, ... (one counter per
/// process), until the returned guard drops: the one line a burn-train `TrainStep::step`
/// (or any training loop) needs for XProf to count its steps.
///
/// ```
/// let _step = profiler_burn::step();
/// ```
pub fn step() -> Trace {
    profiler_core::trace!("Train", step_num = NEXT.fetch_add(1, Ordering::Relaxed))
}

/// Numbers the next [`step`] `n`, as when a run resumes from a checkpoint.
pub fn set_next_step(n: i64) {
    NEXT.store(n, Ordering::Relaxed);
}
