//! The host side of a device trace: the CUDA API calls that matter on the host line
//! of the thread that made them (or on a line of their own when no annotation was
//! open), and for each launch, the stack of host annotations that enclosed it, as the
//! op XProf files its device work under, and the step it ran in.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::maps::{HashMap, HashSet};

use profiler_core::schema;
use profiler_core::tracer::ScopeId;
use profiler_core::xspace::{
    merge_into_line, ps, Interner, Stats, XEvent, XPlane, XSpace, XStatValue,
};
use profiler_core::xspace::{Enclosing, HostScopes};

use crate::activity::{Activity, DeviceTrace};
use crate::api::api_recorded_by_default;
use crate::stats::{CORRELATION_ID, CUDA_GRAPH_ID};

/// What the host side found out for the device side.
pub(super) struct Launches {
    /// Per correlation id of an API call that launched device work (or allocated
    /// device memory), what it ran under.
    pub(super) launched_in: HashMap<u32, Enclosing>,
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
///
/// Three jobs, one pass over the calls in record order: [`Selection`] picks the calls
/// to keep, [`Annotations`] attributes launches and allocations to the annotations
/// open at them, [`ApiLines`] puts the kept calls on host lines.
pub(super) fn add_api_calls(
    trace: &DeviceTrace,
    space: &mut XSpace,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
    launched: &HashSet<u32>,
    allocating: &HashSet<u32>,
    scopes: &mut HostScopes,
    graph_of_launch: &HashMap<u32, u32>,
) -> Launches {
    let mut selection = Selection::new(trace, launched, allocating);
    let mut annotations = Annotations::new(trace.max_annotation_strings);
    let mut lines = ApiLines::take_host_plane(space);
    for (index, activity) in trace.activities.iter().enumerate() {
        let Some(call) = selection.keep(index, activity, to_session_ns) else {
            continue;
        };
        if call.launches || call.allocates {
            annotations.attach(&call, scopes);
        }
        lines.add(&call, graph_of_launch);
    }
    Launches {
        launched_in: annotations.launched_in,
        unannotated: annotations.unannotated,
        annotation_limit: annotations.limit,
        api_kept: lines.put_back(space),
        api_left_out: selection.left_out,
    }
}

/// An API call kept for the host plane, its times in the session's nanoseconds.
struct KeptCall<'a> {
    name: &'a str,
    start: u64,
    end: u64,
    thread_id: u32,
    correlation_id: u32,
    /// The annotation open on the calling thread, as CUPTI's external correlation
    /// record names it.
    scope: Option<ScopeId>,
    /// Whether the launch was handed off: made on a thread with no annotation open
    /// (cubecl's device thread) for work another thread issued, under `scope`.
    handed_off: bool,
    /// When to look up what the call ran under on `scope`'s line: the call's start,
    /// or for a handed-off launch, when its work was issued (`None` when that lies
    /// outside the session).
    looked_up_at: Option<u64>,
    /// Whether this call links to device work it launched.
    launches: bool,
    /// Whether the call allocated or released device memory.
    allocates: bool,
}

/// Which API calls go on the host plane, and how many of each name were left out.
struct Selection<'a> {
    all_api_calls: bool,
    launched: &'a HashSet<u32>,
    allocating: &'a HashSet<u32>,
    /// The annotation scope of each correlation id, from CUPTI's external
    /// correlation records.
    external: HashMap<u32, ScopeId>,
    /// Launches made for work issued on another thread, by correlation id: when it
    /// was issued (CUPTI's clock).
    issued: HashMap<u32, u64>,
    /// Per correlation id, the outermost of its calls: (index, start, end).
    outermost: HashMap<u32, (usize, u64, u64)>,
    /// Calls left out, by name.
    left_out: BTreeMap<String, u64>,
}

impl<'a> Selection<'a> {
    fn new(
        trace: &DeviceTrace,
        launched: &'a HashSet<u32>,
        allocating: &'a HashSet<u32>,
    ) -> Selection<'a> {
        let external = trace
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
        let issued = trace
            .activities
            .iter()
            .filter_map(|a| match a {
                Activity::HandedOff {
                    correlation_id,
                    issued_at,
                } => Some((*correlation_id, *issued_at)),
                _ => None,
            })
            .collect();
        Selection {
            all_api_calls: trace.all_api_calls,
            launched,
            allocating,
            external,
            issued,
            outermost: outermost_calls(trace),
            left_out: BTreeMap::new(),
        }
    }

    /// The call of `activity` (the `index`th record) if it is one to keep: one that
    /// launched device work (its outermost call), allocated device memory, or is
    /// recorded by name; `None` for any other record, and for a call outside the
    /// session.
    fn keep(
        &mut self,
        index: usize,
        activity: &'a Activity,
        to_session_ns: &dyn Fn(u64) -> Option<u64>,
    ) -> Option<KeptCall<'a>> {
        let Activity::Api {
            name,
            start,
            end,
            thread_id,
            correlation_id,
        } = activity
        else {
            return None;
        };
        let nested = self
            .outermost
            .get(correlation_id)
            .is_some_and(|&(i, ..)| i != index);
        let launches = self.launched.contains(correlation_id) && !nested;
        let allocates = self.allocating.contains(correlation_id);
        if !(launches || allocates || self.all_api_calls || api_recorded_by_default(name)) {
            *self.left_out.entry(name.clone()).or_default() += 1;
            return None;
        }
        let start = to_session_ns(*start)?;
        let issued = self.issued.get(correlation_id).copied();
        Some(KeptCall {
            name,
            start,
            end: to_session_ns(*end)?,
            thread_id: *thread_id,
            correlation_id: *correlation_id,
            scope: self.external.get(correlation_id).copied(),
            handed_off: issued.is_some(),
            looked_up_at: match issued {
                Some(at) => to_session_ns(at),
                None => Some(start),
            },
            launches,
            allocates,
        })
    }
}

