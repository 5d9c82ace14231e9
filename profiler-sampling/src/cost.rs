//! What the sampler's last stop cost, for the cost benchmark (`benches/sampling.rs`)
//! and a `debug` event: the collector's stop (the last drain, the mappings read
//! again, the triggers torn down), the symbolisation, and the rest of the profile's
//! making (the join with steps and annotations, the pprof gzipped). None of it runs
//! while the program is sampled.

use std::sync::Mutex;
use std::time::Duration;

/// One session's stop, in parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopCost {
    /// Samples the session kept.
    pub samples: u64,
    /// Distinct addresses symbolised.
    pub addresses: u64,
    /// The collector's stop: its last drain, the mappings, the triggers closed.
    pub stop: Duration,
    /// Symbolising the addresses (a part of `collect`).
    pub symbolize: Duration,
    /// Making the samples' plane: symbolising, joining, the pprof gzipped.
    pub collect: Duration,
}

static LAST: Mutex<Option<StopCost>> = Mutex::new(None);

/// Keeps `cost` as the last stop's, and says it in a `debug` event.
pub(crate) fn record(cost: StopCost) {
    tracing::debug!(
        target: profiler_core::log::TARGET,
        "prof: stack samples: {} samples, {} addresses; stop {:?}, symbolisation {:?}, \
         plane {:?}",
        cost.samples,
        cost.addresses,
        cost.stop,
        cost.symbolize,
        cost.collect
    );
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(cost);
}

/// The last stop's cost in this process, if a session sampled.
pub(crate) fn last() -> Option<StopCost> {
    *LAST.lock().unwrap_or_else(|e| e.into_inner())
}
