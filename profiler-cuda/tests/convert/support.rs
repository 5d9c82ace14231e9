//! What the conversion tests share: stat readers and the host planes they convert against.

use profiler_core::schema;
use profiler_core::xspace::{XEvent, XPlane, XSpace, XStatValue};
use profiler_core::{session, trace, ProfileOptions};
use profiler_cuda::convert::TF_OP;
use profiler_cuda::synthetic::{self};
pub(crate) fn stat<'a>(plane: &'a XPlane, e: &'a XEvent, name: &str) -> Option<&'a XStatValue> {
    plane.find_stat(&e.stats, name)
}

/// A string stat's text, inline or a reference (as the device plane's are).
pub(crate) fn text<'a>(plane: &'a XPlane, e: &'a XEvent, name: &str) -> Option<&'a str> {
    plane.find_text(&e.stats, name)
}

pub(crate) fn events<'a>(plane: &'a XPlane, name: &str) -> Vec<(i64, &'a XEvent)> {
    plane
        .lines
        .iter()
        .flat_map(|l| {
            l.events
                .iter()
                .map(move |e| (l.timestamp_ns * 1000 + e.offset_ps(), e))
        })
        .filter(|(_, e)| plane.event_name(e.metadata_id) == Some(name))
        .collect()
}

/// Sessions are process-wide: one test records at a time.
pub(crate) static SESSION: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A host plane with `Train` steps holding `attn`, and the (line, attn windows in ns).
pub(crate) fn host_space() -> (XSpace, u32, Vec<(u64, u64)>) {
    let _one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    for step in 0..3 {
        let _t = trace!("Train", step_num = step);
        let _a = trace!("attn");
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let space = session::stop().expect("stop").into_xspace();
    let host = space.plane(schema::HOST_PLANE).expect("host plane");
    let line = host
        .lines
        .iter()
        .find(|l| {
            l.events
                .iter()
                .any(|e| host.event_name(e.metadata_id) == Some("attn"))
        })
        .expect("line with attn");
    let windows = events(host, "attn")
        .into_iter()
        .map(|(at, e)| ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64))
        .collect();
    (space.clone(), line.id as u32, windows)
}

/// A host plane where a graph is captured once (`forward` > `attn`, then `mlp`: one
/// node each, captured in the middle of each) and replayed in `steps` steps (`Train` >
/// `replay`); the capture's nodes and the replay windows.
pub(crate) fn captured_and_replayed(
    steps: u32,
) -> (XSpace, u32, Vec<synthetic::CapturedNode>, Vec<(u64, u64)>) {
    let one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    {
        let _f = trace!("forward");
        for layer in ["attn", "mlp"] {
            let _l = profiler_core::Trace::new(layer);
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
    for step in 0..steps {
        let _t = trace!("Train", step_num = step);
        let _r = trace!("replay");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let space = session::stop().expect("stop").into_xspace();
    drop(one);
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let line = host
        .lines
        .iter()
        .find(|l| !l.events.is_empty())
        .expect("a line");
    let window = |name| -> Vec<(u64, u64)> {
        events(host, name)
            .into_iter()
            .map(|(at, e)| ((at / 1000) as u64, ((at + e.duration_ps) / 1000) as u64))
            .collect()
    };
    let nodes = [("attn", "attn_kernel"), ("mlp", "mlp_kernel")]
        .iter()
        .map(|&(layer, kernel)| {
            let (start, end) = window(layer)[0];
            synthetic::CapturedNode {
                at: (start + end) / 2,
                seq: 0,
                kernel,
            }
        })
        .collect();
    (space.clone(), line.id as u32, nodes, window("replay"))
}

/// A host plane with `Train` steps of `block` > (`attn`, `mlp`), then `decoder` >
/// `attn`; its line and the launches of each layer (kernel names `attn_k`, `mlp_k`,
/// `dec_k`), sorted by start.
pub(crate) fn nested_space(steps: u32) -> (XSpace, u32, Vec<synthetic::Launch>) {
    let one = SESSION.lock().unwrap_or_else(|e| e.into_inner());
    session::start(ProfileOptions::default().device_tracer_level(0), None).expect("start");
    for step in 0..steps {
        let _t = trace!("Train", step_num = step);
        {
            let _b = trace!("block");
            for layer in ["attn", "mlp"] {
                let _l = profiler_core::Trace::new(layer);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let _d = trace!("decoder");
        let _a = trace!("attn");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    let space = session::stop().expect("stop").into_xspace();
    drop(one);
    let host = space.plane(schema::HOST_PLANE).expect("host");
    let line = host
        .lines
        .iter()
        .find(|l| !l.events.is_empty())
        .expect("a line");
    // Each attn or mlp window, with the name of the event enclosing it.
    let mut launches = Vec::new();
    for e in &line.events {
        let (start, end) = line.event_span_ps(e);
        let kernel = match host.event_name(e.metadata_id) {
            Some("mlp") => "mlp_k",
            Some("attn") => {
                let in_decoder = line.events.iter().any(|p| {
                    let (ps, pe) = line.event_span_ps(p);
                    host.event_name(p.metadata_id) == Some("decoder") && ps <= start && end <= pe
                });
                if in_decoder {
                    "dec_k"
                } else {
                    "attn_k"
                }
            }
            _ => continue,
        };
        launches.push(synthetic::Launch {
            window: ((start / 1000) as u64, (end / 1000) as u64),
            kernel,
            copy_kind: 2,
        });
    }
    launches.sort_by_key(|l| l.window);
    (space.clone(), line.id as u32, launches)
}

/// The `tf_op` strings of the events named `name` on the GPU plane.
pub(crate) fn tf_ops(gpu: &XPlane, name: &str) -> Vec<Option<String>> {
    events(gpu, name)
        .into_iter()
        .map(|(_, e)| text(gpu, e, TF_OP).map(str::to_owned))
        .collect()
}
