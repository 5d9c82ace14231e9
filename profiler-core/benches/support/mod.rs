//! Helpers shared by the benchmarks: batched timing and the ratio table.
#![allow(dead_code, unreachable_pub, clippy::print_stdout)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use profiler_core::{session, ProfileOptions};

mod interleaved;
#[allow(unused_imports)] // not every bench interleaves
pub use interleaved::{interleaved, Case, Cmp};

/// Spans timed per batch; each system gets the same batch size.
pub const BATCH: u64 = 4096;
/// prof restarts its session (untimed) before a session would hold more records.
pub const SESSION_RECORDS: u64 = 1 << 20;

/// How long `run` takes over `n` items.
pub fn timed(n: u64, run: impl FnOnce(u64)) -> Duration {
    let t0 = Instant::now();
    run(n);
    t0.elapsed()
}

/// Times `run` over `iters` items in batches, with untimed `setup`/`teardown` around
/// each batch.
pub fn batched<S>(
    iters: u64,
    mut setup: impl FnMut() -> S,
    mut run: impl FnMut(u64),
    mut teardown: impl FnMut(S),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        let state = setup();
        let t0 = Instant::now();
        run(n);
        total += t0.elapsed();
        teardown(state);
        left -= n;
    }
    total
}

/// A prof session kept open across batches, restarted untimed when it fills up, so
/// buffer growth is billed the way a long session pays it.
pub struct LongSession {
    recorded: u64,
    options: ProfileOptions,
}

impl LongSession {
    pub fn start(options: ProfileOptions) -> LongSession {
        let options = options.max_events(SESSION_RECORDS + 4 * BATCH);
        session::start(options.clone(), None).expect("start");
        LongSession {
            recorded: 0,
            options,
        }
    }

    /// Makes room for `records` more records.
    pub fn reserve(&mut self, records: u64) {
        if self.recorded + records > SESSION_RECORDS {
            session::stop().expect("stop");
            session::start(self.options.clone(), None).expect("start");
            self.recorded = 0;
        }
        self.recorded += records;
    }
}

impl Drop for LongSession {
    fn drop(&mut self) {
        let _ = session::stop();
    }
}

fn estimate_ns(group: &str, id: &str) -> Option<f64> {
    // Criterion writes under the workspace's target directory: the benching crate's
    // own directory for the root package, its parent for a member crate.
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            [manifest.join("target"), manifest.join("../target")]
                .into_iter()
                .find(|t| t.join("criterion").is_dir())
        })?;
    let path = target
        .join("criterion")
        .join(group)
        .join(id)
        .join("new/estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    // The slope is what criterion reports as `time` for linear sampling.
    let key = if text.contains("\"slope\":{") {
        "\"slope\""
    } else {
        "\"mean\""
    };
    let estimate = &text[text.find(key)?..];
    let at = estimate.find("\"point_estimate\":")? + "\"point_estimate\":".len();
    let rest = &estimate[at..];
    let end = rest.find([',', '}'])?;
    rest[..end].trim().parse().ok()
}

/// A row of the ratio table: a case, and how its cost is shown.
pub enum Row<'a> {
    /// The case's cost, divided by another case's when given.
    Plain(&'a str, Option<&'a str>),
    /// What the case adds over `base`, divided by what `other` adds over `base`
    /// (or by `base` itself when `other` is `None`).
    Added {
        case: &'a str,
        base: &'a str,
        other: Option<&'a str>,
    },
}

/// Prints this run's estimates of `group` as one table.
pub fn print_table(group: &str, rows: &[Row<'_>]) {
    println!("\n{group}: cost per span (this run)");
    println!("| case | ns/span | ratio |");
    println!("|---|---:|---|");
    for row in rows {
        match row {
            Row::Plain(id, reference) => {
                let Some(ns) = estimate_ns(group, id) else {
                    continue;
                };
                let ratio = reference
                    .and_then(|r| {
                        estimate_ns(group, r).map(|base| format!("{:.2}× {r}", ns / base))
                    })
                    .unwrap_or_default();
                println!("| {id} | {ns:.2} | {ratio} |");
            }
            Row::Added { case, base, other } => {
                let (Some(ns), Some(base_ns)) =
                    (estimate_ns(group, case), estimate_ns(group, base))
                else {
                    continue;
                };
                let added = ns - base_ns;
                let ratio = match other {
                    Some(o) => estimate_ns(group, o)
                        .map(|o_ns| format!("adds {:.2}× what {o} adds", added / (o_ns - base_ns)))
                        .unwrap_or_default(),
                    None => format!("adds {:.2}× {base}", added / base_ns),
                };
                println!("| {case} | {ns:.2} (+{added:.2}) | {ratio} |");
            }
        }
    }
}
