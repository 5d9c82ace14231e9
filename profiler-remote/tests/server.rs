//! The ProfilerService server against its client and hand-made requests, on loopback.
//!
//! Sessions are process-wide, so every test holds `serial()`.

use std::time::{Duration, Instant};

use prof_test_support::serial;
use prof_test_support::workload::Workload;
use profiler_core::{schema, session, trace, Profile};
use profiler_remote::client::{self, CaptureError, CaptureRequest, Captured};
use profiler_remote::proto;
use profiler_remote::rpc::profiler_service_client::ProfilerServiceClient;
use profiler_remote::server;
use tonic::Code;

mod support;
use support::{raw_client, runtime, serve, xprof_like};

/// Waits (at most 10 s) until `done` holds, without blocking the runtime.
async fn wait_until(done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn quick(duration_ms: u64) -> CaptureRequest {
    CaptureRequest {
        duration_ms,
        ..CaptureRequest::default()
    }
}

#[test]
fn emit_xspace_returns_the_capture_and_writes_nothing() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let (_server, addr) = serve();
    let _work = Workload::start();
    let request = CaptureRequest {
        repository_root: dir.path().to_string_lossy().into_owned(),
        ..quick(300)
    };
    let captured = runtime()
        .block_on(client::capture(&addr, &request))
        .expect("capture");
    let Captured::Space(space) = captured else {
        panic!("expected the XSpace in the response")
    };
    let profile = profiler_core::Profile::new(*space);
    assert!(profile.steps().len() > 10, "{:?}", profile.steps());
    let host = profile
        .xspace()
        .plane(schema::HOST_PLANE)
        .expect("host plane");
    assert!(host.lines.iter().any(|l| l.name == "trainer"));
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        0,
        "nothing written"
    );
    assert!(!session::is_running(), "the capture's session ended");
}

#[test]
fn without_emit_xspace_the_server_writes_where_tsl_does() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("plugins/profile");
    let (_server, addr) = serve();
    let _work = Workload::start();
    let response = runtime().block_on(async {
        let mut c = raw_client(&addr).await;
        c.profile(xprof_like(
            &root.to_string_lossy(),
            "2026_01_02_03_04_05",
            "localhost:6009",
            200,
        ))
        .await
    });
    let response = response.expect("profile").into_inner();
    assert!(!response.empty_trace);
    assert!(response.xspace.is_none());
    let file = root.join("2026_01_02_03_04_05/localhost_6009.xplane.pb");
    let space = profiler_export::xplane::read(&file).expect("the file the server wrote");
    assert!(!profiler_core::Profile::new(space).steps().is_empty());
}

#[test]
fn nothing_recorded_is_an_empty_trace() {
    let _s = serial();
    let (_server, addr) = serve();
    let mut request = xprof_like("", "s", "h", 100);
    request.emit_xspace = true;
    let response = runtime()
        .block_on(async { raw_client(&addr).await.profile(request).await })
        .expect("profile")
        .into_inner();
    assert!(response.empty_trace);
}

#[test]
fn a_second_concurrent_capture_is_refused_as_busy() {
    let _s = serial();
    let (_server, addr) = serve();
    runtime().block_on(async {
        let first = tokio::spawn({
            let addr = addr.clone();
            async move { client::capture(&addr, &quick(3000)).await }
        });
        wait_until(session::is_running).await;
        let second = client::capture(&addr, &quick(100)).await;
        match second {
            Err(CaptureError::Busy(e)) => {
                assert_eq!(e.kind(), profiler_core::ErrorKind::AlreadyExists);
                assert!(e.to_string().contains(server::BUSY), "{e}")
            }
            other => panic!("expected busy, got {other:?}"),
        }
        assert!(
            first.await.expect("join").is_ok(),
            "the first capture is unharmed"
        );
    });
}

#[test]
fn terminate_ends_a_capture_early_and_keeps_its_data() {
    let _s = serial();
    let (_server, addr) = serve();
    let _work = Workload::start();
    let started = Instant::now();
    let response = runtime().block_on(async {
        let mut request = xprof_like("", "long", "h", 30_000);
        request.emit_xspace = true;
        let capture = tokio::spawn({
            let addr = addr.clone();
            async move { raw_client(&addr).await.profile(request).await }
        });
        wait_until(session::is_running).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        raw_client(&addr)
            .await
            .terminate(proto::TerminateRequest {
                session_id: "long".into(),
            })
            .await
            .expect("terminate");
        capture.await.expect("join")
    });
    let response = response.expect("profile").into_inner();
    assert!(started.elapsed() < Duration::from_secs(10), "ended early");
    let profile = profiler_core::Profile::new(response.xspace.expect("xspace"));
    assert!(!profile.steps().is_empty(), "what was recorded is kept");
}

