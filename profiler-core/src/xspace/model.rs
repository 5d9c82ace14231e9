//! The messages of TSL's `xplane.proto`, and the readers every consumer shares.

use std::collections::BTreeMap;

/// A profile of one host: its planes, warnings and errors. Encoded as `<host>.xplane.pb`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XSpace {
    /// One plane per host or device.
    #[prost(message, repeated, tag = "1")]
    pub planes: Vec<XPlane>,
    /// Errors met while collecting.
    #[prost(string, repeated, tag = "2")]
    pub errors: Vec<String>,
    /// Warnings met while collecting (dropped events, missing tracers).
    #[prost(string, repeated, tag = "3")]
    pub warnings: Vec<String>,
    /// Host names this space was collected on.
    #[prost(string, repeated, tag = "4")]
    pub hostnames: Vec<String>,
}

/// A host or a device: its lines, its interned metadata and its own stats.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XPlane {
    /// Plane id, unique in its space.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Plane name, e.g. `/host:CPU`, `/device:GPU:0`, `Task Environment`.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Lines (threads, streams) of this plane.
    #[prost(message, repeated, tag = "3")]
    pub lines: Vec<XLine>,
    /// Event metadata by id (ids start at 1).
    #[prost(btree_map = "int64, message", tag = "4")]
    pub event_metadata: BTreeMap<i64, XEventMetadata>,
    /// Stat metadata by id (ids start at 1).
    #[prost(btree_map = "int64, message", tag = "5")]
    pub stat_metadata: BTreeMap<i64, XStatMetadata>,
    /// Stats that describe the whole plane.
    #[prost(message, repeated, tag = "6")]
    pub stats: Vec<XStat>,
}

/// A timeline: one thread of a host, or one stream of a device.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XLine {
    /// Line id. The trace viewer keeps only its low 32 bits.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Id shown instead of `id` when non-zero.
    #[prost(int64, tag = "10")]
    pub display_id: i64,
    /// Line name (the thread name).
    #[prost(string, tag = "2")]
    pub name: String,
    /// Name shown instead of `name` when set.
    #[prost(string, tag = "11")]
    pub display_name: String,
    /// Start of the line in nanoseconds, relative to the profile start.
    #[prost(int64, tag = "3")]
    pub timestamp_ns: i64,
    /// Length of the line in picoseconds.
    #[prost(int64, tag = "9")]
    pub duration_ps: i64,
    /// Events, sorted by offset ascending then duration descending.
    #[prost(message, repeated, tag = "4")]
    pub events: Vec<XEvent>,
}

/// One timed event on a line.
///
/// 32 bytes: a long session holds millions of these. So its stats sit behind one
/// pointer ([`Stats`]) rather than a three-word `Vec`, and where it sits
/// ([`XEventData`]: an offset, or an occurrence count) is one word, its low bit
/// saying which; that costs the value its top bit, so offsets and counts are held
/// within ±2^62 ([`XEvent::MAX_OFFSET_PS`], 53 days of picoseconds). The protobuf
/// encoding is written out by hand (`event_encoding`) instead of derived for the
/// same reasons.
///
/// An event with neither an offset nor a count (the schema allows it) reads as
/// offset 0, which is what XProf makes of it.
#[derive(Clone, Default, PartialEq)]
pub struct XEvent {
    /// Key into the plane's event metadata.
    pub metadata_id: i64,
    /// The value of [`XEvent::data`] shifted left by one, the low bit set for
    /// [`XEventData::NumOccurrences`]: private, so that it is only set in range.
    data: i64,
    /// Duration in picoseconds; zero makes an instant event.
    pub duration_ps: i64,
    /// The event's own stats (its fields).
    pub stats: Stats,
}

/// An event's stats: a vector one pointer wide, with its length and capacity in its
/// heap block, so that an event without stats spends 8 bytes on them, not 24.
pub type Stats = thin_vec::ThinVec<XStat>;

impl std::fmt::Debug for XEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XEvent")
            .field("metadata_id", &self.metadata_id)
            .field("data", &self.data())
            .field("duration_ps", &self.duration_ps)
            .field("stats", &self.stats)
            .finish()
    }
}

/// Where an [`XEvent`] sits: at an offset on its line, or aggregated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XEventData {
    /// Picoseconds from the line's `timestamp_ns`.
    OffsetPs(i64),
    /// Number of occurrences of an aggregated event.
    NumOccurrences(i64),
}

/// A named value attached to an event, an event metadata or a plane.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XStat {
    /// Key into the plane's stat metadata.
    #[prost(int64, tag = "1")]
    pub metadata_id: i64,
    /// The value.
    #[prost(oneof = "XStatValue", tags = "2, 3, 4, 5, 6, 7")]
    pub value: Option<XStatValue>,
}

