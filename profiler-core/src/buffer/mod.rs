//! Per-thread record buffers: where the hot path writes, and the collector reads.
//!
//! Each thread that records owns a [`ThreadBuffer`]: a linked list of fixed-size
//! chunks of 32-byte [`Slot`]s. Only the owning thread writes; it publishes how many
//! slots are complete with one release store, and the collector reads that many with
//! one acquire load, so neither side ever takes a lock. The only lock is the registry's,
//! taken once per thread lifetime when the thread first records, and by the collector.
//!
//! Steady state allocates nothing: chunks are kept for the thread's lifetime and reused
//! by every later session (a session that records more than any before it grows the
//! list by one 32 KiB chunk per 1024 records, amortised over those records).
//!
//! A flight recorder's session instead writes each thread's records in a ring of a
//! fixed number of chunks, overwriting the oldest; [`ring`] says how a snapshot reads
//! it while it is being written.
//!
//! Records, each one slot of four `u64` words:
//!
//! | kind  | word 0          | word 1                      | word 2      | word 3        |
//! |-------|-----------------|-----------------------------|-------------|---------------|
//! | event | name pointer    | name length << 8 \| kind    | start ticks | end ticks (0 while open) |
//! | field | key pointer     | key length << 8 \| tag << 4 \| kind | event sequence number | value bits, or string length |
//! | bytes | string bytes, 32 per slot, following their field |||  |
//! | mark  | name pointer    | name length << 8 \| kind    | ticks       | value         |
//!
//! Every word is an atomic written with `Relaxed` ordering: on x86-64 and AArch64 that is
//! a plain store, and it keeps the concurrent read by the collector free of data races.
//! Names and keys are `&'static str`, stored as pointer and length; that is what makes
//! an annotation with no fields exactly one 32-byte slot.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

mod decode;
mod ring;
mod writer;

use decode::{decode, SlotIter};
pub(crate) use writer::{
    add_field, begin_event, end_event, instant_event, mark, scope_id, span_event, EventRef,
};

/// Slots per chunk: 1024 × 32 bytes = 32 KiB.
pub(crate) const CHUNK_SLOTS: usize = 1024;
/// Slots a thread claims from the session's budget at a time; the cap on events is
/// shared by all threads without each record touching a shared cache line.
const CLAIM: u64 = 256;
/// Longest string value stored; longer ones are cut at a char boundary.
pub(crate) const MAX_STR_BYTES: usize = 4096;

const KIND_EVENT: u64 = 1;
const KIND_FIELD: u64 = 2;
const KIND_MARK: u64 = 3;

const TAG_I64: u64 = 0;
const TAG_U64: u64 = 1;
const TAG_F64: u64 = 2;
const TAG_BOOL: u64 = 3;
const TAG_STR: u64 = 4;

/// One 32-byte record.
#[repr(C, align(32))]
pub(crate) struct Slot([AtomicU64; 4]);

impl Slot {
    fn new() -> Slot {
        Slot([
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
        ])
    }

    #[inline(always)]
    fn write(&self, words: [u64; 4]) {
        for (word, value) in self.0.iter().zip(words) {
            word.store(value, Ordering::Relaxed);
        }
    }

    fn read(&self) -> [u64; 4] {
        [
            self.0[0].load(Ordering::Relaxed),
            self.0[1].load(Ordering::Relaxed),
            self.0[2].load(Ordering::Relaxed),
            self.0[3].load(Ordering::Acquire),
        ]
    }
}

struct Chunk {
    slots: Box<[Slot]>,
    next: OnceLock<Box<Chunk>>,
    /// In a ring: the sequence number of the first record head written in this chunk
    /// on the writer's current lap through it (a string's bytes may spill over from
    /// the chunk before), so a reader can start decoding there.
    first_head: AtomicU64,
}

impl Chunk {
    fn new() -> Box<Chunk> {
        Box::new(Chunk {
            slots: (0..CHUNK_SLOTS).map(|_| Slot::new()).collect(),
            next: OnceLock::new(),
            first_head: AtomicU64::new(u64::MAX),
        })
    }
}

/// The shared half of a thread's buffer: what the collector reads.
pub(crate) struct ThreadBuffer {
    /// Line id on the host plane: unique in the process, so unique in its low 32 bits.
    pub(crate) line_id: u32,
    /// Thread name, or `Thread <os tid>` for unnamed threads.
    pub(crate) name: String,
    head: Box<Chunk>,
    /// The session whose records the buffer holds.
    generation: AtomicU64,
    /// Complete slots of that session (records written since it began, in a ring).
    published: AtomicU64,
    /// In a ring: the end of the slots the writer may be overwriting now, stored
    /// before it touches them. A string field is many slots written before one
    /// publish, so `published` alone cannot tell a reader which old slots are torn.
    writing: AtomicU64,
    /// Slots of the ring the session writes in; 0 when it writes a list that grows.
    ring: AtomicU64,
    dropped_events: AtomicU64,
    dropped_fields: AtomicU64,
    exited: AtomicBool,
}

/// A record as the collector sees it.
#[derive(Debug, PartialEq)]
pub(crate) enum Record {
    Event {
        seq: u64,
        name: &'static str,
        start: u64,
        /// 0 while the event is open.
        end: u64,
    },
    Field {
        event_seq: u64,
        key: &'static str,
        value: OwnedValue,
    },
    /// A timestamped fact about something other than an event (a span closing).
    Mark {
        name: &'static str,
        at: u64,
        value: u64,
    },
}

/// A field value read back from a buffer.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum OwnedValue {
    I64(i64),
    U64(u64),
    F64(f64),
    Bool(bool),
    Str(String),
}

/// What a buffer lost to the session's cap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dropped {
    pub(crate) events: u64,
    pub(crate) fields: u64,
}

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
            let slots = SlotIter::new(&self.head, published);
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

    /// Complete slots of the current session (for tests of the record layout).
    #[cfg(test)]
    pub(crate) fn published(&self) -> u64 {
        self.published.load(Ordering::Acquire)
    }
}

/// The current session: buffers holding another generation are stale.
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Slots the current session may still hand out.
static BUDGET: AtomicU64 = AtomicU64::new(0);
/// Ring slots per thread for the current session; 0 for growing lists.
static RING: AtomicU64 = AtomicU64::new(0);
static NEXT_LINE_ID: AtomicU32 = AtomicU32::new(1);
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
    crate::alloc::without_samples(|| registry().retain(|b| !b.exited.load(Ordering::Acquire)));
}

/// Every buffer, including those of threads that exited during the session.
pub(crate) fn buffers() -> Vec<Arc<ThreadBuffer>> {
    crate::alloc::without_samples(|| registry().clone())
}

fn registry() -> std::sync::MutexGuard<'static, Vec<Arc<ThreadBuffer>>> {
    // A panic while holding the lock cannot leave the Vec inconsistent.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 32);
        assert_eq!(std::mem::align_of::<Slot>(), 32);
    }
}
