//! Collection: thread buffers of one session → an [`XSpace`].

use std::collections::HashMap;

use crate::buffer::{self, Dropped, OwnedValue, Record};
use crate::clock::{Anchor, TickScale};
use crate::schema;
use crate::xspace::{
    sort_events, PlaneBuilder, XEvent, XEventData, XLine, XSpace, XStat, XStatValue,
};

/// What collection saw besides the events.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CollectStats {
    pub(crate) dropped_events: u64,
    pub(crate) dropped_fields: u64,
}

/// Builds the space of session `generation`, recorded between `start` and `stop`.
pub(crate) fn collect(generation: u64, start: &Anchor, stop: &Anchor) -> (XSpace, CollectStats) {
    let scale = TickScale::between(start, stop);
    let stop_ns = scale.to_ns(stop.ticks);
    let mut host = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let mut stats = CollectStats::default();
    let mut buffers = buffer::buffers();
    buffers.sort_by_key(|b| b.line_id);
    let mut names: HashMap<(usize, usize), i64> = HashMap::new();
    for buf in buffers {
        let mut line = LineBuilder::default();
        let Some(dropped) = buf.read(generation, |record| line.add(record)) else {
            continue;
        };
        let Dropped { events, fields } = dropped;
        stats.dropped_events += events;
        stats.dropped_fields += fields;
        if line.events.is_empty() {
            continue;
        }
        let line = line.build(
            &mut host,
            &mut names,
            buf.line_id,
            &buf.name,
            &scale,
            stop_ns,
        );
        host.add_line(line);
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
    if stats.dropped_events > 0 || stats.dropped_fields > 0 {
        let what = match (stats.dropped_events, stats.dropped_fields) {
            (e, 0) => format!("{e} events were"),
            (0, f) => format!("{f} fields were"),
            (e, f) => format!("{e} events and {f} fields were"),
        };
        space.warnings.push(format!(
            "prof: {what} dropped because the session reached its cap \
             (ProfileOptions::max_events); raise max_events to keep them"
        ));
    }
    (space, stats)
}

struct RawEvent {
    seq: u64,
    name: &'static str,
    start: u64,
    end: u64,
    fields: Vec<(&'static str, OwnedValue)>,
}

#[derive(Default)]
struct LineBuilder {
    events: Vec<RawEvent>,
}

impl LineBuilder {
    fn add(&mut self, record: Record) {
        match record {
            Record::Event {
                seq,
                name,
                start,
                end,
            } => self.events.push(RawEvent {
                seq,
                name,
                start,
                end,
                fields: Vec::new(),
            }),
            Record::Field {
                event_seq,
                key,
                value,
            } => {
                // Events are appended in sequence order, so their seqs are sorted.
                if let Ok(i) = self.events.binary_search_by_key(&event_seq, |e| e.seq) {
                    let fields = &mut self.events[i].fields;
                    // Setting a key again replaces its value, as a later `set_metadata`
                    // is meant to.
                    match fields.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = value,
                        None => fields.push((key, value)),
                    }
                }
            }
        }
    }

    fn build(
        self,
        plane: &mut PlaneBuilder,
        names: &mut HashMap<(usize, usize), i64>,
        line_id: u32,
        line_name: &str,
        scale: &TickScale,
        stop_ns: u64,
    ) -> XLine {
        let times: Vec<(u64, u64)> = self
            .events
            .iter()
            .map(|e| {
                let start = scale.to_ns(e.start).min(stop_ns);
                // Still open at stop (or closed after it): the event ends with the session.
                let end = if e.end == 0 {
                    stop_ns
                } else {
                    scale.to_ns(e.end).min(stop_ns)
                };
                (start, end.max(start))
            })
            .collect();
        let line_start = times.iter().map(|t| t.0).min().unwrap_or(0);
        let line_end = times.iter().map(|t| t.1).max().unwrap_or(0);
        let mut events = Vec::with_capacity(self.events.len());
        for (raw, (start, end)) in self.events.into_iter().zip(times) {
            // Names are 'static strings: most events share a few pointers, so look those
            // up before hashing the text.
            let key = (raw.name.as_ptr() as usize, raw.name.len());
            let metadata_id = *names
                .entry(key)
                .or_insert_with(|| plane.event_metadata_id(raw.name));
            events.push(XEvent {
                metadata_id,
                data: Some(XEventData::OffsetPs(ps(start - line_start))),
                duration_ps: ps(end - start),
                stats: field_stats(plane, raw.fields),
            });
        }
        sort_events(&mut events);
        XLine {
            id: i64::from(line_id),
            name: line_name.to_owned(),
            timestamp_ns: line_start as i64,
            duration_ps: ps(line_end - line_start),
            events,
            ..XLine::default()
        }
    }
}

fn ps(ns: u64) -> i64 {
    (ns as i64).saturating_mul(1000)
}

fn field_stats(plane: &mut PlaneBuilder, fields: Vec<(&'static str, OwnedValue)>) -> Vec<XStat> {
    if fields.is_empty() {
        return Vec::new();
    }
    let mut stats = Vec::with_capacity(fields.len() + 1);
    let mut has_step = false;
    let mut has_root = false;
    for (key, value) in fields {
        has_step |= key == schema::STEP_NUM;
        has_root |= key == schema::IS_ROOT;
        stats.push(plane.stat(key, stat_value(value)));
    }
    // A step marker is what JAX's StepTraceAnnotation writes: `_r` = 1 beside an
    // int64 `step_num`.
    if has_step && !has_root {
        stats.push(plane.stat(schema::IS_ROOT, XStatValue::Int64(1)));
    }
    stats
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
