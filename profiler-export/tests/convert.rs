//! Converting logdirs written by anyone into the other formats.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use prof_test_support::spaces;
use profiler_core::ErrorKind;
use profiler_export::convert::{convert, convert_all, find_xplanes, ConvertOptions};
use profiler_export::{xplane, ExportFormat};

#[test]
fn a_logdir_converts_beside_each_host_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("plugins/profile/2026_11_20_10_00_00");
    std::fs::create_dir_all(&run).expect("mkdir");
    xplane::write(&run.join("a.xplane.pb"), &spaces::space()).expect("write a");
    xplane::write(&run.join("b.xplane.pb"), &spaces::space()).expect("write b");
    std::fs::write(run.join("notes.txt"), "not a profile").expect("write");
    assert_eq!(find_xplanes(dir.path()).expect("found").len(), 2);

    let done = convert(
        dir.path(),
        &[
            ExportFormat::XPlane,
            ExportFormat::Perfetto,
            ExportFormat::ChromeJson,
        ],
        None,
    )
    .expect("converted");
    let outputs: Vec<_> = done
        .iter()
        .map(|c| {
            c.output
                .file_name()
                .expect("name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        outputs,
        ["a.pftrace", "a.trace.json", "b.pftrace", "b.trace.json"]
    );
    assert!(done
        .iter()
        .all(|c| c.output.parent() == Some(run.as_path())));
    assert!(done.iter().all(|c| c.totals.slices == spaces::SLICES));
}

#[test]
fn an_output_directory_and_bad_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("h.xplane.pb");
    xplane::write(&file, &spaces::space()).expect("write");
    let out = dir.path().join("out");
    std::fs::create_dir(&out).expect("mkdir");
    let done = convert(&file, &[ExportFormat::ChromeJsonGz], Some(&out)).expect("converted");
    assert_eq!(done[0].output, out.join("h.trace.json.gz"));

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let err = convert(&empty, &[ExportFormat::Perfetto], None).expect_err("nothing there");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("no .xplane.pb"), "{err}");

    let junk = dir.path().join("junk.xplane.pb");
    std::fs::write(&junk, b"\xff\xff\xff").expect("write");
    let err = convert(&junk, &[ExportFormat::Perfetto], None).expect_err("not an XSpace");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

/// A logdir with runs `runs`, each holding the hosts `hosts`.
fn logdir(dir: &Path, runs: &[&str], hosts: &[&str]) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for run in runs {
        let run = dir.join("plugins/profile").join(run);
        std::fs::create_dir_all(&run).expect("mkdir");
        for host in hosts {
            let file = run.join(format!("{host}.xplane.pb"));
            xplane::write(&file, &spaces::space()).expect("write");
            files.push(file);
        }
    }
    files
}

#[test]
fn one_bad_file_does_not_stop_the_others_and_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = logdir(dir.path(), &["r"], &["a", "c"]);
    let bad = files[0].with_file_name("b.xplane.pb");
    std::fs::write(&bad, b"\xff\xff\xff").expect("write");

    // The old entry point: the error names the bad file, and the files after it were
    // converted all the same.
    let err = convert(dir.path(), &[ExportFormat::Perfetto], None).expect_err("b is bad");
    assert!(err.to_string().contains("b.xplane.pb"), "{err}");
    assert!(files[1].with_file_name("c.pftrace").exists());

    let outcomes = convert_all(
        &[dir.path().to_path_buf()],
        &[ExportFormat::Perfetto, ExportFormat::ChromeJson],
        &ConvertOptions::default(),
    )
    .expect("converted");
    let summary: Vec<_> = outcomes
        .iter()
        .map(|o| {
            let name = o.input.file_name().expect("name").to_string_lossy();
            (name.into_owned(), o.written.len(), o.is_ok())
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a.xplane.pb".to_owned(), 2, true),
            ("b.xplane.pb".to_owned(), 0, false),
            ("c.xplane.pb".to_owned(), 2, true)
        ]
    );
    let error = outcomes[1].error.as_ref().expect("error");
    assert_eq!(error.kind(), ErrorKind::InvalidArgument);
    assert!(
        error.to_string().contains(&bad.display().to_string()),
        "{error}"
    );
}

#[test]
fn a_path_with_nothing_to_convert_is_one_failed_outcome_among_the_others() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = logdir(dir.path(), &["r"], &["a"]);
    let missing = dir.path().join("missing");
    let outcomes = convert_all(
        &[missing.clone(), files[0].clone()],
        &[ExportFormat::Perfetto],
        &ConvertOptions::default(),
    )
    .expect("converted");
    assert_eq!(outcomes.len(), 2);
    assert_eq!(outcomes[0].input, missing);
    assert!(!outcomes[0].is_ok());
    assert!(outcomes[1].is_ok());
}

