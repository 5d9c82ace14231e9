//! Reading a ring while its thread writes on (the flight recorder's snapshots).
//!
//! In a ring, record `seq` lives in slot `seq % ring`, so the writer overwrites the
//! oldest records as it goes, and may do so while a snapshot reads them. A reader
//! therefore copies the slots first, then reads how far the writer has got: the
//! published count, and the end of the record it may be in the middle of writing
//! (a string field is many slots, published at once), which the writer announces
//! before touching any of them. A slot is trustworthy only if no record written
//! since, finished or not, could have reused it. Decoding
//! must then start at a record head, not in the middle of a string's bytes: each
//! chunk notes the first head written in it on the current lap, and the copy starts
//! at the first trustworthy chunk's head. Nothing is decoded from a slot that was
//! not trustworthy, so no torn pointer ever becomes a `&str`.

use std::sync::atomic::{fence, Ordering};

use super::layout::{Chunk, ThreadBuffer, CHUNK_SLOTS};

/// Copies what the ring holds among the first `published` records: the sequence
/// number of the first record head, and the slots from it on.
pub(super) fn copy(buffer: &ThreadBuffer, published: u64, ring: u64) -> (u64, Vec<[u64; 4]>) {
    let per_chunk = CHUNK_SLOTS as u64;
    let mut chunks: Vec<&Chunk> = Vec::with_capacity((ring / per_chunk) as usize);
    let mut chunk = Some(&*buffer.head);
    while let Some(c) = chunk {
        if chunks.len() as u64 * per_chunk >= ring {
            break;
        }
        chunks.push(c);
        chunk = c.next.get().map(|c| &**c);
    }
    let from = published.saturating_sub(ring);
    let mut words = Vec::with_capacity((published - from) as usize);
    for seq in from..published {
        let pos = (seq % ring) as usize;
        // The writer links a chunk before publishing any slot in it.
        let Some(chunk) = chunks.get(pos / CHUNK_SLOTS) else {
            break;
        };
        words.push(chunk.slots[pos % CHUNK_SLOTS].read());
    }
    // Records written meanwhile, and the one being written now, reused the slots of
    // the records `ring` before them. The fence pairs with the writer's in
    // `Writer::announce`: having seen any slot it overwrote, these loads see it
    // announced.
    fence(Ordering::Acquire);
    let now = buffer.published.load(Ordering::Acquire);
    let writing = buffer.writing.load(Ordering::Relaxed);
    let trusted = from.max(now.max(writing).saturating_sub(ring));
    if trusted == 0 {
        return (0, words);
    }
    let mut boundary = trusted.div_ceil(per_chunk) * per_chunk;
    while boundary < from + words.len() as u64 {
        let chunk = chunks[((boundary % ring) / per_chunk) as usize];
        let head = chunk.first_head.load(Ordering::Acquire);
        // A head of another lap (older, or written during the copy) does not count.
        if (boundary..boundary + per_chunk).contains(&head) && head < from + words.len() as u64 {
            words.drain(..(head - from) as usize);
            return (head, words);
        }
        boundary += per_chunk;
    }
    (published, Vec::new())
}

#[cfg(test)]
mod tests {
    use super::super::decode::decode;
    use super::super::layout::{Record, Slot, KIND_EVENT, KIND_FIELD, TAG_STR};
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64};

    const NAME: &str = "e";
    const KEY: &str = "s";

    /// A buffer of `chunks` chunks whose session writes a ring of all of them.
    fn ring_buffer(chunks: usize) -> ThreadBuffer {
        let head = Chunk::new();
        let mut last = &*head;
        for _ in 1..chunks {
            last = last.next.get_or_init(Chunk::new);
        }
        ThreadBuffer {
            line_id: 1,
            name: "test".into(),
            os_tid: 1,
            head,
            generation: AtomicU64::new(1),
            published: AtomicU64::new(0),
            writing: AtomicU64::new(0),
            ring: AtomicU64::new((chunks * CHUNK_SLOTS) as u64),
            dropped_events: AtomicU64::new(0),
            dropped_fields: AtomicU64::new(0),
            exited: AtomicBool::new(false),
        }
    }

    fn chunk(buffer: &ThreadBuffer, index: usize) -> &Chunk {
        let mut chunk = &*buffer.head;
        for _ in 0..index {
            chunk = chunk.next.get().expect("linked");
        }
        chunk
    }

    /// The slot record `seq` is written in, as the writer finds it.
    fn slot(buffer: &ThreadBuffer, seq: u64) -> &Slot {
        let pos = (seq % buffer.ring.load(Ordering::Relaxed)) as usize;
        &chunk(buffer, pos / CHUNK_SLOTS).slots[pos % CHUNK_SLOTS]
    }

    fn write_event(buffer: &ThreadBuffer, seq: u64) {
        let words = [
            NAME.as_ptr() as u64,
            (NAME.len() as u64) << 8 | KIND_EVENT,
            seq,
            seq + 1,
        ];
        slot(buffer, seq).write(words);
        let pos = seq % buffer.ring.load(Ordering::Relaxed);
        if pos.is_multiple_of(CHUNK_SLOTS as u64) {
            chunk(buffer, pos as usize / CHUNK_SLOTS)
                .first_head
                .store(seq, Ordering::Relaxed);
        }
    }

    #[test]
    fn a_string_being_written_over_the_oldest_records_is_left_out() {
        // Two chunks; lap 1 holds events 2048..4094, then a 96-byte string field is
        // half written: its head and first bytes are in, its last bytes have
        // overwritten events 2048 and 2049 with letters, and it is not published.
        let buffer = ring_buffer(2);
        for seq in 2048..4094 {
            write_event(&buffer, seq);
        }
        let words = [
            KEY.as_ptr() as u64,
            (KEY.len() as u64) << 8 | TAG_STR << 4 | KIND_FIELD,
            4093,
            96,
        ];
        slot(&buffer, 4094).write(words);
        for seq in 4095..4098 {
            slot(&buffer, seq).write([u64::from_le_bytes([b'a'; 8]); 4]);
        }
        buffer.published.store(4094, Ordering::Relaxed);
        buffer.writing.store(4098, Ordering::Relaxed);

        let (start, words) = copy(&buffer, 4094, 2048);
        // Decoding from the first chunk's head would read the letters as an event
        // whose name pointer is 0x6161616161616161.
        assert_eq!(start, 3072, "decoding starts past the overwritten slots");
        let mut seqs = Vec::new();
        decode(start, words.into_iter(), |record| match record {
            Record::Event {
                seq, name, start, ..
            } => {
                assert_eq!((name, start), (NAME, seq));
                seqs.push(seq);
            }
            other => panic!("unexpected {other:?}"),
        });
        assert_eq!(seqs, (3072..4094).collect::<Vec<_>>());
    }

    #[test]
    fn a_ring_not_yet_wrapped_is_read_from_its_first_record() {
        let buffer = ring_buffer(2);
        for seq in 0..1500 {
            write_event(&buffer, seq);
        }
        buffer.published.store(1500, Ordering::Relaxed);
        buffer.writing.store(1500, Ordering::Relaxed);
        let (start, words) = copy(&buffer, 1500, 2048);
        assert_eq!((start, words.len()), (0, 1500));
    }
}
