//! The signal handler of the timer backend, and the frame-pointer walk it makes.
//!
//! It runs on the sampled thread, interrupting whatever it was doing: inside
//! `malloc`, holding a lock, halfway through a panic or a `dlopen`. So it does only
//! what is async-signal-safe: it reads the interrupted registers from the signal's
//! context, follows the frame-pointer chain reading every frame record through
//! `process_vm_readv` on its own process (a bad pointer then fails the syscall with
//! `EFAULT` instead of faulting the thread: code built without frame pointers leaves
//! anything in the frame-pointer register), reads `CLOCK_MONOTONIC`, and publishes the
//! stack in the lock-free [`queue`](super::queue). It allocates nothing, takes no lock,
//! touches no thread-local (a lazily initialised one may allocate on first use), calls
//! no unwinder (libgcc's takes `dl_iterate_phdr`'s lock: pprof-rs#36, gperftools#775),
//! and leaves `errno` as it found it.
//!
//! What would break it: a `Vec`, a `format!`, a `tracing` event, a `Mutex`, a
//! `thread_local!` or `std::thread::current()`, or `std::backtrace` here.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::queue::{Queue, MAX_FRAMES, SLOTS};

/// The samples handlers publish, read by the collector.
pub(crate) static QUEUE: Queue<SLOTS> = Queue::new();

/// Whether a handler takes samples; false between sessions. The handler stays
/// installed after a session, doing nothing: a signal already queued when the timers
/// are deleted is still delivered, and under `SIG_DFL` SIGPROF ends the process;
/// `SIG_IGN` instead would be inherited by every program this one starts (an
/// ignored disposition survives `exec`, a handler does not).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Handlers running now: stop waits for none before it reads the queue for the last
/// time.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// The process id `process_vm_readv` reads, kept so the handler makes no `getpid`.
static PID: AtomicI32 = AtomicI32::new(0);
/// The threads a handler runs on now, by OS thread id (0: free): what a test's
/// counting allocator asks to prove the handler allocates nothing.
static RUNNING_ON: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];

/// The signal the timers send.
pub(crate) const SIGNAL: libc::c_int = libc::SIGPROF;

