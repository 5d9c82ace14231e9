//! The subset of Perfetto's `perfetto_trace.proto` (package `perfetto.protos`) that
//! prof writes, as prost messages. Field numbers are those of the public schema
//! (checked against the `perfetto_trace_pb2` shipped in the PyPI `perfetto` package).
//!
//! The schema is proto2: repeated scalars are written one tag per element
//! (`packed = "false"`), because Perfetto's protozero decoder reads only that form.

/// `TracePacket`: one record of the trace.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacket {
    /// Timestamp in nanoseconds of the packet's clock (BOOTTIME unless set).
    #[prost(uint64, optional, tag = "8")]
    pub timestamp: Option<u64>,
    /// The writer's sequence: interned ids are scoped to it.
    #[prost(uint32, optional, tag = "10")]
    pub trusted_packet_sequence_id: Option<u32>,
    /// A slice begin or end, an instant or a counter value.
    #[prost(message, optional, tag = "11")]
    pub track_event: Option<TrackEvent>,
    /// Names (and other strings) interned for later packets of the sequence.
    #[prost(message, optional, tag = "12")]
    pub interned_data: Option<InternedData>,
    /// [`SEQ_INCREMENTAL_STATE_CLEARED`] and/or [`SEQ_NEEDS_INCREMENTAL_STATE`].
    #[prost(uint32, optional, tag = "13")]
    pub sequence_flags: Option<u32>,
    /// The clocks' readings at one instant.
    #[prost(message, optional, tag = "6")]
    pub clock_snapshot: Option<ClockSnapshot>,
    /// Declares a track before events use it.
    #[prost(message, optional, tag = "60")]
    pub track_descriptor: Option<TrackDescriptor>,
    /// Defaults for the later packets of the sequence, until its state is cleared.
    #[prost(message, optional, tag = "59")]
    pub trace_packet_defaults: Option<TracePacketDefaults>,
    /// A sampled call stack.
    #[prost(message, optional, tag = "66")]
    pub perf_sample: Option<PerfSample>,
}

/// `PerfSample`: one sampled call stack of a thread, its frames interned on the
/// packet's sequence.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PerfSample {
    /// The sampled thread's process (its track's pid).
    #[prost(uint32, optional, tag = "2")]
    pub pid: Option<u32>,
    /// The sampled thread (its track's tid).
    #[prost(uint32, optional, tag = "3")]
    pub tid: Option<u32>,
    /// The interned [`Callstack`].
    #[prost(uint64, optional, tag = "4")]
    pub callstack_iid: Option<u64>,
    /// [`CPU_MODE_USER`]: user-space stacks only.
    #[prost(int32, optional, tag = "5")]
    pub cpu_mode: Option<i32>,
}

/// `Profiling.CpuMode.MODE_USER`.
pub const CPU_MODE_USER: i32 = 2;

/// `InternedString`: bytes given an id on the sequence.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedString {
    /// The id packets use.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// The bytes.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub str: Option<Vec<u8>>,
}

/// `Mapping`: a file mapped into the process.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    /// The id frames use.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Interned build id (`build_ids`).
    #[prost(uint64, optional, tag = "2")]
    pub build_id: Option<u64>,
    /// Where in the file it starts.
    #[prost(uint64, optional, tag = "3")]
    pub start_offset: Option<u64>,
    /// Its first address.
    #[prost(uint64, optional, tag = "4")]
    pub start: Option<u64>,
    /// The address past its end.
    #[prost(uint64, optional, tag = "5")]
    pub end: Option<u64>,
    /// Interned path components (`mapping_paths`), joined by `/`.
    #[prost(uint64, repeated, packed = "false", tag = "7")]
    pub path_string_ids: Vec<u64>,
}

/// `Frame`: a function at a place in a mapping.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Frame {
    /// The id callstacks use.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Interned function name (`function_names`).
    #[prost(uint64, optional, tag = "2")]
    pub function_name_id: Option<u64>,
    /// Interned [`Mapping`].
    #[prost(uint64, optional, tag = "3")]
    pub mapping_id: Option<u64>,
    /// The address relative to the mapping's start in its file.
    #[prost(uint64, optional, tag = "4")]
    pub rel_pc: Option<u64>,
}

/// `Callstack`: frames, outermost first.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Callstack {
    /// The id samples use.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// Interned [`Frame`]s, the outermost (bottom) first.
    #[prost(uint64, repeated, packed = "false", tag = "2")]
    pub frame_ids: Vec<u64>,
}

