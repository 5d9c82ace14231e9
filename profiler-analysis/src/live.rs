//! The live view's numbers: what a running job did over its last seconds (step times,
//! the share of each step spent waiting for input, the ops with the most self time),
//! from the snapshots of a flight recorder, as `prof-top`, the `prof.live.v1.Live`
//! stream and TensorFlow's `Monitor` call show them.
//!
//! ```
//! use profiler_analysis::live::{Live, LiveOptions};
//! use profiler_core::flight_recorder::{self, FlightRecorder};
//! use profiler_core::{session, trace, ProfileOptions};
//!
//! flight_recorder::start(ProfileOptions::default(), FlightRecorder::new(4096))?;
//! for step in 0..10 {
//!     let _s = trace!("Train", step_num = step);
//!     let _i = trace!("load_batch");
//! }
//! let mut live = Live::new(LiveOptions::default());
//! let view = live.update(&flight_recorder::snapshot()?);
//! assert_eq!(view.step, Some(9));
//! assert_eq!(view.steps.len(), 10);
//! assert!(view.input.is_some()); // load_batch is input
//! session::stop()?;
//! # Ok::<(), profiler_core::Error>(())
//! ```
//!
//! Events are read as the [summary](crate::summary) reads them (the same flattening,
//! self time and step roots), so a live view and a summary of the same events agree.
//!
//! Everything here is bounded whatever the job does: at most
//! [`LiveOptions::max_ops`] op names (the rest summed as [`OTHER`]), and a ring of the
//! last [`LiveOptions::steps`] steps.
//!
//! # What counts as input
//!
//! TensorFlow's "infeed %" is the share of a step spent waiting for the input
//! pipeline. Here an annotation counts as input when its name, in lower case,
//! contains one of [`INPUT_WORDS`] (`load_batch`, `input/decode`,
//! `DataLoader::next`, `Iterator::GetNext`, ...). Each step's input time is the time
//! of the input annotations that started within it and are not nested in another
//! input annotation on their line, at most the step's length.

use std::collections::{HashMap, VecDeque};

use profiler_core::Profile;

use crate::flat::{flatten, Flat};

/// The name of the row that sums the ops beyond [`LiveOptions::max_ops`].
pub const OTHER: &str = "other";

/// Words that make an annotation input, matched in its lower-cased name (see the
/// [module documentation](self)).
pub const INPUT_WORDS: &[&str] = &[
    "infeed",
    "input",
    "load_batch",
    "dataloader",
    "data_loader",
    "next_batch",
    "prefetch",
    "iterator",
];

/// Whether an annotation named `name` counts as input.
pub fn is_input(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    INPUT_WORDS.iter().any(|w| lower.contains(w))
}

/// How much a live view keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveOptions {
    /// Op names kept, by self time; the rest are summed as [`OTHER`] (default 16).
    pub max_ops: usize,
    /// Steps kept in the ring (default 120).
    pub steps: usize,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            max_ops: 16,
            steps: 120,
        }
    }
}

/// One finished step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Step number.
    pub step: i64,
    /// When it ended, ns since the Unix epoch (for a profile that carries its wall
    /// time, as prof's do; else on the profile's own time axis).
    pub end_ns: u64,
    /// How long it took, ns.
    pub duration_ns: u64,
    /// Of that, the time in input annotations, ns.
    pub input_ns: u64,
}

/// Step times over the steps of a window, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepTimes {
    /// The latest step's.
    pub last_ns: u64,
    /// Mean.
    pub avg_ns: f64,
    /// Shortest.
    pub min_ns: u64,
    /// Median (nearest rank).
    pub p50_ns: u64,
    /// 90th percentile (nearest rank).
    pub p90_ns: u64,
    /// Longest.
    pub max_ns: u64,
}

/// The share of step time spent in input, over the steps of a window, in percent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputShare {
    /// Of all the steps' time together.
    pub avg_percent: f64,
    /// The least of any step.
    pub min_percent: f64,
    /// The most of any step.
    pub max_percent: f64,
}

/// An op's time over a window: the events of one name.
#[derive(Clone, Debug, PartialEq)]
pub struct OpRow {
    /// Event name, or [`OTHER`].
    pub name: String,
    /// Self time, ns.
    pub self_ns: u64,
    /// Self time as a share of the window's step time (of the window when it has no
    /// steps), 0 to 1 (more where threads overlap).
    pub share: f64,
    /// Number of events.
    pub count: u64,
}

