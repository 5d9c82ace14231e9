//! Every file format in one place: names, extensions, and writing a space in any of
//! them beside its `.xplane.pb`.
//!
//! [`ExportFormat`] is the core's, and `#[non_exhaustive]`: a format named there that
//! this crate has no writer for yet is an error naming it, never another format's
//! file. Each format's row below says its extension and which [`Sink`] writes it.

use std::path::{Path, PathBuf};

use profiler_core::xspace::XSpace;
use profiler_core::{Error, ErrorKind, Result};

pub use profiler_core::ExportFormat;

use crate::chrome::{self, ChromeJsonFile};
use crate::perfetto::{self, PerfettoFile};
use crate::sink::Sink;
use crate::timeline::{Timeline, Totals};
use crate::xplane::{self, XPlaneFile};

/// One file format this crate writes.
struct FileFormat {
    format: ExportFormat,
    /// Without the leading dot.
    extension: &'static str,
    /// Writes a whole space through the format's sink.
    write: fn(&XSpace, &Path) -> Result<Option<Totals>>,
    /// Writes a walk, as conversion does from lazily decoded files; `None` for the
    /// `.xplane.pb`, which is the space itself, not a walk of it.
    write_walk: Option<fn(&Timeline<'_>, &Path) -> Result<Totals>>,
}

/// The formats with a writer, looked up by [`ExportFormat`] (not matched, so that a
/// format the core adds finds no silent default).
const FILE_FORMATS: [FileFormat; 4] = [
    FileFormat {
        format: ExportFormat::XPlane,
        extension: xplane::EXTENSION,
        write: |space, path| XPlaneFile::new(path).export(space).map(|()| None),
        write_walk: None,
    },
    FileFormat {
        format: ExportFormat::Perfetto,
        extension: perfetto::EXTENSION,
        write: |space, path| PerfettoFile::new(path).export(space).map(Some),
        write_walk: Some(perfetto::write_timeline),
    },
    FileFormat {
        format: ExportFormat::ChromeJson,
        extension: chrome::EXTENSION,
        write: |space, path| ChromeJsonFile::new(path).export(space).map(Some),
        write_walk: Some(chrome::write_timeline),
    },
    FileFormat {
        format: ExportFormat::ChromeJsonGz,
        extension: chrome::EXTENSION_GZ,
        write: |space, path| ChromeJsonFile::new(path).export(space).map(Some),
        write_walk: Some(chrome::write_timeline),
    },
];

/// The row of `format`.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] naming a format this crate has no writer for.
fn file_format(format: ExportFormat) -> Result<&'static FileFormat> {
    FILE_FORMATS
        .iter()
        .find(|f| f.format == format)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "profiler-export has no writer for the export format {format:?} \
                     (it writes {})",
                    FILE_FORMATS
                        .iter()
                        .map(|f| f.format.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
}

/// The file of an [`ExportFormat`] chosen at run time, as a [`Sink`]: it reports what
/// the timeline formats hold (`None` for the `.xplane.pb`, which is the space itself).
///
/// ```
/// use profiler_export::formats;
/// use profiler_export::sink::Sink;
/// use profiler_export::ExportFormat;
/// # let dir = tempfile::tempdir()?;
/// # let space = profiler_core::xspace::XSpace::default();
/// let file = formats::file(ExportFormat::ChromeJsonGz, dir.path().join("run.trace.json.gz"))?;
/// assert!(file.export(&space)?.is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct FormatFile {
    format: &'static FileFormat,
    path: PathBuf,
}

impl FormatFile {
    /// Its format.
    pub fn format(&self) -> ExportFormat {
        self.format.format
    }

    /// Where the file goes.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for FormatFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FormatFile")
            .field("format", &self.format.format)
            .field("path", &self.path)
            .finish()
    }
}

impl Sink for FormatFile {
    type Report = Option<Totals>;

    fn export(&self, space: &XSpace) -> Result<Option<Totals>> {
        (self.format.write)(space, &self.path)
    }
}

