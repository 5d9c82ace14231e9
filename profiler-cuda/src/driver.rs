//! What the CUDA driver itself says of device memory: the one live driver call outside
//! the tracer, for comparing what prof saw allocated with what the device holds.
//!
//! [`memory_info`] asks `cuMemGetInfo` about the device of the context current on the
//! calling thread. It never creates a context (a primary context alone takes hundreds
//! of MiB of device memory): without one it says so. The driver's figure counts every
//! process on the device and every context's own reservations, so it is an upper
//! bound of what one program's allocations hold.

#![allow(unsafe_code)]

use cudarc::driver::sys as driver;

/// Device memory as the driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceMemoryInfo {
    /// The device's ordinal.
    pub ordinal: u32,
    /// Bytes free on the device.
    pub free: u64,
    /// Bytes of device memory in all.
    pub total: u64,
}

impl DeviceMemoryInfo {
    /// Bytes in use on the device, by every process and context.
    pub fn used(&self) -> u64 {
        self.total.saturating_sub(self.free)
    }
}

/// `cuMemGetInfo` for the device of the CUDA context current on this thread.
///
/// # Errors
/// A message when libcuda cannot be loaded, no context is current on this thread, or
/// the driver refuses.
pub fn memory_info() -> Result<DeviceMemoryInfo, String> {
    // SAFETY: this only tries to load the library by name; no symbol is used.
    if !unsafe { driver::is_culib_present() } {
        return Err("libcuda (the NVIDIA driver) is not on the library search path".into());
    }
    let mut context: driver::CUcontext = std::ptr::null_mut();
    // SAFETY: libcuda is loaded (checked above); the pointer is valid for one write.
    // Without cuInit this reports CUDA_ERROR_NOT_INITIALIZED, an error like any other.
    let current = unsafe { driver::cuCtxGetCurrent(&mut context) };
    if current != driver::CUresult::CUDA_SUCCESS || context.is_null() {
        return Err(
            "no CUDA context is current on this thread (memory_info does not create one)".into(),
        );
    }
    let mut device: driver::CUdevice = 0;
    // SAFETY: a context is current; the pointer is valid for one write.
    let found = unsafe { driver::cuCtxGetDevice(&mut device) };
    if found != driver::CUresult::CUDA_SUCCESS {
        return Err(format!("cuCtxGetDevice failed: {found:?}"));
    }
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: a context is current; both pointers are valid for one write.
    let asked = unsafe { driver::cuMemGetInfo_v2(&mut free, &mut total) };
    if asked != driver::CUresult::CUDA_SUCCESS {
        return Err(format!("cuMemGetInfo failed: {asked:?}"));
    }
    Ok(DeviceMemoryInfo {
        ordinal: u32::try_from(device).unwrap_or(0),
        free: free as u64,
        total: total as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a GPU (CI), the answer is an error that says why, never a panic.
    #[test]
    fn without_a_context_it_says_why() {
        match memory_info() {
            Ok(info) => assert!(info.total >= info.free),
            Err(why) => assert!(
                why.contains("libcuda") || why.contains("context") || why.contains("failed"),
                "{why}"
            ),
        }
    }
}
