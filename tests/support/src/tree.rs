//! A recorded line as an indented tree, for snapshot tests: one event a row, under the
//! event that encloses it, with its fields in the order they were recorded.
//!
//! ```text
//! Train step_num=0 _r=1
//!     forward batch=32 lr=0.5
//!         matmul
//! ```
//!
//! No timestamp or duration is written (they differ from run to run); nesting is what
//! the times say. Values show their kind: `3` is an `Int64`, `3u` a `Uint64`, `0.5` a
//! `Double` (always with a point), `"text"` a `Str`, `b[00 ff]` `Bytes` and `&"name"` a
//! reference to an interned string.

use std::fmt::Write as _;

use profiler_core::xspace::{XEvent, XLine, XPlane, XStatValue};

/// The tree of one line's events.
pub fn line(plane: &XPlane, line: &XLine) -> String {
    let mut out = String::new();
    // The ends of the events enclosing the current one, outermost first.
    let mut open: Vec<i64> = Vec::new();
    for e in &line.events {
        let (start, end) = (e.offset_ps(), e.offset_ps() + e.duration_ps);
        // An enclosing event ends at or after this one's end and after its start (an
        // instant at another event's end is not inside it).
        while open.last().is_some_and(|&up| up < end || up <= start) {
            open.pop();
        }
        let _ = writeln!(out, "{}{}", "    ".repeat(open.len()), row(plane, e));
        open.push(end);
    }
    out
}

/// The trees of the plane's lines named `names`, in that order, each under its name.
pub fn lines(plane: &XPlane, names: &[&str]) -> String {
    let mut out = String::new();
    for name in names {
        let l = crate::read::line(plane, name);
        let _ = writeln!(out, "{name}:");
        for row in line(plane, l).lines() {
            let _ = writeln!(out, "    {row}");
        }
    }
    out
}

/// One event: its name and fields.
fn row(plane: &XPlane, e: &XEvent) -> String {
    let mut out = plane.event_name(e.metadata_id).unwrap_or("?").to_owned();
    for stat in &e.stats {
        let key = plane.stat_name(stat.metadata_id).unwrap_or("?");
        let _ = write!(out, " {key}=");
        match &stat.value {
            Some(value) => value_of(plane, value, &mut out),
            None => out.push_str("(none)"),
        }
    }
    out
}

fn value_of(plane: &XPlane, value: &XStatValue, out: &mut String) {
    let _ = match value {
        XStatValue::Int64(v) => write!(out, "{v}"),
        XStatValue::Uint64(v) => write!(out, "{v}u"),
        XStatValue::Double(v) => write!(out, "{v:?}"),
        XStatValue::Str(s) => write!(out, "{s:?}"),
        XStatValue::Bytes(b) => {
            let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
            write!(out, "b[{}]", hex.join(" "))
        }
        XStatValue::Ref(id) => {
            let name = i64::try_from(*id)
                .ok()
                .and_then(|id| plane.stat_name(id))
                .unwrap_or("?");
            write!(out, "&{name:?}")
        }
    };
}
