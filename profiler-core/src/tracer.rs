//! Tracers beyond the host: a plug-in interface, so that device tracers (CUPTI for
//! NVIDIA GPUs, in the `profiler-cuda` crate) join sessions without this crate knowing
//! anything of them.
//!
//! The shape is TSL's `ProfilerInterface`: a tracer is made for a session from its
//! options, started when the session starts recording, stopped when it stops, and
//! then asked to add what it saw to the session's [`XSpace`] (its own planes, events
//! on host lines, warnings). Factories are registered once per process with
//! [`register`], usually by the `prof` facade.
//!
//! # Scope hook
//!
//! A device tracer may want to know which host annotation was open when work was
//! launched (CUPTI calls this external correlation). [`set_scope_hook`] installs an
//! enter/exit pair that every recorded annotation calls with its [`ScopeId`]. The cost
//! while no hook is installed is one relaxed load, and only on the already-taken
//! recording branch: annotations that are not recorded never reach it.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::buffer::{self, EventRef};
use crate::clock::Anchor;
use crate::options::ProfileOptions;
use crate::xspace::XSpace;

/// A source of profile data other than the host annotations, living for one session.
pub trait Tracer: Send {
    /// Starts tracing; called just before the session's host recording starts.
    ///
    /// # Errors
    /// A message saying what is missing or failed; the session goes on without this
    /// tracer and the message becomes a warning in the profile.
    fn start(&mut self) -> Result<(), String>;

    /// Stops tracing; called just after the session's host recording stops.
    ///
    /// # Errors
    /// As [`Tracer::start`].
    fn stop(&mut self) -> Result<(), String>;

    /// Adds what was traced to `space`, which already holds the host plane.
    fn collect(&mut self, space: &mut XSpace, session: &SessionClock);
}

/// Makes a tracer for a session, or `None` when the options ask for nothing this
/// tracer does (e.g. `device_tracer_level == 0`).
pub type TracerFactory = fn(&ProfileOptions) -> Option<Box<dyn Tracer>>;

static FACTORIES: Mutex<Vec<TracerFactory>> = Mutex::new(Vec::new());
/// Tracers of the session recording now; sessions are one at a time.
static ACTIVE: Mutex<Vec<Box<dyn Tracer>>> = Mutex::new(Vec::new());
/// Start warnings of the session recording now, reported at collection.
static START_WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    // Only cold paths take these; a panicking tracer must not disable later sessions.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers a tracer factory for every later session in this process. Registering
/// the same factory twice has no further effect.
pub fn register(factory: TracerFactory) {
    let mut factories = lock(&FACTORIES);
    if !factories.iter().any(|f| std::ptr::fn_addr_eq(*f, factory)) {
        factories.push(factory);
    }
}

/// Makes and starts the tracers of a session whose recording begins now.
pub(crate) fn start_all(options: &ProfileOptions) {
    // The tracer clock's origin must precede the session's start anchor.
    clock_ns();
    let factories = lock(&FACTORIES).clone();
    let mut active = lock(&ACTIVE);
    let mut warnings = lock(&START_WARNINGS);
    active.clear();
    warnings.clear();
    for factory in factories {
        let Some(mut tracer) = factory(options) else {
            continue;
        };
        match tracer.start() {
            Ok(()) => active.push(tracer),
            Err(why) => {
                // The log carries it at once; the profile carries it at collection.
                eprintln!("prof: warning: {why}");
                warnings.push(why);
            }
        }
    }
}

/// Stops the running tracers; returns them for [`collect_all`].
pub(crate) fn stop_all() -> Vec<Box<dyn Tracer>> {
    let mut tracers = std::mem::take(&mut *lock(&ACTIVE));
    for tracer in &mut tracers {
        if let Err(why) = tracer.stop() {
            eprintln!("prof: warning: {why}");
            lock(&START_WARNINGS).push(why);
        }
    }
    tracers
}

/// Has the stopped tracers add their data and warnings to `space`.
pub(crate) fn collect_all(
    mut tracers: Vec<Box<dyn Tracer>>,
    space: &mut XSpace,
    start: &Anchor,
    stop: &Anchor,
) {
    space
        .warnings
        .extend(std::mem::take(&mut *lock(&START_WARNINGS)));
    let clock = SessionClock {
        start: start.instant,
        stop: stop.instant,
    };
    for tracer in &mut tracers {
        tracer.collect(space, &clock);
    }
}

/// Nanoseconds on the clock tracers timestamp with, from a process-wide origin.
///
/// Host events are converted to nanoseconds since the session start through the same
/// monotonic clock, so a device tracer that stamps its records with this function
/// (CUPTI's timestamp callback does) lands on the host timeline with no further
/// alignment: [`SessionClock::to_session_ns`] converts.
pub fn clock_ns() -> u64 {
    crate::clock::monotonic_ns()
}

/// The session's start and stop on the tracer clock.
#[derive(Clone, Copy, Debug)]
pub struct SessionClock {
    start: Instant,
    stop: Instant,
}

