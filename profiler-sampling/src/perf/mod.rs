//! The first choice of trigger: `perf_event_open`, one event per thread counting its
//! CPU time in user space (`PERF_COUNT_SW_TASK_CLOCK`) and sampling every period, with
//! the call chain the kernel walks by frame pointers and a `CLOCK_MONOTONIC` time.
//! Nothing runs on the sampled threads: the kernel writes each sample into the
//! event's ring, and the collector thread reads the rings.
//!
//! Each ring is 8 pages (32 KiB, about 140 samples of 25 frames, 140 ms at 1 kHz). The
//! kernel wakes the collector when one is half full, and the collector reads them all
//! then and at least every 50 ms. Unprivileged rings count against
//! `perf_event_mlock_kb`, and at 8 pages 256 threads fit where 64-page rings stopped
//! at 35.

mod attr;
mod ring;

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::recorded::Recorded;
use ring::Ring;

/// Data pages of each ring.
const DATA_PAGES: usize = 8;
const PAGE: u32 = 4096;
/// `PERF_RECORD_SAMPLE` and `PERF_RECORD_LOST`.
const RECORD_SAMPLE: u32 = 9;
const RECORD_LOST: u32 = 2;
/// Call chain entries from here up are context markers (`PERF_CONTEXT_USER`, ...).
const CONTEXT_MAX: u64 = -4095i64 as u64;
/// `PERF_EVENT_IOC_DISABLE`.
const IOC_DISABLE: libc::c_ulong = 0x2401;

struct Event {
    ring: Ring,
    /// Kept open as long as the ring is mapped (dropped after it).
    fd: OwnedFd,
}

/// The events of every thread sampled.
pub(crate) struct Perf {
    events: HashMap<u32, Event>,
    period_ns: u64,
    scratch: Vec<u8>,
    stack: Vec<u64>,
}

impl Perf {
    /// Sampling every `period_ns` of CPU time; no thread yet.
    pub(crate) fn new(period_ns: u64) -> Perf {
        Perf {
            events: HashMap::new(),
            period_ns,
            scratch: Vec::with_capacity(1024),
            stack: Vec::with_capacity(128),
        }
    }

    /// Whether thread `tid` is sampled.
    pub(crate) fn has(&self, tid: u32) -> bool {
        self.events.contains_key(&tid)
    }

    /// The threads sampled.
    pub(crate) fn tids(&self) -> Vec<u32> {
        self.events.keys().copied().collect()
    }

    /// Each event's thread and descriptor, for the collector's `poll`.
    pub(crate) fn fds(&self, into: &mut Vec<(u32, RawFd)>) {
        into.extend(self.events.iter().map(|(&tid, e)| (tid, e.fd.as_raw_fd())));
    }

    /// Starts sampling thread `tid`.
    ///
    /// # Errors
    /// Why the kernel refused, in words a user can act on.
    pub(crate) fn add(&mut self, tid: u32) -> Result<(), String> {
        let fd = attr::open(tid, self.period_ns, DATA_PAGES as u32 * PAGE)
            .map_err(|e| attr::refusal(&e))?;
        let ring = Ring::map(&fd, DATA_PAGES).map_err(|e| {
            format!(
                "mapping the perf ring failed ({e}): locked memory for perf rings \
                 (kernel.perf_event_mlock_kb, RLIMIT_MEMLOCK) is used up"
            )
        })?;
        self.events.insert(tid, Event { ring, fd });
        Ok(())
    }

    /// Stops sampling thread `tid` (which exited), keeping what its ring holds.
    pub(crate) fn remove(&mut self, tid: u32, out: &mut Recorded) {
        if let Some(mut event) = self.events.remove(&tid) {
            drain_one(&mut event, &mut self.scratch, &mut self.stack, out);
        }
    }

    /// Reads every ring.
    pub(crate) fn drain(&mut self, out: &mut Recorded) {
        for event in self.events.values_mut() {
            drain_one(event, &mut self.scratch, &mut self.stack, out);
        }
    }

    /// Stops every event, then reads what their rings hold.
    pub(crate) fn stop(mut self, out: &mut Recorded) {
        for event in self.events.values() {
            #[allow(unsafe_code)]
            // SAFETY: an ioctl without argument on a perf event descriptor we own.
            unsafe {
                libc::ioctl(event.fd.as_raw_fd(), IOC_DISABLE as _, 0);
            }
        }
        self.drain(out);
    }
}

fn drain_one(event: &mut Event, scratch: &mut Vec<u8>, stack: &mut Vec<u64>, out: &mut Recorded) {
    event.ring.drain(scratch, |kind, body| match kind {
        RECORD_SAMPLE => {
            if let Some((tid, time)) = parse_sample(body, stack) {
                out.add(tid, time, stack);
            }
        }
        RECORD_LOST => {
            if let Some(lost) = u64_at(body, 8) {
                out.lost += lost;
            }
        }
        _ => {}
    });
}

fn u64_at(body: &[u8], at: usize) -> Option<u64> {
    let bytes = body.get(at..at + 8)?;
    Some(u64::from_ne_bytes(bytes.try_into().ok()?))
}

/// Reads a sample record's body (`pid, tid: u32; time: u64; nr: u64; ips[nr]`) into
/// its thread, time, and user-space stack (context markers left out).
fn parse_sample(body: &[u8], stack: &mut Vec<u64>) -> Option<(u32, u64)> {
    let tid = u32::from_ne_bytes(body.get(4..8)?.try_into().ok()?);
    let time = u64_at(body, 8)?;
    let nr = u64_at(body, 16)? as usize;
    stack.clear();
    for i in 0..nr.min(body.len().saturating_sub(24) / 8) {
        let ip = u64_at(body, 24 + 8 * i)?;
        if ip < CONTEXT_MAX {
            stack.push(ip);
        }
    }
    Some((tid, time))
}

/// Whether perf can sample this thread: the probe `auto` makes before choosing.
///
/// # Errors
/// Why not, in words a user can act on.
pub(crate) fn probe(period_ns: u64) -> Result<(), String> {
    let mut perf = Perf::new(period_ns);
    perf.add(crate::threads::current())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sample_record_gives_its_thread_time_and_user_stack() {
        let mut body = Vec::new();
        body.extend(7u32.to_ne_bytes());
        body.extend(42u32.to_ne_bytes());
        body.extend(123_456u64.to_ne_bytes());
        let chain = [-512i64 as u64, 0x1000, 0x2000, 0x3000];
        body.extend((chain.len() as u64).to_ne_bytes());
        for ip in chain {
            body.extend(ip.to_ne_bytes());
        }
        let mut stack = Vec::new();
        assert_eq!(parse_sample(&body, &mut stack), Some((42, 123_456)));
        assert_eq!(stack, [0x1000, 0x2000, 0x3000]);
        // A record cut short reads no further than it goes.
        assert_eq!(parse_sample(&body[..20], &mut stack), None);
        assert_eq!(
            parse_sample(&body[..body.len() - 8], &mut stack),
            Some((42, 123_456))
        );
        assert_eq!(stack, [0x1000, 0x2000]);
    }
}
