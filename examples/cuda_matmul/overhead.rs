//! cuda_matmul's overhead rounds: the timings of the untraced and traced loops and of
//! each session's start and stop, and their one-line summary.

use std::time::Duration;

/// What `Gpu::overhead` timed, a value per round.
#[derive(Debug, Default)]
pub(crate) struct Rounds {
    pub(crate) untraced: Vec<Duration>,
    pub(crate) traced: Vec<Duration>,
    /// CUPTI alone, kernel activity records only.
    pub(crate) floor_activity: Vec<Duration>,
    /// CUPTI alone, kernel activity and a callback on the launch functions.
    pub(crate) floor_callbacks: Vec<Duration>,
    /// The traced rounds' `start` (CUPTI's set-up).
    pub(crate) start: Vec<Duration>,
    /// The traced rounds' `stop` (flushing and collecting the records).
    pub(crate) stop: Vec<Duration>,
}

impl Rounds {
    /// One line: medians with their range, the ratio of the medians with the range of
    /// the rounds' own ratios, the added time per launch, and the session's fixed cost.
    pub(crate) fn summary(&self, launches: usize) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let spread = |times: &[Duration]| {
            let (median, lo, hi) = spread_of(times);
            format!("{:.2} ms [{:.2}-{:.2}]", ms(median), ms(lo), ms(hi))
        };
        let (untraced, ..) = spread_of(&self.untraced);
        let (traced, ..) = spread_of(&self.traced);
        let (ratio_lo, ratio_hi) = self
            .traced
            .iter()
            .zip(&self.untraced)
            .map(|(t, u)| t.as_secs_f64() / u.as_secs_f64())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
                (lo.min(r), hi.max(r))
            });
        let added = |times: &[Duration]| {
            let (median, ..) = spread_of(times);
            (median.as_secs_f64() - untraced.as_secs_f64()) * 1e9 / launches as f64
        };
        let per_launch_ns = added(&self.traced);
        let mut line = format!(
            "overhead on {launches} launches, {} alternated rounds: untraced {}, traced {}: \
             {:.3}x (rounds {:.3}-{:.3}), {per_launch_ns:+.0} ns per launch; \
             once per session: start {}, stop {}",
            self.traced.len(),
            spread(&self.untraced),
            spread(&self.traced),
            traced.as_secs_f64() / untraced.as_secs_f64(),
            ratio_lo,
            ratio_hi,
            spread(&self.start),
            spread(&self.stop),
        );
        if !self.floor_callbacks.is_empty() {
            let (activity, callbacks) = (added(&self.floor_activity), added(&self.floor_callbacks));
            let (floor, ..) = spread_of(&self.floor_callbacks);
            line.push_str(&format!(
                "\n  CUPTI's floor in the same rounds: kernel activity {} ({activity:+.0} ns per launch), \
                 + launch callbacks {} ({callbacks:+.0} ns per launch, {:.3}x); \
                 prof adds {:.2}x what the floor with callbacks adds",
                spread(&self.floor_activity),
                spread(&self.floor_callbacks),
                floor.as_secs_f64() / untraced.as_secs_f64(),
                per_launch_ns / callbacks.max(1.0),
            ));
        }
        line
    }
}

/// (median, min, max) of `times`; zeros for none.
fn spread_of(times: &[Duration]) -> (Duration, Duration, Duration) {
    let mut sorted = times.to_vec();
    sorted.sort();
    match (sorted.first(), sorted.last()) {
        (Some(&lo), Some(&hi)) => (sorted[sorted.len() / 2], lo, hi),
        _ => Default::default(),
    }
}
