//! Sessions: one at a time per process, started and stopped as in `tf.profiler` and
//! `jax.profiler`.
//!
//! Session control is the only part of prof that opens and closes the recording gate
//! ([`crate::gate`]): open at the session's `host_tracer_level` while it records,
//! closed otherwise. Start and stop are cold paths and serialise on one mutex;
//! recording never touches it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Mutex, TryLockError};
use std::time::{Duration, Instant};

use crate::alloc::{self, HostLevel};
use crate::buffer;
use crate::clock::Anchor;
use crate::collect::{collect, HeapAtEdges};
use crate::error::{Error, ErrorKind, Result};
use crate::exit::{self, Ended};
use crate::gate;
use crate::options::ProfileOptions;
use crate::profile::Profile;
use crate::tracer;

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
    buffer_generation: u64,
    /// Slots of each thread's ring in a flight-recorder session; 0 otherwise.
    ring: u64,
    /// How far back a flight recorder's snapshot reaches.
    window: Option<Duration>,
    options: ProfileOptions,
    /// `None` while `delay_ms` has not elapsed.
    start: Option<Anchor>,
    /// The host heap when recording started (or restarted after a discard): the
    /// memory timeline's first point.
    heap_at_start: Option<HostLevel>,
    /// Ticks at which the current pause began; `Some` while paused.
    paused_at: Option<u64>,
    /// Pauses that ended, as (start, end) ticks.
    pauses: Vec<(u64, u64)>,
    finisher: Option<Finisher>,
    /// Warnings for the profile from arming the exit paths (signals left ignored).
    warnings: Vec<String>,
    /// A background session (a live view's flight recorder): any session started
    /// after it takes its place rather than failing, so watching a process never
    /// blocks a capture of it.
    yields: bool,
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
    start_with(options, finisher, 0, None, false)
}

/// Starts a session; with `ring` > 0, one whose threads write in rings of that many
/// records, read back no further than `window` (the flight recorder, which validated
/// both). A session that `yields` makes way for the next one started; one that does
/// not replaces a session that yields (whose records are dropped uncollected).
pub(crate) fn start_with(
    options: ProfileOptions,
    finisher: Option<Finisher>,
    ring: u64,
    window: Option<Duration>,
    yields: bool,
) -> Result<()> {
    options.validate()?;
    if options.writes_on_signals() && finisher.is_none() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "write_on_signals: this session writes nothing when it stops (it is kept in \
             memory, or a flight recorder's without a logdir), so a signal would have nothing \
             to write: start it with a logdir (prof::start, prof::flight_recorder::start_in)",
        ));
    }
    let mut state = state();
    if matches!(&*state, State::Running(running) if running.yields && !yields) {
        if let State::Running(background) = std::mem::replace(&mut *state, State::Idle) {
            drop_uncollected(background);
        }
    }
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
    buffer::begin_session(generation, options.max_events, ring);
    let delay = Duration::from_millis(options.delay_ms);
    let duration = Duration::from_millis(options.duration_ms);
    let cancel = if delay.is_zero() && duration.is_zero() {
        None
    } else {
        Some(spawn_timer(generation, delay, duration)?)
    };
    let start = delay.is_zero().then(|| open_gate(&options, false));
    let warnings = exit::arm(end_for_exit, &options, finisher.is_some());
    *state = State::Running(Running {
        generation,
        buffer_generation: generation,
        ring,
        window,
        options,
        start,
        heap_at_start: start.and_then(|_| alloc::host_level()),
        paused_at: None,
        pauses: Vec::new(),
        finisher,
        warnings,
        yields,
        _cancel_timer: cancel,
    });
    Ok(())
}

/// Ends a background session without collecting it: its records are dropped with its
/// buffer generation when the next session begins its own.
fn drop_uncollected(running: Running) {
    gate::close();
    drop(tracer::stop_all());
    exit::disarm(false);
    drop(running);
}

/// Stops the running session if it is a background one, dropping its records
/// uncollected; whether it was. Checked and stopped under one lock, so a session that
/// took its place meanwhile is never stopped by mistake.
pub(crate) fn stop_background() -> bool {
    let mut state = state();
    if !matches!(&*state, State::Running(r) if r.yields) {
        return false;
    }
    if let State::Running(background) = std::mem::replace(&mut *state, State::Idle) {
        drop_uncollected(background);
    }
    true
}

/// Whether the running session is a background one (see [`start_with`]).
pub(crate) fn is_background() -> bool {
    matches!(&*state(), State::Running(r) if r.yields)
}

