//! Activity records → XPlanes, as XProf reads TensorFlow's and JAX's GPU profiles: a
//! pure function of the records, tested without a GPU.
//!
//! - one plane `/device:GPU:<n>` per device, with TSL's device capability stats, and
//!   one line per stream (`Stream #<id>(<kinds>)`, id = the stream id);
//! - kernels, copies and memsets there, with `correlation_id`, `device_id`,
//!   `context_id`, `stream` and `kernel_details` / `memcpy_details` / `memset_details`
//!   (kernels with their theoretical occupancy, where the device's SM limits are known);
//! - each API call on the host line of the thread that made it, with the same
//!   `correlation_id`, so XProf draws launch → kernel arrows;
//! - the host annotation that enclosed a launch (found through the external
//!   correlation id: the host line it names, then the innermost event on that line
//!   containing the launch) as the `annotation` stat of the device work, and the
//!   enclosing step's number as `host_step_num`;
//! - per device, the bytes of device memory in use, from CUPTI's memory records, as
//!   samples of the [`DEVICE_BYTES_IN_USE`] counter on the plane's `_counters_` line.

use std::collections::{BTreeMap, HashMap, HashSet};

use profiler_core::schema;
use profiler_core::tracer::ScopeId;
use profiler_core::xspace::{
    sort_events, PlaneBuilder, XEvent, XEventData, XEventMetadata, XLine, XPlane, XSpace, XStat,
    XStatMetadata, XStatValue,
};

use crate::activity::{Activity, DeviceTrace, Placement};
use crate::occupancy::{theoretical_occupancy, SmLimits};

/// Plane id of `/device:GPU:<n>`: TSL numbers GPU planes from 1; prof's host plane is 49.
pub const GPU_PLANE_BASE_ID: i64 = 1;

/// Stat: the innermost host annotation enclosing the launch of device work.
pub const ANNOTATION: &str = "annotation";
/// Stat: `step_num` of the step enclosing the launch of device work.
pub const HOST_STEP_NUM: &str = "host_step_num";

/// Counter: bytes of device memory in use on a GPU, on its plane's `_counters_` line.
pub const DEVICE_BYTES_IN_USE: &str = "device_bytes_in_use";

