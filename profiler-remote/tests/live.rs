//! The live view on loopback: `prof.live.v1.Live/Watch` streams against a running
//! workload, captures while watched, the watcher limit, the recorder stopped once
//! nobody watches, the GPU's kernel time while a watcher asks for it (a fake device
//! tracer), and TensorFlow's `Monitor` answered.
//!
//! Sessions are process-wide, so every test holds `serial()`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use prof_test_support::serial;
use prof_test_support::workload::Workload;
use profiler_core::tracer::{self, DeviceTime, SessionClock, Tracer};
use profiler_core::xspace::XSpace;
use profiler_core::ProfileOptions;
use profiler_core::{flight_recorder, session};
use profiler_remote::client::{self, CaptureError, CaptureRequest, Connection};
use profiler_remote::live::proto::{Recording, Snapshot, WatchRequest};
use profiler_remote::live::{self, Source};
use profiler_remote::server::{Limits, ServerBuilder};

mod support;
use support::{runtime, serve, serve_with};

async fn watching(addr: &str) -> tonic::Streaming<Snapshot> {
    watching_with(addr, WatchRequest::default()).await
}

async fn watching_with(addr: &str, request: WatchRequest) -> tonic::Streaming<Snapshot> {
    match live::watch_with(addr, &Connection::default(), request)
        .await
        .expect("watch")
    {
        Source::Live(stream) => *stream,
        Source::MonitorOnly => panic!("prof's server has the live view"),
    }
}

/// The next frame, within 5 s.
async fn next(stream: &mut tonic::Streaming<Snapshot>) -> Snapshot {
    tokio::time::timeout(Duration::from_secs(5), stream.message())
        .await
        .expect("a frame within 5 s")
        .expect("no error")
        .expect("the stream goes on")
}

/// Frames until one has a step (at most 10).
async fn with_steps(stream: &mut tonic::Streaming<Snapshot>) -> Snapshot {
    for _ in 0..10 {
        let frame = next(stream).await;
        if frame.step.is_some() && frame.recording == Recording::Live as i32 {
            return frame;
        }
    }
    panic!("no frame with steps in 10");
}

#[test]
fn a_watcher_sees_steps_ops_and_memory() {
    let _s = serial();
    let (_server, addr) = serve();
    let _work = Workload::start();
    runtime().block_on(async {
        let mut stream = watching(&addr).await;
        let first = with_steps(&mut stream).await;
        let second = with_steps(&mut stream).await;
        assert!(
            second.step > first.step,
            "{:?} then {:?}",
            first.step,
            second.step
        );
        assert!(second.time_unix_ns > first.time_unix_ns);
        let times = second.step_times.expect("step times");
        // The workload's steps sleep 2 ms.
        assert!(
            times.p50_ns >= 2_000_000 && times.p50_ns < 20_000_000,
            "{times:?}"
        );
        assert!(
            second.steps_per_second > 20.0,
            "{}",
            second.steps_per_second
        );
        assert!(!second.steps.is_empty() && second.steps.len() <= 120);
        let names: Vec<&str> = second.ops.iter().map(|o| o.name.as_str()).collect();
        assert!(
            names.contains(&"work") && names.contains(&"Train"),
            "{names:?}"
        );
        assert!(second.ops.len() <= 17);
        assert!(second
            .memory
            .and_then(|m| m.rss)
            .is_some_and(|rss| rss > 1 << 20));
        assert_eq!(second.watchers, 1);
        assert!(flight_recorder::is_background());
    });
}

