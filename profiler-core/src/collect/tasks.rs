//! Async tasks, reconstructed at collection from their polls.
//!
//! A `tracing` span held across `.await` is entered once per poll, possibly on several
//! worker threads; so is a future under `#[prof::instrument]`. Each entry is recorded
//! as an ordinary event on its thread's line, tagged with a `POLL_OF` field (the tags
//! are in `crate::tags`) naming its task (the span's id, or the future's id with
//! `PROF_TASK` set). The hot path cannot know whether an entry is the first of many;
//! the collector, which sees every thread, can. `tracing` reuses the ids of closed
//! spans, so a span's close is recorded too (a `CLOSED` sample), and the entries of
//! one id are split at its closes.
//!
//! A span entered more than once is a task when it also closed during the session or
//! ran on more than one thread. That leaves out the spans candle-transformers keeps in
//! each layer and enters on every forward pass: they live as long as the model, on the
//! caller's thread, and each entry is a whole piece of work, not a poll. Every future
//! under `#[prof::instrument]` polled more than once is a task.
//!
//! For every task the collector:
//! - adds one lifetime event, from the first poll's start to the last poll's end, on a
//!   `Tasks` line, with the first poll's fields (which tell tasks apart) and stats
//!   `busy_ns` (time inside polls), `idle_ns` (the rest of the lifetime: waiting to be
//!   woken or scheduled), `polls` and `threads`;
//! - links consecutive polls that ran on different threads with XProf's producer /
//!   consumer stats: XProf's trace viewer draws them as flow arrows and puts the later
//!   poll into the step of the earlier one. Always for `#[prof::instrument]` futures,
//!   from `host_tracer_level` 3 for `tracing` spans.
//!
//! Lifetimes of concurrent tasks overlap, and timeline viewers can only nest events on
//! a line, so the lifetimes are packed onto as many `Tasks` lines as tasks ever ran at
//! once.

use std::collections::HashMap;

use super::line::LineBuilder;
use crate::gate::VERBOSE_LEVEL;
use crate::schema;
use crate::tags::PROF_TASK;
use crate::xspace::{PlaneBuilder, Stats, XEvent, XStatValue};

/// Level from which the polls of `tracing` tasks are linked by flows.
const FLOW_LEVEL: u8 = VERBOSE_LEVEL;

/// XProf context type of the poll-to-poll links: TSL's `ContextType::kGeneric`.
const CONTEXT_TYPE: i64 = 0;

/// One poll: which line, which event there, and when (session-relative ps).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Poll {
    line: usize,
    event: usize,
    start: i64,
    end: i64,
}

/// The polls of one span or future, sorted by start.
struct Task {
    id: u64,
    polls: Vec<Poll>,
    closed: bool,
    /// Distinct threads (lines) the polls ran on.
    threads: usize,
}

impl Task {
    fn new(id: u64, polls: Vec<Poll>, closed: bool) -> Task {
        let mut lines: Vec<usize> = polls.iter().map(|p| p.line).collect();
        lines.sort_unstable();
        lines.dedup();
        Task {
            id,
            polls,
            closed,
            threads: lines.len(),
        }
    }

    fn is_prof_future(&self) -> bool {
        self.id & PROF_TASK != 0
    }

    fn is_task(&self) -> bool {
        self.polls.len() > 1 && (self.is_prof_future() || self.closed || self.threads > 1)
    }
}

