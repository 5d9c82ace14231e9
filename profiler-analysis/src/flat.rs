//! A profile's events laid flat: each with its start and end on its producer's time
//! axis (ns), its self time, and its step number when it is a step root. What the
//! analyses of finished profiles ([`crate::summary`], [`crate::diff`]) and of a running
//! job's snapshots ([`crate::live`]) read.
//!
//! Self time is an event's duration minus that of the events nested directly inside it
//! on the same line. A step root is an event with the `_r` stat and an int64
//! `step_num`, as XProf groups steps.

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XLine, XPlane};
use profiler_core::Profile;

/// One event, on a common time axis (ns) shared by the lines of its producer.
pub(crate) struct Flat<'a> {
    pub(crate) name: &'a str,
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) self_ns: u64,
    /// Its step number, when the event is a step root.
    pub(crate) step: Option<i64>,
    /// Whether the session's start or stop cut it (its `cut_by_session` stat): its
    /// span is only the part recorded.
    pub(crate) cut: bool,
    /// The event itself, for the stats an analysis reads.
    pub(crate) event: &'a XEvent,
}

/// A step: its number and the span of its root event.
pub(crate) struct StepSpan {
    pub(crate) step: i64,
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Whether the session's start or stop cut its root: its span is only the part
    /// recorded.
    pub(crate) cut: bool,
}

/// Whether a line is one prof draws for itself rather than recorded work (the same
/// lines [`Profile::event_count`] leaves out).
pub(crate) fn is_bookkeeping(line: &XLine) -> bool {
    line.is_bookkeeping()
}

/// The ids of the stats that mark a step root, and a cut event, in `plane`.
pub(crate) struct StepStats {
    step_num: Option<i64>,
    root: Option<i64>,
    cut: Option<i64>,
}

impl StepStats {
    pub(crate) fn of(plane: &XPlane) -> StepStats {
        StepStats {
            step_num: plane.stat_id(schema::STEP_NUM),
            root: plane.stat_id(schema::IS_ROOT),
            cut: plane.stat_id(schema::CUT_BY_SESSION),
        }
    }
}

/// Every event of `profile` that is recorded work, with its self time: each plane's
/// lines but prof's bookkeeping ones, and no event of the task environment (the
/// session's own facts, not work).
pub(crate) fn flatten(profile: &Profile) -> Vec<Flat<'_>> {
    let mut out = Vec::new();
    for plane in &profile.xspace().planes {
        if plane.name == schema::TASK_ENV_PLANE {
            continue;
        }
        let ids = StepStats::of(plane);
        for line in plane.lines.iter().filter(|l| !is_bookkeeping(l)) {
            flatten_line(plane, line, &ids, &mut out);
        }
    }
    out
}

/// Appends the events of `line` (of `plane`) to `out`, with their self times.
pub(crate) fn flatten_line<'a>(
    plane: &'a XPlane,
    line: &'a XLine,
    ids: &StepStats,
    out: &mut Vec<Flat<'a>>,
) {
    let base = out.len();
    for e in &line.events {
        let name = plane.event_name(e.metadata_id).unwrap_or("");
        if name == schema::MEMORY_ALLOCATION || name == schema::MEMORY_DEALLOCATION {
            // TSL's memory events are instants of no duration, memory and not work:
            // the memory tables and rows hold them.
            continue;
        }
        let (start_ps, end_ps) = line.event_span_ps(e);
        let start = (start_ps.max(0) / 1000) as u64;
        let end = (end_ps.max(start_ps).max(0) / 1000) as u64;
        let is_root = e.stat(ids.root).is_some();
        let step = e
            .stat(ids.step_num)
            .filter(|_| is_root)
            .and_then(|v| v.as_i64());
        out.push(Flat {
            name,
            start,
            end,
            self_ns: end - start,
            step,
            cut: e.stat(ids.cut).is_some(),
            event: e,
        });
    }
    // Self time: walk the line in start order (longest first on ties, so a parent
    // precedes its children) with a stack of the events still open.
    let mut order: Vec<usize> = (base..out.len()).collect();
    order.sort_by(|&a, &b| {
        out[a]
            .start
            .cmp(&out[b].start)
            .then(out[b].end.cmp(&out[a].end))
    });
    let mut open: Vec<usize> = Vec::new();
    for i in order {
        while open.last().is_some_and(|&p| out[p].end <= out[i].start) {
            open.pop();
        }
        if let Some(&parent) = open.last() {
            if out[i].end <= out[parent].end {
                let child = out[i].end - out[i].start;
                out[parent].self_ns = out[parent].self_ns.saturating_sub(child);
                open.push(i);
            }
            // A partial overlap is no nesting: it is neither the parent's child nor
            // a parent of what follows.
        } else {
            open.push(i);
        }
    }
}

