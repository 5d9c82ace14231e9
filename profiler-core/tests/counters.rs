//! Counters: samples on the `_counters_` line, in time order, only while recording.

use prof_test_support::{read, serial};
use profiler_core::xspace::XStatValue;
use profiler_core::{schema, session, trace, Counter, ProfileOptions};

static DEPTH: Counter = Counter::new("queue_depth");
static LOSS: Counter = Counter::new("loss");

#[test]
fn samples_follow_updates_in_time_order() {
    let _serial = serial();
    DEPTH.set(0.0);
    session::start(ProfileOptions::default(), None).expect("start");
    DEPTH.set(4);
    DEPTH.increment(1);
    {
        let _t = trace!("step");
        LOSS.set(0.75);
    }
    std::thread::spawn(|| DEPTH.decrement(2))
        .join()
        .expect("thread");
    DEPTH.increment(0.5);
    let profile = session::stop().expect("stop");

    assert_eq!(profile.counter_samples("queue_depth"), [4.0, 5.0, 3.0, 3.5]);
    assert_eq!(profile.counter_samples("loss"), [0.75]);
    assert_eq!(DEPTH.value(), 3.5);
    // Samples are not events; the step is.
    assert_eq!(
        profile.event_count(),
        1,
        "{:?}",
        profile
            .xspace()
            .planes
            .iter()
            .flat_map(|p| p.lines.iter().map(|l| (&l.name, l.events.len())))
            .collect::<Vec<_>>()
    );

    let host = read::host(&profile);
    let line = read::line(host, schema::COUNTERS_LINE);
    assert_eq!(line.id, i64::from(schema::COUNTERS_LINE_ID));
    let starts: Vec<_> = line
        .events
        .iter()
        .map(|e| line.timestamp_ns * 1000 + e.offset_ps())
        .collect();
    assert!(starts.windows(2).all(|w| w[0] <= w[1]), "{starts:?}");
    assert!(line.events.iter().all(|e| e.duration_ps == 0));
    let value = host.stat_id(schema::COUNTER_VALUE).expect("value stat");
    assert!(line.events.iter().all(|e| e
        .stats
        .iter()
        .any(|s| s.metadata_id == value && matches!(s.value, Some(XStatValue::Double(_))))));
}

#[test]
fn updates_while_off_record_and_change_nothing() {
    let _serial = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    LOSS.set(2.0);
    let _ = session::stop().expect("stop");
    LOSS.set(9.0);
    LOSS.increment(1.0);
    assert_eq!(
        LOSS.value(),
        2.0,
        "one atomic load and nothing else while off"
    );
    session::start(ProfileOptions::default(), None).expect("start");
    let profile = session::stop().expect("stop");
    assert!(profile.counter_samples("loss").is_empty());
    let host = read::host(&profile);
    assert!(host.lines.iter().all(|l| l.name != schema::COUNTERS_LINE));
}

#[test]
fn reserved_names_are_refused() {
    // Its panics would be recorded as `panic` markers in another test's session.
    let _serial = serial();
    assert!(std::panic::catch_unwind(|| Counter::new("$closed")).is_err());
    assert!(std::panic::catch_unwind(|| Counter::new("")).is_err());
    assert_eq!(Counter::new("x").name(), "x");
}

#[test]
fn add_assign_and_sub_assign_update_and_record() {
    static STEPS: Counter = Counter::new("assign_steps");
    let _serial = serial();
    STEPS.set(0.0);
    session::start(ProfileOptions::default(), None).expect("start");
    let mut steps = &STEPS;
    steps += 3;
    steps -= 1.5;
    let mut local = Counter::new("assign_local");
    local += 2;
    local -= 0.5;
    let profile = session::stop().expect("stop");
    assert_eq!(profile.counter_samples("assign_steps"), [3.0, 1.5]);
    assert_eq!(profile.counter_samples("assign_local"), [2.0, 1.5]);
    assert_eq!(local.value(), 1.5);
}
