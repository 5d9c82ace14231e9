//! MXNet's profiling objects: domains own lines, intervals may start and stop on
//! different threads, markers land where their scope says.

use std::time::Duration;

use prof_test_support::{read, serial};
use profiler_core::domain::{Domain, Event, Frame, Marker, MarkerScope, Task};
use profiler_core::xspace::XStatValue;
use profiler_core::{schema, session, ProfileOptions};

static PIPELINE: Domain = Domain::new("pipeline");
static OTHER: Domain = Domain::new("other");
static PREFETCH: Task = Task::new(&PIPELINE, "prefetch");
static UPLOAD: Task = Task::new(&PIPELINE, "upload");
static EPOCH: Frame = Frame::new(&PIPELINE, "epoch");
static LOOSE: Event = Event::new("loose");
static CHECKPOINT: Marker = Marker::new(&PIPELINE, "checkpoint");
static HERE: Marker = Marker::new(&OTHER, "here");
static EVERYWHERE: Marker = Marker::new(&OTHER, "everywhere");

fn str_stat(
    plane: &profiler_core::xspace::XPlane,
    e: &profiler_core::xspace::XEvent,
    key: &str,
) -> String {
    match read::stat(plane, e, key) {
        Some(XStatValue::Str(s)) => s,
        other => panic!("{key}: {other:?}"),
    }
}

#[test]
fn objects_land_on_their_domain_lines() {
    let _serial = serial();
    session::start(ProfileOptions::default(), None).expect("start");
    EPOCH.start();
    PREFETCH.start();
    std::thread::sleep(Duration::from_millis(2));
    // Overlaps prefetch without nesting in it: a second lane.
    UPLOAD.start();
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_millis(2));
        PREFETCH.stop();
        LOOSE.start();
    })
    .join()
    .expect("thread");
    LOOSE.stop();
    UPLOAD.stop();
    CHECKPOINT.mark(MarkerScope::Process);
    HERE.mark(MarkerScope::Thread);
    EVERYWHERE.mark(MarkerScope::Global);
    EPOCH.stop();
    let profile = session::stop().expect("stop");

    let host = read::host(&profile);
    let pipeline = read::line(host, "pipeline");
    assert!(pipeline.id >= i64::from(schema::DOMAIN_LINES_ID));
    // epoch holds prefetch and the checkpoint; upload overlaps prefetch.
    assert_eq!(
        read::names(host, pipeline),
        ["epoch", "prefetch", "checkpoint"]
    );
    let lane = read::line(host, "pipeline (2)");
    assert_eq!(read::names(host, lane), ["upload"]);
    let (epoch_start, epoch_end) = read::span(pipeline, &pipeline.events[0]);
    let (prefetch_start, prefetch_end) = read::span(pipeline, &pipeline.events[1]);
    assert!(epoch_start <= prefetch_start && prefetch_end <= epoch_end);
    assert!(
        prefetch_end - prefetch_start >= 4_000_000_000,
        "started here, stopped there"
    );
    assert_eq!(str_stat(host, &pipeline.events[0], schema::OBJECT), "frame");
    assert_eq!(str_stat(host, &pipeline.events[1], schema::OBJECT), "task");
    assert_eq!(
        str_stat(host, &pipeline.events[2], schema::OBJECT),
        "marker"
    );
    assert_eq!(
        str_stat(host, &pipeline.events[2], schema::SCOPE),
        "process"
    );

    let events = read::line(host, "Events");
    assert_eq!(read::names(host, events), ["loose"]);
    assert_eq!(str_stat(host, &events.events[0], schema::OBJECT), "event");

    let other = read::line(host, "other");
    assert_eq!(read::names(host, other), ["everywhere"]);
    assert_eq!(str_stat(host, &other.events[0], schema::SCOPE), "global");
    // A thread-scoped marker stays on the marking thread, naming its domain.
    let mine = read::my_line(host);
    let here = mine
        .events
        .iter()
        .find(|e| read::name(host, e) == "here")
        .expect("thread marker on this thread");
    assert_eq!(here.duration_ps, 0);
    assert_eq!(str_stat(host, here, schema::DOMAIN), "other");
    assert_eq!(str_stat(host, here, schema::SCOPE), "thread");
    assert_eq!(profile.event_count(), 7);
}

#[test]
fn nothing_is_recorded_outside_a_session() {
    let _serial = serial();
    // Started before the session: never recorded, so stopping it inside records nothing.
    UPLOAD.start();
    CHECKPOINT.mark(MarkerScope::Process);
    session::start(ProfileOptions::default(), None).expect("start");
    UPLOAD.stop();
    // Stopping twice records once.
    EPOCH.start();
    EPOCH.stop();
    EPOCH.stop();
    let profile = session::stop().expect("stop");
    assert_eq!(read::all_names(&profile), ["epoch"]);
}
