//! What CUPTI is told to record: the activity kinds, NVTX's marker records, and the
//! per-function switches for API records.

#![allow(unsafe_code)]

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, Ordering};

use cudarc::cupti::sys as cupti;

pub(super) const RECORD_KINDS: [cupti::CUpti_ActivityKind; 6] = [
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMCPY,
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_MEMSET,
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_DRIVER,
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_RUNTIME,
    cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
];

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

/// Callback ids scanned in each API domain when telling CUPTI which functions to
/// record: above the highest any CUDA release has used (868 driver ids in 13.0).
const CBID_SCAN: u32 = 2048;

/// Whether an earlier session turned some functions' API records off: CUPTI keeps
/// the setting across sessions, so a session that wants every call turns them on.
static API_RECORDS_SELECTED: AtomicBool = AtomicBool::new(false);

/// `cuptiActivityEnableDriverApi` / `cuptiActivityEnableRuntimeApi`.
type EnableApi = unsafe extern "C" fn(cupti::CUpti_CallbackId, u8) -> cupti::CUptiResult;

/// Tells CUPTI, per driver and runtime function, whether to make API records: for
/// those `convert::api_recorded_by_default` names (every function with `all`).
/// CUPTI 12.5 added the per-function switches: with an older libcupti they are
/// looked up and not found, and every call is recorded, the tracer dropping those
/// that launch nothing as they arrive. CUPTI keeps the switches across sessions, so
/// a session finding them as it wants them does nothing.
pub(super) fn select_api_records(all: bool) -> Result<(), String> {
    if API_RECORDS_SELECTED.load(Ordering::Relaxed) != all {
        return Ok(());
    }
    let mut off = 0;
    let selected = select_in_each_domain(all, &mut off);
    // Whatever was turned off stays off for later sessions until one turns it on.
    API_RECORDS_SELECTED.store(off > 0, Ordering::Relaxed);
    selected
}

/// [`select_api_records`] in the driver, then the runtime domain; `off` counts the
/// functions turned off.
fn select_in_each_domain(all: bool, off: &mut u32) -> Result<(), String> {
    for (domain, symbol) in [
        (
            cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
            "cuptiActivityEnableDriverApi",
        ),
        (
            cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API,
            "cuptiActivityEnableRuntimeApi",
        ),
    ] {
        // SAFETY: libcupti was found before the tracer started; the symbol, where it
        // exists, has CUPTI's signature `CUptiResult (CUpti_CallbackId, uint8_t)`.
        let enable = unsafe { cupti::culib().get::<EnableApi>(symbol.as_bytes()) }
            .map(|f| *f)
            .map_err(|_| format!("libcupti has no {symbol}: it is older than CUDA 12.5"))?;
        for cbid in 1..CBID_SCAN {
            let mut name: *const std::ffi::c_char = std::ptr::null();
            // SAFETY: valid out-pointer; CUPTI returns a static string on success and
            // an error for ids it does not know.
            let named = unsafe { cupti::cuptiGetCallbackName(domain, cbid, &mut name) }
                .result()
                .is_ok();
            if !named || name.is_null() {
                continue;
            }
            // SAFETY: as above.
            let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
            let on = all || crate::convert::api_recorded_by_default(&name);
            // SAFETY: a plain call with an id CUPTI named.
            match unsafe { enable(cbid, u8::from(on)) } {
                cupti::CUptiResult::CUPTI_SUCCESS => *off += u32::from(!on),
                // The first function to turn off says whether the switch works at all;
                // one id it refuses later is left on and dropped as it arrives.
                e if *off == 0 && !on => return Err(format!("{symbol} failed ({e:?})")),
                _ => {}
            }
        }
    }
    Ok(())
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
