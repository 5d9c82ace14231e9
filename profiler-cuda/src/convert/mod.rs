//! Activity records → XPlanes, as XProf reads TensorFlow's and JAX's GPU profiles: a
//! function of the records alone, tested without a GPU (its one effect beyond the
//! space it fills: the device memory it saw goes to `profiler_core::memory`).
//!
//! - one plane `/device:GPU:<n>` per device, with TSL's device capability stats, and
//!   one line per stream (`Stream #<id>(<kinds>)`, id = the stream id);
//! - kernels, copies and memsets there, with `correlation_id`, `device_id`,
//!   `context_id`, `stream` and `kernel_details` / `memcpy_details` / `memset_details`
//!   (kernels with their theoretical occupancy, where the device's SM limits are known);
//! - the CUDA API calls that matter (launches, copies, memsets, allocations and
//!   frees, synchronisation: [`api_recorded_by_default`]; every call with
//!   `gpu_trace_all_api_calls`) on the host line of the thread that made them, those
//!   that launched device work with the same `correlation_id`, so XProf draws
//!   launch → kernel arrows and groups device work into the host's steps;
//! - the host annotations that enclosed a launch (found through the external
//!   correlation id: the host line it names, then the events on that line
//!   containing the launch) as the `tf_op` stat of the device work (the stack inside
//!   the step, `block/attn:attn`: XProf's op for Kernel Stats, Framework Op Stats and
//!   the GPU plane's derived lines), the innermost one as its `annotation` stat, and
//!   the enclosing step's number as `host_step_num`;
//! - every allocation and release of device memory (CUPTI's memory records) as an
//!   XProf memory event of allocator `GPU_<n>` on the host line of the thread that made
//!   it, named by the annotations open there (XProf's Memory Profile), and per device
//!   the bytes in use as samples of the [`DEVICE_BYTES_IN_USE`] counter on the
//!   plane's `_counters_` line; what the trace saw also feeds
//!   `profiler_core::memory::gpu`;
//! - with `gpu_enable_nvtx_tracking`, NVTX ranges and marks (CUPTI's marker records:
//!   a start and an end paired by id) as host events on a line per thread,
//!   `NVTX (thread <tid>)`, named by their message with their NVTX domain as the
//!   `domain` stat; and, as TSL's tracer does, the innermost range open on the
//!   launching thread when a launch was made as the [`NVTX_RANGE`] stat of its device
//!   work. Ranges with one end outside the session are left out.

//!
//! `host` does the host side, `nvtx` the NVTX ranges, `memory` the device memory,
//! `device` the planes; the stat names are in [`crate::stats`].

mod device;
mod graphs;
mod host;
mod maps;
mod memory;
mod nvtx;

use std::collections::BTreeMap;

use profiler_core::xspace::XSpace;

use crate::activity::{Activity, DeviceTrace};
use maps::HashSet;

pub use crate::api::api_recorded_by_default;
pub use crate::stats::{ANNOTATION, DEVICE_BYTES_IN_USE, HOST_STEP_NUM, NVTX_RANGE, TF_OP};
pub use device::GPU_PLANE_BASE_ID;

/// Adds a uint64 stat to the host plane's stats.
fn add_host_stat(space: &mut XSpace, name: &str, value: u64) {
    use profiler_core::schema;
    use profiler_core::xspace::{Interner, XStatValue};
    let Some(plane) = space
        .planes
        .iter_mut()
        .find(|p| p.name == schema::HOST_PLANE)
    else {
        return;
    };
    let stat = Interner::new(plane).stat(plane, name, XStatValue::Uint64(value));
    plane.stats.push(stat);
}

/// What [`add_to_space`] did with a trace's CUDA API calls.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiCalls {
    /// Calls put on host lines.
    pub kept: u64,
    /// Calls left out (by the tracer as they arrived, or here), by name: those that
    /// launched nothing and are not [`api_recorded_by_default`].
    pub left_out: BTreeMap<String, u64>,
}

impl ApiCalls {
    /// How many calls were left out.
    pub fn left_out_total(&self) -> u64 {
        self.left_out.values().sum()
    }
}

/// Correlation ids of the device work (kernels, copies, memsets, whole-graph
/// launches): the API calls that launched something. The host lines keep those calls;
/// NVTX ranges name their work.
fn launched(trace: &DeviceTrace) -> HashSet<u32> {
    trace
        .activities
        .iter()
        .filter_map(|a| match a {
            Activity::Kernel { at, .. }
            | Activity::Memcpy { at, .. }
            | Activity::Memset { at, .. } => Some(at.correlation_id),
            Activity::GraphTrace(g) => Some(g.at.correlation_id),
            _ => None,
        })
        .collect()
}

/// The device a record's work ran on, where it says.
fn device_of(activity: &Activity) -> Option<u32> {
    match activity {
        Activity::Kernel { at, .. }
        | Activity::Memcpy { at, .. }
        | Activity::Memset { at, .. }
        | Activity::Memory { at, .. } => Some(at.device_id),
        Activity::GraphTrace(g) => Some(g.at.device_id),
        _ => None,
    }
}

