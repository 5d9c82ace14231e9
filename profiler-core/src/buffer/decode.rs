//! Records read back from slots: the decoding shared by a growing list and a ring.

#![allow(unsafe_code)]

use super::layout::{
    Chunk, Record, Slot, CHUNK_SLOTS, EVENT_CLOSES_SPAN, KIND_EVENT, KIND_FIELD, KIND_SAMPLE,
    TAG_BOOL, TAG_F64, TAG_I64, TAG_U64,
};
use crate::field::OwnedValue;

/// Decodes records from `slots`, the first of which has sequence number `seq` and is
/// the head of a record.
pub(super) fn decode(
    mut seq: u64,
    mut slots: impl Iterator<Item = [u64; 4]>,
    mut visit: impl FnMut(Record),
) {
    while let Some(words) = slots.next() {
        let this = seq;
        seq += 1;
        match words[1] & 0xf {
            KIND_EVENT => visit(Record::Event {
                seq: this,
                // SAFETY: event slots hold a `&'static str` split into pointer and
                // length by `Writer::push_event`, published before this read.
                name: unsafe { static_str(words[0], words[1] >> 8) },
                start: words[2],
                end: words[3],
                // The flag is set after the end; a reader racing the writer may see
                // it first, and then takes the event as still open.
                closes_span: words[1] & EVENT_CLOSES_SPAN != 0 && words[3] != 0,
            }),
            KIND_FIELD => {
                // SAFETY: field slots hold a `&'static str` key split into pointer
                // and length by `Writer::push_field`.
                let key = unsafe { static_str(words[0], words[1] >> 8) };
                let value = match (words[1] >> 4) & 0xf {
                    TAG_I64 => OwnedValue::I64(words[3] as i64),
                    TAG_U64 => OwnedValue::U64(words[3]),
                    TAG_F64 => OwnedValue::F64(f64::from_bits(words[3])),
                    TAG_BOOL => OwnedValue::Bool(words[3] != 0),
                    _ => {
                        let len = words[3] as usize;
                        let mut bytes = Vec::with_capacity(len);
                        for _ in 0..len.div_ceil(32) {
                            let Some(slot) = slots.next() else { break };
                            seq += 1;
                            for word in slot {
                                bytes.extend_from_slice(&word.to_le_bytes());
                            }
                        }
                        bytes.truncate(len);
                        OwnedValue::Str(String::from_utf8_lossy(&bytes).into_owned())
                    }
                };
                visit(Record::Field {
                    event_seq: words[2],
                    key,
                    value,
                });
            }
            KIND_SAMPLE => visit(Record::Sample {
                // SAFETY: mark slots hold a `&'static str` split by `Writer::push_mark`.
                name: unsafe { static_str(words[0], words[1] >> 8) },
                at: words[2],
                value: words[3],
            }),
            // A slot is only published once written; anything else is a bug, and
            // skipping it keeps the rest of the thread's records.
            _ => {}
        }
    }
}

/// # Safety
/// `ptr` and `len` must come from a `&'static str`.
unsafe fn static_str(ptr: u64, len: u64) -> &'static str {
    // SAFETY: guaranteed by the caller: the bytes are a live, immutable, valid UTF-8
    // `'static` string.
    unsafe {
        std::str::from_utf8_unchecked(std::slice::from_raw_parts(
            ptr as usize as *const u8,
            len as usize,
        ))
    }
}

pub(super) struct SlotIter<'a> {
    chunk: Option<&'a Chunk>,
    pos: usize,
    remaining: u64,
    /// Chunks passed so far.
    passed: usize,
    /// Chunks from this one on give their pages back once read (`usize::MAX`: none).
    release_from: usize,
}

