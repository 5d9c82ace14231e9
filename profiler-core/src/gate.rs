//! The recording gate: the one value every annotation, span, counter and allocation
//! sample reads before doing anything.
//!
//! It is the running session's `host_tracer_level`, or 0 while nothing records (or
//! the session is paused). Front ends compare their own level with it
//! ([`is_open`]); anyone may read it ([`current`]); only session control opens and
//! closes it, so no other crate can start or stop recording behind a session's back.
//! It sits at the bottom of the crate, as tracing-core's level filter does
//! (`LevelFilter::current()` reads a private `MAX_LEVEL`), so the cheap check never
//! imports the machinery that flips it.
//!
//! # Compiled out
//!
//! Without this crate's `enable` feature (the `enable` feature of `prof-ml`, on by
//! default), [`STATIC_MAX_LEVEL`] is 0: [`is_open`] is `false` for every level at
//! compile time, so every annotation, span, counter and allocation sample is dead code
//! the optimiser removes, field expressions included. Sessions still start and stop,
//! and record nothing on the host. As with fastrace's `enable`: a library depends on
//! prof with `default-features = false` for its annotations, and the application
//! decides, by its own dependency, whether they exist at all.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// Level of prof's own annotations (`trace!`, `#[instrument]`, counters, objects):
/// recorded whenever `host_tracer_level >= 1`.
pub const USER_LEVEL: u8 = 1;
/// Level at which `tracing` spans are recorded (the default `host_tracer_level`).
pub const SPAN_LEVEL: u8 = 2;
/// Level at which `tracing` events, and flows between the polls of `tracing` tasks,
/// are recorded too.
pub const VERBOSE_LEVEL: u8 = 3;

/// The highest level this build can record: [`VERBOSE_LEVEL`] with the `enable`
/// feature, 0 without it (annotations compiled out), as tracing's `STATIC_MAX_LEVEL`.
pub const STATIC_MAX_LEVEL: u8 = if cfg!(feature = "enable") {
    VERBOSE_LEVEL
} else {
    0
};

/// The gate: the recording session's host tracer level, or 0. Private, so only
/// [`open`] and [`close`] (called by session control) store into it.
///
/// Read once per annotation with `Relaxed` ordering: that load is the whole cost of
/// an annotation while no session runs. A stronger ordering, or a second load on the
/// path, would put a fence or a cache miss on every annotation of every program that
/// never profiles.
static HOST_LEVEL: AtomicU8 = AtomicU8::new(0);

/// Whether work of `level` ([`USER_LEVEL`], [`SPAN_LEVEL`], [`VERBOSE_LEVEL`]) is
/// recorded now.
///
/// The levels callers pass are constants, so once inlined the first comparison is
/// decided at compile time: with `enable` it is true and the check is the one load;
/// without, it is false and the load, and everything the caller guards, goes.
#[inline(always)]
pub fn is_open(level: u8) -> bool {
    level <= STATIC_MAX_LEVEL && level <= HOST_LEVEL.load(Ordering::Relaxed)
}

/// The level the gate is open at now: the recording session's `host_tracer_level`,
/// or 0 while nothing records, the session is paused, or annotations are compiled
/// out.
#[inline]
pub fn current() -> u8 {
    HOST_LEVEL.load(Ordering::Relaxed)
}

/// How many times the gate has opened. A value noted while the gate was open is still
/// current exactly when the gate has not closed and opened again since: what a cache
/// filled while recording (the layer's last-created span) needs to know that nothing
/// went by it unseen.
static OPENINGS: AtomicU64 = AtomicU64::new(0);

/// Opens the gate at `level` (no higher than [`STATIC_MAX_LEVEL`]): work at or below
/// it records from now on.
pub(crate) fn open(level: u8) {
    // Counted before the gate opens: whoever sees it open (and calls `opening`) sees
    // this count or a later one.
    OPENINGS.fetch_add(1, Ordering::Relaxed);
    HOST_LEVEL.store(level.min(STATIC_MAX_LEVEL), Ordering::Release);
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
