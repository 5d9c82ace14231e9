//! `ProfilerLayer`: `tracing` spans and events on prof's timeline.
//!
//! Sessions are process-wide, so every test here holds `serial()`.
#![cfg(feature = "tracing")]

use insta::assert_snapshot;
use prof_test_support::read::{all_names, host, my_line, names, span, stat};
use prof_test_support::{serial, tree};
use profiler_core::xspace::XStatValue;
use profiler_core::{session, trace, Profile, ProfileOptions, ProfilerLayer};
use tracing_subscriber::layer::SubscriberExt;

/// Runs `f` with a registry + ProfilerLayer as this thread's subscriber.
fn with_layer<R>(f: impl FnOnce() -> R) -> R {
    let subscriber = tracing_subscriber::registry().with(ProfilerLayer::new());
    tracing::subscriber::with_default(subscriber, f)
}

fn profile_of(options: ProfileOptions, f: impl FnOnce()) -> Profile {
    session::start(options, None).expect("start");
    with_layer(f);
    session::stop().expect("stop")
}

#[test]
fn tracing_spans_and_annotations_nest_on_one_line() {
    let _s = serial();
    let profile = profile_of(ProfileOptions::default(), || {
        for step in 0..2i64 {
            let _t = trace!("Train", step_num = step);
            let attn = tracing::trace_span!("attn", heads = 8u32, kind = "self");
            let _a = attn.enter();
            {
                let _m = tracing::debug_span!("mlp").entered();
                let _inner = trace!("matmul");
            }
        }
    });
    let plane = host(&profile);
    assert_snapshot!(tree::line(plane, my_line(plane)), @r#"
    Train step_num=0 _r=1
        attn heads=8 kind="self"
            mlp
                matmul
    Train step_num=1 _r=1
        attn heads=8 kind="self"
            mlp
                matmul
    "#);
    assert_eq!(profile.steps(), [0, 1]);
}

#[test]
fn recorded_fields_land_on_their_event() {
    let _s = serial();
    let profile = profile_of(ProfileOptions::default(), || {
        let span = tracing::info_span!(
            "load",
            in_cache = tracing::field::Empty,
            bytes = tracing::field::Empty
        );
        span.record("bytes", 10u64); // before the span is entered
        let entered = span.enter();
        {
            let _child = tracing::info_span!("decode").entered();
        }
        span.record("in_cache", true); // while entered, after a child
        drop(entered);
        let _again = span.enter(); // a later entry carries every field
    });
    let plane = host(&profile);
    assert_snapshot!(tree::line(plane, my_line(plane)), @r"
    load bytes=10 in_cache=1
        decode
    load bytes=10 in_cache=1
    ");
}

#[test]
fn a_step_num_field_makes_a_step() {
    let _s = serial();
    let profile = profile_of(ProfileOptions::default(), || {
        for step in 0..3u64 {
            let _s = tracing::info_span!("train_step", step_num = step).entered();
            let _w = tracing::info_span!("work").entered();
        }
    });
    assert_eq!(profile.steps(), [0, 1, 2]);
    let plane = host(&profile);
    assert_snapshot!(tree::line(plane, my_line(plane)), @r"
    train_step step_num=0 _r=1
        work
    train_step step_num=1 _r=1
        work
    train_step step_num=2 _r=1
        work
    ");
}

#[test]
fn host_tracer_level_decides_what_is_kept() {
    let _s = serial();
    let work = || {
        let _user = trace!("user");
        let _span = tracing::trace_span!("library").entered();
        tracing::info!(batch = 3, "loaded {} items", 3);
    };
    let recorded = |level| {
        all_names(&profile_of(
            ProfileOptions::default().host_tracer_level(level),
            work,
        ))
    };
    assert!(recorded(0).is_empty());
    assert_eq!(recorded(1), ["user"]);
    assert_eq!(recorded(2), ["user", "library"]);
    let verbose = recorded(3);
    assert_eq!(verbose.len(), 3, "{verbose:?}");
    assert!(
        verbose[2].starts_with("event "),
        "tracing events as instants: {verbose:?}"
    );

    let profile = profile_of(ProfileOptions::default().host_tracer_level(3), work);
    let plane = host(&profile);
    let event = &my_line(plane).events[2];
    assert_eq!(event.duration_ps, 0, "an instant");
    assert_eq!(stat(plane, event, "batch"), Some(XStatValue::Int64(3)));
    assert_eq!(
        stat(plane, event, "message"),
        Some(XStatValue::Str("loaded 3 items".into()))
    );
}

#[test]
fn out_of_order_and_unclosed_spans_do_not_corrupt_others() {
    let _s = serial();
    let profile = profile_of(ProfileOptions::default(), || {
        let a = tracing::info_span!("a");
        let b = tracing::info_span!("b");
        let ga = a.enter();
        let gb = b.enter();
        drop(ga); // a exits before b
        drop(gb);
        let never = tracing::info_span!("never_closed");
        std::mem::forget(never.enter());
        let _after = tracing::info_span!("after").entered();
    });
    let plane = host(&profile);
    let line = my_line(plane);
    let got = names(plane, line);
    for expected in ["a", "b", "never_closed", "after"] {
        assert!(got.contains(&expected), "{expected} missing from {got:?}");
    }
    let never = line
        .events
        .iter()
        .find(|e| plane.event_name(e.metadata_id) == Some("never_closed"))
        .expect("never_closed");
    let after = line
        .events
        .iter()
        .find(|e| plane.event_name(e.metadata_id) == Some("after"))
        .expect("after");
    // The unclosed span ends with the session, so it encloses what came after it.
    assert!(span(line, never).1 >= span(line, after).1);
}

#[test]
fn eight_threads_of_many_spans_lose_nothing() {
    let _s = serial();
    const THREADS: usize = 8;
    const SPANS: usize = 100_000;
    session::start(ProfileOptions::default(), None).expect("start");
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            std::thread::Builder::new()
                .name(format!("spanner-{t}"))
                .spawn_scoped(scope, move || {
                    with_layer(|| {
                        for _ in 0..SPANS {
                            let _s = tracing::trace_span!("op").entered();
                        }
                    })
                })
                .expect("spawn");
        }
    });
    let profile = session::stop().expect("stop");
    assert!(profile.warnings().is_empty(), "{:?}", profile.warnings());
    let plane = host(&profile);
    for t in 0..THREADS {
        let line = plane
            .lines
            .iter()
            .find(|l| l.name == format!("spanner-{t}"))
            .expect("line");
        assert_eq!(line.events.len(), SPANS, "thread {t}");
    }
}