/// The file at `path` in `format`, as a [`Sink`].
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] naming a format this crate has no writer for.
pub fn file(format: ExportFormat, path: impl Into<PathBuf>) -> Result<FormatFile> {
    Ok(FormatFile {
        format: file_format(format)?,
        path: path.into(),
    })
}

/// The file extension of `format`, without the leading dot.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] naming a format this crate has no writer for.
pub fn extension(format: ExportFormat) -> Result<&'static str> {
    file_format(format).map(|f| f.extension)
}

/// Writes `space` at `path` in `format`, atomically, and returns what the timeline
/// formats hold (`None` for the `.xplane.pb`, which is the space itself).
///
/// # Errors
/// [`ErrorKind::Io`] naming the path; [`ErrorKind::InvalidArgument`] naming a format
/// this crate has no writer for.
pub fn write(space: &XSpace, format: ExportFormat, path: &Path) -> Result<Option<Totals>> {
    file(format, path)?.export(space)
}

/// Writes the walk of `timeline` at `path` in `format`, one of the timeline formats
/// (Perfetto, Chrome JSON), atomically.
///
/// # Errors
/// [`ErrorKind::Io`] naming the path; [`ErrorKind::InvalidArgument`] for the
/// `.xplane.pb`, which is not written from a walk, and for a format this crate has no
/// writer for.
pub(crate) fn write_timeline(
    timeline: &Timeline<'_>,
    format: ExportFormat,
    path: &Path,
) -> Result<Totals> {
    let write_walk = file_format(format)?.write_walk.ok_or_else(|| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("{format} is not a timeline format"),
        )
    })?;
    write_walk(timeline, path)
}

/// Where the file of `host` in `format` goes in directory `dir`:
/// `<dir>/<host>.<extension>`, named as XProf names hosts.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] naming a format this crate has no writer for.
pub fn host_file(dir: &Path, host: &str, format: ExportFormat) -> Result<PathBuf> {
    Ok(dir.join(format!("{}.{}", host_file_stem(host), extension(format)?)))
}

/// Where the `.xplane.pb` of `host` goes in directory `dir`, as [`host_file`] names
/// it; every build writes that format, so this cannot fail.
pub fn xplane_file(dir: &Path, host: &str) -> PathBuf {
    dir.join(format!("{}.{}", host_file_stem(host), xplane::EXTENSION))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_the_core_names_has_a_writer_and_its_own_extension() {
        let mut extensions = Vec::new();
        for (format, name) in ExportFormat::ALL {
            let ext = extension(format).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!extensions.contains(&ext), "{name} shares .{ext}");
            extensions.push(ext);
        }
        assert_eq!(extensions.len(), FILE_FORMATS.len());
    }

    #[test]
    fn each_format_is_written_by_its_own_sink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let space = XSpace::default();
        for (format, name) in ExportFormat::ALL {
            let path = host_file(dir.path(), "h:1", format).expect("a writer");
            let totals = write(&space, format, &path).expect("written");
            assert_eq!(totals.is_none(), format == ExportFormat::XPlane, "{name}");
            let bytes = std::fs::read(&path).expect("the file is there");
            match format {
                ExportFormat::XPlane => {
                    assert_eq!(xplane::decode(&bytes).ok(), Some(space.clone()))
                }
                ExportFormat::ChromeJsonGz => assert_eq!(bytes[..2], [0x1f, 0x8b], "gzip"),
                ExportFormat::ChromeJson => assert!(bytes.starts_with(b"{"), "JSON"),
                _ => assert!(!bytes.is_empty(), "{name}"),
            }
        }
    }

    #[test]
    fn the_xplane_is_no_walk() {
        let space = XSpace::default();
        let dir = tempfile::tempdir().expect("tempdir");
        let err = write_timeline(
            &Timeline::new(&space),
            ExportFormat::XPlane,
            &dir.path().join("x.xplane.pb"),
        )
        .expect_err("not a timeline format");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("xplane"), "{err}");
    }
}
