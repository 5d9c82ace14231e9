//! Converting existing `.xplane.pb` files (written by prof, JAX or TensorFlow) into
//! the other formats: one file, a run directory, or a whole logdir.
//!
//! [`convert_all`] is what a command-line tool wants: every file is tried whatever
//! happened to the others, and each gets a [`FileOutcome`] (what was written, or the
//! error naming the file), so the tool can name each bad file and sum up at the end.
//! Before anything is written, it checks that no two inputs map to the same output:
//! with an output directory, the run structure under each input is kept
//! (`<out>/<path below the input>/<host>.<ext>`), and a collision that remains is an
//! error, never a silent overwrite.
//!
//! Files are read with [`xplane::read_lazy`]: events stay encoded until they are
//! written out, so converting takes about the file's size in memory.

use std::collections::{HashMap, HashSet};
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
    if meta.is_dir() {
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
                    // Whatever it is (a FIFO, a link to a device): reading it says.
                    found.push(p);
                }
            }
        }
        found.sort();
    } else {
        // Named directly: reading it checks that it is a regular file.
        found.push(path.to_path_buf());
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
    /// Its format.
    pub format: ExportFormat,
    /// What it holds.
    pub totals: Totals,
}

/// What became of one input.
#[derive(Debug)]
pub struct FileOutcome {
    /// The `.xplane.pb` read (or the path given, when nothing could be found there).
    pub input: PathBuf,
    /// The files written from it, in the order of the formats asked for.
    pub written: Vec<Converted>,
    /// The pprof profile written beside them (`<host>.pprof.pb.gz`), when the profile
    /// carried stack samples.
    pub pprof: Option<PathBuf>,
    /// What a user should know about what was written, naming the file: a profile with
    /// no events (an empty file is a valid, empty XSpace), events the reader left out
    /// (see [`xplane::read_with`]).
    pub warnings: Vec<String>,
    /// Why the rest was not written; the error names the file it is about.
    pub error: Option<Error>,
}

impl FileOutcome {
    /// Whether every format was written.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }
}

/// How to convert.
#[derive(Clone, Debug, Default)]
pub struct ConvertOptions {
    /// Write under this directory (created if needed) instead of beside each input:
    /// `<out_dir>/<directories below the input path>/<host>.<ext>`.
    pub out_dir: Option<PathBuf>,
    /// Limits on the files read.
    pub limits: ReadLimits,
}

impl ConvertOptions {
    /// Writes under `dir` instead of beside each input.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// Sets the limits on the files read.
    pub fn limits(mut self, limits: ReadLimits) -> Self {
        self.limits = limits;
        self
    }
}

/// Converts every `.xplane.pb` at each of `paths` (files, run directories, logdirs)
/// into each of `formats`, and returns one outcome per file, in order: a file that
/// cannot be read, parsed or written does not stop the others. A path where nothing
/// can be found gets one outcome with the error.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`], before anything is written, when `formats` names no
/// format to write (`.xplane.pb` inputs are not rewritten) or one this crate has no
/// writer for (naming it), or when two inputs would be written to the same file
/// (naming both).
pub fn convert_all(
    paths: &[PathBuf],
    formats: &[ExportFormat],
    options: &ConvertOptions,
) -> Result<Vec<FileOutcome>> {
    let formats = writable(formats)?;
    let mut steps = Vec::new();
    for root in paths {
        match find_xplanes(root) {
            Ok(inputs) => steps.extend(inputs.into_iter().map(|input| {
                Step::Convert(Job {
                    outputs: outputs(root, &input, &formats, options.out_dir.as_deref()),
                    input,
                })
            })),
            Err(error) => steps.push(Step::Failed(FileOutcome {
                input: root.clone(),
                written: Vec::new(),
                pprof: None,
                warnings: Vec::new(),
                error: Some(error),
            })),
        }
    }
    let steps = without_duplicates(steps)?;
    Ok(steps
        .into_iter()
        .map(|step| match step {
            Step::Convert(job) => job.run(options),
            Step::Failed(outcome) => outcome,
        })
        .collect())
}

/// Converts every `.xplane.pb` at `path` into each of `formats`, writing beside each
/// input, or into `out_dir` when given (keeping the directories below `path`). Every
/// file is tried; [`convert_all`] reports on each.
///
/// # Errors
/// As [`convert_all`]; then the error of the first file that could not be found, read,
/// parsed or written, naming it.
pub fn convert(
    path: &Path,
    formats: &[ExportFormat],
    out_dir: Option<&Path>,
) -> Result<Vec<Converted>> {
    let options = ConvertOptions {
        out_dir: out_dir.map(Path::to_path_buf),
        ..ConvertOptions::default()
    };
    let mut converted = Vec::new();
    for outcome in convert_all(&[path.to_path_buf()], formats, &options)? {
        if let Some(error) = outcome.error {
            return Err(error);
        }
        converted.extend(outcome.written);
    }
    Ok(converted)
}

/// The formats to write, each with its extension: `formats` without the
/// `.xplane.pb`, which must leave some.
fn writable(formats: &[ExportFormat]) -> Result<Vec<(ExportFormat, &'static str)>> {
    let mut kept: Vec<(ExportFormat, &'static str)> = Vec::new();
    for &format in formats {
        if format != ExportFormat::XPlane && !kept.iter().any(|&(f, _)| f == format) {
            kept.push((format, formats::extension(format)?));
        }
    }
    if kept.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "no format to convert to: give perfetto, chrome or chrome.gz \
             (.xplane.pb files are the inputs, not rewritten)",
        ));
    }
    Ok(kept)
}

