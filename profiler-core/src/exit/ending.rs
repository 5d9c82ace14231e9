//! Ending the running session because the process ends, on a thread of prof's: what
//! the panic hook, the signal thread and the exit handler share.
//!
//! Session control lives above this module, so it hands down the function that ends
//! its session ([`EndFn`]) when it arms the exit paths; nothing here imports it.

use std::cell::Cell;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

/// Why a session ends without `stop`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Why {
    /// A panic that ends the process: on the main thread, or in a `panic = "abort"`
    /// build.
    Panic {
        /// What the panic said.
        message: String,
        /// `file:line:column`.
        location: String,
    },
    /// SIGTERM or SIGINT, with `write_on_signals`.
    Signal(i32),
    /// The process exits (`main` returned, or `std::process::exit`).
    Exit,
}

impl Why {
    /// The warning the written profile carries.
    pub(crate) fn note(&self) -> String {
        match self {
            Why::Panic { message, location } => format!(
                "the program panicked at {location} ({message:?}) while this session recorded: \
                 prof's panic hook stopped the session and wrote it, without prof::stop()"
            ),
            Why::Signal(sig) => format!(
                "the process received {}: prof stopped the session and wrote it before the \
                 signal took its course, without prof::stop() (write_on_signals)",
                signal_name(*sig)
            ),
            Why::Exit => "the program ended while this session recorded, without \
                          prof::stop(): prof stopped the session and wrote it at exit"
                .to_owned(),
        }
    }

    /// The start of the one line said on stderr.
    pub(crate) fn short(&self) -> String {
        match self {
            Why::Panic { location, .. } => format!("the panic at {location} ended the session"),
            Why::Signal(sig) => format!("{} ended the session", signal_name(*sig)),
            Why::Exit => "the program ended without prof::stop()".to_owned(),
        }
    }
}

/// `SIGTERM`, `SIGINT`, or `signal N`.
pub(crate) fn signal_name(sig: i32) -> String {
    match sig {
        15 => "SIGTERM".to_owned(),
        2 => "SIGINT".to_owned(),
        n => format!("signal {n}"),
    }
}

/// What ending the session came to, as session control reports it.
#[derive(Debug)]
pub(crate) enum Ended {
    /// No session was running, or it had ended already.
    NoSession,
    /// The session has nowhere to write (in memory, a flight recorder without a
    /// logdir): it was stopped and its profile left to whoever calls `stop`.
    Nowhere,
    /// Written; these are its files, the `.xplane.pb` first.
    Written(Vec<PathBuf>),
    /// Writing failed; the error says why.
    Failed(String),
    /// Session control stayed busy past the deadline (another thread holding it).
    Busy,
}

/// How session control ends its running session because the process ends: stopped
/// with `note` as a warning in the profile, written where `stop` would write it,
/// waiting for session control's lock no later than `lock_by`.
pub(crate) type EndFn = fn(note: &str, lock_by: Instant) -> Ended;

/// Set by session control when it first arms the exit paths.
static END: OnceLock<EndFn> = OnceLock::new();

/// A session runs, and the exit paths act for it.
pub(super) static ARMED: AtomicBool = AtomicBool::new(false);

/// The armed session writes somewhere when it ends (it has a finisher).
pub(super) static WRITES: AtomicBool = AtomicBool::new(false);

/// An exit path is ending the session now: the others stand aside.
static ENDING: AtomicBool = AtomicBool::new(false);

/// Called when a signal's budget runs out with writes in progress, so their hidden
/// temporary files do not outlive the process (set by the facade, which knows the
/// writers).
pub(super) static CLEANUP: OnceLock<fn()> = OnceLock::new();

/// How long a panic or the process's exit waits for session control's lock before
/// giving up: another thread may be stopping the session, or stuck holding it.
const LOCK_WAIT: Duration = Duration::from_secs(10);

thread_local! {
    // `const` and without a destructor: readable from a panic hook and during exit.
    static IN_CONTROL: Cell<bool> = const { Cell::new(false) };
}

/// Registers how session control ends its session (once; later calls pass the same
/// function).
pub(super) fn set_end(end: EndFn) {
    let _ = END.set(end);
}

/// Runs `f` marked as prof's own session control on this thread: a panic inside it (a
/// writer failing during `stop`) must not have the panic hook end the session again.
pub(crate) fn in_control<R>(f: impl FnOnce() -> R) -> R {
    /// Lowers the flag again however `f` ends, unwinding included.
    struct Lower(bool);
    impl Drop for Lower {
        fn drop(&mut self) {
            let _ = IN_CONTROL.try_with(|c| c.set(self.0));
        }
    }
    let _lower = Lower(IN_CONTROL.try_with(|c| c.replace(true)).unwrap_or(true));
    f()
}

