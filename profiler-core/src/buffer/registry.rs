//! The registry of thread buffers, the settings of the session they write (its
//! generation, budget and ring size), and reading one buffer's records back.
//!
//! The registry's lock is taken once per thread lifetime, when the thread first
//! records, and by the collector; never by a record.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::decode::{decode, SlotIter};
use super::layout::{Dropped, Record, Slot, ThreadBuffer, CHUNK_SLOTS};
use super::ring;
use crate::reentry;

impl ThreadBuffer {
    /// Reads the records of session `generation`, in the order they were written.
    /// Returns `None` when the thread recorded nothing in that session.
    ///
    /// From a ring it reads what the ring still holds, while the thread goes on
    /// writing (see [`ring`]).
    pub(crate) fn read(&self, generation: u64, visit: impl FnMut(Record)) -> Option<Dropped> {
        if self.generation.load(Ordering::Acquire) != generation {
            return None;
        }
        let published = self.published.load(Ordering::Acquire);
        let ring = self.ring.load(Ordering::Relaxed);
        if ring == 0 {
            let slots = SlotIter::releasing(&self.head, published, KEEP_CHUNKS);
            decode(0, slots.map(Slot::read), visit);
        } else {
            let (start, words) = ring::copy(self, published, ring);
            decode(start, words.into_iter(), visit);
        }
        Some(Dropped {
            events: self.dropped_events.load(Ordering::Relaxed),
            fields: self.dropped_fields.load(Ordering::Relaxed),
        })
    }

    /// How many records [`read`](Self::read) would visit at most: a capacity hint.
    pub(crate) fn records(&self, generation: u64) -> u64 {
        if self.generation.load(Ordering::Acquire) != generation {
            return 0;
        }
        let published = self.published.load(Ordering::Acquire);
        match self.ring.load(Ordering::Relaxed) {
            0 => published,
            ring => published.min(ring),
        }
    }

    /// Complete slots of the current session (for tests of the record layout).
    #[cfg(test)]
    pub(crate) fn published(&self) -> u64 {
        self.published.load(Ordering::Acquire)
    }
}

/// Chunks of a thread's list kept resident after `stop` reads them (32 MiB, 1Mi
/// records): those after give their pages back as they are read
/// (`decode::release_pages`), so that a long session's records do not sit beside the
/// profile built from them, and ordinary sessions never fault their buffers in again.
const KEEP_CHUNKS: usize = 1024;

/// The current session: buffers holding another generation are stale.
pub(super) static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Slots the current session may still hand out.
pub(super) static BUDGET: AtomicU64 = AtomicU64::new(0);
/// Ring slots per thread for the current session; 0 for growing lists.
pub(super) static RING: AtomicU64 = AtomicU64::new(0);
pub(super) static NEXT_LINE_ID: AtomicU32 = AtomicU32::new(1);
static REGISTRY: Mutex<Vec<Arc<ThreadBuffer>>> = Mutex::new(Vec::new());

/// Begins session `generation` with room for `max_records` slots, and forgets the
/// buffers of threads that exited before it. With `ring` slots, each thread instead
/// keeps writing in a ring, overwriting its oldest records, and `max_records` is not
/// used.
///
/// The ring is `ring` rounded up to whole chunks, plus one: a snapshot can only start
/// decoding at a chunk's first record, and must leave out what the writer reuses
/// while it copies, so without the spare chunk a one-chunk ring read just after it
/// wrapped would hold next to nothing.
pub(crate) fn begin_session(generation: u64, max_records: u64, ring: u64) {
    let chunks = if ring == 0 {
        0
    } else {
        ring.div_ceil(CHUNK_SLOTS as u64) + 1
    };
    let ring = chunks * CHUNK_SLOTS as u64;
    RING.store(ring, Ordering::Relaxed);
    // No cap in a ring; half the range keeps the budget arithmetic from overflowing.
    let budget = if ring == 0 { max_records } else { u64::MAX / 2 };
    BUDGET.store(budget, Ordering::Relaxed);
    GENERATION.store(generation, Ordering::Release);
    // Freeing a buffer can make the tracking allocator record a sample, which would
    // take the registry's lock again on a thread not yet registered.
    reentry::hold_samples(|| registry().retain(|b| !b.exited.load(Ordering::Acquire)));
}

/// Every buffer, including those of threads that exited during the session.
pub(crate) fn buffers() -> Vec<Arc<ThreadBuffer>> {
    reentry::hold_samples(|| registry().clone())
}

pub(super) fn registry() -> std::sync::MutexGuard<'static, Vec<Arc<ThreadBuffer>>> {
    // A panic while holding the lock cannot leave the Vec inconsistent.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}
