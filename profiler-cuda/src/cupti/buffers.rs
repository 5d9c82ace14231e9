//! CUPTI's activity buffers: the device's records (kernels, copies, memsets, memory,
//! NVTX markers, whole-graph launches), handed over by CUPTI on a thread of its own,
//! parsed and kept within the session's caps.

#![allow(unsafe_code)]

use std::collections::BTreeMap;
use std::ffi::CStr;
use std::sync::{Mutex, MutexGuard};

use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as driver;

use crate::activity::{Activity, DeviceTrace};
use crate::layout;

/// Size of each activity buffer handed to CUPTI (TSL uses the same order).
const BUFFER_BYTES: usize = 4 << 20;

/// Records kept, filled on CUPTI's buffer-completion thread. The lock is held only to
/// append parsed records; application threads never take it.
static COLLECTED: Mutex<Option<Collected>> = Mutex::new(None);

pub(super) struct Collected {
    pub(super) trace: DeviceTrace,
    max_activity: u64,
    max_markers: u64,
    kept_activity: u64,
    kept_markers: u64,
}

fn collected() -> MutexGuard<'static, Option<Collected>> {
    COLLECTED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts keeping records: at most `max_activity` device records and `max_markers` NVTX
/// records (which count against the API cap, as they are host records).
pub(super) fn begin(max_activity: u64, max_markers: u64) {
    *collected() = Some(Collected::new(max_activity, max_markers));
}

/// What was kept since [`begin`].
pub(super) fn take() -> Option<Collected> {
    collected().take()
}

/// Each device's kernel time and kernels, by ordinal, over every kernel record CUPTI
/// delivered in this process, in any session, those over a session's cap too (their
/// time was spent all the same). Counts only grow, so a reader (the live view) takes
/// differences between its reads, across sessions too.
static KERNEL_TIME: Mutex<BTreeMap<u32, (u64, u64)>> = Mutex::new(BTreeMap::new());

/// Each device's kernel time (ns) and kernels so far in this process, by ordinal
/// ([`KERNEL_TIME`]).
pub(super) fn kernel_time() -> BTreeMap<u32, (u64, u64)> {
    KERNEL_TIME
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// Adds the kernels among `parsed` to [`KERNEL_TIME`].
fn count_kernels(parsed: &[Activity]) {
    let mut counts = KERNEL_TIME.lock().unwrap_or_else(|e| e.into_inner());
    for activity in parsed {
        if let Activity::Kernel { start, end, at, .. } = activity {
            let device = counts.entry(at.device_id).or_default();
            device.0 = device.0.saturating_add(end.saturating_sub(*start));
            device.1 += 1;
        }
    }
}

impl Collected {
    fn new(max_activity: u64, max_markers: u64) -> Collected {
        Collected {
            trace: DeviceTrace::default(),
            max_activity,
            max_markers,
            kept_activity: 0,
            kept_markers: 0,
        }
    }

    /// Adds a completed buffer's records, within the caps.
    fn keep(&mut self, parsed: Vec<Activity>, dropped_by_cupti: u64) {
        self.trace.dropped_by_cupti += dropped_by_cupti;
        for activity in parsed {
            let (kept, max, dropped) = match activity {
                // NVTX records are host-side records.
                Activity::Marker { .. } => (
                    &mut self.kept_markers,
                    self.max_markers,
                    &mut self.trace.dropped_api,
                ),
                _ => (
                    &mut self.kept_activity,
                    self.max_activity,
                    &mut self.trace.dropped_activity,
                ),
            };
            if *kept >= max {
                *dropped += 1;
                continue;
            }
            *kept += 1;
            self.trace.activities.push(activity);
        }
    }
}

/// Hands `parsed` to the session's records as a completed buffer would.
#[cfg(test)]
pub(super) fn complete(parsed: Vec<Activity>) {
    count_kernels(&parsed);
    if let Some(c) = collected().as_mut() {
        c.keep(parsed, 0);
    }
}

/// CUPTI requires activity buffers aligned to 8 bytes (`ACTIVITY_RECORD_ALIGNMENT`);
/// a byte slice's allocation promises only 1.
fn buffer_layout() -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(BUFFER_BYTES, 8).expect("a valid layout")
}

pub(super) extern "C" fn buffer_requested(
    buffer: *mut *mut u8,
    size: *mut usize,
    max_records: *mut usize,
) {
    // SAFETY: the layout has a non-zero size. CUPTI passes valid out-pointers; a null
    // buffer (out of memory) makes CUPTI drop records, and the buffer is returned to
    // `buffer_completed`, which frees it with the same layout.
    unsafe {
        let block = std::alloc::alloc_zeroed(buffer_layout());
        *buffer = block;
        *size = if block.is_null() { 0 } else { BUFFER_BYTES };
        *max_records = 0;
    }
}

