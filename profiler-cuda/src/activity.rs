//! Activity records as plain Rust values: what the device tracer keeps of CUPTI's
//! records, and the input of the conversion to XPlanes.
//!
//! Timestamps are nanoseconds on `profiler_core::tracer::clock_ns`, the clock CUPTI
//! is pointed at, so they convert to the host timeline with no alignment step.

use std::collections::BTreeMap;

pub use crate::kernel::KernelDetails;

/// Where an activity ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// CUDA device ordinal.
    pub device_id: u32,
    /// CUDA context id.
    pub context_id: u32,
    /// CUDA stream id.
    pub stream_id: u32,
    /// CUPTI's correlation id, shared with the API call that launched it (for work in
    /// a graph, the graph's launch).
    pub correlation_id: u32,
    /// The CUDA graph it ran in (`cuptiGetGraphId` numbering); 0 when launched on its
    /// own.
    pub graph_id: u32,
    /// The graph node it ran as (`cuptiGetGraphNodeId`, a node of the executable
    /// graph); 0 when launched on its own.
    pub graph_node_id: u64,
}

/// One record kept by the tracer.
#[derive(Clone, Debug, PartialEq)]
pub enum Activity {
    /// A kernel execution.
    Kernel {
        /// Kernel (function) name, usually mangled.
        name: String,
        /// Start and end, ns.
        start: u64,
        /// End, ns.
        end: u64,
        /// Device, context, stream and correlation.
        at: Placement,
        /// Launch geometry and resources.
        details: KernelDetails,
    },
    /// A memory copy.
    Memcpy {
        /// CUPTI's `CUpti_ActivityMemcpyKind`.
        copy_kind: u8,
        /// CUPTI's `CUpti_ActivityMemoryKind` of the source.
        src_kind: u8,
        /// CUPTI's `CUpti_ActivityMemoryKind` of the destination.
        dst_kind: u8,
        /// Bytes copied.
        bytes: u64,
        /// Start, ns.
        start: u64,
        /// End, ns.
        end: u64,
        /// Device, context, stream and correlation.
        at: Placement,
    },
    /// A memory set.
    Memset {
        /// Bytes set.
        bytes: u64,
        /// Start, ns.
        start: u64,
        /// End, ns.
        end: u64,
        /// Device, context, stream and correlation.
        at: Placement,
    },
    /// A CUDA driver or runtime API call (a launch, a copy, a synchronisation).
    Api {
        /// Function name, e.g. `cuLaunchKernel`.
        name: String,
        /// Start, ns.
        start: u64,
        /// End, ns.
        end: u64,
        /// OS thread id of the caller.
        thread_id: u32,
        /// CUPTI's correlation id, shared with the device work it launched.
        correlation_id: u32,
    },
    /// A device memory allocation or release (CUPTI's `MEMORY2` records).
    Memory {
        /// CUPTI's `CUpti_ActivityMemoryOperationType`: see
        /// [`crate::layout::memory_operation`].
        operation: u32,
        /// CUPTI's `CUpti_ActivityMemoryKind` of the memory.
        memory_kind: u32,
        /// Address of the block.
        address: u64,
        /// Size of the block, bytes.
        bytes: u64,
        /// When it was allocated or released, ns.
        timestamp: u64,
        /// Device, context, stream and correlation.
        at: Placement,
        /// The stream-ordered pool the block came from (`cuMemAllocAsync`,
        /// `cuMemAllocFromPoolAsync`), as it stood after the operation; `None` for
        /// memory not from a pool (`cuMemAlloc`).
        pool: Option<MemoryPool>,
    },
    /// One end of an NVTX range, or an NVTX mark (CUPTI's `MARKER` records, made with
    /// `gpu_enable_nvtx_tracking`): a range's start and end records share its `id`.
    Marker {
        /// Start, end or mark.
        phase: MarkerPhase,
        /// CUPTI's id of the range (or mark).
        id: u32,
        /// When, ns.
        timestamp: u64,
        /// OS thread id of the thread that made the NVTX call, as in API records (0
        /// when the record names only a process).
        thread_id: u32,
        /// The range's or mark's message (`None` on an end record).
        name: Option<String>,
        /// Its NVTX domain (`None` for the default domain, and on an end record).
        domain: Option<String>,
    },
    /// A whole-graph launch (`gpu_enable_cupti_activity_graph_trace`).
    GraphTrace(GraphTrace),
    /// The host annotation open when the API call `correlation_id` was made: the
    /// `profiler_core::tracer::ScopeId` packed into `external_id` (the launch callback
    /// reads it from the thread's annotation stack; older producers pushed it as CUPTI's
    /// external correlation).
    ExternalCorrelation {
        /// CUPTI's correlation id.
        correlation_id: u32,
        /// The pushed external id.
        external_id: u64,
    },
    /// The kernel launch `correlation_id` was made on a thread with no annotation open,
    /// for a kernel issued on another thread (cubecl's device thread launches what the
    /// user's thread issued: `profiler_core::tracer::hand_off`). Its
    /// [`Activity::ExternalCorrelation`], if any, names the issuing thread's annotation;
    /// the launch is attributed to what was open on that thread at `issued_at`, and the
    /// call stays on the host line of the thread that made it.
    HandedOff {
        /// CUPTI's correlation id of the launch.
        correlation_id: u32,
        /// When the kernel was issued, ns on `profiler_core::tracer::clock_ns`.
        issued_at: u64,
    },
}

