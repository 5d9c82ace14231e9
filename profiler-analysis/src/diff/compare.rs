//! Two sides' samples compared: the step time, each op and each memory row, each with
//! its verdict, the ops ranked by their effect on the step.

use std::collections::{BTreeMap, BTreeSet};

use super::memory::{MemoryKey, MemorySeries};
use super::options::DiffOptions;
use super::samples::{OpKind, OpSeries, Samples};
use super::stats::{holm, mann_whitney, welch, Distribution, Method, Test};
use super::verdict::{Sides, Verdict};

/// What one sample is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleUnit {
    /// A step (a host event with `_r` and `step_num`, as XProf's steps): each side
    /// gives one sample per step, and differences are tested.
    Step,
    /// A whole session, when a profile has no steps: one sample a side, so nothing
    /// can be tested.
    Session,
}

/// Which statistic of the per-step samples a row compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Statistic {
    /// The median: step times, and ops that run in at least half the steps.
    Median,
    /// The mean: ops that run in fewer than half the steps of a side, whose median
    /// would be zero.
    Mean,
}

impl Statistic {
    fn of(self, d: &Distribution) -> f64 {
        match self {
            Statistic::Median => d.median,
            Statistic::Mean => d.mean,
        }
    }
}

/// One quantity compared across the sides: its per-step distributions, the change of
/// its statistic, and the test.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Comparison {
    /// The samples compared, on each side (ns, or bytes for memory).
    pub dist: Sides<Distribution>,
    /// The statistic compared.
    pub statistic: Statistic,
    /// New minus base, of the statistic.
    pub delta: f64,
    /// `delta` as a percentage of the base's statistic; `None` when that is zero.
    pub change_pct: Option<f64>,
    /// The Mann–Whitney U test of the samples, when tested.
    pub test: Option<Test>,
    /// The conclusion.
    pub verdict: Verdict,
}

impl Comparison {
    /// The statistic on each side.
    pub fn value(&self) -> Sides<f64> {
        Sides {
            base: self.statistic.of(&self.dist.base),
            new: self.statistic.of(&self.dist.new),
        }
    }

    fn of(
        base: &Runs,
        new: &Runs,
        statistic: Statistic,
        untested: Option<Verdict>,
        method: Method,
    ) -> Self {
        let (pooled_base, pooled_new) = (base.pooled(), new.pooled());
        let dist = Sides {
            base: Distribution::of(&pooled_base),
            new: Distribution::of(&pooled_new),
        };
        let (b, n) = (statistic.of(&dist.base), statistic.of(&dist.new));
        let delta = n - b;
        let (test, verdict) = match (untested, method) {
            (Some(verdict), _) => (None, verdict),
            // Steps and ops are never compared as proportions; that is the stack
            // samples' test (diff/functions.rs).
            (None, Method::MannWhitneyU | Method::TwoProportionZ) => (
                Some(mann_whitney(&pooled_base, &pooled_new)),
                Verdict::Noise,
            ),
            (None, Method::WelchT) => {
                let (b, n) = (base.per_run(statistic), new.per_run(statistic));
                if b.len() < 2 || n.len() < 2 {
                    (None, Verdict::TooFewSteps)
                } else {
                    (Some(welch(&b, &n)), Verdict::Noise)
                }
            }
        };
        Comparison {
            dist,
            statistic,
            delta,
            change_pct: (b != 0.0).then(|| delta / b * 100.0),
            test,
            verdict,
        }
    }

    /// Sets the verdict of a tested comparison from its (adjusted) p-value.
    fn decide(&mut self, options: &DiffOptions) {
        let Some(test) = &self.test else { return };
        let beyond_noise = match self.change_pct {
            Some(pct) => pct.abs() >= options.noise_pct,
            None => self.delta != 0.0,
        };
        let agree = self.delta != 0.0 && (test.z > 0.0) == (self.delta > 0.0);
        self.verdict = if test.p_adjusted < options.alpha && beyond_noise && agree {
            if self.delta > 0.0 {
                Verdict::Increase
            } else {
                Verdict::Decrease
            }
        } else {
            Verdict::Noise
        };
    }
}

