//! What a comparison concludes, and the pair of sides every comparison holds: shared
//! by the op, memory and function comparisons.

/// A value on each side.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sides<T> {
    /// The base side's.
    pub base: T,
    /// The new side's.
    pub new: T,
}

/// What a comparison concluded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Larger on the new side (slower, or more memory), significantly.
    Increase,
    /// Smaller on the new side (faster, or less memory), significantly.
    Decrease,
    /// Tested, and the difference is within the noise: not significant, smaller than
    /// the noise threshold, or the statistic and the test disagree on its direction.
    Noise,
    /// Not tested: fewer steps than [`DiffOptions::min_steps`](super::DiffOptions::min_steps) on a side, the op ran
    /// in fewer steps than that on both, or (testing runs) a side has fewer than two
    /// runs of it.
    TooFewSteps,
    /// Not tested: whole sessions were compared (a profile has no steps).
    Untested,
    /// Only on the base side (an op that is gone).
    OnlyBase,
    /// Only on the new side (a new op).
    OnlyNew,
}

impl Verdict {
    /// Whether the difference is significant (increase or decrease).
    pub fn is_significant(self) -> bool {
        matches!(self, Verdict::Increase | Verdict::Decrease)
    }

    /// Whether the row is on one side only.
    pub fn is_one_sided(self) -> bool {
        matches!(self, Verdict::OnlyBase | Verdict::OnlyNew)
    }

    /// The verdict as rendered in JSON: `increase`, `decrease`, `noise`,
    /// `too_few_steps`, `untested`, `only_base`, `only_new`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Increase => "increase",
            Verdict::Decrease => "decrease",
            Verdict::Noise => "noise",
            Verdict::TooFewSteps => "too_few_steps",
            Verdict::Untested => "untested",
            Verdict::OnlyBase => "only_base",
            Verdict::OnlyNew => "only_new",
        }
    }
}
