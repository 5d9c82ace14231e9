//! The queue between the signal handler and the collector: a fixed array of slots in
//! static memory, claimed by handlers without a lock and read back by the collector
//! (Dmitry Vyukov's bounded queue, with one consumer).
//!
//! A handler may run on any thread at any moment, even inside `malloc` or while
//! another handler writes a slot on another core, so it cannot allocate or wait: it
//! claims a slot with one compare-and-swap, fills it, and publishes it with one
//! release store. When every slot is taken (the collector has fallen 4096 samples
//! behind), the sample is dropped and counted. The slots are `static`, zero until a
//! handler first writes one: a process that never samples never touches their pages.
//!
//! What would break it: a `Vec` or `Box` here (allocation in the handler), a spin
//! waiting for the collector (a handler interrupting the collector's own thread would
//! wait for itself), or a second consumer.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Frames kept per sample: deeper stacks keep their innermost.
pub(crate) const MAX_FRAMES: usize = 128;
/// Slots of the sampler's queue: a power of two.
pub(crate) const SLOTS: usize = 4096;

struct Slot {
    /// Vyukov's sequence: `pos` while free for the producer of position `pos`,
    /// `pos + 1` once filled.
    seq: AtomicU64,
    tid: AtomicU32,
    depth: AtomicU32,
    time_ns: AtomicU64,
    frames: [AtomicU64; MAX_FRAMES],
}

/// A queue of `N` slots.
pub(crate) struct Queue<const N: usize> {
    slots: [Slot; N],
    /// Next position a producer claims.
    head: AtomicU64,
    /// Next position the consumer reads; only the consumer writes it.
    tail: AtomicU64,
    /// Samples dropped while every slot was taken.
    dropped: AtomicU64,
}

impl<const N: usize> Queue<N> {
    pub(crate) const fn new() -> Queue<N> {
        // A `const` item is what array repetition needs; each slot is a fresh copy.
        #[allow(clippy::declare_interior_mutable_const)]
        const SLOT: Slot = Slot {
            seq: AtomicU64::new(0),
            tid: AtomicU32::new(0),
            depth: AtomicU32::new(0),
            time_ns: AtomicU64::new(0),
            frames: [const { AtomicU64::new(0) }; MAX_FRAMES],
        };
        Queue {
            slots: [SLOT; N],
            head: AtomicU64::new(0),
            tail: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// Resets the queue for a session; only while no handler can run.
    pub(crate) fn reset(&self) {
        for (i, slot) in self.slots.iter().enumerate() {
            slot.seq.store(i as u64, Ordering::Relaxed);
        }
        self.head.store(0, Ordering::Relaxed);
        self.tail.store(0, Ordering::Relaxed);
        self.dropped.store(0, Ordering::Release);
    }

    /// Adds a sample; async-signal-safe (atomics only). False when full.
    pub(crate) fn push(&self, tid: u32, time_ns: u64, frames: &[u64]) -> bool {
        let mut pos = self.head.load(Ordering::Relaxed);
        let slot = loop {
            let slot = &self.slots[pos as usize % N];
            let seq = slot.seq.load(Ordering::Acquire);
            if seq == pos {
                match self.head.compare_exchange_weak(
                    pos,
                    pos + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => break slot,
                    Err(now) => pos = now,
                }
            } else if seq < pos {
                // The consumer has not read this slot's previous sample yet.
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            } else {
                pos = self.head.load(Ordering::Relaxed);
            }
        };
        let depth = frames.len().min(MAX_FRAMES);
        slot.tid.store(tid, Ordering::Relaxed);
        slot.time_ns.store(time_ns, Ordering::Relaxed);
        slot.depth.store(depth as u32, Ordering::Relaxed);
        for (to, &from) in slot.frames.iter().zip(&frames[..depth]) {
            to.store(from, Ordering::Relaxed);
        }
        slot.seq.store(pos + 1, Ordering::Release);
        true
    }

    /// Hands every sample published, in order, to `visit`; the consumer's side. Stops
    /// at a slot still being filled (its handler publishes it later).
    pub(crate) fn drain(&self, frames: &mut Vec<u64>, mut visit: impl FnMut(u32, u64, &[u64])) {
        let mut pos = self.tail.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos as usize % N];
            if slot.seq.load(Ordering::Acquire) != pos + 1 {
                break;
            }
            let depth = slot.depth.load(Ordering::Relaxed) as usize;
            frames.clear();
            frames.extend(
                slot.frames[..depth.min(MAX_FRAMES)]
                    .iter()
                    .map(|f| f.load(Ordering::Relaxed)),
            );
            visit(
                slot.tid.load(Ordering::Relaxed),
                slot.time_ns.load(Ordering::Relaxed),
                frames,
            );
            slot.seq.store(pos + N as u64, Ordering::Release);
            pos += 1;
        }
        self.tail.store(pos, Ordering::Relaxed);
    }

    /// Samples dropped so far this session.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_come_out_in_order_and_a_full_queue_drops_and_counts() {
        // A queue of its own: the static one belongs to the sampler.
        const SLOTS: usize = 64;
        let q = Box::new(Queue::<SLOTS>::new());
        q.reset();
        assert!(q.push(1, 10, &[1, 2, 3]));
        assert!(q.push(2, 11, &[4]));
        let mut got = Vec::new();
        let mut scratch = Vec::new();
        q.drain(&mut scratch, |tid, t, f| got.push((tid, t, f.to_vec())));
        assert_eq!(got, [(1, 10, vec![1, 2, 3]), (2, 11, vec![4])]);
        for i in 0..SLOTS as u64 {
            assert!(q.push(3, i, &[i]), "slot {i}");
        }
        assert!(!q.push(3, 0, &[0]), "full");
        assert_eq!(q.dropped(), 1);
        let mut n = 0;
        q.drain(&mut scratch, |_, t, f| {
            assert_eq!(f, [t]);
            n += 1;
        });
        assert_eq!(n, SLOTS);
        // Room again; deeper stacks keep their innermost frames.
        let deep: Vec<u64> = (0..MAX_FRAMES as u64 + 10).collect();
        assert!(q.push(4, 1, &deep));
        q.drain(&mut scratch, |_, _, f| assert_eq!(f, &deep[..MAX_FRAMES]));
    }

    #[test]
    fn producers_on_many_threads_lose_nothing_while_there_is_room() {
        let q: &'static Queue<256> = Box::leak(Box::new(Queue::new()));
        q.reset();
        let threads: Vec<_> = (0..4u32)
            .map(|t| std::thread::spawn(move || (0..60u64).all(|i| q.push(t, i, &[i, t.into()]))))
            .collect();
        for t in threads {
            assert!(t.join().expect("join"));
        }
        let mut seen = [0u64; 4];
        q.drain(&mut Vec::new(), |tid, t, f| {
            assert_eq!(f, [t, u64::from(tid)]);
            seen[tid as usize] += 1;
        });
        assert_eq!(seen, [60; 4]);
    }
}
