//! `diff`: two profiles compared, in one test binary. Synthetic training loops with
//! seeded per-step jitter ([`workloads`]) make the cases whose answers are known:
//! what is significant and what the gate does ([`significance`]), device work grouped
//! into steps and real GPU profiles against themselves ([`device`]), memory
//! ([`memory`]), the inputs a diff reads and every bad one ([`inputs`]), and the
//! renderings ([`render`]).

mod device;
mod inputs;
mod memory;
mod render;
mod significance;
mod workloads;
