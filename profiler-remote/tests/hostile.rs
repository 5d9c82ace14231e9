//! Hostile requests against the server, which runs inside the training process: what
//! a client sends is bounded, checked before anything is recorded, quoted briefly in
//! errors, and written only where the server allows.
//!
//! Sessions are process-wide, so every test holds `serial()`.

mod support;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prof_test_support::serial;
use profiler_remote::proto;
use profiler_remote::server::{Limits, ServerBuilder, Writes};
use support::{
    emitting, raw_client, raw_client_timeout, rss_kib, runtime, serve, serve_with, xprof_like,
};
use tonic::Code;

fn terminate(id: String) -> proto::TerminateRequest {
    proto::TerminateRequest { session_id: id }
}

/// Issue 1: eight 60 MiB `Terminate` ids added ~480 MiB, held for good.
#[test]
fn huge_terminate_ids_are_refused_and_not_kept() {
    let _s = serial();
    let (_server, addr) = serve();
    let before = rss_kib();
    runtime().block_on(async {
        let mut c = raw_client(&addr).await;
        for i in 0..4 {
            let id = format!("{i}{}", "x".repeat(60 << 20));
            let status = c.terminate(terminate(id)).await.expect_err("refused");
            assert_ne!(status.code(), Code::Ok);
        }
    });
    let grown_mib = rss_kib().saturating_sub(before) / 1024;
    assert!(grown_mib < 64, "the process grew by {grown_mib} MiB");
}

#[test]
fn a_terminate_id_over_the_name_limit_is_refused() {
    let _s = serial();
    let (_server, addr) = serve();
    let status = runtime()
        .block_on(async {
            raw_client(&addr)
                .await
                .terminate(terminate("t".repeat(256)))
                .await
        })
        .expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(status.message().contains("255"), "{}", status.message());
}

/// How long a 400 ms capture of `session_id` took: short when an early `Terminate`
/// ended it at once.
fn capture_time(addr: &str, session_id: &str) -> Duration {
    let started = Instant::now();
    runtime()
        .block_on(async {
            raw_client(addr)
                .await
                .profile(emitting(session_id, 400))
                .await
        })
        .expect("profile");
    started.elapsed()
}

/// Issue 1: early `Terminate`s were kept forever, with no cap.
#[test]
fn early_terminations_are_capped() {
    let _s = serial();
    let (_server, addr) = serve();
    runtime().block_on(async {
        let mut c = raw_client(&addr).await;
        c.terminate(terminate("victim".into()))
            .await
            .expect("terminate");
        for i in 0..200 {
            c.terminate(terminate(format!("other-{i}")))
                .await
                .expect("terminate");
        }
    });
    let took = capture_time(&addr, "victim");
    assert!(
        took >= Duration::from_millis(350),
        "the early Terminate was still remembered after 200 others ({took:?})"
    );
}

#[test]
fn early_terminations_expire_but_work_meanwhile() {
    let _s = serial();
    let limits = Limits {
        early_termination_ttl: Duration::from_millis(300),
        ..Limits::default()
    };
    let (_server, addr) = serve_with(ServerBuilder::new(0).limits(limits));
    let send = |id: &str| {
        runtime()
            .block_on(async {
                raw_client(&addr)
                    .await
                    .terminate(terminate(id.into()))
                    .await
            })
            .expect("terminate");
    };
    send("soon");
    assert!(
        capture_time(&addr, "soon") < Duration::from_millis(300),
        "a Terminate just before its Profile ends it at once, as in TSL"
    );
    send("late");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        capture_time(&addr, "late") >= Duration::from_millis(350),
        "an expired Terminate no longer ends a capture"
    );
}

/// Issue 3: names over 255 bytes were refused only after the capture ran.
#[test]
fn long_names_are_refused_before_recording() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let root = dir.path().join("root");
    let (_server, addr) = serve();
    let rt = runtime();
    for (session_id, host) in [
        ("s".repeat(300), "h".to_owned()),
        ("s".into(), "h".repeat(250)),
    ] {
        let started = Instant::now();
        let status = rt
            .block_on(async {
                raw_client(&addr)
                    .await
                    .profile(xprof_like(
                        &root.to_string_lossy(),
                        &session_id,
                        &host,
                        3000,
                    ))
                    .await
            })
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "refused only after {:?}",
            started.elapsed()
        );
    }
    assert!(!root.exists(), "nothing was created");
}

