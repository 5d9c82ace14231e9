//! Hand-offs: device work issued on one thread and launched on another carries the
//! annotation that was open where it was issued.
//!
//! Some runtimes launch their kernels from a thread of their own: cubecl (burn's GPU
//! runtime) queues each launch to a device thread, which makes the driver call. A
//! device tracer that reads the launching thread's annotations there ([`innermost_scope`],
//! as the CUPTI tracer does) finds none. The runtime's issuing side calls [`hand_off`]
//! on the thread that issues each launch, in issue order; the launching side's tracer
//! calls [`take_hand_off`] once per launch it sees on a thread with no annotation open,
//! and gets, first in first out, the annotation and the time of the issue.
//!
//! Hand-offs are kept only while a launching side accepts them ([`accept_hand_offs`]):
//! otherwise [`hand_off`] is one relaxed load. The queue is a fixed ring of
//! [`HAND_OFF_CAPACITY`] slots shared by every thread: no lock and no allocation on
//! either side. A hand-off that finds the ring full is counted and dropped, which
//! shifts the pairing of the launches after it; [`hand_offs_dropped`] says how many,
//! and a tracer reports them. What would break the path: a lock around the ring (every
//! issuing thread and the launching thread would contend on it per kernel), or a ring
//! that grows (an allocation per launch).
//!
//! The pairing is by order, which holds where one issuing thread feeds one launching
//! thread, as a training loop feeds one GPU's device thread. Launches of several
//! devices, or from several issuing threads at once, can be paired across each other.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::clock;
use crate::scope::{innermost_scope, ScopeId};

/// Slots in the hand-off ring: launches issued and not yet launched, at most.
pub const HAND_OFF_CAPACITY: usize = 4096;

/// What the issuing thread had open when it issued one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandOff {
    /// The innermost annotation open on the issuing thread; `None` when none was.
    pub scope: Option<ScopeId>,
    /// When the launch was issued, in raw clock ticks (`profiler_core::clock::now`).
    pub at: u64,
}

/// A slot of the ring (Vyukov's bounded queue): `seq` says whose turn it is.
struct Slot {
    seq: AtomicUsize,
    scope: AtomicU64,
    at: AtomicU64,
}

/// `scope` of a hand-off made outside any annotation.
const NO_SCOPE: u64 = u64::MAX;

struct Ring {
    slots: [Slot; HAND_OFF_CAPACITY],
    head: AtomicUsize,
    tail: AtomicUsize,
}

static RING: Ring = Ring {
    slots: {
        let mut slots = [const {
            Slot {
                seq: AtomicUsize::new(0),
                scope: AtomicU64::new(0),
                at: AtomicU64::new(0),
            }
        }; HAND_OFF_CAPACITY];
        let mut i = 0;
        while i < HAND_OFF_CAPACITY {
            slots[i].seq = AtomicUsize::new(i);
            i += 1;
        }
        slots
    },
    head: AtomicUsize::new(0),
    tail: AtomicUsize::new(0),
};

static ACCEPTED: AtomicBool = AtomicBool::new(false);
static DROPPED: AtomicU64 = AtomicU64::new(0);

impl Ring {
    fn push(&self, scope: u64, at: u64) -> bool {
        let mut pos = self.tail.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos % HAND_OFF_CAPACITY];
            let seq = slot.seq.load(Ordering::Acquire);
            match seq.wrapping_sub(pos) as isize {
                0 => match self.tail.compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        slot.scope.store(scope, Ordering::Relaxed);
                        slot.at.store(at, Ordering::Relaxed);
                        // Release: the values above before the slot is seen full.
                        slot.seq.store(pos.wrapping_add(1), Ordering::Release);
                        return true;
                    }
                    Err(now) => pos = now,
                },
                // The slot still holds a hand-off a lap behind: full.
                d if d < 0 => return false,
                _ => pos = self.tail.load(Ordering::Relaxed),
            }
        }
    }

    fn pop(&self) -> Option<(u64, u64)> {
        let mut pos = self.head.load(Ordering::Relaxed);
        loop {
            let slot = &self.slots[pos % HAND_OFF_CAPACITY];
            let seq = slot.seq.load(Ordering::Acquire);
            match seq.wrapping_sub(pos.wrapping_add(1)) as isize {
                0 => match self.head.compare_exchange_weak(
                    pos,
                    pos.wrapping_add(1),
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => {
                        let value = (
                            slot.scope.load(Ordering::Relaxed),
                            slot.at.load(Ordering::Relaxed),
                        );
                        // The slot is free for the push one lap ahead.
                        slot.seq
                            .store(pos.wrapping_add(HAND_OFF_CAPACITY), Ordering::Release);
                        return Some(value);
                    }
                    Err(now) => pos = now,
                },
                // Not yet written: empty.
                d if d < 0 => return None,
                _ => pos = self.head.load(Ordering::Relaxed),
            }
        }
    }
}

