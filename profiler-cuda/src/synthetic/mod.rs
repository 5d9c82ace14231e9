//! Synthetic CUPTI records, laid out byte for byte as CUPTI writes them, for testing
//! the conversion (and XProf's reading of it) where there is no GPU.
//!
//! `records` encodes single records, `scenarios` whole traces of them, `cbid` the API
//! functions they name.

pub mod cbid;
mod records;
mod scenarios;

pub use records::*;
pub use scenarios::*;
