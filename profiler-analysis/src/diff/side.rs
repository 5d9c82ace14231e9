//! A side of a comparison: the profiles it is made of, given in memory or found on
//! disk (`.xplane.pb` files, run directories, logdirs) and read with the defensive
//! reader ([`profiler_export::xplane::read_with`]), and which of their hosts are compared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use profiler_core::{Error, ErrorKind, Profile, Result};

use super::options::DiffOptions;
use profiler_export::convert::find_xplanes;
use profiler_export::xplane;

const XPLANE_SUFFIX: &str = ".xplane.pb";

/// One side of a comparison: one or more profiles, each a host of a run (or a run of
/// its own: several runs of one host pool their steps).
///
/// A path may be a `.xplane.pb` file, a run directory (every host in it) or a logdir
/// (its newest run, a note saying so when it holds several; or every run, pooled,
/// with [`DiffOptions::all_runs`]).
///
/// ```
/// use profiler_analysis::diff::Side;
/// let one = Side::from("logs/base");
/// let pooled = Side::paths(["run1/host.xplane.pb", "run2/host.xplane.pb"]);
/// # let _ = (one, pooled);
/// ```
#[derive(Debug, Default)]
pub struct Side {
    inputs: Vec<Input>,
}

#[derive(Debug)]
enum Input {
    Path(PathBuf),
    Profile(Box<Profile>),
}

impl Side {
    /// A side read from `path`.
    pub fn path(path: impl Into<PathBuf>) -> Side {
        Side {
            inputs: vec![Input::Path(path.into())],
        }
    }

    /// A side read from every one of `paths`.
    pub fn paths<P: Into<PathBuf>>(paths: impl IntoIterator<Item = P>) -> Side {
        Side {
            inputs: paths.into_iter().map(|p| Input::Path(p.into())).collect(),
        }
    }

    /// A side made of a profile in memory (one a session returned).
    pub fn profile(profile: Profile) -> Side {
        Side {
            inputs: vec![Input::Profile(Box::new(profile))],
        }
    }

    /// This side with `other`'s profiles added.
    #[must_use]
    pub fn and(mut self, other: impl Into<Side>) -> Side {
        self.inputs.extend(other.into().inputs);
        self
    }
}

impl From<&Path> for Side {
    fn from(path: &Path) -> Side {
        Side::path(path)
    }
}

impl From<PathBuf> for Side {
    fn from(path: PathBuf) -> Side {
        Side::path(path)
    }
}

impl From<&PathBuf> for Side {
    fn from(path: &PathBuf) -> Side {
        Side::path(path)
    }
}

impl From<&str> for Side {
    fn from(path: &str) -> Side {
        Side::path(path)
    }
}

impl From<String> for Side {
    fn from(path: String) -> Side {
        Side::path(path)
    }
}

impl From<Vec<PathBuf>> for Side {
    fn from(paths: Vec<PathBuf>) -> Side {
        Side::paths(paths)
    }
}

impl From<Profile> for Side {
    fn from(profile: Profile) -> Side {
        Side::profile(profile)
    }
}

impl From<&Profile> for Side {
    /// A copy of `profile`: a side owns what it compares.
    fn from(profile: &Profile) -> Side {
        Side::profile(profile.clone())
    }
}

/// One profile of a side, read.
pub(super) struct Source {
    /// The file it was read from, or `profile N` for one given in memory.
    pub(super) label: String,
    /// The host it was recorded on.
    pub(super) host: String,
    pub(super) profile: Profile,
}

/// A profile found but not read yet.
struct Found {
    input: FoundInput,
    /// The host, when the file's name says it (`<host>.xplane.pb`, as XProf names
    /// hosts).
    host: Option<String>,
}

enum FoundInput {
    File(PathBuf),
    Profile(Box<Profile>),
}

