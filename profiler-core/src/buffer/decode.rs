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
}

impl<'a> SlotIter<'a> {
    /// The first `remaining` slots of the list starting at `head`.
    pub(super) fn new(head: &'a Chunk, remaining: u64) -> SlotIter<'a> {
        SlotIter {
            chunk: Some(head),
            pos: 0,
            remaining,
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
            // The writer links a chunk before publishing any slot in it.
            self.chunk = self.chunk?.next.get().map(|c| &**c);
            self.pos = 0;
        }
        let slot = &self.chunk?.slots[self.pos];
        self.pos += 1;
        self.remaining -= 1;
        Some(slot)
    }
}