/// The value of an [`XStat`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum XStatValue {
    /// A floating point value.
    #[prost(double, tag = "2")]
    Double(f64),
    /// An unsigned integer.
    #[prost(uint64, tag = "3")]
    Uint64(u64),
    /// A signed integer.
    #[prost(int64, tag = "4")]
    Int64(i64),
    /// A string.
    #[prost(string, tag = "5")]
    Str(String),
    /// Raw bytes.
    #[prost(bytes = "vec", tag = "6")]
    Bytes(Vec<u8>),
    /// A string interned as the name of the stat metadata with this id.
    #[prost(uint64, tag = "7")]
    Ref(u64),
}

/// The interned description of an event name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XEventMetadata {
    /// Id, equal to its key in the plane's map.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Event name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Serialized extra metadata.
    #[prost(bytes = "vec", tag = "3")]
    pub metadata: Vec<u8>,
    /// Name shown instead of `name` when set.
    #[prost(string, tag = "4")]
    pub display_name: String,
    /// Stats shared by every event of this metadata.
    #[prost(message, repeated, tag = "5")]
    pub stats: Vec<XStat>,
    /// Ids of child metadata.
    #[prost(int64, repeated, tag = "6")]
    pub child_id: Vec<i64>,
}

/// The interned description of a stat name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct XStatMetadata {
    /// Id, equal to its key in the plane's map.
    #[prost(int64, tag = "1")]
    pub id: i64,
    /// Stat name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Human description.
    #[prost(string, tag = "3")]
    pub description: String,
}

impl XSpace {
    /// The plane with this name, if any.
    pub fn plane(&self, name: &str) -> Option<&XPlane> {
        self.planes.iter().find(|p| p.name == name)
    }
}

impl XPlane {
    /// The name of the event metadata with this id.
    pub fn event_name(&self, metadata_id: i64) -> Option<&str> {
        self.event_metadata
            .get(&metadata_id)
            .map(|m| m.name.as_str())
    }

    /// The name of the stat metadata with this id.
    pub fn stat_name(&self, metadata_id: i64) -> Option<&str> {
        self.stat_metadata
            .get(&metadata_id)
            .map(|m| m.name.as_str())
    }

    /// The id of the stat metadata with this name, if interned.
    pub fn stat_id(&self, name: &str) -> Option<i64> {
        self.stat_metadata
            .values()
            .find(|m| m.name == name)
            .map(|m| m.id)
    }

    /// The value of the stat named `name` among `stats` (of an event or of this plane).
    pub fn find_stat<'a>(&self, stats: &'a [XStat], name: &str) -> Option<&'a XStatValue> {
        let id = self.stat_id(name)?;
        stats
            .iter()
            .find(|s| s.metadata_id == id)
            .and_then(|s| s.value.as_ref())
    }

    /// The text of the string stat named `name` among `stats`, whether held inline
    /// ([`XStatValue::Str`]) or as a reference to a string interned in this plane's stat
    /// metadata ([`XStatValue::Ref`], as TSL writes `tf_op` and `kernel_details`): what
    /// XProf reads with `StrOrRefValue`.
    pub fn find_text<'a>(&'a self, stats: &'a [XStat], name: &str) -> Option<&'a str> {
        self.text_of(self.find_stat(stats, name)?)
    }

    /// The text of a string stat's `value` of this plane: held inline, or a reference
    /// to a string interned in the stat metadata. `None` for other kinds of values.
    pub fn text_of<'a>(&'a self, value: &'a XStatValue) -> Option<&'a str> {
        match value {
            XStatValue::Str(s) => Some(s),
            XStatValue::Ref(id) => self.stat_name(i64::try_from(*id).ok()?),
            _ => None,
        }
    }
}

impl XEvent {
    /// The largest offset or occurrence count an event holds: 2^62 - 1 (53 days of
    /// picoseconds). Larger values given to [`XEvent::set_data`] are held as this.
    pub const MAX_OFFSET_PS: i64 = (1 << 62) - 1;
    /// The smallest offset an event holds, -2^62.
    pub const MIN_OFFSET_PS: i64 = -(1 << 62);

    /// An event `offset_ps` from its line's start, without stats.
    pub fn new(metadata_id: i64, offset_ps: i64, duration_ps: i64) -> XEvent {
        let mut event = XEvent {
            metadata_id,
            duration_ps,
            ..XEvent::default()
        };
        event.set_offset_ps(offset_ps);
        event
    }

    /// An aggregated event: `num_occurrences` events of this metadata, together
    /// lasting `duration_ps`.
    pub fn aggregated(metadata_id: i64, num_occurrences: i64, duration_ps: i64) -> XEvent {
        let mut event = XEvent::new(metadata_id, 0, duration_ps);
        event.set_data(XEventData::NumOccurrences(num_occurrences));
        event
    }

    /// This event with these stats.
    #[must_use]
    pub fn with_stats(mut self, stats: Stats) -> XEvent {
        self.stats = stats;
        self
    }

    /// Where the event sits: at an offset on its line, or aggregated.
    #[inline]
    pub fn data(&self) -> XEventData {
        let value = self.data >> 1;
        if self.data & 1 == 0 {
            XEventData::OffsetPs(value)
        } else {
            XEventData::NumOccurrences(value)
        }
    }

