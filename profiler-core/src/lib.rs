#![doc = include_str!("../README.md")]
//!
//! What every part of prof shares:
//!
//! - **annotations** ([`trace!`], [`Trace`], [`set_metadata!`]): events on the current
//!   thread's timeline, with fields; the ones carrying `step_num` are training steps;
//! - **counters** ([`Counter`]): named values over time, as counter tracks;
//! - **memory** ([`TrackingAllocator`], [`memory`]): host heap bytes in use and their
//!   peaks, in code and as XProf's Memory Profile; device tracers add their GPUs';
//! - **the `tracing` layer** ([`ProfilerLayer`], feature `tracing`, on by default): every
//!   `tracing` span the subscriber passes, on the same timeline;
//! - **sessions** ([`session::start`], [`session::stop`], [`ProfileOptions`]): one at a
//!   time per process, as in `tf.profiler.experimental` and `jax.profiler`;
//! - **the program's end** ([`exit`]): while a session records, a panic, the exit
//!   without `stop` and (opt-in) SIGTERM/SIGINT write it where `stop` would have;
//! - **tracers** ([`tracer`]): the plug-in interface device tracers (CUPTI, in
//!   `profiler-cuda`) join sessions through;
//! - **the XSpace model** ([`xspace`]): TSL's `xplane.proto`, the single representation
//!   between recording and every output (TensorBoard/XProf, Perfetto, Chrome, OTLP).
//!
//! # Cost
//!
//! While no session records, an annotation is one relaxed atomic load (the [`gate`])
//! and a branch: its field expressions are not evaluated. While recording, an annotation
//! writes one 32-byte record into a buffer owned by its thread (plus one per field), takes
//! no lock and allocates nothing once the thread's buffer is warm. Timestamps are raw CPU
//! ticks, converted to nanoseconds once per session. `cargo bench -p profiler-core`
//! measures this side by side with fastrace and puffin.
//!
//! Without the `enable` feature (on by default here and in `prof-ml`; the other crates
//! of prof leave it to the application) annotations compile to nothing: see [`gate`].
//!
//! # What would break the hot path
//!
//! Anything that makes an annotation touch memory shared between threads: a global
//! counter per event, a `Mutex` around the buffer, or storing names as `String`. The
//! buffer module's documentation says how records stay thread-local.

// Modules in reading order, bottom up; each imports only from those before it (the
// test in tests/layers.rs holds the crate to that).
//
// 1. ground: what the hot path reads and every consumer shares.
pub mod clock;
pub mod error;
pub mod field;
pub mod gate;
pub mod log;
pub mod options;
mod peaks;
pub mod profile;
mod reentry;
pub mod schema;
mod tags;
pub mod xspace;
// 2. the per-thread record buffers.
mod buffer;
// 3. the scope hook device tracers use, called from every recorded annotation, and
// the hand-off of a thread's innermost scope to the thread that launches its work.
mod handoff;
mod scope;
// 4. front ends: what applications call to record.
pub mod alloc;
pub mod annotation;
pub mod counter;
pub mod domain;
pub mod future;
#[cfg(feature = "tracing")]
pub mod layer;
pub mod memory;
// 5. collection: buffers to an XSpace.
mod collect;
// 6. the process's end: the panic hook, signals and exit, armed by session control.
pub mod exit;
// 7. session control, and the tracers it starts and stops.
pub mod session;
pub mod tracer;
// 8. sessions of particular shapes.
pub mod flight_recorder;
pub mod schedule;

pub use alloc::TrackingAllocator;
pub use annotation::Trace;
pub use collect::host_name;
pub use counter::Counter;
pub use error::{Error, ErrorKind, Result};
pub use field::{AsValue, Value};
#[cfg(feature = "tracing")]
pub use layer::ProfilerLayer;
pub use options::{ConfigValue, ExportFormat, ProfileOptions};
pub use profile::Profile;
