//! Perfetto's native protobuf trace (`.pftrace`), opened by ui.perfetto.dev and the
//! Perfetto trace processor.
//!
//! Each plane becomes a process track, each line a thread track, each event a slice
//! (`TYPE_SLICE_BEGIN`/`TYPE_SLICE_END`) or an instant with its stats as debug
//! annotations, each counter series a counter track, and each link with both ends a
//! flow. Timestamps are absolute: a clock snapshot equates the trace clock with
//! wall-clock time, so packets carry Unix-epoch nanoseconds.
//!
//! **Sequences.** Packets go out as the Perfetto SDK writes them, one sequence per
//! writer whose packets are in time order: the first sequence holds the clock
//! snapshot and the process tracks, and every thread track (each lane of a line) and
//! every counter track has a sequence of its own, opened by its track descriptor
//! (which clears the sequence's incremental state, and makes the track the default
//! of the sequence's events, which then name none) and followed by its events in
//! non-decreasing timestamp order. Event names, categories and argument names are
//! interned per sequence the first time it uses them. The trace processor sorts
//! packets by time whatever their order and resolves interned ids in file order, so
//! one sequence holding every track, whose timestamps go back at each new line (a GPU
//! plane after the host's), also loads; but it is not what a Perfetto producer
//! writes, and checkers of the format flag it. The walk visits one line at a time,
//! so each sequence comes out in order without buffering or merging: the state of a
//! line's sequences (their interned names) is dropped when the next line starts.
//! A line's extra lanes (events that overlap without nesting, see
//! [`timeline`](crate::timeline)) write their names out rather than intern them, and
//! keep nothing of their own: a line can overlap itself a million times, and each
//! sequence's interning tables took over a kilobyte.
//!
//! Packets are encoded one at a time into reused buffers and streamed to the output:
//! memory does not grow with the number of events. Track events, two packets per
//! slice, are encoded by hand (field numbers from [`proto`]) rather than through prost
//! structs, which would allocate their vectors for every event; the rare packets
//! (descriptors, the clock snapshot) go through [`proto`]'s messages.
//!
//! ```
//! # let space = profiler_core::xspace::XSpace::default();
//! let mut bytes = Vec::new();
//! profiler_export::perfetto::write_to(&space, &mut bytes)?;
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod proto;
mod samples;
mod wire;

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use profiler_core::xspace::XSpace;
use profiler_core::{Error, Result};
use prost::Message;

use crate::atomic::write_streaming;
use crate::block::Blocks;
use crate::sink::Sink;
use crate::timeline::{
    Arg, CounterTrack, Origin, Process, Slice, Thread, Timeline, Totals, Visitor,
};
use prost::encoding::WireType;
use proto::{
    Clock, ClockSnapshot, CounterDescriptor, Interned, InternedData, ProcessDescriptor,
    ThreadDescriptor, TracePacket, TracePacketDefaults, TrackDescriptor, TrackEventDefaults,
};
use wire::*;

/// File extension of Perfetto traces.
pub const EXTENSION: &str = "pftrace";

/// The sequence of the clock snapshot and the process tracks; tracks' sequences
/// follow it.
const FIRST_SEQUENCE: u32 = 1;

/// Writes `space` as a Perfetto trace to `out`, packet by packet (buffered here).
///
/// # Errors
/// The output's I/O error.
pub fn write_to<W: Write>(space: &XSpace, out: W) -> io::Result<Totals> {
    timeline_to(&Timeline::new(space), out)
}

/// Writes the walk of `timeline` as a Perfetto trace to `out`.
pub(crate) fn timeline_to<W: Write>(timeline: &Timeline<'_>, out: W) -> io::Result<Totals> {
    let mut writer = Writer::new(out, timeline.origin());
    writer.clock_snapshot()?;
    let totals = timeline.walk(&mut writer)?;
    samples::write(&mut writer, timeline.space())?;
    writer.out.finish()?;
    Ok(totals)
}

/// Writes `space` as a Perfetto trace at `path`, atomically.
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] naming the path.
pub fn write(space: &XSpace, path: &Path) -> Result<Totals> {
    write_timeline(&Timeline::new(space), path)
}

/// A Perfetto trace file: the [`Sink`] of [`write()`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerfettoFile {
    path: PathBuf,
}

