//! [`Sink`]: one trait for every writer of a finished profile.
//!
//! A sink is a destination (a file in one format, a collector) that takes a whole
//! [`XSpace`] in one call, as fastrace's `Reporter` takes a batch of spans:
//!
//! | sink | writes | reports |
//! |---|---|---|
//! | [`XPlaneFile`](crate::xplane::XPlaneFile) | `.xplane.pb`, as XProf reads it | nothing |
//! | [`PerfettoFile`](crate::perfetto::PerfettoFile) | Perfetto's `.pftrace` | [`Totals`](crate::timeline::Totals) |
//! | [`ChromeJsonFile`](crate::chrome::ChromeJsonFile) | Chrome JSON, gzipped for `.gz` | [`Totals`](crate::timeline::Totals) |
//! | `OtlpOptions` (feature `otlp`) | spans to an OpenTelemetry collector | `OtlpReport` |
//! | [`FormatFile`](crate::formats::FormatFile) | the file of an [`ExportFormat`](crate::ExportFormat) chosen at run time | `Option<Totals>` |
//!
//! ```
//! use profiler_export::perfetto::PerfettoFile;
//! use profiler_export::sink::Sink;
//! # let dir = tempfile::tempdir()?;
//! # let space = profiler_core::xspace::XSpace::default();
//! let totals = PerfettoFile::new(dir.path().join("run.pftrace")).export(&space)?;
//! assert_eq!(totals.slices, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A new writer is a type with this one method, and, when it is a file format an
//! [`ExportFormat`](crate::ExportFormat) names, a row in `formats.rs`.

use profiler_core::xspace::XSpace;
use profiler_core::Result;

/// Where a finished profile goes.
pub trait Sink {
    /// What the sink says once the profile is out: what a timeline file holds, what a
    /// collector accepted.
    type Report;

    /// Writes or sends `space`. A file is written atomically: a reader never sees
    /// half of it.
    ///
    /// # Errors
    /// The sink's own: [`ErrorKind::Io`](profiler_core::ErrorKind::Io) naming the
    /// file, a space a format cannot hold, a collector that cannot be reached.
    fn export(&self, space: &XSpace) -> Result<Self::Report>;
}
