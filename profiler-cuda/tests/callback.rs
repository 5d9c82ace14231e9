//! The launch path without a GPU: prof's CUPTI callback fed synthetic
//! `CUpti_CallbackData` inside real annotations, collected as the live tracer collects
//! (the calls' ticks through the session's clock), then a synthetic kernel with the
//! same correlation id through the conversion: the kernel carries the annotation that
//! was open at its launch, read from the scope hook's stack, not from CUPTI. Its own
//! test binary: it registers a tracer and installs the scope hook, both process-wide.

use std::sync::atomic::{AtomicU64, Ordering};

use profiler_core::schema;
use profiler_core::tracer::{self, SessionClock, Tracer};
use profiler_core::xspace::{XPlane, XSpace, XStatValue};
use profiler_core::{session, trace, ProfileOptions};
use profiler_cuda::activity::DeviceTrace;
use profiler_cuda::{calls, convert, synthetic};

/// One launch as CUPTI reports it, entry then exit.
fn launch(correlation_id: u32) {
    synthetic::DriverLaunch::new().report(correlation_id);
}

static GENERATION: AtomicU64 = AtomicU64::new(0);
/// Sessions are process-wide: one test records at a time.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The live tracer's collection, less CUPTI: the calls from the logs, a kernel per
/// launch (8 µs after it, 10 µs long) from the device.
struct SyntheticDevice;

impl Tracer for SyntheticDevice {
    fn start(&mut self) -> Result<(), profiler_core::Error> {
        GENERATION.store(calls::begin_session(1 << 20), Ordering::Relaxed);
        tracer::keep_scope_stack(true);
        tracer::accept_hand_offs(true);
        Ok(())
    }
    fn stop(&mut self) -> Result<(), profiler_core::Error> {
        tracer::keep_scope_stack(false);
        tracer::accept_hand_offs(false);
        calls::end_session();
        Ok(())
    }
    fn collect(&mut self, space: &mut XSpace, session: &SessionClock) {
        let threads = calls::collect(GENERATION.load(Ordering::Relaxed));
        let (mut activities, _) = calls::into_activities(
            threads,
            |_, cbid| {
                if cbid == synthetic::cbid::CU_LAUNCH_KERNEL {
                    "cuLaunchKernel".into()
                } else {
                    format!("CUDA API {cbid}")
                }
            },
            |ticks| session.ticks_to_clock_ns(ticks),
        );
        let kernels = synthetic::kernels_for_calls(&activities, |id, start, _| {
            (format!("kernel_{id}"), start + 8_000, start + 18_000)
        });
        activities.extend(kernels);
        let trace = DeviceTrace {
            activities,
            ..DeviceTrace::default()
        };
        convert::add_to_space(&trace, space, &|ns| session.to_session_ns(ns));
    }
}

fn factory(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    (options.device_tracer_level >= 1).then(|| Box::new(SyntheticDevice) as _)
}

fn stat<'a>(plane: &'a XPlane, name: &str, kernel: &str) -> Option<&'a XStatValue> {
    let event = plane
        .lines
        .iter()
        .flat_map(|l| &l.events)
        .find(|e| plane.event_name(e.metadata_id) == Some(kernel))?;
    plane.find_stat(&event.stats, name)
}

#[test]
fn a_launch_carries_the_annotation_open_on_its_thread() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    tracer::register(factory);
    session::start(ProfileOptions::default(), None).expect("start");
    {
        let _step = trace!("Train", step_num = 3);
        let _fwd = trace!("forward");
        {
            let _attn = trace!("attn");
            launch(1);
        }
        let _mlp = trace!("mlp");
        launch(2);
    }
    launch(3); // outside every annotation
               // The synthetic kernels end 18 µs after their launches: inside the session.
    std::thread::sleep(std::time::Duration::from_millis(1));
    let space = session::stop().expect("stop").into_xspace();

    let gpu = space.plane("/device:GPU:0").expect("a GPU plane");
    let op = |kernel| {
        let event = gpu
            .lines
            .iter()
            .flat_map(|l| &l.events)
            .find(|e| gpu.event_name(e.metadata_id) == Some(kernel))?;
        gpu.find_text(&event.stats, convert::TF_OP)
    };
    assert_eq!(op("kernel_1"), Some("forward/attn:attn"));
    assert_eq!(op("kernel_2"), Some("forward/mlp:mlp"));
    assert_eq!(op("kernel_3"), None);
    assert!(
        stat(gpu, profiler_cuda::stats::CORRELATION_ID, "kernel_3").is_some(),
        "kernel_3 is there"
    );
    assert_eq!(
        stat(gpu, convert::HOST_STEP_NUM, "kernel_1").and_then(XStatValue::as_i64),
        Some(3)
    );
    // The launches are on the host: inside the annotations, on the thread's line.
    let host = space.plane(schema::HOST_PLANE).expect("host plane");
    let line = host
        .lines
        .iter()
        .find(|l| {
            l.events
                .iter()
                .any(|e| host.event_name(e.metadata_id) == Some("attn"))
        })
        .expect("the thread's line");
    let launches = line
        .events
        .iter()
        .filter(|e| host.event_name(e.metadata_id) == Some("cuLaunchKernel"))
        .count();
    assert_eq!(launches, 2);
    assert!(host
        .lines
        .iter()
        .any(|l| l.name.starts_with("CUDA API (thread")));
}