/// One op on both sides (or one).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct OpDiff {
    /// What the op is.
    pub kind: OpKind,
    /// Its name (for a device op, its `tf_op`).
    pub name: String,
    /// Mean number of its events a step.
    pub count_per_step: Sides<f64>,
    /// Mean total time a step (events nested in it included), ns.
    pub total_per_step: Sides<f64>,
    /// Steps it ran in.
    pub steps_with_op: Sides<usize>,
    /// The time compared, a step: self time for a host annotation (its own effect on
    /// the step), device time for device ops and kernels. ns.
    pub time: Comparison,
}

/// Memory of one allocator, or of one op's allocations from it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct MemoryDiff {
    /// The allocator (TSL's `allocator_name`, or, for a profile without memory
    /// events, a `*bytes_in_use` counter and its plane).
    pub allocator: String,
    /// The op whose live allocations this row is of, named as the summary's tables
    /// name it (prof's annotation name, else `tf_op`); `None` for the allocator as a
    /// whole.
    pub op: Option<String>,
    /// The highest bytes in use over each profile, where recorded.
    pub peak: Sides<Option<f64>>,
    /// Each step's peak, compared.
    pub per_step: Comparison,
}

/// What a side was made of.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SideSummary {
    /// The files read (or `base profile 1`, ... for profiles given in memory).
    pub sources: Vec<String>,
    /// The hosts compared.
    pub hosts: Vec<String>,
    /// Samples: steps, or sessions.
    pub samples: usize,
    /// Runs of each host (profiles of one host pooled; see
    /// [`DiffOptions::all_runs`]).
    pub runs: usize,
    /// Events of work read on the host (annotations, spans, markers): what
    /// [`Profile::event_count`](profiler_core::Profile::event_count) counts, summed
    /// over the side's profiles.
    pub events: u64,
    /// Work read on devices (kernels, copies, memsets), XProf's derived lines left out.
    pub device_events: u64,
    /// XProf memory events read (memory, not work): what
    /// [`Profile::memory_event_count`](profiler_core::Profile::memory_event_count)
    /// counts.
    pub memory_events: u64,
    /// Of the host and device events, those outside every step, not compared.
    pub outside_steps: u64,
    /// Steps the session's start or stop cut (the step still open at the stop), left
    /// out of the comparison: their recorded span is only a part of the step.
    pub cut_steps: u64,
}

/// The comparison of two profiles: see [`crate::diff`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Diff {
    /// What each side was made of.
    pub sides: Sides<SideSummary>,
    /// What a sample is: a step, or (without steps) a session.
    pub unit: SampleUnit,
    /// How rows were tested: over the steps, or over the runs when each side pools
    /// several runs of a host.
    pub method: Method,
    /// Step time (or session time), compared by median.
    pub step_time: Comparison,
    /// Every op, ranked: significant changes and ops on one side only first, each
    /// group by the size of the change of its time a step.
    pub ops: Vec<OpDiff>,
    /// Memory per allocator (on both sides), each followed by the ops its allocations
    /// are attributed to.
    pub memory: Vec<MemoryDiff>,
    /// Stack samples on each side (`host_sampling_hz`); 0 where none were taken.
    pub function_samples: Sides<u64>,
    /// Each function's share of the stack samples, compared, when both sides sampled
    /// stacks: significant changes first, then by how far the share moved. Not part
    /// of [`Diff::has_changes`] or the gate: a share can move while no time changes.
    pub functions: Vec<super::functions::FunctionDiff>,
    /// What a reader of the comparison should know: whole sessions compared, hosts
    /// merged or renamed, runs chosen, events left out, the profiles' own warnings.
    pub notes: Vec<String>,
    /// The options it was made with.
    pub options: DiffOptions,
}

impl Diff {
    /// The first op row named `name`, of any kind.
    pub fn op(&self, name: &str) -> Option<&OpDiff> {
        self.ops.iter().find(|o| o.name == name)
    }

    /// The op row of `kind` named `name`.
    pub fn op_of(&self, kind: OpKind, name: &str) -> Option<&OpDiff> {
        self.ops.iter().find(|o| o.kind == kind && o.name == name)
    }

    /// Whether anything changed significantly: the step time, an op, an op of one
    /// side only, or memory.
    pub fn has_changes(&self) -> bool {
        self.step_time.verdict.is_significant()
            || self
                .ops
                .iter()
                .any(|o| o.time.verdict.is_significant() || o.time.verdict.is_one_sided())
            || self
                .memory
                .iter()
                .any(|m| m.per_step.verdict.is_significant() || m.per_step.verdict.is_one_sided())
    }
}

