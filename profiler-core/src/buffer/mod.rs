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

#![allow(unsafe_code)]

use std::cell::{Cell, OnceCell};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::field::Value;

mod decode;
mod ring;

use decode::{decode, SlotIter};

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
    registry().retain(|b| !b.exited.load(Ordering::Acquire));
}

/// Every buffer, including those of threads that exited during the session.
pub(crate) fn buffers() -> Vec<Arc<ThreadBuffer>> {
    crate::alloc::without_samples(|| registry().clone())
}

fn registry() -> std::sync::MutexGuard<'static, Vec<Arc<ThreadBuffer>>> {
    // A panic while holding the lock cannot leave the Vec inconsistent.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writing half of a thread's buffer, in a thread-local.
///
/// It has no destructor, so reaching it is a plain offset from the thread pointer: a
/// thread-local with a destructor costs a state check on every access. What needs
/// dropping (the `Arc` that keeps the buffer alive) lives in [`Registration`], whose
/// destructor marks this writer exited before the buffer can go away.
///
/// Cells rather than `&mut`: the hot path may be re-entered from inside itself (an
/// allocation of a new chunk can be observed by a tracking allocator that records),
/// and every method leaves the cells consistent before anything that could re-enter.
struct Writer {
    /// Null until registered, and again once the thread's registration dropped.
    buffer: Cell<*const ThreadBuffer>,
    exited: Cell<bool>,
    generation: Cell<u64>,
    chunk: Cell<*const Chunk>,
    pos: Cell<usize>,
    seq: Cell<u64>,
    budget: Cell<u64>,
    /// Ring slots of the session being written; 0 for a growing list.
    ring: Cell<u64>,
    /// Index of `chunk` in the list.
    chunk_index: Cell<u64>,
    /// In a ring: the next record head is the first in its chunk on this lap.
    first_head: Cell<bool>,
}

/// Owns the thread's buffer for as long as the thread runs.
struct Registration(OnceCell<Arc<ThreadBuffer>>);

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(buffer) = self.0.get() {
            buffer.exited.store(true, Ordering::Release);
        }
        WRITER.with(|w| {
            w.exited.set(true);
            w.buffer.set(std::ptr::null());
            w.chunk.set(std::ptr::null());
        });
    }
}

thread_local! {
    static WRITER: Writer = const {
        Writer {
            buffer: Cell::new(std::ptr::null()),
            exited: Cell::new(false),
            generation: Cell::new(0),
            chunk: Cell::new(std::ptr::null()),
            pos: Cell::new(0),
            seq: Cell::new(0),
            budget: Cell::new(0),
            ring: Cell::new(0),
            chunk_index: Cell::new(0),
            first_head: Cell::new(false),
        }
    };
    static REGISTRATION: Registration = const { Registration(OnceCell::new()) };
}

/// Where an open event lives, so its guard can close it and add fields.
#[derive(Debug)]
pub(crate) struct EventRef {
    slot: *const Slot,
    seq: u64,
    generation: u64,
}

impl Writer {
    /// The thread's buffer, once registered and until the thread exits.
    #[inline(always)]
    fn buffer(&self) -> Option<&ThreadBuffer> {
        // SAFETY: a non-null pointer was taken from the `Arc` in this thread's
        // `Registration`, which holds it until its destructor nulls this pointer.
        unsafe { self.buffer.get().as_ref() }
    }

    #[cold]
    fn register(&self) -> bool {
        let registered = crate::alloc::without_samples(|| {
            REGISTRATION.try_with(|r| {
                let buffer = r.0.get_or_init(|| {
                    let line_id = NEXT_LINE_ID.fetch_add(1, Ordering::Relaxed);
                    let name = std::thread::current()
                        .name()
                        .map(str::to_owned)
                        .unwrap_or_else(|| format!("Thread {}", os_thread_id()));
                    let buffer = Arc::new(ThreadBuffer {
                        line_id,
                        name,
                        head: Chunk::new(),
                        generation: AtomicU64::new(0),
                        published: AtomicU64::new(0),
                        writing: AtomicU64::new(0),
                        ring: AtomicU64::new(0),
                        dropped_events: AtomicU64::new(0),
                        dropped_fields: AtomicU64::new(0),
                        exited: AtomicBool::new(false),
                    });
                    registry().push(Arc::clone(&buffer));
                    buffer
                });
                self.buffer.set(Arc::as_ptr(buffer));
            })
        });
        if registered.is_err() {
            // The thread is shutting down: record nothing more on it.
            self.exited.set(true);
        }
        registered.is_ok()
    }

