//! **prof**: a profiler for Rust machine-learning stacks, whose profiles open in
//! TensorBoard/XProf like TensorFlow's and JAX's.
//!
//! Annotate the work with [`trace!`], run a session with [`start`] / [`stop`] (or the
//! scoped [`Session`], or the closure form [`profile`]), and open the logdir:
//!
//! ```
//! # fn main() -> Result<(), prof::Error> {
//! # let dir = std::env::temp_dir().join(format!("prof-doc-{}", std::process::id()));
//! # let logdir = dir.as_path();
//! prof::start(logdir, prof::ProfileOptions::default())?;
//! for step in 0..3 {
//!     let _step = prof::trace!("Train", step_num = step);
//!     {
//!         let _fwd = prof::trace!("forward", batch = 32);
//!     }
//!     let opt = prof::trace!("optimizer");
//!     opt.set_metadata("lr", 1e-3);
//! }
//! let profile = prof::stop()?;
//! assert_eq!(profile.steps(), [0, 1, 2]);
//! println!("wrote {}", profile.files()[0].display()); // view with: xprof --logdir <logdir>
//! # std::fs::remove_dir_all(&dir).ok();
//! # Ok(()) }
//! ```
//!
//! Functions can be recorded whole with [`instrument`]:
//!
//! ```
//! #[prof::instrument(fields(step_num = step))]
//! fn train_step(step: u64, lr: f64) -> f64 {
//!     lr * step as f64
//! }
//! # assert_eq!(train_step(2, 0.5), 1.0);
//! ```
//!
//! The layout is `<logdir>/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.xplane.pb`, read
//! by `xprof --logdir` and `tensorboard --logdir` (with the profile plugin).
//!
//! One session runs at a time in a process: a second [`start`] fails with
//! [`ErrorKind::AlreadyExists`], [`stop`] without a session with
//! [`ErrorKind::FailedPrecondition`], and invalid [`ProfileOptions`] with
//! [`ErrorKind::InvalidArgument`] naming what was wrong. While no session runs every
//! annotation costs one relaxed atomic load.
//!
//! # In a library: `default-features = false`
//!
//! The `enable` feature (a default) is what makes annotations exist. A library that
//! annotates its code depends on prof with `default-features = false`; the application
//! at the top of the build decides: with prof's defaults (or `features = ["enable"]`)
//! every crate's annotations record, and without them anywhere in the build they
//! compile to nothing, field expressions included, while sessions still start, stop
//! and record nothing on the host ([`gate::STATIC_MAX_LEVEL`] is then 0). Features only
//! add up across a build, so on by default is what lets an application that never
//! thinks of features record, and off in libraries is what lets an application compile
//! them out. The [annotating] chapter says more.
//!
//! # Map
//!
//! | to | use | guide |
//! |---|---|---|
//! | mark steps, phases, functions | [`trace!`], [`set_metadata!`], [`instrument`], [`Counter`], [`Domain`], [`Task`], [`Frame`], [`Marker`] | [annotating] |
//! | record `tracing` spans | [`ProfilerLayer`] (feature `tracing`) | [tracing] |
//! | run a session | [`start`], [`stop`], [`Session`], [`profile`], [`start_in_memory`], [`pause`], [`resume`], [`ProfileOptions`] | [sessions] |
//! | profile chosen steps, or keep a ring | [`schedule`], [`flight_recorder`] | [sessions] |
//! | keep the profile when the program dies (panic, SIGTERM, no `stop`) | automatic; [`ProfileOptions::write_on_signals`], [`flight_recorder::start_in`] | [sessions] |
//! | export a [`Profile`] | [`prelude`] ([`ProfileExport`]), [`export`] | [formats] |
//! | summarise a profile, compare two runs | [`prelude`] ([`ProfileAnalysis`]), [`summary`], [`diff()`], [`diff`](mod@diff) | [comparing] |
//! | capture remotely | `server`, `client` (feature `remote`) | [remote] |
//! | watch a running job (`prof-top`, TensorFlow's `Monitor`) | `server` (feature `remote`), [`live`] | [live] |
//! | write logdirs to `s3://`, `gs://`, `az://` | any logdir argument (feature `object-store`) | [storage] |
//! | trace the GPU | `cuda`, `candle` (features `cuda`, `candle`) | [gpu] |
//! | count memory, ask for peaks | [`TrackingAllocator`], [`memory`] | [memory] |
//! | read or build profiles | [`xspace`], [`schema`] | [formats] |
//! | plug in a device tracer | [`tracer`] | |
//!
//! This crate is a facade: [`profiler_core`] records, [`export`] writes, and
//! `profiler-analysis` sums up and compares ([`summary`], [`diff()`]).
//!
//! [annotating]: https://github.com/prof-rs/prof/blob/main/docs/annotating.md
//! [tracing]: https://github.com/prof-rs/prof/blob/main/docs/tracing.md
//! [sessions]: https://github.com/prof-rs/prof/blob/main/docs/sessions.md
//! [formats]: https://github.com/prof-rs/prof/blob/main/docs/formats.md
//! [comparing]: https://github.com/prof-rs/prof/blob/main/docs/comparing.md
//! [remote]: https://github.com/prof-rs/prof/blob/main/docs/remote.md
//! [live]: https://github.com/prof-rs/prof/blob/main/docs/live.md
//! [storage]: https://github.com/prof-rs/prof/blob/main/docs/storage.md
//! [gpu]: https://github.com/prof-rs/prof/blob/main/docs/gpu.md
//! [memory]: https://github.com/prof-rs/prof/blob/main/docs/memory.md