#[test]
fn names_that_would_leave_the_repository_root_are_refused() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("root");
    let (_server, addr) = serve();
    let rt = runtime();
    for (session_id, host) in [
        ("../escape", "h"),
        ("a/b", "h"),
        ("/abs", "h"),
        ("..", "h"),
        ("ok", "../../etc/passwd"),
        ("ok", "a\\b"),
    ] {
        let status = rt
            .block_on(async {
                raw_client(&addr)
                    .await
                    .profile(xprof_like(&root.to_string_lossy(), session_id, host, 50))
                    .await
            })
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{session_id} {host}");
        assert!(
            status.message().contains("not a plain name"),
            "{}",
            status.message()
        );
    }
    assert!(!root.exists(), "nothing was created");
}

/// XProf's Capture dialog on a `gs://` logdir sends `gs://…/plugins/profile`: the
/// server refuses it by name rather than write a local directory `gs:`.
#[test]
fn an_object_storage_repository_root_is_refused_by_name() {
    let _s = serial();
    let (_server, addr) = serve();
    let rt = runtime();
    for (root, code, said) in [
        (
            "gs://b/logs/plugins/profile",
            Code::FailedPrecondition,
            "gs://b/logs/plugins/profile",
        ),
        (
            "s3://b/logs/plugins/profile",
            Code::FailedPrecondition,
            "capture-profile --logdir",
        ),
        (
            "az://c/logs/plugins/profile",
            Code::FailedPrecondition,
            "object-storage URL",
        ),
        (
            "gs:/b/logs/plugins/profile",
            Code::InvalidArgument,
            "one slash",
        ),
    ] {
        let status = rt
            .block_on(async {
                raw_client(&addr)
                    .await
                    .profile(xprof_like(root, "2026_01_02_03_04_05", "h", 50))
                    .await
            })
            .expect_err("refused");
        assert_eq!(status.code(), code, "{root}: {status:?}");
        assert!(
            status.message().contains(said),
            "{root}: {}",
            status.message()
        );
    }
    for made in ["gs:", "s3:", "az:"] {
        assert!(!std::path::Path::new(made).exists(), "{made} was created");
    }
}

#[test]
fn bad_options_are_invalid_arguments_naming_the_problem() {
    let _s = serial();
    let (_server, addr) = serve();
    let rt = runtime();
    let send = |request: proto::ProfileRequest| {
        rt.block_on(async { raw_client(&addr).await.profile(request).await })
            .expect_err("refused")
    };
    let mut request = xprof_like("r", "s", "h", 50);
    if let Some(o) = request.opts.as_mut() {
        o.host_tracer_level = 7;
    }
    let status = send(request);
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("host_tracer_level"),
        "{}",
        status.message()
    );

    let mut request = xprof_like("r", "s", "h", 50);
    if let Some(o) = request.opts.as_mut() {
        o.advanced_configuration.insert(
            "gpu_max_bogus".into(),
            proto::AdvancedConfigValue {
                value: Some(proto::advanced_config_value::Value::Int64Value(1)),
            },
        );
    }
    let status = send(request);
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("gpu_max_bogus"),
        "{}",
        status.message()
    );
    // The code is said by the status; the message does not say it again
    // ("ProfileRequest.opts: InvalidArgument: unknown ..." it was).
    assert!(
        status
            .message()
            .starts_with("ProfileRequest.opts: unknown advanced_configuration key"),
        "{}",
        status.message()
    );

    let mut request = xprof_like("r", "s", "h", 0);
    request.duration_ms = 0;
    assert!(send(request).message().contains("duration_ms"));
}

#[test]
fn a_client_that_hangs_up_mid_capture_does_not_wedge_the_server() {
    let _s = serial();
    let (_server, addr) = serve();
    let rt = runtime();
    rt.block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("uri")
            .timeout(Duration::from_millis(300))
            .connect()
            .await
            .expect("connect");
        let mut request = xprof_like("", "gone", "h", 20_000);
        request.emit_xspace = true;
        let status = ProfilerServiceClient::new(channel)
            .profile(request)
            .await
            .expect_err("the client gave up");
        assert!(
            matches!(status.code(), Code::Cancelled | Code::DeadlineExceeded),
            "{status:?}"
        );
        // The abandoned capture ends: its session stops (the runtime keeps running
        // here, so the client's stream reset reaches the server).
        wait_until(|| !session::is_running()).await;
    });
    assert!(
        !session::is_running(),
        "the abandoned capture stopped recording"
    );
    let again = rt.block_on(client::capture(&addr, &quick(100)));
    assert!(again.is_ok(), "{again:?}");
}

