//! Device planes as TSL writes them for XProf, shared by every device tracer (CUPTI's in
//! `profiler-cuda`, cubecl's in `profiler-burn`): a plane `/device:GPU:<n>` per device,
//! a line per stream named `Stream #<id>(<kinds>)`, every line on one base timestamp,
//! and the stats XProf's trace viewer and Kernel Stats read of device work.
//!
//! The stat names are in [`crate::schema`]; what a launch ran under on the host (the
//! `tf_op`, `annotation` and `host_step_num` of its device work) is found by
//! [`super::HostScopes`](crate::xspace::HostScopes).

use std::collections::BTreeMap;

use super::builder::PlaneBuilder;
use super::edit::merge_into_line;
use super::model::{Stats, XEvent, XPlane, XStat, XStatValue};
use super::scopes::Enclosing;
use crate::schema;

/// Plane id of `/device:GPU:<n>`: TSL numbers GPU planes from 1; prof's host plane is 49.
pub const GPU_PLANE_BASE_ID: i64 = 1;

/// The name of GPU `ordinal`'s plane, `/device:GPU:<ordinal>`: XProf's tools read device
/// work from planes named so, whatever runtime ran it.
pub fn gpu_plane_name(ordinal: u32) -> String {
    format!("{}{ordinal}", schema::GPU_PLANE_PREFIX)
}

/// A builder for GPU `ordinal`'s plane, `/device:GPU:<ordinal>`, with id
/// [`GPU_PLANE_BASE_ID`]` + ordinal`.
pub fn gpu_plane(ordinal: u32) -> PlaneBuilder {
    PlaneBuilder::new(
        GPU_PLANE_BASE_ID + i64::from(ordinal),
        gpu_plane_name(ordinal),
    )
}

/// A text stat as a reference to the string interned in the plane's stat metadata, as
/// TSL writes `kernel_details` and `tf_op` for JAX and TensorFlow: the few distinct
/// strings (a program's kernel shapes, its annotation stacks) are stored once, not once
/// an event, and an event takes no allocation for them. XProf reads either form.
pub fn text_stat(p: &mut PlaneBuilder, name: &str, value: &str) -> XStat {
    XStat {
        metadata_id: p.stat_metadata_id(name),
        value: Some(XStatValue::Ref(p.stat_metadata_id(value) as u64)),
    }
}

/// Adds to `stats` what device work launched under `launched` carries: its `tf_op`
/// (when an annotation inside the step enclosed the launch), its innermost
/// `annotation` and its `host_step_num`.
pub fn push_launch_stats(p: &mut PlaneBuilder, stats: &mut Stats, launched: &Enclosing) {
    if let Some(tf_op) = &launched.tf_op {
        stats.push(text_stat(p, schema::TF_OP, tf_op));
    }
    stats.push(text_stat(p, schema::ANNOTATION, &launched.annotation));
    if let Some(step) = launched.step {
        stats.push(p.stat(schema::HOST_STEP_NUM, XStatValue::Int64(step)));
    }
}

/// The events of a device's streams, gathered before they become the plane's lines.
#[derive(Debug, Default)]
pub struct StreamLines {
    /// Per stream id, its events (offsets from the session start) and the kinds of
    /// work on it, in the order first seen.
    streams: BTreeMap<u32, (Vec<XEvent>, Vec<&'static str>)>,
}

impl StreamLines {
    /// No streams yet.
    pub fn new() -> StreamLines {
        StreamLines::default()
    }

    /// Adds `event` (offset from the session start) of kind `kind` (`Kernel`,
    /// `Memcpy`, ...) to stream `stream`.
    pub fn push(&mut self, stream: u32, kind: &'static str, event: XEvent) {
        let (events, kinds) = self.streams.entry(stream).or_default();
        events.push(event);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }

    /// Whether no event was added.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }

    /// Adds a line per stream to `plane`, id the stream id, named `Stream #<id>(<kinds>)`
    /// as TSL names them (`Stream #7(Kernel,Memcpy)`).
    pub fn add_to(self, plane: &mut XPlane) {
        for (stream, (events, kinds)) in self.streams {
            let name = format!("Stream #{stream}({})", kinds.join(","));
            merge_into_line(plane, i64::from(stream), &name, events);
        }
    }
}

/// Puts every line of `plane` on the earliest line's `timestamp_ns`, as TSL's CUPTI
/// collector writes GPU planes: XProf measures a GPU's busy span from events' offsets
/// within their lines (`ConvertDeviceTraceXPlaneToOpMetricsDb`), which compare only
/// when the lines share one base.
pub fn share_one_timestamp(plane: &mut XPlane) {
    let Some(base) = plane.lines.iter().map(|l| l.timestamp_ns).min() else {
        return;
    };
    for line in &mut plane.lines {
        let shift_ps = (line.timestamp_ns - base).saturating_mul(1000);
        if shift_ps == 0 {
            continue;
        }
        for e in &mut line.events {
            e.set_offset_ps(e.offset_ps() + shift_ps);
        }
        line.timestamp_ns = base;
        line.duration_ps += shift_ps;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xspace::ps;

    #[test]
    fn streams_become_named_lines_on_one_base() {
        let mut p = gpu_plane(2);
        let k = p.event_metadata_id("k");
        let mut lines = StreamLines::new();
        lines.push(7, "Kernel", XEvent::new(k, ps(5_000), ps(10)));
        lines.push(7, "Memcpy", XEvent::new(k, ps(6_000), ps(10)));
        lines.push(7, "Kernel", XEvent::new(k, ps(7_000), ps(10)));
        lines.push(3, "Kernel", XEvent::new(k, ps(1_000), ps(10)));
        let mut plane = p.build();
        lines.add_to(&mut plane);
        share_one_timestamp(&mut plane);
        assert_eq!((plane.id, plane.name.as_str()), (3, "/device:GPU:2"));
        let names: Vec<&str> = plane.lines.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["Stream #3(Kernel)", "Stream #7(Kernel,Memcpy)"]);
        let base = plane.lines[0].timestamp_ns;
        assert!(plane.lines.iter().all(|l| l.timestamp_ns == base));
        // The same instants as before, on the shared base.
        let starts: Vec<i64> = plane
            .lines
            .iter()
            .flat_map(|l| l.events.iter().map(move |e| l.event_span_ps(e).0))
            .collect();
        assert_eq!(starts, [ps(1_000), ps(5_000), ps(6_000), ps(7_000)]);
    }
}
