//! Structured spaces (made with `arbitrary`) through every exporter, with the outputs
//! checked: Chrome JSON and the summary's JSON must parse, the Perfetto trace must
//! decode as a `Trace`. The byte-level `exporters` target rarely builds a plane whose
//! names and stats mean something to the timeline; this one names planes, lines and
//! stats from the schema most of the time, and draws numbers from the edges.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use profiler_core::schema;
use profiler_core::xspace::{
    sort_events, XEvent, XEventData, XEventMetadata, XLine, XPlane, XSpace, XStat, XStatMetadata,
    XStatValue,
};
use profiler_core::Profile;
use profiler_export::perfetto::{self, proto};
use profiler_analysis::summary::Summary;
use profiler_export::{chrome, xplane};
use prost::Message;

#[path = "../src/exercise.rs"]
mod exercise;

/// Names the exporters give a meaning to.
const STAT_NAMES: &[&str] = &[
    schema::STEP_NUM,
    schema::IS_ROOT,
    schema::PRODUCER_TYPE,
    schema::PRODUCER_ID,
    schema::CONSUMER_TYPE,
    schema::CONSUMER_ID,
    schema::COUNTER_VALUE,
    schema::CORRELATION_ID,
    schema::HOST_BYTES_IN_USE,
    schema::HOST_ALLOCATIONS,
    schema::PROFILE_START_TIME,
    schema::PROFILE_STOP_TIME,
    schema::SCOPE,
    schema::OBJECT,
    schema::DOMAIN,
    "kernel_details",
];
const EVENT_NAMES: &[&str] = &[
    "Train",
    "forward",
    schema::PAUSED,
    schema::HOST_BYTES_IN_USE,
    schema::HOST_ALLOCATIONS,
    "",
    "a\"b\\c\n\u{0}\u{7f}é",
];
const LINE_NAMES: &[&str] = &[
    schema::COUNTERS_LINE,
    schema::PROFILER_LINE,
    schema::TASKS_LINE,
    "main",
    "",
];

#[derive(Arbitrary, Debug)]
enum Name {
    Known(u8),
    Free(String),
}

impl Name {
    fn get(&self, known: &[&str]) -> String {
        match self {
            Name::Known(i) => known[usize::from(*i) % known.len()].to_owned(),
            Name::Free(s) => s.clone(),
        }
    }
}

/// A number, most often small, else one of the edges, else anything.
#[derive(Arbitrary, Debug)]
enum Int {
    Small(i16),
    Edge(u8),
    Any(i64),
}

impl Int {
    fn get(&self) -> i64 {
        const EDGES: [i64; 10] = [
            0,
            -1,
            1,
            i64::MIN,
            i64::MAX,
            i64::MIN + 1,
            i64::MAX - 1,
            1 << 62,
            // Absolute line timestamps (Unix ns), as TensorFlow and JAX write them.
            1_700_000_000_000_000_000,
            // Past i64::MAX / 1000: a timestamp that saturates in picoseconds.
            i64::MAX / 1000 + 1,
        ];
        match *self {
            Int::Small(v) => i64::from(v),
            Int::Edge(i) => EDGES[usize::from(i) % EDGES.len()],
            Int::Any(v) => v,
        }
    }
}

/// A metadata id: one of the plane's (1-based) most often, else any.
#[derive(Arbitrary, Debug)]
enum Id {
    Interned(u8),
    Any(Int),
}

