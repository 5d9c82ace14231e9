//! [`Schedule`]: which action each step takes, as torch's `schedule()` returns it.

use crate::error::{Error, ErrorKind, Result};

/// What the profiler does during a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProfilerAction {
    /// Nothing is recorded.
    None,
    /// The tracer runs; what it records is discarded.
    Warmup,
    /// Recorded.
    Record,
    /// Recorded; the window ends with this step.
    RecordAndSave,
}

impl ProfilerAction {
    /// Whether a session runs during the step.
    pub fn is_tracing(self) -> bool {
        self != ProfilerAction::None
    }

    /// Whether the step is recorded.
    pub fn is_recording(self) -> bool {
        matches!(self, ProfilerAction::Record | ProfilerAction::RecordAndSave)
    }
}

/// Which steps to record; see the [module documentation](crate::schedule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// Steps that record nothing at the start of each cycle.
    pub wait: u64,
    /// Steps that run the tracer and discard what it records, after `wait`.
    pub warmup: u64,
    /// Steps recorded, after `warmup`; at least 1.
    pub active: u64,
    /// Cycles to run; 0 runs cycles without end.
    pub repeat: u64,
    /// Steps that record nothing before the first cycle.
    pub skip_first: u64,
}

impl Schedule {
    /// Cycles of `wait`, `warmup` and `active` steps, without end.
    pub const fn new(wait: u64, warmup: u64, active: u64) -> Schedule {
        Schedule {
            wait,
            warmup,
            active,
            repeat: 0,
            skip_first: 0,
        }
    }

    /// Runs `cycles` cycles (0: without end).
    pub const fn repeat(mut self, cycles: u64) -> Schedule {
        self.repeat = cycles;
        self
    }

    /// Records nothing for the first `steps` steps.
    pub const fn skip_first(mut self, steps: u64) -> Schedule {
        self.skip_first = steps;
        self
    }

    /// Checks the schedule can record something.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] when `active` is 0.
    pub fn validate(&self) -> Result<()> {
        if self.active == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("schedule {self:?} has active = 0: it would never record a step; use active >= 1"),
            ));
        }
        Ok(())
    }

    /// The action for step `step` (counting from 0).
    pub fn action(&self, step: u64) -> ProfilerAction {
        let Some(step) = step.checked_sub(self.skip_first) else {
            return ProfilerAction::None;
        };
        let cycle = self.wait + self.warmup + self.active.max(1);
        if self.repeat > 0 && step / cycle >= self.repeat {
            return ProfilerAction::None;
        }
        match step % cycle {
            s if s < self.wait => ProfilerAction::None,
            s if s < self.wait + self.warmup => ProfilerAction::Warmup,
            s if s + 1 < cycle => ProfilerAction::Record,
            _ => ProfilerAction::RecordAndSave,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ProfilerAction::{None as N, Record as R, RecordAndSave as S, Warmup as W};
    use super::*;

    fn actions(s: Schedule, steps: u64) -> Vec<ProfilerAction> {
        (0..steps).map(|i| s.action(i)).collect()
    }

    #[test]
    fn cycles_follow_torch() {
        assert_eq!(
            actions(Schedule::new(1, 1, 2).repeat(2), 10),
            [N, W, R, S, N, W, R, S, N, N]
        );
        assert_eq!(
            actions(Schedule::new(0, 0, 1), 4),
            [S, S, S, S],
            "active=1 saves every step"
        );
        assert_eq!(
            actions(Schedule::new(2, 0, 2).skip_first(3).repeat(1), 9),
            [N, N, N, N, N, R, S, N, N]
        );
        assert_eq!(actions(Schedule::new(0, 2, 1), 6), [W, W, S, W, W, S]);
    }

    #[test]
    fn active_zero_is_rejected() {
        let err = Schedule::new(1, 1, 0).validate().expect_err("invalid");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("active = 0"), "{err}");
    }
}