/// Issue 3: errors echoed whole client strings, so a long one turned the real error
/// into RESOURCE_EXHAUSTED.
#[test]
fn errors_quote_only_a_prefix_of_what_was_sent() {
    let _s = serial();
    let (_server, addr) = serve();
    let rt = runtime();
    let long = "a".repeat(30_000);
    let mut bad_key = xprof_like("r", "s", "h", 50);
    if let Some(o) = bad_key.opts.as_mut() {
        o.advanced_configuration.insert(
            format!("unknown_{long}"),
            proto::AdvancedConfigValue {
                value: Some(proto::advanced_config_value::Value::Int64Value(1)),
            },
        );
    }
    let requests = [
        xprof_like("r", &format!("../{long}"), "h", 50),
        xprof_like("r", "s", &format!("a/{long}"), 50),
        bad_key,
    ];
    for request in requests {
        let status = rt
            .block_on(async { raw_client(&addr).await.profile(request).await })
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{:?}", status.code());
        assert!(
            status.message().len() < 400,
            "{} bytes: {}",
            status.message().len(),
            &status.message()[..200.min(status.message().len())]
        );
        assert!(status.message().contains("bytes)"), "{}", status.message());
    }
}

/// Issue 3: a remote flight recorder accepted 2^32 records per thread (128 GiB each).
#[test]
fn flight_recorder_rings_are_capped() {
    let _s = serial();
    let (_server, addr) = serve();
    let status = runtime()
        .block_on(async {
            raw_client(&addr)
                .await
                .start_continuous_profiling(proto::ProfileRequest {
                    max_events: 1 << 32,
                    opts: Some(proto::ProfileOptions {
                        version: 1,
                        ..proto::ProfileOptions::default()
                    }),
                    ..proto::ProfileRequest::default()
                })
                .await
        })
        .expect_err("refused");
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains("max_ring_events"),
        "{}",
        status.message()
    );
    assert!(!profiler_core::flight_recorder::is_running());
}

fn starting_in(request: &mut proto::ProfileRequest, delay: Duration) {
    let at = SystemTime::now() + delay;
    let ns = at.duration_since(UNIX_EPOCH).expect("clock").as_nanos();
    if let Some(o) = request.opts.as_mut() {
        o.start_timestamp_ns = u64::try_from(ns).expect("ns");
    }
}

/// Issue 3: a capture delayed by an hour held the only slot all that time.
#[test]
fn delays_and_durations_that_would_starve_other_captures_are_refused() {
    let _s = serial();
    let (_server, addr) = serve();
    let rt = runtime();
    let mut delayed = emitting("later", 100);
    starting_in(&mut delayed, Duration::from_secs(3600));
    let long = emitting("long", 11 * 60 * 1000);
    let mut greedy = emitting("greedy", 100);
    greedy.max_events = 1 << 40;
    for (request, limit) in [
        (delayed, "max_delay"),
        (long, "max_duration"),
        (greedy, "max_events"),
    ] {
        let status = rt
            .block_on(async {
                raw_client_timeout(&addr, Duration::from_secs(3))
                    .await
                    .profile(request)
                    .await
            })
            .expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(limit), "{}", status.message());
    }
    let next = rt.block_on(async { raw_client(&addr).await.profile(emitting("next", 50)).await });
    assert!(next.is_ok(), "the slot is free: {next:?}");
}

/// Issue 3: an unwritable target failed only after the capture ran.
#[test]
fn an_unwritable_target_fails_before_recording() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let not_a_dir = dir.path().join("file");
    std::fs::write(&not_a_dir, b"x").expect("file");
    let (_server, addr) = serve();
    let started = Instant::now();
    let status = runtime()
        .block_on(async {
            raw_client(&addr)
                .await
                .profile(xprof_like(&not_a_dir.to_string_lossy(), "s", "h", 3000))
                .await
        })
        .expect_err("refused");
    assert_eq!(status.code(), Code::Internal, "{status:?}");
    assert!(
        status.message().contains("cannot write"),
        "{}",
        status.message()
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "failed only after {:?}",
        started.elapsed()
    );
}

