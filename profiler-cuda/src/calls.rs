//! The CUDA API calls of a session, as CUPTI's callback API reports them: the launch
//! callback's half of the GPU tracer.
//!
//! CUPTI calls the tracer on entry to and exit from every CUDA function it subscribed
//! to (launches, copies, memsets, allocations, synchronisation; every function with
//! `gpu_trace_all_api_calls`). [`on_api`] takes the time on entry, and on exit writes
//! one [`Call`]: the function, its start and end on prof's clock, its correlation id
//! (which the kernels it launched carry too) and the annotation open on the calling
//! thread (`profiler_core::tracer::innermost_scope`). TSL's tracer works the same way; CUPTI's own
//! DRIVER and RUNTIME activity records, which cost several times as much per call,
//! are not used.
//!
//! Each thread writes its calls into a log of its own: fixed-size chunks in a list,
//! published by one release store per call, read by the collector after the session.
//! The chunks stay with the thread for the next session, so after the first one
//! nothing allocates. The session's cap (`gpu_max_callback_api_events`) is taken from
//! one shared counter a chunk at a time, not a call at a time (so it is reached within a
//! chunk per thread).
//!
//! What would break the no-lock, no-allocation path: a shared counter or a lock per
//! call (every launching thread would write one cache line), a `Vec` that grows per
//! call, or formatting the function's name in the callback (names are looked up once
//! per function, at collection).

#![allow(unsafe_code)]

use std::cell::{Cell, OnceCell, UnsafeCell};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use profiler_core::clock;
use profiler_core::tracer::ScopeId;

/// Which CUPTI callback domain a call was reported in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ApiDomain {
    /// `CUPTI_CB_DOMAIN_DRIVER_API`: `cu*` functions.
    Driver,
    /// `CUPTI_CB_DOMAIN_RUNTIME_API`: `cuda*` functions.
    Runtime,
}

/// One CUDA API call, as the launch callback recorded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Call {
    /// Entry, in prof's raw clock ticks (`profiler_core::clock::now`; the session's
    /// `SessionClock::ticks_to_clock_ns` converts them).
    pub start: u64,
    /// Exit, in ticks.
    pub end: u64,
    /// The annotation open on the calling thread at the call; for a kernel launch made
    /// on a thread with none open, the one handed off by the thread that issued the
    /// kernel (see [`Call::issued_at`]).
    pub scope: Option<ScopeId>,
    /// For a kernel launch that took a hand-off (`profiler_core::tracer::take_hand_off`:
    /// issued on another thread, launched on this one, as cubecl's device thread
    /// launches what the user's thread issued), when the kernel was issued, in ticks;
    /// 0 otherwise.
    pub issued_at: u64,
    /// CUPTI's correlation id, which device work the call launched carries too.
    pub correlation_id: u32,
    /// CUPTI's callback id of the function (its name, in `domain`).
    pub cbid: u32,
    /// The domain `cbid` is from.
    pub domain: ApiDomain,
    /// For a graph launch, the executable graph's id (`cuptiGetGraphExecId`); 0
    /// otherwise.
    pub graph_exec_id: u32,
}

/// The calls one thread made in a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadCalls {
    /// The OS thread id (`gettid`), as CUPTI's records name threads.
    pub thread_id: u32,
    /// In the order they returned.
    pub calls: Vec<Call>,
    /// Calls left out over the session's cap.
    pub dropped: u64,
}

/// Calls per chunk of a thread's log (56 bytes each).
const CHUNK: usize = 1024;

struct Chunk {
    slots: [UnsafeCell<MaybeUninit<Call>>; CHUNK],
    next: AtomicPtr<Chunk>,
}

impl Chunk {
    fn new() -> *mut Chunk {
        let layout = std::alloc::Layout::new::<Chunk>();
        // SAFETY: the layout is `Chunk`'s, of non-zero size; all zeroes is a valid
        // `Chunk` (the slots are `MaybeUninit`, and a null `AtomicPtr` is zero). The
        // pointer is owned by a `Box` from here on (`Log::drop` frees it as one).
        unsafe {
            let chunk = std::alloc::alloc_zeroed(layout).cast::<Chunk>();
            if chunk.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            chunk
        }
    }
}

