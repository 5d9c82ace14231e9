//! The launch observer without a GPU: the tests play cubecl's part (`launched` on the
//! issuing thread, then, with timing, `profiled` with the device window), inside real
//! annotations, and read the profile. Its own test binary: it registers the tracer and
//! runs sessions, both process-wide.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use cubecl_runtime::logging::{ProfileDuration, ProfileTicks};
use profiler_burn::DeviceName;
use profiler_core::schema;
use profiler_core::xspace::{XEvent, XPlane, XSpace, XStatValue};
use profiler_core::{session, trace, ProfileOptions};

/// Sessions are process-wide: one test records at a time.
static ONE: Mutex<()> = Mutex::new(());

const FC1: &str = "burn_cubecl::kernel::matmul::MatmulEntry<f32, burn_cubecl::Tiling>";
const RELU: &str = "burn_cubecl::kernel::unary::KernelUnary<f32, burn::Relu>";

/// A device window `(start, end)` after `origin`, µs, as wgpu's timestamp queries give
/// one: hours ahead of the host clock.
fn window(origin: Instant, start_us: u64, end_us: u64) -> ProfileDuration {
    let ahead = Duration::from_secs(5 * 3600);
    let (start, end) = (
        origin + ahead + Duration::from_micros(start_us),
        origin + ahead + Duration::from_micros(end_us),
    );
    ProfileDuration::new_device_time(async move { ProfileTicks::from_start_end(start, end) })
}

fn events<'a>(plane: &'a XPlane, name: &str) -> Vec<(i64, &'a XEvent)> {
    plane
        .lines
        .iter()
        .flat_map(|l| l.events.iter().map(move |e| (l.event_span_ps(e).0, e)))
        .filter(|(_, e)| plane.event_name(e.metadata_id) == Some(name))
        .collect()
}

fn correlation(plane: &XPlane, e: &XEvent) -> Option<u64> {
    match plane.find_stat(&e.stats, schema::CORRELATION_ID)? {
        XStatValue::Uint64(v) => Some(*v),
        _ => None,
    }
}

