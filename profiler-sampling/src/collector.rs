//! The sampler's own thread, `prof-sampler`: every [`poll_interval`] it lists the process's
//! threads (starting a trigger on each new one, dropping those that exited), reads
//! the samples the triggers left, and snapshots the mappings again when a sample
//! falls outside every one known. It is not sampled itself: its work is prof's cost,
//! not the program's.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::maps::{self, Maps};
use crate::perf::{self, Perf};
use crate::recorded::{Backend, Recorded};
use crate::settings::{Choice, Settings};
use crate::threads;
use crate::timer::Timers;

/// How often the collector wakes at `hz`: about every 10 samples of a busy thread,
/// from 10 ms (1 kHz and over) to 100 ms (99 Hz). A wake lists the threads and reads
/// their clocks and rings; where every core is busy that time is the program's, and it
/// does not depend on the rate, so a low rate wakes less often (at 10 ms it was most of
/// the cost at 99 Hz). What must hold between wakes does: a ring of 8 pages keeps about
/// 160 ms of one thread's samples at 1 kHz, the timers' queue 4096 samples. A thread
/// that lives a little longer than one interval is sampled.
fn poll_interval(hz: u32) -> Duration {
    Duration::from_millis((10_000 / u64::from(hz.max(1))).clamp(10, 100))
}
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
    stop: mpsc::Sender<()>,
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
    /// Threads a trigger could not start on: not tried again.
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
    let poll = poll_interval(settings.hz);
    let (stop, stopped) = mpsc::channel::<()>();
    let (me_tx, me_rx) = mpsc::channel::<u32>();
    let thread = std::thread::Builder::new()
        .name("prof-sampler".into())
        .spawn(move || {
            state.me = threads::current();
            let _ = me_tx.send(state.me);
            state.trigger.remove(state.me, &mut state.recorded);
            let mut polls = 0u32;
            loop {
                polls = polls.wrapping_add(1);
                if polls.is_multiple_of(NAMES_EVERY) {
                    state.read_names();
                }
                state.scan();
                state.trigger.drain(&mut state.recorded);
                state.check_maps();
                match stopped.recv_timeout(poll) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => break,
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
        let _ = self.stop.send(());
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
    fn the_collector_wakes_about_every_ten_samples_within_its_bounds() {
        let ms = |hz| poll_interval(hz).as_millis();
        assert_eq!(
            [ms(1), ms(99), ms(250), ms(1000), ms(10_000)],
            [100, 100, 40, 10, 10]
        );
    }
}
