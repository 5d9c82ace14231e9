//! The share of the stack samples each function took, on each side, compared: where
//! a run's CPU time went in code nobody annotated, and where that moved.
//!
//! A side's samples are pooled over its profiles. Each function's total share (the
//! samples with it anywhere on the stack, of all the side's samples: the time spent in
//! it and in what it called, pprof's `cum`) is compared by a two-proportion z test:
//! samples taken by CPU time at a fixed rate are close to independent draws of where
//! the time went, so each side's count of a function is binomial. The total share is
//! what is compared because it is what moves when work moves: code built with inlining
//! puts most self samples in small inlined helpers (`black_box`, an iterator's `next`)
//! shared by every caller, where a caller's total still tells them apart. The self
//! shares are shown beside it. Samples next to each other in time are not quite independent (a phase
//! of a program keeps one function hot for a while), which makes the test somewhat
//! optimistic; the noise threshold and Holm's adjustment over every function keep
//! small moves from being called changes.

use std::collections::BTreeSet;

use profiler_core::Profile;

use super::options::DiffOptions;
use super::stats::{holm, Method, Test};
use super::verdict::{Sides, Verdict};
use crate::functions::{share, Counts};

/// One function's share of the stack samples on each side.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct FunctionDiff {
    /// The function, as symbolised.
    pub name: String,
    /// Samples with it anywhere on the stack.
    pub total_samples: Sides<u64>,
    /// Its total samples as a share of the side's samples, 0 to 1: what is compared.
    pub total_share: Sides<f64>,
    /// Samples whose innermost frame is in it, as a share of the side's, 0 to 1.
    pub self_share: Sides<f64>,
    /// New minus base total share, in percentage points.
    pub delta_points: f64,
    /// The change of the total share relative to the base's, percent; `None` when the
    /// base's is zero.
    pub change_pct: Option<f64>,
    /// The two-proportion z test of the total shares, Holm-adjusted over the
    /// functions.
    pub test: Option<Test>,
    /// Increase or decrease of the share (only-new or only-base for a function
    /// sampled on one side), or noise.
    pub verdict: Verdict,
}

/// The stack samples of one side's profiles, pooled; `None` when none has any.
pub(super) fn side(profiles: &[&Profile], notes: &mut Vec<String>) -> Option<Counts> {
    let mut counts = Counts::default();
    let mut any = false;
    for p in profiles {
        any |= counts.add_profile(p, notes);
    }
    any.then_some(counts)
}

/// Each function's share compared, ranked: significant changes first, then by how
/// many points the share moved.
pub(super) fn compare(
    base: Option<Counts>,
    new: Option<Counts>,
    options: &DiffOptions,
    notes: &mut Vec<String>,
) -> (Sides<u64>, Vec<FunctionDiff>) {
    let (base, new) = match (base, new) {
        (Some(b), Some(n)) => (b, n),
        (None, None) => return (Sides { base: 0, new: 0 }, Vec::new()),
        (b, n) => {
            let which = if b.is_some() { "base" } else { "new" };
            notes.push(format!(
                "stack samples were recorded in the {which} profile only: functions not \
                 compared (host_sampling_hz on both sides compares them)"
            ));
            let samples = |c: &Option<Counts>| c.as_ref().map_or(0, |c| c.overall.samples);
            return (
                Sides {
                    base: samples(&b),
                    new: samples(&n),
                },
                Vec::new(),
            );
        }
    };
    let (b, n) = (&base.overall, &new.overall);
    let names: BTreeSet<&String> = b
        .functions
        .iter()
        .chain(&n.functions)
        .filter(|(_, &(_, total))| total > 0)
        .map(|(name, _)| name)
        .collect();
    let counts = |scope: &crate::functions::Scope, name: &str| {
        scope.functions.get(name).copied().unwrap_or((0, 0))
    };
    let mut rows: Vec<FunctionDiff> = names
        .into_iter()
        .map(|name| {
            let ((bs, bt), (ns, nt)) = (counts(b, name), counts(n, name));
            let total_share = Sides {
                base: share(bt, b.samples),
                new: share(nt, n.samples),
            };
            let delta = total_share.new - total_share.base;
            FunctionDiff {
                name: name.clone(),
                total_samples: Sides { base: bt, new: nt },
                total_share,
                self_share: Sides {
                    base: share(bs, b.samples),
                    new: share(ns, n.samples),
                },
                delta_points: delta * 100.0,
                change_pct: (total_share.base > 0.0).then(|| delta / total_share.base * 100.0),
                test: Some(two_proportions(bt, b.samples, nt, n.samples)),
                verdict: Verdict::Noise,
            }
        })
        .collect();
    let mut tests: Vec<&mut Test> = rows.iter_mut().filter_map(|r| r.test.as_mut()).collect();
    holm(&mut tests);
    for r in &mut rows {
        r.verdict = decide(r, options);
    }
    rows.sort_by(|a, b| {
        let quiet = |r: &FunctionDiff| !r.verdict.is_significant() && !r.verdict.is_one_sided();
        quiet(a)
            .cmp(&quiet(b))
            .then(b.delta_points.abs().total_cmp(&a.delta_points.abs()))
            .then(b.total_share.base.total_cmp(&a.total_share.base))
            .then(a.name.cmp(&b.name))
    });
    (
        Sides {
            base: b.samples,
            new: n.samples,
        },
        rows,
    )
}