/// One thread's log: written by its thread only, read by the collector up to
/// `published`.
struct Log {
    thread_id: u32,
    /// The session whose calls the log holds; 0 before the thread's first call.
    generation: AtomicU64,
    /// Calls of `generation` complete in the chunks.
    published: AtomicU64,
    dropped: AtomicU64,
    /// Set when the thread exits; the next session forgets the log.
    exited: AtomicBool,
    head: *mut Chunk,
}

// SAFETY: the chunks behind `head` are written only by the log's thread, each slot
// before `published` counts it (release), and read by others only below `published`
// (acquire).
unsafe impl Send for Log {}
// SAFETY: as above.
unsafe impl Sync for Log {}

impl Drop for Log {
    fn drop(&mut self) {
        let mut chunk = self.head;
        while !chunk.is_null() {
            // SAFETY: every chunk of the list was made by `Chunk::new`, and the log is
            // dropped once, when neither its thread nor the collector holds it.
            let owned = unsafe { Box::from_raw(chunk) };
            chunk = owned.next.load(Ordering::Acquire);
        }
    }
}

impl Log {
    /// The calls of session `generation`, if the thread made any.
    fn read(&self, generation: u64) -> Option<ThreadCalls> {
        if self.generation.load(Ordering::Acquire) != generation {
            return None;
        }
        let published = self.published.load(Ordering::Acquire) as usize;
        let mut calls = Vec::with_capacity(published);
        let mut chunk = self.head;
        while calls.len() < published && !chunk.is_null() {
            // SAFETY: the chunk is one of this log's, alive while the log is.
            let c = unsafe { &*chunk };
            let n = (published - calls.len()).min(CHUNK);
            for slot in &c.slots[..n] {
                // SAFETY: slots below `published` were written before it was
                // released, and the writer does not touch them again this session.
                calls.push(unsafe { (*slot.get()).assume_init() });
            }
            chunk = c.next.load(Ordering::Acquire);
        }
        Some(ThreadCalls {
            thread_id: self.thread_id,
            calls,
            dropped: self.dropped.load(Ordering::Relaxed),
        })
    }
}

/// The session recording now (0: none).
static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Calls the session may still hand out, taken a chunk at a time.
static BUDGET: AtomicU64 = AtomicU64::new(0);
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);
static REGISTRY: Mutex<Vec<Arc<Log>>> = Mutex::new(Vec::new());

fn registry() -> MutexGuard<'static, Vec<Arc<Log>>> {
    // A panic while holding the lock cannot leave the Vec inconsistent.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// The writing side of this thread's log.
struct Writer {
    log: Arc<Log>,
    generation: Cell<u64>,
    chunk: Cell<*mut Chunk>,
    /// Next free slot in `chunk`.
    index: Cell<usize>,
    written: Cell<u64>,
    /// Calls this thread may still write before taking more of the budget.
    allowance: Cell<u64>,
}

impl Drop for Writer {
    fn drop(&mut self) {
        self.log.exited.store(true, Ordering::Release);
    }
}

thread_local! {
    static WRITER: OnceCell<Writer> = const { OnceCell::new() };
}

fn register() -> Writer {
    let log = Arc::new(Log {
        thread_id: thread_id(),
        generation: AtomicU64::new(0),
        published: AtomicU64::new(0),
        dropped: AtomicU64::new(0),
        exited: AtomicBool::new(false),
        head: Chunk::new(),
    });
    // Once per thread: the only lock on the path, never taken again by this thread.
    registry().push(log.clone());
    Writer {
        chunk: Cell::new(log.head),
        log,
        generation: Cell::new(0),
        index: Cell::new(0),
        written: Cell::new(0),
        allowance: Cell::new(0),
    }
}

/// The OS thread id, as CUPTI names threads once told to
/// (`CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM`), so API calls and NVTX ranges of one
/// thread match.
fn os_thread_id() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    let tid = unsafe { libc::syscall(libc::SYS_gettid) };
    u32::try_from(tid).unwrap_or(0)
}

thread_local! {
    static THREAD_ID: Cell<u32> = const { Cell::new(0) };
}

/// This thread's OS id (asked of the kernel once per thread).
pub fn thread_id() -> u32 {
    THREAD_ID
        .try_with(|id| {
            if id.get() == 0 {
                id.set(os_thread_id());
            }
            id.get()
        })
        .unwrap_or_else(|_| os_thread_id())
}

