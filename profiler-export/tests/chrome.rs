//! The Chrome JSON trace, parsed back: names, nesting, counters and flows. CI also
//! loads it with the Chrome DevTools trace engine.

use std::collections::HashMap;
use std::io::Read;

use prof_test_support::spaces;
use profiler_core::schema;
use profiler_export::chrome;
use serde_json::Value;

fn events() -> Vec<Value> {
    let mut bytes = Vec::new();
    chrome::write_to(&spaces::space(), &mut bytes).expect("write");
    let doc: Value = serde_json::from_slice(&bytes).expect("valid JSON");
    assert_eq!(
        doc["otherData"]["profile_start_unix_ns"],
        spaces::START_UNIX_NS
    );
    doc["traceEvents"].as_array().expect("traceEvents").clone()
}

fn ns(v: &Value) -> i64 {
    (v.as_f64().expect("number") * 1000.0).round() as i64
}

#[test]
fn every_event_is_named_and_counted_once() {
    let events = events();
    assert!(
        events.iter().all(|e| e["name"].is_string()),
        "an event without a name"
    );
    let slices: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "X" || e["ph"] == "I")
        .collect();
    assert_eq!(slices.len() as u64, spaces::SLICES);
    let total: i64 = slices
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| ns(&e["dur"]))
        .sum();
    assert_eq!(total, spaces::DURATION_NS);
    let train = slices.iter().find(|e| e["name"] == "Train").expect("Train");
    assert_eq!(ns(&train["ts"]), 1000);
    assert_eq!(train["args"]["step_num"], 3);
    let bwd = slices
        .iter()
        .find(|e| e["name"] == "backward")
        .expect("backward");
    assert_eq!(bwd["args"]["phase"], "grad \"all\"\n");
    assert_eq!(bwd["args"]["bytes"].as_u64(), Some(u64::MAX));
}

#[test]
fn slices_on_a_thread_nest_or_are_disjoint() {
    let mut per_thread: HashMap<(i64, i64), Vec<(i64, i64)>> = HashMap::new();
    for e in events().iter().filter(|e| e["ph"] == "X") {
        let key = (
            e["pid"].as_i64().expect("pid"),
            e["tid"].as_i64().expect("tid"),
        );
        let start = ns(&e["ts"]);
        per_thread
            .entry(key)
            .or_default()
            .push((start, start + ns(&e["dur"])));
    }
    for (thread, slices) in per_thread {
        for a in &slices {
            for b in &slices {
                let partial = a.0 < b.0 && b.0 < a.1 && a.1 < b.1;
                assert!(!partial, "{thread:?}: {a:?} and {b:?} partially overlap");
            }
        }
    }
}

#[test]
fn threads_counters_and_flows() {
    let events = events();
    let threads: Vec<_> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .map(|e| e["args"]["name"].as_str().expect("name").to_owned())
        .collect();
    assert_eq!(
        threads,
        ["main", "worker", "io", "io (2)", "Stream #7(Kernel)"]
    );
    let counters: Vec<_> = events
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| {
            (
                e["name"].as_str().expect("name").to_owned(),
                e["args"]["value"].as_f64(),
            )
        })
        .collect();
    assert_eq!(
        counters,
        [
            (schema::HOST_BYTES_IN_USE.to_owned(), Some(1.0)),
            (schema::HOST_BYTES_IN_USE.to_owned(), Some(3.0)),
            (schema::HOST_BYTES_IN_USE.to_owned(), Some(2.0))
        ]
    );
    let ids = |ph: &str| {
        let mut v: Vec<_> = events
            .iter()
            .filter(|e| e["ph"] == ph)
            .map(|e| e["id"].as_u64())
            .collect();
        v.sort();
        v
    };
    assert_eq!(ids("s").len() as u64, spaces::FLOWS);
    assert_eq!(ids("s"), ids("f"));
    // Viewers key a flow by category, name and id: the launch (host) to kernel
    // (device) flow has one category at both ends.
    let mut cats: HashMap<u64, Vec<String>> = HashMap::new();
    for e in events.iter().filter(|e| e["ph"] == "s" || e["ph"] == "f") {
        let cat = e["cat"].as_str().expect("cat").to_owned();
        cats.entry(e["id"].as_u64().expect("id"))
            .or_default()
            .push(cat);
    }
    for (id, cats) in cats {
        assert_eq!(cats[0], cats[1], "flow {id}");
    }
}

#[test]
fn gzip_by_extension() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("h.{}", chrome::EXTENSION_GZ));
    chrome::write(&spaces::space(), &path).expect("write");
    let mut json = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&path).expect("open"))
        .read_to_string(&mut json)
        .expect("gunzip");
    let doc: Value = serde_json::from_str(&json).expect("valid JSON");
    assert!(doc["traceEvents"].as_array().is_some_and(|a| !a.is_empty()));
}

#[test]
fn marker_scopes_become_instant_scopes() {
    use profiler_core::domain::{Domain, Marker, MarkerScope};
    static D: Domain = Domain::new("d");
    static G: Marker = Marker::new(&D, "g");
    static P: Marker = Marker::new(&D, "p");
    static T: Marker = Marker::new(&D, "t");
    profiler_core::session::start(Default::default(), None).expect("start");
    G.mark(MarkerScope::Global);
    P.mark(MarkerScope::Process);
    T.mark(MarkerScope::Thread);
    let profile = profiler_core::session::stop().expect("stop");
    let mut bytes = Vec::new();
    chrome::write_to(profile.xspace(), &mut bytes).expect("write");
    let doc: Value = serde_json::from_slice(&bytes).expect("valid JSON");
    let scopes: HashMap<String, String> = doc["traceEvents"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["ph"] == "I")
        .map(|e| {
            (
                e["name"].as_str().unwrap_or("").to_owned(),
                e["s"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(scopes["g"], "g");
    assert_eq!(scopes["p"], "p");
    assert_eq!(scopes["t"], "t");
}
