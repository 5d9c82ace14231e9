//! `prof-top`: its screens for fixed updates (80×24 and 60×20), and the installed
//! binary's `--once`/`--json` against prof servers on loopback: the step time against
//! the program's own clock, three hosts with the slow one marked, an unreachable host.

use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use prof_cli::top::plain;
use prof_cli::top::state::{App, Key, Link, Update};
use prof_test_support::{child, serial};
use profiler_core::trace;
use profiler_remote::live::proto::{
    Capture, DeviceKernels, Gpu, InputShare, Memory, Op, Recording, Snapshot, Step, StepTimes,
};
use profiler_remote::server;

/// A snapshot whose every number is fixed.
fn fixed(host: &str, p50_ms: u64) -> Snapshot {
    let ms = 1_000_000;
    Snapshot {
        host: host.into(),
        time_unix_ns: 1_700_000_000_000_000_000,
        recording: Recording::Live as i32,
        step: Some(4321),
        steps: (0..120)
            .map(|i| Step {
                step: 4202 + i,
                duration_ns: p50_ms * ms + (i as u64 % 7) * ms / 10,
                input_ns: ms,
                end_unix_ns: 0,
            })
            .collect(),
        step_times: Some(StepTimes {
            last_ns: p50_ms * ms + ms / 10,
            avg_ns: (p50_ms * ms) as f64,
            min_ns: p50_ms * ms - ms / 10,
            p50_ns: p50_ms * ms,
            p90_ns: p50_ms * ms + ms / 2,
            max_ns: p50_ms * ms + 3 * ms,
        }),
        steps_per_second: 1000.0 / p50_ms as f64,
        input: Some(InputShare {
            avg_percent: 25.0,
            min_percent: 20.5,
            max_percent: 31.25,
        }),
        ops: vec![
            Op {
                name: "forward".into(),
                self_ns: 2_400 * ms,
                share: 0.48,
                count: 1000,
            },
            Op {
                name: "backward".into(),
                self_ns: 1_300 * ms,
                share: 0.26,
                count: 1000,
            },
            Op {
                name: "load_batch".into(),
                self_ns: 1_250 * ms,
                share: 0.25,
                count: 1000,
            },
            Op {
                name: "Train".into(),
                self_ns: 50 * ms,
                share: 0.01,
                count: 1000,
            },
        ],
        memory: Some(Memory {
            host_in_use: Some(64 << 20),
            host_peak: Some(96 << 20),
            rss: Some(150 << 20),
        }),
        frames_dropped: 0,
        capture: None,
        window_ns: 5_000_000_000,
        events: 4000,
        watchers: 1,
        // Each host's own GPU, as its process reads it through NVML.
        gpus: vec![Gpu {
            index: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            busy_percent: Some(87),
            memory_used: Some(40 << 30),
            memory_total: Some(80 << 30),
        }],
        gpus_unavailable: None,
        // Its own kernels over the last second, as its CUPTI tracer saw them.
        kernels: vec![DeviceKernels {
            device: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            kernel_ns: 412 * ms,
            kernels: 3100,
            interval_ns: 1000 * ms,
        }],
        kernels_unavailable: None,
    }
}

fn one_host() -> App {
    let mut app = App::new(&["trainer-0:6009".to_owned()]);
    app.apply(Update::Link(0, Link::Connected));
    app.apply(Update::Snapshot(0, Box::new(fixed("trainer-0", 5))));
    app
}

#[test]
fn the_screen_at_80_by_24() {
    insta::assert_snapshot!("one_host_80x24", plain::text(&one_host(), 80, 24));
}

#[test]
fn a_60_by_20_terminal_still_shows_the_step_time() {
    let screen = plain::text(&one_host(), 60, 20);
    assert!(
        screen.contains("Step time  last 5.10ms  p50 5.00ms"),
        "{screen}"
    );
    insta::assert_snapshot!("one_host_60x20", screen);
    // Smaller still: no panic.
    for (w, h) in [(20, 5), (1, 1), (0, 0)] {
        let _ = plain::text(&one_host(), w, h);
    }
}

