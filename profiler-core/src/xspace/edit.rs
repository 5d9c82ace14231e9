//! Editing a plane that already exists: what a device tracer does to the host plane
//! when it adds its API calls there, or to a plane it fills in several passes.

use std::collections::HashMap;

use foldhash::fast::FixedState;

use super::model::{
    sort_events, XEvent, XEventMetadata, XLine, XPlane, XStat, XStatMetadata, XStatValue,
};

/// Interns names into a plane that already has metadata (the host plane a tracer adds
/// to), continuing its ids.
#[derive(Debug)]
pub struct Interner {
    // foldhash, as `PlaneBuilder`'s: a lookup for every stat and event added.
    events: HashMap<String, i64, FixedState>,
    stats: HashMap<String, i64, FixedState>,
}

impl Interner {
    /// An interner for `plane`, knowing the names it already holds.
    pub fn new(plane: &XPlane) -> Interner {
        Interner {
            events: plane
                .event_metadata
                .iter()
                .map(|(id, m)| (m.name.clone(), *id))
                .collect(),
            stats: plane
                .stat_metadata
                .iter()
                .map(|(id, m)| (m.name.clone(), *id))
                .collect(),
        }
    }

    /// The metadata id of event name `name` in `plane`, interning it on first use.
    pub fn event(&mut self, plane: &mut XPlane, name: &str) -> i64 {
        if let Some(&id) = self.events.get(name) {
            return id;
        }
        let id = plane
            .event_metadata
            .keys()
            .next_back()
            .copied()
            .unwrap_or(0)
            + 1;
        plane.event_metadata.insert(
            id,
            XEventMetadata {
                id,
                name: name.to_owned(),
                ..XEventMetadata::default()
            },
        );
        self.events.insert(name.to_owned(), id);
        id
    }

    /// A stat named `name` with `value`, its name interned in `plane`.
    pub fn stat(&mut self, plane: &mut XPlane, name: &str, value: XStatValue) -> XStat {
        let id = match self.stats.get(name) {
            Some(&id) => id,
            None => {
                let id = plane.stat_metadata.keys().next_back().copied().unwrap_or(0) + 1;
                plane.stat_metadata.insert(
                    id,
                    XStatMetadata {
                        id,
                        name: name.to_owned(),
                        description: String::new(),
                    },
                );
                self.stats.insert(name.to_owned(), id);
                id
            }
        };
        XStat {
            metadata_id: id,
            value: Some(value),
        }
    }
}

/// Adds events with session-relative offsets to a plane's line, creating the line
/// when absent and rebasing it when the new events start before it.
pub fn merge_into_line(plane: &mut XPlane, id: i64, name: &str, events: Vec<XEvent>) {
    let at = match plane.lines.iter().position(|l| l.id == id) {
        Some(at) => at,
        None => {
            plane.lines.push(XLine {
                id,
                name: name.to_owned(),
                ..XLine::default()
            });
            plane.lines.len() - 1
        }
    };
    merge(&mut plane.lines[at], events);
}

fn merge(line: &mut XLine, events: Vec<XEvent>) {
    let old_base = line.timestamp_ns * 1000;
    let mut all: Vec<XEvent> = std::mem::take(&mut line.events)
        .into_iter()
        .map(|mut e| {
            e.set_offset_ps(old_base + e.offset_ps());
            e
        })
        .chain(events)
        .collect();
    let Some(start) = all.iter().map(XEvent::offset_ps).min() else {
        return;
    };
    let end = all
        .iter()
        .map(|e| e.offset_ps() + e.duration_ps)
        .max()
        .unwrap_or(start);
    // Line timestamps are whole nanoseconds; offsets keep the picoseconds.
    let base = start / 1000 * 1000;
    for e in &mut all {
        e.set_offset_ps(e.offset_ps() - base);
    }
    sort_events(&mut all);
    line.timestamp_ns = base / 1000;
    line.duration_ps = end - base;
    line.events = all;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xspace::PlaneBuilder;

    #[test]
    fn interning_continues_the_ids_a_plane_already_has() {
        let mut b = PlaneBuilder::new(1, "/host:CPU");
        assert_eq!(b.event_metadata_id("Train"), 1);
        let mut plane = b.build();
        let mut names = Interner::new(&plane);
        assert_eq!(names.event(&mut plane, "Train"), 1);
        assert_eq!(names.event(&mut plane, "cuLaunchKernel"), 2);
        assert_eq!(plane.event_name(2), Some("cuLaunchKernel"));
        let stat = names.stat(&mut plane, "correlation_id", XStatValue::Uint64(7));
        assert_eq!(plane.stat_name(stat.metadata_id), Some("correlation_id"));
    }

    #[test]
    fn merging_rebases_a_line_on_its_earliest_event() {
        let event = |at_ps: i64, dur_ps: i64| XEvent::new(1, at_ps, dur_ps);
        let mut plane = XPlane::default();
        merge_into_line(&mut plane, 5, "api", vec![event(10_000, 1_000)]);
        assert_eq!(plane.lines[0].timestamp_ns, 10);
        merge_into_line(&mut plane, 5, "api", vec![event(2_500, 500)]);
        let line = &plane.lines[0];
        assert_eq!((line.timestamp_ns, line.duration_ps), (2, 9_000));
        let spans: Vec<_> = line.events.iter().map(|e| line.event_span_ps(e)).collect();
        assert_eq!(spans, [(2_500, 3_000), (10_000, 11_000)]);
    }
}
