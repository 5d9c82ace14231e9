//! Summary tables: per-name aggregates of a profile, as MXNet's `dumps()` with
//! `aggregate_stats` and torch's `key_averages().table()` print them.
//!
//! ```
//! use profiler_analysis::summary::{SortBy, SummaryOptions};
//! use profiler_analysis::ProfileAnalysis;
//! use profiler_core::{session, trace, ProfileOptions};
//!
//! session::start(ProfileOptions::default(), None)?;
//! for step in 0..3 {
//!     let _s = trace!("Train", step_num = step);
//!     let _f = trace!("forward");
//! }
//! let profile = session::stop()?;
//! let summary = profile.summary(&SummaryOptions::default().sort_by(SortBy::Count));
//! let forward = summary.row("forward").expect("forward was recorded");
//! assert_eq!(forward.count, 3);
//! assert!(forward.total_ns <= summary.row("Train").unwrap().total_ns);
//! println!("{summary}"); // an aligned table
//! # Ok::<(), profiler_core::Error>(())
//! ```
//!
//! Every plane but the task environment counts, so device kernels sit beside host
//! annotations; the profiler's own lines (counters, pauses, async task lifetimes) do
//! not. Self time is an event's duration minus that of the events nested directly
//! inside it on the same line.
//!
//! Where the profile holds XProf memory events (a `TrackingAllocator`'s, the GPU
//! tracer's, TensorFlow's or JAX's allocators), the summary also gives each
//! allocator's peak ([`Summary::memory`]), its peak in each step
//! ([`StepRow::peak_memory`]) and, per op, the bytes held at that peak and the highest
//! bytes in use while the op allocated ([`Summary::memory_by_op`]).
//!
//! Where the profile holds sampled native stacks (`host_sampling_hz`), the summary ends
//! with the hot functions ([`Summary::functions`]): the top functions by self and by
//! total samples, over every sample and within each of the annotations with the most
//! samples ([`crate::functions`]).

mod memory;
mod render;

pub use memory::{MemoryByOp, MemoryPeak};

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use profiler_core::schema;
use profiler_core::{Error, ErrorKind, Profile, Result};

use crate::flat::{flatten, run_length, step_spans, StepSpan};
use crate::functions::{FunctionOptions, Functions};

/// A column to sort a summary by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SortBy {
    /// Name, ascending.
    Name,
    /// Number of events, descending.
    Count,
    /// Total duration, descending.
    Total,
    /// Self duration, descending.
    SelfTime,
    /// Shortest event, descending.
    Min,
    /// Longest event, descending.
    Max,
    /// Mean duration, descending.
    Mean,
}

impl std::str::FromStr for SortBy {
    type Err = Error;

    fn from_str(s: &str) -> Result<SortBy> {
        Ok(match s {
            "name" => SortBy::Name,
            "count" => SortBy::Count,
            "total" => SortBy::Total,
            "self" => SortBy::SelfTime,
            "min" => SortBy::Min,
            "max" => SortBy::Max,
            "mean" => SortBy::Mean,
            other => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "unknown summary column {other:?}; use one of name, count, total, self, min, max, mean"
                    ),
                ))
            }
        })
    }
}

/// How rows are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum GroupBy {
    /// One row per name over the whole run.
    #[default]
    Run,
    /// One row per step and name; events outside every step form a group of their own.
    Step,
}

/// What a summary shows: sorting, grouping and how many rows.
#[derive(Clone, Debug)]
pub struct SummaryOptions {
    /// Column to sort by (default: total time).
    pub sort_by: SortBy,
    /// Rows kept per group, the first after sorting; `None` keeps all.
    pub limit: Option<usize>,
    /// Grouping (default: the whole run).
    pub group_by: GroupBy,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            sort_by: SortBy::Total,
            limit: None,
            group_by: GroupBy::Run,
        }
    }
}

