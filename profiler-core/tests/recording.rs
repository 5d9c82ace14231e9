//! Sessions and annotations end to end: what is recorded lands in the XSpace, whole.
//!
//! Sessions are process-wide, so every test here holds `serial()`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use insta::assert_snapshot;
use prof_test_support::read::{all_names, host, line, my_line, name, span, stat, this_thread};
use prof_test_support::{serial, tree};
use profiler_core::xspace::XStatValue;
use profiler_core::{session, set_metadata, trace, ErrorKind, ProfileOptions};

#[test]
fn threads_record_thousands_of_nested_annotations_without_loss() {
    let _s = serial();
    const THREADS: usize = 4;
    const OUTER: i64 = 2_000;
    session::start(ProfileOptions::default(), None).expect("start");
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            std::thread::Builder::new()
                .name(format!("worker-{t}"))
                .spawn_scoped(scope, move || {
                    for i in 0..OUTER {
                        let _outer = trace!("outer", i = i, thread = t, label = "a string field");
                        let _mid = trace!("mid", ratio = i as f64 / 2.0);
                        let inner = trace!("inner");
                        inner.set_metadata("odd", i % 2 == 1);
                    }
                })
                .expect("spawn");
        }
    });
    let profile = session::stop().expect("stop");
    assert!(profile.warnings().is_empty(), "{:?}", profile.warnings());
    let plane = host(&profile);
    let mut ids = std::collections::HashSet::new();
    for t in 0..THREADS {
        let line = line(plane, &format!("worker-{t}"));
        assert!(
            ids.insert(line.id as u32),
            "line ids collide in their low 32 bits"
        );
        assert_eq!(line.events.len(), 3 * OUTER as usize);
        // Sorted: parents first, and each triple nests.
        let mut seen = Vec::new();
        for triple in line.events.chunks(3) {
            let names: Vec<_> = triple.iter().map(|e| name(plane, e)).collect();
            assert_eq!(names, ["outer", "mid", "inner"]);
            let (o, m, n) = (
                span(line, &triple[0]),
                span(line, &triple[1]),
                span(line, &triple[2]),
            );
            assert!(o.0 <= m.0 && m.1 <= o.1, "mid inside outer: {o:?} {m:?}");
            assert!(m.0 <= n.0 && n.1 <= m.1, "inner inside mid: {m:?} {n:?}");
            let Some(XStatValue::Int64(i)) = stat(plane, &triple[0], "i") else {
                panic!("outer lacks i")
            };
            assert_eq!(
                stat(plane, &triple[0], "thread"),
                Some(XStatValue::Int64(t as i64))
            );
            assert_eq!(
                stat(plane, &triple[0], "label"),
                Some(XStatValue::Str("a string field".into()))
            );
            assert_eq!(
                stat(plane, &triple[1], "ratio"),
                Some(XStatValue::Double(i as f64 / 2.0))
            );
            assert_eq!(
                stat(plane, &triple[2], "odd"),
                Some(XStatValue::Int64(i % 2))
            );
            seen.push(i);
        }
        assert_eq!(
            seen,
            (0..OUTER).collect::<Vec<_>>(),
            "every iteration, in order"
        );
        for pair in line.events.windows(2) {
            assert!(
                (pair[0].offset_ps(), -pair[0].duration_ps)
                    <= (pair[1].offset_ps(), -pair[1].duration_ps),
                "events sorted by start, then longest first"
            );
        }
    }
}

