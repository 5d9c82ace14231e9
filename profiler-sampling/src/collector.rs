//! The sampler's own thread, `prof-sampler`: it lists the process's threads (starting
//! a trigger on each new one, dropping those that exited), reads the samples the
//! triggers left, and snapshots the mappings again when a sample falls outside every
//! one known. Between rounds it sleeps in `poll(2)` ([`Wake`]): until the stop, a
//! perf ring half full, a perf thread's exit, or the [`interval`]. It is not sampled
//! itself: its work is prof's cost, not the program's.

use std::collections::{HashMap, HashSet};
use std::os::fd::RawFd;
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::maps::{self, Maps};
use crate::perf::{self, Perf};
use crate::recorded::{Backend, Recorded};
use crate::settings::{Choice, Settings};
use crate::threads;
use crate::timer::Timers;
use crate::wake::{Wake, Woken};

/// How long the collector sleeps between rounds, at `hz`, when nothing wakes it
/// sooner. A round lists the threads and reads their clocks: where every core is busy
/// its time is the program's, and it does not depend on the rate.
/// - **Timers:** about every 10 samples of a busy thread, from 10 ms (1 kHz and over)
///   to 100 ms (99 Hz), so that the handlers' queue (4096 samples) never fills.
/// - **perf:** at least 50 ms. The kernel wakes the collector when a ring is half full
///   (16 KiB: about 70 samples of 25 frames, 70 ms at 1 kHz; sooner for deeper stacks or
///   higher rates), so the interval is only how soon a new thread is found. Woken every
///   10 ms at 1 kHz, as the timers are, the collector's rounds were about 1% of a core
///   and preempted the program's threads a hundred times a second.
fn interval(hz: u32, perf: bool) -> Duration {
    let every_ten_samples = Duration::from_millis((10_000 / u64::from(hz.max(1))).clamp(10, 100));
    if perf {
        every_ten_samples.max(PERF_MIN_INTERVAL)
    } else {
        every_ten_samples
    }
}
/// The shortest sleep between two rounds with perf: see [`interval`].
const PERF_MIN_INTERVAL: Duration = Duration::from_millis(50);
/// Least time between two snapshots of `/proc/self/maps` (a few hundred microseconds
/// each for a program with many libraries).
const MAPS_INTERVAL: Duration = Duration::from_millis(100);
/// How often the names of the threads sampled are read again: a new thread has its
/// creator's name until it names itself, and an exited thread's can no longer be read.
const NAMES_EVERY: u32 = 10;

enum Trigger {
    Perf(Perf),
    Timer(Timers),
}

impl Trigger {
    fn has(&self, tid: u32) -> bool {
        match self {
            Trigger::Perf(p) => p.has(tid),
            Trigger::Timer(t) => t.has(tid),
        }
    }

    fn tids(&self) -> Vec<u32> {
        match self {
            Trigger::Perf(p) => p.tids(),
            Trigger::Timer(t) => t.tids(),
        }
    }

    /// The perf events' descriptors, by thread, for the collector's `poll`.
    fn fds(&self, into: &mut Vec<(u32, RawFd)>) {
        into.clear();
        if let Trigger::Perf(p) = self {
            p.fds(into);
        }
    }

    fn add(&mut self, tid: u32) -> Result<(), String> {
        match self {
            Trigger::Perf(p) => p.add(tid),
            Trigger::Timer(t) => t.add(tid),
        }
    }

    fn remove(&mut self, tid: u32, out: &mut Recorded) {
        match self {
            Trigger::Perf(p) => p.remove(tid, out),
            Trigger::Timer(t) => t.remove(tid),
        }
    }

    fn drain(&mut self, out: &mut Recorded) {
        match self {
            Trigger::Perf(p) => p.drain(out),
            Trigger::Timer(t) => t.drain(out),
        }
    }

    fn stop(self, out: &mut Recorded) {
        match self {
            Trigger::Perf(p) => p.stop(out),
            Trigger::Timer(t) => t.stop(out),
        }
    }
}

/// What the collector hands back at the stop.
pub(crate) struct Collected {
    pub(crate) recorded: Recorded,
    /// CPU time of the threads sampled while they were, nanoseconds: what the rate
    /// reached is measured against.
    pub(crate) cpu_ns: u64,
}

/// The running collector.
pub(crate) struct Collector {
    stop: Arc<Wake>,
    thread: JoinHandle<Collected>,
}

/// Warnings found at the start, for the profile.
pub(crate) struct Started {
    pub(crate) collector: Collector,
    pub(crate) warnings: Vec<String>,
}

