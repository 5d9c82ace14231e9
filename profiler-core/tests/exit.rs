//! The exit paths in-process: panic markers, the hook chain put back at stop, the
//! options. What ends the process (a main-thread panic, a signal, the exit) is proven
//! in child processes by `tests/exit` at the workspace root.

use std::panic::PanicHookInfo;
use std::sync::atomic::{AtomicUsize, Ordering};

use prof_test_support::read::{self, host};
use prof_test_support::serial;
use profiler_core::xspace::XStatValue;
use profiler_core::{session, trace, ConfigValue, ErrorKind, Profile, ProfileOptions};

type Hook = Box<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

fn address(hook: &Hook) -> usize {
    std::ptr::from_ref::<dyn Fn(&PanicHookInfo<'_>) + Sync + Send>(&**hook).cast::<()>() as usize
}

/// The `panic` markers of `profile`: line, message, location.
fn markers(profile: &Profile) -> Vec<(String, String, String)> {
    let plane = host(profile);
    let text = |stats: &[_], name| match plane.find_stat(stats, name) {
        Some(XStatValue::Str(s)) => s.clone(),
        Some(other) => plane.text_of(other).unwrap_or_default().to_owned(),
        None => String::new(),
    };
    plane
        .lines
        .iter()
        .flat_map(|l| l.events.iter().map(move |e| (l, e)))
        .filter(|(_, e)| plane.event_name(e.metadata_id) == Some("panic"))
        .map(|(l, e)| {
            (
                l.name.clone(),
                text(&e.stats, "message"),
                text(&e.stats, "location"),
            )
        })
        .collect()
}

fn panic_on(name: &str, message: &'static str) {
    let joined = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _t = trace!("job");
            panic!("{message}");
        })
        .expect("spawn")
        .join();
    assert!(joined.is_err(), "the thread panicked");
}

static CALLS: AtomicUsize = AtomicUsize::new(0);

/// A hook standing for the application's: counts its calls, prints nothing.
fn counting_hook() -> Hook {
    Box::new(|_| {
        CALLS.fetch_add(1, Ordering::SeqCst);
    })
}

#[test]
fn a_panic_on_a_thread_is_a_marker_on_its_line_and_the_session_goes_on() {
    let _s = serial();
    let before = std::panic::take_hook();
    std::panic::set_hook(counting_hook());
    session::start(ProfileOptions::default(), None).expect("start");
    let line = std::line!() + 1;
    panic_on("worker-7", "the batch was empty");
    drop(trace!("after"));
    let profile = session::stop().expect("the session survived the panic");
    std::panic::set_hook(before);
    let found = markers(&profile);
    assert_eq!(found.len(), 1, "{found:?}");
    let (on, message, location) = &found[0];
    assert_eq!(on, "worker-7");
    assert_eq!(message, "the batch was empty");
    // The panic's own place (inside `panic_on`), not the caller's.
    assert!(
        location.starts_with("profiler-core/tests/exit.rs:"),
        "{location}"
    );
    assert_ne!(location, &format!("profiler-core/tests/exit.rs:{line}"));
    assert!(read::all_names(&profile).contains(&"after".to_owned()));
}

#[test]
fn the_hook_chains_to_the_one_before_and_is_put_back_at_stop() {
    let _s = serial();
    let before = std::panic::take_hook();
    let theirs = counting_hook();
    let theirs_at = address(&theirs);
    std::panic::set_hook(theirs);
    let calls = CALLS.load(Ordering::SeqCst);
    session::start(ProfileOptions::default(), None).expect("start");
    panic_on("chained", "first");
    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        calls + 1,
        "the previous hook ran"
    );
    let profile = session::stop().expect("stop");
    assert_eq!(markers(&profile).len(), 1);
    let after = std::panic::take_hook();
    assert_eq!(
        address(&after),
        theirs_at,
        "the very hook that was there before"
    );
    std::panic::set_hook(after);
    // Without a session, panics are the application's alone.
    panic_on("later", "second");
    assert_eq!(CALLS.load(Ordering::SeqCst), calls + 2);
    std::panic::set_hook(before);
}

