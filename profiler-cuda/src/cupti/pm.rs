//! PM sampling (`gpu_pm_sample_counters`): CUPTI's performance-monitor metrics, sampled
//! by the GPU at a fixed interval while the session runs (CUPTI >= 12.6), as NVIDIA's
//! `pm_sampling` sample drives it.
//!
//! Per profiled GPU: the chip's name and counter availability, a host object that turns
//! the metric names into a configuration image (metrics CUPTI refuses are found one by
//! one and named; a configuration needing more than one pass is refused, since sampling
//! takes one), then sampling is enabled, configured (interval, hardware buffer) and
//! started. A thread decodes the hardware buffer every 100 ms into a counter-data image,
//! evaluates each completed sample into metric values and resets the image, so a long
//! session does not overflow the buffer; the last decode runs at stop. Every failure is
//! one warning and the rest of the trace goes on.
//!
//! Two lifetimes matter. CUPTI keeps the pointer to the configuration image given to
//! `cuptiPmSamplingSetConfig` and reads it while sampling runs, so the image lives in the
//! `Device` until sampling is disabled (freeing it early hangs or crashes the decoder, as
//! Kineto's integration found). The host object evaluates samples, so it is released last.

#![allow(unsafe_code)]

use std::ffi::{c_char, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as driver;
use profiler_core::tracer;

use crate::activity::PmSample;

/// Samples a counter-data image holds before it is evaluated and reset.
const MAX_SAMPLES: u32 = 4096;
/// How often the hardware buffer is decoded.
const DECODE_EVERY: Duration = Duration::from_millis(100);

/// The size CUPTI expects in `structSize`: the struct up to and including `$field`, as
/// CUPTI's own `CUPTI_PROFILER_STRUCT_SIZE` macros measure it, so a build against newer
/// headers (whose structs grew) still speaks to an older libcupti.
macro_rules! struct_size {
    ($ty:ty, $field:ident) => {{
        let probe = std::mem::MaybeUninit::<$ty>::uninit();
        let base = probe.as_ptr();
        // SAFETY: only the field's address is taken, never read.
        let field = unsafe { std::ptr::addr_of!((*base).$field) };
        std::mem::offset_of!($ty, $field) + size_of_pointee(field)
    }};
}

fn size_of_pointee<T>(_: *const T) -> usize {
    std::mem::size_of::<T>()
}

/// A zeroed params struct with its size set.
macro_rules! params {
    ($ty:ty, $last:ident) => {{
        // SAFETY: CUPTI's params structs are plain C structs of integers and pointers,
        // for which all zeroes is valid (null pointers, zero sizes).
        let mut p: $ty = unsafe { std::mem::zeroed() };
        p.structSize = struct_size!($ty, $last);
        p
    }};
}

fn check(what: &str, r: cupti::CUptiResult) -> Result<(), String> {
    r.result().map_err(|e| format!("{what} failed ({:?})", e.0))
}

/// The settings of `gpu_pm_sample_*`.
#[derive(Clone, Debug)]
pub(crate) struct PmSettings {
    pub(crate) metrics: Vec<String>,
    pub(crate) interval_us: u64,
    pub(crate) buffer_mb: u64,
}

struct Device {
    ordinal: u32,
    object: *mut cupti::CUpti_PmSampling_Object,
    host: *mut cupti::CUpti_Profiler_Host_Object,
    /// The configuration image given to `cuptiPmSamplingSetConfig`: CUPTI reads it
    /// through the pointer it was given until sampling is disabled, so it must not move
    /// or be freed before then.
    _config: Vec<u8>,
    /// The metrics this device samples (those it accepted), as C strings and their
    /// indices in the session's list.
    metrics: Metrics,
    counter_data: Vec<u8>,
    /// `counter_data` as `cuptiPmSamplingCounterDataImageInitialize` left it: copied
    /// back after each decode, which is cheaper than initializing it again.
    blank: Vec<u8>,
    /// What decoding saw, for the warning when no sample came out.
    seen: Seen,
}

/// What decoding one device's samples saw.
#[derive(Debug, Default)]
struct Seen {
    decodes: u64,
    samples: u64,
    /// The first call that failed, and how.
    first_error: Option<String>,
    /// The last decode's stop reason, and whether the hardware buffer overflowed.
    last_stop: Option<String>,
    overflowed: bool,
}

impl Seen {
    fn failed(&mut self, what: &str, r: cupti::CUptiResult) -> bool {
        match r.result() {
            Ok(()) => false,
            Err(e) => {
                self.first_error
                    .get_or_insert_with(|| format!("{what} failed ({:?})", e.0));
                true
            }
        }
    }
}

// SAFETY: the objects are CUPTI handles usable from any thread; one thread at a time
// uses a `Device` (behind the sampler's mutex).
unsafe impl Send for Device {}

/// A running PM sampler.
pub(super) struct PmSampler {
    devices: Arc<Mutex<Vec<Device>>>,
    samples: Arc<Mutex<Vec<PmSample>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    /// prof's clock when sampling started, to place the samples if their timestamps
    /// are on the GPU's own clock.
    started_at: u64,
}

/// Starts sampling `settings.metrics` on each of `devices`; returns the sampler (if any
/// device samples) and a warning per thing that failed.
pub(super) fn start(settings: &PmSettings, devices: &[u32]) -> (Option<PmSampler>, Vec<String>) {
    let mut warnings = Vec::new();
    if settings.metrics.is_empty() {
        return (None, warnings);
    }
    let mut init = params!(cupti::CUpti_Profiler_Initialize_Params, pPriv);
    // SAFETY: a params struct of the right size.
    if let Err(e) = check("cuptiProfilerInitialize", unsafe {
        cupti::cuptiProfilerInitialize(&mut init)
    }) {
        warnings.push(format!("prof: gpu_pm_sample_counters: no PM samples: {e} (PM sampling needs CUPTI 12.6 or later and a GPU of compute capability 7.5 or later); the rest of the GPU trace goes on"));
        return (None, warnings);
    }
    let mut sampling = Vec::new();
    for &ordinal in devices {
        match start_device(settings, ordinal, &mut warnings) {
            Ok(Some(device)) => sampling.push(device),
            Ok(None) => {}
            Err(e) => warnings.push(format!(
                "prof: gpu_pm_sample_counters: no PM samples on GPU {ordinal}: {e}; the rest of the GPU trace goes on"
            )),
        }
    }
    if sampling.is_empty() {
        return (None, warnings);
    }
    let devices = Arc::new(Mutex::new(sampling));
    let samples = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let thread = {
        let (devices, samples, stop) = (devices.clone(), samples.clone(), stop.clone());
        std::thread::Builder::new()
            .name("prof-pm-sampling".into())
            .spawn(move || {
                while !stop.load(Ordering::Acquire) {
                    std::thread::sleep(DECODE_EVERY);
                    decode_all(&devices, &samples);
                }
            })
            .ok()
    };
    let sampler = PmSampler {
        devices,
        samples,
        stop,
        thread,
        started_at: tracer::clock_ns(),
    };
    (Some(sampler), warnings)
}

/// Metrics by their index in the session's list.
type Metrics = Vec<(usize, CString)>;

/// The metrics of `names` the chip accepts, each tried alone: (accepted, refused).
fn split_metrics(
    chip: &CStr,
    availability: &[u8],
    names: &[String],
) -> Result<(Metrics, Vec<String>), String> {
    let mut accepted = Vec::new();
    let mut refused = Vec::new();
    for (index, name) in names.iter().enumerate() {
        let Ok(c) = CString::new(name.as_str()) else {
            refused.push(name.clone());
            continue;
        };
        let host = host_object(chip, availability)?;
        let ok = add_metrics(host, &mut [c.as_ptr()]).is_ok();
        drop_host(host);
        if ok {
            accepted.push((index, c));
        } else {
            refused.push(name.clone());
        }
    }
    Ok((accepted, refused))
}

/// Adds `names` (valid C strings) to the configuration of `host`, a live host object.
fn add_metrics(
    host: *mut cupti::CUpti_Profiler_Host_Object,
    names: &mut [*const c_char],
) -> Result<(), String> {
    let mut add = params!(
        cupti::CUpti_Profiler_Host_ConfigAddMetrics_Params,
        numMetrics
    );
    add.pHostObject = host;
    add.ppMetricNames = names.as_mut_ptr();
    add.numMetrics = names.len();
    // SAFETY: a live host object and valid C strings, as the caller promises.
    check("cuptiProfilerHostConfigAddMetrics", unsafe {
        cupti::cuptiProfilerHostConfigAddMetrics(&mut add)
    })
}

fn host_object(
    chip: &CStr,
    availability: &[u8],
) -> Result<*mut cupti::CUpti_Profiler_Host_Object, String> {
    let mut p = params!(cupti::CUpti_Profiler_Host_Initialize_Params, pHostObject);
    p.profilerType = cupti::CUpti_ProfilerType::CUPTI_PROFILER_TYPE_PM_SAMPLING;
    p.pChipName = chip.as_ptr();
    p.pCounterAvailabilityImage = availability.as_ptr();
    // SAFETY: a params struct of the right size; the chip name and image outlive the call.
    check("cuptiProfilerHostInitialize", unsafe {
        cupti::cuptiProfilerHostInitialize(&mut p)
    })?;
    Ok(p.pHostObject)
}

fn drop_host(host: *mut cupti::CUpti_Profiler_Host_Object) {
    let mut p = params!(cupti::CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
    p.pHostObject = host;
    // SAFETY: a host object made by `host_object`, released once.
    let _ = unsafe { cupti::cuptiProfilerHostDeinitialize(&mut p) };
}

fn start_device(
    settings: &PmSettings,
    ordinal: u32,
    warnings: &mut Vec<String>,
) -> Result<Option<Device>, String> {
    let mut chip = params!(cupti::CUpti_Device_GetChipName_Params, pChipName);
    chip.deviceIndex = ordinal as usize;
    // SAFETY: a params struct of the right size.
    check("cuptiDeviceGetChipName", unsafe {
        cupti::cuptiDeviceGetChipName(&mut chip)
    })?;
    // SAFETY: CUPTI's chip name is a static C string.
    let chip_name = unsafe { CStr::from_ptr(chip.pChipName) }.to_owned();

    let mut avail = params!(
        cupti::CUpti_PmSampling_GetCounterAvailability_Params,
        pCounterAvailabilityImage
    );
    avail.deviceIndex = ordinal as usize;
    // SAFETY: first call: the size only (null image).
    check("cuptiPmSamplingGetCounterAvailability", unsafe {
        cupti::cuptiPmSamplingGetCounterAvailability(&mut avail)
    })?;
    let mut availability = vec![0u8; avail.counterAvailabilityImageSize];
    avail.pCounterAvailabilityImage = availability.as_mut_ptr();
    // SAFETY: second call: an image of the size CUPTI asked for.
    check("cuptiPmSamplingGetCounterAvailability", unsafe {
        cupti::cuptiPmSamplingGetCounterAvailability(&mut avail)
    })?;

    let (metrics, refused) = split_metrics(&chip_name, &availability, &settings.metrics)?;
    for name in refused {
        warnings.push(format!(
            "prof: gpu_pm_sample_counters: GPU {ordinal} ({}) has no metric {name:?}; the other metrics are sampled",
            chip_name.to_string_lossy()
        ));
    }
    if metrics.is_empty() {
        return Ok(None);
    }
    let host = host_object(&chip_name, &availability)?;
    let mut names: Vec<*const c_char> = metrics.iter().map(|(_, c)| c.as_ptr()).collect();
    let configured = configure(host, &mut names, settings, ordinal);
    match configured {
        Ok(Some(Configured {
            object,
            config,
            counter_data,
        })) => Ok(Some(Device {
            ordinal,
            object,
            host,
            _config: config,
            metrics,
            blank: counter_data.clone(),
            counter_data,
            seen: Seen::default(),
        })),
        Ok(None) => {
            drop_host(host);
            warnings.push(format!(
                "prof: gpu_pm_sample_counters: the metrics asked of GPU {ordinal} need more than one pass, and PM sampling takes one: ask for fewer; no PM samples on this GPU"
            ));
            Ok(None)
        }
        Err(e) => {
            drop_host(host);
            Err(e)
        }
    }
}

/// A device whose sampling has started.
struct Configured {
    object: *mut cupti::CUpti_PmSampling_Object,
    /// The configuration image CUPTI keeps a pointer to.
    config: Vec<u8>,
    /// The initialized counter-data image.
    counter_data: Vec<u8>,
}

/// Builds the configuration image, enables and starts sampling; `None` when the
/// metrics need more than one pass.
fn configure(
    host: *mut cupti::CUpti_Profiler_Host_Object,
    names: &mut [*const c_char],
    settings: &PmSettings,
    ordinal: u32,
) -> Result<Option<Configured>, String> {
    add_metrics(host, names)?;
    let mut size = params!(
        cupti::CUpti_Profiler_Host_GetConfigImageSize_Params,
        configImageSize
    );
    size.pHostObject = host;
    // SAFETY: as above.
    check("cuptiProfilerHostGetConfigImageSize", unsafe {
        cupti::cuptiProfilerHostGetConfigImageSize(&mut size)
    })?;
    let mut config = vec![0u8; size.configImageSize];
    let mut image = params!(
        cupti::CUpti_Profiler_Host_GetConfigImage_Params,
        pConfigImage
    );
    image.pHostObject = host;
    image.configImageSize = config.len();
    image.pConfigImage = config.as_mut_ptr();
    // SAFETY: a buffer of the size CUPTI asked for.
    check("cuptiProfilerHostGetConfigImage", unsafe {
        cupti::cuptiProfilerHostGetConfigImage(&mut image)
    })?;
    let mut passes = params!(
        cupti::CUpti_Profiler_Host_GetNumOfPasses_Params,
        numOfPasses
    );
    passes.configImageSize = config.len();
    passes.pConfigImage = config.as_mut_ptr();
    // SAFETY: the image just made.
    check("cuptiProfilerHostGetNumOfPasses", unsafe {
        cupti::cuptiProfilerHostGetNumOfPasses(&mut passes)
    })?;
    if passes.numOfPasses > 1 {
        return Ok(None);
    }
    supported(ordinal)?;
    let mut enable = params!(cupti::CUpti_PmSampling_Enable_Params, pPmSamplingObject);
    enable.deviceIndex = ordinal as usize;
    // SAFETY: a params struct of the right size.
    check("cuptiPmSamplingEnable", unsafe {
        cupti::cuptiPmSamplingEnable(&mut enable)
    })?;
    let object = enable.pPmSamplingObject;
    match start_sampling(object, &config, names, settings) {
        Ok(counter_data) => Ok(Some(Configured {
            object,
            config,
            counter_data,
        })),
        Err(e) => {
            disable(object);
            Err(e)
        }
    }
}

/// Configures and starts the enabled sampling `object` with `config`; returns its
/// initialized counter-data image.
fn start_sampling(
    object: *mut cupti::CUpti_PmSampling_Object,
    config: &[u8],
    names: &mut [*const c_char],
    settings: &PmSettings,
) -> Result<Vec<u8>, String> {
    let mut set = params!(cupti::CUpti_PmSampling_SetConfig_Params, triggerMode);
    set.pPmSamplingObject = object;
    set.configSize = config.len();
    set.pConfig = config.as_ptr();
    set.hardwareBufferSize = (settings.buffer_mb as usize) << 20;
    set.samplingInterval = settings.interval_us.saturating_mul(1000);
    set.triggerMode =
        cupti::CUpti_PmSampling_TriggerMode::CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL;
    // SAFETY: a live sampling object and the image, which the caller keeps alive while
    // sampling runs.
    check("cuptiPmSamplingSetConfig", unsafe {
        cupti::cuptiPmSamplingSetConfig(&mut set)
    })?;
    let mut data_size = params!(
        cupti::CUpti_PmSampling_GetCounterDataSize_Params,
        counterDataSize
    );
    data_size.pPmSamplingObject = object;
    data_size.pMetricNames = names.as_mut_ptr();
    data_size.numMetrics = names.len();
    data_size.maxSamples = MAX_SAMPLES;
    // SAFETY: as above.
    check("cuptiPmSamplingGetCounterDataSize", unsafe {
        cupti::cuptiPmSamplingGetCounterDataSize(&mut data_size)
    })?;
    let mut counter_data = vec![0u8; data_size.counterDataSize];
    init_counter_data(object, &mut counter_data)?;
    let mut start = params!(cupti::CUpti_PmSampling_Start_Params, pPmSamplingObject);
    start.pPmSamplingObject = object;
    // SAFETY: a configured sampling object.
    check("cuptiPmSamplingStart", unsafe {
        cupti::cuptiPmSamplingStart(&mut start)
    })?;
    Ok(counter_data)
}

/// Disables the sampling `object` (made by `cuptiPmSamplingEnable`), once.
fn disable(object: *mut cupti::CUpti_PmSampling_Object) {
    let mut p = params!(cupti::CUpti_PmSampling_Disable_Params, pPmSamplingObject);
    p.pPmSamplingObject = object;
    // SAFETY: an enabled sampling object, disabled once (the caller's promise).
    let _ = unsafe { cupti::cuptiPmSamplingDisable(&mut p) };
}

/// Asks CUPTI whether PM sampling can run on the GPU `ordinal`, and names what stops it
/// when it cannot (a virtual GPU, confidential computing, WSL, ...). A CUPTI that cannot
/// answer lets sampling be tried.
fn supported(ordinal: u32) -> Result<(), String> {
    let mut device = 0;
    // SAFETY: a plain query with a valid out-pointer; the driver is initialized.
    if unsafe { driver::cuDeviceGet(&mut device, ordinal as i32) }
        .result()
        .is_err()
    {
        return Ok(());
    }
    let mut p = params!(cupti::CUpti_Profiler_DeviceSupported_Params, api);
    p.cuDevice = device;
    p.api = cupti::CUpti_Profiler_API::CUPTI_PROFILER_PM_SAMPLING;
    // SAFETY: a params struct of the right size.
    if unsafe { cupti::cuptiProfilerDeviceSupported(&mut p) }
        .result()
        .is_err()
    {
        return Ok(());
    }
    // Each level read as the integer CUPTI wrote: newer CUPTIs have levels this
    // build's enum lacks.
    // SAFETY: 4-byte C enums of a struct CUPTI filled, read as their integers.
    let level =
        |field: *const cupti::CUpti_Profiler_Support_Level| unsafe { field.cast::<u32>().read() };
    let overall = level(std::ptr::addr_of!(p.isSupported));
    let parts = [
        (
            level(std::ptr::addr_of!(p.architecture)),
            "the GPU's architecture",
        ),
        (level(std::ptr::addr_of!(p.sli)), "SLI"),
        (level(std::ptr::addr_of!(p.vGpu)), "a virtual GPU (vGPU)"),
        (
            level(std::ptr::addr_of!(p.confidentialCompute)),
            "confidential computing",
        ),
        (level(std::ptr::addr_of!(p.cmp)), "a CMP (mining) GPU"),
        (level(std::ptr::addr_of!(p.wsl)), "WSL"),
    ];
    unsupported(overall, &parts).map_or(Ok(()), Err)
}

/// What stops PM sampling, from CUPTI's support levels (0 unknown, 1 unsupported, 2
/// disabled, 3 supported, 4 limited): `None` unless the overall level is a definite no
/// (an unknown one is tried).
fn unsupported(overall: u32, parts: &[(u32, &str)]) -> Option<String> {
    if overall != 1 && overall != 2 {
        return None;
    }
    let why: Vec<&str> = parts
        .iter()
        .filter(|(level, _)| *level == 1 || *level == 2)
        .map(|(_, what)| *what)
        .collect();
    Some(format!(
        "CUPTI says PM sampling is not supported here ({})",
        if why.is_empty() {
            format!("support level {overall}")
        } else {
            format!("not with {}", why.join(", "))
        }
    ))
}

fn init_counter_data(
    object: *mut cupti::CUpti_PmSampling_Object,
    data: &mut [u8],
) -> Result<(), String> {
    let mut p = params!(
        cupti::CUpti_PmSampling_CounterDataImage_Initialize_Params,
        pCounterData
    );
    p.pPmSamplingObject = object;
    p.counterDataSize = data.len();
    p.pCounterData = data.as_mut_ptr();
    // SAFETY: an image of the size CUPTI asked for.
    check("cuptiPmSamplingCounterDataImageInitialize", unsafe {
        cupti::cuptiPmSamplingCounterDataImageInitialize(&mut p)
    })
}

fn decode_all(devices: &Mutex<Vec<Device>>, samples: &Mutex<Vec<PmSample>>) {
    let mut devices = devices.lock().unwrap_or_else(|e| e.into_inner());
    let mut got = Vec::new();
    for device in devices.iter_mut() {
        decode(device, &mut got);
    }
    samples
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(got);
}

/// Moves what the hardware buffer holds into the counter-data image, evaluates its
/// completed samples, and resets the image for the next decode.
fn decode(device: &mut Device, out: &mut Vec<PmSample>) {
    let mut p = params!(cupti::CUpti_PmSampling_DecodeData_Params, overflow);
    p.pPmSamplingObject = device.object;
    p.pCounterDataImage = device.counter_data.as_mut_ptr();
    p.counterDataImageSize = device.counter_data.len();
    device.seen.decodes += 1;
    // SAFETY: a running sampling object and its image.
    let decoded = unsafe { cupti::cuptiPmSamplingDecodeData(&mut p) };
    if device.seen.failed("cuptiPmSamplingDecodeData", decoded) {
        return;
    }
    // Read as the integer CUPTI wrote: a value this build's enum does not know would
    // be undefined behaviour as the enum.
    // SAFETY: the field is a 4-byte C enum, read as its integer.
    let reason = unsafe { std::ptr::addr_of!(p.decodeStopReason).cast::<u32>().read() };
    device.seen.last_stop = Some(reason.to_string());
    device.seen.overflowed |= p.overflow != 0;
    let mut info = params!(
        cupti::CUpti_PmSampling_GetCounterDataInfo_Params,
        numCompletedSamples
    );
    info.pCounterDataImage = device.counter_data.as_ptr();
    info.counterDataImageSize = device.counter_data.len();
    // SAFETY: as above.
    let counted = unsafe { cupti::cuptiPmSamplingGetCounterDataInfo(&mut info) };
    if device
        .seen
        .failed("cuptiPmSamplingGetCounterDataInfo", counted)
    {
        return;
    }
    let mut names: Vec<*const c_char> = device.metrics.iter().map(|(_, c)| c.as_ptr()).collect();
    let mut values = vec![0f64; names.len()];
    for index in 0..info.numCompletedSamples {
        let mut sample = params!(
            cupti::CUpti_PmSampling_CounterData_GetSampleInfo_Params,
            endTimestamp
        );
        sample.pPmSamplingObject = device.object;
        sample.pCounterDataImage = device.counter_data.as_ptr();
        sample.counterDataImageSize = device.counter_data.len();
        sample.sampleIndex = index;
        // SAFETY: a completed sample of the image.
        let described = unsafe { cupti::cuptiPmSamplingCounterDataGetSampleInfo(&mut sample) };
        if device
            .seen
            .failed("cuptiPmSamplingCounterDataGetSampleInfo", described)
        {
            continue;
        }
        let mut eval = params!(
            cupti::CUpti_Profiler_Host_EvaluateToGpuValues_Params,
            pMetricValues
        );
        eval.pHostObject = device.host;
        eval.pCounterDataImage = device.counter_data.as_ptr();
        eval.counterDataImageSize = device.counter_data.len();
        eval.rangeIndex = index;
        eval.ppMetricNames = names.as_mut_ptr();
        eval.numMetrics = names.len();
        eval.pMetricValues = values.as_mut_ptr();
        // SAFETY: the host object that configured this sampler, and room for a value
        // per metric.
        let evaluated = unsafe { cupti::cuptiProfilerHostEvaluateToGpuValues(&mut eval) };
        if device
            .seen
            .failed("cuptiProfilerHostEvaluateToGpuValues", evaluated)
        {
            continue;
        }
        device.seen.samples += 1;
        for ((metric, _), value) in device.metrics.iter().zip(&values) {
            out.push(PmSample {
                device_id: device.ordinal,
                timestamp: sample.endTimestamp,
                metric: *metric,
                value: *value,
            });
        }
    }
    // Every completed sample is read: the next decode starts from an empty image, as
    // XLA's and Kineto's samplers do (a decode stopping with COUNTER_DATA_FULL goes on
    // from where it stopped, into the emptied image).
    if info.numCompletedSamples > 0 {
        device.counter_data.copy_from_slice(&device.blank);
    }
}

impl PmSampler {
    /// Stops sampling, decodes what is left and releases everything; returns the
    /// samples, their timestamps on prof's clock, and a warning for each GPU that gave
    /// none, saying what decoding saw.
    pub(super) fn stop(mut self) -> (Vec<PmSample>, Vec<String>) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let mut devices = self.devices.lock().unwrap_or_else(|e| e.into_inner());
        let mut last = Vec::new();
        let mut warnings = Vec::new();
        for device in devices.iter_mut() {
            let mut p = params!(cupti::CUpti_PmSampling_Stop_Params, pPmSamplingObject);
            p.pPmSamplingObject = device.object;
            // SAFETY: a started sampling object, stopped once.
            let stopped = unsafe { cupti::cuptiPmSamplingStop(&mut p) };
            device.seen.failed("cuptiPmSamplingStop", stopped);
            decode(device, &mut last);
            if device.seen.samples == 0 {
                let seen = &device.seen;
                warnings.push(format!(
                    "prof: gpu_pm_sample_counters: GPU {} gave no PM sample: {} decodes, last stop reason {}, hardware buffer {}{}; the rest of the GPU trace goes on",
                    device.ordinal,
                    seen.decodes,
                    seen.last_stop.as_deref().unwrap_or("none"),
                    if seen.overflowed { "overflowed" } else { "not overflowed" },
                    seen.first_error.as_deref().map(|e| format!(", {e}")).unwrap_or_default(),
                ));
            }
            disable(device.object);
            drop_host(device.host);
        }
        devices.clear();
        let mut samples =
            std::mem::take(&mut *self.samples.lock().unwrap_or_else(|e| e.into_inner()));
        samples.extend(last);
        on_prof_clock(&mut samples, self.started_at, tracer::clock_ns());
        (samples, warnings)
    }
}

/// Puts samples on prof's clock. CUPTI stamps them with the GPU's own timer, which
/// may not be the clock CUPTI's activity records were pointed at: when the samples do
/// not fall between the sampler's start and stop as they are, they are shifted so the
/// first one ends one interval after the start (an error of at most one interval).
pub(crate) fn on_prof_clock(samples: &mut [PmSample], started_at: u64, stopped_at: u64) {
    let Some(first) = samples.iter().map(|s| s.timestamp).min() else {
        return;
    };
    let last = samples.iter().map(|s| s.timestamp).max().unwrap_or(first);
    if first >= started_at && last <= stopped_at {
        return;
    }
    let interval = {
        let mut times: Vec<u64> = samples.iter().map(|s| s.timestamp).collect();
        times.sort_unstable();
        times.dedup();
        times.get(1).map_or(0, |second| second - times[0])
    };
    let target = started_at.saturating_add(interval);
    for s in samples.iter_mut() {
        s.timestamp = s.timestamp.wrapping_sub(first).wrapping_add(target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(t: u64) -> PmSample {
        PmSample {
            device_id: 0,
            timestamp: t,
            metric: 0,
            value: 1.0,
        }
    }

    #[test]
    fn a_gpu_that_cannot_sample_is_named_with_cuptis_reason() {
        let parts = [
            (3, "the GPU's architecture"),
            (1, "a virtual GPU (vGPU)"),
            (2, "WSL"),
        ];
        assert_eq!(
            unsupported(1, &parts).as_deref(),
            Some(
                "CUPTI says PM sampling is not supported here (not with a virtual GPU (vGPU), WSL)"
            )
        );
        assert_eq!(
            unsupported(2, &[(3, "SLI")]).as_deref(),
            Some("CUPTI says PM sampling is not supported here (support level 2)")
        );
        // Supported, limited, and unknown (an older CUPTI's answer) are all tried.
        for level in [0, 3, 4] {
            assert_eq!(unsupported(level, &parts), None, "{level}");
        }
    }

    #[test]
    fn samples_on_the_gpus_clock_are_placed_after_the_start() {
        // Already on prof's clock: left alone.
        let mut same = vec![at(1_500), at(2_000)];
        on_prof_clock(&mut same, 1_000, 3_000);
        assert_eq!(
            same.iter().map(|s| s.timestamp).collect::<Vec<_>>(),
            [1_500, 2_000]
        );
        // On another clock: the first ends one interval after the start.
        let mut other = vec![at(9_000_500), at(9_001_000), at(9_001_000)];
        on_prof_clock(&mut other, 1_000, 5_000);
        assert_eq!(
            other.iter().map(|s| s.timestamp).collect::<Vec<_>>(),
            [1_500, 2_000, 2_000]
        );
    }

    #[test]
    fn struct_sizes_stop_at_the_named_field() {
        assert_eq!(
            struct_size!(cupti::CUpti_Profiler_Initialize_Params, pPriv),
            16
        );
        assert_eq!(
            struct_size!(cupti::CUpti_Profiler_Host_Initialize_Params, pHostObject),
            std::mem::offset_of!(cupti::CUpti_Profiler_Host_Initialize_Params, pHostObject) + 8
        );
        // CUDA 12.6's and 13.0's size (their struct ends at `api`), whatever later
        // fields the bindings have: a libcupti of 13.0 reads no further.
        assert_eq!(
            struct_size!(cupti::CUpti_Profiler_DeviceSupported_Params, api),
            8 + 8 + 4 + 7 * 4 + 4
        );
    }
}