/// What to do for one input, in the order the paths were given.
enum Step {
    Convert(Job),
    /// Nothing could be found at a path given.
    Failed(FileOutcome),
}

/// One input and the files it becomes.
struct Job {
    input: PathBuf,
    outputs: Vec<(ExportFormat, PathBuf)>,
}

impl Job {
    fn run(&self, options: &ConvertOptions) -> FileOutcome {
        let mut outcome = FileOutcome {
            input: self.input.clone(),
            written: Vec::new(),
            pprof: None,
            warnings: Vec::new(),
            error: None,
        };
        let space = match xplane::read_lazy(&self.input, &options.limits) {
            Ok(space) => space,
            Err(error) => {
                outcome.error = Some(error);
                return outcome;
            }
        };
        for note in space.read_warnings() {
            outcome
                .warnings
                .push(format!("{}: {note}", self.input.display()));
        }
        if space.event_count() == 0 {
            outcome.warnings.push(empty_profile(&self.input));
        }
        let mut timeline = Timeline::lazy(&space);
        if !timeline.origin().is_recorded() {
            // A file with no wall-clock start (older TensorFlow, hand-made) is placed
            // at its modification time, about when its profile ended: a real date
            // rather than 1970 or a made-up one.
            if let Some(ns) = modified_unix_ns(&self.input) {
                timeline = timeline.or_start_at(ns);
            }
        }
        for (format, output) in &self.outputs {
            let written = create_parent(output)
                .and_then(|()| formats::write_timeline(&timeline, *format, output));
            match written {
                Ok(totals) => outcome.written.push(Converted {
                    input: self.input.clone(),
                    output: output.clone(),
                    format: *format,
                    totals,
                }),
                Err(error) => {
                    outcome.error = Some(error);
                    break;
                }
            }
        }
        // Stack samples travel inside the space: their pprof file goes beside the
        // other outputs, as a session writes it beside its `.xplane.pb`.
        if let (None, Some((_, first))) = (&outcome.error, self.outputs.first()) {
            let name = self.input.file_name().unwrap_or_default().to_string_lossy();
            let xplane = first.with_file_name(name.as_ref());
            match crate::pprof::write_beside(timeline.space(), &xplane) {
                Ok(written) => outcome.pprof = written,
                Err(error) => outcome.error = Some(error),
            }
        }
        outcome
    }
}

/// The warning for a profile without events: the files written from it are empty
/// traces, which a user converting it surely did not expect.
fn empty_profile(input: &Path) -> String {
    let bytes = fs::metadata(input).map_or(0, |m| m.len());
    let what = if bytes == 0 {
        "is empty (0 bytes, an XSpace with nothing in it)".to_owned()
    } else {
        format!("({bytes} bytes) records no events")
    };
    format!(
        "{} {what}: the profile is empty, and so are the traces written from it",
        input.display()
    )
}

/// When `path` was last modified, in nanoseconds since the Unix epoch.
fn modified_unix_ns(path: &Path) -> Option<i64> {
    let since = fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    i64::try_from(since.as_nanos()).ok()
}

fn create_parent(output: &Path) -> Result<()> {
    match output.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => fs::create_dir_all(dir)
            .map_err(|e| Error::io("cannot create the output directory", dir, e)),
        _ => Ok(()),
    }
}

/// Where `input`, found under `root`, goes in each format.
fn outputs(
    root: &Path,
    input: &Path,
    formats: &[(ExportFormat, &'static str)],
    out_dir: Option<&Path>,
) -> Vec<(ExportFormat, PathBuf)> {
    let name = input
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".xplane.pb").unwrap_or(&name).to_owned();
    let beside = input.parent().unwrap_or_else(|| Path::new("."));
    let dir = match out_dir {
        // The directories between the path given and the file (a logdir's
        // plugins/profile/<run>) keep runs apart: hosts are named alike in every run.
        Some(out) => match beside.strip_prefix(root) {
            Ok(below) => out.join(below),
            Err(_) => out.to_path_buf(),
        },
        None => beside.to_path_buf(),
    };
    formats
        .iter()
        .map(|&(f, extension)| (f, dir.join(format!("{stem}.{extension}"))))
        .collect()
}

/// `steps` with a file given twice (as itself and inside its directory, say) kept
/// once.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] when two different inputs would write one file.
fn without_duplicates(steps: Vec<Step>) -> Result<Vec<Step>> {
    let mut writers: HashMap<PathBuf, PathBuf> = HashMap::new();
    let mut inputs = HashSet::new();
    let mut kept = Vec::new();
    for step in steps {
        let Step::Convert(job) = &step else {
            kept.push(step);
            continue;
        };
        let identity = fs::canonicalize(&job.input).unwrap_or_else(|_| job.input.clone());
        if !inputs.insert(identity.clone()) {
            continue;
        }
        for (_, output) in &job.outputs {
            if let Some(other) = writers.insert(normalize(output), identity.clone()) {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "{} and {} would both be written to {}: nothing converted \
                         (convert them into different directories)",
                        other.display(),
                        job.input.display(),
                        output.display()
                    ),
                ));
            }
        }
        kept.push(step);
    }
    Ok(kept)
}

/// `path` with its directory resolved when it exists, so that two spellings of one
/// output directory compare equal.
fn normalize(path: &Path) -> PathBuf {
    let resolved = path
        .parent()
        .and_then(|dir| fs::canonicalize(dir).ok())
        .zip(path.file_name());
    match resolved {
        Some((dir, name)) => dir.join(name),
        // Not created yet: at least `a/./b` and `a/b` agree.
        None => path.components().collect(),
    }
}
