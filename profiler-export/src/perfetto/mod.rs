//! Perfetto's native protobuf trace (`.pftrace`), opened by ui.perfetto.dev and the
//! Perfetto trace processor.
//!
//! Each plane becomes a process track, each line a thread track, each event a slice
//! (`TYPE_SLICE_BEGIN`/`TYPE_SLICE_END`) or an instant with its stats as debug
//! annotations, each counter series a counter track, and each link with both ends a
//! flow. All packets share one sequence: the first clears its incremental state, every
//! later one declares that it needs it, and event names, categories and argument names
//! are interned on it the first time they are used. Timestamps are absolute: a clock
//! snapshot equates the trace clock with wall-clock time, so packets carry Unix-epoch
//! nanoseconds.
//!
//! Packets are encoded one at a time into a reused buffer and streamed to the output:
//! memory does not grow with the number of events.
//!
//! ```
//! # let space = profiler_core::xspace::XSpace::default();
//! let mut bytes = Vec::new();
//! profiler_export::perfetto::write_to(&space, &mut bytes)?;
//! # Ok::<(), std::io::Error>(())
//! ```

pub mod proto;

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::Path;

use profiler_core::xspace::XSpace;
use profiler_core::{Error, Result};
use prost::Message;

use crate::atomic::write_streaming;
use crate::timeline::{
    Arg, CounterTrack, Origin, Process, Slice, Thread, Timeline, Totals, Visitor,
};
use proto::{
    AnnotationValue, Clock, ClockSnapshot, CounterDescriptor, DebugAnnotation, Interned,
    InternedData, ProcessDescriptor, ThreadDescriptor, TracePacket, TrackDescriptor, TrackEvent,
};

/// File extension of Perfetto traces.
pub const EXTENSION: &str = "pftrace";

/// The one sequence prof writes.
const SEQUENCE: u32 = 1;

/// Writes `space` as a Perfetto trace to `out`, packet by packet (buffered here).
///
/// # Errors
/// The output's I/O error.
pub fn write_to<W: Write>(space: &XSpace, out: W) -> io::Result<Totals> {
    let timeline = Timeline::new(space);
    let mut writer = Writer::new(io::BufWriter::new(out), timeline.origin());
    writer.clock_snapshot()?;
    let totals = timeline.walk(&mut writer)?;
    writer.out.flush()?;
    Ok(totals)
}

/// Writes `space` as a Perfetto trace at `path`, atomically.
///
/// # Errors
/// [`profiler_core::ErrorKind::Io`] naming the path.
pub fn write(space: &XSpace, path: &Path) -> Result<Totals> {
    write_streaming(path, |out| write_to(space, out))
        .map_err(|e| Error::io("cannot write the Perfetto trace", path, e))
}

/// Interned strings of one kind on the sequence.
#[derive(Default)]
struct Interner<'a> {
    ids: HashMap<&'a str, u64>,
}

impl<'a> Interner<'a> {
    /// The id of `name`, adding its definition to `new` the first time.
    fn id(&mut self, name: &'a str, new: &mut Vec<Interned>) -> u64 {
        let next = self.ids.len() as u64 + 1;
        *self.ids.entry(name).or_insert_with(|| {
            new.push(Interned {
                iid: Some(next),
                name: Some(name.to_owned()),
            });
            next
        })
    }
}

struct Writer<'a, W> {
    out: W,
    buf: Vec<u8>,
    origin: Origin,
    names: Interner<'a>,
    categories: Interner<'a>,
    arg_names: Interner<'a>,
    /// Definitions interned since the last packet went out.
    new: InternedData,
}

impl<'a, W: Write> Writer<'a, W> {
    fn new(out: W, origin: Origin) -> Self {
        Writer {
            out,
            buf: Vec::with_capacity(256),
            origin,
            names: Interner::default(),
            categories: Interner::default(),
            arg_names: Interner::default(),
            new: InternedData::default(),
        }
    }

    /// Appends `packet` as one `Trace.packet` (field 1) to the output.
    fn emit(&mut self, packet: &TracePacket) -> io::Result<()> {
        self.buf.clear();
        let len = packet.encoded_len();
        prost::encoding::encode_key(1, prost::encoding::WireType::LengthDelimited, &mut self.buf);
        prost::encoding::encode_varint(len as u64, &mut self.buf);
        packet
            .encode(&mut self.buf)
            .map_err(|e| io::Error::other(format!("encoding a packet: {e}")))?;
        self.out.write_all(&self.buf)
    }

    /// The first packet: clears the sequence's state and states that trace time is
    /// wall-clock time, so that absolute timestamps show as dates.
    fn clock_snapshot(&mut self) -> io::Result<()> {
        let now = u64::try_from(self.origin.unix_ns).unwrap_or(0);
        let clock = |id| Clock {
            clock_id: Some(id),
            timestamp: Some(now),
        };
        self.emit(&TracePacket {
            timestamp: Some(now),
            trusted_packet_sequence_id: Some(SEQUENCE),
            sequence_flags: Some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
            clock_snapshot: Some(ClockSnapshot {
                clocks: vec![clock(proto::CLOCK_BOOTTIME), clock(proto::CLOCK_REALTIME)],
                primary_trace_clock: Some(proto::CLOCK_BOOTTIME as i32),
            }),
            ..TracePacket::default()
        })
    }

