//! The installed `prof-diff` binary: real prof sessions with one op made slower (the
//! gate fails and says why), unchanged work (the gate passes), every format, bad input
//! (named, exit 1), bad usage (exit 2), and nothing written beside the inputs.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use prof_test_support::cpu::burn_for;
use prof_test_support::serial;
use profiler_core::{session, trace, ProfileOptions};

fn prof_diff(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_prof-diff"))
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .expect("runs")
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

/// Records 12 steps of `load` then `work` (sleeping `work_ms`) into a new run of
/// `logdir`, and returns the file.
fn record(logdir: &Path, work_ms: u64) -> PathBuf {
    session::start(ProfileOptions::default(), None).expect("start");
    for step in 0..12 {
        let _s = trace!("Train", step_num = step);
        {
            let _l = trace!("load");
            std::thread::sleep(Duration::from_micros(200));
        }
        let _w = trace!("work");
        std::thread::sleep(Duration::from_millis(work_ms));
    }
    let profile = session::stop().expect("stop");
    let profile = profiler_export::write_logdir(logdir, profile).expect("written");
    profile.files()[0].clone()
}

/// Every path under `dir`.
fn tree(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).expect("listed") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path.clone());
            }
            found.insert(path);
        }
    }
    found
}

/// One test records both runs: sessions are one per process at a time.
#[test]
fn a_real_slowdown_fails_the_gate_and_the_same_run_passes_it() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let (base_dir, new_dir) = (dir.path().join("base"), dir.path().join("new"));
    let base = record(&base_dir, 1);
    // Four times the work: far beyond what a busy machine's scheduling adds.
    record(&new_dir, 4);
    let before = tree(dir.path());

    let out = prof_diff(&[&base_dir, &new_dir, &"--fail-if-slower", &"10"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let work = stdout
        .lines()
        .find(|l| l.contains(" work "))
        .expect("a row for work");
    assert!(work.contains("▲ slower"), "{stdout}");
    assert!(
        stdout.find(" work ") < stdout.find(" load "),
        "ranked first:\n{stdout}"
    );
    assert!(stdout.starts_with("base: 12 steps of host"), "{stdout}");
    assert!(stderr.contains("gate failed (10%)"), "{stderr}");
    assert!(
        stderr.contains("host \"work\" is slower by more than 10%"),
        "{stderr}"
    );

    // A run against itself: nothing moved, the gate passes.
    let out = prof_diff(&[&base, &base, &"--fail-if-slower", &"10"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("gate passed"));
    assert!(!text(&out.stdout).contains('▲'), "{}", text(&out.stdout));

    // JSON for scripts, whole on stdout with the gate on stderr.
    let out = prof_diff(&[
        &base_dir,
        &new_dir,
        &"--format",
        &"json",
        &"--fail-if-slower",
        &"10",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["ops"][0]["name"], "work");
    assert_eq!(json["ops"][0]["time_per_step_ns"]["verdict"], "increase");
    assert_eq!(json["step_time"]["verdict"], "increase");

    let out = prof_diff(&[
        &base_dir,
        &new_dir,
        &"--format",
        &"markdown",
        &"--top",
        &"1",
    ]);
    assert_eq!(out.status.code(), Some(0), "no gate asked for");
    let md = text(&out.stdout);
    assert!(
        md.contains("| Kind | Op |") && md.contains("| host | work |"),
        "{md}"
    );
    assert!(md.contains("more rows not shown"), "{md}");

    // Nothing was written beside the inputs (nor anywhere under them).
    assert_eq!(tree(dir.path()), before);
}

/// Xorshift rounds, with no call inside (a debug build calls `wrapping_mul` and
/// `Range::next`): the sampled frame is the function itself, which a build without
/// frame pointers can still name.
#[inline(never)]
fn tokenize(x: u64) -> u64 {
    let (mut x, mut i) = (x | 1, 0u32);
    while i < 100_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        i += 1;
    }
    std::hint::black_box(x)
}

/// As [`tokenize`], with other shifts: a function of its own.
#[inline(never)]
fn matmul(x: u64) -> u64 {
    let (mut x, mut i) = (x | 1, 0u32);
    while i < 100_000 {
        x ^= x << 5;
        x ^= x >> 9;
        x ^= x << 23;
        i += 1;
    }
    std::hint::black_box(x)
}

/// Records 4 steps of `forward` burning `tokenize_ms` then `matmul_ms` of CPU each,
/// its native stacks sampled at 1 kHz, into a new run of `logdir`.
fn record_sampled(logdir: &Path, tokenize_ms: u64, matmul_ms: u64) -> PathBuf {
    profiler_sampling::register();
    session::start(ProfileOptions::default().host_sampling_hz(1000), None).expect("start");
    for step in 0..4 {
        let _s = trace!("Train", step_num = step);
        let _f = trace!("forward");
        burn_for(Duration::from_millis(tokenize_ms), tokenize);
        burn_for(Duration::from_millis(matmul_ms), matmul);
    }
    let profile = session::stop().expect("stop");
    let profile = profiler_export::write_logdir(logdir, profile).expect("written");
    profile.files()[0].clone()
}

/// Real stack samples on both sides, the CPU moved from `matmul` to `tokenize`:
/// prof-diff says which function's share grew and which shrank, in every format.
#[cfg(target_os = "linux")]
#[test]
fn function_shares_that_moved_between_two_sampled_runs_are_named() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tmp");
    let (base_dir, new_dir) = (dir.path().join("base"), dir.path().join("new"));
    // 1:3 against 3:1 of 400 ms of CPU a side: ~400 samples each, a 50-point move.
    record_sampled(&base_dir, 25, 75);
    record_sampled(&new_dir, 75, 25);

    let out = prof_diff(&[&base_dir, &new_dir]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("Functions' share of the stack samples"),
        "{stdout}"
    );
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.contains(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{stdout}"))
            .to_owned()
    };
    assert!(row("tokenize").contains("▲ more"), "{stdout}");
    assert!(row("matmul").contains("▼ less"), "{stdout}");

    let out = prof_diff(&[&base_dir, &new_dir, &"--format", &"json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let functions = &json["functions"];
    assert!(
        functions["samples"]["base"].as_u64() > Some(100),
        "{functions}"
    );
    let verdict = |name: &str| {
        functions["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["name"].as_str().is_some_and(|n| n.ends_with(name)))
            .map(|r| r["verdict"].clone())
    };
    assert_eq!(verdict("tokenize"), Some("increase".into()), "{functions}");
    assert_eq!(verdict("matmul"), Some("decrease".into()), "{functions}");

    let out = prof_diff(&[&base_dir, &new_dir, &"--format", &"markdown"]);
    let md = text(&out.stdout);
    assert!(md.contains("| Function |"), "{md}");
}

#[test]
fn bad_input_is_named_and_exits_1() {
    let dir = tempfile::tempdir().expect("tmp");
    let missing = dir.path().join("nowhere.xplane.pb");
    let garbage = dir.path().join("broken.xplane.pb");
    std::fs::write(&garbage, b"\x0a\xff\xff\xff\xff\x0f not a profile").expect("write");
    for (base, new, says) in [
        (&missing, &garbage, "nowhere.xplane.pb"),
        (&garbage, &garbage, "broken.xplane.pb is not an XSpace"),
    ] {
        let out = prof_diff(&[base, new]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.starts_with("prof-diff: "), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }
}

#[test]
fn usage_errors_exit_2_and_help_and_version_exit_0() {
    for args in [
        &["a"][..],
        &["a", "b", "--fail-if-slower", "-3"],
        &["a", "b", "--format", "yaml"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_prof-diff"))
            .args(args)
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_prof-diff"))
        .args(["a", "b", "--fail-if-slow", "5"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--fail-if-slower"),
        "{}",
        text(&out.stderr)
    );
    for flag in ["--help", "--version"] {
        let out = Command::new(env!("CARGO_BIN_EXE_prof-diff"))
            .arg(flag)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert!(text(&out.stdout).contains("prof-diff"), "{flag}");
    }
}