/// The verdict of a tested row: a significant change beyond the noise threshold, the
/// statistic and the test agreeing on its direction; a function sampled on one side
/// only is new or gone when that is significant too.
fn decide(r: &FunctionDiff, options: &DiffOptions) -> Verdict {
    let Some(test) = &r.test else {
        return Verdict::Noise;
    };
    let beyond_noise = r
        .change_pct
        .is_none_or(|pct| pct.abs() >= options.noise_pct);
    let agree = r.delta_points != 0.0 && (test.z > 0.0) == (r.delta_points > 0.0);
    if !(test.p_adjusted < options.alpha && beyond_noise && agree) {
        return Verdict::Noise;
    }
    match (r.total_samples.base, r.total_samples.new) {
        (0, _) => Verdict::OnlyNew,
        (_, 0) => Verdict::OnlyBase,
        _ if r.delta_points > 0.0 => Verdict::Increase,
        _ => Verdict::Decrease,
    }
}

/// The two-proportion z test of `x2` of `n2` against `x1` of `n1` (pooled variance,
/// two-sided): positive z when the new share is the larger.
fn two_proportions(x1: u64, n1: u64, x2: u64, n2: u64) -> Test {
    let (x1, n1, x2, n2) = (x1 as f64, n1 as f64, x2 as f64, n2 as f64);
    let pooled = (x1 + x2) / (n1 + n2);
    let se = (pooled * (1.0 - pooled) * (1.0 / n1 + 1.0 / n2)).sqrt();
    let diff = x2 / n2 - x1 / n1;
    let (z, p) = if se > 0.0 {
        let z = diff / se;
        (z, libm::erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0))
    } else {
        // Every sample in the function on both sides, or in none.
        (0.0, 1.0)
    };
    Test {
        method: Method::TwoProportionZ,
        statistic: diff,
        z,
        p,
        p_adjusted: p,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::functions::tests::sampled;

    /// Each row's verdict by function.
    fn names(rows: &[FunctionDiff]) -> BTreeMap<&str, Verdict> {
        rows.iter().map(|r| (r.name.as_str(), r.verdict)).collect()
    }

    #[test]
    fn the_z_test_tells_a_moved_share_from_noise() {
        // 30% against 60% of 1,000 samples: far beyond chance.
        let t = two_proportions(300, 1000, 600, 1000);
        assert!(t.z > 10.0 && t.p < 1e-12, "{t:?}");
        // 30% against 31% of 1,000: not.
        let t = two_proportions(300, 1000, 310, 1000);
        assert!(t.p > 0.5, "{t:?}");
        assert_eq!(two_proportions(0, 10, 0, 10).p, 1.0);
    }

    #[test]
    fn shares_are_compared_and_ranked() {
        let base = sampled(&[
            (&["tokenize", "main"], None, 300),
            (&["matmul", "main"], None, 600),
            (&["log", "main"], None, 100),
        ]);
        let new = sampled(&[
            (&["tokenize", "main"], None, 600),
            (&["matmul", "main"], None, 302),
            (&["log", "main"], None, 95),
            (&["sleep_poll", "main"], None, 3),
        ]);
        let mut notes = Vec::new();
        let (samples, rows) = compare(
            side(&[&base], &mut notes),
            side(&[&new], &mut notes),
            &DiffOptions::default(),
            &mut notes,
        );
        assert_eq!(
            samples,
            Sides {
                base: 1000,
                new: 1000
            }
        );
        let verdicts = names(&rows);
        assert_eq!(verdicts["tokenize"], Verdict::Increase);
        assert_eq!(verdicts["matmul"], Verdict::Decrease);
        assert_eq!(verdicts["log"], Verdict::Noise);
        // Three samples of a new function are not a new function.
        assert_eq!(verdicts["sleep_poll"], Verdict::Noise);
        assert_eq!(
            rows[0].name, "tokenize",
            "the largest significant move first"
        );
        assert!((rows[0].delta_points - 30.0).abs() < 1e-9);
        assert!((rows[0].self_share.new - 0.6).abs() < 1e-9);
        // On every stack of both sides: its share cannot move.
        assert_eq!(verdicts["main"], Verdict::Noise);
        assert_eq!(
            rows.last().map(|r| r.total_share),
            Some(Sides {
                base: 1.0,
                new: 1.0
            })
        );
        assert!(notes.is_empty(), "{notes:?}");
    }

    #[test]
    fn samples_on_one_side_only_are_a_note() {
        let base = sampled(&[(&["work"], None, 10)]);
        let mut notes = Vec::new();
        let (samples, rows) = compare(
            side(&[&base], &mut notes),
            side(&[&Profile::default()], &mut notes),
            &DiffOptions::default(),
            &mut notes,
        );
        assert!(rows.is_empty());
        assert_eq!(samples, Sides { base: 10, new: 0 });
        assert!(notes[0].contains("base profile only"), "{notes:?}");
    }
}
