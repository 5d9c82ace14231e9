//! The fallback trigger, where perf is refused: a POSIX timer per thread on that
//! thread's CPU-time clock (`timer_create` with `SIGEV_THREAD_ID`, as Go's profiler
//! and async-profiler do), whose signal interrupts the thread that used the CPU time
//! and runs [`handler`]'s frame-pointer walk there. A process-wide `setitimer` would
//! deliver one signal at a time to whichever thread, unevenly (golang/go#35057).
//!
//! The kernel fires CPU-time timers on its tick, so the rate reached is capped by
//! `CONFIG_HZ` (250 Hz on many distributions' kernels: a 1 kHz request gives about 250
//! samples a second); the profile records the rate reached.

pub(crate) mod handler;
mod queue;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::recorded::Recorded;

/// Only one session samples at a time, and the handler's queue is static.
static IN_USE: AtomicBool = AtomicBool::new(false);

/// The timers of every thread sampled.
pub(crate) struct Timers {
    /// `timer_t` by OS thread id (a pointer-sized handle, kept as an integer).
    by_tid: HashMap<u32, usize>,
    period: libc::timespec,
    frames: Vec<u64>,
    /// Whether the handler can follow frame pointers (`process_vm_readv` works).
    pub(crate) walks: bool,
}

// SAFETY: the timer handles are ids the kernel gave this process, usable from any of
// its threads.
#[allow(unsafe_code)]
unsafe impl Send for Timers {}

impl Timers {
    /// Installs the handler and readies its queue for a session sampling every
    /// `period_ns` of each thread's CPU time.
    ///
    /// # Errors
    /// Why the handler cannot be installed, or that another session's timers run.
    pub(crate) fn start(period_ns: u64) -> Result<Timers, String> {
        if IN_USE.swap(true, Ordering::AcqRel) {
            return Err("another session's timer sampler is still running".into());
        }
        if let Err(why) = handler::install() {
            IN_USE.store(false, Ordering::Release);
            return Err(why);
        }
        handler::QUEUE.reset();
        handler::set_active(true);
        Ok(Timers {
            by_tid: HashMap::new(),
            period: libc::timespec {
                tv_sec: (period_ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (period_ns % 1_000_000_000) as libc::c_long,
            },
            frames: Vec::with_capacity(queue::MAX_FRAMES),
            walks: handler::can_read_frames(),
        })
    }

    /// Whether thread `tid` has a timer.
    pub(crate) fn has(&self, tid: u32) -> bool {
        self.by_tid.contains_key(&tid)
    }

    /// The threads with a timer.
    pub(crate) fn tids(&self) -> Vec<u32> {
        self.by_tid.keys().copied().collect()
    }

    /// Starts a timer on thread `tid`'s CPU clock that signals that thread.
    ///
    /// # Errors
    /// The kernel's refusal.
    pub(crate) fn add(&mut self, tid: u32) -> Result<(), String> {
        // The kernel's clock id of a thread's CPU time: MAKE_THREAD_CPUCLOCK(tid,
        // CPUCLOCK_SCHED), as glibc's pthread_getcpuclockid makes it.
        let clock = (!(tid as libc::clockid_t) << 3) | 6;
        #[allow(unsafe_code)]
        // SAFETY: a zeroed sigevent filled for SIGEV_THREAD_ID; timer_create writes
        // the new timer's id into `timer`, and timer_settime reads our itimerspec.
        unsafe {
            let mut event: libc::sigevent = std::mem::zeroed();
            event.sigev_notify = libc::SIGEV_THREAD_ID;
            event.sigev_signo = handler::SIGNAL;
            event.sigev_notify_thread_id = tid as libc::c_int;
            let mut timer: libc::timer_t = std::ptr::null_mut();
            if libc::timer_create(clock, &mut event, &mut timer) != 0 {
                return Err(format!(
                    "timer_create on its CPU clock failed: {}",
                    std::io::Error::last_os_error()
                ));
            }
            let spec = libc::itimerspec {
                it_interval: self.period,
                it_value: self.period,
            };
            if libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) != 0 {
                let err = std::io::Error::last_os_error();
                libc::timer_delete(timer);
                return Err(format!("timer_settime failed: {err}"));
            }
            self.by_tid.insert(tid, timer as usize);
        }
        Ok(())
    }

    /// Deletes thread `tid`'s timer (the thread exited).
    pub(crate) fn remove(&mut self, tid: u32) {
        if let Some(timer) = self.by_tid.remove(&tid) {
            delete(timer);
        }
    }

    /// Reads the samples the handlers published.
    pub(crate) fn drain(&mut self, out: &mut Recorded) {
        handler::QUEUE.drain(&mut self.frames, |tid, time, frames| {
            out.add(tid, time, frames);
        });
    }

    /// Deletes every timer, waits for handlers still running, and reads what they left.
    pub(crate) fn stop(mut self, out: &mut Recorded) {
        self.disarm();
        self.drain(out);
        out.lost += handler::QUEUE.dropped();
    }

    fn disarm(&mut self) {
        for (_, timer) in self.by_tid.drain() {
            delete(timer);
        }
        handler::set_active(false);
        // A handler that saw the session active finishes its sample first.
        handler::wait_idle(Duration::from_secs(1));
    }
}

impl Drop for Timers {
    fn drop(&mut self) {
        // After `stop`, or a collector that ended early: no timer outlives the session.
        self.disarm();
        IN_USE.store(false, Ordering::Release);
    }
}

fn delete(timer: usize) {
    #[allow(unsafe_code)]
    // SAFETY: a timer id timer_create gave us, deleted once (it left the map).
    unsafe {
        libc::timer_delete(timer as libc::timer_t);
    }
}
