//! `--format LIST`, shared by both tools.

use profiler_core::ExportFormat;

/// The formats of a `--format` list, in the order given, without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Formats(pub Vec<ExportFormat>);

/// Parses `perfetto,chrome.gz`-style lists; the error names the unknown format.
///
/// # Errors
/// The unknown format and the valid ones.
pub fn parse(list: &str) -> Result<Formats, String> {
    ExportFormat::parse_list(list)
        .map(Formats)
        .map_err(|e| e.to_string())
}