impl TracePacket {
    /// The track of this packet's event: its own `track_uuid`, else the sequence's
    /// default, `defaults` being the last [`TracePacketDefaults`] track of each
    /// sequence (as a reader keeps them).
    pub fn event_track(&self, defaults: &std::collections::HashMap<u32, u64>) -> Option<u64> {
        let event = self.track_event.as_ref()?;
        event.track_uuid.or_else(|| {
            let sequence = self.trusted_packet_sequence_id?;
            defaults.get(&sequence).copied()
        })
    }

    /// Notes in `defaults` the default track this packet sets for its sequence.
    pub fn note_defaults(&self, defaults: &mut std::collections::HashMap<u32, u64>) {
        let track = self
            .trace_packet_defaults
            .as_ref()
            .and_then(|d| d.track_event_defaults.as_ref())
            .and_then(|d| d.track_uuid);
        if let (Some(sequence), Some(track)) = (self.trusted_packet_sequence_id, track) {
            defaults.insert(sequence, track);
        }
    }
}

/// `TracePacketDefaults`: values a sequence's packets take unless they set their own.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TracePacketDefaults {
    /// Defaults for track events.
    #[prost(message, optional, tag = "11")]
    pub track_event_defaults: Option<TrackEventDefaults>,
}

/// `TrackEventDefaults`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEventDefaults {
    /// The track of the sequence's events that name none.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
}

/// The packet resets the sequence's interned state.
pub const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// The packet uses interned state of its sequence.
pub const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;

/// `ClockSnapshot`: readings of several clocks taken at the same instant.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ClockSnapshot {
    /// The readings.
    #[prost(message, repeated, tag = "1")]
    pub clocks: Vec<Clock>,
    /// The clock trace time is expressed in.
    #[prost(int32, optional, tag = "2")]
    pub primary_trace_clock: Option<i32>,
}

/// `ClockSnapshot.Clock`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Clock {
    /// A `BuiltinClock`.
    #[prost(uint32, optional, tag = "1")]
    pub clock_id: Option<u32>,
    /// Its reading in nanoseconds.
    #[prost(uint64, optional, tag = "2")]
    pub timestamp: Option<u64>,
}

/// `BUILTIN_CLOCK_REALTIME`.
pub const CLOCK_REALTIME: u32 = 1;
/// `BUILTIN_CLOCK_BOOTTIME`: the default clock of packet timestamps.
pub const CLOCK_BOOTTIME: u32 = 6;

/// `TrackDescriptor`: a process, thread or counter track.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackDescriptor {
    /// Unique id of the track in the trace.
    #[prost(uint64, optional, tag = "1")]
    pub uuid: Option<u64>,
    /// The enclosing track.
    #[prost(uint64, optional, tag = "5")]
    pub parent_uuid: Option<u64>,
    /// Track name.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
    /// Set on process tracks.
    #[prost(message, optional, tag = "3")]
    pub process: Option<ProcessDescriptor>,
    /// Set on thread tracks.
    #[prost(message, optional, tag = "4")]
    pub thread: Option<ThreadDescriptor>,
    /// Set on counter tracks.
    #[prost(message, optional, tag = "8")]
    pub counter: Option<CounterDescriptor>,
}

/// `ProcessDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ProcessDescriptor {
    /// Process id.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Process name.
    #[prost(string, optional, tag = "6")]
    pub process_name: Option<String>,
}

/// `ThreadDescriptor`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ThreadDescriptor {
    /// Owning process id.
    #[prost(int32, optional, tag = "1")]
    pub pid: Option<i32>,
    /// Thread id.
    #[prost(int64, optional, tag = "2")]
    pub tid: Option<i64>,
    /// Thread name.
    #[prost(string, optional, tag = "5")]
    pub thread_name: Option<String>,
}

/// `CounterDescriptor`: marks a track as a counter track.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CounterDescriptor {
    /// Unit name shown beside values.
    #[prost(string, optional, tag = "6")]
    pub unit_name: Option<String>,
}

