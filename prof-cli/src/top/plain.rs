//! `--once` and `--json`: one snapshot of every host, printed for a script, then exit.
//! The text is the view itself, drawn into a buffer the size of the terminal (80×24
//! when there is none), so a script sees what a person would.

use std::time::Instant;

use profiler_remote::live::proto::{Recording, Snapshot};
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::Terminal;
use serde_json::{json, Value};

use crate::top::state::{App, Host, Link};
use crate::top::view;

/// Whether `host` has said all it will for a one-off look: a snapshot with steps, a
/// Monitor text, or a state that will not change by waiting.
pub fn settled(host: &Host) -> bool {
    match &host.link {
        Link::NoLiveView(_) => true,
        Link::MonitorOnly => host.monitor.is_some(),
        _ => host
            .last
            .as_ref()
            .is_some_and(|s| s.step_times.is_some() || s.recording != Recording::Live as i32),
    }
}

/// Whether a host answered at all (a snapshot or Monitor's text).
pub fn answered(host: &Host) -> bool {
    host.last.is_some() || host.monitor.is_some()
}

/// The view drawn at `width`×`height`, as lines of text without trailing blanks.
pub fn text(app: &App, width: u16, height: u16) -> String {
    // The test backend cannot fail (its error type has no values).
    let Ok(mut terminal) = Terminal::new(TestBackend::new(width, height));
    let now = Instant::now();
    let Ok(_) = terminal.draw(|f| view::draw(f, app, now));
    lines(terminal.backend().buffer())
}

/// A buffer's text, a line a row, trailing blanks and blank last rows dropped.
pub fn lines(buffer: &Buffer) -> String {
    let width = buffer.area.width as usize;
    let mut out: Vec<String> = buffer
        .content
        .chunks(width.max(1))
        .map(|row| {
            let line: String = row.iter().map(|c| c.symbol()).collect();
            line.trim_end().to_owned()
        })
        .collect();
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out.join("\n")
}

fn recording(s: &Snapshot) -> &'static str {
    match Recording::try_from(s.recording).unwrap_or(Recording::Unspecified) {
        Recording::Live => "live",
        Recording::Capture => "capture",
        Recording::Session => "session",
        Recording::Unspecified => "unknown",
    }
}

fn host_json(host: &Host, straggler: bool) -> Value {
    let mut out = json!({
        "address": host.address,
        "state": match &host.link {
            Link::Connected => "connected",
            Link::Connecting => "connecting",
            Link::Reconnecting { .. } => "unreachable",
            Link::MonitorOnly => "monitor only",
            Link::NoLiveView(_) => "no live view",
        },
        "straggler": straggler,
    });
    match &host.link {
        Link::Reconnecting { why, .. } => out["error"] = json!(why),
        Link::NoLiveView(line) => out["error"] = json!(line),
        _ => {}
    }
    if let Some(text) = &host.monitor {
        out["monitor"] = json!(text);
    }
    let Some(s) = &host.last else {
        return out;
    };
    let ms = |ns: f64| ns / 1e6;
    out["host"] = json!(s.host);
    out["time_unix_ns"] = json!(s.time_unix_ns);
    out["recording"] = json!(recording(s));
    out["step"] = json!(s.step);
    out["steps_per_second"] = json!(s.steps_per_second);
    out["window_s"] = json!(s.window_ns as f64 / 1e9);
    out["frames_dropped"] = json!(s.frames_dropped);
    out["watchers"] = json!(s.watchers);
    if let Some(t) = s.step_times {
        out["step_time_ms"] = json!({
            "last": ms(t.last_ns as f64), "avg": ms(t.avg_ns), "min": ms(t.min_ns as f64),
            "p50": ms(t.p50_ns as f64), "p90": ms(t.p90_ns as f64), "max": ms(t.max_ns as f64),
        });
    }
    if let Some(i) = s.input {
        out["input_percent"] =
            json!({"avg": i.avg_percent, "min": i.min_percent, "max": i.max_percent});
    }
    out["ops"] = s
        .ops
        .iter()
        .map(|o| json!({"name": o.name, "self_ms": ms(o.self_ns as f64), "share": o.share, "count": o.count}))
        .collect();
    if let Some(m) = s.memory {
        out["memory"] =
            json!({"host_in_use": m.host_in_use, "host_peak": m.host_peak, "rss": m.rss});
    }
    out["gpus"] = s
        .gpus
        .iter()
        .map(|g| {
            json!({"index": g.index, "name": g.name, "busy_percent": g.busy_percent,
                   "memory_used": g.memory_used, "memory_total": g.memory_total})
        })
        .collect();
    if let Some(why) = &s.gpus_unavailable {
        out["gpus_unavailable"] = json!(why);
    }
    out["kernels"] = s
        .kernels
        .iter()
        .map(|k| {
            json!({"device": k.device, "name": k.name, "kernel_ms": ms(k.kernel_ns as f64),
                   "kernels": k.kernels, "interval_ms": ms(k.interval_ns as f64)})
        })
        .collect();
    if let Some(why) = &s.kernels_unavailable {
        out["kernels_unavailable"] = json!(why);
    }
    if let Some(c) = &s.capture {
        out["capture"] = json!({"session_id": c.session_id, "elapsed_ms": c.elapsed_ms, "duration_ms": c.duration_ms});
    }
    out
}

/// Every host as JSON, each with its own GPUs.
pub fn json(app: &App) -> Value {
    let straggler = app.straggler();
    json!({
        "hosts": app.hosts.iter().enumerate().map(|(i, h)| host_json(h, straggler == Some(i))).collect::<Vec<_>>(),
    })
}
