//! The memory side of a summary: each allocator's peak, its peak in each step, and
//! which ops held and allocated it, read from the XProf memory events of a profile's
//! `/host:CPU` plane (`MemoryAllocation` / `MemoryDeallocation` with an
//! `allocator_name`), as prof's tracking allocator and GPU tracer write them and as
//! TensorFlow's and JAX's allocators do.
//!
//! Bytes in use are XProf's: `bytes_reserved` + `bytes_allocated` after each event.

use std::collections::{BTreeMap, HashMap};

use profiler_core::schema;
use profiler_core::xspace::{XPlane, XStat, XStatValue};
use profiler_core::Profile;

use crate::ops::memory_op;

/// One allocator's highest bytes in use in a profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPeak {
    /// The allocator (`host`, `GPU_0`, `GPU_0_bfc`, ...).
    pub allocator: String,
    /// Its highest bytes in use (reserved and allocated) at any of its memory events:
    /// the peak of XProf's memory timeline.
    pub peak_bytes: u64,
    /// The allocator's own peak, the highest `peak_bytes_in_use` its events carry
    /// (XProf's "peak heap usage lifetime"): what `prof::memory::host().peak` said when
    /// the session stopped. It counts from the last `memory::reset_peak` (or the
    /// process start), so it can predate the session, and it sees peaks between two
    /// events that [`peak_bytes`](MemoryPeak::peak_bytes) cannot; 0 when the events
    /// carry none.
    pub allocator_peak_bytes: u64,
    /// The step it was reached in, if any.
    pub step: Option<i64>,
    /// The op of the event that reached it, named as the time table names it (`-`
    /// when it carried none; see [`MemoryByOp::op`]).
    pub op: String,
}

/// What one op did to one allocator's memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryByOp {
    /// The allocator.
    pub allocator: String,
    /// The op of the events (`-` for none): for prof's, the innermost annotation open
    /// where the memory was allocated or released, the name its row in the time table
    /// has (`dense_1/MatMul`, not XProf's `forward/dense_1_MatMul:dense_1_matmul`); for
    /// TensorFlow's and JAX's, their `tf_op`.
    pub op: String,
    /// Bytes of the blocks this op allocated that were still held when the allocator
    /// reached its peak: what XProf's breakdown at the peak files under the op.
    pub held_at_peak: u64,
    /// The highest bytes in use at any of the op's memory events.
    pub peak_bytes: u64,
    /// Blocks the op allocated (a tracking allocator's snapshots are not blocks).
    pub blocks: u64,
    /// Their bytes, together.
    pub allocated_bytes: u64,
}

/// One memory event, on the summary's time axis.
#[derive(Debug)]
struct Event<'a> {
    at_ns: u64,
    allocator: &'a str,
    allocated: bool,
    in_use: u64,
    peak: u64,
    bytes: u64,
    address: u64,
    op: &'a str,
}

/// The memory events of a profile's host plane, in time order.
fn events(profile: &Profile) -> Vec<Event<'_>> {
    let Some(host) = profile.xspace().plane(schema::HOST_PLANE) else {
        return Vec::new();
    };
    let ids =
        |names: &[&str]| -> Vec<Option<i64>> { names.iter().map(|n| host.stat_id(n)).collect() };
    let [allocator, reserved, allocated, peak, bytes, address, op, region] = ids(&[
        schema::ALLOCATOR_NAME,
        schema::BYTES_RESERVED,
        schema::BYTES_ALLOCATED,
        schema::PEAK_BYTES_IN_USE,
        schema::ALLOCATION_BYTES,
        schema::ADDRESS,
        schema::TF_OP,
        schema::REGION_TYPE,
    ])[..] else {
        return Vec::new();
    };
    let Some(allocator) = allocator else {
        return Vec::new();
    };
    let alloc_id = host
        .event_metadata
        .values()
        .find(|m| m.name == schema::MEMORY_ALLOCATION)
        .map(|m| m.id);
    let release_id = host
        .event_metadata
        .values()
        .find(|m| m.name == schema::MEMORY_DEALLOCATION)
        .map(|m| m.id);
    let int = |e: &[XStat], id: Option<i64>| -> u64 {
        let v = id.and_then(|id| e.iter().find(|s| s.metadata_id == id));
        match v.and_then(|s| s.value.as_ref()) {
            Some(XStatValue::Int64(v)) => *v as u64,
            Some(XStatValue::Uint64(v)) => *v,
            _ => 0,
        }
    };
    let mut out = Vec::new();
    for line in &host.lines {
        for e in &line.events {
            let kind = Some(e.metadata_id);
            if kind != alloc_id && kind != release_id {
                continue;
            }
            let Some(name) = text(host, &e.stats, Some(allocator)) else {
                continue;
            };
            let (start_ps, _) = line.event_span_ps(e);
            out.push(Event {
                at_ns: (start_ps.max(0) / 1000) as u64,
                allocator: name,
                allocated: kind == alloc_id,
                in_use: int(&e.stats, reserved).saturating_add(int(&e.stats, allocated)),
                peak: int(&e.stats, peak),
                bytes: int(&e.stats, bytes),
                address: int(&e.stats, address),
                op: memory_op(text(host, &e.stats, op), text(host, &e.stats, region))
                    .unwrap_or("-"),
            });
        }
    }
    out.sort_by_key(|e| e.at_ns);
    out
}