#[test]
fn spans_are_ignored_while_no_session_runs() {
    let _s = serial();
    with_layer(|| {
        let _s = tracing::info_span!("before").entered();
    });
    let profile = profile_of(ProfileOptions::default(), || {});
    assert_eq!(profile.event_count(), 0);
}

// The layer names an entry from the span it saw created last on the thread, when the
// ids match, instead of looking the span up. These two cases are where a bare id
// match would give the wrong span.

#[test]
fn spans_of_two_subscribers_with_one_id_keep_their_names() {
    let _s = serial();
    let first = tracing::Dispatch::new(tracing_subscriber::registry().with(ProfilerLayer::new()));
    let second = tracing::Dispatch::new(tracing_subscriber::registry().with(ProfilerLayer::new()));
    session::start(ProfileOptions::default(), None).expect("start");
    let a = tracing::dispatcher::with_default(&first, || tracing::info_span!("a"));
    let b = tracing::dispatcher::with_default(&second, || tracing::info_span!("b"));
    assert_eq!(
        a.id(),
        b.id(),
        "two fresh registries give out the same first id"
    );
    // Each span enters through its own subscriber, whichever is the default.
    drop(a.enter());
    drop(b.enter());
    drop(a.enter());
    drop((a, b));
    let profile = session::stop().expect("stop");
    let plane = host(&profile);
    assert_eq!(names(plane, my_line(plane)), ["a", "b", "a"]);
}

#[test]
fn a_span_made_while_paused_in_a_reused_slot_keeps_its_name() {
    let _s = serial();
    let subscriber =
        tracing::Dispatch::new(tracing_subscriber::registry().with(ProfilerLayer::new()));
    session::start(ProfileOptions::default(), None).expect("start");
    let profile = tracing::dispatcher::with_default(&subscriber, || {
        let old = tracing::info_span!("old");
        let old_id = old.id().expect("enabled");
        drop(old);
        session::pause().expect("pause");
        // The registry reuses the freed slot with the next generation each time; its
        // generations wrap after a few thousand, giving `old`'s id to a new span that
        // the layer never saw created.
        let mut new = None;
        for _ in 0..1 << 20 {
            let span = tracing::info_span!("new");
            if span.id().as_ref() == Some(&old_id) {
                new = Some(span);
                break;
            }
        }
        let new = new.expect("the registry gave out the old id again");
        session::resume().expect("resume");
        drop(new.enter());
        drop(new);
        session::stop().expect("stop")
    });
    let plane = host(&profile);
    assert_eq!(names(plane, my_line(plane)), ["new"]);
}