#[test]
fn steps_carry_int64_step_num_and_the_root_marker() {
    let _s = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    for step in 0u64..3 {
        let _t = trace!("Train", step_num = step);
        let _c = trace!("work");
    }
    let profile = session::stop().expect("stop");
    assert_eq!(profile.steps(), [0, 1, 2]);
    let plane = host(&profile);
    // An Int64 step_num (a u64 would show as `0u`), and the root marker on steps only.
    assert_snapshot!(tree::line(plane, my_line(plane)), @r"
    Train step_num=0 _r=1
        work
    Train step_num=1 _r=1
        work
    Train step_num=2 _r=1
        work
    ");
}

#[test]
fn deferred_fields_land_on_their_event_after_children() {
    let _s = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    {
        let outer = trace!("lookup");
        {
            let _child = trace!("child", k = 1);
        }
        outer.set_metadata("in_cache", true);
        set_metadata!(outer, bytes = 4096u32, source = String::from("disk"));
        outer.set_metadata("bytes", 8192u32); // a later value replaces the earlier one
    }
    let profile = session::stop().expect("stop");
    let plane = host(&profile);
    assert_snapshot!(tree::line(plane, my_line(plane)), @r#"
    lookup in_cache=1 bytes=8192 source="disk"
        child k=1
    "#);
}

static EVALUATED: AtomicUsize = AtomicUsize::new(0);

fn costly() -> u64 {
    EVALUATED.fetch_add(1, Ordering::Relaxed);
    7
}

#[test]
fn nothing_is_evaluated_or_recorded_without_a_session() {
    let _s = serial();
    EVALUATED.store(0, Ordering::Relaxed);
    {
        let t = trace!("off", value = costly());
        assert!(!t.is_recording());
        set_metadata!(t, more = costly());
    }
    assert_eq!(
        EVALUATED.load(Ordering::Relaxed),
        0,
        "fields evaluated while off"
    );
    session::start(ProfileOptions::default(), None).expect("start");
    {
        let t = trace!("on", value = costly());
        set_metadata!(t, more = costly());
    }
    let profile = session::stop().expect("stop");
    assert_eq!(EVALUATED.load(Ordering::Relaxed), 2);
    let names = all_names(&profile);
    assert_eq!(
        names,
        ["on"],
        "the annotation made before start is not recorded"
    );
}

#[test]
fn host_tracer_level_zero_records_nothing() {
    let _s = serial();
    session::start(ProfileOptions::default().host_tracer_level(0), None).expect("start");
    {
        let t = trace!("ignored");
        assert!(!t.is_recording());
    }
    let profile = session::stop().expect("stop");
    assert_eq!(profile.event_count(), 0);
}

#[test]
fn session_errors_are_precise() {
    let _s = serial();
    let err = session::stop().expect_err("stop without start");
    assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
    assert!(
        err.to_string().contains("no profiling session is running"),
        "{err}"
    );

    let err = session::start(ProfileOptions::default().advanced("bogus_key", 1), None)
        .expect_err("unknown key");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.to_string().contains("bogus_key"), "{err}");
    assert!(
        !session::is_running(),
        "a rejected start leaves no session behind"
    );

    session::start(ProfileOptions::default(), None).expect("start");
    let err = session::start(ProfileOptions::default(), None).expect_err("second start");
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
    {
        let _t = trace!("still recorded");
    }
    let profile = session::stop().expect("the first session is intact");
    assert_eq!(profile.event_count(), 1);
    assert_eq!(
        session::stop().expect_err("stopped twice").kind(),
        ErrorKind::FailedPrecondition
    );
}

#[test]
fn cap_drops_are_counted_and_reported() {
    let _s = serial();
    session::start(ProfileOptions::default().max_events(101), None).expect("start");
    for i in 0..150 {
        let _t = trace!("capped", i = i);
    }
    let profile = session::stop().expect("stop");
    // Each event with one field takes two records: 50 events fit whole, the 51st
    // without its field (a field that does not fit is dropped on its own).
    assert_eq!(profile.event_count(), 51);
    let warning = profile.warnings().join("\n");
    assert!(
        warning.contains("99 events and 1 fields were dropped"),
        "{warning}"
    );
    assert!(warning.contains("max_events"), "{warning}");
    assert_eq!(
        profile.xspace().warnings,
        profile.warnings(),
        "the warning is in the XSpace"
    );
}

#[test]
fn threads_that_exited_before_stop_are_kept() {
    let _s = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    std::thread::Builder::new()
        .name("short-lived".into())
        .spawn(|| {
            let _t = trace!("brief");
        })
        .expect("spawn")
        .join()
        .expect("join");
    let profile = session::stop().expect("stop");
    let plane = host(&profile);
    assert_eq!(name(plane, &line(plane, "short-lived").events[0]), "brief");
}

#[test]
fn recording_from_a_destructor_after_the_threads_buffer_is_gone_is_ignored() {
    // Runs after the buffer's registration is dropped: thread-local destructors run
    // in the reverse order of first use, and this one is used before the first record.
    struct Late;
    impl Drop for Late {
        fn drop(&mut self) {
            let _t = trace!("too_late", i = 1);
        }
    }
    thread_local!(static LATE: Late = const { Late });

    let _s = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    std::thread::Builder::new()
        .name("exiting".into())
        .spawn(|| {
            LATE.with(|_| {});
            // The thread now holds slots claimed from the session's budget.
            let _t = trace!("early");
        })
        .expect("spawn")
        .join()
        .expect("the thread exits cleanly");
    let profile = session::stop().expect("stop");
    let names = all_names(&profile);
    assert!(names.contains(&"early".to_owned()));
    assert!(!names.contains(&"too_late".to_owned()), "{names:?}");
}

#[test]
fn open_annotations_end_at_stop_and_later_sessions_start_clean() {
    let _s = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    let open = trace!("spans the stop");
    std::thread::sleep(Duration::from_millis(2));
    let first = session::stop().expect("stop");
    session::start(ProfileOptions::default(), None).expect("restart");
    drop(open); // closing an event of the old session must not touch the new one
    {
        let _t = trace!("second session");
    }
    let second = session::stop().expect("stop");

    let plane = host(&first);
    let line = line(plane, &this_thread());
    let e = &line.events[0];
    assert_eq!(name(plane, e), "spans the stop");
    let (start_ns, stop_ns) = first.wall_time_ns().expect("task environment");
    let session_ps = (stop_ns - start_ns) as i64 * 1000;
    assert!(
        e.duration_ps >= 2_000_000_000,
        "lasted until stop: {} ps",
        e.duration_ps
    );
    assert!(
        span(line, e).1 <= session_ps + 1_000_000,
        "clipped to the session"
    );

    assert_eq!(all_names(&second), ["second session"]);
}

#[test]
fn timestamps_are_relative_and_wall_clock_is_kept() {
    let _s = serial();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as u64;
    session::start(ProfileOptions::default(), None).expect("start");
    std::thread::sleep(Duration::from_millis(5));
    {
        let _t = trace!("late");
        std::thread::sleep(Duration::from_millis(1));
    }
    let profile = session::stop().expect("stop");
    let (start, stop) = profile.wall_time_ns().expect("task environment");
    assert!(before <= start && start < stop, "{before} {start} {stop}");
    let line = line(host(&profile), &this_thread());
    // Relative to the session start, not the epoch (which overflows XProf's ps math).
    assert!(
        (4_000_000..1_000_000_000).contains(&line.timestamp_ns),
        "line starts {} ns after the session start",
        line.timestamp_ns
    );
    assert!(line.events[0].duration_ps >= 1_000_000_000);
    assert_eq!(profile.xspace().hostnames, [profiler_core::host_name()]);
}

#[test]
fn delay_and_duration_bound_the_recording() {
    let _s = serial();
    let opts = ProfileOptions::default().delay_ms(300).duration_ms(400);
    let started = std::time::Instant::now();
    session::start(opts, None).expect("start");
    {
        let t = trace!("during the delay");
        assert!(!t.is_recording() || started.elapsed() >= Duration::from_millis(300));
    }
    // Bounded waits: for the gate to open, then for the timer to stop the session.
    let wait_until = |what: &str, done: &dyn Fn() -> bool| {
        for _ in 0..500 {
            if done() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("timed out waiting for {what}");
    };
    wait_until("the delay to end", &|| profiler_core::gate::is_open(1));
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "recording began early"
    );
    {
        let _t = trace!("recorded");
    }
    wait_until("duration_ms to stop the session", &|| {
        !session::is_running()
    });
    {
        let t = trace!("after the duration");
        assert!(!t.is_recording());
    }
    let profile = session::stop().expect("stop hands over the finished profile");
    assert_eq!(all_names(&profile), ["recorded"]);
    let (start, stop) = profile.wall_time_ns().expect("task environment");
    let ms = (stop - start) / 1_000_000;
    assert!((390..5_000).contains(&ms), "recorded for {ms} ms");
    assert_eq!(
        session::stop().expect_err("handed over once").kind(),
        ErrorKind::FailedPrecondition
    );
}

/// Events with two and three scalar fields: records of three slots, which straddle
/// the ends of chunks (1024 slots), and of four, which fill them exactly. Each field
/// stays with its event, whichever way its slots were taken.
#[test]
fn scalar_fields_stay_with_their_event_across_chunks() {
    let _s = serial();
    const EVENTS: i64 = 20_000;
    session::start(ProfileOptions::default(), None).expect("start");
    for i in 0..EVENTS {
        if i % 2 == 0 {
            let _t = trace!("two", a = i, b = i * 2);
        } else {
            let _t = trace!("three", a = i, b = i * 3, c = i % 5 == 0);
        }
    }
    let profile = session::stop().expect("stop");
    let plane = host(&profile);
    let line = line(plane, &this_thread());
    let int = |e, key| match stat(plane, e, key) {
        Some(XStatValue::Int64(v)) => v,
        other => panic!("{key}: {other:?}"),
    };
    let mut seen = Vec::new();
    for e in &line.events {
        let a = int(e, "a");
        match name(plane, e) {
            "two" => {
                assert_eq!(a % 2, 0);
                assert_eq!(int(e, "b"), a * 2, "event {a}");
                assert_eq!(stat(plane, e, "c"), None, "event {a}");
            }
            "three" => {
                assert_eq!(a % 2, 1);
                assert_eq!(int(e, "b"), a * 3, "event {a}");
                assert_eq!(int(e, "c"), i64::from(a % 5 == 0), "event {a}");
            }
            other => panic!("unexpected {other}"),
        }
        seen.push(a);
    }
    assert_eq!(seen, (0..EVENTS).collect::<Vec<_>>());
}

#[test]
fn unicode_and_long_string_fields_survive() {
    let _s = serial();
    let long: String = "αβγ".repeat(2000); // 12000 bytes: cut at 4096 on a char boundary
    session::start(ProfileOptions::default(), None).expect("start");
    {
        let _t = trace!("strings", short = "ünïcode", long = long.as_str());
    }
    let profile = session::stop().expect("stop");
    let plane = host(&profile);
    let e = &line(plane, &this_thread()).events[0];
    assert_eq!(
        stat(plane, e, "short"),
        Some(XStatValue::Str("ünïcode".into()))
    );
    let Some(XStatValue::Str(cut)) = stat(plane, e, "long") else {
        panic!("long string missing")
    };
    assert_eq!(cut.len(), 4096);
    assert!(long.starts_with(&cut));
    let counts: HashMap<_, _> = plane
        .stat_metadata
        .values()
        .map(|m| (m.name.as_str(), m.id))
        .collect();
    assert!(
        counts.values().all(|id| *id >= 1),
        "stat metadata ids start at 1"
    );
}

/// Past its first chunks, a thread's buffer gives its pages back as `stop` reads it;
/// the next session that records as much on the thread writes them anew, whole.
#[test]
fn a_long_session_then_another_on_the_same_thread_record_whole() {
    let _s = serial();
    let events = 1_200_000u64; // more than the 1Mi records kept
    for (round, name) in ["first", "second"].into_iter().enumerate() {
        session::start(ProfileOptions::default().max_events(2 * events), None).expect("start");
        for i in 0..events {
            if name == "first" {
                let _t = trace!("first", i = i);
            } else {
                let _t = trace!("second");
            }
        }
        let profile = session::stop().expect("stop");
        assert!(profile.warnings().is_empty(), "{:?}", profile.warnings());
        let plane = profile
            .xspace()
            .plane(profiler_core::schema::HOST_PLANE)
            .expect("host");
        let line = plane
            .lines
            .iter()
            .max_by_key(|l| l.events.len())
            .expect("a line");
        assert_eq!(line.events.len() as u64, events, "round {round}");
        let id = plane
            .event_metadata
            .values()
            .find(|m| m.name == name)
            .expect("named")
            .id;
        assert!(
            line.events.iter().all(|e| e.metadata_id == id),
            "round {round}"
        );
        if name == "first" {
            let i = plane.stat_id("i").expect("field");
            let last = line.events.last().expect("events");
            assert_eq!(
                last.stat(Some(i)).and_then(XStatValue::as_i64),
                Some(events as i64 - 1)
            );
        }
    }
}