/// A memory pool as a [`Activity::Memory`] record describes it (CUPTI's
/// `memoryPoolConfig`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPool {
    /// CUPTI's `CUpti_ActivityMemoryPoolType`: see [`crate::layout::memory_pool_type`].
    pub pool_type: u32,
    /// The pool's base address: which pool it is.
    pub address: u64,
    /// Bytes the pool keeps when it could give memory back to the driver.
    pub release_threshold: u64,
    /// Bytes the pool holds from the driver (local pools; 0 otherwise).
    pub size: u64,
    /// Bytes of the pool in use.
    pub utilized: u64,
}

/// One launch of a whole CUDA graph, as CUPTI's `GRAPH_TRACE` records it
/// (`gpu_enable_cupti_activity_graph_trace`): one record for the launch instead of one
/// per node.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphTrace {
    /// The graph launched (`cuptiGetGraphId` numbering).
    pub graph_id: u32,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
    /// Device, context, stream and the launch's correlation id.
    pub at: Placement,
}

/// One value of one performance-monitor metric over one sampling interval
/// (`gpu_pm_sample_counters`).
#[derive(Clone, Debug, PartialEq)]
pub struct PmSample {
    /// CUDA device ordinal.
    pub device_id: u32,
    /// The end of the interval, ns on prof's clock.
    pub timestamp: u64,
    /// The metric's index in [`DeviceTrace::pm_metrics`].
    pub metric: usize,
    /// Its value.
    pub value: f64,
}

/// Which point of an NVTX range (or mark) a [`Activity::Marker`] record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerPhase {
    /// A mark: an instant (`nvtxMark*`).
    Instant,
    /// A range opens (`nvtxRangePush*`, `nvtxRangeStart*`).
    Start,
    /// A range closes (`nvtxRangePop`, `nvtxRangeEnd`).
    End,
}

/// What XProf shows of a GPU on its plane (TSL's device capability stats).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// CUDA device ordinal.
    pub ordinal: u32,
    /// Device name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Core clock, kHz.
    pub clock_rate_khz: u64,
    /// Streaming multiprocessors.
    pub core_count: u64,
    /// Global memory, bytes.
    pub memory_size: u64,
    /// Global memory bandwidth, bytes per second.
    pub memory_bandwidth: u64,
    /// Compute capability, major.
    pub compute_cap_major: i64,
    /// Compute capability, minor.
    pub compute_cap_minor: i64,
    /// Per-SM limits, for the kernels' theoretical occupancy (`None`: unknown, and
    /// kernels carry no `occ_pct`).
    pub sm: Option<crate::occupancy::SmLimits>,
}

/// Everything a session's device tracer collected.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeviceTrace {
    /// The GPUs seen.
    pub devices: Vec<DeviceInfo>,
    /// Records in arrival order.
    pub activities: Vec<Activity>,
    /// Device records (kernels, copies, memsets, memory records) left out because
    /// `gpu_max_activity_api_events` was reached.
    pub dropped_activity: u64,
    /// API and NVTX records left out because `gpu_max_callback_api_events` was
    /// reached.
    pub dropped_api: u64,
    /// Records CUPTI itself dropped (its buffers were full).
    pub dropped_by_cupti: u64,
    /// `gpu_max_annotation_strings`: how many distinct annotation stacks (`tf_op`
    /// strings) device work may carry (`None`: no limit). Launches under further ones
    /// keep their correlation but lose their `tf_op`, `annotation` and
    /// `host_step_num` stats.
    pub max_annotation_strings: Option<u64>,
    /// `gpu_trace_all_api_calls`: put every CUDA API call on the host lines, not only
    /// those [`crate::convert::api_recorded_by_default`] names and those that launched
    /// device work.
    pub all_api_calls: bool,
    /// API records the tracer left out as they arrived (they launch nothing), by
    /// name: what CUPTI delivered although told not to, or everything where it
    /// cannot be told per function.
    pub api_left_out: BTreeMap<String, u64>,
    /// Why CUPTI could not be told to record only the API calls that matter (the
    /// tracer then drops the others as they arrive); `None` when it was told, or
    /// when every call was asked for.
    pub api_selection_failed: Option<String>,
    /// What the tracer saw of CUDA graphs being built: nodes with the annotation open
    /// when each was captured, clones, executable graphs.
    pub graph_notes: Vec<crate::graphs::GraphNote>,
    /// Per graph launch (its correlation id), the executable graph it launched.
    pub graph_launches: Vec<(u32, u32)>,
    /// `gpu_dump_graph_node_mapping`: write each graph's nodes with where they came
    /// from on a line of the GPU plane.
    pub dump_graph_node_mapping: bool,
    /// The performance-monitor metrics sampled (`gpu_pm_sample_counters`).
    pub pm_metrics: Vec<String>,
    /// Their samples.
    pub pm_samples: Vec<PmSample>,
    /// `gpu_num_chips_to_profile_per_task`: only devices `0..n` are profiled (`None`:
    /// every device); the work of the others and the calls that launched it are left
    /// out, and the profile says how many devices were.
    pub max_devices: Option<u32>,
}
