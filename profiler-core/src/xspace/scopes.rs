//! What enclosed a moment on a host thread: the annotations open on its line and the
//! step they are in, found from the host plane's events after the session (no thread
//! is read while it runs). A device tracer files each launch under them (XProf's
//! `tf_op`, `annotation`, `host_step_num`: see [`super::device::push_launch_stats`]);
//! the sampler of native stacks labels each sample with them.

use std::rc::Rc;

use crate::schema;

use super::model::{XPlane, XSpace, XStatValue};
use super::ops::tf_op;

/// foldhash, not SipHash: every launch and sample looks its line up, and the keys are
/// the profile's own.
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::FixedState>;

/// What enclosed a moment on a host line: the innermost annotation, the `tf_op` of the
/// annotations inside the step, and the step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enclosing {
    /// The innermost host annotation enclosing the moment (the step itself when no
    /// other annotation was open). Shared: every moment under the same annotation
    /// holds the same string.
    pub annotation: Rc<str>,
    /// XProf's `tf_op` for work done then: see [`tf_op`]. `None` when no annotation
    /// inside the step enclosed it. Shared by every moment under the same stack.
    pub tf_op: Option<Rc<str>>,
    /// The enclosing step's `step_num`.
    pub step: Option<i64>,
}

/// One host event that may enclose a moment.
struct Scope {
    start: i64,
    end: i64,
    metadata_id: i64,
    step: Option<i64>,
    /// The innermost earlier event of the line that contains this one.
    parent: Option<usize>,
}

/// The host events of each line, for finding what enclosed a moment on a thread: a
/// device tracer's launch (or the capture of a graph node), a sampler's stack sample.
#[derive(Default)]
pub struct HostScopes {
    /// Per line id, its events with a duration, by start (longest first on ties),
    /// each linked to the event containing it.
    lines: HashMap<i64, Vec<Scope>>,
    /// Event names by metadata id.
    names: HashMap<i64, Rc<str>>,
    /// `tf_op` strings made so far, by the metadata ids of their stack (outermost
    /// first): launches under the same stack share one string, made once.
    tf_ops: HashMap<Vec<i64>, Option<Rc<str>>>,
    /// Scratch for [`HostScopes::enclosing`]: the chain of events containing a moment,
    /// and the key of its stack, kept between calls so a lookup allocates nothing.
    chain: Vec<usize>,
    key: Vec<i64>,
    /// Every step of every line, as (start, end, `step_num`), by start.
    steps: Vec<(i64, i64, i64)>,
}

impl HostScopes {
    /// The scopes of `space`'s host plane (none without one).
    pub fn of_space(space: &XSpace) -> HostScopes {
        HostScopes::of_space_without(space, &[])
    }

    /// The scopes of `space`'s host plane, leaving out the events named in `left_out`:
    /// a runtime's own spans around its launches (cubecl's `launch_inner`, recorded
    /// through the tracing layer) are not what the user's work ran under.
    pub fn of_space_without(space: &XSpace, left_out: &[&str]) -> HostScopes {
        space
            .planes
            .iter()
            .find(|p| p.name == schema::HOST_PLANE)
            .map(|p| HostScopes::new_without(p, left_out))
            .unwrap_or_default()
    }

    /// The scopes of the host plane `plane`.
    pub fn new(plane: &XPlane) -> HostScopes {
        HostScopes::new_without(plane, &[])
    }

    /// The scopes of the host plane `plane`, leaving out the events named in
    /// `left_out` (see [`HostScopes::of_space_without`]).
    pub fn new_without(plane: &XPlane, left_out: &[&str]) -> HostScopes {
        let step_id = plane.stat_id(schema::STEP_NUM);
        let skipped: Vec<i64> = plane
            .event_metadata
            .iter()
            .filter(|(_, m)| left_out.contains(&m.name.as_str()))
            .map(|(id, _)| *id)
            .collect();
        let mut lines = HashMap::default();
        let mut steps = Vec::new();
        for line in &plane.lines {
            let mut events: Vec<Scope> = line
                .events
                .iter()
                .filter(|e| e.duration_ps > 0 && !skipped.contains(&e.metadata_id))
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
            steps.extend(
                events
                    .iter()
                    .filter_map(|e| Some((e.start, e.end, e.step?))),
            );
            lines.insert(line.id, events);
        }
        steps.sort_unstable();
        let names = plane
            .event_metadata
            .iter()
            .map(|(id, m)| (*id, Rc::from(m.name.as_str())))
            .collect();
        HostScopes {
            lines,
            names,
            steps,
            ..HostScopes::default()
        }
    }

