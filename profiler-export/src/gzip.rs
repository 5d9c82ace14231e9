//! Gzip on a second thread: what the exporter writes is handed over in blocks and
//! compressed while the exporter goes on, so writing a `.trace.json.gz` takes about as
//! long as the slower of the two (deflate), not their sum.
//!
//! Memory stays bounded: at most [`IN_FLIGHT`] blocks wait for the compressor, and
//! the exporter blocks when they are full. Where no thread can be started, the
//! compression runs inline, as before.

use std::io::{self, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::thread;

use flate2::write::GzEncoder;
use flate2::Compression;

/// Bytes handed over at a time: large enough that the hand-over costs nothing beside
/// deflating them, small enough to keep both threads busy early.
const BLOCK: usize = 1 << 18;
/// Blocks that may wait for the compressor.
const IN_FLIGHT: usize = 2;

/// Runs `produce` with a writer whose bytes reach `out` gzipped (the fast level),
/// compressed on a second thread.
///
/// # Errors
/// The compressor's I/O error (a full disk, say) in preference to the one `produce`
/// then met writing to a compressor that had stopped; else `produce`'s own error.
pub(crate) fn gzip_to<W, T>(
    out: W,
    produce: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> io::Result<T>
where
    W: Write + Send,
{
    let (full_tx, full_rx) = mpsc::sync_channel::<Vec<u8>>(IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<u8>>();
    // `out` goes over once the thread exists, so that it is still here if none can be
    // started.
    let (out_tx, out_rx) = mpsc::sync_channel::<W>(1);
    thread::scope(|scope| {
        let compressor = thread::Builder::new()
            .name("prof-gzip".into())
            .spawn_scoped(scope, move || match out_rx.recv() {
                Ok(out) => compress(out, &full_rx, &empty_tx),
                Err(_) => Ok(()),
            });
        let Ok(compressor) = compressor else {
            let mut gz = GzEncoder::new(out, Compression::fast());
            let value = produce(&mut gz)?;
            gz.finish()?.flush()?;
            return Ok(value);
        };
        let mut blocks = Blocks {
            block: Vec::with_capacity(BLOCK),
            full: Some(full_tx),
            empty: empty_rx,
        };
        let produced = match out_tx.send(out) {
            Ok(()) => produce(&mut blocks).and_then(|value| blocks.finish().map(|()| value)),
            Err(_) => Err(io::Error::other("the gzip thread stopped before it began")),
        };
        // Closes the channel, so that the compressor finishes the stream and ends.
        drop(blocks);
        let compressed = compressor
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("the gzip thread panicked")));
        match (produced, compressed) {
            (_, Err(e)) | (Err(e), Ok(())) => Err(e),
            (Ok(value), Ok(())) => Ok(value),
        }
    })
}

/// The compressor's side: deflates each block, gives it back for reuse, and finishes
/// the gzip stream when the channel closes.
fn compress<W: Write>(
    out: W,
    full: &Receiver<Vec<u8>>,
    empty: &mpsc::Sender<Vec<u8>>,
) -> io::Result<()> {
    let mut gz = GzEncoder::new(out, Compression::fast());
    for mut block in full {
        gz.write_all(&block)?;
        block.clear();
        // The exporter may have finished meanwhile; then the block is just dropped.
        let _ = empty.send(block);
    }
    gz.finish()?.flush()
}

/// The exporter's side: fills a block, then hands it over.
struct Blocks {
    block: Vec<u8>,
    /// `None` once finished.
    full: Option<SyncSender<Vec<u8>>>,
    empty: Receiver<Vec<u8>>,
}

impl Blocks {
    fn hand_over(&mut self) -> io::Result<()> {
        let next = self
            .empty
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BLOCK));
        let block = std::mem::replace(&mut self.block, next);
        let stopped = || io::Error::new(io::ErrorKind::BrokenPipe, "the gzip thread stopped");
        self.full
            .as_ref()
            .ok_or_else(stopped)?
            .send(block)
            .map_err(|_| stopped())
    }

    fn finish(&mut self) -> io::Result<()> {
        if !self.block.is_empty() {
            self.hand_over()?;
        }
        self.full = None;
        Ok(())
    }
}

impl Write for Blocks {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.block.extend_from_slice(buf);
        if self.block.len() >= BLOCK {
            self.hand_over()?;
        }
        Ok(buf.len())
    }

    /// Blocks go over when full or at the end: a flush in between would only make
    /// them smaller.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn gunzip(bytes: &[u8]) -> Vec<u8> {
        let mut text = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut text)
            .expect("a whole gzip stream");
        text
    }

    #[test]
    fn what_is_written_comes_back_whole_across_many_blocks() {
        let text: Vec<u8> = (0..3 * BLOCK + 12_345)
            .map(|i| (i % 251) as u8 ^ (i / 997) as u8)
            .collect();
        let mut out = Vec::new();
        let n = gzip_to(&mut out, |w| {
            // Writes of every size, as an exporter's are.
            for piece in text.chunks(7).collect::<Vec<_>>().chunks(1000) {
                for bytes in piece {
                    w.write_all(bytes)?;
                }
            }
            Ok(text.len())
        })
        .expect("gzipped");
        assert_eq!(n, text.len());
        assert_eq!(gunzip(&out), text);
        // Nothing written is still a gzip stream, of nothing.
        let mut out = Vec::new();
        gzip_to(&mut out, |_| Ok(())).expect("gzipped");
        assert!(gunzip(&out).is_empty());
    }

    /// A writer that fails once it has taken `left` bytes, as a full disk does.
    struct FillsUp {
        left: usize,
    }

    impl Write for FillsUp {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.left == 0 {
                return Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"));
            }
            let n = buf.len().min(self.left);
            self.left -= n;
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_compressors_error_is_the_one_returned() {
        // Incompressible-ish bytes, so that deflate's output soon passes the limit.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let noise: Vec<u8> = (0..BLOCK)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let err = gzip_to(FillsUp { left: 1000 }, |w| {
            // Bounded: the compressor stops after the first block, so a write fails
            // within IN_FLIGHT + 2 blocks.
            for _ in 0..64 {
                w.write_all(&noise)?;
            }
            Ok(())
        })
        .expect_err("the disk filled up");
        assert_eq!(err.kind(), io::ErrorKind::StorageFull, "{err}");
    }

    #[test]
    fn the_producers_error_is_returned_when_the_compressor_had_none() {
        let mut out = Vec::new();
        let err = gzip_to(&mut out, |w| {
            w.write_all(b"half a trace")?;
            Err::<(), _>(io::Error::new(io::ErrorKind::InvalidData, "bad event"))
        })
        .expect_err("the producer failed");
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
