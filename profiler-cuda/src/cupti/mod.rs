//! The live CUPTI tracer: activity buffers, the host clock, external correlation.
//!
//! Nothing here has run on a GPU yet (none was available while it was written); the
//! conversion it feeds is tested on synthetic records. cudarc panics on the first use
//! of a symbol whose library is missing, so [`CuptiTracer::start`] checks for libcuda
//! and libcupti before anything else and turns their absence into an error message
//! that says what was missing and which names were tried. What CUPTI is told to
//! record is in [`enable`].

#![allow(unsafe_code)]

mod enable;

use std::collections::HashSet;
use std::ffi::CStr;
use std::sync::Mutex;

use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as driver;
use profiler_core::tracer::{self, ScopeHook, ScopeId, SessionClock, Tracer};
use profiler_core::xspace::XSpace;
use profiler_core::ProfileOptions;

use crate::activity::{Activity, DeviceInfo, DeviceTrace};
use crate::layout::{self, kind};
use crate::occupancy::SmLimits;

use enable::{enable_nvtx, select_api_records, MEMORY_KIND, RECORD_KINDS};

/// Size of each activity buffer handed to CUPTI (TSL uses the same order).
const BUFFER_BYTES: usize = 4 << 20;
/// Default caps, as JAX's defaults for the same keys.
const DEFAULT_MAX_ACTIVITY: u64 = 2 << 20;
const DEFAULT_MAX_API: u64 = 2 << 20;
const DEFAULT_MAX_ANNOTATIONS: u64 = 1 << 20;

/// Records kept, filled on CUPTI's buffer-completion thread. The lock is held only to
/// append parsed records; application threads never take it.
static COLLECTED: Mutex<Option<Collected>> = Mutex::new(None);

struct Collected {
    trace: DeviceTrace,
    max_activity: u64,
    max_api: u64,
    kept_activity: u64,
    kept_api: u64,
    /// `gpu_trace_all_api_calls`: keep API records whatever they name.
    all_api_calls: bool,
}

fn collected() -> std::sync::MutexGuard<'static, Option<Collected>> {
    COLLECTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes the CUPTI tracer for sessions with `device_tracer_level >= 1`.
pub fn factory(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    if options.device_tracer_level == 0 {
        return None;
    }
    // Validated at start: a cap is >= 0, or -1 for no limit.
    let cap = |key, default| {
        options
            .advanced_int(key)
            .map_or(default, |v| u64::try_from(v).unwrap_or(u64::MAX))
    };
    Some(Box::new(CuptiTracer {
        max_activity: cap("gpu_max_activity_api_events", DEFAULT_MAX_ACTIVITY),
        max_api: cap("gpu_max_callback_api_events", DEFAULT_MAX_API),
        max_annotation_strings: cap("gpu_max_annotation_strings", DEFAULT_MAX_ANNOTATIONS),
        nvtx_asked: options.advanced_bool("gpu_enable_nvtx_tracking") == Some(true),
        all_api_calls: options.advanced_bool("gpu_trace_all_api_calls") == Some(true),
        devices: Vec::new(),
        running: false,
        memory_warning: None,
        nvtx_warning: None,
        api_selection_failed: None,
    }))
}

/// Why the libraries are not usable, or `None` when both load.
pub fn missing_libraries() -> Option<String> {
    // SAFETY: these only try to load the libraries by name; no symbol is used.
    let (has_cuda, has_cupti) = unsafe { (driver::is_culib_present(), cupti::is_culib_present()) };
    let mut missing = Vec::new();
    if !has_cuda {
        missing.push(format!(
            "libcuda (the NVIDIA driver; tried {})",
            cudarc::get_lib_name_candidates("cuda").join(", ")
        ));
    }
    if !has_cupti {
        missing.push(format!(
            "libcupti (tried {}; it is often in <cuda>/extras/CUPTI/lib64, add that to LD_LIBRARY_PATH)",
            cudarc::get_lib_name_candidates("cupti").join(", ")
        ));
    }
    (!missing.is_empty()).then(|| {
        format!(
            "prof: no GPU trace: {} not found on the library search path; host tracing goes on",
            missing.join(" and ")
        )
    })
}

