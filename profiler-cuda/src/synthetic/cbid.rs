//! CUPTI callback ids of the API functions synthetic records name: the driver and
//! runtime ids of `CUpti_driver_api_trace_cbid` / `CUpti_runtime_api_trace_cbid`
//! (stable across CUDA versions; checked against cudarc's enums in the tests).

/// `cuLaunchKernel` (driver).
pub const CU_LAUNCH_KERNEL: u32 = 307;
/// `cuMemcpyHtoDAsync_v2` (driver).
pub const CU_MEMCPY_HTOD_ASYNC: u32 = 277;
/// `cuMemcpyDtoHAsync_v2` (driver).
pub const CU_MEMCPY_DTOH_ASYNC: u32 = 279;
/// `cuStreamSynchronize` (driver).
pub const CU_STREAM_SYNCHRONIZE: u32 = 126;
/// `cuMemAlloc_v2` (driver).
pub const CU_MEM_ALLOC: u32 = 243;
/// `cuMemAllocAsync` (driver): a block from the stream's memory pool.
pub const CU_MEM_ALLOC_ASYNC: u32 = 598;
/// `cuMemFreeAsync` (driver).
pub const CU_MEM_FREE_ASYNC: u32 = 600;
/// `cuCtxGetCurrent` (driver): launches nothing.
pub const CU_CTX_GET_CURRENT: u32 = 304;
/// `cuEventCreate` (driver): launches nothing.
pub const CU_EVENT_CREATE: u32 = 118;
/// `cuEventRecord` (driver): launches nothing.
pub const CU_EVENT_RECORD: u32 = 119;
/// `cuEventDestroy_v2` (driver): launches nothing.
pub const CU_EVENT_DESTROY: u32 = 325;
/// `cuStreamGetCaptureInfo_v2` (driver): launches nothing.
pub const CU_STREAM_GET_CAPTURE_INFO: u32 = 629;
/// `cudaLaunchKernel_v7000` (runtime).
pub const CUDA_LAUNCH_KERNEL: u32 = 211;
/// `cudaGetLastError_v3020` (runtime): launches nothing.
pub const CUDA_GET_LAST_ERROR: u32 = 10;
/// `cuGraphLaunch` (driver).
pub const CU_GRAPH_LAUNCH: u32 = 514;

/// (driver domain?, id, the name CUPTI gives it).
pub(crate) const NAMES: [(bool, u32, &str); 15] = [
    (true, CU_LAUNCH_KERNEL, "cuLaunchKernel"),
    (true, CU_MEM_ALLOC_ASYNC, "cuMemAllocAsync"),
    (true, CU_MEM_FREE_ASYNC, "cuMemFreeAsync"),
    (true, CU_MEMCPY_HTOD_ASYNC, "cuMemcpyHtoDAsync_v2"),
    (true, CU_MEMCPY_DTOH_ASYNC, "cuMemcpyDtoHAsync_v2"),
    (true, CU_STREAM_SYNCHRONIZE, "cuStreamSynchronize"),
    (true, CU_MEM_ALLOC, "cuMemAlloc_v2"),
    (true, CU_CTX_GET_CURRENT, "cuCtxGetCurrent"),
    (true, CU_EVENT_CREATE, "cuEventCreate"),
    (true, CU_EVENT_RECORD, "cuEventRecord"),
    (true, CU_EVENT_DESTROY, "cuEventDestroy_v2"),
    (
        true,
        CU_STREAM_GET_CAPTURE_INFO,
        "cuStreamGetCaptureInfo_v2",
    ),
    (false, CUDA_LAUNCH_KERNEL, "cudaLaunchKernel_v7000"),
    (false, CUDA_GET_LAST_ERROR, "cudaGetLastError_v3020"),
    (true, CU_GRAPH_LAUNCH, "cuGraphLaunch"),
];

#[cfg(test)]
mod tests {
    use cudarc::cupti::sys;

    use super::*;

    // The callback ids against cudarc's generated enums.
    #[test]
    fn callback_ids_match_cuptis_enums() {
        use sys::CUpti_driver_api_trace_cbid as D;
        use sys::CUpti_runtime_api_trace_cbid as R;
        for (ours, theirs) in [
            (
                CU_LAUNCH_KERNEL,
                D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel as u32,
            ),
            (
                CU_MEMCPY_HTOD_ASYNC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2 as u32,
            ),
            (
                CU_MEMCPY_DTOH_ASYNC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2 as u32,
            ),
            (
                CU_STREAM_SYNCHRONIZE,
                D::CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize as u32,
            ),
            (
                CU_MEM_ALLOC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 as u32,
            ),
            (
                CU_MEM_ALLOC_ASYNC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync as u32,
            ),
            (
                CU_MEM_FREE_ASYNC,
                D::CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync as u32,
            ),
            (
                CU_CTX_GET_CURRENT,
                D::CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent as u32,
            ),
            (
                CU_EVENT_CREATE,
                D::CUPTI_DRIVER_TRACE_CBID_cuEventCreate as u32,
            ),
            (
                CU_EVENT_RECORD,
                D::CUPTI_DRIVER_TRACE_CBID_cuEventRecord as u32,
            ),
            (
                CU_EVENT_DESTROY,
                D::CUPTI_DRIVER_TRACE_CBID_cuEventDestroy_v2 as u32,
            ),
            (
                CU_STREAM_GET_CAPTURE_INFO,
                D::CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2 as u32,
            ),
            (
                CUDA_LAUNCH_KERNEL,
                R::CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 as u32,
            ),
            (
                CUDA_GET_LAST_ERROR,
                R::CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020 as u32,
            ),
            (
                CU_GRAPH_LAUNCH,
                D::CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch as u32,
            ),
        ] {
            assert_eq!(ours, theirs);
        }
    }
}
