//! Host memory: [`TrackingAllocator`], a global allocator wrapper that keeps the bytes
//! and allocations in use and their peak, for [`crate::memory`] at any time and, while
//! a session records, as XProf's memory events of allocator `host` and as the
//! `host_bytes_in_use` and `host_allocations` counter tracks.
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
//! adds, and the peak's atomic maximum) once its net count passes [`FLUSH_COUNT`] or
//! its net bytes [`FLUSH_BYTES`]; only then, and only while a session records, is
//! anything written. So the totals, their peak, and the profile's memory timeline are
//! exact to within `FLUSH_BYTES` per thread; [`TrackingAllocator::bytes_in_use`]
//! includes the calling thread's tally. What a thread had not folded in when it
//! exited is lost, at most `FLUSH_BYTES`.
//!
//! # What a session records
//!
//! The heap's level at the session's start and end (on its `Profiler` line, from
//! `host_level` as session control reads it) and at each step's end (on the step's
//! line, `note_level`): points without a fold, so that a program whose memory is
//! steady, and whose tallies never fold, still has its level on the timeline.
//!
//! Each fold writes, on the folding thread's line, one event XProf's Memory Profile
//! reads (allocator `host`): a *snapshot*, `MemoryAllocation` when the thread's tally
//! grew since its last fold and `MemoryDeallocation` when it shrank, carrying the bytes
//! in use after the fold and their peak (and 0 requested bytes at address 0, so that
//! XProf's breakdown at the peak counts only real blocks). An allocation or release of
//! at least [`large_allocation_threshold`] bytes (1 MiB unless
//! [`set_large_allocation_threshold`] says otherwise) always folds and becomes an
//! event of its own with its size and address, which XProf pairs by address. At
//! collection, each event gets the annotations open on its thread as its op (`tf_op`,
//! and the innermost as `region_type`), so XProf's tables name the layer that
//! allocated. The counter tracks get a sample per fold too.
//!
//! Large allocations cost nothing extra on the path every allocation takes: a block of
//! at least twice [`FLUSH_BYTES`] always pushes the tally out of its range, so only
//! the fold, already off that path, compares its size with the threshold.
//!
//! Allocations made by the recording machinery itself (a buffer chunk, a thread's
//! registration, the collector's copy of the buffer list) are counted but cannot
//! write anything: that would re-enter the writer or a lock it holds.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::buffer;
use crate::counter::Counter;
use crate::field::Value;
use crate::gate::{self, USER_LEVEL};
use crate::peaks::HOST;
use crate::reentry;
use crate::schema;
use crate::tags::{MemoryEvent, MEMORY_OF};

/// A thread folds its tally into the totals once its net count of allocations passes
/// this...
pub const FLUSH_COUNT: i64 = 1024;
/// ...or its net bytes pass this, either way.
pub const FLUSH_BYTES: i64 = 64 * 1024;

/// The smallest large-allocation threshold: a block this large always folds the
/// tally, so the fold sees it without a test on every allocation.
pub const MIN_LARGE_ALLOCATION: u64 = 2 * FLUSH_BYTES as u64;
/// The large-allocation threshold unless [`set_large_allocation_threshold`] changes it.
pub const DEFAULT_LARGE_ALLOCATION: u64 = 1 << 20;

static COUNT: AtomicI64 = AtomicI64::new(0);
static LARGE: AtomicU64 = AtomicU64::new(DEFAULT_LARGE_ALLOCATION);
static BYTES_TRACK: Counter = Counter::new(schema::HOST_BYTES_IN_USE);
static COUNT_TRACK: Counter = Counter::new(schema::HOST_ALLOCATIONS);

/// Where in its 4 KiB page a thread's tally word sits (x86-64 Linux, see [`Tally`]):
/// clear of glibc's per-thread allocator cache (its counts and list heads at page
/// offsets 0x010-0x290 in the main arena, 0x8e0-0xb60 in a thread's arena) and of the
/// C library's own thread-locals at the top of the page below.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
const TALLY_PAGE_OFFSET: usize = 0xc40;
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
const TALLY_PAGE_OFFSET: usize = 0;