impl SessionClock {
    /// A clock for a session between `start` and `stop` (for tests of converters).
    pub fn new(start: Instant, stop: Instant) -> SessionClock {
        SessionClock { start, stop }
    }

    /// Converts a [`clock_ns`] reading to nanoseconds since the session start, as host
    /// line timestamps are written; `None` for times outside the session.
    pub fn to_session_ns(&self, clock_ns: u64) -> Option<u64> {
        let epoch = crate::clock::epoch();
        let start = self.start.checked_duration_since(epoch)?.as_nanos() as u64;
        let stop = self.stop.checked_duration_since(epoch)?.as_nanos() as u64;
        (start..=stop).contains(&clock_ns).then(|| clock_ns - start)
    }

    /// Length of the session in nanoseconds.
    pub fn duration_ns(&self) -> u64 {
        self.stop.saturating_duration_since(self.start).as_nanos() as u64
    }
}

/// The recorded annotation a scope hook is told about.
///
/// `line` is the id of the thread's line on the `/host:CPU` plane and `seq` the
/// record's position in that thread's buffer for this session: together they are
/// unique per recorded annotation, and `line` says on which host line to look for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScopeId {
    /// Host line id of the thread that opened the annotation.
    pub line: u32,
    /// Sequence number of the annotation's record in the thread's buffer.
    pub seq: u64,
}

impl ScopeId {
    const SEQ_BITS: u32 = 32;

    /// Packs the id into 64 bits (line in the high half, the low 32 bits of `seq` in the
    /// low half), as CUPTI's external correlation ids are.
    pub fn to_u64(self) -> u64 {
        u64::from(self.line) << Self::SEQ_BITS | (self.seq & u64::from(u32::MAX))
    }

    /// The inverse of [`ScopeId::to_u64`] (`seq` keeps its low 32 bits).
    pub fn from_u64(id: u64) -> ScopeId {
        ScopeId {
            line: (id >> Self::SEQ_BITS) as u32,
            seq: id & u64::from(u32::MAX),
        }
    }
}

/// Called when a recorded annotation opens and closes on the current thread.
///
/// `exit` is called for every `enter`, on the same thread, in nesting order, even when
/// the session stopped meanwhile (so a hook keeping a per-thread stack stays balanced).
#[derive(Debug)]
pub struct ScopeHook {
    /// The annotation opened.
    pub enter: fn(ScopeId),
    /// The annotation closed.
    pub exit: fn(ScopeId),
}

static HOOK: AtomicPtr<ScopeHook> = AtomicPtr::new(std::ptr::null_mut());

/// Installs `hook` (or removes it with `None`) for every thread.
pub fn set_scope_hook(hook: Option<&'static ScopeHook>) {
    let ptr = hook.map_or(std::ptr::null_mut(), |h| std::ptr::from_ref(h).cast_mut());
    HOOK.store(ptr, Ordering::Release);
}

#[inline(always)]
fn hook() -> Option<&'static ScopeHook> {
    let ptr = HOOK.load(Ordering::Relaxed);
    if ptr.is_null() {
        return None;
    }
    // Acquire pairs with the store in `set_scope_hook`; only reached with a hook on.
    std::sync::atomic::fence(Ordering::Acquire);
    #[allow(unsafe_code)]
    // SAFETY: the pointer was made from a `&'static ScopeHook` in `set_scope_hook`.
    Some(unsafe { &*ptr })
}

/// Tells the hook, if any, that the annotation recorded as `event` opened. Returns
/// whether it was told, so that the annotation reports its close exactly when it
/// reported its open.
///
/// Only the null check is inlined into every recorded annotation; telling the hook
/// is out of line, so the annotation's inlined code stays small enough that what
/// follows it (`set_metadata`) is inlined too.
#[inline(always)]
pub(crate) fn scope_enter(event: &EventRef) -> bool {
    !HOOK.load(Ordering::Relaxed).is_null() && tell_enter(event)
}

#[cold]
#[inline(never)]
fn tell_enter(event: &EventRef) -> bool {
    match hook() {
        Some(h) => {
            (h.enter)(buffer::scope_id(event));
            true
        }
        None => false,
    }
}

/// Tells the hook installed now, if any, that the annotation recorded as `event`
/// closed.
#[inline]
pub(crate) fn scope_exit(event: &EventRef) {
    if let Some(h) = hook() {
        (h.exit)(buffer::scope_id(event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_ids_round_trip_through_64_bits() {
        let id = ScopeId { line: 7, seq: 42 };
        assert_eq!(ScopeId::from_u64(id.to_u64()), id);
        assert_eq!(id.to_u64(), 7 << 32 | 42);
    }

    #[test]
    fn session_clock_converts_tracer_time_to_session_time() {
        clock_ns();
        let start = Instant::now();
        let before = clock_ns();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let mid = clock_ns();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let clock = SessionClock::new(start, Instant::now());
        let at = clock.to_session_ns(mid).expect("inside the session");
        assert!((4_000_000..20_000_000).contains(&at), "{at}");
        assert!(clock
            .to_session_ns(before.saturating_sub(1_000_000))
            .is_none());
        assert!(clock.to_session_ns(u64::MAX).is_none());
    }
}
