//! Logdirs at `s3://` URLs, against a real S3 server on loopback: s3s-fs 0.14.1
//! (`tests/s3-server`), which checks SigV4 signatures, honours `If-None-Match`, keeps
//! multipart uploads invisible until completed and stores each object as a plain file
//! under its root, so what landed is read back from the disk.
//!
//! The installed tools run as a user runs them, with credentials in the environment
//! (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`), in a working
//! directory of their own where no `s3:` directory may appear, and with `TMPDIR`
//! pointing at a directory of the test's, where a failed upload's local copy must be.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use prof_test_support::child;
use prof_test_support::workload::Workload;
use profiler_remote::server;

const KEY: &str = "prof-test-key";
const SECRET: &str = "prof-test-secret";
const BUCKET: &str = "prof";

/// The s3s-fs server binary: `PROF_S3_SERVER`, or built from `tests/s3-server` into
/// this build's target directory the first time a test needs it (its own workspace:
/// see its manifest).
fn server_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        if let Some(path) = std::env::var_os("PROF_S3_SERVER") {
            return PathBuf::from(path);
        }
        // target/debug/deps/<test> -> target
        let exe = std::env::current_exe().expect("test binary");
        let target = exe
            .ancestors()
            .nth(3)
            .expect("target directory")
            .to_path_buf();
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/s3-server/Cargo.toml");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--locked", "--quiet", "--manifest-path"])
            .arg(&manifest)
            .arg("--target-dir")
            .arg(&target)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building {} failed", manifest.display());
        target.join("debug/prof-s3-server")
    })
}

/// A running s3s-fs with bucket [`BUCKET`], serving `root` until dropped.
struct S3 {
    child: Child,
    endpoint: String,
    root: tempfile::TempDir,
}

