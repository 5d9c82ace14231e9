//! TensorBoard/XProf logdirs: `<logdir>/plugins/profile/<run>/<host>.xplane.pb`.
//!
//! Runs are named `%Y_%m_%d_%H_%M_%S` in local time, as TSL names them, so prof's runs
//! sort among TensorFlow's and JAX's in TensorBoard's run list. Each session gets a
//! fresh run directory: XProf caches converted tools per run, so reusing one would show
//! stale data. Two sessions within one second get `<time>_1`, `<time>_2`, ….

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use profiler_core::options::DEFAULT_MAX_XPLANE_BYTES;
use profiler_core::{Error, ErrorKind, Profile, Result};

use crate::fit;
use crate::formats::ExportFormat;
use crate::store::Location;

// The file-name helpers live with the formats, whose extensions they need; the logdir
// keeps the path it always offered them at.
pub use crate::formats::host_file_stem;

/// The directory under a logdir where TensorBoard's profile plugin looks for runs.
pub const PROFILE_PLUGIN_DIR: &str = "plugins/profile";

/// A run directory created for one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunDir {
    path: PathBuf,
}

impl RunDir {
    /// Creates a fresh run directory under `logdir`, named after the current local time.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] naming the directory that could not be created.
    pub fn create(logdir: &Path) -> Result<RunDir> {
        RunDir::create_named(logdir, &run_name())
    }

    /// Creates a fresh run directory under `logdir` named `stamp` (a run name of
    /// [`run_name`]'s form, taken when a capture started), or `stamp_1`, `stamp_2`, …
    /// when that is taken. Create it only once there is something to write into it:
    /// XProf lists an empty run as an empty session.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] naming the directory that could not be created.
    pub fn create_named(logdir: &Path, stamp: &str) -> Result<RunDir> {
        let base = logdir.join(PROFILE_PLUGIN_DIR);
        fs::create_dir_all(&base)
            .map_err(|e| Error::io("cannot create the profile logdir", &base, e))?;
        let stamp = host_file_stem(stamp);
        for n in 0..1000u32 {
            let name = if n == 0 {
                stamp.clone()
            } else {
                format!("{stamp}_{n}")
            };
            let path = base.join(name);
            match fs::create_dir(&path) {
                Ok(()) => return Ok(RunDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io("cannot create the run directory", &path, e)),
            }
        }
        Err(Error::new(
            ErrorKind::Io,
            format!("more than 1000 runs named {stamp} in {}", base.display()),
        ))
    }

    /// The run directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `profile` into this run as host `host`: its `.xplane.pb`, then each of
    /// `formats` beside it, recording every file written in the profile (those written
    /// before a failure stay recorded). A profile that would pass
    /// [`DEFAULT_MAX_XPLANE_BYTES`] is written as [`fit::write_xplane`] says: its latest
    /// steps that fit, and the whole session as Perfetto beside them.
    ///
    /// # Errors
    /// [`ErrorKind::Io`] naming the path that failed.
    pub fn write(&self, profile: &mut Profile, host: &str, formats: &[ExportFormat]) -> Result<()> {
        self.write_within(profile, host, formats, DEFAULT_MAX_XPLANE_BYTES)
    }

    /// As [`RunDir::write`], with the `.xplane.pb` kept within `max_xplane_bytes`
    /// (`ProfileOptions::max_xplane_bytes`).
    ///
    /// # Errors
    /// As [`RunDir::write`]; [`ErrorKind::InvalidArgument`] for a limit over what
    /// XProf reads.
    pub fn write_within(
        &self,
        profile: &mut Profile,
        host: &str,
        formats: &[ExportFormat],
        max_xplane_bytes: u64,
    ) -> Result<()> {
        let file = self.host_file(host);
        let written = fit::write_xplane(&file, profile, max_xplane_bytes)?;
        let pprof = crate::pprof::write_beside(profile.xspace(), &file)?;
        profile.add_file(file);
        if let Some(pprof) = pprof {
            profile.add_file(pprof);
        }
        if let Some(full) = &written.full_trace {
            profile.add_file(full.clone());
        }
        for &format in formats.iter().filter(|&&f| f != ExportFormat::XPlane) {
            if format == ExportFormat::Perfetto && written.full_trace.is_some() {
                continue; // written whole already
            }
            let path = crate::formats::host_file(&self.path, host, format)?;
            crate::formats::write(profile.xspace(), format, &path)?;
            profile.add_file(path);
        }
        Ok(())
    }

