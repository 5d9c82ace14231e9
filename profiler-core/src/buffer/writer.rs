//! The writing half of a thread's buffer: the hot path every annotation, field and
//! sample takes, lock-free and allocation-free once the thread's chunks exist.

#![allow(unsafe_code)]

use std::cell::{Cell, OnceCell};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::event_ref::EventRef;
use super::layout::{
    Chunk, Slot, ThreadBuffer, CHUNK_SLOTS, CLAIM, KIND_EVENT, KIND_FIELD, KIND_SAMPLE,
    MAX_STR_BYTES, TAG_BOOL, TAG_F64, TAG_I64, TAG_STR, TAG_U64,
};
use super::registry::{registry, BUDGET, GENERATION, NEXT_LINE_ID, RING};
use crate::field::Value;
use crate::reentry;

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
            // Slots already claimed would let `reserve` skip the exited check and write
            // through the null chunk (a tracking allocator records from destructors
            // that run after this one).
            w.budget.set(0);
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

/// How far ahead of the slot being written its line is fetched: 8 slots, 4 lines.
const PREFETCH_SLOTS: usize = 8;

/// Asks for the cache line of `chunk`'s slot `at` ahead of its write. A session's
/// buffer is far larger than the caches, and writing a line that is not there waits
/// for it to be read first: that wait was most of what a field record cost on an
/// Intel Xeon.
///
/// `at` may be past the chunk's end (the last few slots of a chunk): the address is
/// only computed, never dereferenced, and a prefetch of any address is a hint that
/// cannot fault. Clamping it to the chunk cost three instructions on every record.
#[inline(always)]
fn prefetch(chunk: &Chunk, at: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `_mm_prefetch` reads nothing and never faults, whatever the address;
    // `wrapping_add` makes the address without asserting it is in bounds.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(chunk.slots.as_ptr().wrapping_add(at).cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (chunk, at);
}

