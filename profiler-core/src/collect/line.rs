//! One thread's line, built straight from its buffer's records; the task and domain
//! passes then take the events that belong elsewhere.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::seqs::EventSeqs;
use crate::buffer::Record;
use crate::clock::TickScale;
use crate::field::OwnedValue;
use crate::schema;
use crate::tags::{MemoryEvent, CLOSED, MEMORY_OF, OBJECT_OF, POLL_OF};
use crate::xspace::{ps, sort_events, PlaneBuilder, Stats, XEvent, XLine, XStat, XStatValue};

/// Event names and field keys are `&'static str`s: most records share a few
/// pointers, so they are looked up by address before the plane interns their text
/// (which hashes it).
#[derive(Default)]
pub(super) struct NameCache {
    events: AddrMap,
    stats: AddrMap,
    /// Event names met last, by address: a line repeats few, and this finds them
    /// without hashing or probing the map.
    recent: [(usize, usize, i64); RECENT],
}

/// Entries of [`NameCache::recent`].
const RECENT: usize = 16;

type AddrMap = HashMap<(usize, usize), i64, BuildHasherDefault<AddrHasher>>;

impl NameCache {
    /// The event metadata id of `name`.
    pub(super) fn id(&mut self, plane: &mut PlaneBuilder, name: &'static str) -> i64 {
        let (addr, len) = (name.as_ptr() as usize, name.len());
        let slot = (addr >> 3 ^ len) % RECENT;
        let (seen_addr, seen_len, id) = self.recent[slot];
        // No `&'static str` is at address 0, so an empty entry never matches.
        if (seen_addr, seen_len) == (addr, len) {
            return id;
        }
        let id = *self
            .events
            .entry((addr, len))
            .or_insert_with(|| plane.event_metadata_id(name));
        self.recent[slot] = (addr, len, id);
        id
    }

    /// The stat metadata id of field key `key`.
    fn stat_id(&mut self, plane: &mut PlaneBuilder, key: &'static str) -> i64 {
        *self
            .stats
            .entry((key.as_ptr() as usize, key.len()))
            .or_insert_with(|| plane.stat_metadata_id(key))
    }
}

/// Multiply-shift hashing for address keys; SipHash would cost more than the rest of
/// an event's collection.
#[derive(Default)]
struct AddrHasher(u64);

impl Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Builds one thread's line straight from its records.
pub(super) struct LineBuilder<'a> {
    pub(super) scale: &'a TickScale,
    pub(super) stop_ns: u64,
    /// Ticks before which ended events and samples are left out.
    pub(super) since: u64,
    /// Offsets are session-relative until `build` rebases them on the line start.
    pub(super) events: Vec<XEvent>,
    /// Record number of each event: fields find their event by it.
    seqs: EventSeqs,
    /// Events that are polls of a task: (index in `events`, task id).
    pub(super) polls: Vec<(usize, u64)>,
    /// Spans that closed on this thread: (task id, session-relative ps).
    pub(super) closes: Vec<(u64, i64)>,
    /// The last event at whose end its span closed (an index in `events`): the close
    /// is added when the event's poll tag, the record right after it, names the span.
    closing: Option<usize>,
    /// Counter samples taken on this thread: (session-relative ps, counter, value).
    pub(super) samples: Vec<(i64, &'static str, f64)>,
    /// Profiling objects recorded on this thread: (index in `events`, domain tag).
    pub(super) objects: Vec<(usize, u64)>,
    /// The tracking allocator's memory events: (index in `events`, what it records).
    pub(super) memory: Vec<(usize, MemoryEvent)>,
}

/// How far before the session's start an event may begin and still count as begun
/// with it: the cycle counters of two cores can differ by a few cycles.
const CLOCK_SLACK_NS: u64 = 1_000;

impl<'a> LineBuilder<'a> {
    /// A builder for a buffer of `records` records: no line has more events than that,
    /// so its events never move while they are added (reallocation would touch every
    /// page twice; pages reserved but never written cost nothing, and `build` gives
    /// back the rest).
    pub(super) fn new(scale: &'a TickScale, stop_ns: u64, since: u64, records: u64) -> Self {
        let records = usize::try_from(records).unwrap_or(0);
        LineBuilder {
            scale,
            stop_ns,
            since,
            events: Vec::with_capacity(records),
            seqs: EventSeqs::with_capacity(records),
            polls: Vec::new(),
            closes: Vec::new(),
            closing: None,
            samples: Vec::new(),
            objects: Vec::new(),
            memory: Vec::new(),
        }
    }

