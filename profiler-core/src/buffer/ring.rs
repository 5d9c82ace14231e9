//! Reading a ring while its thread writes on (the flight recorder's snapshots).
//!
//! In a ring, record `seq` lives in slot `seq % ring`, so the writer overwrites the
//! oldest records as it goes, and may do so while a snapshot reads them. A reader
//! therefore copies the slots first, then reads the published count again: a slot
//! is trustworthy only if no record written since could have reused it. Decoding
//! must then start at a record head, not in the middle of a string's bytes: each
//! chunk notes the first head written in it on the current lap, and the copy starts
//! at the first trustworthy chunk's head. Nothing is decoded from a slot that was
//! not trustworthy, so no torn pointer ever becomes a `&str`.

use std::sync::atomic::Ordering;

use super::{Chunk, ThreadBuffer, CHUNK_SLOTS};

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
    // Records written meanwhile reused the slots of the records `ring` before them;
    // the one being written now may be reusing the next.
    let now = buffer.published.load(Ordering::Acquire);
    let trusted = from.max((now + 1).saturating_sub(ring));
    if trusted == 0 {
        return (0, words);
    }
    let mut boundary = trusted.div_ceil(per_chunk) * per_chunk;
    while boundary < from + words.len() as u64 {
        let chunk = chunks[((boundary % ring) / per_chunk) as usize];
        let head = chunk.first_head.load(Ordering::Acquire);
        // A head of another lap (older, or written during the copy) does not count.
        if (boundary..boundary + per_chunk).contains(&head) && head < from + words.len() as u64 {
            return (head, words.split_off((head - from) as usize));
        }
        boundary += per_chunk;
    }
    (published, Vec::new())
}