/// cubecl's shape: the user's thread issues each kernel inside its annotations (and
/// hands the annotation off, as profiler-burn's launch observer does), and cubecl's
/// device thread, where no annotation is open, launches it later, after the user's
/// thread moved on.
#[test]
fn a_launch_on_a_device_thread_carries_the_annotation_its_kernel_was_issued_under() {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    tracer::register(factory);
    // What the live tracer learns from CUPTI's names: 307 is a kernel launch.
    profiler_cuda::synthetic::set_function_name(
        calls::ApiDomain::Driver,
        synthetic::cbid::CU_LAUNCH_KERNEL,
        "cuLaunchKernel",
    );
    let (issue, issued) = std::sync::mpsc::channel::<u32>();
    let device = std::thread::Builder::new()
        .name("DSD-cubecl-0".into())
        .spawn(move || {
            let mut launched = Vec::new();
            // Bounded: the sender hangs up after the last kernel.
            while let Ok(id) = issued.recv() {
                assert_eq!(
                    tracer::scope_depth(),
                    0,
                    "no annotation on the device thread"
                );
                launch(id);
                launched.push(id);
            }
            launched
        })
        .expect("device thread");
    session::start(ProfileOptions::default(), None).expect("start");
    {
        let _step = trace!("Train", step_num = 5);
        let _fwd = trace!("forward");
        for (layer, id) in [("fc1", 11), ("relu", 12), ("fc2", 13)] {
            let _layer = profiler_core::Trace::new(layer);
            assert!(
                tracer::hand_off(),
                "hand-offs are accepted while the tracer runs"
            );
            issue.send(id).expect("device thread alive");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    // Issued outside every annotation: launched with no annotation.
    assert!(tracer::hand_off());
    issue.send(14).expect("device thread alive");
    drop(issue);
    let launched = device.join().expect("device thread");
    assert_eq!(launched, [11, 12, 13, 14]);
    std::thread::sleep(std::time::Duration::from_millis(1));
    let space = session::stop().expect("stop").into_xspace();
    assert!(!tracer::hand_offs_accepted(), "not past the session");

    let gpu = space.plane("/device:GPU:0").expect("a GPU plane");
    let op = |kernel| {
        let event = gpu
            .lines
            .iter()
            .flat_map(|l| &l.events)
            .find(|e| gpu.event_name(e.metadata_id) == Some(kernel))?;
        gpu.find_text(&event.stats, convert::TF_OP)
    };
    assert_eq!(op("kernel_11"), Some("forward/fc1:fc1"));
    assert_eq!(op("kernel_12"), Some("forward/relu:relu"));
    assert_eq!(op("kernel_13"), Some("forward/fc2:fc2"));
    assert_eq!(op("kernel_14"), None);
    assert_eq!(
        stat(gpu, convert::HOST_STEP_NUM, "kernel_12").and_then(XStatValue::as_i64),
        Some(5)
    );
    // The launches stay on the device thread's own line, each with its flow to its
    // kernel; none is drawn on the user's thread.
    let host = space.plane(schema::HOST_PLANE).expect("host plane");
    let launches_on = |api_lines: bool| {
        host.lines
            .iter()
            .filter(|l| l.name.starts_with("CUDA API (thread") == api_lines)
            .flat_map(|l| &l.events)
            .filter(|e| host.event_name(e.metadata_id) == Some("cuLaunchKernel"))
            .filter(|e| host.find_stat(&e.stats, schema::CORRELATION_ID).is_some())
            .count()
    };
    assert_eq!(launches_on(true), 4);
    assert_eq!(launches_on(false), 0);
}

#[test]
fn annotations_make_no_call_into_cupti() {
    // With no libcupti on this machine, any CUPTI call would panic (cudarc loads its
    // symbols at first use): a thousand annotations under the hook prove there is none.
    if profiler_cuda::missing_libraries().is_none() {
        eprintln!("libcupti is present here: this test proves nothing on this machine");
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    tracer::keep_scope_stack(true);
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    for i in 0..1000 {
        let _t = trace!("step", i = i);
        let _u = trace!("inner");
        assert_eq!(tracer::scope_depth(), 2);
    }
    let _ = session::stop();
    tracer::keep_scope_stack(false);
    assert_eq!(tracer::scope_depth(), 0);
}
