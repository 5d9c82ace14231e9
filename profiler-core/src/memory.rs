//! Memory in use and its peak, per allocator, asked in code: what torch's
//! `memory_allocated()` / `max_memory_allocated()` and JAX's `memory_stats()` answer,
//! whether or not a session records.
//!
//! Allocators are named as XProf's Memory Profile names them: `host` for the heap a
//! [`TrackingAllocator`](crate::TrackingAllocator) counts, `GPU_0`, `GPU_1`, ... for
//! the device memory a device tracer saw allocated.
//!
//! ```
//! use profiler_core::memory;
//!
//! #[global_allocator]
//! static ALLOC: profiler_core::TrackingAllocator<std::alloc::System> =
//!     profiler_core::TrackingAllocator::new(std::alloc::System);
//!
//! # fn main() {
//! memory::reset_peak();
//! let before = memory::host().expect("the tracking allocator counts").in_use;
//! let m = memory::scope();
//! {
//!     let _activations = vec![0u8; 8 << 20];
//! }
//! // The 8 MiB came and went inside the scope: its peak saw them.
//! assert!(m.peak() >= before + (8 << 20));
//! assert!(memory::host().expect("counted").peak >= before + (8 << 20));
//! # }
//! ```
//!
//! # How exact
//!
//! The host's bytes are the tracking allocator's: the process total plus the calling
//! thread's own tally, exact for the calling thread and within
//! [`FLUSH_BYTES`](crate::alloc::FLUSH_BYTES) for each other thread. Peaks are noted
//! when a thread folds its tally (see [`crate::alloc`]), and an allocation of at least
//! [`MIN_LARGE_ALLOCATION`](crate::alloc::MIN_LARGE_ALLOCATION) always folds: a peak
//! misses at most `FLUSH_BYTES` per thread. A GPU's bytes are those its device tracer
//! saw allocated and not released since the process started (allocations made while
//! no session traced are not seen); the driver's own view is
//! `profiler_cuda::driver::memory_info`.
//!
//! [`scope`] tracks the peak from its start; up to 64 scopes can be open at once in
//! the process, and those beyond read the allocator's peak since the last
//! [`reset_peak`] instead ([`Scope::exact`] says which).

use crate::alloc;
use crate::peaks::{self, Tracked, HOST};
use crate::schema;

pub use crate::alloc::{large_allocation_threshold, set_large_allocation_threshold};

/// Bytes in use and the highest bytes in use, of one allocator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// Bytes in use now.
    pub in_use: u64,
    /// The most bytes in use since the process started or [`reset_peak`] was called.
    pub peak: u64,
}

fn bytes(v: i64) -> u64 {
    // A release folded in before its allocation (another thread's tally) can take
    // the total below zero for a moment.
    u64::try_from(v).unwrap_or(0)
}

/// The host heap, as the [`TrackingAllocator`](crate::TrackingAllocator) counts it;
/// `None` when none is the global allocator (nothing was ever counted).
pub fn host() -> Option<Usage> {
    if !alloc::host_tracked() {
        return None;
    }
    let in_use = alloc::host_bytes_in_use();
    Some(Usage {
        in_use: bytes(in_use),
        peak: bytes(HOST.peak().max(in_use)),
    })
}

/// GPU `ordinal`'s memory, as its device tracer saw it allocated (allocator
/// `GPU_<ordinal>`); `None` before a tracer saw any.
pub fn gpu(ordinal: u32) -> Option<Usage> {
    allocator(&gpu_allocator(ordinal))
}

/// The allocator name of GPU `ordinal`: `GPU_<ordinal>`.
pub fn gpu_allocator(ordinal: u32) -> String {
    format!("{}{ordinal}", schema::GPU_ALLOCATOR_PREFIX)
}

/// The allocator named `name` (`host`, `GPU_0`, ...); `None` when nothing was counted
/// for it.
pub fn allocator(name: &str) -> Option<Usage> {
    if name == schema::HOST_ALLOCATOR {
        return host();
    }
    let (_, tracked) = peaks::devices().into_iter().find(|(n, _)| *n == name)?;
    usage_of(tracked)
}

fn usage_of(tracked: &Tracked) -> Option<Usage> {
    tracked.seen().then(|| Usage {
        in_use: bytes(tracked.in_use()),
        peak: bytes(tracked.peak().max(tracked.in_use())),
    })
}

/// Every allocator something was counted for, the host first.
pub fn allocators() -> Vec<(String, Usage)> {
    let host = host().map(|u| (schema::HOST_ALLOCATOR.to_owned(), u));
    let devices = peaks::devices()
        .into_iter()
        .filter_map(|(name, tracked)| Some((name.to_owned(), usage_of(tracked)?)));
    host.into_iter().chain(devices).collect()
}

