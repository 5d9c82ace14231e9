//! The profile survives the program's end: what happens to a recording session when
//! the process ends without `stop`.
//!
//! Session control arms these paths when a session starts and disarms them when it
//! stops; each ends the session "where `stop` would have": it runs the session's
//! finisher (the facade's writes the logdir run), with a warning in the profile saying
//! why, and says on stderr where the profile went (the one place prof prints: a
//! dying process may have no `tracing` subscriber left to say it). A
//! session that writes nowhere (in memory; a flight recorder without a logdir) only
//! gets its panic markers. Once ended, the profile waits for `stop`, which hands it
//! over without writing again.
//!
//! | the end | what prof does |
//! |---|---|
//! | a panic on another thread | a `panic` marker on that thread's line (`message`, `location`); the session goes on |
//! | a panic on the main thread, or any panic under `panic = "abort"` | the marker, then the session is stopped and written before the previous panic hook runs |
//! | `main` returns, `std::process::exit` | the session is stopped and written at exit (`atexit(3)`, Unix), with one warning that `stop` was never called |
//! | SIGTERM, SIGINT, with `write_on_signals` (Linux) | written by a thread of prof's within the budget, the `.xplane.pb` first; then the signal takes its course |
//! | SIGKILL, SIGSEGV, SIGBUS, the OOM killer, `abort` | nothing can be saved: the flight recorder's periodic dumps bound what is lost |
//!
//! Guarding against recursion: a panic while prof stops a session or writes one (on
//! the thread doing it, or while an exit path writes) is passed straight to the
//! previous hook, and the writing runs on a thread of its own, so a panic in a writer
//! unwinds that thread only. A panic inside the record buffer's own writing leaves no
//! marker.
//!
//! Elsewhere than Unix only the panic paths exist; elsewhere than Linux,
//! `write_on_signals` installs nothing and the profile says so.

#[cfg(unix)]
mod atexit;
mod ending;
mod panic;
mod report;
#[cfg(target_os = "linux")]
mod signals;

use std::sync::atomic::Ordering;

use crate::options::ProfileOptions;

pub(crate) use ending::{in_control, EndFn, Ended};

/// Has `cleanup` called when a signal's budget runs out while the profile is still
/// being written, just before the signal ends the process, so that the writer's
/// half-written temporary files do not outlive it (the `prof` facade registers
/// `profiler_export::atomic::remove_temporaries`). The first registration stays.
pub fn set_cleanup(cleanup: fn()) {
    let _ = ending::CLEANUP.set(cleanup);
}

/// Arms the exit paths for the session starting now: `end` ends it, `writes` says
/// whether it has somewhere to write. Returns warnings for its profile (signals that
/// could not be handled). Called by session control under its lock, with the disarm
/// below, so the two never interleave.
pub(crate) fn arm(end: EndFn, options: &ProfileOptions, writes: bool) -> Vec<String> {
    ending::set_end(end);
    let mut warnings = Vec::new();
    panic::install();
    #[cfg(unix)]
    if writes {
        atexit::register();
    }
    if options.writes_on_signals() {
        #[cfg(target_os = "linux")]
        if let Err(why) = signals::install(options.signal_budget()) {
            warnings.push(why);
        }
        #[cfg(not(target_os = "linux"))]
        warnings.push(
            "write_on_signals: prof handles SIGTERM and SIGINT on Linux only; nothing was installed"
                .to_owned(),
        );
    }
    ending::WRITES.store(writes, Ordering::Release);
    ending::ARMED.store(true, Ordering::Release);
    warnings
}

/// Disarms the exit paths as the session stops. `from_exit`: an exit path is ending
/// it, while a panic hook may be running; the panic hook is then left in place,
/// inert, since replacing it would wait for that hook to return.
pub(crate) fn disarm(from_exit: bool) {
    ending::ARMED.store(false, Ordering::Release);
    ending::WRITES.store(false, Ordering::Release);
    #[cfg(target_os = "linux")]
    signals::restore();
    if !from_exit {
        panic::restore();
    }
}
