//! The live CUPTI tracer: what it asks of CUPTI when a session starts and stops, and
//! what it hands the conversion at collection.
//!
//! - API calls come through CUPTI's callback API (`callbacks`): one subscriber, told
//!   of the functions that matter (every function with `gpu_trace_all_api_calls`);
//!   the callback records each call in its thread's log with the annotation open on
//!   the thread, read from the stack the core keeps (`tracer::innermost_scope`). No
//!   CUPTI call is made per annotation.
//! - The device's work comes as activity records (`buffers`): kernels, copies,
//!   memsets, and as asked, memory, NVTX markers and whole-graph launches (`enable`).
//! - PM sampling runs beside them when metrics are asked for (`pm`).
//!
//! cudarc panics on the first use of a symbol whose library is missing, so the tracer
//! checks for libcuda and libcupti before anything else and turns their absence into
//! one warning. The steps that touch CUDA sit behind [`Cupti`], so the order of start
//! and stop, and what a refusal leaves behind, are tested without a GPU.

#![allow(unsafe_code)]

mod buffers;
pub(crate) mod callbacks;
mod enable;
mod pm;

use std::ffi::CStr;

use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as driver;
use profiler_core::tracer::{self, SessionClock, Tracer};
use profiler_core::xspace::XSpace;
use profiler_core::{Error, ErrorKind, ProfileOptions};

use crate::activity::{DeviceInfo, PmSample};
use crate::calls::{self, ApiDomain};
use crate::graphs::{self, GraphNote};
use crate::occupancy::SmLimits;

pub(crate) use pm::PmSettings;

/// Default caps, as JAX's defaults for the same keys.
const DEFAULT_MAX_ACTIVITY: u64 = 2 << 20;
const DEFAULT_MAX_API: u64 = 2 << 20;
const DEFAULT_MAX_ANNOTATIONS: u64 = 1 << 20;
/// `gpu_pm_sample_interval_us` and `gpu_pm_sample_buffer_size_per_gpu_mb` defaults.
const DEFAULT_PM_INTERVAL_US: u64 = 500;
const DEFAULT_PM_BUFFER_MB: u64 = 64;

/// What a session's options ask of the tracer.
#[derive(Clone, Debug)]
pub(crate) struct Settings {
    pub(crate) max_activity: u64,
    pub(crate) max_api: u64,
    pub(crate) max_annotation_strings: u64,
    /// `gpu_enable_nvtx_tracking`.
    pub(crate) nvtx: bool,
    /// `gpu_trace_all_api_calls`.
    pub(crate) all_api_calls: bool,
    /// `gpu_enable_cupti_activity_graph_trace`.
    pub(crate) graph_trace: bool,
    /// `gpu_dump_graph_node_mapping`.
    pub(crate) dump_graph_node_mapping: bool,
    /// `gpu_pm_sample_*`.
    pub(crate) pm: PmSettings,
    /// `gpu_num_chips_to_profile_per_task` (`None`: every device).
    pub(crate) max_devices: Option<u32>,
}

