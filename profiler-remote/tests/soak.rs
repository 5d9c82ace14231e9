//! Soak: 1000 short captures in a row while hostile clients work beside them (idle
//! connections beyond the limit, garbage bytes, oversized `Terminate` ids, long
//! names), after which the process's memory and descriptors are back where they
//! started. The server runs in this process, so /proc/self is the server's.
//!
//! One test in its own binary: nothing else may allocate or open files meanwhile.

mod support;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use profiler_core::trace;
use profiler_remote::client::{self, CaptureRequest, Captured};
use profiler_remote::proto;
use profiler_remote::rpc::profiler_service_client::ProfilerServiceClient;
use profiler_remote::server::{Limits, ServerBuilder};
use support::{eventually, open_fds, raw_client_timeout, rss_kib, runtime, serve_with, xprof_like};
use tonic::Code;

const CAPTURES: usize = 1000;
/// Growth allowed after the run: allocator slack, not a leak. The hardened server
/// grows by about 3 MiB here; the unhardened one (early Terminates kept whole and
/// forever) grew by 360 MiB.
const RSS_SLACK_KIB: u64 = 16 << 10;
/// Whole run, hostile clients included.
const TIME_LIMIT: Duration = Duration::from_secs(90);
const MAX_CONNECTIONS: usize = 16;

/// A thread recording small steps until told to stop (at most `TIME_LIMIT`).
fn workload(stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let until = Instant::now() + TIME_LIMIT;
        let mut step = 0i64;
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            let _t = trace!("Train", step_num = step);
            std::thread::sleep(Duration::from_millis(1));
            step += 1;
        }
    })
}

/// One round of hostile traffic; the idle connections are returned to be held open.
async fn hostile_round(addr: &str, round: usize) -> Vec<TcpStream> {
    // Beyond the connection limit, sending nothing.
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS + 8)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    // Garbage where the HTTP/2 preface should be.
    if let Ok(mut garbage) = TcpStream::connect(addr) {
        let bytes: Vec<u8> = (0..2048u32)
            .map(|i| (i * 31 + round as u32) as u8)
            .collect();
        let _ = garbage.write_all(&bytes);
    }
    let mut c = raw_client_timeout(addr, Duration::from_secs(5)).await;
    // Over the message limit (the unbounded server kept each: 4 MiB a round), then
    // over the id limit: all refused.
    let huge = (0..4).map(|i| format!("{round}-{i}-{}", "x".repeat(1 << 20)));
    for id in huge.chain([format!("{round}{}", "y".repeat(1000))]) {
        let refused = c
            .terminate(proto::TerminateRequest { session_id: id })
            .await;
        assert!(refused.is_err(), "an oversized Terminate id was accepted");
    }
    let mut long_name = xprof_like("/tmp/never", &"n".repeat(1000), "h", 1);
    long_name.emit_xspace = false;
    assert!(
        c.profile(long_name).await.is_err(),
        "a long name was accepted"
    );
    idle
}

