//! Which device the kernels ran on, as its plane names it: the runtime (`wgpu`,
//! `cuda`, `hip`, `metal`, `cpu`) and the device's own name.

use std::sync::{Mutex, PoisonError};

/// The device a session's kernels are put on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceName {
    /// Its plane is `/device:GPU:<ordinal>`.
    pub ordinal: u32,
    /// The cubecl runtime that ran the kernels: the plane's `device_vendor` stat.
    pub runtime: String,
    /// The device as its driver names it (`llvmpipe (LLVM 19.1.7, 256 bits)`, `NVIDIA
    /// H100 80GB HBM3`): the plane's `device_name` stat.
    pub name: Option<String>,
}

impl Default for DeviceName {
    fn default() -> Self {
        DeviceName {
            ordinal: 0,
            runtime: "cubecl".to_owned(),
            name: None,
        }
    }
}

impl DeviceName {
    /// The name of `device`, read from its `Debug` form (`Device<Cube(Wgpu(..))>`, the
    /// runtime) and its identity (which opens the device).
    pub fn of(device: &burn::tensor::Device) -> DeviceName {
        let shown = format!("{device:?}");
        DeviceName {
            ordinal: 0,
            runtime: runtime_of(&shown).to_owned(),
            name: device.identity().map(|id| id.name),
        }
    }

    /// Whether its kernels are launched through CUDA's driver (where CUPTI sees them,
    /// on cubecl's device thread).
    pub fn is_cuda(&self) -> bool {
        self.runtime == "cuda"
    }
}

/// The cubecl runtime named in a burn device's `Debug` form; `cubecl` when none is.
pub(crate) fn runtime_of(shown: &str) -> &'static str {
    // cubecl's `Device` variants, as `Debug` spells them inside burn's dispatch device.
    for (variant, runtime) in [
        ("Cuda(", "cuda"),
        ("Hip(", "hip"),
        ("Metal(", "metal"),
        ("Wgpu(", "wgpu"),
        ("Cpu(", "cpu"),
    ] {
        if shown.contains(variant) {
            return runtime;
        }
    }
    "cubecl"
}

static CURRENT: Mutex<Option<DeviceName>> = Mutex::new(None);

/// Sets the device later sessions' kernels are put on.
pub(crate) fn set(name: DeviceName) {
    *CURRENT.lock().unwrap_or_else(PoisonError::into_inner) = Some(name);
}

/// The device set last, or the default (`/device:GPU:0`, runtime `cubecl`).
pub(crate) fn current() -> DeviceName {
    CURRENT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::runtime_of;

    #[test]
    fn the_runtime_is_read_from_the_device() {
        assert_eq!(runtime_of("Device<Cube(Wgpu(DefaultDevice))>"), "wgpu");
        assert_eq!(
            runtime_of(
                "Device<Autodiff(AutodiffDevice { inner: Cube(Cuda(CudaDevice { index: 0 })) })>"
            ),
            "cuda"
        );
        assert_eq!(runtime_of("Device<Flex(FlexDevice)>"), "cubecl");
    }
}
