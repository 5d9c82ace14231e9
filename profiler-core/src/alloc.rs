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
/// It is kept offset by [`BIAS`], which makes both halves non-negative while in
/// range, so that whether to fold is one test against [`OUT_OF_RANGE`].
/// `const`-initialised and without a destructor, so reaching it from inside the
/// allocator never allocates or registers anything.
struct Tally {
    biased: Cell<i64>,
}

thread_local! {
    static TALLY: Tally = const {
        Tally {
            biased: Cell::new(BIAS),
        }
    };
}

/// What a tally holds when nothing is left to fold: [`FLUSH_BYTES`] in the bytes
/// half and [`FLUSH_COUNT`] in the count half, so a net count in
/// `-FLUSH_COUNT..FLUSH_COUNT` reads as `0..2 * FLUSH_COUNT` (bits 0 to 10), and net
/// bytes in `-FLUSH_BYTES..FLUSH_BYTES` as `0..2 * FLUSH_BYTES` (bits 16 to 32).
const BIAS: i64 = (FLUSH_BYTES << 16) + FLUSH_COUNT;
/// The bits a biased tally has set exactly when a half left its range: above either
/// half's range, or the sign bits a half below zero borrows into (bits 11 to 15 for
/// the count, which keep its borrow from reaching the bytes unseen).
const OUT_OF_RANGE: i64 = !((2 * FLUSH_COUNT - 1) | ((2 * FLUSH_BYTES - 1) << 16));

/// (net bytes, net count) of a biased tally.
#[inline(always)]
fn unpack(biased: i64) -> (i64, i64) {
    let packed = biased.wrapping_sub(BIAS);
    let count = (packed << 48) >> 48;
    ((packed - count) >> 16, count)
}

/// Whether a biased tally's net count has left `-FLUSH_COUNT..FLUSH_COUNT` or its net
/// bytes `-FLUSH_BYTES..FLUSH_BYTES`: one test of the word, on every allocation. Two
/// range checks of the unbiased halves (add, compare, branch, each) were a third of
/// what tracking added to a malloc-free pair here; unpacking it and taking absolute
/// values, before that, half.
#[inline(always)]
fn past_flush(biased: i64) -> bool {
    biased & OUT_OF_RANGE != 0
}

#[inline(always)]
fn track(bytes: i64, count: i64) {
    let _ = TALLY.try_with(|t| {
        let biased = t
            .biased
            .get()
            .wrapping_add((bytes << 16).wrapping_add(count));
        t.biased.set(biased);
        if past_flush(biased) {
            flush(t);
        }
    });
}

#[cold]
fn flush(t: &Tally) {
    let (bytes, count) = unpack(t.biased.replace(BIAS));
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
        BYTES.load(Ordering::Relaxed) + TALLY.try_with(|t| unpack(t.biased.get()).0).unwrap_or(0)
    }

    /// Allocations in use: the process total plus the calling thread's tally.
    pub fn allocations_in_use() -> i64 {
        COUNT.load(Ordering::Relaxed) + TALLY.try_with(|t| unpack(t.biased.get()).1).unwrap_or(0)
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
    fn biased_tallies_add_bytes_and_counts_of_either_sign() {
        let mut biased = BIAS;
        assert_eq!(unpack(biased), (0, 0));
        for (bytes, count) in [
            (64i64, 1i64),
            (1 << 40, 1),
            (-64, -1),
            (-(1 << 40), -1),
            (-8, -1),
            (3, 0),
        ] {
            biased = biased.wrapping_add((bytes << 16).wrapping_add(count));
        }
        assert_eq!(unpack(biased), (-5, -1));
        let packed = (-(1i64 << 20) << 16) + 1000;
        assert_eq!(unpack(BIAS + packed), (-(1 << 20), 1000));
    }

    #[test]
    fn the_flush_test_is_exactly_the_ranges() {
        let near = |limit: i64| {
            let mut v: Vec<i64> = (-3..=3).flat_map(|d| [limit + d, -limit + d]).collect();
            v.extend([0, 1, -1, limit / 2, -limit / 2, 10 * limit, -10 * limit]);
            v
        };
        for bytes in near(FLUSH_BYTES).into_iter().chain([1 << 40, -(1 << 40)]) {
            for count in near(FLUSH_COUNT) {
                let biased = BIAS.wrapping_add((bytes << 16).wrapping_add(count));
                let out = !(-FLUSH_BYTES..FLUSH_BYTES).contains(&bytes)
                    || !(-FLUSH_COUNT..FLUSH_COUNT).contains(&count);
                assert_eq!(past_flush(biased), out, "bytes {bytes}, count {count}");
                assert_eq!(unpack(biased), (bytes, count));
            }
        }
    }
}
