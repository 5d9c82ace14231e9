//! SIGTERM and SIGINT, for sessions with `write_on_signals` (Linux).
//!
//! The handler does one async-signal-safe thing: it writes the signal's number into a
//! pipe. A thread of prof's, blocked on the other end, ends the session and writes it
//! within the session's budget (the `.xplane.pb` first), puts back each signal's
//! previous disposition, and sends the signal to the process again, which then does
//! what it did before prof: runs the previous handler, or ends the process with the
//! signal's status. Nothing is allocated, locked or written to a file inside the
//! handler.
//!
//! A second signal while the first is handled (Ctrl-C pressed twice) ends the process
//! at once with the signal's default action. A signal the process ignores (`SIG_IGN`:
//! `nohup`, a background job's SIGINT) is left ignored. The handlers are installed
//! when a session that asks for them starts and put back when it stops: `SigCgt` in
//! `/proc/self/status` shows them caught only meanwhile.

#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::ending::{self, Outcome, Why, CLEANUP};
use super::report;

/// The signals handled: a scheduler's preemption and Ctrl-C.
const SIGNALS: [libc::c_int; 2] = [libc::SIGTERM, libc::SIGINT];

/// The pipe's write end, for the handler; -1 until the listening thread runs.
static PIPE: AtomicI32 = AtomicI32::new(-1);

/// A signal is being handled: the next one ends the process at once.
static FIRED: AtomicBool = AtomicBool::new(false);

/// The signals ours handle now, with the disposition each had before.
static PREVIOUS: Mutex<Vec<(libc::c_int, libc::sigaction)>> = Mutex::new(Vec::new());

/// How long a signal waits for the profile (the running session's budget).
static BUDGET: Mutex<Duration> = Mutex::new(Duration::from_secs(20));

/// The listening thread, started once; the error says why it could not be.
static LISTENER: OnceLock<Result<(), String>> = OnceLock::new();

fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Handles SIGTERM and SIGINT for the session starting now, which allows `budget` for
/// its writing.
///
/// # Errors
/// Why the handlers could not be installed (no pipe or thread), or which signals are
/// ignored by the process and left so.
pub(super) fn install(budget: Duration) -> Result<(), String> {
    LISTENER.get_or_init(start_listener).clone()?;
    *lock(&BUDGET) = budget;
    let mut previous = lock(&PREVIOUS);
    let mut ignored = Vec::new();
    for sig in SIGNALS {
        if previous.iter().any(|(s, _)| *s == sig) {
            continue;
        }
        let old = current(sig);
        if old.sa_sigaction == libc::SIG_IGN {
            ignored.push(ending::signal_name(sig));
            continue;
        }
        // SAFETY: a zeroed sigaction is a valid value (no handler, no flags, empty
        // mask), filled in below.
        let mut ours: libc::sigaction = unsafe { std::mem::zeroed() };
        ours.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        // Other threads' interrupted system calls restart, as they would have had no
        // handler run.
        ours.sa_flags = libc::SA_RESTART;
        let mut old = old;
        // SAFETY: both pointers are to live sigaction values; sigemptyset initialises
        // the mask it is given.
        let installed = unsafe {
            libc::sigemptyset(&mut ours.sa_mask);
            libc::sigaction(sig, &ours, &mut old)
        };
        if installed == 0 {
            previous.push((sig, old));
        }
    }
    if ignored.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "write_on_signals: {} ignored by this process (nohup, a background job), left ignored",
            ignored.join(" and ")
        ))
    }
}

/// Puts back each signal's previous disposition, where ours is still the one
/// installed (a handler installed over ours since is left alone).
pub(super) fn restore() {
    let mut previous = lock(&PREVIOUS);
    for (sig, old) in previous.drain(..) {
        if current(sig).sa_sigaction
            == on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t
        {
            // SAFETY: `old` is the sigaction the kernel gave back when ours replaced it.
            unsafe { libc::sigaction(sig, &old, std::ptr::null_mut()) };
        }
    }
}

/// The disposition of `sig` now.
fn current(sig: libc::c_int) -> libc::sigaction {
    // SAFETY: zeroed is a valid sigaction; a null new action only reads the current one.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut now);
        now
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe calls: atomics, write, sigaction, raise. errno is kept
    // for the code the signal interrupted.
    // SAFETY: __errno_location returns this thread's errno, valid for the thread's life.
    let errno = unsafe { *libc::__errno_location() };
    if FIRED.swap(true, Ordering::AcqRel) {
        // SAFETY: a zeroed sigaction with SIG_DFL (0) is the default action; raise
        // sends the signal to this thread, delivered once this handler returns.
        unsafe {
            let mut default: libc::sigaction = std::mem::zeroed();
            default.sa_sigaction = libc::SIG_DFL;
            libc::sigaction(sig, &default, std::ptr::null_mut());
            libc::raise(sig);
        }
    } else {
        let byte = sig as u8;
        // SAFETY: the pipe's write end is non-blocking, and `byte` lives through the
        // call. A full pipe (signals piling up) loses nothing the thread needs.
        unsafe { libc::write(PIPE.load(Ordering::Acquire), (&raw const byte).cast(), 1) };
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

fn start_listener() -> Result<(), String> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes; fcntl is given one
    // of them.
    let made = unsafe {
        libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) == 0
            && libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) == 0
    };
    if !made {
        return Err(format!(
            "write_on_signals: no pipe for the signal handler: {}",
            std::io::Error::last_os_error()
        ));
    }
    let read_end = fds[0];
    std::thread::Builder::new()
        .name("prof-signals".into())
        .spawn(move || listen(read_end))
        .map_err(|e| format!("write_on_signals: no thread to handle signals: {e}"))?;
    PIPE.store(fds[1], Ordering::Release);
    Ok(())
}

fn listen(read_end: libc::c_int) {
    loop {
        let mut byte = 0u8;
        // SAFETY: one byte is read into `byte`, which lives through the call.
        let n = unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) };
        if n == 1 {
            handle(libc::c_int::from(byte));
        } else if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
        {
            continue;
        } else {
            return; // the pipe is gone: nothing more can arrive
        }
    }
}

/// Ends and writes the session within the budget, then lets `sig` take its course.
fn handle(sig: libc::c_int) {
    let budget = *lock(&BUDGET);
    let deadline = Instant::now() + budget;
    let why = Why::Signal(sig);
    let mut outcome = ending::end_session(&why, Some(budget));
    if matches!(outcome, Outcome::AlreadyEnding) {
        // A panic or the exit is writing the session: give it the signal's budget.
        outcome = ending::wait_until_ended(Some(deadline));
    }
    report::tell(&why, &outcome);
    if matches!(outcome, Outcome::TimedOut(_)) {
        if let Some(cleanup) = CLEANUP.get() {
            cleanup();
        }
    }
    restore();
    FIRED.store(false, Ordering::Release);
    // SAFETY: kill has no memory preconditions. The process-directed signal reaches a
    // thread that does not block it, as the first one did.
    unsafe { libc::kill(libc::getpid(), sig) };
}
