//! `Profiler`: a session per window of a [`Schedule`], driven by `step()`, as
//! `torch.profiler.profile(schedule=..., on_trace_ready=...)` is.

use super::plan::{ProfilerAction, Schedule};
use crate::error::{Error, ErrorKind, Result};
use crate::options::ProfileOptions;
use crate::profile::Profile;
use crate::session;

/// What receives each finished window (torch's `on_trace_ready`).
pub type TraceReady = Box<dyn FnMut(Profile) -> Result<()> + Send>;

/// Records the windows of a [`Schedule`]: call [`start`](Profiler::start) before the
/// first step and [`step`](Profiler::step) at the end of each one.
///
/// ```
/// use profiler_core::schedule::{Profiler, Schedule};
/// use profiler_core::{trace, ProfileOptions};
/// use std::sync::{Arc, Mutex};
///
/// let windows = Arc::new(Mutex::new(Vec::new()));
/// let sink = Arc::clone(&windows);
/// let mut profiler = Profiler::new(ProfileOptions::default(), Schedule::new(1, 1, 2).repeat(2))?
///     .on_trace_ready(move |profile| {
///         sink.lock().unwrap().push(profile.steps());
///         Ok(())
///     });
/// profiler.start()?;
/// for step in 0..10 {
///     let _t = trace!("Train", step_num = step);
///     drop(_t);
///     profiler.step()?;
/// }
/// profiler.stop()?;
/// assert_eq!(*windows.lock().unwrap(), [vec![2, 3], vec![6, 7]]);
/// # Ok::<(), profiler_core::Error>(())
/// ```
///
/// It runs the process's one session while a window (or its warm-up) is open, so no
/// other session may run meanwhile. Dropping a started profiler stops it.
pub struct Profiler {
    options: ProfileOptions,
    schedule: Schedule,
    on_trace_ready: Option<TraceReady>,
    step: u64,
    action: ProfilerAction,
    started: bool,
    saved: u64,
}

impl std::fmt::Debug for Profiler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiler")
            .field("schedule", &self.schedule)
            .field("step", &self.step)
            .field("action", &self.action)
            .field("saved", &self.saved)
            .finish_non_exhaustive()
    }
}

impl Profiler {
    /// A profiler recording sessions with `options` in the windows of `schedule`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for invalid options or schedule.
    pub fn new(options: ProfileOptions, schedule: Schedule) -> Result<Profiler> {
        options.validate()?;
        schedule.validate()?;
        Ok(Profiler {
            options,
            schedule,
            on_trace_ready: None,
            step: 0,
            action: ProfilerAction::None,
            started: false,
            saved: 0,
        })
    }

    /// Hands each finished window to `ready`; without it, windows are dropped.
    pub fn on_trace_ready(
        mut self,
        ready: impl FnMut(Profile) -> Result<()> + Send + 'static,
    ) -> Profiler {
        self.on_trace_ready = Some(Box::new(ready));
        self
    }

    /// Begins step 0.
    ///
    /// # Errors
    /// [`ErrorKind::FailedPrecondition`] when already started;
    /// [`ErrorKind::AlreadyExists`] when step 0 traces and another session runs.
    pub fn start(&mut self) -> Result<()> {
        if self.started {
            return Err(Error::new(
                ErrorKind::FailedPrecondition,
                "the scheduled profiler is already started",
            ));
        }
        self.step = 0;
        self.action = self.schedule.action(0);
        if self.action.is_tracing() {
            self.open()?;
        }
        self.started = true;
        Ok(())
    }

    /// Ends the current step and begins the next: opens, discards or hands over a
    /// window as the schedule says.
    ///
    /// # Errors
    /// [`ErrorKind::FailedPrecondition`] before [`start`](Profiler::start); what the
    /// callback returned for a window ending here (the next window still opens).
    pub fn step(&mut self) -> Result<()> {
        if !self.started {
            return Err(Error::new(
                ErrorKind::FailedPrecondition,
                "call start before step on the scheduled profiler",
            ));
        }
        let previous = self.action;
        self.step += 1;
        self.action = self.schedule.action(self.step);
        use ProfilerAction::{Record, RecordAndSave, Warmup};
        match (previous, self.action) {
            (ProfilerAction::None, ProfilerAction::None)
            | (Warmup, Warmup)
            | (Record, Record | RecordAndSave) => Ok(()),
            (ProfilerAction::None, _) => self.open(),
            (Warmup, Record | RecordAndSave) => session::discard_recorded(),
            (Warmup, ProfilerAction::None) => session::stop().map(drop),
            (Record | RecordAndSave, _) => {
                let saved = self.save();
                if self.action.is_tracing() {
                    self.open()?;
                }
                saved
            }
        }
    }

    /// Stops: a window still open is handed over as it is, a warm-up is dropped.
    ///
    /// # Errors
    /// [`ErrorKind::FailedPrecondition`] when not started; what the callback returned.
    pub fn stop(&mut self) -> Result<()> {
        if !self.started {
            return Err(Error::new(
                ErrorKind::FailedPrecondition,
                "the scheduled profiler is not started",
            ));
        }
        self.started = false;
        let action = std::mem::replace(&mut self.action, ProfilerAction::None);
        match action {
            ProfilerAction::None => Ok(()),
            ProfilerAction::Warmup => session::stop().map(drop),
            ProfilerAction::Record | ProfilerAction::RecordAndSave => self.save(),
        }
    }

    /// The current step, counting from 0.
    pub fn step_num(&self) -> u64 {
        self.step
    }

    /// What the profiler does during the current step.
    pub fn current_action(&self) -> ProfilerAction {
        self.action
    }

    /// Windows handed over so far.
    pub fn windows_saved(&self) -> u64 {
        self.saved
    }

    /// Starts the session of a warm-up or window. When it cannot start (another
    /// session runs), the step records nothing: the profiler must not go on to
    /// discard, stop or hand over a session that is not its own. The next step
    /// tries again.
    fn open(&mut self) -> Result<()> {
        let opened = session::start(self.options.clone(), None);
        if opened.is_err() {
            self.action = ProfilerAction::None;
        }
        opened
    }

    fn save(&mut self) -> Result<()> {
        let profile = session::stop()?;
        self.saved += 1;
        match &mut self.on_trace_ready {
            Some(ready) => ready(profile),
            None => Ok(()),
        }
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        if self.started {
            if let Err(e) = self.stop() {
                // Drop cannot return the error; losing it silently would lose a window.
                tracing::error!(
                    target: crate::log::TARGET,
                    "the scheduled profiler could not save its last window: {}",
                    crate::error::report(&e)
                );
            }
        }
    }
}
