//! `prof-diff` and `prof-convert` with URLs: read as local copies are, and written
//! create-only.

use std::path::Path;
use std::process::Output;

use crate::s3::S3;
use crate::setup::{capture, child_server, host_file, kept_in, text, User, BUCKET};

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
