//! Which CUDA API functions the tracer records, and what it must know about each:
//! whether a call of it is kept by default, launches a graph, or instantiates one.
//!
//! CUPTI names functions as `cuLaunchKernel`, `cuMemcpyHtoDAsync_v2_ptsz`,
//! `cudaLaunchKernel_v7000`: the families below match the name without its ABI-version
//! and per-thread-stream suffixes. The tracer asks CUPTI for each callback id's name
//! once, when it starts, and subscribes to the functions [`flags`] marks
//! [`RECORD`] (every function with `gpu_trace_all_api_calls`).

/// Families of CUDA API functions recorded by default, by the start of their base
/// name (the name without CUPTI's `_v2` / `_v3020` / `_ptsz` / `_ptds` suffixes).
const RECORDED_FAMILIES: [&str; 13] = [
    // Launches.
    "cuLaunchKernel",
    "cuLaunchCooperativeKernel",
    "cuLaunchGrid",
    "cudaLaunchKernel",
    "cudaLaunchCooperativeKernel",
    // Copies and memsets.
    "cuMemcpy",
    "cudaMemcpy",
    "cuMemset",
    "cudaMemset",
    // Allocations and frees.
    "cuMemAlloc",
    "cuMemFree",
    "cudaMalloc",
    "cudaFree",
];

/// Single CUDA API functions recorded by default, by base name.
const RECORDED_FUNCTIONS: [&str; 15] = [
    // The oldest launch calls, and graph launches.
    "cuLaunch",
    "cudaLaunch",
    "cuGraphLaunch",
    "cudaGraphLaunch",
    // Allocations and frees the families above miss.
    "cuMemHostAlloc",
    "cudaHostAlloc",
    "cuMemCreate",
    "cuMemRelease",
    // Synchronisation: the host waits for the device.
    "cuCtxSynchronize",
    "cuStreamSynchronize",
    "cuEventSynchronize",
    "cudaDeviceSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaThreadSynchronize",
];

/// A CUDA API function's name without CUPTI's ABI-version (`_v2`, `_v3020`) and
/// per-thread default stream (`_ptsz`, `_ptds`) suffixes: `cuMemcpyHtoDAsync_v2_ptsz`
/// → `cuMemcpyHtoDAsync`, `cudaLaunchKernel_ptsz_v7000` → `cudaLaunchKernel`.
fn base_name(name: &str) -> &str {
    for (at, _) in name.match_indices('_') {
        let rest = &name[at + 1..];
        let version = rest
            .strip_prefix('v')
            .is_some_and(|v| v.starts_with(|c: char| c.is_ascii_digit()));
        if version || rest.starts_with("ptsz") || rest.starts_with("ptds") {
            return &name[..at];
        }
    }
    name
}

/// Whether prof records the CUDA driver or runtime API call `name` (as CUPTI names
/// it) without `gpu_trace_all_api_calls`: kernel launches (`cuLaunchKernel*`,
/// `cudaLaunchKernel*`, `cuLaunchCooperativeKernel*`, `cuLaunchGrid*`, graph
/// launches), copies (`cuMemcpy*`, `cudaMemcpy*`), memsets (`cuMemset*`,
/// `cudaMemset*`), allocations and frees (`cuMemAlloc*`, `cuMemFree*`,
/// `cuMemHostAlloc`, `cuMemCreate`, `cuMemRelease`, `cudaMalloc*`, `cudaFree*`,
/// `cudaHostAlloc`) and synchronisation (`cuCtxSynchronize`, `cuStreamSynchronize`,
/// `cuEventSynchronize`, `cudaDeviceSynchronize`, `cudaStreamSynchronize`,
/// `cudaEventSynchronize`, `cudaThreadSynchronize`), as TSL's tracer does. Calls
/// that launch nothing (`cuCtxGetCurrent`, `cuEventCreate`, `cuEventRecord`,
/// `cuStreamGetCaptureInfo`, `cudaGetLastError`, …) are left out: they are most of
/// what a framework calls, and say nothing about the device.
///
/// ```
/// use profiler_cuda::convert::api_recorded_by_default as recorded;
/// assert!(recorded("cuLaunchKernel") && recorded("cudaLaunchKernel_ptsz_v7000"));
/// assert!(recorded("cuMemcpyHtoDAsync_v2") && recorded("cuStreamSynchronize"));
/// assert!(!recorded("cuCtxGetCurrent") && !recorded("cuEventDestroy_v2"));
/// ```
pub fn api_recorded_by_default(name: &str) -> bool {
    let base = base_name(name);
    RECORDED_FUNCTIONS.contains(&base) || RECORDED_FAMILIES.iter().any(|f| base.starts_with(f))
}

