//! One profile's work as per-step samples: for each op, its count, total time and
//! self time in each step, and the step's own duration.
//!
//! Ops are of three kinds, as XProf shows them:
//! - host annotations, by name, on `/host:CPU` (every thread; the profiler's own
//!   lines and TSL's memory events left out);
//! - device ops, by the `tf_op` stat of the device work they launched;
//! - kernels (and copies, memsets), by name, on `/device:*` planes (the stream lines;
//!   XProf's derived lines, which repeat the same work, left out).
//!
//! Device work joins the step of the host code that launched it: by its
//! `host_step_num` stat (prof writes it), else by the step of the host event with the
//! same `correlation_id` (the launch), else by when it ran.

use std::collections::{BTreeMap, HashMap};

use profiler_core::schema;
use profiler_core::xspace::XPlane;
use profiler_core::Profile;

use super::memory::{self, MemoryKey, MemorySeries};
use super::steps::Steps;
use super::values;
use crate::flat::{flatten_line, is_bookkeeping, run_length, step_spans, Flat, StepStats};

/// Lines XProf derives on device planes from the streams' events (or TSL writes the
/// same way): counting them would count the work twice.
const DERIVED_LINES: [&str; 10] = [
    "XLA Modules",
    "XLA Ops",
    "Async XLA Ops",
    "Steps",
    "Framework Ops",
    "Framework Name Scope",
    "Source code",
    "Launch Stats",
    "Host Offload Ops",
    "SparseCore Steps",
];

/// The device plane prefix (`/device:GPU:0`, `/device:TPU:1`, `/device:CUSTOM:x`).
const DEVICE_PLANE_PREFIX: &str = "/device:";

/// Stat of device work: the host step that launched it (prof's GPU tracer).
const HOST_STEP_NUM: &str = "host_step_num";
/// Stat of device work: the framework op that launched it, `scope/name:Type`.
const TF_OP: &str = "tf_op";

/// What an op row is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub enum OpKind {
    /// A host annotation (a `trace!`, a span, a TraceMe), compared by its self time.
    Host,
    /// A framework op on a device (the `tf_op` of the work it launched), compared by
    /// the device time of that work.
    DeviceOp,
    /// A kernel, copy or memset on a device, by name, compared by its device time.
    Kernel,
}

impl OpKind {
    /// The kind as rendered: `host`, `device op`, `kernel`.
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Host => "host",
            OpKind::DeviceOp => "device op",
            OpKind::Kernel => "kernel",
        }
    }
}

/// One op's sums, one entry a step.
#[derive(Clone, Debug)]
pub(super) struct OpSeries {
    pub(super) count: Vec<u32>,
    pub(super) total: Vec<u64>,
    pub(super) self_ns: Vec<u64>,
}

impl OpSeries {
    fn new(steps: usize) -> OpSeries {
        OpSeries {
            count: vec![0; steps],
            total: vec![0; steps],
            self_ns: vec![0; steps],
        }
    }

    fn add(&mut self, step: usize, e: &Flat<'_>) {
        self.count[step] += 1;
        self.total[step] = self.total[step].saturating_add(e.end - e.start);
        self.self_ns[step] = self.self_ns[step].saturating_add(e.self_ns);
    }
}

/// One profile, sampled.
pub(super) struct Samples {
    /// Each step's duration (ns), or the session's.
    pub(super) step_ns: Vec<f64>,
    pub(super) ops: HashMap<(OpKind, String), OpSeries>,
    pub(super) memory: BTreeMap<MemoryKey, MemorySeries>,
    /// Events of work outside every step (not compared).
    pub(super) outside: u64,
    /// Steps the session's start or stop cut, left out (their events are outside).
    pub(super) cut_steps: u64,
    /// Events of work read on the host: the same count as [`Profile::event_count`].
    pub(super) events: u64,
    /// Work read on devices (kernels, copies, memsets).
    pub(super) device_events: u64,
    /// XProf memory events on the host ([`Profile::memory_event_count`]): memory, not
    /// work, read by the memory rows.
    pub(super) memory_events: u64,
}

/// A map looked up once an event: foldhash, as the Perfetto writer's names.
type Fast<K, V> = HashMap<K, V, foldhash::fast::FixedState>;

