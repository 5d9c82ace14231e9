//! What a session's sampler hands over at its stop: raw samples (a thread, a time, an
//! interned stack of addresses), the threads' names, the mappings seen, what was lost.
//! Nothing here is symbolised yet.

use std::collections::HashMap;

use crate::maps::Mapping;

/// One sample as taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawSample {
    /// The OS thread id.
    pub(crate) tid: u32,
    /// `CLOCK_MONOTONIC` nanoseconds.
    pub(crate) time_ns: u64,
    /// Index into [`Recorded::stacks`].
    pub(crate) stack: u32,
}

/// Stacks of return addresses, each kept once: a busy loop is sampled on the same few
/// stacks thousands of times, and a sample is then 16 bytes.
#[derive(Debug, Default)]
pub(crate) struct Stacks {
    ids: HashMap<Box<[u64]>, u32>,
    /// By id: the interrupted address first, then each caller's return address.
    pub(crate) all: Vec<Box<[u64]>>,
}

impl Stacks {
    /// The id of `stack`, added the first time.
    pub(crate) fn id(&mut self, stack: &[u64]) -> u32 {
        if let Some(&id) = self.ids.get(stack) {
            return id;
        }
        let id = self.all.len() as u32;
        let owned: Box<[u64]> = stack.into();
        self.all.push(owned.clone());
        self.ids.insert(owned, id);
        id
    }
}

/// Which trigger took the samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backend {
    /// `perf_event_open`, `PERF_COUNT_SW_TASK_CLOCK`, the kernel's call chains.
    Perf,
    /// `timer_create` on each thread's CPU clock, a signal handler's frame-pointer walk.
    Timer,
}

impl Backend {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Backend::Perf => "perf_event",
            Backend::Timer => "timer",
        }
    }
}

/// Everything one session sampled.
#[derive(Debug)]
pub(crate) struct Recorded {
    pub(crate) backend: Backend,
    /// Why the better backend did not run, when it did not.
    pub(crate) fallback_reason: Option<String>,
    pub(crate) samples: Vec<RawSample>,
    pub(crate) stacks: Stacks,
    /// Names of the threads sampled, by OS thread id.
    pub(crate) thread_names: HashMap<u32, String>,
    /// Every executable mapping seen during the session (libraries loaded late and
    /// unloaded early included).
    pub(crate) mappings: Vec<Mapping>,
    /// Samples the kernel or the handler's queue dropped.
    pub(crate) lost: u64,
    /// Threads that could not be sampled, and the first reason.
    pub(crate) threads_refused: u64,
    pub(crate) refusal: Option<String>,
    /// `CLOCK_MONOTONIC` minus the tracer clock (`tracer::clock_ns`), nanoseconds.
    pub(crate) monotonic_offset: i64,
}

impl Recorded {
    pub(crate) fn new(backend: Backend, fallback_reason: Option<String>) -> Recorded {
        Recorded {
            backend,
            fallback_reason,
            samples: Vec::new(),
            stacks: Stacks::default(),
            thread_names: HashMap::new(),
            mappings: Vec::new(),
            lost: 0,
            threads_refused: 0,
            refusal: None,
            monotonic_offset: 0,
        }
    }

    /// Adds a sample of `stack` on thread `tid` at `time_ns`.
    pub(crate) fn add(&mut self, tid: u32, time_ns: u64, stack: &[u64]) {
        if stack.is_empty() {
            return;
        }
        let stack = self.stacks.id(stack);
        self.samples.push(RawSample {
            tid,
            time_ns,
            stack,
        });
    }

    /// Notes that thread `tid` could not be sampled, and why.
    pub(crate) fn refused(&mut self, tid: u32, why: String) {
        self.threads_refused += 1;
        if self.refusal.is_none() {
            self.refusal = Some(format!("thread {tid}: {why}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stack_is_kept_once_and_empty_ones_are_not_samples() {
        let mut r = Recorded::new(Backend::Perf, None);
        r.add(1, 10, &[3, 2, 1]);
        r.add(2, 11, &[3, 2, 1]);
        r.add(1, 12, &[4]);
        r.add(1, 13, &[]);
        assert_eq!(r.stacks.all.len(), 2);
        assert_eq!(r.samples.len(), 3);
        assert_eq!(r.samples[1].stack, r.samples[0].stack);
        assert_eq!(&*r.stacks.all[r.samples[2].stack as usize], &[4]);
    }
}
