//! The flight recorder (MXNet's `continuous_dump`, Perfetto's ring buffers, TSL's
//! continuous profiling): an always-on session in which each thread keeps only its
//! most recent records in a ring of fixed size, and [`snapshot`] collects what the
//! rings hold without stopping anything, so a hung or slow job can be inspected
//! after the fact.
//!
//! ```
//! use profiler_core::flight_recorder::{self, FlightRecorder};
//! use profiler_core::{session, trace, ProfileOptions};
//!
//! flight_recorder::start(ProfileOptions::default(), FlightRecorder::new(1024))?;
//! for step in 0..5000 {
//!     let _t = trace!("Train", step_num = step);
//! }
//! let snapshot = flight_recorder::snapshot()?; // still recording
//! let steps = snapshot.steps();
//! assert!(steps.len() <= 1024 && steps.last() == Some(&4999)); // the most recent
//! session::stop()?;
//! # Ok::<(), profiler_core::Error>(())
//! ```
//!
//! Memory is bounded whatever the run length: each thread that records holds
//! `events_per_thread` records (rounded up to whole 32 KiB chunks of 1024 records,
//! plus one chunk so that a snapshot taken while the thread writes still finds about
//! that many whole; a field is one more record, a string field one more per 32
//! bytes). Recording costs
//! what it costs in any session: the ring only changes where the writer goes after
//! its last chunk. An event is kept only while its record is in the ring; one that
//! began before the oldest record left is gone, even if it has not ended yet.

use std::time::Duration;

use crate::error::{Error, ErrorKind, Result};
use crate::options::ProfileOptions;
use crate::profile::Profile;
use crate::session;

/// Records each thread keeps when none is said (2 MiB per thread).
pub const DEFAULT_EVENTS_PER_THREAD: u64 = 64 * 1024;

/// How much a flight recorder keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlightRecorder {
    /// Records each thread's ring holds (rounded up to a multiple of 1024).
    pub events_per_thread: u64,
    /// When set, a snapshot leaves out what ended longer ago than this.
    pub window: Option<Duration>,
}

impl Default for FlightRecorder {
    fn default() -> Self {
        FlightRecorder::new(DEFAULT_EVENTS_PER_THREAD)
    }
}

impl FlightRecorder {
    /// Rings of `events_per_thread` records, no time window.
    pub const fn new(events_per_thread: u64) -> FlightRecorder {
        FlightRecorder {
            events_per_thread,
            window: None,
        }
    }

    /// Snapshots keep only the last `window` of the run.
    pub const fn window(mut self, window: Duration) -> FlightRecorder {
        self.window = Some(window);
        self
    }

    /// Checks the settings.
    ///
    /// # Errors
    /// [`ErrorKind::InvalidArgument`] for an empty ring or window, or a ring over
    /// 2^32 records per thread.
    pub fn validate(&self) -> Result<()> {
        if self.events_per_thread == 0 || self.events_per_thread > 1 << 32 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "flight recorder events_per_thread = {} is out of range: use 1 to 2^32",
                    self.events_per_thread
                ),
            ));
        }
        if self.window == Some(Duration::ZERO) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "flight recorder window is 0: leave it unset to keep whatever the rings hold",
            ));
        }
        Ok(())
    }
}

/// Starts a flight-recorder session. `options.max_events` does not apply: the rings
/// bound memory instead. It ends with [`session::stop`], which returns a last
/// snapshot.
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] for invalid options or settings,
/// [`ErrorKind::AlreadyExists`] when a session is running.
pub fn start(options: ProfileOptions, recorder: FlightRecorder) -> Result<()> {
    start_recorder(options, recorder, None, false)
}

/// Every flight recorder's start: the settings checked, then a session of rings.
fn start_recorder(
    options: ProfileOptions,
    recorder: FlightRecorder,
    finisher: Option<session::Finisher>,
    background: bool,
) -> Result<()> {
    recorder.validate()?;
    session::start_with(
        options,
        finisher,
        recorder.events_per_thread,
        recorder.window,
        background,
    )
}

/// Starts a background flight recorder: one that makes way for any session started
/// after it (`session::start`, a capture, another flight recorder), which then
/// replaces it, its records dropped uncollected. A live view of the process
/// (`profiler_remote`'s `Watch`) records this way only while someone watches, so that
/// watching never makes a capture fail as busy. It is stopped like any session, and
/// [`is_background`] tells it from one that something else started.
///
/// # Errors
/// As [`start`]: [`ErrorKind::AlreadyExists`] while any session runs.
pub fn start_background(options: ProfileOptions, recorder: FlightRecorder) -> Result<()> {
    start_recorder(options, recorder, None, true)
}

/// Stops the background flight recorder ([`start_background`]) if it is the running
/// session, dropping what it holds; whether it was. Any other session is left
/// running, however close in time it replaced the background one.
pub fn stop_background() -> bool {
    session::stop_background()
}

/// Whether the running session is a background flight recorder
/// ([`start_background`]).
pub fn is_background() -> bool {
    session::is_background()
}

/// Starts a flight-recorder session whose last snapshot `finisher` writes when it
/// ends: at [`session::stop`], and when the process ends without it (a panic, the
/// exit, a signal with `write_on_signals`; see [`crate::exit`]). The `prof` facade's
/// `flight_recorder::start_in` passes one writing a logdir.
///
/// # Errors
/// As [`start`].
pub fn start_writing(
    options: ProfileOptions,
    recorder: FlightRecorder,
    finisher: session::Finisher,
) -> Result<()> {
    start_recorder(options, recorder, Some(finisher), false)
}

/// What the rings hold now, as a profile; recording goes on.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no flight recorder runs.
pub fn snapshot() -> Result<Profile> {
    session::snapshot()
}

/// Whether a flight recorder runs.
pub fn is_running() -> bool {
    session::is_flight_recorder()
}
