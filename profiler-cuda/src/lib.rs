//! prof's GPU tracer: CUPTI activity records, read through cudarc, as the
//! `/device:GPU:<n>` planes XProf shows for TensorFlow and JAX.
//!
//! [`register`] adds the tracer to every later prof session (the `prof` facade does it
//! under its `cuda` feature). While a session runs with `device_tracer_level >= 1` the
//! tracer records kernels, copies, memsets and the CUDA API calls that launched them;
//! at collection, [`convert::add_to_space`] puts them on the profile.
//!
//! The crate is split in two: [`activity`], [`layout`] and [`convert`] are pure (no
//! CUDA library is touched, everything is tested on synthetic records), and `cupti`
//! holds the live plumbing, which checks for libcuda and libcupti before using any of
//! their symbols and turns their absence into one profile warning.

pub mod activity;
pub mod convert;
pub mod layout;
pub mod synthetic;