use std::path::{Path, PathBuf};

pub mod schedule;

pub use profiler_analysis::functions;
pub use profiler_analysis::live;
pub use profiler_analysis::summary;
pub use profiler_analysis::ProfileAnalysis;
pub use profiler_core::domain::{Domain, Event, Frame, Marker, MarkerScope, Task};
#[cfg(feature = "tracing")]
pub use profiler_core::ProfilerLayer;
pub use profiler_core::TrackingAllocator;
pub use profiler_core::{domain, gate, options, schema, tracer, xspace};
pub use profiler_core::{
    set_metadata, trace, AsValue, ConfigValue, Counter, Error, ErrorKind, ExportFormat, Profile,
    ProfileOptions, Result, Trace, Value,
};
pub use profiler_export as export;
pub use profiler_export::ProfileExport;

/// Comparing two runs: [`diff()`](crate::diff()) compares them with the default
/// options, [`diff_with`](diff::diff_with) with yours; [`Diff`](diff::Diff) is what
/// they return (see [`profiler_analysis::diff`] for how a difference is called
/// significant).
pub mod diff {
    // Listed rather than globbed, so that the function `diff` has one path:
    // `prof::diff()`.
    pub use profiler_analysis::diff::{
        diff_with, Comparison, Diff, DiffOptions, Distribution, FunctionDiff, Gate, GateOptions,
        MemoryDiff, Method, OpDiff, OpKind, RenderOptions, SampleUnit, Side, SideSummary, Sides,
        Statistic, Test, Verdict,
    };
}
pub use profiler_attributes::instrument;
/// Memory in use and its peaks, per allocator (`host`, `GPU_0`, ...), in code:
/// [`memory::host`], [`memory::gpu`], [`memory::reset_peak`], [`memory::scope`].
///
/// The host heap is counted by a [`TrackingAllocator`] installed as the global
/// allocator; a GPU's memory by the CUPTI tracer (feature `cuda`) from what it saw
/// allocated in sessions, beside which `prof::cuda::driver::memory_info` gives the
/// driver's own figure.
///
/// ```
/// #[global_allocator]
/// static ALLOC: prof::TrackingAllocator<std::alloc::System> =
///     prof::TrackingAllocator::new(std::alloc::System);
///
/// # fn main() {
/// let m = prof::memory::scope();
/// let weights = vec![0f32; 1 << 20];
/// assert!(m.peak() >= 4 << 20);
/// # drop(weights);
/// # }
/// ```
pub mod memory {
    pub use profiler_core::memory::*;
}
/// Capturing from a `tensorflow.ProfilerService` server (prof's, JAX's, TensorFlow's).
#[cfg(feature = "remote")]
pub use profiler_remote::client;
/// Remote capture: the `tensorflow.ProfilerService` server
/// (`prof::server::start(6009)`), as TensorBoard/XProf's Capture button, JAX's
/// `collect_profile` and `capture-profile` reach it. [`server::start`] and
/// [`server::ServerBuilder::start`] register this build's device tracers for the
/// sessions the server captures, as [`crate::start`] does.
#[cfg(feature = "remote")]
pub mod server {
    use std::net::IpAddr;
    use std::path::PathBuf;

