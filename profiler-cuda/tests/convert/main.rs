//! The record → XPlane conversion on synthetic records of every kind, against a host
//! plane recorded by a real prof session.

mod graphs;
mod memory;
mod nvtx;
mod support;

use profiler_core::schema;
use profiler_core::xspace::{XSpace, XStatValue};
use profiler_core::{session, trace, ProfileOptions};
use profiler_cuda::activity::{Activity, DeviceTrace};
use profiler_cuda::convert::{add_to_space, ANNOTATION, HOST_STEP_NUM, TF_OP};
use profiler_cuda::layout::kind;
use profiler_cuda::synthetic::{self, Names};
use support::*;

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
