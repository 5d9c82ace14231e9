//! Host memory counters: [`TrackingAllocator`], a global allocator wrapper that keeps
//! the bytes and allocations in use, recorded as the `host_bytes_in_use` and
//! `host_allocations` counter tracks while a session records.
//!
//! ```
//! use std::alloc::System;
//! use profiler_core::TrackingAllocator;
//!
//! #[global_allocator]
//! static ALLOC: TrackingAllocator<System> = TrackingAllocator::new(System);
//! # fn main() {
//! let before = TrackingAllocator::<System>::bytes_in_use();
//! let v = vec![0u8; 1 << 20];
//! assert_eq!(TrackingAllocator::<System>::bytes_in_use() - before, 1 << 20);
//! # drop(v);
//! # }
//! ```
//!
//! Counting runs whether or not a session records, so the numbers are what is in use,
//! not what changed since the session started. Each thread adds its allocations to
//! a thread-local tally (one add), and folds it into the process totals (two atomic
//! adds) once its net count passes [`FLUSH_COUNT`] or its net bytes [`FLUSH_BYTES`];
//! only then, and only while a session records, is a sample written.
//! So the tracks, and the per-step peak of the summary tables, are
//! exact to within `FLUSH_BYTES` per thread; [`TrackingAllocator::bytes_in_use`]
//! includes the calling thread's tally. What a thread had not folded in when it
//! exited is lost, at most `FLUSH_BYTES`.
//!
//! Allocations made by the recording machinery itself (a buffer chunk, a thread's
//! registration, the collector's copy of the buffer list) are counted but cannot
//! write a sample: that would re-enter the writer or a lock it holds.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::counter::Counter;
use crate::gate::{self, USER_LEVEL};
use crate::reentry;
use crate::schema;

/// A thread folds its tally into the totals once its net count of allocations passes
/// this...
pub const FLUSH_COUNT: i64 = 1024;
/// ...or its net bytes pass this, either way.
pub const FLUSH_BYTES: i64 = 64 * 1024;

static BYTES: AtomicI64 = AtomicI64::new(0);
static COUNT: AtomicI64 = AtomicI64::new(0);
static BYTES_TRACK: Counter = Counter::new(schema::HOST_BYTES_IN_USE);
static COUNT_TRACK: Counter = Counter::new(schema::HOST_ALLOCATIONS);

/// A thread's tally, packed in one word so an allocation costs one add: net bytes
/// above bit 16, net count in the low 16 bits (two's complement, so one add updates
/// both; the count stays within ±2^15 because it is folded in at [`FLUSH_COUNT`]).
/// `const`-initialised and without a destructor, so reaching it from inside the
/// allocator never allocates or registers anything.
struct Tally {
    packed: Cell<i64>,
}

thread_local! {
    static TALLY: Tally = const {
        Tally {
            packed: Cell::new(0),
        }
    };
}

/// (net bytes, net count) of a packed tally.
#[inline(always)]
fn unpack(packed: i64) -> (i64, i64) {
    let count = (packed << 48) >> 48;
    ((packed - count) >> 16, count)
}

/// Whether a packed tally's net count is past ±[`FLUSH_COUNT`] or its net bytes past
/// ±[`FLUSH_BYTES`] (to within one allocation or byte at the negative ends), read
/// from the packed word with one range check per half and a single branch: unpacking
/// it and taking absolute values was half of what tracking added to a malloc-free
/// pair (Intel Xeon), on every allocation.
#[inline(always)]
fn past_flush(packed: i64) -> bool {
    // The low 16 bits are the count modulo 2^16.
    let count_out = (packed as u16).wrapping_add(FLUSH_COUNT as u16) >= 2 * FLUSH_COUNT as u16;
    // bytes * 2^16 + count, with |count| < 2^15, is past ±FLUSH_BYTES * 2^16 when the
    // bytes are (a count of one sign moves the boundary by one byte).
    const SPAN: u64 = (FLUSH_BYTES as u64) << 16;
    let bytes_out = (packed as u64).wrapping_add(SPAN) >= 2 * SPAN;
    count_out | bytes_out
}

#[inline(always)]
fn track(bytes: i64, count: i64) {
    let _ = TALLY.try_with(|t| {
        let packed = t
            .packed
            .get()
            .wrapping_add((bytes << 16).wrapping_add(count));
        t.packed.set(packed);
        if past_flush(packed) {
            flush(t);
        }
    });
}