    /// The `step_num` of a step open on any line at `at_ps`: what a thread that
    /// annotates nothing (a data loader, a runtime's worker) was working towards then.
    /// Of steps open at once on several lines, the one that started last.
    pub fn step_at(&self, at_ps: i64) -> Option<i64> {
        let started = self.steps.partition_point(|s| s.0 <= at_ps);
        // Steps are sequential on a line and few lines have them: a short look back
        // finds the open one. Bounded, so that a profile of a million overlapping
        // steps stays linear.
        self.steps[..started]
            .iter()
            .rev()
            .take(64)
            .find(|s| s.1 >= at_ps)
            .map(|s| s.2)
    }

    /// What the events of `line` containing `at_ps` (picoseconds from the session's
    /// start) say about that moment: the innermost one's name, the `tf_op` of those
    /// inside the outermost one carrying a `step_num` (all of them when none does),
    /// and that step number.
    pub fn enclosing(&mut self, line: u32, at_ps: i64) -> Option<Enclosing> {
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
        Some(Enclosing {
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

    use crate::xspace::{merge_into_line, PlaneBuilder, Stats, XEvent};

    fn plane_with(events: &[(&str, i64, i64, Option<i64>)]) -> XPlane {
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
            Some(Enclosing {
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
        assert_eq!(scopes.step_at(35), Some(7));
        assert_eq!(scopes.step_at(125), None);
    }

    #[test]
    fn a_step_open_on_any_line_is_found() {
        let mut b = PlaneBuilder::new(1, schema::HOST_PLANE);
        let mut step = |name: &str, start, end, n| {
            let stats = Stats::from([b.stat(schema::STEP_NUM, XStatValue::Int64(n))]);
            XEvent::new(b.event_metadata_id(name), start, end - start).with_stats(stats)
        };
        let train = vec![step("Train", 0, 100, 1), step("Train", 100, 200, 2)];
        // A second line's step, overlapping the first line's step 2.
        let eval = vec![step("eval", 150, 250, 9)];
        let mut plane = b.build();
        merge_into_line(&mut plane, 3, "main", train);
        merge_into_line(&mut plane, 4, "eval", eval);
        let scopes = HostScopes::new(&plane);
        assert_eq!(scopes.step_at(50), Some(1));
        assert_eq!(scopes.step_at(120), Some(2));
        assert_eq!(scopes.step_at(160), Some(9), "the one that started last");
        assert_eq!(scopes.step_at(220), Some(9));
        assert_eq!(scopes.step_at(300), None);
        assert_eq!(scopes.step_at(-5), None);
    }

    #[test]
    fn a_runtimes_own_span_is_left_out() {
        // Train 1 > fc1 > launch_inner (cubecl's span around the launch).
        let plane = plane_with(&[
            ("Train", 0, 100, Some(1)),
            ("fc1", 10, 90, None),
            ("launch_inner", 20, 30, None),
        ]);
        let space = XSpace {
            planes: vec![plane],
            ..XSpace::default()
        };
        let with = HostScopes::of_space(&space)
            .enclosing(3, 25)
            .expect("in it");
        assert_eq!(with.tf_op.as_deref(), Some("fc1/launch_inner:launch_inner"));
        let without = HostScopes::of_space_without(&space, &["launch_inner"])
            .enclosing(3, 25)
            .expect("in it");
        assert_eq!(without.tf_op.as_deref(), Some("fc1:fc1"));
        assert_eq!((&*without.annotation, without.step), ("fc1", Some(1)));
    }
}