    /// Sets where the event sits, its value clamped to ±2^62
    /// ([`XEvent::MAX_OFFSET_PS`]).
    #[inline]
    pub fn set_data(&mut self, data: XEventData) {
        let (value, aggregated) = match data {
            XEventData::OffsetPs(v) => (v, 0),
            XEventData::NumOccurrences(v) => (v, 1),
        };
        self.data = value.clamp(XEvent::MIN_OFFSET_PS, XEvent::MAX_OFFSET_PS) << 1 | aggregated;
    }

    /// Offset from the line start in picoseconds (0 for aggregated events).
    #[inline]
    pub fn offset_ps(&self) -> i64 {
        match self.data() {
            XEventData::OffsetPs(ps) => ps,
            XEventData::NumOccurrences(_) => 0,
        }
    }

    /// Places the event `ps` from its line's start (clamped as [`XEvent::set_data`]).
    #[inline]
    pub fn set_offset_ps(&mut self, ps: i64) {
        self.set_data(XEventData::OffsetPs(ps));
    }
}

impl XLine {
    /// Where `event`, one of this line's, starts and ends, in picoseconds on the time
    /// axis of the line's producer (line timestamps are ns, event offsets ps).
    ///
    /// Saturating: files from other producers may hold absolute timestamps near the
    /// top of the range (2^63 ps is 107 days), or anything at all.
    pub fn event_span_ps(&self, event: &XEvent) -> (i64, i64) {
        let start = self
            .timestamp_ns
            .saturating_mul(1000)
            .saturating_add(event.offset_ps());
        (start, start.saturating_add(event.duration_ps))
    }

    /// Whether this is a line prof draws for itself rather than recorded work: the
    /// counters, the profiler's `Paused` line, and the lifetimes of async tasks. Event
    /// counts and the analyses of a profile leave these lines out, so that every table
    /// counts the same events.
    pub fn is_bookkeeping(&self) -> bool {
        self.name == crate::schema::COUNTERS_LINE
            || self.name == crate::schema::PROFILER_LINE
            || (self.id >= i64::from(crate::schema::TASKS_LINE_ID)
                && self.name.starts_with(crate::schema::TASKS_LINE))
    }
}

impl XEvent {
    /// The value of this event's stat with metadata id `id` (from
    /// [`XPlane::stat_id`]); `None` when the stat is absent or unnamed in the plane.
    pub fn stat(&self, id: Option<i64>) -> Option<&XStatValue> {
        let id = id?;
        self.stats
            .iter()
            .find(|s| s.metadata_id == id)
            .and_then(|s| s.value.as_ref())
    }
}

impl XStatValue {
    /// The value as an int64, when it is one.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            XStatValue::Int64(v) => Some(*v),
            _ => None,
        }
    }
}

/// Nanoseconds as the picoseconds event offsets and durations are written in,
/// saturating rather than wrapping for times no session reaches.
pub fn ps(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX).saturating_mul(1000)
}

/// Sorts events the way XProf requires: offset ascending, then duration descending,
/// so that a parent precedes the children it encloses. Unsorted lines make XProf find
/// no steps, silently.
pub fn sort_events(events: &mut [XEvent]) {
    events.sort_by(|a, b| {
        a.offset_ps()
            .cmp(&b.offset_ps())
            .then(b.duration_ps.cmp(&a.duration_ps))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn where_an_event_sits_is_kept_apart_from_its_kind_and_clamped() {
        for v in [
            0,
            1,
            -1,
            1 << 40,
            -(1 << 40),
            XEvent::MAX_OFFSET_PS,
            XEvent::MIN_OFFSET_PS,
        ] {
            let mut e = XEvent::new(7, v, 9);
            assert_eq!((e.data(), e.offset_ps()), (XEventData::OffsetPs(v), v));
            e.set_data(XEventData::NumOccurrences(v));
            assert_eq!(
                (e.data(), e.offset_ps()),
                (XEventData::NumOccurrences(v), 0)
            );
            assert_eq!((e.metadata_id, e.duration_ps), (7, 9));
        }
        let far = XEvent::new(1, i64::MAX, 0);
        assert_eq!(far.offset_ps(), XEvent::MAX_OFFSET_PS);
        assert_eq!(
            XEvent::new(1, i64::MIN, 0).offset_ps(),
            XEvent::MIN_OFFSET_PS
        );
        assert_eq!(
            XEvent::aggregated(1, i64::MAX, 0).data(),
            XEventData::NumOccurrences(XEvent::MAX_OFFSET_PS)
        );
    }

    #[test]
    fn sort_puts_parents_before_children() {
        let ev = |off, dur| XEvent::new(1, off, dur);
        let mut events = vec![ev(5, 1), ev(0, 2), ev(0, 10)];
        sort_events(&mut events);
        let got: Vec<_> = events
            .iter()
            .map(|e| (e.offset_ps(), e.duration_ps))
            .collect();
        assert_eq!(got, [(0, 10), (0, 2), (5, 1)]);
    }
}
