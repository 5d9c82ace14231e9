//! Output gathered in blocks: the timeline writers append each event to a `Vec`,
//! piece by piece, and hand it to the output a block at a time.
//!
//! Through a `BufWriter`, each piece of an event (a Chrome JSON slice has twenty or
//! so, a Perfetto packet its length prefix and body) was a call that checked for room
//! and copied: a fifth of writing a trace. Appending to a `Vec` inlines the copies of
//! pieces of known size.

use std::io::{self, Write};

/// Bytes gathered before they are handed to the output.
const BLOCK: usize = 64 * 1024;

/// An output and the bytes not yet handed to it.
pub(crate) struct Blocks<W> {
    /// Appended to by the writer; handed over by [`Blocks::done`].
    pub(crate) buf: Vec<u8>,
    out: W,
}

impl<W: Write> Blocks<W> {
    pub(crate) fn new(out: W) -> Self {
        Blocks {
            buf: Vec::with_capacity(BLOCK + BLOCK / 8),
            out,
        }
    }

    /// Hands what was gathered to the output once it fills a block. Called after
    /// each event, so an event is never split across two writes.
    #[inline]
    pub(crate) fn done(&mut self) -> io::Result<()> {
        if self.buf.len() >= BLOCK {
            self.out.write_all(&self.buf)?;
            self.buf.clear();
        }
        Ok(())
    }

    /// Hands over the rest and flushes the output.
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_reach_the_output_whole_and_in_order() {
        let mut blocks = Blocks::new(Vec::new());
        let mut expected = Vec::new();
        for i in 0..50_000u32 {
            let event = i.to_string().repeat(1 + (i % 7) as usize);
            blocks.buf.extend_from_slice(event.as_bytes());
            expected.extend_from_slice(event.as_bytes());
            blocks.done().expect("a Vec takes everything");
            // Only whole blocks are handed over while writing.
            assert!(blocks.buf.len() < BLOCK + 64);
            assert_eq!(blocks.out.len() + blocks.buf.len(), expected.len());
        }
        let out = {
            let mut sink = Vec::new();
            let mut b = Blocks::new(&mut sink);
            b.buf.extend_from_slice(&expected);
            b.finish().expect("write");
            sink
        };
        assert_eq!(out, expected);
        assert!(blocks.out.len() >= BLOCK, "blocks were handed over");
    }
}
