//! Files from other producers: unnamed lines and events, flows whose consumer starts
//! before its producer, and slice boundaries that must survive Chrome JSON's
//! microsecond doubles.

use std::collections::HashMap;

use profiler_core::schema;
use profiler_core::xspace::{PlaneBuilder, XEvent, XEventMetadata, XLine, XSpace, XStatValue};
use profiler_export::chrome;
use profiler_export::perfetto::{self, proto};
use prost::Message;
use serde_json::Value;

fn event(metadata_id: i64, start_ns: i64, dur_ns: i64) -> XEvent {
    XEvent::new(metadata_id, start_ns * 1000, dur_ns * 1000)
}

fn space(lines: Vec<XLine>, plane: PlaneBuilder) -> XSpace {
    let mut plane = plane;
    for line in lines {
        plane.add_line(line);
    }
    XSpace {
        planes: vec![plane.build()],
        hostnames: vec!["other".into()],
        ..XSpace::default()
    }
}

fn perfetto_trace(space: &XSpace) -> proto::Trace {
    let mut bytes = Vec::new();
    perfetto::write_to(space, &mut bytes).expect("write");
    proto::Trace::decode(bytes.as_slice()).expect("a Trace")
}

fn chrome_text(space: &XSpace) -> String {
    let mut bytes = Vec::new();
    chrome::write_to(space, &mut bytes).expect("write");
    String::from_utf8(bytes).expect("utf-8")
}

fn chrome_events(space: &XSpace) -> Vec<Value> {
    let doc: Value = serde_json::from_str(&chrome_text(space)).expect("JSON");
    doc["traceEvents"].as_array().expect("events").clone()
}

/// A line with no name, an event whose metadata has no name, an event with no
/// metadata at all.
fn unnamed() -> XSpace {
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let named = plane.event_metadata_id("named");
    let mut built = space(Vec::new(), plane);
    let host = &mut built.planes[0];
    host.event_metadata.insert(
        2,
        XEventMetadata {
            id: 2,
            ..XEventMetadata::default()
        },
    );
    host.lines.push(XLine {
        id: 5,
        events: vec![event(named, 0, 100), event(2, 10, 20), event(77, 40, 20)],
        ..XLine::default()
    });
    built
}

#[test]
fn unnamed_lines_and_events_get_names_in_perfetto() {
    let trace = perfetto_trace(&unnamed());
    let threads: Vec<_> = trace
        .packet
        .iter()
        .filter_map(|p| {
            p.track_descriptor
                .as_ref()?
                .thread
                .as_ref()?
                .thread_name
                .clone()
        })
        .collect();
    assert_eq!(threads, ["Line 5"]);
    let names: HashMap<u64, String> = trace
        .packet
        .iter()
        .filter_map(|p| p.interned_data.as_ref())
        .flat_map(|d| &d.event_names)
        .map(|n| (n.iid.expect("iid"), n.name.clone().expect("name")))
        .collect();
    let used: Vec<_> = trace
        .packet
        .iter()
        .filter_map(|p| p.track_event.as_ref()?.name_iid)
        .map(|iid| names[&iid].clone())
        .collect();
    assert_eq!(used, ["named", "Event 2", "Event 77"]);
}

#[test]
fn unnamed_lines_and_events_get_names_in_chrome_json() {
    let events = chrome_events(&unnamed());
    let thread = events
        .iter()
        .find(|e| e["name"] == "thread_name")
        .expect("thread name");
    assert_eq!(thread["args"]["name"], "Line 5");
    let slices: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(slices, ["named", "Event 2", "Event 77"]);
}

/// A producer at 500 ns on one thread whose consumer ran at 100 ns on another.
fn backwards_flow() -> XSpace {
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let send = plane.event_metadata_id("send");
    let recv = plane.event_metadata_id("recv");
    let mut producer = event(send, 500, 50);
    producer
        .stats
        .push(plane.stat(schema::PRODUCER_TYPE, XStatValue::Int64(1)));
    producer
        .stats
        .push(plane.stat(schema::PRODUCER_ID, XStatValue::Uint64(9)));
    let mut consumer = event(recv, 100, 50);
    consumer
        .stats
        .push(plane.stat(schema::CONSUMER_TYPE, XStatValue::Int64(1)));
    consumer
        .stats
        .push(plane.stat(schema::CONSUMER_ID, XStatValue::Uint64(9)));
    let line = |id, name: &str, events| XLine {
        id,
        name: name.into(),
        events,
        ..XLine::default()
    };
    space(
        vec![
            line(1, "producer", vec![producer]),
            line(2, "consumer", vec![consumer]),
        ],
        plane,
    )
}