    /// Where the `.xplane.pb` of `host` goes in this run.
    pub fn host_file(&self, host: &str) -> PathBuf {
        crate::formats::xplane_file(&self.path, host)
    }
}

/// A run's name for now, as TSL names runs (and capture clients name sessions):
/// `%Y_%m_%d_%H_%M_%S` in local time.
pub fn run_name() -> String {
    chrono::Local::now().format("%Y_%m_%d_%H_%M_%S").to_string()
}

/// Checks that runs can be written under `logdir` (its `plugins/profile` is created,
/// and a file made and removed there), without creating a run: a capture checks
/// before it records, and creates its run only once it has something to write.
///
/// # Errors
/// [`ErrorKind::Io`] naming the directory that cannot be written.
pub fn check_writable(logdir: &Path) -> Result<()> {
    let logdir = match Location::of(logdir)? {
        Location::Local(path) => path,
        #[cfg(feature = "object-store")]
        Location::Object(url) => return crate::store::check(&url),
        #[cfg(not(feature = "object-store"))]
        Location::Object(_) => unreachable!("Location::of refuses URLs without the feature"),
    };
    let base = logdir.join(PROFILE_PLUGIN_DIR);
    fs::create_dir_all(&base)
        .map_err(|e| Error::io("cannot create the profile logdir", &base, e))?;
    tempfile::tempfile_in(&base)
        .map(drop)
        .map_err(|e| Error::io("cannot write in the profile logdir", &base, e))
}

/// Checks that `logdir` exists or can be created, so a session fails at start rather
/// than after a long run.
///
/// # Errors
/// [`ErrorKind::Io`] naming the logdir, with the cause as its source (as
/// [`check_writable`]: one failure, one kind).
pub fn prepare(logdir: &Path) -> Result<()> {
    match Location::of(logdir)? {
        Location::Local(path) => {
            fs::create_dir_all(&path).map_err(|e| Error::io("cannot create the logdir", &path, e))
        }
        #[cfg(feature = "object-store")]
        Location::Object(url) => crate::store::check(&url),
        #[cfg(not(feature = "object-store"))]
        Location::Object(_) => unreachable!("Location::of refuses URLs without the feature"),
    }
}

/// Writes `profile` as a new run of `logdir` and returns it with the file recorded.
///
/// # Errors
/// [`ErrorKind::Io`] naming the path that failed; the error carries the profile
/// ([`Error::into_profile`]), so nothing recorded is lost.
pub fn write_logdir(logdir: impl AsRef<Path>, profile: Profile) -> Result<Profile> {
    write_logdir_formats(logdir, profile, &[])
}

/// Writes `profile` as a new run of `logdir`: its `.xplane.pb`, then each of
/// `formats` beside it (`<host>.pftrace`, `<host>.trace.json.gz`, …), and returns it
/// with the files recorded.
///
/// # Errors
/// As [`write_logdir`]; files written before the failure stay recorded in the profile
/// the error carries.
pub fn write_logdir_formats(
    logdir: impl AsRef<Path>,
    profile: Profile,
    formats: &[ExportFormat],
) -> Result<Profile> {
    write_logdir_within(logdir, profile, formats, DEFAULT_MAX_XPLANE_BYTES)
}

/// As [`write_logdir_formats`], with the `.xplane.pb` kept within `max_xplane_bytes`
/// (`ProfileOptions::max_xplane_bytes`; see [`fit`]).
///
/// # Errors
/// As [`write_logdir`].
pub fn write_logdir_within(
    logdir: impl AsRef<Path>,
    mut profile: Profile,
    formats: &[ExportFormat],
    max_xplane_bytes: u64,
) -> Result<Profile> {
    let host = profile.host_name().to_owned();
    let location = match Location::of(logdir.as_ref()) {
        Ok(location) => location,
        Err(e) => return Err(e.with_profile(profile)),
    };
    let local = match &location {
        Location::Local(path) => path.clone(),
        Location::Object(url) => url.staging_dir(),
    };
    let written = RunDir::create(&local)
        .and_then(|run| run.write_within(&mut profile, &host, formats, max_xplane_bytes));
    if let Err(e) = written {
        return Err(e.with_profile(profile));
    }
    match location {
        Location::Local(_) => Ok(profile),
        #[cfg(feature = "object-store")]
        Location::Object(url) => match publish(&mut profile, &url) {
            Ok(()) => Ok(profile),
            Err(e) => Err(e.with_profile(profile)),
        },
        #[cfg(not(feature = "object-store"))]
        Location::Object(_) => unreachable!("Location::of refuses URLs without the feature"),
    }
}

