//! Connections against the server (issue 2): idle ones are closed, at most
//! `max_connections` stay open, calls in flight keep theirs, accepting backs off
//! instead of spinning when the process is out of file descriptors, and idle
//! connections make room when descriptors run out before places do (issue 36).
//!
//! Sessions are process-wide, so every test holds `serial()`.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use prof_test_support::serial;
use profiler_remote::client::{self, CaptureRequest};
use profiler_remote::server::{Limits, ServerBuilder};
use support::{eventually, open_fds, raw_client_timeout, runtime, serve, serve_with, xprof_like};

fn limited(max_connections: usize, idle_timeout: Duration) -> ServerBuilder {
    ServerBuilder::new(0).limits(Limits {
        max_connections,
        idle_timeout,
        ..Limits::default()
    })
}

fn quick(duration_ms: u64) -> CaptureRequest {
    CaptureRequest {
        duration_ms,
        ..CaptureRequest::default()
    }
}

/// Whether the server closed its end: a read sees end of file or a reset rather than
/// waiting.
fn closed_by_server(stream: &TcpStream) -> bool {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(20)));
    let mut reader = stream;
    let mut byte = [0u8; 64];
    loop {
        match reader.read(&mut byte) {
            Ok(0) => return true,
            // The server's HTTP/2 settings frame, sent before it closes.
            Ok(_) => continue,
            Err(e) => {
                return !matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                )
            }
        }
    }
}

fn idle_connections(addr: &str, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| TcpStream::connect(addr).expect("connect"))
        .collect()
}

/// 3000 idle connections held 3000 descriptors, and 50 were still open after two
/// minutes.
#[test]
fn idle_connections_are_closed_and_their_descriptors_freed() {
    let _s = serial();
    let (_server, addr) = serve_with(limited(8, Duration::from_millis(500)));
    let before = open_fds();
    let idle = idle_connections(&addr, 20);
    let all_closed = eventually(Duration::from_secs(5), || idle.iter().all(closed_by_server));
    assert!(all_closed, "idle connections stay open");
    drop(idle);
    assert!(
        eventually(Duration::from_secs(2), || open_fds() <= before),
        "{} descriptors open, {before} before",
        open_fds()
    );
}

#[test]
fn at_most_max_connections_stay_open() {
    let _s = serial();
    let (_server, addr) = serve_with(limited(8, Duration::from_secs(60)));
    let idle = idle_connections(&addr, 24);
    let count_open = || idle.iter().filter(|s| !closed_by_server(s)).count();
    assert!(
        eventually(Duration::from_secs(5), || count_open() <= 8),
        "{} of 24 open, limit 8",
        count_open()
    );
    // Idle connections make room: a capture still gets in.
    let captured = runtime().block_on(client::capture(&addr, &quick(50)));
    assert!(captured.is_ok(), "{captured:?}");
}

#[test]
fn a_capture_longer_than_the_idle_timeout_keeps_its_connection() {
    let _s = serial();
    let (_server, addr) = serve_with(limited(2, Duration::from_millis(300)));
    let rt = runtime();
    let captured = rt.block_on(async {
        let capture = tokio::spawn({
            let addr = addr.clone();
            async move { client::capture(&addr, &quick(1500)).await }
        });
        tokio::time::sleep(Duration::from_millis(200)).await;
        // Newcomers at the limit close idle connections, never this busy one.
        let _idle = idle_connections(&addr, 6);
        capture.await.expect("join")
    });
    assert!(captured.is_ok(), "{captured:?}");
}

#[test]
fn garbage_closes_the_connection() {
    let _s = serial();
    let (_server, addr) = serve();
    let mut stream = TcpStream::connect(&addr).expect("connect");
    stream.write_all(&[0x17; 4096]).expect("write garbage");
    assert!(eventually(Duration::from_secs(5), || closed_by_server(
        &stream
    )));
}

/// CPU time this process has used (user + system), from /proc/self/stat, opened
/// beforehand: once descriptors run out, nothing more can be opened.
fn cpu_time(stat: &std::fs::File) -> Duration {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 1024];
    let n = stat.read_at(&mut buf, 0).expect("read stat");
    let stat = String::from_utf8_lossy(&buf[..n]);
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).expect("stat fields");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    // The kernel's USER_HZ is 100 on every Linux this runs on.
    Duration::from_millis(ticks * 10)
}

const CHILD: &str = "PROF_FD_EXHAUSTION_CHILD";

