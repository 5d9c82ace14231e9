//! Collection: thread buffers of one session → an [`XSpace`].

mod domains;
mod tasks;

pub(crate) use tasks::{next_task_id, POLL_OF};
#[cfg(feature = "tracing")]
pub(crate) use tasks::{span_closed, PROF_TASK};

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::buffer::{self, Dropped, OwnedValue, Record};
use crate::clock::{Anchor, TickScale};
use crate::schema;
use crate::xspace::{
    sort_events, PlaneBuilder, XEvent, XEventData, XLine, XSpace, XStat, XStatValue,
};

/// Builds the space of session `generation`, recorded between `start` and `stop` at
/// `host_level`, with `pauses` (start and end ticks) shown on the `Profiler` line.
/// Events that ended and samples taken before ticks `since` are left out.
pub(crate) fn collect(
    generation: u64,
    start: &Anchor,
    stop: &Anchor,
    host_level: u8,
    pauses: &[(u64, u64)],
    since: u64,
) -> XSpace {
    let scale = TickScale::between(start, stop);
    let stop_ns = scale.to_ns(stop.ticks);
    let mut host = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let mut dropped = Dropped::default();
    let mut buffers = buffer::buffers();
    buffers.sort_by_key(|b| b.line_id);
    let mut names = NameCache::default();
    let mut builders: Vec<LineBuilder<'_>> = Vec::with_capacity(buffers.len());
    let mut ids = Vec::with_capacity(buffers.len());
    for buf in &buffers {
        let mut line = LineBuilder::new(&scale, stop_ns, since);
        let Some(lost) = buf.read(generation, |record| line.add(record, &mut host, &mut names))
        else {
            continue;
        };
        dropped.events += lost.events;
        dropped.fields += lost.fields;
        builders.push(line);
        ids.push((buf.line_id, buf.name.as_str()));
    }
    let lanes = tasks::link(&mut builders, host_level, &mut host);
    let domains = domains::take(&mut builders, &mut host);
    let mut samples: Vec<_> = builders
        .iter_mut()
        .flat_map(|b| std::mem::take(&mut b.samples))
        .collect();
    for (line, (id, name)) in builders.into_iter().zip(ids) {
        if let Some(line) = line.build(id, name) {
            host.add_line(line);
        }
    }
    for (lane, events) in lanes.into_iter().enumerate() {
        let name = match lane {
            0 => tasks::TASKS_LINE.to_owned(),
            n => format!("{} {}", tasks::TASKS_LINE, n + 1),
        };
        if let Some(line) = build_line(events, tasks::TASKS_LINE_ID + lane as u32, &name) {
            host.add_line(line);
        }
    }

    for line in domains::lines(domains) {
        host.add_line(line);
    }

    let paused = pauses
        .iter()
        .filter(|&&(from, to)| to > start.ticks && from < stop.ticks)
        .map(|&(from, to)| {
            let from = scale.to_ns(from).min(stop_ns);
            let to = scale.to_ns(to).min(stop_ns);
            XEvent {
                metadata_id: host.event_metadata_id(schema::PAUSED),
                data: Some(XEventData::OffsetPs(ps(from))),
                duration_ps: ps(to.max(from) - from),
                stats: Vec::new(),
            }
        })
        .collect();
    if let Some(line) = build_line(paused, schema::PROFILER_LINE_ID, schema::PROFILER_LINE) {
        host.add_line(line);
    }

    if !samples.is_empty() {
        // Stable: samples of one thread at the same tick keep their order.
        samples.sort_by_key(|&(at, _, _)| at);
        let value = host.stat_metadata_id(schema::COUNTER_VALUE);
        let events = samples
            .into_iter()
            .map(|(at, counter, v)| XEvent {
                metadata_id: names.id(&mut host, counter),
                data: Some(XEventData::OffsetPs(at)),
                duration_ps: 0,
                stats: vec![XStat {
                    metadata_id: value,
                    value: Some(XStatValue::Double(v)),
                }],
            })
            .collect();
        if let Some(line) = build_line(events, schema::COUNTERS_LINE_ID, schema::COUNTERS_LINE) {
            host.add_line(line);
        }
    }

    let mut env = PlaneBuilder::new(schema::TASK_ENV_PLANE_ID, schema::TASK_ENV_PLANE);
    env.add_plane_stat(
        schema::PROFILE_START_TIME,
        XStatValue::Uint64(start.unix_ns),
    );
    env.add_plane_stat(schema::PROFILE_STOP_TIME, XStatValue::Uint64(stop.unix_ns));

    let mut space = XSpace {
        planes: vec![host.build(), env.build()],
        hostnames: vec![host_name()],
        ..XSpace::default()
    };
    if dropped != Dropped::default() {
        let what = match (dropped.events, dropped.fields) {
            (e, 0) => format!("{e} events were"),
            (0, f) => format!("{f} fields were"),
            (e, f) => format!("{e} events and {f} fields were"),
        };
        space.warnings.push(format!(
            "prof: {what} dropped because the session reached its cap \
             (ProfileOptions::max_events); raise max_events to keep them"
        ));
    }
    space
}

/// Event names are `&'static str`s: most events share a few pointers, so they are
/// looked up by address before the plane interns their text.
#[derive(Default)]
struct NameCache(HashMap<(usize, usize), i64, BuildHasherDefault<AddrHasher>>);

