//! MXNet's profiling objects: [`Domain`], [`Task`], [`Frame`], [`Event`] and
//! [`Marker`] (and [`Counter`](crate::Counter), kept in its own module).
//!
//! A domain groups what it owns on a host line of its own, named after it. Tasks,
//! frames and events are intervals with an explicit `start` and `stop`, which may be
//! called on different threads; overlapping ones share the domain's line in lanes
//! (`name (2)`, ...). A marker is an instant: with [`MarkerScope::Thread`] on the line
//! of the thread that marks it, otherwise on its domain's line. Each carries an
//! `object` stat (`task`, `frame`, `event`, `marker`) and markers a `scope` stat.
//!
//! ```
//! use profiler_core::domain::{Domain, Frame, Marker, MarkerScope, Task};
//! use profiler_core::{session, ProfileOptions};
//!
//! static PIPELINE: Domain = Domain::new("pipeline");
//! static PREFETCH: Task = Task::new(&PIPELINE, "prefetch");
//! static EPOCH: Frame = Frame::new(&PIPELINE, "epoch");
//! static CHECKPOINT: Marker = Marker::new(&PIPELINE, "checkpoint");
//!
//! session::start(ProfileOptions::default(), None)?;
//! EPOCH.start();
//! PREFETCH.start();
//! std::thread::spawn(|| PREFETCH.stop()).join().unwrap(); // stopped elsewhere
//! CHECKPOINT.mark(MarkerScope::Process);
//! EPOCH.stop();
//! let profile = session::stop()?;
//! assert_eq!(profile.event_count(), 3);
//! # Ok::<(), profiler_core::Error>(())
//! ```
//!
//! While no session records, `start` and `mark` are one relaxed atomic load (the
//! recording gate) and `stop` one relaxed load of the object's own start time. While
//! recording, `start` stores a timestamp in the object and `stop` writes two records
//! on the stopping thread: no lock, no allocation. An object holds one start: a
//! second `start` before `stop` restarts it.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

use crate::buffer;
use crate::clock;
use crate::field::Value;
use crate::gate::{self, USER_LEVEL};
use crate::tags::{ObjectKind, OBJECT_OF};

/// Names of the domains in use, by id - 1.
static DOMAINS: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// The name of the domain with id `id`.
pub(crate) fn domain_name(id: u32) -> Option<&'static str> {
    let domains = DOMAINS.lock().unwrap_or_else(|e| e.into_inner());
    domains.get((id as usize).checked_sub(1)?).copied()
}

/// Where [`Event`]s go: MXNet's events belong to no domain.
static EVENTS: Domain = Domain::new("Events");

/// A named group of profiling objects, shown as a host line of its own
/// (MXNet's `profiler.Domain`).
#[derive(Debug)]
pub struct Domain {
    name: &'static str,
    /// 0 until first used.
    id: AtomicU32,
}

impl Domain {
    /// A domain; usable in a `static`.
    pub const fn new(name: &'static str) -> Domain {
        Domain {
            name,
            id: AtomicU32::new(0),
        }
    }

    /// The domain's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The domain's id, registering it on first use (once per domain, while recording).
    fn id(&self) -> u32 {
        match self.id.load(Ordering::Relaxed) {
            0 => self.register(),
            id => id,
        }
    }

    #[cold]
    fn register(&self) -> u32 {
        let mut domains = DOMAINS.lock().unwrap_or_else(|e| e.into_inner());
        // Re-checked under the lock: another thread may have registered it meanwhile.
        match self.id.load(Ordering::Relaxed) {
            0 => {
                domains.push(self.name);
                let id = domains.len() as u32;
                self.id.store(id, Ordering::Relaxed);
                id
            }
            id => id,
        }
    }
}

/// Records an object's event on this thread, tagged with its domain and kind.
fn record(domain: &Domain, kind: ObjectKind, name: &'static str, start: u64, end: u64) {
    let tag = kind.tag(domain.id());
    if let Some(event) = buffer::span_event(name, start, end) {
        buffer::add_field(&event, OBJECT_OF, Value::U64(tag));
    }
}

