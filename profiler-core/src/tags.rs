//! Record tags: the names and bits the front ends write into records and the
//! collector reads back, kept below both so that neither imports the other.
//!
//! Tags are field keys and sample names starting with `$`: not identifiers, so no
//! user field can collide with them, and never exported as stats.

/// Key of the field that tags an event as a poll of an async task; its value is the
/// task id.
pub(crate) const POLL_OF: &str = "$poll_of";
/// Name of the sample recording that a `tracing` span closed; its value is the task
/// id. `tracing` reuses the ids of closed spans, so later polls of the same id belong
/// to another task.
pub(crate) const CLOSED: &str = "$closed";
/// Set in the task id of futures instrumented by prof itself; `tracing` span ids
/// never have it.
pub(crate) const PROF_TASK: u64 = 1 << 63;

/// Key of the field that tags an event as a profiling object (MXNet's Task, Frame,
/// Event or Marker): its value is the domain id in the low 32 bits and the
/// [`ObjectKind`] above them.
pub(crate) const OBJECT_OF: &str = "$object_of";

/// Key of the field that tags an event as one of the tracking allocator's memory
/// events; its value is a [`MemoryEvent`] tag.
pub(crate) const MEMORY_OF: &str = "$memory_of";

/// What a tracking allocator's memory event records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemoryEvent {
    /// A thread folded its tally into the totals: the event carries the totals only.
    Snapshot = 1,
    /// One block at or above the large-allocation threshold was allocated or released:
    /// the event carries its size and address too.
    Block = 2,
}

impl MemoryEvent {
    /// The [`MEMORY_OF`] value.
    pub(crate) fn tag(self) -> u64 {
        self as u64
    }

    /// The kind a [`MEMORY_OF`] value names.
    pub(crate) fn from_tag(tag: u64) -> Option<MemoryEvent> {
        match tag {
            1 => Some(MemoryEvent::Snapshot),
            2 => Some(MemoryEvent::Block),
            _ => None,
        }
    }
}

/// What a profiling object is, and so where the collector puts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ObjectKind {
    Task = 0,
    Frame = 1,
    Event = 2,
    ThreadMarker = 3,
    ProcessMarker = 4,
    GlobalMarker = 5,
}

impl ObjectKind {
    /// The [`OBJECT_OF`] value of an object of this kind in domain `domain`.
    pub(crate) fn tag(self, domain: u32) -> u64 {
        (self as u64) << 32 | u64::from(domain)
    }

    /// The kind and domain of an [`OBJECT_OF`] value.
    pub(crate) fn from_tag(tag: u64) -> Option<(ObjectKind, u32)> {
        let kind = match tag >> 32 {
            0 => ObjectKind::Task,
            1 => ObjectKind::Frame,
            2 => ObjectKind::Event,
            3 => ObjectKind::ThreadMarker,
            4 => ObjectKind::ProcessMarker,
            5 => ObjectKind::GlobalMarker,
            _ => return None,
        };
        Some((kind, tag as u32))
    }

    /// The `object` stat's value.
    pub(crate) fn object(self) -> &'static str {
        match self {
            ObjectKind::Task => "task",
            ObjectKind::Frame => "frame",
            ObjectKind::Event => "event",
            _ => "marker",
        }
    }

    /// The `scope` stat's value, for markers.
    pub(crate) fn scope(self) -> Option<&'static str> {
        match self {
            ObjectKind::ThreadMarker => Some("thread"),
            ObjectKind::ProcessMarker => Some("process"),
            ObjectKind::GlobalMarker => Some("global"),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_tags_round_trip() {
        for kind in [ObjectKind::Task, ObjectKind::GlobalMarker] {
            assert_eq!(ObjectKind::from_tag(kind.tag(7)), Some((kind, 7)));
        }
        assert_eq!(ObjectKind::from_tag(9 << 32), None);
    }
}
