//! CUPTI's own floor, for `--overhead`: the same loop traced by CUPTI alone, without
//! prof, as `../shared/tools/cupti_floor.cu` measured it on the GPU machines. Two
//! settings:
//!
//! - kernel activity records only (`CONCURRENT_KERNEL`, buffers counted and freed);
//! - the same plus a callback subscribed to the launch functions that reads its data
//!   and returns.
//!
//! prof's tracer does what the second does and more (its callback records the call
//! and reads the annotation stack), so what prof adds per launch is read against what
//! the second adds, in the same alternated rounds.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as driver;

use crate::Result;

/// What the floor traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Floor {
    /// Kernel activity records only.
    KernelActivity,
    /// Kernel activity records and a callback on the launch functions.
    LaunchCallbacks,
}

/// Records CUPTI delivered and callbacks it made, so the work cannot be optimised out.
static RECORDS: AtomicU64 = AtomicU64::new(0);
static CALLBACKS: AtomicU64 = AtomicU64::new(0);

const BUFFER_BYTES: usize = 4 << 20;

fn layout() -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(BUFFER_BYTES, 8).expect("a valid layout")
}

extern "C" fn requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    // SAFETY: valid out-pointers from CUPTI; the block is freed in `completed` with the
    // same layout.
    unsafe {
        let block = std::alloc::alloc(layout());
        *buffer = block;
        *size = if block.is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

extern "C" fn completed(_: driver::CUcontext, _: u32, buffer: *mut u8, _: usize, valid: usize) {
    if buffer.is_null() {
        return;
    }
    let mut record: *mut cupti::CUpti_Activity = std::ptr::null_mut();
    let mut n = 0;
    // SAFETY: `buffer` came from `requested` and holds `valid` bytes of records.
    unsafe {
        while cupti::cuptiActivityGetNextRecord(buffer, valid, &mut record)
            .result()
            .is_ok()
        {
            n += 1;
        }
        std::alloc::dealloc(buffer, layout());
    }
    RECORDS.fetch_add(n, Ordering::Relaxed);
}

/// Touches the callback data and returns, as `cupti_floor.cu`'s callback does.
///
/// # Safety
/// CUPTI's callback contract: `cbdata` is a `CUpti_CallbackData` for the API domains.
unsafe extern "C" fn touch(
    _: *mut c_void,
    _: cupti::CUpti_CallbackDomain,
    _: cupti::CUpti_CallbackId,
    cbdata: *const c_void,
) {
    // SAFETY: the caller's promise.
    if let Some(data) = unsafe { cbdata.cast::<cupti::CUpti_CallbackData>().as_ref() } {
        CALLBACKS.fetch_add(u64::from(data.correlationId & 1), Ordering::Relaxed);
    }
}

/// A floor tracing session.
pub(crate) struct FloorSession {
    subscriber: Option<cupti::CUpti_SubscriberHandle>,
}

impl FloorSession {
    /// Starts CUPTI alone, as `floor` says.
    pub(crate) fn start(floor: Floor) -> Result<FloorSession> {
        // SAFETY: plain calls into libcupti (present: prof's tracer ran before); the
        // callbacks live for the whole process.
        unsafe {
            cupti::cuptiActivityRegisterCallbacks(Some(requested), Some(completed)).result()?;
            cupti::cuptiActivityEnable(
                cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
            )
            .result()?;
        }
        let mut session = FloorSession { subscriber: None };
        if floor == Floor::LaunchCallbacks {
            let mut handle: cupti::CUpti_SubscriberHandle = std::ptr::null_mut();
            // SAFETY: valid out-pointer; `touch` has CUPTI's signature.
            unsafe { cupti::cuptiSubscribe(&mut handle, Some(touch), std::ptr::null_mut()) }
                .result()?;
            session.subscriber = Some(handle);
            use cupti::CUpti_driver_api_trace_cbid as D;
            for cbid in [
                D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
                D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
                D::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
            ] {
                // SAFETY: a plain call on our subscription.
                unsafe {
                    cupti::cuptiEnableCallback(
                        1,
                        handle,
                        cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
                        cbid as u32,
                    )
                }
                .result()?;
            }
        }
        Ok(session)
    }

    /// Stops it and delivers what CUPTI still holds; returns the records delivered.
    pub(crate) fn stop(self) -> Result<u64> {
        // SAFETY: plain calls; the subscriber, if any, is ours and unsubscribed once.
        unsafe {
            if let Some(handle) = self.subscriber {
                cupti::cuptiUnsubscribe(handle).result()?;
            }
            cupti::cuptiActivityDisable(
                cupti::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
            )
            .result()?;
            cupti::cuptiActivityFlushAll(1).result()?;
        }
        Ok(RECORDS.swap(0, Ordering::Relaxed))
    }
}