    pub use profiler_remote::server::*;

    /// Starts a server on 127.0.0.1:`port` (0 picks a free port), on its own threads,
    /// with this build's device tracers registered for the sessions it captures.
    ///
    /// # Errors
    /// [`crate::ErrorKind::Io`] when the port cannot be bound.
    pub fn start(port: u16) -> crate::Result<ServerHandle> {
        ServerBuilder::new(port).start()
    }

    /// Configures a server before starting it: the server crate's
    /// [`profiler_remote::server::ServerBuilder`], whose [`start`](ServerBuilder::start)
    /// registers this build's device tracers first.
    #[derive(Clone, Debug)]
    pub struct ServerBuilder(profiler_remote::server::ServerBuilder);

    impl ServerBuilder {
        /// A server for 127.0.0.1:`port`.
        pub fn new(port: u16) -> Self {
            ServerBuilder(profiler_remote::server::ServerBuilder::new(port))
        }

        /// Listens on `ip` instead of 127.0.0.1; see
        /// [`profiler_remote::server::ServerBuilder::address`] for what that exposes.
        pub fn address(self, ip: IpAddr) -> Self {
            ServerBuilder(self.0.address(ip))
        }

        /// Replaces the [`Limits`].
        pub fn limits(self, limits: Limits) -> Self {
            ServerBuilder(self.0.limits(limits))
        }

        /// Where the server may write the files clients ask for; see
        /// [`profiler_remote::server::ServerBuilder::writes`].
        pub fn writes(self, writes: Writes) -> Self {
            ServerBuilder(self.0.writes(writes))
        }

        /// Writes files only inside `dir` (created at start); see
        /// [`profiler_remote::server::ServerBuilder::confine_writes_to`].
        pub fn confine_writes_to(self, dir: impl Into<PathBuf>) -> Self {
            ServerBuilder(self.0.confine_writes_to(dir))
        }

        /// Refuses every call without `authorization: Bearer <token>`; see
        /// [`profiler_remote::server::ServerBuilder::bearer_token`].
        pub fn bearer_token(self, token: impl Into<String>) -> Self {
            ServerBuilder(self.0.bearer_token(token))
        }

        /// Serves over TLS with this certificate chain and private key, both PEM.
        #[cfg(feature = "tls")]
        pub fn tls(self, cert_pem: impl Into<Vec<u8>>, key_pem: impl Into<Vec<u8>>) -> Self {
            ServerBuilder(self.0.tls(cert_pem, key_pem))
        }

        /// Registers this build's device tracers, binds the port and serves on a
        /// thread of its own.
        ///
        /// # Errors
        /// As [`profiler_remote::server::ServerBuilder::start`].
        pub fn start(self) -> crate::Result<ServerHandle> {
            crate::register_tracers();
            self.0.start()
        }
    }
}

/// The flight recorder: an always-on session whose threads keep their latest records
/// in rings (see [`profiler_core::flight_recorder`]).
pub mod flight_recorder {
    pub use profiler_core::flight_recorder::*;

    /// Starts a flight-recorder session, with this build's device tracers registered
    /// as [`crate::start`] does; it ends with [`crate::stop`].
    ///
    /// # Errors
    /// [`crate::ErrorKind::InvalidArgument`] for invalid options or settings,
    /// [`crate::ErrorKind::AlreadyExists`] when a session is running.
    pub fn start(options: crate::ProfileOptions, recorder: FlightRecorder) -> crate::Result<()> {
        crate::register_tracers();
        profiler_core::flight_recorder::start(options, recorder)
    }