/// A thread's tally, packed in one word so an allocation costs one add: net bytes
/// above bit 16, net count in the low 16 bits (two's complement, so one add updates
/// both; the count stays within ±2^15 because it is folded in at [`FLUSH_COUNT`]).
/// It is kept offset by [`BIAS`], which makes both halves non-negative while in
/// range, so that whether to fold is one test against [`OUT_OF_RANGE`].
/// `const`-initialised and without a destructor, so reaching it from inside the
/// allocator never allocates or registers anything.
///
/// On x86-64 Linux the word sits at a fixed offset in its page ([`TALLY_PAGE_OFFSET`]):
/// the struct is page-aligned, and the thread pointer with it (the C library aligns
/// every thread's static TLS to its largest alignment). Left where the linker put it,
/// the word's address could share its low 12 bits with what `malloc` and `free` read
/// right after the tally's store, and the core then takes the load for a possible
/// reload of that store (4K aliasing): with the word at glibc's cache counts (offset
/// 0x010), tracking cost 1.07x `System` in the allocator bench where elsewhere it costs
/// 1.00x (an Intel Xeon VM). Where the linker happened to put it depended on the
/// binary and the C library, hence figures from 1.00x to 1.24x for the same code.
/// The price is up to 4 KiB more static TLS per thread.
#[cfg_attr(all(target_os = "linux", target_arch = "x86_64"), repr(C, align(4096)))]
struct Tally {
    _pad: [u8; TALLY_PAGE_OFFSET],
    biased: Cell<i64>,
}

