//! Async tasks: polls on the threads that ran them, one lifetime event per task with
//! busy and idle time, and flows between polls that hop threads.
//!
//! Sessions are process-wide, so every test here holds `serial()`. This
//! binary installs `ProfilerLayer` as the global subscriber, so tokio's worker threads
//! see it too.
#![cfg(feature = "tracing")]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::task::{Context, Poll, Waker};

use prof_test_support::read::{host, name, span, stat};
use prof_test_support::serial;
use profiler_core::future::Instrumented;
use profiler_core::xspace::{XEvent, XLine, XPlane, XStatValue};
use profiler_core::{schema, session, Profile, ProfileOptions, ProfilerLayer};
use tracing::Instrument as _;
use tracing_subscriber::layer::SubscriberExt;

fn install_layer() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let subscriber = tracing_subscriber::registry().with(ProfilerLayer::new());
        tracing::subscriber::set_global_default(subscriber).expect("no other global subscriber");
    });
}

/// Pending once (waking itself), then ready: one more poll of whatever awaits it.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// A poll of a task: the line it ran on and the event there.
struct PollSeen<'a> {
    line: &'a XLine,
    event: &'a XEvent,
}

/// Every event named `task` on thread lines (not `Tasks` lines), in time order.
fn polls<'a>(plane: &'a XPlane, task: &str) -> Vec<PollSeen<'a>> {
    let mut polls: Vec<PollSeen<'a>> = plane
        .lines
        .iter()
        .filter(|l| !l.name.starts_with("Tasks"))
        .flat_map(|line| {
            line.events
                .iter()
                .filter(move |e| name(plane, e) == task)
                .map(move |event| PollSeen { line, event })
        })
        .collect();
    polls.sort_by_key(|p| span(p.line, p.event).0);
    polls
}

/// The lifetime events named `task` on the `Tasks` lines.
fn lifetimes<'a>(plane: &'a XPlane, task: &str) -> Vec<(&'a XLine, &'a XEvent)> {
    plane
        .lines
        .iter()
        .filter(|l| l.name.starts_with("Tasks"))
        .flat_map(|line| {
            line.events
                .iter()
                .filter(move |e| name(plane, e) == task)
                .map(move |e| (line, e))
        })
        .collect()
}

fn int(plane: &XPlane, e: &XEvent, key: &str) -> i64 {
    match stat(plane, e, key) {
        Some(XStatValue::Int64(v)) => v,
        other => panic!("stat {key}: {other:?}"),
    }
}

fn uint(plane: &XPlane, e: &XEvent, key: &str) -> Option<u64> {
    match stat(plane, e, key)? {
        XStatValue::Uint64(v) => Some(v),
        other => panic!("stat {key}: {other:?}"),
    }
}

/// Checks the task's lifetime against its polls: one event spanning first poll start
/// to last poll end, busy = time in polls, busy + idle = lifetime, and the poll and
/// thread counts.
fn check_lifetime(plane: &XPlane, task: &str, polls: &[PollSeen<'_>], polls_recorded: usize) {
    let lifetimes = lifetimes(plane, task);
    assert_eq!(lifetimes.len(), 1, "one lifetime event for {task}");
    let (line, life) = lifetimes[0];
    let (start, end) = span(line, life);
    let first = span(polls[0].line, polls[0].event);
    assert_eq!(start, first.0, "the lifetime starts with the first poll");
    if polls.len() == polls_recorded {
        let last_end = polls.iter().map(|p| span(p.line, p.event).1).max();
        assert_eq!(Some(end), last_end, "and ends with the last");
        let busy: i64 = polls.iter().map(|p| p.event.duration_ps / 1000).sum();
        assert_eq!(int(plane, life, "busy_ns"), busy);
    }
    let (busy, idle) = (int(plane, life, "busy_ns"), int(plane, life, "idle_ns"));
    assert!(busy > 0 && idle >= 0, "busy {busy} idle {idle}");
    assert_eq!(busy + idle, (end - start) / 1000, "busy + idle = lifetime");
    assert_eq!(int(plane, life, "polls"), polls_recorded as i64);
}

/// Checks that consecutive polls on different threads, and only those, are linked
/// producer → consumer with matching ids; returns the number of hops.
fn check_flows(plane: &XPlane, polls: &[PollSeen<'_>]) -> usize {
    let mut hops = 0;
    for pair in polls.windows(2) {
        let (from, to) = (&pair[0], &pair[1]);
        let produced = uint(plane, from.event, schema::PRODUCER_ID);
        let consumed = uint(plane, to.event, schema::CONSUMER_ID);
        if from.line.id != to.line.id {
            hops += 1;
            assert!(
                produced.is_some(),
                "a hop from {} has a producer",
                from.line.name
            );
            assert_eq!(produced, consumed, "both ends of a hop carry one id");
            assert_eq!(
                stat(plane, from.event, schema::PRODUCER_TYPE),
                Some(XStatValue::Int64(0))
            );
            assert_eq!(
                stat(plane, to.event, schema::CONSUMER_TYPE),
                Some(XStatValue::Int64(0))
            );
        } else {
            assert_eq!(produced, None, "no flow between polls on one thread");
            assert_eq!(consumed, None, "no flow between polls on one thread");
        }
    }
    hops
}

type Task = Pin<Box<Instrumented<Pin<Box<dyn Future<Output = ()> + Send>>>>>;

/// Polls `task` once; whether it finished.
fn poll_once(task: &mut Task) -> bool {
    task.as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
        .is_ready()
}

#[test]
fn a_future_polled_on_several_threads_is_one_task_with_flows_between_hops() {
    let _s = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    let body: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async {
        for _ in 0..3 {
            YieldOnce(false).await;
        }
    });
    let mut task: Task = Box::pin(Instrumented::new(body, "migrating"));
    // Four polls on two threads: hop-a, hop-b, hop-b, hop-a.
    let (to_b, at_b) = std::sync::mpsc::channel::<Task>();
    let (to_a, at_a) = std::sync::mpsc::channel::<Task>();
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("hop-a".into())
            .spawn_scoped(scope, move || {
                assert!(!poll_once(&mut task));
                to_b.send(task).expect("to b");
                let mut task = at_a.recv().expect("back at a");
                assert!(poll_once(&mut task), "done after four polls");
            })
            .expect("spawn");
        std::thread::Builder::new()
            .name("hop-b".into())
            .spawn_scoped(scope, move || {
                let mut task = at_b.recv().expect("at b");
                assert!(!poll_once(&mut task));
                assert!(!poll_once(&mut task));
                to_a.send(task).expect("to a");
            })
            .expect("spawn");
    });
    let profile = session::stop().expect("stop");

    let plane = host(&profile);
    let polls = polls(plane, "migrating");
    let threads: Vec<&str> = polls.iter().map(|p| p.line.name.as_str()).collect();
    assert_eq!(threads, ["hop-a", "hop-b", "hop-b", "hop-a"]);
    assert_eq!(check_flows(plane, &polls), 2);
    check_lifetime(plane, "migrating", &polls, 4);
    let (_, life) = lifetimes(plane, "migrating")[0];
    assert_eq!(int(plane, life, "threads"), 2);
    // The internal tag never leaks out as a stat.
    assert!(plane.stat_id("$task").is_none());
}

