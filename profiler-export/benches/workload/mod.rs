//! The recorded workload the export benches share: a training loop's shape.
use profiler_core::trace;

/// Records `events` events on this thread into the running session: steps of 1000
/// nested annotations (`Train` with its `step_num`, then 999 ops), a field on every
/// tenth.
pub(crate) fn training_loop(events: u64) {
    for step in 0..events / 1000 {
        let _s = trace!("Train", step_num = step);
        for i in 0..999u64 {
            if i % 10 == 0 {
                let _t = trace!("layer", index = i);
            } else {
                let _t = trace!("op");
            }
        }
    }
}
