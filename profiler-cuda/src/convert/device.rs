//! The device side of a device trace: one plane per GPU with its capabilities, one
//! line per stream of kernels, copies and memsets, and the device memory in use.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::rc::Rc;

use super::maps::HashMap;

use profiler_core::schema;
use profiler_core::xspace::device::{
    gpu_plane, push_launch_stats, share_one_timestamp, text_stat as text, StreamLines,
};
use profiler_core::xspace::{
    merge_into_line, ps, Enclosing, PlaneBuilder, Stats, XEvent, XPlane, XSpace, XStat, XStatValue,
};

use crate::activity::{Activity, DeviceTrace, Placement};
use crate::kernel::KernelDetails;
use crate::occupancy::{theoretical_occupancy, SmLimits};
use crate::stats::{
    self, device, CORRELATION_ID, CUDA_GRAPH_EXEC_ID, CUDA_GRAPH_ID, CUDA_GRAPH_NODE_ID,
    CUDA_GRAPH_NODE_MAPPING, DEVICE_BYTES_IN_USE, NVTX_RANGE,
};

use super::graphs::Graphs;
use super::memory::Change;

/// Plane id of `/device:GPU:<n>`: TSL numbers GPU planes from 1; prof's host plane is 49.
pub use profiler_core::xspace::device::GPU_PLANE_BASE_ID;

/// What the host side of a trace knows of each launch, to attribute the device work
/// it started: per correlation id, the annotations and step the launch ran under and
/// its innermost NVTX range; and what the nodes of CUDA graphs were captured under.
pub(super) struct Attribution<'a> {
    pub(super) launched_in: &'a HashMap<u32, Enclosing>,
    pub(super) nvtx_ranges: &'a HashMap<u32, String>,
    pub(super) graphs: &'a Graphs,
}

impl Attribution<'_> {
    /// What the work at `at` ran under. Work inside a graph runs under what its node
    /// was captured under, in the step of the launch that replayed it.
    fn launched(&self, at: &Placement) -> Option<Cow<'_, Enclosing>> {
        let launch = self.launched_in.get(&at.correlation_id);
        let captured = (at.graph_node_id != 0)
            .then(|| self.graphs.captured_in(at.graph_node_id))
            .flatten();
        match captured {
            Some(c) => Some(Cow::Owned(Enclosing {
                step: launch.and_then(|l| l.step).or(c.step),
                ..c.clone()
            })),
            None => launch.map(Cow::Borrowed),
        }
    }

    /// The innermost NVTX range open at the launch of the work at `at`.
    fn nvtx_range(&self, at: &Placement) -> Option<&String> {
        self.nvtx_ranges.get(&at.correlation_id)
    }
}

/// Adds a plane per GPU of `trace` to `space`: each device's capabilities, its work
/// on stream lines attributed to what launched it, its memory in use (`memory`: its
/// device memory changes), its PM samples, and the graph node mapping when asked for.
pub(super) fn add_planes(
    trace: &DeviceTrace,
    space: &mut XSpace,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
    attribution: &Attribution<'_>,
    memory: &[Change],
) {
    let mut planes = DevicePlanes::default();
    for device in &trace.devices {
        planes.of(device.ordinal).caps(device);
    }
    add_work(trace, &mut planes, to_session_ns, attribution);
    add_memory_in_use(memory, &mut planes, to_session_ns);
    if let Some(warning) = add_pm_samples(trace, &mut planes, to_session_ns) {
        space.warnings.push(warning);
    }
    if trace.dump_graph_node_mapping {
        for (device, lines) in attribution.graphs.mapping(trace) {
            planes
                .of(device)
                .plane
                .add_plane_stat(CUDA_GRAPH_NODE_MAPPING, XStatValue::Str(lines.join("\n")));
        }
    }
    space.planes.extend(planes.build());
}

/// The planes of a trace's devices, by ordinal, each made at its first use.
#[derive(Default)]
struct DevicePlanes(BTreeMap<u32, DevicePlane>);

impl DevicePlanes {
    /// The plane of device `ordinal`.
    fn of(&mut self, ordinal: u32) -> &mut DevicePlane {
        self.0
            .entry(ordinal)
            .or_insert_with(|| DevicePlane::new(ordinal))
    }

    /// The planes, in ordinal order.
    fn build(self) -> impl Iterator<Item = XPlane> {
        self.0.into_values().map(DevicePlane::build)
    }
}

