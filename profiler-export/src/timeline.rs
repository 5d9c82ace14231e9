//! One walk over an [`XSpace`] in the shape every timeline format wants: processes,
//! threads, properly nested slices, counters and flows.
//!
//! Perfetto, Chrome JSON and OTLP all differ from XPlane in the same ways, so the
//! differences are settled here once and each exporter is a [`Visitor`]:
//!
//! - **Time.** XPlane lines are relative to the profile start (absolute nanoseconds
//!   overflow XProf's picosecond arithmetic); the wall-clock start lives on the
//!   `Task Environment` plane. Files whose lines are already absolute (older
//!   TensorFlow) are detected and rebased. Times handed to visitors are picoseconds
//!   from [`Origin::unix_ns`].
//! - **Nesting.** Begin/end formats need slices on one track to nest. Events that
//!   partially overlap an enclosing one (possible in files from other producers) move
//!   to an extra lane of the same line, shown as its own thread, instead of being
//!   clipped: no duration changes between formats.
//! - **Flows.** `_p`/`_c` producer/consumer links and `correlation_id` (a host launch
//!   and the device activity it started) become flow ids, only when both ends are
//!   slices (not instants) in the profile.
//! - **Counters.** Events on XProf's `_counters_` line are samples of counter tracks.
//!
//! The walk holds one stack per lane and the flow index; it never copies events, so
//! exporting costs memory for the output buffer only.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XEventData, XLine, XPlane, XSpace, XStat, XStatValue};

/// The line XProf reads counter samples from.
pub const COUNTERS_LINE: &str = schema::COUNTERS_LINE;

/// Stat linking a host launch to device activity (CUPTI's correlation id).
pub const CORRELATION_ID: &str = "correlation_id";

/// Stats that describe links rather than the event: they become flows, not arguments.
const LINK_STATS: [&str; 5] = [
    schema::PRODUCER_TYPE,
    schema::PRODUCER_ID,
    schema::CONSUMER_TYPE,
    schema::CONSUMER_ID,
    schema::IS_ROOT,
];

/// Line timestamps at or past this (about 1973 in Unix nanoseconds) are absolute.
const ABSOLUTE_NS: i64 = 100_000_000_000_000_000;

/// Where the timeline starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Wall-clock time of picosecond 0, in nanoseconds since the Unix epoch (0 when the
    /// file records no wall-clock start).
    pub unix_ns: i64,
    /// Subtracted from every line's `timestamp_ns` to rebase it on the origin.
    line_base_ns: i64,
}

impl Origin {
    /// The origin of `space`: its `profile_start_time` when lines are relative to it,
    /// the earliest line start when lines are absolute.
    pub fn of(space: &XSpace) -> Origin {
        let first_line = space
            .planes
            .iter()
            .flat_map(|p| &p.lines)
            .filter(|l| !l.events.is_empty())
            .map(|l| l.timestamp_ns)
            .min()
            .unwrap_or(0);
        if first_line >= ABSOLUTE_NS {
            return Origin {
                unix_ns: first_line,
                line_base_ns: first_line,
            };
        }
        let start = space
            .plane(schema::TASK_ENV_PLANE)
            .and_then(|p| p.find_stat(&p.stats, schema::PROFILE_START_TIME))
            .and_then(|v| match v {
                XStatValue::Uint64(n) => i64::try_from(*n).ok(),
                XStatValue::Int64(n) => Some(*n),
                _ => None,
            })
            .unwrap_or(0);
        Origin {
            unix_ns: start,
            line_base_ns: 0,
        }
    }

    /// Nanoseconds since the Unix epoch of `ps` picoseconds from the origin.
    pub fn to_unix_ns(&self, ps: i64) -> i64 {
        self.unix_ns.saturating_add(ps.div_euclid(1000))
    }
}

/// A plane shown as a process.
#[derive(Debug)]
pub struct Process<'a> {
    /// Process id in the exported trace: the plane's position, from 1.
    pub pid: u32,
    /// The plane's name (`/host:CPU`, `/device:GPU:0`).
    pub name: &'a str,
    /// The plane.
    pub plane: &'a XPlane,
}