/// The step roots among `events`, in start order.
pub(crate) fn step_spans(events: &[Flat<'_>]) -> Vec<StepSpan> {
    let mut steps: Vec<StepSpan> = events
        .iter()
        .filter_map(|e| {
            e.step.map(|step| StepSpan {
                step,
                start: e.start,
                end: e.end,
                cut: e.cut,
            })
        })
        .collect();
    steps.sort_by_key(|s| (s.start, s.step));
    steps
}

/// How long a profile without steps ran: its recorded wall time, or the span of its
/// events.
pub(crate) fn run_length(profile: &Profile, events: &[Flat<'_>]) -> u64 {
    let run = profile
        .wall_time_ns()
        .map_or(0, |(start, stop)| stop.saturating_sub(start));
    if run == 0 {
        events.iter().map(|e| e.end).max().unwrap_or(0)
            - events.iter().map(|e| e.start).min().unwrap_or(0)
    } else {
        run
    }
}

#[cfg(test)]
mod tests {
    use prof_test_support::spaces;
    use profiler_core::xspace::{XEvent, XLine};

    use super::*;

    #[test]
    fn flatten_reads_every_line_of_work_and_nothing_else() {
        let mut space = spaces::space();
        // An event on a line of the task environment: the session's facts, not work.
        let env = space
            .planes
            .iter_mut()
            .find(|p| p.name == schema::TASK_ENV_PLANE)
            .expect("the fixture has a task environment");
        env.lines.push(XLine {
            id: 1,
            name: "main".into(),
            events: vec![XEvent::new(1, 0, 1_000_000)],
            ..XLine::default()
        });
        let profile = Profile::new(space);
        let events = flatten(&profile);
        // The fixture's slices and instants on both planes; not its counter samples
        // (a bookkeeping line) nor the task environment's event.
        assert_eq!(events.len() as u64, spaces::SLICES);
        let total: u64 = events.iter().map(|e| e.end - e.start).sum();
        assert_eq!(total, spaces::DURATION_NS as u64);
        assert!(events.iter().all(|e| e.name != schema::HOST_BYTES_IN_USE));
        // The step root and the events nested in it, on the host line's own axis
        // (its timestamp, 1000 ns, added).
        let steps: Vec<_> = events
            .iter()
            .filter_map(|e| e.step.map(|s| (e.name, s, e.start, e.end)))
            .collect();
        assert_eq!(steps, [("Train", 3, 1000, 2000)]);
        let train = events.iter().find(|e| e.name == "Train").expect("Train");
        // 1000 ns less its direct children, forward (300) and backward (500) (the
        // checkpoint marker is an instant); the launch and the enqueue nested in
        // backward count against backward, not again against the step.
        assert_eq!(train.self_ns, 1000 - 300 - 500);
        let backward = events
            .iter()
            .find(|e| e.name == "backward")
            .expect("backward");
        assert_eq!(backward.self_ns, 500 - 100 - 50);
        let kernel = events
            .iter()
            .find(|e| e.name == "gemm_kernel")
            .expect("the GPU plane's kernel");
        assert_eq!((kernel.start, kernel.end), (1500, 1600));
    }
}