#[cfg(unix)]
#[test]
fn special_files_in_a_logdir_fail_alone_and_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = logdir(dir.path(), &["r"], &["good"]);
    let run = files[0].parent().expect("run");
    let fifo = run.join("fifo.xplane.pb");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.expect("mkfifo").success());
    std::os::unix::fs::symlink("/dev/zero", run.join("zero.xplane.pb")).expect("link");

    let root = dir.path().to_path_buf();
    let (done, wait) = mpsc::channel();
    std::thread::spawn(move || {
        let outcomes = convert_all(&[root], &[ExportFormat::Perfetto], &Default::default());
        let _ = done.send(outcomes.map(|o| {
            o.into_iter()
                .map(|o| (o.input, o.error.map(|e| e.to_string())))
                .collect::<Vec<_>>()
        }));
    });
    let outcomes = wait
        .recv_timeout(Duration::from_secs(20))
        .expect("returned, did not hang on the FIFO")
        .expect("converted");
    let errors: Vec<_> = outcomes.iter().filter_map(|o| o.1.as_deref()).collect();
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert_eq!(errors.len(), 2, "{outcomes:?}");
    assert!(errors
        .iter()
        .any(|e| e.contains("fifo.xplane.pb") && e.contains("FIFO")));
    assert!(errors
        .iter()
        .any(|e| e.contains("zero.xplane.pb") && e.contains("device")));
    assert!(run.join("good.pftrace").exists());
}

#[test]
fn runs_keep_apart_under_an_output_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    logdir(&logs, &["run1", "run2"], &["worker_0"]);
    // Tell the runs apart by their contents.
    let second = logs.join("plugins/profile/run2/worker_0.xplane.pb");
    let mut space = spaces::space();
    space.hostnames = vec!["second".into()];
    xplane::write(&second, &space).expect("write");
    let out = dir.path().join("out");

    let done = convert(&logs, &[ExportFormat::ChromeJson], Some(&out)).expect("converted");
    let outputs: Vec<_> = done.iter().map(|c| c.output.clone()).collect();
    assert_eq!(
        outputs,
        [
            out.join("plugins/profile/run1/worker_0.trace.json"),
            out.join("plugins/profile/run2/worker_0.trace.json")
        ]
    );
    let host = |p: &Path| {
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p).expect("read")).expect("json");
        doc["otherData"]["host"].as_str().map(str::to_owned)
    };
    assert_eq!(host(&outputs[0]).as_deref(), Some("worker:0"));
    assert_eq!(host(&outputs[1]).as_deref(), Some("second"));
}

#[test]
fn two_inputs_for_one_output_are_refused_before_writing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = logdir(&dir.path().join("a"), &["run"], &["h"]);
    let b = logdir(&dir.path().join("b"), &["run"], &["h"]);
    let out = dir.path().join("out");
    let options = ConvertOptions::default().out_dir(&out);
    let err = convert_all(
        &[a[0].clone(), b[0].clone()],
        &[ExportFormat::Perfetto],
        &options,
    )
    .expect_err("both are h.pftrace");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let text = err.to_string();
    assert!(
        text.contains("a/plugins") && text.contains("b/plugins"),
        "{text}"
    );
    assert!(!out.exists(), "nothing written");

    // The same file given twice (itself, and inside its logdir) is converted once.
    let root = dir.path().join("a");
    let outcomes =
        convert_all(&[root, a[0].clone()], &[ExportFormat::Perfetto], &options).expect("one file");
    assert_eq!(outcomes.len(), 1);
}

#[test]
fn asking_for_no_format_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("h.xplane.pb");
    xplane::write(&file, &spaces::space()).expect("write");
    for formats in [&[][..], &[ExportFormat::XPlane][..]] {
        let err = convert(&file, formats, None).expect_err("nothing to write");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("no format"), "{err}");
    }
}

#[test]
fn an_empty_profile_is_converted_and_said_to_be_empty() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("zero.xplane.pb");
    std::fs::write(&empty, b"").expect("write");
    let full = dir.path().join("full.xplane.pb");
    xplane::write(&full, &spaces::space()).expect("write");
    let outcomes = convert_all(
        &[empty.clone(), full],
        &[ExportFormat::Perfetto],
        &ConvertOptions::default(),
    )
    .expect("converted");
    assert!(outcomes.iter().all(|o| o.is_ok()));
    let [zero, full] = &outcomes[..] else {
        panic!("two outcomes: {outcomes:?}")
    };
    assert_eq!(zero.written.len(), 1);
    let [warning] = &zero.warnings[..] else {
        panic!("one warning: {:?}", zero.warnings)
    };
    assert!(
        warning.contains("zero.xplane.pb") && warning.contains("0 bytes"),
        "{warning}"
    );
    assert!(warning.contains("the profile is empty"), "{warning}");
    assert!(full.warnings.is_empty(), "{:?}", full.warnings);
}