/// Starts every allocator's peak over from its bytes in use now (torch's
/// `reset_peak_memory_stats`). Open scopes keep theirs.
pub fn reset_peak() {
    HOST.reset_peak(alloc::host_bytes_in_use());
    for (_, tracked) in peaks::devices() {
        tracked.reset_peak(tracked.in_use());
    }
}

/// Starts tracking the peak of every allocator from now until the returned scope is
/// dropped: `let m = memory::scope(); ...; m.peak()`.
pub fn scope() -> Scope {
    let slot = peaks::open_scope(|tracked| {
        if std::ptr::eq(tracked, &HOST) {
            alloc::host_bytes_in_use()
        } else {
            tracked.in_use()
        }
    });
    Scope { slot }
}

/// The peaks of every allocator since [`scope`] made it; see the
/// [module documentation](self).
#[derive(Debug)]
#[must_use = "a scope tracks peaks until it is dropped"]
pub struct Scope {
    /// `None` when every slot was taken: the allocators' own peaks stand in.
    slot: Option<usize>,
}

impl Scope {
    /// The host heap's peak since the scope started, in bytes (0 without a tracking
    /// allocator).
    pub fn peak(&self) -> u64 {
        self.peak_of(schema::HOST_ALLOCATOR).unwrap_or(0)
    }

    /// The peak of allocator `name` (`host`, `GPU_0`, ...) since the scope started;
    /// `None` when nothing was ever counted for it.
    pub fn peak_of(&self, name: &str) -> Option<u64> {
        let (tracked, now) = if name == schema::HOST_ALLOCATOR {
            if !alloc::host_tracked() {
                return None;
            }
            (&HOST, alloc::host_bytes_in_use())
        } else {
            let (_, tracked) = peaks::devices().into_iter().find(|(n, _)| *n == name)?;
            if !tracked.seen() {
                return None;
            }
            (tracked, tracked.in_use())
        };
        let noted = match self.slot {
            Some(slot) => tracked.scope_peak(slot),
            None => tracked.peak(),
        };
        Some(bytes(noted.max(now)))
    }

    /// Whether the scope tracks its own peaks; false when more than 64 scopes were
    /// open when it started, and its peaks are the allocators' since the last
    /// [`reset_peak`] (at least the scope's own).
    pub fn exact(&self) -> bool {
        self.slot.is_some()
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            peaks::close_scope(slot);
        }
    }
}

/// A device's memory as its tracer counts it, under allocator name `name` (`GPU_0`):
/// how a device tracer feeds [`gpu`] and [`scope`]. Cheap to look up once and keep.
pub fn device(name: &str) -> DeviceMemory {
    DeviceMemory(peaks::device(name))
}

/// A device allocator's counters; see [`device`].
#[derive(Clone, Copy, Debug)]
pub struct DeviceMemory(&'static Tracked);

impl DeviceMemory {
    /// `bytes` were allocated; returns the bytes in use after.
    pub fn allocated(&self, bytes: u64) -> u64 {
        self::bytes(self.0.add(i64::try_from(bytes).unwrap_or(i64::MAX)))
    }

    /// `bytes` were released; returns the bytes in use after.
    pub fn released(&self, bytes: u64) -> u64 {
        self::bytes(self.0.add(-i64::try_from(bytes).unwrap_or(i64::MAX)))
    }

    /// Bytes in use and peak.
    pub fn usage(&self) -> Usage {
        Usage {
            in_use: bytes(self.0.in_use()),
            peak: bytes(self.0.peak().max(self.0.in_use())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_allocator_counts_and_its_scopes_see_their_own_peak() {
        let gpu = device("GPU_test_memory");
        assert_eq!(allocator("GPU_test_memory"), None, "nothing counted yet");
        gpu.allocated(1000);
        let m = scope();
        assert_eq!(m.peak_of("GPU_test_memory"), Some(1000));
        gpu.allocated(500);
        gpu.released(1200);
        assert_eq!(
            gpu.usage(),
            Usage {
                in_use: 300,
                peak: 1500
            }
        );
        assert_eq!(m.peak_of("GPU_test_memory"), Some(1500));
        drop(m);
        let inner = scope();
        gpu.allocated(100);
        assert_eq!(inner.peak_of("GPU_test_memory"), Some(400));
        assert!(inner.exact());
        assert_eq!(allocator("GPU_test_memory").map(|u| u.peak), Some(1500));
        reset_peak();
        assert_eq!(allocator("GPU_test_memory").map(|u| u.peak), Some(400));
        assert!(allocators().iter().any(|(n, _)| n == "GPU_test_memory"));
        assert_eq!(inner.peak_of("no such allocator"), None);
        assert_eq!(gpu_allocator(3), "GPU_3");
    }
}
