//! The record → XPlane conversion on synthetic records of every kind, against a host
//! plane recorded by a real prof session.

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XPlane, XSpace, XStatValue};
use profiler_core::{session, trace, ProfileOptions};
use profiler_cuda::activity::{Activity, DeviceTrace};
use profiler_cuda::convert::{add_to_space, ANNOTATION, DEVICE_BYTES_IN_USE, HOST_STEP_NUM, TF_OP};
use profiler_cuda::layout::kind;
use profiler_cuda::synthetic::{self, Names};

fn stat<'a>(plane: &'a XPlane, e: &'a XEvent, name: &str) -> Option<&'a XStatValue> {
    plane.find_stat(&e.stats, name)
}

/// A string stat's text, inline or a reference (as the device plane's are).
fn text<'a>(plane: &'a XPlane, e: &'a XEvent, name: &str) -> Option<&'a str> {
    plane.find_text(&e.stats, name)
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
    let calls = add_to_space(&trace, &mut space, &|ns| {
        ns.checked_add(0).filter(|&n| n < u64::MAX / 2)
    });
    // Per launch: the launch, the copy and the synchronisation; and the stray copy.
    assert_eq!(calls.kept, 3 * 3 + 1);
    assert_eq!(calls.left_out_total(), 3 * 6, "{calls:?}");
    assert_eq!(calls.left_out.get("cuCtxGetCurrent"), Some(&3));

    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let kernels = events(gpu, "gemm_kernel");
    assert_eq!(kernels.len() + events(gpu, "softmax_kernel").len(), 3);
    let (_, k) = kernels[0];
    assert_eq!(
        text(gpu, k, "kernel_details"),
        Some(
            // On the synthetic device (an H100's SM), 64 registers × 8 warps hold
            // 4 blocks: 32 of 64 warp slots.
            "regs:64 static_shared:1024 dynamic_shared:8192 grid:80,4,1 block:128,2,1 occ_pct:50.0"
        )
    );
    assert_eq!(stat(gpu, k, "correlation_id"), Some(&XStatValue::Uint64(1)));
    assert_eq!(stat(gpu, k, "stream"), Some(&XStatValue::Uint64(7)));
    assert_eq!(stat(gpu, k, "device_id"), Some(&XStatValue::Uint64(0)));
    assert_eq!(stat(gpu, k, "context_id"), Some(&XStatValue::Uint64(1)));
    assert_eq!(text(gpu, k, ANNOTATION), Some("attn"));
    assert_eq!(text(gpu, k, TF_OP), Some("attn:attn"));
    assert_eq!(stat(gpu, k, HOST_STEP_NUM), Some(&XStatValue::Int64(0)));
    let (_, k3) = events(gpu, "gemm_kernel")[1];
    assert_eq!(stat(gpu, k3, HOST_STEP_NUM), Some(&XStatValue::Int64(2)));

    let copies = events(gpu, "MemcpyHToD");
    assert_eq!(copies.len(), 3);
    assert_eq!(
        text(gpu, copies[0].1, "memcpy_details"),
        Some("kind_src:pinned kind_dst:device size:4194304")
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
    // Sorted lines on one timestamp (XProf compares offsets across streams).
    for l in &gpu.lines {
        let sorted = l
            .events
            .windows(2)
            .all(|w| w[0].offset_ps() <= w[1].offset_ps());
        assert!(sorted && l.events[0].offset_ps() >= 0, "line {}", l.name);
        assert_eq!(l.timestamp_ns, gpu.lines[0].timestamp_ns, "line {}", l.name);
    }
    assert!(gpu.lines.iter().any(|l| l.events[0].offset_ps() == 0));

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
    // A synchronisation stays, without a correlation (no device work has it);
    // the calls that launch nothing are left out.
    let syncs = events(host, "cuStreamSynchronize");
    assert_eq!(syncs.len(), 3);
    assert_eq!(host.find_stat(&syncs[0].1.stats, "correlation_id"), None);
    assert!(events(host, "cuCtxGetCurrent").is_empty());
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
            .map(|(_, e)| text(&gpu, e, ANNOTATION).unwrap_or("-").to_owned())
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
    // Two fit: the first two seen (embed:embed, attn:attn) keep theirs; mlp's 2
    // launches (a kernel and a copy each) do not.
    let (capped, warnings) = annotated(Some(2));
    assert_eq!(
        capped,
        ["-", "-", "attn", "attn", "attn", "attn", "embed", "embed"]
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("4 launches without their annotation")
            && warnings[0].contains("gpu_max_annotation_strings (2 distinct annotation stacks)"),
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

/// A host plane with `Train` steps of `block` > (`attn`, `mlp`), then `decoder` >
/// `attn`; its line and the launches of each layer (kernel names `attn_k`, `mlp_k`,
/// `dec_k`), sorted by start.
fn nested_space(steps: u32) -> (XSpace, u32, Vec<synthetic::Launch>) {
    let one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    for step in 0..steps {
        let _t = trace!("Train", step_num = step);
        {
            let _b = trace!("block");
            for layer in ["attn", "mlp"] {
                let _l = profiler_core::Trace::new(layer);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let _d = trace!("decoder");
        let _a = trace!("attn");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let space = session::stop().expect("stop").into_xspace();
    drop(one);
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let line = host
        .lines
        .iter()
        .find(|l| !l.events.is_empty())
        .expect("a line");
    // Each attn or mlp window, with the name of the event enclosing it.
    let mut launches = Vec::new();
    for e in &line.events {
        let (start, end) = line.event_span_ps(e);
        let kernel = match host.event_name(e.metadata_id) {
            Some("mlp") => "mlp_k",
            Some("attn") => {
                let in_decoder = line.events.iter().any(|p| {
                    let (ps, pe) = line.event_span_ps(p);
                    host.event_name(p.metadata_id) == Some("decoder") && ps <= start && end <= pe
                });
                if in_decoder {
                    "dec_k"
                } else {
                    "attn_k"
                }
            }
            _ => continue,
        };
        launches.push(synthetic::Launch {
            window: ((start / 1000) as u64, (end / 1000) as u64),
            kernel,
            copy_kind: 2,
        });
    }
    launches.sort_by_key(|l| l.window);
    (space.clone(), line.id as u32, launches)
}

/// The `tf_op` strings of the events named `name` on the GPU plane.
fn tf_ops(gpu: &XPlane, name: &str) -> Vec<Option<String>> {
    events(gpu, name)
        .into_iter()
        .map(|(_, e)| text(gpu, e, TF_OP).map(str::to_owned))
        .collect()
}

#[test]
fn device_work_carries_the_annotation_stack_inside_the_step_as_tf_op() {
    let (mut space, line, launches) = nested_space(2);
    assert_eq!(launches.len(), 6);
    let trace = synthetic::trace(line, &launches);
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let some = |s: &str| vec![Some(s.to_owned()); 2];
    // The step is left out, so an op is named alike in every step.
    assert_eq!(tf_ops(gpu, "attn_k"), some("block/attn:attn"));
    assert_eq!(tf_ops(gpu, "mlp_k"), some("block/mlp:mlp"));
    assert_eq!(tf_ops(gpu, "dec_k"), some("decoder/attn:attn"));
    // Copies launched there carry it too; the innermost name and the step stay.
    let copies = tf_ops(gpu, "MemcpyDToH");
    assert_eq!(copies.len(), 6);
    assert!(copies.contains(&Some("block/mlp:mlp".into())));
    let (_, k) = events(gpu, "dec_k")[1];
    assert_eq!(text(gpu, k, ANNOTATION), Some("attn"));
    assert_eq!(stat(gpu, k, HOST_STEP_NUM), Some(&XStatValue::Int64(1)));
    assert!(space.warnings.is_empty(), "{:?}", space.warnings);
}

#[test]
fn gpu_max_annotation_strings_counts_distinct_tf_op_strings() {
    // Three stacks, two of them ending in attn: a cap of 2 keeps the first two seen
    // (block/attn, block/mlp) and leaves decoder/attn's launches bare.
    let (space, line, launches) = nested_space(2);
    let mut trace = synthetic::trace(line, &launches);
    trace.max_annotation_strings = Some(2);
    let mut space = space.clone();
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert_eq!(
        tf_ops(gpu, "attn_k"),
        vec![Some("block/attn:attn".into()); 2]
    );
    assert_eq!(tf_ops(gpu, "mlp_k"), vec![Some("block/mlp:mlp".into()); 2]);
    assert_eq!(tf_ops(gpu, "dec_k"), [None, None]);
    let (_, k) = events(gpu, "dec_k")[0];
    assert_eq!(stat(gpu, k, ANNOTATION), None);
    // 2 steps × (a kernel and a copy).
    assert_eq!(space.warnings.len(), 1, "{:?}", space.warnings);
    assert!(
        space.warnings[0].contains("4 launches without their annotation"),
        "{}",
        space.warnings[0]
    );
}

#[test]
fn calls_that_launch_nothing_stay_off_the_host_unless_every_call_is_asked_for() {
    const NOISE: [&str; 6] = [
        "cuCtxGetCurrent",
        "cuStreamGetCaptureInfo_v2",
        "cuEventCreate",
        "cudaGetLastError_v3020",
        "cuEventRecord",
        "cuEventDestroy_v2",
    ];
    const KEPT: [&str; 3] = [
        "cuLaunchKernel",
        "cuMemcpyDtoHAsync_v2",
        "cuStreamSynchronize",
    ];
    let (space, line, launches) = nested_space(1);
    let host_names = |all: bool| {
        let mut space = space.clone();
        let mut trace = synthetic::trace(line, &launches);
        trace.all_api_calls = all;
        let calls = add_to_space(&trace, &mut space, &Some);
        let host = space.plane(schema::HOST_PLANE).expect("host").clone();
        let count = |name: &str| events(&host, name).len();
        let counts: Vec<usize> = NOISE.iter().chain(&KEPT).map(|n| count(n)).collect();
        // Only calls with device work carry a correlation (no arrow with one end).
        let correlated = host
            .lines
            .iter()
            .flat_map(|l| &l.events)
            .filter(|e| host.find_stat(&e.stats, "correlation_id").is_some())
            .count();
        (counts, correlated, calls)
    };
    // Default: 3 launches, none of the noise.
    let (counts, correlated, calls) = host_names(false);
    assert_eq!(counts, [0, 0, 0, 0, 0, 0, 3, 3, 3]);
    assert_eq!(correlated, 6);
    assert_eq!((calls.kept, calls.left_out_total()), (9, 18));
    assert_eq!(calls.left_out.len(), 6, "{calls:?}");
    // gpu_trace_all_api_calls: everything, and nothing left out.
    let (counts, correlated, calls) = host_names(true);
    assert_eq!(counts, [3; 9]);
    assert_eq!(correlated, 6);
    assert_eq!((calls.kept, calls.left_out_total()), (27, 0));
    // A call off the list that launched device work is kept all the same.
    let mut space = space.clone();
    let names = Names(vec!["k"]);
    let mut trace = DeviceTrace::default();
    for r in [
        synthetic::api_record(
            kind::DRIVER,
            synthetic::cbid::CU_EVENT_RECORD,
            10,
            20,
            5,
            900,
        ),
        synthetic::memset_record(64, 30, 40, 9, 900),
    ] {
        trace
            .activities
            .push(profiler_cuda::layout::read(&r, &names).expect("record"));
    }
    let calls = add_to_space(&trace, &mut space, &Some);
    assert_eq!((calls.kept, calls.left_out_total()), (1, 0));
    assert!(space.warnings.is_empty(), "{:?}", space.warnings);
    // Where CUPTI could not be told per function (libcupti < 12.5), the profile says
    // so, with what the tracer dropped as it arrived.
    trace.api_left_out = [("cuCtxGetCurrent".to_owned(), 40)].into();
    trace.api_selection_failed = Some("libcupti has no cuptiActivityEnableDriverApi".into());
    let calls = add_to_space(&trace, &mut space, &Some);
    assert_eq!(calls.left_out_total(), 40);
    assert_eq!(space.warnings.len(), 1, "{:?}", space.warnings);
    let w = &space.warnings[0];
    assert!(
        w.contains("could not be told")
            && w.contains("no cuptiActivityEnableDriverApi")
            && w.contains("the 40 that launch nothing"),
        "{w}"
    );
}

/// NVTX ranges as `gpu_enable_nvtx_tracking` records them (cuBLAS-like nested
/// push/pop ranges and a mark around each launch): a host line for the thread, the
/// ranges nested there with their domains, and each kernel carrying its innermost
/// range as `nvtx_range`, as TSL's tracer does.
#[test]
fn nvtx_ranges_land_on_a_thread_line_and_name_the_kernels_launched_inside() {
    use profiler_cuda::activity::{Activity, MarkerPhase};
    use profiler_cuda::convert::NVTX_RANGE;
    let (mut space, line, windows) = host_space();
    let launches: Vec<synthetic::Launch> = windows
        .iter()
        .map(|&window| synthetic::Launch {
            window,
            kernel: "gemm_kernel",
            copy_kind: 1,
        })
        .collect();
    let mut trace = synthetic::trace(line, &launches);
    trace.activities.extend(synthetic::nvtx(&launches));
    // A range that began before the session (its end only), and one still open at
    // its stop (its start only): left out.
    let marker = |phase, id, name: Option<&str>| Activity::Marker {
        phase,
        id,
        timestamp: windows[0].0,
        thread_id: synthetic::THREAD,
        name: name.map(Into::into),
        domain: None,
    };
    trace.activities.push(marker(MarkerPhase::End, 1000, None));
    trace
        .activities
        .push(marker(MarkerPhase::Start, 1001, Some("still open")));
    add_to_space(&trace, &mut space, &Some);

    let host = space.plane(schema::HOST_PLANE).expect("host");
    let nvtx = host
        .lines
        .iter()
        .find(|l| l.name == format!("NVTX (thread {})", synthetic::THREAD))
        .expect("an NVTX line for the launching thread");
    assert_eq!(
        nvtx.id,
        i64::from(schema::DEVICE_MARKER_LINES_ID + synthetic::THREAD)
    );
    let on_line = |name: &str| -> Vec<&XEvent> {
        nvtx.events
            .iter()
            .filter(|e| host.event_name(e.metadata_id) == Some(name))
            .collect()
    };
    let (outer, inner, marks) = (
        on_line("cublasSgemm_v2"),
        on_line("cublasLtMatmul"),
        on_line("algo_select"),
    );
    assert_eq!((outer.len(), inner.len(), marks.len()), (3, 3, 3));
    assert_eq!(nvtx.events.len(), 9, "the one-ended ranges are left out");
    assert!(on_line("still open").is_empty());
    assert_eq!(outer[0].duration_ps, 10_000_000);
    assert_eq!(inner[0].duration_ps, 8_000_000);
    assert_eq!(marks[0].duration_ps, 0);
    // Nested: the inner range inside the outer, the mark inside the inner.
    let span = |e: &XEvent| (e.offset_ps(), e.offset_ps() + e.duration_ps);
    let (o, i, m) = (span(outer[0]), span(inner[0]), span(marks[0]));
    assert!(o.0 < i.0 && i.1 < o.1 && i.0 < m.0 && m.1 < i.1);
    assert_eq!(text(host, outer[0], schema::DOMAIN), Some("cuBLAS"));
    assert_eq!(text(host, inner[0], schema::DOMAIN), Some("cuBLASLt"));
    assert_eq!(stat(host, marks[0], schema::DOMAIN), None);
    // The launch sits inside both ranges on the timeline.
    let launch = events(host, "cuLaunchKernel")[0].0 - nvtx.timestamp_ns * 1000;
    assert!(i.0 <= launch && launch <= i.1);

    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    for (_, k) in events(gpu, "gemm_kernel") {
        assert_eq!(text(gpu, k, NVTX_RANGE), Some("cublasLtMatmul"));
        // prof's own annotations still make the op: NVTX ranges are not in tf_op.
        assert_eq!(text(gpu, k, TF_OP), Some("attn:attn"));
    }
    // The copy is called 45 µs after the launch, outside every range.
    for (_, c) in events(gpu, "MemcpyHToD") {
        assert_eq!(stat(gpu, c, NVTX_RANGE), None);
    }
}

/// Without NVTX records (the option off, or nothing reached CUPTI) nothing changes.
#[test]
fn no_nvtx_records_no_nvtx_line_and_no_nvtx_range() {
    let (mut space, line, windows) = host_space();
    let trace = synthetic::launches(line, &windows, &["gemm_kernel"]);
    add_to_space(&trace, &mut space, &Some);
    let host = space.plane(schema::HOST_PLANE).expect("host");
    assert!(!host.lines.iter().any(|l| l.name.starts_with("NVTX")));
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert!(gpu.stat_id(profiler_cuda::convert::NVTX_RANGE).is_none());
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

/// A host plane where a graph is captured once (`forward` > `attn`, then `mlp`: one
/// node each, captured in the middle of each) and replayed in `steps` steps (`Train` >
/// `replay`); the capture's nodes and the replay windows.
fn captured_and_replayed(
    steps: u32,
) -> (XSpace, u32, Vec<synthetic::CapturedNode>, Vec<(u64, u64)>) {
    let one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    {
        let _f = trace!("forward");
        for layer in ["attn", "mlp"] {
            let _l = profiler_core::Trace::new(layer);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    for step in 0..steps {
        let _t = trace!("Train", step_num = step);
        let _r = trace!("replay");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let space = session::stop().expect("stop").into_xspace();
    drop(one);
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let line = host
        .lines
        .iter()
        .find(|l| !l.events.is_empty())
        .expect("a line");
    let window = |name| -> Vec<(u64, u64)> {
        events(host, name)
            .into_iter()
            .map(|(at, e)| ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64))
            .collect()
    };
    let nodes = [("attn", "attn_kernel"), ("mlp", "mlp_kernel")]
        .iter()
        .map(|&(layer, kernel)| {
            let (start, end) = window(layer)[0];
            synthetic::CapturedNode {
                at: (start + end) / 2,
                seq: 0,
                kernel,
            }
        })
        .collect();
    (space.clone(), line.id as u32, nodes, window("replay"))
}

#[test]
fn graph_kernels_carry_the_layer_of_their_capture_and_the_step_of_their_replay() {
    let (mut space, line, nodes, replays) = captured_and_replayed(3);
    let trace = synthetic::graph(line, &nodes, &replays, 500, false);
    add_to_space(&trace, &mut space, &Some);
    assert!(space.warnings.is_empty(), "{:?}", space.warnings);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert_eq!(
        tf_ops(gpu, "attn_kernel"),
        vec![Some("forward/attn:attn".to_owned()); 3]
    );
    assert_eq!(
        tf_ops(gpu, "mlp_kernel"),
        vec![Some("forward/mlp:mlp".to_owned()); 3]
    );
    for (i, (_, k)) in events(gpu, "mlp_kernel").into_iter().enumerate() {
        assert_eq!(
            stat(gpu, k, HOST_STEP_NUM),
            Some(&XStatValue::Int64(i as i64))
        );
        assert_eq!(text(gpu, k, ANNOTATION), Some("mlp"));
        assert_eq!(stat(gpu, k, "cuda_graph_id"), Some(&XStatValue::Uint64(1)));
        assert_eq!(
            stat(gpu, k, "cuda_graph_node_id"),
            Some(&XStatValue::Uint64(synthetic::EXEC_NODE + 1))
        );
        assert_eq!(
            stat(gpu, k, "correlation_id"),
            Some(&XStatValue::Uint64(500 + i as u64))
        );
    }
    // The replay's launch is on the host, in the step, with the graph's id and the
    // correlation its kernels carry (XProf's launch → kernel arrows).
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let launches = events(host, "cuGraphLaunch");
    assert_eq!(launches.len(), 3);
    for (i, (_, e)) in launches.into_iter().enumerate() {
        assert_eq!(stat(host, e, "cuda_graph_id"), Some(&XStatValue::Uint64(1)));
        assert_eq!(
            stat(host, e, "correlation_id"),
            Some(&XStatValue::Uint64(500 + i as u64))
        );
    }
    // Without the capture's notes (a graph captured before the session) the kernels
    // take their launch's annotation.
    let (mut space, line, nodes, replays) = captured_and_replayed(1);
    let mut trace = synthetic::graph(line, &nodes, &replays, 500, false);
    trace.graph_notes.clear();
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert_eq!(
        tf_ops(gpu, "attn_kernel"),
        [Some("replay:replay".to_owned())]
    );
}

#[test]
fn whole_graph_launches_are_one_event_each_named_after_the_graph() {
    let (mut space, line, nodes, replays) = captured_and_replayed(2);
    let trace = synthetic::graph(line, &nodes, &replays, 700, true);
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let launches = events(gpu, "CudaGraphExec:1");
    assert_eq!(launches.len(), 2);
    assert!(events(gpu, "attn_kernel").is_empty());
    let (_, e) = launches[1];
    assert_eq!(stat(gpu, e, "cuda_graph_id"), Some(&XStatValue::Uint64(1)));
    assert_eq!(
        stat(gpu, e, "cuda_graph_exec_id"),
        Some(&XStatValue::Uint64(u64::from(synthetic::GRAPH_EXEC_ID)))
    );
    assert_eq!(
        stat(gpu, e, "correlation_id"),
        Some(&XStatValue::Uint64(701))
    );
    assert_eq!(text(gpu, e, TF_OP), Some("replay:replay"));
    assert!(gpu.lines.iter().any(|l| l.name == "Stream #9(Graph)"));
}

#[test]
fn the_graph_node_mapping_names_every_node_and_its_capture() {
    let (mut space, line, nodes, replays) = captured_and_replayed(1);
    let mut trace = synthetic::graph(line, &nodes, &replays, 500, false);
    trace.dump_graph_node_mapping = true;
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let Some(XStatValue::Str(mapping)) = gpu.find_stat(&gpu.stats, "cuda_graph_node_mapping")
    else {
        panic!("no mapping stat: {:?}", gpu.stats);
    };
    let lines: Vec<&str> = mapping.lines().collect();
    assert_eq!(
        lines,
        [
            "graph 1 node 100: made, kernel, captured under forward/attn:attn",
            "graph 1 node 101: made, kernel, captured under forward/mlp:mlp",
            "graph 2 node 200: clone of node 100, kernel, captured under forward/attn:attn",
            "graph 2 node 201: clone of node 101, kernel, captured under forward/mlp:mlp",
        ]
    );
    // Off by default.
    let (mut space, line, nodes, replays) = captured_and_replayed(1);
    add_to_space(
        &synthetic::graph(line, &nodes, &replays, 500, false),
        &mut space,
        &Some,
    );
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert!(gpu
        .find_stat(&gpu.stats, "cuda_graph_node_mapping")
        .is_none());
}

#[test]
fn pm_samples_are_counter_tracks_of_their_gpu_with_readable_names() {
    let (mut space, _, _, replays) = captured_and_replayed(2);
    let metrics = [
        "sm__cycles_active.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    ];
    let window = (replays[0].0, replays[1].1);
    let (names, samples) = synthetic::pm_samples(&metrics, &[0, 1], window, 200_000);
    let trace = DeviceTrace {
        pm_metrics: names,
        pm_samples: samples.clone(),
        ..DeviceTrace::default()
    };
    add_to_space(&trace, &mut space, &Some);
    for device in [0, 1] {
        let gpu = space
            .plane(&format!("/device:GPU:{device}"))
            .expect("GPU plane");
        let counters = gpu
            .lines
            .iter()
            .find(|l| l.name == schema::COUNTERS_LINE)
            .expect("counters");
        for (m, metric) in metrics.iter().enumerate() {
            let values: Vec<f64> = counters
                .events
                .iter()
                .filter(|e| gpu.event_name(e.metadata_id) == Some(*metric))
                .map(|e| match stat(gpu, e, schema::COUNTER_VALUE) {
                    Some(XStatValue::Double(v)) => *v,
                    other => panic!("{other:?}"),
                })
                .collect();
            let want: Vec<f64> = samples
                .iter()
                .filter(|s| s.device_id == device && s.metric == m)
                .map(|s| s.value)
                .collect();
            assert!(!want.is_empty());
            assert_eq!(values, want, "{metric} on GPU {device}");
        }
        let shown: Vec<&str> = gpu
            .event_metadata
            .values()
            .filter(|m| m.name.starts_with("sm__"))
            .map(|m| m.display_name.as_str())
            .collect();
        assert_eq!(
            shown,
            ["SM cycles active (avg, % of peak sustained elapsed)"]
        );
    }
}

#[test]
fn only_the_first_n_devices_are_profiled_with_the_calls_that_launched_their_work() {
    let (space, line, windows) = host_space();
    let mut trace = synthetic::launches(line, &windows, &["gemm_kernel"]);
    // The third launch's kernel and copy ran on GPU 1.
    let third = trace
        .activities
        .iter()
        .find_map(|a| match a {
            Activity::Api {
                name,
                correlation_id,
                ..
            } if name == "cuLaunchKernel" => Some(*correlation_id),
            _ => None,
        })
        .expect("a launch")
        + 2 * 9; // synthetic::trace uses 9 ids per launch
    for a in &mut trace.activities {
        if let Activity::Kernel { at, .. } | Activity::Memcpy { at, .. } = a {
            if at.correlation_id == third || at.correlation_id == third + 1 {
                at.device_id = 1;
            }
        }
    }
    let mut second = trace.devices[0].clone();
    second.ordinal = 1;
    trace.devices.push(second);
    let (names, samples) = synthetic::pm_samples(
        &["sm__a.sum"],
        &[0, 1],
        (windows[0].0, windows[2].1),
        1_000_000,
    );
    trace.pm_metrics = names;
    trace.pm_samples = samples;

    let mut all = space.clone();
    add_to_space(&trace, &mut all, &Some);
    assert!(all.plane("/device:GPU:1").is_some());

    trace.max_devices = Some(1);
    let mut one = space.clone();
    let calls = add_to_space(&trace, &mut one, &Some);
    assert!(one.plane("/device:GPU:1").is_none(), "GPU 1 is left out");
    let gpu0 = one.plane("/device:GPU:0").expect("GPU 0");
    assert_eq!(events(gpu0, "gemm_kernel").len(), 2);
    // The calls that launched GPU 1's work are left out with it.
    let host = one.plane(schema::HOST_PLANE).expect("host");
    assert_eq!(events(host, "cuLaunchKernel").len(), 2);
    assert!(calls.kept > 0);
    assert!(
        one.warnings
            .iter()
            .any(|w| w.contains("1 of 2 devices left out")),
        "{:?}",
        one.warnings
    );
    assert_eq!(
        host.find_stat(&host.stats, "devices_left_out"),
        Some(&XStatValue::Uint64(1))
    );
    // More than there are: everything, and a warning.
    trace.max_devices = Some(8);
    let mut many = space.clone();
    add_to_space(&trace, &mut many, &Some);
    assert!(many.plane("/device:GPU:1").is_some());
    assert!(
        many.warnings
            .iter()
            .any(|w| w.contains("but there are 2 devices")),
        "{:?}",
        many.warnings
    );
}

#[test]
fn a_runtime_call_and_the_driver_call_it_makes_are_one_launch() {
    // cuBLAS's cudaLaunchKernelExC and, inside it, cuLaunchKernelEx: one correlation id.
    let (mut space, line, windows) = host_space();
    let mut trace = synthetic::launches(line, &windows[..1], &["gemm_kernel"]);
    let (outer, inner) = trace
        .activities
        .iter()
        .find_map(|a| match a {
            Activity::Api {
                name,
                start,
                end,
                correlation_id,
                ..
            } if name == "cuLaunchKernel" => Some(((*start, *end), *correlation_id)),
            _ => None,
        })
        .map(|((start, end), id)| {
            let runtime = Activity::Api {
                name: "cudaLaunchKernelExC_v11060".into(),
                start: start - 1_000,
                end: end + 1_000,
                thread_id: synthetic::THREAD,
                correlation_id: id,
            };
            (runtime, id)
        })
        .expect("a launch");
    trace.activities.push(outer);
    add_to_space(&trace, &mut space, &Some);
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let carrying: Vec<&str> = host
        .lines
        .iter()
        .flat_map(|l| &l.events)
        .filter(|e| stat(host, e, "correlation_id") == Some(&XStatValue::Uint64(u64::from(inner))))
        .filter_map(|e| host.event_name(e.metadata_id))
        .collect();
    // The outer call links to the kernel; the nested one stays, as a plain call.
    assert_eq!(carrying, ["cudaLaunchKernelExC_v11060"]);
    assert_eq!(events(host, "cuLaunchKernel").len(), 1);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    assert_eq!(tf_ops(gpu, "gemm_kernel"), [Some("attn:attn".to_owned())]);
}

#[test]
fn a_graph_nodes_kind_is_what_its_work_ran_as() {
    // CUPTI's node type at capture may read 0 (kernel) for a copy node: the copy's own
    // record says what it is.
    let (mut space, line, nodes, replays) = captured_and_replayed(1);
    let mut trace = synthetic::graph(line, &nodes, &replays, 500, false);
    trace.dump_graph_node_mapping = true;
    // The mlp node's work is a copy.
    for a in &mut trace.activities {
        if let Activity::Kernel {
            name,
            at,
            start,
            end,
            ..
        } = a
        {
            if name == "mlp_kernel" {
                *a = Activity::Memcpy {
                    copy_kind: 8,
                    src_kind: 3,
                    dst_kind: 3,
                    bytes: 64,
                    start: *start,
                    end: *end,
                    at: *at,
                };
            }
        }
    }
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let Some(XStatValue::Str(mapping)) = gpu.find_stat(&gpu.stats, "cuda_graph_node_mapping")
    else {
        panic!("no mapping");
    };
    assert!(
        mapping.contains("graph 1 node 101: made, memcpy, captured under forward/mlp:mlp"),
        "{mapping}"
    );
    assert!(
        mapping.contains("graph 2 node 201: clone of node 101, memcpy,"),
        "{mapping}"
    );
    assert!(
        mapping.contains("graph 1 node 100: made, kernel,"),
        "{mapping}"
    );
}

#[test]
fn device_text_stats_are_references_stored_once_a_plane() {
    let (mut space, line, windows) = host_space();
    // The same kernel, shape and stack in every step.
    let trace = synthetic::launches(line, &windows, &["gemm_kernel"]);
    add_to_space(&trace, &mut space, &Some);
    let gpu = space.plane("/device:GPU:0").expect("GPU plane");
    let kernels = events(gpu, "gemm_kernel");
    assert_eq!(kernels.len(), 3);
    for name in [TF_OP, ANNOTATION, "kernel_details"] {
        let refs: Vec<u64> = kernels
            .iter()
            .map(|(_, e)| match stat(gpu, e, name) {
                Some(XStatValue::Ref(id)) => *id,
                other => panic!("{name}: {other:?}"),
            })
            .collect();
        // One interned string, shared by the three kernels.
        assert!(refs.iter().all(|&id| id == refs[0]), "{name}: {refs:?}");
    }
    assert_eq!(text(gpu, kernels[0].1, TF_OP), Some("attn:attn"));
    let stored = |text: &str| {
        gpu.stat_metadata
            .values()
            .filter(|m| m.name == text)
            .count()
    };
    assert_eq!(stored("attn:attn"), 1);
    assert_eq!(stored("attn"), 1);
}