/// Hostile clients until `stop`; returns the rounds run and the last round's idle
/// connections, still open.
fn hostile(
    addr: String,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(usize, Vec<TcpStream>)> {
    std::thread::spawn(move || {
        let rt = runtime();
        let until = Instant::now() + TIME_LIMIT;
        let mut held = Vec::new();
        let mut rounds = 0;
        while !stop.load(Ordering::Relaxed) && Instant::now() < until {
            held = rt.block_on(hostile_round(&addr, rounds));
            rounds += 1;
            std::thread::sleep(Duration::from_millis(300));
        }
        (rounds, held)
    })
}

/// A capture, tried again (for at most 5 s) if its connection was refused: at the
/// connection limit with every place taken by a connection too fresh to close, a
/// newcomer waits 2 s at most, and the hostile bursts can keep the places fresh.
async fn capture(addr: &str, request: &CaptureRequest) -> Captured {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        match client::capture(addr, request).await {
            Ok(captured) => return captured,
            Err(e) if e.is_retryable() && Instant::now() < until => {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(e) => panic!("capture failed: {e}"),
        }
    }
}

/// A capture the server writes, as XProf's button asks; tried again as [`capture`].
async fn written_capture(addr: &str, root: &str, session_id: &str) {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("uri")
            .timeout(Duration::from_secs(10))
            .connect()
            .await;
        let written = match channel {
            Ok(channel) => ProfilerServiceClient::new(channel)
                .profile(xprof_like(root, session_id, "h", 1))
                .await
                .map(drop),
            Err(e) => Err(tonic::Status::unavailable(e.to_string())),
        };
        match written {
            Ok(()) => return,
            Err(s)
                if Instant::now() < until
                    && matches!(s.code(), Code::Unavailable | Code::Unknown) =>
            {
                tokio::time::sleep(Duration::from_millis(20)).await
            }
            Err(s) => panic!("written capture failed: {s:?}"),
        }
    }
}

#[test]
fn a_thousand_captures_beside_hostile_clients_leave_memory_and_descriptors_as_they_were() {
    let started = Instant::now();
    let dir = tempfile::tempdir().expect("tmp");
    let limits = Limits {
        max_connections: MAX_CONNECTIONS,
        idle_timeout: Duration::from_millis(500),
        ..Limits::default()
    };
    let (server, addr) = serve_with(ServerBuilder::new(0).limits(limits));
    let stop = Arc::new(AtomicBool::new(false));
    let trainer = workload(Arc::clone(&stop));
    let rt = runtime();
    let request = |i: usize| CaptureRequest {
        duration_ms: 1,
        session_id: format!("run{i}"),
        ..CaptureRequest::default()
    };
    // Warm up: the first captures allocate what every later one reuses.
    for i in 0..20 {
        rt.block_on(capture(&addr, &request(i)));
    }
    let (rss_before, fds_before) = (rss_kib(), open_fds());

    let attacker = hostile(addr.clone(), Arc::clone(&stop));
    let root = dir.path().to_string_lossy().into_owned();
    for i in 0..CAPTURES {
        assert!(
            started.elapsed() < TIME_LIMIT,
            "only {i} captures in {TIME_LIMIT:?}"
        );
        if i % 10 == 0 {
            // Now and then the server writes the file, as for XProf's button.
            rt.block_on(written_capture(&addr, &root, &format!("w{i}")));
        } else {
            rt.block_on(capture(&addr, &request(i)));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let (rounds, held) = attacker.join().expect("hostile clients");
    let _ = trainer.join();
    assert!(rounds > 0, "no hostile traffic ran");

    // The server closes its side of the idle connections the attacker still holds
    // open (which are this process's descriptors too) within the idle timeout.
    let held_open = held.len();
    let server_closed = eventually(Duration::from_secs(5), || {
        open_fds() <= fds_before + held_open
    });
    let fds_while_held = open_fds();
    drop(held);
    let fds_settled = eventually(Duration::from_secs(5), || open_fds() <= fds_before);
    let (rss_after, fds_after) = (rss_kib(), open_fds());
    eprintln!(
        "soak: {CAPTURES} captures, {rounds} hostile rounds in {:?}; RSS {rss_before} -> {rss_after} KiB; descriptors {fds_before} -> {fds_while_held} (with {held_open} idle ones the attacker holds) -> {fds_after}",
        started.elapsed()
    );
    assert!(
        server_closed,
        "{fds_while_held} descriptors open with {held_open} held by the client, {fds_before} before"
    );
    assert!(
        fds_settled,
        "{fds_after} descriptors open, {fds_before} before"
    );
    assert!(
        rss_after <= rss_before + RSS_SLACK_KIB,
        "RSS grew from {rss_before} to {rss_after} KiB"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).expect("dir").count(),
        CAPTURES / 10,
        "one run directory per written capture, no temporaries"
    );
    server.stop();
}