/// Finds the tasks among the lines' events, links their polls, and returns their
/// lifetime events packed into lanes (session-relative offsets), one per line.
pub(super) fn link(
    lines: &mut [LineBuilder<'_>],
    host_level: u8,
    plane: &mut PlaneBuilder,
) -> Vec<Vec<XEvent>> {
    let mut polls: HashMap<u64, Vec<Poll>> = HashMap::new();
    for (l, line) in lines.iter().enumerate() {
        for &(event, task) in &line.polls {
            let e = &line.events[event];
            polls.entry(task).or_default().push(Poll {
                line: l,
                event,
                start: e.offset_ps(),
                end: e.offset_ps() + e.duration_ps,
            });
        }
    }
    polls.retain(|_, p| p.len() > 1);
    let mut closes: HashMap<u64, Vec<i64>> = HashMap::new();
    for line in lines.iter() {
        for &(task, at) in &line.closes {
            if polls.contains_key(&task) {
                closes.entry(task).or_default().push(at);
            }
        }
    }
    let mut tasks: Vec<Task> = polls
        .into_iter()
        .flat_map(|(id, mut polls)| {
            polls.sort_by_key(|p| (p.start, p.line));
            let mut closes = closes.remove(&id).unwrap_or_default();
            closes.sort_unstable();
            split_at_closes(polls, &closes)
                .into_iter()
                .map(move |(polls, closed)| Task::new(id, polls, closed))
        })
        .filter(Task::is_task)
        .collect();
    // Deterministic link ids and lanes: in order of first poll.
    tasks.sort_by_key(|t| (t.polls[0].start, t.id));

    let mut next_link = 1u64;
    let mut lifetimes = Vec::with_capacity(tasks.len());
    for task in &tasks {
        // Before linking: the lifetime copies the first poll's stats, not its links.
        lifetimes.push(lifetime(lines, plane, task));
        if task.is_prof_future() || host_level >= FLOW_LEVEL {
            for pair in task.polls.windows(2) {
                if pair[0].line != pair[1].line {
                    add_link(lines, plane, pair[0], pair[1], next_link);
                    next_link += 1;
                }
            }
        }
    }
    pack(lifetimes)
}

/// Splits the polls of one id (sorted by start) into those of each span that had the
/// id, given the id's closes (sorted): a poll belongs to the first span not closed
/// before it started. Each part says whether its span closed.
fn split_at_closes(polls: Vec<Poll>, closes: &[i64]) -> Vec<(Vec<Poll>, bool)> {
    let mut parts: Vec<(Vec<Poll>, bool)> = vec![(Vec::new(), false)];
    let mut closes = closes.iter().peekable();
    for poll in polls {
        while closes.next_if(|&&at| at <= poll.start).is_some() {
            if let Some(last) = parts.last_mut() {
                last.1 = true;
            }
        }
        if parts
            .last()
            .is_some_and(|(p, closed)| *closed && !p.is_empty())
        {
            parts.push((Vec::new(), false));
        }
        if let Some((part, closed)) = parts.last_mut() {
            // A close seen before any poll of this part belonged to an earlier span.
            *closed = false;
            part.push(poll);
        }
    }
    if closes.peek().is_some() {
        if let Some(last) = parts.last_mut() {
            last.1 = true;
        }
    }
    parts.retain(|(p, _)| !p.is_empty());
    parts
}

fn add_link(
    lines: &mut [LineBuilder<'_>],
    plane: &mut PlaneBuilder,
    from: Poll,
    to: Poll,
    id: u64,
) {
    let stats = &mut lines[from.line].events[from.event].stats;
    stats.push(plane.stat(schema::PRODUCER_TYPE, XStatValue::Int64(CONTEXT_TYPE)));
    stats.push(plane.stat(schema::PRODUCER_ID, XStatValue::Uint64(id)));
    let stats = &mut lines[to.line].events[to.event].stats;
    stats.push(plane.stat(schema::CONSUMER_TYPE, XStatValue::Int64(CONTEXT_TYPE)));
    stats.push(plane.stat(schema::CONSUMER_ID, XStatValue::Uint64(id)));
}

/// The lifetime event of a task.
fn lifetime(lines: &[LineBuilder<'_>], plane: &mut PlaneBuilder, task: &Task) -> XEvent {
    let polls = &task.polls;
    let start = polls[0].start;
    let end = polls.iter().map(|p| p.end).max().unwrap_or(start);
    // Busy is the union of the polls: a span re-entered while already entered on the
    // same thread must not count twice.
    let (mut busy, mut covered) = (0i64, start);
    for p in polls {
        let from = p.start.max(covered);
        if p.end > from {
            busy += p.end - from;
            covered = p.end;
        }
    }
    let first = &lines[polls[0].line].events[polls[0].event];
    let lifetime = end - start;
    // A step's fields stay on the step: a lifetime is not a second step root.
    let not_copied = [schema::STEP_NUM, schema::IS_ROOT].map(|n| plane.find_stat_metadata_id(n));
    let mut stats: Stats = first
        .stats
        .iter()
        .filter(|s| !not_copied.contains(&Some(s.metadata_id)))
        .cloned()
        .collect();
    stats.extend(
        [
            ("busy_ns", busy / 1000),
            ("idle_ns", lifetime / 1000 - busy / 1000),
            ("polls", polls.len() as i64),
            ("threads", task.threads as i64),
        ]
        .into_iter()
        .map(|(name, value)| plane.stat(name, XStatValue::Int64(value))),
    );
    XEvent::new(first.metadata_id, start, lifetime).with_stats(stats)
}

/// Packs events sorted by start onto the fewest lanes on which none overlaps another.
fn pack(events: Vec<XEvent>) -> Vec<Vec<XEvent>> {
    let mut lanes: Vec<Vec<XEvent>> = Vec::new();
    for event in events {
        let start = event.offset_ps();
        let free = lanes.iter_mut().find(|lane| {
            lane.last()
                .is_some_and(|last| last.offset_ps() + last.duration_ps <= start)
        });
        match free {
            Some(lane) => lane.push(event),
            None => lanes.push(vec![event]),
        }
    }
    lanes
}

#[cfg(test)]
mod tests {
    use super::super::line::lane_tests::{event, spans};
    use super::*;

    fn poll(start: i64) -> Poll {
        Poll {
            line: 0,
            event: start as usize,
            start,
            end: start + 1,
        }
    }

    fn starts(parts: &[(Vec<Poll>, bool)]) -> Vec<(Vec<i64>, bool)> {
        parts
            .iter()
            .map(|(p, closed)| (p.iter().map(|p| p.start).collect(), *closed))
            .collect()
    }

    #[test]
    fn polls_of_a_reused_id_split_at_its_closes() {
        let polls: Vec<Poll> = [1, 2, 5, 6, 9].into_iter().map(poll).collect();
        assert_eq!(
            starts(&split_at_closes(polls.clone(), &[])),
            [(vec![1, 2, 5, 6, 9], false)]
        );
        assert_eq!(
            starts(&split_at_closes(polls.clone(), &[3, 7])),
            [(vec![1, 2], true), (vec![5, 6], true), (vec![9], false)]
        );
        assert_eq!(
            starts(&split_at_closes(polls.clone(), &[0, 3, 4, 10])),
            [(vec![1, 2], true), (vec![5, 6, 9], true)]
        );
    }

    #[test]
    fn lanes_never_hold_overlapping_events() {
        let lanes = pack(vec![event(0, 10), event(2, 4), event(5, 12), event(10, 11)]);
        assert_eq!(
            spans(&lanes),
            [vec![(0, 10), (10, 11)], vec![(2, 4), (5, 12)]]
        );
    }
}
