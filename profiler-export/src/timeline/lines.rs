//! A plane's lines as threads: lanes that keep slices nested, thread ids, and the
//! counter tracks of the `_counters_` line.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XEventData, XEventMetadata, XLine, XPlane};

use super::events::Events;
use super::flows::{FlowIndex, FlowWalk, LinkStats};
use super::lanes::Lanes;
use super::model::{Arg, CounterTrack, Process, Slice, Totals, Visitor};
use super::names::{EventMetadata, StatNames};
use super::origin::Origin;

/// Per-plane state of the walk.
pub(super) struct PlaneWalk<'a, 't> {
    origin: Origin,
    flows: &'t FlowIndex,
    plane: &'a XPlane,
    pid: u32,
    category: &'a str,
    stat_names: StatNames<'a>,
    links: LinkStats,
    /// Shared by all planes of the walk.
    tids: &'t mut Tids,
    /// Shared by all planes of the walk.
    walk_flows: &'t mut FlowWalk,
    /// The counter tracks of the `_counters_` line being walked.
    counter_tracks: HashMap<(i64, i64), CounterTrack<'a>>,
    /// Counter tracks made on the plane so far: the next one's number.
    counter_count: u64,
    metadata: EventMetadata<'a>,
}

impl<'a, 't> PlaneWalk<'a, 't> {
    pub(super) fn new(
        origin: Origin,
        flows: &'t FlowIndex,
        process: &Process<'a>,
        tids: &'t mut Tids,
        walk_flows: &'t mut FlowWalk,
    ) -> Self {
        let plane = process.plane;
        let links = LinkStats::of(plane);
        let category = if plane.name.starts_with("/host:") {
            "host"
        } else if links.is_device {
            "device"
        } else {
            &plane.name
        };
        PlaneWalk {
            origin,
            flows,
            plane,
            pid: process.pid,
            category,
            stat_names: StatNames::of(plane),
            links,
            tids,
            walk_flows,
            counter_tracks: HashMap::new(),
            counter_count: 0,
            metadata: EventMetadata::of(plane),
        }
    }