/// Adds `trace` to `space`: GPU planes, API calls on host lines, warnings.
/// `to_session_ns` maps a record timestamp to nanoseconds since the session start
/// (`None` outside the session: such records are left out).
pub fn add_to_space(
    trace: &DeviceTrace,
    space: &mut XSpace,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
) {
    let external: HashMap<u32, ScopeId> = trace
        .activities
        .iter()
        .filter_map(|a| match a {
            Activity::ExternalCorrelation {
                correlation_id,
                external_id,
            } => Some((*correlation_id, ScopeId::from_u64(*external_id))),
            _ => None,
        })
        .collect();
    let host = space
        .planes
        .iter()
        .position(|p| p.name == schema::HOST_PLANE);
    let scopes = host
        .map(|h| HostScopes::new(&space.planes[h]))
        .unwrap_or_default();

    // The host side: API calls, and what each launch was annotated with.
    let mut launched_in: HashMap<u32, (String, Option<i64>)> = HashMap::new();
    let mut annotation_names: HashSet<String> = HashSet::new();
    let annotation_limit = trace
        .max_annotation_strings
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut unannotated = 0u64;
    let mut api_events: BTreeMap<(i64, String), Vec<XEvent>> = BTreeMap::new();
    let mut host_plane = host.map(|h| std::mem::take(&mut space.planes[h]));
    let mut host_names = host_plane.as_ref().map(Interner::new);
    for activity in &trace.activities {
        let Activity::Api {
            name,
            start,
            end,
            thread_id,
            correlation_id,
        } = activity
        else {
            continue;
        };
        let (Some(start), Some(end)) = (to_session_ns(*start), to_session_ns(*end)) else {
            continue;
        };
        let scope = external.get(correlation_id);
        if let Some(found) = scope.and_then(|s| scopes.enclosing(s.line, ps(start))) {
            if annotation_names.contains(&found.0) || annotation_names.len() < annotation_limit {
                annotation_names.insert(found.0.clone());
                launched_in.insert(*correlation_id, found);
            } else {
                unannotated += 1;
            }
        }
        let (Some(plane), Some(names)) = (host_plane.as_mut(), host_names.as_mut()) else {
            continue;
        };
        let line = match scope {
            Some(s) => (i64::from(s.line), String::new()),
            None => (
                i64::from(schema::DEVICE_API_LINES_ID + (*thread_id & 0xff_ffff)),
                format!("CUDA API (thread {thread_id})"),
            ),
        };
        let stat = names.stat(
            plane,
            "correlation_id",
            XStatValue::Uint64(u64::from(*correlation_id)),
        );
        api_events.entry(line).or_default().push(XEvent {
            metadata_id: names.event(plane, name),
            data: Some(XEventData::OffsetPs(ps(start))),
            duration_ps: ps(end.saturating_sub(start)),
            stats: vec![stat],
        });
    }
    if let (Some(h), Some(mut plane)) = (host, host_plane) {
        for ((id, name), events) in api_events {
            merge_into_line(&mut plane, id, &name, events);
        }
        space.planes[h] = plane;
    }

    // The device side.
    let mut planes: BTreeMap<u32, DevicePlane> = BTreeMap::new();
    for device in &trace.devices {
        planes
            .entry(device.ordinal)
            .or_insert_with(|| DevicePlane::new(device.ordinal))
            .caps(device);
    }
    let limits: HashMap<u32, SmLimits> = trace
        .devices
        .iter()
        .filter_map(|d| Some((d.ordinal, d.sm?)))
        .collect();
    for activity in &trace.activities {
        let (name, start, end, at, details) = match activity {
            Activity::Kernel {
                name,
                start,
                end,
                at,
                details,
            } => (
                name.clone(),
                *start,
                *end,
                at,
                Details::Kernel(
                    details.to_stat(
                        limits
                            .get(&at.device_id)
                            .and_then(|sm| theoretical_occupancy(details, sm)),
                    ),
                ),
            ),
            Activity::Memcpy {
                copy_kind,
                src_kind,
                dst_kind,
                bytes,
                start,
                end,
                at,
            } => (
                copy_name(*copy_kind).to_owned(),
                *start,
                *end,
                at,
                Details::Memcpy(format!(
                    "kind_src:{} kind_dst:{} size:{bytes}",
                    memory_kind(*src_kind),
                    memory_kind(*dst_kind)
                )),
            ),
            Activity::Memset {
                bytes,
                start,
                end,
                at,
            } => (
                "Memset".to_owned(),
                *start,
                *end,
                at,
                Details::Memset(format!("size:{bytes}")),
            ),
            _ => continue,
        };
        let (Some(start), Some(end)) = (to_session_ns(start), to_session_ns(end)) else {
            continue;
        };
        planes
            .entry(at.device_id)
            .or_insert_with(|| DevicePlane::new(at.device_id))
            .add(
                &name,
                start,
                end,
                at,
                details,
                launched_in.get(&at.correlation_id),
            );
    }
    add_memory_in_use(trace, &mut planes, to_session_ns);
    space
        .planes
        .extend(planes.into_values().map(DevicePlane::build));

    let mut lost = Vec::new();
    if trace.dropped_activity > 0 {
        lost.push(format!(
            "{} GPU activity records (kernels, copies, memsets, memory allocations) over gpu_max_activity_api_events",
            trace.dropped_activity
        ));
    }
    if trace.dropped_api > 0 {
        lost.push(format!(
            "{} CUDA API records over gpu_max_callback_api_events",
            trace.dropped_api
        ));
    }
    if trace.dropped_by_cupti > 0 {
        lost.push(format!(
            "{} records CUPTI dropped because its buffers were full",
            trace.dropped_by_cupti
        ));
    }
    if unannotated > 0 {
        lost.push(format!(
            "{unannotated} launches without their annotation, over gpu_max_annotation_strings ({annotation_limit} distinct names)"
        ));
    }
    if !lost.is_empty() {
        space.warnings.push(format!(
            "prof: the GPU trace is incomplete: {}; raise those advanced_configuration keys to keep them",
            lost.join(", ")
        ));
    }
}

