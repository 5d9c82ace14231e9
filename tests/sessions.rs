//! The `prof` facade: sessions that write TensorBoard logdirs, and their errors.
//!
//! Sessions are process-wide, so every test here holds `serial()`.

use std::path::Path;

use prof::{ErrorKind, ProfileOptions};
use prof_test_support::serial;

fn runs(logdir: &Path) -> Vec<std::path::PathBuf> {
    let mut runs: Vec<_> = std::fs::read_dir(logdir.join("plugins/profile"))
        .map(|d| d.map(|e| e.expect("entry").path()).collect())
        .unwrap_or_default();
    runs.sort();
    runs
}

#[test]
fn start_stop_writes_one_readable_run() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    prof::start(dir.path(), ProfileOptions::default()).expect("start");
    for step in 0..4 {
        let _t = prof::trace!("Train", step_num = step);
        let _c = prof::trace!("forward");
    }
    let profile = prof::stop().expect("stop");
    let runs = runs(dir.path());
    assert_eq!(runs.len(), 1);
    let file = &profile.files()[0];
    assert_eq!(file.parent(), Some(runs[0].as_path()));
    let expected = format!(
        "{}.xplane.pb",
        prof::export::logdir::host_file_stem(profile.host_name())
    );
    assert_eq!(
        file.file_name().and_then(|n| n.to_str()),
        Some(expected.as_str())
    );
    let space = prof::export::xplane::read(file).expect("decode");
    assert_eq!(
        &space,
        profile.xspace(),
        "the file holds exactly the returned profile"
    );
    assert_eq!(profile.steps(), [0, 1, 2, 3]);
}

#[test]
fn scoped_and_closure_sessions_write_on_exit() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let _session = prof::Session::start(dir.path(), ProfileOptions::default()).expect("start");
        let _t = prof::trace!("scoped");
    }
    assert_eq!(
        runs(dir.path()).len(),
        1,
        "dropping the session wrote a run"
    );
    assert_eq!(
        prof::stop().expect_err("already stopped").kind(),
        ErrorKind::FailedPrecondition
    );

    let (answer, profile) = prof::profile(dir.path(), ProfileOptions::default(), || {
        let _t = prof::trace!("inside");
        42
    })
    .expect("profile");
    assert_eq!(answer, 42);
    assert_eq!(profile.event_count(), 1);
    assert_eq!(runs(dir.path()).len(), 2, "a fresh run per session");
}

#[test]
fn bad_logdir_is_rejected_at_start() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("file");
    std::fs::write(&file, b"").expect("write");
    let err =
        prof::start(file.join("logs"), ProfileOptions::default()).expect_err("parent is a file");
    // The same kind as capture-profile's check of a logdir (logdir::check_writable).
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(err.to_string().contains("logs"), "{err}");
    // The OS's reason is the source, said once along the chain.
    let io = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("the io::Error is kept as the source");
    assert!(!err.to_string().contains(&io.to_string()), "{err}");
    assert!(format!("{err:?}").ends_with(&io.to_string()), "{err:?}");
    assert_eq!(
        prof::stop().expect_err("nothing started").kind(),
        ErrorKind::FailedPrecondition
    );
}

/// `prof::start("gs://b/logs")` once made a local directory `gs:`. A URL is a URL in
/// every build: with the `object-store` feature it is written there, without it it is
/// refused naming the feature; a malformed one (`gs:/…`, a scheme prof does not know)
/// is refused in both, and nothing is created where the program runs.
#[test]
fn object_storage_urls_are_never_local_directories() {
    let _s = serial();
    for (logdir, said) in [
        ("gs:/prof-test/logs", "one slash"),
        ("hdfs://namenode/logs", "scheme `hdfs`"),
        ("s3://", "no bucket"),
    ] {
        let err = prof::start(logdir, ProfileOptions::default()).expect_err(logdir);
        assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{logdir}: {err}");
        assert!(err.to_string().contains(said), "{logdir}: {err}");
        let flight = prof::flight_recorder::start_in(
            logdir,
            ProfileOptions::default(),
            prof::flight_recorder::FlightRecorder::new(64),
        );
        assert_eq!(flight.expect_err(logdir).kind(), ErrorKind::InvalidArgument);
    }
    for made in ["gs:", "s3:", "hdfs:"] {
        assert!(!Path::new(made).exists(), "{made} was created");
    }
}

#[test]
fn logdir_lost_during_the_session_keeps_the_profile() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let logdir = dir.path().join("logs");
    prof::start(&logdir, ProfileOptions::default()).expect("start");
    {
        let _t = prof::trace!("precious", step_num = 1);
    }
    // The logdir becomes unusable before stop: a file where the directory was.
    std::fs::remove_dir_all(&logdir).expect("remove");
    std::fs::write(&logdir, b"").expect("replace with a file");
    let err = prof::stop().expect_err("cannot write");
    assert_eq!(err.kind(), ErrorKind::Io);
    assert!(err.to_string().contains("logs"), "names the path: {err}");
    let profile = err.into_profile().expect("the recorded profile comes back");
    assert_eq!(profile.steps(), [1]);
    assert!(profile.files().is_empty());
}

