//! What the sampling tests share: sessions one at a time, CPU burnt by the thread's
//! own clock, the written pprof file, and `go tool pprof` when it is installed.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use profiler_core::{Profile, ProfileOptions};
use profiler_export::pprof::{Profile as Pprof, StackSamples};

// Sessions one at a time, and CPU burnt by the thread's clock: the workspace's test
// support has both.
// Each test binary uses some of them (as with `dead_code` above).
#[allow(unused_imports)]
pub(crate) use prof_test_support::cpu::{burn_for, thread_cpu};
#[allow(unused_imports)]
pub(crate) use prof_test_support::serial as one_session;

/// Runs a session with `options` around `work`, written to a logdir under `dir`.
pub(crate) fn session(dir: &Path, options: ProfileOptions, work: impl FnOnce()) -> Profile {
    profiler_sampling::register();
    let logdir = dir.to_path_buf();
    profiler_core::session::start(
        options,
        Some(Box::new(move |p| {
            profiler_export::logdir::write_logdir(&logdir, p)
        })),
    )
    .expect("start");
    work();
    profiler_core::session::stop().expect("stop")
}

/// The samples of `profile`, which must have some.
pub(crate) fn samples(profile: &Profile) -> StackSamples {
    StackSamples::from_space(profile.xspace())
        .expect("a stack samples plane")
        .expect("valid samples")
}

/// The pprof file the session wrote beside its `.xplane.pb`.
pub(crate) fn pprof_file(profile: &Profile) -> PathBuf {
    let file = profile
        .files()
        .iter()
        .find(|f| f.to_string_lossy().ends_with(".pprof.pb.gz"))
        .unwrap_or_else(|| panic!("no pprof file in {:?}", profile.files()));
    let xplane = &profile.files()[0];
    assert_eq!(file.parent(), xplane.parent(), "beside the .xplane.pb");
    file.clone()
}

/// Reads a pprof file as `go tool pprof` would.
pub(crate) fn read_pprof(path: &Path) -> Pprof {
    Pprof::from_bytes(&std::fs::read(path).expect("read")).expect("decode")
}

/// `go tool pprof ARGS FILE`'s standard output; `None` when Go is not installed
/// (CI installs it, and sets `PROF_REQUIRE_GO=1` so that its absence fails).
pub(crate) fn go_pprof(args: &[&str], file: &Path) -> Option<String> {
    let out = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        .arg(file)
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .output();
    match out {
        Ok(out) => {
            assert!(
                out.status.success(),
                "go tool pprof {args:?} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            Some(String::from_utf8_lossy(&out.stdout).into_owned())
        }
        Err(e) => {
            assert!(
                std::env::var("PROF_REQUIRE_GO").as_deref() != Ok("1"),
                "go is required here: {e}"
            );
            eprintln!("go tool pprof not run: {e} (install golang-go)");
            None
        }
    }
}

/// The rows of `go tool pprof -top`: (flat, flat %, cum %, name).
pub(crate) fn top_rows(top: &str) -> Vec<(f64, f64, f64, String)> {
    top.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let flat: f64 = f
                .next()?
                .trim_end_matches(|c: char| c.is_alphabetic())
                .parse()
                .ok()?;
            let flat_pct: f64 = f.next()?.strip_suffix('%')?.parse().ok()?;
            let _sum = f.next()?;
            let _cum = f.next()?;
            let cum_pct: f64 = f.next()?.strip_suffix('%')?.parse().ok()?;
            let name = f.collect::<Vec<_>>().join(" ");
            Some((flat, flat_pct, cum_pct, name))
        })
        .collect()
}

/// The numeric label `key` of a pprof sample.
pub(crate) fn num_label(
    p: &Pprof,
    s: &profiler_export::pprof::proto::Sample,
    key: &str,
) -> Option<i64> {
    s.label
        .iter()
        .find(|l| p.string(l.key) == key)
        .map(|l| l.num)
}

/// The string label `key` of a pprof sample.
pub(crate) fn str_label<'a>(
    p: &'a Pprof,
    s: &profiler_export::pprof::proto::Sample,
    key: &str,
) -> Option<&'a str> {
    s.label
        .iter()
        .find(|l| p.string(l.key) == key && l.str != 0)
        .map(|l| p.string(l.str))
}
