//! Helpers shared by profiler-core's integration tests: serialising sessions and
//! reading events back out of a profile.
#![allow(dead_code, unreachable_pub)]

use std::sync::Mutex;

use profiler_core::xspace::{XEvent, XLine, XPlane, XStatValue};
use profiler_core::{schema, session, Profile};

static SERIAL: Mutex<()> = Mutex::new(());

/// Sessions are process-wide: every test that records holds this guard.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // A test that failed mid-session must not fail the next one.
    let _ = session::stop();
    guard
}

pub fn host(profile: &Profile) -> &XPlane {
    profile
        .xspace()
        .plane(schema::HOST_PLANE)
        .expect("host plane")
}

pub fn line<'a>(plane: &'a XPlane, name: &str) -> &'a XLine {
    plane
        .lines
        .iter()
        .find(|l| l.name == name)
        .unwrap_or_else(|| panic!("no line {name}"))
}

/// The name of the calling thread (test threads are named after their test).
pub fn this_thread() -> String {
    std::thread::current()
        .name()
        .expect("test threads are named")
        .to_owned()
}

/// The calling thread's line.
pub fn my_line(plane: &XPlane) -> &XLine {
    line(plane, &this_thread())
}

pub fn name<'a>(plane: &'a XPlane, e: &XEvent) -> &'a str {
    plane.event_name(e.metadata_id).expect("metadata")
}

/// Names of a line's events, in order.
pub fn names<'a>(plane: &'a XPlane, line: &XLine) -> Vec<&'a str> {
    line.events.iter().map(|e| name(plane, e)).collect()
}

/// Names of every event on the host plane, line by line.
pub fn all_names(profile: &Profile) -> Vec<String> {
    let plane = host(profile);
    plane
        .lines
        .iter()
        .flat_map(|l| &l.events)
        .map(|e| name(plane, e).to_owned())
        .collect()
}

pub fn stat(plane: &XPlane, e: &XEvent, key: &str) -> Option<XStatValue> {
    plane.find_stat(&e.stats, key).cloned()
}

/// An event's start and end in picoseconds from the session start.
pub fn span(line: &XLine, e: &XEvent) -> (i64, i64) {
    let start = line.timestamp_ns * 1000 + e.offset_ps();
    (start, start + e.duration_ps)
}
