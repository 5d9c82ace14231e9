#![doc = include_str!("../README.md")]
//!
//! [`register`] adds the tracer to every later prof session (the `prof` facade does it
//! under its `cuda` feature). While a session runs with `device_tracer_level >= 1` the
//! tracer records kernels, copies, memsets, device memory allocations and releases,
//! the CUDA API calls that launched them, and, with `gpu_enable_nvtx_tracking`, NVTX
//! ranges;
//! at collection, [`convert::add_to_space`] puts them on the profile.
//!
//! The crate is split in two: [`activity`], [`layout`] and [`convert`] are pure (no
//! CUDA library is touched, everything is tested on synthetic records), and `cupti`
//! holds the live plumbing, which checks for libcuda and libcupti before using any of
//! their symbols and turns their absence into one profile warning.
//!
//! [`driver::memory_info`] asks the driver how much device memory is in use, to set
//! beside what the tracer saw allocated (`profiler_core::memory::gpu`).
//!
//! Under the `candle` feature, `candle::Traced` names the layers of candle models
//! (which emit no spans of their own), on the host and on the kernels they launch.
//!
//! The `synthetic` feature adds `synthetic`: CUPTI's records and callback data made
//! byte for byte without a GPU, and the tracer's CUPTI callback to feed them to. It is
//! test scaffolding (this crate's tests and benches, prof's GPU examples), kept out of
//! the API programs see.

pub mod activity;
pub mod api;
pub mod calls;
#[cfg(feature = "candle")]
pub mod candle;
pub mod convert;
mod cupti;
pub mod driver;
pub mod graphs;
pub mod kernel;
pub mod layout;
pub mod occupancy;
pub mod stats;
// Test scaffolding (feature `synthetic`): records as CUPTI writes them, and the
// tracer's CUPTI callback to feed them to, where there is no GPU.
#[cfg(any(test, feature = "synthetic"))]
pub mod synthetic;

pub use cupti::{factory, missing_libraries, CuptiTracer};

/// Adds the CUPTI tracer to every later prof session in this process (those with
/// `device_tracer_level >= 1`). Calling it again has no further effect.
///
/// Where libcuda or libcupti cannot be loaded, sessions still record the host and
/// their profile carries one warning naming what was missing and where it was looked
/// for; nothing panics.
///
/// ```
/// profiler_cuda::register();
/// profiler_core::session::start(profiler_core::ProfileOptions::default(), None)?;
/// let _t = profiler_core::trace!("step");
/// # drop(_t);
/// let profile = profiler_core::session::stop()?;
/// // On a machine without CUDA: a host-only profile and one warning.
/// if profiler_cuda::missing_libraries().is_some() {
///     assert!(profile.warnings().iter().any(|w| w.contains("no GPU trace")));
/// }
/// # Ok::<(), profiler_core::Error>(())
/// ```
pub fn register() {
    profiler_core::tracer::register(cupti::factory);
}