#[test]
fn second_start_fails_and_the_first_session_still_writes() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    prof::start(dir.path(), ProfileOptions::default()).expect("start");
    let err = prof::start(dir.path(), ProfileOptions::default()).expect_err("second");
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    let err =
        prof::start(dir.path(), ProfileOptions::default().host_tracer_level(9)).expect_err("bad");
    assert_eq!(
        err.kind(),
        ErrorKind::InvalidArgument,
        "options are checked first"
    );
    prof::stop().expect("stop");
    assert_eq!(runs(dir.path()).len(), 1);
}

#[test]
fn duration_ms_writes_the_run_without_stop() {
    let _s = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    prof::start(dir.path(), ProfileOptions::default().duration_ms(50)).expect("start");
    {
        let _t = prof::trace!("auto");
    }
    for _ in 0..200 {
        if !runs(dir.path()).is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(
        runs(dir.path()).len(),
        1,
        "written when the duration elapsed"
    );
    let profile = prof::stop().expect("stop returns the auto-stopped profile");
    assert_eq!(profile.event_count(), 1);
}

/// XProf opens no `.xplane.pb` over 2 GiB. Past its limit (here a few kilobytes, as
/// `max_xplane_bytes` allows for tests), a session's file keeps its most recent whole
/// steps, the whole session goes to a Perfetto trace beside it, and both say so.
#[test]
fn a_session_past_its_xplane_limit_keeps_its_latest_whole_steps() {
    use prof::export::perfetto::proto;
    use prost::Message;

    let _s = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let limit = 12 << 10;
    let (steps, per_step) = (40i64, 30u64);
    prof::start(
        dir.path(),
        ProfileOptions::default().max_xplane_bytes(limit),
    )
    .expect("start");
    for step in 0..steps {
        let _t = prof::trace!("Train", step_num = step);
        for i in 0..per_step {
            let _op = prof::trace!("op", i = i);
        }
    }
    let profile = prof::stop().expect("stop");
    let events = profile.event_count() as u64;
    assert_eq!(events, steps as u64 * (per_step + 1));

    let [xplane, pftrace] = profile.files() else {
        panic!("an .xplane.pb and a .pftrace: {:?}", profile.files())
    };
    let name = |p: &Path| p.file_name().expect("name").to_string_lossy().into_owned();
    assert!(name(xplane).ends_with(".xplane.pb") && name(pftrace).ends_with(".pftrace"));
    assert_eq!(xplane.parent(), pftrace.parent());
    let bytes = std::fs::metadata(xplane).expect("file").len();
    assert!(bytes <= limit, "{bytes} bytes, over {limit}");

    // The file: the most recent steps, each whole (its root and every op).
    let cut = prof::Profile::new(prof::export::xplane::read(xplane).expect("decode"));
    let kept = cut.steps();
    assert!(!kept.is_empty() && kept.len() < steps as usize, "{kept:?}");
    let first = steps - kept.len() as i64;
    assert_eq!(kept, (first..steps).collect::<Vec<_>>());
    let kept_events = cut.event_count() as u64;
    assert_eq!(kept_events, kept.len() as u64 * (per_step + 1));

    // The Perfetto trace: every event of the session.
    let trace = proto::Trace::decode(std::fs::read(pftrace).expect("read").as_slice())
        .expect("a Perfetto trace");
    let slices = trace
        .packet
        .iter()
        .filter_map(|p| p.track_event.as_ref()?.r#type)
        .filter(|&t| t == proto::TYPE_SLICE_BEGIN || t == proto::TYPE_INSTANT)
        .count() as u64;
    assert_eq!(slices, events);

    // The warning, in the profile and in the file, names both files.
    let warning = profile
        .warnings()
        .iter()
        .find(|w| w.contains(&name(xplane)))
        .unwrap_or_else(|| panic!("{:?}", profile.warnings()));
    assert!(warning.contains(&name(pftrace)), "{warning}");
    assert!(
        warning.contains(&format!("last {} of {steps} steps", kept.len())),
        "{warning}"
    );
    assert!(cut.warnings().contains(warning));
    // The Task Environment plane's stats, and the summary's note.
    let env = cut
        .xspace()
        .plane(prof::schema::TASK_ENV_PLANE)
        .expect("task environment");
    let stat = |n| env.find_stat(&env.stats, n).cloned();
    use prof::xspace::XStatValue;
    assert_eq!(
        stat(prof::export::fit::EVENTS_LEFT_OUT),
        Some(XStatValue::Uint64(events - kept_events))
    );
    assert_eq!(
        stat(prof::export::fit::STEPS_LEFT_OUT),
        Some(XStatValue::Uint64(steps as u64 - kept.len() as u64))
    );
    assert_eq!(
        stat(prof::export::fit::FULL_TRACE),
        Some(XStatValue::Str(name(pftrace)))
    );
    use prof::ProfileAnalysis;
    let summary = profile.summary(&prof::summary::SummaryOptions::default());
    let [note] = summary.notes() else {
        panic!("{:?}", summary.notes())
    };
    assert!(note.contains(&name(pftrace)), "{note}");
    assert!(summary.table().contains(note.as_str()));
}
