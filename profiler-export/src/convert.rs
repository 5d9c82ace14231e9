//! Converting existing `.xplane.pb` files (written by prof, JAX or TensorFlow) into
//! the other formats: one file, a run directory, or a whole logdir.

use std::fs;
use std::path::{Path, PathBuf};

use profiler_core::{Error, ErrorKind, Result};

use crate::formats::{self, ExportFormat};
use crate::timeline::{Timeline, Totals};
use crate::xplane::{self, ReadLimits};

/// The `.xplane.pb` files at `path`: the file itself, or every one below the directory
/// (a run directory or a logdir), sorted.
///
/// # Errors
/// [`ErrorKind::Io`] when `path` cannot be read; [`ErrorKind::InvalidArgument`] when
/// it holds no `.xplane.pb`.
pub fn find_xplanes(path: &Path) -> Result<Vec<PathBuf>> {
    let meta = fs::metadata(path).map_err(|e| Error::io("cannot read", path, e))?;
    let mut found = Vec::new();
    if meta.is_file() {
        found.push(path.to_path_buf());
    } else {
        let mut dirs = vec![path.to_path_buf()];
        // Bounded by the directory tree itself; symbolic links are not followed.
        while let Some(dir) = dirs.pop() {
            for entry in fs::read_dir(&dir).map_err(|e| Error::io("cannot list", &dir, e))? {
                let entry = entry.map_err(|e| Error::io("cannot list", &dir, e))?;
                let kind = entry
                    .file_type()
                    .map_err(|e| Error::io("cannot read", entry.path(), e))?;
                let p = entry.path();
                if kind.is_dir() {
                    dirs.push(p);
                } else if p.to_string_lossy().ends_with(".xplane.pb") {
                    found.push(p);
                }
            }
        }
        found.sort();
    }
    if found.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("no .xplane.pb file under {}", path.display()),
        ));
    }
    Ok(found)
}

/// One converted file.
#[derive(Clone, Debug)]
pub struct Converted {
    /// The `.xplane.pb` read.
    pub input: PathBuf,
    /// The file written.
    pub output: PathBuf,
    /// What it holds.
    pub totals: Totals,
}

/// Converts every `.xplane.pb` at `path` into each of `formats`, writing beside each
/// input, or into `out_dir` when given.
///
/// # Errors
/// The first file that cannot be found, read, parsed or written, naming it.
pub fn convert(
    path: &Path,
    formats: &[ExportFormat],
    out_dir: Option<&Path>,
) -> Result<Vec<Converted>> {
    let mut converted = Vec::new();
    for input in find_xplanes(path)? {
        // Events stay encoded until written out: about the file's size in memory.
        let space = xplane::read_lazy(&input, &ReadLimits::default())?;
        let timeline = Timeline::lazy(&space);
        let name = input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = name.strip_suffix(".xplane.pb").unwrap_or(&name);
        let dir = out_dir
            .or_else(|| input.parent())
            .unwrap_or_else(|| Path::new("."));
        for &format in formats.iter().filter(|&&f| f != ExportFormat::XPlane) {
            let output = dir.join(format!("{stem}.{}", formats::extension(format)));
            let totals = formats::write_timeline(&timeline, format, &output)?;
            converted.push(Converted {
                input: input.clone(),
                output,
                totals,
            });
        }
    }
    Ok(converted)
}
