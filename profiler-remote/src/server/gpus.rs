//! The GPUs of the watched process's machine, for the live view's frames: through NVML
//! loaded at run time (`libnvidia-ml.so.1`, which comes with the driver), so nothing is
//! linked, and a machine without the driver says why in the frame rather than failing.
//! Each host of a multi-host view reports its own GPUs.
//!
//! Utilisation is NVML's: the share of the last sample period (1/6 s to 1 s, by
//! device) in which at least one kernel ran. It says a GPU was busy, not how much of
//! it the kernels used.

use std::sync::OnceLock;

use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;

use crate::live::proto as wire;

/// NVML, loaded on the first frame that asks (only while someone watches), or why not.
static NVML: OnceLock<Result<Nvml, String>> = OnceLock::new();

/// Each GPU's numbers now, or why there are none.
pub(super) fn read() -> Result<Vec<wire::Gpu>, String> {
    let nvml = NVML
        .get_or_init(|| {
            Nvml::init().map_err(|e| match e {
                // The usual case on a machine without a GPU: said short, for a screen line.
                NvmlError::LibloadingError(_) => {
                    "no NVIDIA driver on this host (libnvidia-ml not found)".to_owned()
                }
                e => format!("NVML did not start on this host ({e})"),
            })
        })
        .as_ref()
        .map_err(Clone::clone)?;
    let count = nvml
        .device_count()
        .map_err(|e| format!("NVML counts no device ({e})"))?;
    Ok((0..count)
        .filter_map(|index| {
            let device = nvml.device_by_index(index).ok()?;
            let memory = device.memory_info().ok();
            Some(wire::Gpu {
                index,
                name: device.name().unwrap_or_else(|_| format!("GPU {index}")),
                busy_percent: device.utilization_rates().ok().map(|u| u.gpu),
                memory_used: memory.as_ref().map(|m| m.used),
                memory_total: memory.as_ref().map(|m| m.total),
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn without_a_driver_the_reason_is_said_and_with_one_each_gpu_is_named() {
        match super::read() {
            Err(why) => assert!(
                why.contains("NVML") || why.contains("libnvidia-ml"),
                "{why}"
            ),
            Ok(gpus) => {
                for (i, g) in gpus.iter().enumerate() {
                    assert_eq!(g.index as usize, i);
                    assert!(!g.name.is_empty());
                }
            }
        }
    }
}
