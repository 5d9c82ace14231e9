//! The host side of a device trace: the CUDA API calls that matter on the host line
//! of the thread that made them (or on a line of their own when no annotation was
//! open), and for each launch, the stack of host annotations that enclosed it, as the
//! op XProf files its device work under, and the step it ran in.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::maps::{HashMap, HashSet};

use profiler_core::schema;
use profiler_core::tracer::ScopeId;
use profiler_core::xspace::{merge_into_line, ps, Interner, Stats, XEvent, XSpace, XStatValue};
pub(super) use profiler_core::xspace::{Enclosing as LaunchedIn, HostScopes};

use crate::activity::{Activity, DeviceTrace};
use crate::api::api_recorded_by_default;
use crate::stats::{CORRELATION_ID, CUDA_GRAPH_ID};

/// What the host side found out for the device side.
pub(super) struct Launches {
    /// Per correlation id of an API call that launched device work (or allocated
    /// device memory), what it ran under.
    pub(super) launched_in: HashMap<u32, LaunchedIn>,
    /// Launches whose annotation was left off, over `gpu_max_annotation_strings`.
    pub(super) unannotated: u64,
    /// The cap on distinct annotation stacks.
    pub(super) annotation_limit: usize,
    /// API calls put on host lines.
    pub(super) api_kept: u64,
    /// API calls left out here, by name.
    pub(super) api_left_out: BTreeMap<String, u64>,
}

/// Puts `trace`'s API calls that matter on the host plane of `space` (all of them
/// with [`DeviceTrace::all_api_calls`]) and finds what each launch, and each call in
/// `allocating` (those that allocated or released device memory), was annotated
/// with (in `scopes`, the host plane's events before the calls joined them). A call
/// that launched device work is always kept, whatever its name, and is the only kind
/// that carries a `correlation_id` (the others would draw flow arrows with one end);
/// a graph launch also carries its graph's id (`graph_of_launch`, by correlation id).
pub(super) fn add_api_calls(
    trace: &DeviceTrace,
    space: &mut XSpace,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
    launched: &HashSet<u32>,
    allocating: &HashSet<u32>,
    scopes: &mut HostScopes,
    graph_of_launch: &HashMap<u32, u32>,
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

    let mut out = Launches {
        launched_in: HashMap::default(),
        unannotated: 0,
        annotation_limit: trace
            .max_annotation_strings
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        api_kept: 0,
        api_left_out: BTreeMap::new(),
    };
    // A runtime call and the driver call it makes share one correlation id (CUPTI
    // reports both when both domains are traced): only the outermost of a correlation
    // id's calls links to its device work, so each launch → kernel flow has one start.
    let mut outermost: HashMap<u32, (usize, u64, u64)> = HashMap::default();
    for (i, activity) in trace.activities.iter().enumerate() {
        if let Activity::Api {
            start,
            end,
            correlation_id,
            ..
        } = activity
        {
            let better = |&(_, s, e): &(usize, u64, u64)| *start < s || (*start == s && *end > e);
            outermost
                .entry(*correlation_id)
                .and_modify(|o| {
                    if better(o) {
                        *o = (i, *start, *end);
                    }
                })
                .or_insert((i, *start, *end));
        }
    }
    let mut attached: HashSet<Rc<str>> = HashSet::default();
    let mut api_events: BTreeMap<(i64, String), Vec<XEvent>> = BTreeMap::new();
    let mut host_plane = host.map(|h| std::mem::take(&mut space.planes[h]));
    let mut host_names = host_plane.as_ref().map(Interner::new);
    for (index, activity) in trace.activities.iter().enumerate() {
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
        let nested = outermost
            .get(correlation_id)
            .is_some_and(|&(i, ..)| i != index);
        let launches = launched.contains(correlation_id) && !nested;
        let allocates = allocating.contains(correlation_id);
        if !(launches || allocates || trace.all_api_calls || api_recorded_by_default(name)) {
            *out.api_left_out.entry(name.clone()).or_default() += 1;
            continue;
        }
        let (Some(start), Some(end)) = (to_session_ns(*start), to_session_ns(*end)) else {
            continue;
        };
        let scope = external.get(correlation_id);
        if let Some(found) = scope
            .filter(|_| launches || allocates)
            .and_then(|s| scopes.enclosing(s.line, ps(start)))
        {
            // The cap counts the distinct strings device work carries.
            let key = found.tf_op.as_ref().unwrap_or(&found.annotation);
            if attached.contains(key)
                || (attached.len() < out.annotation_limit && attached.insert(key.clone()))
            {
                out.launched_in.insert(*correlation_id, found);
            } else {
                out.unannotated += 1;
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
        let mut stats = if launches {
            Stats::from([names.stat(
                plane,
                CORRELATION_ID,
                XStatValue::Uint64(u64::from(*correlation_id)),
            )])
        } else {
            Stats::new()
        };
        if let Some(graph) = graph_of_launch.get(correlation_id) {
            stats.push(names.stat(plane, CUDA_GRAPH_ID, XStatValue::Uint64(u64::from(*graph))));
        }
        out.api_kept += 1;
        api_events.entry(line).or_default().push(
            XEvent::new(
                names.event(plane, name),
                ps(start),
                ps(end.saturating_sub(start)),
            )
            .with_stats(stats),
        );
    }
    if let (Some(h), Some(mut plane)) = (host, host_plane) {
        for ((id, name), events) in api_events {
            merge_into_line(&mut plane, id, &name, events);
        }
        space.planes[h] = plane;
    }
    out
}
