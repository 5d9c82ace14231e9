//! prof's writers: everything that turns a recorded [`Profile`] into files other tools read.
//!
//! - [`logdir`]: a TensorBoard/XProf logdir, `<logdir>/plugins/profile/<run>/<host>.xplane.pb`,
//!   laid out exactly as TensorFlow and JAX lay theirs out;
//! - [`xplane`]: encoding and decoding a single `.xplane.pb`;
//! - [`atomic`]: every file is written to a temporary name and renamed into place, so a
//!   reader never sees half a profile.
//!
//! The crate reads only the XSpace model of `profiler-core`; it knows nothing of how
//! events were recorded.
//!
//! [`Profile`]: profiler_core::Profile

pub mod atomic;
pub mod chrome;
pub mod logdir;
pub mod perfetto;
pub mod timeline;
pub mod xplane;

pub use logdir::{write_logdir, RunDir};
