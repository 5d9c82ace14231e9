//! Memory in use, per allocator and per op, as per-step peaks.
//!
//! Two sources, read as XProf's memory profile reads them:
//! - TSL's `MemoryAllocation` / `MemoryDeallocation` events on `/host:CPU`: the
//!   allocator (`allocator_name`), what it holds after the event (`bytes_allocated`
//!   plus `bytes_reserved`, the quantity XProf's peak is of), and the allocation
//!   (`addr`, `allocation_bytes`, and the op that made it: `tf_op`, or for prof's
//!   own events the annotation's name, as the time table names it; see
//!   [`crate::ops`]). An op's bytes in use are its live allocations, an allocation
//!   freed when a deallocation names its address.
//! - Counters whose name ends in `bytes_in_use` on any plane's `_counters_` line
//!   (prof's `host_bytes_in_use` from `TrackingAllocator`, `device_bytes_in_use`
//!   from the GPU tracer), one allocator each, for profiles without memory events:
//!   prof writes each of these samples beside a memory event of allocator `host` or
//!   `GPU_<n>`, so where those events are read, the counter would be the same row
//!   twice, and is left out.
//!
//! A step's peak is the highest value in use during it, counting the value left from
//! before it began.

use std::collections::{BTreeMap, HashMap};

use profiler_core::schema;
use profiler_core::xspace::XPlane;
use profiler_core::Profile;

use super::steps::Steps;
use super::values::{id, number};
use crate::ops::memory_op;

/// TSL's event names for one allocation and one deallocation.
const ALLOCATION: &str = "MemoryAllocation";
const DEALLOCATION: &str = "MemoryDeallocation";

/// Whether `name` is one of TSL's memory events (memory, not work).
pub(super) fn is_memory_event(name: &str) -> bool {
    name == ALLOCATION || name == DEALLOCATION
}

/// What one memory row is of: an allocator, or one op's allocations from it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) struct MemoryKey {
    pub(super) allocator: String,
    pub(super) op: Option<String>,
}

/// Bytes in use: the peak of each step that saw a value, and over the whole profile.
#[derive(Clone, Debug, Default)]
pub(super) struct MemorySeries {
    pub(super) per_step: Vec<f64>,
    pub(super) peak: f64,
}

/// The stats of one memory event.
struct MemoryEvent<'a> {
    at: u64,
    allocation: bool,
    allocator: &'a str,
    in_use: f64,
    addr: Option<u64>,
    bytes: f64,
    op: Option<&'a str>,
}

/// Every memory row of `profile`, by its `steps`.
pub(super) fn of(profile: &Profile, steps: &Steps) -> BTreeMap<MemoryKey, MemorySeries> {
    let mut points: HashMap<MemoryKey, Vec<(u64, f64)>> = HashMap::new();
    let space = profile.xspace();
    if let Some(host) = space.plane(schema::HOST_PLANE) {
        allocations(host, &mut points);
    }
    let with_events: Vec<String> = points.keys().map(|k| k.allocator.clone()).collect();
    for plane in &space.planes {
        counters(plane, &with_events, &mut points);
    }
    points
        .into_iter()
        .map(|(key, mut series)| {
            series.sort_by_key(|&(at, _)| at);
            (key, peaks(&series, steps))
        })
        .collect()
}