#[cold]
fn flush(t: &Tally) {
    let (bytes, count) = unpack(t.packed.replace(0));
    let bytes = BYTES.fetch_add(bytes, Ordering::Relaxed) + bytes;
    let count = COUNT.fetch_add(count, Ordering::Relaxed) + count;
    // Always folded, so the packed tally cannot overflow; only the sample is held back.
    if gate::is_open(USER_LEVEL) && !reentry::samples_held() {
        // Writing the sample may allocate a chunk, which must not sample again.
        reentry::hold_samples(|| {
            BYTES_TRACK.set(bytes as f64);
            COUNT_TRACK.set(count as f64);
        });
    }
}

/// Wraps a global allocator (usually [`std::alloc::System`]) to keep host memory
/// counters; see the [module documentation](self).
#[derive(Debug, Default)]
pub struct TrackingAllocator<A> {
    inner: A,
}

impl<A> TrackingAllocator<A> {
    /// Wraps `inner`; usable in a `static`.
    pub const fn new(inner: A) -> TrackingAllocator<A> {
        TrackingAllocator { inner }
    }

    /// Bytes in use: the process total plus the calling thread's tally.
    pub fn bytes_in_use() -> i64 {
        BYTES.load(Ordering::Relaxed) + TALLY.try_with(|t| unpack(t.packed.get()).0).unwrap_or(0)
    }

    /// Allocations in use: the process total plus the calling thread's tally.
    pub fn allocations_in_use() -> i64 {
        COUNT.load(Ordering::Relaxed) + TALLY.try_with(|t| unpack(t.packed.get()).1).unwrap_or(0)
    }
}

// SAFETY: every method forwards to `inner` with the caller's arguments unchanged and
// returns its result; the bookkeeping neither allocates through `self` nor touches the
// memory handed out.
unsafe impl<A: GlobalAlloc> GlobalAlloc for TrackingAllocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let ptr = unsafe { self.inner.alloc(layout) };
        if !ptr.is_null() {
            track(layout.size() as i64, 1);
        }
        ptr
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let ptr = unsafe { self.inner.alloc_zeroed(layout) };
        if !ptr.is_null() {
            track(layout.size() as i64, 1);
        }
        ptr
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { self.inner.dealloc(ptr, layout) };
        track(-(layout.size() as i64), -1);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received.
        let new = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            track(new_size as i64 - layout.size() as i64, 0);
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_tallies_add_bytes_and_counts_of_either_sign() {
        let mut packed = 0i64;
        for (bytes, count) in [
            (64i64, 1i64),
            (1 << 40, 1),
            (-64, -1),
            (-(1 << 40), -1),
            (-8, -1),
            (3, 0),
        ] {
            packed = packed.wrapping_add((bytes << 16).wrapping_add(count));
        }
        assert_eq!(unpack(packed), (-5, -1));
        assert_eq!(unpack((-(1i64 << 20) << 16) + 1000), (-(1 << 20), 1000));
    }

    #[test]
    fn the_packed_flush_check_agrees_with_the_unpacked_rule() {
        let near = |limit: i64| {
            let mut v: Vec<i64> = (-3..=3).flat_map(|d| [limit + d, -limit + d]).collect();
            v.extend([0, 1, -1, limit / 2, -limit / 2, 10 * limit, -10 * limit]);
            v
        };
        for bytes in near(FLUSH_BYTES) {
            for count in near(FLUSH_COUNT) {
                let packed = (bytes << 16).wrapping_add(count);
                let exact = bytes.abs() >= FLUSH_BYTES || count.abs() >= FLUSH_COUNT;
                // Within one byte or one allocation of either limit, either answer is
                // right; anywhere else the two must agree.
                let at_edge = (bytes.abs() - FLUSH_BYTES).abs() <= 1
                    || (count.abs() - FLUSH_COUNT).abs() <= 1;
                if !at_edge {
                    assert_eq!(past_flush(packed), exact, "bytes {bytes}, count {count}");
                }
                if bytes.abs() > FLUSH_BYTES || count.abs() > FLUSH_COUNT {
                    assert!(
                        past_flush(packed),
                        "bytes {bytes}, count {count} must flush"
                    );
                }
                if bytes.abs() < FLUSH_BYTES - 1 && count.abs() < FLUSH_COUNT - 1 {
                    assert!(!past_flush(packed), "bytes {bytes}, count {count} must not");
                }
            }
        }
    }
}