/// What a live view shows: one update.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct LiveView {
    /// The latest finished step's number.
    pub step: Option<i64>,
    /// The last steps, oldest first (the ring: at most [`LiveOptions::steps`]).
    pub steps: Vec<Step>,
    /// Step times over the steps of this update's window.
    pub step_times: Option<StepTimes>,
    /// Steps finished per second over the window.
    pub steps_per_second: f64,
    /// The share of step time in input annotations.
    pub input: Option<InputShare>,
    /// The ops with the most self time, most first, then [`OTHER`] when some were
    /// left out.
    pub ops: Vec<OpRow>,
    /// How long the window is, ns.
    pub window_ns: u64,
    /// Events in the window.
    pub events: u64,
}

/// A live view's state between updates: the ring of steps.
#[derive(Clone, Debug)]
pub struct Live {
    options: LiveOptions,
    ring: VecDeque<Step>,
}

impl Live {
    /// An empty view.
    pub fn new(options: LiveOptions) -> Live {
        Live {
            options,
            ring: VecDeque::with_capacity(options.steps),
        }
    }

    /// The view after `snapshot` (a flight recorder's snapshot, or any profile): its
    /// whole span is the window.
    pub fn update(&mut self, snapshot: &Profile) -> LiveView {
        self.update_since(snapshot, 0)
    }

    /// The view after `snapshot`, its window the events that ended at or after
    /// `since_ns` (ns since the Unix epoch).
    pub fn update_since(&mut self, snapshot: &Profile, since_ns: u64) -> LiveView {
        let mut events = flatten(snapshot);
        let wall = snapshot.wall_time_ns();
        // prof's own profiles time events from the session's start; others' files
        // may hold Unix times already.
        let base = match wall {
            Some((start, _)) if events.iter().all(|e| e.end < start) => start,
            _ => 0,
        };
        for e in &mut events {
            e.start += base;
            e.end += base;
        }
        // A step that ended in the window keeps its input time from before it.
        let steps: Vec<Step> = steps_of(&events)
            .into_iter()
            .filter(|s| s.end_ns >= since_ns)
            .collect();
        events.retain(|e| e.end >= since_ns);
        let (from, to) = span(wall, &events, since_ns);
        for s in &steps {
            self.remember(*s);
        }
        let step_time: u64 = steps.iter().map(|s| s.duration_ns).sum();
        let denominator = if step_time > 0 { step_time } else { to - from };
        let window_ns = to - from;
        LiveView {
            step: self.ring.back().map(|s| s.step),
            steps: self.ring.iter().copied().collect(),
            step_times: step_times(&steps),
            steps_per_second: if window_ns == 0 {
                0.0
            } else {
                steps.len() as f64 * 1e9 / window_ns as f64
            },
            input: input_share(&steps),
            ops: ops(&events, denominator, self.options.max_ops),
            window_ns,
            events: events.len() as u64,
        }
    }

    /// Puts `step` in the ring (in step order), or updates the one of its number.
    fn remember(&mut self, step: Step) {
        if let Some(known) = self.ring.iter_mut().find(|s| s.step == step.step) {
            *known = step;
            return;
        }
        if self.ring.back().is_some_and(|last| last.step > step.step) {
            // An older step seen late: too old for the ring if it is full.
            let at = self.ring.partition_point(|s| s.step < step.step);
            if at == 0 && self.ring.len() >= self.options.steps {
                return;
            }
            self.ring.insert(at, step);
        } else {
            self.ring.push_back(step);
        }
        while self.ring.len() > self.options.steps {
            self.ring.pop_front();
        }
    }
}

