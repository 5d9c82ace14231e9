//! Bytes in use and their peaks, per allocator: what the tracking allocator and device
//! tracers write as memory comes and goes, and what [`crate::memory`] reads.
//!
//! Each allocator is a [`Tracked`]: its bytes in use, its peak since the last reset,
//! and one peak per open [`crate::memory::scope`]. Scopes share a pool of
//! [`SCOPE_SLOTS`] slots, claimed and released through two bit masks; an update
//! raises the peak of every claimed slot, so it costs one atomic maximum per open
//! scope. Updates come from cold paths only (a thread folding its allocation tally, a
//! device tracer handing over what it saw), never from each allocation.
//!
//! It lives at the bottom of the crate, beside the gate: the allocator that writes it
//! and the API that reads it both sit above and import neither each other.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;

/// How many scopes may be open at once, in all threads together.
pub(crate) const SCOPE_SLOTS: usize = 64;

/// Slots handed out (a scope is setting its slots up, or open).
static CLAIMED: AtomicU64 = AtomicU64::new(0);
/// Slots whose scope is open: updates raise their peaks.
static ACTIVE: AtomicU64 = AtomicU64::new(0);

/// One allocator's bytes in use and peaks.
#[derive(Debug)]
pub(crate) struct Tracked {
    in_use: AtomicI64,
    peak: AtomicI64,
    scopes: [AtomicI64; SCOPE_SLOTS],
    /// Whether anything was ever counted: an allocator nobody wrote to is not shown.
    seen: AtomicBool,
}

impl Tracked {
    pub(crate) const fn new() -> Tracked {
        Tracked {
            in_use: AtomicI64::new(0),
            peak: AtomicI64::new(0),
            scopes: [const { AtomicI64::new(0) }; SCOPE_SLOTS],
            seen: AtomicBool::new(false),
        }
    }

    /// Adds `delta` bytes (negative for a release) and returns the bytes in use after.
    pub(crate) fn add(&self, delta: i64) -> i64 {
        let now = self.in_use.fetch_add(delta, Ordering::Relaxed) + delta;
        self.observe(now);
        now
    }

    /// Notes that `bytes` were in use: the peak and every open scope's peak rise to it.
    pub(crate) fn observe(&self, bytes: i64) {
        if !self.seen.load(Ordering::Relaxed) {
            self.seen.store(true, Ordering::Relaxed);
        }
        self.peak.fetch_max(bytes, Ordering::Relaxed);
        let mut open = ACTIVE.load(Ordering::Acquire);
        while open != 0 {
            let slot = open.trailing_zeros() as usize;
            self.scopes[slot].fetch_max(bytes, Ordering::Relaxed);
            open &= open - 1;
        }
    }

    /// Bytes in use, as last added.
    pub(crate) fn in_use(&self) -> i64 {
        self.in_use.load(Ordering::Relaxed)
    }

    /// The highest bytes in use noted since the last reset.
    pub(crate) fn peak(&self) -> i64 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Starts the peak over from `bytes` (the bytes in use now).
    pub(crate) fn reset_peak(&self, bytes: i64) {
        self.peak.store(bytes, Ordering::Relaxed);
    }

    /// Whether anything was counted.
    pub(crate) fn seen(&self) -> bool {
        self.seen.load(Ordering::Relaxed)
    }

    /// The peak scope `slot` noted.
    pub(crate) fn scope_peak(&self, slot: usize) -> i64 {
        self.scopes[slot].load(Ordering::Relaxed)
    }

    fn start_scope(&self, slot: usize, bytes: i64) {
        self.scopes[slot].store(bytes, Ordering::Relaxed);
    }
}

/// The host heap, as the tracking allocator counts it.
pub(crate) static HOST: Tracked = Tracked::new();

/// Device allocators by name (`GPU_0`, ...), in the order they were first named.
static DEVICES: Mutex<Vec<(&'static str, &'static Tracked)>> = Mutex::new(Vec::new());

fn devices_locked() -> std::sync::MutexGuard<'static, Vec<(&'static str, &'static Tracked)>> {
    DEVICES.lock().unwrap_or_else(|e| e.into_inner())
}

/// The allocator named `name`, made on first use and kept for the process's lifetime
/// (one per device: a handful).
pub(crate) fn device(name: &str) -> &'static Tracked {
    let mut devices = devices_locked();
    if let Some((_, tracked)) = devices.iter().find(|(n, _)| *n == name) {
        return tracked;
    }
    let tracked: &'static Tracked = Box::leak(Box::new(Tracked::new()));
    devices.push((Box::leak(name.to_owned().into_boxed_str()), tracked));
    tracked
}

/// Every device allocator named so far.
pub(crate) fn devices() -> Vec<(&'static str, &'static Tracked)> {
    devices_locked().clone()
}

/// Claims a scope slot, starting each allocator's peak in it at `start(allocator)`;
/// `None` when all [`SCOPE_SLOTS`] are taken.
pub(crate) fn open_scope(start: impl Fn(&Tracked) -> i64) -> Option<usize> {
    let mut claimed = CLAIMED.load(Ordering::Relaxed);
    let slot = loop {
        let free = !claimed;
        if free == 0 {
            return None;
        }
        let slot = free.trailing_zeros();
        match CLAIMED.compare_exchange_weak(
            claimed,
            claimed | 1 << slot,
            Ordering::Relaxed,
            Ordering::Relaxed,
        ) {
            Ok(_) => break slot as usize,
            Err(now) => claimed = now,
        }
    };
    // The slot is this scope's alone now: set its starting values, then let updates in.
    HOST.start_scope(slot, start(&HOST));
    for (_, tracked) in devices() {
        tracked.start_scope(slot, start(tracked));
    }
    ACTIVE.fetch_or(1 << slot, Ordering::Release);
    Some(slot)
}

/// Gives back a slot [`open_scope`] claimed.
pub(crate) fn close_scope(slot: usize) {
    ACTIVE.fetch_and(!(1 << slot), Ordering::Relaxed);
    CLAIMED.fetch_and(!(1 << slot), Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_follow_additions_and_scopes_see_only_their_own() {
        let t = Tracked::new();
        assert!(!t.seen());
        assert_eq!(t.add(100), 100);
        assert_eq!(t.add(-40), 60);
        assert_eq!((t.in_use(), t.peak()), (60, 100));
        assert!(t.seen());
        t.reset_peak(t.in_use());
        assert_eq!(t.peak(), 60);
        let slot = open_scope(|_| 0).expect("a free slot");
        t.start_scope(slot, 60);
        t.add(30);
        t.add(-50);
        close_scope(slot);
        t.add(500);
        assert_eq!(t.scope_peak(slot), 90, "the scope closed before the 500");
        assert_eq!(t.peak(), 540);
    }
}