    /// Starts a flight-recorder session whose last snapshot is written to `logdir`
    /// as a run of its own when it ends: at [`crate::stop`], or when the program ends
    /// without it (a panic, the exit, and with `write_on_signals`, SIGTERM or SIGINT;
    /// see the sessions chapter). Snapshots taken meanwhile are written nowhere
    /// unless you write them.
    ///
    /// ```
    /// use prof::flight_recorder::{self, FlightRecorder};
    ///
    /// # let logdir = std::env::temp_dir().join(format!("prof-doc-fr-{}", std::process::id()));
    /// let options = prof::ProfileOptions::default().write_on_signals(true);
    /// flight_recorder::start_in(&logdir, options, FlightRecorder::new(4096))?;
    /// for step in 0..10_000 {
    ///     let _step = prof::trace!("Train", step_num = step);
    /// }
    /// let last = prof::stop()?; // the rings' last snapshot, written to logdir
    /// assert_eq!(last.steps().last(), Some(&9_999));
    /// assert!(last.files()[0].starts_with(&logdir));
    /// # std::fs::remove_dir_all(&logdir).ok();
    /// # Ok::<(), prof::Error>(())
    /// ```
    ///
    /// # Errors
    /// As [`start`], and as [`crate::start`] for the logdir.
    pub fn start_in(
        logdir: impl AsRef<std::path::Path>,
        options: crate::ProfileOptions,
        recorder: FlightRecorder,
    ) -> crate::Result<()> {
        let logdir = logdir.as_ref().to_path_buf();
        options.validate()?;
        recorder.validate()?;
        crate::register_tracers();
        crate::export::logdir::prepare(&logdir)?;
        let writer = crate::writer(logdir, &options);
        profiler_core::flight_recorder::start_writing(options, recorder, writer)
    }
}

/// The GPU timeline (feature `cuda`): CUPTI device tracing. [`start`] registers the
/// tracer; sessions with `device_tracer_level >= 1` then record kernels, copies and
/// their launches, or carry one warning when libcuda/libcupti are missing.
#[cfg(feature = "cuda")]
pub use profiler_cuda as cuda;

/// Sampled native call stacks (feature `sampling`, Linux): [`start`] registers the
/// sampler; sessions asking for `host_sampling_hz` then sample every thread. Call
/// [`sampling::register`] yourself before a scheduled profiler or a `ServerBuilder`.
#[cfg(feature = "sampling")]
pub use profiler_sampling as sampling;

/// candle integration (feature `candle`): [`candle::Traced`] puts a named annotation
/// around any candle `Module`'s forward (`linear.traced("q_proj")`).
#[cfg(feature = "candle")]
pub use profiler_cuda::candle;

/// The traits a program using prof needs in scope, in one import:
///
/// ```
/// use prof::prelude::*;
///
/// # fn main() -> Result<(), prof::Error> {
/// prof::start_in_memory(prof::ProfileOptions::default())?;
/// drop(prof::trace!("work"));
/// let profile = prof::stop()?;
/// // `summary` is a method of `ProfileAnalysis`; the `write_*` exporters are
/// // methods of `ProfileExport`.
/// let table = profile.summary(&prof::summary::SummaryOptions::default());
/// assert_eq!(table.rows()[0].name, "work");
/// # Ok(()) }
/// ```
///
/// A finished [`Profile`] is recorded by `profiler-core`, written by `profiler-export`
/// and summed up by `profiler-analysis`; its export methods live in the
/// [`ProfileExport`] trait and its analysis methods in [`ProfileAnalysis`], which the
/// prelude brings into scope (as `tracing_subscriber::prelude` does for its extension
/// traits). Under the `candle` feature it also brings `candle::ModuleExt`
/// (`layer.traced("attn")`).
pub mod prelude {
    pub use crate::ProfileAnalysis as _;
    pub use crate::ProfileExport as _;
    #[cfg(feature = "candle")]
    pub use profiler_cuda::candle::ModuleExt as _;
}

/// What `#[prof::instrument]` expands to; not a public API.
#[doc(hidden)]
pub mod __private {
    pub use profiler_core::future::{with_current_poll, Instrumented};
}

