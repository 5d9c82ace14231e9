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
//! exporting costs memory for the output buffer only. It walks a decoded space
//! ([`Timeline::new`]) or one whose events stay encoded until walked
//! ([`Timeline::lazy`], for converting files).
//!
//! `lines` walks a plane's lines into threads and counter tracks, `lanes` places each
//! slice on a lane in O(log lanes); `flows` finds the links and which have both ends;
//! `names` indexes the plane's metadata by id for the lookups made per slice.

mod events;
mod flows;
mod lanes;
mod lines;
mod names;

use std::borrow::Cow;

use profiler_core::schema;
use profiler_core::xspace::{XLine, XPlane, XSpace, XStat, XStatValue};

use crate::xplane::LazySpace;

use events::Source;
#[cfg(feature = "otlp")]
pub(crate) use flows::mix;
pub use flows::FlowIds;
use flows::{FlowIndex, FlowWalk};
use lines::{PlaneWalk, Tids};

/// The line XProf reads counter samples from.
pub const COUNTERS_LINE: &str = schema::COUNTERS_LINE;

/// Stat linking a host launch to device activity (CUPTI's correlation id).
pub const CORRELATION_ID: &str = schema::CORRELATION_ID;

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

/// Recorded starts at or past this (about 2096) are not believed: a hostile or broken
/// file's start would put every timestamp past what `u64` nanoseconds hold.
const LATEST_START_NS: i64 = 4_000_000_000_000_000_000;

/// Where a timeline with no recorded wall-clock start is placed when nothing better
/// is known: 2020-01-01 00:00:00 UTC. Perfetto's timestamps must be Unix-epoch
/// nanoseconds (its checkers refuse a trace near 0), and a converted file is placed
/// at its modification time instead (see [`Timeline::or_start_at`]).
pub const NO_CLOCK_UNIX_NS: i64 = 1_577_836_800_000_000_000;

/// Where the timeline starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Wall-clock time of picosecond 0, in nanoseconds since the Unix epoch: the
    /// recorded start, or a stand-in when the file records none
    /// ([`Origin::is_recorded`]).
    pub unix_ns: i64,
    /// Subtracted from every line's `timestamp_ns` to rebase it on the origin.
    line_base_ns: i64,
    recorded: bool,
}

impl Origin {
    /// The origin of `space`: its `profile_start_time` when lines are relative to it,
    /// the earliest line start when lines are absolute, else [`NO_CLOCK_UNIX_NS`].
    pub fn of(space: &XSpace) -> Origin {
        Origin::find(&Source::decoded(space))
    }