/// At descriptor exhaustion the accept loop spun at 99% CPU. The scenario runs in a
/// child process with a small descriptor limit (`ulimit -n`), so exhausting them
/// disturbs no other test.
#[test]
fn accepting_backs_off_when_out_of_descriptors() {
    let exe = std::env::current_exe().expect("test binary");
    let child = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 128 && exec \"$0\" \"$@\"")
        .arg(exe)
        .args([
            "--exact",
            "out_of_descriptors_child",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .expect("run the child");
    assert!(
        child.status.success(),
        "the child failed ({}):\n{}\n{}",
        child.status,
        String::from_utf8_lossy(&child.stdout),
        String::from_utf8_lossy(&child.stderr)
    );

    // Issue 36: a server with 24 descriptors, 40 idle connections held open against it
    // (from this process), and a capture failed for about a minute: idle connections
    // made room for newcomers only once 32 were open, never when descriptors ran out.
    // The oldest idle connection now makes room at once, and the capture takes its
    // normal time (a 50 ms capture: about 0.1 s here; it timed out after 5 s before).
    let mut server = std::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 24 && exec \"$0\" \"$@\"")
        .arg(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "idle_connections_child",
            "--ignored",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run the server child");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
        server.stdout.take().expect("its output"),
    ));
    let addr = lines
        .by_ref()
        .take(20)
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("listening on ").map(str::to_owned))
        .expect("the child's address");
    let idle = idle_connections(&addr, 40);
    // Long enough for the server to accept what it can and run out of descriptors.
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let captured = runtime().block_on(async {
        tokio::time::timeout(Duration::from_secs(20), client::capture(&addr, &quick(50))).await
    });
    let took = started.elapsed();
    // Once the idle ones are past the grace a caller gets, the server keeps a few
    // descriptors spare, however many more arrive: a capture as XProf's button asks
    // for it, which the server writes to a file, gets one for its file too.
    std::thread::sleep(Duration::from_secs(1));
    let more_idle = idle_connections(&addr, 20);
    std::thread::sleep(Duration::from_millis(300));
    let root = tempfile::tempdir().expect("tempdir");
    let written = runtime().block_on(async {
        raw_client_timeout(&addr, Duration::from_secs(20))
            .await
            .profile(xprof_like(&root.path().to_string_lossy(), "s", "h", 50))
            .await
    });
    let still_open = idle
        .iter()
        .chain(&more_idle)
        .filter(|s| !closed_by_server(s))
        .count();
    drop(server.stdin.take());
    let status = server.wait().expect("the child ends");
    let mut stderr = String::new();
    let _ = server
        .stderr
        .take()
        .map(|mut e| e.read_to_string(&mut stderr));
    assert!(
        status.success(),
        "the server child failed ({status}):\n{stderr}"
    );
    assert!(
        matches!(captured, Ok(Ok(_))),
        "a capture beside 40 idle connections at 24 descriptors: {captured:?} after {took:?}"
    );
    assert!(
        took < Duration::from_secs(5),
        "the capture took {took:?}: it waited for idle connections to time out"
    );
    assert!(written.is_ok(), "a capture written to a file: {written:?}");
    let file = root.path().join("s").join("h.xplane.pb");
    assert!(file.is_file(), "{} was not written", file.display());
    // Only what had to make room was closed: the server holds as many as it can.
    assert!(still_open > 0, "every idle connection was closed");
    drop((idle, more_idle));
}

#[test]
#[ignore = "a child process of accepting_backs_off_when_out_of_descriptors, run by it under a small ulimit"]
fn idle_connections_child() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "not a test: accepting_backs_off_when_out_of_descriptors runs it as its child \
         process, under a small ulimit, with {CHILD} set"
    );
    let (_server, addr) = serve();
    // Files the program opens after the server started (a data loader's), which the
    // server's estimate of its room did not count: it learns of them when `accept`
    // fails for want of a descriptor.
    let files: Vec<std::fs::File> = (0..6)
        .map(|_| std::fs::File::open("/dev/null").expect("a descriptor"))
        .collect();
    // The parent reads the address from this child's output.
    #[allow(clippy::print_stdout)]
    {
        println!("listening on {addr}");
    }
    std::io::stdout().flush().expect("flush");
    // Serves until the parent closes its input.
    let mut rest = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut rest);
    drop(files);
}

/// Not a test of its own, so ignored: the child process of
/// [`accepting_backs_off_when_out_of_descriptors`].
#[test]
#[ignore = "a child process of accepting_backs_off_when_out_of_descriptors, run by it under a small ulimit"]
fn out_of_descriptors_child() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "not a test: accepting_backs_off_when_out_of_descriptors runs it as its child \
         process, under a small ulimit, with {CHILD} set"
    );
    let (_server, addr) = serve();
    let stat = std::fs::File::open("/proc/self/stat").expect("stat");
    let mut filler = Vec::new();
    for _ in 0..1000 {
        match std::fs::File::open("/dev/null") {
            Ok(f) => filler.push(f),
            Err(_) => break,
        }
    }
    assert!(filler.len() < 1000, "the limit was not reached");
    // One descriptor for this connection, none left for the server to accept it.
    drop(filler.pop());
    let waiting = TcpStream::connect(&addr).expect("connect");
    std::thread::sleep(Duration::from_millis(200));
    let (cpu, wall) = (cpu_time(&stat), Instant::now());
    std::thread::sleep(Duration::from_secs(1));
    let used = cpu_time(&stat).saturating_sub(cpu);
    assert!(
        used < Duration::from_millis(300),
        "{used:?} of CPU in {:?} while out of descriptors",
        wall.elapsed()
    );
    drop(filler);
    drop(waiting);
    let captured = runtime().block_on(client::capture(&addr, &quick(50)));
    assert!(
        captured.is_ok(),
        "serves again once descriptors are free: {captured:?}"
    );
}

/// Stopping no longer waits for a capture in flight to finish: it is cancelled after
/// about a second, and its session stops.
#[test]
fn stopping_cancels_a_capture_in_flight() {
    let _s = serial();
    let (server, addr) = serve();
    let capture =
        std::thread::spawn(move || runtime().block_on(client::capture(&addr, &quick(30_000))));
    assert!(eventually(
        Duration::from_secs(5),
        profiler_core::session::is_running
    ));
    let started = Instant::now();
    server.stop();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        started.elapsed()
    );
    assert!(
        !profiler_core::session::is_running(),
        "the capture's session stopped"
    );
    assert!(capture.join().expect("client").is_err());
}