impl PerfettoFile {
    /// The trace at `path` (`.pftrace` by custom).
    pub fn new(path: impl Into<PathBuf>) -> PerfettoFile {
        PerfettoFile { path: path.into() }
    }

    /// Where the trace goes.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Sink for PerfettoFile {
    type Report = Totals;

    fn export(&self, space: &XSpace) -> Result<Totals> {
        write(space, &self.path)
    }
}

/// Writes the walk of `timeline` as a Perfetto trace at `path`, atomically.
pub(crate) fn write_timeline(timeline: &Timeline<'_>, path: &Path) -> Result<Totals> {
    write_streaming(path, |out| timeline_to(timeline, out))
        .map_err(|e| Error::io("cannot write the Perfetto trace", path, e))
}

/// Interned strings of one kind on a sequence.
#[derive(Default)]
struct Interner<'a> {
    /// Names borrowed from the space, or made up for unnamed events. Hashed with
    /// foldhash: every slice looks up its name, category and argument names, and
    /// SipHash on those short strings was a fifth of the export's time. No key comes
    /// from an adversary that could flood it (the walk of one profile).
    ids: HashMap<Cow<'a, str>, u64, foldhash::fast::FixedState>,
    /// Ids of names borrowed from the space, by where their text is: a name is one
    /// metadata's string, met again and again, so most lookups end here without
    /// hashing or comparing text (they still took a tenth of the export).
    recent: [(usize, usize, u64); RECENT],
}

/// Entries of an [`Interner`]'s table of recent names: a thread's lane repeats few.
const RECENT: usize = 16;

impl<'a> Interner<'a> {
    /// The id of `name`, adding its definition to `new` the first time. Names are
    /// borrowed but for unnamed events', which are rare.
    fn id(&mut self, name: Cow<'a, str>, new: &mut Vec<Interned>) -> u64 {
        // Only borrowed text stays where it is; a made-up name is hashed every time.
        let recent = match &name {
            Cow::Borrowed(text) if !text.is_empty() => {
                let (addr, len) = (text.as_ptr() as usize, text.len());
                let slot = (addr >> 3 ^ len) % RECENT;
                let (seen_addr, seen_len, id) = self.recent[slot];
                if (seen_addr, seen_len) == (addr, len) {
                    return id;
                }
                Some((slot, addr, len))
            }
            _ => None,
        };
        let id = match self.ids.get(name.as_ref()) {
            Some(&id) => id,
            None => {
                let id = self.ids.len() as u64 + 1;
                new.push(Interned {
                    iid: Some(id),
                    name: Some(name.clone().into_owned()),
                });
                self.ids.insert(name, id);
                id
            }
        };
        if let Some((slot, addr, len)) = recent {
            self.recent[slot] = (addr, len, id);
        }
        id
    }
}

/// One track's sequence: its id, and what is interned on it.
struct Sequence<'a> {
    /// The track's key.
    key: u64,
    id: u32,
    /// The names a line's first lane interned (a counter track interns none).
    interned: Option<Box<Interning<'a>>>,
    /// Timestamp of its last event, ns.
    last_ns: u64,
}

/// The sequences of a line's extra lanes: lane `n` (from 1) has id `first + n - 1`,
/// as their tracks are declared in lane order, one after the other.
#[derive(Clone, Copy, Default)]
struct ExtraLanes {
    first: u32,
    count: u32,
}

impl ExtraLanes {
    /// The sequence id of extra lane `lane` of track `key`.
    fn id(&self, lane: u32, key: u64) -> io::Result<u32> {
        if (1..=self.count).contains(&lane) {
            Ok(self.first + lane - 1)
        } else {
            Err(undeclared(key))
        }
    }
}

/// What one sequence has interned.
#[derive(Default)]
struct Interning<'a> {
    names: Interner<'a>,
    categories: Interner<'a>,
    arg_names: Interner<'a>,
}

impl Sequence<'_> {
    /// Its id, for a packet at `ts` ns; a sequence never goes back in time.
    fn at(&mut self, ts: u64) -> u32 {
        debug_assert!(ts >= self.last_ns, "sequence {} goes back", self.id);
        self.last_ns = ts;
        self.id
    }
}