#[test]
fn a_capture_that_ends_without_a_profile_leaves_no_file_behind() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let (_server, addr) = serve();
    let mut request = xprof_like(&dir.path().to_string_lossy(), "gone", "h", 100);
    starting_in(&mut request, Duration::from_secs(2));
    let status = runtime()
        .block_on(async {
            let capture = tokio::spawn({
                let addr = addr.clone();
                async move { raw_client(&addr).await.profile(request).await }
            });
            tokio::time::sleep(Duration::from_millis(300)).await;
            raw_client(&addr)
                .await
                .terminate(terminate("gone".into()))
                .await
                .expect("terminate");
            capture.await.expect("join")
        })
        .expect_err("cancelled before it started");
    assert_eq!(status.code(), Code::Cancelled, "{status:?}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).expect("dir").collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Issue 4: `repository_root` was written wherever the client said.
#[test]
fn confined_writes_stay_inside_their_directory() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let base = dir.path().join("profiles");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&base).expect("base");
    std::fs::create_dir_all(&elsewhere).expect("elsewhere");
    std::os::unix::fs::symlink(&elsewhere, base.join("link")).expect("symlink");
    let (_server, addr) = serve_with(ServerBuilder::new(0).confine_writes_to(&base));
    let rt = runtime();
    let send = |root: &str, session_id: &str| {
        rt.block_on(async {
            raw_client(&addr)
                .await
                .profile(xprof_like(root, session_id, "h:1", 50))
                .await
        })
    };
    let outside = elsewhere.to_string_lossy().into_owned();
    for root in [
        outside.as_str(),
        "../elsewhere",
        "link",
        "link/deeper",
        "/tmp",
    ] {
        let status = send(root, "s").expect_err(root);
        assert_eq!(status.code(), Code::PermissionDenied, "{root}: {status:?}");
    }
    assert_eq!(
        std::fs::read_dir(&elsewhere).expect("dir").count(),
        0,
        "nothing written outside"
    );
    send("logs/plugins/profile", "rel").expect("a relative root is taken from the directory");
    assert!(base
        .join("logs/plugins/profile/rel/h_1.xplane.pb")
        .is_file());
    let inside = base.join("abs").to_string_lossy().into_owned();
    send(&inside, "a").expect("an absolute root inside");
    assert!(base.join("abs/a/h_1.xplane.pb").is_file());
}

#[test]
fn a_server_that_writes_nowhere_still_returns_profiles() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let (_server, addr) = serve_with(ServerBuilder::new(0).writes(Writes::Nowhere));
    let rt = runtime();
    let status = rt
        .block_on(async {
            raw_client(&addr)
                .await
                .profile(xprof_like(&dir.path().to_string_lossy(), "s", "h", 50))
                .await
        })
        .expect_err("refused");
    assert_eq!(status.code(), Code::PermissionDenied, "{status:?}");
    assert!(
        status.message().contains("emit_xspace"),
        "{}",
        status.message()
    );
    let response = rt
        .block_on(async { raw_client(&addr).await.profile(emitting("s", 50)).await })
        .expect("emit_xspace works")
        .into_inner();
    assert!(response.xspace.is_some());
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
}

/// Not a `ProfileRequest`: its field 1 (`duration_ms`, a varint there) is bytes.
#[derive(Clone, PartialEq, prost::Message)]
struct NotARequest {
    #[prost(bytes = "vec", tag = "1")]
    duration_ms: Vec<u8>,
}

/// Issue 30: a body that does not decode got INTERNAL, as if the server had failed.
#[test]
fn an_undecodable_request_is_an_invalid_argument() {
    let _s = serial();
    let (_server, addr) = serve();
    let status = runtime().block_on(async {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("uri")
            .timeout(Duration::from_secs(30))
            .connect()
            .await
            .expect("connect");
        let mut grpc = tonic::client::Grpc::new(channel);
        grpc.ready().await.expect("ready");
        let body = NotARequest {
            duration_ms: b"soon".to_vec(),
        };
        grpc.unary(
            tonic::Request::new(body),
            tonic::codegen::http::uri::PathAndQuery::from_static(
                "/tensorflow.ProfilerService/Profile",
            ),
            tonic_prost::ProstCodec::<NotARequest, proto::ProfileResponse>::default(),
        )
        .await
        .expect_err("refused")
    });
    assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
    assert!(
        status.message().contains("ProfileRequest"),
        "{}",
        status.message()
    );
}
