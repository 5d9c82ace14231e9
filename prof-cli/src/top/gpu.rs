//! The GPUs of the machine `prof-top` runs on, through NVML loaded at run time
//! (`libnvidia-ml.so.1`, which comes with the driver): nothing to link, and on a
//! machine without the driver the view reads "n/a" rather than failing.
//!
//! Utilisation is NVML's: the share of the last sample period (1/6 s to 1 s, by
//! device) in which at least one kernel ran. It says a GPU was busy, not how much of
//! it the kernels used.

use nvml_wrapper::Nvml;

/// One GPU now.
#[derive(Clone, Debug, PartialEq)]
pub struct Gpu {
    /// Its index, as NVML and `nvidia-smi` number them.
    pub index: u32,
    /// Its name.
    pub name: String,
    /// Share of the last sample period with a kernel running, percent.
    pub busy_percent: Option<u32>,
    /// Device memory in use and in all, bytes.
    pub memory: Option<(u64, u64)>,
}

/// NVML, once loaded; `None` where it cannot be (no driver, no GPU).
pub struct Gpus(Option<Nvml>);

impl Gpus {
    /// Loads NVML if it is there.
    pub fn load() -> Gpus {
        Gpus(Nvml::init().ok())
    }

    /// Each GPU's numbers now; `None` without NVML.
    pub fn read(&self) -> Option<Vec<Gpu>> {
        let nvml = self.0.as_ref()?;
        let count = nvml.device_count().ok()?;
        Some(
            (0..count)
                .filter_map(|index| {
                    let device = nvml.device_by_index(index).ok()?;
                    Some(Gpu {
                        index,
                        name: device.name().unwrap_or_else(|_| format!("GPU {index}")),
                        busy_percent: device.utilization_rates().ok().map(|u| u.gpu),
                        memory: device.memory_info().ok().map(|m| (m.used, m.total)),
                    })
                })
                .collect(),
        )
    }
}

impl std::fmt::Debug for Gpus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Gpus(NVML)"
        } else {
            "Gpus(n/a)"
        })
    }
}
