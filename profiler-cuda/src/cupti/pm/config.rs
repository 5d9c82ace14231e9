//! Setting a GPU up for PM sampling: which metrics its chip accepts, the configuration
//! image they make, whether CUPTI says the GPU can sample, and sampling enabled,
//! configured and started (or disabled again when a step fails).

#![allow(unsafe_code)]

use std::ffi::{c_char, CStr, CString};

use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as driver;

use super::params::check;

/// Samples a counter-data image holds before it is evaluated and reset.
const MAX_SAMPLES: u32 = 4096;

/// The settings of `gpu_pm_sample_*`.
#[derive(Clone, Debug)]
pub(crate) struct PmSettings {
    pub(crate) metrics: Vec<String>,
    pub(crate) interval_us: u64,
    pub(crate) buffer_mb: u64,
}

/// Metrics by their index in the session's list.
pub(super) type Metrics = Vec<(usize, CString)>;

/// The metrics of `names` the chip accepts, each tried alone: (accepted, refused).
pub(super) fn split_metrics(
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

pub(super) fn host_object(
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

pub(super) fn drop_host(host: *mut cupti::CUpti_Profiler_Host_Object) {
    let mut p = params!(cupti::CUpti_Profiler_Host_Deinitialize_Params, pHostObject);
    p.pHostObject = host;
    // SAFETY: a host object made by `host_object`, released once.
    let _ = unsafe { cupti::cuptiProfilerHostDeinitialize(&mut p) };
}

/// A device whose sampling has started.
pub(super) struct Configured {
    pub(super) object: *mut cupti::CUpti_PmSampling_Object,
    /// The configuration image CUPTI keeps a pointer to.
    pub(super) config: Vec<u8>,
    /// The initialized counter-data image.
    pub(super) counter_data: Vec<u8>,
}

/// Builds the configuration image, enables and starts sampling; `None` when the
/// metrics need more than one pass.
pub(super) fn configure(
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
pub(super) fn disable(object: *mut cupti::CUpti_PmSampling_Object) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