/// Samples of one quantity, a list for each profile of a side (a run of a host).
#[derive(Clone, Debug, Default)]
pub(super) struct Runs(Vec<Vec<f64>>);

impl Runs {
    /// Every sample, the runs one after the other.
    fn pooled(&self) -> Vec<f64> {
        self.0.concat()
    }

    /// Each run's statistic, of the runs that have samples.
    fn per_run(&self, statistic: Statistic) -> Vec<f64> {
        self.0
            .iter()
            .filter(|run| !run.is_empty())
            .map(|run| statistic.of(&Distribution::of(run)))
            .collect()
    }

    fn push(&mut self, run: impl IntoIterator<Item = f64>) {
        self.0.push(run.into_iter().collect());
    }
}

/// One side's samples pooled: every profile's steps are samples, and each profile is
/// a run of its own.
pub(super) struct Pooled {
    step_ns: Runs,
    /// Steps in each profile.
    lengths: Vec<usize>,
    ops: BTreeMap<(OpKind, String), PooledOp>,
    memory: BTreeMap<MemoryKey, (Runs, f64)>,
    pub(super) summary: SideSummary,
}

struct PooledOp {
    /// Per step, every run.
    count: Vec<f64>,
    total: Vec<f64>,
    /// The time compared: self time (host) or device time, per step and run.
    time: Runs,
    /// Steps it ran in.
    present: usize,
}

impl PooledOp {
    /// An op that never ran in runs of these lengths.
    fn absent(lengths: &[usize]) -> PooledOp {
        let mut time = Runs::default();
        for &n in lengths {
            time.push(std::iter::repeat_n(0.0, n));
        }
        let steps = lengths.iter().sum();
        PooledOp {
            count: vec![0.0; steps],
            total: vec![0.0; steps],
            time,
            present: 0,
        }
    }

    fn samples(&self) -> usize {
        self.count.len()
    }

    fn add(&mut self, kind: OpKind, series: Option<&OpSeries>, steps: usize) {
        let Some(s) = series else {
            self.count.extend(std::iter::repeat_n(0.0, steps));
            self.total.extend(std::iter::repeat_n(0.0, steps));
            self.time.push(std::iter::repeat_n(0.0, steps));
            return;
        };
        self.count.extend(s.count.iter().map(|&c| f64::from(c)));
        self.total.extend(s.total.iter().map(|&t| t as f64));
        let time = if kind == OpKind::Host {
            &s.self_ns
        } else {
            &s.total
        };
        self.time.push(time.iter().map(|&t| t as f64));
        self.present += s.count.iter().filter(|&&c| c > 0).count();
    }
}

/// Pools the samples of one side's profiles (`(label, host, samples)`).
pub(super) fn pool(profiles: Vec<(String, String, Samples)>) -> Pooled {
    let lengths: Vec<usize> = profiles.iter().map(|(_, _, s)| s.step_ns.len()).collect();
    let keys: BTreeSet<(OpKind, String)> = profiles
        .iter()
        .flat_map(|(_, _, s)| s.ops.keys().cloned())
        .collect();
    let mut ops = BTreeMap::new();
    for key in keys {
        let mut op = PooledOp::absent(&[]);
        for (_, _, samples) in &profiles {
            op.add(key.0, samples.ops.get(&key), samples.step_ns.len());
        }
        ops.insert(key, op);
    }
    let mut memory: BTreeMap<MemoryKey, (Runs, f64)> = BTreeMap::new();
    for (_, _, samples) in &profiles {
        for (key, MemorySeries { per_step, peak }) in &samples.memory {
            let row = memory.entry(key.clone()).or_default();
            row.0.push(per_step.iter().copied());
            row.1 = row.1.max(*peak);
        }
    }
    let mut per_host: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, host, _) in &profiles {
        *per_host.entry(host).or_default() += 1;
    }
    let mut step_ns = Runs::default();
    for (_, _, s) in &profiles {
        step_ns.push(s.step_ns.iter().copied());
    }
    let summary = SideSummary {
        sources: profiles.iter().map(|(l, _, _)| l.clone()).collect(),
        hosts: per_host.keys().map(|h| (*h).to_owned()).collect(),
        samples: lengths.iter().sum(),
        runs: per_host.values().copied().min().unwrap_or(0),
        events: profiles.iter().map(|(_, _, s)| s.events).sum(),
        device_events: profiles.iter().map(|(_, _, s)| s.device_events).sum(),
        memory_events: profiles.iter().map(|(_, _, s)| s.memory_events).sum(),
        outside_steps: profiles.iter().map(|(_, _, s)| s.outside).sum(),
        cut_steps: profiles.iter().map(|(_, _, s)| s.cut_steps).sum(),
    };
    Pooled {
        step_ns,
        lengths,
        ops,
        memory,
        summary,
    }
}