    pub(super) fn add(&mut self, record: Record, plane: &mut PlaneBuilder, names: &mut NameCache) {
        match record {
            Record::Event {
                seq,
                name,
                start,
                end,
                closes_span,
            } => {
                if end != 0 && end < self.since {
                    return;
                }
                if closes_span {
                    self.closing = Some(self.events.len());
                }
                // Begun before the session (more than a lagging core's few cycles).
                let cut_start = self.scale.ns_before_start(start) > CLOCK_SLACK_NS;
                let start = self.scale.to_ns(start).min(self.stop_ns);
                // Still open at stop (or closed after it): it ends with the session.
                let end_ns = if end == 0 {
                    u64::MAX
                } else {
                    self.scale.to_ns(end)
                };
                let cut_stop = end_ns > self.stop_ns;
                let end = end_ns.min(self.stop_ns);
                self.seqs.push(seq);
                let mut event =
                    XEvent::new(names.id(plane, name), ps(start), ps(end.max(start) - start));
                if cut_start || cut_stop {
                    // Its span is only the part inside the session: say so, so that
                    // a summary does not take it for a short call.
                    let cut = match (cut_start, cut_stop) {
                        (true, true) => schema::CUT_AT_BOTH,
                        (true, false) => schema::CUT_AT_START,
                        _ => schema::CUT_AT_STOP,
                    };
                    let id = names.stat_id(plane, schema::CUT_BY_SESSION);
                    let value = XStatValue::Ref(plane.stat_metadata_id(cut) as u64);
                    add_stat_with_id(plane, &mut event.stats, id, schema::CUT_BY_SESSION, value);
                }
                self.events.push(event);
            }
            Record::Sample { name, at, value } => {
                if at < self.since {
                    return;
                }
                let at = ps(self.scale.to_ns(at).min(self.stop_ns));
                if name == CLOSED {
                    self.closes.push((value, at));
                } else {
                    self.samples.push((at, name, f64::from_bits(value)));
                }
            }
            Record::Field {
                event_seq,
                key,
                value,
            } => {
                let Some(i) = self.seqs.find(event_seq) else {
                    return;
                };
                match (key, value) {
                    (POLL_OF, OwnedValue::U64(task)) => {
                        self.polls.push((i, task));
                        // The tag is written with its event, in the same
                        // reservation, so no other event comes between them.
                        if self.closing == Some(i) {
                            let event = &self.events[i];
                            self.closes
                                .push((task, event.offset_ps() + event.duration_ps));
                        }
                    }
                    (OBJECT_OF, OwnedValue::U64(tag)) => self.objects.push((i, tag)),
                    (MEMORY_OF, OwnedValue::U64(tag)) => {
                        if let Some(kind) = MemoryEvent::from_tag(tag) {
                            self.memory.push((i, kind));
                        }
                    }
                    (key, value) => {
                        let id = names.stat_id(plane, key);
                        let stats = &mut self.events[i].stats;
                        add_stat_with_id(plane, stats, id, key, stat_value(value));
                    }
                }
            }
        }
    }

    pub(super) fn build(self, line_id: u32, line_name: &str) -> Option<XLine> {
        build_line(self.events, line_id, line_name)
    }
}

/// A line from events with session-relative offsets: the line starts at its first
/// event, and offsets become relative to it.
///
/// Two passes over the events, each reading them once from memory (a long line's
/// events are far bigger than the cache): the bounds, then the rebase, which also
/// checks the order, so that the sort runs only when clock ticks tied.
pub(super) fn build_line(mut events: Vec<XEvent>, line_id: u32, line_name: &str) -> Option<XLine> {
    let (start_ps, end_ps) = events.iter().fold(None, |bounds, e| {
        let (start, end) = (e.offset_ps(), e.offset_ps() + e.duration_ps);
        Some(match bounds {
            None => (start, end),
            Some((low, high)) => (start.min(low), end.max(high)),
        })
    })?;
    let mut in_order = true;
    let mut last = (i64::MIN, i64::MAX);
    for e in &mut events {
        let at = (e.offset_ps() - start_ps, e.duration_ps);
        e.set_offset_ps(at.0);
        // XProf's order: offset ascending, then duration descending.
        in_order &= at.0 > last.0 || (at.0 == last.0 && at.1 <= last.1);
        last = at;
    }
    if !in_order {
        sort_events(&mut events);
    }
    events.shrink_to_fit();
    Some(XLine {
        id: i64::from(line_id),
        name: line_name.to_owned(),
        timestamp_ns: start_ps / 1000,
        duration_ps: end_ps - start_ps,
        events,
        ..XLine::default()
    })
}

/// Adds or replaces a field's stat: setting a key again replaces its value, as a later
/// `set_metadata` means to. A `step_num` makes the event a step root, as JAX's
/// `StepTraceAnnotation` does: `_r` = 1 beside an int64 `step_num`.
pub(super) fn add_stat(plane: &mut PlaneBuilder, stats: &mut Stats, key: &str, value: XStatValue) {
    let id = plane.stat_metadata_id(key);
    add_stat_with_id(plane, stats, id, key, value);
}