    /// Starts writing session `generation` from the first chunk.
    #[cold]
    fn reset(&self, generation: u64) -> bool {
        if self.exited.get() || (self.buffer.get().is_null() && !self.register()) {
            return false;
        }
        let Some(buffer) = self.buffer() else {
            return false;
        };
        // Order matters to the collector: it must never pair the new generation with
        // the old session's count.
        let ring = RING.load(Ordering::Relaxed);
        buffer.published.store(0, Ordering::Relaxed);
        buffer.writing.store(0, Ordering::Relaxed);
        buffer.dropped_events.store(0, Ordering::Relaxed);
        buffer.dropped_fields.store(0, Ordering::Relaxed);
        buffer.ring.store(ring, Ordering::Relaxed);
        buffer.generation.store(generation, Ordering::Release);
        self.chunk.set(&*buffer.head);
        self.pos.set(0);
        self.seq.set(0);
        self.budget.set(0);
        self.ring.set(ring);
        self.chunk_index.set(0);
        self.first_head.set(ring != 0);
        self.generation.set(generation);
        true
    }

    /// Makes room for `n` slots in the current session, or says there is none.
    #[inline(always)]
    fn reserve(&self, n: u64) -> bool {
        let generation = GENERATION.load(Ordering::Relaxed);
        if self.generation.get() != generation && !self.reset(generation) {
            return false;
        }
        self.budget.get() >= n || self.claim(n)
    }

