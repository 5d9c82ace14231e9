//! NVTX ranges (`gpu_enable_nvtx_tracking`): CUPTI's marker records paired into
//! ranges and marks, put on a host line per thread, and, per launch, the innermost
//! range open on the launching thread when it was made, which its device work carries
//! as `nvtx_range` (as TSL's tracer does).

use std::collections::BTreeMap;

use super::maps::{HashMap, HashSet};

use profiler_core::schema;
use profiler_core::xspace::{merge_into_line, ps, Interner, Stats, XEvent, XSpace, XStatValue};

use crate::activity::{Activity, DeviceTrace, MarkerPhase};

/// A range (or a mark, `end == start`) on one thread, in CUPTI's ns.
#[derive(Debug)]
struct Range<'t> {
    start: u64,
    end: u64,
    name: &'t str,
    domain: Option<&'t str>,
}

/// The name of the host line of thread `thread`'s NVTX ranges.
pub(crate) fn line_name(thread: u32) -> String {
    format!("NVTX (thread {thread})")
}

/// Pairs each start record with the end record of the same id into a range, on the
/// thread that started it, whatever order the records arrived in (they may come in
/// different buffers); marks are ranges of no length. A range that started before the
/// session or ended after it (one end missing) is left out.
fn ranges(trace: &DeviceTrace) -> BTreeMap<u32, Vec<Range<'_>>> {
    let mut starts: HashMap<u32, (u32, u64, &str, Option<&str>)> = HashMap::default();
    let mut ends: HashMap<u32, u64> = HashMap::default();
    let mut by_thread: BTreeMap<u32, Vec<Range<'_>>> = BTreeMap::new();
    for activity in &trace.activities {
        let Activity::Marker {
            phase,
            id,
            timestamp,
            thread_id,
            name,
            domain,
        } = activity
        else {
            continue;
        };
        let name = name.as_deref().unwrap_or("");
        let domain = domain.as_deref().filter(|d| !d.is_empty());
        match phase {
            MarkerPhase::Start => {
                starts.insert(*id, (*thread_id, *timestamp, name, domain));
            }
            MarkerPhase::End => {
                ends.insert(*id, *timestamp);
            }
            MarkerPhase::Instant => by_thread.entry(*thread_id).or_default().push(Range {
                start: *timestamp,
                end: *timestamp,
                name,
                domain,
            }),
        }
    }
    for (id, (thread, start, name, domain)) in starts {
        if let Some(&end) = ends.get(&id) {
            by_thread.entry(thread).or_default().push(Range {
                start,
                end: end.max(start),
                name,
                domain,
            });
        }
    }
    for ranges in by_thread.values_mut() {
        // By start, the longest first: a range before the ranges it holds.
        ranges.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    }
    by_thread
}

/// One thread's ranges with a length, each linked to the innermost earlier one that
/// holds it, to find what encloses an instant in about the depth of the nesting.
struct Enclosing<'r, 't> {
    ranges: Vec<&'r Range<'t>>,
    parent: Vec<Option<usize>>,
}

impl<'r, 't> Enclosing<'r, 't> {
    fn new(all: &'r [Range<'t>]) -> Self {
        let ranges: Vec<&Range<'t>> = all.iter().filter(|r| r.end > r.start).collect();
        let mut parent = Vec::with_capacity(ranges.len());
        let mut open: Vec<usize> = Vec::new();
        for (i, r) in ranges.iter().enumerate() {
            while let Some(&top) = open.last() {
                if ranges[top].end >= r.end {
                    break;
                }
                open.pop();
            }
            parent.push(open.last().copied());
            open.push(i);
        }
        Enclosing { ranges, parent }
    }

    /// The innermost range holding `at`.
    fn innermost(&self, at: u64) -> Option<&'t str> {
        let mut next = self
            .ranges
            .partition_point(|r| r.start <= at)
            .checked_sub(1);
        while let Some(i) = next {
            if self.ranges[i].end >= at {
                return Some(self.ranges[i].name);
            }
            next = self.parent[i];
        }
        None
    }
}