/// `CUpti_ActivityMemoryKind`s that live on the device: device, array, device static.
/// Pageable and pinned host memory, and managed memory, are left out.
fn on_device(memory_kind: u32) -> bool {
    matches!(memory_kind, 3 | 4 | 6)
}

/// Per device, a running total of device memory in use: allocations add, releases
/// subtract the size allocated at their address, in timestamp order. A release of a
/// block whose allocation was not recorded (made before the session, or dropped) is
/// left out, as are other operation types and host memory.
fn add_memory_in_use(
    trace: &DeviceTrace,
    planes: &mut BTreeMap<u32, DevicePlane>,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
) {
    use crate::layout::memory_operation::{ALLOCATION, RELEASE};
    let mut ops: Vec<_> = trace
        .activities
        .iter()
        .filter_map(|a| match a {
            Activity::Memory {
                operation,
                memory_kind,
                address,
                bytes,
                timestamp,
                at,
            } if on_device(*memory_kind) && (*operation == ALLOCATION || *operation == RELEASE) => {
                Some((*timestamp, at.device_id, *operation, *address, *bytes))
            }
            _ => None,
        })
        .collect();
    ops.sort_by_key(|op| op.0);
    let mut live: HashMap<(u32, u64), u64> = HashMap::new();
    let mut in_use: HashMap<u32, u64> = HashMap::new();
    for (timestamp, device, operation, address, bytes) in ops {
        let total = in_use.entry(device).or_default();
        if operation == ALLOCATION {
            *total = total.saturating_add(bytes);
            if let Some(old) = live.insert((device, address), bytes) {
                // Its release was not recorded: the block at this address is the new one.
                *total = total.saturating_sub(old);
            }
        } else {
            let Some(allocated) = live.remove(&(device, address)) else {
                continue;
            };
            *total = total.saturating_sub(allocated);
        }
        let Some(at) = to_session_ns(timestamp) else {
            continue;
        };
        let value = *total as f64;
        planes
            .entry(device)
            .or_insert_with(|| DevicePlane::new(device))
            .counter(DEVICE_BYTES_IN_USE, at, value);
    }
}

enum Details {
    Kernel(String),
    Memcpy(String),
    Memset(String),
}

impl Details {
    fn kind(&self) -> &'static str {
        match self {
            Details::Kernel(_) => "Kernel",
            Details::Memcpy(_) => "Memcpy",
            Details::Memset(_) => "Memset",
        }
    }
}

struct DevicePlane {
    plane: PlaneBuilder,
    /// Events per stream, with session-relative offsets.
    streams: BTreeMap<u32, (Vec<XEvent>, Vec<&'static str>)>,
    /// Counter samples, with session-relative offsets.
    counters: Vec<XEvent>,
}

impl DevicePlane {
    fn new(ordinal: u32) -> DevicePlane {
        DevicePlane {
            plane: PlaneBuilder::new(
                GPU_PLANE_BASE_ID + i64::from(ordinal),
                format!("/device:GPU:{ordinal}"),
            ),
            streams: BTreeMap::new(),
            counters: Vec::new(),
        }
    }

    fn counter(&mut self, name: &str, at: u64, value: f64) {
        let p = &mut self.plane;
        let stat = p.stat(schema::COUNTER_VALUE, XStatValue::Double(value));
        self.counters.push(XEvent {
            metadata_id: p.event_metadata_id(name),
            data: Some(XEventData::OffsetPs(ps(at))),
            duration_ps: 0,
            stats: vec![stat],
        });
    }

    fn caps(&mut self, d: &crate::activity::DeviceInfo) {
        let p = &mut self.plane;
        p.add_plane_stat("clock_rate", XStatValue::Uint64(d.clock_rate_khz));
        p.add_plane_stat("core_count", XStatValue::Uint64(d.core_count));
        p.add_plane_stat("memory_size", XStatValue::Uint64(d.memory_size));
        p.add_plane_stat("memory_bandwidth", XStatValue::Uint64(d.memory_bandwidth));
        p.add_plane_stat("compute_cap_major", XStatValue::Int64(d.compute_cap_major));
        p.add_plane_stat("compute_cap_minor", XStatValue::Int64(d.compute_cap_minor));
        p.add_plane_stat("device_vendor", XStatValue::Str("Nvidia".to_owned()));
        if !d.name.is_empty() {
            p.add_plane_stat("device_name", XStatValue::Str(d.name.clone()));
        }
    }

