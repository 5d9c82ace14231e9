//! Device memory: the bytes in use as a counter track, allocations and releases as XProf
//! memory events, and what reaches `prof::memory`.

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XPlane, XSpace, XStatValue};
use profiler_cuda::activity::DeviceTrace;
use profiler_cuda::convert::{add_to_space, DEVICE_BYTES_IN_USE};
use profiler_cuda::synthetic::{self, Names};

use crate::support::*;

#[test]
fn device_memory_in_use_is_a_counter_track_per_gpu() {
    use profiler_cuda::layout::memory_operation::{ALLOCATION, RELEASE};
    const DEVICE: u32 = 3;
    const PINNED: u32 = 2;
    let names = Names(vec![]);
    // (operation, memory kind, address, bytes, timestamp ns, device), out of order.
    let records = [
        (RELEASE, DEVICE, 0xa000, 100, 400, 0),
        (ALLOCATION, DEVICE, 0xb000, 50, 300, 0),
        (ALLOCATION, DEVICE, 0xa000, 100, 100, 0),
        (ALLOCATION, DEVICE, 0xa000, 7, 150, 1),
        (ALLOCATION, DEVICE, 0xc000, 1000, 200, 0),
        (99, DEVICE, 0xd000, 5, 250, 0), // unknown operation type
        (ALLOCATION, PINNED, 0xe000, 4096, 260, 0), // host memory
        (RELEASE, DEVICE, 0xf000, 64, 270, 0), // allocated before the trace
        (RELEASE, DEVICE, 0xc000, 1000, 500, 0),
    ];
    let mut trace = DeviceTrace::default();
    for (i, (op, memory_kind, address, bytes, at, device)) in records.into_iter().enumerate() {
        let len = if i % 2 == 0 {
            synthetic::MEMORY3_LEN
        } else {
            synthetic::MEMORY4_LEN
        };
        let r = synthetic::memory_record(op, memory_kind, address, bytes, at, device, len);
        trace
            .activities
            .push(profiler_cuda::layout::read(&r, &names).expect("record"));
    }
    let mut space = XSpace::default();
    add_to_space(&trace, &mut space, &Some);

    let samples = |plane: &str| {
        let gpu = space.plane(plane).expect(plane);
        let line = gpu
            .lines
            .iter()
            .find(|l| l.name == schema::COUNTERS_LINE)
            .expect("counters line");
        assert_eq!(line.id, i64::from(schema::COUNTERS_LINE_ID));
        assert_eq!(gpu.lines.len(), 1, "only the counters line");
        line.events
            .iter()
            .map(|e| {
                assert_eq!(gpu.event_name(e.metadata_id), Some(DEVICE_BYTES_IN_USE));
                let Some(&XStatValue::Double(v)) = gpu.find_stat(&e.stats, schema::COUNTER_VALUE)
                else {
                    panic!("no value stat");
                };
                ((line.timestamp_ns * 1000 + e.offset_ps()) / 1000, v)
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        samples("/device:GPU:0"),
        [
            (100, 100.0),
            (200, 1100.0),
            (300, 1150.0),
            (400, 1050.0),
            (500, 50.0)
        ]
    );
    assert_eq!(samples("/device:GPU:1"), [(150, 7.0)]);
    assert!(space.warnings.is_empty(), "{:?}", space.warnings);
}

/// The int64, string (or interned string) and other stats of an event, by name.
fn memory_stats(plane: &XPlane, e: &XEvent) -> std::collections::BTreeMap<String, String> {
    e.stats
        .iter()
        .map(|s| {
            let name = plane.stat_name(s.metadata_id).unwrap_or("?").to_owned();
            let value = match s.value.as_ref() {
                Some(XStatValue::Int64(v)) => format!("i{v}"),
                Some(XStatValue::Ref(id)) => {
                    format!("s{}", plane.stat_name(*id as i64).unwrap_or("?"))
                }
                Some(XStatValue::Str(v)) => format!("s{v}"),
                other => format!("?{other:?}"),
            };
            (name, value)
        })
        .collect()
}

#[test]
fn device_allocations_become_xprof_memory_events_named_by_the_annotation_open_at_the_call() {
    let (mut space, line, launches) = nested_space(2);
    let mut trace = synthetic::trace(line, &launches);
    // attn's activations 64 MiB, mlp's 16, the decoder's 8.
    let sizes: Vec<u64> = launches
        .iter()
        .map(|l| match l.kernel {
            "attn_k" => 64 << 20,
            "mlp_k" => 16 << 20,
            _ => 8 << 20,
        })
        .collect();
    trace
        .activities
        .extend(synthetic::allocations(line, &launches, &sizes));
    let calls = add_to_space(&trace, &mut space, &Some);
    let host = space.plane(schema::HOST_PLANE).expect("host");

    let mut allocations: Vec<(i64, std::collections::BTreeMap<String, String>)> =
        [schema::MEMORY_ALLOCATION, schema::MEMORY_DEALLOCATION]
            .iter()
            .flat_map(|name| {
                events(host, name).into_iter().map(move |(at, e)| {
                    let mut stats = memory_stats(host, e);
                    stats.insert("event".into(), (*name).to_owned());
                    (at, stats)
                })
            })
            .collect();
    allocations.sort_by_key(|(at, _)| *at);
    // 6 launches × (activation + workspace) × (allocation + release).
    assert_eq!(allocations.len(), 24);
    let int = |s: &std::collections::BTreeMap<String, String>, key: &str| -> i64 {
        let v = s.get(key).unwrap_or_else(|| panic!("no {key} in {s:?}"));
        v.strip_prefix('i')
            .unwrap_or_else(|| panic!("{key} is not an int64: {v}"))
            .parse()
            .expect("a number")
    };
    let mut peak = 0i64;
    for (_, s) in &allocations {
        assert_eq!(s.get("allocator_name").map(String::as_str), Some("sGPU_0"));
        let bytes = int(s, "allocation_bytes");
        assert_eq!(int(s, "requested_bytes"), bytes);
        int(s, "addr");
        peak = peak.max(int(s, "bytes_allocated"));
        assert_eq!(int(s, "peak_bytes_in_use"), peak, "a running peak");
        // The pool holds 2 MiB steps: what it holds beyond its bytes in use is reserved.
        let held = int(s, "bytes_reserved") + int(s, "bytes_allocated");
        assert_eq!(held % (2 << 20), 0, "{s:?}");
        assert_eq!(int(s, "bytes_available"), (80i64 << 30) - held);
    }
    let in_use = int(&allocations.last().expect("events").1, "bytes_allocated");
    // The last step's activations are released past its end, after the session's
    // last memory event that this trace still holds: none is left.
    assert_eq!(in_use, 0);
    // The peak: attn's and mlp's activations with mlp's 4 MiB workspace.
    assert!(peak >= (80 << 20) + (4 << 20), "peak {peak}");

    // The blocks each op allocated (a release carries the op of the call that made it).
    let ops = |op: &str| {
        allocations
            .iter()
            .filter(|(_, s)| s.get("event").map(String::as_str) == Some(schema::MEMORY_ALLOCATION))
            .filter(|(_, s)| s.get("tf_op").map(String::as_str) == Some(op))
            .map(|(_, s)| int(s, "allocation_bytes"))
            .max()
    };
    assert_eq!(ops("sblock/attn:attn"), Some(64 << 20));
    assert_eq!(ops("sblock/mlp:mlp"), Some(16 << 20));
    assert_eq!(ops("sdecoder/attn:attn"), Some(8 << 20));
    // Every block is allocated inside its layer: region_type is the layer.
    for (_, s) in &allocations {
        if s.get("event").map(String::as_str) == Some(schema::MEMORY_ALLOCATION) {
            let region = s.get("region_type").map(String::as_str);
            assert!(matches!(region, Some("sattn" | "smlp")), "{s:?}");
        }
    }

    // The calls themselves are on the host line, with no correlation_id (no flow
    // with one end: nothing they launched is on the GPU).
    for name in ["cuMemAllocAsync", "cuMemFreeAsync"] {
        let calls = events(host, name);
        assert_eq!(calls.len(), 12, "{name}");
        assert!(calls
            .iter()
            .all(|(_, e)| stat(host, e, schema::CORRELATION_ID).is_none()));
    }
    assert!(calls.kept >= 24);
    // The GPU's counter track follows the same running total.
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let counter: Vec<f64> = events(gpu, DEVICE_BYTES_IN_USE)
        .into_iter()
        .map(|(_, e)| match stat(gpu, e, schema::COUNTER_VALUE) {
            Some(XStatValue::Double(v)) => *v,
            other => panic!("{other:?}"),
        })
        .collect();
    let from_events: Vec<f64> = allocations
        .iter()
        .map(|(_, s)| int(s, "bytes_allocated") as f64)
        .collect();
    assert_eq!(counter, from_events);
    assert!(space.warnings.is_empty(), "{:?}", space.warnings);
}

#[test]
fn what_the_trace_saw_reaches_prof_memory_across_traces() {
    use profiler_cuda::layout::memory_operation::{ALLOCATION, RELEASE};
    // Device 6: no other test traces it.
    let names = Names(vec![]);
    let record = |op, address, bytes, at| {
        let r = synthetic::memory_record(op, 3, address, bytes, at, 6, synthetic::MEMORY3_LEN);
        profiler_cuda::layout::read(&r, &names).expect("record")
    };
    let before = profiler_core::memory::gpu(6);
    assert_eq!(before, None, "nothing seen yet");
    let first = DeviceTrace {
        activities: vec![
            record(ALLOCATION, 0x1000, 300, 10),
            record(ALLOCATION, 0x2000, 200, 20),
            record(RELEASE, 0x1000, 300, 30),
        ],
        ..DeviceTrace::default()
    };
    add_to_space(&first, &mut XSpace::default(), &Some);
    let usage = profiler_core::memory::gpu(6).expect("seen");
    assert_eq!((usage.in_use, usage.peak), (200, 500));
    // A later trace releases the block the first one allocated.
    let second = DeviceTrace {
        activities: vec![record(RELEASE, 0x2000, 200, 40)],
        ..DeviceTrace::default()
    };
    add_to_space(&second, &mut XSpace::default(), &Some);
    let usage = profiler_core::memory::gpu(6).expect("seen");
    assert_eq!((usage.in_use, usage.peak), (0, 500));
}
