//! Flows of profiles prof did not record, as Perfetto and Chrome JSON readers bind
//! them: every flow id has exactly one start and one end, the start first. XProf links
//! one producer to any number of consumers (a JAX `cuGraphLaunch` to each kernel of
//! the graph); each pair becomes a flow of its own. Also: a file with no wall-clock
//! start still gets Unix-epoch timestamps.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use profiler_core::schema;
use profiler_core::xspace::{PlaneBuilder, XEvent, XLine, XSpace, XStatValue};
use profiler_export::convert::{convert, Converted};
use profiler_export::perfetto::{self, proto};
use profiler_export::timeline::NO_CLOCK_UNIX_NS;
use profiler_export::ExportFormat;
use prost::Message;
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(name)
}

/// Converts `input` to Perfetto and Chrome JSON in a fresh directory, as `prof-convert
/// --out` does: the trace, the JSON document, and what each conversion reported.
fn converted(input: &Path) -> (proto::Trace, Value, Vec<Converted>, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let done = convert(
        input,
        &[ExportFormat::Perfetto, ExportFormat::ChromeJson],
        Some(&out),
    )
    .expect("converted");
    let trace = proto::Trace::decode(std::fs::read(&done[0].output).expect("read").as_slice())
        .expect("a Trace");
    let json =
        serde_json::from_slice(&std::fs::read(&done[1].output).expect("read")).expect("JSON");
    (trace, json, done, dir)
}

/// Each flow id's (start, end) timestamps in a Perfetto trace; fails unless every id
/// is started once and ended once, no earlier than it started (what Perfetto's trace
/// processor needs to draw it).
fn perfetto_flows(trace: &proto::Trace) -> HashMap<u64, (u64, u64)> {
    let mut starts: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut ends: HashMap<u64, Vec<u64>> = HashMap::new();
    for packet in &trace.packet {
        let Some(event) = &packet.track_event else {
            continue;
        };
        let ts = packet.timestamp.expect("a timestamp");
        for &id in &event.flow_ids {
            starts.entry(id).or_default().push(ts);
        }
        for &id in &event.terminating_flow_ids {
            ends.entry(id).or_default().push(ts);
        }
    }
    for (id, at) in &ends {
        assert!(
            starts.contains_key(id),
            "flow {id} ends {at:?} but never starts"
        );
    }
    starts
        .into_iter()
        .map(|(id, started)| {
            let ended = ends.get(&id).cloned().unwrap_or_default();
            assert!(
                started.len() == 1 && ended.len() == 1,
                "flow {id}: {} starts and {} ends",
                started.len(),
                ended.len()
            );
            assert!(ended[0] >= started[0], "flow {id} ends before it starts");
            (id, (started[0], ended[0]))
        })
        .collect()
}

/// The same for a Chrome JSON trace's `s` and `f` events (in µs).
fn chrome_flows(doc: &Value) -> HashMap<u64, (f64, f64)> {
    let mut ends: HashMap<(u64, &str), Vec<f64>> = HashMap::new();
    for event in doc["traceEvents"].as_array().expect("events") {
        let phase = event["ph"].as_str().expect("ph");
        if phase == "s" || phase == "f" {
            let id = event["id"].as_u64().expect("id");
            let ts = event["ts"].as_f64().expect("ts");
            ends.entry((id, phase)).or_default().push(ts);
        }
    }
    let mut flows = HashMap::new();
    for (&(id, phase), at) in &ends {
        let other = if phase == "s" { "f" } else { "s" };
        let paired = ends.get(&(id, other)).map_or(0, Vec::len);
        assert!(
            at.len() == 1 && paired == 1,
            "flow {id}: {} {phase:?} and {paired} {other:?} events",
            at.len()
        );
        if phase == "s" {
            let end = ends[&(id, "f")][0];
            assert!(end >= at[0], "flow {id} ends before it starts");
            flows.insert(id, (at[0], end));
        }
    }
    flows
}

#[test]
fn every_flow_of_a_jax_gpu_profile_binds() {
    let (trace, json, done, _dir) =
        converted(&fixture("gpu-h200/jax_0.11.2_mlp_20steps.xplane.pb"));
    let perfetto = perfetto_flows(&trace);
    let chrome = chrome_flows(&json);
    // 20 steps: each graph launch's 11 kernels and each copy (280 device events, 80
    // launches and copies on the host), and JAX's host `_p`/`_c` links (63 pairs).
    assert_eq!(perfetto.len(), 343);
    assert_eq!(chrome.len(), 343);
    for c in &done {
        assert_eq!(c.totals.flows, 343, "{:?}", c.format);
    }
}

/// The flows of a probe, with the Perfetto trace they came from.
fn probe(name: &str) -> (HashMap<u64, (u64, u64)>, proto::Trace) {
    let (trace, json, _, _dir) = converted(&fixture(&format!("probes/{name}.xplane.pb")));
    let flows = perfetto_flows(&trace);
    assert_eq!(chrome_flows(&json).len(), flows.len(), "{name}");
    (flows, trace)
}

/// How many flows start at each timestamp (the probes' events start apart).
fn starts_by_ts(flows: &HashMap<u64, (u64, u64)>) -> HashMap<u64, usize> {
    let mut by_ts = HashMap::new();
    for &(start, _) in flows.values() {
        *by_ts.entry(start).or_default() += 1;
    }
    by_ts
}