#[test]
fn a_capture_while_watched_is_not_busy_and_the_view_says_so() {
    let _s = serial();
    let (_server, addr) = serve();
    let _work = Workload::start();
    runtime().block_on(async {
        let mut stream = watching(&addr).await;
        with_steps(&mut stream).await;
        let request = CaptureRequest {
            duration_ms: 2500,
            ..CaptureRequest::default()
        };
        let capture = tokio::spawn({
            let addr = addr.clone();
            async move { client::capture(&addr, &request).await }
        });
        let mut saw_capture = false;
        for _ in 0..6 {
            let frame = next(&mut stream).await;
            if frame.recording == Recording::Capture as i32 {
                let info = frame.capture.expect("the capture's progress");
                assert_eq!(info.duration_ms, 2500);
                saw_capture = true;
                break;
            }
        }
        assert!(saw_capture, "a frame said a capture runs");
        let captured = capture.await.expect("join").expect("the capture succeeds");
        let client::Captured::Space(space) = captured else {
            panic!("emit_xspace")
        };
        let profile = profiler_core::Profile::new(*space);
        assert!(profile.steps().len() > 100, "{}", profile.steps().len());
        // Live again after it.
        with_steps(&mut stream).await;
    });
}

#[test]
fn watchers_are_limited_and_the_recorder_stops_when_the_last_leaves() {
    let _s = serial();
    let limits = Limits {
        max_watchers: 2,
        ..Limits::default()
    };
    let (_server, addr) = serve_with(ServerBuilder::new(0).limits(limits));
    runtime().block_on(async {
        let a = watching(&addr).await;
        let mut b = watching(&addr).await;
        next(&mut b).await;
        let refused = live::watch(&addr, &Connection::default())
            .await
            .expect_err("a third watcher");
        assert!(refused.to_string().contains("max_watchers"), "{refused}");
        let refused = live::monitor(&addr, &Connection::default(), 100, 1)
            .await
            .expect_err("Monitor counts too");
        assert!(matches!(refused, CaptureError::Server(_)), "{refused}");
        assert!(session::is_running());
        drop(a);
        drop(b);
        let deadline = Instant::now() + Duration::from_secs(5);
        while session::is_running() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(!session::is_running(), "nobody watches: nothing records");
        // Room again.
        let mut c = watching(&addr).await;
        next(&mut c).await;
    });
}

#[test]
fn monitor_answers_with_tpu_wording() {
    let _s = serial();
    let (_server, addr) = serve();
    let _work = Workload::start();
    runtime().block_on(async {
        let started = Instant::now();
        let level2 = live::monitor(&addr, &Connection::default(), 1000, 2)
            .await
            .expect("monitor");
        assert!(started.elapsed() < Duration::from_secs(2));
        let step_line = level2
            .data
            .lines()
            .find(|l| l.starts_with("Step time: "))
            .unwrap_or_else(|| panic!("{}", level2.data));
        assert!(step_line.ends_with("ms (max)"), "{step_line}");
        let result = level2.monitor_result.expect("numbers");
        assert!(
            result.step_time_ms_avg >= 2.0 && result.step_time_ms_avg < 20.0,
            "{result:?}"
        );
        assert!(result.step_time_ms_min <= result.step_time_ms_avg);
        assert!(result.step_time_ms_avg <= result.step_time_ms_max);
        assert_eq!(result.response_type, 3);
        let utilization = level2
            .data
            .split("Utilization ")
            .nth(1)
            .and_then(|s| s.split(": ").nth(1))
            .and_then(|s| s.split('%').next())
            .and_then(|s| s.parse::<f64>().ok());
        assert!(
            utilization.is_some(),
            "parsed as wandb does: {}",
            level2.data
        );

        let level1 = live::monitor(&addr, &Connection::default(), 500, 1)
            .await
            .expect("monitor");
        assert!(!level1.data.contains("Step time"), "{}", level1.data);
        assert!(level1.data.contains("Utilization "), "{}", level1.data);
        assert_eq!(level1.monitor_result.expect("numbers").response_type, 1);
        // Nobody watches now: nothing records.
        assert!(!session::is_running());
    });
}

#[test]
fn watching_takes_the_servers_token() {
    let _s = serial();
    let (_server, addr) = serve_with(ServerBuilder::new(0).bearer_token("s3cret"));
    runtime().block_on(async {
        let refused = live::watch(&addr, &Connection::default())
            .await
            .expect_err("no token");
        assert_eq!(
            refused.kind(),
            profiler_core::ErrorKind::Unauthenticated,
            "{refused}"
        );
        let with_token = Connection {
            bearer_token: Some("s3cret".into()),
            ..Connection::default()
        };
        let Source::Live(mut stream) = live::watch(&addr, &with_token).await.expect("watch") else {
            panic!("prof's server has the live view");
        };
        next(&mut stream).await;
        let refused = live::monitor(&addr, &Connection::default(), 100, 1)
            .await
            .expect_err("Monitor needs it too");
        assert_eq!(
            refused.kind(),
            profiler_core::ErrorKind::Unauthenticated,
            "{refused}"
        );
    });
}

