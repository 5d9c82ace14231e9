//! Sessions: one at a time per process, started and stopped as in `tf.profiler` and
//! `jax.profiler`.
//!
//! The gate every annotation checks is [`HOST_LEVEL`]: 0 while nothing records, the
//! session's `host_tracer_level` while one does. Start and stop are cold paths and
//! serialise on one mutex; recording never touches it.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

use crate::buffer;
use crate::clock::Anchor;
use crate::collect::collect;
use crate::error::{Error, ErrorKind, Result};
use crate::flight_recorder::FlightRecorder;
use crate::options::ProfileOptions;
use crate::profile::Profile;

/// The recording gate: the current session's host tracer level, or 0.
///
/// Every annotation reads it once with `Relaxed` ordering; that load is the whole cost
/// of an annotation while no session runs.
pub static HOST_LEVEL: AtomicU8 = AtomicU8::new(0);

/// Whether an annotation of `level` (1 user, 2 default, 3 verbose) is recorded now.
#[inline(always)]
pub fn enabled(level: u8) -> bool {
    level <= HOST_LEVEL.load(Ordering::Relaxed)
}

/// What a session does with its profile once collected: the facade writes the logdir.
/// It runs on the thread that stops the session (or on the timer thread at the end of
/// `duration_ms`).
pub type Finisher = Box<dyn FnOnce(Profile) -> Result<Profile> + Send>;

static GENERATION: AtomicU64 = AtomicU64::new(0);
static STATE: Mutex<State> = Mutex::new(State::Idle);

enum State {
    Idle,
    Running(Running),
    /// Stopped on its own after `duration_ms`, waiting for `stop` to hand it over.
    Finished(Result<Profile>),
}

struct Running {
    /// Identifies the session (to its timer thread).
    generation: u64,
    /// The buffer generation holding its records: `generation`, or a later one after
    /// [`discard_recorded`].
    records: u64,
    /// Slots of each thread's ring in a flight-recorder session; 0 otherwise.
    ring: u64,
    /// How far back a flight recorder's snapshot reaches.
    window: Option<Duration>,
    options: ProfileOptions,
    /// `None` while `delay_ms` has not elapsed.
    start: Option<Anchor>,
    /// Ticks at which the current pause began; `Some` while paused.
    paused_at: Option<u64>,
    /// Pauses that ended, as (start, end) ticks.
    pauses: Vec<(u64, u64)>,
    finisher: Option<Finisher>,
    /// Dropping it wakes and ends the session's timer thread.
    _cancel_timer: Option<mpsc::Sender<()>>,
}

fn state() -> std::sync::MutexGuard<'static, State> {
    // Every transition leaves the state valid before anything that can panic.
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running session, or a `FailedPrecondition` error ending in `what_to_do`.
fn running<'a>(state: &'a mut State, what_to_do: &str) -> Result<&'a mut Running> {
    match state {
        State::Running(running) => Ok(running),
        _ => Err(Error::new(
            ErrorKind::FailedPrecondition,
            format!("no profiling session is running: {what_to_do}"),
        )),
    }
}

/// Whether a session is running (recording, or waiting for its `delay_ms`).
pub fn is_running() -> bool {
    matches!(*state(), State::Running(_))
}

/// Starts a session.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] for invalid options, [`ErrorKind::AlreadyExists`]
/// when a session is already running.
pub fn start(options: ProfileOptions, finisher: Option<Finisher>) -> Result<()> {
    start_with(options, finisher, None)
}

/// Starts a session; with `recorder`, one whose threads write in rings (the flight
/// recorder).
pub(crate) fn start_with(
    options: ProfileOptions,
    finisher: Option<Finisher>,
    recorder: Option<FlightRecorder>,
) -> Result<()> {
    options.validate()?;
    if let Some(recorder) = &recorder {
        recorder.validate()?;
    }
    let mut state = state();
    if let State::Running(running) = &*state {
        return Err(Error::new(
            ErrorKind::AlreadyExists,
            format!(
                "a profiling session is already running (session {}); stop it before starting another",
                running.generation
            ),
        ));
    }
    let generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    let ring = recorder.as_ref().map_or(0, |r| r.events_per_thread);
    buffer::begin_session(generation, options.max_events, ring);
    let delay = Duration::from_millis(options.delay_ms);
    let duration = Duration::from_millis(options.duration_ms);
    let cancel = if delay.is_zero() && duration.is_zero() {
        None
    } else {
        Some(spawn_timer(generation, delay, duration)?)
    };
    let start = delay.is_zero().then(|| open_gate(&options, false));
    *state = State::Running(Running {
        generation,
        records: generation,
        ring,
        window: recorder.and_then(|r| r.window),
        options,
        start,
        paused_at: None,
        pauses: Vec::new(),
        finisher,
        _cancel_timer: cancel,
    });
    Ok(())
}