/// `TrackEvent`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TrackEvent {
    /// [`TYPE_SLICE_BEGIN`], [`TYPE_SLICE_END`], [`TYPE_INSTANT`] or [`TYPE_COUNTER`].
    #[prost(int32, optional, tag = "9")]
    pub r#type: Option<i32>,
    /// The track it belongs to.
    #[prost(uint64, optional, tag = "11")]
    pub track_uuid: Option<u64>,
    /// Interned event name.
    #[prost(uint64, optional, tag = "10")]
    pub name_iid: Option<u64>,
    /// Event name, where it is not interned.
    #[prost(string, optional, tag = "23")]
    pub name: Option<String>,
    /// Interned categories.
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    pub category_iids: Vec<u64>,
    /// Categories, where they are not interned.
    #[prost(string, repeated, tag = "22")]
    pub categories: Vec<String>,
    /// Arguments.
    #[prost(message, repeated, tag = "4")]
    pub debug_annotations: Vec<DebugAnnotation>,
    /// Integer value of a counter event.
    #[prost(int64, optional, tag = "30")]
    pub counter_value: Option<i64>,
    /// Floating-point value of a counter event.
    #[prost(double, optional, tag = "44")]
    pub double_counter_value: Option<f64>,
    /// Flows that start at this event.
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    pub flow_ids: Vec<u64>,
    /// Flows that end at this event.
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    pub terminating_flow_ids: Vec<u64>,
}

/// `TrackEvent.TYPE_SLICE_BEGIN`.
pub const TYPE_SLICE_BEGIN: i32 = 1;
/// `TrackEvent.TYPE_SLICE_END`.
pub const TYPE_SLICE_END: i32 = 2;
/// `TrackEvent.TYPE_INSTANT`.
pub const TYPE_INSTANT: i32 = 3;
/// `TrackEvent.TYPE_COUNTER`.
pub const TYPE_COUNTER: i32 = 4;

/// `DebugAnnotation`: one named argument.
#[derive(Clone, PartialEq, prost::Message)]
pub struct DebugAnnotation {
    /// Interned argument name.
    #[prost(uint64, optional, tag = "1")]
    pub name_iid: Option<u64>,
    /// Argument name, where it is not interned.
    #[prost(string, optional, tag = "10")]
    pub name: Option<String>,
    /// The value.
    #[prost(oneof = "AnnotationValue", tags = "3, 4, 5, 6")]
    pub value: Option<AnnotationValue>,
}

/// The value of a [`DebugAnnotation`].
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AnnotationValue {
    /// `uint_value`.
    #[prost(uint64, tag = "3")]
    Uint(u64),
    /// `int_value`.
    #[prost(int64, tag = "4")]
    Int(i64),
    /// `double_value`.
    #[prost(double, tag = "5")]
    Double(f64),
    /// `string_value`.
    #[prost(string, tag = "6")]
    Str(String),
}

/// `InternedData`: strings given ids on the sequence.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InternedData {
    /// Category names.
    #[prost(message, repeated, tag = "1")]
    pub event_categories: Vec<Interned>,
    /// Event names.
    #[prost(message, repeated, tag = "2")]
    pub event_names: Vec<Interned>,
    /// Argument names.
    #[prost(message, repeated, tag = "3")]
    pub debug_annotation_names: Vec<Interned>,
    /// Function names of sampled frames.
    #[prost(message, repeated, tag = "5")]
    pub function_names: Vec<InternedString>,
    /// Sampled frames.
    #[prost(message, repeated, tag = "6")]
    pub frames: Vec<Frame>,
    /// Sampled call stacks.
    #[prost(message, repeated, tag = "7")]
    pub callstacks: Vec<Callstack>,
    /// Build ids of mapped files.
    #[prost(message, repeated, tag = "16")]
    pub build_ids: Vec<InternedString>,
    /// Path components of mapped files.
    #[prost(message, repeated, tag = "17")]
    pub mapping_paths: Vec<InternedString>,
    /// Mapped files.
    #[prost(message, repeated, tag = "19")]
    pub mappings: Vec<Mapping>,
}

/// `EventName`, `EventCategory` and `DebugAnnotationName` share this shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Interned {
    /// The id packets use.
    #[prost(uint64, optional, tag = "1")]
    pub iid: Option<u64>,
    /// The string.
    #[prost(string, optional, tag = "2")]
    pub name: Option<String>,
}

/// `Trace`: the file, a sequence of packets (field 1). Written packet by packet by the
/// exporter; this type is for reading a trace back.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Trace {
    /// The packets.
    #[prost(message, repeated, tag = "1")]
    pub packet: Vec<TracePacket>,
}