impl SummaryOptions {
    /// Sorts by `column`.
    pub fn sort_by(mut self, column: SortBy) -> Self {
        self.sort_by = column;
        self
    }

    /// Keeps the first `rows` rows of each group.
    pub fn limit(mut self, rows: usize) -> Self {
        self.limit = Some(rows);
        self
    }

    /// Groups rows by `group`.
    pub fn group_by(mut self, group: GroupBy) -> Self {
        self.group_by = group;
        self
    }
}

/// Aggregates of the events sharing one name (in one step, when grouped by step).
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryRow {
    /// The step, when grouped by step; `None` for events outside every step, and for
    /// every row of a summary over the whole run.
    pub step: Option<i64>,
    /// Event name.
    pub name: String,
    /// Number of events, those [cut](SummaryRow::cut) included.
    pub count: u64,
    /// Of those, events the session's start or stop cut (a call still running when
    /// the session stopped): their recorded part counts in `total_ns` and `self_ns`,
    /// but they are left out of `min_ns`, `max_ns` and the mean, which are of whole
    /// calls.
    pub cut: u64,
    /// The recorded time of the cut events, ns (part of `total_ns`).
    pub cut_ns: u64,
    /// Sum of durations, ns.
    pub total_ns: u64,
    /// Sum of durations minus directly nested events, ns.
    pub self_ns: u64,
    /// Shortest whole event, ns (0 when every one was cut).
    pub min_ns: u64,
    /// Longest whole event, ns (0 when every one was cut).
    pub max_ns: u64,
    /// Share of the step time (of the whole run's steps, or of this row's step) spent
    /// in these events; of the profile's duration when it recorded no steps. May pass
    /// 1.0 when events overlap (several threads, nesting of the same name).
    pub share: f64,
}

impl SummaryRow {
    /// Mean duration of the whole events, ns (0 when every one was cut).
    pub fn mean_ns(&self) -> f64 {
        let whole = self.count - self.cut;
        if whole == 0 {
            return 0.0;
        }
        self.total_ns.saturating_sub(self.cut_ns) as f64 / whole as f64
    }
}

/// One training step: its duration and, when memory was tracked, the peak of each
/// allocator's memory in use during it.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRow {
    /// Step number.
    pub step: i64,
    /// Duration, ns (the longest step event of that number).
    pub duration_ns: u64,
    /// Highest host memory in use during the step (the `host` allocator's memory
    /// events, or else the `host_bytes_in_use` counter), if any was recorded.
    pub peak_host_bytes: Option<f64>,
    /// Per allocator (`host`, `GPU_0`, ...), the highest bytes in use at its memory
    /// events during the step.
    pub peak_memory: BTreeMap<String, u64>,
}

/// A profile's summary: rows sorted and limited as asked, plus its steps and memory.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    rows: Vec<SummaryRow>,
    steps: Vec<StepRow>,
    memory: Vec<MemoryPeak>,
    memory_by_op: Vec<MemoryByOp>,
    functions: Option<Functions>,
    options_group: GroupBy,
    limit: Option<usize>,
    /// What a reader of the profile's files should know (a `.xplane.pb` cut to open in
    /// XProf), one line each.
    notes: Vec<String>,
}

impl Summary {
    /// Summarises `profile`.
    pub fn of(profile: &Profile, options: &SummaryOptions) -> Summary {
        Summary::of_all(&[profile], options)
    }