/// The CUPTI device tracer of one session.
pub struct CuptiTracer {
    max_activity: u64,
    max_api: u64,
    max_annotation_strings: u64,
    /// `gpu_enable_nvtx_tracking`: record NVTX ranges (CUPTI's marker records).
    nvtx_asked: bool,
    /// Why NVTX ranges may be missing, reported at collection.
    nvtx_warning: Option<String>,
    /// `gpu_trace_all_api_calls`: record every CUDA API call, not only those that
    /// matter (`convert::api_recorded_by_default`).
    all_api_calls: bool,
    devices: Vec<DeviceInfo>,
    running: bool,
    /// Why memory records are not traced, reported at collection.
    memory_warning: Option<String>,
    /// Why CUPTI could not be told which API calls to record.
    api_selection_failed: Option<String>,
}

impl Tracer for CuptiTracer {
    fn start(&mut self) -> Result<(), String> {
        if let Some(why) = missing_libraries() {
            return Err(why);
        }
        let fail = |what: &str, e: &dyn std::fmt::Debug| {
            format!("prof: no GPU trace: {what} failed ({e:?}); host tracing goes on")
        };
        self.devices = devices().map_err(|e| fail("CUDA driver initialisation (cuInit)", &e))?;
        *collected() = Some(Collected {
            trace: DeviceTrace::default(),
            max_activity: self.max_activity,
            max_api: self.max_api,
            kept_activity: 0,
            kept_api: 0,
            all_api_calls: self.all_api_calls,
        });
        // SAFETY: the callbacks are `extern "C"` functions with the signatures CUPTI
        // declares, living for the whole process.
        unsafe {
            cupti::cuptiActivityRegisterTimestampCallback(Some(timestamp))
                .result()
                .map_err(|e| fail("cuptiActivityRegisterTimestampCallback", &e))?;
            cupti::cuptiActivityRegisterCallbacks(Some(buffer_requested), Some(buffer_completed))
                .result()
                .map_err(|e| fail("cuptiActivityRegisterCallbacks", &e))?;
        }
        for kind in RECORD_KINDS {
            // SAFETY: plain call into a loaded library.
            let enabled = unsafe { cupti::cuptiActivityEnable(kind) }.result();
            if let Err(e) = enabled {
                enable::disable_all();
                let hint = if format!("{e:?}").contains("INSUFFICIENT_PRIVILEGES") {
                    " (profiling needs permission: run as root or set the nvidia module option NVreg_RestrictProfilingToAdminUsers=0)"
                } else {
                    ""
                };
                return Err(fail(&format!("cuptiActivityEnable({kind:?}){hint}"), &e));
            }
        }
        // The API kinds are on: now CUPTI is told which functions' records to make.
        self.api_selection_failed = select_api_records(self.all_api_calls).err();
        // Memory records feed only the `device_bytes_in_use` counter: without them the
        // rest of the trace is still whole, so their failure is one warning.
        // SAFETY: plain call into a loaded library.
        self.memory_warning = unsafe { cupti::cuptiActivityEnable(MEMORY_KIND) }
            .result()
            .err()
            .map(|e| {
                format!(
                    "prof: no device_bytes_in_use counter: cuptiActivityEnable({MEMORY_KIND:?}) failed ({e:?}); the rest of the GPU trace goes on"
                )
            });
        if self.nvtx_asked {
            self.nvtx_warning = enable_nvtx();
            if let Some(why) = &self.nvtx_warning {
                tracing::warn!(target: profiler_core::log::TARGET, "{why}");
            }
        }
        tracer::set_scope_hook(Some(&HOOK));
        self.running = true;
        Ok(())
    }

    fn stop(&mut self) -> Result<(), String> {
        if !self.running {
            return Ok(());
        }
        tracer::set_scope_hook(None);
        enable::disable_all();
        // SAFETY: plain call; 1 = CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, so buffers still in
        // use are delivered too.
        let flushed = unsafe { cupti::cuptiActivityFlushAll(1) }.result();
        self.running = false;
        flushed.map_err(|e| {
            format!("prof: the GPU trace may be incomplete: cuptiActivityFlushAll failed ({e:?})")
        })
    }