/// A tokio multi-thread runtime whose workers are named `worker-<n>`.
fn runtime() -> tokio::runtime::Runtime {
    let next = Arc::new(AtomicUsize::new(0));
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .thread_name_fn(move || format!("worker-{}", next.fetch_add(1, Ordering::Relaxed)))
        .enable_time()
        .build()
        .expect("runtime")
}

/// A task on `rt` that waits `rounds` times for a message sent from outside the
/// runtime (so any idle worker may pick it up), noting the thread of every poll.
/// `wrap` instruments it; returns the thread of each of its polls, in order.
fn pipeline_task<F, W>(rt: &tokio::runtime::Runtime, rounds: usize, wrap: W) -> Vec<String>
where
    W: FnOnce(Pin<Box<dyn Future<Output = ()> + Send>>) -> F,
    F: Future<Output = ()> + Send + 'static,
{
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let body = async move {
        for _ in 0..rounds {
            rx.recv().await.expect("message");
        }
    };
    let seen = Arc::new(Mutex::new(Vec::new()));
    let noted = NotePolls {
        inner: Box::pin(body),
        seen: Arc::clone(&seen),
    };
    let handle = rt.spawn(wrap(Box::pin(noted)));
    for _ in 0..rounds {
        std::thread::sleep(std::time::Duration::from_micros(200));
        tx.send(()).expect("send");
    }
    rt.block_on(handle).expect("task");
    let seen = seen.lock().expect("seen").clone();
    seen
}

/// Notes the thread of every poll of the future it wraps: under load one poll may
/// take several messages, and a task may be polled without one.
struct NotePolls {
    inner: Pin<Box<dyn Future<Output = ()> + Send>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Future for NotePolls {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let name = std::thread::current().name().unwrap_or("?").to_owned();
        self.seen.lock().expect("seen").push(name);
        self.inner.as_mut().poll(cx)
    }
}

#[test]
fn tokio_task_under_a_tracing_span_shows_every_poll_at_level_3() {
    let _s = serial();
    install_layer();
    let rt = runtime();
    session::start(ProfileOptions::default().host_tracer_level(3), None).expect("start");
    let ran_on = pipeline_task(&rt, 40, |body| {
        body.instrument(tracing::info_span!("loader"))
    });
    let profile = session::stop().expect("stop");

    let plane = host(&profile);
    let polls = polls(plane, "loader");
    let lines: Vec<&str> = polls.iter().map(|p| p.line.name.as_str()).collect();
    // tracing's `Instrumented` enters its span once more, to drop the inner future.
    assert_eq!(lines.len(), ran_on.len() + 1);
    assert_eq!(
        lines[..ran_on.len()],
        ran_on,
        "each poll on the line of the thread that ran it"
    );
    // Which worker picks up a wake-up from outside is up to tokio: hops are usual
    // but not certain, so only their links are checked (the hop itself is checked
    // deterministically above).
    let hops = lines.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(check_flows(plane, &polls), hops);
    check_lifetime(plane, "loader", &polls, lines.len());
    drop(rt);
}

