//! A profile's steps as the windows samples are taken in: which step an event
//! belongs to, by its step number or by when it started.
//!
//! A step is what XProf calls one: the events on `/host:CPU` with `_r` and an int64
//! `step_num`. Roots sharing a number (the step annotated on two threads) make one
//! window, from the earliest start to the latest end; its duration is the longest
//! root's, as the summary's step rows count it. Without steps, a whole session is one
//! window.

use std::collections::{BTreeMap, HashMap};

use crate::flat::StepSpan;

/// The windows of one profile, in start order.
pub(super) struct Steps {
    windows: Vec<Window>,
    by_number: HashMap<i64, usize>,
}

struct Window {
    start: u64,
    end: u64,
    duration: u64,
}

/// How many windows before the latest one starting at or before a time are looked
/// at: steps that overlap (a step ending after the next began) overlap their
/// neighbours only.
const LOOK_BACK: usize = 4;

impl Steps {
    /// The steps of `spans` (step roots), grouped by number.
    pub(super) fn of(spans: &[StepSpan]) -> Steps {
        let mut numbered: BTreeMap<i64, Window> = BTreeMap::new();
        for s in spans {
            let w = numbered.entry(s.step).or_insert(Window {
                start: s.start,
                end: s.end,
                duration: 0,
            });
            w.start = w.start.min(s.start);
            w.end = w.end.max(s.end);
            w.duration = w.duration.max(s.end - s.start);
        }
        let mut ordered: Vec<(i64, Window)> = numbered.into_iter().collect();
        ordered.sort_by_key(|(n, w)| (w.start, *n));
        let by_number = ordered
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (*n, i))
            .collect();
        Steps {
            windows: ordered.into_iter().map(|(_, w)| w).collect(),
            by_number,
        }
    }

    /// One window holding everything: a whole session of `duration_ns`.
    pub(super) fn whole(duration_ns: u64) -> Steps {
        Steps {
            windows: vec![Window {
                start: 0,
                end: u64::MAX,
                duration: duration_ns,
            }],
            by_number: HashMap::new(),
        }
    }

    /// Number of windows.
    pub(super) fn len(&self) -> usize {
        self.windows.len()
    }

    /// Whether this is a whole session rather than steps.
    fn is_whole(&self) -> bool {
        self.windows.len() == 1 && self.windows[0].end == u64::MAX
    }

    /// Each window's duration, ns.
    pub(super) fn durations(&self) -> Vec<f64> {
        self.windows.iter().map(|w| w.duration as f64).collect()
    }

    /// Each window's start and end, ns.
    pub(super) fn bounds(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.windows.iter().map(|w| (w.start, w.end))
    }

    /// The window of the event starting at `t`: the latest-starting one that holds it.
    pub(super) fn at(&self, t: u64) -> Option<usize> {
        let after = self.windows.partition_point(|w| w.start <= t);
        (after.saturating_sub(LOOK_BACK)..after)
            .rev()
            // A zero-length step still holds an event starting with it.
            .find(|&i| t < self.windows[i].end.max(self.windows[i].start + 1))
    }

    /// The window of step number `n` (the whole session's for any number).
    pub(super) fn numbered(&self, n: i64) -> Option<usize> {
        if self.is_whole() {
            Some(0)
        } else {
            self.by_number.get(&n).copied()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(step: i64, start: u64, end: u64) -> StepSpan {
        StepSpan {
            step,
            start,
            end,
            cut: false,
        }
    }

    #[test]
    fn events_fall_in_the_step_that_holds_their_start() {
        // Step 2 annotated on two threads; step 3 overlaps the end of step 2.
        let steps = Steps::of(&[
            span(1, 0, 100),
            span(2, 100, 180),
            span(2, 105, 200),
            span(3, 190, 300),
        ]);
        assert_eq!(steps.len(), 3);
        assert_eq!(steps.durations(), [100.0, 95.0, 110.0]);
        assert_eq!(steps.at(0), Some(0));
        assert_eq!(steps.at(99), Some(0));
        assert_eq!(steps.at(100), Some(1));
        assert_eq!(steps.at(195), Some(2));
        assert_eq!(steps.at(300), None);
        assert_eq!(steps.numbered(2), Some(1));
        assert_eq!(steps.numbered(9), None);
        let whole = Steps::whole(500);
        assert_eq!((whole.at(12345), whole.numbered(9)), (Some(0), Some(0)));
        assert_eq!(whole.durations(), [500.0]);
    }
}
