//! [`DiffOptions`]: how two sides are compared.

use profiler_core::{Error, ErrorKind, Result};

use profiler_export::xplane::ReadLimits;

/// How two sides are compared.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct DiffOptions {
    /// The host to compare, of runs with several; `None` compares every host, merged
    /// (each host's steps are samples of their own).
    pub host: Option<String>,
    /// Significance level of the tests, after adjustment (default 0.05).
    pub alpha: f64,
    /// Smallest change, percent of the base's statistic, that is called a change
    /// rather than noise, however significant (default 1).
    pub noise_pct: f64,
    /// Fewest samples a side (and steps an op ran in) for a test (default 5).
    pub min_steps: usize,
    /// Every run of a logdir, pooled, rather than its newest (default false). Runs of
    /// each side recorded in turn (base, new, base, new, ...) spread a machine's drift
    /// over both sides instead of between them.
    pub all_runs: bool,
    /// Limits on the files read.
    pub limits: ReadLimits,
}

impl Default for DiffOptions {
    fn default() -> Self {
        DiffOptions {
            host: None,
            alpha: 0.05,
            noise_pct: 1.0,
            min_steps: 5,
            all_runs: false,
            limits: ReadLimits::default(),
        }
    }
}

impl DiffOptions {
    /// Compares only host `host`.
    #[must_use]
    pub fn host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// Sets the significance level.
    #[must_use]
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.alpha = alpha;
        self
    }

    /// Sets the smallest change called a change, percent.
    #[must_use]
    pub fn noise_pct(mut self, pct: f64) -> Self {
        self.noise_pct = pct;
        self
    }

    /// Sets the fewest samples a side for a test.
    #[must_use]
    pub fn min_steps(mut self, steps: usize) -> Self {
        self.min_steps = steps;
        self
    }

    /// Pools every run of a logdir rather than comparing its newest.
    #[must_use]
    pub fn all_runs(mut self, all: bool) -> Self {
        self.all_runs = all;
        self
    }

    /// Sets the limits on the files read.
    #[must_use]
    pub fn limits(mut self, limits: ReadLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Refuses options no comparison can use.
    pub(super) fn check(&self) -> Result<()> {
        let bad = |what: String| Err(Error::new(ErrorKind::InvalidArgument, what));
        if !(self.alpha > 0.0 && self.alpha < 1.0) {
            return bad(format!(
                "alpha {} is not a significance level: give one between 0 and 1, such as 0.05",
                self.alpha
            ));
        }
        if !(self.noise_pct >= 0.0 && self.noise_pct.is_finite()) {
            return bad(format!(
                "noise_pct {} is not a percentage: give 0 or more",
                self.noise_pct
            ));
        }
        if self.min_steps < 2 {
            return bad(format!(
                "min_steps {} cannot test anything: give 2 or more",
                self.min_steps
            ));
        }
        Ok(())
    }
}
