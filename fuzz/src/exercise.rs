//! What every exporter target does with a space: each writer and the summary, whose
//! only allowed outcome is `Ok` or an I/O error (never a panic, a hang or unbounded
//! memory; libFuzzer's `-timeout` and `-rss_limit_mb` catch the last two).

#![allow(dead_code)] // each target uses part of it

use std::io;
use std::sync::OnceLock;

use profiler_core::xspace::XSpace;
use profiler_core::Profile;
use profiler_analysis::summary::{GroupBy, SortBy, Summary, SummaryOptions};
use profiler_export::{chrome, perfetto};

/// Runs Perfetto, Chrome JSON and the summary (table, JSON, CSV) on `space`, writing
/// to `io::sink()`.
pub fn exporters(space: XSpace) {
    dump(&space);
    let _ = perfetto::write_to(&space, io::sink());
    let _ = chrome::write_to(&space, io::sink());
    if skip_summary(&space) {
        return;
    }
    let profile = Profile::new(space);
    summaries(&profile, &[SummaryOptions::default()]);
}

/// With `PROF_FUZZ_WRITE_XPLANE=<path>`, writes `space` there as `.xplane.pb`: how a
/// crash of the structured target becomes a file every regression test can read.
pub fn dump(space: &XSpace) {
    if let Some(path) = std::env::var_os("PROF_FUZZ_WRITE_XPLANE") {
        std::fs::write(path, profiler_export::xplane::encode(space))
            .expect("write PROF_FUZZ_WRITE_XPLANE");
    }
}

/// With `PROF_FUZZ_SKIP_KNOWN=1`, whether to leave out the summary of `space` because
/// it would hit the known crash (`XLine::event_span_ps` overflowing, see
/// fuzz/README.md) and hide whatever lies past it. Off by default: CI fuzzes
/// everything.
pub fn skip_summary(space: &XSpace) -> bool {
    static SKIP: OnceLock<bool> = OnceLock::new();
    *SKIP.get_or_init(|| std::env::var_os("PROF_FUZZ_SKIP_KNOWN").is_some_and(|v| v == "1"))
        && space.planes.iter().flat_map(|p| &p.lines).any(|l| {
            l.events.iter().any(|e| {
                l.timestamp_ns
                    .saturating_mul(1000)
                    .checked_add(e.offset_ps())
                    .and_then(|s| s.checked_add(e.duration_ps))
                    .is_none()
            })
        })
}

/// Each summary of `profile` rendered three ways.
pub fn summaries(profile: &Profile, options: &[SummaryOptions]) {
    for options in options {
        let summary = Summary::of(profile, options);
        let _ = summary.table();
        let _ = summary.to_json();
        let _ = summary.to_csv();
    }
}

/// The summary options a structured input picks from: every grouping, every column.
pub fn options(pick: u8) -> SummaryOptions {
    const COLUMNS: [SortBy; 7] = [
        SortBy::Name,
        SortBy::Count,
        SortBy::Total,
        SortBy::SelfTime,
        SortBy::Min,
        SortBy::Max,
        SortBy::Mean,
    ];
    let mut options = SummaryOptions::default().sort_by(COLUMNS[usize::from(pick) % 7]);
    if pick & 0x08 != 0 {
        options = options.group_by(GroupBy::Step);
    }
    if pick & 0x10 != 0 {
        options = options.limit(usize::from(pick >> 5));
    }
    options
}
