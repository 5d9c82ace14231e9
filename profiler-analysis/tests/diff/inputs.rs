//! What a diff reads: files, directories and logdirs, one host or several, and every
//! input it refuses, named.

use std::path::Path;

use profiler_analysis::diff::{self, DiffOptions, Method, Verdict};
use profiler_core::xspace::XSpace;
use profiler_core::ErrorKind;
use profiler_export::xplane;

use crate::workloads::train_loop;

fn write(space: &XSpace, path: &Path) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("dir");
    xplane::write(path, space).expect("written");
}

#[test]
fn different_hosts_are_refused_naming_the_files_unless_one_is_chosen() {
    let dir = tempfile::tempdir().expect("tmp");
    let run = |side: &str, host: &str| dir.path().join(side).join(format!("{host}.xplane.pb"));
    for (side, host, seed) in [
        ("base", "a", 1),
        ("base", "b", 2),
        ("new", "a", 3),
        ("new", "c", 4),
    ] {
        write(&train_loop(seed, 8, None, true), &run(side, host));
    }
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    let e = diff::diff(&base, &new).expect_err("hosts differ");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let msg = e.to_string();
    assert!(msg.contains("different hosts"), "{msg}");
    assert!(msg.contains("a, b") && msg.contains("a, c"), "{msg}");
    assert!(
        msg.contains(&run("base", "b").display().to_string()),
        "{msg}"
    );

    let one = diff::diff_with(&base, &new, &DiffOptions::default().host("a")).expect("host a");
    assert_eq!(one.sides.base.hosts, ["a"]);
    assert_eq!(
        one.sides.new.sources,
        [run("new", "a").display().to_string()]
    );
    let e = diff::diff_with(&base, &new, &DiffOptions::default().host("z")).expect_err("no z");
    assert!(
        e.to_string()
            .contains("no profile of host \"z\" (its hosts: a, b)"),
        "{e}"
    );

    // One host a side, named differently: compared, and said.
    let d = diff::diff(run("base", "b"), run("new", "c")).expect("one host each");
    assert!(
        d.notes.iter().any(|n| n.contains("compared as one host")),
        "{:?}",
        d.notes
    );
}

#[test]
fn unreadable_inputs_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let good = dir.path().join("good.xplane.pb");
    write(&train_loop(1, 6, None, true), &good);

    let missing = dir.path().join("missing.xplane.pb");
    let e = diff::diff(&missing, &good).expect_err("missing");
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(e.path(), Some(missing.as_path()));

    let garbage = dir.path().join("garbage.xplane.pb");
    std::fs::write(&garbage, b"\x0a\xff\xff\xff\xff\x0f not a profile").expect("write");
    let e = diff::diff(&good, &garbage).expect_err("garbage");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(
        e.to_string().contains("garbage.xplane.pb is not an XSpace"),
        "{e}"
    );

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("dir");
    let e = diff::diff(&good, &empty).expect_err("nothing there");
    assert!(e.to_string().contains("no .xplane.pb file under"), "{e}");

    let e = diff::diff_with(&good, &good, &DiffOptions::default().alpha(2.0)).expect_err("alpha");
    assert!(e.to_string().contains("alpha 2"), "{e}");
}

#[test]
fn a_logdir_gives_its_newest_run_or_pools_them_all() {
    let dir = tempfile::tempdir().expect("tmp");
    let side = |name: &str, slower| {
        let logdir = dir.path().join(name);
        for (i, run) in [
            "2026_01_01_00_00_00",
            "2026_01_01_00_00_01",
            "2026_01_01_00_00_02",
        ]
        .iter()
        .enumerate()
        {
            let path = logdir
                .join("plugins/profile")
                .join(run)
                .join("trainer.xplane.pb");
            let seed = if name == "base" { 20 + i } else { 30 + i } as u64;
            write(&train_loop(seed, 12, slower, true), &path);
        }
        logdir
    };
    let base = side("base", None);
    let new = side("new", Some(("backward", 1.3)));

    let newest = diff::diff(&base, &new).expect("compared");
    assert!(newest.sides.base.sources[0].contains("2026_01_01_00_00_02"));
    assert!(
        newest.notes.iter().any(|n| n.contains("holds 3 runs")),
        "{:?}",
        newest.notes
    );
    assert_eq!(newest.method, Method::MannWhitneyU);

    // Three runs a side: the runs are the samples, and a real change still shows.
    let pooled = diff::diff_with(&base, &new, &DiffOptions::default().all_runs(true)).expect("ok");
    assert_eq!((pooled.sides.base.runs, pooled.sides.new.runs), (3, 3));
    assert_eq!(pooled.sides.base.samples, 36);
    assert_eq!(pooled.method, Method::WelchT);
    let backward = pooled.op("backward").expect("backward");
    assert_eq!(backward.time.verdict, Verdict::Increase, "{backward:?}");
    assert_eq!(
        backward.time.test.as_ref().expect("tested").method,
        Method::WelchT
    );
    assert!(!pooled.gate(10.0).passed);
}