/// The allocator and op tracks of TSL's memory events on `host`.
fn allocations(host: &XPlane, points: &mut HashMap<MemoryKey, Vec<(u64, f64)>>) {
    let stat = |name| host.stat_id(name);
    let (allocator, allocated, reserved, addr, bytes, op, region) = (
        stat(schema::ALLOCATOR_NAME),
        stat(schema::BYTES_ALLOCATED),
        stat(schema::BYTES_RESERVED),
        stat(schema::ADDRESS),
        stat(schema::ALLOCATION_BYTES),
        stat(schema::TF_OP),
        stat(schema::REGION_TYPE),
    );
    let mut events = Vec::new();
    for line in &host.lines {
        for e in &line.events {
            let name = host.event_name(e.metadata_id).unwrap_or("");
            if !is_memory_event(name) {
                continue;
            }
            let (start, _) = line.event_span_ps(e);
            let int = |stat| e.stat(stat).and_then(number);
            events.push(MemoryEvent {
                at: (start.max(0) / 1000) as u64,
                allocation: name == ALLOCATION,
                allocator: e
                    .stat(allocator)
                    .and_then(|v| host.text_of(v))
                    .unwrap_or("(unnamed)"),
                in_use: int(allocated).unwrap_or(0.0) + int(reserved).unwrap_or(0.0),
                addr: e.stat(addr).and_then(id),
                bytes: int(bytes).unwrap_or(0.0),
                op: memory_op(
                    e.stat(op).and_then(|v| host.text_of(v)),
                    e.stat(region).and_then(|v| host.text_of(v)),
                ),
            });
        }
    }
    // In time order across threads; an allocator's state is the latest event's.
    events.sort_by_key(|e| e.at);
    let mut live: HashMap<(&str, u64), (&str, f64)> = HashMap::new();
    let mut by_op: HashMap<(&str, &str), f64> = HashMap::new();
    for e in &events {
        points
            .entry(MemoryKey {
                allocator: e.allocator.to_owned(),
                op: None,
            })
            .or_default()
            .push((e.at, e.in_use));
        let Some(addr) = e.addr else { continue };
        let changed = if e.allocation {
            let Some(op) = e.op else { continue };
            live.insert((e.allocator, addr), (op, e.bytes));
            let held = by_op.entry((e.allocator, op)).or_default();
            *held += e.bytes;
            (op, *held)
        } else {
            let Some((op, bytes)) = live.remove(&(e.allocator, addr)) else {
                continue;
            };
            let held = by_op.entry((e.allocator, op)).or_default();
            *held = (*held - bytes).max(0.0);
            (op, *held)
        };
        points
            .entry(MemoryKey {
                allocator: e.allocator.to_owned(),
                op: Some(changed.0.to_owned()),
            })
            .or_default()
            .push((e.at, changed.1));
    }
}

/// The allocator whose memory events a prof counter repeats: `host_bytes_in_use` on
/// `/host:CPU` is allocator `host`, `device_bytes_in_use` on `/device:GPU:<n>` is
/// `GPU_<n>` (the name `profiler_cuda::convert` writes both under).
fn allocator_of_counter(plane: &str, counter: &str) -> Option<String> {
    if plane == schema::HOST_PLANE && counter == schema::HOST_BYTES_IN_USE {
        return Some(schema::HOST_ALLOCATOR.to_owned());
    }
    let ordinal = plane.strip_prefix("/device:GPU:")?;
    (counter == "device_bytes_in_use" && ordinal.parse::<u32>().is_ok())
        .then(|| format!("{}{ordinal}", schema::GPU_ALLOCATOR_PREFIX))
}

/// The `*bytes_in_use` counters on `plane`'s counter line, but those repeating the
/// memory events of an allocator in `with_events`.
fn counters(
    plane: &XPlane,
    with_events: &[String],
    points: &mut HashMap<MemoryKey, Vec<(u64, f64)>>,
) {
    let value = plane.stat_id(schema::COUNTER_VALUE);
    // The one counter of this plane that repeats an allocator's events, if any.
    let repeated = [schema::HOST_BYTES_IN_USE, "device_bytes_in_use"]
        .into_iter()
        .find(|&counter| {
            allocator_of_counter(&plane.name, counter).is_some_and(|a| with_events.contains(&a))
        });
    for line in plane
        .lines
        .iter()
        .filter(|l| l.name == schema::COUNTERS_LINE)
    {
        for e in &line.events {
            let name = plane.event_name(e.metadata_id).unwrap_or("");
            if !name.ends_with("bytes_in_use") {
                continue;
            }
            if repeated == Some(name) {
                continue;
            }
            let Some(v) = e.stat(value).and_then(number) else {
                continue;
            };
            let (start, _) = line.event_span_ps(e);
            points
                .entry(MemoryKey {
                    allocator: format!("{name} ({})", plane.name),
                    op: None,
                })
                .or_default()
                .push(((start.max(0) / 1000) as u64, v));
        }
    }
}

/// Per-step peaks of a time-sorted series: the highest value during each step,
/// counting the one in use when it began; steps before the first value have none.
fn peaks(series: &[(u64, f64)], steps: &Steps) -> MemorySeries {
    let mut per_step = Vec::new();
    for (start, end) in steps.bounds() {
        let from = series.partition_point(|&(at, _)| at < start);
        let to = series.partition_point(|&(at, _)| at < end.max(start + 1));
        let carried = from.checked_sub(1).map(|i| series[i].1);
        let inside = series[from..to.max(from)]
            .iter()
            .map(|&(_, v)| v)
            .reduce(f64::max);
        if let Some(peak) = match (carried, inside) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        } {
            per_step.push(peak);
        }
    }
    MemorySeries {
        per_step,
        peak: series.iter().map(|&(_, v)| v).fold(0.0, f64::max),
    }
}
