//! A per-thread flag the recording machinery raises around its own allocations.
//!
//! The tracking allocator writes a counter sample when a thread's tally folds into the
//! process totals. If that happened while the buffer writer was allocating a chunk, or
//! registering the thread under the registry's lock, the sample would re-enter the
//! writer half way through, or take that lock again and deadlock. So the machinery
//! raises this flag first, and the allocator holds its sample back while it is up
//! (the allocation itself is still counted). The allocator raises it too while it
//! writes a sample, since the sample may allocate a chunk.
//!
//! It lives below both the buffer and the allocator so that neither imports the other.

use std::cell::Cell;

thread_local! {
    // `const` and without a destructor: reachable from inside the global allocator
    // without allocating or registering anything.
    static HELD: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with this thread's allocation samples held back.
pub(crate) fn hold_samples<R>(f: impl FnOnce() -> R) -> R {
    let held = HELD.try_with(|h| h.replace(true)).unwrap_or(true);
    let result = f();
    let _ = HELD.try_with(|h| h.set(held));
    result
}

/// Whether this thread's allocation samples are held back now (or the thread is
/// exiting, when nothing more may be recorded on it).
pub(crate) fn samples_held() -> bool {
    HELD.try_with(Cell::get).unwrap_or(true)
}
