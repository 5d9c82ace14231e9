//! The S3 server (s3s-fs on loopback) and captures into `s3://` logdirs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::setup::{capture, child_server, host_file, text, User, BUCKET};

pub(crate) const KEY: &str = "prof-test-key";
pub(crate) const SECRET: &str = "prof-test-secret";

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
pub(crate) struct S3 {
    child: Child,
    pub(crate) endpoint: String,
    pub(crate) root: tempfile::TempDir,
}

impl S3 {
    pub(crate) fn start() -> S3 {
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
    pub(crate) fn object(&self, key: &str) -> PathBuf {
        self.root.path().join(BUCKET).join(key)
    }

    /// Every object under `prefix`, as keys relative to the bucket, sorted (the
    /// server's own bookkeeping, dot files, left out).
    pub(crate) fn objects(&self, prefix: &str) -> Vec<String> {
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

impl User {
    /// A user of `s3` with the right secret.
    pub(crate) fn of(s3: &S3) -> User {
        User::at(&s3.endpoint, SECRET)
    }

    /// A user of the S3 endpoint `endpoint` with the secret `secret`.
    pub(crate) fn at(endpoint: &str, secret: &str) -> User {
        User::with(vec![
            ("AWS_ACCESS_KEY_ID", KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", secret.to_owned()),
            ("AWS_ENDPOINT_URL", endpoint.to_owned()),
            ("AWS_DEFAULT_REGION", "us-east-1".to_owned()),
        ])
    }
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