/// Runs `steps` steps of fc1 (two kernels, the second timed 30 µs after the first) and
/// relu (one kernel), each launched through the observer as cubecl would; returns the
/// profile's space.
fn run(timing: bool, steps: u64) -> XSpace {
    profiler_burn::name_device(DeviceName {
        ordinal: 0,
        runtime: "wgpu".into(),
        name: Some("llvmpipe (synthetic)".into()),
    });
    profiler_burn::register();
    let options = ProfileOptions::default().advanced(profiler_burn::KERNEL_TIMING, timing);
    session::start(options, None).expect("start");
    let observer = profiler_burn::testing::observer().expect("installed while recording");
    let origin = Instant::now();
    let mut at = 0;
    for _ in 0..steps {
        let _step = profiler_burn::step();
        let _fwd = trace!("forward");
        for (layer, kernels) in [("fc1", [FC1, FC1].as_slice()), ("relu", [RELU].as_slice())] {
            let _layer = profiler_core::Trace::new(layer);
            for kernel in kernels {
                observer.launched(kernel);
                if timing {
                    // The device ran it later, for 20 µs.
                    let start = origin.elapsed().as_micros() as u64 + at;
                    observer.profiled(kernel, window(origin, start, start + 20));
                    at += 30;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        }
    }
    // Outside every annotation.
    observer.launched(RELU);
    if timing {
        let start = origin.elapsed().as_micros() as u64 + at;
        observer.profiled(RELU, window(origin, start, start + 20));
    }
    drop(observer);
    session::stop().expect("stop").into_xspace()
}

#[test]
fn timed_kernels_are_on_the_gpu_plane_under_the_annotations_they_were_issued_in() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    profiler_burn::set_next_step(0);
    let space = run(true, 3);
    let host = space.plane(schema::HOST_PLANE).expect("host plane");
    let gpu = space.plane("/device:GPU:0").expect("a GPU plane");
    assert_eq!(
        gpu.find_text(&gpu.stats, schema::DEVICE_VENDOR),
        Some("wgpu")
    );
    assert_eq!(
        gpu.find_text(&gpu.stats, schema::DEVICE_NAME),
        Some("llvmpipe (synthetic)")
    );
    let kernels: Vec<_> = events(gpu, "MatmulEntry")
        .into_iter()
        .chain(events(gpu, "KernelUnary"))
        .collect();
    assert_eq!(kernels.len(), 3 * 3 + 1);
    fn op<'a>(gpu: &'a XPlane, e: &'a XEvent) -> Option<&'a str> {
        gpu.find_text(&e.stats, schema::TF_OP)
    }
    let under = |name: &str| {
        events(gpu, name)
            .into_iter()
            .filter_map(|(_, e)| op(gpu, e))
            .collect::<Vec<_>>()
    };
    assert_eq!(under("MatmulEntry"), ["forward/fc1:fc1"; 6]);
    assert_eq!(under("KernelUnary"), ["forward/relu:relu"; 3]);
    let steps: Vec<i64> = events(gpu, "MatmulEntry")
        .iter()
        .filter_map(|(_, e)| gpu.find_stat(&e.stats, schema::HOST_STEP_NUM)?.as_i64())
        .collect();
    assert_eq!(steps, [0, 0, 1, 1, 2, 2]);

    // Each kernel's launch is on the host, under its layer, with the same correlation
    // id; no kernel starts before its launch, and the first ran at its launch (the
    // clock of its own was shifted to the earliest it can be).
    let launches: Vec<(i64, &XEvent)> = events(host, "MatmulEntry")
        .into_iter()
        .chain(events(host, "KernelUnary"))
        .collect();
    assert_eq!(launches.len(), 10);
    let mut earliest_gap = i64::MAX;
    for (kernel_start, kernel) in &kernels {
        let id = correlation(gpu, kernel).expect("a correlation id");
        let (launch_start, _) = launches
            .iter()
            .find(|(_, l)| correlation(host, l) == Some(id))
            .expect("its launch");
        assert!(kernel_start >= launch_start, "a kernel before its launch");
        earliest_gap = earliest_gap.min(kernel_start - launch_start);
    }
    assert_eq!(earliest_gap, 0);
    // The kernel issued outside annotations is on a line of its own, unattributed, and
    // the profile says so.
    let unattributed = kernels.iter().filter(|(_, e)| op(gpu, e).is_none()).count();
    assert_eq!(unattributed, 1);
    assert!(host
        .lines
        .iter()
        .any(|l| l.name.starts_with("cubecl launches (")));
    assert!(
        space
            .warnings
            .iter()
            .any(|w| w.contains("1 of 10 cubecl kernels were issued where no annotation was open")),
        "{:?}",
        space.warnings
    );
}

#[test]
fn untimed_kernels_are_launches_on_the_host_only() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let space = run(false, 2);
    assert!(
        space.plane("/device:GPU:0").is_none(),
        "no device plane untimed"
    );
    let host = space.plane(schema::HOST_PLANE).expect("host plane");
    // Inside fc1's window on its thread's line.
    let fc1: Vec<(i64, i64)> = host
        .lines
        .iter()
        .flat_map(|l| {
            l.events
                .iter()
                .filter(|e| host.event_name(e.metadata_id) == Some("fc1"))
                .map(move |e| l.event_span_ps(e))
        })
        .collect();
    let launches = events(host, "MatmulEntry");
    assert_eq!(launches.len(), 4);
    for (at, e) in launches {
        assert!(
            fc1.iter().any(|&(s, end)| s <= at && at <= end),
            "outside fc1"
        );
        assert_eq!(correlation(host, e), None, "no flow without a kernel");
    }
}

#[test]
fn no_observer_outside_a_session() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    profiler_burn::register();
    assert!(profiler_burn::testing::observer().is_none());
}

/// A cubecl-shaped span (burn's `tracing` feature: cubecl's `launch_inner`, with
/// `kernel.name` and `kernel.id`) inside `prof::trace!("block")` is recorded under
/// `block`, with its `kernel.name`, through prof's tracing layer.
#[test]
fn cubecls_launch_span_lands_under_the_annotation() {
    use tracing_subscriber::prelude::*;
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let subscriber = tracing_subscriber::registry().with(profiler_core::ProfilerLayer::new());
    let _default = tracing::subscriber::set_default(subscriber);
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    {
        let _block = trace!("block");
        let span = tracing::trace_span!(
            "launch_inner",
            kernel.name = %"burn_cubecl::kernel::binary::KernelBinop<f32, Add>",
            kernel.id = %"KernelId(0x1a2b3c4d)",
        );
        let _entered = span.enter();
        std::thread::sleep(Duration::from_micros(100));
    }
    let space = session::stop().expect("stop").into_xspace();
    let host = space.plane(schema::HOST_PLANE).expect("host plane");
    let (block_start, block) = events(host, "block")[0];
    let (launch_start, launch) = events(host, "launch_inner")[0];
    let block_end = block_start + block.duration_ps;
    assert!(block_start <= launch_start && launch_start + launch.duration_ps <= block_end);
    assert_eq!(
        host.find_text(&launch.stats, "kernel.name"),
        Some("burn_cubecl::kernel::binary::KernelBinop<f32, Add>")
    );
    assert_eq!(
        host.find_text(&launch.stats, "kernel.id"),
        Some("KernelId(0x1a2b3c4d)")
    );
}