    fn add(
        &mut self,
        name: &str,
        start: u64,
        end: u64,
        at: &Placement,
        details: Details,
        launched_in: Option<&(String, Option<i64>)>,
    ) {
        let p = &mut self.plane;
        let mut stats = vec![
            p.stat(
                "correlation_id",
                XStatValue::Uint64(u64::from(at.correlation_id)),
            ),
            p.stat("device_id", XStatValue::Uint64(u64::from(at.device_id))),
            p.stat("context_id", XStatValue::Uint64(u64::from(at.context_id))),
            p.stat("stream", XStatValue::Uint64(u64::from(at.stream_id))),
        ];
        let kind = details.kind();
        stats.push(match details {
            Details::Kernel(s) => p.stat("kernel_details", XStatValue::Str(s)),
            Details::Memcpy(s) => p.stat("memcpy_details", XStatValue::Str(s)),
            Details::Memset(s) => p.stat("memset_details", XStatValue::Str(s)),
        });
        if let Some((annotation, step)) = launched_in {
            stats.push(p.stat(ANNOTATION, XStatValue::Str(annotation.clone())));
            if let Some(step) = step {
                stats.push(p.stat(HOST_STEP_NUM, XStatValue::Int64(*step)));
            }
        }
        let event = XEvent {
            metadata_id: p.event_metadata_id(name),
            data: Some(XEventData::OffsetPs(ps(start))),
            duration_ps: ps(end.saturating_sub(start)),
            stats,
        };
        let (events, kinds) = self.streams.entry(at.stream_id).or_default();
        events.push(event);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }

    fn build(self) -> XPlane {
        let mut plane = self.plane.build();
        for (stream, (events, kinds)) in self.streams {
            let name = format!("Stream #{stream}({})", kinds.join(","));
            merge_into_line(&mut plane, i64::from(stream), &name, events);
        }
        if !self.counters.is_empty() {
            // Stream lines are numbered by stream id; this id is apart from them.
            let id = i64::from(schema::COUNTERS_LINE_ID);
            merge_into_line(&mut plane, id, schema::COUNTERS_LINE, self.counters);
        }
        plane
    }
}

/// (start ps, end ps, name, step_num), session-relative.
type HostEvent = (i64, i64, String, Option<i64>);

/// The host events of each line, for finding what enclosed a launch.
#[derive(Default)]
struct HostScopes {
    /// Per line id, its events.
    lines: HashMap<i64, Vec<HostEvent>>,
}

impl HostScopes {
    fn new(plane: &XPlane) -> HostScopes {
        let step_id = plane.stat_id(schema::STEP_NUM);
        let mut lines = HashMap::new();
        for line in &plane.lines {
            let base = line.timestamp_ns * 1000;
            let events =
                line.events
                    .iter()
                    .map(|e| {
                        let start = base + e.offset_ps();
                        let step = step_id.and_then(|id| {
                            e.stats.iter().find(|s| s.metadata_id == id).and_then(|s| {
                                match s.value {
                                    Some(XStatValue::Int64(v)) => Some(v),
                                    _ => None,
                                }
                            })
                        });
                        let name = plane
                            .event_name(e.metadata_id)
                            .unwrap_or_default()
                            .to_owned();
                        (start, start + e.duration_ps, name, step)
                    })
                    .collect();
            lines.insert(line.id, events);
        }
        HostScopes { lines }
    }

