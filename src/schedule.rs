//! Step schedules (`torch.profiler.schedule` + `on_trace_ready`): record only some
//! windows of steps, and write each as its own TensorBoard run. [`Profiler::start`]
//! registers this build's device tracers (feature `cuda`: the GPU timeline), as
//! [`crate::start`] does.
//!
//! ```
//! use prof::schedule::{tensorboard_trace_handler, Profiler, Schedule};
//!
//! # let dir = std::env::temp_dir().join(format!("prof-doc-schedule-{}", std::process::id()));
//! # let logdir = dir.as_path();
//! // Skip step 0, warm up on step 1, record steps 2 and 3; twice.
//! let mut profiler = Profiler::new(prof::ProfileOptions::default(), Schedule::new(1, 1, 2).repeat(2))?
//!     .on_trace_ready(tensorboard_trace_handler(logdir));
//! profiler.start()?;
//! for step in 0..8 {
//!     let _t = prof::trace!("Train", step_num = step);
//!     drop(_t);
//!     profiler.step()?;
//! }
//! profiler.stop()?;
//! assert_eq!(profiler.windows_saved(), 2);
//! let runs = std::fs::read_dir(logdir.join("plugins/profile")).expect("runs").count();
//! assert_eq!(runs, 2); // one run per window
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok::<(), prof::Error>(())
//! ```

use std::path::Path;

pub use profiler_core::schedule::{ProfilerAction, Schedule, TraceReady};

use crate::{export, ExportFormat, Profile, ProfileOptions, Result};

/// Records the windows of a [`Schedule`], as `torch.profiler.profile(schedule=...)`
/// does: the core's [`profiler_core::schedule::Profiler`], whose [`start`] registers
/// this build's device tracers first, as every entry point of the facade that starts
/// sessions does.
///
/// It runs the process's one session while a window (or its warm-up) is open, so no
/// other session may run meanwhile. Dropping a started profiler stops it.
///
/// [`start`]: Profiler::start
#[derive(Debug)]
pub struct Profiler(profiler_core::schedule::Profiler);

impl Profiler {
    /// A profiler recording sessions with `options` in the windows of `schedule`.
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidArgument`] for invalid options or schedule.
    pub fn new(options: ProfileOptions, schedule: Schedule) -> Result<Profiler> {
        profiler_core::schedule::Profiler::new(options, schedule).map(Profiler)
    }

    /// Hands each finished window to `ready` ([`tensorboard_trace_handler`], say);
    /// without it, windows are dropped.
    pub fn on_trace_ready(
        self,
        ready: impl FnMut(Profile) -> Result<()> + Send + 'static,
    ) -> Profiler {
        Profiler(self.0.on_trace_ready(ready))
    }

    /// Registers this build's device tracers and begins step 0.
    ///
    /// # Errors
    /// As [`profiler_core::schedule::Profiler::start`].
    pub fn start(&mut self) -> Result<()> {
        crate::register_tracers();
        self.0.start()
    }

    /// Ends the current step and begins the next: opens, discards or hands over a
    /// window as the schedule says.
    ///
    /// # Errors
    /// As [`profiler_core::schedule::Profiler::step`].
    pub fn step(&mut self) -> Result<()> {
        self.0.step()
    }

    /// Stops: a window still open is handed over as it is, a warm-up is dropped.
    ///
    /// # Errors
    /// As [`profiler_core::schedule::Profiler::stop`].
    pub fn stop(&mut self) -> Result<()> {
        self.0.stop()
    }

    /// The current step, counting from 0.
    pub fn step_num(&self) -> u64 {
        self.0.step_num()
    }

    /// What the profiler does during the current step.
    pub fn current_action(&self) -> ProfilerAction {
        self.0.current_action()
    }

    /// Windows handed over so far.
    pub fn windows_saved(&self) -> u64 {
        self.0.windows_saved()
    }
}

/// A callback for [`Profiler::on_trace_ready`] that writes each window as a run of its
/// own under `logdir` (`plugins/profile/<run>/<host>.xplane.pb`), as torch's
/// `tensorboard_trace_handler` does; each run opens in TensorBoard/XProf.
pub fn tensorboard_trace_handler(
    logdir: impl AsRef<Path>,
) -> impl FnMut(Profile) -> Result<()> + Send + 'static {
    tensorboard_trace_handler_formats(logdir, Vec::new(), |_| {})
}

/// As [`tensorboard_trace_handler`], also writing `formats` beside each `.xplane.pb`
/// and handing each written profile to `written` (to report it, say).
pub fn tensorboard_trace_handler_formats(
    logdir: impl AsRef<Path>,
    formats: Vec<ExportFormat>,
    mut written: impl FnMut(&Profile) + Send + 'static,
) -> impl FnMut(Profile) -> Result<()> + Send + 'static {
    let logdir = logdir.as_ref().to_path_buf();
    move |profile| {
        let profile = export::logdir::write_logdir_formats(&logdir, profile, &formats)?;
        written(&profile);
        Ok(())
    }
}