    fn track(&mut self, descriptor: TrackDescriptor) -> io::Result<()> {
        self.emit(&TracePacket {
            trusted_packet_sequence_id: Some(SEQUENCE),
            track_descriptor: Some(descriptor),
            ..TracePacket::default()
        })
    }

    fn event(&mut self, at_ps: i64, event: TrackEvent) -> io::Result<()> {
        let interned = (!self.new.event_names.is_empty()
            || !self.new.event_categories.is_empty()
            || !self.new.debug_annotation_names.is_empty())
        .then(|| std::mem::take(&mut self.new));
        self.emit(&TracePacket {
            timestamp: Some(self.to_ns(at_ps)),
            trusted_packet_sequence_id: Some(SEQUENCE),
            track_event: Some(event),
            interned_data: interned,
            sequence_flags: Some(proto::SEQ_NEEDS_INCREMENTAL_STATE),
            ..TracePacket::default()
        })
    }

    fn to_ns(&self, ps: i64) -> u64 {
        u64::try_from(self.origin.to_unix_ns(ps)).unwrap_or(0)
    }
}

fn annotation_value(arg: Arg<'_>) -> AnnotationValue {
    match arg {
        Arg::Int(v) => AnnotationValue::Int(v),
        Arg::Uint(v) => AnnotationValue::Uint(v),
        Arg::Double(v) => AnnotationValue::Double(v),
        Arg::Str(s) => AnnotationValue::Str(s.to_owned()),
        Arg::Bytes(b) => AnnotationValue::Str(format!("<{} bytes>", b.len())),
    }
}

impl<'a, W: Write> Visitor<'a> for Writer<'a, W> {
    type Error = io::Error;

    fn process(&mut self, process: &Process<'a>) -> io::Result<()> {
        self.track(TrackDescriptor {
            uuid: Some(u64::from(process.pid)),
            process: Some(ProcessDescriptor {
                pid: Some(process.pid as i32),
                process_name: Some(process.name.to_owned()),
            }),
            ..TrackDescriptor::default()
        })
    }

    fn thread(&mut self, thread: &Thread<'a>) -> io::Result<()> {
        self.track(TrackDescriptor {
            uuid: Some(thread.key),
            parent_uuid: Some(u64::from(thread.pid)),
            thread: Some(ThreadDescriptor {
                pid: Some(thread.pid as i32),
                tid: Some(i64::from(thread.tid)),
                thread_name: Some(thread.name.clone().into_owned()),
            }),
            ..TrackDescriptor::default()
        })
    }

    fn slice(&mut self, slice: &Slice<'a, '_>) -> io::Result<()> {
        let name_iid = self.names.id(slice.name, &mut self.new.event_names);
        let category = self
            .categories
            .id(slice.category, &mut self.new.event_categories);
        let mut debug_annotations = Vec::new();
        for (name, value) in slice.args() {
            debug_annotations.push(DebugAnnotation {
                name_iid: Some(
                    self.arg_names
                        .id(name, &mut self.new.debug_annotation_names),
                ),
                value: Some(annotation_value(value)),
            });
        }
        let kind = if slice.is_instant() {
            proto::TYPE_INSTANT
        } else {
            proto::TYPE_SLICE_BEGIN
        };
        self.event(
            slice.start_ps,
            TrackEvent {
                r#type: Some(kind),
                track_uuid: Some(slice.thread.key),
                name_iid: Some(name_iid),
                category_iids: vec![category],
                debug_annotations,
                flow_ids: slice.flows_out.as_slice().to_vec(),
                terminating_flow_ids: slice.flows_in.as_slice().to_vec(),
                ..TrackEvent::default()
            },
        )
    }

    fn slice_end(&mut self, thread: &Thread<'a>, end_ps: i64) -> io::Result<()> {
        self.event(
            end_ps,
            TrackEvent {
                r#type: Some(proto::TYPE_SLICE_END),
                track_uuid: Some(thread.key),
                ..TrackEvent::default()
            },
        )
    }

    fn counter_track(&mut self, track: &CounterTrack<'a>) -> io::Result<()> {
        self.track(TrackDescriptor {
            uuid: Some(track.key),
            parent_uuid: Some(u64::from(track.pid)),
            name: Some(track.name.clone().into_owned()),
            counter: Some(CounterDescriptor::default()),
            ..TrackDescriptor::default()
        })
    }

    fn counter(&mut self, track: &CounterTrack<'a>, at_ps: i64, value: Arg<'a>) -> io::Result<()> {
        let (counter_value, double_counter_value) = match value {
            Arg::Int(v) => (Some(v), None),
            Arg::Uint(v) => match i64::try_from(v) {
                Ok(v) => (Some(v), None),
                Err(_) => (None, Some(v as f64)),
            },
            other => (None, other.as_f64()),
        };
        self.event(
            at_ps,
            TrackEvent {
                r#type: Some(proto::TYPE_COUNTER),
                track_uuid: Some(track.key),
                counter_value,
                double_counter_value,
                ..TrackEvent::default()
            },
        )
    }
}