impl S3 {
    fn start() -> S3 {
        let root = tempfile::tempdir().expect("tmp");
        std::fs::create_dir(root.path().join(BUCKET)).expect("bucket");
        let mut child = Command::new(server_binary())
            .args([root.path().as_os_str(), KEY.as_ref(), SECRET.as_ref()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("s3 server starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the server says where it listens");
        let endpoint = line.trim().to_owned();
        assert!(endpoint.starts_with("http://127.0.0.1:"), "{endpoint:?}");
        S3 {
            child,
            endpoint,
            root,
        }
    }

    /// The object `key` of the bucket as the server stores it: a plain file.
    fn object(&self, key: &str) -> PathBuf {
        self.root.path().join(BUCKET).join(key)
    }

    /// Every object under `prefix`, as keys relative to the bucket, sorted (the
    /// server's own bookkeeping, dot files, left out).
    fn objects(&self, prefix: &str) -> Vec<String> {
        let bucket = self.root.path().join(BUCKET);
        let mut found = Vec::new();
        let mut dirs = vec![bucket.join(prefix)];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if !path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                {
                    let key = path.strip_prefix(&bucket).expect("in bucket");
                    found.push(key.to_string_lossy().into_owned());
                }
            }
        }
        found.sort();
        found
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        // Closing its stdin ends it; kill in case it is stuck.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where a tool runs: its working directory, its `TMPDIR`, and its credentials (no
/// other `AWS_*` or `AZURE*` variable reaches it).
struct User {
    cwd: tempfile::TempDir,
    tmp: tempfile::TempDir,
    env: Vec<(&'static str, String)>,
}

impl User {
    fn of(s3: &S3) -> User {
        User::at(&s3.endpoint, SECRET)
    }

    /// A user of the S3 endpoint `endpoint` with the secret `secret`.
    fn at(endpoint: &str, secret: &str) -> User {
        User::with(vec![
            ("AWS_ACCESS_KEY_ID", KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", secret.to_owned()),
            ("AWS_ENDPOINT_URL", endpoint.to_owned()),
            ("AWS_DEFAULT_REGION", "us-east-1".to_owned()),
        ])
    }

    fn with(env: Vec<(&'static str, String)>) -> User {
        User {
            cwd: tempfile::tempdir().expect("tmp"),
            tmp: tempfile::tempdir().expect("tmp"),
            env,
        }
    }

    fn command(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        for (key, _) in std::env::vars_os() {
            let key_text = key.to_string_lossy();
            if key_text.starts_with("AWS_") || key_text.starts_with("AZURE") {
                command.env_remove(key);
            }
        }
        command
            .current_dir(self.cwd.path())
            .env("TMPDIR", self.tmp.path())
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT");
        command
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        self.command(program).args(args).output().expect("runs")
    }

    /// No `s3:` (or `gs:`) directory where the tool ran, nor anywhere under it.
    fn assert_no_scheme_directory(&self) {
        let mut dirs = vec![self.cwd.path().to_path_buf()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("listed") {
                let path = entry.expect("entry").path();
                let name = path
                    .file_name()
                    .expect("name")
                    .to_string_lossy()
                    .into_owned();
                assert!(!name.ends_with(':'), "{} was created", path.display());
                if path.is_dir() {
                    dirs.push(path);
                }
            }
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The local copy a failure names: the path after "kept in ", up to the next `;`.
fn kept_in(stderr: &str) -> PathBuf {
    let at = stderr.find("kept in ").expect("the local copy is named") + "kept in ".len();
    let rest = &stderr[at..];
    let end = [rest.find(';'), rest.find('\n'), rest.find(": ")]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(rest.len());
    PathBuf::from(&rest[..end])
}

/// Set in the child processes [`serve_as_a_child_process`] runs in.
const CHILD: &str = "PROF_STORE_CHILD_SERVER";

/// Not a test of its own, so ignored: [`child_server`] runs it in a child process, a
/// prof server with a workload for a few seconds, without any credentials.
#[test]
#[ignore = "a child process of the capture tests, run by them"]
fn serve_as_a_child_process() {
    assert!(
        std::env::var_os(CHILD).is_some(),
        "run by child_server, with {CHILD} set"
    );
    let server = server::start(0).expect("server");
    let _work = Workload::start();
    child::listening(&format!("127.0.0.1:{}", server.local_addr().port()));
    std::thread::sleep(Duration::from_secs(10));
}

/// A prof server in a child process with no `AWS_*` variable; its address.
fn child_server() -> (Child, String) {
    let mut command = child::this_test("serve_as_a_child_process");
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("AWS_") {
            command.env_remove(key);
        }
    }
    child::server(command.env(CHILD, "1"))
}

fn capture(user: &User, hosts: &[String], logdir: &str) -> Output {
    user.run(
        env!("CARGO_BIN_EXE_capture-profile"),
        &[
            &hosts.join(","),
            "--duration-ms",
            "300",
            "--attempts",
            "1",
            "--logdir",
            logdir,
        ],
    )
}

fn host_file(addr: &str) -> String {
    format!("{}.xplane.pb", addr.replace(':', "_"))
}

#[test]
fn capture_profile_puts_three_hosts_in_one_run_and_the_servers_need_no_credentials() {
    let s3 = S3::start();
    let user = User::of(&s3);
    let servers: Vec<_> = (0..3).map(|_| child_server()).collect();
    let hosts: Vec<String> = servers.iter().map(|(_, a)| a.clone()).collect();
    let out = capture(&user, &hosts, &format!("s3://{BUCKET}/cap"));
    for (mut child, _) in servers {
        let _ = (child.kill(), child.wait());
    }
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let objects = s3.objects("cap");
    assert_eq!(objects.len(), 3, "{objects:?}");
    let runs: std::collections::BTreeSet<_> = objects
        .iter()
        .map(|k| Path::new(k).parent().expect("run").to_owned())
        .collect();
    assert_eq!(runs.len(), 1, "one run: {objects:?}");
    for host in &hosts {
        let key = objects
            .iter()
            .find(|k| k.ends_with(&host_file(host)))
            .expect(host);
        assert!(key.starts_with("cap/plugins/profile/"), "{key}");
        // What landed is a whole XSpace of that host's events.
        let space = profiler_export::xplane::read(&s3.object(key)).expect("an XSpace");
        assert!(!space.planes.is_empty(), "{key}");
    }
    let stdout = text(&out.stdout);
    for host in &hosts {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(host.as_str()))
            .expect(host);
        assert!(
            line.contains(&format!("s3://{BUCKET}/cap/plugins/profile/")),
            "{line}"
        );
    }
    // The staged copy is gone once published, and nothing was written where it ran.
    let staged = user
        .tmp
        .path()
        .join("prof-logdirs/s3")
        .join(BUCKET)
        .join("cap/plugins/profile");
    assert_eq!(
        std::fs::read_dir(&staged).map(Iterator::count).unwrap_or(0),
        0
    );
    user.assert_no_scheme_directory();
}

#[test]
fn a_run_name_taken_is_never_overwritten_and_two_captures_get_two_runs() {
    let s3 = S3::start();
    let user = User::of(&s3);
    let (mut child, host) = child_server();
    // Another writer's object at every run name the next seconds could give the
    // captures below, under the captured host's name.
    let now = std::time::SystemTime::now();
    let mut planted = Vec::new();
    for s in 0..10 {
        let at = chrono::DateTime::<chrono::Local>::from(now + Duration::from_secs(s));
        let run = at.format("%Y_%m_%d_%H_%M_%S").to_string();
        let path = s3.object(&format!("same/plugins/profile/{run}/{}", host_file(&host)));
        std::fs::create_dir_all(path.parent().expect("dir")).expect("dir");
        std::fs::write(&path, b"planted").expect("plant");
        planted.push(path);
    }
    let logdir = format!("s3://{BUCKET}/same");
    // Back to back, often within one second: the second finds the first's run taken.
    let one = capture(&user, std::slice::from_ref(&host), &logdir);
    let two = capture(&user, std::slice::from_ref(&host), &logdir);
    let _ = (child.kill(), child.wait());
    assert_eq!(one.status.code(), Some(0), "{one:?}");
    assert_eq!(two.status.code(), Some(0), "{two:?}");
    for path in &planted {
        assert_eq!(
            std::fs::read(path).expect("still there"),
            b"planted",
            "{}",
            path.display()
        );
    }
    let fresh: Vec<String> = s3
        .objects("same")
        .into_iter()
        .filter(|k| std::fs::read(s3.object(k)).expect("read") != b"planted")
        .collect();
    assert_eq!(fresh.len(), 2, "{fresh:?}");
    let run = |k: &String| {
        let run = Path::new(k)
            .parent()
            .expect("run")
            .file_name()
            .expect("name");
        run.to_string_lossy().into_owned()
    };
    assert_ne!(run(&fresh[0]), run(&fresh[1]), "{fresh:?}");
    for key in &fresh {
        // Each took a next free name after a planted one: `<time>_1` or `<time>_2`.
        assert!(
            run(key).ends_with("_1") || run(key).ends_with("_2"),
            "{key}"
        );
        assert!(
            profiler_export::xplane::read(&s3.object(key)).is_ok(),
            "{key}"
        );
    }
}

#[test]
fn a_wrong_secret_fails_naming_the_url_and_403_and_keeps_the_capture_locally() {
    let s3 = S3::start();
    let user = User::at(&s3.endpoint, "not-the-secret");
    let (mut child, host) = child_server();
    let out = capture(
        &user,
        std::slice::from_ref(&host),
        &format!("s3://{BUCKET}/denied"),
    );
    let _ = (child.kill(), child.wait());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("s3://{BUCKET}/denied/plugins/profile/")),
        "{stderr}"
    );
    assert!(stderr.contains("403"), "{stderr}");
    let kept = kept_in(&stderr);
    assert!(kept.starts_with(user.tmp.path()), "{stderr}");
    let file = kept.join(host_file(&host));
    assert!(
        profiler_export::xplane::read(&file).is_ok(),
        "{} holds the capture",
        file.display()
    );
    assert!(s3.objects("denied").is_empty());
    user.assert_no_scheme_directory();
}

#[test]
fn a_dead_endpoint_fails_within_seconds_and_keeps_the_capture_locally() {
    let closed = TcpListener::bind("127.0.0.1:0").expect("bind");
    let endpoint = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let user = User::at(&endpoint, SECRET);
    let (mut child, host) = child_server();
    let started = Instant::now();
    let out = capture(
        &user,
        std::slice::from_ref(&host),
        &format!("s3://{BUCKET}/dead"),
    );
    let took = started.elapsed();
    let _ = (child.kill(), child.wait());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // The capture is 0.3 s; the retries are bounded at 30 s.
    assert!(took < Duration::from_secs(45), "{took:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("s3://{BUCKET}/dead")), "{stderr}");
    assert!(stderr.contains("connection refused"), "{stderr}");
    assert!(
        kept_in(&stderr).join(host_file(&host)).is_file(),
        "{stderr}"
    );
    user.assert_no_scheme_directory();
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

/// Set in the child process [`upload_as_a_child_process`] runs in: the local run to
/// publish, and the logdir URL.
const UPLOADER: &str = "PROF_STORE_CHILD_UPLOAD";

/// Not a test of its own: [`atomic_uploads`] runs it in a child process that it may
/// kill, publishing the run named in [`UPLOADER`].
#[test]
#[ignore = "a child process of an_object_appears_whole_or_not_at_all, run by it"]
fn upload_as_a_child_process() {
    let spec = std::env::var(UPLOADER).expect("run by atomic_uploads");
    let (run, url) = spec.split_once('|').expect("RUN|URL");
    let run = Path::new(run);
    let mut files: Vec<PathBuf> = std::fs::read_dir(run)
        .expect("run")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort_by_key(|f| !f.to_string_lossy().ends_with(".xplane.pb"));
    let profiler_export::store::Location::Object(url) =
        profiler_export::store::Location::of(Path::new(url)).expect("url")
    else {
        panic!("not a URL: {url}");
    };
    let runs = url.join(profiler_export::logdir::PROFILE_PLUGIN_DIR);
    profiler_export::store::publish_run(run, &files, &runs).expect("published");
}

/// Publishes a run of a 40 MiB `.xplane.pb` (one PUT) and a 40 MiB `.pftrace`
/// (multipart) in a child process, polling the store every few milliseconds; when
/// `kill_after` is set, kills the child with SIGKILL once the server has that many
/// bytes of a temporary file. Returns every size each object was seen with.
fn atomic_uploads(s3: &S3, prefix: &str, kill_after: Option<u64>) -> Vec<(String, u64)> {
    const SIZE: usize = 40 << 20;
    let user = User::of(s3);
    let run = user.tmp.path().join("2026_01_01_00_00_00");
    std::fs::create_dir(&run).expect("run");
    // Incompressible, and different in every byte position that matters.
    let mut bytes = vec![0u8; SIZE];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for chunk in bytes.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    std::fs::write(run.join("big.xplane.pb"), &bytes).expect("write");
    std::fs::write(run.join("big.pftrace"), &bytes).expect("write");
    let mut child = user
        .command(
            &std::env::current_exe()
                .expect("test binary")
                .to_string_lossy(),
        )
        .args([
            "--ignored",
            "--exact",
            "upload_as_a_child_process",
            "--nocapture",
        ])
        .env(
            UPLOADER,
            format!("{}|s3://{BUCKET}/{prefix}", run.display()),
        )
        .stdout(Stdio::null())
        .spawn()
        .expect("uploader");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(240);
    let mut killed = false;
    loop {
        for key in s3.objects(prefix) {
            let len = std::fs::metadata(s3.object(&key))
                .map(|m| m.len())
                .unwrap_or(0);
            seen.push((key, len));
        }
        if let (Some(limit), false) = (kill_after, killed) {
            let staged: u64 = std::fs::read_dir(s3.root.path())
                .expect("root")
                .filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".internal.part"))
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum();
            if staged >= limit {
                child.kill().expect("SIGKILL");
                killed = true;
            }
        }
        if let Some(status) = child.try_wait().expect("wait") {
            if kill_after.is_none() {
                assert!(status.success(), "the upload failed");
            }
            break;
        }
        assert!(Instant::now() < deadline, "the upload took over 240 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    if kill_after.is_some() {
        assert!(killed, "the child finished before it could be killed");
    }
    // The server may still be finishing what it was sent; look again after a while.
    std::thread::sleep(Duration::from_millis(500));
    for key in s3.objects(prefix) {
        let len = std::fs::metadata(s3.object(&key))
            .map(|m| m.len())
            .unwrap_or(0);
        seen.push((key, len));
    }
    seen
}

#[test]
fn an_object_appears_whole_or_not_at_all() {
    let s3 = S3::start();
    let seen = atomic_uploads(&s3, "whole", None);
    assert!(!seen.is_empty(), "the objects were never listed");
    for (key, len) in &seen {
        assert_eq!(*len, 40 << 20, "{key} was listed at {len} bytes");
    }
    let keys: std::collections::BTreeSet<_> = seen.iter().map(|(k, _)| k.clone()).collect();
    assert_eq!(keys.len(), 2, "{keys:?}");
    // Killed with SIGKILL part-way through: nothing is listed, ever.
    let seen = atomic_uploads(&s3, "killed", Some(8 << 20));
    assert!(seen.is_empty(), "{seen:?}");
}

#[test]
fn prof_diff_reads_urls_as_it_reads_local_copies() {
    let s3 = S3::start();
    let user = User::of(&s3);
    let local = tempfile::tempdir().expect("tmp");
    // Two runs, written by a tool (capture-profile) to local logdirs; the same files
    // then placed in the bucket as s3://prof/base and s3://prof/new.
    let (mut child, host) = child_server();
    for side in ["base", "new"] {
        let logdir = local.path().join(side);
        let out = capture(
            &user,
            std::slice::from_ref(&host),
            &logdir.to_string_lossy(),
        );
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        copy_tree(&logdir, &s3.root.path().join(BUCKET).join(side));
    }
    let _ = (child.kill(), child.wait());
    let prof_diff = env!("CARGO_BIN_EXE_prof-diff");
    let on_urls = user.run(
        prof_diff,
        &[
            &format!("s3://{BUCKET}/base"),
            &format!("s3://{BUCKET}/new"),
        ],
    );
    let base = local.path().join("base");
    let new = local.path().join("new");
    let on_copies = user.run(
        prof_diff,
        &[&base.to_string_lossy(), &new.to_string_lossy()],
    );
    assert_eq!(
        on_urls.status.code(),
        on_copies.status.code(),
        "{on_urls:?}"
    );
    assert_eq!(on_urls.status.code(), Some(0), "{on_urls:?}");
    let named = |out: &Output| {
        text(&out.stdout)
            .replace(&*base.to_string_lossy(), &format!("s3://{BUCKET}/base"))
            .replace(&*new.to_string_lossy(), &format!("s3://{BUCKET}/new"))
    };
    assert!(!text(&on_urls.stdout).is_empty());
    assert_eq!(named(&on_urls), named(&on_copies));

    // The command the guide gives for XProf, which reads gs:// only: the run copied
    // down to a local logdir, byte for byte, with its conversions beside it.
    let down = local.path().join("down");
    let prof_convert = env!("CARGO_BIN_EXE_prof-convert");
    let out = user.run(
        prof_convert,
        &[
            &format!("s3://{BUCKET}/base"),
            "--out",
            &down.to_string_lossy(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let original = profiler_export::convert::find_xplanes(&base).expect("local run");
    let copied = profiler_export::convert::find_xplanes(&down).expect("copied run");
    assert_eq!(copied.len(), 1, "{copied:?}");
    assert_eq!(
        copied[0].strip_prefix(&down).expect("under --out"),
        original[0].strip_prefix(&base).expect("under base")
    );
    assert_eq!(
        std::fs::read(&copied[0]).expect("copy"),
        std::fs::read(&original[0]).expect("original")
    );
    assert!(copied[0]
        .with_file_name(host_file(&host).replace(".xplane.pb", ".pftrace"))
        .is_file());
    // Written to a URL: each conversion uploaded whole and create-only; a second
    // conversion to the same place overwrites nothing, fails, and keeps its files.
    let to = format!("s3://{BUCKET}/conv");
    let up = user.run(prof_convert, &[&base.to_string_lossy(), "--out", &to]);
    assert_eq!(up.status.code(), Some(0), "{up:?}");
    let objects = s3.objects("conv");
    assert!(
        objects.iter().any(|k| k.ends_with(".pftrace")),
        "{objects:?}"
    );
    assert!(
        objects.iter().any(|k| k.ends_with(".trace.json.gz")),
        "{objects:?}"
    );
    assert!(text(&up.stdout).contains(&format!("-> {to}/")), "{up:?}");
    let before: Vec<Vec<u8>> = objects
        .iter()
        .map(|k| std::fs::read(s3.object(k)).expect("read"))
        .collect();
    let again = user.run(prof_convert, &[&base.to_string_lossy(), "--out", &to]);
    assert_eq!(again.status.code(), Some(1), "{again:?}");
    let stderr = text(&again.stderr);
    assert!(
        stderr.contains("another writer put an object there first"),
        "{stderr}"
    );
    assert!(kept_in(&stderr).is_dir(), "{stderr}");
    assert_eq!(s3.objects("conv"), objects);
    let after: Vec<Vec<u8>> = objects
        .iter()
        .map(|k| std::fs::read(s3.object(k)).expect("read"))
        .collect();
    assert_eq!(before, after, "nothing overwritten");

    let no_out = user.run(prof_convert, &[&format!("s3://{BUCKET}/base")]);
    assert_eq!(no_out.status.code(), Some(1), "{no_out:?}");
    assert!(
        text(&no_out.stderr).contains("give --out DIR"),
        "{no_out:?}"
    );
    user.assert_no_scheme_directory();
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("dir");
    for entry in std::fs::read_dir(from).expect("listed") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copied");
        }
    }
}

// az:// against Azurite 3.35.0 (npm, `tests/interop/azurite`), the official Azure
// Storage emulator, blob service only, in memory, on a free loopback port, without
// telemetry (it would reach the internet otherwise).

/// Azurite's well-known development account and key.
const AZ_ACCOUNT: &str = "devstoreaccount1";
const AZ_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// A running Azurite with the container [`BUCKET`]; `None` when it is not installed
/// (`npm ci --prefix tests/interop/azurite`; CI installs it and sets
/// `PROF_REQUIRE_AZURITE=1`, so that its absence fails there).
struct Azurite {
    child: Child,
    endpoint: String,
}

impl Azurite {
    fn start() -> Option<Azurite> {
        let bin = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/interop/azurite/node_modules/.bin/azurite-blob");
        if !bin.exists() {
            assert!(
                std::env::var("PROF_REQUIRE_AZURITE").as_deref() != Ok("1"),
                "Azurite is required here: npm ci --prefix tests/interop/azurite"
            );
            eprintln!("az:// not tested: Azurite is not installed (npm ci --prefix tests/interop/azurite)");
            return None;
        }
        let data = std::env::temp_dir();
        let mut child = Command::new(&bin)
            .args([
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                "0",
                "--inMemoryPersistence",
                "--skipApiVersionCheck",
                "--disableTelemetry",
                "--silent",
            ])
            .current_dir(data)
            .stdout(Stdio::piped())
            .spawn()
            .expect("azurite starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(at) = line.split("listens on ").nth(1) {
                    let _ = tx.send(at.trim().to_owned());
                }
            }
        });
        let endpoint = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("Azurite listens");
        let azurite = Azurite { child, endpoint };
        azurite.create_container(BUCKET);
        Some(azurite)
    }

    /// Creates `name` with a Shared Key request (object_store creates no containers).
    fn create_container(&self, name: &str) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let date = chrono::Utc::now()
            .format("%a, %d %b %Y %H:%M:%S GMT")
            .to_string();
        let version = "2021-08-06";
        // VERB, then eleven standard headers (all empty here), the x-ms- headers, and
        // the resource: the account, then the path-style URL's path.
        let to_sign = format!(
            "PUT\n{}x-ms-date:{date}\nx-ms-version:{version}\n/{AZ_ACCOUNT}/{AZ_ACCOUNT}/{name}\nrestype:container",
            "\n".repeat(11)
        );
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &b64.decode(AZ_KEY).expect("key"));
        let signature = b64.encode(ring::hmac::sign(&key, to_sign.as_bytes()).as_ref());
        let host = self.endpoint.trim_start_matches("http://");
        let mut conn = TcpStream::connect(host).expect("connect");
        write!(
            conn,
            "PUT /{AZ_ACCOUNT}/{name}?restype=container HTTP/1.1\r\nHost: {host}\r\n\
             x-ms-date: {date}\r\nx-ms-version: {version}\r\n\
             Authorization: SharedKey {AZ_ACCOUNT}:{signature}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )
        .expect("request");
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        assert!(
            answer.starts_with("HTTP/1.1 201"),
            "creating {name}: {answer}"
        );
    }

    /// A user of this Azurite, with the account's key or another.
    fn user(&self, key: &str) -> User {
        User::with(vec![
            ("AZURE_STORAGE_USE_EMULATOR", "true".to_owned()),
            ("AZURITE_BLOB_STORAGE_URL", self.endpoint.clone()),
            ("AZURE_STORAGE_ACCOUNT_KEY", key.to_owned()),
        ])
    }
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every `.xplane.pb` under the URL, brought down by `prof-convert URL --out DIR`: the
/// files, relative to DIR.
fn read_back(user: &User, url: &str) -> Vec<PathBuf> {
    let down = user.tmp.path().join("down");
    let _ = std::fs::remove_dir_all(&down);
    let out = user.run(
        env!("CARGO_BIN_EXE_prof-convert"),
        &[url, "--out", &down.to_string_lossy()],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let mut files: Vec<PathBuf> = profiler_export::convert::find_xplanes(&down)
        .expect("copied")
        .into_iter()
        .inspect(|f| assert!(profiler_export::xplane::read(f).is_ok(), "{}", f.display()))
        .map(|f| f.strip_prefix(&down).expect("under --out").to_path_buf())
        .collect();
    files.sort();
    files
}

#[test]
fn az_capture_profile_puts_three_hosts_in_one_run_and_two_captures_get_two_runs() {
    let Some(azurite) = Azurite::start() else {
        return;
    };
    let user = azurite.user(AZ_KEY);
    let servers: Vec<_> = (0..3).map(|_| child_server()).collect();
    let hosts: Vec<String> = servers.iter().map(|(_, a)| a.clone()).collect();
    let logdir = format!("az://{BUCKET}/cap");
    let out = capture(&user, &hosts, &logdir);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let files = read_back(&user, &logdir);
    assert_eq!(files.len(), 3, "{files:?}");
    let runs: std::collections::BTreeSet<_> =
        files.iter().map(|f| f.parent().expect("run")).collect();
    assert_eq!(runs.len(), 1, "one run: {files:?}");
    for host in &hosts {
        assert!(
            files.iter().any(|f| f.ends_with(host_file(host))),
            "{host}: {files:?}"
        );
    }
    // The same host captured again at once: a second run, the first left as it was.
    let again = capture(&user, &hosts[..1], &logdir);
    for (mut child, _) in servers {
        let _ = (child.kill(), child.wait());
    }
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    let after = read_back(&user, &logdir);
    assert_eq!(after.len(), 4, "{after:?}");
    let runs: std::collections::BTreeSet<_> =
        after.iter().map(|f| f.parent().expect("run")).collect();
    assert_eq!(runs.len(), 2, "{after:?}");
    user.assert_no_scheme_directory();
}

#[test]
fn az_a_wrong_key_fails_naming_the_url_and_403_and_keeps_the_capture_locally() {
    let Some(azurite) = Azurite::start() else {
        return;
    };
    // A well-formed key that is not the account's.
    let user = azurite.user("bm90LXRoZS1hY2NvdW50J3Mta2V5LW5vdC10aGUtYWNjb3VudCdzLWtleQ==");
    let (mut child, host) = child_server();
    let out = capture(
        &user,
        std::slice::from_ref(&host),
        &format!("az://{BUCKET}/denied"),
    );
    let _ = (child.kill(), child.wait());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(&format!("az://{BUCKET}/denied/plugins/profile/")),
        "{stderr}"
    );
    assert!(stderr.contains("403"), "{stderr}");
    let kept = kept_in(&stderr);
    assert!(kept.starts_with(user.tmp.path()), "{stderr}");
    assert!(
        profiler_export::xplane::read(&kept.join(host_file(&host))).is_ok(),
        "{stderr}"
    );
    user.assert_no_scheme_directory();
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
    let (mut child, host) = child_server();
    let started = Instant::now();
    let out = capture(
        &user,
        std::slice::from_ref(&host),
        &format!("az://{BUCKET}/dead"),
    );
    let took = started.elapsed();
    let _ = (child.kill(), child.wait());
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(took < Duration::from_secs(45), "{took:?}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains(&format!("az://{BUCKET}/dead")), "{stderr}");
    assert!(
        kept_in(&stderr).join(host_file(&host)).is_file(),
        "{stderr}"
    );
    user.assert_no_scheme_directory();
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
