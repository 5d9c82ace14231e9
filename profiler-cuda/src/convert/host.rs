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
    merge_into_line, ps, tf_op, Interner, Stats, XEvent, XPlane, XSpace, XStatValue,
};

use crate::activity::{Activity, DeviceTrace};
use crate::api::api_recorded_by_default;
use crate::stats::{CORRELATION_ID, CUDA_GRAPH_ID};

/// What a launch ran under on the host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LaunchedIn {
    /// The innermost host annotation enclosing the launch (the step itself when no
    /// other annotation was open). Shared: every launch under the same annotation
    /// holds the same string.
    pub(super) annotation: Rc<str>,
    /// XProf's `tf_op` for the device work: see [`tf_op`]. `None` when no annotation
    /// inside the step enclosed the launch. Shared by every launch under the same
    /// stack.
    pub(super) tf_op: Option<Rc<str>>,
    /// The enclosing step's `step_num`.
    pub(super) step: Option<i64>,
}

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
        Selection {
            all_api_calls: trace.all_api_calls,
            launched,
            allocating,
            external,
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
        Some(KeptCall {
            name,
            start: to_session_ns(*start)?,
            end: to_session_ns(*end)?,
            thread_id: *thread_id,
            correlation_id: *correlation_id,
            scope: self.external.get(correlation_id).copied(),
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
    launched_in: HashMap<u32, LaunchedIn>,
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

    /// Attributes `call` to the annotations enclosing it on its thread's line, if any.
    fn attach(&mut self, call: &KeptCall<'_>, scopes: &mut HostScopes) {
        let Some(found) = call
            .scope
            .and_then(|s| scopes.enclosing(s.line, ps(call.start)))
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
        let line = match call.scope {
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

/// One host event that may enclose a launch.
struct Scope {
    start: i64,
    end: i64,
    metadata_id: i64,
    step: Option<i64>,
    /// The innermost earlier event of the line that contains this one.
    parent: Option<usize>,
}

/// The host events of each line, for finding what enclosed a launch (or the capture of
/// a graph node).
#[derive(Default)]
pub(super) struct HostScopes {
    /// Per line id, its events with a duration, by start (longest first on ties),
    /// each linked to the event containing it.
    lines: HashMap<i64, Vec<Scope>>,
    /// Event names by metadata id.
    names: HashMap<i64, Rc<str>>,
    /// `tf_op` strings made so far, by the metadata ids of their stack (outermost
    /// first): launches under the same stack share one string, made once.
    tf_ops: HashMap<Vec<i64>, Option<Rc<str>>>,
    /// Scratch for [`HostScopes::enclosing`]: the chain of events containing a launch,
    /// and the key of its stack, kept between calls so a launch allocates nothing.
    chain: Vec<usize>,
    key: Vec<i64>,
}

impl HostScopes {
    /// The scopes of `space`'s host plane (none without one).
    pub(super) fn of_space(space: &XSpace) -> HostScopes {
        space
            .planes
            .iter()
            .find(|p| p.name == schema::HOST_PLANE)
            .map(HostScopes::new)
            .unwrap_or_default()
    }

    fn new(plane: &XPlane) -> HostScopes {
        let step_id = plane.stat_id(schema::STEP_NUM);
        let mut lines = HashMap::default();
        for line in &plane.lines {
            let mut events: Vec<Scope> = line
                .events
                .iter()
                .filter(|e| e.duration_ps > 0)
                .map(|e| {
                    let (start, end) = line.event_span_ps(e);
                    Scope {
                        start,
                        end,
                        metadata_id: e.metadata_id,
                        step: e.stat(step_id).and_then(XStatValue::as_i64),
                        parent: None,
                    }
                })
                .collect();
            events.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
            let mut open: Vec<usize> = Vec::new();
            for i in 0..events.len() {
                while let Some(&top) = open.last() {
                    if events[top].end >= events[i].end {
                        break;
                    }
                    open.pop();
                }
                events[i].parent = open.last().copied();
                open.push(i);
            }
            lines.insert(line.id, events);
        }
        let names = plane
            .event_metadata
            .iter()
            .map(|(id, m)| (*id, Rc::from(m.name.as_str())))
            .collect();
        HostScopes {
            lines,
            names,
            ..HostScopes::default()
        }
    }

    /// What the events of `line` containing `at_ps` say about a launch then: the
    /// innermost one's name, the `tf_op` of those inside the outermost one carrying
    /// a `step_num` (all of them when none does), and that step number.
    pub(super) fn enclosing(&mut self, line: u32, at_ps: i64) -> Option<LaunchedIn> {
        let events = self.lines.get(&i64::from(line))?;
        // The last event starting by then, and the events containing it: on a line
        // of properly nested scopes, every event containing `at_ps` is among them.
        let mut next = events.partition_point(|e| e.start <= at_ps).checked_sub(1);
        let chain = &mut self.chain; // innermost first
        chain.clear();
        while let Some(i) = next {
            if events[i].end >= at_ps {
                chain.push(i);
            }
            next = events[i].parent;
        }
        let &innermost = chain.first()?;
        let step_at = chain.iter().rposition(|&i| events[i].step.is_some());
        let step = step_at.and_then(|at| events[chain[at]].step);
        let inside = &chain[..step_at.unwrap_or(chain.len())];
        self.key.clear();
        self.key
            .extend(inside.iter().rev().map(|&i| events[i].metadata_id));
        let names = &self.names;
        let tf_op = match self.tf_ops.get(self.key.as_slice()) {
            Some(made) => made.clone(),
            None => {
                let scopes: Vec<&str> = self
                    .key
                    .iter()
                    .map(|id| names.get(id).map_or("", |n| &**n))
                    .collect();
                let made: Option<Rc<str>> = tf_op(&scopes).map(Rc::from);
                self.tf_ops.insert(self.key.clone(), made.clone());
                made
            }
        };
        Some(LaunchedIn {
            annotation: names
                .get(&events[innermost].metadata_id)
                .cloned()
                .unwrap_or_else(|| Rc::from("")),
            tf_op,
            step,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plane_with(events: &[(&str, i64, i64, Option<i64>)]) -> XPlane {
        use profiler_core::xspace::PlaneBuilder;
        let mut b = PlaneBuilder::new(1, schema::HOST_PLANE);
        let mut xevents = Vec::new();
        for &(name, start, end, step) in events {
            let stats = step
                .map(|s| Stats::from([b.stat(schema::STEP_NUM, XStatValue::Int64(s))]))
                .unwrap_or_default();
            xevents
                .push(XEvent::new(b.event_metadata_id(name), start, end - start).with_stats(stats));
        }
        let mut plane = b.build();
        merge_into_line(&mut plane, 3, "main", xevents);
        plane
    }

    #[test]
    fn the_whole_stack_inside_the_step_is_found() {
        // Train 7 [0, 100] > forward [10, 90] > block [20, 80] > attn [30, 40], mlp
        // [50, 70]; an instant at 35; then Eval (no step_num) > attn [120, 130].
        let plane = plane_with(&[
            ("Train", 0, 100, Some(7)),
            ("forward", 10, 90, None),
            ("block", 20, 80, None),
            ("attn", 30, 40, None),
            ("marker", 35, 35, None),
            ("mlp", 50, 70, None),
            ("Eval", 110, 140, None),
            ("attn", 120, 130, None),
        ]);
        let mut scopes = HostScopes::new(&plane);
        let mut at = |ps| scopes.enclosing(3, ps);
        let launched = |annotation: &str, tf_op: Option<&str>, step| {
            Some(LaunchedIn {
                annotation: annotation.into(),
                tf_op: tf_op.map(Into::into),
                step,
            })
        };
        assert_eq!(
            at(35),
            launched("attn", Some("forward/block/attn:attn"), Some(7))
        );
        assert_eq!(
            at(60),
            launched("mlp", Some("forward/block/mlp:mlp"), Some(7))
        );
        // Between the layers, and in the step outside any annotation.
        assert_eq!(
            at(45),
            launched("block", Some("forward/block:block"), Some(7))
        );
        assert_eq!(at(5), launched("Train", None, Some(7)));
        // Outside any step: the whole stack.
        assert_eq!(at(125), launched("attn", Some("Eval/attn:attn"), None));
        assert_eq!(at(105), None);
        assert_eq!(at(-1), None);
        // Two launches under one stack share its strings, made once.
        let (first, second) = (at(31).expect("attn"), at(39).expect("attn"));
        let (Some(a), Some(b)) = (&first.tf_op, &second.tf_op) else {
            panic!("no tf_op: {first:?} {second:?}");
        };
        assert!(Rc::ptr_eq(a, b));
        assert!(Rc::ptr_eq(&first.annotation, &second.annotation));
        assert_eq!(scopes.enclosing(4, 35), None, "no such line");
    }
}
