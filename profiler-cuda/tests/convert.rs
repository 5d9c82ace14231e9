//! The record → XPlane conversion on synthetic records of every kind, against a host
//! plane recorded by a real prof session.

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XPlane, XSpace, XStatValue};
use profiler_core::{session, trace, ProfileOptions};
use profiler_cuda::activity::{Activity, DeviceTrace};
use profiler_cuda::convert::{add_to_space, ANNOTATION, DEVICE_BYTES_IN_USE, HOST_STEP_NUM};
use profiler_cuda::layout::kind;
use profiler_cuda::synthetic::{self, Names};

fn stat<'a>(plane: &'a XPlane, e: &'a XEvent, name: &str) -> Option<&'a XStatValue> {
    plane.find_stat(&e.stats, name)
}

fn events<'a>(plane: &'a XPlane, name: &str) -> Vec<(i64, &'a XEvent)> {
    plane
        .lines
        .iter()
        .flat_map(|l| {
            l.events
                .iter()
                .map(move |e| (l.timestamp_ns * 1000 + e.offset_ps(), e))
        })
        .filter(|(_, e)| plane.event_name(e.metadata_id) == Some(name))
        .collect()
}

/// Sessions are process-wide: one test records at a time.
static SESSION: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A host plane with `Train` steps holding `attn`, and the (line, attn windows in ns).
fn host_space() -> (XSpace, u32, Vec<(u64, u64)>) {
    let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    for step in 0..3 {
        let _t = trace!("Train", step_num = step);
        let _a = trace!("attn");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let space = session::stop().expect("stop").into_xspace();
    let host = space.plane(schema::HOST_PLANE).expect("host plane");
    let line = host
        .lines
        .iter()
        .find(|l| {
            l.events
                .iter()
                .any(|e| host.event_name(e.metadata_id) == Some("attn"))
        })
        .expect("line with attn");
    let windows = events(host, "attn")
        .into_iter()
        .map(|(at, e)| ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64))
        .collect();
    (space.clone(), line.id as u32, windows)
}

#[test]
fn kernels_copies_and_launches_land_on_device_and_host_lines() {
    let (mut space, line, windows) = host_space();
    assert_eq!(windows.len(), 3);
    let mut trace = synthetic::launches(line, &windows, &["gemm_kernel", "softmax_kernel"]);
    // A call outside any annotation, a memset, and a kernel from before the session.
    let names = Names(vec!["early"]);
    for r in [
        synthetic::api_record(kind::RUNTIME, 2, 10, 20, 99, 100),
        synthetic::memset_record(256, 30, 40, 9, 100),
    ] {
        trace
            .activities
            .push(profiler_cuda::layout::read(&r, &names).expect("record"));
    }
    trace.activities.push(Activity::Memset {
        bytes: 1,
        start: u64::MAX - 10,
        end: u64::MAX - 5,
        at: Default::default(),
    });
    add_to_space(&trace, &mut space, &|ns| {
        ns.checked_add(0).filter(|&n| n < u64::MAX / 2)
    });

    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let kernels = events(gpu, "gemm_kernel");
    assert_eq!(kernels.len() + events(gpu, "softmax_kernel").len(), 3);
    let (_, k) = kernels[0];
    assert_eq!(
        stat(gpu, k, "kernel_details"),
        Some(&XStatValue::Str(
            // On the synthetic device (an H100's SM), 64 registers × 8 warps hold
            // 4 blocks: 32 of 64 warp slots.
            "regs:64 static_shared:1024 dynamic_shared:8192 grid:80,4,1 block:128,2,1 occ_pct:50.0"
                .into()
        ))
    );
    assert_eq!(stat(gpu, k, "correlation_id"), Some(&XStatValue::Uint64(1)));
    assert_eq!(stat(gpu, k, "stream"), Some(&XStatValue::Uint64(7)));
    assert_eq!(stat(gpu, k, "device_id"), Some(&XStatValue::Uint64(0)));
    assert_eq!(stat(gpu, k, "context_id"), Some(&XStatValue::Uint64(1)));
    assert_eq!(
        stat(gpu, k, ANNOTATION),
        Some(&XStatValue::Str("attn".into()))
    );
    assert_eq!(stat(gpu, k, HOST_STEP_NUM), Some(&XStatValue::Int64(0)));
    let (_, k3) = events(gpu, "gemm_kernel")[1];
    assert_eq!(stat(gpu, k3, HOST_STEP_NUM), Some(&XStatValue::Int64(2)));

    let copies = events(gpu, "MemcpyH2D");
    assert_eq!(copies.len(), 3);
    assert_eq!(
        stat(gpu, copies[0].1, "memcpy_details"),
        Some(&XStatValue::Str(
            "kind_src:pinned kind_dst:device size:4194304".into()
        ))
    );
    assert_eq!(
        events(gpu, "Memset").len(),
        1,
        "the one outside the session is left out"
    );

    let mut lines: Vec<_> = gpu.lines.iter().map(|l| (l.id, l.name.as_str())).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            (7, "Stream #7(Kernel)"),
            (8, "Stream #8(Memcpy)"),
            (9, "Stream #9(Memset)")
        ]
    );
    for (name, value) in [
        ("clock_rate", XStatValue::Uint64(1_980_000)),
        ("core_count", XStatValue::Uint64(132)),
        ("compute_cap_major", XStatValue::Int64(9)),
    ] {
        assert_eq!(gpu.find_stat(&gpu.stats, name), Some(&value), "{name}");
    }
    for l in &gpu.lines {
        let sorted = l
            .events
            .windows(2)
            .all(|w| w[0].offset_ps() <= w[1].offset_ps());
        assert!(sorted && l.events[0].offset_ps() == 0, "line {}", l.name);
    }

    // Launches sit inside their annotation on the host thread's line, same correlation.
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let launches = events(host, "cuLaunchKernel");
    assert_eq!(launches.len(), 3);
    let attn = events(host, "attn");
    for ((at, launch), (a_at, a)) in launches.iter().zip(&attn) {
        assert!(*a_at <= *at && at + launch.duration_ps <= a_at + a.duration_ps);
    }
    assert_eq!(
        host.find_stat(&launches[0].1.stats, "correlation_id"),
        Some(&XStatValue::Uint64(1))
    );
    let on_line = host
        .lines
        .iter()
        .find(|l| l.id == i64::from(line))
        .expect("line");
    assert!(on_line
        .events
        .iter()
        .any(|e| host.event_name(e.metadata_id) == Some("cuLaunchKernel")));
    assert!(on_line
        .events
        .windows(2)
        .all(|w| w[0].offset_ps() <= w[1].offset_ps()));
    let stray = host
        .lines
        .iter()
        .find(|l| l.name == "CUDA API (thread 99)")
        .expect("a line for calls outside annotations");
    assert_eq!(
        host.event_name(stray.events[0].metadata_id),
        Some("cudaMemcpyAsync")
    );
    // The host events that were there are all still there.
    assert_eq!(events(host, "Train").len(), 3);
    assert!(space.warnings.is_empty(), "{:?}", space.warnings);
}