impl Writer {
    #[inline]
    fn push(&self, generation: u64, call: Call) {
        if self.generation.get() != generation {
            self.restart(generation);
        }
        if self.allowance.get() == 0 && !self.take_allowance() {
            self.log.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut index = self.index.get();
        if index == CHUNK {
            self.next_chunk();
            index = 0;
        }
        // SAFETY: the chunk is this thread's; slot `index` is past `published`, so no
        // reader looks at it until the store below.
        unsafe { (*(*self.chunk.get()).slots[index].get()).write(call) };
        self.index.set(index + 1);
        self.allowance.set(self.allowance.get() - 1);
        let written = self.written.get() + 1;
        self.written.set(written);
        self.log.published.store(written, Ordering::Release);
    }

    /// The first call of a new session: back to the first chunk.
    #[cold]
    fn restart(&self, generation: u64) {
        self.log.published.store(0, Ordering::Relaxed);
        self.log.dropped.store(0, Ordering::Relaxed);
        // Release: a reader seeing the new generation sees `published` reset.
        self.log.generation.store(generation, Ordering::Release);
        self.generation.set(generation);
        self.chunk.set(self.log.head);
        self.index.set(0);
        self.written.set(0);
        self.allowance.set(0);
    }

    /// Takes up to a chunk's worth of the session's budget; false when none is left.
    #[cold]
    fn take_allowance(&self) -> bool {
        let taken = BUDGET.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
            left.checked_sub(left.min(CHUNK as u64))
                .filter(|_| left > 0)
        });
        match taken {
            Ok(left) => {
                self.allowance.set(left.min(CHUNK as u64));
                true
            }
            Err(_) => false,
        }
    }

    /// Moves to the next chunk, making one the first time the list is this long.
    #[cold]
    fn next_chunk(&self) {
        // SAFETY: the current chunk is this thread's, alive while its log is.
        let current = unsafe { &*self.chunk.get() };
        let mut next = current.next.load(Ordering::Acquire);
        if next.is_null() {
            next = Chunk::new();
            current.next.store(next, Ordering::Release);
        }
        self.chunk.set(next);
        self.index.set(0);
    }
}

/// Starts recording calls for a new session, at most `max_calls` of them (over all
/// threads); returns the session's generation.
pub fn begin_session(max_calls: u64) -> u64 {
    registry().retain(|log| !log.exited.load(Ordering::Acquire));
    BUDGET.store(max_calls, Ordering::Relaxed);
    let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
    GENERATION.store(generation, Ordering::Release);
    generation
}

/// Stops recording calls. A call already inside the callback may still complete its
/// record; the collector reads what was published by the time it looks.
pub fn end_session() {
    GENERATION.store(0, Ordering::Release);
}

/// Every thread's calls of session `generation`, after [`end_session`].
pub fn collect(generation: u64) -> Vec<ThreadCalls> {
    let logs = registry().clone();
    logs.iter().filter_map(|log| log.read(generation)).collect()
}

/// What the conversion reads of a session's calls: an [`Activity::Api`] per call, an
/// [`Activity::ExternalCorrelation`] for each made inside an annotation (or for a
/// launch that took a hand-off, an [`Activity::HandedOff`] beside it), and the
/// (correlation id, executable graph) of each graph launch. `name` gives a function's
/// name from its domain and callback id (CUPTI's names, looked up once per function);
/// `to_clock_ns` converts the calls' ticks to the clock activity records are on.
///
/// [`Activity::Api`]: crate::activity::Activity::Api
/// [`Activity::ExternalCorrelation`]: crate::activity::Activity::ExternalCorrelation
/// [`Activity::HandedOff`]: crate::activity::Activity::HandedOff
pub fn into_activities(
    threads: Vec<ThreadCalls>,
    mut name: impl FnMut(ApiDomain, u32) -> String,
    to_clock_ns: impl Fn(u64) -> u64,
) -> (Vec<crate::activity::Activity>, Vec<(u32, u32)>) {
    use crate::activity::Activity;
    use std::collections::HashMap;
    let mut names: HashMap<(ApiDomain, u32), String> = HashMap::new();
    let mut activities = Vec::new();
    let mut graph_launches = Vec::new();
    for thread in threads {
        for call in thread.calls {
            let name = names
                .entry((call.domain, call.cbid))
                .or_insert_with(|| name(call.domain, call.cbid))
                .clone();
            if let Some(scope) = call.scope {
                activities.push(Activity::ExternalCorrelation {
                    correlation_id: call.correlation_id,
                    external_id: scope.to_u64(),
                });
            }
            if call.issued_at != 0 {
                activities.push(Activity::HandedOff {
                    correlation_id: call.correlation_id,
                    issued_at: to_clock_ns(call.issued_at),
                });
            }
            if call.graph_exec_id != 0 {
                graph_launches.push((call.correlation_id, call.graph_exec_id));
            }
            activities.push(Activity::Api {
                name,
                start: to_clock_ns(call.start),
                end: to_clock_ns(call.end),
                thread_id: thread.thread_id,
                correlation_id: call.correlation_id,
            });
        }
    }
    (activities, graph_launches)
}