    /// Summarises several profiles as one (the hosts of a multi-node capture): rows
    /// aggregate each name over all of them, and shares are of the steps (or runs) of
    /// all of them together. Each profile's events stay on their own time axis, so
    /// hosts with unrelated clocks mix correctly.
    pub fn of_all(profiles: &[&Profile], options: &SummaryOptions) -> Summary {
        let mut events = Vec::new();
        let mut steps = Vec::new();
        let mut run_denominator = 0;
        let mut step_rows = BTreeMap::new();
        for profile in profiles {
            let mine = flatten(profile);
            let my_steps = step_spans(&mine);
            run_denominator += if my_steps.is_empty() {
                run_length(profile, &mine)
            } else {
                my_steps.iter().map(|s| s.end - s.start).sum()
            };
            add_step_rows(&my_steps, profile, &mut step_rows);
            events.push(mine);
            steps.push(my_steps);
        }
        let spans: Vec<Vec<(i64, u64, u64)>> = steps
            .iter()
            .map(|s| s.iter().map(|s| (s.step, s.start, s.end)).collect())
            .collect();
        let memory = memory::Memory::of(profiles, &spans);
        for (step, peaks) in memory.step_peaks {
            if let Some(row) = step_rows.get_mut(&step) {
                if let Some(&host) = peaks.get(schema::HOST_ALLOCATOR) {
                    row.peak_host_bytes = Some(host as f64);
                }
                row.peak_memory = peaks;
            }
        }

        let mut groups: HashMap<(Option<i64>, &str), SummaryRow> = HashMap::new();
        for (e, steps) in events
            .iter()
            .zip(&steps)
            .flat_map(|(events, steps)| events.iter().map(move |e| (e, steps)))
        {
            let step = match options.group_by {
                GroupBy::Run => None,
                GroupBy::Step => steps
                    .iter()
                    .find(|s| s.start <= e.start && e.start < s.end.max(s.start + 1))
                    .map(|s| s.step),
            };
            let dur = e.end - e.start;
            let row = groups.entry((step, e.name)).or_insert_with(|| SummaryRow {
                step,
                name: e.name.to_owned(),
                count: 0,
                cut: 0,
                cut_ns: 0,
                total_ns: 0,
                self_ns: 0,
                min_ns: u64::MAX,
                max_ns: 0,
                share: 0.0,
            });
            // Saturating: a file from another producer may hold events of any length.
            row.count += 1;
            row.total_ns = row.total_ns.saturating_add(dur);
            row.self_ns = row.self_ns.saturating_add(e.self_ns);
            if e.cut {
                // A call the session cut is as long as the part recorded: no
                // measure of how long the call takes.
                row.cut += 1;
                row.cut_ns = row.cut_ns.saturating_add(dur);
            } else {
                row.min_ns = row.min_ns.min(dur);
                row.max_ns = row.max_ns.max(dur);
            }
        }
        let mut rows: Vec<SummaryRow> = groups.into_values().collect();
        for row in &mut rows {
            if row.min_ns == u64::MAX {
                row.min_ns = 0;
            }
            let denominator = match row.step {
                Some(n) if options.group_by == GroupBy::Step => steps
                    .iter()
                    .flatten()
                    .filter(|s| s.step == n)
                    .map(|s| s.end - s.start)
                    .sum(),
                _ => run_denominator,
            };
            row.share = if denominator == 0 {
                0.0
            } else {
                row.total_ns as f64 / denominator as f64
            };
        }
        rows.sort_by(|a, b| {
            // Groups in step order (steps first, then events outside steps).
            let group = |r: &SummaryRow| (r.step.is_none(), r.step);
            group(a)
                .cmp(&group(b))
                .then_with(|| compare(a, b, options.sort_by))
                .then_with(|| a.name.cmp(&b.name))
        });
        if let Some(limit) = options.limit {
            let mut kept = Vec::with_capacity(rows.len());
            let mut in_group = 0;
            let mut last = None;
            for row in rows {
                if Some(row.step) != last {
                    last = Some(row.step);
                    in_group = 0;
                }
                if in_group < limit {
                    kept.push(row);
                }
                in_group += 1;
            }
            rows = kept;
        }
        let mut notes: Vec<String> = profiles
            .iter()
            .filter_map(|p| {
                let note = profiler_export::fit::note_of(p.xspace())?;
                Some(if profiles.len() > 1 {
                    format!("{}: {note}", p.host_name())
                } else {
                    note
                })
            })
            .collect();
        // As many functions a list as rows a group (ten when every row is kept: a
        // program's functions run to thousands).
        let functions = Functions::of_all(
            profiles,
            &FunctionOptions {
                rows: options.limit.unwrap_or(FunctionOptions::default().rows),
                ..FunctionOptions::default()
            },
            &mut notes,
        );
        Summary {
            rows,
            steps: step_rows.into_values().collect(),
            memory: memory.peaks,
            memory_by_op: memory.by_op,
            functions,
            options_group: options.group_by,
            limit: options.limit,
            notes,
        }
    }

