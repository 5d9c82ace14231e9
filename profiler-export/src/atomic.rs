//! Atomic file writes: a temporary file in the same directory, then a rename.

use std::fs;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

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
    let tmp = temporary_path(path)?;
    let result = (|| {
        let mut out = BufWriter::with_capacity(1 << 16, fs::File::create(&tmp)?);
        let value = write(&mut out)?;
        let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        Ok(value)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// `.name.tmp-<pid>` beside `path`: hidden, and distinct per process.
fn temporary_path(path: &Path) -> io::Result<PathBuf> {
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "path has no file name"))?;
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    Ok(dir.join(tmp_name))
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
    }

    #[test]
    fn failure_names_the_io_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocker = dir.path().join("file");
        fs::write(&blocker, b"x").expect("write");
        let err = write_atomic(&blocker.join("a.pb"), b"x").expect_err("parent is a file");
        assert_eq!(err.kind(), io::ErrorKind::NotADirectory);
    }
}
