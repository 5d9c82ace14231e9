//! The Perfetto trace, read back with the same schema: the rules the trace processor
//! applies. CI also decodes it with Perfetto's own `perfetto_trace_pb2`.

use std::collections::{HashMap, HashSet};

use prof_test_support::spaces;
use profiler_export::perfetto::{self, proto};
use prost::Message;

fn trace() -> (proto::Trace, profiler_export::timeline::Totals) {
    let mut bytes = Vec::new();
    let totals = perfetto::write_to(&spaces::space(), &mut bytes).expect("write");
    (
        proto::Trace::decode(bytes.as_slice()).expect("a Trace"),
        totals,
    )
}

#[test]
fn each_sequence_clears_its_state_first_and_needs_it_after() {
    let (trace, _) = trace();
    let first = &trace.packet[0];
    assert_eq!(first.trusted_packet_sequence_id, Some(1));
    assert_eq!(
        first.sequence_flags,
        Some(proto::SEQ_INCREMENTAL_STATE_CLEARED)
    );
    assert!(first.clock_snapshot.is_some());
    let mut seen = HashSet::new();
    for (i, p) in trace.packet.iter().enumerate() {
        let seq = p.trusted_packet_sequence_id.expect("sequence id");
        if seen.insert(seq) {
            assert_eq!(
                p.sequence_flags,
                Some(proto::SEQ_INCREMENTAL_STATE_CLEARED),
                "packet {i}: first of sequence {seq}"
            );
        } else if p.track_event.is_some() {
            assert_eq!(
                p.sequence_flags,
                Some(proto::SEQ_NEEDS_INCREMENTAL_STATE),
                "packet {i}"
            );
        }
    }
}

/// What the Perfetto SDK writes, and checkers of the format want: every sequence in
/// time order. The fixture's later lines (the worker thread, the GPU stream) start
/// before the main thread's last events, which one shared sequence put before them.
#[test]
fn every_sequence_goes_forward_in_time_and_a_track_keeps_its_sequence() {
    let (trace, _) = trace();
    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut track_sequence: HashMap<u64, u32> = HashMap::new();
    let mut defaults = HashMap::new();
    for (i, p) in trace.packet.iter().enumerate() {
        let seq = p.trusted_packet_sequence_id.expect("sequence id");
        p.note_defaults(&mut defaults);
        if let Some(d) = &p.track_descriptor {
            if d.thread.is_some() || d.counter.is_some() {
                let uuid = d.uuid.expect("uuid");
                assert_eq!(track_sequence.insert(uuid, seq), None, "packet {i}");
                // The sequence's events leave their track out: it is the default.
                assert_eq!(defaults.get(&seq), Some(&uuid), "packet {i}");
            }
        }
        let Some(ts) = p.timestamp else { continue };
        let previous = last.insert(seq, ts).unwrap_or(0);
        assert!(
            ts >= previous,
            "packet {i}: sequence {seq} goes back from {previous} to {ts}"
        );
        if let Some(e) = &p.track_event {
            assert_eq!(e.track_uuid, None, "packet {i}: the sequence's default");
            let track = p.event_track(&defaults).expect("track");
            assert_eq!(track_sequence.get(&track), Some(&seq), "packet {i}");
        }
    }
    // The host's threads and lanes, its counter track and the GPU stream: each its own.
    assert_eq!(track_sequence.len(), 6, "{track_sequence:?}");
    let distinct: HashSet<_> = track_sequence.values().collect();
    assert_eq!(distinct.len(), track_sequence.len());
}

#[test]
fn tracks_and_interned_ids_are_defined_on_their_sequence_before_use() {
    let (trace, _) = trace();
    let mut tracks = HashSet::new();
    let mut defaults = HashMap::new();
    // Per sequence: names, categories, argument names.
    type Tables = [HashSet<u64>; 3];
    let mut interned: HashMap<u32, Tables> = HashMap::new();
    for (i, p) in trace.packet.iter().enumerate() {
        let seq = p.trusted_packet_sequence_id.expect("sequence id");
        p.note_defaults(&mut defaults);
        let tables = interned.entry(seq).or_default();
        if let Some(d) = &p.interned_data {
            tables[0].extend(d.event_names.iter().map(|n| n.iid.expect("iid")));
            tables[1].extend(d.event_categories.iter().map(|n| n.iid.expect("iid")));
            tables[2].extend(d.debug_annotation_names.iter().map(|n| n.iid.expect("iid")));
        }
        if let Some(t) = &p.track_descriptor {
            if let Some(parent) = t.parent_uuid {
                assert!(
                    tracks.contains(&parent),
                    "packet {i}: parent {parent} undeclared"
                );
            }
            assert!(
                tracks.insert(t.uuid.expect("uuid")),
                "packet {i}: uuid declared twice"
            );
        }
        if let Some(e) = &p.track_event {
            assert!(
                tracks.contains(&p.event_track(&defaults).expect("track")),
                "packet {i}: track undeclared"
            );
            if let Some(n) = e.name_iid {
                assert!(
                    tables[0].contains(&n),
                    "packet {i}: name iid {n} undefined on sequence {seq}"
                );
            }
            assert!(
                e.category_iids.iter().all(|c| tables[1].contains(c)),
                "packet {i}"
            );
            assert!(
                e.debug_annotations
                    .iter()
                    .all(|a| tables[2].contains(&a.name_iid.expect("name"))),
                "packet {i}"
            );
        }
    }
}