    fn collect(&mut self, space: &mut XSpace, session: &SessionClock) {
        let Some(mut got) = collected().take() else {
            return;
        };
        got.trace.devices = std::mem::take(&mut self.devices);
        got.trace.max_annotation_strings = Some(self.max_annotation_strings);
        got.trace.all_api_calls = self.all_api_calls;
        got.trace.api_selection_failed = self.api_selection_failed.take();
        space.warnings.extend(self.memory_warning.take());
        space.warnings.extend(self.nvtx_warning.take());
        crate::convert::add_to_space(&got.trace, space, &|ns| session.to_session_ns(ns));
    }
}

fn devices() -> Result<Vec<DeviceInfo>, driver::CUresult> {
    use driver::CUdevice_attribute as A;
    // SAFETY: libcuda was found; these are plain queries with valid out-pointers.
    unsafe {
        driver::cuInit(0).result().map_err(|e| e.0)?;
        let mut count = 0;
        driver::cuDeviceGetCount(&mut count)
            .result()
            .map_err(|e| e.0)?;
        let mut out = Vec::new();
        for ordinal in 0..count {
            let mut dev = 0;
            driver::cuDeviceGet(&mut dev, ordinal)
                .result()
                .map_err(|e| e.0)?;
            let attr = |a: A| {
                let mut v = 0;
                let _ = driver::cuDeviceGetAttribute(&mut v, a, dev);
                u64::try_from(v).unwrap_or(0)
            };
            let mut mem = 0usize;
            let _ = driver::cuDeviceTotalMem_v2(&mut mem, dev);
            let mut name = [0 as std::ffi::c_char; 256];
            let _ = driver::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, dev);
            // Memory clock is in kHz and the bus width in bits; DDR moves two words a clock.
            let bandwidth = attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)
                * 1000
                * 2
                * attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
                / 8;
            out.push(DeviceInfo {
                ordinal: ordinal as u32,
                name: CStr::from_ptr(name.as_ptr()).to_string_lossy().into_owned(),
                clock_rate_khz: attr(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
                core_count: attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
                memory_size: mem as u64,
                memory_bandwidth: bandwidth,
                compute_cap_major: attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) as i64,
                compute_cap_minor: attr(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) as i64,
                sm: Some(SmLimits {
                    warp_size: attr(A::CU_DEVICE_ATTRIBUTE_WARP_SIZE) as u32,
                    max_threads: attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) as u32,
                    max_blocks: attr(A::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR) as u32,
                    registers: attr(A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR) as u32,
                    shared_memory: attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
                        as u32,
                    reserved_shared_per_block: attr(
                        A::CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
                    ) as u32,
                }),
            });
        }
        Ok(out)
    }
}

/// CUPTI's clock: the tracer clock prof converts host events with, so device and host
/// lines share one time base.
extern "C" fn timestamp() -> u64 {
    tracer::clock_ns()
}

/// CUPTI requires activity buffers aligned to 8 bytes (`ACTIVITY_RECORD_ALIGNMENT`);
/// a byte slice's allocation promises only 1.
fn buffer_layout() -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(BUFFER_BYTES, 8).expect("a valid layout")
}

extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    // SAFETY: the layout has a non-zero size. CUPTI passes valid out-pointers; a null
    // buffer (out of memory) makes CUPTI drop records, and the buffer is returned to
    // `buffer_completed`, which frees it with the same layout.
    unsafe {
        let block = std::alloc::alloc_zeroed(buffer_layout());
        *buffer = block;
        *size = if block.is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

extern "C" fn buffer_completed(
    _context: driver::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut parsed = Vec::new();
    let mut record: *mut cupti::CUpti_Activity = std::ptr::null_mut();
    // SAFETY: `buffer` is one `buffer_requested` made, holding `valid` bytes of records
    // CUPTI wrote; each record is at least its kind's shared prefix long.
    unsafe {
        while cupti::cuptiActivityGetNextRecord(buffer, valid, &mut record)
            .result()
            .is_ok()
        {
            let kind_value = record.cast::<u32>().read_unaligned();
            if let Some(len) = layout::prefix_len(kind_value) {
                let bytes = std::slice::from_raw_parts(record.cast::<u8>(), len);
                if let Some(activity) = layout::read(bytes, &LiveNames) {
                    parsed.push(activity);
                }
            }
        }
        let mut dropped = 0usize;
        let _ = cupti::cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut dropped);
        std::alloc::dealloc(buffer, buffer_layout());
        if let Some(c) = collected().as_mut() {
            c.keep(parsed, dropped as u64);
        }
    }
}