    /// Each allocator's peak over the profile, by allocator name.
    pub fn memory(&self) -> &[MemoryPeak] {
        &self.memory
    }

    /// Per allocator and op, what the op held at the allocator's peak and the highest
    /// bytes in use at its memory events; most held first within each allocator.
    pub fn memory_by_op(&self) -> &[MemoryByOp] {
        &self.memory_by_op
    }

    /// The hot functions of the profile's sampled native stacks, when it has some:
    /// the first functions by self and by total samples, overall and within each of
    /// the annotations with the most samples, as many a list as
    /// [`SummaryOptions::limit`] keeps rows (10 when it keeps all).
    pub fn functions(&self) -> Option<&Functions> {
        self.functions.as_ref()
    }

    /// What a reader of the profile's files should know, one line each: a `.xplane.pb`
    /// that left out its earliest events to open in XProf, and where they all are
    /// ([`profiler_export::fit`]). The table and the JSON end with them.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The rows, sorted and limited as asked.
    pub fn rows(&self) -> &[SummaryRow] {
        &self.rows
    }

    /// The first row named `name` (of the whole run, or of the first group holding it).
    pub fn row(&self, name: &str) -> Option<&SummaryRow> {
        self.rows.iter().find(|r| r.name == name)
    }

    /// The steps recorded, in step order.
    pub fn steps(&self) -> &[StepRow] {
        &self.steps
    }

    /// What [`SummaryRow::share`] is a share of: `"step"` when steps were recorded,
    /// `"run"` otherwise.
    pub fn share_of(&self) -> &'static str {
        if self.steps.is_empty() {
            "run"
        } else {
            "step"
        }
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.table())
    }
}

fn compare(a: &SummaryRow, b: &SummaryRow, by: SortBy) -> std::cmp::Ordering {
    match by {
        SortBy::Name => a.name.cmp(&b.name),
        SortBy::Count => b.count.cmp(&a.count),
        SortBy::Total => b.total_ns.cmp(&a.total_ns),
        SortBy::SelfTime => b.self_ns.cmp(&a.self_ns),
        SortBy::Min => b.min_ns.cmp(&a.min_ns),
        SortBy::Max => b.max_ns.cmp(&a.max_ns),
        SortBy::Mean => b.mean_ns().total_cmp(&a.mean_ns()),
    }
}

/// Adds a row per step of `profile` to `rows`.
fn add_step_rows(steps: &[StepSpan], profile: &Profile, rows: &mut BTreeMap<i64, StepRow>) {
    let mut memory = profile.counter_series(schema::HOST_BYTES_IN_USE);
    memory.sort_by_key(|&(at, _)| at);
    // A step number can have several spans (threads, hosts, or annotation and span
    // both): its row keeps the longest and the highest peak of any.
    for s in steps {
        let from = memory.partition_point(|&(at, _)| at < s.start);
        let to = memory.partition_point(|&(at, _)| at <= s.end);
        let peak = memory[from..to.max(from)]
            .iter()
            .map(|&(_, v)| v)
            .reduce(f64::max);
        let row = rows.entry(s.step).or_insert(StepRow {
            step: s.step,
            duration_ns: 0,
            peak_host_bytes: None,
            peak_memory: BTreeMap::new(),
        });
        row.duration_ns = row.duration_ns.max(s.end - s.start);
        row.peak_host_bytes = match (row.peak_host_bytes, peak) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }
}