#[test]
fn an_unreachable_server_and_a_bad_address_say_so() {
    let _s = serial();
    let (server, addr) = serve();
    server.stop();
    let rt = runtime();
    match rt.block_on(client::capture_with_retries(&addr, &quick(100), 2)) {
        Err(e @ CaptureError::Unreachable(_)) => {
            assert!(e.to_string().contains(&addr), "{e}");
            assert_eq!(e.kind(), profiler_core::ErrorKind::Unavailable);
            // The transport's reason is the cause, kept, and said once by a report.
            let said = profiler_core::error::report(&e).to_string();
            assert!(said.contains("refused"), "{said}");
            assert_eq!(said.matches("refused").count(), 1, "{said}");
        }
        other => panic!("expected unreachable, got {other:?}"),
    }
    assert!(matches!(
        rt.block_on(client::capture("nohost", &quick(100))),
        Err(CaptureError::BadAddress(_))
    ));
}

#[test]
fn a_busy_port_is_an_error_that_reads_as_a_sentence() {
    let (_server, addr) = serve();
    let taken: std::net::SocketAddr = addr.parse().expect("an address");
    let e = server::ServerBuilder::new(taken.port())
        .start()
        .expect_err("the port is taken");
    assert_eq!(e.kind(), profiler_core::ErrorKind::Io);
    // What `fn main() -> Result<(), prof::Error>` prints after "Error: ": the message
    // and the OS's reason, once each (it was `Error { kind: Io, message: ... }`).
    let printed = format!("{e:?}");
    assert!(
        printed.starts_with(&format!("profiler server cannot listen on {addr}: ")),
        "{printed}"
    );
    let reason = std::error::Error::source(&e)
        .expect("the OS's reason")
        .to_string();
    assert!(printed.ends_with(&reason), "{printed}");
    assert!(
        !e.to_string().contains(&reason),
        "Display leaves the cause to source()"
    );
}

#[test]
fn monitor_refuses_a_duration_over_the_limit() {
    let _s = serial();
    let (_server, addr) = serve();
    let rt = runtime();
    rt.block_on(async {
        let mut c = raw_client(&addr).await;
        let monitor = c
            .monitor(proto::MonitorRequest {
                duration_ms: 3_600_000,
                monitoring_level: 2,
                timestamp: true,
            })
            .await
            .expect_err("an hour");
        assert_eq!(monitor.code(), Code::InvalidArgument);
        assert!(monitor.message().contains("max_duration"), "{monitor:?}");
    });
}

#[test]
fn the_delay_is_honoured_through_start_timestamp_ns() {
    let _s = serial();
    let (_server, addr) = serve();
    let asked = std::time::SystemTime::now();
    let request = CaptureRequest {
        delay_ms: 600,
        ..quick(100)
    };
    let Ok(Captured::Space(space)) = runtime().block_on(client::capture(&addr, &request)) else {
        panic!("capture failed")
    };
    let env = space
        .plane(schema::TASK_ENV_PLANE)
        .expect("task environment");
    let start_ns = env
        .stats
        .iter()
        .find(|s| {
            env.stat_metadata
                .get(&s.metadata_id)
                .map(|m| m.name.as_str())
                == Some(schema::PROFILE_START_TIME)
        })
        .and_then(|s| match s.value {
            Some(profiler_core::xspace::XStatValue::Uint64(v)) => Some(v),
            _ => None,
        })
        .expect("profile_start_time");
    let asked_ns = asked
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as u64;
    assert!(
        start_ns >= asked_ns + 550_000_000,
        "recording began {} ms after the request",
        (start_ns.saturating_sub(asked_ns)) / 1_000_000
    );
}

#[test]
fn unknown_fields_from_newer_clients_are_ignored() {
    use prost::Message as _;
    let mut bytes = xprof_like("r", "s", "h", 100).encode_to_vec();
    // Field 99 (varint 1), as a newer client might send.
    bytes.extend_from_slice(&[0x98, 0x06, 0x01]);
    let decoded = proto::ProfileRequest::decode(bytes.as_slice()).expect("decodes");
    assert_eq!(decoded, xprof_like("r", "s", "h", 100));
}