/// Per correlation id, the outermost of its API calls. A runtime call and the driver
/// call it makes share one correlation id (CUPTI reports both when both domains are
/// traced): only the outermost links to its device work, so each launch → kernel flow
/// has one start.
fn outermost_calls(trace: &DeviceTrace) -> HashMap<u32, (usize, u64, u64)> {
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
    outermost
}

/// What each launch, and each call that allocated device memory, ran under: the
/// annotations open at it, within the cap on the distinct strings device work carries
/// (`gpu_max_annotation_strings`).
struct Annotations {
    launched_in: HashMap<u32, Enclosing>,
    /// The strings attached so far.
    attached: HashSet<Rc<str>>,
    limit: usize,
    /// Launches whose annotation was left off, over the cap.
    unannotated: u64,
}

impl Annotations {
    fn new(max_annotation_strings: Option<u64>) -> Annotations {
        Annotations {
            launched_in: HashMap::default(),
            attached: HashSet::default(),
            limit: max_annotation_strings
                .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
            unannotated: 0,
        }
    }

    /// Attributes `call` to the annotations enclosing it on its thread's line (for a
    /// handed-off launch, on the issuing thread's line when it issued), if any.
    fn attach(&mut self, call: &KeptCall<'_>, scopes: &mut HostScopes) {
        let Some(found) = call
            .scope
            .zip(call.looked_up_at)
            .and_then(|(s, at)| scopes.enclosing(s.line, ps(at)))
        else {
            return;
        };
        // The cap counts the distinct strings device work carries.
        let key = found.tf_op.as_ref().unwrap_or(&found.annotation);
        if self.attached.contains(key)
            || (self.attached.len() < self.limit && self.attached.insert(key.clone()))
        {
            self.launched_in.insert(call.correlation_id, found);
        } else {
            self.unannotated += 1;
        }
    }
}

/// The kept API calls as events of the host plane: on the line of the annotation open
/// at the call, or on a `CUDA API (thread n)` line of their own.
struct ApiLines {
    /// The host plane, taken out of the space while its names are added, with its
    /// index there and its names; `None` when the space has no host plane.
    host: Option<(usize, XPlane, Interner)>,
    /// Events by line (id, name).
    events: BTreeMap<(i64, String), Vec<XEvent>>,
    /// Calls put on a line.
    kept: u64,
}

impl ApiLines {
    fn take_host_plane(space: &mut XSpace) -> ApiLines {
        let host = space
            .planes
            .iter()
            .position(|p| p.name == schema::HOST_PLANE)
            .map(|h| {
                let plane = std::mem::take(&mut space.planes[h]);
                let names = Interner::new(&plane);
                (h, plane, names)
            });
        ApiLines {
            host,
            events: BTreeMap::new(),
            kept: 0,
        }
    }

    fn add(&mut self, call: &KeptCall<'_>, graph_of_launch: &HashMap<u32, u32>) {
        let Some((_, plane, names)) = self.host.as_mut() else {
            return;
        };
        // A handed-off launch stays on the line of the thread that made the call.
        let line = match call.scope.filter(|_| !call.handed_off) {
            Some(s) => (i64::from(s.line), String::new()),
            None => (
                i64::from(schema::DEVICE_API_LINES_ID + (call.thread_id & 0xff_ffff)),
                format!("CUDA API (thread {})", call.thread_id),
            ),
        };
        let mut stats = if call.launches {
            Stats::from([names.stat(
                plane,
                CORRELATION_ID,
                XStatValue::Uint64(u64::from(call.correlation_id)),
            )])
        } else {
            Stats::new()
        };
        if let Some(graph) = graph_of_launch.get(&call.correlation_id) {
            stats.push(names.stat(plane, CUDA_GRAPH_ID, XStatValue::Uint64(u64::from(*graph))));
        }
        self.kept += 1;
        self.events.entry(line).or_default().push(
            XEvent::new(
                names.event(plane, call.name),
                ps(call.start),
                ps(call.end.saturating_sub(call.start)),
            )
            .with_stats(stats),
        );
    }

    /// Merges the calls into their lines and puts the host plane back; returns how
    /// many calls it holds.
    fn put_back(self, space: &mut XSpace) -> u64 {
        if let Some((h, mut plane, _)) = self.host {
            for ((id, name), events) in self.events {
                merge_into_line(&mut plane, id, &name, events);
            }
            space.planes[h] = plane;
        }
        self.kept
    }
}