/// Reads the profiles of `side` (called `which` in notes and errors) whose host is
/// `host` (every host when `None`), as `options` say.
///
/// # Errors
/// The reader's error for a file that cannot be read (it names the file);
/// [`ErrorKind::InvalidArgument`] for a side with no profile, or none of `host`.
pub(super) fn load(
    side: Side,
    which: &str,
    host: Option<&str>,
    options: &DiffOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<Source>> {
    if side.inputs.is_empty() {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("the {which} side names no profile"),
        ));
    }
    let mut found = Vec::new();
    for input in side.inputs {
        match input {
            Input::Path(path) => found.extend(resolve(&path, which, options.all_runs, notes)?),
            Input::Profile(profile) => found.push(Found {
                host: Some(profile.host_name().to_owned()),
                input: FoundInput::Profile(profile),
            }),
        }
    }
    let mut sources = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, f) in found.into_iter().enumerate() {
        if let (Some(want), Some(known)) = (host, &f.host) {
            if want != known {
                seen.insert(known.clone());
                continue;
            }
        }
        let (label, profile) = match f.input {
            FoundInput::File(path) => {
                let space = xplane::read_with(&path, &options.limits)?;
                let mut profile = Profile::new(space);
                profile.add_file(&path);
                (path.display().to_string(), profile)
            }
            FoundInput::Profile(profile) => (format!("{which} profile {}", i + 1), *profile),
        };
        let host_name = f.host.unwrap_or_else(|| profile.host_name().to_owned());
        if host.is_some_and(|want| want != host_name) {
            seen.insert(host_name);
            continue;
        }
        sources.push(Source {
            label,
            host: host_name,
            profile,
        });
    }
    if let (Some(want), true) = (host, sources.is_empty()) {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!(
                "the {which} side has no profile of host {want:?} (its hosts: {})",
                join(&seen)
            ),
        ));
    }
    Ok(sources)
}

/// The profiles at `path`: the file itself, every host of a run directory, or the
/// newest run of a logdir (every run, when `all_runs`).
fn resolve(
    path: &Path,
    which: &str,
    all_runs: bool,
    notes: &mut Vec<String>,
) -> Result<Vec<Found>> {
    let files = find_xplanes(path)?;
    let mut runs: BTreeMap<PathBuf, Vec<PathBuf>> = BTreeMap::new();
    for file in files {
        let run = file.parent().map(Path::to_path_buf).unwrap_or_default();
        runs.entry(run).or_default().push(file);
    }
    let count = runs.len();
    let files: Vec<PathBuf> = if all_runs || count == 1 {
        if count > 1 {
            notes.push(format!(
                "{which}: the {count} runs under {} are pooled",
                path.display()
            ));
        }
        runs.into_values().flatten().collect()
    } else {
        // TSL names runs by their start time (%Y_%m_%d_%H_%M_%S): the last in order
        // is the newest. Sorting the full paths keeps that order within one logdir.
        let (run, files) = runs
            .into_iter()
            .next_back()
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "no profile found"))?;
        notes.push(format!(
            "{which}: {} holds {count} runs; the newest, {}, is compared (name a run \
             directory to compare another, or pool them all)",
            path.display(),
            run.display()
        ));
        files
    };
    Ok(files
        .into_iter()
        .map(|file| Found {
            host: host_of_file(&file),
            input: FoundInput::File(file),
        })
        .collect())
}

/// The host a file is named after, `<host>.xplane.pb`.
fn host_of_file(file: &Path) -> Option<String> {
    let name = file.file_name()?.to_str()?;
    name.strip_suffix(XPLANE_SUFFIX)
        .filter(|stem| !stem.is_empty())
        .map(str::to_owned)
}

/// Checks that the two sides can be compared host by host: the same hosts, or one
/// host each (noted when their names differ).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] naming each side's hosts and files when they differ
/// and a side has several.
pub(super) fn check_hosts(
    base: &[Source],
    new: &[Source],
    host: Option<&str>,
    notes: &mut Vec<String>,
) -> Result<()> {
    let hosts =
        |side: &[Source]| -> BTreeSet<String> { side.iter().map(|s| s.host.clone()).collect() };
    let (b, n) = (hosts(base), hosts(new));
    if host.is_some() {
        // `load` kept that host alone on each side.
        return Ok(());
    }
    if b == n {
        if b.len() > 1 {
            notes.push(format!(
                "{} hosts merged: {} (each host's steps are samples of their own)",
                b.len(),
                join(&b)
            ));
        }
        return Ok(());
    }
    if b.len() == 1 && n.len() == 1 {
        notes.push(format!(
            "base was recorded on {}, new on {}: compared as one host",
            join(&b),
            join(&n)
        ));
        return Ok(());
    }
    let files = |side: &[Source]| {
        side.iter()
            .map(|s| s.label.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    Err(Error::new(
        ErrorKind::InvalidArgument,
        format!(
            "the sides have different hosts: base has {} ({}), new has {} ({}); \
             choose one host to compare (DiffOptions::host, prof-diff --host NAME)",
            join(&b),
            files(base),
            join(&n),
            files(new)
        ),
    ))
}

fn join(hosts: &BTreeSet<String>) -> String {
    hosts.iter().cloned().collect::<Vec<_>>().join(", ")
}