impl Settings {
    /// The settings of `options`, already validated by `ProfileOptions::validate`.
    pub(crate) fn of(options: &ProfileOptions) -> Settings {
        // A cap is >= 0, or -1 for no limit.
        let cap = |key, default| {
            options
                .advanced_int(key)
                .map_or(default, |v| u64::try_from(v).unwrap_or(u64::MAX))
        };
        let metrics = options
            .advanced_str("gpu_pm_sample_counters")
            .map(|list| {
                list.split(',')
                    .map(|m| m.trim().to_owned())
                    .filter(|m| !m.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Settings {
            max_activity: cap("gpu_max_activity_api_events", DEFAULT_MAX_ACTIVITY),
            max_api: cap("gpu_max_callback_api_events", DEFAULT_MAX_API),
            max_annotation_strings: cap("gpu_max_annotation_strings", DEFAULT_MAX_ANNOTATIONS),
            nvtx: options.advanced_bool("gpu_enable_nvtx_tracking") == Some(true),
            all_api_calls: options.advanced_bool("gpu_trace_all_api_calls") == Some(true),
            graph_trace: options.advanced_bool("gpu_enable_cupti_activity_graph_trace")
                == Some(true),
            dump_graph_node_mapping: options.advanced_bool("gpu_dump_graph_node_mapping")
                == Some(true),
            pm: PmSettings {
                metrics,
                interval_us: options
                    .advanced_int("gpu_pm_sample_interval_us")
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or(DEFAULT_PM_INTERVAL_US),
                buffer_mb: options
                    .advanced_int("gpu_pm_sample_buffer_size_per_gpu_mb")
                    .and_then(|v| u64::try_from(v).ok())
                    .unwrap_or(DEFAULT_PM_BUFFER_MB),
            },
            max_devices: options
                .advanced_int("gpu_num_chips_to_profile_per_task")
                .and_then(|v| u32::try_from(v).ok())
                .filter(|&n| n > 0),
        }
    }
}

/// Which activity records to ask CUPTI for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Records {
    /// Kernels, copies, memsets: the GPU trace itself.
    Device,
    /// Device memory allocations and releases.
    Memory,
    /// NVTX ranges and marks.
    Nvtx,
    /// Whole-graph launches.
    GraphTrace,
}

/// The steps of the tracer that touch CUDA and CUPTI.
pub(crate) trait Cupti: Send {
    /// Why the libraries cannot be used, if they cannot.
    fn missing_libraries(&self) -> Option<String>;
    /// Initialises the driver and describes every device.
    fn devices(&mut self) -> Result<Vec<DeviceInfo>, String>;
    /// Points CUPTI's clock, buffers and thread ids at prof's.
    fn prepare(&mut self) -> Result<(), String>;
    /// Subscribes the callback to the API calls to record (every call with `all`).
    fn subscribe(&mut self, all: bool) -> Result<(), String>;
    /// Ends the subscription, if any.
    fn unsubscribe(&mut self);
    /// Turns activity records on; a warning for optional ones that CUPTI refused is
    /// the error's text.
    fn enable(&mut self, records: Records) -> Result<(), String>;
    /// Turns every kind of activity record off.
    fn disable_all(&mut self);
    /// Delivers the records CUPTI still holds.
    fn flush(&mut self) -> Result<(), String>;
    /// CUPTI's name of an API function.
    fn api_name(&self, domain: ApiDomain, cbid: u32) -> String;
    /// Starts PM sampling on `devices`; warnings for what failed.
    fn start_pm(&mut self, settings: &PmSettings, devices: &[u32]) -> Vec<String>;
    /// Stops PM sampling; the samples, and warnings for what went wrong.
    fn stop_pm(&mut self) -> (Vec<PmSample>, Vec<String>);
}

/// Makes the CUPTI tracer for sessions with `device_tracer_level >= 1`.
pub fn factory(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    if options.device_tracer_level == 0 {
        return None;
    }
    Some(Box::new(CuptiTracer::new(
        Settings::of(options),
        Box::new(Live::default()),
    )))
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
    settings: Settings,
    cupti: Box<dyn Cupti>,
    devices: Vec<DeviceInfo>,
    running: bool,
    /// The session's generation of API call logs.
    generation: u64,
    /// Warnings of the start, reported at collection.
    warnings: Vec<String>,
    graph_notes: Vec<GraphNote>,
    pm_samples: Vec<PmSample>,
    /// Hand-offs of issuing threads' annotations dropped because their ring was full.
    hand_offs_dropped: u64,
}

impl CuptiTracer {
    pub(crate) fn new(settings: Settings, cupti: Box<dyn Cupti>) -> CuptiTracer {
        CuptiTracer {
            settings,
            cupti,
            devices: Vec::new(),
            running: false,
            generation: 0,
            warnings: Vec::new(),
            graph_notes: Vec::new(),
            pm_samples: Vec::new(),
            hand_offs_dropped: 0,
        }
    }

    /// Undoes a partial start.
    fn abandon(&mut self, why: String) -> Result<(), Error> {
        self.cupti.unsubscribe();
        self.cupti.disable_all();
        Err(unavailable(why))
    }

    /// Everything [`Tracer::start`] does, its failures said as the warnings the
    /// profile will carry.
    fn try_start(&mut self) -> Result<(), String> {
        if let Some(why) = self.cupti.missing_libraries() {
            return Err(why);
        }
        self.devices = self.cupti.devices()?;
        self.cupti.prepare()?;
        // Nothing is enabled yet: a refusal (another subscriber) leaves nothing behind.
        self.cupti.subscribe(self.settings.all_api_calls)
    }
}

/// A GPU that cannot be traced (libraries missing, CUPTI refusing) is, to the session,
/// a tracer that is not available; the host records on.
fn unavailable(why: String) -> Error {
    Error::new(ErrorKind::Unavailable, why)
}

impl Tracer for CuptiTracer {
    fn start(&mut self) -> Result<(), Error> {
        self.try_start().map_err(unavailable)?;
        buffers::begin(self.settings.max_activity, self.settings.max_api);
        if let Err(why) = self.cupti.enable(Records::Device) {
            return self.abandon(why);
        }
        self.warnings.clear();
        // Optional records: the rest of the trace is whole without them.
        self.warnings
            .extend(self.cupti.enable(Records::Memory).err());
        if self.settings.nvtx {
            self.warnings.extend(self.cupti.enable(Records::Nvtx).err());
        }
        if self.settings.graph_trace {
            self.warnings
                .extend(self.cupti.enable(Records::GraphTrace).err());
        }
        let profiled: Vec<u32> = self
            .devices
            .iter()
            .map(|d| d.ordinal)
            .filter(|&o| self.settings.max_devices.is_none_or(|n| o < n))
            .collect();
        let pm = self.cupti.start_pm(&self.settings.pm, &profiled);
        self.warnings.extend(pm);
        for why in &self.warnings {
            tracing::warn!(target: profiler_core::log::TARGET, "{why}");
        }
        self.generation = calls::begin_session(self.settings.max_api);
        graphs::begin_session();
        tracer::keep_scope_stack(true);
        // Kernels issued on one thread and launched on another (cubecl) carry the
        // issuing thread's annotation.
        tracer::accept_hand_offs(true);
        self.running = true;
        Ok(())
    }

    fn stop(&mut self) -> Result<(), Error> {
        if !self.running {
            return Ok(());
        }
        tracer::keep_scope_stack(false);
        self.hand_offs_dropped = tracer::hand_offs_dropped();
        tracer::accept_hand_offs(false);
        calls::end_session();
        self.graph_notes = graphs::end_session();
        self.cupti.unsubscribe();
        let (samples, warnings) = self.cupti.stop_pm();
        self.pm_samples = samples;
        self.warnings.extend(warnings);
        self.cupti.disable_all();
        self.running = false;
        // What CUPTI delivered is kept; the profile says it may lack the rest.
        self.cupti
            .flush()
            .map_err(|why| Error::new(ErrorKind::Internal, why))
    }

    fn collect(&mut self, space: &mut XSpace, session: &SessionClock) {
        let mut trace = buffers::take().map(|c| c.trace).unwrap_or_default();
        let threads = calls::collect(self.generation);
        trace.dropped_api += threads.iter().map(|t| t.dropped).sum::<u64>();
        let cupti = &self.cupti;
        let (api, graph_launches) = calls::into_activities(
            threads,
            |d, cbid| cupti.api_name(d, cbid),
            |ticks| session.ticks_to_clock_ns(ticks),
        );
        trace.activities.extend(api);
        trace.graph_launches = graph_launches;
        trace.graph_notes = std::mem::take(&mut self.graph_notes);
        trace.devices = std::mem::take(&mut self.devices);
        trace.max_annotation_strings = Some(self.settings.max_annotation_strings);
        trace.all_api_calls = self.settings.all_api_calls;
        trace.dump_graph_node_mapping = self.settings.dump_graph_node_mapping;
        trace.max_devices = self.settings.max_devices;
        trace.pm_metrics = self.settings.pm.metrics.clone();
        trace.pm_samples = std::mem::take(&mut self.pm_samples);
        space.warnings.append(&mut self.warnings);
        if self.hand_offs_dropped > 0 {
            space.warnings.push(format!(
                "prof: {} kernels issued on one thread and launched on another (cubecl's device thread) found the hand-off ring full ({} waiting): the launches after them may carry the annotations of their neighbours",
                self.hand_offs_dropped,
                tracer::HAND_OFF_CAPACITY
            ));
        }
        crate::convert::add_to_space(&trace, space, &|ns| session.to_session_ns(ns));
    }
}

/// The real thing.
#[derive(Default)]
struct Live {
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

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// What the tracer asked of a fake CUPTI.
    #[derive(Default)]
    struct Fake {
        log: Arc<Mutex<Vec<String>>>,
        refuse_subscribe: Option<String>,
        refuse: Vec<Records>,
    }

    impl Fake {
        fn say(&self, what: impl Into<String>) {
            self.log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(what.into());
        }
    }

    impl Cupti for Fake {
        fn missing_libraries(&self) -> Option<String> {
            None
        }
        fn devices(&mut self) -> Result<Vec<DeviceInfo>, String> {
            self.say("devices");
            Ok(vec![DeviceInfo::default()])
        }
        fn prepare(&mut self) -> Result<(), String> {
            self.say("prepare");
            Ok(())
        }
        fn subscribe(&mut self, all: bool) -> Result<(), String> {
            self.say(format!("subscribe all={all}"));
            match &self.refuse_subscribe {
                Some(why) => Err(why.clone()),
                None => Ok(()),
            }
        }
        fn unsubscribe(&mut self) {
            self.say("unsubscribe");
        }
        fn enable(&mut self, records: Records) -> Result<(), String> {
            self.say(format!("enable {records:?}"));
            if self.refuse.contains(&records) {
                return Err(format!("refused {records:?}"));
            }
            Ok(())
        }
        fn disable_all(&mut self) {
            self.say("disable_all");
        }
        fn flush(&mut self) -> Result<(), String> {
            self.say("flush");
            Ok(())
        }
        fn api_name(&self, _: ApiDomain, cbid: u32) -> String {
            format!("api{cbid}")
        }
        fn start_pm(&mut self, settings: &PmSettings, devices: &[u32]) -> Vec<String> {
            self.say(format!(
                "start_pm {} on {devices:?}",
                settings.metrics.len()
            ));
            Vec::new()
        }
        fn stop_pm(&mut self) -> (Vec<PmSample>, Vec<String>) {
            self.say("stop_pm");
            (Vec::new(), Vec::new())
        }
    }

    fn tracer(fake: Fake, options: ProfileOptions) -> (CuptiTracer, Arc<Mutex<Vec<String>>>) {
        let log = fake.log.clone();
        (
            CuptiTracer::new(Settings::of(&options), Box::new(fake)),
            log,
        )
    }

    fn said(log: &Arc<Mutex<Vec<String>>>) -> Vec<String> {
        log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    #[test]
    fn a_cupti_held_by_another_profiler_fails_the_tracer_not_the_session() {
        let _one = calls::tests::SESSION
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let why = callbacks::subscribe_failure(
            cupti::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
        );
        let fake = Fake {
            refuse_subscribe: Some(why.clone()),
            ..Fake::default()
        };
        let (mut tracer, log) = tracer(fake, ProfileOptions::default());
        // The error is the one warning the session's profile gets (the core turns a
        // tracer's start error into it and goes on recording the host).
        let e = tracer.start().expect_err("subscribing was refused");
        assert_eq!((e.kind(), e.to_string()), (ErrorKind::Unavailable, why));
        // Nothing was turned on, so nothing is left on; no scope hook was installed.
        assert_eq!(said(&log), ["devices", "prepare", "subscribe all=false"]);
        assert!(!tracer.running);
        tracer.stop().expect("nothing to stop");
    }

    /// A factory whose tracer meets a CUPTI another profiler holds.
    fn taken(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
        if options.device_tracer_level == 0 {
            return None;
        }
        let fake = Fake {
            refuse_subscribe: Some(callbacks::subscribe_failure(
                cupti::CUptiResult::CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
            )),
            ..Fake::default()
        };
        Some(Box::new(CuptiTracer::new(
            Settings::of(options),
            Box::new(fake),
        )))
    }

    #[test]
    fn the_session_records_the_host_and_says_why_the_gpu_was_not_traced() {
        let _one = calls::tests::SESSION
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // The only test of this binary that starts sessions: the factory stays.
        profiler_core::tracer::register(taken);
        profiler_core::session::start(ProfileOptions::default(), None).expect("start");
        drop(profiler_core::trace!("step"));
        let profile = profiler_core::session::stop().expect("stop");
        assert_eq!(profile.event_count(), 1);
        let taken: Vec<_> = profile
            .warnings()
            .iter()
            .filter(|w| w.contains("already has a subscriber"))
            .collect();
        assert_eq!(taken.len(), 1, "{:?}", profile.warnings());
    }

    #[test]
    fn a_refused_device_kind_unsubscribes_and_disables_everything() {
        let _one = calls::tests::SESSION
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let fake = Fake {
            refuse: vec![Records::Device],
            ..Fake::default()
        };
        let (mut tracer, log) = tracer(fake, ProfileOptions::default());
        let e = tracer.start().expect_err("Device records refused");
        assert_eq!(e.to_string(), "refused Device");
        assert_eq!(
            said(&log)[3..],
            ["enable Device", "unsubscribe", "disable_all"]
        );
    }

    #[test]
    fn a_session_asks_for_what_its_options_name_and_stops_in_order() {
        let _one = calls::tests::SESSION
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let fake = Fake {
            refuse: vec![Records::Memory],
            ..Fake::default()
        };
        let options = ProfileOptions::default()
            .advanced("gpu_trace_all_api_calls", true)
            .advanced("gpu_enable_nvtx_tracking", true)
            .advanced("gpu_enable_cupti_activity_graph_trace", true)
            .advanced("gpu_pm_sample_counters", "a.b,c")
            .advanced("gpu_num_chips_to_profile_per_task", 1);
        let (mut tracer, log) = tracer(fake, options);
        tracer.start().expect("start");
        assert_eq!(
            said(&log),
            [
                "devices",
                "prepare",
                "subscribe all=true",
                "enable Device",
                "enable Memory",
                "enable Nvtx",
                "enable GraphTrace",
                "start_pm 2 on [0]",
            ]
        );
        // The refused optional kind is a warning, not a failure.
        assert_eq!(tracer.warnings, ["refused Memory"]);
        tracer.stop().expect("stop");
        assert_eq!(
            said(&log)[8..],
            ["unsubscribe", "stop_pm", "disable_all", "flush"]
        );
    }
}