/// A line (or an extra lane of one) shown as a thread.
#[derive(Clone, Debug)]
pub struct Thread<'a> {
    /// The process it belongs to.
    pub pid: u32,
    /// Thread id, unique within the process: the line's (display) id truncated to 32
    /// bits as XProf truncates it, or a fresh id for extra lanes and clashes.
    pub tid: u32,
    /// The line's (display) name; extra lanes get ` (2)`, ` (3)`, ….
    pub name: Cow<'a, str>,
    /// Unique across the timeline: `pid << 32 | tid`.
    pub key: u64,
}

/// One event: a slice with a duration, or an instant when `duration_ps` is 0.
#[derive(Debug)]
pub struct Slice<'a, 'b> {
    /// The thread (lane) it is on.
    pub thread: &'b Thread<'a>,
    /// Event name.
    pub name: &'a str,
    /// Category: `host`, `device` or the plane name.
    pub category: &'a str,
    /// Picoseconds from the origin.
    pub start_ps: i64,
    /// Picoseconds.
    pub duration_ps: i64,
    /// Position in the walk, unique across the timeline.
    pub seq: u64,
    /// The enclosing slice on the same lane, if any.
    pub parent: Option<u64>,
    /// The outermost slice enclosing this one (itself when it has no parent).
    pub root: u64,
    /// Flows that start at this slice.
    pub flows_out: FlowIds,
    /// Flows that end at this slice.
    pub flows_in: FlowIds,
    stats: [&'a [XStat]; 2],
    plane: &'a XPlane,
    hidden: &'b [i64],
}

impl<'a> Slice<'a, '_> {
    /// The event's arguments: its stats, then its metadata's, without link stats.
    pub fn args(&self) -> impl Iterator<Item = (&'a str, Arg<'a>)> + '_ {
        let plane = self.plane;
        self.stats
            .into_iter()
            .flatten()
            .filter(|s| !self.hidden.contains(&s.metadata_id))
            .filter_map(move |s| {
                let name = plane.stat_name(s.metadata_id)?;
                Some((name, Arg::of(plane, s.value.as_ref()?)))
            })
    }

    /// Whether the event is an instant (zero duration).
    pub fn is_instant(&self) -> bool {
        self.duration_ps == 0
    }
}

/// An argument value, borrowed from the space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<'a> {
    /// Signed integer.
    Int(i64),
    /// Unsigned integer.
    Uint(u64),
    /// Floating point.
    Double(f64),
    /// Text (a string stat, or a stat referring to an interned name).
    Str(&'a str),
    /// Raw bytes.
    Bytes(&'a [u8]),
}

impl<'a> Arg<'a> {
    fn of(plane: &'a XPlane, value: &'a XStatValue) -> Arg<'a> {
        match value {
            XStatValue::Int64(v) => Arg::Int(*v),
            XStatValue::Uint64(v) => Arg::Uint(*v),
            XStatValue::Double(v) => Arg::Double(*v),
            XStatValue::Str(s) => Arg::Str(s),
            XStatValue::Bytes(b) => Arg::Bytes(b),
            XStatValue::Ref(id) => Arg::Str(
                i64::try_from(*id)
                    .ok()
                    .and_then(|id| plane.stat_name(id))
                    .unwrap_or(""),
            ),
        }
    }

    /// The value as a number, for counters.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Arg::Int(v) => Some(v as f64),
            Arg::Uint(v) => Some(v as f64),
            Arg::Double(v) => Some(v),
            Arg::Str(_) | Arg::Bytes(_) => None,
        }
    }
}

/// Up to two flow ids (an event can continue one link and start the next, or be both a
/// link and a launch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowIds {
    ids: [u64; 2],
    len: u8,
}

impl FlowIds {
    fn push(&mut self, id: u64) {
        if usize::from(self.len) < self.ids.len() && !self.as_slice().contains(&id) {
            self.ids[usize::from(self.len)] = id;
            self.len += 1;
        }
    }

    /// The ids.
    pub fn as_slice(&self) -> &[u64] {
        &self.ids[..usize::from(self.len)]
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A counter track: one numeric stat of one counter name on a plane.
#[derive(Clone, Debug)]
pub struct CounterTrack<'a> {
    /// The process it belongs to.
    pub pid: u32,
    /// Track name: the counter's name, or `name stat` when the stat is not `value`.
    pub name: Cow<'a, str>,
    /// The stat's name (the series).
    pub series: &'a str,
    /// Unique across the timeline, never equal to a process or thread key.
    pub key: u64,
}

/// What an exporter does with each part of the walk. Calls come in this order: a
/// process before its threads and counter tracks, a thread before its slices, a slice's
/// `slice_end` after its children's; `slice_end` is not called for instants.
pub trait Visitor<'a> {
    /// The error the visitor's output can fail with.
    type Error;

