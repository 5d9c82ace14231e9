//! What a store that refuses, is gone or is busy does to a capture, and a
//! configuration that cannot work: the URL named, the capture kept locally.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::azure::{Azurite, AZ_KEY};
use crate::s3::{S3, SECRET};
use crate::setup::{capture, child_server, host_file, kept_in, text, User, BUCKET};

/// A capture by `user`, of a server started for it, into `url`, which the store
/// refuses or cannot be reached at: it must exit 1 naming the URL, keep the capture
/// whole under the user's temporary directory, and leave no `s3:` or `az:` directory
/// behind. Returns what it said and how long it took.
fn refused_capture(user: &User, url: &str) -> (String, Duration) {
    let (mut child, host) = child_server();
    let started = Instant::now();
    let out = capture(user, std::slice::from_ref(&host), url);
    let took = started.elapsed();
    let _ = (child.kill(), child.wait());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains(url), "{stderr}");
    let kept = kept_in(&stderr);
    assert!(kept.starts_with(user.tmp.path()), "{stderr}");
    let file = kept.join(host_file(&host));
    assert!(
        profiler_export::xplane::read(&file).is_ok(),
        "{} holds the capture: {stderr}",
        file.display()
    );
    user.assert_no_scheme_directory();
    (stderr, took)
}

#[test]
fn a_wrong_secret_fails_naming_the_url_and_403_and_keeps_the_capture_locally() {
    let s3 = S3::start();
    let user = User::at(&s3.endpoint, "not-the-secret");
    let (stderr, _) = refused_capture(&user, &format!("s3://{BUCKET}/denied"));
    assert!(
        stderr.contains(&format!("s3://{BUCKET}/denied/plugins/profile/")),
        "{stderr}"
    );
    assert!(stderr.contains("403"), "{stderr}");
    assert!(s3.objects("denied").is_empty());
}

#[test]
fn a_dead_endpoint_fails_within_seconds_and_keeps_the_capture_locally() {
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let user = User::at(&endpoint, SECRET);
    let (stderr, took) = refused_capture(&user, &format!("s3://{BUCKET}/dead"));
    // The capture is 0.3 s; the retries are bounded at 30 s.
    assert!(took < Duration::from_secs(45), "{took:?}");
    assert!(stderr.contains("connection refused"), "{stderr}");
}

/// A loopback proxy to `upstream` that answers the first `refusals` requests with 503
/// itself; counts the requests it refused.
fn flaky_proxy(upstream: &str, refusals: usize) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = format!("http://{}", listener.local_addr().expect("addr"));
    let upstream = upstream.trim_start_matches("http://").to_owned();
    let refused = Arc::new(AtomicUsize::new(0));
    let count = refused.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming().take(64) {
            let Ok(mut conn) = conn else { continue };
            if count.load(Ordering::SeqCst) < refusals {
                // Read the whole request (head and body) before refusing it.
                if read_request(&mut conn).is_some() {
                    count.fetch_add(1, Ordering::SeqCst);
                    let _ = conn.write_all(
                        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                }
                continue;
            }
            let upstream = upstream.clone();
            std::thread::spawn(move || {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    return;
                };
                let (mut c2, mut s2) = (
                    conn.try_clone().expect("clone"),
                    server.try_clone().expect("clone"),
                );
                let mut server = server;
                let up = std::thread::spawn(move || std::io::copy(&mut c2, &mut server));
                let _ = std::io::copy(&mut s2, &mut conn);
                let _ = conn.shutdown(std::net::Shutdown::Both);
                let _ = up.join();
            });
        }
    });
    (addr, refused)
}

/// Reads one HTTP/1.1 request with a `Content-Length` body; `None` on a broken one.
fn read_request(conn: &mut TcpStream) -> Option<()> {
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut reader = BufReader::new(conn);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()
}

#[test]
fn a_store_answering_503_twice_still_gets_the_whole_upload() {
    let s3 = S3::start();
    let (proxy, refused) = flaky_proxy(&s3.endpoint, 2);
    let user = User::at(&proxy, SECRET);
    let (mut child, host) = child_server();
    let out = capture(
        &user,
        std::slice::from_ref(&host),
        &format!("s3://{BUCKET}/flaky"),
    );
    let _ = (child.kill(), child.wait());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(refused.load(Ordering::SeqCst), 2);
    let objects = s3.objects("flaky");
    assert_eq!(objects.len(), 1, "{objects:?}");
    assert!(profiler_export::xplane::read(&s3.object(&objects[0])).is_ok());
}

#[test]
fn az_a_wrong_key_fails_naming_the_url_and_403_and_keeps_the_capture_locally() {
    let Some(azurite) = Azurite::start() else {
        return;
    };
    // A well-formed key that is not the account's.
    let user = azurite.user("bm90LXRoZS1hY2NvdW50J3Mta2V5LW5vdC10aGUtYWNjb3VudCdzLWtleQ==");
    let (stderr, _) = refused_capture(&user, &format!("az://{BUCKET}/denied"));
    assert!(
        stderr.contains(&format!("az://{BUCKET}/denied/plugins/profile/")),
        "{stderr}"
    );
    assert!(stderr.contains("403"), "{stderr}");
}

#[test]
fn az_a_dead_endpoint_fails_within_seconds_and_keeps_the_capture_locally() {
    let Some(azurite) = Azurite::start() else {
        return;
    };
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut user = azurite.user(AZ_KEY);
    user.env[1].1 = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let (_, took) = refused_capture(&user, &format!("az://{BUCKET}/dead"));
    assert!(took < Duration::from_secs(45), "{took:?}");
}

// gs:// goes through the same code with object_store's GCS client; no GCS emulator
// speaking its XML API installs here, so gs:// is tested as far as URL handling and
// configuration go.

#[test]
fn gs_a_bad_configuration_is_refused_before_capturing_and_no_gs_directory_appears() {
    let user = User::with(vec![(
        "GOOGLE_SERVICE_ACCOUNT",
        "/nonexistent/prof-key.json".to_owned(),
    )]);
    // Nothing listens there: the capture must not even be tried.
    let out = capture(&user, &["127.0.0.1:9".to_owned()], "gs://prof/cap");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("gs://prof/cap"), "{stderr}");
    assert!(stderr.contains("/nonexistent/prof-key.json"), "{stderr}");
    assert!(stderr.contains("nothing was captured"), "{stderr}");
    // A URL a path join folded is refused, never taken as a directory `gs:`.
    let out = capture(&user, &["127.0.0.1:9".to_owned()], "gs:/prof/cap");
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stderr).contains("one slash"), "{out:?}");
    let out = user.run(
        env!("CARGO_BIN_EXE_prof-diff"),
        &["gs:/prof/a", "gs:/prof/b"],
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(text(&out.stderr).contains("one slash"), "{out:?}");
    user.assert_no_scheme_directory();
}
