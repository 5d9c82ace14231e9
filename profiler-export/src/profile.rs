//! [`ProfileExport`]: the writers as methods of a finished [`Profile`].

use std::path::{Path, PathBuf};

use profiler_core::{Error, ErrorKind, Profile, Result};

use crate::chrome::ChromeJsonFile;
use crate::formats::{self, ExportFormat};
use crate::link::{self, LinkOptions, LinkOutcome};
use crate::perfetto::{self, PerfettoFile};
use crate::sink::Sink;
use crate::timeline::Totals;

/// Writes a [`Profile`] in the formats other tools read. Its summary tables are
/// `profiler-analysis`'s `ProfileAnalysis`, above this crate.
///
/// ```
/// use profiler_export::ProfileExport;
/// # let dir = tempfile::tempdir()?;
/// # let profile = profiler_core::Profile::default();
/// profile.write_perfetto(dir.path().join("run.pftrace"))?;
/// profile.write_chrome_json(dir.path().join("run.trace.json.gz"))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait ProfileExport {
    /// Hands the profile to `sink`, any writer of [`crate::sink`].
    ///
    /// # Errors
    /// The sink's.
    fn export_to<S: Sink>(&self, sink: &S) -> Result<S::Report>;

    /// Writes a Perfetto trace (`.pftrace`) at `path`; see [`crate::perfetto`].
    ///
    /// # Errors
    /// [`ErrorKind::Io`] naming the path.
    fn write_perfetto(&self, path: impl AsRef<Path>) -> Result<Totals>;

    /// Writes a Chrome JSON trace at `path`, gzipped when it ends in `.gz`; see
    /// [`crate::chrome`].
    ///
    /// # Errors
    /// [`ErrorKind::Io`] naming the path.
    fn write_chrome_json(&self, path: impl AsRef<Path>) -> Result<Totals>;

    /// Writes the profile in `format` beside its `.xplane.pb` (or in `dir` when it
    /// was never written), named after its host, and returns the file.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] naming the path; [`ErrorKind::InvalidArgument`] naming a
    /// format this crate has no writer for.
    fn write_format(&self, format: ExportFormat, dir: Option<&Path>) -> Result<PathBuf>;

    /// Sends the profile's spans to an OpenTelemetry collector; see [`crate::otlp`].
    ///
    /// # Errors
    /// As [`crate::otlp::export`].
    #[cfg(feature = "otlp")]
    fn export_otlp(&self, options: &crate::otlp::OtlpOptions) -> Result<crate::otlp::OtlpReport>;

    /// Serves the profile's Perfetto trace once to ui.perfetto.dev, as
    /// `jax.profiler.trace(create_perfetto_link=True)` does: writes the `.pftrace` if
    /// the profile has none, hands the link to `announce` (to show it: a library does
    /// not print), and returns once the trace was fetched or `options.timeout` passed.
    ///
    /// # Errors
    /// As [`link::serve_perfetto_link`], and the error of writing the trace.
    fn serve_perfetto_link(
        &self,
        options: &LinkOptions,
        announce: impl FnOnce(&str),
    ) -> Result<LinkOutcome>;
}

impl ProfileExport for Profile {
    fn export_to<S: Sink>(&self, sink: &S) -> Result<S::Report> {
        sink.export(self.xspace())
    }

    fn write_perfetto(&self, path: impl AsRef<Path>) -> Result<Totals> {
        self.export_to(&PerfettoFile::new(path.as_ref()))
    }

    fn write_chrome_json(&self, path: impl AsRef<Path>) -> Result<Totals> {
        self.export_to(&ChromeJsonFile::new(path.as_ref()))
    }

    fn write_format(&self, format: ExportFormat, dir: Option<&Path>) -> Result<PathBuf> {
        let dir = dir.or_else(|| self.run_dir()).ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("the profile was never written to a logdir: give a directory for its {format} file"),
            )
        })?;
        let file = formats::file(format, formats::host_file(dir, self.host_name(), format)?)?;
        self.export_to(&file)?;
        Ok(file.path().to_path_buf())
    }

    #[cfg(feature = "otlp")]
    fn export_otlp(&self, options: &crate::otlp::OtlpOptions) -> Result<crate::otlp::OtlpReport> {
        self.export_to(options)
    }

    fn serve_perfetto_link(
        &self,
        options: &LinkOptions,
        announce: impl FnOnce(&str),
    ) -> Result<LinkOutcome> {
        let existing = self
            .files()
            .iter()
            .find(|f| f.to_string_lossy().ends_with(perfetto::EXTENSION));
        let path = match existing {
            Some(path) => path.clone(),
            None => {
                let dir = self
                    .run_dir()
                    .map_or_else(std::env::temp_dir, Path::to_path_buf);
                self.write_format(ExportFormat::Perfetto, Some(&dir))?
            }
        };
        link::serve_perfetto_link(&path, options, announce)
    }
}