#[test]
fn three_hosts_show_as_rows_with_the_slow_one_marked() {
    let names = ["a:1", "b:2", "c:3"].map(str::to_owned);
    let mut app = App::new(&names);
    for (i, p50) in [5, 9, 5].into_iter().enumerate() {
        app.apply(Update::Link(i, Link::Connected));
        app.apply(Update::Snapshot(i, Box::new(fixed(&names[i], p50))));
    }
    assert_eq!(app.straggler(), Some(1));
    insta::assert_snapshot!("three_hosts_80x24", plain::text(&app, 80, 24));
}

#[test]
fn keys_sort_filter_pause_and_quit() {
    let mut app = one_host();
    let names = |app: &App| app.ops().iter().map(|o| o.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(&app), ["forward", "backward", "load_batch", "Train"]);
    app.key(Key::Char('s'));
    app.key(Key::Char('s'));
    assert_eq!(names(&app), ["Train", "backward", "forward", "load_batch"]);
    for k in [Key::Char('/'), Key::Char('W'), Key::Char('A'), Key::Enter] {
        app.key(k);
    }
    assert_eq!(names(&app), ["backward", "forward"]);
    assert!(plain::text(&app, 80, 24).contains("filter: WA"));
    app.key(Key::Esc);
    assert_eq!(names(&app).len(), 4);
    app.key(Key::Char('p'));
    let mut later = fixed("trainer-0", 5);
    later.step = Some(9999);
    app.apply(Update::Snapshot(0, Box::new(later.clone())));
    assert_eq!(
        app.host().last.as_ref().and_then(|s| s.step),
        Some(4321),
        "paused"
    );
    assert!(plain::text(&app, 80, 24).contains("PAUSED"));
    app.key(Key::Char('p'));
    app.apply(Update::Snapshot(0, Box::new(later)));
    assert_eq!(app.host().last.as_ref().and_then(|s| s.step), Some(9999));
    app.key(Key::Char('?'));
    assert!(plain::text(&app, 80, 24).contains("this help"));
    assert_eq!(app.key(Key::Char('q')), prof_cli::top::state::Action::Quit);
}

#[test]
fn a_capture_and_a_lost_connection_are_said() {
    let mut app = one_host();
    let mut capturing = fixed("trainer-0", 5);
    capturing.recording = Recording::Capture as i32;
    capturing.capture = Some(Capture {
        session_id: "s".into(),
        elapsed_ms: 1200,
        duration_ms: 2000,
    });
    app.apply(Update::Snapshot(0, Box::new(capturing)));
    assert!(plain::text(&app, 80, 24).contains("capture running (1.2/2.0 s)"));
    app.apply(Update::Link(
        0,
        Link::Reconnecting {
            at: Instant::now() + Duration::from_millis(2500),
            why: "cannot reach trainer-0:6009".into(),
        },
    ));
    let screen = plain::text(&app, 80, 24);
    assert!(screen.contains("reconnecting in 3 s"), "{screen}");
    assert!(screen.contains("cannot reach trainer-0:6009"), "{screen}");
}