/// Compares two runs, as `prof-diff BASE NEW` does: what got slower, what got faster,
/// and whether each difference is significant or noise. Each side is a `.xplane.pb`
/// file, a run directory, a logdir (its newest run), or a [`Profile`]; see
/// [`diff::diff_with`] for the options and [`diff::Diff`] for what is compared.
///
/// ```
/// # fn main() -> Result<(), prof::Error> {
/// # let dir = std::env::temp_dir().join(format!("prof-doc-diff-{}", std::process::id()));
/// let run = |logdir: &std::path::Path, work_us: u64| -> prof::Result<prof::Profile> {
///     prof::start(logdir, prof::ProfileOptions::default())?;
///     for step in 0..8 {
///         let _step = prof::trace!("Train", step_num = step);
///         let _load = prof::trace!("load_batch");
///         std::thread::sleep(std::time::Duration::from_micros(work_us));
///     }
///     prof::stop()
/// };
/// run(&dir.join("base"), 300)?;
/// run(&dir.join("new"), 3000)?;
/// let diff = prof::diff(dir.join("base"), dir.join("new"))?;
/// assert_eq!(diff.ops[0].name, "load_batch");
/// assert_eq!(diff.ops[0].time.verdict, prof::diff::Verdict::Increase);
/// assert!(!diff.gate(10.0).passed, "{}", diff.gate(10.0));
/// println!("{diff}");
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(()) }
/// ```
///
/// # Errors
/// As [`diff::diff_with`]: a file that cannot be read or is not an XSpace (naming it),
/// sides with different hosts.
pub fn diff(base: impl Into<diff::Side>, new: impl Into<diff::Side>) -> Result<diff::Diff> {
    profiler_analysis::diff::diff(base, new)
}

/// Starts profiling into `logdir`, as `tf.profiler.experimental.start(logdir)` and
/// `jax.profiler.start_trace(log_dir)` do. The profile is written when [`stop`] is
/// called, or on its own after `options.duration_ms` if that is set: its `.xplane.pb`,
/// and beside it each of `options.export_formats` (Perfetto, Chrome JSON). A session
/// whose `.xplane.pb` would pass `options.max_xplane_bytes` (XProf opens no file over
/// 2 GiB) keeps its latest steps that fit there, and the whole session in a Perfetto
/// trace beside it ([`export::fit`]).
///
/// If the program ends without [`stop`], the profile is still written there: by a
/// panic that ends it (on the main thread, or under `panic = "abort"`), at its exit
/// (`main` returned, `std::process::exit`), and with
/// [`ProfileOptions::write_on_signals`] on SIGTERM and SIGINT, each time with a warning
/// in the profile and one line on stderr saying where it went (the sessions chapter
/// says what cannot be saved).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] for invalid options; [`ErrorKind::Io`] for a logdir
/// that cannot be created (naming it, with the cause as the error's source);
/// [`ErrorKind::AlreadyExists`] when a session is running.
pub fn start(logdir: impl AsRef<Path>, options: ProfileOptions) -> Result<()> {
    let logdir = logdir.as_ref().to_path_buf();
    // Checked here as well as in the core so that bad options fail before the logdir
    // is created on disk.
    options.validate()?;
    register_tracers();
    export::logdir::prepare(&logdir)?;
    let writer = writer(logdir, &options);
    profiler_core::session::start(options, Some(writer))
}

/// Starts a session that keeps its profile in memory, writing nothing: [`stop`]
/// returns it (as `torch.profiler.profile()` keeps its trace until exported). For
/// tests, for a summary printed at the end of a run, or to write the profile
/// elsewhere later ([`ProfileExport`]).
///
/// ```
/// use prof::prelude::*;
///
/// prof::start_in_memory(prof::ProfileOptions::default())?;
/// for step in 0..3 {
///     let _step = prof::trace!("Train", step_num = step);
/// }
/// let profile = prof::stop()?;
/// assert_eq!(profile.steps(), [0, 1, 2]);
/// assert!(profile.files().is_empty());
/// # Ok::<(), prof::Error>(())
/// ```
///
/// # Errors
/// [`ErrorKind::InvalidArgument`] for invalid options; [`ErrorKind::AlreadyExists`]
/// when a session is running.
pub fn start_in_memory(options: ProfileOptions) -> Result<()> {
    register_tracers();
    profiler_core::session::start(options, None)
}

/// Stops the session, writes its logdir run and returns the profile.
///
/// If the session already stopped after its `duration_ms`, this returns that profile.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no session was started; [`ErrorKind::Io`]
/// when the logdir cannot be written, with the recorded profile inside the error
/// ([`Error::into_profile`]).
pub fn stop() -> Result<Profile> {
    profiler_core::session::stop()
}