struct State {
    trigger: Trigger,
    recorded: Recorded,
    maps: Maps,
    last_maps: Instant,
    /// Samples already checked against the mappings.
    checked: usize,
    /// Threads a trigger could not start on, or whose perf event said they exited:
    /// not tried again.
    refused: HashSet<u32>,
    /// Per thread sampled: its CPU time when first seen, and last read.
    cpu: HashMap<u32, (u64, u64)>,
    tids: Vec<u32>,
    me: u32,
}

/// Chooses a trigger, starts it on every thread of the process, and starts the
/// collector thread.
///
/// # Errors
/// Why nothing can sample (perf asked for and refused, and no fallback wanted; the
/// timer's handler cannot be installed; no thread can be started).
pub(crate) fn start(settings: &Settings) -> Result<Started, String> {
    let period_ns = 1_000_000_000 / u64::from(settings.hz.max(1));
    let mut warnings = Vec::new();
    let (trigger, backend, reason) = match settings.backend {
        Choice::Perf => {
            perf::probe(period_ns).map_err(|why| format!("prof: no stack samples: {why}"))?;
            (Trigger::Perf(Perf::new(period_ns)), Backend::Perf, None)
        }
        Choice::Timer => (
            Trigger::Timer(
                Timers::start(period_ns).map_err(|why| format!("prof: no stack samples: {why}"))?,
            ),
            Backend::Timer,
            Some("host_sampling_backend = \"timer\" asked for it".to_owned()),
        ),
        Choice::Auto => match perf::probe(period_ns) {
            Ok(()) => (Trigger::Perf(Perf::new(period_ns)), Backend::Perf, None),
            Err(why) => (
                Trigger::Timer(Timers::start(period_ns).map_err(|e| {
                    format!("prof: no stack samples: {why}; and the timer fallback failed: {e}")
                })?),
                Backend::Timer,
                Some(why),
            ),
        },
    };
    if let Trigger::Timer(t) = &trigger {
        if !t.walks {
            warnings.push(
                "prof: process_vm_readv is refused here (a seccomp filter?), so each timer \
                 sample keeps only the function it interrupted"
                    .into(),
            );
        }
    }
    if crate::frame_pointers::present() == Some(false) {
        warnings.push(crate::frame_pointers::MISSING.into());
    }
    let mut recorded = Recorded::new(backend, reason);
    recorded.monotonic_offset = monotonic_offset();
    let mut state = State {
        trigger,
        recorded,
        maps: Maps::default(),
        last_maps: Instant::now(),
        checked: 0,
        refused: HashSet::new(),
        cpu: HashMap::new(),
        tids: Vec::new(),
        // The collector's id is known once it runs; until then no thread is left out.
        me: 0,
    };
    maps::snapshot(&mut state.maps);
    // Every thread alive now is sampled from the session's first moment.
    state.scan();
    let interval = interval(settings.hz, matches!(state.trigger, Trigger::Perf(_)));
    let wake = Arc::new(Wake::new().map_err(|e| {
        format!("prof: no stack samples: cannot make the sampler's wake-up eventfd: {e}")
    })?);
    let stop = Arc::clone(&wake);
    let (me_tx, me_rx) = mpsc::channel::<u32>();
    let thread = std::thread::Builder::new()
        .name("prof-sampler".into())
        .spawn(move || {
            state.me = threads::current();
            let _ = me_tx.send(state.me);
            state.trigger.remove(state.me, &mut state.recorded);
            let mut rounds = 0u32;
            let mut fds = Vec::new();
            let mut exited = Vec::new();
            loop {
                rounds = rounds.wrapping_add(1);
                if rounds.is_multiple_of(NAMES_EVERY) {
                    state.read_names();
                }
                state.scan();
                state.trigger.drain(&mut state.recorded);
                state.check_maps();
                state.trigger.fds(&mut fds);
                match wake.wait(&fds, interval, &mut exited) {
                    Woken::Stop => break,
                    Woken::Exited => state.exited(&exited),
                    Woken::Data | Woken::Interval => {}
                }
            }
            state.finish()
        })
        .map_err(|e| format!("prof: no stack samples: cannot start the sampler thread: {e}"))?;
    // Until the thread says who it is, it would sample itself.
    let _ = me_rx.recv_timeout(Duration::from_secs(1));
    Ok(Started {
        collector: Collector { stop, thread },
        warnings,
    })
}

impl Collector {
    /// Stops sampling and hands back everything sampled.
    ///
    /// # Errors
    /// When the collector thread panicked.
    pub(crate) fn stop(self) -> Result<Collected, String> {
        self.stop.stop();
        self.thread
            .join()
            .map_err(|_| "prof: the stack sampler's thread panicked; its samples are lost".into())
    }
}

