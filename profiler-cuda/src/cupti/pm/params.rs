//! Calling CUPTI's profiler API: its params structs, zeroed and sized as CUPTI's own
//! `_STRUCT_SIZE` macros size them, and its results as errors naming the call.

use cudarc::cupti::sys as cupti;

/// The size CUPTI expects in `structSize`: the struct up to and including `$field`, as
/// CUPTI's own `CUPTI_PROFILER_STRUCT_SIZE` macros measure it, so a build against newer
/// headers (whose structs grew) still speaks to an older libcupti.
macro_rules! struct_size {
    ($ty:ty, $field:ident) => {{
        let probe = std::mem::MaybeUninit::<$ty>::uninit();
        let base = probe.as_ptr();
        // SAFETY: only the field's address is taken, never read.
        let field = unsafe { std::ptr::addr_of!((*base).$field) };
        std::mem::offset_of!($ty, $field) + $crate::cupti::pm::params::size_of_pointee(field)
    }};
}

/// What [`struct_size!`] measures a field with.
pub(super) fn size_of_pointee<T>(_: *const T) -> usize {
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

/// `Ok`, or the failed call named with CUPTI's result.
pub(super) fn check(what: &str, r: cupti::CUptiResult) -> Result<(), String> {
    r.result().map_err(|e| format!("{what} failed ({:?})", e.0))
}

#[cfg(test)]
mod tests {
    use super::*;

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