/// Publishes the run `profile`'s files were written to (under `url`'s staging
/// directory) to `url`; on success the profile's files name the objects and the local
/// copy is removed, on failure both stay as they are and the error names the URL, the
/// cause and the local run.
///
/// # Errors
/// As [`crate::store::publish_run`].
#[cfg(feature = "object-store")]
pub fn publish(profile: &mut Profile, url: &crate::store::ObjectUrl) -> Result<()> {
    let Some(run) = profile.run_dir().map(Path::to_path_buf) else {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "the profile was not written",
        ));
    };
    let runs = url.join(PROFILE_PLUGIN_DIR);
    let published = crate::store::publish_run(&run, profile.files(), &runs)?;
    profile.take_files();
    for file in &published.files {
        profile.add_file(PathBuf::from(file.to_string()));
    }
    // Published: the staging copy has done its work. Failing to remove it loses nothing.
    drop(fs::remove_dir_all(&run));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use profiler_core::xspace::XSpace;

    fn profile() -> Profile {
        Profile::new(XSpace {
            hostnames: vec!["worker:0".into()],
            ..XSpace::default()
        })
    }

    #[test]
    fn layout_matches_tensorboard() {
        let dir = tempfile::tempdir().expect("tempdir");
        let written = write_logdir(dir.path(), profile()).expect("write");
        let file = &written.files()[0];
        let rel = file.strip_prefix(dir.path()).expect("inside logdir");
        let parts: Vec<_> = rel
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        assert_eq!(parts[..2], ["plugins", "profile"]);
        assert_eq!(parts[3], "worker_0.xplane.pb");
        let run = &parts[2];
        assert_eq!(run.len(), "2026_11_20_19_49_00".len(), "{run}");
        assert!(
            chrono::NaiveDateTime::parse_from_str(run, "%Y_%m_%d_%H_%M_%S").is_ok(),
            "{run}"
        );
        assert_eq!(
            crate::xplane::read(file).expect("read back").hostnames,
            ["worker:0"]
        );
    }

    #[test]
    fn other_formats_go_beside_the_xplane() {
        let dir = tempfile::tempdir().expect("tempdir");
        let formats = [ExportFormat::Perfetto, ExportFormat::ChromeJsonGz];
        let written = write_logdir_formats(dir.path(), profile(), &formats).expect("write");
        let names: Vec<_> = written
            .files()
            .iter()
            .map(|f| f.file_name().expect("name").to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "worker_0.xplane.pb",
                "worker_0.pftrace",
                "worker_0.trace.json.gz"
            ]
        );
        assert!(written
            .files()
            .iter()
            .all(|f| f.parent() == written.run_dir()));
    }

    #[test]
    fn sessions_in_one_second_get_distinct_runs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let runs: Vec<_> = (0..3)
            .map(|_| RunDir::create(dir.path()).expect("run").path().to_owned())
            .collect();
        assert_ne!(runs[0], runs[1]);
        assert_ne!(runs[1], runs[2]);
        assert_ne!(runs[0], runs[2]);
    }

    #[test]
    fn unwritable_logdir_keeps_the_profile() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("not-a-dir");
        fs::write(&file, b"").expect("write");
        let err = write_logdir(&file, profile()).expect_err("logdir is a file");
        assert_eq!(err.kind(), ErrorKind::Io);
        assert!(err.to_string().contains("not-a-dir"), "{err}");
        assert_eq!(
            err.into_profile().expect("profile kept").host_name(),
            "worker:0"
        );
        // One failure, one kind: creating the logdir at start and checking it before a
        // capture fail alike, with the OS's reason as the source, said once.
        for e in [
            prepare(&file.join("x")).expect_err("bad"),
            check_writable(&file.join("x")).expect_err("bad"),
        ] {
            assert_eq!(e.kind(), ErrorKind::Io, "{e}");
            let cause = std::error::Error::source(&e).expect("the OS's reason");
            assert!(cause.is::<std::io::Error>());
            assert!(!e.to_string().contains(&cause.to_string()), "{e}");
            assert!(format!("{e:?}").ends_with(&cause.to_string()), "{e:?}");
        }
    }

    #[test]
    fn host_names_cannot_escape_the_run() {
        assert_eq!(host_file_stem("../../etc/passwd"), ".._.._etc_passwd");
        assert_eq!(host_file_stem(".."), "localhost");
        assert_eq!(host_file_stem("h:1"), "h_1");
    }
}
