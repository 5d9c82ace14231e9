//! The recording clock: raw ticks on the hot path, nanoseconds at collection.
//!
//! Reading the clock is half the cost of an annotation, so the hot path reads raw
//! ticks and nothing else: the x86-64 time-stamp counter when the kernel itself trusts
//! it as its clocksource (invariant and synchronised across cores), otherwise
//! nanoseconds of `std::time::Instant`. Ticks become nanoseconds once per session, by a
//! line through two [`Anchor`]s taken at the session's start and stop, the way
//! fastrace's collector converts its batches.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

const UNDECIDED: u8 = 0;
const TSC: u8 = 1;
const MONOTONIC: u8 = 2;

static SOURCE: AtomicU8 = AtomicU8::new(UNDECIDED);
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// The current time in raw ticks. Only differences and [`Anchor`] conversion are
/// meaningful.
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if SOURCE.load(Ordering::Relaxed) == TSC {
            return tsc();
        }
    }
    monotonic_ns()
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_code)]
fn tsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64; it only reads the counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The process-wide origin of [`monotonic_ns`].
pub(crate) fn epoch() -> Instant {
    *EPOCH.get_or_init(Instant::now)
}

/// Nanoseconds since [`epoch`]: the tick source where there is no TSC, and the clock
/// device tracers stamp with.
pub(crate) fn monotonic_ns() -> u64 {
    epoch().elapsed().as_nanos() as u64
}

/// Chooses the tick source once per process; called before the first session records.
/// The source never changes afterwards, so ticks of one session are all comparable.
pub(crate) fn init() {
    if SOURCE.load(Ordering::Acquire) != UNDECIDED {
        return;
    }
    EPOCH.get_or_init(Instant::now);
    let source = if tsc_is_trusted() { TSC } else { MONOTONIC };
    let _ = SOURCE.compare_exchange(UNDECIDED, source, Ordering::AcqRel, Ordering::Acquire);
}

/// Whether the clock reads the time-stamp counter (otherwise it reads `Instant`).
pub fn uses_tsc() -> bool {
    init();
    SOURCE.load(Ordering::Relaxed) == TSC
}

fn tsc_is_trusted() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    // Linux tests the TSC for invariance and cross-core sync at boot and falls back to
    // another clocksource when it fails; following its verdict avoids redoing that here.
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .map(|s| s.trim() == "tsc")
        .unwrap_or(false)
}

/// One instant read on every clock at (nearly) once: raw ticks, the monotonic clock
/// and the wall clock.
#[derive(Clone, Copy, Debug)]
pub struct Anchor {
    /// Raw ticks of [`now`].
    pub ticks: u64,
    /// `Instant` at the same moment.
    pub instant: Instant,
    /// Wall-clock time in nanoseconds since the Unix epoch.
    pub unix_ns: u64,
}

impl Anchor {
    /// Reads all clocks now.
    pub fn now() -> Anchor {
        init();
        let instant = Instant::now();
        let ticks = now();
        let unix_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Anchor {
            ticks,
            instant,
            unix_ns,
        }
    }
}

/// Converts the ticks of one session into nanoseconds since its start.
///
/// In fixed point, not floating point: collection converts two timestamps per event,
/// and x86-64 has no one-instruction conversion between `u64` and `f64` (each way is
/// a branchy sequence of about seven), where a 64×64→128-bit multiply is one.
#[derive(Clone, Copy, Debug)]
pub struct TickScale {
    origin: u64,
    /// Nanoseconds per tick × 2^[`SCALE_BITS`], rounded: off by at most 2^-41 ns a
    /// tick, a microsecond after about 10 days of a 2.5 GHz counter.
    ns_per_tick: u64,
}

/// Fraction bits of [`TickScale`]'s nanoseconds per tick; ticks of up to 2^24 ns fit.
const SCALE_BITS: u32 = 40;

impl TickScale {
    /// The scale measured between two anchors of one session.
    pub fn between(start: &Anchor, stop: &Anchor) -> TickScale {
        let ticks = stop.ticks.saturating_sub(start.ticks);
        let nanos = stop.instant.duration_since(start.instant).as_nanos() as f64;
        let ns_per_tick = if ticks == 0 || !uses_tsc() {
            1.0
        } else {
            nanos / ticks as f64
        };
        TickScale {
            origin: start.ticks,
            // Saturating: a float-to-int `as` clamps (and NaN becomes 0).
            ns_per_tick: (ns_per_tick * (1u64 << SCALE_BITS) as f64).round() as u64,
        }
    }

    /// Nanoseconds from the session start to `ticks`; ticks before the start (a core
    /// whose counter lags by a few cycles) clamp to zero, and beyond `u64` to its max.
    #[inline]
    pub fn to_ns(&self, ticks: u64) -> u64 {
        let ns = (u128::from(ticks.saturating_sub(self.origin)) * u128::from(self.ns_per_tick))
            >> SCALE_BITS;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }

    /// Nanoseconds from `ticks` to the session start, when `ticks` are before it (0
    /// otherwise): what [`to_ns`](TickScale::to_ns) clamps away.
    #[inline]
    pub fn ns_before_start(&self, ticks: u64) -> u64 {
        let ns = (u128::from(self.origin.saturating_sub(ticks)) * u128::from(self.ns_per_tick))
            >> SCALE_BITS;
        u64::try_from(ns).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_advance_and_scale_to_real_time() {
        let start = Anchor::now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mid = now();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let stop = Anchor::now();
        let scale = TickScale::between(&start, &stop);
        let mid_ns = scale.to_ns(mid);
        assert!(
            (15_000_000..60_000_000).contains(&mid_ns),
            "mid at {mid_ns} ns"
        );
        let total = scale.to_ns(stop.ticks);
        let real = stop.instant.duration_since(start.instant).as_nanos() as u64;
        assert!(total.abs_diff(real) < 1_000, "{total} vs {real}");
        assert_eq!(scale.to_ns(start.ticks.saturating_sub(10)), 0);
    }

    #[test]
    fn fixed_point_scaling_agrees_with_floating_point() {
        for ns_per_tick in [1.0, 0.4, 1.0 / 3.0, 0.357_142_857, 2.5, 1000.0] {
            let scale = TickScale {
                origin: 100,
                ns_per_tick: (ns_per_tick * (1u64 << SCALE_BITS) as f64).round() as u64,
            };
            for ticks in [0u64, 1, 999, 1 << 20, 123_456_789_012, 1 << 50, 1 << 62] {
                let want = (ticks as f64 * ns_per_tick) as u64;
                let got = scale.to_ns(ticks + 100);
                // Within a nanosecond and 2^-38 of the value: the rounding of
                // ns_per_tick to 40 fraction bits, and f64's 53-bit mantissa.
                let slack = 1 + (want >> 38);
                assert!(
                    got.abs_diff(want) <= slack,
                    "{ns_per_tick} × {ticks}: {got} vs {want}"
                );
            }
        }
        let huge = TickScale {
            origin: 0,
            ns_per_tick: 1000 << SCALE_BITS,
        };
        assert_eq!(huge.to_ns(u64::MAX), u64::MAX);
    }
}