/// Puts the kernels, copies, memsets and whole-graph launches of `trace` on their
/// streams' lines, each attributed to what launched it; work outside the session is
/// left out.
fn add_work(
    trace: &DeviceTrace,
    planes: &mut DevicePlanes,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
    attribution: &Attribution<'_>,
) {
    let mut kernel_stats = KernelStats::of(trace);
    for activity in &trace.activities {
        let Some(work) = Work::of(activity, &mut kernel_stats, attribution.graphs) else {
            continue;
        };
        let (Some(start), Some(end)) = (to_session_ns(work.start), to_session_ns(work.end)) else {
            continue;
        };
        let at = work.at;
        planes.of(at.device_id).add(
            &work.name,
            (start, end),
            at,
            work.details,
            attribution.launched(at).as_deref(),
            attribution.nvtx_range(at),
        );
    }
}

/// One piece of device work: what its event is named, its span on the device's clock,
/// where it ran and its details stat.
struct Work<'a> {
    name: Cow<'a, str>,
    start: u64,
    end: u64,
    at: &'a Placement,
    details: Details,
}

impl<'a> Work<'a> {
    /// The work of `activity`, or `None` for a record that is no work on a stream.
    fn of(activity: &'a Activity, kernels: &mut KernelStats, graphs: &Graphs) -> Option<Self> {
        let work = match activity {
            Activity::Kernel {
                name,
                start,
                end,
                at,
                details,
            } => Work {
                name: Cow::Borrowed(name.as_str()),
                start: *start,
                end: *end,
                at,
                details: Details::Kernel(kernels.stat(at.device_id, details)),
            },
            Activity::Memcpy {
                copy_kind,
                src_kind,
                dst_kind,
                bytes,
                start,
                end,
                at,
            } => Work {
                name: Cow::Borrowed(copy_name(*copy_kind)),
                start: *start,
                end: *end,
                at,
                details: Details::Memcpy(format!(
                    "kind_src:{} kind_dst:{} size:{bytes}",
                    memory_kind(*src_kind),
                    memory_kind(*dst_kind)
                )),
            },
            Activity::Memset {
                bytes,
                start,
                end,
                at,
            } => Work {
                name: Cow::Borrowed("Memset"),
                start: *start,
                end: *end,
                at,
                details: Details::Memset(format!("size:{bytes}")),
            },
            Activity::GraphTrace(g) => Work {
                name: Cow::Owned(format!("CudaGraphExec:{}", g.graph_id)),
                start: g.start,
                end: g.end,
                at: &g.at,
                details: Details::Graph(graphs.exec_of_launch(g.at.correlation_id)),
            },
            _ => return None,
        };
        Some(work)
    }
}

/// The `kernel_details` stat of each kernel shape on each device, with its
/// theoretical occupancy: a program launches the same few shapes over and over, so
/// each is made once per device.
struct KernelStats {
    limits: HashMap<u32, SmLimits>,
    made: HashMap<(u32, KernelDetails), Rc<str>>,
}

impl KernelStats {
    fn of(trace: &DeviceTrace) -> KernelStats {
        KernelStats {
            limits: trace
                .devices
                .iter()
                .filter_map(|d| Some((d.ordinal, d.sm?)))
                .collect(),
            made: HashMap::default(),
        }
    }

    /// The stat of a kernel of shape `details` on device `device`.
    fn stat(&mut self, device: u32, details: &KernelDetails) -> Rc<str> {
        let limits = &self.limits;
        self.made
            .entry((device, *details))
            .or_insert_with(|| {
                let occupancy = limits
                    .get(&device)
                    .and_then(|sm| theoretical_occupancy(details, sm));
                Rc::from(details.to_stat(occupancy))
            })
            .clone()
    }
}

/// Puts each PM sample of `trace` on its device's counter line, and returns a warning
/// counting those outside the session, which are left out.
fn add_pm_samples(
    trace: &DeviceTrace,
    planes: &mut DevicePlanes,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
) -> Option<String> {
    let mut outside = 0u64;
    for sample in &trace.pm_samples {
        let Some(metric) = trace.pm_metrics.get(sample.metric) else {
            continue;
        };
        let Some(at) = to_session_ns(sample.timestamp) else {
            outside += 1;
            continue;
        };
        planes
            .of(sample.device_id)
            .counter(metric, at, sample.value);
    }
    (outside > 0).then(|| {
        format!(
            "prof: gpu_pm_sample_counters: {outside} of {} PM samples fell outside the session and were left out",
            trace.pm_samples.len()
        )
    })
}