    /// The innermost event of `line` containing `at_ps`, and the step number of the
    /// outermost one carrying a `step_num`.
    fn enclosing(&self, line: u32, at_ps: i64) -> Option<(String, Option<i64>)> {
        let events = self.lines.get(&i64::from(line))?;
        let mut inner: Option<&HostEvent> = None;
        let mut step = None;
        for e in events.iter().filter(|e| e.0 <= at_ps && at_ps <= e.1) {
            if step.is_none() {
                step = e.3;
            }
            if inner.is_none_or(|i| e.1 - e.0 <= i.1 - i.0) {
                inner = Some(e);
            }
        }
        inner.map(|e| (e.2.clone(), step))
    }
}

/// Interns names into a plane that already has metadata (the host plane).
struct Interner {
    events: HashMap<String, i64>,
    stats: HashMap<String, i64>,
}

impl Interner {
    fn new(plane: &XPlane) -> Interner {
        Interner {
            events: plane
                .event_metadata
                .iter()
                .map(|(id, m)| (m.name.clone(), *id))
                .collect(),
            stats: plane
                .stat_metadata
                .iter()
                .map(|(id, m)| (m.name.clone(), *id))
                .collect(),
        }
    }

    fn event(&mut self, plane: &mut XPlane, name: &str) -> i64 {
        if let Some(&id) = self.events.get(name) {
            return id;
        }
        let id = plane
            .event_metadata
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            + 1;
        plane.event_metadata.insert(
            id,
            XEventMetadata {
                id,
                name: name.to_owned(),
                ..XEventMetadata::default()
            },
        );
        self.events.insert(name.to_owned(), id);
        id
    }

    fn stat(&mut self, plane: &mut XPlane, name: &str, value: XStatValue) -> XStat {
        let id = match self.stats.get(name) {
            Some(&id) => id,
            None => {
                let id = plane.stat_metadata.keys().next_back().copied().unwrap_or(0) + 1;
                plane.stat_metadata.insert(
                    id,
                    XStatMetadata {
                        id,
                        name: name.to_owned(),
                        description: String::new(),
                    },
                );
                self.stats.insert(name.to_owned(), id);
                id
            }
        };
        XStat {
            metadata_id: id,
            value: Some(value),
        }
    }
}

/// Adds events with session-relative offsets to a plane's line, creating the line
/// when absent and rebasing it when the new events start before it.
fn merge_into_line(plane: &mut XPlane, id: i64, name: &str, events: Vec<XEvent>) {
    let at = match plane.lines.iter().position(|l| l.id == id) {
        Some(at) => at,
        None => {
            plane.lines.push(XLine {
                id,
                name: name.to_owned(),
                ..XLine::default()
            });
            plane.lines.len() - 1
        }
    };
    merge(&mut plane.lines[at], events);
}

fn merge(line: &mut XLine, events: Vec<XEvent>) {
    let old_base = line.timestamp_ns * 1000;
    let mut all: Vec<XEvent> = std::mem::take(&mut line.events)
        .into_iter()
        .map(|mut e| {
            e.data = Some(XEventData::OffsetPs(old_base + e.offset_ps()));
            e
        })
        .chain(events)
        .collect();
    let Some(start) = all.iter().map(XEvent::offset_ps).min() else {
        return;
    };
    let end = all
        .iter()
        .map(|e| e.offset_ps() + e.duration_ps)
        .max()
        .unwrap_or(start);
    // Line timestamps are whole nanoseconds; offsets keep the picoseconds.
    let base = start / 1000 * 1000;
    for e in &mut all {
        e.data = Some(XEventData::OffsetPs(e.offset_ps() - base));
    }
    sort_events(&mut all);
    line.timestamp_ns = base / 1000;
    line.duration_ps = end - base;
    line.events = all;
}

fn ps(ns: u64) -> i64 {
    (ns as i64).saturating_mul(1000)
}

/// TSL's names for `CUpti_ActivityMemcpyKind`.
fn copy_name(kind: u8) -> &'static str {
    match kind {
        1 => "MemcpyH2D",
        2 => "MemcpyD2H",
        8 => "MemcpyD2D",
        10 => "MemcpyP2P",
        _ => "MemcpyOther",
    }
}

/// Names of `CUpti_ActivityMemoryKind`.
fn memory_kind(kind: u8) -> &'static str {
    match kind {
        1 => "pageable",
        2 => "pinned",
        3 => "device",
        4 => "array",
        5 => "managed",
        6 => "device_static",
        7 => "managed_static",
        _ => "unknown",
    }
}