pub(super) extern "C" fn buffer_completed(
    _context: driver::CUcontext,
    _stream: u32,
    buffer: *mut u8,
    _size: usize,
    valid: usize,
) {
    if buffer.is_null() {
        return;
    }
    let mut parsed = Vec::new();
    let mut dropped = 0usize;
    let mut record: *mut cupti::CUpti_Activity = std::ptr::null_mut();
    // SAFETY: `buffer` is one `buffer_requested` made, holding `valid` bytes of records
    // CUPTI wrote; each record is at least its kind's shared prefix long.
    unsafe {
        while cupti::cuptiActivityGetNextRecord(buffer, valid, &mut record)
            .result()
            .is_ok()
        {
            let kind_value = record.cast::<u32>().read_unaligned();
            if let Some(len) = layout::prefix_len(kind_value) {
                let bytes = std::slice::from_raw_parts(record.cast::<u8>(), len);
                if let Some(activity) = layout::read(bytes, &LiveNames) {
                    parsed.push(activity);
                }
            }
        }
        let _ = cupti::cuptiActivityGetNumDroppedRecords(std::ptr::null_mut(), 0, &mut dropped);
        std::alloc::dealloc(buffer, buffer_layout());
    }
    count_kernels(&parsed);
    if let Some(c) = collected().as_mut() {
        c.keep(parsed, dropped as u64);
    }
}

/// Names of record fields that are pointers into CUPTI's memory, or callback ids.
pub(super) struct LiveNames;

impl layout::Names for LiveNames {
    fn kernel(&self, name_ptr: u64) -> String {
        if name_ptr == 0 {
            return "(unnamed kernel)".to_owned();
        }
        // SAFETY: CUPTI's kernel name pointers are NUL-terminated strings it keeps for
        // the life of the process.
        unsafe { CStr::from_ptr(name_ptr as usize as *const std::ffi::c_char) }
            .to_string_lossy()
            .into_owned()
    }

    fn string(&self, ptr: u64) -> Option<String> {
        if ptr == 0 {
            return None;
        }
        // SAFETY: a marker's name and domain point to NUL-terminated strings CUPTI
        // keeps at least until the buffer holding the record is handed back to it; they
        // are read while that buffer is processed, as CUPTI's own samples read them.
        let s = unsafe { CStr::from_ptr(ptr as usize as *const std::ffi::c_char) };
        Some(s.to_string_lossy().into_owned())
    }

    fn api(&self, domain_kind: u32, cbid: u32) -> String {
        let domain = if domain_kind == layout::kind::DRIVER {
            cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API
        } else {
            cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_RUNTIME_API
        };
        super::callbacks::callback_name(domain, cbid).unwrap_or_else(|| format!("CUDA API {cbid}"))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::activity::MarkerPhase;

    fn kernel(correlation_id: u32) -> Activity {
        Activity::Memset {
            bytes: 1,
            start: 1,
            end: 2,
            at: crate::activity::Placement {
                correlation_id,
                ..Default::default()
            },
        }
    }

    fn marker(id: u32) -> Activity {
        Activity::Marker {
            phase: MarkerPhase::Start,
            id,
            timestamp: 1,
            thread_id: 7,
            name: Some("range".into()),
            domain: None,
        }
    }

    pub(in crate::cupti) fn kernel_on(device_id: u32, start: u64, end: u64) -> Activity {
        Activity::Kernel {
            name: "k".into(),
            start,
            end,
            at: crate::activity::Placement {
                device_id,
                ..Default::default()
            },
            details: Default::default(),
        }
    }

    #[test]
    fn kernel_time_adds_up_by_device_and_only_grows() {
        // Devices no other test uses: the count is the process's.
        let before = kernel_time();
        let of =
            |counts: &BTreeMap<u32, (u64, u64)>, d| counts.get(&d).copied().unwrap_or_default();
        count_kernels(&[kernel_on(5, 10, 40), kernel_on(6, 0, 5), kernel(9)]);
        count_kernels(&[kernel_on(5, 50, 60), kernel_on(5, 100, 100)]);
        let after = kernel_time();
        // A memset is not a kernel; a kernel of no length still counts as one.
        assert_eq!(of(&after, 5).0 - of(&before, 5).0, 40);
        assert_eq!(of(&after, 5).1 - of(&before, 5).1, 3);
        assert_eq!(
            (
                of(&after, 6).0 - of(&before, 6).0,
                of(&after, 6).1 - of(&before, 6).1
            ),
            (5, 1)
        );
    }

    #[test]
    fn device_records_and_nvtx_records_have_caps_of_their_own() {
        let mut c = Collected::new(2, 1);
        c.keep(
            vec![kernel(1), marker(1), kernel(2), marker(2), kernel(3)],
            0,
        );
        c.keep(vec![kernel(4)], 5);
        assert_eq!(c.trace.activities.len(), 3);
        assert_eq!(c.trace.dropped_activity, 2);
        assert_eq!(c.trace.dropped_api, 1);
        assert_eq!(c.trace.dropped_by_cupti, 5);
    }
}