/// Stops the running session, collects its profile and runs its finisher.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no session runs; otherwise what the finisher
/// returned (the profile travels inside a write error).
pub fn stop() -> Result<Profile> {
    let mut state = state();
    match std::mem::replace(&mut *state, State::Idle) {
        State::Running(running) => finish(running, None),
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
        gate::close();
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
            gate::open(running.options.host_tracer_level as u8);
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
    let buffer_generation = GENERATION.fetch_add(1, Ordering::Relaxed) + 1;
    buffer::begin_session(buffer_generation, running.options.max_events, running.ring);
    running.buffer_generation = buffer_generation;
    running.pauses.clear();
    let now = Anchor::now();
    if running.paused_at.is_some() {
        running.paused_at = Some(now.ticks);
    }
    if running.start.is_some() {
        running.start = Some(now);
        running.heap_at_start = alloc::host_level();
    }
    Ok(())
}

/// Whether the running session is paused.
pub fn is_paused() -> bool {
    matches!(&*state(), State::Running(r) if r.paused_at.is_some())
}

/// Starts the tracers and the clock; opens the gate unless the session is paused.
fn open_gate(options: &ProfileOptions, paused: bool) -> Anchor {
    tracer::start_all(options);
    let anchor = Anchor::now();
    if !paused {
        gate::open(options.host_tracer_level as u8);
    }
    anchor
}

/// Stops `running`, collects its profile and runs its finisher; `note`, when an exit
/// path ends it, is the warning saying why (and that `stop` was never called).
fn finish(running: Running, note: Option<&str>) -> Result<Profile> {
    /// Disarms the exit paths however the session ends, a panicking finisher
    /// included.
    struct Disarm(bool);
    impl Drop for Disarm {
        fn drop(&mut self) {
            exit::disarm(self.0);
        }
    }
    // A panic in here (a writer failing) is prof's own: the panic hook must not try to
    // end the session it is ending.
    exit::in_control(|| {
        let _disarm = Disarm(note.is_some());
        collect_and_write(running, note)
    })
}

fn collect_and_write(mut running: Running, note: Option<&str>) -> Result<Profile> {
    gate::close();
    let stop = Anchor::now();
    let heap = HeapAtEdges {
        start: running.heap_at_start,
        stop: alloc::host_level(),
    };
    let tracers = tracer::stop_all();
    let start = running.start.unwrap_or(stop);
    if let Some(paused_at) = running.paused_at.take() {
        running.pauses.push((paused_at, stop.ticks));
    }
    let mut space = collect(
        running.buffer_generation,
        &start,
        &stop,
        running.options.host_tracer_level as u8,
        &running.pauses,
        since(&running, &stop),
        heap,
    );
    tracer::collect_all(tracers, &mut space, &start, &stop);
    say_if_compiled_out(&mut space);
    space.warnings.append(&mut running.warnings);
    space.warnings.extend(note.map(str::to_owned));
    let profile = Profile::new(space);
    match running.finisher.take() {
        Some(finisher) => finisher(profile),
        None => Ok(profile),
    }
}

/// An empty host plane with no word of why would look like a program that did
/// nothing: a build whose annotations are compiled out says so in every profile.
fn say_if_compiled_out(space: &mut crate::xspace::XSpace) {
    if gate::STATIC_MAX_LEVEL == 0 {
        space.warnings.push(
            "prof: annotations are compiled out of this build (no crate turns on prof-ml's \
             `enable` feature), so nothing on the host was recorded: depend on prof-ml with \
             its default features, or features = [\"enable\"], in the application"
                .into(),
        );
    }
}

/// Ends the running session because the process ends (the exit paths of
/// [`crate::exit`] call it on a thread of theirs): stopped with `note` as a warning,
/// written by its finisher, and kept for a later [`stop`] to hand over. A session that
/// writes nowhere is left running. Waits for the session lock until `lock_by` only:
/// the thread holding it may never let go (it panicked while stopping).
fn end_for_exit(note: &str, lock_by: Instant) -> Ended {
    let mut state = loop {
        match STATE.try_lock() {
            Ok(state) => break state,
            Err(TryLockError::Poisoned(poisoned)) => break poisoned.into_inner(),
            Err(TryLockError::WouldBlock) if Instant::now() >= lock_by => return Ended::Busy,
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    match &*state {
        State::Running(running) if running.finisher.is_some() => {}
        State::Running(_) => return Ended::Nowhere,
        State::Idle | State::Finished(_) => return Ended::NoSession,
    }
    let State::Running(running) = std::mem::replace(&mut *state, State::Idle) else {
        return Ended::NoSession;
    };
    let result = finish(running, Some(note));
    let ended = match &result {
        Ok(profile) => Ended::Written(profile.files().to_vec()),
        Err(e) => Ended::Failed(e.to_string()),
    };
    *state = State::Finished(result);
    ended
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
    let since = since(running, &now);
    let heap = HeapAtEdges {
        // A window that leaves the start out has no level to show there.
        start: running.heap_at_start.filter(|_| since == 0),
        stop: alloc::host_level(),
    };
    let mut space = collect(
        running.buffer_generation,
        &start,
        &now,
        running.options.host_tracer_level as u8,
        &pauses,
        since,
        heap,
    );
    say_if_compiled_out(&mut space);
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
                        r.heap_at_start = alloc::host_level();
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
                    *state = State::Finished(finish(running, None));
                }
            }
        });
    match spawned {
        Ok(_) => Ok(cancel),
        Err(e) => Err(Error::new(
            ErrorKind::Io,
            "cannot spawn the thread that times delay_ms/duration_ms",
        )
        .with_source(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sessions are one per process; these tests run on parallel threads.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn the_gate_reads_the_session_level_and_only_session_control_moves_it() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(
            gate::STATIC_MAX_LEVEL,
            gate::VERBOSE_LEVEL,
            "built with `enable`"
        );
        start(ProfileOptions::default().host_tracer_level(3), None).expect("start");
        assert_eq!(gate::current(), 3);
        pause().expect("pause");
        assert_eq!(gate::current(), 0);
        assert!(!gate::is_open(gate::USER_LEVEL));
        resume().expect("resume");
        assert!(gate::is_open(gate::VERBOSE_LEVEL));
        stop().expect("stop");
        assert_eq!(gate::current(), 0);
    }

    #[test]
    fn an_annotation_without_fields_is_one_32_byte_record() {
        let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
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