#[test]
fn a_hook_installed_over_ours_stays_and_ours_wakes_for_the_next_session() {
    let _s = serial();
    let before = std::panic::take_hook();
    session::start(ProfileOptions::default(), None).expect("start");
    // The application chains its own hook over prof's while the session records.
    let ours = std::panic::take_hook();
    let over: Hook = Box::new(move |info| {
        CALLS.fetch_add(1, Ordering::SeqCst);
        ours(info);
    });
    let over_at = address(&over);
    std::panic::set_hook(over);
    session::stop().expect("stop");
    let top = std::panic::take_hook();
    assert_eq!(address(&top), over_at, "theirs is kept");
    std::panic::set_hook(top);

    let calls = CALLS.load(Ordering::SeqCst);
    panic_on("idle", "no session: ours is inert");
    assert_eq!(CALLS.load(Ordering::SeqCst), calls + 1);
    session::start(ProfileOptions::default(), None).expect("start again");
    panic_on("woken", "ours acts again");
    let profile = session::stop().expect("stop");
    let found = markers(&profile);
    assert_eq!(
        found.len(),
        1,
        "one marker, not one per hook in the chain: {found:?}"
    );
    assert_eq!(found[0].0, "woken");
    assert_eq!(CALLS.load(Ordering::SeqCst), calls + 2);
    std::panic::set_hook(before);
}

#[test]
fn write_on_signals_needs_a_session_that_writes_somewhere() {
    let _s = serial();
    for options in [
        ProfileOptions::default().write_on_signals(true),
        ProfileOptions::default().advanced("write_on_signals", true),
    ] {
        assert!(options.writes_on_signals());
        let err = session::start(options, None).expect_err("nowhere to write");
        assert_eq!(err.kind(), ErrorKind::InvalidArgument);
        assert!(err.to_string().contains("write_on_signals"), "{err}");
        assert!(!session::is_running());
    }
    assert!(!ProfileOptions::default().writes_on_signals());
    assert!(!ProfileOptions::default()
        .advanced("write_on_signals", false)
        .writes_on_signals());
}

#[test]
fn the_keys_are_checked() {
    for (key, value, says) in [
        ("write_on_signals", ConfigValue::Int(1), "a bool"),
        (
            "write_on_signals_budget_ms",
            ConfigValue::Int(0),
            "a positive integer",
        ),
        (
            "write_on_signals_budget_ms",
            ConfigValue::Bool(true),
            "a positive integer",
        ),
    ] {
        let err = ProfileOptions::default()
            .advanced(key, value)
            .validate()
            .expect_err(key);
        assert!(
            err.to_string().contains(key) && err.to_string().contains(says),
            "{err}"
        );
    }
    let options = ProfileOptions::default().advanced("write_on_signals_budget_ms", 1500);
    options.validate().expect("valid");
    assert_eq!(options.signal_budget().as_millis(), 1500);
    assert_eq!(
        ProfileOptions::default().signal_budget().as_millis(),
        u128::from(profiler_core::options::DEFAULT_SIGNAL_BUDGET_MS)
    );
}

#[test]
fn a_panic_inside_prof_stopping_a_session_is_not_handled_again() {
    let _s = serial();
    let before = std::panic::take_hook();
    std::panic::set_hook(counting_hook());
    let calls = CALLS.load(Ordering::SeqCst);
    let finisher: session::Finisher = Box::new(|_| panic!("a writer failed"));
    session::start(ProfileOptions::default(), Some(finisher)).expect("start");
    drop(trace!("work"));
    let stopped = std::thread::Builder::new()
        .name("stopper".into())
        .spawn(session::stop)
        .expect("spawn")
        .join();
    assert!(stopped.is_err(), "the finisher's panic reached the caller");
    assert_eq!(CALLS.load(Ordering::SeqCst), calls + 1, "passed on once");
    assert!(!session::is_running(), "the session ended");
    // The exit paths were disarmed as the session ended, panic and all, and arm
    // again for the next one.
    session::start(ProfileOptions::default(), None).expect("a new session");
    panic_on("next", "recorded");
    assert_eq!(markers(&session::stop().expect("stop")).len(), 1);
    std::panic::set_hook(before);
}
