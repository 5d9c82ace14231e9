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
//!
//! `params` is the plumbing of CUPTI's profiler API, `config` sets a GPU up; this module
//! runs the sampler, decodes its samples and places them on prof's clock.

#![allow(unsafe_code)]

use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use cudarc::cupti::sys as cupti;
use profiler_core::tracer;

use crate::activity::PmSample;

#[macro_use]
mod params;
mod config;

pub(crate) use config::PmSettings;
use config::{configure, disable, drop_host, host_object, split_metrics, Configured, Metrics};
use params::check;

/// How often the hardware buffer is decoded.
const DECODE_EVERY: Duration = Duration::from_millis(100);

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
}
