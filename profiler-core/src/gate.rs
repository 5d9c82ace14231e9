//! The recording gate: the one value every annotation, span, counter and allocation
//! sample reads before doing anything.
//!
//! It is the running session's `host_tracer_level`, or 0 while nothing records (or
//! the session is paused). Front ends compare their own level with it; only session
//! control opens and closes it. It sits at the bottom of the crate, as tracing-core's
//! level filter does, so the cheap check never imports the machinery that flips it.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

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

/// How many times the gate has opened. A value noted while the gate was open is still
/// current exactly when the gate has not closed and opened again since: what a cache
/// filled while recording (the layer's last-created span) needs to know that nothing
/// went by it unseen.
static OPENINGS: AtomicU64 = AtomicU64::new(0);

/// Opens the gate at `level`: work at or below it records from now on.
pub(crate) fn open(level: u8) {
    // Counted before the gate opens: whoever sees it open (and calls `opening`) sees
    // this count or a later one.
    OPENINGS.fetch_add(1, Ordering::Relaxed);
    HOST_LEVEL.store(level, Ordering::Release);
}

/// Which opening of the gate is current. Call it only after [`is_open`] said yes: the
/// fence pairs with `open`'s release store, so the count is that opening's or later.
/// The fence is free on x86-64; the callers are off the paths an annotation takes.
#[cfg(feature = "tracing")]
#[inline]
pub(crate) fn opening() -> u64 {
    std::sync::atomic::fence(Ordering::Acquire);
    OPENINGS.load(Ordering::Relaxed)
}

/// Closes the gate: nothing records until it is opened again.
pub(crate) fn close() {
    HOST_LEVEL.store(0, Ordering::Release);
}
