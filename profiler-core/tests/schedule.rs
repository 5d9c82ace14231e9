//! Step schedules: which steps each window records, and how many windows are handed
//! over, for several wait/warmup/active/repeat/skip_first settings.

use std::sync::{Arc, Mutex};

use prof_test_support::{read, serial};
use profiler_core::schedule::{Profiler, ProfilerAction, Schedule};
use profiler_core::{session, trace, ErrorKind, ProfileOptions};

/// Runs `steps` steps under `schedule`; returns the steps each window recorded and the
/// names of every event in it.
fn windows(schedule: Schedule, steps: u64) -> Vec<(Vec<i64>, Vec<String>)> {
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&got);
    let mut profiler = Profiler::new(ProfileOptions::default(), schedule)
        .expect("valid")
        .on_trace_ready(move |profile| {
            let names = read::all_names(&profile);
            sink.lock().expect("sink").push((profile.steps(), names));
            Ok(())
        });
    profiler.start().expect("start");
    for step in 0..steps {
        {
            let _t = trace!("Train", step_num = step);
            let _w = trace!("work");
        }
        profiler.step().expect("step");
    }
    profiler.stop().expect("stop");
    assert!(!session::is_running(), "no session outlives the profiler");
    let got = got.lock().expect("windows").clone();
    assert_eq!(profiler.windows_saved(), got.len() as u64);
    got
}

fn steps_of(w: &[(Vec<i64>, Vec<String>)]) -> Vec<Vec<i64>> {
    w.iter().map(|(s, _)| s.clone()).collect()
}

#[test]
fn windows_record_only_their_active_steps() {
    let _serial = serial();
    let w = windows(Schedule::new(1, 1, 2).repeat(2), 12);
    assert_eq!(steps_of(&w), [vec![2, 3], vec![6, 7]]);
    // Warm-up steps ran the tracer, but nothing of them is kept.
    for (_, names) in &w {
        assert_eq!(
            names.iter().filter(|n| *n == "work").count(),
            2,
            "{names:?}"
        );
    }
}

#[test]
fn skip_first_and_no_warmup() {
    let _serial = serial();
    let w = windows(Schedule::new(2, 0, 3).skip_first(4).repeat(1), 12);
    assert_eq!(steps_of(&w), [vec![6, 7, 8]]);
}

#[test]
fn repeat_zero_runs_until_stopped_and_hands_over_the_partial_window() {
    let _serial = serial();
    let w = windows(Schedule::new(0, 1, 2), 8);
    // Cycles of 3: W R S | W R S | W R (stopped mid-window).
    assert_eq!(steps_of(&w), [vec![1, 2], vec![4, 5], vec![7]]);
}

#[test]
fn active_one_saves_every_step() {
    let _serial = serial();
    let w = windows(Schedule::new(0, 0, 1).repeat(3), 5);
    assert_eq!(steps_of(&w), [vec![0], vec![1], vec![2]]);
}

#[test]
fn stopping_during_warmup_hands_over_nothing() {
    let _serial = serial();
    let w = windows(Schedule::new(1, 3, 1), 3);
    assert!(w.is_empty());
}

#[test]
fn actions_are_visible_and_misuse_is_an_error() {
    let _serial = serial();
    let mut profiler =
        Profiler::new(ProfileOptions::default(), Schedule::new(1, 1, 1)).expect("valid");
    let err = profiler.step().expect_err("not started");
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    profiler.start().expect("start");
    assert_eq!(profiler.current_action(), ProfilerAction::None);
    assert!(!session::is_running());
    profiler.step().expect("step");
    assert_eq!(profiler.current_action(), ProfilerAction::Warmup);
    assert!(session::is_running());
    assert_eq!(profiler.step_num(), 1);
    let err = profiler.start().expect_err("already started");
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    drop(profiler);
    assert!(!session::is_running(), "dropping stops it");

    let err =
        Profiler::new(ProfileOptions::default(), Schedule::new(1, 1, 0)).expect_err("active = 0");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn a_failing_callback_is_reported_and_the_next_window_still_opens() {
    let _serial = serial();
    let calls = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&calls);
    let mut profiler = Profiler::new(ProfileOptions::default(), Schedule::new(0, 0, 1))
        .expect("valid")
        .on_trace_ready(move |_| {
            *seen.lock().expect("calls") += 1;
            Err(profiler_core::Error::new(ErrorKind::Io, "disk full"))
        });
    profiler.start().expect("start");
    let err = profiler.step().expect_err("callback failed");
    assert!(err.to_string().contains("disk full"), "{err}");
    assert!(session::is_running(), "the next window is open");
    let _ = profiler.stop();
    assert_eq!(*calls.lock().expect("calls"), 2);
}

#[test]
fn a_window_that_cannot_open_leaves_the_running_session_alone() {
    let _serial = serial();
    let handed = Arc::new(Mutex::new(0));
    let seen = Arc::clone(&handed);
    let mut profiler = Profiler::new(ProfileOptions::default(), Schedule::new(1, 1, 1))
        .expect("valid")
        .on_trace_ready(move |_| {
            *seen.lock().expect("handed") += 1;
            Ok(())
        });
    profiler.start().expect("start");
    // The application's own session is running when the warm-up should begin.
    session::start(ProfileOptions::default(), None).expect("own session");
    drop(trace!("mine"));
    let err = profiler.step().expect_err("warm-up cannot open");
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    assert_eq!(profiler.current_action(), ProfilerAction::None);
    // Neither the window step nor stopping may discard, stop or hand over that session.
    let _ = profiler.step();
    profiler.stop().expect("stop");
    assert!(
        session::is_running(),
        "the application's session still runs"
    );
    let own = session::stop().expect("own stop");
    assert!(read::all_names(&own).contains(&"mine".to_owned()));
    assert_eq!(*handed.lock().expect("handed"), 0, "nothing handed over");
}
