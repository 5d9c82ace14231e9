//! What CUPTI is told to record as activity: the device's work, memory, NVTX's marker
//! records and whole-graph launches. (API calls come through the callback API:
//! `callbacks`.)

#![allow(unsafe_code)]

use cudarc::cupti::sys as cupti;

/// The device's work: without these there is no GPU trace.
pub(super) const RECORD_KINDS: [cupti::CUpti_ActivityKind; 3] = [
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
];

/// `gpu_enable_cupti_activity_graph_trace`: one record per whole-graph launch.
pub(super) const GRAPH_TRACE_KIND: cupti::CUpti_ActivityKind =
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_GRAPH_TRACE;

/// Enabled apart from [`RECORD_KINDS`]: failing to enable it does not fail the tracer.
pub(super) const MEMORY_KIND: cupti::CUpti_ActivityKind =
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMORY2;

/// NVTX ranges and marks, with `gpu_enable_nvtx_tracking`; failing to enable it does
/// not fail the tracer either.
const MARKER_KIND: cupti::CUpti_ActivityKind =
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MARKER;

/// The variable NVTX reads, once per library at its first NVTX call, for the tool
/// its calls go to: without it naming libcupti, CUPTI sees no range.
const NVTX_INJECTION: &str = "NVTX_INJECTION64_PATH";

/// Turns every kind [`CuptiTracer`](super::CuptiTracer) may have enabled off.
pub(super) fn disable_all() {
    for kind in RECORD_KINDS {
        // SAFETY: plain call; disabling a kind that is not enabled is harmless.
        let _ = unsafe { cupti::cuptiActivityDisable(kind) };
    }
    // SAFETY: as above.
    let _ = unsafe { cupti::cuptiActivityDisable(MEMORY_KIND) };
    // SAFETY: as above.
    let _ = unsafe { cupti::cuptiActivityDisable(MARKER_KIND) };
    // SAFETY: as above.
    let _ = unsafe { cupti::cuptiActivityDisable(GRAPH_TRACE_KIND) };
}

/// Turns on CUPTI's marker records for `gpu_enable_nvtx_tracking`; returns why NVTX
/// ranges will be missing, if they will: the kind could not be enabled, or NVTX's
/// calls do not reach CUPTI ([`NVTX_INJECTION`] unset). The rest of the trace goes on
/// either way.
pub(super) fn enable_nvtx() -> Option<String> {
    // SAFETY: plain call into a loaded library.
    if let Err(e) = unsafe { cupti::cuptiActivityEnable(MARKER_KIND) }.result() {
        return Some(format!(
            "prof: gpu_enable_nvtx_tracking: no NVTX ranges: cuptiActivityEnable({MARKER_KIND:?}) failed ({e:?}); the rest of the GPU trace goes on"
        ));
    }
    nvtx_injection_warning(std::env::var_os(NVTX_INJECTION).as_deref())
}

/// The warning when `injection` (the value of [`NVTX_INJECTION`]) does not route NVTX
/// calls to libcupti: unset, NVTX calls go nowhere; naming another library (Nsight
/// Systems' injection), they go to that tool. Either way no range reaches prof.
fn nvtx_injection_warning(injection: Option<&std::ffi::OsStr>) -> Option<String> {
    let hint = "set it to the path of the libcupti this process loads (e.g. <cuda>/extras/CUPTI/lib64/libcupti.so) before the process starts";
    match injection.filter(|p| !p.is_empty()) {
        None => Some(format!(
            "prof: gpu_enable_nvtx_tracking: {NVTX_INJECTION} is not set, so NVTX calls do not reach CUPTI and no NVTX range is recorded; {hint}"
        )),
        Some(path) => {
            let file = std::path::Path::new(path)
                .file_name()
                .unwrap_or(path)
                .to_string_lossy();
            (!file.contains("cupti")).then(|| {
                format!(
                    "prof: gpu_enable_nvtx_tracking: {NVTX_INJECTION} names {}, not libcupti, so NVTX calls go to that tool and no NVTX range is recorded here; {hint}",
                    path.to_string_lossy()
                )
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvtx_needs_its_calls_routed_to_libcupti() {
        use std::ffi::OsStr;
        let unset = nvtx_injection_warning(None).expect("warning");
        assert!(
            unset.contains("NVTX_INJECTION64_PATH is not set"),
            "{unset}"
        );
        assert!(nvtx_injection_warning(Some(OsStr::new(""))).is_some());
        let other = nvtx_injection_warning(Some(OsStr::new(
            "/opt/nsight-systems/target-linux-x64/libToolsInjection64.so",
        )))
        .expect("warning");
        assert!(
            other.contains("libToolsInjection64.so, not libcupti"),
            "{other}"
        );
        assert_eq!(
            nvtx_injection_warning(Some(OsStr::new(
                "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13"
            ))),
            None
        );
    }
}
