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
//! The scope hook a device tracer uses to link its work to the annotation that launched
//! it ([`set_scope_hook`]) lives below the buffer, which every annotation calls it from;
//! it is re-exported here, with the hand-off that carries a thread's innermost scope to
//! the thread that launches its work ([`hand_off`], [`take_hand_off`]).

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use crate::clock::{Anchor, TickScale};
use crate::error::{report, Error};
use crate::options::ProfileOptions;
use crate::xspace::XSpace;

pub use crate::handoff::{
    accept_hand_offs, hand_off, hand_offs_accepted, hand_offs_dropped, take_hand_off, HandOff,
    HAND_OFF_CAPACITY,
};
pub use crate::scope::{
    innermost_scope, keep_scope_stack, scope_depth, set_scope_hook, ScopeHook, ScopeId,
    SCOPE_STACK_DEPTH,
};

/// A source of profile data other than the host annotations, living for one session.
pub trait Tracer: Send {
    /// Starts tracing; called just before the session's host recording starts.
    ///
    /// # Errors
    /// An [`Error`] saying what is missing or failed (a library not found is
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable)); the session goes on
    /// without this tracer, and the message, with its causes, becomes a warning in
    /// the profile.
    fn start(&mut self) -> Result<(), Error>;

    /// Stops tracing; called just after the session's host recording stops.
    ///
    /// # Errors
    /// As [`Tracer::start`]: a warning in the profile, which keeps what was collected.
    fn stop(&mut self) -> Result<(), Error>;

    /// Adds what was traced to `space`, which already holds the host plane.
    fn collect(&mut self, space: &mut XSpace, session: &SessionClock);

    /// What this tracer has seen its devices run, read while it runs, for a view of
    /// the running process (the live view's kernel time); `None` (the default) for a
    /// tracer that keeps no such count. The counts never go back within a process, in
    /// this session or a later one, so a reader takes differences between its reads.
    /// Called about once a second from a thread of the profiler's own, never from the
    /// program's threads; a tracer may have its library deliver what it holds first.
    fn device_time(&mut self) -> Option<Vec<DeviceTime>> {
        None
    }
}

/// What device tracers have seen one device run in this process, counts that only grow
/// ([`Tracer::device_time`], [`device_time`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceTime {
    /// The device's ordinal, as its runtime numbers it (CUDA's, for CUPTI).
    pub device: u32,
    /// The device's name, when the tracer knows it.
    pub name: String,
    /// The kernels' time added up, ns: kernels that overlapped (on several streams)
    /// each count whole, so this can grow faster than the wall clock.
    pub kernel_ns: u64,
    /// Kernels finished.
    pub kernels: u64,
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
///
/// When no tracer starts, the device tracers' `advanced_configuration` keys the
/// session was given had no effect: the profile says so rather than leave the user to
/// wonder why a cap did nothing.
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
            Err(e) => {
                // The log carries it at once; the profile carries it at collection.
                let why = report(&e).to_string();
                tracing::warn!(target: crate::log::TARGET, "{why}");
                warnings.push(why);
            }
        }
    }
    let device_keys: Vec<&str> = options
        .advanced_configuration
        .keys()
        .map(String::as_str)
        .filter(|k| crate::options::is_device_key(k))
        .collect();
    if active.is_empty() && !device_keys.is_empty() {
        warnings.push(format!(
            "prof: advanced_configuration {} had no effect: no device tracer ran in this session",
            device_keys.join(", ")
        ));
    }
}

/// Stops the running tracers; returns them for [`collect_all`].
pub(crate) fn stop_all() -> Vec<Box<dyn Tracer>> {
    let mut tracers = std::mem::take(&mut *lock(&ACTIVE));
    for tracer in &mut tracers {
        if let Err(e) = tracer.stop() {
            let why = report(&e).to_string();
            tracing::warn!(target: crate::log::TARGET, "{why}");
            lock(&START_WARNINGS).push(why);
        }
    }
    tracers
}

/// What the running session's device tracers have seen their devices run so far
/// ([`Tracer::device_time`]), or `None` when no running tracer keeps such a count (no
/// session, no device tracer, or one that could not start). A cold path: it takes the
/// tracers' lock, and a tracer may flush its library's buffers.
pub fn device_time() -> Option<Vec<DeviceTime>> {
    let mut active = lock(&ACTIVE);
    let mut out: Option<Vec<DeviceTime>> = None;
    for tracer in active.iter_mut() {
        if let Some(devices) = tracer.device_time() {
            out.get_or_insert_with(Vec::new).extend(devices);
        }
    }
    out
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
        ticks: Some(TickScale::between(start, stop)),
    };
    for tracer in &mut tracers {
        tracer.collect(space, &clock);
    }
}

/// A thread that has recorded in this process: the line its annotations are on, and
/// the id the operating system knows it by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostThread {
    /// Its line's id on the `/host:CPU` plane.
    pub line_id: u32,
    /// Linux's thread id (`gettid`), as `/proc/self/task` and `perf_event_open` name
    /// it; a per-process counter on other systems.
    pub os_tid: u64,
    /// Its line's name: the thread's name, or `Thread <os tid>`.
    pub name: String,
}

/// Every thread that has recorded since the session before the current one began,
/// those that exited included: what a tracer that knows threads by their OS id (a
/// sampler of native stacks) joins the host plane's lines with. A cold path: it takes
/// the registry's lock.
pub fn host_threads() -> Vec<HostThread> {
    crate::buffer::buffers()
        .iter()
        .map(|b| HostThread {
            line_id: b.line_id,
            os_tid: b.os_tid,
            name: b.name.clone(),
        })
        .collect()
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
    /// How the session's raw ticks ([`crate::clock::now`]) convert, when known.
    ticks: Option<TickScale>,
}

impl SessionClock {
    /// A clock for a session between `start` and `stop` (for tests of converters);
    /// its ticks are taken to be [`clock_ns`] readings.
    pub fn new(start: Instant, stop: Instant) -> SessionClock {
        SessionClock {
            start,
            stop,
            ticks: None,
        }
    }

    /// Converts a raw tick reading of this session ([`crate::clock::now`], two of
    /// which cost less than two [`clock_ns`] readings: a device tracer's hot path
    /// reads them) to a [`clock_ns`] reading.
    pub fn ticks_to_clock_ns(&self, ticks: u64) -> u64 {
        let Some(scale) = self.ticks else {
            return ticks;
        };
        let start = self
            .start
            .checked_duration_since(crate::clock::epoch())
            .map_or(0, |d| d.as_nanos() as u64);
        start.saturating_add(scale.to_ns(ticks))
    }

    /// Converts a [`clock_ns`] reading to nanoseconds since the session start, as host
    /// line timestamps are written; `None` for times outside the session.
    pub fn to_session_ns(&self, clock_ns: u64) -> Option<u64> {
        let epoch = crate::clock::epoch();
        let start = self.start.checked_duration_since(epoch)?.as_nanos() as u64;
        let stop = self.stop.checked_duration_since(epoch)?.as_nanos() as u64;
        (start..=stop).contains(&clock_ns).then(|| clock_ns - start)
    }

    /// The session's start, a [`clock_ns`] reading.
    pub fn start_clock_ns(&self) -> u64 {
        self.start
            .checked_duration_since(crate::clock::epoch())
            .map_or(0, |d| d.as_nanos() as u64)
    }

    /// Length of the session in nanoseconds.
    pub fn duration_ns(&self) -> u64 {
        self.stop.saturating_duration_since(self.start).as_nanos() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