struct Writer<'a, W> {
    /// The output, and the packets not yet handed to it. A track event's packet is
    /// framed straight into it: encoded into a packet buffer of its own first, and
    /// written with its length through a `BufWriter`, it was copied twice more.
    out: Blocks<W>,
    /// A rare packet (a descriptor, the clock snapshot) as prost encodes it, before
    /// it is framed into `buf` (reused).
    packet: Vec<u8>,
    /// The track event being written (reused).
    event: Vec<u8>,
    /// One debug annotation (reused).
    annotation: Vec<u8>,
    origin: Origin,
    /// The sequence of the first lane of the line being walked.
    line: Option<Sequence<'a>>,
    /// The sequences of its extra lanes, numbered on from the first's id: nothing is
    /// kept per extra lane, of which a line can have a million.
    extra_lanes: ExtraLanes,
    /// The sequences of the counter tracks of the `_counters_` line being walked.
    counters: Vec<Sequence<'a>>,
    /// The last sequence id handed out.
    last_sequence: u32,
    /// Definitions interned since the last packet went out.
    new: InternedData,
    /// What the stack samples need to know of the tracks written: the host plane's
    /// process id, each host line's thread (by line id), every tid and pid taken.
    tracks: samples::Tracks,
}

/// The error for an event whose track has no sequence: the walk declares every
/// track before its events, so this is a bug.
fn undeclared(key: u64) -> io::Error {
    io::Error::other(format!("track {key:#x} has an event before its descriptor"))
}

impl<'a, W: Write> Writer<'a, W> {
    fn new(out: W, origin: Origin) -> Self {
        Writer {
            out: Blocks::new(out),
            packet: Vec::with_capacity(256),
            event: Vec::with_capacity(256),
            annotation: Vec::with_capacity(64),
            origin,
            line: None,
            extra_lanes: ExtraLanes::default(),
            counters: Vec::new(),
            last_sequence: FIRST_SEQUENCE,
            new: InternedData::default(),
            tracks: samples::Tracks::default(),
        }
    }

    /// Encodes `packet` (through `self.packet`) and appends it as one `Trace.packet`.
    fn emit(&mut self, packet: &TracePacket) -> io::Result<()> {
        self.packet.clear();
        packet
            .encode(&mut self.packet)
            .map_err(|e| io::Error::other(format!("encoding a packet: {e}")))?;
        put_bytes(&mut self.out.buf, TRACE_PACKET, &self.packet);
        self.out.done()
    }

    fn clock_snapshot(&mut self) -> io::Result<()> {
        let now = u64::try_from(self.origin.unix_ns).unwrap_or(0);
        let clock = |id| Clock {
            clock_id: Some(id),
            timestamp: Some(now),
        };
        self.emit(&TracePacket {
            timestamp: Some(now),
            trusted_packet_sequence_id: Some(FIRST_SEQUENCE),
            sequence_flags: Some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
            clock_snapshot: Some(ClockSnapshot {
                clocks: vec![clock(proto::CLOCK_BOOTTIME), clock(proto::CLOCK_REALTIME)],
                primary_trace_clock: Some(proto::CLOCK_BOOTTIME as i32),
            }),
            ..TracePacket::default()
        })
    }