/// Puts `trace`'s NVTX ranges and marks on the host plane of `space`, one line per
/// thread (named by [`line_name`], id [`schema::DEVICE_MARKER_LINES_ID`] plus the
/// thread id's low 24 bits), each named by its message with its NVTX domain as the
/// `domain` stat; returns, per correlation id of an API call that launched device
/// work, the innermost range open on its thread when the call began.
pub(super) fn add_ranges(
    trace: &DeviceTrace,
    space: &mut XSpace,
    to_session_ns: &dyn Fn(u64) -> Option<u64>,
    launched: &HashSet<u32>,
) -> HashMap<u32, String> {
    let by_thread = ranges(trace);
    if by_thread.is_empty() {
        return HashMap::default();
    }
    let mut launched_in = HashMap::default();
    let enclosing: HashMap<u32, Enclosing<'_, '_>> = by_thread
        .iter()
        .map(|(thread, ranges)| (*thread, Enclosing::new(ranges)))
        .collect();
    for activity in &trace.activities {
        if let Activity::Api {
            start,
            thread_id,
            correlation_id,
            ..
        } = activity
        {
            if !launched.contains(correlation_id) {
                continue;
            }
            let name = enclosing
                .get(thread_id)
                .and_then(|e| e.innermost(*start))
                .filter(|n| !n.is_empty());
            if let Some(name) = name {
                launched_in.insert(*correlation_id, name.to_owned());
            }
        }
    }

    let Some(plane) = space
        .planes
        .iter_mut()
        .find(|p| p.name == schema::HOST_PLANE)
    else {
        return launched_in;
    };
    let mut names = Interner::new(plane);
    for (thread, ranges) in &by_thread {
        let mut events = Vec::with_capacity(ranges.len());
        for r in ranges {
            let (Some(start), Some(end)) = (to_session_ns(r.start), to_session_ns(r.end)) else {
                continue;
            };
            let stats = r
                .domain
                .map(|d| {
                    Stats::from([names.stat(plane, schema::DOMAIN, XStatValue::Str(d.to_owned()))])
                })
                .unwrap_or_default();
            events.push(
                XEvent::new(
                    names.event(plane, r.name),
                    ps(start),
                    ps(end.saturating_sub(start)),
                )
                .with_stats(stats),
            );
        }
        if !events.is_empty() {
            let id = i64::from(schema::DEVICE_MARKER_LINES_ID + (thread & 0xff_ffff));
            merge_into_line(plane, id, &line_name(*thread), events);
        }
    }
    launched_in
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: u64, end: u64, name: &'static str) -> Range<'static> {
        Range {
            start,
            end,
            name,
            domain: None,
        }
    }

    #[test]
    fn ends_pair_with_starts_in_any_order_and_one_ended_ranges_are_left_out() {
        let marker = |phase, id, timestamp, name: Option<&str>| Activity::Marker {
            phase,
            id,
            timestamp,
            thread_id: 7,
            name: name.map(Into::into),
            domain: None,
        };
        let trace = DeviceTrace {
            activities: vec![
                // The end of range 2 arrives first (another buffer).
                marker(MarkerPhase::End, 2, 30, None),
                marker(MarkerPhase::Start, 1, 10, Some("outer")),
                marker(MarkerPhase::Start, 2, 20, Some("inner")),
                marker(MarkerPhase::End, 1, 40, None),
                marker(MarkerPhase::End, 3, 5, None),
                marker(MarkerPhase::Start, 4, 50, Some("open")),
                marker(MarkerPhase::Instant, 5, 25, Some("mark")),
            ],
            ..DeviceTrace::default()
        };
        let by_thread = ranges(&trace);
        let got: Vec<_> = by_thread[&7]
            .iter()
            .map(|r| (r.name, r.start, r.end))
            .collect();
        assert_eq!(
            got,
            [("outer", 10, 40), ("inner", 20, 30), ("mark", 25, 25)]
        );
    }

    #[test]
    fn the_innermost_open_range_is_found() {
        // outer [0, 100] > a [10, 40] > b [20, 30]; c [50, 90]; a mark at 60; then d
        // [95, 120] overlapping outer's end.
        let all = [
            range(0, 100, "outer"),
            range(10, 40, "a"),
            range(20, 30, "b"),
            range(50, 90, "c"),
            range(60, 60, "mark"),
            range(95, 120, "d"),
        ];
        let e = Enclosing::new(&all);
        let at = |t| e.innermost(t);
        assert_eq!(at(25), Some("b"));
        assert_eq!(at(35), Some("a"));
        assert_eq!(at(45), Some("outer"));
        assert_eq!(at(60), Some("c"), "a mark holds nothing");
        assert_eq!(at(97), Some("d"));
        assert_eq!(at(110), Some("d"));
        assert_eq!(at(121), None);
    }
}
