//! Converting logdirs written by anyone into the other formats.

mod support;

use profiler_core::ErrorKind;
use profiler_export::convert::{convert, find_xplanes};
use profiler_export::{xplane, ExportFormat};

#[test]
fn a_logdir_converts_beside_each_host_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir.path().join("plugins/profile/2026_11_20_10_00_00");
    std::fs::create_dir_all(&run).expect("mkdir");
    xplane::write(&run.join("a.xplane.pb"), &support::space()).expect("write a");
    xplane::write(&run.join("b.xplane.pb"), &support::space()).expect("write b");
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
    assert!(done.iter().all(|c| c.totals.slices == support::SLICES));
}

#[test]
fn an_output_directory_and_bad_inputs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("h.xplane.pb");
    xplane::write(&file, &support::space()).expect("write");
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
