//! Reading a recorded profile back: its host plane, a thread's line, event names and
//! fields. A missing plane or line panics, naming it: these are test assertions.

use profiler_core::xspace::{XEvent, XLine, XPlane, XStatValue};
use profiler_core::{schema, Profile};

/// The host plane.
pub fn host(profile: &Profile) -> &XPlane {
    profile
        .xspace()
        .plane(schema::HOST_PLANE)
        .expect("host plane")
}

/// The line named `name` (a thread's name).
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

/// An event's name.
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

/// The value of an event's field `key`.
pub fn stat(plane: &XPlane, e: &XEvent, key: &str) -> Option<XStatValue> {
    plane.find_stat(&e.stats, key).cloned()
}

/// An event's start and end in picoseconds from the session start.
pub fn span(line: &XLine, e: &XEvent) -> (i64, i64) {
    let start = line.timestamp_ns * 1000 + e.offset_ps();
    (start, start + e.duration_ps)
}