#[test]
fn tokio_task_under_prof_instrument_is_a_task_at_every_level() {
    let _s = serial();
    let rt = runtime();
    session::start(ProfileOptions::default().host_tracer_level(1), None).expect("start");
    let ran_on = pipeline_task(&rt, 40, |body| Instrumented::new(body, "prefetch"));
    let profile = session::stop().expect("stop");

    let plane = host(&profile);
    let polls = polls(plane, "prefetch");
    let lines: Vec<&str> = polls.iter().map(|p| p.line.name.as_str()).collect();
    assert_eq!(lines, ran_on);
    let hops = ran_on.windows(2).filter(|w| w[0] != w[1]).count();
    assert_eq!(check_flows(plane, &polls), hops);
    check_lifetime(plane, "prefetch", &polls, ran_on.len());
}

#[test]
fn at_level_2_a_tracing_task_has_its_polls_and_lifetime_but_no_flows() {
    let _s = serial();
    install_layer();
    let rt = runtime();
    session::start(ProfileOptions::default(), None).expect("start");
    let ran_on = pipeline_task(&rt, 10, |body| {
        body.instrument(tracing::info_span!("loader"))
    });
    let profile = session::stop().expect("stop");

    let plane = host(&profile);
    let polls = polls(plane, "loader");
    // The polls, and the entry in which tracing's `Instrumented` drops its future.
    assert_eq!(polls.len(), ran_on.len() + 1);
    for p in &polls {
        assert_eq!(uint(plane, p.event, schema::PRODUCER_ID), None);
        assert_eq!(uint(plane, p.event, schema::CONSUMER_ID), None);
    }
    check_lifetime(plane, "loader", &polls, polls.len());
}

#[test]
fn a_layer_span_entered_on_every_forward_pass_is_not_a_task() {
    let _s = serial();
    install_layer();
    // As candle-transformers does: the span lives in the model, entered per call.
    let attn = tracing::trace_span!("attn");
    session::start(ProfileOptions::default().host_tracer_level(3), None).expect("start");
    for _ in 0..3 {
        let _e = attn.enter();
    }
    let profile = session::stop().expect("stop");
    let plane = host(&profile);
    assert_eq!(
        polls(plane, "attn").len(),
        3,
        "every entry on the thread's line"
    );
    assert!(lifetimes(plane, "attn").is_empty(), "but no task");
}

#[test]
fn concurrent_tasks_get_their_own_lanes_and_single_entry_spans_are_not_tasks() {
    let _s = serial();
    install_layer();
    let rt = runtime();
    session::start(ProfileOptions::default(), None).expect("start");
    rt.block_on(async {
        let tasks: Vec<_> = (0..3)
            .map(|_| {
                tokio::spawn(
                    async {
                        for _ in 0..5 {
                            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                        }
                    }
                    .instrument(tracing::info_span!("sleeper")),
                )
            })
            .collect();
        for t in tasks {
            t.await.expect("task");
        }
        let _once = tracing::info_span!("once").entered();
    });
    let profile: Profile = session::stop().expect("stop");

    let plane = host(&profile);
    let lives = lifetimes(plane, "sleeper");
    assert_eq!(lives.len(), 3);
    let mut lanes: Vec<&str> = lives.iter().map(|(l, _)| l.name.as_str()).collect();
    lanes.sort_unstable();
    lanes.dedup();
    assert_eq!(
        lanes,
        ["Tasks", "Tasks 2", "Tasks 3"],
        "overlapping lifetimes on separate lanes"
    );
    for line in plane.lines.iter().filter(|l| l.name.starts_with("Tasks")) {
        for pair in line.events.windows(2) {
            assert!(
                span(line, &pair[0]).1 <= span(line, &pair[1]).0,
                "no overlap within a lane"
            );
        }
    }
    assert!(
        lifetimes(plane, "once").is_empty(),
        "a span entered once is no task"
    );
    assert_eq!(polls(plane, "once").len(), 1);
}

#[test]
fn a_span_entered_twice_and_closed_is_a_task_whether_its_close_follows_its_exit_or_not() {
    let _s = serial();
    install_layer();
    session::start(ProfileOptions::default(), None).expect("start");
    // `right_after` closes as soon as its last entry ends: the close is a flag on that
    // entry's event. `later` closes after another span's exit: a record of its own.
    let right_after = tracing::info_span!("right_after");
    drop(right_after.enter());
    drop(right_after.enter());
    drop(right_after);
    let later = tracing::info_span!("later");
    let other = tracing::info_span!("other");
    drop(later.enter());
    drop(later.enter());
    drop(other.enter());
    drop(later);
    drop(other);
    let profile = session::stop().expect("stop");
    let plane = host(&profile);
    for task in ["right_after", "later"] {
        let polls = polls(plane, task);
        assert_eq!(polls.len(), 2, "{task}: both entries");
        check_lifetime(plane, task, &polls, 2);
    }
    assert!(
        lifetimes(plane, "other").is_empty(),
        "entered once: no task"
    );
}