    fn find(source: &Source<'_>) -> Origin {
        let space = source.space;
        let lines = space.planes.iter().enumerate().flat_map(|(p, plane)| {
            plane
                .lines
                .iter()
                .enumerate()
                .map(move |(l, line)| (p, l, line))
        });
        let first_line = lines
            .filter(|&(p, l, _)| !source.events(p, l).is_empty())
            .map(|(_, _, line)| line.timestamp_ns)
            .min()
            .unwrap_or(0);
        if (ABSOLUTE_NS..LATEST_START_NS).contains(&first_line) {
            return Origin {
                unix_ns: first_line,
                line_base_ns: first_line,
                recorded: true,
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
            .filter(|start| (ABSOLUTE_NS..LATEST_START_NS).contains(start));
        Origin {
            unix_ns: start.unwrap_or(NO_CLOCK_UNIX_NS),
            line_base_ns: 0,
            recorded: start.is_some(),
        }
    }

    /// Whether the space records its wall-clock start; otherwise [`Origin::unix_ns`]
    /// is a stand-in.
    pub fn is_recorded(&self) -> bool {
        self.recorded
    }

    /// Nanoseconds since the Unix epoch of `ps` picoseconds from the origin.
    pub fn to_unix_ns(&self, ps: i64) -> i64 {
        self.unix_ns.saturating_add(ps.div_euclid(1000))
    }

    /// Where `line` starts, in picoseconds from the origin.
    fn line_start_ps(&self, line: &XLine) -> i64 {
        // Saturating: the base is the earliest line with events, and an empty line of
        // another producer's file may lie anywhere.
        line.timestamp_ns
            .saturating_sub(self.line_base_ns)
            .saturating_mul(1000)
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
    /// The line's (display) name, `Line <id>` when the file gives none; extra lanes get
    /// ` (2)`, ` (3)`, ….
    pub name: Cow<'a, str>,
    /// Unique across the timeline: `pid << 32 | tid`.
    pub key: u64,
    /// 0 for the line itself, `n` for its `n`th extra lane. A thread with lane 0 is
    /// announced before any lane of its line, and after every slice of the lines
    /// walked before it: a visitor may let go of what it kept per thread then.
    pub lane: u32,
}

/// One event: a slice with a duration, or an instant when `duration_ps` is 0.
#[derive(Debug)]
pub struct Slice<'a, 'b> {
    /// The thread (lane) it is on.
    pub thread: &'b Thread<'a>,
    /// Event name (`Event <metadata id>` when the file gives none).
    pub name: Cow<'a, str>,
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
    /// Flows that start at this slice: one per consumer it produces for.
    pub flows_out: FlowIds<'b>,
    /// Flows that end at this slice.
    pub flows_in: FlowIds<'b>,
    /// The event's stats, then its metadata's (the event may be decoded only for this
    /// call, hence `'b`).
    stats: [&'b [XStat]; 2],
    plane: &'a XPlane,
    stat_names: &'b names::StatNames<'a>,
}

impl<'a, 'b> Slice<'a, 'b> {
    /// The event's arguments: its stats, then its metadata's, without link stats.
    pub fn args(&self) -> impl Iterator<Item = (&'a str, Arg<'b>)> + '_ {
        let (plane, names) = (self.plane, self.stat_names);
        self.stats.into_iter().flatten().filter_map(move |s| {
            let name = names.get(s.metadata_id)?;
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

impl<'v> Arg<'v> {
    fn of(plane: &'v XPlane, value: &'v XStatValue) -> Arg<'v> {
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

/// A counter track: one numeric stat of one counter name on a plane.
#[derive(Clone, Debug)]
pub struct CounterTrack<'a> {
    /// The process it belongs to.
    pub pid: u32,
    /// Track name: the counter's name (`Counter <metadata id>` when the file gives
    /// none), or `name stat` when the stat is not `value`.
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
    /// A counter sample (its value may borrow an event decoded only for this call).
    ///
    /// # Errors
    /// The visitor's output error.
    fn counter(
        &mut self,
        track: &CounterTrack<'a>,
        at_ps: i64,
        value: Arg<'_>,
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
    /// Flows with both ends: one per (producer, consumer) pair.
    pub flows: u64,
    /// Lines or lanes shown as threads.
    pub threads: u64,
}

/// A walk over one space.
#[derive(Debug)]
pub struct Timeline<'a> {
    source: Source<'a>,
    origin: Origin,
    flows: FlowIndex,
}

impl<'a> Timeline<'a> {
    /// Prepares a walk over `space`: finds its origin and which flows have both ends.
    pub fn new(space: &'a XSpace) -> Timeline<'a> {
        Timeline::of(Source::decoded(space))
    }

    /// Prepares a walk over a space read by [`crate::xplane::read_lazy`], whose events
    /// are decoded one at a time as they are walked.
    pub fn lazy(space: &'a LazySpace) -> Timeline<'a> {
        Timeline::of(Source::lazy(space))
    }

    fn of(source: Source<'a>) -> Timeline<'a> {
        let origin = Origin::find(&source);
        Timeline {
            source,
            origin,
            flows: FlowIndex::build(&source, &origin),
        }
    }

    /// Where the timeline's picosecond 0 is.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Places a timeline whose space records no wall-clock start at `unix_ns`
    /// (a converted file's modification time, say); one that records its start keeps
    /// it.
    pub fn or_start_at(mut self, unix_ns: i64) -> Timeline<'a> {
        if !self.origin.recorded && (ABSOLUTE_NS..LATEST_START_NS).contains(&unix_ns) {
            self.origin.unix_ns = unix_ns;
        }
        self
    }

    /// The space walked.
    pub fn space(&self) -> &'a XSpace {
        self.source.space
    }

    /// Host name of the space.
    pub fn host_name(&self) -> &'a str {
        self.source
            .space
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
            flows: self.flows.len(),
            ..Totals::default()
        };
        let mut flows = FlowWalk::default();
        let mut seq = 0u64;
        // Thread ids are unique across planes, not only within one: Perfetto treats a
        // tid as system-wide and would merge a GPU stream with a host thread of the
        // same number.
        let mut tids = Tids::default();
        let planes = self.source.space.planes.iter().enumerate();
        let planes = planes.filter(|&(p, plane)| {
            plane.name != schema::TASK_ENV_PLANE && self.source.has_events(p)
        });
        for (index, (p, plane)) in planes.enumerate() {
            let process = Process {
                pid: index as u32 + 1,
                name: &plane.name,
                plane,
            };
            visitor.process(&process)?;
            let mut walk = PlaneWalk::new(self, &process, &mut tids, &mut flows);
            for (l, line) in plane.lines.iter().enumerate() {
                let events = self.source.events(p, l);
                if line.name == COUNTERS_LINE {
                    walk.counters(line, events, visitor, &mut totals)?;
                } else {
                    walk.line(line, events, visitor, &mut totals, &mut seq)?;
                }
            }
        }
        Ok(totals)
    }
}
