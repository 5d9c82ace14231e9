//! The tracer's steps done for real, against libcuda and libcupti ([`Live`]), and the
//! device descriptions and clock it gives CUPTI.

use std::ffi::CStr;

use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as driver;
use profiler_core::tracer;

use super::pm::{self, PmSettings};
use super::steps::{Cupti, Records};
use super::{buffers, callbacks, enable};
use crate::activity::{DeviceInfo, PmSample};
use crate::calls::ApiDomain;
use crate::occupancy::SmLimits;

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

/// The real thing.
#[derive(Default)]
pub(super) struct Live {
    subscription: Option<callbacks::Subscription>,
    pm: Option<pm::PmSampler>,
}

impl Cupti for Live {
    fn missing_libraries(&self) -> Option<String> {
        missing_libraries()
    }

    fn devices(&mut self) -> Result<Vec<DeviceInfo>, String> {
        devices().map_err(|e| {
            format!("prof: no GPU trace: CUDA driver initialisation (cuInit) failed ({e:?}); host tracing goes on")
        })
    }

    fn prepare(&mut self) -> Result<(), String> {
        let fail = |what: &str, e: &dyn std::fmt::Debug| {
            format!("prof: no GPU trace: {what} failed ({e:?}); host tracing goes on")
        };
        // SAFETY: the callbacks are `extern "C"` functions with the signatures CUPTI
        // declares, living for the whole process.
        unsafe {
            cupti::cuptiActivityRegisterTimestampCallback(Some(timestamp))
                .result()
                .map_err(|e| fail("cuptiActivityRegisterTimestampCallback", &e))?;
            cupti::cuptiActivityRegisterCallbacks(
                Some(buffers::buffer_requested),
                Some(buffers::buffer_completed),
            )
            .result()
            .map_err(|e| fail("cuptiActivityRegisterCallbacks", &e))?;
            // NVTX markers then name threads by their OS id, as the launch callback
            // does, so a launch finds the ranges open on its thread.
            let _ = cupti::cuptiSetThreadIdType(
                cupti::CUpti_ActivityThreadIdType::CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM,
            );
        }
        Ok(())
    }

    fn subscribe(&mut self, all: bool) -> Result<(), String> {
        self.subscription = Some(callbacks::subscribe(all)?);
        Ok(())
    }

    fn unsubscribe(&mut self) {
        self.subscription = None;
    }

    fn enable(&mut self, records: Records) -> Result<(), String> {
        let enable = |kind: cupti::CUpti_ActivityKind| {
            // SAFETY: plain call into a loaded library.
            unsafe { cupti::cuptiActivityEnable(kind) }
                .result()
                .map_err(|e| e.0)
        };
        match records {
            Records::Device => {
                for kind in enable::RECORD_KINDS {
                    if let Err(e) = enable(kind) {
                        let hint = if e == cupti::CUptiResult::CUPTI_ERROR_INSUFFICIENT_PRIVILEGES {
                            " (profiling needs permission: run as root or set the nvidia module option NVreg_RestrictProfilingToAdminUsers=0)"
                        } else {
                            ""
                        };
                        return Err(format!(
                            "prof: no GPU trace: cuptiActivityEnable({kind:?}){hint} failed ({e:?}); host tracing goes on"
                        ));
                    }
                }
                Ok(())
            }
            Records::Memory => {
                let _ = enable(enable::MEMORY_POOL_KIND);
                enable(enable::MEMORY_KIND)
            }
            .map_err(|e| {
                format!("prof: no device memory records: cuptiActivityEnable({:?}) failed ({e:?}); the rest of the GPU trace goes on", enable::MEMORY_KIND)
            }),
            Records::Nvtx => enable::enable_nvtx().map_or(Ok(()), Err),
            Records::GraphTrace => enable(enable::GRAPH_TRACE_KIND).map_err(|e| {
                format!("prof: gpu_enable_cupti_activity_graph_trace: cuptiActivityEnable({:?}) failed ({e:?}); graphs are traced node by node", enable::GRAPH_TRACE_KIND)
            }),
        }
    }

    fn disable_all(&mut self) {
        enable::disable_all();
    }

    fn flush(&mut self) -> Result<(), String> {
        // SAFETY: plain call; 1 = CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, so buffers still in
        // use are delivered too.
        unsafe { cupti::cuptiActivityFlushAll(1) }
            .result()
            .map_err(|e| {
                format!(
                    "prof: the GPU trace may be incomplete: cuptiActivityFlushAll failed ({e:?})"
                )
            })
    }

    fn deliver(&mut self) -> Result<(), String> {
        // SAFETY: plain call; 0 = no flag: only buffers whose records are all complete
        // are delivered, partly filled ones included, so tracing goes on undisturbed.
        unsafe { cupti::cuptiActivityFlushAll(0) }
            .result()
            .map_err(|e| format!("prof: cuptiActivityFlushAll(0) failed ({e:?})"))
    }

    fn api_name(&self, domain: ApiDomain, cbid: u32) -> String {
        callbacks::callback_name(callbacks::cupti_domain(domain), cbid)
            .unwrap_or_else(|| format!("CUDA API {cbid}"))
    }

    fn start_pm(&mut self, settings: &PmSettings, devices: &[u32]) -> Vec<String> {
        let (sampler, warnings) = pm::start(settings, devices);
        self.pm = sampler;
        warnings
    }

    fn stop_pm(&mut self) -> (Vec<PmSample>, Vec<String>) {
        self.pm.take().map(pm::PmSampler::stop).unwrap_or_default()
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
