//! An object appears whole or not at all, even when its uploader is killed.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::s3::S3;
use crate::setup::{User, BUCKET};

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
            "atomic::upload_as_a_child_process",
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