#[test]
fn dropped_records_become_one_warning() {
    let mut space = XSpace::default();
    let trace = DeviceTrace {
        dropped_activity: 12,
        dropped_by_cupti: 3,
        ..DeviceTrace::default()
    };
    add_to_space(&trace, &mut space, &Some);
    assert_eq!(space.warnings.len(), 1);
    let w = &space.warnings[0];
    assert!(
        w.contains("12 GPU activity records") && w.contains("gpu_max_activity_api_events"),
        "{w}"
    );
    assert!(w.contains("3 records CUPTI dropped"), "{w}");
}

#[test]
fn annotations_past_gpu_max_annotation_strings_are_left_off_and_counted() {
    // Steps of `embed`, `attn`, `mlp`, `attn`: three names, launches inside each.
    let one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    for step in 0..2 {
        let _t = trace!("Train", step_num = step);
        for name in ["embed", "attn", "mlp", "attn"] {
            let _a = profiler_core::Trace::new(name);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    let space = session::stop().expect("stop").into_xspace();
    drop(one);
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let line = host
        .lines
        .iter()
        .find(|l| !l.events.is_empty())
        .expect("a line");
    let mut windows: Vec<(u64, u64)> = ["embed", "attn", "mlp"]
        .iter()
        .flat_map(|name| events(host, name))
        .map(|(at, e)| ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64))
        .collect();
    windows.sort();
    assert_eq!(windows.len(), 8);

    let annotated = |limit: Option<u64>| {
        let mut space = space.clone();
        let mut trace = synthetic::launches(line.id as u32, &windows, &["k"]);
        trace.max_annotation_strings = limit;
        add_to_space(&trace, &mut space, &Some);
        let gpu = space.plane("/device:GPU:0").expect("gpu plane").clone();
        let mut names: Vec<String> = events(&gpu, "k")
            .into_iter()
            .map(|(_, e)| match stat(&gpu, e, ANNOTATION) {
                Some(XStatValue::Str(s)) => s.clone(),
                None => "-".into(),
                Some(other) => panic!("{other:?}"),
            })
            .collect();
        names.sort();
        (names, space.warnings)
    };
    let (all, warnings) = annotated(None);
    assert_eq!(
        all,
        ["attn", "attn", "attn", "attn", "embed", "embed", "mlp", "mlp"]
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    // Two names fit: the first two seen (embed, attn) keep theirs; mlp's 2 do not
    // (each of its 9 API calls counted: every one carried the annotation).
    let (capped, warnings) = annotated(Some(2));
    assert_eq!(
        capped,
        ["-", "-", "attn", "attn", "attn", "attn", "embed", "embed"]
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("18 launches without their annotation")
            && warnings[0].contains("gpu_max_annotation_strings (2 distinct names)"),
        "{}",
        warnings[0]
    );
}

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