/// Graph-building calls recorded by default (TSL's list): graph creation, node adding,
/// instantiation, cloning, stream capture, by the start of their base name.
const GRAPH_FAMILIES: [&str; 12] = [
    "cuGraphCreate",
    "cudaGraphCreate",
    "cuGraphAdd",
    "cudaGraphAdd",
    "cuGraphInstantiate",
    "cudaGraphInstantiate",
    "cuGraphClone",
    "cudaGraphClone",
    "cuStreamBeginCapture",
    "cudaStreamBeginCapture",
    "cuStreamEndCapture",
    "cudaStreamEndCapture",
];

/// [`flags`]: a call of the function is recorded by default.
pub const RECORD: u8 = 1;
/// [`flags`]: the function launches an executable graph (`cuGraphLaunch`,
/// `cudaGraphLaunch`); its first parameter is the `CUgraphExec`.
pub const GRAPH_LAUNCH: u8 = 2;
/// [`flags`]: the function instantiates a graph; the nodes made inside it are the
/// executable graph's clones.
pub const INSTANTIATE: u8 = 4;
/// [`flags`]: a driver function that launches one kernel (`cuLaunchKernel`,
/// `cuLaunchKernelEx`, `cuLaunchCooperativeKernel`, `cuLaunchGrid`, `cuLaunch`): where
/// one is called on a thread with no annotation open, it takes the annotation handed
/// off by the thread that issued the kernel (`profiler_core::tracer::take_hand_off`:
/// cubecl launches from a device thread of its own).
pub const KERNEL_LAUNCH: u8 = 8;

