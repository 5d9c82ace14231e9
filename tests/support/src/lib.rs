//! What prof's own tests share, so that each helper is written once: the lock that
//! keeps process-wide state to one test at a time ([`serial`]), hand-built spaces whose
//! contents are known ([`spaces`]), readers of a recorded profile ([`read`]), the
//! indented tree of a recorded line that snapshot tests compare ([`tree`]), a scope
//! hook that remembers what it was told ([`scope_hook`]), and a stand-in training job
//! for capture tests ([`workload`]), CPU time burnt by the thread's clock for
//! sampling tests ([`cpu`]), and servers in child processes that say where they
//! listen ([`child`]).
//!
//! A dev-dependency of the workspace's crates and of the fuzz targets' seed writer;
//! never published (`publish = false`).
#![allow(clippy::unwrap_used)]

pub mod child;
pub mod cpu;
pub mod read;
pub mod scope_hook;
pub mod spaces;
pub mod tree;
pub mod workload;

mod serial;
pub use serial::serial;
