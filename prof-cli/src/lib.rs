//! prof's command-line tools, installed with `cargo install --path prof-cli` from a
//! checkout (not on crates.io yet):
//!
//! - `capture-profile HOST:PORT[,HOST:PORT...]`: captures a profile from running
//!   programs that serve `tensorflow.ProfilerService` (a Rust program with
//!   `prof::server::start`, `jax.profiler.start_server`,
//!   `tf.profiler.experimental.server.start`) into a TensorBoard/XProf logdir, as
//!   TensorBoard's Capture button and `python -m jax.collect_profile` do;
//! - `prof-top HOST:PORT[,HOST:PORT...]`: a live view of running programs that serve
//!   prof's profiler port (step times, input share, top ops, memory, GPUs), a row per
//!   host with the slowest marked; `--once`/`--json` print one snapshot;
//! - `prof-convert PATH...`: turns `.xplane.pb` files (prof's, JAX's, TensorFlow's)
//!   into Perfetto and Chrome JSON traces;
//! - `prof-diff BASE NEW`: compares two runs (step time, ops, kernels, memory), marks
//!   what is significant and what is noise, and with `--fail-if-slower PCT` gates CI.
//!
//! ```text
//! $ capture-profile localhost:6009 --duration-ms 2000 --logdir logs
//! $ xprof --logdir logs
//! $ prof-convert logs --format perfetto,chrome.gz
//! $ prof-diff logs/base logs/new --fail-if-slower 10
//! ```
//!
//! All four follow the usual conventions: `--help` and `--version`, errors that suggest
//! the flag that was meant, exit status 2 for bad usage, 1 when some work failed.
//! The library half of this crate is what the binaries run, public so its
//! parsing can be tested; it is not meant as an API.
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod capture;
pub mod connection;
pub mod convert;
pub mod diff;
mod fetched;
pub mod formats;
pub mod interrupt;
pub mod top;
