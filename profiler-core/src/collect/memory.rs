//! The tracking allocator's memory events, finished as XProf's Memory Profile reads
//! them: each gets its allocator's name, the stats XProf expects of every allocation
//! event, and the annotations open on its thread when it was recorded, as its op.
//!
//! The annotations are found on the event's own line, after the line's records are
//! all read: the events that contain the memory event's instant, walked in start order
//! with a stack of those still open. Only lines holding memory events pay for it.

use super::line::LineBuilder;
use crate::alloc::HostLevel;
use crate::schema;
use crate::tags::MemoryEvent;
use crate::xspace::{tf_op, PlaneBuilder, Stats, XEvent, XStat, XStatValue};

/// Finishes the memory events of `line`.
pub(super) fn finish(line: &mut LineBuilder<'_>, plane: &mut PlaneBuilder) {
    if line.memory.is_empty() {
        return;
    }
    let ops = enclosing_ops(&line.events, &line.memory, plane);
    let allocator = reference(plane, schema::HOST_ALLOCATOR);
    for (&(i, kind), op) in line.memory.iter().zip(ops) {
        let mut added: Vec<XStat> = vec![
            plane.stat(schema::ALLOCATOR_NAME, allocator.clone()),
            plane.stat(schema::BYTES_RESERVED, XStatValue::Int64(0)),
        ];
        let event = &line.events[i];
        let size = match kind {
            MemoryEvent::Block => plane
                .find_stat_metadata_id(schema::ALLOCATION_BYTES)
                .and_then(|id| event.stat(Some(id)))
                .and_then(XStatValue::as_i64)
                .unwrap_or(0),
            MemoryEvent::Snapshot => {
                // A snapshot is no block: 0 bytes at address 0, as XProf reads absent stats.
                added.push(plane.stat(schema::ALLOCATION_BYTES, XStatValue::Int64(0)));
                added.push(plane.stat(schema::ADDRESS, XStatValue::Int64(0)));
                0
            }
        };
        added.push(plane.stat(schema::REQUESTED_BYTES, XStatValue::Int64(size)));
        if let Some(Op { tf_op, innermost }) = op {
            if let Some(tf_op) = tf_op {
                let value = reference(plane, &tf_op);
                added.push(plane.stat(schema::TF_OP, value));
            }
            let value = reference(plane, &innermost);
            added.push(plane.stat(schema::REGION_TYPE, value));
        }
        let stats = &mut line.events[i].stats;
        stats.reserve_exact(added.len());
        stats.extend(added);
    }
}

/// A snapshot of the host heap at `at` (session-relative ps) that no thread wrote: the
/// heap at a session's start or end, with the stats a finished fold snapshot has.
/// `grew`: since the snapshot before it (`MemoryAllocation`) or not.
pub(super) fn edge_snapshot(
    plane: &mut PlaneBuilder,
    at: i64,
    level: &HostLevel,
    grew: bool,
) -> XEvent {
    let name = if grew {
        schema::MEMORY_ALLOCATION
    } else {
        schema::MEMORY_DEALLOCATION
    };
    let allocator = reference(plane, schema::HOST_ALLOCATOR);
    let stats = Stats::from([
        plane.stat(schema::BYTES_ALLOCATED, XStatValue::Int64(level.in_use)),
        plane.stat(schema::PEAK_BYTES_IN_USE, XStatValue::Int64(level.peak)),
        plane.stat(schema::ALLOCATOR_NAME, allocator),
        plane.stat(schema::BYTES_RESERVED, XStatValue::Int64(0)),
        plane.stat(schema::ALLOCATION_BYTES, XStatValue::Int64(0)),
        plane.stat(schema::ADDRESS, XStatValue::Int64(0)),
        plane.stat(schema::REQUESTED_BYTES, XStatValue::Int64(0)),
    ]);
    XEvent::new(plane.event_metadata_id(name), at, 0).with_stats(stats)
}

/// A string stat value interned in the plane, as TSL writes repeated strings.
fn reference(plane: &mut PlaneBuilder, text: &str) -> XStatValue {
    XStatValue::Ref(plane.stat_metadata_id(text) as u64)
}

/// What the annotations open around a memory event say.
#[derive(Debug, PartialEq)]
struct Op {
    /// XProf's op of the annotations inside the enclosing step (all of them outside
    /// any step); `None` when only the step itself was open.
    tf_op: Option<String>,
    /// The innermost open annotation's name.
    innermost: String,
}