#[test]
fn one_producer_with_two_consumers_starts_a_flow_to_each() {
    let (flows, _) = probe("flow_two_consumers");
    assert_eq!(flows.len(), 2);
    let starts = starts_by_ts(&flows);
    assert_eq!(starts.len(), 1, "both from the producer: {flows:?}");
    let mut ends: Vec<u64> = flows.values().map(|&(_, end)| end).collect();
    ends.sort_unstable();
    ends.dedup();
    assert_eq!(ends.len(), 2, "one to each consumer: {flows:?}");
}

#[test]
fn a_second_producer_of_an_id_starts_nothing() {
    let (flows, _) = probe("flow_two_producers");
    assert_eq!(flows.len(), 1, "{flows:?}");
}

#[test]
fn a_producer_on_the_counters_line_is_no_flow() {
    let (flows, trace) = probe("flow_counter_end");
    assert!(flows.is_empty(), "{flows:?}");
    let ended = trace
        .packet
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .any(|e| !e.terminating_flow_ids.is_empty());
    assert!(!ended, "a flow ends that never started");
}

/// A space with no `Task Environment` plane: lines relative to a start it does not
/// record.
fn without_start() -> XSpace {
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let op = plane.event_metadata_id("op");
    let mut producer = XEvent::new(op, 1_000, 5_000);
    producer
        .stats
        .push(plane.stat(schema::PRODUCER_ID, XStatValue::Uint64(3)));
    let mut consumer = XEvent::new(op, 9_000, 5_000);
    consumer
        .stats
        .push(plane.stat(schema::CONSUMER_ID, XStatValue::Uint64(3)));
    plane.add_line(XLine {
        id: 1,
        name: "t".into(),
        events: vec![producer, consumer],
        ..XLine::default()
    });
    XSpace {
        planes: vec![plane.build()],
        ..XSpace::default()
    }
}

fn timestamps(trace: &proto::Trace) -> Vec<u64> {
    trace.packet.iter().filter_map(|p| p.timestamp).collect()
}

#[test]
fn a_space_with_no_start_time_gets_a_unix_epoch_timeline() {
    let mut bytes = Vec::new();
    perfetto::write_to(&without_start(), &mut bytes).expect("write");
    let trace = proto::Trace::decode(bytes.as_slice()).expect("a Trace");
    let ts = timestamps(&trace);
    assert!(!ts.is_empty());
    let epoch = NO_CLOCK_UNIX_NS as u64;
    assert!(
        ts.iter().all(|&t| (epoch..epoch + 1000).contains(&t)),
        "{ts:?}"
    );
    assert_eq!(perfetto_flows(&trace).len(), 1);
}

#[test]
fn a_converted_file_with_no_start_time_is_placed_at_its_modification_time() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("old.xplane.pb");
    profiler_export::xplane::write(&input, &without_start()).expect("write");
    let modified = std::fs::metadata(&input)
        .and_then(|m| m.modified())
        .expect("mtime")
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_nanos() as u64;
    let (trace, json, _, _dir) = converted(&input);
    let ts = timestamps(&trace);
    assert!(
        ts.iter().all(|&t| (modified..modified + 1000).contains(&t)),
        "{modified}: {ts:?}"
    );
    assert_eq!(
        json["otherData"]["profile_start_unix_ns"].as_u64(),
        Some(modified)
    );
}

#[test]
fn each_pair_runs_forwards_whichever_of_its_ends_came_first() {
    // A producer at 500 ns; consumers at 100 ns (another line, so it ran first) and
    // 900 ns; the producer's line is stored out of order.
    let mut plane = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let op = plane.event_metadata_id("op");
    let with = |plane: &mut PlaneBuilder, start_ns: i64, stat: &str| {
        let mut e = XEvent::new(op, start_ns * 1000, 50_000);
        e.stats.push(plane.stat(stat, XStatValue::Int64(11)));
        e
    };
    let producer = with(&mut plane, 500, schema::PRODUCER_ID);
    let early = with(&mut plane, 100, schema::CONSUMER_ID);
    let late = with(&mut plane, 900, schema::CONSUMER_ID);
    let line = |id, events| XLine {
        id,
        name: format!("t{id}"),
        events,
        ..XLine::default()
    };
    plane.add_line(line(1, vec![late, producer]));
    plane.add_line(line(2, vec![early]));
    let space = XSpace {
        planes: vec![plane.build()],
        ..XSpace::default()
    };
    let mut bytes = Vec::new();
    let totals = perfetto::write_to(&space, &mut bytes).expect("write");
    assert_eq!(totals.flows, 2);
    let trace = proto::Trace::decode(bytes.as_slice()).expect("a Trace");
    let flows = perfetto_flows(&trace);
    let epoch = NO_CLOCK_UNIX_NS as u64;
    let mut pairs: Vec<_> = flows
        .values()
        .map(|&(start, end)| (start - epoch, end - epoch))
        .collect();
    pairs.sort_unstable();
    // The early consumer's flow starts at it and ends at the producer.
    assert_eq!(pairs, [(100, 500), (500, 900)]);
    let mut json = Vec::new();
    profiler_export::chrome::write_to(&space, &mut json).expect("write");
    let doc: Value = serde_json::from_slice(&json).expect("JSON");
    assert_eq!(chrome_flows(&doc).len(), 2);
}
