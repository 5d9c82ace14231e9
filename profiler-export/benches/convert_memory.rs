//! Peak memory of converting a `.xplane.pb`, per byte of input: each case is written
//! to a file, then converted in a fresh child process that reports its peak resident
//! set (`VmHWM`) over its resident set before reading (Linux `/proc/self/status`).
//! For comparison, the same for decoding the whole space (`xplane::read`), which
//! conversion no longer does.
//!
//! `cargo bench -p profiler-export --bench convert_memory`
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]

use std::path::Path;
use std::process::Command;

use prof_test_support::spaces;
use profiler_core::xspace::XSpace;
use profiler_export::{convert, xplane, ExportFormat};

const CHILD: &str = "PROF_CONVERT_MEMORY_CHILD";
const DECODE: &str = "PROF_CONVERT_MEMORY_DECODE";

/// `VmRSS` or `VmHWM` of this process, in KiB.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// In the child: converts `path` and prints the KiB its peak grew by.
fn child(path: &Path) {
    let before = status_kib("VmRSS:").unwrap();
    let out = tempfile::tempdir().unwrap();
    if std::env::var_os(DECODE).is_some() {
        std::hint::black_box(xplane::read(path).unwrap());
    } else {
        convert::convert(path, &[ExportFormat::Perfetto], Some(out.path())).unwrap();
    }
    let peak = status_kib("VmHWM:").unwrap();
    println!("{}", peak.saturating_sub(before));
}

fn measure(name: &str, space: &XSpace) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("case.xplane.pb");
    xplane::write(&path, space).unwrap();
    let bytes = std::fs::metadata(&path).unwrap().len();
    for (what, decode) in [("convert", false), ("decode all", true)] {
        let mut child = Command::new(std::env::current_exe().unwrap());
        child.env(CHILD, &path);
        if decode {
            child.env(DECODE, "1");
        }
        let out = child.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let kib: u64 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        println!(
            "{name:34} {what:10} input {:6.1} MiB  peak added {:6.1} MiB  {:5.2} B/input B",
            bytes as f64 / (1 << 20) as f64,
            kib as f64 / 1024.0,
            kib as f64 * 1024.0 / bytes as f64
        );
    }
}

/// `n` events on one line, in reverse order: the walk sorts them.
fn one_unsorted_line(n: usize) -> XSpace {
    let mut space = spaces::large_space(n, 1);
    space.planes[0].lines[0].events.reverse();
    space
}

/// `n` host names of a few letters each.
fn hostnames(n: usize) -> XSpace {
    let mut space = spaces::space();
    space.hostnames = (0..n).map(|i| format!("h{i}")).collect();
    space
}

fn main() {
    if let Some(path) = std::env::var_os(CHILD) {
        child(Path::new(&path));
        return;
    }
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    measure(
        "4M events, half with a stat",
        &spaces::large_space(4_000_000, 4),
    );
    measure(
        "4M events on one unsorted line",
        &one_unsorted_line(4_000_000),
    );
    measure("1M host names", &hostnames(1_000_000));
    // Every event on a lane of its own: each lane used to cost about 1.9 KB.
    measure(
        "1M events overlapping without nesting",
        &spaces::staircase(1_000_000),
    );
}
