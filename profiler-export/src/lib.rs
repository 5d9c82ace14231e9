#![doc = include_str!("../README.md")]
//!
//! What is here:
//!
//! - [`logdir`]: a TensorBoard/XProf logdir, `<logdir>/plugins/profile/<run>/<host>.xplane.pb`,
//!   laid out exactly as TensorFlow and JAX lay theirs out; [`xplane`] encodes one file;
//! - [`store`]: a logdir is a local path or, with the feature `object-store`, an
//!   `s3://`, `gs://` or `az://` URL: runs written locally, then published whole;
//! - [`perfetto`]: Perfetto's native protobuf trace (`.pftrace`), and [`link`] to open it
//!   in ui.perfetto.dev as `jax.profiler`'s Perfetto link does;
//! - [`chrome`]: Chrome's JSON trace event format (`.trace.json[.gz]`);
//! - [`pprof`]: sampled native call stacks as pprof's `profile.proto`
//!   (`<host>.pprof.pb.gz`), written beside the `.xplane.pb` of a session that sampled;
//! - `otlp` (feature `otlp`): spans to any OpenTelemetry collector;
//! - [`convert`]: existing `.xplane.pb` files (prof's, JAX's, TensorFlow's) into the
//!   other formats;
//! - [`fit`]: every `.xplane.pb` written opens in XProf: a profile past XProf's 2 GiB
//!   keeps its latest steps that fit, the whole session beside it as Perfetto;
//! - [`sink`]: every writer behind one trait, [`Sink`](sink::Sink), and
//!   [`formats`] to pick a file format's at run time;
//! - [`ProfileExport`]: the writers as methods of a [`Profile`].
//!
//! The timeline formats share one walk over the space ([`timeline`]), so they agree on
//! what they hold: the same events, durations, threads, counters and flows. Exporters
//! stream: memory does not grow with the number of events. Every file is written to a
//! temporary name and renamed into place ([`atomic`]), so a reader never sees half a
//! file.
//!
//! The crate reads only the XSpace model of `profiler-core`; it knows nothing of how
//! events were recorded. What is computed *from* a profile (summary tables, comparing
//! runs) is `profiler-analysis`, which reads profiles through this crate's reader.
//!
//! [`Profile`]: profiler_core::Profile

pub mod atomic;
mod block;
pub mod chrome;
pub mod convert;
pub mod fit;
pub mod formats;
mod gzip;
pub mod link;
pub mod logdir;
#[cfg(feature = "otlp")]
pub mod otlp;
pub mod perfetto;
pub mod pprof;
mod profile;
pub mod sink;
pub mod store;
pub mod timeline;
pub mod xplane;

pub use formats::ExportFormat;
pub use logdir::{write_logdir, RunDir};
pub use profile::ProfileExport;