#[test]
fn slices_balance_flows_pair_and_counters_have_values() {
    let (trace, totals) = trace();
    let mut open: HashMap<u64, Vec<u64>> = HashMap::new();
    let (mut slices, mut duration_ns, mut counters) = (0u64, 0i64, 0u64);
    let (mut outs, mut ins) = (HashSet::new(), HashSet::new());
    let mut defaults = HashMap::new();
    for p in &trace.packet {
        p.note_defaults(&mut defaults);
        let Some(e) = &p.track_event else { continue };
        let ts = p.timestamp.expect("timestamp");
        assert!(ts >= spaces::START_UNIX_NS, "absolute Unix nanoseconds");
        let track = p.event_track(&defaults).expect("track");
        match e.r#type.expect("type") {
            proto::TYPE_SLICE_BEGIN => open.entry(track).or_default().push(ts),
            proto::TYPE_SLICE_END => {
                let begin = open
                    .get_mut(&track)
                    .and_then(Vec::pop)
                    .expect("END without BEGIN");
                duration_ns += (ts - begin) as i64;
                slices += 1;
            }
            proto::TYPE_INSTANT => slices += 1,
            proto::TYPE_COUNTER => {
                assert!(e.counter_value.is_some() || e.double_counter_value.is_some());
                counters += 1;
            }
            t => panic!("unexpected type {t}"),
        }
        outs.extend(e.flow_ids.iter().copied());
        ins.extend(e.terminating_flow_ids.iter().copied());
    }
    assert!(
        open.values().all(Vec::is_empty),
        "unclosed slices: {open:?}"
    );
    assert_eq!(slices, spaces::SLICES);
    assert_eq!(slices, totals.slices);
    assert_eq!(duration_ns, spaces::DURATION_NS);
    assert_eq!(counters, spaces::COUNTER_SAMPLES);
    assert_eq!(outs, ins);
    assert_eq!(outs.len() as u64, spaces::FLOWS);
}

#[test]
fn processes_threads_and_names_come_through() {
    let (trace, _) = trace();
    let processes: Vec<_> = trace
        .packet
        .iter()
        .filter_map(|p| {
            p.track_descriptor
                .as_ref()?
                .process
                .as_ref()?
                .process_name
                .clone()
        })
        .collect();
    assert_eq!(processes, ["/host:CPU", "/device:GPU:0"]);
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
    assert_eq!(
        threads,
        ["main", "worker", "io", "io (2)", "Stream #7(Kernel)"]
    );
    let names: Vec<_> = trace
        .packet
        .iter()
        .filter_map(|p| p.interned_data.as_ref())
        .flat_map(|d| d.event_names.iter().filter_map(|n| n.name.clone()))
        .collect();
    assert!(names.contains(&"gemm_kernel".to_owned()), "{names:?}");
    // The train step's first packet: absolute start, its step number as an argument.
    let step = trace
        .packet
        .iter()
        .find(|p| {
            p.track_event
                .as_ref()
                .is_some_and(|e| e.name_iid == Some(1))
        })
        .expect("first event");
    assert_eq!(step.timestamp, Some(spaces::START_UNIX_NS + 1000));
    let annotation = &step.track_event.as_ref().expect("event").debug_annotations[0];
    assert_eq!(annotation.value, Some(proto::AnnotationValue::Int(3)));
}

#[test]
fn written_atomically_and_errors_name_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.pftrace");
    let totals = perfetto::write(&spaces::space(), &path).expect("write");
    assert_eq!(totals.slices, spaces::SLICES);
    assert!(proto::Trace::decode(std::fs::read(&path).expect("read").as_slice()).is_ok());
    let err = perfetto::write(&spaces::space(), &dir.path().join("no/such/t.pftrace"))
        .expect_err("missing directory");
    assert!(err.to_string().contains("no/such"), "{err}");
}