#[test]
fn a_flow_whose_consumer_comes_first_starts_at_it_in_perfetto() {
    let trace = perfetto_trace(&backwards_flow());
    let (mut starts, mut ends) = (HashMap::new(), HashMap::new());
    for p in &trace.packet {
        let Some(e) = &p.track_event else { continue };
        let ts = p.timestamp.expect("timestamp");
        for &id in &e.flow_ids {
            starts.insert(id, ts);
        }
        for &id in &e.terminating_flow_ids {
            ends.insert(id, ts);
        }
    }
    assert_eq!(starts.len(), 1, "{starts:?}");
    for (id, start) in starts {
        // The trace processor meets the flow's start first, as it needs to.
        assert!(
            ends[&id] >= start,
            "flow {id} ends at {} before {start}",
            ends[&id]
        );
    }
}

#[test]
fn a_flow_whose_consumer_comes_first_starts_at_it_in_chrome_json() {
    let events = chrome_events(&backwards_flow());
    let at = |ph: &str| {
        let e = events.iter().find(|e| e["ph"] == ph).expect("flow event");
        e["ts"].as_f64().expect("ts")
    };
    assert!(
        at("s") <= at("f"),
        "s at {} after f at {}",
        at("s"),
        at("f")
    );
    assert_eq!(events.iter().filter(|e| e["ph"] == "s").count(), 1);
}

/// Per line, a parent `[0, end]`, a child `[start, end]` ending with it, and a next
/// slice from `end`: the starts and ends where adding `ts + dur` in doubles used to
/// put the child past its parent or the parent past the next slice's start.
fn boundaries() -> (XSpace, Vec<(i64, i64)>) {
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let (p, c, n) = (
        plane.event_metadata_id("parent"),
        plane.event_metadata_id("child"),
        plane.event_metadata_id("next"),
    );
    let mut pairs = Vec::new();
    let mut lines = Vec::new();
    for start in 1..40 {
        for end in start + 1..start + 40 {
            pairs.push((start, end));
            lines.push(XLine {
                id: lines.len() as i64 + 1,
                name: format!("{start}..{end}"),
                events: vec![
                    event(p, 0, end),
                    event(c, start, end - start),
                    event(n, end, 3),
                ],
                ..XLine::default()
            });
        }
    }
    (space(lines, plane), pairs)
}

/// The `ts` and `dur` texts of each `X` event by thread id, in order, as the writer
/// lays them out (one event a line), parsed as a JavaScript reader parses them.
fn slice_times(text: &str) -> HashMap<i64, Vec<(f64, f64)>> {
    let field = |line: &str, key: &str| -> Option<String> {
        let at = line.find(key)? + key.len();
        let rest = &line[at..];
        let end = rest.find([',', '}'])?;
        Some(rest[..end].to_owned())
    };
    let mut by_thread: HashMap<i64, Vec<(f64, f64)>> = HashMap::new();
    for line in text.lines().filter(|l| l.contains("\"ph\":\"X\"")) {
        let number = |key| field(line, key).and_then(|v| v.parse::<f64>().ok());
        let tid = field(line, "\"tid\":")
            .and_then(|v| v.parse().ok())
            .expect("tid");
        let ts = number("\"ts\":").expect("ts");
        let dur = number("\"dur\":").expect("dur");
        by_thread.entry(tid).or_default().push((ts, dur));
    }
    by_thread
}

#[test]
fn nesting_survives_adding_microsecond_doubles() {
    let (space, pairs) = boundaries();
    let times = slice_times(&chrome_text(&space));
    assert_eq!(times.len(), pairs.len());
    for ((start, end), tid) in pairs.iter().zip(1..) {
        let slices = &times[&tid];
        let [(p_ts, p_dur), (c_ts, c_dur), (n_ts, _)] = slices[..] else {
            panic!("{start}..{end}: {slices:?}");
        };
        // What the DevTools engine compares.
        assert!(
            c_ts + c_dur <= p_ts + p_dur,
            "{start}..{end}: child ends after parent"
        );
        assert!(
            p_ts + p_dur <= n_ts,
            "{start}..{end}: parent ends after next starts"
        );
        // What Perfetto's trace processor rounds to.
        assert_eq!((c_ts * 1000.0).round() as i64, *start);
        assert_eq!((c_dur * 1000.0).round() as i64, end - start);
        assert_eq!((p_dur * 1000.0).round() as i64, *end);
    }
}
