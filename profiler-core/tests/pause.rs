//! Pause and resume: nothing is recorded while paused, annotations that straddle a
//! pause still close, and the pause shows on the `Profiler` line.

use std::time::Duration;

use prof_test_support::{read, serial};
use profiler_core::{schema, session, trace, Counter, ErrorKind, ProfileOptions};

static DEPTH: Counter = Counter::new("pause_depth");

#[test]
fn nothing_is_recorded_while_paused() {
    let _serial = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    let outer = trace!("straddles");
    {
        let _t = trace!("before");
        DEPTH.set(1);
    }
    session::pause().expect("pause");
    assert!(session::is_paused());
    session::pause().expect("pausing twice is harmless");
    {
        let _t = trace!("while_paused");
        DEPTH.set(2);
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::spawn(|| {
        let _t = trace!("paused_elsewhere");
    })
    .join()
    .expect("thread");
    session::resume().expect("resume");
    assert!(!session::is_paused());
    {
        let _t = trace!("after");
        DEPTH.set(3);
    }
    drop(outer);
    let profile = session::stop().expect("stop");

    let names = read::all_names(&profile);
    assert!(!names.iter().any(|n| n.contains("paused")), "{names:?}");
    assert_eq!(profile.counter_samples("pause_depth"), [1.0, 3.0]);
    assert_eq!(profile.event_count(), 3);

    let host = read::host(&profile);
    let mine = read::my_line(host);
    let span = |name: &str| {
        let e = mine
            .events
            .iter()
            .find(|e| read::name(host, e) == name)
            .unwrap_or_else(|| panic!("no {name}"));
        read::span(mine, e)
    };
    let (before_start, before_end) = span("before");
    let (after_start, _) = span("after");
    let (outer_start, outer_end) = span("straddles");
    assert!(outer_start <= before_start && outer_end >= after_start);

    let profiler = read::line(host, schema::PROFILER_LINE);
    assert_eq!(profiler.id, i64::from(schema::PROFILER_LINE_ID));
    assert_eq!(read::names(host, profiler), [schema::PAUSED]);
    let (pause_start, pause_end) = read::span(profiler, &profiler.events[0]);
    assert!(pause_start >= before_end && pause_end <= after_start);
    assert!(
        pause_end - pause_start >= 5_000_000_000,
        "the 5 ms sleep is inside"
    );
}

#[test]
fn a_pause_still_open_at_stop_ends_with_the_session() {
    let _serial = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    {
        let _t = trace!("work");
    }
    session::pause().expect("pause");
    let profile = session::stop().expect("stop");
    let host = read::host(&profile);
    let profiler = read::line(host, schema::PROFILER_LINE);
    assert_eq!(profiler.events.len(), 1);
    assert_eq!(profile.event_count(), 1);
    // The next session starts unpaused.
    session::start(ProfileOptions::default(), None).expect("start");
    assert!(!session::is_paused());
    {
        let _t = trace!("work");
    }
    assert_eq!(session::stop().expect("stop").event_count(), 1);
}

#[test]
fn pause_and_resume_need_a_session() {
    let _serial = serial();
    let err = session::pause().expect_err("no session");
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    assert!(err.to_string().contains("pause"), "{err}");
    let err = session::resume().expect_err("no session");
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
}

#[test]
fn a_pause_during_the_start_delay_keeps_the_gate_shut() {
    let _serial = serial();
    session::start(ProfileOptions::default().delay_ms(20), None).expect("start");
    session::pause().expect("pause");
    std::thread::sleep(Duration::from_millis(60));
    {
        let _t = trace!("paused_after_delay");
    }
    session::resume().expect("resume");
    {
        let _t = trace!("resumed");
    }
    let profile = session::stop().expect("stop");
    assert_eq!(read::all_names(&profile), ["resumed", schema::PAUSED]);
}
