//! Step schedules (`torch.profiler.schedule` + `on_trace_ready`): record only some
//! windows of steps, and write each as its own TensorBoard run. With feature `cuda`,
//! call `prof::cuda::register()` before [`Profiler::start`] so the windows hold the GPU
//! timeline ([`crate::start`] registers it; the scheduled profiler is the core's).
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

pub use profiler_core::schedule::{Profiler, ProfilerAction, Schedule, TraceReady};

use crate::{export, ExportFormat, Profile, Result};

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