/// Whether this thread is inside prof's session control or writing a profile for an
/// exit path, or an exit path is ending the session: where a panic must not lead
/// back into ending it.
pub(super) fn in_prof() -> bool {
    ENDING.load(Ordering::Acquire) || IN_CONTROL.try_with(Cell::get).unwrap_or(true)
}

/// What an exit path's attempt to end the session came to.
#[derive(Debug)]
pub(super) enum Outcome {
    /// Session control answered.
    Ended(Ended),
    /// Writing panicked (on prof's thread; the panic's own message says where).
    Panicked,
    /// The budget ran out before writing finished; what was renamed into place by
    /// then stays.
    TimedOut(Duration),
    /// Another exit path is ending the session already.
    AlreadyEnding,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Ended(Ended::Written(files)) => {
                let first = files
                    .first()
                    .map_or_else(String::new, |f| f.display().to_string());
                match files.len() {
                    0 | 1 => write!(f, "the profile was written to {first}"),
                    n => write!(
                        f,
                        "the profile was written to {first} (and {} more files beside it)",
                        n - 1
                    ),
                }
            }
            Outcome::Ended(Ended::Failed(e)) => write!(f, "the profile could not be written: {e}"),
            Outcome::Ended(Ended::Busy) => f.write_str(
                "prof's session control stayed busy (another thread held it): nothing was written",
            ),
            Outcome::Ended(Ended::NoSession | Ended::Nowhere) | Outcome::AlreadyEnding => {
                f.write_str("nothing was written")
            }
            Outcome::Panicked => f.write_str("writing the profile panicked (see the panic above)"),
            Outcome::TimedOut(budget) => write!(
                f,
                "the profile was not all written within {} ms (the .xplane.pb goes first)",
                budget.as_millis()
            ),
        }
    }
}

impl Outcome {
    /// Whether there is something to say on stderr.
    pub(super) fn worth_saying(&self) -> bool {
        !matches!(
            self,
            Outcome::Ended(Ended::NoSession | Ended::Nowhere) | Outcome::AlreadyEnding
        )
    }
}

/// Ends the running session because of `why`, on a thread of its own so that the
/// writers run with fresh thread-locals (at exit the main thread's are gone) and a
/// panic in them cannot recurse into the caller's panic hook. Waits for it at most
/// `budget` (a signal's), or until it is done.
pub(super) fn end_session(why: &Why, budget: Option<Duration>) -> Outcome {
    if ENDING.swap(true, Ordering::AcqRel) {
        return Outcome::AlreadyEnding;
    }
    let Some(&end) = END.get() else {
        ENDING.store(false, Ordering::Release);
        return Outcome::Ended(Ended::NoSession);
    };
    let note = why.note();
    let lock_by = Instant::now() + budget.unwrap_or(LOCK_WAIT);
    let (done, result) = mpsc::channel();
    let work = move || {
        let ended =
            in_control(|| std::panic::catch_unwind(AssertUnwindSafe(|| end(&note, lock_by))));
        ENDING.store(false, Ordering::Release);
        let _ = done.send(ended);
    };
    if let Err(e) = std::thread::Builder::new()
        .name("prof-exit".into())
        .spawn(work)
    {
        ENDING.store(false, Ordering::Release);
        return Outcome::Ended(Ended::Failed(format!(
            "no thread could be started to write it: {e}"
        )));
    }
    let answer = match budget {
        Some(budget) => result.recv_timeout(budget).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => Outcome::TimedOut(budget),
            mpsc::RecvTimeoutError::Disconnected => Outcome::Panicked,
        }),
        None => result.recv().map_err(|_| Outcome::Panicked),
    };
    match answer {
        Ok(Ok(ended)) => Outcome::Ended(ended),
        Ok(Err(_panic)) => Outcome::Panicked,
        Err(outcome) => outcome,
    }
}

/// Waits until the exit path ending the session now is done, or `deadline` (if any)
/// passes: [`Outcome::AlreadyEnding`] (that path says how it went) or
/// [`Outcome::TimedOut`].
#[cfg(unix)] // the exit and signal paths
pub(super) fn wait_until_ended(deadline: Option<Instant>) -> Outcome {
    let start = Instant::now();
    while ENDING.load(Ordering::Acquire) {
        let now = Instant::now();
        let pause = Duration::from_millis(5);
        match deadline {
            Some(deadline) if now >= deadline => return Outcome::TimedOut(now - start),
            Some(deadline) => std::thread::sleep(pause.min(deadline - now)),
            None => std::thread::sleep(pause),
        }
    }
    Outcome::AlreadyEnding
}