/// Per device, the bytes of device memory in use after each of `memory`'s changes, as
/// samples of its plane's [`DEVICE_BYTES_IN_USE`] counter.
fn add_memory_in_use(
    memory: &[Change],
    planes: &mut DevicePlanes,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
) {
    for change in memory {
        let Some(at) = to_session_ns(change.timestamp) else {
            continue;
        };
        planes
            .of(change.device)
            .counter(DEVICE_BYTES_IN_USE, at, change.in_use as f64);
    }
}

enum Details {
    /// Shared by the kernels of one shape on the device: no copy a kernel.
    Kernel(Rc<str>),
    Memcpy(String),
    Memset(String),
    /// A whole-graph launch, with its executable graph when the launch was seen.
    Graph(Option<u32>),
}

impl Details {
    fn kind(&self) -> &'static str {
        match self {
            Details::Kernel(_) => "Kernel",
            Details::Memcpy(_) => "Memcpy",
            Details::Memset(_) => "Memset",
            Details::Graph(_) => "Graph",
        }
    }
}

struct DevicePlane {
    plane: PlaneBuilder,
    /// Events per stream, with session-relative offsets.
    streams: StreamLines,
    /// Counter samples, with session-relative offsets.
    counters: Vec<XEvent>,
    /// The counters' names, for their display names.
    counter_names: std::collections::BTreeSet<String>,
    /// The metadata ids of the four stats every event carries (correlation, device,
    /// context, stream), interned at the first event rather than looked up at each:
    /// four name lookups a kernel were a tenth of stop at 10k launches (the `stop`
    /// bench, alternated runs).
    common: Option<[i64; 4]>,
}

impl DevicePlane {
    fn new(ordinal: u32) -> DevicePlane {
        DevicePlane {
            plane: gpu_plane(ordinal),
            streams: StreamLines::new(),
            counters: Vec::new(),
            counter_names: std::collections::BTreeSet::new(),
            common: None,
        }
    }

    fn counter(&mut self, name: &str, at: u64, value: f64) {
        let p = &mut self.plane;
        let stat = p.stat(schema::COUNTER_VALUE, XStatValue::Double(value));
        self.counter_names.insert(name.to_owned());
        self.counters.push(
            XEvent::new(p.event_metadata_id(name), ps(at), 0).with_stats(Stats::from([stat])),
        );
    }

    fn caps(&mut self, d: &crate::activity::DeviceInfo) {
        let p = &mut self.plane;
        p.add_plane_stat(device::CLOCK_RATE, XStatValue::Uint64(d.clock_rate_khz));
        p.add_plane_stat(device::CORE_COUNT, XStatValue::Uint64(d.core_count));
        p.add_plane_stat(device::MEMORY_SIZE, XStatValue::Uint64(d.memory_size));
        p.add_plane_stat(
            device::MEMORY_BANDWIDTH,
            XStatValue::Uint64(d.memory_bandwidth),
        );
        p.add_plane_stat(
            device::COMPUTE_CAP_MAJOR,
            XStatValue::Int64(d.compute_cap_major),
        );
        p.add_plane_stat(
            device::COMPUTE_CAP_MINOR,
            XStatValue::Int64(d.compute_cap_minor),
        );
        p.add_plane_stat(device::VENDOR, XStatValue::Str("Nvidia".to_owned()));
        if !d.name.is_empty() {
            p.add_plane_stat(device::NAME, XStatValue::Str(d.name.clone()));
        }
    }