/// Device tracers of the fake kind running now.
static FAKE_GPUS: AtomicU32 = AtomicU32::new(0);

/// A device tracer whose one GPU runs kernels half the time: its counts, process-wide
/// as CUPTI's are, grow by half the wall time since the first one started.
struct HalfBusyGpu;

impl HalfBusyGpu {
    fn origin() -> Instant {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        *ORIGIN.get_or_init(Instant::now)
    }
}

impl Tracer for HalfBusyGpu {
    fn start(&mut self) -> Result<(), profiler_core::Error> {
        Self::origin();
        FAKE_GPUS.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn stop(&mut self) -> Result<(), profiler_core::Error> {
        FAKE_GPUS.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
    fn collect(&mut self, _: &mut XSpace, _: &SessionClock) {}
    fn device_time(&mut self) -> Option<Vec<DeviceTime>> {
        let ns = Self::origin().elapsed().as_nanos() as u64 / 2;
        Some(vec![DeviceTime {
            device: 0,
            name: "Half-busy GPU".into(),
            kernel_ns: ns,
            kernels: ns / 1000,
        }])
    }
}

fn half_busy(options: &ProfileOptions) -> Option<Box<dyn Tracer>> {
    (options.device_tracer_level >= 1).then(|| Box::new(HalfBusyGpu) as _)
}

/// Frames until `done` holds for one (at most 10).
async fn until(
    stream: &mut tonic::Streaming<Snapshot>,
    done: impl Fn(&Snapshot) -> bool,
) -> Snapshot {
    for _ in 0..10 {
        let frame = next(stream).await;
        if done(&frame) {
            return frame;
        }
    }
    panic!("no such frame in 10");
}

#[test]
fn kernels_are_traced_only_while_a_watcher_asks_and_each_frame_shows_their_time() {
    let _s = serial();
    tracer::register(half_busy);
    let (_server, addr) = serve();
    let _work = Workload::start();
    runtime().block_on(async {
        // A watcher that does not ask: no device tracer runs, and the frame says how
        // to get kernel time.
        let mut plain = watching(&addr).await;
        let off = with_steps(&mut plain).await;
        assert_eq!(FAKE_GPUS.load(Ordering::SeqCst), 0);
        assert!(off.kernels.is_empty());
        let why = off.kernels_unavailable.expect("a reason");
        assert!(why.contains("--kernels"), "{why}");

        // One that asks: the live view's recorder traces kernels from its next tick,
        // and every watcher's frames show each device's share of the interval.
        let mut asking = watching_with(
            &addr,
            WatchRequest {
                trace_kernels: true,
            },
        )
        .await;
        let on = until(&mut asking, |f| !f.kernels.is_empty()).await;
        assert_eq!(FAKE_GPUS.load(Ordering::SeqCst), 1);
        let gpu = &on.kernels[0];
        assert_eq!((gpu.device, gpu.name.as_str()), (0, "Half-busy GPU"));
        let share = gpu.kernel_ns as f64 / gpu.interval_ns as f64;
        assert!((0.45..0.55).contains(&share), "{share} of {gpu:?}");
        assert!(gpu.interval_ns > 500_000_000, "{gpu:?}");
        assert!(with_steps(&mut asking).await.step.is_some(), "steps go on");
        let seen = until(&mut plain, |f| !f.kernels.is_empty()).await;
        assert_eq!(seen.kernels[0].device, 0);

        // When it leaves, tracing stops: the program pays for kernels no longer.
        drop(asking);
        let after = until(&mut plain, |f| f.kernels.is_empty()).await;
        assert!(after.kernels_unavailable.is_some());
        assert_eq!(FAKE_GPUS.load(Ordering::SeqCst), 0);
    });
}