/// Stops the running session, collects its profile and runs its finisher.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no session runs; otherwise what the finisher
/// returned (the profile travels inside a write error).
pub fn stop() -> Result<Profile> {
    let mut state = state();
    match std::mem::replace(&mut *state, State::Idle) {
        State::Running(running) => finish(running),
        State::Finished(result) => result,
        State::Idle => Err(Error::new(
            ErrorKind::FailedPrecondition,
            "no profiling session is running: call start before stop",
        )),
    }
}

/// Pauses recording, as MXNet's `profiler.pause()`: until [`resume`], annotations,
/// spans and counters cost one atomic load and record nothing, while the session keeps
/// its buffers and its place. Annotations open at the pause still close when their
/// guards drop; the timeline shows the pause as a `Paused` event on the `Profiler`
/// line. Pausing a paused session does nothing.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no session runs.
pub fn pause() -> Result<()> {
    let mut state = state();
    let running = running(&mut state, "call start before pause")?;
    if running.paused_at.is_none() {
        HOST_LEVEL.store(0, Ordering::Release);
        running.paused_at = Some(crate::clock::now());
    }
    Ok(())
}

/// Resumes recording after [`pause`]. Resuming a session that is not paused does
/// nothing.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no session runs.
pub fn resume() -> Result<()> {
    let mut state = state();
    let running = running(&mut state, "call start before resume")?;
    if let Some(paused_at) = running.paused_at.take() {
        running.pauses.push((paused_at, crate::clock::now()));
        // Still waiting for `delay_ms`: the timer opens the gate.
        if running.start.is_some() {
            HOST_LEVEL.store(running.options.host_tracer_level as u8, Ordering::Release);
        }
    }
    Ok(())
}

/// Drops everything the running session recorded so far and restarts its clock, while
/// it keeps recording: how a step schedule discards its warm-up steps, as torch does.
/// Annotations open at this point record nothing more.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no session runs.
pub fn discard_recorded() -> Result<()> {
    let mut state = state();
    let running = running(&mut state, "nothing to discard")?;
    let records = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    buffer::begin_session(records, running.options.max_events, running.ring);
    running.records = records;
    running.pauses.clear();
    let now = Anchor::now();
    if running.paused_at.is_some() {
        running.paused_at = Some(now.ticks);
    }
    if running.start.is_some() {
        running.start = Some(now);
    }
    Ok(())
}

/// Whether the running session is paused.
pub fn is_paused() -> bool {
    matches!(&*state(), State::Running(r) if r.paused_at.is_some())
}

/// Starts the tracers and the clock; opens the gate unless the session is paused.
fn open_gate(options: &ProfileOptions, paused: bool) -> Anchor {
    crate::tracer::start_all(options);
    let anchor = Anchor::now();
    if !paused {
        HOST_LEVEL.store(options.host_tracer_level as u8, Ordering::Release);
    }
    anchor
}

fn finish(mut running: Running) -> Result<Profile> {
    HOST_LEVEL.store(0, Ordering::Release);
    let stop = Anchor::now();
    let tracers = crate::tracer::stop_all();
    let start = running.start.unwrap_or(stop);
    if let Some(paused_at) = running.paused_at.take() {
        running.pauses.push((paused_at, stop.ticks));
    }
    let mut space = collect(
        running.records,
        &start,
        &stop,
        running.options.host_tracer_level as u8,
        &running.pauses,
        since(&running, &stop),
    );
    crate::tracer::collect_all(tracers, &mut space, &start, &stop);
    let ignored: Vec<_> = running
        .options
        .advanced_configuration
        .keys()
        // Keys were validated at start; the GPU ones are those only a device tracer reads.
        .filter(|k| k.starts_with("gpu_"))
        .cloned()
        .collect();
    if !ignored.is_empty()
        && !space
            .planes
            .iter()
            .any(|p| p.name.starts_with("/device:GPU:"))
    {
        space.warnings.push(format!(
            "prof: advanced_configuration {} had no effect: no GPU tracer ran in this session",
            ignored.join(", ")
        ));
    }
    let profile = Profile::new(space);
    match running.finisher.take() {
        Some(finisher) => finisher(profile),
        None => Ok(profile),
    }
}

