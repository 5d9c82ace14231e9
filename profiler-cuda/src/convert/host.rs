//! The host side of a device trace: each CUDA API call on the host line of the thread
//! that made it (or on a line of its own when no annotation was open), and for each
//! launch, the host annotation that enclosed it and the step it ran in.

use std::collections::{BTreeMap, HashMap, HashSet};

use profiler_core::schema;
use profiler_core::tracer::ScopeId;
use profiler_core::xspace::{
    merge_into_line, ps, Interner, XEvent, XEventData, XPlane, XSpace, XStatValue,
};

use crate::activity::{Activity, DeviceTrace};
use crate::stats::CORRELATION_ID;

/// What the host side found out for the device side.
pub(super) struct Launches {
    /// Per correlation id, the innermost annotation enclosing the launch and the
    /// enclosing step's number.
    pub(super) launched_in: HashMap<u32, (String, Option<i64>)>,
    /// Launches whose annotation was left off, over `gpu_max_annotation_strings`.
    pub(super) unannotated: u64,
    /// The cap on distinct annotation names.
    pub(super) annotation_limit: usize,
}

/// Puts `trace`'s API calls on the host plane of `space` and finds what each launch
/// was annotated with.
pub(super) fn add_api_calls(
    trace: &DeviceTrace,
    space: &mut XSpace,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
) -> Launches {
    let external: HashMap<u32, ScopeId> = trace
        .activities
        .iter()
        .filter_map(|a| match a {
            Activity::ExternalCorrelation {
                correlation_id,
                external_id,
            } => Some((*correlation_id, ScopeId::from_u64(*external_id))),
            _ => None,
        })
        .collect();
    let host = space
        .planes
        .iter()
        .position(|p| p.name == schema::HOST_PLANE);
    let scopes = host
        .map(|h| HostScopes::new(&space.planes[h]))
        .unwrap_or_default();

    // The host side: API calls, and what each launch was annotated with.
    let mut launched_in: HashMap<u32, (String, Option<i64>)> = HashMap::new();
    let mut annotation_names: HashSet<String> = HashSet::new();
    let annotation_limit = trace
        .max_annotation_strings
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let mut unannotated = 0u64;
    let mut api_events: BTreeMap<(i64, String), Vec<XEvent>> = BTreeMap::new();
    let mut host_plane = host.map(|h| std::mem::take(&mut space.planes[h]));
    let mut host_names = host_plane.as_ref().map(Interner::new);
    for activity in &trace.activities {
        let Activity::Api {
            name,
            start,
            end,
            thread_id,
            correlation_id,
        } = activity
        else {
            continue;
        };
        let (Some(start), Some(end)) = (to_session_ns(*start), to_session_ns(*end)) else {
            continue;
        };
        let scope = external.get(correlation_id);
        if let Some(found) = scope.and_then(|s| scopes.enclosing(s.line, ps(start))) {
            if annotation_names.contains(&found.0) || annotation_names.len() < annotation_limit {
                annotation_names.insert(found.0.clone());
                launched_in.insert(*correlation_id, found);
            } else {
                unannotated += 1;
            }
        }
        let (Some(plane), Some(names)) = (host_plane.as_mut(), host_names.as_mut()) else {
            continue;
        };
        let line = match scope {
            Some(s) => (i64::from(s.line), String::new()),
            None => (
                i64::from(schema::DEVICE_API_LINES_ID + (*thread_id & 0xff_ffff)),
                format!("CUDA API (thread {thread_id})"),
            ),
        };
        let stat = names.stat(
            plane,
            CORRELATION_ID,
            XStatValue::Uint64(u64::from(*correlation_id)),
        );
        api_events.entry(line).or_default().push(XEvent {
            metadata_id: names.event(plane, name),
            data: Some(XEventData::OffsetPs(ps(start))),
            duration_ps: ps(end.saturating_sub(start)),
            stats: vec![stat],
        });
    }
    if let (Some(h), Some(mut plane)) = (host, host_plane) {
        for ((id, name), events) in api_events {
            merge_into_line(&mut plane, id, &name, events);
        }
        space.planes[h] = plane;
    }

    Launches {
        launched_in,
        unannotated,
        annotation_limit,
    }
}

/// (start ps, end ps, name, step_num), session-relative.
type HostEvent = (i64, i64, String, Option<i64>);

/// The host events of each line, for finding what enclosed a launch.
#[derive(Default)]
struct HostScopes {
    /// Per line id, its events.
    lines: HashMap<i64, Vec<HostEvent>>,
}

impl HostScopes {
    fn new(plane: &XPlane) -> HostScopes {
        let step_id = plane.stat_id(schema::STEP_NUM);
        let mut lines = HashMap::new();
        for line in &plane.lines {
            let events = line
                .events
                .iter()
                .map(|e| {
                    let (start, end) = line.event_span_ps(e);
                    let step = e.stat(step_id).and_then(XStatValue::as_i64);
                    let name = plane.event_name(e.metadata_id).unwrap_or_default();
                    (start, end, name.to_owned(), step)
                })
                .collect();
            lines.insert(line.id, events);
        }
        HostScopes { lines }
    }

    /// The innermost event of `line` containing `at_ps`, and the step number of the
    /// outermost one carrying a `step_num`.
    fn enclosing(&self, line: u32, at_ps: i64) -> Option<(String, Option<i64>)> {
        let events = self.lines.get(&i64::from(line))?;
        let mut inner: Option<&HostEvent> = None;
        let mut step = None;
        for e in events.iter().filter(|e| e.0 <= at_ps && at_ps <= e.1) {
            if step.is_none() {
                step = e.3;
            }
            if inner.is_none_or(|i| e.1 - e.0 <= i.1 - i.0) {
                inner = Some(e);
            }
        }
        inner.map(|e| (e.2.clone(), step))
    }
}