fn prof_top(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prof-top"))
        .args(args)
        .output()
        .expect("runs")
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn the_step_time_shown_is_the_programs_own_within_10_percent() {
    let _s = serial();
    let server = server::start(0).expect("server");
    let addr = format!("127.0.0.1:{}", server.local_addr().port());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let trainer = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut measured = Vec::new();
            let until = Instant::now() + Duration::from_secs(30);
            let mut step = 0i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < until {
                let began = Instant::now();
                {
                    let _s = trace!("Train", step_num = step);
                    let _i = trace!("load_batch");
                    std::thread::sleep(Duration::from_millis(3));
                }
                measured.push((Instant::now(), began.elapsed()));
                step += 1;
            }
            measured
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    let asked = Instant::now();
    let out = prof_top(&[&addr, "--json", "--wait-ms", "10000"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let measured = trainer.join().expect("trainer");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let host = &json(&out)["hosts"][0];
    assert_eq!(host["state"], "connected");
    // The GPUs are the watched process's: listed, or why not (no driver here).
    let gpus = host["gpus"].as_array().expect("gpus");
    assert!(
        !gpus.is_empty()
            || host["gpus_unavailable"]
                .as_str()
                .is_some_and(|w| w.contains("NVML") || w.contains("libnvidia-ml")),
        "{host}"
    );
    // Kernels are traced only when asked (--kernels): the reason says how.
    assert_eq!(host["kernels"].as_array().map(Vec::len), Some(0), "{host}");
    assert!(
        host["kernels_unavailable"]
            .as_str()
            .is_some_and(|w| w.contains("--kernels")),
        "{host}"
    );
    let shown = host["step_time_ms"]["avg"].as_f64().expect("avg step time");
    // The program's own mean over the steps since prof-top was started.
    let own: Vec<f64> = measured
        .iter()
        .filter(|(at, _)| *at >= asked)
        .map(|(_, d)| d.as_secs_f64() * 1e3)
        .collect();
    let own = own.iter().sum::<f64>() / own.len() as f64;
    assert!(
        (shown - own).abs() / own <= 0.10,
        "shown {shown:.3} ms, measured {own:.3} ms"
    );
    let ops: Vec<&str> = host["ops"]
        .as_array()
        .expect("ops")
        .iter()
        .filter_map(|o| o["name"].as_str())
        .collect();
    assert!(ops.contains(&"load_batch"), "{ops:?}");
    assert!(
        host["input_percent"]["avg"]
            .as_f64()
            .is_some_and(|p| p > 80.0),
        "{host}"
    );
    server.stop();
}

#[test]
fn an_unreachable_host_fails_once_naming_it() {
    let server = server::start(0).expect("server");
    let addr = format!("127.0.0.1:{}", server.local_addr().port());
    server.stop();
    let out = prof_top(&[&addr, "--once", "--wait-ms", "1500"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&addr), "{stderr}");
    let out = prof_top(&[&addr, "--json", "--wait-ms", "1500"]);
    assert_eq!(json(&out)["hosts"][0]["state"], "unreachable");
}

/// Set in the child processes [`serve_as_a_child_process`] runs in: the step time in
/// ms.
const CHILD: &str = "PROF_TOP_CHILD_STEP_MS";

/// Not a test of its own, so ignored: [`child_server`] runs it alone in a child
/// process, where it serves a prof server with a training loop of [`CHILD`] ms steps
/// for a few seconds and prints its port (one process has one session, so each host
/// of a multi-host view is a process).
#[test]
#[ignore = "a child process of three_loopback_servers_one_slower, run by it"]
fn serve_as_a_child_process() {
    let step_ms: u64 = std::env::var(CHILD)
        .expect("not a test: three_loopback_servers_one_slower runs it")
        .parse()
        .expect("ms");
    let server = server::start(0).expect("server");
    child::listening(&format!("127.0.0.1:{}", server.local_addr().port()));
    let until = Instant::now() + Duration::from_secs(15);
    let mut step = 0i64;
    while Instant::now() < until {
        let _s = trace!("Train", step_num = step);
        std::thread::sleep(Duration::from_millis(step_ms));
        step += 1;
    }
}

fn child_server(step_ms: u64) -> (Child, String) {
    child::server(child::this_test("serve_as_a_child_process").env(CHILD, step_ms.to_string()))
}

#[test]
fn three_loopback_servers_one_slower() {
    let mut children = Vec::new();
    let mut addresses = Vec::new();
    for step_ms in [3, 9, 3] {
        let (child, addr) = child_server(step_ms);
        children.push(child);
        addresses.push(addr);
    }
    let list = addresses.join(",");
    let json_out = prof_top(&[&list, "--json", "--wait-ms", "10000"]);
    let text_out = prof_top(&[&list, "--once", "--wait-ms", "10000"]);
    for child in &mut children {
        let _ = (child.kill(), child.wait());
    }
    assert_eq!(json_out.status.code(), Some(0), "{json_out:?}");
    let hosts = json(&json_out)["hosts"].as_array().expect("hosts").clone();
    assert_eq!(hosts.len(), 3);
    let marked: Vec<bool> = hosts.iter().map(|h| h["straggler"] == true).collect();
    assert_eq!(marked, [false, true, false], "{hosts:?}");
    let text = String::from_utf8_lossy(&text_out.stdout);
    for addr in &addresses {
        assert!(text.contains(addr.as_str()), "{text}");
    }
    let slow_rows = text
        .lines()
        .filter(|l| l.contains(addresses[1].as_str()) && l.contains("slowest"))
        .count();
    // One screen per host, each with the three rows.
    assert_eq!(slow_rows, 3, "{text}");
}

/// A `tensorflow.ProfilerService` that answers nothing (UNIMPLEMENTED), as JAX's and
/// TensorFlow's open-source servers answer `Monitor`, and without `prof.live.v1`.
struct NoLiveView;

fn unimplemented<T>() -> Result<tonic::Response<T>, tonic::Status> {
    Err(tonic::Status::unimplemented("not here"))
}

#[tonic::async_trait]
impl profiler_remote::rpc::profiler_service_server::ProfilerService for NoLiveView {
    async fn profile(
        &self,
        _: tonic::Request<profiler_remote::proto::ProfileRequest>,
    ) -> Result<tonic::Response<profiler_remote::proto::ProfileResponse>, tonic::Status> {
        unimplemented()
    }
    async fn terminate(
        &self,
        _: tonic::Request<profiler_remote::proto::TerminateRequest>,
    ) -> Result<tonic::Response<profiler_remote::proto::TerminateResponse>, tonic::Status> {
        unimplemented()
    }
    async fn monitor(
        &self,
        _: tonic::Request<profiler_remote::proto::MonitorRequest>,
    ) -> Result<tonic::Response<profiler_remote::proto::MonitorResponse>, tonic::Status> {
        unimplemented()
    }
    async fn start_continuous_profiling(
        &self,
        _: tonic::Request<profiler_remote::proto::ProfileRequest>,
    ) -> Result<tonic::Response<profiler_remote::proto::ContinuousProfilingResponse>, tonic::Status>
    {
        unimplemented()
    }
    async fn stop_continuous_profiling(
        &self,
        _: tonic::Request<profiler_remote::proto::StopContinuousProfilingRequest>,
    ) -> Result<
        tonic::Response<profiler_remote::proto::StopContinuousProfilingResponse>,
        tonic::Status,
    > {
        unimplemented()
    }
    async fn get_snapshot(
        &self,
        _: tonic::Request<profiler_remote::proto::GetSnapshotRequest>,
    ) -> Result<tonic::Response<profiler_remote::proto::ProfileResponse>, tonic::Status> {
        unimplemented()
    }
}

#[test]
fn a_server_without_a_live_view_is_said_in_one_line() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let serving = runtime.spawn(
        tonic::transport::Server::builder()
            .add_service(
                profiler_remote::rpc::profiler_service_server::ProfilerServiceServer::new(
                    NoLiveView,
                ),
            )
            .serve(addr.parse().expect("address")),
    );
    std::thread::sleep(Duration::from_millis(300));
    let out = prof_top(&[&addr, "--json", "--wait-ms", "5000"]);
    serving.abort();
    let host = &json(&out)["hosts"][0];
    assert_eq!(host["state"], "no live view", "{host}");
    let error = host["error"].as_str().expect("the line");
    assert!(
        error.contains("has no live view") && !error.contains('\n'),
        "{error}"
    );
    assert_eq!(out.status.code(), Some(1), "a host that gave nothing");
}