/// Installs the handler for [`SIGNAL`], unless it is installed already. Asked again
/// at every session: a handler another profiler installed since the last session is
/// left alone (and the timer backend refused), never silently taken back.
///
/// # Errors
/// Why it cannot: another handler owns the signal (another profiler), or
/// `sigaction` failed.
pub(crate) fn install() -> Result<(), String> {
    PID.store(std::process::id() as i32, Ordering::Relaxed);
    let ours = on_signal as *const () as libc::sighandler_t;
    #[allow(unsafe_code)]
    // SAFETY: sigaction with a zeroed struct to read the current action, then ours:
    // `on_signal` is an `extern "C"` function of the SA_SIGINFO signature, alive for
    // the whole program.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(SIGNAL, std::ptr::null(), &mut old) != 0 {
            return Err(format!(
                "sigaction(SIGPROF) failed: {}",
                std::io::Error::last_os_error()
            ));
        }
        if old.sa_sigaction == ours {
            return Ok(());
        }
        if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN {
            return Err(
                "SIGPROF already has a handler (another profiler in this process?): the \
                 timer backend would take it over"
                    .into(),
            );
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = ours;
        action.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART | libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(SIGNAL, &action, std::ptr::null_mut()) != 0 {
            return Err(format!(
                "sigaction(SIGPROF) failed: {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

/// Starts or stops taking samples in the handler.
pub(crate) fn set_active(active: bool) {
    ACTIVE.store(active, Ordering::SeqCst);
}

/// Waits (up to `limit`) until no handler runs; true when none does.
pub(crate) fn wait_idle(limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while IN_FLIGHT.load(Ordering::SeqCst) != 0 {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

/// Whether the signal handler is running on thread `tid` now.
pub(crate) fn running_on(tid: i32) -> bool {
    IN_FLIGHT.load(Ordering::Relaxed) != 0
        && RUNNING_ON.iter().any(|t| t.load(Ordering::Relaxed) == tid)
}

/// Whether `process_vm_readv` reads this process's memory: without it, the walk
/// stops at the interrupted address.
pub(crate) fn can_read_frames() -> bool {
    let probe = [0x5eed_u64, 7];
    read_frame(std::process::id() as i32, probe.as_ptr() as u64) == Some(probe)
}

extern "C" fn on_signal(
    _signal: libc::c_int,
    _info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    #[allow(unsafe_code)]
    // SAFETY: `__errno_location` is this thread's errno, valid while it runs.
    let errno = unsafe { *libc::__errno_location() };
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    if ACTIVE.load(Ordering::SeqCst) && !context.is_null() {
        take_sample(context);
    }
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    #[allow(unsafe_code)]
    // SAFETY: as above.
    unsafe {
        *libc::__errno_location() = errno;
    }
}

fn take_sample(context: *mut libc::c_void) {
    #[allow(unsafe_code)]
    // SAFETY: gettid is a plain system call.
    let tid = unsafe { libc::gettid() };
    let claimed = RUNNING_ON.iter().find(|t| {
        t.compare_exchange(0, tid, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    });
    let Some((pc, fp)) = registers(context) else {
        if let Some(t) = claimed {
            t.store(0, Ordering::SeqCst);
        }
        return;
    };
    let mut frames = [0u64; MAX_FRAMES];
    let depth = walk(PID.load(Ordering::Relaxed), pc, fp, &mut frames);
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    #[allow(unsafe_code)]
    // SAFETY: clock_gettime is async-signal-safe and writes only `now`.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now);
    }
    let time_ns = now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64;
    QUEUE.push(tid as u32, time_ns, &frames[..depth]);
    if let Some(t) = claimed {
        t.store(0, Ordering::SeqCst);
    }
}

/// The interrupted instruction and frame pointer.
#[allow(unsafe_code)]
fn registers(context: *mut libc::c_void) -> Option<(u64, u64)> {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: the kernel's ucontext_t for this signal, read only.
        let uc = unsafe { &*context.cast::<libc::ucontext_t>() };
        let g = &uc.uc_mcontext.gregs;
        Some((
            g[libc::REG_RIP as usize] as u64,
            g[libc::REG_RBP as usize] as u64,
        ))
    }
    #[cfg(target_arch = "aarch64")]
    {
        // SAFETY: as above.
        let uc = unsafe { &*context.cast::<libc::ucontext_t>() };
        Some((uc.uc_mcontext.pc, uc.uc_mcontext.regs[29]))
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = context;
        None
    }
}

/// Follows the frame-pointer chain from `fp`: each frame record is the caller's frame
/// pointer and the return address. Stops at a record that cannot be read, a frame
/// pointer that does not go up the stack (or leaps more than 64 MiB), a zero return
/// address, or `frames` full. Returns how many of `frames` it filled, `pc` first.
fn walk(pid: i32, pc: u64, mut fp: u64, frames: &mut [u64; MAX_FRAMES]) -> usize {
    frames[0] = pc;
    let mut depth = 1;
    while depth < MAX_FRAMES && fp != 0 && fp.is_multiple_of(8) {
        let Some([next, ret]) = read_frame(pid, fp) else {
            break;
        };
        if ret == 0 {
            break;
        }
        frames[depth] = ret;
        depth += 1;
        if next <= fp || next - fp > 64 << 20 {
            break;
        }
        fp = next;
    }
    depth
}

/// Reads the 16-byte frame record at `addr` by `process_vm_readv` on this process:
/// an address that is not mapped readable fails the call rather than the thread.
fn read_frame(pid: i32, addr: u64) -> Option<[u64; 2]> {
    let mut record = [0u64; 2];
    let local = libc::iovec {
        iov_base: record.as_mut_ptr().cast(),
        iov_len: 16,
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: 16,
    };
    #[allow(unsafe_code)]
    // SAFETY: the local iovec is our 16-byte array; the remote one is only read by
    // the kernel, which checks it and fails with EFAULT when it is not readable.
    let n = unsafe { libc::process_vm_readv(pid, &local, 1, &remote, 1, 0) };
    (n == 16).then_some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_follows_a_chain_and_stops_at_garbage_without_faulting() {
        let pid = std::process::id() as i32;
        // Three frame records on the "stack", chained upwards, the last pointing at
        // unmapped memory; then a chain into address 8 (unmapped).
        let mut stack = [0u64; 8];
        let base = stack.as_ptr() as u64;
        stack[0] = base + 16; // frame 0 → frame 1
        stack[1] = 0x1111;
        stack[2] = base + 32; // frame 1 → frame 2
        stack[3] = 0x2222;
        stack[4] = 0xffff_ffff_ffff_0000; // frame 2 → nowhere readable
        stack[5] = 0x3333;
        // The walk reads the array through the kernel: keep the writes.
        std::hint::black_box(&mut stack);
        let mut frames = [0u64; MAX_FRAMES];
        let depth = walk(pid, 0xabc, base, &mut frames);
        assert_eq!(&frames[..depth], &[0xabc, 0x1111, 0x2222, 0x3333]);
        assert_eq!(walk(pid, 0xabc, 8, &mut frames), 1);
        assert_eq!(walk(pid, 0xabc, 0, &mut frames), 1);
        // A chain that goes down the stack stops.
        stack[0] = base - 64;
        std::hint::black_box(&mut stack);
        assert_eq!(walk(pid, 0xabc, base, &mut frames), 2);
        assert!(can_read_frames());
    }
}
