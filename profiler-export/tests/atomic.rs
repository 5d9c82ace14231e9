//! Atomic writes against hostile directories, and the clean-up an interrupted
//! command-line tool relies on.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

// Held by every test here: `remove_temporaries` is process-wide and would remove
// another test's temporary file in the middle of its write.
use prof_test_support::serial;
use profiler_export::atomic::{remove_temporaries, write_atomic, write_streaming};

/// The name the old writer used for its temporary file: `.NAME.tmp-PID`.
fn predictable_temporary(path: &Path) -> std::path::PathBuf {
    let name = path.file_name().expect("name").to_string_lossy();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

#[cfg(unix)]
#[test]
fn a_link_planted_at_a_temporary_name_is_not_followed() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim");
    fs::write(&victim, b"precious").expect("write victim");
    let path = dir.path().join("host.xplane.pb");
    std::os::unix::fs::symlink(&victim, predictable_temporary(&path)).expect("plant link");

    write_atomic(&path, b"profile").expect("write");

    assert_eq!(fs::read(&victim).expect("victim"), b"precious");
    let meta = fs::symlink_metadata(&path).expect("output");
    assert!(meta.file_type().is_file(), "the output became {meta:?}");
    assert_eq!(fs::read(&path).expect("output"), b"profile");
    // The planted link is left alone, still pointing at the untouched victim.
    let link = fs::symlink_metadata(predictable_temporary(&path)).expect("link");
    assert!(link.file_type().is_symlink());
}

#[cfg(unix)]
#[test]
fn a_link_at_the_destination_is_replaced_not_written_through() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let outside = tempfile::tempdir().expect("tempdir");
    let victim = outside.path().join("victim");
    fs::write(&victim, b"precious").expect("write victim");
    let path = dir.path().join("host.pftrace");
    std::os::unix::fs::symlink(&victim, &path).expect("plant link");

    write_atomic(&path, b"trace").expect("write");

    assert_eq!(fs::read(&victim).expect("victim"), b"precious");
    assert!(fs::symlink_metadata(&path).expect("output").is_file());
}

#[test]
fn an_interrupted_write_leaves_no_temporary_file() {
    let _serial = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.trace.json");
    let err = write_streaming(&path, |out| {
        out.write_all(&[b'x'; 1 << 20])?;
        // What the CLI's Ctrl-C handler does while an exporter is half way through.
        let removed = remove_temporaries();
        assert_eq!(removed.len(), 1, "{removed:?}");
        assert!(removed[0].starts_with(dir.path()), "{removed:?}");
        assert!(!removed[0].exists());
        out.write_all(b"more")?;
        Ok(())
    })
    .expect_err("the temporary file was removed before the rename");
    assert_eq!(err.kind(), io::ErrorKind::NotFound, "{err}");
    let left: Vec<_> = fs::read_dir(dir.path()).expect("list").collect();
    assert!(left.is_empty(), "{left:?}");

    // Finished writes are no longer listed: nothing to remove, the file stays.
    write_atomic(&path, b"done").expect("write");
    assert!(remove_temporaries().is_empty());
    assert_eq!(fs::read(&path).expect("read"), b"done");
}
