//! Atomic file writes: a temporary file in the same directory, then a rename.
//!
//! The temporary file is created exclusively (`O_CREAT | O_EXCL`) under an
//! unpredictable name (`.<name>.<random>.tmp`, from the `tempfile` crate): a file or a
//! symbolic link planted at a guessable name is never opened, followed or overwritten.
//! The rename replaces a link at the destination itself rather than writing through it.
//!
//! Every temporary file this process has open is listed in a small registry (one entry
//! per file being written, not per event), so that a command-line tool interrupted by
//! Ctrl-C can remove them with [`remove_temporaries`] before it exits instead of
//! leaving a hidden, possibly huge, half-written file behind.

use std::ffi::OsString;
use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

use tempfile::{Builder, TempPath};

/// Writes `bytes` to `path` atomically: readers see the old file or the whole new one.
///
/// # Errors
/// The I/O error of creating, writing, syncing or renaming the temporary file; the
/// temporary file is removed on failure.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_streaming(path, |out| out.write_all(bytes))
}

/// Streams a file into place atomically: `write` fills a buffered temporary file in
/// the same directory, which is renamed to `path` once complete. Exporters use it so
/// that a large trace never has to be built in memory.
///
/// # Errors
/// The error of `write`, or of creating, syncing or renaming the temporary file; the
/// temporary file is removed on failure.
pub fn write_streaming<T>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<fs::File>) -> io::Result<T>,
) -> io::Result<T> {
    let (file, tmp) = create_temporary(path)?;
    // Dropping `tmp` on any early return removes the file and its registry entry.
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let value = write(&mut out)?;
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    drop(file);
    tmp.persist(path)?;
    Ok(value)
}

/// Removes every temporary file this process is writing right now, and returns their
/// paths. Meant for a command-line tool's interrupt handler (a `ctrlc`-style handler
/// thread) just before it exits: the writes in progress then fail or leave nothing.
///
/// It takes a lock and calls `unlink`, so it is not async-signal-safe: call it from a
/// thread, not from inside a signal handler.
pub fn remove_temporaries() -> Vec<PathBuf> {
    let live = std::mem::take(&mut *registry());
    // A file already gone (renamed into place a moment ago) is not an error here.
    live.into_iter()
        .filter(|p| fs::remove_file(p).is_ok())
        .collect()
}

/// Paths of the temporary files being written (normally none, or one per exporter
/// running).
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<PathBuf>> {
    // The list stays consistent whatever panicked while holding it.
    LIVE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A temporary file listed in the registry for as long as it exists under its
/// temporary name.
struct Temporary {
    path: Option<TempPath>,
}

impl Temporary {
    /// Renames the file to `dest` (replacing it, and never following a link there).
    fn persist(mut self, dest: &Path) -> io::Result<()> {
        let Some(path) = self.path.take() else {
            return Err(io::Error::other("temporary file already persisted"));
        };
        unregister(&path);
        // On failure the returned TempPath is dropped here, which removes the file.
        path.persist(dest).map_err(|e| e.error)
    }
}

impl Drop for Temporary {
    fn drop(&mut self) {
        if let Some(path) = self.path.take() {
            unregister(&path);
            // TempPath's own drop removes the file.
        }
    }
}

fn unregister(path: &Path) {
    let mut live = registry();
    if let Some(i) = live.iter().position(|p| p == path) {
        live.swap_remove(i);
    }
}

/// Creates `.<name>.<random>.tmp` beside `path`, exclusively, with the permissions
/// `File::create` would give (0666 less the umask) rather than tempfile's 0600: the
/// result is read by other users' TensorBoard and trace viewers.
fn create_temporary(path: &Path) -> io::Result<(fs::File, Temporary)> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let mut prefix = OsString::from(".");
    prefix.push(name);
    prefix.push(".");
    let mut builder = Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(fs::Permissions::from_mode(0o666));
    }
    // Hold the lock across creation so that an interrupt between creating the file
    // and listing it cannot miss it.
    let mut live = registry();
    let (file, tmp) = builder.tempfile_in(dir)?.into_parts();
    live.push(tmp.to_path_buf());
    Ok((file, Temporary { path: Some(tmp) }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_whole_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.xplane.pb");
        write_atomic(&path, b"first").expect("write");
        write_atomic(&path, b"second").expect("overwrite");
        assert_eq!(fs::read(&path).expect("read"), b"second");
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from("a.xplane.pb")]);
        assert!(!registry().iter().any(|p| p.starts_with(dir.path())));
    }

    #[test]
    fn a_failed_stream_leaves_neither_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.pftrace");
        let err = write_streaming(&path, |out| {
            out.write_all(b"partial")?;
            Err::<(), _>(io::Error::other("visitor failed"))
        })
        .expect_err("fails");
        assert_eq!(err.to_string(), "visitor failed");
        assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 0);
        assert!(!registry().iter().any(|p| p.starts_with(dir.path())));
    }

    #[test]
    fn failure_names_the_io_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"x").expect("write");
        let err = write_atomic(&blocker.join("a.pb"), b"x").expect_err("parent is a file");
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
    }

    #[test]
    fn the_temporary_is_hidden_beside_the_target_and_listed_while_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("h.pftrace");
        let seen = write_streaming(&path, |_| {
            let live: Vec<_> = registry()
                .iter()
                .filter(|p| p.starts_with(dir.path()))
                .cloned()
                .collect();
            Ok(live)
        })
        .expect("write");
        assert_eq!(seen.len(), 1, "{seen:?}");
        let name = seen[0].file_name().expect("name").to_string_lossy();
        assert!(
            name.starts_with(".h.pftrace.") && name.ends_with(".tmp"),
            "{name}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn output_is_readable_as_a_created_file_would_be() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let made = dir.path().join("made");
        fs::File::create(&made).expect("create");
        let path = dir.path().join("a.pftrace");
        write_atomic(&path, b"x").expect("write");
        let mode = |p: &Path| fs::metadata(p).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&made));
    }
}