/// Starts (or stops) keeping hand-offs: the launching side's tracer turns this on while
/// it records. Both ways, hand-offs still queued are dropped and the dropped count is
/// reset, so a session pairs only its own launches.
pub fn accept_hand_offs(accept: bool) {
    ACCEPTED.store(accept, Ordering::Release);
    while RING.pop().is_some() {}
    DROPPED.store(0, Ordering::Relaxed);
}

/// Whether a launching side accepts hand-offs now.
#[inline]
pub fn hand_offs_accepted() -> bool {
    ACCEPTED.load(Ordering::Relaxed)
}

/// Hands the innermost annotation open on this thread, and the time, to the thread
/// that will launch the work issued now; returns whether it was kept (false when no
/// launching side accepts them, or the ring is full).
///
/// Call it once per launch, in issue order, and only for launches the accepting side
/// will see: a hand-off nobody takes shifts every later pairing by one.
#[inline]
pub fn hand_off() -> bool {
    if !ACCEPTED.load(Ordering::Relaxed) {
        return false;
    }
    push_now()
}

#[cold]
fn push_now() -> bool {
    let scope = innermost_scope().map_or(NO_SCOPE, ScopeId::to_u64);
    if RING.push(scope, clock::now()) {
        true
    } else {
        DROPPED.fetch_add(1, Ordering::Relaxed);
        false
    }
}

/// The oldest hand-off not yet taken: what was open where the launch being made now
/// was issued. `None` when there is none (nothing was handed off, or every hand-off was
/// taken).
#[inline]
pub fn take_hand_off() -> Option<HandOff> {
    let (scope, at) = RING.pop()?;
    Some(HandOff {
        scope: (scope != NO_SCOPE).then(|| ScopeId::from_u64(scope)),
        at,
    })
}

/// Hand-offs dropped because the ring was full, since hand-offs were last accepted.
pub fn hand_offs_dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_is_first_in_first_out_and_bounded() {
        // Private ring: the process-wide one is shared with other tests.
        let ring = Ring {
            slots: std::array::from_fn(|i| Slot {
                seq: AtomicUsize::new(i),
                scope: AtomicU64::new(0),
                at: AtomicU64::new(0),
            }),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
        };
        assert_eq!(ring.pop(), None);
        for lap in 0..3u64 {
            for i in 0..HAND_OFF_CAPACITY as u64 {
                assert!(ring.push(lap, i), "lap {lap}, push {i}");
            }
            assert!(!ring.push(9, 9), "full");
            for i in 0..HAND_OFF_CAPACITY as u64 {
                assert_eq!(ring.pop(), Some((lap, i)));
            }
            assert_eq!(ring.pop(), None);
        }
    }

    #[test]
    fn threads_hand_off_every_value_once() {
        let ring = std::sync::Arc::new(Ring {
            slots: std::array::from_fn(|i| Slot {
                seq: AtomicUsize::new(i),
                scope: AtomicU64::new(0),
                at: AtomicU64::new(0),
            }),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
        });
        const PER_THREAD: u64 = 20_000;
        let producers: Vec<_> = (0..3u64)
            .map(|t| {
                let ring = ring.clone();
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        // Bounded: the consumer drains, so a full ring frees up.
                        let mut tries = 0u32;
                        while !ring.push(t, i) {
                            tries += 1;
                            assert!(tries < 10_000_000, "the ring never drained");
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u64; 3];
        let mut got = 0;
        let mut idle = 0u64;
        while got < 3 * PER_THREAD {
            match ring.pop() {
                Some((t, i)) => {
                    // Each producer's values arrive in its order.
                    assert_eq!(i, next[t as usize]);
                    next[t as usize] += 1;
                    got += 1;
                }
                None => {
                    idle += 1;
                    assert!(idle < 100_000_000, "producers stalled at {got}");
                    std::thread::yield_now();
                }
            }
        }
        for p in producers {
            p.join().expect("producer");
        }
        assert_eq!(ring.pop(), None);
    }
}