    /// A plane, as a process.
    ///
    /// # Errors
    /// The visitor's output error.
    fn process(&mut self, process: &Process<'a>) -> Result<(), Self::Error>;
    /// A line or lane, as a thread, before its first slice.
    ///
    /// # Errors
    /// The visitor's output error.
    fn thread(&mut self, thread: &Thread<'a>) -> Result<(), Self::Error>;
    /// A slice starts (or an instant happens).
    ///
    /// # Errors
    /// The visitor's output error.
    fn slice(&mut self, slice: &Slice<'a, '_>) -> Result<(), Self::Error>;
    /// The innermost open slice of `thread` ends.
    ///
    /// # Errors
    /// The visitor's output error.
    fn slice_end(&mut self, thread: &Thread<'a>, end_ps: i64) -> Result<(), Self::Error>;
    /// A counter track, before its first sample.
    ///
    /// # Errors
    /// The visitor's output error.
    fn counter_track(&mut self, track: &CounterTrack<'a>) -> Result<(), Self::Error>;
    /// A counter sample.
    ///
    /// # Errors
    /// The visitor's output error.
    fn counter(
        &mut self,
        track: &CounterTrack<'a>,
        at_ps: i64,
        value: Arg<'a>,
    ) -> Result<(), Self::Error>;
}

/// Totals of one walk: what each format must agree on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Slices and instants.
    pub slices: u64,
    /// Sum of slice durations, in picoseconds.
    pub duration_ps: i128,
    /// Counter samples.
    pub counter_samples: u64,
    /// Flows with both ends.
    pub flows: u64,
    /// Lines or lanes shown as threads.
    pub threads: u64,
}

/// A walk over one space.
#[derive(Debug)]
pub struct Timeline<'a> {
    space: &'a XSpace,
    origin: Origin,
    flows: FlowIndex,
}

impl<'a> Timeline<'a> {
    /// Prepares a walk over `space`: finds its origin and which flows have both ends.
    pub fn new(space: &'a XSpace) -> Timeline<'a> {
        Timeline {
            space,
            origin: Origin::of(space),
            flows: FlowIndex::build(space),
        }
    }

    /// Where the timeline's picosecond 0 is.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The space walked.
    pub fn space(&self) -> &'a XSpace {
        self.space
    }

    /// Host name of the space.
    pub fn host_name(&self) -> &'a str {
        self.space
            .hostnames
            .first()
            .map_or("localhost", String::as_str)
    }

    /// Walks every exported plane (all but `Task Environment`) through `visitor`.
    ///
    /// # Errors
    /// The first error the visitor returns; the walk stops there.
    pub fn walk<V: Visitor<'a>>(&self, visitor: &mut V) -> Result<Totals, V::Error> {
        let mut totals = Totals {
            flows: self.flows.matched.len() as u64,
            ..Totals::default()
        };
        let mut seq = 0u64;
        // Thread ids are unique across planes, not only within one: Perfetto treats a
        // tid as system-wide and would merge a GPU stream with a host thread of the
        // same number.
        let mut tids = Tids::default();
        let planes = self.space.planes.iter().filter(|p| {
            p.name != schema::TASK_ENV_PLANE && p.lines.iter().any(|l| !l.events.is_empty())
        });
        for (index, plane) in planes.enumerate() {
            let process = Process {
                pid: index as u32 + 1,
                name: &plane.name,
                plane,
            };
            visitor.process(&process)?;
            let mut walk = PlaneWalk::new(self, &process);
            walk.tids = std::mem::take(&mut tids);
            for line in &plane.lines {
                if line.name == COUNTERS_LINE {
                    walk.counters(line, visitor, &mut totals)?;
                } else {
                    walk.line(line, visitor, &mut totals, &mut seq)?;
                }
            }
            tids = walk.tids;
        }
        Ok(totals)
    }
}

