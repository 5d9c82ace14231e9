//! A validated `capture-profile` command line: what to capture from which hosts, and
//! what to write.

use std::path::PathBuf;

use profiler_core::ExportFormat;
use profiler_export::otlp::OtlpOptions;
use profiler_remote::client::CaptureRequest;

/// A validated command line, ready to capture.
#[derive(Debug)]
pub struct Plan {
    /// `HOST:PORT` of each server, as typed less any `grpc://`.
    pub addresses: Vec<String>,
    /// Where the run directory goes.
    pub logdir: PathBuf,
    /// Tries per host.
    pub attempts: u32,
    /// What every host is asked for.
    pub request: CaptureRequest,
    /// Formats written besides the `.xplane.pb`.
    pub formats: Vec<ExportFormat>,
    /// Where spans are also sent.
    pub otlp: Option<OtlpOptions>,
    /// Whether to serve a Perfetto link.
    pub perfetto_link: bool,
    /// Rows of each summary table; 0 prints none.
    pub summary_rows: usize,
    /// One table per host rather than one merged.
    pub summary_per_host: bool,
}