/// The interval shared by tasks, frames and events.
#[derive(Debug)]
struct Interval {
    domain: &'static Domain,
    name: &'static str,
    /// Clock ticks of the open start; 0 while stopped.
    start: AtomicU64,
}

impl Interval {
    const fn new(domain: &'static Domain, name: &'static str) -> Interval {
        Interval {
            domain,
            name,
            start: AtomicU64::new(0),
        }
    }

    #[inline]
    fn start(&self) {
        if gate::is_open(USER_LEVEL) {
            self.start.store(clock::now().max(1), Ordering::Relaxed);
        }
    }

    #[inline]
    fn stop(&self, kind: ObjectKind) {
        // Loaded first so that a stopped object costs one load; the swap makes two
        // concurrent stops record the interval once.
        if self.start.load(Ordering::Relaxed) == 0 {
            return;
        }
        let start = self.start.swap(0, Ordering::Relaxed);
        if start != 0 {
            record(self.domain, kind, self.name, start, clock::now());
        }
    }
}

macro_rules! interval_object {
    ($(#[$doc:meta])* $ty:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $ty(Interval);

        impl $ty {
            /// Starts the interval, if a session records.
            #[inline]
            pub fn start(&self) {
                self.0.start();
            }

            /// Stops it and records it on the calling thread's buffer, if it was
            /// started while recording.
            #[inline]
            pub fn stop(&self) {
                self.0.stop($kind);
            }

            /// The object's name.
            pub fn name(&self) -> &'static str {
                self.0.name
            }
        }
    };
}

interval_object!(
    /// A unit of work in a domain, started and stopped explicitly, possibly on
    /// different threads (MXNet's `profiler.Task`).
    Task,
    ObjectKind::Task
);
interval_object!(
    /// A frame (an iteration, an epoch) in a domain (MXNet's `profiler.Frame`).
    Frame,
    ObjectKind::Frame
);
interval_object!(
    /// A general interval of no domain, on the `Events` line (MXNet's
    /// `profiler.Event`).
    Event,
    ObjectKind::Event
);

impl Task {
    /// A task named `name` in `domain`; usable in a `static`.
    pub const fn new(domain: &'static Domain, name: &'static str) -> Task {
        Task(Interval::new(domain, name))
    }
}

impl Frame {
    /// A frame named `name` in `domain`; usable in a `static`.
    pub const fn new(domain: &'static Domain, name: &'static str) -> Frame {
        Frame(Interval::new(domain, name))
    }
}

impl Event {
    /// An event named `name`; usable in a `static`.
    pub const fn new(name: &'static str) -> Event {
        Event(Interval::new(&EVENTS, name))
    }
}

/// Where a marker shows (the `s` of a Chrome instant event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkerScope {
    /// The whole trace.
    Global,
    /// The process: the marker's domain line.
    Process,
    /// The marking thread's line.
    Thread,
}

/// An instant in a domain (MXNet's `profiler.Marker`).
#[derive(Debug)]
pub struct Marker {
    domain: &'static Domain,
    name: &'static str,
}

impl Marker {
    /// A marker named `name` in `domain`; usable in a `static`.
    pub const fn new(domain: &'static Domain, name: &'static str) -> Marker {
        Marker { domain, name }
    }

    /// Records the instant now, if a session records.
    #[inline]
    pub fn mark(&self, scope: MarkerScope) {
        if gate::is_open(USER_LEVEL) {
            let kind = match scope {
                MarkerScope::Global => ObjectKind::GlobalMarker,
                MarkerScope::Process => ObjectKind::ProcessMarker,
                MarkerScope::Thread => ObjectKind::ThreadMarker,
            };
            let now = clock::now();
            record(self.domain, kind, self.name, now, now);
        }
    }
}
