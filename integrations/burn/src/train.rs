//! burn-train and prof together: burn-train installs its application logger as the
//! process's one `tracing` subscriber, which leaves no room for prof's layer; this
//! installer puts both in one.

use std::path::{Path, PathBuf};

use burn_train::ApplicationLoggerInstaller;
use profiler_core::ProfilerLayer;
use tracing_subscriber::filter::{filter_fn, LevelFilter};
use tracing_subscriber::prelude::*;
use tracing_subscriber::{registry, Layer};

/// An application logger for burn-train's `Learner` that installs prof's
/// [`ProfilerLayer`] beside burn-train's experiment log:
///
/// ```no_run
/// # fn builder<L>(l: L) -> L { l }
/// // In the learner's builder, the one line:
/// // .with_application_logger(Some(Box::new(profiler_burn::train::ProfiledLogger::new(dir.join("experiment.log")))))
/// use burn_train::ApplicationLoggerInstaller;
/// profiler_burn::train::ProfiledLogger::new("artifacts/experiment.log").install()?;
/// # Ok::<(), String>(())
/// ```
///
/// Every `tracing` span then reaches prof while a session records (burn's own with its
/// `tracing` feature: cubecl's `launch_inner` around each launch, with `kernel.name`),
/// and the log file gets what burn-train's `FileApplicationLoggerInstaller` writes
/// (`INFO` and above, wgpu's `INFO` left out).
#[derive(Clone, Debug)]
pub struct ProfiledLogger {
    file: Option<PathBuf>,
}

impl ProfiledLogger {
    /// prof's layer and burn-train's experiment log at `file`.
    pub fn new(file: impl AsRef<Path>) -> ProfiledLogger {
        ProfiledLogger {
            file: Some(file.as_ref().to_path_buf()),
        }
    }

    /// prof's layer alone.
    pub fn without_file() -> ProfiledLogger {
        ProfiledLogger { file: None }
    }
}

impl ApplicationLoggerInstaller for ProfiledLogger {
    fn install(&self) -> Result<(), String> {
        let file = match &self.file {
            Some(path) => {
                let name = path
                    .file_name()
                    .ok_or_else(|| format!("the log path {} names no file", path.display()))?;
                let dir = path
                    .parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .unwrap_or_else(|| Path::new("."));
                let writer = tracing_appender::rolling::never(dir, name);
                Some(
                    tracing_subscriber::fmt::layer()
                        .with_ansi(false)
                        .with_writer(writer)
                        .with_filter(LevelFilter::INFO)
                        .with_filter(filter_fn(|m| {
                            // As burn-train's: wgpu's INFO is noise.
                            !(m.module_path().is_some_and(|p| p.starts_with("wgpu"))
                                && *m.level() >= tracing::Level::INFO)
                        })),
                )
            }
            None => None,
        };
        registry()
            .with(ProfilerLayer::new())
            .with(file)
            .try_init()
            .map_err(|e| format!("a tracing subscriber is already installed: {e}"))
    }
}