/// A string stat, inline or interned.
fn text<'a>(plane: &'a XPlane, stats: &'a [XStat], id: Option<i64>) -> Option<&'a str> {
    let id = id?;
    plane.text_of(stats.iter().find(|s| s.metadata_id == id)?.value.as_ref()?)
}

/// What the memory events of several profiles say: each allocator's peak, its peak
/// per step, and its use by op. `steps[p]` are profile `p`'s steps as
/// `(step, start ns, end ns)`.
#[derive(Debug, Default)]
pub(super) struct Memory {
    pub(super) peaks: Vec<MemoryPeak>,
    pub(super) by_op: Vec<MemoryByOp>,
    /// Per step, per allocator, the highest bytes in use during the step.
    pub(super) step_peaks: BTreeMap<i64, BTreeMap<String, u64>>,
}

impl Memory {
    pub(super) fn of(profiles: &[&Profile], steps: &[Vec<(i64, u64, u64)>]) -> Memory {
        let mut memory = Memory::default();
        let mut peaks: BTreeMap<String, MemoryPeak> = BTreeMap::new();
        let mut by_op: BTreeMap<(String, String), MemoryByOp> = BTreeMap::new();
        for (profile, steps) in profiles.iter().zip(steps) {
            let events = events(profile);
            let step_of = |at: u64| {
                steps
                    .iter()
                    .find(|&&(_, start, end)| start <= at && at <= end)
                    .map(|&(step, _, _)| step)
            };
            // Per allocator: the blocks held (address -> op, bytes) and what they were
            // by op at this profile's peak.
            let mut live: HashMap<&str, HashMap<u64, (&str, u64)>> = HashMap::new();
            let mut at_peak: HashMap<&str, (u64, HashMap<&str, u64>)> = HashMap::new();
            for e in &events {
                let row = by_op
                    .entry((e.allocator.to_owned(), e.op.to_owned()))
                    .or_insert_with(|| MemoryByOp {
                        allocator: e.allocator.to_owned(),
                        op: e.op.to_owned(),
                        held_at_peak: 0,
                        peak_bytes: 0,
                        blocks: 0,
                        allocated_bytes: 0,
                    });
                row.peak_bytes = row.peak_bytes.max(e.in_use);
                let blocks = live.entry(e.allocator).or_default();
                let is_block = e.address != 0 && e.bytes > 0;
                if is_block && e.allocated {
                    row.blocks += 1;
                    row.allocated_bytes = row.allocated_bytes.saturating_add(e.bytes);
                    blocks.insert(e.address, (e.op, e.bytes));
                } else if is_block {
                    blocks.remove(&e.address);
                }
                let step = step_of(e.at_ns);
                if let Some(step) = step {
                    let peak = memory
                        .step_peaks
                        .entry(step)
                        .or_default()
                        .entry(e.allocator.to_owned())
                        .or_default();
                    *peak = (*peak).max(e.in_use);
                }
                // The first event to reach the allocator's peak: what was held then.
                let seen = at_peak.entry(e.allocator).or_default();
                if e.in_use > seen.0 {
                    let mut held: HashMap<&str, u64> = HashMap::new();
                    for (op, bytes) in blocks.values() {
                        *held.entry(op).or_default() += bytes;
                    }
                    *seen = (e.in_use, held);
                }
                let peak = peaks
                    .entry(e.allocator.to_owned())
                    .or_insert_with(|| MemoryPeak {
                        allocator: e.allocator.to_owned(),
                        peak_bytes: 0,
                        allocator_peak_bytes: 0,
                        step: None,
                        op: String::new(),
                    });
                peak.allocator_peak_bytes = peak.allocator_peak_bytes.max(e.peak);
                if e.in_use > peak.peak_bytes || peak.op.is_empty() {
                    peak.peak_bytes = e.in_use;
                    peak.step = step;
                    e.op.clone_into(&mut peak.op);
                }
            }
            for (allocator, (_, held)) in at_peak {
                for (op, bytes) in held {
                    if let Some(row) = by_op.get_mut(&(allocator.to_owned(), op.to_owned())) {
                        row.held_at_peak = row.held_at_peak.max(bytes);
                    }
                }
            }
        }
        memory.peaks = peaks.into_values().collect();
        memory.by_op = by_op.into_values().collect();
        memory.by_op.sort_by(|a, b| {
            a.allocator
                .cmp(&b.allocator)
                .then(b.held_at_peak.cmp(&a.held_at_peak))
                .then(b.peak_bytes.cmp(&a.peak_bytes))
                .then(a.op.cmp(&b.op))
        });
        memory
    }
}
