//! Peak memory of converting a file, per byte of input: under 4 bytes per byte (it
//! was about 9, the file and the decoded space both held). Measured in a child
//! process, whose peak resident set (`VmHWM`, Linux) starts clean.
#![allow(clippy::print_stdout)] // the child reports to the parent on stdout

mod support;

use std::path::Path;
use std::process::Command;

use profiler_export::{convert, xplane, ExportFormat};

const CHILD: &str = "PROF_MEMORY_TEST_CHILD";

/// `VmRSS` or `VmHWM` of this process, in KiB.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run as the child (the environment names the input): converts it and prints how
/// many KiB the peak grew by.
#[test]
fn child_converts() {
    let Some(input) = std::env::var_os(CHILD) else {
        return;
    };
    let before = status_kib("VmRSS:").expect("VmRSS");
    let out = tempfile::tempdir().expect("tempdir");
    let formats = [ExportFormat::Perfetto];
    convert::convert(Path::new(&input), &formats, Some(out.path())).expect("convert");
    let peak = status_kib("VmHWM:").expect("VmHWM");
    println!("peak-added-kib={}", peak.saturating_sub(before));
}

#[test]
fn converting_takes_less_than_four_times_the_file() {
    if status_kib("VmHWM:").is_none() || std::env::var_os(CHILD).is_some() {
        return; // not Linux, or already the child
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.xplane.pb");
    xplane::write(&path, &support::large_space(400_000, 4)).expect("write");
    let bytes = std::fs::metadata(&path).expect("meta").len();
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "child_converts",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, &path)
        .output()
        .expect("child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kib: u64 = stdout
        .split("peak-added-kib=")
        .nth(1)
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no figure in {stdout}"));
    let per_byte = (kib * 1024) as f64 / bytes as f64;
    println!("{bytes} bytes in, peak grew {kib} KiB: {per_byte:.2} bytes per input byte");
    assert!(per_byte < 4.0, "{per_byte:.2} bytes per input byte");
}