/// `gpu_num_chips_to_profile_per_task`: `trace` without the work of devices `n` and
/// above, nor the API calls that launched only such work; and how many devices that
/// leaves out.
fn only_devices(trace: &DeviceTrace, n: u32) -> (DeviceTrace, u32) {
    let mut kept_work = HashSet::default();
    let mut dropped_work = HashSet::default();
    for activity in &trace.activities {
        let Some(device) = device_of(activity) else {
            continue;
        };
        let correlation = match activity {
            Activity::Kernel { at, .. }
            | Activity::Memcpy { at, .. }
            | Activity::Memset { at, .. }
            | Activity::Memory { at, .. } => at.correlation_id,
            Activity::GraphTrace(g) => g.at.correlation_id,
            _ => continue,
        };
        if device < n {
            kept_work.insert(correlation);
        } else {
            dropped_work.insert(correlation);
        }
    }
    let only_elsewhere = |c: &u32| dropped_work.contains(c) && !kept_work.contains(c);
    let activities = trace
        .activities
        .iter()
        .filter(|a| match a {
            Activity::Api { correlation_id, .. }
            | Activity::ExternalCorrelation { correlation_id, .. }
            | Activity::HandedOff { correlation_id, .. } => !only_elsewhere(correlation_id),
            other => device_of(other).is_none_or(|d| d < n),
        })
        .cloned()
        .collect();
    let mut out = DeviceTrace {
        activities,
        devices: trace
            .devices
            .iter()
            .filter(|d| d.ordinal < n)
            .cloned()
            .collect(),
        pm_samples: trace
            .pm_samples
            .iter()
            .filter(|s| s.device_id < n)
            .cloned()
            .collect(),
        ..trace.clone()
    };
    out.max_devices = None;
    let seen: std::collections::BTreeSet<u32> = trace
        .devices
        .iter()
        .map(|d| d.ordinal)
        .chain(trace.activities.iter().filter_map(device_of))
        .collect();
    let left_out = seen.iter().filter(|&&d| d >= n).count() as u32;
    (out, left_out)
}

/// Adds `trace` to `space`: GPU planes, API calls and memory events on host lines,
/// warnings; returns what became of the API calls. The device memory allocated and
/// released is also handed to `profiler_core::memory` (allocators `GPU_<n>`), once per
/// call: convert a trace once. `to_session_ns` maps a record timestamp to
/// nanoseconds since the session start (`None` outside the session: such records
/// are left out).
pub fn add_to_space(
    trace: &DeviceTrace,
    space: &mut XSpace,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
) -> ApiCalls {
    let filtered;
    let trace = match trace.max_devices {
        Some(n) if n > 0 => {
            let (kept, left_out) = only_devices(trace, n);
            let present = kept.devices.len() as u32 + left_out;
            if left_out > 0 {
                space.warnings.push(format!(
                    "prof: gpu_num_chips_to_profile_per_task = {n}: {left_out} of {present} devices left out of the profile, with the API calls that launched their work"
                ));
                add_host_stat(space, crate::stats::DEVICES_LEFT_OUT, u64::from(left_out));
            } else if n > present && present > 0 {
                space.warnings.push(format!(
                    "prof: gpu_num_chips_to_profile_per_task = {n}, but there are {present} devices: every device is profiled"
                ));
            }
            filtered = kept;
            &filtered
        }
        _ => trace,
    };
    let launched = launched(trace);
    let blocks = memory::blocks(trace);
    let allocating = blocks.iter().map(|b| b.correlation_id()).collect();
    // The host's annotations before the API calls join its lines.
    let mut scopes = profiler_core::xspace::HostScopes::of_space(space);
    let graphs = graphs::Graphs::new(trace, &mut scopes, to_session_ns);
    let launches = host::add_api_calls(
        trace,
        space,
        to_session_ns,
        &launched,
        &allocating,
        &mut scopes,
        &graphs.graph_of_launch(),
    );
    // After the API calls: the annotation stacks of launches are the host's own.
    let nvtx_ranges = nvtx::add_ranges(trace, space, to_session_ns, &launched);
    let changes = memory::changes(&blocks);
    memory::add_events(trace, &changes, space, to_session_ns, &launches.launched_in);
    memory::publish(&blocks);
    let attribution = device::Attribution {
        launched_in: &launches.launched_in,
        nvtx_ranges: &nvtx_ranges,
        graphs: &graphs,
    };
    device::add_planes(trace, space, to_session_ns, &attribution, &changes);
    let (unannotated, annotation_limit) = (launches.unannotated, launches.annotation_limit);
    let mut calls = ApiCalls {
        kept: launches.api_kept,
        left_out: trace.api_left_out.clone(),
    };
    for (name, n) in launches.api_left_out {
        *calls.left_out.entry(name).or_default() += n;
    }
    if let Some(why) = &trace.api_selection_failed {
        space.warnings.push(format!(
            "prof: CUPTI could not be told to record only the CUDA API calls that matter ({why}): it recorded every call, and the {} that launch nothing were dropped as they arrived",
            calls.left_out_total()
        ));
    }
    let mut lost = Vec::new();
    if trace.dropped_activity > 0 {
        lost.push(format!(
            "{} GPU activity records (kernels, copies, memsets, memory allocations) over gpu_max_activity_api_events",
            trace.dropped_activity
        ));
    }
    if trace.dropped_api > 0 {
        lost.push(format!(
            "{} CUDA API and NVTX records over gpu_max_callback_api_events",
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
            "{unannotated} launches without their annotation, over gpu_max_annotation_strings ({annotation_limit} distinct annotation stacks)"
        ));
    }
    if !lost.is_empty() {
        space.warnings.push(format!(
            "prof: the GPU trace is incomplete: {}; raise those advanced_configuration keys to keep them",
            lost.join(", ")
        ));
    }
    calls
}
