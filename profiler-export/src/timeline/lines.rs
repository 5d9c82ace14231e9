//! A plane's lines as threads: lanes that keep slices nested, thread ids, and the
//! counter tracks of the `_counters_` line.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XEventData, XLine, XPlane};

use super::flows::LinkStats;
use super::lanes::Lanes;
use super::{Arg, CounterTrack, Process, Slice, Thread, Timeline, Totals, Visitor, LINK_STATS};

/// Per-plane state of the walk.
pub(super) struct PlaneWalk<'a, 't> {
    timeline: &'t Timeline<'a>,
    plane: &'a XPlane,
    pid: u32,
    category: &'a str,
    hidden: Vec<i64>,
    links: LinkStats,
    /// Shared by all planes of the walk.
    tids: &'t mut Tids,
    counter_tracks: HashMap<(i64, i64), CounterTrack<'a>>,
}

impl<'a, 't> PlaneWalk<'a, 't> {
    pub(super) fn new(
        timeline: &'t Timeline<'a>,
        process: &Process<'a>,
        tids: &'t mut Tids,
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
            timeline,
            plane,
            pid: process.pid,
            category,
            hidden: LINK_STATS.iter().filter_map(|n| plane.stat_id(n)).collect(),
            links,
            tids,
            counter_tracks: HashMap::new(),
        }
    }

    /// The line's events in XProf's order (offset, then longest first), with their
    /// start in picoseconds from the origin; aggregated events have no place on a
    /// timeline and are left out.
    fn timed(&self, line: &'a XLine) -> impl Iterator<Item = (i64, &'a XEvent)> {
        let base = self.timeline.origin.line_start_ps(line);
        let order = sorted_order(&line.events);
        (0..line.events.len()).filter_map(move |i| {
            let event = &line.events[order.as_ref().map_or(i, |o| o[i])];
            match event.data {
                Some(XEventData::OffsetPs(offset)) => Some((base.saturating_add(offset), event)),
                _ => None,
            }
        })
    }

    fn thread(&mut self, line: &'a XLine, lane: usize) -> Thread<'a> {
        let base: Cow<'a, str> = if line.display_name.is_empty() {
            Cow::Borrowed(&line.name)
        } else {
            Cow::Borrowed(&line.display_name)
        };
        let wanted = if line.display_id != 0 {
            line.display_id
        } else {
            line.id
        } as u32;
        let tid = if lane == 0 && self.tids.used.insert(wanted) {
            wanted
        } else {
            self.tids.fresh()
        };
        let name = match lane {
            0 => base,
            n => Cow::Owned(format!("{base} ({})", n + 1)),
        };
        Thread {
            pid: self.pid,
            tid,
            name,
            key: u64::from(self.pid) << 32 | u64::from(tid),
        }
    }

    pub(super) fn line<V: Visitor<'a>>(
        &mut self,
        line: &'a XLine,
        visitor: &mut V,
        totals: &mut Totals,
        seq: &mut u64,
    ) -> Result<(), V::Error> {
        let mut lanes = Lanes::default();
        for (start, event) in self.timed(line) {
            let end = start.saturating_add(event.duration_ps.max(0));
            lanes.close_until(start, visitor)?;
            let lane = match lanes.fitting(end) {
                Some(n) => n,
                None => {
                    let thread = self.thread(line, lanes.len());
                    visitor.thread(&thread)?;
                    totals.threads += 1;
                    lanes.add(thread)
                }
            };
            let open = &lanes.get(lane).open;
            let parent = open.last().map(|&(_, s, _)| s);
            let root = open.first().map_or(*seq, |&(_, _, r)| r);
            let (flows_out, flows_in) = self.timeline.flows.of(&self.links, event);
            let metadata = self.plane.event_metadata.get(&event.metadata_id);
            let name = metadata.map_or("unknown", |m| {
                if m.display_name.is_empty() {
                    &m.name
                } else {
                    &m.display_name
                }
            });
            let slice = Slice {
                thread: &lanes.get(lane).thread,
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
                hidden: &self.hidden,
            };
            visitor.slice(&slice)?;
            totals.slices += 1;
            totals.duration_ps += i128::from(end - start);
            if end > start {
                lanes.open(lane, (end, *seq, root));
            }
            *seq += 1;
        }
        lanes.close_until(i64::MAX, visitor)
    }

    pub(super) fn counters<V: Visitor<'a>>(
        &mut self,
        line: &'a XLine,
        visitor: &mut V,
        totals: &mut Totals,
    ) -> Result<(), V::Error> {
        for (at, event) in self.timed(line) {
            for stat in &event.stats {
                let Some(value) = stat.value.as_ref().map(|v| Arg::of(self.plane, v)) else {
                    continue;
                };
                if value.as_f64().is_none() {
                    continue;
                }
                let key = (event.metadata_id, stat.metadata_id);
                if !self.counter_tracks.contains_key(&key) {
                    let counter = self
                        .plane
                        .event_name(event.metadata_id)
                        .unwrap_or("counter");
                    let series = self
                        .plane
                        .stat_name(stat.metadata_id)
                        .unwrap_or(schema::COUNTER_VALUE);
                    let index = self.counter_tracks.len() as u64;
                    let track = CounterTrack {
                        pid: self.pid,
                        name: if series == schema::COUNTER_VALUE {
                            Cow::Borrowed(counter)
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
        }
        Ok(())
    }
}

/// Thread ids handed out so far.
#[derive(Default)]
pub(super) struct Tids {
    used: HashSet<u32>,
    next: u32,
}

impl Tids {
    /// An id no line uses: counting up from 2^30, above real thread ids and streams.
    fn fresh(&mut self) -> u32 {
        self.next = self.next.max(0x4000_0000);
        while !self.used.insert(self.next) {
            self.next += 1;
        }
        self.next
    }
}

/// `None` when events are already in XProf's order (the usual case, and no
/// allocation); otherwise the order to visit them in.
fn sorted_order(events: &[XEvent]) -> Option<Vec<usize>> {
    let key = |e: &XEvent| (e.offset_ps(), std::cmp::Reverse(e.duration_ps));
    if events.windows(2).all(|w| key(&w[0]) <= key(&w[1])) {
        return None;
    }
    let mut order: Vec<usize> = (0..events.len()).collect();
    order.sort_by_key(|&i| key(&events[i]));
    Some(order)
}