#[test]
fn continuous_profiling_keeps_the_latest_records_and_snapshots_without_stopping() {
    let _s = serial();
    let (_server, addr) = serve();
    let rt = runtime();
    rt.block_on(async {
        let mut c = raw_client(&addr).await;
        let start = proto::ProfileRequest {
            max_events: 2048,
            opts: Some(proto::ProfileOptions {
                version: 1,
                host_tracer_level: 2,
                ..proto::ProfileOptions::default()
            }),
            ..proto::ProfileRequest::default()
        };
        c.start_continuous_profiling(start.clone())
            .await
            .expect("start continuous");
        let again = c
            .start_continuous_profiling(start)
            .await
            .expect_err("one at a time");
        assert_eq!(again.code(), Code::AlreadyExists);
        std::thread::spawn(|| {
            for step in 0..10_000i64 {
                let _t = trace!("Train", step_num = step);
            }
        })
        .join()
        .expect("worker");
        let snapshot = c
            .get_snapshot(proto::GetSnapshotRequest::default())
            .await
            .expect("snapshot")
            .into_inner();
        assert!(!snapshot.empty_trace);
        let profile = Profile::new(snapshot.xspace.expect("xspace"));
        let steps = profile.steps();
        assert!(steps.len() <= 2048, "bounded: {}", steps.len());
        assert_eq!(steps.last(), Some(&9_999), "the most recent steps");
        // Still recording after the snapshot.
        assert!(profiler_core::flight_recorder::is_running());
        // A one-off capture cannot run beside it (a valid request, refused as busy).
        let mut beside = xprof_like("", "s", "h", 50);
        beside.emit_xspace = true;
        let busy = c.profile(beside).await.expect_err("busy");
        assert_eq!(busy.code(), Code::Aborted, "{busy:?}");
        assert!(
            busy.message().contains("already runs a session"),
            "{busy:?}"
        );
        c.stop_continuous_profiling(proto::StopContinuousProfilingRequest::default())
            .await
            .expect("stop");
        let stopped = c
            .stop_continuous_profiling(proto::StopContinuousProfilingRequest::default())
            .await
            .expect_err("nothing to stop");
        assert_eq!(stopped.code(), Code::FailedPrecondition);
        let gone = c
            .get_snapshot(proto::GetSnapshotRequest::default())
            .await
            .expect_err("nothing to snapshot");
        assert_eq!(gone.code(), Code::NotFound);
    });
}

/// `write_on_signals` as a key, as a remote client can only ask for it: where the
/// server writes the capture itself, the session writes it (at stop, or at the
/// process's end); where the profile would go back to the client, or nowhere is
/// named, the request is refused before anything records.
#[test]
fn write_on_signals_asks_the_server_for_a_file_it_writes() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("plugins/profile");
    let (_server, addr) = serve();
    let _work = Workload::start();
    let with_key = |mut request: proto::ProfileRequest| {
        let opts = request.opts.get_or_insert_with(Default::default);
        opts.version = 1;
        opts.advanced_configuration.insert(
            "write_on_signals".into(),
            proto::AdvancedConfigValue {
                value: Some(proto::advanced_config_value::Value::BoolValue(true)),
            },
        );
        request
    };
    runtime().block_on(async {
        let mut c = raw_client(&addr).await;
        let refused = c
            .profile(with_key(support::emitting("s", 100)))
            .await
            .expect_err("nowhere to write on a signal");
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
        assert!(
            refused.message().contains("write_on_signals"),
            "{refused:?}"
        );
        assert!(!session::is_running());

        let request = xprof_like(&root.to_string_lossy(), "captured", "h", 200);
        let response = c
            .profile(with_key(request))
            .await
            .expect("a capture the server writes")
            .into_inner();
        assert!(response.xspace.is_none());
        let space = profiler_export::xplane::read(&root.join("captured/h.xplane.pb"))
            .expect("the file the session wrote");
        assert!(!Profile::new(space).steps().is_empty());

        let continuous = |root: &str| proto::ProfileRequest {
            max_events: 2048,
            repository_root: root.into(),
            session_id: "recorder".into(),
            host_name: "h".into(),
            opts: Some(proto::ProfileOptions {
                version: 1,
                host_tracer_level: 2,
                ..proto::ProfileOptions::default()
            }),
            ..proto::ProfileRequest::default()
        };
        let refused = c
            .start_continuous_profiling(with_key(continuous("")))
            .await
            .expect_err("no repository_root");
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
        assert!(refused.message().contains("repository_root"), "{refused:?}");
        c.start_continuous_profiling(with_key(continuous(&root.to_string_lossy())))
            .await
            .expect("a flight recorder with somewhere to write");
        tokio::time::sleep(Duration::from_millis(50)).await;
        c.stop_continuous_profiling(proto::StopContinuousProfilingRequest::default())
            .await
            .expect("stop");
    });
    let space = profiler_export::xplane::read(&root.join("recorder/h.xplane.pb"))
        .expect("the recorder's last snapshot, written as it stopped");
    assert!(!Profile::new(space).steps().is_empty());
}
