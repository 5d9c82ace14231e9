//! The conversion's maps and sets: foldhash, not SipHash. Each record looks its
//! correlation id (and names) up in several, and the keys are CUPTI's and the
//! program's own, nothing to defend against.

/// A `HashMap` with foldhash.
pub(super) type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;
/// A `HashSet` with foldhash.
pub(super) type HashSet<K> = std::collections::HashSet<K, foldhash::fast::FixedState>;