/// Per-plane state of the walk.
struct PlaneWalk<'a, 't> {
    timeline: &'t Timeline<'a>,
    plane: &'a XPlane,
    pid: u32,
    category: &'a str,
    hidden: Vec<i64>,
    producer: Option<i64>,
    producer_type: Option<i64>,
    consumer: Option<i64>,
    consumer_type: Option<i64>,
    correlation: Option<i64>,
    is_device: bool,
    tids: Tids,
    counter_tracks: HashMap<(i64, i64), CounterTrack<'a>>,
}

impl<'a, 't> PlaneWalk<'a, 't> {
    fn new(timeline: &'t Timeline<'a>, process: &Process<'a>) -> Self {
        let plane = process.plane;
        let ids = |names: &[&str]| -> Vec<i64> {
            names.iter().filter_map(|n| plane.stat_id(n)).collect()
        };
        let is_device = plane.name.starts_with("/device:");
        let category = if plane.name.starts_with("/host:") {
            "host"
        } else if is_device {
            "device"
        } else {
            &plane.name
        };
        PlaneWalk {
            timeline,
            plane,
            pid: process.pid,
            category,
            hidden: ids(&LINK_STATS),
            producer: plane.stat_id(schema::PRODUCER_ID),
            producer_type: plane.stat_id(schema::PRODUCER_TYPE),
            consumer: plane.stat_id(schema::CONSUMER_ID),
            consumer_type: plane.stat_id(schema::CONSUMER_TYPE),
            correlation: plane.stat_id(CORRELATION_ID),
            is_device,
            tids: Tids::default(),
            counter_tracks: HashMap::new(),
        }
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

    fn flows(&self, event: &XEvent) -> (FlowIds, FlowIds) {
        let mut out = FlowIds::default();
        let mut inn = FlowIds::default();
        let matched = &self.timeline.flows.matched;
        if matched.is_empty() || event.duration_ps <= 0 {
            return (out, inn);
        }
        for link in links(self, event) {
            let id = link.id();
            if matched.contains(&id) {
                if link.producer {
                    out.push(id);
                } else {
                    inn.push(id);
                }
            }
        }
        (out, inn)
    }

    fn line<V: Visitor<'a>>(
        &mut self,
        line: &'a XLine,
        visitor: &mut V,
        totals: &mut Totals,
        seq: &mut u64,
    ) -> Result<(), V::Error> {
        let base_ps = (line.timestamp_ns - self.timeline.origin.line_base_ns).saturating_mul(1000);
        let order = sorted_order(&line.events);
        let mut lanes: Vec<Lane<'a>> = Vec::new();
        let event_at = |i: usize| &line.events[order.as_ref().map_or(i, |o| o[i])];
        for i in 0..line.events.len() {
            let event = event_at(i);
            let Some(XEventData::OffsetPs(offset)) = event.data else {
                continue; // aggregated events have no place on a timeline
            };
            let start = base_ps.saturating_add(offset);
            let end = start.saturating_add(event.duration_ps.max(0));
            for lane in &mut lanes {
                lane.close_until(start, visitor)?;
            }
            let lane = match lanes.iter().position(|l| l.fits(end)) {
                Some(n) => n,
                None => {
                    let thread = self.thread(line, lanes.len());
                    visitor.thread(&thread)?;
                    totals.threads += 1;
                    lanes.push(Lane {
                        thread,
                        open: Vec::new(),
                    });
                    lanes.len() - 1
                }
            };
            let lane = &mut lanes[lane];
            let (flows_out, flows_in) = self.flows(event);
            let parent = lane.open.last().map(|&(_, s, _)| s);
            let root = lane.open.first().map_or(*seq, |&(_, _, r)| r);
            let metadata = self.plane.event_metadata.get(&event.metadata_id);
            let name = metadata.map_or("unknown", |m| {
                if m.display_name.is_empty() {
                    &m.name
                } else {
                    &m.display_name
                }
            });
            let slice = Slice {
                thread: &lane.thread,
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
                lane.open.push((end, *seq, root));
            }
            *seq += 1;
        }
        for lane in &mut lanes {
            lane.close_until(i64::MAX, visitor)?;
        }
        Ok(())
    }