/// This thread's writer.
///
/// Only the address is taken inside `LocalKey::with`: with a whole record written in
/// its closure, `with` grew too big to inline, and every record then called it and,
/// through it, the thread-local's accessor by pointer (a third of `trace!`'s cost on
/// an Intel Xeon). Taken this way it is one `%fs`-relative address. Writing a record
/// inside `with` again would bring that back.
#[inline(always)]
fn writer() -> &'static Writer {
    let w: *const Writer = WRITER.with(std::ptr::from_ref);
    // SAFETY: `WRITER` is const-initialised and has no destructor, so its storage is
    // valid for as long as this thread runs, and the reference never leaves the
    // thread: every caller uses it within the call that took it.
    unsafe { &*w }
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
        let registered = reentry::hold_samples(|| {
            REGISTRATION.try_with(|r| {
                let buffer = r.0.get_or_init(|| {
                    let line_id = NEXT_LINE_ID.fetch_add(1, Ordering::Relaxed);
                    let os_tid = os_thread_id();
                    let name = std::thread::current()
                        .name()
                        .map(str::to_owned)
                        .unwrap_or_else(|| format!("Thread {os_tid}"));
                    let buffer = Arc::new(ThreadBuffer {
                        line_id,
                        name,
                        os_tid,
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
        if ring != 0 {
            // Heads noted by an earlier session count seqs from 0 too: a reader must
            // not take one for a head of this session.
            let mut chunk = Some(&*buffer.head);
            while let Some(c) = chunk {
                c.first_head.store(u64::MAX, Ordering::Relaxed);
                chunk = c.next.get().map(|c| &**c);
            }
        }
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
        // `>=`, not `==`: then `pos` is known to be in range below, with no bounds check.
        if pos >= CHUNK_SLOTS {
            self.next_chunk();
            pos = 0;
        }
        self.pos.set(pos + 1);
        self.budget.set(self.budget.get() - 1);
        // SAFETY: a successful reservation means the thread is registered and not
        // exited, so `chunk` points into the list owned by its live buffer (`reset`
        // set it); chunks are never freed while their buffer lives.
        let chunk = unsafe { &*self.chunk.get() };
        prefetch(chunk, pos + PREFETCH_SLOTS);
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
        let next = chunk.next.get_or_init(|| reentry::hold_samples(Chunk::new));
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
    /// then leaves those records out (see [`super::ring`]).
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

    /// Publishes the records written up to `seq`. Callers reserved their slots
    /// first, which means the thread's buffer is there: a claimed budget is zeroed
    /// when the registration drops, so `reserve` then fails on `exited`.
    #[inline(always)]
    fn publish(&self, seq: u64) {
        self.seq.set(seq);
        // SAFETY: as above; the pointer is the live `Arc`'s (see `buffer`). Checking
        // it for null here cost a branch on every record.
        let buffer = unsafe { &*self.buffer.get() };
        buffer.published.store(seq, Ordering::Release);
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

    /// Writes one single-slot record (an event or a sample) whose words `words` makes
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
            event_words(name, start, end)
        })?;
        Some(EventRef::new(slot, seq, self.generation.get()))
    }

    fn push_sample(&self, name: &'static str, at: u64, value: u64) {
        self.push_single(|| {
            [
                name.as_ptr() as u64,
                (name.len() as u64) << 8 | KIND_SAMPLE,
                at,
                value,
            ]
        });
    }

    /// Opens an event with its first fields in one reservation and one publish: the
    /// fields `trace!` names are known before the event starts, and writing them as
    /// separate records paid the gate, the session check, the budget and the publish
    /// again for each (half of what a field cost on an Intel Xeon).
    ///
    /// An `instant` event ends where it starts (`instant` is a constant at every call,
    /// so the annotation's path keeps its open end without a test).
    #[inline(always)]
    fn push_event_with<const N: usize>(
        &self,
        name: &'static str,
        fields: &[(&'static str, Value<'_>); N],
        instant: bool,
    ) -> Option<EventRef> {
        let slots = 1 + fields.iter().map(|(_, v)| field_slots(v)).sum::<u64>();
        if !self.reserve(slots) {
            // Short of room for all: the event and each field take what is left, one
            // record at a time, as they would have been written apart.
            return self.push_event_apart(name, fields, instant);
        }
        let seq = self.seq.get();
        self.announce(seq + slots);
        let pos = self.pos.get();
        if N > 0 && slots == 1 + N as u64 && pos + 1 + N <= CHUNK_SLOTS {
            return Some(self.push_event_in_chunk(name, fields, seq, pos, instant));
        }
        let slot = self.next_slot();
        self.head(seq);
        let start = crate::clock::now();
        slot.write(event_words(name, start, end_of(start, instant)));
        let mut next = seq + 1;
        for (key, value) in fields {
            next = self.write_field(next, seq, key, *value);
        }
        self.publish(next);
        Some(EventRef::new(slot, seq, self.generation.get()))
    }

    /// [`Writer::push_event_with`] where every field takes one slot and the whole
    /// record fits in the current chunk from `pos` (nearly always): its slots are
    /// taken at once, with one update of the position and the budget and one look
    /// for a chunk head, where taking them one by one checked for the chunk's end,
    /// counted down the budget and prefetched once per slot (a field's cost). Callers
    /// reserved and announced the slots.
    #[inline(always)]
    fn push_event_in_chunk<const N: usize>(
        &self,
        name: &'static str,
        fields: &[(&'static str, Value<'_>); N],
        seq: u64,
        pos: usize,
        instant: bool,
    ) -> EventRef {
        self.pos.set(pos + 1 + N);
        self.budget.set(self.budget.get() - (1 + N as u64));
        // SAFETY: as in `next_slot`: the reservation means `chunk` is the live
        // buffer's, and `pos + 1 + N` is within it (checked by the caller).
        let chunk = unsafe { &*self.chunk.get() };
        prefetch(chunk, pos + N + PREFETCH_SLOTS);
        let slot = &chunk.slots[pos];
        // The event is the first record of the chunk if any of the record's is.
        self.head(seq);
        let start = crate::clock::now();
        slot.write(event_words(name, start, end_of(start, instant)));
        for (i, (key, value)) in fields.iter().enumerate() {
            chunk.slots[pos + 1 + i].write(field_words(key, seq, *value));
        }
        self.publish(seq + 1 + N as u64);
        EventRef::new(slot, seq, self.generation.get())
    }

    #[cold]
    #[inline(never)]
    fn push_event_apart(
        &self,
        name: &'static str,
        fields: &[(&'static str, Value<'_>)],
        instant: bool,
    ) -> Option<EventRef> {
        let event = self.push_event(name, instant, None)?;
        for (key, value) in fields {
            self.push_field(event.seq(), key, *value);
        }
        Some(event)
    }

    fn push_field(&self, event_seq: u64, key: &'static str, value: Value<'_>) {
        let slots = field_slots(&value);
        if !self.reserve(slots) {
            self.count_dropped(false);
            return;
        }
        let seq = self.seq.get();
        self.announce(seq + slots);
        let next = self.write_field(seq, event_seq, key, value);
        self.publish(next);
    }

    /// Writes field record `seq` of event `event_seq` into slots already reserved and
    /// announced; returns the record number after it.
    #[inline(always)]
    fn write_field(&self, seq: u64, event_seq: u64, key: &'static str, value: Value<'_>) -> u64 {
        let slot = self.next_slot();
        self.head(seq);
        slot.write(field_words(key, event_seq, value));
        match value {
            Value::Str(text) => self.write_text(seq + 1, truncate(text, MAX_STR_BYTES)),
            _ => seq + 1,
        }
    }

    /// Writes a string field's bytes into the slots after its record, 32 per slot.
    #[inline(never)]
    fn write_text(&self, mut seq: u64, text: &str) -> u64 {
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
        seq
    }
}

/// The end ticks of an event starting at `start`: its start for an instant (never 0,
/// which means open), 0 for an event left open.
#[inline(always)]
fn end_of(start: u64, instant: bool) -> u64 {
    if instant {
        start.max(1)
    } else {
        0
    }
}

/// The words of an event record named `name` from clock ticks `start` to `end` (0
/// while open).
#[inline(always)]
fn event_words(name: &'static str, start: u64, end: u64) -> [u64; 4] {
    [
        name.as_ptr() as u64,
        (name.len() as u64) << 8 | KIND_EVENT,
        start,
        end,
    ]
}

/// The words of a field record of event `event_seq`: its key, its value's tag, and
/// the value (a string's length: its bytes follow in slots of their own).
#[inline(always)]
fn field_words(key: &'static str, event_seq: u64, value: Value<'_>) -> [u64; 4] {
    let (tag, bits) = match value {
        Value::I64(v) => (TAG_I64, v as u64),
        Value::U64(v) => (TAG_U64, v),
        Value::F64(v) => (TAG_F64, v.to_bits()),
        Value::Bool(v) => (TAG_BOOL, u64::from(v)),
        Value::Str(s) => (TAG_STR, truncate(s, MAX_STR_BYTES).len() as u64),
    };
    [
        key.as_ptr() as u64,
        (key.len() as u64) << 8 | tag << 4 | KIND_FIELD,
        event_seq,
        bits,
    ]
}

/// How many slots a field record takes: its own and its string's.
#[inline(always)]
fn field_slots(value: &Value<'_>) -> u64 {
    match value {
        Value::Str(s) => 1 + truncate(s, MAX_STR_BYTES).len().div_ceil(32) as u64,
        _ => 1,
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

/// Opens an event named `name` on this thread with its first `fields`, written with
/// the event in one go. `None` when the session's cap is reached (the drop is
/// counted) or the thread is shutting down; when the session has room for
/// the event but not all its fields, the fields it has no room for are dropped (and
/// counted), as they would be if added one by one.
#[inline(always)]
pub(crate) fn begin_event_with<const N: usize>(
    name: &'static str,
    fields: &[(&'static str, Value<'_>); N],
) -> Option<EventRef> {
    writer().push_event_with(name, fields, false)
}

/// Records an instant event named `name` on this thread with its `fields`, written
/// with the event in one go; dropped (and counted) as [`begin_event_with`]'s are.
pub(crate) fn instant_event_with<const N: usize>(
    name: &'static str,
    fields: &[(&'static str, Value<'_>); N],
) {
    writer().push_event_with(name, fields, true);
}

/// Records a zero-duration event named `name` on this thread; fields may still be
/// added through the returned reference.
pub(crate) fn instant_event(name: &'static str) -> Option<EventRef> {
    writer().push_event(name, true, None)
}

/// Records on this thread an event that ran from clock ticks `start` to `end`
/// (started elsewhere, perhaps on another thread); fields may still be added.
pub(crate) fn span_event(name: &'static str, start: u64, end: u64) -> Option<EventRef> {
    writer().push_event(name, false, Some((start, end)))
}

/// Records sample `name` with `value` at clock ticks `at` on this thread: a counter's
/// value, or a span's close.
pub(crate) fn sample(name: &'static str, at: u64, value: u64) {
    writer().push_sample(name, at, value);
}

/// The slot of `event`, recorded on this thread, while it is still the event's.
#[inline(always)]
fn event_slot(event: &EventRef) -> Option<&Slot> {
    let w = writer();
    // A new session reuses the slots: only touch events of the one still written,
    // and nothing once the thread's buffer may be gone.
    // In a ring the slot is the event's until a record `ring` later is written.
    let live = w.ring.get() == 0 || w.seq.get() <= event.seq() + w.ring.get();
    (event.of_generation(w.generation.get()) && !w.exited.get() && live).then(|| {
        // SAFETY: not exited means the registration still holds the buffer that owns
        // the slot's chunk (chunks are never freed while their buffer lives), so the
        // pointer is valid. Same generation means no `reset` ran since `push_event`
        // made it (modulo 2^16 sessions), and `live` that the ring has not come round
        // to it, so the slot is still this event's.
        unsafe { event.slot_ptr().as_ref() }
    })
}

/// Closes an event opened by [`begin_event_with`] on this thread.
#[inline(always)]
pub(crate) fn end_event(event: &EventRef) -> u64 {
    let end = crate::clock::now();
    if let Some(slot) = event_slot(event) {
        slot.0[3].store(end.max(1), Ordering::Release);
    }
    end
}

/// Marks an event that ended on this thread as the close of the `tracing` span it is
/// an entry of, at its end. False when its slot is no longer its own (a new session,
/// or a ring come round to it): the close must then be recorded apart.
#[cfg(feature = "tracing")]
pub(crate) fn close_span_at_end(event: &EventRef) -> bool {
    let Some(slot) = event_slot(event) else {
        return false;
    };
    // Only this thread writes the slot: a load and a store, no read-modify-write.
    let kind = slot.0[1].load(Ordering::Relaxed);
    slot.0[1].store(kind | super::layout::EVENT_CLOSES_SPAN, Ordering::Relaxed);
    true
}

/// This thread's host line id (0 once the thread's buffer is gone).
pub(crate) fn this_line() -> u32 {
    WRITER
        .try_with(|w| w.buffer().map_or(0, |b| b.line_id))
        .unwrap_or(0)
}

/// Adds a field to an event opened by [`begin_event_with`] on this thread.
#[inline(always)]
pub(crate) fn add_field(event: &EventRef, key: &'static str, value: Value<'_>) {
    let w = writer();
    if event.of_generation(w.generation.get()) && !w.exited.get() {
        w.push_field(event.seq(), key, value);
    }
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
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("abc", 10), "abc");
    }
}
