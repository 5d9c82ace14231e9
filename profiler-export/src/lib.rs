#![doc = include_str!("../README.md")]
//!
//! What is here:
//!
//! - [`logdir`]: a TensorBoard/XProf logdir, `<logdir>/plugins/profile/<run>/<host>.xplane.pb`,
//!   laid out exactly as TensorFlow and JAX lay theirs out; [`xplane`] encodes one file;
//! - [`perfetto`]: Perfetto's native protobuf trace (`.pftrace`), and [`link`] to open it
//!   in ui.perfetto.dev as `jax.profiler`'s Perfetto link does;
//! - [`chrome`]: Chrome's JSON trace event format (`.trace.json[.gz]`);
//! - `otlp` (feature `otlp`): spans to any OpenTelemetry collector;
//! - [`summary`]: per-name aggregate tables (count, total, self time, share of the
//!   step), as text, JSON or CSV;
//! - [`diff`]: two runs compared: step time, ops, kernels and memory, what is
//!   significant and what is noise, and a gate for CI;
//! - [`convert`]: existing `.xplane.pb` files (prof's, JAX's, TensorFlow's) into the
//!   other formats;
//! - [`fit`]: every `.xplane.pb` written opens in XProf: a profile past XProf's 2 GiB
//!   keeps its latest steps that fit, the whole session beside it as Perfetto;
//! - [`ProfileExport`]: all of it as methods of a [`Profile`].
//!
//! The timeline formats share one walk over the space ([`timeline`]), so they agree on
//! what they hold: the same events, durations, threads, counters and flows. Exporters
//! stream: memory does not grow with the number of events. Every file is written to a
//! temporary name and renamed into place ([`atomic`]), so a reader never sees half a
//! file.
//!
//! The crate reads only the XSpace model of `profiler-core`; it knows nothing of how
//! events were recorded.
//!
//! [`Profile`]: profiler_core::Profile

pub mod atomic;
mod block;
pub mod chrome;
pub mod convert;
pub mod diff;
pub mod fit;
mod flat;
pub mod formats;
mod gzip;
pub mod link;
pub mod logdir;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod perfetto;
mod profile;
pub mod summary;
pub mod timeline;
mod units;
pub mod xplane;

pub use formats::ExportFormat;
pub use logdir::{write_logdir, RunDir};
pub use profile::ProfileExport;