impl NameCache {
    fn id(&mut self, plane: &mut PlaneBuilder, name: &'static str) -> i64 {
        *self
            .0
            .entry((name.as_ptr() as usize, name.len()))
            .or_insert_with(|| plane.event_metadata_id(name))
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
struct LineBuilder<'a> {
    scale: &'a TickScale,
    stop_ns: u64,
    /// Ticks before which ended events and samples are left out.
    since: u64,
    /// Offsets are session-relative until `build` rebases them on the line start.
    events: Vec<XEvent>,
    /// Sequence number of each event, ascending: fields find their event by it.
    seqs: Vec<u64>,
    /// Events that are polls of a task: (index in `events`, task id).
    polls: Vec<(usize, u64)>,
    /// Spans that closed on this thread: (task id, session-relative ps).
    closes: Vec<(u64, i64)>,
    /// Counter samples taken on this thread: (session-relative ps, counter, value).
    samples: Vec<(i64, &'static str, f64)>,
    /// Profiling objects recorded on this thread: (index in `events`, domain tag).
    objects: Vec<(usize, u64)>,
}

impl<'a> LineBuilder<'a> {
    fn new(scale: &'a TickScale, stop_ns: u64, since: u64) -> Self {
        LineBuilder {
            scale,
            stop_ns,
            since,
            events: Vec::new(),
            seqs: Vec::new(),
            polls: Vec::new(),
            closes: Vec::new(),
            samples: Vec::new(),
            objects: Vec::new(),
        }
    }

    fn add(&mut self, record: Record, plane: &mut PlaneBuilder, names: &mut NameCache) {
        match record {
            Record::Event {
                seq,
                name,
                start,
                end,
            } => {
                if end != 0 && end < self.since {
                    return;
                }
                let start = self.scale.to_ns(start).min(self.stop_ns);
                // Still open at stop (or closed after it): it ends with the session.
                let end = if end == 0 {
                    self.stop_ns
                } else {
                    self.scale.to_ns(end).min(self.stop_ns)
                };
                self.seqs.push(seq);
                self.events.push(XEvent {
                    metadata_id: names.id(plane, name),
                    data: Some(XEventData::OffsetPs(ps(start))),
                    duration_ps: ps(end.max(start) - start),
                    stats: Vec::new(),
                });
            }
            Record::Mark { name, at, value } => {
                if at < self.since {
                    return;
                }
                let at = ps(self.scale.to_ns(at).min(self.stop_ns));
                if name == tasks::CLOSED {
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
                let Ok(i) = self.seqs.binary_search(&event_seq) else {
                    return;
                };
                match (key, value) {
                    (POLL_OF, OwnedValue::U64(task)) => self.polls.push((i, task)),
                    (crate::domain::OBJECT_OF, OwnedValue::U64(tag)) => self.objects.push((i, tag)),
                    (key, value) => {
                        add_stat(plane, &mut self.events[i].stats, key, stat_value(value))
                    }
                }
            }
        }
    }

    fn build(self, line_id: u32, line_name: &str) -> Option<XLine> {
        build_line(self.events, line_id, line_name)
    }
}

/// A line from events with session-relative offsets: the line starts at its first
/// event, and offsets become relative to it.
fn build_line(mut events: Vec<XEvent>, line_id: u32, line_name: &str) -> Option<XLine> {
    let start_ps = events.iter().map(XEvent::offset_ps).min()?;
    let end_ps = events.iter().map(|e| e.offset_ps() + e.duration_ps).max()?;
    for e in &mut events {
        e.data = Some(XEventData::OffsetPs(e.offset_ps() - start_ps));
    }
    // Events were recorded in start order, so this stable sort is one linear pass
    // unless clock ticks tie.
    sort_events(&mut events);
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
fn add_stat(plane: &mut PlaneBuilder, stats: &mut Vec<XStat>, key: &str, value: XStatValue) {
    let stat = plane.stat(key, value);
    match stats.iter_mut().find(|s| s.metadata_id == stat.metadata_id) {
        Some(existing) => *existing = stat,
        None => stats.push(stat),
    }
    if key == schema::STEP_NUM {
        let root = plane.stat_metadata_id(schema::IS_ROOT);
        if !stats.iter().any(|s| s.metadata_id == root) {
            stats.push(XStat {
                metadata_id: root,
                value: Some(XStatValue::Int64(1)),
            });
        }
    }
}

fn ps(ns: u64) -> i64 {
    (ns as i64).saturating_mul(1000)
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

/// This machine's host name, as TSL's `port::Hostname` reports it.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    #[allow(unsafe_code)]
    // SAFETY: the buffer is valid for writes of its length; gethostname NUL-terminates
    // within it on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        if end > 0 {
            return String::from_utf8_lossy(&buf[..end]).into_owned();
        }
    }
    "localhost".to_owned()
}

/// What the lane tests of `domains` and `tasks` share.
#[cfg(test)]
mod lane_tests {
    use crate::xspace::{XEvent, XEventData};

    /// An event from `start` to `end` ps.
    pub(super) fn event(start: i64, end: i64) -> XEvent {
        XEvent {
            metadata_id: 1,
            data: Some(XEventData::OffsetPs(start)),
            duration_ps: end - start,
            stats: Vec::new(),
        }
    }

    /// The (start, end) of each event of each lane.
    pub(super) fn spans(lanes: &[Vec<XEvent>]) -> Vec<Vec<(i64, i64)>> {
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