    fn add(
        &mut self,
        name: &str,
        (start, end): (u64, u64),
        at: &Placement,
        details: Details,
        launched_in: Option<&Enclosing>,
        nvtx_range: Option<&String>,
    ) {
        let p = &mut self.plane;
        let common = *self.common.get_or_insert_with(|| {
            [
                CORRELATION_ID,
                stats::DEVICE_ID,
                stats::CONTEXT_ID,
                stats::STREAM,
            ]
            .map(|name| p.stat_metadata_id(name))
        });
        // Room for every stat a kernel can carry, so the list is allocated once.
        let mut stats = Stats::with_capacity(12);
        stats.extend(
            common
                .into_iter()
                .zip([at.correlation_id, at.device_id, at.context_id, at.stream_id])
                .map(|(metadata_id, v)| XStat {
                    metadata_id,
                    value: Some(XStatValue::Uint64(u64::from(v))),
                }),
        );
        let kind = details.kind();
        match details {
            Details::Kernel(s) => stats.push(text(p, stats::KERNEL_DETAILS, &s)),
            Details::Memcpy(s) => stats.push(text(p, stats::MEMCPY_DETAILS, &s)),
            Details::Memset(s) => stats.push(text(p, stats::MEMSET_DETAILS, &s)),
            Details::Graph(exec) => {
                stats.extend(
                    exec.map(|e| p.stat(CUDA_GRAPH_EXEC_ID, XStatValue::Uint64(u64::from(e)))),
                );
            }
        }
        if at.graph_id != 0 {
            stats.push(p.stat(CUDA_GRAPH_ID, XStatValue::Uint64(u64::from(at.graph_id))));
        }
        if at.graph_node_id != 0 {
            stats.push(p.stat(CUDA_GRAPH_NODE_ID, XStatValue::Uint64(at.graph_node_id)));
        }
        if let Some(launched) = launched_in {
            push_launch_stats(p, &mut stats, launched);
        }
        if let Some(range) = nvtx_range {
            stats.push(text(p, NVTX_RANGE, range));
        }
        let event = XEvent::new(
            p.event_metadata_id(name),
            ps(start),
            ps(end.saturating_sub(start)),
        )
        .with_stats(stats);
        self.streams.push(at.stream_id, kind, event);
    }

    fn build(self) -> XPlane {
        let mut plane = self.plane.build();
        for metadata in plane.event_metadata.values_mut() {
            if self.counter_names.contains(&metadata.name) {
                if let Some(shown) = display_name(&metadata.name) {
                    metadata.display_name = shown;
                }
            }
        }
        self.streams.add_to(&mut plane);
        if !self.counters.is_empty() {
            // Stream lines are numbered by stream id; this id is apart from them.
            let id = i64::from(schema::COUNTERS_LINE_ID);
            merge_into_line(&mut plane, id, schema::COUNTERS_LINE, self.counters);
        }
        share_one_timestamp(&mut plane);
        plane
    }
}

/// A readable name for a PM metric (`sm__cycles_active.avg.pct_of_peak_sustained_elapsed`
/// → `SM cycles active avg, % of peak sustained elapsed`): the unit before `__` in
/// capitals, `_` as spaces, `pct_of` as `% of`, the roll-ups after a comma. `None` for a
/// name that is not a metric's (prof's own counters keep their names).
fn display_name(metric: &str) -> Option<String> {
    let (unit, rest) = metric.split_once("__")?;
    let words = |s: &str| s.replace("pct_of", "% of").replace('_', " ");
    let mut parts = rest.split('.');
    let counter = words(parts.next()?);
    let rollups: Vec<String> = parts.map(words).collect();
    let mut shown = format!("{} {counter}", unit.to_ascii_uppercase());
    if !rollups.is_empty() {
        shown.push_str(&format!(" ({})", rollups.join(", ")));
    }
    Some(shown)
}

/// Names of `CUpti_ActivityMemcpyKind`s, spelt as XProf classifies copies (TSL's
/// `MemcpyH2D` / `MemcpyD2H` / `MemcpyD2D` are not recognised by XProf 2.24, which
/// then counts them as device compute): host to device is the overview page's Input
/// time, device to host its Output time, device to device (peer copies included) its
/// Device to Device time.
fn copy_name(kind: u8) -> &'static str {
    match kind {
        1 => "MemcpyHToD",
        2 => "MemcpyDToH",
        8 => "MemcpyDToD",
        9 => "MemcpyHToH",
        10 => "MemcpyDToDPeer",
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

#[cfg(test)]
mod tests {
    use super::display_name;

    #[test]
    fn pm_metrics_get_readable_names() {
        assert_eq!(
            display_name("sm__cycles_active.avg.pct_of_peak_sustained_elapsed").as_deref(),
            Some("SM cycles active (avg, % of peak sustained elapsed)")
        );
        assert_eq!(
            display_name("dram__throughput.avg.pct_of_peak_sustained_elapsed").as_deref(),
            Some("DRAM throughput (avg, % of peak sustained elapsed)")
        );
        assert_eq!(display_name("device_bytes_in_use"), None);
    }
}
