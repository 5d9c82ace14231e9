//! What the server bounds: each limit on what a client can make the process hold or
//! wait for, in one place that the builder, the connection loop and request
//! validation all read.

use std::time::Duration;

/// Largest response: a whole capture's XSpace.
pub(super) const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// Largest XSpace put in a response: a larger one is cut to its latest steps (see
/// `profiler_export::fit::retain_within`), with room left for the response around it.
pub(super) const MAX_RESPONSE_XSPACE_BYTES: u64 = MAX_RESPONSE_BYTES as u64 - (1 << 20);

/// What the server bounds, each a limit on what a client can make the process hold
/// or wait for; see the [server documentation](super) for why each default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections open at once (default 32); fewer where the process's file
    /// descriptors leave room for fewer (see the [server documentation](super)).
    pub max_connections: usize,
    /// A connection whose peer sends nothing this long while no call of it runs is
    /// closed (default 30 s).
    pub idle_timeout: Duration,
    /// Longest wait before a capture starts, as `opts.start_timestamp_ns` asks
    /// (default 60 s); the capture slot is held meanwhile.
    pub max_delay: Duration,
    /// Longest capture (default 10 min).
    pub max_duration: Duration,
    /// Largest `max_events` a capture may ask for (default
    /// [`profiler_core::options::DEFAULT_MAX_EVENTS`], 8 Mi records, 256 MiB).
    pub max_events: u64,
    /// Largest flight-recorder ring per thread, in records (default 1 Mi, 32 MiB).
    pub max_ring_events: u64,
    /// Early `Terminate`s remembered at once (default 64); the oldest makes way.
    pub early_terminations: usize,
    /// How long an early `Terminate` is remembered (default 10 s).
    pub early_termination_ttl: Duration,
    /// Live views at once: `prof.live.v1.Live/Watch` streams and `Monitor` calls
    /// together (default 4); one more is refused with RESOURCE_EXHAUSTED.
    pub max_watchers: usize,
    /// Records per thread in the live view's flight-recorder ring (default 16 Ki,
    /// 512 KiB per recording thread), held only while someone watches.
    pub live_ring_events: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 32,
            idle_timeout: Duration::from_secs(30),
            max_delay: Duration::from_secs(60),
            max_duration: Duration::from_secs(600),
            max_events: profiler_core::options::DEFAULT_MAX_EVENTS,
            max_ring_events: 1 << 20,
            early_terminations: 64,
            early_termination_ttl: Duration::from_secs(10),
            max_watchers: 4,
            live_ring_events: 16 << 10,
        }
    }
}
