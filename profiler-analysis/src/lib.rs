#![doc = include_str!("../README.md")]
//!
//! What is here:
//!
//! - [`summary`]: per-name aggregate tables of one profile (count, total, self, min,
//!   max, mean and share of the step; memory peaks per allocator, step and op), as MXNet's
//!   `dumps()` and torch's `key_averages().table()` print them; as text, JSON or CSV;
//! - [`diff`]: two runs compared, each step a sample: step time, ops, kernels and
//!   memory, what is significant and what is noise, and a gate for CI (`prof-diff`);
//!   and the share of the stack samples each function took, compared;
//! - [`functions`]: the hot functions of sampled native stacks, by self and by total
//!   samples, overall and within the annotations with the most samples;
//! - [`live`]: a running job's last seconds from its flight recorder's snapshots
//!   (step times, input share, top ops by self time), in fixed-size tables, for
//!   `prof-top`, the live stream and TensorFlow's `Monitor`;
//! - [`ProfileAnalysis`]: the analyses as methods of a [`Profile`].
//!
//! The analyses of a finished profile live here, apart from the writers: what prof
//! computes *from* a profile is not how it is put on the wire. The live view's
//! aggregation ([`live`]) reads events as the summary does.
//!
//! Layers: the crate reads the XSpace model of `profiler-core` and the reading side of
//! `profiler-export` (`.xplane.pb` files, logdirs and their runs, the note of a
//! profile cut to fit XProf); it writes nothing but tables. The command-line tools
//! (`prof-cli`) and the `prof` facade sit above it.
//!
//! [`Profile`]: profiler_core::Profile

pub mod diff;
mod flat;
pub mod functions;
pub mod live;
mod ops;
mod profile;
pub mod summary;
mod units;

pub use profile::ProfileAnalysis;