/// Samples `profile` per step, or as one whole session when `whole`.
pub(super) fn of(profile: &Profile, whole: bool) -> Samples {
    let space = profile.xspace();
    let mut host_events = Vec::new();
    let host = space.plane(schema::HOST_PLANE);
    if let Some(plane) = host {
        let ids = StepStats::of(plane);
        for line in plane.lines.iter().filter(|l| !is_bookkeeping(l)) {
            flatten_line(plane, line, &ids, &mut host_events);
        }
    }
    let mut device_events = Vec::new();
    let mut device_planes = Vec::new();
    for plane in space
        .planes
        .iter()
        .filter(|p| p.name.starts_with(DEVICE_PLANE_PREFIX))
    {
        let from = device_events.len();
        let ids = StepStats::of(plane);
        for line in plane
            .lines
            .iter()
            .filter(|l| !is_bookkeeping(l) && !DERIVED_LINES.contains(&l.name.as_str()))
        {
            flatten_line(plane, line, &ids, &mut device_events);
        }
        device_planes.push((plane, from..device_events.len()));
    }
    // A step still open at the stop (or begun before the start) is only the part
    // recorded: a short step that never ran so. It is left out, all its roots with it
    // (a step annotated on two threads, one of them cut), and its events count as
    // outside every step.
    let mut cut_steps = 0;
    let steps = if whole {
        Steps::whole(run_length_of(profile, &host_events, &device_events))
    } else {
        let mut spans = step_spans(&host_events);
        let mut cut: Vec<i64> = spans.iter().filter(|s| s.cut).map(|s| s.step).collect();
        cut.sort_unstable();
        cut.dedup();
        cut_steps = cut.len() as u64;
        spans.retain(|s| cut.binary_search(&s.step).is_err());
        Steps::of(&spans)
    };

    let n = steps.len();
    let mut ops: Fast<(OpKind, &str), OpSeries> = Fast::default();
    let mut launches: Fast<u64, usize> = Fast::default();
    let mut outside = 0u64;
    let mut events = 0u64;
    let mut device_count = 0u64;
    if let Some(plane) = host {
        let correlation = plane.stat_id(schema::CORRELATION_ID);
        // `flatten_line` left the memory events out: these are the events
        // `Profile::event_count` counts.
        for e in &host_events {
            events += 1;
            let Some(step) = steps.at(e.start) else {
                outside += 1;
                continue;
            };
            ops.entry((OpKind::Host, e.name))
                .or_insert_with(|| OpSeries::new(n))
                .add(step, e);
            if let Some(id) = e.event.stat(correlation).and_then(values::id) {
                launches.insert(id, step);
            }
        }
    }
    for (plane, range) in device_planes {
        let ids = DeviceStats::of(plane);
        for e in &device_events[range] {
            device_count += 1;
            let step = e
                .event
                .stat(ids.host_step)
                .and_then(|v| v.as_i64())
                .and_then(|n| steps.numbered(n))
                .or_else(|| {
                    let id = e.event.stat(ids.correlation).and_then(values::id)?;
                    launches.get(&id).copied()
                })
                .or_else(|| steps.at(e.start));
            let Some(step) = step else {
                outside += 1;
                continue;
            };
            ops.entry((OpKind::Kernel, e.name))
                .or_insert_with(|| OpSeries::new(n))
                .add(step, e);
            if let Some(op) = e.event.stat(ids.tf_op).and_then(|v| plane.text_of(v)) {
                ops.entry((OpKind::DeviceOp, op))
                    .or_insert_with(|| OpSeries::new(n))
                    .add(step, e);
            }
        }
    }
    Samples {
        step_ns: steps.durations(),
        ops: ops
            .into_iter()
            .map(|((kind, name), series)| ((kind, name.to_owned()), series))
            .collect(),
        memory: memory::of(profile, &steps),
        outside,
        cut_steps,
        events,
        device_events: device_count,
        memory_events: profile.memory_event_count() as u64,
    }
}

/// The ids of the stats device work is grouped by, in one plane.
struct DeviceStats {
    host_step: Option<i64>,
    correlation: Option<i64>,
    tf_op: Option<i64>,
}

impl DeviceStats {
    fn of(plane: &XPlane) -> DeviceStats {
        DeviceStats {
            host_step: plane.stat_id(HOST_STEP_NUM),
            correlation: plane.stat_id(schema::CORRELATION_ID),
            tf_op: plane.stat_id(TF_OP),
        }
    }
}

/// How long a session without steps ran: its wall time, or the span of its host and
/// device events.
fn run_length_of(profile: &Profile, host: &[Flat<'_>], device: &[Flat<'_>]) -> u64 {
    run_length(profile, host).max(run_length(profile, device))
}