    /// Opens a sequence for track `key` with its descriptor, which clears the
    /// sequence's state; returns the sequence for the caller to keep, with interning
    /// tables when `interns`.
    fn track(
        &mut self,
        key: u64,
        descriptor: TrackDescriptor,
        interns: bool,
    ) -> io::Result<Sequence<'a>> {
        self.last_sequence += 1;
        let id = self.last_sequence;
        // The track is the sequence's default: its events leave out their
        // `track_uuid` (a nine-byte varint for a thread's `pid << 32 | tid`), as the
        // Perfetto SDK's do.
        self.emit(&TracePacket {
            trusted_packet_sequence_id: Some(id),
            sequence_flags: Some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
            track_descriptor: Some(descriptor),
            trace_packet_defaults: Some(TracePacketDefaults {
                track_event_defaults: Some(TrackEventDefaults {
                    track_uuid: Some(key),
                }),
            }),
            ..TracePacket::default()
        })?;
        Ok(Sequence {
            key,
            id,
            interned: interns.then(Box::default),
            last_ns: 0,
        })
    }

    /// Starts the track event in `self.event`: its type and track.
    /// Starts a track event of type `kind`; its track is its sequence's default.
    fn begin_event(&mut self, kind: i32) {
        self.event.clear();
        put_varint(&mut self.event, EVENT_TYPE, kind as u64);
    }

    /// Sends the track event in `self.event` at `ts` ns on sequence `sequence`, with
    /// the names interned since the last packet.
    /// Frames the track event in `event` into a packet at `ts` on `sequence`, with
    /// the names interned since the last one.
    fn send_event(&mut self, sequence: u32, ts: u64) -> io::Result<()> {
        let interned = if self.new.event_names.is_empty()
            && self.new.event_categories.is_empty()
            && self.new.debug_annotation_names.is_empty()
        {
            None
        } else {
            Some(std::mem::take(&mut self.new).encode_to_vec())
        };
        let flags = u64::from(proto::SEQ_NEEDS_INCREMENTAL_STATE);
        // The packet's length first: its fields are then written where they go.
        let len = varint_field_len(PACKET_TIMESTAMP, ts)
            + varint_field_len(PACKET_SEQUENCE_ID, u64::from(sequence))
            + varint_field_len(PACKET_SEQUENCE_FLAGS, flags)
            + interned
                .as_ref()
                .map_or(0, |i| bytes_field_len(PACKET_INTERNED_DATA, i.len()))
            + bytes_field_len(PACKET_TRACK_EVENT, self.event.len());
        let buf = &mut self.out.buf;
        key(buf, TRACE_PACKET, WireType::LengthDelimited);
        varint(buf, len as u64);
        put_varint(buf, PACKET_TIMESTAMP, ts);
        put_varint(buf, PACKET_SEQUENCE_ID, u64::from(sequence));
        put_varint(buf, PACKET_SEQUENCE_FLAGS, flags);
        if let Some(interned) = &interned {
            put_bytes(buf, PACKET_INTERNED_DATA, interned);
        }
        put_bytes(buf, PACKET_TRACK_EVENT, &self.event);
        self.out.done()
    }
}

/// The sequence of track `key` in `sequences`: at `index` (a thread's lane, a counter
/// track's number) in the usual case, else found by key.
fn find<'s, 'a>(
    sequences: &'s mut [Sequence<'a>],
    index: usize,
    key: u64,
) -> io::Result<&'s mut Sequence<'a>> {
    if sequences.get(index).is_some_and(|s| s.key == key) {
        return Ok(&mut sequences[index]);
    }
    sequences
        .iter_mut()
        .find(|s| s.key == key)
        .ok_or_else(|| undeclared(key))
}

fn to_ns(origin: Origin, ps: i64) -> u64 {
    u64::try_from(origin.to_unix_ns(ps)).unwrap_or(0)
}

impl<W: Write> samples::Packets for Writer<'_, W> {
    fn emit(&mut self, packet: &TracePacket) -> io::Result<()> {
        Writer::emit(self, packet)
    }

    fn new_sequence(&mut self) -> u32 {
        self.last_sequence += 1;
        self.last_sequence
    }

    fn descriptor_sequence(&self) -> u32 {
        FIRST_SEQUENCE
    }

    fn ns(&self, ps: i64) -> u64 {
        to_ns(self.origin, ps)
    }

    fn tracks(&mut self) -> &mut samples::Tracks {
        &mut self.tracks
    }
}

/// Appends one debug annotation to `event`, its name interned in `arg_names` (the
/// event's sequence's, new definitions going to `new`) or written out where the
/// sequence interns nothing; `buf` is reused.
fn put_annotation<'a>(
    event: &mut Vec<u8>,
    buf: &mut Vec<u8>,
    arg_names: Option<&mut Interner<'a>>,
    new: &mut Vec<Interned>,
    name: &'a str,
    value: Arg<'_>,
) {
    buf.clear();
    match arg_names {
        Some(arg_names) => {
            let iid = arg_names.id(Cow::Borrowed(name), new);
            put_varint(buf, ANNOTATION_NAME_IID, iid);
        }
        None => put_bytes(buf, ANNOTATION_NAME, name.as_bytes()),
    }
    match value {
        Arg::Int(v) => put_varint(buf, ANNOTATION_INT, v as u64),
        Arg::Uint(v) => put_varint(buf, ANNOTATION_UINT, v),
        Arg::Double(v) => put_fixed64(buf, ANNOTATION_DOUBLE, v.to_bits()),
        Arg::Str(s) => put_bytes(buf, ANNOTATION_STRING, s.as_bytes()),
        Arg::Bytes(b) => put_bytes(
            buf,
            ANNOTATION_STRING,
            format!("<{} bytes>", b.len()).as_bytes(),
        ),
    }
    put_bytes(event, EVENT_DEBUG_ANNOTATIONS, buf);
}