impl Collected {
    /// Adds a completed buffer's records, within the caps. API calls that launch
    /// nothing (not `convert::api_recorded_by_default`) are counted and dropped,
    /// with the annotation links CUPTI made for them, unless every call was asked
    /// for: where CUPTI cannot be told per function, this is where the cost is cut,
    /// and they never use up the API cap.
    fn keep(&mut self, parsed: Vec<Activity>, dropped_by_cupti: u64) {
        let c = self;
        c.trace.dropped_by_cupti += dropped_by_cupti;
        let mut left_out = HashSet::new();
        if !c.all_api_calls {
            for activity in &parsed {
                if let Activity::Api {
                    name,
                    correlation_id,
                    ..
                } = activity
                {
                    if !crate::convert::api_recorded_by_default(name) {
                        left_out.insert(*correlation_id);
                        *c.trace.api_left_out.entry(name.clone()).or_default() += 1;
                    }
                }
            }
        }
        for activity in parsed {
            match &activity {
                Activity::Api { correlation_id, .. }
                | Activity::ExternalCorrelation { correlation_id, .. }
                    if left_out.contains(correlation_id) =>
                {
                    continue;
                }
                _ => {}
            }
            let (kept, max, dropped) = match activity {
                // Links from launches to annotations: never dropped, and not API calls, so
                // they do not use up the API cap.
                Activity::ExternalCorrelation { .. } => {
                    c.trace.activities.push(activity);
                    continue;
                }
                // NVTX records are host-side records too.
                Activity::Api { .. } | Activity::Marker { .. } => {
                    (&mut c.kept_api, c.max_api, &mut c.trace.dropped_api)
                }
                _ => (
                    &mut c.kept_activity,
                    c.max_activity,
                    &mut c.trace.dropped_activity,
                ),
            };
            if *kept >= max {
                *dropped += 1;
                continue;
            }
            *kept += 1;
            c.trace.activities.push(activity);
        }
    }
}

struct LiveNames;

impl layout::Names for LiveNames {
    fn kernel(&self, name_ptr: u64) -> String {
        if name_ptr == 0 {
            return "(unnamed kernel)".to_owned();
        }
        // SAFETY: CUPTI's kernel name pointers are NUL-terminated strings it keeps for
        // the life of the process.
        unsafe { CStr::from_ptr(name_ptr as usize as *const std::ffi::c_char) }
            .to_string_lossy()
            .into_owned()
    }

    fn string(&self, ptr: u64) -> Option<String> {
        if ptr == 0 {
            return None;
        }
        // SAFETY: a marker's name and domain point to NUL-terminated strings CUPTI
        // keeps at least until the buffer holding the record is handed back to it; they
        // are read while that buffer is processed, as CUPTI's own samples read them.
        let s = unsafe { CStr::from_ptr(ptr as usize as *const std::ffi::c_char) };
        Some(s.to_string_lossy().into_owned())
    }

    fn api(&self, domain_kind: u32, cbid: u32) -> String {
        let domain = if domain_kind == kind::DRIVER {
            cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API
        } else {
            cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API
        };
        let mut name: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: valid out-pointer; CUPTI returns a static string on success.
        let ok = unsafe { cupti::cuptiGetCallbackName(domain, cbid, &mut name) }
            .result()
            .is_ok();
        if ok && !name.is_null() {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        } else {
            format!("CUDA API {cbid}")
        }
    }
}

/// Pushes each recorded annotation as CUPTI's external correlation id, so every
/// launch made inside it carries the annotation's [`ScopeId`].
static HOOK: ScopeHook = ScopeHook { enter, exit };

