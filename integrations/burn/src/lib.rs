#![doc = include_str!("../README.md")]
//!
//! # What it records
//!
//! [`install`] (or [`register`]) adds a tracer to every later prof session with
//! `device_tracer_level >= 1`. While the session records, it watches every kernel
//! burn's cubecl runtimes (wgpu, CUDA, ROCm, Metal, the CPU runtime) launch, through
//! cubecl's process-wide launch observer, called on the thread that issues each
//! launch:
//!
//! - each kernel is an event on that thread's host line, named by its type
//!   (`KernelBinop`, `MatmulEntry`, ...), inside the annotations and `tracing` spans
//!   open there;
//! - with the `advanced_configuration` key `cubecl_kernel_timing` (default false), each
//!   kernel is also timed on the device (wgpu's timestamp queries, CUDA's and HIP's
//!   events) and becomes an event of the device's plane, `/device:GPU:<n>` (its
//!   `device_vendor` the runtime, its `device_name` the device's), with the stats XProf
//!   reads of GPU work as the CUPTI tracer writes them: `correlation_id` (the flow from
//!   its launch), `tf_op` (the annotations it was issued under, inside the step, for
//!   Kernel Stats and Framework Op Stats), `annotation` and `host_step_num`. Timing
//!   costs each launch a round trip to cubecl's device thread; `docs/cost.md` measures
//!   it;
//! - on CUDA, where CUPTI's tracer (prof's `cuda` feature) records the kernels, each
//!   launch hands the annotation it was issued under to CUPTI's launch callback on
//!   cubecl's device thread ([`profiler_core::tracer::hand_off`]), so the CUPTI kernels
//!   carry it too.
//!
//! Steps are marked by [`step`]. burn-train's learner, which installs the process's
//! `tracing` subscriber itself, takes [`train::ProfiledLogger`] (feature `train`) to
//! install prof's layer beside its experiment log.
//!
//! # What it cannot see
//!
//! - **Fusion.** burn's fusion (burn-wgpu's and burn-cuda's default feature `fusion`)
//!   queues operations to a server thread of its own, which launches the fused kernels
//!   later: they are issued where no annotation of yours is open. They are recorded,
//!   and timed, on a `cubecl launches (<thread>)` line, attributed to nothing (the
//!   profile says how many). Build burn without `fusion` (`default-features = false`)
//!   to attribute every kernel to the layer that issued it.
//! - **Several devices.** cubecl's observer does not say which device a launch went
//!   to: every kernel goes on the plane of the device given to [`install`].
//!
//! # Isolation
//!
//! This crate is a workspace of its own, not a member of prof's: burn 0.22 needs Rust
//! 1.95 (prof's MSRV is 1.88) and builds 150 to 250 crates. prof's own crates know
//! nothing of burn; the tracer plugs in through `profiler_core::tracer`, as CUPTI's does.

mod convert;
mod device;
mod log;
mod observer;
mod step;
mod timing;
mod tracer;
#[cfg(feature = "train")]
pub mod train;

pub use convert::{kernel_name, CUBECL_LAUNCH_SPAN, LAUNCH_LINES_ID};
pub use device::DeviceName;
pub use step::{set_next_step, step};
pub use tracer::{factory, BurnTracer, KERNEL_TIMING};

/// Adds burn's kernels to every later prof session, put on `device`'s plane
/// (`/device:GPU:0`, named by its runtime and its name: opening the device to ask).
/// Calling it again names another device for later sessions.
///
/// ```no_run
/// let device = burn::tensor::Device::default();
/// profiler_burn::install(&device);
/// ```
pub fn install(device: &burn::tensor::Device) {
    device::set(DeviceName::of(device));
    register();
}

/// Adds burn's kernels to every later prof session, on `/device:GPU:0` named `cubecl`
/// unless [`install`] named a device. Calling it again has no further effect.
pub fn register() {
    profiler_core::tracer::register(tracer::factory);
}

/// Names the device later sessions put their kernels on, without a burn device at
/// hand (tests, or a runtime that is not burn's).
pub fn name_device(name: DeviceName) {
    device::set(name);
}

#[doc(hidden)]
pub mod testing {
    //! The launch observer of the session recording now, for tests that drive it as
    //! cubecl would (`launched`, then with timing `profiled`, on the issuing thread)
    //! where no GPU runtime can run.
    pub use crate::tracer::observer;
}

/// The guide's chapter, as doctests: its Rust snippets compile against this crate.
#[cfg(all(doctest, feature = "wgpu", feature = "train"))]
#[doc = include_str!("../../../docs/burn.md")]
mod guide {}
