//! Every file format in one place: names, extensions, and writing a space in any of
//! them beside its `.xplane.pb`.

use std::path::{Path, PathBuf};

use profiler_core::xspace::XSpace;
use profiler_core::{Error, ErrorKind, Result};

pub use profiler_core::ExportFormat;

use crate::timeline::{Timeline, Totals};
use crate::{chrome, perfetto, xplane};

/// The file extension of `format`, without the leading dot.
pub fn extension(format: ExportFormat) -> &'static str {
    match format {
        ExportFormat::Perfetto => perfetto::EXTENSION,
        ExportFormat::ChromeJson => chrome::EXTENSION,
        ExportFormat::ChromeJsonGz => chrome::EXTENSION_GZ,
        // XPlane, and any format added later, default to the XProf file.
        _ => "xplane.pb",
    }
}

/// Writes `space` at `path` in `format`, atomically, and returns what the timeline
/// formats hold (`None` for the `.xplane.pb`, which is the space itself).
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] naming the path.
pub fn write(space: &XSpace, format: ExportFormat, path: &Path) -> Result<Option<Totals>> {
    match format {
        ExportFormat::Perfetto => perfetto::write(space, path).map(Some),
        ExportFormat::ChromeJson | ExportFormat::ChromeJsonGz => {
            chrome::write(space, path).map(Some)
        }
        _ => xplane::write(path, space).map(|()| None),
    }
}

/// Writes the walk of `timeline` at `path` in `format`, one of the timeline formats
/// (Perfetto, Chrome JSON), atomically.
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] naming the path;
/// [`profiler_core::ErrorKind::InvalidArgument`] for the `.xplane.pb`, which is not
/// written from a walk.
pub(crate) fn write_timeline(
    timeline: &Timeline<'_>,
    format: ExportFormat,
    path: &Path,
) -> Result<Totals> {
    match format {
        ExportFormat::Perfetto => perfetto::write_timeline(timeline, path),
        ExportFormat::ChromeJson | ExportFormat::ChromeJsonGz => {
            chrome::write_timeline(timeline, path)
        }
        other => Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("{other} is not a timeline format"),
        )),
    }
}

/// Where the file of `host` in `format` goes in directory `dir`:
/// `<dir>/<host>.<extension>`, named as XProf names hosts.
pub fn host_file(dir: &Path, host: &str, format: ExportFormat) -> PathBuf {
    dir.join(format!("{}.{}", host_file_stem(host), extension(format)))
}

/// The file stem XProf shows as the host: `:` becomes `_` as in TSL; path separators
/// and `..` are replaced too so a host name can never leave the run directory.
pub fn host_file_stem(host: &str) -> String {
    let stem: String = host
        .chars()
        .map(|c| {
            if matches!(c, ':' | '/' | '\\' | '\0') {
                '_'
            } else {
                c
            }
        })
        .collect();
    match stem.as_str() {
        "" | "." | ".." => "localhost".to_owned(),
        _ => stem,
    }
}
