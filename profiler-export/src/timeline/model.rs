//! What a timeline walk hands its visitor: processes, threads, slices with their
//! arguments, counter tracks, and the totals every format must agree on.

use std::borrow::Cow;

use profiler_core::xspace::{XPlane, XStat, XStatValue};

use super::flows::FlowIds;
use super::names;

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
    /// The id of the line it shows, in its plane.
    pub line_id: i64,
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
    pub(super) stats: [&'b [XStat]; 2],
    pub(super) plane: &'a XPlane,
    pub(super) stat_names: &'b names::StatNames<'a>,
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
    pub(super) fn of(plane: &'v XPlane, value: &'v XStatValue) -> Arg<'v> {
        match value {
            XStatValue::Int64(v) => Arg::Int(*v),
            XStatValue::Uint64(v) => Arg::Uint(*v),
            XStatValue::Double(v) => Arg::Double(*v),
            XStatValue::Str(s) => Arg::Str(s),
            XStatValue::Bytes(b) => Arg::Bytes(b),
            XStatValue::Ref(_) => Arg::Str(plane.text_of(value).unwrap_or("")),
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