    #[cold]
    fn claim(&self, n: u64) -> bool {
        if self.exited.get() {
            return false;
        }
        let want = n.max(CLAIM);
        let taken = BUDGET.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            (left + self.budget.get() >= n).then(|| left - left.min(want))
        });
        match taken {
            Ok(left) => {
                self.budget.set(self.budget.get() + left.min(want));
                true
            }
            Err(_) => false,
        }
    }

    /// The next slot. Callers reserved it first.
    #[inline(always)]
    fn next_slot(&self) -> &Slot {
        let mut pos = self.pos.get();
        if pos == CHUNK_SLOTS {
            self.next_chunk();
            pos = 0;
        }
        self.pos.set(pos + 1);
        self.budget.set(self.budget.get() - 1);
        // SAFETY: a successful reservation means the thread is registered and not
        // exited, so `chunk` points into the list owned by its live buffer (`reset`
        // set it); chunks are never freed while their buffer lives.
        let chunk = unsafe { &*self.chunk.get() };
        &chunk.slots[pos]
    }

    #[cold]
    fn next_chunk(&self) {
        let ring = self.ring.get();
        let index = self.chunk_index.get() + 1;
        if ring != 0 && index * CHUNK_SLOTS as u64 >= ring {
            // The ring wraps: back to the first chunk, over the oldest records.
            if let Some(buffer) = self.buffer() {
                self.chunk.set(&*buffer.head);
                self.chunk_index.set(0);
                self.pos.set(0);
                self.first_head.set(true);
                return;
            }
        }
        // SAFETY: as in `next_slot`.
        let chunk = unsafe { &*self.chunk.get() };
        let next = chunk
            .next
            .get_or_init(|| crate::alloc::without_samples(Chunk::new));
        self.chunk.set(&**next);
        self.chunk_index.set(index);
        self.pos.set(0);
        self.first_head.set(ring != 0);
    }

    /// Notes that the record starting at `seq`, in the slot just taken, is a head:
    /// a ring's reader starts decoding a chunk at its first head.
    #[inline(always)]
    fn head(&self, seq: u64) {
        if self.first_head.get() {
            self.first_head.set(false);
            // SAFETY: as in `next_slot`: the slot just taken is in this chunk.
            let chunk = unsafe { &*self.chunk.get() };
            chunk.first_head.store(seq, Ordering::Release);
        }
    }

    /// In a ring, announces that the record about to be written ends at slot `end`,
    /// before any of its slots overwrite older records: a snapshot copying meanwhile
    /// then leaves those records out (see [`ring`]).
    #[inline(always)]
    fn announce(&self, end: u64) {
        if self.ring.get() == 0 {
            // A growing list never overwrites a record of its session.
            return;
        }
        if let Some(buffer) = self.buffer() {
            buffer.writing.store(end, Ordering::Relaxed);
            // Pairs with the reader's acquire fence: a reader that sees any slot
            // written below also sees this store. Free on x86-64, where stores are not
            // reordered; removing it lets a snapshot decode half-overwritten slots.
            fence(Ordering::Release);
        }
    }

    #[inline(always)]
    fn publish(&self, seq: u64) {
        self.seq.set(seq);
        if let Some(buffer) = self.buffer() {
            buffer.published.store(seq, Ordering::Release);
        }
    }

    #[cold]
    fn count_dropped(&self, event: bool) {
        if let Some(buffer) = self.buffer() {
            let counter = if event {
                &buffer.dropped_events
            } else {
                &buffer.dropped_fields
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Writes one single-slot record (an event or a mark) whose words `words` makes
    /// once the slot is taken; returns the slot and its record number, or `None` when
    /// the budget is spent (counted as a dropped event).
    #[inline(always)]
    fn push_single(&self, words: impl FnOnce() -> [u64; 4]) -> Option<(&Slot, u64)> {
        if !self.reserve(1) {
            self.count_dropped(true);
            return None;
        }
        let seq = self.seq.get();
        self.announce(seq + 1);
        let slot = self.next_slot();
        self.head(seq);
        slot.write(words());
        self.publish(seq + 1);
        Some((slot, seq))
    }

    /// Writes an event; an instant one ends where it starts. `span` gives the start
    /// and end ticks of an event that is already over.
    #[inline(always)]
    fn push_event(
        &self,
        name: &'static str,
        instant: bool,
        span: Option<(u64, u64)>,
    ) -> Option<EventRef> {
        let (slot, seq) = self.push_single(|| {
            let (start, end) = match span {
                Some((start, end)) => (start, end.max(1)),
                None => {
                    // Read the clock last, so the bookkeeping above is not billed to
                    // the event.
                    let start = crate::clock::now();
                    (start, if instant { start.max(1) } else { 0 })
                }
            };
            [
                name.as_ptr() as u64,
                (name.len() as u64) << 8 | KIND_EVENT,
                start,
                end,
            ]
        })?;
        Some(EventRef {
            slot,
            seq,
            generation: self.generation.get(),
        })
    }

    fn push_mark(&self, name: &'static str, at: u64, value: u64) {
        self.push_single(|| {
            [
                name.as_ptr() as u64,
                (name.len() as u64) << 8 | KIND_MARK,
                at,
                value,
            ]
        });
    }

    fn push_field(&self, event_seq: u64, key: &'static str, value: Value<'_>) {
        let (tag, bits, text) = match value {
            Value::I64(v) => (TAG_I64, v as u64, None),
            Value::U64(v) => (TAG_U64, v, None),
            Value::F64(v) => (TAG_F64, v.to_bits(), None),
            Value::Bool(v) => (TAG_BOOL, u64::from(v), None),
            Value::Str(s) => {
                let s = truncate(s, MAX_STR_BYTES);
                (TAG_STR, s.len() as u64, Some(s))
            }
        };
        let extra = text.map_or(0, |s| s.len().div_ceil(32) as u64);
        if !self.reserve(1 + extra) {
            self.count_dropped(false);
            return;
        }
        let mut seq = self.seq.get();
        self.announce(seq + 1 + extra);
        let slot = self.next_slot();
        self.head(seq);
        slot.write([
            key.as_ptr() as u64,
            (key.len() as u64) << 8 | tag << 4 | KIND_FIELD,
            event_seq,
            bits,
        ]);
        seq += 1;
        if let Some(text) = text {
            for piece in text.as_bytes().chunks(32) {
                let mut block = [0u8; 32];
                block[..piece.len()].copy_from_slice(piece);
                let word = |i: usize| {
                    let mut w = [0u8; 8];
                    w.copy_from_slice(&block[i * 8..i * 8 + 8]);
                    u64::from_le_bytes(w)
                };
                self.next_slot().write([word(0), word(1), word(2), word(3)]);
                seq += 1;
            }
        }
        self.publish(seq);
    }
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Opens an event named `name` on this thread. `None` when the session's cap is
/// reached (the drop is counted) or the thread is shutting down.
#[inline(always)]
pub(crate) fn begin_event(name: &'static str) -> Option<EventRef> {
    WRITER.with(|w| w.push_event(name, false, None))
}

/// Records a zero-duration event named `name` on this thread; fields may still be
/// added through the returned reference.
pub(crate) fn instant_event(name: &'static str) -> Option<EventRef> {
    WRITER.with(|w| w.push_event(name, true, None))
}

/// Records on this thread an event that ran from clock ticks `start` to `end`
/// (started elsewhere, perhaps on another thread); fields may still be added.
pub(crate) fn span_event(name: &'static str, start: u64, end: u64) -> Option<EventRef> {
    WRITER.with(|w| w.push_event(name, false, Some((start, end))))
}

/// Records mark `name` with `value` at clock ticks `at` on this thread: a span's close
/// or a counter's sample.
pub(crate) fn mark(name: &'static str, at: u64, value: u64) {
    WRITER.with(|w| w.push_mark(name, at, value));
}

/// Closes an event opened by [`begin_event`] on this thread.
#[inline(always)]
pub(crate) fn end_event(event: &EventRef) -> u64 {
    let end = crate::clock::now();
    WRITER.with(|w| {
        // A new session reuses the slots: only close events of the one still written,
        // and nothing once the thread's buffer may be gone.
        // In a ring the slot is the event's until a record `ring` later is written.
        let live = w.ring.get() == 0 || w.seq.get() <= event.seq + w.ring.get();
        if w.generation.get() == event.generation && !w.exited.get() && live {
            // SAFETY: same generation means no `reset` ran since `push_event` made this
            // pointer, and `live` that the ring has not come round to it, so the slot
            // is still this event's; not exited means the registration still holds the
            // buffer that owns its chunk.
            let slot = unsafe { &*event.slot };
            slot.0[3].store(end.max(1), Ordering::Release);
        }
    });
    end
}

/// The scope id of an event opened on this thread, for the tracer scope hook.
pub(crate) fn scope_id(event: &EventRef) -> crate::tracer::ScopeId {
    let line = WRITER
        .try_with(|w| w.buffer().map_or(0, |b| b.line_id))
        .unwrap_or(0);
    crate::tracer::ScopeId {
        line,
        seq: event.seq,
    }
}

/// Adds a field to an event opened by [`begin_event`] on this thread.
pub(crate) fn add_field(event: &EventRef, key: &'static str, value: Value<'_>) {
    WRITER.with(|w| {
        if w.generation.get() == event.generation && !w.exited.get() {
            w.push_field(event.seq, key, value);
        }
    });
}

fn os_thread_id() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid has no preconditions and cannot fail.
        (unsafe { libc::gettid() }) as u64
    }
    #[cfg(not(target_os = "linux"))]
    {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        thread_local!(static ID: u64 = NEXT.fetch_add(1, Ordering::Relaxed));
        ID.with(|id| *id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_32_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 32);
        assert_eq!(std::mem::align_of::<Slot>(), 32);
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }
}
