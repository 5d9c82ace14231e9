//! Peak memory of exporting a 10M-event profile: the exporters stream, so what they
//! add over the profile itself must stay a few megabytes however many events there
//! are. Prints, per format, the growth of the process's peak resident set during the
//! export (Linux: the peak is reset through /proc/self/clear_refs before each).
//!
//! `cargo bench -p profiler-export --bench export_memory`
#![allow(missing_docs, clippy::unwrap_used, clippy::print_stdout)]

use std::time::Instant;

use prof_test_support::spaces;
use profiler_export::formats::{self, ExportFormat};

const EVENTS: usize = 10_000_000;

/// `VmRSS` or `VmHWM` of this process, in KiB.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs `export` and returns (seconds, peak KiB added over the resident set before).
fn measure(export: impl FnOnce()) -> (f64, Option<u64>) {
    // Writing 5 resets the peak (VmHWM) to the current resident set.
    let reset = std::fs::write("/proc/self/clear_refs", "5").is_ok();
    let before = status_kib("VmRSS:");
    let t0 = Instant::now();
    export();
    let secs = t0.elapsed().as_secs_f64();
    let peak = status_kib("VmHWM:");
    let added = match (reset, before, peak) {
        (true, Some(b), Some(p)) => Some(p.saturating_sub(b)),
        _ => None,
    };
    (secs, added)
}

fn main() {
    // `cargo test --benches` runs this with --test-ish flags: only report in bench mode.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let space = spaces::large_space(EVENTS, 4);
    let dir = tempfile::tempdir().unwrap();
    println!(
        "profile of {EVENTS} events in memory: {} MiB resident",
        status_kib("VmRSS:").unwrap_or(0) / 1024
    );
    let formats = [
        ExportFormat::Perfetto,
        ExportFormat::ChromeJson,
        ExportFormat::ChromeJsonGz,
    ];
    for format in formats {
        let path = formats::host_file(dir.path(), "bench", format).unwrap();
        let (secs, added) = measure(|| {
            formats::write(&space, format, &path).unwrap();
        });
        let name = format!("{format} (.{})", formats::extension(format).unwrap());
        let added = added.map_or("n/a (needs Linux /proc)".to_owned(), |k| {
            format!("{:.1} MiB", k as f64 / 1024.0)
        });
        println!(
            "{name:32} {:6.1} ns/event   peak memory added: {added}",
            secs * 1e9 / EVENTS as f64
        );
    }
}
