//! Helpers the server's tests share: a server on loopback, raw clients and requests,
//! and the process's own resources. The serial lock (sessions are process-wide) is
//! prof-test-support's, which every crate's tests hold.
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, Instant};

use profiler_remote::proto;
use profiler_remote::rpc::profiler_service_client::ProfilerServiceClient;
use profiler_remote::server::{self, ServerBuilder, ServerHandle};

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A default server on 127.0.0.1 and its `HOST:PORT`.
pub fn serve() -> (ServerHandle, String) {
    started(server::start(0).expect("server"))
}

/// A server from `builder` (which binds 127.0.0.1 unless told otherwise).
pub fn serve_with(builder: ServerBuilder) -> (ServerHandle, String) {
    started(builder.start().expect("server"))
}

fn started(server: ServerHandle) -> (ServerHandle, String) {
    let addr = format!("127.0.0.1:{}", server.local_addr().port());
    (server, addr)
}

pub async fn raw_client(addr: &str) -> ProfilerServiceClient<tonic::transport::Channel> {
    raw_client_timeout(addr, Duration::from_secs(30)).await
}

/// A client whose calls give up after `timeout`, so a server that blocks fails the
/// test instead of hanging it.
pub async fn raw_client_timeout(
    addr: &str,
    timeout: Duration,
) -> ProfilerServiceClient<tonic::transport::Channel> {
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("uri")
        .timeout(timeout)
        .connect()
        .await
        .expect("connect");
    ProfilerServiceClient::new(channel).max_encoding_message_size(usize::MAX)
}

/// A request as xprof's capture sends it (no emit_xspace: the server writes).
pub fn xprof_like(
    root: &str,
    session_id: &str,
    host: &str,
    duration_ms: u64,
) -> proto::ProfileRequest {
    proto::ProfileRequest {
        duration_ms,
        max_events: 1_000_000,
        tools: vec!["trace_viewer".into(), "xplane.pb".into()],
        repository_root: root.into(),
        session_id: session_id.into(),
        host_name: host.into(),
        opts: Some(proto::ProfileOptions {
            version: 1,
            host_tracer_level: 2,
            device_tracer_level: 1,
            duration_ms,
            ..proto::ProfileOptions::default()
        }),
        ..proto::ProfileRequest::default()
    }
}

/// The same, asking for the XSpace back.
pub fn emitting(session_id: &str, duration_ms: u64) -> proto::ProfileRequest {
    proto::ProfileRequest {
        emit_xspace: true,
        ..xprof_like("", session_id, "h", duration_ms)
    }
}

/// This process's resident memory, from /proc/self/status.
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// This process's open file descriptors.
pub fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("/proc/self/fd")
        .count()
}

/// Polls `done` every 20 ms for at most `limit`; whether it came true.
pub fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
