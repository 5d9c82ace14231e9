//! The Perfetto link server: what ui.perfetto.dev's fetch needs, served once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use profiler_export::link::{serve_perfetto_link, LinkOptions, LinkOutcome};

fn request(addr: &str, text: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(text.as_bytes()).expect("send");
    let mut reply = Vec::new();
    // Non-final answers keep the connection open: read until the headers and body.
    let mut buf = [0; 4096];
    loop {
        let n = s.read(&mut buf).unwrap_or(0);
        reply.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&reply);
        let done = text.find("\r\n\r\n").is_some_and(|head| {
            let len = text
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: "))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            reply.len() >= head + 4 + len
        });
        if n == 0 || done {
            return String::from_utf8_lossy(&reply).into_owned();
        }
    }
}

#[test]
fn serves_the_trace_once_with_cors_for_the_perfetto_ui() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("worker:0.pftrace");
    std::fs::write(&path, b"\x0a\x02trace-bytes").expect("write");
    let (tx, rx) = mpsc::channel();
    let options = LinkOptions {
        port: 0,
        timeout: Duration::from_secs(30),
    };
    let server = std::thread::spawn(move || {
        serve_perfetto_link(&path, &options, |url| {
            tx.send(url.to_owned()).expect("send")
        })
    });
    let url = rx.recv_timeout(Duration::from_secs(10)).expect("announced");
    let trace_url = url
        .strip_prefix("https://ui.perfetto.dev/#!/?url=http://")
        .expect("a ui.perfetto.dev link");
    let (addr, route) = trace_url.split_once('/').expect("a path");
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    assert_eq!(route, "worker%3A0.pftrace");

    let preflight = request(
        addr,
        &format!(
            "OPTIONS /{route} HTTP/1.1\r\nOrigin: https://ui.perfetto.dev\r\n\
             Access-Control-Request-Private-Network: true\r\n\r\n"
        ),
    );
    assert!(preflight.starts_with("HTTP/1.1 204"), "{preflight}");
    assert!(preflight.contains("Access-Control-Allow-Private-Network: true"));
    let missing = request(addr, "GET /other HTTP/1.1\r\n\r\n");
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");

    let got = request(
        addr,
        &format!("GET /{route} HTTP/1.1\r\nOrigin: https://ui.perfetto.dev\r\n\r\n"),
    );
    assert!(got.starts_with("HTTP/1.1 200"), "{got}");
    assert!(got.contains("Access-Control-Allow-Origin: https://ui.perfetto.dev\r\n"));
    assert!(got.ends_with("\r\n\r\n\n\x02trace-bytes"), "{got:?}");
    let outcome = server.join().expect("server thread").expect("served");
    assert_eq!(outcome, LinkOutcome::Fetched);
}

#[test]
fn gives_up_after_the_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.pftrace");
    std::fs::write(&path, b"x").expect("write");
    let options = LinkOptions {
        port: 0,
        timeout: Duration::from_millis(200),
    };
    let outcome = serve_perfetto_link(&path, &options, |_| {}).expect("ran");
    assert_eq!(outcome, LinkOutcome::TimedOut);
}

#[test]
fn a_busy_port_and_a_missing_file_are_named() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("t.pftrace");
    std::fs::write(&path, b"x").expect("write");
    let options = LinkOptions {
        port,
        timeout: Duration::from_millis(100),
    };
    let err = serve_perfetto_link(&path, &options, |_| {}).expect_err("port taken");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
    let err = serve_perfetto_link(&dir.path().join("none"), &options, |_| {}).expect_err("no file");
    assert!(err.to_string().contains("none"), "{err}");
}
