//! Synthetic CUPTI records, laid out byte for byte as CUPTI writes them, for testing
//! the conversion (and XProf's reading of it) where there is no GPU.
//!
//! `records` encodes single records, `scenarios` whole traces of them, `cbid` the API
//! functions they name; [`callback`] is the tracer's CUPTI callback, to feed synthetic
//! `CUpti_CallbackData` to as CUPTI would.

pub mod cbid;
mod records;
mod scenarios;

pub use crate::cupti::callbacks::callback;
pub use records::*;
pub use scenarios::*;