/// For each of `memory` (indices into `events`, which have session-relative offsets),
/// the op of the events containing it, or `None` when none does.
fn enclosing_ops(
    events: &[XEvent],
    memory: &[(usize, MemoryEvent)],
    plane: &PlaneBuilder,
) -> Vec<Option<Op>> {
    let step_id = plane.find_stat_metadata_id(schema::STEP_NUM);
    let span = |i: usize| {
        let e = &events[i];
        (e.offset_ps(), e.offset_ps() + e.duration_ps)
    };
    let mut order: Vec<usize> = (0..events.len())
        .filter(|&i| events[i].duration_ps > 0)
        .chain(memory.iter().map(|&(i, _)| i))
        .collect();
    // Start order, the longest first on ties (a parent before its children), and an
    // instant after every event starting with it.
    order.sort_by_key(|&i| {
        let (start, end) = span(i);
        let instant = events[i].duration_ps == 0;
        (start, instant, std::cmp::Reverse(end))
    });
    let mut slot_of: Vec<(usize, usize)> = memory
        .iter()
        .enumerate()
        .map(|(k, &(i, _))| (i, k))
        .collect();
    slot_of.sort_unstable();
    let mut ops: Vec<Option<Op>> = memory.iter().map(|_| None).collect();
    let mut open: Vec<usize> = Vec::new();
    for i in order {
        let (start, _) = span(i);
        while open.last().is_some_and(|&top| span(top).1 < start) {
            open.pop();
        }
        if events[i].duration_ps > 0 {
            open.push(i);
            continue;
        }
        let Ok(at) = slot_of.binary_search_by_key(&i, |&(e, _)| e) else {
            continue;
        };
        // Outermost first; an event that overlapped its parent only in part may have
        // ended below the top.
        let chain: Vec<usize> = open
            .iter()
            .copied()
            .filter(|&e| span(e).1 >= start)
            .collect();
        ops[slot_of[at].1] = op_of(&chain, events, plane, step_id);
    }
    ops
}

/// The op of the open events `chain` (outermost first).
fn op_of(
    chain: &[usize],
    events: &[XEvent],
    plane: &PlaneBuilder,
    step_id: Option<i64>,
) -> Option<Op> {
    let name = |i: usize| plane.event_name(events[i].metadata_id).unwrap_or("");
    let innermost = name(*chain.last()?).to_owned();
    let step_at = chain
        .iter()
        .position(|&i| events[i].stat(step_id).is_some());
    let inside = &chain[step_at.map_or(0, |s| s + 1)..];
    let names: Vec<&str> = inside.iter().map(|&i| name(i)).collect();
    Some(Op {
        tf_op: tf_op(&names),
        innermost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_event_takes_the_op_of_the_annotations_open_around_it() {
        let mut plane = PlaneBuilder::new(1, schema::HOST_PLANE);
        let mut event = |name: &str, start: i64, end: i64, step: Option<i64>| {
            let stats = step
                .map(|s| Stats::from([plane.stat(schema::STEP_NUM, XStatValue::Int64(s))]))
                .unwrap_or_default();
            XEvent::new(plane.event_metadata_id(name), start, end - start).with_stats(stats)
        };
        // Train 3 [0, 100] > forward [10, 90] > attn [20, 40]; memory events at 30 (in
        // attn), 40 (attn's last instant), 50 (forward), 95 (the step alone) and 120
        // (outside everything); Eval [130, 150] > mlp [135, 145] with one at 140.
        let events = vec![
            event("Train", 0, 100, Some(3)),
            event("forward", 10, 90, None),
            event("attn", 20, 40, None),
            event("MemoryAllocation", 30, 30, None),
            event("MemoryAllocation", 40, 40, None),
            event("MemoryDeallocation", 50, 50, None),
            event("MemoryAllocation", 95, 95, None),
            event("MemoryAllocation", 120, 120, None),
            event("Eval", 130, 150, None),
            event("mlp", 135, 145, None),
            event("MemoryAllocation", 140, 140, None),
        ];
        let memory: Vec<(usize, MemoryEvent)> = [3, 4, 5, 6, 7, 10]
            .into_iter()
            .map(|i| (i, MemoryEvent::Snapshot))
            .collect();
        let ops = enclosing_ops(&events, &memory, &plane);
        let op = |tf_op: Option<&str>, innermost: &str| {
            Some(Op {
                tf_op: tf_op.map(str::to_owned),
                innermost: innermost.to_owned(),
            })
        };
        assert_eq!(
            ops,
            [
                op(Some("forward/attn:attn"), "attn"),
                op(Some("forward/attn:attn"), "attn"),
                op(Some("forward:forward"), "forward"),
                op(None, "Train"),
                None,
                op(Some("Eval/mlp:mlp"), "mlp"),
            ]
        );
    }
}
