//! The names of the stats and counters prof writes for GPU work, in one place: TSL's
//! names where XProf reads them (`kernel_details`, the device capabilities), prof's
//! own where it adds something XProf has no name for.

/// Stat linking an API call on a host line to the device work it launched; the
/// exporters draw the flow from it too.
pub use profiler_core::schema::CORRELATION_ID;

/// The stats every device tracer's work carries, named once in `profiler_core::schema`
/// (cubecl's tracer in `profiler-burn` writes them too): XProf's op (`tf_op`), the
/// innermost annotation, the step, and where the work ran.
pub use profiler_core::schema::{
    ANNOTATION, CONTEXT_ID, DEVICE_ID, HOST_STEP_NUM, KERNEL_DETAILS, STREAM, TF_OP,
};
/// Stat (TSL's): the innermost NVTX range open on the launching thread when the launch
/// of device work was made (`gpu_enable_nvtx_tracking`).
pub const NVTX_RANGE: &str = "nvtx_range";
/// Counter: bytes of device memory in use on a GPU, on its plane's `_counters_` line.
pub const DEVICE_BYTES_IN_USE: &str = "device_bytes_in_use";

/// Stat of device work that ran inside a CUDA graph, and of the host call that
/// launched the graph: the graph's id (`cuptiGetGraphId` numbering; uint64).
pub const CUDA_GRAPH_ID: &str = "cuda_graph_id";
/// Stat of device work that ran inside a CUDA graph: its node (of the executable
/// graph; uint64).
pub const CUDA_GRAPH_NODE_ID: &str = "cuda_graph_node_id";
/// Stat of a whole-graph launch (`gpu_enable_cupti_activity_graph_trace`): the
/// executable graph's id (uint64).
pub const CUDA_GRAPH_EXEC_ID: &str = "cuda_graph_exec_id";
/// Plane stat (`gpu_dump_graph_node_mapping`): every node of the graphs that ran on
/// the device, a line each, with the node it was cloned from, its kind and the
/// annotation open when it was captured.
pub const CUDA_GRAPH_NODE_MAPPING: &str = "cuda_graph_node_mapping";
/// Plane stat of the `/host:CPU` plane (`gpu_num_chips_to_profile_per_task`): how many
/// devices were left out of the profile.
pub const DEVICES_LEFT_OUT: &str = "devices_left_out";

/// A copy's kinds and size.
pub const MEMCPY_DETAILS: &str = "memcpy_details";
/// A memset's size.
pub const MEMSET_DETAILS: &str = "memset_details";

/// Plane stats of a GPU's capabilities, as TSL names them (XProf's roofline and
/// overview read them).
pub mod device {
    /// SM clock, kHz.
    pub const CLOCK_RATE: &str = "clock_rate";
    /// Number of SMs.
    pub const CORE_COUNT: &str = "core_count";
    /// Device memory, bytes.
    pub const MEMORY_SIZE: &str = "memory_size";
    /// Device memory bandwidth, bytes per second.
    pub const MEMORY_BANDWIDTH: &str = "memory_bandwidth";
    /// Compute capability, major.
    pub const COMPUTE_CAP_MAJOR: &str = "compute_cap_major";
    /// Compute capability, minor.
    pub const COMPUTE_CAP_MINOR: &str = "compute_cap_minor";
    /// The device's name, as the driver reports it.
    pub use profiler_core::schema::DEVICE_NAME as NAME;
    /// `Nvidia`.
    pub use profiler_core::schema::DEVICE_VENDOR as VENDOR;
}
