//! A GPU profile (synthetic CUPTI records converted onto a real host session) written
//! as a Perfetto trace: every sequence goes forward in time, the host and GPU tracks
//! keep all their slices, and every launch → kernel flow has both ends.

use std::collections::{HashMap, HashSet};

use profiler_core::{session, trace, ProfileOptions};
use profiler_cuda::synthetic::{self, Launch};
use profiler_export::perfetto::{self, proto};
use prost::Message;

#[test]
fn a_gpu_profile_keeps_each_sequence_in_time_order() {
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    for step in 0..4 {
        let _t = trace!("Train", step_num = step);
        let _a = trace!("attn");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let mut space = session::stop().expect("stop").into_xspace();
    let host = space
        .plane(profiler_core::schema::HOST_PLANE)
        .expect("host");
    let attn = host
        .event_metadata
        .values()
        .find(|m| m.name == "attn")
        .expect("attn")
        .id;
    let line = host
        .lines
        .iter()
        .find(|l| l.events.iter().any(|e| e.metadata_id == attn))
        .expect("line");
    let launches: Vec<Launch> = line
        .events
        .iter()
        .filter(|e| e.metadata_id == attn)
        .map(|e| {
            let at = line.timestamp_ns * 1000 + e.offset_ps();
            Launch {
                window: ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64),
                kernel: "gemm",
                copy_kind: 1,
            }
        })
        .collect();
    let device = synthetic::trace(line.id as u32, &launches);
    profiler_cuda::convert::add_to_space(&device, &mut space, &Some);

    let mut bytes = Vec::new();
    let totals = perfetto::write_to(&space, &mut bytes).expect("write");
    let trace = proto::Trace::decode(bytes.as_slice()).expect("a Trace");

    let mut last: HashMap<u32, u64> = HashMap::new();
    let mut thread_names: HashMap<u64, String> = HashMap::new();
    let mut defaults = HashMap::new();
    let mut begins: HashMap<String, u32> = HashMap::new();
    let (mut names, mut outs, mut ins) = (HashMap::new(), HashSet::new(), HashSet::new());
    for (i, p) in trace.packet.iter().enumerate() {
        let seq = p.trusted_packet_sequence_id.expect("sequence");
        p.note_defaults(&mut defaults);
        if let Some(d) = &p.interned_data {
            for n in &d.event_names {
                names.insert((seq, n.iid.expect("iid")), n.name.clone().expect("name"));
            }
        }
        if let Some(t) = p.track_descriptor.as_ref().and_then(|d| d.thread.as_ref()) {
            let uuid = p
                .track_descriptor
                .as_ref()
                .and_then(|d| d.uuid)
                .expect("uuid");
            thread_names.insert(uuid, t.thread_name.clone().expect("name"));
        }
        let Some(ts) = p.timestamp else { continue };
        let previous = last.insert(seq, ts).unwrap_or(0);
        assert!(ts >= previous, "packet {i}: sequence {seq} goes back");
        let Some(e) = &p.track_event else { continue };
        if e.r#type == Some(proto::TYPE_SLICE_BEGIN) {
            let name = &names[&(seq, e.name_iid.expect("name"))];
            *begins.entry(name.clone()).or_default() += 1;
            let track = &thread_names[&p.event_track(&defaults).expect("track")];
            assert!(
                !name.starts_with("gemm") || track.starts_with("Stream #7"),
                "{name} on {track}"
            );
        }
        outs.extend(e.flow_ids.iter().copied());
        ins.extend(e.terminating_flow_ids.iter().copied());
    }
    // Host and device slices, all there: 4 steps and attns, per launch its kernel,
    // copy and three kept API calls (launch, copy, synchronisation).
    for (name, n) in [
        ("Train", 4),
        ("attn", 4),
        ("gemm", 4),
        ("MemcpyHToD", 4),
        ("cuLaunchKernel", 4),
        ("cuMemcpyHtoDAsync_v2", 4),
        ("cuStreamSynchronize", 4),
    ] {
        assert_eq!(begins.get(name), Some(&n), "{name}: {begins:?}");
    }
    // Launch → kernel and copy call → copy, both ends each.
    assert_eq!(outs.len(), 8);
    assert_eq!(outs, ins);
    assert_eq!(totals.flows, 8);
    assert!(thread_names.values().any(|n| n == "Stream #8(Memcpy)"));
}
