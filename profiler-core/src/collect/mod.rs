//! Collection: thread buffers of one session → an [`XSpace`].

//!
//! Bottom up: [`line`](mod@line) builds each thread's line from its records, [`memory`]
//! finishes the tracking allocator's memory events there, [`tasks`] turns the polls of
//! async tasks into lifetimes and flows, [`domains`] moves profiling objects to their
//! domains' lines; this module puts the plane together.

mod domains;
mod line;
mod memory;
mod seqs;
mod tasks;

use crate::alloc::HostLevel;
use crate::buffer::{self, Dropped};
use crate::clock::{Anchor, TickScale};
use crate::schema;
use crate::xspace::{ps, PlaneBuilder, Stats, XEvent, XSpace, XStat, XStatValue};

use line::{build_line, LineBuilder, NameCache};

/// The host heap's level at a session's edges, as session control read it when the
/// gate opened and when it closed (`None`: no tracking allocator, or an edge the
/// profile does not reach, a flight recorder's start).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeapAtEdges {
    pub(crate) start: Option<HostLevel>,
    pub(crate) stop: Option<HostLevel>,
}

/// Builds the space of session `generation`, recorded between `start` and `stop` at
/// `host_level`, with `pauses` (start and end ticks) and the heap at its edges shown
/// on the `Profiler` line. Events that ended and samples taken before ticks `since`
/// are left out.
pub(crate) fn collect(
    generation: u64,
    start: &Anchor,
    stop: &Anchor,
    host_level: u8,
    pauses: &[(u64, u64)],
    since: u64,
    heap: HeapAtEdges,
) -> XSpace {
    let scale = TickScale::between(start, stop);
    let stop_ns = scale.to_ns(stop.ticks);
    let mut host = PlaneBuilder::new(schema::HOST_PLANE_ID, schema::HOST_PLANE);
    let mut dropped = Dropped::default();
    let mut buffers = buffer::buffers();
    buffers.sort_by_key(|b| b.line_id);
    let mut names = NameCache::default();
    let mut builders: Vec<LineBuilder<'_>> = Vec::with_capacity(buffers.len());
    let mut ids = Vec::with_capacity(buffers.len());
    for buf in &buffers {
        let mut line = LineBuilder::new(&scale, stop_ns, since, buf.records(generation));
        let Some(lost) = buf.read(generation, |record| line.add(record, &mut host, &mut names))
        else {
            continue;
        };
        dropped.events += lost.events;
        dropped.fields += lost.fields;
        memory::finish(&mut line, &mut host);
        builders.push(line);
        ids.push((buf.line_id, buf.name.as_str()));
    }
    let lanes = tasks::link(&mut builders, host_level, &mut host);
    let domains = domains::take(&mut builders, &mut host);
    let mut samples: Vec<_> = builders
        .iter_mut()
        .flat_map(|b| std::mem::take(&mut b.samples))
        .collect();
    for (line, (id, name)) in builders.into_iter().zip(ids) {
        if let Some(line) = line.build(id, name) {
            host.add_line(line);
        }
    }
    for (lane, events) in lanes.into_iter().enumerate() {
        let name = match lane {
            0 => schema::TASKS_LINE.to_owned(),
            n => format!("{} {}", schema::TASKS_LINE, n + 1),
        };
        if let Some(line) = build_line(events, schema::TASKS_LINE_ID + lane as u32, &name) {
            host.add_line(line);
        }
    }

    for line in domains::lines(domains) {
        host.add_line(line);
    }

    let mut profiler_events: Vec<XEvent> = pauses
        .iter()
        .filter(|&&(from, to)| to > start.ticks && from < stop.ticks)
        .map(|&(from, to)| {
            let from = scale.to_ns(from).min(stop_ns);
            let to = scale.to_ns(to).min(stop_ns);
            XEvent::new(
                host.event_metadata_id(schema::PAUSED),
                ps(from),
                ps(to.max(from) - from),
            )
        })
        .collect();
    // The heap at the session's edges: with the snapshot each step's end writes, a
    // program whose tallies never fold still draws its level from start to end.
    let edges = [(0, heap.start), (ps(stop_ns), heap.stop)];
    let mut before = None;
    for (at, level) in edges {
        let Some(level) = level else { continue };
        let grew = before.is_none_or(|b: HostLevel| level.in_use >= b.in_use);
        profiler_events.push(memory::edge_snapshot(&mut host, at, &level, grew));
        samples.push((at, schema::HOST_BYTES_IN_USE, level.in_use as f64));
        samples.push((at, schema::HOST_ALLOCATIONS, level.allocations as f64));
        before = Some(level);
    }
    if let Some(line) = build_line(
        profiler_events,
        schema::PROFILER_LINE_ID,
        schema::PROFILER_LINE,
    ) {
        host.add_line(line);
    }

    if !samples.is_empty() {
        // Stable: samples of one thread at the same tick keep their order.
        samples.sort_by_key(|&(at, _, _)| at);
        let value = host.stat_metadata_id(schema::COUNTER_VALUE);
        let events = samples
            .into_iter()
            .map(|(at, counter, v)| {
                XEvent::new(names.id(&mut host, counter), at, 0).with_stats(Stats::from([XStat {
                    metadata_id: value,
                    value: Some(XStatValue::Double(v)),
                }]))
            })
            .collect();
        if let Some(line) = build_line(events, schema::COUNTERS_LINE_ID, schema::COUNTERS_LINE) {
            host.add_line(line);
        }
    }

    let mut env = PlaneBuilder::new(schema::TASK_ENV_PLANE_ID, schema::TASK_ENV_PLANE);
    env.add_plane_stat(
        schema::PROFILE_START_TIME,
        XStatValue::Uint64(start.unix_ns),
    );
    env.add_plane_stat(schema::PROFILE_STOP_TIME, XStatValue::Uint64(stop.unix_ns));

    let mut space = XSpace {
        planes: vec![host.build(), env.build()],
        hostnames: vec![host_name()],
        ..XSpace::default()
    };
    if dropped != Dropped::default() {
        let what = match (dropped.events, dropped.fields) {
            (e, 0) => format!("{e} events were"),
            (0, f) => format!("{f} fields were"),
            (e, f) => format!("{e} events and {f} fields were"),
        };
        space.warnings.push(format!(
            "prof: {what} dropped because the session reached its cap \
             (ProfileOptions::max_events); raise max_events to keep them"
        ));
    }
    space
}

/// This machine's host name, as TSL's `port::Hostname` reports it.
pub fn host_name() -> String {
    let mut buf = [0u8; 256];
    #[allow(unsafe_code)]
    // SAFETY: the buffer is valid for writes of its length; gethostname NUL-terminates
    // within it on success.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        if end > 0 {
            return String::from_utf8_lossy(&buf[..end]).into_owned();
        }
    }
    "localhost".to_owned()
}