/// Compares two pooled sides.
pub(super) fn build(
    base: Pooled,
    new: Pooled,
    unit: SampleUnit,
    options: &DiffOptions,
    mut notes: Vec<String>,
) -> Diff {
    // Steps of one run share its machine's state; with several runs a side, the runs
    // say how much that varies, and are what is compared.
    let method = if base.summary.runs >= 2 && new.summary.runs >= 2 {
        notes.push(format!(
            "{} base and {} new runs a host: tested over the runs' medians (Welch's t)",
            base.summary.runs, new.summary.runs
        ));
        Method::WelchT
    } else {
        Method::MannWhitneyU
    };
    let untested = |samples: Sides<usize>, present: usize| match unit {
        SampleUnit::Session => Some(Verdict::Untested),
        SampleUnit::Step
            if samples.base < options.min_steps
                || samples.new < options.min_steps
                || present < options.min_steps =>
        {
            Some(Verdict::TooFewSteps)
        }
        SampleUnit::Step => None,
    };
    let step_samples = Sides {
        base: base.summary.samples,
        new: new.summary.samples,
    };
    let mut step_time = Comparison::of(
        &base.step_ns,
        &new.step_ns,
        Statistic::Median,
        untested(step_samples, usize::MAX),
        method,
    );
    step_time.decide(options);

    let mut ops = op_rows(&base, &new, &untested, method);
    let mut tests: Vec<&mut Test> = ops
        .iter_mut()
        .filter_map(|o| o.time.test.as_mut())
        .collect();
    holm(&mut tests);
    for op in &mut ops {
        op.time.decide(options);
    }
    ops.sort_by(|a, b| {
        let class =
            |o: &OpDiff| !(o.time.verdict.is_significant() || o.time.verdict.is_one_sided());
        class(a)
            .cmp(&class(b))
            .then(b.time.delta.abs().total_cmp(&a.time.delta.abs()))
            // Equal changes (none, comparing a run with itself): the largest first.
            .then(b.time.value().base.total_cmp(&a.time.value().base))
            .then(a.kind.cmp(&b.kind))
            .then(a.name.cmp(&b.name))
    });

    let mut memory = memory_rows(&base, &new, &untested, method, &mut notes);
    let mut tests: Vec<&mut Test> = memory
        .iter_mut()
        .filter_map(|m| m.per_step.test.as_mut())
        .collect();
    holm(&mut tests);
    for m in &mut memory {
        m.per_step.decide(options);
    }

    if unit == SampleUnit::Step && (base.summary.cut_steps > 0 || new.summary.cut_steps > 0) {
        notes.push(format!(
            "{} base and {} new steps were cut by the session's start or stop (only part \
             of each was recorded) and are left out",
            base.summary.cut_steps, new.summary.cut_steps
        ));
    }
    if unit == SampleUnit::Step && (base.summary.outside_steps > 0 || new.summary.outside_steps > 0)
    {
        notes.push(format!(
            "{} base and {} new events ran outside every step and are not compared",
            base.summary.outside_steps, new.summary.outside_steps
        ));
    }
    Diff {
        sides: Sides {
            base: base.summary,
            new: new.summary,
        },
        unit,
        method,
        step_time,
        ops,
        memory,
        function_samples: Sides { base: 0, new: 0 },
        functions: Vec::new(),
        notes,
        options: options.clone(),
    }
}

/// Whether a row is left untested, from its samples a side and the steps it ran in.
type Untested<'a> = &'a dyn Fn(Sides<usize>, usize) -> Option<Verdict>;

