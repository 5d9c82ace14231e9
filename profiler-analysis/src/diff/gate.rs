//! The CI gate: does a comparison show a slowdown larger than a threshold that is
//! also significant?

use std::fmt;

use super::compare::{Comparison, Diff, SampleUnit};
use super::verdict::Verdict;
use crate::units::duration;

/// What the gate allows.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GateOptions {
    /// The slowdown allowed, percent of the step time or of an op's time a step.
    pub slower_pct: f64,
    /// An op fails the gate only when its slowdown is at least this share of the base's
    /// median step time, percent (default 1): a 2 µs op that takes 3 µs is 50% slower,
    /// and as significant as anything over enough steps, but it is not what a gate on
    /// training speed is for. 0 applies the gate to every op.
    pub min_step_share_pct: f64,
}

impl GateOptions {
    /// A gate at `slower_pct` percent, with the default share.
    pub fn new(slower_pct: f64) -> GateOptions {
        GateOptions {
            slower_pct,
            min_step_share_pct: 1.0,
        }
    }

    /// Sets the share of the step below which an op's slowdown does not count.
    #[must_use]
    pub fn min_step_share_pct(mut self, pct: f64) -> Self {
        self.min_step_share_pct = pct;
        self
    }
}

/// The outcome of [`Diff::gate`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Gate {
    /// What it allowed.
    pub options: GateOptions,
    /// Whether nothing failed it.
    pub passed: bool,
    /// Why it failed, a line each (empty when it passed).
    pub failures: Vec<String>,
}

impl Diff {
    /// Checks the comparison against a slowdown of `slower_pct` percent, with the
    /// default [`GateOptions`]; see [`Diff::gate_with`].
    pub fn gate(&self, slower_pct: f64) -> Gate {
        self.gate_with(&GateOptions::new(slower_pct))
    }

    /// Checks the comparison against `options`: it fails when the median step time,
    /// or any op's time a step, is slower by more than `options.slower_pct` *and* the
    /// difference is significant (a [`Verdict::Increase`]); an op's slowdown counts
    /// when it is at least `options.min_step_share_pct` of the median step. Noise
    /// never fails it, so the same gate on two runs of unchanged code passes.
    ///
    /// It also fails when it cannot decide: whole sessions were compared (a profile
    /// has no steps, so nothing can be shown significant), or a side has fewer steps
    /// than [`DiffOptions::min_steps`](super::DiffOptions::min_steps).
    pub fn gate_with(&self, options: &GateOptions) -> Gate {
        let pct = options.slower_pct;
        let mut failures = Vec::new();
        match (self.unit, self.step_time.verdict) {
            (SampleUnit::Session, _) => failures.push(
                "cannot decide: a profile has no steps, so whole sessions were compared \
                 and no difference can be shown significant (mark each step with a \
                 step_num annotation, e.g. trace!(\"Train\", step_num = n))"
                    .to_owned(),
            ),
            (_, Verdict::TooFewSteps) => failures.push(format!(
                "cannot decide: base has {} steps and new {}; at least {} a side are needed",
                self.step_time.dist.base.n, self.step_time.dist.new.n, self.options.min_steps
            )),
            _ => {}
        }
        if slower_than(&self.step_time, pct) {
            failures.push(format!(
                "median step time is slower by more than {pct}%: {}",
                change(&self.step_time)
            ));
        }
        let floor = self.step_time.value().base * options.min_step_share_pct / 100.0;
        for op in &self.ops {
            if slower_than(&op.time, pct) && op.time.delta >= floor {
                failures.push(format!(
                    "{} {:?} is slower by more than {pct}% a step: {}",
                    op.kind.as_str(),
                    op.name,
                    change(&op.time)
                ));
            }
        }
        Gate {
            options: options.clone(),
            passed: failures.is_empty(),
            failures,
        }
    }
}

/// Whether `c` is a significant increase of more than `pct` percent (from zero: any).
fn slower_than(c: &Comparison, pct: f64) -> bool {
    c.verdict == Verdict::Increase && c.change_pct.is_none_or(|p| p > pct)
}

/// `a -> b (+x%, p = ...)`.
fn change(c: &Comparison) -> String {
    let v = c.value();
    let pct = c
        .change_pct
        .map_or_else(|| "from zero".to_owned(), |p| format!("{p:+.1}%"));
    let p = c
        .test
        .as_ref()
        .map_or_else(String::new, |t| format!(", p = {:.2e}", t.p_adjusted));
    format!(
        "{} -> {} ({pct}{p})",
        duration(v.base.round() as u64),
        duration(v.new.round() as u64)
    )
}

impl fmt::Display for Gate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.passed {
            write!(
                f,
                "gate passed: no significant slowdown of more than {}%",
                self.options.slower_pct
            )
        } else {
            write!(f, "gate failed ({}%):", self.options.slower_pct)?;
            for why in &self.failures {
                write!(f, "\n  - {why}")?;
            }
            Ok(())
        }
    }
}