impl Id {
    fn get(&self, count: usize) -> i64 {
        match self {
            Id::Interned(i) => (usize::from(*i) % count.max(1)) as i64 + 1,
            Id::Any(v) => v.get(),
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Value {
    Double(f64),
    Uint64(Int),
    Int64(Int),
    Str(String),
    Bytes(Vec<u8>),
    Ref(Id),
}

#[derive(Arbitrary, Debug)]
struct Stat {
    id: Id,
    value: Option<Value>,
}

#[derive(Arbitrary, Debug)]
struct Event {
    id: Id,
    offset: Option<Result<Int, Int>>,
    duration_ps: Int,
    stats: Vec<Stat>,
}

#[derive(Arbitrary, Debug)]
struct Line {
    id: Int,
    display_id: Int,
    name: Name,
    display_name: String,
    timestamp_ns: Int,
    duration_ps: Int,
    events: Vec<Event>,
    sorted: bool,
}

#[derive(Arbitrary, Debug)]
enum PlaneName {
    Host,
    TaskEnv,
    Device(u8),
    Free(String),
}

#[derive(Arbitrary, Debug)]
struct Plane {
    id: Int,
    name: PlaneName,
    events: Vec<(Name, String, Vec<Stat>, Vec<Int>)>,
    stat_names: Vec<Name>,
    /// Metadata whose key differs from its id.
    mismatched_ids: bool,
    lines: Vec<Line>,
    stats: Vec<Stat>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    options: Vec<u8>,
    hostnames: Vec<String>,
    planes: Vec<Plane>,
}

fn stat(s: &Stat, stats: usize) -> XStat {
    XStat {
        metadata_id: s.id.get(stats),
        value: s.value.as_ref().map(|v| match v {
            Value::Double(d) => XStatValue::Double(*d),
            Value::Uint64(i) => XStatValue::Uint64(i.get() as u64),
            Value::Int64(i) => XStatValue::Int64(i.get()),
            Value::Str(s) => XStatValue::Str(s.clone()),
            Value::Bytes(b) => XStatValue::Bytes(b.clone()),
            Value::Ref(id) => XStatValue::Ref(id.get(stats) as u64),
        }),
    }
}

fn plane(p: &Plane) -> XPlane {
    let name = match &p.name {
        PlaneName::Host => schema::HOST_PLANE.to_owned(),
        PlaneName::TaskEnv => schema::TASK_ENV_PLANE.to_owned(),
        PlaneName::Device(n) => format!("/device:GPU:{n}"),
        PlaneName::Free(s) => s.clone(),
    };
    let (events, stats) = (p.events.len(), p.stat_names.len());
    let shift = i64::from(p.mismatched_ids);
    let stat_metadata: BTreeMap<i64, XStatMetadata> = p
        .stat_names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let id = i as i64 + 1;
            let meta = XStatMetadata {
                id: id + shift,
                name: n.get(STAT_NAMES),
                description: String::new(),
            };
            (id, meta)
        })
        .collect();
    let event_metadata: BTreeMap<i64, XEventMetadata> = p
        .events
        .iter()
        .enumerate()
        .map(|(i, (n, display, st, children))| {
            let id = i as i64 + 1;
            let meta = XEventMetadata {
                id: id + shift,
                name: n.get(EVENT_NAMES),
                display_name: display.clone(),
                stats: st.iter().map(|s| stat(s, stats)).collect(),
                child_id: children.iter().map(Int::get).collect(),
                ..XEventMetadata::default()
            };
            (id, meta)
        })
        .collect();
    let lines = p
        .lines
        .iter()
        .map(|l| {
            let mut evs: Vec<XEvent> = l
                .events
                .iter()
                .map(|e| {
                    let mut event = XEvent::new(e.id.get(events), 0, e.duration_ps.get())
                        .with_stats(e.stats.iter().map(|s| stat(s, stats)).collect());
                    match &e.offset {
                        Some(Ok(v)) => event.set_data(XEventData::OffsetPs(v.get())),
                        Some(Err(v)) => event.set_data(XEventData::NumOccurrences(v.get())),
                        None => {}
                    }
                    event
                })
                .collect();
            if l.sorted {
                sort_events(&mut evs);
            }
            XLine {
                id: l.id.get(),
                display_id: l.display_id.get(),
                name: l.name.get(LINE_NAMES),
                display_name: l.display_name.clone(),
                timestamp_ns: l.timestamp_ns.get(),
                duration_ps: l.duration_ps.get(),
                events: evs,
            }
        })
        .collect();
    XPlane {
        id: p.id.get(),
        name,
        lines,
        event_metadata,
        stat_metadata,
        stats: p.stats.iter().map(|s| stat(s, stats)).collect(),
    }
}

fuzz_target!(|input: Input| {
    let space = XSpace {
        planes: input.planes.iter().map(plane).collect(),
        errors: Vec::new(),
        warnings: Vec::new(),
        hostnames: input.hostnames.clone(),
    };
    exercise::dump(&space);
    // The round trip holds for any space, not only decoded ones.
    let bytes = xplane::encode(&space);
    let decoded = xplane::decode(&bytes).expect("decode(encode(space))");
    assert!(
        xplane::encode(&decoded) == bytes,
        "round trip changed the bytes"
    );

    let mut trace = Vec::new();
    perfetto::write_to(&space, &mut trace).expect("write to a Vec");
    if let Err(e) = proto::Trace::decode(trace.as_slice()) {
        panic!("the Perfetto trace does not decode: {e}");
    }
    drop(trace);

    let mut json = Vec::new();
    chrome::write_to(&space, &mut json).expect("write to a Vec");
    if let Err(e) = serde_json::from_slice::<serde_json::Value>(&json) {
        let at = e.column().saturating_sub(60);
        let line = json.split(|&b| b == b'\n').nth(e.line().saturating_sub(1));
        let near = line.map(|l| {
            String::from_utf8_lossy(&l[at.min(l.len())..(at + 120).min(l.len())]).into_owned()
        });
        panic!("the Chrome trace is not JSON: {e}, near {near:?}");
    }
    drop(json);

    if exercise::skip_summary(&space) {
        return;
    }
    let profile = Profile::new(space);
    let mut options: Vec<_> = input
        .options
        .iter()
        .take(4)
        .map(|&o| exercise::options(o))
        .collect();
    if options.is_empty() {
        options.push(Default::default());
    }
    for o in &options {
        let summary = Summary::of(&profile, o);
        let _ = summary.table();
        let _ = summary.to_csv();
        if let Err(e) = serde_json::from_str::<serde_json::Value>(&summary.to_json()) {
            panic!("the summary's JSON does not parse: {e}");
        }
    }
});
