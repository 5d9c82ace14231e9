//! The child program of `tests/exit.rs`: `exit-child SCENARIO LOGDIR [ARGS]` records
//! a session into LOGDIR and ends the way SCENARIO says. What it prints on stdout is
//! its protocol with the parent (`ready`, `sigcgt <hex>`, ...); prof's own line, if
//! any, goes to stderr.
//!
//! Built twice: by `cargo test` (panics unwind), and with `--profile panic-abort`
//! (every panic aborts), which CI's exit step points the tests at.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use prof::ProfileOptions;

/// How long a scenario waiting for a signal waits before giving up on it (the parent
/// sees it exit 0 and fails).
const WAIT_FOR_SIGNAL: Duration = Duration::from_secs(30);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(scenario), Some(logdir)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: exit-child SCENARIO LOGDIR [ARGS]");
        std::process::exit(2);
    };
    let logdir = logdir.as_str();
    let number = |i: usize| -> u64 { args.get(i).and_then(|a| a.parse().ok()).unwrap_or(0) };
    match scenario.as_str() {
        "main-panic" => main_panic(logdir),
        "worker-panic" => worker_panic(logdir),
        "main-returns" => main_returns(logdir),
        "process-exit" => process_exit(logdir),
        "signal" => wait_for_signal(logdir, ProfileOptions::default().write_on_signals(true)),
        "signal-key" => wait_for_signal(
            logdir,
            ProfileOptions::default().advanced("write_on_signals", true),
        ),
        "sigcgt" => sigcgt(logdir),
        "previous-handler" => previous_handler(logdir),
        "big" => big(logdir, number(3), number(4), number(5)),
        other => {
            eprintln!("exit-child: unknown scenario {other:?}");
            std::process::exit(2);
        }
    }
}

fn start(logdir: &str, options: ProfileOptions) {
    prof::start(logdir, options).expect("start");
}

/// Training steps `steps`, each with a bit of nested work, as XProf counts steps.
fn steps(steps: std::ops::Range<u64>) {
    for step in steps {
        let _step = prof::trace!("Train", step_num = step);
        let _work = prof::trace!("work");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").expect("stdout");
    out.flush().expect("stdout");
}

/// Steps 0-4, then a panic on the main thread, outside any step.
fn main_panic(logdir: &str) {
    start(logdir, ProfileOptions::default());
    steps(0..5);
    panic!("boom after 5 steps");
}

/// Steps 0-1, a worker thread that panics inside its own step, then steps 2-4 and a
/// normal stop: the session goes on past the worker's panic (unless panics abort).
fn worker_panic(logdir: &str) {
    start(logdir, ProfileOptions::default());
    steps(0..2);
    let worker = std::thread::Builder::new()
        .name("worker".into())
        .spawn(|| {
            let _t = prof::trace!("worker_job");
            panic!("the worker failed");
        })
        .expect("spawn");
    assert!(worker.join().is_err(), "the worker panicked");
    steps(2..5);
    let profile = prof::stop().expect("the session still runs after the worker's panic");
    say(&format!("stopped: {}", profile.files()[0].display()));
}

/// Steps 0-2, and `main` returns without `stop`.
fn main_returns(logdir: &str) {
    start(logdir, ProfileOptions::default());
    steps(0..3);
}

/// Steps 0-2, and `std::process::exit(3)` without `stop`.
fn process_exit(logdir: &str) {
    start(logdir, ProfileOptions::default());
    steps(0..3);
    std::process::exit(3);
}

/// Steps 0-4, `ready`, then more steps until a signal ends the process (or 30 s pass).
fn wait_for_signal(logdir: &str, options: ProfileOptions) {
    start(logdir, options);
    steps(0..5);
    say("ready");
    let until = Instant::now() + WAIT_FOR_SIGNAL;
    let mut step = 5;
    while Instant::now() < until {
        steps(step..step + 1);
        step += 1;
    }
    prof::stop().expect("stop");
    say("no signal came");
}

/// The process's caught signals (`SigCgt` of /proc/self/status): without the option,
/// with it, and after that session stopped.
fn sigcgt(logdir: &str) {
    for (what, options) in [
        ("without", ProfileOptions::default()),
        ("with", ProfileOptions::default().write_on_signals(true)),
    ] {
        start(logdir, options);
        say(&format!("{what} {}", caught()));
        prof::stop().expect("stop");
    }
    say(&format!("after {}", caught()));
}

fn caught() -> String {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .expect("SigCgt")
        .trim()
        .to_owned()
}

static HANDLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_term(_: libc::c_int) {
    HANDLED.store(true, Ordering::SeqCst);
}

/// The program's own SIGTERM handler, installed before the session: after prof wrote
/// the profile it runs, the program goes on, and `stop` hands over what was written.
#[allow(unsafe_code)]
fn previous_handler(logdir: &str) {
    // SAFETY: a zeroed sigaction is valid; `on_term` only stores to an atomic.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_term as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGTERM, &action, std::ptr::null_mut()),
            0
        );
    }
    start(logdir, ProfileOptions::default().write_on_signals(true));
    steps(0..5);
    say("ready");
    let until = Instant::now() + WAIT_FOR_SIGNAL;
    let mut step = 5;
    while !HANDLED.load(Ordering::SeqCst) && Instant::now() < until {
        steps(step..step + 1);
        step += 1;
    }
    say(&format!("handler ran: {}", HANDLED.load(Ordering::SeqCst)));
    let profile = prof::stop().expect("stop hands over the profile the signal wrote");
    say(&format!("stopped: {}", profile.files()[0].display()));
}

/// `events` events in steps of 1000 in a session whose `.xplane.pb` is cut at
/// `max_bytes`, also written as Chrome JSON (slow: the rest after the cut file takes a
/// while), `ready`, then idle until a signal (or 60 s).
fn big(logdir: &str, events: u64, max_bytes: u64, budget_ms: u64) {
    let mut options = ProfileOptions::default()
        .write_on_signals(true)
        .max_events(2 * events + 1024)
        .max_xplane_bytes(max_bytes)
        .export_format(prof::ExportFormat::ChromeJson);
    if budget_ms > 0 {
        options = options.advanced("write_on_signals_budget_ms", budget_ms as i64);
    }
    start(logdir, options);
    for step in 0..events / 1000 {
        let _step = prof::trace!("Train", step_num = step);
        for _ in 0..999 {
            let _t = prof::trace!("op");
        }
    }
    say("ready");
    std::thread::sleep(2 * WAIT_FOR_SIGNAL);
    say("no signal came");
}
