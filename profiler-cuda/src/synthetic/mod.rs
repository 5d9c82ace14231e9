//! Synthetic CUPTI records, laid out byte for byte as CUPTI writes them, for testing
//! the conversion (and XProf's reading of it) where there is no GPU.
//!
//! `records` encodes single records, `scenarios` whole traces of them, `cbid` the API
//! functions they name; [`callback`] is the tracer's CUPTI callback, to feed synthetic
//! `CUpti_CallbackData` to as CUPTI would ([`DriverLaunch`] does, for a
//! `cuLaunchKernel`), and [`set_function_name`] tells it what the live tracer learns from
//! CUPTI's names (which callback id is a kernel launch).

pub mod cbid;
mod launch;
mod records;
mod scenarios;

pub use crate::cupti::callbacks::{callback, set_function_name};
pub use launch::DriverLaunch;
pub use records::*;
pub use scenarios::*;