/// Pauses recording, as MXNet's `profiler.pause()`; see [`resume`]. Annotations open at
/// the pause still close; the timeline shows the pause as a `Paused` event on the
/// `Profiler` line.
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no session runs.
pub fn pause() -> Result<()> {
    profiler_core::session::pause()
}

/// Resumes recording after [`pause`].
///
/// # Errors
/// [`ErrorKind::FailedPrecondition`] when no session runs.
pub fn resume() -> Result<()> {
    profiler_core::session::resume()
}

/// Registers the device tracers this build has (features `cuda`, `sampling`) for every later
/// session, and what removes half-written files when a signal cuts a write short.
/// The core cannot know them, so every facade entry point that starts
/// sessions calls this: [`start`] (and so [`Session::start`] and [`profile`]),
/// [`start_in_memory`], [`flight_recorder::start`], [`schedule::Profiler::start`],
/// and, under `remote`, `server::start` and `server::ServerBuilder::start`.
fn register_tracers() {
    #[cfg(test)]
    tests::REGISTERED.with(|n| n.set(n.get() + 1));
    #[cfg(feature = "cuda")]
    profiler_cuda::register();
    profiler_core::exit::set_cleanup(remove_temporaries);
    #[cfg(feature = "sampling")]
    profiler_sampling::register();
}

/// Removes the temporary files of writes in progress (a signal's budget ran out).
fn remove_temporaries() {
    drop(export::atomic::remove_temporaries());
}

/// Writes a session's profile as a new run of `logdir`, as `options` ask: the
/// `.xplane.pb` first (cut to `max_xplane_bytes`), then the other formats. The exit
/// paths (a panic, a signal, the end of `main`) run it too.
fn writer(logdir: PathBuf, options: &ProfileOptions) -> profiler_core::session::Finisher {
    let formats = options.export_formats.clone();
    let max_xplane_bytes = options.max_xplane_bytes;
    Box::new(move |profile| {
        export::logdir::write_logdir_within(&logdir, profile, &formats, max_xplane_bytes)
    })
}

/// A session that stops and writes its logdir when dropped.
///
/// ```
/// # let logdir = std::env::temp_dir().join(format!("prof-doc-session-{}", std::process::id()));
/// {
///     let _session = prof::Session::start(&logdir, prof::ProfileOptions::default())?;
///     let _t = prof::trace!("work");
/// } // written here
/// # std::fs::remove_dir_all(&logdir).ok();
/// # Ok::<(), prof::Error>(())
/// ```
#[must_use = "the session stops when this guard drops"]
#[derive(Debug)]
pub struct Session {
    active: bool,
}

impl Session {
    /// Starts a session writing to `logdir`; see [`start`].
    ///
    /// # Errors
    /// As [`start`].
    pub fn start(logdir: impl AsRef<Path>, options: ProfileOptions) -> Result<Session> {
        start(logdir, options)?;
        Ok(Session { active: true })
    }

    /// Stops now and returns the profile (dropping the session would discard it after
    /// writing).
    ///
    /// # Errors
    /// As [`stop`].
    pub fn stop(mut self) -> Result<Profile> {
        self.active = false;
        stop()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.active {
            match stop() {
                Ok(_) => {}
                // Drop cannot return the error; losing it silently would lose the run.
                Err(e) => tracing::error!(
                    target: profiler_core::log::TARGET,
                    "the profiling session could not be saved: {}",
                    profiler_core::error::report(&e)
                ),
            }
        }
    }
}

/// Profiles `work`, as `with jax.profiler.trace(log_dir):` does, and returns its
/// result with the written profile.
///
/// # Errors
/// As [`start`] (then `work` does not run) and [`stop`].
pub fn profile<R>(
    logdir: impl AsRef<Path>,
    options: ProfileOptions,
    work: impl FnOnce() -> R,
) -> Result<(R, Profile)> {
    let session = Session::start(logdir, options)?;
    let result = work();
    Ok((result, session.stop()?))
}