impl<'a> SlotIter<'a> {
    /// The first `remaining` slots of the list starting at `head`.
    pub(super) fn new(head: &'a Chunk, remaining: u64) -> SlotIter<'a> {
        SlotIter {
            chunk: Some(head),
            pos: 0,
            remaining,
            passed: 0,
            release_from: usize::MAX,
        }
    }

    /// As [`SlotIter::new`], each chunk from the `keep`th on giving its memory back to
    /// the system once every slot in it was read (see [`release_pages`]).
    pub(super) fn releasing(head: &'a Chunk, remaining: u64, keep: usize) -> SlotIter<'a> {
        SlotIter {
            release_from: keep,
            ..SlotIter::new(head, remaining)
        }
    }
}

impl<'a> Iterator for SlotIter<'a> {
    type Item = &'a Slot;

    fn next(&mut self) -> Option<&'a Slot> {
        if self.remaining == 0 {
            return None;
        }
        if self.pos == CHUNK_SLOTS {
            let done = self.chunk?;
            // The writer links a chunk before publishing any slot in it.
            self.chunk = done.next.get().map(|c| &**c);
            self.pos = 0;
            if self.passed >= self.release_from {
                release_pages(&done.slots[..]);
            }
            self.passed += 1;
        }
        let slot = &self.chunk?.slots[self.pos];
        self.pos += 1;
        self.remaining -= 1;
        Some(slot)
    }
}

/// Gives the whole pages under `slots` back to the system (`MADV_DONTNEED`): they stay
/// mapped and read as zeros until written again, which faults a fresh page in.
///
/// A long session's buffers are read once, at `stop`, while its profile is built: a
/// 100M-event session held 6.4 GB of records beside the profile growing from them,
/// and on a machine whose free memory ran out every page of the profile had to be
/// reclaimed from the page cache first (page faults three times as slow). Given back
/// as they are read, the records' pages are where the profile's come from. A later
/// session recording as much on that thread faults them in again, a page per 128
/// records; the first chunks of every thread are kept (see the caller) so that
/// ordinary sessions never do.
fn release_pages(slots: &[Slot]) {
    let page = page_size();
    let start = slots.as_ptr() as usize;
    let end = start + std::mem::size_of_val(slots);
    let first = start.next_multiple_of(page);
    let last = end - end % page;
    if page == 0 || last <= first {
        return;
    }
    // SAFETY: [first, last) is whole pages inside `slots`, memory this buffer owns
    // for its thread's lifetime and keeps allocated: MADV_DONTNEED leaves it mapped,
    // so nothing is freed under a reference. Its slots are atomics the collector has
    // read to the last; a writer still storing an event's end into one (a guard open
    // across `stop`) stores into a fresh zero page instead, and the next session
    // writes its slots before publishing them. Failure leaves the pages as they were.
    unsafe {
        libc::madvise(
            first as *mut libc::c_void,
            last - first,
            libc::MADV_DONTNEED,
        );
    }
}

/// The system's page size (0 when it cannot be read: nothing is then given back).
fn page_size() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static PAGE: AtomicUsize = AtomicUsize::new(0);
    match PAGE.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: sysconf has no preconditions.
            let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            let size = usize::try_from(size).unwrap_or(0);
            PAGE.store(size, Ordering::Relaxed);
            size
        }
        size => size,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of `n` chunks whose slots hold their own position.
    fn list(n: usize) -> Box<Chunk> {
        let head = Chunk::new();
        let mut last = &*head;
        for _ in 1..n {
            last = last.next.get_or_init(Chunk::new);
        }
        let mut chunk = Some(&*head);
        let mut pos = 0u64;
        while let Some(c) = chunk {
            for slot in c.slots.iter() {
                pos += 1;
                slot.write([pos; 4]);
            }
            chunk = c.next.get().map(|c| &**c);
        }
        head
    }

    #[test]
    fn chunks_read_past_give_their_pages_back_and_the_last_stays() {
        let head = list(3);
        let n = 3 * CHUNK_SLOTS as u64 - 5;
        // Released from the first chunk on: every slot is still read as written.
        let read: Vec<u64> = SlotIter::releasing(&head, n, 0)
            .map(|s| s.read()[0])
            .collect();
        assert_eq!(read, (1..=n).collect::<Vec<_>>());
        let second = head.next.get().expect("second");
        let third = second.next.get().expect("third");
        // A slot in the middle of a read chunk lies on a page given back: zero now.
        let middle = CHUNK_SLOTS / 2;
        assert_eq!(head.slots[middle].read(), [0; 4]);
        assert_eq!(second.slots[middle].read(), [0; 4]);
        // The chunk the reading ended in may still be written: kept.
        assert_eq!(
            third.slots[middle].read()[0],
            (2 * CHUNK_SLOTS + middle + 1) as u64
        );
        // A page given back takes writes again.
        head.slots[middle].write([7; 4]);
        assert_eq!(head.slots[middle].read(), [7; 4]);
        // Kept chunks keep their slots.
        let kept = list(3);
        let _ = SlotIter::releasing(&kept, n, 5).count();
        assert_eq!(kept.slots[middle].read()[0], middle as u64 + 1);
    }
}
