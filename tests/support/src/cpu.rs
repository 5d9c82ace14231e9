//! CPU time burnt on purpose, by the thread's own clock: stack samples are taken per
//! second of a thread's CPU time, so a test that wants samples in a function spins it
//! until the thread has used that much, whatever the machine's load.

use std::time::Duration;

/// This thread's CPU time.
pub fn thread_cpu() -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes only `now`.
    #[allow(unsafe_code)]
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now);
    }
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Spins `work` until this thread has used `cpu` more CPU time; its last result.
pub fn burn_for(cpu: Duration, work: fn(u64) -> u64) -> u64 {
    let until = thread_cpu() + cpu;
    let mut x = 1;
    while thread_cpu() < until {
        x = work(x);
    }
    x
}