thread_local! {
    /// Ids this thread pushed and not yet popped: pops never outnumber pushes.
    static DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

fn enter(scope: ScopeId) {
    // SAFETY: plain call into libcupti, which `start` found before installing the hook.
    let pushed = unsafe {
        cupti::cuptiActivityPushExternalCorrelationId(
            cupti::CUpti_ExternalCorrelationKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
            scope.to_u64(),
        )
    }
    .result();
    // A failed push leaves launches unattributed, which the profile shows; counting
    // only successes keeps pops from outnumbering pushes.
    if pushed.is_ok() {
        let _ = DEPTH.try_with(|d| d.set(d.get() + 1));
    }
}

fn exit(_scope: ScopeId) {
    let popped = DEPTH.try_with(|d| {
        let depth = d.get();
        if depth > 0 {
            d.set(depth - 1);
        }
        depth > 0
    });
    if popped == Ok(true) {
        let mut last = 0u64;
        // SAFETY: valid out-pointer; this thread pushed at least one id.
        let _ = unsafe {
            cupti::cuptiActivityPopExternalCorrelationId(
                cupti::CUpti_ExternalCorrelationKind::CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                &mut last,
            )
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(correlation_id: u32) -> Activity {
        call("cuLaunchKernel", correlation_id)
    }

    fn call(name: &str, correlation_id: u32) -> Activity {
        Activity::Api {
            name: name.into(),
            start: 1,
            end: 2,
            thread_id: 7,
            correlation_id,
        }
    }

    fn collected(max_api: u64, all_api_calls: bool) -> Collected {
        Collected {
            trace: DeviceTrace::default(),
            max_activity: 10,
            max_api,
            kept_activity: 0,
            kept_api: 0,
            all_api_calls,
        }
    }

    fn link(correlation_id: u32) -> Activity {
        Activity::ExternalCorrelation {
            correlation_id,
            external_id: 99,
        }
    }

    #[test]
    fn calls_that_launch_nothing_are_dropped_as_they_arrive() {
        let buffer = || {
            vec![
                link(1),
                call("cuCtxGetCurrent", 1),
                link(2),
                api(2),
                link(3),
                call("cuEventDestroy_v2", 3),
                call("cuStreamSynchronize", 4),
                call("cuCtxGetCurrent", 5),
            ]
        };
        // Two calls fit under the cap: the noise neither uses it up nor stays.
        let mut c = collected(2, false);
        c.keep(buffer(), 0);
        let kept: Vec<_> = c.trace.activities.iter().map(correlation).collect();
        assert_eq!(kept, [2, 2, 4]);
        assert_eq!(c.trace.dropped_api, 0);
        assert_eq!(
            c.trace.api_left_out,
            [
                ("cuCtxGetCurrent".into(), 2),
                ("cuEventDestroy_v2".into(), 1)
            ]
            .into()
        );
        // gpu_trace_all_api_calls: every call and link is kept, within the cap.
        let mut c = collected(10, true);
        c.keep(buffer(), 0);
        assert_eq!(c.trace.activities.len(), 8);
        assert!(c.trace.api_left_out.is_empty());
    }

    #[test]
    fn nvtx_records_count_against_the_api_cap() {
        let marker = |id| Activity::Marker {
            phase: crate::activity::MarkerPhase::Start,
            id,
            timestamp: 1,
            thread_id: 7,
            name: Some("range".into()),
            domain: None,
        };
        let mut c = collected(2, false);
        c.keep(vec![api(1), marker(1), marker(2)], 0);
        assert_eq!(c.trace.activities.len(), 2);
        assert_eq!(c.trace.dropped_api, 1);
    }

    fn correlation(a: &Activity) -> u32 {
        match a {
            Activity::Api { correlation_id, .. }
            | Activity::ExternalCorrelation { correlation_id, .. } => *correlation_id,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn annotation_links_do_not_use_up_the_api_cap() {
        let mut c = collected(2, false);
        c.keep(vec![api(1), link(1), api(2), link(2)], 0);
        c.keep(vec![api(3), link(3)], 5);
        // Both launches within the cap are kept, the third is counted as dropped, and
        // every link is kept.
        assert_eq!(c.trace.dropped_api, 1);
        assert_eq!(c.trace.dropped_by_cupti, 5);
        let links = c
            .trace
            .activities
            .iter()
            .filter(|a| matches!(a, Activity::ExternalCorrelation { .. }))
            .count();
        assert_eq!((c.trace.activities.len(), links), (5, 3));
    }
}