/// The README and the guide's chapters, as doctests: every Rust snippet in them is
/// compiled (and run, unless marked `no_run`) by `cargo test --doc`. The GPU chapter's
/// snippets need the `cuda` and `candle` features, which CI's GPU step turns on.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../README.md")]
    struct Readme;
    #[doc = include_str!("../docs/annotating.md")]
    struct Annotating;
    #[doc = include_str!("../docs/tracing.md")]
    struct Tracing;
    #[doc = include_str!("../docs/sessions.md")]
    struct Sessions;
    #[doc = include_str!("../docs/remote.md")]
    struct Remote;
    #[doc = include_str!("../docs/live.md")]
    struct Live;
    #[doc = include_str!("../docs/storage.md")]
    struct Storage;
    #[cfg(all(feature = "cuda", feature = "candle"))]
    #[doc = include_str!("../docs/gpu.md")]
    struct Gpu;
    #[doc = include_str!("../docs/memory.md")]
    struct Memory;
    #[doc = include_str!("../docs/sampling.md")]
    struct Sampling;
    #[doc = include_str!("../docs/formats.md")]
    struct Formats;
    #[doc = include_str!("../docs/comparing.md")]
    struct Comparing;
    #[doc = include_str!("../docs/cost.md")]
    struct Cost;
    #[doc = include_str!("../docs/checking.md")]
    struct Checking;
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::sync::Mutex;

    thread_local! {
        /// Calls of `register_tracers` on this thread: each path is started on the
        /// test's own thread, so tests running beside it do not count here.
        pub(super) static REGISTERED: Cell<u32> = const { Cell::new(0) };
    }

    /// One session at a time in the process.
    static SESSIONS: Mutex<()> = Mutex::new(());

    /// Whether `start` registered this build's tracers on this thread.
    fn registers(what: &str, start: impl FnOnce()) {
        let before = REGISTERED.with(Cell::get);
        start();
        assert_eq!(
            REGISTERED.with(Cell::get),
            before + 1,
            "{what} did not register this build's device tracers"
        );
    }

    #[test]
    fn every_path_that_starts_sessions_registers_the_tracers() {
        let _one = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        let dir = tempfile::tempdir().expect("tempdir");
        let options = crate::ProfileOptions::default;
        registers("prof::start", || {
            crate::start(dir.path().join("start"), options()).expect("start");
            crate::stop().expect("stop");
        });
        registers("prof::Session::start", || {
            drop(crate::Session::start(dir.path().join("session"), options()).expect("start"));
        });
        registers("prof::profile", || {
            crate::profile(dir.path().join("profile"), options(), || ()).expect("profile");
        });
        registers("prof::start_in_memory", || {
            crate::start_in_memory(options()).expect("start");
            crate::stop().expect("stop");
        });
        registers("prof::flight_recorder::start", || {
            let recorder = crate::flight_recorder::FlightRecorder::new(1024);
            crate::flight_recorder::start(options(), recorder).expect("start");
            crate::stop().expect("stop");
        });
        registers("prof::schedule::Profiler::start", || {
            let schedule = crate::schedule::Schedule::new(1, 1, 1);
            let mut profiler = crate::schedule::Profiler::new(options(), schedule).expect("new");
            profiler.start().expect("start"); // step 0 waits: no session yet
            profiler.stop().expect("stop");
        });
        #[cfg(feature = "remote")]
        {
            registers("prof::server::start", || {
                crate::server::start(0).expect("bind loopback").stop();
            });
            registers("prof::server::ServerBuilder::start", || {
                let builder = crate::server::ServerBuilder::new(0);
                builder.start().expect("bind loopback").stop();
            });
        }
    }

    /// Without CUDA the device tracer, once registered, says so in the profile: the
    /// warning shows that an entry point registered it.
    #[cfg(feature = "cuda")]
    #[test]
    fn the_flight_recorder_registers_the_device_tracer() {
        let _one = SESSIONS.lock().unwrap_or_else(|e| e.into_inner());
        crate::flight_recorder::start(
            crate::ProfileOptions::default(),
            crate::flight_recorder::FlightRecorder::new(1024),
        )
        .expect("start");
        let profile = crate::stop().expect("stop");
        if profiler_cuda::missing_libraries().is_some() {
            assert!(
                profile
                    .warnings()
                    .iter()
                    .any(|w| w.contains("no GPU trace")),
                "{:?}",
                profile.warnings()
            );
        }
    }
}