impl State {
    /// Starts the trigger on new threads, drops those that exited, and reads their
    /// CPU time.
    fn scan(&mut self) {
        if threads::list(&mut self.tids).is_err() {
            return;
        }
        for &tid in &self.tids {
            if tid == self.me || self.trigger.has(tid) || self.refused.contains(&tid) {
                if let Some(cpu) = self.cpu.get_mut(&tid) {
                    cpu.1 = thread_cpu_ns(tid).unwrap_or(cpu.1);
                }
                continue;
            }
            match self.trigger.add(tid) {
                Ok(()) => {
                    let now = thread_cpu_ns(tid).unwrap_or(0);
                    self.cpu.insert(tid, (now, now));
                    self.recorded.thread_names.insert(tid, threads::name(tid));
                }
                Err(why) => {
                    self.refused.insert(tid);
                    self.recorded.refused(tid, why);
                }
            }
        }
        for tid in self.trigger.tids() {
            if !self.tids.contains(&tid) {
                self.trigger.remove(tid, &mut self.recorded);
            }
        }
    }

    /// Drops the threads whose perf event said they exited (`POLLHUP`, which every
    /// later `poll` would report again at once), keeping what their rings hold; the
    /// next list may still show a thread on its way out, and must not start it again.
    fn exited(&mut self, tids: &[u32]) {
        for &tid in tids {
            if let Some(cpu) = self.cpu.get_mut(&tid) {
                cpu.1 = thread_cpu_ns(tid).unwrap_or(cpu.1);
            }
            self.trigger.remove(tid, &mut self.recorded);
            self.refused.insert(tid);
        }
    }

    /// Snapshots the mappings again when a new sample's address lies outside all of
    /// them (a library loaded since), at most every [`MAPS_INTERVAL`].
    fn check_maps(&mut self) {
        let samples = &self.recorded.samples[self.checked..];
        self.checked = self.recorded.samples.len();
        let stacks = &self.recorded.stacks.all;
        let unknown = samples.iter().any(|s| {
            stacks[s.stack as usize]
                .first()
                .is_some_and(|&pc| self.maps.find(pc).is_none())
        });
        if unknown && self.last_maps.elapsed() >= MAPS_INTERVAL {
            maps::snapshot(&mut self.maps);
            self.last_maps = Instant::now();
        }
    }

    /// Reads again the names of the threads sampled that still run.
    fn read_names(&mut self) {
        for &tid in &self.tids {
            if let Some(name) = self.recorded.thread_names.get_mut(&tid) {
                let now = threads::name(tid);
                if now != format!("Thread {tid}") {
                    *name = now;
                }
            }
        }
    }

    fn finish(mut self) -> Collected {
        for &tid in &self.tids {
            if let Some(cpu) = self.cpu.get_mut(&tid) {
                cpu.1 = thread_cpu_ns(tid).unwrap_or(cpu.1);
            }
        }
        self.read_names();
        self.trigger.stop(&mut self.recorded);
        maps::snapshot(&mut self.maps);
        self.recorded.mappings = std::mem::take(&mut self.maps.all);
        Collected {
            cpu_ns: self.cpu.values().map(|(first, last)| last - first).sum(),
            recorded: self.recorded,
        }
    }
}

/// Thread `tid`'s CPU time now, read on its CPU clock from this thread.
fn thread_cpu_ns(tid: u32) -> Option<u64> {
    let clock = (!(tid as libc::clockid_t) << 3) | 6;
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    #[allow(unsafe_code)]
    // SAFETY: clock_gettime writes only `now`; an exited thread's clock fails cleanly.
    let rc = unsafe { libc::clock_gettime(clock, &mut now) };
    (rc == 0).then(|| now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64)
}

/// `CLOCK_MONOTONIC` minus the tracer clock, in nanoseconds: the smallest gap of a
/// few reads back to back, so that a preemption between two reads does not skew it.
fn monotonic_offset() -> i64 {
    (0..5)
        .map(|_| {
            let tracer = profiler_core::tracer::clock_ns() as i64;
            let mut now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            #[allow(unsafe_code)]
            // SAFETY: clock_gettime writes only `now`.
            unsafe {
                libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
            }
            (now.tv_sec * 1_000_000_000 + now.tv_nsec) - tracer
        })
        .min()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_collector_sleeps_about_ten_samples_and_with_perf_at_least_50_ms() {
        let ms = |hz, perf| interval(hz, perf).as_millis();
        assert_eq!(
            [1, 99, 250, 1000, 10_000].map(|hz| ms(hz, false)),
            [100, 100, 40, 10, 10]
        );
        assert_eq!(
            [1, 99, 250, 1000, 10_000].map(|hz| ms(hz, true)),
            [100, 100, 50, 50, 50]
        );
    }
}