/// Where in a call CUPTI's callback is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    /// `CUPTI_API_ENTER`.
    Enter,
    /// `CUPTI_API_EXIT`.
    Exit,
}

/// The launch callback's work for one side of one API call: on entry, the start time
/// goes into `correlation_data` (the 8 bytes CUPTI keeps for the call between its
/// entry and exit callbacks); on exit, the call is recorded with the annotation open on
/// this thread. Nothing is recorded outside a session, nor for a call entered before
/// it started.
///
/// A kernel launch (`launches_kernel`: the driver's launch functions) made where no
/// annotation is open takes the oldest hand-off (`profiler_core::tracer::take_hand_off`),
/// so a kernel cubecl's device thread launches carries the annotation open where the
/// user's thread issued it: one atomic load while nothing was handed off.
///
/// # Safety
/// `correlation_data` is CUPTI's `CUpti_CallbackData::correlationData`: valid for
/// reads and writes of a `u64`, the same pointer on entry and exit of one call.
#[inline]
pub unsafe fn on_api(
    domain: ApiDomain,
    cbid: u32,
    site: Site,
    correlation_id: u32,
    correlation_data: *mut u64,
    graph_exec_id: u32,
    launches_kernel: bool,
) {
    let generation = GENERATION.load(Ordering::Relaxed);
    match site {
        Site::Enter => {
            // SAFETY: the caller's promise.
            unsafe {
                correlation_data.write(if generation == 0 {
                    0
                } else {
                    clock::now().max(1)
                })
            }
        }
        Site::Exit => {
            // SAFETY: the caller's promise; entry wrote it.
            let start = unsafe { correlation_data.read() };
            if generation == 0 || start == 0 {
                return;
            }
            let mut scope = profiler_core::tracer::innermost_scope();
            let mut issued_at = 0;
            if scope.is_none() && launches_kernel {
                if let Some(handed) = profiler_core::tracer::take_hand_off() {
                    scope = handed.scope;
                    issued_at = handed.at.max(1);
                }
            }
            let call = Call {
                start,
                end: clock::now(),
                scope,
                issued_at,
                correlation_id,
                cbid,
                domain,
                graph_exec_id,
            };
            let _ = WRITER.try_with(|w| w.get_or_init(register).push(generation, call));
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Sessions are process-wide: one test records at a time.
    pub(crate) static SESSION: Mutex<()> = Mutex::new(());

    fn call(correlation_id: u32) {
        let mut data = 0u64;
        // SAFETY: `data` lives across both calls.
        unsafe {
            on_api(
                ApiDomain::Driver,
                307,
                Site::Enter,
                correlation_id,
                &mut data,
                0,
                true,
            );
            on_api(
                ApiDomain::Driver,
                307,
                Site::Exit,
                correlation_id,
                &mut data,
                0,
                true,
            );
        }
    }

    /// Runs `f` inside a recorded annotation, the scope stack kept, in a session of
    /// its own; returns the annotation's scope.
    pub(crate) fn with_open_annotation(f: impl FnOnce()) -> Option<ScopeId> {
        use profiler_core::{session, tracer, ProfileOptions};
        let _ = session::stop();
        tracer::keep_scope_stack(true);
        session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
        let scope = {
            let _open = profiler_core::trace!("open");
            let scope = tracer::innermost_scope();
            f();
            scope
        };
        let _ = session::stop();
        tracer::keep_scope_stack(false);
        scope
    }

    fn mine(all: Vec<ThreadCalls>) -> ThreadCalls {
        let me = thread_id();
        all.into_iter()
            .find(|t| t.thread_id == me)
            .unwrap_or_default()
    }

    #[test]
    fn calls_are_recorded_only_inside_a_session_with_their_times_and_scope() {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        call(1); // before any session
        let generation = begin_session(1 << 20);
        call(2);
        let scope = with_open_annotation(|| call(3));
        assert!(scope.is_some());
        // Entered inside the session, returning after it: left out.
        let mut data = 0u64;
        // SAFETY: `data` lives across both calls.
        unsafe { on_api(ApiDomain::Runtime, 211, Site::Enter, 4, &mut data, 0, false) };
        end_session();
        // SAFETY: as above.
        unsafe { on_api(ApiDomain::Runtime, 211, Site::Exit, 4, &mut data, 0, false) };
        let got = mine(collect(generation));
        let ids: Vec<u32> = got.calls.iter().map(|c| c.correlation_id).collect();
        assert_eq!(ids, [2, 3]);
        assert_eq!(got.calls[0].scope, None);
        assert_eq!(got.calls[1].scope, scope);
        assert!(got.calls.iter().all(|c| c.start > 0 && c.start <= c.end));
        assert_eq!(
            (got.calls[0].cbid, got.calls[0].domain),
            (307, ApiDomain::Driver)
        );
    }

    #[test]
    fn a_new_session_starts_an_empty_log_and_reuses_its_chunks() {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        let first = begin_session(u64::MAX);
        for id in 0..(CHUNK as u32 * 3 + 5) {
            call(id);
        }
        end_session();
        assert_eq!(mine(collect(first)).calls.len(), CHUNK * 3 + 5);
        let second = begin_session(u64::MAX);
        call(77);
        end_session();
        let got = mine(collect(second));
        assert_eq!(
            got.calls
                .iter()
                .map(|c| c.correlation_id)
                .collect::<Vec<_>>(),
            [77]
        );
        // The first session's calls are not this session's.
        assert_eq!(mine(collect(first)).calls.len(), 0);
    }

    #[test]
    fn calls_past_the_cap_are_counted_not_kept_across_threads() {
        let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
        let generation = begin_session(1500);
        let threads: Vec<_> = (0..3)
            .map(|t| {
                std::thread::spawn(move || {
                    for i in 0..1000 {
                        call(t * 10_000 + i);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        end_session();
        let all = collect(generation);
        let kept: usize = all.iter().map(|t| t.calls.len()).sum();
        let dropped: u64 = all.iter().map(|t| t.dropped).sum();
        // Budget is taken a chunk at a time, so a thread may leave part of its share
        // unused: the cap holds, and is reached within a chunk per thread.
        assert_eq!(kept as u64 + dropped, 3000);
        assert!(kept <= 1500 && kept + 3 * CHUNK > 1500, "{kept}");
        // Each thread's calls in the order it made them.
        for t in &all {
            assert!(t
                .calls
                .windows(2)
                .all(|w| w[0].correlation_id < w[1].correlation_id));
        }
    }

    #[test]
    fn calls_become_api_records_and_their_annotations() {
        use crate::activity::Activity;
        let scope = ScopeId { line: 3, seq: 11 };
        let call = |correlation_id, scope, graph_exec_id| Call {
            start: 10,
            end: 20,
            scope,
            issued_at: 0,
            correlation_id,
            cbid: 307,
            domain: ApiDomain::Driver,
            graph_exec_id,
        };
        let threads = vec![ThreadCalls {
            thread_id: 42,
            calls: vec![
                call(1, Some(scope), 0),
                call(2, None, 0),
                call(3, Some(scope), 9),
                // A launch that took a hand-off: issued at tick 6 elsewhere.
                Call {
                    issued_at: 6,
                    ..call(4, Some(scope), 0)
                },
            ],
            dropped: 0,
        }];
        let mut asked = 0;
        let (activities, launches) = into_activities(
            threads,
            |domain, cbid| {
                asked += 1;
                format!("{domain:?}{cbid}")
            },
            |ticks| ticks * 2,
        );
        assert_eq!(asked, 1, "one name lookup per function");
        assert_eq!(launches, [(3, 9)]);
        assert_eq!(activities.len(), 8);
        assert_eq!(
            activities[6],
            Activity::HandedOff {
                correlation_id: 4,
                issued_at: 12
            }
        );
        assert_eq!(
            activities[0],
            Activity::ExternalCorrelation {
                correlation_id: 1,
                external_id: scope.to_u64()
            }
        );
        assert_eq!(
            activities[2],
            Activity::Api {
                name: "Driver307".into(),
                start: 20,
                end: 40,
                thread_id: 42,
                correlation_id: 2
            }
        );
    }
}