/// [`add_stat`] with the stat metadata id of `key` already known.
fn add_stat_with_id(
    plane: &mut PlaneBuilder,
    stats: &mut Stats,
    id: i64,
    key: &str,
    value: XStatValue,
) {
    let stat = XStat {
        metadata_id: id,
        value: Some(value),
    };
    match stats.iter_mut().find(|s| s.metadata_id == stat.metadata_id) {
        Some(existing) => *existing = stat,
        None => {
            // Exactly: most events get one or two fields, and a vector's first
            // growth would make room for four.
            stats.reserve_exact(1);
            stats.push(stat);
        }
    }
    if key == schema::STEP_NUM {
        let root = plane.stat_metadata_id(schema::IS_ROOT);
        if !stats.iter().any(|s| s.metadata_id == root) {
            stats.reserve_exact(1);
            stats.push(XStat {
                metadata_id: root,
                value: Some(XStatValue::Int64(1)),
            });
        }
    }
}

/// Integers become int64 where they fit (XProf reads `step_num` only as int64); bools
/// become int64 0/1, since the schema has no bool.
fn stat_value(value: OwnedValue) -> XStatValue {
    match value {
        OwnedValue::I64(v) => XStatValue::Int64(v),
        OwnedValue::U64(v) => match i64::try_from(v) {
            Ok(v) => XStatValue::Int64(v),
            Err(_) => XStatValue::Uint64(v),
        },
        OwnedValue::F64(v) => XStatValue::Double(v),
        OwnedValue::Bool(v) => XStatValue::Int64(i64::from(v)),
        OwnedValue::Str(s) => XStatValue::Str(s),
    }
}

#[cfg(test)]
mod tests {
    use super::{build_line, NameCache, RECENT};
    use crate::xspace::{PlaneBuilder, XEvent};

    #[test]
    fn names_get_the_plane_s_ids_however_often_and_wherever_they_are_met() {
        let mut plane = PlaneBuilder::new(1, "/host:CPU");
        let mut cache = NameCache::default();
        // More names than the recent table holds; one text at two addresses; a name
        // sharing its address with a longer one; keys that are also event names.
        let many: Vec<&'static str> = (0..3 * RECENT)
            .map(|i| &*Box::leak(format!("name {i}").into_boxed_str()))
            .collect();
        let text: &'static str = Box::leak("opmatmulop".to_owned().into_boxed_str());
        let names = [&text[..2], &text[8..], &text[..3], &text[2..8]];
        for _ in 0..3 {
            for &name in many.iter().chain(&names) {
                let id = cache.id(&mut plane, name);
                assert_eq!(id, plane.event_metadata_id(name), "{name}");
                let stat = cache.stat_id(&mut plane, name);
                assert_eq!(Some(stat), plane.find_stat_metadata_id(name), "{name}");
            }
        }
        assert_eq!(
            cache.id(&mut plane, names[0]),
            cache.id(&mut plane, names[1])
        );
    }

    #[test]
    fn a_line_starts_at_its_earliest_event_and_is_in_xprofs_order() {
        let spans = |events: &[XEvent]| -> Vec<(i64, i64)> {
            events
                .iter()
                .map(|e| (e.offset_ps(), e.duration_ps))
                .collect()
        };
        // In order already, and out of order (ticks tied, or a later start first).
        let in_order = [(5_000, 9_000), (5_000, 2_000), (6_000, 0), (20_000, 4_000)];
        let shuffled = [(6_000, 0), (5_000, 2_000), (20_000, 4_000), (5_000, 9_000)];
        for events in [in_order, shuffled] {
            let events = events
                .iter()
                .map(|&(at, d)| XEvent::new(1, at, d))
                .collect();
            let line = build_line(events, 3, "t").expect("a line");
            assert_eq!((line.timestamp_ns, line.duration_ps), (5, 19_000));
            assert_eq!(
                spans(&line.events),
                [(0, 9_000), (0, 2_000), (1_000, 0), (15_000, 4_000)]
            );
        }
        assert!(build_line(Vec::new(), 3, "t").is_none());
    }
}

/// What the lane tests of `domains` and `tasks` share.
#[cfg(test)]
pub(super) mod lane_tests {
    use crate::xspace::XEvent;

    /// An event from `start` to `end` ps.
    pub(crate) fn event(start: i64, end: i64) -> XEvent {
        XEvent::new(1, start, end - start)
    }

    /// The (start, end) of each event of each lane.
    pub(crate) fn spans(lanes: &[Vec<XEvent>]) -> Vec<Vec<(i64, i64)>> {
        lanes
            .iter()
            .map(|l| {
                l.iter()
                    .map(|e| (e.offset_ps(), e.offset_ps() + e.duration_ps))
                    .collect()
            })
            .collect()
    }
}
