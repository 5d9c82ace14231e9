//! Stat values as every producer writes them: numbers as int64, uint64 or double,
//! strings in place or as references to an interned name.

use profiler_core::xspace::XStatValue;

/// A numeric stat as a number (XProf reads these as int64; other producers write
/// uint64 or double).
pub(super) fn number(v: &XStatValue) -> Option<f64> {
    match v {
        XStatValue::Int64(v) => Some(*v as f64),
        XStatValue::Uint64(v) => Some(*v as f64),
        XStatValue::Double(v) => Some(*v),
        _ => None,
    }
}

/// An integer stat used as an identifier (a correlation id, an address), exactly.
pub(super) fn id(v: &XStatValue) -> Option<u64> {
    match v {
        XStatValue::Int64(v) => Some(*v as u64),
        XStatValue::Uint64(v) => Some(*v),
        _ => None,
    }
}
