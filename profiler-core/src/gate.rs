//! The recording gate: the one value every annotation, span, counter and allocation
//! sample reads before doing anything.
//!
//! It is the running session's `host_tracer_level`, or 0 while nothing records (or
//! the session is paused). Front ends compare their own level with it; only session
//! control opens and closes it. It sits at the bottom of the crate, as tracing-core's
//! level filter does, so the cheap check never imports the machinery that flips it.

use std::sync::atomic::{AtomicU8, Ordering};

/// Level of prof's own annotations (`trace!`, `#[instrument]`, counters, objects):
/// recorded whenever `host_tracer_level >= 1`.
pub const USER_LEVEL: u8 = 1;
/// Level at which `tracing` spans are recorded (the default `host_tracer_level`).
pub const SPAN_LEVEL: u8 = 2;
/// Level at which `tracing` events, and flows between the polls of `tracing` tasks,
/// are recorded too.
pub const VERBOSE_LEVEL: u8 = 3;

/// The gate: the recording session's host tracer level, or 0.
///
/// Read once per annotation with `Relaxed` ordering: that load is the whole cost of
/// an annotation while no session runs. A stronger ordering, or a second load on the
/// path, would put a fence or a cache miss on every annotation of every program that
/// never profiles.
pub static HOST_LEVEL: AtomicU8 = AtomicU8::new(0);

/// Whether work of `level` ([`USER_LEVEL`], [`SPAN_LEVEL`], [`VERBOSE_LEVEL`]) is
/// recorded now.
#[inline(always)]
pub fn is_open(level: u8) -> bool {
    level <= HOST_LEVEL.load(Ordering::Relaxed)
}

/// Opens the gate at `level`: work at or below it records from now on.
pub(crate) fn open(level: u8) {
    HOST_LEVEL.store(level, Ordering::Release);
}

/// Closes the gate: nothing records until it is opened again.
pub(crate) fn close() {
    HOST_LEVEL.store(0, Ordering::Release);
}
