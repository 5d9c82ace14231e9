//! Inputs the fuzzers once crashed on (fuzz/, run by tests/fuzz/run.sh), and inputs
//! crafted to reach the reader's defences: every file under
//! `fuzz/regressions/<target>/` goes through what its target does, and none may panic.
//! The structured target's crashes are saved as the `.xplane.pb` of the space they
//! built, under `exporters/`. A target with no saved input fails: a replay of nothing
//! would pass whatever the reader did.
//!
//! Tests build with overflow checks, as the fuzz targets do: an arithmetic overflow
//! that release builds would wrap silently fails here.
//!
//! It lives in profiler-analysis because the `exporters` target runs the writers of
//! profiler-export and the summary of this crate, which sits above them.

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use profiler_analysis::summary::{GroupBy, Summary, SummaryOptions};
use profiler_core::xspace::XSpace;
use profiler_core::Profile;
use profiler_export::{chrome, perfetto, xplane};

/// The saved inputs of `target`, sorted by name; at least one.
fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = root.join("fuzz/regressions").join(target);
    let entries = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list the regressions {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression inputs in {}: the replay would check nothing",
        dir.display()
    );
    files
}

/// Runs `check` on every input of `target`, and fails naming each input that panicked
/// (its panic message is printed above the failure).
fn replay(target: &str, check: fn(&[u8])) {
    let mut failed = Vec::new();
    let files = inputs(target);
    for file in &files {
        let bytes = std::fs::read(file).expect("read a regression input");
        if panic::catch_unwind(AssertUnwindSafe(|| check(&bytes))).is_err() {
            failed.push(file.file_name().expect("a file name").to_owned());
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} inputs of {target} panicked: {failed:?}",
        failed.len(),
        files.len()
    );
}

/// The `xplane_decode` target: what decodes encodes again, and its encoding is stable.
/// The same bytes as a file go through the streaming reader too, both ways (whole and
/// with the events left encoded): its defences (lengths checked against their message
/// and the file, varints bounded) are where a file reaches it.
fn xplane_decode(bytes: &[u8]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("input.xplane.pb");
    std::fs::write(&path, bytes).expect("write the input");
    if let Ok(space) = xplane::read(&path) {
        round_trip(&space);
    }
    let _ = xplane::read_lazy(&path, &xplane::ReadLimits::default());
    if let Ok(space) = xplane::decode(bytes) {
        round_trip(&space);
    }
}

/// What decodes encodes again, decodes again, and encodes to the same bytes.
fn round_trip(space: &XSpace) {
    let encoded = xplane::encode(space);
    let again = xplane::decode(&encoded).expect("decode what encode wrote");
    assert!(
        xplane::encode(&again) == encoded,
        "the round trip changed the bytes"
    );
}

/// The `exporters` target: Perfetto, Chrome JSON and the summary in every rendering
/// (grouped by run and by step).
fn exporters(bytes: &[u8]) {
    let Ok(space) = xplane::decode(bytes) else {
        return;
    };
    perfetto::write_to(&space, std::io::sink()).expect("write to a sink");
    chrome::write_to(&space, std::io::sink()).expect("write to a sink");
    let profile = Profile::new(space);
    for options in [
        SummaryOptions::default(),
        SummaryOptions::default().group_by(GroupBy::Step),
    ] {
        let summary = Summary::of(&profile, &options);
        let _ = (summary.table(), summary.to_json(), summary.to_csv());
    }
}

#[test]
fn xplane_decode_regressions_do_not_panic() {
    replay("xplane_decode", xplane_decode);
}

#[test]
fn exporters_regressions_do_not_panic() {
    replay("exporters", exporters);
}