fn op_rows(base: &Pooled, new: &Pooled, untested: Untested<'_>, method: Method) -> Vec<OpDiff> {
    let keys: BTreeSet<&(OpKind, String)> = base.ops.keys().chain(new.ops.keys()).collect();
    // What an op missing from a side ran there: nothing, in each of its steps.
    let absent = Sides {
        base: PooledOp::absent(&base.lengths),
        new: PooledOp::absent(&new.lengths),
    };
    keys.into_iter()
        .map(|key| {
            let b = base.ops.get(key).unwrap_or(&absent.base);
            let n = new.ops.get(key).unwrap_or(&absent.new);
            let one_sided = match (b.present, n.present) {
                (0, _) => Some(Verdict::OnlyNew),
                (_, 0) => Some(Verdict::OnlyBase),
                _ => None,
            };
            // An op in fewer than half the steps of a side it runs on has a median
            // of zero there; its mean is what it costs a step.
            let sparse = |op: &PooledOp| op.present > 0 && 2 * op.present < op.samples();
            let statistic = if sparse(b) || sparse(n) {
                Statistic::Mean
            } else {
                Statistic::Median
            };
            let samples = Sides {
                base: b.samples(),
                new: n.samples(),
            };
            let verdict = one_sided.or_else(|| untested(samples, b.present.max(n.present)));
            OpDiff {
                kind: key.0,
                name: key.1.clone(),
                count_per_step: Sides {
                    base: mean(&b.count),
                    new: mean(&n.count),
                },
                total_per_step: Sides {
                    base: mean(&b.total),
                    new: mean(&n.total),
                },
                steps_with_op: Sides {
                    base: b.present,
                    new: n.present,
                },
                time: Comparison::of(&b.time, &n.time, statistic, verdict, method),
            }
        })
        .collect()
}

fn memory_rows(
    base: &Pooled,
    new: &Pooled,
    untested: Untested<'_>,
    method: Method,
    notes: &mut Vec<String>,
) -> Vec<MemoryDiff> {
    let allocators = |p: &Pooled| -> BTreeSet<String> {
        p.memory
            .keys()
            .filter(|k| k.op.is_none())
            .map(|k| k.allocator.clone())
            .collect()
    };
    let (in_base, in_new) = (allocators(base), allocators(new));
    for (which, only) in [
        ("base", in_base.difference(&in_new)),
        ("new", in_new.difference(&in_base)),
    ] {
        for allocator in only {
            notes.push(format!(
                "memory of {allocator} was recorded in the {which} profile only: not compared"
            ));
        }
    }
    let none = (Runs::default(), 0.0);
    let mut rows = Vec::new();
    for allocator in in_base.intersection(&in_new) {
        let keys: BTreeSet<&MemoryKey> = base
            .memory
            .keys()
            .chain(new.memory.keys())
            .filter(|k| &k.allocator == allocator)
            .collect();
        let mut group: Vec<MemoryDiff> = keys
            .into_iter()
            .map(|key| {
                let (b, n) = (base.memory.get(key), new.memory.get(key));
                let verdict = match (b, n) {
                    (None, _) => Some(Verdict::OnlyNew),
                    (_, None) => Some(Verdict::OnlyBase),
                    (Some(b), Some(n)) => untested(
                        Sides {
                            base: b.0.pooled().len(),
                            new: n.0.pooled().len(),
                        },
                        usize::MAX,
                    ),
                };
                let (b_row, n_row) = (b.unwrap_or(&none), n.unwrap_or(&none));
                MemoryDiff {
                    allocator: allocator.clone(),
                    op: key.op.clone(),
                    peak: Sides {
                        base: b.map(|r| r.1),
                        new: n.map(|r| r.1),
                    },
                    per_step: Comparison::of(
                        &b_row.0,
                        &n_row.0,
                        Statistic::Median,
                        verdict,
                        method,
                    ),
                }
            })
            .collect();
        // The allocator first, then its ops by how much they moved.
        group.sort_by(|a, b| {
            a.op.is_some()
                .cmp(&b.op.is_some())
                .then(b.per_step.delta.abs().total_cmp(&a.per_step.delta.abs()))
                .then(a.op.cmp(&b.op))
        });
        rows.extend(group);
    }
    rows
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}
