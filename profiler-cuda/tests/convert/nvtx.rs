//! NVTX ranges and marks: their thread lines, and the innermost range as each kernel's
//! `nvtx_range`.

use profiler_core::schema;
use profiler_core::xspace::XEvent;
use profiler_cuda::convert::{add_to_space, TF_OP};
use profiler_cuda::synthetic::{self};

use crate::support::*;

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
