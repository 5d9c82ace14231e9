//! The file formats a profile can be written in, as users name them (`--format`,
//! `ProfileOptions::formats`).

use std::fmt;

use crate::error::{Error, ErrorKind, Result};

/// A file format a profile can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExportFormat {
    /// TensorBoard/XProf's `.xplane.pb` (always written to a logdir).
    XPlane,
    /// Perfetto's native protobuf trace, `.pftrace`.
    Perfetto,
    /// Chrome's JSON trace event format, `.trace.json`.
    ChromeJson,
    /// The same, gzipped: `.trace.json.gz`.
    ChromeJsonGz,
}

impl ExportFormat {
    /// Every format, with the name its [`FromStr`](std::str::FromStr) impl accepts first.
    pub const ALL: [(ExportFormat, &'static str); 4] = [
        (ExportFormat::XPlane, "xplane"),
        (ExportFormat::Perfetto, "perfetto"),
        (ExportFormat::ChromeJson, "chrome"),
        (ExportFormat::ChromeJsonGz, "chrome.gz"),
    ];

    /// Parses a comma-separated list such as `xplane,perfetto,chrome`.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] naming the unknown format and the valid ones.
    pub fn parse_list(list: &str) -> Result<Vec<ExportFormat>> {
        let mut formats = Vec::new();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let format = name.parse()?;
            if !formats.contains(&format) {
                formats.push(format);
            }
        }
        Ok(formats)
    }
}

impl std::str::FromStr for ExportFormat {
    type Err = Error;
    fn from_str(s: &str) -> Result<ExportFormat> {
        let format = match s {
            "xplane" | "xplane.pb" | "tensorboard" => ExportFormat::XPlane,
            "perfetto" | "pftrace" => ExportFormat::Perfetto,
            "chrome" | "json" | "trace.json" => ExportFormat::ChromeJson,
            "chrome.gz" | "json.gz" | "trace.json.gz" => ExportFormat::ChromeJsonGz,
            other => {
                let valid: Vec<_> = ExportFormat::ALL.iter().map(|(_, n)| *n).collect();
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "unknown export format {other:?}; valid formats: {}",
                        valid.join(", ")
                    ),
                ));
            }
        };
        Ok(format)
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = ExportFormat::ALL
            .iter()
            .find(|(format, _)| format == self)
            .map_or("?", |(_, name)| name);
        f.write_str(name)
    }
}
