//! Peak memory of converting a file, per byte of input: under 4 bytes per byte (it
//! was about 9, the file and the decoded space both held), and a few times the file
//! for a line that overlaps itself at every event (it was a hundred). Measured in a
//! child process, whose peak resident set (`VmHWM`, Linux) starts clean.
#![allow(clippy::print_stdout)] // the child reports to the parent on stdout

use std::path::Path;
use std::process::Command;

use prof_test_support::spaces;
use profiler_export::{convert, xplane, ExportFormat};

const CHILD: &str = "PROF_MEMORY_TEST_CHILD";

/// `VmRSS` or `VmHWM` of this process, in KiB.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Not a test of its own, so ignored: [`peak_per_input_byte`] runs it alone in a child
/// process (`--ignored --exact`), with [`CHILD`] naming the input. It converts the input
/// and prints how many KiB the peak grew by.
#[test]
#[ignore = "the child process of the peak-memory tests here, run by them"]
fn child_converts() {
    let input = std::env::var_os(CHILD).unwrap_or_else(|| {
        panic!(
            "not a test: the peak-memory tests run it as their child process, with {CHILD} \
             naming the input"
        )
    });
    let before = status_kib("VmRSS:").expect("VmRSS");
    let out = tempfile::tempdir().expect("tempdir");
    let formats = [ExportFormat::Perfetto];
    convert::convert(Path::new(&input), &formats, Some(out.path())).expect("convert");
    let peak = status_kib("VmHWM:").expect("VmHWM");
    println!("peak-added-kib={}", peak.saturating_sub(before));
}

/// Converts `space`'s file to Perfetto in a child process and returns the bytes its
/// peak resident set grew by per byte of the file; `None` where that cannot be read
/// (not Linux).
fn peak_per_input_byte(space: &profiler_core::xspace::XSpace) -> Option<f64> {
    status_kib("VmHWM:")?;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("big.xplane.pb");
    xplane::write(&path, space).expect("write");
    let bytes = std::fs::metadata(&path).expect("meta").len();
    let out = Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--ignored",
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
    Some(per_byte)
}

#[test]
fn converting_takes_less_than_four_times_the_file() {
    let Some(per_byte) = peak_per_input_byte(&spaces::large_space(400_000, 4)) else {
        return;
    };
    assert!(per_byte < 4.0, "{per_byte:.2} bytes per input byte");
}

/// Every slice on its own lane: the lanes, their open slices and the Perfetto
/// sequence of each took about 1.9 KB per event (a hundred times the file's 18 bytes).
#[test]
fn a_line_that_overlaps_itself_converts_in_a_few_times_the_file() {
    let Some(per_byte) = peak_per_input_byte(&spaces::staircase(300_000)) else {
        return;
    };
    assert!(per_byte < 7.0, "{per_byte:.2} bytes per input byte");
}