thread_local! {
    static TALLY: Tally = const {
        Tally {
            _pad: [0; TALLY_PAGE_OFFSET],
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

/// Adds one call's `bytes` and `count` (+1 an allocation, -1 a release, 0 a resize)
/// to the thread's tally; `ptr` is the block, for the fold to name when it is large.
/// Returns `ptr`: the fold hands it back, so that the caller, which goes on with it,
/// need not keep it in a register of its own across the fold's call (holding it so
/// cost a move on every allocation, 1.00x -> 1.02-1.05x `System` in the bench).
#[inline(always)]
fn track(bytes: i64, count: i64, ptr: *mut u8) -> *mut u8 {
    TALLY
        .try_with(|t| {
            // The packed delta, a constant at most call sites, is also what the fold
            // is told: one register, where the size and count apart took two more.
            let delta = (bytes << 16).wrapping_add(count);
            let biased = t.biased.get().wrapping_add(delta);
            t.biased.set(biased);
            if past_flush(biased) {
                flush(t, delta, ptr)
            } else {
                ptr
            }
        })
        .unwrap_or(ptr)
}

/// Folds the tally into the totals; the call that pushed it out of range added the
/// packed `delta` (its size and count, as [`unpack`] reads them) for the block at `ptr`:
/// an allocation (count 1), a release (-1) or a resize (0). Returns `ptr`.
#[cold]
fn flush(t: &Tally, delta: i64, ptr: *mut u8) -> *mut u8 {
    let (bytes, count) = unpack(delta.wrapping_add(BIAS));
    let (net, n) = unpack(t.biased.replace(BIAS));
    let in_use = HOST.add(net);
    let allocations = COUNT.fetch_add(n, Ordering::Relaxed) + n;
    // Always folded, so the packed tally cannot overflow; only the record is held back.
    if gate::is_open(USER_LEVEL) && !reentry::samples_held() {
        let block = (count != 0 && bytes.unsigned_abs() >= LARGE.load(Ordering::Relaxed))
            .then_some((bytes, ptr));
        // Writing may allocate a chunk, which must not write again.
        reentry::hold_samples(|| record(in_use, allocations, net, block));
    }
    ptr
}

/// Writes a fold: the counter samples, and the memory event of a large `block`
/// (signed size and address) or else a snapshot of a fold of `net` bytes.
fn record(in_use: i64, allocations: i64, net: i64, block: Option<(i64, *mut u8)>) {
    BYTES_TRACK.set(in_use as f64);
    COUNT_TRACK.set(allocations as f64);
    let peak = HOST.peak().max(in_use);
    let grew = |bytes: i64| {
        if bytes >= 0 {
            schema::MEMORY_ALLOCATION
        } else {
            schema::MEMORY_DEALLOCATION
        }
    };
    match block {
        Some((bytes, ptr)) => buffer::instant_event_with(
            grew(bytes),
            &[
                (MEMORY_OF, Value::U64(MemoryEvent::Block.tag())),
                (schema::BYTES_ALLOCATED, Value::I64(in_use)),
                (schema::PEAK_BYTES_IN_USE, Value::I64(peak)),
                (schema::ALLOCATION_BYTES, Value::I64(bytes.abs())),
                // XProf reads the address as an int64, as TSL writes it.
                (schema::ADDRESS, Value::I64(ptr as i64)),
            ],
        ),
        None => buffer::instant_event_with(
            grew(net),
            &[
                (MEMORY_OF, Value::U64(MemoryEvent::Snapshot.tag())),
                (schema::BYTES_ALLOCATED, Value::I64(in_use)),
                (schema::PEAK_BYTES_IN_USE, Value::I64(peak)),
            ],
        ),
    }
}

/// The host heap at one moment: what a session records at its start and end, and a
/// step at its end, whether or not any thread folded its tally since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HostLevel {
    /// Bytes in use: the process total plus the calling thread's tally.
    pub(crate) in_use: i64,
    /// The highest bytes in use since the last reset, this moment's included.
    pub(crate) peak: i64,
    /// Allocations in use, counted as `in_use` is.
    pub(crate) allocations: i64,
}

/// The host heap now, as the calling thread sees it; `None` without a
/// [`TrackingAllocator`], and in a build whose annotations are compiled out (its
/// sessions record nothing on the host, the heap's level at their edges included).
/// Exact for the calling thread, within [`FLUSH_BYTES`] for each other.
pub(crate) fn host_level() -> Option<HostLevel> {
    if gate::STATIC_MAX_LEVEL == 0 || !host_tracked() {
        return None;
    }
    let (net, n) = own_tally();
    let in_use = HOST.in_use() + net;
    Some(HostLevel {
        in_use,
        peak: HOST.peak().max(in_use),
        allocations: COUNT.load(Ordering::Relaxed) + n,
    })
}

/// Records the host heap's level now on this thread's line, as a fold would (a
/// snapshot event and the two counter samples), without folding: how a step's end
/// puts a point on the memory timeline of a program whose tallies never fold (one that
/// allocates and frees the same each step). Nothing while no session records user
/// annotations, or without a tracking allocator.
pub(crate) fn note_level() {
    if !gate::is_open(USER_LEVEL) || reentry::samples_held() {
        return;
    }
    let Some(level) = host_level() else {
        return;
    };
    reentry::hold_samples(|| record(level.in_use, level.allocations, 0, None));
}

/// The calling thread's tally: (net bytes, net count) not yet folded in.
fn own_tally() -> (i64, i64) {
    TALLY.try_with(|t| unpack(t.biased.get())).unwrap_or((0, 0))
}

/// Host bytes in use: the process total plus the calling thread's tally.
pub(crate) fn host_bytes_in_use() -> i64 {
    HOST.in_use() + own_tally().0
}

/// Whether a [`TrackingAllocator`] counts this process's allocations: it folded a
/// tally once, or the calling thread's holds something.
pub(crate) fn host_tracked() -> bool {
    HOST.seen() || own_tally() != (0, 0)
}

/// Sets the size from which an allocation or release is a memory event of its own
/// while a session records (`u64::MAX`: none is); returns the threshold in force,
/// which is never below [`MIN_LARGE_ALLOCATION`] (128 KiB: smaller blocks are seen
/// only in their thread's folds).
pub fn set_large_allocation_threshold(bytes: u64) -> u64 {
    let bytes = bytes.max(MIN_LARGE_ALLOCATION);
    LARGE.store(bytes, Ordering::Relaxed);
    bytes
}

/// The size from which an allocation or release is a memory event of its own; see
/// [`set_large_allocation_threshold`].
pub fn large_allocation_threshold() -> u64 {
    LARGE.load(Ordering::Relaxed)
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
        host_bytes_in_use()
    }

    /// Allocations in use: the process total plus the calling thread's tally.
    pub fn allocations_in_use() -> i64 {
        COUNT.load(Ordering::Relaxed) + own_tally().1
    }
}

/// A resize that involves a large block: counted as the release of the old block and
/// the allocation of the new one, so a session pairs them by address as it does any
/// other large block (a resize usually moves it).
#[cold]
fn track_large_resize(old: *mut u8, old_size: usize, new: *mut u8, new_size: usize) {
    track(-(old_size as i64), -1, old);
    track(new_size as i64, 1, new);
}

// SAFETY: every method forwards to `inner` with the caller's arguments unchanged and
// returns its result; the bookkeeping neither allocates through `self` nor touches the
// memory handed out.
unsafe impl<A: GlobalAlloc> GlobalAlloc for TrackingAllocator<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let ptr = unsafe { self.inner.alloc(layout) };
        if ptr.is_null() {
            return ptr;
        }
        track(layout.size() as i64, 1, ptr)
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as received.
        let ptr = unsafe { self.inner.alloc_zeroed(layout) };
        if ptr.is_null() {
            return ptr;
        }
        track(layout.size() as i64, 1, ptr)
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Counted before the release, with the pointer the fold hands back: counted
        // after it, the pointer the fold may need had to be kept across `free` in a
        // register of its own, a move on every allocation.
        let ptr = track(-(layout.size() as i64), -1, ptr);
        // SAFETY: forwarded as received (the fold returns `ptr` unchanged).
        unsafe { self.inner.dealloc(ptr, layout) };
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as received.
        let new = unsafe { self.inner.realloc(ptr, layout, new_size) };
        if new.is_null() {
            return new;
        }
        if layout.size().max(new_size) as u64 >= MIN_LARGE_ALLOCATION {
            track_large_resize(ptr, layout.size(), new, new_size);
            new
        } else {
            track(new_size as i64 - layout.size() as i64, 0, new)
        }
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

    /// The fold sees every large block only because such a block always leaves the
    /// range, whatever the tally held before it.
    #[test]
    fn a_block_of_the_smallest_threshold_always_folds() {
        let size = MIN_LARGE_ALLOCATION as i64;
        for held in [-FLUSH_BYTES, -1, 0, 1, FLUSH_BYTES - 1] {
            for count in [-FLUSH_COUNT, 0, FLUSH_COUNT - 1] {
                let before = BIAS.wrapping_add((held << 16).wrapping_add(count));
                assert!(!past_flush(before));
                for (bytes, n) in [(size, 1), (-size, -1)] {
                    let after = before.wrapping_add((bytes << 16).wrapping_add(n));
                    assert!(past_flush(after), "held {held}, count {count}, {bytes}");
                }
            }
        }
    }

    #[test]
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    fn the_tally_word_sits_at_its_page_offset_on_every_thread() {
        let offset = || TALLY.with(|t| std::ptr::from_ref(&t.biased) as usize % 4096);
        assert_eq!(offset(), TALLY_PAGE_OFFSET);
        let other = std::thread::spawn(offset).join().expect("thread");
        assert_eq!(other, TALLY_PAGE_OFFSET);
    }

    #[test]
    fn the_threshold_never_goes_below_what_the_fold_can_see() {
        let before = large_allocation_threshold();
        assert_eq!(set_large_allocation_threshold(1), MIN_LARGE_ALLOCATION);
        assert_eq!(set_large_allocation_threshold(4 << 20), 4 << 20);
        assert_eq!(large_allocation_threshold(), 4 << 20);
        set_large_allocation_threshold(before);
    }
}