/// The ticks before which a flight recorder's snapshot leaves records out; 0 for all.
fn since(running: &Running, now: &Anchor) -> u64 {
    let Some(window) = running.window else {
        return 0;
    };
    let Some(start) = running.start else {
        return 0;
    };
    let elapsed = now.instant.duration_since(start.instant);
    match elapsed.checked_sub(window) {
        Some(skipped) if !elapsed.is_zero() => {
            let ticks = now.ticks.saturating_sub(start.ticks) as f64;
            let fraction = skipped.as_secs_f64() / elapsed.as_secs_f64();
            start.ticks + (ticks * fraction) as u64
        }
        _ => 0,
    }
}

/// Collects what the running flight recorder holds, without stopping it.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no flight-recorder session runs.
pub(crate) fn snapshot() -> Result<Profile> {
    let state = state();
    let State::Running(running) = &*state else {
        return Err(Error::new(
            ErrorKind::FailedPrecondition,
            "no flight recorder is running: start one before taking a snapshot",
        ));
    };
    if running.ring == 0 {
        return Err(Error::new(
            ErrorKind::FailedPrecondition,
            "the running session is not a flight recorder: stop it to get its profile",
        ));
    }
    let now = Anchor::now();
    let start = running.start.unwrap_or(now);
    let mut pauses = running.pauses.clone();
    if let Some(paused_at) = running.paused_at {
        pauses.push((paused_at, now.ticks));
    }
    let space = collect(
        running.records,
        &start,
        &now,
        running.options.host_tracer_level as u8,
        &pauses,
        since(running, &now),
    );
    Ok(Profile::new(space))
}

/// Whether the running session is a flight recorder.
pub(crate) fn is_flight_recorder() -> bool {
    matches!(&*state(), State::Running(r) if r.ring != 0)
}

fn spawn_timer(generation: u64, delay: Duration, duration: Duration) -> Result<mpsc::Sender<()>> {
    let (cancel, cancelled) = mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("prof-session-timer".into())
        .spawn(move || {
            // Any message or a dropped sender means the session ended another way.
            let wait = |d: Duration| {
                d.is_zero() || cancelled.recv_timeout(d) == Err(RecvTimeoutError::Timeout)
            };
            if !wait(delay) {
                return;
            }
            if !delay.is_zero() {
                let mut state = state();
                match &mut *state {
                    State::Running(r) if r.generation == generation => {
                        r.start = Some(open_gate(&r.options, r.paused_at.is_some()));
                    }
                    _ => return,
                }
            }
            if duration.is_zero() || !wait(duration) {
                return;
            }
            let mut state = state();
            if matches!(&*state, State::Running(r) if r.generation == generation) {
                if let State::Running(running) = std::mem::replace(&mut *state, State::Idle) {
                    *state = State::Finished(finish(running));
                }
            }
        });
    match spawned {
        Ok(_) => Ok(cancel),
        Err(e) => Err(Error::new(
            ErrorKind::Io,
            format!("cannot spawn the thread that times delay_ms/duration_ms: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_annotation_without_fields_is_one_32_byte_record() {
        start(ProfileOptions::default(), None).expect("start");
        for _ in 0..1000 {
            let _t = crate::trace!("plain");
        }
        let generation = GENERATION.load(Ordering::Relaxed);
        let me = std::thread::current().name().map(str::to_owned);
        let mine = buffer::buffers()
            .into_iter()
            .find(|b| Some(&b.name) == me.as_ref())
            .expect("this thread's buffer");
        let published = mine.published();
        let profile = stop().expect("stop");
        assert_eq!(profile.event_count(), 1000);
        assert!(mine.read(generation, |_| {}).is_some());
        assert_eq!(published, 1000, "one slot per event");
        assert_eq!(
            std::mem::size_of::<buffer::Slot>() as u64 * published,
            32_000
        );
    }
}
