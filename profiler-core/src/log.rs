//! prof's own diagnostics: what a library must not print.
//!
//! Warnings that have no caller to return to (a device tracer that could not start, a
//! scheduled window that could not be saved from a destructor, a server that failed on
//! its own thread) are `tracing` events with target [`TARGET`], so an application
//! routes, filters or silences them like any library's
//! (`RUST_LOG=prof=off` with an `EnvFilter`). `ProfilerLayer` never records them back
//! into the profile it is warning about. Warnings that concern a profile are also in
//! the profile itself (`Profile::warnings`), where no subscriber is needed to see them.

/// The `tracing` target of prof's diagnostics.
pub const TARGET: &str = "prof";