    fn counters<V: Visitor<'a>>(
        &mut self,
        line: &'a XLine,
        visitor: &mut V,
        totals: &mut Totals,
    ) -> Result<(), V::Error> {
        let base_ps = (line.timestamp_ns - self.timeline.origin.line_base_ns).saturating_mul(1000);
        let order = sorted_order(&line.events);
        for i in 0..line.events.len() {
            let event = &line.events[order.as_ref().map_or(i, |o| o[i])];
            let Some(XEventData::OffsetPs(offset)) = event.data else {
                continue;
            };
            let at = base_ps.saturating_add(offset);
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
                    let series = self.plane.stat_name(stat.metadata_id).unwrap_or("value");
                    let index = self.counter_tracks.len() as u64;
                    let track = CounterTrack {
                        pid: self.pid,
                        name: if series == "value" {
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
struct Tids {
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

/// One lane of a line: its thread and the ends of the slices open on it.
struct Lane<'a> {
    thread: Thread<'a>,
    /// (end ps, seq, root seq) of each open slice, outermost first.
    open: Vec<(i64, u64, u64)>,
}

impl<'a> Lane<'a> {
    /// Whether a slice ending at `end` nests inside what is open here.
    fn fits(&self, end: i64) -> bool {
        self.open.last().is_none_or(|&(top, _, _)| end <= top)
    }

    fn close_until<V: Visitor<'a>>(&mut self, t: i64, visitor: &mut V) -> Result<(), V::Error> {
        while let Some(&(end, _, _)) = self.open.last() {
            if end > t {
                break;
            }
            self.open.pop();
            visitor.slice_end(&self.thread, end)?;
        }
        Ok(())
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

/// One end of a link found on an event.
struct Link {
    kind: u64,
    id: u64,
    producer: bool,
}

impl Link {
    /// The flow id both ends share: a mix of the link's kind and id, so producer ids
    /// and correlation ids never collide.
    fn id(&self) -> u64 {
        let mut z = self.id ^ self.kind.rotate_right(8);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) | 1
    }
}

const KIND_CORRELATION: u64 = 1 << 40;

fn links<'e>(walk: &PlaneWalk<'_, '_>, event: &'e XEvent) -> impl Iterator<Item = Link> + 'e {
    let int = |id: Option<i64>| {
        id.and_then(|id| event.stats.iter().find(|s| s.metadata_id == id))
            .and_then(|s| match s.value {
                Some(XStatValue::Int64(v)) => Some(v as u64),
                Some(XStatValue::Uint64(v)) => Some(v),
                _ => None,
            })
    };
    let producer = int(walk.producer).map(|id| Link {
        kind: int(walk.producer_type).unwrap_or(0) & 0xff,
        id,
        producer: true,
    });
    let consumer = int(walk.consumer).map(|id| Link {
        kind: int(walk.consumer_type).unwrap_or(0) & 0xff,
        id,
        producer: false,
    });
    // A launch on the host starts the flow; the kernel or copy on the device ends it.
    let correlation = int(walk.correlation).map(|id| Link {
        kind: KIND_CORRELATION,
        id,
        producer: !walk.is_device,
    });
    producer.into_iter().chain(consumer).chain(correlation)
}

/// Which flow ids have both ends in the space.
#[derive(Debug, Default)]
struct FlowIndex {
    matched: HashSet<u64>,
}

impl FlowIndex {
    fn build(space: &XSpace) -> FlowIndex {
        let mut producers = HashSet::new();
        let mut consumers = HashSet::new();
        let timeline = Timeline {
            space,
            origin: Origin::of(space),
            flows: FlowIndex::default(),
        };
        for (index, plane) in space.planes.iter().enumerate() {
            let process = Process {
                pid: index as u32 + 1,
                name: &plane.name,
                plane,
            };
            let walk = PlaneWalk::new(&timeline, &process);
            if walk.producer.is_none() && walk.consumer.is_none() && walk.correlation.is_none() {
                continue;
            }
            // Flows join slices: an instant has no extent for a viewer to attach an
            // arrow's end to (Chrome's `"bp":"e"` binds to an enclosing slice).
            let slices = plane.lines.iter().flat_map(|l| &l.events);
            for event in slices.filter(|e| e.duration_ps > 0) {
                for link in links(&walk, event) {
                    if link.producer {
                        producers.insert(link.id());
                    } else {
                        consumers.insert(link.id());
                    }
                }
            }
        }
        producers.retain(|id| consumers.contains(id));
        FlowIndex { matched: producers }
    }
}