/// The window's span: from `since_ns` (or the snapshot's start) to its end.
fn span(wall: Option<(u64, u64)>, events: &[Flat<'_>], since_ns: u64) -> (u64, u64) {
    let (start, stop) = wall.unwrap_or_else(|| {
        (
            events.iter().map(|e| e.start).min().unwrap_or(0),
            events.iter().map(|e| e.end).max().unwrap_or(0),
        )
    });
    let from = start.max(since_ns);
    (from.min(stop), stop)
}

/// The whole steps among `events` (a step the snapshot cut is still running), each
/// with its input time, in step order; a step number seen on several lines keeps its
/// longest.
fn steps_of(events: &[Flat<'_>]) -> Vec<Step> {
    let mut by_number: HashMap<i64, (u64, u64, u64)> = HashMap::new();
    for e in events.iter().filter(|e| !e.cut) {
        if let Some(step) = e.step {
            let entry = by_number.entry(step).or_insert((e.start, e.end, 0));
            if e.end - e.start > entry.1 - entry.0 {
                *entry = (e.start, e.end, 0);
            }
        }
    }
    let mut steps: Vec<(i64, u64, u64, u64)> = by_number
        .into_iter()
        .map(|(n, (start, end, input))| (n, start, end, input))
        .collect();
    steps.sort_by_key(|s| (s.1, s.0));
    // Input annotations not nested in another: `events` of a line are in order, so an
    // input event nested in the previous input event of its line ends within it.
    let mut outer_end = 0u64;
    let mut last_start = 0u64;
    let mut inputs: Vec<(u64, u64)> = Vec::new();
    for e in events.iter().filter(|e| is_input(e.name)) {
        if e.start < last_start {
            // The next line's events (each line's are in start order).
            outer_end = 0;
        }
        last_start = e.start;
        if e.start < outer_end && e.end <= outer_end {
            continue;
        }
        outer_end = e.end;
        inputs.push((e.start, e.end));
    }
    for (start, end) in inputs {
        let at = steps.partition_point(|s| s.1 <= start);
        // The step holding `start`: the last one starting at or before it.
        if let Some(step) = at.checked_sub(1).and_then(|i| steps.get_mut(i)) {
            if start < step.2 {
                step.3 = step.3.saturating_add(end.min(step.2) - start);
            }
        }
    }
    let mut out: Vec<Step> = steps
        .into_iter()
        .map(|(step, start, end, input)| Step {
            step,
            end_ns: end,
            duration_ns: end - start,
            input_ns: input.min(end - start),
        })
        .collect();
    out.sort_by_key(|s| s.step);
    out
}

/// Nearest-rank percentile of sorted `values`.
fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn step_times(steps: &[Step]) -> Option<StepTimes> {
    let last = steps.last()?;
    let mut sorted: Vec<u64> = steps.iter().map(|s| s.duration_ns).collect();
    sorted.sort_unstable();
    Some(StepTimes {
        last_ns: last.duration_ns,
        avg_ns: sorted.iter().sum::<u64>() as f64 / sorted.len() as f64,
        min_ns: sorted[0],
        p50_ns: percentile(&sorted, 0.5),
        p90_ns: percentile(&sorted, 0.9),
        max_ns: sorted[sorted.len() - 1],
    })
}

fn input_share(steps: &[Step]) -> Option<InputShare> {
    if steps.iter().all(|s| s.input_ns == 0) {
        return None;
    }
    let percent = |s: &Step| {
        if s.duration_ns == 0 {
            0.0
        } else {
            100.0 * s.input_ns as f64 / s.duration_ns as f64
        }
    };
    let total: u64 = steps.iter().map(|s| s.duration_ns).sum();
    let input: u64 = steps.iter().map(|s| s.input_ns).sum();
    Some(InputShare {
        avg_percent: if total == 0 {
            0.0
        } else {
            100.0 * input as f64 / total as f64
        },
        min_percent: steps.iter().map(percent).fold(f64::INFINITY, f64::min),
        max_percent: steps.iter().map(percent).fold(0.0, f64::max),
    })
}

/// The `max_ops` names with the most self time, then the rest as [`OTHER`].
fn ops(events: &[Flat<'_>], denominator: u64, max_ops: usize) -> Vec<OpRow> {
    let mut by_name: HashMap<&str, (u64, u64)> = HashMap::new();
    for e in events {
        let row = by_name.entry(e.name).or_insert((0, 0));
        row.0 = row.0.saturating_add(e.self_ns);
        row.1 += 1;
    }
    let mut rows: Vec<(&str, u64, u64)> = by_name
        .into_iter()
        .map(|(name, (self_ns, count))| (name, self_ns, count))
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let share = |ns: u64| {
        if denominator == 0 {
            0.0
        } else {
            ns as f64 / denominator as f64
        }
    };
    let rest = rows.split_off(rows.len().min(max_ops));
    let mut out: Vec<OpRow> = rows
        .into_iter()
        .map(|(name, self_ns, count)| OpRow {
            name: name.to_owned(),
            self_ns,
            share: share(self_ns),
            count,
        })
        .collect();
    if !rest.is_empty() {
        let self_ns = rest.iter().map(|r| r.1).fold(0u64, u64::saturating_add);
        out.push(OpRow {
            name: OTHER.to_owned(),
            self_ns,
            share: share(self_ns),
            count: rest.iter().map(|r| r.2).sum(),
        });
    }
    out
}
