//! The installed `prof-convert` binary: every file of a logdir is tried, a bad one is
//! named and fails the run without stopping the others.

use std::process::Command;

use prof_test_support::serial;
use profiler_core::{session, trace, ProfileOptions};

#[test]
fn a_bad_file_is_named_and_the_rest_still_converts() {
    let dir = tempfile::tempdir().expect("tmp");
    let logdir = dir.path().join("logs");
    // Sessions are process-wide: one test records at a time.
    let _serial = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    for step in 0..3 {
        let _t = trace!("Train", step_num = step);
    }
    let profile =
        profiler_export::write_logdir(&logdir, session::stop().expect("stop")).expect("written");
    let good = profile.files()[0].clone();
    let run = good.parent().expect("run dir");
    let bad = run.join("broken.xplane.pb");
    std::fs::write(&bad, b"\x0a\xff\xff\xff\xff\x0f not a profile").expect("write");

    let out = Command::new(env!("CARGO_BIN_EXE_prof-convert"))
        .arg(&logdir)
        .args(["--format", "perfetto"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("broken.xplane.pb"), "{stderr}");
    assert!(stderr.contains("1 file(s) converted, 1 failed"), "{stderr}");
    let written: Vec<_> = std::fs::read_dir(run)
        .expect("run dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pftrace"))
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");

    let usage = Command::new(env!("CARGO_BIN_EXE_prof-convert"))
        .arg(&logdir)
        .args(["--format", "xplane"])
        .output()
        .expect("runs");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn an_empty_file_converts_with_a_warning_that_the_profile_is_empty() {
    let dir = tempfile::tempdir().expect("tmp");
    let empty = dir.path().join("host.xplane.pb");
    std::fs::write(&empty, b"").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_prof-convert"))
        .arg(&empty)
        .args(["--format", "perfetto"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // An empty file is a valid, empty XSpace: converted, and said to be empty.
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(dir.path().join("host.pftrace").is_file());
    assert!(
        stderr.contains("warning") && stderr.contains("host.xplane.pb") && stderr.contains("empty"),
        "{stderr}"
    );
}

#[test]
fn a_profile_with_stack_samples_gets_its_pprof_file_listed_beside_the_traces() {
    use profiler_export::pprof::proto::{Function, Line, Location, Sample, ValueType};
    use profiler_export::pprof::samples::SampleTime;
    use profiler_export::pprof::{Profile, StackSamples, Strings};

    let dir = tempfile::tempdir().expect("tmp");
    // Sessions are process-wide: one test records at a time.
    let _serial = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    for step in 0..3 {
        let _t = trace!("Train", step_num = step);
    }
    let mut profile = session::stop().expect("stop");
    // The plane a sampling session adds: one stack, sampled twice.
    let mut strings = Strings::default();
    let cpu = ValueType {
        r#type: strings.id("cpu"),
        unit: strings.id("nanoseconds"),
    };
    let pprof = Profile {
        sample_type: vec![cpu.clone()],
        period_type: Some(cpu),
        period: 1_000_000,
        function: vec![Function {
            id: 1,
            name: strings.id("forward"),
            ..Function::default()
        }],
        location: vec![Location {
            id: 1,
            address: 0x1000,
            line: vec![Line {
                function_id: 1,
                ..Line::default()
            }],
            ..Location::default()
        }],
        sample: vec![Sample {
            location_id: vec![1],
            value: vec![2_000_000],
            label: Vec::new(),
        }],
        string_table: strings.into_table(),
        ..Profile::default()
    };
    let samples = StackSamples {
        profile: pprof.clone(),
        times: vec![
            SampleTime { ns: 10, sample: 0 },
            SampleTime { ns: 20, sample: 0 },
        ],
        backend: "perf_event".into(),
        hz: 1000,
        ..StackSamples::default()
    };
    profile.xspace_mut().planes.push(samples.to_plane());
    let input = dir.path().join("host.xplane.pb");
    profiler_export::xplane::write(&input, profile.xspace()).expect("write");

    let out_dir = dir.path().join("out");
    let out = Command::new(env!("CARGO_BIN_EXE_prof-convert"))
        .arg(&input)
        .args(["--format", "perfetto", "--out"])
        .arg(&out_dir)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = out_dir.join("host.pprof.pb.gz");
    assert!(
        stdout.contains(&format!("-> {}", written.display())),
        "the pprof file is not listed: {stdout}"
    );
    assert!(stdout.contains("host.pftrace"), "{stdout}");
    let read = Profile::from_bytes(&std::fs::read(&written).expect("pprof beside")).expect("pprof");
    assert_eq!(read, pprof);

    // Without samples, no pprof file and none listed.
    let plain = dir.path().join("plain.xplane.pb");
    let mut space = profiler_export::xplane::read(&input).expect("read");
    space
        .planes
        .retain(|p| p.name != profiler_core::schema::STACK_SAMPLES_PLANE);
    profiler_export::xplane::write(&plain, &space).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_prof-convert"))
        .arg(&plain)
        .args(["--format", "perfetto"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("pprof"));
    assert!(!dir.path().join("plain.pprof.pb.gz").exists());
}