/// What the tracer needs to know about the function CUPTI calls `name`: a set of
/// [`RECORD`], [`GRAPH_LAUNCH`], [`INSTANTIATE`] and [`KERNEL_LAUNCH`].
///
/// ```
/// use profiler_cuda::api::{flags, GRAPH_LAUNCH, INSTANTIATE, KERNEL_LAUNCH, RECORD};
/// assert_eq!(flags("cuLaunchKernel"), RECORD | KERNEL_LAUNCH);
/// assert_eq!(flags("cuLaunchKernelEx_ptsz"), RECORD | KERNEL_LAUNCH);
/// assert_eq!(flags("cudaLaunchKernel_v7000"), RECORD);
/// assert_eq!(flags("cuGraphLaunch_ptsz"), RECORD | GRAPH_LAUNCH);
/// assert_eq!(flags("cudaGraphInstantiateWithFlags_v11040"), RECORD | INSTANTIATE);
/// assert_eq!(flags("cuGraphAddKernelNode_v2"), RECORD);
/// assert_eq!(flags("cuCtxGetCurrent"), 0);
/// ```
pub fn flags(name: &str) -> u8 {
    let base = base_name(name);
    let mut flags = 0;
    if api_recorded_by_default(name) || GRAPH_FAMILIES.iter().any(|f| base.starts_with(f)) {
        flags |= RECORD;
    }
    if base == "cuGraphLaunch" || base == "cudaGraphLaunch" {
        flags |= GRAPH_LAUNCH;
    }
    if base.starts_with("cuGraphInstantiate") || base.starts_with("cudaGraphInstantiate") {
        flags |= INSTANTIATE;
    }
    // The driver's: a runtime launch reaches the driver's, which CUPTI reports too.
    if base == "cuLaunch"
        || [
            "cuLaunchKernel",
            "cuLaunchCooperativeKernel",
            "cuLaunchGrid",
        ]
        .iter()
        .any(|f| base.starts_with(f))
    {
        flags |= KERNEL_LAUNCH;
    }
    flags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_names_drop_cuptis_suffixes() {
        for (name, base) in [
            ("cuLaunchKernel", "cuLaunchKernel"),
            ("cuLaunchKernel_ptsz", "cuLaunchKernel"),
            ("cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyHtoDAsync"),
            ("cudaLaunchKernel_ptsz_v7000", "cudaLaunchKernel"),
            ("cudaMemcpy_v3020", "cudaMemcpy"),
            ("cuStreamGetCaptureInfo_v2", "cuStreamGetCaptureInfo"),
            ("cuMemAllocFromPoolAsync_ptsz", "cuMemAllocFromPoolAsync"),
            ("cuGraphInstantiate_v2", "cuGraphInstantiate"),
            ("__cudaRegisterFunction_v3020", "__cudaRegisterFunction"),
            ("cuvid_x", "cuvid_x"),
        ] {
            assert_eq!(base_name(name), base, "{name}");
        }
    }

    #[test]
    fn the_calls_that_matter_are_recorded_by_default() {
        for name in [
            "cuLaunchKernel",
            "cuLaunchKernelEx_ptsz",
            "cuLaunchCooperativeKernelMultiDevice",
            "cuLaunchGridAsync",
            "cuLaunch",
            "cudaLaunch_v3020",
            "cudaLaunchKernel_v7000",
            "cudaLaunchKernelExC_v11060",
            "cudaLaunchCooperativeKernel_ptsz_v9000",
            "cuGraphLaunch",
            "cuGraphLaunch_ptsz",
            "cudaGraphLaunch_v10000",
            "cuMemcpyHtoD_v2",
            "cuMemcpyDtoHAsync_v2_ptsz",
            "cuMemcpy3DPeerAsync",
            "cuMemcpyBatchAsync",
            "cudaMemcpy_v3020",
            "cudaMemcpyAsync_ptsz_v7000",
            "cudaMemcpyToSymbol_v3020",
            "cuMemsetD32Async",
            "cudaMemsetAsync_v3020",
            "cuMemAlloc_v2",
            "cuMemAllocHost_v2",
            "cuMemAllocManaged",
            "cuMemAllocAsync",
            "cuMemFree_v2",
            "cuMemFreeHost",
            "cuMemFreeAsync_ptsz",
            "cuMemHostAlloc",
            "cuMemCreate",
            "cuMemRelease",
            "cudaMalloc_v3020",
            "cudaMallocHost_v3020",
            "cudaMallocAsync_v11020",
            "cudaFree_v3020",
            "cudaFreeHost_v3020",
            "cudaHostAlloc_v3020",
            "cuCtxSynchronize",
            "cuCtxSynchronize_v2",
            "cuStreamSynchronize",
            "cuStreamSynchronize_ptsz",
            "cuEventSynchronize",
            "cudaDeviceSynchronize_v3020",
            "cudaStreamSynchronize_v3020",
            "cudaEventSynchronize_v3020",
            "cudaThreadSynchronize_v3020",
        ] {
            assert!(api_recorded_by_default(name), "{name} should be recorded");
        }
        // The noisiest calls of a 100-step H100 run, and other calls that launch
        // nothing.
        for name in [
            "cuCtxGetCurrent",
            "cuCtxSetCurrent",
            "cuEventCreate",
            "cuEventDestroy_v2",
            "cuEventRecord",
            "cuEventQuery",
            "cuStreamGetCaptureInfo_v2",
            "cuStreamIsCapturing",
            "cuStreamWaitEvent",
            "cuPointerGetAttribute",
            "cuDevicePrimaryCtxRetain",
            "cuFuncGetAttribute",
            "cuKernelGetAttribute",
            "cuModuleGetFunction",
            "cuMemGetInfo_v2",
            "cuMemGetAddressRange_v2",
            "cuGraphInstantiate_v2",
            "cuLaunchHostFunc",
            "cudaGetDevice_v3020",
            "cudaGetLastError_v3020",
            "cudaStreamIsCapturing_v10000",
            "cudaEventRecord_v3020",
            "CUDA API 123",
            "",
        ] {
            assert!(!api_recorded_by_default(name), "{name} should be left out");
        }
    }

    #[test]
    fn graph_calls_are_recorded_and_marked() {
        for name in [
            "cuGraphCreate",
            "cudaGraphCreate_v10000",
            "cuGraphAddKernelNode_v2",
            "cuGraphAddMemcpyNode",
            "cudaGraphAddChildGraphNode_v10000",
            "cuGraphClone",
            "cuStreamBeginCapture_v2_ptsz",
            "cudaStreamEndCapture_v10000",
        ] {
            assert_eq!(flags(name), RECORD, "{name}");
        }
        for name in [
            "cuGraphInstantiate_v2",
            "cuGraphInstantiateWithParams_ptsz",
            "cudaGraphInstantiate_v10000",
        ] {
            assert_eq!(flags(name), RECORD | INSTANTIATE, "{name}");
        }
        for name in [
            "cuGraphLaunch",
            "cuGraphLaunch_ptsz",
            "cudaGraphLaunch_v10000",
            "cudaGraphLaunch_ptsz_v10000",
        ] {
            assert_eq!(flags(name), RECORD | GRAPH_LAUNCH, "{name}");
        }
        for name in [
            "cuGraphGetNodes",
            "cuGraphExecDestroy",
            "cuStreamGetCaptureInfo_v2",
            "cuGraphLaunchX",
        ] {
            assert_eq!(flags(name) & (GRAPH_LAUNCH | INSTANTIATE), 0, "{name}");
        }
    }
}
