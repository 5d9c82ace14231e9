//! A driver-API kernel launch as CUPTI reports it to the tracer's callback, without a
//! GPU: one `CUpti_CallbackData`, handed to [`callback`] at the call's entry and exit.

use std::ffi::c_void;

use cudarc::cupti::sys as cupti;

use super::cbid::CU_LAUNCH_KERNEL;
use crate::cupti::callbacks::callback;

/// A `cuLaunchKernel` call's callback data, made once and reported as often as wanted
/// (a bench times [`DriverLaunch::report`], not the data's making).
pub struct DriverLaunch {
    data: cupti::CUpti_CallbackData,
    /// The per-call storage CUPTI lends the callback between entry and exit; boxed, so
    /// the pointer to it in `data` stays good when the `DriverLaunch` moves.
    _slot: Box<u64>,
}

impl DriverLaunch {
    /// The data of a `cuLaunchKernel` call in context 1.
    pub fn new() -> DriverLaunch {
        let mut slot = Box::new(0u64);
        let data = cupti::CUpti_CallbackData {
            callbackSite: cupti::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
            functionName: c"cuLaunchKernel".as_ptr(),
            functionParams: std::ptr::null(),
            functionReturnValue: std::ptr::null_mut(),
            symbolName: std::ptr::null(),
            context: std::ptr::null_mut(),
            contextUid: 1,
            correlationData: &raw mut *slot,
            correlationId: 0,
        };
        DriverLaunch { data, _slot: slot }
    }

    /// Reports the call with `correlation_id`: its entry, then its exit, on this thread.
    // Inline, as the benches' own copies were: the callback bench times the callback.
    #[inline]
    pub fn report(&mut self, correlation_id: u32) {
        self.data.correlationId = correlation_id;
        let domain = cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API;
        for site in [
            cupti::CUpti_ApiCallbackSite::CUPTI_API_ENTER,
            cupti::CUpti_ApiCallbackSite::CUPTI_API_EXIT,
        ] {
            self.data.callbackSite = site;
            let data = std::ptr::from_mut(&mut self.data)
                .cast::<c_void>()
                .cast_const();
            #[allow(unsafe_code)]
            // SAFETY: `data` is a whole `CUpti_CallbackData`, alive for the call, whose
            // `correlationData` points to a live u64 (`_slot`), as CUPTI passes them
            // for the driver domain; the callback reads nothing else through it.
            unsafe {
                callback(std::ptr::null_mut(), domain, CU_LAUNCH_KERNEL, data)
            };
        }
    }
}

impl Default for DriverLaunch {
    fn default() -> DriverLaunch {
        DriverLaunch::new()
    }
}