impl<'a, W: Write> Visitor<'a> for Writer<'a, W> {
    type Error = io::Error;

    fn process(&mut self, process: &Process<'a>) -> io::Result<()> {
        self.tracks.process(process);
        // The previous plane's lines are done: their sequences get no more packets.
        self.line = None;
        self.extra_lanes = ExtraLanes::default();
        self.counters.clear();
        self.emit(&TracePacket {
            trusted_packet_sequence_id: Some(FIRST_SEQUENCE),
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(u64::from(process.pid)),
                process: Some(ProcessDescriptor {
                    pid: Some(process.pid as i32),
                    process_name: Some(process.name.to_owned()),
                }),
                ..TrackDescriptor::default()
            }),
            ..TracePacket::default()
        })
    }

    fn thread(&mut self, thread: &Thread<'a>) -> io::Result<()> {
        self.tracks.thread(thread);
        if thread.lane == 0 {
            // The lines walked before are done.
            self.line = None;
            self.extra_lanes = ExtraLanes::default();
            self.counters.clear();
        }
        let sequence = self.track(
            thread.key,
            TrackDescriptor {
                uuid: Some(thread.key),
                parent_uuid: Some(u64::from(thread.pid)),
                thread: Some(ThreadDescriptor {
                    pid: Some(thread.pid as i32),
                    tid: Some(i64::from(thread.tid)),
                    thread_name: Some(thread.name.clone().into_owned()),
                }),
                ..TrackDescriptor::default()
            },
            thread.lane == 0,
        )?;
        match thread.lane {
            0 => self.line = Some(sequence),
            lane => {
                if self.extra_lanes.count == 0 {
                    self.extra_lanes.first = sequence.id;
                }
                self.extra_lanes.count += 1;
                // Extra lanes are announced in order, each sequence the next one.
                debug_assert_eq!(
                    self.extra_lanes.id(lane, thread.key).ok(),
                    Some(sequence.id)
                );
            }
        }
        Ok(())
    }

    fn slice(&mut self, slice: &Slice<'a, '_>) -> io::Result<()> {
        let kind = if slice.is_instant() {
            proto::TYPE_INSTANT
        } else {
            proto::TYPE_SLICE_BEGIN
        };
        let key = slice.thread.key;
        self.begin_event(kind);
        let ts = to_ns(self.origin, slice.start_ps);
        let Writer {
            line,
            extra_lanes,
            event,
            annotation,
            new,
            ..
        } = self;
        let (id, interned) = match slice.thread.lane {
            0 => {
                let line = line
                    .as_mut()
                    .filter(|s| s.key == key)
                    .ok_or_else(|| undeclared(key))?;
                (line.at(ts), line.interned.as_deref_mut())
            }
            lane => (extra_lanes.id(lane, key)?, None),
        };
        let mut arg_names = match interned {
            Some(interned) => {
                let name = interned.names.id(slice.name.clone(), &mut new.event_names);
                put_varint(event, EVENT_NAME_IID, name);
                let category = interned
                    .categories
                    .id(Cow::Borrowed(slice.category), &mut new.event_categories);
                put_varint(event, EVENT_CATEGORY_IIDS, category);
                Some(&mut interned.arg_names)
            }
            None => {
                put_bytes(event, EVENT_NAME, slice.name.as_bytes());
                put_bytes(event, EVENT_CATEGORIES, slice.category.as_bytes());
                None
            }
        };
        for (name, value) in slice.args() {
            put_annotation(
                event,
                annotation,
                arg_names.as_deref_mut(),
                &mut new.debug_annotation_names,
                name,
                value,
            );
        }
        for &id in slice.flows_out.as_slice() {
            put_fixed64(event, EVENT_FLOW_IDS, id);
        }
        for &id in slice.flows_in.as_slice() {
            put_fixed64(event, EVENT_TERMINATING_FLOW_IDS, id);
        }
        self.send_event(id, ts)
    }

    fn slice_end(&mut self, thread: &Thread<'a>, end_ps: i64) -> io::Result<()> {
        self.begin_event(proto::TYPE_SLICE_END);
        let ts = to_ns(self.origin, end_ps);
        let id = match thread.lane {
            0 => self
                .line
                .as_mut()
                .filter(|s| s.key == thread.key)
                .ok_or_else(|| undeclared(thread.key))?
                .at(ts),
            lane => self.extra_lanes.id(lane, thread.key)?,
        };
        self.send_event(id, ts)
    }

    fn counter_track(&mut self, track: &CounterTrack<'a>) -> io::Result<()> {
        let sequence = self.track(
            track.key,
            TrackDescriptor {
                uuid: Some(track.key),
                parent_uuid: Some(u64::from(track.pid)),
                name: Some(track.name.clone().into_owned()),
                counter: Some(CounterDescriptor::default()),
                ..TrackDescriptor::default()
            },
            false,
        )?;
        self.counters.push(sequence);
        Ok(())
    }

    fn counter(&mut self, track: &CounterTrack<'a>, at_ps: i64, value: Arg<'_>) -> io::Result<()> {
        self.begin_event(proto::TYPE_COUNTER);
        match value {
            Arg::Int(v) => put_varint(&mut self.event, EVENT_COUNTER_VALUE, v as u64),
            Arg::Uint(v) if i64::try_from(v).is_ok() => {
                put_varint(&mut self.event, EVENT_COUNTER_VALUE, v)
            }
            other => {
                let v = other.as_f64().unwrap_or(0.0);
                put_fixed64(&mut self.event, EVENT_DOUBLE_COUNTER_VALUE, v.to_bits());
            }
        }
        let ts = to_ns(self.origin, at_ps);
        // A counter track's key ends with its number on the plane, which is its place
        // here while the plane has one `_counters_` line (as XProf's have).
        let index = (track.key & 0xffff_ffff) as usize;
        let id = find(&mut self.counters, index, track.key)?.at(ts);
        self.send_event(id, ts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_has_one_id_however_it_is_reached() {
        let text = String::from("opmatmulop");
        // Same text at two addresses, a name sharing an address with a longer one,
        // and more names than the table of recent ones holds.
        let (op, matmul, op_again, opm) = (&text[..2], &text[2..8], &text[8..], &text[..3]);
        let many: Vec<String> = (0..3 * RECENT).map(|i| format!("n{i}")).collect();
        let mut interner = Interner::default();
        let mut new = Vec::new();
        let mut ids = Vec::new();
        for round in 0..3 {
            for name in [op, matmul, op_again, opm] {
                ids.push((name, interner.id(Cow::Borrowed(name), &mut new)));
            }
            for name in &many {
                ids.push((name, interner.id(Cow::Borrowed(name.as_str()), &mut new)));
            }
            ids.push(("op", interner.id(Cow::Owned("op".into()), &mut new)));
            // Each name defined once, in the first round.
            assert_eq!(new.len(), 3 + many.len(), "round {round}");
        }
        for &(a, id_a) in &ids {
            for &(b, id_b) in &ids {
                assert_eq!(a == b, id_a == id_b, "{a} and {b}");
            }
        }
    }

    #[test]
    fn varints_and_keys_are_what_prost_writes() {
        let mut values: Vec<u64> = (0..64).flat_map(|b| [1u64 << b, (1u64 << b) - 1]).collect();
        values.extend([0, 0x7f, 0x80, 300, u64::MAX, u64::MAX - 1]);
        for v in values {
            let (mut ours, mut prosts) = (Vec::new(), Vec::new());
            put_varint(&mut ours, 11, v);
            prost::encoding::encode_key(11, WireType::Varint, &mut prosts);
            prost::encoding::encode_varint(v, &mut prosts);
            assert_eq!(ours, prosts, "{v}");
        }
        let (mut ours, mut prosts) = (Vec::new(), Vec::new());
        put_bytes(&mut ours, 1000, &[7; 200]);
        prost::encoding::encode_key(1000, WireType::LengthDelimited, &mut prosts);
        prost::encoding::encode_varint(200, &mut prosts);
        prosts.extend_from_slice(&[7; 200]);
        assert_eq!(ours, prosts);
    }
}
