//! The record layout: what a thread's buffer is in memory, shared by its writer and
//! its readers.
//!
//! Records, each one slot of four `u64` words:
//!
//! | kind  | word 0          | word 1                      | word 2      | word 3        |
//! |-------|-----------------|-----------------------------|-------------|---------------|
//! | event | name pointer    | name length << 8 \| flags << 4 \| kind | start ticks | end ticks (0 while open) |
//! | field | key pointer     | key length << 8 \| tag << 4 \| kind | event sequence number | value bits, or string length |
//! | bytes | string bytes, 32 per slot, following their field |||  |
//! | sample | name pointer   | name length << 8 \| kind    | ticks       | value         |
//!
//! Every word is an atomic written with `Relaxed` ordering: on x86-64 and AArch64 that is
//! a plain store, and it keeps the concurrent read by the collector free of data races.
//! Names and keys are `&'static str`, stored as pointer and length; that is what makes
//! an annotation with no fields exactly one 32-byte slot.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use crate::field::OwnedValue;

/// Slots per chunk: 1024 × 32 bytes = 32 KiB.
pub(crate) const CHUNK_SLOTS: usize = 1024;
/// Slots a thread claims from the session's budget at a time; the cap on events is
/// shared by all threads without each record touching a shared cache line.
pub(super) const CLAIM: u64 = 256;
/// Longest string value stored; longer ones are cut at a char boundary.
pub(crate) const MAX_STR_BYTES: usize = 4096;

pub(super) const KIND_EVENT: u64 = 1;
pub(super) const KIND_FIELD: u64 = 2;
pub(super) const KIND_SAMPLE: u64 = 3;

/// Event flag: the `tracing` span this event is an entry of closed when the event
/// ended. Set by the event's thread after the end, in place of a `CLOSED` sample: a
/// span entered once and closed at once (most are) then costs two records, not three.
pub(super) const EVENT_CLOSES_SPAN: u64 = 1 << 4;

pub(super) const TAG_I64: u64 = 0;
pub(super) const TAG_U64: u64 = 1;
pub(super) const TAG_F64: u64 = 2;
pub(super) const TAG_BOOL: u64 = 3;
pub(super) const TAG_STR: u64 = 4;

/// One 32-byte record.
#[repr(C, align(32))]
pub(crate) struct Slot(pub(super) [AtomicU64; 4]);

impl Slot {
    pub(super) fn new() -> Slot {
        Slot([
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
            AtomicU64::new(0),
        ])
    }

    #[inline(always)]
    pub(super) fn write(&self, words: [u64; 4]) {
        for (word, value) in self.0.iter().zip(words) {
            word.store(value, Ordering::Relaxed);
        }
    }

    pub(super) fn read(&self) -> [u64; 4] {
        [
            self.0[0].load(Ordering::Relaxed),
            self.0[1].load(Ordering::Relaxed),
            self.0[2].load(Ordering::Relaxed),
            self.0[3].load(Ordering::Acquire),
        ]
    }
}

pub(super) struct Chunk {
    /// A fixed-size array, not a slice: the writer's index is then checked against a
    /// constant it has just compared with, so the hot path has no length to load and
    /// no bounds-check branch (branches there are costly on Intel cores whose jump
    /// cache misses branches that straddle 32-byte lines).
    pub(super) slots: Box<[Slot; CHUNK_SLOTS]>,
    pub(super) next: OnceLock<Box<Chunk>>,
    /// In a ring: the sequence number of the first record head written in this chunk
    /// on the writer's current lap through it (a string's bytes may spill over from
    /// the chunk before), so a reader can start decoding there.
    pub(super) first_head: AtomicU64,
}

impl Chunk {
    pub(super) fn new() -> Box<Chunk> {
        Box::new(Chunk {
            // Built on the heap: a 32 KiB array on the stack of a thread with a small
            // one could overflow it.
            slots: (0..CHUNK_SLOTS)
                .map(|_| Slot::new())
                .collect::<Box<[Slot]>>()
                .try_into()
                .unwrap_or_else(|_| unreachable!("CHUNK_SLOTS slots were made")),
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
    /// The operating system's id of the thread (Linux's `gettid`), which a sampler
    /// of native stacks knows threads by; a per-process counter elsewhere.
    pub(crate) os_tid: u64,
    pub(super) head: Box<Chunk>,
    /// The session whose records the buffer holds.
    pub(super) generation: AtomicU64,
    /// Complete slots of that session (records written since it began, in a ring).
    pub(super) published: AtomicU64,
    /// In a ring: the end of the slots the writer may be overwriting now, stored
    /// before it touches them. A string field is many slots written before one
    /// publish, so `published` alone cannot tell a reader which old slots are torn.
    pub(super) writing: AtomicU64,
    /// Slots of the ring the session writes in; 0 when it writes a list that grows.
    pub(super) ring: AtomicU64,
    pub(super) dropped_events: AtomicU64,
    pub(super) dropped_fields: AtomicU64,
    pub(super) exited: AtomicBool,
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
        /// The span this event is an entry of closed at `end`.
        closes_span: bool,
    },
    Field {
        event_seq: u64,
        key: &'static str,
        value: OwnedValue,
    },
    /// A timestamped value that is not an event: a counter's sample, or a span
    /// closing (see `crate::tags`).
    Sample {
        name: &'static str,
        at: u64,
        value: u64,
    },
}

/// What a buffer lost to the session's cap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dropped {
    pub(crate) events: u64,
    pub(crate) fields: u64,
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
