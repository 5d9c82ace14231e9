//! The recording engine of [prof](https://github.com/prof-rs/prof), a profiler for Rust
//! machine-learning stacks.
//!
//! Most users depend on the `prof` facade crate, which re-exports what is here and adds
//! the exporters. This crate holds what every part of prof shares:
//!
//! - **annotations** ([`trace!`], [`Trace`], [`set_metadata!`]): events on the current
//!   thread's timeline, with fields; the ones carrying `step_num` are training steps;
//! - **counters** ([`Counter`]): named values over time, as counter tracks;
//! - **the `tracing` layer** ([`ProfilerLayer`], feature `tracing`, on by default): every
//!   `tracing` span the subscriber passes, on the same timeline;
//! - **sessions** ([`session::start`], [`session::stop`], [`ProfileOptions`]): one at a
//!   time per process, as in `tf.profiler.experimental` and `jax.profiler`;
//! - **tracers** ([`tracer`]): the plug-in interface device tracers (CUPTI, in
//!   `profiler-cuda`) join sessions through;
//! - **the XSpace model** ([`xspace`]): TSL's `xplane.proto`, the single representation
//!   between recording and every output (TensorBoard/XProf, Perfetto, Chrome, OTLP).
//!
//! # Cost
//!
//! While no session records, an annotation is one relaxed atomic load ([`session::HOST_LEVEL`])
//! and a branch: its field expressions are not evaluated. While recording, an annotation
//! writes one 32-byte record into a buffer owned by its thread (plus one per field), takes
//! no lock and allocates nothing once the thread's buffer is warm. Timestamps are raw CPU
//! ticks, converted to nanoseconds once per session. `cargo bench -p profiler-core`
//! measures this side by side with fastrace and puffin.
//!
//! # What would break the hot path
//!
//! Anything that makes an annotation touch memory shared between threads: a global
//! counter per event, a `Mutex` around the buffer, or storing names as `String`. The
//! buffer module's documentation says how records stay thread-local.
//!
//! ```
//! use profiler_core::{session, trace, ProfileOptions};
//!
//! session::start(ProfileOptions::default(), None)?;
//! for step in 0..2 {
//!     let _t = trace!("Train", step_num = step);
//!     let _f = trace!("forward");
//! }
//! let profile = session::stop()?;
//! assert_eq!(profile.steps(), [0, 1]);
//! assert_eq!(profile.event_count(), 4);
//! # Ok::<(), profiler_core::Error>(())
//! ```

pub mod alloc;
pub mod annotation;
mod buffer;
pub mod clock;
mod collect;
pub mod counter;
pub mod domain;
pub mod error;
pub mod field;
pub mod flight_recorder;
pub mod future;
#[cfg(feature = "tracing")]
pub mod layer;
pub mod options;
pub mod profile;
pub mod schedule;
pub mod schema;
pub mod session;
pub mod summary;
pub mod tracer;
pub mod xspace;

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
