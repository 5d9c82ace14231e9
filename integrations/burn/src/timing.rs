//! Kernel measurements read back and placed on prof's clock.
//!
//! cubecl hands each timed launch over as a window whose two ends are `Instant`s. How
//! those relate to the host clock depends on the runtime:
//!
//! - CUDA and HIP anchor their device events to the host clock (cubecl-server's event
//!   profiler records an event, waits for it and reads `Instant::now()` beside it), and
//!   a measurement by the host's timer (`TimingMethod::System`) is on it already;
//! - wgpu's timestamp queries count from the device's own origin: cubecl adds the
//!   device ticks to the `Instant` its query profiler was made at, so the windows are
//!   exact relative to each other, on one queue, but off from the host by an unknown
//!   amount (lavapipe's, for one, are hours ahead).
//!
//! [`align`] keeps a clock that agrees (every window inside the session, none starting
//! before its launch) and shifts one that does not by the smallest offset that puts no
//! kernel before its launch, for each issuing thread's windows (cubecl's queues, and
//! their query profilers, are per thread). That offset is exact when at least one
//! kernel started as soon as it was launched (an idle device), and otherwise places the
//! kernels at most that idle gap too early.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use cubecl_runtime::logging::{ProfileDuration, TimingMethod};

/// A kernel's window on the device, ns on prof's tracer clock (`tracer::clock_ns`),
/// before alignment: signed, as a device clock may be anywhere.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    /// Start, ns.
    pub start: i128,
    /// End, ns.
    pub end: i128,
    /// How it was measured.
    pub method: TimingMethod,
}

/// Waits for `future` on this thread. cubecl's measurements resolve when the device
/// reaches them (wgpu's poll thread maps the buffer, CUDA events are waited on), with
/// no executor needed.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            // A spurious wake-up polls again; a missed one cannot happen, as `unpark`
            // before `park` makes `park` return at once.
            Poll::Pending => std::thread::park(),
        }
    }
}

/// Converts `Instant`s to the tracer clock through one reading of both.
#[derive(Clone, Copy, Debug)]
pub(crate) struct InstantClock {
    instant: Instant,
    clock_ns: u64,
}

impl InstantClock {
    /// Reads both clocks now.
    pub(crate) fn now() -> InstantClock {
        InstantClock {
            instant: Instant::now(),
            clock_ns: profiler_core::tracer::clock_ns(),
        }
    }

    /// `at` on the tracer clock (signed: before its origin is negative).
    pub(crate) fn ns(&self, at: Instant) -> i128 {
        let base = i128::from(self.clock_ns);
        match at.checked_duration_since(self.instant) {
            Some(after) => base + after.as_nanos() as i128,
            None => base - self.instant.duration_since(at).as_nanos() as i128,
        }
    }
}

/// Reads `profile` back: its window on the tracer clock, `None` when it carried no
/// measurement (a window the device never wrote, which cubecl reports as absent).
pub(crate) fn read(profile: ProfileDuration, clock: &InstantClock) -> Option<Window> {
    let method = profile.timing_method();
    let ticks = block_on(profile.resolve())?;
    // `ProfileTicks` shows its ends only as durations since an instant: one taken
    // before every plausible device instant keeps them from saturating at zero.
    let origin = earliest_instant();
    let start = clock.ns(origin) + ticks.start_duration_since(origin).as_nanos() as i128;
    let end = clock.ns(origin) + ticks.end_duration_since(origin).as_nanos() as i128;
    Some(Window { start, end, method })
}

/// An `Instant` long before now: a year back where the platform's clock goes there
/// (Linux's monotonic clock takes negative seconds), less where it does not.
fn earliest_instant() -> Instant {
    let now = Instant::now();
    let mut back = std::time::Duration::from_secs(365 * 24 * 3600);
    loop {
        if let Some(earlier) = now.checked_sub(back) {
            return earlier;
        }
        if back.is_zero() {
            return now;
        }
        back /= 2;
    }
}

/// One timed launch to align: when it was issued on the host (ns, tracer clock) and
/// its window.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Timed {
    /// Issued, ns.
    pub issued: u64,
    /// The device window.
    pub window: Window,
}

/// The offset (ns) to add to the windows of one issuing thread, `timed`: 0 when their
/// clock agrees with the host's (each window inside `[session_start, collected]` and
/// none starting before its launch), otherwise the smallest that puts no kernel
/// before its launch.
pub(crate) fn align(timed: &[Timed], session_start: u64, collected: u64) -> i128 {
    let Some(needed) = timed
        .iter()
        .map(|t| i128::from(t.issued) - t.window.start)
        .max()
    else {
        return 0;
    };
    let (lo, hi) = (i128::from(session_start), i128::from(collected));
    let inside = timed
        .iter()
        .all(|t| lo <= t.window.start && t.window.end <= hi);
    if inside && needed <= 0 {
        0
    } else {
        needed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(issued: u64, start: i128, end: i128) -> Timed {
        Timed {
            issued,
            window: Window {
                start,
                end,
                method: TimingMethod::Device,
            },
        }
    }

    #[test]
    fn a_clock_that_agrees_is_kept() {
        // Kernels run 5 and 40 µs after their launches, inside the session.
        let windows = [timed(1_000, 6_000, 9_000), timed(2_000, 42_000, 50_000)];
        assert_eq!(align(&windows, 0, 100_000), 0);
    }

    #[test]
    fn a_device_clock_of_its_own_is_shifted_to_the_earliest_possible() {
        // wgpu's: hours ahead. The first kernel started at its launch (idle device),
        // the second waited 3 µs behind it.
        let ahead: i128 = 7 * 3_600 * 1_000_000_000;
        let windows = [
            timed(1_000, ahead + 500, ahead + 2_500),
            timed(1_500, ahead + 2_500, ahead + 4_000),
        ];
        let shift = align(&windows, 0, 100_000);
        assert_eq!(windows[0].window.start + shift, 1_000);
        assert_eq!(windows[1].window.start + shift, 3_000);
        // Behind the host: shifted forward the same way.
        let behind = [timed(10_000, -5_000, -4_000)];
        assert_eq!(behind[0].window.start + align(&behind, 0, 100_000), 10_000);
    }

    #[test]
    fn a_kernel_before_its_launch_shifts_even_an_inside_clock() {
        let windows = [timed(5_000, 4_000, 6_000), timed(8_000, 9_000, 9_500)];
        assert_eq!(align(&windows, 0, 100_000), 1_000);
    }

    #[test]
    fn instants_convert_both_ways_around_the_reading() {
        let clock = InstantClock::now();
        let later = clock.instant + std::time::Duration::from_micros(7);
        assert_eq!(clock.ns(later), i128::from(clock.clock_ns) + 7_000);
        let earlier = clock.instant - std::time::Duration::from_micros(3);
        assert_eq!(clock.ns(earlier), i128::from(clock.clock_ns) - 3_000);
    }

    #[test]
    fn a_measurement_reads_back_on_the_tracer_clock() {
        let clock = InstantClock::now();
        let start = Instant::now();
        let end = start + std::time::Duration::from_micros(25);
        let window = read(ProfileDuration::new_system_time(start, end), &clock).expect("read");
        assert_eq!(window.end - window.start, 25_000);
        assert_eq!(window.method, TimingMethod::System);
        assert_eq!(window.start, clock.ns(start));
    }
}
