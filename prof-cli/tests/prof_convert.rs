//! The installed `prof-convert` binary: every file of a logdir is tried, a bad one is
//! named and fails the run without stopping the others.

use std::process::Command;

use profiler_core::{session, trace, ProfileOptions};

#[test]
fn a_bad_file_is_named_and_the_rest_still_converts() {
    let dir = tempfile::tempdir().expect("tmp");
    let logdir = dir.path().join("logs");
    session::start(ProfileOptions::default(), None).expect("start");
    for step in 0..3 {
        let _t = trace!("Train", step_num = step);
    }
    let profile =
        profiler_export::write_logdir(&logdir, session::stop().expect("stop")).expect("written");
    let good = profile.files()[0].clone();
    let run = good.parent().expect("run dir");
    let bad = run.join("broken.xplane.pb");
    std::fs::write(&bad, b"\x0a\xff\xff\xff\xff\x0f not a profile").expect("write");

    let out = Command::new(env!("CARGO_BIN_EXE_prof-convert"))
        .arg(&logdir)
        .args(["--format", "perfetto"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("broken.xplane.pb"), "{stderr}");
    assert!(stderr.contains("1 file(s) converted, 1 failed"), "{stderr}");
    let written: Vec<_> = std::fs::read_dir(run)
        .expect("run dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pftrace"))
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");

    let usage = Command::new(env!("CARGO_BIN_EXE_prof-convert"))
        .arg(&logdir)
        .args(["--format", "xplane"])
        .output()
        .expect("runs");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn an_empty_file_converts_with_a_warning_that_the_profile_is_empty() {
    let dir = tempfile::tempdir().expect("tmp");
    let empty = dir.path().join("host.xplane.pb");
    std::fs::write(&empty, b"").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_prof-convert"))
        .arg(&empty)
        .args(["--format", "perfetto"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // An empty file is a valid, empty XSpace: converted, and said to be empty.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(dir.path().join("host.pftrace").is_file());
    assert!(
        stderr.contains("warning") && stderr.contains("host.xplane.pb") && stderr.contains("empty"),
        "{stderr}"
    );
}