    /// The event metadata with id `id`, if the plane has one.
    #[inline]
    fn metadata(&self, id: i64) -> Option<&'a XEventMetadata> {
        self.metadata.get(id)
    }

    /// The thread id of lane `lane` of `line`: the line's (display) id truncated to 32
    /// bits, as XProf truncates it, unless another line or lane took it.
    fn tid(&mut self, line: &XLine, lane: usize) -> u32 {
        let wanted = if line.display_id != 0 {
            line.display_id
        } else {
            line.id
        } as u32;
        if lane == 0 {
            self.tids.line(wanted)
        } else {
            self.tids.fresh()
        }
    }

    pub(super) fn line<V: Visitor<'a>>(
        &mut self,
        line: &'a XLine,
        events: Events<'a>,
        visitor: &mut V,
        totals: &mut Totals,
        seq: &mut u64,
    ) -> Result<(), V::Error> {
        let name: Cow<'a, str> = if !line.display_name.is_empty() {
            Cow::Borrowed(&line.display_name)
        } else if !line.name.is_empty() {
            Cow::Borrowed(&line.name)
        } else {
            Cow::Owned(format!("Line {}", line.id))
        };
        let mut lanes = Lanes::new(self.pid, line.id, name);
        let base = self.origin.line_start_ps(line);
        timed(base, events, |start, event| {
            self.slice(line, &mut lanes, (start, event), visitor, totals, seq)
        })?;
        lanes.close_until(i64::MAX, visitor)
    }

    /// Places one event of `line` on its lane and hands it to the visitor.
    fn slice<V: Visitor<'a>>(
        &mut self,
        line: &'a XLine,
        lanes: &mut Lanes<'a>,
        (start, event): (i64, &XEvent),
        visitor: &mut V,
        totals: &mut Totals,
        seq: &mut u64,
    ) -> Result<(), V::Error> {
        let end = start.saturating_add(event.duration_ps.max(0));
        lanes.close_until(start, visitor)?;
        let lane = match lanes.fitting(end) {
            Some(n) => n,
            None => {
                let tid = self.tid(line, lanes.len());
                let n = lanes.add(tid);
                visitor.thread(lanes.thread(n))?;
                totals.threads += 1;
                n
            }
        };
        let innermost = lanes.innermost(lane);
        let parent = innermost.map(|(_, s, _)| s);
        // Every open slice knows the outermost one of its lane.
        let root = innermost.map_or(*seq, |(_, _, r)| r);
        self.walk_flows.visit(self.flows, &self.links, event);
        let (flows_out, flows_in) = self.walk_flows.ids();
        let metadata = self.metadata(event.metadata_id);
        let name = metadata.map(|m| {
            if m.display_name.is_empty() {
                &m.name
            } else {
                &m.display_name
            }
        });
        let name = match name {
            Some(name) if !name.is_empty() => Cow::Borrowed(name.as_str()),
            // Other producers leave names out; viewers need one (the DevTools engine
            // fails on a nameless event).
            _ => Cow::Owned(format!("Event {}", event.metadata_id)),
        };
        let slice = Slice {
            thread: lanes.thread(lane),
            name,
            category: self.category,
            start_ps: start,
            duration_ps: end - start,
            seq: *seq,
            parent,
            root,
            flows_out,
            flows_in,
            stats: [&event.stats, metadata.map_or(&[][..], |m| &m.stats)],
            plane: self.plane,
            stat_names: &self.stat_names,
        };
        visitor.slice(&slice)?;
        totals.slices += 1;
        totals.duration_ps += i128::from(end - start);
        if end > start {
            lanes.open(lane, (end, *seq, root));
        }
        *seq += 1;
        Ok(())
    }

    pub(super) fn counters<V: Visitor<'a>>(
        &mut self,
        line: &'a XLine,
        events: Events<'a>,
        visitor: &mut V,
        totals: &mut Totals,
    ) -> Result<(), V::Error> {
        // Each `_counters_` line's series are tracks of their own: with two on a plane
        // (XProf's have one), a track shared by both would go back in time where the
        // second line starts.
        self.counter_tracks.clear();
        let base = self.origin.line_start_ps(line);
        timed(base, events, |at, event| {
            self.samples(at, event, visitor, totals)
        })
    }

    /// The numeric stats of one event of the `_counters_` line, as samples.
    fn samples<V: Visitor<'a>>(
        &mut self,
        at: i64,
        event: &XEvent,
        visitor: &mut V,
        totals: &mut Totals,
    ) -> Result<(), V::Error> {
        for stat in &event.stats {
            let Some(value) = stat.value.as_ref().map(|v| Arg::of(self.plane, v)) else {
                continue;
            };
            if value.as_f64().is_none() {
                continue;
            }
            let key = (event.metadata_id, stat.metadata_id);
            if !self.counter_tracks.contains_key(&key) {
                let counter = match self.plane.event_name(event.metadata_id) {
                    Some(name) if !name.is_empty() => Cow::Borrowed(name),
                    _ => Cow::Owned(format!("Counter {}", event.metadata_id)),
                };
                let series = self
                    .plane
                    .stat_name(stat.metadata_id)
                    .unwrap_or(schema::COUNTER_VALUE);
                let index = self.counter_count;
                self.counter_count += 1;
                let track = CounterTrack {
                    pid: self.pid,
                    name: if series == schema::COUNTER_VALUE {
                        counter
                    } else {
                        Cow::Owned(format!("{counter} {series}"))
                    },
                    series,
                    key: 1 << 63 | u64::from(self.pid) << 32 | index,
                };
                visitor.counter_track(&track)?;
                self.counter_tracks.insert(key, track);
            }
            visitor.counter(&self.counter_tracks[&key], at, value)?;
            totals.counter_samples += 1;
        }
        Ok(())
    }
}

/// Thread ids handed out so far: the lines' own, and a range of fresh ones counted up
/// from 2^30 (above real thread ids and streams), so that a line overlapping itself
/// a million times records no id per lane.
#[derive(Default)]
pub(super) struct Tids {
    lines: HashSet<u32>,
    /// The next fresh id; every id from [`FRESH_TIDS`] to it is taken.
    next: u32,
}

/// The first fresh thread id.
const FRESH_TIDS: u32 = 0x4000_0000;

impl Tids {
    fn is_taken(&self, tid: u32) -> bool {
        self.lines.contains(&tid) || (FRESH_TIDS..self.next).contains(&tid)
    }

    /// `wanted` (a line's own id) if no line or lane has it yet, else a fresh one.
    fn line(&mut self, wanted: u32) -> u32 {
        if self.is_taken(wanted) {
            self.fresh()
        } else {
            self.lines.insert(wanted);
            wanted
        }
    }

    /// An id no line or lane uses.
    fn fresh(&mut self) -> u32 {
        self.next = self.next.max(FRESH_TIDS);
        while self.lines.contains(&self.next) {
            self.next += 1;
        }
        let tid = self.next;
        self.next += 1;
        tid
    }
}

/// Calls `f` with `events` in XProf's order (offset, then longest first) and their
/// start in picoseconds from the origin, `base` being their line's start; aggregated
/// events have no place on a timeline and are left out.
fn timed<E>(
    base: i64,
    events: Events<'_>,
    mut f: impl FnMut(i64, &XEvent) -> Result<(), E>,
) -> Result<(), E> {
    events.for_each(true, |event| match event.data() {
        XEventData::OffsetPs(offset) => f(base.saturating_add(offset), event),
        XEventData::NumOccurrences(_) => Ok(()),
    })
}
