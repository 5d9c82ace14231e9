//! What the launch observer keeps of each launch, per issuing thread, until the session
//! is collected.
//!
//! Each thread that issues kernels writes into a log of its own, registered once; the
//! collector reads every log after the session. The log sits behind a `Mutex` that only
//! its own thread takes while the session records (the collector takes it after the
//! observation ended), so the lock is never contended; its `Vec`s keep their capacity
//! from one session to the next. This is beside a launch path that already takes
//! cubecl's observer lock, boxes the launch for the device thread and sends it there:
//! what would make it cost more than they do is a log shared by every thread (one
//! contended lock per kernel), or formatting the kernel's name per launch (names are
//! shortened once per name, at collection).

use std::cell::OnceCell;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use cubecl_runtime::logging::{Duration, ProfileDuration, TimingMethod};
use profiler_core::tracer::ScopeId;

/// One kernel issued on a thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Launch {
    /// The kernel, as cubecl names it (its type's name).
    pub kernel: &'static str,
    /// When it was issued (cubecl's observer was told), raw ticks
    /// (`profiler_core::clock::now`).
    pub issued: u64,
    /// When its measurement came back to the issuing thread, in ticks; 0 while
    /// untimed. A timed launch waits for the device thread to open and close its
    /// window: the host event spans that.
    pub returned: u64,
    /// The innermost annotation open on the issuing thread.
    pub scope: Option<ScopeId>,
}

/// A launch's measurement as cubecl delivered it: unread (read at collection), or a
/// duration read already (when cubecl's own profiling logger reads them too).
pub(crate) enum Measurement {
    /// Kept unread ([`TimingRequest::Deferred`](cubecl_runtime::logging::TimingRequest)).
    Unread(ProfileDuration),
    /// Read by cubecl: the length only, read back when the kernel had finished (at
    /// `read`, in ticks).
    Length {
        /// The kernel's length.
        duration: Duration,
        /// How it was measured.
        method: TimingMethod,
        /// When the reading reached the issuing thread, ticks.
        read: u64,
    },
}

impl std::fmt::Debug for Measurement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Measurement::Unread(p) => f.debug_tuple("Unread").field(&p.timing_method()).finish(),
            Measurement::Length {
                duration,
                method,
                read,
            } => f
                .debug_struct("Length")
                .field("duration", duration)
                .field("method", method)
                .field("read", read)
                .finish(),
        }
    }
}

/// One thread's launches in a session.
#[derive(Debug, Default)]
pub(crate) struct ThreadLog {
    /// The session whose launches these are.
    generation: u64,
    /// The thread's index among those that issued kernels (from 1) and its name, for
    /// the host line of launches made outside any annotation.
    pub thread: (u32, String),
    /// In issue order.
    pub launches: Vec<Launch>,
    /// Measurements, by index into `launches`.
    pub measurements: Vec<(usize, Measurement)>,
}

static REGISTRY: Mutex<Vec<Arc<Mutex<ThreadLog>>>> = Mutex::new(Vec::new());

thread_local! {
    static MINE: OnceCell<Arc<Mutex<ThreadLog>>> = const { OnceCell::new() };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while a log is held leaves whole records behind: keep using it.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on this thread's log for session `generation` (emptied when it held an
/// earlier session's).
pub(crate) fn with_mine<R>(generation: u64, f: impl FnOnce(&mut ThreadLog) -> R) -> Option<R> {
    MINE.try_with(|cell| {
        let log = cell.get_or_init(|| {
            let log = Arc::new(Mutex::new(ThreadLog {
                thread: this_thread(),
                ..ThreadLog::default()
            }));
            // Once per thread: the registry's lock is not on the launch path after.
            lock(&REGISTRY).push(log.clone());
            log
        });
        let mut log = lock(log);
        if log.generation != generation {
            log.generation = generation;
            log.launches.clear();
            log.measurements.clear();
        }
        f(&mut log)
    })
    .ok()
}

/// Takes every thread's launches of session `generation`, leaving the logs empty.
pub(crate) fn take(generation: u64) -> Vec<ThreadLog> {
    let logs = lock(&REGISTRY).clone();
    let mut taken = Vec::new();
    for log in logs {
        let mut log = lock(&log);
        if log.generation == generation && !log.launches.is_empty() {
            taken.push(ThreadLog {
                generation,
                thread: log.thread.clone(),
                launches: std::mem::take(&mut log.launches),
                measurements: std::mem::take(&mut log.measurements),
            });
        }
    }
    // Threads that ended hold their last reference here.
    lock(&REGISTRY).retain(|log| Arc::strong_count(log) > 1);
    taken
}

/// The issuing thread's index (from 1, in the order threads first issued a kernel)
/// and name, for the host line of its launches made outside any annotation.
fn this_thread() -> (u32, String) {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let current = std::thread::current();
    let index = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = current
        .name()
        .map_or_else(|| format!("thread {index}"), str::to_owned);
    (index, name)
}
