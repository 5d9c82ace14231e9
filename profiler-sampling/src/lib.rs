#![doc = include_str!("../README.md")]
//!
//! # What it records
//!
//! While a session with `host_sampling_hz` > 0 records, every thread of the process
//! (threads started later, and threads that never annotate, included) is sampled that
//! many times per second of its own CPU time: the native call stack it was running.
//! After the session the stacks are symbolised (inlined frames included) and each
//! sample is labelled with its thread, the `step_num` of the step it fell in and the
//! annotations open on its thread as a `tf_op` (see `profiler_export::pprof`). The
//! samples travel in the session's XSpace on a plane XProf ignores, and are written as
//! `<host>.pprof.pb.gz` beside the `.xplane.pb` and as `PerfSample`s in Perfetto.
//!
//! ```
//! # fn main() -> Result<(), profiler_core::Error> {
//! profiler_sampling::register(); // the `prof` facade does this
//! let options = profiler_core::ProfileOptions::default().host_sampling_hz(99);
//! profiler_core::session::start(options, None)?;
//! let burn: u64 = (0..2_000_000u64).map(|i| i.wrapping_mul(i)).sum();
//! let profile = profiler_core::session::stop()?;
//! # std::hint::black_box(burn);
//! if let Some(samples) = profiler_export::pprof::StackSamples::from_space(profile.xspace()) {
//!     let samples = samples?;
//!     println!("{} samples by {}", samples.times.len(), samples.backend);
//! }
//! # Ok(()) }
//! ```
//!
//! # How
//!
//! - **Triggers** (`perf`, `timer`): `perf_event_open` per thread
//!   (`PERF_COUNT_SW_TASK_CLOCK`, user space only, `CLOCK_MONOTONIC`), the kernel
//!   walking each stack by frame pointers; where perf is refused
//!   (`kernel.perf_event_paranoid` ≥ 3, as Debian and Ubuntu set it; a container's
//!   seccomp filter), a CPU-time timer per thread whose signal handler walks the frame
//!   pointers itself, allocating nothing and taking no lock. The profile says which ran
//!   and why the better one did not. `host_sampling_backend` forces either.
//! - **Threads** (`threads`): the collector thread lists `/proc/self/task` about
//!   every ten samples (10 to 100 ms) and starts a trigger on each new thread (neither trigger follows the
//!   threads its thread creates).
//! - **Mappings** (`maps`): `/proc/self/maps` with each file's build id, at the start
//!   and whenever a sample falls outside every known mapping, so libraries loaded late
//!   and unloaded early resolve.
//! - **Symbols** (`symbolize`): after the stop, with blazesym.
//! - **The join** (`profile`): from timestamps, against the host plane, after the
//!   stop: no thread's annotation stack is read while it runs.
//!
//! Off (the default), nothing of this exists: no thread, no handler, no timer; the
//! tracer's factory returns nothing. (After a session that sampled with timers, their
//! SIGPROF handler stays installed, doing nothing: a signal queued before the timers
//! were deleted must not end the process. The guide's chapter says why, under
//! Limits.)
//!
//! # Frame pointers
//!
//! Both triggers unwind by frame pointers. Rust's standard library has them; a
//! program's own crates need `-C force-frame-pointers=yes`
//! (`[build] rustflags = ["-C", "force-frame-pointers=yes"]` in `.cargo/config.toml`).
//! A program built without them gets one warning with that fix, and samples whose
//! stacks stop after a frame or two (each still names the function it was in).
//!
//! # Elsewhere than Linux
//!
//! The session goes on without stack samples, with one warning saying so.

#[cfg(target_os = "linux")]
mod collector;
#[cfg(target_os = "linux")]
mod cost;
#[cfg(target_os = "linux")]
mod frame_pointers;
#[cfg(target_os = "linux")]
mod maps;
#[cfg(target_os = "linux")]
mod perf;
#[cfg(target_os = "linux")]
mod profile;
#[cfg(target_os = "linux")]
mod recorded;
mod settings;
#[cfg(target_os = "linux")]
mod symbolize;
#[cfg(target_os = "linux")]
mod threads;
#[cfg(target_os = "linux")]
mod timer;
mod tracer;
#[cfg(target_os = "linux")]
mod wake;

use profiler_core::tracer::Tracer;
use profiler_core::ProfileOptions;

/// Registers the sampler for every later session of this process: sessions whose
/// options ask for `host_sampling_hz` > 0 then sample. The `prof` facade calls this.
pub fn register() {
    profiler_core::tracer::register(factory);
}

/// Whether the timer backend's signal handler is running on thread `tid` (an OS
/// thread id) now: what a test's counting allocator asks, to prove the handler
/// allocates nothing. Not an API.
#[doc(hidden)]
#[cfg(target_os = "linux")]
pub fn handler_running_on(tid: i32) -> bool {
    timer::handler::running_on(tid)
}

/// What the last session's stop cost the sampler in this process (its collector's
/// stop, the symbolisation, the rest of the samples' plane), if a session sampled:
/// what the cost benchmark reports per 100k samples. Not an API.
#[doc(hidden)]
#[cfg(target_os = "linux")]
pub fn last_stop_cost() -> Option<cost::StopCost> {
    cost::last()
}

#[doc(hidden)]
#[cfg(target_os = "linux")]
pub use cost::StopCost;

fn factory(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    let settings = settings::Settings::of(options)?;
    Some(Box::new(tracer::SamplingTracer::new(settings)))
}
